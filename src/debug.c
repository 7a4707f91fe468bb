/*
** debug.c — the debugger (see debug.h).
**
** The debugger is a trace function (eval_set_trace) plus a command loop.
** The trace decides at each event whether to stop: a breakpoint whose
** line or function matches and whose condition holds on some instance, a
** pending `step`/`next`/`until`/`return`, or Ctrl-C.  At a stop it prints
** where the run is, what a collective is about to send, the displays that
** changed, and reads commands until one resumes the run.  `quit`, `run`
** and `restart` abandon the running statement (eval_abandon); the caller
** of dbg_run_main sees why.
**
** A frame of the run (eval.h) is shown to the user unless it is the
** wrapper that a decorated shard_map function makes (its one statement is
** the shard_map equation) or the function the debugger compiled for
** `debug f a b`.  Depth counts every frame, shown or not.
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "debug.h"
#include "diag.h"
#include "err.h"
#include "format.h"
#include "parse.h"
#include "show.h"

typedef struct CondCache {
  IrStmt *st, *outer;        /* where the condition was compiled */
  IrFunc *fn;
} CondCache;

typedef struct Bp {
  int no;
  bool temp, enabled;
  int file, line;            /* a line breakpoint (file >= 0) */
  char *func;                /* a function breakpoint */
  char *cond;                /* NULL: unconditional */
  int hits, ignore;
  CondCache *cache;
  int ncache, capcache;
} Bp;

typedef struct Display {
  int no;
  char *expr;
  char *last;                /* what it printed at the last stop */
} Display;

typedef enum { M_RUN, M_STEP, M_NEXT, M_UNTIL, M_RETURN } Mode;
typedef enum { REQ_NONE, REQ_QUIT, REQ_RUN, REQ_RESTART } Request;

struct Dbg {
  Checker *C;
  Interp *I;
  DbgReader read;
  DbgHelp help;
  void *ctx;
  int prog_file, prog_n;     /* the program file and its statements */
  Bp **bps;
  int nbp, capbp, bp_next;
  Display **disp;
  int ndisp, capdisp, disp_next;
  Mode mode;
  int target;                /* depth that next/until/return watch */
  int until_file, until_line;
  IrFunc *skip_fn;           /* the function compiled for `debug f a b` */
  bool engaged;              /* stopping was asked for: Ctrl-C stops too */
  bool main_running;
  Request req;
  /* where the run is (valid inside the trace and at a stop) */
  Frame *frame;
  IrStmt *stmt;              /* NULL at a return */
  EvalEvent ev;
  bool stopped;
  Frame *sel;                /* the frame `up`/`down` selected */
  int64_t focus;             /* `device N`; -1: every device */
  char *last_cmd;
  int list_next;             /* where a repeated `list` goes on (0: around the line) */
  /* a collective stepped over: report what was received */
  Frame *coll_frame;
  IrStmt *coll_stmt;
  char **pool;               /* the names dbg_visible_names handed out */
  int npool, cappool;
};

/* ---- small helpers ---------------------------------------------------------- */

static const char *skip_ws(const char *s) {
  while (isspace((unsigned char)*s)) s++;
  return s;
}

/* A copy of s without surrounding white space. */
static char *trimmed(const char *s) {
  s = skip_ws(s);
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) n--;
  return mem_strndup(s, n);
}

static bool parse_int(const char *s, int64_t *out) {
  s = skip_ws(s);
  char *end;
  if (!*s) return false;
  long long v = strtoll(s, &end, 10);
  if (end == s || *skip_ws(end)) return false;
  *out = v;
  return true;
}

static void emit(Buf *b) {
  if (b->n) fwrite(b->p, 1, b->n, stdout);
  buf_reset(b);
  fflush(stdout);
}

static void say(const char *fmt, ...) SHM_PRINTF(1, 2);
static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

#define complain(...) (printf("*** "), say(__VA_ARGS__))

/* The collected diagnostics, as "message; message", then forgotten. */
static void take_diags(Buf *out) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) { diag_clear(); return; }
  diag_flush(m);
  fclose(m);
  for (char *l = text; l && *l;) {
    char *e = strchr(l, '\n');
    if (!e) e = l + strlen(l);
    char *k = strstr(l, ": error: ");
    if (k && k < e) {
      if (out->n) buf_puts(out, "; ");
      buf_put(out, k + 9, (size_t)(e - (k + 9)));
    }
    l = *e ? e + 1 : e;
  }
  free(text);
}

/* ---- meshes and devices --------------------------------------------------------- */

static int64_t dev_of(const Mesh *m, const int64_t *c) {
  int64_t d = 0;
  for (int k = 0; k < m->naxes; k++) d = d * m->size[k] + c[k];
  return d;
}

static void put_axis(Buf *b, const Mesh *m, int k) { buf_put(b, m->axis[k].p, (size_t)m->axis[k].n); }

static void put_coords(Buf *b, const Mesh *m, int64_t d) {
  int64_t c[SHM_MAXAXES];
  val_coords(m, d, c);
  buf_putc(b, '(');
  for (int k = 0; k < m->naxes; k++) buf_printf(b, "%s%lld", k ? ", " : "", (long long)c[k]);
  buf_puts(b, m->naxes == 1 ? ",)" : ")");
}

static void put_axes_tuple(Buf *b, const Mesh *m) {
  buf_putc(b, '(');
  for (int k = 0; k < m->naxes; k++) {
    if (k) buf_puts(b, ", ");
    put_axis(b, m, k);
  }
  buf_puts(b, m->naxes == 1 ? ",)" : ")");
}

/* "all 4 devices", "device 3", "devices 0, 2", "devices 0-5, 9". */
static void put_devset(Buf *b, const uint8_t *set, int64_t n) {
  int64_t c = 0;
  for (int64_t d = 0; d < n; d++) c += !set || set[d];
  if (c == n && n == 2) { buf_puts(b, "both devices"); return; }
  if (c == n && n > 2) { buf_printf(b, "all %lld devices", (long long)n); return; }
  if (c == 0) { buf_puts(b, "no device"); return; }
  buf_puts(b, c == 1 ? "device " : "devices ");
  bool first = true;
  for (int64_t d = 0; d < n; d++) {
    if (set && !set[d]) continue;
    int64_t e = d;
    while (e + 1 < n && (!set || set[e + 1])) e++;
    if (!first) buf_puts(b, ", ");
    first = false;
    if (e - d >= 2) { buf_printf(b, "%lld-%lld", (long long)d, (long long)e); d = e; }
    else buf_printf(b, "%lld", (long long)d);
  }
}

static bool is_active(const Space *sp, int64_t d) { return !sp->active || sp->active[d]; }

/* A device named by `N` or by mesh coordinates `(1, 0)`; -1 after a complaint. */
static int64_t parse_device(const Mesh *m, const char *s) {
  s = skip_ws(s);
  int64_t d;
  if (*s != '(') {
    if (!parse_int(s, &d)) { complain("a device is a number or mesh coordinates such as (1, 0)"); return -1; }
    if (d < 0 || d >= m->ndev) {
      complain("device %lld is not on mesh %.*s, whose devices are 0-%lld", (long long)d, m->name.n, m->name.p,
               (long long)m->ndev - 1);
      return -1;
    }
    return d;
  }
  int64_t c[SHM_MAXAXES];
  int n = 0;
  const char *p = s + 1;
  for (;;) {
    p = skip_ws(p);
    if (*p == ')') break;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || n >= SHM_MAXAXES) { complain("bad mesh coordinates '%s'", s); return -1; }
    c[n++] = v;
    p = skip_ws(end);
    if (*p == ',') p++;
    else if (*p != ')') { complain("bad mesh coordinates '%s'", s); return -1; }
  }
  if (*skip_ws(p + 1)) { complain("bad mesh coordinates '%s'", s); return -1; }
  if (n != m->naxes) {
    Buf b = {0};
    put_axes_tuple(&b, m);
    complain("mesh %.*s has %d ax%s %s: give %d coordinate%s", m->name.n, m->name.p, m->naxes,
             m->naxes == 1 ? "is" : "es", buf_cstr(&b), m->naxes, m->naxes == 1 ? "" : "s");
    buf_free(&b);
    return -1;
  }
  for (int k = 0; k < n; k++)
    if (c[k] < 0 || c[k] >= m->size[k]) {
      complain("coordinate %lld is out of range for axis %.*s of size %lld", (long long)c[k], m->axis[k].n,
               m->axis[k].p, (long long)m->size[k]);
      return -1;
    }
  return dev_of(m, c);
}

/* ---- source text ------------------------------------------------------------------- */

static int file_nlines(int file) {
  size_t len;
  const char *t = diag_file_text(file, &len);
  int n = 1;
  for (size_t i = 0; i < len; i++)
    if (t[i] == '\n' && i + 1 < len) n++;
  return len ? n : 0;
}

static Str src_line(int file, int line) { return diag_line_text(file, line); }

static void put_src_stripped(Buf *b, int file, int line) {
  Str s = src_line(file, line);
  while (s.n && isspace((unsigned char)*s.p)) { s.p++; s.n--; }
  buf_put(b, s.p, (size_t)s.n);
}

static bool blank_or_comment(int file, int line) {
  Str s = src_line(file, line);
  int i = 0;
  while (i < s.n && isspace((unsigned char)s.p[i])) i++;
  return i == s.n || s.p[i] == '#';
}

/* The file a name designates: exactly, or as a path suffix; newest first. */
static int find_file(const char *name) {
  size_t n = strlen(name);
  for (int f = diag_file_count() - 1; f >= 0; f--)
    if (!strcmp(diag_file_name(f), name)) return f;
  for (int f = diag_file_count() - 1; f >= 0; f--) {
    const char *fn = diag_file_name(f);
    size_t m = strlen(fn);
    if (m > n && fn[m - n - 1] == '/' && !strcmp(fn + m - n, name)) return f;
  }
  return -1;
}

static int line_of(Span sp) {
  int line, col;
  diag_linecol(sp.file, sp.off, &line, &col);
  return line;
}

/* ---- frames --------------------------------------------------------------------------- */

static int depth_of(Frame *F) {
  int d = 0;
  for (; F && F->caller; F = F->caller) d++;
  return d;
}

static bool shown(Dbg *D, Frame *G) {
  if (G->fn == D->skip_fn) return false;
  if (G->fn->is_shard_map_wrapper) return G == D->frame;
  if (!G->caller && !D->main_running) return false;
  return true;
}

/* The statement frame G stands at; NULL when its body is done. */
static IrStmt *stmt_of(Dbg *D, Frame *G) { return G == D->frame ? D->stmt : G->cur; }

