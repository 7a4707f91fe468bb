/*
** moreprims.c — primitives real JAX programs print that the core set
** lacks (rows of prims.def, "primitives of real programs"):
**
**   erf_inv x                    the inverse of erf, for floats
**   clz x, population_count x    leading zero bits and set bits, integers
**   zeros_like x                 zeros of x's type
**   sharding_constraint[sharding, layout, unconstrained_dims, ...] x
**   mesh_cast[dst_sharding] x
**   device_put[devices, srcs, copy_semantics] x
**                                where an array lives, never its value:
**                                each is the identity on the values
*/
#include <math.h>
#include "moreprims.h"
#include "dtype.h"
#include "ew.h"

/* Keep the parameters written among `keys` for show; the values say
   where arrays live, which changes no value. */
static void keep_params(RuleCtx *cx, const char *const *keys) {
  for (; *keys; keys++) {
    PVal *v = rule_get(cx, *keys);
    if (v) rule_record(cx, *keys, v);
  }
}

static bool identity_rule(RuleCtx *cx, Type *in, Type *out, const char *const *keys) {
  keep_params(cx, keys);
  *out = in[0];
  out->weak = false;
  return true;
}

bool mp_rule_sharding_constraint(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  static const char *const keys[] = {"sharding", "layout", "unconstrained_dims", "resource_env", "context_mesh", NULL};
  (void)nin; (void)at;
  return identity_rule(cx, in, out, keys);
}

bool mp_rule_mesh_cast(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  static const char *const keys[] = {"dst_sharding", NULL};
  (void)nin; (void)at;
  return identity_rule(cx, in, out, keys);
}

bool mp_rule_device_put(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  static const char *const keys[] = {"devices", "srcs", "copy_semantics", NULL};
  (void)nin; (void)at;
  return identity_rule(cx, in, out, keys);
}

void mp_kern_identity(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)at; (void)nin;
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  ew_unary(U_COPY, in[0], r);
  out[0] = r;
}

bool mp_rule_zeros_like(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)cx; (void)nin; (void)at;
  *out = in[0];
  out->weak = in[0].weak;
  return true;
}

void mp_kern_zeros_like(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)at; (void)in; (void)nin;
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  memset(r->data, 0, arr_nbytes(r));
  out[0] = r;
}

/* clz and population_count: integers of any width, signed or not. */
bool mp_rule_bits(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin; (void)at;
  if (!rule_check_kind(cx, &in[0], K_INT)) return false;
  *out = in[0];
  return true;
}

/* The element's bits, as an unsigned number of its width. */
static uint64_t bits_of(const Array *a, int64_t i, int width) {
  uint64_t u = (uint64_t)arr_geti(a, i);
  return width == 64 ? u : u & ((UINT64_C(1) << width) - 1);
}

static void bits_kernel(Array *const *in, Array **out, const Type *outt, bool clz) {
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  int width = 8 * dtype_sizes[r->dt];
  for (int64_t i = 0; i < r->size; i++) {
    uint64_t u = bits_of(in[0], i, width);
    int64_t v = clz ? (u ? __builtin_clzll(u) - (64 - width) : width) : __builtin_popcountll(u);
    arr_seti(r, i, v);
  }
  out[0] = r;
}

void mp_kern_clz(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)at; (void)nin;
  bits_kernel(in, out, outt, true);
}

void mp_kern_population_count(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)at; (void)nin;
  bits_kernel(in, out, outt, false);
}

bool mp_rule_erf_inv(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin; (void)at;
  if (in[0].weak) in[0].dt = DT_F32;
  if (!rule_check_kind(cx, &in[0], K_FLOAT)) return false;
  *out = in[0];
  out->weak = false;
  return true;
}

/* erf_inv(x) in double: Winitzki's closed form (relative error below
   2e-3) refined by Newton's method on erf(y) = x, or, for |x| > 0.5, on
   erfc(y) = 1 - |x|, which keeps its digits as |x| nears 1. */
double mp_erf_inv(double x) {
  if (isnan(x) || x < -1 || x > 1) return NAN;
  if (x == 1 || x == -1) return copysign(INFINITY, x);
  double a = fabs(x), q = 1 - a;   /* exact for a >= 0.5 (Sterbenz) */
  const double k = 0.147, two_over_pi_k = 2 / (M_PI * k), c = 2 / sqrt(M_PI);
  double l = log1p(-a * a), t = two_over_pi_k + l / 2;
  double y = sqrt(sqrt(t * t - l / k) - t);
  for (int it = 0; it < 8; it++) {
    double f = a <= 0.5 ? erf(y) - a : q - erfc(y), d = c * exp(-y * y);
    if (d == 0) break;
    double step = f / d;
    y -= step;
    if (fabs(step) <= 1e-17 * fabs(y)) break;
  }
  return copysign(y, x);
}

void mp_kern_erf_inv(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)at; (void)nin;
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  for (int64_t i = 0; i < r->size; i++) arr_setf(r, i, mp_erf_inv(arr_getf(in[0], i)));
  out[0] = r;
}
