/*
** rng.c — JAX's threefry2x32 random numbers: the hash, keys, splits, bits,
** uniform and normal values, as jax._src.random computes them.
*/
#include <math.h>
#include <stdio.h>
#include "err.h"
#include "half.h"
#include "rng.h"
#include "state.h"

#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt
#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

/* ---- the hash ---------------------------------------------------------------------- */

static inline uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

void rng_threefry2x32(uint32_t k0, uint32_t k1, uint32_t *x0, uint32_t *x1) {
  static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  uint32_t a = *x0 + ks[0], b = *x1 + ks[1];
  for (int i = 0; i < 5; i++) {
    for (int r = 0; r < 4; r++) {
      a += b;
      b = rotl(b, rot[i & 1][r]) ^ a;
    }
    a += ks[(i + 1) % 3];
    b += ks[(i + 2) % 3] + (uint32_t)(i + 1);
  }
  *x0 = a;
  *x1 = b;
}

/* The default of `partitionable`: JAX's jax_threefry_partitionable. */


void rng_set_partitionable(bool on) { state_cur()->rng_old_counters = !on; }
bool rng_partitionable(void) { return !state_cur()->rng_old_counters; }

/* JAX's threefry_2x32(key, count) on n counters: the flat counters cut in
   two halves (the odd one padded with 0) hashed pairwise, concatenated. */
static void hash_sequence(uint32_t k0, uint32_t k1, const uint32_t *count, int64_t n, uint32_t *out) {
  int64_t h = (n + 1) / 2;
  for (int64_t i = 0; i < h; i++) {
    uint32_t a = count[i], b = i + h < n ? count[i + h] : 0;
    rng_threefry2x32(k0, k1, &a, &b);
    out[i] = a;
    if (i + h < n) out[i + h] = b;
  }
}

/* The two words of random element i: partitionable, the hash of i's two
   32-bit halves. */
static void hash_index(uint32_t k0, uint32_t k1, uint64_t i, uint32_t *w0, uint32_t *w1) {
  *w0 = (uint32_t)(i >> 32);
  *w1 = (uint32_t)i;
  rng_threefry2x32(k0, k1, w0, w1);
}

void rng_bits_raw(uint32_t k0, uint32_t k1, int width, bool part, int64_t n, uint64_t *out) {
  if (part) {
    for (int64_t i = 0; i < n; i++) {
      uint32_t a, b;
      hash_index(k0, k1, (uint64_t)i, &a, &b);
      uint64_t v = width == 64 ? (uint64_t)a << 32 | b : (uint64_t)(a ^ b);
      out[i] = width == 64 ? v : v & ((UINT64_C(1) << width) - 1);
    }
    return;
  }
  /* the original layout: ceil(width n / 32) words from counters 0, 1, ... */
  int64_t words = (width * n + 31) / 32;
  if (words > (int64_t)UINT32_MAX) err_throw("random bits: more than 2^32 words with partitionable=False");
  uint32_t *cnt = mem_alloc(sizeof(uint32_t) * 2 * (size_t)(words ? words : 1)), *bits = cnt + words;
  for (int64_t i = 0; i < words; i++) cnt[i] = (uint32_t)i;
  hash_sequence(k0, k1, cnt, words, bits);
  if (width == 64) {
    for (int64_t i = 0; i < n; i++) out[i] = (uint64_t)bits[i] << 32 | bits[i + n];
  } else {
    int per = 32 / width;   /* little pieces of each word, lowest first */
    for (int64_t i = 0; i < n; i++)
      out[i] = (bits[i / per] >> (width * (i % per))) & ((UINT64_C(1) << width) - 1);
  }
  mem_free(cnt);
}

