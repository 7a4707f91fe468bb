/*
** prim.h — the table of primitives.
**
** Every primitive is one row of prims.def:
**
**   PRIM(tag, name, alias, nin_min, nin_max, nout, params,
**        shape, vrule, kernel, transpose)
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
**   transpose    the transpose rule of a linear primitive, or NULL
**
** The same rows give the parser's name lookup (prim_lookup), the checker's
** rules, the evaluator's dispatch and the REPL's help, so they cannot
** drift apart.
*/
#ifndef SHM_PRIM_H
#define SHM_PRIM_H

#include "array.h"
#include "ast.h"
#include "types.h"

typedef enum PrimId {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, tr) P_##tag,
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
** A shape rule reads the equation's parameters through the rule_* calls
** (which also record the canonical, fully spelled-out parameter list that
** `show` prints), checks the operand types in[0..nin-1], fills `at`, and
** writes the result types to out[].  It sets only dt/rank/shape of out[];
** the checker sets variance.  An operand with in[k].weak set is an untyped
** literal: the rule may set in[k].dt to the dtype it should take (JAX's
** weak typing), and the checker converts the literal.  On a problem the
** rule calls rule_error (or rule_param_error) and returns false.
*/
typedef struct RuleCtx RuleCtx;
typedef bool (*ShapeFn)(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);

/* Errors: the first error of an equation is reported; later ones dropped.
   Both return false so a rule can `return rule_error(...)`. */
bool rule_error(RuleCtx *cx, const char *fmt, ...) SHM_PRINTF(2, 3);
bool rule_param_error(RuleCtx *cx, const char *key, const char *fmt, ...) SHM_PRINTF(3, 4);
/* The primitive's canonical name, for messages. */
const char *rule_prim_name(RuleCtx *cx);

/* Parameter readers.  `required`: absence is an error; otherwise `dflt` is
   used (and recorded, so `show` spells every parameter out).  Each returns
   false after reporting a malformed value. */
bool rule_int(RuleCtx *cx, const char *key, bool required, int64_t dflt, int64_t *out);
/* A dimension number counted from the end when negative, as JAX's
   canonicalize_axis does: -1 is the last of `rank` dimensions.  A value in
   [-rank, rank) is made non-negative and recorded so (show prints it);
   others are left for the rule's own range check. */
bool rule_axis_index(RuleCtx *cx, const char *key, int64_t *v, int rank);
/* Record `key` as the tuple l (a list the rule normalised; show prints it). */
void rule_set_ints(RuleCtx *cx, const char *key, const IntList *l);
bool rule_float(RuleCtx *cx, const char *key, bool required, double dflt, double *out);
bool rule_bool(RuleCtx *cx, const char *key, bool dflt, bool *out);
/* A dtype name (f32, float32, ...); dflt -1 means the parameter may be None. */
bool rule_dtype(RuleCtx *cx, const char *key, bool required, int dflt, int *out);
/* A tuple or list of ints (a bare int is a 1-tuple).  Absent and not
   required: an empty list, or *out left as it was if `keep` */
bool rule_ints(RuleCtx *cx, const char *key, bool required, IntList *out);
/* A tuple/list of `width`-tuples of ints, flattened into out (n = count*width):
   padding_config ((lo, hi, interior), ...), perm ((src, dst), ...). */
bool rule_int_tuples(RuleCtx *cx, const char *key, bool required, int width, IntList *out);
/* Records `key` as the width-tuples in l in place of the parameter `sugar`
   they were computed from (show prints the spelled-out form). */
void rule_respell_int_tuples(RuleCtx *cx, const char *sugar, const char *key, int width, const IntList *l);
/* dot_general's dimension_numbers (([lc], [rc]), ([lb], [rb])) into out[0..3]. */
bool rule_dimnums(RuleCtx *cx, const char *key, IntList out[4]);
/* Collectives: read mesh axis names (one name or a tuple) into at->axes,
   at->naxes and at->axmask; an axis not bound by an enclosing shard_map is
   an error.  rule_group_size is the product of those axes' sizes. */
bool rule_axes(RuleCtx *cx, const char *key, bool required, Attrs *at);
int64_t rule_group_size(RuleCtx *cx, const Attrs *at);
/* The dtype a numeric parameter's literal suggests (DT_BOOL, DT_I32 or
   DT_F32), as JAX infers from a Python scalar; -1 if absent. */
int rule_number_kind(RuleCtx *cx, const char *key);
/* Is the parameter present? */
bool rule_has(RuleCtx *cx, const char *key);
/* Memory that lives as long as the checked program. */
int64_t *rule_alloc_ints(RuleCtx *cx, int n);

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

/* ---- transpose rules ------------------------------------------------------ */
typedef struct TrCtx TrCtx;
typedef bool (*TransFn)(TrCtx *cx);

typedef struct PrimInfo {
  const char *name;
  const char *alias;
  int nin_min, nin_max, nout;
  const char *params;
  ShapeFn shape;
  VarRule vrule;
  KernFn kernel;
  TransFn transpose;
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
