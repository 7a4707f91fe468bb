/*
** fabric.c — collectives: their shape rules, their execution over the
** blocks of all instances, and the accounting of what they would cost.
*/
#include <math.h>
#include <stdio.h>
#include "err.h"
#include "fabric.h"
#include "par.h"

/* ---- shape rules ------------------------------------------------------------------ */

/* axis_index_groups is accepted only as None (JAX prints it). */
static bool no_groups(RuleCtx *cx) {
  if (!rule_has(cx, "axis_index_groups")) return true;
  IntList l;
  if (!rule_ints(cx, "axis_index_groups", false, &l)) return false;
  if (l.n) return rule_param_error(cx, "axis_index_groups", "axis_index_groups is not supported: use a mesh axis");
  return true;
}

/* The axis-name parameter: `axes` for reductions, `axis_name` otherwise;
   either spelling is accepted. */
static bool read_axes(RuleCtx *cx, const char *key, Attrs *at) {
  const char *other = !strcmp(key, "axes") ? "axis_name" : "axes";
  if (!rule_has(cx, key) && rule_has(cx, other)) return rule_axes(cx, other, true, at);
  return rule_axes(cx, key, true, at);
}

/* psum, pmax, pmin, pmean: result has the operand's shape.  Attrs: axes. */
bool fab_rule_reduce(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  if (!read_axes(cx, "axes", at) || !no_groups(cx)) return false;
  if (in[0].dt == DT_BOOL && strcmp(rule_prim_name(cx), "pmax") && strcmp(rule_prim_name(cx), "pmin"))
    return rule_error(cx, "%s does not accept bool operands", rule_prim_name(cx));
  out[0] = in[0];
  if (!strcmp(rule_prim_name(cx), "pmean") && !dtype_is_float((DType)in[0].dt) && !in[0].weak) out[0].dt = DT_F32;
  return true;
}

/* pbroadcast: the operand's shape.  Attrs: axes. */
bool fab_rule_pbroadcast(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  if (!read_axes(cx, "axes", at) || !no_groups(cx)) return false;
  out[0] = in[0];
  return true;
}

/* all_gather, all_gather_invariant.  Attrs: axes; i[0] axis; b[0] tiled. */
bool fab_rule_all_gather(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  int64_t axis;
  bool tiled;
  if (!read_axes(cx, "axis_name", at) || !no_groups(cx)) return false;
  const char *akey = rule_has(cx, "all_gather_dimension") && !rule_has(cx, "axis") ? "all_gather_dimension" : "axis";
  if (!rule_int(cx, akey, false, 0, &axis) || !rule_bool(cx, "tiled", false, &tiled)) return false;
  if (rule_has(cx, "axis_size")) {
    int64_t s;
    if (!rule_int(cx, "axis_size", false, 0, &s)) return false;
  }
  /* negative: counted from the end of the result (untiled: one rank more) */
  rule_axis_index(cx, akey, &axis, in[0].rank + !tiled);
  int64_t p = rule_group_size(cx, at);
  out[0] = in[0];
  if (tiled) {
    if (axis < 0 || axis >= in[0].rank)
      return rule_error(cx, "%s axis %lld is out of range for a rank-%d operand (tiled: %d..%d)", rule_prim_name(cx),
                        (long long)axis, in[0].rank, -in[0].rank, in[0].rank - 1);
    out[0].shape[axis] *= p;
  } else {
    if (axis < 0 || axis > in[0].rank)
      return rule_error(cx, "%s axis %lld is out of range for a rank-%d operand (untiled: %d..%d)", rule_prim_name(cx),
                        (long long)axis, in[0].rank, -in[0].rank - 1, in[0].rank);
    if (in[0].rank == SHM_MAXRANK) return rule_error(cx, "result rank above %d", SHM_MAXRANK);
    for (int d = in[0].rank; d > axis; d--) out[0].shape[d] = in[0].shape[d - 1];
    out[0].shape[axis] = p;
    out[0].rank++;
  }
  at->i[0] = axis;
  at->b[0] = tiled;
  return true;
}

/* psum_scatter (scatter_dimension) and pscatter (axis).  Attrs: axes;
   i[0] the dimension; b[0] tiled. */
