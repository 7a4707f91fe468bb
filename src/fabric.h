/*
** fabric.h — the in-process fabric: the one module through which
** instances of a shard_map exchange data.
**
** Every collective is a synchronisation point: the evaluator walks the
** equation once for all instances and hands the operand (one Val, a block
** per distinct instance) to fab_exec, which builds the result for every
** group of instances named by the collective's axes.  Reductions add the
** group's blocks in a fixed order — ascending group index, left to right —
** so results are the same bytes on every run.
**
** The fabric also accounts for what the exchange would cost on real
** hardware under the standard ring algorithms (n = bytes of one
** instance's operand, p = group size):
**   all-reduce (psum, pmax, pmin, pmean)   2(p-1)/p * n sent and received
**   all-gather, reduce-scatter, all-to-all (p-1)/p * n  (n = the larger side)
**   ppermute                               n per (source, destination) pair
**   pbroadcast, pscatter, axis_index       0
*/
#ifndef SHM_FABRIC_H
#define SHM_FABRIC_H

#include <stdio.h>
#include "prims.h"
#include "value.h"

/* Where an equation runs: the mesh of the enclosing shard_map (NULL at top
   level) and which instances are running (NULL: all of them). */
typedef struct Space {
  const Mesh *mesh;
  int64_t ninst;
  const uint8_t *active;
} Space;

/* Which blocks of a value of mask `mask` (nb of them) some running
   instance holds: a new array of flags (mem_free it), NULL when all run. */
uint8_t *fab_needed(const Space *sp, uint32_t mask, int64_t nb);
/* Is `prim` one of the collectives the fabric runs? */
bool fab_is_collective(int prim);
/* Run a collective.  `in` is the operand (NULL for axis_index); `outt` the
   result type (its vma is the result's mask).  Returns a new Val.
   `donate`: the caller holds the only reference to `in` and releases it
   right after, so a reduction may write its result into a block of `in`
   that nothing else references, instead of new memory. */
Val *fab_exec(const Space *sp, int prim, const Attrs *at, Val *in, const Type *outt, bool donate);

/* Communication statistics since the last reset. */
void fab_stats_reset(void);
/* The table of what the collectives since the reset sent, with rows by
   mesh axes; explain: then a note on what the columns mean. */
void fab_stats_print(FILE *out, bool explain);
/* Did any collective run since the reset? */
bool fab_stats_any(void);

#endif
