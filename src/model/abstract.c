/*
** abstract.c — the walk of --abstract: the timeline's events from the
** checked program, with no arrays (abstract.h).
*/
#include <stdio.h>
#include "diag.h"
#include "err.h"
#include "abstract.h"

/* A frame of the walk: the known scalar values of its variables, on each
   device of its mesh.  A value that is the same everywhere is `val`; one
   that differs between devices (axis_index and what follows from it) has
   `per`, a value per device (nd of them).  `active`: the devices running
   the frame (NULL: all), as the evaluator narrows them in control flow
   whose predicate varies. */
typedef struct AFrame {
  IrFunc *fn;
  struct AFrame *up;           /* static link */
  const Mesh *mesh;
  int64_t nd;
  uint8_t *active;
  int64_t *val;
  int64_t **per;
  uint8_t *known;
} AFrame;

typedef struct Walk {
  Timeline *T;
  long steps, max_steps;
  const IrStmt *where;         /* the statement a loop error names */
} Walk;

/* Known values passed to or from a function: n of them, on nd devices. */
typedef struct KVs {
  int n;
  int64_t nd;
  bool *k;
  int64_t *v;
  int64_t **per;
} KVs;

static void walk_body(Walk *W, AFrame *F);

/* ---- known scalars ----------------------------------------------------------------------------- */

static bool scalar_type(const Type *t) { return t->rank == 0 && !dtype_is_float((DType)t->dt); }

static bool runs(const AFrame *F, int64_t d) { return !F->active || F->active[d]; }

/* The frame that owns atom a's variable (NULL for a literal). */
static AFrame *owner_of(AFrame *F, const IrAtom *a) {
  if (!a->var) return NULL;
  while (F && F->fn != a->var->owner) F = F->up;
  return F;
}

/* The value of atom a on device d of F, if known. */
static bool known_at(AFrame *F, const IrAtom *a, int64_t d, int64_t *v) {
  if (a->lit) {
    if (a->lit->rank || dtype_is_float((DType)a->lit->dt)) return false;
    *v = arr_geti(a->lit, 0);
    return true;
  }
  if (!a->var || !scalar_type(&a->var->t)) return false;
  AFrame *f = owner_of(F, a);
  if (!f || !f->known[a->var->slot]) return false;
  int64_t *per = f->per[a->var->slot];
  if (!per) *v = f->val[a->var->slot];
  else if (f->nd == F->nd && d < f->nd) *v = per[d];
  else return false;
  return true;
}

/* Known, and the same on every device. */
static bool known(AFrame *F, const IrAtom *a, int64_t *v) {
  AFrame *f = owner_of(F, a);
  if (f && f->per[a->var->slot]) return false;
  return known_at(F, a, 0, v);
}

/* Does atom a have a value per device? */
static bool varies(AFrame *F, const IrAtom *a) {
  AFrame *f = owner_of(F, a);
  return f && f->known[a->var->slot] && f->per[a->var->slot];
}

static void set_known(AFrame *F, const IrVar *v, bool k, int64_t x) {
  if (v->owner != F->fn) return;
  mem_free(F->per[v->slot]);
  F->per[v->slot] = NULL;
  F->known[v->slot] = k && scalar_type(&v->t);
  F->val[v->slot] = x;
}

/* Set v to the values per device `per` (taken; NULL: unknown). */
static void set_per(AFrame *F, const IrVar *v, int64_t *per) {
  if (v->owner != F->fn || !per || !scalar_type(&v->t)) {
    mem_free(per);
    if (v->owner == F->fn) set_known(F, v, false, 0);
    return;
  }
  set_known(F, v, true, 0);
  F->per[v->slot] = per;
}

static int64_t *per_new(int64_t nd) { return mem_calloc(sizeof(int64_t) * (size_t)(nd ? nd : 1)); }

/* An integer scalar operation of known operands a (and b, c). */
static bool scalar_op(int prim, int dt, int nin, int64_t a, int64_t b, int64_t c, int64_t *out) {
  if (nin == 1) {
    switch (prim) {
    case P_NEG: *out = -a; return true;
    case P_NOT: *out = dt == DT_BOOL ? !a : ~a; return true;
    case P_CONVERT_ELEMENT_TYPE: case P_COPY: case P_STOP_GRADIENT: case P_PBROADCAST:
      *out = a;
      return true;
    case P_ABS: *out = a < 0 ? -a : a; return true;
    case P_SIGN: *out = (a > 0) - (a < 0); return true;
    default: return false;
    }
  }
  if (nin == 3) {
    if (prim == P_CLAMP) *out = b < a ? a : b > c ? c : b;
    else if (prim == P_SELECT_N) *out = a ? c : b;
    else return false;
    return true;
  }
  switch (prim) {
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
  case P_XOR: *out = a ^ b; return true;
  default: return false;
  }
}

