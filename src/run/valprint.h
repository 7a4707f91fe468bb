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
** blocks (what shard_map returns for that out_spec): split.h's
** spl_global assembles it, tiling.h's til_default_spec is the spec when
** none is given.
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
/* Before the blocks of a value of type t unreduced over some axes of mesh
   m: a line saying that they are summands (parts of a max, a min). */
void vp_unreduced_note(Buf *b, const Type *t, const Mesh *m);
/* "all 4 devices", "both devices", "device 3", "devices 0-5, 9"; more
   than 8 runs print as the first three and the last two with a count. */
void vp_devset(Buf *b, const uint8_t *set, int64_t n);
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
