/*
** body.c — running a primitive's scalar function on whole arrays (see
** body.h).  The vectorised pass gives every variable of the function the
** arrays' shape (literals and constants broadcast to it) and calls each
** kernel with its result types widened to that shape; the per-element
** pass runs the function as checked, on rank-0 arrays.
*/
#include "body.h"

#include <string.h>
#include "mem.h"
#include "prims.h"
#include "rule.h"

/* Is the primitive elementwise when all its operands have one shape (its
   kernel then computes each element from the same elements of the
   operands)? */
static bool elementwise(int prim) {
  if (prim_ew_op(prim) >= 0) return true;
  switch (prim) {
  case P_SELECT_N: case P_CONVERT_ELEMENT_TYPE: case P_CLAMP: case P_INTEGER_POW: case P_STOP_GRADIENT:
  case P_ERF_INV: case P_REDUCE_PRECISION: case P_REAL: case P_IMAG: case P_CONJ: case P_COMPLEX:
    return true;
  default:
    return false;
  }
}

static bool reads_inside(const IrFunc *f, const IrAtom *a) { return !a->var || a->var->owner == f; }

bool body_runnable(const IrFunc *f, const IrStmt **bad) {
  const IrStmt *lifted = NULL;    /* a pbroadcast the checker inserted: blame what needed it */
  for (int i = 0; i < f->nbody; i++) {
    const IrStmt *st = f->body[i];
    bool ok = st->k == IS_CONST || st->k == IS_SHOW;
    if (st->k == IS_EQN) {
      ok = st->prim >= 0 ? prim_table[st->prim].kernel != NULL && !(st->at && st->at->nfns)
                         : st->callee && body_runnable(st->callee, bad);
      if (st->prim < 0 && !ok && bad && *bad) return false;
      for (int k = 0; ok && k < st->nin; k++) ok = reads_inside(f, &st->in[k]);
    }
    if (!ok && st->inserted && !lifted) {
      lifted = st;
      continue;
    }
    if (!ok) {
      if (bad) *bad = st;
      return false;
    }
  }
  if (lifted) {
    if (bad) *bad = lifted;
    return false;
  }
  for (int k = 0; k < f->nouts; k++)
    if (!reads_inside(f, &f->outs[k])) {
      if (bad) *bad = NULL;
      return false;
    }
  return true;
}

static bool vectorizable(const IrFunc *f) {
  for (int i = 0; i < f->nbody; i++) {
    const IrStmt *st = f->body[i];
    if (st->k != IS_EQN) continue;
    if (st->prim >= 0 ? !elementwise(st->prim) : !vectorizable(st->callee)) return false;
  }
  return true;
}

/* A rank-0 array broadcast to `shape` (a new reference to it when the
   shape is rank-0 too). */
static Array *spread(Array *a, const Type *shape) {
  if (!shape || a->rank == shape->rank) return arr_ref(a);
  Array *r = arr_new((DType)a->dt, shape->rank, shape->shape);
  size_t es = dtype_sizes[a->dt];
  for (int64_t i = 0; i < r->size; i++) memcpy((char *)r->data + i * (int64_t)es, a->data, es);
  return r;
}

static Array *atom_value(Array **slots, const IrAtom *a, const Type *shape) {
  return a->var ? arr_ref(slots[a->var->slot]) : spread(a->lit, shape);
}

/* f on args; `shape` NULL: f's own types (the per-element pass);
   otherwise every value has that shape (the vectorised pass). */
static void run(const IrFunc *f, Array *const *args, Array **outs, const Type *shape) {
  Array **slots = mem_calloc(sizeof(Array *) * (size_t)(f->nslots ? f->nslots : 1));
  for (int k = 0; k < f->nparams; k++) slots[f->params[k]->slot] = arr_ref(args[k]);
  for (int i = 0; i < f->nbody; i++) {
    const IrStmt *st = f->body[i];
    if (st->k == IS_CONST) slots[st->out[0]->slot] = spread(st->value, shape);
    if (st->k != IS_EQN) continue;
    Array **in = mem_calloc(sizeof(Array *) * (size_t)(st->nin + 1));
    Array **res = mem_calloc(sizeof(Array *) * (size_t)(st->nout + 1));
    Type *outt = mem_calloc(sizeof(Type) * (size_t)(st->nout + 1));
    for (int k = 0; k < st->nin; k++) in[k] = atom_value(slots, &st->in[k], shape);
    for (int k = 0; k < st->nout; k++) {
      outt[k] = st->out[k]->t;
      if (shape) rule_set_type(&outt[k], outt[k].dt, shape->rank, shape->shape);
    }
    if (st->prim >= 0) prim_table[st->prim].kernel(st->at, in, st->nin, res, outt);
    else run(st->callee, in, res, shape);
    for (int k = 0; k < st->nout; k++) slots[st->out[k]->slot] = res[k];
    for (int k = 0; k < st->nin; k++) arr_unref(in[k]);
    mem_free(in);
    mem_free(res);
    mem_free(outt);
  }
  for (int k = 0; k < f->nouts; k++) outs[k] = atom_value(slots, &f->outs[k], shape);
  for (int s = 0; s < f->nslots; s++) arr_unref(slots[s]);
  mem_free(slots);
}

void body_run(const IrFunc *f, Array *const *args, Array **outs) {
  const Array *a0 = args[0];
  Type shape;
  memset(&shape, 0, sizeof shape);
  rule_set_type(&shape, a0->dt, a0->rank, a0->shape);
  if (vectorizable(f)) {
    run(f, args, outs, &shape);
    return;
  }
  int n = f->nparams, m = f->nouts;
  Array **one = mem_calloc(sizeof(Array *) * (size_t)(n + m + 1)), **res = one + n;
  for (int k = 0; k < m; k++) outs[k] = arr_new((DType)f->outs[k].t.dt, a0->rank, a0->shape);
  for (int k = 0; k < n; k++) one[k] = arr_new((DType)args[k]->dt, 0, NULL);
  for (int64_t i = 0; i < a0->size; i++) {
    for (int k = 0; k < n; k++) {
      size_t es = dtype_sizes[args[k]->dt];
      memcpy(one[k]->data, (const char *)args[k]->data + i * (int64_t)es, es);
    }
    run(f, one, res, NULL);
    for (int k = 0; k < m; k++) {
      size_t es = dtype_sizes[outs[k]->dt];
      memcpy((char *)outs[k]->data + i * (int64_t)es, res[k]->data, es);
      arr_unref(res[k]);
    }
  }
  for (int k = 0; k < n; k++) arr_unref(one[k]);
  mem_free(one);
}
