/*
** api.c — the embedding API (include/shmapi.h) over the layers.
**
** A shmapi_State owns one interpreter state (state.h), the checker and the
** evaluator of its program, and the diagnostics of its last call.  Every
** entry point makes the state current for its thread (state_enter) and
** restores the previous one on return, and sets an error boundary (err.h)
** so that no runtime error, out-of-memory included, leaves the call.
** Arrays handed out share the state's elements (a reference on the
** interpreter's Array) and are kept on a list, so that shmapi_close releases
** those the caller forgot.
*/
#include <pthread.h>
#include <shmapi.h>
#include <stdio.h>
#include <stdlib.h>
#include "abstract.h"
#include "check.h"
#include "diag.h"
#include "err.h"
#include "eval.h"
#include "fabric.h"
#include "hw.h"
#include "parse.h"
#include "state.h"
#include "rngkey.h"
#include "tiling.h"
#include "timeline.h"
#include "tracefile.h"

/* The API's dtypes are shmapi's array dtypes in its order; typed PRNG keys
   (key<fry>, after them) stay inside: random_unwrap gives their data. */
_Static_assert((int)SHMAPI_NDTYPES == (int)DT_KEY_FRY, "shmapi_DType follows DType");
_Static_assert(SHMAPI_MAX_NDIM == SHM_MAXRANK && SHMAPI_MAX_NDIM == SHM_MAXAXES, "the limits agree");

/* What is handed out (shmapi_Array, shmapi_Devices, shmapi_Cost), on the state's
   list of what the caller still holds. */
typedef struct Held {
  struct Held *prev, *next;
  shmapi_State *S;
  int kind;                   /* H_ARRAY, H_DEVICES, H_COST */
  Array *arr;                 /* H_ARRAY: the reference it holds */
} Held;
enum { H_ARRAY, H_DEVICES, H_COST };

struct shmapi_State {
  ShmState *st;
  Checker *C;
  Interp *I;
  int ran;                    /* top-level statements run so far */
  long long max_steps;
  shmapi_Diag *diags;            /* the last call's (malloc'd, strings too) */
  int ndiags, capdiags;
  Held held;                  /* the list's head */
  Array **borrowed;           /* SHMAPI_BORROW arrays: their headers, kept until close */
  int nborrowed, capborrowed;
  int nargs_made;             /* variables made for calls' arguments */
  /* the glue of calls made (call_glue), reused by a call of the same
     function with arguments of the same types: a program called many
     times grows by nothing; forgotten when more text is loaded */
  struct Glue *glue;
  int nglue, capglue;
};

typedef struct Glue {
  char *name;
  int nargs;
  Type *types;                /* the arguments' (mem_alloc'd) */
  IrVar **vars;               /* the variables holding them */
  IrFunc *fn;                 /* `name vars...`, checked */
} Glue;

static void glue_forget(shmapi_State *S) {
  for (int i = 0; i < S->nglue; i++) {
    mem_free(S->glue[i].name);
    mem_free(S->glue[i].types);
    mem_free(S->glue[i].vars);
  }
  S->nglue = 0;
}

/* ---- entering and leaving ------------------------------------------------- */

/* Each entry point: `ENTER(S)` ... `return LEAVE(rc)`: rc is computed
   first, in S's state, then the caller's state is restored. */
#define ENTER(S) ShmState *prev_state_ = state_enter((S)->st)
#define LEAVE(rc) leave(prev_state_, (rc))

static int leave(ShmState *prev, int rc) {
  state_enter(prev);
  return rc;
}

const char *shmapi_version(void) { return SHM_VERSION; }

static char *dup_c(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

static void diags_clear(shmapi_State *S) {
  for (int i = 0; i < S->ndiags; i++) {
    free((char *)S->diags[i].file);
    free((char *)S->diags[i].message);
    free((char *)S->diags[i].text);
  }
  S->ndiags = 0;
}

/* A diagnostic as a value (kind NULL: a plain message about no place). */
static void diag_keep(void *ud, Span sp, const char *kind, const char *msg, const char *trace) {
  shmapi_State *S = ud;
  if (S->ndiags == S->capdiags) {
    int cap = S->capdiags ? 2 * S->capdiags : 8;
    shmapi_Diag *d = realloc(S->diags, sizeof *d * (size_t)cap);
    if (!d) return;               /* no memory: the status still says it failed */
    S->diags = d;
    S->capdiags = cap;
  }
  shmapi_Diag *d = &S->diags[S->ndiags++];
  memset(d, 0, sizeof *d);
  d->kind = kind && !strcmp(kind, "note") ? "note" : "error";
  if (sp.file >= 0) {
    d->file = dup_c(diag_file_name(sp.file));
    diag_linecol(sp.file, sp.off, &d->line, &d->col);
  }
  d->message = dup_c(msg);
  d->text = diag_render(sp, kind, msg);      /* (kind NULL: "shmapi: msg") */
  if (trace && d->text) {                    /* a runtime error's traceback first, as printed */
    char *both = malloc(strlen(trace) + strlen(d->text) + 1);
    if (both) strcat(strcpy(both, trace), d->text);
    free((char *)d->text);
    d->text = both;
  }
}

/* A static diagnostic (diag_take's callback): no traceback. */
static void diag_keep_static(void *ud, Span sp, const char *kind, const char *msg) { diag_keep(ud, sp, kind, msg, NULL); }

/* The error of a call that could not even start (a bad argument). */
static int misuse(shmapi_State *S, const char *fmt, const char *arg) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, arg ? arg : "(null)");
  diag_keep(S, span_none(), "error", msg, NULL);
  return SHMAPI_MISUSE;
}

