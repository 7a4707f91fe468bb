/*
** buf.c — growable text buffers.
*/
#include <stdarg.h>
#include "buf.h"

static void reserve(Buf *b, size_t extra) {
  if (b->n + extra + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 64;
    while (nc < b->n + extra + 1) nc *= 2;
    b->p = mem_realloc(b->p, nc);
    b->cap = nc;
  }
}

void buf_put(Buf *b, const char *s, size_t n) {
  reserve(b, n);
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void buf_putc(Buf *b, char c) { buf_put(b, &c, 1); }
void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_printf(Buf *b, const char *fmt, ...) {
  va_list ap, aq;
  va_start(ap, fmt);
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  reserve(b, (size_t)n);
  vsnprintf(b->p + b->n, (size_t)n + 1, fmt, aq);
  va_end(aq);
  b->n += (size_t)n;
}

void buf_reset(Buf *b) {
  b->n = 0;
  if (b->p) b->p[0] = 0;
}

void buf_free(Buf *b) {
  mem_free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

void buf_release(void *b) { buf_free(b); }

const char *buf_cstr(Buf *b) { return b->p ? b->p : ""; }
