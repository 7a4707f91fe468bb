/*
** check_xlower.c — lowering an xmap to what runs.
**
** The body of an xmap is checked over named axes (check_xmap.c): every
** value has a positional shape and a named shape.  Here it becomes plain
** shm.  A value with named axes S is held as an array whose leading
** dimensions are its named axes, in some order, then its positional
** dimensions; along a named axis with resources it is split over those
** mesh axes (so the leading dimension is the axis's local size, and the
** value varies over those mesh axes), along one without resources it is
** whole, computed locally as vmap computes it.  When any axis has
** resources the whole body runs as a shard_map over the mesh; otherwise it
** is ordinary vectorized code.  Each primitive has its rule, JAX's
** batching rules written for leading named dimensions; collectives over
** named axes reduce, gather or permute the local dimension and, when the
** axis has resources, communicate over those mesh axes.
**
** Lifting by name is lazy: a value broadcast to more named axes than it
** has (the pbroadcasts the checker inserts) keeps its smaller layout
** until an operation needs the axes as dimensions, so that a pdot of an
** image with named batch and a weight with named hidden never builds the
** product of all three axes.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "irbuild.h"
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "show.h"

/* A value of the named program as it is held: the atom, and which named
   axes its leading dimensions are, in order.  It may hold fewer named
   axes than its type has (a lazy lift): it is constant along the others. */
typedef struct XVal {
  IrAtom a;
  int nn;
  uint8_t names[SHM_MAXAXES];
} XVal;

typedef struct Memo {
  const IrFunc *lf;
  IrFunc *pf;
  struct Memo *next;
} Memo;

/* The lowering of one function of the named program. */
typedef struct Low {
  Ctx *cx;
  XPlan *p;
  Builder *B;
  IrFunc *lf;                  /* the function being lowered */
  XVal *vals;                  /* by slot of lf */
  bool *has;
  struct Low *outer;           /* the lowerings in progress (variables of enclosing functions) */
  Memo **memo;                 /* lowered callees, shared by the whole xmap */
  IrFunc *top;                 /* the body's lowering, parent of the lowered callees */
  Str name;                    /* the binder whose statement is being lowered */
  bool failed;
} Low;

static void low_body(Low *L);

/* An error at the statement being lowered; the lowering fails. */
static void fail(Low *L, Span sp, const char *fmt, ...) SHM_PRINTF(3, 4);
static void fail(Low *L, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_error_once(&L->failed, sp, fmt, ap);
  va_end(ap);
}

/* ---- layouts ------------------------------------------------------------------------------ */

static uint32_t names_mask(const uint8_t *names, int n) {
  uint32_t m = 0;
  for (int i = 0; i < n; i++) m |= 1u << names[i];
  return m;
}

static int pos_of(const XVal *x, int k) {
  for (int i = 0; i < x->nn; i++)
    if (x->names[i] == k) return i;
  return -1;
}

/* The mesh axes a set of named axes is split over. */
static uint32_t res_of(const XPlan *p, uint32_t named) {
  uint32_t r = 0;
  for (int k = 0; k < p->naxes; k++)
    if (named & (1u << k)) r |= p->ax[k].resmask;
  return r;
}

/* The type a logical type of positional shape t has, held with named
   dimensions `names` in front. */
static Type held_type(const XPlan *p, const Type *t, const uint8_t *names, int nn) {
  Type h = *t;
  h.rank = (uint8_t)(t->rank + nn);
  for (int i = 0; i < nn; i++) h.shape[i] = p->ax[names[i]].local;
  for (int d = 0; d < t->rank; d++) h.shape[nn + d] = t->shape[d];
  h.vma = res_of(p, names_mask(names, nn));
  h.weak = false;
  return h;
}

/* The named axes of a set in the named mesh's order (a function's
   parameters and results are held so). */
static int canonical(const XPlan *p, uint32_t set, uint8_t *names) {
  int n = 0;
  for (int k = 0; k < p->naxes; k++)
    if (set & (1u << k)) names[n++] = (uint8_t)k;
  return n;
}

/* ---- emitting ----------------------------------------------------------------------------- */

static IrParam *params(Low *L, int n) { return bld_alloc(L->B, sizeof(IrParam) * (size_t)(n ? n : 1)); }

static PVal *ints_pv(Low *L, const int64_t *v, int n) { return bld_pv_ints(L->B, v, n); }

/* prim[ps] in... with one result; a failed rule fails the lowering. */
static IrAtom emit(Low *L, int prim, IrParam *ps, int nps, IrAtom *in, int nin) {
  IrAtom out;
  memset(&out, 0, sizeof out);
  if (L->failed) return in[0];
  if (!bld_prim(L->B, prim, ps, nps, in, nin, &out)) {
    L->failed = true;
    return in[0];
  }
  if (out.var && L->name.n) out.var->name = L->name;
  return out;
}

/* The mesh axes of a mask as a tuple of names (for a collective's axes). */
static PVal *mesh_axes_pv(Low *L, uint32_t mask) {
  PVal *items[SHM_MAXAXES];
  int n = 0;
  char buf[128];
  for (int k = 0; k < L->p->mesh->naxes; k++)
    if (mask & (1u << k)) {
      snprintf(buf, sizeof buf, "%.*s", L->p->mesh->axis[k].n, L->p->mesh->axis[k].p);
      items[n++] = bld_pv_name(L->B, buf);
    }
  return bld_pv_tuple(L->B, items, n);
}

/* The axes of one named axis's resources, major first. */
static PVal *axis_res_pv(Low *L, const XAxis *a) {
  PVal *items[SHM_MAXAXES];
  char buf[128];
  for (int j = 0; j < a->nres; j++) {
    snprintf(buf, sizeof buf, "%.*s", L->p->mesh->axis[a->res[j]].n, L->p->mesh->axis[a->res[j]].p);
    items[j] = bld_pv_name(L->B, buf);
  }
  return bld_pv_tuple(L->B, items, a->nres);
}

/* x with its dimensions permuted (perm[d]: the source of dimension d);
   x itself when perm is the identity. */
static IrAtom permute(Low *L, IrAtom x, const int64_t *perm, int rank) {
  bool id = true;
  for (int d = 0; d < rank; d++) id &= perm[d] == d;
  if (id) return x;
  IrParam *ps = params(L, 1);
  ps[0].key = "permutation";
  ps[0].v = ints_pv(L, perm, rank);
  return emit(L, P_TRANSPOSE, ps, 1, &x, 1);
}

static IrAtom reshape(Low *L, IrAtom x, const int64_t *shape, int rank) {
  IrParam *ps = params(L, 2);
  ps[0].key = "new_sizes";
  ps[0].v = ints_pv(L, shape, rank);
  ps[1].key = "dimensions";
  ps[1].v = bld_pv_name(L->B, "None");
  ps[1].v->k = PV_NONE;
  return emit(L, P_RESHAPE, ps, 2, &x, 1);
}

/* x (varying over the mesh axes of its named ones) lifted to vary over `vma`. */
static IrAtom lift(Low *L, IrAtom x, uint32_t vma) {
  if (L->failed || (x.t.vma | vma) == x.t.vma || (!x.var && !x.lit)) return x;
  IrAtom r = bld_lift(L->B, x, vma);
  if (r.var && L->name.n) r.var->name = L->name;
  return r;
}

/* x held with exactly the named dimensions `order` (which contains x's):
   its own transposed into their order there, the others broadcast in.
   t is the value's positional type. */