void rng_split_raw(uint32_t k0, uint32_t k1, bool part, int64_t n, uint32_t *out) {
  if (part) {
    for (int64_t i = 0; i < n; i++) hash_index(k0, k1, (uint64_t)i, &out[2 * i], &out[2 * i + 1]);
    return;
  }
  if (2 * n > (int64_t)UINT32_MAX) err_throw("random_split: more than 2^31 keys with partitionable=False");
  uint32_t *cnt = mem_alloc(sizeof(uint32_t) * (size_t)(2 * n + 1));
  for (int64_t i = 0; i < 2 * n; i++) cnt[i] = (uint32_t)i;
  hash_sequence(k0, k1, cnt, 2 * n, out);
  mem_free(cnt);
}

/* ---- rules ------------------------------------------------------------------------- */

/* A key operand: u32[2] (a raw key, jax.random.PRNGKey's), or with
   `typed` a typed key array key<fry>[...] of any shape; otherwise only the
   scalar key<fry>[]. */
static bool key_operand(RuleCtx *cx, const Type *t, bool typed) {
  TyBuf a;
  if (t->dt == DT_KEY_FRY && (typed || t->rank == 0)) return true;
  if (t->dt != DT_U32 || t->rank != 1 || t->shape[0] != 2)
    return rule_error(cx, "%s takes a key, u32[2] or key<fry>[%s] (random_key or random_seed makes one), not %s",
                      rule_prim_name(cx), typed ? "..." : "", rule_ty(&a, t));
  return true;
}

/* shape and partitionable, for every sampler: l[0] = shape, b[0] =
   partitionable (by default jax_threefry_partitionable's, see
   rng_set_partitionable). */
static bool sampler_params(RuleCtx *cx, Type *in, Attrs *at, bool typed) {
  IntList shp = {0, NULL};
  bool part;
  if (!key_operand(cx, &in[0], typed) || !rule_ints(cx, "shape", false, &shp) || !rule_check_shape(cx, "shape", &shp) ||
      !rule_bool(cx, "partitionable", rng_partitionable(), &part))
    return false;
  at->l[0] = shp;
  at->b[0] = part;
  return true;
}

/* The result shape of a primitive over typed keys: the keys' shape, then
   `shp` (a raw key u32[2] counts as one key: shp alone).  False after an
   error (too many dimensions). */
static bool keys_then(RuleCtx *cx, const Type *key, const IntList *shp, int dt, Type *out) {
  int kr = key->dt == DT_KEY_FRY ? key->rank : 0;
  int64_t dims[SHM_MAXRANK];
  if (!rule_check_rank(cx, kr + shp->n)) return false;
  for (int d = 0; d < kr; d++) dims[d] = key->shape[d];
  for (int d = 0; d < shp->n; d++) dims[kr + d] = shp->v[d];
  rule_set_type(out, dt, kr + shp->n, dims);
  return true;
}

/* random_key[seed]: u32[2].  Fills i[0] = seed. */
bool rng_rule_key(RARGS) {
  (void)in; (void)nin;
  if (!rule_int(cx, "seed", true, 0, &at->i[0])) return false;
  int64_t two = 2;
  rule_set_type(out, DT_U32, 1, &two);
  return true;
}

/* How many keys random_split makes per key: shape=(...) (JAX since 0.4.16),
   count=N (older JAX) or num=N (shm's; default 2).  l[0] = the shape. */
static bool split_shape(RuleCtx *cx, Attrs *at) {
  IntList shp = {0, NULL};
  const char *which = rule_has(cx, "shape") ? "shape" : rule_has(cx, "count") ? "count" : "num";
  if ((rule_has(cx, "shape") + rule_has(cx, "count") + rule_has(cx, "num")) > 1)
    return rule_error(cx, "random_split takes one of shape=(...), count=N or num=N, not two");
  if (which[0] == 's') {
    if (!rule_ints(cx, "shape", true, &shp) || !rule_check_shape(cx, "shape", &shp)) return false;
  } else {
    int64_t n;
    if (!rule_int(cx, which, false, 2, &n)) return false;
    if (n < 0 || n > ((int64_t)1 << 40))
      return rule_param_error(cx, which, "random_split %s must be between 0 and 2^40", which);
    shp.n = 1;
    shp.v = rule_alloc_ints(cx, 1);
    shp.v[0] = n;
  }
  at->l[0] = shp;
  return true;
}

