/*
** conv.c — conv_general_dilated: its shape rule and kernel (see conv.h).
**
** The kernel lays the operands out as (N, spatial..., C) and (spatial...,
** I, O), then, for each group and each batch entry, gathers every
** output position's receptive field into one row of a matrix (im2col:
** kernel positions times input features, zeros where the field reaches
** padding or a dilation hole) and multiplies it by the kernel's (K, O)
** matrix with one gemm, writing the (positions, O) block of the result in
** (N, spatial..., O) layout; a last permutation gives out_spec's layout.
** A 1x1 kernel without strides, dilation or padding needs no gathering:
** the operand's rows are the matrix.
*/
#include "conv.h"

#include <limits.h>
#include "blas.h"
#include "err.h"
#include "mem.h"

#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

/* ---- the rule ---------------------------------------------------------------------- */

static const char *const spec_names[3] = {"lhs_spec", "rhs_spec", "out_spec"};

/* One spec's ints into v (rank r); false if it is not a tuple of ints. */
static bool spec_ints(const PVal *p, int64_t *v, int r) {
  p = pv_unparen((PVal *)p);
  if (p->k != PV_TUPLE && p->k != PV_LIST) return false;
  if (p->n != r) return false;
  for (int i = 0; i < r; i++) {
    const PVal *e = pv_unparen(p->items[i]);
    if (e->k != PV_INT) return false;
    v[i] = e->i;
  }
  return true;
}

/* dimension_numbers into at->l[4]: ConvDimensionNumbers(lhs_spec=...,
   rhs_spec=..., out_spec=...) as JAX prints it, a tuple of the three
   specs, or None; recorded in JAX's form. */
static bool read_specs(RuleCtx *cx, int r, Attrs *at) {
  const char *key = "dimension_numbers";
  int64_t *v = rule_alloc_ints(cx, 3 * r > 0 ? 3 * r : 1);
  PVal *p = rule_get(cx, key);
  PVal *u = p ? pv_unparen(p) : NULL;
  if (!u || u->k == PV_NONE) {
    for (int s = 0; s < 3; s++)
      for (int i = 0; i < r; i++) v[s * r + i] = i;
  } else {
    bool ok = (u->k == PV_CALL || u->k == PV_TUPLE || u->k == PV_LIST) && u->n == 3;
    for (int s = 0; ok && s < 3; s++) {
      PVal *e = u->items[s];
      if (e->k == PV_KW) ok = str_eqc(e->s, spec_names[s]) && spec_ints(e->items[0], v + s * r, r);
      else ok = spec_ints(e, v + s * r, r);
    }
    if (!ok)
      return rule_param_error(cx, key,
                              "%s dimension_numbers must be ConvDimensionNumbers(lhs_spec=(...), rhs_spec=(...), "
                              "out_spec=(...)), each spec %d dimension numbers (the operands' rank)",
                              rule_prim_name(cx), r);
  }
  for (int s = 0; s < 3; s++) {
    uint32_t seen = 0;
    LsBuf lb;
    for (int i = 0; i < r; i++) {
      int64_t d = v[s * r + i];
      if (d < 0 || d >= r || (seen >> d & 1))
        return rule_param_error(cx, key, "%s dimension_numbers %s %s must be a permutation of 0 .. %d",
                                rule_prim_name(cx), spec_names[s], rule_ls_n(&lb, v + s * r, r), r - 1);
      seen |= 1u << d;
    }
  }
  PVal *call = rule_pv(cx, PV_CALL);
  call->s = str_c("ConvDimensionNumbers");
  call->n = 3;
  call->items = (PVal **)arena_alloc(cx->arena, sizeof(PVal *) * 3);
  for (int s = 0; s < 3; s++) {
    PVal *kw = rule_pv(cx, PV_KW);
    kw->s = str_c(spec_names[s]);
    kw->n = 1;
    kw->items = (PVal **)arena_alloc(cx->arena, sizeof(PVal *));
    kw->items[0] = rule_pv_ints(cx, v + s * r, r, PV_TUPLE);
    call->items[s] = kw;
  }
  rule_record(cx, key, call);
  at->l[4].v = v;
  at->l[4].n = 3 * r;
  return true;
}

/* A list of one positive int per spatial dimension (ns); absent or None:
   ones (dflt) or an error (required). */
