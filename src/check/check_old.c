/*
** check_old.c — the primitives older JAX versions printed that today's
** JAX spells otherwise, read as the primitive that replaced them:
**
**   select p t f                  (JAX <= 0.2)  select_n p f t: the operand
**                                 order differs (select_n's case 0 is false)
**   tie_in a b                    (JAX <= 0.2)  b: tie_in only tied b to a's
**                                 trace, its value is b's
**   broadcast[sizes=(s...)] x     (JAX <= 0.4)  broadcast_in_dim[shape=
**                                 (s..., x's shape), broadcast_dimensions=
**                                 (the last rank(x) dimensions)] x
**
** The statement is rewritten before it is checked, so every rule, error,
** transformation and `show` is the replacement's (show prints today's
** spelling).  A function the program defines under one of these names is
** called as usual: check_eqn tries functions first.
*/
#include <stdio.h>
#include "check_int.h"
#include "diag.h"

static AstStmt *copy_stmt(Ctx *cx, const AstStmt *s, const char *callee) {
  AstStmt *n = NEW(cx->C, AstStmt);
  *n = *s;
  n->callee = str_c(callee);
  return n;
}

/* select p t f: select_n p f t.  JAX's select took a boolean predicate
   only (select_n takes an integer index too). */
static AstStmt *old_select(Ctx *cx, AstStmt *s, bool *done) {
  *done = true;
  Binding *b = s->nargs == 3 && s->args[0]->k == ARG_NAME ? check_lookup(cx->scope, B_VAR, s->args[0]->name) : NULL;
  if (s->nargs != 3) {
    diag_error(s->callee_sp, "select takes 3 operands (predicate, on_true, on_false), but %d %s given", s->nargs,
               s->nargs == 1 ? "was" : "were");
  } else if (s->nparams) {
    diag_error(s->params[0]->sp, "select takes no parameters");
  } else if (b && !b->var->t.bad && b->var->t.dt != DT_BOOL) {
    diag_error(s->args[0]->sp, "select's predicate must be boolean, got %s", check_type_text(cx, &b->var->t));
  } else {
    AstStmt *n = copy_stmt(cx, s, "select_n");
    n->args = NEWN(cx->C, AstArg *, 3);
    n->args[0] = s->args[0];
    n->args[1] = s->args[2];
    n->args[2] = s->args[1];
    *done = false;
    return n;
  }
  check_bind_bad(cx, s);
  return s;
}

/* tie_in a b: the value b (a must still name a value).  A name is bound
   to b's value, as `y = b` binds it; a literal becomes `copy b`. */
static AstStmt *old_tie_in(Ctx *cx, AstStmt *s, bool *done) {
  *done = true;
  IrAtom a, b;
  if (s->nargs != 2 || s->nparams) {
    diag_error(s->callee_sp, "tie_in takes two operands and no parameters (tie_in a b is b)");
  } else if (!check_resolve_arg(cx, s->args[0], &a)) {
    /* reported */
  } else if (s->args[1]->k != ARG_NAME) {
    AstStmt *n = copy_stmt(cx, s, "copy");
    n->args = s->args + 1;
    n->nargs = 1;
    *done = false;
    return n;
  } else if (s->nouts != 1) {
    diag_error(s->callee_sp, "tie_in gives 1 result, but %d names are bound", s->nouts);
  } else if (check_resolve_arg(cx, s->args[1], &b)) {
    Type t = b.t;
    if (!b.t.bad && check_annotation(cx, s->outs[0], &t, "tie_in")) {
      if (!str_eqc(s->outs[0]->name, "_")) {
        cx->scope = check_bind(cx->C, cx->scope, B_VAR, s->outs[0]->name);
        cx->scope->var = b.var;
      }
      return s;
    }
  }
  check_bind_bad(cx, s);
  return s;
}

static PVal *pv_new(Ctx *cx, PVKind k, Span sp) {
  PVal *v = NEW(cx->C, PVal);
  memset(v, 0, sizeof *v);
  v->k = k;
  v->sp = sp;
  return v;
}