/* File and line of frame G. */
static bool frame_pos(Dbg *D, Frame *G, int *file, int *line) {
  IrStmt *s = stmt_of(D, G);
  if (s) {
    *file = s->whole.file;
    *line = s->line;
    return *file >= 0;
  }
  IrFunc *fn = G->fn;
  if (fn->nouts && fn->outs[0].sp.file >= 0) {
    *file = fn->outs[0].sp.file;
    *line = line_of(fn->outs[0].sp);
    return true;
  }
  if (fn->sp.file >= 0) {
    *file = fn->sp.file;
    *line = fn->end_line ? fn->end_line : line_of(fn->sp);
    return true;
  }
  return false;
}

typedef struct VarList {
  IrVar **v;
  int n, cap;
} VarList;

static void vl_add(VarList *L, IrVar *v) {
  if (!v || !v->name.n) return;
  VEC_GROW(L->v, L->cap, L->n + 1);
  L->v[L->n++] = v;
}

/* The variables frame G has bound so far: parameters, then the results
   of the statements before the one it stands at. */
static void own_vars(Dbg *D, Frame *G, VarList *L) {
  IrFunc *fn = G->fn;
  for (int i = 0; i < fn->nparams; i++) vl_add(L, fn->params[i]);
  IrStmt *lim = stmt_of(D, G);
  if (!G->caller && G != D->frame && !D->main_running) lim = NULL;
  for (int i = 0; i < fn->nbody; i++) {
    IrStmt *s = fn->body[i];
    if (s == lim) break;
    if (s->inserted) continue;
    for (int k = 0; k < s->nout; k++) vl_add(L, s->out[k]);
  }
}

/* Every variable visible in G, outermost first (later names shadow). */
static void visible_vars(Dbg *D, Frame *G, VarList *L) {
  Frame *chain[256];
  int n = 0;
  for (Frame *x = G; x && n < 256; x = x->up) chain[n++] = x;
  for (int i = n - 1; i >= 0; i--) own_vars(D, chain[i], L);
}

/* Keep the last variable of each name, in order. */
static void dedupe(VarList *L) {
  int k = 0;
  for (int i = 0; i < L->n; i++) {
    bool later = false;
    for (int j = i + 1; j < L->n && !later; j++)
      if (str_eq(L->v[i]->name, L->v[j]->name)) later = true;
    if (!later) L->v[k++] = L->v[i];
  }
  L->n = k;
}

static uint32_t all_axes(const Mesh *m) { return m ? (m->naxes >= 32 ? ~0u : (1u << m->naxes) - 1) : 0; }

/* ---- expressions ---------------------------------------------------------------------- */

/* Is a variable of this name visible in G? */
static bool eval_lookup_name(Dbg *D, Frame *G, const char *name) {
  VarList L = {0};
  visible_vars(D, G, &L);
  bool found = false;
  for (int i = 0; i < L.n && !found; i++) found = str_eqc(L.v[i]->name, name);
  mem_free(L.v);
  return found || check_has_func(D->C, str_c(name));
}

/* Compile EXPR where frame G stands; NULL with the reason in err. */
static IrFunc *compile_in(Dbg *D, Frame *G, const char *text, Buf *err) {
  VarList L = {0};
  visible_vars(D, G, &L);
  uint32_t ctrl = G->space.active ? all_axes(G->space.mesh) : 0;
  diag_clear();
  IrFunc *f = check_expr(D->C, "<expression>", text, G->fn, L.v, L.n, ctrl);
  mem_free(L.v);
  if (!f) {
    take_diags(err);
    if (!err->n) buf_puts(err, "cannot evaluate that");
    return NULL;
  }
  diag_clear();
  return f;
}

/* Run a compiled expression in G; results (new references) in out. */
static bool run_in(Dbg *D, Frame *G, IrFunc *f, Val **out, Buf *err) {
  for (int i = 0; i < f->ncaptured; i++) {
    IrVar *v = f->captured[i];
    if (!eval_lookup(G, v)) {
      buf_printf(err, "%.*s has no value yet", v->name.n, v->name.p);
      return false;
    }
  }
  if (eval_call(D->I, G, f, out, false, NULL)) return true;
  buf_puts(err, err_message());
  return false;
}

/* Append one value as seen from space sp: every device's block, or the
   block of device `dev`. */
static void put_value(Buf *b, const Space *sp, Val *v, int64_t dev) {
  if (!sp->mesh) { fmt_array(b, v->blk[0]); return; }
  if (dev >= 0) {
    Array *a = is_active(sp, dev) ? v->blk[val_block_of(sp->mesh, v->mask, dev)] : NULL;
    if (a) fmt_array(b, a);
    else buf_printf(b, "(device %lld is not on this path)", (long long)dev);
    return;
  }
  eval_print_value(b, sp, v, true);
}

/* `name = value` on one line, or `name:` and one block per device. */
static void put_named(Buf *b, const char *label, const Space *sp, Val *v, int64_t dev) {
  Buf t = {0};
  put_value(&t, sp, v, dev);
  buf_printf(b, strchr(buf_cstr(&t), '\n') ? "%s:\n" : "%s = ", label);
  buf_puts(b, buf_cstr(&t));
  buf_putc(b, '\n');
  buf_free(&t);
}

/* ---- where the run stands ------------------------------------------------------------- */

/* Why some running instances are not on G's path. */
static void put_path_note(Buf *b, Frame *G) {
  Frame *c = G;
  while (c->caller && c->caller->space.active == c->space.active) c = c->caller;
  Frame *p = c->caller;
  if (!p || !c->space.active || !p->cur) return;
  const Space *sp = &p->space;
  const Mesh *m = sp->mesh;
  IrStmt *st = p->cur;
  int64_t n = m->ndev;
  uint8_t *other = mem_calloc((size_t)n);
  int64_t cnt = 0;
  for (int64_t d = 0; d < n; d++)
    if (is_active(sp, d) && !c->space.active[d]) { other[d] = 1; cnt++; }
  if (cnt && st->k == IS_EQN && st->prim == P_COND && st->in[0].var) {
    Val *idx = eval_lookup(p, st->in[0].var);
    int nb = st->at->nfns;
    bool first = true;
    buf_puts(b, " (");
    for (int k = 0; k < nb && idx; k++) {
      uint8_t *set = mem_calloc((size_t)n);
      int64_t here = 0;
      for (int64_t d = 0; d < n; d++) {
        if (!other[d]) continue;
        int64_t x = arr_geti(idx->blk[val_block_of(m, idx->mask, d)], 0);
        if (x < 0) x = 0;
        if (x >= nb) x = nb - 1;
        if (x == k) { set[d] = 1; here++; }
      }
      if (here) {
        if (!first) buf_puts(b, "; ");
        first = false;
        put_devset(b, set, n);
        buf_printf(b, " take%s branch %d", here == 1 ? "s" : "", k);
        const char *nm = st->at->fns[k]->name;
        if (nm && strcmp(nm, "lambda")) buf_printf(b, " (%s)", nm);
      }
      mem_free(set);
    }
    buf_putc(b, ')');
  } else if (cnt && st->k == IS_EQN && st->prim == P_WHILE) {
    buf_puts(b, " (");
    put_devset(b, other, n);
    buf_printf(b, " %s left the loop)", cnt == 1 ? "has" : "have");
  } else if (cnt) {
    buf_puts(b, " (");
    put_devset(b, other, n);
    buf_printf(b, " wait%s at line %d)", cnt == 1 ? "s" : "", st->line);
  }
  mem_free(other);
}

/* `> file:line in f on devices ...` and `-> source`. */
static void put_location(Dbg *D, Buf *b, Frame *G, char mark) {
  int file, line;
  if (!frame_pos(D, G, &file, &line)) {
    buf_printf(b, "%c <no source> in %s\n", mark, G->fn->name);
    return;
  }
  buf_printf(b, "%c %s:%d", mark, diag_file_name(file), line);
  if (G->caller) buf_printf(b, " in %s", G->fn->name);
  if (G->space.mesh) {
    buf_puts(b, " on ");
    put_devset(b, G->space.active, G->space.mesh->ndev);
    put_path_note(b, G);
  }
  buf_puts(b, "\n-> ");
  IrStmt *st = stmt_of(D, G);
  if (G->fn->ast || !G->caller || !st) {
    put_src_stripped(b, file, line);
  } else {
    /* generated code (a transposed function): the equation itself */
    Buf e = {0};
    show_equation(&e, st, G->fn->mesh);
    const char *t = buf_cstr(&e), *nl = strchr(t, '\n');
    buf_put(b, t, nl ? (size_t)(nl - t) : strlen(t));
    if (nl && nl[1]) buf_puts(b, " ...");
    buf_free(&e);
  }
  buf_putc(b, '\n');
}

/* ---- collectives ---------------------------------------------------------------------- */

static bool communicates(IrStmt *st) {
  if (st->k != IS_EQN || st->prim < 0) return false;
  switch (st->prim) {
  case P_PSUM: case P_PMAX: case P_PMIN: case P_PMEAN: case P_ALL_GATHER: case P_ALL_GATHER_INVARIANT:
  case P_PSUM_SCATTER: case P_PPERMUTE: case P_PSHUFFLE: case P_ALL_TO_ALL:
    return true;
  default:
    return false;
  }
}

static int64_t index_in_group(const Mesh *m, const Attrs *at, int64_t d) {
  int64_t c[SHM_MAXAXES], g = 0;
  val_coords(m, d, c);
  for (int k = 0; k < at->naxes; k++) g = g * m->size[at->axes[k]] + c[at->axes[k]];
  return g;
}

static int64_t dev_in_group(const Mesh *m, const Attrs *at, int64_t d, int64_t g) {
  int64_t c[SHM_MAXAXES];
  val_coords(m, d, c);
  for (int k = at->naxes - 1; k >= 0; k--) {
    int a = at->axes[k];
    c[a] = g % m->size[a];
    g /= m->size[a];
  }
  return dev_of(m, c);
}

static void put_coll_axes(Buf *b, const Mesh *m, const Attrs *at) {
  if (at->naxes != 1) buf_putc(b, '(');
  for (int k = 0; k < at->naxes; k++) {
    if (k) buf_puts(b, ", ");
    put_axis(b, m, at->axes[k]);
  }
  if (at->naxes != 1) buf_putc(b, ')');
}

