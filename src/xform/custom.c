/*
** custom.c — the JVP of custom_jvp_call and custom_vjp_call, and of the
** calls `def f = custom_jvp g g_jvp` makes (docs/language.md, "Custom
** derivative rules"); its interface is in jvp_int.h, beside the rules of
** the primitives.
**
** A jaxpr carries a custom rule only as the name of a Python function, so
** a pasted custom_jvp_call of a function JAX itself defines with a rule
** is recognised by its name (`name=relu`, or the jitted function its
** call_jaxpr calls in older JAX), checked against what the rule expects
** of the call, and given JAX's rule, written here as equations.  Any
** other custom call is differentiated through its primal function, with
** a warning (once per equation) naming the function.  A call made by
** custom_jvp applies the attached rule.  The JVP the rules make goes
** through linearize and transpose as any other (jvp, grad, vjp,
** value_and_grad all see it); the primal stays a custom call, so a second
** differentiation applies the rule again.
**
** Each known rule is the formula of JAX's defjvp for the function
** (jax/_src/nn/functions.py, lax/other.py, numpy/ufuncs.py,
** scipy/special.py), applied only when the call looks as the rule
** expects (operand and result count, dtypes, shapes).
*/
#include <math.h>
#include <stdio.h>
#include "jvp_int.h"
#include "diag.h"
#include "rule.h"

bool cust_is_custom(const IrStmt *st) {
  return st->prim < 0 && (st->via == P_CUSTOM_JVP_CALL + 1 || st->via == P_CUSTOM_VJP_CALL + 1);
}

/* ---- the function's name ------------------------------------------------------------ */

static Str pv_text(const PVal *v) {
  if (v && (v->k == PV_NAME || v->k == PV_STR)) return v->s;
  return str_c("");
}

/* The only equation of g, or NULL. */
static const IrStmt *only_eqn(const IrFunc *g) {
  const IrStmt *one = NULL;
  for (int i = 0; i < g->nbody; i++) {
    if (g->body[i]->k != IS_EQN) continue;
    if (one) return NULL;
    one = g->body[i];
  }
  return one;
}

/* The name JAX printed (name=relu, JAX 0.6.1 on), else that of the jitted
   function the primal function is a call of (pjit[name=relu], older JAX);
   empty when neither is written. */
static Str cust_name(const IrStmt *st) {
  Str n = pv_text(rule_stmt_param(st, "name"));
  if (n.n) return n;
  const IrStmt *one = only_eqn(st->callee);
  if (one && one->prim < 0 && (one->via == P_PJIT + 1 || one->via == P_XLA_CALL + 1))
    return pv_text(rule_stmt_param(one, "name"));
  return n;
}

/* ---- the context of a rule ------------------------------------------------------------ */

#define X(i) (cx->in[i])
#define G(i) (cx->tin[i])
#define Y (cx->out[0])
#define BIN(p, a, b) jv_bin(cx, p, a, b)
#define UN(p, a) jv_un(cx, p, a)
#define K(a, v) jv_lit(cx, (a).t.dt, v)

/* Sum of terms, for rules of the form sum_k g_k * partial_k. */
typedef IrAtom (*TermFn)(JvpCx *cx, int k);

static void by_terms(JvpCx *cx, TermFn term) {
  IrAtom s;
  bool has = false;
  memset(&s, 0, sizeof s);
  for (int k = 0; k < cx->st->nin && !cx->J->R->failed; k++) {
    if (!cx->has[k]) continue;
    IrAtom t = term(cx, k);
    s = has ? BIN(P_ADD, s, t) : t;
    has = true;
  }
  if (has) jv_set(cx, 0, s);
}

/* ---- JAX's rules --------------------------------------------------------------------------- */

/* relu: select(x > 0, g, 0) (the derivative at 0 is 0). */
static void rule_relu(JvpCx *cx) { jv_set(cx, 0, jv_sel(cx, BIN(P_GT, X(0), K(X(0), 0)), G(0), K(G(0), 0))); }

/* relu6: select(0 < x < 6, g, 0). */
static void rule_relu6(JvpCx *cx) {
  IrAtom in = BIN(P_AND, BIN(P_GT, X(0), K(X(0), 0)), BIN(P_LT, X(0), K(X(0), 6)));
  jv_set(cx, 0, jv_sel(cx, in, G(0), K(G(0), 0)));
}

/* log1mexp: g / expm1(x). */
static void rule_log1mexp(JvpCx *cx) { jv_set(cx, 0, BIN(P_DIV, G(0), UN(P_EXPM1, X(0)))); }

/* logit: g / (x (1 - x)). */
static void rule_logit(JvpCx *cx) {
  jv_set(cx, 0, BIN(P_DIV, G(0), BIN(P_MUL, X(0), BIN(P_SUB, K(X(0), 1), X(0)))));
}

