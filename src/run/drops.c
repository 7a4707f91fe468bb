/*
** drops.c — when a function's frame lets go of each value (see drops.h).
*/
#include <limits.h>
#include "drops.h"

static void set_last(IrVar *v, IrFunc *fn, int k) {
  if (v && v->owner == fn) v->last = k;
}

/* v's slot among those statement k of fn releases: fn's own variable,
   read by no nested function, last used there (once; -1 when more than
   the list holds). */
static void add_drop(IrStmt *st, IrFunc *fn, int k, IrVar *v) {
  if (!v || v->owner != fn || v->captured || v->last != k || st->ndrop < 0) return;
  for (int d = 0; d < st->ndrop; d++)
    if (st->drop[d] == v->slot) return;
  if (st->ndrop == (int)(sizeof st->drop / sizeof st->drop[0])) st->ndrop = -1;
  else st->drop[st->ndrop++] = v->slot;
}

void drops_plan(IrFunc *fn) {
  for (int i = 0; i < fn->nparams; i++) fn->params[i]->last = -1;
  for (int k = 0; k < fn->nbody; k++) {
    IrStmt *st = fn->body[k];
    for (int j = 0; j < st->nout; j++) set_last(st->out[j], fn, k);
    for (int j = 0; j < st->nin; j++) set_last(st->in[j].var, fn, k);
    for (int j = 0; j < st->nitems; j++) set_last(st->items[j].atom.var, fn, k);
  }
  for (int j = 0; j < fn->nouts; j++) set_last(fn->outs[j].var, fn, INT_MAX);
  for (int k = 0; k < fn->nbody; k++) {
    IrStmt *st = fn->body[k];
    st->drop_fn = fn;
    st->drop_at = k;
    st->ndrop = 0;
    for (int j = 0; j < st->nin; j++) add_drop(st, fn, k, st->in[j].var);
    for (int j = 0; j < st->nitems; j++) add_drop(st, fn, k, st->items[j].atom.var);
    for (int j = 0; j < st->nout; j++) add_drop(st, fn, k, st->out[j]);
  }
  fn->drops_planned = true;
}
