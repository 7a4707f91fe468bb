/*
** check_jax.c — checking what jax.make_jaxpr prints beyond shm's own
** forms: JAX's call primitives (pjit and its ancestors, checkpoint, the
** custom_jvp/custom_vjp calls), xla_pmap, the shared jaxprs printed
** before a jaxpr (`let f = { lambda ... } in`), and the Python reprs of
** meshes and in_names that shard_map equations carry.
**
** A call primitive is a call: the checked equation calls the function its
** jaxpr parameter names (so the evaluator, the debugger and the
** transformations treat it as any call) and remembers the primitive and
** every parameter as written, for `show` (IrStmt.via).
*/
#include <stdio.h>
#include <stdlib.h>
#include "irbuild.h"
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "hlosharding.h"
#include "show.h"

bool jax_is_call(int prim) {
  switch (prim) {
  case P_PJIT: case P_XLA_CALL: case P_CLOSED_CALL: case P_CHECKPOINT: case P_CUSTOM_JVP_CALL:
  case P_CUSTOM_VJP_CALL: case P_COMPOSITE:
    return true;
  default:
    return false;
  }
}

/* The parameter holding a call primitive's function, as JAX names it in
   its versions; NULL when none is written. */
static const char *call_key(const AstStmt *s) {
  static const char *const keys[] = {"jaxpr", "call_jaxpr", "fun_jaxpr"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    for (int i = 0; i < s->nparams; i++)
      if (str_eqc(s->params[i]->key, keys[k])) return keys[k];
  return NULL;
}

/* Record every parameter as written (the function as a reference to
   at->fns[0]), in the order written: show prints them back. */
static void record_as_written(Ctx *cx, RuleCtx *r, const AstStmt *s, const char *fkey) {
  for (int i = 0; i < s->nparams; i++) {
    const AstParam *p = s->params[i];
    char *key = arena_strndup(&cx->C->prog.arena, p->key.p, (size_t)p->key.n);
    rule_get(r, key);
    rule_record(r, key, fkey && !strcmp(key, fkey) ? check_fn_ref(cx, 0) : p->v);
  }
}

/* Operand types of a call: literals take their default dtype. */
static Type *call_args(Ctx *cx, AstStmt *s, IrAtom *in, int n) {
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, n)) return NULL;
  Type *t = NEWN(cx->C, Type, n);
  for (int k = 0; k < n; k++) {
    in[k].t.weak = false;
    t[k] = in[k].t;
  }
  return t;
}

/* One GSPMDSharding({...}) of pjit's in_shardings or out_shardings: XLA's
   text must read (hlosharding.h), and a tiled sharding must split as
   many dimensions as the array `t` it places has. */
static bool gspmd_ok(const PVal *v, const Type *t, const char *key, int k) {
  v = pv_unparen((PVal *)v);
  if (v->k != PV_CALL || !str_eqc(v->s, "GSPMDSharding")) return true;
  if (v->n < 1 || v->items[0]->k != PV_REPR || v->items[0]->s.n < 1 || v->items[0]->s.p[0] != '{') {
    diag_error(v->sp, "GSPMDSharding(...) holds XLA's sharding text in braces, as {devices=[2,1]<=[2]}");
    return false;
  }
  HloSharding h;
  char err[200];
  const PVal *text = v->items[0];
  if (!hsh_parse(text->s.p, text->s.n, &h, err, sizeof err)) {
    diag_error(text->sp, "%s", err);
    return false;
  }
  int rank = hsh_array_rank(&h);
  bool ok = h.kind != HSH_TILED || !t || t->bad || rank == t->rank;
  if (!ok)
    diag_error(text->sp, "%s[%d] splits %d dimension%s, but the array it places has %d", key, k, rank,
               rank == 1 ? "" : "s", t->rank);
  hsh_free(&h);
  return ok;
}

