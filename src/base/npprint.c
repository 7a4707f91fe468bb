/*
** npprint.c — printing arrays exactly as NumPy 1.24's str() does.
**
** Three layers:
**
**   1. Digit generation.  A small fixed-size big-integer type and a
**      shortest-round-trip digit generator in the style of Steele & White /
**      Burger & Dybvig ("Dragon4"), with the same cut-off and rounding rules
**      NumPy's printer applies: an optional maximum and minimum number of
**      digits (counted either in total or past the decimal point), margins
**      that are inclusive when the significand is even, and round-half-even
**      on the final digit.
**
**   2. Number layout.  Positional ("12.5", "0.001") and scientific
**      ("1.25e+01") renderings of the generated digits with NumPy's trimming
**      modes and left/right padding, plus integers and booleans.
**
**   3. Array layout.  A pre-pass over the elements that will be shown
**      (all of them, or only the corners when the array is summarised)
**      picks one common format; a recursive walk then writes the nested
**      brackets, wrapping rows at 75 columns.
**
** Nothing here allocates but a complex array's parts: every number is
** rendered into a stack buffer and appended to the caller's Buf.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include "err.h"
#include "npprint.h"
#include "half.h"

/* NumPy's default print options. */
#define FMT_PRECISION 8
#define FMT_THRESHOLD 1000
#define FMT_EDGEITEMS 3
#define FMT_LINEWIDTH 75

/* ---- big integers ------------------------------------------------------ */

/* Enough 32-bit words for every intermediate value of a binary64 number
   (the largest is about 10^344, roughly 1150 bits). */
#define BIG_WORDS 80

typedef struct Big {
  int len;                    /* words in use; no leading zero words */
  uint32_t w[BIG_WORDS];      /* least significant word first */
} Big;

/* Set a big integer from a 64-bit value. */
static void big_set(Big *r, uint64_t v) {
  r->len = 0;
  while (v) {
    r->w[r->len++] = (uint32_t)v;
    v >>= 32;
  }
}

/* Copy src into dst. */
static void big_copy(Big *dst, const Big *src) {
  dst->len = src->len;
  memcpy(dst->w, src->w, sizeof(uint32_t) * (size_t)src->len);
}

/* Three-way comparison: negative, zero or positive as a <, ==, > b. */
static int big_cmp(const Big *a, const Big *b) {
  if (a->len != b->len) return a->len < b->len ? -1 : 1;
  for (int i = a->len - 1; i >= 0; i--)
    if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
  return 0;
}

/* r = a + b (r may alias either operand). */
static void big_add(Big *r, const Big *a, const Big *b) {
  int n = a->len > b->len ? a->len : b->len;
  uint64_t carry = 0;
  for (int i = 0; i < n; i++) {
    uint64_t s = carry;
    if (i < a->len) s += a->w[i];
    if (i < b->len) s += b->w[i];
    r->w[i] = (uint32_t)s;
    carry = s >> 32;
  }
  r->len = n;
  if (carry && n < BIG_WORDS) r->w[r->len++] = (uint32_t)carry;
}

/* a -= b, for a >= b. */
static void big_sub(Big *a, const Big *b) {
  int64_t borrow = 0;
  for (int i = 0; i < a->len; i++) {
    int64_t d = (int64_t)a->w[i] - borrow - (i < b->len ? (int64_t)b->w[i] : 0);
    borrow = d < 0;
    a->w[i] = (uint32_t)(d + (borrow ? ((int64_t)1 << 32) : 0));
  }
  while (a->len > 0 && a->w[a->len - 1] == 0) a->len--;
}

/* r *= m for a small multiplier. */
static void big_mul_small(Big *r, uint32_t m) {
  uint64_t carry = 0;
  for (int i = 0; i < r->len; i++) {
    uint64_t p = (uint64_t)r->w[i] * m + carry;
    r->w[i] = (uint32_t)p;
    carry = p >> 32;
  }
  if (carry && r->len < BIG_WORDS) r->w[r->len++] = (uint32_t)carry;
  if (m == 0) r->len = 0;
}

/* r *= 10^n. */
static void big_mul_pow10(Big *r, int n) {
  static const uint32_t p10[10] = {1,       10,       100,       1000,
                                   10000,   100000,   1000000,   10000000,
                                   100000000, 1000000000};
  while (n >= 9) {
    big_mul_small(r, p10[9]);
    n -= 9;
  }
  if (n > 0) big_mul_small(r, p10[n]);
}

