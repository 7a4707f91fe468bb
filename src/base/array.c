/*
** array.c — creating, converting and releasing arrays.
*/
#include <math.h>
#include "array.h"
#include "half.h"
#include "err.h"
#include "par.h"

int64_t shape_size(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] && n > (INT64_MAX / 16) / shape[i]) return -1;
    n *= shape[i];
  }
  return n;
}

void arr_strides(int rank, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i];
  }
}

/* shape[rank..SHM_MAXRANK) is left unset: nothing reads past the rank. */
Array *arr_new(DType dt, int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++)        /* shape_size without its divisions */
    if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n) || n > INT64_MAX / 16)
      err_throw("array too large");
  size_t hdr = (sizeof(Array) + 63) & ~(size_t)63;
  size_t bytes = (size_t)n * dtype_sizes[dt];
  Array *a = mem_alloc(hdr + bytes);
  a->refc = 1;
  a->dt = (uint8_t)dt;
  a->rank = (uint8_t)rank;
  a->size = n;
  for (int i = 0; i < rank; i++) a->shape[i] = shape[i];
  a->data = (unsigned char *)a + hdr;
  a->slab = NULL;
  a->pitch = 0;
  return a;
}

/* A slab: this header, the arrays' headers from offset 64, their elements
   from the next multiple of 64. */
typedef struct Slab {
  int64_t live;                 /* arrays not yet freed */
  Array *owner;                 /* arr_carve: the array whose elements these are */
  int64_t n;                    /* arrays in all, their headers 64 bytes on */
} Slab;

/* The n arrays of slab s, headers at arr, each of m elements of the given
   shape, their elements one after another from data. */
static void slab_headers(Slab *s, Array *arr, DType dt, int rank, const int64_t *shape, int64_t m, int64_t n,
                         void *data, Array **out) {
  size_t bytes = (size_t)m * dtype_sizes[dt];
  for (int64_t k = 0; k < n; k++) {
    Array *a = &arr[k];
    a->refc = 1;
    a->dt = (uint8_t)dt;
    a->rank = (uint8_t)rank;
    a->size = m;
    for (int i = 0; i < rank; i++) a->shape[i] = shape[i];
    a->data = (unsigned char *)data + (size_t)k * bytes;
    a->slab = s;
    a->pitch = 0;
    out[k] = a;
  }
}

void arr_slab(DType dt, int rank, const int64_t *shape, int64_t n, Array **out) {
  int64_t m = 1;
  for (int i = 0; i < rank; i++)
    if (shape[i] < 0 || __builtin_mul_overflow(m, shape[i], &m) || m > INT64_MAX / 16)
      err_throw("array too large");
  size_t bytes = (size_t)m * dtype_sizes[dt];
  size_t hoff = 64, doff = (hoff + sizeof(Array) * (size_t)n + 63) & ~(size_t)63, total;
  if (n <= 0 || __builtin_mul_overflow(bytes, (size_t)n, &total) || __builtin_add_overflow(total, doff, &total))
    err_throw("array too large");
  unsigned char *p = mem_alloc(total);
  Slab *s = (Slab *)p;
  s->live = n;
  s->owner = NULL;
  s->n = n;
  slab_headers(s, (Array *)(p + hoff), dt, rank, shape, m, n, p + doff, out);
}

void arr_carve(Array *g, int rank, const int64_t *shape, int64_t n, Array **out) {
  unsigned char *p = mem_alloc(64 + sizeof(Array) * (size_t)n);
  Slab *s = (Slab *)p;
  s->live = n;
  s->owner = arr_ref(g);
  s->n = n;
  slab_headers(s, (Array *)(p + 64), (DType)g->dt, rank, shape, shape_size(rank, shape), n, g->data, out);
}

void arr_views(Array *g, int rank, const int64_t *shape, int64_t n, const int64_t *off, int64_t pitch,
               Array **out) {
  arr_carve(g, rank, shape, n, out);
  for (int64_t k = 0; k < n; k++) {
    out[k]->data = (unsigned char *)g->data + (size_t)off[k] * dtype_sizes[g->dt];
    out[k]->pitch = pitch;
  }
}

Array *arr_contig(Array *a) {
  if (!a->pitch) return arr_ref(a);
  Array *r = arr_new((DType)a->dt, a->rank, a->shape);
  size_t es = dtype_sizes[a->dt];
  int64_t sstr[2] = {a->pitch * (int64_t)es, (int64_t)es}, dstr[2];
  arr_byte_strides(r->rank, r->shape, es, dstr);
  arr_copy_strided(r->data, dstr, a->data, sstr, 2, a->shape, es);
  return r;
}