/* What a collective about to run sends, device by device. */
static void put_sends(Dbg *D, Buf *b, Frame *F, IrStmt *st) {
  (void)D;
  const Space *sp = &F->space;
  const Mesh *m = sp->mesh;
  const Attrs *at = st->at;
  Val *in = st->in[0].var ? eval_lookup(F, st->in[0].var) : NULL;
  if (!m || !in) return;
  Str nm = st->in[0].var->name;
  int64_t n = m->ndev;
  int64_t p = 1;
  for (int k = 0; k < at->naxes; k++) p *= m->size[at->axes[k]];
  uint8_t *send = mem_calloc((size_t)n);
  buf_printf(b, "%s over ", prim_table[st->prim].name);
  put_coll_axes(b, m, at);
  if (st->prim == P_PPERMUTE || st->prim == P_PSHUFFLE) {
    int np = at->l[0].n / 2;
    bool first = true;
    buf_puts(b, ": ");
    for (int64_t d = 0; d < n; d++) {
      if (!is_active(sp, d)) continue;
      int64_t g = index_in_group(m, at, d);
      for (int i = 0; i < np; i++)
        if (at->l[0].v[2 * i] == g) {
          buf_printf(b, "%s%lld -> %lld", first ? "" : ", ", (long long)d,
                     (long long)dev_in_group(m, at, d, at->l[0].v[2 * i + 1]));
          first = false;
          send[d] = 1;
        }
    }
    uint8_t *idle = mem_calloc((size_t)n);
    int64_t nidle = 0;
    for (int64_t d = 0; d < n; d++)
      if (is_active(sp, d) && !send[d]) { idle[d] = 1; nidle++; }
    if (nidle) {
      buf_puts(b, first ? "" : "; ");
      put_devset(b, idle, n);
      buf_puts(b, nidle == 1 ? " sends nothing" : " send nothing");
    }
    mem_free(idle);
  } else {
    for (int64_t d = 0; d < n; d++) send[d] = is_active(sp, d);
    buf_printf(b, ", groups of %lld:", (long long)p);
    uint8_t *listed = mem_calloc((size_t)n);
    int shown_groups = 0;
    for (int64_t d = 0; d < n; d++) {
      if (!send[d] || listed[d]) continue;
      if (shown_groups == 8) { buf_puts(b, " ..."); break; }
      buf_puts(b, " {");
      for (int64_t g = 0; g < p; g++) {
        int64_t e = dev_in_group(m, at, d, g);
        listed[e] = 1;
        buf_printf(b, "%s%lld", g ? ", " : "", (long long)e);
      }
      buf_putc(b, '}');
      shown_groups++;
    }
    mem_free(listed);
  }
  buf_printf(b, "\neach device sends %.*s:\n", nm.n, nm.p);
  bool first = true;
  for (int64_t d = 0; d < n; d++) {
    if (!send[d]) continue;
    if (!first) buf_putc(b, '\n');
    first = false;
    buf_printf(b, "On device %lld at mesh coordinates ", (long long)d);
    put_axes_tuple(b, m);
    buf_puts(b, " = ");
    put_coords(b, m, d);
    buf_puts(b, ":\n");
    Array *a = in->blk[val_block_of(m, in->mask, d)];
    if (a) fmt_array(b, a);
  }
  buf_putc(b, '\n');
  mem_free(send);
}

static void report_received(Dbg *D, Frame *F, IrStmt *st) {
  D->coll_stmt = NULL;
  D->coll_frame = NULL;
  Val *v = st->nout ? eval_lookup(F, st->out[0]) : NULL;
  if (!v) return;
  Buf b = {0};
  Str nm = st->out[0]->name;
  buf_printf(&b, "%s done, each device received %.*s:\n", prim_table[st->prim].name, nm.n ? nm.n : 6,
             nm.n ? nm.p : "result");
  eval_print_value(&b, &F->space, v, true);
  buf_putc(&b, '\n');
  emit(&b);
  buf_free(&b);
}

/* ---- breakpoints ------------------------------------------------------------------------- */

static void put_bp_where(Buf *b, Bp *bp) {
  if (bp->func) buf_printf(b, "function %s", bp->func);
  else buf_printf(b, "%s:%d", diag_file_name(bp->file), bp->line);
}

static void bp_free(Bp *bp) {
  mem_free(bp->func);
  mem_free(bp->cond);
  mem_free(bp->cache);
  mem_free(bp);
}

static void bp_delete(Dbg *D, int i, bool tell) {
  Bp *bp = D->bps[i];
  if (tell) {
    Buf b = {0};
    buf_printf(&b, "Deleted breakpoint %d at ", bp->no);
    put_bp_where(&b, bp);
    say("%s", buf_cstr(&b));
    buf_free(&b);
  }
  bp_free(bp);
  memmove(D->bps + i, D->bps + i + 1, sizeof(Bp *) * (size_t)(D->nbp - i - 1));
  D->nbp--;
}

static int bp_index(Dbg *D, int no) {
  for (int i = 0; i < D->nbp; i++)
    if (D->bps[i]->no == no) return i;
  return -1;
}

/* Does `cond` parse as an expression?  Complains if not. */
static bool cond_parses(const char *cond) {
  Buf src = {0};
  buf_printf(&src, "__v = %s\n", cond);
  int f = parse_load_text("<condition>", buf_cstr(&src), src.n);
  buf_free(&src);
  Arena a = {0};
  diag_clear();
  AstList *l = parse_file(&a, f);
  bool ok = !diag_count() && l->n == 1;
  Buf err = {0};
  take_diags(&err);
  arena_free(&a);
  if (!ok) complain("bad condition '%s'%s%s", cond, err.n ? ": " : "", buf_cstr(&err));
  buf_free(&err);
  return ok;
}

/* An IR function of the program by name (nested ones included). */
static IrFunc *find_func_in(IrFunc *f, const char *name, int depth) {
  if (!f || depth > 64) return NULL;
  if (f->name && !strcmp(f->name, name) && !f->is_shard_map_wrapper) return f;
  for (int i = 0; i < f->nbody; i++) {
    IrStmt *s = f->body[i];
    if (s->k != IS_EQN) continue;
    IrFunc *r = s->callee ? find_func_in(s->callee, name, depth + 1) : NULL;
    for (int k = 0; !r && s->at && k < s->at->nfns; k++) r = find_func_in(s->at->fns[k], name, depth + 1);
    if (r) return r;
  }
  return NULL;
}

/* The file `break LINE` means: the selected frame's, else the program's. */
static int default_file(Dbg *D) {
  int file, line;
  if (D->stopped && frame_pos(D, D->sel, &file, &line)) return file;
  return D->prog_file;
}

/* Split "LOCATION if COND". */
static char *split_cond(char *arg) {
  for (char *p = arg; *p; p++)
    if ((p == arg || isspace((unsigned char)p[-1])) && !strncmp(p, "if", 2) && (isspace((unsigned char)p[2]) || !p[2])) {
      char *c = p + 2;
      while (p > arg && isspace((unsigned char)p[-1])) p--;
      *p = 0;
      return c;
    }
  return NULL;
}

static void list_breakpoints(Dbg *D) {
  if (!D->nbp) { say("No breakpoints."); return; }
  say("Num Type         Disp Enb   Where");
  for (int i = 0; i < D->nbp; i++) {
    Bp *bp = D->bps[i];
    Buf b = {0};
    buf_printf(&b, "%-3d breakpoint   %-4s %-5s at ", bp->no, bp->temp ? "del" : "keep", bp->enabled ? "yes" : "no");
    put_bp_where(&b, bp);
    say("%s", buf_cstr(&b));
    if (bp->cond) say("        stop only if %s", bp->cond);
    if (bp->ignore) say("        will ignore next %d crossings", bp->ignore);
    if (bp->hits) say("        breakpoint already hit %d time%s", bp->hits, bp->hits == 1 ? "" : "s");
    buf_free(&b);
  }
}

static void cmd_break(Dbg *D, const char *args, bool temp) {
  char *arg = trimmed(args);
  if (!*arg) {
    list_breakpoints(D);
    mem_free(arg);
    return;
  }
  char *cond = split_cond(arg);
  if (cond) {
    char *c = trimmed(cond);
    if (!*c) { complain("'if' needs a condition"); mem_free(c); mem_free(arg); return; }
    if (!cond_parses(c)) { mem_free(c); mem_free(arg); return; }
    cond = c;
  }
  Bp bp;
  memset(&bp, 0, sizeof bp);
  bp.file = -1;
  char *colon = strrchr(arg, ':');
  int64_t ln;
  const char *num = arg;
  int file = -1;
  if (colon && colon != arg) {
    *colon = 0;
    file = find_file(arg);
    num = colon + 1;
    if (file < 0) { complain("no file '%s' is loaded", arg); goto fail; }
  }
  if (parse_int(num, &ln)) {
    if (file < 0) file = default_file(D);
    if (file < 0) { complain("no program file: give FILE:LINE or a function name"); goto fail; }
    int nl = file_nlines(file);
    if (ln < 1 || ln > nl) {
      complain("line %lld is out of range for %s (%d lines)", (long long)ln, diag_file_name(file), nl);
      goto fail;
    }
    if (blank_or_comment(file, (int)ln)) { complain("Blank or comment"); goto fail; }
    bp.file = file;
    bp.line = (int)ln;
  } else {
    if (colon) { complain("'%s' is not a line number", num); goto fail; }
    const char *p = arg;
    if (!isalpha((unsigned char)*p) && *p != '_') { complain("'%s' is neither a line number nor a function", arg); goto fail; }
    for (; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '_') { complain("'%s' is neither a line number nor a function", arg); goto fail; }
    if (!check_has_func(D->C, str_c(arg)) && !find_func_in(check_main(D->C), arg, 0)) {
      complain("no function named '%s'", arg);
      goto fail;
    }
    bp.func = mem_strndup(arg, strlen(arg));
  }
  Bp *nb = mem_alloc(sizeof *nb);
  *nb = bp;
  nb->no = ++D->bp_next;
  nb->temp = temp;
  nb->enabled = true;
  nb->cond = cond;
  VEC_GROW(D->bps, D->capbp, D->nbp + 1);
  D->bps[D->nbp++] = nb;
  Buf b = {0};
  buf_printf(&b, "%s %d at ", temp ? "Breakpoint (temporary)" : "Breakpoint", nb->no);
  put_bp_where(&b, nb);
  say("%s", buf_cstr(&b));
  buf_free(&b);
  mem_free(arg);
  return;
fail:
  mem_free(cond);
  mem_free(arg);
}

