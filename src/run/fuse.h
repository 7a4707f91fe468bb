/*
** fuse.h — chains of elementwise equations run as one pass over memory
** (eval.c).
**
** A chain is k >= 2 consecutive elementwise equations of one function
** body (the binary, comparison and unary primitives of prims.h's
** prim_ew_op, one result each) whose results all have one shape, whose
** operands are literals, scalars or values of that shape of one dtype
** per equation, and whose intermediates -- every result but the last --
** are read by no statement after the chain, by no nested function and
** are not the function's results; a chain may also take in arange and
** iota (of the dtypes prims.h's prim_fill_tile writes), whose elements it
** then makes tile by tile, never the whole array.  Then nothing but the
** chain sees its intermediates, so the evaluator computes the chain a tile of a few thousand elements
** at a time: each equation's kernel (ew_apply_small, the kernels' own
** engine) on the tile's elements, the intermediates in small scratch
** buffers that stay in cache, and only the last result written to memory.
** Each element of each result is computed by the same operation on the
** same operands as the equations one by one would: the same bits.
**
** fuse_plan marks the chains of a function once its releases are planned
** (drops.h: IrVar.last): IrStmt.fuse_n of a chain's first statement is
** its length.  The evaluator decides at run time whether to run a marked
** chain fused (not under the debugger's hook or an observer, not for
** small blocks) -- see eval.c's exec_fused.
*/
#ifndef SHM_FUSE_H
#define SHM_FUSE_H

#include "ir.h"

#define FUSE_MAX 32        /* equations in a chain at most */
#define FUSE_MAXEXT 64     /* operands from outside the chain at most */

/* Mark fn's chains (IrStmt.fuse_n); needs drops_plan(fn) first. */
void fuse_plan(IrFunc *fn);

/* A chain, resolved: step s computes op on its operands, each a step
   before it (src >= 0) or an operand from outside the chain (src = -1 -
   k: ext[k]); its result has dtype dt. */
typedef struct FuseStep {
  int op, nin;
  int src[2];
  uint8_t dt;
  int prim;               /* a fill (nin 0): arange or iota, with its */
  const Attrs *at;        /* attributes and result type */
  const Type *t;
} FuseStep;

typedef struct FuseChain {
  int nstep, next;
  FuseStep step[FUSE_MAX];
  const IrAtom *ext[FUSE_MAXEXT];
} FuseChain;

/* The chain of the n statements from st[0] (as fuse_plan marked them). */
void fuse_resolve(IrStmt *const *st, int n, FuseChain *c);

/* r = the chain's last result on blocks ex[k] of its outside operands
   (rank 0: broadcast; else r's shape, contiguous).  r may be one of them
   (each element is read before it is written).  On two threads when it
   is big; allocates its scratch first (may raise an error), then never
   fails. */
void fuse_block(const FuseChain *c, Array *const *ex, Array *r);

#endif
