/*
** dot.c — dot_general: its shape rule and its kernel.
**
** The operands are laid out as (batch, free, contract) blocks by a
** permutation (arr_permuted, a copy only when needed), then multiplied with
** OpenBLAS gemm per batch for floats (blas.c), exact loops otherwise.
*/
#include <limits.h>
#include "blas.h"
#include "dot.h"
#include "err.h"

/* Checks one operand's contracting and batch dimensions: in range and
   distinct.  `side` is "lhs" or "rhs". */
static bool check_dot_dims(RuleCtx *cx, const char *side, const Type *t, const IntList *c,
                           const IntList *b) {
  TyBuf tb;
  LsBuf lb;
  uint32_t seen = 0;
  for (int w = 0; w < 2; w++) {
    const IntList *l = w ? b : c;
    for (int i = 0; i < l->n; i++) {
      int64_t d = l->v[i];
      if (d < 0 || d >= t->rank)
        return rule_error(cx, "%s %s %s dimensions %s out of range for %s", rule_prim_name(cx), side,
                          w ? "batch" : "contracting", rule_ls(&lb, l), rule_ty(&tb, t));
      if (seen & (1u << d))
        return rule_error(cx, "%s %s dimension %lld of %s is named twice in the dimension numbers",
                          rule_prim_name(cx), side, (long long)d, rule_ty(&tb, t));
      seen |= 1u << d;
    }
  }
  return true;
}

/* dot_general[dimension_numbers=((lc, rc), (lb, rb)), precision=None,
   preferred_element_type=None, out_sharding=None] lhs rhs: equal dtypes
   (weak literals adopt); paired contracting and batch dimensions of equal
   sizes.  The result's dimensions are the batch dimensions, then lhs's
   free dimensions, then rhs's (in order); its dtype is
   preferred_element_type when given (integer inputs may go to a wider
   integer or to a float, floats to a float no narrower).
   Fills l[0] = lhs contracting, l[1] = rhs contracting, l[2] = lhs batch,
   l[3] = rhs batch, dtype = preferred_element_type (-1 for None). */
/* The type of a dot_general (or pdot) of in[0] and in[1] with dimension
   numbers dn (lhs contracting, rhs contracting, lhs batch, rhs batch) and
   preferred element type pt (-1: none); fills at as dot_rule documents. */
