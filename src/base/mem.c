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
** CACHE_BYTES of them are kept, and they go back to malloc at exit.  Under
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
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "defs.h"
#include "mem.h"
#include <stdio.h>
#include "err.h"

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

static size_t in_use;
static size_t peak_in_use;     /* the most ever in use at once (the pool's bound) */
static size_t limit;
static long fail_countdown;

/* Blocks allocated while a scope is open, newest first. */
static MemHdr *scope_list;
static int scope_depth;

static void scope_link(MemHdr *h) {
  h->scoped = 1;
  h->prev = NULL;
  h->next = scope_list;
  if (scope_list) scope_list->prev = h;
  scope_list = h;
}

static void scope_unlink(MemHdr *h) {
  if (!h->scoped) return;
  if (h->prev) h->prev->next = h->next;
  else scope_list = h->next;
  if (h->next) h->next->prev = h->prev;
  h->scoped = 0;
}

size_t mem_in_use(void) { return in_use; }
void mem_set_limit(size_t bytes) { limit = bytes; }
void mem_fail_after(long n) { fail_countdown = n; }

static void check_request(size_t n) {
  if (fail_countdown > 0 && --fail_countdown == 0)
    err_throw("out of memory (injected failure)");
  if (n > ((size_t)1 << 62)) err_throw("out of memory: request of %zu bytes", n);
  if (limit && in_use + n > limit) {
    char a[32], b[32];
    err_throw("out of memory: %s more would pass the limit of %s (%zu and %zu bytes; see --max-memory)",
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
#define CACHE_CLASSES (CACHE_MAX / 16 + 1)
#define CACHE_BYTES ((size_t)8 << 20)

static MemHdr *cache[CACHE_CLASSES];     /* linked through ->next */
static size_t cached_bytes;
static bool cache_ready;      /* cache_on and on_valgrind are set */
static bool cache_on;         /* blocks are cached: the exit handler is registered */
static bool on_valgrind;

static inline size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

static void cache_release(void) {
  for (int c = 0; c < CACHE_CLASSES; c++)
    while (cache[c]) {
      MemHdr *h = cache[c];
      cache[c] = h->next;
      free(h);
    }
  cached_bytes = 0;
}

/* Before the first block is allocated. */
static void cache_init(void) {
  cache_ready = true;
  cache_on = MEM_CACHE && atexit(cache_release) == 0;
#ifdef RUNNING_ON_VALGRIND
  on_valgrind = RUNNING_ON_VALGRIND != 0;
#endif
}

/* Keep a block whose user part is no longer needed; false: free it. */
static inline bool cache_put(MemHdr *h) {
  size_t c = (h->size + 15) >> 4;
  if (!cache_on || c >= CACHE_CLASSES || cached_bytes + c * 16 > CACHE_BYTES) return false;
  h->next = cache[c];
  cache[c] = h;
  cached_bytes += c * 16;
  if (on_valgrind) VALGRIND_MAKE_MEM_NOACCESS(h + 1, c * 16);
  return true;
}

/* ---- large blocks ------------------------------------------------------- */

#define LARGE_MIN ((size_t)1 << 20)   /* psum_scatter's 2 MiB results of 8 x 16 MiB reuse pooled pages */
#define POOL_MAX ((size_t)256 << 20)
#define POOL_SLOTS 64

static size_t page_size;

/* Freed large blocks kept mapped (their pages already faulted in), best
   fit first; ->size is what each can hold. */
static MemHdr *pool[POOL_SLOTS];
static int npool;
static size_t pool_bytes;

/* The mapping of a large block of n bytes: a header page, then the data. */
static size_t large_span(size_t n) { return page_size + ((n + page_size - 1) & ~(page_size - 1)); }
static unsigned char *large_base(MemHdr *h) { return (unsigned char *)(h + 1) - page_size; }

/* The pool's bound: POOL_MAX, or as much as the program has held at once
   when that is more (a loop whose arrays were all live together at its
   peak -- the blocks of an all_gather and its result -- finds them all
   again at the next step), and a quarter of --max-memory when set. */
static size_t pool_max(void) {
  size_t m = peak_in_use > POOL_MAX ? peak_in_use : POOL_MAX;
  return limit && limit / 4 < m ? limit / 4 : m;
}

/* A large block, or NULL when it should come from malloc instead. */
static MemHdr *large_alloc(size_t n) {
  if (!MEM_CACHE || on_valgrind || n < LARGE_MIN) return NULL;
  if (!page_size) page_size = (size_t)sysconf(_SC_PAGESIZE);
  if (page_size < sizeof(MemHdr) || page_size > LARGE_MIN) return NULL;
  size_t span = large_span(n);
  int best = -1;
  for (int i = 0; i < npool; i++)
    if (pool[i]->size >= n && (best < 0 || pool[i]->size < pool[best]->size)) best = i;
  if (best >= 0) {
    MemHdr *h = pool[best];
    pool[best] = pool[--npool];
    size_t had = large_span(h->size);
    pool_bytes -= had;
    if (had > span) munmap(large_base(h) + span, had - span);   /* the rest goes back */
    return h;
  }
  unsigned char *base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  MemHdr *h = (MemHdr *)(base + page_size) - 1;
  h->mapped = 1;
  return h;
}

static void large_free(MemHdr *h) {
  size_t span = large_span(h->size);
  if (npool < POOL_SLOTS && pool_bytes + span <= pool_max()) {
    pool[npool++] = h;
    pool_bytes += span;
    return;
  }
  munmap(large_base(h), span);
}

/* A new block for n bytes, from the system: large ones mapped (or from the
   pool), the others from malloc. */
static MemHdr *block_new(size_t n) {
  MemHdr *h = large_alloc(n);
  if (h) return h;
  h = malloc(sizeof(MemHdr) + round16(n));
  if (!h) err_throw("out of memory: the system refused %zu bytes", n);
  h->mapped = 0;
  return h;
}

static void block_free(MemHdr *h) {
  if (h->mapped) large_free(h);
  else free(h);
}

void *mem_alloc(size_t n) {
  check_request(n);
  MemHdr *h;
  size_t c = (n + 15) >> 4;
  if (c < CACHE_CLASSES && cache[c]) {
    h = cache[c];
    cache[c] = h->next;
    cached_bytes -= c * 16;
    if (on_valgrind) VALGRIND_MAKE_MEM_UNDEFINED(h + 1, c * 16);
  } else {
    if (!cache_ready) cache_init();
    h = block_new(n);
  }
  h->size = n;
  h->scoped = 0;
  if (scope_depth) scope_link(h);
  in_use += n;
  if (in_use > peak_in_use) peak_in_use = in_use;
  return h + 1;
}

void *mem_calloc(size_t n) {
  void *p = mem_alloc(n);
  memset(p, 0, n);
  return p;
}

void *mem_realloc(void *p, size_t n) {
  if (!p) return mem_alloc(n);
  MemHdr *h = (MemHdr *)p - 1;
  size_t old = h->size;
  if (n > old) check_request(n - old);
  if (h->mapped || n >= LARGE_MIN) {
    /* Into or out of a mapping of its own: a new block and a copy. */
    MemHdr *nh = block_new(n);
    memcpy(nh + 1, h + 1, old < n ? old : n);
    bool was_scoped = h->scoped;
    scope_unlink(h);
    block_free(h);
    nh->size = n;
    nh->scoped = 0;
    if (was_scoped) scope_link(nh);
    in_use = in_use - old + n;
    return nh + 1;
  }
  bool scoped = h->scoped;
  scope_unlink(h);
  MemHdr *nh = realloc(h, sizeof(MemHdr) + round16(n));
  if (!nh) {
    if (scoped) scope_link(h);
    err_throw("out of memory: the system refused %zu bytes", n);
  }
  if (scoped) scope_link(nh);
  nh->size = n;
  in_use = in_use - old + n;
  return nh + 1;
}

size_t mem_size(const void *p) { return p ? ((const MemHdr *)p - 1)->size : 0; }

void mem_free(void *p) {
  if (!p) return;
  MemHdr *h = (MemHdr *)p - 1;
  scope_unlink(h);
  in_use -= h->size;
  if (h->mapped || !cache_put(h)) block_free(h);
}

void mem_discard(void *p, size_t off, size_t len) {
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

static int scope_token;

/* A runtime error unwinds through an open scope: every block it allocated
   and did not free is garbage. */
static void scope_abort(void *token) {
  (void)token;
  while (scope_list) mem_free(scope_list + 1);
  scope_depth = 0;
}

void mem_scope_begin(void) {
  scope_depth++;
  err_defer(scope_abort, &scope_token);
}

void mem_scope_end(void) {
  err_undefer(&scope_token);
  if (--scope_depth > 0) return;
  for (MemHdr *h = scope_list; h; h = h->next) h->scoped = 0;   /* off the list */
  scope_list = NULL;
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
