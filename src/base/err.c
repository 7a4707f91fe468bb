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

/* The cleanup stack.  Fixed in size so that registering never allocates;
   it only needs to be as deep as the nesting of calls that hold scratch
   memory at once. */
#define MAX_DEFER 8192
typedef struct Defer {
  void (*fn)(void *);
  void *p;
} Defer;
static Defer defers[MAX_DEFER];
int err_ndefer;

void err_end(ErrJmp *j) {
  err_ndefer = j->ndefer;
  err_top = j->prev;
}

void err_defer(void (*fn)(void *), void *p) {
  if (err_ndefer == MAX_DEFER) {
    fn(p);
    err_throw("evaluation nested too deeply");
  }
  defers[err_ndefer].fn = fn;
  defers[err_ndefer].p = p;
  err_ndefer++;
}

void err_undefer(void *p) {
  if (err_ndefer && defers[err_ndefer - 1].p == p) {     /* the newest, as a rule */
    err_ndefer--;
    return;
  }
  for (int i = err_ndefer - 1; i >= 0; i--)
    if (defers[i].p == p) {
      memmove(&defers[i], &defers[i + 1], sizeof(Defer) * (size_t)(err_ndefer - 1 - i));
      err_ndefer--;
      return;
    }
}

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
  while (err_ndefer > j->ndefer) {
    Defer d = defers[--err_ndefer];
    d.fn(d.p);
  }
  err_top = j->prev;
  longjmp(j->jb, 1);
}