/* _xlogx (entr): g (log x + 1). */
static void rule_xlogx(JvpCx *cx) { jv_set(cx, 0, BIN(P_MUL, G(0), BIN(P_ADD, UN(P_LOG, X(0)), K(X(0), 1)))); }

/* _sinc_maclaurin(k, x) for an even k: _sinc_maclaurin(k + 1, x) g, and
   the k + 1 term is x * 0. */
static void rule_sinc(JvpCx *cx) { jv_set(cx, 0, BIN(P_MUL, BIN(P_MUL, X(0), K(X(0), 0)), G(0))); }

/* _replace_inf: 0 where v is +inf. */
static IrAtom replace_inf(JvpCx *cx, IrAtom v) { return jv_sel(cx, BIN(P_EQ, v, K(v, INFINITY)), K(v, 0), v); }

/* logaddexp: g1 exp(x1 - y) + g2 exp(x2 - y), +inf replaced by 0. */
static IrAtom lae_term(JvpCx *cx, int k) {
  return BIN(P_MUL, G(k), UN(P_EXP, BIN(P_SUB, replace_inf(cx, X(k)), replace_inf(cx, Y))));
}
static void rule_logaddexp(JvpCx *cx) { by_terms(cx, lae_term); }

/* logaddexp2: the same with exp2. */
static IrAtom lae2_term(JvpCx *cx, int k) {
  return BIN(P_MUL, G(k), UN(P_EXP2, BIN(P_SUB, replace_inf(cx, X(k)), replace_inf(cx, Y))));
}
static void rule_logaddexp2(JvpCx *cx) { by_terms(cx, lae2_term); }

/* xlogy: gx log y + gy x / y. */
static IrAtom xlogy_term(JvpCx *cx, int k) {
  return k == 0 ? BIN(P_MUL, G(0), UN(P_LOG, X(1))) : BIN(P_DIV, BIN(P_MUL, G(1), X(0)), X(1));
}
static void rule_xlogy(JvpCx *cx) { by_terms(cx, xlogy_term); }

/* xlog1py: gx log1p y + gy x / (1 + y). */
static IrAtom xlog1py_term(JvpCx *cx, int k) {
  return k == 0 ? BIN(P_MUL, G(0), UN(P_LOG1P, X(1)))
                : BIN(P_DIV, BIN(P_MUL, G(1), X(0)), BIN(P_ADD, K(X(1), 1), X(1)));
}
static void rule_xlog1py(JvpCx *cx) { by_terms(cx, xlog1py_term); }

/* The first reduce_sum of g, through the calls it makes, or NULL. */
static const IrStmt *first_sum(const IrFunc *g) {
  for (int i = 0; i < g->nbody; i++) {
    const IrStmt *st = g->body[i];
    if (st->k != IS_EQN) continue;
    if (st->prim == P_REDUCE_SUM) return st;
    const IrStmt *in = st->prim < 0 ? first_sum(st->callee) : NULL;
    if (in) return in;
  }
  return NULL;
}

/* Is t one of the dims l[0..n)? */
static bool has_dim(const int64_t *l, int n, int64_t d) {
  for (int i = 0; i < n; i++)
    if (l[i] == d) return true;
  return false;
}

/* _softmax(x, axis, where, initial): y (g - sum(y g, axis, where, keepdims)). */
static void rule_softmax(JvpCx *cx) {
  Builder *B = cx->J->B;
  const Type *t = &X(0).t;
  int64_t ax[SHM_MAXRANK], keep[SHM_MAXRANK];
  int na = rule_read_ints(rule_stmt_param(first_sum(cx->st->callee), "axes"), ax, SHM_MAXRANK), nk = 0;
  for (int d = 0; d < t->rank; d++)
    if (!has_dim(ax, na, d)) keep[nk++] = d;
  IrAtom yg = BIN(P_MUL, Y, G(0));
  if (cx->st->nin >= 2 && X(1).t.dt == DT_BOOL) yg = jv_sel(cx, X(1), yg, K(yg, 0));
  IrParam rp[1] = {{"axes", bld_pv_ints(B, ax, na)}};
  IrAtom s = jv_emit(cx, P_REDUCE_SUM, rp, 1, &yg, 1);
  IrParam bp[2] = {{"shape", bld_pv_ints(B, t->shape, t->rank)}, {"broadcast_dimensions", bld_pv_ints(B, keep, nk)}};
  IrAtom wide = jv_emit(cx, P_BROADCAST_IN_DIM, bp, 2, &s, 1);
  jv_set(cx, 0, BIN(P_MUL, Y, BIN(P_SUB, G(0), wide)));
}

/* ---- what each rule expects of the call ---------------------------------------------------- */

static bool is_float(const Type *t) { return jvp_has_tangent(t->dt) && !dtype_is_complex((DType)t->dt); }

