#!/usr/bin/python3
# timeout: 300
"""reduce_window with a body jaxpr against a direct NumPy model, on random
cases.

Each case draws a body (sums, products, the order-sensitive acc * 2 + x
and acc - x, max and min with any init value, a sine, integer bodies
that wrap, a two-operand argmax carrying value and index, and bodies with
non-elementwise primitives, which the kernel runs element by element),
a dtype, an init value and random window parameters (dilations, strides,
negative padding) over operands of rank 1 to 3 (tests/prims/_winmodel.py).
The model folds each window as XLA's CPU backend does: the accumulator
starts at the init value and becomes body(acc, x) for each element of
the window, in row-major window order, that lies in the operand (padding
and dilation holes take no part).  Every fifth case runs inside a
shard_map over {i: 2}, split along a leading dimension the windows leave
alone.  One program computes every case and saves the results.

    SHMAPI=build/shmapi python3 tests/prims/reduce_window_body.test.py [--seed N] [--count N]
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _numpy import np  # noqa: E402
import _winmodel as M  # noqa: E402

SHORT = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "uint8": "u8"}

# name: (dtypes, shm body text with {t} for the dtype, model on scalars)
BODIES = {
    "add": (["float32", "float64", "int32"], "c:{t}[] = add a b in (c,)", lambda a, b: a + b),
    "mul": (["float32", "int32", "uint8"], "c:{t}[] = mul a b in (c,)", lambda a, b: a * b),
    "affine": (["float32", "float64", "int32"], "c:{t}[] = mul a 2:{t}[]; d:{t}[] = add c b in (d,)",
               lambda a, b: a * a.dtype.type(2) + b),
    "sub": (["float32", "int64"], "c:{t}[] = sub a b in (c,)", lambda a, b: a - b),
    "max": (["float32", "int32", "uint8"], "c:{t}[] = max a b in (c,)", lambda a, b: max(a, b)),
    "min": (["float64", "int32"], "c:{t}[] = min b a in (c,)", lambda a, b: min(a, b)),
    "sin": (["float64"], "c:{t}[] = sin b; d:{t}[] = add a c in (d,)", lambda a, b: a + np.sin(b)),
    # non-elementwise primitives: the kernel runs the body once per element
    "bcast": (["float32", "int32"], "c:{t}[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,)] b; "
              "d:{t}[] = reduce_max[axes=(0,)] c; e:{t}[] = mul a 3:{t}[]; f:{t}[] = sub e d in (f,)",
              lambda a, b: a * a.dtype.type(3) - b),
}


def fold(x, init, body, a):
    """The model: each window folded from init, in-operand elements only."""
    out_shape = M.window_out_shape(x.shape, a["wdim"], a["strides"], a["pad"], a["bdil"], a["wdil"])
    _, bidx = M.dilate_pad(x, a["bdil"], a["pad"], 0)
    flat = x.reshape(-1)
    out = np.empty(out_shape, dtype=x.dtype)
    with np.errstate(over="ignore"):
        for y, sl in M.windows(out_shape, a["wdim"], a["strides"], a["wdil"]):
            acc = init
            for i in bidx[sl].reshape(-1):
                if i >= 0:
                    acc = x.dtype.type(body(acc, flat[i]))
            out[y] = acc
    return out


def argmax_fold(v, ix, a):
    out_shape = M.window_out_shape(v.shape, a["wdim"], a["strides"], a["pad"], a["bdil"], a["wdil"])
    _, bidx = M.dilate_pad(v, a["bdil"], a["pad"], 0)
    vf, xf = v.reshape(-1), ix.reshape(-1)
    ov, oi = np.empty(out_shape, v.dtype), np.empty(out_shape, ix.dtype)
    for y, sl in M.windows(out_shape, a["wdim"], a["strides"], a["wdil"]):
        bv, bi = np.float32(-np.inf), np.int32(-1)
        for i in bidx[sl].reshape(-1):
            if i >= 0 and vf[i] > bv:
                bv, bi = vf[i], xf[i]
        ov[y], oi[y] = bv, bi
    return ov, oi


def lit(v, dt):
    if np.dtype(dt).kind == "f":
        return "%r:%s[]" % (float(v), SHORT[dt]) if np.isfinite(v) else "%sinf:%s[]" % ("-" if v < 0 else "", SHORT[dt])
    return "%d:%s[]" % (int(v), SHORT[dt])


def spread(rng, x, a, smap):
    if not smap:
        return x, a
    x = np.concatenate([x[None], M.make(rng, x.shape, x.dtype)[None]], axis=0)
    a = dict(a)
    for key in ("wdim", "strides", "bdil", "wdil"):
        a[key] = [1] + a[key]
    a["pad"] = [(0, 0)] + a["pad"]
    return x, a


def params(a, body):
    return ("base_dilation=%s consts=() jaxpr=%s padding=%s window_dilation=%s window_dimensions=%s "
            "window_strides=%s" % (M.fmt_ints(a["bdil"]), body, M.fmt_pairs(a["pad"]), M.fmt_ints(a["wdil"]),
                                   M.fmt_ints(a["wdim"]), M.fmt_ints(a["strides"])))


def emit(lines, i, stmt, ops, rank, nout, smap):
    if not smap:
        lines.append("%s = %s" % (", ".join("y%d_%d" % (i, k) for k in range(nout)), stmt % tuple(ops)))
        return
    spec = "P(i%s)" % (", None" * (rank - 1))
    lines.append("@shard_map[mesh=m, in_specs=(%s,), out_specs=(%s,)]" % (", ".join([spec] * len(ops)),
                                                                          ", ".join([spec] * nout)))
    names = ["a%d" % k for k in range(len(ops))]
    lines.append("def sm%d(%s) {" % (i, ", ".join(names)))
    lines.append("  %s = %s" % (", ".join("r%d" % k for k in range(nout)), stmt % tuple(names)))
    lines.append("  return %s" % ", ".join("r%d" % k for k in range(nout)))
    lines.append("}")
    lines.append("%s = sm%d %s" % (", ".join("y%d_%d" % (i, k) for k in range(nout)), i, " ".join(ops)))


def case(rng, i, tmp, lines, smap):
    name = str(rng.choice(list(BODIES) + ["argmax"]))
    if name == "argmax":
        v, a = M.window_case(rng, "float32")
        v, a = spread(rng, v, a, smap)
        v = rng.integers(-3, 4, size=v.shape).astype(np.float32)
        ix = np.arange(v.size, dtype=np.int32).reshape(v.shape)
        np.save(os.path.join(tmp, "x%d.npy" % i), v)
        np.save(os.path.join(tmp, "j%d.npy" % i), ix)
        lines += ['x%d = load "x%d.npy"' % (i, i), 'j%d = load "j%d.npy"' % (i, i)]
        body = ("{ lambda ; a:f32[] b:i32[] c:f32[] d:i32[]. let p:bool[] = gt c a; e:f32[] = select_n p a c; "
                "f:i32[] = select_n p b d in (e, f) }")
        stmt = "reduce_window[%s] %%s %%s -inf:f32[] -1:i32[]" % params(a, body)
        emit(lines, i, stmt, ["x%d" % i, "j%d" % i], v.ndim, 2, smap)
        return list(argmax_fold(v, ix, a)), 0, "argmax " + stmt
    dts, text, f = BODIES[name]
    dt = str(rng.choice(dts))
    x, a = M.window_case(rng, dt)
    x, a = spread(rng, x, a, smap)
    if dt == "uint8":
        x = rng.integers(0, 6, size=x.shape).astype(dt)
    init = M.make(rng, (), dt)[()]
    if name in ("max", "min") and np.dtype(dt).kind == "f" and rng.random() < 0.3:
        init = np.dtype(dt).type(-np.inf if name == "max" else np.inf)
    if name == "mul" and np.dtype(dt).kind == "f":
        x = (x / 2 + 1).astype(dt)
    np.save(os.path.join(tmp, "x%d.npy" % i), x)
    lines.append('x%d = load "x%d.npy"' % (i, i))
    body = "{ lambda ; a:%s[] b:%s[]. let %s }" % (SHORT[dt], SHORT[dt], text.format(t=SHORT[dt]))
    stmt = "reduce_window[%s] %%s %s" % (params(a, body), lit(init, dt))
    emit(lines, i, stmt, ["x%d" % i], x.ndim, 1, smap)
    tol = {"float32": 2e-6, "float64": 1e-13}.get(dt, 0)
    return [fold(x, init, f, a)], tol, "%s %s %s" % (name, dt, stmt % ("x%d" % i))


def compare(got, want, tol):
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if tol == 0:
        return bool(np.array_equal(got, want))
    g, w = got.astype(np.float64), want.astype(np.float64)
    fin = np.isfinite(w)
    if not np.array_equal(np.isfinite(g), fin) or not np.array_equal(g[~fin], w[~fin]):
        return False
    return bool(np.all(np.abs(g[fin] - w[fin]) <= tol * np.maximum(1.0, np.abs(w[fin]))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1500)
    args = ap.parse_args()
    shmapi = os.environ["SHMAPI"]
    rng = np.random.default_rng(args.seed)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        lines = ["mesh m = {i: 2}"]
        cases = []
        for i in range(args.count):
            cases.append(case(rng, i, tmp, lines, i % 5 == 4))
            for k in range(len(cases[-1][0])):
                lines.append('save "y%d_%d.npy" y%d_%d' % (i, k, i, k))
        prog = os.path.join(tmp, "prog.shm")
        with open(prog, "w") as f:
            f.write("\n".join(lines) + "\n")
        p = subprocess.run([shmapi, prog], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
        if p.returncode:
            print("shmapi failed:\n" + p.stderr[:3000])
            return 1
        for i, (wants, tol, what) in enumerate(cases):
            for k, want in enumerate(wants):
                got = np.load(os.path.join(tmp, "y%d_%d.npy" % (i, k)))
                if not compare(got, want, tol):
                    bad += 1
                    if bad <= 3:
                        print("case %d result %d: %s\n got %r\nwant %r" % (i, k, what, got, want))
    print("%d reduce_window cases with a body (seed %d) against NumPy: %d wrong" % (len(cases), args.seed, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
