/*
** cost.c — per-equation roofline costs and collective cost formulas.
*/
#include <math.h>
#include "coll.h"
#include "conv.h"
#include "cost.h"
#include "err.h"
#include "fabric.h"
#include "prims.h"
#include "value.h"
#include "window.h"

const char *cost_limit_name(CostLimit l) {
  switch (l) {
  case LIM_FLOPS: return "FLOPs";
  case LIM_HBM: return "HBM";
  case LIM_LINK: return "link";
  case LIM_LATENCY: return "latency";
  case LIM_LAUNCH: return "launch";
  default: return "-";
  }
}

const char *cost_algo_name(CostAlgo a) {
  static const char *const names[ALG_COUNT] = {"-", "fused", "ring", "line", "torus", "tree", "nvls",
                                                "hier+ring", "hier+tree", "nvls+tree", "direct", "p2p"};
  return a >= 0 && a < ALG_COUNT ? names[a] : "-";
}

bool cost_is_comm(const IrStmt *st) {
  return st->prim >= 0 && st->prim < P_COUNT &&
         prim_communicates(st->prim);
}

static double type_bytes(const Type *t) { return (double)type_size(t) * (double)dtype_sizes[t->dt]; }

static double type_elems(const Type *t) { return (double)type_size(t); }

/* ---- local equations --------------------------------------------------------------------- */

/* What one local equation does on one block: the operations it computes
   and the HBM bytes it reads and writes.  Each primitive's rule is the
   cost column of its prims.def row (prims.h lists the classes). */
typedef struct Work {
  double flops, bytes;
} Work;

typedef Work (*CostFn)(const IrStmt *st);

/* The bytes of the operands that are variables (a literal is folded into
   the code) and of every result: what an unfused equation reads and writes. */
static double io_bytes(const IrStmt *st) {
  double b = 0;
  for (int i = 0; i < st->nin; i++)
    if (st->in[i].var) b += type_bytes(&st->in[i].t);
  for (int j = 0; j < st->nout; j++) b += type_bytes(&st->out[j]->t);
  return b;
}

static const Type *out0(const IrStmt *st) { return &st->out[0]->t; }

/* elementwise, and the default: one operation per result element */
static Work cost_ew(const IrStmt *st) { return (Work){type_elems(out0(st)), io_bytes(st)}; }

/* moving data, not computing */
static Work cost_move(const IrStmt *st) { return (Work){0, io_bytes(st)}; }

/* bitcasts, annotations of where a value lives (XLA moves nothing for
   them here), or nothing at all */
static Work cost_view(const IrStmt *st) {
  (void)st;
  return (Work){0, 0};
}

/* control flow and calls: nothing of their own, their bodies' equations
   are priced one by one (timeline.c, abstract.c) */
static Work cost_none(const IrStmt *st) {
  (void)st;
  return (Work){0, 0};
}

/* a collective: cost_collective prices it on the communication stream;
   it computes nothing on the compute stream */
static Work cost_coll(const IrStmt *st) {
  (void)st;
  return (Work){0, 0};
}

/* writes its result, reads nothing */
static Work cost_fill(const IrStmt *st) { return (Work){0, type_bytes(out0(st))}; }

/* read what the result holds, write it */
static Work cost_slice(const IrStmt *st) { return (Work){0, 2 * type_bytes(out0(st))}; }

/* in place: read the update, write it into the operand */
static Work cost_dus(const IrStmt *st) { return (Work){0, 2 * type_bytes(&st->in[1].t)}; }

/* gather: the indices, the windows read, the result written */
static Work cost_gather(const IrStmt *st) {
  return (Work){0, type_bytes(&st->in[1].t) + 2 * type_bytes(out0(st))};
}

/* in place, as XLA does: the indices and updates read, the windows
   written (and, combining, read first: one operation per update element) */
/* The operations of one run of a primitive's scalar function (reduce_window's
   body, scatter_apply's function): its equations' own, on scalars. */
static double body_flops(const IrFunc *f) {
  double n = 0;
  for (int i = 0; i < f->nbody; i++) {
    const IrStmt *st = f->body[i];
    if (st->k == IS_EQN) n += st->prim < 0 ? (st->callee ? body_flops(st->callee) : 0) : cost_flops(st);
  }
  return n;
}