static bool dot_type(RuleCtx *cx, IntList dn[4], int pt, Type *in, Attrs *at, Type *out) {
  static const int idx[2] = {0, 1};
  int dt = 0;
  TyBuf a, b;
  LsBuf l1, l2;
  if (!rule_unify_dtypes(cx, in, idx, 2, &dt)) return false;
  const Type *L = &in[0], *R = &in[1];
  if (dn[0].n != dn[1].n)
    return rule_error(cx, "%s needs as many lhs as rhs contracting dimensions, got %s and %s", rule_prim_name(cx),
                      rule_ls(&l1, &dn[0]), rule_ls(&l2, &dn[1]));
  if (dn[2].n != dn[3].n)
    return rule_error(cx, "%s needs as many lhs as rhs batch dimensions, got %s and %s", rule_prim_name(cx),
                      rule_ls(&l1, &dn[2]), rule_ls(&l2, &dn[3]));
  if (!check_dot_dims(cx, "lhs", L, &dn[0], &dn[2])) return false;
  if (!check_dot_dims(cx, "rhs", R, &dn[1], &dn[3])) return false;
  for (int w = 0; w < 2; w++) {
    const IntList *ll = &dn[w ? 2 : 0], *rl = &dn[w ? 3 : 1];
    for (int i = 0; i < ll->n; i++)
      if (L->shape[ll->v[i]] != R->shape[rl->v[i]])
        return rule_error(cx, "%s %s dimensions have different sizes: %s and %s (%lld vs %lld)",
                          rule_prim_name(cx), w ? "batch" : "contracting", rule_ty(&a, L), rule_ty(&b, R),
                          (long long)L->shape[ll->v[i]], (long long)R->shape[rl->v[i]]);
  }
  int rdt = dt;
  if (pt >= 0) {
    bool in_int = dtype_is_int((DType)dt), in_fl = dtype_is_float((DType)dt);
    bool p_int = dtype_is_int((DType)pt), p_fl = dtype_is_float((DType)pt);
    if ((in_int && !p_int && !p_fl) || (in_fl && !p_fl))
      return rule_param_error(cx, "preferred_element_type",
                              "%s preferred_element_type %s is incompatible with %s inputs "
                              "(integers may go to integers or floats, floats to floats)",
                              rule_prim_name(cx), dtype_names[pt], dtype_names[dt]);
    if (((in_int && p_int) || (in_fl && p_fl)) && dtype_sizes[pt] < dtype_sizes[dt])
      return rule_param_error(cx, "preferred_element_type",
                              "%s preferred_element_type %s must not be narrower than the input dtype %s",
                              rule_prim_name(cx), dtype_names[pt], dtype_names[dt]);
    rdt = pt;
  }
  int rank = L->rank + R->rank - 2 * dn[0].n - dn[2].n;
  if (!rule_check_rank(cx, rank)) return false;
  int r = 0;
  for (int i = 0; i < dn[2].n; i++) out->shape[r++] = L->shape[dn[2].v[i]];
  for (int s = 0; s < 2; s++) {
    const Type *t = s ? R : L;
    const IntList *c = &dn[s], *bt = &dn[2 + s];
    for (int d = 0; d < t->rank; d++) {
      bool used = false;
      for (int i = 0; i < c->n; i++) used |= c->v[i] == d;
      for (int i = 0; i < bt->n; i++) used |= bt->v[i] == d;
      if (!used) out->shape[r++] = t->shape[d];
    }
  }
  out->rank = (uint8_t)r;
  out->dt = (uint8_t)rdt;
  for (int k = 0; k < 4; k++) at->l[k] = dn[k];
  at->dtype = pt;
  return true;
}

bool dot_rule(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  IntList dn[4];
  int pt = -1;
  memset(dn, 0, sizeof dn);
  if (!rule_dimnums(cx, "dimension_numbers", dn)) return false;
  (void)rule_has(cx, "precision");
  if (!rule_dtype(cx, "preferred_element_type", false, -1, &pt)) return false;
  PVal *osh = rule_get(cx, "out_sharding");     /* kept for show: where JAX lays the result out */
  if (osh) rule_record(cx, "out_sharding", osh);
  return dot_type(cx, dn, pt, in, at, out);
}

/* pdot[axis_name, pos_contract=((), ()), pos_batch=((), ()), precision,
   preferred_element_type] x y: lax.pdot, the dot_general of x and y over
   the positional dimension numbers, summed over the named axes
   axis_name.  Fills what dot_rule fills, and the axes. */
bool dot_rule_pdot(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  IntList dn[4];
  int pt = -1;
  memset(dn, 0, sizeof dn);
  if (!rule_axes(cx, "axis_name", true, at)) return false;
  if (!rule_int_list_pair(cx, "pos_contract", dn) || !rule_int_list_pair(cx, "pos_batch", dn + 2)) return false;
  (void)rule_has(cx, "precision");
  if (!rule_dtype(cx, "preferred_element_type", false, -1, &pt)) return false;
  return dot_type(cx, dn, pt, in, at, out);
}

/* The free dimensions of a rank-`rank` operand (neither contracting nor
   batch), ascending, into fr; returns how many. */
static int free_dims(int rank, const IntList *c, const IntList *b, int *fr) {
  int n = 0;
  for (int d = 0; d < rank; d++) {
    bool used = false;
    for (int i = 0; i < c->n; i++) used |= c->v[i] == d;
    for (int i = 0; i < b->n; i++) used |= b->v[i] == d;
    if (!used) fr[n++] = d;
  }
  return n;
}

/* The permutation made of three runs of dimensions x, y, z, into p; true
   if it is the identity. */
