/*
** state.c — the interpreter's state, and the thread's current one (state.h).
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "state.h"

_Thread_local ShmState *state_tls;

ShmState *state_new(void) {
  ShmState *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->defers = malloc(sizeof(StateDefer) * STATE_MAX_DEFER);
  if (!s->defers) {
    free(s);
    return NULL;
  }
  return s;
}

size_t state_free(ShmState *s) {
  if (!s) return 0;
  ShmState *prev = state_enter(s);
  for (int k = 0; k < SLOT_COUNT; k++)
    if (s->slot[k] && s->slot_free[k]) s->slot_free[k](s->slot[k]);
  diag_state_release(s);
  size_t left = s->in_use;
  mem_state_release(s);
  state_enter(prev == s ? NULL : prev);
  free(s->defers);
  free(s);
  return left;
}

static void to_file(void *f, const char *text, size_t n) { fwrite(text, 1, n, f); }

void state_std_sinks(ShmState *s) {
  s->out = to_file;
  s->out_ud = stdout;
  s->errout = to_file;
  s->errout_ud = stderr;
}

/* ---- the implicit state of a thread that made none ------------------------ */

static pthread_key_t implicit_key;
static pthread_once_t implicit_once = PTHREAD_ONCE_INIT;

static void implicit_end(void *s) {
  (void)state_free(s);
  state_tls = NULL;
}

static void implicit_init(void) { pthread_key_create(&implicit_key, implicit_end); }

ShmState *state_implicit(void) {
  pthread_once(&implicit_once, implicit_init);
  ShmState *s = state_new();
  if (!s) abort();                 /* not even a state: nothing can report it */
  state_std_sinks(s);
  state_tls = s;
  pthread_setspecific(implicit_key, s);
  return s;
}

void state_out(const char *text, size_t n) {
  ShmState *s = state_cur();
  if (s->out) s->out(s->out_ud, text, n);
}

void state_errout(const char *text, size_t n) {
  ShmState *s = state_cur();
  if (s->errout) s->errout(s->errout_ud, text, n);
}
