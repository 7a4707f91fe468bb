/*
** check_resolve.c — resolving functions no call reached.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "show.h"

/* ---- functions never checked: resolving their names --------------------------------
** A function whose parameters are not all annotated is checked at each
** call, with the argument types; one that is never called would never be
** looked at, and its mistakes would wait for the first call.  After a file
** is checked, each such function (and each def nested in it, and each def
** nested in a checked function but never called) is resolved without
** types: every name it reads must be bound where it reads it, every callee
** must be a function or a primitive, with the right number of operands and
** known parameter names; a function parameter of control flow must name a
** function; a shard_map's mesh and specs must be right; and the axis names
** of collectives must be axes of the enclosing shard_map's mesh (or of the
** enclosing @pmap's or @xmap's axes).  An axis name in a function whose
** mesh is not known is bound where the function is instantiated -- by a
** mesh, by an xmap's named axes, by a static parameter -- so it is not
** judged here: the function is checked as far as it can be without it.
** These are the errors any call would report, with the same messages.
*/

typedef struct Res {
  Checker *C;
  Binding *scope;
  const Mesh *mesh;        /* the enclosing shard_map's mesh, if known */
  const AstFunc *self;     /* the function resolved (it does not see itself) */
  bool failed;             /* this statement already has its error */
} Res;

static void res_func(Res *R, const AstFunc *af, Binding *scope, const Mesh *mesh);

static void res_error(Res *R, Span sp, const char *fmt, ...) SHM_PRINTF(3, 4);
static void res_error(Res *R, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_error_once(&R->failed, sp, fmt, ap);
  va_end(ap);
}

static void res_bind_var(Res *R, Str name, Span sp) {
  if (!name.n || str_eqc(name, "_")) return;
  IrVar *v = NEW(R->C, IrVar);
  v->name = name;
  v->t = check_bad_type();
  v->sp = sp;
  R->scope = check_bind(R->C, R->scope, B_VAR, name);
  R->scope->var = v;
}

static void res_name(Res *R, Str name, Span sp) {
  if (!check_lookup(R->scope, B_VAR, name)) res_error(R, sp, check_unbound(R->C, R->scope, B_VAR, name), name.n, name.p);
}

static void res_arg(Res *R, const AstArg *a) {
  if (a->k == ARG_NAME) res_name(R, a->name, a->sp);
}

/* Does a parameter value name a static parameter of an enclosing
   function?  Its value is known only at a call: what depends on it is
   left to the call's check. */
static bool res_static(Res *R, const PVal *v) {
  if (!v) return false;
  if (v->k == PV_NAME) return check_lookup(R->scope, B_STATIC, v->s) != NULL;
  for (int i = 0; (v->k == PV_TUPLE || v->k == PV_LIST || v->k == PV_SPEC || v->k == PV_DICT || v->k == PV_PAIR) &&
                  i < v->n; i++)
    if (res_static(R, v->items[i])) return true;
  return false;
}

static bool res_params_static(Res *R, AstParam *const *ps, int n) {
  for (int i = 0; i < n; i++)
    if (res_static(R, ps[i]->v)) return true;
  return false;
}

/* The static values a call gives: known names, each once, all given. */
static void res_call_statics(Res *R, const AstStmt *s, const AstFunc *af) {
  for (int i = 0; i < s->nparams; i++) {
    const AstParam *p = s->params[i];
    bool known = false;
    for (int j = 0; j < af->nstatics; j++) known |= str_eq(af->statics[j], p->key);
    for (int j = 0; j < i; j++)
      if (str_eq(s->params[j]->key, p->key)) res_error(R, p->sp, "parameter '%.*s' given twice", p->key.n, p->key.p);
    if (!known) {
      char names[512];
      int n = 0;
      for (int j = 0; j < af->nstatics && n < (int)sizeof names - 80; j++)
        n += snprintf(names + n, sizeof names - (size_t)n, "%s%.*s", j ? ", " : "", af->statics[j].n, af->statics[j].p);
      res_error(R, p->sp, "%.*s has no static parameter '%.*s' (its static parameters: %s)", s->callee.n,
                s->callee.p, p->key.n, p->key.p, names);
    }
  }
  for (int j = 0; j < af->nstatics; j++) {
    bool given = false;
    for (int i = 0; i < s->nparams; i++) given |= str_eq(af->statics[j], s->params[i]->key);
    if (!given)
      res_error(R, s->callee_sp, "%.*s takes the static parameter %.*s: call it as %.*s[%.*s=...] ...", s->callee.n,
                s->callee.p, af->statics[j].n, af->statics[j].p, s->callee.n, s->callee.p, af->statics[j].n,
                af->statics[j].p);
  }
}

