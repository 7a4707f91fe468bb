/*
** fabmpi.c — ranks, sub-communicators, block exchange, output merging and
** failure handling over MPI (see fabmpi.h).
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "diag.h"
#include "err.h"
#include "fabmpi.h"
#include "superv.h"
#ifdef SHM_HAVE_MPI
#include <mpi.h>
#endif

static int my_rank = 0, nranks = 1, local_ranks = 1;
static double sent_bytes;

int fmpi_rank(void) { return my_rank; }
int fmpi_size(void) { return nranks; }
int fmpi_local_size(void) { return local_ranks; }
double fmpi_bytes_sent(void) { return sent_bytes; }

#ifdef SHM_HAVE_MPI
bool fmpi_built(void) { return true; }
#else
bool fmpi_built(void) { return false; }
#endif

static const char how_to_get[] =
    "to run on several processes, install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin)\n"
    "and build shmapi again (meson setup --reconfigure build && ninja -C build)\n";

/* ---- ownership ------------------------------------------------------------------- */

void fmpi_range(int64_t ndev, int r, int64_t *lo, int64_t *hi) {
  *lo = ndev * r / nranks;
  *hi = ndev * (r + 1) / nranks;
}

int fmpi_owner(int64_t ndev, int64_t inst) {
  /* the r with ndev*r/R <= inst < ndev*(r+1)/R */
  int r = (int)((inst * nranks + nranks - 1) / ndev);
  if (r >= nranks) r = nranks - 1;
  int64_t lo, hi;
  for (;;) {
    fmpi_range(ndev, r, &lo, &hi);
    if (inst < lo) r--;
    else if (inst >= hi) r++;
    else return r;
  }
}

/* ---- the place in the run ---------------------------------------------------------- */

/* [stmt0, sub1, stmt1, sub2, stmt2, ...]: n entries */
static int64_t *path;
static int pathn, pathcap;

void fmpi_path_reset(void) {
  if (nranks == 1) return;
  VEC_GROW(path, pathcap, 1);
  pathn = 1;
  path[0] = 0;
}

void fmpi_path_stmt(int64_t i) {
  if (nranks > 1 && pathn) path[pathn - 1] = i;
}

void fmpi_path_enter(int64_t sub) {
  if (nranks == 1) return;
  VEC_GROW(path, pathcap, pathn + 2);
  path[pathn++] = sub;
  path[pathn++] = 0;
}

void fmpi_path_leave(void) {
  if (nranks > 1 && pathn >= 3) pathn -= 2;
}

static void put_i64(Buf *b, int64_t x) { buf_put(b, (const char *)&x, sizeof x); }

void fmpi_path_put(Buf *b) {
  put_i64(b, pathn);
  if (pathn) buf_put(b, (const char *)path, sizeof(int64_t) * (size_t)pathn);
}

/* ---- output events ------------------------------------------------------------------
   An event: the path (n, n int64s), the number of parts (int64), then
   parts: kind 0 (text: length, bytes), kind 1 (devices: count, then per
   device: its number, length, bytes) or kind 2 (a value: its header's
   length and bytes, then devices as kind 1). */

static Buf outlog;
static FmpiFormat value_format;     /* rank 0's writer of value parts */

void fmpi_set_format(FmpiFormat f) { value_format = f; }
static size_t ev_nparts_at, dev_count_at;
static int64_t ev_nparts, dev_count;
static int part_kind = -1;

static void patch_i64(Buf *b, size_t at, int64_t x) { memcpy(b->p + at, &x, sizeof x); }

void fmpi_out_begin(void) {
  fmpi_path_put(&outlog);
  ev_nparts_at = outlog.n;
  ev_nparts = 0;
  part_kind = -1;
  put_i64(&outlog, 0);
}

void fmpi_out_text(const char *p, size_t n) {
  put_i64(&outlog, 0);
  put_i64(&outlog, (int64_t)n);
  if (n) buf_put(&outlog, p, n);
  part_kind = 0;
  patch_i64(&outlog, ev_nparts_at, ++ev_nparts);
}