/* The headers in a row from a0 up to one of a0's slab are all of it (a
   slab's headers are in one row, and an array's `slab` is the slab whose
   row holds it): only the last is looked into for that.  Their elements
   must also follow one another (views of an array need not). */
bool arr_in_slab(Array *const *blk, int64_t n) {
  const Array *a0 = blk[0];
  if (!a0 || !a0->slab || a0->pitch) return false;
  size_t bytes = arr_nbytes(a0);
  for (int64_t k = 1; k < n; k++)
    if ((uintptr_t)blk[k] != (uintptr_t)a0 + (uintptr_t)k * sizeof(Array) ||
        (char *)blk[k]->data != (char *)a0->data + (size_t)k * bytes)
      return false;
  return blk[n - 1]->slab == a0->slab;
}

bool arr_owned(Array *const *blk, int64_t n) {
  const Array *a0 = blk[0];
  if (!a0 || a0->refc != 1) return false;
  if (!a0->slab) return n == 1;
  if (a0->slab->owner || a0->slab->live != n) return false;
  for (int64_t k = 1; k < n; k++)         /* arr_in_slab's test, and the counts */
    if ((uintptr_t)blk[k] != (uintptr_t)a0 + (uintptr_t)k * sizeof(Array) || blk[k]->slab != a0->slab ||
        blk[k]->refc != 1)
      return false;
  return true;
}

Array *arr_zeros(DType dt, int rank, const int64_t *shape) {
  Array *a = arr_new(dt, rank, shape);
  memset(a->data, 0, arr_nbytes(a));
  return a;
}

/* The bytes [*lo, *hi) an array's elements span (a pitched matrix's
   rows and what lies between them); false for a pitched array of
   another rank (none is made). */
static bool extent(const Array *x, uintptr_t *lo, uintptr_t *hi) {
  size_t es = dtype_sizes[x->dt];
  *lo = *hi = (uintptr_t)x->data;
  if (!x->size) return true;
  if (!x->pitch) *hi += (size_t)x->size * es;
  else if (x->rank == 2) *hi += ((size_t)(x->shape[0] - 1) * (size_t)x->pitch + (size_t)x->shape[1]) * es;
  else return false;
  return true;
}

/* Array a of slab s, views of s->owner, is being freed.  When nothing
   but the views holds the owner (the value it was split from is gone: a
   dying operand of a shard_map, eval.c), the whole pages of a's span that
   no live view reaches will not be read again: given back now
   (mem_discard), so that an operand read block by block -- matmul's
   row bands, each by its block products -- stops counting as its blocks
   are done with, as the C programmer's would.  Only for slabs of a few
   big views (every live one is looked at). */
static void view_gone(Slab *s, const Array *a) {
  uintptr_t lo, hi, L[64], H[64];
  if (!s->owner || s->owner->refc != 1 || s->owner->slab || s->n > 64 || !extent(a, &lo, &hi) ||
      hi - lo < ((size_t)1 << 20))
    return;
  const Array *hd = (const Array *)((const char *)s + 64);
  int m = 0;
  for (int64_t k = 0; k < s->n; k++) {
    uintptr_t l, h;
    if (&hd[k] == a || hd[k].refc <= 0) continue;
    if (!extent(&hd[k], &l, &h)) return;
    if (h <= lo || l >= hi) continue;
    int j = m++;
    for (; j > 0 && L[j - 1] > l; j--) L[j] = L[j - 1], H[j] = H[j - 1];
    L[j] = l, H[j] = h;
  }
  uintptr_t cur = lo, base = (uintptr_t)s->owner;
  for (int j = 0; j <= m; j++) {
    uintptr_t end = j < m ? (L[j] < hi ? L[j] : hi) : hi;
    if (end > cur) mem_discard(s->owner, cur - base, end - cur);
    if (j < m && H[j] > cur) cur = H[j];
  }
}

void arr_free_(Array *a) {
  if (a->slab) view_gone(a->slab, a);
  if (!a->slab) {
    mem_free(a);
  } else if (--a->slab->live == 0) {
    Array *owner = a->slab->owner;
    mem_free(a->slab);
    arr_unref(owner);
  }
}

size_t arr_nbytes(const Array *a) { return (size_t)a->size * dtype_sizes[a->dt]; }

/* ---- elements of any dtype ---------------------------------------------------
** An element read widened: the integer kinds as int64 (signed, bool) or
** uint64 (unsigned), the floats as double, complex as two doubles. */
typedef struct Wide {
  char k;              /* the dtype's kind */
  int64_t i;
  uint64_t u;
  double re, im;
} Wide;

