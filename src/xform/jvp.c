/*
** jvp.c — forward-mode differentiation: functions, inlined calls, and the
** rules of the higher-order primitives (cond, while, fori_loop,
** shard_map).  The rules of the other primitives are in jvp_rules.c.
*/
#include <stdarg.h>
#include <stdio.h>
#include "diag.h"
#include "jvp_int.h"

bool jvp_has_tangent(int dt) { return dtype_is_float((DType)dt); }

static void jv_body(Jv *J);

/* ---- contexts and the variable map -------------------------------------------- */

/* A context mapping src's variables into the function B writes. */
static Jv *jv_new(JvRoot *R, Builder *B, IrFunc *src, Jv *up) {
  Jv *J = bld_alloc(B, sizeof *J);
  int ns = src->nslots + 1;
  J->R = R;
  J->B = B;
  J->src = src;
  J->up = up;
  J->prim = bld_alloc(B, sizeof(IrAtom) * (size_t)ns);
  J->tan = bld_alloc(B, sizeof(IrAtom) * (size_t)ns);
  J->has = bld_alloc(B, sizeof(bool) * (size_t)ns);
  return J;
}

/* Where variable v of some source function maps: through the contexts of
   the inlined calls up to the function being made.  False for a variable
   outside them (a constant of an enclosing scope). */
static bool jv_lookup(Jv *J, const IrVar *v, IrAtom *p, IrAtom *t, bool *h) {
  for (Jv *c = J; c; c = c->up) {
    for (int i = 0; i < c->ncv; i++)
      if (c->cv[i] == v) {
        *p = c->cp[i];
        *t = c->ct[i];
        *h = c->ch[i];
        return true;
      }
    if (v->owner == c->src) {
      *p = c->prim[v->slot];
      *t = c->tan[v->slot];
      *h = c->has[v->slot];
      return true;
    }
  }
  return false;
}

/* An operand: its primal and its tangent (h: whether it has one). */
IrAtom jv_atom(Jv *J, const IrAtom *a, IrAtom *t, bool *h) {
  IrAtom p = *a, tt;
  bool hh = false;
  memset(&tt, 0, sizeof tt);
  if (a->var && jv_lookup(J, a->var, &p, &tt, &hh) && p.var) p.sp = a->sp;
  if (t) *t = tt;
  if (h) *h = hh && jvp_has_tangent(a->t.dt);
  return p;
}

/* Variable v (of J->src) is p, with tangent *t (or none when t is NULL). */
void jv_bind(Jv *J, IrVar *v, IrAtom p, const IrAtom *t) {
  J->prim[v->slot] = p;
  J->has[v->slot] = t != NULL;
  if (t) J->tan[v->slot] = *t;
}

void jv_name(Jv *J, IrAtom *t, Str primal) {
  if (!t->var || t->var->owner != bld_func(J->B) || t->var->name.n || !primal.n) return;
  char *s = bld_alloc(J->B, (size_t)primal.n + 4);
  memcpy(s, primal.p, (size_t)primal.n);
  memcpy(s + primal.n, "dot", 4);
  t->var->name = str_c(s);
}

bool jv_error(JvpCx *cx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(cx->st->sp, fmt, ap);
  va_end(ap);
  cx->J->R->failed = true;
  return false;
}

/* A new parameter of the function J writes, of type t. */
static IrAtom jv_newparam(Jv *J, Str name, Type t) { return ir_var_atom(bld_param(J->B, name, t)); }

/* A tangent parameter of type t, named after its primal. */
static IrAtom tangent_param(Jv *J, Str primal, Type t) {
  IrAtom a = jv_newparam(J, str_c(""), t);
  jv_name(J, &a, primal);
  return a;
}

/* ---- variables captured from the functions being differentiated --------------- */

typedef struct Caps {
  IrVar **v;
  int n, cap;
  const IrFunc **seen;
  int nseen, capseen;
} Caps;

/* Add v to the list (once). */
static void caps_add(Builder *B, Caps *c, IrVar *v) {
  for (int i = 0; i < c->n; i++)
    if (c->v[i] == v) return;
  if (c->n == c->cap) {
    int nc = c->cap ? 2 * c->cap : 8;
    IrVar **n = bld_alloc(B, sizeof(IrVar *) * (size_t)nc);
    if (c->n) memcpy(n, c->v, sizeof(IrVar *) * (size_t)c->n);
    c->v = n;
    c->cap = nc;
  }
  c->v[c->n++] = v;
}

/* Every variable function g reads from outside itself, also through the
   functions it calls and nests (a call's callee reads its own closure,
   which need not be g's). */
static void caps_collect(Builder *B, Caps *c, const IrFunc *g) {
  for (int i = 0; i < c->nseen; i++)
    if (c->seen[i] == g) return;
  if (c->nseen == c->capseen) {
    int nc = c->capseen ? 2 * c->capseen : 8;
    const IrFunc **n = bld_alloc(B, sizeof(IrFunc *) * (size_t)nc);
    if (c->nseen) memcpy(n, c->seen, sizeof(IrFunc *) * (size_t)c->nseen);
    c->seen = n;
    c->capseen = nc;
  }
  c->seen[c->nseen++] = g;
  for (int i = 0; i < g->ncaptured; i++) caps_add(B, c, g->captured[i]);
  for (int i = 0; i < g->nbody; i++) {
    const IrStmt *st = g->body[i];
    if (st->k != IS_EQN) continue;
    if (st->prim < 0) caps_collect(B, c, st->callee);
    for (int k = 0; st->at && k < st->at->nfns; k++) caps_collect(B, c, st->at->fns[k]);
  }
}

/* The variables the functions of equation st read from the functions
   being differentiated (they become operands: the functions made never
   read a local value through a closure). */
