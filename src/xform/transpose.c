/*
** transpose.c — linear transposition of checked functions.
*/
#include <stdarg.h>
#include <stdio.h>
#include "diag.h"
#include "prims.h"
#include "transpose_int.h"

typedef struct Tr {
  IrProg *P;
  Builder *B;
  IrFunc *f;
  Span where;
  bool *lin;          /* by slot of f: depends linearly on the linear parameters */
  IrAtom *prim;       /* by slot of f: the value in the transpose (non-linear) */
  IrAtom *ct;         /* by slot of f: accumulated cotangent */
  bool *has;
  bool *zero;         /* by slot of f: a constant known to be zero (linear in nothing) */
  bool failed;
} Tr;


/* ---- the rules: the transpose column of prims.def ---------------------------- */
#define TR_RULES(X) \
  X(add) X(sub) X(neg) X(mul) X(div) X(dot_general) X(reshape) X(transpose) \
  X(broadcast_in_dim) X(reduce_sum) X(squeeze) X(expand_dims) X(slice) X(pad) \
  X(concatenate) X(dynamic_slice) X(dynamic_update_slice) X(gather) X(scatter) X(scatter_add) X(scatter_mul) X(convert_element_type) \
  X(select_n) X(cumsum) X(copy) X(rev) X(psum) X(pmean) X(pbroadcast) X(all_gather) \
  X(psum_scatter) X(all_gather_invariant) X(pscatter) X(ppermute) X(pshuffle) X(all_to_all) \
  X(cond) X(fori_loop) X(scan) X(shard_map) X(sort) X(reduce_precision) X(tile) \
  X(split) X(ragged_all_to_all) \
  X(vary_unreduced_cast) X(reduced_vary_cast) X(preduced) X(unreduced_psum) X(unreduced_reduce_scatter) \
  X(all_gather_reduced) X(pbroadcast_source)

#define X(n) static bool tr_##n(TrCtx *cx);
TR_RULES(X)
#undef X

typedef bool (*TransFn)(TrCtx *cx);
static const TransFn tr_rules[P_COUNT] = {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, exec, tr, jvp, cost) [P_##tag] = tr,
#include "prims.def"
#undef PRIM
};

/* ---- helpers -------------------------------------------------------------------- */

static bool atom_lin(Tr *T, const IrAtom *a) {
  return a->var && a->var->owner == T->f && T->lin[a->var->slot];
}

/* A zero constant (a literal 0, or zeros a transpose made with
   broadcast_in_dim): it may stand where linear operands are required,
   as the zero of every linear space, so that a transpose's own
   dynamic_update_slice and select_n of zeros can be transposed again. */
static bool atom_zero(Tr *T, const IrAtom *a) {
  if (a->lit) return arr_getf(a->lit, 0) == 0;
  return a->var && a->var->owner == T->f && T->zero && T->zero[a->var->slot];
}

static IrAtom map_atom(Tr *T, const IrAtom *a) {
  if (a->var && a->var->owner == T->f) return T->prim[a->var->slot];
  return *a;
}

/* Name a cotangent after its primal: x -> xbar, and xbar -> x (so that
   transposing twice gives back the original names); a tangent's, xdot,
   is xbar too (a reverse-mode derivative transposes tangents). */
static void name_after(Tr *T, IrAtom *a, Str base) {
  if (!a->var || a->var->name.n || !base.n) return;
  if (base.n > 3 && !memcmp(base.p + base.n - 3, "bar", 3)) {
    a->var->name.p = base.p;
    a->var->name.n = base.n - 3;
    return;
  }
  if (base.n > 3 && !memcmp(base.p + base.n - 3, "dot", 3)) base.n -= 3;
  char *s = bld_alloc(T->B, (size_t)base.n + 4);
  memcpy(s, base.p, (size_t)base.n);
  memcpy(s + base.n, "bar", 4);
  a->var->name = str_c(s);
}

/* A psum of ct over the axes in `mask` (a cotangent that varies where its
   primal is invariant: an invariant result returned through an out_spec
   that mentions axes). */
static IrAtom sum_over(Tr *T, IrAtom ct, uint32_t mask) {
  const Mesh *m = bld_func(T->B)->mesh;
  PVal *names[SHM_MAXAXES];
  int n = 0;
  char buf[128];
  for (int k = 0; m && k < m->naxes; k++)
    if (mask & (1u << k)) {
      snprintf(buf, sizeof buf, "%.*s", m->axis[k].n, m->axis[k].p);
      names[n++] = bld_pv_name(T->B, buf);
    }
  IrParam ps[1] = {{"axes", bld_pv_tuple(T->B, names, n)}};
  IrAtom out;
  if (!bld_prim(T->B, P_PSUM, ps, 1, &ct, 1, &out)) { T->failed = true; return ct; }
  return out;
}

/* Add ct to the cotangent of variable v (lifting to v's variance). */
static int64_t pv_int(const PVal *p, int64_t dflt);

/* The equation of the transpose that produced atom a, if any. */
static const IrStmt *def_of(Tr *T, const IrAtom *a) {
  if (!a->var) return NULL;
  IrFunc *g = bld_func(T->B);
  for (int i = g->nbody - 1; i >= 0; i--) {
    const IrStmt *st = g->body[i];
    for (int j = 0; st->k == IS_EQN && j < st->nout; j++)
      if (st->out[j] == a->var) return st;
  }
  return NULL;
}

/* The `neg` equation of the transpose that produced atom a, if any, when
   its operand has a's type. */
static const IrStmt *neg_of(Tr *T, const IrAtom *a) {
  const IrStmt *st = def_of(T, a);
  return st && st->prim == P_NEG && st->in[0].var && st->in[0].t.vma == a->t.vma ? st : NULL;
}

/* A pad with a zero padding value that pads one dimension only, without
   interior padding: *d, *lo, *hi describe it. */
static bool simple_pad(const IrStmt *st, int *d, int64_t *lo, int64_t *hi) {
  if (!st || st->prim != P_PAD || !st->in[1].lit || arr_getf(st->in[1].lit, 0) != 0) return false;
  const PVal *pc = NULL;
  for (int i = 0; i < st->nparams; i++)
    if (!strcmp(st->params[i].key, "padding_config")) pc = st->params[i].v;
  if (!pc) return false;
  *d = -1;
  for (int k = 0; k < pc->n; k++) {
    const PVal *c = pc->items[k];
    if (c->n != 3) return false;
    int64_t l = c->items[0]->i, h = c->items[1]->i, in = c->items[2]->i;
    if (in != 0 || l < 0 || h < 0) return false;
    if (l || h) {
      if (*d >= 0) return false;
      *d = k;
      *lo = l;
      *hi = h;
    }
  }
  return *d >= 0;
}

/* pad(a) + pad(b) of adjacent pieces along one dimension is the pad of
   their concatenation, so that transposing a concatenate twice gives the
   concatenate back.  Pieces already concatenated are flattened. */
static bool merge_pads(Tr *T, int s, IrAtom ct, IrVar *v) {
  const IrStmt *p0 = def_of(T, &T->ct[s]), *p1 = def_of(T, &ct);
  int d0, d1;
  int64_t lo0, hi0, lo1, hi1;
  if (!simple_pad(p0, &d0, &lo0, &hi0) || !simple_pad(p1, &d1, &lo1, &hi1) || d0 != d1) return false;
  const IrStmt *a = p0, *b = p1;            /* a: the piece that comes first */
  int64_t loa = lo0, hia = hi0, lob = lo1, hib = hi1;
  if (lo1 < lo0) { a = p1; b = p0; loa = lo1; hia = hi1; lob = lo0; hib = hi0; }
  int64_t na = a->in[0].t.shape[d0];
  if (loa + na != lob) return false;
  (void)hia;
  IrAtom parts[64];
  int n = 0;
  const IrStmt *ends[2] = {a, b};
  for (int e = 0; e < 2; e++) {
    const IrStmt *c = def_of(T, &ends[e]->in[0]);
    if (c && c->prim == P_CONCATENATE && pv_int(rule_stmt_param(c, "dimension"), -1) == d0 && n + c->nin < 64)
      for (int k = 0; k < c->nin; k++) parts[n++] = c->in[k];
    else if (n < 64)
      parts[n++] = ends[e]->in[0];
  }
  Builder *B = T->B;
  IrParam cp[1] = {{"dimension", bld_pv_int(B, d0)}};
  IrAtom cat;
  if (!bld_prim(B, P_CONCATENATE, cp, 1, parts, n, &cat)) { T->failed = true; return true; }
  IrAtom out = cat;
  if (loa || hib) {
    int r = cat.t.rank;
    PVal **cfg = bld_alloc(B, sizeof(PVal *) * (size_t)(r + 1));
    for (int k = 0; k < r; k++) {
      int64_t c[3] = {k == d0 ? loa : 0, k == d0 ? hib : 0, 0};
      cfg[k] = bld_pv_ints(B, c, 3);
    }
    IrParam pp[1] = {{"padding_config", bld_pv_tuple(B, cfg, r)}};
    IrAtom in[2] = {cat, p0->in[1]};
    if (!bld_prim(B, P_PAD, pp, 1, in, 2, &out)) { T->failed = true; return true; }
  }
  name_after(T, &out, v->name);
  T->ct[s] = out;
  return true;
}

static bool same_atom(const IrAtom *a, const IrAtom *b) {
  if (a->var || b->var) return a->var == b->var;
  return a->lit && b->lit && arr_identical(a->lit, b->lit);
}

/* Is atom a zeros: a zero literal, or a broadcast of one? */
static bool is_zeros(Tr *T, const IrAtom *a) {
  if (a->lit) return arr_getf(a->lit, 0) == 0;
  const IrStmt *b = def_of(T, a);
  return b && b->prim == P_BROADCAST_IN_DIM && b->in[0].lit && arr_getf(b->in[0].lit, 0) == 0;
}

/* Sums of two pieces that are zero where the other is not, as the
   transposes of select_n and dynamic_update_slice make them, written as
   the one equation they came from:
     select_n q a 0 + select_n q 0 b      -> select_n q a b
     dus(zeros, u, i) + dus(x, zeros, i)  -> dus(x, u, i)                 */
static bool merge_disjoint(Tr *T, int s, IrAtom ct, IrVar *v) {
  const IrStmt *p = def_of(T, &T->ct[s]), *q = def_of(T, &ct);
  if (!p || !q || p->prim != q->prim || p->nin != q->nin) return false;
  int n = p->nin;
  IrAtom *in = bld_alloc(T->B, sizeof(IrAtom) * (size_t)(n + 1));
  if (p->prim == P_SELECT_N) {
    if (!same_atom(&p->in[0], &q->in[0])) return false;
    in[0] = p->in[0];
    for (int k = 1; k < n; k++) {
      bool zp = is_zeros(T, &p->in[k]), zq = is_zeros(T, &q->in[k]);
      if (!zp && !zq) return false;
      in[k] = zp ? q->in[k] : p->in[k];
    }
  } else if (p->prim == P_DYNAMIC_UPDATE_SLICE) {
    for (int k = 2; k < n; k++)
      if (!same_atom(&p->in[k], &q->in[k])) return false;
    const IrStmt *a = p, *b = q;             /* a: zeros operand, b: zeros update */
    if (!is_zeros(T, &a->in[0])) { a = q; b = p; }
    if (!is_zeros(T, &a->in[0]) || !is_zeros(T, &b->in[1])) return false;
    /* the pieces are disjoint only when the update b zeroes is the block
       a fills: the same shape at the same (clamped) start */
    if (!type_same_shape(&a->in[1].t, &b->in[1].t)) return false;
    in[0] = b->in[0];
    in[1] = a->in[1];
    for (int k = 2; k < n; k++) in[k] = p->in[k];
  } else {
    return false;
  }
  IrAtom out;
  if (!bld_prim(T->B, p->prim, p->params, p->nparams, in, n, &out)) { T->failed = true; return true; }
  name_after(T, &out, v->name);
  T->ct[s] = out;
  return true;
}

