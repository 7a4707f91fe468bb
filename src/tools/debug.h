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
** The debugger is three files: debug.c (the stop, stepping, frames, the
** commands), dbg_break.c (breakpoints, conditions, displays) and
** inspect.c (what looks at values and names, which the REPL uses too).
**
** The commands of both prompts, the REPL's shm> and the debugger's
** (shdb), are the rows of one table, commands.def: debug.c runs them, and
** the REPL reads the table (dbg_cmds) for its help and for completion.
** The REPL owns the terminal: the debugger reads its commands through the
** hooks it is given, asks them for help on the language and to run
** `debug STMT`, and prints everything (stops, values, its own complaints
** as `*** message`) to standard output.
*/
#ifndef SHM_DEBUG_H
#define SHM_DEBUG_H

#include <stdbool.h>
#include "check.h"
#include "eval.h"

typedef struct Dbg Dbg;

typedef enum DbgResult {
  DBG_OK,           /* the statements ran to their end */
  DBG_ERROR,        /* a runtime error (printed to stderr) */
  DBG_QUIT,         /* the user quit the debugger */
  DBG_LEAVE         /* `quit` at the shm> prompt: leave shmapi */
} DbgResult;

/* What the REPL does for the debugger; ctx is passed back to each. */
typedef struct DbgHooks {
  /* Read one line with a prompt; NULL at the end of input.  The line is
     malloc'd; the debugger frees it. */
  char *(*read)(void *ctx, const char *prompt);
  /* Print help on a topic the debugger does not know (the REPL's
     overview, statements, primitives ...); false when nobody knows it. */
  bool (*help)(void *ctx, const char *topic);
  /* `debug ARGS` at the shm> prompt: run the statement or the call ARGS
     under the debugger, stopped before it. */
  DbgResult (*debug)(void *ctx, const char *args);
  /* An input at the shm> prompt that is no command (an alias's
     expansion): run it as the REPL runs what is typed. */
  DbgResult (*input)(void *ctx, const char *text);
  void *ctx;
} DbgHooks;

Dbg *dbg_new(Checker *C, Interp *I, const DbgHooks *hooks);
void dbg_free(Dbg *D);

/* The program file (`-i FILE`, `--debug FILE`): its file index and how
   many of main's statements it made.  `run` and `restart` run those
   statements again; `break LINE` means a line of it. */
void dbg_set_program(Dbg *D, int file, int nstmts);

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

/* A line typed at the shm> prompt whose first word names a command of
   that prompt (the REPL has checked that the line binds no names): run
   it and return true, leaving in *res (when not NULL) the result of what
   it ran.  False when the line is no such command (`whos x`, `run f`). */
bool dbg_command(Dbg *D, const char *line, DbgResult *res);
/* The names visible where the debugger stopped, for completion; returns
   how many were stored (0 when not stopped). */
int dbg_visible_names(Dbg *D, const char **names, int max);

/* ---- the command table (commands.def) ---- */

enum { DBG_SHM = 1, DBG_SHDB = 2, DBG_BOTH = 3 };   /* the prompts */

/* What a command's argument is, for completion. */
typedef enum DbgArg {
  DBG_ARG_ANY,      /* names and primitives */
  DBG_ARG_TOPIC,    /* help's: topics, commands, primitives */
  DBG_ARG_SUBJECT   /* one of the words its usage offers (info's) */
} DbgArg;

/* One row of commands.def; its columns are explained there. */
typedef struct DbgCmd {
  const char *names;         /* "finish return" */
  const char *also;          /* "r": at (shdb) only */
  int at;                    /* DBG_SHM, DBG_SHDB or both */
  DbgArg arg;
  const char *usage, *text;  /* help */
  int rank;                  /* place in the shm> overview; 0: none */
  const char *shm_help;      /* "USAGE\tSUMMARY" lines there */
} DbgCmd;

/* The rows in order, then one whose names is NULL. */
extern const DbgCmd dbg_cmds[];
/* At shm>, a line that is no shm> command but a debugger command (pdb's
   habits: q, p x, pp x, b f, n): run what it means at the top level, or
   say it needs a stop.  False when the line is no debugger command. */
bool dbg_command_pdb(Dbg *D, const char *line, DbgResult *res);
/* The row that answers `word` at prompt `at` (DBG_SHM or DBG_SHDB). */
const DbgCmd *dbg_find(const char *word, int at);
/* The debugger's `help`: its commands with their short forms. */
void dbg_help_list(void);

#endif
