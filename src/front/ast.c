/*
** ast.c — building the syntax tree from grammar actions.
*/
#include <stdio.h>
#include "ast.h"
#include "pyhint.h"
#include "diag.h"
#include "esc.h"
#include "mem.h"
#include "parser.h"

#define NEW(P, T) ((T *)arena_alloc((P)->arena, sizeof(T)))

AstList *ast_list(Parser *P) { return NEW(P, AstList); }

AstList *ast_list_add(Parser *P, AstList *l, void *item) {
  if (l->n == l->cap) {
    int nc = l->cap ? l->cap * 2 : 4;
    void **nv = arena_alloc(P->arena, sizeof(void *) * (size_t)nc);
    if (l->n) memcpy(nv, l->v, sizeof(void *) * (size_t)l->n);
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = item;
  return l;
}

/* Copy a list's items into a fresh array of `T*`. */
#define TAKE(P, list, dst, cnt) \
  do { (dst) = (void *)(list ? (list)->v : NULL); (cnt) = list ? (list)->n : 0; } while (0)

static int line_of(Span sp) {
  int line, col;
  diag_linecol(sp.file, sp.off, &line, &col);
  return line;
}

/* ---- parameter values ------------------------------------------------------ */

static PVal *pv(Parser *P, PVKind k, Span sp) {
  PVal *v = NEW(P, PVal);
  v->k = k;
  v->sp = sp;
  return v;
}

PVal *ast_pv_int(Parser *P, Tok t) { PVal *v = pv(P, PV_INT, t.sp); v->i = t.ival; v->f = (double)t.ival; return v; }
PVal *ast_pv_float(Parser *P, Tok t) { PVal *v = pv(P, PV_FLOAT, t.sp); v->f = t.fval; return v; }
PVal *ast_pv_str(Parser *P, Tok t) { PVal *v = pv(P, PV_STR, t.sp); v->s = t.text; return v; }
PVal *ast_pv_name(Parser *P, Tok t) { PVal *v = pv(P, PV_NAME, t.sp); v->s = t.text; return v; }
PVal *ast_pv_const(Parser *P, Tok t, PVKind k, int64_t x) { PVal *v = pv(P, k, t.sp); v->i = x; return v; }

PVal *ast_pv_seq(Parser *P, PVKind k, Tok open, AstList *items, Tok close, bool comma) {
  PVal *v = pv(P, k, span_join(open.sp, close.sp));
  TAKE(P, items, v->items, v->n);
  v->paren_only = k == PV_TUPLE && !comma && v->n == 1;
  return v;
}

PVal *ast_pv_func(Parser *P, AstFunc *fn) {
  PVal *v = pv(P, PV_FUNC, fn->whole);
  v->fn = fn;
  return v;
}

PVal *ast_pv_complex(Parser *P, Tok t) {
  PVal *v = pv(P, PV_COMPLEX, t.sp);
  v->f = t.fval;
  v->f2 = t.fval2;
  return v;
}

PVal *ast_pv_call(Parser *P, Tok open, AstList *items, Tok close) {
  PVal *v = pv(P, PV_CALL, span_join(open.sp, close.sp));
  v->s = open.text;
  TAKE(P, items, v->items, v->n);
  return v;
}

PVal *ast_pv_text(Parser *P, Tok first, Tok last) {
  PVal *v = pv(P, PV_REPR, span_join(first.sp, last.sp));
  v->s.p = first.text.p;
  v->s.n = (int)(last.text.p + last.text.n - first.text.p);
  return v;
}

PVal *ast_pv_pair(Parser *P, PVKind k, PVal *key, PVal *x) {
  PVal *v = pv(P, k, span_join(key->sp, x->sp));
  if (k == PV_KW) {
    v->s = key->s;
    v->items = arena_alloc(P->arena, sizeof(PVal *));
    v->items[0] = x;
    v->n = 1;
  } else {
    v->items = arena_alloc(P->arena, 2 * sizeof(PVal *));
    v->items[0] = key;
    v->items[1] = x;
    v->n = 2;
  }
  return v;
}

AstList *ast_list_cat(Parser *P, AstList *a, AstList *b) {
  AstList *r = ast_list(P);
  for (int i = 0; i < a->n; i++) ast_list_add(P, r, a->v[i]);
  for (int i = 0; i < b->n; i++) ast_list_add(P, r, b->v[i]);
  return r;
}

AstParam *ast_param(Parser *P, Tok key, PVal *v) {
  AstParam *p = NEW(P, AstParam);
  p->key = key.text;
  p->sp = key.sp;
  p->v = v;
  return p;
}

/* ---- types, binders, literals ---------------------------------------------- */

AstList *ast_dim(Parser *P, AstList *dims, Tok t) {
  Tok *c = NEW(P, Tok);
  *c = t;
  return ast_list_add(P, dims, c);
}

AstType *ast_type(Parser *P, Tok dtype, AstList *dims, Tok close) {
  AstType *t = NEW(P, AstType);
  t->sp = span_join(dtype.sp, close.sp);
  t->dtype = dtype.text;
  for (int i = 0; i < dims->n; i++) {
    Tok *d = dims->v[i];
    if (t->rank == SHM_MAXRANK) { t->rank_overflow = true; break; }
    if (d->type == TK_AT) {      /* 8@x: ast_sdim's token, its text the axes */
      t->has_shard = true;
      t->dim_shard[t->rank] = d->text;
    }
    t->shape[t->rank++] = d->ival;
  }
  return t;
}

/* `8@x` or `8@(a,b)`: the size's token, marked TK_AT, whose text is the
   axes as JAX prints them. */
Tok ast_sdim(Parser *P, Tok size, AstList *axes, bool paren) {
  size_t n = 2;
  for (int i = 0; i < axes->n; i++) n += (size_t)((Tok *)axes->v[i])->text.n + 1;
  char *buf = arena_alloc(P->arena, n + 1), *w = buf;
  if (paren) *w++ = '(';
  for (int i = 0; i < axes->n; i++) {
    Tok *a = axes->v[i];
    if (i) *w++ = ',';
    memcpy(w, a->text.p, (size_t)a->text.n);
    w += a->text.n;
  }
  if (paren) *w++ = ')';
  *w = 0;
  Tok r = size;
  r.type = TK_AT;
  r.text.p = buf;
  r.text.n = (int)(w - buf);
  return r;
}

/* `K:(a,b)`: the list [K, a, b]. */
AstList *ast_group(Parser *P, Tok kind, AstList *axes) {
  AstList *l = ast_dim(P, ast_list(P), kind);
  for (int i = 0; i < axes->n; i++) ast_list_add(P, l, axes->v[i]);
  return l;
}

/* {V:i, U:x, R:y}: each group a list [letter, axes...] (ast_group). */
AstType *ast_type_groups(Parser *P, AstType *t, AstList *groups, Tok open, Tok close) {
  ast_type_vma(P, t, ast_list(P), open, close);
  t->grouped = true;
  for (int g = 0; g < groups->n; g++) {
    AstList *l = groups->v[g];
    Tok *k = l->v[0];
    Str *dst;
    int *n;
    if (str_eqc(k->text, "V")) { dst = t->axes; n = &t->naxes; }
    else if (str_eqc(k->text, "R")) { dst = t->red; n = &t->nred; }
    else if (str_eqc(k->text, "U") || str_eqc(k->text, "U_sum") || str_eqc(k->text, "U_max") ||
             str_eqc(k->text, "U_min")) {
      dst = t->unred;
      n = &t->nunred;
      t->ukind = str_eqc(k->text, "U_max") ? UK_MAX : str_eqc(k->text, "U_min") ? UK_MIN : UK_SUM;
    } else {
      if (!t->bad_group.len) t->bad_group = k->sp;
      continue;
    }
    for (int i = 1; i < l->n && *n < SHM_MAXAXES; i++) dst[(*n)++] = ((Tok *)l->v[i])->text;
  }
  return t;
}

AstType *ast_type_vma(Parser *P, AstType *t, AstList *axes, Tok open, Tok close) {
  (void)P;
  t->has_vma = true;
  t->axes_sp = span_join(open.sp, close.sp);
  t->sp = span_join(t->sp, close.sp);
  for (int i = 0; i < axes->n && t->naxes < SHM_MAXAXES; i++) {
    Tok *a = axes->v[i];
    t->axes[t->naxes++] = a->text;
  }
  return t;
}

AstType *ast_type_bare(Parser *P, Tok word) {
  AstType *t = NEW(P, AstType);
  t->sp = word.sp;
  t->dtype = word.text;
  t->bare = true;
  return t;
}

AstType *ast_type_future(Parser *P, AstType *t, Tok open, Tok close) {
  (void)P;
  t->future = true;
  t->sp = span_join(open.sp, close.sp);
  return t;
}

/* One `name:size` of a named shape: a pair of tokens. */
AstList *ast_named_dim(Parser *P, AstList *dims, Tok name, Tok size) {
  ast_dim(P, dims, name);
  return ast_dim(P, dims, size);
}

AstType *ast_type_named(Parser *P, AstType *t, AstList *dims, Tok open, Tok close) {
  (void)P;
  t->has_named = true;
  t->named_sp = span_join(open.sp, close.sp);
  t->sp = span_join(t->sp, close.sp);
  for (int i = 0; i + 1 < dims->n; i += 2) {
    if (t->nnamed == SHM_MAXAXES) { t->rank_overflow = true; break; }
    Tok *a = dims->v[i], *s = dims->v[i + 1];
    t->named[t->nnamed] = a->text;
    t->named_size[t->nnamed++] = s->ival;
  }
  return t;
}

AstBinder *ast_binder(Parser *P, Tok name, AstType *type) {
  AstBinder *b = NEW(P, AstBinder);
  b->name = name.text;
  b->sp = name.sp;
  b->type = type;
  return b;
}

AstLit *ast_lit(Parser *P, Tok t, LitKind k, AstType *type) {
  AstLit *l = NEW(P, AstLit);
  l->k = k;
  l->sp = type ? span_join(t.sp, type->sp) : t.sp;
  l->i = k == LIT_BOOL ? (t.type == TK_TRUE) : t.ival;
  l->f = k == LIT_FLOAT || k == LIT_COMPLEX ? t.fval : (double)l->i;
  l->im = k == LIT_COMPLEX ? t.fval2 : 0;
  l->type = type;
  return l;
}

/* An argument that is a token's text: a name or a string. */
static AstArg *arg_text(Parser *P, ArgKind k, Tok t) {
  AstArg *a = NEW(P, AstArg);
  a->k = k;
  a->sp = t.sp;
  a->name = t.text;
  return a;
}

AstArg *ast_arg_name(Parser *P, Tok t) { return arg_text(P, ARG_NAME, t); }

AstArg *ast_arg_lit(Parser *P, AstLit *l) {
  AstArg *a = NEW(P, AstArg);
  a->k = ARG_LIT;
  a->sp = l->sp;
  a->lit = *l;
  return a;
}

AstArg *ast_arg_str(Parser *P, Tok t) { return arg_text(P, ARG_STR, t); }

AstALit *ast_alit_leaf(Parser *P, AstLit *l) {
  AstALit *a = NEW(P, AstALit);
  a->sp = l->sp;
  a->lit = *l;
  return a;
}

AstALit *ast_alit_list(Parser *P, Tok open, AstList *items, Tok close) {
  AstALit *a = NEW(P, AstALit);
  a->is_list = true;
  a->sp = span_join(open.sp, close.sp);
  TAKE(P, items, a->items, a->n);
  return a;
}

/* ---- statements ---------------------------------------------------------------- */

static AstStmt *stmt(Parser *P, StmtKind k, Span sp) {
  AstStmt *s = NEW(P, AstStmt);
  s->k = k;
  s->sp = sp;
  s->line = line_of(sp);
  return s;
}

static Span list_span(AstList *l, Span dflt) {
  Span sp = dflt;
  for (int i = 0; l && i < l->n; i++) sp = span_join(sp, ((AstArg *)l->v[i])->sp);
  return sp;
}

AstStmt *ast_eqn(Parser *P, AstList *outs, Tok callee, AstList *params, bool has_params, AstList *args) {
  Span sp = span_join(outs->n ? ((AstBinder *)outs->v[0])->sp : callee.sp, list_span(args, callee.sp));
  AstStmt *s = stmt(P, ST_EQN, sp);
  TAKE(P, outs, s->outs, s->nouts);
  s->callee = callee.text;
  s->callee_sp = callee.sp;
  TAKE(P, params, s->params, s->nparams);
  s->has_params = has_params;
  TAKE(P, args, s->args, s->nargs);
  return s;
}

AstStmt *ast_lit_stmt(Parser *P, AstList *outs, AstALit *lit) {
  AstBinder *first = outs->v[0];
  AstStmt *s = stmt(P, ST_LIT, span_join(first->sp, lit->sp));
  TAKE(P, outs, s->outs, s->nouts);
  s->alit = lit;
  return s;
}

AstStmt *ast_print(Parser *P, Tok kw, AstList *items) {
  AstStmt *s = stmt(P, ST_PRINT, list_span(items, kw.sp));
  TAKE(P, items, s->args, s->nargs);
  return s;
}

AstStmt *ast_print_params(Parser *P, AstStmt *s, AstList *params) {
  (void)P;
  TAKE(P, params, s->params, s->nparams);
  s->has_params = true;
  return s;
}

AstStmt *ast_visualize(Parser *P, Tok kw, AstList *params, Tok name) {
  AstStmt *s = stmt(P, ST_VISUALIZE, span_join(kw.sp, name.sp));
  s->name = name.text;
  s->name_sp = name.sp;
  TAKE(P, params, s->params, s->nparams);
  s->has_params = params != NULL;
  return s;
}

AstStmt *ast_show(Parser *P, Tok kw, Tok name) {
  AstStmt *s = stmt(P, ST_SHOW, span_join(kw.sp, name.sp));
  s->name = name.text;
  s->name_sp = name.sp;
  return s;
}

AstStmt *ast_import(Parser *P, Tok kw, Tok path) {
  AstStmt *s = stmt(P, ST_IMPORT, span_join(kw.sp, path.sp));
  s->name = path.text;
  s->name_sp = path.sp;
  return s;
}

AstStmt *ast_load(Parser *P, AstList *outs, Tok kw, Tok path, const Tok *key) {
  AstBinder *first = outs->v[0];
  AstStmt *s = stmt(P, ST_LOAD, span_join(first->sp, key ? key->sp : path.sp));
  TAKE(P, outs, s->outs, s->nouts);
  s->callee_sp = kw.sp;
  s->name = path.text;
  s->name_sp = path.sp;
  if (key) {
    s->key = key->text;
    s->has_key = true;
  }
  return s;
}

AstStmt *ast_save(Parser *P, Tok kw, Tok path, AstArg *value) {
  AstStmt *s = stmt(P, ST_SAVE, span_join(kw.sp, value->sp));
  s->callee_sp = kw.sp;
  s->name = path.text;
  s->name_sp = path.sp;
  s->args = arena_alloc(P->arena, sizeof(AstArg *));
  s->args[0] = value;
  s->nargs = 1;
  return s;
}

AstStmt *ast_mesh(Parser *P, Tok kw, Tok name, AstList *axes, Tok close) {
  AstStmt *s = stmt(P, ST_MESH, span_join(kw.sp, close.sp));
  s->name = name.text;
  s->name_sp = name.sp;
  TAKE(P, axes, s->axes, s->naxes);
  return s;
}

AstMeshAxis *ast_mesh_axis(Parser *P, Tok name, Tok size) {
  AstMeshAxis *a = NEW(P, AstMeshAxis);
  a->name = name.text;
  a->sp = name.sp;
  a->size = size.ival;
  a->size_sp = size.sp;
  return a;
}

AstStmt *ast_return(Parser *P, Tok kw, AstList *vals) {
  AstStmt *s = stmt(P, ST_RETURN, list_span(vals, kw.sp));
  TAKE(P, vals, s->args, s->nargs);
  return s;
}

AstStmt *ast_def(Parser *P, Tok kw, AstFunc *fn) {
  AstStmt *s = stmt(P, ST_DEF, span_join(kw.sp, fn->sp));
  fn->whole = span_join(kw.sp, fn->whole);
  s->fn = fn;
  return s;
}

/* The line holding offset off of a file: its start and length. */
/* The line holding byte off of a file (without its newline).  The last
   line found is remembered: errors and skipped tokens ask for the same
   line again and again, and a line of a megabyte must not be scanned once
   per token on it. */
static const char *line_at(Parser *P, int file, uint32_t off, int *len) {
  size_t n;
  const char *text = diag_file_text(file, &n);
  if (!text || off > n) { *len = 0; return ""; }
  if (P->line_file == file && off >= P->line_off && off <= P->line_off + P->line_len) {
    *len = (int)P->line_len;
    return text + P->line_off;
  }
  const char *s = text + off, *e = text + off;
  while (s > text && s[-1] != '\n') s--;
  while (e < text + n && *e != '\n') e++;
  P->line_file = file;
  P->line_off = (uint32_t)(s - text);
  P->line_len = (uint32_t)(e - s);
  *len = (int)(e - s);
  return s;
}

bool ast_body_broken(AstStmt *const *body, int n) {
  for (int i = 0; i < n; i++)
    if (body[i]->k == ST_ERROR) return true;
  return false;
}

AstStmt *ast_error_stmt(Parser *P) {
  AstStmt *s = stmt(P, ST_ERROR, P->last_error);
  if (P->last_error.file < 0) return s;
  /* the names the broken statement binds, bound to nothing by the checker */
  int len;
  const char *line = line_at(P, P->last_error.file, P->last_error.off, &len);
  Str names[8];
  int n = pyhint_binders(line, len, names, 8);
  if (!n) return s;
  s->outs = arena_alloc(P->arena, sizeof(AstBinder *) * (size_t)n);
  for (int i = 0; i < n; i++) {
    AstBinder *b = NEW(P, AstBinder);
    b->name = names[i];
    b->sp = (Span){P->last_error.file, (uint32_t)(names[i].p - diag_file_text(P->last_error.file, NULL)),
                   (uint32_t)names[i].n};
    s->outs[i] = b;
  }
  s->nouts = n;
  return s;
}

/* ---- functions -------------------------------------------------------------------- */

static int end_line(Tok close) { return line_of(close.sp); }

AstFunc *ast_func_readable(Parser *P, Tok name, AstList *params, AstList *body, Tok close) {
  AstFunc *f = NEW(P, AstFunc);
  f->form = FN_READABLE;
  f->name = name.text;
  f->sp = name.sp;
  f->whole = span_join(name.sp, close.sp);
  TAKE(P, params, f->params, f->nparams);
  TAKE(P, body, f->body, f->nbody);
  f->end_line = end_line(close);
  return f;
}

AstFunc *ast_lambda(Parser *P, Tok open, AstList *consts, AstList *params, AstList *body, AstList *outs, Tok close) {
  AstFunc *f = NEW(P, AstFunc);
  f->form = FN_LAMBDA;
  f->sp = open.sp;
  f->whole = span_join(open.sp, close.sp);
  TAKE(P, consts, f->consts, f->nconsts);
  TAKE(P, params, f->params, f->nparams);
  TAKE(P, body, f->body, f->nbody);
  TAKE(P, outs, f->outs, f->nouts);
  f->outs_sp = list_span(outs, close.sp);
  f->end_line = end_line(close);
  return f;
}

AstFunc *ast_func_named(Parser *P, Tok name, AstFunc *lambda) {
  (void)P;
  lambda->name = name.text;
  lambda->sp = name.sp;
  lambda->whole = span_join(name.sp, lambda->whole);
  return lambda;
}

AstFunc *ast_lets(Parser *P, AstList *lets, AstFunc *main) {
  (void)P;
  TAKE(P, lets, main->lets, main->nlets);
  if (main->nlets) main->whole = span_join(main->lets[0]->whole, main->whole);
  return main;
}

AstFunc *ast_func_transpose(Parser *P, Tok name, Tok prim, AstList *params, Tok target) {
  AstFunc *f = NEW(P, AstFunc);
  f->form = FN_TRANSPOSE;
  f->name = name.text;
  f->sp = name.sp;
  f->whole = span_join(name.sp, target.sp);
  f->tprim = prim.text;
  TAKE(P, params, f->tparams, f->ntparams);
  f->target = target.text;
  f->target_sp = target.sp;
  f->end_line = end_line(target);
  return f;
}

AstFunc *ast_func_rules(Parser *P, AstFunc *f, const Tok *r1, const Tok *r2) {
  (void)P;
  const Tok *r[2] = {r1, r2};
  for (int i = 0; i < 2 && r[i]; i++) {
    f->rules[i] = r[i]->text;
    f->rules_sp[i] = r[i]->sp;
    f->nrules = i + 1;
    f->whole = span_join(f->whole, r[i]->sp);
    f->end_line = end_line(*r[i]);
  }
  return f;
}

AstFunc *ast_func_statics(Parser *P, AstFunc *fn, AstList *names) {
  fn->nstatics = names->n;
  fn->statics = arena_alloc(P->arena, sizeof(Str) * (size_t)names->n);
  fn->statics_sp = arena_alloc(P->arena, sizeof(Span) * (size_t)names->n);
  for (int i = 0; i < names->n; i++) {
    Tok *t = names->v[i];
    fn->statics[i] = t->text;
    fn->statics_sp[i] = t->sp;
  }
  return fn;
}

AstFunc *ast_decorate(Parser *P, Tok at, Tok name, AstList *params, AstFunc *fn) {
  (void)P;
  fn->has_deco = true;
  fn->deco = name.text;
  fn->deco_sp = span_join(at.sp, name.sp);
  TAKE(P, params, fn->deco_params, fn->ndeco_params);
  return fn;
}

/* ---- syntax errors ------------------------------------------------------------------ */

void ast_stack_overflow(Parser *P) {
  P->nerrors++;
  P->last_error = P->at;
  diag_error(P->at, "statement nested too deeply for the parser");
}

/* After `def f(a):`, skip the Python body: the lines more indented than it. */
static void skip_python_body(Parser *P, const char *line, int len) {
  int indent = 0;
  while (indent < len && (line[indent] == ' ' || line[indent] == '\t')) indent++;
  P->skip_indent = indent;
  P->skip_after = (uint32_t)(line + len - diag_file_text(P->file, NULL));
}

bool ast_skip_token(Parser *P, const Tok *t) {
  if (P->skip_indent < 0 || t->type == 0 || t->sp.off <= P->skip_after) return false;
  int len;
  const char *line = line_at(P, t->sp.file, t->sp.off, &len);
  int indent = 0;
  while (indent < len && (line[indent] == ' ' || line[indent] == '\t')) indent++;
  if (indent < len && indent > P->skip_indent) return true;
  if (indent == len) return true;            /* a blank line's newline */
  P->skip_indent = -1;
  return false;
}

void ast_syntax_error(Parser *P, Tok t) {
  P->nerrors++;
  Span sp = t.sp;
  P->last_error = sp;
  int llen;
  const char *line = line_at(P, sp.file, sp.off, &llen);
  char hint[400];
  pyhint_syntax(line, llen, 0, hint, sizeof hint);
  if (pyhint_python_block(line, llen)) skip_python_body(P, line, llen);
  if (t.type == TK_ILLEGAL) {
    const char *m = P->lex_error ? P->lex_error : "bad token";
    if (!strcmp(m, "unexpected character")) {
      /* the whole character when it is UTF-8, escaped when it does not print */
      char show[9];
      int w;
      esc_char(t.text.p, (size_t)t.text.n, 0, show, &w);
      diag_error(sp, "unexpected character '%s'%s", show, hint);
    }
    else
      diag_error(sp, "%s", m);
  } else if (t.type == TK_NL || t.type == 0) {
    bool eof = t.type == 0 || sp.len == 0;   /* the lexer's last NL is empty */
    if (sp.len == 0 && sp.off > 0) { sp.off--; sp.len = 1; }
    diag_error(sp, "syntax error: unexpected end of %s%s", eof ? "file" : "line", hint);
  } else if (t.type == TK_STRING) {  /* quote the source, not the decoded text */
    diag_error(sp, "syntax error: unexpected %.*s%s", (int)sp.len, diag_file_text(sp.file, NULL) + sp.off, hint);
  } else {
    diag_error(sp, "syntax error: unexpected '%.*s'%s", t.text.n, t.text.p, hint);
  }
}
