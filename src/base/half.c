/*
** half.c — conversions between the 16-bit floats and f32/f64.
*/
#include <math.h>
#include <string.h>
#include "half.h"

uint16_t bf16_from_f64(double d) { return bf16_from_f32((float)d); }

float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, ex = (h >> 10) & 0x1f, fr = h & 0x3ff;
  float f;
  if (ex == 0x1f) {
    uint32_t u = sign | 0x7f800000u | (fr << 13);
    memcpy(&f, &u, sizeof f);
    return f;
  }
  f = ex ? ldexpf((float)(fr | 0x400), (int)ex - 25) : ldexpf((float)fr, -24);
  return sign ? -f : f;
}

uint16_t f16_from_f64(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  if (isnan(d)) return (uint16_t)(sign | 0x7e00);
  if (a >= 65520.0) return (uint16_t)(sign | 0x7c00);     /* 65504 + half an ulp and beyond: inf */
  if (a < 0x1p-14) {
    /* subnormal: a multiple of 2^-24, rounded to nearest even */
    double m = nearbyint(a * 0x1p24);
    return (uint16_t)(sign | (uint16_t)m);                 /* m == 1024 is the smallest normal: right bits */
  }
  int e;
  double m = frexp(a, &e);           /* a = m 2^e, m in [0.5, 1) */
  double q = nearbyint(m * 2048.0);  /* 11 significant bits */
  if (q == 2048.0) { q = 1024.0; e++; }
  int ex = e - 1 + 15;
  if (ex >= 31) return (uint16_t)(sign | 0x7c00);
  return (uint16_t)(sign | (uint16_t)(ex << 10) | (uint16_t)((int)q - 1024));
}

uint16_t f16_from_f32(float f) { return f16_from_f64((double)f); }
