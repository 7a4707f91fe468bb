/*
** inspect.c — looking at a program's state (see inspect.h): devices and
** meshes, values per device, the variables a frame sees, expressions
** compiled and run in a frame, and the commands made of them (print,
** device, whos, info mesh, info locals, show, a bare name).
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "diag.h"
#include "err.h"
#include "npprint.h"
#include "inspect.h"
#include "valprint.h"
#include "rule.h"
#include "shardpic.h"
#include "show.h"
#include "split.h"
#include "prims.h"

/* The most names one `!` statement binds. */
enum { INSP_MAXNAMES = 32 };

/* ---- messages and arguments ---------------------------------------------------------- */

static const char *skip_ws(const char *s) {
  while (isspace((unsigned char)*s)) s++;
  return s;
}

char *insp_trim(const char *s) {
  s = skip_ws(s);
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) n--;
  return mem_strndup(s, n);
}

bool insp_int(const char *s, int64_t *out) {
  s = skip_ws(s);
  char *end;
  if (!*s) return false;
  long long v = strtoll(s, &end, 10);
  if (end == s || *skip_ws(end)) return false;
  *out = v;
  return true;
}

void insp_emit(Buf *b) {
  if (b->n) fwrite(b->p, 1, b->n, stdout);
  buf_reset(b);
  fflush(stdout);
}

void insp_say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

