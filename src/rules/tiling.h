/*
** tiling.h — block geometry: how a partition spec cuts an array into the
** blocks of a mesh's instances.
**
** Pure arithmetic over a mesh, a spec and shapes, shared by everything that
** puts blocks where they belong: the evaluator's runtime values (one block
** per combination of the axes a value varies over), splitting an operand
** into a body's blocks and assembling a result (split.h), the collectives
** (fabric.h), the value printer's global view, the checker's specs and the
** pictures of where blocks are (shardpic.h).
**
** Block order: the blocks of a variance mask are numbered by the
** coordinates of the mask's axes, in mesh order, row-major; an instance
** (device) is the block of the mask of every axis.  A spec tiles dimension
** d by the axes of its entry d, major first: the block of the instance at
** coordinates c starts, along d, at (c[a0] * size[a1] + c[a1] ...) times
** the block's extent.
*/
#ifndef SHM_TILING_H
#define SHM_TILING_H

#include <stddef.h>
#include "ir.h"

/* ---- block order ------------------------------------------------------------------ */

/* Number of blocks of a mask on a mesh (1 when m is NULL). */
int64_t til_nblk(const Mesh *m, uint32_t mask);
/* Coordinates of an instance along every mesh axis. */
void til_coords(const Mesh *m, int64_t inst, int64_t *coords);
/* Block `b` of mask `from` seen through mask `to` (to a subset of from):
   the block of `to` held by the instances holding block b of `from`. */
int64_t til_project_(const Mesh *m, uint32_t from, int64_t b, uint32_t to);
static inline int64_t til_project(const Mesh *m, uint32_t from, int64_t b, uint32_t to) {
  return from == to ? b : !to ? 0 : til_project_(m, from, b, to);   /* (the common answers without a call) */
}
/* The block of `mask` that instance `inst` holds. */
int64_t til_block_of(const Mesh *m, uint32_t mask, int64_t inst);
/* The coordinates along the axes of mask of block b (the others left as
   they are), and the block of mask at coordinates coords. */
void til_block_coords(const Mesh *m, uint32_t mask, int64_t b, int64_t *coords);
int64_t til_block_at(const Mesh *m, uint32_t mask, const int64_t *coords);
/* An instance holding block b of mask (its coordinates off-mask are 0). */
int64_t til_first_inst(const Mesh *m, uint32_t mask, int64_t b);

/* ---- where a block is -------------------------------------------------------------- */

/* How many blocks spc cuts dimension d into (1 when m or spc is NULL). */
int64_t til_blocks_along(const Mesh *m, const Spec *spc, int d);
/* The type of a block of an array of type gt tiled by spc on m. */
Type til_block_type(const Mesh *m, const Spec *spc, const Type *gt);
/* The shape of the array that blocks of shape bshape (rank dims) tile as
   spc says. */
void til_global_shape(const Mesh *m, const Spec *spc, int rank, const int64_t *bshape, int64_t *gshape);
/* The start, per dimension, of the block of shape bshape that the
   instance at mesh coordinates `coords` holds under spc. */
void til_block_start(const Mesh *m, const Spec *spc, const int64_t *coords, const int64_t *bshape, int rank,
                     int64_t *start);
/* The start of block b (in the block order of spc->mask). */
void til_start_of(const Mesh *m, const Spec *spc, int64_t b, const int64_t *bshape, int rank, int64_t *start);
/* The element (row-major) of an array of shape gshape where block b of
   spc (of shape bshape, both of rank `rank`) starts. */
int64_t til_block_offset(const Mesh *m, const Spec *spc, int64_t b, const int64_t *bshape, const int64_t *gshape,
                         int rank);
/* A per-device type of an xla_pmap with its mapped dimension d, of size 1:
   the block of the stacked array (whose out_axis or in_axis is d). */
Type til_pmap_view(const Type *t, int d);

/* ---- specs ------------------------------------------------------------------------- */

/* The spec that stacks the blocks of a mask along dimension 0, its axes in
   mesh order (P((i, j)) for {i, j}; P() for 0): a value's default global
   view. */
void til_default_spec(const Mesh *m, uint32_t mask, Spec *out);
/* Whether spc assembles the blocks of a value of mask `mask` and rank
   `rank` into one global array (else why, in err): it must mention every
   axis the value varies over, and have a dimension to split. */
bool til_global_ok(const Mesh *m, const Spec *spc, uint32_t mask, int rank, char *err, size_t errlen);
/* Meshes alike (same axes, names and sizes); specs tiling an array alike
   (an omitted dimension and None alike). */
bool til_same_mesh(const Mesh *a, const Mesh *b);
bool til_same_tiling(const Spec *a, const Spec *b);

#endif
