#!/usr/bin/env python3
# timeout: 240
"""Random straight-line device programs against an independent model of
kernels and fusion (docs/cost.md, "Kernels and fusion"): every equation's
modelled time, read from the trace, must be what this file computes.

The model written here: an elementwise equation fuses into the kernel of
the equation that makes one of its operands when that operand has no
other use (no other operand slot, not a result of the body); the fused
equation does not read that operand from HBM and pays no launch, and its
producer does not write it.  Every other equation that moves bytes or
computes is a kernel of its own and pays the H100's 1 us launch.  Times
are rooflines on the H100 preset: matmuls at 4.945e14 x 0.808 FLOP/s
(f32 at the TF32 peak, the calibrated efficiency), other work at the
CUDA cores' 6.7e13, bytes at 3.35e12 B/s.

    fusion_random.test.py [SEED [PROGRAMS]]
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _model import close, durations, trace  # noqa: E402

MATMUL, VECTOR, HBM, LAUNCH = 4.945e14 * 0.808, 6.7e13, 3.35e12, 1e-6
UNARY = ['exp', 'tanh', 'neg']
BINARY = ['add', 'mul', 'sub', 'max']


def body(rng, n, name):
    """One shard_map's text and, per line offset, the expected seconds."""
    stmts = []          # (text, kind, operand names, result name, result bytes)
    vals = ['x']        # [n, n] values
    sizes = {'x': 4 * n * n}
    for k in range(rng.randint(4, 14)):
        r = 'v%d' % k
        c = rng.random()
        a = rng.choice(vals)
        if c < 0.3:
            op = rng.choice(UNARY)
            stmts.append(('%s = %s %s' % (r, op, a), 'ew', [a], r, 4 * n * n))
        elif c < 0.55:
            b = rng.choice(vals)
            op = rng.choice(BINARY)
            stmts.append(('%s = %s %s %s' % (r, op, a, b), 'ew', [a, b], r, 4 * n * n))
        elif c < 0.65:
            stmts.append(('%s = mul %s 2.0' % (r, a), 'ew', [a], r, 4 * n * n))
        elif c < 0.75:
            stmts.append(('%s = transpose[permutation=(1, 0)] %s' % (r, a), 'move', [a], r, 4 * n * n))
        elif c < 0.85:
            s = 's%d' % k
            stmts.append(('%s = reduce_sum[axes=(1,)] %s' % (s, a), 'reduce', [a], s, 4 * n))
            stmts.append(('%s = broadcast_in_dim[shape=(%d, %d), broadcast_dimensions=(0,)] %s' % (r, n, n, s),
                          'bcast', [s], r, 4 * n * n))
        else:
            b = rng.choice(vals)
            stmts.append(('%s = dot_general[dimension_numbers=(([1], [0]), ([], []))] %s %s' % (r, a, b), 'dot',
                          [a, b], r, 4 * n * n))
        vals.append(r)
        sizes[r] = 4 * n * n
    outs = [vals[-1]]
    if len(vals) > 3 and rng.random() < 0.5:
        outs.append(rng.choice(vals[1:-1]))
    uses = {}
    for _, _, ops, _, _ in stmts:
        for o in ops:
            uses[o] = uses.get(o, 0) + 1
    for o in outs:
        uses[o] = uses.get(o, 0) + 2
    define = {st[3]: i for i, st in enumerate(stmts)}
    fused = [False] * len(stmts)
    saved = [0.0] * len(stmts)
    for i, (_, kind, ops, _, _) in enumerate(stmts):
        if kind != 'ew':
            continue
        for o in ops:
            if o in define and uses[o] == 1:
                p = define[o]
                ob = stmts[p][4]
                fused[i] = True
                saved[i] += ob
                saved[p] += ob
    want = []
    for i, (_, kind, ops, _, rb) in enumerate(stmts):
        read = sum(4 * n * n if o in sizes else 4 * n for o in ops)
        if kind == 'ew':
            flops, byts, peak = n * n, read + rb, VECTOR
        elif kind in ('move', 'bcast'):
            flops, byts, peak = 0, read + rb, VECTOR
        elif kind == 'reduce':
            flops, byts, peak = n * n, read + rb, VECTOR
        else:
            flops, byts, peak = 2 * n ** 3, read + rb, MATMUL
        byts = max(byts - saved[i], 0)
        t = max(flops / peak, byts / HBM) + (0 if fused[i] else LAUNCH)
        want.append(t)
    text = ['@shard_map[mesh=m, in_specs=P(i), out_specs=(%s)]' % ', '.join('P(i)' for _ in outs),
            'def %s(x) {' % name]
    text += ['  ' + st[0] for st in stmts]
    text += ['  return %s' % ', '.join(outs), '}']
    return text, want, len(outs)


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 33
    programs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rng = random.Random(seed)
    checked = fused_seen = 0
    for prog in range(programs):
        n = rng.choice([64, 128, 256, 512])
        lines = ['mesh m = {i: 2}', 'g = full[shape=(%d, %d), value=1.0, dtype=f32]' % (2 * n, n)]
        expect = {}            # line number -> seconds
        for f in range(12):
            text, want, nout = body(rng, n, 'f%d' % f)
            first = len(lines) + 3          # the body's first equation, 1-based
            lines += text
            for k, t in enumerate(want):
                expect[first + k] = t
            lines.append('%s = f%d g' % (', '.join('r%d_%d' % (f, j) for j in range(nout)), f))
        tr = trace('\n'.join(lines) + '\n', 'h100')
        for line, t in expect.items():
            d = durations(tr, line)
            if not d:
                raise AssertionError('seed %d program %d: no event for line %d:\n%s' % (seed, prog, line,
                                                                                         lines[line - 1]))
            for vs in d.values():
                for v in vs:
                    close(v, t, 'seed %d program %d line %d: %s' % (seed, prog, line, lines[line - 1].strip()))
            checked += 1
            fused_seen += t < LAUNCH
    print('%d equations of %d random programs (seed %d) cost what the fusion model says' % (checked, programs, seed))
    return 0


if __name__ == '__main__':
    sys.exit(main())