/* scatter_apply (a scatter with a function): the function per update element */
static Work cost_scatter(const IrStmt *st) {
  double flops = st->at && st->at->nfns ? type_elems(&st->in[2].t) * body_flops(st->at->fns[0]) : 0;
  return (Work){flops, type_bytes(&st->in[1].t) + 2 * type_bytes(&st->in[2].t)};
}

static Work cost_scatter_combine(const IrStmt *st) {
  return (Work){type_elems(&st->in[2].t), type_bytes(&st->in[1].t) + 3 * type_bytes(&st->in[2].t)};
}

/* reductions and scans: one operation per element read */
static Work cost_reduce(const IrStmt *st) { return (Work){type_elems(&st->in[0].t), io_bytes(st)}; }

static Work cost_allclose(const IrStmt *st) { return (Work){4 * type_elems(&st->in[0].t), io_bytes(st)}; }

/* a multiply and an add per result element and contracted position */
static Work cost_dot(const IrStmt *st) {
  double k = 1;
  const IntList *lc = &st->at->l[0];
  for (int i = 0; i < lc->n; i++) k *= (double)st->in[0].t.shape[lc->v[i]];
  return (Work){2 * type_elems(out0(st)) * k, io_bytes(st)};
}

/* a Fourier transform of N complex points: 5 N log2 N operations (the
   count FFT benchmarks use); a real one (RFFT, IRFFT) half of that */
static Work cost_fft(const IrStmt *st) {
  const IntList *len = &st->at->l[0];
  double n = 1;
  for (int i = 0; i < len->n; i++) n *= (double)len->v[i];
  const Type *out = out0(st), *big = type_size(&st->in[0].t) > type_size(out) ? &st->in[0].t : out;
  double transforms = type_elems(big) / n, real = st->at->i[0] >= 2 ? 0.5 : 1;
  return (Work){transforms * real * 5 * n * (n > 1 ? log2(n) : 1), io_bytes(st)};
}

/* sorting: n log2 n comparisons per row of n, a comparison per key (two
   for a complex key); selection sorts its rows the same way */
static Work cost_sort(const IrStmt *st) {
  const Type *x = &st->in[0].t;
  bool sort = st->prim == P_SORT;
  int d = (int)st->at->i[sort ? 0 : 1], keys = sort ? (int)st->at->i[1] : 1, c = 0;
  for (int k = 0; k < keys; k++) c += dtype_is_complex((DType)st->in[k].t.dt) ? 2 : 1;
  double n = (double)x->shape[d];
  return (Work){n > 1 ? type_elems(x) * log2(n) * c : 0, io_bytes(st)};
}

/* logaddexp per element: max, sub, abs, neg, exp, log1p, add, select */
static Work cost_cumlse(const IrStmt *st) { return (Work){type_elems(out0(st)) * 8, io_bytes(st)}; }

/* a convolution: a multiply and an add per output element, kernel
   position and input feature of its group */
static Work cost_conv(const IrStmt *st) {
  return (Work){2 * type_elems(out0(st)) * conv_macs_per_output(st->at, &st->in[1].t), io_bytes(st)};
}

/* windows: one operation per window position (a select_and_scatter_add
   compares over its source's windows, and adds once per one) */
static Work cost_window(const IrStmt *st) { return (Work){win_positions(st->at, out0(st)), io_bytes(st)}; }

/* reduce_window with a body: the body's operations per window position */
static Work cost_window_body(const IrStmt *st) {
  return (Work){win_positions(st->at, out0(st)) * body_flops(st->at->fns[0]), io_bytes(st)};
}

static Work cost_select_scatter(const IrStmt *st) {
  const Type *src = &st->in[0].t;
  return (Work){win_positions(st->at, src) + type_elems(src), io_bytes(st)};
}

/* special functions, per result element: the operations of XLA's
   expansion of each (the Bessel functions' Chebyshev series, about 20
   terms of 3 operations; zeta's 10 powers and 11 Horner steps), and for
   the series and continued fractions of the incomplete gamma and beta
   functions about 20 operations a step over a nominal 20 steps (they stop
   when converged, after a data-dependent count) */
static Work cost_bessel(const IrStmt *st) { return (Work){60 * type_elems(out0(st)), io_bytes(st)}; }