static void res_axes(Res *R, const PVal *v, Span sp) {
  v = pv_unparen((PVal *)v);
  if (!v) return;
  const PVal *const *items = (const PVal *const *)&v;
  int n = 1;
  if (v->k == PV_TUPLE || v->k == PV_LIST) { items = (const PVal *const *)v->items; n = v->n; }
  for (int i = 0; i < n; i++) {
    const PVal *e = pv_unparen((PVal *)items[i]);
    if (e->k != PV_NAME && e->k != PV_STR) continue;     /* the rule's own error, at the call */
    Span at = e->sp.file >= 0 ? e->sp : sp;
    bool found = !R->mesh;           /* (no mesh known: bound where the function is instantiated) */
    for (int k = 0; R->mesh && k < R->mesh->naxes; k++) found |= str_eq(R->mesh->axis[k], e->s);
    char hint[256];
    if (!found) res_error(R, at, "unbound axis name '%.*s'%s", e->s.n, e->s.p, rule_axis_hint(R->mesh, e->s, hint, sizeof hint));
  }
}

/* The axes of each spec in a shard_map's in_specs/out_specs. */
static void res_specs(Res *R, const Mesh *m, const PVal *v) {
  v = pv_unparen((PVal *)v);
  if (!v) return;
  if (v->k == PV_TUPLE || v->k == PV_LIST) {
    for (int i = 0; i < v->n; i++) res_specs(R, m, v->items[i]);
    return;
  }
  Spec sp;
  int errs = diag_count();
  if (!R->failed && !smap_parse_spec(NULL, m, (PVal *)v, &sp) && diag_count() > errs) R->failed = true;
}

/* A function-valued parameter: a defined name or an inline lambda. */
static void res_fn_param(Res *R, const PVal *v, const Mesh *mesh) {
  v = pv_unparen((PVal *)v);
  if (!v) return;
  if (v->k == PV_TUPLE || v->k == PV_LIST) {
    for (int i = 0; i < v->n; i++) res_fn_param(R, v->items[i], mesh);
    return;
  }
  if (v->k == PV_NAME) {
    if (!check_lookup(R->scope, B_FUNC, v->s)) res_error(R, v->sp, "unknown function '%.*s'", v->s.n, v->s.p);
  } else if (v->k == PV_FUNC && v->fn) {
    res_func(R, v->fn, R->scope, mesh);
  }
}

static const Mesh *res_mesh(Res *R, const PVal *v) {
  v = pv_unparen((PVal *)v);
  if (!v || v->k != PV_NAME) return NULL;
  Binding *b = check_lookup(R->scope, B_MESH, v->s);
  if (!b) res_error(R, v->sp, "unknown mesh '%.*s'", v->s.n, v->s.p);
  return b ? b->mesh : NULL;
}

static const PVal *res_param(const AstStmt *s, const char *key) {
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, key)) return s->params[i]->v;
  return NULL;
}