/* A runtime error caught at an entry point's boundary. */
static int caught(shmapi_State *S) {
  diag_clear();
  diag_keep(S, span_none(), "error", err_message(), NULL);
  return SHMAPI_ERROR;
}

/* ---- states ------------------------------------------------------------------------ */

static pthread_once_t process_once = PTHREAD_ONCE_INIT;
static void process_init(void) { hw_json_init(); }     /* jansson's allocator: mem.h's */

static void apply_limits(shmapi_State *S, const shmapi_Limits *l) {
  mem_set_limit(l ? l->max_memory : 0);
  mem_fail_after(l ? l->fail_alloc_after : 0);
  S->max_steps = l ? l->max_steps : 0;
  if (S->I) eval_set_max_steps(S->I, (long)S->max_steps);
}

shmapi_State *shmapi_open(const shmapi_Limits *limits) {
  pthread_once(&process_once, process_init);
  shmapi_State *S = calloc(1, sizeof *S);
  if (!S) return NULL;
  S->st = state_new();
  if (!S->st) {
    free(S);
    return NULL;
  }
  S->st->on_report = diag_keep;
  S->st->on_report_ud = S;
  S->held.next = S->held.prev = &S->held;
  ENTER(S);
  ErrJmp j;
  bool ok = false;
  if (ERR_TRY(&j)) {
    apply_limits(S, limits);
    S->C = check_new();
    check_set_whole_program(S->C);
    S->I = eval_new(check_main(S->C));
    eval_set_max_steps(S->I, (long)S->max_steps);
    ok = true;
    err_end(&j);
  }
  if (!ok) {
    state_enter(prev_state_);
    shmapi_close(S);
    return NULL;
  }
  state_enter(prev_state_);
  return S;
}

static void held_unlink(Held *h) {
  h->prev->next = h->next;
  h->next->prev = h->prev;
}

static void held_release(Held *h);

size_t shmapi_close(shmapi_State *S) {
  if (!S) return 0;
  ENTER(S);
  while (S->held.next != &S->held) held_release(S->held.next);
  eval_free(S->I);
  check_free(S->C);
  for (int i = 0; i < S->nborrowed; i++) mem_free(S->borrowed[i]);
  mem_free(S->borrowed);
  glue_forget(S);
  mem_free(S->glue);
  diags_clear(S);
  free(S->diags);
  state_enter(prev_state_);
  size_t left = state_free(S->st);
  free(S);
  return left;
}

int shmapi_set_limits(shmapi_State *S, const shmapi_Limits *limits) {
  if (!S) return SHMAPI_MISUSE;
  ENTER(S);
  diags_clear(S);
  apply_limits(S, limits);
  return LEAVE(SHMAPI_OK);
}

size_t shmapi_memory_in_use(shmapi_State *S) { return S ? S->st->in_use : 0; }

int shmapi_set_print(shmapi_State *S, shmapi_Writer fn, void *ud) {
  if (!S) return SHMAPI_MISUSE;
  S->st->out = fn;
  S->st->out_ud = ud;
  return SHMAPI_OK;
}

int shmapi_set_pictures(shmapi_State *S, shmapi_PictureWriter fn, void *ud) {
  if (!S) return SHMAPI_MISUSE;
  S->st->on_picture = fn;
  S->st->on_picture_ud = ud;
  return SHMAPI_OK;
}

int shmapi_set_warnings(shmapi_State *S, shmapi_Writer fn, void *ud) {
  if (!S) return SHMAPI_MISUSE;
  S->st->errout = fn;
  S->st->errout_ud = ud;
  return SHMAPI_OK;
}

void shmapi_interrupt(shmapi_State *S) {
  if (S) S->st->interrupted = 1;
}

int shmapi_ndiags(shmapi_State *S) { return S ? S->ndiags : 0; }

const shmapi_Diag *shmapi_diag(shmapi_State *S, int i) { return S && i >= 0 && i < S->ndiags ? &S->diags[i] : NULL; }

/* ---- loading and running --------------------------------------------------------------- */

/* Check the file registered as f; on errors forget what it added. */
static int check_loaded(shmapi_State *S, int f) {
  if (f < 0) return SHMAPI_MISUSE;          /* (parse_load reported it: diag_keep) */
  CheckMark m = check_mark(S->C);
  /* a `# jax VERSION` header chooses the counters of random bits */
  int errs = rngk_apply_header(f) ? check_file(S->C, f) : 1;
  if (errs || diag_count()) {
    diag_take(diag_keep_static, S);
    check_rollback(S->C, m);
    return SHMAPI_ERROR;
  }
  glue_forget(S);             /* a function may have a new meaning */
  return SHMAPI_OK;
}

static int load(shmapi_State *S, const char *name, const char *text, size_t len, const char *path) {
  if (!S) return SHMAPI_MISUSE;
  ENTER(S);
  diags_clear(S);
  if (!path && !text) return LEAVE(misuse(S, "shmapi_load_string: no text%s", ""));
  if (path && !*path) return LEAVE(misuse(S, "shmapi_load_file: no path%s", ""));
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    int f = path ? parse_load(path, span_none()) : parse_load_text(name ? name : "<string>", text, len);
    rc = check_loaded(S, f);
    err_end(&j);
  } else {
    rc = caught(S);
  }
  return LEAVE(rc);
}