/* Open a part of devices (kind 1, or 2 after its header). */
static void open_devices(void) {
  dev_count_at = outlog.n;
  dev_count = 0;
  put_i64(&outlog, 0);
  patch_i64(&outlog, ev_nparts_at, ++ev_nparts);
}

void fmpi_out_value(const char *hdr, size_t n) {
  put_i64(&outlog, 2);
  put_i64(&outlog, (int64_t)n);
  if (n) buf_put(&outlog, hdr, n);
  open_devices();
  part_kind = 2;
}

void fmpi_out_device(int64_t dev, const char *p, size_t n) {
  if (part_kind != 1 && part_kind != 2) {
    put_i64(&outlog, 1);
    open_devices();
    part_kind = 1;
  }
  put_i64(&outlog, dev);
  put_i64(&outlog, (int64_t)n);
  if (n) buf_put(&outlog, p, n);
  patch_i64(&outlog, dev_count_at, ++dev_count);
}

void fmpi_out_end(void) { part_kind = -1; }

void fmpi_release(void) {
  mem_free(path);
  path = NULL;
  pathn = pathcap = 0;
  buf_free(&outlog);
}

#ifdef SHM_HAVE_MPI

/* ---- reading what the ranks sent ---------------------------------------------------------- */

typedef struct Rd {
  const char *p, *end;
} Rd;

static int64_t get_i64(Rd *r) {
  int64_t x = 0;
  if (r->end - r->p >= (ptrdiff_t)sizeof x) memcpy(&x, r->p, sizeof x);
  r->p += sizeof x;
  return x;
}

static const char *get_bytes(Rd *r, int64_t n) {
  const char *s = r->p;
  r->p += n;
  return s;
}

/* An event as read back: its path, its rank, and its parts. */
typedef struct Ev {
  const int64_t *key;
  int64_t nkey, nparts;
  int rank;
  Rd parts;
} Ev;

/* Lexicographic order of paths (a prefix first). */
static int key_cmp(const int64_t *a, int64_t na, const int64_t *b, int64_t nb) {
  for (int64_t i = 0; i < na && i < nb; i++) {
    int64_t x, y;                 /* (read as bytes: a path in a message need not be aligned) */
    memcpy(&x, (const char *)a + 8 * i, 8);
    memcpy(&y, (const char *)b + 8 * i, 8);
    if (x != y) return x < y ? -1 : 1;
  }
  return na < nb ? -1 : na > nb;
}

static int ev_cmp(const void *x, const void *y) {
  const Ev *a = x, *b = y;
  int c = key_cmp(a->key, a->nkey, b->key, b->nkey);
  return c ? c : a->rank - b->rank;
}

/* Read the events of one rank's log into evs. */
static void read_events(const char *p, size_t n, int rank, Ev **evs, int *nev, int *cap) {
  Rd r = {p, p + n};
  while (r.p < r.end) {
    VEC_GROW(*evs, *cap, *nev + 1);
    Ev *e = &(*evs)[(*nev)++];
    e->nkey = get_i64(&r);
    e->key = (const int64_t *)get_bytes(&r, e->nkey * 8);
    e->nparts = get_i64(&r);
    e->rank = rank;
    e->parts.p = r.p;
    for (int64_t k = 0; k < e->nparts; k++) {       /* skip to the next event */
      int64_t kind = get_i64(&r);
      if (kind != 1) get_bytes(&r, get_i64(&r));   /* text, or a value's header */
      if (kind != 0) {
        int64_t c = get_i64(&r);
        for (int64_t d = 0; d < c; d++) {
          get_i64(&r);
          get_bytes(&r, get_i64(&r));
        }
      }
    }
    e->parts.end = r.p;
  }
}

static int dev_cmp(const void *x, const void *y) {
  const FmpiPart *a = x, *b = y;
  return a->dev < b->dev ? -1 : a->dev > b->dev;
}

/* A part of the merged output (the test hook may die half way through). */
static void put_out(FILE *out, const char *p, size_t n) {
  if (sup_point(SUP_OUTPUT)) {
    fwrite(p, 1, n / 2, out);
    sup_die_here();
  }
  fwrite(p, 1, n, out);
}