static XVal materialize(Low *L, XVal x, const Type *t, const uint8_t *order, int n) {
  XVal r = x;
  if (L->failed) return r;
  r.nn = n;
  memcpy(r.names, order, (size_t)n);
  Type want = held_type(L->p, t, order, n);
  bool same = x.nn == n;
  for (int i = 0; same && i < n; i++) same = x.names[i] == order[i];
  if (same) {
    r.a = lift(L, x.a, want.vma);
    return r;
  }
  /* x's own named dimensions into the order they have in `order` */
  int64_t perm[SHM_MAXRANK];
  int np = 0;
  for (int i = 0; i < n; i++) {
    int q = pos_of(&x, order[i]);
    if (q >= 0) perm[np++] = q;
  }
  for (int d = 0; d < t->rank; d++) perm[np++] = x.nn + d;
  IrAtom a = x.a;
  if (x.a.var) a = permute(L, x.a, perm, x.nn + t->rank);
  if (x.nn < n) {              /* broadcast the missing ones in */
    int64_t bd[SHM_MAXRANK];
    int nb = 0;
    if (a.var || t->rank) {
      for (int i = 0; i < n; i++)
        if (pos_of(&x, order[i]) >= 0) bd[nb++] = i;
      for (int d = 0; d < t->rank; d++) bd[nb++] = n + d;
    }
    IrParam *ps = params(L, 2);
    ps[0].key = "shape";
    ps[0].v = ints_pv(L, want.shape, want.rank);
    ps[1].key = "broadcast_dimensions";
    ps[1].v = ints_pv(L, bd, nb);
    a = emit(L, P_BROADCAST_IN_DIM, ps, 2, &a, 1);
  }
  r.a = lift(L, a, want.vma);
  return r;
}

/* x held with its named axes and those of `more`, in its order then theirs. */
static XVal widen(Low *L, XVal x, const Type *t, uint32_t more) {
  uint8_t order[SHM_MAXAXES];
  int n = x.nn;
  memcpy(order, x.names, (size_t)n);
  for (int k = 0; k < L->p->naxes; k++)
    if ((more & (1u << k)) && pos_of(&x, k) < 0) order[n++] = (uint8_t)k;
  return materialize(L, x, t, order, n);
}

/* ---- values ------------------------------------------------------------------------------- */

static Low *owner_low(Low *L, const IrVar *v) {
  for (; L; L = L->outer)
    if (L->lf == v->owner) return L;
  return NULL;
}

/* The held form of an operand: a literal or a value from outside the named
   program has no named axes. */
static XVal get(Low *L, const IrAtom *a) {
  XVal x;
  memset(&x, 0, sizeof x);
  x.a = *a;
  if (!a->var) return x;
  Low *o = owner_low(L, a->var);
  if (!o) return x;
  if (!o->has[a->var->slot]) {
    fail(L, a->sp, "internal: %.*s has no lowered value", a->var->name.n, a->var->name.p);
    return x;
  }
  return o->vals[a->var->slot];
}

static void set(Low *L, IrVar *v, XVal x) {
  if (x.a.var && !x.a.var->logical && x.a.var->owner == bld_func(L->B)) x.a.var->logical = v;
  L->vals[v->slot] = x;
  L->has[v->slot] = true;
}

/* A value of the named program must not hold two named axes split over
   the same mesh axis (JAX's resource check). */
static void check_resources(Low *L, const IrVar *v, Span sp) {
  const XPlan *p = L->p;
  for (int a = 0; a < p->naxes; a++)
    for (int b = a + 1; b < p->naxes; b++)
      if ((v->t.vma & (1u << a)) && (v->t.vma & (1u << b)) && (p->ax[a].resmask & p->ax[b].resmask)) {
        int m = 0;
        while (!((p->ax[a].resmask & p->ax[b].resmask) & (1u << m))) m++;
        fail(L, sp, "Axes %.*s and %.*s are both mapped to the resource %.*s, but they coincide in the named shape "
             "of %.*s", p->ax[a].name.n, p->ax[a].name.p, p->ax[b].name.n, p->ax[b].name.p, p->mesh->axis[m].n,
             p->mesh->axis[m].p, v->name.n ? v->name.n : 5, v->name.n ? v->name.p : "a value");
        return;
      }
}

/* ---- local primitives --------------------------------------------------------------------- */

/* An elementwise equation: operands held alike (the union of the named
   axes they hold), scalars that the primitive broadcasts broadcast too. */
static void low_elem(Low *L, IrStmt *st) {
  const Type *ot = &st->out[0]->t;
  XVal *x = bld_alloc(L->B, sizeof(XVal) * (size_t)st->nin);
  int best = -1;
  for (int k = 0; k < st->nin; k++) {
    x[k] = get(L, &st->in[k]);
    if (st->in[k].var && st->in[k].t.rank == ot->rank && (best < 0 || x[k].nn > x[best].nn)) best = k;
  }
  uint8_t order[SHM_MAXAXES];
  int n = best >= 0 ? x[best].nn : 0;
  if (best >= 0) memcpy(order, x[best].names, (size_t)n);
  for (int k = 0; k < st->nin; k++)
    for (int i = 0; i < x[k].nn; i++) {
      bool have = false;
      for (int j = 0; j < n; j++) have |= order[j] == x[k].names[i];
      if (!have) order[n++] = x[k].names[i];
    }
  IrAtom *in = bld_alloc(L->B, sizeof(IrAtom) * (size_t)st->nin);
  for (int k = 0; k < st->nin; k++) {
    const Type *t = &st->in[k].t;
    if (!st->in[k].var) in[k] = x[k].a;                      /* a literal broadcasts as a scalar */
    else if (t->rank == ot->rank) in[k] = materialize(L, x[k], t, order, n).a;
    else if (!x[k].nn) in[k] = x[k].a;                       /* a scalar the primitive broadcasts */
    else {                                                    /* a scalar with named axes: broadcast it */
      uint8_t own[SHM_MAXAXES];
      int m = 0;
      for (int j = 0; j < n; j++)
        if (pos_of(&x[k], order[j]) >= 0) own[m++] = order[j];
      XVal y = materialize(L, x[k], t, own, m);
      int64_t bd[SHM_MAXAXES];
      for (int i = 0, q = 0; i < n; i++)
        if (pos_of(&x[k], order[i]) >= 0) bd[q++] = i;
      Type full = held_type(L->p, ot, order, n);
      IrParam *ps = params(L, 2);
      ps[0].key = "shape";
      ps[0].v = ints_pv(L, full.shape, full.rank);
      ps[1].key = "broadcast_dimensions";
      ps[1].v = ints_pv(L, bd, m);
      in[k] = emit(L, P_BROADCAST_IN_DIM, ps, 2, &y.a, 1);
    }
  }
  XVal r;
  memset(&r, 0, sizeof r);
  r.a = emit(L, st->prim, st->params, st->nparams, in, st->nin);
  r.nn = n;
  memcpy(r.names, order, (size_t)n);
  set(L, st->out[0], r);
}

/* A copy of an equation's parameters with `key` set to v. */
static IrParam *with_param(Low *L, const IrStmt *st, const char *key, PVal *v, int *n) {
  IrParam *ps = params(L, st->nparams + 1);
  *n = 0;
  bool done = false;
  for (int i = 0; i < st->nparams; i++) {
    ps[*n] = st->params[i];
    if (!strcmp(st->params[i].key, key)) { ps[*n].v = v; done = true; }
    (*n)++;
  }
  if (!done) ps[(*n)++] = (IrParam){key, v};
  return ps;
}

static PVal *param_v(const IrStmt *st, const char *key) {
  for (int i = 0; i < st->nparams; i++)
    if (!strcmp(st->params[i].key, key)) return st->params[i].v;
  return NULL;
}

