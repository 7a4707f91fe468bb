#!/usr/bin/env python3
# timeout: 400
"""The validation table of docs/cost.md: measured, published numbers
against what shmapi models for them.  For each row this recomputes the
modelled value (by running shmapi on the row's configuration, with the
presets as they are: one set of constants for every row), checks that
the table prints it and its error, and fails when the error is past the
row's tolerance.  It also checks the summary under the table and in the
README (the median and the worst absolute error).

The table's columns: id | measured | configuration | source | published
| modelled | error | tolerance | why it misses.  Rows marked calibration
in their `why` cell are the measurement a constant was set from (their
error is small by construction); they count in the summary like the
others.
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _model import LINE, collective_program, one_duration, run, trace  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def coll(hw, axes, line, block, dtype='f32'):
    return one_duration(trace(collective_program(axes, line, block, dtype), hw), LINE)


def makespan(text, hw, *extra):
    _, out, _ = run(text, '--abstract', '--time', '--hardware', hw, *extra)
    m = re.search(r'^modelled on \S+: ([\d.]+) (ns|us|ms|s)$', out, re.M)
    return float(m.group(1)) * {'ns': 1e-9, 'us': 1e-6, 'ms': 1e-3, 's': 1}[m.group(2)]


def pallas_baseline(d):
    """JAX's Pallas collective-matmul doc, its reference: an NCCL all-gather
    of the f16 activations (1024 x 4096 a GPU), then a cuBLAS matmul with
    the 4096 x 4096 weights, on d H100s."""
    prog = ('mesh m = {i: %d}\n'
            'a = full[shape=(%d, 4096), value=1.0, dtype=f16]\n'
            'w = full[shape=(4096, 4096), value=1.0, dtype=f16]\n'
            '@shard_map[mesh=m, in_specs=(P(i), P()), out_specs=P(i)]\n'
            'def f(x, y) {\n'
            '  g = all_gather[axis_name=i, axis=0, tiled=True] x\n'
            '  z = dot_general[dimension_numbers=(([1], [0]), ([], []))] g y\n'
            '  return z\n'
            '}\n'
            'r = f a w\n') % (d, 1024 * d)
    return makespan(prog, 'h100') * 1e6


def busbw_allreduce(hw, n=8, size=1 << 30):
    """nccl-tests' bus bandwidth (GB/s) of an all-reduce of `size` bytes a GPU."""
    t = coll(hw, [('i', n)], 'psum[axes=i] x', (size // 4,))
    return size / t * 2 * (n - 1) / n / 1e9


def modelled():
    v = {}
    # the scaling book, "Sharded matrices": AllGather over Y of {X: 8, Y: 4} on v5e
    v['M1'] = coll('tpu-v5e', [('X', 8), ('Y', 4)], 'all_gather[axis_name=Y, axis=0, tiled=True] x', (512, 8192),
                   'bf16') * 1e6
    v['M2'] = coll('tpu-v5e', [('X', 8), ('Y', 4)], 'all_gather[axis_name=Y, axis=0, tiled=True] x', (64, 256),
                   'bf16') * 1e6
    # JAX's shard_map notebook: the profiles of all-gather + matmul and the collective matmul
    ag = makespan(open(os.path.join(ROOT, 'examples/matmul_allgather_8k.shm')).read(), 'tpu-v5e')
    cm = makespan(open(os.path.join(ROOT, 'examples/collective_matmul_8k.shm')).read(), 'tpu-v5e')
    v['M3'] = ag / cm
    for key, d in (('M4', 2), ('M5', 4), ('M6', 8)):
        v[key] = pallas_baseline(d)
    one = ('mesh m = {i: 1}\n'
           'a = full[shape=(1024, 4096), value=1.0, dtype=f16]\n'
           'w = full[shape=(4096, 4096), value=1.0, dtype=f16]\n'
           '@shard_map[mesh=m, in_specs=(P(), P()), out_specs=P()]\n'
           'def f(x, y) {\n'
           '  z = dot_general[dimension_numbers=(([1], [0]), ([], []))] x y\n'
           '  return z\n'
           '}\n'
           'r = f a w\n')
    v['M7'] = makespan(one, 'h100') * 1e6
    v['M8'] = busbw_allreduce('h100')
    v['M9'] = busbw_allreduce('a100')
    # Megatron-LM's GPT-3 175B on 1024 A100s: one iteration (a pipeline
    # program, modelled with --abstract)
    prog = open(os.path.join(ROOT, 'tests/cost/_gpt3_175b_pipeline.shm')).read()
    v['M10'] = makespan(prog, 'a100')
    # PaLM 540B on a pod of 3072 TPU v4 chips: model FLOPs utilization,
    # the paper's FLOPs per token (6 N + 12 L H Q T) over the modelled step
    prog = open(os.path.join(ROOT, 'tests/cost/_palm_540b_step.shm')).read()
    step = makespan(prog, 'tpu-v4')
    n, layers, heads, q, t = 540.35e9, 118, 48, 256, 2048
    per_token = 6 * n + 12 * layers * heads * q * t
    v['M11'] = 100 * 1024 * t * per_token / (step * 3072 * 2.75e14)
    return v


def num(s):
    return float(re.match(r'[~<>]?\s*([-+]?[\d.]+)', s.replace('\u2212', '-')).group(1))


def main():
    doc = open(os.path.join(ROOT, 'docs', 'cost.md')).read()
    rows = {}
    for line in doc.split('\n'):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 9 and re.fullmatch(r'M\d+', cells[0]):
            rows[cells[0]] = cells
    got = modelled()
    problems, errors = [], []
    for key, val in sorted(got.items(), key=lambda kv: int(kv[0][1:])):
        if key not in rows:
            problems.append('%s: no row in docs/cost.md' % key)
            continue
        _, what, _, _, published, shown, err, tol, _ = rows[key]
        pub = num(published)
        e = (val - pub) / pub
        errors.append(abs(e))
        if abs(num(shown) - val) > 0.006 * abs(val) + 0.051:
            problems.append('%s (%s): the table shows %s, shmapi models %.4g' % (key, what, shown, val))
        if abs(num(err) - 100 * e) > 0.6:
            problems.append('%s (%s): the table shows an error of %s, it is %+.1f%%' % (key, what, err, 100 * e))
        if abs(e) > num(tol) / 100:
            problems.append('%s (%s): modelled %.4g is %+.1f%% from the measured %s, past %s' % (key, what, val,
                                                                                                 100 * e, published, tol))
    if set(rows) - set(got):
        problems.append('rows without a check: %s' % sorted(set(rows) - set(got)))
    if len(rows) < 11:
        problems.append('fewer than 11 measured rows')
    med, worst = 100 * statistics.median(errors), 100 * max(errors)
    summary = 'median absolute error %.1f%%, worst %.1f%%' % (med, worst)
    for path in ('docs/cost.md', 'README.md'):
        if summary not in open(os.path.join(ROOT, path)).read():
            problems.append('%s does not say "%s"' % (path, summary))
    for p in problems:
        print('FAIL: ' + p)
    print('%d validation rows: %d hold; %s' % (len(got), len(got) - len(problems), summary))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
