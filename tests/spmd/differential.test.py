#!/usr/bin/env python3
# timeout: 300
"""Randomized differential test of shard_map and the collectives.

Generates random shm programs -- a random mesh (1 to 3 axes of sizes 1 to 4),
random inputs split by random in_specs (None, an axis, a tuple of axes,
omitted trailing dimensions, quoted names, a single spec for one argument),
a body that is a random chain of collectives (psum, pmax, pmin, pmean,
pbroadcast, all_gather tiled/untiled, all_gather_invariant, psum_scatter,
pscatter, ppermute, all_to_all, axis_index, over one axis or a tuple of axes),
elementwise operations, closures over top-level values, cond on an index
that varies between instances (branches with or without collectives over
the other axes), cond on an invariant index, fori_loops of ppermutes -- and
random out_specs that mention every axis a result varies along (and maybe
more: tiling) -- and compares what shmapi
prints with a NumPy model of shard_map's reference semantics: the inputs are
split per in_specs into per-device lists of blocks, every collective acts on
the blocks of each group of devices as the seed's collective_ref functions
do, and the results are assembled per out_specs.

Many programs run in one shmapi invocation (one file of many shard_maps,
each result printed after a unique label); when a batch fails as a whole,
its programs are rerun one by one to find the culprits.

    SHMAPI=build/shmapi python3 tests/spmd/differential.test.py [--seed N]
        [--count N] [--batch N] [--show N] [--keep DIR] [-v]

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

    def make_input(self, mesh, k):
        rng = self.rng
        rank = rng.choice([0, 1, 1, 2, 2, 2, 3])
        dtype = rng.choice(['i32', 'i32', 'f32'])
        dims = self.random_spec_dims(rank, range(len(mesh.sizes)))
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
            d = max(range(rank), key=lambda q: gshape[q])
            if dims[d]:
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

    def op_collective(self, mesh, pool, v, among=None):
        rng = self.rng
        kinds = ['psum', 'pmax', 'pmin', 'pmean', 'pbroadcast', 'all_gather', 'all_gather_invariant',
                 'psum_scatter', 'pscatter', 'ppermute', 'all_to_all']
        kind = rng.choice(kinds)
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
            if axis != 0 or rng.random() < 0.5:
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
            if dim != 0 or rng.random() < 0.5:
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
            params = ['axis_name=%s' % axes_text(mesh, axes, rng), 'split_axis=%d' % sa, 'concat_axis=%d' % ca]
            if tiled or rng.random() < 0.5:
                params.append('tiled=%s' % tiled)
            rng.shuffle(params)
            line = '%s = all_to_all[%s] %s' % (name, ', '.join(params), v.name)
            return line, Val(name, v.dtype, shape, v.vma | frozenset(axes), blocks)
        return None

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
            self.body.append(line)
            pool.append(nv)
            made += 1
        # results: the last value and maybe another
        return [pool[-1]] + ([rng.choice(pool)] if rng.random() < 0.4 else [])

    def program(self):
        rng = self.rng
        mesh = self.make_mesh()
        self.lines_top.append('mesh %s = %s' % (mesh.name, mesh.text()))
        nin = rng.choice([0, 1, 1, 1, 2, 2, 3])
        inputs = [self.make_input(mesh, k) for k in range(nin)]
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
        in_specs = [spec_text(mesh, dims, rng) for (_, _, dims, _) in inputs]
        self.form = {
            'mesh': mesh.name, 'params': params, 'args': ' '.join(X for (X, _, _, _) in inputs),
            'in_specs': in_specs, 'in_bare': len(in_specs) == 1 and rng.random() < 0.5,
            # (a zero-parameter def is checked where it is defined, outside any
            # mesh, so a zero-argument body with collectives uses the decorator)
            'decorator': rng.random() < 0.7 or not inputs,
            'out_bare': rng.random() < 0.5,
        }
        self.outs = [(v, spec_text(mesh, dims, rng), g) for v, dims, g in outs]
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


def run(shmapi, text, tmpdir, tag):
    path = os.path.join(tmpdir, 'diff_%s.shm' % tag)
    with open(path, 'w') as f:
        f.write(text)
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    p = subprocess.run([shmapi, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, env=env, timeout=240)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def check_one(shmapi, text, expected, tmpdir, tag):
    """Problems of one program run alone (a list of strings)."""
    rc, out, err = run(shmapi, text, tmpdir, tag)
    if rc != 0:
        return ['exit status %d\n%s' % (rc, err.strip())]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seed', type=int, default=20260)
    ap.add_argument('--count', type=int, default=2000)
    ap.add_argument('--batch', type=int, default=150)
    ap.add_argument('--show', type=int, default=3, help='mismatches to print in full')
    ap.add_argument('--keep', help='write the generated batches to this directory')
    ap.add_argument('-v', '--verbose', action='store_true')
    a = ap.parse_args()
    shmapi = os.environ.get('SHMAPI') or 'build/shmapi'
    rng = random.Random(a.seed)
    programs = []
    uid = 0
    while len(programs) < a.count:
        uid += 1
        g = Gen(rng, uid)
        r = g.program()
        if r is None:
            continue
        programs.append(r)
    tmpdir = a.keep or tempfile.mkdtemp(prefix='shm-diff-')
    os.makedirs(tmpdir, exist_ok=True)
    failures = []
    checked = 0
    for b0 in range(0, len(programs), a.batch):
        batch = programs[b0:b0 + a.batch]
        text = ''.join(t for t, _ in batch)
        rc, out, _ = run(shmapi, text, tmpdir, 'batch%d' % (b0 // a.batch))
        if rc != 0:
            if a.verbose:
                print('batch %d failed (exit %d); rerunning its programs one by one' % (b0 // a.batch, rc))
            for t, exp in batch:
                probs = check_one(shmapi, t, exp, tmpdir, 'one')
                if probs:
                    failures.append((t, probs))
            checked += len(batch)
            continue
        got = parse_output(out)
        for t, exp in batch:
            probs = []
            for label, e in exp:
                if label not in got:
                    probs.append('%s: not printed' % label)
                    continue
                m = compare(e, got[label])
                if m:
                    probs.append('%s: %s' % (label, m))
            if probs:
                failures.append((t, probs))
        checked += len(batch)
    nres = sum(len(e) for _, e in programs)
    for t, probs in failures[:a.show]:
        print('---- mismatch ' + '-' * 60)
        print(t, end='')
        for p in probs:
            print('  >> ' + p.replace('\n', '\n     '))
    if not a.keep and not failures:
        for f in os.listdir(tmpdir):
            os.unlink(os.path.join(tmpdir, f))
        os.rmdir(tmpdir)
    if failures:
        print('the generated files are in %s' % tmpdir)
    print('%d programs (%d results, seed %d): %d passed, %d failed' % (
        checked, nres, a.seed, checked - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
