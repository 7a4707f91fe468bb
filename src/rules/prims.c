/*
** prims.c — the local primitives: one shape rule and one kernel each, and
** the table of every primitive (prims.def) but its transpose column.
**
** A shape rule reads the equation's parameters (rule.h), checks the
** operand types, fills Attrs and writes the result type; the comment above
** each rule says which Attrs fields it fills, and its kernel reads exactly
** those.  Names, parameters and semantics are JAX's (`jax.lax`), with one
** extension: an elementwise primitive broadcasts a scalar (rank 0) operand
** against an array.
**
** The kernels share four engines, so no primitive has a loop of its own
** where an engine can do the work: the elementwise and reduction engines
** (ew.c: ew_unary, ew_binary, ew_reduce, ew_scan, ew_arg), the copy engine
** (array.c: arr_copy_strided, which every shape and indexing kernel calls
** once or twice), and dot_general's layout and gemm (dot.c).  The
** collectives' rules are in coll.c.
**
** Kernels never write to their operands and allocate their results with
** arr_new from the result type the rule computed.  Nothing here keeps
** state between calls (prim_ew_op's table is built once, then constant).
**
** Sections: elementwise rules and kernels; reductions and scans; shape
** ops; indexing; creation; the table; elementwise over many blocks.
*/
#include <pthread.h>
#include <math.h>
#include "err.h"
#include "coll.h"
#include "conv.h"
#include "dot.h"
#include "ew.h"
#include "fft.h"
#include "indexing.h"
#include "prims.h"
#include "moreprims.h"
#include "par.h"
#include "philox.h"
#include "rng.h"
#include "rngkey.h"
#include "rule.h"
#include "sort.h"
#include "special.h"
#include "window.h"

#define KARGS const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt
#define RARGS RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out

/* Accepts a parameter that JAX prints and shmapi does not use (sharding,
   out_sharding, precision, accuracy): its value is not read, only kept
   for show. */
static void ignore_param(RuleCtx *cx, const char *key) {
  PVal *v = rule_get(cx, key);
  if (v) rule_record(cx, key, v);
}

/* A new result array of type t. */
static Array *new_arr(const Type *t) { return arr_new((DType)t->dt, t->rank, t->shape); }

/* =========================================================================
** Elementwise: rules and kernels
** ========================================================================= */

/* Binary elementwise rule: equal dtypes (weak literals adopt), equal shapes
   or a scalar; the result has dtype bool when `to_bool`.  Fills nothing. */
static bool binary_rule(RuleCtx *cx, Type *in, Type *out, int kinds, bool to_bool) {
  static const int idx[2] = {0, 1};
  int dt = 0;
  if (!rule_unify_dtypes(cx, in, idx, 2, &dt)) return false;
  if (!rule_check_kind(cx, &in[0], kinds)) return false;
  if (!rule_bcast_shapes(cx, in, idx, 2, out)) return false;
  out->dt = (uint8_t)(to_bool ? DT_BOOL : dt);
  return true;
}

/* a broadcast to the shape of t (its rank, dimensions of size 1 repeated);
   a new reference to a when it has that shape already or is a scalar. */
static Array *bcast_to(Array *a, const Type *t, DType dt) {
  bool same = true;
  for (int i = 0; i < a->rank; i++) same &= a->shape[i] == t->shape[i];
  if (same && a->dt == dt) return arr_ref(a);
  Array *c = a->dt == dt ? arr_ref(a) : arr_convert(a, dt);
  if (same) return c;
  Array *r = arr_new(dt, t->rank, t->shape);
  int64_t ds[SHM_MAXRANK], ss[SHM_MAXRANK];
  size_t es = dtype_sizes[dt];
  arr_byte_strides(r->rank, r->shape, es, ds);
  arr_byte_strides(c->rank, c->shape, es, ss);
  for (int i = 0; i < c->rank; i++)
    if (c->shape[i] == 1) ss[i] = 0;
  arr_copy_strided(r->data, ds, c->data, ss, r->rank, r->shape, es);
  arr_unref(c);
  return r;
}

/* add sub mul div: numbers, complex too.  Fills nothing. */
static bool rule_bin_num(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_ARITH, false); }
/* rem: real numbers.  Fills nothing. */
static bool rule_rem(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_NUM, false); }
/* max min: any dtype.  Fills nothing. */
static bool rule_bin_any(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_ANY, false); }
/* and or xor: bools and integers (bitwise).  Fills nothing. */
static bool rule_bin_logic(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_LOGIC, false); }
/* shift_left shift_right_*: integers.  Fills nothing. */
static bool rule_bin_int(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_INT, false); }
/* atan2 nextafter polygamma: floats.  Fills nothing. */
static bool rule_bin_float(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_FLOAT, false); }
/* lt le gt ge: any real dtype, result bool.  Fills nothing. */
static bool rule_cmp(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_ANY, true); }
/* eq ne: any dtype, complex too, result bool.  Fills nothing. */
static bool rule_eq(RARGS) { (void)nin; (void)at; return binary_rule(cx, in, out, K_ALL, true); }

/* pow x y: float ** float, int ** int (same dtype), or float ** integer
   (any integer dtype; the result has x's dtype, f32 for a float literal).
   Fills nothing. */