static Wide wide_get(const Array *a, int64_t i) {
  Wide w = {dtype_kinds[a->dt], 0, 0, 0, 0};
  const void *d = a->data;
  switch ((DType)a->dt) {
#define X(tag, name, npname, size, ctype, kind)                              \
  case DT_##tag:                                                             \
    if (kind == 'U') w.u = (uint64_t)((const ctype *)d)[i];                  \
    else if (kind == 'F') w.re = (double)((const ctype *)d)[i];              \
    else w.i = (int64_t)((const ctype *)d)[i];                               \
    break;
    SHM_PLAIN_DTYPES(X)
#undef X
  case DT_BF16: w.re = bf16_to_f32(((const ShmBf16 *)d)[i].bits); break;
  case DT_F16: w.re = f16_to_f32(((const ShmF16 *)d)[i].bits); break;
  case DT_C64: w.re = ((const ShmC64 *)d)[i].re; w.im = ((const ShmC64 *)d)[i].im; break;
  case DT_C128: w.re = ((const ShmC128 *)d)[i].re; w.im = ((const ShmC128 *)d)[i].im; break;
  default: break;
  }
  return w;
}

/* A float truncated toward zero into [lo, hi] (as doubles), NaN to 0. */
static double sat(double x, double lo, double hi) {
  return isnan(x) ? 0 : x <= lo ? lo : x >= hi ? hi : trunc(x);
}

/* The integer bits a widened element converts to, for an integer dtype of
   `bits` bits (signed or not): integers wrap, floats saturate. */
static uint64_t wide_int_bits(const Wide *w, int bits, bool is_unsigned) {
  if (w->k == 'U') return w->u;
  if (w->k == 'B' || w->k == 'I') return (uint64_t)w->i;
  if (is_unsigned) {
    if (bits == 64 && w->re >= 18446744073709551616.0) return UINT64_MAX;
    double hi = bits == 64 ? 18446744073709551616.0 : ldexp(1.0, bits) - 1;
    double x = sat(w->re, 0, hi);
    return x >= 9223372036854775808.0 ? (uint64_t)(x - 9223372036854775808.0) + (UINT64_C(1) << 63) : (uint64_t)x;
  }
  double lo = -ldexp(1.0, bits - 1), hi = ldexp(1.0, bits - 1) - 1;
  if (bits == 64) {
    if (isnan(w->re)) return 0;
    if (w->re >= 9223372036854775808.0) return (uint64_t)INT64_MAX;
    if (w->re <= -9223372036854775808.0) return (uint64_t)INT64_MIN;
    return (uint64_t)(int64_t)trunc(w->re);
  }
  return (uint64_t)(int64_t)sat(w->re, lo, hi);
}

/* The value of an integer element as a float of the target: exact
   conversions by C (correctly rounded), as double for the others. */
static float wide_f32(const Wide *w) {
  return w->k == 'U' ? (float)w->u : w->k == 'B' || w->k == 'I' ? (float)w->i : (float)w->re;
}
static double wide_f64(const Wide *w) {
  return w->k == 'U' ? (double)w->u : w->k == 'B' || w->k == 'I' ? (double)w->i : w->re;
}

static void wide_set(Array *a, int64_t i, const Wide *w) {
  void *d = a->data;
  char k = dtype_kinds[a->dt];
  if (a->dt == DT_BOOL) {
    ((uint8_t *)d)[i] = w->k == 'U' ? w->u != 0 : w->k == 'B' || w->k == 'I' ? w->i != 0 : (w->re != 0 || w->im != 0);
    return;
  }
  if (k == 'I' || k == 'U') {
    uint64_t b = wide_int_bits(w, dtype_sizes[a->dt] * 8, k == 'U');
    switch (dtype_sizes[a->dt]) {
    case 1: ((uint8_t *)d)[i] = (uint8_t)b; break;
    case 2: ((uint16_t *)d)[i] = (uint16_t)b; break;
    case 4: ((uint32_t *)d)[i] = (uint32_t)b; break;
    default: ((uint64_t *)d)[i] = b; break;
    }
    return;
  }
  switch ((DType)a->dt) {
  case DT_F32: ((float *)d)[i] = wide_f32(w); break;
  case DT_F64: ((double *)d)[i] = wide_f64(w); break;
  case DT_BF16: ((ShmBf16 *)d)[i].bits = bf16_from_f32(wide_f32(w)); break;
  case DT_F16: ((ShmF16 *)d)[i].bits = w->k == 'F' || w->k == 'H' || w->k == 'C' ? f16_from_f64(w->re)
                                                                                  : f16_from_f64(wide_f64(w)); break;
  case DT_C64: ((ShmC64 *)d)[i].re = wide_f32(w); ((ShmC64 *)d)[i].im = (float)w->im; break;
  case DT_C128: ((ShmC128 *)d)[i].re = wide_f64(w); ((ShmC128 *)d)[i].im = w->im; break;
  default: break;
  }
}