/* The value of a local scalar equation on device d, if its operands are known there. */
static bool eval_at(AFrame *F, const IrStmt *st, int64_t d, int64_t *out) {
  int64_t x[3] = {0, 0, 0};
  if (st->nin < 1 || st->nin > 3) return false;
  for (int i = 0; i < st->nin; i++)
    if (!known_at(F, &st->in[i], d, &x[i])) return false;
  if (st->prim == P_SELECT_N && st->nin != 3) return false;
  return scalar_op(st->prim, st->out[0]->t.dt, st->nin, x[0], x[1], x[2], out);
}

/* axis_index: each device's index along the axes, major first. */
static int64_t *axis_index_per(const AFrame *F, const IrStmt *st) {
  int64_t *per = per_new(F->nd), coords[SHM_MAXAXES];
  for (int64_t d = 0; d < F->nd; d++) {
    til_coords(F->mesh, d, coords);
    int64_t idx = 0;
    for (int k = 0; k < st->at->naxes; k++) idx = idx * F->mesh->size[st->at->axes[k]] + coords[st->at->axes[k]];
    per[d] = idx;
  }
  return per;
}

/* psum, pmax, pmin of values per device: each group's reduction. */
static int64_t *reduce_per(AFrame *F, const IrStmt *st) {
  const Mesh *m = F->mesh;
  uint32_t all = (m->naxes >= 32 ? 0u : (1u << m->naxes)) - 1u, outer = all & ~st->at->axmask;
  int64_t ng = til_nblk(m, outer);
  int64_t *acc = per_new(ng);
  uint8_t *seen = mem_calloc((size_t)ng);
  bool ok = true;
  for (int64_t d = 0; d < F->nd && ok; d++) {
    int64_t x, g = til_block_of(m, outer, d);
    if (!known_at(F, &st->in[0], d, &x)) { ok = false; break; }
    if (!seen[g]) acc[g] = x;
    else if (st->prim == P_PSUM) acc[g] = (int64_t)((uint64_t)acc[g] + (uint64_t)x);
    else if (st->prim == P_PMAX) acc[g] = x > acc[g] ? x : acc[g];
    else acc[g] = x < acc[g] ? x : acc[g];
    seen[g] = 1;
  }
  mem_free(seen);
  int64_t *per = NULL;
  if (ok) {
    per = per_new(F->nd);
    for (int64_t d = 0; d < F->nd; d++) per[d] = acc[til_block_of(m, outer, d)];
  }
  mem_free(acc);
  return per;
}

/* The value of scalar equation st, if its operands are known: set in F. */
static void eval_scalar(AFrame *F, const IrStmt *st) {
  const IrVar *o = st->out[0];
  int64_t a = 0;
  if (st->nout != 1 || !scalar_type(&o->t)) {
    set_known(F, o, false, 0);
    return;
  }
  bool red = st->prim == P_PSUM || st->prim == P_PMAX || st->prim == P_PMIN;
  if (st->prim == P_FULL) {
    set_known(F, o, true, (int64_t)st->at->f[0]);
  } else if (st->prim == P_AXIS_INDEX && F->mesh) {
    set_per(F, o, axis_index_per(F, st));
  } else if (st->prim == P_AXIS_SIZE && F->mesh) {
    int64_t p = 1;
    for (int k = 0; k < st->at->naxes; k++) p *= F->mesh->size[st->at->axes[k]];
    set_known(F, o, true, p);
  } else if (red && st->nin == 1 && known(F, &st->in[0], &a)) {   /* the same on every member */
    int64_t p = 1;
    for (int k = 0; k < st->at->naxes; k++) p *= F->mesh ? F->mesh->size[st->at->axes[k]] : 1;
    set_known(F, o, true, st->prim == P_PSUM ? a * p : a);
  } else if (red && st->nin == 1 && F->mesh && varies(F, &st->in[0])) {
    set_per(F, o, reduce_per(F, st));
  } else {
    bool any = false;
    for (int i = 0; i < st->nin; i++) any |= varies(F, &st->in[i]);
    if (!any) {
      int64_t v = 0;
      bool k = eval_at(F, st, 0, &v);
      set_known(F, o, k, v);
      return;
    }
    int64_t *per = per_new(F->nd);
    for (int64_t d = 0; d < F->nd && per; d++)
      if (runs(F, d) && !eval_at(F, st, d, &per[d])) {
        mem_free(per);
        per = NULL;
      }
    set_per(F, o, per);
  }
}

