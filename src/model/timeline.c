/*
** timeline.c — the two-stream schedule, values' readiness and memory per
** device, and the per-line statistics (timeline.h).
*/
#include <math.h>
#include <stdlib.h>
#include "diag.h"
#include "err.h"
#include "fabric.h"
#include "hostplace.h"
#include "timeline.h"

/* ---- values -------------------------------------------------------------------------------
** A value held by one device (a HBuf): its bytes in HBM, when it is ready,
** and, when a collective made it, that collective's interval on the
** device.  Bufs are reference counted: a variable's slot holds one per
** device, and parameters, results and loop carries share them.  Bufs of
** the top level (dev -1) are the host's: they count no memory.
*/
typedef struct HBuf {
  double bytes, ready, cstart, cend;
  int32_t refc, dev, next;
} HBuf;

typedef struct Loop {
  const IrStmt *st;
  int n;                      /* carries */
  int32_t **carry;            /* per carry: a buf per device */
  double *pred;               /* while: per device, when the predicate is known */
  int nys;                    /* scan: its stacked results */
  int32_t **ys;               /* per stacked result: a buf per device, made before the first step */
  struct Loop *prev;
} Loop;

typedef struct SFrame {
  const void *key;
  IrFunc *fn;
  struct SFrame *up;          /* static link */
  struct SFrame *below;       /* the stack */
  const IrStmt *site;
  const Mesh *mesh;
  int64_t nd;                 /* devices (1 at top level) */
  int nslots;
  int32_t **slots;            /* per variable slot: a buf per device, or NULL */
  double *gate;               /* per device: nothing starts before */
  uint8_t *active;            /* running devices (NULL: all) */
  int32_t **holds;            /* shard_map: the argument blocks, held for the body */
  int nholds;
  Loop *loop;
  int *last;                  /* per slot: the last statement that uses it */
  HpSplit **split;            /* --model-top, a host frame: per slot its placement (NULL: replicated) */
} SFrame;

typedef struct LineStat {
  int file, line;
  const IrStmt *first;
  long calls;
  double time, bytes, wait;
  double compute, comm;       /* time on the compute stream, on the communication stream */
  double flops, hbm;          /* one device's FLOPs and HBM bytes (local equations), summed over runs */
  double by_limit[LIM_COUNT];
  double by_algo[ALG_COUNT];  /* time by how it ran (a kernel, fused, a collective's algorithm) */
  bool host;                  /* --model-top: a host-level line, placed as `place` says */
  char place[40];
} LineStat;

typedef struct CostEntry {
  const IrStmt *st;
  Cost c;
} CostEntry;

/* The fusion plan of a function's body: per statement, whether it fuses
   into its producer's kernel and the HBM bytes it saves (see plan_fusion). */
typedef struct FuseEntry {
  const IrFunc *fn;
  uint8_t *fused;
  double *saved;
} FuseEntry;

typedef struct PlaceEntry {
  const Mesh *mesh;
  HwPlace pl;
} PlaceEntry;

#define NCLASS 48

struct Timeline {
  Hw hw;
  Arena arena;                /* frames, slots and scratch (tl_get) */
  void *freel[NCLASS];        /* freed blocks by size class */
  char *place;
  bool keep_events;
  bool observing;             /* fed by a run (tl_observer), not --abstract's walk */
  char error[256];
  HBuf *bufs;
  int32_t nbufs, capbufs, freebuf;
  SFrame *stack;
  int64_t ndev, capdev;
  double *cfree, *mfree, *busy_c, *busy_m, *exposed, *idle, *live, *peak;
  const IrStmt **peak_st;
  const IrStmt *cur;          /* the statement being modelled */
  LineStat *lines;
  int nlines, caplines;
  CostEntry *costs;           /* open addressing on the statement */
  int capcosts, ncosts;
  FuseEntry *fuse;            /* open addressing on the function */
  int capfuse, nfuse;
  PlaceEntry *places;
  int nplaces, capplaces;
  TlEvent *events;
  int64_t nevents, capevents;
  int32_t nflows;
  long outside;               /* equations run outside any shard_map */
  bool model_top;             /* --model-top: they run on the devices (hostplace.h) */
  int64_t topn;               /* the devices they run on */
  const Mesh **meshes;        /* the program's meshes (to read NamedSharding(mesh=m)) */
  int nmeshes, capmeshes;
  long host_split;            /* host-level equations that ran split */
  Mesh *hostmesh;             /* the host's devices as a mesh of one axis, when no mesh of the program is them */
  IrFunc *main;               /* the top level, and per slot of it the placement */
  HpSplit *want;              /* a later shard_map or elementwise use asks for (rank 0: none) */
  char **hnotes;              /* placements not followed */
  int nhnotes, caphnotes;
  char **notes;
  int nnotes, capnotes;
  bool undeclared_dtype;      /* a dtype without a peak of its own was used */
  char undeclared[64];
};

/* ---- memory --------------------------------------------------------------------------------
** Frames, slots and scratch come from the timeline's arena, reused through
** free lists by size class, and are released all at once by tl_free: a
** runtime error in the middle of an event (memory running out) leaves
** nothing behind.  A block's class is kept in the 16 bytes before it.
*/
static void *tl_get(Timeline *T, size_t n) {
  int c = 4;
  while (((size_t)1 << c) < n) c++;
  if (c >= NCLASS) err_throw("out of memory: the cost model asked for %zu bytes", n);
  void *p = T->freel[c];
  if (p) {
    T->freel[c] = *(void **)p;
    memset(p, 0, (size_t)1 << c);
    return p;
  }
  char *b = arena_alloc(&T->arena, ((size_t)1 << c) + 16);
  *(int *)b = c;
  return b + 16;
}

static void tl_put(Timeline *T, void *p) {
  if (!p) return;
  int c = *(int *)((char *)p - 16);
  *(void **)p = T->freel[c];
  T->freel[c] = p;
}

/* ---- devices ------------------------------------------------------------------------------ */

static void grow_devices(Timeline *T, int64_t n) {
  if (n <= T->capdev) {
    if (n > T->ndev) T->ndev = n;
    return;
  }
  double **arrs[] = {&T->cfree, &T->mfree, &T->busy_c, &T->busy_m, &T->exposed, &T->idle, &T->live, &T->peak};
  for (size_t k = 0; k < sizeof arrs / sizeof arrs[0]; k++) {
    *arrs[k] = mem_realloc(*arrs[k], sizeof(double) * (size_t)n);
    for (int64_t d = T->capdev; d < n; d++) (*arrs[k])[d] = 0;
  }
  T->peak_st = mem_realloc((void *)T->peak_st, sizeof(IrStmt *) * (size_t)n);
  for (int64_t d = T->capdev; d < n; d++) T->peak_st[d] = NULL;
  T->capdev = n;
  T->ndev = n;
}

/* ---- bufs --------------------------------------------------------------------------------- */

static int32_t buf_new(Timeline *T, int64_t dev, double bytes, double ready) {
  if (T->freebuf < 0) {
    if (T->nbufs == INT32_MAX) err_throw("the cost model holds too many values");
    VEC_GROW(T->bufs, T->capbufs, T->nbufs + 1);
    T->bufs[T->nbufs].next = T->freebuf;
    T->freebuf = T->nbufs++;
  }
  int32_t id = T->freebuf;
  HBuf *b = &T->bufs[id];
  T->freebuf = b->next;
  b->bytes = bytes;
  b->ready = ready;
  b->cstart = b->cend = -1;
  b->refc = 1;
  b->dev = (int32_t)dev;
  if (dev >= 0) {
    T->live[dev] += bytes;
    if (T->live[dev] > T->peak[dev]) {
      T->peak[dev] = T->live[dev];
      T->peak_st[dev] = T->cur;
    }
  }
  return id;
}

static void buf_unref(Timeline *T, int32_t id) {
  if (id < 0) return;
  HBuf *b = &T->bufs[id];
  if (--b->refc > 0) return;
  if (b->dev >= 0) T->live[b->dev] -= b->bytes;
  b->next = T->freebuf;
  T->freebuf = id;
}

static int32_t buf_ref(Timeline *T, int32_t id) {
  if (id >= 0) T->bufs[id].refc++;
  return id;
}

/* A slot: a buf per device, -1 where none. */
static int32_t *slot_new(Timeline *T, int64_t nd) {
  int32_t *s = tl_get(T, sizeof(int32_t) * (size_t)nd);
  for (int64_t d = 0; d < nd; d++) s[d] = -1;
  return s;
}

static void slot_free(Timeline *T, int32_t *s, int64_t nd) {
  if (!s) return;
  for (int64_t d = 0; d < nd; d++) buf_unref(T, s[d]);
  tl_put(T, s);
}

static int32_t *slot_copy(Timeline *T, const int32_t *s, int64_t nd) {
  int32_t *c = slot_new(T, nd);
  if (s)
    for (int64_t d = 0; d < nd; d++) c[d] = buf_ref(T, s[d]);
  return c;
}

static bool on(const SFrame *F, int64_t d) { return !F->active || F->active[d]; }

/* Do F's values live on the devices (a body, or the host's under --model-top)? */
static bool on_devices(const SFrame *F) { return F->mesh || F->split; }

/* The placement of atom a seen from F (NULL: replicated, or not tracked). */
static const HpSplit *split_of(SFrame *F, const IrAtom *a) {
  if (!a->var) return NULL;
  while (F && F->fn != a->var->owner) F = F->up;
  return F && F->split ? F->split[a->var->slot] : NULL;
}

static void set_split(Timeline *T, SFrame *F, const IrVar *v, const HpSplit *s) {
  if (!F->split || v->owner != F->fn) return;
  tl_put(T, F->split[v->slot]);
  F->split[v->slot] = NULL;
  if (s && hp_is_split(s)) {
    F->split[v->slot] = tl_get(T, sizeof(HpSplit));
    *F->split[v->slot] = *s;
  }
}

/* The bytes a value of type t holds on each device, split as s says. */
static double split_bytes(const Type *t, const HpSplit *s) {
  double b = (double)type_size(t) * dtype_sizes[t->dt];
  return s && s->rank == t->rank ? b / (double)hp_tiles(s) : b;
}

/* A statement that starts a device program (its body runs on a mesh). */
static bool is_map(const IrStmt *st) { return st->prim == P_SHARD_MAP || st->prim == P_XLA_PMAP; }

/* A statement whose body runs again and again, threading carries. */
static bool is_loop(const IrStmt *st) {
  return st->prim == P_WHILE || st->prim == P_FORI_LOOP || st->prim == P_SCAN;
}

/* The first carry among a loop's operands. */
static int loop_first_carry(const IrStmt *st) {
  if (st->prim == P_WHILE) return (int)(st->at->i[0] + st->at->i[1]);
  if (st->prim == P_SCAN) return (int)st->at->i[0];
  return (int)st->at->i[2];
}