static bool rule_pow(RARGS) {
  (void)nin; (void)at;
  if (!in[1].weak && dtype_is_float((DType)in[0].dt) && dtype_is_int((DType)in[1].dt)) {
    static const int idx[2] = {0, 1};
    if (!rule_unify_shapes(cx, in, idx, 2, out)) return false;
    out->dt = in[0].dt;
    return true;
  }
  return binary_rule(cx, in, out, K_NUM, false);
}

/* The kernel of every binary primitive: r = in[0] op in[1]; a pow with an
   integer exponent of a float base first converts the exponent. */
static void binary_kernel(int op, Array *const *in, Array **out, const Type *outt) {
  Array *r = new_arr(&outt[0]);
  Array *a = bcast_to(in[0], &outt[0], (DType)in[0]->dt), *b = NULL;
  b = bcast_to(in[1], &outt[0], (DType)in[0]->dt);
  ew_binary(op, a, b, r);
  arr_unref(a);
  arr_unref(b);
  out[0] = r;
}

#define BINARY_KERNELS(X)                                                     \
  X(add, B_ADD) X(sub, B_SUB) X(mul, B_MUL) X(div, B_DIV) X(rem, B_REM)       \
  X(pow, B_POW) X(max, B_MAX) X(min, B_MIN) X(and, B_AND) X(or, B_OR)         \
  X(xor, B_XOR) X(atan2, B_ATAN2) X(nextafter, B_NEXTAFTER) X(shl, B_SHL)     \
  X(polygamma, B_POLYGAMMA)                                                   \
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
  if (!rule_check_kind(cx, &in[0], kinds)) return false;
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
/* exp log sqrt rsqrt sin cos tan tanh expm1 log1p: floats and complex.
   Fills nothing. */
static bool rule_un_floatc(RARGS) {
  (void)nin; (void)at;
  ignore_param(cx, "accuracy");
  return unary_rule(cx, in, out, K_FLOATC, false);
}
/* floor ceil erf erfc lgamma digamma and the inverse and hyperbolic
   trigonometric functions: floats.  Fills nothing. */
static bool rule_un_float_plain(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_FLOAT, false); }
/* neg sign square: numbers, complex too.  Fills nothing. */
static bool rule_un_num(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_ARITH, false); }
/* not: bools and integers.  Fills nothing. */
static bool rule_un_logic(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_LOGIC, false); }
/* copy: any dtype.  Fills nothing. */
static bool rule_un_any(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_ALL, false); }
/* is_finite: floats, result bool.  Fills nothing. */
static bool rule_is_finite(RARGS) { (void)nin; (void)at; return unary_rule(cx, in, out, K_FLOAT, true); }

/* abs: numbers; of a complex number, its magnitude (f32 for c64, f64 for
   c128).  Fills nothing. */
static bool rule_abs(RARGS) {
  (void)nin; (void)at;
  if (!unary_rule(cx, in, out, K_ARITH, false)) return false;
  out->dt = (uint8_t)dtype_real((DType)out->dt);
  return true;
}

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
  X(erfc, U_ERFC) X(lgamma, U_LGAMMA) X(digamma, U_DIGAMMA)

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
  if (!rule_check_kind(cx, &in[0], K_ARITH)) return false;
  if (y < 0 && dtype_is_int((DType)in[0].dt))
    return rule_error(cx, "integers cannot be raised to negative powers, got integer_pow(%s, %lld)",
                      dtype_names[in[0].dt], (long long)y);
  at->i[0] = y;
  return unary_rule(cx, in, out, K_ARITH, false);
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
/* Keys are not numbers: their data (random_unwrap) is. */
static bool key_convert_error(RuleCtx *cx) {
  return rule_error(cx, "%s cannot convert keys (key<fry>): random_unwrap gives their data, u32[..., 2]",
                    rule_prim_name(cx));
}

/* JAX before 0.2.8 printed the operand's dtype too (old_dtype=int32): it
   must be the operand's (an untyped literal takes it); show leaves it out,
   as JAX does today. */
static bool rule_old_dtype(RuleCtx *cx, Type *in) {
  PVal *v = pv_unparen(rule_get(cx, "old_dtype"));
  if (!v) return true;
  int dt = (v->k == PV_NAME || v->k == PV_STR) ? dtype_lookup(v->s) : -1;
  TyBuf a;
  if (dt < 0)
    return rule_param_error(cx, "old_dtype", "parameter 'old_dtype' of convert_element_type must be a dtype (%s)",
                            dtype_list_text);
  if (in[0].weak && rule_kind_rank(dt) >= rule_kind_rank(in[0].dt)) in[0].dt = (uint8_t)dt;
  if (in[0].dt != dt)
    return rule_param_error(cx, "old_dtype", "convert_element_type old_dtype=%s, but the operand is %s",
                            dtype_names[dt], rule_ty(&a, &in[0]));
  return true;
}

static bool rule_convert(RARGS) {
  (void)nin;
  int dt = 0;
  bool weak;
  if (!rule_dtype(cx, "new_dtype", true, -1, &dt)) return false;
  if (!rule_bool(cx, "weak_type", false, &weak)) return false;
  ignore_param(cx, "sharding");
  if (dt < 0) return rule_param_error(cx, "new_dtype", "convert_element_type needs a new_dtype");
  if (dtype_is_key((DType)in[0].dt)) return key_convert_error(cx);
  if (!rule_old_dtype(cx, in)) return false;
  at->dtype = dt;
  *out = in[0];
  out->weak = false;
  out->dt = (uint8_t)dt;
  return true;
}

