/*
** valprint.h — a shard_map body's values on screen, at any mesh size.
**
** Inside a body a value has one block per combination of the axes it
** varies over (value.h).  Printing it once per device is what a user of a
** 4-device mesh wants and what drowns a user of a 512-device one, so:
**
**   - an invariant value (one shared block) prints once:
**       On all 8 devices (invariant):
**   - on a small mesh (up to VP_SMALL running devices) a varying value
**     prints once per device, with its mesh coordinates;
**   - on a bigger one devices holding equal blocks print as one group,
**       On devices 8-15 at mesh coordinates (i, j) = (1, *):
**     (`*`: every coordinate along an axis the value does not vary over),
**     and past 2 * VP_EDGE groups only the first and last VP_EDGE print,
**     with a line counting those left out, as NumPy summarises elements.
**
** The global view is the array an out_spec would assemble from the
** blocks (what shard_map returns for that out_spec).
*/
#ifndef SHM_VALPRINT_H
#define SHM_VALPRINT_H

#include "buf.h"
#include "fabmpi.h"
#include "fabric.h"
#include "value.h"

enum { VP_SMALL = 16, VP_EDGE = 3 };

/* Append v as the instances of sp hold it (outside a body: the array).
   A value inside a body starts on a line of its own. */
void vp_value(Buf *b, const Space *sp, Val *v, bool at_line_start);
/* "all 4 devices", "both devices", "device 3", "devices 0-5, 9"; more
   than 8 runs print as the first three and the last two with a count. */
void vp_devset(Buf *b, const uint8_t *set, int64_t n);
/* The out_spec that stacks v's blocks along dimension 0, the axes it
   varies over in mesh order (P((i, j)) for {i, j}; P() if invariant). */
void vp_default_spec(const Mesh *m, uint32_t mask, Spec *out);
/* The global array spc assembles from the blocks of v (new reference), or
   NULL with a message in err when it cannot: spc leaves out an axis v
   varies over, or a block is missing (a device off the current path). */
/* Whether a value of mask `mask` and rank `rank` has a global view
   under spc (else why, in err). */
bool vp_global_ok(const Mesh *m, const Spec *spc, uint32_t mask, int rank, char *err, size_t errlen);
Array *vp_assemble(const Mesh *m, const Spec *spc, Val *v, char *err, size_t errlen);
/* The start, per dimension, of the block of shape bshape that the
   instance at mesh coordinates `coords` holds under spec spc. */
void vp_block_start(const Mesh *m, const Spec *spc, const int64_t *coords, const int64_t *bshape, int rank,
                    int64_t *start);

/* Under several ranks (fabmpi.h) a print inside a body is formatted on
   rank 0 from every rank's blocks: vp_part_header describes the value
   (the mesh, the axes it varies over, the type of its blocks, and the
   spec of a global view, or NULL), each device's part is its block's
   bytes, and vp_format_parts (an FmpiFormat) writes what vp_value, or the
   global view, writes in one process. */
void vp_part_header(Buf *b, const Mesh *m, uint32_t mask, const Type *bt, const Spec *global);
void vp_format_parts(Buf *out, const char *hdr, size_t n, const FmpiPart *parts, int nparts);
/* The global view's "global, as P(i) assembles it:" and the array. */
void vp_global_text(Buf *b, const Mesh *m, const Spec *spc, const Array *a);

#endif