static bool read_spatial(RuleCtx *cx, const char *key, int ns, bool required, IntList *l) {
  LsBuf lb;
  if (!rule_ints(cx, key, required, l)) return false;
  if (l->n == 0 && ns > 0 && !required) {
    l->v = rule_alloc_ints(cx, ns);
    l->n = ns;
    for (int d = 0; d < ns; d++) l->v[d] = 1;
    rule_set_ints(cx, key, l);
  }
  if (l->n != ns)
    return rule_param_error(cx, key,
                            "conv_general_dilated %s %s has %d entr%s, and the window has %d spatial dimension%s", key,
                            rule_ls(&lb, l), l->n, l->n == 1 ? "y" : "ies", ns, ns == 1 ? "" : "s");
  for (int d = 0; d < ns; d++)
    if (l->v[d] < 1) return rule_param_error(cx, key, "conv_general_dilated %s must be positive, got %s", key, rule_ls(&lb, l));
  return true;
}

/* The result dtype: the operands' (one dtype, weak literals adopt), or
   preferred_element_type when given (as dot_general allows it). */
static bool conv_dtype(RuleCtx *cx, Type *in, int pt, int *rdt) {
  static const int idx[2] = {0, 1};
  int dt = 0;
  if (!rule_unify_dtypes(cx, in, idx, 2, &dt)) return false;
  *rdt = dt;
  if (pt < 0) return true;
  bool in_int = dtype_is_int((DType)dt) || dtype_is_bool((DType)dt), in_fl = dtype_is_float((DType)dt);
  bool p_int = dtype_is_int((DType)pt), p_fl = dtype_is_float((DType)pt);
  bool ok = in_int ? p_int || p_fl : in_fl ? p_fl : pt == dt;
  if (ok && ((in_int && p_int) || (in_fl && p_fl)) && dtype_sizes[pt] < dtype_sizes[dt]) ok = false;
  if (!ok)
    return rule_param_error(cx, "preferred_element_type",
                            "conv_general_dilated preferred_element_type %s does not fit %s inputs (integers may go to "
                            "integers or floats, floats to floats, none narrower)",
                            dtype_names[pt], dtype_names[dt]);
  *rdt = pt;
  return true;
}

/* The group counts against the operands' sizes, with JAX's messages. */
static bool check_groups(RuleCtx *cx, int64_t G, int64_t B, int64_t N, int64_t C, int64_t Ci, int64_t O) {
  const char *p = rule_prim_name(cx);
  if (G < 1) return rule_param_error(cx, "feature_group_count", "%s feature_group_count must be a positive integer, got %lld", p, (long long)G);
  if (B < 1) return rule_param_error(cx, "batch_group_count", "%s batch_group_count must be a positive integer, got %lld", p, (long long)B);
  if (G > 1 && B > 1)
    return rule_error(cx, "At most one of batch_group_count and feature_group_count may be > 1, got batch_group_count=%lld and feature_group_count=%lld",
                      (long long)B, (long long)G);
  if (C % G)
    return rule_error(cx, "%s feature_group_count must divide lhs feature dimension size, but %lld does not divide %lld", p,
                      (long long)G, (long long)C);
  if (C / G != Ci)
    return rule_error(cx, "%s lhs feature dimension size divided by feature_group_count must equal the rhs input feature "
                      "dimension size, but %lld // %lld != %lld", p, (long long)C, (long long)G, (long long)Ci);
  if (O % G)
    return rule_error(cx, "%s rhs output feature dimension size must be a multiple of feature_group_count, but %lld is not a multiple of %lld",
                      p, (long long)O, (long long)G);
  if (N % B)
    return rule_error(cx, "%s batch_group_count must divide lhs batch dimension size, but %lld does not divide %lld", p,
                      (long long)B, (long long)N);
  if (O % B)
    return rule_error(cx, "%s rhs output feature dimension size must be a multiple of batch_group_count, but %lld is not a multiple of %lld",
                      p, (long long)O, (long long)B);
  return true;
}

/* The spatial sizes of the result into out (canonical order). */
static bool conv_spatial(RuleCtx *cx, const Type *L, const Type *R, const Attrs *at, int64_t *sp) {
  int r = L->rank, ns = r - 2;
  const int64_t *ls = at->l[4].v, *rs = ls + r;
  for (int i = 0; i < ns; i++) {
    int64_t n = L->shape[ls[2 + i]], k = R->shape[rs[2 + i]];
    int64_t dn = n > 0 ? (n - 1) * at->l[2].v[i] + 1 : 0, dk = k > 0 ? (k - 1) * at->l[3].v[i] + 1 : 0;
    int64_t padded = dn + at->l[1].v[2 * i] + at->l[1].v[2 * i + 1];
    if (padded < 0)
      return rule_param_error(cx, "padding", "%s padding (%lld, %lld) crops more than spatial dimension %d of lhs holds (%lld)",
                              rule_prim_name(cx), (long long)at->l[1].v[2 * i], (long long)at->l[1].v[2 * i + 1], i,
                              (long long)dn);
    sp[i] = padded < dk ? 0 : (padded - dk) / at->l[0].v[i] + 1;
  }
  return true;
}

