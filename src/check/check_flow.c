/*
** check_flow.c — checking cond, while and fori_loop.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "irbuild.h"
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "show.h"

/* ---- control flow ------------------------------------------------------------------
** cond, while and fori_loop.  Each device runs its own control flow: where
** a cond index, a while predicate or a fori_loop bound varies along some
** axes (pv), the construct's results vary along them too, and its functions
** are checked with those axes in cx->ctrl, so that a collective over them
** inside is refused (the devices of a group would not all reach it).
** Branch results and loop carries that differ only in variance are widened
** to their union (a pbroadcast at the end of the narrower function, shown
** by `show`), where JAX asks the user for a pvary; a loop carry that the
** body returns unchanged keeps its own variance whatever the predicate.
*/

/* Equal dtype and shape (variance aside). */
static bool same_shape_dtype(const Type *a, const Type *b) {
  return a->dt == b->dt && type_same_shape(a, b);
}

/* Instantiate `fd` under extra control variance `pv`, its results widened
   to `outvma` when not NULL. */
static IrFunc *inst_ctrl(Ctx *cx, FuncDef *fd, const Type *args, int nargs, uint32_t pv, const uint32_t *outvma,
                         int noutvma, Span sp) {
  uint32_t saved = cx->ctrl;
  cx->ctrl |= pv;
  IrFunc *f = check_instantiate_w(cx, fd, args, nargs, outvma, noutvma, sp);
  cx->ctrl = saved;
  return f;
}

static void describe_type_list(Ctx *cx, Buf *b, const Type *t, int n) {
  buf_putc(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) buf_puts(b, ", ");
    show_type(b, &t[i], cx->mesh);
  }
  buf_putc(b, ')');
}

/* "fori_loop body must return its carry's types (..), but returns (..)" */
static void carry_mismatch(Ctx *cx, Span sp, const char *what, const Type *carry, int n, const IrFunc *f) {
  Buf b0 = {0}, b1 = {0};
  err_defer(buf_release, &b0);
  err_defer(buf_release, &b1);
  describe_type_list(cx, &b0, carry, n);
  check_describe_types(cx, &b1, f->outs, f->nouts);
  diag_error(sp, "%s must return its carry's types %s, but returns %s", what, buf_cstr(&b0), buf_cstr(&b1));
  err_undefer(&b0);
  buf_free(&b0);
  err_undefer(&b1);
  buf_free(&b1);
}

/* Do f's first n results have the carries' dtypes and shapes? */
static bool prefix_fits(const IrFunc *f, const Type *t, int n) {
  if (f->nouts < n) return false;
  for (int i = 0; i < n; i++)
    if (!same_shape_dtype(&f->outs[i].t, &t[i])) return false;
  return true;
}

/* Do f's results have the carries' dtypes and shapes? */
static bool outs_fit(const IrFunc *f, const Type *t, int n) {
  if (f->nouts != n) return false;
  for (int i = 0; i < n; i++)
    if (!same_shape_dtype(&f->outs[i].t, &t[i])) return false;
  return true;
}

static bool outs_vma_are(const IrFunc *f, const uint32_t *vma, int n) {
  for (int i = 0; i < n; i++)
    if (f->outs[i].t.vma != vma[i]) return false;
  return true;
}

/* Does f return its parameter `p` unchanged as result `k`? */
static bool passes_through(const IrFunc *f, int k, int p) {
  return k < f->nouts && p < f->nparams && f->outs[k].var == f->params[p];
}

/* The same, read from the syntax before the function is checked: result
   k names parameter p, and no statement of the body binds that name again.
   (A carry passed through keeps its value on every device however many
   iterations each runs, so a varying predicate does not make it vary.) */
static bool ast_passes_through(const FuncDef *fd, int k, int p) {
  const AstFunc *af = fd->ast;
  if (af->form == FN_TRANSPOSE || af->has_deco || p >= af->nparams) return false;
  const AstArg *out = NULL;
  if (af->form == FN_LAMBDA) out = k < af->nouts ? af->outs[k] : NULL;
  else
    for (int i = 0; i < af->nbody; i++)
      if (af->body[i]->k == ST_RETURN && k < af->body[i]->nargs) out = af->body[i]->args[k];
  Str name = af->params[p]->name;
  if (!out || out->k != ARG_NAME || !str_eq(out->name, name)) return false;
  for (int i = 0; i < af->nbody; i++) {
    const AstStmt *st = af->body[i];
    for (int j = 0; (st->k == ST_EQN || st->k == ST_LIT) && j < st->nouts; j++)
      if (str_eq(st->outs[j]->name, name)) return false;
  }
  return true;
}

