#!/usr/bin/python3
# timeout: 300
"""Derivatives through sort, top_k, approx_top_k and cumlogsumexp, against
central finite differences in NumPy (f64).

Random cases (400 by default), each a function
    f(x1, ..., xm) = sum_j reduce_sum(w_j * out_j)
of one equation of a random primitive and shape (sort of 1 to 3 f64
operands with 1 to 3 keys along a random dimension, top_k along a random
axis, approx_max_k / approx_min_k, cumlogsumexp either way), with random
weights w_j.  Inputs have no ties (distinct values at least 1e-3 apart), so
the sorting permutation is locally constant and the derivative exists.
shmapi computes `grad[argnums=(all)] f` and `jvp f` with random tangents;
NumPy computes f from its sorting model and its central differences
(h = 1e-6) for every input element.  Gradients and JVPs must agree within
1e-6 (relative to the larger of 1 and the value).  A tenth of the cases
call f inside a shard_map over 2 devices.

    SHMAPI=build/shmapi python3 tests/autodiff/sort_derivatives.test.py --seed 3 --count 2000
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, shmapi_under_test  # noqa: E402


def distinct(rng, shape):
    """Values without ties: a shuffled grid with small noise."""
    n = int(np.prod(shape))
    v = rng.permutation(n).astype(np.float64) * 0.37 - n * 0.15 + rng.uniform(0, 0.1, n)
    return v.reshape(shape)


def lae(a, b):
    with np.errstate(all="ignore"):
        d = a - b
        return np.where(np.isnan(d), a + b, np.maximum(a, b) + np.log1p(np.exp(-np.abs(d))))


def model(c, xs):
    """The outputs of c's equation on xs (NumPy)."""
    d = c.dim
    if c.op == "sort":
        keys = xs[:c.nk]
        order = np.argsort(keys[0], axis=d, kind="stable") if c.nk == 1 else np.lexsort(tuple(reversed(keys)), axis=d)
        return [np.take_along_axis(x, order, axis=d) for x in xs]
    if c.op == "top_k" or (c.op == "approx_top_k" and c.is_max):
        order = np.argsort(-xs[0], axis=d, kind="stable")
    elif c.op == "approx_top_k":
        order = np.argsort(xs[0], axis=d, kind="stable")
    else:
        v = np.moveaxis(xs[0], d, 0)
        v = v[::-1] if c.rev else v
        out, acc = np.empty_like(v), np.full(v.shape[1:], -np.inf)
        for t in range(v.shape[0]):
            acc = lae(acc, v[t])
            out[t] = acc
        return [np.moveaxis(out[::-1] if c.rev else out, 0, d)]
    order = np.take(order, np.arange(c.k), axis=d)
    return [np.take_along_axis(xs[0], order, axis=d)]


def f_model(c, xs):
    return sum(float(np.sum(w * o)) for w, o in zip(c.ws, model(c, xs)))


class Case:
    pass


def fmt(a):
    return np.array2string(np.asarray(a), separator=", ", threshold=10 ** 6, floatmode="unique",
                           max_line_width=10 ** 6).replace("\n", "")


