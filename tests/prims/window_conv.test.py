#!/usr/bin/python3
# timeout: 300
"""The windowed reductions and conv_general_dilated against direct NumPy
models (tests/prims/_winmodel.py), on random cases.

Each case draws a primitive, a dtype and random parameters: for
conv_general_dilated 0 to 3 spatial dimensions, random dimension numbers
(every spec a random permutation), strides, paddings (negative ones too),
lhs and rhs dilations, feature or batch groups; for reduce_window_sum,
_max, _min, select_and_gather_add and select_and_scatter_add random
window dimensions, strides, paddings and dilations over operands of rank
1 to 3, whose values are often small integers so that windows hold ties.
Three convolutions of 64x64 images with 32 features come last, big
enough that the kernel gathers its im2col matrix in several chunks.
One program loads every input, computes every case and saves the result;
every fifth case runs inside a shard_map over a mesh {i: 2}, its operand
split along a dimension the primitive maps elementwise (conv's batch,
a window dimension of size 1), and must give the same array.  The
program runs twice and must write the same bytes.

    SHMAPI=build/shmapi python3 tests/prims/window_conv.test.py [--seed N] [--count N]
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

CONV_DTYPES = ["float32", "float32", "float64", "float16", "int32", "int8", "complex64", "bool"]
WIN_DTYPES = ["float32", "float32", "float64", "float16", "int32", "uint8", "int64"]


def tie_values(rng, x):
    """x with values drawn from a few small numbers (ties in windows)."""
    if x.dtype.kind == "f" and rng.random() < 0.5:
        return rng.integers(-3, 4, size=x.shape).astype(x.dtype)
    return x


def smap_wrap(lines, i, name, stmt, ops, split_dims, out_split, mesh):
    """stmt run inside a shard_map, operand k split along split_dims[k]
    (None: replicated), the result along out_split."""
    def spec(d, r):
        if d is None:
            return "P()"
        return "P(" + ", ".join("i" if k == d else "None" for k in range(r)) + ")"
    ins = ", ".join(spec(d, r) for d, r in split_dims)
    lines.append("@shard_map[mesh=%s, in_specs=(%s,), out_specs=%s]" % (mesh, ins, spec(out_split[0], out_split[1])))
    params = ", ".join("a%d" % k for k in range(len(ops)))
    lines.append("def %s(%s) {" % (name, params))
    lines.append("  r = " + stmt % tuple("a%d" % k for k in range(len(ops))))
    lines.append("  return r")
    lines.append("}")
    lines.append("y%d = %s %s" % (i, name, " ".join(ops)))


def conv_case(rng, i, tmp, lines, smap):
    dt = str(rng.choice(CONV_DTYPES))
    lhs, rhs, params, a = M.conv_case(rng, dt)
    pt = None
    if dt == "float16" and rng.random() < 0.5:
        pt = "float32"
        params = params.replace("preferred_element_type=None", "preferred_element_type=float32")
    want = M.conv(lhs, rhs, a["strides"], a["pad"], a["ld"], a["rd"], a["specs"], a["G"], a["B"], pt)
    np.save(os.path.join(tmp, "l%d.npy" % i), lhs)
    np.save(os.path.join(tmp, "r%d.npy" % i), rhs)
    lines += ['l%d = load "l%d.npy"' % (i, i), 'r%d = load "r%d.npy"' % (i, i)]
    stmt = "conv_general_dilated[" + params + "] %s %s"
    nb = lhs.shape[a["specs"][0][0]]
    if smap and a["B"] == 1 and nb % 2 == 0:
        smap_wrap(lines, i, "sm%d" % i, stmt, ["l%d" % i, "r%d" % i],
                  [(a["specs"][0][0], lhs.ndim), (None, rhs.ndim)], (a["specs"][2][0], lhs.ndim), "m")
        where = "in shard_map"
    else:
        lines.append("y%d = " % i + stmt % ("l%d" % i, "r%d" % i))
        where = ""
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "complex64": 1e-5}.get(pt or dt, 0)
    return want, tol, "conv %s %s %s" % (dt, params, where)


def window_case(rng, i, tmp, lines, smap):
    prim = str(rng.choice(["sum", "max", "min", "gather", "scatter"]))
    dt = str(rng.choice(WIN_DTYPES if prim != "sum" else WIN_DTYPES + ["complex64"]))
    if prim in ("gather", "scatter") and dt not in ("float32", "float64"):
        dt = "float32"
    x, a = M.window_case(rng, dt, dilate=prim != "scatter")
    x = tie_values(rng, x)
    split = None
    if smap:
        # a leading dimension the windows leave alone, split over i
        x = np.concatenate([x[None], M.make(rng, x.shape, dt)[None]], axis=0)
        x = tie_values(rng, x)
        for key, one in (("wdim", 1), ("strides", 1), ("bdil", 1), ("wdil", 1)):
            a[key] = [one] + a[key]
        a["pad"] = [(0, 0)] + a["pad"]
        split = 0
    np.save(os.path.join(tmp, "x%d.npy" % i), x)
    lines.append('x%d = load "x%d.npy"' % (i, i))
    ops = ["x%d" % i]
    le = rng.random() < 0.5
    sel = "le" if le else "ge"
    if prim in ("sum", "max", "min"):
        want = M.reduce_window(prim, x, a["wdim"], a["strides"], a["pad"], a["bdil"], a["wdil"])
        stmt = "reduce_window_%s[%s] %%s" % (prim, M.window_params(a))
    elif prim == "gather":
        t = M.make(rng, x.shape, dt)
        np.save(os.path.join(tmp, "t%d.npy" % i), t)
        lines.append('t%d = load "t%d.npy"' % (i, i))
        ops = ["t%d" % i, "x%d" % i]
        want = M.select_and_gather_add(t, x, le, a["wdim"], a["strides"], a["pad"], a["bdil"], a["wdil"])
        stmt = "select_and_gather_add[%s] %%s %%s" % M.window_params(a, sel)
    else:
        ones = [1] * x.ndim
        oshape = M.window_out_shape(x.shape, a["wdim"], a["strides"], a["pad"], ones, ones)
        s = M.make(rng, oshape, dt)
        np.save(os.path.join(tmp, "t%d.npy" % i), s)
        lines.append('t%d = load "t%d.npy"' % (i, i))
        ops = ["t%d" % i, "x%d" % i]
        want = M.select_and_scatter_add(s, x, le, a["wdim"], a["strides"], a["pad"])
        stmt = "select_and_scatter_add[%s] %%s %%s" % M.window_params(a, sel, dilations=False)
    if split is not None:
        smap_wrap(lines, i, "sm%d" % i, stmt, ops, [(0, x.ndim)] * len(ops), (0, x.ndim), "m")
    else:
        lines.append("y%d = " % i + stmt % tuple(ops))
    tol = {"float32": 1e-6, "float64": 1e-13, "float16": 1e-3, "complex64": 1e-6}.get(dt, 0)
    if prim == "scatter" and dt == "float32":
        tol = 1e-5
    return want, tol, "%s %s %s%s" % (prim, dt, stmt % tuple(ops), " in shard_map" if split is not None else "")


def big_conv_case(rng, i, tmp, lines, k):
    """A convolution whose im2col matrix is several MiB, which the kernel
    gathers in chunks of rows: NHWC 64x64 images with 32 features, a 3x3
    kernel, SAME padding; f32, f64 and (k == 2) stride 2 with a dilated
    kernel."""
    dt = ["float32", "float64", "float32"][k % 3]
    lhs = rng.standard_normal((2, 64, 64, 32)).astype(dt)
    rhs = rng.standard_normal((3, 3, 32, 8)).astype(dt)
    specs = [[0, 3, 1, 2], [3, 2, 0, 1], [0, 3, 1, 2]]
    strides, rd = ([2, 2], [2, 1]) if k == 2 else ([1, 1], [1, 1])
    pad = [(rd[0], rd[0]), (rd[1], rd[1])]
    want = M.conv(lhs, rhs, strides, pad, [1, 1], rd, specs, 1, 1)
    np.save(os.path.join(tmp, "l%d.npy" % i), lhs)
    np.save(os.path.join(tmp, "r%d.npy" % i), rhs)
    params = "dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), " \
             "out_spec=(0, 3, 1, 2)), padding=%s, rhs_dilation=%s, window_strides=%s" % (
                 M.fmt_pairs(pad), M.fmt_ints(rd), M.fmt_ints(strides))
    lines += ['l%d = load "l%d.npy"' % (i, i), 'r%d = load "r%d.npy"' % (i, i),
              "y%d = conv_general_dilated[%s] l%d r%d" % (i, params, i, i)]
    return want, 1e-5 if dt == "float32" else 1e-12, "big conv %s %s" % (dt, params)


def compare(got, want, tol):
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if tol == 0:
        return bool(np.array_equal(got, want))
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    same_nan = np.isnan(g) == np.isnan(w)
    scale = max(1.0, float(np.nanmax(np.abs(w))) if w.size and not np.isnan(w).all() else 1.0)
    close = np.abs(np.nan_to_num(g) - np.nan_to_num(w)) <= tol * scale * 4
    inf_same = np.where(np.isinf(w), g == w, True)
    return bool(np.all(same_nan) and np.all(close | np.isinf(w)) and np.all(inf_same))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=2400)
    args = ap.parse_args()
    shmapi = os.environ["SHMAPI"]
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        lines = ["mesh m = {i: 2}"]
        cases = []
        for i in range(args.count):
            smap = i % 5 == 4
            maker = conv_case if i % 2 == 0 else window_case
            cases.append(maker(rng, i, tmp, lines, smap))
            lines.append('save "y%d.npy" y%d' % (i, i))
        for k in range(3):
            i = len(cases)
            cases.append(big_conv_case(rng, i, tmp, lines, k))
            lines.append('save "y%d.npy" y%d' % (i, i))
        prog = os.path.join(tmp, "prog.shm")
        with open(prog, "w") as f:
            f.write("\n".join(lines) + "\n")
        outs = []
        for run in range(2):
            p = subprocess.run([shmapi, prog], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
            if p.returncode:
                print("shmapi failed:\n" + p.stderr[:3000])
                return 1
            outs.append([open(os.path.join(tmp, "y%d.npy" % i), "rb").read() for i in range(len(cases))])
        bad = 0
        for i, (want, tol, what) in enumerate(cases):
            got = np.load(os.path.join(tmp, "y%d.npy" % i))
            if not compare(got, want, tol):
                bad += 1
                if bad <= 3:
                    print("case %d: %s\n got %s %r\nwant %s %r" % (i, what, got.shape, got, want.shape, want))
            if outs[0][i] != outs[1][i]:
                bad += 1
                print("case %d (%s): two runs wrote different bytes" % (i, what))
    print("%d window and convolution cases (seed %d) against NumPy: %d wrong" % (len(cases), args.seed, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
