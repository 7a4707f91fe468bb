#!/usr/bin/env python3
# timeout: 300
"""Randomized differential test of ragged_all_to_all and axis_size.

Generates random shard_maps that call ragged_all_to_all -- a random mesh
(1 to 3 axes of sizes 1 to 4), the collective over one mesh axis or a
tuple of them (in either order), 1 to 3 slices per member, operands of
random dtypes and trailing dimensions, sizes drawn with many zero-length
sends, receivers' slices packed in random order with random gaps, and
each of the six operands split over a random set of mesh axes (invariant
over the others, so that groups share blocks) -- and compares the results
shmapi saves (`save "f.npy"`) with a NumPy model of each device:

    result[k] = output[k], then for each sender j and slot s
      (i = k*K/p + s): result[k][output_offsets[j][i] : + n] =
      operand[j][input_offsets[j][i] : + n],  n = send_sizes[j][i]

Each body also returns axis_size over a random set of axes (the product of
their sizes).  A quarter of the float programs also run the function's
linear_transpose in (operand, output) and compare it with the adjoint of
the model: the operand's cotangent gathers the cotangent rows each slice
landed on, the output's is the cotangent with the received rows zeroed,
both summed over the devices that share a block (the transpose of using
one block on many devices; a result block that several devices compute
alike counts once).  Values are small integers, so every sum is exact.

Programs to reject: --bad programs (default count / 25) each plant one
fault in the offsets or sizes of one device -- a slice past the end of
the operand or of the receiver's result, a negative size, a recv_sizes
entry that does not match its sender, two slices over the same rows --
and shmapi must stop with "error: ragged_all_to_all over ..." at the
equation and exit 1, never crash or hang.

Many programs run in one shmapi invocation (one file, results saved per
program); a batch that fails is rerun one program at a time.

    SHMAPI=build/shmapi python3 tests/spmd/ragged_differential.test.py
        [--seed N] [--count N] [--bad N] [--batch N] [--keep DIR] [-v]

Exit 0 when every program agrees, 1 otherwise, 77 (skip) without NumPy.
"""

import argparse
import itertools
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

AXIS_NAMES = ['i', 'j', 'k', 'x', 'y']
NAMES = ['operand', 'output', 'input_offsets', 'send_sizes', 'output_offsets', 'recv_sizes']
DTYPES = ['f32', 'f32', 'i32', 'bool', 'f16', 'i8']
IDX_DTYPES = ['i32', 'i32', 'i64', 'u32', 'i16']
NP_DTYPE = {'f32': np.float32, 'i32': np.int32, 'bool': np.bool_, 'f16': np.float16, 'i8': np.int8}


def lit(a):
    """A shm literal of a NumPy array (ints, floats or bools)."""
    if a.ndim == 0:
        v = a.item()
        return ('True' if v else 'False') if a.dtype == np.bool_ else repr(v)
    return '[' + ', '.join(lit(x) for x in a) + ']'


