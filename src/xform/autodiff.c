/*
** autodiff.c — jvp, vjp, grad and value_and_grad (autodiff.h): the JVP
** (jvp.c), linearized (linearize.c) and transposed (transpose.c), then
** rid of what nothing reads.
**
** The last step rebuilds the function: an equation none of whose results
** is needed goes (unless it prints), and a shard_map, cond or fori_loop
** whose results are needed only in part is rebuilt with only those (and
** only the operands they read), down into its functions; a fori_loop
** keeps the carries its kept carries read.  So the value grad does not
** return is not computed, nor the collectives that computed it.
*/
#include "autodiff.h"
#include "diag.h"
#include "jvp.h"
#include "linearize.h"
#include "prims.h"
#include "transpose.h"

/* ---- dead code ---------------------------------------------------------------------------------- */

typedef struct Live {
  bool *keep;           /* by statement */
  bool **need;          /* by statement: the results needed (a higher-order equation's) */
  bool *used;           /* by parameter */
} Live;

static void *dalloc(IrProg *P, size_t n) { return arena_alloc(&P->arena, n); }

/* Does g (or a function it nests or calls) print, or run a while (which
   might not end: it is never dropped)? */
static bool effects(const IrFunc *g) {
  for (int i = 0; i < g->nbody; i++) {
    const IrStmt *st = g->body[i];
    if (st->k == IS_PRINT || st->k == IS_SHOW || st->k == IS_SAVE) return true;
    if (st->k != IS_EQN) continue;
    if (st->prim == P_WHILE) return true;
    if (st->prim < 0 && effects(st->callee)) return true;
    for (int k = 0; st->at && k < st->at->nfns; k++)
      if (effects(st->at->fns[k])) return true;
  }
  return false;
}

static void live(IrProg *P, const IrFunc *f, const bool *need_out, Live *L);

/* Which operands of higher-order equation st its needed results read;
   need[] may grow (a fori_loop's carries read by the kept ones). */
static void live_special(IrProg *P, const IrStmt *st, bool *need, bool *in) {
  const Attrs *at = st->at;
  Live l;
  switch (st->prim) {
  case P_SHARD_MAP:
    live(P, at->fns[0], need, &l);
    for (int k = 0; k < st->nin; k++) in[k] = l.used[k];
    break;
  case P_COND:
    in[0] = true;
    for (int b = 0; b < at->nfns; b++) {
      live(P, at->fns[b], need, &l);
      for (int k = 1; k < st->nin; k++) in[k] |= l.used[k - 1];
    }
    break;
  case P_FORI_LOOP: {
    int nb = (int)at->i[2], nc = st->nin - nb;
    for (;;) {
      live(P, at->fns[0], need, &l);
      bool stable = true;
      for (int k = 0; k < nc; k++)
        if (l.used[k + 1] && !need[k]) {
          need[k] = true;
          stable = false;
        }
      if (stable) break;
    }
    for (int k = 0; k < st->nin; k++) in[k] = k < nb || need[k - nb];
    break;
  }
  default:
    for (int j = 0; j < st->nout; j++) need[j] = true;
    for (int k = 0; k < st->nin; k++) in[k] = true;
  }
}

/* The statements of f its needed results depend on, and its parameters
   they read. */
