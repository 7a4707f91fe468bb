/*
** irbuild.c — making checked functions equation by equation (the Builder).
*/
#include "irbuild.h"
#include "indexing.h"
#include "prims.h"

struct Builder {
  Emitter e;
  bool backward;             /* statements made now are a backward pass's (IrStmt.backward) */
  Span where;
  Span whole;                /* the statement new ones stand for (bld_at) */
  int capparams;
};

Builder *bld_new(IrProg *P, const char *name, IrFunc *parent, Mesh *mesh, Span where) {
  Builder *B = arena_alloc(&P->arena, sizeof *B);
  IrFunc *f = arena_alloc(&P->arena, sizeof *f);
  f->name = arena_strndup(&P->arena, name, strlen(name));
  f->sp = where;
  f->parent = parent;
  f->mesh = mesh;
  B->e.prog = P;
  B->e.fn = f;
  B->e.mesh = mesh;
  B->backward = false;
  B->where = where;
  B->whole = where;
  return B;
}

void bld_at(Builder *B, Span sp, Span whole) {
  B->where = sp;
  B->whole = whole;
}

Builder *bld_attach(IrProg *P, IrFunc *fn, const Mesh *mesh, Span where) {
  Builder *B = arena_alloc(&P->arena, sizeof *B);
  B->e.prog = P;
  B->e.fn = fn;
  B->e.mesh = mesh;
  B->where = where;
  B->whole = where;
  B->capparams = fn->nparams;
  return B;
}

IrFunc *bld_func(Builder *B) { return B->e.fn; }
void *bld_alloc(Builder *B, size_t n) { return arena_alloc(&B->e.prog->arena, n); }

IrVar *bld_param(Builder *B, Str name, Type t) {
  IrFunc *f = B->e.fn;
  if (f->nparams == B->capparams) {
    int nc = B->capparams ? B->capparams * 2 : 8;
    IrVar **n = ENEWN(&B->e, IrVar *, nc);
    if (f->nparams) memcpy(n, f->params, sizeof(IrVar *) * (size_t)f->nparams);
    f->params = n;
    B->capparams = nc;
  }
  IrVar *v = emit_var(&B->e, name, t, B->where);
  f->params[f->nparams++] = v;
  return v;
}

static void bld_captures(Builder *B, IrAtom *in, int nin) {
  for (int k = 0; k < nin; k++)
    if (in[k].var && in[k].var->owner != B->e.fn) emit_capture(&B->e, in[k].var);
}

static void bld_captures_items(Builder *B, const IrPrintItem *items, int n) {
  for (int k = 0; k < n; k++)
    if (items[k].atom.var && items[k].atom.var->owner != B->e.fn) emit_capture(&B->e, items[k].atom.var);
}

static IrStmt *bld_stmt(Builder *B, int prim, IrAtom *in, int nin, const Type *outt, int nout, IrAtom *out) {
  IrStmt *st = emit_new_stmt(&B->e, IS_EQN, B->where);
  st->whole = B->whole;
  st->prim = prim;
  st->in = ENEWN(&B->e, IrAtom, nin);
  for (int k = 0; k < nin; k++) st->in[k] = in[k];
  st->nin = nin;
  st->out = ENEWN(&B->e, IrVar *, nout);
  st->nout = nout;
  for (int i = 0; i < nout; i++) {
    st->out[i] = emit_var(&B->e, str_c(""), outt[i], B->where);
    memset(&out[i], 0, sizeof(IrAtom));
    out[i].var = st->out[i];
    out[i].t = outt[i];
    out[i].sp = B->where;
  }
  return st;
}

bool bld_prim(Builder *B, int prim, const IrParam *params, int nparams, IrAtom *in, int nin, IrAtom *out) {
  return bld_prim_fns(B, prim, params, nparams, in, nin, out, NULL);
}

