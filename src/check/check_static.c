/*
** check_static.c — static parameters of user functions.
**
** `def dp_loss[axis](w, x, y) { ... pmean[axes=axis] ... }` declares a
** static parameter `axis`; each call gives its value in brackets, as a
** primitive's parameters are given: `dp_loss[axis=data] w x y`.  Inside
** the body, a parameter value that is the bare name of a static parameter
** stands for the value the call gave (an axis name, a number, a tuple,
** ...), wherever it appears in a parameter list: `pmean[axes=axis]`,
** `reshape[new_sizes=(n, 4)]`, `P(axis)`, `f[axis=axis]`.  A function is
** checked once per distinct list of static values and argument types, as
** JAX traces a function again for new static arguments.
*/
#include <stdio.h>
#include <stdlib.h>
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "show.h"

/* Is any static parameter bound in this scope? */
static bool statics_visible(Binding *scope) {
  for (; scope; scope = scope->next)
    if (scope->k == B_STATIC) return true;
  return false;
}

/* v with every bare name of a static parameter replaced by its value (v
   itself when nothing changes).  A replaced value takes the place of the
   name it replaces, so errors point into the body. */
static PVal *subst_pv(Ctx *cx, PVal *v) {
  if (!v) return v;
  if (v->k == PV_NAME) {
    Binding *b = check_lookup(cx->scope, B_STATIC, v->s);
    if (!b || !b->pv) return v;
    PVal *r = NEW(cx->C, PVal);
    *r = *b->pv;
    r->sp = v->sp;
    return r;
  }
  if (v->k != PV_TUPLE && v->k != PV_LIST && v->k != PV_SPEC && v->k != PV_DICT && v->k != PV_PAIR) return v;
  PVal **items = NULL;
  for (int i = 0; i < v->n; i++) {
    PVal *e = subst_pv(cx, v->items[i]);
    if (e != v->items[i] && !items) {
      items = NEWN(cx->C, PVal *, v->n);
      memcpy(items, v->items, sizeof(PVal *) * (size_t)v->n);
    }
    if (items) items[i] = e;
  }
  if (!items) return v;
  PVal *r = NEW(cx->C, PVal);
  *r = *v;
  r->items = items;
  return r;
}

AstParam **stat_subst_params(Ctx *cx, AstParam **ps, int n) {
  if (!n || !statics_visible(cx->scope)) return ps;
  AstParam **out = NULL;
  for (int i = 0; i < n; i++) {
    PVal *v = subst_pv(cx, ps[i]->v);
    if (v != ps[i]->v && !out) {
      out = NEWN(cx->C, AstParam *, n);
      memcpy(out, ps, sizeof(AstParam *) * (size_t)n);
    }
    if (out && v != ps[i]->v) {
      out[i] = NEW(cx->C, AstParam);
      *out[i] = *ps[i];
      out[i]->v = v;
    }
  }
  return out ? out : ps;
}

AstStmt *stat_subst_stmt(Ctx *cx, AstStmt *s) {
  AstParam **ps = stat_subst_params(cx, s->params, s->nparams);
  if (ps == s->params) return s;
  AstStmt *c = NEW(cx->C, AstStmt);
  *c = *s;
  c->params = ps;
  return c;
}

/* Does a parameter value hold a function (a lambda), anywhere? */
static bool holds_function(const PVal *v) {
  if (!v) return false;
  if (v->k == PV_FUNC) return true;
  for (int i = 0; (v->k == PV_TUPLE || v->k == PV_LIST || v->k == PV_SPEC || v->k == PV_DICT || v->k == PV_PAIR) &&
                  i < v->n; i++)
    if (holds_function(v->items[i])) return true;
  return false;
}

/* The names of a function's static parameters, "axis, n", for messages. */
static const char *statics_list(Ctx *cx, const AstFunc *af) {
  Buf b = {0};
  err_defer(buf_release, &b);
  for (int i = 0; i < af->nstatics; i++) buf_printf(&b, "%s%.*s", i ? ", " : "", af->statics[i].n, af->statics[i].p);
  char *r = arena_strndup(&cx->C->prog.arena, buf_cstr(&b), (size_t)b.n);
  err_undefer(&b);
  buf_free(&b);
  return r;
}

