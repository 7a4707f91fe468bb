/*
** check_query.c — the REPL's and the debugger's questions to the checker.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "show.h"

#include "parse.h"

/* ---- the REPL's and the debugger's questions ---------------------------------------------
** Appended for repl.c and debug.c: compiling one expression against the
** variables visible where the debugger stopped, and listing what the
** top-level scope holds.
*/

/* The number of results a function's syntax promises (-1: unknown). */
static int ast_func_nouts(const AstFunc *af) {
  if (af->form == FN_LAMBDA) return af->nouts;
  if (af->form != FN_READABLE) return -1;
  for (int i = 0; i < af->nbody; i++)
    if (af->body[i]->k == ST_RETURN) return af->body[i]->nargs;
  return 0;
}

/* The number of results a function parameter of a special equation gives. */
static int pval_func_nouts(Ctx *cx, PVal *v) {
  v = pv_unparen(v);
  if (v && (v->k == PV_TUPLE || v->k == PV_LIST) && v->n) v = pv_unparen(v->items[0]);
  if (!v) return -1;
  if (v->k == PV_FUNC && v->fn) return ast_func_nouts(v->fn);
  if (v->k == PV_NAME) {
    Binding *b = check_lookup(cx->scope, B_FUNC, v->s);
    if (b) return ast_func_nouts(b->fn->ast);
  }
  return -1;
}

static int64_t param_int(AstStmt *s, const char *key) {
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, key)) {
      PVal *v = pv_unparen(s->params[i]->v);
      if (v && v->k == PV_INT) return v->i;
    }
  return 0;
}

/* How many results the right-hand side of `s` gives (1 when unsure: the
   checker then says what it found). */
static int expr_nouts(Ctx *cx, AstStmt *s) {
  if (s->k != ST_EQN) return 1;
  Binding *b = check_lookup(cx->scope, B_FUNC, s->callee);
  if (b) {
    IrAtom *in = NEWN(cx->C, IrAtom, s->nargs);
    bool silent;
    if (!check_resolve_args(cx, s, in, &silent)) return -1;
    Type *at = NEWN(cx->C, Type, s->nargs);
    for (int k = 0; k < s->nargs; k++) {
      at[k] = in[k].t;
      at[k].weak = false;
    }
    IrFunc *f = stat_instantiate_call(cx, s, b->fn, at, s->nargs);
    return f ? f->nouts : -1;
  }
  int prim = prim_lookup(s->callee);
  if (prim < 0 || prim_table[prim].nout > 0) return 1;
  int n = -1;
  for (int i = 0; i < s->nparams; i++) {
    const char *k = NULL;
    if (prim == P_COND && str_eqc(s->params[i]->key, "branches")) k = "branches";
    if (prim == P_SHARD_MAP && str_eqc(s->params[i]->key, "f")) k = "f";
    if (k) n = pval_func_nouts(cx, s->params[i]->v);
  }
  if (prim == P_FORI_LOOP) n = s->nargs;
  if (prim == P_WHILE) n = s->nargs - (int)param_int(s, "cond_nconsts") - (int)param_int(s, "body_nconsts");
  return n < 1 ? 1 : n;
}

