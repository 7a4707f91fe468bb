/*
** _observer_and_trace.c — the evaluator's observer (the cost model's) and
** its trace (the debugger's) at once, built and run by
** observer_and_trace.test.sh.
**
** Runs a program three times: with the timeline's observer alone, with
** a counting trace alone, and with both.  Both together must see what
** each saw alone: the same report from the timeline (byte for byte), and
** the same number of trace events; and the trace's statement events must
** pair with the observer's (one before and one after per statement).
*/
#include <stdio.h>
#include <stdlib.h>
#include "check.h"
#include "diag.h"
#include "err.h"
#include "eval.h"
#include "parse.h"
#include "timeline.h"

typedef struct Counts {
  long line, done, ret;          /* trace events */
  long before, after, call, back; /* observer events */
  EvalObserver inner;            /* the timeline's observer, wrapped */
} Counts;

static void trace(Interp *I, Frame *F, IrStmt *st, EvalEvent ev, void *data) {
  (void)I, (void)F, (void)st;
  Counts *c = data;
  if (ev == EV_LINE) c->line++;
  else if (ev == EV_DONE) c->done++;
  else c->ret++;
}

static void ob_call(void *d, Frame *F, IrStmt *site) {
  Counts *c = d;
  c->call++;
  c->inner.call(c->inner.data, F, site);
}
static void ob_ret(void *d, Frame *F, IrStmt *site) {
  Counts *c = d;
  c->back++;
  c->inner.ret(c->inner.data, F, site);
}
static void ob_before(void *d, Frame *F, IrStmt *st, int i) {
  Counts *c = d;
  c->before++;
  c->inner.before(c->inner.data, F, st, i);
}
static void ob_after(void *d, Frame *F, IrStmt *st, int i) {
  Counts *c = d;
  c->after++;
  c->inner.after(c->inner.data, F, st, i);
}

/* Run `path` with the observer and/or the trace; the report into `out`. */
static void run(const char *path, bool observe, bool traced, Counts *c, char *out, size_t n) {
  memset(c, 0, sizeof *c);
  const Hw *hw = hw_preset("tpu-v5e");
  Timeline *T = tl_new(hw, NULL, false);
  int f = parse_load(path, span_none());
  Checker *C = check_new();
  check_set_whole_program(C);
  if (f < 0 || check_file(C, f) || diag_count()) {
    diag_flush(stderr);
    exit(2);
  }
  Interp *I = eval_new(check_main(C));
  if (observe) {
    c->inner = tl_observer(T);
    EvalObserver ob = {ob_call, ob_ret, ob_before, ob_after, c};
    eval_set_observer(I, &ob);
  }
  if (traced) eval_set_hook(I, trace, c);
  FILE *null = fopen("/dev/null", "w"), *saved = stdout;
  stdout = null;                       /* the program's own prints */
  bool ok = eval_run(I, 0);
  stdout = saved;
  fclose(null);
  if (!ok) exit(3);
  FILE *mem = fmemopen(out, n, "w");
  tl_report(T, mem);
  fclose(mem);
  tl_free(T);
  eval_free(I);
  check_free(C);
  diag_reset();
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  static char alone[1 << 16], both[1 << 16], none[1 << 16];
  Counts a, t, b;
  run(argv[1], true, false, &a, alone, sizeof alone);
  run(argv[1], false, true, &t, none, sizeof none);
  run(argv[1], true, true, &b, both, sizeof both);
  int bad = 0;
  if (strcmp(alone, both)) {
    printf("the report differs with the trace set:\n%s\n---\n%s\n", alone, both);
    bad = 1;
  }
  if (t.line != b.line || t.done != b.done || t.ret != b.ret) {
    printf("the trace saw %ld/%ld/%ld events alone, %ld/%ld/%ld with the observer\n", t.line, t.done, t.ret,
           b.line, b.done, b.ret);
    bad = 1;
  }
  if (a.before != b.before || a.after != b.after || a.call != b.call || a.back != b.back) {
    printf("the observer saw different events with the trace set\n");
    bad = 1;
  }
  if (b.before != b.line || b.after != b.done || b.back != b.ret || b.call != b.back) {
    printf("observer %ld before, %ld after, %ld calls, %ld returns; trace %ld lines, %ld done, %ld returns\n",
           b.before, b.after, b.call, b.back, b.line, b.done, b.ret);
    bad = 1;
  }
  if (!bad) printf("%ld statements, %ld calls: observer and trace agree\n", b.before, b.call);
  return bad;
}