static Work cost_zeta(const IrStmt *st) { return (Work){110 * type_elems(out0(st)), io_bytes(st)}; }

static Work cost_series(const IrStmt *st) { return (Work){400 * type_elems(out0(st)), io_bytes(st)}; }

/* Integer operations of one Threefry 2x32 hash (20 rounds of add, rotate
   (two shifts and an or) and xor; 5 key injections of three adds) and of
   one Philox 4x32 block (10 rounds of two 32x32->64 multiplies, two xors
   each of three words and two key adds), for the random primitives. */
enum { THREEFRY_OPS = 20 * 5 + 5 * 3, PHILOX_OPS = 10 * (2 + 4 + 2) };

/* random numbers: a hash per key made or per element drawn (a 64-bit
   one takes two words of a hash in the old layout, counted as one) */
static Work cost_threefry(const IrStmt *st) {
  const Type *out = out0(st);
  return (Work){THREEFRY_OPS * type_elems(out) / (st->prim == P_RANDOM_SPLIT && out->dt == DT_U32 ? 2 : 1),
                io_bytes(st)};
}

static Work cost_random_seed(const IrStmt *st) { return (Work){2 * type_elems(out0(st)), io_bytes(st)}; }

/* a block gives 16 bytes */
static Work cost_philox(const IrStmt *st) {
  return (Work){PHILOX_OPS * ceil(type_bytes(&st->out[1]->t) / 16), io_bytes(st)};
}

static const CostFn cost_rule[P_COUNT] = {
#define PRIM(tag, name, alias, nmin, nmax, nout, params, shape, vrule, kernel, exec, tr, jvp, cost) [P_##tag] = cost,
#include "prims.def"
#undef PRIM
};

static Work work_of(const IrStmt *st) {
  if (st->prim < 0 || st->prim >= P_COUNT || !st->nout) return (Work){0, 0};
  return cost_rule[st->prim](st);
}

double cost_flops(const IrStmt *st) { return work_of(st).flops; }

bool cost_is_elementwise(int prim) { return prim >= 0 && prim < P_COUNT && cost_rule[prim] == cost_ew; }

double cost_hbm_bytes(const IrStmt *st) { return work_of(st).bytes; }

bool cost_fuses(const IrStmt *st) {
  return st->prim >= 0 && st->prim < P_COUNT && st->nout == 1 && cost_rule[st->prim] == cost_ew && !cost_is_comm(st);
}

bool cost_produces(const IrStmt *st) {
  if (st->prim < 0 || st->prim >= P_COUNT || !st->nout || cost_is_comm(st)) return false;
  CostFn f = cost_rule[st->prim];
  return f != cost_none && f != cost_view && f != cost_coll && f != cost_dus && f != cost_scatter &&
         f != cost_scatter_combine;
}

Cost cost_local_fused(const Hw *hw, const IrStmt *st, bool fused, double saved) {
  Cost c = {0, 0, 0, LIM_NONE, 0, fused ? ALG_FUSED : ALG_NONE};
  Work w = work_of(st);
  c.flops = w.flops;
  c.bytes = w.bytes - saved > 0 ? w.bytes - saved : 0;
  bool mxu = st->prim == P_DOT_GENERAL || st->prim == P_CONV_GENERAL_DILATED;   /* matrix units */
  int dt = st->nin && mxu ? st->in[0].t.dt : st->nout ? st->out[0]->t.dt : DT_F32;
  double peak = mxu || !hw->vector_flops ? hw_peak(hw, dt, NULL) * (mxu ? hw->matmul_eff : 1) : hw->vector_flops;
  double tf = c.flops / peak, tm = c.bytes / hw->hbm_bw;
  double roof = tf > tm ? tf : tm;
  /* a kernel of its own pays its launch; a fused equation runs inside its producer's */
  double launch = !fused && (w.flops > 0 || w.bytes > 0) ? hw->kernel_overhead : 0;
  c.time = roof + launch;
  c.limit = c.time == 0 ? LIM_NONE : launch > roof ? LIM_LAUNCH : tf >= tm ? LIM_FLOPS : LIM_HBM;
  return c;
}

Cost cost_local(const Hw *hw, const IrStmt *st) { return cost_local_fused(hw, st, false, 0); }

/* ---- collectives: the formulas ----------------------------------------------------------- */