static void accumulate(Tr *T, IrVar *v, IrAtom ct) {
  if (ct.t.vma & ~v->t.vma) ct = sum_over(T, ct, ct.t.vma & ~v->t.vma);
  if (ct.t.vma != v->t.vma) ct = bld_lift(T->B, ct, v->t.vma);
  name_after(T, &ct, v->name);
  int s = v->slot;
  if (!T->has[s]) {
    T->ct[s] = ct;
    T->has[s] = true;
    return;
  }
  if (merge_pads(T, s, ct, v) || merge_disjoint(T, s, ct, v)) return;
  /* a + neg(b) is written sub a b, so that transposing a sub twice gives
     the sub back (the neg left unused is dropped with the dead equations) */
  IrAtom in[2] = {T->ct[s], ct}, out;
  int prim = P_ADD;
  const IrStmt *n1 = neg_of(T, &in[1]), *n0 = n1 ? NULL : neg_of(T, &in[0]);
  if (n1 || n0) {
    prim = P_SUB;
    if (n1) in[1] = n1->in[0];
    else { in[0] = in[1]; in[1] = n0->in[0]; }
  }
  if (!bld_prim(T->B, prim, NULL, 0, in, 2, &out)) { T->failed = true; return; }
  name_after(T, &out, v->name);
  T->ct[s] = out;
}

static int64_t pv_int(const PVal *p, int64_t dflt) {
  while (p && p->k == PV_TUPLE && p->n == 1) p = p->items[0];
  return p && (p->k == PV_INT || p->k == PV_BOOL) ? p->i : dflt;
}

static bool is_zero_lit(const IrAtom *a);

/* ---- the rule context ------------------------------------------------------------- */

IrAtom tr_in(TrCtx *cx, int k) { return map_atom(cx->T, &cx->st->in[k]); }
const Type *tr_in_type(TrCtx *cx, int k) { return &cx->st->in[k].t; }
Builder *tr_builder(TrCtx *cx) { return cx->T->B; }

IrAtom tr_ct(TrCtx *cx, int j) {
  if (!cx->has_ct[j]) {
    cx->cts[j] = bld_zeros(cx->T->B, &cx->st->out[j]->t);
    cx->has_ct[j] = true;
  }
  return cx->cts[j];
}

void tr_give(TrCtx *cx, int k, IrAtom ct) {
  const IrAtom *a = &cx->st->in[k];
  if (atom_lin(cx->T, a)) accumulate(cx->T, a->var, ct);
}

static bool tr_emit(TrCtx *cx, int prim, const IrParam *params, int nparams, IrAtom *in, int nin, IrAtom *out) {
  if (!bld_prim(cx->T->B, prim, params, nparams, in, nin, out)) {
    cx->T->failed = true;
    return false;
  }
  return true;
}

bool tr_error(TrCtx *cx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(cx->st->sp, fmt, ap);
  va_end(ap);
  cx->T->failed = true;
  return false;
}

/* Emit prim with one parameter list, one result. */
static IrAtom emit1(TrCtx *cx, int prim, const IrParam *ps, int np, IrAtom *in, int nin) {
  IrAtom out;
  memset(&out, 0, sizeof out);
  if (!tr_emit(cx, prim, ps, np, in, nin, &out)) return in[0];
  return out;
}

IrAtom tr_emit1(TrCtx *cx, int prim, const IrParam *ps, int np, IrAtom *in, int nin) {
  return emit1(cx, prim, ps, np, in, nin);
}

static IrParam kv(const char *k, PVal *v) {
  IrParam p = {k, v};
  return p;
}

static IrAtom lit_of(TrCtx *cx, const Type *t, double v) {
  IrAtom a;
  memset(&a, 0, sizeof a);
  a.lit = bld_keep(tr_builder(cx), dtype_is_float((DType)t->dt) ? arr_scalar_f((DType)t->dt, v) : arr_scalar_i((DType)t->dt, (int64_t)v));
  a.t.dt = t->dt;
  a.sp = cx->st->sp;
  return a;
}

IrAtom tr_lit(TrCtx *cx, const Type *t, double v) { return lit_of(cx, t, v); }

/* Sum a cotangent down to its operand's shape: a scalar operand was
   broadcast to the result, and an operand of the result's rank along its
   size-1 dimensions (the broadcasting lax's elementwise rules accept). */
static IrAtom unbroadcast(TrCtx *cx, IrAtom ct, int k) {
  const Type *t = tr_in_type(cx, k);
  if (ct.t.rank == 0 || (t->rank != 0 && t->rank != ct.t.rank)) return ct;
  int64_t ax[SHM_MAXRANK];
  int na = 0;
  for (int i = 0; i < ct.t.rank; i++)
    if (t->rank == 0 || (t->shape[i] == 1 && ct.t.shape[i] != 1)) ax[na++] = i;
  if (!na) return ct;
  Builder *B = tr_builder(cx);
  IrParam ps[1] = {kv("axes", bld_pv_ints(B, ax, na))};
  IrAtom r = emit1(cx, P_REDUCE_SUM, ps, 1, &ct, 1);
  if (t->rank == 0) return r;
  IrParam rs[1] = {kv("new_sizes", bld_pv_ints(B, t->shape, t->rank))};
  return emit1(cx, P_RESHAPE, rs, 1, &r, 1);
}

/* Every operand must be linear (sums of linear values and constants are
   affine, not linear). */
static bool all_linear(TrCtx *cx, int from, int to) {
  for (int k = from; k < to; k++)
    if (!cx->lin_in[k] && !atom_zero(cx->T, &cx->st->in[k]))
      return tr_error(cx, "%s of a linear value and a constant is not linear",
                      prim_table[cx->st->prim].name);
  return true;
}

/* ---- elementwise ------------------------------------------------------------------- */

static bool tr_add(TrCtx *cx) {
  if (cx->checking) return all_linear(cx, 0, 2);
  for (int k = 0; k < 2; k++)
    if (cx->lin_in[k]) tr_give(cx, k, unbroadcast(cx, tr_ct(cx, 0), k));
  return true;
}

static bool tr_sub(TrCtx *cx) {
  if (cx->checking) return all_linear(cx, 0, 2);
  IrAtom ct = tr_ct(cx, 0);
  if (cx->lin_in[0]) tr_give(cx, 0, unbroadcast(cx, ct, 0));
  if (!cx->lin_in[1]) return true;
  IrAtom n = emit1(cx, P_NEG, NULL, 0, &ct, 1);
  tr_give(cx, 1, unbroadcast(cx, n, 1));
  return true;
}

static bool tr_neg(TrCtx *cx) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  tr_give(cx, 0, emit1(cx, P_NEG, NULL, 0, &ct, 1));
  return true;
}

/* The transpose of a unary linear primitive is another primitive (or the
   same) with the same parameter `key` (none when NULL): squeeze and
   expand_dims, rev, copy, psum to pbroadcast. */
static bool as_other(TrCtx *cx, int to, const char *key) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[1] = {kv(key ? key : "", key ? rule_stmt_param(cx->st, key) : NULL)};
  tr_give(cx, 0, emit1(cx, to, ps, key ? 1 : 0, &ct, 1));
  return true;
}

static bool tr_copy(TrCtx *cx) { return as_other(cx, P_COPY, NULL); }

/* reduce_precision is linear to JAX (ad.deflinear): its transpose rounds
   the cotangent the same way. */
static bool tr_reduce_precision(TrCtx *cx) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[2] = {kv("exponent_bits", rule_stmt_param(cx->st, "exponent_bits")),
                   kv("mantissa_bits", rule_stmt_param(cx->st, "mantissa_bits"))};
  tr_give(cx, 0, emit1(cx, P_REDUCE_PRECISION, ps, 2, &ct, 1));
  return true;
}

/* tile[reps] x: the tiles of the cotangent summed, one dimension at a
   time: dimension d of size reps[d]*n reshaped into (reps[d], n) and the
   reps[d] axis summed (zero repeats sum nothing: zeros of x's shape). */
static bool tr_tile(TrCtx *cx) {
  if (cx->checking) return true;
  const Type *t = tr_in_type(cx, 0);
  int64_t reps[SHM_MAXRANK], shape[SHM_MAXRANK + 1];
  int n = rule_read_ints(rule_stmt_param(cx->st, "reps"), reps, SHM_MAXRANK);
  Builder *B = tr_builder(cx);
  IrAtom r = tr_ct(cx, 0);
  for (int d = 0; d < n; d++) {
    if (reps[d] == 1) continue;
    int k = 0;
    for (int e = 0; e < t->rank; e++) {
      if (e == d) shape[k++] = reps[d];
      shape[k++] = e <= d ? t->shape[e] : r.t.shape[e];
    }
    IrParam pr[1] = {kv("new_sizes", bld_pv_ints(B, shape, t->rank + 1))};
    r = emit1(cx, P_RESHAPE, pr, 1, &r, 1);
    int64_t ax = d;
    IrParam ps[1] = {kv("axes", bld_pv_ints(B, &ax, 1))};
    r = emit1(cx, P_REDUCE_SUM, ps, 1, &r, 1);
  }
  tr_give(cx, 0, r);
  return true;
}

/* A cotangent made by broadcasting a scalar, where the other operand k
   (constant) already has the result's shape: the scalar itself, since
   mul and div broadcast a scalar operand (so that transposing `mul x y`
   with a scalar x twice gives `mul x y` back). */
static IrAtom scalar_source(TrCtx *cx, IrAtom ct, int k) {
  const IrStmt *b = def_of(cx->T, &ct);
  if (!b || b->prim != P_BROADCAST_IN_DIM || b->in[0].t.rank != 0) return ct;
  if (!type_same_shape(tr_in_type(cx, k), &ct.t) || b->in[0].t.vma != ct.t.vma) return ct;
  return b->in[0];
}

static bool tr_mul(TrCtx *cx) {
  if (cx->checking) {
    if (cx->lin_in[0] && cx->lin_in[1]) return tr_error(cx, "mul of two linear values is not linear");
    return true;
  }
  int k = cx->lin_in[0] ? 0 : 1;
  IrAtom in[2] = {scalar_source(cx, tr_ct(cx, 0), 1 - k), tr_in(cx, 1 - k)};
  tr_give(cx, k, unbroadcast(cx, emit1(cx, P_MUL, NULL, 0, in, 2), k));
  return true;
}

static bool tr_div(TrCtx *cx) {
  if (cx->checking) {
    if (cx->lin_in[1]) return tr_error(cx, "div by a linear value is not linear");
    return true;
  }
  IrAtom in[2] = {scalar_source(cx, tr_ct(cx, 0), 1), tr_in(cx, 1)};
  tr_give(cx, 0, unbroadcast(cx, emit1(cx, P_DIV, NULL, 0, in, 2), 0));
  return true;
}

static bool tr_convert_element_type(TrCtx *cx) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[1] = {kv("new_dtype", bld_pv_name(tr_builder(cx), dtype_names[tr_in_type(cx, 0)->dt]))};
  tr_give(cx, 0, emit1(cx, P_CONVERT_ELEMENT_TYPE, ps, 1, &ct, 1));
  return true;
}

static bool tr_select_n(TrCtx *cx) {
  int n = cx->st->nin;
  if (cx->checking) {
    if (cx->lin_in[0]) return tr_error(cx, "select_n with a linear predicate is not linear");
    for (int k = 1; k < n; k++)      /* a zero literal case is linear too: where(p, x, 0.) */
      if (!cx->lin_in[k] && !is_zero_lit(&cx->st->in[k]))
        return tr_error(cx, "select_n of a linear value and a non-zero constant is not linear");
    return true;
  }
  IrAtom ct = tr_ct(cx, 0);
  IrAtom *in = bld_alloc(tr_builder(cx), sizeof(IrAtom) * (size_t)n);
  in[0] = tr_in(cx, 0);
  IrAtom z = lit_of(cx, &cx->st->out[0]->t, 0);   /* a scalar zero case broadcasts */
  for (int k = 1; k < n; k++) {
    if (!cx->lin_in[k]) continue;
    for (int j = 1; j < n; j++) in[j] = j == k ? ct : z;
    tr_give(cx, k, unbroadcast(cx, emit1(cx, P_SELECT_N, NULL, 0, in, n), k));
  }
  return true;
}

