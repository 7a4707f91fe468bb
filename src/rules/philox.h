/*
** philox.h — lax.rng_bit_generator (philox.c).
**
**   new_key, bits = rng_bit_generator[shape, dtype=uint32,
**                                     algorithm=RNG_DEFAULT] key
**
** takes a key u32[4] and gives the key advanced past the bits it used and
** `shape` random numbers of dtype (uint8, 16, 32 or 64).  XLA's algorithm
** for RNG_DEFAULT depends on the platform; on CPU (and GPU) it is Philox
** 4x32 with 10 rounds (Salmon et al. 2011), as XLA's prng.cc and its
** RngBitGeneratorExpander compute it, so RNG_DEFAULT and RNG_PHILOX give
** JAX's CPU values.  JAX's u32[4] key is XLA's u64[2] state (s0, s1),
** little-endian; the Philox key is s0 and block i's counter the 128-bit
** number s0:s1 plus i.  A block gives four 32-bit words, taken in turn
** (cut to 8 or 16 bits for the narrow dtypes), or two 64-bit numbers.
** RNG_THREE_FRY (TPU's default) is refused.
*/
#ifndef SHM_PHILOX_H
#define SHM_PHILOX_H

#include "ir.h"
#include "rule.h"

/* Philox 4x32-10 of the counter x under the key (k0, k1), in place. */
void philox4x32(uint32_t x[4], uint32_t k0, uint32_t k1);
/* Bits first .. first+n-1 of rng_bit_generator's result for `key`, each of
   `width` bits (8, 16, 32, 64), into out. */
void philox_bits(const uint32_t key[4], int width, int64_t first, int64_t n, uint64_t *out);
/* The new key rng_bit_generator returns after n numbers of `width` bits. */
void philox_newkey(const uint32_t key[4], int width, int64_t n, uint32_t newkey[4]);

bool philox_rule(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void philox_kern(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

#endif
