/*
** fabric.c — collectives: their execution over the blocks of all
** instances, and the accounting of what they would cost.  (Their shape
** rules are in coll.c.)
*/
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include "coll.h"
#include "diag.h"
#include "err.h"
#include "fabmpi.h"
#include "fabric.h"
#include "half.h"
#include "par.h"
#include "state.h"

/* ---- statistics ---------------------------------------------------------------------- */

typedef struct Stat {
  long calls;
  long maxdev;            /* most instances taking part in one call */
  long devices;           /* instances taking part, summed over calls */
  double sent;            /* bytes sent, summed over devices and calls */
  double recv;
  double per_dev_sent;    /* bytes the device sending most sends in a call, summed over calls */
} Stat;

/* The same totals per set of mesh axes a collective runs over ("i",
   "(i, j)"), in the order first met. */
enum { NAXSTAT = 16 };
typedef struct AxStat {
  char axes[64];
  long calls;
  double sent;
} AxStat;

/* The statistics of a state (state.h's fabric slot, made on first use). */
typedef struct FabStats {
  Stat stats[P_COUNT];
  /* Under several ranks: one record per call of this rank since the last
     sync (its place in the run, the primitive, this rank's instances, the
     bytes each sends and receives), merged on rank 0 into `stats`. */
  Buf records;
  AxStat axstats[NAXSTAT + 1];     /* the last: every other set */
  int naxstats;
  char cur_axes[64];               /* of the collective running */
  double last_sent;                /* bytes one member sent in the last ragged_all_to_all */
  /* psends no precv has received yet, oldest first, and where the
     running collective is written (fab_set_site) */
  struct Pending *pend;
  int npend, cappend;
  Span site;
} FabStats;

/* A psend waiting for its precv: the token it made (its blocks identify
   it, whatever value passes it on), what it sends, along which pairs,
   and where it is written. */
typedef struct Pending {
  Val *token, *payload;
  const Attrs *at;
  Span where;
} Pending;

static void pending_drop(FabStats *f, int k) {
  val_unref(f->pend[k].token);
  val_unref(f->pend[k].payload);
  memmove(&f->pend[k], &f->pend[k + 1], sizeof(Pending) * (size_t)(f->npend - k - 1));
  f->npend--;
}

static void fs_free(void *p) {
  FabStats *f = p;
  while (f->npend) pending_drop(f, f->npend - 1);
  free(f->pend);
  buf_free(&f->records);
  free(f);
}

static FabStats *fs(void) {
  ShmState *st = state_cur();
  if (!st->slot[SLOT_FABRIC]) {
    FabStats *f = calloc(1, sizeof *f);
    if (!f) err_throw("out of memory: the system refused %zu bytes", sizeof *f);
    st->slot[SLOT_FABRIC] = f;
    st->slot_free[SLOT_FABRIC] = fs_free;
  }
  return st->slot[SLOT_FABRIC];
}

void fab_stats_reset(void) {
  FabStats *f = fs();
  memset(f->stats, 0, sizeof f->stats);
  memset(f->axstats, 0, sizeof f->axstats);
  f->naxstats = 0;
  buf_reset(&f->records);
}

bool fab_stats_any(void) {
  FabStats *f = fs();
  for (int p = 0; p < P_COUNT; p++)
    if (f->stats[p].calls) return true;
  return false;
}

/* The entry of the set of axes `axes`. */
static AxStat *axstat_of(const char *axes) {
  FabStats *f = fs();
  AxStat *axstats = f->axstats;
  int naxstats = f->naxstats;
  for (int k = 0; k < naxstats; k++)
    if (!strcmp(axstats[k].axes, axes)) return &axstats[k];
  if (naxstats == NAXSTAT) {
    snprintf(axstats[NAXSTAT].axes, sizeof axstats[NAXSTAT].axes, "other axes");
    return &axstats[NAXSTAT];
  }
  snprintf(axstats[naxstats].axes, sizeof axstats[naxstats].axes, "%s", axes);
  f->naxstats++;
  return &axstats[naxstats];
}

/* One call of collective prim over the mesh axes `axes` (as text): each
   device sends sent_each on average, the busiest `busiest`. */
static void count_call(int prim, long devices, double sent_each, double recv_each, double busiest, const char *axes) {
  AxStat *ax = axstat_of(axes);
  ax->calls++;
  ax->sent += sent_each * (double)devices;
  Stat *s = &fs()->stats[prim];
  s->calls++;
  s->devices += devices;
  if (devices > s->maxdev) s->maxdev = devices;
  s->sent += sent_each * (double)devices;
  s->recv += recv_each * (double)devices;
  s->per_dev_sent += busiest;
}

/* A collective's call: counted here, or under several ranks recorded
   for rank 0's merge. */
static void account(int prim, long devices, double sent_each, double recv_each, double busiest) {
  FabStats *f = fs();
  if (fmpi_size() == 1) {
    count_call(prim, devices, sent_each, recv_each, busiest, f->cur_axes);
    return;
  }
  fmpi_path_put(&f->records);
  int64_t p = prim, d = devices;
  double x[3] = {sent_each, recv_each, busiest};
  buf_put(&f->records, (const char *)&p, sizeof p);
  buf_put(&f->records, (const char *)&d, sizeof d);
  buf_put(&f->records, (const char *)x, sizeof x);
  buf_put(&f->records, f->cur_axes, sizeof f->cur_axes);
}

const Buf *fab_stats_records(void) { return &fs()->records; }

void fab_stats_release(void) {
  ShmState *st = state_cur();
  if (st->slot[SLOT_FABRIC]) fs_free(st->slot[SLOT_FABRIC]);
  st->slot[SLOT_FABRIC] = NULL;
}

void fab_stats_records_done(void) { buf_reset(&fs()->records); }

/* A record as read back on rank 0. */
typedef struct Rec {
  const int64_t *key;
  int64_t nkey, prim, devices;
  double sent, recv, busiest;
  const char *axes;             /* (sizeof cur_axes bytes, NUL-terminated) */
} Rec;

static int rec_cmp(const void *x, const void *y) {
  const Rec *a = x, *b = y;
  for (int64_t i = 0; i < a->nkey && i < b->nkey; i++) {
    int64_t x, y;                 /* (read as bytes: a record in a message need not be aligned) */
    memcpy(&x, (const char *)a->key + 8 * i, 8);
    memcpy(&y, (const char *)b->key + 8 * i, 8);
    if (x != y) return x < y ? -1 : 1;
  }
  if (a->nkey != b->nkey) return a->nkey < b->nkey ? -1 : 1;
  return a->prim < b->prim ? -1 : a->prim > b->prim;
}

void fab_stats_merge(const char *const *p, const size_t *n, int nranks) {
  Rec *rec = NULL;
  int nrec = 0, cap = 0;
  for (int r = 0; r < nranks; r++)
    for (const char *q = p[r], *end = p[r] + n[r]; q < end;) {
      VEC_GROW(rec, cap, nrec + 1);
      Rec *e = &rec[nrec++];
      memcpy(&e->nkey, q, 8);
      e->key = (const int64_t *)(q + 8);
      q += 8 + 8 * e->nkey;
      memcpy(&e->prim, q, 8);
      memcpy(&e->devices, q + 8, 8);
      memcpy(&e->sent, q + 16, 8);
      memcpy(&e->recv, q + 24, 8);
      memcpy(&e->busiest, q + 32, 8);
      e->axes = q + 40;
      q += 40 + sizeof fs()->cur_axes;
    }
  if (nrec) qsort(rec, (size_t)nrec, sizeof *rec, rec_cmp);
  for (int a = 0, b; a < nrec; a = b) {       /* one call: the records of one place */
    long devices = 0;
    for (b = a; b < nrec && !rec_cmp(&rec[a], &rec[b]); b++) devices += (long)rec[b].devices;
    count_call((int)rec[a].prim, devices, rec[a].sent, rec[a].recv, rec[a].busiest, rec[a].axes);
  }
  mem_free(rec);
}

/* The table's rows by mesh axes, then (explain) what its columns mean. */
static void stats_tail(FILE *out, bool explain) {
  for (int k = 0; k <= NAXSTAT; k++) {
    AxStat *a = &fs()->axstats[k];
    if (!a->calls) continue;
    char t[32];
    mem_human(t, sizeof t, a->sent);
    fprintf(out, "  over %-15s %7ld %8s %14s %14s\n", a->axes, a->calls, "", "", t);
  }
  if (!explain) return;
  fputs("(calls: times the collective ran; devices: the most devices taking part in one call;\n"
        " sent/device: the most bytes one device sends in a call, summed over the calls; total\n"
        " sent: bytes all devices send; `over AXES`: the totals of the collectives over those\n"
        " mesh axes)\n", out);
}

