/*
** indexing.c — gather and the scatter family: their shape rules (checks
** and messages in the order of JAX's _gather_shape_rule and
** _scatter_shape_rule) and their kernels.  indexing.h gives the semantics.
**
** Both kernels walk one plan (Plan): the "batch" positions of the big side
** (gather's result, scatter's updates), one per index vector, and for each
** the window it moves between the big side and the operand.  A window is
** moved by the copy engine (arr_copy_strided) for gather, scatter and
** gather's fill, and by a strided combining loop for the other scatters.
**
** Attrs: l[0..4] the five dimension-number tuples in JAX's field order,
** l[5] the window size along each operand dimension (gather: slice_sizes;
** scatter: 1 on inserted and batching dimensions, else the updates'
** window size), i[0] the mode (IDX_CLIP ...), i[1] the combination
** (IDX_SET ...), b[0] a fill value given (else the dtype's default),
** f[0] / i[2] that value as a float / an integer.
**
** A big gather runs on two threads (par.h), each writing its own rows; a
** scatter runs in order on one, which keeps its results defined.
*/
#include <math.h>
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>
#include "err.h"
#include "half.h"
#include "indexing.h"
#include "par.h"

#define ANEWN(A, T, n) ((T *)arena_alloc((A), sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))
#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt
#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

static const char *const gather_fields[5] = {"offset_dims", "collapsed_slice_dims", "start_index_map",
                                             "operand_batching_dims", "start_indices_batching_dims"};
static const char *const scatter_fields[5] = {"update_window_dims", "inserted_window_dims",
                                              "scatter_dims_to_operand_dims", "operand_batching_dims",
                                              "scatter_indices_batching_dims"};
static const char *const mode_names[3] = {"CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"};

/* ---- parameter values ------------------------------------------------------------ */

static PVal *kw(PVal *m, const char *key, PVal *v, PVal **slot) {
  memset(m, 0, sizeof *m);
  m->k = PV_KW;
  m->s.p = key;
  m->s.n = (int)strlen(key);
  m->items = slot;
  slot[0] = v;
  m->n = 1;
  return m;
}

PVal *idx_dnums_swap(const PVal *dn, PVal *m, PVal **items) {
  bool to_scatter = dn->s.n >= 22 && !memcmp(dn->s.p + dn->s.n - 22, "GatherDimensionNumbers", 22);
  const char *const *f = to_scatter ? scatter_fields : gather_fields;
  PVal *call = &m[5];
  *call = *dn;
  call->s.p = to_scatter ? "ScatterDimensionNumbers" : "GatherDimensionNumbers";
  call->s.n = (int)strlen(call->s.p);
  call->items = items;
  call->n = 5;
  for (int i = 0; i < 5; i++) {
    m[i] = *dn->items[i];
    m[i].s.p = f[i];
    m[i].s.n = (int)strlen(f[i]);
    items[i] = &m[i];
  }
  return call;
}

PVal *idx_mode_pv(int mode, PVal *m) {
  static const char *const full[3] = {"GatherScatterMode.CLIP", "GatherScatterMode.FILL_OR_DROP",
                                      "GatherScatterMode.PROMISE_IN_BOUNDS"};
  memset(m, 0, sizeof *m);
  m->k = PV_NAME;
  m->s.p = full[mode];
  m->s.n = (int)strlen(full[mode]);
  return m;
}

/* The ints of a tuple (or one int) into l; false if it is something else. */
static bool tuple_ints(RuleCtx *cx, PVal *v, IntList *l) {
  v = pv_unparen(v);
  if (v->k == PV_INT) {
    l->n = 1;
    l->v = rule_alloc_ints(cx, 1);
    l->v[0] = v->i;
    return true;
  }
  if (v->k != PV_TUPLE && v->k != PV_LIST) return false;
  l->n = v->n;
  l->v = rule_alloc_ints(cx, v->n);
  for (int i = 0; i < v->n; i++) {
    PVal *e = pv_unparen(v->items[i]);
    if (e->k != PV_INT) return false;
    l->v[i] = e->i;
  }
  return true;
}

/* Does the name (perhaps dotted: jax.lax.GatherDimensionNumbers) end in
   `want` as a whole dotted part? */
static bool name_is(Str s, const char *want) {
  int n = (int)strlen(want);
  return s.n >= n && !memcmp(s.p + s.n - n, want, (size_t)n) && (s.n == n || s.p[s.n - n - 1] == '.');
}

/* dimension_numbers=GatherDimensionNumbers(...) or ScatterDimensionNumbers(...):
   the fields by keyword or position; the batching ones may be absent. */