bool fab_rule_psum_scatter(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  bool ps = !strcmp(rule_prim_name(cx), "pscatter");
  const char *key = ps ? "axis" : "scatter_dimension";
  int64_t dim;
  bool tiled;
  if (!read_axes(cx, "axis_name", at) || !no_groups(cx)) return false;
  if (!rule_int(cx, key, false, 0, &dim) || !rule_bool(cx, "tiled", false, &tiled)) return false;
  rule_axis_index(cx, key, &dim, in[0].rank);
  int64_t p = rule_group_size(cx, at);
  if (dim < 0 || dim >= in[0].rank)
    return rule_error(cx, "%s %s %lld is out of range for a rank-%d operand (%d..%d)", rule_prim_name(cx), key,
                      (long long)dim, in[0].rank, -in[0].rank, in[0].rank - 1);
  out[0] = in[0];
  if (tiled) {
    if (in[0].shape[dim] % p)
      return rule_error(cx, "%s (tiled) splits dimension %lld of size %lld into %lld chunks: not divisible",
                        rule_prim_name(cx), (long long)dim, (long long)in[0].shape[dim], (long long)p);
    out[0].shape[dim] /= p;
  } else {
    if (in[0].shape[dim] != p)
      return rule_error(cx, "%s (untiled) needs dimension %lld to equal the group size %lld, but it is %lld",
                        rule_prim_name(cx), (long long)dim, (long long)p, (long long)in[0].shape[dim]);
    for (int d = (int)dim; d < in[0].rank - 1; d++) out[0].shape[d] = in[0].shape[d + 1];
    out[0].rank--;
  }
  at->i[0] = dim;
  at->b[0] = tiled;
  return true;
}

/* ppermute.  Attrs: axes; l[0] the (src, dst) pairs, flattened.  Instead
   of perm, shift=k (an extension) sends member j to member (j + k) mod the
   group size, whatever that size is: a ring written once for every mesh;
   it is recorded as the perm it stands for. */
bool fab_rule_ppermute(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  if (!read_axes(cx, "axis_name", at)) return false;
  int64_t p = rule_group_size(cx, at);
  if (rule_has(cx, "shift")) {
    int64_t k;
    if (rule_has(cx, "perm")) return rule_param_error(cx, "shift", "ppermute takes perm or shift, not both");
    if (!rule_int(cx, "shift", true, 0, &k)) return false;
    at->l[0].n = (int)(2 * p);
    at->l[0].v = rule_alloc_ints(cx, at->l[0].n);
    for (int64_t j = 0; j < p; j++) {
      at->l[0].v[2 * j] = j;
      at->l[0].v[2 * j + 1] = ((j + k) % p + p) % p;
    }
    rule_respell_int_tuples(cx, "shift", "perm", 2, &at->l[0]);
  } else if (!rule_int_tuples(cx, "perm", true, 2, &at->l[0])) {
    return false;
  }
  int np = at->l[0].n / 2;
  for (int i = 0; i < np; i++) {
    int64_t s = at->l[0].v[2 * i], d = at->l[0].v[2 * i + 1];
    if (s < 0 || s >= p || d < 0 || d >= p)
      return rule_param_error(cx, "perm", "ppermute pair (%lld, %lld) is out of range for a group of %lld",
                              (long long)s, (long long)d, (long long)p);
    for (int j = 0; j < i; j++) {
      if (at->l[0].v[2 * j] == s)
        return rule_param_error(cx, "perm", "ppermute source %lld appears twice in perm", (long long)s);
      if (at->l[0].v[2 * j + 1] == d)
        return rule_param_error(cx, "perm", "ppermute destination %lld appears twice in perm", (long long)d);
    }
  }
  out[0] = in[0];
  return true;
}