/* convert_element_type: elementwise conversion. */
static void kern_convert(KARGS) {
  (void)at; (void)nin;
  Array *r = new_arr(&outt[0]);
  arr_convert_into(in[0], r);
  out[0] = r;
}

/* bitcast_convert_type[new_dtype]: the same bytes read as another dtype.
   A narrower dtype adds a last dimension (the ratio of the sizes), a
   wider one takes the last dimension, which must be that ratio, away.
   Only a bool becomes a bool.
   Fills dtype = new_dtype. */
static bool rule_bitcast(RARGS) {
  (void)nin;
  int dt = 0;
  if (!rule_dtype(cx, "new_dtype", true, -1, &dt)) return false;
  if (dt < 0) return rule_param_error(cx, "new_dtype", "bitcast_convert_type needs a new_dtype");
  if (dtype_is_key((DType)in[0].dt)) return key_convert_error(cx);
  /* bytes other than 0 and 1 would make bools that are neither (JAX refuses it too) */
  if (dt == DT_BOOL && in[0].dt != DT_BOOL)
    return rule_error(cx, "bitcast_convert_type cannot make bool from %s: its bytes may be other than 0 "
                      "and 1 (JAX refuses it too); compare with 0 (ne x 0) or use convert_element_type", dtype_names[in[0].dt]);
  at->dtype = dt;
  *out = in[0];
  out->weak = false;
  out->dt = (uint8_t)dt;
  int from = dtype_sizes[in[0].dt], to = dtype_sizes[dt];
  TyBuf a;
  if (from > to) {
    if (!rule_check_rank(cx, in[0].rank + 1)) return false;
    out->shape[out->rank++] = from / to;
  } else if (from < to) {
    if (in[0].rank == 0 || in[0].shape[in[0].rank - 1] != to / from)
      return rule_error(cx, "bitcast_convert_type from %s to the wider %s needs a last dimension of %d, got %s",
                        dtype_names[in[0].dt], dtype_names[dt], to / from, rule_ty(&a, &in[0]));
    out->rank--;
  }
  return true;
}

/* bitcast_convert_type: the bytes, unchanged. */
static void kern_bitcast(KARGS) {
  (void)at; (void)nin;
  Array *r = new_arr(&outt[0]);
  memcpy(r->data, in[0]->data, arr_nbytes(r));
  out[0] = r;
}

/* real, imag: the parts of a complex number, as f32 (c64) or f64 (c128).
   conj: the complex conjugate (a real operand becomes complex).  Fills
   i[0] = 0 real, 1 imag, 2 conj. */
static bool part_rule(RuleCtx *cx, Type *in, Attrs *at, Type *out, int which) {
  ignore_param(cx, "input_dtype");
  at->i[0] = which;
  if (!rule_check_kind(cx, &in[0], which == 2 ? K_FLOATC : K_COMPLEX)) return false;
  *out = in[0];
  out->weak = false;
  if (which < 2) out->dt = (uint8_t)dtype_real((DType)in[0].dt);
  else if (!dtype_is_complex((DType)in[0].dt)) out->dt = in[0].dt == DT_F64 ? DT_C128 : DT_C64;
  return true;
}
static bool rule_real(RARGS) { (void)nin; return part_rule(cx, in, at, out, 0); }
static bool rule_imag(RARGS) { (void)nin; return part_rule(cx, in, at, out, 1); }
static bool rule_conj(RARGS) { (void)nin; return part_rule(cx, in, at, out, 2); }

static void kern_part(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  for (int64_t i = 0; i < r->size; i++) {
    double re, im;
    arr_getc(in[0], i, &re, &im);
    if (at->i[0] == 2) arr_setc(r, i, re, -im);
    else arr_setf(r, i, at->i[0] ? im : re);
  }
  out[0] = r;
}

/* complex x y: x + iy, of two floats of one dtype (f32 gives c64, f64 c128;
   bf16 and f16 are not).  Fills nothing. */
static bool rule_complex(RARGS) {
  (void)nin; (void)at;
  if (!binary_rule(cx, in, out, K_FLOAT, false)) return false;
  if (out->dt != DT_F32 && out->dt != DT_F64)
    return rule_error(cx, "complex takes f32 or f64 parts, not %s", dtype_names[out->dt]);
  out->dt = out->dt == DT_F64 ? DT_C128 : DT_C64;
  return true;
}

static void kern_complex(KARGS) {
  (void)at; (void)nin;
  Array *r = new_arr(&outt[0]);
  for (int64_t i = 0; i < r->size; i++)
    arr_setc(r, i, arr_getf(in[0], in[0]->rank ? i : 0), arr_getf(in[1], in[1]->rank ? i : 0));
  out[0] = r;
}

/* clamp lo x hi (lax.clamp's order): equal dtypes, lo and hi scalars or of
   x's shape; the result has x's type.  Fills nothing. */