/* The variance set parameter p of a loop function is annotated with, if
   any: a loop's carries start from it, so that a parameter annotated with
   the carry's final variance is not refused in the fixed point's first
   rounds, before the predicate's variance has reached the carry. */
static uint32_t ast_param_vma(Ctx *cx, const FuncDef *fd, int p) {
  const AstFunc *af = fd->ast;
  if (af->form == FN_TRANSPOSE || p >= af->nparams || !af->params[p]->type || !af->params[p]->type->has_vma)
    return 0;
  uint32_t v = 0;
  const AstType *t = af->params[p]->type;
  for (int i = 0; i < t->naxes; i++)
    for (int a = 0; cx->mesh && a < cx->mesh->naxes; a++)
      if (str_eq(cx->mesh->axis[a], t->axes[i])) v |= 1u << a;
  return v;
}

/* "cond branches disagree: A returns (...), B returns (...)" */
static void branches_disagree(Ctx *cx, Span sp, const char *an, const IrFunc *a, const char *bn, const IrFunc *b) {
  Buf b0 = {0}, b1 = {0};
  err_defer(buf_release, &b0);
  err_defer(buf_release, &b1);
  check_describe_types(cx, &b0, a->outs, a->nouts);
  check_describe_types(cx, &b1, b->outs, b->nouts);
  diag_error(sp, "cond branches disagree: %s returns %s, %s returns %s", an, buf_cstr(&b0), bn, buf_cstr(&b1));
  err_undefer(&b0);
  buf_free(&b0);
  err_undefer(&b1);
  buf_free(&b1);
}

/* A branch of JAX 0.1's cond that takes all the operands, passing its own
   n of them, from `first`, to f; its results lifted to the variance sets u. */
static IrFunc *branch_wrapper(Ctx *cx, Span sp, const char *name, IrFunc *f, const Type *args, int nargs, int first,
                              const uint32_t *u) {
  Builder *B = bld_new(&cx->C->prog, name, cx->fn, cx->mesh, sp);
  IrAtom *all = NEWN(cx->C, IrAtom, nargs), *out = NEWN(cx->C, IrAtom, f->nouts);
  for (int i = 0; i < nargs; i++) {
    all[i].var = bld_param(B, str_c("x"), args[i]);
    all[i].t = args[i];
    all[i].sp = sp;
  }
  bld_call(B, f, all + first, f->nparams, out);
  for (int k = 0; k < f->nouts; k++) out[k] = bld_lift(B, out[k], u[k]);
  return bld_finish(B, out, f->nouts);
}

/* JAX 0.1's cond[true_jaxpr, false_jaxpr] pred true_ops... false_ops...:
   as cond[branches=(false, true)] pred ops..., each branch taking its
   own operands from all of them. */