void insp_complain(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("*** ");
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

void insp_take_diags(Buf *out) {
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

/* ---- source text --------------------------------------------------------------------- */

int insp_file_lines(int file) {
  size_t len;
  const char *t = diag_file_text(file, &len);
  int n = 1;
  for (size_t i = 0; i < len; i++)
    if (t[i] == '\n' && i + 1 < len) n++;
  return len ? n : 0;
}

int insp_line_of(Span sp) {
  int line, col;
  diag_linecol(sp.file, sp.off, &line, &col);
  return line;
}

/* ---- meshes and devices -------------------------------------------------------------- */

int64_t insp_dev_of(const Mesh *m, const int64_t *c) {
  int64_t d = 0;
  for (int k = 0; k < m->naxes; k++) d = d * m->size[k] + c[k];
  return d;
}

void insp_put_axis(Buf *b, const Mesh *m, int k) { buf_put(b, m->axis[k].p, (size_t)m->axis[k].n); }

void insp_put_coords(Buf *b, const Mesh *m, int64_t d) {
  int64_t c[SHM_MAXAXES];
  til_coords(m, d, c);
  buf_putc(b, '(');
  for (int k = 0; k < m->naxes; k++) buf_printf(b, "%s%lld", k ? ", " : "", (long long)c[k]);
  buf_puts(b, m->naxes == 1 ? ",)" : ")");
}

void insp_put_axes(Buf *b, const Mesh *m) {
  buf_putc(b, '(');
  for (int k = 0; k < m->naxes; k++) {
    if (k) buf_puts(b, ", ");
    insp_put_axis(b, m, k);
  }
  buf_puts(b, m->naxes == 1 ? ",)" : ")");
}

bool insp_on_path(const Space *sp, int64_t d) { return !sp->active || sp->active[d]; }

/* A device named by `N` or by mesh coordinates `(1, 0)`; -1 after a
   complaint. */
static int64_t parse_device(const Mesh *m, const char *s) {
  s = skip_ws(s);
  int64_t d;
  if (*s != '(') {
    if (!insp_int(s, &d)) { insp_complain("a device is a number or mesh coordinates such as (1, 0)"); return -1; }
    if (d < 0 || d >= m->ndev) {
      insp_complain("device %lld is not on mesh %.*s, whose devices are 0-%lld", (long long)d, m->name.n, m->name.p,
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
    if (end == p || n >= SHM_MAXAXES) { insp_complain("bad mesh coordinates '%s'", s); return -1; }
    c[n++] = v;
    p = skip_ws(end);
    if (*p == ',') p++;
    else if (*p != ')') { insp_complain("bad mesh coordinates '%s'", s); return -1; }
  }
  if (*skip_ws(p + 1)) { insp_complain("bad mesh coordinates '%s'", s); return -1; }
  if (n != m->naxes) {
    Buf b = {0};
    insp_put_axes(&b, m);
    insp_complain("mesh %.*s has %d ax%s %s: give %d coordinate%s", m->name.n, m->name.p, m->naxes,
                  m->naxes == 1 ? "is" : "es", buf_cstr(&b), m->naxes, m->naxes == 1 ? "" : "s");
    buf_free(&b);
    return -1;
  }
  for (int k = 0; k < n; k++)
    if (c[k] < 0 || c[k] >= m->size[k]) {
      insp_complain("coordinate %lld is out of range for axis %.*s of size %lld", (long long)c[k], m->axis[k].n,
                    m->axis[k].p, (long long)m->size[k]);
      return -1;
    }
  return insp_dev_of(m, c);
}

/* ---- values -------------------------------------------------------------------------- */

/* One value as seen from space sp: every device's block, or the block
   of device dev (>= 0). */
static void put_value(Buf *b, const Space *sp, Val *v, int64_t dev) {
  if (!sp->mesh) { fmt_array(b, v->blk[0]); return; }
  if (dev >= 0) {
    Array *a = insp_on_path(sp, dev) ? v->blk[til_block_of(sp->mesh, v->mask, dev)] : NULL;
    if (a) fmt_array(b, a);
    else buf_printf(b, "(device %lld is not on this path)", (long long)dev);
    return;
  }
  vp_value(b, sp, v, true);
}

void insp_put_named(Buf *b, const char *label, const Space *sp, Val *v, int64_t dev) {
  Buf t = {0};
  put_value(&t, sp, v, dev);
  buf_printf(b, strchr(buf_cstr(&t), '\n') ? "%s:\n" : "%s = ", label);
  buf_puts(b, buf_cstr(&t));
  buf_putc(b, '\n');
  buf_free(&t);
}

int64_t insp_focus(const Insp *in, Frame *G) {
  return G->space.mesh && in->focus >= 0 && in->focus < G->space.mesh->ndev ? in->focus : -1;
}

/* ---- frames -------------------------------------------------------------------------- */

IrStmt *insp_stmt_of(const Insp *in, Frame *G) { return G == in->frame ? in->stmt : G->cur; }

bool insp_frame_pos(const Insp *in, Frame *G, int *file, int *line) {
  IrStmt *s = insp_stmt_of(in, G);
  if (s) {
    *file = s->whole.file;
    *line = s->line;
    return *file >= 0;
  }
  IrFunc *fn = G->fn;
  if (fn->nouts && fn->outs[0].sp.file >= 0) {
    *file = fn->outs[0].sp.file;
    *line = insp_line_of(fn->outs[0].sp);
    return true;
  }
  if (fn->sp.file >= 0) {
    *file = fn->sp.file;
    *line = fn->end_line ? fn->end_line : insp_line_of(fn->sp);
    return true;
  }
  return false;
}

/* Add v, if it has a name. */
static void vars_add(InspVars *L, IrVar *v) {
  if (!v || !v->name.n) return;
  VEC_GROW(L->v, L->cap, L->n + 1);
  L->v[L->n++] = v;
}

/* The variables frame G has bound so far: parameters, then the results
   of the statements before the one it stands at. */
static void own_vars(const Insp *in, Frame *G, InspVars *L) {
  IrFunc *fn = G->fn;
  for (int i = 0; i < fn->nparams; i++) vars_add(L, fn->params[i]);
  IrStmt *lim = insp_stmt_of(in, G);
  if (!G->caller && G != in->frame && !in->main_running) lim = NULL;
  for (int i = 0; i < fn->nbody; i++) {
    IrStmt *s = fn->body[i];
    if (s == lim) break;
    if (s->inserted) continue;
    for (int k = 0; k < s->nout; k++) vars_add(L, s->out[k]);
  }
  for (int i = 0; i < in->nmade; i++)        /* those `!` made here */
    if (in->made[i]->owner == fn && in->made[i]->slot < G->nslots && G->slots[in->made[i]->slot])
      vars_add(L, in->made[i]);
}

void insp_vars(const Insp *in, Frame *G, bool own, bool dedupe, InspVars *L) {
  if (own) {
    own_vars(in, G, L);
  } else {
    Frame *chain[256];
    int n = 0;
    for (Frame *x = G; x && n < 256; x = x->up) chain[n++] = x;
    for (int i = n - 1; i >= 0; i--) own_vars(in, chain[i], L);
  }
  if (!dedupe) return;
  /* keep the last variable of each name, in order */
  int k = 0;
  for (int i = 0; i < L->n; i++) {
    bool later = false;
    for (int j = i + 1; j < L->n && !later; j++)
      if (str_eq(L->v[i]->name, L->v[j]->name)) later = true;
    if (!later) L->v[k++] = L->v[i];
  }
  L->n = k;
}

/* The variance set of every axis of m. */
static uint32_t all_axes(const Mesh *m) { return m ? (m->naxes >= 32 ? ~0u : (1u << m->naxes) - 1) : 0; }

/* ---- expressions --------------------------------------------------------------------- */

/* Is a variable or a function of this name visible in G? */
static bool is_name(const Insp *in, Frame *G, const char *name) {
  InspVars L = {0};
  insp_vars(in, G, false, false, &L);
  bool found = false;
  for (int i = 0; i < L.n && !found; i++) found = str_eqc(L.v[i]->name, name);
  mem_free(L.v);
  return found || check_has_func(in->C, str_c(name));
}

IrFunc *insp_compile(const Insp *in, Frame *G, const char *text, Buf *err) {
  InspVars L = {0};
  insp_vars(in, G, false, false, &L);
  uint32_t ctrl = G->space.active ? all_axes(G->space.mesh) : 0;
  diag_clear();
  IrFunc *f = check_expr(in->C, "<expression>", text, G->fn, L.v, L.n, ctrl);
  mem_free(L.v);
  if (!f) {
    insp_take_diags(err);
    if (!err->n) buf_puts(err, "cannot evaluate that");
    return NULL;
  }
  diag_clear();
  return f;
}

bool insp_run(const Insp *in, Frame *G, IrFunc *f, Val **out, Buf *err) {
  for (int i = 0; i < f->ncaptured; i++) {
    IrVar *v = f->captured[i];
    if (!eval_lookup(G, v)) {
      buf_printf(err, "%.*s has no value yet", v->name.n, v->name.p);
      return false;
    }
  }
  if (eval_call(in->I, G, f, out, false, NULL)) return true;
  buf_puts(err, err_message());
  return false;
}

/* The out_spec a body's result `expr` leaves through, when G is a
   shard_map body's frame and expr names one of its results. */
static const Spec *result_spec(Frame *G, const char *expr) {
  for (int k = 0; k < G->fn->nouts + G->fn->nparams; k++) {
    IrVar *v = k < G->fn->nouts ? G->fn->outs[k].var : G->fn->params[k - G->fn->nouts];
    if (v && v->name.n == (int)strlen(expr) && !memcmp(v->name.p, expr, strlen(expr))) return eval_result_spec(G, v);
  }
  return NULL;
}

/* The global view of v: the array the result's out_spec (or, for any
   other value, the spec stacking the axes it varies over on dimension 0)
   assembles. */
static bool put_global(Buf *out, Frame *G, const char *expr, Val *v, Buf *err) {
  const Mesh *m = G->space.mesh;
  if (!m) { fmt_array(out, v->blk[0]); buf_putc(out, '\n'); return true; }
  Spec dflt;
  const Spec *spc = result_spec(G, expr);
  if (!spc) til_default_spec(m, v->mask, &dflt), spc = &dflt;
  char msg[256];
  Array *a = spl_global(m, spc, v, msg, sizeof msg);
  if (!a) { buf_puts(err, msg); return false; }
  buf_puts(out, "global, as ");
  rule_spec_text(out, spc, m);
  buf_printf(out, " assembles it:\n");
  fmt_array(out, a);
  buf_putc(out, '\n');
  arr_unref(a);
  return true;
}

/* `layout x`: the picture of where v's blocks are in the global array
   (laid out as the global view: put_global's spec). */
static bool put_layout(Buf *out, Frame *G, const char *expr, Val *v, Buf *err) {
  const Mesh *m = G->space.mesh;
  const Array *b0 = NULL;
  for (int64_t i = 0; i < v->nblk && !b0; i++) b0 = v->blk[i];
  if (!b0) { buf_puts(err, "no device on this path holds the value"); return false; }
  Spec dflt;
  const Spec *spc = m ? result_spec(G, expr) : NULL;
  if (m && !spc) til_default_spec(m, v->mask, &dflt), spc = &dflt;
  if (m && b0->rank == 0 && v->mask) {
    buf_puts(err, "a scalar that varies between devices has no global layout to draw");
    return false;
  }
  int64_t shape[SHM_MAXRANK];
  for (int d = 0; d < b0->rank; d++) {
    shape[d] = b0->shape[d];
    for (int k = 0; spc && d < spc->ndims && k < spc->dim[d].naxes; k++) shape[d] *= m->size[spc->dim[d].axes[k]];
  }
  if (spc) {
    buf_puts(out, "global, as ");
    rule_spec_text(out, spc, m);
    buf_puts(out, " assembles it:\n");
  }
  if (!pic_draw(out, m, spc, b0->rank, shape, pic_width(), pic_unicode())) {
    buf_puts(err, buf_cstr(out));
    return false;
  }
  return true;
}

bool insp_eval(const Insp *in, Frame *G, const char *expr, const char *label, int64_t dev, Buf *out, Buf *err) {
  IrFunc *f = insp_compile(in, G, expr, err);
  if (!f) return false;
  Val **vals = mem_calloc(sizeof(Val *) * (size_t)(f->nouts + 1));
  bool ok = insp_run(in, G, f, vals, err);
  if (ok)
    for (int i = 0; i < f->nouts; i++) {
      if (dev == INSP_GLOBAL) ok = ok && put_global(out, G, expr, vals[i], err);
      else if (dev == INSP_LAYOUT) ok = ok && put_layout(out, G, expr, vals[i], err);
      else if (label) insp_put_named(out, label, &G->space, vals[i], dev);
      else {
        if (dev < 0) vp_unreduced_note(out, &f->outs[i].t, G->space.mesh);
        put_value(out, &G->space, vals[i], dev);
        buf_putc(out, '\n');
      }
    }
  for (int i = 0; i < f->nouts; i++) val_unref(vals[i]);
  mem_free(vals);
  return ok;
}

/* ---- print and device ---------------------------------------------------------------- */

/* Evaluate expression text in frame G and print it for dev (or its
   global view or layout); complain when it fails.  `cmd` names the
   command for the complaint about no expression. */
static void eval_and_say(Insp *in, Frame *G, const char *text, int64_t dev, const char *cmd) {
  char *e = insp_trim(text);
  Buf out = {0}, err = {0};
  if (!*e) insp_complain("%s needs an expression", cmd);
  else if (insp_eval(in, G, e, NULL, dev, &out, &err)) fputs(buf_cstr(&out), stdout);
  else insp_complain("%s", buf_cstr(&err));
  fflush(stdout);
  buf_free(&out);
  buf_free(&err);
  mem_free(e);
}

void insp_print(Insp *in, const char *args) {
  char *a = insp_trim(args);
  if (!*a) { insp_complain("print needs an expression"); mem_free(a); return; }
  Frame *G = in->stopped ? in->sel : eval_top(in->I);
  int64_t dev = insp_focus(in, G);
  char *at = strrchr(a, '@');
  if (at) {
    *at = 0;
    if (!G->space.mesh) {
      insp_complain("@ picks a device inside a shard_map; here each value is one array");
      mem_free(a);
      return;
    }
    dev = parse_device(G->space.mesh, at + 1);
    if (dev < 0) { mem_free(a); return; }
    if (!insp_on_path(&G->space, dev)) {
      Buf b = {0};
      vp_devset(&b, G->space.active, G->space.mesh->ndev);
      insp_complain("device %lld is not on this path (%s %s)", (long long)dev, buf_cstr(&b),
                    strchr(buf_cstr(&b), ',') || strchr(buf_cstr(&b), '-') ? "are" : "is");
      buf_free(&b);
      mem_free(a);
      return;
    }
  }
  size_t n = strlen(a);
  if (!at && n > 7 && !strcmp(a + n - 7, " global")) {
    a[n - 7] = 0;
    dev = INSP_GLOBAL;
  }
  eval_and_say(in, G, a, dev, "print");
  mem_free(a);
}

void insp_layout(Insp *in, const char *args) {
  eval_and_say(in, in->stopped ? in->sel : eval_top(in->I), args, INSP_LAYOUT, "layout");
}

void insp_print_line(Insp *in, const char *line) {
  if (!in->stopped) return;
  Frame *G = in->sel;
  Buf out = {0}, err = {0};
  char *e = insp_trim(line);
  bool word = true;
  for (const char *p = e; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') word = false;
  if (insp_eval(in, G, e, NULL, insp_focus(in, G), &out, &err)) fputs(buf_cstr(&out), stdout);
  else if (word && !is_name(in, G, e))
    insp_complain("'%s' is neither a command nor a name defined here (help lists the commands)", e);
  else insp_complain("%s", buf_cstr(&err));
  fflush(stdout);
  buf_free(&out);
  buf_free(&err);
  mem_free(e);
}

/* ---- `!`: changing a frame's variables ------------------------------------------------ */

/* The names before a statement's `=` (at most max), and where its
   expression starts; 0 when text binds no names. */
static int lhs_names(const char *text, Str *names, int max, const char **rhs) {
  const char *p = text;
  int n = 0;
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (!isalpha((unsigned char)*p) && *p != '_') return 0;
    const char *b = p;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    if (n == max) return 0;
    names[n++] = (Str){b, (int)(p - b)};
    while (isspace((unsigned char)*p)) p++;
    if (*p == '=') break;
    if (*p != ',') return 0;
    p++;
  }
  *rhs = p + 1;
  return n;
}

bool insp_binds(const char *line) {
  Str names[INSP_MAXNAMES];
  const char *rhs;
  return lhs_names(line, names, INSP_MAXNAMES, &rhs) > 0;
}

/* The variable `name` names in G: the last visible one of that name. */
static IrVar *visible_var(const Insp *in, Frame *G, Str name) {
  InspVars L = {0};
  insp_vars(in, G, false, false, &L);
  IrVar *v = NULL;
  for (int i = 0; i < L.n; i++)
    if (str_eq(L.v[i]->name, name)) v = L.v[i];
  mem_free(L.v);
  return v;
}

/* A statement of a function of G's chain that binds `name` and has not
   run yet, or NULL. */
static IrStmt *binds_later(const Insp *in, Frame *G, Str name) {
  for (Frame *H = G; H; H = H->up) {
    IrStmt *lim = insp_stmt_of(in, H);
    bool after = !lim;
    for (int i = 0; i < H->fn->nbody; i++) {
      IrStmt *s = H->fn->body[i];
      if (s == lim) after = true;
      for (int k = 0; after && k < s->nout; k++)
        if (s->out[k] && str_eq(s->out[k]->name, name)) return s;
    }
  }
  return NULL;
}

/* Why value type t cannot be stored in variable v ("" when it can). */
static void unfit(Buf *why, const IrVar *v, const Type *t, const Mesh *m) {
  if (t->dt == v->t.dt && type_same_shape(t, &v->t) && !(t->vma & ~v->t.vma)) return;
  buf_printf(why, "%.*s is ", v->name.n, v->name.p);
  show_type(why, &v->t, m);
  buf_puts(why, " and the value is ");
  show_type(why, t, m);
  if (t->dt != v->t.dt) buf_puts(why, ": convert it first (convert_element_type[new_dtype=...])");
  else if (!type_same_shape(t, &v->t)) buf_puts(why, ": the shapes differ");
  else buf_puts(why, ": it varies over axes the variable's type does not");
}

/* Make variable `name` of G's function, of type t. */
static IrVar *make_var(Insp *in, Frame *G, Str name, const Type *t) {
  IrVar *v = mem_calloc(sizeof *v);
  char *nm = mem_strndup(name.p, (size_t)name.n);
  v->name = (Str){nm, name.n};
  v->t = *t;
  v->t.weak = false;
  v->owner = G->fn;
  v->slot = G->fn->nslots++;
  v->sp = span_none();
  v->last = -2;
  VEC_GROW(in->made, in->capmade, in->nmade + 1);
  in->made[in->nmade++] = v;
  return v;
}

void insp_free(Insp *in) {
  for (int i = 0; i < in->nmade; i++) {
    mem_free((char *)in->made[i]->name.p);
    mem_free(in->made[i]);
  }
  mem_free(in->made);
  in->made = NULL;
  in->nmade = in->capmade = 0;
}

/* The variable `name` made in the sandbox started at made[from], or NULL. */
static IrVar *sandbox_var(const Insp *in, int from, Str name) {
  for (int i = in->nmade - 1; i >= from && i >= 0; i--)
    if (str_eq(in->made[i]->name, name)) return in->made[i];
  return NULL;
}

void insp_unmake(Insp *in, Frame *G, int from) {
  for (int i = from; i < in->nmade; i++) {
    eval_assign(G, in->made[i], NULL);
    mem_free((char *)in->made[i]->name.p);
    mem_free(in->made[i]);
  }
  if (from < in->nmade) in->nmade = from;
}

void insp_exec(Insp *in, const char *stmt, int sandbox) {
  Frame *G = in->sel;
  Str names[INSP_MAXNAMES];
  const char *rhs;
  char *t = insp_trim(stmt);
  int n = lhs_names(t, names, INSP_MAXNAMES, &rhs);
  if (!n) {                                  /* an expression: print it */
    eval_and_say(in, G, t, insp_focus(in, G), "!");
    mem_free(t);
    return;
  }
  Buf err = {0};
  IrVar *target[INSP_MAXNAMES] = {0};
  for (int i = 0; i < n && !err.n; i++) {
    IrStmt *later = sandbox >= 0 ? NULL : binds_later(in, G, names[i]);
    target[i] = sandbox >= 0 ? sandbox_var(in, sandbox, names[i]) : visible_var(in, G, names[i]);
    if (later && !target[i])
      buf_printf(&err, "%.*s is set by line %d, which has not run yet; set it once it has", names[i].n,
                 names[i].p, later->line);
    else if (!target[i] && sandbox < 0 && (check_has_func(in->C, names[i]) || prim_lookup(names[i]) >= 0))
      buf_printf(&err, "%.*s names a %s; pick another name", names[i].n, names[i].p,
                 prim_lookup(names[i]) >= 0 ? "primitive" : "function");
  }
  char *e = insp_trim(rhs);
  IrFunc *f = err.n ? NULL : !*e ? (buf_puts(&err, "nothing after '='"), NULL) : insp_compile(in, G, e, &err);
  if (f && f->nouts != n)
    buf_printf(&err, "the expression has %d result%s, for %d name%s before '='", f->nouts,
               f->nouts == 1 ? "" : "s", n, n == 1 ? "" : "s");
  for (int i = 0; f && !err.n && i < n; i++)
    if (target[i] && sandbox >= 0 && (f->outs[i].t.dt != target[i]->t.dt || f->outs[i].t.vma != target[i]->t.vma ||
                                      !type_same_shape(&f->outs[i].t, &target[i]->t)))
      target[i] = NULL;                      /* in a sandbox a name may take a new type */
    else if (target[i]) unfit(&err, target[i], &f->outs[i].t, G->space.mesh);
  Val *vals[INSP_MAXNAMES] = {0};
  if (!err.n && insp_run(in, G, f, vals, &err)) {
    for (int i = 0; i < n; i++) {
      IrVar *v = target[i] ? target[i] : make_var(in, G, names[i], &f->outs[i].t);
      eval_assign(G, v, vals[i]);
    }
  }
  if (err.n) insp_complain("%s", buf_cstr(&err));
  buf_free(&err);
  mem_free(e);
  mem_free(t);
}

void insp_device(Insp *in, const char *args) {
  char *a = insp_trim(args);
  Frame *G = in->stopped ? in->sel : NULL;
  const Mesh *m = G ? G->space.mesh : NULL;
  if (!*a) {
    if (in->focus < 0) insp_say("No device focus: values inside a shard_map print for every device.");
    else {
      Buf b = {0};
      buf_printf(&b, "Focus: device %lld", (long long)in->focus);
      if (m && in->focus < m->ndev) {
        buf_puts(&b, " at mesh coordinates ");
        insp_put_axes(&b, m);
        buf_puts(&b, " = ");
        insp_put_coords(&b, m, in->focus);
      }
      insp_say("%s", buf_cstr(&b));
      buf_free(&b);
    }
  } else if (!strcmp(a, "all") || !strcmp(a, "none") || !strcmp(a, "off")) {
    in->focus = -1;
    insp_say("No device focus: values inside a shard_map print for every device.");
  } else if (m) {
    int64_t d = parse_device(m, a);
    if (d >= 0) {
      in->focus = d;
      Buf b = {0};
      buf_printf(&b, "Focus: device %lld at mesh coordinates ", (long long)d);
      insp_put_axes(&b, m);
      buf_puts(&b, " = ");
      insp_put_coords(&b, m, d);
      if (!insp_on_path(&G->space, d)) buf_puts(&b, " (not on this path)");
      insp_say("%s", buf_cstr(&b));
      buf_free(&b);
    }
  } else {
    int64_t d;
    if (!insp_int(a, &d) || d < 0) insp_complain("outside a shard_map a device is a number: device N");
    else {
      in->focus = d;
      insp_say("Focus: device %lld (used inside a shard_map)", (long long)d);
    }
  }
  mem_free(a);
}

/* ---- tables -------------------------------------------------------------------------- */

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

/* Print the rows, columns padded to their widest cell, and free t. */
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
    insp_say("%s", buf_cstr(&b));
    buf_free(&b);
  }
  tab_free(t);
}

/* ---- whos ---------------------------------------------------------------------------- */

/* "{i: 2, j: 4}". */
static void put_mesh_axes(Buf *b, const Mesh *m) {
  buf_putc(b, '{');
  for (int k = 0; k < m->naxes; k++) {
    buf_puts(b, k ? ", " : "");
    insp_put_axis(b, m, k);
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
      insp_put_axis(b, m, k);
      first = false;
    }
  if (n > 1) buf_putc(b, ')');
}

/* A function's type, or its parameters when no call has checked it. */
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

/* The last two columns of a `whos` row (type, devices); returns 1. */
static int whos_row(Table *t, Buf *ty, Buf *dv) {
  tab_add(t, buf_cstr(ty));
  tab_add(t, buf_cstr(dv));
  return 1;
}

/* Print the table, or say there is nothing to list. */
static void whos_end(Table *t, int rows, const char *none) {
  if (rows) tab_print(t);
  else {
    tab_free(t);
    insp_say("%s", none);
  }
}

/* The top level's names: kind, type and devices. */
static void whos_top(Insp *in) {
  int max = 4096;
  CheckName *names = mem_alloc(sizeof(CheckName) * (size_t)max);
  int n = check_list_names(in->C, names, max);
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
      Val *v = eval_global(in->I, e->var);
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
      if (e->mesh)
        buf_printf(&dv, "mesh%s%.*s, %lld device%s", e->mesh->name.n ? " " : "", e->mesh->name.n, e->mesh->name.p,
                   (long long)e->mesh->ndev, e->mesh->ndev == 1 ? "" : "s");
      else buf_puts(&dv, "-");
    }
    tab_add(&t, buf_cstr(&nm));
    tab_add(&t, kind);
    rows += whos_row(&t, &ty, &dv);
  next:
    buf_free(&nm);
    buf_free(&ty);
    buf_free(&dv);
  }
  whos_end(&t, rows, "No names are defined yet.");
  mem_free(names);
}

