/*
** abstract.c — the walk of --abstract: the timeline's events from the
** checked program, with no arrays (abstract.h).
*/
#include <stdio.h>
#include "diag.h"
#include "err.h"
#include "abstract.h"

/* A frame of the walk: the known scalar values of its variables. */
typedef struct AFrame {
  IrFunc *fn;
  struct AFrame *up;           /* static link */
  const Mesh *mesh;
  int64_t *val;
  uint8_t *known;
} AFrame;

typedef struct Walk {
  Timeline *T;
  long steps, max_steps;
  const IrStmt *where;         /* the statement a loop error names */
} Walk;

static void walk_body(Walk *W, AFrame *F);

/* ---- known scalars ----------------------------------------------------------------------------- */

static bool scalar_type(const Type *t) { return t->rank == 0 && !dtype_is_float((DType)t->dt); }

static bool known(AFrame *F, const IrAtom *a, int64_t *v) {
  if (a->lit) {
    if (a->lit->rank || dtype_is_float((DType)a->lit->dt)) return false;
    *v = arr_geti(a->lit, 0);
    return true;
  }
  if (!a->var || !scalar_type(&a->var->t)) return false;
  AFrame *f = F;
  while (f && f->fn != a->var->owner) f = f->up;
  if (!f || !f->known[a->var->slot]) return false;
  *v = f->val[a->var->slot];
  return true;
}

static void set_known(AFrame *F, const IrVar *v, bool k, int64_t x) {
  if (v->owner != F->fn) return;
  F->known[v->slot] = k && scalar_type(&v->t);
  F->val[v->slot] = x;
}

/* The value of a scalar equation of known operands, if it has one. */
static bool eval_scalar(AFrame *F, const IrStmt *st, int64_t *out) {
  int64_t a = 0, b = 0;
  if (st->nout != 1 || !scalar_type(&st->out[0]->t)) return false;
  if (st->prim == P_FULL) {
    *out = (int64_t)st->at->f[0];
    return true;
  }
  if (st->prim == P_PSUM && known(F, &st->in[0], &a)) {   /* the same on every member */
    int64_t p = 1;
    for (int k = 0; k < st->at->naxes; k++) p *= F->mesh ? F->mesh->size[st->at->axes[k]] : 1;
    *out = a * p;
    return true;
  }
  if (st->nin < 1 || !known(F, &st->in[0], &a)) return false;
  if (st->nin == 1) {
    switch (st->prim) {
    case P_NEG: *out = -a; return true;
    case P_NOT: *out = st->out[0]->t.dt == DT_BOOL ? !a : ~a; return true;
    case P_CONVERT_ELEMENT_TYPE: case P_COPY: case P_STOP_GRADIENT: case P_PBROADCAST: case P_PMAX: case P_PMIN:
      *out = a;
      return true;
    case P_ABS: *out = a < 0 ? -a : a; return true;
    default: return false;
    }
  }
  if (st->nin != 2 || !known(F, &st->in[1], &b)) return false;
  switch (st->prim) {
  case P_ADD: *out = (int64_t)((uint64_t)a + (uint64_t)b); return true;
  case P_SUB: *out = (int64_t)((uint64_t)a - (uint64_t)b); return true;
  case P_MUL: *out = (int64_t)((uint64_t)a * (uint64_t)b); return true;
  case P_DIV: if (!b || (a == INT64_MIN && b == -1)) return false; *out = a / b; return true;
  case P_REM: if (!b || (a == INT64_MIN && b == -1)) return false; *out = a % b; return true;
  case P_MAX: *out = a > b ? a : b; return true;
  case P_MIN: *out = a < b ? a : b; return true;
  case P_LT: *out = a < b; return true;
  case P_LE: *out = a <= b; return true;
  case P_GT: *out = a > b; return true;
  case P_GE: *out = a >= b; return true;
  case P_EQ: *out = a == b; return true;
  case P_NE: *out = a != b; return true;
  case P_AND: *out = a & b; return true;
  case P_OR: *out = a | b; return true;
  default: return false;
  }
}

/* ---- frames ------------------------------------------------------------------------------------- */

