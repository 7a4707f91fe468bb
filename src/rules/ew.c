/*
** ew.c — the elementwise and reduction engines of the local primitives.
**
** ew_unary and ew_binary apply an operation code (EwOp) to every element,
** with one switch over the dtypes generated from the SHM_DTYPES X-macro.
** Floats are computed in double and rounded once to the dtype (exact for
** + - * / and sqrt, correctly rounded in practice for the rest), integers
** in 64-bit wrap-around arithmetic truncated to the dtype, bools as 0/1.
** The common operations run as typed loops (one per operation and dtype,
** so they vectorise) with exactly those results; f32 tanh too (tanh_f32).
** Big operations are split in two ranges of elements run on two threads
** (par.h): each element is computed the same way wherever the split falls.
**
** ew_reduce folds any set of axes with a binary EwOp (floats accumulate in
** double, integers in 64 bits); ew_scan and ew_arg run along one axis
** (cumulative operations, argmax/argmin).
*/
#include <complex.h>
#include <math.h>
#include "ew.h"
#include "half.h"
#include "par.h"

/* digamma(x), the derivative of lgamma: NaN at 0 and the negative integers
   (as XLA), the reflection formula below 1/2, the recurrence up to 10,
   then the asymptotic series (its remainder is below 1e-16 there). */
static double digamma(double x) {
  if (isnan(x) || x == -INFINITY) return NAN;
  if (x <= 0 && x == floor(x)) return NAN;
  if (x < 0.5) return digamma(1.0 - x) - M_PI / tan(M_PI * x);
  double acc = 0;
  while (x < 10) {
    acc -= 1.0 / x;
    x += 1.0;
  }
  if (isinf(x)) return x;
  double r = 1.0 / (x * x);
  /* -1/(2x) - sum B_2k / (2k x^2k), k = 1..7 */
  double s = r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 -
             r * (691.0 / 32760 - r * (1.0 / 12)))))));
  return acc + log(x) - 0.5 / x - s;
}

/* The Hurwitz zeta function zeta(s, q) = sum_k (q + k)^-s for s > 1, by
   the Euler-Maclaurin formula: the first terms summed until q + k > 9,
   then the tail integral and its Bernoulli corrections. */
