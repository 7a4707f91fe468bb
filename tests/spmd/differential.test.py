#!/usr/bin/env python3
# timeout: 300
"""Randomized differential test of shard_map, the collectives and control flow.

Generates random shm programs -- a random mesh (1 to 3 axes of sizes 1 to 4),
random inputs split by random in_specs (None, an axis, a tuple of axes,
omitted trailing dimensions, quoted names, a single spec for one argument),
random out_specs that mention every axis a result varies along (and maybe
more: tiling) -- and compares what shmapi prints with a NumPy model of
shard_map's reference semantics: the inputs are split per in_specs into
per-device blocks, every collective acts on the blocks of each group of
devices, and the results are assembled per out_specs.  Two generators:

Gen (two thirds of the programs): a body that is a random chain of
collectives (psum, pmax, pmin, pmean, pbroadcast, all_gather tiled/untiled,
all_gather_invariant, psum_scatter, pscatter, ppermute, all_to_all,
axis_index, over one axis or a tuple of axes), elementwise operations,
closures over top-level values, and a few fixed shapes of cond and
fori_loop.

CtlGen (a third): bodies built around cond, while and fori_loop, nested
(a cond in a while body, loops in cond branches, loops in loops, up to three
deep), with
  - indices and predicates that are literals, invariant (psum of 1, invariant
    data, a fori_loop index), or vary by device through axis_index or
    through data; bool indices; indices out of range (clamped);
  - while loops counting k from k0 while k < B (lt, gt, not ge, and with a
    flag, or a bool carry), k0 and B of every kind above, so that each
    device may loop its own number of times; B closed over, a literal, a
    cond_nconsts operand, or a carry (JAX's fori_loop with value bounds);
  - carries and operands of i32, f32, bool, i64 and f64 that start as
    literals, invariant or varying values, are passed through unchanged, or
    updated by local equations, collectives, calls of defs and nested
    control flow; fori_loop over literal bounds or bounds that are values
    (invariant or varying, i32 or i64), forwards or reversed;
  - collectives (as above, arranged to give back the operand's shape) over
    the axes the enclosing predicates do not vary along, any collective
    under invariant predicates; branches returning literals or their
    operands; variance widened with pvary/pbroadcast or by adding a zero,
    or left to the checker (cond branches, loop bodies, carries seeded by
    their parameters' annotations); pvary, pscatter and axis_index under
    varying predicates;
  - functions in the readable form and in the jaxpr form, inline
    ({ lambda ; a:i32[] b:f32[3]. let ... in (x,) }) or by def, typed
    binders (b:f32[2]{i}, only where right, or JAX's narrower form that
    leaves out an enclosing predicate's axes), typed literals (1.0:f32[]).
Its model runs the body on each device on its own (a Python generator per
device: each evaluates its own predicates and loops its own number of
times); a collective waits until its whole group has reached it.  CtlGen
also infers the variance of every value as the checker must (a cond's
result varies along its index's axes, a while's carries along its
predicate's, a fixed point), so out_specs and annotations are exact.

Programs to reject: count/10 more CtlGen programs each get exactly one
collective over an axis along which an enclosing cond index, while
predicate or fori_loop bound varies (in a branch, a loop body, a while's
cond function, a called def, nested deeper); shmapi must exit 1 with the
diagnostic "FILE:LINE:COL: error: PRIM over {AXES} inside control flow
whose predicate varies over {AXES}" at that collective, one per program.

Many programs run in one shmapi invocation (one file of many shard_maps,
each result printed after a unique label), and again under --check, which
must report exactly the run's static errors; when a batch fails as a whole,
its programs are rerun one by one to find the culprits, and the first
wrong answers of CtlGen programs are reduced (--reduce) to a smaller
program that still disagrees.  FEATURES switches on JAX-compatibility
points shmapi is gaining, WORKAROUNDS steers around known open bugs (each
explained where it is listed); --features and --workarounds override both.

    SHMAPI=build/shmapi python3 tests/spmd/differential.test.py [--seed N]
        [--count N] [--rejects N] [--batch N] [--features all|none|a,b]
        [--workarounds none|a,b] [--show N] [--reduce N] [--keep DIR] [-v]

Exit 0 when every program agrees, 1 otherwise (the first mismatches are
printed with their program text), 77 (skip) without NumPy.
"""

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

AXIS_NAMES = ['i', 'j', 'k', 'x', 'y', 'data', 'model']

# JAX-compatibility points shmapi is gaining, one switch each.  A program
# that uses a point shmapi does not have yet fails, so a point is switched
# on here once main supports it (--features overrides this set).
KNOWN_FEATURES = {
    'fori_values': "while loops as JAX prints a fori_loop whose bounds are values: (i, upper, x...) "
                   "carries, upper passed through",
    'fori_value_bounds': 'fori_loop[lower=lo, upper=hi] with bounds that are values, invariant or varying',
    'pvary_in_varying': 'pbroadcast/pvary, pscatter and axis_index over the axes a cond index or loop '
                        'predicate varies along, inside that cond or loop',
    'cond_widen': 'cond branches whose results differ only in variance (the result takes the union)',
    'passthrough_carry': 'a carry the loop body passes through unchanged keeps its own variance',
    'loop_widen': "a loop body may return a carry less varying than the carry (the checker widens it), "
                  "and a carry's variance starts from its parameters' annotations",
    'jax_annotations': "annotations that leave out the axes of an enclosing predicate, as JAX's printer "
                       "does (accepted, the sound type kept)",
    'neg_axes': 'negative all_gather axis, all_to_all split_axis/concat_axis, psum_scatter '
                'scatter_dimension, reduction axes',
    'single_in_spec': 'one in_specs P(...) standing for every parameter of a body',
}
FEATURES = set(KNOWN_FEATURES)

# Known shmapi bugs the generator steers around until they are fixed, so
# that the test still finds new ones (drop a name when its fix lands).
WORKAROUNDS = set()      # known bugs to steer around (none open); --workarounds names them
CTL_FRACTION = 1 / 3   # share of the programs that use cond, while and fori_loop (CtlGen)
MAX_BLOCK = 96         # elements of one block the generator lets a value reach
MAX_GLOBAL = 600       # elements of an assembled result (NumPy summarises > 1000)


# ---- the mesh ------------------------------------------------------------------------

class Mesh:
    def __init__(self, name, axes, sizes):
        self.name = name
        self.axes = axes
        self.sizes = sizes
        self.ndev = int(np.prod(sizes)) if sizes else 1
        self.coords = [self._coords(d) for d in range(self.ndev)]

    def _coords(self, d):
        c = [0] * len(self.sizes)
        for k in range(len(self.sizes) - 1, -1, -1):
            c[k] = d % self.sizes[k]
            d //= self.sizes[k]
        return c

    def device(self, coords):
        d = 0
        for k, s in enumerate(self.sizes):
            d = d * s + coords[k]
        return d

    def group_size(self, axes):
        p = 1
        for a in axes:
            p *= self.sizes[a]
        return p

    def member_index(self, d, axes):
        """Index of device d in its group over `axes` (first listed major)."""
        g = 0
        for a in axes:
            g = g * self.sizes[a] + self.coords[d][a]
        return g

    def members(self, d, axes):
        """Devices of d's group over `axes`, in member order."""
        out = []
        p = self.group_size(axes)
        for g in range(p):
            c = list(self.coords[d])
            r = g
            for a in reversed(axes):
                c[a] = r % self.sizes[a]
                r //= self.sizes[a]
            out.append(self.device(c))
        return out

    def text(self):
        return '{' + ', '.join('%s: %d' % (n, s) for n, s in zip(self.axes, self.sizes)) + '}'


# ---- values of the model ---------------------------------------------------------------

class Val:
    """A value inside a body: one block per device, with its variance set."""

    def __init__(self, name, dtype, shape, vma, blocks):
        self.name = name
        self.dtype = dtype          # 'i32' or 'f32'
        self.shape = tuple(shape)   # block shape
        self.vma = frozenset(vma)   # axis indices
        self.blocks = blocks        # list per device of np arrays

    @property
    def size(self):
        return int(np.prod(self.shape)) if self.shape else 1


NP_DT = {'i32': np.int32, 'f32': np.float32}


def axes_text(mesh, axes, rng, quote_ok=True):
    """An axis-name parameter: one name or a tuple, sometimes quoted."""
    def nm(a):
        n = mesh.axes[a]
        if quote_ok and rng.random() < 0.2:
            return "'%s'" % n if rng.random() < 0.5 else '"%s"' % n
        return n
    if len(axes) == 1:
        form = rng.randrange(4)
        if form == 0:
            return nm(axes[0])
        if form == 1:
            return '(%s)' % nm(axes[0])
        if form == 2:
            return '(%s,)' % nm(axes[0])
        return "('%s',)" % mesh.axes[axes[0]]
    return '(' + ', '.join(nm(a) for a in axes) + ')'


def spec_text(mesh, dims, rng, omit_trailing=True):
    """dims: per dimension a list of axis indices (empty: None)."""
    dims = list(dims)
    if omit_trailing:
        while dims and not dims[-1] and rng.random() < 0.6:
            dims.pop()
    parts = []
    for d in dims:
        if not d:
            parts.append('None')
        elif len(d) == 1 and rng.random() < 0.8:
            n = mesh.axes[d[0]]
            parts.append("'%s'" % n if rng.random() < 0.3 else n)
        else:
            parts.append('(' + ', '.join("'%s'" % mesh.axes[a] if rng.random() < 0.3 else mesh.axes[a]
                                         for a in d) + (',' if len(d) == 1 else '') + ')')
    return 'P(' + ', '.join(parts) + ')'


def split_input(mesh, arr, dims):
    """Blocks of a global array per device, per the spec dims."""
    blocks = []
    for d in range(mesh.ndev):
        idx = []
        for k in range(arr.ndim):
            axes = dims[k] if k < len(dims) else []
            n = mesh.group_size(axes)
            b = arr.shape[k] // n
            g = mesh.member_index(d, axes)
            idx.append(slice(g * b, (g + 1) * b))
        blocks.append(arr[tuple(idx)])
    return blocks


def assemble(mesh, val, dims):
    """The global result per out_spec dims: concatenate along mapped axes,
    one copy along the others (the device with coordinate 0 there)."""
    rank = len(val.shape)
    gshape = list(val.shape)
    for k in range(rank):
        axes = dims[k] if k < len(dims) else []
        gshape[k] *= mesh.group_size(axes)
    out = np.zeros(gshape, dtype=NP_DT[val.dtype])
    mentioned = set(a for d in dims for a in d)
    for d in range(mesh.ndev):
        if any(mesh.coords[d][a] != 0 for a in range(len(mesh.sizes)) if a not in mentioned):
            continue
        idx = []
        for k in range(rank):
            axes = dims[k] if k < len(dims) else []
            g = mesh.member_index(d, axes)
            b = val.shape[k]
            idx.append(slice(g * b, (g + 1) * b))
        out[tuple(idx)] = val.blocks[d]
    return out


# ---- the program generator -------------------------------------------------------------

