/*
** split.c — global arrays split into a shard_map body's blocks, and blocks
** assembled into global arrays, across ranks too (see split.h).
*/
#include "split.h"

#include <string.h>
#include "err.h"
#include "fabmpi.h"
#include "fabric.h"
#include "mem.h"
#include "par.h"

static void release_arr(void *a) { arr_unref(a); }
static void release_val(void *v) { val_unref(v); }

/* ---- assembling ------------------------------------------------------------------- */

Array *spl_assemble(const Mesh *m, const Spec *spc, const Type *gt, const Type *bt, int out_axis, Val *v) {
  if (spc->mask == 0 && v->blk[0] && v->mask == 0) return arr_ref(v->blk[0]);
  Array *g = arr_new((DType)gt->dt, gt->rank, gt->shape);
  err_defer(release_arr, g);
  int64_t nb = til_nblk(m, spc->mask), start[SHM_MAXRANK];
  for (int64_t b = 0; b < nb; b++) {
    Array *blk = v->blk[til_block_of(m, v->mask, til_first_inst(m, spc->mask, b))], view = *blk;
    if (out_axis >= 0) {                  /* xla_pmap: stacked along out_axis */
      Type vt = til_pmap_view(bt, out_axis);
      view.rank = vt.rank;
      memcpy(view.shape, vt.shape, sizeof view.shape);
    }
    til_start_of(m, spc, b, view.shape, view.rank, start);
    arr_put_block(g, start, &view);
  }
  err_undefer(g);
  return g;
}

/* Does rank q own an instance holding block b of `mask`? */
static bool rank_holds(const Mesh *m, int q, uint32_t mask, int64_t b) {
  int64_t lo, hi;
  fmpi_range(m->ndev, q, &lo, &hi);
  for (int64_t i = lo; i < hi; i++)
    if (til_block_of(m, mask, i) == b) return true;
  return false;
}

/* Under several ranks: every rank gets the blocks of a body's result v
   that assembling it per out_specs (mask `spec`) reads, each sent by the
   owner of the first instance that holds it. */
