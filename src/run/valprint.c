/*
** valprint.c — a shard_map body's values on screen (see valprint.h).
*/
#include "valprint.h"
#include "show.h"

#include <string.h>
#include "err.h"
#include "npprint.h"
#include "mem.h"
#include "rule.h"
#include "split.h"

/* ---- device sets ------------------------------------------------------------------- */

/* The runs of consecutive devices in set: starts in lo, ends in hi; returns
   how many (lo/hi may be NULL to count only). */
static int64_t dev_runs(const uint8_t *set, int64_t n, int64_t *lo, int64_t *hi) {
  int64_t r = 0;
  for (int64_t d = 0; d < n; d++) {
    if (set && !set[d]) continue;
    int64_t e = d;
    while (e + 1 < n && (!set || set[e + 1])) e++;
    if (lo) lo[r] = d, hi[r] = e;
    r++;
    d = e;
  }
  return r;
}

/* One run: "3", "3, 4" or "3-7". */
static void put_run(Buf *b, int64_t d, int64_t e) {
  if (e - d >= 2) buf_printf(b, "%lld-%lld", (long long)d, (long long)e);
  else if (e > d) buf_printf(b, "%lld, %lld", (long long)d, (long long)e);
  else buf_printf(b, "%lld", (long long)d);
}

void vp_devset(Buf *b, const uint8_t *set, int64_t n) {
  int64_t c = 0;
  for (int64_t d = 0; d < n; d++) c += !set || set[d];
  if (c == n && n == 2) { buf_puts(b, "both devices"); return; }
  if (c == n && n > 2) { buf_printf(b, "all %lld devices", (long long)n); return; }
  if (c == 0) { buf_puts(b, "no device"); return; }
  buf_puts(b, c == 1 ? "device " : "devices ");
  int64_t nr = dev_runs(set, n, NULL, NULL);
  int64_t *lo = mem_alloc(sizeof(int64_t) * 2 * (size_t)nr), *hi = lo + nr;
  err_defer(mem_free, lo);
  dev_runs(set, n, lo, hi);
  for (int64_t r = 0; r < nr; r++) {
    if (nr > 8 && r == 3) {
      buf_puts(b, ", ...");
      r = nr - 2;
    }
    if (r) buf_puts(b, ", ");
    put_run(b, lo[r], hi[r]);
  }
  if (nr > 8) buf_printf(b, " (%lld devices)", (long long)c);
  err_undefer(lo);
  mem_free(lo);
}

/* ---- unreduced values ---------------------------------------------------------------------- */

void vp_unreduced_note(Buf *b, const Type *t, const Mesh *m) {
  if (!m || !t->unred) return;
  buf_puts(b, "(unreduced over ");
  show_vma_message(b, t->unred, m);
  buf_puts(b, t->ukind == UK_MAX ? ": each device holds a part; the value is their maximum)\n"
              : t->ukind == UK_MIN ? ": each device holds a part; the value is their minimum)\n"
              : ": each device holds a summand; the value is their sum)\n");
}

/* ---- the per-device listing --------------------------------------------------------------- */

/* "On device 5 at mesh coordinates (i, j) = (1, 1):" */
static void put_device_header(Buf *b, const Mesh *m, int64_t d) {
  int64_t coords[SHM_MAXAXES];
  til_coords(m, d, coords);
  buf_printf(b, "On device %lld at mesh coordinates (", (long long)d);
  for (int k = 0; k < m->naxes; k++) buf_printf(b, "%s%.*s", k ? ", " : "", m->axis[k].n, m->axis[k].p);
  buf_puts(b, m->naxes == 1 ? ",) = (" : ") = (");
  for (int k = 0; k < m->naxes; k++) buf_printf(b, "%s%lld", k ? ", " : "", (long long)coords[k]);
  buf_puts(b, m->naxes == 1 ? ",):\n" : "):\n");
}

