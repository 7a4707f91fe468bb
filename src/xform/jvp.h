/*
** jvp.h — forward-mode differentiation of checked functions
** (docs/language.md, "Differentiation").
**
** jvp_func turns a checked function f into its JVP, as jax.jvp traces it:
** a function taking f's parameters, then one tangent per parameter that
** `wrt` marks (floating parameters only: integers and booleans carry no
** tangent, JAX's float0), and returning f's results, then one tangent per
** floating result.  Every equation of f is copied (the primal
** computation) and followed by the equations of its derivative, from the
** primitive's rule (the `jvp` column of prims.def, jvp_rules.c), as JAX's
** rules compute it; calls are inlined; cond, while, fori_loop and
** shard_map carry tangents through their functions.  A tangent that is
** known to be zero is not computed at all (JAX's symbolic zeros); a
** tangent's type is its primal's, or varies over fewer axes (it is lifted
** only where an equation needs it).
**
** The functions the JVP makes read no local value of the function they
** stand in through a closure: a value a branch or a loop body captured is
** passed to it as an operand (with its tangent), so that partial
** evaluation and transposition (linearize.h, transpose.h) see every input.
**
** Errors (a primitive without a derivative rule) are diagnostics at the
** equation of f; the result is then NULL.
*/
#ifndef SHM_JVP_H
#define SHM_JVP_H

#include "irbuild.h"

IrFunc *jvp_func(IrProg *P, IrFunc *f, const bool *wrt, const char *name, Span where);

/* Does a value of this dtype carry a tangent (a floating dtype)? */
bool jvp_has_tangent(int dt);

#endif