bool conv_rule(RARGS) {
  (void)nin;
  TyBuf a, b;
  const Type *L = &in[0], *R = &in[1];
  if (L->rank != R->rank)
    return rule_error(cx, "conv_general_dilated lhs and rhs must have the same number of dimensions, but got %s and %s",
                      rule_ty(&a, L), rule_ty(&b, R));
  if (L->rank < 2)
    return rule_error(cx, "conv_general_dilated needs operands with a batch and a feature dimension (rank 2 or more), got %s",
                      rule_ty(&a, L));
  int r = L->rank, ns = r - 2, pt = -1, rdt = 0;
  if (!rule_int(cx, "batch_group_count", false, 1, &at->i[1])) return false;
  if (!read_specs(cx, r, at)) return false;
  if (!rule_int(cx, "feature_group_count", false, 1, &at->i[0])) return false;
  if (!read_spatial(cx, "lhs_dilation", ns, false, &at->l[2])) return false;
  if (!rule_int_tuples(cx, "padding", true, 2, &at->l[1])) return false;
  if (at->l[1].n != 2 * ns)
    return rule_param_error(cx, "padding", "conv_general_dilated padding has %d (lo, hi) pair%s, and the window has %d spatial dimension%s",
                            at->l[1].n / 2, at->l[1].n == 2 ? "" : "s", ns, ns == 1 ? "" : "s");
  (void)rule_has(cx, "precision");
  if (!rule_dtype(cx, "preferred_element_type", false, -1, &pt)) return false;
  if (!read_spatial(cx, "rhs_dilation", ns, false, &at->l[3])) return false;
  if (!read_spatial(cx, "window_strides", ns, true, &at->l[0])) return false;
  (void)rule_has(cx, "out_sharding");
  if (!conv_dtype(cx, in, pt, &rdt)) return false;
  const int64_t *ls = at->l[4].v, *rs = ls + r, *os = rs + r;
  int64_t N = L->shape[ls[0]], C = L->shape[ls[1]], O = R->shape[rs[0]], Ci = R->shape[rs[1]];
  if (!check_groups(cx, at->i[0], at->i[1], N, C, Ci, O)) return false;
  int64_t sp[SHM_MAXRANK];
  if (!conv_spatial(cx, L, R, at, sp)) return false;
  out->rank = (uint8_t)r;
  out->dt = (uint8_t)rdt;
  out->shape[os[0]] = N / at->i[1];
  out->shape[os[1]] = O;
  for (int i = 0; i < ns; i++) out->shape[os[2 + i]] = sp[i];
  at->dtype = pt;
  return true;
}

double conv_macs_per_output(const Attrs *at, const Type *rhs) {
  int r = rhs->rank;
  const int64_t *rs = at->l[4].v + r;
  double k = (double)rhs->shape[rs[1]];
  for (int i = 2; i < r; i++) k *= (double)rhs->shape[rs[i]];
  return k;
}

/* ---- the kernel --------------------------------------------------------------------- */

/* One convolution's geometry in canonical order. */
typedef struct Geo {
  int ns;
  int64_t N, C, O, Nout, G, B, Cg, Og, ng;
  int64_t S[SHM_MAXRANK], K[SHM_MAXRANK], Y[SHM_MAXRANK];
  int64_t P, Sp, Kp, KC;            /* output positions, input positions, kernel positions, K * Cg */
  int64_t *off[SHM_MAXRANK];        /* [y * K + k]: the input position's offset (in positions) along i, or -1 */
  bool direct;                      /* a 1x1 kernel without strides, dilation or padding */
} Geo;

