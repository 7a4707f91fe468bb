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
#include "par.h"
#include "valprint.h"

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
  /* A block coming here is one no instance of this rank holds: what v
     has there may be stale (a varying while's carry as it was before the
     owner's iterations), and a filled slot would keep it. */
  for (int i = 0; i < nmv; i++)
    if (mv[i].to == fmpi_rank()) {
      arr_unref(*mv[i].slot);
      *mv[i].slot = NULL;
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

/* ---- splitting by sharing ---------------------------------------------------------- */

bool gat_gemm_only(const IrFunc *fn, const IrVar *v) {
  if (v->captured) return false;
  for (int j = 0; j < fn->nouts; j++)
    if (fn->outs[j].var == v) return false;
  for (int k = 0; k < fn->nbody; k++) {
    IrStmt *st = fn->body[k];
    for (int j = 0; j < st->nitems; j++)
      if (st->items[j].atom.var == v) return false;
    for (int j = 0; j < st->nin; j++) {
      if (st->in[j].var != v) continue;
      if (st->k == IS_EQN && st->prim == P_DOT_GENERAL) continue;
      if (st->k == IS_EQN && st->prim == P_PBROADCAST && st->nout == 1 && gat_gemm_only(fn, st->out[0])) continue;
      return false;
    }
  }
  return true;
}

int64_t gat_block_offset(const Mesh *m, const Spec *spc, const Type *bt, const Array *g, int64_t b) {
  int64_t strides[SHM_MAXRANK], coords[SHM_MAXAXES], start[SHM_MAXRANK], off = 0;
  arr_strides(g->rank, g->shape, strides);
  val_coords(m, val_first_inst(m, spc->mask, b), coords);
  vp_block_start(m, spc, coords, bt->shape, bt->rank, start);
  for (int d = 0; d < g->rank; d++) off += start[d] * strides[d];
  return off;
}

bool gat_share(const Mesh *m, const Spec *spc, const Type *bt, Array *g, int64_t nb, bool pitched, Array **blk) {
  int r = g->rank;
  if (g->pitch || bt->rank != r || bt->dt != g->dt || nb < 1 || r < 1) return false;
  /* contiguous: dimensions of 1, then one partial, then whole ones */
  int d0 = 0;
  while (d0 < r - 1 && bt->shape[d0] == 1) d0++;
  bool run = true;
  for (int d = d0 + 1; d < r; d++) run = run && bt->shape[d] == g->shape[d];
  int64_t pitch = 0;
  if (!run) {
    if (!pitched || r != 2) return false;
    pitch = g->shape[1];
  }
  int64_t *off = mem_alloc(sizeof(int64_t) * (size_t)nb);
  err_defer(mem_free, off);
  for (int64_t b = 0; b < nb; b++) off[b] = gat_block_offset(m, spc, bt, g, b);
  arr_views(g, r, bt->shape, nb, off, pitch, blk);
  err_undefer(off);
  mem_free(off);
  return true;
}

/* ---- splitting in place ------------------------------------------------------------ */

#define CARVE_MIN ((size_t)1 << 20)

/* Move the box `box` at `from` of a row-major array of shape `shape` at
   base to the front of base, row-major: every element moves to an offset
   no greater than its own, and the runs go in increasing order, so that
   none is overwritten before it is read. */
static void compact_box(char *base, const int64_t *shape, const int64_t *from, const int64_t *box, int rank,
                        size_t es) {
  int64_t st[SHM_MAXRANK], idx[SHM_MAXRANK] = {0};
  arr_byte_strides(rank, shape, es, st);
  size_t run = (size_t)box[rank - 1] * es, done = 0;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off += (from[d] + idx[d]) * st[d];
    memmove(base + done, base + off, run);
    done += run;
    int d = rank - 2;
    for (; d >= 0 && ++idx[d] == box[d]; d--) idx[d] = 0;
    if (d < 0) return;
  }
}

/* The bands of a carve, half h of them on each of two threads, each with
   its own scratch of k - 1 blocks. */
