/*
** check.c — the type checker.
**
** The checker walks top-level statements in order with a scope (a
** persistent linked list of bindings, so a `def` captures the scope it was
** defined in just by keeping a pointer).  Each statement becomes zero or
** more IR statements of the function being checked.  A failed statement
** reports one diagnostic and gives its results the `bad` type, which later
** statements accept silently so one mistake is reported once.
*/
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "check_int.h"
#include "unred.h"
#include "coll.h"
#include "prims.h"
#include "diag.h"
#include "err.h"
#include "parse.h"
#include "show.h"

/* ---- the scope index (see Binding in check_int.h) ----------------------------------- */

static size_t slot_hash(const ScopeRun *run, BindKind k, Str name) {
  uint64_t h = 1469598103934665603u ^ (uint64_t)(uintptr_t)run ^ ((uint64_t)k << 56);
  for (int i = 0; i < name.n; i++) h = (h ^ (unsigned char)name.p[i]) * 1099511628211u;
  return (size_t)(h ^ (h >> 29));
}

/* The slot of (run, k, name): found, or the empty one where it would go. */
static ScopeSlot *slot_find(Checker *C, const ScopeRun *run, BindKind k, Str name) {
  if (!C->nslots) return NULL;
  for (size_t i = slot_hash(run, k, name) & (C->nslots - 1);; i = (i + 1) & (C->nslots - 1)) {
    ScopeSlot *sl = &C->slots[i];
    if (!sl->run || (sl->run == run && sl->latest->k == k && str_eq(sl->latest->name, name))) return sl;
  }
}

static void slots_grow(Checker *C) {
  ScopeSlot *old = C->slots, *fresh = mem_calloc(sizeof(ScopeSlot) * (C->nslots ? C->nslots * 2 : 256));
  size_t n = C->nslots;
  C->nslots = n ? n * 2 : 256;
  C->slots = fresh;
  for (size_t i = 0; i < n; i++)
    if (old[i].run) *slot_find(C, old[i].run, old[i].latest->k, old[i].latest->name) = old[i];
  mem_free(old);
}

Binding *check_bind(Checker *C, Binding *next, BindKind k, Str name) {
  Binding *b = NEW(C, Binding);
  b->k = k;
  b->name = name;
  b->next = next;
  b->seq = next ? next->seq + 1 : 1;
  ScopeRun *run = next ? next->run : NULL;
  if (!run || run->head != next) {       /* a branch (or the first): a run of its own */
    run = NEW(C, ScopeRun);
    run->base = next;
    run->C = C;
  }
  run->head = b;
  b->run = run;
  if (2 * (C->usedslots + 1) > C->nslots) slots_grow(C);
  ScopeSlot *sl = slot_find(C, run, k, name);
  if (!sl->run) {
    sl->run = run;
    C->usedslots++;
  }
  b->prev_same = sl->latest;
  sl->latest = b;
  return b;
}

Binding *check_lookup(Binding *s, BindKind k, Str name) {
  while (s) {
    ScopeSlot *sl = slot_find(s->run->C, s->run, k, name);
    Binding *c = sl && sl->run ? sl->latest : NULL;
    while (c && c->seq > s->seq) c = c->prev_same;
    if (c) {
      if (k == B_FUNC) c->fn->used = true;
      return c;
    }
    s = s->run->base;
  }
  return NULL;
}

/* Mark the functions a statement names in its parameters (cond's
   branches, a loop's functions, shard_map's f) as used, when the
   statement is skipped before they are looked up (an operand failed). */
static void touch_fn_params(Ctx *cx, const AstStmt *s) {
  for (int i = 0; i < s->nparams; i++) {
    PVal *v = pv_unparen(s->params[i]->v);
    PVal *one[1] = {v};
    PVal **items = v && (v->k == PV_TUPLE || v->k == PV_LIST) ? v->items : one;
    int n = v && (v->k == PV_TUPLE || v->k == PV_LIST) ? v->n : 1;
    for (int k = 0; k < n; k++) {
      PVal *e = pv_unparen(items[k]);
      if (e && e->k == PV_NAME) check_lookup(cx->scope, B_FUNC, e->s);
    }
  }
}

/* ---- small helpers ---------------------------------------------------------- */

IrStmt *check_new_eqn(Ctx *cx, const AstStmt *s) {
  IrStmt *st = emit_new_stmt(EM(cx), IS_EQN, s->callee_sp);
  st->whole = s->sp;
  st->line = s->line;
  return st;
}

