/*
** buf.h — a growable byte buffer for building output text.
*/
#ifndef SHM_BUF_H
#define SHM_BUF_H

#include <stdio.h>
#include "common.h"

typedef struct Buf {
  char *p;        /* NUL-terminated once anything was written */
  size_t n, cap;
} Buf;

void buf_putc(Buf *b, char c);
void buf_put(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) SHM_PRINTF(2, 3);
void buf_reset(Buf *b);          /* keep the memory, empty the text */
void buf_free(Buf *b);
/* buf_free for err_defer (err.h): err_defer(buf_release, &b) keeps a
   local Buf from leaking when a runtime error unwinds past it. */
void buf_release(void *b);
const char *buf_cstr(Buf *b);    /* "" for an empty buffer */

#endif