int shmapi_load_string(shmapi_State *S, const char *name, const char *text, size_t len) {
  return load(S, name, text, len, NULL);
}

int shmapi_load_file(shmapi_State *S, const char *path) { return load(S, NULL, NULL, 0, path ? path : ""); }

/* Run what is loaded and not yet run (the state is entered). */
static int run_rest(shmapi_State *S) {
  int from = S->ran;
  S->ran = check_main(S->C)->nbody;
  S->st->interrupted = 0;
  eval_set_max_steps(S->I, (long)S->max_steps);
  /* eval_run sets its own boundary and reports a runtime error through
     the state's on_report (diag_keep); this one catches what fails
     around it */
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    rc = eval_run(S->I, from) ? SHMAPI_OK : SHMAPI_ERROR;
    err_end(&j);
  } else {
    rc = caught(S);
  }
  return rc;
}

int shmapi_release_dead(shmapi_State *S) {
  if (!S) return SHMAPI_MISUSE;
  ENTER(S);
  diags_clear(S);
  eval_release_top(S->I);
  return LEAVE(SHMAPI_OK);
}

int shmapi_run(shmapi_State *S) {
  if (!S) return SHMAPI_MISUSE;
  ENTER(S);
  diags_clear(S);
  return LEAVE(run_rest(S));
}

/* ---- arrays -------------------------------------------------------------------------------- */

size_t shmapi_dtype_size(int dtype) { return dtype >= 0 && dtype < SHMAPI_NDTYPES ? dtype_sizes[dtype] : 0; }

const char *shmapi_dtype_name(int dtype) { return dtype >= 0 && dtype < SHMAPI_NDTYPES ? dtype_names[dtype] : NULL; }

/* Whether a caller's array is well formed; else the reason. */
static const char *array_problem_of(const shmapi_Array *a, bool need_data) {
  if (!a) return "no array";
  if (a->dtype < 0 || a->dtype >= SHMAPI_NDTYPES) return "an unknown dtype";
  if (a->ndim < 0 || a->ndim > SHM_MAXRANK) return "a rank out of range (0 to 16)";
  int64_t n = 1;
  for (int d = 0; d < a->ndim; d++) {
    if (a->shape[d] < 0) return "a negative dimension";
    if (a->shape[d] && n > INT64_MAX / a->shape[d]) return "too many elements";
    n *= a->shape[d];
  }
  if (n && !a->data && need_data) return "no data";
  return NULL;
}

static const char *array_problem(const shmapi_Array *a) { return array_problem_of(a, true); }

/* The interpreter's array of a caller's: a copy, or (borrow) a header over
   the caller's elements, kept by the state until it closes (the caller
   keeps the buffer alive and unchanged that long). */