static bool make_perm(int *p, const int *x, int nx, const int *y, int ny, const int *z, int nz) {
  int k = 0;
  bool id = true;
  for (int i = 0; i < nx; i++) p[k++] = x[i];
  for (int i = 0; i < ny; i++) p[k++] = y[i];
  for (int i = 0; i < nz; i++) p[k++] = z[i];
  for (int i = 0; i < k; i++) id &= p[i] == i;
  return id;
}

/* An IntList of dimensions as ints; returns the count. */
static int dims_of(const IntList *l, int *v) {
  for (int i = 0; i < l->n; i++) v[i] = (int)l->v[i];
  return l->n;
}

/* An operand laid out for gemm: if its dimensions are already in order
   `p1` it is used as is, if in order `p2` as is but transposed, otherwise
   it is permuted into order p1. */
static Array *gemm_layout(Array *a, const int *p1, bool id1, bool id2, bool *trans) {
  *trans = false;
  if (id1) return arr_ref(a);
  if (id2) {
    *trans = true;
    return arr_ref(a);
  }
  return arr_permuted(a, p1);
}

/* Operand x of a dot_general computing in dt, converted to dt.  A pitched
   view (array.h) stays as it is when gemm reads it in place, its pitch the
   leading dimension: a float matrix of dt with one contracting and one
   free dimension and no batch (so that its rows are the matrix's rows, or
   its columns transposed); otherwise it is copied first. */
static Array *dot_operand(Array *x, const IntList *contract, const IntList *batch, DType dt) {
  bool in_place = x->rank == 2 && contract->n == 1 && batch->n == 0 && x->dt == dt && dtype_is_float(dt) &&
                  x->pitch <= INT_MAX;
  Array *c = x->pitch && !in_place ? arr_contig(x) : arr_ref(x);
  if (c->dt == dt) return c;
  Array *r = arr_convert(c, dt);
  arr_unref(c);
  return r;
}

/* Complex dot_general on (batch, M, K) and (batch, K, N) layouts: sums of
   products in double, rounded once to the result's parts. */
static void dot_complex(const Array *A, const Array *B, const int *p1, const int *q1, int64_t nb, int64_t M,
                        int64_t N, int64_t K, Array *r) {
  Array *Ap = arr_permuted((Array *)A, p1), *Bp = arr_permuted((Array *)B, q1);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double sr = 0, si = 0;
        for (int64_t k = 0; k < K; k++) {
          double ar, ai, br, bi;
          arr_getc(Ap, (b * M + i) * K + k, &ar, &ai);
          arr_getc(Bp, (b * K + k) * N + j, &br, &bi);
          sr += ar * br - ai * bi;
          si += ar * bi + ai * br;
        }
        arr_setc(r, (b * M + i) * N + j, sr, si);
      }
  arr_unref(Ap);
  arr_unref(Bp);
}

/* dot_general: both operands converted to the result dtype and laid out
   as (batch, M, K) and (batch, K, N) blocks; then OpenBLAS sgemm/dgemm per
   batch for floats, and exact 64-bit loops for integers (wrapping to the
   dtype) and bools (or of ands). */
