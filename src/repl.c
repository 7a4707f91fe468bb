/*
** repl.c — the REPL: read a statement (a `def` or an open bracket spans
** lines), check it, run it, print the value of a bare name; answer the
** inspection commands; hand the debugger's commands to debug.c.
**
** The line reader is libedit's readline on a terminal and plain getline
** otherwise (then each line is echoed after its prompt, so a scripted
** session prints as a readable transcript).  The debugger reads its
** `(shdb)` commands through the same reader.
*/
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <editline/readline.h>
#include "buf.h"
#include "check.h"
#include "debug.h"
#include "diag.h"
#include "err.h"
#include "eval.h"
#include "parse.h"
#include "primdoc.h"
#include "repl.h"
#include "show.h"

typedef struct Repl {
  Checker *C;
  Interp *I;
  Dbg *D;
  const ReplOptions *opts;
  bool tty;
  bool in_debugger;          /* the prompt showing is (shdb) */
  bool quit;
  bool interrupted;          /* Ctrl-C at the prompt */
  bool eof;                  /* the input ended inside a statement */
  int errors;
  char *history;             /* ~/.shmapi_history, or NULL */
} Repl;

/* The session completion asks about (libedit's callbacks take no context). */
static Repl *the_repl;

static const char *const keywords[] = {"def", "print", "show", "import", "mesh", "return", NULL};

/* Commands of the shm> prompt (the debugger answers the breakpoint ones). */
static const char *const repl_commands[] = {
  "help", "whos", "info", "debug", "run", "restart", "break", "tbreak", "clear", "disable", "enable",
  "condition", "ignore", "display", "undisplay", "quit", "exit", NULL
};

static const char *const help_topics[] = {
  "commands", "debugger", "primitives", "collectives", "statements", NULL
};

static bool in_list(const char *const *list, const char *w) {
  for (int i = 0; list[i]; i++)
    if (!strcmp(list[i], w)) return true;
  return false;
}

static const char *skip_ws(const char *s) {
  while (isspace((unsigned char)*s)) s++;
  return s;
}

/* ---- reading ------------------------------------------------------------------- */

/* Bracket depth of a chunk of text, skipping strings and comments.  A
   trailing decorator line also asks for more. */
static int open_depth(const char *s) {
  int depth = 0;
  char q = 0;
  for (const char *p = s; *p; p++) {
    if (q) {
      if (*p == '\\' && p[1]) p++;
      else if (*p == q) q = 0;
      else if (*p == '\n') q = 0;
      continue;
    }
    if (*p == '#') { while (*p && *p != '\n') p++; if (!*p) break; continue; }
    if (*p == '\'' || *p == '"') q = *p;
    else if (*p == '(' || *p == '[' || *p == '{') depth++;
    else if (*p == ')' || *p == ']' || *p == '}') depth--;
  }
  if (depth > 0) return depth;
  /* a decorator line waits for its def */
  const char *t = s + strlen(s);
  while (t > s && isspace((unsigned char)t[-1])) t--;
  const char *ls = t;
  while (ls > s && ls[-1] != '\n') ls--;
  while (ls < t && isspace((unsigned char)*ls)) ls++;
  return *ls == '@' ? 1 : 0;
}

/* Does the line bind names (an `=` outside brackets and strings)? */
static bool is_equation(const char *s) {
  int depth = 0;
  char q = 0;
  for (const char *p = s; *p; p++) {
    if (q) {
      if (*p == '\\' && p[1]) p++;
      else if (*p == q) q = 0;
      continue;
    }
    if (*p == '#') break;
    if (*p == '\'' || *p == '"') q = *p;
    else if (*p == '(' || *p == '[' || *p == '{') depth++;
    else if (*p == ')' || *p == ']' || *p == '}') depth--;
    else if (*p == '=' && depth == 0) return true;
  }
  return false;
}

