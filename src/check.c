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
#include "check.h"
#include "diag.h"
#include "err.h"
#include "parse.h"
#include "show.h"
#include "transpose.h"

/* ---- scopes and function definitions ---------------------------------------- */

typedef enum { B_VAR, B_FUNC, B_MESH } BindKind;

struct FuncDef;

typedef struct Binding {
  BindKind k;
  Str name;
  IrVar *var;
  struct FuncDef *fn;
  Mesh *mesh;
  struct Binding *next;
} Binding;

typedef struct Instance {
  Type *args;
  int nargs;
  Mesh *mesh;
  uint32_t ctrl;
  uint32_t *outvma;        /* results widened to these variance sets, or NULL */
  int noutvma;
  IrFunc *ir;              /* NULL when the instance failed to check */
  struct Instance *next;
} Instance;

typedef struct FuncDef {
  AstFunc *ast;
  Str name;
  Binding *scope;          /* the scope the def saw (closure) */
  IrFunc *parent;          /* the IR function the def stands in */
  Instance *inst;
  bool checking;           /* recursion guard */
  IrFunc *latest;          /* most recent successful instance, for show */
  struct FuncDef *target;  /* linear_transpose: the function transposed */
  IntList lin;             /* linear_transpose: linear=(...) */
  bool lin_given;
  bool resolved;           /* resolved without types (never checked) */
} FuncDef;

typedef struct ImportedFile {
  char *path;
  struct ImportedFile *next;
} ImportedFile;

struct Checker {
  Arena arena;             /* syntax trees and checked program */
  IrFunc *main;
  Binding *top;            /* top-level scope */
  ImportedFile *imports;
  int depth;               /* instantiation depth */
  struct FuncDef **defs;   /* every def checked, for resolve_unchecked */
  const Mesh **def_mesh;   /* the mesh each stood under, if known */
  int ndefs, capdefs;
  bool whole_program;      /* check_set_whole_program */
  int main_file;           /* the file whole_program names (not its imports) */
};

/* The function being checked. */
typedef struct Ctx {
  Checker *C;
  IrFunc *fn;
  Binding *scope;
  Mesh *mesh;              /* axes in scope, or NULL */
  uint32_t ctrl;           /* variance of enclosing predicates */
  uint32_t stmt_pv;        /* variance of the predicate of the statement being bound */
  bool returned;
  AstStmt *ret;            /* readable form: the return statement */
  int file;
} Ctx;

#define NEW(C, T) ((T *)arena_alloc(&(C)->arena, sizeof(T)))
#define NEWN(C, T, n) ((T *)arena_alloc(&(C)->arena, sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))

/* The deepest nesting of function instantiations accepted. */
#define MAX_DEPTH 200

static Binding *bind(Checker *C, Binding *next, BindKind k, Str name) {
  Binding *b = NEW(C, Binding);
  b->k = k;
  b->name = name;
  b->next = next;
  return b;
}

static Binding *lookup(Binding *s, BindKind k, Str name) {
  for (; s; s = s->next)
    if (s->k == k && str_eq(s->name, name)) return s;
  return NULL;
}

/* ---- small helpers ---------------------------------------------------------- */

