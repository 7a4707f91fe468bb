/*
** linearize.c — partial evaluation of a JVP (linearize.h): each equation
** of the source goes to the known part (it reads no tangent) or to the
** linear part; higher-order equations that do both are split in two,
** with residuals passed from the first to the second.
**
** Splitting a nested function H makes two functions, K (H's known
** parameters -> its known results and the residuals) and U (H's unknown
** parameters and the residuals -> its unknown results), written by two
** Builders while H is walked once.  At the top level both parts go into
** one function, and a residual is just the known value.
*/
#include <stdio.h>
#include "diag.h"
#include "linearize.h"
#include "prims.h"

typedef struct PeRoot {
  IrProg *P;
  IrFunc *parent;       /* the parent of every function made */
  bool failed;
} PeRoot;

/* How the linear part of a split reads a known value. */
enum { PE_TOP, PE_PARAM, PE_STACK, PE_SCAN };

/* A residual: a known value (in K) and what U reads for it. */
typedef struct Res {
  IrAtom k;             /* the value in K */
  IrAtom u;             /* what U reads (its parameter, or a slice of it) */
  IrVar *up;            /* U's parameter */
  IrVar *kp;            /* PE_STACK: K's stack parameter */
  int fwd;              /* the source parameter it is, or -1 */
  bool promote;         /* a varying scalar passed as a one-element vector */
} Res;

typedef struct Pe {
  PeRoot *R;
  IrFunc *src;
  Builder *KB, *UB;     /* the same at the top level */
  int mode;
  bool promote_ok;      /* shard_map: varying scalar residuals become [1] */
  uint32_t res_vma;     /* cond: its results (the residuals) vary over the index's axes too */
  uint32_t lift;        /* the unknown values vary over these axes at least */
  bool *unk;            /* by slot of src */
  IrAtom *map;          /* by slot of src: the atom in K (known) or U (unknown) */
  IrVar **kparam;       /* by parameter of src: K's parameter, for a known one */
  Res *res;
  int nres, capres;
  /* PE_STACK: the loop's index in K and U, and its range */
  IrAtom ki, ui, uidx;
  bool has_uidx;
  int64_t lower, trips;
  const bool *pass;     /* by parameter of src: a carry the body returns unchanged */
  /* PE_SCAN: how many of src's parameters are consts, then carries */
  int nconst, ncarry;
} Pe;

static void pe_body(Pe *E);

static void *pe_alloc(PeRoot *R, size_t n) { return arena_alloc(&R->P->arena, n); }

/* Emit prim; false (the linearization failed) after an error. */
static bool emit(Pe *E, Builder *B, int prim, const IrParam *ps, int np, IrAtom *in, int nin, IrAtom *out) {
  if (bld_prim(B, prim, ps, np, in, nin, out)) return true;
  E->R->failed = true;
  return false;
}

/* A parameter key = value. */
static IrParam kv(const char *k, PVal *v) {
  IrParam p = {k, v};
  return p;
}

/* ---- which values depend on the unknown inputs ------------------------------------------ */

static void pe_deps(PeRoot *R, const IrFunc *H, const bool *uin, bool *uout);

/* A loop's carries that are unknown: the fixed point of the body's
   dependence (body parameters: `first` leading ones, then the carries). */
static void loop_deps(PeRoot *R, const IrFunc *body, bool *pin, int first, int nc) {
  bool *o = pe_alloc(R, sizeof(bool) * (size_t)(body->nouts + 1));
  for (;;) {
    pe_deps(R, body, pin, o);
    bool stable = true;
    for (int k = 0; k < nc; k++)
      if (o[k] && !pin[first + k]) {
        pin[first + k] = true;
        stable = false;
      }
    if (stable) return;
  }
}

/* Which results of higher-order equation st depend on the operands uin[]
   marks. */
static void deps_special(PeRoot *R, const IrStmt *st, const bool *uin, bool *o) {
  const Attrs *at = st->at;
  switch (st->prim) {
  case P_COND:
    for (int b = 0; b < at->nfns; b++) {
      bool *ob = pe_alloc(R, sizeof(bool) * (size_t)(st->nout + 1));
      pe_deps(R, at->fns[b], uin + 1, ob);
      for (int j = 0; j < st->nout; j++) o[j] |= ob[j];
    }
    break;
  case P_FORI_LOOP: {
    int nb = (int)at->i[2], nc = st->nin - nb;
    bool *pin = pe_alloc(R, sizeof(bool) * (size_t)(nc + 2));
    for (int k = 0; k < nc; k++) pin[k + 1] = uin[nb + k];
    loop_deps(R, at->fns[0], pin, 1, nc);
    for (int k = 0; k < nc; k++) o[k] = pin[k + 1];
    break;
  }
  case P_WHILE: {
    int cn = (int)at->i[0], bn = (int)at->i[1], nc = st->nin - cn - bn;
    bool *pin = pe_alloc(R, sizeof(bool) * (size_t)(bn + nc + 1));
    for (int k = 0; k < bn + nc; k++) pin[k] = uin[cn + k];
    loop_deps(R, at->fns[1], pin, bn, nc);
    for (int k = 0; k < nc; k++) o[k] = pin[bn + k];
    break;
  }
  default: pe_deps(R, at->fns[0], uin, o); break;
  }
}

/* Which results of H depend on the parameters uin[] marks. */
static void pe_deps(PeRoot *R, const IrFunc *H, const bool *uin, bool *uout) {
  bool *u = pe_alloc(R, sizeof(bool) * (size_t)(H->nslots + 1));
  for (int p = 0; p < H->nparams; p++) u[H->params[p]->slot] = uin[p];
  for (int i = 0; i < H->nbody; i++) {
    const IrStmt *st = H->body[i];
    if (st->k != IS_EQN) continue;
    bool *in = pe_alloc(R, sizeof(bool) * (size_t)(st->nin + 1)), any = false;
    for (int k = 0; k < st->nin; k++) {
      const IrVar *v = st->in[k].var;
      in[k] = v && v->owner == H && u[v->slot];
      any |= in[k];
    }
    if (!any) continue;
    bool *o = pe_alloc(R, sizeof(bool) * (size_t)(st->nout + 1));
    if (st->prim < 0 || prim_table[st->prim].vrule != VR_SPECIAL)
      for (int j = 0; j < st->nout; j++) o[j] = true;
    else
      deps_special(R, st, in, o);
    for (int j = 0; j < st->nout; j++) u[st->out[j]->slot] = o[j];
  }
  for (int j = 0; j < H->nouts; j++) uout[j] = H->outs[j].var && H->outs[j].var->owner == H && u[H->outs[j].var->slot];
}