static bool read_dnums(RuleCtx *cx, bool scatter, IntList dn[5]) {
  const char *key = "dimension_numbers";
  const char *cls = scatter ? "ScatterDimensionNumbers" : "GatherDimensionNumbers";
  const char *const *f = scatter ? scatter_fields : gather_fields;
  PVal *v = rule_get(cx, key);
  if (!v) return rule_missing(cx, key);
  v = pv_unparen(v);
  if (v->k != PV_CALL || !name_is(v->s, cls))
    return rule_param_error(cx, key, "%s's dimension_numbers must be %s(%s=(...), %s=(...), %s=(...), ...)",
                            cx->prim, cls, f[0], f[1], f[2]);
  bool seen[5] = {false};
  for (int i = 0; i < 5; i++) dn[i].n = 0, dn[i].v = rule_alloc_ints(cx, 1);
  for (int i = 0; i < v->n; i++) {
    PVal *e = v->items[i];
    int which = i;
    PVal *val = e;
    if (e->k == PV_KW) {
      which = -1;
      for (int k = 0; k < 5; k++)
        if (str_eqc(e->s, f[k])) which = k;
      if (which < 0)
        return rule_param_error(cx, key, "%s has no field '%.*s' (its fields: %s, %s, %s, %s, %s)", cls, e->s.n,
                                e->s.p, f[0], f[1], f[2], f[3], f[4]);
      val = e->items[0];
    } else if (i >= 5) {
      return rule_param_error(cx, key, "%s has 5 fields, got %d values", cls, v->n);
    }
    if (seen[which]) return rule_param_error(cx, key, "%s's field %s is given twice", cls, f[which]);
    seen[which] = true;
    if (!tuple_ints(cx, val, &dn[which]))
      return rule_param_error(cx, key, "%s's field %s must be a tuple of integers", cls, f[which]);
  }
  for (int k = 0; k < 3; k++)
    if (!seen[k]) return rule_param_error(cx, key, "%s needs the field %s", cls, f[k]);
  PVal *call = rule_pv(cx, PV_CALL);
  call->s.p = cls;
  call->s.n = (int)strlen(cls);
  call->n = 5;
  call->items = ANEWN(cx->arena, PVal *, 5);
  for (int k = 0; k < 5; k++) {
    PVal *m = rule_pv(cx, PV_KW);
    PVal **slot = ANEWN(cx->arena, PVal *, 1);
    call->items[k] = kw(m, f[k], rule_pv_ints(cx, dn[k].v, dn[k].n, PV_TUPLE), slot);
  }
  rule_record(cx, key, call);
  return true;
}

/* mode: GatherScatterMode.NAME, NAME, the enum's value, a string, or
   None (JAX's from_any: FILL_OR_DROP); absent: dflt. */
static bool read_mode(RuleCtx *cx, int dflt, int *mode) {
  PVal *v = rule_get(cx, "mode");
  int m = -1;
  if (!v) m = dflt;
  else {
    v = pv_unparen(v);
    if (v->k == PV_INT && v->i >= 1 && v->i <= 3) m = (int)v->i - 1;
    else if (v->k == PV_NONE) m = IDX_FILL_OR_DROP;
    else if (v->k == PV_NAME) {
      for (int k = 0; k < 3; k++)
        if (name_is(v->s, mode_names[k])) m = k;
    } else if (v->k == PV_STR) {
      if (str_eqc(v->s, "clip")) m = IDX_CLIP;
      else if (str_eqc(v->s, "fill") || str_eqc(v->s, "drop")) m = IDX_FILL_OR_DROP;
      else if (str_eqc(v->s, "promise_in_bounds")) m = IDX_PROMISE_IN_BOUNDS;
    }
    if (m < 0 && v->k == PV_NAME && name_is(v->s, "ONE_HOT"))
      return rule_param_error(cx, "mode", "%s with mode ONE_HOT is not supported", cx->prim);
    if (m < 0)
      return rule_param_error(cx, "mode",
                              "%s's mode must be GatherScatterMode.CLIP, FILL_OR_DROP or PROMISE_IN_BOUNDS "
                              "(also 1, 2, 3 or 'clip', 'fill', 'drop', 'promise_in_bounds')", cx->prim);
  }
  *mode = m;
  rule_record(cx, "mode", idx_mode_pv(m, rule_pv(cx, PV_NAME)));
  return true;
}

/* ---- checks shared by the rules --------------------------------------------------- */

static bool is_sorted(const IntList *l) {
  for (int i = 1; i < l->n; i++)
    if (l->v[i] < l->v[i - 1]) return false;
  return true;
}

static bool has_dup(const IntList *l) {
  for (int i = 0; i < l->n; i++)
    for (int j = 0; j < i; j++)
      if (l->v[i] == l->v[j]) return true;
  return false;
}

static bool contains(const IntList *l, int64_t x) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == x) return true;
  return false;
}

/* A dimension list: sorted (when asked), no repeats, each in [0, rank). */
static bool check_dims(RuleCtx *cx, const IntList *l, const char *name, int rank, bool sorted, const char *of) {
  LsBuf b;
  if (sorted && !is_sorted(l))
    return rule_error(cx, "%s's %s must be sorted, got %s", cx->prim, name, rule_ls(&b, l));
  if (has_dup(l)) return rule_error(cx, "%s's %s must not repeat, got %s", cx->prim, name, rule_ls(&b, l));
  for (int i = 0; i < l->n; i++)
    if (l->v[i] < 0 || l->v[i] >= rank)
      return rule_error(cx, "%s's %s %s must be dimensions of the %s, in [0, %d)", cx->prim, name, rule_ls(&b, l),
                        of, rank);
  return true;
}

static bool check_disjoint(RuleCtx *cx, const IntList *a, const char *na, const IntList *b, const char *nb) {
  LsBuf x, y;
  for (int i = 0; i < a->n; i++)
    if (contains(b, a->v[i]))
      return rule_error(cx, "%s's %s %s and %s %s must be disjoint", cx->prim, na, rule_ls(&x, a), nb,
                        rule_ls(&y, b));
  return true;
}