class Prog:
    """One random program: the mesh, the collective's axes, the operands'
    masks and per-block values, and the model's results."""

    def __init__(self, rng, uid, bad=None):
        self.rng, self.uid = rng, uid
        r = rng
        na = r.choice([1, 1, 2, 2, 3])
        self.axes = r.sample(AXIS_NAMES, na)
        self.sizes = [r.choice([1, 2, 2, 3, 4]) for _ in range(na)]
        while np.prod(self.sizes) > 16:
            self.sizes[r.randrange(na)] = r.choice([1, 2])
        self.coll = r.sample(range(na), r.randint(1, na))     # listed order: first major
        self.p = int(np.prod([self.sizes[a] for a in self.coll]))
        self.spd = r.choice([1, 1, 2, 3])
        self.K = self.p * self.spd
        self.dt = r.choice(DTYPES)
        self.idt = r.choice(IDX_DTYPES)
        self.rest = tuple(r.choice([1, 2, 3]) for _ in range(r.choice([0, 0, 1, 2])))
        self.N = r.randint(1, 6)
        # masks (sets of mesh axes) of the six operands; the index arrays
        # share one, which holds the collective's axes unless every size is
        # zero (then they may be invariant along them too)
        others = [a for a in range(na) if a not in self.coll]
        self.zero = r.random() < 0.08
        sub = lambda pool: set(a for a in pool if r.random() < 0.5)
        imask = sub(others) | (sub(self.coll) if self.zero else set(self.coll))
        self.masks = [sub(range(na)), sub(range(na))] + [imask] * 4
        self.ndev = int(np.prod(self.sizes))
        self.transpose = self.dt == 'f32' and r.random() < 0.25
        self.size_axes = r.sample(range(na), r.randint(1, na))
        self.bad = bad
        self.make_indices()
        if self.M is None:
            return
        self.make_data()

    # ---- devices and blocks ----------------------------------------------------------
    def coords(self, d):
        c = []
        for s in reversed(self.sizes):
            c.append(d % s)
            d //= s
        return c[::-1]

    def block(self, mask, c):
        """The index of the block a device with coordinates c holds of a
        value split over `mask` (mesh order, row-major)."""
        b = 0
        for a in range(len(self.sizes)):
            if a in mask:
                b = b * self.sizes[a] + c[a]
        return b

    def nblocks(self, mask):
        return int(np.prod([self.sizes[a] for a in mask])) if mask else 1

    def member(self, c):
        m = 0
        for a in self.coll:
            m = m * self.sizes[a] + c[a]
        return m

    def group_of(self, c):
        """The devices of c's group, by member index."""
        g = [None] * self.p
        for d in range(self.ndev):
            e = self.coords(d)
            if all(e[a] == c[a] for a in range(len(self.sizes)) if a not in self.coll):
                g[self.member(e)] = d
        return g

    # ---- values ----------------------------------------------------------------------
    def make_indices(self):
        """Valid offsets and sizes per block of the index arrays' mask:
        per group class (the blocks off the collective axes) sizes for
        every (sender, receiver, slot), the senders' offsets anywhere in
        the operand, the receivers' slices packed in a random order with
        gaps.  M: the rows of output (one for all devices)."""
        r = self.rng
        imask = self.masks[2]
        nb = self.nblocks(imask)
        K, p, spd, N = self.K, self.p, self.spd, self.N
        # the index arrays' block of member m of the group of class c
        self.idx = [[np.zeros(K, np.int64) for _ in range(4)] for _ in range(nb)]
        classes = {}
        for d in range(self.ndev):
            c = self.coords(d)
            key = tuple(c[a] for a in range(len(self.sizes)) if a not in self.coll)
            classes.setdefault(key, c)
        need = 0
        plans = []
        for key, c in sorted(classes.items()):
            g = self.group_of(c)
            blocks = [self.block(imask, self.coords(d)) for d in g]
            if len(set(blocks)) < p and not self.zero:
                raise AssertionError('index arrays invariant along the collective axes')
            size = {}
            for j in range(p):
                for k in range(p):
                    for s in range(spd):
                        size[j, k, s] = 0 if self.zero or r.random() < 0.35 else r.randint(1, N)
            if self.transpose:
                # each sender's slices apart (the transpose writes them back)
                N = max(N, max(sum(size[j, k, s] for k in range(p) for s in range(spd)) for j in range(p)))
            plans.append((g, blocks, size))
        self.N = N
        # one plan per distinct block set (classes sharing blocks share sizes)
        seen = {}
        for g, blocks, size in plans:
            key = tuple(blocks)
            if key in seen:
                continue
            seen[key] = True
            rows = [0] * p
            if self.transpose:
                for j in range(p):
                    slots = [(k, s) for k in range(p) for s in range(spd)]
                    r.shuffle(slots)
                    free = N - sum(size[j, k, s] for k, s in slots)
                    at = 0
                    for k, s in slots:
                        gap = r.randint(0, free)
                        at, free = at + gap, free - gap
                        self.idx[blocks[j]][0][k * spd + s] = at
                        at += size[j, k, s]
            for k in range(p):
                slots = [(j, s) for j in range(p) for s in range(spd)]
                r.shuffle(slots)
                at = 0
                for j, s in slots:
                    at += r.choice([0, 0, 0, 1, 2])
                    n = size[j, k, s]
                    i = k * spd + s
                    bj = self.idx[blocks[j]]
                    bj[1][i] = n
                    if not self.transpose:
                        bj[0][i] = r.randint(0, N - n)
                    bj[2][i] = at
                    self.idx[blocks[k]][3][j * spd + s] = n
                    at += n
                rows[k] = at
            need = max(need, max(rows))
        self.M = need + r.choice([0, 0, 1, 3])
        if self.M == 0:
            self.M = 1
        if self.bad:
            self.plant(plans)

    def plant(self, plans):
        """One fault in one block of the index arrays."""
        r = self.rng
        g, blocks, size = r.choice(plans)
        b = self.idx[r.choice(blocks)]
        i = r.randrange(self.K)
        kind = self.bad
        if kind == 'input_range':
            b[0][i] = self.N - b[1][i] + r.randint(1, 3)
        elif kind == 'input_negative':
            b[0][i] = -r.randint(1, 3)
        elif kind == 'output_range':
            b[2][i] = self.M - b[1][i] + r.randint(1, 3)
        elif kind == 'negative_size':
            b[1][i] = -1
        elif kind == 'recv_mismatch':
            b[3][i] += r.choice([1, 2])
        elif kind == 'overlap':
            # two slices to one receiver at the same rows: a sender's slot
            # with rows gets the output offset of another slot to that receiver
            self.plant_overlap(plans)

    def plant_overlap(self, plans):
        r = self.rng
        for g, blocks, size in plans:
            for k in range(self.p):
                live = [(j, s) for j in range(self.p) for s in range(self.spd) if size[j, k, s] > 0]
                if len(live) >= 2:
                    (j1, s1), (j2, s2) = r.sample(live, 2)
                    i1, i2 = k * self.spd + s1, k * self.spd + s2
                    self.idx[blocks[j2]][2][i2] = self.idx[blocks[j1]][2][i1]
                    return
        # nothing to collide: one slice to each of two slots of receiver 0 instead
        self.bad = None

    def make_data(self):
        r = self.rng
        self.vals = []
        for q, rows in ((0, self.N), (1, self.M)):
            nb = self.nblocks(self.masks[q])
            shape = (nb, rows) + self.rest
            if self.dt == 'bool':
                v = np.array([r.random() < 0.5 for _ in range(int(np.prod(shape)))]).reshape(shape)
            else:
                lo, hi = (-9, 9) if self.dt != 'u8' else (0, 9)
                v = np.array([r.randint(lo, hi) for _ in range(int(np.prod(shape)))]).reshape(shape)
                v = v.astype(NP_DTYPE[self.dt])
            self.vals.append(v)
        for q in range(4):
            self.vals.append(np.stack([b[q] for b in self.idx]))
        if self.transpose:
            shape = (self.ndev, self.M) + self.rest
            self.ct = np.array([r.randint(-9, 9) for _ in range(int(np.prod(shape)))],
                               np.float32).reshape(shape)

    # ---- the model -------------------------------------------------------------------
    def blk(self, q, d):
        return self.vals[q][self.block(self.masks[q], self.coords(d))]

    def model(self):
        """Per device (row-major over the mesh) the result block."""
        res = []
        for d in range(self.ndev):
            c = self.coords(d)
            k = self.member(c)
            g = self.group_of(c)
            out = self.blk(1, d).copy()
            for j in range(self.p):
                for s in range(self.spd):
                    i = k * self.spd + s
                    io, n, oo = (int(self.blk(q, g[j])[i]) for q in (2, 3, 4))
                    out[oo:oo + n] = self.blk(0, g[j])[io:io + n]
            res.append(out)
        return res

    def model_transpose(self):
        """The adjoint: cotangents of operand and output, per block of
        their masks (summed over the devices sharing a block)."""
        op_t = np.zeros(self.vals[0].shape, np.float64)
        out_t = np.zeros(self.vals[1].shape, np.float64)
        res_mask = set().union(*self.masks) | set(self.coll)
        for d in range(self.ndev):
            c = self.coords(d)
            if any(c[a] for a in range(len(self.sizes)) if a not in res_mask):
                continue    # the same computation as a device of coordinate 0 there: one result block
            k = self.member(c)
            g = self.group_of(c)
            ct = self.ct[d].astype(np.float64)
            keep = ct.copy()
            for j in range(self.p):
                for s in range(self.spd):
                    i = k * self.spd + s
                    io, n, oo = (int(self.blk(q, g[j])[i]) for q in (2, 3, 4))
                    op_t[self.block(self.masks[0], self.coords(g[j]))][io:io + n] += ct[oo:oo + n]
                    keep[oo:oo + n] = 0
            out_t[self.block(self.masks[1], c)] += keep
        return op_t, out_t

    # ---- the program -----------------------------------------------------------------
    def spec(self, mask):
        ax = [self.axes[a] for a in range(len(self.sizes)) if a in mask]
        if not ax:
            return 'P()'
        return 'P(%s)' % (ax[0] if len(ax) == 1 else '(%s)' % ', '.join(ax))

    def text(self, tmp):
        u = self.uid
        pre = 'r%d_' % u
        lines = ['mesh %smesh = {%s}' % (pre, ', '.join('%s: %d' % (a, s) for a, s in zip(self.axes, self.sizes)))]
        for q in range(6):
            v = self.vals[q]
            if v.dtype in (np.float16, np.int8):
                wide, name = (np.float32, 'f16') if v.dtype == np.float16 else (np.int32, 'i8')
                lines.append('%s%dw = %s' % (pre, q, lit(v.astype(wide))))
                lines.append('%s%d = convert_element_type[new_dtype=%s] %s%dw' % (pre, q, name, pre, q))
            else:
                lines.append('%s%d = %s' % (pre, q, lit(v)))
        res_mask = set().union(*self.masks) | set(self.coll)
        specs = ', '.join(self.spec(m) for m in self.masks)
        coll = [self.axes[a] for a in self.coll]
        if len(coll) == 1 and self.rng.random() < 0.5:
            an = coll[0]
        else:
            an = '(%s%s)' % (', '.join(coll), ',' if len(coll) == 1 else '')
        size_ax = [self.axes[a] for a in self.size_axes]
        lines.append('@shard_map[mesh=%smesh, in_specs=(%s), out_specs=(%s, P())]'
                     % (pre, specs, self.spec(res_mask)))
        lines.append('def %sf(a, b, c, d, e, g) {' % pre)
        rest = ', '.join(str(x) for x in self.rest)
        lines.append('  a1 = reshape[new_sizes=(%d,%s)] a' % (self.N, ' ' + rest if rest else ''))
        lines.append('  b1 = reshape[new_sizes=(%d,%s)] b' % (self.M, ' ' + rest if rest else ''))
        for v, n in zip('cdeg', '2345'):
            lines.append('  %s1 = reshape[new_sizes=(%d,)] %s' % (v, self.K, v))
            if self.idt != 'i32':
                lines.append('  %s1 = convert_element_type[new_dtype=%s] %s1' % (v, self.idt, v))
        lines.append('  r = ragged_all_to_all[axis_name=%s] a1 b1 c1 d1 e1 g1' % an)
        lines.append('  r1 = reshape[new_sizes=(1, %d%s)] r' % (self.M, ', ' + rest if rest else ''))
        lines.append('  n = axis_size[axis_name=(%s,)]' % ', '.join(size_ax))
        lines.append('  return r1, n')
        lines.append('}')
        args = ' '.join('%s%d' % (pre, q) for q in range(6))
        lines.append('%sz, %sn = %sf %s' % (pre, pre, pre, args))
        lines.append('save "%s" %sz' % (os.path.join(tmp, '%d_z.npy' % u), pre))
        lines.append('save "%s" %sn' % (os.path.join(tmp, '%d_n.npy' % u), pre))
        if self.transpose:
            lines.append('@shard_map[mesh=%smesh, in_specs=(%s), out_specs=%s]'
                         % (pre, specs, self.spec(res_mask)))
            lines.append('def %sh(a, b, c, d, e, g) {' % pre)
            lines.append('  r = ragged_all_to_all[axis_name=%s] a b c d e g' % an)
            lines.append('  return r')
            lines.append('}')
            lines.append('def %sh_t = linear_transpose[linear=(0, 1)] %sh' % (pre, pre))
            flat = lambda q, rows: '%s%dflat' % (pre, q)
            for q, rows in ((0, self.N), (1, self.M)):
                nb = self.nblocks(self.masks[q])
                lines.append('%s = reshape[new_sizes=(%d,%s)] %s%d' % (
                    flat(q, rows), nb * rows, ' ' + rest if rest else '', pre, q))
            for q in range(2, 6):  # (h is called once: linear_transpose takes its checked version)
                lines.append('%s = reshape[new_sizes=(%d,)] %s%d' % (flat(q, 0), self.nblocks(self.masks[q]) * self.K, pre, q))
            lines.append('%sh_z = %sh %s' % (pre, pre, ' '.join(flat(q, 0) for q in range(6))))
            ctv = self.ct_global()
            lines.append('%sct = %s' % (pre, lit(ctv)))
            lines.append('%sta, %stb = %sh_t %s %s %s %s %sct' % (pre, pre, pre, flat(2, 0), flat(3, 0),
                                                                flat(4, 0), flat(5, 0), pre))
            lines.append('save "%s" %sta' % (os.path.join(tmp, '%d_ta.npy' % u), pre))
            lines.append('save "%s" %stb' % (os.path.join(tmp, '%d_tb.npy' % u), pre))
        return '\n'.join(lines) + '\n'

    def result_global(self, per_dev):
        """The assembled result of out_specs over the result's mask: the
        block of each device at its index, rows stacked."""
        res_mask = set().union(*self.masks) | set(self.coll)
        nb = self.nblocks(res_mask)
        out = [None] * nb
        for d in range(self.ndev):
            out[self.block(res_mask, self.coords(d))] = per_dev[d]
        return np.stack(out)

    def ct_global(self):
        """The cotangent as the transposed function takes it: one block
        per block of the result's mask (devices sharing a block get the
        same cotangent)."""
        res_mask = set().union(*self.masks) | set(self.coll)
        nb = self.nblocks(res_mask)
        out = [None] * nb
        for d in range(self.ndev):
            b = self.block(res_mask, self.coords(d))
            if out[b] is None:
                out[b] = self.ct[d]
            else:
                self.ct[d] = out[b]
        return np.concatenate(out)

    def check(self, tmp):
        """Problems (a list of strings)."""
        probs = []
        want = self.result_global(self.model())
        try:
            got = np.load(os.path.join(tmp, '%d_z.npy' % self.uid))
            n = np.load(os.path.join(tmp, '%d_n.npy' % self.uid))
        except OSError as e:
            return ['result not saved: %s' % e]
        if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
            probs.append('result differs:\n got %s %s\n expected %s %s' % (got.dtype, got.tolist(), want.dtype,
                                                                           want.tolist()))
        size = int(np.prod([self.sizes[a] for a in self.size_axes]))
        if n.shape != () or int(n) != size:
            probs.append('axis_size %s, expected %d' % (n, size))
        if self.transpose:
            op_t, out_t = self.model_transpose()
            for name, w in (('ta', op_t), ('tb', out_t)):
                try:
                    g = np.load(os.path.join(tmp, '%d_%s.npy' % (self.uid, name)))
                except OSError as e:
                    probs.append('transpose not saved: %s' % e)
                    continue
                w = w.reshape((-1,) + self.rest)
                if g.shape != w.shape or not np.array_equal(g.astype(np.float64), w):
                    probs.append('transpose %s differs:\n got %s\n expected %s' % (name, g.tolist(), w.tolist()))
        return probs