static PVal *pv_ints(Ctx *cx, const int64_t *x, int n, Span sp) {
  PVal *t = pv_new(cx, PV_TUPLE, sp);
  t->items = NEWN(cx->C, PVal *, n);
  t->n = n;
  for (int i = 0; i < n; i++) {
    t->items[i] = pv_new(cx, PV_INT, sp);
    t->items[i]->i = x[i];
  }
  return t;
}

static AstParam *param_new(Ctx *cx, const char *key, PVal *v, Span sp) {
  AstParam *p = NEW(cx->C, AstParam);
  p->key = str_c(key);
  p->sp = sp;
  p->v = v;
  return p;
}

/* The operand's rank and shape, when it names a value or is a literal;
   false when it names nothing (the checker then reports the name). */
static bool operand_shape(Ctx *cx, const AstArg *a, int *rank, int64_t *shape) {
  if (a->k != ARG_NAME) { *rank = 0; return true; }
  Binding *b = check_lookup(cx->scope, B_VAR, a->name);
  if (!b || b->var->t.bad) return false;
  *rank = b->var->t.rank;
  memcpy(shape, b->var->t.shape, sizeof(int64_t) * (size_t)*rank);
  return true;
}

/* broadcast[sizes=S] x: broadcast_in_dim[shape=S+shape(x),
   broadcast_dimensions=(len(S), ..., len(S)+rank(x)-1)] x. */
static AstStmt *old_broadcast(Ctx *cx, AstStmt *s, bool *done) {
  const AstParam *sz = NULL;
  for (int i = 0; i < s->nparams; i++) {
    if (!str_eqc(s->params[i]->key, "sizes")) {
      diag_error(s->params[i]->sp, "broadcast takes only the parameter 'sizes' (the leading dimensions it adds), not '%.*s'",
                 s->params[i]->key.n, s->params[i]->key.p);
      goto bad;
    }
    sz = s->params[i];
  }
  if (!sz) {
    diag_error(s->callee_sp, "broadcast requires the parameter 'sizes' (the leading dimensions it adds)");
    goto bad;
  }
  if (s->nargs != 1) return copy_stmt(cx, s, "broadcast_in_dim");   /* its count message */
  const PVal *v = pv_unparen(sz->v);
  int64_t shape[2 * SHM_MAXRANK], dims[SHM_MAXRANK];
  int ns = 0, rank;
  if (v->k == PV_INT) shape[ns++] = v->i;
  else if (v->k == PV_TUPLE || v->k == PV_LIST) {
    for (int i = 0; i < v->n; i++) {
      if (v->items[i]->k != PV_INT) {
        diag_error(v->items[i]->sp, "broadcast sizes must be a tuple of integers");
        goto bad;
      }
      if (ns < SHM_MAXRANK) shape[ns] = v->items[i]->i;
      ns++;
    }
  } else {
    diag_error(sz->v->sp, "broadcast sizes must be a tuple of integers");
    goto bad;
  }
  if (!operand_shape(cx, s->args[0], &rank, shape + (ns < SHM_MAXRANK ? ns : SHM_MAXRANK))) {
    return copy_stmt(cx, s, "broadcast_in_dim");   /* the unknown name is reported */
  }
  if (ns + rank > SHM_MAXRANK) {
    diag_error(sz->v->sp, "broadcast to rank %d: the limit is %d dimensions", ns + rank, SHM_MAXRANK);
    goto bad;
  }
  for (int d = 0; d < rank; d++) dims[d] = ns + d;
  AstStmt *n = copy_stmt(cx, s, "broadcast_in_dim");
  n->params = NEWN(cx->C, AstParam *, 2);
  n->params[0] = param_new(cx, "shape", pv_ints(cx, shape, ns + rank, sz->v->sp), sz->sp);
  n->params[1] = param_new(cx, "broadcast_dimensions", pv_ints(cx, dims, rank, sz->v->sp), sz->sp);
  n->nparams = 2;
  return n;
bad:
  check_bind_bad(cx, s);
  *done = true;
  return s;
}

AstStmt *old_rewrite(Ctx *cx, AstStmt *s, bool *done) {
  *done = false;
  if (str_eqc(s->callee, "select")) return old_select(cx, s, done);
  if (str_eqc(s->callee, "tie_in")) return old_tie_in(cx, s, done);
  if (str_eqc(s->callee, "broadcast")) return old_broadcast(cx, s, done);
  return s;
}
