/*
** eval.c — running the checked program over all instances in lockstep.
*/
#include <stdio.h>
#include <stdlib.h>
#include "diag.h"
#include "drops.h"
#include "err.h"
#include "eval.h"
#include "state.h"
#include "fabmpi.h"
#include "fuse.h"
#include "ew.h"
#include "rule.h"
#include "split.h"
#include "valprint.h"
#include "npy.h"
#include "npprint.h"

struct Interp {
  IrFunc *main;
  Frame *top;
  Frame *cur;              /* innermost running frame */
  long steps, max_steps;
  EvalHook hook;
  void *hook_data;
  EvalObserver obs;        /* obs.data NULL: none */
  bool abandon;            /* eval_abandon: unwind without a message */
  bool release_top;        /* eval_release_top: a script's top level drops values too */
  int64_t sub;             /* the branch or iteration of the next call_fn (fmpi_path_enter) */
  Frame *spare;            /* a freed frame kept for the next call (its slots NULL) */
};

/* ---- frames ------------------------------------------------------------------ */

/* A loop's body is a call per step: the last frame freed is kept, its
   slots cleared, and serves the next call that fits in it. */
static Frame *frame_new(Interp *I, IrFunc *fn, Frame *caller, const Space *sp) {
  Frame *F = I->spare;
  if (F && mem_size(F->slots) >= sizeof(Val *) * (size_t)fn->nslots) {
    I->spare = NULL;
    F->cur = NULL;
  } else {
    Val **slots = mem_calloc(sizeof(Val *) * (size_t)(fn->nslots ? fn->nslots : 1));
    err_defer(mem_free, slots);
    F = mem_calloc(sizeof *F);
    err_undefer(slots);
    F->slots = slots;
  }
  F->fn = fn;
  F->nslots = fn->nslots;
  F->caller = caller;
  F->space = *sp;
  F->release_at = -1;
  F->jump = -1;
  /* static link: the innermost frame of the function that defines fn */
  Frame *s = caller;
  while (s && s->fn != fn->parent && (!s->fn->scope_as || s->fn->scope_as != fn->parent)) s = s->up;
  F->up = s;
  I->cur = F;
  return F;
}

static void frame_free(Interp *I, Frame *F) {
  for (int i = 0; i < F->nslots; i++) {
    val_unref(F->slots[i]);
    F->slots[i] = NULL;
  }
  I->cur = F->caller;
  if (!I->spare && F != I->top) {
    I->spare = F;
    return;
  }
  mem_free(F->slots);
  mem_free(F);
}

Val *eval_lookup(Frame *F, IrVar *v) {
  while (F && F->fn != v->owner) F = F->up;
  return F && v->slot < F->nslots ? F->slots[v->slot] : NULL;
}

/* Store val (a reference handed over) as v's value.  A value holds one
   block per combination of the axes its type varies over, never fewer:
   a value that arrives with a smaller mask (a literal, an invariant
   initial carry) is widened here, its blocks shared, so that instances
   along a varying axis never share one block that a later merge would
   write for all of them.  A mask the type does not cover is the
   checker's bug, caught here rather than printed as a wrong number. */
static void set_slot(Frame *F, IrVar *v, Val *val) {
  if (val && val->mask != v->t.vma) {
    if (val->mask & ~v->t.vma) {
      val_unref(val);
      err_throw("internal error: a value of %.*s varies over more axes than its type says",
                v->name.n, v->name.p);
    }
    val = val_widen(F->space.mesh, val, v->t.vma);
  }
  val_unref(F->slots[v->slot]);
  F->slots[v->slot] = val;
}

void eval_assign(Frame *F, IrVar *v, Val *val) {
  while (F && F->fn != v->owner) F = F->up;
  if (!F) {
    val_unref(val);
    return;
  }
  if (v->slot >= F->nslots) {
    F->slots = mem_realloc(F->slots, sizeof(Val *) * (size_t)(v->slot + 1));
    for (int i = F->nslots; i <= v->slot; i++) F->slots[i] = NULL;
    F->nslots = v->slot + 1;
  }
  set_slot(F, v, val);
}

void eval_jump(Frame *F, int index) { F->jump = index; }

/* A variable's value.  A top-level statement that failed leaves its
   variables without one, and the REPL and the debugger go on after it. */
static Val *value_of(Frame *F, IrVar *v) {
  Val *x = eval_lookup(F, v);
  if (!x) err_throw("'%.*s' has no value: the statement that sets it failed", v->name.n, v->name.p);
  if (x->split) spl_realize(x);
  return x;
}

/* value_of for passing a value on (arguments, results): one kept split
   (realize) stays so; a statement that reads it whole has had it
   assembled before it ran (realize_inputs). */
static Val *value_passed(Frame *F, IrVar *v) {
  Val *x = eval_lookup(F, v);
  if (!x) err_throw("'%.*s' has no value: the statement that sets it failed", v->name.n, v->name.p);
  return x;
}

static bool released_here(Frame *F, IrVar *v);
static void release_arr(void *a) { arr_unref(a); }
static bool dies_here(Frame *F, const IrAtom *a);

/* Scratch memory that a runtime error releases too (err.h cleanups). */
static void *scratch(size_t n) {
  void *p = mem_calloc(n);
  err_defer(mem_free, p);
  return p;
}

static void scratch_free(void *p) {
  if (!p) return;
  err_undefer(p);
  mem_free(p);
}

/* An array of n references to values (NULL at first), released with
   them by vals_free or by a runtime error.  A reference handed on (to a
   frame's slot) is set to NULL in the array. */
static void vals_release(void *p) {
  Val **v = p;
  size_t n = mem_size(p) / sizeof(Val *);
  for (size_t i = 0; i < n; i++) val_unref(v[i]);
  mem_free(p);
}

static Val **vals_new(int n) {
  Val **v = mem_calloc(sizeof(Val *) * (size_t)(n + 1));
  err_defer(vals_release, v);
  return v;
}

static void vals_free(Val **v) {
  err_undefer(v);
  vals_release(v);
}

/* The block of an atom that block b of a value of mask R needs. */
static Array *atom_block(Frame *F, const IrAtom *a, uint32_t R, int64_t b) {
  if (a->lit) return a->lit;
  Val *v = value_of(F, a->var);
  return v->blk[til_project(F->space.mesh, R, b, v->mask)];
}

/* Which blocks of mask R some running instance needs; NULL: all of them.
   Scratch memory (released by scratch_free or a runtime error). */
static uint8_t *needed_blocks(const Space *sp, uint32_t R, int64_t nb) {
  uint8_t *need = fab_needed(sp, R, nb);
  if (need) err_defer(mem_free, need);
  return need;
}

static void run_body(Interp *I, Frame *F);

static void call_body(Interp *I, Frame *F, IrFunc *fn, Val **outs, IrStmt *site);

/* Call fn with argument values (borrowed); results are new references.
   `site`: the statement calling it (for the observer). */
static void call_fn(Interp *I, Frame *caller, IrFunc *fn, Val **args, Val **outs, const Space *sp, IrStmt *site) {
  Frame *F = frame_new(I, fn, caller, sp);
  for (int i = 0; i < fn->nparams; i++) set_slot(F, fn->params[i], val_ref(args[i]));
  call_body(I, F, fn, outs, site);
}

/* call_fn, its parameters taking over the references in args (then
   NULL): a value the caller lets go of (pass_dying) is held by the
   callee's parameter alone, which may then give its buffer to a result
   (buffer donation) or be released at its own last use. */
static void call_fn_consuming(Interp *I, Frame *caller, IrFunc *fn, Val **args, Val **outs, const Space *sp,
                              IrStmt *site) {
  Frame *F = frame_new(I, fn, caller, sp);
  for (int i = 0; i < fn->nparams; i++) {
    set_slot(F, fn->params[i], val_ref(args[i]));
    val_unref(args[i]);
    args[i] = NULL;
  }
  call_body(I, F, fn, outs, site);
}

/* The rest of a call, once F's parameters are bound. */
static void call_body(Interp *I, Frame *F, IrFunc *fn, Val **outs, IrStmt *site) {
  if (I->obs.data && fmpi_size() > 1 && F->space.active)
    err_throw("the cost model across ranks follows the run on rank 0's devices, which cannot see a branch "
              "or loop that only some devices take: model this program in one process, or with --abstract");
  if (I->obs.data) I->obs.call(I->obs.data, F, site);
  fmpi_path_enter(I->sub);
  I->sub = 0;
  run_body(I, F);
  fmpi_path_leave();
  if (I->hook) I->hook(I, F, NULL, EV_RETURN, I->hook_data);
  if (I->obs.data) I->obs.ret(I->obs.data, F, site);
  for (int i = 0; i < fn->nouts; i++) {
    const IrAtom *o = &fn->outs[i];
    outs[i] = o->lit ? val_of(o->lit) : val_ref(value_passed(F, o->var));
  }
  frame_free(I, F);
}

