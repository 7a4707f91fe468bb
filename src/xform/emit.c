/*
** emit.c — writing checked functions: variables, statements, lifts, and
** the typing of one primitive equation, shared by the checker and the
** Builder.
*/
#include <stdio.h>
#include "body.h"
#include "coll.h"
#include "diag.h"
#include "prims.h"
#include "emit.h"
#include "err.h"
#include "show.h"
#include "unred.h"

/* ---- the program ------------------------------------------------------------ */

typedef struct LitKeep {
  Array *a;
  struct LitKeep *next;
} LitKeep;

void prog_init(IrProg *P) { memset(P, 0, sizeof *P); }

void prog_free(IrProg *P) {
  while (P->kept) {
    LitKeep *n = P->kept->next;
    arr_unref(P->kept->a);
    mem_free(P->kept);
    P->kept = n;
  }
  arena_free(&P->arena);
}

static void unref_array(void *a) { arr_unref(a); }

Array *prog_keep(IrProg *P, Array *a) {
  err_defer(unref_array, a);
  LitKeep *k = mem_alloc(sizeof *k);
  err_undefer(a);
  k->a = a;
  k->next = P->kept;
  P->kept = k;
  return a;
}

/* ---- variables and statements ------------------------------------------------ */

IrVar *emit_var(Emitter *E, Str name, Type t, Span sp) {
  IrVar *v = ENEW(E, IrVar);
  v->name = name;
  v->t = t;
  v->t.weak = false;
  v->slot = E->fn->nslots++;
  v->owner = E->fn;
  v->sp = sp;
  return v;
}

IrStmt *emit_new_stmt(Emitter *E, IrStmtKind k, Span sp) {
  IrStmt *s = ENEW(E, IrStmt);
  s->k = k;
  s->sp = sp;
  s->whole = sp;
  int col;
  diag_linecol(sp.file, sp.off, &s->line, &col);
  s->prim = -1;
  s->shown_prim = -1;
  return s;
}

void emit_stmt(Emitter *E, IrStmt *s) {
  IrFunc *f = E->fn;
  if (f->nbody == f->capbody) {
    int nc = f->capbody ? f->capbody * 2 : 16;
    IrStmt **nb = ENEWN(E, IrStmt *, nc);
    if (f->nbody) memcpy(nb, f->body, sizeof(IrStmt *) * (size_t)f->nbody);
    f->body = nb;
    f->capbody = nc;
  }
  f->body[f->nbody++] = s;
}

void emit_capture(Emitter *E, IrVar *v) {
  v->captured = true;
  for (IrFunc *f = E->fn; f && f != v->owner; f = f->parent) {
    for (int i = 0; i < f->ncaptured; i++)
      if (f->captured[i] == v) return;
    if (f->ncaptured == f->capcaptured) {
      int nc = f->capcaptured ? f->capcaptured * 2 : 4;
      IrVar **n = ENEWN(E, IrVar *, nc);
      if (f->ncaptured) memcpy(n, f->captured, sizeof(IrVar *) * (size_t)f->ncaptured);
      f->captured = n;
      f->capcaptured = nc;
    }
    f->captured[f->ncaptured++] = v;
  }
}

IrAtom emit_lift(Emitter *E, IrAtom a, uint32_t to, Span sp) {
  if ((!a.var && !a.lit) || (a.t.vma | to) == a.t.vma) return a;
  if (a.var && a.var->owner != E->fn) emit_capture(E, a.var);   /* read from an enclosing function */
  uint32_t add = to & ~a.t.vma, rv = add & a.t.red;
  if (rv) add = rv;            /* a reduced value is widened by reduced_vary_cast (JAX's auto pcast), first */
  IrStmt *st = emit_new_stmt(E, IS_EQN, sp);
  st->prim = rv ? P_REDUCED_VARY_CAST : P_PBROADCAST;
  st->inserted = true;
  st->at = ENEW(E, Attrs);
  st->at->dtype = -1;
  st->at->axmask = add;
  for (int k = 0; k < E->mesh->naxes; k++)
    if (add & (1u << k)) st->at->axes[st->at->naxes++] = (uint8_t)k;
  /* canonical parameter: axes=(...) */
  PVal *t = ENEW(E, PVal);
  t->k = PV_TUPLE;
  t->n = st->at->naxes;
  t->items = ENEWN(E, PVal *, t->n);
  for (int k = 0; k < t->n; k++) {
    PVal *e = ENEW(E, PVal);
    e->k = PV_NAME;
    e->s = E->mesh->axis[st->at->axes[k]];
    t->items[k] = e;
  }
  st->params = ENEWN(E, IrParam, 1);
  st->params[0].key = "axes";
  st->params[0].v = t;
  st->nparams = 1;
  st->in = ENEWN(E, IrAtom, 1);
  st->in[0] = a;
  st->nin = 1;
  Type nt = a.t;
  nt.vma = a.t.vma | add;
  nt.red &= ~add;
  nt.lay = NULL;
  IrVar *v = emit_var(E, a.var ? a.var->name : str_c(""), nt, sp);
  st->out = ENEWN(E, IrVar *, 1);
  st->out[0] = v;
  st->nout = 1;
  emit_stmt(E, st);
  /* the result is the new variable alone: an atom is a variable or a
     literal, never both (the evaluator reads a literal first) */
  IrAtom r = a;
  r.var = v;
  r.lit = NULL;
  r.t = nt;
  return rv && (to & ~nt.vma) ? emit_lift(E, r, to, sp) : r;
}

