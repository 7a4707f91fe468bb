#!/usr/bin/env python3
# timeout: 180
"""The validation table of docs/cost.md holds: for each row, shmapi's
modelled value (computed here by running it) is the one the table prints,
and it is within the row's tolerance of the published figure.

Rows are identified by their first cell (V1, V2, ...); the table's
columns are: id | case | published | source | modelled | tolerance.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _model import LINE, collective_program, one_duration, run, trace  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def us(t):
    return t * 1e6


def coll(hw, axes, line, block, dtype='f32'):
    return one_duration(trace(collective_program(axes, line, block, dtype), hw), LINE)


def limit_of(hw, B, D, F, dtype):
    prog = ('mesh m = {i: 1}\n'
            'a = full[shape=(%d, %d), value=1.0, dtype=%s]\n'
            'w = full[shape=(%d, %d), value=1.0, dtype=%s]\n'
            '@shard_map[mesh=m, in_specs=(P(), P()), out_specs=P()]\n'
            'def f(x, y) {\n'
            '  z = dot_general[dimension_numbers=(([1], [0]), ([], []))] x y\n'
            '  return z\n'
            '}\n'
            'r = f a w\n') % (B, D, dtype, D, F, dtype)
    for e in trace(prog, hw)['traceEvents']:
        if e.get('ph') == 'X' and e['args']['line'] == 6:
            return e['args']['limit']
    raise AssertionError('no dot_general event')


def critical_batch(hw):
    """The smallest batch B at which a [B, D] @ [D, F] matmul with large D, F
    is compute-bound (the scaling book's rule: bf16 operands)."""
    return _critical(hw, 'bf16')


def _critical(hw, dtype):
    D = F = 1 << 20
    lo, hi = 1, 4096
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if limit_of(hw, mid, D, F, dtype) == 'FLOPs':
            hi = mid
        else:
            lo = mid
    return hi


def report_numbers(path, *args):
    _, out, _ = run(open(os.path.join(ROOT, path)).read(), '--time', *args)
    m = re.search(r'^modelled on \S+: ([\d.]+) (us|ms)$', out, re.M)
    total = float(m.group(1)) * (1e-3 if m.group(2) == 'ms' else 1e-6)
    row = re.search(r'^  0-3 +(\S+ \S+) +(\S+ \S+) +(\S+ \S+)', out, re.M)

    def secs(s):
        v, u = s.split()
        return float(v) * {'ns': 1e-9, 'us': 1e-6, 'ms': 1e-3, 's': 1}[u]
    return total, secs(row.group(2)), secs(row.group(3))


def modelled():
    v = {}
    v['V1'] = us(coll('tpu-v5e', [('X', 8), ('Y', 4)], 'all_gather[axis_name=Y, axis=0, tiled=True] x', (512, 8192),
                      'bf16'))
    v['V2'] = us(coll('tpu-v5e', [('X', 8), ('Y', 4)], 'all_gather[axis_name=Y, axis=0, tiled=True] x', (64, 128)))
    ag16 = coll('tpu-v5e', [('X', 16), ('Y', 16)], 'all_gather[axis_name=Y, axis=0, tiled=True] x', (128, 4096))
    v['V3'] = us(ag16)
    ar16 = coll('tpu-v5e', [('X', 16), ('Y', 16)], 'psum[axes=Y] x', (2048, 4096))
    v['V4'] = ar16 / ag16
    a2a = coll('tpu-v5e', [('X', 16), ('Y', 16)],
               'all_to_all[axis_name=Y, split_axis=0, concat_axis=0, tiled=True] x', (128, 4096))
    v['V5'] = a2a / ag16
    v['V6'] = us(coll('tpu-v4', [('X', 4), ('Y', 4), ('Z', 4)], 'all_gather[axis_name=X, axis=0, tiled=True] x',
                      (16,)))
    v['V7'] = critical_batch('tpu-v5e')
    v['V8'] = critical_batch('h100')
    S = 1 << 30                           # 1 GiB per GPU
    t = coll('a100', [('i', 8)], 'psum[axes=i] x', (S // 4,))
    v['V9'] = S / t * 2 * 7 / 8 / 1e9     # nccl-tests' bus bandwidth, GB/s
    t = coll('a100', [('i', 8)], 'all_gather[axis_name=i, axis=0, tiled=True] x', (S // 32,))
    v['V10'] = S / t * 7 / 8 / 1e9
    ag_total, ag_comm, ag_exposed = report_numbers('examples/matmul_allgather_8k.shm', '--abstract')
    cm_total, cm_comm, cm_exposed = report_numbers('examples/collective_matmul_8k.shm', '--abstract')
    v['V11'] = ag_exposed / ag_comm
    v['V12'] = ag_total / cm_total
    assert cm_exposed < cm_comm, 'the collective matmul hides some of its communication'
    return v


def main():
    doc = open(os.path.join(ROOT, 'docs', 'cost.md')).read()
    rows = {}
    for line in doc.split('\n'):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 6 and re.fullmatch(r'V\d+', cells[0]):
            rows[cells[0]] = cells
    got = modelled()
    problems = []
    for key, val in got.items():
        if key not in rows:
            problems.append('%s: no row in docs/cost.md' % key)
            continue
        _, case, published, _, shown, tol = rows[key]
        num = lambda s: float(re.match(r'[~<>]?\s*([\d.]+)', s).group(1))
        if abs(num(shown) - val) > 0.006 * abs(val) + 0.051:
            problems.append('%s (%s): the table shows %s, shmapi models %.4g' % (key, case, shown, val))
        rel = num(tol.rstrip('%')) / 100
        if abs(val - num(published)) > rel * num(published):
            problems.append('%s (%s): modelled %.4g is not within %s of the published %s' % (key, case, val, tol,
                                                                                            published))
    if set(rows) - set(got):
        problems.append('rows without a check: %s' % sorted(set(rows) - set(got)))
    for p in problems:
        print('FAIL: ' + p)
    print('%d validation rows: %d hold' % (len(got), len(got) - len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