/* ---- local primitives ----------------------------------------------------------- */

/* A kernel's operands with their reference counts before it ran.  A
   kernel that fails takes its references to its operands with it, so
   they are put back (kern_unwind, an err.h cleanup).  The blocks the
   equation allocated, the results of the blocks already computed
   included, are freed by its memory scope (mem.h), so kern_unwind first
   takes those results out of the result values, which live on in the
   frame -- giving back the references a donated operand's block (one
   allocated before the scope) took for them. */
typedef struct KernGuard {
  Array **ins;
  int n;
  int32_t *refc;
  Val **outs;
  int nout;
  int64_t ndonated;        /* results that are donated operand blocks */
} KernGuard;

static void kern_unwind(void *p) {
  KernGuard *g = p;
  for (int i = 0; i < g->n; i++) g->ins[i]->refc = g->refc[i];
  for (int j = 0; j < g->nout; j++) {
    Val *o = g->outs[j];
    /* (the kernels of the primitives that donate return fresh arrays,
       whose count is 1: a count of 2 is an operand's block) */
    for (int64_t b = 0; g->ndonated && b < o->nblk; b++)
      if (o->blk[b] && o->blk[b]->refc > 1) o->blk[b]->refc--;
    memset(o->blk, 0, sizeof(Array *) * (size_t)o->nblk);
  }
}

/* Elementwise equations on small blocks, all instances at once, without
   a kernel call or an allocation per block (value.h, val_ew_*).  An
   operand that dies here (dies_here) and holds the only references to
   its blocks, laid out as the result's (val_ew_donor), is the result
   itself: computed in place (buffer donation, below, for the whole value
   at once), its value moved to the result's variable (its slot emptied:
   the variable is released after this statement anyway).  Only the
   blocks' allocation can fail, before anything is stored.  false: not
   such an equation, nothing done (exec_local runs it). */
static bool exec_ew_slab(Frame *F, IrStmt *st) {
  int op = prim_ew_op(st->prim), nin = st->nin;
  if (op < 0 || nin > 2 || st->nout != 1 || !fab_all_here(&F->space)) return false;
  Val *opv[2] = {NULL, NULL};
  Array *lit[2] = {NULL, NULL};
  for (int i = 0; i < nin; i++) {
    if (st->in[i].lit) lit[i] = st->in[i].lit;
    else opv[i] = value_of(F, st->in[i].var);
  }
  const Type *t = &st->out[0]->t;
  uint32_t R = t->vma;
  int64_t nb = til_nblk(F->space.mesh, R);
  int donor = -1;
  for (int i = 0; i < nin && donor < 0; i++)
    if (opv[i] && dies_here(F, &st->in[i]) && val_ew_donor(opv[i], t, R)) donor = i;
  int flat = val_ew_plan(t, R, nb, opv, lit, nin, donor);
  if (flat < 0) return false;
  Val *out = donor >= 0 ? opv[donor] : val_new(R, nb);
  if (donor >= 0) F->slots[st->in[donor].var->slot] = NULL;
  set_slot(F, st->out[0], out);
  if (donor < 0) val_ew_blocks(out, t);
  val_ew_run(F->space.mesh, op, t, opv, lit, nin, flat, out);
  return true;
}

/* Buffer donation.  An operand whose value dies at this statement (its
   last use, no other reference: dies_here) and whose block no other
   value shares (the array's own count is 1) may hold the result, as XLA
   donates buffers: an elementwise op computes into it in place (the
   kernels read element i before writing it), a reshape, squeeze or
   expand_dims rewrites its header.  Then a chain of operations reuses one
   buffer instead of faulting in fresh pages for each result.  The
   operand's value is released after the statement anyway, and nothing
   else can see the array, so results are the kernels' own.  Only
   elementwise operands of the result's dtype and exact shape are given
   (the other operand the same, or a scalar of that dtype); a slab's
   arrays are not (they share one allocation). */
static bool donatable_shape(const Array *x, const Type *t) {
  if (x->rank != t->rank) return false;
  for (int d = 0; d < t->rank; d++)
    if (x->shape[d] != t->shape[d]) return false;
  return true;
}

static bool donatable(const Array *x, const Type *t) {
  return x->refc == 1 && !x->slab && x->dt == t->dt && donatable_shape(x, t);
}

/* The header-only primitives: the result is the operand's elements. */
static bool same_elements(const IrStmt *st) {
  return st->prim == P_SQUEEZE || st->prim == P_EXPAND_DIMS || (st->prim == P_RESHAPE && !st->at->l[1].n);
}

/* Which operands of st may be donated, by bit, before looking at blocks:
   they die here and are laid out as the result's blocks. */
static unsigned donors(Frame *F, IrStmt *st, Val *const *opv, uint32_t R) {
  if (st->nout != 1 || st->nin > 2 || (prim_ew_op(st->prim) < 0 && !same_elements(st))) return 0;
  unsigned m = 0;
  for (int i = 0; i < st->nin; i++)
    if (opv[i] && opv[i]->mask == R && dies_here(F, &st->in[i])) m |= 1u << i;
  return m;
}

/* The result of st for one block, computed into a donated operand among
   ins (mask: donors()), or NULL when none qualifies. */
static Array *donate(IrStmt *st, unsigned mask, Array *const *ins, const Type *t) {
  if (same_elements(st)) {
    Array *x = ins[0];
    if (!(mask & 1) || x->refc != 1 || x->slab || x->dt != t->dt) return NULL;
    x->rank = (uint8_t)t->rank;
    for (int d = 0; d < t->rank; d++) x->shape[d] = t->shape[d];
    return arr_ref(x);
  }
  int nin = st->nin;
  for (int i = 0; i < nin; i++) {
    Array *x = ins[i], *o = nin > 1 ? ins[1 - i] : NULL;
    if (!(mask & (1u << i)) || !donatable(x, t)) continue;
    if (o && o != x && (o->dt != x->dt || (o->rank != 0 && !donatable_shape(o, t)))) continue;
    prim_ew_apply(prim_ew_op(st->prim), ins[0], nin > 1 ? ins[1] : NULL, x);
    return arr_ref(x);
  }
  return NULL;
}

/* Operands of st (by bit) that die at it and whose blocks map one to one
   onto the result's: each block may go as soon as its result is made
   (drop_blocks), so that a statement over many big blocks -- the
   products of a shard_map -- does not hold all its operands and all its
   results at once. */
static unsigned dying_operands(Frame *F, IrStmt *st, Val *const *opv, uint32_t R) {
  unsigned m = 0;
  for (int i = 0; i < st->nin && i < 16; i++)
    if (opv[i] && opv[i]->mask == R && opv[i]->nblk > 1 && dies_here(F, &st->in[i])) m |= 1u << i;
  return m;
}

/* Release block b of the dying operands (mask) that nothing else holds
   (not a result that is the operand itself).  Their values are released
   after the statement: none reads the block again. */
static void drop_blocks(Val *const *opv, unsigned mask, int64_t b) {
  for (int i = 0; mask >> i; i++) {
    Val *v = opv[i];
    if (!(mask & (1u << i)) || !v->blk[b] || v->blk[b]->refc != 1) continue;
    arr_unref(v->blk[b]);
    v->blk[b] = NULL;
  }
}

/* A local primitive: its kernel once per block of the result that some
   running instance needs.  The operands are looked up once; one memory
   scope covers every block, so a kernel that fails leaves nothing
   behind. */
