/*
** philox.c — lax.rng_bit_generator as JAX on CPU computes it: XLA's
** Philox 4x32 (10 rounds) bit generator, which XLA's CPU backend runs for
** RNG_DEFAULT (philox.h).
*/
#include <stdio.h>
#include "philox.h"

#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt
#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

/* ---- the generator ----------------------------------------------------------------- */

void philox4x32(uint32_t x[4], uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)x[0] * 0xD2511F53u, p1 = (uint64_t)x[2] * 0xCD9E8D57u;
    uint32_t y0 = (uint32_t)(p1 >> 32) ^ x[1] ^ k0, y2 = (uint32_t)(p0 >> 32) ^ x[3] ^ k1;
    x[0] = y0;
    x[1] = (uint32_t)p1;
    x[2] = y2;
    x[3] = (uint32_t)p0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

/* The words of block i: Philox of the 128-bit counter (high: s0, low: s1)
   plus i, under the key s0.  (JAX's u32[4] key is the u64[2] state
   (s0, s1), little-endian: s0 = key[1]:key[0], s1 = key[3]:key[2].) */
static void block(uint64_t s0, uint64_t s1, uint64_t i, uint32_t w[4]) {
  uint64_t lo = s1 + i, hi = s0 + (lo < s1);
  w[0] = (uint32_t)lo;
  w[1] = (uint32_t)(lo >> 32);
  w[2] = (uint32_t)hi;
  w[3] = (uint32_t)(hi >> 32);
  philox4x32(w, (uint32_t)s0, (uint32_t)(s0 >> 32));
}

void philox_bits(const uint32_t key[4], int width, int64_t first, int64_t n, uint64_t *out) {
  uint64_t s0 = (uint64_t)key[1] << 32 | key[0], s1 = (uint64_t)key[3] << 32 | key[2];
  /* 32 bits and narrower: the four words of each block in turn, each cut
     to the width; 64 bits: two numbers a block, word 0 low, word 1 high */
  int per = width == 64 ? 2 : 4;
  uint64_t mask = width == 64 ? ~UINT64_C(0) : (UINT64_C(1) << width) - 1;
  for (int64_t e = first; e < first + n;) {
    uint32_t w[4];
    int64_t b = e / per;
    block(s0, s1, (uint64_t)b, w);
    for (int j = (int)(e % per); j < per && e < first + n; j++, e++)
      out[e - first] = (width == 64 ? (uint64_t)w[2 * j + 1] << 32 | w[2 * j] : w[j]) & mask;
  }
}

void philox_newkey(const uint32_t key[4], int width, int64_t n, uint32_t newkey[4]) {
  /* the key, and the counter's low word moved past the blocks used (a
     64-bit number takes two words) */
  uint64_t s1 = (uint64_t)key[3] << 32 | key[2];
  uint64_t ns = s1 + (uint64_t)(width == 64 ? (2 * n + 3) / 4 : (n + 3) / 4);
  newkey[0] = key[0];
  newkey[1] = key[1];
  newkey[2] = (uint32_t)ns;
  newkey[3] = (uint32_t)(ns >> 32);
}

/* ---- rule and kernel --------------------------------------------------------------- */

static const char *const algorithm_names[] = {"RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"};

/* The algorithm a parameter value names: RNG_DEFAULT, RNG_THREE_FRY or
   RNG_PHILOX (also RandomAlgorithm.RNG_PHILOX, or the enum's 0 to 2); -1
   for anything else. */
static int algorithm_of(const PVal *v) {
  if (v->k == PV_INT) return v->i >= 0 && v->i <= 2 ? (int)v->i : -1;
  if (v->k != PV_NAME && v->k != PV_STR) return -1;
  int dot = v->s.n;
  while (dot > 0 && v->s.p[dot - 1] != '.') dot--;
  Str last = {v->s.p + dot, v->s.n - dot};
  for (int a = 0; a < 3; a++)
    if (str_eqc(last, algorithm_names[a])) return a;
  return -1;
}

static bool algorithm_param(RuleCtx *cx) {
  PVal *v = rule_get(cx, "algorithm");
  if (!v) return true;
  rule_record(cx, "algorithm", v);
  int a = algorithm_of(pv_unparen(v));
  if (a < 0)
    return rule_param_error(cx, "algorithm", "algorithm must be RNG_DEFAULT, RNG_PHILOX or RNG_THREE_FRY");
  if (a == 1)
    return rule_param_error(cx, "algorithm", "algorithm=RNG_THREE_FRY is not supported: shmapi runs RNG_DEFAULT, "
                            "which is RNG_PHILOX on CPU (jax.random's threefry keys are random_bits)");
  return true;
}

/* rng_bit_generator[shape, dtype=uint32, algorithm=RNG_DEFAULT] key: the
   new key u32[4] and the bits.  Fills l[0] = shape, dtype. */
bool philox_rule(RARGS) {
  (void)nin;
  TyBuf a;
  IntList shp;
  int dt;
  if (in[0].dt != DT_U32 || in[0].rank != 1 || in[0].shape[0] != 4)
    return rule_error(cx, "rng_bit_generator takes a key u32[4], not %s", rule_ty(&a, &in[0]));
  if (!rule_ints(cx, "shape", true, &shp) || !rule_check_shape(cx, "shape", &shp) ||
      !rule_dtype(cx, "dtype", false, DT_U32, &dt) || !algorithm_param(cx))
    return false;
  PVal *sh = rule_get(cx, "out_sharding");
  if (sh) rule_record(cx, "out_sharding", sh);
  if (dt != DT_U8 && dt != DT_U16 && dt != DT_U32 && dt != DT_U64)
    return rule_param_error(cx, "dtype", "rng_bit_generator makes uint8, uint16, uint32 or uint64 bits, not %s",
                            dtype_names[dt]);
  at->l[0] = shp;
  at->dtype = dt;
  out[0] = in[0];
  rule_set_type(&out[1], dt, shp.n, shp.v);
  return true;
}

void philox_kern(KARGS) {
  (void)nin;
  Array *k = arr_new(DT_U32, 1, outt[0].shape);
  out[0] = k;
  Array *r = arr_new((DType)at->dtype, outt[1].rank, outt[1].shape);
  out[1] = r;
  int width = (int)dtype_sizes[at->dtype] * 8;
  uint64_t b[256];
  for (int64_t i = 0; i < r->size; i += 256) {
    int64_t m = r->size - i < 256 ? r->size - i : 256;
    philox_bits(in[0]->data, width, i, m, b);
    for (int64_t j = 0; j < m; j++) arr_setu(r, i + j, b[j]);
  }
  philox_newkey(in[0]->data, width, r->size, k->data);
}