IrFunc *check_expr(Checker *C, const char *source, const char *text, IrFunc *parent, IrVar *const *vars, int nvars,
                   uint32_t ctrl) {
  Buf src = {0};
  err_defer(buf_release, &src);
  buf_puts(&src, "__v = ");
  buf_puts(&src, text);
  buf_putc(&src, '\n');
  int file = parse_load_text(source, buf_cstr(&src), src.n);
  diag_hide_prefix(file, 6);     /* "__v = " */
  err_undefer(&src);
  buf_free(&src);
  int errs = diag_count();
  AstList *stmts = parse_file(&C->prog.arena, file);
  if (diag_count() > errs) return NULL;
  AstStmt *s = stmts->n == 1 ? stmts->v[0] : NULL;
  if (!s || (s->k != ST_EQN && s->k != ST_LIT) || s->nouts != 1) {
    diag_error(s ? s->sp : span_none(), "expected an expression: a name, a literal, or `callee[params] args`");
    return NULL;
  }
  IrFunc *f = NEW(C, IrFunc);
  f->name = "<expression>";
  f->sp = span_none();
  f->parent = parent;
  f->mesh = parent ? parent->mesh : NULL;
  Ctx cx;
  check_ctx_init(&cx, C, f, NULL, f->mesh, ctrl, file);
  if (nvars < 0) {
    cx.scope = C->top;
  } else {
    /* the functions and meshes of the top-level scope, in their order,
       then the visible variables (later ones shadow earlier ones) */
    Binding *head = NULL, **tail = &head;
    for (Binding *b = C->top; b; b = b->next) {
      if (b->k == B_VAR) continue;
      Binding *c = NEW(C, Binding);
      *c = *b;
      c->next = NULL;
      *tail = c;
      tail = &c->next;
    }
    cx.scope = head;
    for (int i = 0; i < nvars; i++) {
      if (!vars[i]->name.n) continue;
      cx.scope = check_bind(C, cx.scope, B_VAR, vars[i]->name);
      cx.scope->var = vars[i];
    }
  }
  if (s->k == ST_EQN && !s->has_params && !s->nargs && !check_lookup(cx.scope, B_VAR, s->callee) &&
      !check_lookup(cx.scope, B_FUNC, s->callee) && prim_lookup(s->callee) < 0) {
    diag_error(s->callee_sp, "'%.*s' is not defined here", s->callee.n, s->callee.p);
    return NULL;
  }
  /* reading outer variables must not change what `show` prints for them */
  int saved[64], nsaved = 0;
  for (IrFunc *p = parent; p && nsaved < 64; p = p->parent) saved[nsaved++] = p->ncaptured;
  int n = expr_nouts(&cx, s);
  if (n > 1) {
    AstBinder **outs = NEWN(C, AstBinder *, n);
    for (int i = 0; i < n; i++) {
      outs[i] = NEW(C, AstBinder);
      *outs[i] = *s->outs[0];
      char nm[32];
      snprintf(nm, sizeof nm, "__v%d", i);
      outs[i]->name = str_c(arena_strndup(&C->prog.arena, nm, strlen(nm)));
    }
    s->outs = outs;
    s->nouts = n;
  }
  if (n > 0) check_stmt(&cx, s);
  int k = 0;
  for (IrFunc *p = parent; p && k < nsaved; p = p->parent) p->ncaptured = saved[k++];
  if (diag_count() > errs || n < 1) {
    if (diag_count() == errs) diag_error(s->sp, "the expression has no value");
    return NULL;
  }
  f->outs = NEWN(C, IrAtom, s->nouts);
  f->nouts = s->nouts;
  for (int i = 0; i < s->nouts; i++) {
    Binding *b = check_lookup(cx.scope, B_VAR, s->outs[i]->name);
    if (!b || b->var->t.bad) return NULL;
    f->outs[i].var = b->var;
    f->outs[i].t = b->var->t;
    f->outs[i].sp = s->sp;
  }
  return f;
}

int check_list_names(Checker *C, CheckName *out, int max) {
  int n = 0;
  for (Binding *b = C->top; b && n < max; b = b->next) {
    bool dup = false;
    for (Binding *c = C->top; c != b && !dup; c = c->next)
      if (c->k == b->k && str_eq(c->name, b->name)) dup = true;
    if (b->k != B_MESH)
      for (Binding *c = C->top; c != b && !dup; c = c->next)
        if (c->k != B_MESH && str_eq(c->name, b->name)) dup = true;
    if (dup) continue;
    CheckName *e = &out[n++];
    memset(e, 0, sizeof *e);
    e->name = b->name;
    if (b->k == B_VAR) {
      e->kind = CN_VAR;
      e->var = b->var;
    } else if (b->k == B_MESH) {
      e->kind = CN_MESH;
      e->mesh = b->mesh;
    } else {
      FuncDef *fd = b->fn;
      e->kind = CN_FUNC;
      e->fn = fd->latest;
      e->ast = fd->ast;
      if (fd->latest && fd->latest->is_shard_map_wrapper && fd->latest->nbody) {
        IrStmt *st = fd->latest->body[0];
        if (st->prim == P_SHARD_MAP && st->at && st->at->ext) e->mesh = ((ShardMap *)st->at->ext)->mesh;
      }
    }
  }
  return n;
}

bool check_show_func(Checker *C, Str name, Buf *out) {
  Binding *b = check_lookup(C->top, B_FUNC, name);
  if (!b || !b->fn->latest) return false;
  char nm[256];
  snprintf(nm, sizeof nm, "%.*s", name.n, name.p);
  show_func(out, b->fn->latest, nm);
  return true;
}