static char *type_text(Ctx *cx, const Type *t) {
  static char bufs[4][256];
  static int which;
  Buf b = {0};
  err_defer(buf_release, &b);
  show_type(&b, t, cx ? cx->mesh : NULL);
  char *r = bufs[which++ & 3];
  snprintf(r, 256, "%s", buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
  return r;
}

/* A variance set as messages write it: `{i, j}`. */
static void vma_message(Buf *b, uint32_t vma, const Mesh *m) {
  buf_putc(b, '{');
  bool first = true;
  for (int k = 0; m && k < m->naxes; k++)
    if (vma & (1u << k)) {
      buf_printf(b, "%s%.*s", first ? "" : ", ", m->axis[k].n, m->axis[k].p);
      first = false;
    }
  buf_putc(b, '}');
}

static char *vma_text(Ctx *cx, uint32_t vma) {
  static char bufs[4][256];
  static int which;
  Buf b = {0};
  err_defer(buf_release, &b);
  vma_message(&b, vma, cx->mesh);
  char *r = bufs[which++ & 3];
  snprintf(r, 256, "%s", buf_cstr(&b));
  err_undefer(&b);
  buf_free(&b);
  return r;
}

static Type bad_type(void) {
  Type t;
  memset(&t, 0, sizeof t);
  t.bad = true;
  return t;
}

static bool types_equal(const Type *a, const Type *b) {
  return a->dt == b->dt && a->vma == b->vma && type_same_shape(a, b);
}

static IrVar *new_var(Ctx *cx, Str name, Type t, Span sp) {
  IrVar *v = NEW(cx->C, IrVar);
  v->name = name;
  v->t = t;
  v->t.weak = false;
  v->slot = cx->fn->nslots++;
  v->owner = cx->fn;
  v->sp = sp;
  return v;
}

static IrStmt *new_stmt(Ctx *cx, IrStmtKind k, Span sp) {
  IrStmt *s = NEW(cx->C, IrStmt);
  s->k = k;
  s->sp = sp;
  s->whole = sp;
  int col;
  diag_linecol(sp.file, sp.off, &s->line, &col);
  s->prim = -1;
  return s;
}

static void emit(Ctx *cx, IrStmt *s) {
  IrFunc *f = cx->fn;
  if (f->nbody == f->capbody) {
    int nc = f->capbody ? f->capbody * 2 : 16;
    IrStmt **nb = NEWN(cx->C, IrStmt *, nc);
    if (f->nbody) memcpy(nb, f->body, sizeof(IrStmt *) * (size_t)f->nbody);
    f->body = nb;
    f->capbody = nc;
  }
  f->body[f->nbody++] = s;
}

/* Note that `v`, defined in an enclosing function, is read by cx->fn. */
static void note_capture(Ctx *cx, IrVar *v) {
  v->captured = true;
  for (IrFunc *f = cx->fn; f && f != v->owner; f = f->parent) {
    for (int i = 0; i < f->ncaptured; i++)
      if (f->captured[i] == v) return;
    if (f->ncaptured == f->capcaptured) {
      int nc = f->capcaptured ? f->capcaptured * 2 : 4;
      IrVar **n = NEWN(cx->C, IrVar *, nc);
      if (f->ncaptured) memcpy(n, f->captured, sizeof(IrVar *) * (size_t)f->ncaptured);
      f->captured = n;
      f->capcaptured = nc;
    }
    f->captured[f->ncaptured++] = v;
  }
}

/* ---- literals ------------------------------------------------------------------ */

/* Make the Array for a literal of dtype dt; false (with an error) when the
   literal cannot take that dtype. */
static bool lit_value(Ctx *cx, const AstLit *l, int dt, Array **out) {
  (void)cx;
  if (l->k == LIT_FLOAT && !dtype_is_float((DType)dt)) {
    diag_error(l->sp, "float literal %.*s cannot take dtype %s",
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
  if (l->k == LIT_INT && dt == DT_I32 && (l->i > INT32_MAX || l->i < INT32_MIN)) {
    diag_error(l->sp, "integer literal %lld does not fit in i32", (long long)l->i);
    return false;
  }
  *out = l->k == LIT_FLOAT ? arr_scalar_f((DType)dt, l->f) : arr_scalar_i((DType)dt, l->i);
  return true;
}

static int lit_default_dtype(const AstLit *l) {
  return l->k == LIT_FLOAT ? DT_F32 : l->k == LIT_BOOL ? DT_BOOL : DT_I32;
}

/* The checked program keeps literal arrays; they are released with it. */
typedef struct LitKeep {
  Array *a;
  struct LitKeep *next;
} LitKeep;
static LitKeep *kept_literals;

static void unref_array(void *a) { arr_unref(a); }

static Array *keep(Array *a) {
  err_defer(unref_array, a);
  LitKeep *k = mem_alloc(sizeof *k);
  err_undefer(a);
  k->a = a;
  k->next = kept_literals;
  kept_literals = k;
  return a;
}

/* ---- annotations ------------------------------------------------------------- */

/* Resolve a written type; false after an error. */
static bool resolve_type(Ctx *cx, const AstType *at, Type *t, bool *has_vma) {
  memset(t, 0, sizeof *t);
  int dt = dtype_lookup(at->dtype);
  if (dt < 0) {
    diag_error(at->sp, "unknown dtype '%.*s' (dtypes: bool, i32, i64, f32, f64)", at->dtype.n, at->dtype.p);
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
    for (int i = 0; i < at->naxes; i++) {
      int k = -1;
      for (int a = 0; cx->mesh && a < cx->mesh->naxes; a++)
        if (str_eq(cx->mesh->axis[a], at->axes[i])) k = a;
      if (k < 0) {
        diag_error(at->axes_sp, "unbound axis name '%.*s'", at->axes[i].n, at->axes[i].p);
        return false;
      }
      t->vma |= 1u << k;
    }
  }
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
  if (!resolve_type(cx, b->type, &at, &has_vma)) return false;
  if (!has_vma) at.vma = t->vma;
  if (narrow && at.vma != t->vma && vma_jax_narrower(cx, at.vma, t->vma)) {
    Type same = at;
    same.vma = t->vma;
    if (types_equal(&same, t)) {
      *narrow = at.vma;
      *is_narrow = true;
      return true;
    }
  }
  if (!types_equal(&at, t)) {
    diag_error(b->type->sp, "%.*s is annotated %s but %s gives %s", b->name.n, b->name.p,
               type_text(cx, &at), what, type_text(cx, t));
    return false;
  }
  return true;
}

static bool check_annotation(Ctx *cx, const AstBinder *b, Type *t, const char *what) {
  return check_annotation_jax(cx, b, t, what, NULL, NULL);
}

/* ---- operands ------------------------------------------------------------------ */

/* Resolve an argument to an atom.  Literals come out weak (dtype open)
   unless typed.  False after an error. */
static bool resolve_arg(Ctx *cx, const AstArg *a, IrAtom *out) {
  memset(out, 0, sizeof *out);
  out->sp = a->sp;
  if (a->k == ARG_NAME) {
    Binding *b = lookup(cx->scope, B_VAR, a->name);
    if (!b) {
      if (lookup(cx->scope, B_FUNC, a->name))
        diag_error(a->sp, "'%.*s' is a function, not a value", a->name.n, a->name.p);
      else
        diag_error(a->sp, "unknown variable '%.*s'", a->name.n, a->name.p);
      return false;
    }
    out->var = b->var;
    out->t = b->var->t;
    if (b->var->owner != cx->fn) note_capture(cx, b->var);
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
    if (!resolve_type(cx, l->type, &t, &has_vma)) return false;
    if (t.rank != 0) {
      diag_error(l->type->sp, "a literal must have a scalar type, not %s", type_text(cx, &t));
      return false;
    }
    if (!lit_value(cx, l, t.dt, &out->lit)) return false;
    keep(out->lit);
    t.vma = 0;
    out->t = t;
    return true;
  }
  out->t.dt = (uint8_t)lit_default_dtype(l);
  out->t.weak = true;
  return true;
}

/* Give weak literal atoms their final dtype (the rule may have set t.dt). */
static bool finish_literals(Ctx *cx, IrAtom *in, const AstArg *const *args, int n) {
  bool ok = true;
  for (int k = 0; k < n; k++) {
    if (in[k].var || in[k].lit || !args) continue;
    if (!lit_value(cx, &args[k]->lit, in[k].t.dt, &in[k].lit)) { ok = false; continue; }
    keep(in[k].lit);
    in[k].t.weak = false;
  }
  return ok;
}

/* ---- statements: forward declarations ------------------------------------------ */

static void check_stmt(Ctx *cx, AstStmt *s);
static void note_def(Checker *C, struct FuncDef *fd, const Mesh *mesh);
static void resolve_unchecked(Checker *C, int from);
static void check_mesh(Ctx *cx, AstStmt *s);
static bool parse_spec(Ctx *cx, const Mesh *m, PVal *v, Spec *out);
static IrFunc *instantiate(Ctx *cx, struct FuncDef *fd, const Type *args, int nargs, Span call);
static IrFunc *instantiate_w(Ctx *cx, struct FuncDef *fd, const Type *args, int nargs, const uint32_t *outvma,
                             int noutvma, Span call);
static void check_top(Checker *C, AstList *stmts, int file);

/* Bind the outputs of a statement, checking count and annotations. */
static void bind_outs(Ctx *cx, AstStmt *s, IrStmt *st, Type *outt, int nout, const char *what) {
  if (s->nouts != nout) {
    diag_error(s->outs[0]->sp, "%s gives %d result%s, but %d name%s bound", what, nout,
               nout == 1 ? "" : "s", s->nouts, s->nouts == 1 ? " is" : "s are");
    for (int i = 0; i < nout; i++) outt[i] = bad_type();
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
    Type t = outt && ok ? outt[i] : bad_type();
    IrVar *v = new_var(cx, str_eqc(b->name, "_") ? str_c("") : b->name, t, b->sp);
    v->jax_narrow = ok && is_narrow[i];
    v->jax_vma = narrow[i];
    if (st) st->out[i] = v;
    if (!str_eqc(b->name, "_")) {
      cx->scope = bind(cx->C, cx->scope, B_VAR, b->name);
      cx->scope->var = v;
    }
  }
}

static void bind_bad(Ctx *cx, AstStmt *s) {
  for (int i = 0; i < s->nouts; i++) {
    AstBinder *b = s->outs[i];
    IrVar *v = new_var(cx, b->name, bad_type(), b->sp);
    cx->scope = bind(cx->C, cx->scope, B_VAR, b->name);
    cx->scope->var = v;
  }
}

/* ---- the rule context -------------------------------------------------------------- */

struct RuleCtx {
  Ctx *cx;
  const char *prim;
  Span sp;
  AstParam **params;
  int nparams;
  bool *used;
  bool failed;
  IrParam *canon;
  int ncanon, capcanon;
};

bool rule_error(RuleCtx *r, const char *fmt, ...) {
  if (r->failed) return false;
  r->failed = true;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_error(r->sp, "%s", msg);
  return false;
}

static AstParam *find_param(RuleCtx *r, const char *key, int *idx) {
  for (int i = 0; i < r->nparams; i++)
    if (str_eqc(r->params[i]->key, key)) {
      if (idx) *idx = i;
      return r->params[i];
    }
  return NULL;
}

bool rule_param_error(RuleCtx *r, const char *key, const char *fmt, ...) {
  if (r->failed) return false;
  r->failed = true;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  AstParam *p = find_param(r, key, NULL);
  diag_error(p ? span_join(p->sp, p->v->sp) : r->sp, "%s", msg);
  return false;
}

const char *rule_prim_name(RuleCtx *r) { return r->prim; }

static void record(RuleCtx *r, const char *key, PVal *v) {
  for (int i = 0; i < r->ncanon; i++)
    if (!strcmp(r->canon[i].key, key)) { r->canon[i].v = v; return; }
  if (r->ncanon == r->capcanon) {
    int nc = r->capcanon ? r->capcanon * 2 : 8;
    IrParam *n = NEWN(r->cx->C, IrParam, nc);
    if (r->ncanon) memcpy(n, r->canon, sizeof(IrParam) * (size_t)r->ncanon);
    r->canon = n;
    r->capcanon = nc;
  }
  r->canon[r->ncanon].key = key;
  r->canon[r->ncanon].v = v;
  r->ncanon++;
}

/* Fetch a parameter, marking it used; NULL when absent. */
static PVal *get(RuleCtx *r, const char *key) {
  int i;
  AstParam *p = find_param(r, key, &i);
  if (!p) return NULL;
  r->used[i] = true;
  return p->v;
}

static PVal *mk_pv(RuleCtx *r, PVKind k) {
  PVal *v = NEW(r->cx->C, PVal);
  v->k = k;
  v->sp = span_none();
  return v;
}

static PVal *mk_int(RuleCtx *r, int64_t x) {
  PVal *v = mk_pv(r, PV_INT);
  v->i = x;
  v->f = (double)x;
  return v;
}

/* A one-element tuple written `(x)` stands for x. */
static PVal *unparen(PVal *v) {
  while (v && v->k == PV_TUPLE && v->paren_only) v = v->items[0];
  return v;
}

/* Accepted (and ignored) parameters count as used. */
bool rule_has(RuleCtx *r, const char *key) { return get(r, key) != NULL; }

int rule_number_kind(RuleCtx *r, const char *key) {
  AstParam *p = find_param(r, key, NULL);
  PVal *v = p ? unparen(p->v) : NULL;
  return !v ? -1 : v->k == PV_BOOL ? DT_BOOL : v->k == PV_INT ? DT_I32 : v->k == PV_FLOAT ? DT_F32 : -1;
}

int64_t *rule_alloc_ints(RuleCtx *r, int n) { return NEWN(r->cx->C, int64_t, n); }

static bool missing(RuleCtx *r, const char *key) {
  return rule_error(r, "%s requires the parameter '%s'", r->prim, key);
}

bool rule_int(RuleCtx *r, const char *key, bool required, int64_t dflt, int64_t *out) {
  PVal *v = unparen(get(r, key));
  if (!v) {
    if (required) return missing(r, key);
    *out = dflt;
    record(r, key, mk_int(r, dflt));
    return true;
  }
  if (v->k != PV_INT) return rule_param_error(r, key, "parameter '%s' of %s must be an integer", key, r->prim);
  *out = v->i;
  record(r, key, v);
  return true;
}


bool rule_axis_index(RuleCtx *r, const char *key, int64_t *v, int rank) {
  if (*v < -(int64_t)rank || *v >= rank) return true;   /* the rule reports it, with its own bounds */
  if (*v < 0) *v += rank;
  record(r, key, mk_int(r, *v));
  return true;
}

bool rule_float(RuleCtx *r, const char *key, bool required, double dflt, double *out) {
  PVal *v = unparen(get(r, key));
  if (!v) {
    if (required) return missing(r, key);
    *out = dflt;
    PVal *d = mk_pv(r, PV_FLOAT);
    d->f = dflt;
    record(r, key, d);
    return true;
  }
  if (v->k != PV_INT && v->k != PV_FLOAT && v->k != PV_BOOL)
    return rule_param_error(r, key, "parameter '%s' of %s must be a number", key, r->prim);
  *out = v->k == PV_FLOAT ? v->f : (double)v->i;
  record(r, key, v);
  return true;
}

bool rule_bool(RuleCtx *r, const char *key, bool dflt, bool *out) {
  PVal *v = unparen(get(r, key));
  if (!v) {
    *out = dflt;
    PVal *d = mk_pv(r, PV_BOOL);
    d->i = dflt;
    record(r, key, d);
    return true;
  }
  if (v->k != PV_BOOL && !(v->k == PV_INT && (v->i == 0 || v->i == 1)))
    return rule_param_error(r, key, "parameter '%s' of %s must be True or False", key, r->prim);
  *out = v->i != 0;
  record(r, key, v);
  return true;
}

bool rule_dtype(RuleCtx *r, const char *key, bool required, int dflt, int *out) {
  PVal *v = unparen(get(r, key));
  if (!v || v->k == PV_NONE) {
    if (!v && required) return missing(r, key);
    if (v && dflt >= 0 && required) return missing(r, key);
    *out = dflt;
    if (dflt >= 0) {
      PVal *d = mk_pv(r, PV_NAME);
      d->s = str_c(dtype_names[dflt]);
      record(r, key, d);
    } else {
      record(r, key, mk_pv(r, PV_NONE));
    }
    return true;
  }
  int dt = (v->k == PV_NAME || v->k == PV_STR) ? dtype_lookup(v->s) : -1;
  if (dt < 0) return rule_param_error(r, key, "parameter '%s' of %s must be a dtype (bool, i32, i64, f32, f64)", key, r->prim);
  *out = dt;
  PVal *d = mk_pv(r, PV_NAME);
  d->s = str_c(dtype_names[dt]);
  record(r, key, d);
  return true;
}

/* Read a tuple/list of ints from v into out. */
static bool ints_of(RuleCtx *r, const char *key, PVal *v, IntList *out) {
  v = unparen(v);
  if (v->k == PV_INT) {
    out->n = 1;
    out->v = rule_alloc_ints(r, 1);
    out->v[0] = v->i;
    return true;
  }
  if (v->k == PV_NONE) {
    out->n = 0;
    out->v = rule_alloc_ints(r, 1);
    return true;
  }
  if (v->k != PV_TUPLE && v->k != PV_LIST)
    return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of integers", key, r->prim);
  out->n = v->n;
  out->v = rule_alloc_ints(r, v->n);
  for (int i = 0; i < v->n; i++) {
    PVal *e = unparen(v->items[i]);
    if (e->k != PV_INT)
      return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of integers", key, r->prim);
    out->v[i] = e->i;
  }
  return true;
}

static PVal *tuple_of_ints(RuleCtx *r, const int64_t *x, int n, PVKind k) {
  PVal *t = mk_pv(r, k);
  t->n = n;
  t->items = NEWN(r->cx->C, PVal *, n);
  for (int i = 0; i < n; i++) t->items[i] = mk_int(r, x[i]);
  return t;
}

void rule_set_ints(RuleCtx *r, const char *key, const IntList *l) { record(r, key, tuple_of_ints(r, l->v, l->n, PV_TUPLE)); }

bool rule_ints(RuleCtx *r, const char *key, bool required, IntList *out) {
  PVal *v = get(r, key);
  if (!v) {
    if (required) return missing(r, key);
    out->n = 0;
    out->v = rule_alloc_ints(r, 1);
    record(r, key, mk_pv(r, PV_NONE));
    return true;
  }
  if (!ints_of(r, key, v, out)) return false;
  record(r, key, unparen(v)->k == PV_NONE ? unparen(v) : tuple_of_ints(r, out->v, out->n, PV_TUPLE));
  return true;
}

bool rule_int_tuples(RuleCtx *r, const char *key, bool required, int width, IntList *out) {
  PVal *v = unparen(get(r, key));
  if (!v) {
    if (required) return missing(r, key);
    out->n = 0;
    out->v = rule_alloc_ints(r, 1);
    PVal *e = mk_pv(r, PV_TUPLE);
    record(r, key, e);
    return true;
  }
  if (v->k != PV_TUPLE && v->k != PV_LIST)
    return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of %d-tuples of integers", key, r->prim, width);
  out->n = v->n * width;
  out->v = rule_alloc_ints(r, out->n);
  PVal *canon = mk_pv(r, PV_TUPLE);
  canon->n = v->n;
  canon->items = NEWN(r->cx->C, PVal *, v->n);
  for (int i = 0; i < v->n; i++) {
    IntList one;
    PVal *e = unparen(v->items[i]);
    if ((e->k != PV_TUPLE && e->k != PV_LIST) || !ints_of(r, key, e, &one) || one.n != width)
      return rule_param_error(r, key, "parameter '%s' of %s must be a tuple of %d-tuples of integers", key, r->prim, width);
    memcpy(out->v + i * width, one.v, sizeof(int64_t) * (size_t)width);
    canon->items[i] = tuple_of_ints(r, one.v, width, PV_TUPLE);
  }
  record(r, key, canon);
  return true;
}

/* Sugar spelled out: records `key` as the tuple of width-tuples in l and
   drops `sugar`, the parameter l was computed from, so that `show` prints
   the canonical form (ppermute's shift=k becomes its perm). */
void rule_respell_int_tuples(RuleCtx *r, const char *sugar, const char *key, int width, const IntList *l) {
  PVal *canon = mk_pv(r, PV_TUPLE);
  canon->n = l->n / width;
  canon->items = NEWN(r->cx->C, PVal *, canon->n ? canon->n : 1);
  for (int i = 0; i < canon->n; i++) canon->items[i] = tuple_of_ints(r, l->v + i * width, width, PV_TUPLE);
  for (int i = 0; i < r->ncanon; i++)
    if (!strcmp(r->canon[i].key, sugar)) {
      memmove(&r->canon[i], &r->canon[i + 1], sizeof(IrParam) * (size_t)(r->ncanon - i - 1));
      r->ncanon--;
      break;
    }
  record(r, key, canon);
}

bool rule_dimnums(RuleCtx *r, const char *key, IntList out[4]) {
  PVal *v = unparen(get(r, key));
  if (!v) return missing(r, key);
  const char *msg = "dimension_numbers must read (([lhs contracting], [rhs contracting]), ([lhs batch], [rhs batch]))";
  if ((v->k != PV_TUPLE && v->k != PV_LIST) || v->n != 2) return rule_param_error(r, key, "%s", msg);
  PVal *canon = mk_pv(r, PV_TUPLE);
  canon->n = 2;
  canon->items = NEWN(r->cx->C, PVal *, 2);
  for (int g = 0; g < 2; g++) {
    PVal *p = unparen(v->items[g]);
    if ((p->k != PV_TUPLE && p->k != PV_LIST) || p->n != 2) return rule_param_error(r, key, "%s", msg);
    PVal *pc = mk_pv(r, PV_TUPLE);
    pc->n = 2;
    pc->items = NEWN(r->cx->C, PVal *, 2);
    for (int s = 0; s < 2; s++) {
      PVal *e = unparen(p->items[s]);
      if (e->k != PV_TUPLE && e->k != PV_LIST && e->k != PV_INT) return rule_param_error(r, key, "%s", msg);
      if (!ints_of(r, key, e, &out[g * 2 + s])) return false;
      pc->items[s] = tuple_of_ints(r, out[g * 2 + s].v, out[g * 2 + s].n, PV_LIST);
    }
    canon->items[g] = pc;
  }
  record(r, key, canon);
  return true;
}

static void rule_init(RuleCtx *r, Ctx *cx, const char *prim, Span sp, AstParam **params, int nparams) {
  memset(r, 0, sizeof *r);
  r->cx = cx;
  r->prim = prim;
  r->sp = sp;
  r->params = params;
  r->nparams = nparams;
  r->used = NEWN(cx->C, bool, nparams);
}

/* Report the first parameter the rule did not read. */
static bool rule_unused(RuleCtx *r, const char *known) {
  for (int i = 0; i < r->nparams; i++) {
    if (r->used[i]) continue;
    AstParam *p = r->params[i];
    for (int j = 0; j < i; j++)
      if (str_eq(r->params[j]->key, p->key)) {
        diag_error(p->sp, "parameter '%.*s' given twice", p->key.n, p->key.p);
        return false;
      }
    if (known && *known)
      diag_error(p->sp, "%s has no parameter '%.*s' (its parameters: %s)", r->prim, p->key.n, p->key.p, known);
    else
      diag_error(p->sp, "%s takes no parameters, but '%.*s' was given", r->prim, p->key.n, p->key.p);
    return false;
  }
  return true;
}

/* ---- variance ---------------------------------------------------------------------- */

/* A pbroadcast equation lifting atom `a` to variance `to`; returns the new atom. */
static IrAtom lift(Ctx *cx, IrAtom a, uint32_t to, Span sp) {
  if ((!a.var && !a.lit) || (a.t.vma | to) == a.t.vma) return a;
  uint32_t add = to & ~a.t.vma;
  IrStmt *st = new_stmt(cx, IS_EQN, sp);
  st->prim = P_PBROADCAST;
  st->inserted = true;
  st->at = NEW(cx->C, Attrs);
  st->at->dtype = -1;
  st->at->axmask = add;
  for (int k = 0; k < cx->mesh->naxes; k++)
    if (add & (1u << k)) st->at->axes[st->at->naxes++] = (uint8_t)k;
  /* canonical parameter: axes=(...) */
  PVal *t = NEW(cx->C, PVal);
  t->k = PV_TUPLE;
  t->n = st->at->naxes;
  t->items = NEWN(cx->C, PVal *, t->n);
  for (int k = 0; k < t->n; k++) {
    PVal *e = NEW(cx->C, PVal);
    e->k = PV_NAME;
    e->s = cx->mesh->axis[st->at->axes[k]];
    t->items[k] = e;
  }
  st->params = NEWN(cx->C, IrParam, 1);
  st->params[0].key = "axes";
  st->params[0].v = t;
  st->nparams = 1;
  st->in = NEWN(cx->C, IrAtom, 1);
  st->in[0] = a;
  st->nin = 1;
  Type nt = a.t;
  nt.vma = a.t.vma | to;
  IrVar *v = new_var(cx, a.var ? a.var->name : str_c(""), nt, sp);
  st->out = NEWN(cx->C, IrVar *, 1);
  st->out[0] = v;
  st->nout = 1;
  emit(cx, st);
  /* the result is the new variable alone: an atom is a variable or a
     literal, never both (the evaluator reads a literal first) */
  IrAtom r = a;
  r.var = v;
  r.lit = NULL;
  r.t = nt;
  return r;
}

/* Apply a primitive's variance rule: lift operands, set result variance. */
static bool apply_vrule(Ctx *cx, int prim, IrAtom *in, int nin, Attrs *at, Type *out, int nout, Span sp) {
  VarRule vr = prim_table[prim].vrule;
  uint32_t u = 0;
  for (int k = 0; k < nin; k++) u |= in[k].t.vma;
  uint32_t res = 0;
  switch (vr) {
  case VR_ELEM:      /* a literal takes any variance: it is not lifted */
    for (int k = 0; k < nin; k++)
      if (in[k].var) in[k] = lift(cx, in[k], u, sp);
    res = u;
    break;
  case VR_NULLARY:
    res = 0;
    break;
  case VR_REDUCE:
    in[0] = lift(cx, in[0], in[0].t.vma | at->axmask, sp);
    res = in[0].t.vma & ~at->axmask;
    break;
  case VR_GATHER_INV:
    in[0] = lift(cx, in[0], in[0].t.vma | at->axmask, sp);
    res = in[0].t.vma & ~at->axmask;
    break;
  case VR_VARY:
    in[0] = lift(cx, in[0], in[0].t.vma | at->axmask, sp);
    res = in[0].t.vma | at->axmask;
    break;
  case VR_PBCAST:
  case VR_PSCATTER:
    if (in[0].t.vma & at->axmask) {
      diag_error(sp, "%s needs an operand invariant along %s, but %.*s varies over %s",
                 prim_table[prim].name, vma_text(cx, at->axmask & in[0].t.vma),
                 in[0].var ? in[0].var->name.n : 7, in[0].var ? in[0].var->name.p : "operand",
                 vma_text(cx, in[0].t.vma));
      return false;
    }
    res = in[0].t.vma | at->axmask;
    break;
  case VR_AXIS_INDEX:
    res = at->axmask;
    break;
  case VR_SPECIAL:
    return true;
  }
  for (int k = 0; k < nout; k++) out[k].vma = res;
  return true;
}

/* ---- collectives' axis parameters --------------------------------------------------- */

/* Read an axis-name parameter (one name or a tuple of names) into at->axes. */
bool rule_axes(RuleCtx *r, const char *key, bool required, Attrs *at) {
  PVal *v = get(r, key);
  Ctx *cx = r->cx;
  if (!v) {
    if (required) return missing(r, key);
    return true;
  }
  PVal *one[1];
  PVal **items;
  int n;
  PVal *u = unparen(v);
  if (u->k == PV_TUPLE || u->k == PV_LIST) { items = u->items; n = u->n; }
  else { one[0] = u; items = one; n = 1; }
  PVal *canon = mk_pv(r, PV_TUPLE);
  canon->items = NEWN(cx->C, PVal *, n);
  canon->n = n;
  for (int i = 0; i < n; i++) {
    PVal *e = unparen(items[i]);
    if (e->k != PV_NAME && e->k != PV_STR)
      return rule_param_error(r, key, "parameter '%s' of %s must name mesh axes", key, r->prim);
    int k = -1;
    for (int a = 0; cx->mesh && a < cx->mesh->naxes; a++)
      if (str_eq(cx->mesh->axis[a], e->s)) k = a;
    if (k < 0) {
      r->failed = true;
      diag_error(e->sp.file >= 0 ? e->sp : r->sp, "unbound axis name '%.*s'%s", e->s.n, e->s.p,
                 cx->mesh ? "" : " (collectives run inside a shard_map)");
      return false;
    }
    if (at->axmask & (1u << k))
      return rule_param_error(r, key, "axis '%.*s' named twice", e->s.n, e->s.p);
    at->axes[at->naxes++] = (uint8_t)k;
    at->axmask |= 1u << k;
    PVal *c = mk_pv(r, PV_NAME);
    c->s = cx->mesh->axis[k];
    canon->items[i] = c;
  }
  record(r, key, canon);
  return true;
}

int64_t rule_group_size(RuleCtx *r, const Attrs *at) {
  int64_t n = 1;
  for (int k = 0; k < at->naxes; k++) n *= r->cx->mesh->size[at->axes[k]];
  return n;
}

/* Higher-order equations and shard_map (below). */
static void check_special(Ctx *cx, AstStmt *s, int prim, IrAtom *in);
static IrFunc *shard_map_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call);
static void shard_map_define(Ctx *cx, FuncDef *fd);
static IrFunc *transpose_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call);
static void transpose_define(Ctx *cx, FuncDef *fd);

/* ---- equations ------------------------------------------------------------------------ */

typedef struct EqnIn {
  IrAtom *in;
  int nin;
  const AstArg *const *args;
} EqnIn;

/* Resolve all operands; false if any failed or is bad (errors reported). */
static bool resolve_args(Ctx *cx, AstStmt *s, IrAtom *in, bool *silent) {
  bool ok = true;
  *silent = false;
  for (int k = 0; k < s->nargs; k++) {
    if (!resolve_arg(cx, s->args[k], &in[k])) return false;   /* one error per statement */
    else if (in[k].t.bad) { ok = false; *silent = true; }
  }
  if (!ok && !*silent) *silent = false;
  return ok;
}

static void check_prim_eqn(Ctx *cx, AstStmt *s, int prim) {
  const PrimInfo *pi = &prim_table[prim];
  IrAtom *in = NEWN(cx->C, IrAtom, s->nargs);
  bool silent;
  if (!resolve_args(cx, s, in, &silent)) { bind_bad(cx, s); return; }
  if (s->nargs < pi->nin_min || (pi->nin_max >= 0 && s->nargs > pi->nin_max)) {
    if (pi->nin_min == pi->nin_max)
      diag_error(s->callee_sp, "%s takes %d operand%s, but %d %s given", pi->name, pi->nin_min,
                 pi->nin_min == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
    else
      diag_error(s->callee_sp, "%s takes at least %d operand%s, but %d %s given", pi->name, pi->nin_min,
                 pi->nin_min == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
    bind_bad(cx, s);
    return;
  }
  if (pi->vrule == VR_SPECIAL) {
    check_special(cx, s, prim, in);
    return;
  }
  RuleCtx r;
  rule_init(&r, cx, pi->name, s->callee_sp, s->params, s->nparams);
  Attrs *at = NEW(cx->C, Attrs);
  at->dtype = -1;
  Type *intypes = NEWN(cx->C, Type, s->nargs);
  for (int k = 0; k < s->nargs; k++) intypes[k] = in[k].t;
  int nout = pi->nout > 0 ? pi->nout : 1;
  Type *out = NEWN(cx->C, Type, nout);
  bool ok = pi->shape(&r, intypes, s->nargs, at, out);
  if (ok && !r.failed) ok = rule_unused(&r, pi->params);
  else ok = false;
  if (!ok) { bind_bad(cx, s); return; }
  for (int k = 0; k < s->nargs; k++) in[k].t.dt = intypes[k].dt;
  if (!finish_literals(cx, in, (const AstArg *const *)s->args, s->nargs)) { bind_bad(cx, s); return; }
  if (vrule_communicates(prim_table[prim].vrule) && (at->axmask & cx->ctrl)) {
    diag_error(s->callee_sp, "%s over %s inside control flow whose predicate varies over %s: "
               "instances would disagree on whether to communicate (it would hang on real hardware)",
               pi->name, vma_text(cx, at->axmask), vma_text(cx, at->axmask & cx->ctrl));
    bind_bad(cx, s);
    return;
  }
  if (cx->mesh || prim_table[prim].vrule != VR_ELEM) {
    if (!apply_vrule(cx, prim, in, s->nargs, at, out, nout, s->callee_sp)) { bind_bad(cx, s); return; }
  }
  IrStmt *st = new_stmt(cx, IS_EQN, s->callee_sp);
  st->whole = s->sp;
  st->line = s->line;
  st->prim = prim;
  st->at = at;
  st->params = r.canon;
  st->nparams = r.ncanon;
  st->in = in;
  st->nin = s->nargs;
  bind_outs(cx, s, st, out, nout, pi->name);
  emit(cx, st);
}

static void check_call(Ctx *cx, AstStmt *s, FuncDef *fd) {
  IrAtom *in = NEWN(cx->C, IrAtom, s->nargs);
  bool silent;
  if (!resolve_args(cx, s, in, &silent)) { bind_bad(cx, s); return; }
  if (s->nparams) {
    diag_error(s->params[0]->sp, "'%.*s' is a function: it takes no parameters in brackets", fd->name.n, fd->name.p);
    bind_bad(cx, s);
    return;
  }
  Type *at = NEWN(cx->C, Type, s->nargs);
  for (int k = 0; k < s->nargs; k++) {
    in[k].t.weak = false;
    at[k] = in[k].t;
  }
  if (!finish_literals(cx, in, (const AstArg *const *)s->args, s->nargs)) { bind_bad(cx, s); return; }
  IrFunc *f = instantiate(cx, fd, at, s->nargs, s->callee_sp);
  if (!f) { bind_bad(cx, s); return; }
  IrStmt *st = new_stmt(cx, IS_EQN, s->callee_sp);
  st->whole = s->sp;
  st->line = s->line;
  st->callee = f;
  st->in = in;
  st->nin = s->nargs;
  Type *out = NEWN(cx->C, Type, f->nouts);
  for (int k = 0; k < f->nouts; k++) out[k] = f->outs[k].t;
  char what[256];
  snprintf(what, sizeof what, "%.*s", fd->name.n, fd->name.p);
  bind_outs(cx, s, st, out, f->nouts, what);
  emit(cx, st);
}

static void check_eqn(Ctx *cx, AstStmt *s) {
  Binding *b = lookup(cx->scope, B_FUNC, s->callee);
  if (b) { check_call(cx, s, b->fn); return; }
  int prim = prim_lookup(s->callee);
  if (prim >= 0) { check_prim_eqn(cx, s, prim); return; }
  b = lookup(cx->scope, B_VAR, s->callee);
  if (b && !s->has_params && s->nargs == 0) {       /* y = x */
    IrVar *v = b->var;
    if (v->owner != cx->fn) note_capture(cx, v);
    if (s->nouts != 1) {
      diag_error(s->outs[1]->sp, "'%.*s' is one value; it cannot be bound to %d names", s->callee.n, s->callee.p, s->nouts);
      bind_bad(cx, s);
      return;
    }
    if (!check_annotation(cx, s->outs[0], &v->t, "the value")) { bind_bad(cx, s); return; }
    cx->scope = bind(cx->C, cx->scope, B_VAR, s->outs[0]->name);
    cx->scope->var = v;
    return;
  }
  for (IrFunc *f = cx->fn; !b && f && f != cx->C->main; f = f->parent)
    if (f->name && str_eqc(s->callee, f->name)) {   /* a function does not see itself */
      diag_error(s->callee_sp, "%.*s calls itself: recursion is not supported (use while or fori_loop)", s->callee.n, s->callee.p);
      bind_bad(cx, s);
      return;
    }
  if (b)
    diag_error(s->callee_sp, "'%.*s' is a value, not a function or primitive", s->callee.n, s->callee.p);
  else
    diag_error(s->callee_sp, "unknown primitive or function '%.*s'", s->callee.n, s->callee.p);
  bind_bad(cx, s);
}

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
  if (!lit_value(cx, &a->lit, arr->dt, &one)) { *ok = false; return; }
  memcpy((char *)arr->data + *pos * dtype_sizes[arr->dt], one->data, dtype_sizes[arr->dt]);
  arr_unref(one);
  (*pos)++;
}

static void check_lit_stmt(Ctx *cx, AstStmt *s) {
  if (s->nouts != 1) {
    diag_error(s->outs[1]->sp, "a literal is one value; it cannot be bound to %d names", s->nouts);
    bind_bad(cx, s);
    return;
  }
  LitShape ls;
  memset(&ls, 0, sizeof ls);
  ls.rank = -1;
  for (int i = 0; i < SHM_MAXRANK; i++) ls.shape[i] = -1;
  ls.ok = true;
  lit_shape(s->alit, 0, &ls);
  if (!ls.ok) { bind_bad(cx, s); return; }
  if (ls.any_bool && (ls.any_float || ls.any_int)) {
    diag_error(s->alit->sp, "array literal mixes booleans and numbers");
    bind_bad(cx, s);
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
    if (!resolve_type(cx, lty, &lt, &lv)) { bind_bad(cx, s); return; }
    if (lt.rank != 0) {
      diag_error(lty->sp, "a literal must have a scalar type, not %s", type_text(cx, &lt));
      bind_bad(cx, s);
      return;
    }
    t.dt = lt.dt;
  }
  AstBinder *b = s->outs[0];
  if (b->type) {
    Type an;
    bool has_vma;
    if (!resolve_type(cx, b->type, &an, &has_vma)) { bind_bad(cx, s); return; }
    if (!type_same_shape(&an, &t)) {
      diag_error(b->type->sp, "%.*s is annotated %s but the literal has shape %s", b->name.n, b->name.p,
                 type_text(cx, &an), type_text(cx, &t));
      bind_bad(cx, s);
      return;
    }
    if (has_vma && an.vma) {
      diag_error(b->type->axes_sp, "a literal is invariant: it cannot have the variance %s", vma_text(cx, an.vma));
      bind_bad(cx, s);
      return;
    }
    if (lty && an.dt != t.dt) {
      diag_error(b->type->sp, "%.*s is annotated %s but the literal is %s", b->name.n, b->name.p,
                 type_text(cx, &an), type_text(cx, &t));
      bind_bad(cx, s);
      return;
    }
    t.dt = an.dt;
  }
  Array *arr = arr_new((DType)t.dt, t.rank, t.shape);
  int64_t pos = 0;
  bool ok = true;
  err_defer(unref_array, arr);
  lit_fill(cx, s->alit, arr, &pos, &ok);
  err_undefer(arr);
  if (!ok) { arr_unref(arr); bind_bad(cx, s); return; }
  keep(arr);
  IrStmt *st = new_stmt(cx, IS_CONST, s->sp);
  st->line = s->line;
  st->value = arr;
  st->out = NEWN(cx->C, IrVar *, 1);
  st->nout = 1;
  IrVar *v = new_var(cx, str_eqc(b->name, "_") ? str_c("") : b->name, t, b->sp);
  st->out[0] = v;
  if (!str_eqc(b->name, "_")) {
    cx->scope = bind(cx->C, cx->scope, B_VAR, b->name);
    cx->scope->var = v;
  }
  emit(cx, st);
}

/* ---- print, show, mesh, import ------------------------------------------------------- */

static void check_print(Ctx *cx, AstStmt *s) {
  IrStmt *st = new_stmt(cx, IS_PRINT, s->sp);
  st->line = s->line;
  st->items = NEWN(cx->C, IrPrintItem, s->nargs);
  st->nitems = s->nargs;
  for (int k = 0; k < s->nargs; k++) {
    AstArg *a = s->args[k];
    if (a->k == ARG_STR) {
      st->items[k].text = a->name;
      continue;
    }
    if (!resolve_arg(cx, a, &st->items[k].atom)) return;
    if (st->items[k].atom.t.bad) return;
    if (!st->items[k].atom.var && !st->items[k].atom.lit) {
      if (!lit_value(cx, &a->lit, st->items[k].atom.t.dt, &st->items[k].atom.lit)) return;
      keep(st->items[k].atom.lit);
      st->items[k].atom.t.weak = false;
    }
  }
  emit(cx, st);
}

static void check_show(Ctx *cx, AstStmt *s) {
  Binding *b = lookup(cx->scope, B_FUNC, s->name);
  if (!b) {
    if (lookup(cx->scope, B_VAR, s->name))
      diag_error(s->name_sp, "'%.*s' is a value; show prints functions (print prints values)", s->name.n, s->name.p);
    else
      diag_error(s->name_sp, "unknown function '%.*s'", s->name.n, s->name.p);
    return;
  }
  FuncDef *fd = b->fn;
  if (!fd->latest) {
    bool failed = false;
    for (Instance *i = fd->inst; i; i = i->next) if (!i->ir) failed = true;
    if (!failed)
      diag_error(s->name_sp, "cannot show '%.*s' yet: its parameters are not all annotated and it has not been called",
                 s->name.n, s->name.p);
    return;
  }
  IrStmt *st = new_stmt(cx, IS_SHOW, s->sp);
  st->line = s->line;
  Buf out = {0};
  err_defer(buf_release, &out);
  char name[256];
  snprintf(name, sizeof name, "%.*s", fd->name.n, fd->name.p);
  show_func(&out, fd->latest, name);
  st->text = arena_strndup(&cx->C->arena, buf_cstr(&out), out.n);
  err_undefer(&out);
  buf_free(&out);
  emit(cx, st);
}

static void check_mesh(Ctx *cx, AstStmt *s) {
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
  cx->scope = bind(cx->C, cx->scope, B_MESH, s->name);
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
  snprintf(rel, sizeof rel, "%.*s%.*s", slash ? (int)(slash - from + 1) : 0, from, s->name.n, s->name.p);
  const char *cands[4];
  char c2[4096], c3[4096];
  int nc = 0;
  cands[nc++] = rel;
  const char *env = getenv("SHMAPI_STDLIB");
  if (env) { snprintf(c2, sizeof c2, "%s/%.*s", env, s->name.n, s->name.p); cands[nc++] = c2; }
  snprintf(c3, sizeof c3, "%s/%.*s", SHM_SOURCE_STDLIB, s->name.n, s->name.p);
  cands[nc++] = c3;
  static char c4[4096];
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
  imp->path = arena_strndup(&cx->C->arena, path, strlen(path));
  imp->next = cx->C->imports;
  cx->C->imports = imp;
  int file = parse_load(found, s->name_sp);
  if (file < 0) return;
  AstList *stmts = parse_file(&cx->C->arena, file);
  cx->C->top = cx->scope;
  check_top(cx->C, stmts, file);
  cx->scope = cx->C->top;
}

/* ---- functions ------------------------------------------------------------------------ */

static bool all_annotated(const AstFunc *f) {
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

/* Resolve a function's results (readable: the return; lambda: `in (...)`). */
static bool resolve_outs(Ctx *cx, AstFunc *af) {
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
  IrFunc *f = cx->fn;
  f->outs = NEWN(cx->C, IrAtom, n);
  f->nouts = n;
  bool ok = true;
  for (int i = 0; i < n; i++) {
    if (!resolve_arg(cx, outs[i], &f->outs[i])) { ok = false; break; }   /* one error per statement */
    if (f->outs[i].t.bad) { ok = false; continue; }
    if (!f->outs[i].var && !f->outs[i].lit) {
      if (!lit_value(cx, &outs[i]->lit, f->outs[i].t.dt, &f->outs[i].lit)) { ok = false; continue; }
      keep(f->outs[i].lit);
      f->outs[i].t.weak = false;
    }
  }
  return ok;
}

static bool same_types(const Type *a, const Type *b, int n) {
  for (int i = 0; i < n; i++)
    if (!types_equal(&a[i], &b[i])) return false;
  return true;
}

static IrFunc *instantiate(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  return instantiate_w(cx, fd, args, nargs, NULL, 0, call);
}

static bool same_outvma(const Instance *i, const uint32_t *outvma, int n) {
  if (!outvma || !i->outvma) return !outvma && !i->outvma;
  return i->noutvma == n && !memcmp(i->outvma, outvma, sizeof(uint32_t) * (size_t)n);
}

/* Check a function body for given argument types.  With `outvma`, its
   results are widened to those variance sets by pbroadcasts at its end
   (a cond branch or a loop body whose result varies over fewer axes than
   the construct's), so the instance is a distinct one. */
static IrFunc *instantiate_w(Ctx *cx, FuncDef *fd, const Type *args, int nargs, const uint32_t *outvma,
                             int noutvma, Span call) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  Mesh *mesh = cx->mesh;
  /* a checked instance is reused; one that failed is checked again, so
     that each statement calling it reports why (a REPL input after the
     one that first failed; in a file the repeated errors, at the same
     places, are printed once) */
  for (Instance *i = fd->inst; i; i = i->next)
    if (i->ir && i->nargs == nargs && i->mesh == mesh && i->ctrl == cx->ctrl && same_types(i->args, args, nargs) &&
        same_outvma(i, outvma, noutvma))
      return i->ir;
  if (af->form == FN_TRANSPOSE) return transpose_instance(cx, fd, args, nargs, call);
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
  if (af->has_deco) return shard_map_instance(cx, fd, args, nargs, call);
  Instance *inst = NEW(C, Instance);
  inst->args = NEWN(C, Type, nargs);
  memcpy(inst->args, args, sizeof(Type) * (size_t)nargs);
  inst->nargs = nargs;
  inst->mesh = mesh;
  inst->ctrl = cx->ctrl;
  if (outvma) {
    inst->outvma = NEWN(C, uint32_t, noutvma);
    memcpy(inst->outvma, outvma, sizeof(uint32_t) * (size_t)noutvma);
    inst->noutvma = noutvma;
  }
  IrFunc *f = NEW(C, IrFunc);
  f->name = arena_strndup(&C->arena, fd->name.p, (size_t)fd->name.n);
  f->sp = af->sp;
  f->ast = af;
  f->parent = fd->parent;
  f->mesh = mesh;
  f->end_line = af->end_line;
  Ctx sub;
  memset(&sub, 0, sizeof sub);
  sub.C = C;
  sub.fn = f;
  sub.scope = fd->scope;
  sub.mesh = mesh;
  sub.ctrl = cx->ctrl;
  sub.file = af->sp.file;
  int errs = diag_count(), argerrs = 0;   /* argerrs: reported at the call itself */
  bool ok = true;
  /* lambda constvars name variables of the enclosing scope */
  for (int i = 0; i < af->nconsts; i++) {
    AstBinder *b = af->consts[i];
    Binding *v = lookup(sub.scope, B_VAR, b->name);
    if (!v) {
      diag_error(b->sp, "unknown variable '%.*s' (a lambda's constants name variables in scope)", b->name.n, b->name.p);
      ok = false;
      continue;
    }
    uint32_t nv;
    bool narrow = false;
    if (!check_annotation_jax(&sub, b, &v->var->t, "the enclosing scope", &nv, &narrow)) ok = false;
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
      if (!resolve_type(&sub, b->type, &an, &has_vma)) { ok = false; t = bad_type(); }
      else {
        if (!has_vma) an.vma = t.vma;
        bool narrow = !t.bad && vma_jax_narrower(&sub, an.vma, t.vma);
        if (narrow) {        /* JAX's annotation under a varying predicate: keep the sound type */
          jax_vma = an.vma;
          an.vma = t.vma;
        }
        if (!types_equal(&an, &t) && !t.bad) {
          if (!argerrs++)   /* the first mismatch only: one error per statement */
            diag_error(call, "argument %d of %.*s is %s, but the parameter %.*s is annotated %s", i + 1,
                       fd->name.n, fd->name.p, type_text(&sub, &t), b->name.n, b->name.p, type_text(&sub, &an));
          ok = false;
        }
        if (t.bad) t = an;
      }
    }
    f->params[i] = new_var(&sub, b->name, t, b->sp);
    f->params[i]->jax_narrow = jax_vma != UINT32_MAX;
    f->params[i]->jax_vma = jax_vma;
    if (!str_eqc(b->name, "_")) {
      sub.scope = bind(C, sub.scope, B_VAR, b->name);
      sub.scope->var = f->params[i];
    }
  }
  if (ok) {
    fd->checking = true;
    C->depth++;
    check_body(&sub, af->body, af->nbody);
    C->depth--;
    fd->checking = false;
    if (af->form == FN_READABLE && !sub.ret && diag_count() == errs)
      diag_error(af->sp, "%.*s has no return statement", fd->name.n, fd->name.p);
    if (!resolve_outs(&sub, af)) ok = false;
    for (int i = 0; ok && outvma && i < f->nouts && i < noutvma; i++)
      if (outvma[i] & ~f->outs[i].t.vma) f->outs[i] = lift(&sub, f->outs[i], outvma[i], f->outs[i].sp);
  }
  if (diag_count() != errs) ok = false;
  if (!ok && call.file >= 0 && (call.file != af->sp.file || call.off != af->sp.off) && diag_count() > errs + (argerrs > 0)) {
    Buf b = {0};
    err_defer(buf_release, &b);
    for (int i = 0; i < nargs; i++) {
      if (i) buf_puts(&b, ", ");
      show_type(&b, &args[i], mesh);
    }
    diag_note(call, "in this call of %.*s with (%s)", fd->name.n, fd->name.p, buf_cstr(&b));
    err_undefer(&b);
    buf_free(&b);
  }
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
  cx->scope = bind(cx->C, cx->scope, B_FUNC, af->name);
  cx->scope->fn = fd;
  note_def(cx->C, fd, cx->mesh);
  if (af->form == FN_TRANSPOSE) {
    transpose_define(cx, fd);
    return;
  }
  if (af->has_deco) {
    shard_map_define(cx, fd);
    return;
  }
  /* A function of no parameters is checked where it is called: it may be
     a shard_map body, whose collectives need the mesh axes in scope.  One
     whose parameters' types are all written is checked here -- but inside
     a body a type without a variance set leaves the set open (each call
     decides it), so such a function waits for its calls. */
  if (af->nparams > 0 && all_annotated(af)) {
    Type *args = NEWN(cx->C, Type, af->nparams);
    bool ok = true, open = false;
    for (int i = 0; i < af->nparams; i++) {
      bool has_vma;
      if (!resolve_type(cx, af->params[i]->type, &args[i], &has_vma)) ok = false;
      if (cx->mesh && !has_vma) open = true;
    }
    if (ok && !open) instantiate(cx, fd, args, af->nparams, af->sp);
  }
}

/* ---- statements ------------------------------------------------------------------------ */

static void check_stmt(Ctx *cx, AstStmt *s) {
  switch (s->k) {
  case ST_EQN: check_eqn(cx, s); break;
  case ST_LIT: check_lit_stmt(cx, s); break;
  case ST_PRINT: check_print(cx, s); break;
  case ST_SHOW: check_show(cx, s); break;
  case ST_MESH: check_mesh(cx, s); break;
  case ST_IMPORT: check_import(cx, s); break;
  case ST_DEF: check_def(cx, s); break;
  case ST_RETURN:
    if (cx->fn == cx->C->main) diag_error(s->sp, "return outside a function");
    else if (cx->fn->ast && cx->fn->ast->form == FN_LAMBDA)
      diag_error(s->sp, "a lambda returns with `in (...)`, not return");
    else { cx->ret = s; cx->returned = true; }
    break;
  case ST_ERROR: break;
  }
}

static void check_top(Checker *C, AstList *stmts, int file) {
  Ctx cx;
  memset(&cx, 0, sizeof cx);
  cx.C = C;
  cx.fn = C->main;
  cx.scope = C->top;
  cx.file = file;
  for (int i = 0; i < stmts->n; i++) {
    check_stmt(&cx, stmts->v[i]);
    C->top = cx.scope;
  }
}

/* ---- building functions (transformations) ---------------------------------------------- */

struct Builder {
  Ctx cx;
  Span where;
  int capparams;
};

Builder *bld_new(Checker *C, const char *name, IrFunc *parent, Mesh *mesh, Span where) {
  Builder *B = NEW(C, Builder);
  IrFunc *f = NEW(C, IrFunc);
  f->name = arena_strndup(&C->arena, name, strlen(name));
  f->sp = where;
  f->parent = parent;
  f->mesh = mesh;
  B->cx.C = C;
  B->cx.fn = f;
  B->cx.mesh = mesh;
  B->cx.file = where.file;
  B->where = where;
  return B;
}

IrFunc *bld_func(Builder *B) { return B->cx.fn; }
void *bld_alloc(Builder *B, size_t n) { return arena_alloc(&B->cx.C->arena, n); }

IrVar *bld_param(Builder *B, Str name, Type t) {
  IrFunc *f = B->cx.fn;
  if (f->nparams == B->capparams) {
    int nc = B->capparams ? B->capparams * 2 : 8;
    IrVar **n = NEWN(B->cx.C, IrVar *, nc);
    if (f->nparams) memcpy(n, f->params, sizeof(IrVar *) * (size_t)f->nparams);
    f->params = n;
    B->capparams = nc;
  }
  IrVar *v = new_var(&B->cx, name, t, B->where);
  f->params[f->nparams++] = v;
  return v;
}

static void bld_captures(Builder *B, IrAtom *in, int nin) {
  for (int k = 0; k < nin; k++)
    if (in[k].var && in[k].var->owner != B->cx.fn) note_capture(&B->cx, in[k].var);
}

static IrStmt *bld_stmt(Builder *B, int prim, IrAtom *in, int nin, const Type *outt, int nout, IrAtom *out) {
  IrStmt *st = new_stmt(&B->cx, IS_EQN, B->where);
  st->prim = prim;
  st->in = NEWN(B->cx.C, IrAtom, nin);
  for (int k = 0; k < nin; k++) st->in[k] = in[k];
  st->nin = nin;
  st->out = NEWN(B->cx.C, IrVar *, nout);
  st->nout = nout;
  for (int i = 0; i < nout; i++) {
    st->out[i] = new_var(&B->cx, str_c(""), outt[i], B->where);
    memset(&out[i], 0, sizeof(IrAtom));
    out[i].var = st->out[i];
    out[i].t = outt[i];
    out[i].sp = B->where;
  }
  return st;
}

bool bld_prim(Builder *B, int prim, const IrParam *params, int nparams, IrAtom *in, int nin, IrAtom *out) {
  const PrimInfo *pi = &prim_table[prim];
  Ctx *cx = &B->cx;
  AstParam **aps = NEWN(cx->C, AstParam *, nparams);
  for (int i = 0; i < nparams; i++) {
    aps[i] = NEW(cx->C, AstParam);
    aps[i]->key = str_c(params[i].key);
    aps[i]->sp = B->where;
    aps[i]->v = params[i].v;
  }
  RuleCtx r;
  rule_init(&r, cx, pi->name, B->where, aps, nparams);
  Attrs *at = NEW(cx->C, Attrs);
  at->dtype = -1;
  IrAtom *ins = NEWN(cx->C, IrAtom, nin);
  for (int k = 0; k < nin; k++) ins[k] = in[k];
  Type *intypes = NEWN(cx->C, Type, nin);
  for (int k = 0; k < nin; k++) intypes[k] = ins[k].t;
  int nout = pi->nout > 0 ? pi->nout : 1;
  Type *outt = NEWN(cx->C, Type, nout);
  if (!pi->shape(&r, intypes, nin, at, outt) || r.failed || !rule_unused(&r, pi->params)) return false;
  if (cx->mesh && !apply_vrule(cx, prim, ins, nin, at, outt, nout, B->where)) return false;
  if (!cx->mesh && prim_table[prim].vrule != VR_ELEM && !apply_vrule(cx, prim, ins, nin, at, outt, nout, B->where))
    return false;
  bld_captures(B, ins, nin);
  IrStmt *st = bld_stmt(B, prim, ins, nin, outt, nout, out);
  st->at = at;
  st->params = r.canon;
  st->nparams = r.ncanon;
  emit(cx, st);
  return true;
}

bool bld_call(Builder *B, IrFunc *callee, IrAtom *in, int nin, IrAtom *out) {
  Type *outt = NEWN(B->cx.C, Type, callee->nouts);
  for (int i = 0; i < callee->nouts; i++) outt[i] = callee->outs[i].t;
  bld_captures(B, in, nin);
  IrStmt *st = bld_stmt(B, -1, in, nin, outt, callee->nouts, out);
  st->callee = callee;
  emit(&B->cx, st);
  return true;
}

bool bld_higher(Builder *B, int prim, Attrs *at, const IrParam *params, int nparams, IrAtom *in, int nin,
                const Type *outt, int nout, IrAtom *out) {
  bld_captures(B, in, nin);
  IrStmt *st = bld_stmt(B, prim, in, nin, outt, nout, out);
  st->at = at;
  st->params = NEWN(B->cx.C, IrParam, nparams);
  if (nparams) memcpy(st->params, params, sizeof(IrParam) * (size_t)nparams);
  st->nparams = nparams;
  emit(&B->cx, st);
  return true;
}

IrAtom bld_lift(Builder *B, IrAtom a, uint32_t vma) { return lift(&B->cx, a, vma, B->where); }

PVal *bld_pv_int(Builder *B, int64_t v) {
  PVal *p = NEW(B->cx.C, PVal);
  p->k = PV_INT;
  p->i = v;
  p->f = (double)v;
  p->sp = span_none();
  return p;
}

PVal *bld_pv_bool(Builder *B, bool v) {
  PVal *p = bld_pv_int(B, v);
  p->k = PV_BOOL;
  return p;
}

PVal *bld_pv_name(Builder *B, const char *s) {
  PVal *p = NEW(B->cx.C, PVal);
  p->k = PV_NAME;
  p->s = str_c(arena_strndup(&B->cx.C->arena, s, strlen(s)));
  p->sp = span_none();
  return p;
}

PVal *bld_pv_tuple(Builder *B, PVal **items, int n) {
  PVal *p = NEW(B->cx.C, PVal);
  p->k = PV_TUPLE;
  p->items = NEWN(B->cx.C, PVal *, n);
  if (n) memcpy(p->items, items, sizeof(PVal *) * (size_t)n);
  p->n = n;
  p->sp = span_none();
  return p;
}

PVal *bld_pv_ints(Builder *B, const int64_t *v, int n) {
  PVal **items = NEWN(B->cx.C, PVal *, n);
  for (int i = 0; i < n; i++) items[i] = bld_pv_int(B, v[i]);
  return bld_pv_tuple(B, items, n);
}

Array *bld_keep(Array *a) { return keep(a); }

IrAtom bld_zeros(Builder *B, const Type *t) {
  IrAtom z;
  memset(&z, 0, sizeof z);
  z.lit = keep(arr_scalar_i((DType)t->dt, 0));
  z.t = *t;
  z.t.rank = 0;
  z.t.vma = 0;
  z.sp = B->where;
  if (t->rank == 0 && !t->vma) return z;
  IrParam ps[2];
  ps[0].key = "shape";
  ps[0].v = bld_pv_ints(B, t->shape, t->rank);
  ps[1].key = "broadcast_dimensions";
  ps[1].v = bld_pv_ints(B, NULL, 0);
  IrAtom out;
  if (!bld_prim(B, prim_lookup(str_c("broadcast_in_dim")), ps, 2, &z, 1, &out)) return z;
  return bld_lift(B, out, t->vma);
}

void bld_const(Builder *B, Array *value, IrAtom *out) {
  Type t;
  memset(&t, 0, sizeof t);
  t.dt = value->dt;
  t.rank = value->rank;
  for (int i = 0; i < value->rank; i++) t.shape[i] = value->shape[i];
  IrStmt *st = new_stmt(&B->cx, IS_CONST, B->where);
  st->value = value;
  st->out = NEWN(B->cx.C, IrVar *, 1);
  st->nout = 1;
  st->out[0] = new_var(&B->cx, str_c(""), t, B->where);
  memset(out, 0, sizeof *out);
  out->var = st->out[0];
  out->t = t;
  emit(&B->cx, st);
}

IrFunc *bld_finish(Builder *B, IrAtom *outs, int nouts) {
  IrFunc *f = B->cx.fn;
  f->outs = NEWN(B->cx.C, IrAtom, nouts);
  for (int k = 0; k < nouts; k++) f->outs[k] = outs[k];
  f->nouts = nouts;
  bld_captures(B, f->outs, nouts);
  return f;
}

/* ---- functions never checked: resolving their names --------------------------------
** A function whose parameters are not all annotated is checked at each
** call, with the argument types; one that is never called would never be
** looked at, and its mistakes would wait for the first call.  After a file
** is checked, each such function (and each def nested in it, and each def
** nested in a checked function but never called) is resolved without
** types: every name it reads must be bound where it reads it, every callee
** must be a function or a primitive, with the right number of operands and
** known parameter names; a function parameter of control flow must name a
** function; a shard_map's mesh and specs must be right; and the axis names
** of collectives must be axes of the enclosing shard_map's mesh, or, for a
** function whose mesh is not known, of some mesh of the program (checked
** only for a whole program, not the REPL, where a mesh may come later).
** These are the errors any call would report, with the same messages.
*/

typedef struct Res {
  Checker *C;
  Binding *scope;
  const Mesh *mesh;        /* the enclosing shard_map's mesh, if known */
  const AstFunc *self;     /* the function resolved (it does not see itself) */
  bool failed;             /* this statement already has its error */
  bool axes_known;         /* meshes are all known: check free axis names */
} Res;

static void res_func(Res *R, const AstFunc *af, Binding *scope, const Mesh *mesh);

static void res_error(Res *R, Span sp, const char *fmt, ...) SHM_PRINTF(3, 4);
static void res_error(Res *R, Span sp, const char *fmt, ...) {
  if (R->failed) return;
  R->failed = true;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_error(sp, "%s", msg);
}

static void res_bind_var(Res *R, Str name, Span sp) {
  if (!name.n || str_eqc(name, "_")) return;
  IrVar *v = NEW(R->C, IrVar);
  v->name = name;
  v->t = bad_type();
  v->sp = sp;
  R->scope = bind(R->C, R->scope, B_VAR, name);
  R->scope->var = v;
}

static void res_name(Res *R, Str name, Span sp) {
  if (lookup(R->scope, B_VAR, name)) return;
  if (lookup(R->scope, B_FUNC, name)) res_error(R, sp, "'%.*s' is a function, not a value", name.n, name.p);
  else res_error(R, sp, "unknown variable '%.*s'", name.n, name.p);
}

static void res_arg(Res *R, const AstArg *a) {
  if (a->k == ARG_NAME) res_name(R, a->name, a->sp);
}

/* Is `name` an axis of some mesh the program has? */
static bool res_axis_known(Res *R, Str name) {
  for (Binding *b = R->C->top; b; b = b->next)
    if (b->k == B_MESH)
      for (int k = 0; k < b->mesh->naxes; k++)
        if (str_eq(b->mesh->axis[k], name)) return true;
  return false;
}

static void res_axes(Res *R, const PVal *v, Span sp) {
  v = unparen((PVal *)v);
  if (!v) return;
  const PVal *const *items = (const PVal *const *)&v;
  int n = 1;
  if (v->k == PV_TUPLE || v->k == PV_LIST) { items = (const PVal *const *)v->items; n = v->n; }
  for (int i = 0; i < n; i++) {
    const PVal *e = unparen((PVal *)items[i]);
    if (e->k != PV_NAME && e->k != PV_STR) continue;     /* the rule's own error, at the call */
    Span at = e->sp.file >= 0 ? e->sp : sp;
    if (R->mesh) {
      bool found = false;
      for (int k = 0; k < R->mesh->naxes; k++) found |= str_eq(R->mesh->axis[k], e->s);
      if (!found) res_error(R, at, "unbound axis name '%.*s'", e->s.n, e->s.p);
    } else if (R->axes_known && !res_axis_known(R, e->s)) {
      res_error(R, at, "axis name '%.*s' is not an axis of any mesh of the program", e->s.n, e->s.p);
    }
  }
}

/* The axes of each spec in a shard_map's in_specs/out_specs. */
static void res_specs(Res *R, const Mesh *m, const PVal *v) {
  v = unparen((PVal *)v);
  if (!v) return;
  if (v->k == PV_TUPLE || v->k == PV_LIST) {
    for (int i = 0; i < v->n; i++) res_specs(R, m, v->items[i]);
    return;
  }
  Spec sp;
  int errs = diag_count();
  if (!R->failed && !parse_spec(NULL, m, (PVal *)v, &sp) && diag_count() > errs) R->failed = true;
}

/* A function-valued parameter: a defined name or an inline lambda. */
static void res_fn_param(Res *R, const PVal *v, const Mesh *mesh) {
  v = unparen((PVal *)v);
  if (!v) return;
  if (v->k == PV_TUPLE || v->k == PV_LIST) {
    for (int i = 0; i < v->n; i++) res_fn_param(R, v->items[i], mesh);
    return;
  }
  if (v->k == PV_NAME) {
    if (!lookup(R->scope, B_FUNC, v->s)) res_error(R, v->sp, "unknown function '%.*s'", v->s.n, v->s.p);
  } else if (v->k == PV_FUNC && v->fn) {
    res_func(R, v->fn, R->scope, mesh);
  }
}

static const Mesh *res_mesh(Res *R, const PVal *v) {
  v = unparen((PVal *)v);
  if (!v || v->k != PV_NAME) return NULL;
  Binding *b = lookup(R->scope, B_MESH, v->s);
  if (!b) res_error(R, v->sp, "unknown mesh '%.*s'", v->s.n, v->s.p);
  return b ? b->mesh : NULL;
}

static const PVal *res_param(const AstStmt *s, const char *key) {
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, key)) return s->params[i]->v;
  return NULL;
}

