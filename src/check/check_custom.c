/*
** check_custom.c — `def f = custom_jvp g g_jvp` (check_int.h): a
** function g with a JVP rule attached, as jax.custom_jvp's defjvp does.
**
** f takes g's parameters and returns g's results.  The rule g_jvp takes
** g's parameters, then a tangent per floating-point parameter, and
** returns g's results, then a tangent per floating-point result (each of
** its value's type).  Both are checked for each argument types f is
** called with; an instance of f is a call of g's instance written as
** custom_jvp_call, whose functions are g's and g_jvp's instances, so
** that differentiation (custom.c) applies the rule.
*/
#include <stdio.h>
#include "irbuild.h"
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "jvp.h"
#include "show.h"

/* "(f32[3], i32[])" for a list of types. */
static void types_text(Ctx *cx, Buf *b, const Type *t, int n) {
  buf_putc(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) buf_puts(b, ", ");
    show_type(b, &t[i], cx->mesh);
  }
  buf_putc(b, ')');
}

/* The types the rule takes for argument types args: them, then a tangent
   per floating one; *n gets the count. */
static Type *rule_args(Ctx *cx, const Type *args, int nargs, int *n) {
  Type *t = NEWN(cx->C, Type, 2 * nargs + 1);
  *n = 0;
  for (int k = 0; k < nargs; k++) t[(*n)++] = args[k];
  for (int k = 0; k < nargs; k++)
    if (jvp_has_tangent(args[k].dt)) {
      t[*n] = args[k];
      t[(*n)++].weak = false;
    }
  return t;
}

/* Does rule instance r return g's results, then a tangent per floating
   one?  An error at `at` otherwise. */
static bool rule_results_fit(Ctx *cx, FuncDef *fd, IrFunc *g, IrFunc *r, Span at) {
  Type *want = NEWN(cx->C, Type, 2 * g->nouts + 1), *got = NEWN(cx->C, Type, r->nouts + 1);
  int n = 0;
  for (int j = 0; j < g->nouts; j++) want[n++] = g->outs[j].t;
  for (int j = 0; j < g->nouts; j++)
    if (jvp_has_tangent(g->outs[j].t.dt)) want[n++] = g->outs[j].t;
  for (int j = 0; j < r->nouts; j++) got[j] = r->outs[j].t;
  bool fit = n == r->nouts;
  for (int j = 0; j < n && fit; j++) {
    Type a = want[j], b = got[j];
    a.vma = b.vma = 0;        /* variance is the call's business */
    fit = check_types_equal(&a, &b);
  }
  if (fit) return true;
  Buf bw = {0}, bg = {0};
  err_defer(buf_release, &bw);
  err_defer(buf_release, &bg);
  types_text(cx, &bw, want, n);
  types_text(cx, &bg, got, r->nouts);
  AstFunc *af = fd->ast;
  diag_error(at, "the rule %.*s of %.*s returns %s, but it must return the results of %.*s, then a tangent per "
             "floating-point result: %s", af->rules[0].n, af->rules[0].p, fd->name.n, fd->name.p, buf_cstr(&bg),
             fd->target->name.n, fd->target->name.p, buf_cstr(&bw));
  err_undefer(&bg);
  buf_free(&bg);
  err_undefer(&bw);
  buf_free(&bw);
  return false;
}

/* f's instance: its parameters, one custom_jvp_call of g with rule r. */
static IrFunc *wrapper(Ctx *cx, FuncDef *fd, IrFunc *g, IrFunc *r) {
  char name[256];
  snprintf(name, sizeof name, "%.*s", fd->name.n, fd->name.p);
  Builder *B = bld_new(&cx->C->prog, name, g->parent, cx->mesh, fd->ast->sp);
  IrAtom *in = NEWN(cx->C, IrAtom, g->nparams + 1), *out = NEWN(cx->C, IrAtom, g->nouts + 1);
  for (int k = 0; k < g->nparams; k++) in[k] = ir_var_atom(bld_param(B, g->params[k]->name, g->params[k]->t));
  Attrs *at = NEW(cx->C, Attrs);
  at->dtype = -1;
  check_add_fn(cx, at, g);
  check_add_fn(cx, at, r);
  IrParam *ps = NEWN(cx->C, IrParam, 2);
  ps[0].key = "call_jaxpr";
  ps[0].v = bld_pv_fn(B, 0);
  ps[1].key = "jvp";
  ps[1].v = bld_pv_fn(B, 1);
  bld_call_as(B, g, in, g->nparams, out, P_CUSTOM_JVP_CALL + 1, at, ps, 2);
  for (int j = 0; j < g->nouts; j++)
    if (out[j].var && g->outs[j].var) out[j].var->name = g->outs[j].var->name;
  return bld_finish(B, out, g->nouts);
}

IrFunc *custom_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  AstFunc *af = fd->ast;
  if (!fd->rule) return NULL;
  IrFunc *g = check_instantiate(cx, fd->target, args, nargs, call);
  if (!g) return NULL;
  int n, errs = diag_count();
  Type *rargs = rule_args(cx, args, nargs, &n);
  IrFunc *r = check_instantiate(cx, fd->rule, rargs, n, call);
  if (!r) {
    if (diag_count() > errs) {
      Buf b = {0};
      err_defer(buf_release, &b);
      types_text(cx, &b, rargs, n);
      diag_note(af->rules_sp[0], "the rule %.*s of %.*s takes the parameters of %.*s, then a tangent per "
                "floating-point parameter: %s", af->rules[0].n, af->rules[0].p, fd->name.n, fd->name.p,
                fd->target->name.n, fd->target->name.p, buf_cstr(&b));
      err_undefer(&b);
      buf_free(&b);
    }
    return NULL;
  }
  if (!rule_results_fit(cx, fd, g, r, call.file >= 0 ? call : af->rules_sp[0])) return NULL;
  IrFunc *w = wrapper(cx, fd, g, r);
  Instance *inst = check_new_instance(cx, args, nargs);
  inst->ir = w;
  inst->next = fd->inst;
  fd->inst = inst;
  fd->latest = w;
  return w;
}

bool custom_define(Ctx *cx, FuncDef *fd) {
  AstFunc *af = fd->ast;
  if (af->ntparams) {
    diag_error(af->tparams[0]->sp, "custom_jvp takes no parameters in brackets");
    return false;
  }
  Binding *b = check_lookup(fd->scope, B_FUNC, af->rules[0]);
  if (!b) {
    diag_error(af->rules_sp[0], "unknown function '%.*s'", af->rules[0].n, af->rules[0].p);
    return false;
  }
  fd->rule = b->fn;
  /* an annotated g is checked here, so that a rule that does not fit it
     is reported at the definition */
  FuncDef *t = fd->target;
  if (t->ast->form == FN_TRANSPOSE || !check_all_annotated(t->ast)) return true;
  Instance *i = t->inst;
  while (i && !i->ir) i = i->next;
  if (!i) return true;
  Ctx sub = *cx;
  sub.mesh = i->mesh;
  sub.ctrl = i->ctrl;
  Type *args = NEWN(cx->C, Type, i->ir->nparams + 1);
  for (int k = 0; k < i->ir->nparams; k++) args[k] = i->ir->params[k]->t;
  custom_instance(&sub, fd, args, i->ir->nparams, af->sp);
  return true;
}