/* random_split[shape | count | num] key: a raw key u32[2] gives u32[*shape, 2];
   typed keys key<fry>[K] give key<fry>[*K, *shape].  Fills l[0] = shape,
   i[0] = keys per key, b[0] = partitionable. */
bool rng_rule_split(RARGS) {
  (void)nin;
  bool part;
  if (!key_operand(cx, &in[0], true) || !split_shape(cx, at) ||
      !rule_bool(cx, "partitionable", rng_partitionable(), &part))
    return false;
  at->b[0] = part;
  at->i[0] = 1;
  for (int d = 0; d < at->l[0].n; d++) at->i[0] *= at->l[0].v[d];
  if (in[0].dt == DT_KEY_FRY) return keys_then(cx, &in[0], &at->l[0], DT_KEY_FRY, out);
  IntList shp2 = {at->l[0].n + 1, rule_alloc_ints(cx, at->l[0].n + 1)};
  memcpy(shp2.v, at->l[0].v, sizeof(int64_t) * (size_t)at->l[0].n);
  shp2.v[at->l[0].n] = 2;
  return keys_then(cx, &in[0], &shp2, DT_U32, out);
}

/* random_bits[shape, bit_width=32] keys: u8/u16/u32/u64 of the keys' shape
   then `shape`.  Fills l[0], b[0], i[0] = bit_width. */
bool rng_rule_bits(RARGS) {
  (void)nin;
  if (!sampler_params(cx, in, at, true) || !rule_int(cx, "bit_width", false, 32, &at->i[0])) return false;
  int64_t w = at->i[0];
  if (w != 8 && w != 16 && w != 32 && w != 64)
    return rule_param_error(cx, "bit_width", "random_bits bit_width must be 8, 16, 32 or 64, not %lld", (long long)w);
  return keys_then(cx, &in[0], &at->l[0], w == 8 ? DT_U8 : w == 16 ? DT_U16 : w == 32 ? DT_U32 : DT_U64, out);
}

/* random_uniform[shape, dtype=f32, minval=0.0, maxval=1.0] key.  Fills
   l[0], b[0], dtype, f[0] = minval, f[1] = maxval. */
bool rng_rule_uniform(RARGS) {
  (void)nin;
  int dt;
  if (!sampler_params(cx, in, at, false) || !rule_dtype(cx, "dtype", false, DT_F32, &dt) ||
      !rule_float(cx, "minval", false, 0.0, &at->f[0]) || !rule_float(cx, "maxval", false, 1.0, &at->f[1]))
    return false;
  if (!dtype_is_float((DType)dt))
    return rule_param_error(cx, "dtype", "random_uniform makes floats (bf16, f16, f32, f64), not %s", dtype_names[dt]);
  at->dtype = dt;
  rule_set_type(out, dt, at->l[0].n, at->l[0].v);
  return true;
}

/* random_normal[shape, dtype=f32] key.  Fills l[0], b[0], dtype. */
bool rng_rule_normal(RARGS) {
  (void)nin;
  int dt;
  if (!sampler_params(cx, in, at, false) || !rule_dtype(cx, "dtype", false, DT_F32, &dt)) return false;
  if (dt != DT_F32 && dt != DT_BF16 && dt != DT_F16)
    return rule_param_error(cx, "dtype", "random_normal makes f32, bf16 or f16 (JAX's 32-bit erf_inv), not %s",
                            dtype_names[dt]);
  at->dtype = dt;
  rule_set_type(out, dt, at->l[0].n, at->l[0].v);
  return true;
}

/* threefry2x32 k1 k2 x1 x2: u32 operands of one shape (scalars broadcast);
   two results of that shape. */
