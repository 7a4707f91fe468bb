/*
** prims.c — the local primitives (§3.5): one shape rule and one kernel each.
**
** A shape rule reads the equation's parameters (rule_* from check.c),
** checks the operand types, fills Attrs and writes the result type; the
** comment above each rule says which Attrs fields it fills, and its kernel
** reads exactly those.  Names, parameters and semantics are JAX's
** (`jax.lax`), with one extension: an elementwise primitive broadcasts a
** scalar (rank 0) operand against an array.
**
** The kernels share four engines, so no primitive has a loop of its own
** where an engine can do the work:
**
**   elementwise   ew_unary / ew_binary apply an operation code (EwOp) to
**                 every element, with one switch over the dtypes generated
**                 from the SHM_DTYPES X-macro.  Floats are computed in
**                 double and rounded once to the dtype (exact for + - * /
**                 and sqrt, correctly rounded in practice for the rest),
**                 integers in 64-bit wrap-around arithmetic truncated to
**                 the dtype, bools as 0/1.  The common operations run as
**                 typed loops (one per operation and dtype, so they
**                 vectorise) with exactly those results; f32 tanh too
**                 (tanh_f32).  Big operations are split in two ranges of
**                 elements run on two threads (par.h): each element is
**                 computed the same way wherever the split falls.
**                 prim_ew_apply lets eval.c run the engine over all blocks
**                 of a value at once.
**   reduction     red_axes folds any set of axes with a binary EwOp
**                 (floats accumulate in double, integers in 64 bits);
**                 scan_axis and arg_axis run along one axis (cumulative
**                 ops, argmax/argmin).
**   copy          copy_strided moves the elements of a box between two
**                 strided layouts, bytewise; every shape and indexing
**                 primitive is one or two calls of it.
**   dot_general   operands laid out as (batch, free, contract) blocks, then
**                 OpenBLAS gemm per batch for floats, exact loops otherwise.
**
** Kernels never write to their operands and allocate their results with
** arr_new from the result type the rule computed.  Nothing here keeps
** state between calls (prim_ew_op's table is built once, then constant).
**
** Sections: helpers for the rules; elementwise (engine, then rules and
** kernels); reductions and scans; shape ops (copy engine, then rules and
** kernels); indexing; creation; dot_general; the table.
*/
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include "blas.h"
#include "err.h"
#include "fabric.h"
#include "par.h"
#include "prim.h"
#include "transpose.h"

#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt
#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

/* =========================================================================
** Helpers shared by the rules
** ========================================================================= */

/* Dtype kinds as bits, for the sets of dtypes a primitive accepts. */
enum { K_BOOL = 1, K_INT = 2, K_FLOAT = 4, K_NUM = K_INT | K_FLOAT,
       K_ANY = K_BOOL | K_INT | K_FLOAT, K_LOGIC = K_BOOL | K_INT };

/* The kind bit of a dtype. */
static int kind_bit(int dt) {
  return dtype_is_float((DType)dt) ? K_FLOAT : dtype_is_int((DType)dt) ? K_INT : K_BOOL;
}

/* Order of kinds for weak typing: bool < int < float. */
static int kind_rank(int dt) {
  return dtype_is_float((DType)dt) ? 2 : dtype_is_int((DType)dt) ? 1 : 0;
}

/* A human description of a set of kinds, for "accepts ..." messages. */
static const char *kinds_text(int kinds) {
  switch (kinds) {
  case K_FLOAT: return "floating-point dtypes (f32, f64)";
  case K_INT: return "integer dtypes (i32, i64)";
  case K_NUM: return "numeric dtypes (i32, i64, f32, f64)";
  case K_LOGIC: return "bool and integer dtypes";
  default: return "any dtype";
  }
}

/* Text of a type, "f32[2,3]"; each message uses its own TyBuf per type. */
typedef struct TyBuf { char s[24 * SHM_MAXRANK + 16]; } TyBuf;

/* Formats t into b; returns the text. */
static const char *ty(TyBuf *b, const Type *t) {
  int n = snprintf(b->s, sizeof b->s, "%s[", dtype_names[t->dt]);
  for (int i = 0; i < t->rank; i++)
    n += snprintf(b->s + n, sizeof b->s - (size_t)n, "%s%lld", i ? "," : "",
                  (long long)t->shape[i]);
  snprintf(b->s + n, sizeof b->s - (size_t)n, "]");
  return b->s;
}

/* Text of an int list as a Python tuple: "(0, 1)", "(3,)", "()". */
typedef struct LsBuf { char s[24 * SHM_MAXRANK * 3 + 16]; } LsBuf;

/* Formats the n ints at v into b; returns the text. */
static const char *ls(LsBuf *b, const int64_t *v, int n) {
  size_t k = 0;
  k += (size_t)snprintf(b->s + k, sizeof b->s - k, "(");
  for (int i = 0; i < n && k < sizeof b->s - 32; i++)
    k += (size_t)snprintf(b->s + k, sizeof b->s - k, "%s%lld", i ? ", " : "", (long long)v[i]);
  snprintf(b->s + k, sizeof b->s - k, n == 1 ? ",)" : ")");
  return b->s;
}

/* Text of an IntList. */
static const char *lsl(LsBuf *b, const IntList *l) { return ls(b, l->v, l->n); }

/* Sets a result type. */
static void set_type(Type *t, int dt, int rank, const int64_t *shape) {
  t->dt = (uint8_t)dt;
  t->rank = (uint8_t)rank;
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
}

/* Checks that an operand's dtype is one of `kinds`. */
static bool check_kind(RuleCtx *cx, const Type *t, int kinds) {
  if (kind_bit(t->dt) & kinds) return true;
  return rule_error(cx, "%s does not accept dtype %s; it accepts %s", rule_prim_name(cx),
                    dtype_names[t->dt], kinds_text(kinds));
}

/* Checks that a result rank does not exceed SHM_MAXRANK. */
static bool check_rank(RuleCtx *cx, int rank) {
  if (rank <= SHM_MAXRANK) return true;
  return rule_error(cx, "%s would make an array of rank %d; at most %d dimensions are supported",
                    rule_prim_name(cx), rank, SHM_MAXRANK);
}

/* Checks a shape parameter: at most SHM_MAXRANK sizes, none negative. */
static bool check_shape_param(RuleCtx *cx, const char *key, const IntList *s) {
  LsBuf b;
  if (!check_rank(cx, s->n)) return false;
  for (int i = 0; i < s->n; i++)
    if (s->v[i] < 0)
      return rule_param_error(cx, key, "%s %s %s has a negative size", rule_prim_name(cx), key,
                              lsl(&b, s));
  if (shape_size(s->n, s->v) < 0)
    return rule_param_error(cx, key, "%s %s %s is too large", rule_prim_name(cx), key, lsl(&b, s));
  return true;
}

/* Gives the operands in[idx[0..n-1]] one dtype, JAX's weak typing: the
   typed operands must agree, and an untyped literal takes their dtype when
   its own kind is not higher (an int literal may become a float, a float
   literal may not become an int).  With only literals, the highest kind
   wins.  Stores the common dtype in *dt. */
static bool unify_dtypes(RuleCtx *cx, Type *in, const int *idx, int n, int *dt) {
  int strong = -1, top = idx[0];
  for (int k = 0; k < n; k++) {
    const Type *t = &in[idx[k]];
    if (t->weak) {
      if (kind_rank(t->dt) > kind_rank(in[top].dt)) top = idx[k];
      continue;
    }
    if (strong < 0) strong = idx[k];
    else if (t->dt != in[strong].dt)
      return rule_error(cx, "%s requires arguments of equal dtype, got %s and %s",
                        rule_prim_name(cx), dtype_names[in[strong].dt], dtype_names[t->dt]);
  }
  int target = strong >= 0 ? in[strong].dt : in[top].dt;
  for (int k = 0; k < n; k++) {
    Type *t = &in[idx[k]];
    if (!t->weak || t->dt == target) continue;
    if (kind_rank(t->dt) > kind_rank(target)) {
      int a = strong < idx[k] ? target : t->dt, b = strong < idx[k] ? t->dt : target;
      return rule_error(cx, "%s requires arguments of equal dtype, got %s and %s",
                        rule_prim_name(cx), dtype_names[a], dtype_names[b]);
    }
    t->dt = (uint8_t)target;
  }
  *dt = target;
  return true;
}

/* The common shape of elementwise operands in[idx[0..n-1]]: all equal,
   except that scalars broadcast.  Writes it into *res (dt untouched). */
static bool unify_shapes(RuleCtx *cx, const Type *in, const int *idx, int n, Type *res) {
  int big = -1;
  for (int k = 0; k < n; k++) {
    const Type *t = &in[idx[k]];
    if (t->rank == 0) continue;
    if (big < 0) big = idx[k];
    else if (!type_same_shape(t, &in[big])) {
      TyBuf a, b;
      return rule_error(cx, "%s got incompatible shapes for broadcasting: %s and %s",
                        rule_prim_name(cx), ty(&a, &in[big]), ty(&b, t));
    }
  }
  const Type *s = big >= 0 ? &in[big] : &in[idx[0]];
  res->rank = s->rank;
  for (int i = 0; i < s->rank; i++) res->shape[i] = s->shape[i];
  return true;
}

/* Normalises an axis number against a rank (negative counts from the end);
   -1 if out of range. */
static int64_t norm_axis(int64_t a, int rank) {
  if (a < 0) a += rank;
  return a >= 0 && a < rank ? a : -1;
}

/* Checks that a list of axes is in range for `rank` and has no repeats;
   `neg` allows negative axes, counted from the end: the list is
   normalised into a new list in *l, which `show` prints. */
static bool check_axes(RuleCtx *cx, const char *key, IntList *l, int rank, bool neg, const Type *t) {
  LsBuf b;
  TyBuf tb;
  uint32_t seen = 0;
  int64_t *v = l->n ? rule_alloc_ints(cx, l->n) : NULL;
  for (int i = 0; i < l->n; i++) {
    int64_t a = neg ? norm_axis(l->v[i], rank) : (l->v[i] >= 0 && l->v[i] < rank ? l->v[i] : -1);
    if (a < 0) {
      if (t)
        return rule_error(cx, "%s %s %s out of range for %s", rule_prim_name(cx), key, lsl(&b, l),
                          ty(&tb, t));
      return rule_error(cx, "%s %s %s out of range for rank %d", rule_prim_name(cx), key,
                        lsl(&b, l), rank);
    }
    if (seen & (1u << a))
      return rule_param_error(cx, key, "%s %s %s repeats axis %lld", rule_prim_name(cx), key,
                              lsl(&b, l), (long long)a);
    seen |= 1u << a;
    v[i] = a;
  }
  l->v = v;
  if (neg) rule_set_ints(cx, key, l);
  return true;
}

/* Accepts a parameter that JAX prints and shmapi does not use (sharding,
   out_sharding, precision, accuracy): its value is not read. */
static void ignore_param(RuleCtx *cx, const char *key) { (void)rule_has(cx, key); }

/* A new result array of type t. */
static Array *new_arr(const Type *t) { return arr_new((DType)t->dt, t->rank, t->shape); }

/* =========================================================================
** Elementwise: the engine
** ========================================================================= */

/* The operations of the elementwise engine; the binary ones are also the
   folding operations of the reductions and scans. */
typedef enum EwOp {
  /* binary, result of the operands' dtype */
  B_ADD, B_SUB, B_MUL, B_DIV, B_REM, B_POW, B_MAX, B_MIN, B_AND, B_OR, B_XOR,
  B_ATAN2, B_NEXTAFTER, B_SHL, B_SHRA, B_SHRL,
  /* comparisons, result bool */
  C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE,
  /* unary */
  U_NEG, U_ABS, U_SIGN, U_NOT, U_COPY, U_FLOOR, U_CEIL, U_ROUND_AWAY, U_ROUND_EVEN,
  U_ISFINITE, U_EXP, U_EXP2, U_EXPM1, U_LOG, U_LOG1P, U_TANH, U_LOGISTIC, U_SQRT, U_RSQRT,
  U_CBRT, U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_SINH, U_COSH, U_ASINH, U_ACOSH,
  U_ATANH, U_ERF, U_ERFC, U_LGAMMA
} EwOp;

/* A binary operation on floats (computed in double). */
static double bin_f(int op, double a, double b) {
  switch (op) {
  case B_ADD: return a + b;
  case B_SUB: return a - b;
  case B_MUL: return a * b;
  case B_DIV: return a / b;
  case B_REM: return fmod(a, b);
  case B_POW: return pow(a, b);
  case B_MAX: return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
  case B_MIN: return isnan(a) ? a : isnan(b) ? b : a < b ? a : b;
  case B_ATAN2: return atan2(a, b);
  case B_NEXTAFTER: return nextafter(a, b);
  default: return 0;
  }
}

/* Same for f32 where rounding through double would differ (nextafter). */
static float bin_f32(int op, float a, float b) {
  return op == B_NEXTAFTER ? nextafterf(a, b) : (float)bin_f(op, a, b);
}

/* Integer power by squaring, wrapping; a negative exponent gives 0 except
   for base 1 (XLA's integer power). */
static int64_t ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : 0;
  uint64_t acc = 1, x = (uint64_t)a;
  while (b) {
    if (b & 1) acc *= x;
    x *= x;
    b >>= 1;
  }
  return (int64_t)acc;
}

/* A binary operation on integers of `bits` bits (values sign-extended to
   64 bits); the caller truncates the result to the dtype.  Division by zero
   and INT_MIN / -1 follow XLA: x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN,
   INT_MIN % -1 = 0. */
static int64_t bin_i(int op, int64_t a, int64_t b, int bits) {
  switch (op) {
  case B_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
  case B_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
  case B_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
  case B_DIV: return b == 0 ? -1 : b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
  case B_REM: return b == 0 ? a : b == -1 ? 0 : a % b;
  case B_POW: return ipow(a, b);
  case B_MAX: return a > b ? a : b;
  case B_MIN: return a < b ? a : b;
  case B_AND: return a & b;
  case B_OR: return a | b;
  case B_XOR: return a ^ b;
  case B_SHL: return b < 0 || b >= bits ? 0 : (int64_t)((uint64_t)a << b);
  case B_SHRA: return b < 0 || b >= bits ? (a < 0 ? -1 : 0) : a >> b;
  case B_SHRL: {
    uint64_t u = bits == 64 ? (uint64_t)a : (uint64_t)a & ((UINT64_C(1) << bits) - 1);
    return b < 0 || b >= bits ? 0 : (int64_t)(u >> b);
  }
  default: return 0;
  }
}