/* One floating operand, one result of its type. */
static bool fit_unary(const IrStmt *st) {
  return st->nin == 1 && st->nout == 1 && is_float(&st->in[0].t) && st->out[0]->t.dt == st->in[0].t.dt &&
         type_same_shape(&st->out[0]->t, &st->in[0].t);
}

/* Two floating operands of the result's dtype, each of its shape or a
   scalar. */
static bool fit_binary(const IrStmt *st) {
  if (st->nin != 2 || st->nout != 1 || !is_float(&st->out[0]->t)) return false;
  for (int k = 0; k < 2; k++) {
    const Type *t = &st->in[k].t;
    if (t->dt != st->out[0]->t.dt || (t->rank && !type_same_shape(t, &st->out[0]->t))) return false;
  }
  return true;
}

/* _sinc_maclaurin(k, x) with k even: its primal function ends in
   `add (mul x 0.0) c` with c = (-1)^(k/2) / (k + 1).  An odd k (x * 0)
   does not say which k it is, nor what the rule gives. */
static bool fit_sinc(const IrStmt *st) {
  if (!fit_unary(st)) return false;
  const IrFunc *g = st->callee;
  while (g->nbody && only_eqn(g) && only_eqn(g)->prim < 0) g = only_eqn(g)->callee;
  const IrStmt *last = NULL;
  for (int i = 0; i < g->nbody; i++)
    if (g->body[i]->k == IS_EQN) last = g->body[i];
  if (!last || last->prim != P_ADD || last->nin != 2) return false;
  const IrAtom *c = last->in[1].lit ? &last->in[1] : last->in[0].lit ? &last->in[0] : NULL;
  if (!c) return false;
  double v = arr_getf(c->lit, 0);
  if (v == 0) return false;
  double k1 = 1 / fabs(v);                                  /* k + 1 */
  long k = lround(k1) - 1;
  return k >= 0 && k % 2 == 0 && fabs(k1 - (double)(k + 1)) < 1e-3 * k1 && ((k / 2) % 2 == 0) == (v > 0);
}

/* x, then optionally `where` (booleans of x's shape) and `initial` (a
   scalar); one result of x's type; a reduce_sum in the primal function
   (its axes are softmax's). */
static bool fit_softmax(const IrStmt *st) {
  if (st->nin < 1 || st->nin > 3 || st->nout != 1 || !is_float(&st->in[0].t)) return false;
  const Type *x = &st->in[0].t, *y = &st->out[0]->t;
  if (y->dt != x->dt || !type_same_shape(x, y) || !first_sum(st->callee)) return false;
  for (int k = 1; k < st->nin; k++) {
    const Type *t = &st->in[k].t;
    bool where = k == 1 && t->dt == DT_BOOL && type_same_shape(t, x);
    bool initial = t->rank == 0 && t->dt == x->dt;
    if (!where && !initial) return false;
  }
  return true;
}

typedef struct Known {
  const char *name;
  bool (*fit)(const IrStmt *st);
  void (*rule)(JvpCx *cx);
  const char *expects;
} Known;

#define UNARY_EXPECTS "one floating-point operand and one result of its type"
#define BINARY_EXPECTS "two floating-point operands and one result of their dtype"

static const Known known[] = {
    {"relu", fit_unary, rule_relu, UNARY_EXPECTS},
    {"relu6", fit_unary, rule_relu6, UNARY_EXPECTS},
    {"log1mexp", fit_unary, rule_log1mexp, UNARY_EXPECTS},
    {"logit", fit_unary, rule_logit, UNARY_EXPECTS},
    {"_xlogx", fit_unary, rule_xlogx, UNARY_EXPECTS},
    {"_sinc_maclaurin", fit_sinc, rule_sinc,
     "one floating-point operand, one result of its type, and the term of an even order (x * 0 + c)"},
    {"logaddexp", fit_binary, rule_logaddexp, BINARY_EXPECTS},
    {"logaddexp2", fit_binary, rule_logaddexp2, BINARY_EXPECTS},
    {"xlogy", fit_binary, rule_xlogy, BINARY_EXPECTS},
    {"xlog1py", fit_binary, rule_xlog1py, BINARY_EXPECTS},
    {"_softmax", fit_softmax, rule_softmax,
     "a floating-point operand (then where and initial), one result of its type, and a reduce_sum over the axes"},
};