static bool shardings_ok(const AstStmt *s, const char *key, const Type *t, int n) {
  for (int i = 0; i < s->nparams; i++) {
    if (!str_eqc(s->params[i]->key, key)) continue;
    const PVal *v = pv_unparen(s->params[i]->v);
    if (v->k != PV_TUPLE && v->k != PV_LIST) return gspmd_ok(v, n == 1 ? t : NULL, key, 0);
    for (int k = 0; k < v->n; k++)
      if (!gspmd_ok(v->items[k], k < n ? &t[k] : NULL, key, k)) return false;
  }
  return true;
}
/* The equation `outs = prim[...] ins` of a primitive that is a call of f
   (JAX's call primitives, optimization_barrier): a call of f that show
   prints as the primitive, with r's canonical parameters if given, and
   results of the types outt (f's results). */
static void emit_via_call(Ctx *cx, AstStmt *s, IrFunc *f, int prim, Attrs *at, IrAtom *in, RuleCtx *r,
                          Type *outt) {
  check_add_fn(cx, at, f);
  IrStmt *st = check_new_eqn(cx, s);
  st->prim = -1;
  st->callee = f;
  st->via = prim + 1;
  st->via_name = s->callee;
  st->at = at;
  if (r) {
    st->params = r->canon;
    st->nparams = r->ncanon;
  }
  st->in = in;
  st->nin = s->nargs;
  check_bind_outs(cx, s, st, outt, f->nouts, prim_table[prim].name);
  emit_stmt(EM(cx), st);
}


void jax_call(Ctx *cx, AstStmt *s, int prim, IrAtom *in, RuleCtx *r, Attrs *at) {
  const char *key = call_key(s);
  if (!key) {
    rule_error(r, "%s requires the parameter '%s' (the function it calls)", prim_table[prim].name,
               prim == P_PJIT || prim == P_CHECKPOINT || prim == P_COMPOSITE ? "jaxpr" : "call_jaxpr");
    check_bind_bad(cx, s);
    return;
  }
  for (int i = 0; i < s->nparams; i++)
    for (int j = 0; j < i; j++)
      if (str_eq(s->params[j]->key, s->params[i]->key)) {
        diag_error(s->params[i]->sp, "parameter '%.*s' given twice", s->params[i]->key.n, s->params[i]->key.p);
        check_bind_bad(cx, s);
        return;
      }
  FuncDef *fd = check_func_param(cx, r, key, rule_get(r, key));
  Type *args = fd ? call_args(cx, s, in, s->nargs) : NULL;
  IrFunc *f = args ? check_instantiate(cx, fd, args, s->nargs, s->callee_sp) : NULL;
  if (!f) { check_bind_bad(cx, s); return; }
  Type *outt = NEWN(cx->C, Type, f->nouts);
  for (int k = 0; k < f->nouts; k++) outt[k] = f->outs[k].t;
  if (!shardings_ok(s, "in_shardings", args, s->nargs) || !shardings_ok(s, "out_shardings", outt, f->nouts)) {
    check_bind_bad(cx, s);
    return;
  }
  record_as_written(cx, r, s, key);
  emit_via_call(cx, s, f, prim, at, in, r, outt);
}

/* ---- optimization_barrier and debug_callback --------------------------------------- */

/* optimization_barrier x y...: XLA keeps the computations on either side
   apart; an interpreter has nothing to keep apart, so it is the identity,
   a call of an identity function (the JVP and the transpose pass through
   it as through any call; show prints it back). */
static void identity_call(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at, int prim) {
  Type *args = rule_unused(r, "") ? call_args(cx, s, in, s->nargs) : NULL;
  if (!args) { check_bind_bad(cx, s); return; }
  Builder *B = bld_new(&cx->C->prog, prim_table[prim].name, cx->fn, cx->mesh, s->callee_sp);
  IrAtom *outs = NEWN(cx->C, IrAtom, s->nargs + 1);
  for (int k = 0; k < s->nargs; k++) outs[k] = ir_var_atom(bld_param(B, str_c("x"), args[k]));
  IrFunc *f = bld_finish(B, outs, s->nargs);
  emit_via_call(cx, s, f, prim, at, in, NULL, args);
}

void jax_barrier(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  identity_call(cx, s, in, r, at, P_OPTIMIZATION_BARRIER);
}

/* shard_alike x y: jax.experimental.shard_alike asks the compiler to shard
   x and y alike, which changes no value: x and y again (operands of one
   shape), a call of the identity as optimization_barrier is. */
