/*
** special.h — JAX's special functions beyond lgamma, digamma and
** polygamma (special.c; rows of prims.def, "special functions"):
** igamma, igammac, igamma_grad_a, random_gamma_grad, zeta, bessel_i0e,
** bessel_i1e and regularized_incomplete_beta.
*/
#ifndef SHM_SPECIAL_H
#define SHM_SPECIAL_H

#include <stdbool.h>
#include "array.h"
#include "rule.h"

/* Two or three floats of one dtype, of one shape or scalars (lax's
   standard_naryop): the result has their dtype and shape. */
bool sp_rule_binary(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool sp_rule_unary(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool sp_rule_betainc(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);

void sp_kern_igamma(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void sp_kern_igammac(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void sp_kern_igamma_grad_a(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void sp_kern_random_gamma_grad(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void sp_kern_zeta(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void sp_kern_bessel_i0e(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void sp_kern_bessel_i1e(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void sp_kern_betainc(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* The functions in double precision.  `wide` says the operands are f64:
   the thresholds JAX's algorithm takes from the dtype (the exponent below
   which exp underflows, the smallest normal) are then f64's, otherwise
   f32's (JAX computes f16 and bf16 in f32). */
double sp_igamma(double a, double x, bool wide);
double sp_igammac(double a, double x, bool wide);
double sp_igamma_grad_a(double a, double x, bool wide);
double sp_random_gamma_grad(double a, double x, bool wide);
double sp_zeta(double x, double q);
double sp_bessel_i0e(double x);
double sp_bessel_i1e(double x);
double sp_betainc(double a, double b, double x, bool wide);

#endif