static bool tr_cumsum(TrCtx *cx) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  Builder *B = tr_builder(cx);
  IrParam ps[2] = {kv("axis", bld_pv_int(B, pv_int(rule_stmt_param(cx->st, "axis"), 0))),
                   kv("reverse", bld_pv_bool(B, !pv_int(rule_stmt_param(cx->st, "reverse"), 0)))};
  tr_give(cx, 0, emit1(cx, P_CUMSUM, ps, 2, &ct, 1));
  return true;
}

/* sort, linear in operands that are not keys (a permutation of them, as
   jvp_sort makes): each cotangent goes back through the inverse
   permutation.  The permutation is the sort of an iota by the same keys;
   sorting the cotangent by the permutation inverts it. */
static bool tr_sort(TrCtx *cx) {
  const IrStmt *st = cx->st;
  int nk = (int)st->at->i[1], nin = st->nin;
  int64_t d = st->at->i[0];
  if (cx->checking) {
    for (int k = 0; k < nk; k++)
      if (cx->lin_in[k]) return tr_error(cx, "sort is not linear in its keys (operand %d of %d is a key)", k + 1, nk);
    return true;
  }
  Builder *B = tr_builder(cx);
  const Type *t = tr_in_type(cx, 0);
  IrParam ip[3] = {kv("dtype", bld_pv_name(B, "int32")), kv("shape", bld_pv_ints(B, t->shape, t->rank)),
                   kv("dimension", bld_pv_int(B, d))};
  IrAtom *ops = bld_alloc(B, sizeof(IrAtom) * (size_t)(nk + 1)), *res = bld_alloc(B, sizeof(IrAtom) * (size_t)(nk + 1));
  for (int k = 0; k < nk; k++) ops[k] = tr_in(cx, k);
  ops[nk] = emit1(cx, P_IOTA, ip, 3, ops, 0);
  IrParam ps[3] = {kv("dimension", bld_pv_int(B, d)), kv("is_stable", bld_pv_bool(B, true)), kv("num_keys", bld_pv_int(B, nk))};
  if (!tr_emit(cx, P_SORT, ps, 3, ops, nk + 1, res)) return false;
  IrParam p1[3] = {kv("dimension", bld_pv_int(B, d)), kv("is_stable", bld_pv_bool(B, true)), kv("num_keys", bld_pv_int(B, 1))};
  for (int j = nk; j < nin; j++) {
    if (!cx->lin_in[j]) continue;
    IrAtom pair[2] = {res[nk], tr_ct(cx, j)}, back[2];
    if (!tr_emit(cx, P_SORT, p1, 3, pair, 2, back)) return false;
    tr_give(cx, j, back[1]);
  }
  return true;
}

static bool tr_rev(TrCtx *cx) { return as_other(cx, P_REV, "dimensions"); }

/* ---- dot_general ------------------------------------------------------------------ */

typedef struct Dims {
  int64_t lc[SHM_MAXRANK], rc[SHM_MAXRANK], lb[SHM_MAXRANK], rb[SHM_MAXRANK];
  int nc, nb;
} Dims;

static void read_dims(const IrStmt *st, Dims *d) {
  PVal *dn = rule_stmt_param(st, "dimension_numbers");
  memset(d, 0, sizeof *d);
  if (!dn || dn->n != 2) return;
  d->nc = rule_read_ints(dn->items[0]->items[0], d->lc, SHM_MAXRANK);
  rule_read_ints(dn->items[0]->items[1], d->rc, SHM_MAXRANK);
  d->nb = rule_read_ints(dn->items[1]->items[0], d->lb, SHM_MAXRANK);
  rule_read_ints(dn->items[1]->items[1], d->rb, SHM_MAXRANK);
}

static bool in_list(const int64_t *l, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (l[i] == x) return true;
  return false;
}

static PVal *dimnums_pv(Builder *B, const int64_t *a, const int64_t *b, int nc, const int64_t *c, const int64_t *d, int nb) {
  PVal *x[2] = {bld_pv_ints(B, a, nc), bld_pv_ints(B, b, nc)};
  PVal *y[2] = {bld_pv_ints(B, c, nb), bld_pv_ints(B, d, nb)};
  for (int i = 0; i < 2; i++) { x[i]->k = PV_LIST; y[i]->k = PV_LIST; }
  PVal *g[2] = {bld_pv_tuple(B, x, 2), bld_pv_tuple(B, y, 2)};
  return bld_pv_tuple(B, g, 2);
}

/* JAX's rule: the cotangent of the lhs `x` is g contracted with y over
   y's free dimensions, then transposed back into x's layout. */
static IrAtom dot_transpose_lhs(TrCtx *cx, IrAtom g, IrAtom y, int xrank, int yrank,
                                const int64_t *xc, const int64_t *yc, int nc,
                                const int64_t *xb, const int64_t *yb, int nb, bool swap_ans) {
  Builder *B = tr_builder(cx);
  int64_t xk[SHM_MAXRANK], yk[SHM_MAXRANK];
  int nxk = 0, nyk = 0;
  for (int i = 0; i < xrank; i++) if (!in_list(xc, nc, i) && !in_list(xb, nb, i)) xk[nxk++] = i;
  for (int i = 0; i < yrank; i++) if (!in_list(yc, nc, i) && !in_list(yb, nb, i)) yk[nyk++] = i;
  int64_t ans_batch[SHM_MAXRANK], ans_y[SHM_MAXRANK];
  for (int i = 0; i < nb; i++) ans_batch[i] = i;
  for (int i = 0; i < nyk; i++) ans_y[i] = swap_ans ? nb + i : nb + nxk + i;
  IrParam ps[2] = {kv("dimension_numbers", dimnums_pv(B, ans_y, yk, nyk, ans_batch, yb, nb)),
                   kv("preferred_element_type", bld_pv_name(B, dtype_names[g.t.dt]))};
  ps[1].v->k = PV_NONE;
  IrAtom in[2] = {g, y};
  IrAtom r = emit1(cx, P_DOT_GENERAL, ps, 2, in, 2);
  /* out_axes = argsort(xb + xk + xc sorted by yc) */
  int64_t order[SHM_MAXRANK], perm[SHM_MAXRANK];
  int n = 0;
  for (int i = 0; i < nb; i++) order[n++] = xb[i];
  for (int i = 0; i < nxk; i++) order[n++] = xk[i];
  int64_t idx[SHM_MAXRANK];
  for (int i = 0; i < nc; i++) idx[i] = i;
  for (int i = 1; i < nc; i++)
    for (int j = i; j > 0 && yc[idx[j]] < yc[idx[j - 1]]; j--) { int64_t t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t; }
  for (int i = 0; i < nc; i++) order[n++] = xc[idx[i]];
  bool ident = true;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      if (order[j] == i) perm[i] = j;
    if (perm[i] != i) ident = false;
  }
  if (ident) return r;
  IrParam tp[1] = {kv("permutation", bld_pv_ints(B, perm, n))};
  return emit1(cx, P_TRANSPOSE, tp, 1, &r, 1);
}

static bool tr_dot_general(TrCtx *cx) {
  if (cx->checking) {
    if (cx->lin_in[0] && cx->lin_in[1]) return tr_error(cx, "dot_general of two linear values is not linear");
    return true;
  }
  Dims d;
  read_dims(cx->st, &d);
  IrAtom g = tr_ct(cx, 0);
  int xr = tr_in_type(cx, 0)->rank, yr = tr_in_type(cx, 1)->rank;
  if (cx->lin_in[0])
    tr_give(cx, 0, dot_transpose_lhs(cx, g, tr_in(cx, 1), xr, yr, d.lc, d.rc, d.nc, d.lb, d.rb, d.nb, false));
  else
    tr_give(cx, 1, dot_transpose_lhs(cx, g, tr_in(cx, 0), yr, xr, d.rc, d.lc, d.nc, d.rb, d.lb, d.nb, true));
  return true;
}

/* ---- shapes ----------------------------------------------------------------------- */

static bool tr_reshape(TrCtx *cx) {
  if (cx->checking) return true;
  const Type *t = tr_in_type(cx, 0);
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[1] = {kv("new_sizes", bld_pv_ints(tr_builder(cx), t->shape, t->rank))};
  tr_give(cx, 0, emit1(cx, P_RESHAPE, ps, 1, &ct, 1));
  return true;
}

static bool tr_transpose(TrCtx *cx) {
  if (cx->checking) return true;
  int64_t p[SHM_MAXRANK], inv[SHM_MAXRANK];
  int n = rule_read_ints(rule_stmt_param(cx->st, "permutation"), p, SHM_MAXRANK);
  for (int i = 0; i < n; i++) inv[p[i]] = i;
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[1] = {kv("permutation", bld_pv_ints(tr_builder(cx), inv, n))};
  tr_give(cx, 0, emit1(cx, P_TRANSPOSE, ps, 1, &ct, 1));
  return true;
}

static bool tr_broadcast_in_dim(TrCtx *cx) {
  if (cx->checking) return true;
  const Type *t = tr_in_type(cx, 0);
  const Type *o = &cx->st->out[0]->t;
  int64_t bd[SHM_MAXRANK], ax[SHM_MAXRANK];
  int nb = rule_read_ints(rule_stmt_param(cx->st, "broadcast_dimensions"), bd, SHM_MAXRANK), na = 0;
  bool unit = false;
  for (int d = 0; d < o->rank; d++) {
    int src = -1;
    for (int i = 0; i < nb; i++) if (bd[i] == d) src = i;
    if (src < 0) ax[na++] = d;
    else if (t->shape[src] == 1 && o->shape[d] != 1) { ax[na++] = d; unit = true; }
  }
  IrAtom r = tr_ct(cx, 0);
  if (na) {
    IrParam ps[1] = {kv("axes", bld_pv_ints(tr_builder(cx), ax, na))};
    r = emit1(cx, P_REDUCE_SUM, ps, 1, &r, 1);
  }
  if (unit) {
    IrParam ps[1] = {kv("new_sizes", bld_pv_ints(tr_builder(cx), t->shape, t->rank))};
    r = emit1(cx, P_RESHAPE, ps, 1, &r, 1);
  }
  tr_give(cx, 0, r);
  return true;
}

static bool tr_reduce_sum(TrCtx *cx) {
  if (cx->checking) return true;
  const Type *t = tr_in_type(cx, 0);
  int64_t ax[SHM_MAXRANK], keep[SHM_MAXRANK];
  int na = rule_read_ints(rule_stmt_param(cx->st, "axes"), ax, SHM_MAXRANK), nk = 0;
  for (int d = 0; d < t->rank; d++) if (!in_list(ax, na, d)) keep[nk++] = d;
  IrAtom ct = tr_ct(cx, 0);
  Builder *B = tr_builder(cx);
  IrParam ps[2] = {kv("shape", bld_pv_ints(B, t->shape, t->rank)), kv("broadcast_dimensions", bld_pv_ints(B, keep, nk))};
  tr_give(cx, 0, emit1(cx, P_BROADCAST_IN_DIM, ps, 2, &ct, 1));
  return true;
}

static bool tr_squeeze(TrCtx *cx) { return as_other(cx, P_EXPAND_DIMS, "dimensions"); }

static bool tr_expand_dims(TrCtx *cx) { return as_other(cx, P_SQUEEZE, "dimensions"); }

static bool is_zero_lit(const IrAtom *a) { return a->lit && arr_getf(a->lit, 0) == 0; }