static void flow_cond_old(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  PVal *tv = rule_get(r, "true_jaxpr"), *fv = rule_get(r, "false_jaxpr");
  rule_get(r, "linear");
  if (!tv || !fv) { rule_missing(r, tv ? "false_jaxpr" : "true_jaxpr"); check_bind_bad(cx, s); return; }
  if (!rule_unused(r, "true_jaxpr false_jaxpr linear")) { check_bind_bad(cx, s); return; }
  if (!check_index_operand(cx, &in[0], s->args[0], "the predicate of cond")) { check_bind_bad(cx, s); return; }
  FuncDef *tf = check_func_param(cx, r, "true_jaxpr", tv), *ff = tf ? check_func_param(cx, r, "false_jaxpr", fv) : NULL;
  if (!ff) { check_bind_bad(cx, s); return; }
  int nargs = s->nargs - 1, nt = tf->ast->nparams, nf = ff->ast->nparams;
  if (nt + nf != nargs) {
    rule_error(r, "cond takes the predicate, true_jaxpr's %d operand%s, then false_jaxpr's %d: %d in all, not %d", nt,
               nt == 1 ? "" : "s", nf, nt + nf + 1, s->nargs);
    check_bind_bad(cx, s);
    return;
  }
  if (!check_finish_literals(cx, in + 1, (const AstArg *const *)s->args + 1, nargs)) { check_bind_bad(cx, s); return; }
  Type *args = NEWN(cx->C, Type, nargs);
  for (int i = 0; i < nargs; i++) { in[i + 1].t.weak = false; args[i] = in[i + 1].t; }
  uint32_t pv = in[0].t.vma;
  IrFunc *t = inst_ctrl(cx, tf, args, nt, pv, NULL, 0, s->callee_sp);
  IrFunc *f = t ? inst_ctrl(cx, ff, args + nt, nf, pv, NULL, 0, s->callee_sp) : NULL;
  if (!f) { check_bind_bad(cx, s); return; }
  bool fit = t->nouts == f->nouts;
  for (int i = 0; fit && i < t->nouts; i++) fit = same_shape_dtype(&t->outs[i].t, &f->outs[i].t);
  if (!fit) {
    branches_disagree(cx, s->callee_sp, "true_jaxpr", t, "false_jaxpr", f);
    check_bind_bad(cx, s);
    return;
  }
  int nout = t->nouts;
  uint32_t *u = NEWN(cx->C, uint32_t, nout);
  Type *out = NEWN(cx->C, Type, nout);
  for (int i = 0; i < nout; i++) {
    u[i] = t->outs[i].t.vma | f->outs[i].t.vma;
    out[i] = t->outs[i].t;
    out[i].vma = u[i] | pv;
  }
  check_add_fn(cx, at, branch_wrapper(cx, s->callee_sp, "false_branch", f, args, nargs, nt, u));
  check_add_fn(cx, at, branch_wrapper(cx, s->callee_sp, "true_branch", t, args, nargs, 0, u));
  PVal *canon = NEW(cx->C, PVal);
  canon->k = PV_TUPLE;
  canon->n = 2;
  canon->items = NEWN(cx->C, PVal *, 2);
  canon->items[0] = check_fn_ref(cx, 0);
  canon->items[1] = check_fn_ref(cx, 1);
  rule_record(r, "branches", canon);
  check_emit_special(cx, s, P_COND, at, r, in, s->nargs, out, nout, pv);
}

