/*
** check_xform.c — function transformations: `def g = name[params] f` for
** linear_transpose (transpose.h), jvp, vjp, grad and value_and_grad
** (autodiff.h).
**
** g is made from a checked instance of f.  A transpose needs one that a
** definition or a call has checked already (its arguments do not say f's
** linear parameters' types).  The derivatives take f's own parameters
** first, so a call of g checks f for those argument types itself; an f
** whose parameters are all annotated is differentiated where g is
** defined, so that its errors are reported there.
*/
#include <stdio.h>
#include "autodiff.h"
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "jvp.h"
#include "show.h"
#include "transpose.h"

static const char *const xform_names[] = {"linear_transpose", "jvp", "vjp", "grad", "value_and_grad", "custom_jvp"};

static bool is_grad(const FuncDef *fd) { return fd->xform == XF_GRAD || fd->xform == XF_VALUE_AND_GRAD; }

/* The newest checked instance, preferring one checked where the
   transform is defined (so that a top-level `def f_tt = linear_transpose
   f_t` does not show an instance made inside a shard_map body). */
static Instance *preferred_instance(Instance *list, const Mesh *mesh) {
  Instance *pick = NULL;
  for (Instance *i = list; i; i = i->next)
    if (i->ir && (!pick || (pick->mesh != mesh && i->mesh == mesh))) pick = i;
  return pick;
}

/* "(f32[3], i32[])" for a list of types. */
static void types_text(Buf *b, const Type *t, int n, const Mesh *mesh) {
  buf_putc(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) buf_puts(b, ", ");
    show_type(b, &t[i], mesh);
  }
  buf_putc(b, ')');
}

/* ---- the parameters of a transformation ------------------------------------------------- */

/* linear=(...) for linear_transpose, argnums=(...) for grad and
   value_and_grad (default (0,)), nothing for jvp and vjp. */
static bool xform_params(Ctx *cx, FuncDef *fd) {
  AstFunc *af = fd->ast;
  const char *key = fd->xform == XF_TRANSPOSE ? "linear" : is_grad(fd) ? "argnums" : NULL;
  RuleCtx r;
  rule_init(&r, &cx->C->prog.arena, cx->mesh, xform_names[fd->xform], af->sp, af->tparams, af->ntparams);
  if (!key) return rule_unused(&r, "");
  IntList l;
  bool given = rule_has(&r, key);
  if (!rule_ints(&r, key, false, &l) || !rule_unused(&r, key)) return false;
  if (is_grad(fd) && !given) {
    l.n = 1;
    l.v = NEWN(cx->C, int64_t, 1);
    l.v[0] = 0;
  }
  if (is_grad(fd) && l.n == 0) {
    diag_error(af->sp, "%s needs at least one parameter to differentiate: argnums=() names none", xform_names[fd->xform]);
    return false;
  }
  fd->lin_given = given;
  fd->lin = l;
  return true;
}

/* Which of f's nparams parameters the list names (linear=, argnums=); false
   after an error. */
static bool xform_marks(Ctx *cx, FuncDef *fd, int nparams, bool *mark) {
  AstFunc *af = fd->ast;
  FuncDef *t = fd->target;
  const char *key = fd->xform == XF_TRANSPOSE ? "linear" : "argnums";
  (void)cx;
  for (int j = 0; j < fd->lin.n; j++) {
    int64_t k = fd->lin.v[j];
    if (k < 0 || k >= nparams) {
      diag_error(af->sp, "%s=(...) names parameter %lld, but %.*s has %d parameter%s", key, (long long)k, t->name.n,
                 t->name.p, nparams, nparams == 1 ? "" : "s");
      return false;
    }
    if (mark[k]) {
      diag_error(af->sp, "%s=(...) names a parameter twice", key);
      return false;
    }
    mark[k] = true;
  }
  if (fd->xform == XF_TRANSPOSE && !fd->lin_given)
    for (int k = 0; k < nparams; k++) mark[k] = true;
  return true;
}

/* ---- linear_transpose ------------------------------------------------------------------------ */

/* The transpose for argument types: made from the target's instance whose
   non-linear parameters and results they are. */
