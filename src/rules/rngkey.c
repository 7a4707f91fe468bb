/*
** rngkey.c — JAX's typed PRNG keys (key<fry>): the primitives that make,
** unwrap and derive them, and the choice of counter layout a pasted jaxpr
** was printed under (rngkey.h).
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include "err.h"
#include "rng.h"
#include "rngkey.h"
#include "diag.h"
#include <string.h>

#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt
#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

/* ---- the impl parameter ------------------------------------------------------------ */

/* impl=fry (JAX prints the implementation's tag; its name threefry2x32 is
   taken too).  JAX's other implementations are named and refused. */
static bool impl_param(RuleCtx *cx) {
  PVal *v = rule_get(cx, "impl");
  if (!v) return true;
  rule_record(cx, "impl", v);
  PVal *u = pv_unparen(v);
  if (u->k != PV_NAME && u->k != PV_STR)
    return rule_param_error(cx, "impl", "impl must name a PRNG implementation: fry (threefry2x32)");
  if (str_eqc(u->s, "fry") || str_eqc(u->s, "threefry2x32")) return true;
  if (str_eqc(u->s, "rbg") || str_eqc(u->s, "urbg") || str_eqc(u->s, "unsafe_rbg"))
    return rule_param_error(cx, "impl", "impl=%.*s (JAX's rbg keys, u32[4] for rng_bit_generator) is not supported: "
                            "shm's typed keys are threefry's, impl=fry", u->s.n, u->s.p);
  return rule_param_error(cx, "impl", "unknown PRNG implementation '%.*s' (JAX's are fry, rbg and urbg; shm runs fry)",
                          u->s.n, u->s.p);
}

/* A typed key operand: key<fry>[...]. */
static bool typed_key(RuleCtx *cx, const Type *t) {
  TyBuf a;
  if (t->dt == DT_KEY_FRY) return true;
  return rule_error(cx, "%s takes typed keys, key<fry>[...] (random_seed or random_wrap makes them), not %s%s",
                    rule_prim_name(cx), rule_ty(&a, t),
                    t->dt == DT_U32 && t->rank && t->shape[t->rank - 1] == 2 ? " (random_wrap[impl=fry] wraps raw keys)"
                                                                              : "");
}

/* ---- rules ------------------------------------------------------------------------- */

/* random_seed[impl=fry] seeds: one key per integer seed, key<fry>[seeds' shape]. */
bool rngk_rule_seed(RARGS) {
  (void)nin; (void)at;
  TyBuf a;
  if (!impl_param(cx)) return false;
  if (in[0].weak && dtype_is_int((DType)in[0].dt)) in[0].dt = DT_I32;
  if (!dtype_is_int((DType)in[0].dt))
    return rule_error(cx, "random_seed takes integer seeds, not %s", rule_ty(&a, &in[0]));
  rule_set_type(out, DT_KEY_FRY, in[0].rank, in[0].shape);
  return true;
}

/* random_wrap[impl=fry] u32[..., 2]: the keys whose data it is. */
bool rngk_rule_wrap(RARGS) {
  (void)nin; (void)at;
  TyBuf a;
  if (!impl_param(cx)) return false;
  if (in[0].dt != DT_U32 || in[0].rank < 1 || in[0].shape[in[0].rank - 1] != 2)
    return rule_error(cx, "random_wrap[impl=fry] takes key data u32[..., 2] (a last dimension of 2), not %s",
                      rule_ty(&a, &in[0]));
  rule_set_type(out, DT_KEY_FRY, in[0].rank - 1, in[0].shape);
  return true;
}

/* random_unwrap keys: their data, u32[keys' shape, 2]. */
bool rngk_rule_unwrap(RARGS) {
  (void)nin; (void)at;
  if (!typed_key(cx, &in[0]) || !rule_check_rank(cx, in[0].rank + 1)) return false;
  int64_t shp[SHM_MAXRANK];
  memcpy(shp, in[0].shape, sizeof(int64_t) * in[0].rank);
  shp[in[0].rank] = 2;
  rule_set_type(out, DT_U32, in[0].rank + 1, shp);
  return true;
}

/* random_clone keys: the same keys. */
bool rngk_rule_clone(RARGS) {
  (void)nin; (void)at;
  if (!typed_key(cx, &in[0])) return false;
  rule_set_type(out, DT_KEY_FRY, in[0].rank, in[0].shape);
  return true;
}

/* random_fold_in keys msgs: integer messages (taken as uint32, as
   jax.random.fold_in does), broadcast against the keys as lax broadcasts. */
bool rngk_rule_fold_in(RARGS) {
  (void)nin; (void)at;
  static const int idx[2] = {0, 1};
  TyBuf a;
  if (!typed_key(cx, &in[0])) return false;
  if (in[1].weak && dtype_is_int((DType)in[1].dt)) in[1].dt = DT_U32;
  if (!dtype_is_int((DType)in[1].dt))
    return rule_error(cx, "random_fold_in takes integer data to fold in, not %s", rule_ty(&a, &in[1]));
  if (!rule_bcast_shapes(cx, in, idx, 2, out)) return false;
  out->dt = DT_KEY_FRY;
  return true;
}

