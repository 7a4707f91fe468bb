#!/usr/bin/env python3
"""`show` of shard_map, pmap and xmap functions prints valid input that means the same.

For each program below: run it with `show NAME` to get the checked form of
NAME, then replace the definition of NAME by what show printed and run
again. The results must be the same, and showing the re-read function must
print the same text once more (show is a fixed point after one round:
the first round may rename binders).

    SHMAPI=build/shmapi python3 tests/spmd/show_roundtrip.test.py [-v]
"""

import os
import subprocess
import sys
import tempfile

# (name, prelude, definition of NAME, statements that use NAME)
PROGRAMS = [
    ('matmul_basic', '''
mesh m = {i: 4, j: 2}
a0 = arange[stop=128, dtype=f32]
a = reshape[new_sizes=(8, 16)] a0
b0 = arange[stop=64, dtype=f32]
b = reshape[new_sizes=(16, 4)] b0
''', '''
@shard_map[mesh=m, in_specs=(P(i, j), P(j, None)), out_specs=P(i, None)]
def matmul_basic(a_block, b_block) {
  c_partialsum = dot_general[dimension_numbers=(([1], [0]), ([], []))] a_block b_block
  c_block = psum[axes=j] c_partialsum
  return c_block
}
''', '''
c = matmul_basic a b
print c
'''),
    ('collectives', '''
mesh m = {i: 2, j: 2}
x0 = arange[stop=32, dtype=f32]
x = reshape[new_sizes=(8, 4)] x0
''', '''
@shard_map[mesh=m, in_specs=P(('j', 'i'), None), out_specs=(P(i, j), P((i, j)), P(), P(j), P(i, j), P((j, i)), P(None, (i, j)))]
def collectives(a) {
  g = all_gather[axis_name=(i, j), axis=1, tiled=False] a
  s = psum_scatter[axis_name=j, scatter_dimension=1, tiled=True] a
  r = reduce_scatter[axis_name=(j, i), scatter_dimension=1] g
  m = pmean[axes=(i, j)] a
  mx = pmax[axes=i] a
  p = ppermute[axis_name=(i, j), perm=((0, 3), (3, 0), (1, 2))] a
  t = all_to_all[axis_name=i, split_axis=1, concat_axis=0, tiled=True] a
  k = axis_index[axis_name=(j, i)]
  kf = convert_element_type[new_dtype=f32] k
  u = add t kf
  return a, r, m, mx, s, p, u
}
''', '''
r1, r2, r3, r4, r5, r6, r7 = collectives x
print r1, r2, r3, r4, r5, r6, r7
'''),
    ('branchy', '''
mesh m = {i: 4}
''', '''
def small(v) {
  r = neg v
  return r
}
def large(v) {
  r = mul v 100
  return r
}
def more(n, v) {
  p = lt n 3
  return p
}
def step(n, v) {
  n2 = add n 1
  v2 = mul v 2
  return n2, v2
}
@shard_map[mesh=m, in_specs=P(i), out_specs=(P(i), P(i), P(i))]
def branchy(a) {
  idx = axis_index[axis_name=i]
  half = rem idx 2
  b = cond[branches=(small, large)] half a
  n, c = while[cond_jaxpr=more, body_jaxpr=step] idx a
  def rot(k, acc, cur) {
    nxt = ppermute[axis_name=i, perm=((0, 1), (1, 2), (2, 3), (3, 0))] cur
    acc2 = add acc nxt
    return acc2, nxt
  }
  tot, last = fori_loop[lower=0, upper=3, body=rot] a a
  return b, c, tot
}
''', '''
x = [1, 2, 3, 4]
b, c, t = branchy x
print b, c, t
'''),
    ('closes', '''
mesh m = {i: 2}
w = [10, 20]
''', '''
@shard_map[mesh=m, in_specs=P(i), out_specs=(P(i), P())]
def closes(a) {
  b = add a w
  n = psum[axes=i] 1
  c = mul w n
  return b, c
}
''', '''
x = [1, 2, 3, 4]
b, c = closes x
print b, c
'''),
    ('noargs', '''
mesh m = {i: 3, j: 2}
''', '''
@shard_map[mesh=m, in_specs=(), out_specs=(P((j, i)), P())]
def noargs() {
  k = axis_index[axis_name=(j, i)]
  k1 = reshape[new_sizes=(1,)] k
  n = psum[axes=(i, j)] 1
  return k1, n
}
''', '''
k, n = noargs
print k, n
'''),
    ('eqn_form', '''
mesh m = {i: 2, j: 2}
def body(a, b) {
  s = psum[axes=j] a
  t = add s b
  u = all_gather_invariant[axis_name=i, tiled=True] t
  return t, u
}
x0 = arange[stop=16]
x = reshape[new_sizes=(4, 4)] x0
y = [[1, 2], [3, 4], [5, 6], [7, 8]]
''', '''
def eqn_form(x:i32[4,4], y:i32[4,2]) {
  t, u = shard_map[f=body, mesh=m, in_specs=(P(i, j), P(i)), out_specs=(P(i, None), P(None, None))] x y
  return t, u
}
''', '''
t, u = eqn_form x y
print t, u
'''),
    ('pmapped', '''
''', '''
@pmap[axis_name=i, in_axes=(0, None), out_axes=(1, None)]
def pmapped(xs, w) {
  @pmap[axis_name=j]
  def inner(x) {
    s = psum[axes=(i, j)] x
    k = axis_index[axis_name=j]
    kf = convert_element_type[new_dtype=f32] k
    t = add s kf
    return t
  }
  y = inner xs
  z = mul y w
  tot = psum[axes=i] z
  return z, tot
}
''', '''
a = arange[stop=24, dtype=f32]
xs = reshape[new_sizes=(2, 3, 4)] a
z, tot = pmapped xs 2.0
print z, tot
'''),
    ('xmapped', '''
mesh m = {x: 2, y: 2}
''', '''
@xmap[in_axes=([batch, inputs, ...], [inputs, hidden, ...]), out_axes=([hidden, batch, ...], [...]),
      axis_resources={batch: x, hidden: y}, mesh=m]
def xmapped(images, w1) {
  def helper(v, w) {
    u = pdot[axis_name=inputs] v w
    r = max u 0.0
    return r
  }
  h:f32[]<inputs:3,batch:4,hidden:6> = pbroadcast[axes=(hidden,)] images
  r = helper images w1
  c = axis_index[axis_name=batch]
  cf = convert_element_type[new_dtype=f32] c
  s = add r cf
  g = all_gather[axis_name=hidden, axis=0] s
  tot = reduce_sum[axes=(0, batch)] g
  p = ppermute[axis_name=batch, shift=1] s
  return p, tot
}
''', '''
a = arange[stop=12, dtype=f32]
images = reshape[new_sizes=(4, 3)] a
b = arange[stop=18, dtype=f32]
w1 = reshape[new_sizes=(3, 6)] b
p, tot = xmapped images w1
print p, tot
'''),
    ('xmap_eqn', '''
''', '''
def xmap_eqn(x:i32[3,2]) {
  def body(v) {
    w = pshuffle[axis_name=n, perm=(2, 0, 1)] v
    m = pmax[axes=n] v
    d = sub w m
    return d
  }
  y = xmap[f=body, in_axes={0: n}, out_axes={1: n}] x
  return y
}
''', '''
x0 = arange[stop=6]
x = reshape[new_sizes=(3, 2)] x0
y = xmap_eqn x
print y
'''),
    ('unchecked', '''
mesh m = {i: 4}
''', '''
@shard_map[mesh=m, in_specs=P(i), out_specs=P(), check_vma=False]
def unchecked(a) {
  b = mul a 3.0
  return b
}
''', '''
x = [1.0, 2.0, 3.0, 4.0]
y = unchecked x
print y
'''),
]