/* The time of a bandwidth term and a latency term, and which one binds. */
static Cost bound(double bw_time, double lat_time, double hops, double bytes, bool additive) {
  Cost c = {0, 0, bytes, LIM_NONE, hops, ALG_NONE};
  c.time = additive ? bw_time + lat_time : (bw_time > lat_time ? bw_time : lat_time);
  c.limit = c.time == 0 ? LIM_NONE : bw_time >= lat_time ? LIM_LINK : LIM_LATENCY;
  return c;
}

static bool is_reduce(int prim) { return prim == P_PSUM || prim == P_PMAX || prim == P_PMIN || prim == P_PMEAN; }

/* A collective's fixed cost (its launch and synchronization) on top. */
static Cost with_overhead(const Hw *hw, Cost c, CostAlgo algo) {
  c.algo = algo;
  if (c.time > 0) c.time += hw->coll_overhead;
  return c;
}

Cost cost_torus_formula(const Hw *hw, int prim, int ndims, const int64_t *extent, const int64_t *stride,
                        const bool *ring, double n_in, double n_out) {
  double B = 0, hops = 0, n = 1;
  int spanned = 0;
  bool wraps = false;
  for (int k = 0; k < ndims; k++) {
    if (extent[k] <= 1) continue;
    spanned++;
    wraps = ring[k];
    n *= (double)extent[k];
    B += (ring[k] ? 2 : 1) * hw->link_bw * hw->link_eff / (double)stride[k];
    hops += (double)(ring[k] ? extent[k] / 2 : extent[k] - 1) * (double)stride[k];
  }
  double sent = coll_ring_bytes(prim, (int64_t)n, n_in, n_out), t = 0;
  if (n <= 1 || B == 0) return bound(0, 0, 0, 0, false);
  double f = (n - 1) / n;
  if (is_reduce(prim)) t = 2 * f * n_in / B;
  else if (prim == P_ALL_GATHER || prim == P_ALL_GATHER_INVARIANT) t = f * n_out / B;
  else if (prim == P_PSUM_SCATTER || prim == P_PBROADCAST_SOURCE) t = f * n_in / B;
  else if (prim == P_ALL_TO_ALL || prim == P_RAGGED_ALL_TO_ALL) t = n * n_in / (4 * B);
  if (is_reduce(prim)) hops *= 2;
  /* XLA's TPU collectives: along one dimension a ring (wraparound) or a
     line; over several, along each at once (the bandwidths add) */
  CostAlgo algo = spanned > 1 ? ALG_TORUS : wraps ? ALG_RING : ALG_LINE;
  if (prim == P_ALL_TO_ALL || prim == P_RAGGED_ALL_TO_ALL) algo = ALG_DIRECT;
  return with_overhead(hw, bound(t, hops * hw->hop_latency, hops, sent, false), algo);
}

/* The fastest of two candidates (the first on a tie). */
static Cost faster(Cost a, Cost b) { return b.time < a.time ? b : a; }

/* An all-reduce of V bytes over n members in k nodes of g, by each of
   NCCL's algorithms the hardware has, the fastest kept (NCCL's tuner:
   latency + bytes / bandwidth per algorithm).  nv, net: NVLink and
   per-node network bandwidth as achieved. */
