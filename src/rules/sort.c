/*
** sort.c — sort, top_k, approx_top_k and cumlogsumexp: their shape rules
** and kernels (sort.h says what each computes).
**
** Every sort here is one engine.  The elements of a row (the positions
** along the sorted dimension, the others fixed) become unsigned integers
** whose order is the order wanted: a float's bits with the sign folded in
** (negative numbers inverted, positive ones with the top bit set), after
** making -0.0 into 0.0 and every NaN into one NaN where JAX's comparator
** treats them as equal; a signed integer with its top bit flipped; a
** complex number two of them (real part, imaginary part); a descending
** order the complement.  sort_perm then sorts the row's indices by those
** integers, lexicographically over the components, with a stable LSD
** radix sort (an insertion sort for short rows), and every operand is
** permuted by the same indices, so the results keep the operands' bits.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "half.h"
#include "mem.h"
#include "sort.h"

#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt
#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

static Array *new_arr(const Type *t) { return arr_new((DType)t->dt, t->rank, t->shape); }

/* ==========================================================================
** Keys: elements as unsigned integers of the same order
** ========================================================================== */

/* How keys are made from floats: JAX's sort comparator (-0.0 = 0.0, all
   NaNs equal and last) or XLA TopK's total order of the bits. */
enum { ORD_CANON, ORD_TOTAL };

/* The raw bits of element i of a (its real or imaginary part for complex). */
static uint64_t raw_bits(const Array *a, int64_t i, int part) {
  bool cplx = dtype_is_complex((DType)a->dt);
  int w = dtype_sizes[a->dt] >> (cplx ? 1 : 0);
  const unsigned char *p = (const unsigned char *)a->data + (cplx ? 2 * i + part : i) * w;
  uint16_t h;
  uint32_t s;
  uint64_t l;
  switch (w) {
  case 1: return p[0];
  case 2: memcpy(&h, p, 2); return h;
  case 4: memcpy(&s, p, 4); return s;
  default: memcpy(&l, p, 8); return l;
  }
}

/* A float format: total bits and fraction bits. */
typedef struct FFmt { int bits, frac; } FFmt;

static FFmt float_fmt(DType dt) {
  FFmt f = {32, 23};
  if (dt == DT_F64 || dt == DT_C128) f = (FFmt){64, 52};
  else if (dt == DT_F16) f = (FFmt){16, 10};
  else if (dt == DT_BF16) f = (FFmt){16, 7};
  return f;
}

static uint64_t width_mask(int bits) { return bits == 64 ? ~0ull : (1ull << bits) - 1; }

/* A float's bits as an unsigned integer in the order `ord` wants. */
static uint64_t float_key(uint64_t u, FFmt f, int ord) {
  uint64_t sign = 1ull << (f.bits - 1), inf = (sign - 1) & ~((1ull << f.frac) - 1);
  if (ord == ORD_CANON) {
    if ((u & (sign - 1)) > inf) u = inf | (1ull << (f.frac - 1));   /* every NaN: one quiet +NaN */
    else if (u == sign) u = 0;                                      /* -0.0: 0.0 */
  }
  return (u & sign) ? ~u & width_mask(f.bits) : u | sign;
}

/* How one operand's elements become keys: the kind of its dtype, its
   float format, the order, and a mask that complements the key for a
   descending order. */
typedef struct KeyMap {
  char kind;            /* 'F' float (or a complex part), 'I' signed, 'U' unsigned or bool */
  FFmt f;
  int ord;
  uint64_t flip;
} KeyMap;

static KeyMap keymap_of(const Array *a, int ord, bool desc) {
  DType dt = (DType)a->dt;
  KeyMap m;
  m.kind = dtype_is_float(dt) || dtype_is_complex(dt) ? 'F' : dtype_kinds[dt] == 'I' ? 'I' : 'U';
  m.f = m.kind == 'F' ? float_fmt(dt) : (FFmt){8 * dtype_sizes[dt], 0};
  m.ord = ord;
  m.flip = desc ? width_mask(m.f.bits) : 0;
  return m;
}