/* One identifier and nothing else: its length, or 0. */
static int bare_name(const char *s) {
  s = skip_ws(s);
  const char *b = s;
  if (!isalpha((unsigned char)*s) && *s != '_') return 0;
  while (isalnum((unsigned char)*s) || *s == '_') s++;
  int n = (int)(s - b);
  s = skip_ws(s);
  if (*s == '#') return n;
  return *s ? 0 : n;
}

/* Read one line: libedit with a prompt on a terminal; otherwise getline,
   echoing the line after its prompt.  NULL at the end of input. */
static char *read_line(Repl *R, const char *prompt) {
  R->in_debugger = !strcmp(prompt, "(shdb) ");
  fflush(stdout);
  fflush(stderr);
  if (R->tty) {
    eval_interrupted = 0;
    char *l = readline(prompt);
    if (!l && eval_interrupted) {
      /* Ctrl-C at the prompt: drop the line (and any unfinished input) */
      eval_interrupted = 0;
      R->interrupted = true;
      putchar('\n');
      return strdup("");
    }
    if (l && *skip_ws(l)) add_history(l);
    return l;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    return NULL;
  }
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
  printf("%s%s\n", prompt, line);
  fflush(stdout);
  return line;
}

/* The debugger's reader: Ctrl-C at its prompt just shows a new one. */
static char *dbg_reader(void *ctx, const char *prompt) {
  Repl *R = ctx;
  for (;;) {
    char *l = read_line(R, prompt);
    if (!l || !R->interrupted) return l;
    R->interrupted = false;
    free(l);
  }
}

/* ---- help -------------------------------------------------------------------------- */

static void help_overview(void) {
  puts("shm REPL: type statements (equations, def, mesh, print, show, import); they are\n"
       "checked, then run.  A bare name prints its value; a line without `=` such as\n"
       "`add x y` or `f x` prints its results.\n"
       "\n"
       "Commands (when the line is not an equation):\n"
       "  help [TOPIC]          topics: commands, statements, primitives, collectives,\n"
       "                        debugger, or a primitive's or a command's name\n"
       "  whos                  the names defined: kind, type (with variance), devices\n"
       "  info mesh             each mesh: axes, sizes and the device grid\n"
       "  info break | display  breakpoints and displays\n"
       "  show F                a function after checking (a statement of the language)\n"
       "  debug STMT            run a statement under the debugger, stopped before it\n"
       "  debug F ARGS          call F under the debugger, stopped in its first statement\n"
       "  break, tbreak, clear, disable, enable, condition, ignore, display, undisplay\n"
       "                        set breakpoints before running (see help debugger)\n"
       "  run                   run the program file again, stopping at breakpoints\n"
       "  restart               run it again, stopped before its first statement\n"
       "  quit, exit, Ctrl-D    leave; Ctrl-C stops a running statement\n"
       "\n"
       "On a terminal, Tab completes keywords, primitives, parameters (psum[a<Tab>),\n"
       "names and commands; history is kept in ~/.shmapi_history.");
}

static void help_statements(void) {
  puts("Statements:\n"
       "  x = prim[key=value ...] a b      an equation (also f a b for a function call)\n"
       "  x, y = f a                       several results\n"
       "  x:f32[4] = [1., 2., 3., 4.]      a literal, with an optional annotation\n"
       "  def f(a:f32[4]) { ...; return b }        a function (or the jaxpr form\n"
       "  def f = { lambda ; a:f32[4]. let ... in (b,) }    as make_jaxpr prints it)\n"
       "  @shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]   before a def: a per-device body\n"
       "  @pmap[axis_name=i]  @xmap[in_axes=[b, ...], out_axes=[b, ...]]   pmap and xmap\n"
       "  def f[axis](x) { ... }           static parameters, given at each call: f[axis=i] x\n"
       "  mesh m = {i: 4, j: 2}            a mesh of devices\n"
       "  print \"x is\", x                  print values (inside a body: every device's block)\n"
       "  show f                           a function after checking\n"
       "  import \"file.shm\"                definitions from another file");
}

