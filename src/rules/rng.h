/*
** rng.h — random numbers as JAX makes them (rng.c).
**
** JAX's default generator: a key is two uint32 words (jax.random.PRNGKey,
** or the data of jax.random.key), and every random word is the Threefry
** 2x32 hash (20 rounds, Salmon et al. 2011) of the key and a counter.  The
** primitives follow jax.random exactly, so the same key gives the same
** bits, uniform and normal values as JAX:
**
**   random_key[seed]                        the key of an integer seed
**   random_split[num] key                   num new keys, u32[num,2]
**   random_bits[shape, bit_width] key       random_bits / jax.random.bits
**   random_uniform[shape, dtype, minval, maxval] key
**   random_normal[shape, dtype] key         sqrt(2) erfinv(uniform(-1, 1))
**   threefry2x32 k1 k2 x1 x2                JAX's primitive itself
**
** `partitionable` (default True) chooses how counters are laid out: True
** as JAX since 0.5 (jax_threefry_partitionable: the counter of element i
** is i as a 64-bit number, its two words hashed together), False as
** before (a sequence of counters hashed in two halves).
*/
#ifndef SHM_RNG_H
#define SHM_RNG_H

#include "ir.h"
#include "rule.h"

bool rng_rule_key(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rng_rule_split(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rng_rule_bits(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rng_rule_uniform(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rng_rule_normal(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rng_rule_threefry(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void rng_kern_key(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void rng_kern_split(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void rng_kern_bits(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void rng_kern_uniform(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void rng_kern_normal(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void rng_kern_threefry(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* The Threefry 2x32 hash of (x0, x1) under the key (k0, k1). */
void rng_threefry2x32(uint32_t k0, uint32_t k1, uint32_t *x0, uint32_t *x1);
/* n random values of `width` bits (8, 16, 32, 64) from the key (k0, k1)
   into out, as JAX's threefry_random_bits makes them in either layout. */
void rng_bits_raw(uint32_t k0, uint32_t k1, int width, bool part, int64_t n, uint64_t *out);
/* n new keys from (k0, k1) into out[2i], out[2i+1], as threefry_split. */
void rng_split_raw(uint32_t k0, uint32_t k1, bool part, int64_t n, uint32_t *out);

/* The default of every `partitionable` parameter, JAX's
   jax_threefry_partitionable: true (JAX 0.5.0 on) unless set. */
void rng_set_partitionable(bool on);
bool rng_partitionable(void);

#endif
