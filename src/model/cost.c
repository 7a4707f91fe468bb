/*
** cost.c — per-equation roofline costs and collective cost formulas.
*/
#include <math.h>
#include "coll.h"
#include "conv.h"
#include "cost.h"
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
  default: return "-";
  }
}

bool cost_is_comm(const IrStmt *st) {
  return st->prim >= 0 && st->prim < P_COUNT &&
         (vrule_communicates(prim_table[st->prim].vrule) || st->prim == P_PBROADCAST_SOURCE);
}

static double type_bytes(const Type *t) { return (double)type_size(t) * (double)dtype_sizes[t->dt]; }

static double type_elems(const Type *t) { return (double)type_size(t); }

/* ---- local equations --------------------------------------------------------------------- */

/* Integer operations of one Threefry 2x32 hash (20 rounds of add, rotate
   (two shifts and an or) and xor; 5 key injections of three adds) and of
   one Philox 4x32 block (10 rounds of two 32x32->64 multiplies, two xors
   each of three words and two key adds), for the random primitives. */
enum { THREEFRY_OPS = 20 * 5 + 5 * 3, PHILOX_OPS = 10 * (2 + 4 + 2) };

double cost_flops(const IrStmt *st) {
  int p = st->prim;
  if (p < 0 || !st->nout) return 0;
  const Type *out = &st->out[0]->t;
  switch (p) {
  case P_DOT_GENERAL: {
    double k = 1;
    const IntList *lc = &st->at->l[0];
    for (int i = 0; i < lc->n; i++) k *= (double)st->in[0].t.shape[lc->v[i]];
    return 2 * type_elems(out) * k;
  }
  /* a Fourier transform of N complex points: 5 N log2 N operations (the
     count FFT benchmarks use); a real one (RFFT, IRFFT) half of that */
  case P_FFT: {
    const IntList *len = &st->at->l[0];
    double n = 1;
    for (int i = 0; i < len->n; i++) n *= (double)len->v[i];
    const Type *big = type_size(&st->in[0].t) > type_size(out) ? &st->in[0].t : out;
    double transforms = type_elems(big) / n, real = st->at->i[0] >= 2 ? 0.5 : 1;
    return transforms * real * 5 * n * (n > 1 ? log2(n) : 1);
  }
  /* sorting: n log2 n comparisons per row of n, a comparison per key
     (two for a complex key); selection sorts its rows the same way */
  case P_SORT: case P_TOP_K: case P_APPROX_TOP_K: {
    const Type *x = &st->in[0].t;
    int d = (int)st->at->i[p == P_SORT ? 0 : 1], keys = p == P_SORT ? (int)st->at->i[1] : 1, c = 0;
    for (int k = 0; k < keys; k++) c += dtype_is_complex((DType)st->in[k].t.dt) ? 2 : 1;
    double n = (double)x->shape[d];
    return n > 1 ? type_elems(x) * log2(n) * c : 0;
  }
  /* logaddexp per element: max, sub, abs, neg, exp, log1p, add, select */
  case P_CUMLOGSUMEXP:
    return type_elems(out) * 8;
  /* a convolution: a multiply and an add per output element, kernel
     position and input feature of its group */
  case P_CONV_GENERAL_DILATED:
    return 2 * type_elems(out) * conv_macs_per_output(st->at, &st->in[1].t);
  /* windows: one operation per window position (a select_and_scatter_add
     compares over its source's windows, and adds once per one) */
  case P_REDUCE_WINDOW_SUM: case P_REDUCE_WINDOW_MAX: case P_REDUCE_WINDOW_MIN: case P_SELECT_AND_GATHER_ADD:
    return win_positions(st->at, out);
  case P_SELECT_AND_SCATTER_ADD:
    return win_positions(st->at, &st->in[0].t) + type_elems(&st->in[0].t);
  /* special functions, per result element: the operations of XLA's
     expansion of each (the Bessel functions' Chebyshev series, about 20
     terms of 3 operations; zeta's 10 powers and 11 Horner steps), and for
     the series and continued fractions of the incomplete gamma and beta
     functions about 20 operations a step over a nominal 20 steps (they
     stop when converged, after a data-dependent count) */
  case P_BESSEL_I0E: case P_BESSEL_I1E:
    return 60 * type_elems(out);
  case P_ZETA:
    return 110 * type_elems(out);
  case P_IGAMMA: case P_IGAMMAC: case P_IGAMMA_GRAD_A: case P_RANDOM_GAMMA_GRAD: case P_REGULARIZED_INCOMPLETE_BETA:
    return 400 * type_elems(out);
  /* moving data, not computing */
  case P_BROADCAST_IN_DIM: case P_RESHAPE: case P_TRANSPOSE: case P_SQUEEZE: case P_EXPAND_DIMS:
  case P_REV: case P_CONCATENATE: case P_PAD: case P_SLICE: case P_DYNAMIC_SLICE:
  case P_DYNAMIC_UPDATE_SLICE: case P_IOTA: case P_ARANGE: case P_FULL: case P_CONVERT_ELEMENT_TYPE:
  case P_COPY: case P_PBROADCAST: case P_PSCATTER: case P_AXIS_INDEX: case P_STOP_GRADIENT: case P_GATHER:
  case P_SCATTER: case P_ZEROS_LIKE: case P_SHARDING_CONSTRAINT: case P_MESH_CAST: case P_DEVICE_PUT:
  case P_LAYOUT_CONSTRAINT: case P_NAME: case P_TILE:
  case P_SPLIT:
  case P_PLATFORM_INDEX:
  case P_RESHARD: case P_VARY_UNREDUCED_CAST: case P_REDUCED_VARY_CAST: case P_PREDUCED:
    return 0;
  /* a combining scatter: one operation per update element */
  case P_SCATTER_ADD: case P_SCATTER_SUB: case P_SCATTER_MUL: case P_SCATTER_MIN: case P_SCATTER_MAX:
    return type_elems(&st->in[2].t);
  /* random numbers: a hash per key made or per element drawn (a 64-bit
     one takes two words of a hash in the old layout, counted as one) */
  case P_RANDOM_WRAP: case P_RANDOM_UNWRAP: case P_RANDOM_CLONE:
    return 0;
  case P_RANDOM_SEED:
    return 2 * type_elems(out);
  case P_RANDOM_SPLIT: case P_RANDOM_FOLD_IN: case P_RANDOM_BITS: case P_RANDOM_UNIFORM: case P_RANDOM_NORMAL:
  case P_THREEFRY2X32:
    return THREEFRY_OPS * type_elems(out) / (p == P_RANDOM_SPLIT && out->dt == DT_U32 ? 2 : 1);
  case P_RNG_BIT_GENERATOR:           /* a block gives 16 bytes */
    return PHILOX_OPS * ceil(type_bytes(&st->out[1]->t) / 16);
  /* reductions and scans: one operation per element read */
  case P_REDUCE_SUM: case P_REDUCE_PROD: case P_REDUCE_MAX: case P_REDUCE_MIN: case P_REDUCE_AND:
  case P_REDUCE_OR: case P_REDUCE_XOR: case P_ARGMAX: case P_ARGMIN: case P_CUMSUM: case P_CUMPROD:
  case P_CUMMAX: case P_CUMMIN: case P_ALLCLOSE:
    return type_elems(&st->in[0].t) * (p == P_ALLCLOSE ? 4 : 1);
  default:                       /* elementwise: one operation per result element */
    return type_elems(out);
  }
}