void jax_shard_alike(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  if (s->nargs == 2 && !type_same_shape(&in[0].t, &in[1].t) && in[0].var && in[1].var) {
    TyBuf a, b;
    rule_error(r, "shard_alike needs operands of one shape, got %s and %s", rule_ty(&a, &in[0].t), rule_ty(&b, &in[1].t));
    check_bind_bad(cx, s);
    return;
  }
  identity_call(cx, s, in, r, at, P_SHARD_ALIKE);
}

/* pure_callback[callback=...] and io_callback[callback=...]: a Python
   function, which the jaxpr shows only as its repr: it cannot run, and
   its results cannot be made up, so the equation is an error naming it. */
void jax_callback(Ctx *cx, AstStmt *s, RuleCtx *r, int prim) {
  PVal *cb = pv_unparen(rule_get(r, "callback"));
  const char *name = prim_table[prim].name;
  if (cb && cb->k == PV_REPR)
    rule_param_error(r, "callback", "%s calls the Python function %.*s, which cannot run here: shmapi has no Python (write the "
               "computation in shm in its place)", name, cb->s.n, cb->s.p);
  else
    rule_error(r, "%s calls a Python function, which cannot run here: shmapi has no Python (write the "
               "computation in shm in its place)", name);
  check_bind_bad(cx, s);
}

/* ---- jax.debug.print ------------------------------------------------------------- */

/* A print statement of s's operands (literals given their values);
   NULL after an error. */
static IrStmt *debug_print_stmt(Ctx *cx, AstStmt *s, IrAtom *in, const char *what) {
  if (s->nouts) {
    diag_error(s->outs[0]->sp, "%s gives no results, but %d name%s bound", what, s->nouts,
               s->nouts == 1 ? " is" : "s are");
    return NULL;
  }
  for (int k = 0; k < s->nargs; k++) in[k].t.weak = false;
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, s->nargs)) return NULL;
  IrStmt *st = emit_new_stmt(EM(cx), IS_PRINT, s->sp);
  st->line = s->line;
  return st;
}

/* debug_callback[callback=<function ...> effect=Debug] x...: what
   jax.debug.print and jax.debug.callback staged out before debug_print.
   The callback is a Python function the jaxpr shows only as its repr (the
   format string of jax.debug.print is not printed): the operands are
   printed, per device as `print` prints them, and the first equation says
   so. */
void jax_debug_callback(Ctx *cx, AstStmt *s, IrAtom *in) {
  IrStmt *st = debug_print_stmt(cx, s, in, "debug_callback");
  if (!st) return;
  st->items = NEWN(cx->C, IrPrintItem, s->nargs);
  st->nitems = s->nargs;
  for (int k = 0; k < s->nargs; k++) st->items[k].atom = in[k];
  if (s->nargs) emit_stmt(EM(cx), st);
  if (cx->C->callback_noted) return;
  cx->C->callback_noted = true;
  diag_remark(s->callee_sp, "debug_callback calls a Python function (jax.debug.print or jax.debug.callback) that "
              "the jaxpr names only by its repr, without jax.debug.print's format string: this and every "
              "debug_callback print their operands instead, as print does");
}

/* The leaves debug_print's in_tree, PyTreeDef(((*, *), {'x': *})), lists:
   the count of positional ones, then the names of the keyword ones (in
   order) into names[]; -1 for a tree of another form (nested values). */
static int tree_leaves(const char *p, const char *e, Str *names, int max, int *nkw) {
  *nkw = 0;
  if (strncmp(p, "PyTreeDef(((", 12)) return -1;
  p += 12;
  int npos = 0;
  while (p < e && *p == '*') {
    npos++;
    p++;
    if (*p == ',') p++;
    while (*p == ' ') p++;
  }
  if (*p++ != ')') return -1;
  if (strncmp(p, ", {", 3)) return -1;
  p += 3;
  while (p < e && *p == '\'') {
    const char *q = strchr(p + 1, '\'');
    if (!q || q >= e || *nkw >= max || strncmp(q, "': *", 4)) return -1;
    names[(*nkw)++] = (Str){p + 1, (int)(q - p - 1)};
    p = q + 4;
    if (*p == ',') p++;
    while (*p == ' ') p++;
  }
  return strncmp(p, "}))", 3) ? -1 : npos;
}