static bool tr_slice(TrCtx *cx) {
  if (cx->checking) return true;
  const Type *t = tr_in_type(cx, 0);
  const Type *o = &cx->st->out[0]->t;
  int64_t st[SHM_MAXRANK], str[SHM_MAXRANK];
  rule_read_ints(rule_stmt_param(cx->st, "start_indices"), st, SHM_MAXRANK);
  int ns = rule_read_ints(rule_stmt_param(cx->st, "strides"), str, SHM_MAXRANK);
  Builder *B = tr_builder(cx);
  PVal **cfg = bld_alloc(B, sizeof(PVal *) * (size_t)(t->rank + 1));
  for (int d = 0; d < t->rank; d++) {
    int64_t s = ns ? str[d] : 1, n = o->shape[d];
    int64_t lo = st[d], in = n > 0 ? s - 1 : 0;
    int64_t hi = n > 0 ? t->shape[d] - (lo + (n - 1) * s + 1) : t->shape[d] - lo;
    int64_t c[3] = {lo, hi, in};
    cfg[d] = bld_pv_ints(B, c, 3);
  }
  IrParam ps[1] = {kv("padding_config", bld_pv_tuple(B, cfg, t->rank))};
  IrAtom in[2] = {tr_ct(cx, 0), lit_of(cx, t, 0)};
  tr_give(cx, 0, emit1(cx, P_PAD, ps, 1, in, 2));
  return true;
}

static bool tr_pad(TrCtx *cx) {
  if (cx->checking) {
    if (!cx->lin_in[0] && !atom_zero(cx->T, &cx->st->in[0])) return tr_error(cx, "pad of a constant operand is not linear");
    if (!cx->lin_in[1] && !is_zero_lit(&cx->st->in[1]))
      return tr_error(cx, "pad of a linear value with a non-zero constant padding value is not linear");
    return true;
  }
  const Type *t = tr_in_type(cx, 0);
  int64_t cfg[3 * SHM_MAXRANK];
  PVal *pc = rule_stmt_param(cx->st, "padding_config");
  for (int d = 0; d < t->rank; d++) rule_read_ints(pc->items[d], cfg + 3 * d, 3);
  Builder *B = tr_builder(cx);
  IrAtom ct = tr_ct(cx, 0);
  /* negative low/high padding cropped the operand: pad the cotangent back */
  bool neg = false;
  for (int d = 0; d < t->rank; d++) if (cfg[3 * d] < 0 || cfg[3 * d + 1] < 0) neg = true;
  if (neg) {
    PVal **c = bld_alloc(B, sizeof(PVal *) * (size_t)(t->rank + 1));
    for (int d = 0; d < t->rank; d++) {
      int64_t x[3] = {cfg[3 * d] < 0 ? -cfg[3 * d] : 0, cfg[3 * d + 1] < 0 ? -cfg[3 * d + 1] : 0, 0};
      c[d] = bld_pv_ints(B, x, 3);
      if (cfg[3 * d] < 0) cfg[3 * d] = 0;
      if (cfg[3 * d + 1] < 0) cfg[3 * d + 1] = 0;
    }
    IrParam ps[1] = {kv("padding_config", bld_pv_tuple(B, c, t->rank))};
    IrAtom in[2] = {ct, lit_of(cx, t, 0)};
    ct = emit1(cx, P_PAD, ps, 1, in, 2);
  }
  int64_t st[SHM_MAXRANK], lim[SHM_MAXRANK], str[SHM_MAXRANK];
  bool unit = true;
  for (int d = 0; d < t->rank; d++) {
    st[d] = cfg[3 * d];
    str[d] = cfg[3 * d + 2] + 1;
    lim[d] = t->shape[d] ? st[d] + (t->shape[d] - 1) * str[d] + 1 : st[d];
    if (str[d] != 1) unit = false;
  }
  IrParam ps[3] = {kv("start_indices", bld_pv_ints(B, st, t->rank)), kv("limit_indices", bld_pv_ints(B, lim, t->rank)),
                   kv("strides", unit ? NULL : bld_pv_ints(B, str, t->rank))};
  IrAtom x = emit1(cx, P_SLICE, ps, unit ? 2 : 3, &ct, 1);
  tr_give(cx, 0, x);
  if (cx->lin_in[1]) {
    int64_t ax[SHM_MAXRANK];
    for (int i = 0; i < t->rank; i++) ax[i] = i;
    IrParam rs[1] = {kv("axes", bld_pv_ints(B, ax, t->rank))};
    IrAtom all = emit1(cx, P_REDUCE_SUM, rs, 1, &ct, 1);
    IrAtom part = emit1(cx, P_REDUCE_SUM, rs, 1, &x, 1);
    IrAtom in[2] = {all, part};
    tr_give(cx, 1, emit1(cx, P_SUB, NULL, 0, in, 2));
  }
  return true;
}

static bool tr_concatenate(TrCtx *cx) {
  if (cx->checking) return all_linear(cx, 0, cx->st->nin);
  int64_t dim = pv_int(rule_stmt_param(cx->st, "dimension"), 0);
  const Type *o = &cx->st->out[0]->t;
  Builder *B = tr_builder(cx);
  IrAtom ct = tr_ct(cx, 0);
  int64_t off = 0;
  for (int k = 0; k < cx->st->nin; k++) {
    const Type *t = tr_in_type(cx, k);
    int64_t st[SHM_MAXRANK] = {0}, lim[SHM_MAXRANK];
    for (int d = 0; d < o->rank; d++) lim[d] = o->shape[d];
    st[dim] = off;
    lim[dim] = off + t->shape[dim];
    off += t->shape[dim];
    if (!cx->lin_in[k]) continue;
    IrParam ps[2] = {kv("start_indices", bld_pv_ints(B, st, o->rank)), kv("limit_indices", bld_pv_ints(B, lim, o->rank))};
    tr_give(cx, k, emit1(cx, P_SLICE, ps, 2, &ct, 1));
  }
  return true;
}

/* split: JAX's _split_transpose_rule, the concatenation of the results'
   cotangents along the axis (zeros for a result without one). */
static bool tr_split(TrCtx *cx) {
  if (cx->checking) return true;
  const IrStmt *st = cx->st;
  Builder *B = tr_builder(cx);
  if (!st->nout) {                       /* split of an empty axis into nothing */
    tr_give(cx, 0, bld_zeros(B, tr_in_type(cx, 0)));
    return true;
  }
  IrAtom *cts = bld_alloc(B, sizeof(IrAtom) * (size_t)st->nout);
  for (int j = 0; j < st->nout; j++) cts[j] = tr_ct(cx, j);
  IrParam ps[1] = {kv("dimension", bld_pv_int(B, st->at->i[0]))};
  tr_give(cx, 0, emit1(cx, P_CONCATENATE, ps, 1, cts, st->nout));
  return true;
}

static bool tr_dynamic_slice(TrCtx *cx) {
  if (cx->checking) {
    for (int k = 1; k < cx->st->nin; k++)
      if (cx->lin_in[k]) return tr_error(cx, "dynamic_slice with a linear start index is not linear");
    return true;
  }
  int n = cx->st->nin;
  IrAtom *in = bld_alloc(tr_builder(cx), sizeof(IrAtom) * (size_t)(n + 1));
  in[0] = bld_zeros(tr_builder(cx), tr_in_type(cx, 0));
  in[1] = tr_ct(cx, 0);
  for (int k = 1; k < n; k++) in[k + 1] = tr_in(cx, k);
  tr_give(cx, 0, emit1(cx, P_DYNAMIC_UPDATE_SLICE, NULL, 0, in, n + 1));
  return true;
}

static bool tr_dynamic_update_slice(TrCtx *cx) {
  int n = cx->st->nin;
  if (cx->checking) {
    for (int k = 2; k < n; k++)
      if (cx->lin_in[k]) return tr_error(cx, "dynamic_update_slice with a linear start index is not linear");
    return all_linear(cx, 0, 2);
  }
  Builder *B = tr_builder(cx);
  IrAtom ct = tr_ct(cx, 0);
  const Type *u = tr_in_type(cx, 1);
  IrAtom *in = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  in[0] = ct;
  in[1] = bld_zeros(B, u);
  for (int k = 2; k < n; k++) in[k] = tr_in(cx, k);
  if (cx->lin_in[0]) tr_give(cx, 0, emit1(cx, P_DYNAMIC_UPDATE_SLICE, NULL, 0, in, n));
  if (!cx->lin_in[1]) return true;
  IrAtom *sin = bld_alloc(B, sizeof(IrAtom) * (size_t)n);
  sin[0] = ct;
  for (int k = 2; k < n; k++) sin[k - 1] = tr_in(cx, k);
  IrParam ps[1] = {kv("slice_sizes", bld_pv_ints(B, u->shape, u->rank))};
  tr_give(cx, 1, emit1(cx, P_DYNAMIC_SLICE, ps, 1, sin, n - 1));
  return true;
}

/* gather: the scatter-add of the cotangent into zeros (JAX's
   _gather_transpose_rule); the indices are not linear. */
static bool tr_gather(TrCtx *cx) {
  if (cx->checking) {
    if (cx->lin_in[1]) return tr_error(cx, "gather with linear indices is not linear");
    return true;
  }
  Builder *B = tr_builder(cx);
  Type z = *tr_in_type(cx, 0);
  z.vma = 0;
  IrAtom in[3] = {bld_zeros(B, &z), tr_in(cx, 1), tr_ct(cx, 0)};
  tr_give(cx, 0, emit1(cx, P_SCATTER_ADD, bld_scatter_for_gather(B, cx->st), 6, in, 3));
  return true;
}

/* The cotangent of a scatter's updates: the gather of the windows it
   wrote (negated for scatter-sub). */
static void give_updates(TrCtx *cx, IrAtom ct) {
  if (!cx->lin_in[2]) return;
  IrAtom in[2] = {ct, tr_in(cx, 1)};
  IrAtom g = emit1(cx, P_GATHER, bld_gather_for_scatter(tr_builder(cx), cx->st), 6, in, 2);
  if (cx->st->prim == P_SCATTER_SUB) g = emit1(cx, P_NEG, NULL, 0, &g, 1);
  tr_give(cx, 2, g);
}

/* scatter-add, scatter-sub: the operand's cotangent is the result's. */
static bool tr_scatter_add(TrCtx *cx) {
  if (cx->checking) {
    if (cx->lin_in[1]) return tr_error(cx, "%s with linear indices is not linear", prim_table[cx->st->prim].name);
    return all_linear(cx, 0, 1) && all_linear(cx, 2, 3);
  }
  IrAtom ct = tr_ct(cx, 0);
  tr_give(cx, 0, ct);
  give_updates(cx, ct);
  return true;
}

/* scatter: the operand's cotangent is the result's with the written
   windows zeroed; JAX transposes it only with unique_indices=True. */
static bool tr_scatter(TrCtx *cx) {
  if (cx->checking) {
    if (cx->st->at->nfns)
      return tr_error(cx, "scatter with an update_jaxpr of its own (jax.lax.scatter_apply) is not linear");
    if (cx->lin_in[1]) return tr_error(cx, "scatter with linear indices is not linear");
    if (!pv_int(rule_stmt_param(cx->st, "unique_indices"), 0))
      return tr_error(cx, "scatter is transposed only with unique_indices=True (as JAX does)");
    return all_linear(cx, 0, 1) && all_linear(cx, 2, 3);
  }
  Builder *B = tr_builder(cx);
  IrAtom ct = tr_ct(cx, 0);
  if (cx->lin_in[0]) {
    Type z = *tr_in_type(cx, 2);
    z.vma = 0;
    IrAtom in[3] = {ct, tr_in(cx, 1), bld_zeros(B, &z)};
    tr_give(cx, 0, emit1(cx, P_SCATTER, bld_scatter_like(B, cx->st), cx->st->nparams, in, 3));
  }
  give_updates(cx, ct);
  return true;
}

/* scatter-mul, linear in the operand (updates constant) or in the
   updates (operand constant, unique_indices=True, as JAX): the operand's
   cotangent is the same scatter-mul of the cotangent; the updates' the
   gather of the cotangent times the operand. */