/* The variables visible in G: type, and the devices and blocks holding them. */
static void whos_frame(Insp *in, Frame *G) {
  InspVars L = {0};
  insp_vars(in, G, false, true, &L);
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
      vp_devset(&dv, G->space.active, m->ndev);
      buf_puts(&dv, "; ");
      put_blocks(&dv, m, v->t.vma);
    } else {
      buf_puts(&dv, "-");
    }
    tab_add(&t, buf_cstr(&nm));
    rows += whos_row(&t, &ty, &dv);
    buf_free(&nm);
    buf_free(&ty);
    buf_free(&dv);
  }
  whos_end(&t, rows, "No variables here yet.");
  mem_free(L.v);
}

void insp_whos(Insp *in) {
  if (in->stopped) whos_frame(in, in->sel);
  else whos_top(in);
}

/* ---- info mesh, info locals ---------------------------------------------------------- */

/* A mesh's axes and its device grid (1 or 2 axes) or list; the focus in
   brackets, and the devices on the path of sp when given. */
/* Whether row, column or device i of n is drawn: all of up to 16, else
   the first and last 6 and the focus's (a mesh of 65,536 devices in a
   row was one line of 524,290 characters). */
static bool grid_shown(int64_t i, int64_t n, int64_t focus_i) { return n <= 16 || i < 6 || i >= n - 6 || i == focus_i; }

