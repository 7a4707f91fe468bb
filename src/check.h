/*
** check.h — the type checker: syntax tree in, checked program (ir.h) out.
**
** The checker computes the dtype, shape and variance set of every binder
** before anything runs, resolves names, applies each primitive's shape and
** variance rules from the primitive table, inserts `pbroadcast` where
** operands disagree in variance, and instantiates functions: a function
** whose parameters are all annotated is checked where it is defined, any
** other at each call, once per distinct list of argument types.
**
** Errors are recorded with diag_error (at most one per statement) and
** checking goes on, so one run reports every static error of a file.
*/
#ifndef SHM_CHECK_H
#define SHM_CHECK_H

#include "ast.h"
#include "buf.h"
#include "ir.h"

typedef struct Checker Checker;

Checker *check_new(void);
void check_free(Checker *C);

/* Parse and check a whole registered file as top-level statements; the
   checked statements are appended to the main function.  Returns the
   number of errors recorded. */
int check_file(Checker *C, int file);

/* Undo everything checked since a mark (a REPL input that had errors). */
typedef struct CheckMark {
  void *top;
  int nbody;
} CheckMark;
CheckMark check_mark(Checker *C);
void check_rollback(Checker *C, CheckMark m);

/* The function holding every top-level statement checked so far. */
IrFunc *check_main(Checker *C);

/* Look up a top-level variable or function by name (REPL, debugger). */
IrVar *check_lookup_var(Checker *C, Str name);
bool check_has_func(Checker *C, Str name);
/* Every name bound at top level (variables and functions), newest first. */
int check_names(Checker *C, const char **names, int max, bool *is_func);

#endif
