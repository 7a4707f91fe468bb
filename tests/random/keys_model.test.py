#!/usr/bin/env python3
# timeout: 300
"""Typed keys and rng_bit_generator on random programs against a model in
Python, compared bit for bit.

The model is written from JAX's and XLA's sources, apart from shmapi's C:
threefry2x32 (jax/_src/random/threefry2x32.py: threefry_seed,
threefry_2x32, _threefry_split_original and _foldlike,
_threefry_random_bits_original and _partitionable, threefry_fold_in) and
Philox 4x32 as XLA's prng.cc and RngBitGeneratorExpander compute
rng_bit_generator (the u32[4] key as the u64[2] state, little-endian).
Each case is one of

  * seed: random_seed[impl=fry] of integers of every dtype (i8 ... u64,
    with their extremes and negative values), of rank 0 to 2;
  * split: random_split (shape=(...) of rank 0 to 2, count=N or num=N) of
    typed keys key<fry>[K] (K of rank 0 to 2, sizes 0 to 3, made by
    random_wrap of random words) or of a raw key u32[2];
  * bits: random_bits of bit_width 8, 16, 32 or 64 and shape of rank 0 to
    3 (odd sizes too), of typed or raw keys;
  * fold_in: random_fold_in of typed keys and integer data of any dtype,
    broadcast (scalars, equal shapes, size-1 dimensions);
  * rbg: rng_bit_generator of a random u32[4] key (words near 2^32 and
    2^64 too, where the counter carries), dtype uint8 ... uint64, shape of
    rank 0 to 3, both results;

each under jax_threefry_partitionable True or False (the parameter
written, or by default through --jax).  Keys are saved as their data
(random_unwrap).  Cases run 150 to a process; a failing process names its
cases.  SHM_KEYS_SEED picks another seed, SHM_KEYS_N the number of cases.
Run by tests/run.py with SHMAPI set; needs NumPy.
"""

import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, shmapi_under_test  # noqa: E402

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1

# ---- the model ---------------------------------------------------------------------------


def rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & M32


def threefry(k0, k1, x0, x1):
    """Threefry 2x32, 20 rounds (Salmon et al. 2011), as JAX applies it."""
    ks = [k0, k1, k0 ^ k1 ^ 0x1BD11BDA]
    rots = [[13, 15, 26, 6], [17, 29, 16, 24]]
    x0, x1 = (x0 + ks[0]) & M32, (x1 + ks[1]) & M32
    for i in range(5):
        for r in rots[i % 2]:
            x0 = (x0 + x1) & M32
            x1 = rotl(x1, r) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & M32
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & M32
    return x0, x1


def threefry_2x32(key, counts):
    """jax's threefry_2x32: the counts cut in halves (odd: padded), hashed."""
    n = len(counts)
    h = (n + 1) // 2
    c = list(counts) + [0] * (2 * h - n)
    out0, out1 = [], []
    for i in range(h):
        a, b = threefry(key[0], key[1], c[i], c[h + i])
        out0.append(a)
        out1.append(b)
    return (out0 + out1)[:n]


def split(key, n, part):
    if part:
        return [list(threefry(key[0], key[1], i >> 32, i & M32)) for i in range(n)]
    w = threefry_2x32(key, list(range(2 * n)))
    return [w[2 * i:2 * i + 2] for i in range(n)]