static bool rule_clamp(RARGS) {
  (void)nin; (void)at;
  static const int idx[3] = {0, 1, 2};
  int dt = 0;
  if (!rule_unify_dtypes(cx, in, idx, 3, &dt)) return false;
  if (!rule_check_kind(cx, &in[1], K_ANY)) return false;
  for (int k = 0; k < 3; k += 2)
    if (in[k].rank != 0 && !type_same_shape(&in[k], &in[1])) {
      TyBuf a, b;
      return rule_error(cx, "clamp %s %s must be a scalar or have the shape of the operand %s",
                        k ? "max" : "min", rule_ty(&a, &in[k]), rule_ty(&b, &in[1]));
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
    return rule_error(cx, "select_n which must be boolean or integer, got %s", rule_ty(&a, &in[0]));
  if (in[0].dt == DT_BOOL && ncase > 2)
    return rule_error(cx, "select_n with a boolean which takes at most two cases, got %d", ncase);
  for (int k = 0; k < ncase; k++) idx[k] = k + 1;
  if (!rule_unify_dtypes(cx, in, idx, ncase, &dt)) return false;
  if (!rule_unify_shapes(cx, in, idx, ncase, out)) return false;
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
                      rule_ty(&a, &in[0]), rule_ty(&b, &c));
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
  if (!rule_unify_dtypes(cx, in, idx, 2, &dt)) return false;
  if (!rule_unify_shapes(cx, in, idx, 2, &shp)) return false;
  rule_set_type(out, DT_BOOL, 0, NULL);
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

/* Shared by the reduce_* rules: reads axes (and accepts out_sharding),
   checks the dtype and computes the reduced type.  Fills l[0] = axes. */
static bool reduce_rule(RuleCtx *cx, Type *in, Attrs *at, Type *out, int kinds) {
  IntList ax = {0, NULL};
  if (!rule_ints(cx, "axes", true, &ax)) return false;
  ignore_param(cx, "out_sharding");
  if (!rule_check_kind(cx, &in[0], kinds)) return false;
  if (!rule_check_axes(cx, "axes", &ax, in[0].rank, true, &in[0])) return false;
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
static bool rule_reduce_num(RARGS) { (void)nin; return reduce_rule(cx, in, at, out, K_ARITH); }
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
    ew_reduce(op, in[0], &at->l[0], r);                                        \
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
                            rule_prim_name(cx), rule_ls(&lb, &ax));
  if (!rule_check_axes(cx, "axes", &ax, in[0].rank, true, &in[0])) return false;
  if (in[0].shape[ax.v[0]] < 1)
    return rule_error(cx, "%s requires a non-empty reduced dimension, got %s and axis %lld",
                      rule_prim_name(cx), rule_ty(&tb, &in[0]), (long long)ax.v[0]);
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
  ew_arg(true, in[0], (int)at->i[0], r);
  out[0] = r;
}

/* argmin: first index of the minimum along i[0]. */
static void kern_argmin(KARGS) {
  (void)nin;
  Array *r = new_arr(&outt[0]);
  ew_arg(false, in[0], (int)at->i[0], r);
  out[0] = r;
}

/* Shared by the cumulative rules: cum*[axis=0, reverse=False]; the result
   has the operand's type.  Fills i[0] = axis (normalised), b[0] = reverse. */
static bool cum_rule(RuleCtx *cx, Type *in, Attrs *at, Type *out, int kinds) {
  int64_t axis;
  TyBuf tb;
  if (!rule_int(cx, "axis", false, 0, &axis)) return false;
  if (!rule_bool(cx, "reverse", false, &at->b[0])) return false;
  if (!rule_check_kind(cx, &in[0], kinds)) return false;
  int64_t a = rule_norm_axis(axis, in[0].rank);
  if (a < 0)
    return rule_error(cx, "%s axis %lld out of range for %s", rule_prim_name(cx),
                      (long long)axis, rule_ty(&tb, &in[0]));
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
    ew_scan(op, in[0], (int)at->i[0], at->b[0], r);                         \
    out[0] = r;                                                               \
  }
SCAN_KERNELS(X)
#undef X

