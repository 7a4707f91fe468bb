"""The adjoint identity <f_t(y), x> == <y, f(x)> (docs/language.md, linear_transpose), up to
rounding, for random x and y:

  * on every example of seed 004 (examples 1-5, the cursed identity, the
    all_gather and all_gather_invariant variants), several draws each;
  * on randomly generated linear shard_map programs (_shmgen.py): meshes of
    one or two axes, random in/out specs, chains of linear local
    primitives, control flow, calls and collectives, some plain functions,
    some linear in only part of their parameters.

Programs are batched, many per shmapi run; the inner products are computed
inside shm in f64 and printed with full precision.  A batch that fails to
run is re-run program by program to name the culprit, whose source is
printed.  Fixed seed: the same programs every run.

Run by tests/run.py with SHMAPI set; cwd is the repository root.
"""

# timeout: 120

import os
import random
import sys

sys.dont_write_bytecode = True       # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _batch  # noqa: E402
import _shmgen  # noqa: E402

SHMAPI = os.environ.get('SHMAPI', 'build/shmapi')
SEED = int(os.environ.get('SHM_ADJOINT_SEED', '20230804'))   # the month of seed 004
N_RANDOM = int(os.environ.get('SHM_ADJOINT_N', '3000'))
BATCH = 100
DRAWS = 5                # random x, y per seed example
# |lhs - rhs| <= TOL * (sum |<f_t(y), x>| terms + sum |<y, f(x)>| terms)
#                + SCALE * sum |x| * sum |y|   (cancellations inside f or f_t)
TOL64, TOL32 = 1e-10, 2e-5
SCALE64, SCALE32 = 1e-13, 1e-6

# ---------------------------------------------------------------- examples
# (name, definitions, function, params [(name, block shape, global shape,
#  linear)], results [(global shape, dtype)])

EXAMPLES = [
    ('ex1_psum_unmapped', '''
mesh M = {i: 8}
@shard_map[mesh=M, in_specs=P(i), out_specs=P()]
def F(x:f64[3,4]) {
  w = reduce_sum[axes=(0, 1)] x
  y = psum[axes=i] w
  return y
}
''', [('x0', (24, 4), True)], [((), 'f64')]),
    ('ex1_dot', '''
mesh M = {i: 8}
@shard_map[mesh=M, in_specs=P(i), out_specs=P()]
def F(x:f64[3,4]) {
  w0 = arange[stop=12, dtype=f64]
  w1 = mul w0 0.3
  w2 = sin w1
  w = reshape[new_sizes=(3, 4)] w2
  v = dot_general[dimension_numbers=(([0, 1], [0, 1]), ([], []))] x w
  y = psum[axes=i] v
  return y
}
''', [('x0', (24, 4), True)], [((), 'f64')]),
    ('ex2_psum_mapped', '''
mesh M = {i: 8}
@shard_map[mesh=M, in_specs=(P(i), P(i)), out_specs=P(i)]
def F(x:f64[1,4], y:f64[1,4]) {
  a0 = arange[stop=16, dtype=f64]
  a1 = mul a0 0.25
  a = reshape[new_sizes=(4, 4)] a1
  u = dot_general[dimension_numbers=(([1], [0]), ([], []))] x a
  s = psum[axes=i] u
  z = mul s y
  return z
}
''', [('x0', (8, 4), True), ('w1', (8, 4), False)], [((8, 4), 'f64')]),
    ('ex3_cursed_identity', '''
mesh M = {i: 8}
@shard_map[mesh=M, in_specs=P(), out_specs=P()]
def F(x:f64[3]) {
  return x
}
''', [('x0', (3,), True)], [((3,), 'f64')]),
    ('ex4_all_gather_invariant', '''
mesh M = {i: 8}
@shard_map[mesh=M, in_specs=P(i), out_specs=P()]
def F(x:f64[1]) {
  y = all_gather_invariant[axis_name=i, tiled=True] x
  return y
}
''', [('x0', (8,), True)], [((8,), 'f64')]),
    ('ex5_all_gather', '''
mesh M = {i: 8}
@shard_map[mesh=M, in_specs=(P(i), P(i)), out_specs=P(i)]
def F(x:f64[1], y:f64[8]) {
  z = all_gather[axis_name=i, tiled=True] x
  w = mul z y
  return w
}
''', [('x0', (8,), True), ('w1', (64,), False)], [((64,), 'f64')]),
    ('ex5_all_gather_invariant', '''
mesh M = {i: 8}
@shard_map[mesh=M, in_specs=(P(i), P(i)), out_specs=P(i)]
def F(x:f64[1], y:f64[8]) {
  z = all_gather_invariant[axis_name=i, tiled=True] x
  w = mul z y
  return w
}
''', [('x0', (8,), True), ('w1', (64,), False)], [((64,), 'f64')]),
    ('ex5_both_linear', '''
mesh M = {i: 8}
@shard_map[mesh=M, in_specs=(P(i), P()), out_specs=(P(i), P())]
def F(x:f64[1], y:f64[8]) {
  z = all_gather[axis_name=i, tiled=True] x
  s = psum[axes=i] z
  t = mul y 2.0
  u = add s t
  return z, u
}
''', [('x0', (8,), True), ('x1', (8,), True)], [((64,), 'f64'), ((8,), 'f64')]),
]


def example_program(k, name, defs, params, results, rng):
    fname, mesh = 'f%d' % k, 'm%d' % k
    text = defs.replace('def F(', 'def %s(' % fname).replace('M', mesh)
    ps = [{'name': n, 'glob': g, 'lin': lin} for n, g, lin in params]
    lines = ['# ---- example %s (program %d)' % (name, k), text.strip()]
    more, scale = _shmgen.harness(rng, k, fname, ps, results, short=rng.random() < 0.5)
    return _shmgen.Program(k, '\n'.join(lines + more) + '\n', False, 'example ' + name, scale)


# ---------------------------------------------------------------- running

def judge(p, vals):
    """None if the identity holds, else a message."""
    if vals is None:
        return 'no result line'
    lhs, rhs, la, ra = vals
    tol = (TOL32 if p.lowprec else TOL64) * (la + ra) + \
        (SCALE32 if p.lowprec else SCALE64) * p.scale + 1e-12
    if abs(lhs - rhs) <= tol:
        return None
    return '<f_t(y), x> = %r but <y, f(x)> = %r (|diff| %.3g > tol %.3g)' % (lhs, rhs, abs(lhs - rhs), tol)


def main():
    rng = random.Random(SEED)
    progs = []
    k = 0
    for name, defs, params, results in EXAMPLES:
        for _ in range(DRAWS):
            progs.append(example_program(k, name, defs, params, results, rng))
            k += 1
    nex = len(progs)
    for _ in range(N_RANDOM):
        progs.append(_shmgen.gen_program(rng, k))
        k += 1
    failures = _batch.run_all(SHMAPI, progs, 'adj', 4, judge, 90, BATCH)
    print('%d seed-example runs and %d random programs; %d failed'
          % (nex, len(progs) - nex, len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
