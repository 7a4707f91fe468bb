/*
** window.c — the windowed reductions and max pooling's derivatives: shape
** rules and kernels (see window.h).
**
** Every kernel walks the same tables: for each dimension, the source index
** of output position y and window position k, or -1 where that lands in
** padding or a dilation hole.  A window's elements are listed in
** row-major window order by walking them, skipping the -1s, so that the
** reductions and the selections see exactly a window's elements of the
** operand, in order.  Values are computed in a wide dtype (f64, i64 or
** c128: exact for every narrower one) and rounded once to the result's.
*/
#include "window.h"

#include <string.h>

#include <math.h>
#include <stdio.h>
#include "err.h"
#include "mem.h"

#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out
#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt

/* ---- the rules ------------------------------------------------------------------- */

/* A list parameter of one entry per dimension of an operand of rank
   `rank`, each at least `least`; absent or None: all `dflt` (recorded so,
   for show), or an error when there is no default (dflt 0). */
static bool read_dims(RuleCtx *cx, const char *key, int rank, int64_t least, int64_t dflt, IntList *l) {
  LsBuf lb;
  if (!rule_ints(cx, key, dflt == 0, l)) return false;
  if (l->n == 0 && rank > 0 && dflt) {
    l->v = rule_alloc_ints(cx, rank);
    l->n = rank;
    for (int d = 0; d < rank; d++) l->v[d] = dflt;
    rule_set_ints(cx, key, l);
  }
  if (l->n != rank)
    return rule_param_error(cx, key, "%s %s %s has %d entr%s for an operand of rank %d", rule_prim_name(cx), key,
                            rule_ls(&lb, l), l->n, l->n == 1 ? "y" : "ies", rank);
  for (int d = 0; d < rank; d++)
    if (l->v[d] < least)
      return rule_param_error(cx, key, "%s %s must be %s, got %s", rule_prim_name(cx), key,
                              least ? "positive" : "non-negative", rule_ls(&lb, l));
  return true;
}

/* The window parameters of an operand of rank `rank`, in the order JAX
   prints them (sorted by name), into at->l[0..4]; `dil`: the dilations
   are parameters (otherwise ones); `sel`: select_prim is one. */
static bool read_window_rest(RuleCtx *cx, int rank, bool dil, bool sel, Attrs *at);
static bool read_window(RuleCtx *cx, int rank, bool dil, bool sel, Attrs *at) {
  if (dil && !read_dims(cx, "base_dilation", rank, 1, 1, &at->l[3])) return false;
  return read_window_rest(cx, rank, dil, sel, at);
}

/* The window parameters after base_dilation. */
static bool read_window_rest(RuleCtx *cx, int rank, bool dil, bool sel, Attrs *at) {
  IntList *l = at->l;
  if (!rule_int_tuples(cx, "padding", true, 2, &l[2])) return false;
  if (l[2].n != 2 * rank)
    return rule_param_error(cx, "padding", "%s padding has %d (lo, hi) pair%s for an operand of rank %d",
                            rule_prim_name(cx), l[2].n / 2, l[2].n == 2 ? "" : "s", rank);
  if (sel) {
    PVal *v = rule_get(cx, "select_prim");
    if (!v) return rule_missing(cx, "select_prim");
    PVal *u = pv_unparen(v);
    bool ge = u->k == PV_NAME && str_eqc(u->s, "ge"), le = u->k == PV_NAME && str_eqc(u->s, "le");
    if (!ge && !le)
      return rule_param_error(cx, "select_prim", "%s select_prim must be ge or le, as JAX prints lax.ge_p and lax.le_p",
                              rule_prim_name(cx));
    rule_record(cx, "select_prim", u);
    at->i[0] = le;
  }
  if (dil && !read_dims(cx, "window_dilation", rank, 1, 1, &l[4])) return false;
  if (!read_dims(cx, "window_dimensions", rank, 1, 0, &l[0])) return false;
  if (!read_dims(cx, "window_strides", rank, 1, 0, &l[1])) return false;
  for (int k = 3; k < 5 && !dil; k++) {
    l[k].n = rank;
    l[k].v = rule_alloc_ints(cx, rank > 0 ? rank : 1);
    for (int d = 0; d < rank; d++) l[k].v[d] = 1;
  }
  return true;
}

