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
**   psum[axes=(0, i)] x           psum[axes=(i,)] of reduce_sum[axes=(0,)] x:
**                                 an integer axis is a dimension of x (vmap
**                                 of a collective prints it); pmax, pmin too
**   a b = device_put[...] x y     one device_put per operand
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

/* psum, pmax and pmin whose axes hold integers (vmap of a collective over
   the vmapped axis prints them so: pmin[axes=(0,) axis_index_groups=None]):
   an integer is a dimension of the operand, reduced as reduce_sum,
   reduce_max or reduce_min reduce it (jax/_src/lax/parallel.py: the
   positional axes are reduced first, then the named ones).  All integers:
   the reduction alone; some names too: the reduction, then the collective
   over the names. */
static AstStmt *old_positional(Ctx *cx, AstStmt *s, const char *reduce, bool *done) {
  int ka = -1, kg = -1;
  for (int i = 0; i < s->nparams; i++) {
    if (str_eqc(s->params[i]->key, "axes") || str_eqc(s->params[i]->key, "axis_name")) ka = i;
    else if (str_eqc(s->params[i]->key, "axis_index_groups")) kg = i;
  }
  if (ka < 0) return s;
  const PVal *v = pv_unparen(s->params[ka]->v);
  const PVal *const *items = (v->k == PV_TUPLE || v->k == PV_LIST) ? (const PVal *const *)v->items : &v;
  int n = (v->k == PV_TUPLE || v->k == PV_LIST) ? v->n : 1, npos = 0;
  int64_t pos[SHM_MAXRANK];
  PVal *names = pv_new(cx, PV_TUPLE, v->sp);
  names->items = NEWN(cx->C, PVal *, n);
  for (int i = 0; i < n; i++) {
    const PVal *e = pv_unparen((PVal *)items[i]);
    if (e->k != PV_INT) { names->items[names->n++] = (PVal *)e; continue; }
    if (npos == SHM_MAXRANK) return s;   /* the rule's error */
    pos[npos++] = e->i;
  }
  if (!npos) return s;
  if (kg >= 0 && pv_unparen(s->params[kg]->v)->k != PV_NONE) {
    diag_error(s->params[kg]->sp, "axis_index_groups can only be used with reductions over named axes, but %.*s "
               "reduces positional axes", s->callee.n, s->callee.p);
    check_bind_bad(cx, s);
    *done = true;
    return s;
  }
  AstStmt *r = copy_stmt(cx, s, reduce);
  r->params = NEWN(cx->C, AstParam *, 1);
  r->params[0] = param_new(cx, "axes", pv_ints(cx, pos, npos, v->sp), s->params[ka]->sp);
  r->nparams = 1;
  if (!names->n) return r;
  /* the reduction into a value of its own, then the collective of it */
  AstBinder *t = NEW(cx->C, AstBinder);
  memset(t, 0, sizeof *t);
  t->name = str_c("_positional");
  t->sp = s->callee_sp;
  r->outs = NEWN(cx->C, AstBinder *, 1);
  r->outs[0] = t;
  r->nouts = 1;
  check_stmt(cx, r);
  AstStmt *c = copy_stmt(cx, s, "");
  c->callee = s->callee;
  c->params = NEWN(cx->C, AstParam *, 1);
  c->params[0] = param_new(cx, "axes", names, s->params[ka]->sp);
  c->nparams = 1;
  AstArg *a = NEW(cx->C, AstArg);
  memset(a, 0, sizeof *a);
  a->k = ARG_NAME;
  a->sp = s->args[0]->sp;
  a->name = t->name;
  c->args = NEWN(cx->C, AstArg *, 1);
  c->args[0] = a;
  return c;
}

/* device_put with several operands (JAX binds one equation for a pytree):
   one device_put per operand, each parameter tuple giving it its entry. */
static AstStmt *device_put_each(Ctx *cx, AstStmt *s, bool *done) {
  int n = s->nargs;
  if (n < 2) return s;
  *done = true;
  if (s->nouts != n) {
    diag_error(s->callee_sp, "device_put gives one result per operand: %d, but %d name%s bound", n, s->nouts,
               s->nouts == 1 ? " is" : "s are");
    check_bind_bad(cx, s);
    return s;
  }
  for (int i = 0; i < s->nparams; i++) {
    const PVal *v = pv_unparen(s->params[i]->v);
    if ((v->k != PV_TUPLE && v->k != PV_LIST) || v->n != n) {
      diag_error(s->params[i]->sp, "device_put of %d operands needs %.*s as a tuple of %d entries", n,
                 s->params[i]->key.n, s->params[i]->key.p, n);
      check_bind_bad(cx, s);
      return s;
    }
  }
  for (int k = 0; k < n; k++) {
    AstStmt *e = copy_stmt(cx, s, "device_put");
    e->outs = s->outs + k;
    e->nouts = 1;
    e->args = s->args + k;
    e->nargs = 1;
    e->params = NEWN(cx->C, AstParam *, s->nparams);
    for (int i = 0; i < s->nparams; i++) {
      PVal *one = pv_new(cx, PV_TUPLE, s->params[i]->v->sp);
      one->items = NEWN(cx->C, PVal *, 1);
      one->items[0] = pv_unparen(s->params[i]->v)->items[k];
      one->n = 1;
      e->params[i] = param_new(cx, "", one, s->params[i]->sp);
      e->params[i]->key = s->params[i]->key;
    }
    check_stmt(cx, e);
  }
  return s;
}

AstStmt *old_rewrite(Ctx *cx, AstStmt *s, bool *done) {
  *done = false;
  if (str_eqc(s->callee, "select")) return old_select(cx, s, done);
  if (str_eqc(s->callee, "tie_in")) return old_tie_in(cx, s, done);
  if (str_eqc(s->callee, "broadcast")) return old_broadcast(cx, s, done);
  if (str_eqc(s->callee, "device_put")) return device_put_each(cx, s, done);
  if (s->nargs == 1 && (str_eqc(s->callee, "psum") || str_eqc(s->callee, "psum2") || str_eqc(s->callee, "psum_invariant")))
    return old_positional(cx, s, "reduce_sum", done);
  if (s->nargs == 1 && str_eqc(s->callee, "pmax")) return old_positional(cx, s, "reduce_max", done);
  if (s->nargs == 1 && str_eqc(s->callee, "pmin")) return old_positional(cx, s, "reduce_min", done);
  return s;
}