/* ---- frames ------------------------------------------------------------------------------- */

/* The last statement of fn that uses each of its variables (results and
   variables read by nested functions: never). */
static int *plan_last(Timeline *T, IrFunc *fn) {
  int *last = tl_get(T, sizeof(int) * (size_t)(fn->nslots ? fn->nslots : 1));
  for (int i = 0; i < fn->nslots; i++) last[i] = -1;
  for (int k = 0; k < fn->nbody; k++) {
    const IrStmt *st = fn->body[k];
    for (int j = 0; j < st->nout; j++)
      if (st->out[j]->owner == fn) last[st->out[j]->slot] = k;
    for (int j = 0; j < st->nin; j++)
      if (st->in[j].var && st->in[j].var->owner == fn) last[st->in[j].var->slot] = k;
    for (int j = 0; j < st->nitems; j++)
      if (st->items[j].atom.var && st->items[j].atom.var->owner == fn) last[st->items[j].atom.var->slot] = k;
  }
  for (int j = 0; j < fn->nouts; j++)
    if (fn->outs[j].var && fn->outs[j].var->owner == fn) last[fn->outs[j].var->slot] = INT32_MAX;
  return last;
}

static void loop_free(Timeline *T, SFrame *F, Loop *L) {
  for (int k = 0; k < L->n; k++) slot_free(T, L->carry[k], F->nd);
  for (int k = 0; k < L->nys; k++) slot_free(T, L->ys[k], F->nd);
  tl_put(T, L->carry);
  tl_put(T, L->ys);
  tl_put(T, L->pred);
  tl_put(T, L);
}

static void frame_pop(Timeline *T) {
  SFrame *F = T->stack;
  T->stack = F->below;
  for (int i = 0; i < F->nslots; i++) slot_free(T, F->slots[i], F->nd);
  for (int i = 0; i < F->nholds; i++) slot_free(T, F->holds[i], F->nd);
  while (F->loop) {
    Loop *L = F->loop;
    F->loop = L->prev;
    loop_free(T, F, L);
  }
  if (F->split)
    for (int i = 0; i < F->nslots; i++) tl_put(T, F->split[i]);
  tl_put(T, F->split);
  tl_put(T, F->holds);
  tl_put(T, F->slots);
  tl_put(T, F->gate);
  tl_put(T, F->active);
  tl_put(T, F->last);
  tl_put(T, F);
}

static SFrame *frame_push(Timeline *T, const void *key, IrFunc *fn, const Mesh *mesh, const uint8_t *active) {
  SFrame *F = tl_get(T, sizeof *F);
  F->below = T->stack;
  T->stack = F;
  F->key = key;
  F->fn = fn;
  F->mesh = mesh;
  F->nd = mesh ? mesh->ndev : T->model_top ? T->topn : 1;
  F->nslots = fn->nslots;
  if (!mesh && T->model_top) F->split = tl_get(T, sizeof(HpSplit *) * (size_t)(fn->nslots ? fn->nslots : 1));
  F->slots = tl_get(T, sizeof(int32_t *) * (size_t)(fn->nslots ? fn->nslots : 1));
  F->gate = tl_get(T, sizeof(double) * (size_t)F->nd);
  if (active && mesh) {
    F->active = tl_get(T, (size_t)F->nd);
    memcpy(F->active, active, (size_t)F->nd);
  }
  F->last = plan_last(T, fn);
  if (mesh) grow_devices(T, mesh->ndev);
  else if (T->model_top) grow_devices(T, T->topn);
  return F;
}

/* The frame of key: frames above it were abandoned by a runtime error. */
static SFrame *frame_of(Timeline *T, const void *key) {
  SFrame *F = T->stack;
  while (F && F->key != key) F = F->below;
  if (!F) return NULL;
  while (T->stack != F) frame_pop(T);
  return F;
}

/* The slot of v as seen from F (through static links). */
static int32_t *lookup(SFrame *F, const IrVar *v) {
  while (F && F->fn != v->owner) F = F->up;
  return F ? F->slots[v->slot] : NULL;
}

/* When atom a is ready on device d of F (and which buf makes it so). */
static double atom_ready(Timeline *T, SFrame *F, const IrAtom *a, int64_t d, int32_t *which) {
  *which = -1;
  if (!a->var) return 0;
  int32_t *s = lookup(F, a->var);
  if (!s) return 0;
  int64_t dd = d < (F->nd) ? d : 0;
  SFrame *owner = F;
  while (owner && owner->fn != a->var->owner) owner = owner->up;
  if (owner && dd >= owner->nd) dd = 0;        /* a top-level value seen from a body */
  *which = s[dd];
  return s[dd] >= 0 ? T->bufs[s[dd]].ready : 0;
}

/* A slot holding what atom a holds on F's devices (a literal: empty bufs
   ready at the gate). */
static int32_t *atom_slot(Timeline *T, SFrame *F, const IrAtom *a, const double *gate) {
  SFrame *owner = F;
  while (a->var && owner && owner->fn != a->var->owner) owner = owner->up;
  int32_t *s = a->var && owner ? owner->slots[a->var->slot] : NULL;
  if (s && owner->nd == F->nd) return slot_copy(T, s, F->nd);
  /* a literal, or a top-level value a body reads (a constant of the
     device program): ready when the gate opens, or when the host made it */
  double host = s && s[0] >= 0 ? T->bufs[s[0]].ready : 0;
  int32_t *c = slot_new(T, F->nd);
  for (int64_t d = 0; d < F->nd; d++) {
    double g = gate ? gate[d] : 0;
    c[d] = buf_new(T, -1, 0, host > g ? host : g);
  }
  return c;
}

/* Store slot s (taken) in variable v of F, on F's running devices. */
static void set_var(Timeline *T, SFrame *F, const IrVar *v, int32_t *s) {
  if (v->owner != F->fn) {
    slot_free(T, s, F->nd);
    return;
  }
  int32_t **dst = &F->slots[v->slot];
  if (!*dst) *dst = slot_new(T, F->nd);
  for (int64_t d = 0; d < F->nd; d++)
    if (on(F, d)) {
      buf_unref(T, (*dst)[d]);
      (*dst)[d] = buf_ref(T, s[d]);
    }
  slot_free(T, s, F->nd);
}

/* ---- construction ------------------------------------------------------------------------- */

Timeline *tl_new(const Hw *hw, const char *place, bool events) {
  Timeline *T = mem_calloc(sizeof *T);
  T->hw = *hw;
  T->freebuf = -1;
  T->keep_events = events;
  if (place) {
    err_defer(mem_free, T);
    T->place = mem_strndup(place, strlen(place));
    err_undefer(T);
  }
  return T;
}

void tl_free(Timeline *T) {
  if (!T) return;
  while (T->stack) frame_pop(T);
  double *arrs[] = {T->cfree, T->mfree, T->busy_c, T->busy_m, T->exposed, T->idle, T->live, T->peak};
  for (size_t k = 0; k < sizeof arrs / sizeof arrs[0]; k++) mem_free(arrs[k]);
  mem_free((void *)T->peak_st);
  for (int i = 0; i < T->nnotes; i++) mem_free(T->notes[i]);
  mem_free(T->notes);
  for (int i = 0; i < T->nhnotes; i++) mem_free(T->hnotes[i]);
  mem_free(T->hnotes);
  mem_free((void *)T->meshes);
  mem_free(T->want);
  mem_free(T->hostmesh);
  mem_free(T->bufs);
  mem_free(T->lines);
  mem_free(T->costs);
  for (int i = 0; i < T->capfuse; i++)
    if (T->fuse[i].fn) {
      mem_free(T->fuse[i].fused);
      mem_free(T->fuse[i].saved);
    }
  mem_free(T->fuse);
  mem_free(T->places);
  mem_free(T->events);
  mem_free(T->place);
  arena_free(&T->arena);
  mem_free(T);
}

const char *tl_error(const Timeline *T) { return T->error[0] ? T->error : NULL; }

void tl_note(Timeline *T, const IrStmt *st, const char *what) {
  char buf[512];
  Str src = st && st->sp.file >= 0 ? diag_line_text(st->sp.file, st->line) : str_c("");
  while (src.n && (*src.p == ' ' || *src.p == '\t')) src.p++, src.n--;
  snprintf(buf, sizeof buf, "line %d: %s: %.*s", st ? st->line : 0, what, src.n > 60 ? 60 : src.n, src.p);
  for (int i = 0; i < T->nnotes; i++)
    if (!strcmp(T->notes[i], buf)) return;
  VEC_GROW(T->notes, T->capnotes, T->nnotes + 1);
  T->notes[T->nnotes++] = mem_strndup(buf, strlen(buf));
}

/* ---- costs, placements, statistics ------------------------------------------------------- */

static const HwPlace *place_of(Timeline *T, const Mesh *mesh) {
  for (int i = 0; i < T->nplaces; i++)
    if (T->places[i].mesh == mesh) return &T->places[i].pl;
  VEC_GROW(T->places, T->capplaces, T->nplaces + 1);
  PlaceEntry *e = &T->places[T->nplaces];
  char why[200];
  if (!hw_place(&T->hw, mesh, T->place, &e->pl, why, sizeof why)) {
    if (!T->error[0]) snprintf(T->error, sizeof T->error, "%s", why);
    err_throw("%s", why);
  }
  e->mesh = mesh;
  T->nplaces++;
  return &e->pl;
}


/* ---- fusion --------------------------------------------------------------------------------
** XLA fuses an elementwise equation into the kernel of the equation that
** makes its operand when that operand has no other use: the chain is one
** kernel (one launch), and the intermediate never goes to HBM (the
** producer does not write it, the consumer does not read it).  The plan
** of a function's body says, per statement, whether it fuses into its
** producer and the bytes it saves (as a consumer, as a producer, or both
** in a chain).
*/
static double var_bytes(const IrVar *v) { return (double)type_size(&v->t) * dtype_sizes[v->t.dt]; }