static bool tr_scatter_mul(TrCtx *cx) {
  if (cx->checking) {
    if (cx->lin_in[1]) return tr_error(cx, "scatter-mul with linear indices is not linear");
    if (cx->lin_in[0] && cx->lin_in[2]) return tr_error(cx, "scatter-mul of two linear values is not linear");
    if (cx->lin_in[2] && !pv_int(rule_stmt_param(cx->st, "unique_indices"), 0))
      return tr_error(cx, "scatter-mul is transposed in its updates only with unique_indices=True (as JAX does)");
    return true;
  }
  Builder *B = tr_builder(cx);
  IrAtom ct = tr_ct(cx, 0);
  if (cx->lin_in[0]) {
    IrAtom in[3] = {ct, tr_in(cx, 1), tr_in(cx, 2)};
    tr_give(cx, 0, emit1(cx, P_SCATTER_MUL, bld_scatter_like(B, cx->st), cx->st->nparams, in, 3));
  }
  if (cx->lin_in[2]) {
    IrAtom m[2] = {ct, tr_in(cx, 0)};
    IrAtom in[2] = {emit1(cx, P_MUL, NULL, 0, m, 2), tr_in(cx, 1)};
    tr_give(cx, 2, emit1(cx, P_GATHER, bld_gather_for_scatter(B, cx->st), 6, in, 2));
  }
  return true;
}

/* ---- collectives ----------------------------------------------------------------------- */

static bool swap_collective(TrCtx *cx, int to, const char *dim_from, const char *dim_to) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  Builder *B = tr_builder(cx);
  IrParam ps[3];
  int n = 0;
  ps[n++] = kv("axis_name", rule_stmt_param(cx->st, "axis_name"));
  ps[n++] = kv(dim_to, bld_pv_int(B, pv_int(rule_stmt_param(cx->st, dim_from), 0)));
  ps[n++] = kv("tiled", bld_pv_bool(B, pv_int(rule_stmt_param(cx->st, "tiled"), 0)));
  tr_give(cx, 0, emit1(cx, to, ps, n, &ct, 1));
  return true;
}

/* psum of a value unreduced over its axes completes a sum: its transpose
   is preduced, as unreduced_psum's (JAX's rules). */
static bool tr_psum(TrCtx *cx) {
  return as_other(cx, cx->st->in[0].t.unred & cx->st->at->axmask ? P_PREDUCED : P_PBROADCAST, "axes");
}

/* The unreduced and reduced casts and collectives transpose into each
   other, as JAX's rules pair them. */
static bool tr_vary_unreduced_cast(TrCtx *cx) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  if (!(ct.t.red & cx->st->at->axmask)) {     /* already lifted to varying (the cotangent of a summand) */
    tr_give(cx, 0, ct);
    return true;
  }
  return as_other(cx, P_REDUCED_VARY_CAST, "axes");
}
static bool tr_reduced_vary_cast(TrCtx *cx) { return as_other(cx, P_VARY_UNREDUCED_CAST, "axes"); }
static bool tr_preduced(TrCtx *cx) { return as_other(cx, P_UNREDUCED_PSUM, "axes"); }
static bool tr_unreduced_psum(TrCtx *cx) { return as_other(cx, P_PREDUCED, "axes"); }
static bool tr_unreduced_reduce_scatter(TrCtx *cx) {
  return swap_collective(cx, P_ALL_GATHER_REDUCED, "scatter_dimension", "all_gather_dimension");
}
static bool tr_all_gather_reduced(TrCtx *cx) {
  return swap_collective(cx, P_UNREDUCED_REDUCE_SCATTER, "all_gather_dimension", "scatter_dimension");
}

static bool tr_pbroadcast(TrCtx *cx) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[1] = {kv("axes", rule_stmt_param(cx->st, "axes"))};
  /* div by the group size, then psum, is a pmean (the transpose of the
     transpose of pmean) */
  const IrStmt *d = def_of(cx->T, &ct);
  const Mesh *m = bld_func(tr_builder(cx))->mesh;
  if (d && d->prim == P_DIV && d->in[1].lit && d->in[0].var && m && dtype_is_float((DType)ct.t.dt)) {
    int64_t p = 1;
    for (int k = 0; k < cx->st->at->naxes; k++) p *= m->size[cx->st->at->axes[k]];
    if (arr_getf(d->in[1].lit, 0) == (double)p) {
      IrAtom x = d->in[0];
      tr_give(cx, 0, emit1(cx, P_PMEAN, ps, 1, &x, 1));
      return true;
    }
  }
  tr_give(cx, 0, emit1(cx, P_PSUM, ps, 1, &ct, 1));
  return true;
}

static bool tr_pmean(TrCtx *cx) {
  if (cx->checking) return true;
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[1] = {kv("axes", rule_stmt_param(cx->st, "axes"))};
  IrAtom b = emit1(cx, P_PBROADCAST, ps, 1, &ct, 1);
  int64_t p = 1;
  const Mesh *m = bld_func(tr_builder(cx))->mesh;
  for (int k = 0; m && k < cx->st->at->naxes; k++) p *= m->size[cx->st->at->axes[k]];
  IrAtom in[2] = {b, lit_of(cx, &b.t, (double)p)};
  tr_give(cx, 0, emit1(cx, P_DIV, NULL, 0, in, 2));
  return true;
}

static bool tr_all_gather(TrCtx *cx) { return swap_collective(cx, P_PSUM_SCATTER, "axis", "scatter_dimension"); }
static bool tr_psum_scatter(TrCtx *cx) { return swap_collective(cx, P_ALL_GATHER, "scatter_dimension", "axis"); }
static bool tr_all_gather_invariant(TrCtx *cx) { return swap_collective(cx, P_PSCATTER, "axis", "axis"); }
static bool tr_pscatter(TrCtx *cx) { return swap_collective(cx, P_ALL_GATHER_INVARIANT, "axis", "axis"); }

static bool tr_ppermute(TrCtx *cx) {
  if (cx->checking) return true;
  Builder *B = tr_builder(cx);
  PVal *perm = rule_stmt_param(cx->st, "perm");
  PVal **pairs = bld_alloc(B, sizeof(PVal *) * (size_t)(perm->n + 1));
  for (int i = 0; i < perm->n; i++) {
    int64_t sd[2] = {0, 0};        /* the checker made every pair two ints */
    rule_read_ints(perm->items[i], sd, 2);
    int64_t ds[2] = {sd[1], sd[0]};
    pairs[i] = bld_pv_ints(B, ds, 2);
  }
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[2] = {kv("axis_name", rule_stmt_param(cx->st, "axis_name")), kv("perm", bld_pv_tuple(B, pairs, perm->n))};
  tr_give(cx, 0, emit1(cx, P_PPERMUTE, ps, 2, &ct, 1));
  return true;
}

/* pshuffle's transpose is the inverse permutation. */
static bool tr_pshuffle(TrCtx *cx) {
  if (cx->checking) return true;
  Builder *B = tr_builder(cx);
  const IntList *pairs = &cx->st->at->l[0];
  int p = pairs->n / 2;
  int64_t *inv = bld_alloc(B, sizeof(int64_t) * (size_t)(p + 1));
  for (int i = 0; i < p; i++) inv[pairs->v[2 * i]] = pairs->v[2 * i + 1];
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[2] = {kv("axis_name", rule_stmt_param(cx->st, "axis_name")), kv("perm", bld_pv_ints(B, inv, p))};
  tr_give(cx, 0, emit1(cx, P_PSHUFFLE, ps, 2, &ct, 1));
  return true;
}

static bool tr_all_to_all(TrCtx *cx) {
  if (cx->checking) return true;
  Builder *B = tr_builder(cx);
  IrAtom ct = tr_ct(cx, 0);
  IrParam ps[4] = {kv("axis_name", rule_stmt_param(cx->st, "axis_name")),
                   kv("split_axis", bld_pv_int(B, pv_int(rule_stmt_param(cx->st, "concat_axis"), 0))),
                   kv("concat_axis", bld_pv_int(B, pv_int(rule_stmt_param(cx->st, "split_axis"), 0))),
                   kv("tiled", bld_pv_bool(B, pv_int(rule_stmt_param(cx->st, "tiled"), 0)))};
  tr_give(cx, 0, emit1(cx, P_ALL_TO_ALL, ps, 4, &ct, 1));
  return true;
}

/* ragged_all_to_all, linear in operand and output (JAX's
   _ragged_all_to_all_transpose): the operand's cotangent comes back by
   the reverse exchange -- each receiver sends the rows it got back to
   where they came from, the offsets swapped and moved to the other side
   by a tiled all_to_all -- and the output's is the cotangent with the
   rows that were received zeroed (the mask made locally from the
   offsets each member received and its recv_sizes). */
static PVal *axis_name_of(const IrStmt *st) {
  PVal *a = rule_stmt_param(st, "axis_name");
  return a ? a : rule_stmt_param(st, "axes");
}

static IrAtom a2a_tiled(TrCtx *cx, IrAtom x) {
  Builder *B = tr_builder(cx);
  IrParam ps[4] = {kv("axis_name", axis_name_of(cx->st)), kv("split_axis", bld_pv_int(B, 0)),
                   kv("concat_axis", bld_pv_int(B, 0)), kv("tiled", bld_pv_bool(B, true))};
  return emit1(cx, P_ALL_TO_ALL, ps, 4, &x, 1);
}

/* x converted to dtype dt (itself when it has it). */
static IrAtom as_dtype(TrCtx *cx, IrAtom x, int dt) {
  if (x.t.dt == dt) return x;
  IrParam ps[1] = {kv("new_dtype", bld_pv_name(tr_builder(cx), dtype_names[dt]))};
  return emit1(cx, P_CONVERT_ELEMENT_TYPE, ps, 1, &x, 1);
}

/* bool[M]: whether row r of a member's result was received, that is
   oo[i] <= r < oo[i] + rs[i] for some i. */
static IrAtom ragged_received(TrCtx *cx, IrAtom oo, IrAtom rs, int64_t M) {
  Builder *B = tr_builder(cx);
  int64_t K = oo.t.shape[0], mk[2] = {M, K}, one = 1;
  IrParam ip[3] = {kv("dtype", bld_pv_name(B, dtype_names[oo.t.dt])), kv("shape", bld_pv_ints(B, mk, 2)),
                   kv("dimension", bld_pv_int(B, 0))};
  IrAtom none[1] = {oo};
  IrAtom rows = emit1(cx, P_IOTA, ip, 3, none, 0);
  IrAtom hi_in[2] = {oo, as_dtype(cx, rs, oo.t.dt)};
  IrAtom hi = emit1(cx, P_ADD, NULL, 0, hi_in, 2);
  IrParam bp[2] = {kv("shape", bld_pv_ints(B, mk, 2)), kv("broadcast_dimensions", bld_pv_ints(B, &one, 1))};
  IrAtom lo2 = emit1(cx, P_BROADCAST_IN_DIM, bp, 2, &oo, 1), hi2 = emit1(cx, P_BROADCAST_IN_DIM, bp, 2, &hi, 1);
  IrAtom ge_in[2] = {rows, lo2}, lt_in[2] = {rows, hi2};
  IrAtom both[2] = {emit1(cx, P_GE, NULL, 0, ge_in, 2), emit1(cx, P_LT, NULL, 0, lt_in, 2)};
  IrAtom in = emit1(cx, P_AND, NULL, 0, both, 2);
  IrParam rp[1] = {kv("axes", bld_pv_ints(B, &one, 1))};
  return emit1(cx, P_REDUCE_OR, rp, 1, &in, 1);
}