static IrFunc *transpose_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  AstFunc *af = fd->ast;
  FuncDef *t = fd->target;
  for (Instance *i = t->inst; i; i = i->next) {
    IrFunc *f = i->ir;
    if (!f || i->mesh != cx->mesh) continue;
    bool *lin = NEWN(cx->C, bool, f->nparams);
    if (!xform_marks(cx, fd, f->nparams, lin)) return NULL;
    /* the instance must match: non-linear parameter types, then result types */
    int n = 0;
    bool match = true;
    for (int k = 0; k < f->nparams && match; k++)
      if (!lin[k]) match = n < nargs && check_types_equal(&f->params[k]->t, &args[n++]);
    for (int j = 0; j < f->nouts && match; j++) match = n < nargs && check_types_equal(&f->outs[j].t, &args[n++]);
    if (!match || n != nargs) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", fd->name.n, fd->name.p);
    IrFunc *g = tr_linear_transpose(&cx->C->prog, f, lin, name, af->sp);
    Instance *inst = check_new_instance(cx, args, nargs);
    inst->ir = g;
    inst->next = fd->inst;
    fd->inst = inst;
    if (g) fd->latest = g;
    else diag_note(af->sp, "while transposing %.*s", t->name.n, t->name.p);
    return g;
  }
  Buf b = {0};
  err_defer(buf_release, &b);
  for (int i = 0; i < nargs; i++) {
    if (i) buf_puts(&b, ", ");
    show_type(&b, &args[i], cx->mesh);
  }
  diag_error(call, "%.*s transposes %.*s, but %.*s has no checked version whose non-linear parameters and results "
             "are (%s)%s",
             fd->name.n, fd->name.p, t->name.n, t->name.p, t->name.n, t->name.p, buf_cstr(&b),
             t->ast->form != FN_TRANSPOSE && !check_all_annotated(t->ast) ? ": annotate its parameters or call it first" : "");
  err_undefer(&b);
  buf_free(&b);
  return NULL;
}

/* The argument types of a transpose of instance f (its non-linear
   parameters, then its results); *n gets their count. */
static Type *transpose_args(Ctx *cx, FuncDef *fd, IrFunc *f, int *n) {
  Type *args = NEWN(cx->C, Type, f->nparams + f->nouts);
  bool *lin = NEWN(cx->C, bool, f->nparams);
  for (int j = 0; j < fd->lin.n; j++)
    if (fd->lin.v[j] >= 0 && fd->lin.v[j] < f->nparams) lin[fd->lin.v[j]] = true;
  *n = 0;
  for (int k = 0; k < f->nparams; k++)
    if (!lin[k] && fd->lin_given) args[(*n)++] = f->params[k]->t;
  for (int j = 0; j < f->nouts; j++) args[(*n)++] = f->outs[j].t;
  return args;
}

/* ---- derivatives ----------------------------------------------------------------------------- */

static int xform_arity(Ctx *cx, FuncDef *t, const Type *args, int nargs, Span call);

/* The instance of the target for the first n arguments (checked now if
   need be), or NULL after errors. */
static IrFunc *target_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call, int *n) {
  *n = xform_arity(cx, fd->target, args, nargs, call);
  if (*n < 0) return NULL;
  if (*n > nargs) {
    diag_error(call, "%.*s takes at least the %d parameter%s of %.*s, but %d argument%s given", fd->name.n, fd->name.p,
               *n, *n == 1 ? "" : "s", fd->target->name.n, fd->target->name.p, nargs, nargs == 1 ? " was" : "s were");
    return NULL;
  }
  int errs = diag_count();
  IrFunc *f = check_instantiate(cx, fd->target, args, *n, call);
  if (!f && diag_count() > errs)
    diag_note(call, "%.*s differentiates %.*s: its arguments begin with the %d parameter%s of %.*s", fd->name.n,
              fd->name.p, fd->target->name.n, fd->target->name.p, *n, *n == 1 ? "" : "s", fd->target->name.n,
              fd->target->name.p);
  return f;
}

/* How many of the arguments are the parameters of function t: its
   parameter count; for a derivative, its target's and the tangents or
   cotangents after them; for a transpose, an instance's.  -1 after an
   error. */
static int xform_arity(Ctx *cx, FuncDef *t, const Type *args, int nargs, Span call) {
  AstFunc *af = t->ast;
  if (af->form != FN_TRANSPOSE) return af->nparams;
  if (!t->target) return -1;
  switch (t->xform) {
  case XF_GRAD:
  case XF_VALUE_AND_GRAD:
  case XF_CUSTOM_JVP: return xform_arity(cx, t->target, args, nargs, call);
  case XF_JVP: {
    int n = xform_arity(cx, t->target, args, nargs, call), k = 0;
    for (int i = 0; i < n && i < nargs; i++) k += jvp_has_tangent(args[i].dt);
    return n < 0 ? -1 : n + k;
  }
  case XF_VJP: {
    int n;
    IrFunc *f = target_instance(cx, t, args, nargs, call, &n);
    if (!f) return -1;
    for (int j = 0; j < f->nouts; j++) n += jvp_has_tangent(f->outs[j].t.dt);
    return n;
  }
  default:
    for (Instance *i = t->inst; i; i = i->next) {
      if (!i->ir || i->mesh != cx->mesh || i->ir->nparams > nargs) continue;
      bool match = true;
      for (int k = 0; k < i->ir->nparams && match; k++) match = check_types_equal(&i->ir->params[k]->t, &args[k]);
      if (match) return i->ir->nparams;
    }
    diag_error(call, "%.*s transposes %.*s, but no checked version of it takes these arguments first: differentiate "
               "an annotated function, or call %.*s first", t->name.n, t->name.p, t->target->name.n, t->target->name.p,
               t->name.n, t->name.p);
    return -1;
  }
}