void dot_kernel(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)nin;
  const IntList *lc = &at->l[0], *rc = &at->l[1], *lb = &at->l[2], *rb = &at->l[3];
  /* bf16 and f16 compute in f32 (inputs exact), the result rounded once */
  DType dt = dtype_is_half((DType)outt[0].dt) ? DT_F32 : (DType)outt[0].dt;
  Array *A = dot_operand(in[0], lc, lb, dt), *B = dot_operand(in[1], rc, rb, dt);
  Array *r = arr_new(dt, outt[0].rank, outt[0].shape);
  int lf[SHM_MAXRANK], rf[SHM_MAXRANK], p1[SHM_MAXRANK], p2[SHM_MAXRANK], q1[SHM_MAXRANK],
      q2[SHM_MAXRANK];
  int nlf = free_dims(A->rank, lc, lb, lf), nrf = free_dims(B->rank, rc, rb, rf);
  int64_t nb = 1, M = 1, N = 1, K = 1;
  for (int i = 0; i < lb->n; i++) nb *= A->shape[lb->v[i]];
  for (int i = 0; i < nlf; i++) M *= A->shape[lf[i]];
  for (int i = 0; i < nrf; i++) N *= B->shape[rf[i]];
  for (int i = 0; i < lc->n; i++) K *= A->shape[lc->v[i]];
  int vlc[SHM_MAXRANK], vrc[SHM_MAXRANK], vlb[SHM_MAXRANK], vrb[SHM_MAXRANK];
  int nc = dims_of(lc, vlc), nbd = dims_of(lb, vlb);
  dims_of(rc, vrc);
  dims_of(rb, vrb);
  bool pid1 = make_perm(p1, vlb, nbd, lf, nlf, vlc, nc);   /* (batch, M, K) */
  bool pid2 = make_perm(p2, vlb, nbd, vlc, nc, lf, nlf);   /* (batch, K, M) */
  bool qid1 = make_perm(q1, vrb, nbd, vrc, nc, rf, nrf);   /* (batch, K, N) */
  bool qid2 = make_perm(q2, vrb, nbd, rf, nrf, vrc, nc);   /* (batch, N, K) */
  if (r->size == 0 || K == 0) {
    memset(r->data, 0, arr_nbytes(r));
  } else if (dtype_is_complex(dt)) {
    dot_complex(A, B, p1, q1, nb, M, N, K, r);
  } else if (dtype_is_float(dt)) {
    bool ta, tb;
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
      err_throw("dot_general: matrix dimensions too large for BLAS");
    Array *Ap = gemm_layout(A, p1, pid1, pid2, &ta), *Bp = gemm_layout(B, q1, qid1, qid2, &tb);
    enum CBLAS_TRANSPOSE ca = ta ? CblasTrans : CblasNoTrans, cb = tb ? CblasTrans : CblasNoTrans;
    blasint m = (blasint)M, n = (blasint)N, k = (blasint)K;
    blasint lda = Ap->pitch ? (blasint)Ap->pitch : ta ? m : k, ldb = Bp->pitch ? (blasint)Bp->pitch : tb ? k : n;
    for (int64_t b = 0; b < nb; b++) {
      if (dt == DT_F32)
        blas_sgemm(CblasRowMajor, ca, cb, m, n, k, 1.0f, (const float *)Ap->data + b * M * K, lda,
                    (const float *)Bp->data + b * K * N, ldb, 0.0f, (float *)r->data + b * M * N, n);
      else
        blas_dgemm(CblasRowMajor, ca, cb, m, n, k, 1.0, (const double *)Ap->data + b * M * K, lda,
                    (const double *)Bp->data + b * K * N, ldb, 0.0, (double *)r->data + b * M * N, n);
    }
    arr_unref(Ap);
    arr_unref(Bp);
  } else {
    Array *Ap = arr_permuted(A, p1), *Bp = arr_permuted(B, q1);
    Array *Ai = arr_convert(Ap, DT_I64), *Bi = arr_convert(Bp, DT_I64);
    const int64_t *x = Ai->data, *y = Bi->data;
    uint64_t *acc = mem_alloc(sizeof(uint64_t) * (size_t)N);
    for (int64_t b = 0; b < nb; b++)
      for (int64_t i = 0; i < M; i++) {
        memset(acc, 0, sizeof(uint64_t) * (size_t)N);
        for (int64_t k = 0; k < K; k++) {
          uint64_t u = (uint64_t)x[(b * M + i) * K + k];
          const int64_t *row = y + (b * K + k) * N;
          if (u)
            for (int64_t j = 0; j < N; j++) acc[j] += u * (uint64_t)row[j];
        }
        for (int64_t j = 0; j < N; j++) arr_seti(r, (b * M + i) * N + j, (int64_t)acc[j]);
      }
    mem_free(acc);
    arr_unref(Ai);
    arr_unref(Bi);
    arr_unref(Ap);
    arr_unref(Bp);
  }
  arr_unref(A);
  arr_unref(B);
  if (r->dt != outt[0].dt) {
    Array *h = arr_convert(r, (DType)outt[0].dt);
    arr_unref(r);
    r = h;
  }
  out[0] = r;
}

