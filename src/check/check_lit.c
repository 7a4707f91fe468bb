/*
** check_lit.c — statements that bind constants: array literals
** (`x = [[1.0, 2.0], [3.0, 4.0]]`: their shape, dtype and values), load
** of NumPy files, and save.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "npy.h"

/* An array released when a checked statement unwinds. */
static void array_release(void *a) { arr_unref(a); }

/* ---- array literals ------------------------------------------------------------------ */

typedef struct LitShape {
  int rank;
  int64_t shape[SHM_MAXRANK];
  bool any_float, any_bool, any_int;
  int64_t count;
  bool ok;
} LitShape;

static void lit_shape(const AstALit *a, int depth, LitShape *ls) {
  if (!ls->ok) return;
  if (!a->is_list) {
    if (depth != ls->rank && ls->rank >= 0) {
      diag_error(a->sp, "array literal is ragged: a number stands where a list is expected");
      ls->ok = false;
      return;
    }
    ls->rank = depth;
    if (a->lit.k == LIT_FLOAT) ls->any_float = true;
    else if (a->lit.k == LIT_BOOL) ls->any_bool = true;
    else ls->any_int = true;
    if (a->lit.type && depth > 0) {
      diag_error(a->lit.sp, "elements of an array literal take no type; annotate the binder instead");
      ls->ok = false;
    }
    ls->count++;
    return;
  }
  if (depth >= SHM_MAXRANK) {
    diag_error(a->sp, "array literal nested deeper than %d", SHM_MAXRANK);
    ls->ok = false;
    return;
  }
  if (ls->rank >= 0 && depth >= ls->rank) {
    diag_error(a->sp, "array literal is ragged: a list stands where a number is expected");
    ls->ok = false;
    return;
  }
  if (ls->shape[depth] < 0) ls->shape[depth] = a->n;
  else if (ls->shape[depth] != a->n) {
    diag_error(a->sp, "array literal is ragged: %d element%s where %lld are expected", a->n, a->n == 1 ? "" : "s", (long long)ls->shape[depth]);
    ls->ok = false;
    return;
  }
  if (a->n == 0) {
    if (ls->rank < 0) ls->rank = depth + 1;
    else if (ls->rank != depth + 1) {
      diag_error(a->sp, "array literal is ragged");
      ls->ok = false;
    }
  }
  for (int i = 0; i < a->n; i++) lit_shape(a->items[i], depth + 1, ls);
}

static void lit_fill(Ctx *cx, const AstALit *a, Array *arr, int64_t *pos, bool *ok) {
  if (!*ok) return;
  if (a->is_list) {
    for (int i = 0; i < a->n; i++) lit_fill(cx, a->items[i], arr, pos, ok);
    return;
  }
  Array *one;
  if (!check_lit_value(cx, &a->lit, arr->dt, &one)) { *ok = false; return; }
  memcpy((char *)arr->data + *pos * dtype_sizes[arr->dt], one->data, dtype_sizes[arr->dt]);
  arr_unref(one);
  (*pos)++;
}

/* The statement binding the constant `value` (of type t) to b, bound in
   cx's scope; the caller emits it. */
static IrStmt *const_stmt(Ctx *cx, AstStmt *s, AstBinder *b, Type t, Array *value) {
  IrStmt *st = emit_new_stmt(EM(cx), IS_CONST, s->sp);
  st->line = s->line;
  st->value = value;
  st->out = NEWN(cx->C, IrVar *, 1);
  st->nout = 1;
  IrVar *v = emit_var(EM(cx), str_eqc(b->name, "_") ? str_c("") : b->name, t, b->sp);
  st->out[0] = v;
  if (!str_eqc(b->name, "_")) {
    cx->scope = check_bind(cx->C, cx->scope, B_VAR, b->name);
    cx->scope->var = v;
  }
  return st;
}

void check_lit_stmt(Ctx *cx, AstStmt *s) {
  if (s->nouts != 1) {
    diag_error(s->outs[1]->sp, "a literal is one value; it cannot be bound to %d names", s->nouts);
    check_bind_bad(cx, s);
    return;
  }
  LitShape ls;
  memset(&ls, 0, sizeof ls);
  ls.rank = -1;
  for (int i = 0; i < SHM_MAXRANK; i++) ls.shape[i] = -1;
  ls.ok = true;
  lit_shape(s->alit, 0, &ls);
  if (!ls.ok) { check_bind_bad(cx, s); return; }
  if (ls.any_bool && (ls.any_float || ls.any_int)) {
    diag_error(s->alit->sp, "array literal mixes booleans and numbers");
    check_bind_bad(cx, s);
    return;
  }
  Type t;
  memset(&t, 0, sizeof t);
  t.rank = (uint8_t)ls.rank;
  for (int i = 0; i < ls.rank; i++) t.shape[i] = ls.shape[i] < 0 ? 0 : ls.shape[i];
  t.dt = ls.any_bool ? DT_BOOL : ls.any_float ? DT_F32 : DT_I32;
  AstType *lty = s->alit->is_list ? NULL : s->alit->lit.type;   /* `a = 1.0:f64[]` */
  if (lty) {
    Type lt;
    bool lv;
    if (!check_resolve_type(cx, lty, &lt, &lv)) { check_bind_bad(cx, s); return; }
    if (lt.rank != 0) {
      diag_error(lty->sp, "a literal must have a scalar type, not %s", check_type_text(cx, &lt));
      check_bind_bad(cx, s);
      return;
    }
    t.dt = lt.dt;
  }
  AstBinder *b = s->outs[0];
  if (b->type) {
    Type an;
    bool has_vma;
    if (!check_resolve_type(cx, b->type, &an, &has_vma)) { check_bind_bad(cx, s); return; }
    if (!type_same_shape(&an, &t)) {
      diag_error(b->type->sp, "%.*s is annotated %s but the literal has shape %s", b->name.n, b->name.p,
                 check_type_text(cx, &an), check_type_text(cx, &t));
      check_bind_bad(cx, s);
      return;
    }
    if (has_vma && an.vma) {
      diag_error(b->type->axes_sp, "a literal is invariant: it cannot have the variance %s", check_vma_text(cx, an.vma));
      check_bind_bad(cx, s);
      return;
    }
    if (lty && an.dt != t.dt) {
      diag_error(b->type->sp, "%.*s is annotated %s but the literal is %s", b->name.n, b->name.p,
                 check_type_text(cx, &an), check_type_text(cx, &t));
      check_bind_bad(cx, s);
      return;
    }
    t.dt = an.dt;
  }
  Array *arr = arr_new((DType)t.dt, t.rank, t.shape);
  int64_t pos = 0;
  bool ok = true;
  err_defer(array_release, arr);
  lit_fill(cx, s->alit, arr, &pos, &ok);
  err_undefer(arr);
  if (!ok) { arr_unref(arr); check_bind_bad(cx, s); return; }
  prog_keep(&cx->C->prog, arr);
  emit_stmt(EM(cx), const_stmt(cx, s, b, t, arr));
}

