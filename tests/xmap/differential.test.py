#!/usr/bin/env python3
# timeout: 300
"""Randomized differential test of xmap against a NumPy model.

Each random program is an xmap equation over 1 to 3 named axes (sizes 1 to
4) of random arguments (named dimensions anywhere, given as dicts or as
prefix lists), whose body is a random chain of operations on values with
named axes: elementwise operations that broadcast by name, reductions over
positional and named axes, psum, pmax, pmin and pmean over named axes,
all_gather (tiled and untiled), ppermute (perm or shift), axis_index over
one or two axes, pdot and dot_general, shape operations (transpose,
reshape, broadcast_in_dim, expand_dims, rev, slice, cumsum, concatenate),
select_n, a fori_loop whose body closes over a value with named axes, and
a cond.  Its results leave through random out_axes (every named axis a
result has, maybe more: a broadcast).

The same program runs under several axis_resources: none (vectorized),
and random assignments of named axes to the axes of a mesh of 2, 4 or
2 x 2 devices.  axis_resources never changes results, so every run must
print what the model computes.

The model evaluates the body once per instance, an instance being one
index along every named axis (the semantics of pmap over all of them): a
collective combines the values of the instances that differ only along
its axes.  It does not share anything with shmapi's lowering (batching
rules, shard_map), so it checks it.

Integer arithmetic (i32) is exact in both; pmean's f32 results are used
only by elementwise operations, which are exact too, so outputs are
compared as text (shmapi prints as NumPy does).

    SHMAPI=build/shmapi python3 tests/xmap/differential.test.py [--seed N] [--count N] [-v]
"""

import argparse
import itertools
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

MESHES = {'m2': {'x': 2}, 'm4': {'x': 4}, 'm22': {'x': 2, 'y': 2}}
AXES = ['a', 'b', 'c']


class Val:
    def __init__(self, name, dtype, shape, named, model):
        self.name, self.dtype, self.shape, self.named, self.model = name, dtype, tuple(shape), frozenset(named), model