bool bld_prim_fns(Builder *B, int prim, const IrParam *params, int nparams, IrAtom *in, int nin, IrAtom *out,
                  const Attrs *src) {
  AstParam **aps = ENEWN(&B->e, AstParam *, nparams);
  for (int i = 0; i < nparams; i++) {
    aps[i] = ENEW(&B->e, AstParam);
    aps[i]->key = str_c(params[i].key);
    aps[i]->sp = B->where;
    aps[i]->v = params[i].v;
  }
  RuleCtx r;
  Attrs *at = ENEW(&B->e, Attrs);
  if (src) {
    at->fns = src->fns;
    at->nfns = src->nfns;
  }
  IrAtom *ins = ENEWN(&B->e, IrAtom, nin);
  Type *intypes = ENEWN(&B->e, Type, nin);
  for (int k = 0; k < nin; k++) {
    ins[k] = in[k];
    intypes[k] = in[k].t;
  }
  int nout = prim_nout_params(prim, nin, aps, nparams);
  Type *outt = ENEWN(&B->e, Type, nout + 1);
  if (!emit_prim_shape(&B->e, &r, prim, B->where, aps, nparams, intypes, nin, at, outt) ||
      !emit_prim_vary(&B->e, prim, ins, nin, at, outt, nout, B->where))
    return false;
  bld_captures(B, ins, nin);
  IrStmt *st = bld_stmt(B, prim, ins, nin, outt, nout, out);
  st->at = at;
  st->params = r.canon;
  st->nparams = r.ncanon;
  st->backward = B->backward;
  emit_stmt(&B->e, st);
  return true;
}

/* A call of callee, emitted; the statement. */
static IrStmt *call_stmt(Builder *B, IrFunc *callee, IrAtom *in, int nin, IrAtom *out) {
  Type *outt = ENEWN(&B->e, Type, callee->nouts);
  for (int i = 0; i < callee->nouts; i++) outt[i] = callee->outs[i].t;
  bld_captures(B, in, nin);
  IrStmt *st = bld_stmt(B, -1, in, nin, outt, callee->nouts, out);
  st->callee = callee;
  st->backward = B->backward;
  emit_stmt(&B->e, st);
  return st;
}

bool bld_call(Builder *B, IrFunc *callee, IrAtom *in, int nin, IrAtom *out) {
  call_stmt(B, callee, in, nin, out);
  return true;
}

bool bld_call_as(Builder *B, IrFunc *callee, IrAtom *in, int nin, IrAtom *out, int via, Attrs *at, IrParam *ps,
                 int np) {
  IrStmt *c = call_stmt(B, callee, in, nin, out);
  c->via = via;
  c->at = at;
  c->params = ps;
  c->nparams = np;
  return true;
}

/* A copy of call st: written as JAX's call primitive, it stays one (a
   custom_jvp_call keeps its rule for the next differentiation). */
static bool copy_call(Builder *B, const IrStmt *st, IrAtom *in, IrAtom *out) {
  IrStmt *c = call_stmt(B, st->callee, in, st->nin, out);
  c->via = st->via;
  c->via_name = st->via_name;
  c->at = st->at;
  c->params = st->params;
  c->nparams = st->nparams;
  return true;
}

bool bld_higher(Builder *B, int prim, Attrs *at, const IrParam *params, int nparams, IrAtom *in, int nin,
                const Type *outt, int nout, IrAtom *out) {
  bld_captures(B, in, nin);
  IrStmt *st = bld_stmt(B, prim, in, nin, outt, nout, out);
  st->at = at;
  st->params = ENEWN(&B->e, IrParam, nparams);
  if (nparams) memcpy(st->params, params, sizeof(IrParam) * (size_t)nparams);
  st->nparams = nparams;
  st->backward = B->backward;
  emit_stmt(&B->e, st);
  return true;
}

IrAtom bld_lift(Builder *B, IrAtom a, uint32_t vma) {
  bld_captures(B, &a, 1);
  return emit_lift(&B->e, a, vma, B->where);
}