/* The shape of the windows' results over an operand of type t. */
static void window_shape(const Attrs *at, const Type *t, Type *out) {
  const IntList *l = at->l;
  for (int d = 0; d < t->rank; d++) {
    int64_t n = t->shape[d], base = n > 0 ? (n - 1) * l[3].v[d] + 1 : 0;
    int64_t padded = base + l[2].v[2 * d] + l[2].v[2 * d + 1];
    int64_t win = (l[0].v[d] - 1) * l[4].v[d] + 1;
    int64_t q = padded - win;
    out->shape[d] = q < 0 ? 0 : q / l[1].v[d] + 1;
  }
}

/* reduce_window_sum: a number dtype (complex too). */
bool win_rule_sum(RARGS) {
  (void)nin;
  if (!rule_check_kind(cx, &in[0], K_ARITH)) return false;
  if (!read_window(cx, in[0].rank, true, false, at)) return false;
  rule_set_type(out, in[0].dt, in[0].rank, in[0].shape);
  window_shape(at, &in[0], out);
  return true;
}

/* reduce_window_max, reduce_window_min: any dtype. */
bool win_rule_chooser(RARGS) {
  (void)nin;
  if (!read_window(cx, in[0].rank, true, false, at)) return false;
  rule_set_type(out, in[0].dt, in[0].rank, in[0].shape);
  window_shape(at, &in[0], out);
  return true;
}

/* reduce_window's consts (only (): the body's constants are its own) and
   jaxpr, the body: at->fns[0], which the checker (or a transformation
   copying the equation) gives, taking 2n scalars (the accumulators, then
   the elements) and giving n, of the operands' dtypes. */
static bool read_body(RuleCtx *cx, const Type *in, int n, Attrs *at) {
  PVal *c = rule_get(cx, "consts");
  PVal *cu = c ? pv_unparen(c) : NULL;
  if (cu && !((cu->k == PV_TUPLE || cu->k == PV_LIST) && cu->n == 0))
    return rule_param_error(cx, "consts", "reduce_window's consts must be (): a body with constants of its own "
                            "keeps them in its jaxpr");
  rule_record(cx, "consts", rule_pv_ints(cx, NULL, 0, PV_TUPLE));
  PVal *j = rule_get(cx, "jaxpr");
  if (!j) return rule_missing(cx, "jaxpr");
  if (at->nfns < 1)
    return rule_param_error(cx, "jaxpr", "reduce_window's jaxpr must be a function { lambda ; a:f32[] b:f32[]. ... }");
  PVal *ref = rule_pv(cx, PV_FUNC);
  ref->i = 0;
  rule_record(cx, "jaxpr", ref);
  const IrFunc *f = at->fns[0];
  bool ok = f->nparams == 2 * n && f->nouts == n;
  for (int k = 0; ok && k < 2 * n; k++) ok = f->params[k]->t.rank == 0 && f->params[k]->t.dt == in[k % n].dt;
  for (int k = 0; ok && k < n; k++) ok = f->outs[k].t.rank == 0 && f->outs[k].t.dt == in[k].dt;
  if (!ok)
    return rule_param_error(cx, "jaxpr", "reduce_window's jaxpr must take %d scalars (the accumulators, then the "
                            "elements) and give %d, of the operands' dtypes (%s%s)", 2 * n, n,
                            dtype_names[in[0].dt], n > 1 ? ", ..." : "");
  return true;
}

/* reduce_window[jaxpr, consts, window params] operands... init_values...:
   n operands of one shape, n scalar init values of their dtypes. */
