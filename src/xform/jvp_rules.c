/*
** jvp_rules.c — the forward-mode derivative of each primitive: the `jvp`
** column of prims.def.
**
** Each rule computes the tangent of the results from the operands'
** tangents as JAX's rule for the primitive does (jax/_src/lax/lax.py,
** slicing.py, special.py, control_flow/loops.py, parallel.py): the same
** formula, the same tie-breaking (max, min and reduce_max split a tie
** evenly, as _balanced_eq and _reduce_chooser_jvp_rule do; cummax follows
** the parallel prefix scan JAX differentiates), the same behaviour at
** zero (abs takes the + side; pow's derivative at a zero exponent is
** zero).  An operand without a tangent (cx->has[k] false) is a symbolic
** zero: its term is left out.  The equations go through the Builder, so
** they are checked and typed as written code; a tangent may vary over
** fewer axes than its primal and is lifted only where an equation needs.
*/
#include <math.h>
#include "jvp_int.h"
#include "window.h"

static const JvpFn jvp_table[P_COUNT] = {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, exec, tr, jvp, cost) [P_##tag] = jvp,
#include "prims.def"
#undef PRIM
};

JvpFn jvp_rule(int prim) { return prim >= 0 && prim < P_COUNT ? jvp_table[prim] : NULL; }

/* ---- helpers ------------------------------------------------------------------------ */

IrAtom jv_emit(JvpCx *cx, int prim, const IrParam *ps, int np, IrAtom *in, int nin) {
  IrAtom out;
  memset(&out, 0, sizeof out);
  if (!bld_prim(cx->J->B, prim, ps, np, in, nin, &out)) {
    cx->J->R->failed = true;
    return in[0];
  }
  return out;
}

IrAtom jv_lit(JvpCx *cx, int dt, double v) {
  IrAtom a;
  memset(&a, 0, sizeof a);
  a.lit = bld_keep(cx->J->B, dtype_is_float((DType)dt) ? arr_scalar_f((DType)dt, v) : arr_scalar_i((DType)dt, (int64_t)v));
  a.t.dt = (uint8_t)dt;
  a.sp = cx->st->sp;
  return a;
}

/* A parameter key = value. */
static IrParam kv(const char *k, PVal *v) {
  IrParam p = {k, v};
  return p;
}

static IrAtom un(JvpCx *cx, int prim, IrAtom a) { return jv_emit(cx, prim, NULL, 0, &a, 1); }

/* prim a b. */
static IrAtom bin(JvpCx *cx, int prim, IrAtom a, IrAtom b) {
  IrAtom in[2] = {a, b};
  return jv_emit(cx, prim, NULL, 0, in, 2);
}

/* A constant of a's dtype. */
static IrAtom cst(JvpCx *cx, IrAtom a, double v) { return jv_lit(cx, a.t.dt, v); }

#define ADD(a, b) bin(cx, P_ADD, a, b)
#define SUB(a, b) bin(cx, P_SUB, a, b)
#define MUL(a, b) bin(cx, P_MUL, a, b)
#define DIV(a, b) bin(cx, P_DIV, a, b)
#define EQ(a, b) bin(cx, P_EQ, a, b)
#define NEG(a) un(cx, P_NEG, a)
#define SQUARE(a) un(cx, P_SQUARE, a)

/* integer_pow[y] a. */
static IrAtom ipow(JvpCx *cx, IrAtom a, int64_t y) {
  IrParam ps[1] = {kv("y", bld_pv_int(cx->J->B, y))};
  return jv_emit(cx, P_INTEGER_POW, ps, 1, &a, 1);
}

/* lax.select(pred, on_true, on_false) is select_n(pred, on_false, on_true). */
static IrAtom sel(JvpCx *cx, IrAtom pred, IrAtom on_true, IrAtom on_false) {
  IrAtom in[3] = {pred, on_false, on_true};
  return jv_emit(cx, P_SELECT_N, NULL, 0, in, 3);
}

IrAtom jv_bin(JvpCx *cx, int prim, IrAtom a, IrAtom b) { return bin(cx, prim, a, b); }
IrAtom jv_un(JvpCx *cx, int prim, IrAtom a) { return un(cx, prim, a); }
IrAtom jv_sel(JvpCx *cx, IrAtom pred, IrAtom on_true, IrAtom on_false) { return sel(cx, pred, on_true, on_false); }

/* JAX's _replace_zero: ones where x is zero. */
static IrAtom replace_zero(JvpCx *cx, IrAtom x) { return sel(cx, EQ(x, cst(cx, x, 0)), cst(cx, x, 1), x); }

static IrAtom primal(JvpCx *cx, int k) { return cx->in[k]; }
static IrAtom tan_of(JvpCx *cx, int k) { return cx->tin[k]; }
static IrAtom ans(JvpCx *cx) { return cx->out[0]; }

/* The tangent of result j; one of a smaller shape (a scalar, or size-1
   dimensions where an elementwise operand broadcast) is broadcast to the
   result's shape. */
void jv_set(JvpCx *cx, int j, IrAtom t) {
  const Type *o = &cx->st->out[j]->t;
  bool same = t.t.rank == o->rank;
  for (int d = 0; same && d < o->rank; d++) same = t.t.shape[d] == o->shape[d];
  if (!same && (t.t.rank == 0 || t.t.rank == o->rank)) {
    Builder *B = cx->J->B;
    int64_t dims[SHM_MAXRANK];
    for (int d = 0; d < t.t.rank; d++) dims[d] = d;
    IrParam ps[2] = {kv("shape", bld_pv_ints(B, o->shape, o->rank)), kv("broadcast_dimensions", bld_pv_ints(B, dims, t.t.rank))};
    t = jv_emit(cx, P_BROADCAST_IN_DIM, ps, 2, &t, 1);
  }
  cx->tout[j] = t;
  cx->hout[j] = true;
}

/* The sum of the terms present (a tangent, or none). */
typedef struct Acc {
  IrAtom a;
  bool has;
} Acc;

/* Add a term to the sum. */
static void acc_add(JvpCx *cx, Acc *s, IrAtom t) {
  s->a = s->has ? ADD(s->a, t) : t;
  s->has = true;
}

/* The sum is the tangent of result 0 (none when it has no term). */
static bool acc_set(JvpCx *cx, Acc *s) {
  if (s->has) jv_set(cx, 0, s->a);
  return true;
}

/* A rule of JAX's defjvp form: one term per operand with a tangent, each
   the operand's tangent times the partial derivative `term` gives. */
typedef IrAtom (*TermFn)(JvpCx *cx, int k, IrAtom g);

