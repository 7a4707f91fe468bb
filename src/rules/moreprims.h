/*
** moreprims.h — shape rules and kernels of the primitives real programs
** print beyond the core set (moreprims.c; rows of prims.def).
*/
#ifndef SHM_MOREPRIMS_H
#define SHM_MOREPRIMS_H

#include "array.h"
#include "rule.h"

bool mp_rule_sharding_constraint(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_mesh_cast(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_reshard(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_device_put(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_zeros_like(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_bits(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_reduce_precision(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_split(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_erf_inv(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_layout_constraint(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_name(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_tile(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_mulhi(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool mp_rule_platform_index(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);

void mp_kern_identity(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_zeros_like(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_clz(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_population_count(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_reduce_precision(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_split(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_erf_inv(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_tile(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_mulhi(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void mp_kern_platform_index(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* The high half of the product of two integers of `bits` bits (8 ... 64),
   signed or not, given sign-extended (or zero-extended) to 64 bits. */
int64_t mp_mulhi(int64_t a, int64_t b, int bits, bool is_signed);

/* erf_inv in double precision: NaN outside [-1, 1], +-inf at +-1. */
double mp_erf_inv(double x);

/* XLA's rounding of the bits u of a float of width n bits (eb exponent and
   mb mantissa bits) to E exponent and M mantissa bits. */
uint64_t mp_reduce_precision_bits(uint64_t u, int n, int eb, int mb, int E, int M);

#endif