/* The key of an element's bits u. */
static inline uint64_t key_of(const KeyMap *m, uint64_t u) {
  if (m->kind == 'F') return float_key(u, m->f, m->ord) ^ m->flip;
  if (m->kind == 'I') return (u ^ (1ull << (m->f.bits - 1))) ^ m->flip;
  return u ^ m->flip;
}

/* The bytes of a key of a (one component). */
static int key_width(const Array *a) {
  return dtype_sizes[a->dt] >> (dtype_is_complex((DType)a->dt) ? 1 : 0);
}

/* The keys of one row: ncomp components of n keys each. */
typedef struct Keys {
  int ncomp;
  int width[2 * 64];
  uint64_t *k[2 * 64];
} Keys;

/* ==========================================================================
** The stable sort of a row's indices by its keys
** ========================================================================== */

/* Is row element a before b (lexicographic over the components)? */
static bool key_less(const Keys *ks, uint32_t a, uint32_t b) {
  for (int c = 0; c < ks->ncomp; c++)
    if (ks->k[c][a] != ks->k[c][b]) return ks->k[c][a] < ks->k[c][b];
  return false;
}

/* Short rows: a stable insertion sort. */
static void insertion_perm(const Keys *ks, int64_t n, uint32_t *perm) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t x = perm[i];
    int64_t j = i;
    for (; j > 0 && key_less(ks, x, perm[j - 1]); j--) perm[j] = perm[j - 1];
    perm[j] = x;
  }
}

/* Keys of at most 32 bits: records key << 32 | index, sorted by their top
   `bits` bits in digits of 11 bits (8 for keys of 16 bits or less), each
   pass stable; a pass whose digit is the same everywhere is skipped.  The
   sorted records end in a (b is scratch). */
static void radix_packed(uint64_t *a, uint64_t *b, int64_t n, int bits) {
  int db = bits > 16 ? 11 : 8, np = (bits + db - 1) / db;
  int64_t *hist = mem_calloc(((size_t)np << db) * sizeof(int64_t));
  for (int64_t i = 0; i < n; i++)
    for (int p = 0; p < np; p++) hist[((int64_t)p << db) + (int64_t)((a[i] >> (32 + p * db)) & ((1u << db) - 1))]++;
  for (int p = 0; p < np; p++) {
    int64_t *h = hist + ((int64_t)p << db), sum = 0;
    bool trivial = false;
    for (int d = 0; d < (1 << db); d++) {
      if (h[d] == n) trivial = true;
      int64_t c = h[d];
      h[d] = sum;
      sum += c;
    }
    if (trivial) continue;
    int sh = 32 + p * db;
    uint64_t m = (1u << db) - 1;
    for (int64_t i = 0; i < n; i++) b[h[(a[i] >> sh) & m]++] = a[i];
    memcpy(a, b, (size_t)n * sizeof *a);
  }
  mem_free(hist);
}

/* One component of any width: records (key, index) sorted by the key's
   bytes, least significant first. */
typedef struct Rec { uint64_t k; uint64_t i; } Rec;

static void radix_rec(Rec *a, Rec *b, int64_t n, int width) {
  int64_t *hist = mem_calloc(((size_t)width * 256) * sizeof(int64_t));
  for (int64_t i = 0; i < n; i++)
    for (int p = 0; p < width; p++) hist[p * 256 + (int)((a[i].k >> (8 * p)) & 255)]++;
  for (int p = 0; p < width; p++) {
    int64_t *h = hist + p * 256, sum = 0;
    bool trivial = false;
    for (int d = 0; d < 256; d++) {
      if (h[d] == n) trivial = true;
      int64_t c = h[d];
      h[d] = sum;
      sum += c;
    }
    if (trivial) continue;
    for (int64_t i = 0; i < n; i++) b[h[(a[i].k >> (8 * p)) & 255]++] = a[i];
    memcpy(a, b, (size_t)n * sizeof *a);
  }
  mem_free(hist);
}

/* Buffers of a row's length for the radix sorts, made when first needed
   and kept for the next rows. */
typedef struct Scratch {
  int64_t n;
  uint64_t *a, *b;
  Rec *ra, *rb;
} Scratch;

static void scratch_packed(Scratch *s) {
  if (!s->a) {
    s->a = mem_alloc((size_t)s->n * sizeof *s->a);
    s->b = mem_alloc((size_t)s->n * sizeof *s->b);
  }
}

