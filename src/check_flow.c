/*
** check_flow.c — checking cond, while and fori_loop.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

void flow_cond(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
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
      Buf b0 = {0}, b1 = {0};
      err_defer(buf_release, &b0);
      err_defer(buf_release, &b1);
      check_describe_types(cx, &b0, fs[0]->outs, fs[0]->nouts);
      check_describe_types(cx, &b1, fs[b]->outs, fs[b]->nouts);
      diag_error(s->callee_sp, "cond branches disagree: branch 0 returns %s, branch %d returns %s",
                 buf_cstr(&b0), b, buf_cstr(&b1));
      err_undefer(&b0);
      buf_free(&b0);
      err_undefer(&b1);
      buf_free(&b1);
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

