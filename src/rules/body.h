/*
** body.h — running the scalar function a primitive carries (body.c):
** generic reduce_window's `jaxpr` and scatter_apply's `update_jaxpr`.
**
** Such a function combines scalars (JAX traces it on rank-0 values); the
** primitive's kernel applies it to many elements at once.  body_run runs a
** checked function whose statements are all local primitives with
** kernels, constants and calls of such functions, reading no value from
** outside, on arrays of one shape, element by element: where every
** primitive in it is elementwise, in one pass over the whole arrays (each
** kernel called on the full shape); otherwise once per element on rank-0
** arrays, with the function's own types.
*/
#ifndef SHM_BODY_H
#define SHM_BODY_H

#include "ir.h"

/* Can body_run run f?  When not, *bad (if given) is the first statement
   that is not a local primitive with a kernel, a constant or a call of
   such a function, or that reads a value from outside f. */
bool body_runnable(const IrFunc *f, const IrStmt **bad);

/* f applied to each element: args[k] (f->nparams arrays of one shape, of
   f's parameter dtypes) give the operands; outs[k] (f->nouts new arrays of
   that shape, of f's result dtypes) the results. */
void body_run(const IrFunc *f, Array *const *args, Array **outs);

#endif