static void plan_fusion(Timeline *T, const IrFunc *fn, uint8_t *fused, double *saved) {
  int ns = fn->nslots ? fn->nslots : 1;
  int *uses = tl_get(T, sizeof(int) * (size_t)ns), *def = tl_get(T, sizeof(int) * (size_t)ns);
  for (int i = 0; i < ns; i++) uses[i] = 0, def[i] = -1;
  for (int k = 0; k < fn->nbody; k++) {
    const IrStmt *st = fn->body[k];
    for (int j = 0; j < st->nout; j++)
      if (st->out[j]->owner == fn) def[st->out[j]->slot] = k;
    for (int j = 0; j < st->nin; j++)
      if (st->in[j].var && st->in[j].var->owner == fn) uses[st->in[j].var->slot]++;
    for (int j = 0; j < st->nitems; j++)
      if (st->items[j].atom.var && st->items[j].atom.var->owner == fn) uses[st->items[j].atom.var->slot] += 2;
  }
  for (int j = 0; j < fn->nouts; j++)
    if (fn->outs[j].var && fn->outs[j].var->owner == fn) uses[fn->outs[j].var->slot] += 2;
  for (int k = 0; k < fn->nbody; k++) {
    const IrStmt *st = fn->body[k];
    if (st->k != IS_EQN || !cost_fuses(st)) continue;
    for (int j = 0; j < st->nin; j++) {
      const IrVar *v = st->in[j].var;
      if (!v || v->owner != fn || v->captured || uses[v->slot] != 1 || def[v->slot] < 0) continue;
      const IrStmt *p = fn->body[def[v->slot]];
      if (p->k != IS_EQN || !cost_produces(p)) continue;
      fused[k] = 1;
      saved[k] += var_bytes(v);               /* not read from HBM */
      saved[def[v->slot]] += var_bytes(v);    /* not written to it */
    }
  }
  tl_put(T, uses);
  tl_put(T, def);
}

static size_t ptr_hash(const void *p, int cap) { return ((uintptr_t)p >> 4) * 2654435761u % (size_t)cap; }

/* The fusion plan of fn (made once). */
static FuseEntry *fusion_of(Timeline *T, const IrFunc *fn) {
  if (T->nfuse * 2 >= T->capfuse) {
    int cap = T->capfuse ? T->capfuse * 2 : 16;
    FuseEntry *old = T->fuse;
    int oldcap = T->capfuse;
    T->fuse = mem_calloc(sizeof(FuseEntry) * (size_t)cap);
    T->capfuse = cap;
    for (int i = 0; i < oldcap; i++)
      if (old[i].fn) {
        size_t h = ptr_hash(old[i].fn, cap);
        while (T->fuse[h].fn) h = (h + 1) % (size_t)cap;
        T->fuse[h] = old[i];
      }
    mem_free(old);
  }
  size_t h = ptr_hash(fn, T->capfuse);
  while (T->fuse[h].fn && T->fuse[h].fn != fn) h = (h + 1) % (size_t)T->capfuse;
  FuseEntry *e = &T->fuse[h];
  if (e->fn) return e;
  size_t n = (size_t)(fn->nbody ? fn->nbody : 1);
  uint8_t *fused = mem_calloc(n);
  err_defer(mem_free, fused);
  double *saved = mem_calloc(sizeof(double) * n);
  err_undefer(fused);
  e->fn = fn;
  e->fused = fused;
  e->saved = saved;
  T->nfuse++;
  plan_fusion(T, fn, e->fused, e->saved);
  return e;
}

/* The cost of st (statement `index` of fn) on the devices of mesh (the
   same at every execution). */
static Cost cost_of(Timeline *T, const IrStmt *st, const Mesh *mesh, const IrFunc *fn, int index) {
  if (T->ncosts * 2 >= T->capcosts) {
    int cap = T->capcosts ? T->capcosts * 2 : 64;
    CostEntry *old = T->costs;
    int oldcap = T->capcosts;
    T->costs = mem_calloc(sizeof(CostEntry) * (size_t)cap);
    T->capcosts = cap;
    for (int i = 0; i < oldcap; i++)
      if (old[i].st) {
        size_t h = ptr_hash(old[i].st, cap);
        while (T->costs[h].st) h = (h + 1) % (size_t)cap;
        T->costs[h] = old[i];
      }
    mem_free(old);
  }
  size_t h = ptr_hash(st, T->capcosts);
  while (T->costs[h].st && T->costs[h].st != st) h = (h + 1) % (size_t)T->capcosts;
  if (T->costs[h].st) return T->costs[h].c;
  Cost c;
  if (cost_is_comm(st)) {
    c = cost_collective(&T->hw, mesh, place_of(T, mesh), st);
  } else {
    bool fused = false;
    double saved = 0;
    if (fn && index >= 0 && index < fn->nbody && fn->body[index] == st) {
      FuseEntry *e = fusion_of(T, fn);
      fused = e->fused[index];
      saved = e->saved[index];
    }
    c = cost_local_fused(&T->hw, st, fused, saved);
    int dt = st->prim == P_DOT_GENERAL ? st->in[0].t.dt : st->nout ? st->out[0]->t.dt : DT_F32;
    bool listed = true;
    hw_peak(&T->hw, dt, &listed);
    if (!listed && c.flops > 0 && st->prim == P_DOT_GENERAL && !T->undeclared_dtype) {
      T->undeclared_dtype = true;
      snprintf(T->undeclared, sizeof T->undeclared, "%s", dtype_names[dt]);
    }
  }
  T->costs[h].st = st;
  T->costs[h].c = c;
  T->ncosts++;
  return c;
}

static LineStat *line_of(Timeline *T, const IrStmt *st) {
  for (int i = T->nlines - 1; i >= 0; i--)
    if (T->lines[i].line == st->line && T->lines[i].file == st->sp.file && T->lines[i].first->backward == st->backward) {
      if (T->lines[i].first->inserted && !st->inserted) T->lines[i].first = st;   /* the line's own equation */
      return &T->lines[i];
    }
  VEC_GROW(T->lines, T->caplines, T->nlines + 1);
  LineStat *l = &T->lines[T->nlines++];
  memset(l, 0, sizeof *l);
  l->file = st->sp.file;
  l->line = st->line;
  l->first = st;
  return l;
}

static void add_event(Timeline *T, int64_t dev, bool comm, double start, double dur, const IrStmt *st,
                      CostLimit lim) {
  if (!T->keep_events) return;
  if (T->nevents >= ((int64_t)1 << 26)) err_throw("more than 2^26 events: too many for a trace file");
  if (T->nevents == T->capevents) {
    T->capevents = T->capevents ? T->capevents * 2 : 1024;
    T->events = mem_realloc(T->events, sizeof(TlEvent) * (size_t)T->capevents);
  }
  TlEvent *e = &T->events[T->nevents++];
  e->start = start;
  e->dur = dur;
  e->dev = (int32_t)dev;
  e->comm = comm;
  e->limit = (uint8_t)lim;
  e->st = st;
  e->flow = e->flow_in = -1;
}

/* ---- scheduling ---------------------------------------------------------------------------- */

/* A local equation on every running device of F, costing c on each, its
   results holding obytes[j] (NULL: their types' bytes) on each. */
static LineStat *run_local_cost(Timeline *T, SFrame *F, const IrStmt *st, Cost c, const double *obytes) {
  LineStat *ls = line_of(T, st);
  double maxwait = 0;
  int32_t **outs = tl_get(T, sizeof(int32_t *) * (size_t)(st->nout ? st->nout : 1));
  for (int j = 0; j < st->nout; j++) outs[j] = slot_new(T, F->nd);
  for (int64_t d = 0; d < F->nd; d++) {
    if (!on(F, d)) continue;
    double ready = F->gate[d];
    int32_t bind = -1, w;
    for (int i = 0; i < st->nin; i++) {
      double r = atom_ready(T, F, &st->in[i], d, &w);
      if (r > ready) ready = r, bind = w;
    }
    double end = ready;
    if (c.time > 0) {
      double start = ready > T->cfree[d] ? ready : T->cfree[d];
      double gap = start - T->cfree[d];
      if (gap > 0) {               /* waiting for a collective's result: exposed */
        double ov = bind >= 0 && T->bufs[bind].cend >= 0 ? gap : 0;
        T->exposed[d] += ov;
        T->idle[d] += gap - ov;
        if (ov > maxwait) maxwait = ov;
      }
      end = start + c.time;
      T->cfree[d] = end;
      T->busy_c[d] += c.time;
      add_event(T, d, false, start, c.time, st, c.limit);
    }
    for (int j = 0; j < st->nout; j++)
      outs[j][d] = buf_new(T, d, obytes ? obytes[j] : (double)type_size(&st->out[j]->t) * dtype_sizes[st->out[j]->t.dt],
                           end);
  }
  for (int j = 0; j < st->nout; j++) set_var(T, F, st->out[j], outs[j]);
  tl_put(T, outs);
  ls->calls += !st->inserted;
  ls->time += c.time;
  ls->compute += c.time;
  ls->flops += c.flops;
  ls->hbm += c.bytes;
  ls->wait += maxwait;
  ls->by_limit[c.limit] += c.time;
  ls->by_algo[c.algo] += c.time;
  return ls;
}

/* A local equation (statement `index` of F's function) on every running
   device of F. */
static void run_local(Timeline *T, SFrame *F, const IrStmt *st, int index) {
  run_local_cost(T, F, st, cost_of(T, st, F->mesh, F->fn, index), NULL);
}

/* A placement --model-top does not follow, noted once per statement. */
static void host_note(Timeline *T, const IrStmt *st, const char *what) {
  char buf[512];
  Str src = st && st->sp.file >= 0 ? diag_line_text(st->sp.file, st->line) : str_c("");
  while (src.n && (*src.p == ' ' || *src.p == '\t')) src.p++, src.n--;
  snprintf(buf, sizeof buf, "line %d: %s: %.*s", st->line, what, src.n > 60 ? 60 : src.n, src.p);
  for (int i = 0; i < T->nhnotes; i++)
    if (!strcmp(T->hnotes[i], buf)) return;
  VEC_GROW(T->hnotes, T->caphnotes, T->nhnotes + 1);
  T->hnotes[T->nhnotes++] = mem_strndup(buf, strlen(buf));
}

/* The mesh a resharding of host-level values runs over: the program's
   mesh of all the host's devices, or one axis of them. */
static const Mesh *host_mesh(Timeline *T) {
  for (int i = 0; i < T->nmeshes; i++)
    if (T->meshes[i]->ndev == T->topn && !T->meshes[i]->named) return T->meshes[i];
  if (!T->hostmesh) {
    T->hostmesh = mem_calloc(sizeof(Mesh));
    T->hostmesh->naxes = 1;
    T->hostmesh->axis[0] = str_c("devices");
    T->hostmesh->size[0] = T->topn;
    T->hostmesh->ndev = T->topn;
  }
  return T->hostmesh;
}

/* --model-top: value `slot` of type t (F's, on every device), placed
   `from`, is wanted placed `to` at statement st: the collective that
   implies runs on the communication stream of every device (an
   all-gather to replicated, an all-to-all between two splits; from
   replicated to split each device slices its tile: free), and the slot
   takes its results.  Noted in the report. */
