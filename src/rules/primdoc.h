/*
** primdoc.h — the documentation of the primitives (rows of primdoc.def),
** looked up by PrimId: what the REPL's `help NAME` prints.  The same rows
** make docs/primitives.md (docs/gen_primitives.py).
*/
#ifndef SHM_PRIMDOC_H
#define SHM_PRIMDOC_H

#include "prims.h"

typedef struct PrimParamDoc {
  int prim;                /* the PrimId it belongs to */
  const char *name;
  const char *type;
  const char *dflt;        /* "required" when it must be given */
  const char *meaning;
} PrimParamDoc;

typedef struct PrimDoc {
  const char *summary;     /* what it computes: operands, dtypes, result */
  const char *variance;    /* the variance rule in words */
  const char *example;     /* one line of shm */
} PrimDoc;

/* The documentation of primitive `prim` (a PrimId). */
const PrimDoc *primdoc(int prim);

/* Its parameters, in order: *n of them from the returned pointer. */
const PrimParamDoc *primdoc_params(int prim, int *n);

#endif