/* Sum the terms of the operands that have tangents. */
static bool by_terms(JvpCx *cx, TermFn term) {
  Acc s = {{0}, false};
  for (int k = 0; k < cx->st->nin && !cx->J->R->failed; k++)
    if (cx->has[k]) acc_add(cx, &s, term(cx, k, tan_of(cx, k)));
  return acc_set(cx, &s);
}

/* ---- zero and linear ------------------------------------------------------------------ */

/* A derivative that is zero: no tangent (JAX's defjvp_zero). */
bool jvp_zero(JvpCx *cx) {
  (void)cx;
  return true;
}

/* A linear primitive: the same equation on the tangents (zeros for a
   floating operand without one; integer operands, such as start indices,
   as they are). */
bool jvp_linear(JvpCx *cx) {
  const IrStmt *st = cx->st;
  Builder *B = cx->J->B;
  IrAtom *in = bld_alloc(B, sizeof(IrAtom) * (size_t)(st->nin + 1));
  for (int k = 0; k < st->nin; k++) {
    if (cx->has[k]) in[k] = tan_of(cx, k);
    else if (jvp_has_tangent(st->in[k].t.dt)) {
      Type z = st->in[k].t;
      z.vma = 0;
      in[k] = bld_zeros(B, &z);
    } else in[k] = primal(cx, k);
  }
  jv_set(cx, 0, jv_emit(cx, st->prim, st->params, st->nparams, in, st->nin));
  return true;
}

/* split: linear, the tangent split as the operand is (one tangent per
   result). */
bool jvp_split(JvpCx *cx) {
  const IrStmt *st = cx->st;
  if (!cx->has[0] || !st->nout) return true;
  Builder *B = cx->J->B;
  IrAtom t = tan_of(cx, 0), *res = bld_alloc(B, sizeof(IrAtom) * (size_t)st->nout);
  if (!bld_prim(B, P_SPLIT, st->params, st->nparams, &t, 1, res)) { cx->J->R->failed = true; return false; }
  for (int j = 0; j < st->nout; j++) jv_set(cx, j, res[j]);
  return true;
}

/* pbroadcast moves nothing: the tangent is the operand's, lifted only
   where an equation needs it. */
bool jvp_pbroadcast(JvpCx *cx) {
  cx->tout[0] = tan_of(cx, 0);
  cx->hout[0] = true;
  return true;
}

/* ---- elementwise binary ---------------------------------------------------------------- */

/* add: the sum of the tangents (one alone broadcast to the result). */
bool jvp_add(JvpCx *cx) {
  Acc s = {{0}, false};
  for (int k = 0; k < 2; k++)
    if (cx->has[k]) acc_add(cx, &s, tan_of(cx, k));
  return acc_set(cx, &s);
}

/* sub: the difference of the tangents. */
bool jvp_sub(JvpCx *cx) {
  IrAtom t;
  if (cx->has[0] && cx->has[1]) t = SUB(tan_of(cx, 0), tan_of(cx, 1));
  else if (cx->has[0]) t = tan_of(cx, 0);
  else t = NEG(tan_of(cx, 1));
  jv_set(cx, 0, t);
  return true;
}

/* mul: xdot y + x ydot. */
static IrAtom mul_term(JvpCx *cx, int k, IrAtom g) {
  return k == 0 ? MUL(g, primal(cx, 1)) : MUL(primal(cx, 0), g);
}
bool jvp_mul(JvpCx *cx) { return by_terms(cx, mul_term); }

/* div: xdot / y - ydot x / y^2. */
static IrAtom div_term(JvpCx *cx, int k, IrAtom g) {
  IrAtom x = primal(cx, 0), y = primal(cx, 1);
  if (k == 0) return DIV(g, y);
  return MUL(MUL(NEG(g), x), ipow(cx, y, -2));
}
bool jvp_div(JvpCx *cx) { return by_terms(cx, div_term); }

/* rem: xdot - ydot sign(x / y) floor(|x / y|). */
static IrAtom rem_term(JvpCx *cx, int k, IrAtom g) {
  if (k == 0) return g;
  IrAtom q = DIV(primal(cx, 0), primal(cx, 1));
  return MUL(NEG(g), MUL(un(cx, P_SIGN, q), un(cx, P_FLOOR, un(cx, P_ABS, q))));
}
bool jvp_rem(JvpCx *cx) { return by_terms(cx, rem_term); }

/* a converted to dtype dt (a itself when it has it). */
static IrAtom convert(JvpCx *cx, IrAtom a, int dt) {
  if (a.t.dt == dt) return a;
  IrParam ps[1] = {kv("new_dtype", bld_pv_name(cx->J->B, dtype_names[dt]))};
  return jv_emit(cx, P_CONVERT_ELEMENT_TYPE, ps, 1, &a, 1);
}

/* pow: JAX's _pow_jvp_lhs and _pow_jvp_rhs; with an integer exponent the
   derivative at a zero exponent is zero (not 0 * x^-1). */
static IrAtom pow_term(JvpCx *cx, int k, IrAtom g) {
  IrAtom x = primal(cx, 0), y0 = primal(cx, 1);
  if (k == 1) return MUL(g, MUL(un(cx, P_LOG, replace_zero(cx, x)), ans(cx)));
  IrAtom y = convert(cx, y0, x.t.dt), jac;
  IrAtom xp = bin(cx, P_POW, x, SUB(y, cst(cx, y, 1)));
  if (!jvp_has_tangent(y0.t.dt))
    jac = sel(cx, EQ(y, cst(cx, y, 0)), cst(cx, y, 0), MUL(replace_zero(cx, y), xp));
  else
    jac = MUL(y, xp);
  return MUL(g, jac);
}
bool jvp_pow(JvpCx *cx) { return by_terms(cx, pow_term); }

/* JAX's _balanced_eq(x, z, y): 1 where x is the result, halved where y is
   too (a tie splits the derivative evenly). */
static IrAtom balanced_eq(JvpCx *cx, IrAtom x, IrAtom z, IrAtom y) {
  IrAtom one = cst(cx, z, 1);
  return DIV(sel(cx, EQ(x, z), one, cst(cx, z, 0)), sel(cx, EQ(y, z), cst(cx, z, 2), one));
}

/* max, min: each operand's tangent where it is the result. */
static IrAtom minmax_term(JvpCx *cx, int k, IrAtom g) {
  return MUL(g, balanced_eq(cx, primal(cx, k), ans(cx), primal(cx, 1 - k)));
}
bool jvp_max(JvpCx *cx) { return by_terms(cx, minmax_term); }
bool jvp_min(JvpCx *cx) { return by_terms(cx, minmax_term); }