PVal *bld_pv_int(Builder *B, int64_t v) {
  PVal *p = ENEW(&B->e, PVal);
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
  PVal *p = ENEW(&B->e, PVal);
  p->k = PV_NAME;
  p->s = str_c(arena_strndup(&B->e.prog->arena, s, strlen(s)));
  p->sp = span_none();
  return p;
}

PVal *bld_pv_tuple(Builder *B, PVal **items, int n) {
  PVal *p = ENEW(&B->e, PVal);
  p->k = PV_TUPLE;
  p->items = ENEWN(&B->e, PVal *, n);
  if (n) memcpy(p->items, items, sizeof(PVal *) * (size_t)n);
  p->n = n;
  p->sp = span_none();
  return p;
}

PVal *bld_pv_ints(Builder *B, const int64_t *v, int n) {
  PVal **items = ENEWN(&B->e, PVal *, n);
  for (int i = 0; i < n; i++) items[i] = bld_pv_int(B, v[i]);
  return bld_pv_tuple(B, items, n);
}

PVal *bld_pv_fn(Builder *B, int k) {
  PVal *v = bld_pv_int(B, k);
  v->k = PV_FUNC;
  return v;
}

IrParam *bld_params_with(Builder *B, const IrStmt *st, const char **keys, PVal **vals, int n) {
  IrParam *ps = ENEWN(&B->e, IrParam, st->nparams);
  for (int i = 0; i < st->nparams; i++) {
    ps[i] = st->params[i];
    for (int k = 0; k < n; k++)
      if (!strcmp(ps[i].key, keys[k])) ps[i].v = vals[k];
  }
  return ps;
}

static PVal *st_param(const IrStmt *st, const char *key) {
  for (int i = 0; i < st->nparams; i++)
    if (!strcmp(st->params[i].key, key)) return st->params[i].v;
  return NULL;
}

/* Gather and scatter name the same tuples differently (indexing.h). */
static PVal *swapped_dnums(Builder *B, const IrStmt *st) {
  return idx_dnums_swap(st_param(st, "dimension_numbers"), ENEWN(&B->e, PVal, 6), ENEWN(&B->e, PVal *, 5));
}

IrParam *bld_gather_for_scatter(Builder *B, const IrStmt *st) {
  IrParam *ps = ENEWN(&B->e, IrParam, 6);
  const IntList *ws = &st->at->l[5];
  ps[0] = (IrParam){"dimension_numbers", swapped_dnums(B, st)};
  ps[1] = (IrParam){"fill_value", bld_pv_int(B, 0)};
  ps[2] = (IrParam){"indices_are_sorted", st_param(st, "indices_are_sorted")};
  ps[3] = (IrParam){"mode", st_param(st, "mode")};
  ps[4] = (IrParam){"slice_sizes", bld_pv_ints(B, ws->v, ws->n)};
  ps[5] = (IrParam){"unique_indices", st_param(st, "unique_indices")};
  return ps;
}

IrParam *bld_scatter_for_gather(Builder *B, const IrStmt *st) {
  IrParam *ps = ENEWN(&B->e, IrParam, 6);
  ps[0] = (IrParam){"dimension_numbers", swapped_dnums(B, st)};
  ps[1] = (IrParam){"indices_are_sorted", st_param(st, "indices_are_sorted")};
  ps[2] = (IrParam){"mode", st_param(st, "mode")};
  ps[3] = (IrParam){"unique_indices", st_param(st, "unique_indices")};
  ps[4] = (IrParam){"update_consts", bld_pv_ints(B, NULL, 0)};
  ps[5] = (IrParam){"update_jaxpr", bld_pv_name(B, "None")};
  ps[5].v->k = PV_NONE;
  return ps;
}

IrParam *bld_scatter_like(Builder *B, const IrStmt *st) {
  const char *keys[1] = {"update_jaxpr"};
  PVal *none = bld_pv_name(B, "None");
  none->k = PV_NONE;
  return bld_params_with(B, st, keys, &none, 1);
}