double cost_hbm_bytes(const IrStmt *st) {
  int p = st->prim;
  if (p < 0 || !st->nout) return 0;
  const Type *out = &st->out[0]->t;
  switch (p) {
  /* bitcasts, or nothing at all */
  case P_RESHAPE: case P_SQUEEZE: case P_EXPAND_DIMS: case P_PBROADCAST: case P_AXIS_INDEX:
  case P_RANDOM_WRAP: case P_RANDOM_UNWRAP: case P_RANDOM_CLONE:
  /* annotations of where a value lives: XLA moves nothing for them here */
  case P_SHARDING_CONSTRAINT: case P_MESH_CAST: case P_DEVICE_PUT: case P_LAYOUT_CONSTRAINT: case P_NAME:
  case P_RESHARD:
  case P_VARY_UNREDUCED_CAST: case P_REDUCED_VARY_CAST: case P_PREDUCED:
    return 0;
  /* writes its result, reads nothing */
  case P_ZEROS_LIKE:
    return type_bytes(out);
  /* in place: read the update, write it into the operand */
  case P_DYNAMIC_UPDATE_SLICE:
    return 2 * type_bytes(&st->in[1].t);
  /* read what the result holds, write it */
  case P_SLICE: case P_DYNAMIC_SLICE: case P_PSCATTER:
    return 2 * type_bytes(out);
  /* gather: the indices, the windows read, the result written */
  case P_GATHER:
    return type_bytes(&st->in[1].t) + 2 * type_bytes(out);
  /* in place, as XLA does: the indices and updates read, the windows
     written (and read first, to combine) */
  case P_SCATTER:
    return type_bytes(&st->in[1].t) + 2 * type_bytes(&st->in[2].t);
  case P_SCATTER_ADD: case P_SCATTER_SUB: case P_SCATTER_MUL: case P_SCATTER_MIN: case P_SCATTER_MAX:
    return type_bytes(&st->in[1].t) + 3 * type_bytes(&st->in[2].t);
  default: {
    double b = 0;
    for (int i = 0; i < st->nin; i++)
      if (st->in[i].var) b += type_bytes(&st->in[i].t);
    for (int j = 0; j < st->nout; j++) b += type_bytes(&st->out[j]->t);
    return b;
  }
  }
}