/* all_to_all.  Attrs: axes; i[0] split_axis; i[1] concat_axis; b[0] tiled. */
bool fab_rule_all_to_all(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)nin;
  int64_t sa, ca;
  bool tiled;
  if (!read_axes(cx, "axis_name", at) || !no_groups(cx)) return false;
  if (!rule_int(cx, "split_axis", true, 0, &sa) || !rule_int(cx, "concat_axis", true, 0, &ca) ||
      !rule_bool(cx, "tiled", false, &tiled))
    return false;
  int r = in[0].rank;
  /* negative: counted from the end (the result has the operand's rank) */
  rule_axis_index(cx, "split_axis", &sa, r);
  rule_axis_index(cx, "concat_axis", &ca, r);
  int64_t p = rule_group_size(cx, at);
  if (sa < 0 || sa >= r)
    return rule_error(cx, "all_to_all split_axis %lld is out of range for rank %d (%d..%d)", (long long)sa, r, -r, r - 1);
  if (ca < 0 || ca >= r)
    return rule_error(cx, "all_to_all concat_axis %lld is out of range for rank %d (%d..%d)", (long long)ca, r, -r, r - 1);
  out[0] = in[0];
  if (tiled) {
    if (in[0].shape[sa] % p)
      return rule_error(cx, "all_to_all (tiled) splits dimension %lld of size %lld into %lld chunks: not divisible",
                        (long long)sa, (long long)in[0].shape[sa], (long long)p);
    out[0].shape[sa] /= p;
    out[0].shape[ca] *= p;
  } else {
    if (in[0].shape[sa] != p)
      return rule_error(cx, "all_to_all (untiled) needs split_axis %lld to equal the group size %lld, but it is %lld",
                        (long long)sa, (long long)p, (long long)in[0].shape[sa]);
    int64_t tmp[SHM_MAXRANK];
    int n = 0;
    for (int d = 0; d < r; d++) if (d != sa) tmp[n++] = in[0].shape[d];
    for (int d = n; d > ca; d--) tmp[d] = tmp[d - 1];
    tmp[ca] = p;
    for (int d = 0; d < r; d++) out[0].shape[d] = tmp[d];
  }
  at->i[0] = sa;
  at->i[1] = ca;
  at->b[0] = tiled;
  return true;
}

/* axis_index: i32[].  Attrs: axes. */
bool fab_rule_axis_index(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out) {
  (void)in;
  (void)nin;
  if (!read_axes(cx, "axis_name", at)) return false;
  memset(&out[0], 0, sizeof(Type));
  out[0].dt = DT_I32;
  return true;
}

/* ---- statistics ---------------------------------------------------------------------- */

typedef struct Stat {
  long calls;
  long maxdev;            /* most instances taking part in one call */
  long devices;           /* instances taking part, summed over calls */
  double sent;            /* bytes sent, summed over devices and calls */
  double recv;
  double per_dev_sent;    /* bytes one device sends, summed over calls */
} Stat;

static Stat stats[P_COUNT];

void fab_stats_reset(void) { memset(stats, 0, sizeof stats); }

static void account(int prim, long devices, double sent_each, double recv_each) {
  Stat *s = &stats[prim];
  s->calls++;
  s->devices += devices;
  if (devices > s->maxdev) s->maxdev = devices;
  s->sent += sent_each * (double)devices;
  s->recv += recv_each * (double)devices;
  s->per_dev_sent += sent_each;
}

double fab_stats_total_bytes(void) {
  double t = 0;
  for (int p = 0; p < P_COUNT; p++) t += stats[p].sent;
  return t;
}

static void human(char *out, size_t n, double bytes) {
  if (bytes < 1024) snprintf(out, n, "%.0f B", bytes);
  else if (bytes < 1024.0 * 1024) snprintf(out, n, "%.1f KiB", bytes / 1024);
  else if (bytes < 1024.0 * 1024 * 1024) snprintf(out, n, "%.1f MiB", bytes / 1024 / 1024);
  else snprintf(out, n, "%.2f GiB", bytes / 1024 / 1024 / 1024);
}

void fab_stats_print(FILE *out) {
  fprintf(out, "%-22s %7s %8s %14s %14s\n", "collective", "calls", "devices", "sent/device", "total sent");
  long calls = 0, devs = 0;
  double total = 0, per = 0;
  for (int p = 0; p < P_COUNT; p++) {
    Stat *s = &stats[p];
    if (!s->calls) continue;
    char a[32], b[32];
    human(a, sizeof a, s->devices ? s->sent / ((double)s->devices / (double)s->calls) : 0);
    human(b, sizeof b, s->sent);
    fprintf(out, "%-22s %7ld %8ld %14s %14s\n", prim_table[p].name, s->calls, s->maxdev, a, b);
    calls += s->calls;
    devs += s->devices;
    total += s->sent;
    per += s->devices ? s->sent / ((double)s->devices / (double)s->calls) : 0;
  }
  char a[32], b[32];
  human(a, sizeof a, per);
  human(b, sizeof b, total);
  fprintf(out, "%-22s %7ld %8s %14s %14s\n", "total", calls, "", a, b);
}

