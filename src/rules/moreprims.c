/*
** moreprims.c — primitives real JAX programs print that the core set
** lacks (rows of prims.def, "primitives of real programs"):
**
**   erf_inv x                    the inverse of erf, for floats
**   clz x, population_count x    leading zero bits and set bits, integers
**   zeros_like x                 zeros of x's type
**   reduce_precision[exponent_bits, mantissa_bits] x
**                                x rounded as XLA rounds to a narrower float
**   sharding_constraint[sharding, layout, unconstrained_dims, ...] x
**   mesh_cast[dst_sharding] x
**   reshard[dst_sharding, concrete_mesh] x
**   device_put[devices, srcs, copy_semantics] x
**   layout_constraint[layout] x  where an array lives or how it is laid
**                                out, never its value: each is the
**                                identity on the values
**   name[name] x                 jax.ad_checkpoint.checkpoint_name: a
**                                name for remat policies; the identity
**   tile[reps] x                 x repeated reps[d] times along each d
**   split[axis, sizes] x         lax.split: x cut along axis into
**                                len(sizes) pieces, one result each
**   mulhi x y                    the high half of the double-width product
**                                of two integers (lax.mulhi)
**   platform_index[platforms]    lax.platform_dependent's branch: the index
**                                of the tuple naming "cpu", else of the
**                                default (None), as JAX lowers it for CPU
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

/* reshard[dst_sharding, concrete_mesh] x: the explicit-sharding move
   (jax.reshard, jax.sharding.reshard); the value is unchanged. */
bool mp_rule_reshard(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  static const char *const keys[] = {"dst_sharding", "concrete_mesh", NULL};
  (void)nin; (void)at;
  return identity_rule(cx, in, out, keys);
}

bool mp_rule_device_put(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  static const char *const keys[] = {"devices", "srcs", "copy_semantics", NULL};
  (void)nin; (void)at;
  return identity_rule(cx, in, out, keys);
}

bool mp_rule_layout_constraint(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  static const char *const keys[] = {"layout", NULL};
  (void)nin; (void)at;
  return identity_rule(cx, in, out, keys);
}

/* name[name=...]: the name is required, as JAX's checkpoint_name binds it. */
bool mp_rule_name(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  static const char *const keys[] = {"name", NULL};
  (void)nin; (void)at;
  if (!rule_has(cx, "name")) return rule_missing(cx, "name");
  return identity_rule(cx, in, out, keys);
}

/* tile[reps] x: one non-negative count per dimension of x; the result's
   dimension d is x's times reps[d].  Fills l[0] = reps. */
bool mp_rule_tile(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  IntList reps = {0, NULL};
  TyBuf a;
  (void)nin;
  if (!rule_ints(cx, "reps", true, &reps)) return false;
  if (reps.n != in[0].rank)
    return rule_param_error(cx, "reps", "tile needs one count in reps per dimension of %s, got %d",
                            rule_ty(&a, &in[0]), reps.n);
  int64_t shape[SHM_MAXRANK];
  for (int d = 0; d < reps.n; d++) {
    if (reps.v[d] < 0) return rule_param_error(cx, "reps", "tile's reps must not be negative, got %lld", (long long)reps.v[d]);
    if (reps.v[d] && in[0].shape[d] > INT64_MAX / 16 / reps.v[d])
      return rule_param_error(cx, "reps", "tile would make an array too large");
    shape[d] = in[0].shape[d] * reps.v[d];
  }
  IntList sl = {reps.n, shape};
  if (!rule_check_shape(cx, "reps", &sl)) return false;
  *out = in[0];
  out->weak = false;
  for (int d = 0; d < reps.n; d++) out->shape[d] = shape[d];
  at->l[0] = reps;
  return true;
}

/* tile: one strided copy of x per tile, at the tile's offset. */
void mp_kern_tile(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)nin;
  const Array *a = in[0];
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  out[0] = r;
  if (!r->size) return;
  size_t es = dtype_sizes[r->dt];
  int rank = a->rank;
  int64_t sst[SHM_MAXRANK], dst[SHM_MAXRANK], pos[SHM_MAXRANK] = {0};
  arr_byte_strides(rank, a->shape, es, sst);
  arr_byte_strides(rank, r->shape, es, dst);
  int64_t ntiles = 1;
  for (int d = 0; d < rank; d++) ntiles *= at->l[0].v[d];
  for (int64_t t = 0; t < ntiles; t++) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off += pos[d] * a->shape[d] * dst[d];
    arr_copy_strided((char *)r->data + off, dst, a->data, sst, rank, a->shape, es);
    for (int d = rank - 1; d >= 0; d--) {       /* the next tile, row-major */
      if (++pos[d] < at->l[0].v[d]) break;
      pos[d] = 0;
    }
  }
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

/* reduce_precision[exponent_bits=E, mantissa_bits=M]: floats; E >= 1,
   M >= 0.  Fills i[0] = E, i[1] = M. */