static Array *array_in(shmapi_State *S, const shmapi_Array *a, bool borrow) {
  if (borrow && (uintptr_t)a->data % dtype_sizes[a->dtype] == 0) {
    Array *r = mem_calloc(sizeof(Array));
    err_defer(mem_free, r);
    VEC_GROW(S->borrowed, S->capborrowed, S->nborrowed + 1);
    err_undefer(r);
    r->refc = 2;                /* the state's, never dropped before close: never donated */
    r->dt = (uint8_t)a->dtype;
    r->rank = (uint8_t)a->ndim;
    r->size = shape_size(a->ndim, a->shape);
    memcpy(r->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    r->data = a->data;
    S->borrowed[S->nborrowed++] = r;
    return r;
  }
  Array *r = arr_new((DType)a->dtype, a->ndim, a->shape);
  if (r->size) memcpy(r->data, a->data, arr_nbytes(r));
  return r;
}

static Held *held_new(shmapi_State *S, int kind, size_t size) {
  Held *h = calloc(1, size);
  if (!h) err_throw("out of memory: the system refused %zu bytes", size);
  h->S = S;
  h->kind = kind;
  h->next = S->held.next;
  h->prev = &S->held;
  S->held.next->prev = h;
  S->held.next = h;
  return h;
}

/* Off the state's list: what a shmapi_Devices holds is released with it. */
static void held_adopt(Held *h) {
  held_unlink(h);
  h->next = h->prev = h;
}

/* A handed-out array: a Held followed by the shmapi_Array. */
typedef struct HeldArray {
  Held h;
  shmapi_Array a;
} HeldArray;

/* An array handed out over (a new reference to) the interpreter's a. */
static shmapi_Array *array_out(shmapi_State *S, Array *a) {
  if ((int)a->dt >= (int)SHMAPI_NDTYPES)
    err_throw("a %s array cannot leave shmapi: random_unwrap gives its u32 data", dtype_names[a->dt]);
  Array *c = arr_contig(a);       /* (a pitched view is copied) */
  err_defer((void (*)(void *))arr_free_, c);
  HeldArray *ha = (HeldArray *)held_new(S, H_ARRAY, sizeof(HeldArray));
  err_undefer(c);
  ha->h.arr = c;
  shmapi_Array *r = &ha->a;
  r->dtype = c->dt;
  r->ndim = c->rank;
  memcpy(r->shape, c->shape, sizeof(int64_t) * c->rank);
  r->data = c->data;
  r->size = (size_t)c->size;
  r->nbytes = arr_nbytes(c);
  r->priv_ = ha;
  return r;
}

typedef struct HeldCost HeldCost;
static void cost_release(HeldCost *hc);

static void held_release(Held *h) {
  held_unlink(h);
  if (h->kind == H_ARRAY) arr_unref(h->arr);
  if (h->kind == H_DEVICES) {
    shmapi_Devices *d = (shmapi_Devices *)(h + 1);
    for (int i = 0; i < d->nouts; i++)
      if (d->outs[i]) held_release(d->outs[i]->priv_);
    for (int64_t b = 0; b < d->nblocks; b++)
      if (d->blocks[b].array) held_release(d->blocks[b].array->priv_);
    free(d->outs);
    free(d->blocks);
  }
  if (h->kind == H_COST) cost_release((HeldCost *)h);
  free(h);
}

/* Release something handed out, in its state. */
static void release_out(void *priv) {
  if (!priv) return;
  Held *h = priv;
  ShmState *prev = state_enter(h->S->st);
  held_release(h);
  state_enter(prev);
}

void shmapi_array_free(shmapi_Array *a) {
  if (a) release_out(a->priv_);
}

/* A top-level variable `name` of the checker bound to the caller's array
   (borrowed or copied: array_in), its value set in the top frame. */
static bool same_type(const Type *a, const Type *b) {
  return a->dt == b->dt && a->rank == b->rank && !memcmp(a->shape, b->shape, sizeof(int64_t) * a->rank);
}

/* The type of a caller's array (invariant, not weak). */
static void arg_type(const shmapi_Array *a, Type *t) {
  memset(t, 0, sizeof *t);
  t->dt = (uint8_t)a->dtype;
  t->rank = (uint8_t)a->ndim;
  memcpy(t->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
}

/* Give variable v the value of a caller's array. */
static void assign_array(shmapi_State *S, IrVar *v, const shmapi_Array *a, bool borrow) {
  Array *arr = array_in(S, a, borrow);
  eval_assign(eval_top(S->I), v, val_of(arr));     /* (val_of takes its own reference) */
  arr_unref(arr);
}

/* A new variable of a's type, given a's value unless `typed_only` (an
   abstract call's argument: a type, no value). */
static IrVar *bind_var(shmapi_State *S, const char *name, const shmapi_Array *a, bool borrow, bool global,
                       bool typed_only) {
  Type t;
  arg_type(a, &t);
  IrVar *v = check_new_var(S->C, name, &t, global);
  if (!typed_only) assign_array(S, v, a, borrow);
  return v;
}

static IrVar *bind_array(shmapi_State *S, const char *name, const shmapi_Array *a, bool borrow, bool global) {
  return bind_var(S, name, a, borrow, global, false);
}

int shmapi_set_global(shmapi_State *S, const char *name, const shmapi_Array *a, int flags) {
  if (!S) return SHMAPI_MISUSE;
  ENTER(S);
  diags_clear(S);
  const char *why = array_problem(a);
  if (why) return LEAVE(misuse(S, "shmapi_set_global: %s", why));
  if (!name || !*name) return LEAVE(misuse(S, "shmapi_set_global: no name%s", ""));
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    bind_array(S, name, a, flags & SHMAPI_BORROW, true);
    rc = SHMAPI_OK;
    err_end(&j);
  } else {
    rc = caught(S);
  }
  return LEAVE(rc);
}

int shmapi_get_global(shmapi_State *S, const char *name, shmapi_Array **out) {
  if (!S || !out) return SHMAPI_MISUSE;
  *out = NULL;
  ENTER(S);
  diags_clear(S);
  IrVar *v = name ? check_lookup_var(S->C, str_c(name)) : NULL;
  Val *val = v ? eval_global(S->I, v) : NULL;
  if (!v) return LEAVE(misuse(S, "no top-level variable '%s'", name));
  if (!val || val->nblk < 1 || !val->blk[0]) return LEAVE(misuse(S, "'%s' has no value (not run yet, or released)", name));
  if (val->nblk != 1) return LEAVE(misuse(S, "'%s' has a block per device: not a top-level array", name));
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    *out = array_out(S, val->blk[0]);
    rc = SHMAPI_OK;
    err_end(&j);
  } else {
    rc = caught(S);
  }
  return LEAVE(rc);
}

/* ---- calls -------------------------------------------------------------------------------- */

int shmapi_has_function(shmapi_State *S, const char *name) {
  if (!S || !name) return 0;
  ENTER(S);
  bool has = check_has_func(S->C, str_c(name));
  return LEAVE(has ? 1 : 0);
}

/* What a call of a shard_map function left on the devices: the results of
   the last outermost body that returned, per device. */
typedef struct Capture {
  const Mesh *mesh;
  Val **vals;                 /* the body's results (references) */
  int nvals;
} Capture;

static void capture_drop(Capture *c) {
  for (int i = 0; i < c->nvals; i++) val_unref(c->vals[i]);
  mem_free(c->vals);
  c->vals = NULL;
  c->nvals = 0;
}

static void capture_ret(void *data, Frame *F, IrStmt *site) {
  Capture *c = data;
  (void)site;
  if (!F->space.mesh || (F->caller && F->caller->space.mesh)) return;     /* outermost bodies only */
  capture_drop(c);
  c->mesh = F->space.mesh;
  c->vals = mem_calloc(sizeof(Val *) * (size_t)(F->fn->nouts ? F->fn->nouts : 1));
  c->nvals = F->fn->nouts;
  for (int i = 0; i < F->fn->nouts; i++) {
    IrAtom *a = &F->fn->outs[i];
    c->vals[i] = a->var ? val_ref(eval_lookup(F, a->var)) : a->lit ? val_of(a->lit) : NULL;
  }
}