/* ---- kernels ----------------------------------------------------------------------- */

static Array *new_arr(const Type *t) { return arr_new((DType)t->dt, t->rank, t->shape); }

/* threefry_seed: the high 32 bits of a 64-bit seed (0 for narrower ones,
   as a logical shift by 32 gives) and its low 32 bits. */
void rngk_kern_seed(KARGS) {
  (void)at; (void)nin;
  Array *r = new_arr(&outt[0]);
  uint32_t *o = r->data;
  bool wide = dtype_sizes[in[0]->dt] == 8;
  for (int64_t i = 0; i < r->size; i++) {
    uint64_t s = dtype_is_unsigned((DType)in[0]->dt) ? arr_getu(in[0], i) : (uint64_t)arr_geti(in[0], i);
    o[2 * i] = wide ? (uint32_t)(s >> 32) : 0;
    o[2 * i + 1] = (uint32_t)s;
  }
  out[0] = r;
}

/* random_wrap, random_unwrap, random_clone: the same words, retyped. */
void rngk_kern_same(KARGS) {
  (void)at; (void)nin;
  Array *r = new_arr(&outt[0]);
  memcpy(r->data, in[0]->data, (size_t)r->size * dtype_sizes[r->dt]);
  out[0] = r;
}

/* The index into an operand of the broadcast element i of the result. */
static int64_t bcast_index(const Array *a, const Type *t, int64_t i) {
  if (a->rank == 0) return 0;
  int64_t k = 0, stride = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    int64_t c = i % t->shape[d];
    i /= t->shape[d];
    if (a->shape[d] != 1) k += c * stride;
    stride *= a->shape[d];
  }
  return k;
}

/* threefry_fold_in: the hash of (0, data) under the key. */
void rngk_kern_fold_in(KARGS) {
  (void)at; (void)nin;
  Array *r = new_arr(&outt[0]);
  const uint32_t *k = in[0]->data;
  uint32_t *o = r->data;
  for (int64_t i = 0; i < r->size; i++) {
    int64_t kk = bcast_index(in[0], &outt[0], i), m = bcast_index(in[1], &outt[0], i);
    uint32_t a = 0, b = (uint32_t)arr_getu(in[1], m);
    rng_threefry2x32(k[2 * kk], k[2 * kk + 1], &a, &b);
    o[2 * i] = a;
    o[2 * i + 1] = b;
  }
  out[0] = r;
}

/* ---- which JAX printed the text --------------------------------------------------- */

int rngk_version_partitionable(const char *v) {
  if (!isdigit((unsigned char)v[0])) return -1;
  char *end;
  long major = strtol(v, &end, 10);
  if (*end != '.' || !isdigit((unsigned char)end[1])) return -1;
  long minor = strtol(end + 1, &end, 10);
  if (*end && *end != '.' && !isalpha((unsigned char)*end)) return -1;
  return major > 0 || minor >= 5;
}

int rngk_header(const char *text, size_t n, char *version, size_t vcap, size_t *off) {
  const char *p = text, *e = text + n;
  while (p < e) {
    const char *q = p;
    while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
    if (q < e && *q == '\n') { p = q + 1; continue; }
    if (q >= e || *q != '#') return 0;      /* the first statement ends the header */
    q++;
    while (q < e && *q == ' ') q++;
    const char *l = q;
    while (l < e && *l != '\n') l++;
    if (l - q > 4 && !strncasecmp(q, "jax ", 4) && isdigit((unsigned char)q[4])) {
      size_t m = 0;                         /* the version: the word after "jax" */
      while (q + 4 + m < l && !isspace((unsigned char)q[4 + m])) m++;
      if (m >= vcap) m = vcap - 1;
      memcpy(version, q + 4, m);
      version[m] = 0;
      *off = (size_t)(q + 4 - text);
      return rngk_version_partitionable(version) < 0 ? -1 : 1;
    }
    p = l < e ? l + 1 : e;
  }
  return 0;
}

bool rngk_apply_header(int f) {
  size_t n, off = 0;
  const char *t = diag_file_text(f, &n);
  char v[64];
  int h = rngk_header(t, n, v, sizeof v, &off);
  if (h < 0) {
    Span sp = {f, (uint32_t)off, (uint32_t)strlen(v)};
    diag_error(sp, "'%s' is not a JAX version: the header comment `# jax VERSION` names the JAX that printed "
               "the program, as in # jax 0.4.30", v);
    return false;
  }
  if (h > 0) rng_set_partitionable(rngk_version_partitionable(v) == 1);
  return true;
}