static void live(IrProg *P, const IrFunc *f, const bool *need_out, Live *L) {
  bool *u = dalloc(P, sizeof(bool) * (size_t)(f->nslots + 1));
  L->keep = dalloc(P, sizeof(bool) * (size_t)(f->nbody + 1));
  L->need = dalloc(P, sizeof(bool *) * (size_t)(f->nbody + 1));
  L->used = dalloc(P, sizeof(bool) * (size_t)(f->nparams + 1));
#define USE(a) do { if ((a).var && (a).var->owner == f) u[(a).var->slot] = true; } while (0)
  for (int j = 0; j < f->nouts; j++)
    if (need_out[j]) USE(f->outs[j]);
  for (int i = f->nbody - 1; i >= 0; i--) {
    const IrStmt *st = f->body[i];
    if (st->k == IS_PRINT) {
      L->keep[i] = true;
      for (int k = 0; k < st->nitems; k++) USE(st->items[k].atom);
      continue;
    }
    if (st->k == IS_SHOW) { L->keep[i] = true; continue; }
    if (st->k == IS_SAVE) {
      L->keep[i] = true;
      USE(st->in[0]);
      continue;
    }
    if (st->k == IS_CONST) { L->keep[i] = u[st->out[0]->slot]; continue; }
    bool *need = dalloc(P, sizeof(bool) * (size_t)(st->nout + 1)), any = false;
    for (int j = 0; j < st->nout; j++) any |= need[j] = u[st->out[j]->slot];
    bool special = st->prim >= 0 && prim_table[st->prim].vrule == VR_SPECIAL;
    bool eff = (st->prim < 0 && effects(st->callee)) || st->prim == P_WHILE;
    for (int k = 0; special && k < st->at->nfns; k++) eff |= effects(st->at->fns[k]);
    if (!any && !eff) continue;
    L->keep[i] = true;
    bool *in = dalloc(P, sizeof(bool) * (size_t)(st->nin + 1));
    if (special && !eff) live_special(P, st, need, in);
    else {
      for (int j = 0; j < st->nout; j++) need[j] = true;
      for (int k = 0; k < st->nin; k++) in[k] = true;
    }
    L->need[i] = need;
    for (int k = 0; k < st->nin; k++)
      if (in[k]) USE(st->in[k]);
    for (int k = 0; special && k < st->at->nfns; k++)
      for (int c = 0; c < st->at->fns[k]->ncaptured; c++)
        if (st->at->fns[k]->captured[c]->owner == f) u[st->at->fns[k]->captured[c]->slot] = true;
  }
#undef USE
  for (int p = 0; p < f->nparams; p++) L->used[p] = u[f->params[p]->slot];
}

static IrFunc *rebuild(IrProg *P, IrFunc *f, const bool *need_out, const bool *params, bool *ok);

/* Re-emit higher-order equation st with only the needed results `need`
   and the operands they read; out[] gets the kept results. */
static bool rebuild_special(IrProg *P, Builder *B, const IrStmt *st, const bool *need, IrAtom *in, IrAtom *out) {
  const Attrs *at = st->at;
  bool *inn = dalloc(P, sizeof(bool) * (size_t)(st->nin + 1)), *nd = dalloc(P, sizeof(bool) * (size_t)(st->nout + 1));
  memcpy(nd, need, sizeof(bool) * (size_t)st->nout);
  live_special(P, st, nd, inn);
  int nfns = at->nfns, nin = 0, nout = 0;
  Attrs *a = bld_alloc(B, sizeof(Attrs));
  *a = *at;
  a->fns = bld_alloc(B, sizeof(IrFunc *) * (size_t)(nfns + 1));
  bool ok = true;
  int first = st->prim == P_COND ? 1 : st->prim == P_FORI_LOOP ? (int)at->i[2] : 0;
  /* the functions' parameters: the kept operands (a loop's index too) */
  int np0 = st->prim == P_FORI_LOOP ? 1 : 0;
  bool *pm = dalloc(P, sizeof(bool) * (size_t)(st->nin + 2));
  for (int k = first; k < st->nin; k++) pm[np0 + k - first] = inn[k];
  if (np0) pm[0] = true;
  for (int k = 0; k < nfns; k++) a->fns[k] = rebuild(P, at->fns[k], nd, pm, &ok);
  if (!ok) return false;
  IrAtom *ins = bld_alloc(B, sizeof(IrAtom) * (size_t)(st->nin + 1));
  Type *outt = bld_alloc(B, sizeof(Type) * (size_t)(st->nout + 1));
  for (int k = 0; k < st->nin; k++)
    if (inn[k]) ins[nin++] = in[k];
  for (int j = 0; j < st->nout; j++)
    if (nd[j]) outt[nout++] = st->out[j]->t;
  const char *keys[3];
  PVal *vals[3];
  int nk = 0;
  if (st->prim == P_SHARD_MAP) {
    const ShardMap *sm = at->ext;
    ShardMap *s2 = bld_alloc(B, sizeof(ShardMap));
    *s2 = *sm;
    s2->in = bld_alloc(B, sizeof(Spec) * (size_t)(nin + 1));
    s2->out = bld_alloc(B, sizeof(Spec) * (size_t)(nout + 1));
    PVal **is = bld_alloc(B, sizeof(PVal *) * (size_t)(nin + 1)), **os = bld_alloc(B, sizeof(PVal *) * (size_t)(nout + 1));
    s2->nin = s2->nout = 0;
    for (int k = 0; k < st->nin; k++)
      if (inn[k]) { is[s2->nin] = sm->in[k].src; s2->in[s2->nin++] = sm->in[k]; }
    for (int j = 0; j < st->nout; j++)
      if (nd[j]) { os[s2->nout] = sm->out[j].src; s2->out[s2->nout++] = sm->out[j]; }
    a->ext = s2;
    keys[nk] = "f", vals[nk++] = bld_pv_fn(B, 0);
    keys[nk] = "in_specs", vals[nk++] = bld_pv_tuple(B, is, nin);
    keys[nk] = "out_specs", vals[nk++] = bld_pv_tuple(B, os, nout);
  } else if (st->prim == P_COND) {
    PVal **refs = bld_alloc(B, sizeof(PVal *) * (size_t)(nfns + 1));
    for (int b = 0; b < nfns; b++) refs[b] = bld_pv_fn(B, b);
    keys[nk] = "branches", vals[nk++] = bld_pv_tuple(B, refs, nfns);
  } else {
    keys[nk] = "body", vals[nk++] = bld_pv_fn(B, 0);
  }
  IrAtom *o = bld_alloc(B, sizeof(IrAtom) * (size_t)(nout + 1));
  if (!bld_higher(B, st->prim, a, bld_params_with(B, st, keys, vals, nk), st->nparams, ins, nin, outt, nout, o)) return false;
  for (int j = 0, q = 0; j < st->nout; j++)
    if (nd[j]) out[j] = o[q++];
  return true;
}