/* The known rule for st, or NULL after the warning that it has none. */
static const Known *find_rule(const IrStmt *st) {
  Str name = cust_name(st);
  bool vjp = st->via == P_CUSTOM_VJP_CALL + 1;
  Str kind = st->via_name.n ? st->via_name : str_c(vjp ? "custom_vjp_call" : "custom_jvp_call");
  for (size_t i = 0; !vjp && i < sizeof known / sizeof *known; i++) {
    if (!str_eqc(name, known[i].name)) continue;
    if (known[i].fit(st)) return &known[i];
    diag_warning(st->sp, "%.*s of '%s': JAX's rule for %s expects %s, and this call does not fit it, so its primal "
                 "function is differentiated instead (the derivative may differ from JAX's)", kind.n, kind.p, known[i].name,
                 known[i].name, known[i].expects);
    return NULL;
  }
  if (name.n)
    diag_warning(st->sp, "%.*s of '%.*s': its custom %s rule is Python code the jaxpr does not carry, so its primal "
                 "function is differentiated instead (the derivative may differ from JAX's)", kind.n, kind.p, name.n, name.p,
                 vjp ? "VJP" : "JVP");
  else
    diag_warning(st->sp, "%.*s of a function the jaxpr does not name: its custom %s rule is Python code the jaxpr "
                 "does not carry, so its primal function is differentiated instead (the derivative may differ from "
                 "JAX's)", kind.n, kind.p, vjp ? "VJP" : "JVP");
  return NULL;
}

/* ---- the JVP --------------------------------------------------------------------------------- */

/* The primal: a copy of the call (it keeps its rule), or, when its
   function reads values of the functions being differentiated, the
   function inlined.  cx->out gets the results. */
static void primal_copy(Jv *J, const IrStmt *st, JvpCx *cx) {
  if (jv_reads_locals(J, st)) {
    jv_inline(J, st, st->callee);
    for (int j = 0; j < st->nout; j++) {
      IrAtom a = ir_var_atom(st->out[j]);
      cx->out[j] = jv_atom(J, &a, NULL, NULL);
    }
    return;
  }
  IrAtom *ins = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(st->nin + 1));
  memcpy(ins, cx->in, sizeof(IrAtom) * (size_t)st->nin);
  if (!bld_copy(J->B, st, ins, cx->out)) J->R->failed = true;
}

/* A rule the program attached (check_custom.c): g_jvp, inlined on the primals
   and a tangent per floating operand (zeros where it has none); its
   results are the primal results, then a tangent per floating result. */
static void user_rule(Jv *J, const IrStmt *st, JvpCx *cx) {
  IrFunc *r = st->at->fns[1];
  IrAtom *args = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(2 * st->nin + 1));
  IrAtom *outs = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(r->nouts + 1));
  int n = 0;
  for (int k = 0; k < st->nin; k++) args[n++] = cx->in[k];
  for (int k = 0; k < st->nin; k++) {
    if (!jvp_has_tangent(st->in[k].t.dt)) continue;
    Type z = st->in[k].t;
    z.weak = false;
    args[n++] = cx->has[k] ? cx->tin[k] : bld_zeros(J->B, &z);
  }
  if (jv_reads_locals(J, st)) {
    jv_error(cx, "the rule %s of this custom_jvp reads values of the function being differentiated through a "
             "closure: define it where it reads none", r->name);
    return;
  }
  if (!bld_inline(J->B, r, args, outs)) { J->R->failed = true; return; }
  int m = st->nout;
  for (int j = 0; j < st->nout; j++) {
    cx->out[j] = outs[j];
    if (jvp_has_tangent(st->out[j]->t.dt)) {
      cx->tout[j] = outs[m++];
      cx->hout[j] = true;
    }
  }
}

void cust_jvp(Jv *J, const IrStmt *st) {
  JvpCx cx;
  memset(&cx, 0, sizeof cx);
  cx.J = J;
  cx.st = st;
  int n = st->nin, nout = st->nout;
  cx.in = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(n + 1));
  cx.tin = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(n + 1));
  cx.has = bld_alloc(J->B, sizeof(bool) * (size_t)(n + 1));
  cx.out = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(nout + 1));
  cx.tout = bld_alloc(J->B, sizeof(IrAtom) * (size_t)(nout + 1));
  cx.hout = bld_alloc(J->B, sizeof(bool) * (size_t)(nout + 1));
  bool any = false;
  for (int k = 0; k < n; k++) {
    cx.in[k] = jv_atom(J, &st->in[k], &cx.tin[k], &cx.has[k]);
    any |= cx.has[k];
  }
  if (any && st->at && st->at->nfns >= 2) {
    user_rule(J, st, &cx);
  } else {
    const Known *k = any ? find_rule(st) : NULL;
    if (any && !k) { jv_inline(J, st, st->callee); return; }
    primal_copy(J, st, &cx);
    if (k && !J->R->failed) k->rule(&cx);
  }
  if (J->R->failed) return;
  for (int j = 0; j < nout; j++) {
    bool h = cx.hout[j] && jvp_has_tangent(st->out[j]->t.dt);
    if (h) jv_name(J, &cx.tout[j], st->out[j]->name);
    jv_bind(J, st->out[j], cx.out[j], h ? &cx.tout[j] : NULL);
  }
}