static Cost switch_allreduce(const Hw *hw, double V, double N, double k, double g, double nv, double net,
                             double sent) {
  double hop = hw->hop_latency, nlat = hw->net_latency, lg = k > 1 ? ceil(log2(k)) : 0;
  /* ring: reduce-scatter then all-gather round all n members */
  double intra = g > 1 ? (g - 1) / g * V / nv : 0, inter = k > 1 ? (k - 1) / k * V / net : 0;
  Cost best = bound(2 * (intra > inter ? intra : inter), 2 * (N - k) * hop + 2 * (k - 1) * nlat, 2 * (N - 1), sent,
                    true);
  best.algo = ALG_RING;
  /* NCCL's tree: a chain within each node, a double binary tree across
     nodes; each half of the data up one tree and down it again */
  if (k > 1) {
    double bw = V / nv > V / net ? V / nv : V / net;
    Cost t = bound(2 * bw, 2 * ((g - 1) * hop + lg * nlat), 2 * (g - 1 + lg), sent, true);
    t.algo = ALG_TREE;
    best = faster(best, t);
  }
  /* NVLink SHARP within a node: each member sends its data into the
     switch and takes its reduced share back, (1 + 1/g) V each way */
  double nvls = hw->switch_reduce && g > 1 ? (1 + 1 / g) * V / (nv * hw->switch_reduce_eff) : -1;
  if (nvls >= 0 && k == 1) {
    Cost t = bound(nvls, 2 * hop, 2, sent, true);
    t.algo = ALG_NVLS;
    best = faster(best, t);
  }
  /* hierarchical: reduce-scatter within the node (NVLink SHARP where the
     switch reduces), an all-reduce of each member's 1/g across the nodes
     (ring or tree), an all-gather within the node */
  if (k > 1 && g > 1) {
    double in_t = nvls >= 0 ? nvls : 2 * intra, in_lat = nvls >= 0 ? 2 * hop : 2 * (g - 1) * hop;
    double part = V / g;
    Cost r = bound(in_t + 2 * (k - 1) / k * part / hw->net_bw / hw->link_eff, in_lat + 2 * (k - 1) * nlat,
                   2 * (g - 1 + k - 1), sent, true);
    r.algo = ALG_HIER_RING;
    Cost t = bound(in_t + 2 * part / hw->net_bw / hw->link_eff, in_lat + 2 * lg * nlat, 2 * (g - 1 + lg), sent, true);
    t.algo = nvls >= 0 ? ALG_NVLS_TREE : ALG_HIER_TREE;
    best = faster(best, faster(r, t));
  }
  return best;
}

Cost cost_switch_formula(const Hw *hw, int prim, int64_t n, int64_t nodes, double n_in, double n_out) {
  if (n <= 1) return bound(0, 0, 0, 0, true);
  double g = (double)n / (double)nodes, k = (double)nodes, N = (double)n;
  double nv = hw->links * hw->link_bw * hw->link_eff, net = hw->net_bw * hw->link_eff * g;
  double sent = coll_ring_bytes(prim, n, n_in, n_out);
  double V = prim == P_ALL_GATHER || prim == P_ALL_GATHER_INVARIANT ? n_out : n_in;
  if (is_reduce(prim)) {
    Cost c = switch_allreduce(hw, V, N, k, g, nv, net, sent);
    return with_overhead(hw, c, c.algo);
  }
  double intra = g > 1 ? (g - 1) / g * V / nv : 0, inter = k > 1 ? (k - 1) / k * V / net : 0;
  if (prim == P_ALL_TO_ALL || prim == P_RAGGED_ALL_TO_ALL) {   /* direct sends: one step */
    double off = k > 1 ? V * (N - g) / N / (hw->net_bw * hw->link_eff) : 0;
    double on = (g - 1) / N * V / nv;
    Cost c = bound(on > off ? on : off, k > 1 ? hw->net_latency : hw->hop_latency, 1, sent, true);
    return with_overhead(hw, c, ALG_DIRECT);
  }
  /* all-gather, reduce-scatter: NCCL's ring over all members, or
     hierarchically: across the nodes (each member with its peers of the
     other nodes: a ring, or recursive doubling in log2 k steps), then
     within each node */
  Cost best = bound(intra > inter ? intra : inter, (N - k) * hw->hop_latency + (k - 1) * hw->net_latency, N - 1,
                    sent, true);
  best.algo = ALG_RING;
  if (k > 1 && g > 1) {
    double lg = ceil(log2(k));
    Cost h = bound(intra + inter, (g - 1) * hw->hop_latency + lg * hw->net_latency, g - 1 + lg, sent, true);
    h.algo = ALG_HIER_TREE;
    best = faster(best, h);
  }
  return with_overhead(hw, best, best.algo);
}

/* ---- collectives on a placed mesh -------------------------------------------------------- */

/* The group's extent, stride and ring-ness along each physical dimension
   it spans (several mesh axes along one dimension merge: their extents
   multiply at the smallest stride). */
