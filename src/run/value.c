/*
** value.c — runtime values, and elementwise operations over all their blocks at once (see value.h).
*/
#include "err.h"
#include "ew.h"
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
  int64_t n = til_nblk(m, to);
  Val *w = val_new(to, n);
  for (int64_t b = 0; b < n; b++) w->blk[b] = arr_ref(v->blk[til_project(m, to, b, v->mask)]);
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

/* ---- elementwise operations over all blocks ----------------------------------------- */

#define EW_SLAB_MAX ((size_t)32 << 10)

int val_ew_plan(const Type *t, uint32_t R, int64_t nb, Val *const *opv, Array *const *lit, int nin, int donor) {
  int64_t n = type_size(t);
  if (n < 0 || (size_t)n > EW_SLAB_MAX || (n * dtype_sizes[t->dt] + sizeof(Array)) * (size_t)nb > EW_SLAB_MAX)
    return -1;
  int flat = 0, dt = -1;
  for (int i = 0; i < nin; i++) {
    Val *v = opv[i];
    Array *a0 = v ? v->blk[0] : lit[i];
    if (!a0 || (dt >= 0 && a0->dt != dt)) return -1;
    for (int d = 0; a0->rank && d < a0->rank; d++)      /* a dimension of 1 broadcast: the kernel's */
      if (a0->rank != t->rank || a0->shape[d] != t->shape[d]) return -1;
    dt = a0->dt;
    if ((!v || v->mask == 0) && a0->rank == 0) flat |= 1 << i;     /* one scalar for all blocks */
    else if (v && v->mask == R && a0->rank == t->rank && (nb == 1 || i == donor || arr_in_slab(v->blk, nb)))
      flat |= 1 << i;
  }
  return flat;
}

bool val_ew_donor(const Val *v, const Type *t, uint32_t R) {
  const Array *a0 = v->blk[0];
  if (v->mask != R || v->split || !a0 || a0->dt != t->dt || a0->rank != t->rank) return false;
  for (int d = 0; d < t->rank; d++)
    if (a0->shape[d] != t->shape[d]) return false;
  return arr_owned(v->blk, v->nblk);
}

void val_ew_blocks(Val *out, const Type *t) {
  if (out->nblk == 1) out->blk[0] = arr_new((DType)t->dt, t->rank, t->shape);
  else arr_slab((DType)t->dt, t->rank, t->shape, out->nblk, out->blk);
}

/* Operands whose blocks together are at most this many bytes are
   gathered into one run on the stack when they are not one already (a
   value shared by all blocks, blocks not of one slab): copying them costs
   less than running the operation block by block. */
#define EW_GATHER_MAX 4096

void val_ew_run(const Mesh *m, int op, const Type *t, Val *const *opv, Array *const *lit, int nin, int flat,
                Val *out) {
  uint32_t R = out->mask;
  int64_t nb = out->nblk, n = type_size(t);
  const Array *a0[2] = {NULL, NULL};
  for (int i = 0; i < nin; i++) a0[i] = opv[i] ? opv[i]->blk[0] : lit[i];
  size_t bsz = (size_t)n * dtype_sizes[a0[0]->dt];
  bool gather = bsz * (size_t)nb <= EW_GATHER_MAX;
  for (int i = 0; i < nin; i++)        /* (a scalar of each block's own is broadcast block by block) */
    if (!(flat & (1 << i)) && a0[i]->rank != t->rank) gather = false;
  _Alignas(64) unsigned char run[2][EW_GATHER_MAX];
  if (flat != (1 << nin) - 1 && gather) {
    for (int i = 0; i < nin; i++) {
      if (flat & (1 << i)) continue;
      Val *v = opv[i];
      for (int64_t b = 0; b < nb; b++) {
        const Array *x = !v ? lit[i] : v->blk[v->mask == R ? b : v->mask == 0 ? 0 : til_project(m, R, b, v->mask)];
        memcpy(run[i] + (size_t)b * bsz, x->data, bsz);
      }
    }
  } else if (flat != (1 << nin) - 1) {
    for (int64_t b = 0; b < nb; b++) {
      const Array *x[2] = {NULL, NULL};
      for (int i = 0; i < nin; i++) {
        Val *v = opv[i];
        x[i] = !v ? lit[i] : v->blk[v->mask == R ? b : v->mask == 0 ? 0 : til_project(m, R, b, v->mask)];
      }
      ew_apply_small(op, x[0], x[1], out->blk[b]);
    }
    return;
  }
  /* flat views of the operands and of the result over all blocks (only
     the fields the engine reads: no need to clear 160 bytes each) */
  Array x[2], r;
  r.dt = t->dt;
  r.rank = 1;
  r.size = n * nb;
  r.data = out->blk[0]->data;
  for (int i = 0; i < nin; i++) {
    bool one = (flat & (1 << i)) && a0[i]->rank == 0 && (!opv[i] || opv[i]->mask == 0);
    x[i].dt = a0[i]->dt;
    x[i].rank = one ? 0 : 1;
    x[i].size = one ? 1 : n * nb;
    x[i].data = flat & (1 << i) ? a0[i]->data : run[i];
  }
  ew_apply_small(op, &x[0], nin > 1 ? &x[1] : NULL, &r);
}
