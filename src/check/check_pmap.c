/*
** check_pmap.c — pmap, lowered to shard_map.
**
** `@pmap[axis_name=i, in_axes=0, out_axes=0, axis_size=None]` maps a
** function over a dimension of its arguments, one instance per index:
** pmap(f)(xs) == stack([f(x) for x in xs]) when f has no collectives, and
** its collectives name axis_name.  shm writes it as the shard_map it is:
** a mesh of one axis of that size (written inline, `mesh={i: 8}`), each
** mapped dimension split into blocks of one (the body squeezes it away),
** each result's block expanded back and put in place by its out_spec.
** A pmap called inside a pmap's body adds its axis to that mesh, as JAX's
** nested pmaps make a two-dimensional grid: its arguments are sliced
** along the new axis by axis_index, and its results gathered back
** (all_gather_invariant), since the outer body holds whole values.
*/
#include <stdio.h>
#include <stdlib.h>
#include "irbuild.h"
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "show.h"

/* The parameters of one @pmap. */
typedef struct PmapSpec {
  Str axis;
  int nin, nout;
  int64_t *in_axes;            /* per argument; -1 for None */
  PVal *out_axes;              /* as written (per result, known after the body) */
  int64_t size;                /* axis_size, or 0 */
} PmapSpec;

#define NONE_AXIS INT64_MIN

/* An int or None, or a tuple of them (one per item), into out[0..n-1]. */
static bool axes_list(RuleCtx *r, const char *key, PVal *v, int n, int64_t *out) {
  v = pv_unparen(v);
  for (int i = 0; i < n; i++) out[i] = 0;
  if (!v) return true;
  PVal **items = &v;
  int m = 1;
  if (v->k == PV_TUPLE || v->k == PV_LIST) { items = v->items; m = v->n; }
  else m = n;
  if (m != n) return rule_param_error(r, key, "pmap has %d %s for %d %s", m, key, n, !strcmp(key, "in_axes") ? "arguments" : "results");
  for (int i = 0; i < n; i++) {
    PVal *e = pv_unparen(items == &v ? v : items[i]);
    if (e->k == PV_NONE) out[i] = NONE_AXIS;
    else if (e->k == PV_INT) out[i] = e->i;
    else return rule_param_error(r, key, "%s of pmap is an int, None or a tuple of them", key);
  }
  return true;
}

/* The parameters of a @pmap. */
static bool read_spec(Ctx *cx, RuleCtx *r, int nargs, PmapSpec *ps, int depth) {
  memset(ps, 0, sizeof *ps);
  PVal *an = pv_unparen(rule_get(r, "axis_name"));
  if (an && an->k != PV_NAME && an->k != PV_STR && an->k != PV_NONE)
    return rule_param_error(r, "axis_name", "axis_name of pmap names one axis");
  if (an && an->k != PV_NONE) ps->axis = an->s;
  else {                       /* an unnamed axis: a name no collective of the program uses */
    char buf[32];
    snprintf(buf, sizeof buf, "_pmap%d", depth);
    ps->axis = str_c(arena_strndup(&cx->C->prog.arena, buf, strlen(buf)));
  }
  ps->nin = nargs;
  ps->in_axes = NEWN(cx->C, int64_t, nargs);
  if (!axes_list(r, "in_axes", rule_get(r, "in_axes"), nargs, ps->in_axes)) return false;
  ps->out_axes = rule_get(r, "out_axes");
  PVal *sz = pv_unparen(rule_get(r, "axis_size"));
  if (sz && sz->k != PV_NONE) {
    if (sz->k != PV_INT || sz->i < 1) return rule_param_error(r, "axis_size", "axis_size of pmap is a positive int or None");
    ps->size = sz->i;
  }
  return rule_unused(r, "axis_name in_axes out_axes axis_size");
}

/* The size of the mapped axis: the mapped dimensions agree (and with
   axis_size); negative in_axes count from the end. */
