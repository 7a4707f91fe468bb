/*
** check_body.c — the scalar functions primitives carry: reduce_window's
** `jaxpr` (its body: accumulators and elements in, accumulators out) and
** scatter's `update_jaxpr` when it is a function of its own
** (jax.lax.scatter_apply: the function applied to each scattered element).
**
** The function is checked for scalar arguments of the operands' dtypes,
** must run on the kernels alone (local primitives, constants, calls of
** such functions, no value from outside; body.h), and goes into the
** equation's Attrs.fns[0], where the primitive's shape rule and kernel
** find it.
*/
#include "body.h"
#include "check_int.h"
#include "diag.h"

/* The parameter naming prim's function, or NULL for a primitive without
   one (scatter-add and the others: their update_jaxpr, which older JAX
   printed, only repeats what their name says). */
static const char *body_key(int prim) {
  return prim == P_REDUCE_WINDOW ? "jaxpr" : prim == P_SCATTER ? "update_jaxpr" : NULL;
}

/* The dtypes of the function's scalar arguments. */
static int body_types(int prim, const IrAtom *in, int nin, Type *t) {
  int n = prim == P_REDUCE_WINDOW ? nin : 2;
  for (int k = 0; k < n; k++) {
    memset(&t[k], 0, sizeof t[k]);
    const IrAtom *a = prim == P_REDUCE_WINDOW ? &in[k % (nin / 2)] : &in[k ? 2 : 0];
    t[k].dt = a->t.weak && prim == P_SCATTER ? in[0].t.dt : a->t.dt;
  }
  return n;
}

static bool runnable(const IrFunc *f, const char *prim, const char *key, Span sp) {
  const IrStmt *bad = NULL;
  if (body_runnable(f, &bad)) return true;
  const char *what = !bad ? "it returns a value from outside it"
                     : bad->k == IS_PRINT ? "it prints"
                     : bad->k != IS_EQN ? "it has a statement that is not an equation"
                     : bad->prim < 0 ? "it calls a function that reads values from outside it"
                     : prim_table[bad->prim].kernel ? "it reads a value from outside it"
                     : NULL;
  if (what)
    diag_error(bad ? bad->sp : sp, "%s's %s must compute from its arguments alone with local primitives: %s", prim,
               key, what);
  else
    diag_error(bad->sp, "%s's %s must compute from its arguments alone with local primitives, not %s", prim, key,
               prim_table[bad->prim].name);
  return false;
}

bool body_check(Ctx *cx, AstStmt *s, int prim, const IrAtom *in, Attrs *at) {
  const char *key = body_key(prim);
  if (!key) return true;
  PVal *v = NULL;
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, key)) v = pv_unparen(s->params[i]->v);
  if (!v || (v->k != PV_FUNC && v->k != PV_NAME) || (prim == P_REDUCE_WINDOW && s->nargs % 2)) return true;
  if (v->k == PV_NAME && !check_lookup(cx->scope, B_FUNC, v->s)) return true;   /* the rule's message */
  RuleCtx r;
  rule_init(&r, &cx->C->prog.arena, cx->mesh, prim_table[prim].name, s->callee_sp, s->params, s->nparams);
  FuncDef *fd = check_func_param(cx, &r, key, v);
  if (!fd) return false;
  Type *t = NEWN(cx->C, Type, s->nargs + 2);
  int n = body_types(prim, in, s->nargs, t);
  IrFunc *f = check_instantiate(cx, fd, t, n, v->sp);
  if (!f || !runnable(f, prim_table[prim].name, key, v->sp)) return false;
  check_add_fn(cx, at, f);
  return true;
}
