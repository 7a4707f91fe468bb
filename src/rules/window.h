/*
** window.h — JAX's windowed reductions (window.c): reduce_window with a
** body of its own, reduce_window_sum, reduce_window_max,
** reduce_window_min, and the two primitives of max pooling's derivatives,
** select_and_gather_add and select_and_scatter_add.
**
**   reduce_window_sum[window_dimensions=(2, 2), window_strides=(2, 2),
**                     padding=((0, 0), (0, 0)), base_dilation=(1, 1),
**                     window_dilation=(1, 1)] x
**
** The operand is dilated by base_dilation (base_dilation - 1 holes
** between its elements), padded by padding's (lo, hi) pairs (negative
** values crop), and each window, of window_dimensions elements
** window_dilation apart, placed every window_strides, is reduced.  Holes
** and padding hold the reduction's identity (0; -inf or the dtype's least
** value for max; +inf or its greatest for min), as in XLA's ReduceWindow.
** Along each dimension the result has max(0, (P - W) // s + 1) elements,
** P the dilated, padded size and W the dilated window.
**
** select_and_gather_add[select_prim, window params] t x gives, for each
** window of x, the element of t at the position the window selects:
** the first of its elements (in row-major window order) that no later one
** replaces, a later e replacing the selected s when not select_prim(s, e)
** (ge: the first maximum; le: the first minimum); 0 where a window holds
** no element of x.  select_and_scatter_add[select_prim, window_dimensions,
** window_strides, padding] s x (no dilations) adds each s[y] into the
** position of x that window y selects; the result has x's shape and s's
** dtype.  They are JAX's JVP and VJP of reduce_window_max and _min.
**
** reduce_window[jaxpr=body, ...] x1..xn i1..in folds each window of the
** n operands with the body (at->fns[0], run by body.c): the accumulators
** start at the init values and become body(accumulators, elements) for
** each window position, in row-major window order, that lies in the
** operands; padding and holes take no part (XLA's CPU backend).
**
** Attrs: l[0] window_dimensions, l[1] window_strides, l[2] padding (lo, hi
** pairs flattened), l[3] base_dilation, l[4] window_dilation (all ones for
** select_and_scatter_add); i[0] 0 for ge, 1 for le.
*/
#ifndef SHM_WINDOW_H
#define SHM_WINDOW_H

#include "ir.h"
#include "rule.h"

bool win_rule_sum(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool win_rule_chooser(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool win_rule_generic(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool win_rule_gather(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool win_rule_scatter(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);

void win_kern_sum(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void win_kern_max(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void win_kern_min(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void win_kern_generic(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void win_kern_gather(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void win_kern_scatter(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* The reduction a reduce_window body f is: P_ADD, P_MAX or P_MIN when its
   one equation is that primitive of its two parameters (in either order),
   or -1. */
int win_body_op(const IrFunc *f);
/* Is init (a literal) the identity of op's reduction: 0 for add, -inf (or
   the dtype's least value) for max, +inf (its greatest) for min? */
bool win_is_identity(int op, const Array *init);

/* The number of window positions, a window's size times the result's
   element count, for the cost model. */
double win_positions(const Attrs *at, const Type *out);

#endif