/* ---- values --------------------------------------------------------------------------------- */

static bool is_unk(Pe *E, const IrAtom *a) { return a->var && a->var->owner == E->src && E->unk[a->var->slot]; }

/* A known operand, in K. */
static IrAtom known_of(Pe *E, const IrAtom *a) {
  if (!a->var || a->var->owner != E->src) return *a;
  IrAtom k = E->map[a->var->slot];
  if (k.var) k.sp = a->sp;
  return k;
}

static IrAtom stack_res(Pe *E, Res *r);

/* Record a residual. */
static void push_res(Pe *E, const Res *r) {
  if (E->nres == E->capres) {
    int nc = E->capres ? 2 * E->capres : 8;
    Res *n = pe_alloc(E->R, sizeof(Res) * (size_t)nc);
    if (E->nres) memcpy(n, E->res, sizeof(Res) * (size_t)E->nres);
    E->res = n;
    E->capres = nc;
  }
  E->res[E->nres++] = *r;
}

/* What U reads for known value k of K: itself at the top level (and for a
   literal or a value of an enclosing scope), else a residual. */
static IrAtom res_of(Pe *E, IrAtom k) {
  if (E->mode == PE_TOP || !k.var || k.var->owner != bld_func(E->KB)) return k;
  for (int i = 0; i < E->nres; i++)
    if (E->res[i].k.var == k.var) return E->res[i].u;
  /* a pbroadcast moves nothing: pass its operand, and lift it again in U
     (a residual varying over fewer axes takes less memory); a local
     equation of literals (zeros) or an axis_index is made again in U, so
     that the transpose sees the zeros */
  const IrFunc *K = bld_func(E->KB);
  for (int i = K->nbody - 1; i >= 0; i--) {
    IrStmt *st = K->body[i];
    if (st->k != IS_EQN || st->nout != 1 || st->out[0] != k.var) continue;
    if (st->prim == P_PBROADCAST) return bld_lift(E->UB, res_of(E, st->in[0]), k.t.vma);
    VarRule vr = st->prim >= 0 ? prim_table[st->prim].vrule : VR_SPECIAL;
    bool lits = vr == VR_ELEM || vr == VR_NULLARY || vr == VR_AXIS_INDEX;
    for (int j = 0; j < st->nin; j++) lits &= st->in[j].lit != NULL;
    IrAtom out;
    if (lits && bld_copy(E->UB, st, st->in, &out)) return out;
    break;
  }
  Res r;
  memset(&r, 0, sizeof r);
  r.k = k;
  r.fwd = -1;
  for (int p = 0; p < E->src->nparams; p++)
    if (E->kparam[p] == k.var) r.fwd = p;
  if (E->mode == PE_STACK) {
    if (k.var == E->ki.var) return E->ui;
    if (!(r.fwd >= 0 && E->pass[r.fwd])) return stack_res(E, &r);
  }
  /* a scan passes a const or an x on; anything else (a carry too) is
     stacked by the known scan as a y and read by the linear one as an x */
  if (E->mode == PE_SCAN && r.fwd >= E->nconst && r.fwd < E->nconst + E->ncarry) r.fwd = -1;
  Type pt = k.t;
  if (r.fwd < 0) pt.vma |= E->res_vma;
  r.promote = E->promote_ok && r.fwd < 0 && pt.rank == 0 && pt.vma;
  if (r.promote) {
    pt.rank = 1;
    pt.shape[0] = 1;
  }
  r.up = bld_param(E->UB, k.var->name, pt);
  r.u = ir_var_atom(r.up);
  if (r.promote) {
    IrParam ps[1] = {kv("new_sizes", bld_pv_ints(E->UB, NULL, 0))};
    IrAtom in = r.u;
    emit(E, E->UB, P_RESHAPE, ps, 1, &in, 1, &r.u);
  }
  push_res(E, &r);
  return r.u;
}

/* The row of a stack iteration i writes: i - lower. */
static IrAtom loop_row(Pe *E, Builder *B, IrAtom i) {
  if (!E->lower) return i;
  IrAtom in[2] = {i, i}, r = i;
  in[1].var = NULL;
  in[1].lit = bld_keep(B, arr_scalar_i((DType)i.t.dt, E->lower));
  in[1].t.vma = 0;
  emit(E, B, P_SUB, NULL, 0, in, 2, &r);
  return r;
}

/* A residual of a fori_loop body: a stack of its value at every
   iteration, written by K at i - lower and read back by U. */
static IrAtom stack_res(Pe *E, Res *r) {
  Type st = r->k.t;
  if (st.rank >= SHM_MAXRANK) {
    diag_error(E->src->sp, "reverse-mode differentiation of this fori_loop needs a residual of rank %d, more than %d",
               st.rank + 1, SHM_MAXRANK);
    E->R->failed = true;
    return r->k;
  }
  for (int d = st.rank; d > 0; d--) st.shape[d] = st.shape[d - 1];
  st.shape[0] = E->trips > 0 ? E->trips : 1;
  st.rank++;
  r->kp = bld_param(E->KB, r->k.var->name, st);
  r->up = bld_param(E->UB, r->k.var->name, st);
  IrAtom s = ir_var_atom(r->up);
  if (!E->has_uidx) {
    E->uidx = loop_row(E, E->UB, E->ui);
    E->has_uidx = true;
  }
  int n = st.rank;
  IrAtom *in = bld_alloc(E->UB, sizeof(IrAtom) * (size_t)(n + 1));
  in[0] = s;
  in[1] = E->uidx;
  for (int d = 1; d < n; d++) {
    in[d + 1] = E->uidx;
    in[d + 1].var = NULL;
    in[d + 1].lit = bld_keep(E->UB, arr_scalar_i((DType)E->uidx.t.dt, 0));
    in[d + 1].t.vma = 0;
  }
  int64_t sizes[SHM_MAXRANK];
  sizes[0] = 1;
  for (int d = 1; d < n; d++) sizes[d] = st.shape[d];
  IrParam ps[1] = {kv("slice_sizes", bld_pv_ints(E->UB, sizes, n))};
  IrAtom sl, v;
  emit(E, E->UB, P_DYNAMIC_SLICE, ps, 1, in, n + 1, &sl);
  IrParam rs[1] = {kv("new_sizes", bld_pv_ints(E->UB, r->k.t.shape, r->k.t.rank))};
  emit(E, E->UB, P_RESHAPE, rs, 1, &sl, 1, &v);
  r->u = v;
  push_res(E, r);
  return v;
}