static const char *operand_text(const PrimInfo *p, char *buf, size_t n) {
  if (p->nin_max < 0) snprintf(buf, n, "%d or more operands", p->nin_min);
  else if (p->nin_min == p->nin_max) snprintf(buf, n, "%d operand%s", p->nin_min, p->nin_min == 1 ? "" : "s");
  else snprintf(buf, n, "%d to %d operands", p->nin_min, p->nin_max);
  return buf;
}

static void prim_signature(Buf *b, const PrimInfo *p) {
  buf_puts(b, p->name);
  size_t np = prim_params_len(p->params);
  if (np) {
    buf_putc(b, '[');
    for (const char *s = p->params; s < p->params + np; s++) buf_puts(b, *s == ' ' ? ", " : (char[2]){*s, 0});
    buf_putc(b, ']');
  }
}

static void help_primitives(void) {
  puts("Primitives (name[parameters], operands); `help NAME` for one:");
  for (int i = 0; i < P_COUNT; i++) {
    const PrimInfo *p = &prim_table[i];
    Buf b = {0};
    char ops[64];
    buf_puts(&b, "  ");
    prim_signature(&b, p);
    while (b.n < 44) buf_putc(&b, ' ');
    buf_printf(&b, " %s", operand_text(p, ops, sizeof ops));
    if (p->alias) buf_printf(&b, " (alias %s)", p->alias);
    puts(buf_cstr(&b));
    buf_free(&b);
  }
}

static void help_collectives(void) {
  puts("Collectives (inside a shard_map body; {S} is the operand's variance set):\n"
       "  primitive               result variance         communication\n"
       "  psum, pmax, pmin        {S} - axes              all-reduce: 2(p-1)/p * n per device\n"
       "  pmean                   {S} - axes              all-reduce, divided by the group size\n"
       "  pbroadcast (pvary)      {S} + axes              none (operand invariant along axes)\n"
       "  all_gather              {S} + axis_name         all-gather: (p-1) * n\n"
       "  all_gather_invariant    {S} - axis_name         all-gather\n"
       "  psum_scatter            {S} + axis_name         reduce-scatter: (p-1)/p * n\n"
       "  pscatter                {S} + axis_name         none (a local slice)\n"
       "  ppermute                {S} + axis_name         point-to-point: n per pair\n"
       "  all_to_all              {S} + axis_name         all-to-all: (p-1)/p * n\n"
       "  axis_index              {axis_name}             none\n"
       "An operand invariant along the named axes is pbroadcast first (auto-pbroadcast),\n"
       "so psum[axes=i] 1 is the size of axis i.  A group is the instances that differ\n"
       "only along the named axes; with several axes the first listed is major.\n"
       "n is the bytes of one device's operand, p the group size; --stats totals them.");
}

/* Text wrapped at 79 columns, each line after `indent`. */
static void put_wrapped(const char *indent, const char *text) {
  size_t width = 79 - strlen(indent), col = 0;
  const char *p = text;
  Buf b = {0};
  buf_puts(&b, indent);
  while (*p) {
    while (*p == ' ') p++;
    size_t n = strcspn(p, " ");
    if (!n) break;
    if (col && col + 1 + n > width) {
      buf_putc(&b, '\n');
      buf_puts(&b, indent);
      col = 0;
    }
    if (col) buf_putc(&b, ' '), col++;
    buf_put(&b, p, n);
    col += n;
    p += n;
  }
  puts(buf_cstr(&b));
  buf_free(&b);
}

