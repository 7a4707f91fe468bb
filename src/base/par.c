/*
** par.c — a second thread for big copies and elementwise work (see par.h).
*/
#include <pthread.h>
#include "par.h"

typedef struct ParJob {
  ParFn fn;
  void *ctx;
  int64_t lo, hi;
} ParJob;

static void *par_worker(void *p) {
  ParJob *j = p;
  for (int64_t i = j->lo; i < j->hi; i++) j->fn(j->ctx, i);
  return NULL;
}

void par_for(int64_t n, ParFn fn, void *ctx, double bytes) {
  ParJob j = {fn, ctx, n / 2, n};
  pthread_t th;
  if (n < 2 || bytes < PAR_BYTES || pthread_create(&th, NULL, par_worker, &j)) {
    for (int64_t i = 0; i < n; i++) fn(ctx, i);
    return;
  }
  for (int64_t i = 0; i < n / 2; i++) fn(ctx, i);
  pthread_join(th, NULL);
}