static AFrame *aframe_new(IrFunc *fn, AFrame *caller, const Mesh *mesh) {
  AFrame *F = mem_calloc(sizeof *F);
  err_defer(mem_free, F);
  size_t n = (size_t)(fn->nslots ? fn->nslots : 1);
  F->val = mem_calloc(sizeof(int64_t) * n);
  err_defer(mem_free, F->val);
  F->known = mem_calloc(n);
  err_defer(mem_free, F->known);
  F->fn = fn;
  F->mesh = mesh;
  AFrame *s = caller;
  while (s && s->fn != fn->parent && (!s->fn->scope_as || s->fn->scope_as != fn->parent)) s = s->up;
  F->up = s;
  return F;
}

static void aframe_free(AFrame *F) {
  err_undefer(F->known);
  mem_free(F->known);
  err_undefer(F->val);
  mem_free(F->val);
  err_undefer(F);
  mem_free(F);
}

/* Call fn from C at `site` with the known values of `args` (n of them,
   NULL entries unknown); the known values of its results go to
   rk/rv (nouts each).  `pre`: known values for the first parameters
   (a loop's index). */
static void call(Walk *W, AFrame *C, IrFunc *fn, const IrStmt *site, const Mesh *mesh, const bool *ak,
                 const int64_t *av, bool *rk, int64_t *rv) {
  AFrame *F = aframe_new(fn, C, mesh);
  for (int i = 0; i < fn->nparams; i++) set_known(F, fn->params[i], ak && ak[i], av ? av[i] : 0);
  tl_call(W->T, F, C, fn, site, mesh, NULL);
  walk_body(W, F);
  for (int j = 0; j < fn->nouts; j++) {
    int64_t x = 0;
    bool k = known(F, &fn->outs[j], &x);
    if (rk) rk[j] = k;
    if (rv) rv[j] = x;
  }
  tl_return(W->T, F);
  aframe_free(F);
}

static void step(Walk *W) {
  if (W->max_steps && ++W->steps > W->max_steps)
    err_throw("more than %ld loop iterations (the --max-steps limit)", W->max_steps);
}

/* Scratch arrays of known values, released by a runtime error too. */
typedef struct Known {
  bool *k;
  int64_t *v;
} Known;

static void known_release(void *p) {
  Known *K = p;
  mem_free(K->k);
  mem_free(K->v);
}

static void known_new(Known *K, int n) {
  K->k = mem_calloc(sizeof(bool) * (size_t)(n + 1));
  K->v = NULL;
  err_defer(mem_free, K->k);
  K->v = mem_calloc(sizeof(int64_t) * (size_t)(n + 1));
  err_undefer(K->k);
  err_defer(known_release, K);
}

static void known_free(Known *K) {
  err_undefer(K);
  known_release(K);
}

static void atoms_known(AFrame *F, const IrAtom *a, int n, Known *K, int at) {
  for (int i = 0; i < n; i++) K->k[at + i] = known(F, &a[i], &K->v[at + i]);
}

/* ---- control flow --------------------------------------------------------------------------------- */

/* A rough cost of a function's body (its local equations), to pick the
   costliest branch of a cond whose index depends on data. */
static double body_cost(const Hw *hw, IrFunc *fn, int depth) {
  double t = 0;
  for (int k = 0; k < fn->nbody && depth < 8; k++) {
    const IrStmt *st = fn->body[k];
    if (st->k != IS_EQN) continue;
    if (st->prim < 0) t += body_cost(hw, st->callee, depth + 1);
    else if (st->prim == P_SCAN) t += (double)st->at->i[2] * body_cost(hw, st->at->fns[0], depth + 1);
    else if (st->prim == P_COND || st->prim == P_WHILE || st->prim == P_FORI_LOOP)
      for (int i = 0; i < st->at->nfns; i++) t += body_cost(hw, st->at->fns[i], depth + 1);
    else if (prim_table[st->prim].kernel) t += cost_local(hw, st).time;
  }
  return t;
}