/* A comparison of floats (NaN compares unequal to everything). */
static bool cmp_f(int op, double a, double b) {
  switch (op) {
  case C_EQ: return a == b;
  case C_NE: return a != b;
  case C_LT: return a < b;
  case C_LE: return a <= b;
  case C_GT: return a > b;
  default: return a >= b;
  }
}

/* A comparison of integers (and bools as 0/1). */
static bool cmp_i(int op, int64_t a, int64_t b) {
  switch (op) {
  case C_EQ: return a == b;
  case C_NE: return a != b;
  case C_LT: return a < b;
  case C_LE: return a <= b;
  case C_GT: return a > b;
  default: return a >= b;
  }
}

/* A unary operation on floats (computed in double). */
static double un_f(int op, double x) {
  switch (op) {
  case U_NEG: return -x;
  case U_ABS: return fabs(x);
  case U_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
  case U_FLOOR: return floor(x);
  case U_CEIL: return ceil(x);
  case U_ROUND_AWAY: return round(x);
  case U_ROUND_EVEN: return rint(x);
  case U_EXP: return exp(x);
  case U_EXP2: return exp2(x);
  case U_EXPM1: return expm1(x);
  case U_LOG: return log(x);
  case U_LOG1P: return log1p(x);
  case U_TANH: return tanh(x);
  case U_LOGISTIC: return 1.0 / (1.0 + exp(-x));
  case U_SQRT: return sqrt(x);
  case U_RSQRT: return 1.0 / sqrt(x);
  case U_CBRT: return cbrt(x);
  case U_SIN: return sin(x);
  case U_COS: return cos(x);
  case U_TAN: return tan(x);
  case U_ASIN: return asin(x);
  case U_ACOS: return acos(x);
  case U_ATAN: return atan(x);
  case U_SINH: return sinh(x);
  case U_COSH: return cosh(x);
  case U_ASINH: return asinh(x);
  case U_ACOSH: return acosh(x);
  case U_ATANH: return atanh(x);
  case U_ERF: return erf(x);
  case U_ERFC: return erfc(x);
  case U_LGAMMA: {
    int sign;
    return lgamma_r(x, &sign);
  }
  default: return x;
  }
}

/* A unary operation on integers (wrapping; the caller truncates). */
static int64_t un_i(int op, int64_t x) {
  switch (op) {
  case U_NEG: return (int64_t)(0 - (uint64_t)x);
  case U_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
  case U_SIGN: return (x > 0) - (x < 0);
  case U_NOT: return ~x;
  default: return x;
  }
}

/* ---- typed loops ----------------------------------------------------------
** The common operations get one loop per operation and dtype (and per
** broadcasting case), with the operation written out, so the compiler can
** vectorise them.  Their results are bit for bit those of bin_f / bin_i /
** cmp_f / cmp_i above: an f32 + - * / computed in float is the double
** operation rounded once (double has more than twice float's precision);
** f32 max and min go through double exactly as bin_f does; integer
** arithmetic wraps in unsigned arithmetic of the dtype's width, which is
** the 64-bit result truncated.  Which NaN comes out of NaN op NaN is kept
** too: the first operand's, as the generic loops give it.  Everything
** else takes the generic loops. */

static inline double max_np(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a > b ? a : b; }
static inline double min_np(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a < b ? a : b; }

/* o[i] = F(x[i], y[i]) for i < n, a scalar operand (stride 0) broadcast. */
#define EW_LOOP2(TI, TO, F)                                                            \
  do {                                                                                 \
    const TI *restrict x_ = (const TI *)a->data, *restrict y_ = (const TI *)b->data;   \
    TO *restrict o_ = (TO *)r->data;                                                   \
    if (sa && sb) {                                                                    \
      for (int64_t i = 0; i < n; i++) o_[i] = F(x_[i], y_[i]);                         \
    } else if (sa) {                                                                   \
      const TI v_ = y_[0];                                                             \
      for (int64_t i = 0; i < n; i++) o_[i] = F(x_[i], v_);                            \
    } else if (sb) {                                                                   \
      const TI u_ = x_[0];                                                             \
      if (u_ != u_) { /* NaN: the result of each; the loop may commute F */            \
        const TO w_ = F(u_, u_);                                                       \
        for (int64_t i = 0; i < n; i++) o_[i] = w_;                                    \
      } else {                                                                         \
        for (int64_t i = 0; i < n; i++) o_[i] = F(u_, y_[i]);                          \
      }                                                                                \
    } else {                                                                           \
      const TI u_ = x_[0], v_ = y_[0];                                                 \
      for (int64_t i = 0; i < n; i++) o_[i] = F(u_, v_);                               \
    }                                                                                  \
  } while (0)

#define OP_ADD(p, q) ((p) + (q))
#define OP_SUB(p, q) ((p) - (q))
#define OP_MUL(p, q) ((p) * (q))
#define OP_DIV(p, q) ((p) / (q))
#define OP_MAXF32(p, q) ((float)max_np((double)(p), (double)(q)))
#define OP_MINF32(p, q) ((float)min_np((double)(p), (double)(q)))
#define OP_MAXF64(p, q) max_np((p), (q))
#define OP_MINF64(p, q) min_np((p), (q))
#define OP_MAXI(p, q) ((p) > (q) ? (p) : (q))
#define OP_MINI(p, q) ((p) < (q) ? (p) : (q))
#define OP_AND(p, q) ((p) & (q))
#define OP_OR(p, q) ((p) | (q))
#define OP_XOR(p, q) ((p) ^ (q))
#define OP_ANDB(p, q) ((uint8_t)(((p) & (q)) != 0))
#define OP_ORB(p, q) ((uint8_t)(((p) | (q)) != 0))
#define OP_ADDU32(p, q) ((int32_t)((uint32_t)(p) + (uint32_t)(q)))
#define OP_SUBU32(p, q) ((int32_t)((uint32_t)(p) - (uint32_t)(q)))
#define OP_MULU32(p, q) ((int32_t)((uint32_t)(p) * (uint32_t)(q)))
#define OP_ADDU64(p, q) ((int64_t)((uint64_t)(p) + (uint64_t)(q)))
#define OP_SUBU64(p, q) ((int64_t)((uint64_t)(p) - (uint64_t)(q)))
#define OP_MULU64(p, q) ((int64_t)((uint64_t)(p) * (uint64_t)(q)))
#define OP_EQ(p, q) ((uint8_t)((p) == (q)))
#define OP_NE(p, q) ((uint8_t)((p) != (q)))
#define OP_LT(p, q) ((uint8_t)((p) < (q)))
#define OP_LE(p, q) ((uint8_t)((p) <= (q)))
#define OP_GT(p, q) ((uint8_t)((p) > (q)))
#define OP_GE(p, q) ((uint8_t)((p) >= (q)))

#define CMP_CASES(T)                                                                   \
  case C_EQ: EW_LOOP2(T, uint8_t, OP_EQ); return true;                                 \
  case C_NE: EW_LOOP2(T, uint8_t, OP_NE); return true;                                 \
  case C_LT: EW_LOOP2(T, uint8_t, OP_LT); return true;                                 \
  case C_LE: EW_LOOP2(T, uint8_t, OP_LE); return true;                                 \
  case C_GT: EW_LOOP2(T, uint8_t, OP_GT); return true;                                 \
  case C_GE: EW_LOOP2(T, uint8_t, OP_GE); return true;
#define FLOAT_CASES(T, MAX, MIN)                                                       \
  case B_ADD: EW_LOOP2(T, T, OP_ADD); return true;                                     \
  case B_SUB: EW_LOOP2(T, T, OP_SUB); return true;                                     \
  case B_MUL: EW_LOOP2(T, T, OP_MUL); return true;                                     \
  case B_DIV: EW_LOOP2(T, T, OP_DIV); return true;                                     \
  case B_MAX: EW_LOOP2(T, T, MAX); return true;                                        \
  case B_MIN: EW_LOOP2(T, T, MIN); return true;                                        \
  CMP_CASES(T)
#define INT_CASES(T, U)                                                                \
  case B_ADD: EW_LOOP2(T, T, OP_ADD##U); return true;                                  \
  case B_SUB: EW_LOOP2(T, T, OP_SUB##U); return true;                                  \
  case B_MUL: EW_LOOP2(T, T, OP_MUL##U); return true;                                  \
  case B_MAX: EW_LOOP2(T, T, OP_MAXI); return true;                                    \
  case B_MIN: EW_LOOP2(T, T, OP_MINI); return true;                                    \
  case B_AND: EW_LOOP2(T, T, OP_AND); return true;                                     \
  case B_OR: EW_LOOP2(T, T, OP_OR); return true;                                       \
  case B_XOR: EW_LOOP2(T, T, OP_XOR); return true;                                     \
  CMP_CASES(T)

/* The typed loop of op on a's dtype, if it has one; false: none. */
static bool ew_binary_typed(int op, const Array *a, const Array *b, Array *r, int64_t n, bool sa, bool sb) {
  switch ((DType)a->dt) {
  case DT_F32:
    switch (op) { FLOAT_CASES(float, OP_MAXF32, OP_MINF32) default: return false; }
  case DT_F64:
    switch (op) { FLOAT_CASES(double, OP_MAXF64, OP_MINF64) default: return false; }
  case DT_I32:
    switch (op) { INT_CASES(int32_t, U32) default: return false; }
  case DT_I64:
    switch (op) { INT_CASES(int64_t, U64) default: return false; }
  case DT_BOOL:
    switch (op) {
    case B_AND: EW_LOOP2(uint8_t, uint8_t, OP_ANDB); return true;
    case B_OR: EW_LOOP2(uint8_t, uint8_t, OP_ORB); return true;
    CMP_CASES(uint8_t)
    default: return false;
    }
  default:
    return false;
  }
}

/* Applies a binary or comparison op elementwise: r = a op b.  a and b have
   the same dtype; a rank-0 operand broadcasts against r's shape. */
static void ew_binary_seq(int op, const Array *a, const Array *b, Array *r) {
  int64_t n = r->size, sa = a->rank || r->rank == 0 ? 1 : 0, sb = b->rank || r->rank == 0 ? 1 : 0;
  if (ew_binary_typed(op, a, b, r, n, sa, sb)) return;
  bool cmp = op >= C_EQ && op <= C_GE;
  char kd = dtype_kinds[a->dt];
  int bits = dtype_sizes[a->dt] * 8;
  switch ((DType)a->dt) {
#define X(tag, nm, np, sz, T, kind)                                                     \
  case DT_##tag: {                                                                      \
    const T *x = (const T *)a->data, *y = (const T *)b->data;                           \
    if (cmp) {                                                                          \
      uint8_t *o = (uint8_t *)r->data;                                                  \
      if (kd == 'F')                                                                    \
        for (int64_t i = 0; i < n; i++) o[i] = cmp_f(op, (double)x[i * sa], (double)y[i * sb]); \
      else                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = cmp_i(op, (int64_t)x[i * sa], (int64_t)y[i * sb]); \
    } else {                                                                            \
      T *o = (T *)r->data;                                                              \
      if (DT_##tag == DT_F32)                                                           \
        for (int64_t i = 0; i < n; i++) o[i] = (T)bin_f32(op, (float)x[i * sa], (float)y[i * sb]); \
      else if (kd == 'F')                                                               \
        for (int64_t i = 0; i < n; i++) o[i] = (T)bin_f(op, (double)x[i * sa], (double)y[i * sb]); \
      else if (kd == 'B')                                                               \
        for (int64_t i = 0; i < n; i++)                                                 \
          o[i] = (T)(bin_i(op, (int64_t)x[i * sa], (int64_t)y[i * sb], 1) != 0);         \
      else                                                                              \
        for (int64_t i = 0; i < n; i++)                                                 \
          o[i] = (T)bin_i(op, (int64_t)x[i * sa], (int64_t)y[i * sb], bits);             \
    }                                                                                   \
    break;                                                                              \
  }
    SHM_DTYPES(X)
#undef X
  default: break;
  }
}

/* Applies a unary op elementwise: r = op(a), r of a's shape (and dtype,
   except for U_ISFINITE, whose result is bool). */
/* o[i] = E, with v the element x[i] converted to VT. */
#define EW_LOOP1(T, VT, E)                                                             \
  do {                                                                                 \
    const T *restrict x_ = (const T *)a->data;                                         \
    T *restrict o_ = (T *)r->data;                                                     \
    for (int64_t i = 0; i < n; i++) {                                                  \
      VT v = (VT)x_[i];                                                                \
      o_[i] = (T)(E);                                                                  \
    }                                                                                  \
  } while (0)

/* The typed loops of the unary float operations: each the expression of
   un_f, computed in double and rounded once. */
#define UNARY_FLOAT_CASES(T)                                                           \
  case U_NEG: EW_LOOP1(T, double, -v); return true;                                    \
  case U_ABS: EW_LOOP1(T, double, fabs(v)); return true;                               \
  case U_SIGN: EW_LOOP1(T, double, v > 0 ? 1.0 : v < 0 ? -1.0 : v); return true;       \
  case U_COPY: EW_LOOP1(T, double, v); return true;                                    \
  case U_FLOOR: EW_LOOP1(T, double, floor(v)); return true;                            \
  case U_CEIL: EW_LOOP1(T, double, ceil(v)); return true;                              \
  case U_ROUND_AWAY: EW_LOOP1(T, double, round(v)); return true;                       \
  case U_ROUND_EVEN: EW_LOOP1(T, double, rint(v)); return true;                        \
  case U_EXP: EW_LOOP1(T, double, exp(v)); return true;                                \
  case U_EXP2: EW_LOOP1(T, double, exp2(v)); return true;                              \
  case U_EXPM1: EW_LOOP1(T, double, expm1(v)); return true;                            \
  case U_LOG: EW_LOOP1(T, double, log(v)); return true;                                \
  case U_LOG1P: EW_LOOP1(T, double, log1p(v)); return true;                            \
  case U_TANH: EW_LOOP1(T, double, tanh(v)); return true;                              \
  case U_LOGISTIC: EW_LOOP1(T, double, 1.0 / (1.0 + exp(-v))); return true;            \
  case U_SQRT: EW_LOOP1(T, double, sqrt(v)); return true;                              \
  case U_RSQRT: EW_LOOP1(T, double, 1.0 / sqrt(v)); return true;                       \
  case U_SIN: EW_LOOP1(T, double, sin(v)); return true;                                \
  case U_COS: EW_LOOP1(T, double, cos(v)); return true;

/* The typed loops of the unary integer operations: un_i's expressions. */
#define UNARY_INT_CASES(T)                                                             \
  case U_NEG: EW_LOOP1(T, int64_t, (int64_t)(0 - (uint64_t)v)); return true;          \
  case U_ABS: EW_LOOP1(T, int64_t, v < 0 ? (int64_t)(0 - (uint64_t)v) : v); return true; \
  case U_SIGN: EW_LOOP1(T, int64_t, (v > 0) - (v < 0)); return true;                   \
  case U_NOT: EW_LOOP1(T, int64_t, ~v); return true;                                   \
  case U_COPY: EW_LOOP1(T, int64_t, v); return true;

/* f32 tanh, the one transcendental function that needs speed (it is
   every layer of a small network): the library's tanh in double, called
   per element, costs more than all the rest of an elementwise equation on
   small blocks.  Here its results come bit for bit as before, each
   (float)tanh((double)x), but mostly without calling it: a branch-free
   double approximation t (relative error below 2^-51 in tests, 2^-46
   bounded) that loops vectorise, kept when every double within
   |t| 2^-40 of it rounds to the same float -- the library's tanh(x), good
   to a few ulps of double, is among those, and rounding is monotonic, so
   it would round to that float too.  Else (about 1 element in 2^15, and
   |x| > 20, NaN) the library's tanh itself.  Checked against the library
   for all 2^32 floats. */

/* tanh(x) for |x| <= 20 (anything beyond: the caller does not use it) as
   expm1(2|x|) / (expm1(2|x|) + 2) with the sign of x.  expm1(y):
   y = k ln2 + r with |r| <= ln2/2 (k by the round-to-integer trick, ln2
   in two parts), e^r - 1 by its Taylor series to r^13, then
   2^k (e^r - 1) + (2^k - 1), which cancels nothing. */
static inline double tanh_approx(double x) {
  double y = 2 * fabs(x);
  double kd = y * 0x1.71547652b82fep0 + 0x1.8p52;
  uint64_t ku;
  memcpy(&ku, &kd, sizeof ku);
  kd -= 0x1.8p52;
  double r = (y - kd * 0x1.62e42fefa3800p-1) - kd * 0x1.ef35793c7673p-45;
  double q = r * (1 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720
             + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (1.0 / 3628800
             + r * (1.0 / 39916800 + r * (1.0 / 479001600 + r * (1.0 / 6227020800.0)))))))))))));
  uint64_t sb = (ku + 1023) << 52;   /* 2^k: k is in the low bits of ku */
  double scale;
  memcpy(&scale, &sb, sizeof scale);
  double em = scale * q + (scale - 1);
  return copysign(em / (em + 2), x);
}