static Caps extras_of(Jv *J, const IrStmt *st) {
  Caps all, mine;
  memset(&all, 0, sizeof all);
  memset(&mine, 0, sizeof mine);
  for (int k = 0; k < st->at->nfns; k++) caps_collect(J->B, &all, st->at->fns[k]);
  for (int i = 0; i < all.n; i++) {
    IrAtom p, t;
    bool h;
    const IrVar *v = all.v[i];
    bool inside = false;
    for (int k = 0; k < st->at->nfns && !inside; k++)
      for (const IrFunc *g = v->owner; g && !inside; g = g->parent) inside = g == st->at->fns[k];
    if (!inside && jv_lookup(J, v, &p, &t, &h)) caps_add(J->B, &mine, all.v[i]);
  }
  return mine;
}

/* ---- functions made for a higher-order equation ----------------------------------- */

/* What a parameter of a made function stands for. */
enum { PL_P, PL_PT, PL_X, PL_XT };      /* src parameter, its tangent, an extra, its tangent */
typedef struct Plan {
  int kind, idx;
} Plan;

typedef struct Sub {
  Jv *J;                  /* the context of the made function */
  IrFunc *g;
} Sub;

/* A function made from src: parameters as `plan` lists them (a src
   parameter and an extra get their tangent parameter where nzp/nzx say),
   src's body differentiated into it.  Its results are the caller's to
   finish. */
static Sub jv_sub(Jv *J, IrFunc *src, const Caps *x, const bool *nzp, const bool *nzx, const Plan *plan, int nplan) {
  Sub s;
  Builder *B = bld_new(J->R->P, src->name, J->R->parent, src->mesh, src->sp);
  bld_set_where(B, src->sp);
  s.J = jv_new(J->R, B, src, NULL);
  s.g = bld_func(B);
  Jv *N = s.J;
  N->ncv = x->n;
  N->cv = x->v;
  N->cp = bld_alloc(B, sizeof(IrAtom) * (size_t)(x->n + 1));
  N->ct = bld_alloc(B, sizeof(IrAtom) * (size_t)(x->n + 1));
  N->ch = bld_alloc(B, sizeof(bool) * (size_t)(x->n + 1));
  for (int i = 0; i < nplan; i++) {
    int k = plan[i].idx;
    IrVar *pv = plan[i].kind <= PL_PT ? src->params[k] : x->v[k];
    switch (plan[i].kind) {
    case PL_P: N->prim[pv->slot] = jv_newparam(N, pv->name, pv->t); break;
    case PL_PT:
      N->tan[pv->slot] = tangent_param(N, pv->name, pv->t);
      N->has[pv->slot] = nzp[k];
      break;
    case PL_X: N->cp[k] = jv_newparam(N, pv->name, pv->t); break;
    default:
      N->ct[k] = tangent_param(N, pv->name, pv->t);
      N->ch[k] = nzx[k];
      break;
    }
  }
  jv_body(N);
  return s;
}

/* The result k of a made function: its primal, or its tangent (zeros
   where it has none), lifted to vary over `vma` at least. */
static IrAtom sub_out(Sub *s, int k, bool tangent, uint32_t vma) {
  IrAtom t, p;
  bool h;
  const IrAtom *o = &s->J->src->outs[k];
  p = jv_atom(s->J, o, &t, &h);
  if (tangent) {
    if (!h) {
      Type z = o->t;
      z.vma = 0;
      t = bld_zeros(s->J->B, &z);
    }
    p = t;
  }
  return bld_lift(s->J->B, p, vma | p.t.vma);
}

/* The operands of a higher-order equation, mapped, with their tangents. */
typedef struct Ops {
  IrAtom *p, *t;
  bool *h;
  int n;
} Ops;

/* The operands in[0..n-1] mapped, with their tangents. */
static Ops map_ops(Jv *J, const IrAtom *in, int n) {
  Ops o;
  o.n = n;
  o.p = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(n + 1));
  o.t = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(n + 1));
  o.h = bld_alloc(J->B, sizeof(bool) * (size_t)(n + 1));
  for (int k = 0; k < n; k++) o.p[k] = jv_atom(J, &in[k], &o.t[k], &o.h[k]);
  return o;
}

/* The captured variables x mapped, with their tangents. */
static Ops map_extras(Jv *J, const Caps *x) {
  Ops o;
  o.n = x->n;
  o.p = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(x->n + 1));
  o.t = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(x->n + 1));
  o.h = bld_alloc(J->B, sizeof(bool) * (size_t)(x->n + 1));
  for (int k = 0; k < x->n; k++) {
    IrAtom a = ir_var_atom(x->v[k]);
    o.p[k] = jv_atom(J, &a, &o.t[k], &o.h[k]);
  }
  return o;
}

/* Bind the results of a made equation: out[0..np) are st's results, then
   a tangent for each result with hout[j]. */
static void bind_results(Jv *J, const IrStmt *st, IrAtom *out, int np, const bool *hout) {
  int k = np;
  for (int j = 0; j < st->nout; j++) {
    if (out[j].var && out[j].var->owner == bld_func(J->B) && !out[j].var->name.n) out[j].var->name = st->out[j]->name;
    if (hout[j]) jv_name(J, &out[k], st->out[j]->name);
    jv_bind(J, st->out[j], out[j], hout[j] ? &out[k++] : NULL);
  }
}

/* ---- cond ------------------------------------------------------------------------------ */

/* A plan: src parameters from `first` on, the extras, then the tangents of
   those that have one (nzp from `first` on, nzx). */
static Plan *plan_std(Builder *B, int np, int first, int nx, const bool *nzp, const bool *nzx, int *n) {
  Plan *pl = bld_alloc(B, sizeof(Plan) * (size_t)(2 * (np + nx) + 1));
  int m = 0;
  for (int k = 0; k < np; k++) pl[m++] = (Plan){PL_P, k};
  for (int k = 0; k < nx; k++) pl[m++] = (Plan){PL_X, k};
  for (int k = first; k < np; k++)
    if (nzp[k]) pl[m++] = (Plan){PL_PT, k};
  for (int k = 0; k < nx; k++)
    if (nzx[k]) pl[m++] = (Plan){PL_XT, k};
  *n = m;
  return pl;
}