void fab_stats_print(FILE *out, bool explain) {
  fprintf(out, "%-22s %7s %8s %14s %14s\n", "collective", "calls", "devices", "sent/device", "total sent");
  long calls = 0, devs = 0;
  double total = 0, per = 0;
  for (int p = 0; p < P_COUNT; p++) {
    Stat *s = &fs()->stats[p];
    if (!s->calls) continue;
    char a[32], b[32];
    mem_human(a, sizeof a, s->per_dev_sent);
    mem_human(b, sizeof b, s->sent);
    fprintf(out, "%-22s %7ld %8ld %14s %14s\n", p == P_PBROADCAST_SOURCE ? "pbroadcast[source]" : prim_table[p].name, s->calls, s->maxdev, a, b);
    calls += s->calls;
    devs += s->devices;
    total += s->sent;
    per += s->per_dev_sent;
  }
  char a[32], b[32];
  mem_human(a, sizeof a, per);
  mem_human(b, sizeof b, total);
  fprintf(out, "%-22s %7ld %8s %14s %14s\n", "total", calls, "", a, b);
  stats_tail(out, explain);
  if (fmpi_size() > 1) {
    mem_human(b, sizeof b, fmpi_bytes_crossed());
    fprintf(out, "across %d ranks, %s crossed between them\n", fmpi_size(), b);
  }
}

/* ---- groups ---------------------------------------------------------------------------- */

/* Set the coordinates of group member g (first listed axis major). */
static void member_coords(const Mesh *m, const Attrs *at, int64_t g, int64_t *coords) {
  for (int k = at->naxes - 1; k >= 0; k--) {
    int a = at->axes[k];
    coords[a] = g % m->size[a];
    g /= m->size[a];
  }
}

static int64_t group_size(const Mesh *m, const Attrs *at) {
  int64_t p = 1;
  for (int k = 0; k < at->naxes; k++) p *= m->size[at->axes[k]];
  return p;
}

bool fab_runs(const Space *sp, int64_t inst) {
  return (!sp->active || sp->active[inst]) && (!sp->mesh || fmpi_local(sp->mesh->ndev, inst));
}

bool fab_all_here(const Space *sp) { return !sp->active && (!sp->mesh || fmpi_size() == 1); }

uint8_t *fab_needed(const Space *sp, uint32_t mask, int64_t nb) {
  if (fab_all_here(sp)) return NULL;
  uint8_t *need = mem_calloc((size_t)nb);
  for (int64_t i = 0; i < sp->ninst; i++)
    if (fab_runs(sp, i)) need[til_block_of(sp->mesh, mask, i)] = 1;
  return need;
}

/* ---- reductions ------------------------------------------------------------------------- */

/* Elements per tile of a reduction: small enough that the partial result
   stays in cache while every member's block is added to it. */
#define TILE 2048

/* reduce_into for the 16-bit floats by a typed loop: each step in f32,
   its result rounded to the dtype (as reduce_slow does). */
static void reduce_half16(int prim, DType dt, void *dst, Array *const *src, int64_t p, int64_t off, int64_t n) {
  bool bf = dt == DT_BF16;
  uint16_t *d = dst;
  for (int64_t i = 0; i < n; i++) {
    const uint16_t *x0 = src[0]->data;
    float re = bf ? bf16_to_f32(x0[off + i]) : f16_to_f32(x0[off + i]);
    for (int64_t g = 1; g < p; g++) {
      uint16_t h = ((const uint16_t *)src[g]->data)[off + i];
      float br = bf ? bf16_to_f32(h) : f16_to_f32(h);
      if (prim == P_PMAX) re = (re != re || re >= br) ? re : br;
      else if (prim == P_PMIN) re = (re != re || re <= br) ? re : br;
      else {
        float t = re + br;
        re = bf ? bf16_to_f32(bf16_from_f32(t)) : f16_to_f32(f16_from_f32(t));
      }
    }
    d[i] = bf ? bf16_from_f32(re) : f16_from_f32(re);
  }
}

/* reduce_into for complex numbers (part by part) and what reduce_half16
   does not take. */
static void reduce_slow(int prim, DType dt, void *dst, Array *const *src, int64_t p, int64_t off, int64_t n) {
  if (dtype_is_half(dt) && (prim == P_PSUM || prim == P_PMAX || prim == P_PMIN)) {
    reduce_half16(prim, dt, dst, src, p, off, n);
    return;
  }
  Array d = *src[0];
  d.data = (char *)dst - off * dtype_sizes[dt];      /* dst as an array indexed like the sources */
  d.size = off + n;
  for (int64_t i = off; i < off + n; i++) {
    double re, im;
    arr_getc(src[0], i, &re, &im);
    for (int64_t g = 1; g < p; g++) {
      double br, bi;
      arr_getc(src[g], i, &br, &bi);
      if (dtype_is_complex(dt)) { re += br; im += bi; }
      else if (prim == P_PMAX) re = (re != re || re >= br) ? re : br;
      else if (prim == P_PMIN) re = (re != re || re <= br) ? re : br;
      else re = (double)(float)((float)re + (float)br);
      if (dtype_is_half(dt)) {       /* the step's result rounded */
        arr_setf(&d, i, re);
        re = arr_getf(&d, i);
      }
    }
    if (dtype_is_complex(dt) && dt == DT_C64) { re = (float)re; im = (float)im; }
    arr_setc(&d, i, re, im);
  }
}

/* dst[0..n) = op over the members g = 0, 1, ..., p-1 of src[g][off..off+n),
   combined left to right (the fixed order that makes sums reproducible):
   a vector register's worth of elements at a time through all members,
   the running result kept in the register (written back and read again
   for every member it would wait each time for its own store; and a big
   reduction so reads each member once and writes the result once, where
   a cache-sized tile of the result would be read and written once per
   member); the last few elements a tile at a time.  Each element sees
   the same operations in the same order either way. */
