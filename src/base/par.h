/*
** par.h — two cores for big work: the collectives' copies and reductions
** (fabric.c) and elementwise operations (prims.c) over many megabytes.
**
** Tasks run with par_for only copy or compute into memory allocated
** beforehand: they never allocate, never raise errors, and each writes its
** own part of the result, so the bytes produced do not depend on the
** threads.
*/
#ifndef SHM_PAR_H
#define SHM_PAR_H

#include <stdint.h>

/* Work below this many bytes runs on the calling thread only. */
#define PAR_BYTES ((double)(8u << 20))

typedef void (*ParFn)(void *ctx, int64_t i);

/* fn(ctx, i) for i in [0, n), each once: when `bytes` is large, over two
   threads, each taking the next task not yet taken. */
void par_for(int64_t n, ParFn fn, void *ctx, double bytes);

#endif
