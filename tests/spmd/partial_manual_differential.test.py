#!/usr/bin/env python3
# timeout: 300
"""Randomized differential test of partial-manual shard_map (axis_names).

Generates random shard_maps manual over a random proper subset of a random
mesh's axes (2 or 3 axes of sizes 1 to 4): inputs split over manual axes
only, bodies that chain collectives over random sets of manual axes
(psum, pmax, pmean, an untiled all_gather summed back, ppermute by a
shift, axis_index) and local arithmetic.  Each program's result is
compared with a NumPy model that runs one instance per block of the
manual axes (values whole along the automatic ones), and with the same
body run fully manual over the whole mesh, which must give the same
bytes.

    SHMAPI=build/shmapi python3 tests/spmd/partial_manual_differential.test.py
        [--seed N] [--count N] [--batch N] [--keep DIR]

Exit 0 when every program agrees, 1 otherwise, 77 (skip) without NumPy.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

AXIS_NAMES = ['i', 'j', 'k', 'x', 'y']


def lit(a):
    if a.ndim == 0:
        return repr(float(a))
    return '[' + ', '.join(lit(x) for x in a) + ']'


class Prog:
    def __init__(self, rng, uid):
        r = self.rng = rng
        self.uid = uid
        na = r.choice([2, 2, 3])
        self.axes = r.sample(AXIS_NAMES, na)
        self.sizes = [r.choice([1, 2, 2, 3, 4]) for _ in range(na)]
        while np.prod(self.sizes) > 16:
            self.sizes[r.randrange(na)] = r.choice([1, 2])
        self.manual = sorted(r.sample(range(na), r.randint(1, na - 1)))
        # the spec: each manual axis splits dimension 0 or 1, or nothing
        self.split = {0: [], 1: []}
        for a in self.manual:
            w = r.choice([0, 1, None])
            if w is not None:
                self.split[w].append(a)
        self.block = (r.choice([1, 2]), r.choice([1, 2, 3]))
        self.shape = tuple(self.block[d] * int(np.prod([self.sizes[a] for a in self.split[d]]))
                           for d in range(2))
        self.x = np.array([r.randint(-9, 9) for _ in range(self.shape[0] * self.shape[1])],
                          np.float32).reshape(self.shape)
        self.ops = [self.op() for _ in range(r.randint(1, 4))]
        # the out spec is the in spec: make the result invariant over the
        # manual axes it does not split
        rest = [a for a in self.manual if a not in self.split[0] + self.split[1]]
        if rest:
            self.ops.append(('pmean_final', rest, 0))

    def op(self):
        r = self.rng
        kind = r.choice(['psum', 'pmax', 'pmean', 'gather_sum', 'shift', 'index', 'mul'])
        coll = r.sample(self.manual, r.randint(1, len(self.manual)))
        return kind, coll, r.randint(1, 3)

    # manual sub-mesh instances: coordinates over the manual axes, row-major
    def minst(self):
        sizes = [self.sizes[a] for a in self.manual]
        out = []
        for n in range(int(np.prod(sizes))):
            c, m = {}, n
            for a, s in zip(reversed(self.manual), reversed(sizes)):
                c[a] = m % s
                m //= s
            out.append(c)
        return out

    def member(self, coll, c):
        m = 0
        for a in coll:
            m = m * self.sizes[a] + c[a]
        return m

    def group(self, coll, c, insts):
        return [e for e in insts if all(e[a] == c[a] for a in self.manual if a not in coll)]

    def model(self):
        insts = self.minst()
        vals = []
        for c in insts:
            idx = []
            for d in range(2):
                b = 0
                for a in self.split[d]:
                    b = b * self.sizes[a] + c[a]
                idx.append(slice(b * self.block[d], (b + 1) * self.block[d]))
            vals.append(self.x[tuple(idx)].astype(np.float64))
        for kind, coll, k in self.ops:
            new = []
            for n, c in enumerate(insts):
                g = self.group(coll, c, insts)
                gv = [vals[insts.index(e)] for e in sorted(g, key=lambda e: self.member(coll, e))]
                if kind == 'psum' or kind == 'gather_sum':
                    new.append(sum(gv))
                elif kind == 'pmax':
                    new.append(np.max(np.stack(gv), 0))
                elif kind in ('pmean', 'pmean_final'):
                    new.append(sum(gv) / len(gv))
                elif kind == 'shift':
                    p = len(gv)
                    me = self.member(coll, c)
                    new.append(gv[(me - k) % p])
                elif kind == 'index':
                    new.append(vals[n] * self.member(coll, c))
                else:
                    new.append(vals[n] * k + 1)
            vals = new
        # assembled by the out spec (the in spec)
        out = np.zeros(self.shape)
        for c, v in zip(insts, vals):
            idx = []
            for d in range(2):
                b = 0
                for a in self.split[d]:
                    b = b * self.sizes[a] + c[a]
                idx.append(slice(b * self.block[d], (b + 1) * self.block[d]))
            out[tuple(idx)] = v
        return out.astype(np.float32)

    def body(self):
        lines, cur = [], 'a'
        for n, (kind, coll, k) in enumerate(self.ops):
            an = '(%s,)' % ', '.join(self.axes[a] for a in coll)
            v = 'v%d' % n
            if kind == 'pmean_final':
                lines.append('  %s = pmean[axes=%s] %s' % (v, an, cur))
            elif kind in ('psum', 'pmax', 'pmean'):
                lines.append('  %sr = %s[axes=%s] %s' % (v, kind, an, cur))
                lines.append('  %s = pbroadcast[axes=%s] %sr' % (v, an, v))
            elif kind == 'gather_sum':
                lines.append('  %sg = all_gather[axis_name=%s, axis=0, tiled=False] %s' % (v, an, cur))
                lines.append('  %s = reduce_sum[axes=(0,)] %sg' % (v, v))
            elif kind == 'shift':
                lines.append('  %s = ppermute[axis_name=%s, shift=%d] %s' % (v, an, k, cur))
            elif kind == 'index':
                lines.append('  %si = axis_index[axis_name=%s]' % (v, an))
                lines.append('  %sf = convert_element_type[new_dtype=f32] %si' % (v, v))
                lines.append('  %s = mul %s %sf' % (v, cur, v))
            else:
                lines.append('  %sm = mul %s %d.0' % (v, cur, k))
                lines.append('  %s = add %sm 1.0' % (v, v))
            cur = v
        return lines, cur

    def spec(self):
        ent = []
        for d in range(2):
            ax = [self.axes[a] for a in self.split[d]]
            ent.append('None' if not ax else ax[0] if len(ax) == 1 else '(%s)' % ', '.join(ax))
        return 'P(%s)' % ', '.join(ent)

    def text(self, tmp):
        pre = 'q%d_' % self.uid
        lines = ['mesh %sm = {%s}' % (pre, ', '.join('%s: %d' % q for q in zip(self.axes, self.sizes))),
                 '%sx = %s' % (pre, lit(self.x))]
        body, cur = self.body()
        names = '(%s,)' % ', '.join(self.axes[a] for a in self.manual)
        for tag, extra in (('p', ', axis_names=%s' % names), ('f', '')):
            lines.append('@shard_map[mesh=%sm, in_specs=%s, out_specs=%s%s]' % (pre, self.spec(), self.spec(), extra))
            lines.append('def %s%s(a) {' % (pre, tag))
            lines += body
            lines.append('  return %s' % cur)
            lines.append('}')
            lines.append('%s%sz = %s%s %sx' % (pre, tag, pre, tag, pre))
            lines.append('save "%s" %s%sz' % (os.path.join(tmp, '%d_%s.npy' % (self.uid, tag)), pre, tag))
        return '\n'.join(lines) + '\n'

    def check(self, tmp):
        want = self.model()
        probs = []
        try:
            p = np.load(os.path.join(tmp, '%d_p.npy' % self.uid))
            f = np.load(os.path.join(tmp, '%d_f.npy' % self.uid))
        except OSError as e:
            return ['result not saved: %s' % e]
        if p.shape != want.shape or not np.allclose(p, want, rtol=1e-6, atol=1e-5):
            probs.append('partial-manual result differs from the model:\n got %s\n expected %s'
                         % (p.tolist(), want.tolist()))
        if p.tobytes() != f.tobytes():
            probs.append('partial-manual and fully manual differ:\n partial %s\n full    %s' % (p.tolist(), f.tolist()))
        return probs


def run(shmapi, path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    p = subprocess.run([shmapi, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, env=env, timeout=240)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seed', type=int, default=20261127)
    ap.add_argument('--count', type=int, default=1500)
    ap.add_argument('--batch', type=int, default=250)
    ap.add_argument('--keep', help='write the programs and results to this directory')
    ap.add_argument('--show', type=int, default=3)
    a = ap.parse_args()
    shmapi = os.environ.get('SHMAPI') or 'build/shmapi'
    rng = random.Random(a.seed)
    tmp = a.keep or tempfile.mkdtemp(prefix='shm-partial-')
    os.makedirs(tmp, exist_ok=True)
    progs = [Prog(rng, u + 1) for u in range(a.count)]
    texts = [p.text(tmp) for p in progs]
    failures = []
    for b0 in range(0, len(progs), a.batch):
        path = os.path.join(tmp, 'batch%d.shm' % (b0 // a.batch))
        with open(path, 'w') as f:
            f.write(''.join(texts[b0:b0 + a.batch]))
        rc, out, err = run(shmapi, path)
        for p, t in zip(progs[b0:b0 + a.batch], texts[b0:b0 + a.batch]):
            if rc != 0:
                one = os.path.join(tmp, 'one.shm')
                with open(one, 'w') as f:
                    f.write(t)
                rc1, _, err1 = run(shmapi, one)
                probs = ['exit status %d\n%s' % (rc1, err1.strip())] if rc1 else p.check(tmp)
            else:
                probs = p.check(tmp)
            if probs:
                failures.append((p, t, probs))
    for p, t, probs in failures[:a.show]:
        print('program %d (manual %s):' % (p.uid, [p.axes[x] for x in p.manual]))
        print(t)
        for m in probs:
            print('  ' + m)
    print('%d partial-manual programs (%d collectives); %d failures'
          % (len(progs), sum(len(p.ops) for p in progs), len(failures)))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
