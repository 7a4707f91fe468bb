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
  size_t pad_;        /* keep the payload 16-byte aligned */
} MemHdr;

static size_t in_use;
static size_t limit;
static long fail_countdown;

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
  MemHdr *nh = realloc(h, sizeof(MemHdr) + n);
  if (!nh) err_throw("out of memory: the system refused %zu bytes", n);
  nh->size = n;
  in_use = in_use - old + n;
  return nh + 1;
}

void mem_free(void *p) {
  if (!p) return;
  MemHdr *h = (MemHdr *)p - 1;
  in_use -= h->size;
  free(h);
}

char *mem_strndup(const char *s, size_t n) {
  char *r = mem_alloc(n + 1);
  memcpy(r, s, n);
  r[n] = 0;
  return r;
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