/* Python's str.format over the leaves: {} and {0} positional, {name} a
   keyword; {{ and }} braces; a conversion or format spec is dropped (a
   note says so, once).  Items into st; false when a field names no leaf. */
static bool format_items(Ctx *cx, AstStmt *s, IrStmt *st, Str fmt, const IrAtom *leaf, int npos, const Str *names,
                         int nkw) {
  IrPrintItem *items = NEWN(cx->C, IrPrintItem, 2 * fmt.n + 2);
  int n = 0, autonum = 0;
  Buf lit = {0};
  err_defer(buf_release, &lit);
  bool ok = true, spec = false;
  for (int i = 0; i < fmt.n && ok; i++) {
    char c = fmt.p[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.n && fmt.p[i + 1] == c) { buf_putc(&lit, c); i++; continue; }
    if (c != '{') { buf_putc(&lit, c); continue; }
    int j = i + 1;
    while (j < fmt.n && fmt.p[j] != '}') j++;
    if (j == fmt.n) { ok = false; break; }
    int f = i + 1, fe = f;
    while (fe < j && fmt.p[fe] != ':' && fmt.p[fe] != '!') fe++;
    spec |= fe < j;
    Str field = {fmt.p + f, fe - f};
    int k = -1;
    if (!field.n) k = autonum++;
    else if (field.p[0] >= '0' && field.p[0] <= '9') k = atoi(field.p);
    else
      for (int m = 0; m < nkw; m++)
        if (str_eq(field, names[m])) k = npos + m;
    if (k < 0 || (field.n && field.p[0] >= '0' && field.p[0] <= '9' && k >= npos) || k >= npos + nkw) {
      diag_error(s->callee_sp, "debug_print's format string names {%.*s}, but its in_tree gives no such operand "
                 "(%d positional, %d by keyword)", field.n, field.p, npos, nkw);
      ok = false;
      break;
    }
    if (lit.n) items[n++].text = (Str){arena_strndup(&cx->C->prog.arena, lit.p, lit.n), (int)lit.n};
    buf_reset(&lit);
    items[n++].atom = leaf[k];
    i = j;
  }
  if (ok && lit.n) items[n++].text = (Str){arena_strndup(&cx->C->prog.arena, lit.p, lit.n), (int)lit.n};
  err_undefer(&lit);
  buf_free(&lit);
  if (!ok) return false;
  if (spec && !cx->C->fmt_noted) {
    cx->C->fmt_noted = true;
    diag_remark(s->callee_sp, "debug_print's format specs and conversions (after : or !) are ignored: each value "
                "prints as print prints it");
  }
  st->items = items;
  st->nitems = n;
  st->print_joined = true;
  return true;
}

void jax_debug_print(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r) {
  PVal *fv = rule_get(r, "fmt"), *tv = rule_get(r, "in_tree"), *hv = rule_get(r, "has_placeholders");
  PVal *sv = rule_get(r, "static_args");
  fv = fv ? pv_unparen(fv) : NULL;
  tv = tv ? pv_unparen(tv) : NULL;
  sv = sv ? pv_unparen(sv) : NULL;
  if (!fv || fv->k != PV_STR) {
    diag_error(s->callee_sp, "debug_print needs its format string, fmt=...");
    return;
  }
  IrStmt *st = debug_print_stmt(cx, s, in, "debug_print");
  if (!st) return;
  bool holes = !hv || pv_unparen(hv)->k != PV_BOOL || pv_unparen(hv)->i;
  Str names[64];
  int nkw = 0, npos = -1;
  if (tv && tv->k == PV_REPR) {
    char *t = arena_strndup(&cx->C->prog.arena, tv->s.p, (size_t)tv->s.n);
    npos = tree_leaves(t, t + tv->s.n, names, 64, &nkw);
  }
  bool statics = sv && (sv->k == PV_TUPLE || sv->k == PV_LIST) && sv->n;
  if (holes && (npos < 0 || statics || npos + nkw != s->nargs)) {
    diag_error(s->callee_sp, "debug_print's in_tree must list its %d operand%s as PyTreeDef(((*, ...), {'name': *, "
               "...})), without static_args", s->nargs, s->nargs == 1 ? "" : "s");
    return;
  }
  if (holes) {
    if (!format_items(cx, s, st, fv->s, in, npos, names, nkw)) return;
  } else {                      /* JAX writes the format, then the operands, space-separated */
    st->items = NEWN(cx->C, IrPrintItem, s->nargs + 1);
    st->items[0].text = fv->s;
    for (int k = 0; k < s->nargs; k++) st->items[k + 1].atom = in[k];
    st->nitems = s->nargs + 1;
  }
  emit_stmt(EM(cx), st);
}