/* r <<= n bits. */
static void big_shl(Big *r, int n) {
  if (r->len == 0 || n == 0) return;
  int words = n / 32, bits = n % 32;
  int old = r->len;
  int nl = old + words + 1;
  if (nl > BIG_WORDS) nl = BIG_WORDS;
  for (int i = nl - 1; i >= 0; i--) {
    int src = i - words;
    uint32_t hi = (src >= 0 && src < old) ? r->w[src] : 0;
    uint32_t lo = (src - 1 >= 0 && src - 1 < old) ? r->w[src - 1] : 0;
    r->w[i] = bits ? (hi << bits) | (lo >> (32 - bits)) : hi;
  }
  r->len = nl;
  while (r->len > 0 && r->w[r->len - 1] == 0) r->len--;
}

/* r = 2^n. */
static void big_pow2(Big *r, int n) {
  big_set(r, 1);
  big_shl(r, n);
}

/* ---- digit generation -------------------------------------------------- */

/* How a digit cut-off is counted. */
typedef enum { CUT_TOTAL, CUT_FRACTION } CutMode;

#define DIG_MAX 1200

typedef struct Digits {
  int n;                /* number of digits in d */
  int exp10;            /* decimal exponent of the first digit */
  char d[DIG_MAX];
} Digits;

/* A finite floating-point value taken apart: |v| = mant * 2^e2. */
typedef struct Decomp {
  uint64_t mant;
  int e2;
  int mbit;             /* index of the highest set bit of mant */
  bool unequal;         /* gap to the next value above is twice the gap below */
  bool neg;             /* sign bit set (also for -0.0 and NaN) */
  bool finite;
  bool isinf;
} Decomp;

/* Index of the highest set bit of a non-zero 64-bit value. */
static int top_bit(uint64_t v) {
  int n = 0;
  while (v >>= 1) n++;
  return n;
}

/* Take an IEEE binary value apart from its bits: `mbits` bits of
   fraction, `ebits` of exponent, then the sign (binary64: 52, 11;
   binary32: 23, 8). */
static Decomp decomp_bits(uint64_t bits, int mbits, int ebits) {
  Decomp r;
  uint64_t frac = bits & ((UINT64_C(1) << mbits) - 1);
  unsigned emax = (1u << ebits) - 1, ex = (unsigned)(bits >> mbits) & emax;
  int bias = (int)(emax >> 1) + mbits;
  r.neg = (bits >> (mbits + ebits)) & 1;
  r.finite = ex != emax;
  r.isinf = !r.finite && frac == 0;
  if (ex != 0) {
    r.mant = frac | (UINT64_C(1) << mbits);
    r.e2 = (int)ex - bias;
    r.mbit = mbits;
    r.unequal = ex != 1 && frac == 0;
  } else {
    r.mant = frac;
    r.e2 = 1 - bias;
    r.mbit = frac ? top_bit(frac) : 0;
    r.unequal = false;
  }
  return r;
}

static Decomp decomp_f64(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  return decomp_bits(bits, 52, 11);
}

static Decomp decomp_f32(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  return decomp_bits(bits, 23, 8);
}

