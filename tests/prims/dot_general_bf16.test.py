#!/usr/bin/python3
"""dot_general on bf16 and f16 inputs against NumPy, as XLA's CPU backend computes it.

For random operands (values rounded to bfloat16, or float16, in NumPy) and
the layouts matmul, batched matmul, vector dot, transposed operands and two
contracting dimensions, one shm program (a pasted jaxpr, as JAX prints it)
computes

    p = dot_general[... preferred_element_type=float32] a b    f32: accumulated in f32
    q = dot_general[... preferred_element_type=None] a b       bf16/f16: rounded once
    r = dot_general[... preferred_element_type=bfloat16] a b   (what JAX prints for q)

and saves them.  NumPy computes the exact products in float64; then

  - p is float32 and within the f32 summation error of the exact value
    (the products of bf16/f16 values are exact in f32, so only the sum
    rounds): rounding p to bf16, or accumulating in bf16, would be far
    outside that bound, and most elements of p are not bf16 values;
  - q and r have the input's dtype (bf16 written as '<V2', f16 as '<f2'),
    are the same bits, equal p rounded to nearest-even once (XLA computes
    a half-precision dot in f32 and rounds the result), and lie between
    the roundings of the ends of p's error interval.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, run_lines, shmapi_under_test  # noqa: E402

SEED = 20261126
ROUNDS = 12

# (dimension_numbers, shapes of a and b from sizes B M N K, einsum)
LAYOUTS = [
    ("(([1], [0]), ([], []))", lambda B, M, N, K: ((M, K), (K, N)), "mk,kn->mn"),
    ("(([2], [1]), ([0], [0]))", lambda B, M, N, K: ((B, M, K), (B, K, N)), "bmk,bkn->bmn"),
    ("(([0], [0]), ([], []))", lambda B, M, N, K: ((K,), (K,)), "k,k->"),
    ("(([0], [1]), ([], []))", lambda B, M, N, K: ((K, M), (N, K)), "km,nk->mn"),
    ("(([1, 2], [0, 1]), ([], []))", lambda B, M, N, K: ((M, 2, K), (2, K, N)), "mjk,jkn->mn"),
]


def bf16_round(x):
    """float32 array -> float32 array rounded to bfloat16 (nearest even); finite values."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    s16, one = np.uint64(16), np.uint64(1)
    return (((u + np.uint64(0x7FFF) + ((u >> s16) & one)) >> s16) << s16).astype(np.uint32).view(np.float32)


def bf16_round64(x):
    """float64 array -> float64 array rounded to bfloat16 (8 significant bits, nearest even), no double rounding."""
    x = np.asarray(x, np.float64)
    m, e = np.frexp(x)
    return np.ldexp(np.round(np.ldexp(m, 8)), e - 8)