/* ---- shared jaxprs ------------------------------------------------------------------ */

Binding *jax_bind_lets(Checker *C, const AstFunc *af, Binding *scope, IrFunc *parent) {
  if (!af->nlets) return scope;
  FuncDef **fds = NEWN(C, FuncDef *, af->nlets);
  for (int i = 0; i < af->nlets; i++) {
    fds[i] = NEW(C, FuncDef);
    fds[i]->ast = af->lets[i];
    fds[i]->name = af->lets[i]->name;
    fds[i]->parent = parent;
    scope = check_bind(C, scope, B_FUNC, af->lets[i]->name);
    scope->fn = fds[i];
  }
  /* each sees all of them: JAX prints a shared jaxpr before one it calls */
  for (int i = 0; i < af->nlets; i++) fds[i]->scope = scope;
  return scope;
}

/* ---- meshes and in_names as JAX prints them ----------------------------------------- */

/* The keyword argument `key` of a call value, or NULL. */
static PVal *call_kw(PVal *v, const char *key) {
  for (int i = 0; i < v->n; i++)
    if (v->items[i]->k == PV_KW && str_eqc(v->items[i]->s, key)) return v->items[i]->items[0];
  return NULL;
}

/* The shape of a nested list value (array([[0, 1], [2, 3]])'s argument). */
static int list_shape(PVal *v, int64_t *shape, int max) {
  int rank = 0;
  while (v && (v->k == PV_LIST || v->k == PV_TUPLE) && rank < max) {
    shape[rank++] = v->n;
    v = v->n ? v->items[0] : NULL;
  }
  return rank;
}

/* An axis name: a string or a bare name. */
static bool axis_name(PVal *v, Str *out) {
  v = pv_unparen(v);
  if (!v || (v->k != PV_STR && v->k != PV_NAME)) return false;
  *out = v->s;
  return true;
}

/* Axis names and sizes from the forms JAX's meshes print:
     Mesh('i': 4, 'j': 2, axis_types=(Auto, Auto))       (str, JAX 0.4.3x on)
     Mesh(device_ids=array([0, 1, 2, 3]), axis_names=('i',))   (repr)
     Mesh(axis_sizes=(4,), axis_names=('i',), ...)       (repr, newer)
     AbstractMesh('i': 4, ...), AbstractMesh((('i', 4),)) */