/*
** Generate the decimal digits of a finite value, shortest-unique style.
** Digits stop as soon as they identify the value among its neighbours
** (but not before the `cut_min` limit), or at the `cut_max` limit; the last
** digit is then rounded.  A negative limit means none.  With CUT_TOTAL the
** limits count significant digits, with CUT_FRACTION digits past the point.
*/
static void gen_digits(const Decomp *v, CutMode mode, int cut_max, int cut_min,
                       Digits *out) {
  Big val, scale, mlo, mhi_store, hi;
  Big *mhi;
  bool even = (v->mant & 1) == 0;

  if (v->mant == 0) {
    out->n = 1;
    out->d[0] = '0';
    out->exp10 = 0;
    return;
  }

  /* Express value and half-gaps as integers over a common scale. */
  big_set(&val, v->mant);
  int sh = v->unequal ? 2 : 1;
  if (v->e2 > 0) {
    big_shl(&val, v->e2 + sh);
    big_set(&scale, (uint64_t)1 << sh);
    big_pow2(&mlo, v->e2);
  } else {
    big_shl(&val, sh);
    big_pow2(&scale, -v->e2 + sh);
    big_set(&mlo, 1);
  }
  if (v->unequal) {
    mhi = &mhi_store;
    big_copy(mhi, &mlo);
    big_shl(mhi, 1);
  } else {
    mhi = &mlo;
  }

  /* Estimate the decimal exponent (exact or one too low). */
  int k = (int)ceil((double)(v->mbit + v->e2) * 0.30102999566398119521 - 0.69);
  if (cut_max >= 0 && mode == CUT_FRACTION && k <= -cut_max) k = -cut_max + 1;

  if (k > 0) {
    big_mul_pow10(&scale, k);
  } else if (k < 0) {
    big_mul_pow10(&val, -k);
    big_mul_pow10(&mlo, -k);
    if (mhi != &mlo) {
      big_copy(mhi, &mlo);
      big_shl(mhi, 1);
    }
  }
  if (big_cmp(&val, &scale) >= 0) {
    k++;
  } else {
    big_mul_small(&val, 10);
    big_mul_small(&mlo, 10);
    if (mhi != &mlo) {
      big_copy(mhi, &mlo);
      big_shl(mhi, 1);
    }
  }

  /* Exponents of the last digit allowed and of the first one that may end. */
  int last_exp = k - (DIG_MAX - 1);
  if (cut_max >= 0) {
    int want = mode == CUT_TOTAL ? k - cut_max : -cut_max;
    if (want > last_exp) last_exp = want;
  }
  int stop_exp = k;
  if (cut_min >= 0) {
    int want = mode == CUT_TOTAL ? k - cut_min : -cut_min;
    if (want < stop_exp) stop_exp = want;
  }
  out->exp10 = k - 1;

  int n = 0, digit;
  bool low, high;
  for (;;) {
    k--;
    digit = 0;
    while (big_cmp(&val, &scale) >= 0) {
      big_sub(&val, &scale);
      digit++;
    }
    big_add(&hi, &val, mhi);
    int c = big_cmp(&val, &mlo);
    low = even ? c <= 0 : c < 0;
    c = big_cmp(&hi, &scale);
    high = even ? c >= 0 : c > 0;
    if (((low || high) && k <= stop_exp) || k == last_exp) break;
    out->d[n++] = (char)('0' + digit);
    big_mul_small(&val, 10);
    big_mul_small(&mlo, 10);
    if (mhi != &mlo) {
      big_copy(mhi, &mlo);
      big_shl(mhi, 1);
    }
  }

  /* Round the final digit: forced by the margins, else to nearest/even. */
  bool down = low;
  if (low == high) {
    big_shl(&val, 1);
    int c = big_cmp(&val, &scale);
    down = c < 0 || (c == 0 && (digit & 1) == 0);
  }
  if (down) {
    out->d[n++] = (char)('0' + digit);
  } else if (digit < 9) {
    out->d[n++] = (char)('0' + digit + 1);
  } else {
    for (;;) {
      if (n == 0) {
        out->d[n++] = '1';
        out->exp10++;
        break;
      }
      n--;
      if (out->d[n] != '9') {
        out->d[n]++;
        n++;
        break;
      }
    }
  }
  out->n = n;
}

/* ---- number layout ----------------------------------------------------- */

/* Trailing-digit policies (NumPy's trim= letters in brackets). */
typedef enum {
  TRIM_NONE,       /* 'k': keep zeros and the point */
  TRIM_ZEROS,      /* '.': drop trailing zeros, keep the point */
  TRIM_ONE_ZERO,   /* '0': drop trailing zeros but keep one after the point */
  TRIM_POINT       /* '-': drop trailing zeros and a bare point */
} Trim;

#define NUM_MAX 1400

/* A rendered number: NUL-terminated text in a fixed buffer. */
typedef struct NumStr {
  int n;
  char s[NUM_MAX];
} NumStr;

/* Append one character if there is room. */
static void ns_put(NumStr *o, char c) {
  if (o->n < NUM_MAX - 1) o->s[o->n++] = c;
  o->s[o->n] = 0;
}

/* Insert `count` spaces at the front. */
static void ns_pad_front(NumStr *o, int count) {
  if (count <= 0) return;
  if (o->n + count > NUM_MAX - 1) count = NUM_MAX - 1 - o->n;
  memmove(o->s + count, o->s, (size_t)o->n);
  memset(o->s, ' ', (size_t)count);
  o->n += count;
  o->s[o->n] = 0;
}

/* The digits after the point, once the significant ones are written (frac
   of them): the point itself unless trimmed away, then padding with zeros
   to min_digits (TRIM_NONE), or trailing zeros trimmed (TRIM_ONE_ZERO
   keeps one; TRIM_POINT drops a bare point too when `point_may_go`). */
static void finish_fraction(NumStr *o, Trim trim, int min_digits, int *frac, bool point_may_go) {
  if (trim != TRIM_POINT && *frac == 0) ns_put(o, '.');
  int want = min_digits < 0 ? 0 : min_digits;
  if (trim == TRIM_ONE_ZERO) {
    if (*frac == 0) {
      ns_put(o, '0');
      (*frac)++;
    }
  } else if (trim == TRIM_NONE) {
    while (*frac < want) {
      ns_put(o, '0');
      (*frac)++;
    }
  }
  if (trim != TRIM_NONE && *frac > 0) {
    while (o->s[o->n - 1] == '0') {
      o->n--;
      (*frac)--;
    }
    if (o->s[o->n - 1] == '.') {
      if (trim == TRIM_ONE_ZERO) {
        o->s[o->n++] = '0';
        (*frac)++;
      } else if (trim == TRIM_POINT && point_may_go) {
        o->n--;
      }
    }
    o->s[o->n] = 0;
  }
}