/* An operand of a linear equation, in U. */
static IrAtom u_operand(Pe *E, const IrAtom *a) {
  if (is_unk(E, a)) {
    IrAtom u = E->map[a->var->slot];
    if (u.var) u.sp = a->sp;
    return u;
  }
  return res_of(E, known_of(E, a));
}

/* ---- splitting a nested function --------------------------------------------------------- */

/* The parts of H: K with H's known parameters, U with its unknown ones
   (varying over `lift` too); with `dual_first`, parameter 0 (a loop's
   index) is a parameter of both. */
static Pe *pe_sub(Pe *E, IrFunc *H, const bool *uin, int mode, uint32_t lift, bool dual_first) {
  PeRoot *R = E->R;
  Pe *S = pe_alloc(R, sizeof(Pe));
  S->R = R;
  S->src = H;
  S->mode = mode;
  S->lift = lift;
  S->KB = bld_new(R->P, H->name, R->parent, H->mesh, H->sp);
  S->UB = bld_new(R->P, H->name, R->parent, H->mesh, H->sp);
  S->unk = pe_alloc(R, sizeof(bool) * (size_t)(H->nslots + 1));
  S->map = pe_alloc(R, sizeof(IrAtom) * (size_t)(H->nslots + 1));
  S->kparam = pe_alloc(R, sizeof(IrVar *) * (size_t)(H->nparams + 1));
  for (int p = 0; p < H->nparams; p++) {
    IrVar *v = H->params[p];
    if (uin[p]) {
      Type t = v->t;
      t.vma |= lift;
      S->map[v->slot] = ir_var_atom(bld_param(S->UB, v->name, t));
      S->unk[v->slot] = true;
      continue;
    }
    S->kparam[p] = bld_param(S->KB, v->name, v->t);
    S->map[v->slot] = ir_var_atom(S->kparam[p]);
    if (p == 0 && dual_first) {
      S->ki = S->map[v->slot];
      S->ui = ir_var_atom(bld_param(S->UB, v->name, v->t));
    }
  }
  return S;
}

static IrAtom *atoms(PeRoot *R, int n) { return pe_alloc(R, sizeof(IrAtom) * (size_t)(n + 1)); }

/* Emit one part of a split higher-order equation st, its parameters
   `keys` given new values; false after an error. */
static bool emit_part(Pe *E, Builder *B, const IrStmt *st, Attrs *at, const char **keys, PVal **vals, int nk,
                      IrAtom *in, int nin, const Type *outt, int nout, IrAtom *out) {
  if (bld_higher(B, st->prim, at, bld_params_with(B, st, keys, vals, nk), st->nparams, in, nin, outt, nout, out))
    return true;
  E->R->failed = true;
  return false;
}

/* st's results of one part (the unknown ones when `unknown`, by u[]) are
   out[], in order. */
static void bind_part(Pe *E, const IrStmt *st, const bool *u, bool unknown, const IrAtom *out) {
  for (int j = 0, q = 0; j < st->nout; j++) {
    if (u[j] != unknown) continue;
    IrAtom a = out[q++];
    if (a.var && !a.var->name.n) a.var->name = st->out[j]->name;
    E->map[st->out[j]->slot] = a;
    E->unk[st->out[j]->slot] = unknown;
  }
}

/* The spec of a residual varying over `vma`: all those axes (in mesh
   order) on dimension 0, or P() for an invariant one. */
static PVal *res_spec(Builder *B, const Mesh *m, uint32_t vma, Spec *sp) {
  memset(sp, 0, sizeof *sp);
  PVal *names[SHM_MAXAXES];
  int n = 0;
  char buf[128];
  for (int k = 0; k < m->naxes; k++)
    if (vma & (1u << k)) {
      snprintf(buf, sizeof buf, "%.*s", m->axis[k].n, m->axis[k].p);
      names[n++] = bld_pv_name(B, buf);
      sp->dim[0].axes[sp->dim[0].naxes++] = (uint8_t)k;
    }
  PVal *entry = n == 1 ? names[0] : bld_pv_tuple(B, names, n);
  PVal *v = bld_pv_tuple(B, &entry, n ? 1 : 0);
  v->k = PV_SPEC;
  sp->ndims = n ? 1 : 0;
  sp->mask = vma;
  sp->src = v;
  return v;
}

/* A shard_map split: the known one computes its known results and the
   residuals, the linear one its unknown results from them. */
