/*
** fft.c — the fft primitive: its shape rule and its kernel over FFTW.
**
** The kernel copies the operand into a scratch buffer aligned to 64 bytes,
** transforms it there with a plan made for that buffer, and copies the
** transform into the result: FFTW then sees the same alignment on every
** run and chooses the same codelets, so the bytes do not depend on where
** the allocator placed an array.  Plans are made and destroyed under a
** lock (FFTW's planner is not thread-safe); running them is.  FFTW is
** opened on first use (dynlib.h).
*/
#include <fftw3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "dynlib.h"
#include "err.h"
#include "fft.h"
#include "mem.h"

#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt
#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

enum { FT_FFT, FT_IFFT, FT_RFFT, FT_IRFFT };
static const char *const fft_type_names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};

/* ---- the rule -------------------------------------------------------------------- */

/* The transform a parameter value names: XLA's number, or a name whose last
   dotted part is FFT, IFFT, RFFT or IRFFT; -1 for anything else. */
static int fft_type_of(const PVal *v) {
  if (v->k == PV_INT) return v->i >= 0 && v->i <= 3 ? (int)v->i : -1;
  if (v->k != PV_NAME && v->k != PV_STR) return -1;
  Str s = v->s;
  int dot = s.n;
  while (dot > 0 && s.p[dot - 1] != '.') dot--;
  Str last = {s.p + dot, s.n - dot};
  for (int t = 0; t < 4; t++)
    if (str_eqc(last, fft_type_names[t])) return t;
  return -1;
}

/* fft[fft_type, fft_lengths]: see fft.h.  Fills i[0] = the transform,
   l[0] = fft_lengths. */
bool fft_rule(RARGS) {
  (void)nin;
  TyBuf tb;
  LsBuf lb;
  PVal *v = rule_get(cx, "fft_type");
  if (!v) return rule_missing(cx, "fft_type");
  int t = fft_type_of(pv_unparen(v));
  if (t < 0) {
    PVal *u = pv_unparen(v);
    char got[64];
    if (u->k == PV_INT) snprintf(got, sizeof got, "%lld", (long long)u->i);
    else if (u->k == PV_NAME || u->k == PV_STR) snprintf(got, sizeof got, "%.*s", u->s.n, u->s.p);
    else snprintf(got, sizeof got, "something else");
    return rule_param_error(cx, "fft_type",
                            "fft_type must be FFT, IFFT, RFFT or IRFFT (also FftType.FFT ... or XLA's 0 to 3), got %s",
                            got);
  }
  rule_record(cx, "fft_type", v);
  IntList len;
  if (!rule_ints(cx, "fft_lengths", true, &len)) return false;
  int k = len.n, r = in[0].rank;
  if (k < 1 || k > 3) return rule_param_error(cx, "fft_lengths", "fft_lengths must name 1 to 3 dimensions, got %d", k);
  for (int d = 0; d < k; d++)
    if (len.v[d] <= 0)
      return rule_param_error(cx, "fft_lengths", "fft_lengths must be positive, got %s", rule_ls(&lb, &len));
  if (r < k) return rule_error(cx, "fft of %d dimensions needs an operand of rank %d or more, got %s", k, k,
                               rule_ty(&tb, &in[0]));
  int dt = in[0].dt;
  bool real_in = t == FT_RFFT;
  if (real_in ? (dt != DT_F32 && dt != DT_F64) : (dt != DT_C64 && dt != DT_C128))
    return rule_error(cx, "%s takes %s, got %s%s", fft_type_names[t], real_in ? "f32 or f64" : "c64 or c128",
                      rule_ty(&tb, &in[0]),
                      !real_in && (dt == DT_F32 || dt == DT_F64)
                          ? " (convert_element_type to a complex dtype first, as jnp.fft.fft does, or use RFFT)"
                          : "");
  /* the operand's trailing dimensions: the lengths, the last one n/2 + 1 for IRFFT */
  int64_t want[3];
  bool ok = true;
  for (int d = 0; d < k; d++) {
    want[d] = t == FT_IRFFT && d == k - 1 ? len.v[d] / 2 + 1 : len.v[d];
    ok = ok && in[0].shape[r - k + d] == want[d];
  }
  if (!ok) {
    LsBuf wb;
    return rule_error(cx, "%s with fft_lengths=%s needs trailing dimensions %s, got %s", fft_type_names[t],
                      rule_ls(&lb, &len), rule_ls_n(&wb, want, k), rule_ty(&tb, &in[0]));
  }
  *out = in[0];
  out->weak = false;
  if (t == FT_RFFT) {
    out->dt = dt == DT_F32 ? DT_C64 : DT_C128;
    out->shape[r - 1] = len.v[k - 1] / 2 + 1;
  } else if (t == FT_IRFFT) {
    out->dt = (uint8_t)dtype_real((DType)dt);
    out->shape[r - 1] = len.v[k - 1];
  }
  at->i[0] = t;
  at->l[0] = len;
  return true;
}

/* ---- the kernel ------------------------------------------------------------------ */

static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

/* FFTW's entry points in single (fftwf_) and double (fftw_) precision. */
#define FFTW_FNS(X, P) X(P##plan_many_dft) X(P##plan_many_dft_r2c) X(P##plan_many_dft_c2r) X(P##execute) X(P##destroy_plan)
#define FFTW_PTR(fn) __typeof__(fn) *fn;
static struct { FFTW_FNS(FFTW_PTR, fftwf_) FFTW_FNS(FFTW_PTR, fftw_) } fw;
#undef FFTW_PTR
static DynLib fftw = DYN_LIB_INIT;