static void geo_make(Geo *g, const Attrs *at, const Array *Lc, const Array *Rc, const Type *o) {
  int ns = Lc->rank - 2;
  const int64_t *os = at->l[4].v + 2 * Lc->rank;
  g->ns = ns;
  g->N = Lc->shape[0];
  g->C = Lc->shape[ns + 1];
  g->O = Rc->shape[ns + 1];
  g->G = at->i[0];
  g->B = at->i[1];
  g->Nout = g->N / g->B;
  g->ng = g->G > g->B ? g->G : g->B;
  g->Cg = g->C / g->G;
  g->Og = g->O / g->ng;
  g->P = g->Sp = g->Kp = 1;
  g->direct = true;
  int64_t st = 1;
  for (int i = ns - 1; i >= 0; i--) {
    g->S[i] = Lc->shape[1 + i];
    g->K[i] = Rc->shape[i];
    g->Y[i] = o->shape[os[2 + i]];
    g->P *= g->Y[i];
    g->Sp *= g->S[i];
    g->Kp *= g->K[i];
    int64_t n = g->Y[i] * g->K[i];
    g->off[i] = mem_alloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t y = 0; y < g->Y[i]; y++)
      for (int64_t k = 0; k < g->K[i]; k++) {
        int64_t x = y * at->l[0].v[i] + k * at->l[3].v[i] - at->l[1].v[2 * i], ld = at->l[2].v[i], s = -1;
        if (x >= 0 && x % ld == 0 && x / ld < g->S[i]) s = x / ld * st;
        g->off[i][y * g->K[i] + k] = s;
      }
    g->direct &= g->K[i] == 1 && g->S[i] == g->Y[i] && at->l[0].v[i] == 1 && at->l[2].v[i] == 1 &&
                 at->l[1].v[2 * i] == 0;
    st *= g->S[i];
  }
  g->KC = g->Kp * g->Cg;
}

static void geo_free(Geo *g) {
  for (int i = 0; i < g->ns; i++) mem_free(g->off[i]);
}

/* The receptive field of output position y, from spatial dimension i on:
   Cg features per kernel position copied from the image x (base: the
   position's offset so far; -1: in padding, zeros), into dst. */
static char *field(const Geo *g, const int64_t *y, int i, int64_t base, const char *x, char *dst, size_t es) {
  size_t row = (size_t)g->Cg * es;
  if (i == g->ns) {
    if (base < 0) memset(dst, 0, row);
    else memcpy(dst, x + (size_t)base * (size_t)g->C * es, row);
    return dst + row;
  }
  const int64_t *t = g->off[i] + y[i] * g->K[i];
  for (int64_t k = 0; k < g->K[i]; k++) dst = field(g, y, i + 1, base < 0 || t[k] < 0 ? -1 : base + t[k], x, dst, es);
  return dst;
}

/* im2col of rows p0 .. p0+m-1 of one image x (its first feature the
   group's): m rows of KC. */
static void im2col(const Geo *g, const char *x, char *col, size_t es, int64_t p0, int64_t m) {
  int64_t y[SHM_MAXRANK], q = p0;
  for (int i = g->ns - 1; i >= 0; i--) {
    y[i] = q % g->Y[i];
    q /= g->Y[i];
  }
  for (int64_t p = 0; p < m; p++) {
    col = field(g, y, 0, 0, x, col, es);
    for (int i = g->ns - 1; i >= 0; i--) {
      if (++y[i] < g->Y[i]) break;
      y[i] = 0;
    }
  }
}

/* c[M, N] (row pitch ldc) = a[M, K] (pitch lda) b[K, N] (pitch ldb), in the
   compute dtype dt. */
static void gemm(DType dt, int64_t M, int64_t N, int64_t K, const void *a, int64_t lda, const void *b, int64_t ldb,
                 void *c, int64_t ldc) {
  if (dt == DT_F32 || dt == DT_F64) {
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX)
      err_throw("conv_general_dilated: matrix dimensions too large for BLAS");
    if (dt == DT_F32)
      blas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)lda, b, (int)ldb, 0.0f,
                 c, (int)ldc);
    else
      blas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, a, (int)lda, b, (int)ldb, 0.0, c,
                 (int)ldc);
  } else if (dt == DT_I64) {
    const int64_t *x = a, *w = b;
    int64_t *r = c;
    for (int64_t i = 0; i < M; i++) {
      uint64_t *acc = (uint64_t *)(r + i * ldc);
      for (int64_t j = 0; j < N; j++) acc[j] = 0;
      for (int64_t k = 0; k < K; k++) {
        uint64_t u = (uint64_t)x[i * lda + k];
        if (u)
          for (int64_t j = 0; j < N; j++) acc[j] += u * (uint64_t)w[k * ldb + j];
      }
    }
  } else {
    const double *x = a, *w = b;
    double *r = c;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double sr = 0, si = 0;
        for (int64_t k = 0; k < K; k++) {
          const double *p = x + 2 * (i * lda + k), *q = w + 2 * (k * ldb + j);
          sr += p[0] * q[0] - p[1] * q[1];
          si += p[0] * q[1] + p[1] * q[0];
        }
        r[2 * (i * ldc + j)] = sr;
        r[2 * (i * ldc + j) + 1] = si;
      }
  }
}