static void pe_shard_map(Pe *E, IrStmt *st) {
  PeRoot *R = E->R;
  const ShardMap *sm = st->at->ext;
  const Mesh *m = sm->mesh;
  IrFunc *H = st->at->fns[0];
  int n = st->nin, nout = st->nout;
  bool *uin = pe_alloc(R, sizeof(bool) * (size_t)(n + 1)), *uout = pe_alloc(R, sizeof(bool) * (size_t)(nout + 1));
  for (int k = 0; k < n; k++) uin[k] = is_unk(E, &st->in[k]);
  pe_deps(R, H, uin, uout);
  Pe *S = pe_sub(E, H, uin, PE_PARAM, 0, false);
  S->promote_ok = true;
  pe_body(S);
  if (R->failed) return;
  IrAtom *uo = atoms(R, nout);
  int nu = 0, nk = 0;
  for (int j = 0; j < nout; j++)
    if (uout[j]) uo[nu++] = u_operand(S, &H->outs[j]);
  /* K: the known results, then the residuals that are not its parameters */
  IrAtom *ko = atoms(R, nout + S->nres);
  Type *kt = pe_alloc(R, sizeof(Type) * (size_t)(nout + S->nres + 1));
  ShardMap *ks = bld_alloc(E->KB, sizeof(ShardMap));
  *ks = *sm;
  ks->out = bld_alloc(E->KB, sizeof(Spec) * (size_t)(nout + S->nres + 1));
  ks->in = bld_alloc(E->KB, sizeof(Spec) * (size_t)(n + 1));
  PVal **kos = pe_alloc(R, sizeof(PVal *) * (size_t)(nout + S->nres + 1));
  PVal **kis = pe_alloc(R, sizeof(PVal *) * (size_t)(n + 1));
  for (int j = 0; j < nout; j++)
    if (!uout[j]) {
      ko[nk] = known_of(S, &H->outs[j]);
      kt[nk] = st->out[j]->t;
      ks->out[nk] = sm->out[j];
      kos[nk++] = sm->out[j].src;
    }
  int nkr = nk;
  for (int i = 0; i < S->nres; i++) {
    Res *r = &S->res[i];
    if (r->fwd >= 0) continue;
    IrAtom v = r->k;
    if (r->promote) {
      IrParam ps[1] = {kv("dimensions", bld_pv_ints(S->KB, (int64_t[]){0}, 1))};
      IrAtom in = v;
      if (!emit(E, S->KB, P_EXPAND_DIMS, ps, 1, &in, 1, &v)) return;
    }
    ko[nk] = v;
    kt[nk] = v.t;
    kt[nk].vma = 0;
    kos[nk] = res_spec(E->KB, m, v.t.vma, &ks->out[nk]);
    for (int d = 0; d < ks->out[nk].dim[0].naxes && v.t.rank; d++) kt[nk].shape[0] *= m->size[ks->out[nk].dim[0].axes[d]];
    nk++;
  }
  ks->nout = nk;
  IrFunc *K = bld_finish(S->KB, ko, nk);
  IrAtom *kin = atoms(R, n);
  int nki = 0;
  for (int k = 0; k < n; k++)
    if (!uin[k]) {
      ks->in[nki] = sm->in[k];
      kis[nki] = sm->in[k].src;
      kin[nki++] = known_of(E, &st->in[k]);
    }
  ks->nin = nki;
  Attrs *kat = bld_attrs_with(E->KB, st->at, &K, 1);
  kat->ext = ks;
  const char *keys[3] = {"f", "in_specs", "out_specs"};
  PVal *kvals[3] = {bld_pv_fn(E->KB, 0), bld_pv_tuple(E->KB, kis, nki), bld_pv_tuple(E->KB, kos, nk)};
  IrAtom *kout = atoms(R, nk);
  if (!emit_part(E, E->KB, st, kat, keys, kvals, 3, kin, nki, kt, nk, kout)) return;
  bind_part(E, st, uout, false, kout);
  /* U: the unknown operands, then the residuals */
  IrFunc *U = bld_finish(S->UB, uo, nu);
  ShardMap *us = bld_alloc(E->UB, sizeof(ShardMap));
  *us = *sm;
  us->in = bld_alloc(E->UB, sizeof(Spec) * (size_t)(n + S->nres + 1));
  us->out = bld_alloc(E->UB, sizeof(Spec) * (size_t)(nout + 1));
  PVal **uis = pe_alloc(R, sizeof(PVal *) * (size_t)(n + S->nres + 1));
  PVal **uos = pe_alloc(R, sizeof(PVal *) * (size_t)(nout + 1));
  IrAtom *uin_a = atoms(R, n + S->nres);
  int nui = 0;
  for (int k = 0; k < n; k++)
    if (uin[k]) {
      us->in[nui] = sm->in[k];
      uis[nui] = sm->in[k].src;
      uin_a[nui++] = u_operand(E, &st->in[k]);
    }
  for (int i = 0, q = nkr; i < S->nres; i++) {
    Res *r = &S->res[i];
    if (r->fwd >= 0) {
      us->in[nui] = sm->in[r->fwd];
      uin_a[nui] = u_operand(E, &st->in[r->fwd]);
    } else {
      us->in[nui] = ks->out[q];
      uin_a[nui] = res_of(E, kout[q++]);
    }
    uis[nui] = us->in[nui].src;
    nui++;
  }
  us->nin = nui;
  Type *ut = pe_alloc(R, sizeof(Type) * (size_t)(nout + 1));
  int no = 0;
  for (int j = 0; j < nout; j++)
    if (uout[j]) {
      us->out[no] = sm->out[j];
      uos[no] = sm->out[j].src;
      ut[no++] = st->out[j]->t;
    }
  us->nout = no;
  Attrs *uat = bld_attrs_with(E->UB, st->at, &U, 1);
  uat->ext = us;
  PVal *uvals[3] = {bld_pv_fn(E->UB, 0), bld_pv_tuple(E->UB, uis, nui), bld_pv_tuple(E->UB, uos, no)};
  IrAtom *uout_a = atoms(R, no);
  if (!emit_part(E, E->UB, st, uat, keys, uvals, 3, uin_a, nui, ut, no, uout_a)) return;
  bind_part(E, st, uout, true, uout_a);
}

/* ---- cond ------------------------------------------------------------------------------------------ */

/* Branch b's U function's parameters in the order the linear cond passes
   its operands: its unknown operands, every branch's residuals (one
   slot per residual of any branch: b's own parameter, or a new one it
   ignores), then the forwarded known operands fw[]. */
static void cond_u_params(Pe **S, int nb, int b, int nunk, const int *fw, int nfw, const Type *fwt, uint32_t v) {
  Pe *E = S[b];
  IrFunc *U = bld_func(E->UB);
  int total = nunk, np = 0;
  for (int c = 0; c < nb; c++)
    for (int i = 0; i < S[c]->nres; i++) total += S[c]->res[i].fwd < 0;
  total += nfw;
  IrVar **ps = bld_alloc(E->UB, sizeof(IrVar *) * (size_t)(total + 1));
  for (int i = 0; i < nunk; i++) ps[np++] = U->params[i];
  for (int c = 0; c < nb; c++)
    for (int i = 0; i < S[c]->nres; i++) {
      Res *r = &S[c]->res[i];
      if (r->fwd >= 0) continue;
      Type t = r->k.t;
      t.vma |= v;
      ps[np++] = c == b ? r->up : bld_param(E->UB, str_c(""), t);
    }
  for (int f = 0; f < nfw; f++) {
    IrVar *v = NULL;
    for (int i = 0; i < E->nres; i++)
      if (E->res[i].fwd == fw[f]) v = E->res[i].up;
    ps[np++] = v ? v : bld_param(E->UB, str_c(""), fwt[f]);
  }
  U->params = ps;
  U->nparams = np;
}