static int mesh_axes(PVal *v, Str *names, int64_t *sizes) {
  int n = 0;
  PVal *an = call_kw(v, "axis_names");
  if (an) {
    an = pv_unparen(an);
    PVal *one[1] = {an};
    PVal **items = an->k == PV_TUPLE || an->k == PV_LIST ? an->items : one;
    int na = an->k == PV_TUPLE || an->k == PV_LIST ? an->n : 1;
    int64_t shape[SHM_MAXAXES + 1];
    int rank = -1;
    PVal *ids = call_kw(v, "device_ids"), *sz = call_kw(v, "axis_sizes");
    if (ids && ids->k == PV_CALL && ids->n == 1) rank = list_shape(ids->items[0], shape, SHM_MAXAXES + 1);
    else if (ids) rank = list_shape(ids, shape, SHM_MAXAXES + 1);
    else if (sz && (sz = pv_unparen(sz))->k == PV_INT) { rank = 1; shape[0] = sz->i; }
    else if (sz && (sz->k == PV_TUPLE || sz->k == PV_LIST)) {
      rank = sz->n <= SHM_MAXAXES ? sz->n : -1;
      for (int i = 0; i < rank; i++) {
        PVal *e = pv_unparen(sz->items[i]);
        if (e->k != PV_INT) return -1;
        shape[i] = e->i;
      }
    }
    if (rank != na || na > SHM_MAXAXES) return -1;
    for (int i = 0; i < na; i++) {
      if (!axis_name(items[i], &names[i])) return -1;
      sizes[i] = shape[i];
    }
    return na;
  }
  for (int i = 0; i < v->n; i++) {
    PVal *e = v->items[i];
    if (e->k == PV_KW) continue;                 /* axis_types=..., devices=... */
    PVal *k = NULL, *s = NULL;
    if (e->k == PV_PAIR) { k = e->items[0]; s = e->items[1]; }
    else if ((e->k == PV_TUPLE || e->k == PV_LIST) && e->n == 2) { k = e->items[0]; s = e->items[1]; }
    else if (e->k == PV_TUPLE || e->k == PV_LIST) {      /* AbstractMesh(((name, size), ...)) */
      for (int j = 0; j < e->n; j++) {
        PVal *q = e->items[j];
        if ((q->k != PV_TUPLE && q->k != PV_LIST) || q->n != 2 || n == SHM_MAXAXES) return -1;
        if (!axis_name(q->items[0], &names[n]) || pv_unparen(q->items[1])->k != PV_INT) return -1;
        sizes[n++] = pv_unparen(q->items[1])->i;
      }
      continue;
    }
    else if (e->k == PV_CALL) continue;          /* AbstractDevice(...) */
    else return -1;
    s = pv_unparen(s);
    if (n == SHM_MAXAXES || !axis_name(k, &names[n]) || s->k != PV_INT) return -1;
    sizes[n++] = s->i;
  }
  return n;
}

Mesh *jax_mesh(Ctx *cx, RuleCtx *r, PVal *v) {
  if (!str_eqc(v->s, "Mesh") && !str_eqc(v->s, "AbstractMesh")) {
    rule_param_error(r, "mesh", "parameter 'mesh' must name a mesh or be Mesh(...), not %.*s(...)", v->s.n, v->s.p);
    return NULL;
  }
  Mesh *m = NEW(cx->C, Mesh);
  int n = mesh_axes(v, m->axis, m->size);
  if (n < 0) {
    rule_param_error(r, "mesh", "cannot read the axes of this mesh: write Mesh('i': 4, ...) with each axis and its size");
    return NULL;
  }
  m->naxes = n;
  m->ndev = 1;
  m->inline_src = v;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++)
      if (str_eq(m->axis[i], m->axis[j])) {
        rule_param_error(r, "mesh", "mesh axis '%.*s' named twice", m->axis[i].n, m->axis[i].p);
        return NULL;
      }
    if (m->size[i] < 1 || m->ndev > SHM_MAX_INSTANCES / m->size[i]) {
      rule_param_error(r, "mesh", "mesh axis '%.*s' has size %lld (at least 1, and at most %d devices in all)",
                       m->axis[i].n, m->axis[i].p, (long long)m->size[i], SHM_MAX_INSTANCES);
      return NULL;
    }
    m->ndev *= m->size[i];
  }
  return m;
}

PVal *jax_names_spec(Ctx *cx, RuleCtx *r, const char *key, PVal *v) {
  v = pv_unparen(v);
  if (v->k != PV_DICT) {
    rule_param_error(r, key, "each entry of %s must be a dict {dimension: (axes...)}", key);
    return NULL;
  }
  int rank = 0;
  for (int i = 0; i < v->n; i++) {
    PVal *e = v->items[i];
    PVal *d = e->k == PV_PAIR ? pv_unparen(e->items[0]) : NULL;
    if (!d || d->k != PV_INT || d->i < 0 || d->i >= SHM_MAXRANK) {
      rule_param_error(r, key, "each entry of %s must be a dict {dimension: (axes...)}", key);
      return NULL;
    }
    if (d->i + 1 > rank) rank = (int)d->i + 1;
  }
  PVal *spec = NEW(cx->C, PVal);
  spec->k = PV_SPEC;
  spec->sp = v->sp;
  spec->n = rank;
  spec->items = NEWN(cx->C, PVal *, rank);
  for (int d = 0; d < rank; d++) {
    spec->items[d] = NEW(cx->C, PVal);
    spec->items[d]->k = PV_NONE;
    spec->items[d]->sp = v->sp;
  }
  for (int i = 0; i < v->n; i++) spec->items[pv_unparen(v->items[i]->items[0])->i] = v->items[i]->items[1];
  return spec;
}

