/*
** shardpic.h — pictures of where the blocks of an array are.
**
** As jax.debug.visualize_array_sharding draws them: the array as a
** rectangle (a row of boxes for 1-D), cut into one box per block of its
** partition spec, each box labelled with the devices holding that block
** (`CPU 0,1`; a replicated block names every device that holds a copy).
** The picture is sized to the array's proportions within `width` columns,
** drawn with box-drawing characters, or with + - | where the terminal is
** not UTF-8.
*/
#ifndef SHM_SHARDPIC_H
#define SHM_SHARDPIC_H

#include <stdbool.h>
#include "buf.h"
#include "ir.h"

/* Draw the blocks of an array of shape (rank, shape) split by spec spc on
   mesh m (m NULL: one box, the whole array on one device).  False, with a
   message in b, for a rank above 2. */
bool pic_draw(Buf *b, const Mesh *m, const Spec *spc, int rank, const int64_t *shape, int width, bool unicode);
/* The same pictures as SVG, for notebooks: one picture of n layouts, one
   under the other, each under its caption (its boxes coloured by the set
   of devices holding them, as JAX's rich visualization does), under a
   title when one is given.  False for a rank above 2. */
typedef struct PicLayout {
  const char *caption;        /* "x: f32[8,16] as P(i, j)" */
  const Mesh *m;
  const Spec *spc;
  int rank;
  const int64_t *shape;
} PicLayout;
bool pic_svg(Buf *b, const char *title, const PicLayout *layouts, int n);
/* The width to draw at: the terminal's columns when standard output is
   one ($COLUMNS, else the terminal's size), else 80. */
int pic_width(void);
/* Does the locale's character set draw box characters (UTF-8)? */
bool pic_unicode(void);

#endif
