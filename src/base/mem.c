/*
** mem.c — the one allocator, and arenas built on it.
**
** Each block carries a small header recording its size, so mem_in_use() is
** exact and the --max-memory limit can be enforced on every request.
**
** Small blocks are recycled: a freed block of at most CACHE_MAX bytes goes
** on the free list of its size class (multiples of 16 bytes) instead of
** back to malloc, and the next request of that class takes it, so the
** interpreter's many small arrays and values cost no malloc/free.  Cached
** blocks are not in use (mem_in_use does not count them), at most
** CACHE_BYTES of them are kept, and they go back to malloc when the state
** ends.  Under
** AddressSanitizer nothing is cached (so it sees every use after free);
** under Valgrind a cached block is marked inaccessible.
**
** Large blocks (array buffers of LARGE_MIN bytes or more) are mapped on
** their own, and a freed one is kept, still mapped, in a pool (at most
** POOL_MAX bytes or the most the program held at once, whichever is more,
** and at most a quarter of --max-memory) that later large requests
** take first, best fit, giving back any excess pages.  A fresh mapping is
** first touched when a kernel writes its result: one page fault per 4 KiB,
** which for a 16 MiB array costs several times the write itself.  A pooled
** block was touched already, so a program that computes arrays of the same
** sizes again (a loop, a training step, the same call twice) writes into
** memory that costs no faults.  Under AddressSanitizer or Valgrind every
** block comes from malloc, where their checks of out-of-bounds accesses
** and leaks work.
*/
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "defs.h"
#include "mem.h"
#include <stdio.h>
#include "err.h"
#include "state.h"

#if defined(__SANITIZE_ADDRESS__)
#define MEM_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEM_CACHE 0
#endif
#endif
#ifndef MEM_CACHE
#define MEM_CACHE 1
#endif

#if defined(__has_include) && !defined(SHM_NO_VALGRIND)   /* -DSHM_NO_VALGRIND: no hints */
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#endif
#endif
#ifndef VALGRIND_MAKE_MEM_NOACCESS
#define VALGRIND_MAKE_MEM_NOACCESS(p, n) ((void)0)
#define VALGRIND_MAKE_MEM_UNDEFINED(p, n) ((void)0)
#endif

typedef struct MemHdr {
  size_t size;
  uint32_t scoped;    /* on the scope list (see mem_scope_begin) */
  uint32_t mapped;    /* a large block: mapped on its own (large_alloc) */
  struct MemHdr *prev, *next;   /* the scope list; the header stays 32 bytes */
} MemHdr;

/* The accounting, the limit, the failure switch, the scopes and the block
   caches are the current state's (state.h: in_use, peak_in_use -- the most
   ever in use at once, the pool's bound --, limit, fail_countdown,
   scope_list -- the blocks allocated while a scope is open, newest first
   --, cache, pool).  The caches are per state rather than process-wide:
   a block is freed by the state that allocated it, the hot path takes no
   lock, and a state's cached blocks go back to the system when it ends. */

static void scope_link(ShmState *s, MemHdr *h) {
  h->scoped = 1;
  h->prev = NULL;
  h->next = s->scope_list;
  if (s->scope_list) s->scope_list->prev = h;
  s->scope_list = h;
}

static void scope_unlink(ShmState *s, MemHdr *h) {
  if (!h->scoped) return;
  if (h->prev) h->prev->next = h->next;
  else s->scope_list = h->next;
  if (h->next) h->next->prev = h->prev;
  h->scoped = 0;
}

size_t mem_in_use(void) { return state_cur()->in_use; }
size_t mem_limit(void) { return state_cur()->limit; }
void mem_set_limit(size_t bytes) { state_cur()->limit = bytes; }
void mem_fail_after(long n) { state_cur()->fail_countdown = n; }

void mem_set_rank(int rank) {
  state_cur()->limit_rank = rank;
  state_cur()->limit_ranked = true;
}

bool mem_refused(size_t *request, size_t *limit) {
  ShmState *s = state_cur();
  *request = s->refused;
  *limit = s->refused_limit;
  s->refused = s->refused_limit = 0;
  return *request != 0;
}

static void check_request(ShmState *s, size_t n) {
  size_t limit = s->limit;
  if (s->fail_countdown > 0 && --s->fail_countdown == 0)
    err_throw("out of memory (injected failure)");
  if (n > ((size_t)1 << 62)) err_throw("out of memory: request of %zu bytes", n);
  if (limit && s->in_use + n > limit) {
    char a[32], b[32], on[32] = "";
    s->refused = n;
    s->refused_limit = limit;
    if (s->limit_ranked) snprintf(on, sizeof on, " on rank %d", s->limit_rank);
    err_throw("out of memory%s: %s more would pass the limit of %s (%zu and %zu bytes; see --max-memory)", on,
              mem_human(a, sizeof a, (double)n), mem_human(b, sizeof b, (double)limit), n, limit);
  }
}

