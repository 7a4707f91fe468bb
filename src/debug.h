/*
** debug.h — the debugger: pdb's commands over all instances of a shard_map.
**
** The debugger watches a run through the evaluator's trace (eval.h): it
** is told before and after every statement and when a function returns.
** All instances of a shard_map run in lockstep, so one stop is a stop of
** every instance on the current path, and `step` advances them together;
** values inside a body print one block per device, as `print` does, or
** one device's block with `p x @ 3`, `p x @ (1, 0)` or a `device` focus.
** With varying control flow a stop names the instances on its path and
** where the others are.
**
** The debugger is three files: debug.c (the trace, the stop, stepping,
** the stack, the commands), dbg_break.c (breakpoints, conditions,
** displays) and inspect.c (what looks at values and names).
**
** Breakpoint conditions and `p`/`display` expressions are compiled by the
** checker (check_expr) against the variables visible where the debugger
** stands and run by the evaluator (eval_call) in that frame: a condition
** is evaluated once for all instances and holds per instance.
**
** The REPL owns the terminal: the debugger reads its commands through the
** reader it is given, and prints everything (stops, values, its own
** complaints as `*** message`) to standard output.
*/
#ifndef SHM_DEBUG_H
#define SHM_DEBUG_H

#include <stdbool.h>
#include "check.h"
#include "eval.h"

typedef struct Dbg Dbg;

/* Read one line with a prompt; NULL at the end of input.  The line is
   malloc'd; the debugger frees it. */
typedef char *(*DbgReader)(void *ctx, const char *prompt);
/* Print help on a topic the debugger does not know (primitives ...);
   false when nobody knows it. */
typedef bool (*DbgHelp)(void *ctx, const char *topic);

Dbg *dbg_new(Checker *C, Interp *I, DbgReader read, DbgHelp help, void *ctx);
void dbg_free(Dbg *D);

/* The program file (`-i FILE`, `--debug FILE`): its file index and how
   many of main's statements it made.  `run` and `restart` run those
   statements again; `break LINE` means a line of it. */
void dbg_set_program(Dbg *D, int file, int nstmts);

typedef enum DbgResult {
  DBG_OK,           /* the statements ran to their end */
  DBG_ERROR,        /* a runtime error (printed to stderr) */
  DBG_QUIT          /* the user quit the debugger */
} DbgResult;

/* Run main's statements [from, to) (to < 0: to the end) under the
   debugger: it stops at breakpoints, and before the first statement when
   `stop_first`.  A `run` or `restart` typed at a stop starts the program
   again here. */
DbgResult dbg_run_main(Dbg *D, int from, int to, bool stop_first);
/* `f a b` (an expression line) and `debug f a b`: check the call in the
   top-level scope, run it (stopped before the first statement inside f
   when `stop_first`, else only at breakpoints) and print its results as
   a bare name prints a value.  Static errors go to stderr (DBG_ERROR). */
DbgResult dbg_run_call(Dbg *D, const char *call, bool stop_first);

/* A command typed at the REPL prompt that the debugger answers (break,
   tbreak, clear, disable, enable, condition, ignore, display, undisplay,
   info, whos, run, restart).  False when `line` is none of them; the
   result of a `run` or `restart` is left in *res when res is not NULL. */
bool dbg_command(Dbg *D, const char *line, DbgResult *res);
/* Print help on a debugger command; false when `topic` is none. */
bool dbg_help(const char *topic);
/* The debugger's commands (NULL-terminated), for help and completion. */
extern const char *const dbg_command_names[];
/* The names visible where the debugger stopped, for completion; returns
   how many were stored (0 when not stopped). */
int dbg_visible_names(Dbg *D, const char **names, int max);

#endif
