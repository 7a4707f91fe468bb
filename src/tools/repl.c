/*
** repl.c — the REPL: read a statement (a `def` or an open bracket spans
** lines), check it, run it, print the value of a bare name.  A command of
** the shm> prompt goes to the debugger, which runs the commands of both
** prompts from their table (commands.def); the REPL gives it the lines it
** reads, help on the language (its topics and the primitives), and runs
** `debug STMT` for it.  Help on the commands and their completion come
** from the same table.
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
#include "esc.h"
#include "eval.h"
#include "state.h"
#include "inspect.h"
#include "lex.h"
#include "parse.h"
#include "parser.h"
#include "primdoc.h"
#include "pager.h"
#include "repl.h"
#include "show.h"

typedef struct Repl {
  Checker *C;
  Interp *I;
  Dbg *D;
  Insp top;                  /* the top level, for bare names */
  bool bang;                 /* the entry began with `!`: no command */
  const ReplOptions *opts;
  bool tty;
  bool in_debugger;          /* the prompt showing is (shdb) */
  bool quit;
  bool interrupted;          /* Ctrl-C at the prompt */
  bool eof;                  /* the input ended inside a statement */
  int errors;
  char *history;             /* ~/.shmapi_history, or NULL */
  bool stats_explained;      /* --stats has said what its columns mean */
} Repl;

/* --stats after an input: the table when something communicated, its
   columns explained the first time. */
static void stats_print(Repl *R) {
  if (!fab_stats_any()) return;
  fab_stats_print(stdout, !R->stats_explained);
  R->stats_explained = true;
}

/* The session completion asks about (libedit's callbacks take no context). */
static Repl *the_repl;

/* The keywords a statement starts with, for completion. */
static const char *const keywords[] = {"def", "print", "show", "import", "mesh", "return", NULL};

static const char *skip_ws(const char *s) {
  while (isspace((unsigned char)*s)) s++;
  return s;
}

/* ---- what the lexer sees -------------------------------------------------------------- */

/* An input as the real lexer (lex.h) sees it, so that strings, comments,
   brackets and `\` at the end of a line mean here what they mean to the
   parser.  That tells a command from a bare name, an expression from
   statements, and an input that goes on from one that is complete. */
typedef struct Scan {
  int ntok;                  /* tokens, newlines not counted */
  int first, second;         /* the types of the first two (0: none) */
  Str word;                  /* the first token's text */
  bool spaced;               /* white space (or nothing) after the first */
  bool binds;                /* an `=` outside brackets: it binds names */
  bool open;                 /* it goes on (when it ends in a newline): a
                                bracket is open, its last line ends in `\`,
                                or is a decorator waiting for its def */
  bool bad;                  /* a character the lexer rejects: complete,
                                the parser will say what is wrong */
} Scan;

/* arena_free for err_defer. */
static void free_arena(void *a) { arena_free(a); }

/* Scan text (NUL-terminated; the Strs point into it). */
static Scan scan(const char *text) {
  Scan s;
  memset(&s, 0, sizeof s);
  size_t n = strlen(text);
  Arena a = {0};
  Lexer L;
  lex_init(&L, &a, -1, text, n);
  err_defer(free_arena, &a);                 /* decoded strings */
  int line_first = 0, last_first = 0;        /* first token of this line, of the last one ended */
  bool by_newline = true;                    /* the last line ended at a newline, not at the end */
  uint32_t end0 = 0;
  Tok t;
  for (lex_next(&L, &t); t.type; lex_next(&L, &t)) {
    if (t.type == TK_NL) {
      by_newline = t.sp.len > 0;
      if (line_first) last_first = line_first;
      line_first = 0;
      continue;
    }
    if (!line_first) line_first = t.type;
    if (s.ntok == 0) {
      s.first = t.type;
      s.word = t.text;
      end0 = t.sp.off + t.sp.len;
    } else if (s.ntok == 1) {
      s.second = t.type;
      s.spaced = t.sp.off > end0;
    }
    s.ntok++;
    s.bad |= t.type == TK_ILLEGAL;
    s.binds |= t.type == TK_EQ && L.depth == 0;
  }
  err_undefer(&a);
  arena_free(&a);
  if (s.ntok == 1) s.spaced = true;
  bool continued = !by_newline && n && text[n - 1] == '\n';
  s.open = !s.bad && (L.depth > 0 || continued || last_first == TK_AT);
  return s;
}