static void exec_local(Frame *F, IrStmt *st) {
  const Space *sp = &F->space;
  const Mesh *mesh = sp->mesh;
  uint32_t R = st->nout ? st->out[0]->t.vma : 0;
  int64_t nb = til_nblk(mesh, R);
  int nout = st->nout, nin = st->nin;
  Type tbuf[8];
  Val *obuf[8];
  Array *rbuf[8];
  Type *outt = nout <= 8 ? tbuf : scratch(sizeof(Type) * (size_t)nout);          /* split, sort: any number */
  Val **outs = nout <= 8 ? obuf : scratch(sizeof(Val *) * (size_t)nout);
  Array **res = nout <= 8 ? rbuf : scratch(sizeof(Array *) * (size_t)nout);
  Array *inbuf[16];
  int32_t rcbuf[16];
  Val *vbuf[16];
  Array **ins = nin <= 16 ? inbuf : scratch(sizeof(Array *) * (size_t)nin);
  int32_t *refc = nin <= 16 ? rcbuf : scratch(sizeof(int32_t) * (size_t)nin);
  Val **opv = nin <= 16 ? vbuf : scratch(sizeof(Val *) * (size_t)nin);
  for (int i = 0; i < nin; i++) {
    opv[i] = st->in[i].lit ? NULL : value_of(F, st->in[i].var);
    if (!opv[i]) ins[i] = st->in[i].lit;
  }
  for (int j = 0; j < nout; j++) {
    if (nout > 1) outt[j] = st->out[j]->t;
    outs[j] = val_new(R, nb);
    set_slot(F, st->out[j], outs[j]);
  }
  const Type *ot = nout == 1 ? &st->out[0]->t : outt;   /* the kernel's result types, in a row */
  uint8_t *need = needed_blocks(sp, R, nb);
  KernFn k = prim_table[st->prim].kernel;
  unsigned give = donors(F, st, opv, R), dying = dying_operands(F, st, opv, R);
  mem_scope_begin();
  KernGuard guard = {ins, 0, refc, outs, nout, 0};
  err_defer(kern_unwind, &guard);
  for (int64_t b = 0; b < nb; b++) {
    if (need && !need[b]) continue;
    for (int i = 0; i < nin; i++) {
      Val *v = opv[i];
      if (v) ins[i] = v->blk[v->mask == R ? b : v->mask == 0 ? 0 : til_project(mesh, R, b, v->mask)];
      refc[i] = ins[i]->refc;
    }
    if (give && (res[0] = donate(st, give, ins, ot))) {
      outs[0]->blk[b] = res[0];
      guard.ndonated++;
      continue;
    }
    guard.n = nin;
    k(st->at, ins, nin, res, ot);
    guard.n = 0;
    for (int j = 0; j < nout; j++) outs[j]->blk[b] = res[j];
    if (dying) drop_blocks(opv, dying, b);
  }
  err_undefer(&guard);
  mem_scope_end();
  scratch_free(need);
  if (opv != vbuf) scratch_free(opv);
  if (refc != rcbuf) scratch_free(refc);
  if (ins != inbuf) scratch_free(ins);
  if (outt != tbuf) { scratch_free(outt); scratch_free(outs); scratch_free(res); }
}

/* ---- shard_map ------------------------------------------------------------------- */

/* Whether operand i of shard_map st dies there, its array g held by its
   value alone, and no other operand is the same variable: then splitting
   it may give its memory back as it goes (split.c). */
static bool split_dies(Frame *F, IrStmt *st, int i, const Array *g) {
  if (st->in[i].lit || g->refc != 1 || g->slab || !dies_here(F, &st->in[i])) return false;
  for (int k = 0; k < st->nin; k++)
    if (k != i && st->in[k].var == st->in[i].var) return false;
  return true;
}

/* An operand of a shard_map that dies at it has been split into its
   blocks: released before the body runs rather than after it, so the
   whole array and its blocks are not both held while the body makes its
   results (a spec that does not split it shares it, and keeps it). */
static void release_split(Frame *F, IrStmt *st) {
  for (int i = 0; i < st->nin; i++)
    if (dies_here(F, &st->in[i])) set_slot(F, st->in[i].var, NULL);
}

/* An elementwise primitive outside any body, under several ranks, whose
   operands are values kept split, all tiled alike: computed on the
   blocks each rank holds (spl_ew).  Whether st was such a statement
   (then it has run). */
static bool ew_on_pieces(Interp *I, Frame *F, IrStmt *st) {
  if (I->hook || I->obs.data || st->k != IS_EQN || st->nin > 8) return false;
  Val *ops[8];
  for (int j = 0; j < st->nin; j++) ops[j] = st->in[j].var ? eval_lookup(F, st->in[j].var) : NULL;
  Val *r = spl_ew(st, ops);
  if (r) set_slot(F, st->out[0], r);
  return r != NULL;
}

/* Before statement st outside any body under several ranks: the values
   kept split that it reads whole, assembled. */
static void realize_inputs(Frame *F, IrStmt *st) {
  for (int j = 0; j < st->nin; j++) {
    Val *x = st->in[j].var ? eval_lookup(F, st->in[j].var) : NULL;
    if (x && x->split && !spl_takes(st, j, x)) spl_realize(x);
  }
  for (int j = 0; j < st->nitems; j++) {
    Val *x = st->items[j].atom.var ? eval_lookup(F, st->items[j].atom.var) : NULL;
    if (x && x->split) spl_realize(x);
  }
}

/* An argument whose spec says unreduced along `unred`: a global value
   entering as summands.  By sum, member 0 of each group holds the value
   and the others zeros (their sum is the value, exactly); by max or min,
   every member holds it. */
static Val *unreduced_entry(const Mesh *m, Val *v, const Spec *spc) {
  Val *w = val_widen(m, v, v->mask | spc->unred);
  if (spc->ukind != UK_SUM) return w;
  int64_t coords[SHM_MAXAXES];
  for (int64_t b = 0; b < w->nblk; b++) {
    if (!w->blk[b]) continue;
    til_block_coords(m, w->mask, b, coords);
    bool first = true;
    for (int k = 0; k < m->naxes; k++)
      if ((spc->unred & (1u << k)) && coords[k]) first = false;
    if (first) continue;
    Array *z = arr_zeros((DType)w->blk[b]->dt, w->blk[b]->rank, w->blk[b]->shape);
    arr_unref(w->blk[b]);
    w->blk[b] = z;
  }
  return w;
}

/* A result whose spec says unreduced: the global value is the sum (max,
   min) of the summands, completed at the exit. */
static Val *unreduced_exit(const Space *bs, Val *v, const Spec *spc, const Type *bt) {
  Attrs at;
  memset(&at, 0, sizeof at);
  at.dtype = -1;
  for (int k = 0; k < bs->mesh->naxes; k++)
    if (spc->unred & (1u << k)) at.axes[at.naxes++] = (uint8_t)k;
  at.axmask = spc->unred;
  Type t = *bt;
  t.vma &= ~spc->unred;
  t.unred = 0;
  Val *r = fab_exec(bs, spc->ukind == UK_MAX ? P_PMAX : spc->ukind == UK_MIN ? P_PMIN : P_PSUM, &at, v, &t, false);
  val_unref(v);
  return r;
}

/* shard_map, and xla_pmap (whose blocks lose their mapped dimension). */
static void exec_shard_map(Interp *I, Frame *F, IrStmt *st) {
  ShardMap *sm = st->at->ext;
  IrFunc *body = st->at->fns[0];
  const Mesh *m = sm->mesh;
  Space bs = {m, m->ndev, NULL};
  int nin = st->nin, nout = st->nout;
  int64_t lo = 0, hi = m->ndev;           /* the instances of this rank */
  if (fmpi_size() > 1) fmpi_range(m->ndev, fmpi_rank(), &lo, &hi);
  if (I->obs.data && fmpi_size() > m->ndev)
    err_throw("the cost model across ranks follows the run on rank 0's devices: this mesh has %lld devices "
              "for %d ranks, so rank 0 may hold none; use at most %lld ranks, or --abstract",
              (long long)m->ndev, fmpi_size(), (long long)m->ndev);
  Val **args = vals_new(nin + nout);
  Val **outs = args + nin;
  for (int i = 0; i < nin; i++) {
    uint32_t mask = sm->in[i].mask;
    Val *x = st->in[i].var ? eval_lookup(F, st->in[i].var) : NULL;
    if (x && x->split && spl_takes(st, i, x)) {
      args[i] = spl_blocks(m, x, mask);
      if (sm->in[i].unred) args[i] = unreduced_entry(m, args[i], &sm->in[i]);
      continue;
    }
    Array *g = atom_block(F, &st->in[i], 0, 0);
    uint8_t *need = needed_blocks(&bs, mask, til_nblk(m, mask));     /* (under ranks: this rank's blocks) */
    SplitWay w = {need, split_dies(F, st, i, g), I->hook || I->obs.data};
    args[i] = spl_operand(st, i, g, &w);
    scratch_free(need);
    if (sm->in[i].unred) args[i] = unreduced_entry(m, args[i], &sm->in[i]);
  }
  release_split(F, st);
  if (lo < hi) {
    fab_pending_reset();
    call_fn_consuming(I, F, body, args, outs, &bs, st);
    char msg[768];
    if (fab_unmatched(msg, sizeof msg)) err_throw("%s", msg);
  } else {                 /* a rank owning none of the mesh's instances */
    for (int i = 0; i < nout; i++) {
      uint32_t R = body->outs[i].var ? body->outs[i].var->t.vma : 0;
      outs[i] = val_new(R, til_nblk(m, R));
    }
  }
  for (int i = 0; i < nout && lo < hi; i++)
    if (sm->out[i].unred) outs[i] = unreduced_exit(&bs, outs[i], &sm->out[i], &body->outs[i].t);
  bool may_keep = !F->space.mesh && !I->hook && !I->obs.data;   /* (kept split under ranks, at the top level) */
  for (int i = 0; i < nout; i++) set_slot(F, st->out[i], spl_result(st, i, outs[i], may_keep));
  vals_free(args);
}