/* Operands in the order of plan_std: primals, extras, tangents. */
static IrAtom *std_operands(Jv *J, const Ops *o, const Ops *x, int *n) {
  IrAtom *in = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(2 * (o->n + x->n) + 1));
  int m = 0;
  for (int k = 0; k < o->n; k++) in[m++] = o->p[k];
  for (int k = 0; k < x->n; k++) in[m++] = x->p[k];
  for (int k = 0; k < o->n; k++)
    if (o->h[k]) in[m++] = o->t[k];
  for (int k = 0; k < x->n; k++)
    if (x->h[k]) in[m++] = x->t[k];
  *n = m;
  return in;
}

/* cond: each branch differentiated for the operands that have tangents; a
   result has a tangent if it has one in some branch (zeros in the others). */
bool jvp_cond(JvpCx *cx) {
  Jv *J = cx->J;
  const IrStmt *st = cx->st;
  Builder *B = J->B;
  int nb = st->at->nfns;
  Caps x = extras_of(J, st);
  Ops o = map_ops(J, st->in + 1, st->nin - 1), xo = map_extras(J, &x);
  IrAtom idx = jv_atom(J, &st->in[0], NULL, NULL);
  int np;
  Plan *pl = plan_std(B, o.n, 0, x.n, o.h, xo.h, &np);
  Sub *s = bld_alloc(B, sizeof(Sub) * (size_t)nb);
  bool *hout = bld_alloc(B, sizeof(bool) * (size_t)(st->nout + 1));
  for (int b = 0; b < nb; b++) {
    s[b] = jv_sub(J, st->at->fns[b], &x, o.h, xo.h, pl, np);
    if (J->R->failed) return false;
    for (int j = 0; j < st->nout; j++) {
      IrAtom t;
      bool h;
      jv_atom(s[b].J, &st->at->fns[b]->outs[j], &t, &h);
      hout[j] |= h;
    }
  }
  int nout = st->nout, ntan = 0;
  for (int j = 0; j < nout; j++) ntan += hout[j];
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(nout + ntan + 1));
  IrFunc **fns = bld_alloc(B, sizeof(IrFunc *) * (size_t)nb);
  PVal **refs = bld_alloc(B, sizeof(PVal *) * (size_t)nb);
  for (int b = 0; b < nb; b++) {
    IrAtom *outs = bld_alloc(B, sizeof(IrAtom) * (size_t)(nout + ntan + 1));
    int m = 0;
    for (int j = 0; j < nout; j++) outs[m++] = sub_out(&s[b], j, false, st->out[j]->t.vma);
    for (int j = 0; j < nout; j++)
      if (hout[j]) outs[m++] = sub_out(&s[b], j, true, st->out[j]->t.vma);
    fns[b] = bld_finish(s[b].J->B, outs, m);
    refs[b] = bld_pv_fn(B, b);
  }
  int m = 0;
  for (int j = 0; j < nout; j++) outt[m++] = st->out[j]->t;
  for (int j = 0; j < nout; j++)
    if (hout[j]) outt[m++] = st->out[j]->t;
  int nin;
  IrAtom *ops = std_operands(J, &o, &xo, &nin);
  IrAtom *in = bld_alloc(B, sizeof(IrAtom) * (size_t)(nin + 2));
  in[0] = idx;
  memcpy(in + 1, ops, sizeof(IrAtom) * (size_t)nin);
  const char *keys[1] = {"branches"};
  PVal *vals[1] = {bld_pv_tuple(B, refs, nb)};
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(m + 1));
  if (!bld_higher(B, P_COND, bld_attrs_with(B, st->at, fns, nb), bld_params_with(B, st, keys, vals, 1), st->nparams, in,
                  nin + 1, outt, m, out))
    return !(J->R->failed = true);
  bind_results(J, st, out, nout, hout);
  return true;
}

/* ---- fori_loop --------------------------------------------------------------------------- */

/* The body of a fori_loop or a while, differentiated with the carries
   nzc[] has tangents for, and which of its carry results then do. */
static Sub loop_body(Jv *J, IrFunc *body, int first, const Caps *x, const bool *nzp, const bool *nzx, bool *nzout,
                     int *nplan, Plan **plan) {
  *plan = plan_std(J->B, body->nparams, first, x->n, nzp, nzx, nplan);
  Sub s = jv_sub(J, body, x, nzp, nzx, *plan, *nplan);
  for (int k = 0; k < body->nouts; k++) {
    IrAtom t;
    bool h;
    jv_atom(s.J, &body->outs[k], &t, &h);
    nzout[k] = h;
  }
  return s;
}

/* fori_loop: the carries' tangents carried along (a fixed point), the
   values the body captured passed as carries it returns unchanged. */