bool win_rule_generic(RARGS) {
  TyBuf a, b;
  if (nin % 2)
    return rule_error(cx, "reduce_window takes one init value per operand, got %d operands and init values in all", nin);
  int n = nin / 2;
  for (int k = 0; k < n; k++) {
    Type *iv = &in[n + k];
    if (iv->weak && rule_kind_rank(in[k].dt) >= rule_kind_rank(iv->dt)) iv->dt = in[k].dt;
    if (iv->rank != 0)
      return rule_error(cx, "reduce_window expected init_values to be scalars, but init value %d is %s", k,
                        rule_ty(&a, iv));
    if (iv->dt != in[k].dt)
      return rule_error(cx, "reduce_window got inconsistent dtypes for operands and init_values: operand %d is %s "
                        "and its init value %s", k, rule_ty(&a, &in[k]), rule_ty(&b, iv));
    if (!type_same_shape(&in[k], &in[0]))
      return rule_error(cx, "reduce_window's operands must have one shape, got %s and %s", rule_ty(&a, &in[0]),
                        rule_ty(&b, &in[k]));
  }
  if (!read_dims(cx, "base_dilation", in[0].rank, 1, 1, &at->l[3])) return false;
  if (!read_body(cx, in, n, at)) return false;
  if (!read_window_rest(cx, in[0].rank, true, false, at)) return false;
  for (int k = 0; k < n; k++) {
    rule_set_type(&out[k], in[k].dt, in[k].rank, in[k].shape);
    window_shape(at, &in[k], &out[k]);
  }
  return true;
}

/* Both operands of the select primitives: t of a number dtype, x ordered
   (not complex), the shapes the primitive needs. */
static bool check_select_operands(RuleCtx *cx, const Type *t, const Type *x) {
  if (!rule_check_kind(cx, t, K_ARITH)) return false;
  if (dtype_is_complex((DType)x->dt))
    return rule_error(cx, "%s selects by comparing the operand, which must not be complex, got %s", rule_prim_name(cx),
                      dtype_names[x->dt]);
  return true;
}

static bool same_shape(const Type *a, const Type *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

/* select_and_gather_add t x: t and x of one shape; the result is t's
   dtype, the windows' shape. */
bool win_rule_gather(RARGS) {
  (void)nin;
  TyBuf a, b;
  if (!check_select_operands(cx, &in[0], &in[1])) return false;
  if (!same_shape(&in[0], &in[1]))
    return rule_error(cx, "select_and_gather_add tangents and operand shapes must match, got %s and %s",
                      rule_ty(&a, &in[0]), rule_ty(&b, &in[1]));
  if (!read_window(cx, in[1].rank, true, true, at)) return false;
  rule_set_type(out, in[0].dt, in[1].rank, in[1].shape);
  window_shape(at, &in[1], out);
  return true;
}

/* select_and_scatter_add s x: s has the shape of x's windows; the result
   is s's dtype and x's shape. */
bool win_rule_scatter(RARGS) {
  (void)nin;
  TyBuf a, b;
  if (!check_select_operands(cx, &in[0], &in[1])) return false;
  if (!read_window(cx, in[1].rank, false, true, at)) return false;
  Type w = in[1];
  window_shape(at, &in[1], &w);
  if (!same_shape(&in[0], &w))
    return rule_error(cx, "select_and_scatter_add source %s must have the shape of the operand's windows, %s",
                      rule_ty(&a, &in[0]), rule_ty(&b, &w));
  rule_set_type(out, in[0].dt, in[1].rank, in[1].shape);
  return true;
}

double win_positions(const Attrs *at, const Type *out) {
  double n = (double)type_size(out);
  for (int d = 0; d < at->l[0].n; d++) n *= (double)at->l[0].v[d];
  return n;
}

/* ---- the window tables ------------------------------------------------------------ */

typedef struct WinTab {
  int rank;
  int64_t out[SHM_MAXRANK], wdim[SHM_MAXRANK];
  int64_t *off[SHM_MAXRANK];   /* [y * wdim + k]: the source's element offset along d, or -1 */
  int64_t *list;               /* one window's offsets */
} WinTab;

/* The tables of windows of the operand `shape` giving `outshape`. */
static void tab_make(WinTab *t, const Attrs *at, int rank, const int64_t *shape, const int64_t *outshape) {
  const IntList *l = at->l;
  int64_t st[SHM_MAXRANK], wsize = 1;
  arr_strides(rank, shape, st);
  t->rank = rank;
  for (int d = 0; d < rank; d++) {
    t->out[d] = outshape[d];
    t->wdim[d] = l[0].v[d];
    wsize *= t->wdim[d];
    int64_t n = t->out[d] * t->wdim[d];
    t->off[d] = mem_alloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t y = 0; y < t->out[d]; y++)
      for (int64_t k = 0; k < t->wdim[d]; k++) {
        int64_t x = y * l[1].v[d] + k * l[4].v[d] - l[2].v[2 * d], s = -1;
        if (x >= 0 && x % l[3].v[d] == 0 && x / l[3].v[d] < shape[d]) s = x / l[3].v[d] * st[d];
        t->off[d][y * t->wdim[d] + k] = s;
      }
  }
  t->list = mem_alloc(sizeof(int64_t) * (size_t)wsize);
}