/* The indices: integer, with the index vector as their last dimension. */
static bool check_indices(RuleCtx *cx, const Type *ix) {
  TyBuf a;
  if (!dtype_is_int((DType)ix->dt))
    return rule_error(cx, "%s's indices must have an integer dtype, got %s", cx->prim, rule_ty(&a, ix));
  if (ix->rank < 1)
    return rule_error(cx, "%s's indices must have at least one dimension (the last holds each index vector), got %s",
                      cx->prim, rule_ty(&a, ix));
  return true;
}

/* The batching dimensions: as many of the operand's as of the indices',
   of equal sizes, the index vector not among them. */
static bool check_batching(RuleCtx *cx, const IntList dn[5], const char *names[5], const Type *op, const Type *ix) {
  LsBuf b, c;
  if (!check_dims(cx, &dn[3], names[3], op->rank, true, "operand")) return false;
  if (!check_disjoint(cx, &dn[1], names[1], &dn[3], names[3])) return false;
  if (!check_disjoint(cx, &dn[2], names[2], &dn[3], names[3])) return false;
  if (!check_dims(cx, &dn[4], names[4], ix->rank, false, "indices")) return false;
  if (contains(&dn[4], ix->rank - 1))
    return rule_error(cx, "%s's %s %s must not name the index vector dimension %d (the last of the indices)", cx->prim,
                      names[4], rule_ls(&b, &dn[4]), ix->rank - 1);
  if (dn[3].n != dn[4].n)
    return rule_error(cx, "%s needs as many %s as %s, got %s and %s", cx->prim, names[3], names[4],
                      rule_ls(&b, &dn[3]), rule_ls(&c, &dn[4]));
  for (int i = 0; i < dn[3].n; i++)
    if (op->shape[dn[3].v[i]] != ix->shape[dn[4].v[i]])
      return rule_error(cx, "%s's operand batching dimension %lld (size %lld) and indices batching dimension %lld "
                        "(size %lld) must have the same size", cx->prim, (long long)dn[3].v[i],
                        (long long)op->shape[dn[3].v[i]], (long long)dn[4].v[i], (long long)ix->shape[dn[4].v[i]]);
  return true;
}

/* The index map: one operand dimension per index vector entry. */
static bool check_index_map(RuleCtx *cx, const IntList *m, const char *name, const Type *op, const Type *ix) {
  LsBuf b;
  TyBuf a;
  if (m->n != ix->shape[ix->rank - 1])
    return rule_error(cx, "%s's %s %s must have one entry per index vector entry: the index vectors of %s have %lld",
                      cx->prim, name, rule_ls(&b, m), rule_ty(&a, ix), (long long)ix->shape[ix->rank - 1]);
  return check_dims(cx, m, name, op->rank, false, "operand");
}

/* ---- gather's rule ------------------------------------------------------------- */

/* fill_value: None (the dtype's default) or a number. */
static bool read_fill(RuleCtx *cx, int dt, Attrs *at) {
  PVal *v = rule_get(cx, "fill_value");
  PVal *u = v ? pv_unparen(v) : NULL;
  at->b[0] = false;
  if (u && u->k != PV_NONE) {
    if (u->k == PV_INT || u->k == PV_BOOL) at->f[0] = (double)u->i, at->i[2] = u->i;
    else if (u->k == PV_FLOAT) at->f[0] = u->f, at->i[2] = fabs(u->f) < 9e18 ? (int64_t)u->f : 0;
    else return rule_param_error(cx, "fill_value", "gather's fill_value must be None or a number");
    if (u->k == PV_FLOAT && dtype_is_int((DType)dt) && !(u->f == floor(u->f) && fabs(u->f) < 9e18))
      return rule_param_error(cx, "fill_value", "gather's fill_value %g does not fit the integer operand", u->f);
    at->b[0] = true;
  }
  rule_record(cx, "fill_value", u ? u : rule_pv(cx, PV_NONE));
  return true;
}

static bool gather_checks(RuleCtx *cx, const IntList dn[5], const IntList *ss, const Type *op, const Type *ix) {
  static const char *names[5] = {"offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
                                 "start_indices_batching_dims"};
  LsBuf b, c, d, e;
  TyBuf a;
  int out_rank = dn[0].n + ix->rank - 1;
  if (!check_dims(cx, &dn[0], names[0], out_rank, true, "result")) return false;
  if (!check_index_map(cx, &dn[2], names[2], op, ix)) return false;
  if (!check_dims(cx, &dn[1], names[1], op->rank, true, "operand")) return false;
  if (!check_batching(cx, dn, names, op, ix)) return false;
  if (ss->n != op->rank)
    return rule_error(cx, "gather's slice_sizes %s must have one entry per dimension of the operand %s",
                      rule_ls(&b, ss), rule_ty(&a, op));
  if (ss->n != dn[0].n + dn[1].n + dn[3].n)
    return rule_error(cx, "gather: every operand dimension must be an offset, collapsed or batching one: "
                      "slice_sizes %s, offset_dims %s, collapsed_slice_dims %s, operand_batching_dims %s",
                      rule_ls(&b, ss), rule_ls(&c, &dn[0]), rule_ls(&d, &dn[1]), rule_ls(&e, &dn[3]));
  bool empty = false;
  for (int k = 0; k < ix->rank; k++) empty |= ix->shape[k] == 0;
  for (int k = 0; k < ss->n && !empty; k++)
    if (ss->v[k] < 0 || ss->v[k] > op->shape[k])
      return rule_error(cx, "gather's slice_sizes %s do not fit in the operand %s (dimension %d)", rule_ls(&b, ss),
                        rule_ty(&a, op), k);
  for (int i = 0; i < dn[1].n; i++)
    if (ss->v[dn[1].v[i]] != 1)
      return rule_error(cx, "gather can collapse only dimensions of slice size 1, but dimension %lld has %lld",
                        (long long)dn[1].v[i], (long long)ss->v[dn[1].v[i]]);
  for (int i = 0; i < dn[3].n; i++)
    if (ss->v[dn[3].v[i]] > 1)
      return rule_error(cx, "gather's batching dimensions must have slice size 0 or 1, but dimension %lld has %lld",
                        (long long)dn[3].v[i], (long long)ss->v[dn[3].v[i]]);
  return true;
}