/* ---- control flow ------------------------------------------------------------------- */

static void devices_text(const Space *sp, char *out, size_t n);

/* One loop iteration, run by the instances of `sp`. */
static void step(Interp *I, const Space *sp) {
  if (state_cur()->interrupted) {
    state_cur()->interrupted = 0;
    err_throw("interrupted");
  }
  if (I->max_steps && ++I->steps > I->max_steps) {
    char where[256] = "";
    if (sp->mesh) devices_text(sp, where, sizeof where);
    err_throw("more than %ld loop iterations (the --max-steps limit: a larger N raises it; without the option "
              "there is no limit)%s", I->max_steps, where);
  }
}

/* The integer at instance `inst` of a scalar Val. */
static int64_t scalar_at(const Space *sp, Val *v, int64_t inst) {
  return arr_geti(v->blk[til_block_of(sp->mesh, v->mask, inst)], 0);
}

/* A new active set: the running instances where keep(inst) holds. */
static uint8_t *narrow(const Space *sp, Val *v, int64_t want, bool is_pred, int64_t nbranch, int64_t *count) {
  uint8_t *act = scratch((size_t)sp->ninst);
  *count = 0;
  for (int64_t i = 0; i < sp->ninst; i++) {
    bool on = fab_runs(sp, i);
    if (on) {
      int64_t x = scalar_at(sp, v, i);
      if (is_pred) on = x != 0;
      else {
        if (x < 0) x = 0;
        if (x >= nbranch) x = nbranch - 1;
        on = x == want;
      }
    }
    act[i] = on;
    *count += on;
  }
  return act;
}

/* Merge branch results into `dst`: blocks needed by instances in `act`. */
static void merge_into(const Space *sp, Val *dst, Val *src, const uint8_t *act) {
  for (int64_t i = 0; i < sp->ninst; i++) {
    if (!act[i]) continue;
    int64_t b = til_block_of(sp->mesh, dst->mask, i);
    Array *a = src->blk[til_block_of(sp->mesh, src->mask, i)];
    if (dst->blk[b] != a) {
      arr_unref(dst->blk[b]);
      dst->blk[b] = arr_ref(a);
    }
  }
}

static Val **atom_vals(Frame *F, const IrAtom *a, int n) {
  Val **v = vals_new(n);
  for (int i = 0; i < n; i++) v[i] = a[i].lit ? val_of(a[i].lit) : val_ref(value_passed(F, a[i].var));
  return v;
}

static void exec_scan(Interp *I, Frame *F, IrStmt *st);

static void exec_cond(Interp *I, Frame *F, IrStmt *st) {
  const Space *sp = &F->space;
  Val *idx = st->in[0].lit ? NULL : value_of(F, st->in[0].var);
  int nb = st->at->nfns, nargs = st->nin - 1, nout = st->nout;
  Val **args = atom_vals(F, st->in + 1, nargs);
  Val **res = vals_new(nout);
  int64_t uniform = -1;
  if (!idx) uniform = arr_geti(st->in[0].lit, 0);
  else if (idx->mask == 0 || idx->nblk == 1) {
    int64_t i0 = 0;
    while (sp->active && !sp->active[i0]) i0++;
    uniform = scalar_at(sp, idx, i0);
  }
  if (uniform >= 0 || !idx) {
    if (uniform < 0) uniform = 0;
    if (uniform >= nb) uniform = nb - 1;
    I->sub = uniform;
    call_fn(I, F, st->at->fns[uniform], args, res, sp, st);
    for (int j = 0; j < nout; j++) {
      /* widen to the result's mask (the index's variance) without copies */
      uint32_t R = st->out[j]->t.vma;
      if (res[j]->mask != R) {
        int64_t n = til_nblk(sp->mesh, R);
        Val *w = val_new(R, n);
        for (int64_t b = 0; b < n; b++) w->blk[b] = arr_ref(res[j]->blk[til_project(sp->mesh, R, b, res[j]->mask)]);
        val_unref(res[j]);
        res[j] = w;
      }
      set_slot(F, st->out[j], res[j]);
      res[j] = NULL;
    }
  } else {
    Val **out = scratch(sizeof(Val *) * (size_t)(nout + 1));
    for (int j = 0; j < nout; j++) {
      uint32_t R = st->out[j]->t.vma;
      out[j] = val_new(R, til_nblk(sp->mesh, R));
      set_slot(F, st->out[j], out[j]);
    }
    for (int k = 0; k < nb; k++) {
      int64_t count;
      uint8_t *act = narrow(sp, idx, k, false, nb, &count);
      if (count) {
        Space bsp = *sp;
        bsp.active = act;
        I->sub = k;
        call_fn(I, F, st->at->fns[k], args, res, &bsp, st);
        for (int j = 0; j < nout; j++) {
          merge_into(sp, out[j], res[j], act);
          val_unref(res[j]);
          res[j] = NULL;
        }
      }
      scratch_free(act);
    }
    scratch_free(out);
  }
  vals_free(res);
  vals_free(args);
}

/* The carry after a step that only the instances of sp->active ran:
   theirs from `next`, the others' kept from `carry`.  Consumes next;
   returns a new reference. */
static Val *keep_stopped(const Space *sp, Val *carry, Val *next) {
  if (!sp->active) return next;
  Val *m = val_new(carry->mask, carry->nblk);
  for (int64_t b = 0; b < m->nblk; b++) m->blk[b] = arr_ref(carry->blk[b]);
  merge_into(sp, m, next, sp->active);
  val_unref(next);
  return m;
}

/* A fori_loop bound at instance `inst`: a literal, or a value operand. */
static int64_t bound_at(Frame *F, const IrStmt *st, int which, int64_t inst) {
  int64_t mask = st->at->i[3];
  if (!(mask & (1 << which))) return st->at->i[which];
  const IrAtom *a = &st->in[which == 1 && (mask & 1) ? 1 : 0];
  if (a->lit) return arr_geti(a->lit, 0);
  return scalar_at(&F->space, value_of(F, a->var), inst);
}

/* fori_loop: iteration t of an instance runs its body with index lo + t
   (reverse: hi - 1 - t) while t < hi - lo.  With bounds that vary between
   instances each runs its own number of iterations, in lockstep: at step
   t the instances whose loop has not ended run together. */