/* Whether the float t rounds to is uncertain (see above), or x is out of
   tanh_approx's range. */
#define TANH_UNSURE(t, x) \
  (((float)((t) - fabs(t) * 0x1p-40) != (float)((t) + fabs(t) * 0x1p-40)) | !islessequal(fabs(x), 20.0))

/* In pieces of 256, by loops that vectorise but the last, which is rare. */
static void tanh_f32(const float *x, float *o, int64_t n) {
  double t[256];
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    int64_t m = n - i0 < 256 ? n - i0 : 256;
    const float *xs = x + i0;
    float *os = o + i0;
    for (int64_t i = 0; i < m; i++) t[i] = (double)xs[i];
    for (int64_t i = 0; i < m; i++) t[i] = tanh_approx(t[i]);
    int unsure = 0;
    for (int64_t i = 0; i < m; i++) {
      os[i] = (float)t[i];
      unsure |= TANH_UNSURE(t[i], (double)xs[i]);
    }
    if (unsure)
      for (int64_t i = 0; i < m; i++)
        if (TANH_UNSURE(t[i], (double)xs[i])) os[i] = (float)tanh((double)xs[i]);
  }
}

/* The typed loop of op on a's dtype, if it has one; false: none. */
static bool ew_unary_typed(int op, const Array *a, Array *r, int64_t n) {
  if (op == U_TANH && a->dt == DT_F32) {
    tanh_f32((const float *)a->data, (float *)r->data, n);
    return true;
  }
  switch ((DType)a->dt) {
  case DT_F32: switch (op) { UNARY_FLOAT_CASES(float) default: return false; }
  case DT_F64: switch (op) { UNARY_FLOAT_CASES(double) default: return false; }
  case DT_I32: switch (op) { UNARY_INT_CASES(int32_t) default: return false; }
  case DT_I64: switch (op) { UNARY_INT_CASES(int64_t) default: return false; }
  default: return false;
  }
}

static void ew_unary_seq(int op, const Array *a, Array *r) {
  int64_t n = a->size;
  char kd = dtype_kinds[a->dt];
  if (ew_unary_typed(op, a, r, n)) return;
  switch ((DType)a->dt) {
#define X(tag, nm, np, sz, T, kind)                                                     \
  case DT_##tag: {                                                                      \
    const T *x = (const T *)a->data;                                                    \
    if (op == U_ISFINITE) {                                                             \
      uint8_t *o = (uint8_t *)r->data;                                                  \
      for (int64_t i = 0; i < n; i++) o[i] = kd != 'F' || isfinite((double)x[i]);       \
    } else {                                                                            \
      T *o = (T *)r->data;                                                              \
      if (kd == 'F')                                                                    \
        for (int64_t i = 0; i < n; i++) o[i] = (T)un_f(op, (double)x[i]);               \
      else if (kd == 'B')                                                               \
        for (int64_t i = 0; i < n; i++) o[i] = (T)(op == U_NOT ? !x[i] : x[i]);          \
      else                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = (T)un_i(op, (int64_t)x[i]);              \
    }                                                                                   \
    break;                                                                              \
  }
    SHM_DTYPES(X)
#undef X
  default: break;
  }
}

/* Elementwise work of this many bytes (operands read + result written) or
   more is split over two threads. */
#define EW_PAR_BYTES ((double)(4u << 20))

typedef struct EwSplit {
  int op;
  const Array *a, *b;   /* b NULL: a unary op */
  Array *r;
} EwSplit;

/* x restricted to elements [lo, lo + len) of the result; an operand that
   broadcasts (a scalar against an array) stays whole. */
static Array ew_range(const Array *x, const Array *r, int64_t lo, int64_t len) {
  Array v = *x;
  if (x->rank == 0 && r->rank != 0) return v;
  v.data = (char *)x->data + lo * dtype_sizes[x->dt];
  v.size = len;
  return v;
}

static void ew_half(void *ctx, int64_t half) {
  EwSplit *j = ctx;
  int64_t n = j->r->size, lo = half ? n / 2 : 0, len = half ? n - n / 2 : n / 2;
  Array a = ew_range(j->a, j->r, lo, len), r = ew_range(j->r, j->r, lo, len);
  if (j->b) {
    Array b = ew_range(j->b, j->r, lo, len);
    ew_binary_seq(j->op, &a, &b, &r);
  } else {
    ew_unary_seq(j->op, &a, &r);
  }
}

static double ew_bytes(const Array *a, const Array *b, const Array *r) {
  double n = (double)r->size;
  return n * (dtype_sizes[r->dt] + dtype_sizes[a->dt] * (a->rank || !r->rank) +
              (b ? dtype_sizes[b->dt] * (b->rank || !r->rank) : 0));
}

/* r = a op b (b NULL: r = op a), on two threads when it is big. */
static void ew_run(int op, const Array *a, const Array *b, Array *r) {
  EwSplit j = {op, a, b, r};
  if (r->size >= 2 && ew_bytes(a, b, r) >= EW_PAR_BYTES) par_for(2, ew_half, &j, PAR_BYTES);
  else if (b) ew_binary_seq(op, a, b, r);
  else ew_unary_seq(op, a, r);
}

static void ew_binary(int op, const Array *a, const Array *b, Array *r) { ew_run(op, a, b, r); }
static void ew_unary(int op, const Array *a, Array *r) { ew_run(op, a, NULL, r); }

/* =========================================================================
** Elementwise: rules and kernels
** ========================================================================= */

/* Binary elementwise rule: equal dtypes (weak literals adopt), equal shapes
   or a scalar; the result has dtype bool when `to_bool`.  Fills nothing. */
static bool binary_rule(RuleCtx *cx, Type *in, Type *out, int kinds, bool to_bool) {
  static const int idx[2] = {0, 1};
  int dt = 0;
  if (!unify_dtypes(cx, in, idx, 2, &dt)) return false;
  if (!check_kind(cx, &in[0], kinds)) return false;
  if (!unify_shapes(cx, in, idx, 2, out)) return false;
  out->dt = (uint8_t)(to_bool ? DT_BOOL : dt);
  return true;
}

/* add sub mul div rem: numbers.  Fills nothing. */
static bool rule_bin_num(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_NUM, false); }
/* max min: any dtype.  Fills nothing. */
static bool rule_bin_any(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_ANY, false); }
/* and or xor: bools and integers (bitwise).  Fills nothing. */
static bool rule_bin_logic(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_LOGIC, false); }
/* shift_left shift_right_*: integers.  Fills nothing. */
static bool rule_bin_int(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_INT, false); }
/* atan2 nextafter: floats.  Fills nothing. */
static bool rule_bin_float(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_FLOAT, false); }
/* eq ne lt le gt ge: any dtype, result bool.  Fills nothing. */
static bool rule_cmp(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_ANY, true); }

/* pow x y: float ** float, int ** int (same dtype), or float ** integer
   (any integer dtype; the result has x's dtype, f32 for a float literal).
   Fills nothing. */
static bool rule_pow(RARGS) {
  (void)nin; (void)at;
  if (!in[1].weak && dtype_is_float((DType)in[0].dt) && dtype_is_int((DType)in[1].dt)) {
    static const int idx[2] = {0, 1};
    if (!unify_shapes(cx, in, idx, 2, out)) return false;
    out->dt = in[0].dt;
    return true;
  }
  return binary_rule(cx, in, out, K_NUM, false);
}

/* The kernel of every binary primitive: r = in[0] op in[1]; a pow with an
   integer exponent of a float base first converts the exponent. */
static void binary_kernel(int op, Array *const *in, Array **out, const Type *outt) {
  Array *r = new_arr(&outt[0]);
  if (in[1]->dt != in[0]->dt) {
    Array *b = arr_convert(in[1], (DType)in[0]->dt);
    ew_binary(op, in[0], b, r);
    arr_unref(b);
  } else {
    ew_binary(op, in[0], in[1], r);
  }
  out[0] = r;
}

#define BINARY_KERNELS(X)                                                     \
  X(add, B_ADD) X(sub, B_SUB) X(mul, B_MUL) X(div, B_DIV) X(rem, B_REM)       \
  X(pow, B_POW) X(max, B_MAX) X(min, B_MIN) X(and, B_AND) X(or, B_OR)         \
  X(xor, B_XOR) X(atan2, B_ATAN2) X(nextafter, B_NEXTAFTER) X(shl, B_SHL)     \
  X(shra, B_SHRA) X(shrl, B_SHRL) X(eq, C_EQ) X(ne, C_NE) X(lt, C_LT)         \
  X(le, C_LE) X(gt, C_GT) X(ge, C_GE)

/* kern_add, kern_sub, ...: binary_kernel with the primitive's op. */
#define X(name, op)                                                           \
  static void kern_##name(KARGS) {                                            \
    (void)at; (void)nin;                                                      \
    binary_kernel(op, in, out, outt);                                         \
  }
BINARY_KERNELS(X)
#undef X

/* Unary elementwise rule: the operand's dtype must be one of `kinds`; the
   result has its type (bool when `to_bool`).  Fills nothing. */
static bool unary_rule(RuleCtx *cx, Type *in, Type *out, int kinds, bool to_bool) {
  if (!check_kind(cx, &in[0], kinds)) return false;
  *out = in[0];
  out->weak = false;
  if (to_bool) out->dt = DT_BOOL;
  return true;
}

/* exp exp2 expm1 log log1p tanh logistic sqrt rsqrt cbrt sin cos tan:
   floats; JAX's `accuracy` parameter is accepted and ignored.  Fills
   nothing. */
static bool rule_un_float(RARGS) {
  (void)nin; (void)at;
  ignore_param(cx, "accuracy");
  return unary_rule(cx, in, out, K_FLOAT, false);
}
/* floor ceil erf erfc lgamma and the inverse and hyperbolic trigonometric
   functions: floats.  Fills nothing. */
static bool rule_un_float_plain(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_FLOAT, false); }
/* neg sign square: numbers.  Fills nothing. */
static bool rule_un_num(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_NUM, false); }
/* not: bools and integers.  Fills nothing. */
static bool rule_un_logic(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_LOGIC, false); }
/* copy: any dtype.  Fills nothing. */
static bool rule_un_any(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_ANY, false); }
/* is_finite: floats, result bool.  Fills nothing. */
static bool rule_is_finite(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_FLOAT, true); }

/* abs: integers and floats (JAX: signed integers).  Fills nothing. */
static bool rule_abs(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_NUM, false); }

/* round[rounding_method=0]: 0 rounds half away from zero (lax.round's
   default), 1 half to even (jnp.round).  Fills i[0] = rounding_method. */
static bool rule_round(RARGS) {
  (void)nin;
  int64_t m;
  if (!rule_int(cx, "rounding_method", false, 0, &m)) return false;
  if (m != 0 && m != 1)
    return rule_param_error(cx, "rounding_method",
                            "round rounding_method must be 0 (away from zero) or 1 (to nearest even), got %lld",
                            (long long)m);
  at->i[0] = m;
  return unary_rule(cx, in, out, K_FLOAT, false);
}