/* atan2 x y: (y xdot - x ydot) / (x^2 + y^2). */
static IrAtom atan2_term(JvpCx *cx, int k, IrAtom g) {
  IrAtom x = primal(cx, 0), y = primal(cx, 1);
  IrAtom d = ADD(SQUARE(x), SQUARE(y));
  return k == 0 ? MUL(g, DIV(y, d)) : MUL(g, DIV(NEG(x), d));
}
bool jvp_atan2(JvpCx *cx) { return by_terms(cx, atan2_term); }

/* ---- elementwise unary -------------------------------------------------------------- */

/* A unary rule: the tangent from g, the operand x and the result y. */
#define UNARY(name, expr)                                                       \
  bool jvp_##name(JvpCx *cx) {                                                  \
    IrAtom g = tan_of(cx, 0), x = primal(cx, 0), y = ans(cx);                   \
    (void)x; (void)y;                                                           \
    jv_set(cx, 0, (expr));                                                      \
    return true;                                                                \
  }

UNARY(abs, sel(cx, bin(cx, P_GE, x, cst(cx, x, 0)), g, NEG(g)))
UNARY(square, MUL(g, MUL(cst(cx, x, 2), x)))
UNARY(exp, MUL(g, y))
UNARY(exp2, MUL(cst(cx, x, log(2.0)), MUL(g, y)))
UNARY(expm1, MUL(g, ADD(y, cst(cx, y, 1))))
UNARY(log, DIV(g, x))
UNARY(log1p, DIV(g, ADD(x, cst(cx, x, 1))))
UNARY(tanh, MUL(ADD(g, MUL(g, y)), SUB(cst(cx, x, 1), y)))
UNARY(logistic, MUL(g, MUL(y, SUB(cst(cx, y, 1), y))))
UNARY(sqrt, MUL(g, DIV(cst(cx, x, 0.5), y)))
UNARY(rsqrt, MUL(g, MUL(cst(cx, x, -0.5), DIV(y, x))))
UNARY(cbrt, MUL(g, MUL(cst(cx, x, 1.0 / 3.0), ipow(cx, y, -2))))
UNARY(sin, MUL(g, un(cx, P_COS, x)))
UNARY(cos, NEG(MUL(g, un(cx, P_SIN, x))))
UNARY(tan, MUL(g, ADD(cst(cx, x, 1), SQUARE(y))))
UNARY(asin, MUL(g, un(cx, P_RSQRT, SUB(cst(cx, x, 1), SQUARE(x)))))
UNARY(acos, MUL(g, NEG(un(cx, P_RSQRT, SUB(cst(cx, x, 1), SQUARE(x))))))
UNARY(atan, DIV(g, ADD(cst(cx, x, 1), SQUARE(x))))
UNARY(sinh, MUL(g, un(cx, P_COSH, x)))
UNARY(cosh, MUL(g, un(cx, P_SINH, x)))
UNARY(asinh, MUL(g, un(cx, P_RSQRT, ADD(SQUARE(x), cst(cx, x, 1)))))
UNARY(acosh, MUL(g, un(cx, P_RSQRT, SUB(SQUARE(x), cst(cx, x, 1)))))
UNARY(atanh, MUL(ipow(cx, ADD(cst(cx, x, 1), x), -1), DIV(g, SUB(cst(cx, x, 1), x))))
UNARY(erf, MUL(cst(cx, x, 2.0 / sqrt(M_PI)), MUL(g, un(cx, P_EXP, NEG(SQUARE(x))))))
UNARY(erfc, MUL(cst(cx, x, -2.0 / sqrt(M_PI)), MUL(g, un(cx, P_EXP, NEG(SQUARE(x))))))
/* erf_inv: dy = g * sqrt(pi)/2 * exp(y^2) */
UNARY(erf_inv, MUL(g, MUL(cst(cx, y, sqrt(M_PI) / 2), un(cx, P_EXP, SQUARE(y)))))
UNARY(lgamma, MUL(g, un(cx, P_DIGAMMA, x)))
UNARY(digamma, MUL(g, bin(cx, P_POLYGAMMA, cst(cx, x, 1), x)))

/* polygamma m x: no derivative in m (JAX raises), polygamma(m + 1, x) in x. */
bool jvp_polygamma(JvpCx *cx) {
  if (cx->has[0]) return jv_error(cx, "polygamma has no derivative with respect to its order m (as in JAX)");
  IrAtom m = primal(cx, 0);
  jv_set(cx, 0, MUL(tan_of(cx, 1), bin(cx, P_POLYGAMMA, ADD(m, cst(cx, m, 1)), primal(cx, 1))));
  return true;
}

/* ---- special functions (JAX's rules in jax/_src/lax/special.py) ---------------------- */

/* d/dx igamma(a, x) = exp(-x + (a - 1) log x - lgamma a) (igamma_gradx). */
static IrAtom igamma_dx(JvpCx *cx, IrAtom a, IrAtom x) {
  IrAtom e = ADD(NEG(x), SUB(MUL(SUB(a, cst(cx, a, 1)), un(cx, P_LOG, x)), un(cx, P_LGAMMA, a)));
  return un(cx, P_EXP, e);
}

/* igamma a x: g igamma_grad_a(a, x) in a, g igamma_gradx in x; igammac
   the negatives of both. */
static IrAtom igamma_term(JvpCx *cx, int k, IrAtom g) {
  IrAtom a = primal(cx, 0), x = primal(cx, 1);
  IrAtom d = k == 0 ? bin(cx, P_IGAMMA_GRAD_A, a, x) : igamma_dx(cx, a, x);
  return cx->st->prim == P_IGAMMAC ? NEG(MUL(g, d)) : MUL(g, d);
}
bool jvp_igamma(JvpCx *cx) { return by_terms(cx, igamma_term); }

/* bessel_i0e: g (bessel_i1e(x) - sign(x) y). */
UNARY(bessel_i0e, MUL(g, SUB(un(cx, P_BESSEL_I1E, x), MUL(un(cx, P_SIGN, x), y))))

/* The machine epsilon of a float dtype (finfo(dtype).eps). */
static double dtype_eps(int dt) {
  switch (dt) {
  case DT_F16: return ldexp(1, -10);
  case DT_BF16: return ldexp(1, -7);
  case DT_F64: return ldexp(1, -52);
  default: return ldexp(1, -23);
  }
}

/* bessel_i1e (JAX's _bessel_i1e_jvp): with x kept away from 0 by eps,
   g (bessel_i0e(x) - y (sign(x) + 1/x)), and g/2 where |x| <= eps. */
