/*
** err.h — runtime errors and their one boundary.
**
** Static errors are diagnostics (diag.h) collected by the front end.  A
** runtime error — out of memory, the step limit, an interrupt, a fault the
** fabric detects — is raised with err_throw, which longjmps to the nearest
** boundary set with ERR_TRY.  The boundaries: the evaluator's run of
** top-level statements (eval_run) and of one call for the REPL and the
** debugger (eval_call), the abstract walk (abstract_run), the REPL's
** statement loop and the program's last resort in main.c; each turns the
** error into a diagnostic and releases the frames.  Code between a boundary
** and a throw must keep what it allocates reachable from the interpreter
** state (frames, values) so the boundary can release it.
*/
#ifndef SHM_ERR_H
#define SHM_ERR_H

#include <setjmp.h>
#include "defs.h"

typedef struct ErrJmp {
  jmp_buf jb;
  struct ErrJmp *prev;
  int ndefer;                       /* cleanups pending when it was set */
} ErrJmp;

/* Usage:  ErrJmp j; if (ERR_TRY(&j)) { ...; err_end(&j); } else { handle; }
   The boundaries are those of the thread's current state (state.h). */
#define ERR_TRY(j) (err_push(j), setjmp((j)->jb) == 0)
void err_push(ErrJmp *j);           /* (ERR_TRY's first half) */
void err_end(ErrJmp *j);            /* leave the protected region normally */
/* Whether a boundary is set (a throw would be caught). */
bool err_protected(void);

/* Cleanups: what a function holds only in local variables while it calls
   something that may throw (a scratch buffer, a value not yet stored in a
   frame).  err_defer(fn, p) arranges for fn(p) to run if an error unwinds
   past this point; err_undefer(p) cancels that once p is released or
   handed on.  err_throw runs the cleanups registered since the boundary
   it jumps to, newest first, before jumping.  Cleanups must not throw. */
void err_defer(void (*fn)(void *), void *p);
void err_undefer(void *p);

SHM_NORETURN void err_throw(const char *fmt, ...) SHM_PRINTF(1, 2);

/* The message of the last error thrown. */
const char *err_message(void);

#endif
