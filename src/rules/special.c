/*
** special.c — JAX's special functions (jax/_src/lax/special.py) beyond
** lgamma, digamma and polygamma (rows of prims.def, "special functions"):
**
**   igamma a x, igammac a x      the regularized incomplete gamma functions
**                                P(a, x) and Q(a, x) = 1 - P(a, x)
**   igamma_grad_a a x            dP(a, x)/da
**   random_gamma_grad a x        the derivative of a Gamma(a, 1) sample x
**                                with respect to a (JAX before 0.6 printed
**                                it as a primitive; jax.random.gamma's
**                                gradient)
**   zeta x q                     the Hurwitz zeta function
**   bessel_i0e x, bessel_i1e x   exp(-|x|) I0(x) and exp(-|x|) I1(x)
**   regularized_incomplete_beta a b x
**                                I_x(a, b) (jax.scipy.special.betainc)
**
** JAX lowers the incomplete gamma and beta functions to its own series
** and continued fractions (igamma_impl, _igamma_series,
** _igammac_continued_fraction, regularized_incomplete_beta_impl); here
** the same algorithms run per element in double precision, with the same
** choice of branch and the same special values (NaN outside the domain,
** the limits at 0 and infinity), and converge to double precision before
** the result is rounded to the dtype.  The thresholds JAX reads from the
** dtype (where exp underflows, the smallest normal) are the operands'
** dtype's, f32's for f16 and bf16, which JAX computes in f32.  zeta
** applies XLA's domain rules (chlo.zeta) to the Euler-Maclaurin sum the
** polygamma primitive uses; the Bessel functions are the power series of
** I0 and I1 (all terms positive) up to |x| = 30 and their asymptotic
** expansions beyond.
*/
#include <float.h>
#include <math.h>
#include "special.h"
#include "dtype.h"
#include "ew.h"

/* ---- shape rules ------------------------------------------------------------- */

/* Floats of one dtype (a weak literal takes the others' dtype, f32 when
   all are weak), of one shape or scalars. */
static bool float_rule(RuleCtx *cx, Type *in, int nin, Type *out) {
  static const int idx[3] = {0, 1, 2};
  int dt = 0;
  bool all_weak = true;
  for (int k = 0; k < nin; k++) all_weak &= in[k].weak;
  if (all_weak)
    for (int k = 0; k < nin; k++) in[k].dt = DT_F32;
  if (!rule_unify_dtypes(cx, in, idx, nin, &dt)) return false;
  if (!rule_check_kind(cx, &in[0], K_FLOAT)) return false;
  if (!rule_bcast_shapes(cx, in, idx, nin, out)) return false;
  out->dt = (uint8_t)dt;
  out->weak = false;
  return true;
}

bool sp_rule_unary(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)at;
  return float_rule(cx, in, nin, out);
}

bool sp_rule_binary(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)at;
  return float_rule(cx, in, nin, out);
}

bool sp_rule_betainc(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)at;
  return float_rule(cx, in, nin, out);
}

/* ---- the incomplete gamma functions (JAX's igamma_impl and friends) --------- */

typedef enum { IG_VALUE, IG_DERIVATIVE, IG_SAMPLE_DERIVATIVE } IgMode;

/* The exponent below which JAX's algorithm calls exp(a log x - x - lgamma a)
   an underflow: -log of the dtype's largest float. */
static double underflow_at(bool wide) { return -log(wide ? DBL_MAX : (double)FLT_MAX); }

/* JAX's _igamma_series: P(a, x) (or a derivative) from the power series
   sum x^n / ((a+1)...(a+n)); when not enabled the series keeps its first
   term (ans 1, dans_da 0), as JAX's loop leaves a disabled element. */
static double igamma_series(double ax, double x, double a, bool enabled, IgMode mode) {
  double r = a, c = 1, ans = 1, dc_da = 0, dans_da = 0;
  for (long it = 0; enabled && it < 10000000; it++) {
    r += 1;
    dc_da = dc_da * (x / r) - (c * x) / (r * r);
    dans_da += dc_da;
    c *= x / r;
    ans += c;
    enabled = mode == IG_VALUE ? c / ans > DBL_EPSILON : fabs(dc_da / dans_da) > DBL_EPSILON;
  }
  if (mode == IG_VALUE) return ans * ax / a;
  double dlogax_da = log(x) - ew_digamma(a + 1);
  if (mode == IG_DERIVATIVE) return ax * (ans * dlogax_da + dans_da) / a;
  return -(dans_da + ans * dlogax_da) * x / a;
}

/* The state of JAX's continued fraction for Q(a, x): the last two
   convergents' numerators p and denominators q, their derivatives in a. */
