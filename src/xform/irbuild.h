/*
** irbuild.h — the Builder.
**
** A Builder makes a new checked function equation by equation, in a
** checked program (emit.h), for transformations (transpose.c).  Each
** primitive equation goes through the same shape and variance rules as
** written code (so pbroadcasts are inserted where variance differs);
** higher-order equations are given their checked functions directly.
** Errors are diagnostics at `where`.
*/
#ifndef SHM_IRBUILD_H
#define SHM_IRBUILD_H

#include "emit.h"

typedef struct Builder Builder;

Builder *bld_new(IrProg *P, const char *name, IrFunc *parent, Mesh *mesh, Span where);
/* A Builder that appends to an existing function (the checker's, under
   `mesh`). */
Builder *bld_attach(IrProg *P, IrFunc *fn, const Mesh *mesh, Span where);
IrVar *bld_param(Builder *B, Str name, Type t);
/* Emit prim[params] in...; result atoms in out[] (prim_table nout of them). */
bool bld_prim(Builder *B, int prim, const IrParam *params, int nparams, IrAtom *in, int nin, IrAtom *out);
/* The same for a primitive that carries functions of its own (reduce_window's
   body, scatter_apply's update_jaxpr): src's functions, which params name
   as references (PV_FUNC), go with it (NULL: none). */
bool bld_prim_fns(Builder *B, int prim, const IrParam *params, int nparams, IrAtom *in, int nin, IrAtom *out,
                  const Attrs *src);
/* Emit a call, a cond, a fori_loop or a shard_map with given functions;
   out types are the callee's results (cond: the branches', widened by the
   index's variance; shard_map: `outt`). */
bool bld_call(Builder *B, IrFunc *callee, IrAtom *in, int nin, IrAtom *out);
/* A call written as JAX's call primitive `via` (a PrimId + 1, as
   IrStmt.via), with its functions and parameters, for show. */
bool bld_call_as(Builder *B, IrFunc *callee, IrAtom *in, int nin, IrAtom *out, int via, Attrs *at, IrParam *ps,
                 int np);
bool bld_higher(Builder *B, int prim, Attrs *at, const IrParam *params, int nparams, IrAtom *in, int nin,
                const Type *outt, int nout, IrAtom *out);
/* Lift an atom to a larger variance set (a pbroadcast equation). */
IrAtom bld_lift(Builder *B, IrAtom a, uint32_t vma);
/* Zeros of a type (invariant; lifted when t has variance). */
IrAtom bld_zeros(Builder *B, const Type *t);
/* A literal array an emitted equation uses: the checked program keeps it
   and releases it with itself.  Returns a. */
Array *bld_keep(Builder *B, Array *a);
IrFunc *bld_finish(Builder *B, IrAtom *outs, int nouts);
IrFunc *bld_func(Builder *B);
/* Arena-allocated parameter values, for building IrParam lists. */
PVal *bld_pv_int(Builder *B, int64_t v);
PVal *bld_pv_bool(Builder *B, bool v);
PVal *bld_pv_name(Builder *B, const char *s);
PVal *bld_pv_tuple(Builder *B, PVal **items, int n);
PVal *bld_pv_ints(Builder *B, const int64_t *v, int n);
/* The parameter value naming function k of an equation's at->fns. */
PVal *bld_pv_fn(Builder *B, int k);
/* st's parameters, with the values of `keys` replaced (st->nparams of them). */
IrParam *bld_params_with(Builder *B, const IrStmt *st, const char **keys, PVal **vals, int n);
/* Gather and scatter (indexing.h), for their transposes and JVPs, as
   JAX's write them: the parameters (6 each) of the gather reading the
   windows scatter st writes (fill_value 0) and of the scatter writing the
   windows gather st reads; scatter st's own parameters with update_jaxpr
   None (st->nparams of them). */
IrParam *bld_gather_for_scatter(Builder *B, const IrStmt *st);
IrParam *bld_scatter_for_gather(Builder *B, const IrStmt *st);
IrParam *bld_scatter_like(Builder *B, const IrStmt *st);
/* A copy of at with other functions. */
Attrs *bld_attrs_with(Builder *B, const Attrs *at, IrFunc **fns, int nfns);
void *bld_alloc(Builder *B, size_t n);

void bld_const(Builder *B, Array *value, IrAtom *out);
/* A print or show statement (items' atoms in the function's terms). */
void bld_print(Builder *B, const IrPrintItem *items, int n);
/* The same, written as print statement src is (jax.debug.print's joined
   items; NULL: a plain print). */
void bld_print_like(Builder *B, const IrPrintItem *items, int n, const IrStmt *src);
void bld_show(Builder *B, char *text);
/* A scalar literal of dtype dt (kept by the program). */
IrAtom bld_lit(Builder *B, int dt, double v);
/* The statement the next ones stand for: their place and line. */
void bld_at(Builder *B, Span sp, Span whole);

/* The place later statements are attributed to (errors, the debugger's
   line): a transformation sets it to each source equation in turn. */
void bld_set_where(Builder *B, Span where);
/* Where statements are being made, and whether they are a backward
   pass's (transposed equations: IrStmt.backward). */
Span bld_where(const Builder *B);
void bld_set_backward(Builder *B, bool on);
/* Emit a copy of equation st on operands in[] (st's own operands mapped
   into B's function); its results go to out[] (st->nout of them) and take
   st's result names.  A pbroadcast is copied as a lift, so that an operand
   that already varies over its axes needs no equation.  False after a
   diagnostic. */
bool bld_copy(Builder *B, const IrStmt *st, IrAtom *in, IrAtom *out);
/* g's statements copied into B's function, its parameters standing for
   args[]; out[] gets its results.  g's nested functions must not read
   g's own values through a closure.  False after a diagnostic. */
bool bld_inline(Builder *B, const IrFunc *g, const IrAtom *args, IrAtom *out);
/* A copy of save statement st, saving atom a of B's function. */
void bld_save(Builder *B, const IrStmt *st, IrAtom a);
/* Append a statement that names no variable (a `show`) as it is. */
void bld_reuse(Builder *B, IrStmt *st);

#endif