void flow_cond(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  if (rule_has(r, "true_jaxpr") || rule_has(r, "false_jaxpr")) { flow_cond_old(cx, s, in, r, at); return; }
  PVal *bv = pv_unparen(rule_get(r, "branches"));
  if (!bv) { rule_missing(r, "branches"); check_bind_bad(cx, s); return; }
  rule_get(r, "linear");
  if (!rule_unused(r, "branches")) { check_bind_bad(cx, s); return; }
  if (!check_index_operand(cx, &in[0], s->args[0], "the index of cond")) { check_bind_bad(cx, s); return; }
  PVal *one[1] = {bv};
  PVal **items = bv->k == PV_TUPLE || bv->k == PV_LIST ? bv->items : one;
  int nb = bv->k == PV_TUPLE || bv->k == PV_LIST ? bv->n : 1;
  if (nb < 1) { rule_param_error(r, "branches", "cond needs at least one branch"); check_bind_bad(cx, s); return; }
  int nargs = s->nargs - 1;
  if (!check_finish_literals(cx, in + 1, (const AstArg *const *)s->args + 1, nargs)) { check_bind_bad(cx, s); return; }
  Type *args = NEWN(cx->C, Type, nargs);
  for (int i = 0; i < nargs; i++) { in[i + 1].t.weak = false; args[i] = in[i + 1].t; }
  uint32_t pv = in[0].t.vma;
  FuncDef **fds = NEWN(cx->C, FuncDef *, nb);
  IrFunc **fs = NEWN(cx->C, IrFunc *, nb);
  for (int b = 0; b < nb; b++) {
    fds[b] = check_func_param(cx, r, "branches", items[b]);
    if (!fds[b]) { check_bind_bad(cx, s); return; }
    fs[b] = inst_ctrl(cx, fds[b], args, nargs, pv, NULL, 0, s->callee_sp);
    if (!fs[b]) { check_bind_bad(cx, s); return; }
  }
  /* the branches' results: equal in dtype and shape; their variance sets
     are joined, and a narrower branch is checked again with its results
     widened to the union */
  int nout = fs[0]->nouts;
  uint32_t *u = NEWN(cx->C, uint32_t, nout);
  for (int b = 0; b < nb; b++) {
    bool fit = fs[b]->nouts == nout;
    for (int i = 0; fit && i < nout; i++) fit = same_shape_dtype(&fs[b]->outs[i].t, &fs[0]->outs[i].t);
    if (!fit) {
      char nb[32];
      snprintf(nb, sizeof nb, "branch %d", b);
      branches_disagree(cx, s->callee_sp, "branch 0", fs[0], nb, fs[b]);
      check_bind_bad(cx, s);
      return;
    }
    for (int i = 0; i < nout; i++) u[i] |= fs[b]->outs[i].t.vma;
  }
  PVal *canon = NEW(cx->C, PVal);
  canon->k = PV_TUPLE;
  canon->n = nb;
  canon->items = NEWN(cx->C, PVal *, nb);
  for (int b = 0; b < nb; b++) {
    if (!outs_vma_are(fs[b], u, nout)) {
      fs[b] = inst_ctrl(cx, fds[b], args, nargs, pv, u, nout, s->callee_sp);
      if (!fs[b]) { check_bind_bad(cx, s); return; }
      if (!outs_vma_are(fs[b], u, nout)) {    /* a function that cannot be widened (a transpose) */
        Buf b0 = {0};
        err_defer(buf_release, &b0);
        check_describe_types(cx, &b0, fs[b]->outs, fs[b]->nouts);
        diag_error(s->callee_sp, "cond branches disagree in variance: branch %d returns %s; wrap it in a function "
                   "that applies pvary to its results", b, buf_cstr(&b0));
        err_undefer(&b0);
        buf_free(&b0);
        check_bind_bad(cx, s);
        return;
      }
    }
    check_add_fn(cx, at, fs[b]);
    canon->items[b] = check_fn_ref(cx, b);
  }
  rule_record(r, "branches", canon);
  Type *out = NEWN(cx->C, Type, nout);
  for (int i = 0; i < nout; i++) {
    out[i] = fs[0]->outs[i].t;
    out[i].vma = u[i] | pv;
  }
  check_emit_special(cx, s, P_COND, at, r, in, s->nargs, out, nout, pv);
}

/* A loop's trial rounds, that find the carries' variance: functions are
   checked without judging variance annotations (a binder annotated with
   the final type is no error in a round before the last), and what the
   rounds report is forgotten; the check at the final types reports. */
static int trial_begin(Ctx *cx) {
  cx->C->lenient++;
  return diag_mark();
}

static void trial_end(Ctx *cx, int mark) {
  cx->C->lenient--;
  diag_truncate(mark);
}

/* A loop body checked at the carries' final types (carry[0..n), the last
   n of its nargs parameters), its errors reported: it must return the
   carries' dtypes and shapes, and where it returns a narrower variance
   set it is checked again with its results widened.  vma[] gets the
   carries' sets.  NULL after an error (the statement's results are bound
   bad). */
static IrFunc *final_body(Ctx *cx, AstStmt *s, FuncDef *fd, const Type *args, int nargs, const Type *carry, int n,
                          uint32_t pv, const char *what, uint32_t *vma) {
  IrFunc *f = inst_ctrl(cx, fd, args, nargs, pv, NULL, 0, s->callee_sp);
  if (f && !outs_fit(f, carry, n)) {
    carry_mismatch(cx, s->callee_sp, what, carry, n, f);
    f = NULL;
  }
  for (int k = 0; f && k < n; k++) vma[k] = carry[k].vma;
  if (f && !outs_vma_are(f, vma, n)) {
    f = inst_ctrl(cx, fd, args, nargs, pv, vma, n, s->callee_sp);
    if (f && !outs_vma_are(f, vma, n)) {
      carry_mismatch(cx, s->callee_sp, what, carry, n, f);
      f = NULL;
    }
  }
  if (!f) check_bind_bad(cx, s);
  return f;
}

/* A fori_loop bound: an integer literal, or the name of a scalar integer
   value (invariant or varying) in scope.  *atom is set for a value. */