/* f without what its needed results do not read: a new function whose
   parameters are those `params` marks (NULL: all of them), whose results
   are those need_out marks.  *ok false after an error. */
static IrFunc *rebuild(IrProg *P, IrFunc *f, const bool *need_out, const bool *params, bool *ok) {
  Live L;
  live(P, f, need_out, &L);
  Builder *B = bld_new(P, f->name, f->parent, f->mesh, f->sp);
  IrFunc *g = bld_func(B);
  g->scope_as = f->scope_as;
  IrAtom *map = dalloc(P, sizeof(IrAtom) * (size_t)(f->nslots + 1));
  for (int p = 0; p < f->nparams; p++) {
    if (params && !params[p]) continue;
    IrVar *v = f->params[p];
    map[v->slot].var = bld_param(B, v->name, v->t);
    map[v->slot].t = v->t;
    map[v->slot].sp = v->sp;
  }
#define MAP(a) ((a).var && (a).var->owner == f ? map[(a).var->slot] : (a))
  for (int i = 0; i < f->nbody && *ok; i++) {
    IrStmt *st = f->body[i];
    if (!L.keep[i]) continue;
    bld_set_where(B, st->sp);
    if (st->k == IS_SHOW) { bld_reuse(B, st); continue; }
    if (st->k == IS_SAVE) { bld_save(B, st, MAP(st->in[0])); continue; }
    if (st->k == IS_CONST) {
      bld_const(B, st->value, &map[st->out[0]->slot]);
      map[st->out[0]->slot].var->name = st->out[0]->name;
      continue;
    }
    if (st->k == IS_PRINT) {
      IrPrintItem *items = dalloc(P, sizeof(IrPrintItem) * (size_t)(st->nitems + 1));
      for (int k = 0; k < st->nitems; k++) {
        items[k] = st->items[k];
        if (items[k].atom.var || items[k].atom.lit) items[k].atom = MAP(st->items[k].atom);
      }
      bld_print_like(B, items, st->nitems, st);
      continue;
    }
    IrAtom *in = dalloc(P, sizeof(IrAtom) * (size_t)(st->nin + 1)), *out = dalloc(P, sizeof(IrAtom) * (size_t)(st->nout + 1));
    for (int k = 0; k < st->nin; k++) {
      in[k] = MAP(st->in[k]);
      if (in[k].var) in[k].sp = st->in[k].sp;
    }
    bool special = st->prim >= 0 && prim_table[st->prim].vrule == VR_SPECIAL && st->prim != P_WHILE;
    bool done = special ? rebuild_special(P, B, st, L.need[i], in, out) : bld_copy(B, st, in, out);
    if (!done) { *ok = false; break; }
    for (int j = 0; j < st->nout; j++) {
      if (out[j].var && out[j].var->owner == g && !out[j].var->name.n) out[j].var->name = st->out[j]->name;
      map[st->out[j]->slot] = out[j];
    }
  }
  int n = 0;
  IrAtom *outs = dalloc(P, sizeof(IrAtom) * (size_t)(f->nouts + 1));
  for (int j = 0; j < f->nouts; j++)
    if (need_out[j]) outs[n++] = MAP(f->outs[j]);
#undef MAP
  return bld_finish(B, outs, n);
}