/*
** Positional notation ("123.45").  precision and min_digits count digits
** past the point (negative: none); pad_left / pad_right pad with spaces to
** at least that many characters left / right of the point (negative: none).
*/
static void fmt_positional(const Decomp *v, int precision, int min_digits,
                           Trim trim, int pad_left, int pad_right, bool plus, NumStr *o) {
  Digits dg;
  int has_sign = v->neg || plus ? 1 : 0;
  int whole, frac = 0;

  gen_digits(v, CUT_FRACTION, precision, min_digits, &dg);
  o->n = 0;
  o->s[0] = 0;
  if (has_sign) ns_put(o, v->neg ? '-' : '+');
  if (dg.exp10 >= 0) {
    whole = dg.exp10 + 1;
    if (dg.n <= whole) {
      for (int i = 0; i < dg.n; i++) ns_put(o, dg.d[i]);
      for (int i = dg.n; i < whole; i++) ns_put(o, '0');
    } else {
      for (int i = 0; i < whole; i++) ns_put(o, dg.d[i]);
      ns_put(o, '.');
      for (int i = whole; i < dg.n; i++) ns_put(o, dg.d[i]);
      frac = dg.n - whole;
    }
  } else {
    int zeros = -(dg.exp10 + 1);
    whole = 1;
    ns_put(o, '0');
    ns_put(o, '.');
    for (int i = 0; i < zeros; i++) ns_put(o, '0');
    for (int i = 0; i < dg.n; i++) ns_put(o, dg.d[i]);
    frac = zeros + dg.n;
  }
  finish_fraction(o, trim, min_digits, &frac, true);

  if (pad_right >= frac) {
    if (trim == TRIM_POINT && frac == 0) ns_put(o, ' ');
    for (int i = frac; i < pad_right; i++) ns_put(o, ' ');
  }
  if (pad_left > whole + has_sign) ns_pad_front(o, pad_left - (whole + has_sign));
}

/*
** Scientific notation ("1.5e-05").  precision and min_digits count digits
** after the first one (negative: none); exp_digits is the least number of
** exponent digits (negative: 2); pad_left as for fmt_positional.
*/
static void fmt_scientific(const Decomp *v, int precision, int min_digits,
                           Trim trim, int pad_left, int exp_digits, bool plus,
                           NumStr *o) {
  Digits dg;
  int has_sign = v->neg || plus ? 1 : 0;

  gen_digits(v, CUT_TOTAL, precision < 0 ? -1 : precision + 1,
             min_digits < 0 ? -1 : min_digits + 1, &dg);
  o->n = 0;
  o->s[0] = 0;
  for (int i = 1 + has_sign; i < pad_left; i++) ns_put(o, ' ');
  if (has_sign) ns_put(o, v->neg ? '-' : '+');
  ns_put(o, dg.d[0]);
  int frac = dg.n - 1;
  if (frac > 0) {
    ns_put(o, '.');
    for (int i = 1; i < dg.n; i++) ns_put(o, dg.d[i]);
  }
  finish_fraction(o, trim, min_digits, &frac, false);

  int e = dg.exp10;
  ns_put(o, 'e');
  ns_put(o, e < 0 ? '-' : '+');
  if (e < 0) e = -e;
  if (exp_digits < 0) exp_digits = 2;
  if (exp_digits > 5) exp_digits = 5;
  char eb[8];
  int en = 0;
  while (e > 0 || en < exp_digits) {
    eb[en++] = (char)('0' + e % 10);
    e /= 10;
  }
  while (en > 0) ns_put(o, eb[--en]);
}

/* Write "nan", "inf" or "-inf" into o. */
static void fmt_nonfinite(const Decomp *v, bool plus, NumStr *o) {
  o->n = 0;
  o->s[0] = 0;
  if (!v->isinf) {
    if (plus) ns_put(o, '+');
    ns_put(o, 'n'); ns_put(o, 'a'); ns_put(o, 'n');
    return;
  }
  if (v->neg) ns_put(o, '-');
  else if (plus) ns_put(o, '+');
  ns_put(o, 'i'); ns_put(o, 'n'); ns_put(o, 'f');
}

