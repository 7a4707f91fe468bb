/*
** fuzz_run.c — libFuzzer harness: lex, parse, check and run arbitrary bytes
** with small limits (32 MiB of memory, 2000 loop iterations).
*/
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_one(data, size, FUZZ_RUN); }