static bool mapped_size(Ctx *cx, Span call, PmapSpec *ps, const Type *args) {
  int64_t size = 0;
  bool mixed = false;
  for (int i = 0; i < ps->nin; i++) {
    if (ps->in_axes[i] == NONE_AXIS) continue;
    int64_t d = ps->in_axes[i], rank = args[i].rank;
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) {
      diag_error(call, "pmap was requested to map its argument along axis %lld, which implies that its rank should be "
                 "at least %lld, but is only %d (its shape is %s)", (long long)ps->in_axes[i],
                 (long long)(ps->in_axes[i] >= 0 ? ps->in_axes[i] + 1 : -ps->in_axes[i]), args[i].rank,
                 check_shape_tuple(cx, &args[i]));
      return false;
    }
    ps->in_axes[i] = d;
    if (size && args[i].shape[d] != size) mixed = true;
    if (!size) size = args[i].shape[d];
  }
  if (mixed) {
    Buf b = {0};
    err_defer(buf_release, &b);
    for (int i = 0; i < ps->nin; i++)
      if (ps->in_axes[i] == NONE_AXIS)
        buf_printf(&b, "%sarg %d has shape %s and is not mapped", i ? "; " : "", i, check_shape_tuple(cx, &args[i]));
      else
        buf_printf(&b, "%sarg %d has shape %s and axis %lld is to be mapped", i ? "; " : "", i,
                   check_shape_tuple(cx, &args[i]), (long long)ps->in_axes[i]);
    diag_error(call, "pmap got inconsistent sizes for array axes to be mapped: %s", buf_cstr(&b));
    err_undefer(&b);
    buf_free(&b);
    return false;
  }
  if (!size && !ps->size) {
    diag_error(call, "pmap must have at least one non-None value in in_axes (or an axis_size)");
    return false;
  }
  if (size && ps->size && size != ps->size) {
    diag_error(call, "pmap got axis_size=%lld, but the mapped axes of its arguments have size %lld",
               (long long)ps->size, (long long)size);
    return false;
  }
  if (size) ps->size = size;
  return true;
}

/* ---- emitting into the checker's function ---------------------------------------------- */

static IrParam one(const char *key, PVal *v) { return (IrParam){key, v}; }

static IrAtom emit1(Builder *B, bool *ok, int prim, IrParam *ps, int nps, IrAtom *in, int nin, Str name) {
  IrAtom out;
  memset(&out, 0, sizeof out);
  if (!*ok) return nin ? in[0] : out;
  if (!bld_prim(B, prim, ps, nps, in, nin, &out)) { *ok = false; return nin ? in[0] : out; }
  out.var->name = name;
  return out;
}

static IrAtom squeeze(Builder *B, bool *ok, IrAtom x, int64_t d, Str name) {
  IrParam ps[1] = {one("dimensions", bld_pv_ints(B, &d, 1))};
  return emit1(B, ok, P_SQUEEZE, ps, 1, &x, 1, name);
}

static IrAtom expand(Builder *B, bool *ok, IrAtom x, int64_t d, Str name) {
  IrParam ps[1] = {one("dimensions", bld_pv_ints(B, &d, 1))};
  return emit1(B, ok, P_EXPAND_DIMS, ps, 1, &x, 1, name);
}

/* The out_axes of each result, checked against its rank (the result
   gains one dimension); None is NONE_AXIS. */
static bool result_axes(RuleCtx *r, const PmapSpec *ps, const IrAtom *outs, int nout, int64_t *oa) {
  PVal *v = ps->out_axes;
  if (!axes_list(r, "out_axes", v, nout, oa)) return false;
  for (int i = 0; i < nout; i++) {
    if (oa[i] == NONE_AXIS) continue;
    int rank = outs[i].t.rank + 1;
    int64_t d = oa[i] < 0 ? oa[i] + rank : oa[i];
    if (d < 0 || d >= rank)
      return rule_param_error(r, "out_axes", "pmap out_axes %lld is out of range for result %d, of rank %d (the "
                              "stacked result has rank %d)", (long long)oa[i], i + 1, rank - 1, rank);
    oa[i] = d;
  }
  return true;
}

/* A result with out_axes=None is the same for every index: it must not
   vary along the axis. */