static void print_mesh(Insp *in, const Mesh *m, const Space *sp) {
  Buf b = {0};
  buf_printf(&b, "mesh %.*s: ", m->name.n, m->name.p);
  put_mesh_axes(&b, m);
  buf_printf(&b, ", %lld device%s (numbered row-major)", (long long)m->ndev, m->ndev == 1 ? "" : "s");
  insp_say("%s", buf_cstr(&b));
  buf_reset(&b);
  int64_t focus = in->focus >= 0 && in->focus < m->ndev ? in->focus : -1;
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
    int64_t fr = focus >= 0 ? focus / nc : -1, fc = focus >= 0 ? focus % nc : -1;
    buf_printf(&b, "  %*s", rw, "");
    for (int64_t c = 0; c < nc; c++) {
      if (!grid_shown(c, nc, fc)) {
        if (grid_shown(c - 1, nc, fc)) buf_printf(&b, " %*s", cw, "...");
        continue;
      }
      snprintf(tmp, sizeof tmp, "%.*s=%lld", m->axis[ck].n, m->axis[ck].p, (long long)c);
      buf_printf(&b, " %*s", cw, tmp);
    }
    insp_say("%s", buf_cstr(&b));
    for (int64_t r = 0; r < nr; r++) {
      buf_reset(&b);
      if (!grid_shown(r, nr, fr)) {
        if (grid_shown(r - 1, nr, fr)) insp_say("  %*s", rw, "...");
        continue;
      }
      if (rk >= 0) snprintf(tmp, sizeof tmp, "%.*s=%lld", m->axis[rk].n, m->axis[rk].p, (long long)r);
      else tmp[0] = 0;
      buf_printf(&b, "  %*s", rw, tmp);
      for (int64_t c = 0; c < nc; c++) {
        if (!grid_shown(c, nc, fc)) {
          if (grid_shown(c - 1, nc, fc)) buf_printf(&b, " %*s", cw, "...");
          continue;
        }
        int64_t d = r * nc + c;
        char cell[64];
        snprintf(cell, sizeof cell, d == focus ? "[%lld]" : "%lld", (long long)d);
        buf_printf(&b, " %*s", cw, cell);
      }
      while (b.n && b.p[b.n - 1] == ' ') b.p[--b.n] = 0;
      insp_say("%s", buf_cstr(&b));
    }
  } else {
    for (int64_t d = 0; d < m->ndev; d++) {
      if (!grid_shown(d, m->ndev, focus)) {
        if (grid_shown(d - 1, m->ndev, focus)) insp_say("  ...");
        continue;
      }
      buf_reset(&b);
      buf_printf(&b, "  device %lld at ", (long long)d);
      insp_put_axes(&b, m);
      buf_puts(&b, " = ");
      insp_put_coords(&b, m, d);
      if (d == focus) buf_puts(&b, "  (focus)");
      insp_say("%s", buf_cstr(&b));
    }
  }
  if (sp && sp->active) {
    buf_reset(&b);
    buf_puts(&b, "on this path: ");
    vp_devset(&b, sp->active, m->ndev);
    insp_say("%s", buf_cstr(&b));
  }
  if (focus >= 0) insp_say("focus: device %lld (in brackets)", (long long)focus);
  buf_free(&b);
}