static bool fori_bound(Ctx *cx, RuleCtx *r, const char *key, int64_t *lit, IrAtom *atom, bool *is_value) {
  PVal *v = pv_unparen(rule_get(r, key));
  *is_value = false;
  if (!v) return rule_missing(r, key);
  if (v->k == PV_INT) {
    *lit = v->i;
    rule_record(r, key, v);
    return true;
  }
  if (v->k != PV_NAME) return rule_param_error(r, key, "parameter '%s' of fori_loop must be an integer or a value's name", key);
  AstArg a;
  memset(&a, 0, sizeof a);
  a.k = ARG_NAME;
  a.sp = v->sp;
  a.name = v->s;
  if (!check_resolve_arg(cx, &a, atom)) { r->failed = true; return false; }
  if (atom->t.bad) { r->failed = true; return false; }
  if (atom->t.rank != 0 || (atom->t.dt != DT_I32 && atom->t.dt != DT_I64)) {
    r->failed = true;
    diag_error(v->sp, "the %s bound of fori_loop must be a scalar integer, but %.*s is %s", key, v->s.n, v->s.p,
               check_type_text(cx, &atom->t));
    return false;
  }
  *is_value = true;
  rule_record(r, key, v);
  return true;
}

/* fori_loop[lower, upper, body=f, reverse] carry...: f(i, carry...) ->
   carry...  Bounds given as values come first among the equation's
   operands (at->i[2] counts them; bit 0 of at->i[3]: lower is one, bit 1:
   upper); literal bounds are at->i[0] and at->i[1]. */
void flow_fori(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  int64_t lo = 0, hi = 0;
  IrAtom blo, bhi;
  bool vlo, vhi;
  if (!fori_bound(cx, r, "lower", &lo, &blo, &vlo) || !fori_bound(cx, r, "upper", &hi, &bhi, &vhi)) {
    check_bind_bad(cx, s);
    return;
  }
  PVal *bv = rule_get(r, "body");
  if (!bv) { rule_missing(r, "body"); check_bind_bad(cx, s); return; }
  bool rev;
  if (!rule_bool(r, "reverse", false, &rev)) { check_bind_bad(cx, s); return; }
  at->b[0] = rev;
  if (!rule_unused(r, "lower upper body reverse")) { check_bind_bad(cx, s); return; }
  int n = s->nargs;
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, n)) { check_bind_bad(cx, s); return; }
  int nbound = vlo + vhi;
  at->i[0] = lo;
  at->i[1] = hi;
  at->i[2] = nbound;
  at->i[3] = (vlo ? 1 : 0) | (vhi ? 2 : 0);
  IrAtom *all = NEWN(cx->C, IrAtom, n + nbound);
  int k0 = 0;
  if (vlo) all[k0++] = blo;
  if (vhi) all[k0++] = bhi;
  /* the index: the bounds' dtype (i64 if either is), varying as they do */
  uint32_t pv = (vlo ? blo.t.vma : 0) | (vhi ? bhi.t.vma : 0);
  Type *args = NEWN(cx->C, Type, n + 1);
  memset(&args[0], 0, sizeof(Type));
  args[0].dt = (vlo && blo.t.dt == DT_I64) || (vhi && bhi.t.dt == DT_I64) ? DT_I64 : DT_I32;
  args[0].vma = pv;
  for (int i = 0; i < n; i++) { in[i].t.weak = false; args[i + 1] = in[i].t; }
  FuncDef *fd = check_func_param(cx, r, "body", bv);
  if (!fd) { check_bind_bad(cx, s); return; }
  Type *carry = args + 1;
  IrFunc *f = NULL;
  /* the carries' variance: the fixed point of what the body makes of them
     (and of the bounds' variance, for a carry the body changes) */
  for (int k = 0; k < n; k++) {
    if (!ast_passes_through(fd, k, k + 1)) carry[k].vma |= pv;
    carry[k].vma |= ast_param_vma(cx, fd, k + 1);
  }
  int mark = trial_begin(cx);
  for (;;) {      /* ends: each round that does not break widens a carry */
    f = inst_ctrl(cx, fd, args, n + 1, pv, NULL, 0, s->callee_sp);
    if (!f || !outs_fit(f, carry, n)) break;      /* the final check says why */
    bool stable = true;
    for (int k = 0; k < n; k++) {
      uint32_t v = carry[k].vma | f->outs[k].t.vma | (passes_through(f, k, k + 1) ? 0 : pv);
      if (v != carry[k].vma) { carry[k].vma = v; stable = false; }
    }
    if (stable) break;
  }
  trial_end(cx, mark);
  uint32_t *cv = NEWN(cx->C, uint32_t, n);
  f = final_body(cx, s, fd, args, n + 1, carry, n, pv, "fori_loop body", cv);
  if (!f) return;
  for (int k = 0; k < n; k++) all[nbound + k] = emit_lift(EM(cx), in[k], cv[k], s->callee_sp);
  check_add_fn(cx, at, f);
  rule_record(r, "body", check_fn_ref(cx, 0));
  check_emit_special(cx, s, P_FORI_LOOP, at, r, all, n + nbound, carry, n, pv);
}