/* The types a derivative of f takes after f's parameters: a tangent per
   floating parameter (jvp), a cotangent per floating result (vjp). */
static int extra_types(FuncDef *fd, IrFunc *f, Type *out) {
  int n = 0;
  if (fd->xform == XF_JVP)
    for (int k = 0; k < f->nparams; k++)
      if (jvp_has_tangent(f->params[k]->t.dt)) out[n++] = f->params[k]->t;
  if (fd->xform == XF_VJP)
    for (int j = 0; j < f->nouts; j++)
      if (jvp_has_tangent(f->outs[j].t.dt)) out[n++] = f->outs[j].t;
  return n;
}

/* grad's conditions, as JAX's: one floating scalar result, floating
   parameters to differentiate. */
static bool grad_ok(Ctx *cx, FuncDef *fd, IrFunc *f, const bool *wrt, Span call) {
  AstFunc *af = fd->ast;
  FuncDef *t = fd->target;
  const char *what = xform_names[fd->xform];
  Span at = call.file >= 0 ? call : af->sp;
  if (f->nouts != 1 || f->outs[0].t.rank != 0 || !jvp_has_tangent(f->outs[0].t.dt)) {
    Buf b = {0};
    err_defer(buf_release, &b);
    Type *ts = NEWN(cx->C, Type, f->nouts);
    for (int j = 0; j < f->nouts; j++) ts[j] = f->outs[j].t;
    types_text(&b, ts, f->nouts, cx->mesh);
    diag_error(at, "%s of %.*s needs one floating-point scalar result, but %.*s returns %s (use vjp)", what, t->name.n,
               t->name.p, t->name.n, t->name.p, buf_cstr(&b));
    err_undefer(&b);
    buf_free(&b);
    return false;
  }
  for (int k = 0; k < f->nparams; k++)
    if (wrt[k] && !jvp_has_tangent(f->params[k]->t.dt)) {
      Buf b = {0};
      err_defer(buf_release, &b);
      show_type(&b, &f->params[k]->t, cx->mesh);
      diag_error(at, "%s needs floating-point parameters, but parameter %d of %.*s, %.*s, is %s: integers and "
                 "booleans carry no tangent (use vjp)", what, k, t->name.n, t->name.p, f->params[k]->name.n,
                 f->params[k]->name.p, buf_cstr(&b));
      err_undefer(&b);
      buf_free(&b);
      return false;
    }
  return true;
}

/* The derivative of instance f, or NULL after errors. */
static IrFunc *derive(Ctx *cx, FuncDef *fd, IrFunc *f, Span call) {
  AstFunc *af = fd->ast;
  char name[256];
  snprintf(name, sizeof name, "%.*s", fd->name.n, fd->name.p);
  IrProg *P = &cx->C->prog;
  IrFunc *g = NULL;
  int errs = diag_count();
  if (fd->xform == XF_JVP) g = ad_jvp(P, f, name, af->sp);
  else if (fd->xform == XF_VJP) g = ad_vjp(P, f, name, af->sp);
  else {
    bool *wrt = NEWN(cx->C, bool, f->nparams);
    if (!xform_marks(cx, fd, f->nparams, wrt) || !grad_ok(cx, fd, f, wrt, call)) return NULL;
    g = ad_grad(P, f, fd->lin.v, fd->lin.n, fd->xform == XF_VALUE_AND_GRAD, name, af->sp);
  }
  if (!g && diag_count() > errs) diag_note(af->sp, "while differentiating %.*s", fd->target->name.n, fd->target->name.p);
  return g;
}

/* Complex parameters and results are refused: their tangents are not
   written (a complex value would silently carry none).  False after the
   diagnostic. */
static bool no_complex(FuncDef *fd, IrFunc *f, Span call) {
  const char *what = xform_names[fd->xform];
  for (int k = 0; k < f->nparams + f->nouts; k++) {
    const Type *t = k < f->nparams ? &f->params[k]->t : &f->outs[k - f->nparams].t;
    if (!dtype_is_complex((DType)t->dt)) continue;
    diag_error(call, "%s of %.*s: its %s %d is %s, and differentiation of complex values is not available",
               what, fd->target->name.n, fd->target->name.p, k < f->nparams ? "parameter" : "result",
               k < f->nparams ? k : k - f->nparams, dtype_names[t->dt]);
    return false;
  }
  return true;
}