/* The kernel of every unary primitive: r = op(in[0]). */
static void unary_kernel(int op, Array *const *in, Array **out, const Type *outt) {
  Array *r = new_arr(&outt[0]);
  ew_unary(op, in[0], r);
  out[0] = r;
}

#define UNARY_KERNELS(X)                                                          \
  X(neg, U_NEG) X(abs, U_ABS) X(sign, U_SIGN) X(not, U_NOT) X(copy, U_COPY)       \
  X(floor, U_FLOOR) X(ceil, U_CEIL) X(is_finite, U_ISFINITE) X(exp, U_EXP)        \
  X(exp2, U_EXP2) X(expm1, U_EXPM1) X(log, U_LOG) X(log1p, U_LOG1P)               \
  X(tanh, U_TANH) X(logistic, U_LOGISTIC) X(sqrt, U_SQRT) X(rsqrt, U_RSQRT)       \
  X(cbrt, U_CBRT) X(sin, U_SIN) X(cos, U_COS) X(tan, U_TAN) X(asin, U_ASIN)       \
  X(acos, U_ACOS) X(atan, U_ATAN) X(sinh, U_SINH) X(cosh, U_COSH)                 \
  X(asinh, U_ASINH) X(acosh, U_ACOSH) X(atanh, U_ATANH) X(erf, U_ERF)             \
  X(erfc, U_ERFC) X(lgamma, U_LGAMMA)

/* kern_neg, kern_exp, ...: unary_kernel with the primitive's op. */
#define X(name, op)                                                           \
  static void kern_##name(KARGS) {                                            \
    (void)at; (void)nin;                                                      \
    unary_kernel(op, in, out, outt);                                          \
  }
UNARY_KERNELS(X)
#undef X

/* round: half away from zero or half to even, by i[0]. */
static void kern_round(KARGS) {
  (void)nin;
  unary_kernel(at->i[0] ? U_ROUND_EVEN : U_ROUND_AWAY, in, out, outt);
}

/* square: x * x. */
static void kern_square(KARGS) {
  (void)at; (void)nin;
  Array *r = new_arr(&outt[0]);
  ew_binary(B_MUL, in[0], in[0], r);
  out[0] = r;
}

/* integer_pow[y=N]: numbers; integers may not take a negative power.
   Fills i[0] = y. */
static bool rule_integer_pow(RARGS) {
  (void)nin;
  int64_t y;
  if (!rule_int(cx, "y", true, 0, &y)) return false;
  if (!check_kind(cx, &in[0], K_NUM)) return false;
  if (y < 0 && dtype_is_int((DType)in[0].dt))
    return rule_error(cx, "integers cannot be raised to negative powers, got integer_pow(%s, %lld)",
                      dtype_names[in[0].dt], (long long)y);
  at->i[0] = y;
  return unary_rule(cx, in, out, K_NUM, false);
}

/* integer_pow: JAX's square-and-multiply on whole arrays (so f32 results
   round exactly as JAX's chain of f32 multiplications), then 1/acc for a
   negative power. */
static void kern_integer_pow(KARGS) {
  (void)nin;
  int64_t y = at->i[0];
  bool recip = y < 0;
  uint64_t e = recip ? 0 - (uint64_t)y : (uint64_t)y;
  Array *x = arr_ref(in[0]), *acc = NULL;
  if (e == 0) {
    acc = new_arr(&outt[0]);
    for (int64_t i = 0; i < acc->size; i++) arr_seti(acc, i, 1);
  }
  while (e > 0) {
    if (e & 1) {
      if (!acc) acc = arr_ref(x);
      else {
        Array *t = new_arr(&outt[0]);
        ew_binary(B_MUL, acc, x, t);
        arr_unref(acc);
        acc = t;
      }
    }
    e >>= 1;
    if (e > 0) {
      Array *t = new_arr(&outt[0]);
      ew_binary(B_MUL, x, x, t);
      arr_unref(x);
      x = t;
    }
  }
  arr_unref(x);
  if (recip) {
    Array *one = arr_scalar_i((DType)outt[0].dt, 1), *t = new_arr(&outt[0]);
    ew_binary(B_DIV, one, acc, t);
    arr_unref(one);
    arr_unref(acc);
    acc = t;
  } else if (acc == in[0]) {
    /* y == 1: the result must be a fresh array */
    Array *t = arr_convert(acc, (DType)acc->dt);
    arr_unref(acc);
    acc = t;
  }
  out[0] = acc;
}

/* convert_element_type[new_dtype, weak_type=False, sharding=None]: any dtype
   to any.  Fills dtype = new_dtype. */
static bool rule_convert(RARGS) {
  (void)nin;
  int dt = 0;
  bool weak;
  if (!rule_dtype(cx, "new_dtype", true, -1, &dt)) return false;
  if (!rule_bool(cx, "weak_type", false, &weak)) return false;
  ignore_param(cx, "sharding");
  if (dt < 0) return rule_param_error(cx, "new_dtype", "convert_element_type needs a new_dtype");
  at->dtype = dt;
  *out = in[0];
  out->weak = false;
  out->dt = (uint8_t)dt;
  return true;
}

/* Float to integer as XLA converts: truncation toward zero, saturating at
   the integer range, NaN to 0. */
static int64_t f2i(double v, int64_t lo, int64_t hi) {
  if (isnan(v)) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (int64_t)v;
}

/* Converts n elements of dtype `sdt` at src into r (dtype r->dt). */
static void convert_elems(int sdt, const void *src, Array *r) {
  int64_t n = r->size;
  bool fl = dtype_is_float((DType)sdt);
  switch ((DType)sdt) {
#define X(tag, nm, np, sz, T, kind)                                                     \
  case DT_##tag: {                                                                      \
    const T *x = (const T *)src;                                                        \
    switch ((DType)r->dt) {                                                             \
    case DT_BOOL:                                                                       \
      for (int64_t i = 0; i < n; i++) ((uint8_t *)r->data)[i] = x[i] != 0;              \
      break;                                                                            \
    case DT_I32:                                                                        \
      for (int64_t i = 0; i < n; i++)                                                   \
        ((int32_t *)r->data)[i] = (int32_t)(fl ? f2i((double)x[i], INT32_MIN, INT32_MAX) \
                                               : (int64_t)x[i]);                        \
      break;                                                                            \
    case DT_I64:                                                                        \
      for (int64_t i = 0; i < n; i++)                                                   \
        ((int64_t *)r->data)[i] = fl ? f2i((double)x[i], INT64_MIN, INT64_MAX) : (int64_t)x[i]; \
      break;                                                                            \
    case DT_F32:                                                                        \
      for (int64_t i = 0; i < n; i++) ((float *)r->data)[i] = (float)x[i];              \
      break;                                                                            \
    case DT_F64:                                                                        \
      for (int64_t i = 0; i < n; i++) ((double *)r->data)[i] = (double)x[i];            \
      break;                                                                            \
    default: break;                                                                     \
    }                                                                                   \
    break;                                                                              \
  }
    SHM_DTYPES(X)
#undef X
  default: break;
  }
}

/* convert_element_type: elementwise conversion. */
static void kern_convert(KARGS) {
  (void)at; (void)nin;
  Array *r = new_arr(&outt[0]);
  convert_elems(in[0]->dt, in[0]->data, r);
  out[0] = r;
}

/* clamp lo x hi (lax.clamp's order): equal dtypes, lo and hi scalars or of
   x's shape; the result has x's type.  Fills nothing. */
static bool rule_clamp(RARGS) {
  (void)nin; (void)at;
  static const int idx[3] = {0, 1, 2};
  int dt = 0;
  if (!unify_dtypes(cx, in, idx, 3, &dt)) return false;
  if (!check_kind(cx, &in[1], K_ANY)) return false;
  for (int k = 0; k < 3; k += 2)
    if (in[k].rank != 0 && !type_same_shape(&in[k], &in[1])) {
      TyBuf a, b;
      return rule_error(cx, "clamp %s %s must be a scalar or have the shape of the operand %s",
                        k ? "max" : "min", ty(&a, &in[k]), ty(&b, &in[1]));
    }
  *out = in[1];
  out->weak = false;
  out->dt = (uint8_t)dt;
  return true;
}

/* clamp: min(max(x, lo), hi), NaN-propagating like max and min. */
static void kern_clamp(KARGS) {
  (void)at; (void)nin;
  Array *t = new_arr(&outt[0]), *r = new_arr(&outt[0]);
  ew_binary(B_MAX, in[1], in[0], t);
  ew_binary(B_MIN, t, in[2], r);
  arr_unref(t);
  out[0] = r;
}

/* select_n which case0 case1 ...: `which` bool (at most two cases) or
   integer, a scalar or of the cases' shape; cases of one dtype (weak
   literals adopt) and one shape, scalar cases broadcast (to the shape of
   `which` when every case is a scalar).  Fills nothing. */
static bool rule_select_n(RARGS) {
  (void)at;
  int ncase = nin - 1, dt = 0;
  int idx[64];
  TyBuf a, b;
  if (ncase < 1) return rule_error(cx, "select_n needs at least one case");
  if (ncase > 64) return rule_error(cx, "select_n supports at most 64 cases, got %d", ncase);
  if (dtype_is_float((DType)in[0].dt))
    return rule_error(cx, "select_n which must be boolean or integer, got %s", ty(&a, &in[0]));
  if (in[0].dt == DT_BOOL && ncase > 2)
    return rule_error(cx, "select_n with a boolean which takes at most two cases, got %d", ncase);
  for (int k = 0; k < ncase; k++) idx[k] = k + 1;
  if (!unify_dtypes(cx, in, idx, ncase, &dt)) return false;
  if (!unify_shapes(cx, in, idx, ncase, out)) return false;
  if (out->rank == 0 && in[0].rank != 0) {
    /* every case a scalar: they broadcast to the shape of `which` */
    out->rank = in[0].rank;
    memcpy(out->shape, in[0].shape, sizeof(int64_t) * in[0].rank);
  }
  if (in[0].rank != 0 && (in[0].rank != out->rank ||
                          memcmp(in[0].shape, out->shape, sizeof(int64_t) * out->rank) != 0)) {
    Type c = *out;
    c.dt = (uint8_t)dt;
    return rule_error(cx, "select_n which %s must be a scalar or have the shape of the cases %s",
                      ty(&a, &in[0]), ty(&b, &c));
  }
  out->dt = (uint8_t)dt;
  return true;
}

/* select_n: element i comes from case which[i] (clamped into range, as
   XLA's tree of selects does), copied bytewise. */
static void kern_select_n(KARGS) {
  (void)at;
  Array *r = new_arr(&outt[0]);
  const Array *w = in[0];
  size_t es = dtype_sizes[r->dt];
  int ncase = nin - 1;
  int64_t sw = w->rank ? 1 : 0;
  for (int64_t i = 0; i < r->size; i++) {
    int64_t c = arr_geti(w, i * sw);
    if (c < 0) c = 0;
    if (c >= ncase) c = ncase - 1;
    const Array *src = in[1 + c];
    int64_t j = src->rank ? i : 0;
    memcpy((char *)r->data + (size_t)i * es, (const char *)src->data + (size_t)j * es, es);
  }
  out[0] = r;
}

/* allclose[rtol=1e-5, atol=1e-8, equal_nan=False] a b: equal dtypes (weak
   literals adopt), equal shapes or a scalar; result bool[].  Fills
   f[0] = rtol, f[1] = atol, b[0] = equal_nan. */
static bool rule_allclose(RARGS) {
  (void)nin;
  static const int idx[2] = {0, 1};
  int dt = 0;
  Type shp;
  if (!rule_float(cx, "rtol", false, 1e-5, &at->f[0])) return false;
  if (!rule_float(cx, "atol", false, 1e-8, &at->f[1])) return false;
  if (!rule_bool(cx, "equal_nan", false, &at->b[0])) return false;
  if (!unify_dtypes(cx, in, idx, 2, &dt)) return false;
  if (!unify_shapes(cx, in, idx, 2, &shp)) return false;
  set_type(out, DT_BOOL, 0, NULL);
  return true;
}

/* allclose: every |a - b| <= atol + rtol * |b| (NumPy's isclose, in the
   operands' float type; infinities are close only to themselves, NaN to
   nothing unless equal_nan). */
static void kern_allclose(KARGS) {
  (void)nin; (void)outt;
  const Array *a = in[0], *b = in[1];
  int64_t n = a->rank ? a->size : b->size;
  int64_t sa = a->rank ? 1 : 0, sb = b->rank ? 1 : 0;
  bool f32 = a->dt == DT_F32, ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    double x = arr_getf(a, i * sa), y = arr_getf(b, i * sb);
    if (isnan(x) || isnan(y)) ok = at->b[0] && isnan(x) && isnan(y);
    else if (isinf(x) || isinf(y)) ok = x == y;
    else if (f32) {
      float d = fabsf((float)x - (float)y);
      ok = d <= (float)at->f[1] + (float)at->f[0] * fabsf((float)y);
    } else
      ok = fabs(x - y) <= at->f[1] + at->f[0] * fabs(y);
  }
  out[0] = arr_scalar_i(DT_BOOL, ok);
}

/* =========================================================================
** Reductions and scans
** ========================================================================= */

/* The identity of a reduction op on floats. */
static double red_init_f(int op) {
  switch (op) {
  case B_MUL: return 1.0;
  case B_MAX: return -INFINITY;
  case B_MIN: return INFINITY;
  default: return 0.0;
  }
}

/* The identity of a reduction op on integers or bools of dtype dt. */
static int64_t red_init_i(int op, int dt) {
  bool b = dt == DT_BOOL, i32 = dt == DT_I32;
  switch (op) {
  case B_MUL: return 1;
  case B_MAX: return b ? 0 : i32 ? INT32_MIN : INT64_MIN;
  case B_MIN: return b ? 1 : i32 ? INT32_MAX : INT64_MAX;
  case B_AND: return b ? 1 : -1;
  default: return 0;
  }
}

/* Folds `a` over the axes `axes` (distinct, in range) with the binary op
   into r, whose shape is a's without those axes.  Elements are folded in
   row-major order; floats accumulate in double, integers in 64 bits. */