bool stat_call_values(Ctx *cx, FuncDef *fd, AstParam **ps, int n, Span call, PVal ***out) {
  const AstFunc *af = fd->ast;
  *out = NULL;
  if (af->has_deco && str_eqc(af->deco, "xmap")) {       /* f[mesh=m] x: the mesh in scope */
    for (int i = 0; i < n; i++)
      if (!str_eqc(ps[i]->key, "mesh")) {
        diag_error(ps[i]->sp, "%.*s is an xmap: a call gives it only its mesh, as %.*s[mesh=m] ...", fd->name.n,
                   fd->name.p, fd->name.n, fd->name.p);
        return false;
      } else if (i) {
        diag_error(ps[i]->sp, "parameter 'mesh' given twice");
        return false;
      }
    *out = NEWN(cx->C, PVal *, 1);
    (*out)[0] = n ? ps[0]->v : NULL;
    return true;
  }
  if (!af->nstatics) {
    if (n) {
      diag_error(ps[0]->sp, "'%.*s' is a function: it takes no parameters in brackets", fd->name.n, fd->name.p);
      return false;
    }
    return true;
  }
  PVal **vals = NEWN(cx->C, PVal *, af->nstatics);
  for (int i = 0; i < n; i++) {
    int k = -1;
    for (int j = 0; j < af->nstatics; j++)
      if (str_eq(af->statics[j], ps[i]->key)) k = j;
    if (k < 0) {
      diag_error(ps[i]->sp, "%.*s has no static parameter '%.*s' (its static parameters: %s)", fd->name.n,
                 fd->name.p, ps[i]->key.n, ps[i]->key.p, statics_list(cx, af));
      return false;
    }
    if (vals[k]) {
      diag_error(ps[i]->sp, "parameter '%.*s' given twice", ps[i]->key.n, ps[i]->key.p);
      return false;
    }
    if (holds_function(ps[i]->v)) {
      diag_error(ps[i]->v->sp, "a static parameter takes a value (an axis name, a number, a tuple, ...), "
                 "not a function");
      return false;
    }
    vals[k] = ps[i]->v;
  }
  for (int j = 0; j < af->nstatics; j++)
    if (!vals[j]) {
      diag_error(call, "%.*s takes the static parameter%s %s: call it as %.*s[%.*s=...] ...", fd->name.n, fd->name.p,
                 af->nstatics == 1 ? "" : "s", statics_list(cx, af), fd->name.n, fd->name.p, af->statics[j].n,
                 af->statics[j].p);
      return false;
    }
  *out = vals;
  return true;
}

Binding *stat_bind(Checker *C, Binding *scope, const AstFunc *af, PVal **vals) {
  for (int i = 0; vals && i < af->nstatics; i++) {
    scope = check_bind(C, scope, B_STATIC, af->statics[i]);
    scope->pv = vals[i];
  }
  return scope;
}

char *stat_key(Checker *C, const AstFunc *af, PVal **vals) {
  if (!vals || !af->nstatics) return NULL;
  Buf b = {0};
  err_defer(buf_release, &b);
  for (int i = 0; i < af->nstatics; i++) {
    buf_printf(&b, "%s%.*s=", i ? ", " : "", af->statics[i].n, af->statics[i].p);
    show_param_value(&b, vals[i]);
  }
  char *r = arena_strndup(&C->prog.arena, buf_cstr(&b), (size_t)b.n);
  err_undefer(&b);
  buf_free(&b);
  return r;
}

char *stat_key_mesh(Checker *C, PVal *mesh) {
  Buf b = {0};
  err_defer(buf_release, &b);
  buf_puts(&b, "mesh=");
  show_param_value(&b, mesh);
  char *r = arena_strndup(&C->prog.arena, buf_cstr(&b), (size_t)b.n);
  err_undefer(&b);
  buf_free(&b);
  return r;
}

IrFunc *stat_instantiate_call(Ctx *cx, AstStmt *s, FuncDef *fd, const Type *args, int nargs) {
  PVal **vals;
  if (!stat_call_values(cx, fd, s->params, s->nparams, s->callee_sp, &vals)) return NULL;
  return check_instantiate_s(cx, fd, args, nargs, vals, s->callee_sp);
}