static void reshard(Timeline *T, SFrame *F, const IrStmt *st, int32_t *slot, const Type *t, const HpSplit *from,
                    const HpSplit *to) {
  HpSplit rep;
  hp_replicate(&rep, t->rank);
  if (!from) from = &rep;
  if (!to) to = &rep;
  if (!hp_is_split(from) || hp_same(from, to) || !slot || F->nd != T->topn) return;
  const Mesh *m = host_mesh(T);
  Attrs at;
  memset(&at, 0, sizeof at);
  at.naxes = m->naxes;
  for (int a = 0; a < m->naxes; a++) at.axes[a] = (uint8_t)a, at.axmask |= 1u << a;
  IrStmt fake = *st;
  fake.prim = hp_is_split(to) ? P_ALL_TO_ALL : P_ALL_GATHER;
  fake.at = &at;
  double V = (double)type_size(t) * dtype_sizes[t->dt];
  double n_in = V / (double)hp_tiles(from), n_out = hp_is_split(to) ? V / (double)hp_tiles(to) : V;
  Cost c = cost_collective_bytes(&T->hw, m, place_of(T, m), &fake, n_in, n_out);
  double start = 0;
  for (int64_t d = 0; d < F->nd; d++) {
    double r = slot[d] >= 0 ? T->bufs[slot[d]].ready : 0;
    if (r > start) start = r;
    if (T->mfree[d] > start) start = T->mfree[d];
  }
  for (int64_t d = 0; d < F->nd; d++) {
    int32_t b = buf_new(T, d, n_out, start + c.time);
    T->bufs[b].cstart = start;
    T->bufs[b].cend = start + c.time;
    buf_unref(T, slot[d]);
    slot[d] = b;
    T->mfree[d] = start + c.time;
    T->busy_m[d] += c.time;
    add_event(T, d, true, start, c.time, st, c.limit);
  }
  LineStat *ls = line_of(T, st);
  ls->calls += st->prim < 0;         /* a pjit's line runs no equation of its own */
  ls->time += c.time;
  ls->comm += c.time;
  ls->bytes += c.bytes * (double)F->nd;
  ls->by_limit[c.limit] += c.time;
  char a[48], b[48], what[200];
  hp_text(from, a, sizeof a);
  hp_text(to, b, sizeof b);
  if (!ls->host) snprintf(ls->place, sizeof ls->place, "to %.36s", b);
  ls->host = true;
  snprintf(what, sizeof what, "resharding from %s to %s: modelled as an %s over %lld devices", a, b,
           hp_is_split(to) ? "all-to-all" : "all-gather", (long long)F->nd);
  host_note(T, st, what);
}

/* The placement of a host-level equation's result (hostplace.h): an
   elementwise equation keeps its split operands' placement, a placement
   primitive takes its sharding's; any other runs replicated. */
static void top_split(Timeline *T, SFrame *F, const IrStmt *st, HpSplit *out, HpSplit *moved) {
  const Type *t = st->nout ? &st->out[0]->t : NULL;
  hp_replicate(out, t ? t->rank : 0);
  const HpSplit *first = NULL;
  bool mixed = false;
  for (int i = 0; i < st->nin; i++) {
    const HpSplit *s = split_of(F, &st->in[i]);
    if (!s) continue;
    if (!first) first = s;
    else if (!hp_same(first, s)) mixed = true;
  }
  const PVal *sh = hp_prim_sharding(st, 0);
  HpSplit want;
  char a[48], what[160];
  if (sh && t && hp_from_sharding(sh, t, T->meshes, T->nmeshes, &want)) {
    if (first && !hp_same(first, &want)) *moved = *first;     /* reshard (run_top) */
    *out = want;
    return;
  }
  /* a value a later use wants split is made split, from replicated
     operands (each device makes its tile) */
  const HpSplit *w = t && F->fn == T->main && st->out[0]->owner == T->main ? &T->want[st->out[0]->slot] : NULL;
  bool maker = true;        /* no operand of the result's shape: full, iota, a random draw... */
  for (int i = 0; i < st->nin; i++) maker &= !(st->in[i].var && st->in[i].t.rank);
  if (w && w->rank && (!first || hp_same(first, w)) && (maker || hp_elementwise(st))) {
    *out = *w;
    return;
  }
  if (!first) return;
  if (hp_elementwise(st) && !mixed) {
    *out = *first;
    return;
  }
  hp_text(first, a, sizeof a);
  snprintf(what, sizeof what, "%s of operands %s%s: modelled replicated (the gathering it implies is not modelled)",
           st->prim >= 0 ? prim_table[st->prim].name : "call", a, mixed ? " and others" : "");
  host_note(T, st, what);
}

/* --model-top: a host-level equation on every device, on the tile of its
   placement (replicated: the whole array). */
static void run_top(Timeline *T, SFrame *F, const IrStmt *st) {
  HpSplit s, moved;
  moved.rank = -1;
  top_split(T, F, st, &s, &moved);
  bool split = hp_is_split(&s);
  Cost c = split ? hp_tile_cost(&T->hw, st, &s) : cost_of(T, st, NULL, NULL, -1);
  double ob[16];
  for (int j = 0; j < st->nout && j < 16; j++) ob[j] = split_bytes(&st->out[j]->t, split ? &s : NULL);
  LineStat *ls = run_local_cost(T, F, st, c, st->nout <= 16 ? ob : NULL);
  for (int j = 0; j < st->nout; j++) set_split(T, F, st->out[j], split && j == 0 ? &s : NULL);
  T->outside++;
  T->host_split += split;
  char txt[40];
  hp_text(&s, txt, sizeof txt);
  if (!ls->host) snprintf(ls->place, sizeof ls->place, "%s", txt);
  else if (strcmp(ls->place, txt)) snprintf(ls->place, sizeof ls->place, "placed variously");
  ls->host = true;
  if (moved.rank >= 0 && st->nout && st->out[0]->owner == F->fn)
    reshard(T, F, st, F->slots[st->out[0]->slot], &st->out[0]->t, &moved, &s);
}

/* For a ppermute on mesh m (over F's nd devices): the device each device
   receives from and sends to (-1: none), from its pairs (a table by
   member: linear in the devices and pairs). */
static void perm_peers(Timeline *T, const Mesh *m, const IrStmt *st, int64_t nd, int64_t *src_of, int64_t *dst_of) {
  const IntList *perm = &st->at->l[0];
  int64_t coords[SHM_MAXAXES], p = 1;
  for (int a = 0; a < st->at->naxes; a++) p *= m->size[st->at->axes[a]];
  int64_t *dst_m = tl_get(T, sizeof(int64_t) * (size_t)p);
  for (int64_t q = 0; q < p; q++) dst_m[q] = -1;
  for (int i = 0; i < perm->n / 2; i++)
    if (perm->v[2 * i] >= 0 && perm->v[2 * i] < p && perm->v[2 * i + 1] >= 0 && perm->v[2 * i + 1] < p)
      dst_m[perm->v[2 * i]] = perm->v[2 * i + 1];
  for (int64_t d = 0; d < nd; d++) src_of[d] = dst_of[d] = -1;
  for (int64_t d = 0; d < nd; d++) {
    til_coords(m, d, coords);
    int64_t member = 0;
    for (int a = 0; a < st->at->naxes; a++) member = member * m->size[st->at->axes[a]] + coords[st->at->axes[a]];
    int64_t dst = dst_m[member];
    if (dst < 0) continue;
    for (int a = st->at->naxes - 1; a >= 0; a--) {
      coords[st->at->axes[a]] = dst % m->size[st->at->axes[a]];
      dst /= m->size[st->at->axes[a]];
    }
    int64_t dd = 0;
    for (int a = 0; a < m->naxes; a++) dd = dd * m->size[a] + coords[a];
    if (dd < nd) {
      dst_of[d] = dd;
      src_of[dd] = d;
    }
  }
  tl_put(T, dst_m);
}

/* A collective: each group starts when all its members have the operand
   and a free communication stream. */
static void run_collective(Timeline *T, SFrame *F, const IrStmt *st) {
  const Mesh *m = F->mesh;
  Cost c = cost_of(T, st, m, NULL, -1);
  /* a ragged_all_to_all that ran costs the rows its sizes sent (without a
     run, its operand's rows spread evenly over the group) */
  if (st->prim == P_RAGGED_ALL_TO_ALL && T->observing) c = cost_ragged(&T->hw, m, place_of(T, m), st, fab_last_ragged_sent());
  LineStat *ls = line_of(T, st);
  uint32_t all = (m->naxes >= 32 ? 0u : (1u << m->naxes)) - 1u, outer = all & ~st->at->axmask;
  int64_t ngroups = til_nblk(m, outer);
  double *start = tl_get(T, sizeof(double) * (size_t)ngroups);
  for (int64_t g = 0; g < ngroups; g++) start[g] = -1;
  int32_t w;
  int base = fab_base_prim(st->prim);      /* (ppermute_start is a ppermute) */
  bool pairwise = base == P_PPERMUTE;
  double *ready = pairwise ? tl_get(T, sizeof(double) * (size_t)F->nd) : NULL;
  for (int64_t d = 0; d < F->nd; d++) {
    if (!on(F, d)) continue;
    int64_t g = til_block_of(m, outer, d);
    double r = st->nin ? atom_ready(T, F, &st->in[0], d, &w) : 0;
    if (F->gate[d] > r) r = F->gate[d];
    if (T->mfree[d] > r) r = T->mfree[d];
    if (r > start[g]) start[g] = r;
    if (ready) ready[d] = r;
  }
  /* a ppermute is pairwise: a device's transfers start when it, the member
     sending to it and the member it sends to are ready, not when its whole
     group is (a pipeline's stages meet only their neighbours) */
  int64_t *src_of = NULL, *dst_of = NULL;
  if (pairwise) {
    src_of = tl_get(T, sizeof(int64_t) * (size_t)F->nd);
    dst_of = tl_get(T, sizeof(int64_t) * (size_t)F->nd);
    perm_peers(T, m, st, F->nd, src_of, dst_of);
  }
  int32_t *out = slot_new(T, F->nd);
  double obytes = (double)type_size(&st->out[0]->t) * dtype_sizes[st->out[0]->t.dt];
  long members = 0;
  int64_t ev0 = T->nevents;
  for (int64_t d = 0; d < F->nd; d++) {
    if (!on(F, d)) continue;
    double s = start[til_block_of(m, outer, d)];
    if (pairwise) {
      s = ready[d];
      if (src_of[d] >= 0 && on(F, src_of[d]) && ready[src_of[d]] > s) s = ready[src_of[d]];
      if (dst_of[d] >= 0 && on(F, dst_of[d]) && ready[dst_of[d]] > s) s = ready[dst_of[d]];
    }
    double e = s + c.time;
    T->mfree[d] = e;
    T->busy_m[d] += c.time;
    out[d] = buf_new(T, d, obytes, e);
    T->bufs[out[d]].cstart = s;
    T->bufs[out[d]].cend = e;
    add_event(T, d, true, s, c.time, st, c.limit);
    members++;
  }
  /* ppermute: a flow from each sender's event to its receiver's (the
     event of each device and the destination of each member looked up in
     tables: linear in the devices and pairs; a scan per pair was
     quadratic in the mesh) */
  if (pairwise) {
    tl_put(T, dst_of);
    tl_put(T, src_of);
    tl_put(T, ready);
  }
  if ((base == P_PPERMUTE || base == P_PRECV) && T->keep_events) {
    const IntList *perm = &st->at->l[0];
    int64_t coords[SHM_MAXAXES], p = 1;
    for (int a = 0; a < st->at->naxes; a++) p *= m->size[st->at->axes[a]];
    int64_t *ev_of = tl_get(T, sizeof(int64_t) * (size_t)F->nd), *dst_of = tl_get(T, sizeof(int64_t) * (size_t)p);
    for (int64_t d = 0; d < F->nd; d++) ev_of[d] = -1;
    for (int64_t q = 0; q < p; q++) dst_of[q] = -1;
    for (int64_t k = ev0; k < T->nevents; k++) ev_of[T->events[k].dev] = k;
    for (int i = 0; i < perm->n / 2; i++)
      if (perm->v[2 * i] >= 0 && perm->v[2 * i] < p) dst_of[perm->v[2 * i]] = perm->v[2 * i + 1];
    for (int64_t k = ev0; k < T->nevents; k++) {
      int64_t d = T->events[k].dev, member = 0;
      til_coords(m, d, coords);
      for (int a = 0; a < st->at->naxes; a++) member = member * m->size[st->at->axes[a]] + coords[st->at->axes[a]];
      int64_t dst = dst_of[member];
      if (dst < 0) continue;
      for (int a = st->at->naxes - 1; a >= 0; a--) {
        coords[st->at->axes[a]] = dst % m->size[st->at->axes[a]];
        dst /= m->size[st->at->axes[a]];
      }
      int64_t ddev = 0;
      for (int a = 0; a < m->naxes; a++) ddev = ddev * m->size[a] + coords[a];
      int64_t q = ev_of[ddev];
      if (q < 0) continue;
      T->events[k].flow = T->nflows;
      T->events[q].flow_in = T->nflows++;
    }
    tl_put(T, dst_of);
    tl_put(T, ev_of);
  }
  tl_put(T, start);
  set_var(T, F, st->out[0], out);
  /* bytes sent by all members (as the fabric counts them for --stats):
     a ppermute moves one block per pair of each group */
  double sent = c.bytes * (double)members;
  if (base == P_PPERMUTE || base == P_PRECV) {
    int64_t p = 1;
    for (int a = 0; a < st->at->naxes; a++) p *= m->size[st->at->axes[a]];
    sent = c.bytes * (double)(st->at->l[0].n / 2) * (double)members / (double)p;
  }
  ls->calls += !st->inserted;
  ls->time += c.time;
  ls->comm += c.time;
  ls->bytes += sent;
  ls->by_limit[c.limit] += c.time;
  ls->by_algo[c.algo] += c.time;
}