/* ---- xla_pmap --------------------------------------------------------------------------- */

/* A boolean or integer tuple parameter, one entry per operand: entry k in
   *out (-1 for None); `bools` reads True/False as 0/-1 (mapped_invars). */
static bool per_operand(RuleCtx *r, const char *key, int n, bool bools, int64_t *out) {
  PVal *v = pv_unparen(rule_get(r, key));
  if (!v) return true;
  if ((v->k != PV_TUPLE && v->k != PV_LIST) || v->n != n)
    return rule_param_error(r, key, "%s must be a tuple of %d entr%s", key, n, n == 1 ? "y" : "ies");
  for (int k = 0; k < n; k++) {
    PVal *e = pv_unparen(v->items[k]);
    if (bools && e->k == PV_BOOL) out[k] = e->i ? 0 : -1;
    else if (!bools && e->k == PV_INT && e->i < 0)   /* -1 would read as None */
      return rule_param_error(r, key, "%s must be a tuple of dimensions counted from 0, as JAX prints them, and None",
                              key);
    else if (!bools && e->k == PV_INT) out[k] = e->i;
    else if (!bools && e->k == PV_NONE) out[k] = -1;
    else return rule_param_error(r, key, "%s must be a tuple of %s", key, bools ? "True/False" : "integers and None");
  }
  return true;
}

