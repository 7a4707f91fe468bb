/*
** fabric.h — the fabric: the one module through which instances of a
** shard_map exchange data.  Under several ranks (fabmpi.h) each rank runs
** the instances it owns; a group of a collective that spans ranks has its
** members' operand blocks moved by fabmpi.c first, then its result is
** computed here as in one process, in the same fixed order.
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
**   ragged_all_to_all                      the rows each member sends the
**                                          others (its send_sizes), run time
**   pbroadcast, pscatter, axis_index       0
*/
#ifndef SHM_FABRIC_H
#define SHM_FABRIC_H

#include <stdio.h>
#include "buf.h"
#include "prims.h"
#include "value.h"

/* Where an equation runs: the mesh of the enclosing shard_map (NULL at top
   level) and which instances are running (NULL: all of them). */
typedef struct Space {
  const Mesh *mesh;
  int64_t ninst;
  const uint8_t *active;
} Space;

/* Whether instance `inst` runs here: it is running (sp->active) and this
   rank owns it (fabmpi.h; always, in one process). */
bool fab_runs(const Space *sp, int64_t inst);
/* Whether every instance runs here (no branch, one rank or top level). */
bool fab_all_here(const Space *sp);
/* Which blocks of a value of mask `mask` (nb of them) some instance
   running here holds: a new array of flags (mem_free it), NULL when all
   instances run here. */
uint8_t *fab_needed(const Space *sp, uint32_t mask, int64_t nb);
/* Is `prim` one of the collectives the fabric runs? */
bool fab_is_collective(int prim);
/* Run a collective.  `in` is the operand (NULL for axis_index); `outt` the
   result type (its vma is the result's mask).  Returns a new Val.
   `donate`: the caller holds the only reference to `in` and releases it
   right after, so a reduction may write its result into a block of `in`
   that nothing else references, instead of new memory. */
Val *fab_exec(const Space *sp, int prim, const Attrs *at, Val *in, const Type *outt, bool donate);
/* The same with every operand (ragged_all_to_all takes six). */
Val *fab_exec_n(const Space *sp, int prim, const Attrs *at, Val *const *ins, int nins, const Type *outt,
                bool donate);
/* The bytes one member sent to the others in the last ragged_all_to_all,
   averaged over the members (what its sizes said, for the cost model). */
double fab_last_ragged_sent(void);

/* Whole blocks moving between ranks (fabmpi.h): at `from` *slot holds
   the block; at `to` a new array of dtype dt and shape `shape` is
   received into *slot when that is NULL (else the copy is dropped).
   Every rank of `ranks` calls it with the same moves. */
typedef struct FabBlockMove {
  int from, to;
  Array **slot;
} FabBlockMove;
void fab_move_blocks(const int *ranks, int nranks, const FabBlockMove *bm, int n, DType dt, int rank,
                     const int64_t *shape);

/* psend and precv: where the collective about to run is written (for
   their messages); whether a psend is still waiting for its precv (then
   *msg says which, and every waiting send is dropped); dropping them all
   (a shard_map body starts afresh). */
void fab_set_site(Span where);
bool fab_unmatched(char *msg, size_t cap);
void fab_pending_reset(void);

/* Communication statistics since the last reset. */
void fab_stats_reset(void);
/* The table of what the collectives since the reset sent, with rows by
   mesh axes; explain: then a note on what the columns mean. */
void fab_stats_print(FILE *out, bool explain);
/* Did any collective run since the reset? */
bool fab_stats_any(void);
/* Under several ranks the calls are counted on rank 0: each rank's
   records since the last sync (fmpi_sync's extra bytes), forgotten with
   fab_stats_records_done, and rank 0's merge of every rank's. */
const Buf *fab_stats_records(void);
void fab_stats_records_done(void);
void fab_stats_release(void);          /* their memory, at the end */
void fab_stats_merge(const char *const *p, const size_t *n, int nranks);

/* The fabric collective that runs primitive prim (itself, or the one an
   unreduced collective or a cast of unreduced and reduced values is). */
int fab_base_prim(int prim);

#endif