bool idx_rule_gather(RARGS) {
  (void)nin;
  IntList *dn = at->l, *ss = &at->l[5];
  if (!read_dnums(cx, false, dn)) return false;
  int mode;
  if (!read_mode(cx, IDX_PROMISE_IN_BOUNDS, &mode)) return false;
  if (!read_fill(cx, in[0].dt, at)) return false;
  bool flag;
  if (!rule_bool(cx, "indices_are_sorted", false, &flag)) return false;
  if (!rule_ints(cx, "slice_sizes", true, ss)) return false;
  if (!rule_bool(cx, "unique_indices", false, &flag)) return false;
  if (!check_indices(cx, &in[1])) return false;
  if (!gather_checks(cx, dn, ss, &in[0], &in[1])) return false;
  int rank = dn[0].n + in[1].rank - 1;
  if (!rule_check_rank(cx, rank)) return false;
  int64_t shape[SHM_MAXRANK];
  int bi = 0, wi = 0;
  for (int d = 0; d < rank; d++) {
    if (contains(&dn[0], d)) {
      while (contains(&dn[1], wi) || contains(&dn[3], wi)) wi++;
      shape[d] = ss->v[wi++];
    } else shape[d] = in[1].shape[bi++];
  }
  rule_set_type(out, in[0].dt, rank, shape);
  at->i[0] = mode;
  return true;
}

/* ---- scatter's rule -------------------------------------------------------------- */

static int scatter_op(const char *name) {
  static const char *const names[] = {"scatter", "scatter-add", "scatter-sub", "scatter-mul", "scatter-min",
                                      "scatter-max"};
  for (int k = 0; k < 6; k++)
    if (!strcmp(name, names[k])) return k;
  return IDX_SET;
}