/* help NAME: the primitive's line, then its primdoc.def row. */
static bool help_prim(const char *name) {
  int id = prim_lookup(str_c(name));
  if (id < 0) return false;
  const PrimInfo *p = &prim_table[id];
  const PrimDoc *d = primdoc(id);
  Buf b = {0};
  char ops[64];
  prim_signature(&b, p);
  buf_printf(&b, "    %s", operand_text(p, ops, sizeof ops));
  if (p->nout > 0) buf_printf(&b, ", %d result%s", p->nout, p->nout == 1 ? "" : "s");
  puts(buf_cstr(&b));
  buf_free(&b);
  if (p->alias) printf("  also spelled %s\n", p->alias);
  put_wrapped("  ", d->summary);
  int n;
  const PrimParamDoc *pd = primdoc_params(id, &n);
  if (n) puts("Parameters:");
  else puts("Parameters: none.");
  for (int k = 0; k < n; k++) {
    printf("  %s: %s, %s%s\n", pd[k].name, pd[k].type, strncmp(pd[k].dflt, "required", 8) ? "default " : "",
           pd[k].dflt);
    put_wrapped("      ", pd[k].meaning);
  }
  puts("Variance:");
  put_wrapped("  ", d->variance);
  printf("Example:\n  %s\n", d->example);
  return true;
}

static bool help_topic(void *ctx, const char *t) {
  (void)ctx;
  if (!*t) help_overview();
  else if (!strcmp(t, "commands")) help_overview();
  else if (!strcmp(t, "statements") || !strcmp(t, "syntax")) help_statements();
  else if (!strcmp(t, "primitives")) help_primitives();
  else if (!strcmp(t, "collectives")) help_collectives();
  else if (!strcmp(t, "debugger")) dbg_help(NULL);
  else if (!strcmp(t, "debug")) puts("debug STMT | debug F ARGS\n"
                                      "Run a statement under the debugger, stopped before it, or call F with\n"
                                      "ARGS under the debugger, stopped in its first statement; the results\n"
                                      "print as a bare name prints.");
  else if (!strcmp(t, "whos")) puts("whos\nThe names defined: kind, type (with variance) and the devices of each.");
  else if (!strcmp(t, "quit") || !strcmp(t, "exit")) puts("quit\nLeave shmapi (Ctrl-D does too).");
  else if (help_prim(t)) ;
  else if (dbg_help(t)) ;
  else return false;
  fflush(stdout);
  return true;
}

/* ---- completion ------------------------------------------------------------------- */

typedef struct Cands {
  char **v;
  int n, cap;
} Cands;

static Cands cands;

static void cand_add(const char *s, size_t n) {
  for (int i = 0; i < cands.n; i++)
    if (strlen(cands.v[i]) == n && !strncmp(cands.v[i], s, n)) return;
  VEC_GROW(cands.v, cands.cap, cands.n + 1);
  cands.v[cands.n++] = mem_strndup(s, n);
}

static void cand_list(const char *const *l) {
  for (int i = 0; l[i]; i++) cand_add(l[i], strlen(l[i]));
}

static void cand_reset(void) {
  for (int i = 0; i < cands.n; i++) mem_free(cands.v[i]);
  cands.n = 0;
}

static void cand_prims(void) {
  for (int i = 0; i < P_COUNT; i++) {
    cand_add(prim_table[i].name, strlen(prim_table[i].name));
    if (prim_table[i].alias) cand_add(prim_table[i].alias, strlen(prim_table[i].alias));
  }
}

static void cand_names(Repl *R, bool vars, bool funcs) {
  const char *names[4096];
  bool is_func[4096];
  int n = check_names(R->C, names, 4096, is_func);
  for (int i = 0; i < n; i++)
    if ((is_func[i] && funcs) || (!is_func[i] && vars && !R->in_debugger)) cand_add(names[i], strlen(names[i]));
  if (vars && R->in_debugger) {
    n = dbg_visible_names(R->D, names, 4096);
    for (int i = 0; i < n; i++) cand_add(names[i], strlen(names[i]));
  }
}

static char *cand_gen(const char *text, int state) {
  static int i;
  static size_t n;
  if (!state) {
    i = 0;
    n = strlen(text);
  }
  while (i < cands.n) {
    const char *c = cands.v[i++];
    if (!strncmp(c, text, n)) return strdup(c);
  }
  return NULL;
}