/* Take element i of a float array apart in its own precision. */
static Decomp elem_decomp(const Array *a, int64_t i) {
  if (a->dt == DT_F32) return decomp_f32(((const float *)a->data)[i]);
  if (a->dt == DT_F16) return decomp_bits(((const ShmF16 *)a->data)[i].bits, 10, 5);
  if (a->dt == DT_BF16) return decomp_bits(((const ShmBf16 *)a->data)[i].bits, 7, 8);
  return decomp_f64(((const double *)a->data)[i]);
}

/*
** str() of a float scalar: positional with one trailing zero ("3.0") for
** zero and for magnitudes in [1e-4, 1e16), otherwise scientific without a
** bare point ("1e-05", "1.5e+16"); shortest round-trip digits, no cut-off.
*/
static void fmt_float_scalar(const Decomp *v, double mag, NumStr *o) {
  if (!v->finite) {
    fmt_nonfinite(v, false, o);
  } else if (mag == 0 || (mag >= 1e-4 && mag < 1e16)) {
    fmt_positional(v, -1, -1, TRIM_ONE_ZERO, -1, -1, false, o);
  } else {
    fmt_scientific(v, -1, -1, TRIM_POINT, -1, -1, false, o);
  }
}

/* ---- walking the shown elements ---------------------------------------- */

/* Whether axis `ax` is cut to its edges by summarisation. */
static bool axis_cut(const Array *a, bool summ, int ax) {
  return summ && a->shape[ax] > 2 * FMT_EDGEITEMS;
}

typedef void (*ElemFn)(void *ctx, const Array *a, int64_t flat);

/* Call fn on every shown element of a, in row-major order. */
static void walk_shown(const Array *a, bool summ, int ax, int64_t off,
                       const int64_t *strides, ElemFn fn, void *ctx) {
  if (ax == a->rank) {
    fn(ctx, a, off);
    return;
  }
  int64_t n = a->shape[ax];
  bool cut = axis_cut(a, summ, ax);
  for (int64_t i = 0; i < n; i++) {
    if (cut && i == FMT_EDGEITEMS) i = n - FMT_EDGEITEMS;
    walk_shown(a, summ, ax + 1, off + i * strides[ax], strides, fn, ctx);
  }
}

/* ---- choosing a common element format ---------------------------------- */

/* The format shared by all elements of one array. */
typedef struct ElemFmt {
  DType dt;
  bool plus;            /* a '+' before non-negative numbers (complex parts' imaginary) */
  /* integers */
  int int_width;
  uint64_t umax;        /* unsigned: the largest shown */
  /* floats */
  bool exp_mode;
  int precision;        /* digits cut-off for elements */
  int min_digits;
  Trim trim;
  int pad_left, pad_right;
  int exp_size;
  /* complex: the formats of the real and imaginary parts, and those parts */
  const struct ElemFmt *re_fmt, *im_fmt;
  const Array *re, *im;
  /* pre-pass accumulators */
  bool have_int;
  int64_t imin, imax;
  bool any_nonfinite, any_neginf, have_nz;
  double nz_min, nz_max;
  int64_t n_finite;
} ElemFmt;

/* Pre-pass step 1: integer range, float magnitudes and special values. */
static void scan_elem(void *ctx, const Array *a, int64_t i) {
  ElemFmt *f = ctx;
  if (dtype_is_unsigned((DType)a->dt)) {
    uint64_t x = arr_getu(a, i);
    if (x > f->umax) f->umax = x;
    return;
  }
  if (dtype_is_int((DType)a->dt)) {
    int64_t x = arr_geti(a, i);
    if (!f->have_int || x < f->imin) f->imin = x;
    if (!f->have_int || x > f->imax) f->imax = x;
    f->have_int = true;
    return;
  }
  if (!dtype_is_float((DType)a->dt)) return;
  Decomp d = elem_decomp(a, i);
  if (!d.finite) {
    f->any_nonfinite = true;
    if (d.isinf && d.neg) f->any_neginf = true;
    return;
  }
  f->n_finite++;
  double x = fabs(arr_getf(a, i));
  if (x == 0) return;
  if (!f->have_nz || x < f->nz_min) f->nz_min = x;
  if (!f->have_nz || x > f->nz_max) f->nz_max = x;
  f->have_nz = true;
}