/* ---- groups ---------------------------------------------------------------------------- */

/* Coordinates of block b of `mask` (axes off the mask left untouched). */
static void decode(const Mesh *m, uint32_t mask, int64_t b, int64_t *coords) {
  for (int k = m->naxes - 1; k >= 0; k--)
    if (mask & (1u << k)) {
      coords[k] = b % m->size[k];
      b /= m->size[k];
    }
}

static int64_t encode(const Mesh *m, uint32_t mask, const int64_t *coords) {
  int64_t b = 0;
  for (int k = 0; k < m->naxes; k++)
    if (mask & (1u << k)) b = b * m->size[k] + coords[k];
  return b;
}

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

/* Which outer blocks (groups) have running instances; NULL: all. */
static uint8_t *groups_needed(const Space *sp, uint32_t outer, int64_t nouter) {
  if (!sp->active) return NULL;
  uint8_t *need = mem_calloc((size_t)nouter);
  for (int64_t i = 0; i < sp->ninst; i++)
    if (sp->active[i]) need[val_block_of(sp->mesh, outer, i)] = 1;
  return need;
}

/* ---- reductions ------------------------------------------------------------------------- */

/* Elements per tile of a reduction: small enough that the partial result
   stays in cache while every member's block is added to it. */
#define TILE 2048

/* dst[0..n) = op over the members g = 0, 1, ..., p-1 of src[g][off..off+n),
   combined left to right (the fixed order that makes sums reproducible),
   one cache-sized tile at a time. */