static void red_axes(int op, const Array *a, const IntList *axes, Array *r) {
  int rank = a->rank, bits = dtype_sizes[a->dt] * 8;
  bool fl = dtype_is_float((DType)a->dt), red[SHM_MAXRANK] = {false};
  int64_t ostr[SHM_MAXRANK], idx[SHM_MAXRANK] = {0}, s = 1, o = 0;
  for (int k = 0; k < axes->n; k++) red[axes->v[k]] = true;
  for (int d = rank - 1; d >= 0; d--) {
    ostr[d] = red[d] ? 0 : s;
    if (!red[d]) s *= a->shape[d];
  }
  if (r->size == 0) return;
  if (axes->n == 0) {
    memcpy(r->data, a->data, arr_nbytes(a));
    return;
  }
  double *af = fl ? mem_alloc(sizeof(double) * (size_t)r->size) : NULL;
  int64_t *ai = fl ? NULL : mem_alloc(sizeof(int64_t) * (size_t)r->size);
  for (int64_t j = 0; j < r->size; j++) {
    if (fl) af[j] = red_init_f(op);
    else ai[j] = red_init_i(op, a->dt);
  }
  for (int64_t i = 0; i < a->size; i++) {
    if (fl) af[o] = bin_f(op, af[o], arr_getf(a, i));
    else ai[o] = bin_i(op, ai[o], arr_geti(a, i), bits);
    for (int d = rank - 1; d >= 0; d--) {
      o += ostr[d];
      if (++idx[d] < a->shape[d]) break;
      o -= ostr[d] * a->shape[d];
      idx[d] = 0;
    }
  }
  for (int64_t j = 0; j < r->size; j++) {
    if (fl) arr_setf(r, j, af[j]);
    else arr_seti(r, j, ai[j]);
  }
  mem_free(af);
  mem_free(ai);
}

/* Splits a shape around `axis`: outer (dims before), n (the axis), inner
   (dims after). */
static void split_at(const Array *a, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < axis; d++) *outer *= a->shape[d];
  for (int d = axis + 1; d < a->rank; d++) *inner *= a->shape[d];
  *n = a->shape[axis];
}

/* Cumulative fold along `axis`: each element of r is the fold of a's
   elements up to it (from the end when `reverse`). */
static void scan_axis(int op, const Array *a, int axis, bool reverse, Array *r) {
  int64_t outer, n, inner;
  int bits = dtype_sizes[a->dt] * 8;
  bool fl = dtype_is_float((DType)a->dt);
  split_at(a, axis, &outer, &n, &inner);
  for (int64_t p = 0; p < outer; p++)
    for (int64_t q = 0; q < inner; q++) {
      double af = red_init_f(op);
      int64_t ai = red_init_i(op, a->dt);
      for (int64_t k0 = 0; k0 < n; k0++) {
        int64_t k = reverse ? n - 1 - k0 : k0, i = (p * n + k) * inner + q;
        if (fl) {
          af = bin_f(op, af, arr_getf(a, i));
          arr_setf(r, i, af);
        } else {
          ai = bin_i(op, ai, arr_geti(a, i), bits);
          arr_seti(r, i, ai);
        }
      }
    }
}

/* Index of the first maximum (or minimum) along `axis`; NaN counts as
   the extreme, as in JAX and NumPy. */
static void arg_axis(bool is_max, const Array *a, int axis, Array *r) {
  int64_t outer, n, inner;
  bool fl = dtype_is_float((DType)a->dt);
  split_at(a, axis, &outer, &n, &inner);
  for (int64_t p = 0; p < outer; p++)
    for (int64_t q = 0; q < inner; q++) {
      int64_t best = 0, base = p * n * inner + q;
      if (fl) {
        double bv = arr_getf(a, base);
        for (int64_t k = 1; k < n && !isnan(bv); k++) {
          double v = arr_getf(a, base + k * inner);
          if (isnan(v) || (is_max ? v > bv : v < bv)) bv = v, best = k;
        }
      } else {
        int64_t bv = arr_geti(a, base);
        for (int64_t k = 1; k < n; k++) {
          int64_t v = arr_geti(a, base + k * inner);
          if (is_max ? v > bv : v < bv) bv = v, best = k;
        }
      }
      arr_seti(r, p * inner + q, best);
    }
}

/* Shared by the reduce_* rules: reads axes (and accepts out_sharding),
   checks the dtype and computes the reduced type.  Fills l[0] = axes. */
static bool reduce_rule(RuleCtx *cx, Type *in, Attrs *at, Type *out, int kinds) {
  IntList ax = {0, NULL};
  if (!rule_ints(cx, "axes", true, &ax)) return false;
  ignore_param(cx, "out_sharding");
  if (!check_kind(cx, &in[0], kinds)) return false;
  if (!check_axes(cx, "axes", &ax, in[0].rank, true, &in[0])) return false;
  at->l[0] = ax;
  int r = 0;
  *out = in[0];
  out->weak = false;
  for (int d = 0; d < in[0].rank; d++) {
    bool gone = false;
    for (int k = 0; k < ax.n; k++) gone |= ax.v[k] == d;
    if (!gone) out->shape[r++] = in[0].shape[d];
  }
  out->rank = (uint8_t)r;
  return true;
}

/* reduce_sum reduce_prod[axes]: numbers.  Fills l[0] = axes. */
static bool rule_reduce_num(RARGS) { (void)nin; return reduce_rule(cx, in, at, out, K_NUM); }
/* reduce_max reduce_min[axes]: any dtype.  Fills l[0] = axes. */
static bool rule_reduce_any(RARGS) { (void)nin; return reduce_rule(cx, in, at, out, K_ANY); }
/* reduce_and reduce_or reduce_xor[axes]: bools and integers.  Fills l[0] = axes. */
static bool rule_reduce_logic(RARGS) { (void)nin; return reduce_rule(cx, in, at, out, K_LOGIC); }

#define REDUCE_KERNELS(X)                                                      \
  X(reduce_sum, B_ADD) X(reduce_prod, B_MUL) X(reduce_max, B_MAX)              \
  X(reduce_min, B_MIN) X(reduce_and, B_AND) X(reduce_or, B_OR)                 \
  X(reduce_xor, B_XOR)

/* kern_reduce_sum, ...: red_axes with the primitive's op over l[0]. */
#define X(name, op)                                                           \
  static void kern_##name(KARGS) {                                            \
    (void)nin;                                                                \
    Array *r = new_arr(&outt[0]);                                             \
    red_axes(op, in[0], &at->l[0], r);                                        \
    out[0] = r;                                                               \
  }
REDUCE_KERNELS(X)
#undef X

/* argmax argmin[axes=(d,), index_dtype=i32]: one axis, not empty; the
   result drops it and has the integer index_dtype.
   Fills l[0] = axes, i[0] = the axis, dtype = index_dtype. */
static bool rule_argminmax(RARGS) {
  (void)nin;
  IntList ax = {0, NULL};
  int idt;
  TyBuf tb;
  LsBuf lb;
  if (!rule_ints(cx, "axes", true, &ax)) return false;
  if (!rule_dtype(cx, "index_dtype", false, DT_I32, &idt)) return false;
  if (idt < 0 || !dtype_is_int((DType)idt))
    return rule_param_error(cx, "index_dtype", "%s index_dtype must be an integer dtype, got %s",
                            rule_prim_name(cx), idt < 0 ? "None" : dtype_names[idt]);
  if (ax.n != 1)
    return rule_param_error(cx, "axes", "%s takes exactly one axis, got axes=%s",
                            rule_prim_name(cx), lsl(&lb, &ax));
  if (!check_axes(cx, "axes", &ax, in[0].rank, true, &in[0])) return false;
  if (in[0].shape[ax.v[0]] < 1)
    return rule_error(cx, "%s requires a non-empty reduced dimension, got %s and axis %lld",
                      rule_prim_name(cx), ty(&tb, &in[0]), (long long)ax.v[0]);
  at->l[0] = ax;
  at->i[0] = ax.v[0];
  at->dtype = idt;
  *out = in[0];
  out->weak = false;
  out->dt = (uint8_t)idt;
  out->rank--;
  for (int d = (int)ax.v[0]; d < out->rank; d++) out->shape[d] = in[0].shape[d + 1];
  return true;
}

/* argmax: first index of the maximum along i[0]. */
static void kern_argmax(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  arg_axis(true, in[0], (int)at->i[0], r);
  out[0] = r;
}

/* argmin: first index of the minimum along i[0]. */
static void kern_argmin(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  arg_axis(false, in[0], (int)at->i[0], r);
  out[0] = r;
}

/* Shared by the cumulative rules: cum*[axis=0, reverse=False]; the result
   has the operand's type.  Fills i[0] = axis (normalised), b[0] = reverse. */
static bool cum_rule(RuleCtx *cx, Type *in, Attrs *at, Type *out, int kinds) {
  int64_t axis;
  TyBuf tb;
  if (!rule_int(cx, "axis", false, 0, &axis)) return false;
  if (!rule_bool(cx, "reverse", false, &at->b[0])) return false;
  if (!check_kind(cx, &in[0], kinds)) return false;
  int64_t a = norm_axis(axis, in[0].rank);
  if (a < 0)
    return rule_error(cx, "%s axis %lld out of range for %s", rule_prim_name(cx),
                      (long long)axis, ty(&tb, &in[0]));
  rule_axis_index(cx, "axis", &axis, in[0].rank);
  at->i[0] = a;
  *out = in[0];
  out->weak = false;
  return true;
}

/* cumsum cumprod[axis, reverse]: numbers.  Fills i[0] = axis, b[0] = reverse. */
static bool rule_cum_num(RARGS) { (void)nin; return cum_rule(cx, in, at, out, K_NUM); }
/* cummax cummin[axis, reverse]: any dtype.  Fills i[0] = axis, b[0] = reverse. */
static bool rule_cum_any(RARGS) { (void)nin; return cum_rule(cx, in, at, out, K_ANY); }

#define SCAN_KERNELS(X) X(cumsum, B_ADD) X(cumprod, B_MUL) X(cummax, B_MAX) X(cummin, B_MIN)

/* kern_cumsum, ...: scan_axis with the primitive's op along i[0]. */
#define X(name, op)                                                           \
  static void kern_##name(KARGS) {                                            \
    (void)nin;                                                                \
    Array *r = new_arr(&outt[0]);                                             \
    scan_axis(op, in[0], (int)at->i[0], at->b[0], r);                         \
    out[0] = r;                                                               \
  }
SCAN_KERNELS(X)
#undef X

/* =========================================================================
** Shape ops: the copy engine
** ========================================================================= */

/* Copies one element of es bytes (constant sizes become plain moves). */
static inline void copy_elem(char *d, const char *s, size_t es) {
  switch (es) {
  case 1: *d = *s; break;
  case 4: memcpy(d, s, 4); break;
  case 8: memcpy(d, s, 8); break;
  default: memcpy(d, s, es); break;
  }
}

/* Copies the elements of a box of the given shape from src to dst.  dstr
   and sstr are each layout's strides in bytes (0 repeats an element, a
   negative stride runs backwards); rows that are contiguous on both sides
   move with one memcpy. */
