/*
** fuzz_repl.c — libFuzzer harness: arbitrary bytes as a REPL session,
** statement by statement: each checked (and rolled back on errors) or run,
** with the limits of fuzz_run.  Exercises the incremental checker and what
** a failed statement leaves behind for the next.
*/
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_one(data, size, FUZZ_REPL); }