class Prog:
    """One random xmap program and its model."""

    def __init__(self, rng, tag):
        self.rng = rng
        self.tag = tag
        n = rng.randint(1, 3)
        self.axes = rng.sample(AXES, n)
        self.sizes = {a: rng.choice([1, 2, 2, 3, 4, 4]) for a in self.axes}
        self.insts = list(itertools.product(*[range(self.sizes[a]) for a in self.axes]))
        self.lines = []
        self.pool = []
        self.counter = 0
        self.make_args()
        for _ in range(rng.randint(2, 8)):
            self.step()
        self.make_outs()

    # ---- names and values ------------------------------------------------------------

    def fresh(self, base='v'):
        self.counter += 1
        return '%s%d' % (base, self.counter)

    def idx(self, inst, a):
        return inst[self.axes.index(a)]

    def add(self, dtype, shape, named, model, line=None, name=None):
        name = name or self.fresh()
        v = Val(name, dtype, shape, named, model)
        if line is not None:
            self.lines.append('  %s = %s' % (name, line))
        self.pool.append(v)
        return v

    def rand_array(self, shape):
        return np.array(self.rng.choices(range(-3, 4), k=int(np.prod(shape)) if shape else 1),
                        dtype=np.int32).reshape(shape)

    # ---- the arguments ----------------------------------------------------------------

    def make_args(self):
        rng = self.rng
        nargs = rng.randint(1, 3)
        self.args, self.in_axes, self.params = [], [], []
        mapped = set()
        for i in range(nargs):
            pos = tuple(rng.choice([2, 3]) for _ in range(rng.randint(0, 2)))
            named = [a for a in self.axes if rng.random() < 0.6]
            if i == nargs - 1:
                named += [a for a in self.axes if a not in mapped and a not in named and rng.random() < 0.7]
            rng.shuffle(named)
            mapped |= set(named)
            rank = len(pos) + len(named)
            dims = sorted(rng.sample(range(rank), len(named)))
            order = list(named)
            where = dict(zip(dims, order))
            shape, it = [], iter(pos)
            for d in range(rank):
                shape.append(self.sizes[where[d]] if d in where else next(it))
            g = self.rand_array(tuple(shape))
            if dims == list(range(len(named))) and rng.random() < 0.6:
                items = order + (['...'] if rng.random() < 0.7 or pos else [])
                spec = '[%s]' % ', '.join(items)
            else:
                items = list(where.items())
                rng.shuffle(items)
                spec = '{%s}' % ', '.join('%d: %s' % (d, a) for d, a in items)
            self.args.append(g)
            self.in_axes.append(spec)
            pname = 'p%d' % i
            self.params.append(pname)

            def model(inst, g=g, where=where, rank=rank):
                sl = tuple(self.idx(inst, where[d]) if d in where else slice(None) for d in range(rank))
                return g[sl]
            self.add('i32', pos, named, {inst: model(inst) for inst in self.insts}, name=pname)
        self.axis_sizes = {a: self.sizes[a] for a in self.axes if a not in mapped}

    # ---- the body ----------------------------------------------------------------------

    def pick(self, pred=lambda v: True):
        c = [v for v in self.pool if pred(v)]
        return self.rng.choice(c) if c else None

    def step(self):
        rng = self.rng
        ops = [self.op_elem] * 5 + [self.op_unary, self.op_reduce, self.op_reduce, self.op_psum, self.op_psum,
                                    self.op_pmean, self.op_gather, self.op_gather, self.op_ppermute, self.op_ppermute,
                                    self.op_axis_index, self.op_pdot, self.op_dot, self.op_shape, self.op_shape,
                                    self.op_shape, self.op_select, self.op_fori, self.op_cond, self.op_helper]
        for _ in range(10):
            if rng.choice(ops)():
                return

    def op_elem(self):
        x = self.pick()
        ys = [v for v in self.pool if v.dtype == x.dtype and (v.shape == x.shape or not v.shape or not x.shape)]
        op = self.rng.choice(['add', 'sub', 'mul', 'max', 'min'])
        f = {'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'max': np.maximum, 'min': np.minimum}[op]
        if self.rng.random() < 0.25 or not ys:
            lit = self.rng.randint(-2, 3)
            text = '%d' % lit if x.dtype == 'i32' else '%d.0' % lit
            c = np.array(lit, dtype=np.int32 if x.dtype == 'i32' else np.float32)
            m = {i: f(x.model[i], c).astype(x.model[i].dtype) for i in self.insts}
            self.add(x.dtype, x.shape, x.named, m, '%s %s %s' % (op, x.name, text))
            return True
        y = self.rng.choice(ys)
        shape = x.shape if x.shape else y.shape
        m = {i: np.asarray(f(x.model[i], y.model[i])) for i in self.insts}
        self.add(x.dtype, shape, x.named | y.named, m, '%s %s %s' % (op, x.name, y.name))
        return True

    def op_unary(self):
        x = self.pick()
        op = self.rng.choice(['neg', 'abs'])
        f = np.negative if op == 'neg' else np.abs
        self.add(x.dtype, x.shape, x.named, {i: f(x.model[i]) for i in self.insts}, '%s %s' % (op, x.name))
        return True

    def group(self, inst, axes):
        """The instances that differ from inst only along axes, in row-major order of axes."""
        out = []
        for combo in itertools.product(*[range(self.sizes[a]) for a in axes]):
            j = list(inst)
            for a, k in zip(axes, combo):
                j[self.axes.index(a)] = k
            out.append(tuple(j))
        return out

    def op_reduce(self):
        x = self.pick(lambda v: v.dtype == 'i32')
        if x is None:
            return False
        pos = [d for d in range(len(x.shape)) if self.rng.random() < 0.5]
        named = [a for a in self.axes if (a in x.named and self.rng.random() < 0.6) or self.rng.random() < 0.1]
        if not pos and not named:
            return False
        op = self.rng.choice(['reduce_sum', 'reduce_max', 'reduce_min'])
        f = {'reduce_sum': np.sum, 'reduce_max': np.max, 'reduce_min': np.min}[op]
        m = {}
        for i in self.insts:
            vals = [np.asarray(f(x.model[j], axis=tuple(pos)), dtype=np.int32) if pos else x.model[j]
                    for j in self.group(i, named)]
            m[i] = np.asarray(f(np.stack(vals), axis=0), dtype=np.int32)
        entries = [str(d) for d in pos] + named
        self.rng.shuffle(entries)
        shape = tuple(s for d, s in enumerate(x.shape) if d not in pos)
        self.add('i32', shape, x.named - set(named), m, '%s[axes=(%s,)] %s' % (op, ', '.join(entries), x.name))
        return True

    def pick_axes(self, k=None):
        k = k or self.rng.randint(1, len(self.axes))
        return self.rng.sample(self.axes, min(k, len(self.axes)))

    def op_psum(self):
        x = self.pick(lambda v: v.dtype == 'i32')
        if x is None:
            return False
        axes = self.pick_axes()
        op = self.rng.choice(['psum', 'pmax', 'pmin'])
        f = {'psum': np.sum, 'pmax': np.max, 'pmin': np.min}[op]
        m = {i: np.asarray(f(np.stack([x.model[j] for j in self.group(i, axes)]), axis=0), dtype=np.int32)
             for i in self.insts}
        ax = axes[0] if len(axes) == 1 and self.rng.random() < 0.5 else '(%s)' % ', '.join(axes)
        self.add('i32', x.shape, x.named - set(axes), m, '%s[axes=%s] %s' % (op, ax, x.name))
        return True

    def op_pmean(self):
        x = self.pick(lambda v: v.dtype == 'i32')
        if x is None:
            return False
        axes = self.pick_axes()
        n = int(np.prod([self.sizes[a] for a in axes]))
        m = {i: (np.sum(np.stack([x.model[j] for j in self.group(i, axes)]).astype(np.float32), axis=0)
                 / np.float32(n)).astype(np.float32) for i in self.insts}
        self.add('f32', x.shape, x.named - set(axes), m, 'pmean[axes=(%s,)] %s' % (', '.join(axes), x.name))
        return True

    def op_gather(self):
        x = self.pick(lambda v: len(v.shape) <= 2)
        a = self.rng.choice(self.axes)
        tiled = bool(x.shape) and self.rng.random() < 0.5
        k = self.rng.randint(0, len(x.shape) - 1) if tiled else self.rng.randint(0, len(x.shape))
        m = {}
        for i in self.insts:
            vals = [x.model[j] for j in self.group(i, [a])]
            m[i] = np.concatenate(vals, axis=k) if tiled else np.stack(vals, axis=k)
        shape = list(x.shape)
        if tiled:
            shape[k] *= self.sizes[a]
        else:
            shape.insert(k, self.sizes[a])
        self.add(x.dtype, shape, x.named - {a}, m,
                 'all_gather[axis_name=%s, axis=%d, tiled=%s] %s' % (a, k, tiled, x.name))
        return True

    def op_ppermute(self):
        x = self.pick()
        a = self.rng.choice(self.axes)
        n = self.sizes[a]
        if self.rng.random() < 0.3:
            s = self.rng.randint(-3, 3)
            pairs = [(j, (j + s) % n) for j in range(n)]
            text = 'shift=%d' % s
        else:
            src = self.rng.sample(range(n), self.rng.randint(0, n))
            dst = self.rng.sample(range(n), len(src))
            pairs = list(zip(src, dst))
            text = 'perm=(%s)' % ''.join('(%d, %d), ' % p for p in pairs) if pairs else 'perm=()'
        frm = {d: s_ for s_, d in pairs}
        m = {}
        for i in self.insts:
            k = self.idx(i, a)
            if k in frm:
                j = list(i)
                j[self.axes.index(a)] = frm[k]
                m[i] = x.model[tuple(j)]
            else:
                m[i] = np.zeros_like(x.model[i])
        self.add(x.dtype, x.shape, x.named | {a}, m, 'ppermute[axis_name=%s, %s] %s' % (a, text, x.name))
        return True

    def op_axis_index(self):
        axes = self.pick_axes(self.rng.randint(1, 2))
        m = {}
        for i in self.insts:
            v = 0
            for a in axes:
                v = v * self.sizes[a] + self.idx(i, a)
            m[i] = np.array(v, dtype=np.int32)
        ax = axes[0] if len(axes) == 1 else '(%s)' % ', '.join(axes)
        self.add('i32', (), set(axes), m, 'axis_index[axis_name=%s]' % ax)
        return True

    def op_pdot(self):
        x = self.pick(lambda v: v.dtype == 'i32' and len(v.shape) <= 1)
        if x is None:
            return False
        ys = [v for v in self.pool if v.dtype == 'i32' and v.shape == x.shape]
        y = self.rng.choice(ys)
        axes = self.pick_axes()
        m = {}
        for i in self.insts:
            m[i] = np.asarray(sum(np.asarray(np.sum(x.model[j] * y.model[j]), dtype=np.int32)
                                  for j in self.group(i, axes)), dtype=np.int32)
        pc = '((0,), (0,))' if x.shape else '((), ())'
        self.add('i32', (), (x.named | y.named) - set(axes), m,
                 'pdot[axis_name=(%s,), pos_contract=%s] %s %s' % (', '.join(axes), pc, x.name, y.name))
        return True

    def op_dot(self):
        x = self.pick(lambda v: v.dtype == 'i32' and len(v.shape) in (1, 2))
        if x is None:
            return False
        ys = [v for v in self.pool if v.dtype == 'i32' and len(v.shape) in (1, 2) and v.shape[0] == x.shape[-1]]
        if not ys:
            return False
        y = self.rng.choice(ys)
        m = {i: np.tensordot(x.model[i], y.model[i], axes=([len(x.shape) - 1], [0])).astype(np.int32)
             for i in self.insts}
        shape = x.shape[:-1] + y.shape[1:]
        self.add('i32', shape, x.named | y.named, m, 'dot_general[dimension_numbers=(([%d], [0]), ([], []))] %s %s'
                 % (len(x.shape) - 1, x.name, y.name))
        return True

    def op_shape(self):
        rng = self.rng
        x = self.pick()
        r = len(x.shape)
        kind = rng.choice(['transpose', 'reshape', 'bcast', 'expand', 'rev', 'slice', 'cumsum', 'concat'])
        if kind == 'transpose' and r == 2:
            m = {i: np.transpose(x.model[i]) for i in self.insts}
            self.add(x.dtype, x.shape[::-1], x.named, m, 'transpose[permutation=(1, 0)] %s' % x.name)
        elif kind == 'reshape' and r == 2:
            n = x.shape[0] * x.shape[1]
            m = {i: x.model[i].reshape(n) for i in self.insts}
            self.add(x.dtype, (n,), x.named, m, 'reshape[new_sizes=(%d,)] %s' % (n, x.name))
        elif kind == 'bcast' and r == 0:
            n = rng.choice([2, 3])
            m = {i: np.broadcast_to(x.model[i], (n,)).copy() for i in self.insts}
            self.add(x.dtype, (n,), x.named, m, 'broadcast_in_dim[shape=(%d,), broadcast_dimensions=()] %s' % (n, x.name))
        elif kind == 'expand' and r <= 1:
            d = rng.randint(0, r)
            m = {i: np.expand_dims(x.model[i], d) for i in self.insts}
            shape = list(x.shape)
            shape.insert(d, 1)
            self.add(x.dtype, shape, x.named, m, 'expand_dims[dimensions=(%d,)] %s' % (d, x.name))
        elif kind == 'rev' and r >= 1:
            d = rng.randint(0, r - 1)
            m = {i: np.flip(x.model[i], d) for i in self.insts}
            self.add(x.dtype, x.shape, x.named, m, 'rev[dimensions=(%d,)] %s' % (d, x.name))
        elif kind == 'slice' and r == 1 and x.shape[0] >= 2:
            n = x.shape[0]
            m = {i: x.model[i][1:n] for i in self.insts}
            self.add(x.dtype, (n - 1,), x.named, m, 'slice[start_indices=(1,), limit_indices=(%d,)] %s' % (n, x.name))
        elif kind == 'cumsum' and r >= 1 and x.dtype == 'i32':
            d = rng.randint(0, r - 1)
            m = {i: np.cumsum(x.model[i], axis=d).astype(np.int32) for i in self.insts}
            self.add(x.dtype, x.shape, x.named, m, 'cumsum[axis=%d] %s' % (d, x.name))
        elif kind == 'concat' and r == 1:
            ys = [v for v in self.pool if v.dtype == x.dtype and len(v.shape) == 1]
            y = rng.choice(ys)
            m = {i: np.concatenate([x.model[i], y.model[i]]) for i in self.insts}
            self.add(x.dtype, (x.shape[0] + y.shape[0],), x.named | y.named, m,
                     'concatenate[dimension=0] %s %s' % (x.name, y.name))
        else:
            return False
        return True

    def op_select(self):
        x = self.pick()
        ys = [v for v in self.pool if v.dtype == x.dtype and v.shape == x.shape]
        y = self.rng.choice(ys)
        p = self.fresh('q')
        self.lines.append('  %s = gt %s %s' % (p, x.name, y.name))
        m = {i: np.where(x.model[i] > y.model[i], y.model[i], x.model[i]) for i in self.insts}
        self.add(x.dtype, x.shape, x.named | y.named, m, 'select_n %s %s %s' % (p, x.name, y.name))
        return True

    def op_fori(self):
        x = self.pick()
        ws = [v for v in self.pool if v.dtype == x.dtype and (v.shape == x.shape or not v.shape)]
        w = self.rng.choice(ws)
        k = self.rng.randint(0, 3)
        fn = self.fresh('step')
        self.lines.append('  def %s(i, c) {' % fn)
        self.lines.append('    d = add c %s' % w.name)
        self.lines.append('    return d')
        self.lines.append('  }')
        m = {}
        for i in self.insts:
            c = x.model[i]
            for _ in range(k):
                c = np.asarray(c + w.model[i])
            m[i] = np.asarray(c, dtype=x.model[i].dtype)
        named = x.named | w.named if k else x.named | w.named
        self.add(x.dtype, x.shape, named, m, 'fori_loop[lower=0, upper=%d, body=%s] %s' % (k, fn, x.name))
        return True

    def op_helper(self):
        """A call of a def that defines a closure over its own variable."""
        x = self.pick()
        fn = self.fresh('h')
        self.lines += ['  def %s(u) {' % fn, '    t = add u u', '    def inner(k, c) {', '      d = add c t',
                       '      return d', '    }', '    r = fori_loop[lower=0, upper=2, body=inner] u',
                       '    return r', '  }']
        m = {i: np.asarray(x.model[i] * x.model[i].dtype.type(5)) for i in self.insts}
        self.add(x.dtype, x.shape, x.named, m, '%s %s' % (fn, x.name))
        return True

    def op_cond(self):
        x = self.pick()
        k = self.rng.randint(0, 1)
        one = '1' if x.dtype == 'i32' else '1.0'
        b0, b1 = self.fresh('neg'), self.fresh('inc')
        self.lines.append('  def %s(u) {' % b0)
        self.lines.append('    r = neg u')
        self.lines.append('    return r')
        self.lines.append('  }')
        self.lines.append('  def %s(u) {' % b1)
        self.lines.append('    r = add u %s' % one)
        self.lines.append('    return r')
        self.lines.append('  }')
        m = {i: (np.negative(x.model[i]) if k == 0 else x.model[i] + x.model[i].dtype.type(1)) for i in self.insts}
        self.add(x.dtype, x.shape, x.named, m, 'cond[branches=(%s, %s)] %d %s' % (b0, b1, k, x.name))
        return True

    # ---- the results ------------------------------------------------------------------------

    def make_outs(self):
        rng = self.rng
        cands = self.pool[len(self.params):] or self.pool
        self.outs = []
        for v in rng.sample(cands, min(len(cands), rng.randint(1, 2))):
            named = sorted(v.named) + [a for a in self.axes if a not in v.named and rng.random() < 0.2]
            rng.shuffle(named)
            rank = len(v.shape) + len(named)
            if rank > 4:
                continue
            dims = sorted(rng.sample(range(rank), len(named)))
            where = dict(zip(dims, named))
            if dims == list(range(len(named))) and rng.random() < 0.5:
                items = named + (['...'] if v.shape or rng.random() < 0.5 else [])
                spec = '[%s]' % ', '.join(items)
            else:
                spec = '{%s}' % ', '.join('%d: %s' % (d, a) for d, a in where.items())
            self.outs.append((v, where, rank, spec))
        if not self.outs:
            v = self.pool[-1]
            named = sorted(v.named)
            self.outs.append((v, dict(enumerate(named)), len(v.shape) + len(named),
                              '[%s%s]' % (''.join(a + ', ' for a in named), '...')))

    def expected(self, out):
        v, where, rank, _ = out
        shape = []
        it = iter(v.shape)
        for d in range(rank):
            shape.append(self.sizes[where[d]] if d in where else next(it))
        res = np.zeros(shape, dtype=np.int32 if v.dtype == 'i32' else np.float32)
        for i in self.insts:
            sl = tuple(self.idx(i, where[d]) if d in where else slice(None) for d in range(rank))
            res[sl] = v.model[i]
        return res

    # ---- program text --------------------------------------------------------------------------

    def body(self, fname):
        head = '  def %s(%s) {' % (fname, ', '.join(self.params))
        outs = ', '.join(o[0].name for o in self.outs)
        return [head] + ['  ' + ln for ln in self.lines] + ['    return %s' % outs, '  }']

    def resources(self, rng):
        """A random assignment of named axes to distinct axes of a random mesh."""
        mesh = rng.choice(list(MESHES))
        free = list(MESHES[mesh])
        res = {}
        for a in self.axes:
            ok = [x for x in free if self.sizes[a] % MESHES[mesh][x] == 0]
            if ok and rng.random() < 0.7:
                x = rng.choice(ok)
                free.remove(x)
                res[a] = x
        return mesh, res

    def text(self, variants):
        lines = []
        for k, g in enumerate(self.args):
            name = 'g%s_%d' % (self.tag, k)
            flat = ', '.join(str(int(v)) for v in g.ravel())
            n = g.size
            lines.append('%s_f:i32[%d] = [%s]' % (name, n, flat) if n else '%s_f:i32[0] = []' % name)
            lines.append('%s = reshape[new_sizes=(%s)] %s_f' % (name, ''.join('%d, ' % s for s in g.shape), name))
        fname = 'body%s' % self.tag
        lines += [ln[2:] for ln in self.body(fname)]
        args = ' '.join('g%s_%d' % (self.tag, k) for k in range(len(self.args)))
        sizes = '{%s}' % ', '.join('%s: %d' % kv for kv in self.axis_sizes.items())
        outs_spec = '(%s,)' % ', '.join(o[3] for o in self.outs)
        ins_spec = '(%s,)' % ', '.join(self.in_axes)
        for j, (mesh, res) in enumerate(variants):
            binders = ', '.join('r%s_%d_%d' % (self.tag, j, k) for k in range(len(self.outs)))
            rtext = '{%s}' % ', '.join('%s: %s' % kv for kv in res.items())
            lines.append('%s = xmap[f=%s, in_axes=%s, out_axes=%s, axis_sizes=%s, axis_resources=%s, mesh=%s] %s'
                         % (binders, fname, ins_spec, outs_spec, sizes, rtext, mesh, args))
            for k in range(len(self.outs)):
                lines.append('print "R%s_%d_%d", r%s_%d_%d' % (self.tag, j, k, self.tag, j, k))
        return lines


def expected_text(prog, variants):
    out = []
    for j in range(len(variants)):
        for k, o in enumerate(prog.outs):
            out.append('R%s_%d_%d %s' % (prog.tag, j, k, str(prog.expected(o))))
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--count', type=int, default=3000)
    ap.add_argument('--batch', type=int, default=100)
    ap.add_argument('-v', action='store_true')
    a = ap.parse_args()
    shmapi = os.environ.get('SHMAPI') or 'build/shmapi'
    rng = random.Random(a.seed)
    failed = 0
    header = ['mesh %s = {%s}' % (m, ', '.join('%s: %d' % kv for kv in axes.items())) for m, axes in MESHES.items()]
    with tempfile.TemporaryDirectory(prefix='shm-xmap-') as tmp:
        done = 0
        while done < a.count:
            n = min(a.batch, a.count - done)
            progs, lines, want = [], list(header), ''
            for k in range(n):
                p = Prog(rng, str(done + k))
                variants = [('m2', {})] + [p.resources(rng) for _ in range(2)]
                progs.append((p, variants))
                lines += p.text(variants)
                want += expected_text(p, variants)
            path = os.path.join(tmp, 'batch%d.shm' % done)
            with open(path, 'w') as f:
                f.write('\n'.join(lines) + '\n')
            env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
            r = subprocess.run([shmapi, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=240)
            got = r.stdout.decode()
            if r.returncode or got != want:
                failed += 1
                print('not ok - the batch of programs %d.. (seed %d): exit %d' % (done, a.seed, r.returncode))
                print(r.stderr.decode()[:3000])
                for p, v in progs:
                    exp = expected_text(p, v)
                    if exp not in got:
                        mine = '\n'.join(ln for ln in got.split('\nR') if ln.startswith('%s_' % p.tag))
                        print('--- program %s:\n%s\n--- expected:\n%s--- got:\n%s' % (
                            p.tag, '\n'.join(header + p.text(v)), exp, mine[:2000]))
                        break
                break
            done += n
    print('%d programs (seed %d), %d failed' % (a.count if not failed else done, a.seed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