static bool tr_ragged_all_to_all(TrCtx *cx) {
  if (cx->checking) {
    for (int k = 2; k < 6; k++)
      if (cx->lin_in[k]) return tr_error(cx, "ragged_all_to_all is not linear in its offsets and sizes");
    return true;
  }
  Builder *B = tr_builder(cx);
  IrAtom ct = tr_ct(cx, 0);
  IrAtom oo = a2a_tiled(cx, tr_in(cx, 4));
  if (cx->lin_in[0]) {
    Type z = *tr_in_type(cx, 0);
    z.vma = 0;
    IrAtom in[6] = {ct, bld_zeros(B, &z), oo, tr_in(cx, 5), a2a_tiled(cx, tr_in(cx, 2)), tr_in(cx, 3)};
    IrParam ps[1] = {kv("axis_name", axis_name_of(cx->st))};
    tr_give(cx, 0, emit1(cx, P_RAGGED_ALL_TO_ALL, ps, 1, in, 6));
  }
  if (cx->lin_in[1]) {
    const Type *t = &ct.t;
    IrAtom got = ragged_received(cx, oo, tr_in(cx, 5), t->shape[0]);
    int64_t zero = 0;
    IrParam bp[2] = {kv("shape", bld_pv_ints(B, t->shape, t->rank)), kv("broadcast_dimensions", bld_pv_ints(B, &zero, 1))};
    Type z = *t;
    z.vma = 0;
    IrAtom sel[3] = {t->rank == 1 ? got : emit1(cx, P_BROADCAST_IN_DIM, bp, 2, &got, 1), ct, bld_zeros(B, &z)};
    tr_give(cx, 1, emit1(cx, P_SELECT_N, NULL, 0, sel, 3));
  }
  return true;
}

/* pbroadcast[axis_name, source] (JAX's collective broadcast) is linear;
   its transpose (JAX's _pbroadcast_transpose_rule) sends the sum of the
   group's cotangents to the source member and zero to the others:
   select_n(axis_index == source, 0, psum(ct)).  Along the group's axes
   the operand does not vary over, every member already holds the
   source's value (the broadcast is the identity there): the sum and the
   choice of the source run over the varying axes only (none: the
   transpose is the identity). */
static PVal *axis_pv(TrCtx *cx, const Mesh *m, int a) {
  char nm[128];
  snprintf(nm, sizeof nm, "%.*s", m->axis[a].n, m->axis[a].p);
  return bld_pv_name(tr_builder(cx), nm);
}

static IrAtom is_member(TrCtx *cx, const Mesh *m, int a, int64_t c) {
  IrParam ip[1] = {kv("axis_name", axis_pv(cx, m, a))};
  IrAtom none[1] = {tr_ct(cx, 0)};
  IrAtom idx = emit1(cx, P_AXIS_INDEX, ip, 1, none, 0);
  IrAtom eq_in[2] = {idx, lit_of(cx, &idx.t, (double)c)};
  return emit1(cx, P_EQ, NULL, 0, eq_in, 2);
}

static bool tr_pbroadcast_source(TrCtx *cx) {
  if (cx->checking) return true;
  Builder *B = tr_builder(cx);
  const Mesh *m = bld_func(B)->mesh;
  const Attrs *at = cx->st->at;
  uint32_t vary = cx->st->in[0].t.vma;
  IrAtom ct = tr_ct(cx, 0);
  PVal *ax[SHM_MAXAXES];
  int nv = 0;
  IrAtom is_src;
  memset(&is_src, 0, sizeof is_src);
  int64_t g = at->i[0];
  for (int k = at->naxes - 1; k >= 0; k--) {     /* the source's coordinates, minor axis first */
    int a = at->axes[k];
    int64_t c = g % m->size[a];
    g /= m->size[a];
    if (!(vary & (1u << a))) continue;
    IrAtom e = is_member(cx, m, a, c);
    if (nv) {
      IrAtom both[2] = {e, is_src};
      e = emit1(cx, P_AND, NULL, 0, both, 2);
    }
    is_src = e;
    ax[nv++] = axis_pv(cx, m, a);
  }
  if (!nv) {
    tr_give(cx, 0, ct);
    return true;
  }
  IrParam sp[1] = {kv("axes", bld_pv_tuple(B, ax, nv))};
  IrAtom tsum = emit1(cx, P_PSUM, sp, 1, &ct, 1);
  const Type *t = &ct.t;
  if (t->rank > 0) {
    IrParam bp[2] = {kv("shape", bld_pv_ints(B, t->shape, t->rank)), kv("broadcast_dimensions", bld_pv_ints(B, NULL, 0))};
    is_src = emit1(cx, P_BROADCAST_IN_DIM, bp, 2, &is_src, 1);
  }
  Type z = *t;
  z.vma = 0;
  z.unred = 0;
  z.red = 0;
  z.lay = NULL;
  IrAtom sel[3] = {is_src, bld_zeros(B, &z), tsum};
  tr_give(cx, 0, emit1(cx, P_SELECT_N, NULL, 0, sel, 3));
  return true;
}

/* ---- calls and higher-order primitives ------------------------------------------------ */

static IrFunc *transpose_ex(IrProg *P, IrFunc *f, const bool *linear, const char *name, Span where,
                            const TrOpts *o);

static IrFunc *transpose_fn(Tr *T, IrFunc *f, const bool *lin) {
  return tr_linear_transpose(T->P, f, lin, f->name, T->where);
}

/* Operands of a transposed call: the non-linear operands, then one
   cotangent per result. */
static IrAtom *t_operands(TrCtx *cx, int first, int *n) {
  int nin = cx->st->nin, nout = cx->st->nout, k = 0;
  IrAtom *in = bld_alloc(tr_builder(cx), sizeof(IrAtom) * (size_t)(nin + nout + 1));
  for (int i = 0; i < first; i++) in[k++] = tr_in(cx, i);
  for (int i = first; i < nin; i++)
    if (!cx->lin_in[i]) in[k++] = tr_in(cx, i);
  for (int j = 0; j < nout; j++) in[k++] = tr_ct(cx, j);
  *n = k;
  return in;
}

static void give_results(TrCtx *cx, int first, IrAtom *out) {
  int k = 0;
  for (int i = first; i < cx->st->nin; i++)
    if (cx->lin_in[i]) tr_give(cx, i, out[k++]);
}

static bool captures_locals(Tr *T, const IrFunc *g) {
  for (int i = 0; i < g->ncaptured; i++)
    if (g->captured[i]->owner == T->f) return true;
  return false;
}

static bool tr_call(TrCtx *cx) {
  IrFunc *g = cx->st->callee;
  if (cx->checking) {
    if (captures_locals(cx->T, g))
      return tr_error(cx, "cannot transpose a call of %s: it reads local values of %s", g->name, cx->T->f->name);
    return true;
  }
  /* the transposed callee is a different function: name it g_t (and
     g_t's transpose g again), so that `show` does not print a call of g */
  size_t gl = strlen(g->name);
  char *tname = bld_alloc(tr_builder(cx), gl + 3);
  memcpy(tname, g->name, gl + 1);
  if (gl > 2 && !strcmp(g->name + gl - 2, "_t")) tname[gl - 2] = 0;
  else memcpy(tname + gl, "_t", 3);
  IrFunc *tg = tr_linear_transpose(cx->T->P, g, cx->lin_in, tname, cx->T->where);
  if (!tg) { cx->T->failed = true; return false; }
  int n;
  IrAtom *in = t_operands(cx, 0, &n);
  IrAtom *out = bld_alloc(tr_builder(cx), sizeof(IrAtom) * (size_t)(tg->nouts + 1));
  bld_call(tr_builder(cx), tg, in, n, out);
  give_results(cx, 0, out);
  return true;
}

static bool tr_cond(TrCtx *cx) {
  const IrStmt *st = cx->st;
  if (cx->checking) {
    if (cx->lin_in[0]) return tr_error(cx, "cond with a linear index is not linear");
    /* under an index that varies, a transposed branch must not need a
       collective along its axes: every linear operand varies along them
       (autodiff lifts them so), and the cotangents are summed outside */
    uint32_t v = st->in[0].t.vma;
    for (int k = 1; k < st->nin; k++)
      if (cx->lin_in[k] && (st->in[k].t.vma & v) != v)
        return tr_error(cx, "cannot transpose a cond whose index varies across devices over axes a linear operand "
                        "is invariant along");
    for (int b = 0; b < st->at->nfns; b++)
      if (captures_locals(cx->T, st->at->fns[b]))
        return tr_error(cx, "cannot transpose cond: a branch reads local values of %s", cx->T->f->name);
    return true;
  }
  Builder *B = tr_builder(cx);
  int nb = st->at->nfns;
  Attrs *at = bld_alloc(B, sizeof(Attrs));
  at->dtype = -1;
  at->fns = bld_alloc(B, sizeof(IrFunc *) * (size_t)nb);
  at->nfns = nb;
  PVal **br = bld_alloc(B, sizeof(PVal *) * (size_t)nb);
  for (int b = 0; b < nb; b++) {
    at->fns[b] = transpose_fn(cx->T, st->at->fns[b], cx->lin_in + 1);
    if (!at->fns[b]) { cx->T->failed = true; return false; }
    br[b] = bld_pv_fn(B, b);
  }
  int n;
  IrAtom *in = t_operands(cx, 1, &n);
  IrFunc *t0 = at->fns[0];
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(t0->nouts + 1));
  for (int j = 0; j < t0->nouts; j++) outt[j] = t0->outs[j].t;
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(t0->nouts + 1));
  IrParam ps[1] = {kv("branches", bld_pv_tuple(B, br, nb))};
  bld_higher(B, P_COND, at, ps, 1, in, n, outt, t0->nouts, out);
  give_results(cx, 1, out);
  return true;
}

/* A fori_loop's carries: linear ones (a zero constant counts), and
   constants the body passes through unchanged (the residuals autodiff
   stacks); the transposed loop carries the constants first, then the
   linear carries' cotangents, and runs backwards. */
static bool fori_const_carry(TrCtx *cx, int k) {
  const IrFunc *body = cx->st->at->fns[0];
  return !cx->lin_in[k] && !atom_zero(cx->T, &cx->st->in[k]) && body->outs[k].var == body->params[k + 1];
}

static bool tr_fori_loop(TrCtx *cx) {
  const IrStmt *st = cx->st;
  IrFunc *body = st->at->fns[0];
  int n = st->nout;
  if (cx->checking) {
    if (st->at->i[2])     /* as JAX, which transposes only a loop of static trip count */
      return tr_error(cx, "fori_loop whose bounds are values cannot be transposed (its trip count is not static)");
    for (int k = 0; k < n; k++)
      if (!cx->lin_in[k] && !atom_zero(cx->T, &st->in[k]) && !fori_const_carry(cx, k))
        return tr_error(cx, "fori_loop with both linear and constant carries cannot be transposed");
    if (captures_locals(cx->T, body))
      return tr_error(cx, "cannot transpose fori_loop: its body reads local values of %s", cx->T->f->name);
    return true;
  }
  Builder *B = tr_builder(cx);
  bool *lin = bld_alloc(B, sizeof(bool) * (size_t)(body->nparams + 1));
  bool *no_ct = bld_alloc(B, sizeof(bool) * (size_t)(n + 1));
  IrAtom *keep = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  int nc = 0;
  for (int k = 0; k < n; k++) {
    if (fori_const_carry(cx, k)) {
      no_ct[k] = true;
      memset(&keep[nc], 0, sizeof(IrAtom));
      keep[nc].var = body->params[k + 1];
      keep[nc++].t = body->params[k + 1]->t;
    } else {
      lin[k + 1] = true;
    }
  }
  Attrs *at = bld_alloc(B, sizeof(Attrs));
  at->dtype = -1;
  at->i[0] = st->at->i[0];
  at->i[1] = st->at->i[1];
  at->b[0] = !st->at->b[0];
  at->fns = bld_alloc(B, sizeof(IrFunc *));
  TrOpts o;
  memset(&o, 0, sizeof o);
  o.no_ct = no_ct;
  o.keep = keep;
  o.nkeep = nc;
  at->fns[0] = transpose_ex(cx->T->P, body, lin, body->name, cx->T->where, &o);
  at->nfns = 1;
  if (!at->fns[0]) { cx->T->failed = true; return false; }
  IrAtom *in = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(n + 1));
  int m = 0;
  for (int k = 0; k < n; k++)
    if (no_ct[k]) {
      in[m] = tr_in(cx, k);
      outt[m++] = st->in[k].t;
    }
  for (int k = 0; k < n; k++)
    if (!no_ct[k]) {
      in[m] = tr_ct(cx, k);
      outt[m] = st->in[k].t;
      if (in[m].t.vma != outt[m].vma) in[m] = bld_lift(B, in[m], outt[m].vma);
      m++;
    }
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  IrParam ps[4] = {kv("lower", bld_pv_int(B, at->i[0])), kv("upper", bld_pv_int(B, at->i[1])),
                   kv("body", bld_pv_fn(B, 0)), kv("reverse", bld_pv_bool(B, at->b[0]))};
  bld_higher(B, P_FORI_LOOP, at, ps, 4, in, n, outt, n, out);
  for (int k = 0, q = nc; k < n; k++)
    if (!no_ct[k]) tr_give(cx, k, out[q++]);
  return true;
}