typedef struct Cf {
  double ans, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans;
} Cf;

/* One step of the continued fraction; true while not converged. */
static bool cf_step(Cf *s, IgMode mode) {
  s->c += 1;
  s->y += 1;
  s->z += 2;
  double yc = s->y * s->c;
  double pk = s->pkm1 * s->z - s->pkm2 * yc, qk = s->qkm1 * s->z - s->qkm2 * yc;
  double t = 1, grad = 1;
  if (qk != 0) {
    double r = pk / qk;
    t = fabs((s->ans - r) / r);
    s->ans = r;
  }
  double dpk = s->dpkm1 * s->z - s->pkm1 - s->dpkm2 * yc + s->pkm2 * s->c;
  double dqk = s->dqkm1 * s->z - s->qkm1 - s->dqkm2 * yc + s->qkm2 * s->c;
  double dnew = s->dans;
  if (qk != 0) {
    dnew = (dpk - s->ans * dqk) / qk;
    grad = fabs(dnew - s->dans);
  }
  s->pkm2 = s->pkm1; s->pkm1 = pk; s->qkm2 = s->qkm1; s->qkm1 = qk;
  s->dpkm2 = s->dpkm1; s->dqkm2 = s->dqkm1; s->dpkm1 = dpk; s->dqkm1 = dqk;
  if (fabs(pk) > 1 / DBL_EPSILON) {
    double e = DBL_EPSILON;
    s->pkm2 *= e; s->pkm1 *= e; s->qkm2 *= e; s->qkm1 *= e;
    s->dpkm2 *= e; s->dqkm2 *= e; s->dpkm1 *= e; s->dqkm1 *= e;
  }
  s->dans = dnew;
  return mode == IG_VALUE ? t > DBL_EPSILON : grad > DBL_EPSILON;
}

/* JAX's _igammac_continued_fraction: Q(a, x) (or a derivative), at most
   2000 steps. */
static double igammac_cf(double ax, double x, double a, bool enabled, IgMode mode) {
  Cf s;
  s.y = 1 - a;
  s.z = x + s.y + 1;
  s.c = 0;
  s.pkm2 = 1; s.qkm2 = x; s.pkm1 = x + 1; s.qkm1 = s.z * x;
  s.ans = s.pkm1 / s.qkm1;
  s.dpkm2 = 0; s.dqkm2 = 0; s.dpkm1 = 0; s.dqkm1 = -x;
  s.dans = (s.dpkm1 - s.ans * s.dqkm1) / s.qkm1;
  while (enabled && s.c < 2000) enabled = cf_step(&s, mode);
  if (mode == IG_VALUE) return s.ans * ax;
  double dlogax_da = log(x) - ew_digamma(a);
  if (mode == IG_DERIVATIVE) return ax * (s.ans * dlogax_da + s.dans);
  return -(s.dans + s.ans * dlogax_da) * x;
}

/* exp(a log x - x - lgamma(a)), and whether that exponent underflows. */
static double gamma_ax(double a, double x, bool wide, bool *underflow) {
  double e = a * log(x) - x - lgamma(a);
  *underflow = e < underflow_at(wide);
  return exp(e);
}

static bool ig_domain_error(double a, double x) {
  return x < 0 || a < 0 || (a == 0 && x == 0) || (isinf(a) && isinf(x) && a > 0 && x > 0) || isnan(a) || isnan(x);
}

double sp_igamma(double a, double x, bool wide) {
  bool domain = ig_domain_error(a, x), under;
  bool x_inf = x == INFINITY, a_inf = a == INFINITY, use_c = x >= 1 && x > a;
  double ax = gamma_ax(a, x, wide, &under);
  bool enabled = !(x == 0 || domain || under || x_inf || a_inf);
  double out = use_c ? 1 - igammac_cf(ax, x, a, enabled, IG_VALUE) : igamma_series(ax, x, a, enabled, IG_VALUE);
  if (a_inf) out = 0;
  if (x == 0) out = 0;
  if (x_inf) out = 1;
  return domain ? NAN : out;
}

double sp_igammac(double a, double x, bool wide) {
  bool domain = ig_domain_error(a, x), under;
  bool x_inf = x == INFINITY, a_inf = a == INFINITY, use_p = x < 1 || x < a;
  double ax = gamma_ax(a, x, wide, &under);
  bool enabled = !(domain || under || x_inf || a == 0 || a_inf);
  double out = use_p ? 1 - igamma_series(ax, x, a, enabled, IG_VALUE) : igammac_cf(ax, x, a, enabled, IG_VALUE);
  if (a_inf) out = 1;
  if (x_inf || a == 0) out = 0;
  return domain ? NAN : out;
}

