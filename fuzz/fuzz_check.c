/*
** fuzz_check.c — libFuzzer harness: lex, parse and check arbitrary bytes.
*/
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_one(data, size, FUZZ_CHECK); }
