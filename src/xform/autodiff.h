/*
** autodiff.h — jvp, vjp, grad and value_and_grad of checked functions
** (docs/language.md, "Differentiation").
**
** Forward mode is jvp.h's JVP.  Reverse mode is built as JAX builds it:
** the JVP, linearized (linearize.h: the primal computation separated from
** the tangent computation, which is linear in the tangents), then the
** linear part transposed (transpose.h), so that the backward pass of a
** shard_map gets seed 004's efficient transposes: psum of a cotangent
** only where the variance types demand it.  Equations and nested
** functions' results that nothing reads are dropped at the end (a grad
** that does not return the value runs no collective computing it).
**
** Each returns the new function, or NULL after diagnostics at f's
** equations.  Integers and booleans carry no tangent: their parameters
** get no tangent or cotangent, their results none either.
**
**   ad_jvp   (f's parameters, a tangent per floating parameter)
**              -> (f's results, a tangent per floating result)
**   ad_vjp   (f's parameters, a cotangent per floating result)
**              -> (f's results, a cotangent per floating parameter)
**   ad_grad  (f's parameters) -> ([f's one result,] a gradient per
**            parameter argnums[] names, in that order); f returns one
**            floating scalar, and every named parameter is floating and
**            named once (the caller checks).
*/
#ifndef SHM_AUTODIFF_H
#define SHM_AUTODIFF_H

#include "irbuild.h"

IrFunc *ad_jvp(IrProg *P, IrFunc *f, const char *name, Span where);
IrFunc *ad_vjp(IrProg *P, IrFunc *f, const char *name, Span where);
IrFunc *ad_grad(IrProg *P, IrFunc *f, const int64_t *argnums, int n, bool with_value, const char *name, Span where);

#endif
