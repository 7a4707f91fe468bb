/*
** value.c — per-instance values and block arithmetic.
*/
#include "err.h"
#include "value.h"

Val *val_new(uint32_t mask, int64_t nblk) {
  Val *v = mem_alloc(sizeof(Val) + sizeof(Array *) * (size_t)nblk);
  v->refc = 1;
  v->mask = mask;
  v->nblk = nblk;
  v->split = NULL;
  memset(v->blk, 0, sizeof(Array *) * (size_t)nblk);
  return v;
}

Val *val_of(Array *a) {
  Val *v = val_new(0, 1);
  v->blk[0] = arr_ref(a);
  return v;
}

Val *val_widen(const Mesh *m, Val *v, uint32_t to) {
  if (!v || v->mask == to) return v;
  int64_t n = val_nblk(m, to);
  Val *w = val_new(to, n);
  for (int64_t b = 0; b < n; b++) w->blk[b] = arr_ref(v->blk[val_project(m, to, b, v->mask)]);
  val_unref(v);
  return w;
}

void val_free_(Val *v) {
  if (v->split) {
    val_unref(v->split->blocks);
    mem_free(v->split);
  }
  for (int64_t b = 0; b < v->nblk; b++) arr_unref(v->blk[b]);
  mem_free(v);
}

int64_t val_nblk(const Mesh *m, uint32_t mask) {
  int64_t n = 1;
  for (int k = 0; m && k < m->naxes; k++)
    if (mask & (1u << k)) n *= m->size[k];
  return n;
}

void val_coords(const Mesh *m, int64_t inst, int64_t *coords) {
  for (int k = m ? m->naxes - 1 : -1; k >= 0; k--) {
    coords[k] = inst % m->size[k];
    inst /= m->size[k];
  }
}

int64_t val_block_of(const Mesh *m, uint32_t mask, int64_t inst) {
  /* an instance is the block of the mask of every axis */
  return mask ? val_project(m, m->naxes >= 32 ? ~0u : (1u << m->naxes) - 1, inst, mask) : 0;
}

int64_t val_project(const Mesh *m, uint32_t from, int64_t b, uint32_t to) {
  if (from == to) return b;
  if (!to) return 0;
  int64_t r = 0, stride = 1;
  for (int k = m->naxes - 1; k >= 0; k--) {
    if (!(from & (1u << k))) continue;
    int64_t c = b % m->size[k];
    b /= m->size[k];
    if (to & (1u << k)) {
      r += c * stride;
      stride *= m->size[k];
    }
  }
  return r;
}

int64_t val_first_inst(const Mesh *m, uint32_t mask, int64_t b) {
  if (!m) return 0;
  int64_t coords[SHM_MAXAXES];
  for (int k = m->naxes - 1; k >= 0; k--) {
    if (mask & (1u << k)) {
      coords[k] = b % m->size[k];
      b /= m->size[k];
    } else {
      coords[k] = 0;
    }
  }
  int64_t inst = 0;
  for (int k = 0; k < m->naxes; k++) inst = inst * m->size[k] + coords[k];
  return inst;
}