def run(shmapi, text, tmp, tag):
    path = os.path.join(tmp, tag + '.shm')
    with open(path, 'w') as f:
        f.write(text)
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    p = subprocess.run([shmapi, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, env=env, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def main():
    verbose = '-v' in sys.argv[1:]
    shmapi = os.environ.get('SHMAPI') or 'build/shmapi'
    failed = 0
    with tempfile.TemporaryDirectory(prefix='shm-show-') as tmp:
        for name, prelude, defn, use in PROGRAMS:
            problems = []
            # the original: its results, then its show
            rc, want, err = run(shmapi, prelude + defn + use, tmp, name + '_0')
            rc2, out0, err2 = run(shmapi, prelude + defn + use + 'show %s\n' % name, tmp, name + '_s')
            show1 = out0[len(want):]
            if rc or rc2 or out0[:len(want)] != want:
                problems.append('the original fails:\n' + err + err2)
            else:
                # round 1: show's text in place of the definition
                text1 = prelude + show1 + use + 'show %s\n' % name
                rc, out1, err = run(shmapi, text1, tmp, name + '_1')
                if rc:
                    problems.append('show output does not run:\n%s\n--- program:\n%s' % (err, text1))
                else:
                    got1, show2 = out1[:len(want)], out1[len(want):]
                    if got1 != want:
                        problems.append('results differ after one round:\n%s--- expected:\n%s' % (got1, want))
                    # round 2: a fixed point
                    text2 = prelude + show2 + use + 'show %s\n' % name
                    rc, out2, err = run(shmapi, text2, tmp, name + '_2')
                    if rc:
                        problems.append('show output of the re-read function does not run:\n' + err)
                    else:
                        got2, show3 = out2[:len(want)], out2[len(want):]
                        if got2 != want:
                            problems.append('results differ after two rounds')
                        if show3 != show2:
                            problems.append('show is not a fixed point:\n%s--- then:\n%s' % (show2, show3))
            if problems:
                failed += 1
                print('not ok - %s' % name)
                for p in problems:
                    print('  ' + p.replace('\n', '\n  '))
            elif verbose:
                print('ok - %s' % name)
    print('%d passed, %d failed' % (len(PROGRAMS) - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