/* ---- typing one primitive equation ---------------------------------------------- */

bool emit_prim_shape(Emitter *E, RuleCtx *r, int prim, Span sp, AstParam **params, int nparams, Type *in, int nin,
                     Attrs *at, Type *out) {
  const PrimInfo *pi = &prim_table[prim];
  rule_init(r, &E->prog->arena, E->mesh, pi->name, sp, params, nparams);
  struct IrFunc **fns = at->fns;         /* a body the caller checked (check_body.c) */
  int nfns = at->nfns;
  memset(at, 0, sizeof *at);
  at->dtype = -1;
  at->fns = fns;
  at->nfns = nfns;
  if (!pi->shape(r, in, nin, at, out) || r->failed) return false;
  if (coll_is_async_start(prim)) out[0].future = true;
  if (at->nfns && pi->vrule != VR_SPECIAL) at->run = body_run;
  return rule_unused(r, pi->params);
}

/* An operand in a state the primitive cannot take (unred.c's message). */
static void unred_error(Emitter *E, int prim, const IrAtom *in, const UnredErr *ue, Span sp) {
  Buf ax = {0};
  err_defer(buf_release, &ax);
  show_vma_message(&ax, ue->axes, E->mesh);
  const IrAtom *a = ue->operand >= 0 ? &in[ue->operand] : NULL;
  char nm[160];
  if (a && a->var && a->var->name.n) snprintf(nm, sizeof nm, "%.*s", a->var->name.n, a->var->name.p);
  else snprintf(nm, sizeof nm, "%s", a && a->var ? "its operand" : "a literal");
  diag_error(sp, ue->msg, prim_table[prim].name, nm, buf_cstr(&ax));
  err_undefer(&ax);
  buf_free(&ax);
}

bool emit_prim_vary(Emitter *E, int prim, IrAtom *in, int nin, const Attrs *at, Type *out, int nout, Span sp) {
  Type *t = ENEWN(E, Type, nin);
  bool *lit = ENEWN(E, bool, nin);
  uint32_t *lift = ENEWN(E, uint32_t, nin), res;
  for (int k = 0; k < nin; k++) {
    t[k] = in[k].t;
    lit[k] = !in[k].var;
  }
  VarRule vr = prim_table[prim].vrule;
  /* a pvary JAX printed over axes along which it types the operand
     invariant but it varies (downstream of a precv): the identity there */
  uint32_t jaxinv_in = 0, jaxvary_in = 0;
  for (int k = 0; k < nin; k++) {
    jaxinv_in |= t[k].jaxinv;
    jaxvary_in |= t[k].vma & ~t[k].jaxinv;
  }
  if (prim == P_PBROADCAST && nin == 1 && (at->axmask & t[0].vma) && !(at->axmask & t[0].vma & ~t[0].jaxinv))
    t[0].vma &= ~at->axmask;
  /* in an xmap body all_gather's result loses the gathered named axes, as
     in JAX's named shapes (a shard_map body types it as varying) */
  if (prim == P_ALL_GATHER && E->mesh && E->mesh->named) vr = VR_GATHER_INV;
  if (!rule_vary(vr, t, nin, at, lit, lift, &res)) {
    Buf b0 = {0}, b1 = {0};
    err_defer(buf_release, &b0);
    err_defer(buf_release, &b1);
    show_vma_message(&b0, at->axmask & in[0].t.vma, E->mesh);
    show_vma_message(&b1, in[0].t.vma, E->mesh);
    diag_error(sp, "%s needs an operand invariant along %s, but %.*s varies over %s", prim_table[prim].name,
               buf_cstr(&b0), in[0].var ? in[0].var->name.n : 7, in[0].var ? in[0].var->name.p : "operand",
               buf_cstr(&b1));
    err_undefer(&b0);
    buf_free(&b0);
    err_undefer(&b1);
    buf_free(&b1);
    return false;
  }
  UnredErr ue;
  if (!unred_rule(coll_async_base(prim), vr, t, nin, lit, at, res, out, nout, &ue)) {
    unred_error(E, prim, in, &ue, sp);
    return false;
  }
  /* an operand that scales a summand stays as it is along the unreduced
     axes (the same on every device there): lifting it would type it
     varying, which no rule accepts beside a summand */
  uint32_t ou = nout ? out[0].unred : 0;
  for (int k = 0; k < nin; k++) {
    if (!(t[k].unred & ou)) lift[k] &= ~ou | t[k].vma;
    in[k] = emit_lift(E, in[k], lift[k], sp);
  }
  for (int k = 0; k < nout; k++) {
    out[k].vma = res | out[k].unred;
    out[k].lay = NULL;
    out[k].jaxinv = prim == P_PRECV ? out[k].vma
                    : out[k].vma & jaxinv_in & ~jaxvary_in & ~(prim == P_PBROADCAST ? at->axmask : 0);
  }
  return true;
}