static bool scatter_checks(RuleCtx *cx, const IntList dn[5], const Type *op, const Type *ix, const Type *up) {
  static const char *names[5] = {"update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                                 "operand_batching_dims", "scatter_indices_batching_dims"};
  TyBuf a, b;
  int want = ix->rank - 1 + dn[0].n;
  if (up->rank != want)
    return rule_error(cx, "%s's updates %s must have rank %d (the indices' batch dimensions, %d, and "
                      "update_window_dims, %d)", cx->prim, rule_ty(&a, up), want, ix->rank - 1, dn[0].n);
  if (!check_dims(cx, &dn[0], names[0], up->rank, true, "updates")) return false;
  if (!check_dims(cx, &dn[1], names[1], op->rank, true, "operand")) return false;
  if (!check_batching(cx, dn, names, op, ix)) return false;
  if (op->rank != dn[0].n + dn[1].n + dn[3].n)
    return rule_error(cx, "%s: every operand dimension must be a window, inserted or batching one: the operand %s "
                      "has %d, the dimension numbers name %d", cx->prim, rule_ty(&a, op), op->rank,
                      dn[0].n + dn[1].n + dn[3].n);
  if (!check_index_map(cx, &dn[2], names[2], op, ix)) return false;
  /* the window dimensions of updates fit in the operand's */
  int wi = 0;
  for (int i = 0; i < dn[0].n; i++) {
    while (contains(&dn[1], wi) || contains(&dn[3], wi)) wi++;
    if (up->shape[dn[0].v[i]] > op->shape[wi])
      return rule_error(cx, "%s's updates %s: window dimension %lld (size %lld) is bigger than operand dimension %d "
                        "(size %lld) of %s", cx->prim, rule_ty(&a, up), (long long)dn[0].v[i],
                        (long long)up->shape[dn[0].v[i]], wi, (long long)op->shape[wi], rule_ty(&b, op));
    wi++;
  }
  /* the scatter dimensions of updates are the indices' batch dimensions */
  int si = 0;
  for (int d = 0; d < up->rank; d++) {
    if (contains(&dn[0], d)) continue;
    if (up->shape[d] != ix->shape[si])
      return rule_error(cx, "%s's updates %s: scatter dimension %d has size %lld but dimension %d of the indices %s "
                        "has %lld", cx->prim, rule_ty(&a, up), d, (long long)up->shape[d], si, rule_ty(&b, ix),
                        (long long)ix->shape[si]);
    si++;
  }
  return true;
}

/* scatter_apply's function (at->fns[0], which the checker or a
   transformation copying the equation gives): two scalars of the
   operand's dtype (the element, and the update JAX passes and the
   function ignores) to one. */
static bool read_apply(RuleCtx *cx, const Type *in, Attrs *at) {
  PVal *ref = rule_pv(cx, PV_FUNC);
  ref->i = 0;
  rule_record(cx, "update_jaxpr", ref);
  const IrFunc *f = at->fns[0];
  bool ok = f->nparams == 2 && f->nouts == 1 && f->outs[0].t.rank == 0 && f->outs[0].t.dt == in[0].dt;
  for (int k = 0; ok && k < 2; k++) ok = f->params[k]->t.rank == 0 && f->params[k]->t.dt == in[0].dt;
  if (!ok)
    return rule_param_error(cx, "update_jaxpr", "scatter's update_jaxpr (jax.lax.scatter_apply's function) must take "
                            "two %s scalars (the element and the update) and give one", dtype_names[in[0].dt]);
  return true;
}

/* update_jaxpr: None, or (older JAX) the combining function, which the
   primitive's name already says (show prints None, as JAX does now);
   `scatter` with a function of its own is scatter_apply (at->fns[0]).
   update_consts: () (a function keeps its constants in its jaxpr). */
static bool read_update(RuleCtx *cx, int op, const Type *in, Attrs *at) {
  PVal *c = rule_get(cx, "update_consts");
  if (c && !((pv_unparen(c)->k == PV_TUPLE || pv_unparen(c)->k == PV_LIST) && pv_unparen(c)->n == 0) &&
      pv_unparen(c)->k != PV_NONE)
    return rule_param_error(cx, "update_consts", "%s's update_consts must be (): a function keeps its constants "
                            "in its jaxpr", cx->prim);
  rule_record(cx, "update_consts", rule_pv_ints(cx, NULL, 0, PV_TUPLE));
  PVal *j = rule_get(cx, "update_jaxpr");
  PVal *u = j ? pv_unparen(j) : NULL;
  if (op == IDX_SET && at->nfns) return read_apply(cx, in, at);
  if (u && u->k != PV_NONE && op == IDX_SET)
    return rule_param_error(cx, "update_jaxpr", "scatter's update_jaxpr must be None or a function (jax.lax.scatter_apply's)");
  if (u && u->k != PV_NONE && u->k != PV_FUNC && u->k != PV_REPR)
    return rule_param_error(cx, "update_jaxpr", "%s's update_jaxpr must be None or a jaxpr", cx->prim);
  rule_record(cx, "update_jaxpr", rule_pv(cx, PV_NONE));
  return true;
}

bool idx_rule_scatter(RARGS) {
  (void)nin;
  int op = scatter_op(rule_prim_name(cx));
  IntList *dn = at->l;
  if (!read_dnums(cx, true, dn)) return false;
  bool flag;
  if (!rule_bool(cx, "indices_are_sorted", false, &flag)) return false;
  int mode;
  if (!read_mode(cx, IDX_FILL_OR_DROP, &mode)) return false;
  if (!rule_bool(cx, "unique_indices", false, &flag)) return false;
  PVal *sh = rule_get(cx, "out_sharding");        /* JAX 0.7's; kept for show, not read */
  if (sh) rule_record(cx, "out_sharding", sh);
  if (!read_update(cx, op, in, at)) return false;
  static const int both[2] = {0, 2};
  int dt;
  if (!rule_unify_dtypes(cx, in, both, 2, &dt)) return false;
  int kinds = op == IDX_SET ? K_ALL : op == IDX_MIN || op == IDX_MAX ? K_ANY : K_ARITH;
  if (!rule_check_kind(cx, &in[0], kinds)) return false;
  if (!check_indices(cx, &in[1])) return false;
  if (!scatter_checks(cx, dn, &in[0], &in[1], &in[2])) return false;
  IntList *ws = &at->l[5];
  ws->n = in[0].rank;
  ws->v = rule_alloc_ints(cx, in[0].rank);
  for (int d = 0, wi = 0; d < in[0].rank; d++)
    ws->v[d] = contains(&dn[1], d) || contains(&dn[3], d) ? 1 : in[2].shape[dn[0].v[wi++]];
  rule_set_type(out, dt, in[0].rank, in[0].shape);
  at->i[0] = mode;
  at->i[1] = op;
  return true;
}

/* ---- the plan both kernels walk --------------------------------------------------- */

typedef struct Plan {
  int nb;                        /* batch dimensions (the indices' but the last) */
  int64_t bshape[SHM_MAXRANK];
  int64_t bstr[SHM_MAXRANK];     /* their strides in the big side, elements */
  int nw;                        /* window dimensions */
  int64_t wshape[SHM_MAXRANK];
  int64_t wbig[SHM_MAXRANK];     /* strides in the big side, bytes */
  int64_t wop[SHM_MAXRANK];      /* strides in the operand, bytes */
  int64_t opstr[SHM_MAXRANK];    /* the operand's strides, elements */
  int64_t lim[SHM_MAXRANK];      /* the largest start of a window in bounds, per operand dimension */
  int64_t nbatch;
} Plan;

/* The plan of an equation whose big side is `big` (gather's result or
   scatter's updates): its window dimensions are dn[0] (offset_dims,
   update_window_dims), matched in order with the operand dimensions not in
   dn[1] (collapsed, inserted) nor dn[3] (batching); l[5] the window size
   along each operand dimension. */
static void plan_make(Plan *p, const Attrs *at, const Array *op, const Array *ix, const Array *big) {
  const IntList *dn = at->l, *wsz = &at->l[5];
  size_t es = dtype_sizes[op->dt];
  int64_t bigstr[SHM_MAXRANK], opb[SHM_MAXRANK];
  arr_strides(big->rank, big->shape, bigstr);
  arr_strides(op->rank, op->shape, p->opstr);
  arr_byte_strides(op->rank, op->shape, es, opb);
  p->nb = ix->rank - 1;
  p->nw = 0;
  p->nbatch = 1;
  int bi = 0, wi = 0;
  for (int d = 0; d < big->rank; d++) {
    if (contains(&dn[0], d)) {
      while (contains(&dn[1], wi) || contains(&dn[3], wi)) wi++;
      p->wshape[p->nw] = wsz->v[wi];
      p->wbig[p->nw] = bigstr[d] * (int64_t)es;
      p->wop[p->nw++] = opb[wi++];
    } else {
      p->bshape[bi] = big->shape[d];
      p->bstr[bi++] = bigstr[d];
      p->nbatch *= big->shape[d];
    }
  }
  for (int d = 0; d < op->rank; d++) p->lim[d] = op->shape[d] - wsz->v[d];
}

/* Element i of the indices as int64 (an unsigned one past INT64_MAX:
   INT64_MAX, out of bounds all the same). */
static int64_t index_at(const Array *ix, int64_t i) {
  if (ix->dt == DT_U64) {
    uint64_t u = ((const uint64_t *)ix->data)[i];
    return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
  }
  return arr_geti(ix, i);
}

/* The operand element where batch position g's window starts (bpos: g
   as a multi-index), or -1 when the window is not wholly in bounds.
   clamp: first clamp each index vector entry so that the window fits
   (gather's CLIP and PROMISE_IN_BOUNDS, scatter's CLIP, as XLA and JAX's
   _clamp_scatter_indices do); batching dimensions start at g's own. */
static int64_t window_start(const Plan *p, const Attrs *at, const Array *ix, int64_t g, const int64_t *bpos,
                            bool clamp) {
  const IntList *map = &at->l[2], *obd = &at->l[3], *ibd = &at->l[4];
  int64_t s[SHM_MAXRANK] = {0};
  int64_t K = map->n;
  int rank = at->l[5].n;
  bool oob = false;
  for (int k = 0; k < K; k++) {
    int64_t d = map->v[k], v = index_at(ix, g * K + k);
    if (clamp) v = v < 0 ? 0 : v > p->lim[d] ? p->lim[d] : v;
    oob |= v < 0 || v > p->lim[d];
    s[d] = v;
  }
  for (int i = 0; i < obd->n; i++) s[obd->v[i]] = bpos[ibd->v[i]];
  if (oob) return -1;
  int64_t off = 0;
  for (int d = 0; d < rank; d++) off += s[d] * p->opstr[d];
  return off;
}

/* Step a row-major multi-index over shape; its offset in strides str. */
static int64_t step(int64_t *pos, const int64_t *shape, const int64_t *str, int n, int64_t off) {
  for (int d = n - 1; d >= 0; d--) {
    off += str[d];
    if (++pos[d] < shape[d]) return off;
    off -= pos[d] * str[d];
    pos[d] = 0;
  }
  return off;
}

/* Ask for transparent huge pages under a big result before it is first
   written, as NumPy does for its arrays: a gather or scatter writes its
   whole result at once, and at 4 KiB a page the kernel's page faults cost
   as much as the copy (a 128 MiB gather: half the time).  A hint only. */
static void big_pages(Array *r) {
  size_t n = (size_t)r->size * dtype_sizes[r->dt];
  uintptr_t lo = ((uintptr_t)r->data + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)r->data + n) & ~(uintptr_t)4095;
  if (n >= (4u << 20) && hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* ---- gather's kernel -------------------------------------------------------------- */

/* The fill value of a FILL_OR_DROP gather, one element of dtype dt. */
static void fill_elem(const Attrs *at, int dt, Array *f) {
  if (at->b[0]) {
    if (dtype_is_int((DType)dt)) arr_seti(f, 0, at->i[2]);
    else arr_setf(f, 0, at->f[0]);
    return;
  }
  if (dtype_is_bool((DType)dt)) arr_seti(f, 0, 1);
  else if (dtype_is_unsigned((DType)dt)) arr_setu(f, 0, UINT64_MAX);
  else if (dtype_is_int((DType)dt)) arr_seti(f, 0, dtype_sizes[dt] == 8 ? INT64_MIN : -(INT64_C(1) << (8 * dtype_sizes[dt] - 1)));
  else arr_setf(f, 0, NAN);
}

/* One gather: the windows of batch positions [g0, g1) (par_for's task
   k of n does the k-th share; each writes its own rows of the result). */
typedef struct GatherJob {
  Plan p;
  const Attrs *at;
  const Array *op, *ix, *fill;
  Array *r;
  int64_t n;
} GatherJob;

static void gather_part(void *ctx, int64_t k) {
  const GatherJob *j = ctx;
  const Plan *p = &j->p;
  size_t es = dtype_sizes[j->r->dt];
  int64_t g0 = p->nbatch * k / j->n, g1 = p->nbatch * (k + 1) / j->n;
  int64_t bpos[SHM_MAXRANK] = {0}, boff = 0, zero[SHM_MAXRANK] = {0};
  int64_t q = g0;
  for (int d = p->nb - 1; d >= 0; d--) {
    bpos[d] = q % p->bshape[d];
    q /= p->bshape[d];
    boff += bpos[d] * p->bstr[d];
  }
  bool clamp = j->at->i[0] != IDX_FILL_OR_DROP;
  for (int64_t g = g0; g < g1; g++) {
    int64_t s = window_start(p, j->at, j->ix, g, bpos, clamp);
    char *dst = (char *)j->r->data + boff * (int64_t)es;
    if (s >= 0)
      arr_copy_strided(dst, p->wbig, (const char *)j->op->data + s * (int64_t)es, p->wop, p->nw, p->wshape, es);
    else arr_copy_strided(dst, p->wbig, j->fill->data, zero, p->nw, p->wshape, es);
    boff = step(bpos, p->bshape, p->bstr, p->nb, boff);
  }
}

void idx_kern_gather(KARGS) {
  (void)nin;
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  out[0] = r;
  if (!r->size) return;
  big_pages(r);
  GatherJob j = {.at = at, .op = in[0], .ix = in[1], .r = r};
  plan_make(&j.p, at, in[0], in[1], r);
  Array *fill = arr_new((DType)r->dt, 0, NULL);
  fill_elem(at, r->dt, fill);
  j.fill = fill;
  double bytes = (double)r->size * dtype_sizes[r->dt];
  j.n = bytes >= PAR_BYTES && j.p.nbatch >= 64 ? 64 : 1;
  par_for(j.n, gather_part, &j, bytes);
  arr_unref(fill);
}

/* ---- scatter's kernel ------------------------------------------------------------- */

/* One combining loop: n elements, strides in elements. */
typedef void (*RunFn)(void *d, int64_t ds, const void *s, int64_t ss, int64_t n);

#define NANMAX(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : (a) >= (b) ? (a) : (b))
#define NANMIN(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : (a) <= (b) ? (a) : (b))
#define IMAX(a, b) ((a) >= (b) ? (a) : (b))
#define IMIN(a, b) ((a) <= (b) ? (a) : (b))
/* integers wrap: the arithmetic in uint64_t, truncated to T */
#define IADD(a, b) ((uint64_t)(a) + (uint64_t)(b))
#define ISUB(a, b) ((uint64_t)(a) - (uint64_t)(b))
#define IMUL(a, b) ((uint64_t)(a) * (uint64_t)(b))
#define FADD(a, b) ((a) + (b))
#define FSUB(a, b) ((a) - (b))
#define FMUL(a, b) ((a) * (b))

#define RUN(name, T, OP)                                                                  \
  static void name(void *d, int64_t ds, const void *s, int64_t ss, int64_t n) {           \
    T *x = (T *)d;                                                                        \
    const T *y = (const T *)s;                                                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T a = x[i * ds], b = y[i * ss];                                                     \
      x[i * ds] = (T)(OP(a, b));                                                          \
    }                                                                                     \
  }
#define RUN_INT(tag, T) RUN(add_##tag, T, IADD) RUN(sub_##tag, T, ISUB) RUN(mul_##tag, T, IMUL) \
  RUN(min_##tag, T, IMIN) RUN(max_##tag, T, IMAX)
#define RUN_FLT(tag, T) RUN(add_##tag, T, FADD) RUN(sub_##tag, T, FSUB) RUN(mul_##tag, T, FMUL) \
  RUN(min_##tag, T, NANMIN) RUN(max_##tag, T, NANMAX)
RUN_INT(i8, int8_t) RUN_INT(i16, int16_t) RUN_INT(i32, int32_t) RUN_INT(i64, int64_t)
RUN_INT(u8, uint8_t) RUN_INT(u16, uint16_t) RUN_INT(u32, uint32_t) RUN_INT(u64, uint64_t)
RUN_FLT(f32, float) RUN_FLT(f64, double)
RUN(min_b, uint8_t, IMIN) RUN(max_b, uint8_t, IMAX)

/* 16-bit floats: computed in f32, rounded back, as NumPy does. */
#define RUN_HALF(name, S, TO, FROM, OP)                                                   \
  static void name(void *d, int64_t ds, const void *s, int64_t ss, int64_t n) {           \
    S *x = (S *)d;                                                                        \
    const S *y = (const S *)s;                                                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
      float a = TO(x[i * ds].bits), b = TO(y[i * ss].bits);                               \
      x[i * ds].bits = FROM((float)(OP(a, b)));                                           \
    }                                                                                     \
  }
#define RUN_HALFS(tag, S, TO, FROM) RUN_HALF(add_##tag, S, TO, FROM, FADD) RUN_HALF(sub_##tag, S, TO, FROM, FSUB) \
  RUN_HALF(mul_##tag, S, TO, FROM, FMUL) RUN_HALF(min_##tag, S, TO, FROM, NANMIN)                             \
  RUN_HALF(max_##tag, S, TO, FROM, NANMAX)
RUN_HALFS(bf16, ShmBf16, bf16_to_f32, bf16_from_f32)
RUN_HALFS(f16, ShmF16, f16_to_f32, f16_from_f32)

/* Complex: add and subtract by parts, multiply as NumPy does. */
#define RUN_CPLX(tag, S, R)                                                               \
  static void add_##tag(void *d, int64_t ds, const void *s, int64_t ss, int64_t n) {      \
    S *x = (S *)d;                                                                        \
    const S *y = (const S *)s;                                                            \
    for (int64_t i = 0; i < n; i++) x[i * ds].re += y[i * ss].re, x[i * ds].im += y[i * ss].im; \
  }                                                                                       \
  static void sub_##tag(void *d, int64_t ds, const void *s, int64_t ss, int64_t n) {      \
    S *x = (S *)d;                                                                        \
    const S *y = (const S *)s;                                                            \
    for (int64_t i = 0; i < n; i++) x[i * ds].re -= y[i * ss].re, x[i * ds].im -= y[i * ss].im; \
  }                                                                                       \
  static void mul_##tag(void *d, int64_t ds, const void *s, int64_t ss, int64_t n) {      \
    S *x = (S *)d;                                                                        \
    const S *y = (const S *)s;                                                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
      R ar = x[i * ds].re, ai = x[i * ds].im, br = y[i * ss].re, bi = y[i * ss].im;       \
      R pr = ar * br, qr = ai * bi, pi = ar * bi, qi = ai * br;                           \
      x[i * ds].re = pr - qr;                                                             \
      x[i * ds].im = pi + qi;                                                             \
    }                                                                                     \
  }