static void share_blocks(const Mesh *m, Val *v, uint32_t spec, const Type *bt) {
  int n = fmpi_size();
  int64_t nb = til_nblk(m, spec);
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
    int64_t inst = til_first_inst(m, spec, b), vb = til_block_of(m, v->mask, inst);
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

/* spl_assemble on every rank: the blocks shared among the ranks first. */
static Array *assemble_everywhere(const Mesh *m, const Spec *spc, const Type *gt, const Type *bt, int out_axis,
                                  Val *v) {
  if (fmpi_size() > 1) share_blocks(m, v, spc->mask, bt);
  return spl_assemble(m, spc, gt, bt, out_axis, v);
}

Array *spl_global(const Mesh *m, const Spec *spc, Val *v, char *err, size_t errlen) {
  const Array *b0 = NULL;
  for (int64_t i = 0; i < v->nblk && !b0; i++) b0 = v->blk[i];
  if (!b0 && !(v->mask & ~spc->mask)) {
    snprintf(err, errlen, "no device on this path holds the value");
    return NULL;
  }
  if (!til_global_ok(m, spc, v->mask, b0 ? b0->rank : 0, err, errlen)) return NULL;
  int64_t nb = til_nblk(m, spc->mask);
  for (int64_t b = 0; b < nb; b++)
    if (!v->blk[til_block_of(m, v->mask, til_first_inst(m, spc->mask, b))]) {
      snprintf(err, errlen, "some devices are not on this path: their blocks are missing");
      return NULL;
    }
  Type bt, gt;
  memset(&bt, 0, sizeof bt);
  bt.dt = b0->dt;
  bt.rank = (uint8_t)b0->rank;
  memcpy(bt.shape, b0->shape, sizeof(int64_t) * (size_t)b0->rank);
  gt = bt;
  til_global_shape(m, spc, bt.rank, bt.shape, gt.shape);
  return spl_assemble(m, spc, &gt, &bt, -1, v);
}

void spl_realize(Val *x) {
  if (!x->split) return;
  ValSplit *sv = x->split;
  Type bt = til_block_type(sv->mesh, sv->spec, &sv->gt);
  x->blk[0] = assemble_everywhere(sv->mesh, sv->spec, &sv->gt, &bt, -1, sv->blocks);
  x->split = NULL;
  val_unref(sv->blocks);
  mem_free(sv);
}

/* ---- results ------------------------------------------------------------------------ */

/* A top-level value kept as the blocks `blocks` of an array of type gt
   tiled by spc on m. */
static Val *kept_split(Val *blocks, const Mesh *m, const Spec *spc, const Type *gt) {
  Val *gv = val_new(0, 1);
  gv->split = mem_alloc(sizeof *gv->split);
  *gv->split = (ValSplit){blocks, m, spc, *gt};
  return gv;
}

Val *spl_result(const IrStmt *st, int i, Val *blocks, bool may_keep) {
  ShardMap *sm = st->at->ext;
  const IrAtom *o = &st->at->fns[0]->outs[i];
  /* under ranks, at the top level: calls pass it on as it is, and a
     shard_map that reads it with the same tiling on the same mesh takes
     the blocks, so nothing is assembled */
  if (may_keep && fmpi_size() > 1 && !sm->out_axis && !st->out[i]->captured && o->var)
    return kept_split(val_ref(blocks), sm->mesh, &sm->out[i], &st->out[i]->t);
  Type bt;
  if (o->var) {
    bt = o->var->t;
  } else {
    memset(&bt, 0, sizeof bt);
    bt.dt = o->lit->dt;
    bt.rank = (uint8_t)o->lit->rank;
    memcpy(bt.shape, o->lit->shape, sizeof(int64_t) * (size_t)o->lit->rank);
  }
  Val *gv = val_new(0, 1);
  err_defer(release_val, gv);
  gv->blk[0] = assemble_everywhere(sm->mesh, &sm->out[i], &st->out[i]->t, &bt, sm->out_axis ? sm->out_axis[i] : -1,
                                   blocks);
  err_undefer(gv);
  return gv;
}

Val *spl_ew(const IrStmt *st, Val *const *ops) {
  if (st->k != IS_EQN || st->prim < 0 || st->nout != 1 || st->nin > 8 || prim_ew_op(st->prim) < 0 ||
      st->out[0]->captured)
    return NULL;
  const Type *ot = &st->out[0]->t;
  const ValSplit *s0 = NULL;
  Val *opv[8] = {0};
  for (int j = 0; j < st->nin; j++) {
    if (st->in[j].lit) {
      if (st->in[j].lit->rank != 0) return NULL;
      continue;
    }
    Val *x = ops[j];
    const Type *t = &st->in[j].var->t;
    if (!x || !x->split || t->rank != ot->rank || memcmp(t->shape, ot->shape, sizeof(int64_t) * t->rank)) return NULL;
    if (s0 && (!til_same_mesh(s0->mesh, x->split->mesh) || !til_same_tiling(s0->spec, x->split->spec))) return NULL;
    if (!s0) s0 = x->split;
    opv[j] = x->split->blocks;
  }
  if (!s0) return NULL;
  const Mesh *m = s0->mesh;
  uint32_t R = s0->spec->mask;
  int64_t nb = til_nblk(m, R);
  Space sp = {m, m->ndev, NULL};
  Type bt = til_block_type(m, s0->spec, ot);
  Val *out = val_new(R, nb);
  err_defer(release_val, out);
  uint8_t *need = fab_needed(&sp, R, nb);
  if (need) err_defer(mem_free, need);
  KernFn k = prim_table[st->prim].kernel;
  Array *ins[8];
  for (int64_t b = 0; b < nb; b++) {
    if (need && !need[b]) continue;
    for (int j = 0; j < st->nin; j++) {
      Val *v = opv[j];
      ins[j] = !v ? st->in[j].lit : v->blk[v->mask == R ? b : v->mask == 0 ? 0 : til_project(m, R, b, v->mask)];
    }
    k(st->at, ins, st->nin, &out->blk[b], &bt);
  }
  if (need) {
    err_undefer(need);
    mem_free(need);
  }
  err_undefer(out);
  return kept_split(out, m, s0->spec, ot);
}

/* ---- operands: splitting by sharing ---------------------------------------------------- */

/* Does fn give its variable v only to dot_general, directly or through
   pbroadcasts (which share blocks)?  Then v's blocks may be pitched views
   (share), which nothing else reads. */
static bool gemm_only(const IrFunc *fn, const IrVar *v) {
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
      if (st->k == IS_EQN && st->prim == P_PBROADCAST && st->nout == 1 && gemm_only(fn, st->out[0])) continue;
      return false;
    }
  }
  return true;
}

/* Splitting by sharing: the blocks blk[0..nb) of g as spc tiles it
   (block type bt) as views of g's elements (arr_views), when each block
   is one contiguous run of g (the tilings of leading dimensions: P(i),
   P(i, None), P(None, i) of a [1, n]...) or, if `pitched`, when g and its
   blocks are matrices, as pitched views (for a body that gives them only
   to dot_general).  Nothing is copied and g may live on: the blocks are
   immutable like it.  false: not such a split, nothing done.  `pitched`
   is asked only when the blocks are not runs (it walks the body). */