static void walk_cond(Walk *W, AFrame *F, const IrStmt *st) {
  int nb = st->at->nfns;
  int64_t idx;
  if (!known(F, &st->in[0], &idx)) {
    double best = -1;
    for (int k = 0; k < nb; k++) {
      double c = body_cost(tl_hw(W->T), st->at->fns[k], 0);
      if (c > best) best = c, idx = k;
    }
    char what[80];
    snprintf(what, sizeof what, "the cond index depends on data; modelled as its costliest branch (%lld)",
             (long long)idx);
    tl_note(W->T, st, what);
  }
  if (idx < 0) idx = 0;
  if (idx >= nb) idx = nb - 1;
  Known K, R;
  known_new(&K, st->nin);
  known_new(&R, st->nout);
  atoms_known(F, st->in + 1, st->nin - 1, &K, 0);
  call(W, F, st->at->fns[idx], st, F->mesh, K.k, K.v, R.k, R.v);
  for (int j = 0; j < st->nout; j++) set_known(F, st->out[j], R.k[j], R.v[j]);
  known_free(&R);
  known_free(&K);
}

SHM_NORETURN static void data_dependent(Walk *W, const IrStmt *st, const char *what) {
  W->where = st;
  err_throw("--abstract cannot model this %s: %s depends on array data (run without --abstract)",
            prim_table[st->prim].name, what);
}

static void walk_fori(Walk *W, AFrame *F, const IrStmt *st) {
  int nb = (int)st->at->i[2], n = st->nin - nb;
  int64_t lo = st->at->i[0], hi = st->at->i[1], mask = st->at->i[3];
  if ((mask & 1) && !known(F, &st->in[0], &lo)) data_dependent(W, st, "its lower bound");
  if ((mask & 2) && !known(F, &st->in[mask & 1 ? 1 : 0], &hi)) data_dependent(W, st, "its upper bound");
  Known K, R;
  known_new(&K, n + 1);
  known_new(&R, n + 1);
  atoms_known(F, st->in + nb, n, &K, 1);
  for (int64_t t = 0; t < hi - lo; t++) {
    step(W);
    K.k[0] = true;
    K.v[0] = st->at->b[0] ? hi - 1 - t : lo + t;
    call(W, F, st->at->fns[0], st, F->mesh, K.k, K.v, R.k, R.v);
    for (int k = 0; k < n; k++) K.k[k + 1] = R.k[k], K.v[k + 1] = R.v[k];
  }
  for (int k = 0; k < n && k < st->nout; k++) set_known(F, st->out[k], K.k[k + 1], K.v[k + 1]);
  known_free(&R);
  known_free(&K);
}

static void walk_while(Walk *W, AFrame *F, const IrStmt *st) {
  int cn = (int)st->at->i[0], bn = (int)st->at->i[1], n = st->nin - cn - bn;
  Known carry, ca, ba, R;
  known_new(&carry, n);
  known_new(&ca, cn + n);
  known_new(&ba, bn + n);
  known_new(&R, n + 1);
  atoms_known(F, st->in + cn + bn, n, &carry, 0);
  atoms_known(F, st->in, cn, &ca, 0);
  atoms_known(F, st->in + cn, bn, &ba, 0);
  for (;;) {
    step(W);
    for (int k = 0; k < n; k++) ca.k[cn + k] = carry.k[k], ca.v[cn + k] = carry.v[k];
    call(W, F, st->at->fns[0], st, F->mesh, ca.k, ca.v, R.k, R.v);
    if (!R.k[0]) data_dependent(W, st, "its predicate");
    if (!R.v[0]) break;
    for (int k = 0; k < n; k++) ba.k[bn + k] = carry.k[k], ba.v[bn + k] = carry.v[k];
    call(W, F, st->at->fns[1], st, F->mesh, ba.k, ba.v, R.k, R.v);
    for (int k = 0; k < n; k++) carry.k[k] = R.k[k], carry.v[k] = R.v[k];
  }
  for (int k = 0; k < n && k < st->nout; k++) set_known(F, st->out[k], carry.k[k], carry.v[k]);
  known_free(&R);
  known_free(&ba);
  known_free(&ca);
  known_free(&carry);
}

/* scan: `length` steps on the consts, the carries and a slice of each xs
   (array data: unknown); the stacked results are unknown too. */