static void fw_open(void) {
  static const char *const single[] = {"libfftw3f.so.3", "libfftw3f.so", NULL};
  static const char *const dbl[] = {"libfftw3.so.3", "libfftw3.so", NULL};
  void *hf = dyn_open(single, fftw.why, sizeof fftw.why);
  void *hd = hf ? dyn_open(dbl, fftw.why, sizeof fftw.why) : NULL;
  bool ok = hf && hd;
#define FFTW_SYMF(fn) DYN_SYM(fw, hf, fn, ok, fftw.why, sizeof fftw.why);
#define FFTW_SYMD(fn) DYN_SYM(fw, hd, fn, ok, fftw.why, sizeof fftw.why);
  FFTW_FNS(FFTW_SYMF, fftwf_)
  FFTW_FNS(FFTW_SYMD, fftw_)
#undef FFTW_SYMF
#undef FFTW_SYMD
  fftw.ok = ok;
}

/* FFTW, opened once; a runtime error when it cannot be. */
static void fw_load(void) {
  if (!dyn_load(&fftw, fw_open)) err_throw("fft runs on FFTW: %s", fftw.why);
}

/* The scratch of a transform: where the operand is copied and transformed
   (a), and where an RFFT or IRFFT writes (b), each aligned to 64 bytes,
   in one block from mem_alloc (*base). */
static void scratch(size_t abytes, size_t bbytes, bool apart, void **base, void **a, void **b) {
  size_t pad = (abytes + 63) & ~(size_t)63;
  *base = mem_alloc(pad + (apart ? bbytes : 0) + 64);
  *a = (void *)(((uintptr_t)*base + 63) & ~(uintptr_t)63);
  *b = apart ? (char *)*a + pad : *a;
}

/* fft_run_f / fft_run_d: the transform t of `batch` blocks in single or
   double precision, in the scratch a -> b.  ns/nd are the elements
   (complex or real) of one source and one destination block; n[0..k-1]
   the lengths. */
#define FFT_RUN(SUF, R, P)                                                                             \
  static void fft_run_##SUF(int t, int k, const int *n, int batch, R *a, size_t ns, R *b, size_t nd) {  \
    pthread_mutex_lock(&planner_lock);                                                                 \
    P##plan plan;                                                                                      \
    unsigned fl = FFTW_ESTIMATE;                                                                       \
    if (t == FT_RFFT)                                                                                  \
      plan = fw.P##plan_many_dft_r2c(k, n, batch, a, NULL, 1, (int)ns, (P##complex *)b, NULL, 1, (int)nd, fl); \
    else if (t == FT_IRFFT)                                                                            \
      plan = fw.P##plan_many_dft_c2r(k, n, batch, (P##complex *)a, NULL, 1, (int)ns, b, NULL, 1, (int)nd, fl); \
    else                                                                                               \
      plan = fw.P##plan_many_dft(k, n, batch, (P##complex *)a, NULL, 1, (int)ns, (P##complex *)b, NULL, 1,  \
                              (int)nd, t == FT_FFT ? FFTW_FORWARD : FFTW_BACKWARD, fl);                \
    pthread_mutex_unlock(&planner_lock);                                                               \
    fw.P##execute(plan);                                                                                  \
    pthread_mutex_lock(&planner_lock);                                                                 \
    fw.P##destroy_plan(plan);                                                                             \
    pthread_mutex_unlock(&planner_lock);                                                               \
    if (t == FT_IFFT || t == FT_IRFFT) {                                                               \
      size_t m = nd * (size_t)batch * (t == FT_IFFT ? 2 : 1);                                          \
      R s = (R)1 / (R)nd;                                                                              \
      for (size_t i = 0; i < m; i++) b[i] *= s;                                                        \
    }                                                                                                  \
  }
FFT_RUN(f, float, fftwf_)
FFT_RUN(d, double, fftw_)
#undef FFT_RUN

void fft_kern(KARGS) {
  (void)nin;
  const Array *x = in[0];
  int t = (int)at->i[0], k = (int)at->l[0].n, rank = x->rank;
  int n[3];
  for (int d = 0; d < k; d++) n[d] = (int)at->l[0].v[d];
  /* elements of one transformed block of the operand and of the result */
  int64_t ns = 1, nd = 1;
  for (int d = 0; d < k; d++) {
    ns *= x->shape[rank - k + d];
    nd *= outt[0].shape[rank - k + d];
  }
  int64_t batch = shape_size(rank - k, x->shape);
  if (batch > INT32_MAX || ns > INT32_MAX || nd > INT32_MAX)
    err_throw("fft: %lld transforms of %lld points are more than FFTW's int sizes", (long long)batch,
              (long long)nd);
  if (batch > 0) fw_load();
  size_t es = dtype_sizes[x->dt], rs = dtype_sizes[outt[0].dt];
  size_t sbytes = (size_t)(ns * batch) * es, dbytes = (size_t)(nd * batch) * rs;
  void *base, *a, *b;
  scratch(sbytes, dbytes, t == FT_RFFT || t == FT_IRFFT, &base, &a, &b);
  err_defer(mem_free, base);
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  if (batch > 0) {
    memcpy(a, x->data, sbytes);
    if (x->dt == DT_F32 || x->dt == DT_C64)
      fft_run_f(t, k, n, (int)batch, a, (size_t)ns, b, (size_t)nd);
    else
      fft_run_d(t, k, n, (int)batch, a, (size_t)ns, b, (size_t)nd);
    memcpy(r->data, b, dbytes);
  }
  err_undefer(base);
  mem_free(base);
  out[0] = r;
}
