/*
** state.h — the interpreter's state: what used to be mutable globals.
**
** Everything a run changes lives in one ShmState, so that two programs can
** be loaded and run in one process, one after the other or side by side in
** two threads (the embedding API, include/shmapi.h, makes one per shmapi_State).
** The state of the base layer — the error chain (err.c), the memory
** accounting, limits, scopes and block caches (mem.c), the source files and
** diagnostics (diag.c) — is reached through the thread's current state,
** state_cur(): passing it explicitly would touch nearly every signature of
** the interpreter (every allocation), for no gain, since a state runs on
** one thread at a time.  That thread-local pointer is the one mutable
** global of the interpreter; the public API sets it on entry to every call
** and restores it on return.  A thread that uses the layers without making
** a state (the C test drivers, the fuzzers) gets one of its own on first
** use, released when the thread ends (state_implicit).
**
** Layers above base keep their per-state data in a slot (fabric.c's
** statistics), made on first use and released with the state.
**
** What stays process-wide, by nature, and why: the libraries opened on
** first use (dynlib.h: OpenBLAS, libzip, FFTW — opened once, under
** pthread_once, shared read-only afterwards); the table of primitives
** (prims.c, built once under pthread_once); FFTW's planner (fft.c, behind
** its lock); MPI (fabmpi.c: one MPI_Init per process; a library state never
** runs across ranks); the REPL's line editor and pager (libedit's
** completion callback and the SIGINT handler take no user pointer: one
** interactive REPL per process).
*/
#ifndef SHM_STATE_H
#define SHM_STATE_H

#include <signal.h>
#include <stddef.h>
#include "defs.h"

struct ErrJmp;
struct MemHdr;

/* A place text goes: print output, or rendered diagnostics. */
typedef void (*StateSink)(void *ud, const char *text, size_t n);

enum { STATE_MAX_DEFER = 8192 };
enum { MEM_CACHE_CLASSES = 4096 / 16 + 1, MEM_POOL_SLOTS = 64 };

/* Upper layers' slots. */
enum { SLOT_FABRIC, SLOT_COUNT };

typedef struct StateDefer {
  void (*fn)(void *);
  void *p;
} StateDefer;

typedef struct ShmState {
  /* err.c: the boundaries, the cleanups, the last message */
  struct ErrJmp *err_top;
  int err_ndefer;
  StateDefer *defers;              /* STATE_MAX_DEFER of them */
  char message[1024];
  /* mem.c: accounting, limit, failure injection, scopes, caches */
  size_t in_use, peak_in_use, limit;
  long fail_countdown;
  int limit_rank;           /* under ranks, this process's rank (named in a memory error), else 0 */
  bool limit_ranked;        /* running as one of several ranks */
  size_t refused, refused_limit;   /* the last request the limit refused, and the limit then (0: none) */
  struct MemHdr *scope_list;
  int scope_depth, scope_token;
  struct MemHdr *cache[MEM_CACHE_CLASSES];
  size_t cached_bytes;
  struct MemHdr *pool[MEM_POOL_SLOTS];
  int npool;
  size_t pool_bytes;
  /* diag.c: the source files and the collected diagnostics */
  struct SrcFile *files;
  int nfiles, capfiles;
  struct Diag *diags;
  int ndiags, capdiags, nheld;
  Span *warned;             /* the places warned about (diag_warning, diag_remark) */
  /* the counters of random bits when an equation does not say: false as
     current JAX (jax_threefry_partitionable), true as JAX before 0.5 (set
     by --jax, --threefry-partitionable or a `# jax VERSION` header: rng.c) */
  bool rng_old_counters;
  bool jax_names;           /* show prints types and casts as JAX prints them today ({V:i}, pvary): --jax-names */
  bool no_fuse;             /* elementwise chains run one equation at a time (--no-fuse; run/fuse.h) */
  int nwarned, capwarned;
  /* a request to stop the running statement (the REPL's ^C, shmapi_interrupt) */
  volatile sig_atomic_t interrupted;
  /* where print output and runtime errors go (NULL: dropped); a runtime
     error (with its traceback, diag.h, or NULL) is handed to on_report
     when set (the API keeps it as a value),
     else rendered to errout (diag_report) */
  StateSink out, errout;
  void *out_ud, *errout_ud;
  void (*on_report)(void *ud, Span sp, const char *kind, const char *msg, const char *trace);
  void *on_report_ud;
  /* where a picture (visualize: its text and its SVG) goes when set; else
     its text is print output */
  void (*on_picture)(void *ud, const char *text, const char *svg);
  void *on_picture_ud;
  /* upper layers' data, and how to release it */
  void *slot[SLOT_COUNT];
  void (*slot_free[SLOT_COUNT])(void *);
} ShmState;

/* A new state (memory from malloc: NULL when there is none), and its end:
   its slots, files and diagnostics and its cached blocks are released;
   returns the bytes still counted in use before the caches went (0 when
   whoever used the state released everything: a leak check). */
ShmState *state_new(void);
size_t state_free(ShmState *s);

/* The thread's current state, and switching it (returns the previous one,
   to be restored). */
extern _Thread_local ShmState *state_tls;
ShmState *state_implicit(void);
static inline ShmState *state_cur(void) {
  ShmState *s = state_tls;
  return s ? s : state_implicit();
}
static inline ShmState *state_enter(ShmState *s) {
  ShmState *prev = state_tls;
  state_tls = s;
  return prev;
}

/* Each base module's part of a state, released (err.c, mem.c, diag.c; the
   state module calls them without including their headers, which include
   this one). */
void diag_state_release(ShmState *s);
void mem_state_release(ShmState *s);

/* Print output to stdout, diagnostics to stderr: the program's sinks, and
   those of an implicit state (a library state has none until given). */
void state_std_sinks(ShmState *s);

/* Write to the current state's sinks. */
void state_out(const char *text, size_t n);
void state_errout(const char *text, size_t n);

#endif