bool jvp_fori_loop(JvpCx *cx) {
  Jv *J = cx->J;
  const IrStmt *st = cx->st;
  Builder *B = J->B;
  IrFunc *body = st->at->fns[0];
  int nb = (int)st->at->i[2], nc = st->nin - nb;
  Caps x = extras_of(J, st);
  Ops o = map_ops(J, st->in + nb, nc), xo = map_extras(J, &x);
  /* the carries with a tangent: a fixed point (a carry gains one when
     the body gives it one); the index (parameter 0) has none */
  bool *nzp = bld_alloc(B, sizeof(bool) * (size_t)(nc + 2)), *nzout = bld_alloc(B, sizeof(bool) * (size_t)(nc + 1));
  for (int k = 0; k < nc; k++) nzp[k + 1] = o.h[k];
  Sub s;
  int np;
  Plan *pl;
  for (;;) {
    s = loop_body(J, body, 1, &x, nzp, xo.h, nzout, &np, &pl);
    if (J->R->failed) return false;
    bool stable = true;
    for (int k = 0; k < nc; k++)
      if (nzout[k] && !nzp[k + 1]) {
        nzp[k + 1] = true;
        stable = false;
      }
    if (stable) break;
  }
  /* results: the carries, the extras (unchanged), the tangents */
  int ntan = 0, nxt = 0;
  for (int k = 0; k < nc; k++) ntan += nzp[k + 1];
  for (int k = 0; k < x.n; k++) nxt += xo.h[k];
  int n = nc + x.n + ntan + nxt, m = 0;
  IrAtom *outs = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(n + 1));
  IrAtom *in = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + nb + 1));
  for (int k = 0; k < nb; k++) in[k] = jv_atom(J, &st->in[k], NULL, NULL);
  for (int k = 0; k < nc; k++, m++) {
    outt[m] = st->out[k]->t;
    outs[m] = sub_out(&s, k, false, outt[m].vma);
    in[nb + m] = o.p[k];
  }
  for (int k = 0; k < x.n; k++, m++) {
    outt[m] = x.v[k]->t;
    outs[m] = s.J->cp[k];
    in[nb + m] = xo.p[k];
  }
  for (int k = 0; k < nc; k++)
    if (nzp[k + 1]) {
      outt[m] = st->out[k]->t;
      outs[m] = sub_out(&s, k, true, outt[m].vma);
      in[nb + m] = o.h[k] ? bld_lift(B, o.t[k], outt[m].vma) : bld_zeros(B, &outt[m]);
      m++;
    }
  for (int k = 0; k < x.n; k++)
    if (xo.h[k]) {
      outt[m] = x.v[k]->t;
      outs[m] = s.J->ct[k];
      in[nb + m] = xo.t[k];
      m++;
    }
  IrFunc *g = bld_finish(s.J->B, outs, m);
  const char *keys[1] = {"body"};
  PVal *vals[1] = {bld_pv_fn(B, 0)};
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(m + 1));
  if (!bld_higher(B, P_FORI_LOOP, bld_attrs_with(B, st->at, &g, 1), bld_params_with(B, st, keys, vals, 1), st->nparams, in,
                  nb + m, outt, m, out))
    return !(J->R->failed = true);
  bool *hout = bld_alloc(B, sizeof(bool) * (size_t)(nc + 1));
  for (int k = 0; k < nc; k++) hout[k] = nzp[k + 1];
  /* the tangents follow the carries and the extras */
  IrAtom *res = bld_alloc(B, sizeof(IrAtom) * (size_t)(nc + ntan + 1));
  for (int k = 0; k < nc; k++) res[k] = out[k];
  for (int k = 0; k < ntan; k++) res[nc + k] = out[nc + x.n + k];
  bind_results(J, st, res, nc, hout);
  return true;
}

/* ---- while ------------------------------------------------------------------------------ */

/* Appends to pl[m...] src parameters lo..hi-1, then the tangents of those
   nz marks; the new count. */
static int plan_group(Plan *pl, int m, int lo, int hi, const bool *nz) {
  for (int k = lo; k < hi; k++) pl[m++] = (Plan){PL_P, k};
  for (int k = lo; k < hi; k++)
    if (nz[k]) pl[m++] = (Plan){PL_PT, k};
  return m;
}

/* A loop body's leading plan entries: its nc consts and the nx extras,
   then the consts' and extras' tangents that nz and nzx mark. */
static int plan_consts(Plan *pl, int nc, int nx, const bool *nz, const bool *nzx) {
  int m = 0;
  for (int k = 0; k < nc; k++) pl[m++] = (Plan){PL_P, k};
  for (int k = 0; k < nx; k++) pl[m++] = (Plan){PL_X, k};
  for (int k = 0; k < nc; k++)
    if (nz[k]) pl[m++] = (Plan){PL_PT, k};
  for (int k = 0; k < nx; k++)
    if (nzx[k]) pl[m++] = (Plan){PL_XT, k};
  return m;
}

/* The cond_jaxpr of a differentiated while: src's parameters (cond
   consts, carries) with the extras after the consts and the carries'
   tangents last, which it does not read. */
static IrFunc *while_cond(Jv *J, IrFunc *cf, int cn, const Caps *x, const bool *nzc) {
  int np = cf->nparams, m = 0;
  Plan *pl = bld_alloc(J->B, sizeof(Plan) * (size_t)(2 * np + x->n + 1));
  bool *none = bld_alloc(J->B, sizeof(bool) * (size_t)(np + x->n + 1));
  for (int k = 0; k < cn; k++) pl[m++] = (Plan){PL_P, k};
  for (int k = 0; k < x->n; k++) pl[m++] = (Plan){PL_X, k};
  for (int k = cn; k < np; k++) pl[m++] = (Plan){PL_P, k};
  for (int k = cn; k < np; k++)
    if (nzc[k - cn]) pl[m++] = (Plan){PL_PT, k};
  Sub s = jv_sub(J, cf, x, none, none, pl, m);
  if (J->R->failed) return NULL;
  IrAtom o = sub_out(&s, 0, false, 0);
  return bld_finish(s.J->B, &o, 1);
}

/* while: the body differentiated, its carries' tangents carried along; the
   cond_jaxpr reads the primal carries only. */