static int torus_group(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const Attrs *at, int64_t *extent,
                       int64_t *stride, bool *ring) {
  int nd = hw->ndims;
  for (int d = 0; d < nd; d++) {
    extent[d] = 1;
    stride[d] = 0;
  }
  for (int k = 0; k < at->naxes; k++) {
    int a = at->axes[k];
    for (int j = 0; j < pl->ndim[a]; j++) {
      int d = pl->dim[a][j];
      extent[d] *= pl->extent[a][j];
      if (!stride[d] || pl->stride[a][j] < stride[d]) stride[d] = pl->stride[a][j];
    }
  }
  (void)mesh;
  for (int d = 0; d < nd; d++) {
    if (!stride[d]) stride[d] = 1;
    ring[d] = pl->wrap[d] && extent[d] * stride[d] == pl->slice[d];
  }
  return nd;
}

/* Each member's destination in a ppermute's perm, -1 where it sends
   nothing: a table over the group, looked up per device (a scan of the
   pairs for every device was quadratic in the mesh: 3.8 s for 32,768
   pairs on 65,536 devices).  Released by the caller (err_defer'd). */
static int64_t *perm_dests(const Mesh *mesh, const Attrs *at) {
  int64_t p = 1;
  for (int k = 0; k < at->naxes; k++) p *= mesh->size[at->axes[k]];
  int64_t *dst = mem_alloc(sizeof(int64_t) * (size_t)p);
  err_defer(mem_free, dst);
  for (int64_t q = 0; q < p; q++) dst[q] = -1;
  const IntList *perm = &at->l[0];
  for (int i = perm->n / 2 - 1; i >= 0; i--)          /* (the first pair of a member, as the scan found) */
    if (perm->v[2 * i] >= 0 && perm->v[2 * i] < p) dst[perm->v[2 * i]] = perm->v[2 * i + 1];
  return dst;
}

static void dests_free(int64_t *dst) {
  err_undefer(dst);
  mem_free(dst);
}

/* The link loads of a ppermute: every pair of every group routed along
   the dimensions in order, the short way round a ring. */
static Cost torus_ppermute(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const IrStmt *st, double n_in) {
  int nd = hw->ndims;
  int64_t nodes = 1;
  for (int d = 0; d < nd; d++) nodes *= pl->slice[d];
  const Attrs *at = st->at;
  int64_t *dests = perm_dests(mesh, at);
  double *load = mem_calloc(sizeof(double) * (size_t)(nodes * nd * 2));
  double maxhops = 0, maxload = 0;
  int64_t coords[SHM_MAXAXES];
  for (int64_t dev = 0; dev < mesh->ndev; dev++) {
    til_coords(mesh, dev, coords);
    int64_t member = 0;
    for (int k = 0; k < at->naxes; k++) member = member * mesh->size[at->axes[k]] + coords[at->axes[k]];
    {
      if (dests[member] < 0) continue;
      /* the destination: this device with the member coordinates of the target */
      int64_t dst = dests[member];
      int64_t dc[SHM_MAXAXES];
      memcpy(dc, coords, sizeof dc);
      for (int k = at->naxes - 1; k >= 0; k--) {
        dc[at->axes[k]] = dst % mesh->size[at->axes[k]];
        dst /= mesh->size[at->axes[k]];
      }
      int64_t ddev = 0;
      for (int a = 0; a < mesh->naxes; a++) ddev = ddev * mesh->size[a] + dc[a];
      int64_t s[HW_MAXDIMS], t[HW_MAXDIMS];
      hw_coords(hw, mesh, pl, dev, s);
      hw_coords(hw, mesh, pl, ddev, t);
      double hops = 0;
      for (int d = 0; d < nd; d++) {
        int64_t L = pl->slice[d], delta = t[d] - s[d];
        if (pl->wrap[d]) {
          delta = ((delta % L) + L) % L;
          if (delta > L / 2) delta -= L;
        }
        int dir = delta >= 0 ? 0 : 1;
        for (int64_t h = 0; h < (delta >= 0 ? delta : -delta); h++) {
          int64_t node = 0;
          for (int e = 0; e < nd; e++) node = node * pl->slice[e] + s[e];
          double *l = &load[(node * nd + d) * 2 + dir];
          *l += n_in;
          if (*l > maxload) maxload = *l;
          s[d] = ((s[d] + (dir ? -1 : 1)) % L + L) % L;
          hops++;
        }
      }
      if (hops > maxhops) maxhops = hops;
    }
  }
  mem_free(load);
  dests_free(dests);
  return with_overhead(hw, bound(maxload / (hw->link_bw * hw->link_eff), maxhops * hw->hop_latency, maxhops, n_in, false),
                       ALG_P2P);
}

