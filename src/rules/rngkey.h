/*
** rngkey.h — JAX's typed PRNG keys (rngkey.c).
**
** jax.random.key(0) makes a typed key: an array of dtype key<fry> whose
** elements are threefry keys (two uint32 words each, what a raw u32[2] key
** holds).  The primitives JAX prints for them:
**
**   random_seed[impl=fry] seeds       key<fry>[S] from integers of shape S
**   random_wrap[impl=fry] data        key<fry>[S] from u32[S..., 2]
**   random_unwrap keys                u32[S..., 2], the keys' data
**   random_fold_in keys msgs          threefry_fold_in, broadcast
**   random_clone keys                 the same keys
**
** and random_bits, random_split (rng.c) take typed keys too.  Keys print as
** JAX's repr does: `Array((), dtype=key<fry>) overlaying:` and the data.
**
** jax_threefry_partitionable (JAX 0.5.0 on: True) decides the counters of
** random_bits and random_split, and the printed jaxpr does not say which:
** the text's JAX version, from `--jax VERSION` or a header comment
** `# jax VERSION` before the first statement, chooses the default.
*/
#ifndef SHM_RNGKEY_H
#define SHM_RNGKEY_H

#include "ir.h"
#include "rule.h"

bool rngk_rule_seed(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rngk_rule_wrap(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rngk_rule_unwrap(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rngk_rule_clone(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool rngk_rule_fold_in(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void rngk_kern_seed(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void rngk_kern_same(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void rngk_kern_fold_in(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* Does JAX of this version ("0.4.30", "0.5.0.dev20250101") default to
   jax_threefry_partitionable=True (1, from 0.5.0) or not (0)?  -1 when
   it is not a version. */
int rngk_version_partitionable(const char *v);
/* The header comment `# jax VERSION ...` (or `# JAX VERSION ...`: the
   first line of a jaxpr of tests/jaxpr/_corpus) among the comment lines
   before a file's first statement: 1 with VERSION (the word after "jax",
   which begins with a digit) copied to `version` and its byte offset in
   *off, 0 when there is none, -1 when VERSION is not a version (then too
   *off). */
int rngk_header(const char *text, size_t n, char *version, size_t vcap, size_t *off);
/* The header comment `# jax VERSION` of loaded file f, applied: it chooses
   the default counters of random bits (rng_set_partitionable).  False after
   a diagnostic for a VERSION that is not one; true otherwise. */
bool rngk_apply_header(int f);

#endif