bool jvp_bessel_i1e(JvpCx *cx) {
  IrAtom g = tan_of(cx, 0), x = primal(cx, 0), y = ans(cx), eps = cst(cx, x, dtype_eps(x.t.dt));
  IrAtom big = bin(cx, P_GT, un(cx, P_ABS, x), eps);
  IrAtom sx = sel(cx, big, x, eps);
  IrAtom d = SUB(un(cx, P_BESSEL_I0E, sx), MUL(y, ADD(un(cx, P_SIGN, sx), ipow(cx, sx, -1))));
  jv_set(cx, 0, MUL(g, sel(cx, big, d, cst(cx, x, 0.5))));
  return true;
}

/* regularized_incomplete_beta a b x: no derivative in a or b (JAX
   raises), in x g exp((b - 1) log1p(-x) + (a - 1) log x - lbeta(a, b)). */
bool jvp_betainc(JvpCx *cx) {
  if (cx->has[0] || cx->has[1])
    return jv_error(cx, "regularized_incomplete_beta has no derivative with respect to a and b (as in JAX)");
  IrAtom a = primal(cx, 0), b = primal(cx, 1), x = primal(cx, 2), one = cst(cx, x, 1);
  IrAtom lbeta = SUB(ADD(un(cx, P_LGAMMA, a), un(cx, P_LGAMMA, b)), un(cx, P_LGAMMA, ADD(a, b)));
  IrAtom e = SUB(ADD(MUL(SUB(b, one), un(cx, P_LOG1P, NEG(x))), MUL(SUB(a, one), un(cx, P_LOG, x))), lbeta);
  jv_set(cx, 0, MUL(un(cx, P_EXP, e), tan_of(cx, 2)));
  return true;
}

/* integer_pow[y]: y x^(y-1) xdot (JAX's _integer_pow_jvp). */
bool jvp_integer_pow(JvpCx *cx) {
  int64_t y = cx->st->at->i[0];
  IrAtom g = tan_of(cx, 0), x = primal(cx, 0);
  if (y == 0) return true;             /* a constant: its tangent is zero */
  if (y == 1) jv_set(cx, 0, g);
  else if (y == 2) jv_set(cx, 0, MUL(g, MUL(cst(cx, x, 2), x)));
  else jv_set(cx, 0, MUL(g, MUL(cst(cx, x, (double)y), ipow(cx, x, y - 1))));
  return true;
}

/* To a floating dtype the tangent converts; to an integer one it is zero
   (the driver gives integer results no tangent). */
bool jvp_convert_element_type(JvpCx *cx) {
  IrAtom g = tan_of(cx, 0);
  jv_set(cx, 0, jv_emit(cx, P_CONVERT_ELEMENT_TYPE, cx->st->params, cx->st->nparams, &g, 1));
  return true;
}

/* clamp lo x hi: each operand's tangent where it is the result (JAX's
   rule, ties included). */
static IrAtom clamp_term(JvpCx *cx, int k, IrAtom g) {
  IrAtom lo = primal(cx, 0), x = primal(cx, 1), hi = primal(cx, 2), p;
  if (k == 0) p = bin(cx, P_AND, bin(cx, P_GT, lo, x), bin(cx, P_LT, lo, hi));
  else if (k == 1) p = bin(cx, P_AND, bin(cx, P_GT, x, lo), bin(cx, P_LT, x, hi));
  else p = bin(cx, P_LT, hi, x);
  return sel(cx, p, g, cst(cx, g, 0));
}
bool jvp_clamp(JvpCx *cx) { return by_terms(cx, clamp_term); }

/* select_n which cases...: the same selection of the cases' tangents (a
   zero for a case without one). */
bool jvp_select_n(JvpCx *cx) {
  int n = cx->st->nin;
  IrAtom *in = bld_alloc(cx->J->B, sizeof(IrAtom) * (size_t)(n + 1));
  in[0] = primal(cx, 0);
  for (int k = 1; k < n; k++) in[k] = cx->has[k] ? tan_of(cx, k) : jv_lit(cx, cx->st->out[0]->t.dt, 0);
  jv_set(cx, 0, jv_emit(cx, P_SELECT_N, NULL, 0, in, n));
  return true;
}

/* ---- dot_general ------------------------------------------------------------------------ */

/* dot_general: bilinear, dot(xdot, y) + dot(x, ydot). */
static IrAtom dot_term(JvpCx *cx, int k, IrAtom g) {
  IrAtom in[2] = {k == 0 ? g : primal(cx, 0), k == 1 ? g : primal(cx, 1)};
  return jv_emit(cx, P_DOT_GENERAL, cx->st->params, cx->st->nparams, in, 2);
}
bool jvp_dot_general(JvpCx *cx) { return by_terms(cx, dot_term); }

/* ---- windows and convolutions ------------------------------------------------------------ */

/* reduce_window_max and _min, JAX's _reduce_window_chooser_jvp_rule: the
   tangent at each window's selected element (the first maximum, or
   minimum), select_and_gather_add[select_prim=ge or le]. */
bool jvp_reduce_window_chooser(JvpCx *cx) {
  Builder *B = cx->J->B;
  const IrStmt *st = cx->st;
  const char *keys[5] = {"base_dilation", "padding", "window_dilation", "window_dimensions", "window_strides"};
  IrParam ps[6];
  for (int i = 0; i < 5; i++) ps[i + (i >= 2)] = kv(keys[i], rule_stmt_param(st, keys[i]));
  ps[2] = kv("select_prim", bld_pv_name(B, st->prim == P_REDUCE_WINDOW_MAX ? "ge" : "le"));
  IrAtom in[2] = {tan_of(cx, 0), primal(cx, 0)};
  jv_set(cx, 0, jv_emit(cx, P_SELECT_AND_GATHER_ADD, ps, 6, in, 2));
  return true;
}

/* reduce_window with a body.  JAX differentiates the body (its tangent init
   value must be zero), a rule shmapi does not have; it takes the rules of
   the primitives JAX's reduce_window API turns a monoid's body into: a
   body of add is reduce_window_sum's (whatever the init value, whose
   tangent is zero), one of max or min with the identity as init value
   reduce_window_max's or _min's. */
