/*
** mem.h — the allocator.
**
** Every byte shmapi allocates comes from mem_alloc / mem_realloc, so that
** one place can count memory, enforce the --max-memory limit and inject
** failures in tests.  On failure these functions do not return NULL: they
** raise a runtime error through err.h's boundary.
**
** The accounting, the limit and the caches are those of the thread's
** current state (state.h).
**
** An Arena is a bump allocator for things that live and die together (the
** AST of a file, the checked program of a REPL statement).  Arena memory is
** released all at once by arena_free.
*/
#ifndef SHM_MEM_H
#define SHM_MEM_H

#include <stddef.h>
#include <stdint.h>

void *mem_alloc(size_t n);
void *mem_calloc(size_t n);
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
char *mem_strndup(const char *s, size_t n);
/* The size a block was allocated with (0 for NULL). */
size_t mem_size(const void *p);

/* Bytes [off, off + len) of block p will not be read again before p is
   freed (an array being split into blocks that dies as it goes, eval.c):
   a large block gives the whole pages among them back to the system now,
   so they stop counting toward the process's memory (written again, they
   start as zeros).  Other blocks keep them.  Never fails. */
void mem_discard(void *p, size_t off, size_t len);

/* Bytes currently allocated through mem_* (arrays included). */
size_t mem_in_use(void);
/* Limit for mem_in_use(); 0 = no limit.  Exceeding it is a runtime error. */
void mem_set_limit(size_t bytes);
size_t mem_limit(void);
/* Under several ranks: this process is rank `rank`, which a memory error
   names ("out of memory on rank 2: ..."). */
void mem_set_rank(int rank);
/* Whether the limit refused a request since the last call, and which
   (its size and the limit then); each call forgets it. */
bool mem_refused(size_t *request, size_t *limit);
/* A byte count as "896 B", "3.5 KiB", "4.0 MiB" or "1.25 GiB", in out. */
const char *mem_human(char *out, size_t n, double bytes);
/* Test switch: make the Nth allocation from now fail (0 = off).  The
   command line sets it from SHMAPI_FAIL_ALLOC=N. */
void mem_fail_after(long n);

/* Scopes, for pure computations (a primitive's kernel, a collective):
   code between mem_scope_begin and mem_scope_end must leave nothing it
   allocates reachable from outside until the scope ends, except through
   its results.  If a runtime error unwinds through the scope, every block
   allocated in it and not yet freed is freed (err.h cleanups), so such
   code needs no cleanups of its own — except that those blocks are freed
   as raw memory: a block that holds references to things allocated
   outside the scope (a Val holding an operand's blocks) needs a cleanup
   that drops them, and references taken on outside things must be given
   back by one.  Scopes nest; the outermost counts. */
void mem_scope_begin(void);
void mem_scope_end(void);

typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
  ArenaChunk *head;
  size_t used, cap;
} Arena;

void *arena_alloc(Arena *a, size_t n);  /* zeroed, 16-byte aligned */
char *arena_strndup(Arena *a, const char *s, size_t n);
void arena_free(Arena *a);

/* Growable vector helper: ensure room for `need` items in *pv of *pcap. */
#define VEC_GROW(pv, pcap, need)                                           \
  do {                                                                     \
    if ((need) > (pcap)) {                                                 \
      int nc__ = (pcap) ? (pcap) * 2 : 8;                                  \
      while (nc__ < (need)) nc__ *= 2;                                     \
      (pv) = mem_realloc((pv), sizeof(*(pv)) * (size_t)nc__);              \
      (pcap) = nc__;                                                       \
    }                                                                      \
  } while (0)

#endif