def run(shmapi, path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    p = subprocess.run([shmapi, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, env=env, timeout=240)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


BAD_KINDS = ['input_range', 'input_negative', 'output_range', 'negative_size', 'recv_mismatch', 'overlap']


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seed', type=int, default=20261127)
    ap.add_argument('--count', type=int, default=2000)
    ap.add_argument('--bad', type=int, help='programs with a planted fault (default count / 25)')
    ap.add_argument('--batch', type=int, default=250)
    ap.add_argument('--keep', help='write the programs and results to this directory')
    ap.add_argument('--show', type=int, default=3, help='failures to print in full')
    ap.add_argument('-v', '--verbose', action='store_true')
    a = ap.parse_args()
    shmapi = os.environ.get('SHMAPI') or 'build/shmapi'
    rng = random.Random(a.seed)
    tmp = a.keep or tempfile.mkdtemp(prefix='shm-ragged-')
    os.makedirs(tmp, exist_ok=True)
    progs = []
    uid = 0
    while len(progs) < a.count:
        uid += 1
        pr = Prog(rng, uid)
        if pr.M is not None:
            progs.append(pr)
    failures = []
    ntr = sum(p.transpose for p in progs)
    nzero = sum(1 for p in progs for b in p.idx for x in b[1] if x == 0)
    for b0 in range(0, len(progs), a.batch):
        batch = progs[b0:b0 + a.batch]
        path = os.path.join(tmp, 'batch%d.shm' % (b0 // a.batch))
        with open(path, 'w') as f:
            f.write(''.join(p.text(tmp) for p in batch))
        rc, out, err = run(shmapi, path)
        if rc != 0:
            if a.verbose:
                print('batch %d failed (exit %d); rerunning its programs one by one' % (b0 // a.batch, rc))
            for p in batch:
                one = os.path.join(tmp, 'one.shm')
                with open(one, 'w') as f:
                    f.write(p.text(tmp))
                rc1, _, err1 = run(shmapi, one)
                probs = ['exit status %d\n%s' % (rc1, err1.strip())] if rc1 else p.check(tmp)
                if probs:
                    failures.append((p, probs))
            continue
        for p in batch:
            probs = p.check(tmp)
            if probs:
                failures.append((p, probs))
    # planted faults: one program per run
    nbad = a.count // 25 if a.bad is None else a.bad
    bad_ok = 0
    for n in range(nbad):
        uid += 1
        kind = BAD_KINDS[n % len(BAD_KINDS)]
        pr = Prog(rng, uid, bad=kind)
        if pr.M is None or pr.bad is None:
            continue
        one = os.path.join(tmp, 'bad.shm')
        text = pr.text(tmp)
        with open(one, 'w') as f:
            f.write(text)
        rc, out, err = run(shmapi, one)
        line = next(i for i, t in enumerate(text.split('\n'), 1) if 'ragged_all_to_all[' in t)
        want = '%s:%d:3: error: ragged_all_to_all over ' % (one, line)
        # (a runtime error comes after its traceback: the error line is the first that is not part of it)
        first = next((l for l in err.split('\n') if ': error: ' in l), '')
        if rc != 1 or not first.startswith(want) or err.count('error:') != 1:
            failures.append((pr, ['planted %s: expected exit 1 and %r..., got exit %d:\n%s'
                                  % (kind, want, rc, err.strip()[:1500])]))
        else:
            bad_ok += 1
    for p, probs in failures[:a.show]:
        print('program %d (mesh %s, axes %s):' % (p.uid, dict(zip(p.axes, p.sizes)), [p.axes[x] for x in p.coll]))
        print(p.text(tmp))
        for m in probs:
            print('  ' + m)
    print('%d ragged_all_to_all programs (%d transposed, %d zero-length sends), %d planted faults caught; '
          '%d failures' % (len(progs), ntr, nzero, bad_ok, len(failures)))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
