/*
** split.h — global arrays split into a shard_map body's blocks, and blocks
** assembled into global arrays, across ranks too.
**
** Where each block lies is tiling.h's arithmetic; this module moves the
** elements.  An operand of a shard_map is split into the blocks its
** in_spec cuts (spl_operand), without copying where it can: blocks that
** are contiguous runs of the operand, or pitched matrices for a body that
** only multiplies them, are views of its elements; an operand that dies
** there is carved into its blocks in place, or copied out while its pages
** are given back as it goes.  A result is the array its out_spec tiles
** from the body's blocks (spl_result), assembled by the one assembler
** (spl_assemble), which the value printer's global view (spl_global)
** uses too.
**
** Under several ranks (fabmpi.h) each rank holds only its own instances'
** blocks, so assembling first shares them among the ranks (the fabric's
** fab_move_blocks).  Outside any body a result may also stay as its blocks
** (value.h's ValSplit) until a statement needs the whole array: a call
** passes it on, a shard_map that reads it with the same tiling takes the
** blocks (spl_takes), an elementwise primitive computes on them
** (spl_ew), and anything else assembles it (spl_realize), on every rank at
** the same statement.
*/
#ifndef SHM_SPLIT_H
#define SHM_SPLIT_H

#include "value.h"

/* ---- operands --------------------------------------------------------------------- */

/* How the evaluator lets an operand be split. */
typedef struct SplitWay {
  const uint8_t *need;   /* the blocks some running instance needs (fab_needed); NULL: all */
  bool dies;             /* the operand dies at the shard_map, its array held by it alone */
  bool watched;          /* a hook or an observer looks at the body's values: no pitched views */
} SplitWay;

/* The blocks of operand i of shard_map (or xla_pmap) st whose array is g,
   as its in_spec cuts them for the body (new reference).  A dying operand
   may be carved in place or have its pages discarded: its holder lets go
   of it before the body runs. */
Val *spl_operand(const IrStmt *st, int i, Array *g, const SplitWay *w);
/* Can operand j of st take x, a value kept split, as it is: a call of a
   function, or a shard_map that reads its blocks with their tiling? */
bool spl_takes(const IrStmt *st, int j, const Val *x);
/* The blocks of x (kept split), as a shard_map of mask `mask` reads them
   (new reference). */
Val *spl_blocks(const Mesh *m, const Val *x, uint32_t mask);

/* ---- results ---------------------------------------------------------------------- */

/* The value of result i of shard_map st from its body's blocks: the
   global array (under several ranks the blocks are first shared among
   the ranks), or, where `may_keep` (a top-level statement that no hook or
   observer watches) and several ranks run, the blocks kept split. */
Val *spl_result(const IrStmt *st, int i, Val *blocks, bool may_keep);
/* An elementwise primitive st whose operands ops[] (NULL for a literal)
   are values kept split, all tiled alike (the others scalar literals):
   its result computed on the blocks each rank holds, kept split too (new
   reference); NULL when st is not such a statement. */
Val *spl_ew(const IrStmt *st, Val *const *ops);
/* Assemble x, a value kept split (x->split), into x->blk[0], and let go
   of its blocks. */
void spl_realize(Val *x);

/* ---- assembling --------------------------------------------------------------------- */

/* The one assembler: the array of type gt that the blocks of v (of type
   bt: under xla_pmap, the body's result, which lacks the dimension
   out_axis; else out_axis is -1) tile as spc says (new reference).  Every
   block it reads must be there. */
Array *spl_assemble(const Mesh *m, const Spec *spc, const Type *gt, const Type *bt, int out_axis, Val *v);
/* The global view of a body's value v under spc (new reference), or NULL
   with why in err: spc does not assemble v (til_global_ok), or a block is
   missing (a device off the current path). */
Array *spl_global(const Mesh *m, const Spec *spc, Val *v, char *err, size_t errlen);

#endif