static void exec_fori(Interp *I, Frame *F, IrStmt *st) {
  const Space *sp = &F->space;
  int nb = (int)st->at->i[2], n = st->nin - nb;
  bool rev = st->at->b[0];
  IrFunc *body = st->at->fns[0];
  const Type *it = &body->params[0]->t;          /* the index: its dtype, its variance */
  Val **carry = atom_vals(F, st->in + nb, n);
  for (int k = 0; k < n; k++) carry[k] = val_widen(sp->mesh, carry[k], st->out[k]->t.vma);
  Val **next = vals_new(n);
  Val **index = vals_new(1);
  Val **pass = vals_new(n + 1);                             /* handed over */
  Val **args = scratch(sizeof(Val *) * (size_t)(n + 2));   /* borrowed */
  /* per block of the index's mask: its bounds (one block when invariant) */
  int64_t ni = til_nblk(sp->mesh, it->vma);
  int64_t *lo = scratch(sizeof(int64_t) * (size_t)(2 * ni)), *hi = lo + ni;
  int64_t steps = 0;
  /* the bounds of a block, read at a running instance holding it (a
     block no running instance holds runs no iteration) */
  uint8_t *seen = scratch((size_t)ni);
  for (int64_t d = 0; d < sp->ninst; d++) {
    if (!fab_runs(sp, d)) continue;
    int64_t b = til_block_of(sp->mesh, it->vma, d);
    if (seen[b]) continue;
    seen[b] = 1;
    lo[b] = bound_at(F, st, 0, d);
    hi[b] = bound_at(F, st, 1, d);
    if (hi[b] - lo[b] > steps) steps = hi[b] - lo[b];
  }
  scratch_free(seen);
  uint8_t *act = NULL;
  Space lsp = *sp;
  for (int64_t t = 0; t < steps; t++) {
    step(I, sp);
    if (it->vma) {      /* the instances still looping at step t */
      scratch_free(act);
      act = scratch((size_t)sp->ninst);
      for (int64_t d = 0; d < sp->ninst; d++) {
        int64_t b = til_block_of(sp->mesh, it->vma, d);
        act[d] = fab_runs(sp, d) && t < hi[b] - lo[b];
      }
      lsp.active = act;
    }
    /* the index: last step's, rewritten, when nothing else holds it */
    Array *ib = index[0] && index[0]->refc == 1 && ni == 1 ? index[0]->blk[0] : NULL;
    if (ib && ib->refc == 1 && !ib->slab) arr_seti(ib, 0, rev ? hi[0] - 1 - t : lo[0] + t);
    else {
      val_unref(index[0]);
      index[0] = val_new(it->vma, ni);
      for (int64_t b = 0; b < ni; b++)
        if (t < hi[b] - lo[b]) index[0]->blk[b] = arr_scalar_i((DType)it->dt, rev ? hi[b] - 1 - t : lo[b] + t);
    }
    I->sub = t;
    if (!lsp.active) {
      /* every instance steps: the carry is the body's alone (its
         parameters may give their buffers to its results) */
      pass[0] = val_ref(index[0]);
      for (int k = 0; k < n; k++) {
        pass[k + 1] = carry[k];
        carry[k] = NULL;
      }
      call_fn_consuming(I, F, body, pass, next, &lsp, st);
      for (int k = 0; k < n; k++) {
        carry[k] = val_widen(sp->mesh, next[k], st->out[k]->t.vma);
        next[k] = NULL;
      }
      continue;
    }
    args[0] = index[0];
    for (int k = 0; k < n; k++) args[k + 1] = carry[k];
    call_fn(I, F, body, args, next, &lsp, st);
    for (int k = 0; k < n; k++) {
      next[k] = keep_stopped(&lsp, carry[k], val_widen(sp->mesh, next[k], st->out[k]->t.vma));
      val_unref(carry[k]);
      carry[k] = next[k];
      next[k] = NULL;
    }
  }
  for (int k = 0; k < n; k++) {
    set_slot(F, st->out[k], carry[k]);
    carry[k] = NULL;
  }
  scratch_free(act);
  scratch_free(lo);
  vals_free(carry);
  vals_free(next);
  vals_free(index);
  vals_free(pass);
  scratch_free(args);
}

static void exec_while(Interp *I, Frame *F, IrStmt *st) {
  const Space *sp = &F->space;
  int cn = (int)st->at->i[0], bn = (int)st->at->i[1];
  int n = st->nin - cn - bn;
  IrFunc *cf = st->at->fns[0], *bf = st->at->fns[1];
  Val **all = atom_vals(F, st->in, st->nin);
  Val **carry = all + cn + bn;
  /* each carry holds a block per combination of the axes its type varies
     over (the predicate's included), whatever its initial value shares */
  for (int k = 0; k < n; k++) carry[k] = val_widen(sp->mesh, carry[k], st->out[k]->t.vma);
  Val **cargs = scratch(sizeof(Val *) * (size_t)(cn + n + 1));   /* borrowed */
  Val **bargs = scratch(sizeof(Val *) * (size_t)(bn + n + 1));
  Val **next = vals_new(n);
  Val **pv = vals_new(1);
  uint8_t *act = NULL;
  Space lsp = *sp;
  for (int64_t iter = 0;; iter++) {
    step(I, &lsp);
    for (int k = 0; k < cn; k++) cargs[k] = all[k];
    for (int k = 0; k < n; k++) cargs[cn + k] = carry[k];
    I->sub = 2 * iter;
    call_fn(I, F, cf, cargs, pv, &lsp, st);
    Val *pred = pv[0];
    bool varying = pred->mask != 0;
    if (!varying) {
      int64_t i0 = 0;
      while (lsp.active && !lsp.active[i0]) i0++;
      bool go = scalar_at(&lsp, pred, i0) != 0;
      val_unref(pred);
      pv[0] = NULL;
      if (!go) break;
    } else {
      int64_t count;
      uint8_t *na = narrow(&lsp, pred, 0, true, 0, &count);
      val_unref(pred);
      pv[0] = NULL;
      scratch_free(act);
      act = na;
      lsp.active = act;
      if (!count) break;
    }
    for (int k = 0; k < bn; k++) bargs[k] = all[cn + k];
    for (int k = 0; k < n; k++) bargs[bn + k] = carry[k];
    I->sub = 2 * iter + 1;
    call_fn(I, F, bf, bargs, next, &lsp, st);
    for (int k = 0; k < n; k++) {
      /* instances that have stopped keep their carry */
      next[k] = keep_stopped(&lsp, carry[k], val_widen(sp->mesh, next[k], st->out[k]->t.vma));
      val_unref(carry[k]);
      carry[k] = next[k];
      next[k] = NULL;
    }
  }
  for (int k = 0; k < n; k++) set_slot(F, st->out[k], val_ref(carry[k]));
  scratch_free(act);
  vals_free(pv);
  vals_free(next);
  scratch_free(bargs);
  scratch_free(cargs);
  vals_free(all);
}

/* One slice of every block of v along its first dimension (index t). */
static Val *val_slice(Val *v, int64_t t) {
  Val *r = val_new(v->mask, v->nblk);
  for (int64_t b = 0; b < v->nblk; b++) {
    Array *a = v->blk[b];
    if (!a) continue;
    int64_t start[SHM_MAXRANK] = {0}, shape[SHM_MAXRANK];
    memcpy(shape, a->shape, sizeof shape);
    start[0] = t;
    shape[0] = 1;
    r->blk[b] = arr_block(a, start, shape);
    arr_drop_dim(r->blk[b], 0);
  }
  return r;
}

/* scan: the body runs `length` times (from the end when reverse) on the
   consts, the carries and slice t of each xs; the ys are stacked. */
static void exec_scan(Interp *I, Frame *F, IrStmt *st) {
  const Space *sp = &F->space;
  int nc = (int)st->at->i[0], ncar = (int)st->at->i[1], n = st->nin, nx = n - nc - ncar, nout = st->nout;
  int64_t len = st->at->i[2];
  bool rev = st->at->b[0];
  IrFunc *body = st->at->fns[0];
  Val **all = atom_vals(F, st->in, n);
  Val **carry = all + nc, **xs = all + nc + ncar;
  for (int k = 0; k < ncar; k++) carry[k] = val_widen(sp->mesh, carry[k], st->out[k]->t.vma);
  Val **ys = vals_new(nout + 1);         /* the stacked results, ys[k] for k >= ncar */
  for (int k = ncar; k < nout; k++) {
    const Type *t = &st->out[k]->t;
    Val *v = ys[k] = val_new(t->vma, til_nblk(sp->mesh, t->vma));
    uint8_t *need = needed_blocks(sp, t->vma, v->nblk);
    for (int64_t b = 0; b < v->nblk; b++)
      if (!need || need[b]) v->blk[b] = arr_new((DType)t->dt, t->rank, t->shape);
    scratch_free(need);
  }
  Val **args = vals_new(n + 1), **res = vals_new(nout + 1);
  for (int64_t s0 = 0; s0 < len; s0++) {
    int64_t t = rev ? len - 1 - s0 : s0;
    step(I, sp);
    for (int k = 0; k < nc + ncar; k++) args[k] = val_ref(all[k]);
    for (int k = 0; k < nx; k++) args[nc + ncar + k] = val_slice(xs[k], t);
    I->sub = s0;
    call_fn(I, F, body, args, res, sp, st);
    for (int k = 0; k < n; k++) {
      val_unref(args[k]);
      args[k] = NULL;
    }
    for (int k = 0; k < nout; k++) {
      Val *v = val_widen(sp->mesh, res[k], st->out[k]->t.vma);
      res[k] = NULL;
      if (k < ncar) {
        val_unref(carry[k]);
        carry[k] = v;
        continue;
      }
      for (int64_t b = 0; b < v->nblk; b++) {
        if (!v->blk[b] || !ys[k]->blk[b]) continue;
        Array view = *v->blk[b];
        int64_t start[SHM_MAXRANK] = {0};
        for (int d = view.rank; d > 0; d--) view.shape[d] = view.shape[d - 1];
        view.shape[0] = 1;
        view.rank++;
        start[0] = t;
        arr_put_block(ys[k]->blk[b], start, &view);
      }
      val_unref(v);
    }
  }
  for (int k = 0; k < nout; k++) {
    set_slot(F, st->out[k], k < ncar ? val_ref(carry[k]) : ys[k]);
    if (k >= ncar) ys[k] = NULL;
  }
  vals_free(res);
  vals_free(args);
  vals_free(ys);
  vals_free(all);
}

/* The caller's side of passing values on: an argument whose variable dies
   at this call (and is passed once) is let go of before the call, so the
   callee holds it alone. */