static void scratch_free(Scratch *s) {
  mem_free(s->a);
  mem_free(s->b);
  mem_free(s->ra);
  mem_free(s->rb);
}

/* perm = the indices 0..n-1 in the order of the keys, equal keys in index
   order. */
static void sort_perm(const Keys *ks, int64_t n, uint32_t *perm, Scratch *sc) {
  for (int64_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
  if (n < 2) return;
  if (n <= 24) { insertion_perm(ks, n, perm); return; }
  if (ks->ncomp == 1 && ks->width[0] <= 4) {
    scratch_packed(sc);
    uint64_t *a = sc->a;
    for (int64_t i = 0; i < n; i++) a[i] = ks->k[0][i] << 32 | (uint64_t)i;
    radix_packed(a, sc->b, n, 8 * ks->width[0]);
    for (int64_t i = 0; i < n; i++) perm[i] = (uint32_t)a[i];
    return;
  }
  if (!sc->ra) {
    sc->ra = mem_alloc((size_t)n * sizeof *sc->ra);
    sc->rb = mem_alloc((size_t)n * sizeof *sc->rb);
  }
  Rec *a = sc->ra, *b = sc->rb;
  for (int c = ks->ncomp - 1; c >= 0; c--) {       /* least significant component first */
    for (int64_t i = 0; i < n; i++) a[i] = (Rec){ks->k[c][perm[i]], perm[i]};
    radix_rec(a, b, n, ks->width[c]);
    for (int64_t i = 0; i < n; i++) perm[i] = (uint32_t)a[i].i;
  }
}

/* One operand of at most 32 bits sorted by itself, without indices: the
   records are key << 32 | the element's own bits, so the sorted records
   hold the result (equal keys keep their order, hence their bits' order:
   -0.0 and 0.0, NaNs of other payloads, as the stable sort of indices
   would place them), and nothing is gathered afterwards. */
static void sort_row_values(const Array *x, Array *r, int64_t base, int64_t step, int64_t n, const KeyMap *m,
                            Scratch *sc) {
  scratch_packed(sc);
  uint64_t *a = sc->a;
  int w = dtype_sizes[x->dt];
  for (int64_t i = 0; i < n; i++) {
    uint64_t u = raw_bits(x, base + i * step, 0);
    a[i] = key_of(m, u) << 32 | u;
  }
  radix_packed(a, sc->b, n, 8 * w);
  unsigned char *d = (unsigned char *)r->data;
  for (int64_t i = 0; i < n; i++) {
    uint32_t v = (uint32_t)a[i];
    int64_t e = base + i * step;
    if (w == 4) memcpy(d + 4 * e, &v, 4);
    else if (w == 2) { uint16_t h = (uint16_t)v; memcpy(d + 2 * e, &h, 2); }
    else d[e] = (unsigned char)v;
  }
}

/* ==========================================================================
** Rows
** ========================================================================== */

/* The rows of a shape along dimension d: `outer` blocks of n * inner
   elements; row (o, j) starts at o * n * inner + j and steps by inner. */
typedef struct Rows { int64_t outer, n, inner; } Rows;

static Rows rows_of(const Array *a, int d) {
  Rows r = {1, a->shape[d], 1};
  for (int k = 0; k < d; k++) r.outer *= a->shape[k];
  for (int k = d + 1; k < a->rank; k++) r.inner *= a->shape[k];
  return r;
}

/* Fill the keys of the row at `base` (stride `step`) of the key operands
   in[0..nkeys-1]; `desc` complements them (largest first). */
static void row_keys(Keys *ks, Array *const *in, int nkeys, int64_t base, int64_t step, int64_t n, int ord,
                     bool desc) {
  int c = 0;
  for (int j = 0; j < nkeys; j++) {
    int parts = dtype_is_complex((DType)in[j]->dt) ? 2 : 1;
    KeyMap m = keymap_of(in[j], ord, desc);
    for (int p = 0; p < parts; p++, c++)
      for (int64_t i = 0; i < n; i++) ks->k[c][i] = key_of(&m, raw_bits(in[j], base + i * step, p));
  }
}

/* Keys for the first nkeys operands, with room for rows of n. */
static void keys_alloc(Keys *ks, Array *const *in, int nkeys, int64_t n) {
  ks->ncomp = 0;
  for (int j = 0; j < nkeys; j++) {
    int parts = dtype_is_complex((DType)in[j]->dt) ? 2 : 1;
    for (int p = 0; p < parts; p++) {
      ks->width[ks->ncomp] = key_width(in[j]);
      ks->k[ks->ncomp++] = mem_alloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    }
  }
}

static void keys_free(Keys *ks) {
  for (int c = 0; c < ks->ncomp; c++) mem_free(ks->k[c]);
}

/* dst's row at dbase gets src's row at sbase permuted: dst[i] = src[perm[i]]
   for i < m (both rows step by `step`). */
static void permute_row(Array *dst, int64_t dbase, const Array *src, int64_t sbase, int64_t step,
                        const uint32_t *perm, int64_t m) {
  size_t es = dtype_sizes[src->dt];
  unsigned char *d = (unsigned char *)dst->data;
  const unsigned char *s = (const unsigned char *)src->data;
#define PERMUTE(T)                                                                        \
  for (int64_t i = 0; i < m; i++)                                                         \
    ((T *)d)[dbase + i * step] = ((const T *)s)[sbase + (int64_t)perm[i] * step];         \
  return;
  switch (es) {
  case 1: PERMUTE(uint8_t)
  case 2: PERMUTE(uint16_t)
  case 4: PERMUTE(uint32_t)
  case 8: PERMUTE(uint64_t)
  default:
    for (int64_t i = 0; i < m; i++)
      memcpy(d + (size_t)(dbase + i * step) * es, s + (size_t)(sbase + (int64_t)perm[i] * step) * es, es);
  }
#undef PERMUTE
}

/* The common driver: for each row along d, the stable order of the keys
   of in[0..nkeys-1]; then each of `nperm` operands in[] permuted into
   res[] (keeping the first m of the row), and the indices into idx (i32)
   if given. */
static void sort_rows(Array *const *in, int nkeys, int nperm, int d, int ord, bool desc, int64_t m, Array **res,
                      Array *idx) {
  Rows r = rows_of(in[0], d);
  Scratch sc = {r.n, NULL, NULL, NULL, NULL};
  bool values = nperm == 1 && nkeys == 1 && !idx && !dtype_is_complex((DType)in[0]->dt) &&
                dtype_sizes[in[0]->dt] <= 4 && m == r.n && r.n > 24;
  KeyMap km = keymap_of(in[0], ord, desc);
  Keys ks = {0};
  uint32_t *perm = NULL;
  if (!values) {
    keys_alloc(&ks, in, nkeys, r.n);
    perm = mem_alloc((size_t)(r.n ? r.n : 1) * sizeof *perm);
  }
  for (int64_t o = 0; o < r.outer; o++)
    for (int64_t j = 0; j < r.inner; j++) {
      int64_t sbase = o * r.n * r.inner + j, dbase = o * m * r.inner + j;
      if (values) {
        sort_row_values(in[0], res[0], sbase, r.inner, r.n, &km, &sc);
        continue;
      }
      row_keys(&ks, in, nkeys, sbase, r.inner, r.n, ord, desc);
      sort_perm(&ks, r.n, perm, &sc);
      for (int k = 0; k < nperm; k++) permute_row(res[k], dbase, in[k], sbase, r.inner, perm, m);
      if (idx)
        for (int64_t i = 0; i < m; i++) ((int32_t *)idx->data)[dbase + i * r.inner] = (int32_t)perm[i];
    }
  mem_free(perm);
  keys_free(&ks);
  scratch_free(&sc);
}

/* ==========================================================================
** sort
** ========================================================================== */

/* sort[dimension, is_stable, num_keys]: operands of one shape (rank 1 or
   more), any dtypes; results of their types.  Fills i[0] = dimension,
   i[1] = num_keys, b[0] = is_stable. */
bool sort_rule(RARGS) {
  int64_t dim, nk;
  TyBuf ta, tb;
  if (!rule_int(cx, "dimension", false, -1, &dim)) return false;
  if (!rule_bool(cx, "is_stable", true, &at->b[0])) return false;
  if (!rule_int(cx, "num_keys", false, 1, &nk)) return false;
  if (nk < 1 || nk > nin)
    return rule_param_error(cx, "num_keys", "sort num_keys=%lld must be between 1 and the number of operands (%d)",
                            (long long)nk, nin);
  if (nk > 64) return rule_param_error(cx, "num_keys", "sort takes at most 64 keys, got num_keys=%lld", (long long)nk);
  for (int k = 1; k < nin; k++)
    if (in[k].rank != in[0].rank || memcmp(in[k].shape, in[0].shape, sizeof(int64_t) * (size_t)in[0].rank))
      return rule_error(cx, "sort operands must have equal shapes, got %s (operand 1) and %s (operand %d)",
                        rule_ty(&ta, &in[0]), rule_ty(&tb, &in[k]), k + 1);
  if (in[0].rank == 0) return rule_error(cx, "sort needs operands of rank 1 or more, got %s", rule_ty(&ta, &in[0]));
  int64_t d = rule_norm_axis(dim, in[0].rank);
  if (d < 0)
    return rule_param_error(cx, "dimension", "sort dimension %lld out of range for %s", (long long)dim,
                            rule_ty(&ta, &in[0]));
  rule_axis_index(cx, "dimension", &dim, in[0].rank);
  if (in[0].shape[d] > (int64_t)UINT32_MAX)
    return rule_error(cx, "sort of a dimension of %lld elements: at most 2^32 - 1 are supported",
                      (long long)in[0].shape[d]);
  at->i[0] = d;
  at->i[1] = nk;
  for (int k = 0; k < nin; k++) {
    out[k] = in[k];
    out[k].weak = false;
  }
  return true;
}

void sort_kern(KARGS) {
  (void)outt;
  for (int k = 0; k < nin; k++) out[k] = arr_new((DType)in[k]->dt, in[k]->rank, in[k]->shape);
  int d = (int)at->i[0];
  sort_rows(in, (int)at->i[1], nin, d, ORD_CANON, false, in[0]->shape[d], out, NULL);
}

/* ==========================================================================
** top_k
** ========================================================================== */

/* The result types of a selection of m along d: values like x, i32 indices. */
static void select_types(const Type *x, int64_t d, int64_t m, Type *out) {
  out[0] = *x;
  out[0].weak = false;
  out[0].shape[d] = m;
  out[1] = out[0];
  out[1].dt = DT_I32;
}

/* top_k[axis=-1, is_stable=True, k]: a non-complex operand of rank 1 or
   more, k no larger than the axis.  Fills i[0] = k, i[1] = axis,
   b[0] = is_stable. */
bool sort_rule_top_k(RARGS) {
  (void)nin;
  int64_t k, axis;
  TyBuf ta;
  if (!rule_int(cx, "axis", false, -1, &axis)) return false;
  if (!rule_bool(cx, "is_stable", true, &at->b[0])) return false;
  if (!rule_int(cx, "k", true, 0, &k)) return false;
  if (dtype_is_complex((DType)in[0].dt)) return rule_error(cx, "top_k is not compatible with complex inputs, got %s", rule_ty(&ta, &in[0]));
  if (k < 0) return rule_param_error(cx, "k", "k argument to top_k must be nonnegative, got %lld", (long long)k);
  if (in[0].rank == 0) return rule_error(cx, "top_k operand must have 1 dimension or more, got %s", rule_ty(&ta, &in[0]));
  int64_t d = rule_norm_axis(axis, in[0].rank);
  if (d < 0) return rule_param_error(cx, "axis", "top_k axis %lld out of range for %s", (long long)axis, rule_ty(&ta, &in[0]));
  rule_axis_index(cx, "axis", &axis, in[0].rank);
  if (in[0].shape[d] < k)
    return rule_param_error(cx, "k", "top_k k=%lld is larger than dimension %lld of %s (size %lld)", (long long)k,
                            (long long)d, rule_ty(&ta, &in[0]), (long long)in[0].shape[d]);
  if (in[0].shape[d] > (int64_t)INT32_MAX + 1)
    return rule_error(cx, "top_k returns i32 indices, which overflow for a dimension of %lld elements",
                      (long long)in[0].shape[d]);
  at->i[0] = k;
  at->i[1] = d;
  select_types(&in[0], d, k, out);
  return true;
}

void sort_kern_top_k(KARGS) {
  (void)nin;
  out[0] = new_arr(&outt[0]);
  out[1] = new_arr(&outt[1]);
  sort_rows(in, 1, 1, (int)at->i[1], ORD_TOTAL, true, at->i[0], out, out[1]);
}

/* ==========================================================================
** approx_top_k
** ========================================================================== */

static int64_t log2_floor(uint64_t v) { int64_t r = -1; while (v) { v >>= 1; r++; } return r < 0 ? 0 : r; }
static int64_t log2_ceil(uint64_t v) { return v <= 1 ? 0 : log2_floor(v - 1) + 1; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t sort_approx_out_size(int64_t n, int rank, int64_t k, float recall, bool aggregate, int64_t override) {
  if (aggregate) return k;
  int64_t tiling = rank == 1 ? 1024 : 128;
  if (n <= tiling) return n;
  if (override >= 0 && n > override) return -1;
  uint64_t logical = (uint64_t)(override >= 0 ? override : n);
  if (k == 1) return tiling;
  /* windows M so that the expected recall exp((1 - k) / M) reaches the target */
  uint64_t m = (uint64_t)((1.0 - (double)k) / log((double)recall));
  if (m < (uint64_t)tiling) m = (uint64_t)tiling;
  if (m > (uint64_t)n) m = (uint64_t)n;
  int64_t red = log2_floor(logical / m);
  if (red == 0) return n;
  int64_t cap = log2_ceil((uint64_t)(n / tiling));
  if (red > cap) red = cap;
  return ceil_div(ceil_div(n, tiling), (int64_t)1 << red) * tiling;
}

/* approx_top_k[k, reduction_dimension=-1, recall_target=0.95, is_max_k=True,
   reduction_input_size_override=-1, aggregate_to_topk=True]: a float
   operand.  Fills i[0] = k, i[1] = the dimension, i[2] = the result's
   size along it, b[0] = is_max_k, b[1] = aggregate_to_topk, f[0] =
   recall_target. */
bool sort_rule_approx(RARGS) {
  (void)nin;
  int64_t k, rd, over;
  double recall;
  TyBuf ta;
  if (!rule_bool(cx, "aggregate_to_topk", true, &at->b[1])) return false;
  if (!rule_bool(cx, "is_max_k", true, &at->b[0])) return false;
  if (!rule_int(cx, "k", true, 0, &k)) return false;
  if (!rule_float(cx, "recall_target", false, 0.95, &recall)) return false;
  if (!rule_int(cx, "reduction_dimension", false, -1, &rd)) return false;
  if (!rule_int(cx, "reduction_input_size_override", false, -1, &over)) return false;
  if (k <= 0) return rule_param_error(cx, "k", "approx_top_k k must be positive, got %lld", (long long)k);
  if (in[0].rank == 0) return rule_error(cx, "approx_top_k operand must have 1 dimension or more, got %s", rule_ty(&ta, &in[0]));
  int64_t d = rule_norm_axis(rd, in[0].rank);
  if (d < 0)
    return rule_param_error(cx, "reduction_dimension", "approx_top_k reduction_dimension %lld out of range for %s",
                            (long long)rd, rule_ty(&ta, &in[0]));
  if (!dtype_is_float((DType)in[0].dt))
    return rule_error(cx, "approx_top_k operand must be a floating-point type, got %s", rule_ty(&ta, &in[0]));
  if (in[0].shape[d] < k)
    return rule_param_error(cx, "k", "approx_top_k k=%lld is larger than dimension %lld of %s (size %lld)",
                            (long long)k, (long long)d, rule_ty(&ta, &in[0]), (long long)in[0].shape[d]);
  if (!(recall > 0 && recall <= 1))
    return rule_param_error(cx, "recall_target", "approx_top_k recall_target must be in (0, 1], got %g", recall);
  int64_t m = sort_approx_out_size(in[0].shape[d], in[0].rank, k, (float)recall, at->b[1], over);
  if (m < 0)
    return rule_param_error(cx, "reduction_input_size_override",
                            "reduction_input_size_override %lld is smaller than the reduced dimension's size %lld",
                            (long long)over, (long long)in[0].shape[d]);
  at->i[0] = k;
  at->i[1] = d;
  at->i[2] = m;
  at->f[0] = recall;
  select_types(&in[0], d, m, out);
  return true;
}

void sort_kern_approx(KARGS) {
  (void)nin;
  out[0] = new_arr(&outt[0]);
  out[1] = new_arr(&outt[1]);
  sort_rows(in, 1, 1, (int)at->i[1], ORD_CANON, at->b[0], at->i[2], out, out[1]);
}

/* ==========================================================================
** cumlogsumexp
** ========================================================================== */

/* cumlogsumexp[axis=0, reverse=False]: a float operand; the result has its
   type.  Fills i[0] = axis, b[0] = reverse. */
bool sort_rule_cumlse(RARGS) {
  (void)nin;
  int64_t axis;
  TyBuf ta;
  if (!rule_int(cx, "axis", false, 0, &axis)) return false;
  if (!rule_bool(cx, "reverse", false, &at->b[0])) return false;
  if (!dtype_is_float((DType)in[0].dt))
    return rule_error(cx, "cumlogsumexp takes a floating-point operand, got %s", rule_ty(&ta, &in[0]));
  int64_t a = rule_norm_axis(axis, in[0].rank);
  if (a < 0) return rule_param_error(cx, "axis", "cumlogsumexp axis %lld out of range for %s", (long long)axis, rule_ty(&ta, &in[0]));
  rule_axis_index(cx, "axis", &axis, in[0].rank);
  at->i[0] = a;
  *out = in[0];
  out->weak = false;
  return true;
}

/* Rounding of an f32 result to the operand's dtype (the 16-bit floats are
   computed in f32, each operation rounded, as XLA's CPU backend does). */
static float rnd(DType dt, float v) {
  if (dt == DT_F16) return f16_to_f32(f16_from_f32(v));
  if (dt == DT_BF16) return bf16_to_f32(bf16_from_f32(v));
  return v;
}

/* JAX's logaddexp: max(a, b) + log1p(exp(-|a - b|)), or a + b where a - b
   is NaN (a NaN, or infinities of one sign); lax.max propagates NaN. */
static float lae_f(DType dt, float a, float b) {
  float amax = isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  float delta = rnd(dt, a - b);
  if (isnan(delta)) return rnd(dt, a + b);
  return rnd(dt, amax + rnd(dt, log1pf(rnd(dt, expf(-fabsf(delta))))));
}

static double lae_d(double a, double b) {
  double amax = isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  double delta = a - b;
  if (isnan(delta)) return a + b;
  return amax + log1p(exp(-fabs(delta)));
}

static float getf(const Array *a, int64_t i) {
  if (a->dt == DT_F32) return ((const float *)a->data)[i];
  uint16_t h = ((const uint16_t *)a->data)[i];
  return a->dt == DT_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

static void setf(Array *a, int64_t i, float v) {
  if (a->dt == DT_F32) ((float *)a->data)[i] = v;
  else ((uint16_t *)a->data)[i] = a->dt == DT_F16 ? f16_from_f32(v) : bf16_from_f32(v);
}

void sort_kern_cumlse(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  Rows rw = rows_of(in[0], (int)at->i[0]);
  bool rev = at->b[0];
  DType dt = (DType)in[0]->dt;
  for (int64_t o = 0; o < rw.outer; o++)
    for (int64_t j = 0; j < rw.inner; j++) {
      int64_t base = o * rw.n * rw.inner + j;
      float af = -INFINITY;
      double ad = -INFINITY;
      for (int64_t t = 0; t < rw.n; t++) {
        int64_t e = base + (rev ? rw.n - 1 - t : t) * rw.inner;
        if (dt == DT_F64) ((double *)r->data)[e] = ad = lae_d(ad, ((const double *)in[0]->data)[e]);
        else { af = lae_f(dt, af, getf(in[0], e)); setf(r, e, af); }
      }
    }
  out[0] = r;
}