bool jvp_reduce_window(JvpCx *cx) {
  const IrStmt *st = cx->st;
  int n = st->nin / 2;
  for (int k = n; k < st->nin; k++)
    if (cx->has[k]) return jv_error(cx, "reduce_window's derivative needs init values without a tangent (as JAX's)");
  if (!cx->has[0]) return true;
  int op = n == 1 ? win_body_op(st->at->fns[0]) : -1;
  if (op < 0 || (op != P_ADD && !win_is_identity(op, st->in[1].lit)))
    return jv_error(cx, "cannot differentiate reduce_window with this body: shmapi differentiates reduce_window only "
                    "where its body is add, or max or min with init value -inf or +inf (the windowed sum, max "
                    "and min, which JAX prints as reduce_window_sum, _max and _min); JAX's forward-mode rule for other bodies, through the body's own JVP, is not implemented here");
  const char *keys[5] = {"base_dilation", "padding", "window_dilation", "window_dimensions", "window_strides"};
  IrParam ps[6];
  for (int i = 0; i < 5; i++) ps[i] = kv(keys[i], rule_stmt_param(st, keys[i]));
  if (op == P_ADD) {
    IrAtom t = tan_of(cx, 0);
    jv_set(cx, 0, jv_emit(cx, P_REDUCE_WINDOW_SUM, ps, 5, &t, 1));
    return true;
  }
  for (int i = 0; i < 5; i++) ps[i + (i >= 2)] = kv(keys[i], rule_stmt_param(st, keys[i]));
  ps[2] = kv("select_prim", bld_pv_name(cx->J->B, op == P_MAX ? "ge" : "le"));
  IrAtom in[2] = {tan_of(cx, 0), primal(cx, 0)};
  jv_set(cx, 0, jv_emit(cx, P_SELECT_AND_GATHER_ADD, ps, 6, in, 2));
  return true;
}

/* select_and_gather_add and select_and_scatter_add: linear in the values
   (operand 0), constant in what they select by (JAX's rules). */
bool jvp_select_window(JvpCx *cx) {
  if (!cx->has[0]) return true;
  IrAtom in[2] = {tan_of(cx, 0), primal(cx, 1)};
  jv_set(cx, 0, jv_emit(cx, cx->st->prim, cx->st->params, cx->st->nparams, in, 2));
  return true;
}

/* conv_general_dilated: bilinear, conv(xdot, w) + conv(x, wdot). */
static IrAtom conv_term(JvpCx *cx, int k, IrAtom g) {
  IrAtom in[2] = {k == 0 ? g : primal(cx, 0), k == 1 ? g : primal(cx, 1)};
  return jv_emit(cx, P_CONV_GENERAL_DILATED, cx->st->params, cx->st->nparams, in, 2);
}
bool jvp_conv_general_dilated(JvpCx *cx) { return by_terms(cx, conv_term); }
/* ---- gather and scatter (JAX's rules in jax/_src/lax/slicing.py) ------------------------- */

/* A parameter value True (or 1). */
static bool is_true(const PVal *p) { return p && (p->k == PV_BOOL || p->k == PV_INT) && p->i; }

/* Zeros of operand k's type where it has no tangent. */
static IrAtom tan_or_zeros(JvpCx *cx, int k) {
  if (cx->has[k]) return tan_of(cx, k);
  Type z = cx->st->in[k].t;
  z.vma = 0;
  return bld_zeros(cx->J->B, &z);
}

/* The gather reading the windows scatter st writes, from x. */
static IrAtom gather_back(JvpCx *cx, IrAtom x) {
  IrAtom in[2] = {x, primal(cx, 1)};
  return jv_emit(cx, P_GATHER, bld_gather_for_scatter(cx->J->B, cx->st), 6, in, 2);
}

/* prim (a scatter) with st's dimension numbers and flags. */
static IrAtom scatter_as(JvpCx *cx, int prim, IrAtom x, IrAtom u) {
  IrAtom in[3] = {x, primal(cx, 1), u};
  return jv_emit(cx, prim, bld_scatter_like(cx->J->B, cx->st), cx->st->nparams, in, 3);
}

/* gather: linear in the operand; the tangent's fill is 0. */
bool jvp_gather(JvpCx *cx) {
  if (!cx->has[0]) return true;
  const char *keys[1] = {"fill_value"};
  PVal *zero = bld_pv_int(cx->J->B, 0);
  IrAtom in[2] = {tan_of(cx, 0), primal(cx, 1)};
  jv_set(cx, 0, jv_emit(cx, P_GATHER, bld_params_with(cx->J->B, cx->st, keys, &zero, 1), cx->st->nparams, in, 2));
  return true;
}

/* iota + 1 over the updates' scatter dimensions, broadcast along their
   window dimensions: one id per window (JAX's update_ids). */
static IrAtom update_ids(JvpCx *cx, const Type *u, int dt) {
  Builder *B = cx->J->B;
  const IntList *uwd = &cx->st->at->l[0];
  int64_t ids[SHM_MAXRANK], n = 1, all[SHM_MAXRANK];
  for (int d = 0; d < u->rank; d++) {
    bool w = false;
    for (int i = 0; i < uwd->n; i++) w |= uwd->v[i] == d;
    ids[d] = w ? 1 : u->shape[d];
    n *= ids[d];
    all[d] = d;
  }
  IrParam pi[3] = {kv("dtype", bld_pv_name(B, dtype_names[dt])), kv("shape", bld_pv_ints(B, &n, 1)),
                   kv("dimension", bld_pv_int(B, 0))};
  IrAtom x = jv_emit(cx, P_IOTA, pi, 3, NULL, 0);
  IrParam pr[1] = {kv("new_sizes", bld_pv_ints(B, ids, u->rank))};
  x = jv_emit(cx, P_RESHAPE, pr, 1, &x, 1);
  IrParam pb[2] = {kv("shape", bld_pv_ints(B, u->shape, u->rank)), kv("broadcast_dimensions", bld_pv_ints(B, all, u->rank))};
  x = jv_emit(cx, P_BROADCAST_IN_DIM, pb, 2, &x, 1);
  return ADD(x, jv_lit(cx, dt, 1));
}

/* scatter: with unique indices the same scatter of the tangents; else
   JAX's scheme: scatter an id per update window, gather the ids back, and
   scatter-add only the tangents of the windows that won (and of the
   operand's elements no window overwrote). */
bool jvp_scatter(JvpCx *cx) {
  if (!cx->has[0] && !cx->has[2]) return true;
  if (cx->st->at->nfns)
    return jv_error(cx, "cannot differentiate scatter with an update_jaxpr of its own (jax.lax.scatter_apply): "
                    "JAX has no derivative rule for it either (it raises NotImplementedError)");
  IrAtom gx = tan_or_zeros(cx, 0), gu = tan_or_zeros(cx, 2);
  if (is_true(rule_stmt_param(cx->st, "unique_indices"))) {
    jv_set(cx, 0, scatter_as(cx, P_SCATTER, gx, gu));
    return true;
  }
  const Type *u = &cx->st->in[2].t, *x = &cx->st->in[0].t;
  int64_t n = 1;
  for (int d = 0; d < u->rank; d++) n *= u->shape[d];
  int dt = n < INT64_C(0xffffffff) ? DT_U32 : DT_U64;
  IrAtom ids = update_ids(cx, u, dt);
  Type zt = *x;
  zt.dt = dt;
  zt.vma = 0;
  IrAtom scattered = scatter_as(cx, P_SCATTER, bld_zeros(cx->J->B, &zt), ids);
  IrAtom won = EQ(ids, gather_back(cx, scattered));
  IrAtom kept = EQ(scattered, jv_lit(cx, dt, 0));
  IrAtom mx = sel(cx, kept, gx, cst(cx, gx, 0)), mu = sel(cx, won, gu, cst(cx, gu, 0));
  jv_set(cx, 0, scatter_as(cx, P_SCATTER_ADD, mx, mu));
  return true;
}