SHM_WIDE static void reduce_into(int prim, DType dt, void *dst, Array *const *src, int64_t p, int64_t off, int64_t n) {
  switch (dt) {
/* U: the type the sum is taken in -- for integers the unsigned type of the
   same width, so that it wraps (as XLA's does) instead of overflowing */
#define OP_MAX(x, y) (((x) != (x) || (x) >= (y)) ? (x) : (y))
#define OP_MIN(x, y) (((x) != (x) || (x) <= (y)) ? (x) : (y))
#define OP_OF(K, T, U, x, y) ((K) == P_PMAX ? OP_MAX(x, y) : (K) == P_PMIN ? OP_MIN(x, y) : (T)((U)(x) + (U)(y)))
#define IN_REGS(T, U, K)                                                                       \
  for (; i0 + BW <= n; i0 += BW) {                                                             \
    T acc[BW];                                                                                 \
    for (int j = 0; j < BW; j++) acc[j] = s0[i0 + j];                                          \
    for (int64_t g = 1; g < p; g++) {                                                          \
      const T *b = (const T *)src[g]->data + off + i0;                                         \
      for (int j = 0; j < BW; j++) acc[j] = OP_OF(K, T, U, acc[j], b[j]);                      \
    }                                                                                          \
    for (int j = 0; j < BW; j++) d[i0 + j] = acc[j];                                           \
  }
#define LOOP(T, U)                                                                             \
  {                                                                                            \
    T *d = dst;                                                                                \
    int64_t i0 = 0;                                                                            \
    {                                                                                          \
      enum { BW = 64 / sizeof(T) };                                                            \
      const T *s0 = (const T *)src[0]->data + off;                                             \
      if (prim == P_PMAX) IN_REGS(T, U, P_PMAX)                                                \
      else if (prim == P_PMIN) IN_REGS(T, U, P_PMIN)                                           \
      else IN_REGS(T, U, P_PSUM)                                                               \
    }                                                                                          \
    for (int64_t t0 = i0; t0 < n; t0 += TILE) {                                                \
      int64_t m = n - t0 < TILE ? n - t0 : TILE;                                               \
      T *a = d + t0;                                                                           \
      if (a != (const T *)src[0]->data + off + t0)                                             \
        memcpy(a, (const T *)src[0]->data + off + t0, sizeof(T) * (size_t)m);                  \
      for (int64_t g = 1; g < p; g++) {                                                        \
        const T *b = (const T *)src[g]->data + off + t0;                                       \
        if (prim == P_PMAX) for (int64_t i = 0; i < m; i++) a[i] = OP_MAX(a[i], b[i]);          \
        else if (prim == P_PMIN) for (int64_t i = 0; i < m; i++) a[i] = OP_MIN(a[i], b[i]);     \
        else for (int64_t i = 0; i < m; i++) a[i] = (T)((U)a[i] + (U)b[i]);                   \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  break;
  case DT_F32: LOOP(float, float)
  case DT_F64: LOOP(double, double)
  case DT_I8: LOOP(int8_t, uint8_t)
  case DT_I16: LOOP(int16_t, uint16_t)
  case DT_I32: LOOP(int32_t, uint32_t)
  case DT_I64: LOOP(int64_t, uint64_t)
  case DT_U8: LOOP(uint8_t, uint8_t)
  case DT_U16: LOOP(uint16_t, uint16_t)
  case DT_U32: LOOP(uint32_t, uint32_t)
  case DT_U64: LOOP(uint64_t, uint64_t)
  case DT_BF16: case DT_F16: case DT_C64: case DT_C128:
    reduce_slow(prim, dt, dst, src, p, off, n);
    break;
  case DT_BOOL: {
    uint8_t *a = dst;
    if (a != (const uint8_t *)src[0]->data + off) memcpy(a, (const uint8_t *)src[0]->data + off, (size_t)n);
    for (int64_t g = 1; g < p; g++) {
      const uint8_t *b = (const uint8_t *)src[g]->data + off;
      if (prim == P_PMIN) for (int64_t i = 0; i < n; i++) a[i] = a[i] && b[i];
      else for (int64_t i = 0; i < n; i++) a[i] = a[i] || b[i];
    }
    break;
  }
  default: break;
#undef LOOP
#undef IN_REGS
#undef OP_OF
#undef OP_MAX
#undef OP_MIN
  }
}

/* The group's blocks, members in order (first listed axis major): from
   the block of member 0 (block o of `outer` placed among the operand's
   blocks), each member's axis coordinates times that axis's stride
   among the operand's blocks (0 for an axis the operand does not vary
   over), the last listed axis counting fastest. */
static void group_blocks(const Mesh *m, const Attrs *at, Val *in, uint32_t outer, int64_t o, int64_t p, Array **blk) {
  int64_t stride[SHM_MAXAXES] = {0}, idx[SHM_MAXAXES], at0 = 0, s = 1;
  for (int k = m->naxes - 1; k >= 0; k--)
    if (in->mask & (1u << k)) {
      stride[k] = s;
      if (outer & (1u << k)) {
        at0 += o % m->size[k] * s;
        o /= m->size[k];
      }
      s *= m->size[k];
    }
  if (at->naxes == 1) {
    for (int64_t g = 0; g < p; g++) blk[g] = in->blk[at0 + g * stride[at->axes[0]]];
    return;
  }
  for (int k = 0; k < at->naxes; k++) idx[k] = 0;
  for (int64_t g = 0, off = 0; g < p; g++) {
    blk[g] = in->blk[at0 + off];
    for (int k = at->naxes - 1; k >= 0; k--) {
      int a = at->axes[k];
      off += stride[a];
      if (++idx[k] < m->size[a]) break;
      off -= idx[k] * stride[a];
      idx[k] = 0;
    }
  }
}

static void divide(Array *acc, int64_t p) {
  int64_t n = acc->size;
  switch ((DType)acc->dt) {
  case DT_F32: { float *a = acc->data; for (int64_t i = 0; i < n; i++) a[i] /= (float)p; break; }
  case DT_F64: { double *a = acc->data; for (int64_t i = 0; i < n; i++) a[i] /= (double)p; break; }
  case DT_I32: { int32_t *a = acc->data; for (int64_t i = 0; i < n; i++) a[i] = (int32_t)(a[i] / p); break; }
  case DT_I64: { int64_t *a = acc->data; for (int64_t i = 0; i < n; i++) a[i] /= p; break; }
  case DT_BF16: case DT_F16: case DT_C64: case DT_C128:
    for (int64_t i = 0; i < n; i++) {
      double re, im;
      arr_getc(acc, i, &re, &im);
      if (acc->dt == DT_C128) arr_setc(acc, i, re / (double)p, im / (double)p);
      else arr_setc(acc, i, (float)re / (float)p, (float)im / (float)p);
    }
    break;
  default: break;
  }
}

/* Half h of a reduction of `n` elements (on a tile boundary). */
typedef struct RangeJob {
  int prim;
  DType dt;
  void *dst;
  Array **blk;
  int64_t p, n;
} RangeJob;

static void reduce_half(void *ctx, int64_t h) {
  RangeJob *j = ctx;
  int64_t mid = (j->n / 2 / TILE) * TILE;
  int64_t lo = h ? mid : 0, hi = h ? j->n : mid;
  reduce_into(j->prim, j->dt, (char *)j->dst + lo * dtype_sizes[j->dt], j->blk, j->p, lo, hi - lo);
}

/* Member k of a psum_scatter whose chunks are contiguous: the sum of
   chunk k of every block. */
typedef struct ScatterJob {
  Array **blk, **rs;
  int64_t p, csize;
} ScatterJob;

static void scatter_one(void *ctx, int64_t k) {
  ScatterJob *j = ctx;
  reduce_into(P_PSUM, (DType)j->rs[k]->dt, j->rs[k]->data, j->blk, j->p, k * j->csize, j->csize);
}

/* Can the group's result be written over its first member's block?  Only
   when the operand is given up (fab_exec's `donate`), nothing else holds
   that block (so no other group or value sees it change), and it is a
   big block of its own (not part of a slab of small ones). */
static bool reusable(Array *const *blk, int64_t p, bool donate) {
  if (!donate || blk[0]->refc != 1 || blk[0]->slab || arr_nbytes(blk[0]) < ((size_t)64 << 10)) return false;
  for (int64_t g = 1; g < p; g++)
    if (blk[g] == blk[0]) return false;
  return true;
}

/* pmean's sum divided by the group size (consumes acc). */
static Array *mean_of(Array *acc, int64_t p) {
  if (!dtype_is_float((DType)acc->dt) && !dtype_is_complex((DType)acc->dt)) {   /* JAX's pmean of integers is a float32 mean */
    Array *f = arr_convert(acc, DT_F32);
    arr_unref(acc);
    acc = f;
  }
  divide(acc, p);
  return acc;
}

/* Sum (max, min, mean) of the group's blocks, members in ascending order. */
static Array *reduce_group(int prim, const Mesh *m, const Attrs *at, Val *in, uint32_t outer, int64_t o, int64_t p,
                           bool donate) {
  Array *few[64];
  Array **blk = p <= 64 ? few : mem_alloc(sizeof(Array *) * (size_t)p);
  if (blk != few) err_defer(mem_free, blk);
  group_blocks(m, at, in, outer, o, p, blk);
  /* reduce_into reads each tile of the first member before writing it */
  Array *acc = reusable(blk, p, donate) ? arr_ref(blk[0]) : arr_new((DType)blk[0]->dt, blk[0]->rank, blk[0]->shape);
  if (blk != few) err_undefer(blk);
  RangeJob rj = {prim == P_PMEAN ? P_PSUM : prim, (DType)acc->dt, acc->data, blk, p, acc->size};
  double bytes = (double)arr_nbytes(acc) * (double)p;
  if (bytes < PAR_BYTES) reduce_into(rj.prim, rj.dt, acc->data, blk, p, 0, acc->size);   /* par_for's one thread */
  else par_for(2, reduce_half, &rj, bytes);
  if (blk != few) mem_free(blk);
  return prim == P_PMEAN ? mean_of(acc, p) : acc;
}

/* ---- execution -------------------------------------------------------------------------- */

/* Chunk k of `a` along dimension d (chunks of size c), as a new array. */
static Array *chunk(const Array *a, int d, int64_t k, int64_t c) {
  int64_t start[SHM_MAXRANK] = {0}, shape[SHM_MAXRANK];
  for (int i = 0; i < a->rank; i++) shape[i] = a->shape[i];
  start[d] = k * c;
  shape[d] = c;
  return arr_block(a, start, shape);
}

/* Drop dimension d (of size 1) of a freshly built array, in place. */
static void squeeze_dim(Array *a, int d) {
  for (int i = d; i < a->rank - 1; i++) a->shape[i] = a->shape[i + 1];
  a->shape[--a->rank] = 0;
}

/* Insert a dimension of size 1 at d of a freshly built array, in place. */
static void expand_dim(Array *a, int d) {
  for (int i = a->rank; i > d; i--) a->shape[i] = a->shape[i - 1];
  a->shape[d] = 1;
  a->rank++;
}

typedef struct GatherJob {
  const Mesh *m;
  const Attrs *at;
  Val *in;
  const int64_t *coords;     /* the group's coordinates off the gathered axes */
  Array *r;
} GatherJob;

/* Copy member g's block into its place in the gathered array. */
static void gather_one(void *ctx, int64_t g) {
  GatherJob *j = ctx;
  int64_t coords[SHM_MAXAXES];
  memcpy(coords, j->coords, sizeof coords);
  member_coords(j->m, j->at, g, coords);
  Array *x = j->in->blk[til_block_at(j->m, j->in->mask, coords)];
  Array *r = j->r;
  int d = (int)j->at->i[0];
  int64_t start[SHM_MAXRANK] = {0};
  if (j->at->b[0]) {
    start[d] = g * x->shape[d];
    arr_put_block(r, start, x);
  } else {             /* view the block with a dimension of size 1 at d */
    int64_t vshape[SHM_MAXRANK], zero[SHM_MAXRANK] = {0};
    for (int i = 0, k = 0; i < r->rank; i++) vshape[i] = i == d ? 1 : x->shape[k++];
    start[d] = g;
    arr_copy_box(r->data, r->shape, start, x->data, vshape, zero, vshape, r->rank, dtype_sizes[r->dt]);
  }
}

/* Concatenate the group's blocks along dimension d (tiled) or stacked at a
   new dimension d (untiled), members in order.  `pick(g)` gives member g's
   block (borrowed). */
static Array *gather_group(const Mesh *m, const Attrs *at, Val *in, uint32_t outer, int64_t o, int64_t p,
                           const Type *outt) {
  int64_t coords[SHM_MAXAXES] = {0};
  til_block_coords(m, outer, o, coords);
  Array *r = arr_new((DType)outt->dt, outt->rank, outt->shape);
  GatherJob gj = {m, at, in, coords, r};
  par_for(p, gather_one, &gj, (double)arr_nbytes(r));
  return r;
}

typedef struct A2AJob {
  const Mesh *m;
  const Attrs *at;
  Val *in;
  const int64_t *coords;
  Array **rs;
  int64_t p;
  int sa, ca;
} A2AJob;

/* Receiver k of a tiled all_to_all: chunk k of every sender, in order. */
static void a2a_receiver(void *ctx, int64_t k) {
  A2AJob *a = ctx;
  int64_t coords[SHM_MAXAXES];
  memcpy(coords, a->coords, sizeof coords);
  Array *r = a->rs[k];
  for (int64_t j = 0; j < a->p; j++) {
    member_coords(a->m, a->at, j, coords);
    Array *x = a->in->blk[til_block_at(a->m, a->in->mask, coords)];
    int64_t c = x->shape[a->sa] / a->p;
    int64_t box[SHM_MAXRANK], sst[SHM_MAXRANK] = {0}, dst[SHM_MAXRANK] = {0};
    for (int i = 0; i < x->rank; i++) box[i] = x->shape[i];
    box[a->sa] = c;
    sst[a->sa] = k * c;
    dst[a->ca] = j * box[a->ca];
    arr_copy_box(r->data, r->shape, dst, x->data, x->shape, sst, box, x->rank, dtype_sizes[r->dt]);
  }
}

static double nbytes_of(const Type *t) {
  double n = dtype_sizes[t->dt];
  for (int i = 0; i < t->rank; i++) n *= (double)t->shape[i];
  return n;
}

static void release_val(void *v) { val_unref(v); }

static void release_arr(void *a) { arr_unref(a); }

/* Append device d to a list such as "0, 1, 5" (at most a few, then "..."). */
static void list_device(char *buf, size_t cap, int *n, int64_t d) {
  size_t len = strlen(buf);
  if (*n == 8) snprintf(buf + len, cap - len, ", ...");
  else if (*n < 8) snprintf(buf + len, cap - len, "%s%lld", *n ? ", " : "", (long long)d);
  (*n)++;
}

/* The deadlock check.  Instances run in lockstep; inside a branch or a
   loop only some of them run (sp->active).  A collective that part of a
   group reaches while the rest of the group is elsewhere would hang on
   real hardware.  The checker rejects collectives under predicates that
   vary along their axes, so this should never fire; it is the fabric's
   own guard should a program get past the checker. */
static void check_groups(const Space *sp, int prim, const Attrs *at) {
  if (!sp->active) return;
  const Mesh *m = sp->mesh;
  uint32_t rest = ((m->naxes >= 32 ? 0u : 1u << m->naxes) - 1u) & ~at->axmask;
  int64_t ngroups = til_nblk(m, rest), g = -1;
  /* running members per group, and members per group (those of this
     rank: the others' paths are their own to check) */
  int64_t *count = mem_calloc(sizeof(int64_t) * (size_t)(2 * ngroups)), *here = count + ngroups;
  for (int64_t d = 0; d < sp->ninst; d++) {
    if (!fmpi_local(m->ndev, d)) continue;
    if (sp->active[d]) count[til_block_of(m, rest, d)]++;
    here[til_block_of(m, rest, d)]++;
  }
  for (int64_t k = 0; k < ngroups && g < 0; k++)
    if (count[k] && count[k] < here[k]) g = k;
  mem_free(count);
  if (g >= 0) {
    char axes[128] = "", reached[160] = "", missed[160] = "";
    int nr = 0, nm = 0;
    for (int k = 0; k < at->naxes; k++) {
      size_t len = strlen(axes);
      snprintf(axes + len, sizeof axes - len, "%s%.*s", k ? ", " : "", m->axis[at->axes[k]].n, m->axis[at->axes[k]].p);
    }
    for (int64_t e = 0; e < sp->ninst; e++)
      if (til_block_of(m, rest, e) == g && fmpi_local(m->ndev, e)) {
        if (sp->active[e]) list_device(reached, sizeof reached, &nr, e);
        else list_device(missed, sizeof missed, &nm, e);
      }
    err_throw("deadlock: %s over %s%s would hang: device%s %s reached it, but device%s %s of the same group "
              "did not (another path through a branch or loop)", prim_table[prim].name,
              at->naxes > 1 ? "axes " : "axis ", axes, nr > 1 ? "s" : "", reached, nm > 1 ? "s" : "", missed);
  }
}

/* ---- one function per collective (the exec column of prims.def) -------------------- */

/* What a collective sees: the operand and result, the groups, and the
   scratch of the call.  `outer` is the operand's mask without the named
   axes: one group per block of it; `need` says which groups some running
   instance is in (NULL: all). */
typedef struct Coll {
  const Space *sp;
  const Mesh *m;
  int prim;
  const Attrs *at;
  Val *in, *out;
  Val *const *ins;           /* every operand (in is ins[0]), nins of them */
  int nins;
  const Type *outt;
  int64_t p;                 /* group size */
  uint32_t outer;
  int64_t nouter;
  uint8_t *need;
  uint8_t *done;             /* groups already done across ranks (NULL: none) */
  bool donate;
  double n_in, n_out;        /* bytes of one block of the operand, of the result */
  long devices;              /* instances taking part */
  int64_t coords[SHM_MAXAXES];
} Coll;

static bool skip_group(const Coll *c, int64_t o) { return (c->need && !c->need[o]) || (c->done && c->done[o]); }

/* Result block of group o's member k (k along the named axes). */
static Array **member_slot(Coll *c, int64_t o, int64_t k) {
  til_block_coords(c->m, c->outer, o, c->coords);
  member_coords(c->m, c->at, k, c->coords);
  return &c->out->blk[til_block_at(c->m, c->out->mask, c->coords)];
}

static void exec_axis_index(Coll *c) {
  for (int64_t b = 0; b < c->out->nblk; b++) {
    til_block_coords(c->m, c->out->mask, b, c->coords);
    int64_t idx = 0;
    for (int k = 0; k < c->at->naxes; k++) idx = idx * c->m->size[c->at->axes[k]] + c->coords[c->at->axes[k]];
    c->out->blk[b] = arr_scalar_i(DT_I32, idx);
  }
  account(c->prim, c->devices, 0, 0, 0);
}

/* pbroadcast moves nothing: the result shares the operand's blocks. */
static void exec_pbroadcast(Coll *c) {
  for (int64_t b = 0; b < c->out->nblk; b++)
    c->out->blk[b] = arr_ref(c->in->blk[til_project(c->m, c->out->mask, b, c->in->mask)]);
  account(c->prim, c->devices, 0, 0, 0);
}

/* psum, pmax, pmin, pmean: an all-reduce per group. */
static void exec_reduce(Coll *c) {
  for (int64_t o = 0; o < c->nouter; o++)
    if (!skip_group(c, o))
      c->out->blk[o] = reduce_group(c->prim, c->m, c->at, c->in, c->outer, o, c->p, c->donate);
  double each = coll_ring_bytes(c->prim, c->p, c->n_in, c->n_out);
  account(c->prim, c->devices, each, each, each);
}

static void exec_all_gather(Coll *c) {
  for (int64_t o = 0; o < c->nouter; o++) {
    if (skip_group(c, o)) continue;
    Array *g = gather_group(c->m, c->at, c->in, c->outer, o, c->p, c->outt);
    if (c->prim == P_ALL_GATHER_INVARIANT) {
      c->out->blk[o] = g;
    } else {      /* every member holds the same gathered array */
      for (int64_t k = 0; k < c->p; k++) *member_slot(c, o, k) = arr_ref(g);
      arr_unref(g);
    }
  }
  double each = coll_ring_bytes(c->prim, c->p, c->n_in, c->n_out);
  account(c->prim, c->devices, each, each, each);
}

static void exec_psum_scatter(Coll *c) {
  int d = (int)c->at->i[0];
  for (int64_t o = 0; o < c->nouter; o++) {
    if (skip_group(c, o)) continue;
    Array *first = c->in->blk[0];
    for (int64_t b = 0; !first && b < c->in->nblk; b++) first = c->in->blk[b];
    int64_t before = 1;
    for (int i = 0; i < d; i++) before *= first->shape[i];
    if (before == 1) {
      /* each member's chunk is contiguous: sum just that range, straight
         into the member's result */
      Array **blk = mem_calloc(sizeof(Array *) * (size_t)(2 * c->p));
      err_defer(mem_free, blk);
      group_blocks(c->m, c->at, c->in, c->outer, o, c->p, blk);
      ScatterJob sj = {blk, blk + c->p, c->p, first->size / c->p};
      for (int64_t k = 0; k < c->p; k++) {
        sj.rs[k] = arr_new((DType)c->outt->dt, c->outt->rank, c->outt->shape);
        *member_slot(c, o, k) = sj.rs[k];
      }
      par_for(c->p, scatter_one, &sj, (double)arr_nbytes(first) * (double)c->p);
      err_undefer(blk);
      mem_free(blk);
      continue;
    }
    Array *sum = reduce_group(P_PSUM, c->m, c->at, c->in, c->outer, o, c->p, c->donate);
    int64_t n = c->at->b[0] ? sum->shape[d] / c->p : 1;
    for (int64_t k = 0; k < c->p; k++) {
      Array *ch = chunk(sum, d, k, n);
      if (!c->at->b[0]) squeeze_dim(ch, d);
      *member_slot(c, o, k) = ch;
    }
    arr_unref(sum);
  }
  double each = coll_ring_bytes(c->prim, c->p, c->n_in, c->n_out);
  account(c->prim, c->devices, each, each, each);
}

/* pscatter: the operand is invariant along the axes; each member keeps
   its chunk (a local slice, nothing moves). */
static void exec_pscatter(Coll *c) {
  uint32_t R = c->out->mask;
  uint8_t *need = fab_needed(c->sp, R, c->out->nblk);     /* (the caller's memory scope frees it on an error) */
  for (int64_t b = 0; b < c->out->nblk; b++) {
    til_block_coords(c->m, R, b, c->coords);
    if (need && !need[b]) continue;
    int64_t k = 0;
    for (int j = 0; j < c->at->naxes; j++) k = k * c->m->size[c->at->axes[j]] + c->coords[c->at->axes[j]];
    Array *x = c->in->blk[til_block_at(c->m, c->in->mask, c->coords)];
    int d = (int)c->at->i[0];
    Array *ch = chunk(x, d, k, c->at->b[0] ? x->shape[d] / c->p : 1);
    if (!c->at->b[0]) squeeze_dim(ch, d);
    c->out->blk[b] = ch;
  }
  mem_free(need);
  account(c->prim, c->devices, 0, 0, 0);
}

static void exec_ppermute(Coll *c) {
  const IntList *perm = &c->at->l[0];
  int np = perm->n / 2;
  for (int64_t o = 0; o < c->nouter; o++) {
    if (skip_group(c, o)) continue;
    bool *got = mem_calloc((size_t)c->p);
    for (int i = 0; i < np; i++) {
      til_block_coords(c->m, c->outer, o, c->coords);
      member_coords(c->m, c->at, perm->v[2 * i], c->coords);
      Array *x = c->in->blk[til_block_at(c->m, c->in->mask, c->coords)];
      *member_slot(c, o, perm->v[2 * i + 1]) = arr_ref(x);
      got[perm->v[2 * i + 1]] = true;
    }
    for (int64_t k = 0; k < c->p; k++)
      if (!got[k]) *member_slot(c, o, k) = arr_zeros((DType)c->outt->dt, c->outt->rank, c->outt->shape);
    mem_free(got);
  }
  /* every pair of every group moves one block (devices along the axes
     the operand does not vary over hold copies, and each sends its own);
     averaged over the members, devices that send nothing sending 0 */
  double block = coll_ring_bytes(c->prim, c->p, c->n_in, c->n_out), each = block * (double)np / (double)c->p;
  account(c->prim, c->devices, each, each, np ? block : 0);     /* (a sender sends one block) */
}

static void exec_all_to_all(Coll *c) {
  int sa = (int)c->at->i[0], ca = (int)c->at->i[1];
  for (int64_t o = 0; o < c->nouter; o++) {
    if (skip_group(c, o)) continue;
    if (c->at->b[0]) {       /* tiled: receivers built on two cores, straight from the senders */
      Array **rs = mem_calloc(sizeof(Array *) * (size_t)c->p);
      err_defer(mem_free, rs);
      for (int64_t k = 0; k < c->p; k++) {
        rs[k] = arr_new((DType)c->outt->dt, c->outt->rank, c->outt->shape);
        *member_slot(c, o, k) = rs[k];
      }
      til_block_coords(c->m, c->outer, o, c->coords);
      A2AJob aj = {c->m, c->at, c->in, c->coords, rs, c->p, sa, ca};
      par_for(c->p, a2a_receiver, &aj, (double)arr_nbytes(rs[0]) * (double)c->p);
      err_undefer(rs);
      mem_free(rs);
      continue;
    }
    for (int64_t k = 0; k < c->p; k++) {          /* receiver */
      Array *r = arr_new((DType)c->outt->dt, c->outt->rank, c->outt->shape);
      for (int64_t j = 0; j < c->p; j++) {        /* sender */
        til_block_coords(c->m, c->outer, o, c->coords);
        member_coords(c->m, c->at, j, c->coords);
        Array *ch = chunk(c->in->blk[til_block_at(c->m, c->in->mask, c->coords)], sa, k, 1);
        int64_t start[SHM_MAXRANK] = {0};
        squeeze_dim(ch, sa);
        expand_dim(ch, ca);
        start[ca] = j;
        arr_put_block(r, start, ch);
        arr_unref(ch);
      }
      *member_slot(c, o, k) = r;
    }
  }
  double each = coll_ring_bytes(c->prim, c->p, c->n_in, c->n_out);
  account(c->prim, c->devices, each, each, each);
}

/* ---- ragged_all_to_all ------------------------------------------------------------------
** Member j of a group sends, for each receiver k and each of its K/p
** slices s (i = k*K/p + s), rows [input_offsets[i], +send_sizes[i]) of
** its operand; they land at rows [output_offsets[i], +send_sizes[i]) of
** k's result, which starts as k's `output`.  k's recv_sizes[j*K/p + s]
** must be that size.  Offsets and sizes are checked at run time: a slice
** out of range, a size that does not match, or two slices written over
** the same rows (XLA leaves the result undefined) stop the run. */

/* The operand blocks of the member whose coordinates are `coords`. */
typedef struct RaggedMember {
  Array *a[6];
  int64_t dev;
} RaggedMember;

static void ragged_member(Coll *c, const int64_t *coords, RaggedMember *r) {
  for (int q = 0; q < 6; q++) r->a[q] = c->ins[q]->blk[til_block_at(c->m, c->ins[q]->mask, coords)];
  r->dev = til_block_at(c->m, (c->m->naxes >= 32 ? 0u : 1u << c->m->naxes) - 1u, coords);
}

SHM_NORETURN static void ragged_fail(Coll *c, const char *fmt, ...) SHM_PRINTF(2, 3);
static void ragged_fail(Coll *c, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  err_throw("ragged_all_to_all over %s%s: %s", c->at->naxes > 1 ? "axes " : "axis ", fs()->cur_axes, msg);
}

/* Check every slice of the group against the blocks it reads and
   writes, before anything is written: a size below zero, rows past the
   sender's operand or the receiver's result, a size the receiver does
   not expect. */
static void ragged_check(Coll *c, RaggedMember *mem) {
  int64_t spd = mem[0].a[2]->shape[0] / c->p, M = mem[0].a[1]->shape[0];
  for (int64_t j = 0; j < c->p; j++) {
    RaggedMember *src = &mem[j];
    int64_t N = src->a[0]->shape[0];
    for (int64_t i = 0; i < c->p * spd; i++) {
      int64_t k = i / spd, ri = j * spd + i % spd;
      int64_t in0 = arr_geti(src->a[2], i), n = arr_geti(src->a[3], i), out0 = arr_geti(src->a[4], i);
      int64_t want = arr_geti(mem[k].a[5], ri);
      if (n < 0)
        ragged_fail(c, "device %lld's send_sizes[%lld] is %lld, a negative size", (long long)src->dev, (long long)i,
                    (long long)n);
      if (in0 < 0 || in0 > N - n)
        ragged_fail(c, "device %lld sends rows [%lld, %lld) of its operand, which has %lld rows "
                    "(input_offsets[%lld] = %lld, send_sizes[%lld] = %lld)", (long long)src->dev, (long long)in0,
                    (long long)(in0 + n), (long long)N, (long long)i, (long long)in0, (long long)i, (long long)n);
      if (out0 < 0 || out0 > M - n)
        ragged_fail(c, "device %lld sends rows to [%lld, %lld) of device %lld's result, which has %lld rows "
                    "(output_offsets[%lld] = %lld, send_sizes[%lld] = %lld)", (long long)src->dev, (long long)out0,
                    (long long)(out0 + n), (long long)mem[k].dev, (long long)M, (long long)i, (long long)out0,
                    (long long)i, (long long)n);
      if (want != n)
        ragged_fail(c, "device %lld sends %lld rows to device %lld (send_sizes[%lld]), which expects %lld "
                    "(its recv_sizes[%lld])", (long long)src->dev, (long long)n, (long long)mem[k].dev,
                    (long long)i, (long long)want, (long long)ri);
    }
  }
}

/* Receiver k's result: its output with every sender's slices written in
   (checked by ragged_check), rows written twice refused.  Returns the
   bytes other members sent it. */
static double ragged_receive(Coll *c, RaggedMember *mem, int64_t k, int32_t *owner, Array **res) {
  Array *out = mem[k].a[1];
  Array *r = arr_new((DType)out->dt, out->rank, out->shape);
  *res = r;
  memcpy(r->data, out->data, arr_nbytes(out));
  int64_t spd = mem[k].a[2]->shape[0] / c->p, M = out->shape[0];
  size_t row = M ? arr_nbytes(out) / (size_t)M : 0;
  double sent = 0;
  for (int64_t i = 0; i < M; i++) owner[i] = -1;
  for (int64_t j = 0; j < c->p; j++) {
    RaggedMember *src = &mem[j];
    for (int64_t s = 0; s < spd; s++) {
      int64_t i = k * spd + s;
      int64_t in0 = arr_geti(src->a[2], i), n = arr_geti(src->a[3], i), out0 = arr_geti(src->a[4], i);
      for (int64_t x = out0; x < out0 + n; x++) {
        if (owner[x] >= 0) {
          int64_t w = owner[x] / spd, wi = k * spd + owner[x] % spd;
          ragged_fail(c, "row %lld of device %lld's result is written twice: by device %lld "
                      "(output_offsets[%lld] = %lld) and device %lld (output_offsets[%lld] = %lld)", (long long)x,
                      (long long)mem[k].dev, (long long)mem[w].dev, (long long)wi,
                      (long long)arr_geti(mem[w].a[4], wi), (long long)src->dev, (long long)i, (long long)out0);
        }
        owner[x] = (int32_t)(j * spd + s);
      }
      if (n) memcpy((char *)r->data + (size_t)out0 * row, (const char *)src->a[0]->data + (size_t)in0 * row, (size_t)n * row);
      if (j != k) sent += (double)n * (double)row;
    }
  }
  return sent;
}

/* The most bytes one member of the group sends the others (its
   send_sizes to every member but itself, in rows of its operand). */
static double ragged_busiest(Coll *c, const RaggedMember *mem) {
  double most = 0;
  for (int64_t j = 0; j < c->p; j++) {
    const Array *x = mem[j].a[0], *sizes = mem[j].a[3];
    int64_t spd = sizes->shape[0] / c->p;
    double row = x->shape[0] ? (double)arr_nbytes(x) / (double)x->shape[0] : 0, b = 0;
    for (int64_t i = 0; i < sizes->shape[0]; i++)
      if (i / spd != j) b += (double)arr_geti(sizes, i) * row;
    if (b > most) most = b;
  }
  return most;
}

static void exec_ragged_all_to_all(Coll *c) {
  uint32_t outer = c->out->mask & ~c->at->axmask;
  int64_t nouter = til_nblk(c->m, outer), groups = 0;
  uint8_t *need = fab_needed(c->sp, outer, nouter);
  RaggedMember *mem = mem_calloc(sizeof(RaggedMember) * (size_t)c->p);
  int64_t M = c->outt->shape[0];
  int32_t *owner = mem_alloc(sizeof(int32_t) * (size_t)(M + 1));
  double sent = 0, busiest = 0;
  for (int64_t o = 0; o < nouter; o++) {
    if (need && !need[o]) continue;
    for (int64_t j = 0; j < c->p; j++) {
      til_block_coords(c->m, outer, o, c->coords);
      member_coords(c->m, c->at, j, c->coords);
      ragged_member(c, c->coords, &mem[j]);
    }
    ragged_check(c, mem);
    double b = ragged_busiest(c, mem);
    if (b > busiest) busiest = b;
    for (int64_t k = 0; k < c->p; k++) {
      Array *r;
      sent += ragged_receive(c, mem, k, owner, &r);
      til_block_coords(c->m, outer, o, c->coords);
      member_coords(c->m, c->at, k, c->coords);
      c->out->blk[til_block_at(c->m, c->out->mask, c->coords)] = r;
    }
    groups++;
  }
  mem_free(owner);
  mem_free(mem);
  mem_free(need);
  /* the bytes one member sends to the others, averaged over the members
     of the groups run here (rows a member keeps are not sent) */
  double each = groups ? sent / (double)(groups * c->p) : 0;
  fs()->last_sent = each;
  account(c->prim, c->devices, each, each, busiest);
}

/* ---- psend and precv ------------------------------------------------------------------
** psend records what it sends and returns a token; the precv that
** consumes the token (or a value sharing its blocks) runs the exchange, a
** ppermute along the pairs both name.  Every instance runs in lockstep,
** so a send without its receive, or a receive without its send, would
** hang real hardware: the fabric reports either, naming both ends. */

void fab_set_site(Span where) { fs()->site = where; }

/* "line L, column C" of a span (or "" when synthetic). */
static void span_text(Span sp, char *buf, size_t cap) {
  int line = 0, col = 0;
  if (sp.file < 0) {
    snprintf(buf, cap, "an equation shmapi made");
    return;
  }
  diag_linecol(sp.file, sp.off, &line, &col);
  snprintf(buf, cap, "%s:%d:%d", diag_file_name(sp.file), line, col);
}

/* The pairs of a perm as JAX writes them: ((0, 1), (1, 2)). */
static void pairs_text(const IntList *l, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "(");
  for (int i = 0; i + 1 < l->n && n < cap; i += 2)
    n += (size_t)snprintf(buf + n, cap - n, "%s(%lld, %lld)", i ? ", " : "", (long long)l->v[i], (long long)l->v[i + 1]);
  if (n < cap) snprintf(buf + n, cap - n, l->n == 2 ? ",)" : ")");
}

static bool same_pairs(const IntList *a, const IntList *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i += 2) {
    bool found = false;
    for (int j = 0; j < b->n && !found; j += 2) found = a->v[i] == b->v[j] && a->v[i + 1] == b->v[j + 1];
    if (!found) return false;
  }
  return true;
}

static void exec_psend(Coll *c) {
  FabStats *f = fs();
  int64_t zero = 0;
  for (int64_t b = 0; b < c->out->nblk; b++) c->out->blk[b] = arr_new(DT_BOOL, 1, &zero);
  if (f->npend == f->cappend) {     /* (plain realloc: the list outlives the collective's memory scope) */
    int cap = f->cappend ? 2 * f->cappend : 8;
    Pending *np = realloc(f->pend, sizeof(Pending) * (size_t)cap);
    if (!np) err_throw("out of memory: the system refused %zu bytes", sizeof(Pending) * (size_t)cap);
    f->pend = np;
    f->cappend = cap;
  }
  Pending *p = &f->pend[f->npend++];
  p->token = val_ref(c->out);
  p->payload = val_ref(c->in);
  p->at = c->at;
  p->where = f->site;
  account(c->prim, c->devices, 0, 0, 0);     /* (the bytes move at the precv) */
}

/* Does value v share a block with the token of pending send k? */
static bool holds_token(const Val *v, const Pending *p) {
  for (int64_t b = 0; b < v->nblk; b++)
    for (int64_t t = 0; v->blk[b] && t < p->token->nblk; t++)
      if (v->blk[b] == p->token->blk[t]) return true;
  return false;
}

/* The payload of the psend whose token precv consumes (a new reference),
   its pending record dropped; a receive that no send matches is an
   error naming both ends. */
static Val *take_send(const Space *sp, const Attrs *at, Val *token, const Type *outt) {
  FabStats *f = fs();
  char here[256], there[256], a[160], b[160], axes[64];
  snprintf(axes, sizeof axes, "%s", f->cur_axes);
  span_text(f->site, here, sizeof here);
  int k = f->npend - 1;
  while (k >= 0 && !holds_token(token, &f->pend[k])) k--;
  if (k < 0)
    err_throw("deadlock: the precv over %s at %s would wait forever: its token comes from no psend still waiting "
              "for its receive (each psend's token goes to exactly one precv)", axes, here);
  Pending *p = &f->pend[k];
  span_text(p->where, there, sizeof there);
  if (!same_pairs(&p->at->l[0], &at->l[0]) || p->at->axmask != at->axmask) {
    pairs_text(&p->at->l[0], a, sizeof a);
    pairs_text(&at->l[0], b, sizeof b);
    err_throw("deadlock: the psend at %s sends along %s but the precv at %s receives along %s over %s: the "
              "devices of the pairs the two do not share would wait forever", there, a, here, b, axes);
  }
  Array *blk = NULL;
  for (int64_t i = 0; i < p->payload->nblk && !blk; i++) blk = p->payload->blk[i];
  bool same = blk && blk->dt == outt->dt && blk->rank == outt->rank;
  for (int d = 0; same && d < blk->rank; d++) same = blk->shape[d] == outt->shape[d];
  if (blk && !same) {
    Type t = *outt;
    t.dt = blk->dt;
    t.rank = blk->rank;
    for (int d = 0; d < blk->rank; d++) t.shape[d] = blk->shape[d];
    TyBuf x, y;
    err_throw("the psend at %s sends %s, but the precv at %s that receives it expects %s", there, rule_ty(&x, &t),
              here, rule_ty(&y, outt));
  }
  (void)sp;
  Val *payload = val_ref(p->payload);
  pending_drop(f, k);
  return payload;
}

bool fab_unmatched(char *msg, size_t cap) {
  FabStats *f = fs();
  if (!f->npend) return false;
  Pending *p = &f->pend[0];
  char there[256], pairs[160];
  span_text(p->where, there, sizeof there);
  pairs_text(&p->at->l[0], pairs, sizeof pairs);
  snprintf(msg, cap, "deadlock: the psend at %s sends along %s, but no precv receives it before the shard_map "
           "body ends: its senders would wait forever (a psend's token must reach a precv of the same pairs)",
           there, pairs);
  while (f->npend) pending_drop(f, f->npend - 1);
  return true;
}

void fab_pending_reset(void) {
  FabStats *f = fs();
  while (f->npend) pending_drop(f, f->npend - 1);
}

/* precv: ppermute's exchange of the payload its psend recorded (the
   operand here, put in place of the token by fab_exec_n). */
static void exec_precv(Coll *c) { exec_ppermute(c); }

/* pbroadcast with a source (JAX's collective broadcast): every member of
   a group gets member `source`'s block; all but the source receive it. */
static void exec_pbroadcast_source(Coll *c) {
  for (int64_t b = 0; b < c->out->nblk; b++) {
    til_block_coords(c->m, c->out->mask, b, c->coords);
    member_coords(c->m, c->at, c->at->i[0], c->coords);
    c->out->blk[b] = arr_ref(c->in->blk[til_block_at(c->m, c->in->mask, c->coords)]);
  }
  double each = coll_ring_bytes(c->prim, c->p, c->n_in, c->n_out);
  account(c->prim, c->devices, each, each, each);
}

typedef void (*CollFn)(Coll *c);
static const CollFn coll_exec[P_COUNT] = {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, exec, tr, jvp, cost) [P_##tag] = exec,
#include "prims.def"
#undef PRIM
};

bool fab_is_collective(int prim) { return prim >= 0 && prim < P_COUNT && coll_exec[prim]; }

/* ---- groups that span ranks -------------------------------------------------------------- */

/* fab_move_blocks's moves and the copies it drops, released by a
   runtime error too. */
typedef struct Got {
  Array **a;
  int n;
  FmpiMove *mv;
} Got;

static void got_free(void *p) {
  Got *g = p;
  for (int i = 0; i < g->n; i++) arr_unref(g->a[i]);
  mem_free(g->a);
  mem_free(g->mv);
}

void fab_move_blocks(const int *ranks, int nranks, const FabBlockMove *bm, int n, DType dt, int rank,
                     const int64_t *shape) {
  int me = fmpi_rank();
  Got temps = {NULL, 0, NULL};
  err_defer(got_free, &temps);
  temps.a = mem_calloc(sizeof(Array *) * (size_t)(n + 1));
  FmpiMove *mv = temps.mv = mem_calloc(sizeof(FmpiMove) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    mv[i] = (FmpiMove){bm[i].from, bm[i].to, NULL, NULL, 0};
    Array *a = NULL;
    if (bm[i].from == me) a = *bm[i].slot;
    else if (bm[i].to == me) {
      /* a new array in the slot, or a copy dropped afterwards when this
         rank already holds the block */
      a = arr_new(dt, rank, shape);
      if (!*bm[i].slot) *bm[i].slot = a;
      else temps.a[temps.n++] = a;
      mv[i].dst = a->data;
    }
    if (a) mv[i].bytes = arr_nbytes(a);
    if (bm[i].from == me) mv[i].src = a->data;
  }
  fmpi_exchange(ranks, nranks, mv, n);
  err_undefer(&temps);
  got_free(&temps);
}

/* The members (instances) of group g (a block of `rest`, the mask of the
   axes not named) and the ranks owning them (ascending, *nr of them);
   whether one of them runs here, its operand block in *like. */
static bool group_members(Coll *c, uint32_t rest, int64_t g, int64_t *inst, int *ranks, int *nr, Array **like) {
  const Mesh *m = c->m;
  int me = fmpi_rank();
  bool runs = false;
  *nr = 0;
  til_block_coords(m, rest, g, c->coords);
  for (int64_t k = 0; k < c->p; k++) {
    member_coords(m, c->at, k, c->coords);
    inst[k] = til_block_at(m, (1u << m->naxes) - 1u, c->coords);
    int o = fmpi_owner(m->ndev, inst[k]);
    if (o == me && fab_runs(c->sp, inst[k])) {
      runs = true;
      *like = c->in->blk[til_block_of(m, c->in->mask, inst[k])];
    }
    int at = 0;
    while (at < *nr && ranks[at] < o) at++;
    if (at == *nr || ranks[at] != o) {
      memmove(ranks + at + 1, ranks + at, sizeof(int) * (size_t)(*nr - at));
      ranks[at] = o;
      (*nr)++;
    }
  }
  return runs;
}

/* A reduction's scratch across ranks, released by a runtime error too. */
typedef struct Span2 {
  FmpiMove *mv;
  char *buf;
  Array *hdr, **src;
} Span2;

static void span_free(void *p) {
  Span2 *s = p;
  mem_free(s->mv);
  mem_free(s->buf);
  mem_free(s->hdr);
  mem_free(s->src);
}

/* psum (pmax, pmin, pmean) of a group whose members live on the ranks
   `ranks`: each of them reduces a slice of the elements -- every member's
   piece of it, added in member order, as reduce_group adds them -- then
   the slices are shared: the bytes of the one-process result, for about
   what a ring all-reduce moves. */
static Array *reduce_spanning(Coll *c, int prim, const int64_t *inst, const int *ranks, int nr, Array *like) {
  int me = fmpi_rank(), mi = 0;
  while (ranks[mi] != me) mi++;
  DType dt = (DType)like->dt;
  size_t es = dtype_sizes[dt];
  int64_t E = like->size, lo = E * mi / nr, hi = E * (mi + 1) / nr, p = c->p;
  Span2 s = {mem_calloc(sizeof(FmpiMove) * (size_t)(p * nr + nr * nr + 1)),
             mem_alloc((size_t)(p * (hi - lo)) * es + 1), mem_calloc(sizeof(Array) * (size_t)p),
             mem_calloc(sizeof(Array *) * (size_t)p)};
  err_defer(span_free, &s);
  int n = 0;
  for (int64_t k = 0; k < p; k++) {      /* slice q of member k's block goes to ranks[q] */
    int from = fmpi_owner(c->m->ndev, inst[k]);
    Array *b = from == me ? c->in->blk[til_block_of(c->m, c->in->mask, inst[k])] : NULL;
    if (from == me) s.src[k] = b;
    else {               /* viewed through a header indexed like the block */
      s.hdr[k] = *like;
      s.hdr[k].data = s.buf + (size_t)(k * (hi - lo)) * es - (size_t)lo * es;
      s.src[k] = &s.hdr[k];
    }
    for (int q = 0; q < nr; q++) {
      if (ranks[q] == from) continue;
      int64_t ql = E * q / nr, qh = E * (q + 1) / nr;
      s.mv[n++] = (FmpiMove){from, ranks[q], b ? (char *)b->data + ql * es : NULL,
                             ranks[q] == me ? s.buf + (size_t)(k * (hi - lo)) * es : NULL, (size_t)(qh - ql) * es};
    }
  }
  fmpi_exchange(ranks, nr, s.mv, n);
  Array *acc = arr_new(dt, like->rank, like->shape);
  err_defer(release_arr, acc);
  reduce_into(prim == P_PMEAN ? P_PSUM : prim, dt, (char *)acc->data + lo * (int64_t)es, s.src, p, lo, hi - lo);
  n = 0;
  for (int q = 0; q < nr; q++)           /* every slice to every other rank of the group */
    for (int r = 0; r < nr; r++) {
      if (r == q) continue;
      int64_t ql = E * q / nr, qh = E * (q + 1) / nr;
      char *at = (char *)acc->data + ql * (int64_t)es;
      s.mv[n++] = (FmpiMove){ranks[q], ranks[r], at, at, (size_t)(qh - ql) * es};
    }
  fmpi_exchange(ranks, nr, s.mv, n);
  err_undefer(acc);
  err_undefer(&s);
  span_free(&s);
  return prim == P_PMEAN ? mean_of(acc, p) : acc;
}

/* The reductions (and psum_scatters) of the groups that span ranks and
   run here, in ascending order of the groups (on every rank alike); the
   groups done are marked in c->done. */
static void reduce_remote(Coll *c) {
  const Mesh *m = c->m;
  uint32_t rest = ((m->naxes >= 32 ? 0u : 1u << m->naxes) - 1u) & ~c->at->axmask;
  int64_t ng = til_nblk(m, rest);
  int64_t *inst = mem_alloc(sizeof(int64_t) * (size_t)c->p);
  int *ranks = mem_alloc(sizeof(int) * (size_t)c->p);
  c->done = mem_calloc((size_t)c->nouter);
  bool scatter = c->prim == P_PSUM_SCATTER;
  for (int64_t g = 0; g < ng; g++) {
    int nr;
    Array *like = NULL;
    if (!group_members(c, rest, g, inst, ranks, &nr, &like) || nr == 1) continue;
    int64_t o = til_block_of(m, c->outer, inst[0]);
    Array *r = reduce_spanning(c, scatter ? P_PSUM : c->prim, inst, ranks, nr, like);
    if (c->done[o]) {            /* (another group of copies made it) */
      arr_unref(r);
      continue;
    }
    c->done[o] = 1;
    if (!scatter) {
      c->out->blk[o] = r;
      continue;
    }
    int d = (int)c->at->i[0];    /* psum_scatter: member k keeps chunk k of the sum */
    for (int64_t k = 0; k < c->p; k++) {
      Array *ch = chunk(r, d, k, c->at->b[0] ? r->shape[d] / c->p : 1);
      if (!c->at->b[0]) squeeze_dim(ch, d);
      *member_slot(c, o, k) = ch;
    }
    arr_unref(r);
  }
  mem_free(ranks);
  mem_free(inst);
}

/* Does member k of a ppermute's group send to a member that rank q owns? */
static bool permute_sends_to(const Coll *c, const int64_t *inst, int64_t k, int q) {
  const IntList *perm = &c->at->l[0];
  for (int i = 0; i + 1 < perm->n; i += 2)
    if (perm->v[i] == k && fmpi_owner(c->m->ndev, inst[perm->v[i + 1]]) == q) return true;
  return false;
}

/* Group g (a block of the mask of the axes not named: its members are
   instances) when it spans ranks and some member here runs: the operand
   blocks of its members that other ranks hold, moved into `full`. */
static void fill_group(Coll *c, Val *full, uint32_t rest, int64_t g, int64_t *inst, int *ranks, FabBlockMove *mv) {
  int nr, nmv = 0;
  Array *like = NULL;
  if (!group_members(c, rest, g, inst, ranks, &nr, &like) || nr == 1) return;
  for (int64_t k = 0; k < c->p; k++) {
    int from = fmpi_owner(c->m->ndev, inst[k]);
    for (int q = 0; q < nr; q++) {
      if (ranks[q] == from) continue;
      if ((c->prim == P_PPERMUTE || c->prim == P_PRECV) && !permute_sends_to(c, inst, k, ranks[q])) continue;
      mv[nmv++] = (FabBlockMove){from, ranks[q], &full->blk[til_block_of(c->m, c->in->mask, inst[k])]};
    }
  }
  fab_move_blocks(ranks, nr, mv, nmv, (DType)like->dt, like->rank, like->shape);
}

/* The operand with the blocks of the members other ranks hold, for
   every group that spans ranks and runs here (in ascending order of the
   groups, on every rank alike). */
static Val *fill_remote(Coll *c) {
  const Mesh *m = c->m;
  Val *full = val_new(c->in->mask, c->in->nblk);
  for (int64_t b = 0; b < full->nblk; b++) full->blk[b] = arr_ref(c->in->blk[b]);
  err_defer(release_val, full);
  uint32_t rest = ((m->naxes >= 32 ? 0u : 1u << m->naxes) - 1u) & ~c->at->axmask;
  int64_t ng = til_nblk(m, rest);
  int64_t *inst = mem_alloc(sizeof(int64_t) * (size_t)c->p);
  int *ranks = mem_alloc(sizeof(int) * (size_t)c->p);
  FabBlockMove *mv = mem_alloc(sizeof(FabBlockMove) * (size_t)(c->p * c->p + 1));
  for (int64_t g = 0; g < ng; g++) fill_group(c, full, rest, g, inst, ranks, mv);
  mem_free(mv);
  mem_free(ranks);
  mem_free(inst);
  err_undefer(full);
  return full;
}

/* Drop the result blocks no instance running here needs (the fabric
   computes a group's result for all its members). */
static void trim(const Space *sp, Val *out) {
  uint8_t *need = fab_needed(sp, out->mask, out->nblk);
  for (int64_t b = 0; need && b < out->nblk; b++)
    if (!need[b]) {
      arr_unref(out->blk[b]);
      out->blk[b] = NULL;
    }
  mem_free(need);
}

/* cur_axes: "i" or "(i, j)", the axes of mask (cut to its size, as
   snprintf would; without it: this runs at every collective). */
static size_t axes_put(char *cur_axes, size_t len, const char *p, size_t n) {
  if (len + n > sizeof fs()->cur_axes - 1) n = sizeof fs()->cur_axes - 1 - len;
  memcpy(cur_axes + len, p, n);
  return len + n;
}

static void axes_text(const Mesh *m, uint32_t mask) {
  char *cur_axes = fs()->cur_axes;
  size_t len = 0;
  int n = 0;
  for (int k = 0; k < m->naxes; k++) n += (mask >> k) & 1;
  if (n != 1) len = axes_put(cur_axes, len, "(", 1);
  for (int k = 0, c = 0; k < m->naxes; k++)
    if (mask & (1u << k)) {
      if (c++) len = axes_put(cur_axes, len, ", ", 2);
      len = axes_put(cur_axes, len, m->axis[k].p, (size_t)m->axis[k].n);
    }
  if (n != 1) len = axes_put(cur_axes, len, ")", 1);
  cur_axes[len] = 0;
}

/* The collectives of unreduced and reduced values are, on the wire, the
   fabric's own: unreduced_psum a psum, all_gather_reduced an
   all_gather_invariant, the casts pbroadcast's no-move. */
int fab_base_prim(int prim) {
  prim = coll_async_base(prim);            /* all_gather_start runs an all_gather */
  switch (prim) {
  case P_UNREDUCED_PSUM: return P_PSUM;
  case P_UNREDUCED_PMAX: return P_PMAX;
  case P_UNREDUCED_PMIN: return P_PMIN;
  case P_UNREDUCED_REDUCE_SCATTER: return P_PSUM_SCATTER;
  case P_ALL_GATHER_REDUCED: return P_ALL_GATHER_INVARIANT;
  case P_VARY_UNREDUCED_CAST: case P_REDUCED_VARY_CAST: case P_PREDUCED: return P_PBROADCAST;
  default: return prim;
  }
}

Val *fab_exec(const Space *sp, int prim, const Attrs *at, Val *in, const Type *outt, bool donate) {
  return fab_exec_n(sp, prim, at, in ? &in : NULL, in ? 1 : 0, outt, donate);
}

double fab_last_ragged_sent(void) { return fs()->last_sent; }

static Val *run_coll(const Space *sp, int prim, const Attrs *at, Val *const *ins, int nins, const Type *outt,
                     bool donate);

Val *fab_exec_n(const Space *sp, int prim, const Attrs *at, Val *const *ins, int nins, const Type *outt,
                bool donate) {
  if (prim != P_PRECV) return run_coll(sp, prim, at, ins, nins, outt, donate);
  /* precv: the exchange of what the token's psend sent */
  axes_text(sp->mesh, at->axmask);
  Val *payload = take_send(sp, at, ins[0], outt);
  err_defer(release_val, payload);
  Val *r = run_coll(sp, prim, at, &payload, 1, outt, false);
  err_undefer(payload);
  val_unref(payload);
  return r;
}

static Val *run_coll(const Space *sp, int prim, const Attrs *at, Val *const *ins, int nins, const Type *outt,
                     bool donate) {
  Val *in = nins ? ins[0] : NULL;
  prim = fab_base_prim(prim);
  /* (field by field: clearing the whole struct at once is a string
     instruction that costs more than the rest of a small psum) */
  Coll c;
  c.sp = sp;
  c.m = sp->mesh;
  c.prim = prim;
  c.at = at;
  c.in = in;
  c.ins = ins;
  c.nins = nins;
  c.outt = outt;
  c.donate = donate;
  c.outer = 0;
  c.nouter = 0;
  c.need = c.done = NULL;
  c.n_in = 0;
  c.devices = 0;
  for (int k = 0; k < c.m->naxes; k++) c.coords[k] = 0;     /* (no other is read) */
  bool comm = prim_communicates(prim);
  if (comm) check_groups(sp, prim, at);
  axes_text(c.m, at->axmask);
  c.p = group_size(c.m, at);
  c.out = val_new(outt->vma, til_nblk(c.m, outt->vma));
  /* on a runtime error, drop the references `out` took; the caller's
     memory scope (mem.h) frees the rest */
  err_defer(release_val, c.out);
  if (fab_all_here(sp)) c.devices = sp->ninst;
  else
    for (int64_t i = 0; i < sp->ninst; i++) c.devices += fab_runs(sp, i);
  if (in) {
    for (int64_t b = 0; b < in->nblk && c.n_in == 0; b++)
      if (in->blk[b]) c.n_in = (double)arr_nbytes(in->blk[b]);
    c.outer = in->mask & ~at->axmask;
    c.nouter = til_nblk(c.m, c.outer);
    c.need = fab_needed(sp, c.outer, c.nouter);
  }
  c.n_out = nbytes_of(outt);
  bool spread = fmpi_size() > 1 && in && comm;
  bool reduction = prim_table[prim].vrule == VR_REDUCE || prim == P_PSUM_SCATTER;
  if (spread && reduction) {
    reduce_remote(&c);
    spread = false;
  } else if (spread) {
    Val **full = mem_calloc(sizeof(Val *) * (size_t)nins);
    for (int q = 0; q < nins; q++) {      /* every operand's remote blocks (fill_remote reads c.in) */
      c.in = ins[q];
      full[q] = fill_remote(&c);
      err_defer(release_val, full[q]);
    }
    c.in = full[0];
    c.ins = full;
    c.donate = false;
  }
  coll_exec[prim](&c);
  if (spread) {
    for (int q = nins - 1; q >= 0; q--) {
      err_undefer(c.ins[q]);
      val_unref(c.ins[q]);
    }
    mem_free((void *)c.ins);
  }
  if (fmpi_size() > 1) trim(sp, c.out);
  mem_free(c.done);
  mem_free(c.need);
  err_undefer(c.out);
  return c.out;
}