bool rng_rule_threefry(RARGS) {
  (void)nin; (void)at;
  static const int idx[4] = {0, 1, 2, 3};
  TyBuf a;
  for (int k = 0; k < 4; k++)
    if (in[k].dt != DT_U32 && !in[k].weak)
      return rule_error(cx, "threefry2x32 takes u32 operands, not %s", rule_ty(&a, &in[k]));
  for (int k = 0; k < 4; k++) in[k].dt = DT_U32;
  if (!rule_unify_shapes(cx, in, idx, 4, &out[0])) return false;
  out[0].dt = DT_U32;
  out[1] = out[0];
  return true;
}

/* ---- kernels ----------------------------------------------------------------------- */

static Array *new_arr(const Type *t) { return arr_new((DType)t->dt, t->rank, t->shape); }

/* threefry_seed: the seed's high and low 32-bit words (a seed of 32 bits or
   less, negative ones too, has 0 for its high word). */
void rng_kern_key(KARGS) {
  (void)in; (void)nin;
  Array *r = new_arr(&outt[0]);
  int64_t s = at->i[0];
  bool small = s >= INT32_MIN && s <= INT32_MAX;
  ((uint32_t *)r->data)[0] = small ? 0 : (uint32_t)((uint64_t)s >> 32);
  ((uint32_t *)r->data)[1] = (uint32_t)s;
  out[0] = r;
}

/* The number of keys in a key operand: a raw u32[2] is one. */
static int64_t nkeys(const Array *k) { return k->dt == DT_KEY_FRY ? k->size : 1; }

void rng_kern_split(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  int64_t n = at->i[0], nk = nkeys(in[0]);
  const uint32_t *k = in[0]->data;
  for (int64_t j = 0; j < nk; j++) rng_split_raw(k[2 * j], k[2 * j + 1], at->b[0], n, (uint32_t *)r->data + 2 * n * j);
  out[0] = r;
}

static void release(void *p) { mem_free(p); }

/* The random bits of a sampler's result, as uint64 (mem_alloc'ed): n per
   key, key after key. */
static uint64_t *bits_of(const Array *key, int width, bool part, int64_t n) {
  int64_t nk = nkeys(key);
  uint64_t *b = mem_alloc(sizeof(uint64_t) * (size_t)(n * nk > 0 ? n * nk : 1));
  err_defer(release, b);
  const uint32_t *k = key->data;
  for (int64_t j = 0; j < nk; j++) rng_bits_raw(k[2 * j], k[2 * j + 1], width, part, n, b + n * j);
  err_undefer(b);
  return b;
}

void rng_kern_bits(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  int64_t n = 1;
  for (int d = 0; d < at->l[0].n; d++) n *= at->l[0].v[d];
  uint64_t *b = bits_of(in[0], (int)at->i[0], at->b[0], n);
  for (int64_t i = 0; i < r->size; i++) arr_setu(r, i, b[i]);
  mem_free(b);
  out[0] = r;
}

/* One uniform value of dtype dt from its random bits, as _uniform makes it:
   the top nmant bits as the fraction of a float in [1, 2), minus 1, scaled
   to [minval, maxval) and kept above minval, each step in dt's precision
   (the 16-bit floats rounded after each, as XLA computes them). */
static double round_to(DType dt, double x) {
  switch (dt) {
  case DT_F32: return (float)x;
  case DT_BF16: return bf16_to_f32(bf16_from_f32((float)x));
  case DT_F16: return f16_to_f32(f16_from_f32((float)x));
  default: return x;
  }
}