/* Pre-pass step 2: widths of the integer / fraction / exponent parts. */
static void measure_elem(void *ctx, const Array *a, int64_t i) {
  ElemFmt *f = ctx;
  Decomp d = elem_decomp(a, i);
  NumStr s;
  if (!d.finite) return;
  if (f->exp_mode) {
    fmt_scientific(&d, FMT_PRECISION, -1, TRIM_ZEROS, -1, -1, f->plus, &s);
    const char *dot = strchr(s.s, '.');
    const char *e = strchr(s.s, 'e');
    int ip = (int)(dot - s.s), fp = (int)(e - dot - 1);
    int ep = (int)strlen(e + 1) - 1;
    if (ip > f->pad_left) f->pad_left = ip;
    if (fp > f->precision) f->precision = fp;
    if (ep > f->exp_size) f->exp_size = ep;
  } else {
    fmt_positional(&d, FMT_PRECISION, -1, TRIM_ZEROS, -1, -1, f->plus, &s);
    const char *dot = strchr(s.s, '.');
    int ip = (int)(dot - s.s), fp = (int)strlen(dot + 1);
    if (ip > f->pad_left) f->pad_left = ip;
    if (fp > f->pad_right) f->pad_right = fp;
  }
}

/* Number of characters of a decimal integer. */
static int int_len(int64_t x) {
  char tmp[32];
  return snprintf(tmp, sizeof tmp, "%" PRId64, x);
}

/* Decide the common element format from the shown elements of a. */
static void choose_format(const Array *a, bool summ, bool plus, ElemFmt *f) {
  int64_t strides[SHM_MAXRANK];
  memset(f, 0, sizeof *f);
  f->dt = (DType)a->dt;
  f->plus = plus;
  arr_strides(a->rank, a->shape, strides);
  walk_shown(a, summ, 0, 0, strides, scan_elem, f);

  if (dtype_is_unsigned(f->dt)) {
    char tmp[32];
    f->int_width = snprintf(tmp, sizeof tmp, "%" PRIu64, f->umax);
    return;
  }
  if (dtype_is_int(f->dt)) {
    int l1 = int_len(f->imax), l2 = int_len(f->imin);
    f->int_width = l1 > l2 ? l1 : l2;
    return;
  }
  if (!dtype_is_float(f->dt) || f->dt == DT_BF16) return;

  if (f->have_nz) {
    double ratio = f->nz_max / f->nz_min;
    bool wide, small = f->nz_min < 0.0001;
    if (f->dt == DT_F32)
      wide = ratio > 1e30 || (double)(float)ratio > 1000.0;
    else if (f->dt == DT_F16) {   /* NumPy divides and compares in float16 */
      wide = f16_to_f32(f16_from_f32((float)f->nz_max / (float)f->nz_min)) > 1000.0f;
      small = f->nz_min < (double)f16_to_f32(f16_from_f64(0.0001));
    } else
      wide = ratio > 1000.0;
    f->exp_mode = f->nz_max >= 1e8 || small || wide;
  }

  if (f->n_finite == 0) {
    f->pad_left = f->pad_right = 0;
    f->exp_size = -1;
    f->precision = FMT_PRECISION;
    f->min_digits = -1;
    f->trim = TRIM_ZEROS;
  } else if (f->exp_mode) {
    f->precision = 0;
    f->exp_size = 0;
    walk_shown(a, summ, 0, 0, strides, measure_elem, f);
    f->min_digits = f->precision;
    f->trim = TRIM_NONE;
    f->pad_right = f->exp_size + 2 + f->precision;
  } else {
    walk_shown(a, summ, 0, 0, strides, measure_elem, f);
    f->exp_size = -1;
    f->precision = FMT_PRECISION;
    f->min_digits = 0;
    f->trim = TRIM_ZEROS;
  }

  if (f->any_nonfinite) {
    int offset = f->pad_right + 1;
    int nanw = 3 - offset, infw = 3 + (f->any_neginf ? 1 : 0) - offset;
    if (nanw > f->pad_left) f->pad_left = nanw;
    if (infw > f->pad_left) f->pad_left = infw;
  }
}

/* A bfloat16 as ml_dtypes prints it (C++'s `<<` of the float: %g, six
   significant digits; NaN without a sign). */
static void bf16_text(double x, NumStr *o) {
  o->n = snprintf(o->s, NUM_MAX, "%g", isnan(x) ? fabs(x) : x);
}