static char *no_files(const char *text, int state) {
  (void)text;
  (void)state;
  return NULL;
}

static char **complete(const char *text, int start, int end) {
  (void)end;
  Repl *R = the_repl;
  const char *line = rl_line_buffer;
  cand_reset();
  rl_completion_append_character = ' ';
  rl_attempted_completion_over = 1;        /* never fall back to file names */
  /* inside `prim[...]`: its parameter names */
  int depth = 0, open = -1;
  for (int i = start - 1; i >= 0; i--) {
    if (line[i] == ']' || line[i] == ')') depth++;
    else if (line[i] == '[' || line[i] == '(') {
      if (depth == 0) {
        if (line[i] == '[') open = i;
        break;
      }
      depth--;
    }
  }
  int ws = 0;
  while (ws < start && isspace((unsigned char)line[ws])) ws++;
  int we = ws;
  while (we < start && !isspace((unsigned char)line[we])) we++;
  char first[32] = "";
  if (we < start && we - ws < (int)sizeof first) snprintf(first, sizeof first, "%.*s", we - ws, line + ws);
  int prev = start - 1;
  while (prev >= 0 && line[prev] == ' ') prev--;
  if (open >= 0 && (start == 0 || line[start - 1] != '=')) {
    int e = open;
    while (e > 0 && line[e - 1] == ' ') e--;
    int b = e;
    while (b > 0 && (isalnum((unsigned char)line[b - 1]) || line[b - 1] == '_')) b--;
    Str w = {line + b, e - b};
    int id = prim_lookup(w);
    if (id >= 0 && prim_table[id].params) {
      const char *p = prim_table[id].params, *end = p + prim_params_len(p);
      while (p < end) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char key[64];
        snprintf(key, sizeof key, "%.*s=", (int)n, p);
        cand_add(key, strlen(key));
        p += n;
        while (*p == ' ') p++;
      }
      rl_completion_append_character = '\0';
    }
  } else if (open >= 0) {
    cand_names(R, false, true);
  } else if (ws == start) {
    cand_list(keywords);
    cand_list(R->in_debugger ? dbg_command_names : repl_commands);
    cand_names(R, true, true);
  } else if (!strcmp(first, "help") || !strcmp(first, "h")) {
    cand_list(help_topics);
    cand_list(repl_commands);
    cand_list(dbg_command_names);
    cand_prims();
  } else if (!strcmp(first, "info")) {
    static const char *const info[] = {"locals", "mesh", "break", "display", NULL};
    cand_list(info);
  } else if (prev >= 0 && line[prev] == '=') {
    cand_prims();
    cand_names(R, true, true);
  } else {
    cand_names(R, true, true);
    cand_prims();
  }
  /* a primitive with parameters completes without a space: `[` follows */
  int only = -1, nmatch = 0;
  for (int i = 0; i < cands.n; i++)
    if (!strncmp(cands.v[i], text, strlen(text))) { only = i; nmatch++; }
  if (nmatch == 1) {
    int id = prim_lookup(str_c(cands.v[only]));
    if (id >= 0 && prim_table[id].params && *prim_table[id].params) rl_completion_append_character = '\0';
  }
  char **m = rl_completion_matches(text, cand_gen);
  return m;
}

/* ---- running statements -------------------------------------------------------------- */

static void note(DbgResult r, Repl *R) {
  if (r == DBG_ERROR) R->errors++;
  if (r == DBG_QUIT && R->opts->debug) R->quit = true;
}

/* An expression line: `f x` or `prim[params] args`, no `=`, no keyword. */
static bool is_expression(const char *text) {
  const char *s = skip_ws(text);
  if (!isalpha((unsigned char)*s) && *s != '_') return false;
  size_t n = 0;
  while (isalnum((unsigned char)s[n]) || s[n] == '_') n++;
  char w[32];
  if (n >= sizeof w) return !is_equation(text);
  memcpy(w, s, n);
  w[n] = 0;
  return !in_list(keywords, w) && !is_equation(text);
}