/* Breakpoint numbers in args; each passes to fn.  Complains about the rest. */
static void for_bp_numbers(Dbg *D, const char *args, void (*fn)(Dbg *, int)) {
  char *a = trimmed(args);
  char *save = NULL;
  for (char *t = strtok_r(a, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
    int64_t no;
    if (!parse_int(t, &no)) { complain("'%s' is not a breakpoint number", t); continue; }
    int i = bp_index(D, (int)no);
    if (i < 0) { complain("no breakpoint number %lld", (long long)no); continue; }
    fn(D, i);
  }
  mem_free(a);
}

static void clear_one(Dbg *D, int i) { bp_delete(D, i, true); }

static void set_enabled(Dbg *D, int i, bool on) {
  Bp *bp = D->bps[i];
  bp->enabled = on;
  Buf b = {0};
  buf_printf(&b, "%s breakpoint %d at ", on ? "Enabled" : "Disabled", bp->no);
  put_bp_where(&b, bp);
  say("%s", buf_cstr(&b));
  buf_free(&b);
}
static void enable_one(Dbg *D, int i) { set_enabled(D, i, true); }
static void disable_one(Dbg *D, int i) { set_enabled(D, i, false); }

static void cmd_clear(Dbg *D, const char *args) {
  char *a = trimmed(args);
  if (!*a) {
    while (D->nbp) bp_delete(D, 0, true);
    mem_free(a);
    return;
  }
  char *colon = strrchr(a, ':');
  if (colon || !strpbrk(a, " ,")) {
    int64_t no;
    if (!colon && parse_int(a, &no) && bp_index(D, (int)no) >= 0) {
      bp_delete(D, bp_index(D, (int)no), true);
    } else {
      int file = default_file(D);
      const char *num = a;
      if (colon) {
        *colon = 0;
        file = find_file(a);
        num = colon + 1;
      }
      int64_t ln;
      bool any = false;
      if (file >= 0 && parse_int(num, &ln))
        for (int i = D->nbp - 1; i >= 0; i--)
          if (D->bps[i]->file == file && D->bps[i]->line == ln) { bp_delete(D, i, true); any = true; }
      for (int i = D->nbp - 1; !colon && i >= 0; i--)
        if (D->bps[i]->func && !strcmp(D->bps[i]->func, a)) { bp_delete(D, i, true); any = true; }
      if (!any && parse_int(num, &ln))
        complain("no breakpoint at %s:%lld", file >= 0 ? diag_file_name(file) : a, (long long)ln);
      else if (!any)
        complain("no breakpoint at function %s", a);
    }
  } else {
    for_bp_numbers(D, a, clear_one);
  }
  mem_free(a);
}

static void cmd_condition(Dbg *D, const char *args) {
  char *a = trimmed(args);
  char *rest = a;
  while (*rest && !isspace((unsigned char)*rest)) rest++;
  if (*rest) *rest++ = 0;
  int64_t no;
  int i;
  if (!parse_int(a, &no)) {
    complain("usage: condition N [COND]");
    mem_free(a);
    return;
  }
  if ((i = bp_index(D, (int)no)) < 0) {
    complain("no breakpoint number %lld", (long long)no);
    mem_free(a);
    return;
  }
  Bp *bp = D->bps[i];
  char *c = trimmed(rest);
  if (!*c) {
    mem_free(c);
    c = NULL;
  } else if (!cond_parses(c)) {
    mem_free(c);
    mem_free(a);
    return;
  }
  mem_free(bp->cond);
  bp->cond = c;
  bp->ncache = 0;
  if (c) say("New condition set for breakpoint %d.", bp->no);
  else say("Breakpoint %d is now unconditional.", bp->no);
  mem_free(a);
}

static void cmd_ignore(Dbg *D, const char *args) {
  char *a = trimmed(args);
  char *rest = a;
  while (*rest && !isspace((unsigned char)*rest)) rest++;
  if (*rest) *rest++ = 0;
  int64_t no, count = 0;
  int i;
  if (!parse_int(a, &no) || !*skip_ws(rest) || !parse_int(rest, &count) || count < 0) {
    complain("usage: ignore N COUNT");
    mem_free(a);
    return;
  }
  if ((i = bp_index(D, (int)no)) < 0) {
    complain("no breakpoint number %lld", (long long)no);
    mem_free(a);
    return;
  }
  D->bps[i]->ignore = (int)count;
  if (count) say("Will ignore next %lld crossing%s of breakpoint %lld.", (long long)count, count == 1 ? "" : "s",
                 (long long)no);
  else say("Will stop next time breakpoint %lld is reached.", (long long)no);
  mem_free(a);
}

static IrStmt *first_stmt(IrFunc *fn) {
  for (int i = 0; i < fn->nbody; i++)
    if (!fn->body[i]->inserted && fn->body[i]->whole.file >= 0) return fn->body[i];
  return NULL;
}

/* Is st the first statement of its line in fn (a line stops once)? */
static bool first_on_line(IrFunc *fn, IrStmt *st) {
  IrStmt *prev = NULL;
  for (int i = 0; i < fn->nbody; i++) {
    IrStmt *s = fn->body[i];
    if (s == st) return !prev || prev->line != st->line || prev->whole.file != st->whole.file;
    if (!s->inserted && s->whole.file >= 0) prev = s;
  }
  return true;
}

static bool bp_matches(Dbg *D, Bp *bp, Frame *F, IrStmt *st) {
  if (!bp->enabled) return false;
  if (!st) {
    /* a return: a line breakpoint on a `return` line of its own */
    int file, line;
    if (bp->func || !frame_pos(D, F, &file, &line) || file != bp->file || line != bp->line) return false;
    for (int i = 0; i < F->fn->nbody; i++)
      if (F->fn->body[i]->line == line && F->fn->body[i]->whole.file == file) return false;
    return true;
  }
  if (bp->func) {
    IrFunc *fn = F->fn;
    return !fn->is_shard_map_wrapper && fn->name && !strcmp(fn->name, bp->func) && first_stmt(fn) == st;
  }
  return st->whole.file == bp->file && st->line == bp->line && first_on_line(F->fn, st);
}

/* A condition holds where its value, or any element of it, is nonzero. */
static bool truthy(const Array *a) {
  if (!a) return false;
  for (int64_t i = 0; i < a->size; i++)
    if (arr_getf(a, i) != 0) return true;
  return false;
}

/* Evaluate bp's condition where the run stands: 1 held (on the devices
   marked in held), 0 did not, -1 could not tell (reason in msg). */
static int bp_condition(Dbg *D, Bp *bp, Frame *F, IrStmt *st, uint8_t *held, Buf *msg) {
  IrStmt *outer = F->up ? F->up->cur : NULL;
  IrFunc *f = NULL;
  for (int i = 0; i < bp->ncache; i++)
    if (bp->cache[i].st == st && bp->cache[i].outer == outer) f = bp->cache[i].fn;
  if (!f) {
    f = compile_in(D, F, bp->cond, msg);
    if (!f) return -1;
    if (f->nouts != 1) {
      buf_printf(msg, "a condition must give one value, not %d", f->nouts);
      return -1;
    }
    VEC_GROW(bp->cache, bp->capcache, bp->ncache + 1);
    CondCache c = {st, outer, f};
    bp->cache[bp->ncache++] = c;
  }
  Val *v = NULL;
  if (!run_in(D, F, f, &v, msg)) return -1;
  const Space *sp = &F->space;
  int any = 0;
  if (!sp->mesh) {
    held[0] = truthy(v->blk[0]);
    any = held[0];
  } else {
    for (int64_t d = 0; d < sp->mesh->ndev; d++) {
      held[d] = 0;
      if (!is_active(sp, d)) continue;
      held[d] = truthy(v->blk[val_block_of(sp->mesh, v->mask, d)]);
      any |= held[d];
    }
  }
  val_unref(v);
  return any;
}

/* ---- displays ------------------------------------------------------------------------------ */

/* Evaluate one expression where G stands and print it under `label`. */
static bool show_expr(Dbg *D, Frame *G, const char *expr, const char *label, int64_t dev, Buf *out, Buf *err) {
  IrFunc *f = compile_in(D, G, expr, err);
  if (!f) return false;
  Val **vals = mem_calloc(sizeof(Val *) * (size_t)(f->nouts + 1));
  bool ok = run_in(D, G, f, vals, err);
  if (ok)
    for (int i = 0; i < f->nouts; i++) {
      if (label) put_named(out, label, &G->space, vals[i], dev);
      else {
        put_value(out, &G->space, vals[i], dev);
        buf_putc(out, '\n');
      }
    }
  for (int i = 0; i < f->nouts; i++) val_unref(vals[i]);
  mem_free(vals);
  return ok;
}

static int64_t focus_for(Dbg *D, Frame *G) {
  return G->space.mesh && D->focus >= 0 && D->focus < G->space.mesh->ndev ? D->focus : -1;
}

static void do_displays(Dbg *D, bool force) {
  for (int i = 0; i < D->ndisp; i++) {
    Display *d = D->disp[i];
    Buf out = {0}, err = {0}, label = {0};
    buf_printf(&label, "display %s", d->expr);
    if (show_expr(D, D->sel, d->expr, buf_cstr(&label), focus_for(D, D->sel), &out, &err)) {
      if (force || !d->last || strcmp(d->last, buf_cstr(&out))) fputs(buf_cstr(&out), stdout);
      mem_free(d->last);
      d->last = NULL;
      d->last = mem_strndup(buf_cstr(&out), out.n);
    } else if (force) {
      complain("display %s: %s", d->expr, buf_cstr(&err));
    }
    buf_free(&out);
    buf_free(&err);
    buf_free(&label);
  }
  fflush(stdout);
}

static void cmd_display(Dbg *D, const char *args) {
  char *e = trimmed(args);
  if (!*e) {
    if (!D->ndisp) say("No expressions are displayed.");
    else say("Currently displaying:");
    for (int i = 0; i < D->ndisp; i++) say("%d: %s", D->disp[i]->no, D->disp[i]->expr);
    mem_free(e);
    return;
  }
  for (int i = 0; i < D->ndisp; i++)
    if (!strcmp(D->disp[i]->expr, e)) {
      mem_free(D->disp[i]->last);
      D->disp[i]->last = NULL;
      mem_free(e);
      if (D->stopped) do_displays(D, false);
      return;
    }
  if (!cond_parses(e)) { mem_free(e); return; }
  Display *d = mem_calloc(sizeof *d);
  d->no = ++D->disp_next;
  d->expr = e;
  VEC_GROW(D->disp, D->capdisp, D->ndisp + 1);
  D->disp[D->ndisp++] = d;
  if (!D->stopped) {
    say("%d: %s (shown at each stop where it changed)", d->no, e);
    return;
  }
  Buf out = {0}, err = {0}, label = {0};
  buf_printf(&label, "display %s", e);
  if (show_expr(D, D->sel, e, buf_cstr(&label), focus_for(D, D->sel), &out, &err)) {
    fputs(buf_cstr(&out), stdout);
    d->last = mem_strndup(buf_cstr(&out), out.n);
  } else {
    complain("display %s: %s", e, buf_cstr(&err));
  }
  fflush(stdout);
  buf_free(&out);
  buf_free(&err);
  buf_free(&label);
}

static void display_free(Display *d) {
  mem_free(d->expr);
  mem_free(d->last);
  mem_free(d);
}

static void cmd_undisplay(Dbg *D, const char *args) {
  char *e = trimmed(args);
  if (!*e) {
    for (int i = 0; i < D->ndisp; i++) display_free(D->disp[i]);
    D->ndisp = 0;
    mem_free(e);
    return;
  }
  int64_t no = -1;
  parse_int(e, &no);
  for (int i = 0; i < D->ndisp; i++)
    if (D->disp[i]->no == no || !strcmp(D->disp[i]->expr, e)) {
      display_free(D->disp[i]);
      memmove(D->disp + i, D->disp + i + 1, sizeof(Display *) * (size_t)(D->ndisp - i - 1));
      D->ndisp--;
      mem_free(e);
      return;
    }
  complain("not displaying %s", e);
  mem_free(e);
}

/* ---- inspection: whos, info mesh, info locals ----------------------------------------------- */

/* A table printed with aligned columns: cells are added row by row. */
typedef struct Table {
  char **cell;
  int n, cap, ncols;
} Table;

static void tab_start(Table *t, int ncols) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
}