/* ---- known values passed around ------------------------------------------------------------------ */

static void kvs_release(void *p) {
  KVs *K = p;
  for (int i = 0; K->per && i < K->n; i++) mem_free(K->per[i]);
  mem_free(K->per);
  mem_free(K->k);
  mem_free(K->v);
}

static void kvs_new(KVs *K, int n, int64_t nd) {
  memset(K, 0, sizeof *K);
  K->n = n;
  K->nd = nd;
  err_defer(kvs_release, K);
  K->k = mem_calloc(sizeof(bool) * (size_t)(n + 1));
  K->v = mem_calloc(sizeof(int64_t) * (size_t)(n + 1));
  K->per = mem_calloc(sizeof(int64_t *) * (size_t)(n + 1));
}

static void kvs_free(KVs *K) {
  err_undefer(K);
  kvs_release(K);
}

static void kv_clear(KVs *K, int i) {
  mem_free(K->per[i]);
  K->per[i] = NULL;
  K->k[i] = false;
  K->v[i] = 0;
}

/* K[i] = atom a of F */
static void kv_from_atom(KVs *K, int i, AFrame *F, const IrAtom *a) {
  kv_clear(K, i);
  if (varies(F, a) && F->nd == K->nd) {
    int64_t *per = per_new(K->nd);
    for (int64_t d = 0; d < K->nd; d++)
      if (!known_at(F, a, d, &per[d])) per[d] = 0;
    K->per[i] = per;
    K->k[i] = true;
  } else {
    K->k[i] = known(F, a, &K->v[i]);
  }
}

static void atoms_known(AFrame *F, const IrAtom *a, int n, KVs *K, int at) {
  for (int i = 0; i < n; i++) kv_from_atom(K, at + i, F, &a[i]);
}

/* K[i] = L[j] */
static void kv_copy(KVs *K, int i, const KVs *L, int j) {
  kv_clear(K, i);
  K->k[i] = L->k[j];
  K->v[i] = L->v[j];
  if (L->per[j] && K->nd == L->nd) {
    K->per[i] = per_new(K->nd);
    memcpy(K->per[i], L->per[j], sizeof(int64_t) * (size_t)K->nd);
  } else if (L->per[j]) {
    K->k[i] = false;
  }
}

/* K[i] takes L[j]'s values on the devices of act (the others keep theirs). */
static void kv_merge(KVs *K, int i, const KVs *L, int j, const uint8_t *act) {
  if (!act) {
    kv_copy(K, i, L, j);
    return;
  }
  if (!K->k[i] || !L->k[j] || (L->per[j] && L->nd != K->nd)) {
    kv_clear(K, i);
    return;
  }
  if (!K->per[i]) {
    K->per[i] = per_new(K->nd);
    for (int64_t d = 0; d < K->nd; d++) K->per[i][d] = K->v[i];
  }
  for (int64_t d = 0; d < K->nd; d++)
    if (act[d]) K->per[i][d] = L->per[j] ? L->per[j][d] : L->v[j];
}

/* Variable v of F takes K[i]. */
static void set_from(AFrame *F, const IrVar *v, const KVs *K, int i) {
  if (K->per[i] && K->nd == F->nd) {
    int64_t *per = per_new(F->nd);
    memcpy(per, K->per[i], sizeof(int64_t) * (size_t)F->nd);
    set_per(F, v, per);
  } else {
    set_known(F, v, K->k[i] && !K->per[i], K->v[i]);
  }
}

/* ---- frames ------------------------------------------------------------------------------------- */

static void aframe_release(void *p) {
  AFrame *F = p;
  for (int i = 0; F->per && i < F->fn->nslots; i++) mem_free(F->per[i]);
  mem_free(F->per);
  mem_free(F->known);
  mem_free(F->val);
  mem_free(F->active);
  mem_free(F);
}