void flow_while(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  int64_t cn, bn;
  if (!rule_int(r, "cond_nconsts", false, 0, &cn) || !rule_int(r, "body_nconsts", false, 0, &bn)) { check_bind_bad(cx, s); return; }
  PVal *cv = rule_get(r, "cond_jaxpr"), *bv = rule_get(r, "body_jaxpr");
  if (!cv) { rule_missing(r, "cond_jaxpr"); check_bind_bad(cx, s); return; }
  if (!bv) { rule_missing(r, "body_jaxpr"); check_bind_bad(cx, s); return; }
  if (!rule_unused(r, "cond_jaxpr body_jaxpr cond_nconsts body_nconsts")) { check_bind_bad(cx, s); return; }
  int n = s->nargs;
  if (cn < 0 || bn < 0 || cn + bn > n) {
    rule_error(r, "while has %d operand%s, fewer than cond_nconsts + body_nconsts = %lld", n, n == 1 ? "" : "s", (long long)(cn + bn));
    check_bind_bad(cx, s);
    return;
  }
  at->i[0] = cn;
  at->i[1] = bn;
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, n)) { check_bind_bad(cx, s); return; }
  for (int i = 0; i < n; i++) in[i].t.weak = false;
  FuncDef *cfd = check_func_param(cx, r, "cond_jaxpr", cv);
  FuncDef *bfd = cfd ? check_func_param(cx, r, "body_jaxpr", bv) : NULL;
  if (!bfd) { check_bind_bad(cx, s); return; }
  int nc = (int)(n - cn - bn);
  IrAtom *carry = in + cn + bn;
  /* ct: cond consts then carries; bt: body consts then carries */
  Type *ct = NEWN(cx->C, Type, cn + nc), *bt = NEWN(cx->C, Type, bn + nc);
  for (int i = 0; i < cn; i++) ct[i] = in[i].t;
  for (int i = 0; i < bn; i++) bt[i] = in[cn + i].t;
  Type *c = bt + bn;                  /* the carries' types, as they settle */
  for (int i = 0; i < nc; i++) c[i] = carry[i].t;
  uint32_t pv = 0;
  IrFunc *cf = NULL, *bf = NULL;
  /* The fixed point, in trial rounds: a varying predicate makes each carry
     the body changes vary too, and what the body returns joins the carry's
     variance; the predicate settles before the body is tried. */
  bool *pt = NEWN(cx->C, bool, nc);
  for (int k = 0; k < nc; k++) {
    pt[k] = ast_passes_through(bfd, k, (int)bn + k);
    c[k].vma |= ast_param_vma(cx, cfd, (int)cn + k) | ast_param_vma(cx, bfd, (int)bn + k);
  }
  int mark = trial_begin(cx);
  bool silent = false;
  for (;;) {      /* ends: each round that does not break widens pv or a carry */
    for (int k = 0; k < nc; k++)
      if (!pt[k]) c[k].vma |= pv;
    for (int i = 0; i < nc; i++) ct[cn + i] = c[i];
    int before = diag_mark();
    cf = inst_ctrl(cx, cfd, ct, (int)cn + nc, pv, NULL, 0, s->callee_sp);
    silent = !cf && diag_mark() == before;       /* a failed value, reported where it failed */
    if (!cf || cf->nouts != 1) break;            /* the final check says why */
    if ((cf->outs[0].t.vma | pv) != pv) {
      pv |= cf->outs[0].t.vma;
      continue;
    }
    bf = inst_ctrl(cx, bfd, bt, (int)bn + nc, pv, NULL, 0, s->callee_sp);
    if (!bf || !outs_fit(bf, c, nc)) break;
    bool stable = true;
    for (int k = 0; k < nc; k++) {
      uint32_t v = c[k].vma | bf->outs[k].t.vma | (passes_through(bf, k, (int)bn + k) ? 0 : pv);
      if (v != c[k].vma) { c[k].vma = v; stable = false; }
    }
    if (stable) break;
  }
  trial_end(cx, mark);
  /* A predicate that reads a failed value has no variance to speak of:
     the functions are still checked, for their own errors, but not their
     variance annotations, and the loop's results are bad (silently: the
     failed value's statement has its error). */
  if (silent) {
    cx->C->lenient++;
    for (int i = 0; i < nc; i++) ct[cn + i] = c[i];
    inst_ctrl(cx, cfd, ct, (int)cn + nc, pv, NULL, 0, s->callee_sp);
    inst_ctrl(cx, bfd, bt, (int)bn + nc, pv, NULL, 0, s->callee_sp);
    cx->C->lenient--;
    check_bind_bad(cx, s);
    return;
  }
  /* the functions at the carries' final types, their errors reported */
  for (int i = 0; i < nc; i++) ct[cn + i] = c[i];
  cf = inst_ctrl(cx, cfd, ct, (int)cn + nc, pv, NULL, 0, s->callee_sp);
  if (!cf) { check_bind_bad(cx, s); return; }
  if (cf->nouts != 1 || cf->outs[0].t.rank != 0 || cf->outs[0].t.dt != DT_BOOL) {
    Buf b = {0};
    err_defer(buf_release, &b);
    check_describe_types(cx, &b, cf->outs, cf->nouts);
    diag_error(s->callee_sp, "while's cond_jaxpr must return one bool[], not %s", buf_cstr(&b));
    err_undefer(&b);
    buf_free(&b);
    check_bind_bad(cx, s);
    return;
  }
  uint32_t *cvma = NEWN(cx->C, uint32_t, nc);
  bf = final_body(cx, s, bfd, bt, (int)bn + nc, c, nc, pv, "while's body_jaxpr", cvma);
  if (!bf) return;
  for (int i = 0; i < nc; i++) carry[i] = emit_lift(EM(cx), carry[i], cvma[i], s->callee_sp);
  check_add_fn(cx, at, cf);
  check_add_fn(cx, at, bf);
  rule_record(r, "cond_jaxpr", check_fn_ref(cx, 0));
  rule_record(r, "body_jaxpr", check_fn_ref(cx, 1));
  check_emit_special(cx, s, P_WHILE, at, r, in, n, c, nc, pv);
}