/* scan: JAX's scan transpose.  The linear consts' cotangents are summed
   in carries, the carries' cotangents carried, the linear xs' cotangents
   stacked as ys; the scan runs the other way.  Its body is the transpose
   of the body (non-linear consts and xs, then a cotangent per result),
   its results added to the sums. */
static bool tr_scan(TrCtx *cx) {
  const IrStmt *st = cx->st;
  IrFunc *body = st->at->fns[0];
  int nc = (int)st->at->i[0], ncar = (int)st->at->i[1], n = st->nin;
  if (cx->checking) {
    for (int k = nc; k < nc + ncar; k++)
      if (!cx->lin_in[k] && !atom_zero(cx->T, &st->in[k]))
        return tr_error(cx, "scan with both linear and constant carries cannot be transposed");
    if (captures_locals(cx->T, body))
      return tr_error(cx, "cannot transpose scan: its body reads local values of %s", cx->T->f->name);
    return true;
  }
  Builder *B = tr_builder(cx);
  bool *lin = bld_alloc(B, sizeof(bool) * (size_t)(n + 1));
  for (int k = 0; k < n; k++) lin[k] = cx->lin_in[k] || (k >= nc && k < nc + ncar);
  IrFunc *tb = transpose_ex(cx->T->P, body, lin, body->name, cx->T->where, NULL);
  if (!tb) { cx->T->failed = true; return false; }
  /* the new body: residual consts, sums, carry cotangents, residual xs, y cotangents */
  Builder *W = bld_new(cx->T->P, body->name, body->parent, body->mesh, cx->T->where);
  IrAtom *tin = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + st->nout + 1)), *acc = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  IrAtom *cts = bld_alloc(B, sizeof(IrAtom) * (size_t)(st->nout + 1));
  int nt = 0, nacc = 0;
  for (int k = 0; k < nc; k++)
    if (!lin[k]) tin[nt++] = ir_var_atom(bld_param(W, body->params[k]->name, body->params[k]->t));
  for (int k = 0; k < nc; k++)
    if (lin[k]) acc[nacc++] = ir_var_atom(bld_param(W, str_c(""), body->params[k]->t));
  for (int j = 0; j < ncar; j++) cts[j] = ir_var_atom(bld_param(W, str_c(""), body->outs[j].t));
  for (int k = nc + ncar; k < n; k++)
    if (!lin[k]) tin[nt++] = ir_var_atom(bld_param(W, body->params[k]->name, body->params[k]->t));
  for (int j = ncar; j < st->nout; j++) cts[j] = ir_var_atom(bld_param(W, str_c(""), body->outs[j].t));
  for (int j = 0; j < st->nout; j++) tin[nt++] = cts[j];
  IrAtom *r = bld_alloc(B, sizeof(IrAtom) * (size_t)(tb->nouts + 1));
  if (!bld_inline(W, tb, tin, r)) { cx->T->failed = true; return false; }
  /* tb's results: a cotangent per linear param, in order: consts, carries, xs */
  IrAtom *wo = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  Type *ot = bld_alloc(B, sizeof(Type) * (size_t)(n + 1));
  int nw = 0, q = 0;
  for (int k = 0; k < n; k++) {
    if (!lin[k]) continue;
    IrAtom c = bld_lift(W, r[q++], body->params[k]->t.vma);
    if (k < nc) {            /* a linear const: its sum so far, plus this step's */
      IrAtom in2[2] = {acc[nw], c};
      if (!bld_prim(W, P_ADD, NULL, 0, in2, 2, &c)) { cx->T->failed = true; return false; }
    }
    ot[nw] = st->in[k].t;
    wo[nw++] = c;
  }
  IrFunc *wf = bld_finish(W, wo, nw);
  /* the transposed scan */
  IrAtom *in = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + st->nout + 1));
  int ni = 0;
  for (int k = 0; k < nc; k++)
    if (!lin[k]) in[ni++] = tr_in(cx, k);
  int tc = ni;
  for (int k = 0; k < nc; k++)
    if (lin[k]) {
      Type z = st->in[k].t;
      in[ni++] = bld_zeros(B, &z);
    }
  for (int j = 0; j < ncar; j++) in[ni++] = bld_lift(B, tr_ct(cx, j), cts[j].t.vma);
  int tcar = ni - tc;
  for (int k = nc + ncar; k < n; k++)
    if (!lin[k]) in[ni++] = tr_in(cx, k);
  for (int j = ncar; j < st->nout; j++) in[ni++] = tr_ct(cx, j);
  Attrs *at = bld_attrs_with(B, st->at, &wf, 1);
  at->i[0] = tc;
  at->i[1] = tcar;
  at->b[0] = !st->at->b[0];
  const char *keys[4] = {"jaxpr", "num_consts", "num_carry", "reverse"};
  PVal *vals[4] = {bld_pv_fn(B, 0), bld_pv_int(B, tc), bld_pv_int(B, tcar), bld_pv_bool(B, at->b[0])};
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(nw + 1));
  if (!bld_higher(B, P_SCAN, at, bld_params_with(B, st, keys, vals, 4), st->nparams, in, ni, ot, nw, out)) {
    cx->T->failed = true;
    return false;
  }
  for (int k = 0, p = 0; k < n; k++)
    if (lin[k]) tr_give(cx, k, out[p++]);
  return true;
}

static bool tr_shard_map(TrCtx *cx) {
  const IrStmt *st = cx->st;
  ShardMap *sm = st->at->ext;
  IrFunc *body = st->at->fns[0];
  if (cx->checking) {
    if (captures_locals(cx->T, body))
      return tr_error(cx, "cannot transpose shard_map: its body reads local values of %s", cx->T->f->name);
    return true;
  }
  Builder *B = tr_builder(cx);
  /* a cotangent comes in through the out_spec: it varies over every axis
     the spec mentions, even where the body's result is invariant */
  uint32_t *ct_vma = bld_alloc(B, sizeof(uint32_t) * (size_t)(st->nout + 1));
  for (int j = 0; j < st->nout; j++) ct_vma[j] = sm->out[j].mask;
  TrOpts o;
  memset(&o, 0, sizeof o);
  o.ct_vma = ct_vma;
  IrFunc *tb = transpose_ex(cx->T->P, body, cx->lin_in, body->name, cx->T->where, &o);
  if (!tb) { cx->T->failed = true; return false; }
  ShardMap *ts = bld_alloc(B, sizeof(ShardMap));
  ts->mesh = sm->mesh;
  ts->check_vma = sm->check_vma;
  int nlin = 0;
  for (int i = 0; i < st->nin; i++) nlin += cx->lin_in[i];
  ts->nin = st->nin - nlin + st->nout;
  ts->in = bld_alloc(B, sizeof(Spec) * (size_t)(ts->nin + 1));
  ts->nout = nlin;
  ts->out = bld_alloc(B, sizeof(Spec) * (size_t)(nlin + 1));
  PVal **ins = bld_alloc(B, sizeof(PVal *) * (size_t)(ts->nin + 1));
  PVal **outs = bld_alloc(B, sizeof(PVal *) * (size_t)(nlin + 1));
  int a = 0, b = 0;
  for (int i = 0; i < st->nin; i++) {
    if (cx->lin_in[i]) { ts->out[b] = sm->in[i]; outs[b++] = sm->in[i].src; }
    else { ts->in[a] = sm->in[i]; ins[a++] = sm->in[i].src; }
  }
  for (int j = 0; j < st->nout; j++) { ts->in[a] = sm->out[j]; ins[a++] = sm->out[j].src; }
  Attrs *at = bld_alloc(B, sizeof(Attrs));
  at->dtype = -1;
  at->ext = ts;
  at->fns = bld_alloc(B, sizeof(IrFunc *));
  at->fns[0] = tb;
  at->nfns = 1;
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(nlin + 1));
  b = 0;
  for (int i = 0; i < st->nin; i++)
    if (cx->lin_in[i]) outt[b++] = st->in[i].t;
  int n;
  IrAtom *in = t_operands(cx, 0, &n);
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(nlin + 1));
  char mname[128];
  snprintf(mname, sizeof mname, "%.*s", sm->mesh->name.n, sm->mesh->name.p);
  IrParam ps[6] = {kv("f", bld_pv_fn(B, 0)), kv("mesh", bld_pv_name(B, mname)), kv("in_specs", bld_pv_tuple(B, ins, ts->nin)),
                   kv("out_specs", bld_pv_tuple(B, outs, nlin)), kv("check_vma", bld_pv_bool(B, sm->check_vma)),
                   kv("axis_names", rule_stmt_param(st, "axis_names"))};
  /* (a partial-manual shard_map's transpose is manual over the same axes) */
  bld_higher(B, P_SHARD_MAP, at, ps, sm->mesh->full && ps[5].v ? 6 : 5, in, n, outt, nlin, out);
  give_results(cx, 0, out);
  return true;
}

/* ---- the transformation ------------------------------------------------------------------ */

static bool run_rule(Tr *T, IrStmt *st, bool checking, IrAtom *cts, bool *has) {
  TrCtx cx;
  cx.T = T;
  cx.st = st;
  cx.checking = checking;
  cx.lin_in = bld_alloc(T->B, sizeof(bool) * (size_t)(st->nin + 1));
  for (int k = 0; k < st->nin; k++) cx.lin_in[k] = atom_lin(T, &st->in[k]);
  cx.cts = cts;
  cx.has_ct = has;
  if (st->prim < 0) return tr_call(&cx);
  TransFn fn = tr_rules[st->prim];
  if (!fn) {
    diag_error(st->sp, "%s is not linear: it cannot be transposed", prim_table[st->prim].name);
    T->failed = true;
    return false;
  }
  return fn(&cx);
}

