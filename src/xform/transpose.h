/*
** transpose.h — transposition of linear functions (docs/language.md, "linear_transpose").
**
** tr_linear_transpose turns a checked function f, linear in the parameters marked
** in `linear`, into its transpose: it takes f's other parameters followed
** by one cotangent per result and returns one cotangent per linear
** parameter.  Equations that do not touch linear values are kept (they
** compute the constants the transpose needs); the linear ones are walked
** backwards, each through its primitive's transpose rule (the `transpose`
** column of prims.def).  Every new equation is checked by the same rules
** as written code, so variance types hold and `psum` becomes `pbroadcast`
** exactly where the types prove no communication is needed.
**
** A transpose rule is called twice per equation: first with cx->checking
** set, to reject a non-linear use (`mul x x`) with a diagnostic at the
** equation, then to emit the cotangent equations.
*/
#ifndef SHM_TRANSPOSE_H
#define SHM_TRANSPOSE_H

#include "irbuild.h"

IrFunc *tr_linear_transpose(IrProg *P, IrFunc *f, const bool *linear, const char *name, Span where);

/* The same, with options (autodiff.c, and the bodies of loops and
   shard_maps):
     ct_vma    per result of f, the variance of its cotangent (a shard_map
               body's result leaves through an out_spec naming these axes)
     no_ct     per result, no cotangent parameter: its cotangent is zero
     seed_one  per result, no parameter: its cotangent is the constant 1
               (lifted to its variance), as grad seeds a scalar
     keep      atoms of f, not linear, returned before the cotangents (the
               primal results of a vjp)
     prints    f's print and save statements of non-linear values are kept */
typedef struct TrOpts {
  const uint32_t *ct_vma;
  const bool *no_ct;
  const bool *seed_one;
  const IrAtom *keep;
  int nkeep;
  bool prints;
} TrOpts;
IrFunc *tr_transpose_with(IrProg *P, IrFunc *f, const bool *linear, const char *name, Span where, const TrOpts *o);

#endif