Cost cost_local(const Hw *hw, const IrStmt *st) {
  Cost c = {0, 0, 0, LIM_NONE, 0};
  c.flops = cost_flops(st);
  c.bytes = cost_hbm_bytes(st);
  bool mxu = st->prim == P_DOT_GENERAL || st->prim == P_CONV_GENERAL_DILATED;   /* matrix units */
  int dt = st->nin && mxu ? st->in[0].t.dt : st->nout ? st->out[0]->t.dt : DT_F32;
  double peak = mxu || !hw->vector_flops ? hw_peak(hw, dt, NULL) : hw->vector_flops;
  double tf = c.flops / peak, tm = c.bytes / hw->hbm_bw;
  c.time = tf > tm ? tf : tm;
  c.limit = c.time == 0 ? LIM_NONE : tf >= tm ? LIM_FLOPS : LIM_HBM;
  return c;
}

/* ---- collectives: the formulas ----------------------------------------------------------- */

/* The time of a bandwidth term and a latency term, and which one binds. */
static Cost bound(double bw_time, double lat_time, double hops, double bytes, bool additive) {
  Cost c = {0, 0, bytes, LIM_NONE, hops};
  c.time = additive ? bw_time + lat_time : (bw_time > lat_time ? bw_time : lat_time);
  c.limit = c.time == 0 ? LIM_NONE : bw_time >= lat_time ? LIM_LINK : LIM_LATENCY;
  return c;
}

static bool is_reduce(int prim) { return prim == P_PSUM || prim == P_PMAX || prim == P_PMIN || prim == P_PMEAN; }

Cost cost_torus_formula(const Hw *hw, int prim, int ndims, const int64_t *extent, const int64_t *stride,
                        const bool *ring, double n_in, double n_out) {
  double B = 0, hops = 0, n = 1;
  for (int k = 0; k < ndims; k++) {
    if (extent[k] <= 1) continue;
    n *= (double)extent[k];
    B += (ring[k] ? 2 : 1) * hw->link_bw / (double)stride[k];
    hops += (double)(ring[k] ? extent[k] / 2 : extent[k] - 1) * (double)stride[k];
  }
  double sent = coll_ring_bytes(prim, (int64_t)n, n_in, n_out), t = 0;
  if (n <= 1 || B == 0) return bound(0, 0, 0, 0, false);
  double f = (n - 1) / n;
  if (is_reduce(prim)) t = 2 * f * n_in / B;
  else if (prim == P_ALL_GATHER || prim == P_ALL_GATHER_INVARIANT) t = f * n_out / B;
  else if (prim == P_PSUM_SCATTER || prim == P_PBROADCAST_SOURCE) t = f * n_in / B;
  else if (prim == P_ALL_TO_ALL) t = n * n_in / (4 * B);
  if (is_reduce(prim)) hops *= 2;
  return bound(t, hops * hw->hop_latency, hops, sent, false);
}

