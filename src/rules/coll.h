/*
** coll.h — the shape rules of the collectives (the shape column of their
** rows in prims.def).
*/
#ifndef SHM_COLL_H
#define SHM_COLL_H

#include "rule.h"

/* Shape rules of the collectives (rows of prims.def). */
bool coll_rule_reduce(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_pbroadcast(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_pbroadcast_source(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_all_gather(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_psum_scatter(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_ppermute(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_pshuffle(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_all_to_all(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_axis_index(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_ragged_all_to_all(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_axis_size(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_psend(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_precv(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
/* An async collective's done: its operand is a future, the result the
   value it holds. */
bool coll_rule_async_done(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
/* The collective an async start runs (all_gather_start: all_gather), the
   done that awaits it, and whether prim is a start; other primitives:
   themselves, -1, false. */
int coll_async_base(int prim);
int coll_async_done(int prim);
bool coll_is_async_start(int prim);

/* axis_size's kernel: the size its rule found. */
void coll_kern_axis_size(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

/* The bytes one member of a group of p sends (and receives) in a
   collective under the standard ring algorithms, from the bytes of one
   member's operand (n_in) and result (n_out):
     all-reduce (psum, pmax, pmin, pmean)   2(p-1)/p * n_in
     all-gather (both forms)                (p-1)/p * n_out
     psum_scatter, all_to_all               (p-1)/p * n_in
     ragged_all_to_all                      (p-1)/p * n_in before it runs (the
                                            operand's rows spread evenly); the
                                            fabric counts the rows it sends
     ppermute, precv                        n_in (a member that sends)
     pbroadcast, pscatter, axis_index       0
   The fabric's statistics (--stats) and the cost model (cost.h) both
   count with it, so their totals agree. */
double coll_ring_bytes(int prim, int64_t p, double n_in, double n_out);

#endif