static void res_prim_eqn(Res *R, const AstStmt *s, int prim) {
  const PrimInfo *pi = &prim_table[prim];
  if (s->nargs < pi->nin_min || (pi->nin_max >= 0 && s->nargs > pi->nin_max)) {
    if (pi->nin_min == pi->nin_max)
      res_error(R, s->callee_sp, "%s takes %d operand%s, but %d %s given", pi->name, pi->nin_min,
                pi->nin_min == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
    else
      res_error(R, s->callee_sp, "%s takes at least %d operand%s, but %d %s given", pi->name, pi->nin_min,
                pi->nin_min == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
    return;
  }
  for (int i = 0; i < s->nparams; i++) {
    const AstParam *p = s->params[i];
    for (int j = 0; j < i; j++)
      if (str_eq(s->params[j]->key, p->key)) res_error(R, p->sp, "parameter '%.*s' given twice", p->key.n, p->key.p);
    if (!prim_accepts(prim, p->key)) {
      size_t n = prim_params_len(pi->params);
      char hint[96];
      if (n)
        res_error(R, p->sp, "%s has no parameter '%.*s' (%sits parameters: %.*s)", pi->name, p->key.n, p->key.p,
                  rule_param_hint(pi->params, p->key, hint, sizeof hint), (int)n, pi->params);
      else
        res_error(R, p->sp, "%s takes no parameters, but '%.*s' was given", pi->name, p->key.n, p->key.p);
    }
  }
  const Mesh *body_mesh = R->mesh;
  bool dyn = res_params_static(R, s->params, s->nparams);
  switch (prim) {
  case P_COND: res_fn_param(R, res_param(s, "branches"), R->mesh); break;
  case P_WHILE:
    res_fn_param(R, res_param(s, "cond_jaxpr"), R->mesh);
    res_fn_param(R, res_param(s, "body_jaxpr"), R->mesh);
    break;
  case P_FORI_LOOP:
    for (int k = 0; k < 2; k++) {
      const PVal *b = pv_unparen((PVal *)res_param(s, k ? "upper" : "lower"));
      if (b && b->k == PV_NAME && !res_static(R, b)) res_name(R, b->s, b->sp);
    }
    res_fn_param(R, res_param(s, "body"), R->mesh);
    break;
  case P_SHARD_MAP:
    body_mesh = dyn ? NULL : res_mesh(R, res_param(s, "mesh"));
    if (body_mesh) {
      res_specs(R, body_mesh, res_param(s, "in_specs"));
      res_specs(R, body_mesh, res_param(s, "out_specs"));
    }
    res_fn_param(R, res_param(s, "f"), body_mesh);
    break;
  default:
    if (pi->vrule != VR_ELEM && pi->vrule != VR_NULLARY && pi->vrule != VR_SPECIAL && !dyn) {
      res_axes(R, res_param(s, "axes"), s->callee_sp);
      res_axes(R, res_param(s, "axis_name"), s->callee_sp);
    }
  }
}

static void res_eqn(Res *R, const AstStmt *s) {
  for (int k = 0; k < s->nargs; k++) {
    if (s->args[k]->k == ARG_STR) res_error(R, s->args[k]->sp, "a string is not an array operand");
    else res_arg(R, s->args[k]);
  }
  Binding *b = check_lookup(R->scope, B_FUNC, s->callee);
  int prim;
  if (b) {
    const AstFunc *af = b->fn->ast;
    if (s->nparams && !af->nstatics)
      res_error(R, s->params[0]->sp, "'%.*s' is a function: it takes no parameters in brackets", s->callee.n, s->callee.p);
    else if (af->nstatics)
      res_call_statics(R, s, af);
    if (R->failed) {
    } else if (af->form != FN_TRANSPOSE && af->nparams != s->nargs)
      res_error(R, s->callee_sp, "%.*s takes %d argument%s, but %d %s given", s->callee.n, s->callee.p, af->nparams,
                af->nparams == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
  } else if ((prim = prim_lookup(s->callee)) >= 0) {
    for (int i = 0; i < s->nparams && prim == P_PBROADCAST; i++)     /* JAX's broadcast (as check_eqn reads it) */
      if (str_eqc(s->params[i]->key, "source")) prim = P_PBROADCAST_SOURCE;
    res_prim_eqn(R, s, prim);
  } else if (check_lookup(R->scope, B_VAR, s->callee)) {
    if (s->has_params || s->nargs)
      res_error(R, s->callee_sp, "'%.*s' is a value, not a function or primitive", s->callee.n, s->callee.p);
  } else if (R->self && R->self->name.n && str_eq(s->callee, R->self->name)) {
    res_error(R, s->callee_sp, "%.*s calls itself: recursion is not supported (use while or fori_loop)",
              s->callee.n, s->callee.p);
  } else {
    char hint[160];
    res_error(R, s->callee_sp, "unknown primitive or function '%.*s'%s", s->callee.n, s->callee.p,
              check_callee_hint(R->C, R->scope, s->callee, hint, sizeof hint));
  }
  for (int i = 0; i < s->nouts; i++) res_bind_var(R, s->outs[i]->name, s->outs[i]->sp);
}

/* A nested def: bound, and resolved itself (the caller never checks it). */
static void res_def(Res *R, const AstStmt *s) {
  const AstFunc *af = s->fn;
  FuncDef *fd = NEW(R->C, FuncDef);
  fd->ast = (AstFunc *)af;
  fd->name = af->name;
  fd->scope = R->scope;
  R->scope = check_bind(R->C, R->scope, B_FUNC, af->name);
  R->scope->fn = fd;
  if (af->form == FN_TRANSPOSE) {
    if (!check_lookup(fd->scope, B_FUNC, af->target))
      res_error(R, af->target_sp, "unknown function '%.*s'", af->target.n, af->target.p);
    for (int i = 0; i < af->nrules; i++)
      if (!check_lookup(fd->scope, B_FUNC, af->rules[i]))
        res_error(R, af->rules_sp[i], "unknown function '%.*s'", af->rules[i].n, af->rules[i].p);
    return;
  }
  res_func(R, af, fd->scope, R->mesh);
}

static void res_stmt(Res *R, const AstStmt *s, const AstFunc *af, bool *returned) {
  R->failed = false;
  if (*returned && s->k != ST_ERROR) {
    res_error(R, s->sp, "statement after return");
    return;
  }
  switch (s->k) {
  case ST_EQN: res_eqn(R, s); break;
  case ST_LIT:
  case ST_LOAD:
    for (int i = 0; i < s->nouts; i++) res_bind_var(R, s->outs[i]->name, s->outs[i]->sp);
    break;
  case ST_SAVE:
    res_arg(R, s->args[0]);
    break;
  case ST_VISUALIZE: res_error(R, s->sp, "visualize stands at top level (inside a body, the debugger's `layout x` draws a value)"); break;
  case ST_PRINT:
    for (int k = 0; k < s->nargs; k++) res_arg(R, s->args[k]);
    break;
  case ST_SHOW:
    if (!check_lookup(R->scope, B_FUNC, s->name))
      res_error(R, s->name_sp, check_unbound(R->C, R->scope, B_FUNC, s->name), s->name.n, s->name.p);
    break;
  case ST_MESH: {
    /* checked as it would be at a call; bound for what follows */
    Ctx cx;
    check_ctx_init(&cx, R->C, NULL, R->scope, NULL, 0, s->sp.file);
    check_mesh(&cx, (AstStmt *)s);
    R->scope = cx.scope;
    break;
  }
  case ST_IMPORT: res_error(R, s->sp, "import stands only at top level"); break;
  case ST_DEF: res_def(R, s); break;
  case ST_RETURN:
    if (af->form == FN_LAMBDA) res_error(R, s->sp, "a lambda returns with `in (...)`, not return");
    for (int k = 0; k < s->nargs; k++) res_arg(R, s->args[k]);
    *returned = true;
    break;
  case ST_ERROR:
    for (int i = 0; i < s->nouts; i++) res_bind_var(R, s->outs[i]->name, s->outs[i]->sp);
    break;
  }
}

/* Add the axis names a parameter value mentions to m: names and strings,
   in lists and tuples, and in dictionaries their values (dict_values) or
   their keys. */
static void names_into(Mesh *m, const PVal *v, bool dict_values) {
  v = pv_unparen((PVal *)v);
  if (!v) return;
  if (v->k == PV_NAME || v->k == PV_STR) {
    for (int k = 0; k < m->naxes; k++)
      if (str_eq(m->axis[k], v->s)) return;
    if (m->naxes < SHM_MAXAXES) m->axis[m->naxes++] = v->s;
    return;
  }
  if (pv_is_map(v))
    for (int i = 0; i < v->n; i++) names_into(m, dict_values ? pv_val(v, i) : pv_key(v, i), dict_values);
  if (v->k == PV_TUPLE || v->k == PV_LIST)
    for (int i = 0; i < v->n; i++) names_into(m, v->items[i], dict_values);
}

/* The axes a @pmap or @xmap body sees: the enclosing pmap's and
   axis_name; the named axes its in_axes and axis_sizes name. */
static const Mesh *res_map_mesh(Res *R, const AstFunc *af, const Mesh *outer) {
  Mesh *m = NEW(R->C, Mesh);
  bool xmap = str_eqc(af->deco, "xmap");
  if (!xmap && outer) *m = *outer;
  m->named = xmap;
  for (int i = 0; i < af->ndeco_params; i++) {
    const AstParam *p = af->deco_params[i];
    if (!xmap && str_eqc(p->key, "axis_name")) names_into(m, p->v, false);
    if (xmap && str_eqc(p->key, "in_axes")) names_into(m, p->v, true);
    if (xmap && str_eqc(p->key, "axis_sizes")) names_into(m, p->v, false);
  }
  return m;
}

static void res_func(Res *R, const AstFunc *af, Binding *scope, const Mesh *mesh) {
  Res sub = *R;
  sub.scope = scope;
  sub.mesh = mesh;
  sub.self = af;
  sub.failed = false;
  if (af->has_deco && (str_eqc(af->deco, "pmap") || str_eqc(af->deco, "xmap"))) {
    sub.mesh = res_map_mesh(&sub, af, mesh);
  } else if (af->has_deco) {
    if (!str_eqc(af->deco, "shard_map")) {
      diag_error(af->deco_sp, "unknown decorator '@%.*s' (shm knows @shard_map, @pmap and @xmap)", af->deco.n,
                 af->deco.p);
      return;
    }
    const PVal *mv = NULL, *iv = NULL, *ov = NULL;
    for (int i = 0; i < af->ndeco_params; i++) {
      const AstParam *p = af->deco_params[i];
      if (str_eqc(p->key, "mesh")) mv = p->v;
      else if (str_eqc(p->key, "in_specs")) iv = p->v;
      else if (str_eqc(p->key, "out_specs")) ov = p->v;
      else if (!prim_accepts(P_SHARD_MAP, p->key))
      {
        char hint[96];
        res_error(&sub, p->sp, "shard_map has no parameter '%.*s' (%sits parameters: %.*s)", p->key.n, p->key.p,
                  rule_param_hint(prim_table[P_SHARD_MAP].params, p->key, hint, sizeof hint),
                  (int)prim_params_len(prim_table[P_SHARD_MAP].params), prim_table[P_SHARD_MAP].params);
      }
    }
    sub.failed = false;
    sub.mesh = mv ? res_mesh(&sub, mv) : NULL;
    if (!mv) diag_error(af->deco_sp, "shard_map requires the parameter 'mesh'");
    if (sub.mesh) {
      res_specs(&sub, sub.mesh, iv);
      res_specs(&sub, sub.mesh, ov);
    }
  }
  /* parameters (and the lambda's constants, which name outer variables) */
  for (int i = 0; i < af->nconsts; i++) {
    sub.failed = false;
    if (!check_lookup(sub.scope, B_VAR, af->consts[i]->name))
      res_error(&sub, af->consts[i]->sp, "unknown variable '%.*s' (a lambda's constants name variables in scope)",
                af->consts[i]->name.n, af->consts[i]->name.p);
  }
  for (int i = 0; i < af->nstatics; i++) sub.scope = check_bind(R->C, sub.scope, B_STATIC, af->statics[i]);
  for (int i = 0; i < af->nparams; i++) res_bind_var(&sub, af->params[i]->name, af->params[i]->sp);
  bool returned = false;
  int errs = diag_count();
  for (int i = 0; i < af->nbody; i++) res_stmt(&sub, af->body[i], af, &returned);
  sub.failed = false;
  if (af->form == FN_LAMBDA)
    for (int k = 0; k < af->nouts; k++) res_arg(&sub, af->outs[k]);
  else if (af->form == FN_READABLE && !returned && diag_count() == errs && !ast_body_broken(af->body, af->nbody))
    diag_error(af->sp, "%.*s has no return statement", af->name.n, af->name.p);
}

/* Record a def the checker saw, so that check_resolve_unchecked can find
   the ones never checked. */
void resolve_note_def(Checker *C, FuncDef *fd, const Mesh *mesh) {
  if (C->ndefs == C->capdefs) {
    int nc = C->capdefs ? C->capdefs * 2 : 32;
    FuncDef **n = NEWN(C, FuncDef *, nc);
    const Mesh **m = NEWN(C, const Mesh *, nc);
    if (C->ndefs) {
      memcpy(n, C->defs, sizeof(FuncDef *) * (size_t)C->ndefs);
      memcpy(m, C->def_mesh, sizeof(const Mesh *) * (size_t)C->ndefs);
    }
    C->defs = n;
    C->def_mesh = m;
    C->capdefs = nc;
  }
  C->def_mesh[C->ndefs] = mesh;
  C->defs[C->ndefs++] = fd;
}

/* At the end of a file: the errors a def's own check held back are
   reported only for a function no statement uses.  A use checks the
   function under its own predicates and reports what is wrong there (an
   annotation JAX prints may be right at the use and wrong at the def); a
   use skipped after an earlier error checks it once that error is
   mended.  Each
   function recorded since `from` that no check has reached (no instance
   of any def of its syntax) is resolved, once per syntax. */
void resolve_unchecked(Checker *C, int from) {
  for (int i = from; i < C->ndefs; i++) {
    FuncDef *fd = C->defs[i];
    if (!fd->held) continue;
    bool used = false;
    for (int j = 0; j < C->ndefs && !used; j++) used = C->defs[j]->ast == fd->ast && C->defs[j]->used;
    diag_release(fd->held, !used);
    fd->held = 0;
  }
  for (int i = from; i < C->ndefs; i++) {
    FuncDef *fd = C->defs[i];
    const AstFunc *af = fd->ast;
    if (af->form == FN_TRANSPOSE) continue;
    bool seen = false;
    for (int j = 0; j < C->ndefs && !seen; j++)
      seen = C->defs[j]->ast == af && (C->defs[j]->inst || C->defs[j]->resolved);
    if (seen) continue;
    fd->resolved = true;
    Res R;
    memset(&R, 0, sizeof R);
    R.C = C;
    res_func(&R, af, fd->scope, C->def_mesh[i]);
  }
}