static bool unmapped_ok(Ctx *cx, const IrAtom *o, int k, Str axis, Span call) {
  if (!(o->t.vma & (1u << k))) return true;
  Buf b = {0};
  err_defer(buf_release, &b);
  show_vma_message(&b, o->t.vma, cx->mesh);
  const char *nm = o->var && o->var->name.n ? o->var->name.p : "the result";
  int nl = o->var && o->var->name.n ? o->var->name.n : (int)strlen("the result");
  diag_error(o->sp.file >= 0 ? o->sp : call, "pmap out_axes=None promises a result that does not depend on the "
             "mapped axis %.*s, but %.*s varies over %s", axis.n, axis.p, nl, nm, buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
  return false;
}

/* ---- pmap at top level ------------------------------------------------------------------ */

/* The spec that puts mesh axis k at dimension d (P() for d < 0). */
static PVal *spec_pv(Ctx *cx, Builder *B, const Mesh *m, int k, int64_t d, Spec *sp) {
  memset(sp, 0, sizeof *sp);
  PVal *items[SHM_MAXRANK];
  int n = d < 0 ? 0 : (int)d + 1;
  for (int j = 0; j < n; j++) {
    char buf[128];
    snprintf(buf, sizeof buf, "%.*s", m->axis[k].n, m->axis[k].p);
    items[j] = j == d ? bld_pv_name(B, buf) : bld_pv_name(B, "None");
    if (j != d) items[j]->k = PV_NONE;
  }
  if (d >= 0) {
    sp->ndims = (int)d + 1;
    sp->dim[d].axes[0] = (uint8_t)k;
    sp->dim[d].naxes = 1;
    sp->mask = 1u << k;
  }
  PVal *v = bld_pv_tuple(B, items, n);
  v->k = PV_SPEC;
  sp->src = v;
  (void)cx;
  return v;
}

IrFunc *pmap_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  if (cx->mesh) {
    diag_error(call, "%.*s is a pmap: it cannot be called inside a shard_map or xmap body", fd->name.n, fd->name.p);
    return NULL;
  }
  Instance *inst = check_new_instance(cx, args, nargs);
  inst->next = fd->inst;
  fd->inst = inst;
  RuleCtx r;
  rule_init(&r, &C->prog.arena, NULL, "pmap", af->deco_sp, af->deco_params, af->ndeco_params);
  PmapSpec ps;
  Span at = call.file >= 0 ? call : af->sp;
  if (!read_spec(cx, &r, nargs, &ps, 0) || !mapped_size(cx, at, &ps, args)) return NULL;
  Mesh *m = NEW(C, Mesh);
  m->pmap = true;
  m->naxes = 1;
  m->axis[0] = ps.axis;
  m->size[0] = ps.size;
  m->ndev = ps.size;
  m->busy = 1u;
  if (ps.size > SHM_MAX_INSTANCES) {
    diag_error(at, "pmap over %lld instances: a mesh has at most %d devices", (long long)ps.size, SHM_MAX_INSTANCES);
    return NULL;
  }
  /* the body: blocks of one along the mapped dimension, squeezed */
  IrFunc *body = check_new_func(C, fd, m);
  Builder *B = bld_attach(&C->prog, body, m, af->sp);
  body->params = NEWN(C, IrVar *, nargs);
  body->nparams = nargs;
  IrAtom *inner = NEWN(C, IrAtom, nargs);
  bool ok = true;
  for (int i = 0; i < nargs; i++) {
    Type bt = args[i];
    Str name = i < af->nparams ? af->params[i]->name : str_c("x");
    if (ps.in_axes[i] != NONE_AXIS) {
      bt.shape[ps.in_axes[i]] = 1;
      bt.vma = 1u;
    }
    body->params[i] = emit_var(&(Emitter){&C->prog, body, m}, name, bt, af->sp);
    inner[i] = (IrAtom){.var = body->params[i], .t = bt, .sp = af->sp};
    if (ps.in_axes[i] != NONE_AXIS) inner[i] = squeeze(B, &ok, inner[i], ps.in_axes[i], name);
  }
  Ctx sub;
  check_ctx_init(&sub, C, body, fd->scope, m, 0, af->sp.file);
  IrAtom *outs;
  int nout;
  int errs = diag_count();
  if (!ok || !check_inline(&sub, fd, inner, nargs, at, &outs, &nout)) {
    if (diag_count() > errs && (at.file != af->sp.file || at.off != af->sp.off)) check_call_note(at, fd, args, nargs, NULL);
    return NULL;
  }
  int64_t *oa = NEWN(C, int64_t, nout);
  if (!result_axes(&r, &ps, outs, nout, oa)) return NULL;
  body->outs = NEWN(C, IrAtom, nout);
  body->nouts = nout;
  Type *gout = NEWN(C, Type, nout);
  for (int i = 0; i < nout; i++) {
    Str name = outs[i].var ? outs[i].var->name : str_c("y");
    if (oa[i] == NONE_AXIS) {
      if (!unmapped_ok(&sub, &outs[i], 0, ps.axis, at)) {
        check_call_note(at, fd, args, nargs, NULL);
        return NULL;
      }
      body->outs[i] = outs[i];
      gout[i] = outs[i].t;
    } else {
      bld_at(B, outs[i].sp.file >= 0 ? outs[i].sp : af->sp, outs[i].sp.file >= 0 ? outs[i].sp : af->sp);
      body->outs[i] = expand(B, &ok, outs[i], oa[i], name);
      gout[i] = body->outs[i].t;
      gout[i].shape[oa[i]] = ps.size;
    }
    gout[i].vma = 0;
  }
  if (!ok) return NULL;
  /* the mesh may have grown (nested pmaps): every axis but the first is
     replicated in and out */
  for (int i = 0; i < nout; i++)
    for (int k = 1; k < m->naxes; k++)
      if (!unmapped_ok(&sub, &body->outs[i], k, m->axis[k], at)) {
        check_call_note(at, fd, args, nargs, NULL);
        return NULL;
      }
  IrFunc *w = check_new_func(C, fd, NULL);
  w->is_shard_map_wrapper = true;
  Builder *W = bld_attach(&C->prog, w, NULL, af->deco_sp);
  ShardMap *sm = NEW(C, ShardMap);
  sm->mesh = m;
  sm->check_vma = true;
  sm->nin = nargs;
  sm->nout = nout;
  sm->in = NEWN(C, Spec, nargs);
  sm->out = NEWN(C, Spec, nout);
  PVal **ins = NEWN(C, PVal *, nargs), **outsp = NEWN(C, PVal *, nout);
  w->params = NEWN(C, IrVar *, nargs);
  w->nparams = nargs;
  IrAtom *in = NEWN(C, IrAtom, nargs);
  for (int i = 0; i < nargs; i++) {
    ins[i] = spec_pv(cx, W, m, 0, ps.in_axes[i] == NONE_AXIS ? -1 : ps.in_axes[i], &sm->in[i]);
    w->params[i] = emit_var(&(Emitter){&C->prog, w, NULL}, body->params[i]->name, args[i], af->sp);
    in[i] = (IrAtom){.var = w->params[i], .t = args[i], .sp = af->sp};
  }
  for (int i = 0; i < nout; i++) outsp[i] = spec_pv(cx, W, m, 0, oa[i] == NONE_AXIS ? -1 : oa[i], &sm->out[i]);
  Attrs *atr = NEW(C, Attrs);
  atr->dtype = -1;
  atr->ext = sm;
  Ctx wc;
  check_ctx_init(&wc, C, w, fd->scope, NULL, 0, af->sp.file);
  check_add_fn(&wc, atr, body);
  IrParam prm[5] = {one("f", check_fn_ref(&wc, 0)), one("mesh", smap_mesh_pv(&wc, m)),
                    one("in_specs", bld_pv_tuple(W, ins, nargs)), one("out_specs", bld_pv_tuple(W, outsp, nout)),
                    one("check_vma", bld_pv_bool(W, true))};
  IrAtom *res = NEWN(C, IrAtom, nout);
  bld_higher(W, P_SHARD_MAP, atr, prm, 5, in, nargs, gout, nout, res);
  for (int i = 0; i < nout; i++)
    if (outs[i].var && res[i].var) res[i].var->name = outs[i].var->name;
  w->outs = res;
  w->nouts = nout;
  inst->ir = w;
  fd->latest = w;
  return w;
}