bool mp_rule_reduce_precision(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  int64_t e, m;
  if (!rule_int(cx, "exponent_bits", true, 0, &e) || !rule_int(cx, "mantissa_bits", true, 0, &m)) return false;
  if (in[0].weak) in[0].dt = DT_F32;
  if (!rule_check_kind(cx, &in[0], K_FLOAT)) return false;
  if (e < 1) return rule_param_error(cx, "exponent_bits", "reduce_precision exponent_bits must be at least 1, got %lld",
                                     (long long)e);
  if (m < 0) return rule_param_error(cx, "mantissa_bits", "reduce_precision mantissa_bits must be at least 0, got %lld",
                                     (long long)m);
  at->i[0] = e;
  at->i[1] = m;
  *out = in[0];
  out->weak = false;
  return true;
}

/* The exponent and mantissa widths of a float dtype. */
static void float_layout(int dt, int *eb, int *mb) {
  switch (dt) {
  case DT_F16: *eb = 5; *mb = 10; break;
  case DT_BF16: *eb = 8; *mb = 7; break;
  case DT_F64: *eb = 11; *mb = 52; break;
  default: *eb = 8; *mb = 23; break;
  }
}

/* XLA's ReducePrecision on the bits u of a float of width n (elemental IR
   emitter): round the mantissa to M bits, to nearest even; then an
   exponent beyond E bits' range overflows to a signed infinity, one at or
   below its smallest normal exponent to a signed zero; NaN stays NaN when
   M > 0. */
uint64_t mp_reduce_precision_bits(uint64_t u, int n, int eb, int mb, int E, int M) {
  uint64_t x = u, one = 1;
  uint64_t emask = ((one << eb) - 1) << mb, mmask = (one << mb) - 1, sign = one << (n - 1);
  bool nan = (u & emask) == emask && (u & mmask);
  if (M < mb) {
    uint64_t last = one << (mb - M);
    uint64_t bias = ((last >> 1) - 1) + ((x & last) >> (mb - M));
    x = (x + bias) & ~(last - 1);
  }
  if (E < eb) {
    int64_t src_bias = ((int64_t)1 << (eb - 1)) - 1, red_bias = ((int64_t)1 << (E - 1)) - 1;
    uint64_t xe = x & emask;
    uint64_t maxe = (uint64_t)(src_bias + red_bias) << mb, mine = (uint64_t)(src_bias - red_bias) << mb;
    if (xe > maxe) x = (x & sign) | emask;
    else if (xe <= mine) x = x & sign;
  }
  if (n < 64) x &= (one << n) - 1;
  return nan && M > 0 ? u : x;
}

void mp_kern_reduce_precision(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)nin;
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  int eb, mb, w = dtype_sizes[r->dt];
  float_layout(r->dt, &eb, &mb);
  const unsigned char *src = in[0]->data;
  unsigned char *dst = r->data;
  for (int64_t i = 0; i < r->size; i++) {
    uint64_t u = 0;
    memcpy(&u, src + i * w, (size_t)w);   /* little-endian: the low bytes */
    u = mp_reduce_precision_bits(u, 8 * w, eb, mb, (int)at->i[0], (int)at->i[1]);
    memcpy(dst + i * w, &u, (size_t)w);
  }
  out[0] = r;
}

/* split[axis=0, sizes]: any operand of rank >= 1; sizes nonnegative and
   summing to the axis' size (JAX's _split_shape_rule); one result per
   size, the operand's shape with that size along the axis.  Fills
   i[0] = axis, l[0] = sizes. */
bool mp_rule_split(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  int64_t axis, sum = 0;
  IntList sz = {0, NULL};
  TyBuf a;
  LsBuf b;
  if (!rule_int(cx, "axis", false, 0, &axis) || !rule_ints(cx, "sizes", true, &sz)) return false;
  rule_axis_index(cx, "axis", &axis, in[0].rank);       /* negative: from the end */
  if (axis < 0 || axis >= in[0].rank)
    return rule_param_error(cx, "axis", "split axis %lld out of range for %s", (long long)axis, rule_ty(&a, &in[0]));
  for (int j = 0; j < sz.n; j++) {
    if (sz.v[j] < 0) return rule_param_error(cx, "sizes", "sizes passed to split must be nonnegative, got %s", rule_ls(&b, &sz));
    sum += sz.v[j];
  }
  if (sum != in[0].shape[axis])
    return rule_param_error(cx, "sizes", "sum of sizes %lld must be equal to dimension %lld of the operand %s",
                            (long long)sum, (long long)axis, rule_ty(&a, &in[0]));
  for (int j = 0; j < sz.n; j++) {
    out[j] = in[0];
    out[j].weak = false;
    out[j].shape[axis] = sz.v[j];
  }
  at->i[0] = axis;
  at->l[0] = sz;
  return true;
}

