/*
** repl.h — the interactive read-check-run loop.
**
** On a terminal the REPL reads with libedit (history in ~/.shmapi_history,
** Tab completion of keywords, primitives, parameters, names and commands).
** With standard input not a terminal it reads line by line, shows no
** editing, and echoes each line after its prompt (`shm> x = 1`) so that a
** scripted session's output reads as a transcript; its exit status is then
** 1 when any statement failed.  Commands (`help`, `whos`, `info`, `debug`,
** `break` ...) are recognised by their first word on a line that is not an
** equation; they are rows of the debugger's table (commands.def, debug.h).
*/
#ifndef SHM_REPL_H
#define SHM_REPL_H

#include <stdbool.h>

typedef struct ReplOptions {
  bool stats;                 /* print communication statistics after each input */
  long long max_steps;
  bool debug;                 /* --debug FILE: stop before its first statement */
} ReplOptions;

/* Run `file` first when given (under the debugger with opts->debug), then
   read statements from standard input.  An error prints its diagnostic
   and the session goes on.  Returns the exit status. */
int repl_main(const char *file, const ReplOptions *opts);

#endif