static void tab_add(Table *t, const char *s) {
  VEC_GROW(t->cell, t->cap, t->n + 1);
  t->cell[t->n++] = mem_strndup(s, strlen(s));
}

static void tab_free(Table *t) {
  for (int i = 0; i < t->n; i++) mem_free(t->cell[i]);
  mem_free(t->cell);
}

static void tab_print(Table *t) {
  int w[8] = {0};
  int nrows = t->n / t->ncols;
  for (int r = 0; r < nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      int l = (int)strlen(t->cell[r * t->ncols + c]);
      if (l > w[c]) w[c] = l;
    }
  for (int r = 0; r < nrows; r++) {
    Buf b = {0};
    for (int c = 0; c < t->ncols; c++) {
      const char *s = t->cell[r * t->ncols + c];
      if (c + 1 < t->ncols) buf_printf(&b, "%-*s  ", w[c], s);
      else buf_puts(&b, s);
    }
    while (b.n && b.p[b.n - 1] == ' ') b.p[--b.n] = 0;
    say("%s", buf_cstr(&b));
    buf_free(&b);
  }
  tab_free(t);
}

static void put_mesh_axes(Buf *b, const Mesh *m) {
  buf_putc(b, '{');
  for (int k = 0; k < m->naxes; k++) {
    buf_puts(b, k ? ", " : "");
    put_axis(b, m, k);
    buf_printf(b, ": %lld", (long long)m->size[k]);
  }
  buf_putc(b, '}');
}

/* "one block per (i, j)", "one shared block". */
static void put_blocks(Buf *b, const Mesh *m, uint32_t mask) {
  int n = 0;
  for (int k = 0; k < m->naxes; k++) n += (mask >> k) & 1;
  if (!n) { buf_puts(b, "one shared block"); return; }
  buf_puts(b, "one block per ");
  if (n > 1) buf_putc(b, '(');
  bool first = true;
  for (int k = 0; k < m->naxes; k++)
    if (mask & (1u << k)) {
      buf_puts(b, first ? "" : ", ");
      put_axis(b, m, k);
      first = false;
    }
  if (n > 1) buf_putc(b, ')');
}

static void put_signature(Buf *b, const CheckName *e) {
  IrFunc *f = e->fn;
  if (!f) {
    buf_putc(b, '(');
    for (int i = 0; e->ast && i < e->ast->nparams; i++) {
      if (i) buf_puts(b, ", ");
      buf_put(b, e->ast->params[i]->name.p, (size_t)e->ast->params[i]->name.n);
    }
    buf_puts(b, ")  (not checked yet: it has not been called)");
    return;
  }
  buf_putc(b, '(');
  for (int i = 0; i < f->nparams; i++) {
    if (i) buf_puts(b, ", ");
    show_type(b, &f->params[i]->t, f->mesh);
  }
  buf_puts(b, ") -> (");
  for (int i = 0; i < f->nouts; i++) {
    if (i) buf_puts(b, ", ");
    show_type(b, &f->outs[i].t, f->mesh);
  }
  buf_putc(b, ')');
}

static void whos_top(Dbg *D) {
  int max = 4096;
  CheckName *names = mem_alloc(sizeof(CheckName) * (size_t)max);
  int n = check_list_names(D->C, names, max);
  Table t;
  tab_start(&t, 4);
  tab_add(&t, "Name");
  tab_add(&t, "Kind");
  tab_add(&t, "Type");
  tab_add(&t, "Devices");
  int rows = 0;
  for (int i = n - 1; i >= 0; i--) {
    CheckName *e = &names[i];
    Buf nm = {0}, ty = {0}, dv = {0};
    buf_put(&nm, e->name.p, (size_t)e->name.n);
    const char *kind = "";
    if (e->kind == CN_VAR) {
      Val *v = eval_global(D->I, e->var);
      if (!v || e->var->t.bad) goto next;
      kind = "array";
      show_type(&ty, &e->var->t, NULL);
      buf_puts(&dv, "-");
    } else if (e->kind == CN_MESH) {
      kind = "mesh";
      put_mesh_axes(&ty, e->mesh);
      buf_printf(&dv, "%lld device%s", (long long)e->mesh->ndev, e->mesh->ndev == 1 ? "" : "s");
    } else {
      kind = e->ast && e->ast->has_deco ? (e->ast->deco.p[0] == 'p' ? "pmap" : e->ast->deco.p[0] == 'x' ? "xmap"
                                           : "shard_map") : e->mesh ? "shard_map" : "function";
      put_signature(&ty, e);
      if (e->mesh && e->mesh->name.n)
        buf_printf(&dv, "mesh %.*s, %lld device%s", e->mesh->name.n, e->mesh->name.p, (long long)e->mesh->ndev,
                   e->mesh->ndev == 1 ? "" : "s");
      else if (e->mesh) buf_printf(&dv, "%lld device%s", (long long)e->mesh->ndev, e->mesh->ndev == 1 ? "" : "s");
      else buf_puts(&dv, "-");
    }
    tab_add(&t, buf_cstr(&nm));
    tab_add(&t, kind);
    tab_add(&t, buf_cstr(&ty));
    tab_add(&t, buf_cstr(&dv));
    rows++;
  next:
    buf_free(&nm);
    buf_free(&ty);
    buf_free(&dv);
  }
  if (rows) tab_print(&t);
  else {
    tab_free(&t);
    say("No names are defined yet.");
  }
  mem_free(names);
}

static void whos_frame(Dbg *D, Frame *G) {
  VarList L = {0};
  visible_vars(D, G, &L);
  dedupe(&L);
  const Mesh *m = G->space.mesh;
  Table t;
  tab_start(&t, 3);
  tab_add(&t, "Name");
  tab_add(&t, "Type");
  tab_add(&t, "Devices");
  int rows = 0;
  for (int i = 0; i < L.n; i++) {
    IrVar *v = L.v[i];
    Val *val = eval_lookup(G, v);
    if (!val) continue;
    Buf nm = {0}, ty = {0}, dv = {0};
    buf_put(&nm, v->name.p, (size_t)v->name.n);
    show_var_type(&ty, v);
    if (m && v->owner->mesh) {
      put_devset(&dv, G->space.active, m->ndev);
      buf_puts(&dv, "; ");
      put_blocks(&dv, m, v->t.vma);
    } else {
      buf_puts(&dv, "-");
    }
    tab_add(&t, buf_cstr(&nm));
    tab_add(&t, buf_cstr(&ty));
    tab_add(&t, buf_cstr(&dv));
    rows++;
    buf_free(&nm);
    buf_free(&ty);
    buf_free(&dv);
  }
  if (rows) tab_print(&t);
  else {
    tab_free(&t);
    say("No variables here yet.");
  }
  mem_free(L.v);
}

static void print_mesh(Dbg *D, const Mesh *m, const Space *sp) {
  Buf b = {0};
  buf_printf(&b, "mesh %.*s: ", m->name.n, m->name.p);
  put_mesh_axes(&b, m);
  buf_printf(&b, ", %lld device%s (numbered row-major)", (long long)m->ndev, m->ndev == 1 ? "" : "s");
  say("%s", buf_cstr(&b));
  buf_reset(&b);
  int64_t focus = D->focus >= 0 && D->focus < m->ndev ? D->focus : -1;
  if (m->naxes == 1 || m->naxes == 2) {
    int rk = m->naxes == 2 ? 0 : -1, ck = m->naxes - 1;
    int64_t nr = rk >= 0 ? m->size[rk] : 1, nc = m->size[ck];
    int cw = 1, rw = 0;
    char tmp[64];
    for (int64_t c = 0; c < nc; c++) {
      int l = snprintf(tmp, sizeof tmp, "%.*s=%lld", m->axis[ck].n, m->axis[ck].p, (long long)c);
      if (l > cw) cw = l;
    }
    int l = snprintf(tmp, sizeof tmp, "[%lld]", (long long)m->ndev - 1);
    if (l > cw) cw = l;
    for (int64_t r = 0; rk >= 0 && r < nr; r++) {
      int w = snprintf(tmp, sizeof tmp, "%.*s=%lld", m->axis[rk].n, m->axis[rk].p, (long long)r);
      if (w > rw) rw = w;
    }
    buf_printf(&b, "  %*s", rw, "");
    for (int64_t c = 0; c < nc; c++) {
      snprintf(tmp, sizeof tmp, "%.*s=%lld", m->axis[ck].n, m->axis[ck].p, (long long)c);
      buf_printf(&b, " %*s", cw, tmp);
    }
    say("%s", buf_cstr(&b));
    for (int64_t r = 0; r < nr; r++) {
      buf_reset(&b);
      if (rk >= 0) snprintf(tmp, sizeof tmp, "%.*s=%lld", m->axis[rk].n, m->axis[rk].p, (long long)r);
      else tmp[0] = 0;
      buf_printf(&b, "  %*s", rw, tmp);
      for (int64_t c = 0; c < nc; c++) {
        int64_t d = r * nc + c;
        char cell[64];
        snprintf(cell, sizeof cell, d == focus ? "[%lld]" : "%lld", (long long)d);
        buf_printf(&b, " %*s", cw, cell);
      }
      while (b.n && b.p[b.n - 1] == ' ') b.p[--b.n] = 0;
      say("%s", buf_cstr(&b));
    }
  } else {
    for (int64_t d = 0; d < m->ndev && d < 4096; d++) {
      buf_reset(&b);
      buf_printf(&b, "  device %lld at ", (long long)d);
      put_axes_tuple(&b, m);
      buf_puts(&b, " = ");
      put_coords(&b, m, d);
      if (d == focus) buf_puts(&b, "  (focus)");
      say("%s", buf_cstr(&b));
    }
  }
  if (sp && sp->active) {
    buf_reset(&b);
    buf_puts(&b, "on this path: ");
    put_devset(&b, sp->active, m->ndev);
    say("%s", buf_cstr(&b));
  }
  if (focus >= 0) say("focus: device %lld (in brackets)", (long long)focus);
  buf_free(&b);
}