/* igamma_grad_a and random_gamma_grad: JAX's igamma_grad_a_impl and
   random_gamma_grad_impl, which differ only in the mode. */
static double gamma_grad(double a, double x, bool wide, IgMode mode) {
  bool is_nan = isnan(a) || isnan(x), domain = x < 0 || a <= 0, under;
  bool use_c = x > 1 && x > a;
  double ax = gamma_ax(a, x, wide, &under);
  bool enabled = !(x == 0 || domain || under || is_nan);
  double out = use_c ? -igammac_cf(ax, x, a, enabled, mode) : igamma_series(ax, x, a, enabled, mode);
  if (x == 0) out = 0;
  return domain || is_nan ? NAN : out;
}

double sp_igamma_grad_a(double a, double x, bool wide) { return gamma_grad(a, x, wide, IG_DERIVATIVE); }
double sp_random_gamma_grad(double a, double x, bool wide) { return gamma_grad(a, x, wide, IG_SAMPLE_DERIVATIVE); }

/* ---- zeta (XLA's chlo.zeta domain) -------------------------------------------- */

static bool is_int(double v) { return v == floor(v); }

/* XLA's rules, applied in its order: NaN for x < 1, NaN for q <= 0 and x
   not an integer, at the poles q = 0, -1, ... inf for an even integer x
   and NaN otherwise, inf for x = 1. */
double sp_zeta(double x, double q) {
  double out;
  if (x == 1) return INFINITY;
  if (q <= 0 && is_int(q)) return is_int(x) && fmod(x, 2) == 0 ? INFINITY : NAN;
  if (isnan(x) || isnan(q)) return NAN;
  if (q <= 0 && !is_int(x)) return NAN;
  if (x < 1) return NAN;
  if (isinf(x)) out = q == 1 ? 1 : q > 1 ? 0 : INFINITY;
  else out = ew_hurwitz_zeta(x, q);
  return out;
}

/* ---- exponentially scaled Bessel functions -------------------------------------- */

/* exp(-x) I_nu(x) for x >= 0 and nu 0 or 1: the power series
   sum (x/2)^(2k+nu) / (k! (k+nu)!), whose terms are all positive, up to
   x = 30; beyond, the asymptotic expansion
   exp(-x) I_nu(x) ~ (2 pi x)^-1/2 sum_k (-1)^k prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! (8x)^k),
   summed while its terms shrink (past x = 30 they fall below 1e-20). */
static double bessel_ie(double x, int nu) {
  if (x == 0) return nu ? 0.0 : 1.0;
  if (isinf(x)) return 0;
  if (x <= 30) {
    double h = x / 2, q = h * h, t = nu ? h : 1, s = t;
    for (int k = 1; k < 500; k++) {
      t *= q / ((double)k * (double)(k + nu));
      s += t;
      if (t < 1e-18 * s) break;
    }
    return s * exp(-x);
  }
  double mu = 4.0 * nu * nu, t = 1, s = 1, last = INFINITY;
  for (int k = 1; k < 200; k++) {
    double d = (2.0 * k - 1) * (2.0 * k - 1);
    double nt = -t * (mu - d) / (k * 8.0 * x);
    if (fabs(nt) >= last) break;
    last = fabs(nt);
    t = nt;
    s += t;
    if (fabs(t) < 1e-18 * fabs(s)) break;
  }
  return s / sqrt(2 * M_PI * x);
}

double sp_bessel_i0e(double x) { return isnan(x) ? x : bessel_ie(fabs(x), 0); }
double sp_bessel_i1e(double x) { return isnan(x) ? x : copysign(bessel_ie(fabs(x), 1), x); }

/* ---- the regularized incomplete beta function (JAX's
   regularized_incomplete_beta_impl) ---------------------------------------------- */

/* The partial numerators of DLMF 8.17.22's continued fraction, numbered as
   JAX numbers them: 1 for iteration 1, then the even and odd terms. */
static double betainc_numerator(int it, double a, double b, double x) {
  if (it == 1) return 1;
  int m = (it - 1) / 2;
  if (it % 2 == 0) {
    if (m == 0) return -(a + b) * x / (a + 1);
    return -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1));
  }
  return m * (b - m) * x / ((a + 2.0 * m - 1) * (a + 2.0 * m));
}

/* The modified Lentz algorithm, as JAX's lentz_thompson_barnett_algorithm
   runs it: partial denominators 0 then 1; at most 600 iterations. */