static void reduce_into(int prim, DType dt, void *dst, Array *const *src, int64_t p, int64_t off, int64_t n) {
  switch (dt) {
#define LOOP(T)                                                                                \
  {                                                                                            \
    T *d = dst;                                                                                \
    for (int64_t t0 = 0; t0 < n; t0 += TILE) {                                                 \
      int64_t m = n - t0 < TILE ? n - t0 : TILE;                                               \
      T *a = d + t0;                                                                           \
      if (a != (const T *)src[0]->data + off + t0)                                             \
        memcpy(a, (const T *)src[0]->data + off + t0, sizeof(T) * (size_t)m);                  \
      for (int64_t g = 1; g < p; g++) {                                                        \
        const T *b = (const T *)src[g]->data + off + t0;                                       \
        if (prim == P_PMAX) for (int64_t i = 0; i < m; i++) a[i] = (a[i] != a[i] || a[i] >= b[i]) ? a[i] : b[i]; \
        else if (prim == P_PMIN) for (int64_t i = 0; i < m; i++) a[i] = (a[i] != a[i] || a[i] <= b[i]) ? a[i] : b[i]; \
        else for (int64_t i = 0; i < m; i++) a[i] = (T)(a[i] + b[i]);                         \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  break;
  case DT_F32: LOOP(float)
  case DT_F64: LOOP(double)
  case DT_I32: LOOP(int32_t)
  case DT_I64: LOOP(int64_t)
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
  }
}

/* The group's blocks, members in order (first listed axis major). */
static void group_blocks(const Mesh *m, const Attrs *at, Val *in, uint32_t outer, int64_t o, int64_t p, Array **blk) {
  int64_t coords[SHM_MAXAXES] = {0};
  decode(m, outer, o, coords);
  for (int64_t g = 0; g < p; g++) {
    member_coords(m, at, g, coords);
    blk[g] = in->blk[encode(m, in->mask, coords)];
  }
}

static void divide(Array *acc, int64_t p) {
  int64_t n = acc->size;
  switch ((DType)acc->dt) {
  case DT_F32: { float *a = acc->data; for (int64_t i = 0; i < n; i++) a[i] /= (float)p; break; }
  case DT_F64: { double *a = acc->data; for (int64_t i = 0; i < n; i++) a[i] /= (double)p; break; }
  case DT_I32: { int32_t *a = acc->data; for (int64_t i = 0; i < n; i++) a[i] = (int32_t)(a[i] / p); break; }
  case DT_I64: { int64_t *a = acc->data; for (int64_t i = 0; i < n; i++) a[i] /= p; break; }
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

/* Sum (max, min, mean) of the group's blocks, members in ascending order. */
static Array *reduce_group(int prim, const Mesh *m, const Attrs *at, Val *in, uint32_t outer, int64_t o, int64_t p,
                           bool donate) {
  Array **blk = mem_alloc(sizeof(Array *) * (size_t)p);
  err_defer(mem_free, blk);
  group_blocks(m, at, in, outer, o, p, blk);
  /* reduce_into reads each tile of the first member before writing it */
  Array *acc = reusable(blk, p, donate) ? arr_ref(blk[0]) : arr_new((DType)blk[0]->dt, blk[0]->rank, blk[0]->shape);
  err_undefer(blk);
  RangeJob rj = {prim == P_PMEAN ? P_PSUM : prim, (DType)acc->dt, acc->data, blk, p, acc->size};
  par_for(2, reduce_half, &rj, (double)arr_nbytes(acc) * (double)p);
  mem_free(blk);
  if (prim == P_PMEAN) {
    if (!dtype_is_float((DType)acc->dt)) {   /* JAX's pmean of integers is a float32 mean */
      Array *f = arr_convert(acc, DT_F32);
      arr_unref(acc);
      acc = f;
    }
    divide(acc, p);
  }
  return acc;
}

/* ---- execution -------------------------------------------------------------------------- */

bool fab_is_collective(int prim) {
  switch (prim) {
  case P_PSUM: case P_PMAX: case P_PMIN: case P_PMEAN: case P_PBROADCAST:
  case P_ALL_GATHER: case P_ALL_GATHER_INVARIANT: case P_PSUM_SCATTER: case P_PSCATTER:
  case P_PPERMUTE: case P_ALL_TO_ALL: case P_AXIS_INDEX:
    return true;
  default:
    return false;
  }
}

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
  Array *x = j->in->blk[encode(j->m, j->in->mask, coords)];
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
  decode(m, outer, o, coords);
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
    Array *x = a->in->blk[encode(a->m, a->in->mask, coords)];
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
  int64_t p = group_size(m, at), ngroups = val_nblk(m, rest), g = -1;
  int64_t *count = mem_calloc(sizeof(int64_t) * (size_t)ngroups);   /* running members per group */
  for (int64_t d = 0; d < sp->ninst; d++)
    if (sp->active[d]) count[val_block_of(m, rest, d)]++;
  for (int64_t k = 0; k < ngroups && g < 0; k++)
    if (count[k] && count[k] < p) g = k;
  mem_free(count);
  if (g >= 0) {
    char axes[128] = "", reached[160] = "", missed[160] = "";
    int nr = 0, nm = 0;
    for (int k = 0; k < at->naxes; k++) {
      size_t len = strlen(axes);
      snprintf(axes + len, sizeof axes - len, "%s%.*s", k ? ", " : "", m->axis[at->axes[k]].n, m->axis[at->axes[k]].p);
    }
    for (int64_t e = 0; e < sp->ninst; e++)
      if (val_block_of(m, rest, e) == g) {
        if (sp->active[e]) list_device(reached, sizeof reached, &nr, e);
        else list_device(missed, sizeof missed, &nm, e);
      }
    err_throw("deadlock: %s over %s%s would hang: device%s %s reached it, but device%s %s of the same group "
              "did not (another path through a branch or loop)", prim_table[prim].name,
              at->naxes > 1 ? "axes " : "axis ", axes, nr > 1 ? "s" : "", reached, nm > 1 ? "s" : "", missed);
  }
}

Val *fab_exec(const Space *sp, int prim, const Attrs *at, Val *in, const Type *outt, bool donate) {
  const Mesh *m = sp->mesh;
  if (vrule_communicates(prim_table[prim].vrule)) check_groups(sp, prim, at);
  int64_t p = group_size(m, at);
  uint32_t A = at->axmask;
  uint32_t R = outt->vma;
  int64_t nres = val_nblk(m, R);
  Val *out = val_new(R, nres);
  /* on a runtime error, drop the references `out` took; the caller's
     memory scope (mem.h) frees the rest */
  err_defer(release_val, out);
  long devices = 0;
  for (int64_t i = 0; i < sp->ninst; i++) devices += !sp->active || sp->active[i];
  int64_t coords[SHM_MAXAXES] = {0};

  if (prim == P_AXIS_INDEX) {
    for (int64_t b = 0; b < nres; b++) {
      decode(m, R, b, coords);
      int64_t idx = 0;
      for (int k = 0; k < at->naxes; k++) idx = idx * m->size[at->axes[k]] + coords[at->axes[k]];
      out->blk[b] = arr_scalar_i(DT_I32, idx);
    }
    account(prim, devices, 0, 0);
    err_undefer(out);
    return out;
  }

  uint32_t S = in->mask;
  if (prim == P_PBROADCAST) {     /* moves nothing: the result shares the operand's blocks */
    for (int64_t b = 0; b < nres; b++) out->blk[b] = arr_ref(in->blk[val_project(m, R, b, S)]);
    account(prim, devices, 0, 0);
    err_undefer(out);
    return out;
  }
  double n_in = in->nblk && in->blk[0] ? (double)arr_nbytes(in->blk[0]) : 0;
  for (int64_t b = 0; b < in->nblk && n_in == 0; b++)
    if (in->blk[b]) n_in = (double)arr_nbytes(in->blk[b]);
  double n_out = nbytes_of(outt);
  uint32_t outer = S & ~A;
  int64_t nouter = val_nblk(m, outer);
  uint8_t *need = groups_needed(sp, outer, nouter);

  switch (prim) {
  case P_PSUM: case P_PMAX: case P_PMIN: case P_PMEAN:
    for (int64_t o = 0; o < nouter; o++) {
      if (need && !need[o]) continue;
      out->blk[o] = reduce_group(prim, m, at, in, outer, o, p, donate);
    }
    account(prim, devices, 2.0 * (double)(p - 1) / (double)p * n_in, 2.0 * (double)(p - 1) / (double)p * n_in);
    break;

  case P_ALL_GATHER: case P_ALL_GATHER_INVARIANT:
    for (int64_t o = 0; o < nouter; o++) {
      if (need && !need[o]) continue;
      Array *g = gather_group(m, at, in, outer, o, p, outt);
      if (prim == P_ALL_GATHER_INVARIANT) {
        out->blk[o] = g;
      } else {      /* every member holds the same gathered array */
        decode(m, outer, o, coords);
        for (int64_t k = 0; k < p; k++) {
          member_coords(m, at, k, coords);
          out->blk[encode(m, R, coords)] = arr_ref(g);
        }
        arr_unref(g);
      }
    }
    account(prim, devices, (double)(p - 1) / (double)p * n_out, (double)(p - 1) / (double)p * n_out);
    break;

  case P_PSUM_SCATTER:
    for (int64_t o = 0; o < nouter; o++) {
      if (need && !need[o]) continue;
      int d = (int)at->i[0];
      Array *first = in->blk[0];
      for (int64_t b = 0; !first && b < in->nblk; b++) first = in->blk[b];
      int64_t before = 1;
      for (int i = 0; i < d; i++) before *= first->shape[i];
      if (before == 1) {
        /* each member's chunk is contiguous: sum just that range, straight
           into the member's result */
        Array **blk = mem_calloc(sizeof(Array *) * (size_t)(2 * p));
        err_defer(mem_free, blk);
        group_blocks(m, at, in, outer, o, p, blk);
        ScatterJob sj = {blk, blk + p, p, first->size / p};
        decode(m, outer, o, coords);
        for (int64_t k = 0; k < p; k++) {
          sj.rs[k] = arr_new((DType)outt->dt, outt->rank, outt->shape);
          member_coords(m, at, k, coords);
          out->blk[encode(m, R, coords)] = sj.rs[k];
        }
        par_for(p, scatter_one, &sj, (double)arr_nbytes(first) * (double)p);
        err_undefer(blk);
        mem_free(blk);
        continue;
      }
      Array *sum = reduce_group(P_PSUM, m, at, in, outer, o, p, donate);
      int64_t c = at->b[0] ? sum->shape[d] / p : 1;
      decode(m, outer, o, coords);
      for (int64_t k = 0; k < p; k++) {
        Array *ch = chunk(sum, d, k, c);
        if (!at->b[0]) squeeze_dim(ch, d);
        member_coords(m, at, k, coords);
        out->blk[encode(m, R, coords)] = ch;
      }
      arr_unref(sum);
    }
    account(prim, devices, (double)(p - 1) / (double)p * n_in, (double)(p - 1) / (double)p * n_in);
    break;

  case P_PSCATTER:
    /* the operand is invariant along the axes: each member keeps its chunk */
    for (int64_t b = 0; b < nres; b++) {
      decode(m, R, b, coords);
      if (sp->active && !sp->active[val_first_inst(m, R, b)]) {
        bool any = false;
        for (int64_t i = 0; i < sp->ninst && !any; i++)
          any = sp->active[i] && val_block_of(m, R, i) == b;
        if (!any) continue;
      }
      int64_t k = 0;
      for (int j = 0; j < at->naxes; j++) k = k * m->size[at->axes[j]] + coords[at->axes[j]];
      Array *x = in->blk[encode(m, S, coords)];
      int d = (int)at->i[0];
      Array *ch = chunk(x, d, k, at->b[0] ? x->shape[d] / p : 1);
      if (!at->b[0]) squeeze_dim(ch, d);
      out->blk[b] = ch;
    }
    account(prim, devices, 0, 0);
    break;

  case P_PPERMUTE: {
    int np = at->l[0].n / 2;
    for (int64_t o = 0; o < nouter; o++) {
      if (need && !need[o]) continue;
      decode(m, outer, o, coords);
      bool *got = mem_calloc((size_t)p);
      for (int i = 0; i < np; i++) {
        member_coords(m, at, at->l[0].v[2 * i], coords);
        Array *x = in->blk[encode(m, S, coords)];
        member_coords(m, at, at->l[0].v[2 * i + 1], coords);
        out->blk[encode(m, R, coords)] = arr_ref(x);
        got[at->l[0].v[2 * i + 1]] = true;
      }
      for (int64_t k = 0; k < p; k++) {
        if (got[k]) continue;
        member_coords(m, at, k, coords);
        out->blk[encode(m, R, coords)] = arr_zeros((DType)outt->dt, outt->rank, outt->shape);
      }
      mem_free(got);
    }
    /* every pair moves one block; devices that send nothing send 0 */
    account(prim, devices, devices ? n_in * (double)np * (double)nouter / (double)devices : 0,
            devices ? n_in * (double)np * (double)nouter / (double)devices : 0);
    break;
  }

  case P_ALL_TO_ALL: {
    int sa = (int)at->i[0], ca = (int)at->i[1];
    bool tiled = at->b[0];
    for (int64_t o = 0; o < nouter; o++) {
      if (need && !need[o]) continue;
      decode(m, outer, o, coords);
      if (tiled) {       /* receivers built on two cores, straight from the senders */
        Array **rs = mem_calloc(sizeof(Array *) * (size_t)p);
        err_defer(mem_free, rs);
        A2AJob aj = {m, at, in, coords, rs, p, sa, ca};
        for (int64_t k = 0; k < p; k++) {
          rs[k] = arr_new((DType)outt->dt, outt->rank, outt->shape);
          member_coords(m, at, k, coords);
          out->blk[encode(m, R, coords)] = rs[k];
        }
        decode(m, outer, o, coords);
        par_for(p, a2a_receiver, &aj, (double)arr_nbytes(rs[0]) * (double)p);
        err_undefer(rs);
        mem_free(rs);
        continue;
      }
      for (int64_t k = 0; k < p; k++) {          /* receiver */
        Array *r = arr_new((DType)outt->dt, outt->rank, outt->shape);
        for (int64_t j = 0; j < p; j++) {        /* sender */
          member_coords(m, at, j, coords);
          Array *x = in->blk[encode(m, S, coords)];
          Array *ch = chunk(x, sa, k, 1);
          int64_t start[SHM_MAXRANK] = {0};
          {
            squeeze_dim(ch, sa);
            expand_dim(ch, ca);
            start[ca] = j;
          }
          arr_put_block(r, start, ch);
          arr_unref(ch);
        }
        member_coords(m, at, k, coords);
        out->blk[encode(m, R, coords)] = r;
      }
    }
    account(prim, devices, (double)(p - 1) / (double)p * n_in, (double)(p - 1) / (double)p * n_in);
    break;
  }

  default:
    mem_free(need);
    err_undefer(out);
    val_unref(out);
    err_throw("internal error: %s is not a collective", prim_table[prim].name);
  }
  mem_free(need);
  err_undefer(out);
  return out;
}