def bf16_bits(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype("<u2")


def bf16_save(path, x):
    np.save(path, bf16_bits(x).view("V2"))


def bf16_load(path):
    a = np.load(path)
    if a.dtype != np.dtype("V2"):
        raise ValueError("%s has dtype %s, not bfloat16 ('|V2')" % (path, a.dtype))
    return (a.reshape(-1).view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(a.shape)


def ty(shape):
    return "[%s]" % ",".join(str(d) for d in shape)


def operands(rng, half, shape):
    kind = rng.integers(0, 3)
    if kind == 0:
        v = rng.standard_normal(shape)
    elif kind == 1:
        v = rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 7, shape)
    else:
        v = rng.uniform(-3, 3, shape)
    v = v.astype(np.float32)
    return bf16_round(v) if half == "bf16" else v.astype(np.float16)


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    cases = []
    for i in range(ROUNDS):
        half = "bf16" if i % 3 else "f16"
        dn, shapes, ein = LAYOUTS[i % len(LAYOUTS)]
        B, M, N = (int(v) for v in rng.integers(1, 6, 3))
        K = int(rng.integers(8, 200))
        sa, sb = shapes(B, M, N, K)
        a, b = operands(rng, half, sa), operands(rng, half, sb)
        exact = np.einsum(ein, a.astype(np.float64), b.astype(np.float64))
        bound = np.einsum(ein, np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        nsum = K * (2 if ein.startswith("mjk") else 1)
        cases.append(dict(half=half, dn=dn, a=a, b=b, exact=exact, err=(nsum + 2) * 2.0 ** -24 * bound * 1.01 + 1e-30,
                          shape=exact.shape))
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        lines = []
        for i, c in enumerate(cases):
            h = c["half"]
            for nm in "ab":
                path = os.path.join(tmp, "%s%d.npy" % (nm, i))
                if h == "bf16":
                    bf16_save(path, c[nm])
                else:
                    np.save(path, c[nm])
            lines += [
                "def f%d = { lambda ; a:%s%s b:%s%s. let" % (i, h, ty(c["a"].shape), h, ty(c["b"].shape)),
                "    p:f32%s = dot_general[dimension_numbers=%s precision=None preferred_element_type=float32] a b"
                % (ty(c["shape"]), c["dn"]),
                "    q:%s%s = dot_general[dimension_numbers=%s precision=None preferred_element_type=None] a b"
                % (h, ty(c["shape"]), c["dn"]),
                "    r:%s%s = dot_general[dimension_numbers=%s precision=None preferred_element_type=%s] a b"
                % (h, ty(c["shape"]), c["dn"], "bfloat16" if h == "bf16" else "float16"),
                "  in (p, q, r) }",
                'a%d = load "a%d.npy"' % (i, i),
                'b%d = load "b%d.npy"' % (i, i),
                "p%d, q%d, r%d = f%d a%d b%d" % (i, i, i, i, i, i),
            ] + ['save "%s%d.npy" %s%d' % (v, i, v, i) for v in "pqr"]
        out = run_lines(shmapi, tmp, lines)
        if out is None:
            return 1
        for i, c in enumerate(cases):
            what = "case %d (%s, dimension_numbers=%s, a %s, b %s)" % (i, c["half"], c["dn"], c["a"].shape,
                                                                        c["b"].shape)
            p = np.load(os.path.join(tmp, "p%d.npy" % i))
            if p.dtype != np.float32 or p.shape != c["shape"]:
                bad.append("%s: p is %s%s, not float32%s" % (what, p.dtype, p.shape, c["shape"]))
                continue
            off = np.abs(p.astype(np.float64) - c["exact"])
            if np.any(off > c["err"]):
                k = np.unravel_index(np.argmax(off - c["err"]), off.shape) if off.ndim else ()
                bad.append("%s: preferred_element_type=float32 gives %r where the exact value is %r "
                           "(f32 accumulation is within %g)" % (what, p[k], c["exact"][k], c["err"][k]))
            if c["half"] == "bf16" and p.size >= 4 and np.mean(bf16_round(p) == p) > 0.5:
                bad.append("%s: most elements of the f32 result are bf16 values: rounded to bf16?\n%r" % (what, p))
            for v in "qr":
                path = os.path.join(tmp, "%s%d.npy" % (v, i))
                if c["half"] == "bf16":
                    try:
                        g = bf16_load(path)
                    except ValueError as e:
                        bad.append("%s: %s" % (what, e))
                        continue
                    once = bf16_round(p)
                    lo, hi = bf16_round64(c["exact"] - c["err"]), bf16_round64(c["exact"] + c["err"])
                else:
                    g = np.load(path)
                    if g.dtype != np.float16:
                        bad.append("%s: %s has dtype %s, not float16" % (what, v, g.dtype))
                        continue
                    once = p.astype(np.float16)
                    lo, hi = (c["exact"] - c["err"]).astype(np.float16), (c["exact"] + c["err"]).astype(np.float16)
                if g.shape != c["shape"]:
                    bad.append("%s: %s has shape %s, not %s" % (what, v, g.shape, c["shape"]))
                    continue
                if np.asarray(g).tobytes() != np.asarray(once).tobytes():
                    bad.append("%s: %s (%s result) is\n%r\nnot the f32 result rounded once\n%r"
                               % (what, v, c["half"], g, once))
                g64 = g.astype(np.float64)
                if np.any((g64 < lo) | (g64 > hi)):
                    bad.append("%s: %s is\n%r\noutside the rounded exact values\n%r .. %r" % (what, v, g, lo, hi))
    for m in bad[:6]:
        print(m)
        print()
    print("%d dot_generals on bf16 and f16 inputs: %d problems" % (len(cases), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