Cost cost_switch_formula(const Hw *hw, int prim, int64_t n, int64_t nodes, double n_in, double n_out) {
  if (n <= 1) return bound(0, 0, 0, 0, true);
  double g = (double)n / (double)nodes, k = (double)nodes, N = (double)n;
  double nv = hw->links * hw->link_bw, net = hw->net_bw * g;
  double sent = coll_ring_bytes(prim, n, n_in, n_out);
  double V = prim == P_ALL_GATHER || prim == P_ALL_GATHER_INVARIANT ? n_out : n_in;
  double intra = g > 1 ? (g - 1) / g * V / nv : 0, inter = k > 1 ? (k - 1) / k * V / net : 0;
  double steps_in = N - k, steps_net = k - 1;   /* ring steps within nodes and across */
  double t = intra > inter ? intra : inter;
  if (is_reduce(prim)) {
    if (hw->switch_reduce && k == 1) {          /* NVLink SHARP: bytes / W */
      return bound(V / nv, 2 * hw->hop_latency, 2, sent, true);
    }
    t *= 2;
    steps_in *= 2;
    steps_net *= 2;
  } else if (prim == P_ALL_TO_ALL) {            /* direct sends: one step */
    double off = k > 1 ? V * (N - g) / N / hw->net_bw : 0;
    double on = (g - 1) / N * V / nv;
    t = on > off ? on : off;
    steps_in = k > 1 ? 0 : 1;
    steps_net = k > 1 ? 1 : 0;
  }
  return bound(t, steps_in * hw->hop_latency + steps_net * hw->net_latency, steps_in + steps_net, sent, true);
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

/* The link loads of a ppermute: every pair of every group routed along
   the dimensions in order, the short way round a ring. */
static Cost torus_ppermute(const Hw *hw, const Mesh *mesh, const HwPlace *pl, const IrStmt *st, double n_in) {
  int nd = hw->ndims;
  int64_t nodes = 1;
  for (int d = 0; d < nd; d++) nodes *= pl->slice[d];
  double *load = mem_calloc(sizeof(double) * (size_t)(nodes * nd * 2));
  const Attrs *at = st->at;
  const IntList *perm = &at->l[0];
  double maxhops = 0, maxload = 0;
  int64_t coords[SHM_MAXAXES];
  for (int64_t dev = 0; dev < mesh->ndev; dev++) {
    til_coords(mesh, dev, coords);
    int64_t member = 0;
    for (int k = 0; k < at->naxes; k++) member = member * mesh->size[at->axes[k]] + coords[at->axes[k]];
    for (int i = 0; i < perm->n / 2; i++) {
      if (perm->v[2 * i] != member) continue;
      /* the destination: this device with the member coordinates of the target */
      int64_t dst = perm->v[2 * i + 1];
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
  return bound(maxload / hw->link_bw, maxhops * hw->hop_latency, maxhops, n_in, false);
}

/* A ppermute over a switch: each pair over NVLink within a node, over the
   network across nodes; every chip sends and receives at most once. */
static Cost switch_ppermute(const Hw *hw, const Mesh *mesh, const IrStmt *st, double n_in) {
  const Attrs *at = st->at;
  const IntList *perm = &at->l[0];
  bool cross = false, any = false;
  int64_t coords[SHM_MAXAXES];
  for (int64_t dev = 0; dev < mesh->ndev && !cross; dev++) {
    til_coords(mesh, dev, coords);
    int64_t member = 0;
    for (int k = 0; k < at->naxes; k++) member = member * mesh->size[at->axes[k]] + coords[at->axes[k]];
    for (int i = 0; i < perm->n / 2; i++) {
      if (perm->v[2 * i] != member || perm->v[2 * i + 1] == member) continue;
      int64_t dst = perm->v[2 * i + 1];
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
  if (!any) return bound(0, 0, 0, n_in, true);
  double bw = cross ? hw->net_bw : hw->links * hw->link_bw;
  return bound(n_in / bw, cross ? hw->net_latency : hw->hop_latency, 1, n_in, true);
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
  const Attrs *at = st->at;
  int64_t p = 1;
  for (int k = 0; k < at->naxes; k++) p *= mesh->size[at->axes[k]];
  int prim = fab_base_prim(st->prim);    /* unreduced_psum costs a psum, and so on */
  if (prim == P_PPERMUTE)
    return hw->topo == HW_TORUS ? torus_ppermute(hw, mesh, pl, st, n_in) : switch_ppermute(hw, mesh, st, n_in);
  if (hw->topo == HW_SWITCH) return cost_switch_formula(hw, prim, p, switch_nodes(hw, mesh, at), n_in, n_out);
  int64_t extent[HW_MAXDIMS], stride[HW_MAXDIMS];
  bool ring[HW_MAXDIMS];
  int nd = torus_group(hw, mesh, pl, at, extent, stride, ring);
  return cost_torus_formula(hw, prim, nd, extent, stride, ring, n_in, n_out);
}
