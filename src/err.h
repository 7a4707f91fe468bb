/*
** err.h — runtime errors and their one boundary.
**
** Static errors are diagnostics (diag.h) collected by the front end.  A
** runtime error — out of memory, the step limit, an interrupt, a fault the
** fabric detects — is raised with err_throw, which longjmps to the nearest
** boundary set with ERR_TRY.  The REPL's statement loop and the script
** runner are the boundaries; nothing else catches.  Code between a boundary
** and a throw must keep what it allocates reachable from the interpreter
** state (frames, values) so the boundary can release it.
*/
#ifndef SHM_ERR_H
#define SHM_ERR_H

#include <setjmp.h>
#include "common.h"

typedef struct ErrJmp {
  jmp_buf jb;
  struct ErrJmp *prev;
} ErrJmp;

extern ErrJmp *err_top;

/* Usage:  ErrJmp j; if (ERR_TRY(&j)) { ...; err_end(&j); } else { handle; } */
#define ERR_TRY(j) ((j)->prev = err_top, err_top = (j), setjmp((j)->jb) == 0)
void err_end(ErrJmp *j);            /* leave the protected region normally */

SHM_NORETURN void err_throw(const char *fmt, ...) SHM_PRINTF(1, 2);

/* The message of the last error thrown, and where (set by the evaluator). */
const char *err_message(void);
extern Span err_where;              /* statement being run, or span_none() */
extern const char *err_devices;     /* "devices 0, 3" suffix or NULL */

#endif
