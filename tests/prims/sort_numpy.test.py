#!/usr/bin/python3
# timeout: 300
"""sort, top_k, approx_top_k and cumlogsumexp on random arrays, against NumPy.

Random cases (3000 by default) in a few shmapi runs: random shapes (rank 1
to 3, empty dimensions, rows longer than the insertion sort's 24 and a
few thousand long), every dtype (bool, i8 ... u64, bf16, f16, f32, f64,
c64, c128), values drawn from small pools (many ties) or at random, with
NaNs of both signs and two payloads, infinities and signed zeros.
Inputs go in through .npy files, results come back through `save`
and are compared bit for bit (values and indices):

  sort       np.argsort(kind='stable') for one key, np.lexsort for several
             (complex keys as their real and imaginary parts: JAX's order,
             which NumPy's differs from only for NaN imaginary parts); every
             operand permuted by that order must be the result, bit for bit
             (so -0.0 and NaN payloads stay where a stable sort puts them).
  top_k      the stable order of the complemented total-order keys of the
             bits (IEEE totalOrder, largest first, lower index first).
  approx     approx_max_k: NaN first, then values largest first (-0.0 = 0.0),
             stably; approx_min_k: np.argsort(kind='stable'); the first m,
             m = k, or XLA's approximate size when aggregate_to_topk=False.
  cumlse     JAX's logaddexp folded in order, in the operand's precision
             (f16 in NumPy's float16 arithmetic, bf16 in float32 rounded each
             operation, f32 and f64 against the fold in f64): f64 within
             1e-12, f32 within 1e-5, f16 and bf16 within 2 units in the
             last place (relative to the value, or absolute near zero).

A tenth of the cases run inside a shard_map over 2 devices (the operands
split along dimension 0; the sort along any dimension, so along 0 it sorts
each device's block).

    SHMAPI=build/shmapi python3 tests/prims/sort_numpy.test.py --seed 7 --count 20000
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, shmapi_under_test  # noqa: E402

DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bf16", "f16", "f32", "f64", "c64", "c128"]
NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
      "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "f32": np.float32,
      "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
FLOATS = ["bf16", "f16", "f32", "f64"]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# ---- values ---------------------------------------------------------------------------

def bf16_bits(f):
    """float32 values -> bfloat16 bits (nearest even; NaN kept quiet)."""
    f = np.asarray(f, np.float32)
    u = f.view(np.uint32)
    s16 = np.uint32(16)
    with np.errstate(over="ignore"):
        r = ((u + np.uint32(0x7FFF) + ((u >> s16) & np.uint32(1))) >> s16).astype(np.uint16)
    return np.where(np.isnan(f), ((u >> s16) | np.uint32(0x40)).astype(np.uint16), r)


def bf16_f32(bits):
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def real_pool(rng):
    """Float values: specials (NaNs of both signs, two payloads), a few
    numbers (ties), random ones."""
    nan2 = np.array([0x7FC00001], np.uint32).view(np.float32)[0]
    pool = [np.nan, -np.nan, nan2, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-3]
    return pool + list(rng.standard_normal(4) * 10)


def rand_real(rng, dt, shape):
    """f32 values for a float dtype (bf16/f16 rounded later)."""
    mode = rng.integers(3)
    n = int(np.prod(shape))
    if mode == 0:
        v = rng.choice(np.array(real_pool(rng), np.float32), size=n)
    elif mode == 1:
        v = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 2.0], np.float32), size=n)
    else:
        v = (rng.standard_normal(n) * 100).astype(np.float32)
        special = rng.random(n) < 0.1
        v[special] = rng.choice(np.array(real_pool(rng)[:7], np.float32), size=int(special.sum()))
    return v.reshape(shape)


def rand_array(rng, dt, shape):
    """A random array of dtype dt (bf16 as its bits, uint16)."""
    if dt == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt[0] in "iu":
        info = np.iinfo(NP[dt])
        if rng.integers(2):
            lo, hi = max(int(info.min), -3), min(int(info.max), 3)
            return rng.integers(lo, hi + 1, size=shape).astype(NP[dt])
        return rng.integers(int(info.min), int(info.max), size=shape, dtype=NP[dt], endpoint=True)
    if dt == "bf16":
        return bf16_bits(rand_real(rng, dt, shape))
    if dt in ("f16", "f32", "f64"):
        return rand_real(rng, dt, shape).astype(NP[dt])
    return complex_of(rand_real(rng, dt, shape), rand_real(rng, dt, shape), NP[dt])


def complex_of(re, im, ct):
    z = np.empty(re.shape, ct)
    z.real = re
    z.imag = im
    return z


def rand_shape(rng):
    r = int(rng.integers(1, 4))
    u = rng.random()
    if u < 0.08:
        return (int(rng.integers(100, 3000)),)
    if u < 0.35:
        s = [int(rng.integers(1, 4)) for _ in range(r)]
        s[int(rng.integers(r))] = int(rng.integers(25, 90))
        return tuple(s)
    return tuple(int(rng.integers(0 if rng.random() < 0.05 else 1, 7)) for _ in range(r))


# ---- the model ----------------------------------------------------------------------------

def as_float(a, dt):
    """Values in a dtype NumPy sorts (bf16 -> float32)."""
    return bf16_f32(a) if dt == "bf16" else a


def sort_order(ops, dts, nk, d):
    """JAX's sort permutation along d by the first nk operands."""
    keys = []
    for a, dt in zip(ops[:nk], dts[:nk]):
        v = as_float(a, dt)
        if dt in ("c64", "c128"):
            keys += [v.real, v.imag]
        else:
            keys.append(v)
    if len(keys) == 1:
        return np.argsort(keys[0], axis=d, kind="stable")
    return np.lexsort(tuple(reversed(keys)), axis=d)


