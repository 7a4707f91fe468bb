/*
** repl.c — the REPL: read a statement (a `def` or an open bracket spans
** lines), check it, run it, print the value of a bare name.
*/
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <editline/readline.h>
#include "buf.h"
#include "check.h"
#include "diag.h"
#include "err.h"
#include "eval.h"
#include "parse.h"
#include "repl.h"

typedef struct Repl {
  Checker *C;
  Interp *I;
  const ReplOptions *opts;
  bool tty;
  int inputs;
} Repl;

/* Bracket depth of a chunk of text, skipping strings and comments.  A
   trailing decorator line also asks for more. */
static int open_depth(const char *s) {
  int depth = 0;
  char q = 0;
  const char *last_line = s;
  for (const char *p = s; *p; p++) {
    if (q) {
      if (*p == '\\' && p[1]) p++;
      else if (*p == q) q = 0;
      else if (*p == '\n') q = 0;
      continue;
    }
    if (*p == '#') { while (*p && *p != '\n') p++; if (!*p) break; }
    if (*p == '\n') { last_line = p + 1; continue; }
    if (*p == '\'' || *p == '"') q = *p;
    else if (*p == '(' || *p == '[' || *p == '{') depth++;
    else if (*p == ')' || *p == ']' || *p == '}') depth--;
  }
  (void)last_line;
  if (depth > 0) return depth;
  /* a decorator line waits for its def */
  const char *t = s + strlen(s);
  while (t > s && isspace((unsigned char)t[-1])) t--;
  const char *ls = t;
  while (ls > s && ls[-1] != '\n') ls--;
  while (ls < t && isspace((unsigned char)*ls)) ls++;
  if (*ls == '@') return 1;
  return 0;
}

static bool is_ident(const char *s, size_t *n) {
  while (isspace((unsigned char)*s)) s++;
  const char *b = s;
  if (!isalpha((unsigned char)*s) && *s != '_') return false;
  while (isalnum((unsigned char)*s) || *s == '_') s++;
  *n = (size_t)(s - b);
  while (isspace((unsigned char)*s)) s++;
  return *s == 0;
}

/* Check and run one complete input. */
static void run_input(Repl *R, const char *text) {
  size_t n;
  const char *t = text;
  while (isspace((unsigned char)*t)) t++;
  if (is_ident(text, &n)) {
    Str name = {t, (int)n};
    IrVar *v = check_lookup_var(R->C, name);
    if (v) {
      Val *val = eval_global(R->I, v);
      if (val) {
        Buf b = {0};
        Space sp = {NULL, 1, NULL};
        eval_print_value(&b, &sp, val, true);
        buf_putc(&b, '\n');
        fwrite(b.p, 1, b.n, stdout);
        fflush(stdout);
        buf_free(&b);
        return;
      }
    }
  }
  char name[32];
  snprintf(name, sizeof name, "<stdin>");
  int f = parse_load_text(name, text, strlen(text));
  CheckMark mark = check_mark(R->C);
  int from = check_main(R->C)->nbody;
  check_file(R->C, f);
  if (diag_count()) {
    fflush(stdout);
    diag_flush(stderr);
    check_rollback(R->C, mark);
    return;
  }
  fab_stats_reset();
  if (eval_run(R->I, from) && R->opts->stats) fab_stats_print(stdout);
  fflush(stdout);
}

static void on_sigint(int sig) {
  (void)sig;
  eval_interrupted = 1;
}

/* Read one line: libedit with a prompt on a terminal, fgets otherwise. */
static char *read_line(Repl *R, const char *prompt) {
  if (R->tty) {
    char *l = readline(prompt);
    if (l && *l) add_history(l);
    return l;
  }
  Buf b = {0};
  int c;
  while ((c = getchar()) != EOF && c != '\n') buf_putc(&b, (char)c);
  if (c == EOF && b.n == 0) { buf_free(&b); return NULL; }
  char *r = strdup(buf_cstr(&b));
  buf_free(&b);
  return r;
}

int repl_main(const char *file, const ReplOptions *opts) {
  Repl R;
  memset(&R, 0, sizeof R);
  R.opts = opts;
  R.tty = isatty(0) && isatty(1);
  R.C = check_new();
  R.I = eval_new(check_main(R.C));
  eval_set_max_steps(R.I, (long)opts->max_steps);
  signal(SIGINT, on_sigint);
  if (file) {
    int f = parse_load(file, span_none());
    if (f < 0) return 2;
    check_file(R.C, f);
    if (diag_count()) diag_flush(stderr);
    else eval_run(R.I, 0);
    fflush(stdout);
  }
  Buf chunk = {0};
  for (;;) {
    char *line = read_line(&R, chunk.n ? "...> " : "shm> ");
    if (!line) break;
    buf_puts(&chunk, line);
    buf_putc(&chunk, '\n');
    free(line);
    if (open_depth(buf_cstr(&chunk)) > 0) continue;
    ErrJmp j;
    if (ERR_TRY(&j)) {
      run_input(&R, buf_cstr(&chunk));
      err_end(&j);
    } else {
      fflush(stdout);
      fprintf(stderr, "error: %s\n", err_message());
    }
    buf_reset(&chunk);
  }
  if (R.tty) putchar('\n');
  buf_free(&chunk);
  eval_free(R.I);
  check_free(R.C);
  return 0;
}