/* scatter-mul: the same scatter-mul of the operand's tangent; the
   updates' term only with unique indices (as JAX): x * scatter-add(0, i, udot). */
bool jvp_scatter_mul(JvpCx *cx) {
  Acc s = {{0}, false};
  if (cx->has[0]) acc_add(cx, &s, scatter_as(cx, P_SCATTER_MUL, tan_of(cx, 0), primal(cx, 2)));
  if (cx->has[2]) {
    if (!is_true(rule_stmt_param(cx->st, "unique_indices")))
      return jv_error(cx, "scatter-mul is differentiated in its updates only with unique_indices=True (as JAX does)");
    Type z = cx->st->in[0].t;
    z.vma = 0;
    acc_add(cx, &s, MUL(primal(cx, 0), scatter_as(cx, P_SCATTER_ADD, bld_zeros(cx->J->B, &z), tan_of(cx, 2))));
  }
  return acc_set(cx, &s);
}

/* scatter-min, scatter-max: JAX's _scatter_extremal_jvp.  Where several
   values tie for an element (the operand's and updates'), its tangent is
   the mean of theirs. */
bool jvp_scatter_extremal(JvpCx *cx) {
  if (!cx->has[0] && !cx->has[2]) return true;
  IrAtom gx = tan_or_zeros(cx, 0), gu = tan_or_zeros(cx, 2), up = primal(cx, 2);
  Type zx = cx->st->in[0].t;
  zx.vma = 0;
  IrAtom initial = gather_back(cx, primal(cx, 0)), target = gather_back(cx, ans(cx));
  IrAtom won = EQ(up, target), retained = EQ(initial, target);
  IrAtom one = cst(cx, up, 1), zero = cst(cx, up, 0);
  IrAtom num_updates = gather_back(cx, scatter_as(cx, P_SCATTER_ADD, bld_zeros(cx->J->B, &zx), sel(cx, won, one, zero)));
  IrParam pb[2] = {kv("shape", bld_pv_ints(cx->J->B, up.t.shape, up.t.rank)),
                   kv("broadcast_dimensions", bld_pv_ints(cx->J->B, NULL, 0))};
  IrAtom ones = jv_emit(cx, P_BROADCAST_IN_DIM, pb, 2, &one, 1);
  IrAtom num_refs = gather_back(cx, scatter_as(cx, P_SCATTER_ADD, bld_zeros(cx->J->B, &zx), ones));
  IrAtom with_old = DIV(one, ADD(num_updates, one));
  IrAtom up_coef = sel(cx, won, sel(cx, retained, with_old, DIV(one, num_updates)), zero);
  IrAtom op_coef = DIV(ADD(cst(cx, up, -1), sel(cx, retained, with_old, zero)), num_refs);
  IrAtom t = ADD(MUL(gather_back(cx, gx), op_coef), MUL(gu, up_coef));
  jv_set(cx, 0, scatter_as(cx, P_SCATTER_ADD, gx, t));
  return true;
}

/* ---- reductions ---------------------------------------------------------------------------- */

/* Is x among l[0..n-1]? */
static bool in_list(const int64_t *l, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (l[i] == x) return true;
  return false;
}

/* JAX's _reduce_chooser_jvp_rule: the mean of the tangents at the
   locations equal to the result. */
bool jvp_reduce_chooser(JvpCx *cx) {
  Builder *B = cx->J->B;
  IrAtom x = primal(cx, 0), g = tan_of(cx, 0);
  const Type *t = &x.t;
  int64_t ax[SHM_MAXRANK], keep[SHM_MAXRANK];
  int na = rule_read_ints(rule_stmt_param(cx->st, "axes"), ax, SHM_MAXRANK), nk = 0;
  for (int d = 0; d < t->rank; d++)
    if (!in_list(ax, na, d)) keep[nk++] = d;
  IrParam bp[2] = {kv("shape", bld_pv_ints(B, t->shape, t->rank)), kv("broadcast_dimensions", bld_pv_ints(B, keep, nk))};
  IrAtom a = ans(cx);
  IrAtom wide = jv_emit(cx, P_BROADCAST_IN_DIM, bp, 2, &a, 1);
  IrAtom loc = convert(cx, EQ(x, wide), g.t.dt);
  IrParam rp[1] = {kv("axes", bld_pv_ints(B, ax, na))};
  IrAtom counts = jv_emit(cx, P_REDUCE_SUM, rp, 1, &loc, 1);
  IrAtom gl = MUL(g, loc);
  jv_set(cx, 0, DIV(jv_emit(cx, P_REDUCE_SUM, rp, 1, &gl, 1), counts));
  return true;
}

/* a[lo:hi:stride] along dimension d (JAX's slice_in_dim). */
static IrAtom slice_dim(JvpCx *cx, IrAtom a, int d, int64_t lo, int64_t hi, int64_t stride) {
  Builder *B = cx->J->B;
  int r = a.t.rank;
  int64_t st[SHM_MAXRANK], lim[SHM_MAXRANK], str[SHM_MAXRANK];
  for (int k = 0; k < r; k++) {
    st[k] = 0;
    lim[k] = a.t.shape[k];
    str[k] = 1;
  }
  st[d] = lo;
  lim[d] = hi < lo ? lo : hi;
  str[d] = stride;
  IrParam ps[3] = {kv("start_indices", bld_pv_ints(B, st, r)), kv("limit_indices", bld_pv_ints(B, lim, r)),
                   kv("strides", bld_pv_ints(B, str, r))};
  return jv_emit(cx, P_SLICE, ps, stride == 1 ? 2 : 3, &a, 1);
}

/* a padded with v along dimension d. */
static IrAtom pad_dim(JvpCx *cx, IrAtom a, IrAtom v, int d, int64_t lo, int64_t hi, int64_t interior) {
  Builder *B = cx->J->B;
  int r = a.t.rank;
  PVal **cfg = bld_alloc(B, sizeof(PVal *) * (size_t)(r + 1));
  for (int k = 0; k < r; k++) {
    int64_t c[3] = {k == d ? lo : 0, k == d ? hi : 0, k == d ? interior : 0};
    cfg[k] = bld_pv_ints(B, c, 3);
  }
  IrParam ps[1] = {kv("padding_config", bld_pv_tuple(B, cfg, r))};
  IrAtom in[2] = {a, v};
  return jv_emit(cx, P_PAD, ps, 1, in, 2);
}

