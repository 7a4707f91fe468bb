/*
** value.h — runtime values: one block per distinct instance.
**
** Inside a shard_map body a value is held by every instance (device) of
** the mesh, but instances along the axes the value does not vary over hold
** the same block.  So a Val stores exactly one Array per combination of
** coordinates along the axes of its variance mask `mask`: an invariant
** value has one block shared by all instances (never copied per device),
** a value varying over {i} on a 4x2 mesh has 4 blocks, and so on.  Outside
** any shard_map, mask is 0 and the one block is the whole array.
**
** Block numbering: the coordinates of the mask's axes, in mesh order,
** row-major (tiling.h).  An instance's block is til_block_of(mesh, mask,
** instance).
** Vals are reference counted and immutable once built, like their arrays;
** a block may be NULL only where no running instance needs it (inside a
** branch taken by some instances only).
*/
#ifndef SHM_VALUE_H
#define SHM_VALUE_H

#include "array.h"
#include "ir.h"
#include "tiling.h"

/* A result of a shard_map under several ranks (fabmpi.h), outside any
   body, is kept as the blocks each rank holds until a statement needs
   the whole array (eval.c): `blocks` tile an array of type `gt` as spec
   `spec` of mesh `mesh` says.  Its owner (the Val, blk[0] NULL until
   assembled) releases it. */
typedef struct ValSplit {
  struct Val *blocks;
  const Mesh *mesh;
  const Spec *spec;
  Type gt;
} ValSplit;

typedef struct Val {
  int32_t refc;
  uint32_t mask;
  int64_t nblk;
  ValSplit *split;      /* NULL but for the top-level values above */
  Array *blk[];
} Val;

/* A Val with nblk NULL blocks. */
Val *val_new(uint32_t mask, int64_t nblk);
/* A one-block (invariant) Val holding a new reference to `a`. */
Val *val_of(Array *a);
static inline Val *val_ref(Val *v) { if (v) v->refc++; return v; }
void val_free_(Val *v);
static inline void val_unref(Val *v) { if (v && --v->refc == 0) val_free_(v); }

/* v seen with the larger mask `to` (a superset of v->mask): the blocks
   are shared, not copied.  Consumes v; returns a new reference. */
Val *val_widen(const Mesh *m, Val *v, uint32_t to);

/* Elementwise operations (ew.h) over all blocks at once, for small
   blocks.  The result's blocks are one slab (array.h) and the operation
   runs once over all of them, each operand seen as one run of elements:
   a scalar shared by every block, a value of the result's variance whose
   blocks are themselves one slab in block order ("flat"), or else its
   blocks gathered into one run when they are small, or failing that
   once per block -- without a kernel call or an allocation per block
   either way.  It is the kernels' own engine (ew_apply_small), so the
   results are theirs.  Slabs stay small (32 KiB): one block kept alive
   keeps its whole slab.  A value of one block has an array of its own.

   val_ew_donor: whether v may hold the result (of type t, mask R) in
   place, as far as its blocks say -- of mask R, t's dtype and shape, and
   nothing but v holding them (arr_owned); the caller knows whether the
   value itself is given up.  val_ew_plan: for a result of type t and
   mask R (nb blocks) from operands opv[i] (NULL: the literal lit[i]) of
   one dtype, each a scalar or of t's shape, operand `donor` (-1: none)
   one val_ew_donor accepted: which operands are flat, by bit (i for
   operand i); -1 when the operands or the size do not qualify.
   val_ew_blocks: new blocks for out, of type t.
   val_ew_run: out = op of the operands, `flat` what val_ew_plan said
   (out's blocks may be an operand's: elementwise, each element is read
   before it is written). */
int val_ew_plan(const Type *t, uint32_t R, int64_t nb, Val *const *opv, Array *const *lit, int nin, int donor);
bool val_ew_donor(const Val *v, const Type *t, uint32_t R);
void val_ew_blocks(Val *out, const Type *t);
void val_ew_run(const Mesh *m, int op, const Type *t, Val *const *opv, Array *const *lit, int nin, int flat,
                Val *out);

#endif