bool jvp_while(JvpCx *cx) {
  Jv *J = cx->J;
  const IrStmt *st = cx->st;
  Builder *B = J->B;
  IrFunc *cf = st->at->fns[0], *bf = st->at->fns[1];
  int cn = (int)st->at->i[0], bn = (int)st->at->i[1], nc = st->nin - cn - bn;
  Caps x = extras_of(J, st);
  Ops o = map_ops(J, st->in, st->nin), xo = map_extras(J, &x);
  /* body parameters: body consts, carries; the carries with a tangent are
     a fixed point */
  bool *nzp = bld_alloc(B, sizeof(bool) * (size_t)(bn + nc + 1)), *nzout = bld_alloc(B, sizeof(bool) * (size_t)(nc + 1));
  for (int k = 0; k < bn + nc; k++) nzp[k] = o.h[cn + k];
  Sub s;
  int m;
  Plan *pl = bld_alloc(B, sizeof(Plan) * (size_t)(2 * (bn + nc + x.n) + 1));
  for (;;) {
    m = plan_group(pl, plan_consts(pl, bn, x.n, nzp, xo.h), bn, bn + nc, nzp);
    s = jv_sub(J, bf, &x, nzp, xo.h, pl, m);
    if (J->R->failed) return false;
    bool stable = true;
    for (int k = 0; k < nc; k++) {
      IrAtom t;
      bool h;
      jv_atom(s.J, &bf->outs[k], &t, &h);
      nzout[k] = h;
      if (h && !nzp[bn + k]) {
        nzp[bn + k] = true;
        stable = false;
      }
    }
    if (stable) break;
  }
  IrFunc *c2 = while_cond(J, cf, cn, &x, nzp + bn);
  if (!c2) return false;
  int ntan = 0;
  for (int k = 0; k < nc; k++) ntan += nzp[bn + k];
  /* operands: cond consts, extras; body consts, extras, their tangents;
     carries, their tangents */
  int nin = 0, nmax = st->nin * 2 + 3 * x.n + 1;
  IrAtom *in = bld_alloc(B, sizeof(IrAtom) * (size_t)nmax);
  for (int k = 0; k < cn; k++) in[nin++] = o.p[k];
  for (int k = 0; k < x.n; k++) in[nin++] = xo.p[k];
  int bstart = nin;
  for (int k = 0; k < bn; k++) in[nin++] = o.p[cn + k];
  for (int k = 0; k < x.n; k++) in[nin++] = xo.p[k];
  for (int k = 0; k < bn; k++)
    if (nzp[k]) in[nin++] = o.t[cn + k];
  for (int k = 0; k < x.n; k++)
    if (xo.h[k]) in[nin++] = xo.t[k];
  int nbody = nin - bstart;
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(nc + ntan + 1));
  IrAtom *outs = bld_alloc(B, sizeof(IrAtom) * (size_t)(nc + ntan + 1));
  int mo = 0;
  for (int k = 0; k < nc; k++, mo++) {
    outt[mo] = st->out[k]->t;
    outs[mo] = sub_out(&s, k, false, outt[mo].vma);
    in[nin++] = o.p[cn + bn + k];
  }
  for (int k = 0; k < nc; k++)
    if (nzp[bn + k]) {
      outt[mo] = st->out[k]->t;
      outs[mo] = sub_out(&s, k, true, outt[mo].vma);
      in[nin++] = o.h[cn + bn + k] ? bld_lift(B, o.t[cn + bn + k], outt[mo].vma) : bld_zeros(B, &outt[mo]);
      mo++;
    }
  IrFunc *fns[2] = {c2, bld_finish(s.J->B, outs, mo)};
  Attrs *at = bld_attrs_with(B, st->at, fns, 2);
  at->i[0] = cn + x.n;
  at->i[1] = nbody;
  const char *keys[4] = {"cond_jaxpr", "body_jaxpr", "cond_nconsts", "body_nconsts"};
  PVal *vals[4] = {bld_pv_fn(B, 0), bld_pv_fn(B, 1), bld_pv_int(B, at->i[0]), bld_pv_int(B, at->i[1])};
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(mo + 1));
  if (!bld_higher(B, P_WHILE, at, bld_params_with(B, st, keys, vals, 4), st->nparams, in, nin, outt, mo, out))
    return !(J->R->failed = true);
  bool *hout = bld_alloc(B, sizeof(bool) * (size_t)(nc + 1));
  for (int k = 0; k < nc; k++) hout[k] = nzp[bn + k];
  bind_results(J, st, out, nc, hout);
  return true;
}

/* ---- scan ------------------------------------------------------------------------------- */

/* scan: operands consts, carries, xs; the body (consts, carries, slices of
   the xs) -> (carries, slices of the ys).  The JVP's operands are the
   consts, the captured values, their tangents; the carries, theirs (a
   fixed point); the xs, theirs; its results the carries, their tangents,
   the ys, theirs. */