typedef struct CarveJob {
  char *data;
  char *tmp[2];
  int64_t (*start)[SHM_MAXRANK];
  int64_t bshape[SHM_MAXRANK];         /* a band's shape */
  const int64_t *box;                  /* a block's shape */
  int rank;
  int64_t nbands, k;
  size_t band, bbytes, es;
} CarveJob;

/* Band r: blocks 1..k-1 into the scratch, block 0 moved to the band's
   front in place, then the others after it. */
static void carve_band(CarveJob *j, char *tmp, int64_t r) {
  char *base = j->data + (size_t)r * j->band;
  int64_t zero[SHM_MAXRANK] = {0};
  for (int64_t b = 1; b < j->k; b++) {
    int64_t *from = j->start[r * j->k + b];
    from[0] = 0;                                   /* within the band */
    arr_copy_box(tmp + (size_t)(b - 1) * j->bbytes, j->box, zero, base, j->bshape, from, j->box, j->rank, j->es);
  }
  int64_t *from = j->start[r * j->k];
  from[0] = 0;
  compact_box(base, j->bshape, from, j->box, j->rank, j->es);
  memcpy(base + j->bbytes, tmp, (size_t)(j->k - 1) * j->bbytes);
}

static void carve_half(void *ctx, int64_t h) {
  CarveJob *j = ctx;
  int64_t mid = j->nbands / 2;
  for (int64_t r = h ? mid : 0; r < (h ? j->nbands : mid); r++) carve_band(j, j->tmp[h], r);
}

bool gat_carve(const Mesh *m, const Spec *spc, const Type *bt, Array *g, int64_t nb, Array **blk) {
  size_t es = dtype_sizes[g->dt], gbytes = arr_nbytes(g);
  if (g->refc != 1 || g->slab || g->rank < 1 || bt->rank != g->rank || bt->dt != g->dt || nb < 2 ||
      gbytes < CARVE_MIN)
    return false;
  int64_t bsize = shape_size(bt->rank, bt->shape), h = bt->shape[0];
  if (bsize <= 0 || h <= 0 || (size_t)bsize * es * (size_t)nb != gbytes || g->shape[0] % h) return false;
  int64_t nbands = g->shape[0] / h;
  /* (one band of several blocks: the scratch would be most of g, no better than copying) */
  if (nbands == 1 || nb % nbands) return false;
  int64_t k = nb / nbands;                 /* blocks per band */
  int64_t(*start)[SHM_MAXRANK] = mem_alloc(sizeof *start * (size_t)nb);
  int64_t coords[SHM_MAXAXES];
  bool ok = true;
  for (int64_t b = 0; b < nb && ok; b++) {
    val_coords(m, val_first_inst(m, spc->mask, b), coords);
    vp_block_start(m, spc, coords, bt->shape, bt->rank, start[b]);
    ok = start[b][0] == (b / k) * h;
  }
  if (!ok) {
    mem_free(start);
    return false;
  }
  err_defer(mem_free, start);
  CarveJob j = {g->data, {NULL, NULL}, start, {0}, bt->shape, g->rank, nbands, k,
                (size_t)h * (gbytes / (size_t)g->shape[0]), (size_t)bsize * es, es};
  for (int d = 0; d < g->rank; d++) j.bshape[d] = g->shape[d];
  j.bshape[0] = h;
  /* scratch first: it may fail, and nothing has changed yet */
  int nt = k > 1 ? 2 : 0;                    /* (k == 1: the bands are the blocks already) */
  for (int t = 0; t < nt; t++) {
    j.tmp[t] = mem_alloc((size_t)(k - 1) * j.bbytes);
    err_defer(mem_free, j.tmp[t]);
  }
  arr_carve(g, bt->rank, bt->shape, nb, blk);
  if (nt) par_for(2, carve_half, &j, (double)gbytes);
  for (int t = nt - 1; t >= 0; t--) {
    err_undefer(j.tmp[t]);
    mem_free(j.tmp[t]);
  }
  err_undefer(start);
  mem_free(start);
  return true;
}
