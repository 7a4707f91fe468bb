/*
** ew.h — the elementwise and reduction engines (ew.c).
**
** Every function reads only dt, rank, size, shape and data of its arrays,
** writes only its result `r` (allocated by the caller with the result's
** dtype and shape), never fails and allocates nothing.  A rank-0 operand
** of a binary operation broadcasts against r.
*/
#ifndef SHM_EW_H
#define SHM_EW_H

#include "ir.h"

/* The operations of the elementwise engine; the binary ones are also the
   folding operations of the reductions and scans. */
typedef enum EwOp {
  /* binary, result of the operands' dtype */
  B_ADD, B_SUB, B_MUL, B_DIV, B_REM, B_POW, B_MAX, B_MIN, B_AND, B_OR, B_XOR,
  B_ATAN2, B_NEXTAFTER, B_POLYGAMMA, B_SHL, B_SHRA, B_SHRL,
  /* comparisons, result bool */
  C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE,
  /* unary */
  U_NEG, U_ABS, U_SIGN, U_NOT, U_COPY, U_FLOOR, U_CEIL, U_ROUND_AWAY, U_ROUND_EVEN,
  U_ISFINITE, U_EXP, U_EXP2, U_EXPM1, U_LOG, U_LOG1P, U_TANH, U_LOGISTIC, U_SQRT, U_RSQRT,
  U_CBRT, U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_SINH, U_COSH, U_ASINH, U_ACOSH,
  U_ATANH, U_ERF, U_ERFC, U_LGAMMA, U_DIGAMMA
} EwOp;

/* r = a op b (binary and comparison ops), operands of one dtype. */
void ew_binary(int op, const Array *a, const Array *b, Array *r);
/* r = op a (unary ops). */
void ew_unary(int op, const Array *a, Array *r);

/* digamma(x) and the Hurwitz zeta function zeta(s, q) (s > 1) in double,
   as the digamma and polygamma primitives compute them. */
double ew_digamma(double x);
double ew_hurwitz_zeta(double s, double q);
/* r = a op b, or op a (a unary op: b unused), on the calling thread
   alone whatever the size: for small arrays, where ew_binary's and
   ew_unary's look at the size costs more than it saves.  The same
   results. */
void ew_apply_small(int op, const Array *a, const Array *b, Array *r);
/* r = a folded with the binary op over the axes in `axes`. */
void ew_reduce(int op, const Array *a, const IntList *axes, Array *r);
/* r = the running fold of a along `axis` (from the end when reverse). */
void ew_scan(int op, const Array *a, int axis, bool reverse, Array *r);
/* r = the index of the largest (smallest) element of a along `axis`, the
   first one on ties, NaN counting as largest (smallest). */
void ew_arg(bool is_max, const Array *a, int axis, Array *r);

#endif
