/*
** transpose_win.c — the transposes of the window and convolution
** primitives (the `transpose` column of their prims.def rows), as JAX
** writes them in jax/_src/lax/windowed_reductions.py and convolution.py:
** reduce_window_sum's is a pad and a reduce_window_sum; select_and_gather_add
** and select_and_scatter_add transpose into each other; conv_general_dilated's
** transposes in lhs and in rhs are convolutions
** (_conv_general_dilated_transpose_lhs and _rhs), groups moved between the
** kernel's feature dimensions by reshapes as JAX moves them.
*/
#include <math.h>
#include "transpose_int.h"

static IrParam kv(const char *k, PVal *v) {
  IrParam p = {k, v};
  return p;
}

/* 1 + s (d - 1), at least 0: a size dilated by s (JAX's dilate_dim). */
static int64_t dilate_dim(int64_t d, int64_t s) {
  int64_t r = 1 + s * (d - 1);
  return r > 0 ? r : 0;
}

/* JAX's _conv_general_vjp_lhs_padding for spatial dimension i: the
   padding that makes the transposed window cover the operand. */
static void vjp_lhs_pad(int64_t in, int64_t win, int64_t stride, int64_t out, int64_t lo, int64_t ld, int64_t rd,
                        int64_t *before, int64_t *after) {
  int64_t l = dilate_dim(in, ld), w = dilate_dim(win, rd), o = dilate_dim(out, stride);
  *before = w - lo - 1;
  *after = l + w - 1 - o - *before;
}

