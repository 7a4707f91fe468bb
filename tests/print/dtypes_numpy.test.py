#!/usr/bin/python3
"""Every dtype against NumPy: loading, printing, arithmetic and saving.

For random pairs of arrays of the dtypes bool, i8, i16, i32, i64, u8, u16,
u32, u64, bf16, f16, f32, f64, c64 and c128 (random shapes, values of every
magnitude, NaN and infinities), NumPy writes the operands with np.save;
a shm program loads them, prints them and the results of add, sub, mul,
div, max, min, neg, abs, eq and lt (those the dtype has), converts one to
a random dtype (convert_element_type's semantics: integers wrap, floats
truncate and saturate, complex drops its imaginary part), and saves a
result.  Every printed block must be NumPy's
str() of NumPy's own result, byte for byte, and the saved file must read
back (np.load) bit for bit.

NumPy has no bfloat16 here (ml_dtypes is not installed): a bf16 array is
kept as its bits (written as the 2-byte void '<V2' NumPy writes for
ml_dtypes.bfloat16), its arithmetic is float32 arithmetic rounded to
nearest even in the top 16 bits (what XLA's CPU backend does), and its
printing is ml_dtypes' (each element C++'s `<<` of the float, %g, in
NumPy's layout of unpadded element texts).  float16 arithmetic is NumPy's
own, which likewise computes in float32 and rounds each result.

Integer division is XLA's (truncation toward zero, x / 0 = -1), not
NumPy's floor division, so it is computed here element by element.
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, shmapi_under_test  # noqa: E402

SEED = 20261123
ROUNDS = 400
MARK = "@@@"
SHOW = 4

DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bf16", "f16", "f32", "f64",
          "c64", "c128"]
NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
      "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "f32": np.float32,
      "f64": np.float64, "c64": np.complex64, "c128": np.complex128}


# ---- bfloat16, kept as float32 values that bfloat16 holds exactly --------------------

def bf16_round(x):
    """float32 array -> float32 array rounded to bfloat16 (nearest even)."""
    x = np.asarray(x, np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    nan = np.isnan(x)
    s16, one = np.uint64(16), np.uint64(1)
    r = ((u + np.uint64(0x7FFF) + ((u >> s16) & one)) >> s16) << s16
    r = np.where(nan, (u | np.uint64(0x400000)) & np.uint64(0xFFFF0000), r).astype(np.uint32)
    return r.view(np.float32)


class G:
    """An element printed as ml_dtypes prints a bfloat16."""
    def __init__(self, v):
        self.v = float(v)

    def __repr__(self):
        v = abs(self.v) if self.v != self.v else self.v
        return "%g" % v


def bf16_str(a):
    objs = np.empty(a.shape, dtype=object)
    for idx in np.ndindex(a.shape):
        objs[idx] = G(a[idx])
    if a.ndim == 0:
        return repr(objs[()])
    return str(objs)


# ---- random operands --------------------------------------------------------------------

def random_shape(rng):
    r = rng.random()
    if r < 0.15:
        return ()
    if r < 0.22:
        return (int(rng.integers(0, 3)), 0)[: int(rng.integers(1, 3))]
    if r < 0.30:
        return (int(rng.integers(20, 60)),)
    if r < 0.33:
        return (int(rng.integers(30, 40)), int(rng.integers(30, 40)))
    rank = int(rng.integers(1, 4))
    return tuple(int(rng.integers(1, 6)) for _ in range(rank))


def random_floats(rng, n):
    kind = int(rng.integers(0, 7))
    if kind == 0:
        v = rng.standard_normal(n)
    elif kind == 1:
        v = rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 8, n)
    elif kind == 2:
        v = rng.integers(-100, 100, n).astype(np.float64)
    elif kind == 3:
        v = rng.random(n)
    elif kind == 4:
        v = rng.standard_normal(n) * 10.0 ** rng.uniform(-40, 40)
    elif kind == 5:
        v = np.round(rng.standard_normal(n) * 100, int(rng.integers(0, 3)))
    else:
        v = rng.integers(-9, 10, n) * 10.0 ** rng.integers(-6, 6)
    if rng.random() < 0.2:
        sp = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0]), n)
        v = np.where(rng.random(n) < 0.2, sp, v)
    return v


def random_array(rng, dt, shape):
    n = int(np.prod(shape, dtype=np.int64))
    if dt == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    if dt[0] in "iu":
        info = np.iinfo(NP[dt])
        if rng.random() < 0.5:
            v = rng.integers(max(info.min, -20), min(info.max, 20), n, endpoint=True)
        else:
            v = rng.integers(info.min, info.max, n, dtype=NP[dt], endpoint=True)
        return np.asarray(v).astype(NP[dt]).reshape(shape)
    with np.errstate(all="ignore"):
        if dt == "bf16":
            return bf16_round(random_floats(rng, n).astype(np.float32)).reshape(shape)
        if dt[0] == "c":
            re, im = random_floats(rng, n), random_floats(rng, n)
            return (re + 1j * im).astype(NP[dt]).reshape(shape)
        return random_floats(rng, n).astype(NP[dt]).reshape(shape)


def save(path, a, dt):
    if dt == "bf16":
        bits = (np.asarray(a, np.float32).view(np.uint32) >> 16).astype("<u2")
        np.save(path, bits.view("V2"))
    else:
        np.save(path, a)


# ---- NumPy's results ----------------------------------------------------------------------

def xla_int_div(a, b):
    out = np.empty_like(a)
    bits = a.dtype.itemsize * 8
    for idx in np.ndindex(a.shape):
        x, y = int(a[idx]), int(b[idx])
        if y == 0:
            q = -1
        elif a.dtype.kind == "i" and x == -(1 << (bits - 1)) and y == -1:
            q = x
        else:
            q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        out[idx] = np.array(q).astype(np.int64).astype(a.dtype) if a.dtype.kind == "i" else \
            np.array(q % (1 << bits), dtype=np.uint64).astype(a.dtype)
    return out


def ops_of(dt):
    ops = ["add", "sub", "mul"]
    if dt == "bool":
        ops = ["eq", "max", "min"]
    elif dt[0] == "c":
        ops += ["div", "neg", "abs", "eq"]
    else:
        ops += ["div", "max", "min", "neg", "eq", "lt"]
        if dt[0] != "u":
            ops.append("abs")
    return ops


def expected(op, a, b, dt):
    with np.errstate(all="ignore"):
        if dt == "bf16":
            f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                 "max": np.maximum, "min": np.minimum}
            if op in f:
                return bf16_round(f[op](a, b)), "bf16"
            if op == "neg":
                return bf16_round(-a), "bf16"
            if op == "abs":
                return bf16_round(np.abs(a)), "bf16"
            return (a == b if op == "eq" else a < b), "bool"
        if op == "div" and dt[0] in "iu":
            return xla_int_div(a, b), dt
        if op == "abs" and dt[0] == "c":
            # The magnitude correctly rounded, as np.hypot gives it.  np.abs
            # of complex64 takes a vectorised path on AVX-512 machines that
            # is up to 1 ulp off in about a third of the elements, so what it
            # prints depends on the CPU; elsewhere it equals np.hypot.
            a = np.hypot(a.real, a.imag)
        r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
             "max": lambda: np.maximum(a, b), "min": lambda: np.minimum(a, b), "neg": lambda: -a,
             "abs": lambda: np.abs(a), "eq": lambda: a == b, "lt": lambda: a < b}[op]()
        r = np.asarray(r)
        if dt == "bool" and op in ("max", "min"):
            r = r.astype(np.bool_)
        out_dt = "bool" if op in ("eq", "lt") else ({"c64": "f32", "c128": "f64"}[dt] if op == "abs" and dt[0] == "c"
                                                      else dt)
        return r.astype(NP[out_dt]) if out_dt != "bool" else r.astype(np.bool_), out_dt


def converted(a, dt, to):
    """a (of dtype dt) as convert_element_type gives it in `to`: integers
    wrap, floats truncate toward zero saturating at the range (NaN: 0),
    complex drops its imaginary part, bool compares with 0."""
    with np.errstate(all="ignore"):
        if to == "bool":
            return (a != 0) if dt != "bf16" else (np.asarray(a) != 0)
        src = np.asarray(a)
        if src.dtype.kind == "c" and to[0] != "c":
            src = src.real
        if to[0] in "iu":
            info = np.iinfo(NP[to])
            out = np.empty(src.shape, NP[to])
            for idx in np.ndindex(src.shape):
                x = src[idx]
                if src.dtype.kind in "biu":
                    v = int(x) % (1 << (8 * np.dtype(NP[to]).itemsize))
                    if to[0] == "i" and v > info.max:
                        v -= 1 << (8 * np.dtype(NP[to]).itemsize)
                else:
                    x = float(x)
                    v = 0 if x != x else max(info.min, min(info.max, int(x) if abs(x) != float("inf") else
                                                           (info.max if x > 0 else info.min)))
                out[idx] = v
            return out
        if to == "bf16":
            return bf16_round(src.astype(np.float32))
        return src.astype(NP[to])


def text(a, dt):
    return bf16_str(a) if dt == "bf16" else str(a)


# ---- one round -----------------------------------------------------------------------------

def one_round(shmapi, rng, k, tmp):
    dt = DTYPES[int(rng.integers(0, len(DTYPES)))]
    shape = random_shape(rng)
    a, b = random_array(rng, dt, shape), random_array(rng, dt, shape)
    pa, pb, po = (os.path.join(tmp, "r%d_%s.npy" % (k, s)) for s in "abo")
    save(pa, a, dt)
    save(pb, b, dt)
    lines = ['a = load "%s"' % os.path.basename(pa), 'b = load "%s"' % os.path.basename(pb)]
    want = [text(a, dt), text(b, dt)]
    lines += ['print "%s"' % MARK, "print a", 'print "%s"' % MARK, "print b"]
    for op in ops_of(dt):
        r, rdt = expected(op, a, b, dt)
        args = "a" if op in ("neg", "abs") else "a b"
        lines += ["r_%s = %s %s" % (op, op, args), 'print "%s"' % MARK, "print r_%s" % op]
        want.append(text(r, rdt))
    to = DTYPES[int(rng.integers(0, len(DTYPES)))]
    lines += ["r_cv = convert_element_type[new_dtype=%s] a" % to, 'print "%s"' % MARK, "print r_cv"]
    want.append(text(converted(a, dt, to), to))
    lines.append('save "%s" r_%s' % (os.path.basename(po), ops_of(dt)[0]))
    saved, sdt = expected(ops_of(dt)[0], a, b, dt)
    prog = os.path.join(tmp, "r%d.shm" % k)
    with open(prog, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([shmapi, prog], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    if p.returncode:
        return ["round %d (%s%s): shmapi failed: %s" % (k, dt, shape, p.stderr[:800])]
    got = p.stdout.split(MARK + "\n")[1:]
    got = [g[:-1] if g.endswith("\n") else g for g in got]
    bad = []
    names = ["a", "b"] + ops_of(dt) + ["convert_element_type to %s" % to]
    for name, w, g in zip(names, want, got):
        if w != g:
            bad.append("round %d (%s%s) %s:\n--- numpy\n%s\n--- shmapi\n%s" % (k, dt, list(shape), name, w, g))
    if len(got) != len(want):
        bad.append("round %d: %d blocks printed, %d expected" % (k, len(got), len(want)))
    back = np.load(po)
    # bit for bit, but for which NaN a NaN is (NumPy's own loops do not say)
    if sdt == "bf16":
        back = (back.view("<u2").astype(np.uint32) << np.uint32(16)).view(np.float32)
        same = back.shape == saved.shape and np.array_equal(back, saved, equal_nan=True) and \
            np.array_equal(np.signbit(back[~np.isnan(back)]), np.signbit(saved[~np.isnan(saved)]))
    else:
        same = back.dtype == np.dtype(NP[sdt]) and back.shape == saved.shape and \
            (back.tobytes() == np.ascontiguousarray(saved).tobytes() or
             (back.dtype.kind in "fc" and np.array_equal(back, saved, equal_nan=True) and
              np.array_equal(np.signbit(back.real), np.signbit(np.asarray(saved).real)) |
              np.isnan(back.real).any()))
    if not same:
        bad.append("round %d (%s): the saved file reads back as %r, not %r" % (k, dt, back, saved))
    return bad


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(ROUNDS):
            bad += one_round(shmapi, rng, k, tmp)
    for m in bad[:SHOW]:
        print(m)
        print()
    print("%d random programs over %d dtypes (seed %d): %d mismatches" % (ROUNDS, len(DTYPES), SEED, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