static double hurwitz_zeta(double s, double q) {
  /* (2k)! / B_2k for k = 1..12 */
  static const double fb[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                                7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                                -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
  if (s == 1) return INFINITY;
  if (s < 1 || isnan(s) || isnan(q)) return NAN;
  if (q <= 0) {
    if (q == floor(q)) return INFINITY;
    if (s != floor(s)) return NAN;
  }
  double sum = pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i++;
    a += 1.0;
    b = pow(a, -s);
    sum += b;
    if (fabs(b / sum) < 1e-17) return sum;
  }
  double w = a, f = 1, k = 0;
  sum += b * w / (s - 1) - 0.5 * b;
  for (int j = 0; j < 12; j++) {
    f *= s + k;
    b /= w;
    double t = f * b / fb[j];
    sum += t;
    if (fabs(t / sum) < 1e-17) break;
    k += 1;
    f *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

double ew_digamma(double x) { return digamma(x); }
double ew_hurwitz_zeta(double s, double q) { return hurwitz_zeta(s, q); }

/* polygamma(m, x), the m-th derivative of digamma: NaN unless m is a
   whole number (as XLA); (-1)^(m+1) m! zeta(m + 1, x) for m >= 1. */
static double polygamma(double m, double x) {
  if (isnan(m) || isnan(x) || m < 0 || m != floor(m) || isinf(m)) return NAN;
  if (m == 0) return digamma(x);
  double z = hurwitz_zeta(m + 1, x);
  return (fmod(m, 2) == 0 ? -1.0 : 1.0) * exp(lgamma(m + 1)) * z;
}

/* A binary operation on floats (computed in double). */
static double bin_f(int op, double a, double b) {
  switch (op) {
  case B_ADD: return a + b;
  case B_SUB: return a - b;
  case B_MUL: return a * b;
  case B_DIV: return a / b;
  case B_REM: return fmod(a, b);
  case B_POW: return pow(a, b);
  case B_MAX: return isnan(a) ? a : isnan(b) ? b : a >= b ? a : b;
  case B_MIN: return isnan(a) ? a : isnan(b) ? b : a <= b ? a : b;
  case B_ATAN2: return atan2(a, b);
  case B_NEXTAFTER: return nextafter(a, b);
  case B_POLYGAMMA: return polygamma(a, b);
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

/* A comparison, the same text for floats (NaN compares unequal to
   everything) and integers (bools as 0/1). */
#define COMPARE(op, a, b)                                                  \
  ((op) == C_EQ ? (a) == (b) : (op) == C_NE ? (a) != (b) : (op) == C_LT ? (a) < (b) \
   : (op) == C_LE ? (a) <= (b) : (op) == C_GT ? (a) > (b) : (a) >= (b))
static bool cmp_f(int op, double a, double b) { return COMPARE(op, a, b); }
static bool cmp_i(int op, int64_t a, int64_t b) { return COMPARE(op, a, b); }

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
  case U_DIGAMMA: return digamma(x);
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

/* A binary operation on unsigned integers of `bits` bits (zero-extended);
   the caller truncates.  x / 0 is all ones and x % 0 is x, as XLA has
   them; an arithmetic shift reads the bits as signed. */
static uint64_t bin_u(int op, uint64_t a, uint64_t b, int bits) {
  switch (op) {
  case B_ADD: return a + b;
  case B_SUB: return a - b;
  case B_MUL: return a * b;
  case B_DIV: return b == 0 ? ~UINT64_C(0) : a / b;
  case B_REM: return b == 0 ? a : a % b;
  case B_POW: return (uint64_t)ipow((int64_t)a, (int64_t)(b > INT64_MAX ? INT64_MAX : b));
  case B_MAX: return a > b ? a : b;
  case B_MIN: return a < b ? a : b;
  case B_AND: return a & b;
  case B_OR: return a | b;
  case B_XOR: return a ^ b;
  case B_SHL: return b >= (uint64_t)bits ? 0 : a << b;
  case B_SHRA: {
    int64_t v = bits == 64 ? (int64_t)a : (int64_t)(a << (64 - bits)) >> (64 - bits);
    return (uint64_t)(b >= (uint64_t)bits ? (v < 0 ? -1 : 0) : v >> b);
  }
  case B_SHRL: return b >= (uint64_t)bits ? 0 : a >> b;
  default: return 0;
  }
}

static bool cmp_u(int op, uint64_t a, uint64_t b) { return COMPARE(op, a, b); }

/* A unary operation on unsigned integers (wrapping; the caller truncates). */
static uint64_t un_u(int op, uint64_t x) {
  switch (op) {
  case U_NEG: return 0 - x;
  case U_SIGN: return x != 0;
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

static inline double max_np(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a >= b ? a : b; }
static inline double min_np(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a <= b ? a : b; }

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
SHM_WIDE static bool ew_binary_typed(int op, const Array *a, const Array *b, Array *r, int64_t n, bool sa, bool sb) {
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

static void ew_binary_seq(int op, const Array *a, const Array *b, Array *r);
static void ew_unary_seq(int op, const Array *a, Array *r);

/* ---- the 16-bit floats: in f32, each result rounded once -------------------- */

#define HCHUNK 512

/* Elements [lo, lo + m) of a 16-bit float array (or its one element, a
   scalar) as f32 in buf; returns an f32 view of them. */
static Array half_view(const Array *a, int64_t lo, int64_t m, bool scalar, float *buf) {
  Array v = *a;
  v.dt = DT_F32;
  v.data = buf;
  int64_t cnt = scalar ? 1 : m, off = scalar ? 0 : lo;
  const uint16_t *h = (const uint16_t *)a->data + off;
  if (a->dt == DT_BF16) for (int64_t i = 0; i < cnt; i++) buf[i] = bf16_to_f32(h[i]);
  else for (int64_t i = 0; i < cnt; i++) buf[i] = f16_to_f32(h[i]);
  v.rank = scalar ? 0 : 1;
  v.size = cnt;
  v.shape[0] = cnt;
  return v;
}

/* Round m f32 results into elements [lo, lo + m) of a 16-bit array. */
static void half_store(Array *r, int64_t lo, int64_t m, const float *buf) {
  uint16_t *h = (uint16_t *)r->data + lo;
  if (r->dt == DT_BF16) for (int64_t i = 0; i < m; i++) h[i] = bf16_from_f32(buf[i]);
  else for (int64_t i = 0; i < m; i++) h[i] = f16_from_f32(buf[i]);
}

/* An output view of elements [lo, lo + m): f32 in buf, or r's own bools. */
static Array half_out(Array *r, int64_t lo, int64_t m, float *buf) {
  Array v = *r;
  v.rank = 1;
  v.size = m;
  v.shape[0] = m;
  if (r->dt == DT_BOOL) v.data = (uint8_t *)r->data + lo;
  else { v.dt = DT_F32; v.data = buf; }
  return v;
}

static void ew_half_binary(int op, const Array *a, const Array *b, Array *r) {
  float xa[HCHUNK], xb[HCHUNK], xo[HCHUNK];
  bool s0 = a->rank == 0 && r->rank != 0, s1 = b->rank == 0 && r->rank != 0;
  for (int64_t lo = 0; lo < r->size; lo += HCHUNK) {
    int64_t m = r->size - lo < HCHUNK ? r->size - lo : HCHUNK;
    Array va = half_view(a, lo, m, s0 || a->rank == 0, xa), vb = half_view(b, lo, m, s1 || b->rank == 0, xb);
    Array vo = half_out(r, lo, m, xo);
    if (r->rank == 0) { va.rank = vb.rank = vo.rank = 0; }
    ew_binary_seq(op, &va, &vb, &vo);
    if (r->dt != DT_BOOL) half_store(r, lo, m, xo);
  }
}

static void ew_half_unary(int op, const Array *a, Array *r) {
  float xa[HCHUNK], xo[HCHUNK];
  for (int64_t lo = 0; lo < r->size; lo += HCHUNK) {
    int64_t m = r->size - lo < HCHUNK ? r->size - lo : HCHUNK;
    Array va = half_view(a, lo, m, false, xa), vo = half_out(r, lo, m, xo);
    ew_unary_seq(op, &va, &vo);
    if (r->dt != DT_BOOL) half_store(r, lo, m, xo);
  }
}

/* ---- complex: NumPy's formulas, in the parts' precision ------------------------ */

/* One complex operation, in float for c64 (T float) and double for c128. */
#define CBIN(T, op, ar, ai, br, bi, rr, ri)                                            \
  do {                                                                                 \
    switch (op) {                                                                      \
    case B_ADD: rr = ar + br; ri = ai + bi; break;                                     \
    case B_SUB: rr = ar - br; ri = ai - bi; break;                                     \
    case B_MUL: rr = ar * br - ai * bi; ri = ar * bi + ai * br; break;                 \
    case B_DIV: {                                                                      \
      T abr = (T)fabs((double)br), abi = (T)fabs((double)bi);                          \
      if (abr >= abi) {                                                                \
        if (abr == 0 && abi == 0) { rr = ar / abr; ri = ai / abr; }                    \
        else {                                                                         \
          T rat = bi / br, scl = (T)1 / (br + bi * rat);                               \
          rr = (ar + ai * rat) * scl; ri = (ai - ar * rat) * scl;                      \
        }                                                                              \
      } else {                                                                         \
        T rat = br / bi, scl = (T)1 / (bi + br * rat);                                 \
        rr = (ar * rat + ai) * scl; ri = (ai * rat - ar) * scl;                        \
      }                                                                                \
      break;                                                                           \
    }                                                                                  \
    default: rr = 0; ri = 0; break;                                                    \
    }                                                                                  \
  } while (0)

static void ew_complex_binary(int op, const Array *a, const Array *b, Array *r) {
  int64_t n = r->size, sa = a->rank || r->rank == 0 ? 1 : 0, sb = b->rank || r->rank == 0 ? 1 : 0;
  bool cmp = op == C_EQ || op == C_NE;
  for (int64_t i = 0; i < n; i++) {
    if (a->dt == DT_C64) {
      ShmC64 x = ((const ShmC64 *)a->data)[i * sa], y = ((const ShmC64 *)b->data)[i * sb];
      if (cmp) { ((uint8_t *)r->data)[i] = (x.re == y.re && x.im == y.im) == (op == C_EQ); continue; }
      ShmC64 *o = &((ShmC64 *)r->data)[i];
      CBIN(float, op, x.re, x.im, y.re, y.im, o->re, o->im);
    } else {
      ShmC128 x = ((const ShmC128 *)a->data)[i * sa], y = ((const ShmC128 *)b->data)[i * sb];
      if (cmp) { ((uint8_t *)r->data)[i] = (x.re == y.re && x.im == y.im) == (op == C_EQ); continue; }
      ShmC128 *o = &((ShmC128 *)r->data)[i];
      CBIN(double, op, x.re, x.im, y.re, y.im, o->re, o->im);
    }
  }
}

/* re + i im, infinities and NaNs kept (a complex is laid out as two
   doubles; CMPLX is not everywhere). */
static double complex mkc(double re, double im) {
  double complex z;
  double parts[2] = {re, im};
  memcpy(&z, parts, sizeof z);
  return z;
}

/* A complex unary operation in double (the result rounded to the parts'
   precision by the caller). */
static double complex un_c(int op, double complex z) {
  switch (op) {
  case U_NEG: return -z;
  case U_SIGN: return z == 0 ? 0 : z / cabs(z);
  case U_EXP: return cexp(z);
  case U_LOG: return clog(z);
  case U_SQRT: return csqrt(z);
  case U_RSQRT: return 1.0 / csqrt(z);
  case U_SIN: return csin(z);
  case U_COS: return ccos(z);
  case U_TAN: return ctan(z);
  case U_TANH: return ctanh(z);
  case U_EXPM1: return cexp(z) - 1.0;
  case U_LOG1P: return clog(1.0 + z);
  default: return z;
  }
}

static void ew_complex_unary(int op, const Array *a, Array *r) {
  for (int64_t i = 0; i < a->size; i++) {
    double re, im;
    arr_getc(a, i, &re, &im);
    if (op == U_ISFINITE) { ((uint8_t *)r->data)[i] = isfinite(re) && isfinite(im); continue; }
    if (op == U_ABS) { arr_setf(r, i, a->dt == DT_C64 ? (double)hypotf((float)re, (float)im) : hypot(re, im)); continue; }
    double complex z = un_c(op, mkc(re, im));
    arr_setc(r, i, creal(z), cimag(z));
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
  if (kd == 'H') { ew_half_binary(op, a, b, r); return; }
  if (kd == 'C') { ew_complex_binary(op, a, b, r); return; }
  switch ((DType)a->dt) {
#define X(tag, nm, np, sz, T, kind)                                                     \
  case DT_##tag: {                                                                      \
    const T *x = (const T *)a->data, *y = (const T *)b->data;                           \
    if (cmp) {                                                                          \
      uint8_t *o = (uint8_t *)r->data;                                                  \
      if (kd == 'F')                                                                    \
        for (int64_t i = 0; i < n; i++) o[i] = cmp_f(op, (double)x[i * sa], (double)y[i * sb]); \
      else if (kd == 'U')                                                               \
        for (int64_t i = 0; i < n; i++) o[i] = cmp_u(op, (uint64_t)x[i * sa], (uint64_t)y[i * sb]); \
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
      else if (kd == 'U')                                                               \
        for (int64_t i = 0; i < n; i++)                                                 \
          o[i] = (T)bin_u(op, (uint64_t)x[i * sa], (uint64_t)y[i * sb], bits);           \
      else                                                                              \
        for (int64_t i = 0; i < n; i++)                                                 \
          o[i] = (T)bin_i(op, (int64_t)x[i * sa], (int64_t)y[i * sb], bits);             \
    }                                                                                   \
    break;                                                                              \
  }
    SHM_PLAIN_DTYPES(X)
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
   double approximation t (relative error below 2^-50 in tests, 2^-46
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
   2^k (e^r - 1) + (2^k - 1), which cancels nothing.  The series by
   Estrin's scheme (terms in pairs, pairs of pairs by r^2, r^4, r^8):
   the same terms as Horner's rule in chains of 5 steps instead of 13,
   so that consecutive elements overlap in the vector units. */
static inline double tanh_approx(double x) {
  double y = 2 * fabs(x);
  double kd = y * 0x1.71547652b82fep0 + 0x1.8p52;
  uint64_t ku;
  memcpy(&ku, &kd, sizeof ku);
  kd -= 0x1.8p52;
  double r = (y - kd * 0x1.62e42fefa3800p-1) - kd * 0x1.ef35793c7673p-45;
  double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  double p0 = 1 + r * (1.0 / 2), p1 = 1.0 / 6 + r * (1.0 / 24), p2 = 1.0 / 120 + r * (1.0 / 720);
  double p3 = 1.0 / 5040 + r * (1.0 / 40320), p4 = 1.0 / 362880 + r * (1.0 / 3628800);
  double p5 = 1.0 / 39916800 + r * (1.0 / 479001600);
  double s0 = (p0 + r2 * p1) + r4 * (p2 + r2 * p3), s1 = (p4 + r2 * p5) + r4 * (1.0 / 6227020800.0);
  double q = r * (s0 + r8 * s1);
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

/* In pieces of 256, by loops that vectorise but the last, which is rare
   (SHM_WIDE, defs.h: the AVX2 and AVX-512 copies give the same bits; all three
   checked against the library for all 2^32 floats). */
SHM_WIDE static void tanh_f32(const float *x, float *o, int64_t n) {
  double t[256], xd[256];     /* xd: the chunk's inputs, as o may be x (a donated operand, eval.c) */
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    int64_t m = n - i0 < 256 ? n - i0 : 256;
    const float *xs = x + i0;
    float *os = o + i0;
    for (int64_t i = 0; i < m; i++) xd[i] = (double)xs[i];
    for (int64_t i = 0; i < m; i++) t[i] = tanh_approx(xd[i]);
    int unsure = 0;
    for (int64_t i = 0; i < m; i++) {
      os[i] = (float)t[i];
      unsure |= TANH_UNSURE(t[i], xd[i]);
    }
    if (unsure)
      for (int64_t i = 0; i < m; i++)
        if (TANH_UNSURE(t[i], xd[i])) os[i] = (float)tanh(xd[i]);
  }
}

/* The typed loop of op on a's dtype, if it has one; false: none. */
SHM_WIDE static bool ew_unary_typed(int op, const Array *a, Array *r, int64_t n) {
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
  if (kd == 'H') { ew_half_unary(op, a, r); return; }
  if (kd == 'C') { ew_complex_unary(op, a, r); return; }
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
      else if (kd == 'U')                                                               \
        for (int64_t i = 0; i < n; i++) o[i] = (T)un_u(op, (uint64_t)x[i]);             \
      else                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = (T)un_i(op, (int64_t)x[i]);              \
    }                                                                                   \
    break;                                                                              \
  }
    SHM_PLAIN_DTYPES(X)
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

void ew_binary(int op, const Array *a, const Array *b, Array *r) { ew_run(op, a, b, r); }
void ew_apply_small(int op, const Array *a, const Array *b, Array *r) {
  if (op >= U_NEG) ew_unary_seq(op, a, r);
  else ew_binary_seq(op, a, b, r);
}
void ew_unary(int op, const Array *a, Array *r) { ew_run(op, a, NULL, r); }


/* ---- reductions and scans ---------------------------------------------------- */

/* The identity of a reduction op on floats. */
static double red_init_f(int op) {
  switch (op) {
  case B_MUL: return 1.0;
  case B_MAX: return -INFINITY;
  case B_MIN: return INFINITY;
  default: return 0.0;
  }
}

/* The identity of a reduction op on integers or bools of dtype dt (an
   unsigned dtype's as its bits). */
static int64_t red_init_i(int op, int dt) {
  bool b = dt == DT_BOOL, u = dtype_is_unsigned((DType)dt);
  int bits = dtype_sizes[dt] * 8;
  int64_t smin = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
  switch (op) {
  case B_MUL: return 1;
  case B_MAX: return b || u ? 0 : smin;
  case B_MIN: return b ? 1 : u ? -1 : bits == 64 ? INT64_MAX : -(smin + 1);
  case B_AND: return b ? 1 : -1;
  default: return 0;
  }
}

/* One step of a fold on integers of dtype dt (unsigned ones as bits). */
static int64_t fold_i(int op, int64_t acc, const Array *a, int64_t i, int bits) {
  if (dtype_is_unsigned((DType)a->dt)) return (int64_t)bin_u(op, (uint64_t)acc, arr_getu(a, i), bits);
  return bin_i(op, acc, arr_geti(a, i), bits);
}

/* A complex fold (sum or product) of a's elements over the axes of a
   reduction, into r: accumulated in double, rounded once. */
static void reduce_complex(int op, const Array *a, const int64_t *ostr, Array *r) {
  double *acc = mem_alloc(sizeof(double) * 2 * (size_t)r->size);
  for (int64_t j = 0; j < r->size; j++) { acc[2 * j] = op == B_MUL; acc[2 * j + 1] = 0; }
  int64_t idx[SHM_MAXRANK] = {0}, o = 0;
  for (int64_t i = 0; i < a->size; i++) {
    double re, im, *c = &acc[2 * o];
    arr_getc(a, i, &re, &im);
    if (op == B_MUL) {
      double t = c[0] * re - c[1] * im;
      c[1] = c[0] * im + c[1] * re;
      c[0] = t;
    } else {
      c[0] += re;
      c[1] += im;
    }
    for (int d = a->rank - 1; d >= 0; d--) {
      o += ostr[d];
      if (++idx[d] < a->shape[d]) break;
      o -= ostr[d] * a->shape[d];
      idx[d] = 0;
    }
  }
  for (int64_t j = 0; j < r->size; j++) arr_setc(r, j, acc[2 * j], acc[2 * j + 1]);
  mem_free(acc);
}

/* The common reductions of f32 and f64 arrays by a typed loop: the
   reduced axes the last ones (each result folds one contiguous run) or
   the first ones (each folds one element of every row, rows in order).
   The same folds, in the same order, as the general loop below; false
   when a is not such a case. */
static bool reduce_float_fast(int op, const Array *a, const bool *red, Array *r, double *af) {
  int rank = a->rank, k = 0;
  if (a->dt != DT_F32 && a->dt != DT_F64) return false;
  while (k < rank && !red[k]) k++;
  int e = k;
  while (e < rank && red[e]) e++;
  bool suffix = e == rank, prefix = k == 0;
  for (int d = e; d < rank; d++) if (red[d]) return false;
  if (!suffix && !prefix) return false;
  int64_t n = a->size / r->size;           /* elements folded into each result */
  const float *xf = a->dt == DT_F32 ? a->data : NULL;
  const double *xd = a->dt == DT_F64 ? a->data : NULL;
#define RD(i) (xf ? (double)xf[i] : xd[i])
  /* sums: the same additions as bin_f's, without a call per element */
#define SUMS(x)                                                                           \
  do {                                                                                    \
    if (suffix) {                                                                         \
      for (int64_t j = 0; j < r->size; j++) {                                             \
        double acc = af[j];                                                               \
        for (int64_t i = j * n; i < (j + 1) * n; i++) acc += (double)x[i];                \
        af[j] = acc;                                                                      \
      }                                                                                   \
    } else {                                                                              \
      for (int64_t row = 0; row < n; row++)                                               \
        for (int64_t j = 0; j < r->size; j++) af[j] += (double)x[row * r->size + j];      \
    }                                                                                     \
  } while (0)
  if (op == B_ADD && xf) SUMS(xf);
  else if (op == B_ADD) SUMS(xd);
#undef SUMS
  else if (suffix) {
    for (int64_t j = 0; j < r->size; j++) {
      double acc = af[j];
      for (int64_t i = j * n; i < (j + 1) * n; i++) acc = bin_f(op, acc, RD(i));
      af[j] = acc;
    }
  } else {
    for (int64_t row = 0; row < n; row++)
      for (int64_t j = 0; j < r->size; j++) af[j] = bin_f(op, af[j], RD(row * r->size + j));
  }
#undef RD
  return true;
}

/* Folds `a` over the axes `axes` (distinct, in range) with the binary op
   into r, whose shape is a's without those axes.  Elements are folded in
   row-major order; floats accumulate in double, integers in 64 bits. */
void ew_reduce(int op, const Array *a, const IntList *axes, Array *r) {
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
  if (dtype_is_complex((DType)a->dt)) {
    reduce_complex(op, a, ostr, r);
    return;
  }
  double *af = fl ? mem_alloc(sizeof(double) * (size_t)r->size) : NULL;
  int64_t *ai = fl ? NULL : mem_alloc(sizeof(int64_t) * (size_t)r->size);
  for (int64_t j = 0; j < r->size; j++) {
    if (fl) af[j] = red_init_f(op);
    else ai[j] = red_init_i(op, a->dt);
  }
  for (int64_t i = fl && reduce_float_fast(op, a, red, r, af) ? a->size : 0; i < a->size; i++) {
    if (fl) af[o] = bin_f(op, af[o], arr_getf(a, i));
    else ai[o] = fold_i(op, ai[o], a, i, bits);
    for (int d = rank - 1; d >= 0; d--) {
      o += ostr[d];
      if (++idx[d] < a->shape[d]) break;
      o -= ostr[d] * a->shape[d];
      idx[d] = 0;
    }
  }
  for (int64_t j = 0; j < r->size; j++) {
    if (fl) arr_setf(r, j, af[j]);
    else arr_setu(r, j, (uint64_t)ai[j]);
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
void ew_scan(int op, const Array *a, int axis, bool reverse, Array *r) {
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
          ai = fold_i(op, ai, a, i, bits);
          arr_setu(r, i, (uint64_t)ai);
        }
      }
    }
}

/* Index of the first maximum (or minimum) along `axis`; NaN counts as
   the extreme, as in JAX and NumPy. */
void ew_arg(bool is_max, const Array *a, int axis, Array *r) {
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
      } else if (dtype_is_unsigned((DType)a->dt)) {
        uint64_t bv = arr_getu(a, base);
        for (int64_t k = 1; k < n; k++) {
          uint64_t v = arr_getu(a, base + k * inner);
          if (is_max ? v > bv : v < bv) bv = v, best = k;
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