/* ---- pmap inside a pmap's body ------------------------------------------------------------ */

/* The mesh axis of a nested pmap: its own if the mesh has it (of the same
   size), else a new one.  -1 after an error. */
static int nested_axis(Ctx *cx, Span call, PmapSpec *ps) {
  Mesh *m = cx->mesh;
  for (int k = 0; k < m->naxes; k++)
    if (str_eq(m->axis[k], ps->axis)) {
      if (m->busy & (1u << k)) {
        diag_error(call, "pmap axis %.*s is already mapped by an enclosing pmap: give the nested pmap another "
                   "axis_name", ps->axis.n, ps->axis.p);
        return -1;
      }
      if (m->size[k] == ps->size) return k;     /* a sibling pmap's axis, free again */
      diag_error(call, "pmap axis %.*s has size %lld here, but this pmap maps %lld", ps->axis.n, ps->axis.p,
                 (long long)m->size[k], (long long)ps->size);
      return -1;
    }
  if (m->naxes == SHM_MAXAXES || m->ndev > SHM_MAX_INSTANCES / ps->size) {
    diag_error(call, "nested pmaps make a mesh of more than %d axes or %d devices", SHM_MAXAXES, SHM_MAX_INSTANCES);
    return -1;
  }
  m->axis[m->naxes] = ps->axis;
  m->size[m->naxes] = ps->size;
  m->ndev *= ps->size;
  return m->naxes++;
}