/* A list parameter of dimensions, each moved past the p named ones. */
static PVal *shifted(Low *L, const PVal *v, int p, bool keep_front) {
  int64_t out[SHM_MAXRANK * 2];
  int n = 0;
  if (keep_front)
    for (int i = 0; i < p; i++) out[n++] = i;
  for (int i = 0; v && i < v->n && n < SHM_MAXRANK * 2; i++) out[n++] = v->items[i]->i + p;
  if (v && v->k == PV_INT) out[n++] = v->i + p;
  return ints_pv(L, out, n);
}

/* The local sizes of x's named axes, then the list v. */
static PVal *sizes_then(Low *L, const XVal *x, const PVal *v) {
  int64_t out[SHM_MAXRANK * 2];
  int n = 0;
  for (int i = 0; i < x->nn; i++) out[n++] = L->p->ax[x->names[i]].local;
  for (int i = 0; v && i < v->n; i++) out[n++] = v->items[i]->i;
  return ints_pv(L, out, n);
}

/* A one-operand equation with dimension parameters: they move past the
   operand's named dimensions, which stay in front. */
static void low_dims(Low *L, IrStmt *st) {
  XVal x = get(L, &st->in[0]);
  int p = x.nn, n = 0;
  IrParam *ps = NULL;
  switch (st->prim) {
  case P_CUMSUM: case P_CUMPROD: case P_CUMMAX: case P_CUMMIN: case P_CUMLOGSUMEXP:
    ps = with_param(L, st, "axis", bld_pv_int(L->B, param_v(st, "axis")->i + p), &n);
    break;
  case P_BROADCAST_IN_DIM: {
    IrStmt tmp = *st;
    tmp.params = with_param(L, st, "shape", sizes_then(L, &x, param_v(st, "shape")), &tmp.nparams);
    ps = with_param(L, &tmp, "broadcast_dimensions", shifted(L, param_v(st, "broadcast_dimensions"), p, true), &n);
    break;
  }
  case P_RESHAPE: {
    PVal *dims = param_v(st, "dimensions");
    ps = with_param(L, st, "new_sizes", sizes_then(L, &x, param_v(st, "new_sizes")), &n);
    if (dims && dims->k != PV_NONE) {
      IrStmt tmp = *st;
      tmp.params = ps;
      tmp.nparams = n;
      ps = with_param(L, &tmp, "dimensions", shifted(L, dims, p, true), &n);
    }
    break;
  }
  case P_TRANSPOSE:
    ps = with_param(L, st, "permutation", shifted(L, param_v(st, "permutation"), p, true), &n);
    break;
  case P_SLICE: {
    PVal *st0 = param_v(st, "start_indices"), *lim = param_v(st, "limit_indices"), *str = param_v(st, "strides");
    int64_t a[SHM_MAXRANK * 2], b[SHM_MAXRANK * 2], c[SHM_MAXRANK * 2];
    int q = 0;
    for (int i = 0; i < p; i++, q++) { a[q] = 0; b[q] = L->p->ax[x.names[i]].local; c[q] = 1; }
    for (int i = 0; i < st0->n; i++, q++) {
      a[q] = st0->items[i]->i;
      b[q] = lim->items[i]->i;
      c[q] = str && str->k != PV_NONE ? str->items[i]->i : 1;
    }
    ps = params(L, 3);
    ps[0] = (IrParam){"start_indices", ints_pv(L, a, q)};
    ps[1] = (IrParam){"limit_indices", ints_pv(L, b, q)};
    ps[2] = (IrParam){"strides", ints_pv(L, c, q)};
    n = 3;
    break;
  }
  default: {                   /* reductions, argmax, squeeze, expand_dims, rev */
    const char *key = param_v(st, "axes") ? "axes" : "dimensions";
    ps = with_param(L, st, key, shifted(L, param_v(st, key), p, false), &n);
    break;
  }
  }
  XVal r = x;
  r.a = emit(L, st->prim, ps, n, &x.a, 1);
  set(L, st->out[0], r);
}

/* The union of the named axes operands hold, in the order of the one that
   holds most, then the others'. */
static int union_order(const XVal *x, int n, uint8_t *order) {
  int best = 0;
  for (int k = 1; k < n; k++)
    if (x[k].nn > x[best].nn) best = k;
  int m = n ? x[best].nn : 0;
  if (n) memcpy(order, x[best].names, (size_t)m);
  for (int k = 0; k < n; k++)
    for (int i = 0; i < x[k].nn; i++) {
      bool have = false;
      for (int j = 0; j < m; j++) have |= order[j] == x[k].names[i];
      if (!have) order[m++] = x[k].names[i];
    }
  return m;
}

/* An index operand (dynamic_slice's starts, pad's value) must not have
   named axes: one value stands for the whole array. */
