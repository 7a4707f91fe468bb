#!/usr/bin/python3
# timeout: 120
"""erf_inv, clz, population_count, zeros_like, sharding_constraint,
mesh_cast and device_put on random operands, against NumPy and math.

One program per run loads CASES random operands of random shapes (saved by
NumPy), applies the primitives and saves every result:

  clz, population_count   every integer dtype (i8 ... u64), random bits:
                          bit for bit what a model over the two's
                          complement bits of NumPy's view computes
  erf_inv                 f32 and f64 in [-1, 1] (some exactly 0, +-1 and
                          outside): an f32 result y must be within one ulp
                          of the inverse (erf of the floats on either side
                          of y brackets x, in double precision); an f64 one
                          must give erf(y) (erfc(|y|) beyond 0.5) back
                          within 1e-13 relative; NaN outside [-1, 1],
                          +-inf at +-1
  erf_inv's derivative    grad against sqrt(pi)/2 exp(y^2)
  reduce_precision        f32 and f64 of random bits (NaNs, infinities,
                          subnormals among them), random exponent_bits and
                          mantissa_bits: bit for bit what a NumPy model of
                          XLA's rounding computes; with (5, 10) on f32 values
                          in f16's normal range, NumPy's float16 rounding
  zeros_like              zeros of the operand's dtype and shape
  sharding_constraint, mesh_cast, device_put (one and two operands)
                          the operand's bytes

and erf_inv at values whose inverse is known (0.5, 0.9, -0.999, 1e-30).
SHM_SEED and SHM_CASES choose another seed and count.
"""

import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, run_lines, shmapi_under_test  # noqa: E402

SEED = int(os.environ.get("SHM_SEED", "20261127"))
CASES = int(os.environ.get("SHM_CASES", "600"))
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16,
      "u32": np.uint32, "u64": np.uint64, "f32": np.float32, "f64": np.float64}
KNOWN = [(0.5, 0.4769362762044698733814), (0.9, 1.1630871536766740867262), (-0.999, -2.3267537655135246),
         (1e-30, 0.886226925452758e-30)]


def model_bits(a, clz):
    width = a.dtype.itemsize * 8
    u = a.view("<u%d" % a.dtype.itemsize).astype(np.uint64).ravel()
    out = []
    for x in u.tolist():
        out.append(width - x.bit_length() if clz else bin(x).count("1"))
    return np.array(out, dtype=a.dtype).reshape(a.shape)


def model_reduce_precision(a, E, M):
    """XLA's ReducePrecision (elemental_ir_emitter.cc) over NumPy's view of the bits."""
    n = a.dtype.itemsize * 8
    eb, mb = (8, 23) if n == 32 else (11, 52)
    U = np.uint32 if n == 32 else np.uint64
    u = a.view(U)
    one = U(1)
    emask = U(((1 << eb) - 1) << mb)
    x = u.copy()
    if M < mb:
        last = U(1 << (mb - M))
        bias = U((int(last) >> 1) - 1) + ((x & last) >> U(mb - M))
        x = (x + bias) & ~(last - one)
    if E < eb:
        sb, rb = (1 << (eb - 1)) - 1, (1 << (E - 1)) - 1
        xe = x & emask
        sign = x & U(1 << (n - 1))
        x = np.where(xe > U((sb + rb) << mb), sign | emask, np.where(xe <= U((sb - rb) << mb), sign, x)).astype(U)
    if M > 0:
        x = np.where(np.isnan(a), u, x).astype(U)
    return x.view(a.dtype)


def random_shape(rng):
    return tuple(int(rng.integers(1, 5)) for _ in range(int(rng.integers(0, 3))))


def random_unit(rng, dt, shape):
    x = rng.uniform(-1, 1, shape)
    x = np.where(rng.random(shape) < 0.2, np.sign(x) * (1 - 10.0 ** rng.uniform(-16, -1, shape)), x)
    x = np.where(rng.random(shape) < 0.05, rng.choice([0.0, 1.0, -1.0, 1.5, -3.0], shape), x)
    return np.asarray(x, dtype=NP[dt])


def f32_ok(x, y):
    """y within one ulp of erf_inv(x): erf of y's neighbours brackets x."""
    if abs(x) > 1 or math.isnan(x):
        return math.isnan(y)
    if abs(x) == 1:
        return y == math.copysign(math.inf, x)
    lo = float(np.nextafter(np.float32(y), np.float32(-np.inf)))
    hi = float(np.nextafter(np.float32(y), np.float32(np.inf)))
    return math.erf(lo) <= x <= math.erf(hi)