static void tab_free(WinTab *t) {
  for (int d = 0; d < t->rank; d++) mem_free(t->off[d]);
  mem_free(t->list);
}

/* Append the offsets of window y's elements from dimension d on to
   t->list (n so far); the new count. */
static int64_t list_from(WinTab *t, const int64_t *y, int d, int64_t base, int64_t n) {
  if (d == t->rank) {
    t->list[n] = base;
    return n + 1;
  }
  const int64_t *row = t->off[d] + y[d] * t->wdim[d];
  for (int64_t k = 0; k < t->wdim[d]; k++)
    if (row[k] >= 0) n = list_from(t, y, d + 1, base + row[k], n);
  return n;
}

/* The next output position in row-major order (y advanced in place). */
static void next_pos(const WinTab *t, int64_t *y) {
  for (int d = t->rank - 1; d >= 0; d--) {
    if (++y[d] < t->out[d]) return;
    y[d] = 0;
  }
}

/* ---- the wide dtypes ----------------------------------------------------------------- */

/* The dtype a kernel computes in: c128, f64 or i64. */
static DType wide_of(DType d) {
  return dtype_is_complex(d) ? DT_C128 : dtype_is_float(d) ? DT_F64 : DT_I64;
}

/* a converted to its wide dtype; with `cmp`, u64 with its top bit
   flipped, so that comparing as i64 orders it as unsigned (undone by
   narrow with `cmp`). */
static Array *widen(const Array *a, bool cmp) {
  Array *w = arr_convert(a, wide_of((DType)a->dt));
  if (cmp && a->dt == DT_U64) {
    int64_t *p = w->data;
    for (int64_t i = 0; i < w->size; i++) p[i] ^= INT64_MIN;
  }
  return w;
}

/* The result of dtype dt from its wide form w (consumed). */
static Array *narrow(Array *w, DType dt, bool cmp) {
  if (cmp && dt == DT_U64 && w->dt == DT_I64) {
    int64_t *p = w->data;
    for (int64_t i = 0; i < w->size; i++) p[i] ^= INT64_MIN;
  }
  if (w->dt == dt) return w;
  Array *r = arr_convert(w, dt);
  arr_unref(w);
  return r;
}

/* ---- reduce_window_sum, _max, _min ------------------------------------------------ */

enum { RW_SUM, RW_MAX, RW_MIN };

/* The identity of max (hi false) or min (hi true) for dtype dt, in its
   wide form (u64 flipped). */
static void chooser_identity(DType dt, bool hi, double *f, int64_t *i) {
  *f = hi ? INFINITY : -INFINITY;
  if (dt == DT_BOOL) *i = hi ? 1 : 0;
  else if (dtype_is_unsigned(dt)) *i = dt == DT_U64 ? (hi ? INT64_MAX : INT64_MIN) : hi ? (int64_t)((1ull << (8 * dtype_sizes[dt])) - 1) : 0;
  else if (dtype_is_int(dt)) {
    int64_t top = (int64_t)(~0ull >> (65 - 8 * dtype_sizes[dt]));
    *i = hi ? top : -top - 1;
  }
  else *i = 0;
}

/* Does a replace acc as the chooser's result (max: larger; min: smaller;
   NaN propagates)?  Complex values compare lexicographically. */
