/*
** indexing.h — JAX's indexing primitives gather and the scatter family
** (indexing.c): their shape rules and kernels, as jax.lax defines them.
**
**   gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(...),
**          collapsed_slice_dims=(...), start_index_map=(...),
**          operand_batching_dims=(...), start_indices_batching_dims=(...))
**          fill_value=None indices_are_sorted=False
**          mode=GatherScatterMode.PROMISE_IN_BOUNDS slice_sizes=(...)
**          unique_indices=False] operand indices
**   scatter, scatter-add, scatter-sub, scatter-mul, scatter-min,
**   scatter-max[dimension_numbers=ScatterDimensionNumbers(
**          update_window_dims=(...), inserted_window_dims=(...),
**          scatter_dims_to_operand_dims=(...), operand_batching_dims=(...),
**          scatter_indices_batching_dims=(...)) indices_are_sorted=False
**          mode=GatherScatterMode.FILL_OR_DROP unique_indices=False
**          update_consts=() update_jaxpr=None] operand indices updates
**
** The index vector is always the last dimension of indices (JAX's
** implicit index_vector_dim).  Out-of-bounds indices follow the mode:
**
**   CLIP               the start of each window is clamped so that the
**                      whole window is in bounds (gather and scatter)
**   FILL_OR_DROP       gather: a window not wholly in bounds is
**                      fill_value (None: NaN for floating and complex
**                      dtypes, the minimum of a signed integer dtype, the
**                      maximum of an unsigned one, True for bool);
**                      scatter: such a window's updates are dropped
**   PROMISE_IN_BOUNDS  what JAX on CPU does: gather clamps as CLIP,
**                      scatter drops as FILL_OR_DROP
**
** mode is read as JAX printed it in any version (GatherScatterMode.CLIP,
** CLIP, the enum's value 1, 2 or 3, or the strings 'clip', 'fill',
** 'drop', 'promise_in_bounds'); show prints GatherScatterMode.NAME.
** Dimension numbers written without the batching fields (JAX before
** 0.4.31) get them empty, and show prints all five.
**
** Scatter applies updates in the row-major order of the updates' scatter
** dimensions, as JAX on CPU does: with duplicate indices `scatter` keeps
** the last update, scatter-add sums in that order (np.add.at's order).
** update_jaxpr may be None or, as older JAX printed it, the combining
** jaxpr; the primitive's name decides the combination.  A `scatter` with
** an update_jaxpr of its own (jax.lax.scatter_apply) is refused.
*/
#ifndef SHM_INDEXING_H
#define SHM_INDEXING_H

#include "ir.h"
#include "rule.h"

/* The modes, in the order of JAX's enum (whose values are these + 1). */
enum { IDX_CLIP, IDX_FILL_OR_DROP, IDX_PROMISE_IN_BOUNDS };
/* How a scatter combines an update with the operand's element. */
enum { IDX_SET, IDX_ADD, IDX_SUB, IDX_MUL, IDX_MIN, IDX_MAX };

bool idx_rule_gather(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool idx_rule_scatter(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void idx_kern_gather(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);
void idx_kern_scatter(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* The dimension numbers of a gather as those of the scatter that is its
   transpose, or the other way round (the same tuples, the other names),
   built in memory the caller gives: m[6] values and items[5] pointers.
   dn is a canonical value (all five fields, as the rules record it). */
PVal *idx_dnums_swap(const PVal *dn, PVal *m, PVal **items);
/* The canonical mode value of a mode, in memory the caller gives. */
PVal *idx_mode_pv(int mode, PVal *m);

#endif
