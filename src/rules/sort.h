/*
** sort.h — sorting and selection along one dimension (sort.c): lax.sort,
** lax.top_k, lax.approx_max_k / approx_min_k (approx_top_k) and
** lax.cumlogsumexp, with JAX's parameters and orders.
**
**   sort[dimension=d, is_stable=True, num_keys=n] x1 ... xm
**     sorts every operand along d by the first n operands, compared
**     lexicographically (x1 first).  Floats order as JAX's comparator
**     does: -inf < ... < -0.0 = 0.0 < ... < inf < NaN, every NaN equal
**     (so NaNs go last, with either sign); complex numbers by real part,
**     then imaginary part, each in that order.  Equal keys keep their
**     order (the sort is always stable; is_stable=False allows any order
**     of equals, and this is one).  Results keep the operands' bits.
**   top_k[axis=a, is_stable=True, k=k] x -> values, i32 indices
**     the k largest along a, largest first, in XLA's TopK order: the
**     total order of the bits (-NaN < -inf < ... < -0.0 < 0.0 < ... <
**     inf < NaN); equal values by lower index first.
**   approx_top_k[k, reduction_dimension, recall_target, is_max_k,
**                reduction_input_size_override, aggregate_to_topk] x
**     computed exactly, as XLA's CPU fallback does: the largest (is_max_k)
**     or smallest k along the dimension, in order, -0.0 = 0.0 and NaN
**     larger than every number, equal values by lower index.  With
**     aggregate_to_topk=False the result keeps XLA's implementation-
**     defined size (ApproxTopKReductionOutputSize), sorted the same way.
**   cumlogsumexp[axis, reverse] x
**     log(sum(exp)) of each prefix (suffix when reverse), folded in
**     order with JAX's logaddexp formula, as XLA's reduce_window runs it.
**
** The kernels map every key to an unsigned integer of the same order and
** sort indices by those integers with a stable radix sort (sort_perm),
** so a sort costs a few passes over the data whatever its length.
*/
#ifndef SHM_SORT_H
#define SHM_SORT_H

#include <stdint.h>
#include "ir.h"
#include "rule.h"

bool sort_rule(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void sort_kern(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
bool sort_rule_top_k(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void sort_kern_top_k(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
bool sort_rule_approx(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void sort_kern_approx(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
bool sort_rule_cumlse(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void sort_kern_cumlse(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* XLA's ApproxTopKReductionOutputSize: the size of approx_top_k's reduced
   dimension for an input of `n` along it; -1 when the override is smaller
   than n. */
int64_t sort_approx_out_size(int64_t n, int rank, int64_t k, float recall, bool aggregate, int64_t override);

#endif