Attrs *bld_attrs_with(Builder *B, const Attrs *at, IrFunc **fns, int nfns) {
  Attrs *a = ENEW(&B->e, Attrs);
  *a = *at;
  a->fns = ENEWN(&B->e, IrFunc *, nfns);
  for (int k = 0; k < nfns; k++) a->fns[k] = fns[k];
  a->nfns = nfns;
  return a;
}

Array *bld_keep(Builder *B, Array *a) { return prog_keep(B->e.prog, a); }

IrAtom bld_zeros(Builder *B, const Type *t) {
  IrAtom z;
  memset(&z, 0, sizeof z);
  z.lit = prog_keep(B->e.prog, arr_scalar_i((DType)t->dt, 0));
  z.t = *t;
  z.t.rank = 0;
  z.t.vma = 0;
  z.sp = B->where;
  if (t->rank == 0) return bld_lift(B, z, t->vma);
  IrParam ps[2];
  ps[0].key = "shape";
  ps[0].v = bld_pv_ints(B, t->shape, t->rank);
  ps[1].key = "broadcast_dimensions";
  ps[1].v = bld_pv_ints(B, NULL, 0);
  IrAtom out;
  if (!bld_prim(B, P_BROADCAST_IN_DIM, ps, 2, &z, 1, &out)) return z;
  return bld_lift(B, out, t->vma);
}

void bld_print(Builder *B, const IrPrintItem *items, int n) { bld_print_like(B, items, n, NULL); }

void bld_print_like(Builder *B, const IrPrintItem *items, int n, const IrStmt *src) {
  bld_captures_items(B, items, n);
  IrStmt *st = emit_new_stmt(&B->e, IS_PRINT, B->where);
  st->whole = B->whole;
  st->items = ENEWN(&B->e, IrPrintItem, n);
  if (n) memcpy(st->items, items, sizeof(IrPrintItem) * (size_t)n);
  st->nitems = n;
  st->backward = B->backward;
  st->print_joined = src && src->print_joined;
  emit_stmt(&B->e, st);
}

void bld_show(Builder *B, char *text) {
  IrStmt *st = emit_new_stmt(&B->e, IS_SHOW, B->where);
  st->whole = B->whole;
  st->text = text;
  st->backward = B->backward;
  emit_stmt(&B->e, st);
}

IrAtom bld_lit(Builder *B, int dt, double v) {
  IrAtom a;
  memset(&a, 0, sizeof a);
  a.lit = prog_keep(B->e.prog, dtype_is_float((DType)dt) ? arr_scalar_f((DType)dt, v) : arr_scalar_i((DType)dt, (int64_t)v));
  a.t.dt = (uint8_t)dt;
  a.sp = B->where;
  return a;
}

void bld_const(Builder *B, Array *value, IrAtom *out) {
  Type t;
  memset(&t, 0, sizeof t);
  t.dt = value->dt;
  t.rank = value->rank;
  for (int i = 0; i < value->rank; i++) t.shape[i] = value->shape[i];
  IrStmt *st = emit_new_stmt(&B->e, IS_CONST, B->where);
  st->whole = B->whole;
  st->value = value;
  st->out = ENEWN(&B->e, IrVar *, 1);
  st->nout = 1;
  st->out[0] = emit_var(&B->e, str_c(""), t, B->where);
  memset(out, 0, sizeof *out);
  out->var = st->out[0];
  out->t = t;
  st->backward = B->backward;
  emit_stmt(&B->e, st);
}

IrFunc *bld_finish(Builder *B, IrAtom *outs, int nouts) {
  IrFunc *f = B->e.fn;
  f->outs = ENEWN(&B->e, IrAtom, nouts);
  for (int k = 0; k < nouts; k++) f->outs[k] = outs[k];
  f->nouts = nouts;
  bld_captures(B, f->outs, nouts);
  return f;
}


void bld_set_where(Builder *B, Span where) { B->where = where; }

Span bld_where(const Builder *B) { return B->where; }

void bld_set_backward(Builder *B, bool on) { B->backward = on; }

static bool copy_stmt(Builder *B, const IrStmt *st, IrAtom *in, IrAtom *out);

