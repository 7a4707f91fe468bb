/*
** gather.c — a shard_map's blocks put together into the global array (see
** gather.h).
*/
#include "gather.h"

#include <string.h>
#include "err.h"
#include "fabmpi.h"
#include "fabric.h"
#include "mem.h"
#include "vprint.h"

static void release_arr(void *a) { arr_unref(a); }

/* A per-device type of an xla_pmap with its mapped dimension d, of size 1. */
Type gat_pmap_view(const Type *t, int d) {
  Type v = *t;
  for (int j = v.rank; j > d; j--) v.shape[j] = v.shape[j - 1];
  v.shape[d] = 1;
  v.rank++;
  return v;
}

/* Does rank q own an instance holding block b of `mask`? */
static bool rank_holds(const Mesh *m, int q, uint32_t mask, int64_t b) {
  int64_t lo, hi;
  fmpi_range(m->ndev, q, &lo, &hi);
  for (int64_t i = lo; i < hi; i++)
    if (val_block_of(m, mask, i) == b) return true;
  return false;
}

/* Under several ranks: every rank gets the blocks of a body's result v
   that assembling it per out_specs (mask `spec`) reads, each sent by the
   owner of the first instance that holds it. */
static void share_blocks(const Mesh *m, Val *v, uint32_t spec, const Type *bt) {
  int n = fmpi_size();
  int64_t nb = val_nblk(m, spec);
  /* (one allocation, released by a runtime error too: the moves, the
     ranks, the blocks done) */
  size_t nmax = (size_t)(nb * n + 1);
  char *mem = mem_calloc(sizeof(FabBlockMove) * nmax + sizeof(int) * (size_t)n + (size_t)v->nblk);
  err_defer(mem_free, mem);
  FabBlockMove *mv = (FabBlockMove *)mem;
  int *ranks = (int *)(mem + sizeof(FabBlockMove) * nmax);
  uint8_t *done = (uint8_t *)(ranks + n);
  int nmv = 0;
  for (int q = 0; q < n; q++) ranks[q] = q;
  for (int64_t b = 0; b < nb; b++) {
    int64_t inst = val_first_inst(m, spec, b), vb = val_block_of(m, v->mask, inst);
    if (done[vb]) continue;
    done[vb] = 1;
    int from = fmpi_owner(m->ndev, inst);
    for (int q = 0; q < n; q++)
      if (q != from && !rank_holds(m, q, v->mask, vb)) mv[nmv++] = (FabBlockMove){from, q, &v->blk[vb]};
  }
  fab_move_blocks(ranks, n, mv, nmv, (DType)bt->dt, bt->rank, bt->shape);
  err_undefer(mem);
  mem_free(mem);
}


/* The global array of type gt that the blocks v (of type bt: the body's
   result type, which under xla_pmap lacks the dimension out_axis) tile
   as spc says; under several ranks the blocks are first shared among the
   ranks. */
Array *gat_assemble(const Mesh *m, const Spec *spc, const Type *gt, const Type *bt, int out_axis, Val *v) {
  if (fmpi_size() > 1) share_blocks(m, v, spc->mask, bt);
  if (spc->mask == 0 && v->blk[0] && v->mask == 0) return arr_ref(v->blk[0]);
  Array *g = arr_new((DType)gt->dt, gt->rank, gt->shape);
  err_defer(release_arr, g);
  int64_t nb = val_nblk(m, spc->mask), coords[SHM_MAXAXES];
  for (int64_t b = 0; b < nb; b++) {
    int64_t inst = val_first_inst(m, spc->mask, b);
    Array *blk = v->blk[val_block_of(m, v->mask, inst)], view = *blk;
    if (out_axis >= 0) {                  /* xla_pmap: stacked along out_axis */
      Type vt = gat_pmap_view(bt, out_axis);
      view.rank = vt.rank;
      memcpy(view.shape, vt.shape, sizeof view.shape);
    }
    val_coords(m, inst, coords);
    int64_t start[SHM_MAXRANK];
    vp_block_start(m, spc, coords, view.shape, view.rank, start);
    arr_put_block(g, start, &view);
  }
  err_undefer(g);
  return g;
}


/* The type of a block of an array of type gt tiled by spc on m. */
Type gat_block_type(const Mesh *m, const Spec *spc, const Type *gt) {
  Type bt = *gt;
  for (int d = 0; d < spc->ndims && d < bt.rank; d++)
    for (int k = 0; k < spc->dim[d].naxes; k++) bt.shape[d] /= m->size[spc->dim[d].axes[k]];
  return bt;
}


bool gat_same_mesh(const Mesh *a, const Mesh *b) {
  if (a == b) return true;
  if (a->naxes != b->naxes) return false;
  for (int k = 0; k < a->naxes; k++)
    if (a->size[k] != b->size[k] || !str_eq(a->axis[k], b->axis[k])) return false;
  return true;
}

/* Do specs a and b tile an array alike (an omitted dimension and None
   alike)? */
bool gat_same_tiling(const Spec *a, const Spec *b) {
  int n = a->ndims > b->ndims ? a->ndims : b->ndims;
  for (int d = 0; d < n; d++) {
    int na = d < a->ndims ? a->dim[d].naxes : 0, nb = d < b->ndims ? b->dim[d].naxes : 0;
    if (na != nb || (na && memcmp(a->dim[d].axes, b->dim[d].axes, (size_t)na))) return false;
  }
  return true;
}


/* Assemble x, a value kept split: every rank calls it at the same
   statement (outside bodies every rank runs the same statements). */
void gat_realize(Val *x) {
  if (!x->split) return;
  ValSplit *sv = x->split;
  Type bt = gat_block_type(sv->mesh, sv->spec, &sv->gt);
  x->blk[0] = gat_assemble(sv->mesh, sv->spec, &sv->gt, &bt, -1, sv->blocks);
  x->split = NULL;
  val_unref(sv->blocks);
  mem_free(sv);
}