RUN_CPLX(c64, ShmC64, float)
RUN_CPLX(c128, ShmC128, double)

/* The loop of a combination on a dtype (the rule admitted the pair). */
static RunFn run_of(int op, int dt) {
#define ROW(tag, DT) case DT_##DT: {                                                     \
    static const RunFn f[5] = {add_##tag, sub_##tag, mul_##tag, min_##tag, max_##tag};   \
    return f[op - IDX_ADD];                                                               \
  }
  switch (dt) {
    ROW(i8, I8) ROW(i16, I16) ROW(i32, I32) ROW(i64, I64) ROW(u8, U8) ROW(u16, U16) ROW(u32, U32) ROW(u64, U64)
    ROW(f32, F32) ROW(f64, F64) ROW(bf16, BF16) ROW(f16, F16)
  case DT_BOOL: return op == IDX_MIN ? min_b : max_b;
  case DT_C64: return op == IDX_ADD ? add_c64 : op == IDX_SUB ? sub_c64 : mul_c64;
  case DT_C128: return op == IDX_ADD ? add_c128 : op == IDX_SUB ? sub_c128 : mul_c128;
  default: err_throw("scatter: no combining loop for dtype %s", dtype_names[dt]);
  }
#undef ROW
}

/* Combine a window of updates (strides in bytes) into the result. */
static void combine_box(RunFn f, size_t es, char *d, const int64_t *dstr, const char *s, const int64_t *sstr,
                        int rank, const int64_t *shape) {
  if (rank == 0) {
    f(d, 0, s, 0, 1);
    return;
  }
  if (rank == 1) {
    f(d, dstr[0] / (int64_t)es, s, sstr[0] / (int64_t)es, shape[0]);
    return;
  }
  for (int64_t i = 0; i < shape[0]; i++)
    combine_box(f, es, d + i * dstr[0], dstr + 1, s + i * sstr[0], sstr + 1, rank - 1, shape + 1);
}

