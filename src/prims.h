/*
** prims.h — the table of primitives (prims.c).
**
** Every primitive is one row of prims.def:
**
**   PRIM(tag, name, alias, nin_min, nin_max, nout, params,
**        shape, vrule, kernel, exec, transpose)
**
**   name, alias  canonical name (what `show` prints) and a synonym or NULL
**   nin_min/max  operand count (nin_max -1: any number)
**   nout         result count (-1: decided by the rule, e.g. control flow)
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
**
** The same rows give the parser's name lookup (prim_lookup), the checker's
** rules, the evaluator's dispatch and the REPL's help, so they cannot
** drift apart.  Each module makes the columns it owns into a table of its
** own from the same rows: prims.c the ones below (prim_table), fabric.c
** exec, transpose.c transpose, so that no module names functions of a
** module above it.
*/
#ifndef SHM_PRIMS_H
#define SHM_PRIMS_H

#include "array.h"
#include "ast.h"
#include "types.h"

typedef enum PrimId {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, exec, tr) P_##tag,
#include "prims.def"
#undef PRIM
  P_COUNT
} PrimId;

/* How the variance set of the result follows from the operands' (§3.4).
   "lift" means the checker inserts pbroadcast equations. */
typedef enum VarRule {
  VR_ELEM,        /* operands lifted to the union of their sets; result: the union */
  VR_NULLARY,     /* made from nothing: result invariant ({}) */
  VR_REDUCE,      /* psum/pmax/pmin/pmean: operand lifted to include axes; result S - axes */
  VR_PBCAST,      /* pbroadcast: operand invariant along axes; result S + axes */
  VR_VARY,        /* all_gather, psum_scatter, ppermute, all_to_all: lift; result S + axes */
  VR_GATHER_INV,  /* all_gather_invariant: lift; result S - axes */
  VR_PSCATTER,    /* pscatter: operand invariant along axes; result S + axes */
  VR_AXIS_INDEX,  /* result: exactly the named axes */
  VR_SPECIAL      /* control flow and shard_map: the checker's own logic */
} VarRule;

/* Does a primitive with this rule move data between instances, so that
   every member of a group must reach it?  pbroadcast, pscatter and
   axis_index name axes but move nothing: they may run where only some
   instances do (under a predicate that varies along their axes). */
static inline bool vrule_communicates(VarRule r) {
  return r == VR_REDUCE || r == VR_VARY || r == VR_GATHER_INV;
}

typedef struct IntList {
  int n;
  int64_t *v;
} IntList;

struct IrFunc;

/* Decoded parameters of one equation.  Which field holds which parameter
   is each primitive's business (documented beside its rule in prims.c);
   kernels read the fields their rule filled. */
typedef struct Attrs {
  int dtype;             /* a dtype parameter, or -1 */
  int64_t i[4];          /* integer parameters */
  double f[3];           /* float parameters */
  bool b[2];             /* boolean parameters */
  IntList l[6];          /* integer-list parameters */
  /* collectives: the named mesh axes, in the order written */
  int naxes;
  uint8_t axes[SHM_MAXAXES];
  uint32_t axmask;
  /* higher-order primitives: branches, loop bodies, shard_map body */
  struct IrFunc **fns;
  int nfns;
  void *ext;             /* primitive-specific data (shard_map specs) */
} Attrs;

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

/* The length of the canonical part of a params column (before " |"). */
static inline size_t prim_params_len(const char *params) {
  const char *bar = params ? strchr(params, '|') : NULL;
  size_t n = bar ? (size_t)(bar - params) : params ? strlen(params) : 0;
  while (n && params[n - 1] == ' ') n--;
  return n;
}
/* Does the primitive accept a parameter named `key` (a synonym too)? */
bool prim_accepts(int prim, Str key);

/* Primitive by canonical name or alias; -1 if none. */
int prim_lookup(Str name);

#endif