def f64_ok(x, y):
    if abs(x) > 1 or math.isnan(x):
        return math.isnan(y)
    if abs(x) == 1:
        return y == math.copysign(math.inf, x)
    if abs(x) <= 0.5:
        return abs(math.erf(y) - x) <= 1e-13 * abs(x) + 1e-300
    return math.copysign(1, y) == math.copysign(1, x) and abs(math.erfc(abs(y)) - (1 - abs(x))) <= 1e-13 * (1 - abs(x))


def build(rng, tmp):
    lines, checks = [], []
    for i in range(CASES):
        kind = rng.choice(["bits", "bits", "erf_inv", "zeros", "ident", "rp", "rp"])
        shape = random_shape(rng)
        if kind == "bits":
            dt = str(rng.choice(INTS))
            info = np.iinfo(NP[dt])
            a = rng.integers(info.min, info.max, shape, dtype=NP[dt], endpoint=True)
            a = np.where(rng.random(shape) < 0.1, 0, a).astype(NP[dt])
            np.save(os.path.join(tmp, "a%d.npy" % i), a)
            lines += ['a%d = load "a%d.npy"' % (i, i), "c%d = clz a%d" % (i, i), "p%d = population_count a%d" % (i, i),
                      'save "c%d.npy" c%d' % (i, i), 'save "p%d.npy" p%d' % (i, i)]
            checks.append((i, "bits", a))
        elif kind == "rp":
            dt = str(rng.choice(["f32", "f64"]))
            w = 4 if dt == "f32" else 8
            if rng.random() < 0.5:
                a = rng.integers(0, 256, (int(np.prod(shape, dtype=np.int64)) * w,), dtype=np.uint8).view(NP[dt]).reshape(shape)
            else:
                a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 6)).astype(NP[dt])
            E = int(rng.integers(1, 12 if dt == "f64" else 9))
            M = int(rng.integers(0, 53 if dt == "f64" else 24)) if rng.random() < 0.8 else int(rng.integers(0, 3))
            a = np.where(rng.random(shape) < 0.15, rng.choice([np.nan, -np.inf, np.inf, -0.0, 2.0 ** -126, 1.5, 2.5,
                                                              1 + 2.0 ** -(M + 1), 2.0 ** -(2 ** (E - 1) - 2)], shape),
                         a).astype(NP[dt])
            if rng.random() < 0.2 and dt == "f32":
                E, M = 5, 10
            np.save(os.path.join(tmp, "a%d.npy" % i), a)
            lines += ['a%d = load "a%d.npy"' % (i, i), "r%d = reduce_precision[exponent_bits=%d, mantissa_bits=%d] a%d"
                      % (i, E, M, i), 'save "r%d.npy" r%d' % (i, i)]
            checks.append((i, "rp", (a, E, M)))
        elif kind == "erf_inv":
            dt = str(rng.choice(["f32", "f64"]))
            a = random_unit(rng, dt, shape)
            np.save(os.path.join(tmp, "a%d.npy" % i), a)
            lines += ['a%d = load "a%d.npy"' % (i, i), "e%d = erf_inv a%d" % (i, i), 'save "e%d.npy" e%d' % (i, i)]
            checks.append((i, "erf_inv", a))
        else:
            dt = str(rng.choice(INTS + ["f32", "f64"]))
            a = (rng.standard_normal(shape) * 100).astype(NP[dt])
            np.save(os.path.join(tmp, "a%d.npy" % i), a)
            lines.append('a%d = load "a%d.npy"' % (i, i))
            if kind == "zeros":
                lines += ["z%d = zeros_like a%d" % (i, i), 'save "z%d.npy" z%d' % (i, i)]
            else:
                lines += ["s%d = sharding_constraint[sharding=NamedSharding(mesh=Mesh('i': 2), spec=P()), "
                          "layout=None, unconstrained_dims=frozenset()] a%d" % (i, i),
                          "m%d = mesh_cast[dst_sharding=NamedSharding(mesh=AbstractMesh('i': 2), spec=P())] s%d" % (i, i),
                          "d%d, t%d = device_put[devices=(None, None), srcs=(None, None), "
                          "copy_semantics=(CopySemantics.ALIAS, CopySemantics.COPY)] m%d a%d" % (i, i, i, i),
                          "o%d = device_put[devices=(None,), srcs=(None,), copy_semantics=(CopySemantics.ALIAS,)] d%d" % (i, i)]
                lines += ['save "%s%d.npy" %s%d' % (k, i, k, i) for k in "smdto"]
            checks.append((i, kind, a))
    return lines, checks