void jax_pmap(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  if (cx->mesh && !cx->mesh->pmap) {
    rule_error(r, "xla_pmap inside a %s body: a pmap nests only in a pmap", cx->mesh->named ? "xmap" : "shard_map");
    check_bind_bad(cx, s);
    return;
  }
  int n = s->nargs;
  Str axis;
  int64_t size;
  PVal *an = pv_unparen(rule_get(r, "axis_name"));
  if (!an || !axis_name(an, &axis)) {
    rule_param_error(r, "axis_name", "xla_pmap requires the parameter 'axis_name', a name");
    check_bind_bad(cx, s);
    return;
  }
  if (!rule_int(r, "axis_size", true, 0, &size)) { check_bind_bad(cx, s); return; }
  if (size < 1 || size > SHM_MAX_INSTANCES) {
    rule_param_error(r, "axis_size", "axis_size must be between 1 and %d", SHM_MAX_INSTANCES);
    check_bind_bad(cx, s);
    return;
  }
  int64_t *inax = NEWN(cx->C, int64_t, n);
  for (int k = 0; k < n; k++) inax[k] = 0;
  if (!per_operand(r, "mapped_invars", n, true, inax) || !per_operand(r, "in_axes", n, false, inax)) {
    check_bind_bad(cx, s);
    return;
  }
  for (int i = 0; i < s->nparams; i++) {       /* the rest (devices, backend, name...) change nothing */
    if (!prim_accepts(P_XLA_PMAP, s->params[i]->key)) continue;   /* reported as unknown */
    char *key = arena_strndup(&cx->C->prog.arena, s->params[i]->key.p, (size_t)s->params[i]->key.n);
    rule_get(r, key);
  }
  rule_get(r, "out_axes");
  FuncDef *fd = check_func_param(cx, r, "call_jaxpr", rule_get(r, "call_jaxpr"));
  if (!rule_unused(r, "axis_name axis_size call_jaxpr mapped_invars in_axes out_axes")) {
    check_bind_bad(cx, s);
    return;
  }
  if (fd && cx->mesh) {          /* inside a pmap's body: as a nested @pmap, another axis of its mesh */
    pmap_nested_jax(cx, s, fd, in, r, axis, size, inax);
    return;
  }
  Type *args = fd ? call_args(cx, s, in, n) : NULL;
  if (!args) { check_bind_bad(cx, s); return; }
  Mesh *m = NEW(cx->C, Mesh);
  m->naxes = 1;
  m->axis[0] = axis;
  m->size[0] = size;
  m->ndev = size;
  m->pmap = true;
  m->busy = 1u;                  /* a pmap nested in the body takes another axis */
  ShardMap *sm = NEW(cx->C, ShardMap);
  sm->mesh = m;
  sm->check_vma = true;
  sm->nin = n;
  sm->in = NEWN(cx->C, Spec, n);
  sm->in_axis = NEWN(cx->C, int8_t, n);
  Type *block = NEWN(cx->C, Type, n);
  for (int k = 0; k < n; k++) {
    block[k] = args[k];
    sm->in_axis[k] = -1;
    if (inax[k] < 0) continue;
    int64_t d = inax[k];
    if (d >= args[k].rank || args[k].shape[d] != size) {
      rule_error(r, "xla_pmap maps operand %d (%s) along dimension %lld, which must have size axis_size = %lld", k + 1,
                 check_type_text(cx, &args[k]), (long long)d, (long long)size);
      check_bind_bad(cx, s);
      return;
    }
    sm->in_axis[k] = (int8_t)d;
    sm->in[k].ndims = (int)d + 1;
    sm->in[k].dim[d].naxes = 1;
    sm->in[k].mask = 1;
    block[k].rank--;
    for (int j = (int)d; j < block[k].rank; j++) block[k].shape[j] = args[k].shape[j + 1];
    block[k].vma = 1;
  }
  Ctx sub = *cx;
  sub.mesh = m;
  sub.ctrl = 0;
  IrFunc *f = check_instantiate(&sub, fd, block, n, s->callee_sp);
  if (!f) { check_bind_bad(cx, s); return; }
  int nout = f->nouts;
  for (int k = 0; k < nout; k++)         /* axes nested pmaps added end inside the body */
    if (f->outs[k].t.vma & ~1u) {
      int j = 1;
      while (!(f->outs[k].t.vma & (1u << j))) j++;
      rule_error(r, "result %d of xla_pmap varies over %.*s, the axis of a pmap nested in its body: only %.*s may "
                 "reach its results", k + 1, m->axis[j].n, m->axis[j].p, axis.n, axis.p);
      check_bind_bad(cx, s);
      return;
    }
  int64_t *outax = NEWN(cx->C, int64_t, nout);
  for (int k = 0; k < nout; k++) outax[k] = 0;
  if (!per_operand(r, "out_axes", nout, false, outax)) { check_bind_bad(cx, s); return; }
  sm->nout = nout;
  sm->out = NEWN(cx->C, Spec, nout);
  sm->out_axis = NEWN(cx->C, int8_t, nout);
  Type *out = NEWN(cx->C, Type, nout);
  for (int k = 0; k < nout; k++) {
    int64_t d = outax[k];
    Type t = f->outs[k].t;
    if (d < 0 || d > t.rank || t.rank >= SHM_MAXRANK) {
      rule_error(r, "xla_pmap's out_axes[%d] = %lld is out of range for a result of rank %d", k, (long long)d, t.rank);
      check_bind_bad(cx, s);
      return;
    }
    /* every result is stacked: one block per device, even an invariant one */
    sm->out_axis[k] = (int8_t)d;
    sm->out[k].ndims = (int)d + 1;
    sm->out[k].dim[d].naxes = 1;
    sm->out[k].mask = 1;
    for (int j = t.rank; j > d; j--) t.shape[j] = t.shape[j - 1];
    t.shape[d] = size;
    t.rank++;
    t.vma = 0;
    out[k] = t;
  }
  at->ext = sm;
  check_add_fn(cx, at, f);
  record_as_written(cx, r, s, "call_jaxpr");
  check_emit_special(cx, s, P_XLA_PMAP, at, r, in, n, out, nout, 0);
}