def bits(key, width, n, part):
    if part:
        out = []
        for i in range(n):
            a, b = threefry(key[0], key[1], i >> 32, i & M32)
            out.append((a << 32 | b) if width == 64 else (a ^ b) & ((1 << width) - 1))
        return out
    words = -(-width * n // 32)
    w = threefry_2x32(key, list(range(words)))
    if width == 64:
        return [w[i] << 32 | w[n + i] for i in range(n)]
    per = 32 // width
    return [(w[i // per] >> (width * (i % per))) & ((1 << width) - 1) for i in range(n)]


def seed(v, dt):
    wide = np.dtype(dt).itemsize == 8
    v = int(v) & M64
    return [(v >> 32) & M32 if wide else 0, v & M32]


def fold_in(key, d):
    return threefry_2x32(key, [0, int(d) & M32])


def philox(x, k0, k1):
    for _ in range(10):
        p0, p1 = x[0] * 0xD2511F53, x[2] * 0xCD9E8D57
        x = [(p1 >> 32) ^ x[1] ^ k0, p1 & M32, (p0 >> 32) ^ x[3] ^ k1, p0 & M32]
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return x


def rbg(key, width, n):
    """rng_bit_generator (RNG_DEFAULT on CPU): the bits and the new key."""
    s0, s1 = key[1] << 32 | key[0], key[3] << 32 | key[2]
    nwords = 2 * n if width == 64 else n
    blocks = -(-nwords // 4)
    words = []
    for b in range(blocks):
        c = s1 + b
        lo, hi = c & M64, (s0 + (c >> 64)) & M64
        words += philox([lo & M32, lo >> 32, hi & M32, hi >> 32], s0 & M32, s0 >> 32)
    if width == 64:
        out = [words[2 * i + 1] << 32 | words[2 * i] for i in range(n)]
    else:
        out = [w & ((1 << width) - 1) for w in words[:n]]
    ns = (s1 + blocks) & M64
    return out, [key[0], key[1], ns & M32, ns >> 32]


# ---- the cases ---------------------------------------------------------------------------

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
UDT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def shape(rng, rank, hi):
    return tuple(rng.randint(0, hi) for _ in range(rank))


def tup(s):
    return "(" + "".join("%d, " % d for d in s).rstrip(" ") + ")" if s else "()"


def words(rng, n):
    pick = [0, 1, M32, M32 - 1, 0x80000000]
    return [rng.choice(pick) if rng.random() < 0.2 else rng.getrandbits(32) for _ in range(n)]


class Case:
    """One case: its shm lines, its inputs (name -> array) and the arrays
    its saves must hold (file -> array)."""

    def __init__(self, i):
        self.i, self.lines, self.ins, self.want = i, [], {}, {}

    def name(self, s):
        return "c%d_%s" % (self.i, s)

    def load(self, s, arr):
        self.ins[self.name(s)] = arr
        self.lines.append('%s = load "%s.npy"' % (self.name(s), self.name(s)))
        return self.name(s)

    def save(self, var, arr):
        f = "out_%s" % var
        self.lines.append('save "%s.npy" %s' % (f, var))
        self.want[f] = arr


def typed_keys(c, rng, rank):
    ks = shape(rng, rank, 4)
    n = int(np.prod(ks)) if ks else 1
    data = np.array(words(rng, 2 * n), np.uint32).reshape(ks + (2,))
    d = c.load("kd", data)
    c.lines.append("%s = random_wrap[impl=fry] %s" % (c.name("k"), d))
    return c.name("k"), ks, data.reshape(-1, 2).tolist()


def part_param(rng, default):
    """The partitionable parameter written (or not: the run's default)."""
    p = rng.choice([None, True, False])
    return ("" if p is None else ", partitionable=%s" % p), (default if p is None else p)


def case_seed(c, rng, default):
    dt = rng.choice(INTS)
    info = np.iinfo(dt)
    s = shape(rng, rng.randint(0, 2), 4)
    n = int(np.prod(s)) if s else 1
    vals = [rng.choice([info.min, info.max, 0, -1 if info.min < 0 else 1]) if rng.random() < 0.3
            else rng.randint(int(info.min), int(info.max)) for _ in range(n)]
    a = c.load("s", np.array(vals, dt).reshape(s))
    c.lines.append("%s = random_seed[impl=fry] %s" % (c.name("k"), a))
    c.lines.append("%s = random_unwrap %s" % (c.name("d"), c.name("k")))
    c.save(c.name("d"), np.array([seed(v, dt) for v in vals], np.uint32).reshape(s + (2,)))


def case_split(c, rng, default):
    raw = rng.random() < 0.25
    form = rng.choice(["shape", "count", "num", "none"])
    sh = shape(rng, rng.randint(0, 2), 5) if form == "shape" else (rng.randint(0, 5),) if form != "none" else (2,)
    param = {"shape": "shape=%s" % tup(sh), "count": "count=%d" % sh[0] if sh else "",
             "num": "num=%d" % sh[0] if sh else "", "none": ""}[form]
    pp, part = part_param(rng, default)
    params = (param + pp).lstrip(", ")
    n = int(np.prod(sh)) if sh else 1
    if raw:
        key = words(rng, 2)
        k = c.load("raw", np.array(key, np.uint32))
        c.lines.append("%s = random_split%s %s" % (c.name("s"), "[%s]" % params if params else "", k))
        c.save(c.name("s"), np.array(split(key, n, part), np.uint32).reshape(sh + (2,)))
        return
    k, ks, keys = typed_keys(c, rng, rng.randint(0, 2))
    c.lines.append("%s = random_split%s %s" % (c.name("s"), "[%s]" % params if params else "", k))
    c.lines.append("%s = random_unwrap %s" % (c.name("d"), c.name("s")))
    want = [split(key, n, part) for key in keys]
    c.save(c.name("d"), np.array(want, np.uint32).reshape(ks + sh + (2,)))


def case_bits(c, rng, default):
    width = rng.choice([8, 16, 32, 64])
    sh = shape(rng, rng.randint(0, 3), 7)
    pp, part = part_param(rng, default)
    n = int(np.prod(sh)) if sh else 1
    if rng.random() < 0.25:
        key = words(rng, 2)
        k, ks, keys = c.load("raw", np.array(key, np.uint32)), (), [key]
    else:
        k, ks, keys = typed_keys(c, rng, rng.randint(0, 2))
    c.lines.append("%s = random_bits[bit_width=%d, shape=%s%s] %s" % (c.name("b"), width, tup(sh), pp, k))
    want = [bits(key, width, n, part) for key in keys]
    c.save(c.name("b"), np.array(want, UDT[width]).reshape(ks + sh))


def case_fold_in(c, rng, default):
    k, ks, keys = typed_keys(c, rng, rng.randint(0, 2))
    dt = rng.choice(INTS)
    info = np.iinfo(dt)
    form = rng.choice(["scalar", "same", "ones"]) if ks else "scalar"
    ds = () if form == "scalar" else ks if form == "same" else tuple(1 if rng.random() < 0.5 else d for d in ks)
    if form != "scalar" and ks and rng.random() < 0.3:     # keys broadcast against the data
        ds = ks
        kb = tuple(1 for _ in ks)
        data = np.array(words(rng, 2), np.uint32).reshape(kb + (2,))
        k = c.load("kb", data)
        c.lines.append("%s = random_wrap[impl=fry] %s" % (c.name("kw"), k))
        k, keys = c.name("kw"), data.reshape(-1, 2).tolist()
        keyshape = kb
    else:
        keyshape = ks
    n = int(np.prod(ds)) if ds else 1
    vals = np.array([rng.randint(int(info.min), int(info.max)) for _ in range(n)], dt).reshape(ds)
    m = c.load("m", vals)
    c.lines.append("%s = random_fold_in %s %s" % (c.name("f"), k, m))
    c.lines.append("%s = random_unwrap %s" % (c.name("d"), c.name("f")))
    out = np.broadcast_shapes(keyshape, ds)
    kk = np.broadcast_to(np.arange(len(keys)).reshape(keyshape), out).reshape(-1)
    vv = np.broadcast_to(vals, out).reshape(-1)
    want = [fold_in(keys[int(i)], int(v) & M64) for i, v in zip(kk, vv)]
    c.save(c.name("d"), np.array(want, np.uint32).reshape(out + (2,)))


def case_rbg(c, rng, default):
    width = rng.choice([8, 16, 32, 64])
    sh = shape(rng, rng.randint(0, 3), 7)
    n = int(np.prod(sh)) if sh else 1
    key = words(rng, 4)
    if rng.random() < 0.3:                 # the counter near a carry
        key[2], key[3] = M32 - rng.randint(0, 3), M32
    k = c.load("rk", np.array(key, np.uint32))
    alg = rng.choice(["", "algorithm=RNG_DEFAULT, ", "algorithm=RNG_PHILOX, "])
    c.lines.append("%s, %s = rng_bit_generator[%sdtype=uint%d, shape=%s] %s"
                   % (c.name("nk"), c.name("b"), alg, width, tup(sh), k))
    out, nk = rbg(key, width, n)
    c.save(c.name("b"), np.array(out, UDT[width]).reshape(sh))
    c.save(c.name("nk"), np.array(nk, np.uint32))


KINDS = [case_seed, case_split, case_bits, case_bits, case_fold_in, case_rbg, case_rbg]


def run_batch(shmapi, cases, jax):
    with tempfile.TemporaryDirectory() as tmp:
        lines = []
        for c in cases:
            for k, a in c.ins.items():
                np.save(os.path.join(tmp, k + ".npy"), a)
            lines += c.lines
        with open(os.path.join(tmp, "prog.shm"), "w") as f:
            f.write("\n".join(lines) + "\n")
        p = subprocess.run([shmapi, "--jax", jax, "prog.shm"], cwd=tmp, capture_output=True, text=True,
                           env=dict(os.environ, LC_ALL="C"))
        if p.returncode:
            return ["shmapi failed on a batch:\n%s" % p.stderr[:2000]]
        bad = []
        for c in cases:
            for f, want in c.want.items():
                got = np.load(os.path.join(tmp, f + ".npy"))
                if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
                    bad.append("--jax %s, case %d:\n%s\ngives %r\nnot %r" % (jax, c.i, "\n".join(c.lines), got, want))
        return bad


def main():
    shmapi = os.path.abspath(shmapi_under_test())
    s = int(os.environ.get("SHM_KEYS_SEED", "20261127"))
    total = int(os.environ.get("SHM_KEYS_N", "2100"))
    rng = random.Random(s)
    bad, counts, done = [], {}, 0
    while done < total:
        jax = rng.choice(["0.4.30", "0.5.0"])
        default = jax == "0.5.0"
        cases = []
        for i in range(min(150, total - done)):
            c = Case(done + i)
            kind = rng.choice(KINDS)
            kind(c, rng, default)
            counts[kind.__name__] = counts.get(kind.__name__, 0) + 1
            cases.append(c)
        bad += run_batch(shmapi, cases, jax)
        done += len(cases)
    for m in bad[:5]:
        print(m)
        print()
    print("%d cases (seed %d: %s): %d problems" % (done, s, ", ".join(
        "%s %d" % (k[5:], v) for k, v in sorted(counts.items())), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