/* Write the events e[0..n) (one place, several ranks) as one. */
static void write_merged(FILE *out, Ev *e, int n, FmpiFormat format) {
  FmpiPart *dp = NULL;
  int ndp = 0, cap = 0;
  for (int64_t k = 0; k < e[0].nparts; k++) {
    int64_t kind = get_i64(&e[0].parts);
    for (int i = 1; i < n; i++) get_i64(&e[i].parts);
    if (kind == 0) {
      int64_t len = get_i64(&e[0].parts);
      put_out(out, get_bytes(&e[0].parts, len), (size_t)len);
      for (int i = 1; i < n; i++) get_bytes(&e[i].parts, get_i64(&e[i].parts));
      continue;
    }
    const char *hdr = NULL;
    int64_t nhdr = 0;
    if (kind == 2) {
      nhdr = get_i64(&e[0].parts);
      hdr = get_bytes(&e[0].parts, nhdr);
      for (int i = 1; i < n; i++) get_bytes(&e[i].parts, get_i64(&e[i].parts));
    }
    ndp = 0;
    for (int i = 0; i < n; i++) {
      int64_t c = get_i64(&e[i].parts);
      for (int64_t d = 0; d < c; d++) {
        VEC_GROW(dp, cap, ndp + 1);
        dp[ndp].dev = get_i64(&e[i].parts);
        dp[ndp].n = get_i64(&e[i].parts);
        dp[ndp].p = get_bytes(&e[i].parts, dp[ndp].n);
        ndp++;
      }
    }
    if (ndp) qsort(dp, (size_t)ndp, sizeof *dp, dev_cmp);
    if (kind == 2) {
      Buf text = {0};
      format(&text, hdr, (size_t)nhdr, dp, ndp);
      put_out(out, text.p, text.n);
      buf_free(&text);
      continue;
    }
    for (int d = 0; d < ndp; d++) {
      if (d) fputc('\n', out);
      put_out(out, dp[d].p, (size_t)dp[d].n);
    }
  }
  mem_free(dp);
}

/* Write every event before the place `cut` (NULL: all), in the run's
   order; events of one place from several ranks are one print. */
static void write_events(FILE *out, Ev *evs, int nev, const int64_t *cut, int64_t ncut, FmpiFormat format) {
  if (nev) qsort(evs, (size_t)nev, sizeof *evs, ev_cmp);
  for (int a = 0, b; a < nev; a = b) {
    for (b = a + 1; b < nev && !key_cmp(evs[a].key, evs[a].nkey, evs[b].key, evs[b].nkey); b++) {}
    if (cut && key_cmp(evs[a].key, evs[a].nkey, cut, ncut) >= 0) break;
    write_merged(out, evs + a, b - a, format);
  }
  fflush(out);
}

/* ---- MPI: start, stop, failures ------------------------------------------------------- */

static bool started, dirty;
static MPI_Comm notecomm;          /* failure notices travel here */
static MPI_Comm synccomm;          /* the syncs: never one an abandoned exchange may have left busy */
static MPI_Comm allcomm;           /* exchanges among all ranks */
static double timeout_s = 600;
static bool abandoned;
static int *seen;                  /* notices received, per rank */
static MPI_Request *note_req;      /* notices this rank sent */
static double *rank_sent;          /* rank 0: each rank's bytes sent */

enum { TAG_NOTE = 77 };

/* A failure of MPI itself, or a wait past the time limit: no rank can
   go on, so stop them all. */
static int err_fd = 2;             /* standard error, also on ranks whose stderr is muted */

SHM_NORETURN static void die(const char *what) {
  fflush(stderr);
  dprintf(err_fd, "shmapi: rank %d: %s\n", my_rank, what);
  sup_abort();
  MPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);
}

static void check(int rc) {
  if (rc == MPI_SUCCESS) return;
  char s[MPI_MAX_ERROR_STRING + 64];
  int n = 0;
  MPI_Error_string(rc, s, &n);
  snprintf(s + n, sizeof s - (size_t)n, " (has another rank died?)");
  die(s);
}