static bool f_beats(double a, double acc, int op) {
  if (isnan(acc)) return false;
  if (isnan(a)) return true;
  return op == RW_MAX ? a > acc : a < acc;
}

static bool c_beats(const double *a, const double *acc, int op) {
  if (a[0] != acc[0] || isnan(a[0]) || isnan(acc[0])) return f_beats(a[0], acc[0], op);
  return f_beats(a[1], acc[1], op);
}

/* One window's reduction over the n offsets in l into r's element o. */
static void reduce_one(int op, const Array *w, const int64_t *l, int64_t n, Array *r, int64_t o, DType dt) {
  if (w->dt == DT_F64) {
    const double *x = w->data;
    double acc;
    if (op == RW_SUM) {
      acc = 0;
      for (int64_t j = 0; j < n; j++) acc += x[l[j]];
    } else {
      int64_t unused;
      chooser_identity(dt, op == RW_MIN, &acc, &unused);
      for (int64_t j = 0; j < n; j++)
        if (j == 0 || f_beats(x[l[j]], acc, op)) acc = x[l[j]];
    }
    ((double *)r->data)[o] = acc;
  } else if (w->dt == DT_C128) {
    const double *x = w->data;
    double acc[2] = {0, 0};
    int64_t unused;
    if (op != RW_SUM) chooser_identity(dt, op == RW_MIN, &acc[0], &unused);
    for (int64_t j = 0; j < n; j++) {
      const double *e = x + 2 * l[j];
      if (op == RW_SUM) {
        acc[0] += e[0];
        acc[1] += e[1];
      } else if (j == 0 || c_beats(e, acc, op)) {
        acc[0] = e[0];
        acc[1] = e[1];
      }
    }
    ((double *)r->data)[2 * o] = acc[0];
    ((double *)r->data)[2 * o + 1] = acc[1];
  } else {
    const int64_t *x = w->data;
    uint64_t s = 0;
    int64_t acc;
    double unused;
    chooser_identity(dt, op == RW_MIN, &unused, &acc);
    for (int64_t j = 0; j < n; j++) {
      int64_t e = x[l[j]];
      if (op == RW_SUM) s += (uint64_t)e;
      else if (j == 0 || (op == RW_MAX ? e > acc : e < acc)) acc = e;
    }
    ((int64_t *)r->data)[o] = op == RW_SUM ? (int64_t)s : acc;
  }
}

/* Runs one of the reductions: the wide operand, the tables, each window. */
static void run_reduce(int op, const Attrs *at, Array *const *in, Array **out, const Type *outt) {
  DType dt = (DType)outt[0].dt;
  Array *w = widen(in[0], op != RW_SUM);
  Array *r = arr_new(w->dt, outt[0].rank, outt[0].shape);
  if (r->size) {
    WinTab t;
    int64_t y[SHM_MAXRANK] = {0};
    tab_make(&t, at, w->rank, w->shape, r->shape);
    for (int64_t o = 0; o < r->size; o++, next_pos(&t, y)) {
      int64_t n = list_from(&t, y, 0, 0, 0);
      reduce_one(op, w, t.list, n, r, o, dt);
    }
    tab_free(&t);
  }
  arr_unref(w);
  out[0] = narrow(r, dt, op != RW_SUM);
}

void win_kern_sum(KARGS) {
  (void)nin;
  run_reduce(RW_SUM, at, in, out, outt);
}
void win_kern_max(KARGS) {
  (void)nin;
  run_reduce(RW_MAX, at, in, out, outt);
}
void win_kern_min(KARGS) {
  (void)nin;
  run_reduce(RW_MIN, at, in, out, outt);
}

/* ---- select_and_gather_add, select_and_scatter_add -------------------------------- */

/* The offset the window of n offsets l selects in the wide operand x (ge
   when !le): the first, replaced by each later e for which select(s, e)
   fails; -1 for an empty window. */