/* A ppermute over a switch: each pair over NVLink within a node, over the
   network across nodes; every chip sends and receives at most once. */
static Cost switch_ppermute(const Hw *hw, const Mesh *mesh, const IrStmt *st, double n_in) {
  const Attrs *at = st->at;
  int64_t *dests = perm_dests(mesh, at);
  bool cross = false, any = false;
  int64_t coords[SHM_MAXAXES];
  for (int64_t dev = 0; dev < mesh->ndev && !cross; dev++) {
    til_coords(mesh, dev, coords);
    int64_t member = 0;
    for (int k = 0; k < at->naxes; k++) member = member * mesh->size[at->axes[k]] + coords[at->axes[k]];
    {
      if (dests[member] < 0 || dests[member] == member) continue;
      int64_t dst = dests[member];
      for (int k = at->naxes - 1; k >= 0; k--) {
        coords[at->axes[k]] = dst % mesh->size[at->axes[k]];
        dst /= mesh->size[at->axes[k]];
      }
      int64_t ddev = 0;
      for (int a = 0; a < mesh->naxes; a++) ddev = ddev * mesh->size[a] + coords[a];
      any = true;
      if (ddev / hw->node_size != dev / hw->node_size) cross = true;
      til_coords(mesh, dev, coords);
    }
  }
  dests_free(dests);
  if (!any) return bound(0, 0, 0, n_in, true);
  double bw = (cross ? hw->net_bw : hw->links * hw->link_bw) * hw->link_eff;
  return with_overhead(hw, bound(n_in / bw, cross ? hw->net_latency : hw->hop_latency, 1, n_in, true), ALG_P2P);
}

/* The nodes the group of device 0 spans (every group spans as many):
   its members are numbered row-major over the mesh, the last device
   being the sum of (size - 1) * stride over the named axes. */
static int64_t switch_nodes(const Hw *hw, const Mesh *mesh, const Attrs *at) {
  int64_t stride = 1, last = 0, p = 1;
  for (int a = mesh->naxes - 1; a >= 0; a--) {
    for (int k = 0; k < at->naxes; k++)
      if (at->axes[k] == a) {
        last += (mesh->size[a] - 1) * stride;
        p *= mesh->size[a];
      }
    stride *= mesh->size[a];
  }
  int64_t nodes = last / hw->node_size + 1;
  return nodes > p ? p : nodes;
}

Cost cost_collective(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const IrStmt *st) {
  double n_in = st->nin ? type_bytes(&st->in[0].t) : 0, n_out = type_bytes(&st->out[0]->t);
  if (st->prim == P_PRECV) n_in = n_out;     /* (its operand is the token; the psend's block moves) */
  return cost_collective_bytes(hw, mesh, pl, st, n_in, n_out);
}

Cost cost_ragged(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const IrStmt *st, double sent) {
  int64_t p = 1;
  for (int k = 0; k < st->at->naxes; k++) p *= mesh->size[st->at->axes[k]];
  double n_in = p > 1 ? sent * (double)p / (double)(p - 1) : 0;
  return cost_collective_bytes(hw, mesh, pl, st, n_in, type_bytes(&st->out[0]->t));
}

Cost cost_collective_bytes(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const IrStmt *st, double n_in,
                           double n_out) {
  const Attrs *at = st->at;
  int64_t p = 1;
  for (int k = 0; k < at->naxes; k++) p *= mesh->size[at->axes[k]];
  int prim = fab_base_prim(st->prim);    /* unreduced_psum costs a psum, and so on */
  if (prim == P_PPERMUTE || prim == P_PRECV)
    return hw->topo == HW_TORUS ? torus_ppermute(hw, mesh, pl, st, n_in) : switch_ppermute(hw, mesh, st, n_in);
  if (hw->topo == HW_SWITCH) return cost_switch_formula(hw, prim, p, switch_nodes(hw, mesh, at), n_in, n_out);
  int64_t extent[HW_MAXDIMS], stride[HW_MAXDIMS];
  bool ring[HW_MAXDIMS];
  int nd = torus_group(hw, mesh, pl, at, extent, stride, ring);
  return cost_torus_formula(hw, prim, nd, extent, stride, ring, n_in, n_out);
}