/* f with its dead code dropped (every result and parameter kept). */
static IrFunc *dce(IrProg *P, IrFunc *f) {
  if (!f) return NULL;
  bool *all = dalloc(P, sizeof(bool) * (size_t)(f->nouts + 1));
  for (int j = 0; j < f->nouts; j++) all[j] = true;
  bool ok = true;
  IrFunc *g = rebuild(P, f, all, NULL, &ok);
  return ok ? g : NULL;
}

/* ---- the transformations ------------------------------------------------------------------------ */

IrFunc *ad_jvp(IrProg *P, IrFunc *f, const char *name, Span where) {
  bool *wrt = dalloc(P, sizeof(bool) * (size_t)(f->nparams + 1));
  for (int k = 0; k < f->nparams; k++) wrt[k] = true;
  return dce(P, jvp_func(P, f, wrt, name, where));
}

/* Reverse mode: the JVP in the parameters `wrt` marks, linearized, then
   transposed in its tangents; `seed` (grad) seeds the one result's
   cotangent with 1; `value` returns f's results first. */
static IrFunc *reverse(IrProg *P, IrFunc *f, const bool *wrt, bool seed, bool value, const char *name, Span where) {
  IrFunc *J = jvp_func(P, f, wrt, name, where);
  if (!J) return NULL;
  bool *unknown = dalloc(P, sizeof(bool) * (size_t)(J->nparams + 1));
  bool *lin_out = dalloc(P, sizeof(bool) * (size_t)(J->nouts + 1));
  IrAtom *keep = dalloc(P, sizeof(IrAtom) * (size_t)(f->nouts + 1));
  for (int k = f->nparams; k < J->nparams; k++) unknown[k] = true;
  for (int j = f->nouts; j < J->nouts; j++) lin_out[j] = true;
  IrFunc *L = pe_linearize(P, J, unknown, lin_out, keep, name, where);
  if (!L) return NULL;
  TrOpts o;
  memset(&o, 0, sizeof o);
  bool one = true;
  if (seed) o.seed_one = &one;
  if (value) {
    o.keep = keep;
    o.nkeep = f->nouts;
  }
  o.prints = true;
  return tr_transpose_with(P, L, unknown, name, where, &o);
}

IrFunc *ad_vjp(IrProg *P, IrFunc *f, const char *name, Span where) {
  bool *wrt = dalloc(P, sizeof(bool) * (size_t)(f->nparams + 1));
  for (int k = 0; k < f->nparams; k++) wrt[k] = true;
  return dce(P, reverse(P, f, wrt, false, true, name, where));
}

IrFunc *ad_grad(IrProg *P, IrFunc *f, const int64_t *argnums, int n, bool with_value, const char *name, Span where) {
  bool *wrt = dalloc(P, sizeof(bool) * (size_t)(f->nparams + 1));
  for (int k = 0; k < n; k++) wrt[argnums[k]] = true;
  IrFunc *g = reverse(P, f, wrt, true, with_value, name, where);
  if (!g) return NULL;
  /* the gradients in the order argnums names them (they come out in the
     parameters' order) */
  int v = with_value ? 1 : 0;
  IrAtom *outs = dalloc(P, sizeof(IrAtom) * (size_t)(g->nouts + 1));
  memcpy(outs, g->outs, sizeof(IrAtom) * (size_t)g->nouts);
  for (int k = 0; k < n; k++) {
    int rank = 0;
    for (int j = 0; j < n; j++) rank += argnums[j] < argnums[k];
    g->outs[v + k] = outs[v + rank];
  }
  return dce(P, g);
}