/* scan[jaxpr=f, num_consts, num_carry, length, reverse] consts... carry...
   xs...: f(consts..., carry..., x...) -> (carry..., y...), x the slices of
   the xs along their first dimension (length of them), the ys stacked
   along a new first one.  Attrs: i[0] num_consts, i[1] num_carry, i[2]
   length, b[0] reverse.  JAX's older `forward=True` is reverse=False. */
void flow_scan(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  int64_t nc, ncar, len = -1;
  bool rev = false, fwd = true;
  PVal *jv = rule_get(r, "jaxpr");
  if (!jv) { rule_missing(r, "jaxpr"); check_bind_bad(cx, s); return; }
  PVal *fv = pv_unparen(rule_get(r, "forward"));
  if (fv && fv->k != PV_BOOL) { rule_param_error(r, "forward", "forward must be True or False"); check_bind_bad(cx, s); return; }
  if (fv) fwd = fv->i != 0;
  if (!rule_int(r, "num_consts", false, 0, &nc) || !rule_int(r, "num_carry", true, 0, &ncar) ||
      !rule_bool(r, "reverse", !fwd, &rev)) {
    check_bind_bad(cx, s);
    return;
  }
  bool has_len = rule_has(r, "length");
  if (has_len && !rule_int(r, "length", true, 0, &len)) { check_bind_bad(cx, s); return; }
  rule_get(r, "linear");
  rule_get(r, "unroll");
  rule_get(r, "_split_transpose");
  rule_get(r, "jaxpr");
  if (!rule_unused(r, "jaxpr length reverse num_consts num_carry linear unroll _split_transpose")) {
    check_bind_bad(cx, s);
    return;
  }
  int n = s->nargs;
  if (nc < 0 || ncar < 0 || nc + ncar > n) {
    rule_error(r, "scan has %d operand%s, fewer than num_consts + num_carry = %lld", n, n == 1 ? "" : "s",
               (long long)(nc + ncar));
    check_bind_bad(cx, s);
    return;
  }
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, n)) { check_bind_bad(cx, s); return; }
  int nx = n - (int)nc - (int)ncar;
  Type *args = NEWN(cx->C, Type, n);
  for (int i = 0; i < n; i++) { in[i].t.weak = false; args[i] = in[i].t; }
  for (int i = 0; i < nx; i++) {        /* the xs: their slices */
    Type *x = &args[nc + ncar + i];
    if (x->rank == 0 || (len >= 0 && x->shape[0] != len)) {
      diag_error(in[nc + ncar + i].sp, "scan's xs must have a first dimension of size %s%lld, but operand %lld is %s",
                 len >= 0 ? "length = " : "", (long long)(len >= 0 ? len : 0), (long long)(nc + ncar + i + 1),
                 check_type_text(cx, x));
      check_bind_bad(cx, s);
      return;
    }
    if (len < 0) len = x->shape[0];
    x->rank--;
    for (int d = 0; d < x->rank; d++) x->shape[d] = x->shape[d + 1];
  }
  if (len < 0) { rule_error(r, "scan without xs needs the parameter 'length'"); check_bind_bad(cx, s); return; }
  at->i[0] = nc;
  at->i[1] = ncar;
  at->i[2] = len;
  at->b[0] = rev;
  FuncDef *fd = check_func_param(cx, r, "jaxpr", jv);
  if (!fd) { check_bind_bad(cx, s); return; }
  Type *carry = args + nc;
  IrFunc *f = NULL;
  int mark = trial_begin(cx);
  for (;;) {      /* the carries' variance: what the body makes of them */
    f = inst_ctrl(cx, fd, args, n, 0, NULL, 0, s->callee_sp);
    if (!f || !prefix_fits(f, carry, (int)ncar)) break;
    bool stable = true;
    for (int k = 0; k < ncar; k++) {
      uint32_t v = carry[k].vma | f->outs[k].t.vma;
      if (v != carry[k].vma) { carry[k].vma = v; stable = false; }
    }
    if (stable) break;
  }
  trial_end(cx, mark);
  f = inst_ctrl(cx, fd, args, n, 0, NULL, 0, s->callee_sp);
  if (!f) { check_bind_bad(cx, s); return; }
  if (!prefix_fits(f, carry, (int)ncar)) {
    carry_mismatch(cx, s->callee_sp, "scan's jaxpr", carry, (int)ncar, f);
    check_bind_bad(cx, s);
    return;
  }
  int nout = f->nouts;
  uint32_t *cv = NEWN(cx->C, uint32_t, nout);
  for (int k = 0; k < nout; k++) cv[k] = k < ncar ? carry[k].vma : f->outs[k].t.vma;
  if (!outs_vma_are(f, cv, nout)) {
    f = inst_ctrl(cx, fd, args, n, 0, cv, nout, s->callee_sp);
    if (!f) { check_bind_bad(cx, s); return; }
    if (!outs_vma_are(f, cv, nout)) { carry_mismatch(cx, s->callee_sp, "scan's jaxpr", carry, (int)ncar, f); check_bind_bad(cx, s); return; }
  }
  for (int k = 0; k < ncar; k++) in[nc + k] = emit_lift(EM(cx), in[nc + k], cv[k], s->callee_sp);
  Type *out = NEWN(cx->C, Type, nout);
  for (int k = 0; k < nout; k++) {
    out[k] = f->outs[k].t;
    if (k < ncar) continue;
    if (out[k].rank >= SHM_MAXRANK) { rule_error(r, "scan's stacked result %d has too high a rank", k); check_bind_bad(cx, s); return; }
    for (int d = out[k].rank; d > 0; d--) out[k].shape[d] = out[k].shape[d - 1];
    out[k].shape[0] = len;
    out[k].rank++;
  }
  check_add_fn(cx, at, f);
  rule_record(r, "jaxpr", check_fn_ref(cx, 0));
  rule_record(r, "length", rule_pv_int(r, len));
  check_emit_special(cx, s, P_SCAN, at, r, in, n, out, nout, 0);
}