double arr_getf(const Array *a, int64_t i) {
  Wide w = wide_get(a, i);
  return wide_f64(&w);
}

int64_t arr_geti(const Array *a, int64_t i) {
  Wide w = wide_get(a, i);
  return (int64_t)wide_int_bits(&w, 64, dtype_is_unsigned((DType)a->dt));
}

uint64_t arr_getu(const Array *a, int64_t i) {
  Wide w = wide_get(a, i);
  return wide_int_bits(&w, 64, true);
}

void arr_getc(const Array *a, int64_t i, double *re, double *im) {
  Wide w = wide_get(a, i);
  *re = wide_f64(&w);
  *im = w.im;
}

void arr_setf(Array *a, int64_t i, double v) {
  Wide w = {'F', 0, 0, v, 0};
  wide_set(a, i, &w);
}

void arr_seti(Array *a, int64_t i, int64_t v) {
  Wide w = {'I', v, 0, 0, 0};
  wide_set(a, i, &w);
}

void arr_setu(Array *a, int64_t i, uint64_t v) {
  Wide w = {'U', 0, v, 0, 0};
  wide_set(a, i, &w);
}

void arr_setc(Array *a, int64_t i, double re, double im) {
  Wide w = {'C', 0, 0, re, im};
  wide_set(a, i, &w);
}

Array *arr_scalar_f(DType dt, double v) {
  Array *a = arr_new(dt, 0, NULL);
  arr_setf(a, 0, v);
  return a;
}

Array *arr_scalar_i(DType dt, int64_t v) {
  Array *a = arr_new(dt, 0, NULL);
  arr_seti(a, 0, v);
  return a;
}

/* Elements [lo, hi) of a converted into r: typed loops for the float
   conversions matmuls and mixed precision make (the same roundings as the
   general path: bf16 widens exactly, f32 narrows to bf16 to nearest
   even), the general path for the rest. */
static void convert_range(const Array *a, Array *r, int64_t lo, int64_t hi) {
  int from = a->dt, to = r->dt;
  if (from == DT_BF16 && to == DT_F32) {
    const uint16_t *x = a->data;
    float *o = r->data;
    for (int64_t i = lo; i < hi; i++) o[i] = bf16_to_f32(x[i]);
  } else if (from == DT_F32 && to == DT_BF16) {
    const float *x = a->data;
    uint16_t *o = r->data;
    for (int64_t i = lo; i < hi; i++) o[i] = bf16_from_f32(x[i]);
  } else if (from == DT_F32 && to == DT_F64) {
    const float *x = a->data;
    double *o = r->data;
    for (int64_t i = lo; i < hi; i++) o[i] = (double)x[i];
  } else if (from == DT_F64 && to == DT_F32) {
    const double *x = a->data;
    float *o = r->data;
    for (int64_t i = lo; i < hi; i++) o[i] = (float)x[i];
  } else {
    for (int64_t i = lo; i < hi; i++) {
      Wide w = wide_get(a, i);
      wide_set(r, i, &w);
    }
  }
}

typedef struct ConvJob {
  const Array *a;
  Array *r;
} ConvJob;

static void convert_half(void *ctx, int64_t half) {
  ConvJob *j = ctx;
  int64_t n = j->a->size, mid = n / 2;
  convert_range(j->a, j->r, half ? mid : 0, half ? n : mid);
}

void arr_convert_into(const Array *a, Array *r) {
  if (r->dt == a->dt) {
    memcpy(r->data, a->data, arr_nbytes(a));
    return;
  }
  ConvJob j = {a, r};
  par_for(2, convert_half, &j, (double)arr_nbytes(a) + (double)arr_nbytes(r));
}

Array *arr_convert(const Array *a, DType dt) {
  Array *r = arr_new(dt, a->rank, a->shape);
  arr_convert_into(a, r);
  return r;
}