static void walk_scan(Walk *W, AFrame *F, const IrStmt *st) {
  int nc = (int)st->at->i[0], ncar = (int)st->at->i[1];
  int64_t len = st->at->i[2];
  Known K, R;
  known_new(&K, st->nin);
  known_new(&R, st->nout);
  atoms_known(F, st->in, nc + ncar, &K, 0);
  for (int64_t t = 0; t < len; t++) {
    step(W);
    call(W, F, st->at->fns[0], st, F->mesh, K.k, K.v, R.k, R.v);
    for (int k = 0; k < ncar; k++) K.k[nc + k] = R.k[k], K.v[nc + k] = R.v[k];
  }
  for (int k = 0; k < st->nout; k++) set_known(F, st->out[k], k < ncar && K.k[nc + k], k < ncar ? K.v[nc + k] : 0);
  known_free(&R);
  known_free(&K);
}

static void walk_call(Walk *W, AFrame *F, const IrStmt *st, IrFunc *fn, const Mesh *mesh) {
  Known K, R;
  known_new(&K, st->nin);
  known_new(&R, st->nout);
  atoms_known(F, st->in, st->nin, &K, 0);
  call(W, F, fn, st, mesh, K.k, K.v, R.k, R.v);
  for (int j = 0; j < st->nout; j++) set_known(F, st->out[j], R.k[j], R.v[j]);
  known_free(&R);
  known_free(&K);
}

/* ---- statements ------------------------------------------------------------------------------------ */

static void walk_stmt(Walk *W, AFrame *F, const IrStmt *st) {
  int64_t v = 0;
  switch (st->k) {
  case IS_CONST:
    if (!st->value->rank && !dtype_is_float((DType)st->value->dt)) set_known(F, st->out[0], true, arr_geti(st->value, 0));
    else set_known(F, st->out[0], false, 0);
    break;
  case IS_EQN:
    if (st->prim < 0) walk_call(W, F, st, st->callee, F->mesh);
    else if (st->prim == P_SHARD_MAP || st->prim == P_XLA_PMAP)
      walk_call(W, F, st, st->at->fns[0], ((ShardMap *)st->at->ext)->mesh);
    else if (st->prim == P_SCAN) walk_scan(W, F, st);
    else if (st->prim == P_COND) walk_cond(W, F, st);
    else if (st->prim == P_FORI_LOOP) walk_fori(W, F, st);
    else if (st->prim == P_WHILE) walk_while(W, F, st);
    else if (st->nout == 1) {
      bool k = eval_scalar(F, st, &v);
      set_known(F, st->out[0], k, v);
    }
    break;
  default:
    break;          /* print, show: no data to print */
  }
}

static void walk_body(Walk *W, AFrame *F) {
  for (int i = 0; i < F->fn->nbody; i++) {
    const IrStmt *st = F->fn->body[i];
    W->where = st;
    tl_before(W->T, F, st, i);
    walk_stmt(W, F, st);
    W->where = st;
    tl_after(W->T, F, st, i);
  }
}

/* Walk main's statements from `from`, or (fn given) a call of fn from
   the top level instead. */
static bool walk_top(Timeline *T, IrFunc *main, int from, IrFunc *fn, long max_steps) {
  Walk W = {T, 0, max_steps, NULL};
  AFrame *volatile top = NULL;
  volatile bool ok = true;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    top = aframe_new(main, NULL, NULL);
    tl_top(T, top, main);
    if (fn) call(&W, top, fn, NULL, NULL, NULL, NULL, NULL, NULL);
    for (int i = fn ? main->nbody : from; i < main->nbody; i++) {
      const IrStmt *st = main->body[i];
      W.where = st;
      W.steps = 0;
      tl_before(T, top, st, i);
      walk_stmt(&W, top, st);
      W.where = st;
      tl_after(T, top, st, i);
    }
    aframe_free(top);
    err_end(&j);
  } else {
    ok = false;
    char msg[1200];
    snprintf(msg, sizeof msg, "%s", err_message());
    diag_report(W.where ? W.where->whole : span_none(), "error", msg);
  }
  return ok;
}

bool abstract_run(Timeline *T, IrFunc *main, int from, long max_steps) {
  return walk_top(T, main, from, NULL, max_steps);
}

bool abstract_call(Timeline *T, IrFunc *main, IrFunc *fn, long max_steps) {
  return walk_top(T, main, 0, fn, max_steps);
}