/* A tuple of (lo, hi) or (lo, hi, interior) tuples. */
static PVal *pairs_pv(Builder *B, const int64_t *v, int n, int width) {
  PVal **items = bld_alloc(B, sizeof(PVal *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) items[i] = bld_pv_ints(B, v + width * i, width);
  return bld_pv_tuple(B, items, n);
}

/* reduce_window_sum's transpose, JAX's: the cotangent padded (its
   elements window_strides apart), then summed over windows placed
   base_dilation apart. */
bool tr_reduce_window_sum(TrCtx *cx) {
  if (cx->checking) return true;
  const Attrs *at = cx->st->at;
  const Type *t = tr_in_type(cx, 0), *o = &cx->st->out[0]->t;
  int r = t->rank;
  Builder *B = tr_builder(cx);
  int64_t cfg[3 * SHM_MAXRANK], zero[2 * SHM_MAXRANK] = {0}, ones[SHM_MAXRANK];
  for (int d = 0; d < r; d++) {
    vjp_lhs_pad(t->shape[d], at->l[0].v[d], at->l[1].v[d], o->shape[d], at->l[2].v[2 * d], at->l[3].v[d],
                at->l[4].v[d], &cfg[3 * d], &cfg[3 * d + 1]);
    cfg[3 * d + 2] = at->l[1].v[d] - 1;
    ones[d] = 1;
  }
  IrParam pp[1] = {kv("padding_config", pairs_pv(B, cfg, r, 3))};
  IrAtom in[2] = {tr_ct(cx, 0), tr_lit(cx, o, 0)};
  IrAtom padded = tr_emit1(cx, P_PAD, pp, 1, in, 2);
  IrParam ps[5] = {kv("base_dilation", bld_pv_ints(B, ones, r)), kv("padding", pairs_pv(B, zero, r, 2)),
                   kv("window_dilation", bld_pv_ints(B, at->l[4].v, r)),
                   kv("window_dimensions", bld_pv_ints(B, at->l[0].v, r)),
                   kv("window_strides", bld_pv_ints(B, at->l[3].v, r))};
  tr_give(cx, 0, tr_emit1(cx, P_REDUCE_WINDOW_SUM, ps, 5, &padded, 1));
  return true;
}

/* The selecting operand (1) of select_and_gather_add and
   select_and_scatter_add must be a constant. */
static bool select_const(TrCtx *cx) {
  if (cx->lin_in[1])
    return tr_error(cx, "%s is not linear in the operand it selects by", prim_table[cx->st->prim].name);
  return true;
}

/* select_and_scatter_add's transpose: select_and_gather_add of the
   cotangent without dilations. */
bool tr_select_and_scatter_add(TrCtx *cx) {
  if (cx->checking) return select_const(cx);
  const Attrs *at = cx->st->at;
  int r = tr_in_type(cx, 1)->rank;
  Builder *B = tr_builder(cx);
  int64_t ones[SHM_MAXRANK];
  for (int d = 0; d < r; d++) ones[d] = 1;
  IrParam ps[6] = {kv("base_dilation", bld_pv_ints(B, ones, r)), kv("padding", rule_stmt_param(cx->st, "padding")),
                   kv("select_prim", rule_stmt_param(cx->st, "select_prim")),
                   kv("window_dilation", bld_pv_ints(B, ones, r)),
                   kv("window_dimensions", bld_pv_ints(B, at->l[0].v, r)),
                   kv("window_strides", bld_pv_ints(B, at->l[1].v, r))};
  IrAtom in[2] = {tr_ct(cx, 0), tr_in(cx, 1)};
  tr_give(cx, 0, tr_emit1(cx, P_SELECT_AND_GATHER_ADD, ps, 6, in, 2));
  return true;
}

/* select_and_gather_add's transpose, JAX's: select_and_scatter_add into
   the operand (padded with the selection's identity between its elements
   when base_dilation is not 1, and the result sliced back); window
   dilation has no transpose in JAX either. */
bool tr_select_and_gather_add(TrCtx *cx) {
  const Attrs *at = cx->st->at;
  const Type *x = tr_in_type(cx, 1);
  int r = x->rank;
  bool based = false;
  for (int d = 0; d < r; d++) {
    if (at->l[4].v[d] != 1)
      return tr_error(cx, "select_and_gather_add (max pooling's derivative) with window_dilation has no transpose, "
                      "as in JAX");
    based |= at->l[3].v[d] != 1;
  }
  if (cx->checking) return select_const(cx);
  Builder *B = tr_builder(cx);
  IrAtom op = tr_in(cx, 1);
  if (based) {
    int64_t cfg[3 * SHM_MAXRANK] = {0};
    for (int d = 0; d < r; d++) cfg[3 * d + 2] = at->l[3].v[d] - 1;
    double f = at->i[0] ? INFINITY : -INFINITY;
    if (!dtype_is_float((DType)x->dt)) {
      double lo = 0, hi = 0;
      if (x->dt == DT_BOOL) hi = 1;
      else if (x->dt == DT_U64) hi = -1;              /* all ones */
      else if (dtype_is_unsigned((DType)x->dt)) hi = ldexp(1, 8 * dtype_sizes[x->dt]) - 1;
      else lo = -ldexp(1, 8 * dtype_sizes[x->dt] - 1), hi = -lo - 1;
      f = at->i[0] ? hi : lo;
    }
    IrParam pp[1] = {kv("padding_config", pairs_pv(B, cfg, r, 3))};
    IrAtom in[2] = {op, tr_lit(cx, x, f)};
    op = tr_emit1(cx, P_PAD, pp, 1, in, 2);
  }
  IrParam ps[4] = {kv("padding", rule_stmt_param(cx->st, "padding")), kv("select_prim", rule_stmt_param(cx->st, "select_prim")),
                   kv("window_dimensions", bld_pv_ints(B, at->l[0].v, r)),
                   kv("window_strides", bld_pv_ints(B, at->l[1].v, r))};
  IrAtom in[2] = {tr_ct(cx, 0), op};
  IrAtom res = tr_emit1(cx, P_SELECT_AND_SCATTER_ADD, ps, 4, in, 2);
  if (based) {
    int64_t st[SHM_MAXRANK] = {0};
    IrParam sp[3] = {kv("start_indices", bld_pv_ints(B, st, r)), kv("limit_indices", bld_pv_ints(B, res.t.shape, r)),
                     kv("strides", bld_pv_ints(B, at->l[3].v, r))};
    res = tr_emit1(cx, P_SLICE, sp, 3, &res, 1);
  }
  tr_give(cx, 0, res);
  return true;
}

/* A conv_general_dilated's parameters, as its rule decoded them. */
typedef struct ConvP {
  int r, ns;
  int64_t spec[3][SHM_MAXRANK];    /* lhs, rhs, out */
  int64_t G, B;
} ConvP;

static void conv_params(const IrStmt *st, ConvP *p) {
  const Attrs *at = st->at;
  p->r = st->in[0].t.rank;
  p->ns = p->r - 2;
  for (int s = 0; s < 3; s++)
    for (int i = 0; i < p->r; i++) p->spec[s][i] = at->l[4].v[s * p->r + i];
  p->G = at->i[0];
  p->B = at->i[1];
}

/* The shape entries shape[spec[2..]] (the spatial sizes). */
static void spatial_of(const ConvP *p, const Type *t, const int64_t *spec, int64_t *out) {
  for (int i = 0; i < p->ns; i++) out[i] = t->shape[spec[2 + i]];
}

/* conv_general_dilated[...] a b with the parameters given. */
static IrAtom emit_conv(TrCtx *cx, IrAtom a, IrAtom b, const int64_t *const spec[3], int r, const int64_t *strides,
                        const int64_t *pad, const int64_t *ld, const int64_t *rd, int64_t G, int64_t Bg) {
  Builder *B = tr_builder(cx);
  int ns = r - 2;
  PVal *specs[3];
  for (int s = 0; s < 3; s++) specs[s] = bld_pv_ints(B, spec[s], r);
  PVal *none = bld_pv_name(B, "None");
  none->k = PV_NONE;
  IrParam ps[9] = {kv("batch_group_count", bld_pv_int(B, Bg)), kv("dimension_numbers", bld_pv_tuple(B, specs, 3)),
                   kv("feature_group_count", bld_pv_int(B, G)), kv("lhs_dilation", bld_pv_ints(B, ld, ns)),
                   kv("padding", pairs_pv(B, pad, ns, 2)), kv("precision", none),
                   kv("preferred_element_type", none), kv("rhs_dilation", bld_pv_ints(B, rd, ns)),
                   kv("window_strides", bld_pv_ints(B, strides, ns))};
  IrAtom in[2] = {a, b};
  return tr_emit1(cx, P_CONV_GENERAL_DILATED, ps, 9, in, 2);
}

/* x converted to dtype dt (x itself when it has it). */
static IrAtom to_dtype(TrCtx *cx, IrAtom x, int dt) {
  if (x.t.dt == dt) return x;
  IrParam ps[1] = {kv("new_dtype", bld_pv_name(tr_builder(cx), dtype_names[dt]))};
  return tr_emit1(cx, P_CONVERT_ELEMENT_TYPE, ps, 1, &x, 1);
}

/* JAX's _reshape_axis_out_of: dimension src split into (n, size / n). */
static IrAtom axis_out_of(TrCtx *cx, int src, int64_t n, IrAtom x) {
  int64_t sh[SHM_MAXRANK];
  int r = x.t.rank, k = 0;
  for (int d = 0; d < r; d++) {
    if (d == src) {
      sh[k++] = n;
      sh[k++] = x.t.shape[d] / n;
    } else sh[k++] = x.t.shape[d];
  }
  IrParam ps[1] = {kv("new_sizes", bld_pv_ints(tr_builder(cx), sh, k))};
  return tr_emit1(cx, P_RESHAPE, ps, 1, &x, 1);
}

/* JAX's _reshape_axis_into: dimension src moved before dimension dst (as
   numbered without src) and merged into it. */
static IrAtom axis_into(TrCtx *cx, int src, int dst, IrAtom x) {
  int64_t perm[SHM_MAXRANK], sh[SHM_MAXRANK];
  int r = x.t.rank, k = 0;
  for (int d = 0; d < r; d++)
    if (d != src) perm[k++] = d;
  memmove(perm + dst + 1, perm + dst, sizeof(int64_t) * (size_t)(k - dst));
  perm[dst] = src;
  k = 0;
  for (int d = 0; d < r; d++)
    if (d != src) sh[k++] = x.t.shape[d];
  sh[dst] *= x.t.shape[src];
  Builder *B = tr_builder(cx);
  IrParam tp[1] = {kv("permutation", bld_pv_ints(B, perm, r))};
  IrAtom t = tr_emit1(cx, P_TRANSPOSE, tp, 1, &x, 1);
  IrParam rp[1] = {kv("new_sizes", bld_pv_ints(B, sh, r - 1))};
  return tr_emit1(cx, P_RESHAPE, rp, 1, &t, 1);
}

/* JAX's _conv_general_dilated_transpose_lhs: the cotangent convolved with
   the kernel reversed in space, its features swapped, strides and lhs
   dilation exchanged. */
static IrAtom conv_tr_lhs(TrCtx *cx, const ConvP *p, IrAtom g, IrAtom rhs) {
  const Attrs *at = cx->st->at;
  const Type *L = tr_in_type(cx, 0);
  Builder *B = tr_builder(cx);
  int64_t G = p->G, Ssz[SHM_MAXRANK], Ksz[SHM_MAXRANK], Ysz[SHM_MAXRANK], pad[2 * SHM_MAXRANK];
  int64_t trhs[SHM_MAXRANK];
  spatial_of(p, L, p->spec[0], Ssz);
  spatial_of(p, &rhs.t, p->spec[1], Ksz);
  spatial_of(p, &g.t, p->spec[2], Ysz);
  memcpy(trhs, p->spec[1], sizeof(int64_t) * (size_t)p->r);
  trhs[0] = p->spec[1][1];
  trhs[1] = p->spec[1][0];
  int64_t ng = p->G > 1 ? p->G : p->B;
  if (ng > 1) {
    rhs = axis_out_of(cx, (int)p->spec[1][0], ng, rhs);
    rhs = axis_into(cx, (int)p->spec[1][0], (int)p->spec[1][1], rhs);
    G = ng;
  }
  for (int i = 0; i < p->ns; i++)
    vjp_lhs_pad(Ssz[i], Ksz[i], at->l[0].v[i], Ysz[i], at->l[1].v[2 * i], at->l[2].v[i], at->l[3].v[i], &pad[2 * i],
                &pad[2 * i + 1]);
  IrParam rp[1] = {kv("dimensions", bld_pv_ints(B, p->spec[1] + 2, p->ns))};
  IrAtom rev = p->ns ? tr_emit1(cx, P_REV, rp, 1, &rhs, 1) : rhs;
  rev = to_dtype(cx, rev, g.t.dt);
  const int64_t *spec[3] = {p->spec[2], trhs, p->spec[0]};
  IrAtom out = emit_conv(cx, g, rev, spec, p->r, at->l[2].v, pad, at->l[0].v, at->l[3].v, G, 1);
  out = to_dtype(cx, out, L->dt);
  if (p->B > 1) {
    out = axis_out_of(cx, (int)p->spec[0][1], p->B, out);
    out = axis_into(cx, (int)p->spec[0][1], (int)p->spec[0][0], out);
  }
  return out;
}

/* JAX's _conv_general_dilated_transpose_rhs: the operand convolved with
   the cotangent, batch and feature roles exchanged (feature groups become
   batch groups and back), strides and rhs dilation exchanged. */
static IrAtom conv_tr_rhs(TrCtx *cx, const ConvP *p, IrAtom g, IrAtom lhs) {
  const Attrs *at = cx->st->at;
  const Type *R = tr_in_type(cx, 1);
  if (type_size(&g.t) == 0) return bld_zeros(tr_builder(cx), R);
  int64_t Ssz[SHM_MAXRANK], Ksz[SHM_MAXRANK], Ysz[SHM_MAXRANK], pad[2 * SHM_MAXRANK], tsp[3][SHM_MAXRANK];
  spatial_of(p, &lhs.t, p->spec[0], Ssz);
  spatial_of(p, R, p->spec[1], Ksz);
  spatial_of(p, &g.t, p->spec[2], Ysz);
  for (int s = 0; s < 3; s++) {
    memcpy(tsp[s], p->spec[s], sizeof(int64_t) * (size_t)p->r);
    tsp[s][0] = p->spec[s][1];
    tsp[s][1] = p->spec[s][0];
  }
  for (int i = 0; i < p->ns; i++) {
    int64_t l = dilate_dim(Ssz[i], at->l[2].v[i]), w = dilate_dim(Ksz[i], at->l[3].v[i]),
            o = dilate_dim(Ysz[i], at->l[0].v[i]), lo = at->l[1].v[2 * i];
    pad[2 * i] = lo;
    pad[2 * i + 1] = (o - l) + (w - lo - 1);
  }
  lhs = to_dtype(cx, lhs, g.t.dt);
  const int64_t *spec[3] = {tsp[0], tsp[2], tsp[1]};
  IrAtom out = emit_conv(cx, lhs, g, spec, p->r, at->l[3].v, pad, at->l[2].v, at->l[0].v, p->B, p->G);
  return to_dtype(cx, out, R->dt);
}

bool tr_conv_general_dilated(TrCtx *cx) {
  if (cx->checking) {
    if (cx->lin_in[0] && cx->lin_in[1]) return tr_error(cx, "conv_general_dilated of two linear values is not linear");
    return true;
  }
  ConvP p;
  conv_params(cx->st, &p);
  IrAtom g = tr_ct(cx, 0);
  if (cx->lin_in[0]) tr_give(cx, 0, conv_tr_lhs(cx, &p, g, tr_in(cx, 1)));
  else tr_give(cx, 1, conv_tr_rhs(cx, &p, g, tr_in(cx, 0)));
  return true;
}
