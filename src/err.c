/*
** err.c — raising runtime errors to the nearest boundary.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "err.h"

ErrJmp *err_top;
Span err_where = {-1, 0, 0};
const char *err_devices;
static char message[1024];

void err_end(ErrJmp *j) { err_top = j->prev; }

const char *err_message(void) { return message; }

void err_throw(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  ErrJmp *j = err_top;
  if (!j) {
    fprintf(stderr, "shmapi: fatal: %s\n", message);
    exit(1);
  }
  err_top = j->prev;
  longjmp(j->jb, 1);
}