static AFrame *aframe_new(IrFunc *fn, AFrame *caller, const Mesh *mesh, const uint8_t *active) {
  AFrame *F = mem_calloc(sizeof *F);
  F->fn = fn;
  err_defer(aframe_release, F);
  size_t n = (size_t)(fn->nslots ? fn->nslots : 1);
  F->val = mem_calloc(sizeof(int64_t) * n);
  F->per = mem_calloc(sizeof(int64_t *) * n);
  F->known = mem_calloc(n);
  F->mesh = mesh;
  F->nd = mesh ? mesh->ndev : 1;
  if (active && mesh) {
    F->active = mem_calloc((size_t)F->nd);
    memcpy(F->active, active, (size_t)F->nd);
  }
  AFrame *s = caller;
  while (s && s->fn != fn->parent && (!s->fn->scope_as || s->fn->scope_as != fn->parent)) s = s->up;
  F->up = s;
  return F;
}

static void aframe_free(AFrame *F) {
  err_undefer(F);
  aframe_release(F);
}

/* Call fn from C at `site` on the devices of `active` (NULL: all), its
   parameters taking `args` (fn->nparams of them); the known values of its
   results go to `res` (fn->nouts of them, or NULL). */
static void call(Walk *W, AFrame *C, IrFunc *fn, const IrStmt *site, const Mesh *mesh, const uint8_t *active,
                 const KVs *args, KVs *res) {
  AFrame *F = aframe_new(fn, C, mesh, active);
  for (int i = 0; i < fn->nparams; i++) {
    if (args && i < args->n) set_from(F, fn->params[i], args, i);
    else set_known(F, fn->params[i], false, 0);
  }
  tl_call(W->T, F, C, fn, site, mesh, F->active);
  walk_body(W, F);
  for (int j = 0; res && j < fn->nouts && j < res->n; j++) kv_from_atom(res, j, F, &fn->outs[j]);
  tl_return(W->T, F);
  aframe_free(F);
}