bool arr_identical(const Array *a, const Array *b) {
  if (a->dt != b->dt || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return memcmp(a->data, b->data, arr_nbytes(a)) == 0;
}

/* Copies one element of es bytes (constant sizes become plain moves). */
static inline void copy_elem(char *d, const char *s, size_t es) {
  switch (es) {
  case 1: *d = *s; break;
  case 4: memcpy(d, s, 4); break;
  case 8: memcpy(d, s, 8); break;
  default: memcpy(d, s, es); break;
  }
}

/* Copies the elements of a box of the given shape from src to dst.  dstr
   and sstr are each layout's strides in bytes (0 repeats an element, a
   negative stride runs backwards); rows that are contiguous on both sides
   move with one memcpy. */
void arr_copy_strided(void *dstv, const int64_t *dstr, const void *srcv, const int64_t *sstr,
                      int rank, const int64_t *shape, size_t es) {
  char *dst = dstv;
  const char *src = srcv;
  int64_t idx[SHM_MAXRANK] = {0}, doff = 0, soff = 0;
  for (int d = 0; d < rank; d++)
    if (shape[d] <= 0) return;
  if (rank == 0) {
    copy_elem(dst, src, es);
    return;
  }
  int last = rank - 1;
  int64_t len = shape[last], ds = dstr[last], ss = sstr[last];
  bool run = ds == (int64_t)es && ss == (int64_t)es;
  for (;;) {
    if (run) memcpy(dst + doff, src + soff, (size_t)len * es);
    else
      for (int64_t k = 0; k < len; k++) copy_elem(dst + doff + k * ds, src + soff + k * ss, es);
    int d;
    for (d = last - 1; d >= 0; d--) {
      doff += dstr[d];
      soff += sstr[d];
      if (++idx[d] < shape[d]) break;
      doff -= dstr[d] * shape[d];
      soff -= sstr[d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/* Row-major strides of a shape, in bytes for elements of es bytes. */
void arr_byte_strides(int rank, const int64_t *shape, size_t es, int64_t *st) {
  int64_t s = (int64_t)es;
  for (int d = rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= shape[d];
  }
}

/* A copy of a with its dimensions permuted: result dim k is a's dim
   perm[k].  The identity permutation returns a new reference to a. */
Array *arr_permuted(Array *a, const int *perm) {
  bool id = true;
  int64_t shape[SHM_MAXRANK], ist[SHM_MAXRANK], sst[SHM_MAXRANK], dst[SHM_MAXRANK];
  size_t es = dtype_sizes[a->dt];
  for (int k = 0; k < a->rank; k++) id &= perm[k] == k;
  if (id) return arr_ref(a);
  arr_byte_strides(a->rank, a->shape, es, ist);
  for (int k = 0; k < a->rank; k++) {
    shape[k] = a->shape[perm[k]];
    sst[k] = ist[perm[k]];
  }
  Array *r = arr_new((DType)a->dt, a->rank, shape);
  arr_byte_strides(r->rank, r->shape, es, dst);
  arr_copy_strided(r->data, dst, a->data, sst, r->rank, r->shape, es);
  return r;
}

void arr_copy_box(void *dst, const int64_t *dshape, const int64_t *dstart, const void *src, const int64_t *sshape,
                  const int64_t *sstart, const int64_t *box, int rank, size_t es) {
  int64_t dstr[SHM_MAXRANK], sstr[SHM_MAXRANK], doff = 0, soff = 0;
  arr_byte_strides(rank, dshape, es, dstr);
  arr_byte_strides(rank, sshape, es, sstr);
  for (int d = 0; d < rank; d++) {
    doff += dstart[d] * dstr[d];
    soff += sstart[d] * sstr[d];
  }
  arr_copy_strided((char *)dst + doff, dstr, (const char *)src + soff, sstr, rank, box, es);
}

Array *arr_block(const Array *a, const int64_t *start, const int64_t *shape) {
  Array *r = arr_new((DType)a->dt, a->rank, shape);
  int64_t zero[SHM_MAXRANK] = {0};
  arr_copy_box(r->data, r->shape, zero, a->data, a->shape, start, shape, a->rank, dtype_sizes[a->dt]);
  return r;
}

void arr_put_block(Array *dst, const int64_t *start, const Array *src) {
  int64_t zero[SHM_MAXRANK] = {0};
  arr_copy_box(dst->data, dst->shape, start, src->data, src->shape, zero, src->shape, src->rank,
           dtype_sizes[dst->dt]);
}

void arr_drop_dim(Array *a, int d) {
  for (int j = d; j + 1 < a->rank; j++) a->shape[j] = a->shape[j + 1];
  a->rank--;
}