/* A statement outside any shard_map: the host's; its results are ready
   when its operands are. */
static void run_host(Timeline *T, SFrame *F, const IrStmt *st) {
  double ready = 0;
  int32_t w;
  for (int i = 0; i < st->nin; i++) {
    double r = atom_ready(T, F, &st->in[i], 0, &w);
    if (r > ready) ready = r;
  }
  if (st->k == IS_EQN) T->outside++;
  for (int j = 0; j < st->nout; j++) {
    int32_t *s = slot_new(T, 1);
    s[0] = buf_new(T, -1, 0, ready);
    set_var(T, F, st->out[j], s);
  }
}

/* ---- the events ---------------------------------------------------------------------------- */

/* The meshes of fn and of the functions it reaches (visited: seen). */
static void find_meshes(Timeline *T, IrFunc *fn, IrFunc ***seen, int *nseen, int *capseen) {
  for (int i = 0; i < *nseen; i++)
    if ((*seen)[i] == fn) return;
  VEC_GROW(*seen, *capseen, *nseen + 1);
  (*seen)[(*nseen)++] = fn;
  for (int k = 0; k < fn->nbody; k++) {
    const IrStmt *st = fn->body[k];
    if (st->k != IS_EQN) continue;
    if (st->prim < 0 && st->callee) find_meshes(T, st->callee, seen, nseen, capseen);
    for (int p = 0; p < st->nparams; p++) {      /* pjit's shardings, sharding_constraint's */
      int64_t n = strstr(st->params[p].key ? st->params[p].key : "", "sharding") ? hp_sharding_devices(st->params[p].v) : 0;
      if (n > T->topn) T->topn = n;
    }
    if (st->prim >= 0 && is_map(st) && st->at->ext) {
      const Mesh *m = ((const ShardMap *)st->at->ext)->mesh;
      bool have = false;
      for (int i = 0; i < T->nmeshes; i++) have |= T->meshes[i] == m;
      if (!have) {
        VEC_GROW(T->meshes, T->capmeshes, T->nmeshes + 1);
        T->meshes[T->nmeshes++] = m;
        if (m->ndev > T->topn) T->topn = m->ndev;
      }
    }
    for (int j = 0; st->at && j < st->at->nfns; j++) find_meshes(T, st->at->fns[j], seen, nseen, capseen);
  }
}

void tl_model_top(Timeline *T, bool on) { T->model_top = on; }

/* The placements fn's values are wanted in (want: per slot of fn), as
   XLA's sharding propagation runs backwards: a shard_map's operand as its
   in_spec splits it, a call's operand as pjit's in_shardings say or the
   callee wants its parameter,
   and the operands of the result's shape of an elementwise equation whose
   result is wanted split, as that result. */
static void wants_of(const Timeline *T, IrFunc *fn, HpSplit *want, int depth) {
  for (int k = fn->nbody - 1; k >= 0; k--) {
    const IrStmt *st = fn->body[k];
    if (st->k != IS_EQN) continue;
    HpSplit *pw = NULL;
    const HpSplit *give = NULL;
    if (st->prim == P_SHARD_MAP && st->at->ext) {
      const ShardMap *sm = st->at->ext;
      pw = mem_calloc(sizeof(HpSplit) * (size_t)(st->nin + 1));
      for (int i = 0; i < st->nin && i < sm->nin; i++) hp_from_spec(sm->mesh, &sm->in[i], st->in[i].t.rank, &pw[i]);
    } else if (st->prim < 0 && st->callee && depth < 8) {
      IrFunc *g = st->callee;
      HpSplit *gw = mem_calloc(sizeof(HpSplit) * (size_t)(g->nslots + 1));
      wants_of(T, g, gw, depth + 1);
      pw = mem_calloc(sizeof(HpSplit) * (size_t)(st->nin + 1));
      for (int i = 0; i < st->nin && i < g->nparams; i++) {
        const PVal *sh = hp_param_entry(st, "in_shardings", i);   /* pjit's, first */
        if (!sh || !hp_from_sharding(sh, &st->in[i].t, T->meshes, T->nmeshes, &pw[i])) pw[i] = gw[g->params[i]->slot];
      }
      mem_free(gw);
    } else if (st->nout == 1 && st->out[0]->owner == fn && want[st->out[0]->slot].rank && hp_elementwise(st)) {
      give = &want[st->out[0]->slot];
    }
    for (int i = 0; i < st->nin; i++) {
      const IrVar *v = st->in[i].var;
      if (!v || v->owner != fn || want[v->slot].rank) continue;
      if (pw && hp_is_split(&pw[i])) want[v->slot] = pw[i];
      else if (give && v->t.rank == give->rank) want[v->slot] = *give;
    }
    mem_free(pw);
  }
}

static void plan_wants(Timeline *T, IrFunc *main) {
  T->main = main;
  T->want = mem_calloc(sizeof(HpSplit) * (size_t)(main->nslots ? main->nslots : 1));
  wants_of(T, main, T->want, 0);
}

void tl_top(Timeline *T, const void *key, IrFunc *main) {
  while (T->stack) frame_pop(T);
  if (T->model_top && !T->topn) {
    IrFunc **seen = NULL;
    int nseen = 0, capseen = 0;
    T->topn = 1;
    err_defer(mem_free, seen);
    find_meshes(T, main, &seen, &nseen, &capseen);
    err_undefer(seen);
    mem_free(seen);
    plan_wants(T, main);
  }
  frame_push(T, key, main, NULL, NULL);
}

/* --model-top: a shard_map's operands placed otherwise than its in_specs
   split them need a collective first (a replicated operand is sliced in
   place: free). */
static void map_operands(Timeline *T, SFrame *C, SFrame *F, const IrStmt *site) {
  const ShardMap *sm = site->at->ext;
  if (!sm || site->prim != P_SHARD_MAP) return;
  for (int i = 0; i < site->nin && i < sm->nin; i++) {
    const HpSplit *have = split_of(C, &site->in[i]);
    HpSplit want;
    hp_from_spec(F->mesh, &sm->in[i], site->in[i].t.rank, &want);
    if (!have || hp_same(have, &want)) continue;
    char a[48], b[48], what[200];
    hp_text(have, a, sizeof a);
    hp_text(&want, b, sizeof b);
    snprintf(what, sizeof what, "operand %d is %s, its in_spec %s: the collective it implies is not modelled", i, a, b);
    host_note(T, site, what);
  }
}

/* --model-top: a shard_map operand that lies on the devices as its in_spec
   splits it is the body's block itself: its slot (a copy), or NULL. */
static int32_t *map_param_same(Timeline *T, SFrame *C, SFrame *F, const IrStmt *site, int i) {
  const ShardMap *sm = site->at->ext;
  if (!C->split || C->nd != F->nd || site->prim != P_SHARD_MAP || !sm || i >= sm->nin || i >= site->nin) return NULL;
  const IrAtom *a = &site->in[i];
  SFrame *o = C;
  while (a->var && o && o->fn != a->var->owner) o = o->up;
  if (!a->var || !o || o->nd != F->nd || !o->slots[a->var->slot]) return NULL;
  HpSplit rep, want;
  hp_replicate(&rep, a->t.rank);
  hp_from_spec(F->mesh, &sm->in[i], a->t.rank, &want);
  const HpSplit *have = split_of(C, a);
  if (!hp_same(have ? have : &rep, &want)) return NULL;
  return slot_copy(T, o->slots[a->var->slot], F->nd);
}

/* --model-top: the placement of parameter i of a call from a host frame:
   pjit's in_shardings entry when it says one, else the operand's. */
static void call_param_split(Timeline *T, SFrame *C, SFrame *F, const IrStmt *site, int i) {
  if (!F->split || site->prim >= 0 || i >= site->nin) return;
  const HpSplit *have = split_of(C, &site->in[i]);
  HpSplit want;
  const PVal *sh = hp_param_entry(site, "in_shardings", i);
  if (sh && hp_from_sharding(sh, &site->in[i].t, T->meshes, T->nmeshes, &want)) {
    if (have && !hp_same(have, &want))
      reshard(T, F, site, F->slots[F->fn->params[i]->slot], &site->in[i].t, have, &want);
    set_split(T, F, F->fn->params[i], &want);
  } else {
    set_split(T, F, F->fn->params[i], have);
  }
}

