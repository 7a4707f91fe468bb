#!/usr/bin/env python3
# timeout: 300
"""Each cost formula, pinned: a collective or local equation modelled with
--abstract on a preset, its duration read from the trace file, against the
value computed here from the published formula (docs/cost.md):

  torus (the scaling book, "Sharded matrices", "A deeper dive into TPU
  communication primitives"): along one axis a bidirectional ring (a
  wraparound) gives 2 W per chip, a line W; all-gather and reduce-scatter
  take (N-1)/N V / bandwidth, all-reduce twice that, all-to-all
  V / (4 bandwidth); gathering over several axes adds their bandwidths;
  the time is never below hops * 1 us.
  switch (NCCL's ring, nccl-tests' bus bandwidth): (N-1)/N V / W per
  all-gather, twice for all-reduce, one NCCL latency per ring step;
  NVLink SHARP all-reduce V / W.
  roofline: max(FLOPs / peak, bytes / HBM bandwidth).

The formulas are pinned on each preset with what the peaks leave out set
aside (its kernel and collective overheads 0, its efficiencies 1: the
preset saved with --save-hardware and edited); overheads(), at the end,
checks that the presets add them back as docs/cost.md says.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _model import LINE, SHMAPI, close, collective_program, nbytes, one_duration, run, trace  # noqa: E402

V5E_W, V4_W, LAT = 4.5e10, 4.5e10, 1e-6
A100_NV, H100_NV, H100_NET = 12 * 25e9, 18 * 25e9, 50e9
NV_LAT, NET_LAT = 3.4e-6, 9.6e-6
checks = 0
PURE = {}


def pure(hw):
    """The preset `hw` without overheads and at full efficiency: a JSON file."""
    if hw not in PURE:
        fd, path = tempfile.mkstemp(suffix='.json')
        os.close(fd)
        subprocess.run([SHMAPI, '--hardware', hw, '--save-hardware', path], check=True)
        with open(path) as f:
            d = json.load(f)
        for k in ('kernel_overhead', 'collective_overhead'):
            d[k] = 0
        for k in ('link_efficiency', 'matmul_efficiency', 'switch_reduce_efficiency'):
            if k in d:
                d[k] = 1
        with open(path, 'w') as f:
            json.dump(d, f)
        PURE[hw] = path
    return PURE[hw]


def switch_allreduce(m, nodes, nv, net, sharp):
    """NCCL's all-reduce algorithms over `nodes` nodes of 8 (m bytes a
    member): (the fastest time, its name), as the tuner picks."""
    lg = math.ceil(math.log2(nodes)) if nodes > 1 else 0
    k, N = nodes, 8 * nodes
    cands = {
        'ring': 2 * max(7 / 8 * m / nv, (k - 1) / k * m / (8 * net)) + 2 * (N - k) * NV_LAT + 2 * (k - 1) * NET_LAT,
        'tree': 2 * max(m / nv, m / (8 * net)) + 2 * (7 * NV_LAT + lg * NET_LAT),
    }
    inside = (9 / 8 * m / nv, 2 * NV_LAT) if sharp else (2 * 7 / 8 * m / nv, 2 * 7 * NV_LAT)
    cands['hier+ring'] = sum(inside) + 2 * (k - 1) / k * (m / 8) / net + 2 * (k - 1) * NET_LAT
    cands['nvls+tree' if sharp else 'hier+tree'] = sum(inside) + 2 * (m / 8) / net + 2 * lg * NET_LAT
    best = min(cands, key=lambda a: cands[a])
    return cands[best], best


def huge_psum(want):
    """A psum of 4 B over 1,000,000 H100s, read from --time (a trace of a
    million devices would be slow): NVLink SHARP, then a tree of 17 levels."""
    global checks
    prog = ('mesh m = {n: 125000, g: 8}\n'
            '@shard_map[mesh=m, in_specs=(), out_specs=P()]\n'
            'def f() {\n'
            '  s = psum[axes=(n, g)] 1.0\n'
            '  return s\n'
            '}\n'
            'r = f\n')
    _, out, _ = run(prog, '--abstract', '--time', '--hardware', pure('h100'))
    m = re.search(r'^modelled on \S+: ([\d.]+) us$', out, re.M)
    assert m, out
    row = [ln for ln in out.split('\n') if '100.0%' in ln]
    assert row and ' nvls+tree ' in row[0], out
    close(float(m.group(1)) * 1e-6, want, 'a psum of 4 B over 1,000,000 H100s', rel=1e-3)
    checks += 1


def torus(hw, axes, line, block, want, what, place=None):
    global checks
    extra = ('--place', place) if place else ()
    got = one_duration(trace(collective_program(axes, line, block), pure(hw), *extra), LINE)
    close(got, want, what)
    checks += 1


def main():
    global checks
    blk = (512, 4096)
    n = nbytes(blk)
    # -- v5e {X: 8, Y: 4}: no wraparound (only full axes of 16 wrap): lines
    V = 4 * n
    torus('tpu-v5e', [('X', 8), ('Y', 4)], 'all_gather[axis_name=Y, axis=0, tiled=True] x', blk,
          max(3 / 4 * V / V5E_W, 3 * LAT), 'all-gather over a line of 4 (the book: 3 * 8.4e6 / 4.5e10 = 560 us)')
    torus('tpu-v5e', [('X', 8), ('Y', 4)], 'all_gather[axis_name=Y, axis=0, tiled=True] x', (64, 128),
          3 * LAT, 'latency-bound all-gather: 3 hops of 1 us (the book: 3 us)')
    torus('tpu-v5e', [('X', 8), ('Y', 4)], 'psum_scatter[axis_name=X, scatter_dimension=0, tiled=True] x', blk,
          max(7 / 8 * n / V5E_W, 7 * LAT), 'reduce-scatter over a line of 8')
    torus('tpu-v5e', [('X', 8), ('Y', 4)], 'psum[axes=X] x', blk,
          max(2 * 7 / 8 * n / V5E_W, 2 * 7 * LAT), 'all-reduce over a line of 8')
    # -- v5e {X: 16, Y: 16}: both axes wrap around: bidirectional rings
    V = 16 * n
    torus('tpu-v5e', [('X', 16), ('Y', 16)], 'all_gather[axis_name=Y, axis=0, tiled=True] x', blk,
          max(15 / 16 * V / (2 * V5E_W), 8 * LAT), 'all-gather over a ring of 16')
    torus('tpu-v5e', [('X', 16), ('Y', 16)], 'psum[axes=Y] x', blk,
          max(2 * 15 / 16 * n / (2 * V5E_W), 16 * LAT), 'all-reduce over a ring of 16')
    torus('tpu-v5e', [('X', 16), ('Y', 16)], 'all_to_all[axis_name=Y, split_axis=0, concat_axis=0, tiled=True] x',
          blk, max(16 * n / (4 * 2 * V5E_W), 8 * LAT), 'all-to-all over a ring of 16: V / (4 W_bidi)')
    V = 256 * n
    torus('tpu-v5e', [('X', 16), ('Y', 16)], 'all_gather[axis_name=(X, Y), axis=0, tiled=True] x', blk,
          max(255 / 256 * V / (2 * 2 * V5E_W), 16 * LAT), 'all-gather over two axes: twice the bandwidth')
    # -- one dimension of 16 shared by two axes: the major one is strided
    V = 4 * n
    torus('tpu-v5e', [('a', 4), ('b', 4)], 'all_gather[axis_name=b, axis=0, tiled=True] x', blk,
          max(3 / 4 * V / V5E_W, 3 * LAT), 'the minor axis: a line of 4', place='a=x,b=x')
    torus('tpu-v5e', [('a', 4), ('b', 4)], 'all_gather[axis_name=a, axis=0, tiled=True] x', blk,
          max(3 / 4 * V / (2 * V5E_W / 4), 8 * LAT), 'the major axis: a ring at stride 4, links shared by 4',
          place='a=x,b=x')
    # -- v4: a full 4x4x4 cube wraps around; a 2x2x4 does not
    torus('tpu-v4', [('X', 4), ('Y', 4), ('Z', 4)], 'all_gather[axis_name=X, axis=0, tiled=True] x', blk,
          max(3 / 4 * 4 * n / (2 * V4_W), 2 * LAT), 'v4 cube: a ring of 4')
    torus('tpu-v4', [('X', 4), ('Y', 4), ('Z', 4)], 'all_gather[axis_name=X, axis=0, tiled=True] x', (16,),
          2 * LAT, 'v4 cube, 256 bytes in all: latency-bound, 2 hops (the book: about 2 us)')
    torus('tpu-v4', [('X', 2), ('Y', 2), ('Z', 4)], 'all_gather[axis_name=Z, axis=0, tiled=True] x', blk,
          max(3 / 4 * 4 * n / V4_W, 3 * LAT), 'v4 2x2x4: no wraparound, a line of 4')
    # -- ppermute: link loads
    torus('tpu-v5e', [('X', 16), ('Y', 16)], 'ppermute[axis_name=Y, shift=1] x', blk,
          max(n / V5E_W, LAT), 'ppermute by 1 round a ring: one block per link')
    torus('tpu-v5e', [('X', 16), ('Y', 16)], 'ppermute[axis_name=Y, shift=2] x', blk,
          max(2 * n / V5E_W, 2 * LAT), 'ppermute by 2 round a ring: two blocks per link')
    torus('tpu-v5e', [('i', 4)], 'ppermute[axis_name=i, shift=1] x', blk,
          max(n / V5E_W, 3 * LAT), 'ppermute by 1 on a line of 4: the last block goes 3 hops back')
    torus('tpu-v5e', [('i', 4)], 'ppermute[axis_name=i, shift=1] x', (8,),
          3 * LAT, 'a small ppermute on a line: latency-bound')
    # -- switches
    V = 8 * n
    torus('a100', [('i', 8)], 'psum[axes=i] x', blk, 2 * 7 / 8 * n / A100_NV + 2 * 7 * NV_LAT,
          'ring all-reduce on 8 A100s (NVLink 600 GB/s both ways)')
    torus('a100', [('i', 8)], 'all_gather[axis_name=i, axis=0, tiled=True] x', blk, 7 / 8 * V / A100_NV + 7 * NV_LAT,
          'ring all-gather on 8 A100s')
    # NVLink SHARP: each member sends its block into the switch and takes
    # the reduced share back, (1 + 1/N) of it each way (changed from V / W:
    # the share taken back was left out)
    torus('h100', [('i', 8)], 'psum[axes=i] x', blk, 9 / 8 * n / H100_NV + 2 * NV_LAT,
          'NVLink SHARP all-reduce on 8 H100s')
    torus('h100', [('i', 8)], 'all_to_all[axis_name=i, split_axis=0, concat_axis=0, tiled=True] x', blk,
          7 / 8 * n / H100_NV + NV_LAT, 'all-to-all in an H100 node: B (N-1) / (W N^2), B the whole array')
    # across nodes the tuner picks the fastest of NCCL's algorithms (a
    # change: the ring alone was modelled before)
    want, algo = switch_allreduce(n, 2, A100_NV, 25e9, False)
    assert algo == 'tree', algo
    torus('a100', [('n', 2), ('g', 8)], 'psum[axes=(n, g)] x', blk, want,
          'all-reduce over 2 A100 nodes: the tree beats the ring (NVLink, then 8 x 200 Gb/s InfiniBand)')
    want, algo = switch_allreduce(n, 2, H100_NV, H100_NET, True)
    torus('h100', [('n', 2), ('g', 8)], 'psum[axes=(n, g)] x', blk, want,
          'all-reduce over 2 H100 nodes: the fastest of ring, tree and NVLS + ring/tree (%s)' % algo)
    want, algo = switch_allreduce(4, 125000, H100_NV, H100_NET, True)
    assert algo == 'nvls+tree' and want < 400e-6, (algo, want)      # not 8 s
    huge_psum(want)
    torus('h100', [('i', 16)], 'ppermute[axis_name=i, shift=1] x', blk, n / H100_NET + NET_LAT,
          'a ppermute that crosses nodes: over InfiniBand')
    # -- the other presets and primitives
    torus('tpu-v6e', [('X', 16), ('Y', 16)], 'all_gather[axis_name=X, axis=0, tiled=True] x', blk,
          max(15 / 16 * 16 * n / (2 * 9e10), 8 * LAT), 'v6e: a ring of 16 at 9e10 B/s a link')
    torus('tpu-v5p', [('X', 4), ('Y', 4), ('Z', 4)], 'psum[axes=(X, Y)] x', blk,
          max(2 * 15 / 16 * n / (2 * 2 * 9e10), 2 * 4 * LAT), 'v5p cube: an all-reduce over two rings')
    torus('tpu-v5e', [('X', 16), ('Y', 16)], 'pmean[axes=Y] x', blk,
          max(2 * 15 / 16 * n / (2 * V5E_W), 16 * LAT), 'pmean costs what psum costs')
    torus('tpu-v5e', [('X', 8), ('Y', 4)], 'all_gather_invariant[axis_name=Y, axis=0, tiled=True] x', blk,
          max(3 / 4 * 4 * n / V5E_W, 3 * LAT), 'all_gather_invariant costs what all_gather costs')
    torus('tpu-v5e', [('X', 16), ('Y', 8)], 'all_gather[axis_name=(X, Y), axis=0, tiled=True] x', blk,
          max(127 / 128 * 128 * n / (2 * V5E_W + V5E_W), (8 + 7) * LAT), 'a ring of 16 and a line of 8 together')
    torus('a100', [('i', 8)], 'psum_scatter[axis_name=i, scatter_dimension=0, tiled=True] x', blk,
          7 / 8 * n / A100_NV + 7 * NV_LAT, 'ring reduce-scatter on 8 A100s')
    torus('a100', [('n', 2), ('g', 8)], 'all_to_all[axis_name=(n, g), split_axis=0, concat_axis=0, tiled=True] x',
          blk, max(7 / 16 * n / A100_NV, n * 8 / 16 / 25e9) + NET_LAT,
          'all-to-all over 2 A100 nodes: half of each block leaves the node')
    # -- local rooflines
    local_checks()
    overheads()
    print('%d formulas checked' % checks)
    return 0


def overheads():
    """The presets as they are: a kernel pays its launch unless fused into
    its producer (whose result then never goes to HBM), a collective its
    fixed cost, links their achieved fraction (docs/cost.md, src/model/hw.c)."""
    global checks
    B, D, F = 512, 8192, 4096
    prog = ('mesh m = {i: 2}\n'
            'a = full[shape=(%d, %d), value=1.0, dtype=f32]\n'
            'w = full[shape=(%d, %d), value=1.0, dtype=f32]\n'
            '@shard_map[mesh=m, in_specs=(P(i), P()), out_specs=P(i)]\n'
            'def f(x, y) {\n'
            '  z = dot_general[dimension_numbers=(([1], [0]), ([], []))] x y\n'
            '  e = exp z\n'
            '  return e\n'
            '}\n'
            'r = f a w\n') % (2 * B, D, D, F)
    tr = trace(prog, 'h100')
    flops = 2 * B * D * F
    close(one_duration(tr, 6), max(flops / (4.945e14 * 0.808), 4 * (B * D + D * F) / 3.35e12) + 1e-6,
          'dot_general on H100 with exp fused into it: its result stays on chip, one launch')
    close(one_duration(tr, 7), max(B * F / 6.7e13, 4 * B * F / 3.35e12), 'the fused exp: no launch, no read of z')
    # an HBM-bound producer: the transpose reads its operand and, its result
    # fused into the exp, writes nothing; the exp writes its result
    prog = ('mesh m = {i: 2}\n'
            'a = full[shape=(%d, %d), value=1.0, dtype=f32]\n'
            '@shard_map[mesh=m, in_specs=P(i), out_specs=P(None, i)]\n'
            'def f(x) {\n'
            '  t = transpose[permutation=(1, 0)] x\n'
            '  e = exp t\n'
            '  return e\n'
            '}\n'
            'r = f a\n') % (2 * B, D)
    tr = trace(prog, 'h100')
    close(one_duration(tr, 5), 4 * B * D / 3.35e12 + 1e-6, 'a transpose whose result stays on chip: its read, a launch')
    close(one_duration(tr, 6), max(B * D / 6.7e13, 4 * B * D / 3.35e12), 'the exp fused into it: its write')
    blk = (512, 4096)
    n = nbytes(blk)
    got = one_duration(trace(collective_program([('i', 8)], 'psum[axes=i] x', blk), 'a100'), LINE)
    close(got, 2 * 7 / 8 * n / (0.783 * A100_NV) + 2 * 7 * NV_LAT + 8.4e-6, 'ring all-reduce on 8 A100s as NCCL runs it')
    got = one_duration(trace(collective_program([('X', 8), ('Y', 4)], 'all_gather[axis_name=Y, axis=0, tiled=True] x',
                                                (64, 128)), 'tpu-v5e'), LINE)
    close(got, 3 * LAT + 5e-6, 'a latency-bound all-gather on v5e: 3 hops and the 5 us of a TPU collective')
    checks += 7


def local(hw, text, line, want, what):
    global checks
    close(one_duration(trace(text, pure(hw) if not hw.endswith('.json') else hw), line), want, what)
    checks += 1


def local_checks():
    B, D, F = 512, 8192, 4096
    prog = ('mesh m = {i: 2}\n'
            'a = full[shape=(%d, %d), value=1.0, dtype=f32]\n'
            'w = full[shape=(%d, %d), value=1.0, dtype=f32]\n'
            '@shard_map[mesh=m, in_specs=(P(i), P()), out_specs=P(i)]\n'
            'def f(x, y) {\n'
            '  z = dot_general[dimension_numbers=(([1], [0]), ([], []))] x y\n'
            '  e = exp z\n'
            '  u = dynamic_update_slice z e 0 0\n'
            '  return u\n'
            '}\n'
            'r = f a w\n') % (2 * B, D, D, F)
    flops, byts = 2 * B * D * F, 4 * (B * D + D * F + B * F)
    local('tpu-v5e', prog, 6, max(flops / 1.97e14, byts / 8.1e11), 'dot_general on v5e (f32 at the bf16 rate)')
    local('h100', prog, 6, max(flops / 4.945e14, byts / 3.35e12), 'dot_general on H100 (f32 at the TF32 rate)')
    local('h100', prog, 7, max(B * F / 6.7e13, 8 * B * F / 3.35e12), 'exp on H100: the CUDA cores, HBM-bound')
    local('tpu-v5e', prog, 8, 2 * 4 * B * F / 8.1e11, 'dynamic_update_slice in place: the update read and written')
    # an embedding lookup and its gradient: gather reads the indices and the
    # rows and writes them; scatter-add, in place, reads the indices and the
    # updates and reads and writes the rows (one addition per element)
    V, E, K = 50000, 512, 1 << 14
    gprog = ('mesh m = {i: 2}\n'
             't = full[shape=(%d, %d), value=1.0, dtype=f32]\n'
             'ix = full[shape=(%d, 1), value=3, dtype=i32]\n'
             '@shard_map[mesh=m, in_specs=(P(), P(i)), out_specs=P(i)]\n'
             'def g(tab, j) {\n'
             '  r = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), '
             'start_index_map=(0,)), slice_sizes=(1, %d)] tab j\n'
             '  s = scatter-add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), '
             'inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))] tab j r\n'
             '  return s\n'
             '}\n'
             'q = g t ix\n') % (V, E, 2 * K, E)
    local('tpu-v5e', gprog, 6, (4 * K + 2 * 4 * K * E) / 8.1e11, 'gather: indices, rows read and written')
    local('tpu-v5e', gprog, 7, max(K * E / 1.97e14, (4 * K + 3 * 4 * K * E) / 8.1e11),
          'scatter-add in place: indices, updates, rows read and written')
    # an FFT counts 5 N log2 N operations per transform of N points (half for
    # a real one); on a chip whose vector units are slow it is compute-bound
    N, T = 1 << 16, 64
    fprog = ('mesh m = {i: 2}\n'
             'x = full[shape=(%d, %d), value=1.0, dtype=c64]\n'
             '@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]\n'
             'def g(b) {\n'
             '  y = fft[fft_type=FFT, fft_lengths=(%d,)] b\n'
             '  z = fft[fft_type=IRFFT, fft_lengths=(%d,)] y\n'
             '  return z\n'
             '}\n'
             'r = g x\n') % (2 * T, N, N, 2 * N - 2)
    slow = dict(name='slow-vector', peak_flops={'f32': 1e14}, vector_flops=1e11, hbm_bandwidth=1e12,
                hbm_capacity=16e9, topology='torus', pod=[2], wraparound_multiple=2, links_per_chip=2, link_bandwidth=1e10,
                hop_latency=1e-6)
    with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as f:
        json.dump(slow, f)
    try:
        flops = T * 5 * N * 16
        local(f.name, fprog, 5, max(flops / 1e11, 16 * T * N / 1e12), 'fft: 5 N log2 N on the vector units')
        n = 2 * N - 2
        local(f.name, fprog, 6, max(T * 2.5 * n * math.log2(n) / 1e11, (8 * T * N + 4 * T * n) / 1e12),
              'irfft: half of it')
        # a sort counts n log2 n comparisons a row of n (a comparison a key);
        # top_k sorts its rows the same way
        sprog = ('mesh m = {i: 2}\n'
                 'x = full[shape=(%d, %d), value=1.0, dtype=f32]\n'
                 '@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]\n'
                 'def g(b) {\n'
                 '  i = iota[dtype=i32, shape=(%d, %d), dimension=1]\n'
                 '  s, p = sort[dimension=1, num_keys=1] b i\n'
                 '  v, j = top_k[k=8] s\n'
                 '  return v\n'
                 '}\n'
                 'r = g x\n') % (2 * T, N, T, N)
        local(f.name, sprog, 6, max(T * N * 16 / 1e11, 4 * 4 * T * N / 1e12), 'sort: n log2 n comparisons a row')
        local(f.name, sprog, 7, max(T * N * 16 / 1e11, (4 * T * N + 8 * T * 8) / 1e12), 'top_k: the same')
    finally:
        os.unlink(f.name)


if __name__ == '__main__':
    sys.exit(main())
