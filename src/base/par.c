/*
** par.c — a second thread for big copies and elementwise work (see par.h).
**
** The two threads take tasks from one counter, each the next not yet
** taken, rather than half each: on a busy machine the second thread may
** start late or lose its core for a while, and the caller then goes on
** with the tasks it would have done instead of waiting for them.
*/
#include <pthread.h>
#include <stdatomic.h>
#include "par.h"

typedef struct ParJob {
  ParFn fn;
  void *ctx;
  int64_t n;
  atomic_int_fast64_t next;      /* the first task not yet taken */
} ParJob;

static void par_run(ParJob *j) {
  for (int64_t i; (i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->n;) j->fn(j->ctx, i);
}

static void *par_worker(void *p) {
  par_run(p);
  return NULL;
}

void par_for(int64_t n, ParFn fn, void *ctx, double bytes) {
  ParJob j = {fn, ctx, n, 0};
  pthread_t th;
  if (n < 2 || bytes < PAR_BYTES || pthread_create(&th, NULL, par_worker, &j)) {
    for (int64_t i = 0; i < n; i++) fn(ctx, i);
    return;
  }
  par_run(&j);
  pthread_join(th, NULL);
}
