#!/usr/bin/python3
"""Compare shmapi's array printer with NumPy's str(arr), byte for byte.

Usage:
    /usr/bin/python3 tests/print/_compare/compare.py DRIVER [--seed N] [--count N]
                                                      [--show N]

DRIVER is the fmt_driver binary built from tests/print/_compare/fmt_driver.c.
Random arrays of every dtype (bool, int32, int64, float32, float64) and of
ranks 0-4 (occasionally more) are written to the driver's stdin; its output
for each array is compared with str(arr).  The first few mismatches are shown
with both outputs; the exit status is 1 on any mismatch.

The array generator is reusable: `random_array(rng)` returns one random
ndarray and `generate_arrays(seed, count)` a reproducible list of them, so a
later harness (e.g. one that writes .shm programs for the real interpreter)
can `import compare` from this directory and reuse them.  `encode_array`
renders an array in the driver's input format.
"""

import argparse
import subprocess
import sys

import numpy as np

DTYPES = (np.bool_, np.int32, np.int64, np.float32, np.float64)
DELIM = "\n@@@END@@@\n"

# ---------------------------------------------------------------------------
# shapes


def random_shape(rng):
    """A random shape: mostly small ranks 0-4, some empty, some > 1000
    elements (to exercise summarisation), some with long rows (wrapping)."""
    r = rng.random()
    if r < 0.12:
        return ()
    if r < 0.20:  # an empty array somewhere
        rank = int(rng.integers(1, 5))
        shape = [int(rng.integers(0, 4)) for _ in range(rank)]
        shape[int(rng.integers(0, rank))] = 0
        return tuple(shape)
    if r < 0.32:  # big: summarised
        choices = [
            (int(rng.integers(1001, 3000)),),
            (int(rng.integers(2, 12)), int(rng.integers(120, 400))),
            (int(rng.integers(30, 60)), int(rng.integers(30, 60))),
            (int(rng.integers(7, 12)), int(rng.integers(7, 12)),
             int(rng.integers(12, 20))),
            (2, 3, int(rng.integers(170, 300))),
            (int(rng.integers(1, 4)), int(rng.integers(5, 9)),
             int(rng.integers(5, 9)), int(rng.integers(7, 30))),
            (1001,), (7, 7, 7, 7), (1, 1, 1, 1001),
        ]
        return choices[int(rng.integers(0, len(choices)))]
    if r < 0.42:  # long rows, not summarised
        rows = int(rng.integers(1, 4))
        cols = int(rng.integers(10, 80))
        return (rows, cols) if rng.random() < 0.6 else (cols,)
    if r < 0.45:  # higher rank
        rank = int(rng.integers(5, 8))
        return tuple(int(rng.integers(1, 3)) for _ in range(rank))
    rank = int(rng.integers(1, 5))
    hi = {1: 12, 2: 7, 3: 5, 4: 4}[rank]
    return tuple(int(rng.integers(1, hi + 1)) for _ in range(rank))


# ---------------------------------------------------------------------------
# element values