static void ignore_call(void *data, Frame *F, IrStmt *site) { (void)data, (void)F, (void)site; }
static void ignore_stmt(void *data, Frame *F, IrStmt *st, int index) { (void)data, (void)F, (void)st, (void)index; }

/* The call's glue: `name a0 a1 ...` over new variables holding the
   arguments, checked for their types; then run.  outs get the results
   (new references), *nouts how many. */
static IrFunc *call_glue(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs, IrVar **vars,
                         bool typed_only) {
  Buf text = {0};
  err_defer(buf_release, &text);
  buf_puts(&text, name);
  for (int i = 0; i < nargs; i++) {
    char vn[48];
    snprintf(vn, sizeof vn, "__shm_arg%d", S->nargs_made++);
    vars[i] = bind_var(S, vn, &args[i], false, false, typed_only);
    buf_printf(&text, " %s", vn);
  }
  IrFunc *fn = check_expr(S->C, "<call>", buf_cstr(&text), check_main(S->C), vars, nargs, 0);
  err_undefer(&text);
  buf_free(&text);
  return fn;
}

/* The glue of a call of `name` on args, made before for arguments of the
   same types (their variables given the new values), or made now and
   kept.  vars get the variables holding the arguments (`typed_only`:
   their types, no values). */
static IrFunc *glue_for(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs, IrVar **vars,
                        bool typed_only) {
  Type *t = mem_calloc(sizeof(Type) * (size_t)(nargs + 1));
  err_defer(mem_free, t);
  for (int i = 0; i < nargs; i++) arg_type(&args[i], &t[i]);
  for (int g = 0; g < S->nglue; g++) {
    Glue *G = &S->glue[g];
    if (G->nargs != nargs || strcmp(G->name, name)) continue;
    bool same = true;
    for (int i = 0; i < nargs && same; i++) same = same_type(&G->types[i], &t[i]);
    if (!same) continue;
    for (int i = 0; i < nargs; i++) {
      vars[i] = G->vars[i];
      if (!typed_only) assign_array(S, vars[i], &args[i], false);
    }
    err_undefer(t);
    mem_free(t);
    return G->fn;
  }
  IrFunc *fn = call_glue(S, name, args, nargs, vars, typed_only);
  if (fn && S->nglue < 64) {
    VEC_GROW(S->glue, S->capglue, S->nglue + 1);
    Glue *G = &S->glue[S->nglue];
    G->name = mem_alloc(strlen(name) + 1);
    memcpy(G->name, name, strlen(name) + 1);
    G->nargs = nargs;
    G->types = t;
    G->vars = mem_calloc(sizeof(IrVar *) * (size_t)(nargs + 1));
    memcpy(G->vars, vars, sizeof(IrVar *) * (size_t)nargs);
    G->fn = fn;
    S->nglue++;
    err_undefer(t);
    return fn;
  }
  err_undefer(t);
  mem_free(t);
  return fn;
}

/* The call, watched by `ob` when given (a Capture's), or timed by T. */
static int call(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs, shmapi_Array **outs, int maxouts,
                int *nouts, const EvalObserver *ob, Timeline *T) {
  for (int i = 0; i < nargs; i++) {
    const char *why = array_problem(&args[i]);
    if (why) return misuse(S, "an argument with %s", why);
  }
  if (!check_has_func(S->C, str_c(name))) return misuse(S, "no function '%s'", name);
  IrVar **vars = mem_calloc(sizeof(IrVar *) * (size_t)(nargs + 1));
  err_defer(mem_free, vars);
  IrFunc *fn = glue_for(S, name, args, nargs, vars, false);
  int rc = SHMAPI_ERROR;
  if (!fn) {
    diag_take(diag_keep_static, S);
  } else if (fn->nouts > maxouts) {
    char msg[160];
    snprintf(msg, sizeof msg, "'%s' gives %d results; room was given for %d", name, fn->nouts, maxouts);
    diag_keep(S, span_none(), "error", msg, NULL);
    rc = SHMAPI_MISUSE;
  } else {
    Val **res = mem_calloc(sizeof(Val *) * (size_t)(fn->nouts + 1));
    err_defer(mem_free, res);
    S->st->interrupted = 0;
    eval_set_max_steps(S->I, (long)S->max_steps);
    EvalObserver tob;
    if (T) {            /* the top level as it is now, the call's arguments bound */
      tl_top(T, eval_top(S->I), check_main(S->C));
      tob = tl_observer(T);
      ob = &tob;
    }
    if (ob) eval_set_observer(S->I, ob);
    Span where = span_none();
    bool ok = eval_call(S->I, eval_top(S->I), fn, res, false, &where);
    if (ob) eval_set_observer(S->I, NULL);
    if (!ok) {
      diag_keep(S, where, "error", err_message(), NULL);
      for (int i = 0; i < fn->nouts; i++) val_unref(res[i]);
    } else {
      /* results: invariant top-level values, one block each */
      int k = 0;
      for (int i = 0; i < fn->nouts; i++) {
        outs[k++] = res[i] && res[i]->nblk == 1 && res[i]->blk[0] ? array_out(S, res[i]->blk[0]) : NULL;
        val_unref(res[i]);
        res[i] = NULL;
      }
      *nouts = k;
      rc = SHMAPI_OK;
    }
    err_undefer(res);
    mem_free(res);
  }
  for (int i = 0; i < nargs; i++)
    if (vars[i]) eval_assign(eval_top(S->I), vars[i], NULL);
  err_undefer(vars);
  mem_free(vars);
  return rc;
}