static void info_mesh(Dbg *D) {
  if (D->stopped && D->sel->space.mesh) {
    print_mesh(D, D->sel->space.mesh, &D->sel->space);
    return;
  }
  int max = 4096;
  CheckName *names = mem_alloc(sizeof(CheckName) * (size_t)max);
  int n = check_list_names(D->C, names, max);
  int shown_meshes = 0;
  for (int i = n - 1; i >= 0; i--)
    if (names[i].kind == CN_MESH) {
      print_mesh(D, names[i].mesh, NULL);
      shown_meshes++;
    }
  if (!shown_meshes) say("No mesh is defined (mesh m = {i: 4} defines one).");
  mem_free(names);
}

static void info_locals(Dbg *D) {
  if (!D->stopped) { complain("not stopped: whos lists the top-level names"); return; }
  Frame *G = D->sel;
  VarList L = {0};
  own_vars(D, G, &L);
  dedupe(&L);
  int64_t dev = focus_for(D, G);
  Buf b = {0};
  int count = 0;
  for (int i = 0; i < L.n; i++) {
    IrVar *v = L.v[i];
    Val *val = eval_lookup(G, v);
    if (!val) continue;
    Buf label = {0};
    buf_put(&label, v->name.p, (size_t)v->name.n);
    buf_puts(&label, ": ");
    show_var_type(&label, v);
    put_named(&b, buf_cstr(&label), &G->space, val, dev);
    buf_free(&label);
    count++;
    emit(&b);
  }
  if (!count) say("No locals yet.");
  buf_free(&b);
  mem_free(L.v);
}

/* ---- help ------------------------------------------------------------------------------------ */

typedef struct CmdHelp {
  const char *names;         /* "next n" */
  const char *usage;
  const char *text;
} CmdHelp;

static const CmdHelp helps[] = {
  {"step s", "step", "Run the current statement, stopping at the first statement inside any function it calls."},
  {"next n", "next", "Run the current statement and stop at the next one in this function (or where it returns)."},
  {"until unt", "until [LINE]", "Continue until a line past the current one (or at least LINE) in this function, or until it returns."},
  {"finish return r", "finish | return", "Continue until the current function returns; show what it returns."},
  {"continue c cont", "continue", "Continue until a breakpoint or the end."},
  {"break b", "break [LOCATION [if COND]]",
   "Set a breakpoint at LINE, FILE:LINE or FUNC (its first statement).  COND is an expression\n"
   "such as `gt x 3.0` or a bool variable, evaluated per instance (an array holds where any\n"
   "element is true): the stop names the devices where it held.  With no argument, list\n"
   "the breakpoints."},
  {"tbreak", "tbreak LOCATION [if COND]", "A breakpoint deleted when first hit."},
  {"clear cl", "clear [N... | LOCATION]", "Delete breakpoints by number or location; all of them with no argument."},
  {"disable", "disable N...", "Disable breakpoints."},
  {"enable", "enable N...", "Enable breakpoints."},
  {"condition", "condition N [COND]", "Set or remove the condition of breakpoint N."},
  {"ignore", "ignore N COUNT", "Pass breakpoint N the next COUNT times it is reached."},
  {"where w bt", "where", "Print the stack, most recent frame last; '>' marks the selected frame."},
  {"up u", "up [N]", "Select the frame N levels up (towards the caller)."},
  {"down d", "down [N]", "Select the frame N levels down."},
  {"list l", "list [FIRST[, LAST] | .]", "List source lines around the current line; again to continue."},
  {"longlist ll", "longlist", "List the whole current function."},
  {"print p", "print EXPR [@ DEVICE]",
   "Print a value: a name, a literal or `prim[params] args`.  Inside a shard_map every\n"
   "device's block is printed, as `print` does; `@ 3` prints device 3's, `@ (1, 0)` the\n"
   "block at those mesh coordinates."},
  {"display", "display [EXPR]", "Print EXPR now and at each stop where its value changed; list them with no argument."},
  {"undisplay", "undisplay [EXPR | N]", "Stop displaying EXPR (all of them with no argument)."},
  {"info", "info locals | mesh | break | display",
   "locals: the current frame's variables (the focused device only, after `device N`);\n"
   "mesh: axes, sizes and the device grid; break: breakpoints; display: displays."},
  {"whos", "whos", "Names visible here with their types (variance included) and the devices holding them."},
  {"device", "device [N | (COORDS) | all]", "Focus on one device for `p` and `info locals`; `all` ends the focus."},
  {"show", "show FUNC", "Print a function's checked form."},
  {"run", "run", "Run the program file again from its start, stopping at breakpoints."},
  {"restart", "restart", "Run the program file again, stopping before its first statement."},
  {"quit q exit", "quit", "Leave the debugger: abandon the running statement (with --debug: leave shmapi)."},
  {"help h", "help [COMMAND | TOPIC]", "Help on a command; `help` alone lists them."},
  {NULL, NULL, NULL}
};

const char *const dbg_command_names[] = {
  "step", "next", "until", "finish", "return", "continue", "break", "tbreak", "clear", "disable", "enable",
  "condition", "ignore", "where", "bt", "up", "down", "list", "longlist", "print", "display", "undisplay",
  "info", "whos", "device", "show", "run", "restart", "quit", "help", NULL
};

static bool names_has(const char *names, const char *w) {
  size_t n = strlen(w);
  for (const char *p = names; *p;) {
    const char *e = strchr(p, ' ');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && !strncmp(p, w, n)) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

bool dbg_help(const char *topic) {
  if (!topic || !*topic) {
    say("Debugger commands (short forms in parentheses):");
    for (const CmdHelp *h = helps; h->names; h++) {
      Buf b = {0};
      buf_printf(&b, "  %s", h->usage);
      /* the short forms: the names the usage does not spell */
      const char *p = h->names;
      bool first = true;
      while (*p) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char w[32];
        snprintf(w, sizeof w, "%.*s", (int)n, p);
        const char *u = strstr(h->usage, w);
        bool spelled = u && (u == h->usage || u[-1] == ' ') && !isalnum((unsigned char)u[n]);
        if (!spelled) {
          buf_printf(&b, first ? " (%s" : ", %s", w);
          first = false;
        }
        p += n;
        while (*p == ' ') p++;
      }
      if (!first) buf_putc(&b, ')');
      say("%s", buf_cstr(&b));
      buf_free(&b);
    }
    say("An empty line repeats the last command; anything else is printed as an expression.");
    say("`help COMMAND` explains one; `help primitives`, `help collectives` describe the language.");
    return true;
  }
  for (const CmdHelp *h = helps; h->names; h++)
    if (names_has(h->names, topic)) {
      say("%s", h->usage);
      say("%s", h->text);
      return true;
    }
  return false;
}

/* ---- the stop --------------------------------------------------------------------------------- */

/* Shown frames from innermost to outermost. */
static int shown_frames(Dbg *D, Frame **out, int max) {
  int n = 0;
  for (Frame *G = D->frame; G && n < max; G = G->caller)
    if (shown(D, G)) out[n++] = G;
  return n;
}

static void cmd_where(Dbg *D) {
  Frame *fr[512];
  int n = shown_frames(D, fr, 512);
  Buf b = {0};
  for (int i = n - 1; i >= 0; i--) put_location(D, &b, fr[i], fr[i] == D->sel ? '>' : ' ');
  emit(&b);
  buf_free(&b);
}

static void cmd_updown(Dbg *D, const char *args, int dir) {
  int64_t count = 1;
  if (*skip_ws(args) && !parse_int(args, &count)) { complain("usage: %s [N]", dir > 0 ? "up" : "down"); return; }
  Frame *fr[512];
  int n = shown_frames(D, fr, 512);
  int at = 0;
  for (int i = 0; i < n; i++)
    if (fr[i] == D->sel) at = i;
  int to = at + (int)(dir * count);
  if (to >= n) {
    if (at == n - 1) { complain("Oldest frame"); return; }
    to = n - 1;
  }
  if (to < 0) {
    if (at == 0) { complain("Newest frame"); return; }
    to = 0;
  }
  D->sel = fr[to];
  D->list_next = 0;
  Buf b = {0};
  put_location(D, &b, D->sel, '>');
  emit(&b);
  buf_free(&b);
}

static bool bp_on_line(Dbg *D, int file, int line) {
  for (int i = 0; i < D->nbp; i++)
    if (D->bps[i]->enabled && D->bps[i]->file == file && D->bps[i]->line == line) return true;
  return false;
}

static void list_lines(Dbg *D, int file, int first, int last, int cur) {
  int nl = file_nlines(file);
  if (first < 1) first = 1;
  if (first > nl) { say("[EOF]"); return; }
  if (last > nl) last = nl;
  Buf b = {0};
  for (int l = first; l <= last; l++) {
    Str s = src_line(file, l);
    buf_printf(&b, "%4d %c%s %.*s", l, bp_on_line(D, file, l) ? 'B' : ' ', l == cur ? "->" : "  ", s.n, s.p);
    while (b.n && b.p[b.n - 1] == ' ') b.p[--b.n] = 0;
    buf_putc(&b, '\n');
  }
  emit(&b);
  buf_free(&b);
  D->list_next = last + 1;
}

static void cmd_list(Dbg *D, const char *args) {
  int file, cur;
  if (!frame_pos(D, D->sel, &file, &cur)) { complain("no source here"); return; }
  char *a = trimmed(args);
  int64_t x, y;
  if (!*a) {
    int first = D->list_next ? D->list_next : cur - 5;
    list_lines(D, file, first < 1 ? 1 : first, (first < 1 ? 1 : first) + 10, cur);
  } else if (!strcmp(a, ".")) {
    list_lines(D, file, cur - 5 < 1 ? 1 : cur - 5, (cur - 5 < 1 ? 1 : cur - 5) + 10, cur);
  } else if (strchr(a, ',')) {
    char *c = strchr(a, ',');
    *c = 0;
    if (!parse_int(a, &x) || !parse_int(c + 1, &y)) complain("usage: list [FIRST[, LAST] | .]");
    else list_lines(D, file, (int)x, (int)(y < x ? x + y : y), cur);
  } else if (parse_int(a, &x)) {
    int first = (int)x - 5 < 1 ? 1 : (int)x - 5;
    list_lines(D, file, first, first + 10, cur);
  } else {
    complain("usage: list [FIRST[, LAST] | .]");
  }
  mem_free(a);
}

