/*
** cost.h — what one equation would cost on a device of the hardware.
**
** A local equation costs its roofline time: the larger of its FLOPs at
** the dtype's peak (a matmul's times the hardware's matmul efficiency)
** and the bytes it reads and writes at the HBM bandwidth, plus the
** hardware's kernel launch; fused into its producer's kernel (XLA's
** fusion of elementwise chains; timeline.c plans it) it pays no launch
** and no HBM traffic for the intermediate.  Shapes
** come from the checked types, element sizes from the dtype table; the
** FLOPs and bytes of each primitive are the rule its prims.def row names
** in the cost column (cost.c defines the rules, prims.h lists them).
**
** A collective costs the time of the algorithm the hardware would run it
** with, from the bytes of one member's operand and result:
**   torus (the scaling book's formulas): the group's mesh axes lie along
**     physical dimensions (hw_place); along each, the members form a ring
**     when the axis covers the dimension and it wraps around (both
**     directions: 2 W per member), else a line (W), and a stride s > 1
**     (members s chips apart) shares each link among s groups (W / s).
**     With B the sum over the dimensions the group spans,
**       all-gather, reduce-scatter   (N-1)/N * V / B   V: the whole array
**       all-reduce                   2 (N-1)/N * V / B
**       all-to-all                   V / (4 B)
**     and the time is the larger of that and (hops * hop latency), hops
**     the longest path (half the ring, or the line).  A ppermute routes
**     every pair along the dimensions (the short way round a ring) and
**     takes the most loaded link's bytes / W, or the longest path's
**     latency, whichever is larger.
**   switch (NCCL: the fastest of its algorithms, as its tuner picks; the
**     ring is the one below, the tree, NVLink SHARP and hierarchical forms
**     are cost.c's switch_allreduce; every collective adds the hardware's
**     fixed cost and links run at its achieved efficiency):
**     members within one node send over NVLink (W = links * link
**     bandwidth); across k nodes the network carries (k-1)/k of the data
**     at g * network bandwidth per node (g members a node), and the
**     slower level bounds the time; plus one latency per ring step
**     ((N-1) for gathers and scatters, 2(N-1) for all-reduce).  With
**     in-switch reduction (NVLink SHARP) an all-reduce within a node
**     takes V / W.
*/
#ifndef SHM_COST_H
#define SHM_COST_H

#include "hw.h"

typedef enum CostLimit {
  LIM_NONE,                  /* costs nothing (reshape, pbroadcast) */
  LIM_FLOPS,                 /* compute bound */
  LIM_HBM,                   /* memory-bandwidth bound */
  LIM_LINK,                  /* link-bandwidth bound */
  LIM_LATENCY,               /* bound by per-hop latency and fixed costs */
  LIM_LAUNCH,                /* a kernel whose launch costs more than its roofline */
  LIM_COUNT
} CostLimit;

const char *cost_limit_name(CostLimit l);

/* How an equation runs: a local one as its own kernel or fused into the
   kernel of the equation making its operand; a collective by the
   algorithm the hardware's library would pick (the fastest of those it
   has for the size and the group). */
typedef enum CostAlgo {
  ALG_NONE,                  /* a kernel of its own, or nothing */
  ALG_FUSED,                 /* fused into its producer's kernel */
  ALG_RING,                  /* ring (a torus dimension that wraps, NCCL's ring) */
  ALG_LINE,                  /* a torus dimension without wraparound */
  ALG_TORUS,                 /* along each torus dimension at once (2-D, 3-D) */
  ALG_TREE,                  /* NCCL's double binary tree across nodes, chains within */
  ALG_NVLS,                  /* NVLink SHARP: reduced in the switch */
  ALG_HIER_RING,             /* within nodes, then a ring across nodes, then within */
  ALG_HIER_TREE,             /* within nodes, then a tree across nodes, then within */
  ALG_NVLS_TREE,             /* NVLink SHARP within nodes, a tree across */
  ALG_DIRECT,                /* each block straight to its destination (all-to-all) */
  ALG_P2P,                   /* point to point (ppermute) */
  ALG_COUNT
} CostAlgo;

const char *cost_algo_name(CostAlgo a);

typedef struct Cost {
  double time;               /* seconds */
  double flops;              /* FLOPs of one device */
  double bytes;              /* HBM bytes (local) or bytes sent by one member (collective) */
  CostLimit limit;
  double hops;               /* collective: the longest path */
  CostAlgo algo;
} Cost;

/* Does the cost model run this equation on the communication stream? */
bool cost_is_comm(const IrStmt *st);

/* A local equation on one device (st->prim has a kernel, or pscatter,
   pbroadcast, axis_index). */
Cost cost_local(const Hw *hw, const IrStmt *st);
/* The same fused into the kernel of its producer (no launch of its own)
   and without `saved` bytes of HBM traffic (intermediates that stay on
   chip: an operand it reads from its producer, a result its consumer
   takes in the same kernel). */
Cost cost_local_fused(const Hw *hw, const IrStmt *st, bool fused, double saved);
/* Can st fuse into the kernel of the equation making its operand (an
   elementwise equation), and can st be that producer (a local equation
   that writes its results)? */
bool cost_fuses(const IrStmt *st);
bool cost_produces(const IrStmt *st);

/* The FLOPs of a local equation on one block. */
double cost_flops(const IrStmt *st);
/* Is a primitive's cost rule elementwise (one operation per result element)? */
bool cost_is_elementwise(int prim);
/* The HBM bytes a local equation reads and writes on one block. */
double cost_hbm_bytes(const IrStmt *st);

/* A collective over the axes of st on `mesh`, placed by `pl`: every group
   runs it at once.  `bytes` is what one member sends (coll_ring_bytes). */
Cost cost_collective(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const IrStmt *st);
/* The same for operand and result blocks of n_in and n_out bytes. */
Cost cost_collective_bytes(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const IrStmt *st, double n_in,
                           double n_out);
/* A ragged_all_to_all whose members each sent `sent` bytes to the others
   (what its sizes said in a run: fab_last_ragged_sent). */
Cost cost_ragged(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const IrStmt *st, double sent);

/* The formulas alone, for tests and the validation table: a collective
   `prim` of a group of `n` members over the given dimensions (torus:
   ring[k] whether dimension k is a ring, stride[k], extent[k]), with
   operand and result bytes per member. */
Cost cost_torus_formula(const Hw *hw, int prim, int ndims, const int64_t *extent, const int64_t *stride,
                        const bool *ring, double n_in, double n_out);
/* switch: n members in `nodes` nodes, g = n / nodes per node */
Cost cost_switch_formula(const Hw *hw, int prim, int64_t n, int64_t nodes, double n_in, double n_out);

#endif