/* a permuted by perm, in dtype dt. */
static Array *laid_out(Array *a, const int *perm, DType dt) {
  Array *ct = arr_contig(a);
  Array *p = arr_permuted(ct, perm);
  arr_unref(ct);
  if (p->dt == dt) return p;
  Array *c = arr_convert(p, dt);
  arr_unref(p);
  return c;
}

/* Rows of the im2col matrix gathered at a time: enough for gemm to run
   at speed, few enough that they are still in cache when it reads them. */
static int64_t chunk_rows(const Geo *g, size_t es) {
  int64_t rows = (int64_t)((size_t)1 << 20) / (int64_t)(es * (size_t)(g->KC > 0 ? g->KC : 1));
  if (rows < 64) rows = 64;
  return rows < g->P ? rows : g->P;
}

/* The convolution of the canonical operands into the canonical result. */
static void conv_run(const Geo *g, DType dt, const Array *Lc, const Array *Rc, Array *Oc) {
  size_t es = dtype_sizes[dt];
  int64_t rows = chunk_rows(g, es);
  char *col = g->direct ? NULL : mem_alloc(es * (size_t)(rows * g->KC > 0 ? rows * g->KC : 1));
  for (int64_t gi = 0; gi < g->ng; gi++)
    for (int64_t n = 0; n < g->Nout; n++) {
      int64_t nb = g->B > 1 ? gi * g->Nout + n : n, coff = g->G > 1 ? gi * g->Cg : 0;
      const char *x = (const char *)Lc->data + ((size_t)(nb * g->Sp) * (size_t)g->C + (size_t)coff) * es;
      const char *w = (const char *)Rc->data + (size_t)(gi * g->Og) * es;
      char *c = (char *)Oc->data + ((size_t)(n * g->P) * (size_t)g->O + (size_t)(gi * g->Og)) * es;
      if (g->direct) {
        gemm(dt, g->P, g->Og, g->Cg, x, g->C, w, g->O, c, g->O);
        continue;
      }
      for (int64_t p0 = 0; p0 < g->P; p0 += rows) {
        int64_t m = g->P - p0 < rows ? g->P - p0 : rows;
        im2col(g, x, col, es, p0, m);
        gemm(dt, m, g->Og, g->KC, col, g->KC, w, g->O, c + (size_t)(p0 * g->O) * es, g->O);
      }
    }
  mem_free(col);
}

void conv_kernel(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt) {
  (void)nin;
  int r = in[0]->rank, ns = r - 2;
  const int64_t *ls = at->l[4].v, *rs = ls + r, *os = rs + r;
  DType odt = (DType)outt[0].dt;
  DType dt = dtype_is_half(odt) ? DT_F32 : dtype_is_complex(odt) ? DT_C128 : dtype_is_float(odt) ? odt : DT_I64;
  int pl[SHM_MAXRANK], pr[SHM_MAXRANK], po[SHM_MAXRANK];
  pl[0] = (int)ls[0];
  pl[ns + 1] = (int)ls[1];
  pr[ns] = (int)rs[1];
  pr[ns + 1] = (int)rs[0];
  for (int i = 0; i < ns; i++) {
    pl[1 + i] = (int)ls[2 + i];
    pr[i] = (int)rs[2 + i];
  }
  Array *Lc = laid_out(in[0], pl, dt), *Rc = laid_out(in[1], pr, dt);
  Geo g;
  geo_make(&g, at, Lc, Rc, &outt[0]);
  int64_t cshape[SHM_MAXRANK];
  cshape[0] = g.Nout;
  cshape[ns + 1] = g.O;
  for (int i = 0; i < ns; i++) cshape[1 + i] = g.Y[i];
  /* every element is one gemm's (beta 0), unless nothing is summed */
  Array *Oc = g.KC ? arr_new(dt, r, cshape) : arr_zeros(dt, r, cshape);
  if (Oc->size && g.KC) conv_run(&g, dt, Lc, Rc, Oc);
  geo_free(&g);
  arr_unref(Lc);
  arr_unref(Rc);
  /* the result's dimension os[k] is canonical dimension k */
  po[os[0]] = 0;
  po[os[1]] = ns + 1;
  for (int i = 0; i < ns; i++) po[os[2 + i]] = 1 + i;
  Array *res = arr_permuted(Oc, po);
  arr_unref(Oc);
  if (res->dt != odt) {
    Array *c = arr_convert(res, odt);
    arr_unref(res);
    res = c;
  }
  out[0] = res;
}