static void res_prim_eqn(Res *R, const AstStmt *s, int prim) {
  const PrimInfo *pi = &prim_table[prim];
  if (s->nargs < pi->nin_min || (pi->nin_max >= 0 && s->nargs > pi->nin_max)) {
    if (pi->nin_min == pi->nin_max)
      res_error(R, s->callee_sp, "%s takes %d operand%s, but %d %s given", pi->name, pi->nin_min,
                pi->nin_min == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
    else
      res_error(R, s->callee_sp, "%s takes at least %d operand%s, but %d %s given", pi->name, pi->nin_min,
                pi->nin_min == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
    return;
  }
  for (int i = 0; i < s->nparams; i++) {
    const AstParam *p = s->params[i];
    for (int j = 0; j < i; j++)
      if (str_eq(s->params[j]->key, p->key)) res_error(R, p->sp, "parameter '%.*s' given twice", p->key.n, p->key.p);
    if (!prim_accepts(prim, p->key)) {
      size_t n = prim_params_len(pi->params);
      if (n)
        res_error(R, p->sp, "%s has no parameter '%.*s' (its parameters: %.*s)", pi->name, p->key.n, p->key.p,
                  (int)n, pi->params);
      else
        res_error(R, p->sp, "%s takes no parameters, but '%.*s' was given", pi->name, p->key.n, p->key.p);
    }
  }
  const Mesh *body_mesh = R->mesh;
  switch (prim) {
  case P_COND: res_fn_param(R, res_param(s, "branches"), R->mesh); break;
  case P_WHILE:
    res_fn_param(R, res_param(s, "cond_jaxpr"), R->mesh);
    res_fn_param(R, res_param(s, "body_jaxpr"), R->mesh);
    break;
  case P_FORI_LOOP:
    for (int k = 0; k < 2; k++) {
      const PVal *b = unparen((PVal *)res_param(s, k ? "upper" : "lower"));
      if (b && b->k == PV_NAME) res_name(R, b->s, b->sp);
    }
    res_fn_param(R, res_param(s, "body"), R->mesh);
    break;
  case P_SHARD_MAP:
    body_mesh = res_mesh(R, res_param(s, "mesh"));
    if (body_mesh) {
      res_specs(R, body_mesh, res_param(s, "in_specs"));
      res_specs(R, body_mesh, res_param(s, "out_specs"));
    }
    res_fn_param(R, res_param(s, "f"), body_mesh);
    break;
  default:
    if (pi->vrule != VR_ELEM && pi->vrule != VR_NULLARY && pi->vrule != VR_SPECIAL) {
      res_axes(R, res_param(s, "axes"), s->callee_sp);
      res_axes(R, res_param(s, "axis_name"), s->callee_sp);
    }
  }
}

static void res_eqn(Res *R, const AstStmt *s) {
  for (int k = 0; k < s->nargs; k++) {
    if (s->args[k]->k == ARG_STR) res_error(R, s->args[k]->sp, "a string is not an array operand");
    else res_arg(R, s->args[k]);
  }
  Binding *b = lookup(R->scope, B_FUNC, s->callee);
  int prim;
  if (b) {
    const AstFunc *af = b->fn->ast;
    if (s->nparams)
      res_error(R, s->params[0]->sp, "'%.*s' is a function: it takes no parameters in brackets", s->callee.n, s->callee.p);
    else if (af->form != FN_TRANSPOSE && af->nparams != s->nargs)
      res_error(R, s->callee_sp, "%.*s takes %d argument%s, but %d %s given", s->callee.n, s->callee.p, af->nparams,
                af->nparams == 1 ? "" : "s", s->nargs, s->nargs == 1 ? "was" : "were");
  } else if ((prim = prim_lookup(s->callee)) >= 0) {
    res_prim_eqn(R, s, prim);
  } else if (lookup(R->scope, B_VAR, s->callee)) {
    if (s->has_params || s->nargs)
      res_error(R, s->callee_sp, "'%.*s' is a value, not a function or primitive", s->callee.n, s->callee.p);
  } else if (R->self && R->self->name.n && str_eq(s->callee, R->self->name)) {
    res_error(R, s->callee_sp, "%.*s calls itself: recursion is not supported (use while or fori_loop)",
              s->callee.n, s->callee.p);
  } else {
    res_error(R, s->callee_sp, "unknown primitive or function '%.*s'", s->callee.n, s->callee.p);
  }
  for (int i = 0; i < s->nouts; i++) res_bind_var(R, s->outs[i]->name, s->outs[i]->sp);
}

/* A nested def: bound, and resolved itself (the caller never checks it). */
static void res_def(Res *R, const AstStmt *s) {
  const AstFunc *af = s->fn;
  FuncDef *fd = NEW(R->C, FuncDef);
  fd->ast = (AstFunc *)af;
  fd->name = af->name;
  fd->scope = R->scope;
  R->scope = bind(R->C, R->scope, B_FUNC, af->name);
  R->scope->fn = fd;
  if (af->form == FN_TRANSPOSE) {
    if (!lookup(fd->scope, B_FUNC, af->target))
      res_error(R, af->target_sp, "unknown function '%.*s'", af->target.n, af->target.p);
    return;
  }
  res_func(R, af, fd->scope, R->mesh);
}

static void res_stmt(Res *R, const AstStmt *s, const AstFunc *af, bool *returned) {
  R->failed = false;
  if (*returned && s->k != ST_ERROR) {
    res_error(R, s->sp, "statement after return");
    return;
  }
  switch (s->k) {
  case ST_EQN: res_eqn(R, s); break;
  case ST_LIT:
    for (int i = 0; i < s->nouts; i++) res_bind_var(R, s->outs[i]->name, s->outs[i]->sp);
    break;
  case ST_PRINT:
    for (int k = 0; k < s->nargs; k++) res_arg(R, s->args[k]);
    break;
  case ST_SHOW:
    if (!lookup(R->scope, B_FUNC, s->name)) {
      if (lookup(R->scope, B_VAR, s->name))
        res_error(R, s->name_sp, "'%.*s' is a value; show prints functions (print prints values)", s->name.n, s->name.p);
      else
        res_error(R, s->name_sp, "unknown function '%.*s'", s->name.n, s->name.p);
    }
    break;
  case ST_MESH: {
    /* checked as it would be at a call; bound for what follows */
    Ctx cx;
    memset(&cx, 0, sizeof cx);
    cx.C = R->C;
    cx.scope = R->scope;
    check_mesh(&cx, (AstStmt *)s);
    R->scope = cx.scope;
    break;
  }
  case ST_IMPORT: res_error(R, s->sp, "import stands only at top level"); break;
  case ST_DEF: res_def(R, s); break;
  case ST_RETURN:
    if (af->form == FN_LAMBDA) res_error(R, s->sp, "a lambda returns with `in (...)`, not return");
    for (int k = 0; k < s->nargs; k++) res_arg(R, s->args[k]);
    *returned = true;
    break;
  case ST_ERROR: break;
  }
}

static void res_func(Res *R, const AstFunc *af, Binding *scope, const Mesh *mesh) {
  Res sub = *R;
  sub.scope = scope;
  sub.mesh = mesh;
  sub.self = af;
  sub.failed = false;
  if (af->has_deco) {
    if (!str_eqc(af->deco, "shard_map")) {
      diag_error(af->deco_sp, "unknown decorator '@%.*s' (shm knows @shard_map)", af->deco.n, af->deco.p);
      return;
    }
    const PVal *mv = NULL, *iv = NULL, *ov = NULL;
    for (int i = 0; i < af->ndeco_params; i++) {
      const AstParam *p = af->deco_params[i];
      if (str_eqc(p->key, "mesh")) mv = p->v;
      else if (str_eqc(p->key, "in_specs")) iv = p->v;
      else if (str_eqc(p->key, "out_specs")) ov = p->v;
      else if (!prim_accepts(P_SHARD_MAP, p->key))
        res_error(&sub, p->sp, "shard_map has no parameter '%.*s' (its parameters: %.*s)", p->key.n, p->key.p,
                  (int)prim_params_len(prim_table[P_SHARD_MAP].params), prim_table[P_SHARD_MAP].params);
    }
    sub.failed = false;
    sub.mesh = mv ? res_mesh(&sub, mv) : NULL;
    if (!mv) diag_error(af->deco_sp, "shard_map requires the parameter 'mesh'");
    if (sub.mesh) {
      res_specs(&sub, sub.mesh, iv);
      res_specs(&sub, sub.mesh, ov);
    }
  }
  /* parameters (and the lambda's constants, which name outer variables) */
  for (int i = 0; i < af->nconsts; i++) {
    sub.failed = false;
    if (!lookup(sub.scope, B_VAR, af->consts[i]->name))
      res_error(&sub, af->consts[i]->sp, "unknown variable '%.*s' (a lambda's constants name variables in scope)",
                af->consts[i]->name.n, af->consts[i]->name.p);
  }
  for (int i = 0; i < af->nparams; i++) res_bind_var(&sub, af->params[i]->name, af->params[i]->sp);
  bool returned = false;
  int errs = diag_count();
  for (int i = 0; i < af->nbody; i++) res_stmt(&sub, af->body[i], af, &returned);
  sub.failed = false;
  if (af->form == FN_LAMBDA)
    for (int k = 0; k < af->nouts; k++) res_arg(&sub, af->outs[k]);
  else if (af->form == FN_READABLE && !returned && diag_count() == errs)
    diag_error(af->sp, "%.*s has no return statement", af->name.n, af->name.p);
}

/* Record a def the checker saw, so that check_resolve_unchecked can find
   the ones never checked. */
static void note_def(Checker *C, FuncDef *fd, const Mesh *mesh) {
  if (C->ndefs == C->capdefs) {
    int nc = C->capdefs ? C->capdefs * 2 : 32;
    FuncDef **n = NEWN(C, FuncDef *, nc);
    const Mesh **m = NEWN(C, const Mesh *, nc);
    if (C->ndefs) {
      memcpy(n, C->defs, sizeof(FuncDef *) * (size_t)C->ndefs);
      memcpy(m, C->def_mesh, sizeof(const Mesh *) * (size_t)C->ndefs);
    }
    C->defs = n;
    C->def_mesh = m;
    C->capdefs = nc;
  }
  C->def_mesh[C->ndefs] = mesh;
  C->defs[C->ndefs++] = fd;
}

/* Resolve each function recorded since `from` that no check has reached
   (no instance of any def of its syntax), once per syntax. */
static void resolve_unchecked(Checker *C, int from) {
  for (int i = from; i < C->ndefs; i++) {
    FuncDef *fd = C->defs[i];
    const AstFunc *af = fd->ast;
    if (af->form == FN_TRANSPOSE) continue;
    bool seen = false;
    for (int j = 0; j < C->ndefs && !seen; j++)
      seen = C->defs[j]->ast == af && (C->defs[j]->inst || C->defs[j]->resolved || j < i);
    if (seen) continue;
    fd->resolved = true;
    Res R;
    memset(&R, 0, sizeof R);
    R.C = C;
    /* a library imported into the program may name axes of meshes it
       leaves to its callers: only the program's own file is held to its
       meshes */
    R.axes_known = C->whole_program && af->sp.file == C->main_file;
    res_func(&R, af, fd->scope, C->def_mesh[i]);
  }
}

/* ---- public interface -------------------------------------------------------------------- */

Checker *check_new(void) {
  Checker *C = mem_calloc(sizeof *C);
  err_defer(mem_free, C);
  C->main = NEW(C, IrFunc);
  err_undefer(C);
  C->main->name = "<main>";
  C->main->sp = span_none();
  C->main_file = -1;
  return C;
}

void check_free(Checker *C) {
  if (!C) return;
  while (kept_literals) {
    LitKeep *n = kept_literals->next;
    arr_unref(kept_literals->a);
    mem_free(kept_literals);
    kept_literals = n;
  }
  arena_free(&C->arena);
  mem_free(C);
}

int check_file(Checker *C, int file) {
  int before = diag_count(), defs = C->ndefs;
  if (C->main_file < 0) C->main_file = file;
  AstList *stmts = parse_file(&C->arena, file);
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
  Binding *b = lookup(C->top, B_VAR, name);
  return b ? b->var : NULL;
}

bool check_has_func(Checker *C, Str name) { return lookup(C->top, B_FUNC, name) != NULL; }

int check_names(Checker *C, const char **names, int max, bool *is_func) {
  int n = 0;
  for (Binding *b = C->top; b && n < max; b = b->next) {
    if (b->k == B_MESH) continue;
    bool dup = false;
    for (Binding *c = C->top; c != b; c = c->next)
      if (c->k != B_MESH && str_eq(c->name, b->name)) dup = true;
    if (dup) continue;
    names[n] = arena_strndup(&C->arena, b->name.p, (size_t)b->name.n);
    if (is_func) is_func[n] = b->k == B_FUNC;
    n++;
  }
  return n;
}

/* ---- higher-order equations ----------------------------------------------------------- */

/* A PVal naming a function to call: a defined name or an inline lambda. */
static FuncDef *func_param(Ctx *cx, RuleCtx *r, const char *key, PVal *v) {
  v = unparen(v);
  if (v && v->k == PV_NAME) {
    Binding *b = lookup(cx->scope, B_FUNC, v->s);
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
static PVal *fn_ref(Ctx *cx, int k) {
  PVal *v = NEW(cx->C, PVal);
  v->k = PV_FUNC;
  v->i = k;
  v->sp = span_none();
  return v;
}

static void add_fn(Ctx *cx, Attrs *at, IrFunc *f) {
  IrFunc **n = NEWN(cx->C, IrFunc *, at->nfns + 1);
  if (at->nfns) memcpy(n, at->fns, sizeof(IrFunc *) * (size_t)at->nfns);
  n[at->nfns++] = f;
  at->fns = n;
}

/* ---- control flow ------------------------------------------------------------------
** cond, while and fori_loop.  Each device runs its own control flow: where
** a cond index, a while predicate or a fori_loop bound varies along some
** axes (pv), the construct's results vary along them too, and its functions
** are checked with those axes in cx->ctrl, so that a collective over them
** inside is refused (the devices of a group would not all reach it).
** Branch results and loop carries that differ only in variance are widened
** to their union (a pbroadcast at the end of the narrower function, shown
** by `show`), where JAX asks the user for a pvary; a loop carry that the
** body returns unchanged keeps its own variance whatever the predicate.
*/

/* Equal dtype and shape (variance aside). */
static bool same_shape_dtype(const Type *a, const Type *b) {
  return a->dt == b->dt && type_same_shape(a, b);
}

/* Instantiate `fd` under extra control variance `pv`, its results widened
   to `outvma` when not NULL. */
static IrFunc *inst_ctrl(Ctx *cx, FuncDef *fd, const Type *args, int nargs, uint32_t pv, const uint32_t *outvma,
                         int noutvma, Span sp) {
  uint32_t saved = cx->ctrl;
  cx->ctrl |= pv;
  IrFunc *f = instantiate_w(cx, fd, args, nargs, outvma, noutvma, sp);
  cx->ctrl = saved;
  return f;
}

static void describe_types(Ctx *cx, Buf *b, const IrAtom *a, int n) {
  buf_putc(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) buf_puts(b, ", ");
    show_type(b, &a[i].t, cx->mesh);
  }
  buf_putc(b, ')');
}

static void describe_type_list(Ctx *cx, Buf *b, const Type *t, int n) {
  buf_putc(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) buf_puts(b, ", ");
    show_type(b, &t[i], cx->mesh);
  }
  buf_putc(b, ')');
}

/* "fori_loop body must return its carry's types (..), but returns (..)" */
static void carry_mismatch(Ctx *cx, Span sp, const char *what, const Type *carry, int n, const IrFunc *f) {
  Buf b0 = {0}, b1 = {0};
  err_defer(buf_release, &b0);
  err_defer(buf_release, &b1);
  describe_type_list(cx, &b0, carry, n);
  describe_types(cx, &b1, f->outs, f->nouts);
  diag_error(sp, "%s must return its carry's types %s, but returns %s", what, buf_cstr(&b0), buf_cstr(&b1));
  err_undefer(&b0);
  buf_free(&b0);
  err_undefer(&b1);
  buf_free(&b1);
}

/* Do f's results have the carries' dtypes and shapes? */
static bool outs_fit(const IrFunc *f, const Type *t, int n) {
  if (f->nouts != n) return false;
  for (int i = 0; i < n; i++)
    if (!same_shape_dtype(&f->outs[i].t, &t[i])) return false;
  return true;
}

static bool outs_vma_are(const IrFunc *f, const uint32_t *vma, int n) {
  for (int i = 0; i < n; i++)
    if (f->outs[i].t.vma != vma[i]) return false;
  return true;
}

/* Does f return its parameter `p` unchanged as result `k`? */
static bool passes_through(const IrFunc *f, int k, int p) {
  return k < f->nouts && p < f->nparams && f->outs[k].var == f->params[p];
}

/* The same, read from the syntax before the function is checked: result
   k names parameter p, and no statement of the body binds that name again.
   (A carry passed through keeps its value on every device however many
   iterations each runs, so a varying predicate does not make it vary.) */
static bool ast_passes_through(const FuncDef *fd, int k, int p) {
  const AstFunc *af = fd->ast;
  if (af->form == FN_TRANSPOSE || af->has_deco || p >= af->nparams) return false;
  const AstArg *out = NULL;
  if (af->form == FN_LAMBDA) out = k < af->nouts ? af->outs[k] : NULL;
  else
    for (int i = 0; i < af->nbody; i++)
      if (af->body[i]->k == ST_RETURN && k < af->body[i]->nargs) out = af->body[i]->args[k];
  Str name = af->params[p]->name;
  if (!out || out->k != ARG_NAME || !str_eq(out->name, name)) return false;
  for (int i = 0; i < af->nbody; i++) {
    const AstStmt *st = af->body[i];
    for (int j = 0; (st->k == ST_EQN || st->k == ST_LIT) && j < st->nouts; j++)
      if (str_eq(st->outs[j]->name, name)) return false;
  }
  return true;
}

/* The variance set parameter p of a loop function is annotated with, if
   any: a loop's carries start from it, so that a parameter annotated with
   the carry's final variance is not refused in the fixed point's first
   rounds, before the predicate's variance has reached the carry. */
static uint32_t ast_param_vma(Ctx *cx, const FuncDef *fd, int p) {
  const AstFunc *af = fd->ast;
  if (af->form == FN_TRANSPOSE || p >= af->nparams || !af->params[p]->type || !af->params[p]->type->has_vma)
    return 0;
  uint32_t v = 0;
  const AstType *t = af->params[p]->type;
  for (int i = 0; i < t->naxes; i++)
    for (int a = 0; cx->mesh && a < cx->mesh->naxes; a++)
      if (str_eq(cx->mesh->axis[a], t->axes[i])) v |= 1u << a;
  return v;
}

/* Emit the checked equation for a higher-order primitive.  `pv` is the
   variance of its predicate: annotations of its results may leave it out,
   as JAX's printer does. */
static void emit_special(Ctx *cx, AstStmt *s, int prim, Attrs *at, RuleCtx *r, IrAtom *in, int nin,
                         Type *out, int nout, uint32_t pv) {
  IrStmt *st = new_stmt(cx, IS_EQN, s->callee_sp);
  st->whole = s->sp;
  st->line = s->line;
  st->prim = prim;
  st->at = at;
  st->params = r->canon;
  st->nparams = r->ncanon;
  st->in = in;
  st->nin = nin;
  uint32_t saved = cx->stmt_pv;
  cx->stmt_pv = pv;
  bind_outs(cx, s, st, out, nout, prim_table[prim].name);
  cx->stmt_pv = saved;
  emit(cx, st);
}

static bool index_operand(Ctx *cx, IrAtom *a, const AstArg *arg, const char *what) {
  if (a->t.weak && a->t.dt == DT_I32) a->t.dt = DT_I32;
  if (a->t.rank != 0 || (a->t.dt != DT_I32 && a->t.dt != DT_BOOL && a->t.dt != DT_I64)) {
    diag_error(a->sp, "%s must be a scalar integer or boolean, not %s", what, type_text(cx, &a->t));
    return false;
  }
  if (!a->var && !a->lit) {
    if (!lit_value(cx, &arg->lit, a->t.dt, &a->lit)) return false;
    keep(a->lit);
    a->t.weak = false;
  }
  return true;
}

static void check_cond(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  PVal *bv = unparen(get(r, "branches"));
  if (!bv) { missing(r, "branches"); bind_bad(cx, s); return; }
  get(r, "linear");
  if (!rule_unused(r, "branches")) { bind_bad(cx, s); return; }
  if (!index_operand(cx, &in[0], s->args[0], "the index of cond")) { bind_bad(cx, s); return; }
  PVal *one[1] = {bv};
  PVal **items = bv->k == PV_TUPLE || bv->k == PV_LIST ? bv->items : one;
  int nb = bv->k == PV_TUPLE || bv->k == PV_LIST ? bv->n : 1;
  if (nb < 1) { rule_param_error(r, "branches", "cond needs at least one branch"); bind_bad(cx, s); return; }
  int nargs = s->nargs - 1;
  if (!finish_literals(cx, in + 1, (const AstArg *const *)s->args + 1, nargs)) { bind_bad(cx, s); return; }
  Type *args = NEWN(cx->C, Type, nargs);
  for (int i = 0; i < nargs; i++) { in[i + 1].t.weak = false; args[i] = in[i + 1].t; }
  uint32_t pv = in[0].t.vma;
  FuncDef **fds = NEWN(cx->C, FuncDef *, nb);
  IrFunc **fs = NEWN(cx->C, IrFunc *, nb);
  for (int b = 0; b < nb; b++) {
    fds[b] = func_param(cx, r, "branches", items[b]);
    if (!fds[b]) { bind_bad(cx, s); return; }
    fs[b] = inst_ctrl(cx, fds[b], args, nargs, pv, NULL, 0, s->callee_sp);
    if (!fs[b]) { bind_bad(cx, s); return; }
  }
  /* the branches' results: equal in dtype and shape; their variance sets
     are joined, and a narrower branch is checked again with its results
     widened to the union */
  int nout = fs[0]->nouts;
  uint32_t *u = NEWN(cx->C, uint32_t, nout);
  for (int b = 0; b < nb; b++) {
    bool fit = fs[b]->nouts == nout;
    for (int i = 0; fit && i < nout; i++) fit = same_shape_dtype(&fs[b]->outs[i].t, &fs[0]->outs[i].t);
    if (!fit) {
      Buf b0 = {0}, b1 = {0};
      err_defer(buf_release, &b0);
      err_defer(buf_release, &b1);
      describe_types(cx, &b0, fs[0]->outs, fs[0]->nouts);
      describe_types(cx, &b1, fs[b]->outs, fs[b]->nouts);
      diag_error(s->callee_sp, "cond branches disagree: branch 0 returns %s, branch %d returns %s",
                 buf_cstr(&b0), b, buf_cstr(&b1));
      err_undefer(&b0);
      buf_free(&b0);
      err_undefer(&b1);
      buf_free(&b1);
      bind_bad(cx, s);
      return;
    }
    for (int i = 0; i < nout; i++) u[i] |= fs[b]->outs[i].t.vma;
  }
  PVal *canon = NEW(cx->C, PVal);
  canon->k = PV_TUPLE;
  canon->n = nb;
  canon->items = NEWN(cx->C, PVal *, nb);
  for (int b = 0; b < nb; b++) {
    if (!outs_vma_are(fs[b], u, nout)) {
      fs[b] = inst_ctrl(cx, fds[b], args, nargs, pv, u, nout, s->callee_sp);
      if (!fs[b]) { bind_bad(cx, s); return; }
      if (!outs_vma_are(fs[b], u, nout)) {    /* a function that cannot be widened (a transpose) */
        Buf b0 = {0};
        err_defer(buf_release, &b0);
        describe_types(cx, &b0, fs[b]->outs, fs[b]->nouts);
        diag_error(s->callee_sp, "cond branches disagree in variance: branch %d returns %s; wrap it in a function "
                   "that applies pvary to its results", b, buf_cstr(&b0));
        err_undefer(&b0);
        buf_free(&b0);
        bind_bad(cx, s);
        return;
      }
    }
    add_fn(cx, at, fs[b]);
    canon->items[b] = fn_ref(cx, b);
  }
  record(r, "branches", canon);
  Type *out = NEWN(cx->C, Type, nout);
  for (int i = 0; i < nout; i++) {
    out[i] = fs[0]->outs[i].t;
    out[i].vma = u[i] | pv;
  }
  emit_special(cx, s, P_COND, at, r, in, s->nargs, out, nout, pv);
}

/* A fori_loop bound: an integer literal, or the name of a scalar integer
   value (invariant or varying) in scope.  *atom is set for a value. */
static bool fori_bound(Ctx *cx, RuleCtx *r, const char *key, int64_t *lit, IrAtom *atom, bool *is_value) {
  PVal *v = unparen(get(r, key));
  *is_value = false;
  if (!v) return missing(r, key);
  if (v->k == PV_INT) {
    *lit = v->i;
    record(r, key, v);
    return true;
  }
  if (v->k != PV_NAME) return rule_param_error(r, key, "parameter '%s' of fori_loop must be an integer or a value's name", key);
  AstArg a;
  memset(&a, 0, sizeof a);
  a.k = ARG_NAME;
  a.sp = v->sp;
  a.name = v->s;
  if (!resolve_arg(cx, &a, atom)) { r->failed = true; return false; }
  if (atom->t.bad) { r->failed = true; return false; }
  if (atom->t.rank != 0 || (atom->t.dt != DT_I32 && atom->t.dt != DT_I64)) {
    r->failed = true;
    diag_error(v->sp, "the %s bound of fori_loop must be a scalar integer, but %.*s is %s", key, v->s.n, v->s.p,
               type_text(cx, &atom->t));
    return false;
  }
  *is_value = true;
  record(r, key, v);
  return true;
}

/* fori_loop[lower, upper, body=f, reverse] carry...: f(i, carry...) ->
   carry...  Bounds given as values come first among the equation's
   operands (at->i[2] counts them; bit 0 of at->i[3]: lower is one, bit 1:
   upper); literal bounds are at->i[0] and at->i[1]. */
static void check_fori(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  int64_t lo = 0, hi = 0;
  IrAtom blo, bhi;
  bool vlo, vhi;
  if (!fori_bound(cx, r, "lower", &lo, &blo, &vlo) || !fori_bound(cx, r, "upper", &hi, &bhi, &vhi)) {
    bind_bad(cx, s);
    return;
  }
  PVal *bv = get(r, "body");
  if (!bv) { missing(r, "body"); bind_bad(cx, s); return; }
  bool rev;
  if (!rule_bool(r, "reverse", false, &rev)) { bind_bad(cx, s); return; }
  at->b[0] = rev;
  if (!rule_unused(r, "lower upper body reverse")) { bind_bad(cx, s); return; }
  int n = s->nargs;
  if (!finish_literals(cx, in, (const AstArg *const *)s->args, n)) { bind_bad(cx, s); return; }
  int nbound = vlo + vhi;
  at->i[0] = lo;
  at->i[1] = hi;
  at->i[2] = nbound;
  at->i[3] = (vlo ? 1 : 0) | (vhi ? 2 : 0);
  IrAtom *all = NEWN(cx->C, IrAtom, n + nbound);
  int k0 = 0;
  if (vlo) all[k0++] = blo;
  if (vhi) all[k0++] = bhi;
  /* the index: the bounds' dtype (i64 if either is), varying as they do */
  uint32_t pv = (vlo ? blo.t.vma : 0) | (vhi ? bhi.t.vma : 0);
  Type *args = NEWN(cx->C, Type, n + 1);
  memset(&args[0], 0, sizeof(Type));
  args[0].dt = (vlo && blo.t.dt == DT_I64) || (vhi && bhi.t.dt == DT_I64) ? DT_I64 : DT_I32;
  args[0].vma = pv;
  for (int i = 0; i < n; i++) { in[i].t.weak = false; args[i + 1] = in[i].t; }
  FuncDef *fd = func_param(cx, r, "body", bv);
  if (!fd) { bind_bad(cx, s); return; }
  Type *carry = args + 1;
  IrFunc *f = NULL;
  /* the carries' variance: the fixed point of what the body makes of them
     (and of the bounds' variance, for a carry the body changes) */
  for (int k = 0; k < n; k++) {
    if (!ast_passes_through(fd, k, k + 1)) carry[k].vma |= pv;
    carry[k].vma |= ast_param_vma(cx, fd, k + 1);
  }
  for (;;) {      /* ends: each round that does not break widens a carry */
    f = inst_ctrl(cx, fd, args, n + 1, pv, NULL, 0, s->callee_sp);
    if (!f) { bind_bad(cx, s); return; }
    if (!outs_fit(f, carry, n)) {
      carry_mismatch(cx, s->callee_sp, "fori_loop body", carry, n, f);
      bind_bad(cx, s);
      return;
    }
    bool stable = true;
    for (int k = 0; k < n; k++) {
      uint32_t v = carry[k].vma | f->outs[k].t.vma | (passes_through(f, k, k + 1) ? 0 : pv);
      if (v != carry[k].vma) { carry[k].vma = v; stable = false; }
    }
    if (stable) break;
  }
  uint32_t *cv = NEWN(cx->C, uint32_t, n);
  for (int k = 0; k < n; k++) cv[k] = carry[k].vma;
  if (!outs_vma_are(f, cv, n)) {
    f = inst_ctrl(cx, fd, args, n + 1, pv, cv, n, s->callee_sp);
    if (!f) { bind_bad(cx, s); return; }
    if (!outs_vma_are(f, cv, n)) { carry_mismatch(cx, s->callee_sp, "fori_loop body", carry, n, f); bind_bad(cx, s); return; }
  }
  for (int k = 0; k < n; k++) all[nbound + k] = lift(cx, in[k], cv[k], s->callee_sp);
  add_fn(cx, at, f);
  record(r, "body", fn_ref(cx, 0));
  emit_special(cx, s, P_FORI_LOOP, at, r, all, n + nbound, carry, n, pv);
}

static void check_while(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  int64_t cn, bn;
  if (!rule_int(r, "cond_nconsts", false, 0, &cn) || !rule_int(r, "body_nconsts", false, 0, &bn)) { bind_bad(cx, s); return; }
  PVal *cv = get(r, "cond_jaxpr"), *bv = get(r, "body_jaxpr");
  if (!cv) { missing(r, "cond_jaxpr"); bind_bad(cx, s); return; }
  if (!bv) { missing(r, "body_jaxpr"); bind_bad(cx, s); return; }
  if (!rule_unused(r, "cond_jaxpr body_jaxpr cond_nconsts body_nconsts")) { bind_bad(cx, s); return; }
  int n = s->nargs;
  if (cn < 0 || bn < 0 || cn + bn > n) {
    rule_error(r, "while has %d operand%s, fewer than cond_nconsts + body_nconsts = %lld", n, n == 1 ? "" : "s", (long long)(cn + bn));
    bind_bad(cx, s);
    return;
  }
  at->i[0] = cn;
  at->i[1] = bn;
  if (!finish_literals(cx, in, (const AstArg *const *)s->args, n)) { bind_bad(cx, s); return; }
  for (int i = 0; i < n; i++) in[i].t.weak = false;
  FuncDef *cfd = func_param(cx, r, "cond_jaxpr", cv);
  FuncDef *bfd = cfd ? func_param(cx, r, "body_jaxpr", bv) : NULL;
  if (!bfd) { bind_bad(cx, s); return; }
  int nc = (int)(n - cn - bn);
  IrAtom *carry = in + cn + bn;
  /* ct: cond consts then carries; bt: body consts then carries */
  Type *ct = NEWN(cx->C, Type, cn + nc), *bt = NEWN(cx->C, Type, bn + nc);
  for (int i = 0; i < cn; i++) ct[i] = in[i].t;
  for (int i = 0; i < bn; i++) bt[i] = in[cn + i].t;
  Type *c = bt + bn;                  /* the carries' types, as they settle */
  for (int i = 0; i < nc; i++) c[i] = carry[i].t;
  uint32_t pv = 0;
  IrFunc *cf = NULL, *bf = NULL;
  /* The fixed point: a varying predicate makes each carry the body changes
     vary too, and what the body returns joins the carry's variance.  The
     predicate settles first, so the body is checked at the carry types it
     will have (a body checked at narrower ones could report what is no
     error at the final types). */
  bool *pt = NEWN(cx->C, bool, nc);
  for (int k = 0; k < nc; k++) {
    pt[k] = ast_passes_through(bfd, k, (int)bn + k);
    c[k].vma |= ast_param_vma(cx, cfd, (int)cn + k) | ast_param_vma(cx, bfd, (int)bn + k);
  }
  for (;;) {      /* ends: each round that does not break widens pv or a carry */
    for (int k = 0; k < nc; k++)
      if (!pt[k]) c[k].vma |= pv;
    for (int i = 0; i < nc; i++) ct[cn + i] = c[i];
    cf = inst_ctrl(cx, cfd, ct, (int)cn + nc, pv, NULL, 0, s->callee_sp);
    if (!cf) { bind_bad(cx, s); return; }
    if (cf->nouts != 1 || cf->outs[0].t.rank != 0 || cf->outs[0].t.dt != DT_BOOL) {
      Buf b = {0};
      err_defer(buf_release, &b);
      describe_types(cx, &b, cf->outs, cf->nouts);
      diag_error(s->callee_sp, "while's cond_jaxpr must return one bool[], not %s", buf_cstr(&b));
      err_undefer(&b);
      buf_free(&b);
      bind_bad(cx, s);
      return;
    }
    if ((cf->outs[0].t.vma | pv) != pv) {
      pv |= cf->outs[0].t.vma;
      continue;
    }
    bf = inst_ctrl(cx, bfd, bt, (int)bn + nc, pv, NULL, 0, s->callee_sp);
    if (!bf) { bind_bad(cx, s); return; }
    if (!outs_fit(bf, c, nc)) {
      carry_mismatch(cx, s->callee_sp, "while's body_jaxpr", c, nc, bf);
      bind_bad(cx, s);
      return;
    }
    bool stable = true;
    for (int k = 0; k < nc; k++) {
      uint32_t v = c[k].vma | bf->outs[k].t.vma | (passes_through(bf, k, (int)bn + k) ? 0 : pv);
      if (v != c[k].vma) { c[k].vma = v; stable = false; }
    }
    if (stable) break;
  }
  uint32_t *cvma = NEWN(cx->C, uint32_t, nc);
  for (int k = 0; k < nc; k++) cvma[k] = c[k].vma;
  if (!outs_vma_are(bf, cvma, nc)) {
    bf = inst_ctrl(cx, bfd, bt, (int)bn + nc, pv, cvma, nc, s->callee_sp);
    if (!bf) { bind_bad(cx, s); return; }
    if (!outs_vma_are(bf, cvma, nc)) {
      carry_mismatch(cx, s->callee_sp, "while's body_jaxpr", c, nc, bf);
      bind_bad(cx, s);
      return;
    }
  }
  for (int i = 0; i < nc; i++) carry[i] = lift(cx, carry[i], cvma[i], s->callee_sp);
  add_fn(cx, at, cf);
  add_fn(cx, at, bf);
  record(r, "cond_jaxpr", fn_ref(cx, 0));
  record(r, "body_jaxpr", fn_ref(cx, 1));
  emit_special(cx, s, P_WHILE, at, r, in, n, c, nc, pv);
}

/* ---- shard_map ----------------------------------------------------------------------------- */

static Mesh *mesh_param(Ctx *cx, RuleCtx *r, PVal *v) {
  v = unparen(v);
  if (!v) { missing(r, "mesh"); return NULL; }
  if (v->k != PV_NAME) { rule_param_error(r, "mesh", "parameter 'mesh' must name a mesh"); return NULL; }
  Binding *b = lookup(cx->scope, B_MESH, v->s);
  if (!b) {
    diag_error(v->sp, "unknown mesh '%.*s'", v->s.n, v->s.p);
    r->failed = true;
    return NULL;
  }
  return b->mesh;
}

/* The specs of a parameter: a tuple of P(...), or one P(...) standing for
   all `want` of them (a pytree prefix, as in JAX: in_specs=P(i) splits
   every argument the same way). */
static bool spec_list(RuleCtx *r, const char *key, PVal *v, int want, PVal ***items, int *n) {
  v = unparen(v);
  if (!v) return missing(r, key);
  if (v->k == PV_SPEC || v->k == PV_NONE) {
    *n = want > 1 ? want : 1;
    *items = NEWN(r->cx->C, PVal *, *n);
    for (int i = 0; i < *n; i++) (*items)[i] = v;
    return true;
  }
  if (v->k != PV_TUPLE && v->k != PV_LIST)
    return rule_param_error(r, key, "%s must be a partition spec P(...) or a tuple of them", key);
  *items = v->items;
  *n = v->n;
  return true;
}

static void spec_text(Buf *b, const Spec *sp, const Mesh *m) {
  buf_puts(b, "P(");
  for (int d = 0; d < sp->ndims; d++) {
    if (d) buf_puts(b, ", ");
    const SpecDim *sd = &sp->dim[d];
    if (sd->naxes == 0) buf_puts(b, "None");
    else if (sd->naxes == 1) buf_printf(b, "%.*s", m->axis[sd->axes[0]].n, m->axis[sd->axes[0]].p);
    else {
      buf_putc(b, '(');
      for (int k = 0; k < sd->naxes; k++) {
        if (k) buf_puts(b, ", ");
        buf_printf(b, "%.*s", m->axis[sd->axes[k]].n, m->axis[sd->axes[k]].p);
      }
      buf_putc(b, ')');
    }
  }
  buf_putc(b, ')');
}

/* Parse one spec; `rank` < 0 skips the rank check.  Errors at the spec. */
static bool parse_spec(Ctx *cx, const Mesh *m, PVal *v, Spec *out) {
  (void)cx;
  memset(out, 0, sizeof *out);
  out->src = v;
  v = unparen(v);
  if (v->k == PV_NONE) return true;     /* None: replicated, like P() */
  if (v->k != PV_SPEC) {
    diag_error(v->sp, "expected a partition spec P(...)");
    return false;
  }
  if (v->n > SHM_MAXRANK) {
    diag_error(v->sp, "partition spec longer than the largest rank");
    return false;
  }
  out->ndims = v->n;
  for (int d = 0; d < v->n; d++) {
    PVal *e = unparen(v->items[d]);
    PVal *one[1] = {e};
    PVal **ax = one;
    int na = 1;
    if (e->k == PV_NONE) na = 0;
    else if (e->k == PV_TUPLE || e->k == PV_LIST) { ax = e->items; na = e->n; }
    for (int k = 0; k < na; k++) {
      PVal *a = unparen(ax[k]);
      if (a->k != PV_NAME && a->k != PV_STR) {
        diag_error(a->sp, "a partition spec entry is None, a mesh axis or a tuple of mesh axes");
        return false;
      }
      int idx = -1;
      for (int i = 0; i < m->naxes; i++)
        if (str_eq(m->axis[i], a->s)) idx = i;
      if (idx < 0) {
        Buf ax = {0};     /* name the mesh's axes: "has axes i, j" */
        err_defer(buf_release, &ax);
        for (int i = 0; i < m->naxes; i++) buf_printf(&ax, "%s%.*s", i ? ", " : "axes ", m->axis[i].n, m->axis[i].p);
        diag_error(a->sp, "unknown mesh axis '%.*s' in a partition spec (mesh %.*s has %s)", a->s.n, a->s.p,
                   m->name.n, m->name.p, m->naxes ? buf_cstr(&ax) : "no axes");
        err_undefer(&ax);
        buf_free(&ax);
        return false;
      }
      if (out->mask & (1u << idx)) {
        diag_error(a->sp, "mesh axis '%.*s' appears twice in a partition spec", a->s.n, a->s.p);
        return false;
      }
      out->mask |= 1u << idx;
      out->dim[d].axes[out->dim[d].naxes++] = (uint8_t)idx;
    }
  }
  return true;
}

static int64_t spec_dim_factor(const Spec *sp, const Mesh *m, int d) {
  int64_t f = 1;
  if (d < sp->ndims)
    for (int k = 0; k < sp->dim[d].naxes; k++) f *= m->size[sp->dim[d].axes[k]];
  return f;
}

/* Check the specs and operands of a shard_map and build its equation. */
static IrFunc *build_shard_map(Ctx *cx, RuleCtx *r, Span sp, FuncDef *body, const Type *args, int nargs,
                               Attrs *at, Type **outp, int *noutp) {
  if (cx->mesh) {
    rule_error(r, "shard_map inside a shard_map body is not supported");
    return NULL;
  }
  Mesh *m = mesh_param(cx, r, get(r, "mesh"));
  if (!m) return NULL;
  PVal **ins, **outs;
  int nin, nout;
  PVal *outv = get(r, "out_specs");
  if (!spec_list(r, "in_specs", get(r, "in_specs"), nargs, &ins, &nin)) return NULL;
  if (!unparen(outv)) return missing(r, "out_specs"), NULL;
  bool check_vma = true;
  PVal *cr = unparen(get(r, "check_rep"));
  if (cr && cr->k != PV_BOOL) return rule_param_error(r, "check_rep", "check_rep must be True or False"), NULL;
  if (!rule_bool(r, "check_vma", cr ? cr->i != 0 : true, &check_vma)) return NULL;
  get(r, "auto");
  if (!rule_unused(r, "f mesh in_specs out_specs check_vma")) return NULL;
  if (nin != nargs) {
    rule_param_error(r, "in_specs", "shard_map has %d in_specs for %d argument%s", nin, nargs, nargs == 1 ? "" : "s");
    return NULL;
  }
  ShardMap *sm = NEW(cx->C, ShardMap);
  sm->mesh = m;
  sm->check_vma = check_vma;
  sm->in = NEWN(cx->C, Spec, nin);
  sm->nin = nin;
  Type *block = NEWN(cx->C, Type, nargs);
  for (int i = 0; i < nargs; i++) {
    if (!parse_spec(cx, m, ins[i], &sm->in[i])) { r->failed = true; return NULL; }
    Spec *spc = &sm->in[i];
    block[i] = args[i];
    if (spc->ndims > args[i].rank) {
      Buf b = {0};
      err_defer(buf_release, &b);
      spec_text(&b, spc, m);
      diag_error(ins[i]->sp.file >= 0 ? ins[i]->sp : sp, "in_specs[%d] %s has %d entr%s, but argument %d is %s of rank %d",
                 i, buf_cstr(&b), spc->ndims, spc->ndims == 1 ? "y" : "ies", i + 1, type_text(cx, &args[i]), args[i].rank);
      err_undefer(&b);
      buf_free(&b);
      r->failed = true;
      return NULL;
    }
    for (int d = 0; d < spc->ndims; d++) {
      int64_t f = spec_dim_factor(spc, m, d);
      if (args[i].shape[d] % f) {
        Buf b = {0};
        err_defer(buf_release, &b);
        spec_text(&b, spc, m);
        diag_error(ins[i]->sp.file >= 0 ? ins[i]->sp : sp,
                   "in_specs[%d] %s splits dimension %d of argument %d (%s) into %lld blocks, but %lld is not divisible by %lld",
                   i, buf_cstr(&b), d, i + 1, type_text(cx, &args[i]), (long long)f, (long long)args[i].shape[d], (long long)f);
        err_undefer(&b);
        buf_free(&b);
        r->failed = true;
        return NULL;
      }
      block[i].shape[d] /= f;
    }
    block[i].vma = spc->mask;
  }
  Ctx sub = *cx;
  sub.mesh = m;
  sub.ctrl = 0;
  IrFunc *f = instantiate(&sub, body, block, nargs, sp);
  if (!f) { r->failed = true; return NULL; }
  if (!spec_list(r, "out_specs", outv, f->nouts, &outs, &nout)) return NULL;
  if (nout != f->nouts) {
    rule_param_error(r, "out_specs", "shard_map has %d out_specs for %d result%s", nout, f->nouts, f->nouts == 1 ? "" : "s");
    return NULL;
  }
  sm->out = NEWN(cx->C, Spec, nout);
  sm->nout = nout;
  Type *gout = NEWN(cx->C, Type, nout);
  for (int i = 0; i < nout; i++) {
    if (!parse_spec(cx, m, outs[i], &sm->out[i])) { r->failed = true; return NULL; }
    Spec *spc = &sm->out[i];
    const IrAtom *o = &f->outs[i];
    Buf b = {0};
    err_defer(buf_release, &b);
    spec_text(&b, spc, m);
    if (spc->ndims > o->t.rank) {
      diag_error(outs[i]->sp.file >= 0 ? outs[i]->sp : sp, "out_specs[%d] %s has %d entr%s, but result %d is %s of rank %d",
                 i, buf_cstr(&b), spc->ndims, spc->ndims == 1 ? "y" : "ies", i + 1, type_text(&sub, &o->t), o->t.rank);
      err_undefer(&b);
      buf_free(&b);
      r->failed = true;
      return NULL;
    }
    uint32_t extra = o->t.vma & ~spc->mask;
    if (check_vma && extra) {
      int k = 0;
      while (!(extra & (1u << k))) k++;
      Buf ax = {0};
      err_defer(buf_release, &ax);
      vma_message(&ax, o->t.vma, m);
      const char *nm = o->var && o->var->name.n ? o->var->name.p : "the result";
      int nl = o->var && o->var->name.n ? o->var->name.n : (int)strlen("the result");
      diag_error(o->sp.file >= 0 ? o->sp : sp,
                 "out_specs %s promises replication over mesh axis '%.*s', but the result %.*s varies over %s",
                 buf_cstr(&b), m->axis[k].n, m->axis[k].p, nl, nm, buf_cstr(&ax));
      err_undefer(&ax);
      buf_free(&ax);
      err_undefer(&b);
      buf_free(&b);
      r->failed = true;
      return NULL;
    }
    err_undefer(&b);
    buf_free(&b);
    gout[i] = o->t;
    gout[i].vma = 0;
    for (int d = 0; d < spc->ndims; d++) gout[i].shape[d] *= spec_dim_factor(spc, m, d);
  }
  at->ext = sm;
  add_fn(cx, at, f);
  /* canonical parameters */
  record(r, "f", fn_ref(cx, 0));
  PVal *mv = NEW(cx->C, PVal);
  mv->k = PV_NAME;
  mv->s = m->name;
  record(r, "mesh", mv);
  PVal *it = NEW(cx->C, PVal), *ot = NEW(cx->C, PVal);
  it->k = ot->k = PV_TUPLE;
  it->items = ins; it->n = nin;
  ot->items = outs; ot->n = nout;
  record(r, "in_specs", it);
  record(r, "out_specs", ot);
  *outp = gout;
  *noutp = nout;
  return f;
}

static void check_shard_map_eqn(Ctx *cx, AstStmt *s, IrAtom *in, RuleCtx *r, Attrs *at) {
  FuncDef *fd = func_param(cx, r, "f", get(r, "f"));
  if (!fd) { bind_bad(cx, s); return; }
  if (!finish_literals(cx, in, (const AstArg *const *)s->args, s->nargs)) { bind_bad(cx, s); return; }
  Type *args = NEWN(cx->C, Type, s->nargs);
  for (int i = 0; i < s->nargs; i++) { in[i].t.weak = false; args[i] = in[i].t; }
  Type *out;
  int nout;
  if (!build_shard_map(cx, r, s->callee_sp, fd, args, s->nargs, at, &out, &nout)) { bind_bad(cx, s); return; }
  emit_special(cx, s, P_SHARD_MAP, at, r, in, s->nargs, out, nout, 0);
}

static void check_special(Ctx *cx, AstStmt *s, int prim, IrAtom *in) {
  RuleCtx r;
  rule_init(&r, cx, prim_table[prim].name, s->callee_sp, s->params, s->nparams);
  Attrs *at = NEW(cx->C, Attrs);
  at->dtype = -1;
  switch (prim) {
  case P_COND: check_cond(cx, s, in, &r, at); break;
  case P_FORI_LOOP: check_fori(cx, s, in, &r, at); break;
  case P_WHILE: check_while(cx, s, in, &r, at); break;
  case P_SHARD_MAP: check_shard_map_eqn(cx, s, in, &r, at); break;
  default: bind_bad(cx, s); break;
  }
}

/* A decorated def called with global argument types: a wrapper function
   whose one equation is the shard_map of the body. */
static IrFunc *shard_map_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  Checker *C = cx->C;
  AstFunc *af = fd->ast;
  if (!str_eqc(af->deco, "shard_map")) {
    diag_error(af->deco_sp, "unknown decorator '@%.*s' (shm knows @shard_map)", af->deco.n, af->deco.p);
    return NULL;
  }
  if (cx->mesh) {      /* as for the equation form: no shard_map inside a body */
    diag_error(call, "%.*s is a shard_map: it cannot be called inside a shard_map body (a body runs per device)",
               fd->name.n, fd->name.p);
    return NULL;
  }
  Instance *inst = NEW(C, Instance);
  inst->args = NEWN(C, Type, nargs);
  memcpy(inst->args, args, sizeof(Type) * (size_t)nargs);
  inst->nargs = nargs;
  inst->mesh = cx->mesh;
  inst->ctrl = cx->ctrl;
  inst->next = fd->inst;
  fd->inst = inst;
  IrFunc *w = NEW(C, IrFunc);
  w->name = arena_strndup(&C->arena, fd->name.p, (size_t)fd->name.n);
  w->sp = af->sp;
  w->ast = af;
  w->parent = fd->parent;
  w->is_shard_map_wrapper = true;
  w->end_line = af->end_line;
  Ctx sub;
  memset(&sub, 0, sizeof sub);
  sub.C = C;
  sub.fn = w;
  sub.scope = fd->scope;
  sub.file = af->sp.file;
  w->params = NEWN(C, IrVar *, nargs);
  w->nparams = nargs;
  IrAtom *in = NEWN(C, IrAtom, nargs);
  for (int i = 0; i < nargs; i++) {
    w->params[i] = new_var(&sub, i < af->nparams ? af->params[i]->name : str_c("x"), args[i], af->sp);
    in[i].var = w->params[i];
    in[i].t = args[i];
    in[i].sp = af->sp;
  }
  FuncDef *body = NEW(C, FuncDef);
  *body = *fd;
  body->inst = NULL;
  body->latest = NULL;
  body->parent = fd->parent;
  AstFunc *plain = NEW(C, AstFunc);
  *plain = *af;
  plain->has_deco = false;
  body->ast = plain;
  RuleCtx r;
  rule_init(&r, &sub, "shard_map", af->deco_sp, af->deco_params, af->ndeco_params);
  Attrs *at = NEW(C, Attrs);
  at->dtype = -1;
  Type *out;
  int nout;
  int errs = diag_count();
  IrFunc *f = build_shard_map(&sub, &r, call.file >= 0 ? call : af->sp, body, args, nargs, at, &out, &nout);
  if (!f) {
    if (diag_count() > errs && (call.file != af->sp.file || call.off != af->sp.off)) {
      Buf b = {0};
      err_defer(buf_release, &b);
      for (int i = 0; i < nargs; i++) {
        if (i) buf_puts(&b, ", ");
        show_type(&b, &args[i], NULL);
      }
      diag_note(call, "in this call of %.*s with (%s)", fd->name.n, fd->name.p, buf_cstr(&b));
      err_undefer(&b);
      buf_free(&b);
    }
    return NULL;
  }
  IrStmt *st = new_stmt(&sub, IS_EQN, af->deco_sp);
  st->line = st->line;
  st->prim = P_SHARD_MAP;
  st->at = at;
  st->params = r.canon;
  st->nparams = r.ncanon;
  st->in = in;
  st->nin = nargs;
  st->out = NEWN(C, IrVar *, nout);
  st->nout = nout;
  w->outs = NEWN(C, IrAtom, nout);
  w->nouts = nout;
  for (int i = 0; i < nout; i++) {
    st->out[i] = new_var(&sub, f->outs[i].var ? f->outs[i].var->name : str_c("y"), out[i], af->sp);
    w->outs[i].var = st->out[i];
    w->outs[i].t = out[i];
    w->outs[i].sp = af->sp;
  }
  emit(&sub, st);
  inst->ir = w;
  fd->latest = w;
  return w;
}

/* A decorated def whose parameters are all annotated (with block types)
   is checked where it is defined: the global types follow from in_specs. */
static void shard_map_define(Ctx *cx, FuncDef *fd) {
  AstFunc *af = fd->ast;
  if (!all_annotated(af) || !str_eqc(af->deco, "shard_map")) {
    if (!str_eqc(af->deco, "shard_map"))
      diag_error(af->deco_sp, "unknown decorator '@%.*s' (shm knows @shard_map)", af->deco.n, af->deco.p);
    return;
  }
  RuleCtx r;
  rule_init(&r, cx, "shard_map", af->deco_sp, af->deco_params, af->ndeco_params);
  Mesh *m = mesh_param(cx, &r, get(&r, "mesh"));
  PVal **ins;
  int nin;
  if (!m || !spec_list(&r, "in_specs", get(&r, "in_specs"), af->nparams, &ins, &nin)) return;
  if (nin != af->nparams) {
    rule_param_error(&r, "in_specs", "shard_map has %d in_specs for %d parameter%s", nin, af->nparams,
                     af->nparams == 1 ? "" : "s");
    return;
  }
  Type *args = NEWN(cx->C, Type, af->nparams);
  for (int i = 0; i < af->nparams; i++) {
    bool has_vma;
    Ctx sub = *cx;
    sub.mesh = m;
    if (!resolve_type(&sub, af->params[i]->type, &args[i], &has_vma)) return;
    Spec spc;
    if (!parse_spec(cx, m, ins[i], &spc)) return;
    if (spc.ndims > args[i].rank) {
      Buf b = {0};
      spec_text(&b, &spc, m);
      diag_error(ins[i]->sp.file >= 0 ? ins[i]->sp : af->deco_sp,
                 "in_specs[%d] %s has %d entr%s, but parameter %.*s is %s of rank %d", i, buf_cstr(&b), spc.ndims, spc.ndims == 1 ? "y" : "ies",
                 af->params[i]->name.n, af->params[i]->name.p, type_text(&sub, &args[i]), args[i].rank);
      buf_free(&b);
      return;
    }
    for (int d = 0; d < spc.ndims; d++) args[i].shape[d] *= spec_dim_factor(&spc, m, d);
    args[i].vma = 0;
  }
  instantiate(cx, fd, args, af->nparams, af->sp);
}

/* ---- function transformations ------------------------------------------------------------ */

/* `def g = linear_transpose[linear=(...)] f`: which parameters of f are linear. */
static bool transpose_linear(Ctx *cx, FuncDef *fd, FuncDef *target, bool **out) {
  AstFunc *af = fd->ast;
  int np = target->ast->form == FN_TRANSPOSE ? -1 : target->ast->nparams;
  RuleCtx r;
  rule_init(&r, cx, "linear_transpose", af->sp, af->tparams, af->ntparams);
  IntList lin;
  bool given = rule_has(&r, "linear");
  if (!rule_ints(&r, "linear", false, &lin) || !rule_unused(&r, "linear")) return false;
  fd->lin_given = given;
  fd->lin = lin;
  (void)np;
  *out = NULL;
  return true;
}

/* The newest checked instance, preferring one checked where the
   transpose is defined (so that a top-level `def f_tt = linear_transpose
   f_t` does not show an instance made inside a shard_map body). */
static Instance *preferred_instance(Instance *list, const Mesh *mesh) {
  Instance *pick = NULL;
  for (Instance *i = list; i; i = i->next)
    if (i->ir && (!pick || (pick->mesh != mesh && i->mesh == mesh))) pick = i;
  return pick;
}

static void transpose_define(Ctx *cx, FuncDef *fd) {
  AstFunc *af = fd->ast;
  if (!str_eqc(af->tprim, "linear_transpose")) {
    diag_error(span_join(af->sp, af->target_sp), "'%.*s' is not a function transformation shm knows (it knows linear_transpose)",
               af->tprim.n, af->tprim.p);
    return;
  }
  Binding *b = lookup(fd->scope, B_FUNC, af->target);
  if (!b) {
    diag_error(af->target_sp, "unknown function '%.*s'", af->target.n, af->target.p);
    return;
  }
  fd->target = b->fn;
  bool *unused;
  if (!transpose_linear(cx, fd, b->fn, &unused)) { fd->target = NULL; return; }
  /* transpose the instances the target already has (an annotated function
     has one from its definition) */
  for (Instance *i = preferred_instance(b->fn->inst, cx->mesh); i; i = i->next)
    if (i->ir) {
      IrFunc *f = i->ir;
      int nl = 0;
      for (int k = 0; k < f->nparams; k++) {
        bool l = !fd->lin_given;
        for (int j = 0; j < fd->lin.n; j++) if (fd->lin.v[j] == k) l = true;
        nl += !l;
      }
      Type *args = NEWN(cx->C, Type, nl + f->nouts);
      int n = 0;
      for (int k = 0; k < f->nparams; k++) {
        bool l = !fd->lin_given;
        for (int j = 0; j < fd->lin.n; j++) if (fd->lin.v[j] == k) l = true;
        if (!l) args[n++] = f->params[k]->t;
      }
      for (int j = 0; j < f->nouts; j++) args[n++] = f->outs[j].t;
      Ctx sub = *cx;
      sub.mesh = i->mesh;
      sub.ctrl = i->ctrl;
      transpose_instance(&sub, fd, args, n, af->sp);
      break;
    }
}

static IrFunc *transpose_instance(Ctx *cx, FuncDef *fd, const Type *args, int nargs, Span call) {
  AstFunc *af = fd->ast;
  FuncDef *t = fd->target;
  if (!t) return NULL;
  for (Instance *i = t->inst; i; i = i->next) {
    IrFunc *f = i->ir;
    if (!f || i->mesh != cx->mesh) continue;
    bool *lin = NEWN(cx->C, bool, f->nparams);
    bool bad = false;
    for (int j = 0; j < fd->lin.n; j++) {
      int64_t k = fd->lin.v[j];
      if (k < 0 || k >= f->nparams) {
        diag_error(af->sp, "linear=(...) names parameter %lld, but %.*s has %d parameter%s", (long long)k,
                   t->name.n, t->name.p, f->nparams, f->nparams == 1 ? "" : "s");
        return NULL;
      }
      if (lin[k]) bad = true;
      lin[k] = true;
    }
    if (bad) {
      diag_error(af->sp, "linear=(...) names a parameter twice");
      return NULL;
    }
    if (!fd->lin_given)
      for (int k = 0; k < f->nparams; k++) lin[k] = true;
    /* the instance must match: non-linear parameter types, then result types */
    int n = 0;
    bool match = true;
    for (int k = 0; k < f->nparams && match; k++)
      if (!lin[k]) match = n < nargs && types_equal(&f->params[k]->t, &args[n++]);
    for (int j = 0; j < f->nouts && match; j++) match = n < nargs && types_equal(&f->outs[j].t, &args[n++]);
    if (!match || n != nargs) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", fd->name.n, fd->name.p);
    IrFunc *g = tr_linear_transpose(cx->C, f, lin, name, af->sp);
    Instance *inst = NEW(cx->C, Instance);
    inst->args = NEWN(cx->C, Type, nargs);
    memcpy(inst->args, args, sizeof(Type) * (size_t)nargs);
    inst->nargs = nargs;
    inst->mesh = cx->mesh;
    inst->ctrl = cx->ctrl;
    inst->ir = g;
    inst->next = fd->inst;
    fd->inst = inst;
    if (g) fd->latest = g;
    else diag_note(af->sp, "while transposing %.*s", t->name.n, t->name.p);
    return g;
  }
  Buf b = {0};
  err_defer(buf_release, &b);
  for (int i = 0; i < nargs; i++) {
    if (i) buf_puts(&b, ", ");
    show_type(&b, &args[i], cx->mesh);
  }
  diag_error(call, "%.*s transposes %.*s, but %.*s has no checked version whose non-linear parameters and results "
             "are (%s)%s",
             fd->name.n, fd->name.p, t->name.n, t->name.p, t->name.n, t->name.p, buf_cstr(&b),
             t->ast->form != FN_TRANSPOSE && !all_annotated(t->ast) ? ": annotate its parameters or call it first" : "");
  err_undefer(&b);
  buf_free(&b);
  return NULL;
}

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
  v = unparen(v);
  if (v && (v->k == PV_TUPLE || v->k == PV_LIST) && v->n) v = unparen(v->items[0]);
  if (!v) return -1;
  if (v->k == PV_FUNC && v->fn) return ast_func_nouts(v->fn);
  if (v->k == PV_NAME) {
    Binding *b = lookup(cx->scope, B_FUNC, v->s);
    if (b) return ast_func_nouts(b->fn->ast);
  }
  return -1;
}