/* A cond split: every branch split; the known cond returns every branch's
   residuals, the linear one takes them and the unknown operands. */
static void pe_cond(Pe *E, IrStmt *st) {
  PeRoot *R = E->R;
  int nb = st->at->nfns, n = st->nin - 1, nout = st->nout;
  uint32_t V = st->in[0].t.vma, lift = E->lift | V;
  bool *uall = pe_alloc(R, sizeof(bool) * (size_t)(n + 2)), *uout = pe_alloc(R, sizeof(bool) * (size_t)(nout + 1));
  for (int k = 0; k < n; k++) uall[k + 1] = is_unk(E, &st->in[k + 1]);
  deps_special(R, st, uall, uout);
  bool *uin = uall + 1;
  Pe **S = pe_alloc(R, sizeof(Pe *) * (size_t)nb);
  IrAtom **uo = pe_alloc(R, sizeof(IrAtom *) * (size_t)nb);
  int nu = 0, nunk = 0;
  for (int j = 0; j < nout; j++) nu += uout[j];
  for (int k = 0; k < n; k++) nunk += uin[k];
  uint32_t *uvma = pe_alloc(R, sizeof(uint32_t) * (size_t)(nout + 1));
  for (int b = 0; b < nb; b++) {
    S[b] = pe_sub(E, st->at->fns[b], uin, PE_PARAM, lift, false);
    S[b]->res_vma = V;
    pe_body(S[b]);
    if (R->failed) return;
    uo[b] = atoms(R, nu);
    for (int j = 0, q = 0; j < nout; j++)
      if (uout[j]) {
        uo[b][q] = u_operand(S[b], &st->at->fns[b]->outs[j]);
        uvma[j] |= uo[b][q++].t.vma | st->out[j]->t.vma | lift;
      }
  }
  /* the residual slots (each branch's own), and the known operands
     forwarded to the linear cond */
  int nslot = 0, nfw = 0;
  int *fw = pe_alloc(R, sizeof(int) * (size_t)(n + 1));
  Type *fwt = pe_alloc(R, sizeof(Type) * (size_t)(n + 1));
  for (int b = 0; b < nb; b++)
    for (int i = 0; i < S[b]->nres; i++) {
      Res *r = &S[b]->res[i];
      if (r->fwd < 0) { nslot++; continue; }
      bool seen = false;
      for (int f = 0; f < nfw; f++) seen |= fw[f] == r->fwd;
      if (!seen) { fwt[nfw] = r->k.t; fw[nfw++] = r->fwd; }
    }
  int nko = nout - nu + nslot;
  Type *kt = pe_alloc(R, sizeof(Type) * (size_t)(nko + 1));
  IrFunc **kf = pe_alloc(R, sizeof(IrFunc *) * (size_t)nb), **uf = pe_alloc(R, sizeof(IrFunc *) * (size_t)nb);
  PVal **refs = pe_alloc(R, sizeof(PVal *) * (size_t)nb);
  for (int b = 0; b < nb; b++) {
    Builder *KB = S[b]->KB;
    IrAtom *ko = atoms(R, nko);
    int q = 0;
    for (int j = 0; j < nout; j++)
      if (!uout[j]) {
        kt[q] = st->out[j]->t;
        ko[q++] = bld_lift(KB, known_of(S[b], &st->at->fns[b]->outs[j]), st->out[j]->t.vma);
      }
    for (int c = 0; c < nb; c++)
      for (int i = 0; i < S[c]->nres; i++) {
        Res *r = &S[c]->res[i];
        if (r->fwd >= 0) continue;
        kt[q] = r->k.t;
        kt[q].vma |= V;
        Type z = r->k.t;
        z.vma = 0;
        ko[q] = bld_lift(KB, c == b ? r->k : bld_zeros(KB, &z), kt[q].vma);
        q++;
      }
    kf[b] = bld_finish(KB, ko, q);
    refs[b] = bld_pv_fn(E->KB, b);
  }
  /* the known cond */
  IrAtom *kin = atoms(R, n + 1);
  int nki = 0;
  kin[nki++] = known_of(E, &st->in[0]);
  for (int k = 0; k < n; k++)
    if (!uin[k]) kin[nki++] = known_of(E, &st->in[k + 1]);
  const char *keys[1] = {"branches"};
  PVal *kvals[1] = {bld_pv_tuple(E->KB, refs, nb)};
  IrAtom *kout = atoms(R, nko);
  if (!emit_part(E, E->KB, st, bld_attrs_with(E->KB, st->at, kf, nb), keys, kvals, 1, kin, nki, kt, nko, kout))
    return;
  bind_part(E, st, uout, false, kout);
  /* the linear cond: unknown operands (lifted), residual slots, forwarded */
  Type *ut = pe_alloc(R, sizeof(Type) * (size_t)(nu + 1));
  for (int j = 0, q = 0; j < nout; j++)
    if (uout[j]) {
      ut[q] = st->out[j]->t;
      ut[q++].vma = uvma[j];
    }
  for (int b = 0; b < nb; b++) {
    cond_u_params(S, nb, b, nunk, fw, nfw, fwt, V);
    for (int q = 0; q < nu; q++) uo[b][q] = bld_lift(S[b]->UB, uo[b][q], ut[q].vma);
    uf[b] = bld_finish(S[b]->UB, uo[b], nu);
    refs[b] = bld_pv_fn(E->UB, b);
  }
  IrAtom *uin_a = atoms(R, 1 + n + nslot + nfw);
  int nui = 0;
  uin_a[nui++] = u_operand(E, &st->in[0]);
  for (int k = 0; k < n; k++)
    if (uin[k]) uin_a[nui++] = bld_lift(E->UB, u_operand(E, &st->in[k + 1]), st->in[k + 1].t.vma | lift);
  for (int q = nout - nu; q < nko; q++) uin_a[nui++] = res_of(E, kout[q]);
  for (int f = 0; f < nfw; f++) uin_a[nui++] = u_operand(E, &st->in[fw[f] + 1]);
  PVal *uvals[1] = {bld_pv_tuple(E->UB, refs, nb)};
  IrAtom *uout_a = atoms(R, nu);
  if (!emit_part(E, E->UB, st, bld_attrs_with(E->UB, st->at, uf, nb), keys, uvals, 1, uin_a, nui, ut, nu, uout_a))
    return;
  bind_part(E, st, uout, true, uout_a);
}