static void copy_strided(char *dst, const int64_t *dstr, const char *src, const int64_t *sstr,
                         int rank, const int64_t *shape, size_t es) {
  int64_t idx[SHM_MAXRANK] = {0}, doff = 0, soff = 0;
  for (int d = 0; d < rank; d++)
    if (shape[d] <= 0) return;
  if (rank == 0) {
    copy_elem(dst, src, es);
    return;
  }
  int last = rank - 1;
  int64_t len = shape[last], ds = dstr[last], ss = sstr[last];
  bool run = ds == (int64_t)es && ss == (int64_t)es;
  for (;;) {
    if (run) memcpy(dst + doff, src + soff, (size_t)len * es);
    else
      for (int64_t k = 0; k < len; k++) copy_elem(dst + doff + k * ds, src + soff + k * ss, es);
    int d;
    for (d = last - 1; d >= 0; d--) {
      doff += dstr[d];
      soff += sstr[d];
      if (++idx[d] < shape[d]) break;
      doff -= dstr[d] * shape[d];
      soff -= sstr[d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/* Row-major strides of a shape, in bytes for elements of es bytes. */
static void byte_strides(int rank, const int64_t *shape, size_t es, int64_t *st) {
  int64_t s = (int64_t)es;
  for (int d = rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= shape[d];
  }
}

/* A copy of a with its dimensions permuted: result dim k is a's dim
   perm[k].  The identity permutation returns a new reference to a. */
static Array *permuted(Array *a, const int *perm) {
  bool id = true;
  int64_t shape[SHM_MAXRANK], ist[SHM_MAXRANK], sst[SHM_MAXRANK], dst[SHM_MAXRANK];
  size_t es = dtype_sizes[a->dt];
  for (int k = 0; k < a->rank; k++) id &= perm[k] == k;
  if (id) return arr_ref(a);
  byte_strides(a->rank, a->shape, es, ist);
  for (int k = 0; k < a->rank; k++) {
    shape[k] = a->shape[perm[k]];
    sst[k] = ist[perm[k]];
  }
  Array *r = arr_new((DType)a->dt, a->rank, shape);
  byte_strides(r->rank, r->shape, es, dst);
  copy_strided(r->data, dst, a->data, sst, r->rank, r->shape, es);
  return r;
}

/* A new array of type t holding a's elements in the same order (reshape,
   squeeze, expand_dims). */
static Array *same_elems(const Array *a, const Type *t) {
  Array *r = new_arr(t);
  memcpy(r->data, a->data, arr_nbytes(a));
  return r;
}

/* =========================================================================
** Shape ops: rules and kernels
** ========================================================================= */

/* broadcast_in_dim[shape, broadcast_dimensions, sharding=None]: operand
   dimension i becomes result dimension broadcast_dimensions[i] (strictly
   increasing), whose size it must equal unless it is 1.
   Fills l[0] = shape, l[1] = broadcast_dimensions. */
static bool rule_broadcast_in_dim(RARGS) {
  (void)nin;
  IntList shp = {0, NULL}, bd = {0, NULL};
  TyBuf a, b;
  LsBuf lb;
  if (!rule_ints(cx, "shape", true, &shp)) return false;
  if (!rule_ints(cx, "broadcast_dimensions", true, &bd)) return false;
  ignore_param(cx, "sharding");
  if (!check_shape_param(cx, "shape", &shp)) return false;
  set_type(out, in[0].dt, shp.n, shp.v);
  if (bd.n != in[0].rank)
    return rule_error(cx, "broadcast_in_dim broadcast_dimensions %s must have one entry per dimension of the operand %s",
                      lsl(&lb, &bd), ty(&a, &in[0]));
  for (int i = 0; i < bd.n; i++) {
    if (bd.v[i] < 0 || bd.v[i] >= shp.n)
      return rule_error(cx, "broadcast_in_dim broadcast_dimensions %s out of range for the result %s",
                        lsl(&lb, &bd), ty(&b, out));
    if (i > 0 && bd.v[i] <= bd.v[i - 1])
      return rule_param_error(cx, "broadcast_dimensions",
                              "broadcast_in_dim broadcast_dimensions %s must be strictly increasing",
                              lsl(&lb, &bd));
    if (in[0].shape[i] != 1 && in[0].shape[i] != shp.v[bd.v[i]])
      return rule_error(cx, "broadcast_in_dim cannot broadcast %s to %s: operand dimension %d has size %lld, "
                        "result dimension %lld has size %lld",
                        ty(&a, &in[0]), ty(&b, out), i, (long long)in[0].shape[i],
                        (long long)bd.v[i], (long long)shp.v[bd.v[i]]);
  }
  at->l[0] = shp;
  at->l[1] = bd;
  return true;
}

/* broadcast_in_dim: a strided copy whose source strides are 0 along the
   new and the stretched dimensions. */
static void kern_broadcast_in_dim(KARGS) {
  (void)nin;
  const Array *a = in[0];
  Array *r = new_arr(&outt[0]);
  size_t es = dtype_sizes[r->dt];
  int64_t ist[SHM_MAXRANK], sst[SHM_MAXRANK] = {0}, dst[SHM_MAXRANK];
  byte_strides(a->rank, a->shape, es, ist);
  byte_strides(r->rank, r->shape, es, dst);
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != 1) sst[at->l[1].v[i]] = ist[i];
  copy_strided(r->data, dst, a->data, sst, r->rank, r->shape, es);
  out[0] = r;
}

/* Checks that l is a permutation of 0..rank-1; `what` names it. */
static bool check_perm(RuleCtx *cx, const char *what, const IntList *l, int rank) {
  LsBuf lb;
  uint32_t seen = 0;
  bool ok = l->n == rank;
  for (int i = 0; ok && i < l->n; i++) {
    ok = l->v[i] >= 0 && l->v[i] < rank && !(seen & (1u << l->v[i]));
    if (ok) seen |= 1u << l->v[i];
  }
  if (ok) return true;
  if (rank == 0)
    return rule_error(cx, "%s %s %s is not a permutation of the dimensions of a scalar (it must be ())",
                      rule_prim_name(cx), what, lsl(&lb, l));
  return rule_error(cx, "%s %s %s is not a permutation of 0..%d", rule_prim_name(cx), what,
                    lsl(&lb, l), rank - 1);
}

/* reshape[new_sizes, dimensions=None, sharding=None]: same element count;
   `dimensions`, when given, permutes the operand first (lax.reshape).
   Fills l[0] = new_sizes, l[1] = dimensions (empty for None). */
static bool rule_reshape(RARGS) {
  (void)nin;
  IntList ns = {0, NULL}, dims = {0, NULL};
  TyBuf a, b;
  if (!rule_ints(cx, "new_sizes", true, &ns)) return false;
  if (!rule_ints(cx, "dimensions", false, &dims)) return false;
  ignore_param(cx, "sharding");
  if (!check_shape_param(cx, "new_sizes", &ns)) return false;
  set_type(out, in[0].dt, ns.n, ns.v);
  if (dims.n && !check_perm(cx, "dimensions", &dims, in[0].rank)) return false;
  int64_t n0 = type_size(&in[0]), n1 = type_size(out);
  if (n0 != n1)
    return rule_error(cx, "reshape cannot turn %s into %s: sizes %lld and %lld differ",
                      ty(&a, &in[0]), ty(&b, out), (long long)n0, (long long)n1);
  at->l[0] = ns;
  at->l[1] = dims;
  return true;
}

/* reshape: the elements in order (after the `dimensions` permutation). */
static void kern_reshape(KARGS) {
  (void)nin;
  if (at->l[1].n) {
    int perm[SHM_MAXRANK];
    for (int k = 0; k < at->l[1].n; k++) perm[k] = (int)at->l[1].v[k];
    Array *t = permuted(in[0], perm);
    out[0] = same_elems(t, &outt[0]);
    arr_unref(t);
  } else {
    out[0] = same_elems(in[0], &outt[0]);
  }
}

/* transpose[permutation]: result dimension k is operand dimension
   permutation[k].  Fills l[0] = permutation. */
static bool rule_transpose(RARGS) {
  (void)nin;
  IntList p = {0, NULL};
  if (!rule_ints(cx, "permutation", true, &p)) return false;
  if (!check_perm(cx, "permutation", &p, in[0].rank)) return false;
  *out = in[0];
  out->weak = false;
  for (int k = 0; k < p.n; k++) out->shape[k] = in[0].shape[p.v[k]];
  at->l[0] = p;
  return true;
}

/* transpose: a permuted copy. */
static void kern_transpose(KARGS) {
  (void)nin; (void)outt;
  int perm[SHM_MAXRANK];
  for (int k = 0; k < at->l[0].n; k++) perm[k] = (int)at->l[0].v[k];
  Array *r = permuted(in[0], perm);
  if (r == in[0]) {
    arr_unref(r);
    r = same_elems(in[0], &outt[0]);
  }
  out[0] = r;
}

/* squeeze[dimensions]: removes the listed dimensions (negative count from
   the end), each of size 1.  Fills l[0] = dimensions (normalised). */
static bool rule_squeeze(RARGS) {
  (void)nin;
  IntList d = {0, NULL};
  TyBuf a;
  if (!rule_ints(cx, "dimensions", true, &d)) return false;
  if (!check_axes(cx, "dimensions", &d, in[0].rank, true, &in[0])) return false;
  for (int i = 0; i < d.n; i++)
    if (in[0].shape[d.v[i]] != 1)
      return rule_error(cx, "squeeze cannot remove dimension %lld of %s: its size is %lld, not 1",
                        (long long)d.v[i], ty(&a, &in[0]), (long long)in[0].shape[d.v[i]]);
  int r = 0;
  *out = in[0];
  out->weak = false;
  for (int k = 0; k < in[0].rank; k++) {
    bool gone = false;
    for (int i = 0; i < d.n; i++) gone |= d.v[i] == k;
    if (!gone) out->shape[r++] = in[0].shape[k];
  }
  out->rank = (uint8_t)r;
  at->l[0] = d;
  return true;
}

/* expand_dims[dimensions]: inserts dimensions of size 1 at the listed
   positions of the result (negative count from the result's end).
   Fills l[0] = dimensions (normalised). */
static bool rule_expand_dims(RARGS) {
  (void)nin;
  IntList d = {0, NULL};
  if (!rule_ints(cx, "dimensions", true, &d)) return false;
  int rank = in[0].rank + d.n;
  if (!check_rank(cx, rank)) return false;
  if (!check_axes(cx, "dimensions", &d, rank, true, NULL)) return false;
  *out = in[0];
  out->weak = false;
  out->rank = (uint8_t)rank;
  for (int k = 0, j = 0; k < rank; k++) {
    bool added = false;
    for (int i = 0; i < d.n; i++) added |= d.v[i] == k;
    out->shape[k] = added ? 1 : in[0].shape[j++];
  }
  at->l[0] = d;
  return true;
}

/* squeeze, expand_dims: the same elements under a new shape. */
static void kern_same_elems(KARGS) {
  (void)at; (void)nin;
  out[0] = same_elems(in[0], &outt[0]);
}

/* rev[dimensions]: reverses the listed dimensions.  Fills l[0] = dimensions. */
static bool rule_rev(RARGS) {
  (void)nin;
  IntList d = {0, NULL};
  if (!rule_ints(cx, "dimensions", true, &d)) return false;
  if (!check_axes(cx, "dimensions", &d, in[0].rank, true, &in[0])) return false;
  *out = in[0];
  out->weak = false;
  at->l[0] = d;
  return true;
}

/* rev: a copy reading the reversed dimensions backwards. */
static void kern_rev(KARGS) {
  (void)nin;
  const Array *a = in[0];
  Array *r = new_arr(&outt[0]);
  size_t es = dtype_sizes[r->dt];
  int64_t st[SHM_MAXRANK], sst[SHM_MAXRANK], off = 0;
  byte_strides(a->rank, a->shape, es, st);
  for (int k = 0; k < a->rank; k++) sst[k] = st[k];
  for (int i = 0; i < at->l[0].n; i++) {
    int k = (int)at->l[0].v[i];
    if (a->shape[k] > 0) off += (a->shape[k] - 1) * st[k];
    sst[k] = -st[k];
  }
  if (r->size) copy_strided(r->data, st, (const char *)a->data + off, sst, r->rank, r->shape, es);
  out[0] = r;
}

/* concatenate[dimension] x...: one rank (at least 1) and dtype (weak
   literals adopt), equal sizes except along `dimension`.
   Fills i[0] = dimension. */
static bool rule_concatenate(RARGS) {
  int64_t dim;
  int dt = 0, idx[256];
  TyBuf a, b;
  if (!rule_int(cx, "dimension", true, 0, &dim)) return false;
  if (nin > 256) return rule_error(cx, "concatenate supports at most 256 operands, got %d", nin);
  for (int k = 0; k < nin; k++) idx[k] = k;
  if (!unify_dtypes(cx, in, idx, nin, &dt)) return false;
  if (in[0].rank == 0) return rule_error(cx, "concatenate cannot join scalars (%s)", ty(&a, &in[0]));
  rule_axis_index(cx, "dimension", &dim, in[0].rank);     /* negative: from the end */
  if (dim < 0 || dim >= in[0].rank)
    return rule_error(cx, "concatenate dimension %lld out of range for %s", (long long)dim,
                      ty(&a, &in[0]));
  *out = in[0];
  out->weak = false;
  out->dt = (uint8_t)dt;
  for (int k = 1; k < nin; k++) {
    bool ok = in[k].rank == in[0].rank;
    for (int d = 0; ok && d < in[0].rank; d++) ok = d == dim || in[k].shape[d] == in[0].shape[d];
    if (!ok)
      return rule_error(cx, "concatenate operands must have equal shapes except in dimension %lld, got %s and %s",
                        (long long)dim, ty(&a, &in[0]), ty(&b, &in[k]));
    out->shape[dim] += in[k].shape[dim];
  }
  at->i[0] = dim;
  return true;
}

/* concatenate: each operand is a strided copy into its slab of the result. */
static void kern_concatenate(KARGS) {
  Array *r = new_arr(&outt[0]);
  size_t es = dtype_sizes[r->dt];
  int dim = (int)at->i[0];
  int64_t dst[SHM_MAXRANK], sst[SHM_MAXRANK], pos = 0;
  byte_strides(r->rank, r->shape, es, dst);
  for (int k = 0; k < nin; k++) {
    byte_strides(in[k]->rank, in[k]->shape, es, sst);
    copy_strided((char *)r->data + pos * dst[dim], dst, in[k]->data, sst, r->rank, in[k]->shape, es);
    pos += in[k]->shape[dim];
  }
  out[0] = r;
}

/* pad[padding_config=((lo, hi, interior), ...)] x padding_value: a scalar
   padding value of x's dtype (a weak literal adopts it); negative lo/hi
   crop; interior >= 0.  Fills l[0] = padding_config (3 numbers per dim). */
static bool rule_pad(RARGS) {
  (void)nin;
  static const int idx[2] = {0, 1};
  IntList pc = {0, NULL};
  int dt = 0;
  TyBuf a;
  if (!rule_int_tuples(cx, "padding_config", true, 3, &pc)) return false;
  if (!unify_dtypes(cx, in, idx, 2, &dt)) return false;
  if (in[1].rank != 0)
    return rule_error(cx, "pad padding_value must be a scalar, got %s", ty(&a, &in[1]));
  if (pc.n != 3 * in[0].rank)
    return rule_error(cx, "pad padding_config has %d entries for the operand %s of rank %d",
                      pc.n / 3, ty(&a, &in[0]), in[0].rank);
  *out = in[0];
  out->weak = false;
  out->dt = (uint8_t)dt;
  for (int d = 0; d < in[0].rank; d++) {
    int64_t lo = pc.v[3 * d], hi = pc.v[3 * d + 1], it = pc.v[3 * d + 2], n = in[0].shape[d];
    if (it < 0)
      return rule_param_error(cx, "padding_config", "pad interior padding must be non-negative, got %lld",
                              (long long)it);
    int64_t m = lo + hi + n + (n > 0 ? (n - 1) * it : 0);
    if (m < 0)
      return rule_error(cx, "pad would make dimension %d of %s negative (%lld)", d, ty(&a, &in[0]),
                        (long long)m);
    out->shape[d] = m;
  }
  at->l[0] = pc;
  return true;
}

/* pad: fill with the padding value, then copy the operand elements that
   land inside the result to their strided positions. */
static void kern_pad(KARGS) {
  (void)nin;
  const Array *a = in[0];
  Array *r = new_arr(&outt[0]);
  size_t es = dtype_sizes[r->dt];
  int64_t dst[SHM_MAXRANK], ist[SHM_MAXRANK], zero[SHM_MAXRANK] = {0};
  int64_t box[SHM_MAXRANK], pdst[SHM_MAXRANK], doff = 0, soff = 0;
  byte_strides(r->rank, r->shape, es, dst);
  byte_strides(a->rank, a->shape, es, ist);
  copy_strided(r->data, dst, in[1]->data, zero, r->rank, r->shape, es);
  for (int d = 0; d < a->rank; d++) {
    int64_t lo = at->l[0].v[3 * d], step = at->l[0].v[3 * d + 2] + 1, n = a->shape[d];
    int64_t m = r->shape[d];
    int64_t i0 = lo >= 0 ? 0 : (-lo + step - 1) / step;
    int64_t top = m - 1 - lo;       /* the largest i with lo + i*step <= m-1 is top/step */
    int64_t i1 = top < 0 ? -1 : top / step;
    if (i1 > n - 1) i1 = n - 1;
    box[d] = i1 - i0 + 1;
    if (box[d] <= 0) {
      out[0] = r;
      return;
    }
    doff += (lo + i0 * step) * dst[d];
    soff += i0 * ist[d];
    pdst[d] = step * dst[d];
  }
  copy_strided((char *)r->data + doff, pdst, (const char *)a->data + soff, ist, a->rank, box, es);
  out[0] = r;
}

/* =========================================================================
** Indexing
** ========================================================================= */

/* slice[start_indices, limit_indices, strides=None]: 0 <= start <= limit <=
   size and strides >= 1 per dimension.  Fills l[0] = start_indices,
   l[1] = limit_indices, l[2] = strides (all 1 when None). */
static bool rule_slice(RARGS) {
  (void)nin;
  IntList st = {0, NULL}, li = {0, NULL}, sd = {0, NULL};
  TyBuf a;
  LsBuf b1, b2;
  int r = in[0].rank;
  if (!rule_ints(cx, "start_indices", true, &st)) return false;
  if (!rule_ints(cx, "limit_indices", true, &li)) return false;
  if (!rule_ints(cx, "strides", false, &sd)) return false;
  if (st.n != r || li.n != r || (sd.n && sd.n != r))
    return rule_error(cx, "slice of %s needs %d start, limit and stride entries, got start_indices=%s, limit_indices=%s",
                      ty(&a, &in[0]), r, lsl(&b1, &st), lsl(&b2, &li));
  if (!sd.n) {
    sd.n = r;
    sd.v = r ? rule_alloc_ints(cx, r) : NULL;
    for (int d = 0; d < r; d++) sd.v[d] = 1;
  }
  *out = in[0];
  out->weak = false;
  for (int d = 0; d < r; d++) {
    if (sd.v[d] < 1)
      return rule_param_error(cx, "strides", "slice strides must be positive, got %s", lsl(&b1, &sd));
    if (st.v[d] < 0 || st.v[d] > in[0].shape[d] || li.v[d] > in[0].shape[d] || li.v[d] < st.v[d])
      return rule_error(cx, "slice start_indices=%s, limit_indices=%s out of range for %s "
                        "(need 0 <= start <= limit <= size in every dimension)",
                        lsl(&b1, &st), lsl(&b2, &li), ty(&a, &in[0]));
    out->shape[d] = (li.v[d] - st.v[d] + sd.v[d] - 1) / sd.v[d];
  }
  at->l[0] = st;
  at->l[1] = li;
  at->l[2] = sd;
  return true;
}

/* slice: a strided copy from the start corner. */
static void kern_slice(KARGS) {
  (void)nin;
  const Array *a = in[0];
  Array *r = new_arr(&outt[0]);
  size_t es = dtype_sizes[r->dt];
  int64_t ist[SHM_MAXRANK], sst[SHM_MAXRANK], dst[SHM_MAXRANK], off = 0;
  byte_strides(a->rank, a->shape, es, ist);
  byte_strides(r->rank, r->shape, es, dst);
  for (int d = 0; d < a->rank; d++) {
    off += at->l[0].v[d] * ist[d];
    sst[d] = at->l[2].v[d] * ist[d];
  }
  if (r->size) copy_strided(r->data, dst, (const char *)a->data + off, sst, r->rank, r->shape, es);
  out[0] = r;
}

/* Checks the scalar integer start-index operands in[first..first+rank-1]. */
static bool check_starts(RuleCtx *cx, Type *in, int nin, int first, const Type *op) {
  TyBuf a, b;
  if (nin - first != op->rank)
    return rule_error(cx, "%s of %s needs %d scalar start indices, got %d", rule_prim_name(cx),
                      ty(&a, op), op->rank, nin - first);
  for (int k = first; k < nin; k++) {
    if (in[k].rank != 0 || !dtype_is_int((DType)in[k].dt))
      return rule_error(cx, "%s start indices must be integer scalars, got %s", rule_prim_name(cx),
                        ty(&b, &in[k]));
  }
  return true;
}

/* A start index: in[k]'s value clamped into [0, dim - size] (JAX). */
static int64_t clamp_start(const Array *s, int64_t dim, int64_t size) {
  int64_t v = arr_geti(s, 0);
  if (v > dim - size) v = dim - size;
  if (v < 0) v = 0;
  return v;
}

/* dynamic_slice[slice_sizes] x start...: one scalar integer start per
   dimension; 0 <= slice_sizes <= size.  Fills l[0] = slice_sizes. */
static bool rule_dynamic_slice(RARGS) {
  IntList ss = {0, NULL};
  TyBuf a;
  LsBuf b;
  if (!rule_ints(cx, "slice_sizes", true, &ss)) return false;
  if (!check_starts(cx, in, nin, 1, &in[0])) return false;
  if (ss.n != in[0].rank)
    return rule_error(cx, "dynamic_slice slice_sizes %s must have one entry per dimension of %s",
                      lsl(&b, &ss), ty(&a, &in[0]));
  for (int d = 0; d < ss.n; d++)
    if (ss.v[d] < 0 || ss.v[d] > in[0].shape[d])
      return rule_error(cx, "dynamic_slice slice_sizes %s do not fit in %s", lsl(&b, &ss),
                        ty(&a, &in[0]));
  *out = in[0];
  out->weak = false;
  for (int d = 0; d < ss.n; d++) out->shape[d] = ss.v[d];
  at->l[0] = ss;
  return true;
}

/* dynamic_slice: a strided copy from the clamped start corner. */
static void kern_dynamic_slice(KARGS) {
  (void)nin;
  const Array *a = in[0];
  Array *r = new_arr(&outt[0]);
  size_t es = dtype_sizes[r->dt];
  int64_t ist[SHM_MAXRANK], dst[SHM_MAXRANK], off = 0;
  byte_strides(a->rank, a->shape, es, ist);
  byte_strides(r->rank, r->shape, es, dst);
  for (int d = 0; d < a->rank; d++)
    off += clamp_start(in[1 + d], a->shape[d], at->l[0].v[d]) * ist[d];
  if (r->size) copy_strided(r->data, dst, (const char *)a->data + off, ist, r->rank, r->shape, es);
  out[0] = r;
}

/* dynamic_update_slice x update start...: update of x's dtype (a weak
   literal adopts it) and rank, no larger in any dimension; one scalar
   integer start per dimension.  Fills nothing. */
static bool rule_dynamic_update_slice(RARGS) {
  (void)at;
  static const int idx[2] = {0, 1};
  int dt = 0;
  TyBuf a, b;
  if (nin < 2) return rule_error(cx, "dynamic_update_slice needs an operand and an update");
  if (!unify_dtypes(cx, in, idx, 2, &dt)) return false;
  bool ok = in[1].rank == in[0].rank;
  for (int d = 0; ok && d < in[0].rank; d++) ok = in[1].shape[d] <= in[0].shape[d];
  if (!ok)
    return rule_error(cx, "dynamic_update_slice update %s does not fit in the operand %s",
                      ty(&a, &in[1]), ty(&b, &in[0]));
  if (!check_starts(cx, in, nin, 2, &in[0])) return false;
  *out = in[0];
  out->weak = false;
  out->dt = (uint8_t)dt;
  return true;
}

/* dynamic_update_slice: a copy of x with the update written at the clamped
   start corner. */
static void kern_dynamic_update_slice(KARGS) {
  (void)at; (void)nin;
  const Array *a = in[0], *u = in[1];
  Array *r = same_elems(a, &outt[0]);
  size_t es = dtype_sizes[r->dt];
  int64_t dst[SHM_MAXRANK], ust[SHM_MAXRANK], off = 0;
  byte_strides(r->rank, r->shape, es, dst);
  byte_strides(u->rank, u->shape, es, ust);
  for (int d = 0; d < a->rank; d++)
    off += clamp_start(in[2 + d], a->shape[d], u->shape[d]) * dst[d];
  copy_strided((char *)r->data + off, dst, u->data, ust, u->rank, u->shape, es);
  out[0] = r;
}

/* =========================================================================
** Creation
** ========================================================================= */

/* Reads a numeric parameter and the dtype its literal suggests, for
   arange's and full's default dtype: DT_BOOL, DT_I32 or DT_F32.  The
   parameter readers give only a float, so until the checker can say how
   the literal was written, a value with no fractional part counts as an
   integer (`value=1.0` gives i32; write the dtype to be sure). */
static bool read_number(RuleCtx *cx, const char *key, bool required, double dflt, double *v,
                        int *kind) {
  int k = rule_number_kind(cx, key);
  if (!rule_float(cx, key, required, dflt, v)) return false;
  *kind = k >= 0 ? k : isfinite(*v) && *v == floor(*v) ? DT_I32 : DT_F32;
  return true;
}

/* iota[dtype, shape, dimension=0, sharding=None]: a numeric array counting
   along `dimension`.  Fills dtype, l[0] = shape, i[0] = dimension. */
static bool rule_iota(RARGS) {
  (void)in; (void)nin;
  IntList shp = {0, NULL};
  int64_t dim;
  int dt = 0;
  TyBuf a;
  if (!rule_dtype(cx, "dtype", true, -1, &dt)) return false;
  if (!rule_ints(cx, "shape", true, &shp)) return false;
  if (!rule_int(cx, "dimension", false, 0, &dim)) return false;
  ignore_param(cx, "sharding");
  if (dt < 0) return rule_param_error(cx, "dtype", "iota needs a dtype");
  if (dt == DT_BOOL) return rule_param_error(cx, "dtype", "iota does not accept dtype bool");
  if (!check_shape_param(cx, "shape", &shp)) return false;
  set_type(out, dt, shp.n, shp.v);
  if (dim < 0 || dim >= shp.n)
    return rule_param_error(cx, "dimension", "iota dimension %lld out of range for %s",
                            (long long)dim, ty(&a, out));
  at->dtype = dt;
  at->l[0] = shp;
  at->i[0] = dim;
  return true;
}

/* iota: element value = its index along i[0]. */
static void kern_iota(KARGS) {
  (void)in; (void)nin;
  Array *r = new_arr(&outt[0]);
  int64_t inner = 1, n = r->shape[at->i[0]];
  for (int d = (int)at->i[0] + 1; d < r->rank; d++) inner *= r->shape[d];
  for (int64_t i = 0; i < r->size; i++) arr_seti(r, i, (i / inner) % n);
  out[0] = r;
}

/* arange[start=0, stop, step=1, dtype]: like jnp.arange (NumPy's values:
   element i is start + i*delta with delta = (start+step) - start computed
   in the dtype); dtype defaults to i32 when start, stop and step are
   integers, else f32.  Fills dtype, f[0] = start, f[1] = stop, f[2] = step,
   i[0] = the length. */
static bool rule_arange(RARGS) {
  (void)in; (void)nin;
  double start, stop, step;
  int k0, k1, k2, dt = 0;
  if (!read_number(cx, "start", false, 0, &start, &k0)) return false;
  if (!read_number(cx, "stop", true, 0, &stop, &k1)) return false;
  if (!read_number(cx, "step", false, 1, &step, &k2)) return false;
  if (!rule_dtype(cx, "dtype", false, -1, &dt)) return false;
  /* read again with the default, so `show` spells the chosen dtype out */
  int dflt = k0 == DT_F32 || k1 == DT_F32 || k2 == DT_F32 ? DT_F32 : DT_I32;
  if (dt < 0 && !rule_dtype(cx, "dtype", false, dflt, &dt)) return false;
  if (dt == DT_BOOL) return rule_param_error(cx, "dtype", "arange does not accept dtype bool");
  if (step == 0) return rule_param_error(cx, "step", "arange step must not be zero");
  if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
    return rule_error(cx, "arange needs finite start, stop and step");
  double len = ceil((stop - start) / step);
  if (!(len > 0)) len = 0;
  if (len > (double)(INT64_MAX / 16)) return rule_error(cx, "arange would make an array too large");
  int64_t n = (int64_t)len;
  set_type(out, dt, 1, &n);
  at->dtype = dt;
  at->f[0] = start;
  at->f[1] = stop;
  at->f[2] = step;
  at->i[0] = n;
  return true;
}

/* arange: NumPy's fill, in the dtype's own arithmetic. */
static void kern_arange(KARGS) {
  (void)in; (void)nin;
  Array *r = new_arr(&outt[0]);
  double s = at->f[0], s1 = at->f[0] + at->f[2];
  int64_t n = r->size;
  switch ((DType)r->dt) {
  case DT_F32: {
    float *o = r->data, b0 = (float)s, d = (float)s1 - b0;
    for (int64_t i = 0; i < n; i++) o[i] = i == 1 ? (float)s1 : b0 + (float)i * d;
    break;
  }
  case DT_F64: {
    double *o = r->data, d = s1 - s;
    for (int64_t i = 0; i < n; i++) o[i] = i == 1 ? s1 : s + (double)i * d;
    break;
  }
  default: {
    int64_t b0 = f2i(s, INT64_MIN, INT64_MAX), d = f2i(s1, INT64_MIN, INT64_MAX) - b0;
    for (int64_t i = 0; i < n; i++)
      arr_seti(r, i, (int64_t)((uint64_t)b0 + (uint64_t)i * (uint64_t)d));
    break;
  }
  }
  out[0] = r;
}

/* full[shape, value, dtype]: every element `value`; dtype defaults to f32
   for a float value, i32 for an integer, bool for True/False.
   Fills dtype, l[0] = shape, f[0] = value. */
static bool rule_full(RARGS) {
  (void)in; (void)nin;
  IntList shp = {0, NULL};
  double v;
  int kind, dt = 0;
  if (!rule_ints(cx, "shape", true, &shp)) return false;
  if (!read_number(cx, "value", true, 0, &v, &kind)) return false;
  if (!rule_dtype(cx, "dtype", false, -1, &dt)) return false;
  if (dt < 0 && !rule_dtype(cx, "dtype", false, kind, &dt)) return false;
  if (!check_shape_param(cx, "shape", &shp)) return false;
  set_type(out, dt, shp.n, shp.v);
  at->dtype = dt;
  at->l[0] = shp;
  at->f[0] = v;
  return true;
}

/* full: one value converted to the dtype (floats to integers as
   convert_element_type does), copied everywhere. */
static void kern_full(KARGS) {
  (void)in; (void)nin;
  Array *r = new_arr(&outt[0]), *one = arr_new((DType)outt[0].dt, 0, NULL);
  double v = at->f[0];
  convert_elems(DT_F64, &v, one);
  int64_t dst[SHM_MAXRANK], zero[SHM_MAXRANK] = {0};
  size_t es = dtype_sizes[r->dt];
  byte_strides(r->rank, r->shape, es, dst);
  copy_strided(r->data, dst, one->data, zero, r->rank, r->shape, es);
  arr_unref(one);
  out[0] = r;
}

/* =========================================================================
** dot_general
** ========================================================================= */

/* Checks one operand's contracting and batch dimensions: in range and
   distinct.  `side` is "lhs" or "rhs". */
static bool check_dot_dims(RuleCtx *cx, const char *side, const Type *t, const IntList *c,
                           const IntList *b) {
  TyBuf tb;
  LsBuf lb;
  uint32_t seen = 0;
  for (int w = 0; w < 2; w++) {
    const IntList *l = w ? b : c;
    for (int i = 0; i < l->n; i++) {
      int64_t d = l->v[i];
      if (d < 0 || d >= t->rank)
        return rule_error(cx, "dot_general %s %s dimensions %s out of range for %s", side,
                          w ? "batch" : "contracting", lsl(&lb, l), ty(&tb, t));
      if (seen & (1u << d))
        return rule_error(cx, "dot_general %s dimension %lld of %s is named twice in the dimension numbers",
                          side, (long long)d, ty(&tb, t));
      seen |= 1u << d;
    }
  }
  return true;
}

/* dot_general[dimension_numbers=((lc, rc), (lb, rb)), precision=None,
   preferred_element_type=None, out_sharding=None] lhs rhs: equal dtypes
   (weak literals adopt); paired contracting and batch dimensions of equal
   sizes.  The result's dimensions are the batch dimensions, then lhs's
   free dimensions, then rhs's (in order); its dtype is
   preferred_element_type when given (integer inputs may go to a wider
   integer or to a float, floats to a float no narrower).
   Fills l[0] = lhs contracting, l[1] = rhs contracting, l[2] = lhs batch,
   l[3] = rhs batch, dtype = preferred_element_type (-1 for None). */
static bool rule_dot_general(RARGS) {
  (void)nin;
  static const int idx[2] = {0, 1};
  IntList dn[4];
  int pt = -1, dt = 0;
  TyBuf a, b;
  LsBuf l1, l2;
  memset(dn, 0, sizeof dn);
  if (!rule_dimnums(cx, "dimension_numbers", dn)) return false;
  ignore_param(cx, "precision");
  if (!rule_dtype(cx, "preferred_element_type", false, -1, &pt)) return false;
  ignore_param(cx, "out_sharding");
  if (!unify_dtypes(cx, in, idx, 2, &dt)) return false;
  const Type *L = &in[0], *R = &in[1];
  if (dn[0].n != dn[1].n)
    return rule_error(cx, "dot_general needs as many lhs as rhs contracting dimensions, got %s and %s",
                      lsl(&l1, &dn[0]), lsl(&l2, &dn[1]));
  if (dn[2].n != dn[3].n)
    return rule_error(cx, "dot_general needs as many lhs as rhs batch dimensions, got %s and %s",
                      lsl(&l1, &dn[2]), lsl(&l2, &dn[3]));
  if (!check_dot_dims(cx, "lhs", L, &dn[0], &dn[2])) return false;
  if (!check_dot_dims(cx, "rhs", R, &dn[1], &dn[3])) return false;
  for (int w = 0; w < 2; w++) {
    const IntList *ll = &dn[w ? 2 : 0], *rl = &dn[w ? 3 : 1];
    for (int i = 0; i < ll->n; i++)
      if (L->shape[ll->v[i]] != R->shape[rl->v[i]])
        return rule_error(cx, "dot_general %s dimensions have different sizes: %s and %s (%lld vs %lld)",
                          w ? "batch" : "contracting", ty(&a, L), ty(&b, R),
                          (long long)L->shape[ll->v[i]], (long long)R->shape[rl->v[i]]);
  }
  int rdt = dt;
  if (pt >= 0) {
    bool in_int = dtype_is_int((DType)dt), in_fl = dtype_is_float((DType)dt);
    bool p_int = dtype_is_int((DType)pt), p_fl = dtype_is_float((DType)pt);
    if ((in_int && !p_int && !p_fl) || (in_fl && !p_fl))
      return rule_param_error(cx, "preferred_element_type",
                              "dot_general preferred_element_type %s is incompatible with %s inputs "
                              "(integers may go to integers or floats, floats to floats)",
                              dtype_names[pt], dtype_names[dt]);
    if (((in_int && p_int) || (in_fl && p_fl)) && dtype_sizes[pt] < dtype_sizes[dt])
      return rule_param_error(cx, "preferred_element_type",
                              "dot_general preferred_element_type %s must not be narrower than the input dtype %s",
                              dtype_names[pt], dtype_names[dt]);
    rdt = pt;
  }
  int rank = L->rank + R->rank - 2 * dn[0].n - dn[2].n;
  if (!check_rank(cx, rank)) return false;
  int r = 0;
  for (int i = 0; i < dn[2].n; i++) out->shape[r++] = L->shape[dn[2].v[i]];
  for (int s = 0; s < 2; s++) {
    const Type *t = s ? R : L;
    const IntList *c = &dn[s], *bt = &dn[2 + s];
    for (int d = 0; d < t->rank; d++) {
      bool used = false;
      for (int i = 0; i < c->n; i++) used |= c->v[i] == d;
      for (int i = 0; i < bt->n; i++) used |= bt->v[i] == d;
      if (!used) out->shape[r++] = t->shape[d];
    }
  }
  out->rank = (uint8_t)r;
  out->dt = (uint8_t)rdt;
  for (int k = 0; k < 4; k++) at->l[k] = dn[k];
  at->dtype = pt;
  return true;
}

/* The free dimensions of a rank-`rank` operand (neither contracting nor
   batch), ascending, into fr; returns how many. */
static int free_dims(int rank, const IntList *c, const IntList *b, int *fr) {
  int n = 0;
  for (int d = 0; d < rank; d++) {
    bool used = false;
    for (int i = 0; i < c->n; i++) used |= c->v[i] == d;
    for (int i = 0; i < b->n; i++) used |= b->v[i] == d;
    if (!used) fr[n++] = d;
  }
  return n;
}

/* The permutation made of three runs of dimensions x, y, z, into p; true
   if it is the identity. */
static bool make_perm(int *p, const int *x, int nx, const int *y, int ny, const int *z, int nz) {
  int k = 0;
  bool id = true;
  for (int i = 0; i < nx; i++) p[k++] = x[i];
  for (int i = 0; i < ny; i++) p[k++] = y[i];
  for (int i = 0; i < nz; i++) p[k++] = z[i];
  for (int i = 0; i < k; i++) id &= p[i] == i;
  return id;
}

/* An IntList of dimensions as ints; returns the count. */
static int dims_of(const IntList *l, int *v) {
  for (int i = 0; i < l->n; i++) v[i] = (int)l->v[i];
  return l->n;
}

/* An operand laid out for gemm: if its dimensions are already in order
   `p1` it is used as is, if in order `p2` as is but transposed, otherwise
   it is permuted into order p1. */
static Array *gemm_layout(Array *a, const int *p1, bool id1, bool id2, bool *trans) {
  *trans = false;
  if (id1) return arr_ref(a);
  if (id2) {
    *trans = true;
    return arr_ref(a);
  }
  return permuted(a, p1);
}

/* dot_general: both operands converted to the result dtype and laid out
   as (batch, M, K) and (batch, K, N) blocks; then OpenBLAS sgemm/dgemm per
   batch for floats, and exact 64-bit loops for integers (wrapping to the
   dtype) and bools (or of ands). */
static void kern_dot_general(KARGS) {
  (void)nin;
  const IntList *lc = &at->l[0], *rc = &at->l[1], *lb = &at->l[2], *rb = &at->l[3];
  DType dt = (DType)outt[0].dt;
  Array *A = in[0]->dt == dt ? arr_ref(in[0]) : arr_convert(in[0], dt);
  Array *B = in[1]->dt == dt ? arr_ref(in[1]) : arr_convert(in[1], dt);
  Array *r = new_arr(&outt[0]);
  int lf[SHM_MAXRANK], rf[SHM_MAXRANK], p1[SHM_MAXRANK], p2[SHM_MAXRANK], q1[SHM_MAXRANK],
      q2[SHM_MAXRANK];
  int nlf = free_dims(A->rank, lc, lb, lf), nrf = free_dims(B->rank, rc, rb, rf);
  int64_t nb = 1, M = 1, N = 1, K = 1;
  for (int i = 0; i < lb->n; i++) nb *= A->shape[lb->v[i]];
  for (int i = 0; i < nlf; i++) M *= A->shape[lf[i]];
  for (int i = 0; i < nrf; i++) N *= B->shape[rf[i]];
  for (int i = 0; i < lc->n; i++) K *= A->shape[lc->v[i]];
  int vlc[SHM_MAXRANK], vrc[SHM_MAXRANK], vlb[SHM_MAXRANK], vrb[SHM_MAXRANK];
  int nc = dims_of(lc, vlc), nbd = dims_of(lb, vlb);
  dims_of(rc, vrc);
  dims_of(rb, vrb);
  bool pid1 = make_perm(p1, vlb, nbd, lf, nlf, vlc, nc);   /* (batch, M, K) */
  bool pid2 = make_perm(p2, vlb, nbd, vlc, nc, lf, nlf);   /* (batch, K, M) */
  bool qid1 = make_perm(q1, vrb, nbd, vrc, nc, rf, nrf);   /* (batch, K, N) */
  bool qid2 = make_perm(q2, vrb, nbd, rf, nrf, vrc, nc);   /* (batch, N, K) */
  if (r->size == 0 || K == 0) {
    memset(r->data, 0, arr_nbytes(r));
  } else if (dtype_is_float(dt)) {
    bool ta, tb;
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
      err_throw("dot_general: matrix dimensions too large for BLAS");
    Array *Ap = gemm_layout(A, p1, pid1, pid2, &ta), *Bp = gemm_layout(B, q1, qid1, qid2, &tb);
    enum CBLAS_TRANSPOSE ca = ta ? CblasTrans : CblasNoTrans, cb = tb ? CblasTrans : CblasNoTrans;
    blasint m = (blasint)M, n = (blasint)N, k = (blasint)K;
    blasint lda = ta ? m : k, ldb = tb ? k : n;
    for (int64_t b = 0; b < nb; b++) {
      if (dt == DT_F32)
        blas_sgemm(CblasRowMajor, ca, cb, m, n, k, 1.0f, (const float *)Ap->data + b * M * K, lda,
                    (const float *)Bp->data + b * K * N, ldb, 0.0f, (float *)r->data + b * M * N, n);
      else
        blas_dgemm(CblasRowMajor, ca, cb, m, n, k, 1.0, (const double *)Ap->data + b * M * K, lda,
                    (const double *)Bp->data + b * K * N, ldb, 0.0, (double *)r->data + b * M * N, n);
    }
    arr_unref(Ap);
    arr_unref(Bp);
  } else {
    Array *Ap = permuted(A, p1), *Bp = permuted(B, q1);
    Array *Ai = arr_convert(Ap, DT_I64), *Bi = arr_convert(Bp, DT_I64);
    const int64_t *x = Ai->data, *y = Bi->data;
    uint64_t *acc = mem_alloc(sizeof(uint64_t) * (size_t)N);
    for (int64_t b = 0; b < nb; b++)
      for (int64_t i = 0; i < M; i++) {
        memset(acc, 0, sizeof(uint64_t) * (size_t)N);
        for (int64_t k = 0; k < K; k++) {
          uint64_t u = (uint64_t)x[(b * M + i) * K + k];
          const int64_t *row = y + (b * K + k) * N;
          if (u)
            for (int64_t j = 0; j < N; j++) acc[j] += u * (uint64_t)row[j];
        }
        for (int64_t j = 0; j < N; j++) arr_seti(r, (b * M + i) * N + j, (int64_t)acc[j]);
      }
    mem_free(acc);
    arr_unref(Ai);
    arr_unref(Bi);
    arr_unref(Ap);
    arr_unref(Bp);
  }
  arr_unref(A);
  arr_unref(B);
  out[0] = r;
}

/* =========================================================================
** The table
** ========================================================================= */

const PrimInfo prim_table[P_COUNT] = {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, tr) \
  [P_##tag] = {name, alias, nmin, nmax, nout, params, shape, vrule, kernel, tr},
#include "prims.def"
#undef PRIM
};

/* =========================================================================
** Elementwise over many blocks (eval.c)
** ========================================================================= */

int prim_ew_op(int prim) {
  /* built from prim_table on first use, constant afterwards */
  static signed char ops[P_COUNT];
  static bool ready;
  if (!ready) {
    for (int p = 0; p < P_COUNT; p++) {
      KernFn k = prim_table[p].kernel;
      int op = -1;
#define X(name, o) if (k == kern_##name) op = o;
      BINARY_KERNELS(X)
      UNARY_KERNELS(X)
#undef X
      ops[p] = (signed char)op;
    }
    ready = true;
  }
  return prim >= 0 && prim < P_COUNT ? ops[prim] : -1;
}

void prim_ew_apply(int op, const Array *a, const Array *b, Array *r) {
  if (op >= U_NEG) ew_unary(op, a, r);
  else ew_binary(op, a, b, r);
}

/* A primitive by canonical name or alias; -1 if none. */
int prim_lookup(Str name) {
  for (int p = 0; p < P_COUNT; p++)
    if (str_eqc(name, prim_table[p].name) ||
        (prim_table[p].alias && str_eqc(name, prim_table[p].alias)))
      return p;
  return -1;
}

bool prim_accepts(int prim, Str key) {
  const char *p = prim_table[prim].params;
  while (p && *p) {
    while (*p == ' ' || *p == '|') p++;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if (e > p && (int)(e - p) == key.n && !memcmp(p, key.p, (size_t)key.n)) return true;
    p = e;
  }
  return false;
}
