/*
** defs.h — the definitions every file of shmapi needs: limits, attribute
** macros, source spans (byte ranges into a loaded file, turned into line
** and column only when a diagnostic is printed), and the small string
** slice `Str` that the front end passes around instead of copying text.
** Nothing here calls anything: the allocator and the error boundary,
** which use these, include this alone.
*/
#ifndef SHM_DEFS_H
#define SHM_DEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SHM_VERSION "0.1.0"

/* Largest rank an array may have.  Ranks above this get a diagnostic. */
#define SHM_MAXRANK 16
/* Largest number of axes a mesh may have (variance sets are bitmasks). */
#define SHM_MAXAXES 16
/* Largest number of devices (instances) in a mesh. */
#define SHM_MAX_INSTANCES (1 << 22)

#if defined(__GNUC__)
#define SHM_NORETURN __attribute__((noreturn))
#define SHM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SHM_NORETURN
#define SHM_PRINTF(a, b)
#endif

/* Loops whose elements are independent, also compiled for AVX2 and for
   AVX-512 on x86-64 (target_clones: the copy for the machine is chosen
   once, at load), 4 or 8 doubles, 8 or 16 floats per instruction
   instead of 2 or 4.  The width changes no result: each element gets the
   same operations in the same order, and ISO C mode contracts nothing
   into FMAs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SHM_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SHM_WIDE
#endif

/* A slice of source text (or of any stable buffer).  Not NUL-terminated. */
typedef struct Str {
  const char *p;
  int n;
} Str;

static inline Str str_c(const char *s) { Str r = {s, (int)strlen(s)}; return r; }
static inline bool str_eq(Str a, Str b) {
  return a.n == b.n && memcmp(a.p, b.p, (size_t)a.n) == 0;
}
static inline bool str_eqc(Str a, const char *c) {
  return (int)strlen(c) == a.n && memcmp(a.p, c, (size_t)a.n) == 0;
}

/* A byte range of a loaded source file (diag.c owns the files). */
typedef struct Span {
  int file;      /* index into the diag file table; -1 when synthetic */
  uint32_t off;  /* byte offset of the first character */
  uint32_t len;  /* length in bytes (at least 1 when printed) */
} Span;

static inline Span span_none(void) { Span s = {-1, 0, 0}; return s; }
static inline Span span_join(Span a, Span b) {
  if (a.file < 0) return b;
  if (b.file < 0 || b.file != a.file) return a;
  uint32_t lo = a.off < b.off ? a.off : b.off;
  uint32_t ha = a.off + a.len, hb = b.off + b.len;
  Span s = {a.file, lo, (ha > hb ? ha : hb) - lo};
  return s;
}

#endif