def derivative_lines():
    xs = [-0.9, -0.3, 0.0, 0.25, 0.7, 0.99]
    lines = ["def f(t) {", "  e = erf_inv t", "  return e", "}", "def g = grad f"]
    for j, x in enumerate(xs):
        lines += ["gx%d = g %r" % (j, x), 'save "gx%d.npy" gx%d' % (j, j)]
    lines += ["nz = [nan, -inf, inf, 1.5, 3.0, 1e-40, -0.0]", "rz = reduce_precision[exponent_bits=8, mantissa_bits=0] nz",
              "ry = reduce_precision[exponent_bits=4, mantissa_bits=1] nz", 'save "rz.npy" rz', 'save "ry.npy" ry']
    for j, (x, _) in enumerate(KNOWN):
        lines += ["k%d = erf_inv %s:f64[]" % (j, repr(x)), 'save "k%d.npy" k%d' % (j, j)]
    return xs, lines


def check(tmp, checks, xs):
    bad = []
    load = lambda n: np.load(os.path.join(tmp, n + ".npy"))  # noqa: E731
    for i, kind, a in checks:
        if kind == "bits":
            for k, clz in (("c", True), ("p", False)):
                got, want = load("%s%d" % (k, i)), model_bits(a, clz)
                if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
                    bad.append("%s of %r is %r, not %r" % ("clz" if clz else "population_count", a, got, want))
        elif kind == "erf_inv":
            got = load("e%d" % i)
            ok = f32_ok if a.dtype == np.float32 else f64_ok
            if got.dtype != a.dtype or got.shape != a.shape:
                bad.append("erf_inv of %r has dtype %s, shape %s" % (a, got.dtype, got.shape))
            for x, y in zip(a.ravel().tolist(), got.ravel().tolist()):
                if not ok(x, y):
                    bad.append("erf_inv(%r) as %s is %r" % (x, a.dtype, y))
        elif kind == "rp":
            a, E, M = a
            got, want = load("r%d" % i), model_reduce_precision(a, E, M)
            if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
                bad.append("reduce_precision[%d, %d] of %r is %r, not %r" % (E, M, a, got, want))
            if (E, M) == (5, 10) and a.dtype == np.float32:
                with np.errstate(all="ignore"):
                    normal = np.isfinite(a) & (np.abs(a) >= 2.0 ** -14) & (np.abs(a) <= 65504)
                    f16 = a.astype(np.float16).astype(np.float32)
                if not np.array_equal(got[normal], f16[normal]):
                    bad.append("reduce_precision[5, 10] of %r is %r, but float16 rounds to %r" % (a, got, f16))
        elif kind == "zeros":
            got = load("z%d" % i)
            if got.dtype != a.dtype or got.shape != a.shape or np.any(got != 0):
                bad.append("zeros_like of %r is %r" % (a, got))
        else:
            for k in "smdto":
                got = load("%s%d" % (k, i))
                if got.dtype != a.dtype or got.shape != a.shape or got.tobytes() != a.tobytes():
                    bad.append("%s%d of %r is %r" % (k, i, a, got))
    for j, x in enumerate(xs):
        yx = math.sqrt(math.pi) / 2 * math.exp(_inv(x) ** 2)
        got = float(load("gx%d" % j))
        if abs(got - yx) > 2e-5 * abs(yx):
            bad.append("grad of erf_inv at %r is %r, not %r" % (x, got, yx))
    nz = np.array([np.nan, -np.inf, np.inf, 1.5, 3.0, 1e-40, -0.0], np.float32)
    for k, (E, M) in (("rz", (8, 0)), ("ry", (4, 1))):
        got, want = load(k), model_reduce_precision(nz, E, M)
        if got.tobytes() != want.tobytes():
            bad.append("reduce_precision[%d, %d] of %r is %r, not %r" % (E, M, nz, got, want))
    for j, (x, want) in enumerate(KNOWN):
        got = float(load("k%d" % j))
        if abs(got - want) > 4e-16 * abs(want):
            bad.append("erf_inv(%r) is %r, not %r" % (x, got, want))
    return bad


def _inv(x):
    """erf_inv in double by bisection on math.erf (the test's own model)."""
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erf(mid) < x:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        lines, checks = build(rng, tmp)
        xs, dl = derivative_lines()
        if run_lines(shmapi, tmp, lines + dl) is None:
            return 1
        bad = check(tmp, checks, xs)
    for m in bad[:8]:
        print(m)
    print("seed %d: %d cases, %d problems" % (SEED, len(checks), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