/* A value and its tangent, as the reductions' trees carry them. */
typedef struct Dual {
  IrAtom p, t;
} Dual;

/* JAX's _replace_inf: zeros where x is +inf. */
static IrAtom replace_inf(JvpCx *cx, IrAtom x) { return sel(cx, EQ(x, cst(cx, x, INFINITY)), cst(cx, x, 0), x); }

/* JAX's logaddexp of two duals, with its custom JVP:
   max(a, b) + log1p(exp(-|a - b|)), or a + b where a - b is NaN; the
   tangent a' exp(a - r) + b' exp(b - r), +inf read as 0 there. */
static Dual logaddexp(JvpCx *cx, Dual a, Dual b) {
  Dual r;
  IrAtom delta = SUB(a.p, b.p);
  IrAtom big = ADD(bin(cx, P_MAX, a.p, b.p), un(cx, P_LOG1P, un(cx, P_EXP, NEG(un(cx, P_ABS, delta)))));
  r.p = sel(cx, bin(cx, P_NE, delta, delta), ADD(a.p, b.p), big);
  IrAtom ro = replace_inf(cx, r.p);
  r.t = ADD(MUL(a.t, un(cx, P_EXP, SUB(replace_inf(cx, a.p), ro))), MUL(b.t, un(cx, P_EXP, SUB(replace_inf(cx, b.p), ro))));
  return r;
}

/* mul, max, min or logaddexp (P_CUMLOGSUMEXP) of two duals, with its JVP. */
static Dual combine(JvpCx *cx, int prim, Dual a, Dual b) {
  Dual r;
  if (prim == P_CUMLOGSUMEXP) return logaddexp(cx, a, b);
  r.p = bin(cx, prim, a.p, b.p);
  if (prim == P_MUL) r.t = ADD(MUL(a.t, b.p), MUL(a.p, b.t));
  else r.t = ADD(MUL(a.t, balanced_eq(cx, a.p, r.p, b.p)), MUL(b.t, balanced_eq(cx, b.p, r.p, a.p)));
  return r;
}

/* reduce_prod: JAX's _reduce_jvp: the reduced axes moved to the front and
   flattened, then multiplied in a tree of halves (an odd half padded with
   ones), differentiated as it goes. */
bool jvp_reduce_prod(JvpCx *cx) {
  Builder *B = cx->J->B;
  IrAtom x = primal(cx, 0);
  const Type *t = &x.t;
  int64_t ax[SHM_MAXRANK], perm[SHM_MAXRANK], shape[SHM_MAXRANK];
  int na = rule_read_ints(rule_stmt_param(cx->st, "axes"), ax, SHM_MAXRANK), np = 0, nr = 1;
  int64_t n = 1;
  for (int i = 1; i < na; i++)        /* the axes in order */
    for (int j = i; j > 0 && ax[j] < ax[j - 1]; j--) { int64_t s = ax[j]; ax[j] = ax[j - 1]; ax[j - 1] = s; }
  for (int i = 0; i < na; i++) { perm[np++] = ax[i]; n *= t->shape[ax[i]]; }
  for (int d = 0; d < t->rank; d++)
    if (!in_list(ax, na, d)) { perm[np++] = d; shape[nr++] = t->shape[d]; }
  shape[0] = n;
  if (n == 0) return true;             /* the empty product is 1: a constant */
  Dual v = {x, tan_of(cx, 0)};
  bool ident = true;
  for (int i = 0; i < np; i++) ident &= perm[i] == i;
  IrParam tp[1] = {kv("permutation", bld_pv_ints(B, perm, np))};
  IrParam rp[1] = {kv("new_sizes", bld_pv_ints(B, shape, nr))};
  if (!ident) { v.p = jv_emit(cx, P_TRANSPOSE, tp, 1, &v.p, 1); v.t = jv_emit(cx, P_TRANSPOSE, tp, 1, &v.t, 1); }
  v.p = jv_emit(cx, P_RESHAPE, rp, 1, &v.p, 1);
  v.t = jv_emit(cx, P_RESHAPE, rp, 1, &v.t, 1);
  while (n > 1 && !cx->J->R->failed) {
    int64_t n1 = (n + 1) / 2, n2 = n - n1;
    Dual a = {slice_dim(cx, v.p, 0, 0, n1, 1), slice_dim(cx, v.t, 0, 0, n1, 1)};
    Dual b = {slice_dim(cx, v.p, 0, n1, n, 1), slice_dim(cx, v.t, 0, n1, n, 1)};
    if (n2 != n1) {
      b.p = pad_dim(cx, b.p, cst(cx, b.p, 1), 0, 0, 1, 0);
      b.t = pad_dim(cx, b.t, cst(cx, b.t, 0), 0, 0, 1, 0);
    }
    v = combine(cx, P_MUL, a, b);
    n = n1;
  }
  IrParam op[1] = {kv("new_sizes", bld_pv_ints(B, shape + 1, nr - 1))};
  jv_set(cx, 0, jv_emit(cx, P_RESHAPE, op, 1, &v.t, 1));
  return true;
}

/* JAX's _interleave: a's elements at the even places, b's at the odd. */
static IrAtom interleave(JvpCx *cx, IrAtom a, IrAtom b, int d) {
  bool same = a.t.shape[d] == b.t.shape[d];
  IrAtom pa = pad_dim(cx, a, cst(cx, a, 0), d, 0, same ? 1 : 0, 1);
  IrAtom pb = pad_dim(cx, b, cst(cx, b, 0), d, 1, same ? 0 : 1, 1);
  return ADD(pa, pb);
}

/* The same slice of a value and its tangent. */
static Dual dual_slice(JvpCx *cx, Dual v, int d, int64_t lo, int64_t hi, int64_t s) {
  Dual r = {slice_dim(cx, v.p, d, lo, hi, s), slice_dim(cx, v.t, d, lo, hi, s)};
  return r;
}