bool jvp_scan(JvpCx *cx) {
  Jv *J = cx->J;
  const IrStmt *st = cx->st;
  Builder *B = J->B;
  IrFunc *body = st->at->fns[0];
  int nc = (int)st->at->i[0], ncar = (int)st->at->i[1];
  Caps x = extras_of(J, st);
  Ops o = map_ops(J, st->in, st->nin), xo = map_extras(J, &x);
  bool *nzp = bld_alloc(B, sizeof(bool) * (size_t)(st->nin + 1));
  for (int k = 0; k < st->nin; k++) nzp[k] = o.h[k];
  Plan *pl = bld_alloc(B, sizeof(Plan) * (size_t)(2 * (st->nin + x.n) + 1));
  Sub s;
  int m;
  for (;;) {
    m = plan_group(pl, plan_consts(pl, nc, x.n, nzp, xo.h), nc, nc + ncar, nzp);
    m = plan_group(pl, m, nc + ncar, st->nin, nzp);
    s = jv_sub(J, body, &x, nzp, xo.h, pl, m);
    if (J->R->failed) return false;
    bool stable = true;
    for (int k = 0; k < ncar; k++) {
      IrAtom t;
      bool h;
      jv_atom(s.J, &body->outs[k], &t, &h);
      if (h && !nzp[nc + k]) {
        nzp[nc + k] = true;
        stable = false;
      }
    }
    if (stable) break;
  }
  bool *hout = bld_alloc(B, sizeof(bool) * (size_t)(st->nout + 1));
  for (int j = 0; j < st->nout; j++) {
    IrAtom t;
    if (j < ncar) hout[j] = nzp[nc + j];
    else jv_atom(s.J, &body->outs[j], &t, &hout[j]);
  }
  /* operands */
  IrAtom *in = bld_alloc(B, sizeof(IrAtom) * (size_t)(2 * (st->nin + x.n) + 1));
  int nin = 0;
  for (int k = 0; k < nc; k++) in[nin++] = o.p[k];
  for (int k = 0; k < x.n; k++) in[nin++] = xo.p[k];
  for (int k = 0; k < nc; k++)
    if (nzp[k]) in[nin++] = o.t[k];
  for (int k = 0; k < x.n; k++)
    if (xo.h[k]) in[nin++] = xo.t[k];
  int nconsts = nin;
  for (int k = nc; k < nc + ncar; k++) in[nin++] = o.p[k];
  for (int k = nc; k < nc + ncar; k++)
    if (nzp[k]) {
      Type t = st->out[k - nc]->t;
      in[nin++] = o.h[k] ? bld_lift(B, o.t[k], t.vma) : bld_zeros(B, &t);
    }
  int ncarry = nin - nconsts;
  for (int k = nc + ncar; k < st->nin; k++) in[nin++] = o.p[k];
  for (int k = nc + ncar; k < st->nin; k++)
    if (nzp[k]) in[nin++] = o.t[k];
  /* results: carries, their tangents, ys, theirs */
  IrAtom *outs = bld_alloc(B, sizeof(IrAtom) * (size_t)(2 * st->nout + 1));
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(2 * st->nout + 1));
  int no = 0;
  for (int pass = 0; pass < 4; pass++)
    for (int j = pass < 2 ? 0 : ncar; j < (pass < 2 ? ncar : st->nout); j++) {
      bool tangent = pass & 1;
      if (tangent && !hout[j]) continue;
      uint32_t vma = body->outs[j].t.vma | (j < ncar ? st->out[j]->t.vma : 0);
      outs[no] = sub_out(&s, j, tangent, vma);
      outt[no++] = st->out[j]->t;
    }
  IrFunc *g = bld_finish(s.J->B, outs, no);
  Attrs *at = bld_attrs_with(B, st->at, &g, 1);
  at->i[0] = nconsts;
  at->i[1] = ncarry;
  const char *keys[3] = {"jaxpr", "num_consts", "num_carry"};
  PVal *vals[3] = {bld_pv_fn(B, 0), bld_pv_int(B, nconsts), bld_pv_int(B, ncarry)};
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(no + 1));
  if (!bld_higher(B, P_SCAN, at, bld_params_with(B, st, keys, vals, 3), st->nparams, in, nin, outt, no, out))
    return !(J->R->failed = true);
  /* out: carries, their tangents (ntc), ys, theirs; st's results are the
     carries then the ys, their tangents in the same order */
  IrAtom *res = bld_alloc(B, sizeof(IrAtom) * (size_t)(2 * st->nout + 1));
  int ntc = 0, q = st->nout, tc = 0, ty = 0;
  for (int j = 0; j < ncar; j++) ntc += hout[j];
  for (int j = 0; j < st->nout; j++) res[j] = out[j < ncar ? j : ntc + j];
  for (int j = 0; j < st->nout; j++)
    if (hout[j]) res[q++] = j < ncar ? out[ncar + tc++] : out[ntc + st->nout + ty++];
  bind_results(J, st, res, st->nout, hout);
  return true;
}

/* ---- shard_map ------------------------------------------------------------------------------ */

/* The spec P(). */
static PVal *spec_none(Builder *B) {
  PVal *v = bld_pv_tuple(B, NULL, 0);
  v->k = PV_SPEC;
  return v;
}

/* An xla_pmap's parameters for new operands and results: the per-operand
   ones made from inax[] (the mapped dimension, or -1), out_axes from
   outax[], call_jaxpr the new body; the others as written. */
static IrParam *pmap_params(Builder *B, const IrStmt *st, const int8_t *inax, int nin, const int8_t *outax,
                            int nout, int *np) {
  PVal **axes = bld_alloc(B, sizeof(PVal *) * (size_t)(nin + 1)), **mapped = bld_alloc(B, sizeof(PVal *) * (size_t)(nin + 1));
  PVal **no = bld_alloc(B, sizeof(PVal *) * (size_t)(nin + 1)), **none = bld_alloc(B, sizeof(PVal *) * (size_t)(nin + 1));
  PVal **oax = bld_alloc(B, sizeof(PVal *) * (size_t)(nout + 1));
  for (int k = 0; k < nin; k++) {
    axes[k] = inax[k] >= 0 ? bld_pv_int(B, inax[k]) : bld_pv_tuple(B, NULL, 0);
    if (inax[k] < 0) axes[k]->k = PV_NONE;
    mapped[k] = bld_pv_bool(B, inax[k] >= 0);
    no[k] = bld_pv_bool(B, false);
    none[k] = bld_pv_tuple(B, NULL, 0);
    none[k]->k = PV_NONE;
  }
  for (int j = 0; j < nout; j++) oax[j] = bld_pv_int(B, outax[j]);
  const char *keys[6] = {"call_jaxpr", "in_axes", "out_axes", "mapped_invars", "donated_invars", "global_arg_shapes"};
  PVal *vals[6] = {bld_pv_fn(B, 0), bld_pv_tuple(B, axes, nin), bld_pv_tuple(B, oax, nout), bld_pv_tuple(B, mapped, nin),
                   bld_pv_tuple(B, no, nin), bld_pv_tuple(B, none, nin)};
  IrParam *ps = bld_alloc(B, sizeof(IrParam) * (size_t)(st->nparams + 4));
  memcpy(ps, bld_params_with(B, st, keys, vals, 6), sizeof(IrParam) * (size_t)st->nparams);
  *np = st->nparams;
  for (int k = 1; k < 3; k++)        /* in_axes and out_axes, when they were left to their defaults */
    if (!rule_stmt_param(st, keys[k])) {
      ps[*np].key = keys[k];
      ps[(*np)++].v = vals[k];
    }
  return ps;
}

