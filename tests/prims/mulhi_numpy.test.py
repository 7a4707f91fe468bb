#!/usr/bin/python3
# timeout: 60
"""mulhi on random integers of every integer dtype (i8 ... u64), random
shapes (some operands scalars), against a model in Python's exact
integers: the double-width product shifted right by the width, wrapped to
the dtype (jax/_src/lax_reference.py's mulhi).  Full-range values, and the
extremes (0, -1, the minimum and maximum) among them.  SHM_SEED and
SHM_CASES choose another seed and count."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, run_lines, shmapi_under_test  # noqa: E402

SEED = int(os.environ.get("SHM_SEED", "20261127"))
CASES = int(os.environ.get("SHM_CASES", "400"))
DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def model(a, b):
    info = np.iinfo(a.dtype)
    bits = info.bits
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist()):
        h = (int(x) * int(y)) >> bits
        h &= (1 << bits) - 1
        if info.min < 0 and h >= 1 << (bits - 1):
            h -= 1 << bits
        out.append(h)
    return np.array(out, dtype=a.dtype).reshape(a.shape)


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    lines, checks = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(CASES):
            dt = DTYPES[i % len(DTYPES)]
            info = np.iinfo(dt)
            shape = tuple(int(rng.integers(1, 5)) for _ in range(int(rng.integers(0, 3))))
            ops = []
            for k in range(2):
                s = () if shape and rng.random() < 0.15 else shape
                v = rng.integers(info.min, info.max, s, dtype=dt, endpoint=True)
                v = np.where(rng.random(s) < 0.15, rng.choice(np.array([0, info.min, info.max, 1], dt), s), v).astype(dt)
                if info.min < 0:
                    v = np.where(rng.random(s) < 0.05, dt(-1), v).astype(dt)
                np.save(os.path.join(tmp, "a%d_%d.npy" % (i, k)), v)
                lines.append('a%d_%d = load "a%d_%d.npy"' % (i, k, i, k))
                ops.append(v)
            lines += ["r%d = mulhi a%d_0 a%d_1" % (i, i, i), 'save "r%d.npy" r%d' % (i, i)]
            a, b = np.broadcast_arrays(*ops)
            checks.append((i, a, b))
        if run_lines(shmapi, tmp, lines) is None:
            return 1
        bad = []
        for i, a, b in checks:
            got, want = np.load(os.path.join(tmp, "r%d.npy" % i)), model(a, b)
            if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
                bad.append("mulhi of %r and %r is %r, not %r" % (a, b, got, want))
    for m in bad[:8]:
        print(m)
    print("seed %d: %d cases, %d problems" % (SEED, len(checks), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
