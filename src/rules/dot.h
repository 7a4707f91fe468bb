/*
** dot.h — dot_general (dot.c): the shape rule and kernel of its row in
** prims.def.
*/
#ifndef SHM_DOT_H
#define SHM_DOT_H

#include "rule.h"

/* dimension_numbers=(([lc], [rc]), ([lb], [rb])), precision,
   preferred_element_type: the result is (batch..., lhs free..., rhs free...). */
bool dot_rule(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
/* axis_name, pos_contract=((lc), (rc)), pos_batch=((lb), (rb)): dot_general
   of the positional dimensions, summed over named (mesh) axes. */
bool dot_rule_pdot(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void dot_kernel(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

#endif