int fmpi_init(int *argc, char ***argv) {
  const char *sz = getenv("OMPI_COMM_WORLD_SIZE");
  if (!sz) sz = getenv("PMI_SIZE");
  if (!sz || atoi(sz) < 1) return 0;
  const char *rk = getenv("OMPI_COMM_WORLD_RANK");
  if (!rk) rk = getenv("PMI_RANK");
  sup_join(rk ? atoi(rk) : -1);             /* (before MPI_Init, which may take a while) */
  int prov;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &prov) != MPI_SUCCESS) {
    fprintf(stderr, "shmapi: MPI_Init failed\n");
    return 1;
  }
  started = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks > 1) mem_set_rank(my_rank);
  sup_hook_init(my_rank);
  MPI_Comm node;                     /* the ranks sharing this machine's memory */
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &local_ranks);
    MPI_Comm_free(&node);
  }
  check(MPI_Comm_dup(MPI_COMM_WORLD, &notecomm));
  check(MPI_Comm_dup(MPI_COMM_WORLD, &synccomm));
  check(MPI_Comm_dup(MPI_COMM_WORLD, &allcomm));
  const char *t = getenv("SHMAPI_MPI_TIMEOUT");
  if (t && atof(t) > 0) timeout_s = atof(t);
  seen = calloc((size_t)nranks, sizeof *seen);
  note_req = calloc((size_t)nranks, sizeof *note_req);
  rank_sent = calloc((size_t)nranks, sizeof *rank_sent);
  if (!seen || !note_req || !rank_sent) die("out of memory");
  fmpi_path_reset();
  if (my_rank != 0 && nranks > 1) {
    /* rank 0 alone writes: the others' output goes through fmpi_sync,
       and what every rank would say alike (the checker's diagnostics) is
       said once */
    err_fd = dup(2);
    int null = open("/dev/null", O_WRONLY);
    if (err_fd < 0 || null < 0) die("cannot open /dev/null");
    fflush(stdout);
    dup2(null, 1);
    dup2(null, 2);
    close(null);
  }
  return 0;
}

/* The sub-communicators, one per set of ranks, made when first needed. */
typedef struct CommEnt {
  struct CommEnt *next;
  MPI_Comm comm;
  int n;
  int ranks[];
} CommEnt;
static CommEnt *comms;

int fmpi_finish(int status) {
  if (!started) return status;
  fflush(stdout);
  fflush(stderr);
  while (comms) {
    CommEnt *c = comms;
    comms = c->next;
    if (c->comm != allcomm && !dirty) MPI_Comm_free(&c->comm);
    free(c);
  }
  MPI_Comm_free(&notecomm);
  MPI_Comm_free(&synccomm);
  if (!dirty) MPI_Comm_free(&allcomm);        /* (an abandoned exchange may hold them) */
  long pts[3];
  if (sup_counted(pts))
    dprintf(err_fd, "shmapi: test hook: rank %d passed %ld c, %ld s and %ld o fault points\n", my_rank, pts[0], pts[1],
            pts[2]);
  sup_done(status);
  MPI_Finalize();
  sup_bye();
  free(seen);
  free(note_req);
  free(rank_sent);
  fmpi_release();
  return status;
}

/* Wait for a request.  Polls (so that waiting neither hangs on a dead
   rank nor keeps a core busy for long); when `may_abandon`, a failure
   notice from another rank abandons the wait with a runtime error. */
