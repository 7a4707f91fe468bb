#!/usr/bin/python3
# timeout: 120
"""tile, name and layout_constraint on random operands, against NumPy.

One program per run loads CASES random operands of random dtypes and
shapes (rank 0 to 3, sizes 0 to 4) and applies:

  tile[reps=R] x            random counts 0 to 3 per dimension: equal to
                            np.tile(x, R), bit for bit, dtype and shape
  name[name=n] x,           x's bytes
  layout_constraint x
  grad of sum(tile(x) * w)  for float x: the cotangent w's tiles summed
                            (w reshaped to (R0, n0, R1, n1, ...) and summed
                            over the R axes), to 1e-5 relative: tile's
                            transpose
  grad through name         w itself

SHM_SEED and SHM_CASES choose another seed and count.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, run_lines, shmapi_under_test  # noqa: E402

SEED = int(os.environ.get("SHM_SEED", "20261128"))
CASES = int(os.environ.get("SHM_CASES", "500"))
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u8": np.uint8, "i64": np.int64, "bool": np.bool_}


def tiles_summed(w, shape, reps):
    """The transpose of np.tile(., reps) at w: each tile added up."""
    split = []
    for n, r in zip(shape, reps):
        split += [r, n]
    return w.reshape(split).sum(axis=tuple(range(0, 2 * len(shape), 2))) if shape else w


def build(rng, tmp):
    lines, checks = [], []
    for i in range(CASES):
        dt = str(rng.choice(list(DTYPES)))
        shape = tuple(int(rng.integers(0, 5)) for _ in range(int(rng.integers(0, 4))))
        reps = tuple(int(rng.integers(0, 4)) for _ in shape)
        if dt == "bool":
            a = rng.random(shape) < 0.5
        elif dt.startswith("f"):
            a = rng.standard_normal(shape).astype(DTYPES[dt])
        else:
            a = rng.integers(0, 100, shape).astype(DTYPES[dt])
        np.save(os.path.join(tmp, "a%d.npy" % i), a)
        rs = "(%s)" % "".join("%d, " % r for r in reps) if reps else "()"
        lines += ['a%d = load "a%d.npy"' % (i, i),
                  "t%d = tile[reps=%s] a%d" % (i, rs, i),
                  "n%d = name[name=step_%d] a%d" % (i, i, i),
                  "l%d = layout_constraint[layout=None] n%d" % (i, i),
                  'save "t%d.npy" t%d' % (i, i), 'save "l%d.npy" l%d' % (i, i)]
        w = None
        if dt.startswith("f"):
            w = rng.standard_normal(np.tile(a, reps).shape).astype(DTYPES[dt])
            np.save(os.path.join(tmp, "w%d.npy" % i), w)
            ax = "(%s)" % "".join("%d, " % d for d in range(len(shape))) if shape else "()"
            lines += ['w%d = load "w%d.npy"' % (i, i),
                      "def f%d(x, w) {" % i, "  y = tile[reps=%s] x" % rs, "  m = name[name=tiled] y",
                      "  z = mul m w", "  s = reduce_sum[axes=%s] z" % ax, "  return s", "}",
                      "def g%d = grad f%d" % (i, i), "d%d = g%d a%d w%d" % (i, i, i, i), 'save "d%d.npy" d%d' % (i, i)]
        checks.append((i, a, reps, w))
    return lines, checks


def check(tmp, checks):
    bad = []
    load = lambda n: np.load(os.path.join(tmp, n + ".npy"))  # noqa: E731
    for i, a, reps, w in checks:
        got, want = load("t%d" % i), np.tile(a, reps) if a.ndim else a
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            bad.append("tile[reps=%r] of %r is %r, not %r" % (reps, a, got, want))
        got = load("l%d" % i)
        if got.dtype != a.dtype or got.shape != a.shape or got.tobytes() != a.tobytes():
            bad.append("name/layout_constraint of %r is %r" % (a, got))
        if w is not None:
            got, want = load("d%d" % i), tiles_summed(w, a.shape, reps).astype(a.dtype)
            if got.dtype != want.dtype or got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                bad.append("grad of sum(tile[reps=%r](x) * w) at %r, w=%r is %r, not %r" % (reps, a, w, got, want))
    return bad


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        lines, checks = build(rng, tmp)
        if run_lines(shmapi, tmp, lines) is None:
            return 1
        bad = check(tmp, checks)
    for m in bad[:8]:
        print(m)
    print("seed %d: %d cases, %d problems" % (SEED, len(checks), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
