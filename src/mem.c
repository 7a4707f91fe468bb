/*
** mem.c — the one allocator, and arenas built on it.
**
** Each block carries a small header recording its size, so mem_in_use() is
** exact and the --max-memory limit can be enforced on every request.
*/
#include <stdlib.h>
#include "common.h"
#include "err.h"

typedef struct MemHdr {
  size_t size;
  size_t scoped;      /* on the scope list (see mem_scope_begin) */
  struct MemHdr *prev, *next;   /* the scope list; the header stays 32 bytes */
} MemHdr;

static size_t in_use;
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
size_t mem_limit(void) { return limit; }
void mem_fail_after(long n) { fail_countdown = n; }

static void check_request(size_t n) {
  if (fail_countdown > 0 && --fail_countdown == 0)
    err_throw("out of memory (injected failure)");
  if (n > ((size_t)1 << 62)) err_throw("out of memory: request of %zu bytes", n);
  if (limit && in_use + n > limit)
    err_throw("out of memory: %zu bytes in use, %zu more requested, limit %zu "
              "(see --max-memory)", in_use, n, limit);
}

void *mem_alloc(size_t n) {
  check_request(n);
  MemHdr *h = malloc(sizeof(MemHdr) + n);
  if (!h) err_throw("out of memory: the system refused %zu bytes", n);
  h->size = n;
  h->scoped = 0;
  if (scope_depth) scope_link(h);
  in_use += n;
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
  bool scoped = h->scoped;
  scope_unlink(h);
  MemHdr *nh = realloc(h, sizeof(MemHdr) + n);
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
  free(h);
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
  while (scope_list) scope_unlink(scope_list);
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
