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
bool coll_rule_all_gather(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_psum_scatter(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_ppermute(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_pshuffle(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_all_to_all(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
bool coll_rule_axis_index(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);

#endif