static int64_t param_int(AstStmt *s, const char *key) {
  for (int i = 0; i < s->nparams; i++)
    if (str_eqc(s->params[i]->key, key)) {
      PVal *v = unparen(s->params[i]->v);
      if (v && v->k == PV_INT) return v->i;
    }
  return 0;
}

/* How many results the right-hand side of `s` gives (1 when unsure: the
   checker then says what it found). */
static int expr_nouts(Ctx *cx, AstStmt *s) {
  if (s->k != ST_EQN) return 1;
  Binding *b = lookup(cx->scope, B_FUNC, s->callee);
  if (b) {
    IrAtom *in = NEWN(cx->C, IrAtom, s->nargs);
    bool silent;
    if (!resolve_args(cx, s, in, &silent)) return -1;
    Type *at = NEWN(cx->C, Type, s->nargs);
    for (int k = 0; k < s->nargs; k++) {
      at[k] = in[k].t;
      at[k].weak = false;
    }
    IrFunc *f = instantiate(cx, b->fn, at, s->nargs, s->callee_sp);
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
  AstList *stmts = parse_file(&C->arena, file);
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
  memset(&cx, 0, sizeof cx);
  cx.C = C;
  cx.fn = f;
  cx.mesh = f->mesh;
  cx.ctrl = ctrl;
  cx.file = file;
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
      cx.scope = bind(C, cx.scope, B_VAR, vars[i]->name);
      cx.scope->var = vars[i];
    }
  }
  if (s->k == ST_EQN && !s->has_params && !s->nargs && !lookup(cx.scope, B_VAR, s->callee) &&
      !lookup(cx.scope, B_FUNC, s->callee) && prim_lookup(s->callee) < 0) {
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
      outs[i]->name = str_c(arena_strndup(&C->arena, nm, strlen(nm)));
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
    Binding *b = lookup(cx.scope, B_VAR, s->outs[i]->name);
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
  Binding *b = lookup(C->top, B_FUNC, name);
  if (!b || !b->fn->latest) return false;
  char nm[256];
  snprintf(nm, sizeof nm, "%.*s", name.n, name.p);
  show_func(out, b->fn->latest, nm);
  return true;
}
