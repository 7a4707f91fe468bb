#!/usr/bin/env python3
# timeout: 300
"""Randomized differential test of pmap against a NumPy model.

Each random program is a @pmap over axis i (size 1 to 4) of random
arguments mapped along random dimensions (in_axes an int, negative ints,
None), whose body is a random chain of elementwise operations, positional
reductions, collectives over i (psum, pmax, pmin, pmean, all_gather tiled
and untiled, ppermute, axis_index) and calls of a nested @pmap over axis j
(its own in_axes and out_axes, collectives over j and over (i, j),
axis_index j); its results leave through random out_axes (an int, or None
for a result that does not depend on i).  Every other program is written
as JAX prints it instead: a jaxpr whose pmaps, outer and nested, are
xla_pmap equations (in_axes normalised, mapped_invars, axis_size), so
JAX's printed pmap and @pmap are held to the same model.

The model is pmap's definition: the body runs once per index of the
mapped dimension on that slice, a collective combines the instances of
its axes, and results are stacked where out_axes says; a nested pmap runs
once per index of its own dimension within each outer instance.  Integer
arithmetic only (pmean's f32 results are only printed), so outputs are
compared as text.

    SHMAPI=build/shmapi python3 tests/pmap/differential.test.py [--seed N] [--count N]
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402


class V:
    """A value of a body: its positional shape, whether it may differ
    between the instances of each axis, and its model (instance -> array)."""

    def __init__(self, name, shape, dep, model, dtype='i32'):
        self.name, self.shape, self.dep, self.model, self.dtype = name, tuple(shape), frozenset(dep), model, dtype


class Prog:
    def __init__(self, rng, tag):
        self.rng, self.tag = rng, tag
        self.jax = int(tag) % 2 == 1       # written as JAX prints it (xla_pmap)
        self.n = rng.randint(1, 4)
        self.insts = [(k,) for k in range(self.n)]
        self.lines, self.defs = [], []
        self.counter = 0
        self.pool = []
        self.make_args()
        for _ in range(rng.randint(1, 6)):
            for _ in range(10):
                if self.step():
                    break
        self.make_outs()

    def fresh(self, b='v'):
        self.counter += 1
        return '%s%d' % (b, self.counter)

    def arr(self, shape):
        return np.array(self.rng.choices(range(-3, 4), k=int(np.prod(shape)) if shape else 1),
                        dtype=np.int32).reshape(shape)

    def make_args(self):
        rng = self.rng
        self.args, self.in_axes, self.params = [], [], []
        for k in range(rng.randint(1, 3)):
            pos = tuple(rng.choice([2, 3]) for _ in range(rng.randint(0, 2)))
            if k and rng.random() < 0.3:
                g = self.arr(pos)
                self.in_axes.append('None')
                model = {i: g for i in self.insts}
                dep = set()
            else:
                d = rng.randint(0, len(pos))
                shape = list(pos)
                shape.insert(d, self.n)
                g = self.arr(tuple(shape))
                self.in_axes.append(str(d - len(shape)) if rng.random() < 0.3 else str(d))
                model = {i: np.take(g, i[0], axis=d) for i in self.insts}
                dep = {'i'}
            name = 'x%d' % k
            self.args.append(g)
            self.params.append(name)
            self.pool.append(V(name, pos, dep, model))

    def add(self, line, shape, dep, model, dtype='i32'):
        name = self.fresh()
        self.lines.append('  %s = %s' % (name, line))
        v = V(name, shape, dep, model, dtype)
        self.pool.append(v)
        return v

    def pick(self, pred=lambda v: True):
        c = [v for v in self.pool if pred(v)]
        return self.rng.choice(c) if c else None

    def step(self):
        rng = self.rng
        k = rng.randint(0, 9)
        ints = lambda v: v.dtype == 'i32'
        if k <= 2:
            x = self.pick(ints)
            ys = [v for v in self.pool if ints(v) and (v.shape == x.shape or not v.shape or not x.shape)]
            y = rng.choice(ys)
            op = rng.choice(['add', 'mul', 'max', 'sub'])
            f = {'add': np.add, 'mul': np.multiply, 'max': np.maximum, 'sub': np.subtract}[op]
            self.add('%s %s %s' % (op, x.name, y.name), x.shape or y.shape, x.dep | y.dep,
                     {i: np.asarray(f(x.model[i], y.model[i])) for i in self.insts})
        elif k == 3:
            x = self.pick(lambda v: ints(v) and v.shape)
            if not x:
                return False
            d = rng.randint(0, len(x.shape) - 1)
            self.add('reduce_sum[axes=(%d,)] %s' % (d, x.name), x.shape[:d] + x.shape[d + 1:], x.dep,
                     {i: np.asarray(np.sum(x.model[i], axis=d), dtype=np.int32) for i in self.insts})
        elif k == 4:
            x = self.pick(ints)
            op = rng.choice(['psum', 'pmax', 'pmin'])
            f = {'psum': np.sum, 'pmax': np.max, 'pmin': np.min}[op]
            r = np.asarray(f(np.stack([x.model[i] for i in self.insts]), axis=0), dtype=np.int32)
            self.add('%s[axes=i] %s' % (op, x.name), x.shape, set(), {i: r for i in self.insts})
        elif k == 5:
            x = self.pick(ints)
            r = (np.sum(np.stack([x.model[i] for i in self.insts]).astype(np.float32), axis=0)
                 / np.float32(self.n)).astype(np.float32)
            self.add('pmean[axes=i] %s' % x.name, x.shape, set(), {i: r for i in self.insts}, 'f32')
        elif k == 6:
            x = self.pick(lambda v: len(v.shape) <= 2)
            tiled = bool(x.shape) and rng.random() < 0.5
            d = rng.randint(0, len(x.shape) - 1) if tiled else rng.randint(0, len(x.shape))
            vals = [x.model[i] for i in self.insts]
            r = np.concatenate(vals, axis=d) if tiled else np.stack(vals, axis=d)
            shape = list(x.shape)
            if tiled:
                shape[d] *= self.n
            else:
                shape.insert(d, self.n)
            self.add('all_gather[axis_name=i, axis=%d, tiled=%s] %s' % (d, tiled, x.name), shape, {'i'},
                     {i: r for i in self.insts}, x.dtype)
        elif k == 7:
            x = self.pick()
            s = rng.randint(-2, 2)
            m = {(k_,): x.model[((k_ - s) % self.n,)] for k_ in range(self.n)}
            self.add('ppermute[axis_name=i, shift=%d] %s' % (s, x.name), x.shape, {'i'}, m, x.dtype)
        elif k == 8:
            self.add('axis_index[axis_name=i]', (), {'i'}, {i: np.array(i[0], dtype=np.int32) for i in self.insts})
        else:
            return self.nested()
        return True

    def nested(self):
        """A call of a nested pmap over j, mapping one dimension of an outer value."""
        rng = self.rng
        x = self.pick(lambda v: v.dtype == 'i32' and v.shape)
        if not x:
            return False
        d = rng.randint(0, len(x.shape) - 1)
        m = x.shape[d]
        inner_shape = x.shape[:d] + x.shape[d + 1:]
        c = self.pick(lambda v: v.dtype == 'i32' and v.shape == inner_shape)
        fn = self.fresh('g')
        j = 'j%d' % self.counter          # each nested pmap its own axis (of its own size)
        body = []
        # inner values: per (outer k, inner l)
        ins = [(k, l) for k in range(self.n) for l in range(m)]
        a = {(k, l): np.take(x.model[(k,)], l, axis=d) for k, l in ins}
        cur, shape = a, inner_shape
        names = ['a']
        if c is not None:
            cur = {(k, l): cur[(k, l)] + c.model[(k,)] for k, l in ins}
            body.append('    t0 = add a c')
            names.append('t0')
        which = rng.choice(['j', 'ij', 'idx'])
        last = names[-1]
        if which == 'j':
            s = {(k, l): np.asarray(np.sum(np.stack([cur[(k, q)] for q in range(m)]), axis=0), dtype=np.int32)
                 for k, l in ins}
            body.append('    t1 = psum[axes=%s] %s' % (j, last))
        elif which == 'ij':
            tot = np.asarray(np.sum(np.stack([cur[q] for q in ins]), axis=0), dtype=np.int32)
            s = {q: tot for q in ins}
            body.append('    t1 = psum[axes=(i, %s)] %s' % (j, last))
        else:
            s = {(k, l): np.asarray(cur[(k, l)] + np.int32(l * 10 + k), dtype=np.int32) for k, l in ins}
            body.append('    ij = axis_index[axis_name=(%s, i)]' % j)
            body.append('    t1 = add %s ij' % last)
            s = {(k, l): np.asarray(cur[(k, l)] + np.int32(l * self.n + k), dtype=np.int32) for k, l in ins}
        body.append('    return t1')
        oa = rng.randint(0, len(shape))
        res = {(k,): np.stack([s[(k, l)] for l in range(m)], axis=oa) for k in range(self.n)}
        out_shape = list(shape)
        out_shape.insert(oa, m)
        params = 'a' + (', c' if c is not None else '')
        in_axes = '(%d%s)' % (d, ', None' if c is not None else ',')
        args = x.name + (' ' + c.name if c is not None else '')
        if self.jax:
            mapped = '(True%s)' % (', False' if c is not None else ',')
            eqns = '\n'.join('      ' + ln.strip() for ln in body[:-1])
            call = ('xla_pmap[axis_name=%s, axis_size=%d, in_axes=%s, out_axes=(%d,), mapped_invars=%s, '
                    'call_jaxpr={ lambda ; %s. let\n%s\n    in (t1,) }] %s'
                    % (j, m, in_axes, oa, mapped, params.replace(',', ''), eqns, args))
        else:
            self.lines.append('  @pmap[axis_name=%s, in_axes=%s, out_axes=%d]' % (j, in_axes, oa))
            self.lines.append('  def %s(%s) {' % (fn, params))
            self.lines += body
            self.lines.append('  }')
            call = '%s %s' % (fn, args)
        dep = {'i'} if which != 'ij' else set()
        dep |= (x.dep | (c.dep if c is not None else set())) if which != 'ij' else set()
        self.add(call, out_shape, dep, res)
        return True

    def make_outs(self):
        rng = self.rng
        cands = self.pool[len(self.params):] or self.pool
        self.outs = []
        for v in rng.sample(cands, min(len(cands), rng.randint(1, 2))):
            if not v.dep and rng.random() < 0.4 and not self.jax:   # xla_pmap stacks every result
                self.outs.append((v, None))
            else:
                self.outs.append((v, rng.randint(0, len(v.shape))))

    def expected(self, o):
        v, oa = o
        if oa is None:
            return v.model[(0,)]
        return np.stack([v.model[i] for i in self.insts], axis=oa)

    def text(self):
        lines = []
        for k, g in enumerate(self.args):
            name = 'g%s_%d' % (self.tag, k)
            lines.append('%s_f:i32[%d] = [%s]' % (name, g.size, ', '.join(str(int(v)) for v in g.ravel())))
            lines.append('%s = reshape[new_sizes=(%s)] %s_f' % (name, ''.join('%d, ' % s for s in g.shape), name))
        fname = 'f%s' % self.tag
        oa = '(%s,)' % ', '.join('None' if o[1] is None else str(o[1]) for o in self.outs)
        rs = ', '.join('r%s_%d' % (self.tag, k) for k in range(len(self.outs)))
        gs = ['g%s_%d' % (self.tag, k) for k in range(len(self.args))]
        if self.jax:
            # JAX prints in_axes non-negative, with mapped_invars
            ia = ['None' if a == 'None' else str(int(a) % (self.args[k].ndim)) for k, a in enumerate(self.in_axes)]
            mi = ['False' if a == 'None' else 'True' for a in ia]
            lines.append('def %s = { lambda ; %s. let' % (fname, ' '.join(gs)))
            lines.append('    %s = xla_pmap[axis_name=i, axis_size=%d, in_axes=(%s,), out_axes=%s, '
                         'mapped_invars=(%s,), call_jaxpr={ lambda ; %s. let'
                         % (rs.replace(',', ''), self.n, ', '.join(ia), oa, ', '.join(mi), ' '.join(self.params)))
            lines += ['      ' + ln.strip() for ln in '\n'.join(self.lines).split('\n')]
            lines.append('    in (%s,) }] %s' % (', '.join(o[0].name for o in self.outs), ' '.join(gs)))
            lines.append('  in (%s,) }' % rs)
            lines.append('%s = %s %s' % (rs, fname, ' '.join(gs)))
            for k in range(len(self.outs)):
                lines.append('print "R%s_%d", r%s_%d' % (self.tag, k, self.tag, k))
            return lines
        lines.append('@pmap[axis_name=i, in_axes=(%s,), out_axes=%s]' % (', '.join(self.in_axes), oa))
        lines.append('def %s(%s) {' % (fname, ', '.join(self.params)))
        lines += [ln[2:] for ln in self.lines]
        lines.append('  return %s' % ', '.join(o[0].name for o in self.outs))
        lines.append('}')
        rs = ', '.join('r%s_%d' % (self.tag, k) for k in range(len(self.outs)))
        lines.append('%s = %s %s' % (rs, fname, ' '.join('g%s_%d' % (self.tag, k) for k in range(len(self.args)))))
        for k in range(len(self.outs)):
            lines.append('print "R%s_%d", r%s_%d' % (self.tag, k, self.tag, k))
        return lines

    def want(self):
        return ''.join('R%s_%d %s\n' % (self.tag, k, str(self.expected(o))) for k, o in enumerate(self.outs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--count', type=int, default=3000)
    ap.add_argument('--batch', type=int, default=150)
    a = ap.parse_args()
    shmapi = os.environ.get('SHMAPI') or 'build/shmapi'
    rng = random.Random(a.seed)
    done, failed = 0, 0
    with tempfile.TemporaryDirectory(prefix='shm-pmap-') as tmp:
        while done < a.count and not failed:
            n = min(a.batch, a.count - done)
            progs = [Prog(rng, str(done + k)) for k in range(n)]
            text = '\n'.join(ln for p in progs for ln in p.text()) + '\n'
            want = ''.join(p.want() for p in progs)
            path = os.path.join(tmp, 'batch%d.shm' % done)
            with open(path, 'w') as f:
                f.write(text)
            env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
            r = subprocess.run([shmapi, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=240)
            got = r.stdout.decode()
            if r.returncode or got != want:
                failed = 1
                print('not ok - the batch of programs %d.. (seed %d): exit %d' % (done, a.seed, r.returncode))
                print(r.stderr.decode()[:3000])
                for p in progs:
                    if p.want() not in got:
                        print('--- program:\n%s\n--- expected:\n%s' % ('\n'.join(p.text()), p.want()))
                        break
            else:
                done += n
    print('%d programs (seed %d), %d failed' % (done, a.seed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