/* Check and run one complete input (under the debugger, stopped before
   its first statement, when `debug`); an expression line prints its value. */
static void run_input(Repl *R, const char *text, bool debug) {
  if (is_expression(text)) {
    note(dbg_run_call(R->D, text, debug), R);
    return;
  }
  int f = parse_load_text("<stdin>", text, strlen(text));
  CheckMark mark = check_mark(R->C);
  int from = check_main(R->C)->nbody;
  check_file(R->C, f);
  if (diag_count()) {
    fflush(stdout);
    diag_flush(stderr);
    check_rollback(R->C, mark);
    R->errors++;
    return;
  }
  fab_stats_reset();
  DbgResult r = dbg_run_main(R->D, from, -1, debug);
  note(r, R);
  if (r == DBG_OK && R->opts->stats) fab_stats_print(stdout);
  fflush(stdout);
}

/* A bare name: print a variable's value, or a function's checked form. */
static bool print_name(Repl *R, const char *text, int n) {
  Str name = {skip_ws(text), n};
  IrVar *v = check_lookup_var(R->C, name);
  if (v) {
    Val *val = eval_global(R->I, v);
    if (!val) {
      fflush(stdout);
      fprintf(stderr, "shmapi: error: %.*s has no value (the statement that binds it failed)\n", n, name.p);
      R->errors++;
      return true;
    }
    Buf b = {0};
    Space sp = {NULL, 1, NULL};
    eval_print_value(&b, &sp, val, true);
    buf_putc(&b, '\n');
    fwrite(b.p, 1, b.n, stdout);
    fflush(stdout);
    buf_free(&b);
    return true;
  }
  Buf b = {0};
  if (check_show_func(R->C, name, &b)) {
    fputs(buf_cstr(&b), stdout);
    fflush(stdout);
    buf_free(&b);
    return true;
  }
  buf_free(&b);
  return false;
}

/* A command line: true when it was one. */
static bool repl_command(Repl *R, const char *line) {
  const char *s = skip_ws(line);
  char w[32];
  int n = 0;
  while (s[n] && !isspace((unsigned char)s[n]) && n < 31) { w[n] = s[n]; n++; }
  w[n] = 0;
  if (!n || (s[n] && !isspace((unsigned char)s[n])) || !in_list(repl_commands, w)) return false;
  const char *args = skip_ws(s + n);
  if (*args == '=' || *args == ',' || *args == ':') return false;    /* it names a binder */
  if (!strcmp(w, "quit") || !strcmp(w, "exit")) {
    R->quit = true;
  } else if (!strcmp(w, "help")) {
    char t[128];
    snprintf(t, sizeof t, "%s", args);
    for (size_t k = strlen(t); k && isspace((unsigned char)t[k - 1]); k--) t[k - 1] = 0;
    if (!help_topic(R, t)) printf("*** no help on '%s' (help lists the topics)\n", t);
  } else if (!strcmp(w, "debug")) {
    if (!*args) puts("*** debug needs a statement or a call: debug y = f x, or debug f x");
    else if (is_equation(args)) run_input(R, args, true);
    else note(dbg_run_call(R->D, args, true), R);
  } else {
    DbgResult r = DBG_OK;
    if (!dbg_command(R->D, line, &r)) return false;
    note(r, R);
  }
  fflush(stdout);
  return true;
}

/* The first line of an input: a blank line, a command or a bare name is
   complete in itself (true); a statement may go on (false). */
static bool lone_line(Repl *R, const char *line) {
  if (!*skip_ws(line) || *skip_ws(line) == '#') return true;
  volatile bool done = false;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    int n = bare_name(line);
    if (repl_command(R, line)) {
      done = true;
    } else if (n) {
      if (!print_name(R, line, n)) {
        fflush(stdout);
        fprintf(stderr, "shmapi: error: unknown name '%.*s'\n", n, skip_ws(line));
        R->errors++;
      }
      done = true;
    }
    err_end(&j);
  } else {
    fflush(stdout);
    fprintf(stderr, "shmapi: error: %s\n", err_message());
    R->errors++;
    done = true;
  }
  return done;
}