/* =========================================================================
** Shape ops: the copy engine
** ========================================================================= */

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
  if (!rule_check_shape(cx, "shape", &shp)) return false;
  rule_set_type(out, in[0].dt, shp.n, shp.v);
  if (bd.n != in[0].rank)
    return rule_error(cx, "broadcast_in_dim broadcast_dimensions %s must have one entry per dimension of the operand %s",
                      rule_ls(&lb, &bd), rule_ty(&a, &in[0]));
  for (int i = 0; i < bd.n; i++) {
    if (bd.v[i] < 0 || bd.v[i] >= shp.n)
      return rule_error(cx, "broadcast_in_dim broadcast_dimensions %s out of range for the result %s",
                        rule_ls(&lb, &bd), rule_ty(&b, out));
    if (i > 0 && bd.v[i] <= bd.v[i - 1])
      return rule_param_error(cx, "broadcast_dimensions",
                              "broadcast_in_dim broadcast_dimensions %s must be strictly increasing",
                              rule_ls(&lb, &bd));
    if (in[0].shape[i] != 1 && in[0].shape[i] != shp.v[bd.v[i]])
      return rule_error(cx, "broadcast_in_dim cannot broadcast %s to %s: operand dimension %d has size %lld, "
                        "result dimension %lld has size %lld",
                        rule_ty(&a, &in[0]), rule_ty(&b, out), i, (long long)in[0].shape[i],
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
  arr_byte_strides(a->rank, a->shape, es, ist);
  arr_byte_strides(r->rank, r->shape, es, dst);
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != 1) sst[at->l[1].v[i]] = ist[i];
  arr_copy_strided(r->data, dst, a->data, sst, r->rank, r->shape, es);
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
                      rule_prim_name(cx), what, rule_ls(&lb, l));
  return rule_error(cx, "%s %s %s is not a permutation of 0..%d", rule_prim_name(cx), what,
                    rule_ls(&lb, l), rank - 1);
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
  if (!rule_check_shape(cx, "new_sizes", &ns)) return false;
  rule_set_type(out, in[0].dt, ns.n, ns.v);
  if (dims.n && !check_perm(cx, "dimensions", &dims, in[0].rank)) return false;
  int64_t n0 = type_size(&in[0]), n1 = type_size(out);
  if (n0 != n1)
    return rule_error(cx, "reshape cannot turn %s into %s: sizes %lld and %lld differ",
                      rule_ty(&a, &in[0]), rule_ty(&b, out), (long long)n0, (long long)n1);
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
    Array *t = arr_permuted(in[0], perm);
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
  Array *r = arr_permuted(in[0], perm);
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
  if (!rule_check_axes(cx, "dimensions", &d, in[0].rank, true, &in[0])) return false;
  for (int i = 0; i < d.n; i++)
    if (in[0].shape[d.v[i]] != 1)
      return rule_error(cx, "squeeze cannot remove dimension %lld of %s: its size is %lld, not 1",
                        (long long)d.v[i], rule_ty(&a, &in[0]), (long long)in[0].shape[d.v[i]]);
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
  if (!rule_check_rank(cx, rank)) return false;
  if (!rule_check_axes(cx, "dimensions", &d, rank, true, NULL)) return false;
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
  if (!rule_check_axes(cx, "dimensions", &d, in[0].rank, true, &in[0])) return false;
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
  arr_byte_strides(a->rank, a->shape, es, st);
  for (int k = 0; k < a->rank; k++) sst[k] = st[k];
  for (int i = 0; i < at->l[0].n; i++) {
    int k = (int)at->l[0].v[i];
    if (a->shape[k] > 0) off += (a->shape[k] - 1) * st[k];
    sst[k] = -st[k];
  }
  if (r->size) arr_copy_strided(r->data, st, (const char *)a->data + off, sst, r->rank, r->shape, es);
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
  if (!rule_unify_dtypes(cx, in, idx, nin, &dt)) return false;
  if (in[0].rank == 0) return rule_error(cx, "concatenate cannot join scalars (%s)", rule_ty(&a, &in[0]));
  rule_axis_index(cx, "dimension", &dim, in[0].rank);     /* negative: from the end */
  if (dim < 0 || dim >= in[0].rank)
    return rule_error(cx, "concatenate dimension %lld out of range for %s", (long long)dim,
                      rule_ty(&a, &in[0]));
  *out = in[0];
  out->weak = false;
  out->dt = (uint8_t)dt;
  for (int k = 1; k < nin; k++) {
    bool ok = in[k].rank == in[0].rank;
    for (int d = 0; ok && d < in[0].rank; d++) ok = d == dim || in[k].shape[d] == in[0].shape[d];
    if (!ok)
      return rule_error(cx, "concatenate operands must have equal shapes except in dimension %lld, got %s and %s",
                        (long long)dim, rule_ty(&a, &in[0]), rule_ty(&b, &in[k]));
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
  arr_byte_strides(r->rank, r->shape, es, dst);
  for (int k = 0; k < nin; k++) {
    arr_byte_strides(in[k]->rank, in[k]->shape, es, sst);
    arr_copy_strided((char *)r->data + pos * dst[dim], dst, in[k]->data, sst, r->rank, in[k]->shape, es);
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
  if (!rule_unify_dtypes(cx, in, idx, 2, &dt)) return false;
  if (in[1].rank != 0)
    return rule_error(cx, "pad padding_value must be a scalar, got %s", rule_ty(&a, &in[1]));
  if (pc.n != 3 * in[0].rank)
    return rule_error(cx, "pad padding_config has %d entries for the operand %s of rank %d",
                      pc.n / 3, rule_ty(&a, &in[0]), in[0].rank);
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
      return rule_error(cx, "pad would make dimension %d of %s negative (%lld)", d, rule_ty(&a, &in[0]),
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
  arr_byte_strides(r->rank, r->shape, es, dst);
  arr_byte_strides(a->rank, a->shape, es, ist);
  arr_copy_strided(r->data, dst, in[1]->data, zero, r->rank, r->shape, es);
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
  arr_copy_strided((char *)r->data + doff, pdst, (const char *)a->data + soff, ist, a->rank, box, es);
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
                      rule_ty(&a, &in[0]), r, rule_ls(&b1, &st), rule_ls(&b2, &li));
  if (!sd.n) {
    sd.n = r;
    sd.v = r ? rule_alloc_ints(cx, r) : NULL;
    for (int d = 0; d < r; d++) sd.v[d] = 1;
  }
  *out = in[0];
  out->weak = false;
  for (int d = 0; d < r; d++) {
    if (sd.v[d] < 1)
      return rule_param_error(cx, "strides", "slice strides must be positive, got %s", rule_ls(&b1, &sd));
    if (st.v[d] < 0 || st.v[d] > in[0].shape[d] || li.v[d] > in[0].shape[d] || li.v[d] < st.v[d])
      return rule_error(cx, "slice start_indices=%s, limit_indices=%s out of range for %s "
                        "(need 0 <= start <= limit <= size in every dimension)",
                        rule_ls(&b1, &st), rule_ls(&b2, &li), rule_ty(&a, &in[0]));
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
  arr_byte_strides(a->rank, a->shape, es, ist);
  arr_byte_strides(r->rank, r->shape, es, dst);
  for (int d = 0; d < a->rank; d++) {
    off += at->l[0].v[d] * ist[d];
    sst[d] = at->l[2].v[d] * ist[d];
  }
  if (r->size) arr_copy_strided(r->data, dst, (const char *)a->data + off, sst, r->rank, r->shape, es);
  out[0] = r;
}

/* Checks the scalar integer start-index operands in[first..first+rank-1]. */
static bool check_starts(RuleCtx *cx, Type *in, int nin, int first, const Type *op) {
  TyBuf a, b;
  if (nin - first != op->rank)
    return rule_error(cx, "%s of %s needs %d scalar start indices, got %d", rule_prim_name(cx),
                      rule_ty(&a, op), op->rank, nin - first);
  for (int k = first; k < nin; k++) {
    if (in[k].rank != 0 || !dtype_is_int((DType)in[k].dt))
      return rule_error(cx, "%s start indices must be integer scalars, got %s", rule_prim_name(cx),
                        rule_ty(&b, &in[k]));
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
                      rule_ls(&b, &ss), rule_ty(&a, &in[0]));
  for (int d = 0; d < ss.n; d++)
    if (ss.v[d] < 0 || ss.v[d] > in[0].shape[d])
      return rule_error(cx, "dynamic_slice slice_sizes %s do not fit in %s", rule_ls(&b, &ss),
                        rule_ty(&a, &in[0]));
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
  arr_byte_strides(a->rank, a->shape, es, ist);
  arr_byte_strides(r->rank, r->shape, es, dst);
  for (int d = 0; d < a->rank; d++)
    off += clamp_start(in[1 + d], a->shape[d], at->l[0].v[d]) * ist[d];
  if (r->size) arr_copy_strided(r->data, dst, (const char *)a->data + off, ist, r->rank, r->shape, es);
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
  if (!rule_unify_dtypes(cx, in, idx, 2, &dt)) return false;
  bool ok = in[1].rank == in[0].rank;
  for (int d = 0; ok && d < in[0].rank; d++) ok = in[1].shape[d] <= in[0].shape[d];
  if (!ok)
    return rule_error(cx, "dynamic_update_slice update %s does not fit in the operand %s",
                      rule_ty(&a, &in[1]), rule_ty(&b, &in[0]));
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
  arr_byte_strides(r->rank, r->shape, es, dst);
  arr_byte_strides(u->rank, u->shape, es, ust);
  for (int d = 0; d < a->rank; d++)
    off += clamp_start(in[2 + d], a->shape[d], u->shape[d]) * dst[d];
  arr_copy_strided((char *)r->data + off, dst, u->data, ust, u->rank, u->shape, es);
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
  if (!rule_check_shape(cx, "shape", &shp)) return false;
  rule_set_type(out, dt, shp.n, shp.v);
  if (dim < 0 || dim >= shp.n)
    return rule_param_error(cx, "dimension", "iota dimension %lld out of range for %s",
                            (long long)dim, rule_ty(&a, out));
  at->dtype = dt;
  at->l[0] = shp;
  at->i[0] = dim;
  return true;
}

/* Sources (iota, arange, full) fill big results on two threads, each
   writing its half; an element's value depends on its index alone, so
   the bytes do not depend on the split. */
typedef struct FillJob {
  const Attrs *at;
  Array *r;
  int64_t inner, n;                     /* iota */
  const void *one;                      /* full: one element */
  void (*fill)(struct FillJob *j, int64_t lo, int64_t hi);
  int64_t b0;                           /* arange of integers: start, */
  uint64_t d;                           /* and the step, as i64 */
} FillJob;

static void fill_half(void *ctx, int64_t half) {
  FillJob *j = ctx;
  int64_t n = j->r->size, mid = n / 2;
  if (half) j->fill(j, mid, n);
  else j->fill(j, 0, mid);
}

static void fill_run(FillJob *j) {
  par_for(2, fill_half, j, (double)arr_nbytes(j->r));
}

/* iota's elements [lo, hi): the index along the dimension, counted as
   the flat index runs (no division per element). */
static void iota_range(FillJob *j, int64_t lo, int64_t hi) {
  Array *r = j->r;
  int64_t k = lo % j->inner, v = lo / j->inner % j->n;
#define IOTA_LOOP(T)                                                     \
  for (int64_t i = lo; i < hi; i++) {                                    \
    ((T *)r->data)[i] = (T)v;                                            \
    if (++k == j->inner) { k = 0; if (++v == j->n) v = 0; }               \
  }
  switch ((DType)r->dt) {
  case DT_F32: IOTA_LOOP(float) break;
  case DT_F64: IOTA_LOOP(double) break;
  case DT_I32: IOTA_LOOP(int32_t) break;
  case DT_I64: IOTA_LOOP(int64_t) break;
  default:
    for (int64_t i = lo; i < hi; i++) {
      arr_seti(r, i, v);
      if (++k == j->inner) { k = 0; if (++v == j->n) v = 0; }
    }
  }
#undef IOTA_LOOP
}

/* iota: element value = its index along i[0]. */
static void kern_iota(KARGS) {
  (void)in; (void)nin;
  Array *r = new_arr(&outt[0]);
  FillJob j = {at, r, 1, r->shape[at->i[0]], NULL, iota_range, 0, 0};
  for (int d = (int)at->i[0] + 1; d < r->rank; d++) j.inner *= r->shape[d];
  if (r->size) fill_run(&j);
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
  rule_set_type(out, dt, 1, &n);
  at->dtype = dt;
  at->f[0] = start;
  at->f[1] = stop;
  at->f[2] = step;
  at->i[0] = n;
  return true;
}

/* f32 arange's o[i] = b0 + (float)i * d, i in [lo, hi) counted in 32 bits
   when it fits (the same floats; the loop vectorises). */
SHM_WIDE static void arange_f32(float *o, float b0, float d, int64_t lo, int64_t hi) {
  if (hi <= INT32_MAX)
    for (int32_t i = (int32_t)lo; i < (int32_t)hi; i++) o[i] = b0 + (float)i * d;
  else
    for (int64_t i = lo; i < hi; i++) o[i] = b0 + (float)i * d;
}

/* arange's elements [lo, hi) of the dtypes with a typed loop; element 1
   is start + step itself, as NumPy fills it. */
static void arange_range(FillJob *j, int64_t lo, int64_t hi) {
  Array *r = j->r;
  double s = j->at->f[0], s1 = j->at->f[0] + j->at->f[2];
  if (r->dt == DT_F32) {
    float *o = r->data, b0 = (float)s, d = (float)s1 - b0;
    arange_f32(o, b0, d, lo, hi);
    if (lo <= 1 && 1 < hi) o[1] = (float)s1;
  } else if (r->dt == DT_F64) {
    double *o = r->data, d = s1 - s;
    for (int64_t i = lo; i < hi; i++) o[i] = s + (double)i * d;
    if (lo <= 1 && 1 < hi) o[1] = s1;
  } else {                        /* i32, i64: wrapping */
    for (int64_t i = lo; i < hi; i++) {
      uint64_t v = (uint64_t)j->b0 + (uint64_t)i * j->d;
      if (r->dt == DT_I32) ((int32_t *)r->data)[i] = (int32_t)(uint32_t)v;
      else ((int64_t *)r->data)[i] = (int64_t)v;
    }
  }
}

/* prim_fill_tile (prims.h): elements [lo, lo + n) of an arange or iota
   result into r's data, each the value kern_arange's or kern_iota's
   loops give it. */
SHM_WIDE static void arange_f32_tile(float *o, float b0, float d, int64_t lo, int64_t n) {
  if (lo + n <= INT32_MAX)
    for (int32_t k = 0; k < (int32_t)n; k++) o[k] = b0 + (float)((int32_t)lo + k) * d;
  else
    for (int64_t k = 0; k < n; k++) o[k] = b0 + (float)(lo + k) * d;
}

bool prim_fill_tile(int prim, const Attrs *at, const Type *t, Array *r, int64_t lo, int64_t n) {
  if (prim == P_ARANGE) {
    double s = at->f[0], s1 = at->f[0] + at->f[2];
    if (t->dt == DT_F32) {
      float *o = r->data, b0 = (float)s, d = (float)s1 - b0;
      arange_f32_tile(o, b0, d, lo, n);
      if (lo <= 1 && 1 < lo + n) o[1 - lo] = (float)s1;
    } else if (t->dt == DT_F64) {
      double *o = r->data, d = s1 - s;
      for (int64_t k = 0; k < n; k++) o[k] = s + (double)(lo + k) * d;
      if (lo <= 1 && 1 < lo + n) o[1 - lo] = s1;
    } else {
      return false;
    }
    return true;
  }
  if (prim != P_IOTA || (t->dt != DT_F32 && t->dt != DT_F64 && t->dt != DT_I32 && t->dt != DT_I64)) return false;
  int64_t inner = 1, len = t->shape[at->i[0]];
  for (int d = (int)at->i[0] + 1; d < t->rank; d++) inner *= t->shape[d];
  int64_t k0 = lo % inner, v = lo / inner % len;
#define IOTA_TILE(T)                                                     \
  for (int64_t k = 0; k < n; k++) {                                      \
    ((T *)r->data)[k] = (T)v;                                            \
    if (++k0 == inner) { k0 = 0; if (++v == len) v = 0; }                \
  }
  switch ((DType)t->dt) {
  case DT_F32: IOTA_TILE(float) break;
  case DT_F64: IOTA_TILE(double) break;
  case DT_I32: IOTA_TILE(int32_t) break;
  default: IOTA_TILE(int64_t) break;
  }
#undef IOTA_TILE
  return true;
}

/* arange: NumPy's fill, in the dtype's own arithmetic. */
static void kern_arange(KARGS) {
  (void)in; (void)nin;
  Array *r = new_arr(&outt[0]);
  double s = at->f[0], s1 = at->f[0] + at->f[2];
  int64_t n = r->size;
  switch ((DType)r->dt) {
  case DT_F32: case DT_F64: case DT_I32: case DT_I64: {
    FillJob j = {at, r, 0, 0, NULL, arange_range, 0, 0};
    if (r->dt == DT_I32 || r->dt == DT_I64) {   /* start and start + step as i64, as convert does */
      Array *t = arr_new(DT_I64, 0, NULL);
      arr_setf(t, 0, s);
      j.b0 = arr_geti(t, 0);
      arr_setf(t, 0, s1);
      j.d = (uint64_t)arr_geti(t, 0) - (uint64_t)j.b0;
      arr_unref(t);
    }
    if (n) fill_run(&j);
    break;
  }
  case DT_BF16: case DT_F16: case DT_C64: case DT_C128: {   /* as f32 (f64 for c128), then rounded */
    double b0 = r->dt == DT_C128 ? s : (float)s, d = (r->dt == DT_C128 ? s1 : (float)s1) - b0;
    for (int64_t i = 0; i < n; i++) arr_setf(r, i, i == 1 ? s1 : r->dt == DT_C128 ? b0 + (double)i * d
                                                            : (double)((float)b0 + (float)i * (float)d));
    break;
  }
  default: {
    Array *t = arr_new(DT_I64, 0, NULL);
    arr_setf(t, 0, s);
    int64_t b0 = arr_geti(t, 0);
    arr_setf(t, 0, s1);
    int64_t d = arr_geti(t, 0) - b0;
    arr_unref(t);
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
  if (!rule_check_shape(cx, "shape", &shp)) return false;
  rule_set_type(out, dt, shp.n, shp.v);
  at->dtype = dt;
  at->l[0] = shp;
  at->f[0] = v;
  return true;
}

/* full's elements [lo, hi): the first copied in, then the filled part
   doubled until the range is full. */
static void full_range(FillJob *j, int64_t lo, int64_t hi) {
  size_t es = dtype_sizes[j->r->dt];
  char *o = (char *)j->r->data + (size_t)lo * es;
  size_t total = (size_t)(hi - lo) * es, done = es;
  if (hi <= lo) return;
  memcpy(o, j->one, es);
  while (done < total) {
    size_t k = done < total - done ? done : total - done;
    memcpy(o + done, o, k);
    done += k;
  }
}

/* full: one value converted to the dtype (floats to integers as
   convert_element_type does), copied everywhere. */
static void kern_full(KARGS) {
  (void)in; (void)nin;
  Array *r = new_arr(&outt[0]), *one = arr_new((DType)outt[0].dt, 0, NULL);
  arr_setf(one, 0, at->f[0]);
  FillJob j = {at, r, 0, 0, one->data, full_range, 0, 0};
  if (r->size) fill_run(&j);
  arr_unref(one);
  out[0] = r;
}

/* =========================================================================
** The table
** ========================================================================= */

/* The table's columns but the transpose rules, which transpose.c owns. */
const PrimInfo prim_table[P_COUNT] = {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, exec, tr, jvp, cost) \
  [P_##tag] = {name, alias, nmin, nmax, nout, params, shape, vrule, kernel},
#include "prims.def"
#undef PRIM
};

/* =========================================================================
** Elementwise over many blocks (eval.c)
** ========================================================================= */

/* Built from prim_table on first use (once per process, from any thread:
   pthread_once), constant afterwards. */
static signed char ew_ops[P_COUNT];
static pthread_once_t ew_ops_once = PTHREAD_ONCE_INIT;

static void ew_ops_init(void) {
  for (int p = 0; p < P_COUNT; p++) {
    KernFn k = prim_table[p].kernel;
    int op = -1;
#define X(name, o) if (k == kern_##name) op = o;
    BINARY_KERNELS(X)
    UNARY_KERNELS(X)
#undef X
    ew_ops[p] = (signed char)op;
  }
}

int prim_ew_op(int prim) {
  pthread_once(&ew_ops_once, ew_ops_init);
  return prim >= 0 && prim < P_COUNT ? ew_ops[prim] : -1;
}

void prim_ew_apply(int op, const Array *a, const Array *b, Array *r) {
  if (op >= U_NEG) ew_unary(op, a, r);
  else ew_binary(op, a, b, r);
}

/* Is `name` one of the space-separated words of `list`? */
static bool word_in(Str name, const char *list) {
  for (const char *p = list; p && *p;) {
    while (*p == ' ') p++;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if (e > p && (int)(e - p) == name.n && !memcmp(p, name.p, (size_t)name.n)) return true;
    p = e;
  }
  return false;
}

/* A primitive by canonical name or alias (the alias column may list
   several, space-separated); -1 if none. */
int prim_lookup(Str name) {
  for (int p = 0; p < P_COUNT; p++)
    if (str_eqc(name, prim_table[p].name) || word_in(name, prim_table[p].alias)) return p;
  return -1;
}

bool prim_accepts(int prim, Str key) {
  const char *p = prim_table[prim].params;
  if (p && strchr(p, '*')) return true;        /* JAX's call primitives keep any parameter */
  while (p && *p) {
    while (*p == ' ' || *p == '|') p++;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if (e > p && (int)(e - p) == key.n && !memcmp(p, key.p, (size_t)key.n)) return true;
    p = e;
  }
  return false;
}

int prim_nout_params(int prim, int nin, AstParam *const *params, int nparams) {
  if (prim_table[prim].nout != NOUT_SIZES) return prim_nout(prim, nin);
  for (int i = 0; i < nparams; i++) {
    if (!str_eqc(params[i]->key, "sizes")) continue;
    const PVal *v = params[i]->v ? pv_unparen(params[i]->v) : NULL;
    if (v && (v->k == PV_TUPLE || v->k == PV_LIST)) return v->n;
    return 1;
  }
  return 1;
}