/* split: each result a strided copy of its slab of the operand. */
void mp_kern_split(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)nin;
  const Array *x = in[0];
  int ax = (int)at->i[0];
  size_t es = dtype_sizes[x->dt];
  int64_t sst[SHM_MAXRANK], dst[SHM_MAXRANK], pos = 0;
  arr_byte_strides(x->rank, x->shape, es, sst);
  for (int j = 0; j < at->l[0].n; j++) {
    Array *r = arr_new((DType)outt[j].dt, outt[j].rank, outt[j].shape);
    out[j] = r;
    arr_byte_strides(r->rank, r->shape, es, dst);
    if (r->size) arr_copy_strided(r->data, dst, (const char *)x->data + pos * sst[ax], sst, r->rank, r->shape, es);
    pos += r->shape[ax];
  }
}

/* mulhi: two integers of one dtype (a weak literal takes the other's). */
bool mp_rule_mulhi(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  static const int idx[2] = {0, 1};
  int dt = 0;
  (void)nin; (void)at;
  if (!rule_unify_dtypes(cx, in, idx, 2, &dt)) return false;
  if (!rule_check_kind(cx, &in[0], K_INT)) return false;
  if (!rule_unify_shapes(cx, in, idx, 2, out)) return false;
  out->dt = (uint8_t)dt;
  out->weak = false;
  return true;
}

/* The high 64 bits of the 128-bit product of two unsigned 64-bit numbers,
   by 32-bit halves. */
static uint64_t umulhi64(uint64_t a, uint64_t b) {
  uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
  uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
  uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
  return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

int64_t mp_mulhi(int64_t a, int64_t b, int bits, bool is_signed) {
  if (bits < 64) {
    /* the full product fits in 64 bits */
    if (is_signed) return (int64_t)((a * b) >> bits);   /* arithmetic shift (gcc, clang) */
    return (int64_t)(((uint64_t)a * (uint64_t)b) >> bits);
  }
  uint64_t h = umulhi64((uint64_t)a, (uint64_t)b);
  if (is_signed) {   /* the signed product's high half: subtract b when a < 0, a when b < 0 */
    if (a < 0) h -= (uint64_t)b;
    if (b < 0) h -= (uint64_t)a;
  }
  return (int64_t)h;
}

void mp_kern_mulhi(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)at; (void)nin;
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  int bits = 8 * dtype_sizes[r->dt];
  bool sgn = !dtype_is_unsigned((DType)r->dt);
  uint64_t mask = bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
  for (int64_t i = 0; i < r->size; i++) {
    int64_t a = arr_geti(in[0], in[0]->rank ? i : 0), b = arr_geti(in[1], in[1]->rank ? i : 0);
    if (!sgn) {
      a = (int64_t)((uint64_t)a & mask);
      b = (int64_t)((uint64_t)b & mask);
    }
    arr_seti(r, i, mp_mulhi(a, b, bits, sgn));
  }
  out[0] = r;
}

/* platform_index[platforms=(("cpu",), ("cuda", "rocm"), None)]: an i32
   scalar, the index of the entry naming "cpu", else of the default entry
   (None; JAX before 0.4.36 wrote has_default=True and left the default
   out: its index is then the number of entries).  Fills i[0]. */
bool mp_rule_platform_index(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)in; (void)nin;
  PVal *v = pv_unparen(rule_get(cx, "platforms"));
  bool has_default = false;
  if (!v) return rule_error(cx, "platform_index requires the parameter 'platforms'");
  if (rule_has(cx, "has_default") && !rule_bool(cx, "has_default", false, &has_default)) return false;
  if (v->k != PV_TUPLE && v->k != PV_LIST)
    return rule_param_error(cx, "platforms", "platform_index platforms must be a tuple of tuples of platform names");
  rule_record(cx, "platforms", v);
  int64_t cpu = -1, dflt = has_default ? v->n : -1;
  for (int i = 0; i < v->n; i++) {
    PVal *e = pv_unparen(v->items[i]);
    if (e->k == PV_NONE) { dflt = i; continue; }
    bool one = e->k == PV_STR || e->k == PV_NAME;
    if (!one && e->k != PV_TUPLE && e->k != PV_LIST)
      return rule_param_error(cx, "platforms", "platform_index platforms must be a tuple of tuples of platform names");
    for (int j = 0; j < (one ? 1 : e->n); j++) {
      PVal *p = one ? e : pv_unparen(e->items[j]);
      if ((p->k == PV_STR || p->k == PV_NAME) && str_eqc(p->s, "cpu") && cpu < 0) cpu = i;
    }
  }
  if (cpu < 0 && dflt < 0)
    return rule_param_error(cx, "platforms", "platform_index has no branch for cpu (shmapi runs as JAX on CPU) "
                            "and no default branch");
  at->i[0] = cpu >= 0 ? cpu : dflt;
  rule_set_type(out, DT_I32, 0, NULL);
  return true;
}

void mp_kern_platform_index(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)in; (void)nin;
  Array *r = arr_new((DType)outt[0].dt, 0, NULL);
  arr_seti(r, 0, at->i[0]);
  out[0] = r;
}
