/*
** linearize.h — partial evaluation of a JVP: the primal computation
** separated from the linear one, as JAX's linearize does it.
**
** pe_linearize takes a function g (a JVP, jvp.h) whose parameters
** `unknown` marks are the tangents, and returns a function with g's
** parameters in which every equation either reads no tangent (the
** "known" part: the primal computation and the coefficients the tangents
** are multiplied by) or is linear in the tangents.  A higher-order
** equation that does both is split in two: one computing its primal
** results and the residuals (the known values its linear part reads),
** one computing its tangents from them:
**
**   - shard_map: the residuals leave the first body through out_specs
**     naming exactly the axes they vary over (a scalar that varies is
**     made a one-element vector, as JAX does) and enter the second
**     through the same in_specs, so nothing moves between devices;
**   - cond: each branch returns the residuals of every branch (zeros for
**     the others'); under an index that varies, the tangents enter the
**     linear cond lifted to vary along the index's axes, so that its
**     transpose sums their cotangents outside the cond;
**   - fori_loop with literal bounds: the residuals of each iteration are
**     stacked into arrays indexed by the iteration (carries of the first
**     loop), read back by the second; the index and the carries a body
**     passes through unchanged are passed as they are;
**   - while, or fori_loop with bounds that are values, carrying a tangent:
**     an error, as in JAX (reverse mode needs a static trip count).
**
** Its results are g's results that `lin_out` marks (each linear, or a
** known zero); keep[] gets the others, as atoms of the new function.
** NULL after a diagnostic at g's equation.  transpose.h transposes the
** result in the tangents.
*/
#ifndef SHM_LINEARIZE_H
#define SHM_LINEARIZE_H

#include "irbuild.h"

IrFunc *pe_linearize(IrProg *P, IrFunc *g, const bool *unknown, const bool *lin_out, IrAtom *keep, const char *name,
                     Span where);

#endif