/* Bind the parameters of a frame just pushed for a call from `site`. */
static void bind_params(Timeline *T, SFrame *C, SFrame *F, const IrStmt *site) {
  IrFunc *fn = F->fn;
  for (int64_t d = 0; d < F->nd; d++) F->gate[d] = C->nd == F->nd ? C->gate[d] : 0;
  int first = 0;           /* the operand the first parameter takes */
  Loop *L = C->loop;
  int fromcarry = -1;      /* the first parameter bound from the loop's carry */
  int32_t w;
  if (!site) return;
  if (is_map(site)) {
    place_of(T, F->mesh);                 /* the mesh must fit the hardware */
    double start = 0;
    for (int i = 0; i < site->nin; i++)
      for (int64_t d = 0; d < C->nd; d++) {
        double r = atom_ready(T, C, &site->in[i], d, &w);
        if (r > start) start = r;
      }
    if (C->split) map_operands(T, C, F, site);
    F->holds = tl_get(T, sizeof(int32_t *) * (size_t)(fn->nparams ? fn->nparams : 1));
    for (int64_t d = 0; d < F->nd; d++) F->gate[d] = start;
    for (int i = 0; i < fn->nparams; i++) {
      int32_t *s = map_param_same(T, C, F, site, i);
      if (s) {                  /* --model-top: the block is the operand's own tile on the device */
        F->holds[F->nholds++] = slot_copy(T, s, F->nd);
        set_var(T, F, fn->params[i], s);
        continue;
      }
      s = slot_new(T, F->nd);
      double b = (double)type_size(&fn->params[i]->t) * dtype_sizes[fn->params[i]->t.dt];
      for (int64_t d = 0; d < F->nd; d++) s[d] = buf_new(T, d, b, start);
      F->holds[F->nholds++] = slot_copy(T, s, F->nd);
      set_var(T, F, fn->params[i], s);
    }
    return;
  }
  if (site->prim == P_COND) {
    first = 1;
    for (int64_t d = 0; d < F->nd; d++) {
      double r = atom_ready(T, C, &site->in[0], d, &w);
      if (r > F->gate[d]) F->gate[d] = r;
    }
  } else if (site->prim == P_WHILE && L && L->st == site) {
    int cn = (int)site->at->i[0], bn = (int)site->at->i[1];
    bool body = fn == site->at->fns[1];
    first = body ? cn : 0;
    fromcarry = body ? bn : cn;
    if (body && L->pred)
      for (int64_t d = 0; d < F->nd; d++)
        if (L->pred[d] > F->gate[d]) F->gate[d] = L->pred[d];
  } else if (site->prim == P_FORI_LOOP && L && L->st == site) {
    for (int i = 0; i < site->at->i[2]; i++)       /* value bounds */
      for (int64_t d = 0; d < F->nd; d++) {
        double r = atom_ready(T, C, &site->in[i], d, &w);
        if (r > F->gate[d]) F->gate[d] = r;
      }
    int32_t *s = slot_new(T, F->nd);
    for (int64_t d = 0; d < F->nd; d++) s[d] = buf_new(T, -1, 0, F->gate[d]);
    set_var(T, F, fn->params[0], s);
    for (int i = 1; i < fn->nparams; i++) set_var(T, F, fn->params[i], slot_copy(T, L->carry[i - 1], F->nd));
    return;
  } else if (site->prim == P_SCAN && L && L->st == site) {
    /* consts, then the carries, then a slice of each xs (ready with its xs) */
    int nc = (int)site->at->i[0];
    for (int i = 0; i < fn->nparams; i++) {
      int32_t *s = i >= nc && i < nc + L->n ? slot_copy(T, L->carry[i - nc], F->nd)
                                            : atom_slot(T, C, &site->in[i], F->gate);
      set_var(T, F, fn->params[i], s);
    }
    return;
  }
  for (int i = 0; i < fn->nparams; i++) {
    int32_t *s = fromcarry >= 0 && i >= fromcarry ? slot_copy(T, L->carry[i - fromcarry], F->nd)
                                                 : atom_slot(T, C, &site->in[first + i], F->gate);
    set_var(T, F, fn->params[i], s);
    if (site->prim < 0) call_param_split(T, C, F, site, i);
  }
}

void tl_call(Timeline *T, const void *key, const void *caller, IrFunc *fn, const IrStmt *site, const Mesh *mesh,
             const uint8_t *active) {
  SFrame *C = frame_of(T, caller);
  if (!C) return;                     /* not a frame the timeline follows */
  SFrame *F = frame_push(T, key, fn, mesh, active);
  F->site = site;
  /* static link: the innermost frame of the function that defines fn */
  SFrame *s = C;
  while (s && s->fn != fn->parent && (!s->fn->scope_as || s->fn->scope_as != fn->parent)) s = s->up;
  F->up = s;
  bind_params(T, C, F, site);
}

/* --model-top: the placement of result j of a call from a host frame:
   pjit's out_shardings entry when it says one, else the body's. */
static void call_result_split(Timeline *T, SFrame *C, SFrame *F, const IrStmt *site, int j) {
  const HpSplit *have = split_of(F, &F->fn->outs[j]);
  HpSplit want;
  const PVal *sh = hp_param_entry(site, "out_shardings", j);
  if (sh && hp_from_sharding(sh, &site->out[j]->t, T->meshes, T->nmeshes, &want)) {
    if (have && !hp_same(have, &want) && site->out[j]->owner == C->fn)
      reshard(T, C, site, C->slots[site->out[j]->slot], &site->out[j]->t, have, &want);
    set_split(T, C, site->out[j], &want);
  } else {
    set_split(T, C, site->out[j], have);
  }
}

/* The slot of F's result j. */
static int32_t *result_slot(Timeline *T, SFrame *F, int j) { return atom_slot(T, F, &F->fn->outs[j], F->gate); }

void tl_return(Timeline *T, const void *key) {
  SFrame *F = frame_of(T, key);
  if (!F) return;
  SFrame *C = F->below;
  const IrStmt *site = F->site;
  if (C && site) {
    Loop *L = C->loop;
    IrFunc *fn = F->fn;
    if (is_map(site)) {
      const ShardMap *sm = site->at->ext;
      for (int j = 0; j < fn->nouts && j < site->nout; j++) {
        int32_t *r = result_slot(T, F, j);
        double ready = 0;
        for (int64_t d = 0; d < F->nd; d++)
          if (r[d] >= 0 && T->bufs[r[d]].ready > ready) ready = T->bufs[r[d]].ready;
        int32_t *s = slot_new(T, C->nd);
        if (C->split) {           /* --model-top: the result's blocks stay on the devices */
          const Type *bt = &fn->outs[j].t;
          double b = (double)type_size(bt) * dtype_sizes[bt->dt];
          for (int64_t d = 0; d < C->nd; d++)
            s[d] = buf_new(T, d, d < F->nd ? b : 0, d < F->nd && r[d] >= 0 ? T->bufs[r[d]].ready : ready);
          HpSplit sp;
          if (sm && site->prim == P_SHARD_MAP && j < sm->nout) {
            hp_from_spec(F->mesh, &sm->out[j], site->out[j]->t.rank, &sp);
            set_split(T, C, site->out[j], &sp);
          }
        } else {
          s[0] = buf_new(T, -1, 0, ready);
        }
        slot_free(T, r, F->nd);
        set_var(T, C, site->out[j], s);
      }
    } else if (is_loop(site) && L && L->st == site) {
      if (site->prim == P_WHILE && fn == site->at->fns[0]) {
        int32_t *r = result_slot(T, F, 0);
        if (!L->pred) L->pred = tl_get(T, sizeof(double) * (size_t)C->nd);
        for (int64_t d = 0; d < F->nd; d++)
          if (on(F, d) && r[d] >= 0) L->pred[d] = T->bufs[r[d]].ready;
        slot_free(T, r, F->nd);
      } else {
        for (int k = 0; k < L->n && k < fn->nouts; k++) {
          int32_t *r = result_slot(T, F, k);
          for (int64_t d = 0; d < F->nd; d++)
            if (on(F, d)) {
              buf_unref(T, L->carry[k][d]);
              L->carry[k][d] = buf_ref(T, r[d]);
            }
          slot_free(T, r, F->nd);
        }
        for (int k = 0; k < L->nys && L->n + k < fn->nouts; k++) {   /* scan: slice t of each ys written */
          int32_t *r = result_slot(T, F, L->n + k);
          for (int64_t d = 0; d < F->nd; d++)
            if (on(F, d) && r[d] >= 0 && L->ys[k][d] >= 0 && T->bufs[r[d]].ready > T->bufs[L->ys[k][d]].ready)
              T->bufs[L->ys[k][d]].ready = T->bufs[r[d]].ready;
          slot_free(T, r, F->nd);
        }
      }
    } else if (site->prim < 0 || site->prim == P_COND) {
      for (int j = 0; j < fn->nouts && j < site->nout; j++) {
        int32_t *r = result_slot(T, F, j);
        /* only the devices that ran this function take its results */
        int32_t **dst = &C->slots[site->out[j]->slot];
        if (site->out[j]->owner == C->fn) {
          if (!*dst) *dst = slot_new(T, C->nd);
          for (int64_t d = 0; d < F->nd && d < C->nd; d++)
            if (on(F, d)) {
              buf_unref(T, (*dst)[d]);
              (*dst)[d] = buf_ref(T, r[d]);
            }
        }
        if (C->split && site->prim < 0) call_result_split(T, C, F, site, j);
        slot_free(T, r, F->nd);
      }
    }
  }
  frame_pop(T);
}

void tl_before(Timeline *T, const void *key, const IrStmt *st, int index) {
  (void)index;
  SFrame *F = frame_of(T, key);
  if (!F || st->k != IS_EQN || !is_loop(st)) return;
  Loop *L = tl_get(T, sizeof *L);
  memset(L, 0, sizeof *L);
  L->st = st;
  L->prev = F->loop;
  F->loop = L;
  int first = loop_first_carry(st);
  L->n = st->prim == P_SCAN ? (int)st->at->i[1] : st->nin - first;
  L->carry = tl_get(T, sizeof(int32_t *) * (size_t)(L->n ? L->n : 1));
  for (int k = 0; k < L->n; k++) L->carry[k] = atom_slot(T, F, &st->in[first + k], F->gate);
  if (st->prim == P_SCAN) {       /* the stacked results are whole before the first step */
    L->nys = st->nout - L->n;
    L->ys = tl_get(T, sizeof(int32_t *) * (size_t)(L->nys ? L->nys : 1));
    for (int k = 0; k < L->nys; k++) {
      const Type *t = &st->out[L->n + k]->t;
      double b = on_devices(F) ? (double)type_size(t) * dtype_sizes[t->dt] : 0;
      L->ys[k] = slot_new(T, F->nd);
      for (int64_t d = 0; d < F->nd; d++)
        if (on(F, d)) L->ys[k][d] = buf_new(T, on_devices(F) ? d : -1, b, F->gate[d]);
    }
  }
}