static void wait_req(MPI_Request *req, bool may_abandon) {
  double start = MPI_Wtime();
  for (long spin = 0;; spin++) {
    int done = 0;
    check(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (may_abandon && spin % 32 == 0) {
      MPI_Status st;
      int note = 0;
      check(MPI_Iprobe(MPI_ANY_SOURCE, TAG_NOTE, notecomm, &note, &st));
      if (note) {
        int x;
        check(MPI_Recv(&x, 1, MPI_INT, st.MPI_SOURCE, TAG_NOTE, notecomm, MPI_STATUS_IGNORE));
        seen[st.MPI_SOURCE]++;
        abandoned = dirty = true;
        /* This rank stops here, without unwinding: the request stays
           pending (the failed rank never joins it), so the memory it
           reads and writes must stay as it is until the process ends.
           The sync reports the failure (rank 0 prints it), then exit. */
        fmpi_sync(NULL, NULL, NULL);
        exit(fmpi_finish(1));
      }
    }
    double now = MPI_Wtime();
    if (now - start > timeout_s) {
      char s[160];
      snprintf(s, sizeof s, "no answer from the other ranks in %g s (SHMAPI_MPI_TIMEOUT): one has died or hangs",
               timeout_s);
      die(s);
    }
    if (spin < 64) continue;
    if (now - start < 1e-3) sched_yield();
    else nanosleep(&(struct timespec){0, 50000}, NULL);
  }
}

bool fmpi_abandoned(void) { return abandoned; }

/* ---- sub-communicators and the exchange ------------------------------------------------- */

static MPI_Comm comm_for(const int *ranks, int n) {
  for (CommEnt *c = comms; c; c = c->next)
    if (c->n == n && !memcmp(c->ranks, ranks, sizeof(int) * (size_t)n)) return c->comm;
  CommEnt *c = malloc(sizeof *c + sizeof(int) * (size_t)n);
  if (!c) die("out of memory");
  c->n = n;
  memcpy(c->ranks, ranks, sizeof(int) * (size_t)n);
  if (n == nranks) {
    c->comm = allcomm;
  } else {
    MPI_Group world, g;
    check(MPI_Comm_group(MPI_COMM_WORLD, &world));
    check(MPI_Group_incl(world, n, ranks, &g));
    check(MPI_Comm_create_group(MPI_COMM_WORLD, g, 0x5a, &c->comm));
    MPI_Group_free(&g);
    MPI_Group_free(&world);
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  }
  c->next = comms;
  comms = c;
  return c->comm;
}

/* The exchange's scratch, released by a runtime error too. */
typedef struct Xch {
  int n;
  int *scount, *rcount, *disp, *len;
  MPI_Datatype *stype, *rtype;
  MPI_Aint *addr;
} Xch;

static void xch_free(void *p) {
  Xch *x = p;
  for (int q = 0; q < x->n; q++) {
    if (x->stype[q] != MPI_BYTE) MPI_Type_free(&x->stype[q]);
    if (x->rtype[q] != MPI_BYTE) MPI_Type_free(&x->rtype[q]);
  }
  mem_free(x->scount);
}

/* An MPI type for the bytes that go from `from` to `to`, at their
   addresses (one message per pair of ranks). */
static MPI_Datatype moves_type(Xch *x, const FmpiMove *mv, int nmv, int from, int to) {
  int k = 0;
  for (int i = 0; i < nmv; i++) {
    if (mv[i].from != from || mv[i].to != to || !mv[i].bytes) continue;
    if (mv[i].bytes > INT_MAX) err_throw("%zu bytes in one piece are too many to move between ranks (2 GiB at most)",
                                        mv[i].bytes);
    if (from == my_rank) sent_bytes += (double)mv[i].bytes;
    x->len[k] = (int)mv[i].bytes;
    MPI_Get_address(from == my_rank ? mv[i].src : mv[i].dst, &x->addr[k]);
    k++;
  }
  if (!k) return MPI_BYTE;
  MPI_Datatype t;
  check(MPI_Type_create_hindexed(k, x->len, x->addr, MPI_BYTE, &t));
  check(MPI_Type_commit(&t));
  return t;
}

void fmpi_exchange(const int *ranks, int n, const FmpiMove *mv, int nmv) {
  MPI_Comm comm = comm_for(ranks, n);
  Xch x;
  memset(&x, 0, sizeof x);
  size_t ints = (sizeof(int) * (size_t)(3 * n + nmv + 1) + 15) & ~(size_t)15;   /* (the pointers after: aligned) */
  size_t types = sizeof(MPI_Datatype) * (size_t)(2 * n);
  char *mem = mem_calloc(ints + types + sizeof(MPI_Aint) * (size_t)(nmv + 1));
  x.scount = (int *)mem;
  x.rcount = x.scount + n;
  x.disp = x.rcount + n;
  x.len = x.disp + n;
  x.stype = (MPI_Datatype *)(mem + ints);
  x.rtype = x.stype + n;
  x.addr = (MPI_Aint *)(x.rtype + n);
  for (int q = 0; q < n; q++) x.stype[q] = x.rtype[q] = MPI_BYTE;
  x.n = n;
  err_defer(xch_free, &x);
  for (int q = 0; q < n; q++) {
    x.stype[q] = moves_type(&x, mv, nmv, my_rank, ranks[q]);
    x.rtype[q] = moves_type(&x, mv, nmv, ranks[q], my_rank);
    x.scount[q] = x.stype[q] != MPI_BYTE;
    x.rcount[q] = x.rtype[q] != MPI_BYTE;
  }
  MPI_Request req;
  check(MPI_Ialltoallw(MPI_BOTTOM, x.scount, x.disp, x.stype, MPI_BOTTOM, x.rcount, x.disp, x.rtype, comm, &req));
  if (sup_point(SUP_COLLECTIVE)) sup_die_here();      /* (the test hook: during a collective) */
  wait_req(&req, true);
  err_undefer(&x);
  xch_free(&x);
}

/* ---- the end of a top-level statement ------------------------------------------------------ */

/* What one rank sent to the sync: its status, error, place of the error,
   bytes sent, output events and the caller's extra bytes. */
typedef struct Report {
  int64_t status;            /* 0 ok, 1 failed, 2 abandoned (another failed) */
  const char *err;
  int64_t nerr, nkey;
  const int64_t *key;
  double sent;
  int64_t refused, limit;    /* status 1 for want of memory: the request and the limit, else 0 */
  const char *log, *extra;
  int64_t nlog, nextra;
} Report;

static void read_report(const char *p, size_t n, Report *r) {
  Rd d = {p, p + n};
  r->status = get_i64(&d);
  r->nerr = get_i64(&d);
  r->err = get_bytes(&d, r->nerr);
  r->nkey = get_i64(&d);
  r->key = (const int64_t *)get_bytes(&d, r->nkey * 8);
  int64_t bits = get_i64(&d);
  memcpy(&r->sent, &bits, sizeof bits);
  r->refused = get_i64(&d);
  r->limit = get_i64(&d);
  r->nlog = get_i64(&d);
  r->log = get_bytes(&d, r->nlog);
  r->nextra = get_i64(&d);
  r->extra = get_bytes(&d, r->nextra);
}

/* "1", "1-3", "0, 2, 5-7": the failed ranks from r0 on whose refusal
   (request and limit) is r0's and that are not yet told (told[r]), to b,
   marked told; their count in *n. */
static void rank_list(Buf *b, const Report *rep, bool *told, int r0, int *n) {
  *n = 0;
  for (int r = r0; r < nranks;) {
    if (told[r] || rep[r].status != 1 || rep[r].refused != rep[r0].refused || rep[r].limit != rep[r0].limit) {
      r++;
      continue;
    }
    int e = r;
    while (e + 1 < nranks && !told[e + 1] && rep[e + 1].status == 1 && rep[e + 1].refused == rep[r0].refused &&
           rep[e + 1].limit == rep[r0].limit)
      e++;
    buf_printf(b, "%s%d", *n ? ", " : "", r);
    if (e > r) buf_printf(b, "%s%d", e > r + 1 ? "-" : ", ", e);
    for (int q = r; q <= e; q++) told[q] = true;
    *n += e - r + 1;
    r = e + 1;
  }
}

/* Every rank that ran out of memory names the limit it hit: after the
   first failure (rank `first`'s, reported whole), a note per request and
   limit for the other ranks refused memory, their ranks listed. */
static void note_refusals(const Report *rep, int first) {
  bool *told = mem_calloc(sizeof *told * (size_t)nranks);
  if (first >= 0) told[first] = true;
  for (int r = 0; r < nranks; r++) {
    if (told[r] || rep[r].status != 1 || !rep[r].refused) continue;
    Buf b = {0}, list = {0};
    int n;
    rank_list(&list, rep, told, r, &n);
    char a[32], l[32];
    buf_printf(&b, "out of memory on rank%s %.*s too: %s more would pass %s limit of %s (%lld and %lld bytes)",
               n > 1 ? "s" : "", (int)list.n, list.p, mem_human(a, sizeof a, (double)rep[r].refused),
               n > 1 ? "each one's" : "its", mem_human(l, sizeof l, (double)rep[r].limit), (long long)rep[r].refused,
               (long long)rep[r].limit);
    buf_putc(&b, 0);
    diag_print(stderr, span_none(), "note", b.p);
    buf_free(&b);
    buf_free(&list);
  }
  fflush(stderr);
  mem_free(told);
}

/* Rank 0: write the merged output, report the first failure; fills the
   statuses of all ranks. */
static void conclude(const char *all, const long long *len, int64_t *status, FmpiMerge merge, FmpiFormat format) {
  Report *rep = mem_calloc(sizeof *rep * (size_t)nranks);
  const char **ex = mem_calloc((sizeof(char *) + sizeof(size_t)) * (size_t)nranks);
  size_t *exn = (size_t *)(ex + nranks);
  Ev *evs = NULL;
  int nev = 0, cap = 0, first = -1;
  for (int r = 0, off = 0; r < nranks; off += (int)len[r], r++) {
    read_report(all + off, (size_t)len[r], &rep[r]);
    status[r] = rep[r].status;
    rank_sent[r] = rep[r].sent;
    ex[r] = rep[r].extra;
    exn[r] = (size_t)rep[r].nextra;
    read_events(rep[r].log, (size_t)rep[r].nlog, r, &evs, &nev, &cap);
    if (rep[r].status == 1 && (first < 0 || key_cmp(rep[r].key, rep[r].nkey, rep[first].key, rep[first].nkey) < 0))
      first = r;
  }
  write_events(stdout, evs, nev, first >= 0 ? rep[first].key : NULL, first >= 0 ? rep[first].nkey : 0, format);
  if (first >= 0) {
    fwrite(rep[first].err, 1, (size_t)rep[first].nerr, stderr);
    fflush(stderr);
    note_refusals(rep, first);
  }
  if (merge) merge(ex, exn, nranks);
  mem_free(evs);
  mem_free(ex);
  mem_free(rep);
}

/* Tell every other rank that this one failed. */
static void send_notices(void) {
  static int one = 1;
  for (int q = 0; q < nranks; q++)
    if (q != my_rank) check(MPI_Isend(&one, 1, MPI_INT, q, TAG_NOTE, notecomm, &note_req[q]));
}

/* After the sync: take the notices not yet received, finish sending ours. */
static void drain_notices(const int64_t *status) {
  for (int e = 0; e < nranks; e++) {
    if (e == my_rank || status[e] != 1) continue;
    for (; seen[e] < 1; seen[e]++) {
      int x;
      check(MPI_Recv(&x, 1, MPI_INT, e, TAG_NOTE, notecomm, MPI_STATUS_IGNORE));
    }
    seen[e] = 0;
  }
  if (status[my_rank] == 1)
    for (int q = 0; q < nranks; q++)
      if (q != my_rank) wait_req(&note_req[q], false);
}

bool fmpi_sync(const char *err, const Buf *extra, FmpiMerge merge) {
  int64_t st = err ? 1 : abandoned ? 2 : 0;
  if (st == 1) send_notices();
  Buf b = {0};
  err_defer(buf_release, &b);
  put_i64(&b, st);
  put_i64(&b, err ? (int64_t)strlen(err) : 0);
  if (err) buf_puts(&b, err);
  fmpi_path_put(&b);
  int64_t bits;
  memcpy(&bits, &sent_bytes, sizeof bits);
  put_i64(&b, bits);
  size_t refused, limit;
  if (!mem_refused(&refused, &limit) || !err) refused = limit = 0;
  put_i64(&b, (int64_t)refused);
  put_i64(&b, (int64_t)limit);
  put_i64(&b, (int64_t)outlog.n);
  if (outlog.n) buf_put(&b, outlog.p, outlog.n);
  put_i64(&b, extra ? (int64_t)extra->n : 0);
  if (extra && extra->n) buf_put(&b, extra->p, extra->n);
  long long mine = (long long)b.n;
  /* (one block, released by an error too: lengths, statuses, counts) */
  long long *len = mem_calloc((sizeof(long long) + sizeof(int64_t) + 2 * sizeof(int)) * (size_t)nranks);
  err_defer(mem_free, len);
  int64_t *status = (int64_t *)(len + nranks);
  int *cnt = (int *)(status + nranks);
  MPI_Request req;
  check(MPI_Igather(&mine, 1, MPI_LONG_LONG, len, 1, MPI_LONG_LONG, 0, synccomm, &req));
  if (sup_point(SUP_SYNC)) sup_die_here();            /* (the test hook: at the end of a statement) */
  wait_req(&req, false);
  char *all = NULL;
  if (my_rank == 0) {
    long long total = 0;
    for (int r = 0; r < nranks; r++) {
      cnt[r] = (int)len[r];
      cnt[nranks + r] = (int)total;
      total += len[r];
    }
    if (total > INT_MAX) die("more than 2 GiB of output in one statement");
    all = mem_alloc((size_t)total + 1);
    err_defer(mem_free, all);
  }
  check(MPI_Igatherv(b.p, (int)mine, MPI_BYTE, all, cnt, cnt + nranks, MPI_BYTE, 0, synccomm, &req));
  wait_req(&req, false);
  if (my_rank == 0) conclude(all, len, status, merge, value_format);
  check(MPI_Ibcast(status, nranks, MPI_INT64_T, 0, synccomm, &req));
  wait_req(&req, false);
  drain_notices(status);
  bool ok = true;
  for (int r = 0; r < nranks; r++) ok &= status[r] == 0;
  if (all) err_undefer(all);
  mem_free(all);
  err_undefer(len);
  mem_free(len);
  err_undefer(&b);
  buf_free(&b);
  buf_reset(&outlog);
  abandoned = false;
  return ok;
}

double fmpi_bytes_crossed(void) {
  double s = 0;
  for (int r = 0; r < nranks; r++) s += rank_sent[r];
  return s;
}

int fmpi_launch(int ranks, int argc, char **argv) {
  if (nranks > 1) {
    fprintf(stderr, "shmapi: --ranks: already running under mpirun on %d ranks\n", nranks);
    return 2;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    fprintf(stderr, "shmapi: --ranks: cannot find this program's path\n");
    return 2;
  }
  exe[n] = 0;
  char np[32];
  snprintf(np, sizeof np, "%d", ranks);
  char **av = calloc((size_t)argc + 16, sizeof *av);
  if (!av) return 2;
  int k = 0;
  av[k++] = "mpirun";
  av[k++] = "-np";
  av[k++] = np;
  av[k++] = "--quiet";                /* shmapi reports its own errors */
  av[k++] = "--oversubscribe";        /* more ranks than cores on this machine is allowed */
  av[k++] = "--bind-to";
  av[k++] = "none";
  if (geteuid() == 0) av[k++] = "--allow-run-as-root";
  av[k++] = exe;
  for (int i = 1; i < argc; i++) av[k++] = argv[i];
  av[k] = NULL;
  int st = sup_run(av, ranks);
  if (st < 0) fprintf(stderr, "shmapi: --ranks runs mpirun, which could not be started (%s)\n%s", strerror(-st), how_to_get);
  free(av);
  return st < 0 ? 2 : st;
}

#else /* one process: no MPI built in */

int fmpi_init(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *sz = getenv("OMPI_COMM_WORLD_SIZE");
  if (!sz) sz = getenv("PMI_SIZE");
  if (sz && atoi(sz) > 1) {
    fprintf(stderr, "shmapi: started by mpirun on %s processes, but this shmapi was built without MPI\n%s", sz,
            how_to_get);
    return 2;
  }
  return 0;
}

int fmpi_finish(int status) { return status; }

int fmpi_launch(int ranks, int argc, char **argv) {
  (void)ranks;
  (void)argc;
  (void)argv;
  fprintf(stderr, "shmapi: --ranks: this shmapi was built without MPI\n%s", how_to_get);
  return 2;
}

bool fmpi_abandoned(void) { return false; }

double fmpi_bytes_crossed(void) { return 0; }

/* With one rank nothing crosses ranks: fabric.c never asks. */
void fmpi_exchange(const int *ranks, int n, const FmpiMove *mv, int nmv) {
  (void)ranks, (void)n, (void)mv, (void)nmv;
  err_throw("internal error: an exchange between ranks without MPI");
}

bool fmpi_sync(const char *err, const Buf *extra, FmpiMerge merge) {
  (void)extra;
  (void)merge;
  return !err;
}

#endif