/* The inner map of a nested pmap, spec ps read (its mapped size not yet
   known): its arguments sliced along the new axis, its body in place, its
   results gathered back. */
static void nested_map(Ctx *cx, AstStmt *s, FuncDef *fd, IrAtom *in, RuleCtx *rp, PmapSpec *ps0) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  PmapSpec ps = *ps0;
  Type *args = NEWN(C, Type, s->nargs);
  for (int i = 0; i < s->nargs; i++) args[i] = in[i].t;
  int k;
  if (!mapped_size(cx, s->callee_sp, &ps, args) || (k = nested_axis(cx, s->callee_sp, &ps)) < 0) {
    check_bind_bad(cx, s);
    return;
  }
  if (cx->ctrl & (1u << k)) {
    diag_error(s->callee_sp, "a pmap over %.*s inside control flow whose predicate varies over it would gather its "
               "results from instances that do not all run it", ps.axis.n, ps.axis.p);
    check_bind_bad(cx, s);
    return;
  }
  Builder *B = bld_attach(&C->prog, cx->fn, cx->mesh, s->callee_sp);
  bld_at(B, s->callee_sp, s->sp);
  bool ok = true;
  char axis[128];
  snprintf(axis, sizeof axis, "%.*s", ps.axis.n, ps.axis.p);
  IrParam ip[1] = {one("axis_name", bld_pv_name(B, axis))};
  IrAtom idx = emit1(B, &ok, P_AXIS_INDEX, ip, 1, NULL, 0, str_c("idx"));
  IrAtom *inner = NEWN(C, IrAtom, s->nargs);
  for (int i = 0; i < s->nargs; i++) {
    Str name = i < af->nparams ? af->params[i]->name : str_c("x");
    inner[i] = in[i];
    if (ps.in_axes[i] == NONE_AXIS) {
      if (in[i].lit) {         /* a literal: bound to a name, as the body's parameters are */
        bld_const(B, in[i].lit, &inner[i]);
        inner[i].var->name = name;
      }
      continue;
    }
    int rank = in[i].t.rank;
    int64_t sizes[SHM_MAXRANK];
    IrAtom *ops = NEWN(C, IrAtom, rank + 1);
    ops[0] = in[i];
    for (int d = 0; d < rank; d++) {
      sizes[d] = d == ps.in_axes[i] ? 1 : in[i].t.shape[d];
      ops[1 + d] = d == ps.in_axes[i] ? idx : bld_lit(B, DT_I32, 0);
    }
    IrParam sp[1] = {one("slice_sizes", bld_pv_ints(B, sizes, rank))};
    IrAtom blk = emit1(B, &ok, P_DYNAMIC_SLICE, sp, 1, ops, rank + 1, name);
    inner[i] = squeeze(B, &ok, blk, ps.in_axes[i], name);
  }
  IrAtom *outs;
  int nout;
  cx->mesh->busy |= 1u << k;
  bool body_ok = ok && check_inline(cx, fd, inner, s->nargs, s->callee_sp, &outs, &nout);
  cx->mesh->busy &= ~(1u << k);
  if (!body_ok) {
    check_bind_bad(cx, s);
    return;
  }
  int64_t *oa = NEWN(C, int64_t, nout);
  if (!result_axes(rp, &ps, outs, nout, oa)) { check_bind_bad(cx, s); return; }
  if (s->nouts != nout) {
    diag_error(s->outs[0]->sp, "%.*s gives %d result%s, but %d name%s bound", fd->name.n, fd->name.p, nout,
               nout == 1 ? "" : "s", s->nouts, s->nouts == 1 ? " is" : "s are");
    check_bind_bad(cx, s);
    return;
  }
  bld_at(B, s->callee_sp, s->sp);
  for (int i = 0; i < nout && ok; i++) {
    Str name = s->outs[i]->name;
    IrAtom o = outs[i];
    if (oa[i] == NONE_AXIS) {
      if (!unmapped_ok(cx, &o, k, ps.axis, s->callee_sp)) { check_bind_bad(cx, s); return; }
      if (o.lit) {
        bld_const(B, o.lit, &o);
        o.var->name = name;
      }
    } else if (o.t.vma & (1u << k)) {  /* stacked back: each instance gets every index's result */
      IrAtom e = expand(B, &ok, o, oa[i], name);
      IrParam gp[3] = {one("axis_name", bld_pv_name(B, axis)), one("axis", bld_pv_int(B, oa[i])),
                       one("tiled", bld_pv_bool(B, true))};
      o = emit1(B, &ok, P_ALL_GATHER_INVARIANT, gp, 3, &e, 1, name);
    } else {             /* the same for every index: stacked copies, made locally */
      IrAtom e = expand(B, &ok, o, oa[i], name);
      int64_t shape[SHM_MAXRANK], dims[SHM_MAXRANK];
      for (int d = 0; d < e.t.rank; d++) {
        shape[d] = d == oa[i] ? ps.size : e.t.shape[d];
        dims[d] = d;
      }
      IrParam bp[2] = {one("shape", bld_pv_ints(B, shape, e.t.rank)),
                       one("broadcast_dimensions", bld_pv_ints(B, dims, e.t.rank))};
      o = emit1(B, &ok, P_BROADCAST_IN_DIM, bp, 2, &e, 1, name);
    }
    outs[i] = o;
  }
  if (!ok) { check_bind_bad(cx, s); return; }
  for (int i = 0; i < nout; i++) check_bind_alias(cx, s->outs[i], outs[i]);
}