int shmapi_call(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs, shmapi_Array **outs, int maxouts,
             int *nouts) {
  if (!S) return SHMAPI_MISUSE;
  ENTER(S);
  diags_clear(S);
  int dummy;
  int *volatile pn = nouts ? nouts : &dummy;
  *pn = 0;
  if (!name || nargs < 0 || (nargs && !args) || maxouts < 0 || (maxouts && !outs))
    return LEAVE(misuse(S, "shmapi_call: bad arguments (function %s)", name));
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    rc = call(S, name, args, nargs, outs, maxouts, pn, NULL, NULL);
    err_end(&j);
  } else {
    for (int i = 0; i < *pn; i++) shmapi_array_free(outs[i]);
    *pn = 0;
    rc = caught(S);
  }
  return LEAVE(rc);
}

/* A shmapi_Devices: a Held followed by it. */
typedef struct HeldDevices {
  Held h;
  shmapi_Devices d;
  char axis_text[SHM_MAXAXES][64];
} HeldDevices;

/* The description of what cap saw, with the call's results outs. */
static shmapi_Devices *devices_out(shmapi_State *S, Capture *cap, shmapi_Array **outs, int nouts) {
  HeldDevices *hd = (HeldDevices *)held_new(S, H_DEVICES, sizeof(HeldDevices));
  shmapi_Devices *d = &hd->d;
  d->priv_ = hd;
  const Mesh *m = cap->mesh;
  d->naxes = m->naxes;
  d->ndevices = m->ndev;
  d->outs = calloc((size_t)(nouts ? nouts : 1), sizeof *d->outs);
  d->blocks = calloc((size_t)(cap->nvals * m->ndev + 1), sizeof *d->blocks);
  if (!d->outs || !d->blocks) err_throw("out of memory");
  for (int k = 0; k < m->naxes; k++) {
    snprintf(hd->axis_text[k], sizeof hd->axis_text[k], "%.*s", m->axis[k].n, m->axis[k].p);
    d->axis[k] = hd->axis_text[k];
    d->axis_size[k] = m->size[k];
  }
  for (int i = 0; i < nouts; i++) {
    d->outs[i] = outs[i];
    outs[i] = NULL;
    if (d->outs[i]) held_adopt(d->outs[i]->priv_);
  }
  d->nouts = nouts;
  for (int i = 0; i < cap->nvals; i++)
    for (int64_t dev = 0; dev < m->ndev; dev++) {
      shmapi_Block *b = &d->blocks[d->nblocks++];
      b->output = i;
      b->device = dev;
      int64_t coords[SHM_MAXAXES];
      til_coords(m, dev, coords);
      memcpy(b->coords, coords, sizeof(int64_t) * (size_t)m->naxes);
      Val *v = cap->vals[i];
      Array *a = v ? v->blk[til_block_of(m, v->mask, dev)] : NULL;
      if (a) {
        b->array = array_out(S, a);
        held_adopt(b->array->priv_);
      }
    }
  return d;
}

int shmapi_call_devices(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs, shmapi_Devices **out) {
  if (!S || !out) return SHMAPI_MISUSE;
  *out = NULL;
  ENTER(S);
  diags_clear(S);
  if (!name || nargs < 0 || (nargs && !args)) return LEAVE(misuse(S, "shmapi_call_devices: bad arguments (function %s)", name));
  shmapi_Array *outs[64] = {0};
  int nouts = 0;
  Capture cap = {0};
  EvalObserver ob = {ignore_call, capture_ret, ignore_stmt, ignore_stmt, &cap};
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    rc = call(S, name, args, nargs, outs, 64, &nouts, &ob, NULL);
    if (rc == SHMAPI_OK && !cap.mesh) {
      diag_keep(S, span_none(), "error", "the call ran no shard_map: no device held anything", NULL);
      rc = SHMAPI_MISUSE;
    }
    if (rc == SHMAPI_OK) *out = devices_out(S, &cap, outs, nouts);
    err_end(&j);
  } else {
    eval_set_observer(S->I, NULL);
    rc = caught(S);
  }
  for (int i = 0; i < nouts; i++) shmapi_array_free(outs[i]);
  capture_drop(&cap);
  return LEAVE(rc);
}

void shmapi_devices_free(shmapi_Devices *d) {
  if (d) release_out(d->priv_);
}

/* ---- communication statistics ---------------------------------------------------------- */

int shmapi_stats(shmapi_State *S, shmapi_Writer fn, void *ud) {
  if (!S || !fn) return SHMAPI_MISUSE;
  ENTER(S);
  diags_clear(S);
  char *text = NULL;
  size_t len = 0;
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    FILE *f = open_memstream(&text, &len);
    if (!f) err_throw("out of memory");
    fab_stats_print(f, true);
    fclose(f);
    rc = SHMAPI_OK;
    err_end(&j);
  } else {
    rc = caught(S);
  }
  if (rc == SHMAPI_OK) fn(ud, text, len);
  free(text);
  return LEAVE(rc);
}

int shmapi_stats_reset(shmapi_State *S) {
  if (!S) return SHMAPI_MISUSE;
  ENTER(S);
  diags_clear(S);
  fab_stats_reset();
  return LEAVE(SHMAPI_OK);
}

/* ---- the cost model ----------------------------------------------------------------------- */

