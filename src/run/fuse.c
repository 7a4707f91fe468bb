/*
** fuse.c — chains of elementwise equations run as one pass over memory
** (see fuse.h): which statements make a chain, and the tiled loop that
** runs one over a block.
*/
#include "ew.h"
#include "fuse.h"
#include "mem.h"
#include "par.h"
#include "prims.h"

/* ---- planning ------------------------------------------------------------------ */

static bool same_shape(const Type *a, const Type *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

/* An operand a chain step reads as it is: a scalar (literal or value,
   broadcast) or a value of the chain's shape, of the step's dtype. */
static bool operand_ok(const IrAtom *a, const Type *ct, int dt) {
  if (a->lit) return a->lit->rank == 0 && a->lit->dt == dt;
  const Type *t = &a->var->t;
  return t->dt == dt && (t->rank == 0 || same_shape(t, ct));
}

/* Whether st may be a step of a chain of fn whose results have type ct
   (NULL: st's own). */
/* A fill a chain may start from (or take in): arange or iota of a dtype
   prim_fill_tile writes. */
static bool fill_step(const IrStmt *st) {
  int dt = st->out[0]->t.dt;
  if (st->prim == P_ARANGE) return dt == DT_F32 || dt == DT_F64;
  return st->prim == P_IOTA && (dt == DT_F32 || dt == DT_F64 || dt == DT_I32 || dt == DT_I64);
}

static bool fusable(const IrFunc *fn, const IrStmt *st, const Type *ct) {
  if (st->k != IS_EQN || st->prim < 0 || st->nout != 1 || st->nin > 2) return false;
  int op = prim_ew_op(st->prim);
  if (st->nin == 0 ? !fill_step(st) : op < 0 || (op >= U_NEG) != (st->nin == 1)) return false;
  const IrVar *o = st->out[0];
  if (!ct) ct = &o->t;
  if (o->owner != fn || o->captured || o->t.rank == 0 || !same_shape(&o->t, ct)) return false;
  if (st->nin == 0) return true;
  int dt = st->in[0].lit ? st->in[0].lit->dt : st->in[0].var->t.dt;
  for (int k = 0; k < st->nin; k++)
    if (!operand_ok(&st->in[k], ct, dt)) return false;
  return true;
}

/* Whether statement j may follow the steps [i, j): its result a variable
   that none of them sets or reads, nor j itself reads. */
static bool extends(IrStmt *const *body, int i, int j) {
  const IrVar *o = body[j]->out[0];
  for (int k = i; k <= j; k++) {
    if (k < j && body[k]->out[0] == o) return false;
    for (int q = 0; q < body[k]->nin; q++)
      if (body[k]->in[q].var == o) return false;
  }
  return true;
}

/* Whether [i, e) is a chain: every result but the last read by no
   statement after it (its last use inside). */
static bool closed(IrStmt *const *body, int i, int e) {
  for (int k = i; k < e - 1; k++)
    if (body[k]->out[0]->last >= e) return false;
  return true;
}

void fuse_plan(IrFunc *fn) {
  IrStmt *const *body = fn->body;
  for (int k = 0; k < fn->nbody; k++) body[k]->fuse_n = 0;
  for (int i = 0; i < fn->nbody;) {
    if (!fusable(fn, body[i], NULL) || !extends(body, i, i)) {
      i++;
      continue;
    }
    const Type *ct = &body[i]->out[0]->t;
    int j = i + 1;
    while (j < fn->nbody && j - i < FUSE_MAX && fusable(fn, body[j], ct) && extends(body, i, j)) j++;
    int e = j;
    while (e >= i + 2 && !closed(body, i, e)) e--;
    if (e < i + 2) {
      i++;
      continue;
    }
    body[i]->fuse_n = e - i;
    i = e;
  }
}

void fuse_resolve(IrStmt *const *st, int n, FuseChain *c) {
  c->nstep = n;
  c->next = 0;
  for (int s = 0; s < n; s++) {
    FuseStep *p = &c->step[s];
    p->op = prim_ew_op(st[s]->prim);
    p->nin = st[s]->nin;
    p->dt = st[s]->out[0]->t.dt;
    p->prim = st[s]->prim;
    p->at = st[s]->at;
    p->t = &st[s]->out[0]->t;
    for (int q = 0; q < p->nin; q++) {
      const IrAtom *a = &st[s]->in[q];
      int src = 0;
      for (int t = s - 1; t >= 0 && a->var; t--)
        if (st[t]->out[0] == a->var) {
          src = t + 1;
          break;
        }
      if (src) {
        p->src[q] = src - 1;
        continue;
      }
      int k = 0;
      while (k < c->next && !(a->var ? c->ext[k]->var == a->var : c->ext[k] == a)) k++;
      if (k == c->next) c->ext[c->next++] = a;
      p->src[q] = -1 - k;
    }
  }
}

/* ---- running ------------------------------------------------------------------- */

#define TILE 2048          /* elements computed by every step before the next tile */
#define TASKS 16           /* the tiles shared among the threads in this many runs */

typedef struct Job {
  const FuseChain *c;
  Array *const *ex;
  Array *r;
  char *scratch;           /* per task: a tile of each intermediate */
  size_t per_task, off[FUSE_MAX];
  int64_t ntile, per;      /* tiles in all, and per task */
} Job;

/* Elements [lo, lo + len) of x; a scalar stays whole (it broadcasts). */
static Array tile_of(const Array *x, int64_t lo, int64_t len) {
  Array v = *x;
  if (x->rank == 0) return v;
  v.data = (char *)x->data + lo * dtype_sizes[x->dt];
  v.size = len;
  return v;
}

static void run_task(void *ctx, int64_t task) {
  Job *j = ctx;
  const FuseChain *c = j->c;
  char *scr = j->scratch + (size_t)task * j->per_task;
  int64_t t1 = (task + 1) * j->per < j->ntile ? (task + 1) * j->per : j->ntile;
  Array val[FUSE_MAX];
  for (int64_t t = task * j->per; t < t1; t++) {
    int64_t lo = t * TILE, len = j->r->size - lo < TILE ? j->r->size - lo : TILE;
    for (int s = 0; s < c->nstep; s++) {
      const FuseStep *p = &c->step[s];
      Array *o = &val[s];
      *o = tile_of(j->r, lo, len);
      if (s < c->nstep - 1) {
        o->dt = p->dt;
        o->data = scr + j->off[s];
      }
      if (!p->nin) {
        prim_fill_tile(p->prim, p->at, p->t, o, lo, len);
        continue;
      }
      Array in[2];
      for (int q = 0; q < p->nin; q++)
        in[q] = p->src[q] >= 0 ? val[p->src[q]] : tile_of(j->ex[-1 - p->src[q]], lo, len);
      ew_apply_small(p->op, &in[0], p->nin > 1 ? &in[1] : NULL, o);
    }
  }
}

void fuse_block(const FuseChain *c, Array *const *ex, Array *r) {
  Job j = {c, ex, r, NULL, 0, {0}, 0, 0};
  int64_t n = r->size;
  double bytes = (double)n * dtype_sizes[r->dt];
  for (int s = 0; s < c->nstep - 1; s++) {
    j.off[s] = j.per_task;
    j.per_task += (size_t)TILE * dtype_sizes[c->step[s].dt];
    bytes += (double)n * dtype_sizes[c->step[s].dt];
  }
  for (int k = 0; k < c->next; k++)
    if (ex[k]->rank) bytes += (double)n * dtype_sizes[ex[k]->dt];
  j.ntile = (n + TILE - 1) / TILE;
  j.per = (j.ntile + TASKS - 1) / TASKS;
  int64_t ntask = (j.ntile + j.per - 1) / j.per;
  j.scratch = mem_alloc(j.per_task * (size_t)ntask);
  par_for(ntask, run_task, &j, bytes);
  mem_free(j.scratch);
}