/* scatter_apply: the window of the result at dst replaced by the function
   (at->fns[0]) of its elements and the updates' at src. */
static void apply_box(const Attrs *at, const Plan *p, DType dt, char *dst, const char *src) {
  size_t es = dtype_sizes[dt];
  int64_t cs[SHM_MAXRANK];
  arr_byte_strides(p->nw, p->wshape, es, cs);
  Array *args[2] = {arr_new(dt, p->nw, p->wshape), arr_new(dt, p->nw, p->wshape)}, *res = NULL;
  arr_copy_strided(args[0]->data, cs, dst, p->wop, p->nw, p->wshape, es);
  arr_copy_strided(args[1]->data, cs, src, p->wbig, p->nw, p->wshape, es);
  at->run(at->fns[0], args, &res);
  arr_copy_strided(dst, p->wop, res->data, cs, p->nw, p->wshape, es);
  arr_unref(args[0]);
  arr_unref(args[1]);
  arr_unref(res);
}

void idx_kern_scatter(KARGS) {
  (void)nin;
  const Array *op = in[0], *ix = in[1], *up = in[2];
  Array *r = arr_new((DType)outt[0].dt, outt[0].rank, outt[0].shape);
  out[0] = r;
  size_t es = dtype_sizes[r->dt];
  big_pages(r);
  memcpy(r->data, op->data, (size_t)r->size * es);
  if (!r->size || !up->size) return;
  Plan p;
  plan_make(&p, at, op, ix, up);
  int cop = (int)at->i[1];
  RunFn f = cop == IDX_SET ? NULL : run_of(cop, r->dt);
  bool clamp = at->i[0] == IDX_CLIP;
  int64_t bpos[SHM_MAXRANK] = {0}, boff = 0;
  for (int64_t g = 0; g < p.nbatch; g++) {
    int64_t s = window_start(&p, at, ix, g, bpos, clamp);
    if (s >= 0) {
      char *dst = (char *)r->data + s * (int64_t)es;
      const char *src = (const char *)up->data + boff * (int64_t)es;
      if (at->nfns) apply_box(at, &p, (DType)r->dt, dst, src);
      else if (f) combine_box(f, es, dst, p.wop, src, p.wbig, p.nw, p.wshape);
      else arr_copy_strided(dst, p.wop, src, p.wbig, p.nw, p.wshape, es);
    }
    boff = step(bpos, p.bshape, p.bstr, p.nb, boff);
  }
}