static void list_devices(Buf *b, const Space *sp, Val *v) {
  const Mesh *m = sp->mesh;
  bool first = true;
  for (int64_t d = 0; d < m->ndev; d++) {
    if (sp->active && !sp->active[d]) continue;
    if (!first) buf_putc(b, '\n');
    first = false;
    put_device_header(b, m, d);
    fmt_array(b, v->blk[til_block_of(m, v->mask, d)]);
  }
}

/* ---- groups of devices with equal blocks --------------------------------------------------- */

typedef struct Groups {
  int64_t n;            /* groups */
  int32_t *of_dev;      /* group of each device, -1 off the path */
  int32_t *of_blk;      /* group of each block, -1 when no running device holds it */
  int64_t *rep;         /* a block of each group */
  uint64_t *hash;       /* of each block's bytes (0 until computed) */
  int32_t *table;       /* the groups by their blocks' hash (open addressing, -1: empty) */
  uint64_t tmask;       /* its size less one (a power of two, over twice the blocks) */
} Groups;

static uint64_t block_hash(const Array *a) {
  uint64_t h = 1469598103934665603ull;
  const uint8_t *p = a->data;
  for (size_t i = 0, n = arr_nbytes(a); i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h | 1;
}

/* The group of block bi: an earlier group with an identical block (found
   by its hash: time linear in the blocks, which may be a million), or a
   new one. */
static int32_t group_of(Groups *G, Val *v, int64_t bi) {
  if (G->of_blk[bi] >= 0) return G->of_blk[bi];
  Array *a = v->blk[bi];
  uint64_t h = G->hash[bi] = block_hash(a);
  uint64_t slot = (h ^ h >> 29) & G->tmask;
  for (; G->table[slot] >= 0; slot = (slot + 1) & G->tmask) {
    int64_t r = G->rep[G->table[slot]];
    if (G->hash[r] == h && arr_identical(v->blk[r], a)) return G->of_blk[bi] = G->table[slot];
  }
  G->table[slot] = (int32_t)G->n;
  G->rep[G->n] = bi;
  return G->of_blk[bi] = (int32_t)G->n++;
}

static void groups_free(void *p) {
  Groups *G = p;
  mem_free(G->rep);
}

/* Group the running devices (G's arrays in one allocation, released by
   groups_free, which a runtime error runs too). */
static void groups_build(Groups *G, const Space *sp, Val *v) {
  const Mesh *m = sp->mesh;
  size_t n = (size_t)m->ndev, nb = (size_t)v->nblk, nt = 4;
  while (nt < 2 * nb) nt *= 2;
  char *mem = mem_alloc(nb * (8 + 8 + 4) + n * 4 + nt * 4);   /* (the 8-byte arrays first) */
  G->rep = (int64_t *)mem;
  G->hash = (uint64_t *)(mem + nb * 8);
  G->of_blk = (int32_t *)(mem + nb * 16);
  G->of_dev = (int32_t *)(mem + nb * 20);
  G->table = (int32_t *)(mem + nb * 20 + n * 4);
  G->tmask = nt - 1;
  G->n = 0;
  for (size_t i = 0; i < nb; i++) G->of_blk[i] = -1;
  for (size_t i = 0; i < nt; i++) G->table[i] = -1;
  err_defer(groups_free, G);
  for (int64_t d = 0; d < m->ndev; d++) {
    bool on = !sp->active || sp->active[d];
    G->of_dev[d] = on ? group_of(G, v, til_block_of(m, v->mask, d)) : -1;
  }
}

/* "(1, *)": the coordinates of block bi, `*` along axes off the mask. */
static void put_pattern(Buf *b, const Mesh *m, uint32_t mask, int64_t bi) {
  int64_t coords[SHM_MAXAXES];
  til_coords(m, til_first_inst(m, mask, bi), coords);
  buf_putc(b, '(');
  for (int k = 0; k < m->naxes; k++) {
    if (k) buf_puts(b, ", ");
    if (mask & (1u << k)) buf_printf(b, "%lld", (long long)coords[k]);
    else buf_putc(b, '*');
  }
  buf_puts(b, m->naxes == 1 ? ",)" : ")");
}

/* The header of group g: its devices, and where its blocks are. */
static void put_group_header(Buf *b, const Mesh *m, Val *v, const Groups *G, int64_t g, uint8_t *set) {
  int64_t nblocks = 0;
  for (int64_t d = 0; d < m->ndev; d++) set[d] = G->of_dev[d] == g;
  for (int64_t bi = 0; bi < v->nblk; bi++) nblocks += G->of_blk[bi] == g;
  buf_puts(b, "On ");
  vp_devset(b, set, m->ndev);
  if (!v->mask) { buf_puts(b, " (invariant):\n"); return; }
  if (nblocks > 3) { buf_printf(b, " (%lld equal blocks):\n", (long long)nblocks); return; }
  buf_puts(b, " at mesh coordinates (");
  for (int k = 0; k < m->naxes; k++) buf_printf(b, "%s%.*s", k ? ", " : "", m->axis[k].n, m->axis[k].p);
  buf_puts(b, m->naxes == 1 ? ",) = " : ") = ");
  int64_t shown = 0;
  for (int64_t bi = 0; bi < v->nblk; bi++) {
    if (G->of_blk[bi] != g) continue;
    if (shown++) buf_puts(b, ", ");
    put_pattern(b, m, v->mask, bi);
  }
  buf_puts(b, ":\n");
}

/* The groups in the order of their first device; the middle ones left out
   past 2 * VP_EDGE of them. */
static void list_groups(Buf *b, const Space *sp, Val *v) {
  const Mesh *m = sp->mesh;
  Groups G;
  groups_build(&G, sp, v);
  uint8_t *set = mem_calloc((size_t)m->ndev);
  err_defer(mem_free, set);
  /* groups are numbered by first device already: group_of numbers them as met */
  bool cut = G.n > 2 * VP_EDGE;
  for (int64_t g = 0; g < G.n; g++) {
    if (g) buf_putc(b, '\n');
    if (cut && g == VP_EDGE) {
      int64_t left = G.n - 2 * VP_EDGE;
      for (int64_t d = 0; d < m->ndev; d++) {
        set[d] = G.of_dev[d] >= VP_EDGE && G.of_dev[d] < G.n - VP_EDGE;
      }
      buf_printf(b, "... %lld more groups, on ", (long long)left);
      vp_devset(b, set, m->ndev);
      g = G.n - VP_EDGE - 1;
      continue;
    }
    put_group_header(b, m, v, &G, g, set);
    fmt_array(b, v->blk[G.rep[g]]);
  }
  err_undefer(set);
  mem_free(set);
  err_undefer(&G);
  groups_free(&G);
}

void vp_value(Buf *b, const Space *sp, Val *v, bool at_line_start) {
  const Mesh *m = sp->mesh;
  if (!m) {
    fmt_array(b, v->blk[0]);
    return;
  }
  if (!at_line_start) buf_putc(b, '\n');
  int64_t na = 0;
  for (int64_t d = 0; d < m->ndev; d++) na += !sp->active || sp->active[d];
  if ((v->mask == 0 && na > 1) || na > VP_SMALL) list_groups(b, sp, v);
  else list_devices(b, sp, v);
}

/* ---- the global view ---------------------------------------------------------------------- */

void vp_global_text(Buf *b, const Mesh *m, const Spec *spc, const Array *a) {
  buf_puts(b, "global, as ");
  rule_spec_text(b, spc, m);
  buf_puts(b, " assembles it:\n");
  fmt_array(b, a);
}

/* ---- values printed across ranks ------------------------------------------------------------- */

static void put_i64(Buf *b, int64_t x) { buf_put(b, (const char *)&x, sizeof x); }

void vp_part_header(Buf *b, const Mesh *m, uint32_t mask, const Type *bt, const Spec *global) {
  put_i64(b, m->naxes);
  for (int k = 0; k < m->naxes; k++) {
    put_i64(b, m->size[k]);
    put_i64(b, m->axis[k].n);
    buf_put(b, m->axis[k].p, (size_t)m->axis[k].n);
  }
  put_i64(b, mask);
  put_i64(b, bt->dt);
  put_i64(b, bt->rank);
  for (int d = 0; d < bt->rank; d++) put_i64(b, bt->shape[d]);
  put_i64(b, global != NULL);
  if (!global) return;
  put_i64(b, global->ndims);
  put_i64(b, global->mask);
  for (int d = 0; d < global->ndims; d++) {
    put_i64(b, global->dim[d].naxes);
    for (int k = 0; k < global->dim[d].naxes; k++) put_i64(b, global->dim[d].axes[k]);
  }
}

/* Reading a header back (every rank wrote the same one). */
typedef struct Rd {
  const char *p;
} Rd;

static int64_t get_i64(Rd *r) {
  int64_t x;
  memcpy(&x, r->p, sizeof x);
  r->p += sizeof x;
  return x;
}

/* What vp_format_parts builds, released by a runtime error too. */
typedef struct Parts {
  Val *v;
  uint8_t *active;
  Array *global;
} Parts;

static void parts_free(void *p) {
  Parts *P = p;
  val_unref(P->v);
  mem_free(P->active);
  arr_unref(P->global);
}

void vp_format_parts(Buf *out, const char *hdr, size_t n, const FmpiPart *parts, int nparts) {
  (void)n;
  Rd r = {hdr};
  Mesh m;
  memset(&m, 0, sizeof m);
  m.naxes = (int)get_i64(&r);
  m.ndev = 1;
  for (int k = 0; k < m.naxes; k++) {
    m.size[k] = get_i64(&r);
    m.axis[k].n = (int)get_i64(&r);
    m.axis[k].p = r.p;
    r.p += m.axis[k].n;
    m.ndev *= m.size[k];
  }
  uint32_t mask = (uint32_t)get_i64(&r);
  DType dt = (DType)get_i64(&r);
  int rank = (int)get_i64(&r);
  int64_t shape[SHM_MAXRANK];
  for (int d = 0; d < rank; d++) shape[d] = get_i64(&r);
  bool global = get_i64(&r) != 0;
  Parts P = {val_new(mask, til_nblk(&m, mask)), mem_calloc((size_t)m.ndev), NULL};
  err_defer(parts_free, &P);
  for (int i = 0; i < nparts; i++) {
    int64_t d = parts[i].dev, bi = til_block_of(&m, mask, d);
    P.active[d] = 1;
    if (P.v->blk[bi]) continue;
    Array *a = P.v->blk[bi] = arr_new(dt, rank, shape);
    memcpy(a->data, parts[i].p, arr_nbytes(a));
  }
  Space sp = {&m, m.ndev, nparts == m.ndev ? NULL : P.active};
  if (!global) {
    vp_value(out, &sp, P.v, true);
  } else {
    Spec spc;
    memset(&spc, 0, sizeof spc);
    spc.ndims = (int)get_i64(&r);
    spc.mask = (uint32_t)get_i64(&r);
    for (int d = 0; d < spc.ndims; d++) {
      spc.dim[d].naxes = (int)get_i64(&r);
      for (int k = 0; k < spc.dim[d].naxes; k++) spc.dim[d].axes[k] = (uint8_t)get_i64(&r);
    }
    char msg[256];
    P.global = spl_global(&m, &spc, P.v, msg, sizeof msg);
    if (P.global) vp_global_text(out, &m, &spc, P.global);
    else buf_printf(out, "print[global]: %s", msg);   /* (the ranks check first: not reached) */
  }
  err_undefer(&P);
  parts_free(&P);
}
