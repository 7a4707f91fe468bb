/*
** rule.h — the context of a shape rule: one equation's parameters.
**
** A RuleCtx holds the parameters written on one equation (`key=value`
** pairs, as parsed), marks which the rule read, and records the canonical
** list `show` prints, every parameter spelled out with its default.  Shape
** rules (prims.c, coll.c) read parameters only through the rule_* calls
** below; the checker and the Builder (emit.c) make the context.  A rule's
** first error is a diagnostic at the equation; later ones are dropped.
**
** Memory comes from the checked program's arena; nothing here is freed on
** its own.
*/
#ifndef SHM_RULE_H
#define SHM_RULE_H

#include "buf.h"
#include "ir.h"

typedef struct RuleCtx RuleCtx;
struct RuleCtx {
  Arena *arena;              /* the checked program's */
  const Mesh *mesh;          /* axes in scope (collectives), or NULL */
  const char *prim;          /* the primitive's name, for messages */
  Span sp;                   /* where errors without a parameter go */
  AstParam **params;         /* as written */
  int nparams;
  bool *used;                /* params[i] was read */
  bool failed;               /* an error was reported */
  IrParam *canon;            /* the canonical parameters, for show */
  int ncanon, capcanon;
};

void rule_init(RuleCtx *cx, Arena *arena, const Mesh *mesh, const char *prim, Span sp, AstParam **params,
               int nparams);
/* Report the first parameter no rule read (or one given twice); `known`
   lists the parameter names for the message.  False after an error. */
bool rule_unused(RuleCtx *cx, const char *known);

/* ---- the parameter readers ------------------------------------------------
** A shape rule reads the equation's parameters through the rule_* calls
** (which also record the canonical, fully spelled-out parameter list that
** `show` prints), checks the operand types in[0..nin-1], fills `at`, and
** writes the result types to out[].  It sets only dt/rank/shape of out[];
** the checker sets variance.  An operand with in[k].weak set is an untyped
** literal: the rule may set in[k].dt to the dtype it should take (JAX's
** weak typing), and the checker converts the literal.  On a problem the
** rule calls rule_error (or rule_param_error) and returns false.
*/

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
/* A pair of int tuples ((lhs...), (rhs...)) into out[0..1]; absent: both
   empty (pdot's pos_contract and pos_batch). */
bool rule_int_list_pair(RuleCtx *cx, const char *key, IntList out[2]);
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

/* ---- helpers for the shape rules ------------------------------------------ */

/* Dtype kinds as bits, for the sets of dtypes a primitive accepts. */
enum { K_BOOL = 1, K_INT = 2, K_FLOAT = 4, K_COMPLEX = 8, K_NUM = K_INT | K_FLOAT,
       K_ANY = K_BOOL | K_INT | K_FLOAT, K_LOGIC = K_BOOL | K_INT,
       K_ARITH = K_NUM | K_COMPLEX,        /* + - * /, neg, sums and products */
       K_FLOATC = K_FLOAT | K_COMPLEX,     /* exp, log, sqrt, sin, cos, tanh ... */
       K_ALL = K_ANY | K_COMPLEX,
       K_KEY = 16 };                       /* PRNG keys (key<fry>): no primitive of arithmetic takes them */
/* The kind bit of a dtype; the order of kinds for weak typing (bool < int
   < float < complex); "floating-point dtypes" and so on, for messages. */
int rule_kind_bit(int dt);
int rule_kind_rank(int dt);
const char *rule_kinds_text(int kinds);

/* Text for messages: a type "f32[2,3]", an int list as a Python tuple
   "(0, 1)".  Each message uses its own buffer per value. */
typedef struct TyBuf { char s[24 * SHM_MAXRANK + 16]; } TyBuf;
typedef struct LsBuf { char s[24 * SHM_MAXRANK * 3 + 16]; } LsBuf;
const char *rule_ty(TyBuf *b, const Type *t);
const char *rule_ls_n(LsBuf *b, const int64_t *v, int n);
const char *rule_ls(LsBuf *b, const IntList *l);