static double betainc_cf(double a, double b, double x) {
  const double small = DBL_EPSILON / 2, threshold = DBL_EPSILON / 2;
  double h = small, c = h, d = 0;
  for (int it = 1; it < 600; it++) {
    double num = betainc_numerator(it, a, b, x);
    c = 1 + num / c;
    if (fabs(c) < small) c = small;
    d = 1 + num * d;
    if (fabs(d) < small) d = small;
    d = 1 / d;
    double delta = c * d;
    h *= delta;
    if (!(fabs(delta - 1) >= threshold)) break;
  }
  return h;
}

double sp_betainc(double a, double b, double x, bool wide) {
  bool a_zero = a == 0 || b == INFINITY, b_zero = b == 0 || a == INFINITY;
  bool x_zero = x == 0, x_one = x == 1;
  bool is_nan = isnan(a) || isnan(b) || isnan(x);
  bool res_zero = (b_zero && !x_one) || (a_zero && x_zero);
  bool res_one = (a_zero && !x_zero) || (b_zero && x_one);
  bool res_nan = a < 0 || b < 0 || x < 0 || x > 1 || (a_zero && b_zero) || is_nan;
  bool fast = x < (a + 1) / (a + b + 2);
  if (!fast) {
    double t = a;
    a = b;
    b = t;
    x = 1 - x;
  }
  double cf = betainc_cf(a, b, x);
  double very_small = 2 * (wide ? DBL_MIN : (double)FLT_MIN);
  double lbeta_small = lgamma(b) - lgamma(a + b), lbeta = lgamma(a) + lbeta_small;
  double factor = a < very_small ? exp(log1p(-x) * b - lbeta_small) : exp(log(x) * a + log1p(-x) * b - lbeta) / a;
  double out = cf * factor;
  if (!fast) out = 1 - out;
  if (res_zero) out = 0;
  if (res_one) out = 1;
  return res_nan ? NAN : out;
}

/* ---- kernels -------------------------------------------------------------------- */

/* Apply f to the elements of the operands broadcast to the result's shape
   (an operand is a scalar, or has the result's rank with dimensions of
   size 1 repeated). */
typedef double (*Fn3)(const double *v, bool wide);

static void map_kernel(Array *const *in, int nin, Array **out, const Type *outt, Fn3 f) {
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  int rank = r->rank;
  int64_t st[3][SHM_MAXRANK], idx[SHM_MAXRANK] = {0}, off[3] = {0, 0, 0};
  for (int k = 0; k < nin; k++) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
      bool b = in[k]->rank == 0 || in[k]->shape[i] == 1;
      st[k][i] = b ? 0 : s;
      if (in[k]->rank) s *= in[k]->shape[i];
    }
  }
  bool wide = r->dt == DT_F64;
  for (int64_t e = 0; e < r->size; e++) {
    double v[3];
    for (int k = 0; k < nin; k++) v[k] = arr_getf(in[k], off[k]);
    arr_setf(r, e, f(v, wide));
    for (int i = rank - 1; i >= 0; i--) {
      idx[i]++;
      for (int k = 0; k < nin; k++) off[k] += st[k][i];
      if (idx[i] < r->shape[i]) break;
      for (int k = 0; k < nin; k++) off[k] -= st[k][i] * idx[i];
      idx[i] = 0;
    }
  }
  out[0] = r;
}

static double f_igamma(const double *v, bool w) { return sp_igamma(v[0], v[1], w); }
static double f_igammac(const double *v, bool w) { return sp_igammac(v[0], v[1], w); }
static double f_igamma_grad_a(const double *v, bool w) { return sp_igamma_grad_a(v[0], v[1], w); }
static double f_random_gamma_grad(const double *v, bool w) { return sp_random_gamma_grad(v[0], v[1], w); }
static double f_zeta(const double *v, bool w) { (void)w; return sp_zeta(v[0], v[1]); }
static double f_bessel_i0e(const double *v, bool w) { (void)w; return sp_bessel_i0e(v[0]); }
static double f_bessel_i1e(const double *v, bool w) { (void)w; return sp_bessel_i1e(v[0]); }
static double f_betainc(const double *v, bool w) { return sp_betainc(v[0], v[1], v[2], w); }

#define SP_KERNEL(name, f)                                                                     \
  void sp_kern_##name(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) { \
    (void)at;                                                                                  \
    map_kernel(in, nin, out, outt, f);                                                         \
  }
SP_KERNEL(igamma, f_igamma)
SP_KERNEL(igammac, f_igammac)
SP_KERNEL(igamma_grad_a, f_igamma_grad_a)
SP_KERNEL(random_gamma_grad, f_random_gamma_grad)
SP_KERNEL(zeta, f_zeta)
SP_KERNEL(bessel_i0e, f_bessel_i0e)
SP_KERNEL(bessel_i1e, f_bessel_i1e)
SP_KERNEL(betainc, f_betainc)
#undef SP_KERNEL
