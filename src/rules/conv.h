/*
** conv.h — lax.conv_general_dilated (conv.c): its shape rule and kernel.
**
**   conv_general_dilated[batch_group_count=1,
**       dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2),
**                                              rhs_spec=(3, 2, 0, 1),
**                                              out_spec=(0, 3, 1, 2)),
**       feature_group_count=1, lhs_dilation=(1, 1), padding=((1, 1), (1, 1)),
**       precision=None, preferred_element_type=None, rhs_dilation=(1, 1),
**       window_strides=(1, 1)] lhs rhs
**
** lhs_spec names lhs's batch, feature and spatial dimensions, rhs_spec
** rhs's output feature, input feature and spatial dimensions, out_spec
** the result's batch, feature and spatial dimensions; spatial dimension i
** of each is the (2+i)-th entry.  lhs is dilated by lhs_dilation and
** padded by padding's (lo, hi) pairs (negative crops), rhs is dilated by
** rhs_dilation, and every window_strides-th position of the kernel over
** the lhs gives a sum of products over the kernel's positions and the
** input features of its group: with feature_group_count G, output feature
** o (of O) reads lhs features [g C/G, (g+1) C/G), g = o / (O/G); with
** batch_group_count B, the result has N/B batch entries and output
** feature o reads lhs batch entry g (N/B) + n, g = o / (O/B).  The
** dimension numbers may also be written as a tuple of the three specs, or
** None (every spec (0, 1, ..., r-1)); show prints JAX's form.
**
** Attrs: l[0] window_strides, l[1] padding (lo, hi pairs flattened),
** l[2] lhs_dilation, l[3] rhs_dilation, l[4] lhs_spec, rhs_spec and
** out_spec one after another; i[0] feature_group_count, i[1]
** batch_group_count; dtype preferred_element_type (-1: None).
*/
#ifndef SHM_CONV_H
#define SHM_CONV_H

#include "ir.h"
#include "rule.h"

bool conv_rule(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
/* im2col and gemm: floats through OpenBLAS's sgemm/dgemm (f16 and bf16 in
   f32, rounded once), integers and bools exactly in 64 bits (bools: or of
   ands), complex numbers in double. */
void conv_kernel(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* Multiply-adds per output element: the kernel's spatial size times the
   input features of a group, for the cost model. */
double conv_macs_per_output(const Attrs *at, const Type *rhs);

#endif