static void pass_dying(Frame *F, IrStmt *st) {
  for (int i = 0; i < st->nin; i++) {
    IrVar *v = st->in[i].var;
    if (!released_here(F, v)) continue;
    bool once = true;
    for (int k = 0; k < st->nin; k++) once &= k == i || st->in[k].var != v;
    if (once) set_slot(F, v, NULL);
  }
}

static void exec_call(Interp *I, Frame *F, IrStmt *st) {
  Val **args = atom_vals(F, st->in, st->nin);
  Val **outs = vals_new(st->nout);
  pass_dying(F, st);
  call_fn_consuming(I, F, st->callee, args, outs, &F->space, st);
  for (int j = 0; j < st->nout; j++) {
    set_slot(F, st->out[j], outs[j]);
    outs[j] = NULL;
  }
  vals_free(outs);
  vals_free(args);
}

/* ---- print ---------------------------------------------------------------------------- */

/* Items are separated by one space, as Python's print does; inside a body
   a value prints as one block per device, on lines of its own. */
static void release_buf(void *b) { buf_free(b); }

const Spec *eval_result_spec(Frame *F, const IrVar *v) {
  IrStmt *call = F->caller ? F->caller->cur : NULL;
  if (!v || !call || call->k != IS_EQN || call->prim != P_SHARD_MAP || call->at->fns[0] != F->fn) return NULL;
  ShardMap *sm = call->at->ext;
  for (int k = 0; k < F->fn->nouts && k < sm->nout; k++)
    if (F->fn->outs[k].var == v) return &sm->out[k];
  for (int k = 0; k < F->fn->nparams && k < sm->nin; k++)
    if (F->fn->params[k] == v) return &sm->in[k];
  return NULL;
}

/* The spec of print[global=...] of variable var: spc as written, else
   var's out_spec if the body returns it, else the default of valprint.h
   (in *dflt). */
static const Spec *global_spec(Frame *F, IrVar *var, const Spec *spc, uint32_t mask, Spec *dflt) {
  if (!spc) spc = eval_result_spec(F, var);
  if (!spc) til_default_spec(F->space.mesh, mask, dflt), spc = dflt;
  return spc;
}

/* print[global=...] of variable var: the array its spec assembles. */
static void put_global(Buf *b, Frame *F, IrVar *var, const Spec *spc) {
  const Mesh *m = F->space.mesh;
  Val *v = value_of(F, var);
  Spec dflt;
  spc = global_spec(F, var, spc, v->mask, &dflt);
  char msg[256];
  Array *a = spl_global(m, spc, v, msg, sizeof msg);
  if (!a) err_throw("print[global]: %s", msg);
  err_defer(release_arr, a);
  vp_global_text(b, m, spc, a);
  err_undefer(a);
  arr_unref(a);
}

/* Under several ranks a print is an output event (fabmpi.h): its text
   parts, and each value inside a body as a value part (its header and
   the blocks of this rank's devices), which rank 0 formats from every
   rank's blocks (vp_format_parts) as one process would.  At the top
   level rank 0 alone records it. */
static void print_event(Frame *F, IrStmt *st) {
  const Mesh *m = F->space.mesh;
  if (!m && fmpi_rank() != 0) return;
  Buf b = {0};
  err_defer(release_buf, &b);
  fmpi_out_begin();
  bool after_blocks = false;
  for (int i = 0; i < st->nitems; i++) {
    IrPrintItem *it = &st->items[i];
    bool blocks = it->atom.var && m;
    buf_reset(&b);
    if (i && (!st->print_joined || blocks || after_blocks)) buf_putc(&b, blocks || after_blocks ? '\n' : ' ');
    after_blocks = blocks;
    if (!it->atom.var && !it->atom.lit) buf_put(&b, it->text.p, (size_t)it->text.n);
    else if (it->atom.lit) fmt_array(&b, it->atom.lit);
    else if (!m) fmt_array(&b, value_of(F, it->atom.var)->blk[0]);
    if (b.n) fmpi_out_text(b.p, b.n);
    if (!blocks) continue;
    Val *v = value_of(F, it->atom.var);
    const IrVar *var = it->atom.var;
    Spec dflt;
    const Spec *gs = st->print_global ? global_spec(F, it->atom.var, st->print_spec, v->mask, &dflt) : NULL;
    char msg[256];
    if (gs && !til_global_ok(m, gs, v->mask, var->t.rank, msg, sizeof msg)) err_throw("print[global]: %s", msg);
    if (gs && F->space.active)
      err_throw("print[global]: across ranks, a global view is printed only where every device runs "
                "(not inside a branch that varies by device); run on one process to see it here");
    buf_reset(&b);
    vp_part_header(&b, m, v->mask, &var->t, gs);
    fmpi_out_value(b.p, b.n);
    for (int64_t d = 0; d < m->ndev; d++) {
      if (!fab_runs(&F->space, d)) continue;
      Array *a = v->blk[til_block_of(m, v->mask, d)];
      fmpi_out_device(d, a->data, arr_nbytes(a));
    }
  }
  fmpi_out_text("\n", 1);
  fmpi_out_end();
  err_undefer(&b);
  buf_free(&b);
}

static void exec_print(Frame *F, IrStmt *st) {
  if (fmpi_size() > 1) {
    print_event(F, st);
    return;
  }
  Buf b = {0};
  err_defer(release_buf, &b);
  bool after_blocks = false;
  for (int i = 0; i < st->nitems; i++) {
    IrPrintItem *it = &st->items[i];
    bool blocks = it->atom.var && F->space.mesh;
    if (i && (!st->print_joined || blocks || after_blocks)) buf_putc(&b, blocks || after_blocks ? '\n' : ' ');
    after_blocks = blocks;
    if (!it->atom.var && !it->atom.lit) buf_put(&b, it->text.p, (size_t)it->text.n);
    else if (it->atom.lit) fmt_array(&b, it->atom.lit);
    else if (st->print_global) put_global(&b, F, it->atom.var, st->print_spec);
    else {
      vp_unreduced_note(&b, &it->atom.var->t, F->space.mesh);
      vp_value(&b, &F->space, value_of(F, it->atom.var), true);
    }
  }
  buf_putc(&b, '\n');
  state_out(b.p, b.n);
  err_undefer(&b);
  buf_free(&b);
}

/* Is v's value released right after the statement F is running (its last
   use; see plan_drops)?  dies_here: that of atom a, with no other
   reference to it, so the statement may reuse its blocks for its result. */
static bool released_here(Frame *F, IrVar *v) {
  return v && F->release_at >= 0 && v->owner == F->fn && !v->captured && v->last == F->release_at;
}

static bool dies_here(Frame *F, const IrAtom *a) {
  if (!released_here(F, a->var)) return false;
  Val *x = F->slots[a->var->slot];
  return x && x->refc == 1;
}

/* ---- fused chains ------------------------------------------------------------------------ */

/* Blocks of fewer elements run equation by equation (exec_ew_slab does
   small blocks of many instances at once; a chain's scratch and its
   tiles pay off where the intermediates would leave the cache). */
#define FUSE_MIN 16384

static void release_val(void *v) { val_unref(v); }

/* Whether operand block x of a chain may hold its result of type t: held
   by nothing else, contiguous, of t's dtype and shape. */
static bool fuse_donatable(const Array *x, const Type *t) { return !x->pitch && donatable(x, t); }

/* The chain of elementwise equations that starts at statement i of F's
   body (fuse.h), run as one pass over each block of its result, when
   nothing may look at its intermediates: not under the debugger's hook
   or an observer (the cost model), not at a top level that keeps its
   values (the REPL), not across ranks, not under --no-fuse.  Its
   intermediates never get a value; its last result is set.  An operand
   from outside the chain that dies in it (its last use there) and alone
   holds its block gives that block to the result.  The number of statements run: 0 when it did not
   run fused (then nothing happened). */