/* Inside `prim[...]` at the end of text: true when the innermost open
   bracket is a `[`, with the name before it in *name (empty if none). */
static bool in_brackets(const char *text, Str *name) {
  Arena a = {0};
  Lexer L;
  lex_init(&L, &a, -1, text, strlen(text));
  err_defer(free_arena, &a);
  int kind[LEX_MAXNEST];
  Str before[LEX_MAXNEST];
  int depth = 0;
  Tok t, prev = {0};
  for (lex_next(&L, &t); t.type; prev = t, lex_next(&L, &t)) {
    if (t.type == TK_LBRACK || t.type == TK_LPAREN || t.type == TK_LBRACE || t.type == TK_PSPEC) {
      if (depth < LEX_MAXNEST) {
        kind[depth] = t.type;
        before[depth] = prev.type == TK_IDENT ? prev.text : (Str){text, 0};
      }
      depth++;
    } else if ((t.type == TK_RBRACK || t.type == TK_RPAREN || t.type == TK_RBRACE) && depth) {
      depth--;
    }
  }
  err_undefer(&a);
  arena_free(&a);
  if (!depth || depth > LEX_MAXNEST || kind[depth - 1] != TK_LBRACK) return false;
  *name = before[depth - 1];
  return true;
}

/* ---- reading ------------------------------------------------------------------- */

/* One entry of the history (a whole statement, several lines of a `def`
   as one), written to the history file at once, so a session that dies
   keeps it. */
static void remember(Repl *R, const char *entry) {
  add_history(entry);
  if (R->history) write_history(R->history);
}

/* Read one line: libedit with a prompt on a terminal; otherwise getline,
   echoing the line after its prompt.  NULL at the end of input. */
