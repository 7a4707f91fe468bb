/*
** gather.h — a shard_map's blocks put together into the global array.
**
** A shard_map's result is the array its out_spec tiles from the blocks of
** its body's result.  Under several ranks (fabmpi.h) each rank holds only
** its own instances' blocks, so putting them together first shares them
** among the ranks; outside any body a result may also stay as its blocks
** (value.h's ValSplit) until a statement needs the whole array, and then
** gat_realize assembles it, on every rank at the same statement.
*/
#ifndef SHM_GATHER_H
#define SHM_GATHER_H

#include "value.h"

/* A per-device type of an xla_pmap with its mapped dimension d, of size 1. */
Type gat_pmap_view(const Type *t, int d);
/* The global array of type gt that the blocks v (of type bt: the body's
   result type, which under xla_pmap lacks the dimension out_axis, else
   -1) tile as spc says (new reference); under several ranks the blocks
   are first shared among the ranks (v gains those it lacked). */
Array *gat_assemble(const Mesh *m, const Spec *spc, const Type *gt, const Type *bt, int out_axis, Val *v);
/* The type of a block of an array of type gt tiled by spc on m. */
Type gat_block_type(const Mesh *m, const Spec *spc, const Type *gt);
/* Meshes alike (same axes, names and sizes); specs tiling an array alike
   (an omitted dimension and None alike). */
bool gat_same_mesh(const Mesh *a, const Mesh *b);
bool gat_same_tiling(const Spec *a, const Spec *b);
/* Assemble x, a value kept split (x->split), into x->blk[0], and let go
   of its blocks. */
void gat_realize(Val *x);
/* Does fn give its variable v only to dot_general, directly or through
   pbroadcasts (which share blocks)?  Then v's blocks may be pitched views
   (gat_share), which nothing else reads. */
bool gat_gemm_only(const IrFunc *fn, const IrVar *v);
/* The element of g (row-major) where block b of the tiling spc (block
   type bt) starts. */
int64_t gat_block_offset(const Mesh *m, const Spec *spc, const Type *bt, const Array *g, int64_t b);
/* Splitting by sharing: the blocks blk[0..nb) of g as spc tiles it (block
   type bt) as views of g's elements (arr_views), when each block is one
   contiguous run of g (the tilings of leading dimensions: P(i), P(i, None),
   P(None, i) of a [1, n]...) or, if `pitched`, when g and its blocks are
   matrices, as pitched views (for a body that gives them only to
   dot_general).  Nothing is copied and g may live on: the blocks are
   immutable like it.  false: not such a split, nothing done. */
bool gat_share(const Mesh *m, const Spec *spc, const Type *bt, Array *g, int64_t nb, bool pitched, Array **blk);
/* Splitting without copying: the blocks blk[0..nb) of g as spc tiles it
   (block type bt), made by laying g's elements out in block order in
   place and carving them (arr_carve) -- for an operand that dies as it
   is split (held by nothing else: refc 1).  Done when the blocks tile g
   exactly (no replication), there are several row bands of blocks, and
   each band's blocks are consecutive in block order: a band's blocks are
   rearranged in place through a scratch of the band's other blocks, on
   two threads (nothing moves when a band is one block, as with P(i) and
   P(i, None)), instead of every block being copied into fresh pages.  Only for big arrays (small
   blocks go to slabs of their own).  false: not such a split, g
   untouched. */
bool gat_carve(const Mesh *m, const Spec *spc, const Type *bt, Array *g, int64_t nb, Array **blk);

#endif