static double uniform_of(DType dt, uint64_t bits, double lo, double hi) {
  double f;
  if (dt == DT_F64) {
    uint64_t u = bits >> 12 | UINT64_C(0x3ff0000000000000);
    memcpy(&f, &u, sizeof f);
  } else if (dt == DT_F32) {
    uint32_t u = (uint32_t)(bits >> 9) | 0x3f800000u;
    float g;
    memcpy(&g, &u, sizeof g);
    f = g;
  } else if (dt == DT_F16) {
    f = f16_to_f32((uint16_t)((bits >> 6) | 0x3c00u));
  } else {
    /* bf16: 8 random bits widened to 16, the top 7 kept */
    f = bf16_to_f32((uint16_t)((bits >> 1) | 0x3f80u));
  }
  lo = round_to(dt, lo);
  hi = round_to(dt, hi);
  double v = round_to(dt, f - 1.0);
  double span = round_to(dt, hi - lo);
  v = round_to(dt, round_to(dt, v * span) + lo);
  return v > lo || isnan(v) ? v : lo;
}

static int rng_width(DType dt) { return dt == DT_F64 ? 64 : dt == DT_F32 ? 32 : dt == DT_F16 ? 16 : 8; }

void rng_kern_uniform(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  DType dt = (DType)at->dtype;
  uint64_t *b = bits_of(in[0], rng_width(dt), at->b[0], r->size);
  for (int64_t i = 0; i < r->size; i++) arr_setf(r, i, uniform_of(dt, b[i], at->f[0], at->f[1]));
  mem_free(b);
  out[0] = r;
}

/* XLA's single-precision erf_inv (Giles, "Approximating the erfinv
   function", 2010), in f32 arithmetic. */
static float erfinv_f32(float x) {
  float w = -logf((1.0f - x) * (1.0f + x)), p;
  if (w < 5.0f) {
    w = w - 2.5f;
    p = 2.81022636e-08f;
    p = 3.43273939e-07f + p * w;
    p = -3.5233877e-06f + p * w;
    p = -4.39150654e-06f + p * w;
    p = 0.00021858087f + p * w;
    p = -0.00125372503f + p * w;
    p = -0.00417768164f + p * w;
    p = 0.246640727f + p * w;
    p = 1.50140941f + p * w;
  } else {
    w = sqrtf(w) - 3.0f;
    p = -0.000200214257f;
    p = 0.000100950558f + p * w;
    p = 0.00134934322f + p * w;
    p = -0.00367342844f + p * w;
    p = 0.00573950773f + p * w;
    p = -0.0076224613f + p * w;
    p = 0.00943887047f + p * w;
    p = 1.00167406f + p * w;
    p = 2.83297682f + p * w;
  }
  if (fabsf(x) == 1.0f) return copysignf(INFINITY, x);
  return p * x;
}

/* _normal_real: sqrt(2) erf_inv(u), u uniform in (-1, 1) of the dtype. */
void rng_kern_normal(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  DType dt = (DType)at->dtype;
  uint64_t *b = bits_of(in[0], rng_width(dt), at->b[0], r->size);
  double lo = dt == DT_F32 ? (double)nextafterf(-1.0f, 0.0f) : round_to(dt, -1.0 + (dt == DT_BF16 ? 0x1p-8 : 0x1p-11));
  double sq2 = round_to(dt, sqrt(2.0));
  for (int64_t i = 0; i < r->size; i++) {
    double u = uniform_of(dt, b[i], lo, 1.0);
    float e = (float)round_to(dt, erfinv_f32((float)u));
    arr_setf(r, i, round_to(dt, sq2 * e));
  }
  mem_free(b);
  out[0] = r;
}

void rng_kern_threefry(KARGS) {
  (void)at; (void)nin;
  Array *r0 = new_arr(&outt[0]), *r1 = new_arr(&outt[1]);
  for (int64_t i = 0; i < r0->size; i++) {
    const uint32_t *p[4];
    for (int k = 0; k < 4; k++) p[k] = (const uint32_t *)in[k]->data + (in[k]->rank ? i : 0);
    uint32_t a = *p[2], b = *p[3];
    rng_threefry2x32(*p[0], *p[1], &a, &b);
    ((uint32_t *)r0->data)[i] = a;
    ((uint32_t *)r1->data)[i] = b;
  }
  out[0] = r0;
  out[1] = r1;
}