struct HeldCost {
  Held h;
  shmapi_Cost c;
  char hardware[48];
  shmapi_CostDevice *device;
  shmapi_CostLine *lines;     /* their file and source strings are malloc'd */
  char *peak_at;
  char **notes;
  int nnotes;
};

static void cost_release(HeldCost *hc) {
  free(hc->c.report);
  free(hc->device);
  for (int i = 0; hc->lines && i < hc->c.nlines; i++) {
    free((char *)hc->lines[i].file);
    free((char *)hc->lines[i].source);
  }
  free(hc->lines);
  free(hc->peak_at);
  for (int i = 0; i < hc->nnotes; i++) free(hc->notes[i]);
  free(hc->notes);
}

static bool pick_hw(shmapi_State *S, const char *name, Hw *hw) {
  const Hw *p = hw_preset(name ? name : "tpu-v5e");
  if (p) {
    *hw = *p;
    return true;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) err_throw("out of memory");
  bool ok = hw_load(name, hw, f);
  fclose(f);
  if (!ok) {
    char msg[600];
    snprintf(msg, sizeof msg, "unknown hardware '%s': not a preset, and not a JSON description: %s", name,
             text && *text ? text : "");
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n') msg[--n] = 0;
    diag_keep(S, span_none(), "error", msg, NULL);
  }
  free(text);
  return ok;
}

static void *cost_alloc(size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (!p) err_throw("out of memory: the system refused %zu bytes", n);
  return p;
}

static char *cost_strdup(const char *s) {
  char *r = cost_alloc(strlen(s) + 1);
  return strcpy(r, s);
}

/* A row of the per-line table from the timeline's. */
static void cost_line(shmapi_CostLine *o, const TlLine *l, double total) {
  char src[120];
  tl_event_name(l->first, src, sizeof src);          /* "LINE: (backward) text" */
  const char *text = strchr(src, ':') ? strchr(src, ':') + 2 : src;
  if (l->first->backward && !strncmp(text, "(backward) ", 11)) text += 11;
  const char *file = diag_file_name(l->file);
  o->file = cost_strdup(file ? file : "");
  o->source = cost_strdup(text);
  o->line = l->line;
  o->backward = l->first->backward;
  o->primitive = l->first->prim >= 0 ? prim_table[l->first->prim].name : "call";
  o->runs = l->calls;
  o->time = l->time;
  o->compute = l->compute;
  o->comm = l->comm;
  o->waited = l->wait;
  o->share = total > 0 ? l->time / total : 0;
  o->flops = l->flops;
  o->hbm_bytes = l->hbm_bytes;
  o->coll_bytes = l->coll_bytes;
  o->limit = cost_limit_name(l->limit);
  o->how = cost_algo_name(l->algo);
}

/* The report's tables as data, into hc (its strings and arrays its own). */
static void cost_tables(HeldCost *hc, Timeline *T) {
  shmapi_Cost *c = &hc->c;
  snprintf(hc->hardware, sizeof hc->hardware, "%s", tl_hw(T)->name);
  c->hardware = hc->hardware;
  hc->device = cost_alloc(sizeof *hc->device * (size_t)c->devices);
  TlDevice *dvs = mem_alloc(sizeof *dvs * (size_t)(c->devices ? c->devices : 1));
  err_defer(mem_free, dvs);
  tl_devices(T, dvs);                 /* (all at once: tl_device per device is quadratic) */
  for (int64_t d = 0; d < c->devices; d++)
    hc->device[d] = (shmapi_CostDevice){dvs[d].compute, dvs[d].comm, dvs[d].exposed, dvs[d].idle, dvs[d].peak_hbm};
  err_undefer(dvs);
  mem_free(dvs);
  c->device = hc->device;
  int n = tl_lines(T, NULL);
  TlLine *tl = mem_alloc(sizeof *tl * (size_t)(n ? n : 1));
  err_defer(mem_free, tl);
  tl_lines(T, tl);
  double total = 0;
  for (int i = 0; i < n; i++) total += tl[i].time;
  hc->lines = cost_alloc(sizeof *hc->lines * (size_t)n);
  for (int i = 0; i < n; i++) {
    c->nlines = i + 1;              /* (released with what is filled, should a copy fail) */
    cost_line(&hc->lines[i], &tl[i], total);
  }
  c->lines = hc->lines;
  err_undefer(tl);
  mem_free(tl);
  const IrStmt *peak = tl_peak(T, &c->peak_device);
  if (peak) {
    char where[160];
    tl_place_name(peak, where, sizeof where);
    hc->peak_at = cost_strdup(where);
  }
  c->peak_at = hc->peak_at;
  c->outside = tl_outside(T);
  int nn = tl_nnotes(T);
  hc->notes = cost_alloc(sizeof(char *) * (size_t)nn);
  for (int i = 0; i < nn; i++) {
    hc->notes[i] = cost_strdup(tl_note_text(T, i));
    hc->nnotes = i + 1;
  }
  c->nnotes = nn;
  c->notes = (const char *const *)hc->notes;
}

/* The report of timeline T, handed out. */
static shmapi_Cost *cost_out(shmapi_State *S, Timeline *T) {
  HeldCost *hc = (HeldCost *)held_new(S, H_COST, sizeof(HeldCost));
  shmapi_Cost *c = &hc->c;
  c->priv_ = hc;
  size_t len = 0;
  FILE *f = open_memstream(&c->report, &len);
  if (!f) err_throw("out of memory");
  tl_report(T, f);
  fclose(f);
  TlTotals tt;
  tl_totals(T, &tt);
  c->makespan = tt.makespan;
  c->compute = tt.compute;
  c->comm = tt.comm;
  c->exposed = tt.exposed;
  c->peak_hbm = tt.peak_hbm;
  c->bytes_sent = tt.bytes_sent;
  c->devices = tt.devices;
  cost_tables(hc, T);
  return c;
}