/* shard_map (and xla_pmap, the same with mapped dimensions): the body
   differentiated; a tangent enters and leaves as its primal does, a
   captured value as an unmapped, replicated operand (P()). */
bool jvp_shard_map(JvpCx *cx) {
  Jv *J = cx->J;
  const IrStmt *st = cx->st;
  Builder *B = J->B;
  const ShardMap *sm = st->at->ext;
  IrFunc *body = st->at->fns[0];
  Caps x = extras_of(J, st);
  Ops o = map_ops(J, st->in, st->nin), xo = map_extras(J, &x);
  int np;
  Plan *pl = plan_std(B, o.n, 0, x.n, o.h, xo.h, &np);
  Sub s = jv_sub(J, body, &x, o.h, xo.h, pl, np);
  if (J->R->failed) return false;
  int nout = st->nout, ntan = 0;
  bool *hout = bld_alloc(B, sizeof(bool) * (size_t)(nout + 1));
  for (int j = 0; j < nout; j++) {
    IrAtom t;
    jv_atom(s.J, &body->outs[j], &t, &hout[j]);
    ntan += hout[j];
  }
  IrAtom *outs = bld_alloc(B, sizeof(IrAtom) * (size_t)(nout + ntan + 1));
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(nout + ntan + 1));
  ShardMap *ts = bld_alloc(B, sizeof(ShardMap));
  *ts = *sm;
  ts->out = bld_alloc(B, sizeof(Spec) * (size_t)(nout + ntan + 1));
  int8_t *oax = bld_alloc(B, (size_t)(nout + ntan + 1));
  PVal **os = bld_alloc(B, sizeof(PVal *) * (size_t)(nout + ntan + 1));
  int m = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int j = 0; j < nout; j++) {
      if (pass && !hout[j]) continue;
      IrAtom t;
      bool h;
      jv_atom(s.J, &body->outs[j], &t, &h);
      outs[m] = pass ? t : sub_out(&s, j, false, 0);
      outt[m] = st->out[j]->t;
      ts->out[m] = sm->out[j];
      os[m] = sm->out[j].src;
      oax[m++] = sm->out_axis ? sm->out_axis[j] : -1;
    }
  ts->nout = m;
  IrFunc *g = bld_finish(s.J->B, outs, m);
  int nin;
  IrAtom *in = std_operands(J, &o, &xo, &nin);
  ts->nin = nin;
  ts->in = bld_alloc(B, sizeof(Spec) * (size_t)(nin + 1));
  int8_t *iax = bld_alloc(B, (size_t)(nin + 1));
  PVal **is = bld_alloc(B, sizeof(PVal *) * (size_t)(nin + 1));
  for (int i = 0; i < np; i++) {
    int k = pl[i].idx;
    if (pl[i].kind == PL_P || pl[i].kind == PL_PT) {
      ts->in[i] = sm->in[k];
      iax[i] = sm->in_axis ? sm->in_axis[k] : -1;
    } else {
      memset(&ts->in[i], 0, sizeof(Spec));
      ts->in[i].src = spec_none(B);
      iax[i] = -1;
    }
    is[i] = ts->in[i].src;
  }
  if (sm->in_axis) {
    ts->in_axis = iax;
    ts->out_axis = oax;
  }
  Attrs *at = bld_attrs_with(B, st->at, &g, 1);
  at->ext = ts;
  const char *keys[3] = {"f", "in_specs", "out_specs"};
  PVal *vals[3] = {bld_pv_fn(B, 0), bld_pv_tuple(B, is, nin), bld_pv_tuple(B, os, m)};
  int nps = st->nparams;
  IrParam *ps = st->prim == P_XLA_PMAP ? pmap_params(B, st, iax, nin, oax, m, &nps) : bld_params_with(B, st, keys, vals, 3);
  IrAtom *out = bld_alloc(B, sizeof(IrAtom) * (size_t)(m + 1));
  if (!bld_higher(B, st->prim, at, ps, nps, in, nin, outt, m, out)) return !(J->R->failed = true);
  bind_results(J, st, out, nout, hout);
  return true;
}

/* ---- equations ------------------------------------------------------------------------------ */

/* A call of g: its equations, differentiated in place. */
void jv_inline(Jv *J, const IrStmt *st, IrFunc *g) {
  Jv *C = jv_new(J->R, J->B, g, J);
  for (int k = 0; k < st->nin && k < g->nparams; k++) {
    IrAtom t;
    bool h;
    IrAtom p = jv_atom(J, &st->in[k], &t, &h);
    jv_bind(C, g->params[k], p, h ? &t : NULL);
  }
  jv_body(C);
  for (int j = 0; j < st->nout && j < g->nouts; j++) {
    IrAtom t;
    bool h;
    IrAtom p = jv_atom(C, &g->outs[j], &t, &h);
    jv_bind(J, st->out[j], p, h ? &t : NULL);
  }
}

/* JAX's call primitives (pjit, closed_call, checkpoint...): the checker
   makes them calls of their function, which is inlined.  The custom_jvp
   and custom_vjp calls go to custom.c: JAX's rule where shm knows it, a
   rule the program attached, else the function itself, with a warning. */
bool jvp_call(JvpCx *cx) {
  jv_inline(cx->J, cx->st, cx->st->callee ? cx->st->callee : cx->st->at->fns[0]);
  return true;
}

bool jv_reads_locals(Jv *J, const IrStmt *st) {
  Caps all;
  memset(&all, 0, sizeof all);
  if (st->callee) caps_collect(J->B, &all, st->callee);
  for (int k = 0; st->at && k < st->at->nfns; k++) caps_collect(J->B, &all, st->at->fns[k]);
  for (int i = 0; i < all.n; i++) {
    IrAtom p, t;
    bool h;
    if (jv_lookup(J, all.v[i], &p, &t, &h)) return true;
  }
  return false;
}

