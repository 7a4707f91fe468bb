/*
** prims.h — the table of primitives (prims.c).
**
** Every primitive is one row of prims.def:
**
**   PRIM(tag, name, alias, nin_min, nin_max, nout, params,
**        shape, vrule, kernel, exec, transpose, jvp, cost)
**
**   name, alias  canonical name (what `show` prints) and a synonym or NULL
**   nin_min/max  operand count (nin_max -1: any number)
**   nout         result count (-1: decided by the rule, e.g. control flow;
**                0: one result per operand, as sort gives; NOUT_SIZES:
**                one result per entry of the `sizes` parameter, as split
**                gives; NOUT_HALF: one per two operands, as reduce_window's
**                operands and init values)
**   params       the parameter names, space-separated, in the order `show`
**                prints them, for help and completion; after a `|`, the
**                synonyms also accepted ("axes | axis_name"); a function
**                that is never called is checked against all of them
**   shape        the shape rule: checks operand types and parameters and
**                computes the result types (NULL for rows the checker
**                handles itself: control flow)
**   vrule        the variance rule (VarRule below)
**   kernel       computes one block of the result from one block of each
**                operand (local primitives; NULL for collectives and
**                control flow, which the fabric and the evaluator run)
**   exec         a collective's execution over the blocks of all
**                instances (fabric.c), or NULL
**   transpose    the transpose rule of a linear primitive, or NULL
**                (transpose.c)
**   jvp          the forward-mode derivative rule (jvp_rules.c): the
**                tangent of the results from the operands' tangents, as
**                JAX's rule for the primitive computes it; jvp_zero for a
**                primitive whose derivative is zero (comparisons, integer
**                and boolean results), NULL where JAX has no rule (a
**                derivative through it is an error naming it)
**   cost         the cost model's rule (cost.c): the FLOPs and HBM bytes
**                of one equation on one block, by the class of work it
**                does: cost_ew one operation per result element, its
**                operands read and its results written (elementwise, and
**                any primitive without a rule of its own); cost_move no
**                operations, the same bytes (data movement); cost_view
**                nothing (bitcasts, annotations of placement); cost_fill
**                its result written; cost_slice, cost_dus, cost_gather,
**                cost_scatter, cost_scatter_combine what the windows read
**                and write; cost_reduce one operation per operand
**                element; cost_dot, cost_conv, cost_fft, cost_sort,
**                cost_window, cost_window_body (a body per window
**                position), cost_select_scatter, cost_cumlse,
**                cost_allclose, cost_random_seed, cost_threefry,
**                cost_philox, cost_bessel, cost_zeta, cost_series the
**                counts of their algorithms; cost_coll a
**                collective (priced by the communication model, not as a
**                local equation); cost_none control flow and calls (their
**                bodies' equations are priced one by one)
**
** The same rows give the parser's name lookup (prim_lookup), the checker's
** rules, the evaluator's dispatch and the REPL's help, so they cannot
** drift apart.  Each module makes the columns it owns into a table of its
** own from the same rows: prims.c the ones below (prim_table), fabric.c
** exec, transpose.c transpose, jvp_rules.c jvp, cost.c cost, so that no
** module names functions of a module above it.
*/
#ifndef SHM_PRIMS_H
#define SHM_PRIMS_H

#include "ir.h"

/* The nout column of a primitive with one result per entry of `sizes`. */
#define NOUT_SIZES (-2)
#define NOUT_HALF (-3)

/* ---- shape rules ------------------------------------------------------------
** A shape rule (rule.h describes its context and the parameter readers)
** checks an equation's operand types and parameters, fills `at` and
** writes the result types; the checker sets variance from the vrule.
*/
typedef struct RuleCtx RuleCtx;
typedef bool (*ShapeFn)(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);

/* ---- kernels ----------------------------------------------------------------
** A kernel computes a local primitive on one block per operand and
** allocates its results (arr_new with outt[k]'s dtype and shape).  The
** operands were checked: shapes and dtypes are exactly what the rule
** accepted (a scalar operand of an elementwise primitive broadcasts).
*/
typedef void (*KernFn)(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* The elementwise engine without a kernel around it, for running one
   elementwise primitive over many blocks at once (eval.c): prim_ew_op
   gives the operation of a primitive whose kernel applies one (the
   elementwise binary, comparison and unary primitives), or -1;
   prim_ew_apply(op, a, b, r) then computes into r exactly what the
   kernel computes into its result, given operands of one dtype (b is
   NULL for a unary op; a rank-0 operand broadcasts against r).  It reads
   only dt, rank, size and data of its arrays, never fails and allocates
   nothing. */
int prim_ew_op(int prim);
void prim_ew_apply(int op, const Array *a, const Array *b, Array *r);
/* Elements [lo, lo + n) of the result (of type t) of the fill primitive
   `prim` with attributes `at`, written from r's data on, each the value
   the primitive's kernel gives it: arange of f32 and f64, iota of f32,
   f64, i32 and i64 (fused chains start with them, run/fuse.h).  false:
   not one of those (nothing written).  Never fails, allocates nothing. */
bool prim_fill_tile(int prim, const Attrs *at, const Type *t, Array *r, int64_t lo, int64_t n);

typedef struct PrimInfo {
  const char *name;
  const char *alias;
  int nin_min, nin_max, nout;
  const char *params;
  ShapeFn shape;
  VarRule vrule;
  KernFn kernel;
} PrimInfo;

extern const PrimInfo prim_table[P_COUNT];

/* How many results an equation of `prim` with nin operands gives (1 for
   the rows whose count their special form decides, and for NOUT_SIZES:
   prim_nout_params counts those). */
static inline int prim_nout(int prim, int nin) {
  int n = prim_table[prim].nout;
  return n > 0 ? n : n == 0 ? nin : n == NOUT_HALF ? nin / 2 : 1;
}
/* The same, given the equation's parameters as written: a NOUT_SIZES row
   gives one result per entry of its `sizes` tuple (at least 1 when that is
   not a tuple of ints: the shape rule then reports it). */
int prim_nout_params(int prim, int nin, AstParam *const *params, int nparams);

/* The length of the canonical part of a params column (before " |"). */
static inline size_t prim_params_len(const char *params) {
  const char *bar = params ? strchr(params, '|') : NULL;
  size_t n = bar ? (size_t)(bar - params) : params ? strlen(params) : 0;
  while (n && params[n - 1] == ' ') n--;
  return n;
}
/* Does the primitive accept a parameter named `key` (a synonym too)? */
bool prim_accepts(int prim, Str key);

/* Does an equation of prim communicate between the instances (a
   collective whose group must reach it together)?  The variance rule
   says so, but for JAX's collective broadcast (pbroadcast with source=),
   whose result keeps its operand's variance. */
static inline bool prim_communicates(int prim) {
  return vrule_communicates(prim_table[prim].vrule) || prim == P_PBROADCAST_SOURCE;
}

/* Primitive by canonical name or alias; -1 if none. */
int prim_lookup(Str name);

#endif