static bool write_trace(shmapi_State *S, Timeline *T, const char *title, const char *path);

int shmapi_run_cost_with(shmapi_State *S, const shmapi_CostOptions *opts, shmapi_Cost **out) {
  if (!S || !out) return SHMAPI_MISUSE;
  *out = NULL;
  ENTER(S);
  diags_clear(S);
  shmapi_CostOptions none = {0};
  const shmapi_CostOptions o = opts ? *opts : none;
  Timeline *volatile T = NULL;
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    Hw hw;
    if (pick_hw(S, o.hardware, &hw)) {
      T = tl_new(&hw, o.place, o.trace != NULL);
      if (o.abstract) {            /* modelled, not run: done all the same */
        int from = S->ran;
        S->ran = check_main(S->C)->nbody;
        rc = abstract_run(T, check_main(S->C), from, (long)S->max_steps) ? SHMAPI_OK : SHMAPI_ERROR;
      } else {
        EvalObserver ob = tl_observer(T);
        eval_set_observer(S->I, &ob);
        rc = run_rest(S);
        eval_set_observer(S->I, NULL);
      }
      if (rc == SHMAPI_OK && o.trace && !write_trace(S, T, "run", o.trace)) rc = SHMAPI_ERROR;
      if (rc == SHMAPI_OK) *out = cost_out(S, T);
    }
    err_end(&j);
  } else {
    eval_set_observer(S->I, NULL);
    rc = caught(S);
  }
  tl_free(T);
  return LEAVE(rc);
}

int shmapi_run_cost(shmapi_State *S, const char *hardware, shmapi_Cost **out) {
  shmapi_CostOptions o = {hardware, NULL, NULL, 0};
  return shmapi_run_cost_with(S, &o, out);
}

/* The trace of T at `path`: an SVG picture when it ends in .svg, else
   Chrome's trace JSON (as --trace writes them). */
static bool write_trace(shmapi_State *S, Timeline *T, const char *title, const char *path) {
  size_t n = strlen(path);
  bool svg = n >= 4 && !strcmp(path + n - 4, ".svg");
  if (svg ? trace_svg(T, title, path, 0) : trace_json(T, title, path)) return true;
  char msg[600];
  snprintf(msg, sizeof msg, "cannot write the trace '%s'", path);
  diag_keep(S, span_none(), "error", msg, NULL);
  return false;
}

/* An abstract call: the glue over variables of the arguments' types,
   walked (abstract.h) into T. */
static int call_abstract(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs, Timeline *T) {
  for (int i = 0; i < nargs; i++) {
    const char *why = array_problem_of(&args[i], false);
    if (why) return misuse(S, "an argument with %s", why);
  }
  if (!check_has_func(S->C, str_c(name))) return misuse(S, "no function '%s'", name);
  IrVar **vars = mem_calloc(sizeof(IrVar *) * (size_t)(nargs + 1));
  err_defer(mem_free, vars);
  IrFunc *fn = glue_for(S, name, args, nargs, vars, true);
  int rc = SHMAPI_ERROR;
  if (!fn) diag_take(diag_keep_static, S);
  else if (abstract_call(T, check_main(S->C), fn, (long)S->max_steps)) rc = SHMAPI_OK;
  err_undefer(vars);
  mem_free(vars);
  return rc;
}

int shmapi_call_cost_with(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs,
                          const shmapi_CostOptions *opts, shmapi_Cost **out) {
  if (!S || !out) return SHMAPI_MISUSE;
  *out = NULL;
  ENTER(S);
  diags_clear(S);
  if (!name || nargs < 0 || (nargs && !args)) return LEAVE(misuse(S, "shmapi_call_cost: bad arguments (function %s)", name));
  shmapi_CostOptions none = {0};
  const shmapi_CostOptions o = opts ? *opts : none;
  shmapi_Array *outs[64] = {0};
  int nouts = 0;
  Timeline *volatile T = NULL;
  volatile int rc = SHMAPI_ERROR;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    Hw hw;
    if (pick_hw(S, o.hardware, &hw)) {
      T = tl_new(&hw, o.place, o.trace != NULL);
      rc = o.abstract ? call_abstract(S, name, args, nargs, T) : call(S, name, args, nargs, outs, 64, &nouts, NULL, T);
      if (rc == SHMAPI_OK && o.trace && !write_trace(S, T, name, o.trace)) rc = SHMAPI_ERROR;
      if (rc == SHMAPI_OK) *out = cost_out(S, T);
    }
    err_end(&j);
  } else {
    eval_set_observer(S->I, NULL);
    rc = caught(S);
  }
  for (int i = 0; i < nouts; i++) shmapi_array_free(outs[i]);
  tl_free(T);
  return LEAVE(rc);
}

int shmapi_call_cost(shmapi_State *S, const char *name, const shmapi_Array *args, int nargs, const char *hardware,
                     const char *trace, shmapi_Cost **out) {
  shmapi_CostOptions o = {hardware, trace, NULL, 0};
  return shmapi_call_cost_with(S, name, args, nargs, &o, out);
}

void shmapi_cost_free(shmapi_Cost *c) {
  if (c) release_out(c->priv_);
}