/* Set a result type's dtype and shape. */
void rule_set_type(Type *t, int dt, int rank, const int64_t *shape);
/* An operand's dtype is one of `kinds`; a result rank is at most
   SHM_MAXRANK; a shape parameter has no negative size and is not too big. */
bool rule_check_kind(RuleCtx *cx, const Type *t, int kinds);
bool rule_check_rank(RuleCtx *cx, int rank);
bool rule_check_shape(RuleCtx *cx, const char *key, const IntList *s);
/* Give the operands in[idx[0..n-1]] one dtype, JAX's weak typing: typed
   operands must agree, and an untyped literal takes their dtype when its
   own kind is not higher.  The common dtype goes to *dt. */
bool rule_unify_dtypes(RuleCtx *cx, Type *in, const int *idx, int n, int *dt);
/* The same, and operands of one rank whose dimensions are equal or 1 (JAX's
   older lax broadcast those: add of f32[3] and f32[1] is f32[3]). */
bool rule_bcast_shapes(RuleCtx *cx, const Type *in, const int *idx, int n, Type *res);
/* The common shape of elementwise operands (scalars broadcast) into *res. */
bool rule_unify_shapes(RuleCtx *cx, const Type *in, const int *idx, int n, Type *res);
/* An axis normalised against a rank (negative counts from the end); -1
   when out of range. */
int64_t rule_norm_axis(int64_t a, int rank);
/* A list of axes in range for `rank`, without repeats; with `neg`,
   negative axes count from the end and the normalised list replaces *l
   (and is recorded for show).  t, if given, names the operand in errors. */
bool rule_check_axes(RuleCtx *cx, const char *key, IntList *l, int rank, bool neg, const Type *t);

/* ---- lower-level access (the checker's special forms) ---------------------- */

/* The parameter's value, marking it read; NULL when absent. */
PVal *rule_get(RuleCtx *cx, const char *key);
/* Record `key` as `v` in the canonical list (replacing an earlier one). */
void rule_record(RuleCtx *cx, const char *key, PVal *v);
/* "PRIM requires the parameter 'key'"; returns false. */
bool rule_missing(RuleCtx *cx, const char *key);
/* New parameter values in the arena: of a kind, an int, a tuple of ints. */
PVal *rule_pv(RuleCtx *cx, PVKind k);
PVal *rule_pv_int(RuleCtx *cx, int64_t x);
PVal *rule_pv_ints(RuleCtx *cx, const int64_t *x, int n, PVKind k);
/* A one-element tuple written `(x)` stands for x. */
PVal *pv_unparen(PVal *v);
/* A dictionary {key: value, ...}: a PV_DICT whose items are all PV_PAIR
   (an empty one counts; {a, b} is a set); its i-th key and value. */
bool pv_is_map(const PVal *v);
PVal *pv_key(const PVal *v, int i);
PVal *pv_val(const PVal *v, int i);

/* ---- a checked equation's parameters (for transformations) ----------------- */

/* The canonical value of parameter `key` of equation st, or NULL. */
PVal *rule_stmt_param(const IrStmt *st, const char *key);
/* The ints of a tuple or list value (an int alone: one) into v[]; the count. */
int rule_read_ints(const PVal *p, int64_t *v, int max);

/* A variance rule (a primitive's vrule), computed: for operand k,
   lift[k] is the variance set it must have (it is lifted by a pbroadcast
   when its own is smaller); *res is the results' set.  Literal operands of
   elementwise rules are never lifted (lift[k] = their own set).  False when
   the rule forbids the operands' sets (pbroadcast or pscatter of an
   operand already varying along their axes). */
bool rule_vary(VarRule vr, const Type *in, int nin, const Attrs *at, const bool *is_lit, uint32_t *lift,
               uint32_t *res);

/* " (mesh m has axes i, j; did you mean 'i'?)" for an axis name not in
   mesh m (NULL: outside any shard_map), in out. */
const char *rule_axis_hint(const Mesh *m, Str name, char *out, size_t n);
/* "did you mean 'axes'? " for key among the space-separated params, or "". */
const char *rule_param_hint(const char *params, Str key, char *out, size_t n);
/* A partition spec as written: P(i, None), P((i, j)). */
void rule_spec_text(Buf *b, const Spec *sp, const Mesh *m);

#endif