def total_key(a, dt):
    """Unsigned integers in the IEEE total order of a's values."""
    if dt == "bool":
        return a.astype(np.uint8)
    w = a.dtype.itemsize
    ut = UINT[w]
    u = a.view(ut)
    sign = ut(1) << ut(8 * w - 1)
    if dt[0] == "i":
        return u ^ sign
    if dt[0] == "u":
        return u
    return np.where(u & sign, ~u, u | sign).astype(ut)


def approx_size(n, rank, k, recall, aggregate, override):
    """XLA's ApproxTopKReductionOutputSize (written from its comments)."""
    if aggregate:
        return k
    tiling = 1024 if rank == 1 else 128
    if n <= tiling:
        return n
    logical = override if override >= 0 else n
    if k == 1:
        return tiling
    m = int((1.0 - k) / np.log(float(np.float32(recall))))
    m = min(max(m, tiling), n)
    red = int(np.floor(np.log2(logical // m))) if logical // m > 0 else 0
    if red == 0:
        return n
    cap = int(np.ceil(np.log2(n // tiling))) if n // tiling > 1 else 0
    red = min(red, cap)
    return -(-(-(-n // tiling)) // (1 << red)) * tiling


def take(a, order, d):
    return np.take_along_axis(a, order, axis=d)


def lae(a, b, f):
    """JAX's logaddexp in the arithmetic f (a function rounding each result)."""
    with np.errstate(all="ignore"):
        amax = f(np.where(np.isnan(a) | np.isnan(b), np.nan, np.maximum(a, b)))
        delta = f(a - b)
        big = f(amax + f(np.log1p(f(np.exp(f(-np.abs(delta)))))))
        return np.where(np.isnan(delta), f(a + b), big)


def cumlse(x, dt, axis, reverse):
    """The fold, in dt's arithmetic; f64 and f32 in f64."""
    if dt == "f16":
        v, f = x.astype(np.float16), lambda y: np.asarray(y, np.float16)
    elif dt == "bf16":
        v, f = bf16_f32(x), lambda y: bf16_f32(bf16_bits(np.asarray(y, np.float32)))
    else:
        v, f = x.astype(np.float64), lambda y: np.asarray(y, np.float64)
    v = np.moveaxis(v, axis, 0)
    if reverse:
        v = v[::-1]
    out = np.empty_like(v)
    acc = f(np.full(v.shape[1:], -np.inf))
    for t in range(v.shape[0]):
        acc = lae(acc, v[t], f)
        out[t] = acc
    if reverse:
        out = out[::-1]
    return np.moveaxis(out, 0, axis)


# ---- cases ---------------------------------------------------------------------------------

class Case:
    def __init__(self, k):
        self.k = k
        self.ins = {}        # name -> array (bf16 as bits)
        self.dts = {}
        self.lines = []
        self.want = {}       # output name -> (array, dtype, how)
        self.desc = ""


def prim_text(c, op, prm, args, outs):
    return "%s = %s[%s] %s" % (", ".join(outs), op, prm, " ".join(args))


def gen_sort(rng, c):
    nops = int(rng.integers(1, 4))
    nk = int(rng.integers(1, nops + 1))
    shape = rand_shape(rng)
    d = int(rng.integers(-len(shape), len(shape)))
    if rng.random() < 0.4:           # along the longest dimension: the radix sorts, not the insertion sort
        d = int(np.argmax(shape))
    dts = [DTYPES[int(rng.integers(len(DTYPES)))] for _ in range(nops)]
    ops = [rand_array(rng, dt, shape) for dt in dts]
    order = sort_order(ops, dts, nk, d % len(shape))
    wants = [(take(a, order, d % len(shape)), dt) for a, dt in zip(ops, dts)]
    prm = "dimension=%d, is_stable=%s, num_keys=%d" % (d, ["True", "False"][int(rng.integers(2))], nk)
    c.desc = "sort %s %s dimension=%d num_keys=%d" % (shape, dts, d, nk)
    return "sort", prm, ops, dts, wants


def gen_top_k(rng, c):
    dt = [t for t in DTYPES if t[0] != "c"][int(rng.integers(13))]
    shape = rand_shape(rng)
    ax = int(rng.integers(-len(shape), len(shape)))
    if rng.random() < 0.4:
        ax = int(np.argmax(shape)) - len(shape)
    a = rand_array(rng, dt, shape)
    n = shape[ax]
    k = int(rng.integers(0, n + 1))
    order = np.argsort(~total_key(a, dt), axis=ax % len(shape), kind="stable")
    order = np.take(order, np.arange(k), axis=ax % len(shape))
    wants = [(take(a, order, ax % len(shape)), dt), (order.astype(np.int32), "i32")]
    prm = "k=%d" % k if ax == -1 and rng.integers(2) else "axis=%d, k=%d" % (ax, k)
    c.desc = "top_k %s %s %s" % (shape, dt, prm)
    return "top_k", prm, [a], [dt], wants


def gen_approx(rng, c):
    dt = FLOATS[int(rng.integers(4))]
    if rng.random() < 0.3:
        shape = (int(rng.integers(1, 3)), int(rng.integers(129, 600))) if rng.integers(2) else (int(rng.integers(1025, 3000)),)
    else:
        shape = rand_shape(rng)
    d = int(rng.integers(-len(shape), len(shape)))
    dd = d % len(shape)
    if shape[dd] == 0:
        shape = shape[:dd] + (3,) + shape[dd + 1:]
    a = rand_array(rng, dt, shape)
    n = shape[dd]
    k = int(rng.integers(1, n + 1)) if rng.random() < 0.7 else int(rng.integers(1, min(n, 4) + 1))
    is_max = bool(rng.integers(2))
    agg = bool(rng.random() < 0.6)
    recall = [0.95, 0.9, 0.99, 0.5][int(rng.integers(4))]
    m = approx_size(n, len(shape), k, recall, agg, -1)
    v = as_float(a, dt).astype(np.float64)
    if is_max:
        nan = np.isnan(v)
        order = np.lexsort((np.where(nan, 0, -v), np.where(nan, 0, 1)), axis=dd)
    else:
        order = np.argsort(v, axis=dd, kind="stable")
    order = np.take(order, np.arange(m), axis=dd)
    wants = [(take(a, order, dd), dt), (order.astype(np.int32), "i32")]
    prm = "k=%d, reduction_dimension=%d, is_max_k=%s, recall_target=%s, aggregate_to_topk=%s" % (
        k, d, is_max, recall, agg)
    c.desc = "approx_top_k %s %s %s" % (shape, dt, prm)
    return "approx_top_k", prm, [a], [dt], wants


def gen_cumlse(rng, c):
    dt = FLOATS[int(rng.integers(4))]
    shape = rand_shape(rng)
    if np.prod(shape) > 400:
        shape = (int(rng.integers(1, 60)),)
    ax = int(rng.integers(-len(shape), len(shape)))
    if rng.random() < 0.5:
        v = (rng.standard_normal(shape) * 5).astype(np.float32)
        if rng.random() < 0.3 and v.size:
            v.flat[int(rng.integers(v.size))] = [np.inf, -np.inf, np.nan][int(rng.integers(3))]
    else:
        v = rand_real(rng, dt, shape)
    a = bf16_bits(v) if dt == "bf16" else v.astype(NP[dt])
    rev = bool(rng.integers(2))
    wants = [(cumlse(a, dt, ax % len(shape), rev), dt)]
    prm = "axis=%d, reverse=%s" % (ax, rev)
    c.desc = "cumlogsumexp %s %s %s" % (shape, dt, prm)
    return "cumlogsumexp", prm, [a], [dt], wants


def make_case(rng, k):
    c = Case(k)
    u = rng.random()
    gen = gen_sort if u < 0.55 else gen_top_k if u < 0.75 else gen_approx if u < 0.87 else gen_cumlse
    op, prm, ops, dts, wants = gen(rng, c)
    names = ["a%d_%d" % (k, j) for j in range(len(ops))]
    for nm, a, dt in zip(names, ops, dts):
        c.ins[nm] = a.view("V2") if dt == "bf16" else a
    outs = ["r%d_%d" % (k, j) for j in range(len(wants))]
    sharded = rng.random() < 0.1 and ops[0].shape[0] % 2 == 0 and op != "approx_top_k" \
        and not (op == "top_k" and prm_dim(op, prm, ops[0].ndim) == 0)
    if sharded:
        # each device's block: the model of a sort along 0 sorts each half
        c.desc += " in shard_map"
        half = ops[0].shape[0] // 2
        d = prm_dim(op, prm, ops[0].ndim)
        if d == 0 and half:
            sub = [gen_sub(op, prm, [a[:half] for a in ops], dts), gen_sub(op, prm, [a[half:] for a in ops], dts)]
            wants = [(np.concatenate([s[j][0] for s in sub], axis=0), wants[j][1]) for j in range(len(wants))]
        spec = "(%s)" % ", ".join(["P(i)"] * len(ops))
        ospec = "(%s)" % ", ".join(["P(i)"] * len(outs))
        c.lines += ["@shard_map[mesh=m, in_specs=%s, out_specs=%s]" % (spec, ospec),
                    "def f%d(%s) {" % (k, ", ".join("p%d" % j for j in range(len(ops)))),
                    "  " + prim_text(c, op, prm, ["p%d" % j for j in range(len(ops))], ["q%d" % j for j in range(len(outs))]),
                    "  return %s" % ", ".join("q%d" % j for j in range(len(outs))), "}"]
    c.lines += ['%s = load "%s.npy"' % (nm, nm) for nm in names]
    if sharded:
        c.lines.append("%s = f%d %s" % (", ".join(outs), k, " ".join(names)))
    else:
        c.lines.append(prim_text(c, op, prm, names, outs))
    c.lines += ['save "%s.npy" %s' % (o, o) for o in outs]
    c.want = {o: w for o, w in zip(outs, wants)}
    c.op = op
    return c


def prm_dim(op, prm, rank):
    for part in prm.split(", "):
        key, val = part.split("=")
        if key in ("dimension", "axis", "reduction_dimension"):
            return int(val) % rank
    return rank - 1


def gen_sub(op, prm, ops, dts):
    """The model of one device's block (a sort or top_k along dimension 0)."""
    d = prm_dim(op, prm, ops[0].ndim)
    if op == "sort":
        nk = int(prm.split("num_keys=")[1])
        order = sort_order(ops, dts, nk, d)
        return [(take(a, order, d), dt) for a, dt in zip(ops, dts)]
    if op == "top_k":
        k = int(prm.split("k=")[-1])
        order = np.argsort(~total_key(ops[0], dts[0]), axis=d, kind="stable")
        order = np.take(order, np.arange(k), axis=d)
        return [(take(ops[0], order, d), dts[0]), (order.astype(np.int32), "i32")]
    return [(cumlse(ops[0], dts[0], d, "reverse=True" in prm), dts[0])]


# ---- comparing ----------------------------------------------------------------------------

def ulp_ok(got, want, dt):
    g = bf16_f32(got.view(np.uint16)) if dt == "bf16" else got.astype(np.float64)
    w = bf16_f32(want) if dt == "bf16" and want.dtype == np.uint16 else want.astype(np.float64)
    g, w = g.astype(np.float64), w.astype(np.float64)
    tol = {"f64": 1e-12, "f32": 1e-5, "f16": 2 * 2.0 ** -10, "bf16": 2 * 2.0 ** -7}[dt]
    with np.errstate(all="ignore"):
        close = np.abs(g - w) <= tol * np.maximum(np.abs(w), 1.0)
    same = (g == w) | (np.isnan(g) & np.isnan(w)) | close
    return bool(np.all(same))


def compare(c, tmp):
    bad = []
    for o, (want, dt) in c.want.items():
        path = os.path.join(tmp, o + ".npy")
        if not os.path.exists(path):
            return ["%s: no result %s" % (c.desc, o)]
        got = np.load(path)
        if got.shape != want.shape:
            bad.append("%s: %s has shape %s, not %s" % (c.desc, o, got.shape, want.shape))
            continue
        if c.op == "cumlogsumexp":
            if not ulp_ok(got, want, dt):
                bad.append("%s: %s is\n%r\nnot\n%r" % (c.desc, o, got, want))
            continue
        gb = got.view(np.uint16) if dt == "bf16" else got
        wb = want.view(np.uint16) if dt == "bf16" else want
        if gb.dtype != wb.dtype or gb.tobytes() != wb.tobytes():
            bad.append("%s: %s is\n%r\nnot\n%r" % (c.desc, o, gb, wb))
    return bad


def run_batch(shmapi, cases, keep):
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            for k, v in c.ins.items():
                np.save(os.path.join(tmp, k + ".npy"), v)
        prog = ["mesh m = {i: 2}"] + [ln for c in cases for ln in c.lines]
        with open(os.path.join(tmp, "prog.shm"), "w") as f:
            f.write("\n".join(prog) + "\n")
        p = subprocess.run([shmapi, "prog.shm"], cwd=tmp, capture_output=True, text=True,
                           env=dict(os.environ, LC_ALL="C", OPENBLAS_NUM_THREADS="1"))
        if keep:
            subprocess.run(["cp", "-r", tmp, keep])
        if p.returncode:
            return ["shmapi failed on a batch:\n%s" % p.stderr[:3000]]
        bad = []
        for c in cases:
            bad += compare(c, tmp)
        return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=750)
    ap.add_argument("--keep", default=None)
    args = ap.parse_args()
    shmapi = os.path.abspath(shmapi_under_test())
    rng = np.random.default_rng(args.seed)
    cases = [make_case(rng, k) for k in range(args.count)]
    bad = []
    for i in range(0, len(cases), args.batch):
        bad += run_batch(shmapi, cases[i:i + args.batch], args.keep)
    for m in bad[:8]:
        print(m)
        print()
    counts = {}
    for c in cases:
        counts[c.op] = counts.get(c.op, 0) + 1
    print("%d cases (%s), seed %d: %d wrong" % (len(cases), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                                                 args.seed, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