/* JAX's associative_scan along dimension d, on duals. */
static Dual scan(JvpCx *cx, int prim, Dual e, int d) {
  int64_t n = e.p.t.shape[d];
  if (n < 2 || cx->J->R->failed) return e;
  Dual red = combine(cx, prim, dual_slice(cx, e, d, 0, n - 1, 2), dual_slice(cx, e, d, 1, n, 2));
  Dual odd = scan(cx, prim, red, d), even;
  if (n % 2 == 0)
    even = combine(cx, prim, dual_slice(cx, odd, d, 0, odd.p.t.shape[d] - 1, 1), dual_slice(cx, e, d, 2, n, 2));
  else
    even = combine(cx, prim, odd, dual_slice(cx, e, d, 2, n, 2));
  Dual first = dual_slice(cx, e, d, 0, 1, 1);
  IrParam cp[1] = {kv("dimension", bld_pv_int(cx->J->B, d))};
  IrAtom ip[2] = {first.p, even.p}, it[2] = {first.t, even.t};
  even.p = jv_emit(cx, P_CONCATENATE, cp, 1, ip, 2);
  even.t = jv_emit(cx, P_CONCATENATE, cp, 1, it, 2);
  Dual r = {interleave(cx, even.p, odd.p, d), interleave(cx, even.t, odd.t, d)};
  return r;
}

/* cumprod, cummax, cummin, cumlogsumexp: JAX's _cumulative_jvp_rule, the
   JVP of the parallel prefix scan of mul, max, min or logaddexp. */
bool jvp_cumulative(JvpCx *cx) {
  int p = cx->st->prim;
  int prim = p == P_CUMPROD ? P_MUL : p == P_CUMMAX ? P_MAX : p == P_CUMMIN ? P_MIN : P_CUMLOGSUMEXP;
  Builder *B = cx->J->B;
  int64_t d = cx->st->at->i[0];
  bool rev = cx->st->at->b[0];
  Dual e = {primal(cx, 0), tan_of(cx, 0)};
  int64_t dims[1] = {d};
  IrParam rp[1] = {kv("dimensions", bld_pv_ints(B, dims, 1))};
  if (rev) { e.p = jv_emit(cx, P_REV, rp, 1, &e.p, 1); e.t = jv_emit(cx, P_REV, rp, 1, &e.t, 1); }
  Dual r = scan(cx, prim, e, (int)d);
  if (rev) r.t = jv_emit(cx, P_REV, rp, 1, &r.t, 1);
  jv_set(cx, 0, r.t);
  return true;
}

/* ---- sorting and selection -------------------------------------------------------------- */

/* sort: JAX's _sort_jvp permutes each tangent as its operand is permuted
   (a gather at the sorting permutation).  Here the tangents ride along as
   more operands of a sort by the same keys, which applies the same stable
   permutation; that sort is linear in them, and tr_sort transposes it. */
bool jvp_sort(JvpCx *cx) {
  Builder *B = cx->J->B;
  const IrStmt *st = cx->st;
  int nk = (int)st->at->i[1], nin = st->nin, nt = 0;
  IrAtom *ops = bld_alloc(B, sizeof(IrAtom) * (size_t)(nk + nin)), *res = bld_alloc(B, sizeof(IrAtom) * (size_t)(nk + nin));
  int *which = bld_alloc(B, sizeof(int) * (size_t)nin);
  for (int k = 0; k < nk; k++) ops[k] = primal(cx, k);
  for (int k = 0; k < nin; k++)
    if (cx->has[k]) { which[nt] = k; ops[nk + nt++] = tan_of(cx, k); }
  if (!nt) return true;
  IrParam ps[3] = {kv("dimension", bld_pv_int(B, st->at->i[0])), kv("is_stable", bld_pv_bool(B, st->at->b[0])),
                   kv("num_keys", bld_pv_int(B, nk))};
  if (!bld_prim(B, P_SORT, ps, 3, ops, nk + nt, res)) { cx->J->R->failed = true; return false; }
  for (int m = 0; m < nt; m++) jv_set(cx, which[m], res[nk + m]);
  return true;
}

/* A keyword argument key=v of a call value (GatherDimensionNumbers(...)). */
static PVal *kw(Builder *B, const char *key, PVal *v) {
  PVal *t = bld_pv_tuple(B, &v, 1);
  t->k = PV_KW;
  t->s = str_c(key);
  return t;
}

/* top_k, approx_top_k: JAX's _top_k_jvp, the tangent gathered at the
   result's indices along the axis, every other dimension a batching
   dimension of the gather:
     gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(),
       collapsed_slice_dims=(axis,), start_index_map=(axis,),
       operand_batching_dims=(others), start_indices_batching_dims=(others))
       slice_sizes=(1, ...)] tangent (reshape indices to [..., 1])
   which picks exactly one tangent element per result (a non-finite
   tangent elsewhere stays out) and is linear in the tangent (its
   transpose is a scatter-add). */
bool jvp_top_k(JvpCx *cx) {
  if (!cx->has[0]) return true;
  Builder *B = cx->J->B;
  IrAtom t = tan_of(cx, 0), idx = cx->out[1];
  int d = (int)cx->st->at->i[1], r = t.t.rank, nb = 0;
  if (r + 1 > SHM_MAXRANK) return jv_error(cx, "the derivative of %s needs rank %d, more than %d", prim_table[cx->st->prim].name, r + 1, SHM_MAXRANK);
  int64_t wide[SHM_MAXRANK + 1], others[SHM_MAXRANK], ones[SHM_MAXRANK], ax[1] = {d};
  for (int k = 0; k < r; k++) {
    wide[k] = idx.t.shape[k];
    ones[k] = 1;
    if (k != d) others[nb++] = k;
  }
  wide[r] = 1;
  IrParam rp[1] = {kv("new_sizes", bld_pv_ints(B, wide, r + 1))};
  IrAtom ix = jv_emit(cx, P_RESHAPE, rp, 1, &idx, 1);
  PVal *f[5] = {kw(B, "offset_dims", bld_pv_ints(B, NULL, 0)), kw(B, "collapsed_slice_dims", bld_pv_ints(B, ax, 1)),
                kw(B, "start_index_map", bld_pv_ints(B, ax, 1)), kw(B, "operand_batching_dims", bld_pv_ints(B, others, nb)),
                kw(B, "start_indices_batching_dims", bld_pv_ints(B, others, nb))};
  PVal *dn = bld_pv_tuple(B, f, 5), *none = bld_pv_name(B, "None");
  dn->k = PV_CALL;
  dn->s = str_c("GatherDimensionNumbers");
  none->k = PV_NONE;
  IrParam gp[6] = {kv("dimension_numbers", dn), kv("fill_value", none), kv("indices_are_sorted", bld_pv_bool(B, false)),
                   kv("mode", bld_pv_name(B, "GatherScatterMode.FILL_OR_DROP")), kv("slice_sizes", bld_pv_ints(B, ones, r)),
                   kv("unique_indices", bld_pv_bool(B, false))};
  IrAtom in[2] = {t, ix};
  jv_set(cx, 0, jv_emit(cx, P_GATHER, gp, 6, in, 2));
  return true;
}