def _float_kind(rng, n, dt):
    """n float64 values of one randomly chosen flavour."""
    kind = int(rng.integers(0, 17))
    if kind == 0:
        return rng.standard_normal(n)
    if kind == 1:  # mixed magnitudes over 1e-30 .. 1e30
        return rng.standard_normal(n) * 10.0 ** rng.uniform(-30, 30, n)
    if kind == 2:  # one magnitude, random decade
        e = rng.uniform(-30, 30)
        return rng.standard_normal(n) * 10.0 ** e
    if kind == 3:  # integral values
        return rng.integers(-1000, 1000, n).astype(np.float64)
    if kind == 4:  # big integral values
        return rng.integers(-10**9, 10**9, n).astype(np.float64)
    if kind == 5:  # few decimals
        return np.round(rng.standard_normal(n) * 100, int(rng.integers(0, 5)))
    if kind == 6:  # powers of two (unequal rounding margins)
        sign = rng.choice([-1.0, 1.0], n)
        lim = 120 if dt == np.float32 else 1000
        return sign * np.ldexp(1.0, rng.integers(-lim, lim, n))
    if kind == 7:  # random bit patterns
        if dt == np.float32:
            bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
            return bits.view(np.float32).astype(np.float64)
        bits = rng.integers(0, 2**63, n, dtype=np.uint64)
        bits |= rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
        return bits.view(np.float64)
    if kind == 8:  # near the scientific-notation thresholds
        base = rng.choice([1e8, 1e-4, 1e3, 1.0, 1e16, 99999999.0, 0.0001])
        return base * (1 + rng.integers(-3, 4, n) * np.finfo(dt).eps)
    if kind == 9:  # ratio around 1000
        v = np.ones(n)
        v[: max(1, n // 2)] = 1000.0 * (1 + rng.integers(-2, 3) *
                                       np.finfo(dt).eps)
        return v
    if kind == 10:  # short decimals, all digits
        return rng.integers(-99999, 99999, n) / 10.0 ** rng.integers(0, 9, n)
    if kind == 11:  # uniform in [0, 1)
        return rng.random(n)
    if kind == 12:  # tiny / huge extremes, subnormals
        fi = np.finfo(dt)
        pool = np.array([fi.tiny, fi.max, -fi.max, fi.smallest_subnormal,
                         fi.eps, 1e-30, 1e30, -1e-30, 1.0, 0.5])
        return rng.choice(pool, n)
    if kind == 13:  # integers near the significand limit
        lim = 2**24 if dt == np.float32 else 2**53
        return (lim + rng.integers(-8, 9, n)).astype(np.float64)
    if kind == 14:  # small magnitudes that still print positionally
        return rng.uniform(1e-4, 1e-2, n) * rng.choice([-1, 1], n)
    if kind == 15:  # values that round at the 8th digit
        return np.round(rng.uniform(-10, 10, n), 8) + \
            rng.choice([0, 5e-9, -5e-9, 4.9999e-9], n)
    return rng.integers(-9, 10, n) * 10.0 ** rng.integers(-12, 12)


def random_values(rng, n, dt):
    """n random values for dtype dt (returned as an array of that dtype)."""
    if dt == np.bool_:
        p = rng.choice([0.0, 0.5, 1.0])
        return rng.random(n) < p
    if dt in (np.int32, np.int64):
        info = np.iinfo(dt)
        kind = int(rng.integers(0, 5))
        if kind == 0:
            v = rng.integers(-10, 10, n)
        elif kind == 1:
            v = rng.integers(0, 1000, n)
        elif kind == 2:
            v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        elif kind == 3:
            v = rng.integers(-10**int(rng.integers(1, 9)),
                             10**int(rng.integers(1, 9)), n)
        else:
            v = rng.choice(np.array([info.min, info.max, 0, -1, 1],
                                    dtype=dt), n)
        return np.asarray(v).astype(dt)
    # floats: one or two flavours, then maybe sprinkle specials
    v = _float_kind(rng, n, dt)
    if n > 1 and rng.random() < 0.25:
        w = _float_kind(rng, n, dt)
        mask = rng.random(n) < 0.5
        v = np.where(mask, w, v)
    if rng.random() < 0.3:
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
        pick = rng.choice(specials, n)
        mask = rng.random(n) < rng.choice([0.05, 0.3, 1.0])
        v = np.where(mask, pick, v)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(v, dtype=np.float64).astype(dt)


def random_array(rng):
    """One random ndarray (dtype and shape chosen at random)."""
    dt = DTYPES[int(rng.integers(0, len(DTYPES)))]
    shape = random_shape(rng)
    n = int(np.prod(shape, dtype=np.int64))
    with np.errstate(all="ignore"):  # NaN bit patterns warn when cast
        return random_values(rng, n, dt).reshape(shape)


def generate_arrays(seed, count):
    """A reproducible list of `count` random arrays."""
    rng = np.random.default_rng(seed)
    return [random_array(rng) for _ in range(count)]


# fixed cases worth checking every run
def fixed_arrays():
    f32, f64 = np.float32, np.float64
    cases = [
        np.array(3.0, f32), np.array(1e-5, f32), np.array(1e16, f32),
        np.array(22, np.int32), np.array(True), np.array(False),
        np.array(-0.0), np.array(np.nan), np.array(-np.inf, f32),
        np.array(1e-4, f32), np.array(1e-4), np.array(1e16),
        np.array(9999999999999998.0), np.array(0.1, f32),
        np.array([0.5, 1.0]), np.array([1e10, 1e-10]), np.array([-0.0, 1.0]),
        np.array([np.nan, -np.inf]), np.array([np.nan]), np.array([np.inf]),
        np.array([1e-4, 1], f32), np.array([99999992.0], f32),
        np.array([16777218.0, 1.5], f32), np.array([1e200, -1.5e-200]),
        np.array([1.0, 1000.0]), np.array([1.0, 1000.0001]),
        np.array([1e8]), np.array([99999999.0]), np.array([0.0, 0.0]),
        np.linspace(0, 1, 30), np.linspace(0, 1, 30, dtype=f32),
        np.arange(2000).reshape(2, 1000), np.arange(24).reshape(2, 3, 4),
        np.arange(14000).reshape(2, 7, 1000),
        np.arange(5000, dtype=f64).reshape(5, 10, 100) / 7,
        np.zeros((0, 3)), np.zeros((2, 0)), np.zeros((3, 0, 2), np.int32),
        np.array([], dtype=bool),
        np.array([True, False]), np.ones((2, 2, 2, 2), bool),
        np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max]),
        np.ones((1,) * 10), np.arange(1001, dtype=f32),
        np.full(40, 1.0 / 3), np.full(40, 1.0 / 3, dtype=f32),
        np.array([2.0 ** -9]), np.array([0.001953125, 1]),
    ]
    return [np.asarray(c) for c in cases]


