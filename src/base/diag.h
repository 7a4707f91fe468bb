/*
** diag.h — source files and diagnostics.
**
** Source text is loaded once into the file table and never moves, so the
** front end can keep `Str` slices and `Span` byte ranges into it.  Static
** errors are collected (not printed) while a file is parsed and checked;
** diag_flush sorts them by position and prints each as
**
**   file:line:col: error: message
**       7 |   return c_block
**         |          ^~~~~~~
**
** Columns count bytes from 1.  Warnings (and notes that stand alone)
** are printed to standard error at once, in the same form, and do not
** count as errors.
*/
#ifndef SHM_DIAG_H
#define SHM_DIAG_H

#include <stdarg.h>
#include <stdio.h>
#include "common.h"

/* Register a source; takes ownership of `text` (mem_alloc'd, NUL-terminated). */
int diag_add_file(const char *name, char *text, size_t len);
const char *diag_file_name(int file);
const char *diag_file_text(int file, size_t *len);
int diag_file_count(void);
/* Hide the first n bytes of a file's first line from diagnostics: text
   the interpreter put before what the user typed (`__v = ` before an
   expression); columns count from after it. */
void diag_hide_prefix(int file, uint32_t n);
/* 1-based line and column of a byte offset. */
void diag_linecol(int file, uint32_t off, int *line, int *col);
/* The text of line `line` (1-based) of `file`, without its newline. */
Str diag_line_text(int file, int line);

/* Record a static error (collected until diag_flush). */
void diag_error(Span sp, const char *fmt, ...) SHM_PRINTF(2, 3);
void diag_verror(Span sp, const char *fmt, va_list ap);
/* The first error of a statement only: records it unless *reported is
   set, and sets it.  Returns false (for `return rule_error(...)`). */
bool diag_error_once(bool *reported, Span sp, const char *fmt, va_list ap);
/* Print a warning to standard error now, once per place (the same span
   warned about again prints nothing); it does not count as an error. */
void diag_warning(Span sp, const char *fmt, ...) SHM_PRINTF(2, 3);
/* The same for a note that stands alone (no error before it). */
void diag_remark(Span sp, const char *fmt, ...) SHM_PRINTF(2, 3);
/* Attach a note to the last recorded error. */
void diag_note(Span sp, const char *fmt, ...) SHM_PRINTF(2, 3);
int diag_count(void);               /* errors recorded since the last flush, but held ones */
/* A mark of what is recorded (held errors too), for the two calls below. */
int diag_mark(void);
/* Forget the errors recorded after `mark`. */
void diag_truncate(int mark);
/* Errors held back: those recorded after `mark` are tagged `tag` (not 0)
   and not printed until released, reported or dropped.  The checker holds
   back what a function's check at its def found, until it knows whether a
   call checks it (see check_resolve.c). */
void diag_hold_since(int mark, int tag);
void diag_release(int tag, bool report);
/* Sort, print to `out` and forget the collected diagnostics; returns how many. */
int diag_flush(FILE *out);
/* The same, each handed to fn instead of printed (in the same order, the
   same ones, each error followed by its note); returns how many errors. */
typedef void (*DiagFn)(void *ud, Span sp, const char *kind, const char *msg);
int diag_take(DiagFn fn, void *ud);
/* Drop collected diagnostics without printing. */
void diag_clear(void);
/* Forget every diagnostic and every registered file, releasing their
   memory (fuzzers and leak checks start each run from nothing). */
void diag_reset(void);

/* Print one diagnostic right away. */
void diag_print(FILE *out, Span sp, const char *kind, const char *msg);
/* Report a runtime error (or, kind NULL, a plain "shmapi: msg" about the
   command, such as a file that cannot be opened): to the current state's
   on_report hook when it has one, else rendered as diag_print does to its
   errout sink (state.h). */
void diag_report(Span sp, const char *kind, const char *msg);
/* The text diag_print would print, in a new malloc'd string (NULL when
   the system has no memory). */
char *diag_render(Span sp, const char *kind, const char *msg);

/* A runtime error's traceback: the calls that led to the failing
   statement, outermost first, as Python prints them (innermost last):

     Traceback (most recent call last):
       prog.shm:9:5, at top level
         b = outer 1.0
       prog.shm:6:7, in outer
         z = big x

   A call site and the function it is in (NULL: top level). */
typedef struct DiagCall {
  Span at;
  const char *in;
} DiagCall;
/* The traceback's text (malloc'd; NULL for no calls or no memory); of
   more than 40 calls the first and the last 20 are shown, the others
   counted. */
char *diag_traceback(const DiagCall *calls, int n);
/* diag_report with a traceback (NULL: none) printed before the error. */
void diag_report_trace(Span sp, const char *kind, const char *msg, const char *trace);

#endif