static void cmd_longlist(Dbg *D) {
  int file, cur;
  if (!frame_pos(D, D->sel, &file, &cur)) { complain("no source here"); return; }
  IrFunc *fn = D->sel->fn;
  if (!D->sel->caller || !fn->ast) {
    list_lines(D, file, 1, file_nlines(file), cur);
    return;
  }
  AstFunc *af = fn->ast;
  int first = line_of(af->whole.file >= 0 ? af->whole : af->sp);
  if (af->deco_sp.file == file && af->deco_sp.len) {
    int dl = line_of(af->deco_sp);
    if (dl < first) first = dl;
  }
  int last = af->end_line;
  if (af->whole.file >= 0) {
    Span end = {af->whole.file, af->whole.off + (af->whole.len ? af->whole.len - 1 : 0), 1};
    if (line_of(end) > last) last = line_of(end);
  }
  list_lines(D, file, first, last, cur);
}

/* `p EXPR [@ DEVICE]`. */
static void cmd_print(Dbg *D, const char *args) {
  char *a = trimmed(args);
  if (!*a) { complain("print needs an expression"); mem_free(a); return; }
  Frame *G = D->stopped ? D->sel : eval_top(D->I);
  int64_t dev = focus_for(D, G);
  char *at = strrchr(a, '@');
  if (at) {
    *at = 0;
    if (!G->space.mesh) {
      complain("@ picks a device inside a shard_map; here each value is one array");
      mem_free(a);
      return;
    }
    dev = parse_device(G->space.mesh, at + 1);
    if (dev < 0) { mem_free(a); return; }
    if (!is_active(&G->space, dev)) {
      Buf b = {0};
      put_devset(&b, G->space.active, G->space.mesh->ndev);
      complain("device %lld is not on this path (%s %s)", (long long)dev, buf_cstr(&b),
               strchr(buf_cstr(&b), ',') || strchr(buf_cstr(&b), '-') ? "are" : "is");
      buf_free(&b);
      mem_free(a);
      return;
    }
  }
  char *e = trimmed(a);
  Buf out = {0}, err = {0};
  if (!*e) complain("print needs an expression");
  else if (show_expr(D, G, e, NULL, dev, &out, &err)) fputs(buf_cstr(&out), stdout);
  else complain("%s", buf_cstr(&err));
  fflush(stdout);
  buf_free(&out);
  buf_free(&err);
  mem_free(e);
  mem_free(a);
}

static void cmd_device(Dbg *D, const char *args) {
  char *a = trimmed(args);
  Frame *G = D->stopped ? D->sel : NULL;
  const Mesh *m = G ? G->space.mesh : NULL;
  if (!*a) {
    if (D->focus < 0) say("No device focus: values inside a shard_map print for every device.");
    else {
      Buf b = {0};
      buf_printf(&b, "Focus: device %lld", (long long)D->focus);
      if (m && D->focus < m->ndev) {
        buf_puts(&b, " at mesh coordinates ");
        put_axes_tuple(&b, m);
        buf_puts(&b, " = ");
        put_coords(&b, m, D->focus);
      }
      say("%s", buf_cstr(&b));
      buf_free(&b);
    }
  } else if (!strcmp(a, "all") || !strcmp(a, "none") || !strcmp(a, "off")) {
    D->focus = -1;
    say("No device focus: values inside a shard_map print for every device.");
  } else if (m) {
    int64_t d = parse_device(m, a);
    if (d >= 0) {
      D->focus = d;
      Buf b = {0};
      buf_printf(&b, "Focus: device %lld at mesh coordinates ", (long long)d);
      put_axes_tuple(&b, m);
      buf_puts(&b, " = ");
      put_coords(&b, m, d);
      if (!is_active(&G->space, d)) buf_puts(&b, " (not on this path)");
      say("%s", buf_cstr(&b));
      buf_free(&b);
    }
  } else {
    int64_t d;
    if (!parse_int(a, &d) || d < 0) complain("outside a shard_map a device is a number: device N");
    else {
      D->focus = d;
      say("Focus: device %lld (used inside a shard_map)", (long long)d);
    }
  }
  mem_free(a);
}

static void cmd_show(Dbg *D, const char *args) {
  char *a = trimmed(args);
  Buf b = {0};
  if (check_show_func(D->C, str_c(a), &b)) fputs(buf_cstr(&b), stdout);
  else complain("no checked function named '%s'", a);
  fflush(stdout);
  buf_free(&b);
  mem_free(a);
}

static void cmd_info(Dbg *D, const char *args) {
  char *a = trimmed(args);
  if (!strcmp(a, "locals")) info_locals(D);
  else if (!strcmp(a, "mesh")) info_mesh(D);
  else if (!strcmp(a, "break") || !strcmp(a, "breakpoints") || !strcmp(a, "b")) list_breakpoints(D);
  else if (!strcmp(a, "display")) cmd_display(D, "");
  else complain("info what? info locals | mesh | break | display");
  mem_free(a);
}

static void cmd_whos(Dbg *D) {
  if (D->stopped) whos_frame(D, D->sel);
  else whos_top(D);
}

/* The command word and its arguments. */
static const char *split_word(const char *line, char *word, size_t n) {
  line = skip_ws(line);
  size_t i = 0;
  while (line[i] && !isspace((unsigned char)line[i]) && i + 1 < n) {
    word[i] = line[i];
    i++;
  }
  word[i] = 0;
  if (line[i] && !isspace((unsigned char)line[i])) word[0] = 0;
  return skip_ws(line + i);
}

typedef enum { STAY, RESUME } Act;

static void resume(Dbg *D, Mode mode) {
  D->mode = mode;
  D->target = depth_of(D->sel);
  if (mode != M_RUN && mode != M_RETURN && D->ev == EV_LINE && D->sel == D->frame && D->stmt &&
      D->frame->space.mesh && communicates(D->stmt)) {
    D->coll_frame = D->frame;
    D->coll_stmt = D->stmt;
  }
}

static Act need_program(Dbg *D) {
  if (D->prog_file < 0) {
    complain("no program file to run: start shmapi with -i FILE or --debug FILE");
    return STAY;
  }
  return RESUME;
}