# ---------------------------------------------------------------------------
# talking to the driver


def encode_array(a):
    """The driver's input form of array a (see fmt_driver.c)."""
    names = {np.dtype(np.bool_): "bool", np.dtype(np.int32): "i32",
             np.dtype(np.int64): "i64", np.dtype(np.float32): "f32",
             np.dtype(np.float64): "f64"}
    head = [names[a.dtype], str(a.ndim)] + [str(d) for d in a.shape]
    flat = a.reshape(-1)
    if a.dtype == np.float32:
        vals = ["%08x" % x for x in flat.view(np.uint32).tolist()]
    elif a.dtype == np.float64:
        vals = ["%016x" % x for x in flat.view(np.uint64).tolist()]
    else:
        vals = [str(int(x)) for x in flat.tolist()]
    return " ".join(head) + "\n" + " ".join(vals) + "\n"


def run_driver(driver, arrays):
    """The driver's output for each array, as a list of strings."""
    data = "".join(encode_array(a) for a in arrays)
    proc = subprocess.run([driver], input=data.encode(), capture_output=True,
                          check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace"))
        raise SystemExit("driver exited with status %d" % proc.returncode)
    parts = proc.stdout.decode().split(DELIM)
    if parts[-1] != "":
        raise SystemExit("driver output does not end with the delimiter")
    return parts[:-1]


def describe(a):
    """A short description of an array for mismatch reports."""
    flat = a.reshape(-1)
    vals = flat[:8].tolist()
    return "dtype=%s shape=%s first values=%r" % (a.dtype, a.shape, vals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("driver", help="path of the fmt_driver binary")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--show", type=int, default=5,
                    help="how many mismatches to print")
    args = ap.parse_args()

    arrays = fixed_arrays() + generate_arrays(args.seed, args.count)
    got = run_driver(args.driver, arrays)
    if len(got) != len(arrays):
        raise SystemExit("driver printed %d arrays, expected %d"
                         % (len(got), len(arrays)))
    bad = 0
    for a, out in zip(arrays, got):
        want = str(a)
        if out != want:
            bad += 1
            if bad <= args.show:
                print("MISMATCH #%d: %s" % (bad, describe(a)))
                print("--- numpy (%d bytes)" % len(want))
                print(want)
                print("--- shmapi (%d bytes)" % len(out))
                print(out)
                print()
    big = sum(1 for a in arrays if a.size > 1000)
    empty = sum(1 for a in arrays if a.size == 0)
    print("seed %d: %d arrays (%d summarised, %d empty), %d matched, "
          "%d mismatched" % (args.seed, len(arrays), big, empty,
                             len(arrays) - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