/* A derivative for argument types: the target checked for its parameters'
   types, the rest of the arguments checked, then differentiated. */
static IrFunc *derive_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  int n;
  IrFunc *f = target_instance(cx, fd, args, nargs, call, &n);
  if (!f || !no_complex(fd, f, call)) return NULL;
  Type *want = NEWN(cx->C, Type, n + f->nparams + f->nouts);
  memcpy(want, args, sizeof(Type) * (size_t)n);
  int m = n + extra_types(fd, f, want + n);
  bool fit = m == nargs;
  for (int i = n; i < m && fit; i++) fit = check_types_equal(&want[i], &args[i]);
  if (!fit) {
    Buf b = {0}, c = {0};
    err_defer(buf_release, &b);
    err_defer(buf_release, &c);
    types_text(&b, want, m, cx->mesh);
    types_text(&c, args, nargs, cx->mesh);
    diag_error(call, "%.*s takes %s: the parameters of %.*s, then a %s for each floating-point %s; it was given %s",
               fd->name.n, fd->name.p, buf_cstr(&b), fd->target->name.n, fd->target->name.p,
               fd->xform == XF_JVP ? "tangent" : "cotangent", fd->xform == XF_JVP ? "parameter" : "result", buf_cstr(&c));
    err_undefer(&c);
    buf_free(&c);
    err_undefer(&b);
    buf_free(&b);
    return NULL;
  }
  IrFunc *g = derive(cx, fd, f, call);
  Instance *inst = check_new_instance(cx, args, nargs);
  inst->ir = g;
  inst->next = fd->inst;
  fd->inst = inst;
  if (g) fd->latest = g;
  return g;
}

/* ---- the definitions ---------------------------------------------------------------------- */

IrFunc *xform_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  if (!fd->target) return NULL;
  if (fd->xform == XF_TRANSPOSE) return transpose_instance(cx, fd, args, nargs, call);
  if (fd->xform == XF_CUSTOM_JVP) return custom_instance(cx, fd, args, nargs, call);
  return derive_instance(cx, fd, args, nargs, call);
}

void xform_define(Ctx *cx, FuncDef *fd) {
  AstFunc *af = fd->ast;
  int kind = -1;
  for (int k = 0; k < (int)(sizeof xform_names / sizeof *xform_names); k++)
    if (str_eqc(af->tprim, xform_names[k])) kind = k;
  if (kind < 0 && str_eqc(af->tprim, "custom_vjp")) {
    diag_error(span_join(af->sp, af->target_sp), "custom_vjp rules are not available: attach the rule as custom_jvp "
               "(def f = custom_jvp g g_jvp, with g_jvp linear in the tangents: grad and vjp transpose it)");
    return;
  }
  if (kind < 0) {
    diag_error(span_join(af->sp, af->target_sp), "'%.*s' is not a function transformation shm knows (it knows "
               "linear_transpose, jvp, vjp, grad, value_and_grad and custom_jvp)", af->tprim.n, af->tprim.p);
    return;
  }
  if (af->nrules != (kind == XF_CUSTOM_JVP)) {
    Span at = af->nrules ? af->rules_sp[af->nrules - 1] : af->target_sp;
    if (kind == XF_CUSTOM_JVP)
      diag_error(at, "custom_jvp takes two functions: the function, then its rule (def f = custom_jvp g g_jvp)");
    else
      diag_error(at, "%s takes one function", xform_names[kind]);
    return;
  }
  fd->xform = kind;
  Binding *b = check_lookup(fd->scope, B_FUNC, af->target);
  if (!b) {
    diag_error(af->target_sp, "unknown function '%.*s'", af->target.n, af->target.p);
    return;
  }
  fd->target = b->fn;
  if (kind == XF_CUSTOM_JVP) {
    if (!custom_define(cx, fd)) fd->target = NULL;
    return;
  }
  if (!xform_params(cx, fd)) { fd->target = NULL; return; }
  /* make g from the instance the target already has (an annotated
     function has one from its definition) */
  Instance *i = preferred_instance(b->fn->inst, cx->mesh);
  if (!i) return;
  IrFunc *f = i->ir;
  int n;
  Type *args;
  if (kind == XF_TRANSPOSE) args = transpose_args(cx, fd, f, &n);
  else {
    args = NEWN(cx->C, Type, 2 * f->nparams + f->nouts);
    for (int k = 0; k < f->nparams; k++) args[k] = f->params[k]->t;
    n = f->nparams + extra_types(fd, f, args + f->nparams);
  }
  Ctx sub = *cx;
  sub.mesh = i->mesh;
  sub.ctrl = i->ctrl;
  xform_instance(&sub, fd, args, n, af->sp);
}