static char *read_line(Repl *R, const char *prompt) {
  R->in_debugger = !strcmp(prompt, "(shdb) ");
  pager_end();                               /* what the entry printed, paged when long */
  fflush(stdout);
  fflush(stderr);
  if (R->tty) {
    state_cur()->interrupted = 0;
    char *l = readline(prompt);
    if (state_cur()->interrupted) {
      /* Ctrl-C at the prompt: drop the line (and any unfinished input).
         Usually read() returns with EINTR and readline with NULL; a
         Ctrl-C that comes while libedit is still taking in typed-ahead
         characters interrupts no read (and the terminal has thrown the
         unread ones away), so the line that Enter then ends is what was
         left of it: dropped too, never run. */
      free(l);
      state_cur()->interrupted = 0;
      R->interrupted = true;
      putchar('\n');
      return strdup("");
    }
    if (l && *skip_ws(l) && R->in_debugger) remember(R, l);
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

/* One line "USAGE\tSUMMARY" of an entry of the overview (a commands.def
   row's shm_help): USAGE in a column of 20, or alone on its line when
   longer.  With no USAGE, the line is headed by `names` when given, else
   its summary goes on from the line above. */
static void put_overview_line(Buf *b, const char *line, int len, const char *names) {
  const char *tab = memchr(line, '\t', (size_t)len);
  const char *sum = tab ? tab + 1 : line;
  int sn = len - (int)(sum - line);
  const char *use = line;
  int un = tab ? (int)(tab - line) : 0;
  if (!un && names) use = names, un = (int)strlen(names);
  if (!un) buf_printf(b, "%24s", "");
  else if (un <= 20) buf_printf(b, "  %-20.*s  ", un, use);
  else buf_printf(b, "  %.*s\n%24s", un, use, "");
  buf_printf(b, "%.*s\n", sn, sum);
}

/* `help` at shm>: what a line is, then the commands of that prompt from
   commands.def, entry by entry in the order of their ranks.  Rows of one
   rank share an entry, headed by their names. */
static void help_overview(void) {
  Buf b = {0};
  buf_puts(&b, "shm REPL: type statements (equations, def, mesh, print, show, import); they are\n"
               "checked, then run.  A bare name prints its value; a line without `=` such as\n"
               "`add x y` or `f x` prints its results.\n"
               "\n"
               "Commands (when the line is not an equation):\n");
  int max = 0;
  for (const DbgCmd *c = dbg_cmds; c->names; c++)
    if (c->rank > max) max = c->rank;
  for (int r = 1; r <= max; r++) {
    Buf names = {0};
    const DbgCmd *first = NULL;
    int n = 0;
    for (const DbgCmd *c = dbg_cmds; c->names; c++)
      if (c->rank == r) {
        if (!first) first = c;
        buf_printf(&names, "%s%.*s", n++ ? ", " : "", (int)strcspn(c->names, " "), c->names);
      }
    for (const char *p = first ? first->shm_help : ""; *p;) {
      int len = (int)strcspn(p, "\n");
      put_overview_line(&b, p, len, p == first->shm_help && n > 1 ? buf_cstr(&names) : NULL);
      p += len;
      if (*p) p++;
    }
    buf_free(&names);
  }
  buf_puts(&b, "\n"
               "On a terminal, Tab completes keywords, primitives, parameters (psum[a<Tab>),\n"
               "dtypes and mesh axes after dtype= and axes=, names and commands; history\n"
               "(one entry per input) is kept in ~/.shmapi_history; Ctrl-D at ...> cancels\n"
               "the input.\n");
  fputs(buf_cstr(&b), stdout);
  buf_free(&b);
}

static void help_statements(void) {
  puts("Statements:\n"
       "  x = prim[key=value ...] a b      an equation (also f a b for a function call)\n"
       "  x, y = f a                       several results\n"
       "  x:f32[4] = [1., 2., 3., 4.]      a literal, with an optional annotation\n"
       "  def f(a:f32[4]) { ...; return b }        a function (or the jaxpr form\n"
       "  def f = { lambda ; a:f32[4]. let ... in (b,) }    as make_jaxpr prints it)\n"
       "  @shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]   before a def: a per-device body\n"
       "  def g = grad[argnums=(0, 1)] f   a transformed function: linear_transpose[linear=...],\n"
       "                                   jvp, vjp, grad[argnums=...], value_and_grad[argnums=...]\n"
       "  def f = custom_jvp g g_jvp       g with a derivative rule (primals, tangents -> results, tangents)\n"
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
       "  pbroadcast[source=k]    {S}                     broadcast: (p-1)/p * n\n"
       "Unreduced ({U:x}, a summand per device) and reduced ({R:x}) values:\n"
       "  vary_unreduced_cast     varying -> unreduced    none\n"
       "  preduced                invariant -> reduced    none\n"
       "  reduced_vary_cast       reduced -> varying      none\n"
       "  unreduced_psum (pmax, pmin)  unreduced -> invariant  all-reduce\n"
       "  unreduced_reduce_scatter     unreduced -> varying    reduce-scatter\n"
       "  all_gather_reduced      varying -> reduced      all-gather\n"
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

static void help_one_prim(int id);

/* help NAME: the primitive's line, then its primdoc.def row; every row
   of that name (pbroadcast is the cast and, with source=, the broadcast). */
static bool help_prim(const char *name) {
  int id = prim_lookup(str_c(name));
  if (id < 0) return false;
  help_one_prim(id);
  for (int k = id + 1; k < P_COUNT; k++)
    if (!strcmp(prim_table[k].name, prim_table[id].name)) {
      putchar('\n');
      help_one_prim(k);
    }
  return true;
}

static void help_one_prim(int id) {
  const PrimInfo *p = &prim_table[id];
  const PrimDoc *d = primdoc(id);
  Buf b = {0};
  char ops[64];
  prim_signature(&b, p);
  buf_printf(&b, "    %s", operand_text(p, ops, sizeof ops));
  if (p->nout > 0) buf_printf(&b, ", %d result%s", p->nout, p->nout == 1 ? "" : "s");
  else if (p->nout == 0) buf_printf(&b, ", one result per operand");
  else if (p->nout == NOUT_HALF) buf_printf(&b, ", one result per operand (the other half are init values)");
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
}

/* help's topics; a command's help is its row of commands.def. */
typedef struct Topic {
  const char *name;
  void (*show)(void);
} Topic;

static const Topic topics[] = {
  {"commands", help_overview}, {"statements", help_statements}, {"syntax", help_statements},
  {"primitives", help_primitives}, {"collectives", help_collectives}, {"debugger", dbg_help_list},
  {NULL, NULL}
};

/* The debugger's help hook: a topic, a primitive, or (empty) the overview. */
static bool help_topic(void *ctx, const char *t) {
  (void)ctx;
  const Topic *k = topics;
  while (k->name && strcmp(k->name, t)) k++;
  if (!*t) help_overview();
  else if (k->name) k->show();
  else if (!help_prim(t)) return false;
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

/* The words of a space-separated list. */
static void cand_words(const char *list) {
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, " ");
    cand_add(p, n);
    p += n;
    while (*p == ' ') p++;
  }
}

/* The names of the commands of the prompts `at` (DBG_SHM, DBG_SHDB). */
static void cand_commands(int at) {
  for (const DbgCmd *c = dbg_cmds; c->names; c++)
    if (c->at & at) cand_words(c->names);
}

/* The subjects a command's usage offers: "info locals | mesh | ...". */
static void cand_subjects(const char *usage) {
  const char *p = usage + strcspn(usage, " ");
  while (*p) {
    while (*p && !islower((unsigned char)*p)) p++;
    size_t n = 0;
    while (islower((unsigned char)p[n])) n++;
    if (n) cand_add(p, n);
    p += n;
  }
}

static void cand_reset(void) {
  for (int i = 0; i < cands.n; i++) mem_free(cands.v[i]);
  cands.n = 0;
}

static void cand_prims(void) {
  for (int i = 0; i < P_COUNT; i++) {
    cand_add(prim_table[i].name, strlen(prim_table[i].name));
    for (const char *a = prim_table[i].alias; a && *a;) {   /* aliases, space-separated */
      while (*a == ' ') a++;
      size_t n = strcspn(a, " ");
      if (n) cand_add(a, n);
      a += n;
    }
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

/* Values of parameter `key` (the text before '='): dtypes after a dtype
   key, the axes of the program's meshes after axes, axis_name, axis.
   Whether key is one of those. */
static bool cand_param_values(Repl *R, const char *key, size_t n) {
  if (n >= 5 && !strncmp(key + n - 5, "dtype", 5)) {
    for (int d = 0; d < DT_COUNT; d++) cand_add(dtype_names[d], strlen(dtype_names[d]));
    return true;
  }
  if (!((n == 4 && !strncmp(key, "axes", 4)) || (n == 9 && !strncmp(key, "axis_name", 9)) ||
        (n == 4 && !strncmp(key, "axis", 4))))
    return false;
  CheckName names[512];
  int nn = check_list_names(R->C, names, 512);
  for (int i = 0; i < nn; i++) {
    const Mesh *m = names[i].kind == CN_MESH || names[i].kind == CN_FUNC ? names[i].mesh : NULL;
    for (int k = 0; m && k < m->naxes; k++) {
      bool dup = false;
      for (int c = 0; c < cands.n && !dup; c++)
        dup = (int)strlen(cands.v[c]) == m->axis[k].n && !strncmp(cands.v[c], m->axis[k].p, (size_t)m->axis[k].n);
      if (!dup) cand_add(m->axis[k].p, (size_t)m->axis[k].n);
    }
  }
  return true;
}

/* Inside `prim[...]`, completing a parameter's value: the key it is for
   (the name before the '=' that text since then follows, where that text
   is only names, commas, spaces and parentheses), else NULL. */
static const char *value_key(const char *line, int start, size_t *n) {
  int i = start - 1;
  while (i >= 0 && (isalnum((unsigned char)line[i]) || strchr("_ ,()'\"", line[i]))) i--;
  if (i < 0 || line[i] != '=') return NULL;
  int e = i;
  while (e > 0 && line[e - 1] == ' ') e--;
  int b = e;
  while (b > 0 && (isalnum((unsigned char)line[b - 1]) || line[b - 1] == '_')) b--;
  *n = (size_t)(e - b);
  int depth = 0;                   /* (the key is a parameter: inside `[...]`) */
  for (int k = 0; k < b; k++) depth += line[k] == '[' ? 1 : line[k] == ']' ? -1 : 0;
  return *n && depth > 0 ? line + b : NULL;
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
  char *before = mem_strndup(line, (size_t)start);
  Str prim = {before, 0};
  bool open = in_brackets(before, &prim);
  int ws = 0;
  while (ws < start && isspace((unsigned char)line[ws])) ws++;
  int we = ws;
  while (we < start && !isspace((unsigned char)line[we])) we++;
  char first[32] = "";
  if (we < start && we - ws < (int)sizeof first) snprintf(first, sizeof first, "%.*s", we - ws, line + ws);
  int prev = start - 1;
  while (prev >= 0 && line[prev] == ' ') prev--;
  /* the command the line starts with, at either prompt */
  const DbgCmd *cmd = dbg_find(first, R->in_debugger ? DBG_SHDB : DBG_SHM);
  if (!cmd) cmd = dbg_find(first, R->in_debugger ? DBG_SHM : DBG_SHDB);
  size_t keyn = 0;
  const char *key = value_key(line, start, &keyn);
  if (key && cand_param_values(R, key, keyn)) {
    rl_completion_append_character = '\0';
  } else if (open && line[start - 1] != '=') {
    int id = prim.n ? prim_lookup(prim) : -1;
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
  } else if (open) {
    cand_names(R, false, true);
  } else if (ws == start) {
    cand_list(keywords);
    cand_commands(R->in_debugger ? DBG_SHDB : DBG_SHM);
    cand_names(R, true, true);
  } else if (cmd && cmd->arg == DBG_ARG_TOPIC) {
    for (const Topic *k = topics; k->name; k++) cand_add(k->name, strlen(k->name));
    cand_commands(DBG_BOTH);
    cand_prims();
  } else if (cmd && cmd->arg == DBG_ARG_SUBJECT) {
    cand_subjects(cmd->usage);
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
  mem_free(before);
  char **m = rl_completion_matches(text, cand_gen);
  return m;
}

/* ---- running statements -------------------------------------------------------------- */

/* Count a failed input; leave after `quit` (and after the debugger's
   under --debug). */
static void note(DbgResult r, Repl *R) {
  if (r == DBG_ERROR) R->errors++;
  if ((r == DBG_QUIT && R->opts->debug) || r == DBG_LEAVE) R->quit = true;
}

/* Check and run one complete input (under the debugger, stopped before
   its first statement, when `debug`).  An expression line, one that
   starts with a name and binds none (`f x`, `prim[params] args`), prints
   its results. */
static DbgResult run_input(Repl *R, const char *text, bool debug) {
  Scan s = scan(text);
  if (s.first == TK_IDENT && !s.binds) return dbg_run_call(R->D, text, debug);
  int f = parse_load_text("<stdin>", text, strlen(text));
  CheckMark mark = check_mark(R->C);
  int from = check_main(R->C)->nbody;
  check_file(R->C, f);
  if (diag_count()) {
    fflush(stdout);
    diag_flush(stderr);
    check_rollback(R->C, mark);
    return DBG_ERROR;
  }
  fab_stats_reset();
  DbgResult r = dbg_run_main(R->D, from, -1, debug);
  if (r == DBG_OK && R->opts->stats) stats_print(R);
  fflush(stdout);
  return r;
}

/* Does a statement's text define something: a function (`def`, or a
   decorator before one) or a mesh? */
static bool defines(const char *text) {
  const char *t = skip_ws(text);
  while (*t == '#') {                       /* (comments before it) */
    t = strchr(t, '\n');
    if (!t) return false;
    t = skip_ws(t + 1);
  }
  return *t == '@' || (!strncmp(t, "def", 3) && !isalnum((unsigned char)t[3]) && t[3] != '_') ||
         (!strncmp(t, "mesh", 4) && isspace((unsigned char)t[4]));
}

/* Append ", NAME" (no comma first) for the function or mesh a defining
   statement's text names: the word after its `def` or `mesh`. */
static void put_defined_name(Buf *b, const char *text) {
  for (const char *t = text; *t; t++) {
    bool line_start = t == text || t[-1] == '\n';
    size_t k = !line_start ? 0 : !strncmp(t, "def ", 4) ? 4 : !strncmp(t, "mesh ", 5) ? 5 : 0;
    if (!k) continue;
    const char *n = skip_ws(t + k), *e = n;
    while (isalnum((unsigned char)*e) || *e == '_') e++;
    buf_printf(b, "%s%.*s", b->n ? ", " : "", (int)(e - n), n);
    return;
  }
}

/* `-i FILE` when FILE has static errors (reported already): its
   definitions of functions and meshes that check on their own are kept,
   statement by statement in the file's order; nothing else runs. */
static void keep_definitions(Repl *R, int file, const char *path) {
  size_t len;
  const char *text = diag_file_text(file, &len), *end = text + len;
  Buf chunk = {0}, kept = {0};
  int nkept = 0, ndefs = 0;
  for (const char *p = text; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl + 1 : end;
    buf_put(&chunk, p, (size_t)(e - p));
    p = e;
    if (p < end && scan(buf_cstr(&chunk)).open) continue;
    if (defines(buf_cstr(&chunk))) {
      ndefs++;
      int f = parse_load_text(path, chunk.p, chunk.n);
      CheckMark mark = check_mark(R->C);
      int from = check_main(R->C)->nbody;
      if (f >= 0) check_file(R->C, f);
      if (f < 0 || diag_count()) {
        diag_clear();
        check_rollback(R->C, mark);
      } else if (dbg_run_main(R->D, from, -1, false) == DBG_OK) {
        put_defined_name(&kept, buf_cstr(&chunk));
        nkept++;
      }
    }
    buf_reset(&chunk);
  }
  printf("kept %d of the %d definitions in %s (those that check on their own)%s%s; nothing else ran\n", nkept,
         ndefs, path, nkept ? ": " : "", buf_cstr(&kept));
  buf_free(&chunk);
  buf_free(&kept);
}

/* The debugger's hook for `debug ARGS`: statements, or a call. */
static DbgResult debug_input(void *ctx, const char *args) {
  Repl *R = ctx;
  if (scan(args).binds) return run_input(R, args, true);
  return dbg_run_call(R->D, args, true);
}

static bool lone_line(Repl *R, const char *line);

/* The debugger's hook for an alias's expansion at shm>: a command line
   as the REPL takes one, else statements. */
static DbgResult plain_input(void *ctx, const char *text) {
  Repl *R = ctx;
  if (lone_line(R, text)) return DBG_OK;
  Buf b = {0};
  buf_puts(&b, text);
  buf_putc(&b, '\n');
  DbgResult r = run_input(R, buf_cstr(&b), false);
  buf_free(&b);
  return r;
}

/* A bare name: print a variable's value, or a function's checked form. */
static bool print_name(Repl *R, Str name) {
  int r = insp_name(&R->top, name);
  if (r < 0) {
    fflush(stdout);
    fprintf(stderr, "shmapi: error: %.*s has no value (the statement that binds it failed)\n", name.n, name.p);
    R->errors++;
  }
  return r != 0;
}

/* A command line: its first token a name followed by white space (or
   nothing) that names a command of the shm> prompt, and the line binds
   no names (`whos = 3`, `run, x = f y`).  True when it was one. */
static bool repl_command(Repl *R, const Scan *s, const char *line) {
  if (R->bang) return false;
  if (s->first != TK_IDENT || !s->spaced || s->second == TK_EQ || s->second == TK_COMMA || s->second == TK_COLON)
    return false;
  DbgResult r = DBG_OK;
  if (!dbg_command(R->D, line, &r)) {
    /* pdb's habits: a debugger command that names nothing defined here */
    if (check_lookup_var(R->C, s->word) || check_has_func(R->C, s->word) || s->second == TK_LBRACK) return false;
    if (!dbg_command_pdb(R->D, line, &r)) return false;
  }
  note(r, R);
  fflush(stdout);
  return true;
}

/* The first line of an input: a blank line, a command or a bare name is
   complete in itself (true); a statement may go on (false). */
static bool lone_line(Repl *R, const char *line) {
  volatile bool done = false;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    Scan s = scan(line);
    if (!s.ntok) {
      done = true;                           /* blank, or a comment */
    } else if (repl_command(R, &s, line)) {
      done = true;
    } else if (s.ntok == 1 && s.first == TK_IDENT && !s.open) {
      if (!print_name(R, s.word)) {
        fflush(stdout);
        fprintf(stderr, "shmapi: error: unknown name '%.*s'\n", s.word.n, s.word.p);
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

/* The state a ^C interrupts: the REPL's (a signal handler takes no user
   pointer; one REPL per process). */
static ShmState *volatile sigint_state;

static void on_sigint(int sig) {
  (void)sig;
  if (sigint_state) sigint_state->interrupted = 1;
}

static void setup_terminal(Repl *R) {
  static char breaks[] = " \t\n\"'`@$><=;|&{([,";
  rl_readline_name = "shmapi";
  rl_outstream = esc_raw_stdout();              /* the editor's own output, not escaped */
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
  R.top = (Insp){.C = R.C, .I = R.I, .focus = -1};
  DbgHooks hooks = {dbg_reader, help_topic, debug_input, plain_input, &R};
  R.D = dbg_new(R.C, R.I, &hooks);
  eval_set_max_steps(R.I, (long)opts->max_steps);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigint_state = state_cur();
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
      keep_definitions(&R, f, file);
    } else {
      int n = check_main(R.C)->nbody;
      dbg_set_program(R.D, f, n);
      fab_stats_reset();
      DbgResult r = dbg_run_main(R.D, 0, n, opts->debug);
      note(r, &R);
      if (r == DBG_OK && opts->stats) stats_print(&R);
      if (opts->debug && r == DBG_OK) puts("The program finished; `run` or `restart` runs it again.");
    }
    fflush(stdout);
  }
  Buf chunk = {0};
  volatile size_t bang_at = SIZE_MAX;        /* where the entry's `!` was */
  while (!R.quit) {
    char *line = read_line(&R, chunk.n ? "...> " : "shm> ");
    if (!line && chunk.n && R.tty) {
      /* Ctrl-D at `...>`: the unfinished entry is dropped, the session goes on */
      puts("\n(entry cancelled)");
      buf_reset(&chunk);
      continue;
    }
    if (!line && chunk.n) {
      /* the input ends inside a statement: check it, to say what is missing */
      line = strdup("");
      R.eof = true;
    }
    if (!line) break;
    if (R.tty) pager_begin(pager_rows());
    state_cur()->interrupted = 0;
    if (R.interrupted) {
      R.interrupted = false;
      buf_reset(&chunk);
      free(line);
      continue;
    }
    /* pdb's `!`: what follows is a statement or an expression, never a command */
    char *bang = chunk.n ? NULL : (char *)skip_ws(line);
    R.bang = bang && *bang == '!';
    if (!chunk.n) bang_at = R.bang ? (size_t)(bang - line) : SIZE_MAX;
    if (R.bang) *bang = ' ';
    if (!chunk.n && !R.eof && lone_line(&R, line)) {
      if (R.bang) *bang = '!';               /* (the history keeps what was typed) */
      if (R.tty && *skip_ws(line)) remember(&R, line);
      free(line);
      continue;
    }
    buf_puts(&chunk, line);
    buf_putc(&chunk, '\n');
    free(line);
    volatile bool more = false;
    ErrJmp j;
    if (ERR_TRY(&j)) {
      more = !R.eof && scan(buf_cstr(&chunk)).open;
      if (!more) note(run_input(&R, buf_cstr(&chunk), false), &R);
      err_end(&j);
    } else {
      fflush(stdout);
      fprintf(stderr, "shmapi: error: %s\n", err_message());
      R.errors++;
    }
    if (more) continue;
    if (R.tty && *skip_ws(buf_cstr(&chunk))) {
      chunk.p[--chunk.n] = 0;              /* (without its last newline) */
      if (bang_at < chunk.n) chunk.p[bang_at] = '!';
      remember(&R, buf_cstr(&chunk));
    }
    buf_reset(&chunk);
    if (R.eof) break;
  }
  pager_end();
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