/* Release what F's statement `index` used for the last time. */
static void drop_dead(Timeline *T, SFrame *F, const IrStmt *st, int index) {
  IrFunc *fn = F->fn;
#define DROP(v)                                                                                   \
  do {                                                                                            \
    const IrVar *v_ = (v);                                                                        \
    if (v_ && v_->owner == fn && !v_->captured && F->last[v_->slot] == index && F->slots[v_->slot]) { \
      slot_free(T, F->slots[v_->slot], F->nd);                                                   \
      F->slots[v_->slot] = NULL;                                                                  \
    }                                                                                             \
  } while (0)
  for (int j = 0; j < st->nin; j++) DROP(st->in[j].var);
  for (int j = 0; j < st->nitems; j++) DROP(st->items[j].atom.var);
  for (int j = 0; j < st->nout; j++) DROP(st->out[j]);
#undef DROP
}

void tl_after(Timeline *T, const void *key, const IrStmt *st, int index) {
  SFrame *F = frame_of(T, key);
  if (!F) return;
  T->cur = st;
  if (st->k == IS_CONST) {
    int32_t *s = slot_new(T, F->nd);
    double b = on_devices(F) ? (double)type_size(&st->out[0]->t) * dtype_sizes[st->out[0]->t.dt] : 0;
    for (int64_t d = 0; d < F->nd; d++)
      if (on(F, d)) s[d] = buf_new(T, on_devices(F) ? d : -1, b, F->gate[d]);
    set_var(T, F, st->out[0], s);
  } else if (st->k == IS_EQN && is_loop(st)) {
    Loop *L = F->loop;
    if (L && L->st == st) {
      for (int k = 0; k < L->n && k < st->nout; k++) set_var(T, F, st->out[k], slot_copy(T, L->carry[k], F->nd));
      for (int k = 0; k < L->nys && L->n + k < st->nout; k++)
        set_var(T, F, st->out[L->n + k], slot_copy(T, L->ys[k], F->nd));
      F->loop = L->prev;
      loop_free(T, F, L);
    }
  } else if (st->k == IS_EQN && st->prim >= 0 && st->prim != P_COND && !is_map(st)) {
    if (F->split) run_top(T, F, st);
    else if (!F->mesh) run_host(T, F, st);
    else if (cost_is_comm(st)) run_collective(T, F, st);
    else run_local(T, F, st, index);
  }
  drop_dead(T, F, st, index);
}

/* ---- the evaluator's observer --------------------------------------------------------------- */

static void ob_call(void *data, Frame *F, IrStmt *site) {
  tl_call(data, F, F->caller, F->fn, site, F->space.mesh, F->space.active);
}

static void ob_return(void *data, Frame *F, IrStmt *site) {
  (void)site;
  tl_return(data, F);
}

static void ob_before(void *data, Frame *F, IrStmt *st, int index) {
  Timeline *T = data;
  if (!F->caller && (!T->stack || T->stack->key != F)) {
    bool known = false;
    for (SFrame *s = T->stack; s && !known; s = s->below) known = s->key == F;
    if (!known) tl_top(T, F, F->fn);
  }
  tl_before(T, F, st, index);
}

static void ob_after(void *data, Frame *F, IrStmt *st, int index) { tl_after(data, F, st, index); }

EvalObserver tl_observer(Timeline *T) {
  T->observing = true;
  EvalObserver o = {ob_call, ob_return, ob_before, ob_after, T};
  return o;
}

/* ---- what the trace reads ------------------------------------------------------------------- */

int64_t tl_nevents(const Timeline *T) { return T->nevents; }
int64_t tl_nflows(const Timeline *T) { return T->nflows; }
const TlEvent *tl_events(const Timeline *T) { return T->events; }
int64_t tl_ndevices(const Timeline *T) { return T->ndev; }
const Hw *tl_hw(const Timeline *T) { return &T->hw; }

double tl_makespan(const Timeline *T) {
  double end = 0;
  for (int64_t d = 0; d < T->ndev; d++) {
    if (T->cfree[d] > end) end = T->cfree[d];
    if (T->mfree[d] > end) end = T->mfree[d];
  }
  return end;
}

void tl_event_name(const IrStmt *st, char *out, size_t n) {
  Str src = st->sp.file >= 0 ? diag_line_text(st->sp.file, st->line) : str_c("");
  while (src.n && (*src.p == ' ' || *src.p == '\t')) src.p++, src.n--;
  char quote = 0;                 /* without a trailing comment */
  for (int i = 0; i < src.n; i++) {
    char c = src.p[i];
    if (quote) quote = c == quote ? 0 : quote;
    else if (c == '\'' || c == '"') quote = c;
    else if (c == '#') {
      src.n = i;
      break;
    }
  }
  while (src.n && (src.p[src.n - 1] == ' ' || src.p[src.n - 1] == '\t')) src.n--;
  while (src.n && (src.p[src.n - 1] == ' ' || src.p[src.n - 1] == '\r')) src.n--;
  if (src.n > 72) src.n = 72;
  const char *bw = st->backward ? "(backward) " : "";
  if (src.n) snprintf(out, n, "%d: %s%.*s", st->line, bw, src.n, src.p);
  else snprintf(out, n, "%d: %s%s", st->line, bw, st->prim >= 0 ? prim_table[st->prim].name : "call");
}


void tl_place_name(const IrStmt *st, char *out, size_t n) {
  char name[100];
  tl_event_name(st, name, sizeof name);
  if (st->sp.file > 0) {         /* a line of an imported file: file:line, as the table says */
    const char *fn = diag_file_name(st->sp.file), *slash = fn ? strrchr(fn, '/') : NULL;
    snprintf(out, n, "%s:%s", slash ? slash + 1 : fn ? fn : "?", name);
  } else {
    snprintf(out, n, "%s", name);
  }
}


/* ---- the report --------------------------------------------------------------------------- */

/* "1.234 ms": seconds with four significant digits in a fitting unit. */
static void fmt_time(char *out, size_t n, double t) {
  if (t == 0) snprintf(out, n, "0");
  else if (t < 1e-6) snprintf(out, n, "%.4g ns", t * 1e9);
  else if (t < 1e-3) snprintf(out, n, "%.4g us", t * 1e6);
  else if (t < 1) snprintf(out, n, "%.4g ms", t * 1e3);
  else snprintf(out, n, "%.4g s", t);
}

static void fmt_bytes(char *out, size_t n, double b) {
  if (b == 0) snprintf(out, n, "-");
  else if (b < 1e3) snprintf(out, n, "%.0f B", b);
  else if (b < 1e6) snprintf(out, n, "%.4g kB", b / 1e3);
  else if (b < 1e9) snprintf(out, n, "%.4g MB", b / 1e6);
  else if (b < 1e12) snprintf(out, n, "%.4g GB", b / 1e9);
  else snprintf(out, n, "%.4g TB", b / 1e12);
}

/* A device's five numbers, and as they print. */
typedef struct DevNums {
  double v[5];
  char cells[5][24];
} DevNums;

/* Device d after its last computation, until the run ends at `span`:
   waiting for its own communication to finish (exposed: the step cannot
   end before it) for as long as its communication stream runs, then
   idle. */
static double tail_exposed(const Timeline *T, int64_t d, double span) {
  double end = T->mfree[d] < span ? T->mfree[d] : span;
  return end > T->cfree[d] ? end - T->cfree[d] : 0;
}

/* Device d's numbers, the run ending at span. */
static void device_values(const Timeline *T, int64_t d, double span, TlDevice *out) {
  double tail = tail_exposed(T, d, span);
  double idle = T->idle[d] + (span - T->cfree[d]) - tail;
  out->compute = T->busy_c[d];
  out->comm = T->busy_m[d];
  out->exposed = T->exposed[d] + tail;
  out->idle = idle < 1e-15 ? 0 : idle;
  out->peak_hbm = T->peak[d];
}

void tl_device(const Timeline *T, int64_t d, TlDevice *out) { device_values(T, d, tl_makespan(T), out); }

void tl_devices(const Timeline *T, TlDevice *out) {
  double span = tl_makespan(T);            /* (once: per device it made the table quadratic) */
  for (int64_t d = 0; d < T->ndev; d++) device_values(T, d, span, &out[d]);
}

static void dev_nums(const Timeline *T, int64_t d, double span, DevNums *n) {
  TlDevice dv;
  device_values(T, d, span, &dv);
  n->v[0] = dv.compute;
  n->v[1] = dv.comm;
  n->v[2] = dv.exposed;
  n->v[3] = dv.idle;
  n->v[4] = dv.peak_hbm;
}

static void dev_cells(DevNums *n) {
  for (int k = 0; k < 4; k++) fmt_time(n->cells[k], 24, n->v[k]);
  fmt_bytes(n->cells[4], 24, n->v[4]);
}

/* One row of the device table: a range of devices whose numbers print the same. */
static void device_row(FILE *out, int64_t lo, int64_t hi, const DevNums *n) {
  char range[48];
  if (lo == hi) snprintf(range, sizeof range, "%lld", (long long)lo);
  else snprintf(range, sizeof range, "%lld-%lld", (long long)lo, (long long)hi);
  fprintf(out, "  %-9s %11s %11s %11s %11s %11s\n", range, n->cells[0], n->cells[1], n->cells[2], n->cells[3],
          n->cells[4]);
}

/* The rows of the device table: at most DEV_ROWS; past that, the first
   and last DEV_ROWS / 2 and a line for those between. */
enum { DEV_ROWS = 24 };

/* Runs of devices whose numbers print the same, in device order; row k
   of nrows printed when `print`.  Devices are compared by their numbers,
   and formatted only where those differ (a million devices: no text per
   device, no memory per device).  Returns the number of rows. */
static int64_t device_rows(const Timeline *T, FILE *out, double span, int64_t nrows, int64_t *skipped_lo,
                           int64_t *skipped_hi) {
  DevNums cur, next;
  int64_t lo = 0, row = 0;
  dev_nums(T, 0, span, &cur);
  dev_cells(&cur);
  for (int64_t d = 1; d <= T->ndev; d++) {
    if (d < T->ndev) {
      dev_nums(T, d, span, &next);
      if (!memcmp(next.v, cur.v, sizeof cur.v)) continue;
      dev_cells(&next);
      if (!memcmp(next.cells, cur.cells, sizeof cur.cells)) continue;
    }
    bool shown = nrows <= DEV_ROWS || row < DEV_ROWS / 2 || row >= nrows - DEV_ROWS / 2;
    if (out && shown) device_row(out, lo, d - 1, &cur);
    if (!shown && row == DEV_ROWS / 2) *skipped_lo = lo;
    if (!shown) *skipped_hi = d - 1;
    if (out && !shown && row == nrows - DEV_ROWS / 2 - 1)
      fprintf(out, "  ... %lld more rows, devices %lld-%lld (--trace shows every device)\n",
              (long long)(nrows - DEV_ROWS), (long long)*skipped_lo, (long long)*skipped_hi);
    row++;
    lo = d;
    if (d < T->ndev) cur = next;
  }
  return row;
}