static int exec_fused(Interp *I, Frame *F, int i) {
  IrStmt *const *body = F->fn->body;
  int n = body[i]->fuse_n;
  if (n < 2 || I->hook || I->obs.data || state_cur()->no_fuse || fmpi_size() > 1 || (F == I->top && !I->release_top)) return 0;
  IrStmt *last = body[i + n - 1];
  const Type *t = &last->out[0]->t;
  int64_t size = 1;
  for (int d = 0; d < t->rank; d++) size *= t->shape[d];
  if (size < FUSE_MIN) return 0;
  FuseChain c;
  fuse_resolve(body + i, n, &c);
  const Mesh *mesh = F->space.mesh;
  uint32_t R = t->vma;
  Val *ev[FUSE_MAXEXT];
  int donor = -1;
  for (int k = 0; k < c.next; k++) {
    const IrAtom *a = c.ext[k];
    ev[k] = a->lit ? NULL : value_of(F, a->var);
    if (ev[k] && (ev[k]->mask & ~R)) return 0;
    IrVar *v = a->var;
    if (donor < 0 && ev[k] && ev[k]->mask == R && v->owner == F->fn && !v->captured && v->last >= i &&
        v->last < i + n && ev[k]->refc == 1)
      donor = k;
  }
  int64_t nb = til_nblk(mesh, R);
  uint8_t *need = needed_blocks(&F->space, R, nb);
  for (int64_t b = 0; b < nb; b++)       /* operands as the tiles read them */
    for (int k = 0; k < c.next && (!need || need[b]); k++)
      if (ev[k] && ev[k]->blk[til_project(mesh, R, b, ev[k]->mask)]->pitch) {
        scratch_free(need);
        return 0;
      }
  F->cur = last;
  Val *out = val_new(R, nb);
  err_defer(release_val, out);
  Array *ex[FUSE_MAXEXT];
  for (int64_t b = 0; b < nb; b++) {
    if (need && !need[b]) continue;
    for (int k = 0; k < c.next; k++)
      ex[k] = ev[k] ? ev[k]->blk[ev[k]->mask == R ? b : til_project(mesh, R, b, ev[k]->mask)] : c.ext[k]->lit;
    Array *r = donor >= 0 && fuse_donatable(ex[donor], t) ? arr_ref(ex[donor])
                                                           : arr_new((DType)t->dt, t->rank, t->shape);
    out->blk[b] = r;
    fuse_block(&c, ex, r);
  }
  err_undefer(out);
  scratch_free(need);
  set_slot(F, last->out[0], out);
  return n;
}

/* Statements [i, i + n) ran as a chain: the values their last uses
   release, let go of as each statement's would be. */
static void drop_chain(Frame *F, int i, int n);

/* ---- statements ------------------------------------------------------------------------- */

/* A collective of several operands (ragged_all_to_all): every operand's
   value, literals made values. */
static void exec_collective_n(Frame *F, IrStmt *st) {
  Val **lit = vals_new(st->nin), *in[8];
  for (int k = 0; k < st->nin && k < 8; k++) {
    if (st->in[k].lit) lit[k] = val_of(st->in[k].lit);
    in[k] = st->in[k].lit ? lit[k] : value_of(F, st->in[k].var);
  }
  mem_scope_begin();         /* a collective that fails leaves nothing behind */
  Val *r = fab_exec_n(&F->space, st->prim, st->at, in, st->nin, &st->out[0]->t, false);
  mem_scope_end();
  vals_free(lit);
  set_slot(F, st->out[0], r);
}

static void exec_stmt(Interp *I, Frame *F, IrStmt *st) {
  F->cur = st;
  switch (st->k) {
  case IS_CONST:
    set_slot(F, st->out[0], val_of(st->value));
    break;
  case IS_PRINT:
    exec_print(F, st);
    break;
  case IS_SHOW:
    if (fmpi_size() == 1 && st->svg && state_cur()->on_picture) {
      state_cur()->on_picture(state_cur()->on_picture_ud, st->text, st->svg);
    } else if (fmpi_size() == 1) {
      state_out(st->text, strlen(st->text));
    } else if (F->space.mesh || fmpi_rank() == 0) {
      fmpi_out_begin();
      fmpi_out_text(st->text, strlen(st->text));
      fmpi_out_end();
    }
    break;
  case IS_SAVE: {
    if (fmpi_rank() != 0) break;        /* under several ranks, rank 0 writes the file */
    char err[NPY_ERRLEN];
    Array *a = st->in[0].lit ? st->in[0].lit : value_of(F, st->in[0].var)->blk[0];
    if (!npy_save(st->path, a, err)) err_throw("%s", err);
    break;
  }
  case IS_EQN:
    if (st->prim < 0) exec_call(I, F, st);
    else if (prim_table[st->prim].kernel) {
      if (!exec_ew_slab(F, st)) exec_local(F, st);
    } else if (fab_is_collective(st->prim) && st->nin > 1 && st->nin <= 8) {
      exec_collective_n(F, st);
    } else if (fab_is_collective(st->prim)) {
      /* a literal operand (psum[axes=i] 1 after its inserted pbroadcast) has no variable */
      Val **lit = st->nin && st->in[0].lit ? vals_new(1) : NULL;
      if (lit) lit[0] = val_of(st->in[0].lit);
      Val *in = lit ? lit[0] : st->nin ? value_of(F, st->in[0].var) : NULL;
      if (st->prim == P_PSEND || st->prim == P_PRECV) fab_set_site(st->sp);
      mem_scope_begin();         /* a collective that fails leaves nothing behind */
      Val *r = fab_exec(&F->space, st->prim, st->at, in, &st->out[0]->t, !lit && dies_here(F, &st->in[0]));
      mem_scope_end();
      if (lit) vals_free(lit);
      set_slot(F, st->out[0], r);
    } else if (st->prim == P_COND) exec_cond(I, F, st);
    else if (st->prim == P_WHILE) exec_while(I, F, st);
    else if (st->prim == P_FORI_LOOP) exec_fori(I, F, st);
    else if (st->prim == P_SHARD_MAP || st->prim == P_XLA_PMAP) exec_shard_map(I, F, st);
    else if (st->prim == P_SCAN) exec_scan(I, F, st);
    break;
  }
}

/* Releasing values after their last use.  A function's frame lets go of
   a variable's value after the last statement that reads it (or after
   the statement that sets it, if none does), so a body's intermediates
   die as it goes: memory peaks lower, and a big array freed this way is
   reused, already faulted in, by the next one (mem.c's pool).  Kept to
   the end: the function's results, variables a nested function reads
   (through the static link, at any time), and every variable while the
   debugger watches (it may print any of them).  The top level keeps its
   values (the REPL and the debugger read them after the statement),
   except in a script run on its own (eval_release_top).  drops.h plans
   it. */
static void drop_if_last(Frame *F, IrVar *v) {
  if (released_here(F, v)) set_slot(F, v, NULL);
}

/* After statement F->release_at: the slots drops_plan listed, or (a
   statement with many, or not planned as this one) each variable's. */
static void drop_dead(Frame *F, IrStmt *st) {
  if (st->drop_fn == F->fn && st->drop_at == F->release_at && st->ndrop >= 0) {
    for (int d = 0; d < st->ndrop; d++) {
      Val *x = F->slots[st->drop[d]];
      F->slots[st->drop[d]] = NULL;
      val_unref(x);
    }
    return;
  }
  for (int j = 0; j < st->nin; j++) drop_if_last(F, st->in[j].var);
  for (int j = 0; j < st->nitems; j++) drop_if_last(F, st->items[j].atom.var);
  for (int j = 0; j < st->nout; j++) drop_if_last(F, st->out[j]);
}

static void drop_chain(Frame *F, int i, int n) {
  for (int k = i; k < i + n; k++) {
    F->release_at = k;
    drop_dead(F, F->fn->body[k]);
  }
}

/* exec_stmt, and under several ranks outside any body first the values
   kept split: computed on elementwise (ew_on_pieces), or assembled. */
static void exec_outside(Interp *I, Frame *F, IrStmt *st) {
  if (!F->space.mesh && fmpi_size() > 1) {
    if (ew_on_pieces(I, F, st)) return;
    realize_inputs(F, st);
  }
  exec_stmt(I, F, st);
}

static void run_body(Interp *I, Frame *F) {
  IrFunc *fn = F->fn;
  if (!fn->drops_planned) {
    drops_plan(fn);
    fuse_plan(fn);
  }
  for (int i = 0; i < fn->nbody; i++) {
    IrStmt *st = fn->body[i];
    int fused = st->fuse_n > 1 ? exec_fused(I, F, i) : 0;
    if (fused) {
      drop_chain(F, i, fused);
      i += fused - 1;
      continue;
    }
    if (I->hook) I->hook(I, F, st, EV_LINE, I->hook_data);
    if (F->jump >= 0) {
      i = F->jump - 1;
      F->jump = -1;
      continue;
    }
    if (I->obs.data) I->obs.before(I->obs.data, F, st, i);
    F->release_at = I->hook ? -1 : i;
    fmpi_path_stmt(i);
    exec_outside(I, F, st);
    if (I->obs.data) I->obs.after(I->obs.data, F, st, i);
    if (I->hook) I->hook(I, F, st, EV_DONE, I->hook_data);
    else if (F->release_at >= 0) drop_dead(F, st);
  }
}

/* ---- the interpreter --------------------------------------------------------------------- */