/* Render element i of a with the common format f. */
static void format_elem(const ElemFmt *f, const Array *a, int64_t i, NumStr *o);
static void format_elem(const ElemFmt *f, const Array *a, int64_t i,
                        NumStr *o) {
  o->n = 0;
  o->s[0] = 0;
  if (dtype_is_bool(f->dt)) {
    bool t = ((const uint8_t *)a->data)[i] != 0;
    o->n = snprintf(o->s, NUM_MAX, "%s", t ? " True" : "False");
  } else if (f->dt == DT_BF16) {
    bf16_text(arr_getf(a, i), o);
  } else if (dtype_is_complex(f->dt)) {
    /* NumPy's ComplexFloatingFormat: the parts formatted each with its
       own common format, a 'j' before the imaginary part's padding */
    NumStr im;
    format_elem(f->re_fmt, f->re, i, o);
    format_elem(f->im_fmt, f->im, i, &im);
    int sp = im.n;
    while (sp > 0 && im.s[sp - 1] == ' ') sp--;
    for (int k = 0; k < sp; k++) ns_put(o, im.s[k]);
    ns_put(o, 'j');
    for (int k = sp; k < im.n; k++) ns_put(o, ' ');
  } else if (dtype_is_unsigned(f->dt)) {
    o->n = snprintf(o->s, NUM_MAX, "%*" PRIu64, f->int_width, arr_getu(a, i));
  } else if (dtype_is_int(f->dt)) {
    o->n = snprintf(o->s, NUM_MAX, "%*" PRId64, f->int_width, arr_geti(a, i));
  } else {
    Decomp d = elem_decomp(a, i);
    if (!d.finite) {
      NumStr t;
      fmt_nonfinite(&d, f->plus, &t);
      ns_pad_front(&t, f->pad_left + f->pad_right + 1 - t.n);
      *o = t;
    } else if (f->exp_mode) {
      fmt_scientific(&d, f->precision, f->min_digits, f->trim, f->pad_left,
                     f->exp_size, f->plus, o);
    } else {
      fmt_positional(&d, f->precision, f->min_digits, f->trim, f->pad_left,
                     f->pad_right, f->plus, o);
    }
  }
}

/* ---- array layout ------------------------------------------------------ */

/* State of the layout walk. */
typedef struct Layout {
  Buf *b;
  const Array *a;
  const ElemFmt *f;
  bool summ;
  size_t line_start;           /* offset in b where the current line began */
  int64_t strides[SHM_MAXRANK];
} Layout;

/* Current column of the output. */
static int lay_col(const Layout *L) {
  return (int)(L->b->n - L->line_start);
}

/* Start a new output line indented by `indent` spaces. */
static void lay_newline(Layout *L, int indent) {
  buf_putc(L->b, '\n');
  L->line_start = L->b->n;
  for (int i = 0; i < indent; i++) buf_putc(L->b, ' ');
}

/*
** Append one word of a row, first breaking the line if the word would pass
** `limit` columns (unless the line holds nothing but its indent).  Trailing
** blanks are dropped from a line that is broken.
*/
static void lay_word(Layout *L, const char *w, int wn, int indent, int limit) {
  int col = lay_col(L);
  if (col + wn > limit && col > indent) {
    Buf *b = L->b;
    while (b->n > L->line_start && b->p[b->n - 1] == ' ') b->n--;
    b->p[b->n] = 0;
    lay_newline(L, indent);
  }
  buf_put(L->b, w, (size_t)wn);
}

/*
** Write the sub-array at axis `ax` starting at flat offset `off`.  The
** caller has positioned the output at the column where its '[' goes; the
** contents begin one column further, at `indent`.  `width` is the line
** width still available at this depth.
*/
static void lay_array(Layout *L, int ax, int64_t off, int indent, int width) {
  const Array *a = L->a;
  int64_t n = a->shape[ax];
  bool cut = axis_cut(a, L->summ, ax);
  int left = a->rank - ax;

  buf_putc(L->b, '[');
  if (left == 1) {
    int limit = width - 1;
    NumStr w;
    for (int64_t i = 0; i < n; i++) {
      if (cut && i == FMT_EDGEITEMS) {
        lay_word(L, "...", 3, indent, limit);
        buf_putc(L->b, ' ');
        i = n - FMT_EDGEITEMS;
      }
      format_elem(L->f, a, off + i * L->strides[ax], &w);
      lay_word(L, w.s, w.n, indent, limit);
      if (i + 1 < n) buf_putc(L->b, ' ');
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      if (cut && i == FMT_EDGEITEMS) {
        buf_puts(L->b, "...");
        for (int k = 0; k < left - 1; k++) lay_newline(L, 0);
        for (int k = 0; k < indent; k++) buf_putc(L->b, ' ');
        i = n - FMT_EDGEITEMS;
      }
      lay_array(L, ax + 1, off + i * L->strides[ax], indent + 1, width - 1);
      if (i + 1 < n) {
        for (int k = 0; k < left - 1; k++) lay_newline(L, 0);
        for (int k = 0; k < indent; k++) buf_putc(L->b, ' ');
      }
    }
  }
  buf_putc(L->b, ']');
}

/* ---- entry point ------------------------------------------------------- */

/* Append str(a) to b, exactly as NumPy 1.24 prints it, without a newline. */
/* A float part of a complex scalar as NumPy prints it: str() of the float
   without a trailing ".0". */