static bool plain_operand(Low *L, IrStmt *st, int k, const XVal *x, const char *what) {
  if (!x->nn) return true;
  Buf b = {0};
  err_defer(buf_release, &b);
  for (int i = 0; i < x->nn; i++)
    buf_printf(&b, "%s%.*s", i ? ", " : "", L->p->ax[x->names[i]].name.n, L->p->ax[x->names[i]].name.p);
  fail(L, st->in[k].sp.file >= 0 ? st->in[k].sp : st->sp, "the %s of %s in an xmap body varies along the named "
       "axes {%s}: it must be one value for the whole array", what, prim_table[st->prim].name, buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
  return false;
}

/* concatenate, pad, dynamic_slice, dynamic_update_slice: array operands
   held alike, dimension parameters moved past the named ones. */
static void low_arrays(Low *L, IrStmt *st) {
  int narr = st->prim == P_CONCATENATE ? st->nin : st->prim == P_DYNAMIC_UPDATE_SLICE ? 2 : 1;
  XVal *x = bld_alloc(L->B, sizeof(XVal) * (size_t)st->nin);
  for (int k = 0; k < st->nin; k++) x[k] = get(L, &st->in[k]);
  for (int k = narr; k < st->nin; k++)
    if (!plain_operand(L, st, k, &x[k], st->prim == P_PAD ? "padding value" : "start index")) return;
  uint8_t order[SHM_MAXAXES];
  int p = union_order(x, narr, order);
  IrAtom *in = bld_alloc(L->B, sizeof(IrAtom) * (size_t)(st->nin + p));
  for (int k = 0; k < narr; k++) in[k] = materialize(L, x[k], &st->in[k].t, order, p).a;
  int nin = narr, n = 0;
  IrParam *ps = NULL;
  XVal probe;
  probe.nn = p;
  memcpy(probe.names, order, (size_t)p);
  switch (st->prim) {
  case P_CONCATENATE:
    ps = with_param(L, st, "dimension", bld_pv_int(L->B, param_v(st, "dimension")->i + p), &n);
    break;
  case P_PAD: {
    PVal *cfg = param_v(st, "padding_config");
    PVal **items = bld_alloc(L->B, sizeof(PVal *) * (size_t)(cfg->n + p));
    int64_t zero[3] = {0, 0, 0};
    for (int i = 0; i < p; i++) items[i] = ints_pv(L, zero, 3);
    for (int i = 0; i < cfg->n; i++) items[p + i] = cfg->items[i];
    ps = with_param(L, st, "padding_config", bld_pv_tuple(L->B, items, cfg->n + p), &n);
    in[nin++] = x[1].a;
    break;
  }
  default: {                   /* dynamic_slice, dynamic_update_slice: zero starts for the named dimensions */
    int dt = st->nin > narr ? st->in[narr].t.dt : DT_I32;
    for (int i = 0; i < p; i++) in[nin++] = bld_lit(L->B, dt, 0);
    for (int k = narr; k < st->nin; k++) in[nin++] = x[k].a;
    if (st->prim == P_DYNAMIC_SLICE) ps = with_param(L, st, "slice_sizes", sizes_then(L, &probe, param_v(st, "slice_sizes")), &n);
    else ps = params(L, 0);
    break;
  }
  }
  XVal r = probe;
  r.a = emit(L, st->prim, ps, n, in, nin);
  set(L, st->out[0], r);
}

/* ---- dot_general and pdot ----------------------------------------------------------------- */

/* dot_general of x and y over positional dimension numbers dn, summed
   over the named axes `sum` too: named axes both hold are batch
   dimensions, those one holds are free, summed ones are contracted (or
   summed beforehand when only one operand holds them); then a psum over
   the summed axes' resources. */
static XVal dot_named(Low *L, IrStmt *st, const IntList *dn, uint32_t sum) {
  XVal x = get(L, &st->in[0]), y = get(L, &st->in[1]);
  const Type *tx = &st->in[0].t, *ty = &st->in[1].t;
  const XPlan *P = L->p;
  uint32_t hx = names_mask(x.names, x.nn), hy = names_mask(y.names, y.nn), held = hx | hy;
  /* a summed axis only one operand holds: sum that operand over it first */
  for (int s = 0; s < 2; s++) {
    XVal *z = s ? &y : &x;
    uint32_t only = (s ? hy & ~hx : hx & ~hy) & sum;
    if (!only) continue;
    int64_t axes[SHM_MAXAXES];
    int na = 0;
    for (int i = 0; i < z->nn; i++)
      if (only & (1u << z->names[i])) axes[na++] = i;
    IrParam *ps = params(L, 1);
    ps[0] = (IrParam){"axes", ints_pv(L, axes, na)};
    z->a = emit(L, P_REDUCE_SUM, ps, 1, &z->a, 1);
    int m = 0;
    for (int i = 0; i < z->nn; i++)
      if (!(only & (1u << z->names[i]))) z->names[m++] = z->names[i];
    z->nn = m;
  }
  hx = names_mask(x.names, x.nn);
  hy = names_mask(y.names, y.nn);
  uint32_t both = hx & hy, contract = both & sum, batch = both & ~sum;
  int64_t lc[SHM_MAXRANK * 2], rc[SHM_MAXRANK * 2], lb[SHM_MAXRANK * 2], rb[SHM_MAXRANK * 2];
  int nc = 0, nb = 0;
  uint8_t bnames[SHM_MAXAXES], fx[SHM_MAXAXES], fy[SHM_MAXAXES];
  int nbn = 0, nfx = 0, nfy = 0;
  for (int i = 0; i < x.nn; i++) {
    int k = x.names[i];
    if (contract & (1u << k)) { lc[nc] = i; rc[nc++] = pos_of(&y, k); }
    else if (batch & (1u << k)) { lb[nb] = i; rb[nb++] = pos_of(&y, k); bnames[nbn++] = (uint8_t)k; }
    else fx[nfx++] = (uint8_t)k;
  }
  for (int i = 0; i < y.nn; i++)
    if (!(hx & (1u << y.names[i]))) fy[nfy++] = y.names[i];
  int pbn = dn[2].n;
  for (int i = 0; i < dn[0].n; i++) { lc[nc] = dn[0].v[i] + x.nn; rc[nc++] = dn[1].v[i] + y.nn; }
  for (int i = 0; i < dn[2].n; i++) { lb[nb] = dn[2].v[i] + x.nn; rb[nb++] = dn[3].v[i] + y.nn; }
  PVal *g[2], *c[2], *b2[2];
  c[0] = bld_pv_ints(L->B, lc, nc);
  c[1] = bld_pv_ints(L->B, rc, nc);
  b2[0] = bld_pv_ints(L->B, lb, nb);
  b2[1] = bld_pv_ints(L->B, rb, nb);
  for (int s = 0; s < 2; s++) { c[s]->k = PV_LIST; b2[s]->k = PV_LIST; }
  g[0] = bld_pv_tuple(L->B, c, 2);
  g[1] = bld_pv_tuple(L->B, b2, 2);
  IrParam *ps = params(L, 3);
  int n = 0;
  ps[n++] = (IrParam){"dimension_numbers", bld_pv_tuple(L->B, g, 2)};
  PVal *pet = param_v(st, "preferred_element_type");
  if (pet) ps[n++] = (IrParam){"preferred_element_type", pet};
  IrAtom in[2] = {x.a, y.a};
  IrAtom d = emit(L, P_DOT_GENERAL, ps, n, in, 2);
  /* the product's dimensions: batch (named, then positional), x's free
     (named, then positional), y's free (named, then positional); bring
     the named ones to the front */
  int xfree = tx->rank - dn[0].n - dn[2].n, yfree = ty->rank - dn[1].n - dn[3].n;
  int64_t perm[SHM_MAXRANK];
  int q = 0, base_xf = nbn + pbn, base_yf = base_xf + nfx + xfree;
  for (int i = 0; i < nbn; i++) perm[q++] = i;
  for (int i = 0; i < nfx; i++) perm[q++] = base_xf + i;
  for (int i = 0; i < nfy; i++) perm[q++] = base_yf + i;
  for (int i = 0; i < pbn; i++) perm[q++] = nbn + i;
  for (int i = 0; i < xfree; i++) perm[q++] = base_xf + nfx + i;
  for (int i = 0; i < yfree; i++) perm[q++] = base_yf + nfy + i;
  XVal r;
  memset(&r, 0, sizeof r);
  r.a = permute(L, d, perm, q);
  memcpy(r.names, bnames, (size_t)nbn);
  memcpy(r.names + nbn, fx, (size_t)nfx);
  memcpy(r.names + nbn + nfx, fy, (size_t)nfy);
  r.nn = nbn + nfx + nfy;
  uint32_t summed = sum & held;
  uint32_t res = res_of(P, summed);
  if (res && !L->failed) {
    IrParam *sp = params(L, 1);
    sp[0] = (IrParam){"axes", mesh_axes_pv(L, res)};
    r.a = emit(L, P_PSUM, sp, 1, &r.a, 1);
  }
  int64_t times = 1;           /* summed axes neither held: the sum of a constant */
  for (int k = 0; k < P->naxes; k++)
    if ((sum & (1u << k)) && !(held & (1u << k))) times *= P->ax[k].size;
  if (times > 1) {
    IrAtom in2[2] = {r.a, bld_lit(L->B, st->out[0]->t.dt, (double)times)};
    r.a = emit(L, P_MUL, NULL, 0, in2, 2);
  }
  return r;
}

static void low_dot(Low *L, IrStmt *st) {
  uint32_t sum = st->prim == P_PDOT ? st->at->axmask : 0;
  XVal r = dot_named(L, st, st->at->l, sum);
  set(L, st->out[0], r);
}

/* ---- collectives over named axes ----------------------------------------------------------- */

/* A literal's value times n, as a literal. */
static IrAtom lit_times(Low *L, IrAtom a, int64_t n) {
  double v = dtype_is_float((DType)a.t.dt) ? arr_getf(a.lit, 0) * (double)n : (double)(arr_geti(a.lit, 0) * n);
  return bld_lit(L->B, a.t.dt, v);
}

/* psum, pmax, pmin, pmean over named axes: the operand reduced over the
   named dimensions it holds, then the collective over their resources;
   over an axis it does not hold it is constant (a psum multiplies). */
static void low_reduce(Low *L, IrStmt *st) {
  XVal x = get(L, &st->in[0]);
  uint32_t A = st->at->axmask, present = A & names_mask(x.names, x.nn);
  int odt = st->out[0]->t.dt;
  bool mean = st->prim == P_PMEAN;
  if (mean && x.a.t.dt != odt && (x.a.var || x.nn)) {
    IrParam *ps = params(L, 1);
    ps[0] = (IrParam){"new_dtype", bld_pv_name(L->B, dtype_names[odt])};
    x.a = emit(L, P_CONVERT_ELEMENT_TYPE, ps, 1, &x.a, 1);
  } else if (mean && x.a.t.dt != odt) {
    x.a = bld_lit(L->B, odt, arr_getf(x.a.lit, 0));
  }
  XVal r = x;
  if (present) {
    int64_t axes[SHM_MAXAXES];
    int na = 0, m = 0;
    for (int i = 0; i < x.nn; i++)
      if (present & (1u << x.names[i])) axes[na++] = i;
      else r.names[m++] = x.names[i];
    r.nn = m;
    int red = st->prim == P_PMAX ? P_REDUCE_MAX : st->prim == P_PMIN ? P_REDUCE_MIN : P_REDUCE_SUM;
    IrParam *ps = params(L, 1);
    ps[0] = (IrParam){"axes", ints_pv(L, axes, na)};
    r.a = emit(L, red, ps, 1, &x.a, 1);
    uint32_t res = res_of(L->p, present);
    if (res) {
      IrParam *cp = params(L, 1);
      cp[0] = (IrParam){"axes", mesh_axes_pv(L, res)};
      r.a = emit(L, mean ? P_PSUM : st->prim, cp, 1, &r.a, 1);
    }
    if (mean) {
      int64_t n = 1;
      for (int k = 0; k < L->p->naxes; k++)
        if (present & (1u << k)) n *= L->p->ax[k].size;
      IrAtom in[2] = {r.a, bld_lit(L->B, odt, (double)n)};
      r.a = emit(L, P_DIV, NULL, 0, in, 2);
    }
  }
  int64_t times = 1;
  for (int k = 0; k < L->p->naxes; k++)
    if ((A & ~present) & (1u << k)) times *= L->p->ax[k].size;
  if (st->prim == P_PSUM && times > 1) {
    if (r.a.lit) r.a = lit_times(L, r.a, times);
    else {
      IrAtom in[2] = {r.a, bld_lit(L->B, r.a.t.dt, (double)times)};
      r.a = emit(L, P_MUL, NULL, 0, in, 2);
    }
  }
  set(L, st->out[0], r);
}

/* all_gather over named axes: each gathered axis whole (an all_gather over
   its resources, tiled), then moved to the gather's place. */
static void low_gather(Low *L, IrStmt *st) {
  const Type *t = &st->in[0].t;
  XVal x = widen(L, get(L, &st->in[0]), t, st->at->axmask);
  for (int j = 0; j < st->at->naxes; j++) {
    const XAxis *a = &L->p->ax[st->at->axes[j]];
    if (!a->nres) continue;
    IrParam *ps = params(L, 3);
    ps[0] = (IrParam){"axis_name", axis_res_pv(L, a)};
    ps[1] = (IrParam){"axis", bld_pv_int(L->B, pos_of(&x, st->at->axes[j]))};
    ps[2] = (IrParam){"tiled", bld_pv_bool(L->B, true)};
    x.a = emit(L, P_ALL_GATHER_INVARIANT, ps, 3, &x.a, 1);
  }
  int k = (int)st->at->i[0], nA = st->at->naxes;
  bool tiled = st->at->b[0];
  int64_t perm[SHM_MAXRANK], shape[SHM_MAXRANK];
  XVal r;
  memset(&r, 0, sizeof r);
  int q = 0, rank = 0;
  for (int i = 0; i < x.nn; i++)
    if (!(st->at->axmask & (1u << x.names[i]))) {
      perm[q++] = i;
      r.names[r.nn++] = x.names[i];
      shape[rank++] = L->p->ax[x.names[i]].local;
    }
  for (int d = 0; d < k; d++) { perm[q++] = x.nn + d; shape[rank++] = t->shape[d]; }
  int64_t merged = 1;
  for (int j = 0; j < nA; j++) {
    perm[q++] = pos_of(&x, st->at->axes[j]);
    merged *= L->p->ax[st->at->axes[j]].size;
  }
  if (tiled) merged *= t->shape[k];
  shape[rank++] = merged;
  for (int d = k; d < t->rank; d++) {
    perm[q++] = x.nn + d;
    if (!tiled || d > k) shape[rank++] = t->shape[d];
  }
  r.a = permute(L, x.a, perm, q);
  if (rank != q) r.a = reshape(L, r.a, shape, rank);
  set(L, st->out[0], r);
}

/* A permutation of the dimension d of x, whole (n entries): entry j
   comes from src[j], or is zero (src[j] < 0); as slices of x joined. */
static IrAtom permute_dim(Low *L, IrAtom x, const Type *ht, int d, const int64_t *src, int64_t n) {
  bool rev = true, id = true;
  for (int64_t j = 0; j < n; j++) {
    rev &= src[j] == n - 1 - j;
    id &= src[j] == j;
  }
  if (id) return x;
  if (rev) {
    IrParam *ps = params(L, 1);
    int64_t dd = d;
    ps[0] = (IrParam){"dimensions", ints_pv(L, &dd, 1)};
    return emit(L, P_REV, ps, 1, &x, 1);
  }
  IrAtom *parts = bld_alloc(L->B, sizeof(IrAtom) * (size_t)n);
  int np = 0;
  for (int64_t j = 0; j < n;) {
    int64_t e = j + 1;
    while (e < n && ((src[j] < 0 && src[e] < 0) || (src[j] >= 0 && src[e] == src[j] + (e - j)))) e++;
    int64_t start[SHM_MAXRANK], limit[SHM_MAXRANK];
    for (int q = 0; q < ht->rank; q++) { start[q] = 0; limit[q] = ht->shape[q]; }
    if (src[j] >= 0) {
      start[d] = src[j];
      limit[d] = src[j] + (e - j);
      IrParam *ps = params(L, 3);
      ps[0] = (IrParam){"start_indices", ints_pv(L, start, ht->rank)};
      ps[1] = (IrParam){"limit_indices", ints_pv(L, limit, ht->rank)};
      ps[2] = (IrParam){"strides", bld_pv_name(L->B, "None")};
      ps[2].v->k = PV_NONE;
      parts[np++] = emit(L, P_SLICE, ps, 3, &x, 1);
    } else {                   /* no source: zeros */
      limit[d] = e - j;
      IrParam *ps = params(L, 2);
      ps[0] = (IrParam){"shape", ints_pv(L, limit, ht->rank)};
      ps[1] = (IrParam){"broadcast_dimensions", ints_pv(L, NULL, 0)};
      IrAtom z = bld_lit(L->B, ht->dt, 0);
      parts[np++] = lift(L, emit(L, P_BROADCAST_IN_DIM, ps, 2, &z, 1), x.t.vma);
    }
    j = e;
  }
  if (np == 1) return parts[0];
  IrParam *ps = params(L, 1);
  ps[0] = (IrParam){"dimension", bld_pv_int(L->B, d)};
  return emit(L, P_CONCATENATE, ps, 1, parts, np);
}

/* ppermute over one named axis: locally a permutation of its dimension;
   with resources and one index per device, the ppermute over them; with
   more per device, the axis gathered whole, permuted, and this device's
   part taken. */
static void low_ppermute(Low *L, IrStmt *st) {
  if (st->at->naxes != 1) {
    fail(L, st->sp, "%s over several named axes at once is not supported in an xmap body; permute one axis at a "
         "time", prim_table[st->prim].name);
    return;
  }
  int k = st->at->axes[0];
  const XAxis *a = &L->p->ax[k];
  const Type *t = &st->in[0].t;
  XVal x = widen(L, get(L, &st->in[0]), t, 1u << k);
  int d = pos_of(&x, k);
  XVal r = x;
  const IntList *perm = &st->at->l[0];
  if (a->nres && a->local == 1) {
    IrParam *ps = params(L, 2);
    ps[0] = (IrParam){"axis_name", axis_res_pv(L, a)};
    PVal **pairs = bld_alloc(L->B, sizeof(PVal *) * (size_t)(perm->n / 2 + 1));
    for (int i = 0; i < perm->n / 2; i++) pairs[i] = ints_pv(L, perm->v + 2 * i, 2);
    ps[1] = (IrParam){"perm", bld_pv_tuple(L->B, pairs, perm->n / 2)};
    r.a = emit(L, P_PPERMUTE, ps, 2, &x.a, 1);
    set(L, st->out[0], r);
    return;
  }
  IrAtom whole = x.a;
  if (a->nres) {
    IrParam *ps = params(L, 3);
    ps[0] = (IrParam){"axis_name", axis_res_pv(L, a)};
    ps[1] = (IrParam){"axis", bld_pv_int(L->B, d)};
    ps[2] = (IrParam){"tiled", bld_pv_bool(L->B, true)};
    whole = emit(L, P_ALL_GATHER_INVARIANT, ps, 3, &x.a, 1);
  }
  int64_t *src = bld_alloc(L->B, sizeof(int64_t) * (size_t)a->size);
  for (int64_t j = 0; j < a->size; j++) src[j] = -1;
  for (int i = 0; i < perm->n / 2; i++) src[perm->v[2 * i + 1]] = perm->v[2 * i];
  Type ht = whole.t;
  IrAtom moved = permute_dim(L, whole, &ht, d, src, a->size);
  if (a->nres) {               /* this device's part: its block of the axis */
    IrParam *ip = params(L, 1);
    ip[0] = (IrParam){"axis_name", axis_res_pv(L, a)};
    IrAtom idx = emit(L, P_AXIS_INDEX, ip, 1, NULL, 0);
    IrAtom in2[2] = {idx, bld_lit(L->B, DT_I32, (double)a->local)};
    IrAtom start = emit(L, P_MUL, NULL, 0, in2, 2);
    IrAtom *in = bld_alloc(L->B, sizeof(IrAtom) * (size_t)(ht.rank + 1));
    in[0] = moved;
    for (int q = 0; q < ht.rank; q++) in[1 + q] = q == d ? start : bld_lit(L->B, DT_I32, 0);
    Type bt = x.a.t;
    IrParam *ps = params(L, 1);
    ps[0] = (IrParam){"slice_sizes", ints_pv(L, bt.shape, bt.rank)};
    moved = emit(L, P_DYNAMIC_SLICE, ps, 1, in, ht.rank + 1);
  }
  r.a = moved;
  set(L, st->out[0], r);
}

/* axis_index over named axes: an iota along each (plus its devices'
   offsets when it has resources), combined row-major. */
static void low_axis_index(Low *L, IrStmt *st) {
  XVal r;
  memset(&r, 0, sizeof r);
  r.nn = canonical(L->p, st->at->axmask, r.names);
  Type t0;
  memset(&t0, 0, sizeof t0);
  t0.dt = DT_I32;
  Type full = held_type(L->p, &t0, r.names, r.nn);
  IrAtom acc;
  memset(&acc, 0, sizeof acc);
  int64_t stride = 1;
  for (int j = st->at->naxes - 1; j >= 0; j--) {
    int k = st->at->axes[j];
    const XAxis *a = &L->p->ax[k];
    int d = 0;
    while (r.names[d] != k) d++;
    IrParam *ps = params(L, 4);
    ps[0] = (IrParam){"dtype", bld_pv_name(L->B, "i32")};
    ps[1] = (IrParam){"shape", ints_pv(L, full.shape, full.rank)};
    ps[2] = (IrParam){"dimension", bld_pv_int(L->B, d)};
    ps[3] = (IrParam){"sharding", bld_pv_name(L->B, "None")};
    ps[3].v->k = PV_NONE;
    IrAtom v = emit(L, P_IOTA, ps, 4, NULL, 0);
    if (a->nres) {             /* + the device's first index along the axis */
      IrParam *ip = params(L, 1);
      ip[0] = (IrParam){"axis_name", axis_res_pv(L, a)};
      IrAtom idx = emit(L, P_AXIS_INDEX, ip, 1, NULL, 0);
      IrAtom in2[2] = {idx, bld_lit(L->B, DT_I32, (double)a->local)};
      IrAtom off = emit(L, P_MUL, NULL, 0, in2, 2);
      IrAtom in3[2] = {v, off};
      v = emit(L, P_ADD, NULL, 0, in3, 2);
    }
    if (stride > 1) {
      IrAtom in4[2] = {v, bld_lit(L->B, DT_I32, (double)stride)};
      v = emit(L, P_MUL, NULL, 0, in4, 2);
    }
    if (acc.var) {
      IrAtom in5[2] = {acc, v};
      acc = emit(L, P_ADD, NULL, 0, in5, 2);
    } else {
      acc = v;
    }
    stride *= a->size;
  }
  r.a = lift(L, acc, full.vma);
  set(L, st->out[0], r);
}

/* ---- functions, calls, control flow ----------------------------------------------------------- */

/* An operand held as a function's parameter of that type is: all its
   named axes, in the named mesh's order. */
static IrAtom as_param(Low *L, const IrAtom *a, const Type *t) {
  uint8_t order[SHM_MAXAXES];
  int n = canonical(L->p, t->vma, order);
  Str keep = L->name;
  if (a->var && a->var->name.n) L->name = a->var->name;
  IrAtom r = materialize(L, get(L, a), t, order, n).a;
  L->name = keep;
  return r;
}

static void set_canonical(Low *L, IrVar *v, IrAtom a) {
  XVal r;
  memset(&r, 0, sizeof r);
  r.a = a;
  r.nn = canonical(L->p, v->t.vma, r.names);
  set(L, v, r);
}

/* The lowering of a function of the named program (once per function):
   its parameters and results held with all their named axes. */
static IrFunc *lower_fn(Low *L, IrFunc *lf) {
  for (Memo *m = *L->memo; m; m = m->next)
    if (m->lf == lf) return m->pf;
  IrProg *P = &L->cx->C->prog;
  /* a function defined in a function being lowered reads its variables:
     its lowering stands in that function's lowering (the static link) */
  IrFunc *parent = L->top;
  for (Low *o = L; o; o = o->outer)
    if (o->lf == lf->parent) { parent = bld_func(o->B); break; }
  Builder *B = bld_new(P, lf->name, parent, L->p->mesh, lf->sp);
  bld_func(B)->ast = lf->ast;        /* the debugger shows its source */
  Memo *m = arena_alloc(&P->arena, sizeof *m);
  m->lf = lf;
  m->pf = bld_func(B);
  m->next = *L->memo;
  *L->memo = m;
  Low sub = *L;
  sub.B = B;
  sub.lf = lf;
  sub.outer = L;
  sub.vals = arena_alloc(&P->arena, sizeof(XVal) * (size_t)(lf->nslots + 1));
  sub.has = arena_alloc(&P->arena, (size_t)(lf->nslots + 1));
  for (int i = 0; i < lf->nparams; i++) {
    IrVar *v = lf->params[i];
    XVal x;
    memset(&x, 0, sizeof x);
    x.nn = canonical(L->p, v->t.vma, x.names);
    IrVar *pv = bld_param(B, v->name, held_type(L->p, &v->t, x.names, x.nn));
    pv->logical = v;
    x.a.var = pv;
    x.a.t = pv->t;
    x.a.sp = v->sp;
    set(&sub, v, x);
  }
  low_body(&sub);
  IrAtom *outs = arena_alloc(&P->arena, sizeof(IrAtom) * (size_t)(lf->nouts + 1));
  for (int i = 0; i < lf->nouts; i++) outs[i] = as_param(&sub, &lf->outs[i], &lf->outs[i].t);
  bld_finish(B, outs, lf->nouts);
  if (sub.failed) L->failed = true;
  return m->pf;
}

static void low_call(Low *L, IrStmt *st) {
  IrFunc *pf = lower_fn(L, st->callee);
  IrAtom *in = bld_alloc(L->B, sizeof(IrAtom) * (size_t)(st->nin + 1));
  for (int k = 0; k < st->nin; k++) in[k] = as_param(L, &st->in[k], &st->callee->params[k]->t);
  IrAtom *out = bld_alloc(L->B, sizeof(IrAtom) * (size_t)(st->nout + 1));
  if (L->failed) return;
  bld_call(L->B, pf, in, st->nin, out);
  for (int j = 0; j < st->nout; j++) set_canonical(L, st->out[j], out[j]);
}

/* cond, while, fori_loop: their functions lowered, the operands held as
   parameters are; an index, predicate or bound must have no named axes
   (every instance of the body takes one path). */
static void low_control(Low *L, IrStmt *st) {
  int nb = st->prim == P_FORI_LOOP && st->at->i[2] ? (int)st->at->i[2] : 0;
  for (int k = 0; k < (st->prim == P_COND ? 1 : nb); k++) {
    XVal x = get(L, &st->in[k]);
    if (!plain_operand(L, st, k, &x, st->prim == P_COND ? "index" : "bound")) return;
  }
  if (st->prim == P_WHILE && st->at->fns[0]->outs[0].t.vma) {
    fail(L, st->sp, "the predicate of while in an xmap body varies along named axes: every instance must run the "
         "same iterations");
    return;
  }
  Attrs *at = bld_alloc(L->B, sizeof(Attrs));
  *at = *st->at;
  at->fns = bld_alloc(L->B, sizeof(IrFunc *) * (size_t)st->at->nfns);
  for (int f = 0; f < st->at->nfns; f++) at->fns[f] = lower_fn(L, st->at->fns[f]);
  IrAtom *in = bld_alloc(L->B, sizeof(IrAtom) * (size_t)(st->nin + 1));
  int first = st->prim == P_COND ? 1 : nb;
  for (int k = 0; k < first; k++) in[k] = get(L, &st->in[k]).a;
  for (int k = first; k < st->nin; k++) in[k] = as_param(L, &st->in[k], &st->in[k].t);
  const IrFunc *res = st->prim == P_WHILE ? at->fns[1] : at->fns[0];
  Type *outt = bld_alloc(L->B, sizeof(Type) * (size_t)(st->nout + 1));
  for (int j = 0; j < st->nout; j++) outt[j] = res->outs[j].t;
  IrAtom *out = bld_alloc(L->B, sizeof(IrAtom) * (size_t)(st->nout + 1));
  if (L->failed) return;
  bld_higher(L->B, st->prim, at, st->params, st->nparams, in, st->nin, outt, st->nout, out);
  for (int j = 0; j < st->nout; j++) set_canonical(L, st->out[j], out[j]);
}

/* ---- statements ------------------------------------------------------------------------------- */

static void low_eqn(Low *L, IrStmt *st) {
  if (st->prim < 0) { low_call(L, st); return; }
  switch (st->prim) {
  case P_PBROADCAST: set(L, st->out[0], get(L, &st->in[0])); break;     /* lazy: constant along the new axes */
  case P_PSUM: case P_PMAX: case P_PMIN: case P_PMEAN: low_reduce(L, st); break;
  case P_ALL_GATHER: case P_ALL_GATHER_INVARIANT: low_gather(L, st); break;
  case P_PPERMUTE: case P_PSHUFFLE: low_ppermute(L, st); break;
  case P_AXIS_INDEX: low_axis_index(L, st); break;
  case P_PDOT: case P_DOT_GENERAL: low_dot(L, st); break;
  case P_COND: case P_WHILE: case P_FORI_LOOP: low_control(L, st); break;
  case P_CONCATENATE: case P_PAD: case P_DYNAMIC_SLICE: case P_DYNAMIC_UPDATE_SLICE: low_arrays(L, st); break;
  case P_REDUCE_SUM: case P_REDUCE_PROD: case P_REDUCE_MAX: case P_REDUCE_MIN: case P_REDUCE_AND: case P_REDUCE_OR:
  case P_REDUCE_XOR: case P_ARGMAX: case P_ARGMIN: case P_CUMSUM: case P_CUMPROD: case P_CUMMAX: case P_CUMMIN:
  case P_CUMLOGSUMEXP: case P_BROADCAST_IN_DIM: case P_RESHAPE: case P_TRANSPOSE: case P_SQUEEZE: case P_EXPAND_DIMS: case P_REV:
  case P_SLICE:
    low_dims(L, st);
    break;
  case P_SORT: case P_TOP_K: case P_APPROX_TOP_K: case P_SPLIT:
    fail(L, st->sp, "%s is not supported in an xmap body: compute it outside the xmap, or in a shard_map",
         prim_table[st->prim].name);
    return;
  case P_ALLCLOSE: {
    XVal a = get(L, &st->in[0]), b = get(L, &st->in[1]);
    if (a.nn || b.nn) {
      fail(L, st->sp, "allclose of values with named axes compares whole arrays: compare them outside the xmap, or "
           "with eq and reduce_and inside");
      return;
    }
    low_elem(L, st);
    break;
  }
  default:
    if (prim_table[st->prim].vrule == VR_ELEM || prim_table[st->prim].vrule == VR_NULLARY) {
      low_elem(L, st);
      break;
    }
    fail(L, st->sp, "%s is not supported in an xmap body", prim_table[st->prim].name);
  }
}

static void low_stmt(Low *L, IrStmt *st) {
  bld_at(L->B, st->sp, st->whole);
  L->name = st->nout && st->out[0] ? st->out[0]->name : str_c("");
  IrFunc *pf = bld_func(L->B);
  int before = pf->nbody;
  switch (st->k) {
  case IS_CONST: {
    XVal x;
    memset(&x, 0, sizeof x);
    bld_const(L->B, st->value, &x.a);
    if (x.a.var) x.a.var->name = L->name;
    set(L, st->out[0], x);
    break;
  }
  case IS_PRINT: {
    IrPrintItem *items = bld_alloc(L->B, sizeof(IrPrintItem) * (size_t)(st->nitems + 1));
    for (int i = 0; i < st->nitems; i++) {
      items[i] = st->items[i];
      if (st->items[i].atom.var) items[i].atom = get(L, &st->items[i].atom).a;
    }
    bld_print_like(L->B, items, st->nitems, st);
    break;
  }
  case IS_SHOW: bld_show(L->B, st->text); break;
  case IS_SAVE: break;           /* the checker refuses save in a body */
  case IS_EQN:
    if (!st->inserted)
      for (int j = 0; j < st->nout; j++) check_resources(L, st->out[j], st->sp);
    if (!L->failed) low_eqn(L, st);
    break;
  }
  /* one stop per statement for the debugger: the helpers are inserted */
  for (int i = before; i + 1 < pf->nbody; i++) pf->body[i]->inserted = true;
  if (st->inserted)
    for (int i = before; i < pf->nbody; i++) pf->body[i]->inserted = true;
}

static void low_body(Low *L) {
  for (int i = 0; i < L->lf->nbody && !L->failed; i++) low_stmt(L, L->lf->body[i]);
}

/* ---- the xmap --------------------------------------------------------------------------------- */

/* The partition spec of an argument or result of rank `rank` whose
   dimensions m names: each named dimension split over its axis's
   resources. */
static void spec_of(Low *L, const XMapping *m, int rank, Spec *sp, PVal **pv) {
  memset(sp, 0, sizeof *sp);
  PVal **items = bld_alloc(L->B, sizeof(PVal *) * (size_t)(rank + 1));
  int last = 0;
  for (int d = 0; d < rank; d++) {
    const XAxis *a = NULL;
    for (int j = 0; j < m->n; j++)
      if (m->dim[j] == d) a = &L->p->ax[m->axis[j]];
    if (a && a->nres) {
      for (int j = 0; j < a->nres; j++) sp->dim[d].axes[sp->dim[d].naxes++] = a->res[j];
      sp->mask |= a->resmask;
      PVal *t = axis_res_pv(L, a);
      items[d] = a->nres == 1 ? t->items[0] : t;
      last = d + 1;
    } else {
      items[d] = bld_pv_name(L->B, "None");
      items[d]->k = PV_NONE;
    }
  }
  sp->ndims = last;
  *pv = bld_pv_tuple(L->B, items, last);
  (*pv)->k = PV_SPEC;
  sp->src = *pv;
}

/* The named axes of a mapping in the order of their dimensions. */
static int by_dim(const XMapping *m, uint8_t *names, int *dims) {
  int n = 0;
  for (int d = 0; d < SHM_MAXRANK; d++)
    for (int j = 0; j < m->n; j++)
      if (m->dim[j] == d) {
        names[n] = m->axis[j];
        dims[n++] = d;
      }
  return n;
}

/* The body's parameters: each argument's block, its named dimensions
   brought to the front. */
static void lower_params(Low *L, IrFunc *body, const Type *args) {
  for (int i = 0; i < body->nparams; i++) {
    const XMapping *m = &L->p->in[i];
    Type bt = args[i];
    bt.vma = 0;
    XVal x;
    memset(&x, 0, sizeof x);
    int dims[SHM_MAXAXES];
    x.nn = by_dim(m, x.names, dims);
    for (int j = 0; j < x.nn; j++) {
      bt.shape[dims[j]] = L->p->ax[x.names[j]].local;
      bt.vma |= L->p->ax[x.names[j]].resmask;
    }
    IrVar *v = bld_param(L->B, body->params[i]->name, bt);
    v->logical = body->params[i];
    IrAtom a = {.var = v, .t = bt, .sp = body->params[i]->sp};
    int64_t perm[SHM_MAXRANK];
    int q = 0;
    for (int j = 0; j < x.nn; j++) perm[q++] = dims[j];
    for (int d = 0; d < bt.rank; d++) {
      bool named = false;
      for (int j = 0; j < x.nn; j++) named |= dims[j] == d;
      if (!named) perm[q++] = d;
    }
    L->name = body->params[i]->name;
    x.a = permute(L, a, perm, bt.rank);
    set(L, body->params[i], x);
  }
}

/* A result held with the named axes its out_axes name, moved to their
   places. */
static IrAtom lower_result(Low *L, const IrAtom *o, const XMapping *m) {
  uint8_t names[SHM_MAXAXES];
  int dims[SHM_MAXAXES];
  int n = by_dim(m, names, dims);
  XVal x = materialize(L, get(L, o), &o->t, names, n);
  int rank = o->t.rank + n, pos = 0;
  int64_t perm[SHM_MAXRANK];
  for (int d = 0; d < rank; d++) {
    int j = -1;
    for (int q = 0; q < n; q++)
      if (dims[q] == d) j = q;
    perm[d] = j >= 0 ? j : n + pos++;
  }
  return permute(L, x.a, perm, rank);
}

IrFunc *xlow_lower(Ctx *cx, XPlan *p, IrFunc *body, const Type *args, const Type *gout, const char *name,
                   IrFunc *parent) {
  IrProg *P = &cx->C->prog;
  Memo *memo = NULL;
  Builder *B = bld_new(P, p->mesh ? body->name : name, parent, p->mesh, p->where);
  bld_func(B)->ast = body->ast;
  Low L;
  memset(&L, 0, sizeof L);
  L.cx = cx;
  L.p = p;
  L.B = B;
  L.lf = body;
  L.memo = &memo;
  L.top = bld_func(B);
  L.vals = arena_alloc(&P->arena, sizeof(XVal) * (size_t)(body->nslots + 1));
  L.has = arena_alloc(&P->arena, (size_t)(body->nslots + 1));
  for (int i = 0; i < body->nparams; i++) check_resources(&L, body->params[i], p->where);
  if (L.failed) return NULL;
  lower_params(&L, body, args);
  low_body(&L);
  IrAtom *outs = arena_alloc(&P->arena, sizeof(IrAtom) * (size_t)(body->nouts + 1));
  bld_at(B, p->where, p->where);
  for (int i = 0; i < body->nouts && !L.failed; i++) {
    L.name = body->outs[i].var ? body->outs[i].var->name : str_c("");
    outs[i] = lower_result(&L, &body->outs[i], &p->out[i]);
  }
  if (L.failed) return NULL;
  IrFunc *pb = bld_finish(B, outs, body->nouts);
  if (!p->mesh) return pb;
  /* the shard_map of the body over the mesh */
  Builder *W = bld_new(P, name, parent, NULL, p->where);
  Low LW = L;
  LW.B = W;
  ShardMap *sm = arena_alloc(&P->arena, sizeof *sm);
  sm->mesh = p->mesh;
  sm->check_vma = true;
  sm->nin = body->nparams;
  sm->nout = body->nouts;
  sm->in = arena_alloc(&P->arena, sizeof(Spec) * (size_t)(sm->nin + 1));
  sm->out = arena_alloc(&P->arena, sizeof(Spec) * (size_t)(sm->nout + 1));
  PVal **ins = arena_alloc(&P->arena, sizeof(PVal *) * (size_t)(sm->nin + 1));
  PVal **outsp = arena_alloc(&P->arena, sizeof(PVal *) * (size_t)(sm->nout + 1));
  IrAtom *in = arena_alloc(&P->arena, sizeof(IrAtom) * (size_t)(sm->nin + 1));
  for (int i = 0; i < sm->nin; i++) {
    spec_of(&LW, &p->in[i], args[i].rank, &sm->in[i], &ins[i]);
    IrVar *v = bld_param(W, body->params[i]->name, args[i]);
    in[i] = (IrAtom){.var = v, .t = args[i], .sp = p->where};
  }
  for (int i = 0; i < sm->nout; i++) spec_of(&LW, &p->out[i], gout[i].rank, &sm->out[i], &outsp[i]);
  Attrs *at = arena_alloc(&P->arena, sizeof *at);
  at->dtype = -1;
  at->ext = sm;
  at->fns = arena_alloc(&P->arena, sizeof(IrFunc *));
  at->fns[0] = pb;
  at->nfns = 1;
  PVal *fref = bld_pv_int(W, 0);
  fref->k = PV_FUNC;
  IrParam ps[5] = {{"f", fref}, {"mesh", smap_mesh_pv(cx, p->mesh)}, {"in_specs", bld_pv_tuple(W, ins, sm->nin)},
                   {"out_specs", bld_pv_tuple(W, outsp, sm->nout)}, {"check_vma", bld_pv_bool(W, true)}};
  IrAtom *res = arena_alloc(&P->arena, sizeof(IrAtom) * (size_t)(sm->nout + 1));
  bld_higher(W, P_SHARD_MAP, at, ps, 5, in, sm->nin, gout, sm->nout, res);
  for (int i = 0; i < sm->nout; i++)
    if (res[i].var && body->outs[i].var) res[i].var->name = body->outs[i].var->name;
  IrFunc *w = bld_finish(W, res, sm->nout);
  w->is_shard_map_wrapper = true;
  return w;
}
