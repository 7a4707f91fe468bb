/*
** repl.h — the interactive read-check-run loop.
*/
#ifndef SHM_REPL_H
#define SHM_REPL_H

#include <stdbool.h>

typedef struct ReplOptions {
  bool stats;                 /* print communication statistics after each input */
  long long max_steps;
} ReplOptions;

/* Run `file` first when given, then read statements from standard input:
   with libedit and prompts on a terminal, line by line otherwise.  An
   error prints its diagnostic and the session goes on.  Returns the exit
   status. */
int repl_main(const char *file, const ReplOptions *opts);

#endif