static void step(Walk *W) {
  if (W->max_steps && ++W->steps > W->max_steps)
    err_throw("more than %ld loop iterations (the --max-steps limit)", W->max_steps);
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

/* The first running device of F. */
static int64_t first_running(const AFrame *F) {
  int64_t d = 0;
  while (d + 1 < F->nd && !runs(F, d)) d++;
  return d;
}

/* Does a scalar of this type hold one block per device group (the
   evaluator's test for a predicate or index that may differ)? */
static bool varying_type(const AFrame *F, const Type *t) {
  return F->mesh && t->vma && til_nblk(F->mesh, t->vma) > 1;
}

/* A cond whose index differs between devices: each branch on the devices
   that pick it, in order, as the evaluator runs it. */
static void walk_cond_split(Walk *W, AFrame *F, const IrStmt *st, const KVs *K) {
  int nb = st->at->nfns;
  KVs R, out;
  kvs_new(&R, st->nout, F->nd);
  kvs_new(&out, st->nout, F->nd);
  uint8_t *act = mem_calloc((size_t)F->nd);
  err_defer(mem_free, act);
  bool first = true;
  for (int k = 0; k < nb; k++) {
    int64_t count = 0;
    for (int64_t d = 0; d < F->nd; d++) {
      int64_t x = 0;
      known_at(F, &st->in[0], d, &x);
      if (x < 0) x = 0;
      if (x >= nb) x = nb - 1;
      act[d] = runs(F, d) && x == k;
      count += act[d];
    }
    if (!count) continue;
    call(W, F, st->at->fns[k], st, F->mesh, act, K, &R);
    for (int j = 0; j < st->nout; j++) {
      if (first) {          /* the first branch's values; the others merge in */
        kv_copy(&out, j, &R, j);
        if (out.k[j] && !out.per[j]) {
          out.per[j] = per_new(F->nd);
          for (int64_t d = 0; d < F->nd; d++) out.per[j][d] = out.v[j];
        }
      } else {
        kv_merge(&out, j, &R, j, act);
      }
    }
    first = false;
  }
  for (int j = 0; j < st->nout; j++) set_from(F, st->out[j], &out, j);
  err_undefer(act);
  mem_free(act);
  kvs_free(&out);
  kvs_free(&R);
}

static void walk_cond(Walk *W, AFrame *F, const IrStmt *st) {
  int nb = st->at->nfns;
  int64_t idx = 0;
  KVs K, R;
  kvs_new(&K, st->nin, F->nd);
  atoms_known(F, st->in + 1, st->nin - 1, &K, 0);
  bool split = st->in[0].var && varying_type(F, &st->in[0].var->t);
  bool have = split ? varies(F, &st->in[0]) || known(F, &st->in[0], &idx)
                    : known_at(F, &st->in[0], first_running(F), &idx);
  if (have && split) {
    walk_cond_split(W, F, st, &K);
    kvs_free(&K);
    return;
  }
  if (!have) {
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
  kvs_new(&R, st->nout, F->nd);
  call(W, F, st->at->fns[idx], st, F->mesh, F->active, &K, &R);
  for (int j = 0; j < st->nout; j++) set_from(F, st->out[j], &R, j);
  kvs_free(&R);
  kvs_free(&K);
}

SHM_NORETURN static void data_dependent(Walk *W, const IrStmt *st, const char *what) {
  W->where = st;
  err_throw("--abstract cannot model this %s: %s depends on array data (run without --abstract)",
            prim_table[st->prim].name, what);
}

/* A fori_loop bound (which 0: lower, 1: upper) on device d. */
static bool fori_bound(AFrame *F, const IrStmt *st, int which, int64_t d, int64_t *v) {
  int64_t mask = st->at->i[3];
  if (!(mask & (1 << which))) {
    *v = st->at->i[which];
    return true;
  }
  return known_at(F, &st->in[which == 1 && (mask & 1) ? 1 : 0], d, v);
}

/* fori_loop: with bounds that differ between devices each device runs its
   own number of steps, in lockstep (the devices still looping at step t
   run it together), as the evaluator runs it. */
static void walk_fori(Walk *W, AFrame *F, const IrStmt *st) {
  int nb = (int)st->at->i[2], n = st->nin - nb;
  IrFunc *body = st->at->fns[0];
  bool per = varying_type(F, &body->params[0]->t);
  int64_t *lo = per_new(2 * F->nd), *hi = lo + F->nd, steps = 0;
  err_defer(mem_free, lo);
  for (int64_t d = per ? 0 : first_running(F); d < F->nd; d++) {
    if (!runs(F, d)) continue;
    if (!fori_bound(F, st, 0, d, &lo[d])) data_dependent(W, st, "its lower bound");
    if (!fori_bound(F, st, 1, d, &hi[d])) data_dependent(W, st, "its upper bound");
    if (hi[d] - lo[d] > steps) steps = hi[d] - lo[d];
    if (!per) {
      for (int64_t e = 0; e < F->nd; e++) lo[e] = lo[d], hi[e] = hi[d];
      break;
    }
  }
  KVs K, R;
  kvs_new(&K, n + 1, F->nd);
  kvs_new(&R, n + 1, F->nd);
  atoms_known(F, st->in + nb, n, &K, 1);
  uint8_t *act = per ? mem_calloc((size_t)F->nd) : NULL;
  if (act) err_defer(mem_free, act);
  for (int64_t t = 0; t < steps; t++) {
    step(W);
    kv_clear(&K, 0);
    K.k[0] = true;
    if (per) {
      K.per[0] = per_new(F->nd);
      for (int64_t d = 0; d < F->nd; d++) {
        act[d] = runs(F, d) && t < hi[d] - lo[d];
        K.per[0][d] = st->at->b[0] ? hi[d] - 1 - t : lo[d] + t;
      }
    } else {
      K.v[0] = st->at->b[0] ? hi[0] - 1 - t : lo[0] + t;
    }
    const uint8_t *a = per ? act : F->active;
    call(W, F, body, st, F->mesh, a, &K, &R);
    for (int k = 0; k < n; k++) kv_merge(&K, k + 1, &R, k, a);
  }
  for (int k = 0; k < n && k < st->nout; k++) set_from(F, st->out[k], &K, k + 1);
  if (act) {
    err_undefer(act);
    mem_free(act);
  }
  kvs_free(&R);
  kvs_free(&K);
  err_undefer(lo);
  mem_free(lo);
}

static void walk_while(Walk *W, AFrame *F, const IrStmt *st) {
  int cn = (int)st->at->i[0], bn = (int)st->at->i[1], n = st->nin - cn - bn;
  IrFunc *cf = st->at->fns[0];
  bool per = cf->nouts > 0 && varying_type(F, &cf->outs[0].t);
  KVs ca, ba, R;
  kvs_new(&ca, cn + n, F->nd);
  kvs_new(&ba, bn + n, F->nd);
  kvs_new(&R, n + 1, F->nd);
  atoms_known(F, st->in, cn, &ca, 0);
  atoms_known(F, st->in + cn, bn, &ba, 0);
  atoms_known(F, st->in + cn + bn, n, &ca, cn);      /* the carries, kept in ca */
  uint8_t *act = NULL;
  if (F->active || per) {
    act = mem_calloc((size_t)F->nd);
    err_defer(mem_free, act);
    for (int64_t d = 0; d < F->nd; d++) act[d] = runs(F, d);
  }
  for (;;) {
    step(W);
    call(W, F, cf, st, F->mesh, act, &ca, &R);
    if (!per) {
      int64_t go = 0;
      int64_t d = 0;
      while (act && d + 1 < F->nd && !act[d]) d++;
      if (!R.k[0] || (R.per[0] && R.nd != F->nd)) data_dependent(W, st, "its predicate");
      go = R.per[0] ? R.per[0][d] : R.v[0];
      if (!go) break;
    } else {
      if (!R.k[0]) data_dependent(W, st, "its predicate");
      int64_t count = 0;
      for (int64_t d = 0; d < F->nd; d++) {
        if (act[d]) act[d] = (R.per[0] ? R.per[0][d] : R.v[0]) != 0;
        count += act[d];
      }
      if (!count) break;
    }
    for (int k = 0; k < n; k++) kv_copy(&ba, bn + k, &ca, cn + k);
    call(W, F, st->at->fns[1], st, F->mesh, act, &ba, &R);
    for (int k = 0; k < n; k++) kv_merge(&ca, cn + k, &R, k, act);
  }
  for (int k = 0; k < n && k < st->nout; k++) set_from(F, st->out[k], &ca, cn + k);
  if (act) {
    err_undefer(act);
    mem_free(act);
  }
  kvs_free(&R);
  kvs_free(&ba);
  kvs_free(&ca);
}

/* scan: `length` steps on the consts, the carries and a slice of each xs
   (array data: unknown); the stacked results are unknown too. */
static void walk_scan(Walk *W, AFrame *F, const IrStmt *st) {
  int nc = (int)st->at->i[0], ncar = (int)st->at->i[1];
  int64_t len = st->at->i[2];
  KVs K, R;
  kvs_new(&K, st->nin, F->nd);
  kvs_new(&R, st->nout, F->nd);
  atoms_known(F, st->in, nc + ncar, &K, 0);
  for (int64_t t = 0; t < len; t++) {
    step(W);
    call(W, F, st->at->fns[0], st, F->mesh, F->active, &K, &R);
    for (int k = 0; k < ncar; k++) kv_merge(&K, nc + k, &R, k, F->active);
  }
  for (int k = 0; k < st->nout; k++) {
    if (k < ncar) set_from(F, st->out[k], &K, nc + k);
    else set_known(F, st->out[k], false, 0);
  }
  kvs_free(&R);
  kvs_free(&K);
}

static void walk_call(Walk *W, AFrame *F, const IrStmt *st, IrFunc *fn, const Mesh *mesh, const uint8_t *active) {
  KVs K, R;
  kvs_new(&K, st->nin, F->nd);
  kvs_new(&R, st->nout, F->nd);
  atoms_known(F, st->in, st->nin, &K, 0);
  call(W, F, fn, st, mesh, active, &K, &R);
  for (int j = 0; j < st->nout; j++) set_from(F, st->out[j], &R, j);
  kvs_free(&R);
  kvs_free(&K);
}

/* ---- statements ------------------------------------------------------------------------------------ */

static void walk_stmt(Walk *W, AFrame *F, const IrStmt *st) {
  switch (st->k) {
  case IS_CONST:
    if (!st->value->rank && !dtype_is_float((DType)st->value->dt)) set_known(F, st->out[0], true, arr_geti(st->value, 0));
    else set_known(F, st->out[0], false, 0);
    break;
  case IS_EQN:
    if (st->prim < 0) walk_call(W, F, st, st->callee, F->mesh, F->active);
    else if (st->prim == P_SHARD_MAP || st->prim == P_XLA_PMAP)
      walk_call(W, F, st, st->at->fns[0], ((ShardMap *)st->at->ext)->mesh, NULL);
    else if (st->prim == P_SCAN) walk_scan(W, F, st);
    else if (st->prim == P_COND) walk_cond(W, F, st);
    else if (st->prim == P_FORI_LOOP) walk_fori(W, F, st);
    else if (st->prim == P_WHILE) walk_while(W, F, st);
    else if (st->nout == 1) eval_scalar(F, st);
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
    top = aframe_new(main, NULL, NULL, NULL);
    tl_top(T, top, main);
    if (fn) call(&W, top, fn, NULL, NULL, NULL, NULL, NULL);
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