void check_call_note_s(Span call, const FuncDef *fd, const char *statics, const Type *args, int nargs,
                       const Mesh *mesh) {
  Buf b = {0};
  err_defer(buf_release, &b);
  for (int i = 0; i < nargs; i++) {
    if (i) buf_puts(&b, ", ");
    show_type(&b, &args[i], mesh);
  }
  diag_note(call, "in this call of %.*s%s%s%s with (%s)", fd->name.n, fd->name.p, statics ? "[" : "",
            statics ? statics : "", statics ? "]" : "", buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
}

void check_call_note(Span call, const FuncDef *fd, const Type *args, int nargs, const Mesh *mesh) {
  check_call_note_s(call, fd, NULL, args, nargs, mesh);
}

void check_ctx_init(Ctx *cx, Checker *C, IrFunc *fn, Binding *scope, Mesh *mesh, uint32_t ctrl, int file) {
  memset(cx, 0, sizeof *cx);
  cx->C = C;
  cx->fn = fn;
  cx->scope = scope;
  cx->mesh = mesh;
  cx->ctrl = ctrl;
  cx->file = file;
}

Instance *check_new_instance(Ctx *cx, const Type *args, int nargs) {
  Instance *inst = NEW(cx->C, Instance);
  inst->args = NEWN(cx->C, Type, nargs);
  memcpy(inst->args, args, sizeof(Type) * (size_t)nargs);
  inst->nargs = nargs;
  inst->mesh = cx->mesh;
  inst->ctrl = cx->ctrl;
  inst->lenient = cx->C->lenient > 0;
  return inst;
}

IrFunc *check_new_func(Checker *C, const FuncDef *fd, Mesh *mesh) {
  IrFunc *f = NEW(C, IrFunc);
  f->name = arena_strndup(&C->prog.arena, fd->name.p, (size_t)fd->name.n);
  f->sp = fd->ast->sp;
  f->ast = fd->ast;
  f->parent = fd->parent;
  f->mesh = mesh;
  f->end_line = fd->ast->end_line;
  return f;
}

char *check_type_text(Ctx *cx, const Type *t) {
  static _Thread_local char bufs[4][256];   /* (per thread: two states may check at once) */
  static _Thread_local int which;
  Buf b = {0};
  err_defer(buf_release, &b);
  show_type(&b, t, cx ? cx->mesh : NULL);
  char *r = bufs[which++ & 3];
  snprintf(r, 256, "%s", buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
  return r;
}

char *check_vma_text(Ctx *cx, uint32_t vma) {
  static _Thread_local char bufs[4][256];   /* (per thread: two states may check at once) */
  static _Thread_local int which;
  Buf b = {0};
  err_defer(buf_release, &b);
  show_vma_message(&b, vma, cx->mesh);
  char *r = bufs[which++ & 3];
  snprintf(r, 256, "%s", buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
  return r;
}

const char *check_shape_tuple(Ctx *cx, const Type *t) {
  Buf b = {0};
  err_defer(buf_release, &b);
  buf_putc(&b, '(');
  for (int d = 0; d < t->rank; d++) buf_printf(&b, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  buf_puts(&b, t->rank == 1 ? ",)" : ")");
  char *r = arena_strndup(&cx->C->prog.arena, buf_cstr(&b), (size_t)b.n);
  err_undefer(&b);
  buf_free(&b);
  return r;
}

Type check_bad_type(void) {
  Type t;
  memset(&t, 0, sizeof t);
  t.bad = true;
  return t;
}

bool check_types_equal(const Type *a, const Type *b) {
  return a->dt == b->dt && a->vma == b->vma && a->unred == b->unred && a->red == b->red && a->future == b->future &&
         (!a->unred || a->ukind == b->ukind) && type_same_shape(a, b);
}

/* ---- literals ------------------------------------------------------------------ */

/* Make the Array for a literal of dtype dt; false (with an error) when the
   literal cannot take that dtype. */
bool check_lit_value(Ctx *cx, const AstLit *l, int dt, Array **out) {
  (void)cx;
  if (dtype_is_key((DType)dt)) {
    diag_error(l->sp, "a literal cannot be a key (%s): random_seed makes keys of integers", dtype_names[dt]);
    return false;
  }
  if ((l->k == LIT_FLOAT && !dtype_is_float((DType)dt) && !dtype_is_complex((DType)dt)) ||
      (l->k == LIT_COMPLEX && !dtype_is_complex((DType)dt))) {
    diag_error(l->sp, "%s literal %.*s cannot take dtype %s", l->k == LIT_FLOAT ? "float" : "complex",
               (int)l->sp.len, diag_file_text(l->sp.file, NULL) + l->sp.off, dtype_names[dt]);
    return false;
  }
  if (l->k == LIT_BOOL && dt != DT_BOOL) {
    diag_error(l->sp, "boolean literal cannot take dtype %s", dtype_names[dt]);
    return false;
  }
  if (l->k == LIT_INT && dt == DT_BOOL) {
    diag_error(l->sp, "integer literal cannot take dtype bool");
    return false;
  }
  if (l->k == LIT_INT && dtype_is_int((DType)dt) && dtype_sizes[dt] < 8) {
    int bits = dtype_sizes[dt] * 8;
    int64_t lo = dtype_is_unsigned((DType)dt) ? 0 : -((int64_t)1 << (bits - 1));
    int64_t hi = dtype_is_unsigned((DType)dt) ? ((int64_t)1 << bits) - 1 : ((int64_t)1 << (bits - 1)) - 1;
    if (l->i < lo || l->i > hi) {
      diag_error(l->sp, "integer literal %lld does not fit in %s", (long long)l->i, dtype_names[dt]);
      return false;
    }
  }
  if (l->k == LIT_INT && dt == DT_U64 && l->i < 0) {
    diag_error(l->sp, "integer literal %lld does not fit in u64", (long long)l->i);
    return false;
  }
  if (l->k == LIT_COMPLEX) {
    *out = arr_new((DType)dt, 0, NULL);
    arr_setc(*out, 0, l->f, l->im);
  } else {
    *out = l->k == LIT_FLOAT ? arr_scalar_f((DType)dt, l->f) : arr_scalar_i((DType)dt, l->i);
  }
  return true;
}

static int lit_default_dtype(const AstLit *l) {
  return l->k == LIT_FLOAT ? DT_F32 : l->k == LIT_BOOL ? DT_BOOL : l->k == LIT_COMPLEX ? DT_C64 : DT_I32;
}

/* ---- annotations ------------------------------------------------------------- */

/* The mask of the mesh axes `names`; false (after an error) when one is
   not an axis of the enclosing mesh. */
static bool resolve_axes(Ctx *cx, const AstType *at, const Str *names, int n, uint32_t *mask) {
  for (int i = 0; i < n; i++) {
    int k = -1;
    for (int a = 0; cx->mesh && a < cx->mesh->naxes; a++)
      if (str_eq(cx->mesh->axis[a], names[i])) k = a;
    if (k < 0) {
      char hint[256];
      diag_error(at->axes_sp, "unbound axis name '%.*s'%s", names[i].n, names[i].p,
                 rule_axis_hint(cx->mesh, names[i], hint, sizeof hint));
      return false;
    }
    *mask |= 1u << k;
  }
  return true;
}

/* `x` or `(a,b)`: axis names as JAX prints them in a type. */
static Str axes_text(Ctx *cx, const Str *names, int n) {
  Buf b = {0};
  err_defer(buf_release, &b);
  if (n > 1) buf_putc(&b, '(');
  for (int i = 0; i < n; i++) buf_printf(&b, "%s%.*s", i ? "," : "", names[i].n, names[i].p);
  if (n > 1) buf_putc(&b, ')');
  Str r;
  r.p = arena_strndup(&cx->C->prog.arena, buf_cstr(&b), (size_t)b.n);
  r.n = b.n;
  err_undefer(&b);
  buf_free(&b);
  return r;
}

/* The unreduced and reduced axes of a type: inside a shard_map, masks of
   its mesh (an axis both unreduced and reduced, or varying and either, is
   refused); outside, the layout of a global value, kept by name. */
static bool manual_axes_or_layout(Ctx *cx, const AstType *at, Type *t) {
  if (!at->nunred && !at->nred) return true;
  if (!cx->mesh) {
    TypeLay *l = NEW(cx->C, TypeLay);
    if (at->nunred) l->unred = axes_text(cx, at->unred, at->nunred);
    if (at->nred) l->red = axes_text(cx, at->red, at->nred);
    l->ukind = (uint8_t)at->ukind;
    t->lay = l;
    return true;
  }
  if (!resolve_axes(cx, at, at->unred, at->nunred, &t->unred) || !resolve_axes(cx, at, at->red, at->nred, &t->red))
    return false;
  t->ukind = (uint8_t)(t->unred ? at->ukind : UK_SUM);
  uint32_t clash = (t->unred & t->red) | (t->vma & (t->unred | t->red));
  if (clash) {
    diag_error(at->axes_sp, "an axis is in one state in a type: %s is named twice among V:, U: and R:",
               check_vma_text(cx, clash));
    return false;
  }
  t->vma |= t->unred;          /* each device holds its own summand: physically varying */
  return true;
}

/* Resolve a written type; false after an error. */
bool check_resolve_type(Ctx *cx, const AstType *at, Type *t, bool *has_vma) {
  memset(t, 0, sizeof *t);
  *has_vma = false;            /* (also when the type is refused: callers may read it) */
  if (at->bare) {              /* JAX's token: shmapi's token is bool[0], its variance psend's */
    if (!str_eqc(at->dtype, "Tok")) {
      diag_error(at->sp, "unknown type '%.*s' (a type is dtype[shape], as f32[2,3], or JAX's token Tok)",
                 at->dtype.n, at->dtype.p);
      return false;
    }
    t->dt = DT_BOOL;
    t->rank = 1;
    return true;
  }
  int dt = dtype_lookup(at->dtype);
  if (dt < 0 && at->dtype.n > 5 && !strncmp(at->dtype.p, "key<", 4)) {
    if (str_eqc(at->dtype, "key<rbg>") || str_eqc(at->dtype, "key<urbg>") || str_eqc(at->dtype, "key<unsafe_rbg>"))
      diag_error(at->sp, "%.*s: JAX's rbg keys are not supported: shm's typed keys are key<fry>, threefry2x32's "
                 "(rng_bit_generator computes the bits rbg keys draw)", at->dtype.n, at->dtype.p);
    else
      diag_error(at->sp, "unknown key type %.*s (JAX's are key<fry>, key<rbg> and key<urbg>; shm runs key<fry>)",
                 at->dtype.n, at->dtype.p);
    return false;
  }
  if (dt < 0) {
    diag_error(at->sp, "unknown dtype '%.*s' (dtypes: %s)", at->dtype.n, at->dtype.p, dtype_list_text);
    return false;
  }
  if (at->rank_overflow) {
    diag_error(at->sp, "rank above the limit of %d", SHM_MAXRANK);
    return false;
  }
  t->dt = (uint8_t)dt;
  t->rank = (uint8_t)at->rank;
  for (int i = 0; i < at->rank; i++) {
    if (at->shape[i] < 0) {
      diag_error(at->sp, "negative dimension %lld", (long long)at->shape[i]);
      return false;
    }
    t->shape[i] = at->shape[i];
  }
  if (shape_size(t->rank, t->shape) < 0) {
    diag_error(at->sp, "array type too large");
    return false;
  }
  *has_vma = at->has_vma;
  if (at->has_vma) {
    if (at->bad_group.len) {
      diag_error(at->bad_group, "unknown kind of axes '%.*s' in a type (JAX's are V: varying, U: unreduced, "
                 "U_max:, U_min:, R: reduced)", (int)at->bad_group.len, diag_file_text(at->bad_group.file, NULL) + at->bad_group.off);
      return false;
    }
    if (!resolve_axes(cx, at, at->axes, at->naxes, &t->vma)) return false;
    if (!manual_axes_or_layout(cx, at, t)) return false;
  }
  if (at->has_shard) {
    TypeLay *l = (TypeLay *)t->lay;
    if (!l) t->lay = l = NEW(cx->C, TypeLay);
    for (int d = 0; d < at->rank; d++) l->dim[d] = at->dim_shard[d];
  }
  if (at->has_named) return xmap_named_shape(cx, at, t, has_vma);
  t->future = at->future;
  return true;
}

/* May an annotation's variance set `an` stand for the inferred `sound`?
   Under a predicate that varies along some axes (cx->ctrl, and the
   predicate of the statement being bound), JAX's printer leaves those
   axes out of the types it writes, where shmapi's sound types include
   them (what a device computes there depends on its own predicate).  A
   jaxpr pasted from JAX must check, so an annotation missing only such
   axes is accepted; the sound type is kept for what follows. */
static bool vma_jax_narrower(const Ctx *cx, uint32_t an, uint32_t sound) {
  return an != sound && !(an & ~sound) && !((sound & ~an) & ~(cx->ctrl | cx->stmt_pv));
}

/* Check a binder's annotation against the type a statement gives it.
   With `narrow` (NULL: strict), an annotation JAX would print under a
   varying predicate is accepted: *narrow gets its variance set and
   *is_narrow is set. */
static bool check_annotation_jax(Ctx *cx, const AstBinder *b, Type *t, const char *what, uint32_t *narrow,
                                 bool *is_narrow) {
  if (!b->type || t->bad) return true;
  Type at;
  bool has_vma;
  if (!check_resolve_type(cx, b->type, &at, &has_vma)) return false;
  if (!has_vma || cx->C->lenient) {   /* a loop's trial round: variance not judged yet */
    at.vma = t->vma;
    at.unred = t->unred;
    at.red = t->red;
    at.ukind = t->ukind;
  }
  if (narrow && at.vma != t->vma && vma_jax_narrower(cx, at.vma, t->vma)) {
    Type same = at;
    same.vma = t->vma;
    if (check_types_equal(&same, t)) {
      *narrow = at.vma;
      *is_narrow = true;
      if (at.lay) t->lay = at.lay;
      return true;
    }
  }
  if (!check_types_equal(&at, t)) {
    diag_error(b->type->sp, "%.*s is annotated %s but %s gives %s", b->name.n, b->name.p,
               check_type_text(cx, &at), what, check_type_text(cx, t));
    return false;
  }
  Str none = {"", 0}, au = at.lay ? at.lay->unred : none, tu = t->lay ? t->lay->unred : none;
  if (!cx->mesh && tu.n && !str_eq(au, tu)) {
    Type shown = at;
    shown.lay = t->lay;
    diag_error(b->type->sp, "%.*s is annotated %s but %s gives %s: a value unreduced over %.*s is its summands on "
               "the devices until a reshard or psum completes it", b->name.n, b->name.p, check_type_text(cx, &at),
               what, check_type_text(cx, &shown), tu.n, tu.p);
    return false;
  }
  t->lay = at.lay;     /* an explicit layout is the annotation's word: it changes no value */
  return true;
}

bool check_annotation(Ctx *cx, const AstBinder *b, Type *t, const char *what) {
  return check_annotation_jax(cx, b, t, what, NULL, NULL);
}

/* ---- operands ------------------------------------------------------------------ */

/* A future (an async collective's start's result) is read once, by the
   done of its start, in the body that started it (JAX binds the done
   the start names); false after an error. */
static bool check_await(Ctx *cx, const AstArg *a, IrVar *v) {
  int start = v->fut_start - 1, done = start >= 0 ? coll_async_done(start) : -1;
  const char *want = done >= 0 ? prim_table[done].name : "the done of its start";
  if (!cx->awaiting) {
    diag_error(a->sp, "%.*s is a future (the result of %s), not an array: only %s reads it", a->name.n, a->name.p,
               start >= 0 ? prim_table[start].name : "an async collective's start", want);
    return false;
  }
  if (start < 0 || v->owner != cx->fn) {
    diag_error(a->sp, "%.*s is not the future of a start in this body: a future is awaited where it starts", a->name.n,
               a->name.p);
    return false;
  }
  if (cx->awaiting - 1 != done) {
    v->awaited = true;         /* (no second error: it is never awaited) */
    diag_error(a->sp, "%.*s is the future of %s: %s awaits it, not %s", a->name.n, a->name.p, prim_table[start].name,
               want, prim_table[cx->awaiting - 1].name);
    return false;
  }
  if (v->awaited) {
    diag_error(a->sp, "%.*s is awaited twice: a future is awaited once", a->name.n, a->name.p);
    return false;
  }
  v->awaited = true;
  return true;
}

/* The futures started by the statements of cx's function from `from` on
   that no done read (an async collective never finished). */
static void check_unawaited(Ctx *cx, int from) {
  for (int i = from; i < cx->fn->nbody; i++) {
    IrStmt *st = cx->fn->body[i];
    for (int k = 0; st->k == IS_EQN && k < st->nout; k++) {
      IrVar *v = st->out[k];
      if (!v->fut_start || v->awaited) continue;
      diag_error(v->sp, "the future %.*s of %s is never awaited: %s must read it in this body", v->name.n, v->name.p,
                 prim_table[v->fut_start - 1].name, prim_table[coll_async_done(v->fut_start - 1)].name);
    }
  }
}

/* Resolve an argument to an atom.  Literals come out weak (dtype open)
   unless typed.  False after an error. */
bool check_resolve_arg(Ctx *cx, const AstArg *a, IrAtom *out) {
  memset(out, 0, sizeof *out);
  out->sp = a->sp;
  if (a->k == ARG_NAME) {
    Binding *b = check_lookup(cx->scope, B_VAR, a->name);
    if (!b) {
      diag_error(a->sp, check_unbound(cx->C, cx->scope, B_VAR, a->name), a->name.n, a->name.p);
      return false;
    }
    out->var = b->var;
    out->t = b->var->t;
    if (b->var->t.future && !check_await(cx, a, b->var)) return false;
    if (b->var->owner != cx->fn) emit_capture(EM(cx), b->var);
    return true;
  }
  if (a->k == ARG_STR) {
    diag_error(a->sp, "a string is not an array operand");
    return false;
  }
  const AstLit *l = &a->lit;
  if (l->type) {
    Type t;
    bool has_vma;
    if (!check_resolve_type(cx, l->type, &t, &has_vma)) return false;
    if (t.rank != 0) {
      diag_error(l->type->sp, "a literal must have a scalar type, not %s", check_type_text(cx, &t));
      return false;
    }
    if (!check_lit_value(cx, l, t.dt, &out->lit)) return false;
    prog_keep(&cx->C->prog, out->lit);
    t.vma = 0;
    out->t = t;
    return true;
  }
  out->t.dt = (uint8_t)lit_default_dtype(l);
  out->t.weak = true;
  return true;
}

/* Give weak literal atoms their final dtype (the rule may have set t.dt). */
bool check_finish_literals(Ctx *cx, IrAtom *in, const AstArg *const *args, int n) {
  bool ok = true;
  for (int k = 0; k < n; k++) {
    if (in[k].var || in[k].lit || !args) continue;
    if (!check_lit_value(cx, &args[k]->lit, in[k].t.dt, &in[k].lit)) { ok = false; continue; }
    prog_keep(&cx->C->prog, in[k].lit);
    in[k].t.weak = false;
  }
  return ok;
}

/* ---- statements: forward declarations ------------------------------------------ */

static void check_top(Checker *C, AstList *stmts, int file);

/* Bind the outputs of a statement, checking count and annotations. */
void check_bind_outs(Ctx *cx, AstStmt *s, IrStmt *st, Type *outt, int nout, const char *what) {
  if (s->nouts != nout) {
    diag_error(s->nouts ? s->outs[0]->sp : s->callee_sp, "%s gives %d result%s, but %d name%s bound", what, nout,
               nout == 1 ? "" : "s", s->nouts, s->nouts == 1 ? " is" : "s are");
    for (int i = 0; i < nout; i++) outt[i] = check_bad_type();
    nout = s->nouts;
    outt = NULL;
  }
  bool ok = true;
  uint32_t *narrow = NEWN(cx->C, uint32_t, s->nouts);
  bool *is_narrow = NEWN(cx->C, bool, s->nouts);
  for (int i = 0; i < s->nouts && outt; i++)
    if (!check_annotation_jax(cx, s->outs[i], &outt[i], what, &narrow[i], &is_narrow[i])) { ok = false; break; }
  if (st) {
    st->out = NEWN(cx->C, IrVar *, nout);
    st->nout = nout;
  }
  for (int i = 0; i < s->nouts; i++) {
    AstBinder *b = s->outs[i];
    Type t = outt && ok ? outt[i] : check_bad_type();
    IrVar *v = emit_var(EM(cx), str_eqc(b->name, "_") ? str_c("") : b->name, t, b->sp);
    v->jax_narrow = ok && is_narrow[i];
    v->jax_vma = narrow[i];
    if (st) st->out[i] = v;
    if (!str_eqc(b->name, "_")) {
      cx->scope = check_bind(cx->C, cx->scope, B_VAR, b->name);
      cx->scope->var = v;
    }
  }
}

void check_bind_outs_as(Ctx *cx, AstStmt *s, IrStmt *st, Type *outt, int nout, const char *what) {
  check_bind_outs(cx, s, st, outt, nout, what);
}

void check_bind_alias(Ctx *cx, AstBinder *b, IrAtom a) {
  Type t = a.t;
  if (!check_annotation(cx, b, &t, "the pmap")) t = check_bad_type();
  if (str_eqc(b->name, "_")) return;
  if (!t.bad) a.var->name = b->name;
  cx->scope = check_bind(cx->C, cx->scope, B_VAR, b->name);
  cx->scope->var = t.bad ? emit_var(EM(cx), b->name, t, b->sp) : a.var;
}

void check_bind_bad(Ctx *cx, AstStmt *s) {
  for (int i = 0; i < s->nouts; i++) {
    AstBinder *b = s->outs[i];
    IrVar *v = emit_var(EM(cx), b->name, check_bad_type(), b->sp);
    cx->scope = check_bind(cx->C, cx->scope, B_VAR, b->name);
    cx->scope->var = v;
  }
}

/* Higher-order equations and shard_map (below). */
static void check_special(Ctx *cx, AstStmt *s, int prim, IrAtom *in);

/* ---- equations ------------------------------------------------------------------------ */

typedef struct EqnIn {
  IrAtom *in;
  int nin;
  const AstArg *const *args;
} EqnIn;

/* Resolve all operands; false if any failed or is bad (errors reported). */
bool check_resolve_args(Ctx *cx, AstStmt *s, IrAtom *in, bool *silent) {
  bool ok = true;
  *silent = false;
  for (int k = 0; k < s->nargs; k++) {
    if (!check_resolve_arg(cx, s->args[k], &in[k])) return false;   /* one error per statement */
    else if (in[k].t.bad) { ok = false; *silent = true; }
  }
  if (!ok && !*silent) *silent = false;
  return ok;
}

/* Does an equation name an axis (a name or a string in its axes or
   axis_name parameter)? */
static bool names_axis(const AstStmt *s) {
  for (int i = 0; i < s->nparams; i++) {
    if (!str_eqc(s->params[i]->key, "axes") && !str_eqc(s->params[i]->key, "axis_name")) continue;
    const PVal *v = pv_unparen(s->params[i]->v);
    bool many = v && (v->k == PV_TUPLE || v->k == PV_LIST);
    for (int k = 0; v && k < (many ? v->n : 1); k++) {
      const PVal *e = many ? pv_unparen(v->items[k]) : v;
      if (e && (e->k == PV_NAME || e->k == PV_STR)) return true;
    }
  }
  return false;
}

/* Outside any shard_map, a value typed unreduced (`f32[8,16]{U:x}`, JAX's
   explicit sharding) holds its complete value here, but JAX lets only
   the linear primitives read it (the others would read a summand on the
   devices): the same rule as inside (unred.c), over the axes by name. */
static bool global_unreduced(Ctx *cx, AstStmt *s, int prim, const IrAtom *in, const Attrs *at, Type *out, int nout) {
  Str names[32];
  int nn = 0;
  Type *t = NEWN(cx->C, Type, s->nargs);
  bool *lit = NEWN(cx->C, bool, s->nargs);
  for (int k = 0; k < s->nargs; k++) {
    t[k] = in[k].t;
    lit[k] = !in[k].var;
    t[k].unred = t[k].vma = t[k].red = 0;
    if (!t[k].lay || !t[k].lay->unred.n) continue;
    int b = 0;
    while (b < nn && !str_eq(names[b], t[k].lay->unred)) b++;
    if (b == nn && nn < 32) names[nn++] = t[k].lay->unred;
    t[k].unred = t[k].vma = 1u << b;
    t[k].ukind = t[k].lay->ukind;
  }
  if (!nn) return true;
  UnredErr ue;
  Type *o = NEWN(cx->C, Type, nout);
  for (int k = 0; k < nout; k++) o[k] = out[k];
  if (!unred_rule(prim, prim_table[prim].vrule, t, s->nargs, lit, at, 0, o, nout, &ue)) {
    char nm[160], ax[160];
    const IrAtom *a = ue.operand >= 0 ? &in[ue.operand] : NULL;
    snprintf(nm, sizeof nm, "%.*s", a && a->var ? a->var->name.n : 9, a && a->var ? a->var->name.p : "a literal");
    int b = 0;
    while (b < nn - 1 && !(ue.axes & (1u << b))) b++;
    snprintf(ax, sizeof ax, "%.*s", names[b].n, names[b].p);
    diag_error(s->callee_sp, ue.msg, prim_table[prim].name, nm, ax);
    return false;
  }
  bool moves = prim == P_RESHARD || prim == P_MESH_CAST || prim == P_SHARDING_CONSTRAINT || prim == P_DEVICE_PUT;
  for (int k = 0; k < nout; k++) {
    if (!o[k].unred || moves) continue;     /* (a reshard's result is laid out as its binder says) */
    TypeLay *l = NEW(cx->C, TypeLay);
    int b = 0;
    while (!(o[k].unred & (1u << b))) b++;
    l->unred = names[b];
    l->ukind = o[k].ukind;
    out[k].lay = l;
  }
  return true;
}

static void check_prim_eqn(Ctx *cx, AstStmt *s, int prim) {
  const PrimInfo *pi = &prim_table[prim];
  IrAtom *in = NEWN(cx->C, IrAtom, s->nargs);
  bool silent;
  cx->awaiting = prim_table[prim].shape == coll_rule_async_done ? prim + 1 : 0;
  bool resolved = check_resolve_args(cx, s, in, &silent);
  cx->awaiting = 0;
  if (!resolved) {
    touch_fn_params(cx, s);
    check_bind_bad(cx, s);
    return;
  }
  if (s->nargs < pi->nin_min || (pi->nin_max >= 0 && s->nargs > pi->nin_max)) {
    if (pi->nin_min == pi->nin_max)
      diag_error(s->callee_sp, "%s takes %d operand%s, but %d %s given", pi->name, pi->nin_min,
                 pi->nin_min == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
    else
      diag_error(s->callee_sp, "%s takes at least %d operand%s, but %d %s given", pi->name, pi->nin_min,
                 pi->nin_min == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
    check_bind_bad(cx, s);
    return;
  }
  if (pi->vrule == VR_SPECIAL) {
    check_special(cx, s, prim, in);
    return;
  }
  if (cx->C->open_axes && !cx->mesh && names_axis(s)) {
    cx->C->deferred++;                 /* (check_def: the calls bind the axis) */
    check_bind_bad(cx, s);
    return;
  }
  RuleCtx r;
  Attrs *at = NEW(cx->C, Attrs);
  if (!body_check(cx, s, prim, in, at)) {
    check_bind_bad(cx, s);
    return;
  }
  Type *intypes = NEWN(cx->C, Type, s->nargs);
  for (int k = 0; k < s->nargs; k++) intypes[k] = in[k].t;
  int nout = prim_nout_params(prim, s->nargs, s->params, s->nparams);
  Type *out = NEWN(cx->C, Type, nout + 1);
  if (!emit_prim_shape(EM(cx), &r, prim, s->callee_sp, s->params, s->nparams, intypes, s->nargs, at, out)) {
    check_bind_bad(cx, s);
    return;
  }
  for (int k = 0; k < s->nargs; k++) in[k].t.dt = intypes[k].dt;
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, s->nargs)) { check_bind_bad(cx, s); return; }
  if (prim_communicates(prim) && (at->axmask & cx->ctrl)) {
    diag_error(s->callee_sp, "%s over %s inside control flow whose predicate varies over %s: "
               "instances would disagree on whether to communicate (it would hang on real hardware)",
               pi->name, check_vma_text(cx, at->axmask), check_vma_text(cx, at->axmask & cx->ctrl));
    check_bind_bad(cx, s);
    return;
  }
  if (!emit_prim_vary(EM(cx), prim, in, s->nargs, at, out, nout, s->callee_sp)) { check_bind_bad(cx, s); return; }
  if (!cx->mesh && !global_unreduced(cx, s, prim, in, at, out, nout)) { check_bind_bad(cx, s); return; }
  if (prim == P_PBROADCAST && s->nouts == 1 && in[0].var && out[0].vma == in[0].t.vma && at->naxes) {
    /* JAX's pvary of a value it types invariant along axes the value
       varies over (computed from a precv's result): the identity, and
       the name stands for the operand */
    Type t = in[0].t;
    if (!check_annotation(cx, s->outs[0], &t, pi->name) || str_eqc(s->outs[0]->name, "_")) return;
    cx->scope = check_bind(cx->C, cx->scope, B_VAR, s->outs[0]->name);
    cx->scope->var = in[0].var;
    return;
  }
  IrStmt *st = check_new_eqn(cx, s);
  st->prim = prim;
  st->at = at;
  st->params = r.canon;
  st->nparams = r.ncanon;
  st->in = in;
  st->nin = s->nargs;
  check_bind_outs(cx, s, st, out, nout, pi->name);
  if (coll_is_async_start(prim) && nout == 1 && st->nout == 1) st->out[0]->fut_start = prim + 1;
  emit_stmt(EM(cx), st);
}

static void check_call(Ctx *cx, AstStmt *s, FuncDef *fd) {
  IrAtom *in = NEWN(cx->C, IrAtom, s->nargs);
  bool silent;
  if (!check_resolve_args(cx, s, in, &silent)) { check_bind_bad(cx, s); return; }
  Type *at = NEWN(cx->C, Type, s->nargs);
  for (int k = 0; k < s->nargs; k++) {
    in[k].t.weak = false;
    at[k] = in[k].t;
  }
  if (!check_finish_literals(cx, in, (const AstArg *const *)s->args, s->nargs)) { check_bind_bad(cx, s); return; }
  if (cx->mesh && fd->ast->has_deco && str_eqc(fd->ast->deco, "pmap")) {
    if (s->nparams) {
      diag_error(s->params[0]->sp, "'%.*s' is a function: it takes no parameters in brackets", fd->name.n, fd->name.p);
      check_bind_bad(cx, s);
    } else {
      pmap_nested_call(cx, s, fd, in);
    }
    return;
  }
  IrFunc *f = stat_instantiate_call(cx, s, fd, at, s->nargs);
  if (!f) { check_bind_bad(cx, s); return; }
  IrStmt *st = check_new_eqn(cx, s);
  st->callee = f;
  st->in = in;
  st->nin = s->nargs;
  Type *out = NEWN(cx->C, Type, f->nouts);
  for (int k = 0; k < f->nouts; k++) out[k] = f->outs[k].t;
  char what[256];
  snprintf(what, sizeof what, "%.*s", fd->name.n, fd->name.p);
  check_bind_outs(cx, s, st, out, f->nouts, what);
  emit_stmt(EM(cx), st);
}

static bool stmt_has_param(const AstStmt *s, const char *key) {
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, key)) return true;
  return false;
}

static void check_eqn(Ctx *cx, AstStmt *s) {
  s = stat_subst_stmt(cx, s);
  if (xmap_desugar(cx, s)) return;
  Binding *b = check_lookup(cx->scope, B_FUNC, s->callee);
  if (b) { check_call(cx, s, b->fn); return; }
  bool done;
  s = old_rewrite(cx, s, &done);
  if (done) return;
  int prim = prim_lookup(s->callee);
  if (prim == P_PBROADCAST && stmt_has_param(s, "source")) prim = P_PBROADCAST_SOURCE;  /* JAX's broadcast */
  if (prim >= 0) { check_prim_eqn(cx, s, prim); return; }
  b = check_lookup(cx->scope, B_VAR, s->callee);
  if (b && !s->has_params && s->nargs == 0) {       /* y = x */
    IrVar *v = b->var;
    if (v->owner != cx->fn) emit_capture(EM(cx), v);
    if (s->nouts != 1) {
      diag_error(s->outs[1]->sp, "'%.*s' is one value; it cannot be bound to %d names", s->callee.n, s->callee.p, s->nouts);
      check_bind_bad(cx, s);
      return;
    }
    if (!check_annotation(cx, s->outs[0], &v->t, "the value")) { check_bind_bad(cx, s); return; }
    cx->scope = check_bind(cx->C, cx->scope, B_VAR, s->outs[0]->name);
    cx->scope->var = v;
    return;
  }
  for (IrFunc *f = cx->fn; !b && f && f != cx->C->main; f = f->parent)
    if (f->name && str_eqc(s->callee, f->name)) {   /* a function does not see itself */
      diag_error(s->callee_sp, "%.*s calls itself: recursion is not supported (use while or fori_loop)", s->callee.n, s->callee.p);
      check_bind_bad(cx, s);
      return;
    }
  if (b)
    diag_error(s->callee_sp, "'%.*s' is a value, not a function or primitive", s->callee.n, s->callee.p);
  else {
    char hint[160];
    diag_error(s->callee_sp, "unknown primitive or function '%.*s'%s", s->callee.n, s->callee.p,
               check_callee_hint(cx->C, cx->scope, s->callee, hint, sizeof hint));
  }
  check_bind_bad(cx, s);
}

/* ---- print, show, mesh, import ------------------------------------------------------- */

static void check_print(Ctx *cx, AstStmt *s) {
  IrStmt *st = emit_new_stmt(EM(cx), IS_PRINT, s->sp);
  st->line = s->line;
  if (!smap_print_params(cx, s, st)) return;
  st->items = NEWN(cx->C, IrPrintItem, s->nargs);
  st->nitems = s->nargs;
  for (int k = 0; k < s->nargs; k++) {
    AstArg *a = s->args[k];
    if (a->k == ARG_STR) {
      st->items[k].text = a->name;
      continue;
    }
    if (!check_resolve_arg(cx, a, &st->items[k].atom)) return;
    if (st->items[k].atom.t.bad) return;
    if (!st->items[k].atom.var && !st->items[k].atom.lit) {
      if (!check_lit_value(cx, &a->lit, st->items[k].atom.t.dt, &st->items[k].atom.lit)) return;
      prog_keep(&cx->C->prog, st->items[k].atom.lit);
      st->items[k].atom.t.weak = false;
    }
    if (st->print_spec && !smap_print_spec(cx, a, &st->items[k].atom.t, st->print_spec)) return;
  }
  emit_stmt(EM(cx), st);
}

static void check_show(Ctx *cx, AstStmt *s) {
  Binding *b = check_lookup(cx->scope, B_FUNC, s->name);
  if (!b) {
    diag_error(s->name_sp, check_unbound(cx->C, cx->scope, B_FUNC, s->name), s->name.n, s->name.p);
    return;
  }
  FuncDef *fd = b->fn;
  if (!fd->latest) {
    bool failed = false, open = false;
    for (Instance *i = fd->inst; i; i = i->next) {
      failed |= !i->ir && !i->open;
      open |= i->open;
    }
    if (!failed && open)
      diag_error(s->name_sp, "cannot show '%.*s' yet: it names axes that only a call binds (a mesh's, an xmap's "
                 "named axes), and it has not been called", s->name.n, s->name.p);
    else if (!failed)
      diag_error(s->name_sp, "cannot show '%.*s' yet: its parameters are not all annotated and it has not been called",
                 s->name.n, s->name.p);
    return;
  }
  IrStmt *st = emit_new_stmt(EM(cx), IS_SHOW, s->sp);
  st->line = s->line;
  Buf out = {0};
  err_defer(buf_release, &out);
  char name[256];
  snprintf(name, sizeof name, "%.*s", fd->name.n, fd->name.p);
  show_func(&out, fd->latest, name);
  st->text = arena_strndup(&cx->C->prog.arena, buf_cstr(&out), out.n);
  err_undefer(&out);
  buf_free(&out);
  emit_stmt(EM(cx), st);
}

void check_mesh(Ctx *cx, AstStmt *s) {
  Mesh *m = NEW(cx->C, Mesh);
  m->name = s->name;
  m->ndev = 1;
  if (s->naxes > SHM_MAXAXES) {
    diag_error(s->sp, "a mesh has at most %d axes", SHM_MAXAXES);
    return;
  }
  for (int i = 0; i < s->naxes; i++) {
    AstMeshAxis *a = s->axes[i];
    for (int j = 0; j < i; j++)
      if (str_eq(s->axes[j]->name, a->name)) {
        diag_error(a->sp, "mesh axis '%.*s' named twice", a->name.n, a->name.p);
        return;
      }
    if (a->size < 1) {
      diag_error(a->size_sp, "mesh axis '%.*s' must have a size of at least 1", a->name.n, a->name.p);
      return;
    }
    if (m->ndev > SHM_MAX_INSTANCES / a->size) {
      diag_error(a->size_sp, "mesh has more than %d devices", SHM_MAX_INSTANCES);
      return;
    }
    m->axis[i] = a->name;
    m->size[i] = a->size;
    m->ndev *= a->size;
  }
  m->naxes = s->naxes;
  cx->scope = check_bind(cx->C, cx->scope, B_MESH, s->name);
  cx->scope->mesh = m;
}

static bool file_exists(const char *p) {
  FILE *f = fopen(p, "rb");
  if (f) fclose(f);
  return f != NULL;
}

static void check_import(Ctx *cx, AstStmt *s) {
  if (cx->fn != cx->C->main) {
    diag_error(s->sp, "import stands only at top level");
    return;
  }
  char path[4096], rel[4096];
  const char *from = diag_file_name(s->sp.file);
  const char *slash = strrchr(from, '/');
  /* an absolute path is itself; any other is relative to the importing file's folder */
  bool absolute = s->name.n > 0 && s->name.p[0] == '/';
  snprintf(rel, sizeof rel, "%.*s%.*s", slash && !absolute ? (int)(slash - from + 1) : 0, from,
           s->name.n, s->name.p);
  const char *cands[4];
  char c2[4096], c3[4096];
  int nc = 0;
  cands[nc++] = rel;
  const char *env = getenv("SHMAPI_STDLIB");
  if (env) { snprintf(c2, sizeof c2, "%s/%.*s", env, s->name.n, s->name.p); cands[nc++] = c2; }
  snprintf(c3, sizeof c3, "%s/%.*s", SHM_SOURCE_STDLIB, s->name.n, s->name.p);
  cands[nc++] = c3;
  static _Thread_local char c4[4096];
  snprintf(c4, sizeof c4, "%s/%.*s", SHM_INSTALL_STDLIB, s->name.n, s->name.p);
  cands[nc++] = c4;
  /* `import "stdlib/x.shm"` also finds the library by its own folder name */
  const char *found = NULL;
  for (int i = 0; i < nc && !found; i++)
    if (file_exists(cands[i])) found = cands[i];
  if (!found && s->name.n > 7 && !memcmp(s->name.p, "stdlib/", 7)) {
    snprintf(c2, sizeof c2, "%s/%.*s", SHM_SOURCE_STDLIB, s->name.n - 7, s->name.p + 7);
    if (file_exists(c2)) found = c2;
    else {
      snprintf(c3, sizeof c3, "%s/%.*s", SHM_INSTALL_STDLIB, s->name.n - 7, s->name.p + 7);
      if (file_exists(c3)) found = c3;
    }
  }
  if (!found) {
    diag_error(s->name_sp, "cannot find '%.*s' (looked beside %s and in the standard library)",
               s->name.n, s->name.p, from);
    return;
  }
  char real[PATH_MAX];               /* not realpath's malloc: mem.c is the one allocator */
  snprintf(path, sizeof path, "%s", realpath(found, real) ? real : found);
  for (ImportedFile *f = cx->C->imports; f; f = f->next)
    if (!strcmp(f->path, path)) return;
  ImportedFile *imp = NEW(cx->C, ImportedFile);
  imp->path = arena_strndup(&cx->C->prog.arena, path, strlen(path));
  imp->next = cx->C->imports;
  cx->C->imports = imp;
  int file = parse_load(found, s->name_sp);
  if (file < 0) return;
  AstList *stmts = parse_file(&cx->C->prog.arena, file);
  cx->C->top = cx->scope;
  check_top(cx->C, stmts, file);
  cx->scope = cx->C->top;
}

/* ---- functions ------------------------------------------------------------------------ */

bool check_all_annotated(const AstFunc *f) {
  for (int i = 0; i < f->nparams; i++)
    if (!f->params[i]->type) return false;
  return true;
}

static void check_body(Ctx *cx, AstStmt **body, int n) {
  for (int i = 0; i < n; i++) {
    AstStmt *s = body[i];
    if (cx->returned && s->k != ST_ERROR) {
      diag_error(s->sp, "statement after return");
      return;
    }
    check_stmt(cx, s);
  }
}

/* Check a def's body in sub (its own statements, recursion guarded); `errs`:
   the error count before, for the missing return's error. */
static void check_def_body(Ctx *sub, FuncDef *fd, int errs) {
  AstFunc *af = fd->ast;
  fd->checking = true;
  sub->C->depth++;
  int from = sub->fn->nbody;
  check_body(sub, af->body, af->nbody);
  check_unawaited(sub, from);
  sub->C->depth--;
  fd->checking = false;
  if (af->form == FN_READABLE && !sub->ret && diag_count() == errs &&
      !ast_body_broken(af->body, af->nbody))
    diag_error(af->sp, "%.*s has no return statement", fd->name.n, fd->name.p);
}

/* Resolve a function's results (readable: the return; lambda: `in (...)`). */
static bool resolve_results(Ctx *cx, AstFunc *af, IrAtom **outp, int *noutp) {
  AstArg **outs;
  int n;
  Span where;
  if (af->form == FN_LAMBDA) {
    outs = af->outs;
    n = af->nouts;
    where = af->outs_sp;
  } else {
    if (!cx->ret) {
      outs = NULL;
      n = 0;
      where = af->sp;
    } else {
      outs = cx->ret->args;
      n = cx->ret->nargs;
      where = cx->ret->sp;
    }
  }
  (void)where;
  IrAtom *res = NEWN(cx->C, IrAtom, n);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    if (!check_resolve_arg(cx, outs[i], &res[i])) { ok = false; break; }   /* one error per statement */
    if (res[i].t.bad) { ok = false; continue; }
    if (!res[i].var && !res[i].lit) {
      if (!check_lit_value(cx, &outs[i]->lit, res[i].t.dt, &res[i].lit)) { ok = false; continue; }
      prog_keep(&cx->C->prog, res[i].lit);
      res[i].t.weak = false;
    }
  }
  *outp = res;
  *noutp = n;
  return ok;
}

static bool resolve_outs(Ctx *cx, AstFunc *af) {
  return resolve_results(cx, af, &cx->fn->outs, &cx->fn->nouts);
}

bool check_inline(Ctx *cx, FuncDef *fd, const IrAtom *args, int nargs, Span call, IrAtom **outs, int *nouts) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  if (af->form == FN_TRANSPOSE || af->nparams != nargs) {
    diag_error(call, af->form == FN_TRANSPOSE ? "%.*s is a transpose: it cannot be a pmap's body"
               : "%.*s takes %d argument%s, but %d %s given", fd->name.n, fd->name.p, af->nparams,
               af->nparams == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
    return false;
  }
  if (fd->checking || C->depth >= MAX_DEPTH) {
    diag_error(call, fd->checking ? "%.*s calls itself: recursion is not supported (use while or fori_loop)"
               : "calls nested too deeply at %.*s", fd->name.n, fd->name.p);
    return false;
  }
  fd->resolved = true;         /* checked here: not resolved on its own */
  Ctx sub;
  check_ctx_init(&sub, C, cx->fn, fd->scope, cx->mesh, cx->ctrl, af->sp.file);
  sub.inlined = af;
  int errs = diag_count();
  for (int i = 0; i < nargs; i++) {
    AstBinder *b = af->params[i];
    Type t = args[i].t, an;
    bool has_vma;
    if (b->type && check_resolve_type(&sub, b->type, &an, &has_vma)) {
      Type written = an;       /* the annotation as written, for the message */
      if (!has_vma) an.vma = t.vma;
      if (!check_types_equal(&an, &t)) {
        diag_error(call, "argument %d of %.*s is %s, but the parameter %.*s is annotated %s", i + 1, fd->name.n,
                   fd->name.p, check_type_text(&sub, &t), b->name.n, b->name.p, check_type_text(&sub, &written));
        return false;
      }
    }
    if (diag_count() != errs) return false;
    if (!str_eqc(b->name, "_")) {
      sub.scope = check_bind(C, sub.scope, B_VAR, b->name);
      sub.scope->var = args[i].var;
    }
  }
  check_def_body(&sub, fd, errs);
  bool ok = resolve_results(&sub, af, outs, nouts);
  return ok && diag_count() == errs;
}

static bool same_types(const Type *a, const Type *b, int n) {
  for (int i = 0; i < n; i++)
    if (!check_types_equal(&a[i], &b[i])) return false;
  return true;
}

static IrFunc *instantiate(Ctx *cx, FuncDef *fd, const Type *args, int nargs, PVal **statics,
                           const uint32_t *outvma, int noutvma, Span call);

IrFunc *check_instantiate(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  return instantiate(cx, fd, args, nargs, NULL, NULL, 0, call);
}

IrFunc *check_instantiate_s(Ctx *cx, FuncDef *fd, const Type *args, int nargs, PVal **statics, Span call) {
  return instantiate(cx, fd, args, nargs, statics, NULL, 0, call);
}

IrFunc *check_instantiate_w(Ctx *cx, FuncDef *fd, const Type *args, int nargs, const uint32_t *outvma,
                            int noutvma, Span call) {
  return instantiate(cx, fd, args, nargs, NULL, outvma, noutvma, call);
}

static bool same_outvma(const Instance *i, const uint32_t *outvma, int n) {
  if (!outvma || !i->outvma) return !outvma && !i->outvma;
  return i->noutvma == n && !memcmp(i->outvma, outvma, sizeof(uint32_t) * (size_t)n);
}

/* A function's parameters, bound in sub's scope to the argument types,
   after the lambda's constants are checked against the variables they
   name.  An annotation must match its argument's type (the variance set
   left open when not written; one JAX prints under a varying predicate
   is accepted and noted); the first mismatch is an error at the call
   (*argerrs counts them).  False after an error. */
static bool bind_params(Ctx *sub, FuncDef *fd, IrFunc *f, const Type *args, int nargs, Span call, int *argerrs) {
  Checker *C = sub->C;
  AstFunc *af = fd->ast;
  bool ok = true;
  /* lambda constvars name variables of the enclosing scope */
  for (int i = 0; i < af->nconsts; i++) {
    AstBinder *b = af->consts[i];
    Binding *v = check_lookup(sub->scope, B_VAR, b->name);
    if (!v) {
      diag_error(b->sp, "constvar '%.*s' has no value: a jaxpr's constvars are bound from the values of the same "
                 "names where it is defined (bind one first, e.g. %.*s = load \"%.*s.npy\")",
                 b->name.n, b->name.p, b->name.n, b->name.p, b->name.n, b->name.p);
      ok = false;
      continue;
    }
    uint32_t nv;
    bool narrow = false;
    if (!check_annotation_jax(sub, b, &v->var->t, "the enclosing scope", &nv, &narrow)) ok = false;
  }
  f->params = NEWN(C, IrVar *, nargs);
  f->nparams = nargs;
  for (int i = 0; i < nargs; i++) {
    AstBinder *b = af->params[i];
    Type t = args[i];
    uint32_t jax_vma = UINT32_MAX;
    if (b->type) {
      Type an;
      bool has_vma;
      if (!check_resolve_type(sub, b->type, &an, &has_vma)) { ok = false; t = check_bad_type(); }
      else {
        Type written = an;     /* the annotation as written, for the message */
        if (!has_vma || C->lenient) an.vma = t.vma;
        bool narrow = !t.bad && vma_jax_narrower(sub, an.vma, t.vma);
        if (narrow) {        /* JAX's annotation under a varying predicate: keep the sound type */
          jax_vma = an.vma;
          an.vma = t.vma;
        }
        if (!check_types_equal(&an, &t) && !t.bad) {
          if (!(*argerrs)++)   /* the first mismatch only: one error per statement */
            diag_error(call, "argument %d of %.*s is %s, but the parameter %.*s is annotated %s", i + 1,
                       fd->name.n, fd->name.p, check_type_text(sub, &t), b->name.n, b->name.p,
                       check_type_text(sub, &written));
          ok = false;
        }
        if (t.bad) t = an;
      }
    }
    f->params[i] = emit_var(EM(sub), b->name, t, b->sp);
    f->params[i]->jax_narrow = jax_vma != UINT32_MAX;
    f->params[i]->jax_vma = jax_vma;
    if (!str_eqc(b->name, "_")) {
      sub->scope = check_bind(C, sub->scope, B_VAR, b->name);
      sub->scope->var = f->params[i];
    }
  }
  return ok;
}

/* Check a function body for given argument types.  With `outvma`, its
   results are widened to those variance sets by pbroadcasts at its end
   (a cond branch or a loop body whose result varies over fewer axes than
   the construct's), so the instance is a distinct one. */
static bool same_key(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Check a function for argument types and static values (NULL: none):
   check_instantiate_w and check_instantiate_s. */
static IrFunc *instantiate(Ctx *cx, FuncDef *fd, const Type *args, int nargs, PVal **statics,
                           const uint32_t *outvma, int noutvma, Span call) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  Mesh *mesh = cx->mesh;
  char *skey = af->has_deco ? (statics && statics[0] ? stat_key_mesh(C, statics[0]) : NULL) : stat_key(C, af, statics);
  if (af->nstatics && !statics) {
    diag_error(call, "%.*s takes static parameters: it is called as %.*s[%.*s=...] ..., not passed as a function",
               fd->name.n, fd->name.p, fd->name.n, fd->name.p, af->statics[0].n, af->statics[0].p);
    return NULL;
  }
  /* a checked instance is reused; one that failed is checked again, so
     that each statement calling it reports why (a REPL input after the
     one that first failed; in a file the repeated errors, at the same
     places, are printed once) */
  for (Instance *i = fd->inst; i; i = i->next)
    if (i->ir && i->nargs == nargs && i->mesh == mesh && i->ctrl == cx->ctrl && same_types(i->args, args, nargs) &&
        same_outvma(i, outvma, noutvma) && i->lenient == (C->lenient > 0) && same_key(i->skey, skey))
      return i->ir;
  if (af->form == FN_TRANSPOSE) return xform_instance(cx, fd, args, nargs, call);
  if (af->nparams != nargs) {
    diag_error(call, "%.*s takes %d argument%s, but %d %s given", fd->name.n, fd->name.p, af->nparams,
               af->nparams == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
    return NULL;
  }
  if (fd->checking) {
    diag_error(call, "%.*s calls itself: recursion is not supported (use while or fori_loop)", fd->name.n, fd->name.p);
    return NULL;
  }
  if (C->depth >= MAX_DEPTH) {
    diag_error(call, "calls nested too deeply: %.*s would be call number %d in a chain (the limit is %d)",
               fd->name.n, fd->name.p, C->depth + 1, MAX_DEPTH);
    return NULL;
  }
  if (af->has_deco && str_eqc(af->deco, "xmap")) return xmap_instance(cx, fd, args, nargs, statics ? statics[0] : NULL, call);
  if (af->has_deco && str_eqc(af->deco, "pmap")) return pmap_instance(cx, fd, args, nargs, call);
  if (af->has_deco) return smap_instance(cx, fd, args, nargs, call);
  Instance *inst = check_new_instance(cx, args, nargs);
  inst->skey = skey;
  if (outvma) {
    inst->outvma = NEWN(C, uint32_t, noutvma);
    memcpy(inst->outvma, outvma, sizeof(uint32_t) * (size_t)noutvma);
    inst->noutvma = noutvma;
  }
  IrFunc *f = check_new_func(C, fd, mesh);
  f->statics = skey;
  Ctx sub;
  check_ctx_init(&sub, C, f, stat_bind(C, fd->scope, af, statics), mesh, cx->ctrl, af->sp.file);
  int errs = diag_count(), argerrs = 0, deferred = C->deferred;   /* argerrs: reported at the call itself */
  sub.scope = jax_bind_lets(C, af, sub.scope, f);
  bool ok = bind_params(&sub, fd, f, args, nargs, call, &argerrs);
  if (ok) {
    check_def_body(&sub, fd, errs);
    if (!resolve_outs(&sub, af)) ok = false;
    for (int i = 0; ok && outvma && i < f->nouts && i < noutvma; i++)
      if (outvma[i] & ~f->outs[i].t.vma) f->outs[i] = emit_lift(EM(&sub), f->outs[i], outvma[i], f->outs[i].sp);
  }
  if (diag_count() != errs) ok = false;
  inst->open = diag_count() == errs && C->deferred != deferred;   /* (left to the calls, which bind its axes) */
  if (inst->open) ok = false;
  if (!ok && call.file >= 0 && (call.file != af->sp.file || call.off != af->sp.off) && diag_count() > errs + (argerrs > 0))
    check_call_note_s(call, fd, skey, args, nargs, mesh);
  inst->ir = ok ? f : NULL;
  inst->next = fd->inst;
  fd->inst = inst;
  if (ok) fd->latest = f;
  return inst->ir;
}

static void check_def(Ctx *cx, AstStmt *s) {
  AstFunc *af = s->fn;
  FuncDef *fd = NEW(cx->C, FuncDef);
  fd->ast = af;
  fd->name = af->name;
  fd->parent = cx->fn;
  fd->scope = cx->scope;        /* the function does not see itself */
  cx->scope = check_bind(cx->C, cx->scope, B_FUNC, af->name);
  cx->scope->fn = fd;
  resolve_note_def(cx->C, fd, cx->mesh);
  if (af->form == FN_TRANSPOSE) {
    xform_define(cx, fd);
    return;
  }
  if (af->has_deco && af->nstatics) {
    diag_error(af->statics_sp[0], "a decorated function takes no static parameters (its decorator's parameters "
               "are fixed where it is defined)");
    AstFunc *plain = NEW(cx->C, AstFunc);     /* checked as if it had none */
    *plain = *af;
    plain->nstatics = 0;
    fd->ast = af = plain;
  }
  if (af->has_deco) {
    smap_define(cx, fd);
    return;
  }
  /* A function of no parameters is checked where it is called: it may be
     a shard_map body, whose collectives need the mesh axes in scope.  One
     whose parameters' types are all written is checked here -- but inside
     a body a type without a variance set leaves the set open (each call
     decides it), so such a function waits for its calls. */
  if (af->nparams > 0 && check_all_annotated(af)) {
    Type *args = NEWN(cx->C, Type, af->nparams);
    bool ok = true, open = false;
    for (int i = 0; i < af->nparams; i++) {
      bool has_vma;
      /* a named shape is known only inside an xmap body: checked at its calls */
      if (af->params[i]->type->has_named && !(cx->mesh && cx->mesh->named)) { open = true; continue; }
      if (!check_resolve_type(cx, af->params[i]->type, &args[i], &has_vma)) ok = false;
      if (cx->mesh && !has_vma) open = true;
    }
    if (ok && !open) {
      /* What fails here is held back until the end of the file: a call may
         check the function under a predicate whose variance excuses an
         annotation JAX printed (check_resolve.c releases or drops it). */
      int mark = diag_mark();
      /* outside any mesh an axis name is bound where the function is
         called (a mesh, an xmap's named axes): what names one is left to
         the calls (check_prim_eqn), the rest is checked here */
      if (!cx->mesh) cx->C->open_axes++;
      check_instantiate(cx, fd, args, af->nparams, af->sp);
      if (!cx->mesh) cx->C->open_axes--;
      if (diag_mark() > mark) diag_hold_since(mark, fd->held = ++cx->C->nheld);
    }
  }
}

/* ---- statements ------------------------------------------------------------------------ */

void check_stmt(Ctx *cx, AstStmt *s) {
  switch (s->k) {
  case ST_EQN: check_eqn(cx, s); break;
  case ST_LIT: check_lit_stmt(cx, s); break;
  case ST_PRINT: check_print(cx, s); break;
  case ST_VISUALIZE: check_visualize(cx, s); break;
  case ST_SHOW: check_show(cx, s); break;
  case ST_MESH: check_mesh(cx, s); break;
  case ST_IMPORT: check_import(cx, s); break;
  case ST_DEF: check_def(cx, s); break;
  case ST_LOAD: check_load(cx, s); break;
  case ST_SAVE: check_save(cx, s); break;
  case ST_RETURN:
    if (cx->fn == cx->C->main) diag_error(s->sp, "return outside a function");
    else if ((cx->inlined ? cx->inlined : cx->fn->ast) && (cx->inlined ? cx->inlined : cx->fn->ast)->form == FN_LAMBDA)
      diag_error(s->sp, "a lambda returns with `in (...)`, not return");
    else { cx->ret = s; cx->returned = true; }
    break;
  case ST_ERROR: check_bind_bad(cx, s); break;   /* its names: no second error */
  }
}

static void check_top(Checker *C, AstList *stmts, int file) {
  Ctx cx;
  check_ctx_init(&cx, C, C->main, C->top, NULL, 0, file);
  C->later = stmts;
  for (int i = 0; i < stmts->n; i++) {
    C->later_from = i + 1;
    check_stmt(&cx, stmts->v[i]);
    C->top = cx.scope;
  }
  C->later = NULL;
}

/* ---- shared by the control-flow and shard_map checks ---------------------------- */

void check_describe_types(Ctx *cx, Buf *b, const IrAtom *a, int n) {
  buf_putc(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) buf_puts(b, ", ");
    show_type(b, &a[i].t, cx->mesh);
  }
  buf_putc(b, ')');
}

/* Emit the checked equation for a higher-order primitive.  `pv` is the
   variance of its predicate: annotations of its results may leave it out,
   as JAX's printer does. */
void check_emit_special(Ctx *cx, AstStmt *s, int prim, Attrs *at, RuleCtx *r, IrAtom *in, int nin,
                         Type *out, int nout, uint32_t pv) {
  IrStmt *st = check_new_eqn(cx, s);
  st->prim = prim;
  st->at = at;
  st->params = r->canon;
  st->nparams = r->ncanon;
  st->in = in;
  st->nin = nin;
  uint32_t saved = cx->stmt_pv;
  cx->stmt_pv = pv;
  check_bind_outs(cx, s, st, out, nout, prim_table[prim].name);
  cx->stmt_pv = saved;
  emit_stmt(EM(cx), st);
}

bool check_index_operand(Ctx *cx, IrAtom *a, const AstArg *arg, const char *what) {
  if (a->t.weak && a->t.dt == DT_I32) a->t.dt = DT_I32;
  if (a->t.rank != 0 || (a->t.dt != DT_I32 && a->t.dt != DT_BOOL && a->t.dt != DT_I64)) {
    diag_error(a->sp, "%s must be a scalar integer or boolean, not %s", what, check_type_text(cx, &a->t));
    return false;
  }
  if (!a->var && !a->lit) {
    if (!check_lit_value(cx, &arg->lit, a->t.dt, &a->lit)) return false;
    prog_keep(&cx->C->prog, a->lit);
    a->t.weak = false;
  }
  return true;
}

static void check_special(Ctx *cx, AstStmt *s, int prim, IrAtom *in) {
  touch_fn_params(cx, s);     /* every function it names is used, even if an earlier one fails */
  RuleCtx r;
  rule_init(&r, &cx->C->prog.arena, cx->mesh, prim_table[prim].name, s->callee_sp, s->params, s->nparams);
  Attrs *at = NEW(cx->C, Attrs);
  at->dtype = -1;
  switch (prim) {
  case P_COND: flow_cond(cx, s, in, &r, at); break;
  case P_FORI_LOOP: flow_fori(cx, s, in, &r, at); break;
  case P_WHILE: flow_while(cx, s, in, &r, at); break;
  case P_SHARD_MAP: smap_eqn(cx, s, in, &r, at); break;
  case P_XMAP: xmap_eqn(cx, s, in, &r, at); break;
  case P_SCAN: flow_scan(cx, s, in, &r, at); break;
  case P_XLA_PMAP: jax_pmap(cx, s, in, &r, at); break;
  case P_OPTIMIZATION_BARRIER: jax_barrier(cx, s, in, &r, at); break;
  case P_DEBUG_CALLBACK: jax_debug_callback(cx, s, in); break;
  case P_DEBUG_PRINT: jax_debug_print(cx, s, in, &r); break;
  case P_SHARD_ALIKE: jax_shard_alike(cx, s, in, &r, at); break;
  case P_PURE_CALLBACK: case P_IO_CALLBACK: jax_callback(cx, s, &r, prim); break;
  default:
    if (jax_is_call(prim)) jax_call(cx, s, prim, in, &r, at);
    else check_bind_bad(cx, s);
    break;
  }
}

/* ---- public interface -------------------------------------------------------------------- */

Checker *check_new(void) {
  Checker *C = mem_calloc(sizeof *C);
  err_defer(mem_free, C);
  prog_init(&C->prog);
  C->main = NEW(C, IrFunc);
  err_undefer(C);
  C->main->name = "<main>";
  C->main->sp = span_none();
  C->main_file = -1;
  return C;
}

void check_free(Checker *C) {
  if (!C) return;
  mem_free(C->slots);
  prog_free(&C->prog);
  mem_free(C);
}

int check_file(Checker *C, int file) {
  int before = diag_count(), defs = C->ndefs;
  if (C->main_file < 0) C->main_file = file;
  AstList *stmts = parse_file(&C->prog.arena, file);
  check_top(C, stmts, file);
  resolve_unchecked(C, defs);
  return diag_count() - before;
}

void check_set_whole_program(Checker *C) { C->whole_program = true; }

IrFunc *check_main(Checker *C) { return C->main; }

CheckMark check_mark(Checker *C) {
  CheckMark m = {C->top, C->main->nbody};
  return m;
}

void check_rollback(Checker *C, CheckMark m) {
  C->top = m.top;
  C->main->nbody = m.nbody;
}

IrVar *check_lookup_var(Checker *C, Str name) {
  Binding *b = check_lookup(C->top, B_VAR, name);
  return b ? b->var : NULL;
}

bool check_has_func(Checker *C, Str name) { return check_lookup(C->top, B_FUNC, name) != NULL; }

int check_names(Checker *C, const char **names, int max, bool *is_func) {
  int n = 0;
  for (Binding *b = C->top; b && n < max; b = b->next) {
    if (b->k == B_MESH) continue;
    bool dup = false;
    for (Binding *c = C->top; c != b; c = c->next)
      if (c->k != B_MESH && str_eq(c->name, b->name)) dup = true;
    if (dup) continue;
    names[n] = arena_strndup(&C->prog.arena, b->name.p, (size_t)b->name.n);
    if (is_func) is_func[n] = b->k == B_FUNC;
    n++;
  }
  return n;
}

/* ---- higher-order equations ----------------------------------------------------------- */

/* A PVal naming a function to call: a defined name or an inline lambda. */
FuncDef *check_func_param(Ctx *cx, RuleCtx *r, const char *key, PVal *v) {
  v = pv_unparen(v);
  if (v && v->k == PV_NAME) {
    Binding *b = check_lookup(cx->scope, B_FUNC, v->s);
    if (b) return b->fn;
    diag_error(v->sp, "unknown function '%.*s'", v->s.n, v->s.p);
    r->failed = true;
    return NULL;
  }
  if (v && v->k == PV_FUNC) {
    FuncDef *fd = NEW(cx->C, FuncDef);
    fd->ast = v->fn;
    fd->name = str_c("lambda");
    fd->scope = cx->scope;
    fd->parent = cx->fn;
    return fd;
  }
  rule_param_error(r, key, "parameter '%s' of %s must be a function (a name or { lambda ... })", key, r->prim);
  return NULL;
}

/* A canonical PVal standing for at->fns[k] (show prints it inline). */
PVal *check_fn_ref(Ctx *cx, int k) {
  PVal *v = NEW(cx->C, PVal);
  v->k = PV_FUNC;
  v->i = k;
  v->sp = span_none();
  return v;
}

void check_add_fn(Ctx *cx, Attrs *at, IrFunc *f) {
  IrFunc **n = NEWN(cx->C, IrFunc *, at->nfns + 1);
  if (at->nfns) memcpy(n, at->fns, sizeof(IrFunc *) * (size_t)at->nfns);
  n[at->nfns++] = f;
  at->fns = n;
}