const char *mem_human(char *out, size_t n, double bytes) {
  if (bytes < 1024) snprintf(out, n, "%.0f B", bytes);
  else if (bytes < 1024.0 * 1024) snprintf(out, n, "%.1f KiB", bytes / 1024);
  else if (bytes < 1024.0 * 1024 * 1024) snprintf(out, n, "%.1f MiB", bytes / 1024 / 1024);
  else snprintf(out, n, "%.2f GiB", bytes / 1024 / 1024 / 1024);
  return out;
}

/* ---- the small-block cache ------------------------------------------------- */

/* Every block is allocated with its size rounded up to a multiple of 16
   (its class), so any block of a class can serve any request of it. */
#define CACHE_MAX 4096
#define CACHE_CLASSES MEM_CACHE_CLASSES    /* (CACHE_MAX / 16 + 1) */
#define CACHE_BYTES ((size_t)8 << 20)

/* Whether the program runs under Valgrind, and the page size: facts of the
   process, found once (pthread_once) and only read afterwards. */
static bool on_valgrind;
static size_t page_size;
static pthread_once_t facts_once = PTHREAD_ONCE_INIT;

static void facts_init(void) {
#ifdef RUNNING_ON_VALGRIND
  on_valgrind = RUNNING_ON_VALGRIND != 0;
#endif
  page_size = (size_t)sysconf(_SC_PAGESIZE);
}

static inline size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Keep a block whose user part is no longer needed; false: free it. */
static inline bool cache_put(ShmState *s, MemHdr *h) {
  size_t c = (h->size + 15) >> 4;
  if (!MEM_CACHE || c >= CACHE_CLASSES || s->cached_bytes + c * 16 > CACHE_BYTES) return false;
  h->next = s->cache[c];
  s->cache[c] = h;
  s->cached_bytes += c * 16;
  if (on_valgrind) VALGRIND_MAKE_MEM_NOACCESS(h + 1, c * 16);
  return true;
}

/* ---- large blocks ------------------------------------------------------- */

#define LARGE_MIN ((size_t)1 << 20)   /* psum_scatter's 2 MiB results of 8 x 16 MiB reuse pooled pages */
#define POOL_MAX ((size_t)256 << 20)
#define POOL_SLOTS MEM_POOL_SLOTS

/* The state's pool: freed large blocks kept mapped (their pages already
   faulted in), best fit first; ->size is what each can hold. */

/* The mapping of a large block of n bytes: a header page, then the data. */
static size_t large_span(size_t n) { return page_size + ((n + page_size - 1) & ~(page_size - 1)); }
static unsigned char *large_base(MemHdr *h) { return (unsigned char *)(h + 1) - page_size; }

/* The pool's bound: POOL_MAX, or as much as the program has held at once
   when that is more (a loop whose arrays were all live together at its
   peak -- the blocks of an all_gather and its result -- finds them all
   again at the next step), and a quarter of --max-memory when set. */
static size_t pool_max(const ShmState *s) {
  size_t m = s->peak_in_use > POOL_MAX ? s->peak_in_use : POOL_MAX;
  return s->limit && s->limit / 4 < m ? s->limit / 4 : m;
}

/* A large block, or NULL when it should come from malloc instead. */
static MemHdr *large_alloc(ShmState *s, size_t n) {
  if (!MEM_CACHE || on_valgrind || n < LARGE_MIN) return NULL;
  if (page_size < sizeof(MemHdr) || page_size > LARGE_MIN) return NULL;
  size_t span = large_span(n);
  MemHdr **pool = s->pool;
  int best = -1;
  for (int i = 0; i < s->npool; i++)
    if (pool[i]->size >= n && (best < 0 || pool[i]->size < pool[best]->size)) best = i;
  if (best >= 0) {
    MemHdr *h = pool[best];
    pool[best] = pool[--s->npool];
    size_t had = large_span(h->size);
    s->pool_bytes -= had;
    if (had > span) munmap(large_base(h) + span, had - span);   /* the rest goes back */
    return h;
  }
  unsigned char *base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  MemHdr *h = (MemHdr *)(base + page_size) - 1;
  h->mapped = 1;
  return h;
}

static void large_free(ShmState *s, MemHdr *h) {
  size_t span = large_span(h->size);
  if (s->npool < POOL_SLOTS && s->pool_bytes + span <= pool_max(s)) {
    s->pool[s->npool++] = h;
    s->pool_bytes += span;
    return;
  }
  munmap(large_base(h), span);
}

/* A new block for n bytes, from the system: large ones mapped (or from the
   pool), the others from malloc. */
static MemHdr *block_new(ShmState *s, size_t n) {
  MemHdr *h = large_alloc(s, n);
  if (h) return h;
  h = malloc(sizeof(MemHdr) + round16(n));
  if (!h) err_throw("out of memory: the system refused %zu bytes", n);
  h->mapped = 0;
  return h;
}

static void block_free(ShmState *s, MemHdr *h) {
  if (h->mapped) large_free(s, h);
  else free(h);
}