Interp *eval_new(IrFunc *main) {
  Interp *I = mem_calloc(sizeof *I);
  err_defer(mem_free, I);
  I->main = main;
  Space sp = {NULL, 1, NULL};
  I->top = frame_new(I, main, NULL, &sp);
  err_undefer(I);
  I->cur = NULL;
  return I;
}

void eval_free(Interp *I) {
  if (!I) return;
  frame_free(I, I->top);
  if (I->spare) {
    mem_free(I->spare->slots);
    mem_free(I->spare);
  }
  mem_free(I);
}

void eval_set_max_steps(Interp *I, long n) { I->max_steps = n; }

void eval_release_top(Interp *I) { I->release_top = true; }

Val *eval_global(Interp *I, IrVar *v) {
  return v->slot < I->top->nslots ? I->top->slots[v->slot] : NULL;
}

bool eval_run(Interp *I, int start) { return eval_run_to(I, start, -1); }

/* " (on all 8 devices)", " (on devices 0, 3)": the instances running
   where a runtime error happened inside a body. */
static void devices_text(const Space *sp, char *out, size_t n) {
  int64_t count = 0;
  for (int64_t d = 0; d < sp->ninst; d++) count += !sp->active || sp->active[d];
  if (count == sp->ninst) {
    snprintf(out, n, " (on all %lld device%s)", (long long)count, count == 1 ? "" : "s");
    return;
  }
  size_t len = (size_t)snprintf(out, n, " (on device%s", count == 1 ? "" : "s");
  int shown = 0;
  for (int64_t d = 0; d < sp->ninst && len + 24 < n; d++) {
    if (!sp->active[d]) continue;
    if (shown == 12) { len += (size_t)snprintf(out + len, n - len, ", ..."); break; }
    len += (size_t)snprintf(out + len, n - len, "%s %lld", shown ? "," : "", (long long)d);
    shown++;
  }
  snprintf(out + len, n - len, ")");
}

/* The traceback of a runtime error raised in frame E (diag.h): the
   statement each frame from T to E's caller was running,
   outermost first; the instances of a decorated def (@shard_map, @pmap,
   @xmap) are not shown, the call of the def is.  NULL when the error is
   in T itself (malloc'd: memory may have run out). */
static char *traceback_text(Frame *E, Frame *T) {
  int n = 0;
  for (Frame *F = E; F && F != T; F = F->caller) n++;
  if (!n || !E->caller) return NULL;
  DiagCall *calls = malloc(sizeof *calls * (size_t)n);
  if (!calls) return NULL;
  int k = n;
  for (Frame *F = E->caller; F && k > 0; F = F == T ? NULL : F->caller) {
    if (!F->cur || ir_is_wrapper(F->fn)) continue;
    calls[--k] = (DiagCall){F->cur->sp, F == T ? NULL : F->fn->name};
  }
  char *text = diag_traceback(calls + k, n - k);
  free(calls);
  return text;
}

/* The end of a top-level statement under several ranks (fmpi_sync): its
   output merged and written by rank 0, the statistics' records counted
   there; false when any rank failed. */
static bool sync_ranks(const char *err) {
  bool ok = fmpi_sync(err, fab_stats_records(), fab_stats_merge);
  fab_stats_records_done();
  return ok;
}

bool eval_run_to(Interp *I, int start, int to) {
  Frame *T = I->top;
  if (T->nslots < I->main->nslots) {
    T->slots = mem_realloc(T->slots, sizeof(Val *) * (size_t)I->main->nslots);
    for (int i = T->nslots; i < I->main->nslots; i++) T->slots[i] = NULL;
    T->nslots = I->main->nslots;
  }
  if (I->release_top && !I->main->drops_planned) {
    drops_plan(I->main);
    fuse_plan(I->main);
  }
  volatile int i = start;
  fmpi_set_format(vp_format_parts);
  ErrJmp j;
  if (ERR_TRY(&j)) {
    for (; i < (to < 0 || to > I->main->nbody ? I->main->nbody : to); i++) {
      IrStmt *st = I->main->body[i];
      I->cur = T;
      I->steps = 0;
      int fused = st->fuse_n > 1 && i + st->fuse_n <= (to < 0 || to > I->main->nbody ? I->main->nbody : to)
                      ? exec_fused(I, T, i) : 0;
      if (fused) {
        drop_chain(T, i, fused);
        i += fused - 1;
        continue;
      }
      if (I->hook) I->hook(I, T, st, EV_LINE, I->hook_data);
      if (T->jump >= 0) {
        i = T->jump - 1;
        T->jump = -1;
        continue;
      }
      if (I->obs.data) I->obs.before(I->obs.data, T, st, i);
      T->release_at = I->release_top && !I->hook ? i : -1;
      fmpi_path_reset();
      fmpi_path_stmt(i);
      I->sub = 0;
      exec_outside(I, T, st);
      if (I->obs.data) I->obs.after(I->obs.data, T, st, i);
      if (I->hook) I->hook(I, T, st, EV_DONE, I->hook_data);
      else if (T->release_at >= 0) drop_dead(T, st);
      if (fmpi_size() > 1 && !sync_ranks(NULL)) {
        err_end(&j);
        return false;
      }
    }
    err_end(&j);
    fflush(stdout);
    return true;
  }
  /* a runtime error: name the innermost statement, release the frames */
  /* the innermost frame running a statement: a frame whose body has not
     begun (the cost model refusing the mesh) and the instance of a
     decorated def that called it are passed for the call of the def */
  Frame *E = I->cur;
  if (E && E != T && !E->cur)
    do E = E->caller;
    while (E && E != T && (!E->cur || ir_is_wrapper(E->fn)));
  IrStmt *inner = E && E->cur ? E->cur : NULL;
  char *trace = E ? traceback_text(E, T) : NULL;
  char where[256] = "";
  /* (an active-instance bitmap may already be released by the unwinding:
     errors raised where only some instances run name them when raised) */
  if (I->cur && I->cur->space.mesh && !I->cur->space.active) devices_text(&I->cur->space, where, sizeof where);
  while (I->cur && I->cur != T) frame_free(I, I->cur);
  I->cur = T;
  /* what the failed statement set is half-built: its variables get no value */
  if (i < I->main->nbody)
    for (int k = 0; k < I->main->body[i]->nout; k++) set_slot(T, I->main->body[i]->out[k], NULL);
  fflush(stdout);
  if (I->abandon) {
    I->abandon = false;
    free(trace);
    return false;
  }
  IrStmt *st = inner ? inner : i < I->main->nbody ? I->main->body[i] : NULL;
  char msg[1400];
  snprintf(msg, sizeof msg, "%s%s", err_message(), strstr(err_message(), " (on ") ? "" : where);
  if (fmpi_size() == 1) {
    diag_report_trace(st ? st->whole : span_none(), "error", msg, trace);
    free(trace);
    return false;
  }
  /* under several ranks rank 0 reports the first failure (of the run's
     order) once; a rank that only stopped because another failed has
     nothing to say */
  char *text = NULL;
  size_t len = 0;
  FILE *f = fmpi_abandoned() ? NULL : open_memstream(&text, &len);
  if (f) {
    if (trace) fputs(trace, f);
    diag_print(f, st ? st->whole : span_none(), "error", msg);
    fclose(f);
  }
  free(trace);
  sync_ranks(text ? text : fmpi_abandoned() ? NULL : msg);
  free(text);
  return false;
}

/* ---- the debugger's entry points ------------------------------------------------------- */

void eval_set_hook(Interp *I, EvalHook hook, void *data) {
  I->hook = hook;
  I->hook_data = data;
}

Frame *eval_top(Interp *I) { return I->top; }

void eval_set_observer(Interp *I, const EvalObserver *obs) {
  if (obs) I->obs = *obs;
  else memset(&I->obs, 0, sizeof I->obs);
}

void eval_abandon(Interp *I) {
  I->abandon = true;
  err_throw("abandoned");
}

bool eval_call(Interp *I, Frame *F, IrFunc *fn, Val **outs, bool traced, Span *where) {
  EvalHook hook = I->hook;
  if (!traced) I->hook = NULL;
  Frame *saved = I->cur;
  long steps = I->steps;
  I->steps = 0;
  volatile bool ok = true;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    I->cur = F;
    call_fn(I, F, fn, NULL, outs, &F->space, NULL);
    err_end(&j);
  } else {
    ok = false;
    if (where) *where = I->cur && I->cur != F && I->cur->cur ? I->cur->cur->whole : span_none();
    while (I->cur && I->cur != F) frame_free(I, I->cur);
    I->abandon = false;       /* a quit: the caller knows it asked */
  }
  I->cur = saved;
  I->steps = steps;
  I->hook = hook;
  return ok;
}
