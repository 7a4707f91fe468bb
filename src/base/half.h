/*
** half.h — the 16-bit floats, bfloat16 and IEEE float16 (half.c).
**
** A 16-bit float is kept as its bits and computed in f32: every value
** converts to f32 exactly, and each result is rounded back to nearest
** (ties to even), as XLA's CPU backend computes them (each operation in
** f32, its result rounded once).  bfloat16 is f32's upper half (8 bits of
** exponent, 7 of fraction); float16 has 5 and 10, with subnormals.
** NaN stays NaN (quiet), infinities stay, overflow rounds to infinity.
*/
#ifndef SHM_HALF_H
#define SHM_HALF_H

#include <stdint.h>
#include <string.h>

/* (inline: the conversion loops of matmuls and collectives vectorise) */
static inline float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Rounded to nearest even (as ml_dtypes and XLA do). */
static inline uint16_t bf16_from_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   /* NaN: quiet, sign kept */
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fffu + lsb;            /* to nearest, ties to even; overflow reaches inf */
  return (uint16_t)(u >> 16);
}
/* Through f32, as ml_dtypes' bfloat16(double) does. */
uint16_t bf16_from_f64(double d);
float f16_to_f32(uint16_t h);
/* Rounded to nearest even directly from the value (as NumPy's astype). */
uint16_t f16_from_f64(double d);
uint16_t f16_from_f32(float f);

#endif