/* An equation: the primal copied, then its tangents from the rule. */
static void jv_eqn(Jv *J, const IrStmt *st) {
  if (st->prim < 0 && cust_is_custom(st)) { cust_jvp(J, st); return; }
  if (st->prim < 0) { jv_inline(J, st, st->callee); return; }
  JvpCx cx;
  memset(&cx, 0, sizeof cx);
  cx.J = J;
  cx.st = st;
  if (prim_table[st->prim].vrule == VR_SPECIAL) {
    jvp_rule(st->prim)(&cx);
    return;
  }
  Builder *B = J->B;
  int n = st->nin, nout = st->nout;
  cx.in = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  cx.tin = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  cx.has = bld_alloc(B, sizeof(bool) * (size_t)(n + 1));
  cx.out = bld_alloc(B, sizeof(IrAtom) * (size_t)(nout + 1));
  cx.tout = bld_alloc(B, sizeof(IrAtom) * (size_t)(nout + 1));
  cx.hout = bld_alloc(B, sizeof(bool) * (size_t)(nout + 1));
  bool any = false, floats = false;
  for (int k = 0; k < n; k++) {
    cx.in[k] = jv_atom(J, &st->in[k], &cx.tin[k], &cx.has[k]);
    any |= cx.has[k];
  }
  IrAtom *ins = bld_alloc(B, sizeof(IrAtom) * (size_t)(n + 1));
  memcpy(ins, cx.in, sizeof(IrAtom) * (size_t)n);
  if (!bld_copy(B, st, ins, cx.out)) { J->R->failed = true; return; }
  for (int j = 0; j < nout; j++) floats |= jvp_has_tangent(st->out[j]->t.dt);
  for (int j = 0; j < nout && any; j++)
    if (dtype_is_complex((DType)st->out[j]->t.dt)) {
      jv_error(&cx, "%s makes a complex value from a differentiated one, and differentiation of complex values is "
               "not available", st->prim >= 0 ? prim_table[st->prim].name : "this call");
      break;
    }
  if (any && floats && !J->R->failed) {
    JvpFn rule = jvp_rule(st->prim);
    if (!rule && (st->prim == P_PDOT || st->prim == P_XMAP))
      jv_error(&cx, "%s cannot be differentiated: JAX's derivative rule for it is not written here",
               prim_table[st->prim].name);
    else if (!rule)
      jv_error(&cx, "%s has no derivative rule (JAX defines none): it cannot be differentiated",
               prim_table[st->prim].name);
    else
      rule(&cx);
  }
  for (int j = 0; j < nout; j++) {
    bool h = cx.hout[j] && jvp_has_tangent(st->out[j]->t.dt);
    if (h) jv_name(J, &cx.tout[j], st->out[j]->name);
    jv_bind(J, st->out[j], cx.out[j], h ? &cx.tout[j] : NULL);
  }
}

/* A statement of J->src. */
static void jv_stmt(Jv *J, IrStmt *st) {
  bld_set_where(J->B, st->sp);
  switch (st->k) {
  case IS_EQN: jv_eqn(J, st); break;
  case IS_CONST: {
    IrAtom a;
    bld_const(J->B, st->value, &a);
    a.var->name = st->out[0]->name;
    jv_bind(J, st->out[0], a, NULL);
    break;
  }
  case IS_PRINT: {
    IrPrintItem *items = bld_alloc(J->B, sizeof(IrPrintItem) * (size_t)(st->nitems + 1));
    for (int k = 0; k < st->nitems; k++) {
      items[k] = st->items[k];
      if (items[k].atom.var || items[k].atom.lit) items[k].atom = jv_atom(J, &st->items[k].atom, NULL, NULL);
    }
    bld_print_like(J->B, items, st->nitems, st);
    break;
  }
  case IS_SHOW: bld_reuse(J->B, st); break;
  case IS_SAVE: bld_save(J->B, st, jv_atom(J, &st->in[0], NULL, NULL)); break;
  }
}

/* J->src's statements, in order (until a failure). */
static void jv_body(Jv *J) {
  for (int i = 0; i < J->src->nbody && !J->R->failed; i++) jv_stmt(J, J->src->body[i]);
}

/* ---- the function ------------------------------------------------------------------------- */

IrFunc *jvp_func(IrProg *P, IrFunc *f, const bool *wrt, const char *name, Span where) {
  JvRoot R;
  memset(&R, 0, sizeof R);
  R.P = P;
  R.parent = f->parent;
  Builder *B = bld_new(P, name, f->parent, f->mesh, where);
  IrFunc *g = bld_func(B);
  g->scope_as = f->scope_as ? f->scope_as : f;
  Jv *J = jv_new(&R, B, f, NULL);
  int errs = diag_count();
  for (int k = 0; k < f->nparams; k++) J->prim[f->params[k]->slot] = jv_newparam(J, f->params[k]->name, f->params[k]->t);
  for (int k = 0; k < f->nparams; k++) {
    IrVar *p = f->params[k];
    if (!wrt[k] || !jvp_has_tangent(p->t.dt)) continue;
    J->tan[p->slot] = tangent_param(J, p->name, p->t);
    J->has[p->slot] = true;
  }
  bld_set_where(B, f->sp);
  jv_body(J);
  if (R.failed || diag_count() != errs) return NULL;
  bld_set_where(B, where);
  IrAtom *outs = bld_alloc(B, sizeof(IrAtom) * (size_t)(2 * f->nouts + 1));
  int m = 0;
  for (int j = 0; j < f->nouts; j++) outs[m++] = jv_atom(J, &f->outs[j], NULL, NULL);
  for (int j = 0; j < f->nouts; j++) {
    const IrAtom *o = &f->outs[j];
    if (!jvp_has_tangent(o->t.dt)) continue;
    IrAtom t;
    bool h;
    jv_atom(J, o, &t, &h);
    if (!h) {
      Type z = o->t;
      z.vma = 0;
      t = bld_zeros(B, &z);
    }
    outs[m++] = bld_lift(B, t, o->t.vma);
  }
  return bld_finish(B, outs, m);
}