static bool share(const Mesh *m, const Spec *spc, const Type *bt, Array *g, int64_t nb, const IrFunc *body,
                  const IrVar *param, bool watched, Array **blk) {
  int r = g->rank;
  if (g->pitch || bt->rank != r || bt->dt != g->dt || nb < 1 || r < 1) return false;
  /* contiguous: dimensions of 1, then one partial, then whole ones */
  int d0 = 0;
  while (d0 < r - 1 && bt->shape[d0] == 1) d0++;
  bool run = true;
  for (int d = d0 + 1; d < r; d++) run = run && bt->shape[d] == g->shape[d];
  int64_t pitch = 0;
  if (!run) {
    if (watched || r != 2 || !gemm_only(body, param)) return false;
    pitch = g->shape[1];
  }
  int64_t *off = mem_alloc(sizeof(int64_t) * (size_t)nb);
  err_defer(mem_free, off);
  for (int64_t b = 0; b < nb; b++) off[b] = til_block_offset(m, spc, b, bt->shape, g->shape, r);
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

/* Splitting without copying: the blocks blk[0..nb) of g as spc tiles it
   (block type bt), made by laying g's elements out in block order in
   place and carving them (arr_carve) -- for an operand that dies as it
   is split (held by nothing else: refc 1).  Done when the blocks tile g
   exactly (no replication), there are several row bands of blocks, and
   each band's blocks are consecutive in block order: a band's blocks are
   rearranged in place through a scratch of the band's other blocks, on
   two threads (nothing moves when a band is one block, as with P(i) and
   P(i, None)), instead of every block being copied into fresh pages.
   Only for big arrays (small blocks go to slabs of their own).  false:
   not such a split, g untouched. */
static bool carve(const Mesh *m, const Spec *spc, const Type *bt, Array *g, int64_t nb, Array **blk) {
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
  bool ok = true;
  for (int64_t b = 0; b < nb && ok; b++) {
    til_start_of(m, spc, b, bt->shape, bt->rank, start[b]);
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

/* ---- operands ---------------------------------------------------------------------- */

/* For splitting a dying operand g into nb blocks (type bt) in block
   order: after[b] = the byte offset in g's elements below which no block
   after b reads, so that the bytes below it can be discarded
   (mem_discard) once block b is copied: a row band of P(i, j) blocks is
   let go when its last block is out, and the whole array and its blocks
   are never both held.  Freed by the caller (mem_free; a runtime error
   frees it too). */
static int64_t *split_plan(const Mesh *m, const Spec *spc, const Type *bt, const Array *g, int64_t nb) {
  int64_t *after = mem_alloc(sizeof(int64_t) * (size_t)nb), low = (int64_t)arr_nbytes(g);
  err_defer(mem_free, after);
  for (int64_t b = nb - 1; b >= 0; b--) {
    after[b] = low;
    int64_t lo = til_block_offset(m, spc, b, bt->shape, g->shape, g->rank) * (int64_t)dtype_sizes[g->dt];
    if (lo < low) low = lo;
  }
  return after;
}

/* The blocks of g copied out (under xla_pmap, in_axis d >= 0, without
   their mapped dimension); a dying g's pages given back as they are
   read. */
static void copy_blocks(const Mesh *m, const Spec *spc, const Type *bt, int d, Array *g, const SplitWay *w, Val *v) {
  int64_t nb = v->nblk;
  int64_t *after = w->dies ? split_plan(m, spc, bt, g, nb) : NULL;
  size_t done = 0;
  for (int64_t b = 0; b < nb; b++) {
    if (spc->mask == 0) { v->blk[b] = arr_ref(g); break; }
    if (w->need && !w->need[b]) continue;
    int64_t start[SHM_MAXRANK];
    til_start_of(m, spc, b, bt->shape, bt->rank, start);
    v->blk[b] = arr_block(g, start, bt->shape);
    if (d >= 0) arr_drop_dim(v->blk[b], d);
    if (after && (size_t)after[b] > done) {
      mem_discard(g, (size_t)((char *)g->data - (char *)g) + done, (size_t)after[b] - done);
      done = (size_t)after[b];
    }
  }
  if (after) {
    err_undefer(after);
    mem_free(after);
  }
}

Val *spl_operand(const IrStmt *st, int i, Array *g, const SplitWay *w) {
  const ShardMap *sm = st->at->ext;
  const IrFunc *body = st->at->fns[0];
  const Mesh *m = sm->mesh;
  const Spec *spc = &sm->in[i];
  Type bt = body->params[i]->t;
  int d = sm->in_axis ? sm->in_axis[i] : -1;
  if (d >= 0) bt = til_pmap_view(&bt, d);    /* xla_pmap: the block with its mapped dimension */
  int64_t nb = til_nblk(m, spc->mask);
  Val *v = val_new(spc->mask, nb);
  err_defer(release_val, v);
  bool whole = d < 0 && !w->need;            /* every block, each with all its dimensions */
  SplitWay way = *w;
  way.dies = w->dies && spc->mask && nb > 1;
  if (spc->mask && whole && share(m, spc, &bt, g, nb, body, body->params[i], w->watched, v->blk)) {
    /* shared */
  } else if (way.dies && whole && carve(m, spc, &bt, g, nb, v->blk)) {
    /* in place */
  } else {
    copy_blocks(m, spc, &bt, d, g, &way, v);
  }
  err_undefer(v);
  return v;
}

bool spl_takes(const IrStmt *st, int j, const Val *x) {
  if (st->k == IS_EQN && st->prim < 0) return true;
  if (st->k != IS_EQN || st->prim != P_SHARD_MAP) return false;
  const ShardMap *to = st->at->ext;
  return !to->in_axis && til_same_mesh(to->mesh, x->split->mesh) && til_same_tiling(&to->in[j], x->split->spec);
}

Val *spl_blocks(const Mesh *m, const Val *x, uint32_t mask) { return val_widen(m, val_ref(x->split->blocks), mask); }