/* A copy keeps the equation's backward mark (a pass over a transposed
   function, DCE or a later derivative, keeps its lines' attribution). */
bool bld_copy(Builder *B, const IrStmt *st, IrAtom *in, IrAtom *out) {
  bool was = B->backward;
  B->backward = was || st->backward;
  bool ok = copy_stmt(B, st, in, out);
  B->backward = was;
  return ok;
}

static bool copy_stmt(Builder *B, const IrStmt *st, IrAtom *in, IrAtom *out) {
  bool ok;
  if (st->prim < 0) ok = copy_call(B, st, in, out);
  else if (st->prim == P_PBROADCAST) {
    out[0] = bld_lift(B, in[0], in[0].t.vma | st->out[0]->t.vma);
    if (out[0].var == in[0].var && out[0].lit == in[0].lit) return true;   /* nothing lifted: keep the name */
    out[0].var->name = st->out[0]->name;
    return true;
  } else if (prim_table[st->prim].vrule == VR_SPECIAL) {
    Type *outt = ENEWN(&B->e, Type, st->nout);
    for (int j = 0; j < st->nout; j++) outt[j] = st->out[j]->t;
    ok = bld_higher(B, st->prim, st->at, st->params, st->nparams, in, st->nin, outt, st->nout, out);
  } else {
    ok = bld_prim_fns(B, st->prim, st->params, st->nparams, in, st->nin, out, st->at);
  }
  for (int j = 0; ok && j < st->nout; j++)
    if (out[j].var && out[j].var->owner == B->e.fn && !out[j].var->name.n) out[j].var->name = st->out[j]->name;
  return ok;
}

bool bld_inline(Builder *B, const IrFunc *g, const IrAtom *args, IrAtom *out) {
  IrAtom *map = ENEWN(&B->e, IrAtom, g->nslots);
  for (int k = 0; k < g->nparams; k++) map[g->params[k]->slot] = args[k];
#define MAP(a) ((a).var && (a).var->owner == g ? map[(a).var->slot] : (a))
  for (int i = 0; i < g->nbody; i++) {
    IrStmt *st = g->body[i];
    if (st->k == IS_SHOW) { bld_reuse(B, st); continue; }
    if (st->k == IS_SAVE) { bld_save(B, st, MAP(st->in[0])); continue; }
    if (st->k == IS_CONST) { bld_const(B, st->value, &map[st->out[0]->slot]); continue; }
    if (st->k == IS_PRINT) {
      IrPrintItem *items = ENEWN(&B->e, IrPrintItem, st->nitems);
      for (int k = 0; k < st->nitems; k++) {
        items[k] = st->items[k];
        if (items[k].atom.var || items[k].atom.lit) items[k].atom = MAP(st->items[k].atom);
      }
      bld_print_like(B, items, st->nitems, st);
      continue;
    }
    IrAtom *in = ENEWN(&B->e, IrAtom, st->nin), *o = ENEWN(&B->e, IrAtom, st->nout);
    for (int k = 0; k < st->nin; k++) in[k] = MAP(st->in[k]);
    if (!bld_copy(B, st, in, o)) return false;
    for (int j = 0; j < st->nout; j++) map[st->out[j]->slot] = o[j];
  }
  for (int j = 0; j < g->nouts; j++) out[j] = MAP(g->outs[j]);
#undef MAP
  return true;
}

void bld_save(Builder *B, const IrStmt *st, IrAtom a) {
  IrStmt *c = emit_new_stmt(&B->e, IS_SAVE, B->where);
  c->in = ENEWN(&B->e, IrAtom, 1);
  c->in[0] = a;
  c->nin = 1;
  c->path = st->path;
  c->load_path = st->load_path;
  bld_captures(B, c->in, 1);
  c->backward = B->backward;
  emit_stmt(&B->e, c);
}

void bld_reuse(Builder *B, IrStmt *st) { emit_stmt(&B->e, st); }  /* (as it was) */