void pmap_nested_call(Ctx *cx, AstStmt *s, FuncDef *fd, IrAtom *in) {
  AstFunc *af = fd->ast;
  if (!cx->mesh->pmap) {
    diag_error(s->callee_sp, "%.*s is a pmap: it cannot be called inside a shard_map or xmap body (only inside "
               "another pmap's body)", fd->name.n, fd->name.p);
    check_bind_bad(cx, s);
    return;
  }
  RuleCtx r;
  rule_init(&r, &cx->C->prog.arena, NULL, "pmap", af->deco_sp, af->deco_params, af->ndeco_params);
  PmapSpec ps;
  if (!read_spec(cx, &r, s->nargs, &ps, cx->mesh->naxes)) {
    check_bind_bad(cx, s);
    return;
  }
  nested_map(cx, s, fd, in, &r, &ps);
}

void pmap_nested_jax(Ctx *cx, AstStmt *s, FuncDef *fd, IrAtom *in, RuleCtx *r, Str axis, int64_t size,
                     const int64_t *in_axes) {
  PmapSpec ps;
  memset(&ps, 0, sizeof ps);
  ps.axis = axis;
  ps.size = size;
  ps.nin = s->nargs;
  ps.in_axes = NEWN(cx->C, int64_t, s->nargs);
  for (int i = 0; i < s->nargs; i++) ps.in_axes[i] = in_axes[i] < 0 ? NONE_AXIS : in_axes[i];
  ps.out_axes = rule_get(r, "out_axes");
  nested_map(cx, s, fd, in, r, &ps);
}