static int64_t select_one(const Array *x, const int64_t *l, int64_t n, bool le) {
  if (n == 0) return -1;
  int64_t s = l[0];
  if (x->dt == DT_F64) {
    const double *v = x->data;
    for (int64_t j = 1; j < n; j++)
      if (!(le ? v[s] <= v[l[j]] : v[s] >= v[l[j]])) s = l[j];
  } else {
    const int64_t *v = x->data;
    for (int64_t j = 1; j < n; j++)
      if (!(le ? v[s] <= v[l[j]] : v[s] >= v[l[j]])) s = l[j];
  }
  return s;
}

/* Copy element i of the wide array a into element o of the wide array r,
   or add it when `add`. */
static void put_elem(const Array *a, int64_t i, Array *r, int64_t o, bool add) {
  if (a->dt == DT_F64) {
    double *p = (double *)r->data + o, v = ((const double *)a->data)[i];
    *p = add ? *p + v : v;
  } else if (a->dt == DT_C128) {
    double *p = (double *)r->data + 2 * o;
    const double *v = (const double *)a->data + 2 * i;
    p[0] = add ? p[0] + v[0] : v[0];
    p[1] = add ? p[1] + v[1] : v[1];
  } else {
    int64_t *p = (int64_t *)r->data + o, v = ((const int64_t *)a->data)[i];
    *p = add ? (int64_t)((uint64_t)*p + (uint64_t)v) : v;
  }
}

/* select_and_gather_add t x: t's element at each window's selection. */
void win_kern_gather(KARGS) {
  (void)nin;
  DType dt = (DType)outt[0].dt;
  Array *t = widen(in[0], false), *x = widen(in[1], true);
  Array *r = arr_zeros(t->dt, outt[0].rank, outt[0].shape);
  if (r->size) {
    WinTab tb;
    int64_t y[SHM_MAXRANK] = {0};
    tab_make(&tb, at, x->rank, x->shape, r->shape);
    for (int64_t o = 0; o < r->size; o++, next_pos(&tb, y)) {
      int64_t s = select_one(x, tb.list, list_from(&tb, y, 0, 0, 0), at->i[0]);
      if (s >= 0) put_elem(t, s, r, o, false);
    }
    tab_free(&tb);
  }
  arr_unref(t);
  arr_unref(x);
  out[0] = narrow(r, dt, false);
}

/* select_and_scatter_add s x: each s[y] added where window y selects. */
void win_kern_scatter(KARGS) {
  (void)nin;
  DType dt = (DType)outt[0].dt;
  Array *s = widen(in[0], false), *x = widen(in[1], true);
  Array *r = arr_zeros(s->dt, outt[0].rank, outt[0].shape);
  if (s->size) {
    WinTab tb;
    int64_t y[SHM_MAXRANK] = {0};
    tab_make(&tb, at, x->rank, x->shape, s->shape);
    for (int64_t o = 0; o < s->size; o++, next_pos(&tb, y)) {
      int64_t sel = select_one(x, tb.list, list_from(&tb, y, 0, 0, 0), at->i[0]);
      if (sel >= 0) put_elem(s, o, r, sel, true);
    }
    tab_free(&tb);
  }
  arr_unref(s);
  arr_unref(x);
  out[0] = narrow(r, dt, false);
}

/* ---- reduce_window with a body ------------------------------------------------------ */

/* Gather window position k's element of operand x for every output
   position into g (x's dtype, the result's shape), and whether it lies in
   the operand (not in padding or a dilation hole) into inb. */
static void gather_pos(const WinTab *t, const int64_t *k, const Array *x, Array *g, uint8_t *inb) {
  size_t es = dtype_sizes[x->dt];
  int64_t y[SHM_MAXRANK] = {0};
  for (int64_t o = 0; o < g->size; o++, next_pos(t, y)) {
    int64_t off = 0;
    bool in = true;
    for (int d = 0; d < t->rank && in; d++) {
      int64_t s = t->off[d][y[d] * t->wdim[d] + k[d]];
      in = s >= 0;
      off += s;
    }
    inb[o] = in;
    if (in) memcpy((char *)g->data + o * (int64_t)es, (const char *)x->data + off * (int64_t)es, es);
    else memset((char *)g->data + o * (int64_t)es, 0, es);
  }
}