/* ---- load and save -------------------------------------------------------------------- */

/* A path written in file `file`, relative to that file's folder (as
   written when absolute), into out. */
static void script_relative(int file, Str p, char *out, size_t n) {
  const char *from = diag_file_name(file);
  const char *slash = strrchr(from, '/');
  if (p.n && p.p[0] == '/') snprintf(out, n, "%.*s", p.n, p.p);
  else snprintf(out, n, "%.*s%.*s", slash ? (int)(slash - from + 1) : 0, from, p.n, p.p);
}

/* x = load "file.npy" (or "batch.npz" "key"): the array is read when the
   statement is checked (its type is the file's), a constant of the
   program from then on. */
void check_load(Ctx *cx, AstStmt *s) {
  if (s->nouts != 1) {
    diag_error(s->outs[1]->sp, "load gives one array; it cannot be bound to %d names", s->nouts);
    check_bind_bad(cx, s);
    return;
  }
  char path[4096], key[512], err[NPY_ERRLEN];
  script_relative(s->sp.file, s->name, path, sizeof path);
  snprintf(key, sizeof key, "%.*s", s->key.n, s->key.p);
  Array *a = npy_load(path, s->has_key ? key : NULL, err);
  if (!a) {
    diag_error(s->has_key ? span_join(s->name_sp, s->sp) : s->name_sp, "%s", err);
    check_bind_bad(cx, s);
    return;
  }
  prog_keep(&cx->C->prog, a);
  Type t;
  memset(&t, 0, sizeof t);
  t.dt = a->dt;
  t.rank = a->rank;
  memcpy(t.shape, a->shape, sizeof(int64_t) * a->rank);
  AstBinder *b = s->outs[0];
  if (!check_annotation(cx, b, &t, "the file")) { check_bind_bad(cx, s); return; }
  IrStmt *st = const_stmt(cx, s, b, t, a);
  st->loaded = true;
  st->load_path = s->name;
  st->load_key = s->key;
  st->load_has_key = s->has_key;
  emit_stmt(EM(cx), st);
}

/* save "file.npy" x: written when the statement runs. */
void check_save(Ctx *cx, AstStmt *s) {
  if (cx->mesh) {
    const char *kind = cx->mesh->named ? "an xmap" : cx->mesh->pmap ? "a pmap" : "a shard_map";
    diag_error(s->callee_sp, "save inside %s body: save the %s's result instead", kind, kind + (kind[1] == 'n' ? 3 : 2));
    return;
  }
  if (s->name.n < 4 || memcmp(s->name.p + s->name.n - 4, ".npy", 4)) {
    diag_error(s->name_sp, "save writes NumPy's .npy files: the file name must end in .npy");
    return;
  }
  IrStmt *st = emit_new_stmt(EM(cx), IS_SAVE, s->sp);
  st->line = s->line;
  st->in = NEWN(cx->C, IrAtom, 1);
  st->nin = 1;
  if (!check_resolve_arg(cx, s->args[0], &st->in[0]) || st->in[0].t.bad) return;
  if (dtype_is_key((DType)st->in[0].t.dt)) {
    diag_error(s->args[0]->sp, "save cannot write keys (%s): NumPy has no key dtype; save their data, "
               "random_unwrap, as jax.random.key_data gives it", dtype_names[st->in[0].t.dt]);
    return;
  }
  if (!st->in[0].var && !st->in[0].lit) {
    if (!check_lit_value(cx, &s->args[0]->lit, st->in[0].t.dt, &st->in[0].lit)) return;
    prog_keep(&cx->C->prog, st->in[0].lit);
    st->in[0].t.weak = false;
  }
  char path[4096];
  script_relative(s->sp.file, s->name, path, sizeof path);
  st->path = arena_strndup(&cx->C->prog.arena, path, strlen(path));
  st->load_path = s->name;
  emit_stmt(EM(cx), st);
}
