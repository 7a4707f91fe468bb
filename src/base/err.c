/*
** err.c — raising runtime errors to the nearest boundary.
**
** The boundaries, the cleanups and the message are the current state's
** (state.h): each thread raises to its own boundaries.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "err.h"
#include "state.h"

void err_push(ErrJmp *j) {
  ShmState *s = state_cur();
  j->prev = s->err_top;
  j->ndefer = s->err_ndefer;
  s->err_top = j;
}

void err_end(ErrJmp *j) {
  ShmState *s = state_cur();
  s->err_ndefer = j->ndefer;
  s->err_top = j->prev;
}

bool err_protected(void) { return state_cur()->err_top != NULL; }

/* The cleanup stack (state.h's defers) is fixed in size so that
   registering never allocates; it only needs to be as deep as the nesting
   of calls that hold scratch memory at once. */
void err_defer(void (*fn)(void *), void *p) {
  ShmState *s = state_cur();
  if (s->err_ndefer == STATE_MAX_DEFER) {
    fn(p);
    err_throw("evaluation nested too deeply");
  }
  s->defers[s->err_ndefer].fn = fn;
  s->defers[s->err_ndefer].p = p;
  s->err_ndefer++;
}

void err_undefer(void *p) {
  ShmState *s = state_cur();
  StateDefer *defers = s->defers;
  int n = s->err_ndefer;
  if (n && defers[n - 1].p == p) {     /* the newest, as a rule */
    s->err_ndefer--;
    return;
  }
  for (int i = n - 1; i >= 0; i--)
    if (defers[i].p == p) {
      memmove(&defers[i], &defers[i + 1], sizeof(StateDefer) * (size_t)(n - 1 - i));
      s->err_ndefer--;
      return;
    }
}

const char *err_message(void) { return state_cur()->message; }

void err_throw(const char *fmt, ...) {
  ShmState *s = state_cur();
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->message, sizeof s->message, fmt, ap);
  va_end(ap);
  ErrJmp *j = s->err_top;
  if (!j) {
    /* no boundary: only code that uses the layers without one (a test
       driver) gets here; the library and the program always set one */
    char line[1100];
    int n = snprintf(line, sizeof line, "shmapi: fatal: %s\n", s->message);
    state_errout(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    abort();
  }
  while (s->err_ndefer > j->ndefer) {
    StateDefer d = s->defers[--s->err_ndefer];
    d.fn(d.p);
  }
  s->err_top = j->prev;
  longjmp(j->jb, 1);
}
