/*
** check_query.c — the REPL's and the debugger's questions to the checker.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "check_int.h"
#include "suggest.h"
#include "diag.h"
#include "err.h"
#include "show.h"

#include "parse.h"
#include "pyhint.h"

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
  if (prim >= 0 && prim_table[prim].nout == 0) return s->nargs;
  if (prim >= 0 && prim_table[prim].nout == NOUT_SIZES) return prim_nout_params(prim, s->nargs, s->params, s->nparams);
  if (prim >= 0 && prim_table[prim].nout == NOUT_HALF) return s->nargs / 2 < 1 ? 1 : s->nargs / 2;
  if (prim < 0 || prim_table[prim].nout > 0) return 1;
  int n = -1;
  for (int i = 0; i < s->nparams; i++) {
    const char *k = NULL;
    if (prim == P_COND && str_eqc(s->params[i]->key, "branches")) k = "branches";
    if (prim == P_SHARD_MAP && str_eqc(s->params[i]->key, "f")) k = "f";
    if (k) n = pval_func_nouts(cx, s->params[i]->v);
  }
  if (prim == P_FORI_LOOP || prim == P_OPTIMIZATION_BARRIER || prim == P_SHARD_ALIKE) n = s->nargs;
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
    int nb = 0;
    for (Binding *b = C->top; b; b = b->next) nb += b->k != B_VAR;
    Binding **keep = NEWN(C, Binding *, nb ? nb : 1);
    nb = 0;
    for (Binding *b = C->top; b; b = b->next)
      if (b->k != B_VAR) keep[nb++] = b;
    cx.scope = NULL;
    for (int i = nb - 1; i >= 0; i--) {       /* oldest first: the newest ends up in front */
      Binding *c = check_bind(C, cx.scope, keep[i]->k, keep[i]->name);
      c->var = keep[i]->var;
      c->fn = keep[i]->fn;
      c->mesh = keep[i]->mesh;
      c->pv = keep[i]->pv;
      cx.scope = c;
    }
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

/* A mesh's axes, or a function not yet checked: its parameters. */
static bool show_other(Checker *C, Str name, Buf *out) {
  Binding *m = check_lookup(C->top, B_MESH, name);
  if (m) {
    buf_printf(out, "mesh %.*s = {", name.n, name.p);
    for (int k = 0; k < m->mesh->naxes; k++)
      buf_printf(out, "%s%.*s: %lld", k ? ", " : "", m->mesh->axis[k].n, m->mesh->axis[k].p, (long long)m->mesh->size[k]);
    buf_printf(out, "}  (%lld devices)\n", (long long)m->mesh->ndev);
    return true;
  }
  Binding *b = check_lookup(C->top, B_FUNC, name);
  if (!b || !b->fn->ast) return false;
  const AstFunc *af = b->fn->ast;
  buf_printf(out, "def %.*s(", name.n, name.p);
  for (int k = 0; k < af->nparams; k++) buf_printf(out, "%s%.*s", k ? ", " : "", af->params[k]->name.n, af->params[k]->name.p);
  buf_puts(out, ")  (not called yet: its types come from its first call, then `show` prints it)\n");
  return true;
}

bool check_show_func(Checker *C, Str name, Buf *out) {
  Binding *b = check_lookup(C->top, B_FUNC, name);
  if (!b || !b->fn->latest) return show_other(C, name, out);
  char nm[256];
  snprintf(nm, sizeof nm, "%.*s", name.n, name.p);
  show_func(out, b->fn->latest, nm);
  return true;
}

/* ---- names that name nothing ---- */

/* " (it is defined later, at line 7, ...)" when a top-level statement
   after the one being checked binds name, else NULL. */
static const char *later_def(Checker *C, BindKind want, Str name, char *out, size_t n) {
  for (int i = C->later ? C->later_from : 0; C->later && i < C->later->n; i++) {
    AstStmt *s = C->later->v[i];
    Span at = span_none();
    if (want == B_FUNC && s->k == ST_DEF && s->fn && str_eq(s->fn->name, name)) at = s->fn->sp;
    for (int k = 0; want == B_VAR && s->k != ST_DEF && k < s->nouts; k++)
      if (str_eq(s->outs[k]->name, name)) at = s->outs[k]->sp;
    if (at.file < 0) continue;
    int line, col;
    diag_linecol(at.file, at.off, &line, &col);
    snprintf(out, n, " (it is defined later, at line %d: a name can be used only after its definition)", line);
    return out;
  }
  return NULL;
}

const char *check_callee_hint(Checker *C, Binding *scope, Str name, char *out, size_t n) {
  if (later_def(C, B_FUNC, name, out, n)) return out;
  for (int i = 0; i < name.n; i++)       /* x.T, x.sum: Python's attributes of a value */
    if (name.p[i] == '.') {
      Binding *b = check_lookup(scope, B_VAR, (Str){name.p, i});
      if (b && b->var && *pyhint_attr(name, b->var->t.rank, out, n)) return out;
      break;
    }
  Suggest sg;
  sug_begin(&sg, name);
  for (int p = 0; p < P_COUNT; p++) {
    sug_offer(&sg, prim_table[p].name, -1);
    sug_offer_words(&sg, prim_table[p].alias);
  }
  for (Binding *b = scope; b; b = b->next)
    if (b->k == B_FUNC) sug_offer(&sg, b->name.p, b->name.n);
  return sug_text(&sg, out, n);
}

/* The closest name of kind `want` in scope to name, as a hint. */
static const char *scope_hint(Binding *scope, BindKind want, Str name, char *out, size_t n) {
  Suggest sg;
  sug_begin(&sg, name);
  for (Binding *b = scope; b; b = b->next)
    if (b->k == want) sug_offer(&sg, b->name.p, b->name.n);
  return sug_text(&sg, out, n);
}

const char *check_unbound(Checker *C, Binding *scope, BindKind want, Str name) {
  static _Thread_local char msg[256];      /* (per thread: two states may check at once) */
  char hint[128];
  if (want == B_VAR && check_lookup(scope, B_FUNC, name)) return "'%.*s' is a function, not a value";
  if (want == B_FUNC && check_lookup(scope, B_VAR, name))
    return "'%.*s' is a value; show prints functions (print prints values)";
  if (!later_def(C, want, name, hint, sizeof hint)) scope_hint(scope, want, name, hint, sizeof hint);
  snprintf(msg, sizeof msg, "unknown %s '%%.*s'%s", want == B_VAR ? "variable" : "function", hint);
  return msg;
}

IrVar *check_new_var(Checker *C, const char *name, const Type *t, bool bind) {
  Ctx cx;
  check_ctx_init(&cx, C, C->main, C->top, NULL, 0, -1);
  const char *nm = arena_strndup(&C->prog.arena, name, strlen(name));
  IrVar *v = emit_var(EM(&cx), str_c(nm), *t, span_none());
  if (bind) {
    C->top = check_bind(C, C->top, B_VAR, str_c(nm));
    C->top->var = v;
  }
  return v;
}