/* ---- loops ---------------------------------------------------------------------------------------- */

/* The error for a loop whose trip count is not static. */
static bool dynamic_trips(Pe *E, const IrStmt *st) {
  diag_error(st->sp, "reverse-mode differentiation does not work for %s, as in JAX: its trip count is not static "
             "(use fori_loop with literal bounds)", st->prim == P_WHILE ? "while" : "a fori_loop whose bounds are values");
  E->R->failed = true;
  return false;
}

/* A fori_loop with literal bounds split: the known loop stacks its
   residuals, the linear loop reads them back. */
static void pe_fori(Pe *E, IrStmt *st) {
  PeRoot *R = E->R;
  IrFunc *H = st->at->fns[0];
  int nb = (int)st->at->i[2], nc = st->nin - nb;
  bool *pin = pe_alloc(R, sizeof(bool) * (size_t)(nc + 2)), *pass = pe_alloc(R, sizeof(bool) * (size_t)(nc + 2));
  for (int k = 0; k < nc; k++) pin[k + 1] = is_unk(E, &st->in[nb + k]);
  loop_deps(R, H, pin, 1, nc);
  if (nb) { dynamic_trips(E, st); return; }
  for (int k = 0; k < nc; k++) pass[k + 1] = H->outs[k].var == H->params[k + 1];
  Pe *S = pe_sub(E, H, pin, PE_STACK, E->lift, true);
  S->pass = pass;
  S->lower = st->at->i[0];
  S->trips = st->at->i[1] - st->at->i[0];
  pe_body(S);
  if (R->failed) return;
  /* U's results: the unknown carries, then its residuals unchanged */
  int nu = 0;
  for (int k = 0; k < nc; k++) nu += pin[k + 1];
  Type *ct = pe_alloc(R, sizeof(Type) * (size_t)(nc + 1));
  IrAtom *uo = atoms(R, nu + S->nres);
  for (int k = 0, q = 0; k < nc; k++) {
    ct[k] = st->out[k]->t;
    if (!pin[k + 1]) continue;
    ct[k].vma |= E->lift;
    uo[q++] = bld_lift(S->UB, u_operand(S, &H->outs[k]), ct[k].vma);
  }
  /* K's results: the known carries, then the stacks written at i - lower */
  IrAtom *ko = atoms(R, nc + S->nres);
  Type *kt = pe_alloc(R, sizeof(Type) * (size_t)(nc + S->nres + 1));
  int nk = 0;
  for (int k = 0; k < nc; k++)
    if (!pin[k + 1]) {
      kt[nk] = ct[k];
      ko[nk++] = bld_lift(S->KB, known_of(S, &H->outs[k]), ct[k].vma);
    }
  int nkc = nk;
  IrAtom kidx;
  bool has_kidx = false;
  for (int i = 0; i < S->nres; i++) {
    Res *r = &S->res[i];
    if (!r->kp) continue;
    if (!has_kidx) {
      kidx = loop_row(S, S->KB, S->ki);
      has_kidx = true;
    }
    int64_t z = 0;
    IrParam ps[1] = {kv("dimensions", bld_pv_ints(S->KB, &z, 1))};
    IrAtom up, in = r->k;
    if (!emit(E, S->KB, P_EXPAND_DIMS, ps, 1, &in, 1, &up)) return;
    int rk = r->kp->t.rank;
    IrAtom *din = atoms(R, rk + 2);
    din[0] = ir_var_atom(r->kp);
    din[1] = up;
    din[2] = kidx;
    for (int d = 1; d < rk; d++) {
      din[d + 2] = kidx;
      din[d + 2].var = NULL;
      din[d + 2].lit = bld_keep(S->KB, arr_scalar_i((DType)kidx.t.dt, 0));
      din[d + 2].t.vma = 0;
    }
    kt[nk] = r->kp->t;
    if (!emit(E, S->KB, P_DYNAMIC_UPDATE_SLICE, NULL, 0, din, rk + 2, &ko[nk++])) return;
  }
  IrFunc *K = bld_finish(S->KB, ko, nk);
  IrAtom *kin = atoms(R, nk);
  for (int k = 0, q = 0; k < nc; k++)
    if (!pin[k + 1]) kin[q++] = known_of(E, &st->in[k]);
  for (int q = nkc; q < nk; q++) {
    Type z = kt[q];
    z.vma = 0;
    kin[q] = bld_lift(E->KB, bld_zeros(E->KB, &z), kt[q].vma);
  }
  const char *keys[1] = {"body"};
  PVal *kvals[1] = {bld_pv_fn(E->KB, 0)};
  IrAtom *kout = atoms(R, nk);
  if (!emit_part(E, E->KB, st, bld_attrs_with(E->KB, st->at, &K, 1), keys, kvals, 1, kin, nk, kt, nk, kout)) return;
  bind_part(E, st, pin + 1, false, kout);
  /* the linear loop: the unknown carries, then the residuals */
  Type *ut = pe_alloc(R, sizeof(Type) * (size_t)(nu + S->nres + 1));
  IrAtom *uin_a = atoms(R, nu + S->nres);
  int nui = 0;
  for (int k = 0; k < nc; k++)
    if (pin[k + 1]) {
      ut[nui] = ct[k];
      uin_a[nui++] = bld_lift(E->UB, u_operand(E, &st->in[k]), ct[k].vma);
    }
  for (int i = 0, q = nkc; i < S->nres; i++) {
    Res *r = &S->res[i];
    ut[nui] = r->up->t;
    uo[nui] = ir_var_atom(r->up);
    uin_a[nui++] = r->kp ? res_of(E, kout[q++]) : u_operand(E, &st->in[r->fwd - 1]);
  }
  IrFunc *U = bld_finish(S->UB, uo, nui);
  PVal *uvals[1] = {bld_pv_fn(E->UB, 0)};
  IrAtom *uout_a = atoms(R, nui);
  if (!emit_part(E, E->UB, st, bld_attrs_with(E->UB, st->at, &U, 1), keys, uvals, 1, uin_a, nui, ut, nui, uout_a))
    return;
  bind_part(E, st, pin + 1, true, uout_a);
}