void insp_info_mesh(Insp *in) {
  if (in->stopped && in->sel->space.mesh) {
    print_mesh(in, in->sel->space.mesh, &in->sel->space);
    return;
  }
  int max = 4096;
  CheckName *names = mem_alloc(sizeof(CheckName) * (size_t)max);
  int n = check_list_names(in->C, names, max);
  int shown_meshes = 0;
  for (int i = n - 1; i >= 0; i--)
    if (names[i].kind == CN_MESH) {
      print_mesh(in, names[i].mesh, NULL);
      shown_meshes++;
    }
  if (!shown_meshes) insp_say("No mesh is defined (mesh m = {i: 4} defines one).");
  mem_free(names);
}

void insp_info_locals(Insp *in) {
  if (!in->stopped) { insp_complain("not stopped: whos lists the top-level names"); return; }
  Frame *G = in->sel;
  InspVars L = {0};
  insp_vars(in, G, true, true, &L);
  int64_t dev = insp_focus(in, G);
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
    insp_put_named(&b, buf_cstr(&label), &G->space, val, dev);
    buf_free(&label);
    count++;
    insp_emit(&b);
  }
  if (!count) insp_say("No locals yet.");
  buf_free(&b);
  mem_free(L.v);
}

/* ---- show, and a bare name ----------------------------------------------------------- */

void insp_show(Insp *in, const char *args) {
  char *a = insp_trim(args);
  Buf b = {0};
  if (check_show_func(in->C, str_c(a), &b)) fputs(buf_cstr(&b), stdout);
  else insp_complain("no checked function named '%s'", a);
  fflush(stdout);
  buf_free(&b);
  mem_free(a);
}

int insp_name(Insp *in, Str name) {
  IrVar *v = check_lookup_var(in->C, name);
  if (v) {
    Val *val = eval_global(in->I, v);
    if (!val) return -1;
    Buf b = {0};
    Space sp = {NULL, 1, NULL};
    vp_value(&b, &sp, val, true);
    buf_putc(&b, '\n');
    insp_emit(&b);
    buf_free(&b);
    return 1;
  }
  Buf b = {0};
  bool found = check_show_func(in->C, name, &b);
  if (found) insp_emit(&b);
  buf_free(&b);
  return found;
}