/* acc[j] becomes nw[j] where inb is set (nw consumed). */
static void keep_in_bounds(Array **acc, Array **nw, int n, const uint8_t *inb) {
  for (int j = 0; j < n; j++) {
    size_t es = dtype_sizes[acc[j]->dt];
    for (int64_t o = 0; o < acc[j]->size; o++)
      if (!inb[o]) memcpy((char *)nw[j]->data + o * (int64_t)es, (const char *)acc[j]->data + o * (int64_t)es, es);
    arr_unref(acc[j]);
    acc[j] = nw[j];
  }
}

/* Each window folded by the body: the accumulators start at the init
   values, and for each window position in row-major window order that
   lies in the operand, acc = body(acc, element) (padding and holes take
   no part, as XLA's CPU backend computes it). */
void win_kern_generic(KARGS) {
  int n = nin / 2;
  const IrFunc *f = at->fns[0];
  Array **args = mem_calloc(sizeof(Array *) * (size_t)(3 * n));
  Array **acc = args, **xs = args + n, **nw = args + 2 * n;
  for (int j = 0; j < n; j++) {
    acc[j] = arr_new((DType)outt[j].dt, outt[j].rank, outt[j].shape);
    size_t es = dtype_sizes[acc[j]->dt];
    for (int64_t o = 0; o < acc[j]->size; o++) memcpy((char *)acc[j]->data + o * (int64_t)es, in[n + j]->data, es);
  }
  if (acc[0]->size) {
    WinTab t;
    tab_make(&t, at, in[0]->rank, in[0]->shape, outt[0].shape);
    uint8_t *inb = mem_alloc((size_t)acc[0]->size);
    int64_t k[SHM_MAXRANK] = {0}, wsize = 1;
    for (int d = 0; d < t.rank; d++) wsize *= t.wdim[d];
    for (int64_t w = 0; w < wsize; w++) {
      for (int j = 0; j < n; j++) {
        xs[j] = arr_new((DType)in[j]->dt, outt[j].rank, outt[j].shape);
        gather_pos(&t, k, in[j], xs[j], inb);
      }
      at->run(f, args, nw);
      for (int j = 0; j < n; j++) arr_unref(xs[j]);
      keep_in_bounds(acc, nw, n, inb);
      for (int d = t.rank - 1; d >= 0; d--) {
        if (++k[d] < t.wdim[d]) break;
        k[d] = 0;
      }
    }
    mem_free(inb);
    tab_free(&t);
  }
  for (int j = 0; j < n; j++) out[j] = acc[j];
  mem_free(args);
}

/* ---- which reduce_window is a monoid's ------------------------------------------------ */

int win_body_op(const IrFunc *f) {
  if (f->nparams != 2 || f->nouts != 1 || f->nbody != 1 || f->body[0]->k != IS_EQN) return -1;
  const IrStmt *st = f->body[0];
  if (st->prim != P_ADD && st->prim != P_MAX && st->prim != P_MIN) return -1;
  if (st->nin != 2 || st->nout != 1 || f->outs[0].var != st->out[0]) return -1;
  IrVar *a = st->in[0].var, *b = st->in[1].var, *p = f->params[0], *q = f->params[1];
  if (!((a == p && b == q) || (a == q && b == p))) return -1;
  return st->prim;
}

bool win_is_identity(int op, const Array *init) {
  if (!init || init->rank != 0) return false;
  DType dt = (DType)init->dt;
  if (op == P_ADD) return dtype_is_complex(dt) ? arr_getf(init, 0) == 0 : dtype_is_float(dt) ? arr_getf(init, 0) == 0
                                                                                             : arr_geti(init, 0) == 0;
  bool hi = op == P_MIN;
  if (dtype_is_float(dt)) return arr_getf(init, 0) == (hi ? INFINITY : -INFINITY);
  if (dtype_is_complex(dt)) return false;
  double f;
  int64_t i;
  chooser_identity(dt, hi, &f, &i);
  if (dt == DT_U64) return arr_getu(init, 0) == (hi ? UINT64_MAX : 0);
  return arr_geti(init, 0) == i;
}