class Gen:
    def __init__(self, rng, uid):
        self.rng = rng
        self.uid = uid
        self.lines_top = []      # statements before the body
        self.body = []           # body lines
        self.nv = 0

    def fresh(self):
        self.nv += 1
        return 'v%d' % self.nv

    # -- pieces

    def make_mesh(self):
        rng = self.rng
        n = rng.choice([1, 1, 2, 2, 2, 3, 3])
        names = rng.sample(AXIS_NAMES, n)
        sizes = [rng.choice([1, 2, 2, 3, 4]) for _ in range(n)]
        return Mesh('M%d' % self.uid, names, sizes)

    def random_spec_dims(self, rank, avail):
        """Random spec dims for a rank: each axis at most once."""
        rng = self.rng
        pool = list(avail)
        rng.shuffle(pool)
        dims = [[] for _ in range(rank)]
        for a in pool:
            if rng.random() < 0.6 and rank:
                dims[rng.randrange(rank)].append(a)
        return dims

    def make_input(self, mesh, k, lead=None):
        """An input array; lead: the spec dims it must share with the other
        inputs (one in_specs for all), then its rank is at least as long."""
        rng = self.rng
        rank = rng.choice([0, 1, 1, 2, 2, 2, 3])
        dtype = rng.choice(['i32', 'i32', 'f32'])
        if lead is None:
            dims = self.random_spec_dims(rank, range(len(mesh.sizes)))
        else:
            rank = max(rank, len(lead))
            dims = [list(d) for d in lead] + [[] for _ in range(rank - len(lead))]
        bshape = []
        for d in range(rank):
            choices = [1, 2, 3, 4]
            # sometimes make a dimension match an axis size (untiled scatter, all_to_all)
            if rng.random() < 0.3 and mesh.sizes:
                choices = [rng.choice(mesh.sizes)]
            bshape.append(rng.choice(choices))
        gshape = [bshape[d] * mesh.group_size(dims[d]) for d in range(rank)]
        while int(np.prod(gshape)) > 400:
            # shrink: drop axes from the largest mapped dimension
            d = max(range(rank), key=lambda q: gshape[q] if lead is None else bshape[q])
            if dims[d] and lead is None:
                dims[d].pop()
            else:
                bshape[d] = 1
            gshape = [bshape[q] * mesh.group_size(dims[q]) for q in range(rank)]
        n = int(np.prod(gshape)) if gshape else 1
        mul, add, mod = rng.randint(1, 7), rng.randint(0, 10), rng.choice([7, 11, 13])
        data = ((np.arange(n, dtype=np.int64) * mul + add) % mod - mod // 2).astype(NP_DT[dtype]).reshape(gshape)
        X = 'X%d_%d' % (self.uid, k)
        top = ['%s_a = arange[stop=%d, dtype=i32]' % (X, n),
               '%s_b = mul %s_a %d' % (X, X, mul),
               '%s_c = add %s_b %d' % (X, X, add),
               '%s_d = rem %s_c %d' % (X, X, mod),
               '%s_e = sub %s_d %d' % (X, X, mod // 2)]
        last = X + '_e'
        if dtype == 'f32':
            top.append('%s_f = convert_element_type[new_dtype=f32] %s' % (X, last))
            last = X + '_f'
        top.append('%s = reshape[new_sizes=(%s)] %s' % (X, ''.join('%d, ' % s for s in gshape).rstrip(' ') if gshape else '', last))
        self.lines_top += top
        return X, data, dims, dtype

    # -- operations on the model; each returns (line, Val) or None

    def op_elementwise(self, mesh, pool, v):
        rng = self.rng
        name = self.fresh()
        same = [u for u in pool if u.shape == v.shape and u.dtype == v.dtype and u is not v]
        kind = rng.random()
        if kind < 0.45 and same:
            u = rng.choice(same)
            prim = rng.choice(['add', 'sub', 'mul', 'max', 'min'])
            f = {'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'max': np.maximum, 'min': np.minimum}[prim]
            blocks = [f(v.blocks[d], u.blocks[d]).astype(NP_DT[v.dtype]) for d in range(mesh.ndev)]
            return '%s = %s %s %s' % (name, prim, v.name, u.name), Val(name, v.dtype, v.shape, v.vma | u.vma, blocks)
        if kind < 0.7:
            c = rng.randint(-3, 3)
            lit = str(c) if v.dtype == 'i32' else '%d.0' % c
            prim = rng.choice(['add', 'sub', 'max'])
            f = {'add': np.add, 'sub': np.subtract, 'max': np.maximum}[prim]
            order = rng.random() < 0.5 and prim != 'sub'
            blocks = [f(v.blocks[d], NP_DT[v.dtype](c)).astype(NP_DT[v.dtype]) for d in range(mesh.ndev)]
            if order:
                return '%s = %s %s %s' % (name, prim, lit, v.name), Val(name, v.dtype, v.shape, v.vma, blocks)
            return '%s = %s %s %s' % (name, prim, v.name, lit), Val(name, v.dtype, v.shape, v.vma, blocks)
        if kind < 0.85:
            blocks = [(-v.blocks[d]).astype(NP_DT[v.dtype]) for d in range(mesh.ndev)]
            return '%s = neg %s' % (name, v.name), Val(name, v.dtype, v.shape, v.vma, blocks)
        # add an axis_index (a varying scalar) to the value
        if not mesh.sizes:
            return None
        axes = self.rand_axes(mesh, 1)
        iname = self.fresh()
        idx_blocks = [np.int32(mesh.member_index(d, axes)) for d in range(mesh.ndev)]
        line = '%s = axis_index[axis_name=%s]' % (iname, axes_text(mesh, axes, rng))
        src = iname
        if v.dtype == 'f32':
            cname = self.fresh()
            line += '\n  %s = convert_element_type[new_dtype=f32] %s' % (cname, iname)
            src = cname
        blocks = [(v.blocks[d] + NP_DT[v.dtype](idx_blocks[d])).astype(NP_DT[v.dtype]) for d in range(mesh.ndev)]
        line += '\n  %s = add %s %s' % (name, v.name, src)
        return line, Val(name, v.dtype, v.shape, v.vma | frozenset(axes), blocks)

    def rand_axes(self, mesh, min_n=1, among=None):
        rng = self.rng
        pool = list(range(len(mesh.sizes))) if among is None else list(among)
        if len(pool) < min_n:
            return None
        n = rng.randint(min_n, max(min_n, min(len(pool), rng.choice([1, 1, 2, 3]))))
        return rng.sample(pool, n)

    # JAX's async forms of the collectives: the start gives a future, its
    # done the value (the same numbers)
    ASYNC = {'psum': ('psum_invariant_start', 'psum_done'), 'all_gather': ('all_gather_start', 'all_gather_done'),
             'psum_scatter': ('reduce_scatter_start', 'reduce_scatter_done'),
             'ppermute': ('ppermute_start', 'ppermute_done'), 'all_to_all': ('all_to_all_start', 'all_to_all_done')}

    def op_collective(self, mesh, pool, v, among=None):
        res = self.op_collective_sync(mesh, pool, v, among)
        if res is None or among is not None or self.rng.random() >= 0.25:
            return res
        line, val = res
        m = re.match(r'(\w+) = (\w+)\[(.*)\] (\w+)$', line)
        if not m or m.group(2) not in self.ASYNC:
            return res
        start, done = self.ASYNC[m.group(2)]
        return ('%s_f = %s[%s] %s\n%s = %s %s_f' % (m.group(1), start, m.group(3), m.group(4), m.group(1), done,
                                                   m.group(1)), val)

    def op_collective_sync(self, mesh, pool, v, among=None):
        rng = self.rng
        kinds = ['psum', 'pmax', 'pmin', 'pmean', 'pbroadcast', 'all_gather', 'all_gather_invariant',
                 'psum_scatter', 'pscatter', 'ppermute', 'all_to_all'] + ['unreduced'] * 8 + ['pcast', 'pcast',
                 'pbroadcast_source']
        kind = rng.choice(kinds)
        if kind in ('unreduced', 'pcast') and among is not None:
            return None        # (several lines: not in a branch's one-line body)
        if kind in ('unreduced', 'pcast', 'pbroadcast_source'):
            return self.op_jax_states(mesh, pool, v, kind, among)
        name = self.fresh()
        nd = len(mesh.sizes)
        if nd == 0:
            return None
        r = len(v.shape)
        if kind in ('psum', 'pmax', 'pmin', 'pmean'):
            if kind == 'pmean' and v.dtype != 'f32':
                return None
            axes = self.rand_axes(mesh) if among is None else self.rand_axes(mesh, 1, among)
            p = mesh.group_size(axes)
            blocks = []
            for d in range(mesh.ndev):
                ms = [v.blocks[q] for q in mesh.members(d, axes)]
                if kind in ('psum', 'pmean'):
                    acc = ms[0].copy()
                    for x in ms[1:]:
                        acc = (acc + x).astype(NP_DT[v.dtype])
                    if kind == 'pmean':
                        acc = (acc / np.float32(p)).astype(np.float32)
                elif kind == 'pmax':
                    acc = np.max(np.stack(ms), axis=0)
                else:
                    acc = np.min(np.stack(ms), axis=0)
                blocks.append(np.asarray(acc, dtype=NP_DT[v.dtype]))
            key = rng.choice(['axes', 'axes', 'axis_name'])
            line = '%s = %s[%s=%s] %s' % (name, kind, key, axes_text(mesh, axes, rng), v.name)
            return line, Val(name, v.dtype, v.shape, v.vma - frozenset(axes), blocks)
        if kind == 'pbroadcast':
            inv = [a for a in range(nd) if a not in v.vma and (among is None or a in among)]
            axes = self.rand_axes(mesh, 1, inv)
            if not axes:
                return None
            prim = rng.choice(['pbroadcast', 'pvary'])
            line = '%s = %s[axes=%s] %s' % (name, prim, axes_text(mesh, axes, rng), v.name)
            return line, Val(name, v.dtype, v.shape, v.vma | frozenset(axes), list(v.blocks))
        if kind in ('all_gather', 'all_gather_invariant'):
            axes = self.rand_axes(mesh) if among is None else self.rand_axes(mesh, 1, among)
            p = mesh.group_size(axes)
            if v.size * p > MAX_BLOCK:
                return None
            tiled = r > 0 and rng.random() < 0.5
            axis = rng.randrange(r) if tiled else rng.randrange(r + 1)
            blocks = []
            for d in range(mesh.ndev):
                ms = [v.blocks[q] for q in mesh.members(d, axes)]
                blocks.append(np.concatenate(ms, axis=axis) if tiled else np.stack(ms, axis=axis))
            shape = blocks[0].shape
            params = ['axis_name=%s' % axes_text(mesh, axes, rng)]
            if 'neg_axes' in FEATURES and rng.random() < 0.3:
                # counted from the end of the result (untiled: one more dimension)
                params.append('axis=%d' % (axis - (r if tiled else r + 1)))
            elif axis != 0 or rng.random() < 0.5:
                params.append('%s=%d' % (rng.choice(['axis', 'axis', 'all_gather_dimension']), axis))
            if tiled or rng.random() < 0.5:
                params.append('tiled=%s' % tiled)
            rng.shuffle(params)
            line = '%s = %s[%s] %s' % (name, kind, ', '.join(params), v.name)
            vma = v.vma | frozenset(axes) if kind == 'all_gather' else v.vma - frozenset(axes)
            return line, Val(name, v.dtype, shape, vma, blocks)
        if kind in ('psum_scatter', 'pscatter'):
            if r == 0:
                return None
            if kind == 'pscatter':
                inv = [a for a in range(nd) if a not in v.vma and (among is None or a in among)]
                axes = self.rand_axes(mesh, 1, inv)
                if not axes:
                    return None
            else:
                axes = self.rand_axes(mesh) if among is None else self.rand_axes(mesh, 1, among)
            p = mesh.group_size(axes)
            dims_ok_t = [dd for dd in range(r) if v.shape[dd] % p == 0]
            dims_ok_u = [dd for dd in range(r) if v.shape[dd] == p]
            opts = [(True, dd) for dd in dims_ok_t] + [(False, dd) for dd in dims_ok_u] * 2
            if not opts:
                return None
            tiled, dim = rng.choice(opts)
            c = v.shape[dim] // p if tiled else 1
            blocks = []
            for d in range(mesh.ndev):
                me = mesh.member_index(d, axes)
                if kind == 'psum_scatter':
                    ms = [v.blocks[q] for q in mesh.members(d, axes)]
                    tot = ms[0].copy()
                    for x in ms[1:]:
                        tot = (tot + x).astype(NP_DT[v.dtype])
                else:
                    tot = v.blocks[d]
                ch = np.take(tot, range(me * c, (me + 1) * c), axis=dim)
                if not tiled:
                    ch = np.squeeze(ch, axis=dim)
                blocks.append(ch.astype(NP_DT[v.dtype]))
            shape = blocks[0].shape
            dkey = 'scatter_dimension' if kind == 'psum_scatter' else 'axis'
            prim = kind if kind == 'pscatter' or rng.random() < 0.8 else 'reduce_scatter'
            params = ['axis_name=%s' % axes_text(mesh, axes, rng)]
            if kind == 'psum_scatter' and 'neg_axes' in FEATURES and rng.random() < 0.3:
                params.append('%s=%d' % (dkey, dim - r))
            elif dim != 0 or rng.random() < 0.5:
                params.append('%s=%d' % (dkey, dim))
            if tiled or rng.random() < 0.5:
                params.append('tiled=%s' % tiled)
            rng.shuffle(params)
            line = '%s = %s[%s] %s' % (name, prim, ', '.join(params), v.name)
            return line, Val(name, v.dtype, shape, v.vma | frozenset(axes), blocks)
        if kind == 'ppermute':
            axes = self.rand_axes(mesh) if among is None else self.rand_axes(mesh, 1, among)
            p = mesh.group_size(axes)
            srcs = list(range(p))
            rng.shuffle(srcs)
            nsrc = rng.randint(0, p) if rng.random() < 0.4 else p
            srcs = srcs[:max(nsrc, 1)]
            dsts = rng.sample(range(p), len(srcs))
            perm = list(zip(srcs, dsts))
            blocks = []
            for d in range(mesh.ndev):
                me = mesh.member_index(d, axes)
                ms = mesh.members(d, axes)
                got = [s for s, t in perm if t == me]
                if got:
                    blocks.append(v.blocks[ms[got[0]]].copy())
                else:
                    blocks.append(np.zeros(v.shape, dtype=NP_DT[v.dtype]))
            ptxt = '(' + ', '.join('(%d, %d)' % pr for pr in perm) + (',' if len(perm) == 1 else '') + ')'
            line = '%s = ppermute[axis_name=%s, perm=%s] %s' % (name, axes_text(mesh, axes, rng), ptxt, v.name)
            return line, Val(name, v.dtype, v.shape, v.vma | frozenset(axes), blocks)
        if kind == 'all_to_all':
            if r == 0:
                return None
            axes = self.rand_axes(mesh) if among is None else self.rand_axes(mesh, 1, among)
            p = mesh.group_size(axes)
            opts = []
            for sa in range(r):
                for ca in range(r):
                    if v.shape[sa] % p == 0 and v.size * p // max(1, 1) <= MAX_BLOCK * 4:
                        opts.append((True, sa, ca))
                    if v.shape[sa] == p:
                        opts.append((False, sa, ca))
                        opts.append((False, sa, ca))
            if not opts:
                return None
            tiled, sa, ca = rng.choice(opts)
            blocks = []
            for d in range(mesh.ndev):
                me = mesh.member_index(d, axes)
                ms = [v.blocks[q] for q in mesh.members(d, axes)]
                if tiled:
                    c = v.shape[sa] // p
                    pieces = [np.take(x, range(me * c, (me + 1) * c), axis=sa) for x in ms]
                    blocks.append(np.concatenate(pieces, axis=ca))
                else:
                    pieces = [np.take(x, me, axis=sa) for x in ms]
                    blocks.append(np.stack(pieces, axis=ca))
            shape = blocks[0].shape
            if int(np.prod(shape)) > MAX_BLOCK:
                return None
            neg = 'neg_axes' in FEATURES and rng.random() < 0.3
            params = ['axis_name=%s' % axes_text(mesh, axes, rng), 'split_axis=%d' % (sa - r if neg else sa),
                      'concat_axis=%d' % (ca - r if neg else ca)]
            if tiled or rng.random() < 0.5:
                params.append('tiled=%s' % tiled)
            rng.shuffle(params)
            line = '%s = all_to_all[%s] %s' % (name, ', '.join(params), v.name)
            return line, Val(name, v.dtype, shape, v.vma | frozenset(axes), blocks)
        return None

    def type_text(self, mesh, v_shape, dtype, vma, unred=frozenset()):
        """A binder's type as JAX prints it today: f32[2,3]{V:(i,j), U:k}."""
        def grp(letter, axes):
            names = [mesh.axes[a] for a in sorted(axes)]
            return '%s:%s' % (letter, names[0] if len(names) == 1 else '(' + ','.join(names) + ')')
        parts = ([grp('V', vma - unred)] if vma - unred else []) + ([grp('U', unred)] if unred else [])
        return '%s[%s]%s' % (dtype, ','.join(str(n) for n in v_shape),
                             '{' + ', '.join(parts) + '}' if parts else '')

    def op_jax_states(self, mesh, pool, v, kind, among):
        """Today's JAX states: an unreduced value (a summand per device) made
        from a varying one by vary_unreduced_cast, carried through linear
        operations (add of two alike, mul by a literal or by a value the same
        along the unreduced axes, neg, sub, reshape), then completed later by
        psum, unreduced_psum, or a reduce-scatter; a pcast chain invariant ->
        reduced -> varying (preduced, reduced_vary_cast); JAX's collective
        broadcast (pbroadcast with source=)."""
        rng = self.rng
        nd = len(mesh.sizes)
        ok = [a for a in range(nd) if among is None or a in among]
        if kind == 'pbroadcast_source':
            axes = self.rand_axes(mesh, 1, ok)
            if not axes:
                return None
            p = mesh.group_size(axes)
            src = rng.randrange(p)
            name = self.fresh()
            blocks = [v.blocks[mesh.members(d, axes)[src]].copy() for d in range(mesh.ndev)]
            line = '%s = pbroadcast[axis_name=%s, source=%d] %s' % (name, axes_text(mesh, axes, rng), src, v.name)
            return line, Val(name, v.dtype, v.shape, v.vma, blocks)
        if kind == 'pcast':
            inv = [a for a in ok if a not in v.vma]
            axes = self.rand_axes(mesh, 1, inv)
            if not axes:
                return None
            r1, r2 = self.fresh(), self.fresh()
            ax = axes_text(mesh, axes, rng)
            lines = ['%s = preduced[axes=%s] %s' % (r1, ax, v.name),
                     '%s = %s[axes=%s] %s' % (r2, rng.choice(['reduced_vary_cast', 'reduced_vary_cast_p']), ax, r1)]
            if rng.random() < 0.5:    # a reduced value meets a varying one: the checker inserts the cast
                # (w varies over all the axes: along any other the sum would stay reduced)
                vv = [w for w in pool if w.shape == v.shape and w.dtype == v.dtype and w.vma >= frozenset(axes)]
                if vv:
                    w = rng.choice(vv)
                    r3 = self.fresh()
                    lines.append('%s = add %s %s' % (r3, r1, w.name))
                    blocks = [(v.blocks[d] + w.blocks[d]).astype(NP_DT[v.dtype]) for d in range(mesh.ndev)]
                    return '\n'.join(lines), Val(r3, v.dtype, v.shape, v.vma | w.vma, blocks)
            return '\n'.join(lines), Val(r2, v.dtype, v.shape, v.vma | frozenset(axes), list(v.blocks))
        # unreduced: over axes along which v varies
        if v.dtype != 'f32':
            return None
        var = [a for a in ok if a in v.vma]
        U = self.rand_axes(mesh, 1, var)
        if not U:
            return None
        U = tuple(sorted(U)) if rng.random() < 0.5 else U
        Us = frozenset(U)
        u = self.fresh()
        ann = ':' + self.type_text(mesh, v.shape, 'f32', v.vma, Us) if rng.random() < 0.5 else ''
        lines = ['%s%s = vary_unreduced_cast[axes=%s] %s' % (u, ann, axes_text(mesh, U, rng), v.name)]
        f = [b.astype(np.float32) for b in v.blocks]     # each device's summand
        shape = v.shape
        extra = frozenset()          # axes a scale (mulv) varies along: the product varies along them too
        for _ in range(rng.randint(0, 3)):
            op = rng.choice(['add', 'mul', 'neg', 'sub', 'mulv', 'reshape'])
            n2 = self.fresh()
            if op == 'add':
                lines.append('%s = add %s %s' % (n2, u, u))
                f = [(b + b).astype(np.float32) for b in f]
            elif op == 'mul':
                c = rng.choice([2.0, 0.5, -3.0])
                lines.append('%s = mul %s %s' % (n2, u, c) if rng.random() < 0.5 else '%s = mul %s %s' % (n2, c, u))
                f = [(b * np.float32(c)).astype(np.float32) for b in f]
            elif op == 'neg':
                lines.append('%s = neg %s' % (n2, u))
                f = [-b for b in f]
            elif op == 'sub':
                lines.append('%s = sub %s %s' % (n2, u, u))
                f = [(b - b).astype(np.float32) for b in f]
            elif op == 'mulv':    # a scale the same along the unreduced axes (lifted by the checker)
                ws = [w for w in pool if w.dtype == 'f32' and w.shape == shape and not (w.vma & Us)]
                if not ws:
                    continue
                w = rng.choice(ws)
                extra |= w.vma
                lines.append('%s = mul %s %s' % (n2, u, w.name))
                f = [(f[d] * w.blocks[d]).astype(np.float32) for d in range(mesh.ndev)]
            else:
                if len(shape) == 0:
                    continue
                ns = (int(np.prod(shape)),) if len(shape) > 1 else (shape[0], 1)
                lines.append('%s = reshape[new_sizes=(%s)] %s' % (n2, ', '.join(str(x) for x in ns) +
                                                                  (',' if len(ns) == 1 else ''), u))
                f = [b.reshape(ns) for b in f]
                shape = ns
            u = n2
        # complete the sum: psum (over the unreduced axes, maybe more), unreduced_psum, or a reduce-scatter
        done = self.fresh()
        how = rng.choice(['psum', 'psum', 'unreduced_psum', 'scatter'])
        more = [a for a in ok if a not in Us]
        axes = list(U)
        if how == 'psum' and more and rng.random() < 0.4:
            axes.append(rng.choice(more))
        p = mesh.group_size(axes)
        sums = []
        for d in range(mesh.ndev):
            acc = f[mesh.members(d, axes)[0]].copy()
            for q in mesh.members(d, axes)[1:]:
                acc = (acc + f[q]).astype(np.float32)
            sums.append(acc)
        vma = ((v.vma | extra) - Us) - frozenset(axes)
        if how == 'scatter':
            dims = [dd for dd in range(len(shape)) if shape[dd] % p == 0]
            if not dims:
                how = 'psum'
            else:
                dim = rng.choice(dims)
                c = shape[dim] // p
                blocks = [np.take(sums[d], range(mesh.member_index(d, axes) * c, (mesh.member_index(d, axes) + 1) * c),
                                  axis=dim).astype(np.float32) for d in range(mesh.ndev)]
                prim = rng.choice(['unreduced_reduce_scatter', 'psum_scatter'])
                lines.append('%s = %s[axis_name=%s, scatter_dimension=%d, tiled=True] %s' % (
                    done, prim, axes_text(mesh, axes, rng), dim, u))
                return '\n'.join(lines), Val(done, 'f32', blocks[0].shape, ((v.vma | extra) - Us) | Us, blocks)
        lines.append('%s = %s[axes=%s] %s' % (done, how, axes_text(mesh, axes, rng), u))
        return '\n'.join(lines), Val(done, 'f32', shape, vma, sums)

    def op_control(self, mesh, pool, v):
        """cond on a varying index (elementwise branches), cond on an
        invariant index (branches with a collective), or a fori_loop whose
        body ppermutes the carry."""
        rng = self.rng
        nd = len(mesh.sizes)
        if nd == 0:
            return None
        dt = NP_DT[v.dtype]
        one = '1' if v.dtype == 'i32' else '1.0'
        name = self.fresh()
        kind = rng.choice(['cond_vary', 'cond_vary2', 'cond_inv', 'fori'])
        if kind == 'cond_vary2' and nd < 2:
            kind = 'cond_vary'
        if kind == 'cond_vary':
            axes = self.rand_axes(mesh, 1)
            n = self.nv
            lines = ['def br%d_0(a) {' % n, '    r = neg a', '    return r', '  }',
                     'def br%d_1(a) {' % n, '    r = add a %s' % one, '    return r', '  }',
                     'idx%d = axis_index[axis_name=%s]' % (n, axes_text(mesh, axes, rng)),
                     'sel%d = rem idx%d 2' % (n, n),
                     '%s = cond[branches=(br%d_0, br%d_1)] sel%d %s' % (name, n, n, n, v.name)]
            blocks = []
            for d in range(mesh.ndev):
                k = mesh.member_index(d, axes) % 2
                blocks.append((-v.blocks[d] if k == 0 else v.blocks[d] + dt(1)).astype(dt))
            return '\n  '.join(lines), Val(name, v.dtype, v.shape, v.vma | frozenset(axes), blocks)
        if kind == 'cond_vary2':
            # the index varies along A; both branches apply the same
            # collective over axes in B, disjoint from A (every member of a
            # B-group takes the same branch), then differ elementwise
            pool_axes = list(range(nd))
            rng.shuffle(pool_axes)
            cut = rng.randint(1, nd - 1)
            A, B = pool_axes[:cut], pool_axes[cut:]
            res = None
            for _ in range(8):
                res = self.op_collective(mesh, pool, Val('a', v.dtype, v.shape, v.vma, v.blocks), among=B)
                if res is not None:
                    break
            if res is None:
                return None
            cline, cval = res
            rhs = cline.split(' = ', 1)[1]
            cdt = NP_DT[cval.dtype]
            c1 = '1' if cval.dtype == 'i32' else '1.0'
            n = self.nv
            lines = ['def br%d_0(a) {' % n, '    s = %s' % rhs, '    r = neg s', '    return r', '  }',
                     'def br%d_1(a) {' % n, '    s = %s' % rhs, '    r = add s %s' % c1, '    return r', '  }',
                     'idx%d = axis_index[axis_name=%s]' % (n, axes_text(mesh, A, rng)),
                     'sel%d = rem idx%d 2' % (n, n),
                     '%s = cond[branches=(br%d_0, br%d_1)] sel%d %s' % (name, n, n, n, v.name)]
            blocks = []
            for d in range(mesh.ndev):
                k = mesh.member_index(d, A) % 2
                acc = cval.blocks[d]
                blocks.append((-acc if k == 0 else acc + cdt(1)).astype(cdt))
            return '\n  '.join(lines), Val(name, cval.dtype, cval.shape, cval.vma | frozenset(A), blocks)
        if kind == 'cond_inv':
            axes = self.rand_axes(mesh, 1)
            p = mesh.group_size(axes)
            n = self.nv
            # the index: the group size (an invariant psum of 1) modulo 2
            lines = ['def br%d_0(a) {' % n, '    s = psum[axes=%s] a' % axes_text(mesh, axes, rng),
                     '    r = neg s', '    return r', '  }',
                     'def br%d_1(a) {' % n, '    s = psum[axes=%s] a' % axes_text(mesh, axes, rng),
                     '    r = add s %s' % one, '    return r', '  }',
                     'sz%d = psum[axes=%s] 1' % (n, axes_text(mesh, axes, rng)),
                     'sel%d = rem sz%d 2' % (n, n),
                     '%s = cond[branches=(br%d_0, br%d_1)] sel%d %s' % (name, n, n, n, v.name)]
            blocks = []
            for d in range(mesh.ndev):
                ms = [v.blocks[q] for q in mesh.members(d, axes)]
                acc = ms[0].copy()
                for x in ms[1:]:
                    acc = (acc + x).astype(dt)
                blocks.append((-acc if p % 2 == 0 else acc + dt(1)).astype(dt))
            return '\n  '.join(lines), Val(name, v.dtype, v.shape, v.vma - frozenset(axes), blocks)
        # fori_loop: carry = ppermute(carry) + carry, `iters` times
        if not v.vma:
            return None
        axes = self.rand_axes(mesh, 1, sorted(v.vma))
        p = mesh.group_size(axes)
        perm = [(s, (s + 1) % p) for s in range(p)]
        iters = rng.randint(0, 3)
        n = self.nv
        ptxt = '(' + ', '.join('(%d, %d)' % pr for pr in perm) + (',' if len(perm) == 1 else '') + ')'
        lines = ['def body%d(t, a) {' % n,
                 '    b = ppermute[axis_name=%s, perm=%s] a' % (axes_text(mesh, axes, rng), ptxt),
                 '    c = add a b', '    return c', '  }',
                 '%s = fori_loop[lower=0, upper=%d, body=body%d] %s' % (name, iters, n, v.name)]
        blocks = list(v.blocks)
        for _ in range(iters):
            nb = []
            for d in range(mesh.ndev):
                me = mesh.member_index(d, axes)
                ms = mesh.members(d, axes)
                src = ms[(me - 1) % p]
                nb.append((blocks[d] + blocks[src]).astype(dt))
            blocks = nb
        return '\n  '.join(lines), Val(name, v.dtype, v.shape, v.vma, blocks)

    # -- one program

    def make_body(self, mesh, pool):
        """The body's statements (into self.body) after its parameters and
        closed-over values `pool`; returns the candidate results, Vals with
        their blocks."""
        rng = self.rng
        nops = rng.randint(1, 8)
        made = 0
        tries = 0
        while made < nops and tries < 60:
            tries += 1
            v = rng.choice(pool[-3:]) if rng.random() < 0.7 else rng.choice(pool)
            r = rng.random()
            res = (self.op_collective(mesh, pool, v) if r < 0.6 else
                   self.op_control(mesh, pool, v) if r < 0.7 else self.op_elementwise(mesh, pool, v))
            if res is None:
                continue
            line, nv = res
            self.body.extend(line.split('\n'))
            pool.append(nv)
            made += 1
        # results: the last value and maybe another
        return [pool[-1]] + ([rng.choice(pool)] if rng.random() < 0.4 else [])

    def program(self):
        rng = self.rng
        mesh = self.make_mesh()
        self.lines_top.append('mesh %s = %s' % (mesh.name, mesh.text()))
        nin = rng.choice([0, 1, 1, 1, 2, 2, 3])
        shared = None
        if 'single_in_spec' in FEATURES and nin >= 2 and rng.random() < 0.3:
            shared = self.random_spec_dims(rng.choice([0, 1, 2]), range(len(mesh.sizes)))
        inputs = [self.make_input(mesh, k, shared) for k in range(nin)]
        params, pool = [], []
        for k, (X, data, dims, dtype) in enumerate(inputs):
            pname = 'p%d' % k
            params.append(pname)
            blocks = split_input(mesh, data, dims)
            vma = frozenset(a for d in dims for a in d)
            pool.append(Val(pname, dtype, blocks[0].shape, vma, blocks))
        # a closed-over top-level value
        if rng.random() < 0.3 or not pool:
            C = 'C%d' % self.uid
            shape = pool[0].shape if pool and rng.random() < 0.7 else tuple(rng.choice([1, 2, 3]) for _ in range(rng.randint(0, 2)))
            dtype = pool[0].dtype if pool and shape == pool[0].shape else rng.choice(['i32', 'f32'])
            n = int(np.prod(shape)) if shape else 1
            data = (np.arange(n) % 5 - 1).astype(NP_DT[dtype]).reshape(shape)
            self.lines_top.append('%s_a = arange[stop=%d, dtype=%s]' % (C, n, dtype))
            self.lines_top.append('%s_b = sub %s_a 1' % (C, C))
            if n % 5 == 0 or n > 5:
                self.lines_top.append('%s_c = rem %s_a 5' % (C, C))
                self.lines_top.append('%s_b2 = sub %s_c 1' % (C, C))
                src = C + '_b2'
            else:
                src = C + '_b'
            self.lines_top.append('%s = reshape[new_sizes=(%s)] %s' % (C, ''.join('%d, ' % s for s in shape).rstrip(' '), src))
            cname = self.fresh()
            self.body.append('%s = copy %s' % (cname, C))
            pool.append(Val(cname, dtype, shape, frozenset(), [data] * mesh.ndev))
        cands = self.make_body(mesh, pool)
        if not cands:
            return None
        outs = []
        for v in cands:
            r = len(v.shape)
            if r == 0 and v.vma:
                continue
            dims = [[] for _ in range(r)]
            need = sorted(v.vma)
            rng.shuffle(need)
            extra = [a for a in range(len(mesh.sizes)) if a not in v.vma and rng.random() < 0.3] if r else []
            for a in need + extra:
                dims[rng.randrange(r)].append(a)
            for dd in dims:
                rng.shuffle(dd)
            g = assemble(mesh, v, dims)
            if g.size > MAX_GLOBAL:
                # drop the extra axes (tiling) and try again
                dims = [[a for a in dd if a in v.vma] for dd in dims]
                g = assemble(mesh, v, dims)
                if g.size > MAX_GLOBAL:
                    continue
            outs.append((v, dims, g))
        if not outs:
            return None
        # text
        if shared is not None:    # one spec for every parameter
            in_specs = [spec_text(mesh, shared, rng)]
        else:
            in_specs = [spec_text(mesh, dims, rng) for (_, _, dims, _) in inputs]
        self.form = {
            'mesh': mesh.name, 'params': params, 'args': ' '.join(X for (X, _, _, _) in inputs),
            'in_specs': in_specs, 'in_bare': len(in_specs) == 1 and (shared is not None or rng.random() < 0.5),
            # (a zero-parameter def is checked where it is defined, outside any
            # mesh, so a zero-argument body with collectives uses the decorator)
            'decorator': rng.random() < 0.7 or not inputs,
            'out_bare': rng.random() < 0.5,
        }
        self.outs = [(v, spec_text(mesh, dims, rng), g) for v, dims, g in outs]
        self.out_dims = [dims for _, dims, _ in outs]
        return self.text(self.body, self.outs)

    def text(self, body_lines, outs):
        """The program's text for these body lines and results (Val, out
        spec, expected global array), and the expected printed results."""
        f = self.form
        ins, out_specs = f['in_specs'], [o for _, o, _ in outs]
        if len(ins) == 1 and f['in_bare']:
            ins = ins[0]
        else:
            ins = '(' + ', '.join(ins) + (',' if len(ins) == 1 else '') + ')'
        if len(out_specs) == 1 and f['out_bare']:
            os_ = out_specs[0]
        else:
            os_ = '(' + ', '.join(out_specs) + (',' if len(out_specs) == 1 else '') + ')'
        body = ['  ' + l for l in body_lines] + ['  return ' + ', '.join(v.name for v, _, _ in outs)]
        S = 'S%d' % self.uid
        R = ['R%d_%d' % (self.uid, k) for k in range(len(outs))]
        args = f['args']
        text = list(self.lines_top)
        if f['decorator']:
            text.append('@shard_map[mesh=%s, in_specs=%s, out_specs=%s]' % (f['mesh'], ins, os_))
            text.append('def %s(%s) {' % (S, ', '.join(f['params'])))
            text += body
            text.append('}')
            text.append('%s = %s%s' % (', '.join(R), S, (' ' + args) if args else ''))
        else:
            text.append('def %s(%s) {' % (S, ', '.join(f['params'])))
            text += body
            text.append('}')
            text.append('%s = shard_map[f=%s, mesh=%s, in_specs=%s, out_specs=%s]%s' % (
                ', '.join(R), S, f['mesh'], ins, os_, (' ' + args) if args else ''))
        expected = []
        for k, (v, _, g) in enumerate(outs):
            label = '@@%d_%d' % (self.uid, k)
            text.append('print "%s", %s' % (label, R[k]))
            expected.append((label, g))
        return '\n'.join(text) + '\n', expected


# ---- control flow inside bodies ----------------------------------------------------------
#
# The programs of CtlGen are built as a small IR first (values, equations,
# cond / while / fori_loop statements and the functions they call), which is
# then both printed as shm text and run by a NumPy model.  The model runs the
# body once per device, each device on its own (a Python generator per
# device): every device evaluates its own predicates and indices and loops
# its own number of times, as hardware does.  A collective suspends the
# device until every member of its group has reached the same statement the
# same number of times; then each member gets its result.  A group that can
# never meet is a bug of the generator (it generated an illegal program),
# raised as GenError.
#
# The generator also infers every value's variance set the way the checker
# does (the result of a cond varies along its index's axes; a loop's carries
# along its predicate's or bounds' axes, except carries passed through
# unchanged, found as a fixed point that starts from the operands and the
# parameters' annotations), so that out_specs are exact and annotations may
# state variance sets.

NP_DT.update({'bool': np.bool_, 'i64': np.int64, 'f64': np.float64})
FLOATS = ('f32', 'f64')


class Var:
    """A named value of the IR: dtype, block shape, variance set (axis
    indices), whether its value is exact (the same bits in shmapi and in
    NumPy: integers, and floats that are sums of small halves), and how its
    binder is annotated when printed (None, 'shape' or 'full': with the
    variance set, vma or, JAX-style, ann_vma: vma without some axes of an
    enclosing predicate)."""
    is_lit = False

    def __init__(self, name, dtype, shape, vma, exact=True, ann=None):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(shape)
        self.vma = frozenset(vma)
        self.exact = exact
        self.ann = ann
        self.ann_vma = None       # a 'full' annotation's set when it is not vma (JAX's narrower one)

    @property
    def size(self):
        return int(np.prod(self.shape)) if self.shape else 1

    def sig(self):
        return (self.dtype, self.shape)


class Lit:
    """A scalar literal operand, maybe typed as JAX prints it (1.0:f32[])."""
    is_lit = True
    exact = True
    shape = ()
    vma = frozenset()
    size = 1

    def __init__(self, value, dtype, typed=False):
        self.value = value
        self.dtype = dtype
        self.typed = typed

    def sig(self):
        return (self.dtype, ())

    def text(self):
        if self.dtype == 'bool':
            s = 'True' if self.value else 'False'
        elif self.dtype in FLOATS:
            s = repr(float(self.value))
        else:
            s = str(int(self.value))
        return s + (':%s[]' % self.dtype if self.typed else '')

    def model(self):
        return np.array(self.value, dtype=NP_DT[self.dtype])


class Eqn:
    """outs = prim[params] args.  A local equation has fn(device, *operands)
    -> results; a collective has coll_axes (the group, first listed major)
    and coll(operands of the group's members, in member order) -> results
    per member."""
    kind = 'eqn'

    def __init__(self, outs, prim, params, args, fn=None, coll=None, coll_axes=None):
        self.outs = outs
        self.prim = prim
        self.params = params
        self.args = args
        self.fn = fn
        self.coll = coll
        self.coll_axes = coll_axes


class CallStmt:
    """outs = f args, a def called like a primitive."""
    kind = 'call'

    def __init__(self, outs, fn, args):
        self.outs, self.fn, self.args = outs, fn, args


class CondStmt:
    kind = 'cond'

    def __init__(self, outs, index, fns, args):
        self.outs, self.index, self.fns, self.args = outs, index, fns, args


class WhileStmt:
    kind = 'while'

    def __init__(self, outs, cfn, bfn, cconsts, bconsts, carries, show_nconsts):
        self.outs, self.cfn, self.bfn = outs, cfn, bfn
        self.cconsts, self.bconsts, self.carries = cconsts, bconsts, carries
        self.show_nconsts = show_nconsts


class ForiStmt:
    kind = 'fori'

    def __init__(self, outs, lo, hi, reverse, fn, carries):
        self.outs, self.lo, self.hi, self.reverse, self.fn, self.carries = outs, lo, hi, reverse, fn, carries


class DefStmt:
    """def f(...) { ... } or def f = { lambda ... } at this point of a scope."""
    kind = 'def'

    def __init__(self, fn):
        self.fn = fn


class Fn:
    """A function of the IR.  form 'def' is the readable form (may hold
    nested defs), 'jaxpr' the { lambda ; ... . let ... in (...) } form.
    A function with a DefStmt is referred to by name, any other is printed
    inline where it is used."""

    def __init__(self, name, params, form, scope):
        self.name = name
        self.params = params
        self.form = form
        self.scope = scope
        self.results = []
        self.named = False

    @property
    def stmts(self):
        return self.scope.stmts


class Scope:
    """The statements of a body or function, and what may happen in it: ctrl
    is the set of axes along which enclosing predicates and indices vary (a
    collective over any of them is illegal here), form the function form."""

    def __init__(self, parent, ctrl, form):
        self.parent = parent
        self.ctrl = frozenset(ctrl)
        self.form = form
        self.stmts = []
        self.vars = []

    def visible(self):
        out = []
        s = self
        while s is not None:
            out = s.vars + out
            s = s.parent
        return out


class GenError(Exception):
    """The generator produced something its own model cannot run: a bug of
    the test, not of shmapi."""


# -- the model ------------------------------------------------------------------------------

def val_of(env, a):
    return a.model() if a.is_lit else env[a.name]


class Model:
    """Runs a body on every device of `mesh`, each on its own (see above)."""

    MAX_ITERS = 200        # no generated loop comes near; more is a generator bug

    def __init__(self, mesh):
        self.mesh = mesh
        self.reached = [{} for _ in range(mesh.ndev)]   # per device: times each collective was reached

    def run(self, stmts, envs, results):
        mesh = self.mesh
        gens, waiting, done = {}, {}, {}

        def advance(d, x):
            try:
                waiting[d] = gens[d].send(x)
            except StopIteration as e:
                done[d] = e.value

        def device(d):
            env = dict(envs[d])
            yield from self.stmts(d, stmts, env)
            return [val_of(env, r) for r in results]

        for d in range(mesh.ndev):
            gens[d] = device(d)
            advance(d, None)
        while waiting:
            moved = False
            for d in sorted(waiting):
                if d not in waiting:
                    continue
                st, _, n = waiting[d]
                ms = mesh.members(d, st.coll_axes)
                if all(m in waiting and waiting[m][0] is st and waiting[m][2] == n for m in ms):
                    outs = st.coll([waiting[m][1] for m in ms])
                    for m in ms:
                        del waiting[m]
                    for m, o in zip(ms, outs):
                        advance(m, o)
                    moved = True
            if not moved:
                raise GenError('the model deadlocks: devices %s wait at collectives their groups never reach'
                               % sorted(waiting))
        return [done[d] for d in range(mesh.ndev)]

    def stmts(self, d, stmts, env):
        for st in stmts:
            k = st.kind
            if k == 'eqn':
                if st.coll is None:
                    res = st.fn(d, *[val_of(env, a) for a in st.args])
                else:
                    n = self.reached[d][st] = self.reached[d].get(st, 0) + 1
                    res = yield (st, val_of(env, st.args[0]), n)
                for v, x in zip(st.outs, res):
                    env[v.name] = x
                continue
            if k == 'def':
                continue
            if k == 'call':
                res = yield from self.call(d, st.fn, [val_of(env, a) for a in st.args], env)
            elif k == 'cond':
                i = int(val_of(env, st.index))          # bool: 0 or 1
                i = min(max(i, 0), len(st.fns) - 1)     # the index is clamped into range
                res = yield from self.call(d, st.fns[i], [val_of(env, a) for a in st.args], env)
            elif k == 'while':
                cc = [val_of(env, a) for a in st.cconsts]
                bc = [val_of(env, a) for a in st.bconsts]
                res = [val_of(env, a) for a in st.carries]
                for it in range(self.MAX_ITERS + 1):
                    if it == self.MAX_ITERS:
                        raise GenError('a generated while loop runs more than %d times' % self.MAX_ITERS)
                    p, = yield from self.call(d, st.cfn, cc + res, env)
                    if not bool(p):
                        break
                    res = yield from self.call(d, st.bfn, bc + res, env)
            elif k == 'fori':
                res = [val_of(env, a) for a in st.carries]
                its = range(int(val_of(env, st.lo)), int(val_of(env, st.hi)))
                for i in (reversed(its) if st.reverse else its):
                    res = yield from self.call(d, st.fn, [np.array(i, dtype=NP_DT[st.fn.params[0].dtype])] + res,
                                               env)
            else:
                raise GenError('unknown statement %r' % k)
            for v, x in zip(st.outs, res):
                env[v.name] = x

    def call(self, d, fn, vals, env):
        # every name of a program is unique, so the caller's names stand for
        # the names the function closed over where it was defined
        e = dict(env)
        for p, x in zip(fn.params, vals):
            e[p.name] = x
        yield from self.stmts(d, fn.stmts, e)
        return [val_of(e, r) for r in fn.results]


# -- collectives of the model: operands of the group's members -> results per member

def c_reduce(kind, dt, p):
    def f(vals):
        if kind in ('psum', 'pmean'):
            acc = vals[0]
            for x in vals[1:]:
                acc = (acc + x).astype(NP_DT[dt])
            if kind == 'pmean':
                acc = (acc / np.float32(p)).astype(np.float32)
        elif kind == 'pmax':
            acc = np.max(np.stack(vals), axis=0)
        else:
            acc = np.min(np.stack(vals), axis=0)
        acc = np.asarray(acc, dtype=NP_DT[dt])
        return [(acc,)] * len(vals)
    return f


def c_gather(axis, tiled):
    def f(vals):
        g = np.concatenate(vals, axis=axis) if tiled else np.stack(vals, axis=axis)
        return [(g,)] * len(vals)
    return f


def c_scatter(dt, dim, tiled):
    def f(vals):
        tot = vals[0]
        for x in vals[1:]:
            tot = (tot + x).astype(NP_DT[dt])
        p = len(vals)
        c = tot.shape[dim] // p if tiled else 1
        out = []
        for k in range(p):
            ch = np.take(tot, range(k * c, (k + 1) * c), axis=dim)
            out.append((ch if tiled else np.squeeze(ch, axis=dim),))
        return out
    return f


def c_ppermute(perm):
    def f(vals):
        out = []
        for t in range(len(vals)):
            src = [s for s, t2 in perm if t2 == t]
            out.append((vals[src[0]].copy() if src else np.zeros_like(vals[0]),))
        return out
    return f


def c_all_to_all(sa, ca, tiled):
    def f(vals):
        p = len(vals)
        out = []
        for k in range(p):
            if tiled:
                c = vals[0].shape[sa] // p
                out.append((np.concatenate([np.take(x, range(k * c, (k + 1) * c), axis=sa) for x in vals], axis=ca),))
            else:
                out.append((np.stack([np.take(x, k, axis=sa) for x in vals], axis=ca),))
        return out
    return f


def pscatter_fn(mesh, axes, ax, c, tiled):
    """pscatter of the model: a local slice, this device's chunk (c wide)
    along dimension ax (untiled: c is 1 and the dimension goes)."""
    axes = tuple(axes)

    def f(d, x):
        me = mesh.member_index(d, axes)
        ch = np.take(x, range(me * c, (me + 1) * c), axis=ax)
        return (ch if tiled else np.squeeze(ch, axis=ax),)
    return f


def local(f, dt):
    """A local one-result equation of the model from a NumPy function."""
    npdt = NP_DT[dt]
    return lambda d, *xs: (np.asarray(f(*xs)).astype(npdt),)


# -- the generator ----------------------------------------------------------------------------

def sub_axes(rng, pool, p=0.5):
    """A random subset of the axes in pool (maybe empty)."""
    return frozenset(a for a in pool if rng.random() < p)


class Carry:
    """A loop carry while it is generated: its role ('k' the counter, 'hi'
    the upper bound carried as JAX carries fori_loop's, 'go' a predicate
    carried, 'x' anything else), its operand, whether the body passes it
    through unchanged, and the variance its parameters' annotations give it."""

    def __init__(self, role, op, pt):
        self.role, self.op, self.pt = role, op, pt
        self.seed = frozenset()


class CtlGen(Gen):
    """A program whose body runs cond, while and fori_loop (see the section
    comment above).  With plant=True the body gets exactly one collective
    over an axis along which an enclosing predicate or index varies, and
    the program must be rejected; self.bad then describes it."""

    def __init__(self, rng, uid, plant=False):
        super().__init__(rng, uid)
        self.plant = plant
        self.bad = None       # (binder, primitive, axes, ctrl axes) of the planted collective

    def fresh(self, prefix='v'):
        self.nv += 1
        return '%s%d' % (prefix, self.nv)

    # -- printing

    def type_text(self, x, full):
        t = '%s[%s]' % (x.dtype, ','.join(str(s) for s in x.shape))
        if full:
            vma = x.vma if x.is_lit or x.ann_vma is None else x.ann_vma
            t += '{%s}' % ','.join(self.mesh.axes[a] for a in sorted(vma))
        return t

    def binder(self, v):
        return v.name if v.ann is None else '%s:%s' % (v.name, self.type_text(v, v.ann == 'full'))

    @staticmethod
    def atom(a):
        return a.text() if a.is_lit else a.name

    def fn_ref(self, fn, ind):
        return fn.name if fn.named else self.lambda_text(fn, ind)

    def lambda_text(self, fn, ind):
        """{ lambda ; a:i32[] b:f32[3]. let ... in (x,) }, its first line not indented."""
        lines = ['{ lambda ; %s. let' % ' '.join(self.binder(p) for p in fn.params)]
        for st in fn.stmts:
            lines.append(' ' * (ind + 4) + self.stmt_text(st, ind + 4))
        res = ', '.join(self.atom(r) for r in fn.results) + (',' if len(fn.results) == 1 else '')
        lines.append(' ' * (ind + 2) + 'in (%s) }' % res)
        return '\n'.join(lines)

    def def_text(self, fn, ind):
        if fn.form == 'jaxpr':
            return 'def %s = %s' % (fn.name, self.lambda_text(fn, ind))
        lines = ['def %s(%s) {' % (fn.name, ', '.join(self.binder(p) for p in fn.params))]
        for st in fn.stmts:
            lines.append(' ' * (ind + 2) + self.stmt_text(st, ind + 2))
        lines.append(' ' * (ind + 2) + 'return ' + ', '.join(self.atom(r) for r in fn.results))
        lines.append(' ' * ind + '}')
        return '\n'.join(lines)

    def stmt_text(self, st, ind):
        """One statement, maybe over several lines (the first not indented)."""
        if st.kind == 'def':
            return self.def_text(st.fn, ind)
        sep = ' ' if st.jaxpr_style else ', '
        outs = sep.join(self.binder(v) for v in st.outs)
        if st.kind == 'eqn':
            head = st.prim + ('[%s]' % st.params if st.params else '')
            args = st.args
        elif st.kind == 'call':
            head, args = st.fn.name, st.args
        elif st.kind == 'cond':
            fs = [self.fn_ref(f, ind + 2) for f in st.fns]
            if st.jaxpr_style:
                br = '(\n' + ''.join(' ' * (ind + 2) + f + '\n' for f in fs) + ' ' * ind + ')'
            else:
                br = '(' + ', '.join(fs) + (',' if len(fs) == 1 else '') + ')'
            head, args = 'cond[branches=%s]' % br, [st.index] + st.args
        elif st.kind == 'while':
            ps = ['cond_jaxpr=' + self.fn_ref(st.cfn, ind + 2), 'body_jaxpr=' + self.fn_ref(st.bfn, ind + 2)]
            if st.cconsts or st.show_nconsts:
                ps.append('cond_nconsts=%d' % len(st.cconsts))
            if st.bconsts or st.show_nconsts:
                ps.append('body_nconsts=%d' % len(st.bconsts))
            if st.jaxpr_style:
                ps.sort()
            head, args = 'while[%s]' % sep.join(ps), st.cconsts + st.bconsts + st.carries
        else:
            bound = lambda b: str(b.value) if b.is_lit else b.name  # noqa: E731
            ps = ['lower=' + bound(st.lo), 'upper=' + bound(st.hi), 'body=' + self.fn_ref(st.fn, ind + 2)]
            if st.reverse:
                ps.append('reverse=True')
            head, args = 'fori_loop[%s]' % sep.join(ps), st.carries
        return '%s = %s%s' % (outs, head, ''.join(' ' + self.atom(a) for a in args))

    def body_lines(self, stmts):
        out = []
        for st in stmts:
            out += self.stmt_text(st, 0).split('\n')
        return out

    # -- making values

    def annotate(self, v, form, slack, param=False):
        """Choose how v's binder is annotated (more often in the jaxpr
        form); a variance set may leave out axes of slack, the axes
        enclosing predicates vary along, as JAX's printer does."""
        rng = self.rng
        r = rng.random()
        if form == 'jaxpr':
            v.ann = 'full' if r < 0.45 else 'shape' if r < 0.9 - 0.1 * (not param) else None
        else:
            v.ann = 'full' if r < 0.08 + 0.07 * param else 'shape' if r < 0.15 + 0.15 * param else None
        v.ann_vma = None
        drop = v.vma & slack
        if v.ann == 'full' and drop and 'jax_annotations' in FEATURES and rng.random() < 0.4:
            v.ann_vma = v.vma - (sub_axes(rng, drop) or frozenset([rng.choice(sorted(drop))]))
        return v

    def add_stmt(self, sc, st):
        st.jaxpr_style = sc.form == 'jaxpr' or self.rng.random() < 0.2
        sc.stmts.append(st)

    def emit(self, sc, prim, params, args, dtype, shape, vma, fn=None, exact=None,
             coll=None, coll_axes=None, prefix='v'):
        if exact is None:
            exact = all(a.exact for a in args)
        v = self.annotate(Var(self.fresh(prefix), dtype, shape, vma, exact), sc.form, sc.ctrl)
        self.add_stmt(sc, Eqn([v], prim, params, args, fn=fn, coll=coll, coll_axes=coll_axes))
        sc.vars.append(v)
        return v

    def lit(self, dtype, lo=-2, hi=3):
        """A literal of dtype; an i64 or f64 one is typed (untyped, it
        would be i32 or f32 where nothing else gives it a dtype)."""
        rng = self.rng
        typed = rng.random() < 0.3 or dtype in ('i64', 'f64')
        if dtype == 'bool':
            return Lit(rng.random() < 0.5, 'bool', typed)
        c = rng.randint(lo, hi)
        if dtype in FLOATS and rng.random() < 0.3:
            c += 0.5
        return Lit(c, dtype, typed)

    def rand_dtype(self):
        return self.rng.choice(['i32', 'i32', 'f32', 'f32', 'bool', 'i64', 'f64'])

    def pick(self, sc, ok, recent=0.6):
        c = [v for v in sc.visible() if ok(v)]
        if not c:
            return None
        return self.rng.choice(c[-4:] if self.rng.random() < recent else c)

    def axes_param(self, axes, key='axes'):
        return '%s=%s' % (key, axes_text(self.mesh, list(axes), self.rng))

    def axis_value(self, axes):
        """axis_index over `axes` (a tuple, first listed major), computed
        once at the top of the body, where it is always legal."""
        key = ('me', tuple(axes))
        if key not in self.helpers:
            mesh = self.mesh
            v = Var(self.fresh('me'), 'i32', (), axes, True, None)
            ax = tuple(axes)
            self.prologue.append(Eqn([v], 'axis_index', self.axes_param(ax, 'axis_name'), [],
                                     fn=lambda d: (np.array(mesh.member_index(d, ax), dtype=np.int32),)))
            self.prologue[-1].jaxpr_style = False
            self.top.vars.append(v)
            self.helpers[key] = v
        return self.helpers[key]

    def zero(self, dtype, axes):
        """A zero (False) of dtype varying along exactly `axes`, at the top of the body."""
        key = ('zero', dtype, frozenset(axes))
        if key not in self.helpers:
            me = self.axis_value(tuple(sorted(axes)))
            v = Var(self.fresh('z'), dtype, (), axes, True, None)
            if dtype == 'i32':
                st = Eqn([v], 'mul', '', [me, Lit(0, 'i32')], fn=local(lambda x, z: x * z, 'i32'))
            elif dtype != 'bool':
                zi = self.zero('i32', axes)
                st = Eqn([v], 'convert_element_type', 'new_dtype=' + dtype, [zi], fn=local(lambda x: x, dtype))
            else:
                st = Eqn([v], 'ne', '', [me, me], fn=local(np.not_equal, 'bool'))
            st.jaxpr_style = False
            self.prologue.append(st)
            self.helpers[key] = v
        return self.helpers[key]

    def widen(self, sc, a, target):
        """a, made to vary along exactly `target` (a superset of its set):
        with pbroadcast/pvary where that is legal, else by adding a zero
        that varies along the missing axes."""
        rng = self.rng
        miss = frozenset(target) - a.vma
        if not miss:
            return a
        if (not a.is_lit and (not (miss & sc.ctrl) or 'pvary_in_varying' in FEATURES)
                and rng.random() < 0.5):
            return self.emit(sc, rng.choice(['pbroadcast', 'pvary']), self.axes_param(sorted(miss)), [a],
                             a.dtype, a.shape, a.vma | miss, fn=lambda d, x: (x,))
        z = self.zero(a.dtype, miss)
        args = [a, z] if rng.random() < 0.7 else [z, a]
        if a.dtype == 'bool':
            return self.emit(sc, 'or', '', args, 'bool', a.shape, a.vma | miss, fn=local(np.logical_or, 'bool'))
        return self.emit(sc, 'add', '', args, a.dtype, a.shape, a.vma | miss,
                         fn=local(lambda x, y: x + y, a.dtype))

    def bounded(self, sc, u, lo, hi):
        """An i32 scalar in [lo, hi] computed from the exact value u."""
        rng = self.rng
        x = u
        if x.shape:
            prim = rng.choice(['reduce_sum', 'reduce_max', 'reduce_min'])
            f = {'reduce_sum': np.sum, 'reduce_max': np.max, 'reduce_min': np.min}[prim]
            axes = tuple(range(len(x.shape)))
            x = self.emit(sc, prim, 'axes=(%s)' % ''.join('%d, ' % k for k in axes).rstrip(' '), [x],
                          x.dtype, (), x.vma, fn=local(lambda y, f=f: f(y), x.dtype))
        if x.dtype != 'i32':
            x = self.emit(sc, 'convert_element_type', 'new_dtype=i32', [x], 'i32', (), x.vma,
                          fn=local(lambda y: y, 'i32'))
        x = self.emit(sc, 'abs', '', [x], 'i32', (), x.vma, fn=local(np.abs, 'i32'))
        x = self.emit(sc, 'rem', '', [x, Lit(hi - lo + 1, 'i32')], 'i32', (), x.vma,
                      fn=local(np.fmod, 'i32'))
        if lo:
            x = self.emit(sc, 'add', '', [x, Lit(lo, 'i32', rng.random() < 0.3)], 'i32', (), x.vma,
                          fn=local(lambda y, c: y + c, 'i32'))
        return x

    def small_int(self, sc, budget, lo, hi, inv_ok=True):
        """An exact i32 scalar with values in [lo, hi] that is a literal,
        invariant, or varies by device through axis_index or through data."""
        rng = self.rng
        mesh = self.mesh
        kinds = ['lit', 'axis', 'axis', 'data', 'data'] + (['inv'] if inv_ok else [])
        kind = rng.choice(kinds)
        if kind == 'axis':
            pool = [a for a in budget if mesh.sizes[a] > 1]
            if pool:
                a = rng.choice(pool)
                axes = (a,)
                # a tuple of axes only when it stays small
                more = [b for b in budget if b != a and mesh.sizes[a] * mesh.sizes[b] <= hi - lo + 1]
                if more and rng.random() < 0.3:
                    axes = (a, rng.choice(more))
                    if rng.random() < 0.5:
                        axes = axes[::-1]
                me = self.axis_value(axes)
                p = mesh.group_size(axes)
                if p - 1 + lo <= hi and rng.random() < 0.5:
                    if lo == 0:
                        return me
                    return self.emit(sc, 'add', '', [me, Lit(lo, 'i32')], 'i32', (), me.vma,
                                     fn=local(lambda y, c: y + c, 'i32'))
                x = self.emit(sc, 'rem', '', [me, Lit(hi - lo + 1, 'i32')], 'i32', (), me.vma,
                              fn=local(np.fmod, 'i32'))
                if lo:
                    x = self.emit(sc, 'add', '', [x, Lit(lo, 'i32')], 'i32', (), x.vma,
                                  fn=local(lambda y, c: y + c, 'i32'))
                return x
        if kind == 'data':
            u = self.pick(sc, lambda u: u.exact and u.dtype != 'bool' and u.vma and u.vma <= budget)
            if u is not None:
                return self.bounded(sc, u, lo, hi)
        if kind == 'inv':
            u = self.pick(sc, lambda u: u.exact and u.dtype != 'bool' and not u.vma)
            if u is not None and rng.random() < 0.6:
                return self.bounded(sc, u, lo, hi)
            free = sorted(self.all_axes - sc.ctrl)
            if free:
                axes = self.rand_axes(mesh, 1, free)
                p = mesh.group_size(axes)
                g = self.emit(sc, 'psum', self.axes_param(axes), [Lit(1, 'i32')], 'i32', (), frozenset(),
                              coll=c_reduce('psum', 'i32', p), coll_axes=axes)
                return self.emit(sc, 'rem', '', [g, Lit(hi - lo + 1, 'i32')], 'i32', (), frozenset(),
                                 fn=local(np.fmod, 'i32'))
        return Lit(rng.randint(lo, hi), 'i32', rng.random() < 0.3)

    # -- functions

    def new_fn(self, sc, types, ctrl, prefix='f'):
        """A function taking values of these types (Var or Lit), run under
        the control variance ctrl; readable or jaxpr form."""
        rng = self.rng
        form = 'jaxpr' if sc.form == 'jaxpr' or rng.random() < 0.4 else 'def'
        fsc = Scope(sc, ctrl, form)
        params = [self.annotate(Var(self.fresh('a'), t.dtype, t.shape, t.vma, t.exact), form, fsc.ctrl, True)
                  for t in types]
        fsc.vars += params
        return Fn(self.fresh(prefix), params, form, fsc), fsc

    def place(self, sc, fns):
        """Define the functions that are not written inline, in sc (after
        everything they close over, before the statement that uses them)."""
        for fn in fns:
            if fn.form == 'def' or (sc.form == 'def' and self.rng.random() < 0.4):
                self.define(sc, fn)

    def define(self, sc, fn):
        fn.named = True
        sc.stmts.append(DefStmt(fn))

    # -- one step on a value: same dtype and shape, variance within budget

    def transform(self, sc, v, budget, depth, steps=None):
        rng = self.rng
        for _ in range(steps or rng.choice([1, 1, 2, 3])):
            r = rng.random()
            w = None
            if self.plant and self.bad is None and sc.ctrl and r < 0.3:
                w = self.step_coll(sc, v, budget, bad=True)
            elif depth > 0 and r < 0.3:
                w = self.construct(sc, v, budget, depth - 1)
            elif r < 0.55 and v.dtype != 'bool':
                w = self.step_coll(sc, v, budget)
            elif r < 0.62 and depth > 0 and sc.form == 'def':
                w = self.step_call(sc, v, budget, depth - 1)
            if w is None:
                w = self.step_local(sc, v, budget)
            if w is not None:
                v = w
        return v

    def step_call(self, sc, v, budget, depth):
        """def g(a) { ... } then w = g v: a function called like a primitive."""
        fn, fsc = self.new_fn(sc, [v], sc.ctrl, prefix='g')
        r = self.transform(fsc, fn.params[0], budget, depth)
        fn.results = [r]
        self.define(sc, fn)
        w = self.annotate(Var(self.fresh(), r.dtype, r.shape, r.vma, r.exact), sc.form, sc.ctrl)
        self.add_stmt(sc, CallStmt([w], fn, [v]))
        sc.vars.append(w)
        return w

    def step_local(self, sc, v, budget):
        rng = self.rng
        mesh = self.mesh
        dt, shape = v.dtype, v.shape
        ok = lambda u: u.vma <= budget and u is not v  # noqa: E731
        if dt == 'bool':
            kind = rng.choice(['not', 'logic', 'logic', 'cmp'])
            if kind == 'not':
                return self.emit(sc, 'not', '', [v], 'bool', shape, v.vma, fn=local(np.logical_not, 'bool'))
            if kind == 'logic':
                prim = rng.choice(['and', 'or'])
                f = np.logical_and if prim == 'and' else np.logical_or
                u = self.pick(sc, lambda u: ok(u) and u.dtype == 'bool' and u.shape in (shape, ()))
                u = u if u is not None and rng.random() < 0.7 else self.lit('bool')
                args = [v, u] if rng.random() < 0.7 else [u, v]
                return self.emit(sc, prim, '', args, 'bool', shape, v.vma | u.vma, fn=local(f, 'bool'))
            # a comparison of two numbers of this shape
            x = self.pick(sc, lambda u: ok(u) and u.dtype != 'bool' and u.shape == shape)
            if x is None:
                return None
            y = self.pick(sc, lambda u: ok(u) and u.dtype == x.dtype and u.shape in (shape, ()))
            y = y if y is not None and rng.random() < 0.6 else self.lit(x.dtype)
            prim = rng.choice(['lt', 'le', 'gt', 'ge', 'eq', 'ne'])
            f = {'lt': np.less, 'le': np.less_equal, 'gt': np.greater, 'ge': np.greater_equal,
                 'eq': np.equal, 'ne': np.not_equal}[prim]
            w = self.emit(sc, prim, '', [x, y], 'bool', shape, x.vma | y.vma, fn=local(f, 'bool'))
            return w
        kind = rng.choice(['bin', 'bin', 'lit', 'lit', 'unary', 'convert', 'select', 'axis', 'reduce'])
        if kind == 'bin':
            u = self.pick(sc, lambda u: ok(u) and u.dtype == dt and u.shape in (shape, ()))
            if u is not None:
                prim = rng.choice(['add', 'sub', 'max', 'min', 'mul'] if dt == 'i32' else ['add', 'sub', 'max', 'min'])
                f = {'add': np.add, 'sub': np.subtract, 'max': np.maximum, 'min': np.minimum,
                     'mul': np.multiply}[prim]
                args = [v, u] if rng.random() < 0.7 else [u, v]
                return self.emit(sc, prim, '', args, dt, shape, v.vma | u.vma,
                                 fn=local(lambda a, b, f=f: f(a, b), dt))
        if kind == 'lit':
            prim = rng.choice(['add', 'sub', 'max', 'min', 'mul'])
            c = self.lit(dt) if prim != 'mul' else Lit(rng.choice([-1, 2]), dt, rng.random() < 0.3)
            f = {'add': np.add, 'sub': np.subtract, 'max': np.maximum, 'min': np.minimum,
                 'mul': np.multiply}[prim]
            args = [v, c] if prim == 'sub' or rng.random() < 0.7 else [c, v]
            return self.emit(sc, prim, '', args, dt, shape, v.vma,
                             fn=local(lambda a, b, f=f: f(a, b), dt))
        if kind == 'convert':
            u = self.pick(sc, lambda u: ok(u) and u.dtype != dt and u.shape == shape
                          and (u.exact or dt in FLOATS))
            if u is not None:
                c = self.emit(sc, 'convert_element_type', 'new_dtype=%s' % dt, [u], dt, shape, u.vma,
                              fn=local(lambda a: a, dt))
                return self.emit(sc, 'add', '', [v, c], dt, shape, v.vma | c.vma,
                                 fn=local(lambda a, b: a + b, dt))
        if kind == 'select':
            p = self.pick(sc, lambda u: ok(u) and u.dtype == 'bool' and u.shape in (shape, ()))
            if p is not None:
                u = self.pick(sc, lambda u: ok(u) and u.dtype == dt and u.shape == shape)
                u = u if u is not None and rng.random() < 0.7 else self.lit(dt)
                args = [v, u] if rng.random() < 0.5 else [u, v]
                return self.emit(sc, 'select_n', '', [p] + args, dt, shape, p.vma | v.vma | u.vma,
                                 fn=local(lambda q, a, b: np.where(q, b, a), dt))
        if kind == 'axis':
            # axis_index inside the function (legal over axes the control
            # does not vary along, and anywhere once pvary_in_varying lands)
            pool = [a for a in budget if a not in sc.ctrl or 'pvary_in_varying' in FEATURES]
            if pool:
                axes = self.rand_axes(mesh, 1, pool)
                ax = tuple(axes)
                me = self.emit(sc, 'axis_index', self.axes_param(axes, 'axis_name'), [], 'i32', (), frozenset(axes),
                               fn=lambda d, ax=ax: (np.array(mesh.member_index(d, ax), dtype=np.int32),),
                               prefix='me')
                if dt != 'i32':
                    me = self.emit(sc, 'convert_element_type', 'new_dtype=' + dt, [me], dt, (), me.vma,
                                   fn=local(lambda a: a, dt))
                return self.emit(sc, 'add', '', [v, me], dt, shape, v.vma | me.vma,
                                 fn=local(lambda a, b: a + b, dt))
        if kind == 'reduce' and shape:
            prim = rng.choice(['reduce_sum', 'reduce_max', 'reduce_min'])
            f = {'reduce_sum': np.sum, 'reduce_max': np.max, 'reduce_min': np.min}[prim]
            ax = rng.randrange(len(shape))
            neg = 'neg_axes' in FEATURES and rng.random() < 0.4
            s = self.emit(sc, prim, 'axes=(%d,)' % (ax - len(shape) if neg else ax), [v], dt,
                          shape[:ax] + shape[ax + 1:], v.vma,
                          fn=local(lambda a, f=f, ax=ax: f(a, axis=ax), dt))
            keep = tuple(k for k in range(len(shape)) if k != ax)
            s = self.emit(sc, 'broadcast_in_dim', 'shape=(%s), broadcast_dimensions=(%s)' % (
                ''.join('%d, ' % n for n in shape).rstrip(' '), ''.join('%d, ' % k for k in keep).rstrip(' ')),
                [s], dt, shape, v.vma,
                fn=local(lambda a, ax=ax, sh=shape: np.broadcast_to(np.expand_dims(a, ax), sh), dt))
            return self.emit(sc, 'sub', '', [v, s], dt, shape, v.vma, fn=local(lambda a, b: a - b, dt))
        prim = rng.choice(['neg', 'abs'])
        return self.emit(sc, prim, '', [v], dt, shape, v.vma, fn=local(np.negative if prim == 'neg' else np.abs, dt))

    # -- collectives that give back a value of the operand's dtype and shape

    CANON = {'reduce_scatter': 'psum_scatter', 'pvary': 'pbroadcast'}

    def step_coll(self, sc, v, budget, bad=False):
        """A collective, maybe followed by a local equation or a second
        collective, giving a value of v's dtype and shape.  Its axes avoid
        the axes the control varies along; with bad=True they include one
        of them instead (the program is to be rejected)."""
        rng = self.rng
        mesh = self.mesh
        nd = len(mesh.sizes)
        if v.dtype == 'bool' or nd == 0:
            return None
        dt, shape, r = v.dtype, v.shape, len(v.shape)
        grow = ['ppermute', 'gather_reduce', 'gather_slice', 'scatter_gather', 'a2a']
        shrink = ['psum', 'psum', 'pmax', 'pmin', 'pmean', 'ginv_reduce']
        if bad:
            a = rng.choice(sorted(sc.ctrl))
            axes = [a] + [b for b in range(nd) if b != a and rng.random() < 0.3]
            rng.shuffle(axes)
            kind = rng.choice(shrink + (grow if frozenset(axes) <= budget else []))
        else:
            free = sorted(self.all_axes - sc.ctrl)
            kind = rng.choice(shrink + grow + ['pvary', 'pscatter', 'pscatter_local'])
            if kind in ('pvary', 'pscatter_local'):
                pool = [a for a in budget - v.vma if a not in sc.ctrl or 'pvary_in_varying' in FEATURES]
            elif kind == 'pscatter':
                pool = [a for a in free if a in budget and a not in v.vma]
            elif kind in grow:
                pool = [a for a in free if a in budget]
            else:
                pool = free
            if not pool:
                return None
            axes = self.rand_axes(mesh, 1, pool)
        S = frozenset(axes)
        p = mesh.group_size(axes)
        neg = 'neg_axes' in FEATURES and rng.random() < 0.4
        pre = 'bad' if bad else 'v'
        an = lambda: self.axes_param(axes, 'axis_name')  # noqa: E731
        first = None

        def coll(prim, params, arg, odt, oshape, ovma, f, exact=None):
            nonlocal first
            w = self.emit(sc, prim, params, [arg], odt, oshape, ovma, exact=exact, coll=f, coll_axes=axes,
                          prefix=pre if first is None else 'v')
            if first is None:
                first = (w.name, self.CANON.get(prim, prim))
            return w

        def loc(prim, params, arg, oshape, ovma, f):
            return self.emit(sc, prim, params, [arg], dt, oshape, ovma, fn=local(f, dt))

        if kind == 'pmean' and dt not in FLOATS:
            kind = 'psum'
        if kind in ('psum', 'pmax', 'pmin', 'pmean'):
            w = coll(kind, self.axes_param(axes, rng.choice(['axes', 'axes', 'axis_name'])), v, dt, shape,
                     v.vma - S, c_reduce(kind, dt, p), exact=v.exact and kind != 'pmean')
        elif kind == 'pvary':
            w = self.emit(sc, rng.choice(['pbroadcast', 'pvary']), self.axes_param(axes), [v], dt, shape,
                          v.vma | S, fn=lambda d, x: (x,))
        elif kind == 'ppermute':
            if rng.random() < 0.3:
                k = rng.choice([1, 1, 2, -1])
                perm = [(j, (j + k) % p) for j in range(p)]
                params = '%s, shift=%d' % (an(), k)
            else:
                srcs = list(range(p))
                rng.shuffle(srcs)
                srcs = srcs[:max(1, rng.randint(0, p) if rng.random() < 0.4 else p)]
                perm = list(zip(srcs, rng.sample(range(p), len(srcs))))
                params = '%s, perm=(%s%s)' % (an(), ', '.join('(%d, %d)' % pr for pr in perm),
                                             ',' if len(perm) == 1 else '')
            w = coll('ppermute', params, v, dt, shape, v.vma | S, c_ppermute(perm))
        elif kind in ('gather_reduce', 'ginv_reduce'):
            # untiled all_gather (a new dimension at ax), reduced over that dimension again
            if v.size * p > MAX_BLOCK:
                return None
            ax = rng.randrange(r + 1)
            prim = 'all_gather' if kind == 'gather_reduce' else 'all_gather_invariant'
            ps = [an(), 'axis=%d' % (ax - (r + 1) if neg else ax)]
            if rng.random() < 0.4:
                ps.append('tiled=False')
            rng.shuffle(ps)
            g = coll(prim, ', '.join(ps), v, dt, shape[:ax] + (p,) + shape[ax:],
                     v.vma | S if prim == 'all_gather' else v.vma - S, c_gather(ax, False))
            red = rng.choice(['reduce_sum', 'reduce_max', 'reduce_min'])
            f = {'reduce_sum': np.sum, 'reduce_max': np.max, 'reduce_min': np.min}[red]
            w = loc(red, 'axes=(%d,)' % (ax - (r + 1) if neg else ax), g, shape, g.vma,
                    lambda a, f=f, ax=ax: f(a, axis=ax))
        elif kind == 'gather_slice':
            # tiled all_gather along ax, then one member's block sliced out
            if r == 0 or v.size * p > MAX_BLOCK:
                return None
            ax = rng.randrange(r)
            ps = [an(), 'axis=%d' % (ax - r if neg else ax), 'tiled=True']
            rng.shuffle(ps)
            gshape = shape[:ax] + (shape[ax] * p,) + shape[ax + 1:]
            g = coll('all_gather', ', '.join(ps), v, dt, gshape, v.vma | S, c_gather(ax, True))
            s = rng.randrange(p)
            start = [0] * r
            start[ax] = s * shape[ax]
            limit = [start[k] + shape[k] for k in range(r)]
            tup = lambda xs: '(' + ''.join('%d, ' % x for x in xs).rstrip(' ') + ')'  # noqa: E731
            sl = tuple(slice(start[k], limit[k]) for k in range(r))
            w = loc('slice', 'start_indices=%s, limit_indices=%s' % (tup(start), tup(limit)), g, shape, g.vma,
                    lambda a, sl=sl: a[sl])
        elif kind in ('scatter_gather', 'pscatter'):
            # psum_scatter (or pscatter, a local slice) along ax, then all_gather back
            opts = [(True, k) for k in range(r) if shape[k] % p == 0] + [(False, k) for k in range(r) if shape[k] == p]
            if not opts:
                return None
            tiled, ax = rng.choice(opts)
            sshape = shape[:ax] + ((shape[ax] // p,) if tiled else ()) + shape[ax + 1:]
            if kind == 'scatter_gather':
                prim = rng.choice(['psum_scatter', 'psum_scatter', 'reduce_scatter'])
                ps = [an(), 'scatter_dimension=%d' % (ax - r if neg else ax)]
                if tiled or rng.random() < 0.5:
                    ps.append('tiled=%s' % tiled)
                rng.shuffle(ps)
                s = coll(prim, ', '.join(ps), v, dt, sshape, v.vma | S, c_scatter(dt, ax, tiled))
            else:
                ps = [an(), 'axis=%d' % ax, 'tiled=%s' % tiled]
                rng.shuffle(ps)
                s = self.emit(sc, 'pscatter', ', '.join(ps), [v], dt, sshape, v.vma | S,
                              fn=pscatter_fn(mesh, axes, ax, shape[ax] // p if tiled else 1, tiled))
            ps = [an(), 'axis=%d' % (ax - r if neg else ax), 'tiled=%s' % tiled]
            rng.shuffle(ps)
            w = coll('all_gather', ', '.join(ps), s, dt, shape, v.vma | S, c_gather(ax, tiled))
        elif kind == 'pscatter_local':
            # pscatter keeps this device's chunk, a local slice (legal under
            # any predicate); its sum is added to v
            opts = [(True, k) for k in range(r) if shape[k] % p == 0] + [(False, k) for k in range(r) if shape[k] == p]
            if not opts:
                return None
            tiled, ax = rng.choice(opts)
            c = shape[ax] // p if tiled else 1
            sshape = shape[:ax] + ((c,) if tiled else ()) + shape[ax + 1:]
            ps = [an(), 'axis=%d' % ax, 'tiled=%s' % tiled]
            rng.shuffle(ps)
            sc_ = self.emit(sc, 'pscatter', ', '.join(ps), [v], dt, sshape, v.vma | S,
                            fn=pscatter_fn(mesh, axes, ax, c, tiled))
            if sshape:
                dims = tuple(range(len(sshape)))
                sc_ = self.emit(sc, 'reduce_sum', 'axes=(%s)' % ''.join('%d, ' % (k - len(sshape) if neg else k)
                                                                         for k in dims).rstrip(' '),
                                [sc_], dt, (), sc_.vma, fn=local(np.sum, dt))
            w = self.emit(sc, 'add', '', [v, sc_], dt, shape, v.vma | S, fn=local(np.add, dt))
        elif kind == 'a2a':
            opts = [(True, k) for k in range(r) if shape[k] % p == 0] + [(False, k) for k in range(r) if shape[k] == p]
            if not opts:
                return None
            tiled, ax = rng.choice(opts)
            others = [k for k in range(r) if k != ax]
            if tiled and others and rng.random() < 0.5:
                # split ax, concatenate along b, and back: the identity, through two all_to_alls
                b = rng.choice(others)
                mid = list(shape)
                mid[ax] //= p
                mid[b] *= p
                if int(np.prod(mid)) > MAX_BLOCK:
                    return None
                ps = [an(), 'split_axis=%d' % (ax - r if neg else ax), 'concat_axis=%d' % (b - r if neg else b),
                      'tiled=True']
                rng.shuffle(ps)
                m = coll('all_to_all', ', '.join(ps), v, dt, tuple(mid), v.vma | S, c_all_to_all(ax, b, True))
                ps = [an(), 'split_axis=%d' % b, 'concat_axis=%d' % ax, 'tiled=True']
                rng.shuffle(ps)
                w = coll('all_to_all', ', '.join(ps), m, dt, shape, v.vma | S, c_all_to_all(b, ax, True))
            else:
                ps = [an(), 'split_axis=%d' % (ax - r if neg else ax), 'concat_axis=%d' % ax]
                if tiled or rng.random() < 0.5:
                    ps.append('tiled=%s' % tiled)
                rng.shuffle(ps)
                w = coll('all_to_all', ', '.join(ps), v, dt, shape, v.vma | S, c_all_to_all(ax, ax, tiled))
        else:
            return None
        if bad:
            self.bad = (first[0], first[1], S, S & sc.ctrl)
        elif not w.vma <= budget:
            raise GenError('step_coll left its budget')
        return w

    # -- cond, while and fori_loop

    def construct(self, sc, v, budget, depth):
        r = self.rng.random()
        if r < 0.4:
            return self.gen_cond(sc, v, budget, depth)
        if r < 0.75:
            return self.gen_while(sc, v, budget, depth)
        return self.gen_fori(sc, v, budget, depth)

    def produce(self, fsc, dt, shape, budget, depth):
        """A result of dtype dt and shape for a branch: a parameter passed
        through, a literal, or something computed."""
        rng = self.rng
        same = [u for u in fsc.vars if u.sig() == (dt, shape) and u.vma <= budget]
        r = rng.random()
        if same and r < 0.25:
            return rng.choice(same)
        if not shape and r < 0.4:
            return self.lit(dt)
        src = (rng.choice(same) if same and rng.random() < 0.7 else
               self.pick(fsc, lambda u: u.sig() == (dt, shape) and u.vma <= budget))
        if src is None:
            src = self.emit(fsc, 'broadcast_in_dim', 'shape=(%s), broadcast_dimensions=()' % (
                ''.join('%d, ' % n for n in shape).rstrip(' ')), [self.lit(dt)], dt, shape, frozenset(),
                fn=local(lambda a, sh=shape: np.broadcast_to(a, sh), dt))
        return self.transform(fsc, src, budget, depth)

    def gen_cond(self, sc, v, budget, depth):
        rng = self.rng
        nb = rng.choice([1, 2, 2, 2, 3])
        if nb >= 2 and rng.random() < 0.25:
            x = self.small_int(sc, budget, -1, 2)
            prim = rng.choice(['lt', 'ge', 'ne'])
            f = {'lt': np.less, 'ge': np.greater_equal, 'ne': np.not_equal}[prim]
            idx = self.emit(sc, prim, '', [x, Lit(rng.randint(0, 1), 'i32')], 'bool', (), x.vma,
                            fn=local(f, 'bool'))
        else:
            idx = self.small_int(sc, budget, -1, nb)    # out of range on both sides: clamped
            if not idx.is_lit and rng.random() < 0.15:
                idx = self.emit(sc, 'convert_element_type', 'new_dtype=i64', [idx], 'i64', (), idx.vma,
                                fn=local(lambda a: a, 'i64'))
        ops = [v]
        for _ in range(rng.choice([0, 0, 1, 2])):
            u = self.pick(sc, lambda u: u.vma <= budget, recent=0.4) if rng.random() < 0.7 else None
            ops.append(u if u is not None else self.lit(self.rand_dtype()))
        rng.shuffle(ops)
        sigs = [v.sig()]
        if rng.random() < 0.4:
            sigs.append(rng.choice([o.sig() for o in ops] + [(self.rand_dtype(), ())]))
        fns, rows = [], []
        for _ in range(nb):
            fn, fsc = self.new_fn(sc, ops, sc.ctrl | idx.vma, prefix='br')
            rows.append([self.produce(fsc, dt, shape, budget, depth) for dt, shape in sigs])
            fns.append(fn)
        if nb >= 2 and rng.random() < 0.1 and not self.plant:
            # one function in two places of branches=(...)
            k = rng.randrange(nb)
            rows[k] = rows[k - 1]
            fns[k] = fns[k - 1]
        U = [frozenset().union(*(row[k].vma for row in rows)) for k in range(len(sigs))]
        # the branches made to agree in variance here, or left to the checker (cond_widen)
        widen = 'cond_widen' not in FEATURES or rng.random() < 0.5
        for fn, row in {id(fn): (fn, row) for fn, row in zip(fns, rows)}.values():
            fn.results = [self.widen(fn.scope, x, U[k]) if widen else x for k, x in enumerate(row)]
        outs = [self.annotate(Var(self.fresh(), dt, shape, U[k] | idx.vma, all(row[k].exact for row in rows)),
                              sc.form, sc.ctrl | idx.vma)
                for k, (dt, shape) in enumerate(sigs)]
        self.place(sc, list({id(fn): fn for fn in fns}.values()))
        self.add_stmt(sc, CondStmt(outs, idx, fns, ops))
        sc.vars += outs
        return outs[0]

    def extra_variance(self, sc, cs, budget):
        """Some 'x' carries (cs: Carry) are to
        vary more than their operand: the operand is widened before the
        loop, or (loop_widen) the body's parameter is annotated with the
        carry's type, from which the checker starts the carry.  Returns
        the indices of the carries whose parameter must state their type."""
        rng = self.rng
        seeded = set()
        for n, c in enumerate(cs):
            if c.role != 'x' or rng.random() >= 0.3:
                continue
            extra = sub_axes(rng, budget - c.op.vma, 0.4)
            if not extra:
                continue
            if 'loop_widen' in FEATURES and rng.random() < 0.5:
                seeded.add(n)
                c.seed = extra
            else:
                c.op = self.widen(sc, c.op, c.op.vma | extra)
        return seeded

    @staticmethod
    def loop_types(cs, pv_of, fixed_pv=frozenset()):
        """The checker's fixed point for a loop's carries: each starts from
        its operand's variance and its parameters' annotations (seed), and
        each carry the body
        does not pass through unchanged takes the predicate's (or the
        bounds') variance pv, which pv_of computes from the carries' types.
        Returns the carry types, pv, and the pv of each round (a collective
        in a while's cond function is checked under each)."""
        feat = 'passthrough_carry' in FEATURES
        T0 = [c.op.vma | c.seed for c in cs]
        own = [c.pt and feat for c in cs]
        pv, seq = frozenset(fixed_pv), []
        while True:
            T = [t if keep else t | pv for t, keep in zip(T0, own)]
            seq.append(pv)
            grow = pv_of(T)
            if grow <= pv:
                return T, pv, seq
            pv |= grow

    def loop_body_result(self, fsc, p, t, depth, index=None):
        """A loop body's new value for carry parameter p, of type t."""
        rng = self.rng
        x = p
        if index is not None and p.dtype != 'bool' and index.vma <= t and rng.random() < 0.5:
            ii = index
            if p.dtype != ii.dtype:
                ii = self.emit(fsc, 'convert_element_type', 'new_dtype=' + p.dtype, [ii], p.dtype, (), ii.vma,
                               fn=local(lambda a, dt=p.dtype: a, p.dtype))
            prim = rng.choice(['add', 'sub', 'max'])
            f = {'add': np.add, 'sub': np.subtract, 'max': np.maximum}[prim]
            x = self.emit(fsc, prim, '', [x, ii], p.dtype, p.shape, p.vma | ii.vma, fn=local(f, p.dtype))
        x = self.transform(fsc, x, t, depth)
        # the checker widens a narrower result itself (loop_widen)
        if 'loop_widen' in FEATURES and rng.random() < 0.5:
            return x
        return self.widen(fsc, x, t)

    @staticmethod
    def seed_params(params, seeded):
        """Parameters of seeded carries state their carry's type exactly."""
        for n in seeded:
            params[n].ann, params[n].ann_vma = 'full', None

    @staticmethod
    def ann_seeds(params):
        """The variance sets the checker reads from parameters' annotations."""
        return [(p.vma if p.ann_vma is None else p.ann_vma) if p.ann == 'full' else frozenset() for p in params]

    def gen_fori(self, sc, v, budget, depth):
        """fori_loop over literal bounds, or (fori_value_bounds) bounds that
        are values, invariant or varying by device."""
        rng = self.rng
        reverse = rng.random() < 0.15
        if 'fori_value_bounds' in FEATURES and rng.random() < 0.5:
            lo = self.small_int(sc, budget, -1, 2)
            hi = self.small_int(sc, budget, -1, 4)
            if not hi.is_lit and rng.random() < 0.2:   # the index is i64 if a bound is
                hi = self.emit(sc, 'convert_element_type', 'new_dtype=i64', [hi], 'i64', (), hi.vma,
                               fn=local(lambda a: a, 'i64'))
        else:
            lo = rng.choice([0, 0, 0, 1, -1, 2])
            lo, hi = Lit(lo, 'i32'), Lit(lo + rng.choice([0, 1, 2, 2, 3, 3, -1]), 'i32')
        bpv = lo.vma | hi.vma
        cs = [Carry('x', v, rng.random() < 0.15)]
        for _ in range(rng.choice([0, 0, 1, 2])):
            u = self.pick(sc, lambda u: u.vma <= budget, recent=0.4) if rng.random() < 0.7 else None
            cs.append(Carry('x', u if u is not None else self.lit(self.rand_dtype()), rng.random() < 0.15))
        seeded = self.extra_variance(sc, cs, budget)
        T, pv, _ = self.loop_types(cs, lambda T: frozenset(), bpv)
        ctypes = [Var('', c.op.dtype, c.op.shape, t, c.op.exact) for c, t in zip(cs, T)]
        idt = 'i64' if 'i64' in (lo.dtype, hi.dtype) else 'i32'
        fn, fsc = self.new_fn(sc, [Var('', idt, (), bpv)] + ctypes, sc.ctrl | bpv, prefix='body')
        self.seed_params(fn.params[1:], seeded)
        for c, a in zip(cs, self.ann_seeds(fn.params[1:])):
            c.seed = a
        T2, _, _ = self.loop_types(cs, lambda T: frozenset(), bpv)
        if T2 != T:
            raise GenError('fori_loop carries: annotations moved the fixed point')
        i = fn.params[0]
        res = []
        for c, p, t in zip(cs, fn.params[1:], T):
            if p.dtype in FLOATS:
                p.exact = False
            res.append(p if c.pt else self.loop_body_result(fsc, p, t, depth, index=i))
        fn.results = res
        outs = [self.annotate(Var(self.fresh(), c.op.dtype, c.op.shape, t,
                                  c.op.exact and x.exact and c.op.dtype not in FLOATS), sc.form, sc.ctrl | bpv)
                for c, x, t in zip(cs, res, T)]
        self.place(sc, [fn])
        self.add_stmt(sc, ForiStmt(outs, lo, hi, reverse, fn, [c.op for c in cs]))
        sc.vars += outs
        return outs[0]

    def gen_while(self, sc, v, budget, depth):
        """A while loop whose counter k runs from k0 while k < B (in one of
        several spellings); k0 and B are literals, invariant, or vary by
        device through axis_index or data, so each device may loop its own
        number of times.  Other carries ride along."""
        rng = self.rng
        mesh = self.mesh
        fv = 'fori_values' in FEATURES and rng.random() < 0.3
        k0 = self.small_int(sc, budget, -1, 2)
        B = self.small_int(sc, budget, -1, 4)
        pred = 'lt' if fv else rng.choice(['lt', 'lt', 'gt', 'not_ge', 'and_flag', 'go'])
        flag = None
        if pred == 'and_flag':
            if rng.random() < 0.2:
                flag = Lit(True, 'bool', rng.random() < 0.3)
            else:
                x = self.small_int(sc, budget, -1, 2)
                prim = rng.choice(['ne', 'lt', 'ge'])
                f = {'ne': np.not_equal, 'lt': np.less, 'ge': np.greater_equal}[prim]
                flag = self.emit(sc, prim, '', [x, Lit(rng.randint(0, 1), 'i32')], 'bool', (), x.vma,
                                 fn=local(f, 'bool'))
        cs = [Carry('k', k0, False)]
        if fv:
            cs.append(Carry('hi', B, True))
        if pred == 'go':
            go0 = self.emit(sc, 'lt', '', [k0, B], 'bool', (), k0.vma | B.vma, fn=local(np.less, 'bool'))
            cs.append(Carry('go', go0, False))
        vpos = len(cs)
        cs.append(Carry('x', v, rng.random() < 0.15))
        for _ in range(rng.choice([0, 0, 1, 2])):
            u = self.pick(sc, lambda u: u.vma <= budget, recent=0.4) if rng.random() < 0.7 else None
            cs.append(Carry('x', u if u is not None else self.lit(self.rand_dtype()), rng.random() < 0.2))
        order = list(range(len(cs)))
        if not fv:
            rng.shuffle(order)
        cs = [cs[k] for k in order]
        vpos = order.index(vpos)
        role = {c.role: n for n, c in enumerate(cs) if c.role != 'x'}
        seeded = self.extra_variance(sc, cs, budget)
        # where the cond function finds B (and the flag)
        if fv:
            bmode = 'carry'
        elif B.is_lit:
            bmode = rng.choice(['lit', 'lit', 'const'])
        else:
            bmode = rng.choice(['closure', 'closure', 'const'])
        fmode = 'const' if flag is not None and not flag.is_lit and rng.random() < 0.4 else 'closure'

        def pred_vma(T):
            if pred == 'go':
                return T[role['go']]
            s = T[role['k']] | (T[role['hi']] if fv else B.vma)
            return s | (flag.vma if flag is not None else frozenset())
        T, pv, _ = self.loop_types(cs, pred_vma)
        ctrl = sc.ctrl | pv
        ctypes = [Var('', c.op.dtype, c.op.shape, t, c.op.exact) for c, t in zip(cs, T)]

        # the functions' parameters; their annotations seed the fixed point
        cconsts = []
        if bmode == 'const':
            cconsts.append(B)
        if fmode == 'const':
            cconsts.append(flag)
        cfn, csc = self.new_fn(sc, cconsts + ctypes, ctrl, prefix='cnd')
        bconsts = []
        if pred == 'go' and not B.is_lit and rng.random() < 0.5:
            bconsts.append(B)
        if rng.random() < 0.2:
            u = self.pick(sc, lambda u: u.vma <= budget, recent=0.3)
            if u is not None and u is not B:
                bconsts.append(u)
        bfn, bsc = self.new_fn(sc, bconsts + ctypes, ctrl, prefix='body')
        cps = cfn.params[len(cconsts):]
        bps = bfn.params[len(bconsts):]
        self.seed_params(bps, seeded)
        for c, a, b in zip(cs, self.ann_seeds(cps), self.ann_seeds(bps)):
            c.seed = a | b
        T2, pv2, seq = self.loop_types(cs, pred_vma)
        if (T2, pv2) != (T, pv):
            raise GenError('while carries: annotations moved the fixed point')

        # the cond function
        kp = cps[role['k']]
        bref = {'lit': B, 'closure': B, 'const': cfn.params[0],
                'carry': cps[role['hi']] if fv else None}[bmode]
        if self.plant and self.bad is None and rng.random() < 0.4 and (sc.ctrl | pv):
            # a collective in the predicate's function: checked under the
            # variance the fixed point has reached at each round
            a = rng.choice(sorted(sc.ctrl | pv))
            axes = [a] + [b for b in range(len(mesh.sizes)) if b != a and rng.random() < 0.3]
            rng.shuffle(axes)
            S = frozenset(axes)
            at = next(sc.ctrl | q for q in seq if S & (sc.ctrl | q))
            prim = rng.choice(['psum', 'pmax', 'pmin'])
            w = self.emit(csc, prim, self.axes_param(axes), [kp], 'i32', (), kp.vma - S,
                          coll=c_reduce(prim, 'i32', mesh.group_size(axes)), coll_axes=axes, prefix='bad')
            self.bad = (w.name, prim, S, S & at)
        if pred in ('lt', 'and_flag'):
            p = self.emit(csc, 'lt', '', [kp, bref], 'bool', (), kp.vma | bref.vma, fn=local(np.less, 'bool'))
            if pred == 'and_flag':
                fl = cfn.params[len(cconsts) - 1] if fmode == 'const' else flag
                args = [p, fl] if rng.random() < 0.5 else [fl, p]
                p = self.emit(csc, 'and', '', args, 'bool', (), p.vma | fl.vma, fn=local(np.logical_and, 'bool'))
        elif pred == 'gt':
            p = self.emit(csc, 'gt', '', [bref, kp], 'bool', (), kp.vma | bref.vma, fn=local(np.greater, 'bool'))
        elif pred == 'not_ge':
            q = self.emit(csc, 'ge', '', [kp, bref], 'bool', (), kp.vma | bref.vma,
                          fn=local(np.greater_equal, 'bool'))
            p = self.emit(csc, 'not', '', [q], 'bool', (), q.vma, fn=local(np.logical_not, 'bool'))
        else:
            p = cps[role['go']]        # the predicate is a carry
        free = sorted(self.all_axes - sc.ctrl - pv)
        if free and rng.random() < 0.25 and not kp.is_lit:
            # a collective in the cond function, over axes the predicate does
            # not vary along: every member of a group evaluates the predicate
            # as often as the others; `gt s -1000` holds, the loop is unchanged
            axes = self.rand_axes(mesh, 1, free)
            s = self.emit(csc, 'psum', self.axes_param(axes), [kp], 'i32', (), kp.vma - frozenset(axes),
                          coll=c_reduce('psum', 'i32', mesh.group_size(axes)), coll_axes=axes)
            q = self.emit(csc, 'gt', '', [s, Lit(-1000, 'i32')], 'bool', (), s.vma, fn=local(np.greater, 'bool'))
            args = [p, q] if rng.random() < 0.5 else [q, p]
            p = self.emit(csc, 'and', '', args, 'bool', (), p.vma | q.vma, fn=local(np.logical_and, 'bool'))
        cfn.results = [p]
        if p.vma != pv and not (self.plant and p.vma <= pv):
            raise GenError('predicate varies over %s, the fixed point says %s' % (sorted(p.vma), sorted(pv)))

        # the body function
        res = []
        k2 = None
        for c, p, t in zip(cs, bps, T):
            if p.dtype in FLOATS:
                p.exact = False
            if c.role == 'k':
                step = Lit(rng.choice([1, 1, 1, 2]), 'i32', rng.random() < 0.3)
                args = [p, step] if rng.random() < 0.7 else [step, p]
                k2 = self.emit(bsc, 'add', '', args, 'i32', (), p.vma, fn=local(np.add, 'i32'))
                res.append(k2)
            elif c.role == 'hi' or (c.role == 'x' and c.pt):
                res.append(p)
            elif c.role == 'go':
                res.append(None)       # after k2
            else:
                res.append(self.loop_body_result(bsc, p, t, depth, index=bps[role['k']] if fv else None))
        if pred == 'go':
            n = role['go']
            bb = B if B.is_lit or B not in bconsts else bfn.params[bconsts.index(B)]
            go2 = self.emit(bsc, 'lt', '', [k2, bb], 'bool', (), k2.vma | bb.vma, fn=local(np.less, 'bool'))
            res[n] = self.widen(bsc, go2, T[n])
        bfn.results = res
        for x, t in zip(res, T):
            if not x.vma <= t:
                raise GenError('a while body returns %s for a carry of %s' % (sorted(x.vma), sorted(t)))
        outs = [self.annotate(Var(self.fresh(), c.op.dtype, c.op.shape, t,
                                  c.op.exact and x.exact and c.op.dtype not in FLOATS), sc.form, sc.ctrl | pv)
                for c, x, t in zip(cs, res, T)]
        self.place(sc, [cfn, bfn])
        self.add_stmt(sc, WhileStmt(outs, cfn, bfn, cconsts, bconsts, [c.op for c in cs],
                                    rng.random() < 0.4))
        sc.vars += outs
        return outs[vpos]

    # -- the body

    def make_body(self, mesh, pool):
        rng = self.rng
        self.mesh = mesh
        self.all_axes = frozenset(range(len(mesh.sizes)))
        self.top = top = Scope(None, (), 'def')
        self.prologue, self.helpers = [], {}
        envs = [{} for _ in range(mesh.ndev)]
        for v in pool:
            top.vars.append(Var(v.name, v.dtype, v.shape, v.vma))
            for d in range(mesh.ndev):
                envs[d][v.name] = np.asarray(v.blocks[d])
        if rng.random() < 0.4:
            # an 8-byte copy of a value (i64 or f64)
            u = rng.choice(top.vars)
            dt = rng.choice(['i64', 'f64'])
            self.emit(top, 'convert_element_type', 'new_dtype=' + dt, [u], dt, u.shape, u.vma,
                      fn=local(lambda a: a, dt))
        made = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            v = self.pick(top, lambda u: True, recent=0.7)
            w = self.construct(top, v, self.all_axes, rng.choice([1, 1, 2, 2, 3]))
            made.append(w)
            if rng.random() < 0.3:
                made.append(self.transform(top, w, self.all_axes, 1))
        if self.plant and self.bad is None:
            return None
        # the last value made, and up to two other results of the top-level
        # cond, while and fori_loop statements (a value nobody returns tests nothing)
        outs = [u for st in top.stmts if st.kind in ('cond', 'while', 'fori') for u in st.outs
                if u is not made[-1]]
        results = [made[-1]] + rng.sample(outs, min(len(outs), rng.choice([0, 1, 2, 2])))
        for k, w in enumerate(results):
            # a scalar result varying along an axis must get a dimension to be mapped
            if not w.shape and (w.vma or rng.random() < 0.2):
                n = rng.choice([1, 2])
                results[k] = self.emit(top, 'broadcast_in_dim', 'shape=(%d,), broadcast_dimensions=()' % n, [w],
                                       w.dtype, (n,), w.vma, fn=local(lambda a, n=n: np.broadcast_to(a, (n,)), w.dtype))
        stmts = self.prologue + top.stmts
        self.pre_lines = list(self.body)
        self.ir = (stmts, results)
        self.envs = envs
        self.body += self.body_lines(stmts)
        if self.plant:
            blocks = [[np.zeros(w.shape, NP_DT[w.dtype]) for w in results]] * mesh.ndev
        else:
            blocks = Model(mesh).run(stmts, envs, results)
        return [Val(w.name, w.dtype, w.shape, w.vma, [blocks[d][k] for d in range(mesh.ndev)])
                for k, w in enumerate(results)]


# ---- reducing a failing program ------------------------------------------------------------

def stmt_atoms(st):
    if st.kind == 'eqn' or st.kind == 'call':
        return st.args
    if st.kind == 'cond':
        return [st.index] + st.args
    if st.kind == 'while':
        return st.cconsts + st.bconsts + st.carries
    if st.kind == 'fori':
        return [st.lo, st.hi] + st.carries
    return []


def stmt_fns(st):
    return {'call': lambda: [st.fn], 'cond': lambda: st.fns, 'while': lambda: [st.cfn, st.bfn],
            'fori': lambda: [st.fn]}.get(st.kind, lambda: [])()


def dce(stmts, live, live_fns):
    """stmts without those whose results nothing reads (live: names read
    after them, updated with what the kept ones read)."""
    out = []
    for st in reversed(stmts):
        if st.kind == 'def':
            if id(st.fn) in live_fns:
                out.append(st)
            continue
        if not any(v.name in live for v in st.outs):
            continue
        for fn in stmt_fns(st):
            inner = set(r.name for r in fn.results if not r.is_lit)
            fn.scope.stmts[:] = dce(fn.scope.stmts, inner, live_fns)
            live |= inner
            live_fns.add(id(fn))
        live |= set(a.name for a in stmt_atoms(st) if not a.is_lit)
        out.append(st)
    return out[::-1]


def all_stmts(stmts):
    """Every statement, nested ones included, with the list holding it."""
    for k, st in enumerate(stmts):
        yield stmts, k, st
        for fn in stmt_fns(st):
            yield from all_stmts(fn.scope.stmts)


def reductions(st):
    """Smaller versions of one statement, each a function changing it in place."""
    out = []
    if st.kind in ('while', 'fori'):
        for n in range(len(st.carries)):
            def drop(st=st, n=n):
                st.carries = st.carries[:n] + st.carries[n + 1:]
                st.outs = st.outs[:n] + st.outs[n + 1:]
                fns = [(st.cfn, len(st.cconsts)), (st.bfn, len(st.bconsts))] if st.kind == 'while' else [(st.fn, 1)]
                for fn, off in fns:
                    fn.params = fn.params[:off + n] + fn.params[off + n + 1:]
                body = st.bfn if st.kind == 'while' else st.fn
                body.results = body.results[:n] + body.results[n + 1:]
            out.append(drop)
    if st.kind == 'fori' and st.lo.is_lit and st.hi.is_lit and st.hi.value - st.lo.value > 1:
        def fewer(st=st):
            st.hi = Lit(st.hi.value - 1, 'i32')
        out.append(fewer)
    if st.kind == 'cond':
        if len(st.fns) > 1:
            for k in range(len(st.fns)):
                def one(st=st, k=k):
                    st.fns = [st.fns[k]]
                out.append(one)
        for n in range(len(st.args)):
            def drop_arg(st=st, n=n):
                st.args = st.args[:n] + st.args[n + 1:]
                for fn in st.fns:
                    fn.params = fn.params[:n] + fn.params[n + 1:]
            out.append(drop_arg)
        for n in range(len(st.outs)):
            if len(st.outs) > 1:
                def drop_out(st=st, n=n):
                    st.outs = st.outs[:n] + st.outs[n + 1:]
                    for fn in st.fns:
                        fn.results = fn.results[:n] + fn.results[n + 1:]
                out.append(drop_out)
    for name in ('carries', 'cconsts', 'bconsts', 'args'):
        atoms = getattr(st, name, None) if st.kind != 'eqn' or st.coll is None else None
        for n, a in enumerate(atoms or []):
            if not a.is_lit and not a.shape:
                def lit(st=st, name=name, n=n, a=a):
                    getattr(st, name)[n] = Lit(False if a.dtype == 'bool' else 0, a.dtype)
                out.append(lit)
    return out


def bypasses(st):
    """(result, stand-in) pairs: a statement's result replaced everywhere
    by one of its operands of the same dtype and shape (a loop's result by
    its initial carry), after which the statement is dead."""
    if st.kind == 'while':
        return list(zip(st.outs, st.carries))
    if st.kind == 'fori':
        return list(zip(st.outs, st.carries))
    if st.kind in ('eqn', 'cond', 'call'):
        args = st.args if st.kind != 'cond' else st.args
        return [(o, a) for o in st.outs for a in args if a.sig() == o.sig()]
    return []


def subst(stmts, old, new):
    """Replace the value old by the atom new wherever it is read."""
    def fix(xs):
        return [new if x is old else x for x in xs]
    for _, _, st in all_stmts(stmts):
        if st.kind == 'cond' and st.index is old:
            st.index = new
        for name in ('args', 'carries', 'cconsts', 'bconsts'):
            if hasattr(st, name):
                setattr(st, name, fix(getattr(st, name)))
        for fn in stmt_fns(st):
            fn.results = fix(fn.results)


def reduce_program(shmapi, g, tmpdir, budget_s=60.0):
    """A smaller program than CtlGen g's on which shmapi still prints other
    values than the model: results dropped, dead statements removed, loop
    carries, cond branches, operands and results dropped, scalar operands
    made literals, one at a time while the disagreement stays."""
    import copy
    import time
    t_end = time.time() + budget_s
    mesh = g.mesh

    def attempt(stmts, results):
        try:
            blocks = Model(mesh).run(stmts, g.envs, results)
            outs = []
            for k, w in enumerate(results):
                val = Val(w.name, w.dtype, w.shape, w.vma, [blocks[d][k] for d in range(mesh.ndev)])
                k0 = g.result_index[w.name]
                outs.append((val, g.outs[k0][1], assemble(mesh, val, g.out_dims[k0])))
            text, exp = g.text(g.pre_lines + g.body_lines(stmts), outs)
        except Exception:  # noqa: BLE001 -- a reduction the model cannot run is just not taken
            return None
        rc, out, _ = run(shmapi, text, tmpdir, 'reduce')
        if rc != 0:
            return None
        got = parse_output(out)
        if any(label in got and compare(e, got[label]) for label, e in exp):
            return text
        return None

    stmts, results = g.ir
    g.result_index = {w.name: k for k, w in enumerate(results)}
    best = attempt(stmts, results)
    if best is None:
        return None

    def dce_all(stmts, results):
        return dce(stmts, set(w.name for w in results), set())

    # one result, then dead code
    for w in results:
        if len(results) > 1:
            t = attempt(dce_all(copy.deepcopy(stmts), [w]), [w])
            if t:
                stmts, results, best = dce_all(stmts, [w]), [w], t
                break
    cand = dce_all(copy.deepcopy(stmts), results)
    t = attempt(cand, results)
    if t:
        stmts, best = cand, t
    progress = True
    while progress and time.time() < t_end:
        progress = False
        sites = list(all_stmts(stmts))
        for si in range(len(sites)):
            if time.time() > t_end:
                break
            nred = len(reductions(sites[si][2]))
            for ri in range(nred + len(bypasses(sites[si][2]))):
                trial_stmts, trial_results = copy.deepcopy((stmts, results))
                site = list(all_stmts(trial_stmts))[si][2]
                if ri < nred:
                    reductions(site)[ri]()
                else:
                    o, a = bypasses(site)[ri - nred]
                    if o in trial_results:
                        continue
                    subst(trial_stmts, o, a)
                trial_stmts = dce_all(trial_stmts, trial_results)
                t = attempt(trial_stmts, trial_results)
                if t and len(t) < len(best):
                    stmts, results, best = trial_stmts, trial_results, t
                    progress = True
                    break
            if progress:
                break
    return best


# ---- running and comparing ---------------------------------------------------------------

TOKEN = re.compile(r'\[|\]|[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)|True|False')


def parse_array(text):
    toks = TOKEN.findall(text)
    pos = 0

    def item():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t == '[':
            out = []
            while toks[pos] != ']':
                out.append(item())
            pos += 1
            return out
        if t in ('True', 'False'):
            return t == 'True'
        return float(t)
    v = item()
    if pos != len(toks):
        raise ValueError('trailing tokens')
    return np.array(v, dtype=np.float64)


def parse_output(out):
    res = {}
    parts = re.split(r'(@@\d+_\d+) ', out)
    for k in range(1, len(parts), 2):
        res[parts[k]] = parts[k + 1]
    return res


def compare(expected, got_text):
    try:
        got = parse_array(got_text)
    except Exception as e:  # noqa: BLE001
        return 'cannot parse the output %r (%s)' % (got_text[:200], e)
    exp = np.asarray(expected, dtype=np.float64)
    if got.shape != exp.shape:
        # NumPy prints an empty array as [] whatever its shape
        if exp.size == 0 and got.size == 0:
            return None
        return 'shape %s, expected %s' % (got.shape, exp.shape)
    if not np.allclose(got, exp, rtol=1e-6, atol=1e-6):
        return 'values differ:\n got      %s\n expected %s' % (
            np.array2string(got.ravel(), threshold=50), np.array2string(exp.ravel(), threshold=50))
    return None


def run(shmapi, text, tmpdir, tag, check=False):
    """Run shmapi on text (written to a file named after tag; with check,
    the file written last is checked with --check instead)."""
    path = os.path.join(tmpdir, 'diff_%s.shm' % tag)
    if not check:
        with open(path, 'w') as f:
            f.write(text)
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    p = subprocess.run([shmapi] + (['--check'] if check else []) + [path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, timeout=240)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def check_check(shmapi, tmpdir, tag, rc, err):
    """--check on the file just run must find exactly the run's static
    errors (none for a program that ran).  A list of problems."""
    crc, cout, cerr = run(shmapi, None, tmpdir, tag, check=True)
    if (crc, cout, cerr) != (rc, '', err):
        return ['--check disagrees with the run: exit %d (run: %d), stdout %r, stderr:\n%s\nrun\'s stderr:\n%s'
                % (crc, rc, cout[:200], cerr.strip()[:2000], err.strip()[:2000])]
    return []


def check_one(shmapi, text, expected, tmpdir, tag):
    """Problems of one program run alone (a list of strings)."""
    rc, out, err = run(shmapi, text, tmpdir, tag)
    if rc != 0:
        return ['exit status %d\n%s' % (rc, err.strip())]
    probs = check_check(shmapi, tmpdir, tag, 0, '')
    if probs:
        return probs
    got = parse_output(out)
    probs = []
    for label, exp in expected:
        if label not in got:
            probs.append('%s: not printed' % label)
            continue
        m = compare(exp, got[label])
        if m:
            probs.append('%s: %s' % (label, m))
    return probs


def bad_line(path, text, line0, bad, mesh):
    """The diagnostic a program with a planted collective must get: its
    position (found from the planted binder's name) and its first words."""
    name, prim, axes, ctrl = bad
    for n, line in enumerate(text.split('\n')):
        m = re.search(r'(?:^|[\s(,])%s(?::\S+)? = (\w+)' % name, line)
        if m:
            names = lambda s: ', '.join(mesh.axes[a] for a in sorted(s))  # noqa: E731
            return '%s:%d:%d: error: %s over {%s} inside control flow whose predicate varies over {%s}:' % (
                path, line0 + n + 1, m.start(1) + 1, prim, names(axes), names(ctrl))
    raise GenError('the planted collective %s is not in the text' % name)


def check_rejected(shmapi, batch, tmpdir, tag):
    """Run programs that must be rejected, all in one file: exit status 1,
    nothing printed, and exactly the expected errors (one per program).
    Returns a list of (program text, problems)."""
    path = os.path.join(tmpdir, 'diff_%s.shm' % tag)
    text, want, line0 = '', [], 0
    for t, bad, mesh in batch:
        want.append(bad_line(path, t, line0, bad, mesh))
        text += t
        line0 += t.count('\n')
    rc, out, err = run(shmapi, text, tmpdir, tag)
    checked = check_check(shmapi, tmpdir, tag, rc, err)
    errors = [l for l in err.split('\n') if ': error: ' in l]
    probs = []
    for (t, _, _), w in zip(batch, want):
        hit = [e for e in errors if e.startswith(w)]
        if not hit:
            probs.append((t, ['not rejected as expected: wanted\n%s\nstderr:\n%s' % (w, err.strip()[:3000])]))
    extra = [e for e in errors if not any(e.startswith(w) for w in want)]
    if extra and not probs:
        probs.append((text, ['unexpected errors:\n' + '\n'.join(extra)]))
    if rc != 1 or out:
        probs.append((text, ['exit status %d (expected 1), stdout %r' % (rc, out[:200])]))
    if checked and not probs:
        probs.append((text, checked))
    return probs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seed', type=int, default=20260)
    ap.add_argument('--count', type=int, default=5000)
    ap.add_argument('--rejects', type=int, help='programs that must be rejected (default: count / 10)')
    ap.add_argument('--batch', type=int, default=150)
    ap.add_argument('--features', help='comma-separated JAX-compatibility points to switch on instead of '
                    'FEATURES ("all", "none"; see KNOWN_FEATURES)')
    ap.add_argument('--workarounds', help='comma-separated known bugs to keep steering around instead of '
                    'WORKAROUNDS ("none": test them all)')
    ap.add_argument('--show', type=int, default=3, help='mismatches to print in full')
    ap.add_argument('--reduce', type=int, default=1, help='wrong answers of control-flow programs to reduce '
                    'to a smaller program that still disagrees (each within a minute)')
    ap.add_argument('--keep', help='write the generated batches to this directory')
    ap.add_argument('-v', '--verbose', action='store_true')
    a = ap.parse_args()
    if a.features is not None:
        want = set(KNOWN_FEATURES) if a.features == 'all' else set() if a.features == 'none' else \
            set(f for f in a.features.split(',') if f)
        unknown = want - set(KNOWN_FEATURES)
        if unknown:
            ap.error('unknown features: %s (known: %s)' % (', '.join(sorted(unknown)),
                                                          ', '.join(sorted(KNOWN_FEATURES))))
        FEATURES.clear()
        FEATURES.update(want)
    if a.workarounds is not None:
        keep = set() if a.workarounds == 'none' else set(w for w in a.workarounds.split(',') if w)
        WORKAROUNDS.intersection_update(keep)
    nrej = a.count // 10 if a.rejects is None else a.rejects
    shmapi = os.environ.get('SHMAPI') or 'build/shmapi'
    rng = random.Random(a.seed)
    programs, rejects = [], []
    uid = nctl = 0
    while len(programs) < a.count:
        uid += 1
        ctl = rng.random() < CTL_FRACTION
        g = CtlGen(rng, uid) if ctl else Gen(rng, uid)
        r = g.program()
        if r is None:
            continue
        programs.append((r[0], r[1], g if ctl else None))
        nctl += ctl
    while len(rejects) < nrej:
        uid += 1
        g = CtlGen(rng, uid, plant=True)
        r = g.program()
        if r is None:
            continue
        rejects.append((r[0], g.bad, g.mesh))
    tmpdir = a.keep or tempfile.mkdtemp(prefix='shm-diff-')
    os.makedirs(tmpdir, exist_ok=True)
    failures = []
    checked = 0
    for b0 in range(0, len(programs), a.batch):
        batch = programs[b0:b0 + a.batch]
        text = ''.join(t for t, _, _ in batch)
        rc, out, err = run(shmapi, text, tmpdir, 'batch%d' % (b0 // a.batch))
        if rc != 0 or check_check(shmapi, tmpdir, 'batch%d' % (b0 // a.batch), 0, err):
            if a.verbose:
                print('batch %d failed (exit %d); rerunning its programs one by one' % (b0 // a.batch, rc))
            for t, exp, g in batch:
                probs = check_one(shmapi, t, exp, tmpdir, 'one')
                if probs:
                    failures.append((t, probs, g))
            checked += len(batch)
            continue
        got = parse_output(out)
        for t, exp, g in batch:
            probs = []
            for label, e in exp:
                if label not in got:
                    probs.append('%s: not printed' % label)
                    continue
                m = compare(e, got[label])
                if m:
                    probs.append('%s: %s' % (label, m))
            if probs:
                failures.append((t, probs, g))
        checked += len(batch)
    rbatch = max(1, a.batch // 4)
    nrej_failed = 0
    for b0 in range(0, len(rejects), rbatch):
        batch = rejects[b0:b0 + rbatch]
        probs = check_rejected(shmapi, batch, tmpdir, 'rejects%d' % (b0 // rbatch))
        if probs and len(batch) > 1:
            if a.verbose:
                print('rejected batch %d failed; rerunning its programs one by one' % (b0 // rbatch))
            probs = []
            for one in batch:
                probs += check_rejected(shmapi, [one], tmpdir, 'one')
        failures += [(t, p, None) for t, p in probs]
        nrej_failed += len(probs)
    nres = sum(len(e) for _, e, _ in programs)
    for t, probs, _ in failures[:a.show]:
        print('---- mismatch ' + '-' * 60)
        print(t, end='')
        for p in probs:
            print('  >> ' + p.replace('\n', '\n     '))
    if a.keep:
        for n, (t, probs, _) in enumerate(failures):
            with open(os.path.join(tmpdir, 'fail%d.shm' % n), 'w') as f:
                f.write(t + ''.join('# >> ' + p.replace('\n', '\n# ') + '\n' for p in probs))
    reduced = 0
    for t, probs, g in failures:
        if reduced >= a.reduce:
            break
        if g is None or not any('values differ' in p for p in probs):
            continue
        r = reduce_program(shmapi, g, tmpdir)
        if r:
            reduced += 1
            print('---- reduced ' + '-' * 61)
            print(r, end='')
    if not a.keep and not failures:
        for f in os.listdir(tmpdir):
            os.unlink(os.path.join(tmpdir, f))
        os.rmdir(tmpdir)
    if failures:
        print('the generated files are in %s' % tmpdir)
    print('%d programs (%d with control flow, %d results, seed %d, features: %s): %d passed, %d failed; '
          '%d programs to reject: %d passed, %d failed' % (
              checked, nctl, nres, a.seed, ','.join(sorted(FEATURES)) or 'none',
              checked - (len(failures) - nrej_failed), len(failures) - nrej_failed,
              len(rejects), len(rejects) - nrej_failed, nrej_failed))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