static void complex_part(const Decomp *d, double mag, NumStr *o) {
  fmt_float_scalar(d, mag, o);
  if (o->n > 2 && !strcmp(o->s + o->n - 2, ".0")) o->s[o->n -= 2] = 0;
}

/* str() of a complex scalar: "(1+2j)", or "2j" when the real part is +0. */
static void complex_scalar(Buf *b, const Array *a) {
  double re, im;
  arr_getc(a, 0, &re, &im);
  bool c64 = a->dt == DT_C64;
  Decomp dr = c64 ? decomp_f32((float)re) : decomp_f64(re), di = c64 ? decomp_f32((float)im) : decomp_f64(im);
  NumStr rs, is;
  complex_part(&dr, fabs(re), &rs);
  di.neg = false;
  complex_part(&di, fabs(im), &is);
  char sign = signbit(im) && !isnan(im) ? '-' : '+';
  if (re == 0 && !signbit(re)) buf_printf(b, "%s%sj", sign == '-' ? "-" : "", is.s);
  else buf_printf(b, "(%s%c%sj)", rs.s, sign, is.s);
}

static void release_array(void *a) { arr_unref(a); }

/* The real or imaginary parts of a complex array, as a float array. */
static Array *complex_parts(const Array *a, bool imag) {
  Array *r = arr_new(dtype_real((DType)a->dt), a->rank, a->shape);
  for (int64_t i = 0; i < a->size; i++) {
    double re, im;
    arr_getc(a, i, &re, &im);
    arr_setf(r, i, imag ? im : re);
  }
  return r;
}

/* Typed PRNG keys as JAX's repr shows them: `Array((4,), dtype=key<fry>)
   overlaying:` and a line break, then their data as a u32 array. */
static void key_repr(Buf *b, const Array *a) {
  buf_printf(b, "Array((");
  for (int d = 0; d < a->rank; d++) buf_printf(b, "%s%" PRId64, d ? ", " : "", a->shape[d]);
  buf_printf(b, "%s), dtype=%s) overlaying:\n", a->rank == 1 ? "," : "", dtype_names[a->dt]);
  int64_t shp[SHM_MAXRANK + 1];
  memcpy(shp, a->shape, sizeof(int64_t) * a->rank);
  shp[a->rank] = dtype_sizes[a->dt] / 4;
  Array *w = arr_new(DT_U32, a->rank + 1, shp);
  memcpy(w->data, a->data, (size_t)w->size * 4);
  fmt_array(b, w);
  arr_unref(w);
}

void fmt_array(Buf *b, const Array *a) {
  if (dtype_is_key((DType)a->dt)) {
    key_repr(b, a);
    return;
  }
  if (a->rank == 0) {
    NumStr s;
    if (a->dt == DT_BF16) {
      bf16_text(arr_getf(a, 0), &s);
      buf_put(b, s.s, (size_t)s.n);
    } else if (dtype_is_complex((DType)a->dt)) {
      complex_scalar(b, a);
    } else if (dtype_is_unsigned((DType)a->dt)) {
      buf_printf(b, "%" PRIu64, arr_getu(a, 0));
    } else if (dtype_is_float((DType)a->dt)) {
      Decomp d = elem_decomp(a, 0);
      fmt_float_scalar(&d, fabs(arr_getf(a, 0)), &s);
      buf_put(b, s.s, (size_t)s.n);
    } else if (dtype_is_bool((DType)a->dt)) {
      buf_puts(b, ((const uint8_t *)a->data)[0] ? "True" : "False");
    } else {
      buf_printf(b, "%" PRId64, arr_geti(a, 0));
    }
    return;
  }
  if (a->size == 0) {
    buf_puts(b, "[]");
    return;
  }

  ElemFmt f, fre, fim;
  bool summ = a->size > FMT_THRESHOLD;
  Array *re = NULL, *im = NULL;
  if (dtype_is_complex((DType)a->dt)) {
    re = complex_parts(a, false);
    err_defer(release_array, re);
    im = complex_parts(a, true);
    err_defer(release_array, im);
    choose_format(re, summ, false, &fre);
    choose_format(im, summ, true, &fim);
    memset(&f, 0, sizeof f);
    f.dt = (DType)a->dt;
    f.re_fmt = &fre;
    f.im_fmt = &fim;
    f.re = re;
    f.im = im;
  } else {
    choose_format(a, summ, false, &f);
  }

  Layout L;
  L.b = b;
  L.a = a;
  L.f = &f;
  L.summ = summ;
  L.line_start = b->n;
  arr_strides(a->rank, a->shape, L.strides);
  lay_array(&L, 0, 0, 1, FMT_LINEWIDTH);
  if (re) {
    err_undefer(im);
    err_undefer(re);
    arr_unref(im);
    arr_unref(re);
  }
}