/* Copy a non-linear equation into the transpose. */
static void copy_forward(Tr *T, IrStmt *st) {
  IrAtom *in = bld_alloc(T->B, sizeof(IrAtom) * (size_t)(st->nin + 1));
  IrAtom *out = bld_alloc(T->B, sizeof(IrAtom) * (size_t)(st->nout + 1));
  for (int k = 0; k < st->nin; k++) in[k] = map_atom(T, &st->in[k]);
  bool ok;
  /* a custom_jvp_call stays one (it keeps its rule for a later derivative) */
  if (st->prim < 0 && (st->via == P_CUSTOM_JVP_CALL + 1 || st->via == P_CUSTOM_VJP_CALL + 1)) ok = bld_copy(T->B, st, in, out);
  else if (st->prim < 0) ok = bld_call(T->B, st->callee, in, st->nin, out);
  else if (prim_table[st->prim].vrule == VR_SPECIAL) {
    for (int k = 0; k < st->at->nfns; k++)
      if (captures_locals(T, st->at->fns[k])) {
        diag_error(st->sp, "cannot transpose %s: %s reads local values of the function", T->f->name,
                   prim_table[st->prim].name);
        T->failed = true;
        return;
      }
    Type *outt = bld_alloc(T->B, sizeof(Type) * (size_t)(st->nout + 1));
    for (int j = 0; j < st->nout; j++) outt[j] = st->out[j]->t;
    ok = bld_higher(T->B, st->prim, st->at, st->params, st->nparams, in, st->nin, outt, st->nout, out);
  } else {
    ok = bld_prim_fns(T->B, st->prim, st->params, st->nparams, in, st->nin, out, st->at);
  }
  if (!ok) { T->failed = true; return; }
  for (int j = 0; j < st->nout; j++) {
    if (out[j].var) out[j].var->name = st->out[j]->name;
    T->prim[st->out[j]->slot] = out[j];
  }
  /* zeros stay zeros through these */
  static const int keep_zero[] = {P_BROADCAST_IN_DIM, P_PBROADCAST, P_RESHAPE, P_CONVERT_ELEMENT_TYPE, P_COPY,
                                  P_SQUEEZE, P_EXPAND_DIMS, P_TRANSPOSE};
  for (size_t k = 0; st->prim >= 0 && st->nin == 1 && k < sizeof keep_zero / sizeof *keep_zero; k++)
    if (st->prim == keep_zero[k] && atom_zero(T, &st->in[0])) T->zero[st->out[0]->slot] = true;
}

IrFunc *tr_linear_transpose(IrProg *P, IrFunc *f, const bool *linear, const char *name, Span where) {
  return transpose_ex(P, f, linear, name, where, NULL);
}

IrFunc *tr_transpose_with(IrProg *P, IrFunc *f, const bool *linear, const char *name, Span where, const TrOpts *o) {
  return transpose_ex(P, f, linear, name, where, o);
}

/* Drop primitive equations and literals whose results nothing reads: the
   constants copied forward that only fed linear equations (zeros a
   previous transpose made, for instance), so that transposing twice gives
   back the original equations and no dead collective is run. */
static void drop_dead(Tr *T, IrFunc *g) {
  int *uses = bld_alloc(T->B, sizeof(int) * (size_t)(g->nslots + 1));
#define USE(a, d) do { if ((a).var && (a).var->owner == g) uses[(a).var->slot] += (d); } while (0)
  for (int i = 0; i < g->nbody; i++) {
    IrStmt *st = g->body[i];
    if (st->k == IS_EQN) {
      for (int k = 0; k < st->nin; k++) USE(st->in[k], 1);
      for (int k = 0; st->at && k < st->at->nfns; k++)
        for (int c = 0; st->at->fns[k] && c < st->at->fns[k]->ncaptured; c++)
          if (st->at->fns[k]->captured[c]->owner == g) uses[st->at->fns[k]->captured[c]->slot]++;
    } else if (st->k == IS_PRINT) {
      for (int k = 0; k < st->nitems; k++) USE(st->items[k].atom, 1);
    } else if (st->k == IS_SAVE) {
      USE(st->in[0], 1);
    }
  }
  for (int j = 0; j < g->nouts; j++) USE(g->outs[j], 1);
  int n = g->nbody;
  bool *dead = bld_alloc(T->B, sizeof(bool) * (size_t)(n + 1));
  for (int i = n - 1; i >= 0; i--) {
    IrStmt *st = g->body[i];
    bool pure = (st->k == IS_EQN && st->prim >= 0 && prim_table[st->prim].vrule != VR_SPECIAL) || st->k == IS_CONST;
    if (!pure) continue;
    bool used = false;
    for (int j = 0; j < st->nout; j++) used |= uses[st->out[j]->slot] > 0;
    if (used) continue;
    dead[i] = true;
    if (st->k == IS_EQN)
      for (int k = 0; k < st->nin; k++) USE(st->in[k], -1);
  }
#undef USE
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!dead[i]) g->body[m++] = g->body[i];
  g->nbody = m;
}

/* The transpose's parameters: f's non-linear ones, then a cotangent per
   result of f (of variance o->ct_vma[j] when given; none where o->no_ct
   says, and the constant 1 where o->seed_one does); cts[] gets them. */
static void tr_params(Tr *T, const bool *linear, const TrOpts *o, IrAtom *cts, bool *has) {
  IrFunc *f = T->f;
  for (int i = 0; i < f->nparams; i++) {
    IrVar *p = f->params[i];
    if (linear[i]) { T->lin[p->slot] = true; continue; }
    IrVar *v = bld_param(T->B, p->name, p->t);
    memset(&T->prim[p->slot], 0, sizeof(IrAtom));
    T->prim[p->slot].var = v;
    T->prim[p->slot].t = v->t;
  }
  for (int j = 0; j < f->nouts; j++) {
    const IrAtom *out = &f->outs[j];
    Type ctt = out->t;
    if (o && o->ct_vma) ctt.vma = o->ct_vma[j];
    if (o && o->no_ct && o->no_ct[j]) continue;
    has[j] = true;
    if (o && o->seed_one && o->seed_one[j]) {
      IrAtom one;
      memset(&one, 0, sizeof one);
      one.lit = bld_keep(T->B, arr_scalar_f((DType)ctt.dt, 1.0));
      one.t.dt = ctt.dt;
      one.sp = T->where;
      cts[j] = bld_lift(T->B, one, ctt.vma);
      continue;
    }
    memset(&cts[j], 0, sizeof(IrAtom));
    cts[j].var = bld_param(T->B, str_c(""), ctt);
    cts[j].t = ctt;
    name_after(T, &cts[j], out->var && out->var->name.n ? out->var->name : str_c("ct"));
  }
}

/* The forward pass: equations that touch no linear value are kept (they
   compute constants the transpose needs), the linear ones checked by
   their rules and listed in lin[] in order; returns how many. */
static int tr_forward(Tr *T, IrStmt **lin, bool prints) {
  IrFunc *f = T->f;
  int nlin = 0;
  Span where = bld_where(T->B);
  for (int i = 0; i < f->nbody && !T->failed; i++) {
    IrStmt *st = f->body[i];
    /* each forward equation kept is written at its own line (the cost
       model's table and the debugger name it there) */
    bld_set_where(T->B, st->sp);
    if (st->k == IS_SAVE && prints) {
      if (!atom_lin(T, &st->in[0])) bld_save(T->B, st, map_atom(T, &st->in[0]));
      continue;
    }
    if (st->k == IS_PRINT && prints) {
      IrPrintItem *items = bld_alloc(T->B, sizeof(IrPrintItem) * (size_t)(st->nitems + 1));
      bool lin_item = false;
      for (int k = 0; k < st->nitems; k++) {
        items[k] = st->items[k];
        lin_item |= atom_lin(T, &items[k].atom);
        if (items[k].atom.var || items[k].atom.lit) items[k].atom = map_atom(T, &st->items[k].atom);
      }
      if (!lin_item) bld_print_like(T->B, items, st->nitems, st);
      continue;
    }
    if (st->k == IS_CONST) {
      IrAtom a;
      bld_const(T->B, st->value, &a);
      a.var->name = st->out[0]->name;
      T->prim[st->out[0]->slot] = a;
      continue;
    }
    if (st->k != IS_EQN) continue;
    bool any = false;
    for (int k = 0; k < st->nin; k++) any |= atom_lin(T, &st->in[k]);
    if (!any) { copy_forward(T, st); continue; }
    if (!run_rule(T, st, true, NULL, NULL)) break;
    for (int j = 0; j < st->nout; j++) T->lin[st->out[j]->slot] = true;
    lin[nlin++] = st;
  }
  bld_set_where(T->B, where);
  return nlin;
}

/* The backward pass: the results' cotangents seeded, the linear
   equations walked last to first, each through its transpose rule. */
static void tr_backward(Tr *T, IrAtom *cts, const bool *has_ct, IrStmt **lin, int nlin) {
  IrFunc *f = T->f;
  for (int j = 0; j < f->nouts; j++) {
    const IrAtom *o = &f->outs[j];
    if (!atom_lin(T, o) || !has_ct[j]) continue;
    accumulate(T, o->var, cts[j]);
  }
  /* each equation's transpose is written at its line, as a backward
     pass's (the cost model's table and the debugger name that line) */
  Span where = bld_where(T->B);
  bld_set_backward(T->B, true);
  for (int i = nlin - 1; i >= 0 && !T->failed; i--) {
    IrStmt *st = lin[i];
    bld_set_where(T->B, st->sp);
    IrAtom *ct = bld_alloc(T->B, sizeof(IrAtom) * (size_t)(st->nout + 1));
    bool *has = bld_alloc(T->B, sizeof(bool) * (size_t)(st->nout + 1));
    bool any = false;
    for (int j = 0; j < st->nout; j++) {
      int s = st->out[j]->slot;
      if (T->has[s]) { ct[j] = T->ct[s]; has[j] = true; any = true; }
    }
    if (any) run_rule(T, st, false, ct, has);
  }
  bld_set_backward(T->B, false);
  bld_set_where(T->B, where);
}

/* The results: a cotangent per linear parameter (zeros where nothing
   reached it). */
static void tr_results(Tr *T, const bool *linear, const TrOpts *o) {
  IrFunc *f = T->f;
  const uint32_t *ct_vma = o ? o->ct_vma : NULL;
  int nkeep = o ? o->nkeep : 0;
  IrAtom *outs = bld_alloc(T->B, sizeof(IrAtom) * (size_t)(f->nparams + nkeep + 1));
  int n = 0;
  for (int k = 0; k < nkeep; k++) outs[n++] = map_atom(T, &o->keep[k]);
  for (int i = 0; i < f->nparams; i++) {
    if (!linear[i]) continue;
    IrVar *p = f->params[i];
    outs[n++] = T->has[p->slot] ? T->ct[p->slot] : bld_zeros(T->B, &p->t);
    /* a shard_map body's result leaves through an out_spec that mentions
       every axis of the parameter's variance: an invariant value is tiled
       there, so a pbroadcast just before the result is not needed */
    const IrStmt *pb = ct_vma ? def_of(T, &outs[n - 1]) : NULL;
    if (pb && pb->prim == P_PBROADCAST && (pb->in[0].var || pb->in[0].lit)) outs[n - 1] = pb->in[0];
  }
  bld_finish(T->B, outs, n);
}

static IrFunc *transpose_ex(IrProg *P, IrFunc *f, const bool *linear, const char *name, Span where,
                            const TrOpts *o) {
  Tr T;
  memset(&T, 0, sizeof T);
  T.P = P;
  T.f = f;
  T.where = where;
  T.B = bld_new(P, name, f->parent, f->mesh, where);
  IrFunc *g = bld_func(T.B);
  g->scope_as = f->scope_as ? f->scope_as : f;
  int ns = f->nslots + 1;
  T.lin = bld_alloc(T.B, sizeof(bool) * (size_t)ns);
  T.prim = bld_alloc(T.B, sizeof(IrAtom) * (size_t)ns);
  T.ct = bld_alloc(T.B, sizeof(IrAtom) * (size_t)ns);
  T.has = bld_alloc(T.B, sizeof(bool) * (size_t)ns);
  T.zero = bld_alloc(T.B, sizeof(bool) * (size_t)ns);
  int errs = diag_count();
  IrAtom *cts = bld_alloc(T.B, sizeof(IrAtom) * (size_t)(f->nouts + 1));
  bool *has_ct = bld_alloc(T.B, sizeof(bool) * (size_t)(f->nouts + 1));
  tr_params(&T, linear, o, cts, has_ct);
  IrStmt **lin = bld_alloc(T.B, sizeof(IrStmt *) * (size_t)(f->nbody + 1));
  int nlin = tr_forward(&T, lin, o && o->prints);
  if (T.failed || diag_count() != errs) return NULL;
  tr_backward(&T, cts, has_ct, lin, nlin);
  if (T.failed || diag_count() != errs) return NULL;
  tr_results(&T, linear, o);
  drop_dead(&T, g);
  return g;
}