/* One command at a stop. */
static Act command(Dbg *D, const char *line) {
  char w[32];
  const char *args = split_word(line, w, sizeof w);
  if (!strcmp(w, "s") || !strcmp(w, "step")) { resume(D, M_STEP); return RESUME; }
  if (!strcmp(w, "n") || !strcmp(w, "next")) { resume(D, M_NEXT); return RESUME; }
  if (!strcmp(w, "c") || !strcmp(w, "cont") || !strcmp(w, "continue")) { resume(D, M_RUN); return RESUME; }
  if (!strcmp(w, "r") || !strcmp(w, "return") || !strcmp(w, "finish")) {
    if (!D->sel->caller) { resume(D, M_RUN); return RESUME; }
    resume(D, M_RETURN);
    return RESUME;
  }
  if (!strcmp(w, "unt") || !strcmp(w, "until")) {
    int file, cur;
    frame_pos(D, D->sel, &file, &cur);
    int64_t ln = cur + 1;
    if (*args && !parse_int(args, &ln)) { complain("usage: until [LINE]"); return STAY; }
    if (*args && ln <= cur) { complain("\"until\" line number is smaller than current line number"); return STAY; }
    resume(D, M_UNTIL);
    D->until_file = file;
    D->until_line = (int)ln;
    return RESUME;
  }
  if (!strcmp(w, "w") || !strcmp(w, "where") || !strcmp(w, "bt")) { cmd_where(D); return STAY; }
  if (!strcmp(w, "u") || !strcmp(w, "up")) { cmd_updown(D, args, 1); return STAY; }
  if (!strcmp(w, "d") || !strcmp(w, "down")) { cmd_updown(D, args, -1); return STAY; }
  if (!strcmp(w, "l") || !strcmp(w, "list")) { cmd_list(D, args); return STAY; }
  if (!strcmp(w, "ll") || !strcmp(w, "longlist")) { cmd_longlist(D); return STAY; }
  if (!strcmp(w, "p") || !strcmp(w, "print")) { cmd_print(D, args); return STAY; }
  if (!strcmp(w, "device")) { cmd_device(D, args); return STAY; }
  if (!strcmp(w, "show")) { cmd_show(D, args); return STAY; }
  if (!strcmp(w, "h") || !strcmp(w, "help")) {
    char *t = trimmed(args);
    if (!dbg_help(t) && !(D->help && D->help(D->ctx, t))) complain("no help on '%s'", t);
    mem_free(t);
    return STAY;
  }
  if (!strcmp(w, "q") || !strcmp(w, "quit") || !strcmp(w, "exit")) {
    D->req = REQ_QUIT;
    return RESUME;
  }
  if (!strcmp(w, "run") || !strcmp(w, "restart")) {
    if (need_program(D) == STAY) return STAY;
    D->req = w[1] == 'u' ? REQ_RUN : REQ_RESTART;
    return RESUME;
  }
  if (!strcmp(w, "b")) { cmd_break(D, args, false); return STAY; }
  if (!strcmp(w, "cl")) { cmd_clear(D, args); return STAY; }
  if (dbg_command(D, line, NULL)) return STAY;
  /* anything else is an expression to print */
  if (!D->stopped) return STAY;
  Frame *G = D->sel;
  Buf out = {0}, err = {0};
  char *e = trimmed(line);
  bool word = true;
  for (const char *p = e; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') word = false;
  if (show_expr(D, G, e, NULL, focus_for(D, G), &out, &err)) fputs(buf_cstr(&out), stdout);
  else if (word && !eval_lookup_name(D, G, e)) complain("'%s' is neither a command nor a name defined here (help lists the commands)", e);
  else complain("%s", buf_cstr(&err));
  fflush(stdout);
  buf_free(&out);
  buf_free(&err);
  mem_free(e);
  return STAY;
}

static void stop_loop(Dbg *D) {
  for (;;) {
    fflush(stdout);
    char *line = D->read(D->ctx, "(shdb) ");
    if (!line) {
      D->req = REQ_QUIT;
      break;
    }
    char *t = trimmed(line);
    free(line);
    if (!*t) {
      mem_free(t);
      if (!D->last_cmd) continue;
      t = mem_strndup(D->last_cmd, strlen(D->last_cmd));
    } else {
      mem_free(D->last_cmd);
      D->last_cmd = NULL;          /* not left dangling if the copy runs out of memory */
      D->last_cmd = mem_strndup(t, strlen(t));
    }
    Act a = command(D, t);
    mem_free(t);
    if (a == RESUME) break;
  }
}

static void do_stop(Dbg *D, Frame *F, IrStmt *st, EvalEvent ev, const char *banner) {
  D->stopped = true;
  D->frame = F;
  D->stmt = st;
  D->ev = ev;
  D->sel = F;
  D->list_next = 0;
  D->engaged = true;
  D->coll_stmt = NULL;
  D->coll_frame = NULL;
  Buf b = {0};
  if (banner && *banner) buf_printf(&b, "%s\n", banner);
  if (ev == EV_RETURN) buf_puts(&b, "--Return--\n");
  put_location(D, &b, F, '>');
  if (ev == EV_RETURN) {
    IrFunc *fn = F->fn;
    int64_t dev = focus_for(D, F);
    for (int i = 0; i < fn->nouts; i++) {
      const IrAtom *o = &fn->outs[i];
      Val *v = o->lit ? val_of(o->lit) : val_ref(eval_lookup(F, o->var));
      if (!v) continue;
      Buf label = {0};
      buf_puts(&label, "returns ");
      if (o->var && o->var->name.n) buf_put(&label, o->var->name.p, (size_t)o->var->name.n);
      else buf_printf(&label, "result %d", i);
      put_named(&b, buf_cstr(&label), &F->space, v, dev);
      buf_free(&label);
      val_unref(v);
    }
  } else if (st && F->space.mesh && communicates(st)) {
    put_sends(D, &b, F, st);
  }
  emit(&b);
  buf_free(&b);
  do_displays(D, false);
  stop_loop(D);
  D->stopped = false;
  if (D->req != REQ_NONE) eval_abandon(D->I);
}

/* ---- the trace ------------------------------------------------------------------------------- */

static bool wants_stop(Dbg *D, Frame *F, IrStmt *st, EvalEvent ev) {
  if (D->mode == M_RUN) return false;
  int depth = depth_of(F);
  switch (D->mode) {
  case M_RUN: return false;
  case M_STEP: return true;
  case M_NEXT: return depth <= D->target;
  case M_RETURN: return ev == EV_RETURN ? depth <= D->target : depth < D->target;
  case M_UNTIL:
    if (ev == EV_RETURN) return depth <= D->target;
    if (depth < D->target) return true;
    return depth == D->target && st->whole.file == D->until_file && st->line >= D->until_line;
  }
  return false;
}

static void trace(Interp *I, Frame *F, IrStmt *st, EvalEvent ev, void *data) {
  (void)I;
  Dbg *D = data;
  if (ev == EV_DONE) {
    if (st == D->coll_stmt && F == D->coll_frame) report_received(D, F, st);
    return;
  }
  if (F->fn == D->skip_fn) return;
  if (ev == EV_LINE && (st->inserted || st->whole.file < 0)) return;
  D->frame = F;
  D->stmt = st;
  D->ev = ev;
  if (eval_interrupted) {
    eval_interrupted = 0;
    if (!D->engaged) err_throw("interrupted");
    do_stop(D, F, st, ev, "Program interrupted. (Use 'continue' to resume.)");
    return;
  }
  bool wrapper = F->fn->is_shard_map_wrapper;
  if (!wrapper || ev == EV_LINE)
    for (int i = 0; i < D->nbp; i++) {
      Bp *bp = D->bps[i];
      if (!bp_matches(D, bp, F, ev == EV_LINE ? st : NULL)) continue;
      Buf banner = {0}, msg = {0};
      int64_t n = F->space.mesh ? F->space.mesh->ndev : 1;
      uint8_t *held = mem_calloc((size_t)n);
      int r = bp->cond ? bp_condition(D, bp, F, st, held, &msg) : 1;
      if (r == 0) {
        mem_free(held);
        buf_free(&msg);
        continue;
      }
      if (r > 0 && bp->ignore > 0) {
        bp->ignore--;
        mem_free(held);
        buf_free(&msg);
        continue;
      }
      bp->hits++;
      D->mode = M_RUN;
      buf_printf(&banner, "Breakpoint %d", bp->no);
      if (r < 0) buf_printf(&banner, " (its condition failed: %s)", buf_cstr(&msg));
      else if (bp->cond && F->space.mesh) {
        buf_printf(&banner, ", %s held on ", bp->cond);
        put_devset(&banner, held, n);
      }
      mem_free(held);
      buf_free(&msg);
      if (bp->temp) {
        buf_puts(&banner, "\n");
        buf_printf(&banner, "Deleted breakpoint %d at ", bp->no);
        put_bp_where(&banner, bp);
        bp_delete(D, i, false);
      }
      /* do_stop may abandon the run: keep nothing allocated across it */
      char text[2048];
      snprintf(text, sizeof text, "%s", buf_cstr(&banner));
      buf_free(&banner);
      do_stop(D, F, st, ev, text);
      return;
    }
  if (wrapper) return;
  if (wants_stop(D, F, st, ev)) do_stop(D, F, st, ev, NULL);
}

/* ---- the REPL's entry points --------------------------------------------------------------- */

Dbg *dbg_new(Checker *C, Interp *I, DbgReader read, DbgHelp help, void *ctx) {
  Dbg *D = mem_calloc(sizeof *D);
  D->C = C;
  D->I = I;
  D->read = read;
  D->help = help;
  D->ctx = ctx;
  D->prog_file = -1;
  D->focus = -1;
  eval_set_trace(I, trace, D);
  return D;
}

void dbg_free(Dbg *D) {
  if (!D) return;
  eval_set_trace(D->I, NULL, NULL);
  for (int i = 0; i < D->nbp; i++) bp_free(D->bps[i]);
  mem_free(D->bps);
  for (int i = 0; i < D->ndisp; i++) display_free(D->disp[i]);
  mem_free(D->disp);
  mem_free(D->last_cmd);
  for (int i = 0; i < D->npool; i++) mem_free(D->pool[i]);
  mem_free(D->pool);
  mem_free(D);
}

void dbg_set_program(Dbg *D, int file, int nstmts) {
  D->prog_file = file;
  D->prog_n = nstmts;
}

bool dbg_stopped(Dbg *D) { return D->stopped; }

int dbg_visible_names(Dbg *D, const char **names, int max) {
  if (!D->stopped) return 0;
  VarList L = {0};
  visible_vars(D, D->sel, &L);
  dedupe(&L);
  for (int i = 0; i < D->npool; i++) mem_free(D->pool[i]);
  D->npool = 0;
  int n = 0;
  for (int i = 0; i < L.n && n < max; i++) {
    VEC_GROW(D->pool, D->cappool, D->npool + 1);
    D->pool[D->npool++] = mem_strndup(L.v[i]->name.p, (size_t)L.v[i]->name.n);
    names[n++] = D->pool[D->npool - 1];
  }
  mem_free(L.v);
  return n;
}

static void begin_run(Dbg *D, bool stop_first) {
  D->req = REQ_NONE;
  D->mode = stop_first ? M_STEP : M_RUN;
  D->engaged = stop_first;
  D->coll_stmt = NULL;
  D->coll_frame = NULL;
  D->stopped = false;
  D->frame = NULL;
  D->stmt = NULL;
  eval_interrupted = 0;
}

DbgResult dbg_run_main(Dbg *D, int from, int to, bool stop_first) {
  for (;;) {
    begin_run(D, stop_first);
    D->main_running = true;
    bool ok = eval_run_to(D->I, from, to);
    D->main_running = false;
    D->frame = NULL;
    D->stopped = false;        /* an error thrown while stopped freed the frames */
    Request r = D->req;
    D->req = REQ_NONE;
    D->mode = M_RUN;
    if (r == REQ_RUN || r == REQ_RESTART) {
      from = 0;
      to = D->prog_n;
      stop_first = r == REQ_RESTART;
      say("Running %s from its start%s.", diag_file_name(D->prog_file),
          stop_first ? ", stopped before its first statement" : "");
      continue;
    }
    if (r == REQ_QUIT) return DBG_QUIT;
    return ok ? DBG_OK : DBG_ERROR;
  }
}

DbgResult dbg_run_call(Dbg *D, const char *call, bool stop_first) {
  diag_clear();
  IrFunc *f = check_expr(D->C, "<stdin>", call, check_main(D->C), NULL, -1, 0);
  if (!f) {       /* every diagnostic, with its place (in a function called, too) */
    fflush(stdout);
    diag_flush(stderr);
    return DBG_ERROR;
  }
  for (int i = 0; i < f->ncaptured; i++)
    if (!eval_global(D->I, f->captured[i])) {
      fflush(stdout);
      fprintf(stderr, "shmapi: error: %.*s has no value yet\n", f->captured[i]->name.n, f->captured[i]->name.p);
      return DBG_ERROR;
    }
  Val **outs = mem_calloc(sizeof(Val *) * (size_t)(f->nouts + 1));
  begin_run(D, stop_first);
  D->skip_fn = f;
  Span where = span_none();
  bool ok = eval_call(D->I, eval_top(D->I), f, outs, true, &where);
  D->skip_fn = NULL;
  D->frame = NULL;
  D->stopped = false;
  D->mode = M_RUN;
  Request r = D->req;
  D->req = REQ_NONE;
  DbgResult res = ok ? DBG_OK : r == REQ_QUIT ? DBG_QUIT : DBG_ERROR;
  if (ok) {
    Buf b = {0};
    Space sp = {NULL, 1, NULL};
    for (int i = 0; i < f->nouts; i++) {
      eval_print_value(&b, &sp, outs[i], true);
      buf_putc(&b, '\n');
      val_unref(outs[i]);
    }
    emit(&b);
    buf_free(&b);
  } else if (r == REQ_RUN || r == REQ_RESTART) {
    int to = D->prog_n;
    say("Running %s from its start%s.", diag_file_name(D->prog_file),
        r == REQ_RESTART ? ", stopped before its first statement" : "");
    res = dbg_run_main(D, 0, to, r == REQ_RESTART);
  } else if (r != REQ_QUIT) {
    fflush(stdout);
    diag_print(stderr, where, "error", err_message());
  }
  mem_free(outs);
  return res;
}

bool dbg_command(Dbg *D, const char *line, DbgResult *res) {
  char w[32];
  const char *args = split_word(line, w, sizeof w);
  if (!strcmp(w, "break")) cmd_break(D, args, false);
  else if (!strcmp(w, "tbreak")) cmd_break(D, args, true);
  else if (!strcmp(w, "clear")) cmd_clear(D, args);
  else if (!strcmp(w, "disable")) for_bp_numbers(D, args, disable_one);
  else if (!strcmp(w, "enable")) for_bp_numbers(D, args, enable_one);
  else if (!strcmp(w, "condition")) cmd_condition(D, args);
  else if (!strcmp(w, "ignore")) cmd_ignore(D, args);
  else if (!strcmp(w, "display")) cmd_display(D, args);
  else if (!strcmp(w, "undisplay")) cmd_undisplay(D, args);
  else if (!strcmp(w, "info")) cmd_info(D, args);
  else if (!strcmp(w, "whos") && !*args) cmd_whos(D);
  else if ((!strcmp(w, "run") || !strcmp(w, "restart")) && !*args && !D->stopped) {
    if (need_program(D) == STAY) return true;
    DbgResult r = dbg_run_main(D, 0, D->prog_n, w[1] == 'e');
    if (res) *res = r;
  } else return false;
  return true;
}