/* A scan split: the known scan computes its known carries and ys, and
   stacks the residuals as more ys; the linear scan takes its unknown
   consts, carries and xs, the consts and xs the residuals are, and the
   stacked residuals as xs. */
static void pe_scan(Pe *E, IrStmt *st) {
  PeRoot *R = E->R;
  IrFunc *H = st->at->fns[0];
  int nc = (int)st->at->i[0], ncar = (int)st->at->i[1], n = st->nin, nout = st->nout;
  bool *pin = pe_alloc(R, sizeof(bool) * (size_t)(n + 1)), *o = pe_alloc(R, sizeof(bool) * (size_t)(nout + 1));
  for (int k = 0; k < n; k++) pin[k] = is_unk(E, &st->in[k]);
  loop_deps(R, H, pin, nc, ncar);
  pe_deps(R, H, pin, o);
  bool *uout = pe_alloc(R, sizeof(bool) * (size_t)(nout + 1));
  for (int j = 0; j < nout; j++) uout[j] = j < ncar ? pin[nc + j] : o[j];
  Pe *S = pe_sub(E, H, pin, PE_SCAN, E->lift, false);
  S->nconst = nc;
  S->ncarry = ncar;
  pe_body(S);
  if (R->failed) return;
  IrAtom *uo = atoms(R, nout);
  Type *ut = pe_alloc(R, sizeof(Type) * (size_t)(nout + 1));
  int nu = 0;
  for (int j = 0; j < nout; j++)
    if (uout[j]) {
      ut[nu] = st->out[j]->t;
      ut[nu].vma |= E->lift;
      uint32_t v = j < ncar ? ut[nu].vma : H->outs[j].t.vma | E->lift;
      uo[nu++] = bld_lift(S->UB, u_operand(S, &H->outs[j]), v);
    }
  /* the known scan: known carries, known ys, then the stacked residuals */
  IrAtom *ko = atoms(R, nout + S->nres);
  Type *kt = pe_alloc(R, sizeof(Type) * (size_t)(nout + S->nres + 1));
  int nk = 0, kc = 0, kcar = 0;
  for (int j = 0; j < nout; j++)
    if (!uout[j]) {
      kt[nk] = st->out[j]->t;
      ko[nk] = bld_lift(S->KB, known_of(S, &H->outs[j]), j < ncar ? kt[nk].vma : H->outs[j].t.vma);
      nk++;
    }
  int nky = nk;
  for (int i = 0; i < S->nres; i++) {
    Res *r = &S->res[i];
    if (r->fwd >= 0) continue;
    Type t = r->k.t;
    if (t.rank >= SHM_MAXRANK) {
      diag_error(st->sp, "reverse-mode differentiation of this scan needs a residual of rank %d, more than %d",
                 t.rank + 1, SHM_MAXRANK);
      R->failed = true;
      return;
    }
    for (int d = t.rank; d > 0; d--) t.shape[d] = t.shape[d - 1];
    t.shape[0] = st->at->i[2];
    t.rank++;
    kt[nk] = t;
    ko[nk++] = r->k;
  }
  IrFunc *K = bld_finish(S->KB, ko, nk);
  IrAtom *kin = atoms(R, n);
  int nki = 0;
  for (int k = 0; k < n; k++)
    if (!pin[k]) {
      kin[nki++] = known_of(E, &st->in[k]);
      kc += k < nc;
      kcar += k >= nc && k < nc + ncar;
    }
  Attrs *kat = bld_attrs_with(E->KB, st->at, &K, 1);
  kat->i[0] = kc;
  kat->i[1] = kcar;
  const char *keys[3] = {"jaxpr", "num_consts", "num_carry"};
  PVal *kvals[3] = {bld_pv_fn(E->KB, 0), bld_pv_int(E->KB, kc), bld_pv_int(E->KB, kcar)};
  IrAtom *kout = atoms(R, nk);
  if (!emit_part(E, E->KB, st, kat, keys, kvals, 3, kin, nki, kt, nk, kout)) return;
  bind_part(E, st, uout, false, kout);
  /* the linear scan, U's parameters in scan order: per group (consts,
     carries, xs) the unknown operands, then the residuals that belong to
     it (forwarded consts; forwarded and stacked xs) */
  IrFunc *U = bld_func(S->UB);
  IrVar **ps = pe_alloc(R, sizeof(IrVar *) * (size_t)(U->nparams + 1));
  IrAtom *uin_a = atoms(R, U->nparams);
  int np = 0, uc = 0, ucar = 0;
  for (int group = 0; group < 3; group++) {
    int lo = group == 0 ? 0 : group == 1 ? nc : nc + ncar, hi = group == 0 ? nc : group == 1 ? nc + ncar : n;
    for (int k = 0, q = 0; k < n; k++) {
      if (!pin[k]) continue;
      if (k >= lo && k < hi) {
        ps[np] = U->params[q];
        uin_a[np++] = bld_lift(E->UB, u_operand(E, &st->in[k]), U->params[q]->t.vma);
      }
      q++;
    }
    for (int i = 0, q = nky; i < S->nres; i++) {
      Res *r = &S->res[i];
      bool stacked = r->fwd < 0;
      int g = stacked || r->fwd >= nc ? 2 : 0;
      if (g == group) {
        ps[np] = r->up;
        uin_a[np++] = stacked ? res_of(E, kout[q]) : u_operand(E, &st->in[r->fwd]);
      }
      q += stacked;
    }
    if (group == 0) uc = np;
    if (group == 1) ucar = np - uc;
  }
  U->params = ps;
  U->nparams = np;
  U = bld_finish(S->UB, uo, nu);
  Attrs *uat = bld_attrs_with(E->UB, st->at, &U, 1);
  uat->i[0] = uc;
  uat->i[1] = ucar;
  PVal *uvals[3] = {bld_pv_fn(E->UB, 0), bld_pv_int(E->UB, uc), bld_pv_int(E->UB, ucar)};
  IrAtom *uout_a = atoms(R, nu);
  if (!emit_part(E, E->UB, st, uat, keys, uvals, 3, uin_a, np, ut, nu, uout_a)) return;
  bind_part(E, st, uout, true, uout_a);
}

