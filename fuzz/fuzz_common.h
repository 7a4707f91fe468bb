/*
** fuzz_common.h — what the libFuzzer harnesses share.
**
** One iteration starts from nothing and must end with nothing: the source
** is registered as a file, parsed, checked (and, for fuzz_run and
** fuzz_repl, run), and then the checker, the diagnostics and the file
** table are released.  A
** runtime error (err.h) is caught at a boundary here, as the REPL catches
** it.  After each input mem_in_use() must be back to zero: a block still
** counted is a leak, reported as a crash even where LeakSanitizer would
** miss it (memory still reachable from a global table).
**
** One input in four also gets an injected allocation failure.
**
** Inputs that `import`, `load` or `save` are skipped: those read or write
** the file system (`import "/dev/stdin"` would block the fuzzer, `save`
** would write anywhere); fuzz_npy fuzzes the file formats load reads.
*/
#ifndef SHM_FUZZ_COMMON_H
#define SHM_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "diag.h"
#include "err.h"
#include "eval.h"
#include "fabric.h"
#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static FILE *fuzz_sink;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_sink = fopen("/dev/null", "w");
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  return 0;
}

static bool fuzz_has(const uint8_t *data, size_t size, const char *word) {
  size_t n = strlen(word);
  for (size_t i = 0; i + n <= size; i++)
    if (!memcmp(data + i, word, n)) return true;
  return false;
}

/* Release everything an iteration made and insist that nothing is left. */
static void fuzz_finish(Checker *C) {
  check_free(C);
  diag_reset();
  fab_stats_reset();
  mem_fail_after(0);
  if (mem_in_use() != 0) {
    fprintf(stderr, "fuzz: %zu bytes still allocated after the input was released\n", mem_in_use());
    abort();
  }
}

/* The REPL's way: statement by statement (a chunk ends at a line where the
   brackets balance and no decorator waits for its def), each checked, then
   rolled back if it has errors or else run; a runtime error does not stop
   the session, so later chunks see what a failed one left behind. */
static void fuzz_session(Checker *C, Interp *I, const char *text, size_t size) {
  size_t start = 0, i = 0, line = 0;
  int depth = 0;
  char quote = 0;
  while (start < size) {
    for (; i < size; i++) {
      char c = text[i];
      if (i > 0 && text[i - 1] == '\n') line = i;
      if (quote) { if (c == '\\' && i + 1 < size) i++; else if (c == quote || c == '\n') quote = 0; continue; }
      if (c == '#') { while (i + 1 < size && text[i + 1] != '\n') i++; continue; }
      if (c == '\'' || c == '"') quote = c;
      else if (c == '(' || c == '[' || c == '{') depth++;
      else if (c == ')' || c == ']' || c == '}') depth--;
      else if (c == '\n' && depth <= 0) {
        size_t ls = line;
        while (ls < i && (text[ls] == ' ' || text[ls] == '\t')) ls++;
        if (text[ls] != '@') { i++; break; }
      }
    }
    int f = parse_load_text("<stdin>", text + start, i - start);
    CheckMark mark = check_mark(C);
    int from = check_main(C)->nbody;
    check_file(C, f);
    if (diag_count()) {
      diag_flush(fuzz_sink);
      check_rollback(C, mark);
    } else {
      eval_run(I, from);
    }
    depth = 0;
    start = i;
  }
}

enum { FUZZ_CHECK, FUZZ_RUN, FUZZ_REPL };

/* Parse and check `data`; FUZZ_RUN runs it if it checked cleanly, under
   small limits; FUZZ_REPL goes through it as the REPL would.  Returns -1
   for inputs the harness does not take. */
static int fuzz_one(const uint8_t *data, size_t size, int mode) {
  bool run = mode != FUZZ_CHECK;
  if (fuzz_has(data, size, "import") || fuzz_has(data, size, "load") || fuzz_has(data, size, "save")) return -1;
  mem_set_limit(run ? (size_t)32 << 20 : 0);
  /* One input in four also makes its Nth allocation fail (N from a hash
     of the input, so a crash reproduces): the paths that run out of
     memory must release everything too. */
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  if ((h & 3) == 0) mem_fail_after(1 + (long)((h >> 2) % 4000));
  Checker *volatile C = NULL;
  Interp *volatile I = NULL;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    C = check_new();
    if (mode == FUZZ_REPL) {
      I = eval_new(check_main(C));
      eval_set_max_steps(I, 2000);
      fuzz_session(C, I, (const char *)data, size);
      eval_free(I);
      I = NULL;
      err_end(&j);
      goto done;
    }
    int f = parse_load_text("fuzz.shm", (const char *)data, size);
    int errs = check_file(C, f);
    if (errs || diag_count()) {
      diag_flush(fuzz_sink);
    } else if (run) {
      I = eval_new(check_main(C));
      eval_set_max_steps(I, 2000);
      eval_release_top(I);          /* as `shmapi FILE` runs a script */
      eval_run(I, 0);
      eval_free(I);
      I = NULL;
    }
    err_end(&j);
  } else {
    /* a runtime error outside eval_run's own boundary: the front end ran
       out of memory.  Everything it made hangs off C or the file table. */
    eval_free(I);
    diag_clear();
  }
done:
  fuzz_finish(C);
  mem_set_limit(0);
  return 0;
}

#endif