def make_case(rng, k):
    c = Case()
    c.k_id = k
    c.op = ["sort", "sort", "top_k", "approx_top_k", "cumlogsumexp"][int(rng.integers(5))]
    r = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 5)) for _ in range(r))
    c.sharded = rng.random() < 0.1
    if c.sharded:
        shape = (2 * shape[0],) + shape[1:]
    d = int(rng.integers(r))
    if c.sharded and r > 1 and d == 0:
        d = 1
    if c.sharded and r == 1:
        c.sharded = False
    c.dim = d
    nops = int(rng.integers(1, 4)) if c.op == "sort" else 1
    c.nk = int(rng.integers(1, nops + 1)) if c.op == "sort" else 1
    c.xs = [distinct(rng, shape) for _ in range(nops)]
    c.k = int(rng.integers(1, shape[d] + 1))
    c.is_max = bool(rng.integers(2))
    c.rev = bool(rng.integers(2))
    c.split = c.sharded
    block = (shape[0] // 2,) + shape[1:] if c.sharded else shape
    outs = model(c, [x[:block[0]] for x in c.xs]) if c.sharded else model(c, c.xs)
    c.ws = [rng.standard_normal(o.shape) for o in outs]      # the same weights on every device
    c.ts = [rng.standard_normal(x.shape) for x in c.xs]
    if c.op == "sort":
        prm = "sort[dimension=%d, num_keys=%d]" % (d - r if rng.integers(2) else d, c.nk)
    elif c.op == "top_k":
        prm = "top_k[k=%d, axis=%d]" % (c.k, d)
    elif c.op == "approx_top_k":
        prm = "approx_top_k[k=%d, reduction_dimension=%d, is_max_k=%s]" % (c.k, d, c.is_max)
    else:
        prm = "cumlogsumexp[axis=%d, reverse=%s]" % (d, c.rev)
    c.desc = "%s on %s" % (prm, shape)
    n = len(c.xs)
    xs = ["x%d" % j for j in range(n)]
    nres = len(outs) if c.op == "sort" else 2 if c.op != "cumlogsumexp" else 1
    res = ["o%d" % j for j in range(nres)]
    K = "c%d_" % k
    L = []
    for j, w in enumerate(c.ws):
        L.append("%sw%d:f64%s = %s" % (K, j, list(w.shape), fmt(w)))
    L.append("def %sf(%s) {" % (K, ", ".join("%s:f64%s" % (x, list(block)) for x in xs)))
    L.append("  %s = %s %s" % (", ".join(res), prm, " ".join(xs)))
    terms = []
    for j in range(len(c.ws)):
        L.append("  m%d = mul o%d %sw%d" % (j, j, K, j))
        L.append("  s%d = reduce_sum[axes=(%s)] m%d" % (j, ", ".join(str(a) for a in range(r)), j))
        terms.append("s%d" % j)
    acc = terms[0]
    for j, t in enumerate(terms[1:]):
        L.append("  a%d = add %s %s" % (j, acc, t))
        acc = "a%d" % j
    L.append("  return %s" % acc)
    L.append("}")
    if c.sharded:
        spec = ", ".join(["P(i)"] * n)
        L.append("@shard_map[mesh=m, in_specs=(%s), out_specs=P()]" % spec)
        L.append("def %sg(%s) {" % (K, ", ".join(xs)))
        L.append("  e = %sf %s" % (K, " ".join(xs)))
        L.append("  t = psum[axes=(i,)] e")
        L.append("  return t")
        L.append("}")
        fn = K + "g"             # the model: each device's half of dimension 0 separately
    else:
        fn = K + "f"
    L.append("def %sgr = grad[argnums=(%s,)] %s" % (K, ", ".join(str(j) for j in range(n)), fn))
    L.append("def %sjv = jvp %s" % (K, fn))
    for j, (x, t) in enumerate(zip(c.xs, c.ts)):
        L.append("%sx%d:f64%s = %s" % (K, j, list(shape), fmt(x)))
        L.append("%st%d:f64%s = %s" % (K, j, list(shape), fmt(t)))
    gs = ["%sg%d" % (K, j) for j in range(n)]
    L.append("%s = %sgr %s" % (", ".join(gs), K, " ".join("%sx%d" % (K, j) for j in range(n))))
    L.append("%sy, %syd = %sjv %s %s" % (K, K, K, " ".join("%sx%d" % (K, j) for j in range(n)),
                                         " ".join("%st%d" % (K, j) for j in range(n))))
    for j in range(n):
        L.append('save "%sg%d.npy" %sg%d' % (K, j, K, j))
    L.append('save "%syd.npy" %syd' % (K, K))
    c.lines = L
    return c


def f_of(c, xs):
    if not c.split:
        return f_model(c, xs)
    h = xs[0].shape[0] // 2
    return f_model(c, [x[:h] for x in xs]) + f_model(c, [x[h:] for x in xs])


def fd_grad(c):
    g = []
    for j, x in enumerate(c.xs):
        gj = np.empty_like(x)
        for i in range(x.size):
            hi = [y.copy() for y in c.xs]
            lo = [y.copy() for y in c.xs]
            hi[j].flat[i] += 1e-6
            lo[j].flat[i] -= 1e-6
            gj.flat[i] = (f_of(c, hi) - f_of(c, lo)) / 2e-6
        g.append(gj)
    return g


def close(a, b):
    return bool(np.all(np.abs(np.asarray(a) - np.asarray(b)) <= 1e-6 * np.maximum(1.0, np.abs(b))))


def check(c, tmp):
    K = "c%d_" % c.k_id
    want = fd_grad(c)
    bad = []
    for j, w in enumerate(want):
        p = os.path.join(tmp, "%sg%d.npy" % (K, j))
        got = np.load(p) if os.path.exists(p) else None
        if got is None or got.shape != w.shape or not close(got, w):
            bad.append("%s: gradient %d is\n%r\nfinite differences give\n%r" % (c.desc, j, got, w))
    jv = sum(float(np.sum(g * t)) for g, t in zip(want, c.ts))
    p = os.path.join(tmp, "%syd.npy" % K)
    got = np.load(p) if os.path.exists(p) else None
    if got is None or not close(got, jv):
        bad.append("%s: jvp is %r, finite differences give %r" % (c.desc, got, jv))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--batch", type=int, default=200)
    args = ap.parse_args()
    shmapi = os.path.abspath(shmapi_under_test())
    rng = np.random.default_rng(args.seed)
    cases = [make_case(rng, k) for k in range(args.count)]
    bad = []
    for i in range(0, len(cases), args.batch):
        batch = cases[i:i + args.batch]
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "prog.shm"), "w") as f:
                f.write("\n".join(["mesh m = {i: 2}"] + [ln for c in batch for ln in c.lines]) + "\n")
            p = subprocess.run([shmapi, "prog.shm"], cwd=tmp, capture_output=True, text=True,
                               env=dict(os.environ, LC_ALL="C", OPENBLAS_NUM_THREADS="1"))
            if p.returncode:
                bad.append("shmapi failed on a batch:\n%s" % p.stderr[:3000])
                continue
            for c in batch:
                bad += check(c, tmp)
    for m in bad[:6]:
        print(m)
        print()
    ops = {}
    for c in cases:
        ops[c.op] = ops.get(c.op, 0) + 1
    print("%d cases (%s), seed %d: %d wrong" % (len(cases), ", ".join("%s %d" % kv for kv in sorted(ops.items())),
                                                 args.seed, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