static void on_sigint(int sig) {
  (void)sig;
  eval_interrupted = 1;
}

static void setup_terminal(Repl *R) {
  static char breaks[] = " \t\n\"'`@$><=;|&{([,";
  rl_readline_name = "shmapi";
  rl_attempted_completion_function = complete;
  rl_completion_entry_function = no_files;
  rl_completer_word_break_characters = breaks;
  rl_basic_word_break_characters = breaks;      /* the one libedit reads */
  using_history();
  stifle_history(1000);
  const char *home = getenv("HOME");
  if (home && *home) {
    size_t n = strlen(home) + 32;
    R->history = mem_alloc(n);
    snprintf(R->history, n, "%s/.shmapi_history", home);
    read_history(R->history);
  }
}

int repl_main(const char *file, const ReplOptions *opts) {
  Repl R;
  memset(&R, 0, sizeof R);
  the_repl = &R;
  R.opts = opts;
  R.tty = isatty(0) && isatty(1);
  R.C = check_new();
  R.I = eval_new(check_main(R.C));
  R.D = dbg_new(R.C, R.I, dbg_reader, help_topic, &R);
  eval_set_max_steps(R.I, (long)opts->max_steps);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  if (R.tty) setup_terminal(&R);
  int status = 0;
  if (file) {
    int f = parse_load(file, span_none());
    if (f < 0) { status = 2; goto done; }
    CheckMark mark = check_mark(R.C);
    check_file(R.C, f);
    if (diag_count()) {
      diag_flush(stderr);
      check_rollback(R.C, mark);
      R.errors++;
      if (opts->debug) { status = 1; goto done; }
    } else {
      int n = check_main(R.C)->nbody;
      dbg_set_program(R.D, f, n);
      fab_stats_reset();
      DbgResult r = dbg_run_main(R.D, 0, n, opts->debug);
      note(r, &R);
      if (r == DBG_OK && opts->stats) fab_stats_print(stdout);
      if (opts->debug && r == DBG_OK) puts("The program finished; `run` or `restart` runs it again.");
    }
    fflush(stdout);
  }
  Buf chunk = {0};
  while (!R.quit) {
    char *line = read_line(&R, chunk.n ? "...> " : "shm> ");
    if (!line && chunk.n) {
      /* the input ends inside a statement: check it, to say what is missing */
      line = strdup("");
      R.eof = true;
    }
    if (!line) break;
    eval_interrupted = 0;
    if (R.interrupted) {
      R.interrupted = false;
      buf_reset(&chunk);
      free(line);
      continue;
    }
    if (!chunk.n && !R.eof && lone_line(&R, line)) {
      free(line);
      continue;
    }
    buf_puts(&chunk, line);
    buf_putc(&chunk, '\n');
    free(line);
    if (open_depth(buf_cstr(&chunk)) > 0 && !R.eof) continue;
    ErrJmp j;
    if (ERR_TRY(&j)) {
      run_input(&R, buf_cstr(&chunk), false);
      err_end(&j);
    } else {
      fflush(stdout);
      fprintf(stderr, "shmapi: error: %s\n", err_message());
      R.errors++;
    }
    buf_reset(&chunk);
    if (R.eof) break;
  }
  if (R.tty && !R.quit) putchar('\n');
  buf_free(&chunk);
  if (R.history) {
    write_history(R.history);
    mem_free(R.history);
  }
  if (!R.tty && R.errors) status = 1;
done:
  fflush(stdout);
  cand_reset();
  mem_free(cands.v);
  cands.v = NULL;
  cands.cap = 0;
  dbg_free(R.D);
  eval_free(R.I);
  check_free(R.C);
  the_repl = NULL;
  return status;
}