void *mem_alloc(size_t n) {
  ShmState *s = state_cur();
  check_request(s, n);
  MemHdr *h;
  size_t c = (n + 15) >> 4;
  if (c < CACHE_CLASSES && s->cache[c]) {
    h = s->cache[c];
    s->cache[c] = h->next;
    s->cached_bytes -= c * 16;
    if (on_valgrind) VALGRIND_MAKE_MEM_UNDEFINED(h + 1, c * 16);
  } else {
    pthread_once(&facts_once, facts_init);
    h = block_new(s, n);
  }
  h->size = n;
  h->scoped = 0;
  if (s->scope_depth) scope_link(s, h);
  s->in_use += n;
  if (s->in_use > s->peak_in_use) s->peak_in_use = s->in_use;
  return h + 1;
}

void *mem_calloc(size_t n) {
  void *p = mem_alloc(n);
  memset(p, 0, n);
  return p;
}

void *mem_realloc(void *p, size_t n) {
  if (!p) return mem_alloc(n);
  ShmState *s = state_cur();
  MemHdr *h = (MemHdr *)p - 1;
  size_t old = h->size;
  if (n > old) check_request(s, n - old);
  if (h->mapped || n >= LARGE_MIN) {
    /* Into or out of a mapping of its own: a new block and a copy. */
    pthread_once(&facts_once, facts_init);
    MemHdr *nh = block_new(s, n);
    memcpy(nh + 1, h + 1, old < n ? old : n);
    bool was_scoped = h->scoped;
    scope_unlink(s, h);
    block_free(s, h);
    nh->size = n;
    nh->scoped = 0;
    if (was_scoped) scope_link(s, nh);
    s->in_use = s->in_use - old + n;
    return nh + 1;
  }
  bool scoped = h->scoped;
  scope_unlink(s, h);
  MemHdr *nh = realloc(h, sizeof(MemHdr) + round16(n));
  if (!nh) {
    if (scoped) scope_link(s, h);
    err_throw("out of memory: the system refused %zu bytes", n);
  }
  if (scoped) scope_link(s, nh);
  nh->size = n;
  s->in_use = s->in_use - old + n;
  return nh + 1;
}

size_t mem_size(const void *p) { return p ? ((const MemHdr *)p - 1)->size : 0; }

void mem_free(void *p) {
  if (!p) return;
  ShmState *s = state_cur();
  MemHdr *h = (MemHdr *)p - 1;
  scope_unlink(s, h);
  s->in_use -= h->size;
  if (h->mapped || !cache_put(s, h)) block_free(s, h);
}

/* A state ends: its cached and pooled blocks go back to the system. */
void mem_state_release(ShmState *s) {
  for (int c = 0; c < CACHE_CLASSES; c++)
    while (s->cache[c]) {
      MemHdr *h = s->cache[c];
      s->cache[c] = h->next;
      free(h);
    }
  s->cached_bytes = 0;
  while (s->npool) {
    MemHdr *h = s->pool[--s->npool];
    munmap(large_base(h), large_span(h->size));
  }
  s->pool_bytes = 0;
}

void mem_discard(void *p, size_t off, size_t len) {
  pthread_once(&facts_once, facts_init);
  MemHdr *h = p ? (MemHdr *)p - 1 : NULL;
  if (!h || !h->mapped || !page_size || off >= h->size) return;
  if (len > h->size - off) len = h->size - off;
  uintptr_t lo = (uintptr_t)p + off, hi = lo + len;
  lo = (lo + page_size - 1) & ~(uintptr_t)(page_size - 1);
  hi &= ~(uintptr_t)(page_size - 1);
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

char *mem_strndup(const char *s, size_t n) {
  char *r = mem_alloc(n + 1);
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

/* ---- scopes -------------------------------------------------------------- */

/* A runtime error unwinds through an open scope: every block it allocated
   and did not free is garbage.  (The cleanup's token is the state's
   scope_token.) */
static void scope_abort(void *token) {
  (void)token;
  ShmState *s = state_cur();
  while (s->scope_list) mem_free(s->scope_list + 1);
  s->scope_depth = 0;
}

void mem_scope_begin(void) {
  ShmState *s = state_cur();
  s->scope_depth++;
  err_defer(scope_abort, &s->scope_token);
}

void mem_scope_end(void) {
  ShmState *s = state_cur();
  err_undefer(&s->scope_token);
  if (--s->scope_depth > 0) return;
  for (MemHdr *h = s->scope_list; h; h = h->next) h->scoped = 0;   /* off the list */
  s->scope_list = NULL;
}

/* ---- arenas ------------------------------------------------------------ */

struct ArenaChunk {
  ArenaChunk *next;
  size_t cap;
  size_t pad_;
  size_t pad2_;
  unsigned char data[];
};

void *arena_alloc(Arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!a->head || a->used + n > a->cap) {
    size_t cap = n > 16384 ? n : 16384;
    ArenaChunk *c = mem_alloc(sizeof(ArenaChunk) + cap);
    c->next = a->head;
    c->cap = cap;
    a->head = c;
    a->used = 0;
    a->cap = cap;
  }
  void *p = a->head->data + a->used;
  a->used += n;
  memset(p, 0, n);
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *r = arena_alloc(a, n + 1);
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

void arena_free(Arena *a) {
  ArenaChunk *c = a->head;
  while (c) {
    ArenaChunk *n = c->next;
    mem_free(c);
    c = n;
  }
  a->head = NULL;
  a->used = a->cap = 0;
}