static void report_devices(Timeline *T, FILE *out, double span) {
  fprintf(out, "  %-9s %11s %11s %11s %11s %11s\n", "device", "compute", "comm", "exposed", "idle", "peak HBM");
  int64_t a = 0, b = 0;
  int64_t nrows = T->ndev > DEV_ROWS ? device_rows(T, NULL, span, 0, &a, &b) : DEV_ROWS;
  device_rows(T, out, span, nrows, &a, &b);
}

static void report_memory(Timeline *T, FILE *out) {
  int64_t worst = 0;
  for (int64_t d = 1; d < T->ndev; d++)
    if (T->peak[d] > T->peak[worst]) worst = d;
  char b[32], cap[32];
  fmt_bytes(b, sizeof b, T->peak[worst]);
  fmt_bytes(cap, sizeof cap, T->hw.hbm_bytes);
  const IrStmt *st = T->peak_st[worst];
  char where[160] = "";
  if (st) tl_place_name(st, where, sizeof where);
  if (T->peak[worst] > T->hw.hbm_bytes)
    fprintf(out, "does not fit: device %lld needs %s of HBM (it has %s), at line %s\n", (long long)worst, b, cap,
            where);
  else
    fprintf(out, "peak HBM: %s on device %lld (of %s), at line %s\n", b, (long long)worst, cap, where);
}

static int cmp_lines(const void *a, const void *b) {
  const LineStat *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? 1 : -1;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  if (x->file != y->file) return x->file - y->file;
  return x->line - y->line;
}

/* The resource that limits a line: the one most of its time went to. */
static int line_limit(const LineStat *l) {
  int best = 0;
  for (int k = 1; k < LIM_COUNT; k++)
    if (l->by_limit[k] > l->by_limit[best]) best = k;
  return best;
}

/* How a line ran: the way most of its time ran (a kernel, fused, a
   collective's algorithm). */
static int line_algo(const LineStat *l) {
  int how = 0;
  for (int k = 1; k < ALG_COUNT; k++)
    if (l->by_algo[k] > l->by_algo[how]) how = k;
  return how;
}

static void report_lines(Timeline *T, FILE *out, double total) {
  qsort(T->lines, (size_t)T->nlines, sizeof *T->lines, cmp_lines);
  fprintf(out, "per line, hottest first:\n");
  fprintf(out, "  %5s %7s %11s %6s %11s %11s %-8s %-9s %s\n", "line", "runs", "time", "share", "coll bytes",
          "waited", "limit", "how", "source");
  int shown = 0;
  double rest = 0;
  long nrest = 0;
  for (int i = 0; i < T->nlines; i++) {
    LineStat *l = &T->lines[i];
    if (l->time == 0 && l->bytes == 0) continue;
    if (shown == 40) {           /* the cold tail in one line */
      rest += l->time;
      nrest++;
      continue;
    }
    shown++;
    int best = line_limit(l), how = line_algo(l);
    char t[24], b[24], w[24], src[100];
    fmt_time(t, sizeof t, l->time);
    /* what a fused equation adds to its producer's kernel: below a
       nanosecond it is noise, not a cost to read (the trace keeps it) */
    if (l->time > 0 && l->time < 1e-9) snprintf(t, sizeof t, "<1 ns");
    fmt_bytes(b, sizeof b, l->bytes);
    fmt_time(w, sizeof w, l->wait);
    tl_event_name(l->first, src, sizeof src);
    const char *text = strchr(src, ':') ? strchr(src, ':') + 2 : src;
    char hosttext[160];
    if (l->host) {          /* --model-top: a host-level line and its placement */
      snprintf(hosttext, sizeof hosttext, "(host, %s) %s", l->place, text);
      text = hosttext;
    }
    /* a line of another file than the program's (an imported one): file:line */
    char where[96];
    if (l->file > 0) {
      const char *fn = diag_file_name(l->file), *slash = fn ? strrchr(fn, '/') : NULL;
      snprintf(where, sizeof where, "%s:%d", slash ? slash + 1 : fn ? fn : "?", l->line);
    } else {
      snprintf(where, sizeof where, "%d", l->line);
    }
    fprintf(out, "  %5s %7ld %11s %5.1f%% %11s %11s %-8s %-9s %s\n", where, l->calls, t,
            total > 0 ? 100 * l->time / total : 0, b, l->wait > 0 ? w : "-", cost_limit_name((CostLimit)best),
            cost_algo_name((CostAlgo)how), text);
  }
  if (nrest) {
    char t[24];
    fmt_time(t, sizeof t, rest);
    fprintf(out, "  and %ld more line%s: %s, %.1f%%\n", nrest, nrest == 1 ? "" : "s", t,
            total > 0 ? 100 * rest / total : 0);
  }
}

static void report_places(Timeline *T, FILE *out) {
  for (int i = 0; i < T->nplaces; i++) {
    const Mesh *m = T->places[i].mesh;
    const HwPlace *pl = &T->places[i].pl;
    if (m->name.n) fprintf(out, "mesh %.*s = {", m->name.n, m->name.p);
    else fprintf(out, "mesh {");           /* pmap's, or a Mesh(...) written in place */
    for (int a = 0; a < m->naxes; a++)
      fprintf(out, "%s%.*s: %lld", a ? ", " : "", m->axis[a].n, m->axis[a].p, (long long)m->size[a]);
    fprintf(out, "}");
    if (T->hw.topo == HW_SWITCH) {
      int64_t nodes = (m->ndev + T->hw.node_size - 1) / T->hw.node_size;
      fprintf(out, " on %lld node%s of %lld\n", (long long)nodes, nodes == 1 ? "" : "s", (long long)T->hw.node_size);
      continue;
    }
    fprintf(out, " on a ");
    for (int d = 0; d < T->hw.ndims; d++) fprintf(out, "%s%lld", d ? "x" : "", (long long)pl->slice[d]);
    fprintf(out, " slice:");
    for (int a = 0; a < m->naxes; a++) {
      fprintf(out, " %.*s along ", m->axis[a].n, m->axis[a].p);
      for (int j = 0; j < pl->ndim[a]; j++) fprintf(out, "%c", hw_dim_name(pl->dim[a][j]));
      fprintf(out, a + 1 < m->naxes ? "," : "");
    }
    fprintf(out, "; wraparound on");
    bool any = false;
    for (int d = 0; d < T->hw.ndims; d++)
      if (pl->wrap[d]) fprintf(out, " %c", hw_dim_name(d)), any = true;
    fprintf(out, "%s\n", any ? "" : " none");
  }
}

void tl_report(Timeline *T, FILE *out) {
  double span = tl_makespan(T);
  char t[32];
  fmt_time(t, sizeof t, span);
  fprintf(out, "modelled on %s: %s\n", T->hw.name, t);
  report_places(T, out);
  if (!T->ndev) fprintf(out, "no shard_map ran: nothing ran on the devices\n");
  if (T->ndev) {
    report_devices(T, out, span);
    report_memory(T, out);
  }
  double total = 0;
  for (int i = 0; i < T->nlines; i++) total += T->lines[i].time;
  if (T->nlines) report_lines(T, out, total);
  double sent = 0;
  for (int i = 0; i < T->nlines; i++) sent += T->lines[i].bytes;
  if (sent > 0) fprintf(out, "collective bytes sent, all devices: %.0f\n", sent);
  if (T->outside && T->model_top)
    fprintf(out, "host-level (--model-top): %ld equation%s outside any shard_map, on %lld device%s: %ld split, %ld "
            "replicated\n", T->outside, T->outside == 1 ? "" : "s", (long long)T->topn, T->topn == 1 ? "" : "s",
            T->host_split, T->outside - T->host_split);
  else if (T->outside)
    fprintf(out, "not modelled: %ld equation%s outside any shard_map (the host's)\n", T->outside,
            T->outside == 1 ? "" : "s");
  for (int i = 0; i < T->nhnotes; i++) fprintf(out, "placement: %s\n", T->hnotes[i]);
  if (T->undeclared_dtype)
    fprintf(out, "note: %s has no %s peak; modelled at its f32 peak\n", T->hw.name, T->undeclared);
  for (int i = 0; i < T->nnotes; i++) fprintf(out, "data-dependent: %s\n", T->notes[i]);
}

void tl_totals(const Timeline *T, TlTotals *out) {
  memset(out, 0, sizeof *out);
  out->makespan = tl_makespan(T);
  out->devices = T->ndev;
  for (int i = 0; i < T->nlines; i++) out->bytes_sent += T->lines[i].bytes;
  for (int64_t d = 0; d < T->ndev; d++) {
    if (T->busy_c[d] > out->compute) out->compute = T->busy_c[d];
    if (T->busy_m[d] > out->comm) out->comm = T->busy_m[d];
    double exposed = T->exposed[d] + tail_exposed(T, d, out->makespan);
    if (exposed > out->exposed) out->exposed = exposed;
    if ((double)T->peak[d] > out->peak_hbm) out->peak_hbm = (double)T->peak[d];
  }
}

int tl_lines(Timeline *T, TlLine *out) {
  qsort(T->lines, (size_t)T->nlines, sizeof *T->lines, cmp_lines);
  int n = 0;
  for (int i = 0; i < T->nlines; i++) {
    const LineStat *l = &T->lines[i];
    if (l->time == 0 && l->bytes == 0) continue;       /* as the report's table */
    if (out) {
      TlLine *o = &out[n];
      o->file = l->file;
      o->line = l->line;
      o->first = l->first;
      o->calls = l->calls;
      o->time = l->time;
      o->compute = l->compute;
      o->comm = l->comm;
      o->wait = l->wait;
      o->flops = l->flops;
      o->hbm_bytes = l->hbm;
      o->coll_bytes = l->bytes;
      o->limit = (CostLimit)line_limit(l);
      o->algo = (CostAlgo)line_algo(l);
    }
    n++;
  }
  return n;
}

const IrStmt *tl_peak(const Timeline *T, int64_t *dev) {
  int64_t worst = 0;
  for (int64_t d = 1; d < T->ndev; d++)
    if (T->peak[d] > T->peak[worst]) worst = d;
  *dev = worst;
  return T->ndev ? T->peak_st[worst] : NULL;
}

long tl_outside(const Timeline *T) { return T->outside; }

int tl_nnotes(const Timeline *T) { return T->nnotes; }
const char *tl_note_text(const Timeline *T, int i) { return T->notes[i]; }