/* A while: reverse mode needs a static trip count, so no tangent may
   flow through its carries; its other unknown operands are unused. */
static void pe_while(Pe *E, IrStmt *st) {
  PeRoot *R = E->R;
  bool *uin = pe_alloc(R, sizeof(bool) * (size_t)(st->nin + 1)), *o = pe_alloc(R, sizeof(bool) * (size_t)(st->nout + 1));
  for (int k = 0; k < st->nin; k++) uin[k] = is_unk(E, &st->in[k]);
  deps_special(R, st, uin, o);
  for (int j = 0; j < st->nout; j++)
    if (o[j]) { dynamic_trips(E, st); return; }
  IrAtom *in = atoms(R, st->nin), *out = atoms(R, st->nout);
  for (int k = 0; k < st->nin; k++) {
    Type z = st->in[k].t;
    in[k] = uin[k] ? bld_zeros(E->KB, &z) : known_of(E, &st->in[k]);
  }
  if (!bld_copy(E->KB, st, in, out)) { R->failed = true; return; }
  for (int j = 0; j < st->nout; j++) E->map[st->out[j]->slot] = out[j];
}

/* ---- the walk ------------------------------------------------------------------------------------ */

/* An equation: to the known part when it reads no unknown value, else to
   the linear part (a higher-order one split). */
static void pe_eqn(Pe *E, IrStmt *st) {
  PeRoot *R = E->R;
  bool any = false;
  for (int k = 0; k < st->nin; k++) any |= is_unk(E, &st->in[k]);
  IrAtom *in = atoms(R, st->nin), *out = atoms(R, st->nout);
  if (!any) {
    for (int k = 0; k < st->nin; k++) in[k] = known_of(E, &st->in[k]);
    if (!bld_copy(E->KB, st, in, out)) { R->failed = true; return; }
    for (int j = 0; j < st->nout; j++) E->map[st->out[j]->slot] = out[j];
    return;
  }
  if (st->prim >= 0 && prim_table[st->prim].vrule == VR_SPECIAL) {
    switch (st->prim) {
    case P_COND: pe_cond(E, st); return;
    case P_FORI_LOOP: pe_fori(E, st); return;
    case P_WHILE: pe_while(E, st); return;
    case P_SCAN: pe_scan(E, st); return;
    case P_XLA_PMAP:
      diag_error(st->sp, "reverse-mode differentiation of xla_pmap is not available: its transpose is not written "
                 "(shard_map's is; write the pmap as a shard_map)");
      R->failed = true;
      return;
    default: pe_shard_map(E, st); return;
    }
  }
  for (int k = 0; k < st->nin; k++) in[k] = u_operand(E, &st->in[k]);
  if (!bld_copy(E->UB, st, in, out)) { R->failed = true; return; }
  for (int j = 0; j < st->nout; j++) {
    E->map[st->out[j]->slot] = out[j];
    E->unk[st->out[j]->slot] = true;
  }
}

/* A statement of E->src (constants, prints and saves go to the known part). */
static void pe_stmt(Pe *E, IrStmt *st) {
  bld_set_where(E->KB, st->sp);
  bld_set_where(E->UB, st->sp);
  switch (st->k) {
  case IS_EQN: pe_eqn(E, st); break;
  case IS_CONST: {
    IrAtom a;
    bld_const(E->KB, st->value, &a);
    a.var->name = st->out[0]->name;
    E->map[st->out[0]->slot] = a;
    break;
  }
  case IS_PRINT: {
    IrPrintItem *items = pe_alloc(E->R, sizeof(IrPrintItem) * (size_t)(st->nitems + 1));
    for (int k = 0; k < st->nitems; k++) {
      items[k] = st->items[k];
      if (items[k].atom.var || items[k].atom.lit) items[k].atom = known_of(E, &st->items[k].atom);
    }
    bld_print_like(E->KB, items, st->nitems, st);
    break;
  }
  case IS_SHOW: bld_reuse(E->KB, st); break;
  case IS_SAVE: bld_save(E->KB, st, known_of(E, &st->in[0])); break;
  }
}

/* E->src's statements, in order (until a failure). */
static void pe_body(Pe *E) {
  for (int i = 0; i < E->src->nbody && !E->R->failed; i++) pe_stmt(E, E->src->body[i]);
}

IrFunc *pe_linearize(IrProg *P, IrFunc *g, const bool *unknown, const bool *lin_out, IrAtom *keep, const char *name,
                     Span where) {
  PeRoot R;
  memset(&R, 0, sizeof R);
  R.P = P;
  R.parent = g->parent;
  Pe E;
  memset(&E, 0, sizeof E);
  E.R = &R;
  E.src = g;
  E.mode = PE_TOP;
  E.KB = E.UB = bld_new(P, name, g->parent, g->mesh, where);
  IrFunc *L = bld_func(E.KB);
  L->scope_as = g->scope_as ? g->scope_as : g;
  E.unk = pe_alloc(&R, sizeof(bool) * (size_t)(g->nslots + 1));
  E.map = pe_alloc(&R, sizeof(IrAtom) * (size_t)(g->nslots + 1));
  E.kparam = pe_alloc(&R, sizeof(IrVar *) * (size_t)(g->nparams + 1));
  for (int p = 0; p < g->nparams; p++) {
    IrVar *v = g->params[p];
    E.map[v->slot] = ir_var_atom(bld_param(E.KB, v->name, v->t));
    E.unk[v->slot] = unknown[p];
  }
  int errs = diag_count();
  pe_body(&E);
  if (R.failed || diag_count() != errs) return NULL;
  bld_set_where(E.KB, where);
  IrAtom *outs = atoms(&R, g->nouts);
  int n = 0, nk = 0;
  for (int j = 0; j < g->nouts; j++) {
    const IrAtom *o = &g->outs[j];
    IrAtom a = is_unk(&E, o) ? E.map[o->var->slot] : known_of(&E, o);
    if (lin_out[j]) outs[n++] = a;
    else keep[nk++] = a;
  }
  return bld_finish(E.KB, outs, n);
}
