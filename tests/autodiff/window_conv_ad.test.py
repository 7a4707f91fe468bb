#!/usr/bin/python3
# timeout: 300
"""Derivatives and transposes of conv_general_dilated and the window
primitives, on random f64 cases (tests/prims/_winmodel.py draws them):

  * jvp against central finite differences of shmapi's own function:
    jvp f (x; v) equals (f(x + h v) - f(x - h v)) / 2h (conv and
    reduce_window_sum are linear or bilinear, so the difference is exact
    up to rounding; reduce_window_max and _min draw values without ties);
  * vjp against jvp: <vjp f (x; w), v> equals <w, jvp f (x; v)>;
  * linear_transpose through the adjoint identity <T(w), v> = <w, f(v)>,
    f(v) from the NumPy model: conv in its lhs and in its rhs (JAX's
    _conv_general_dilated_transpose_lhs and _rhs, groups included),
    reduce_window_sum (a pad and a reduce_window_sum), and each of
    select_and_gather_add and select_and_scatter_add, which transpose
    into each other.

reduce_window_max and _min with a window dilation have no reverse mode
(JAX refuses it too); their cases check the jvp only.  One program holds
every case.

    SHMAPI=build/shmapi python3 tests/autodiff/window_conv_ad.test.py [--seed N] [--count N]
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "prims"))
from _numpy import np  # noqa: E402
import _winmodel as M  # noqa: E402

H = 1e-4


def ty(a):
    return "f64[%s]" % ",".join(str(n) for n in a.shape)


class Prog:
    def __init__(self, tmp):
        self.tmp, self.lines, self.n = tmp, [], 0

    def inp(self, name, a):
        np.save(os.path.join(self.tmp, name + ".npy"), a)
        self.lines.append('%s = load "%s.npy"' % (name, name))

    def out(self, *names):
        for n in names:
            self.lines.append('save "%s.npy" %s' % (n, n))

    def get(self, name):
        return np.load(os.path.join(self.tmp, name + ".npy"))


def dot(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


def conv_case(rng, P, k):
    lhs, rhs, params, a = M.conv_case(rng, "float64", small=True)
    f = lambda x, w: M.conv(x, w, a["strides"], a["pad"], a["ld"], a["rd"], a["specs"], a["G"], a["B"])
    y = f(lhs, rhs)
    xd, wd, r = rng.standard_normal(lhs.shape), rng.standard_normal(rhs.shape), rng.standard_normal(y.shape)
    p = "c%d" % k
    P.lines += ["def %s(x:%s, w:%s) {" % (p, ty(lhs), ty(rhs)),
                "  y = conv_general_dilated[%s] x w" % params, "  return y", "}",
                "def %s_jvp = jvp %s" % (p, p), "def %s_vjp = vjp %s" % (p, p),
                "def %s_tl = linear_transpose[linear=(0,)] %s" % (p, p),
                "def %s_tr = linear_transpose[linear=(1,)] %s" % (p, p)]
    for n, v in (("x", lhs), ("w", rhs), ("xd", xd), ("wd", wd), ("r", r), ("xp", lhs + H * xd),
                 ("xm", lhs - H * xd), ("wp", rhs + H * wd), ("wm", rhs - H * wd)):
        P.inp(p + n, v)
    P.lines += ["%sy, %syd = %s_jvp %sx %sw %sxd %swd" % ((p,) * 7),
                "%syp = %s %sxp %swp" % ((p,) * 4), "%sym = %s %sxm %swm" % ((p,) * 4),
                "%sy2, %sxb, %swb = %s_vjp %sx %sw %sr" % ((p,) * 7),
                "%stl = %s_tl %sw %sr" % ((p,) * 4), "%str = %s_tr %sx %sr" % ((p,) * 4)]
    P.out(*[p + s for s in ("yd", "yp", "ym", "xb", "wb", "tl", "tr")])

    def check():
        yd, yp, ym = P.get(p + "yd"), P.get(p + "yp"), P.get(p + "ym")
        xb, wb, tl, tr = P.get(p + "xb"), P.get(p + "wb"), P.get(p + "tl"), P.get(p + "tr")
        scale = 1 + float(np.abs(yd).max() if yd.size else 0)
        errs = []
        if yd.shape != y.shape or np.abs(yd - (yp - ym) / (2 * H)).max(initial=0) > 1e-6 * scale:
            errs.append("jvp differs from finite differences")
        ref = dot(r, yd)
        tol = 1e-9 * (1 + abs(ref) + np.abs(r).sum() * scale)
        if abs(dot(xb, xd) + dot(wb, wd) - ref) > tol:
            errs.append("vjp and jvp disagree: %g vs %g" % (dot(xb, xd) + dot(wb, wd), ref))
        if tl.shape != lhs.shape or abs(dot(tl, xd) - dot(r, f(xd, rhs))) > tol:
            errs.append("transpose in lhs fails the adjoint identity")
        if tr.shape != rhs.shape or abs(dot(tr, wd) - dot(r, f(lhs, wd))) > tol:
            errs.append("transpose in rhs fails the adjoint identity")
        return errs
    return check, "conv_general_dilated[%s] %s %s" % (params, ty(lhs), ty(rhs))


def window_case(rng, P, k):
    prim = str(rng.choice(["sum", "max", "min", "gather", "scatter"]))
    x, a = M.window_case(rng, "float64", dilate=prim != "scatter")
    p = "w%d" % k
    le = rng.random() < 0.5
    sel = "le" if le else "ge"
    reverse = prim in ("sum", "gather", "scatter") or all(d == 1 for d in a["wdil"])
    if prim in ("gather",) and not all(d == 1 for d in a["wdil"]):
        a["wdil"] = [1] * x.ndim
    if prim in ("sum", "max", "min"):
        f = lambda v: M.reduce_window(prim, v, a["wdim"], a["strides"], a["pad"], a["bdil"], a["wdil"])
        y = f(x)
        eq = "reduce_window_%s[%s] x" % (prim, M.window_params(a))
        P.lines += ["def %s(x:%s) {" % (p, ty(x)), "  y = " + eq, "  return y", "}",
                    "def %s_jvp = jvp %s" % (p, p)]
        xd, r = rng.standard_normal(x.shape), rng.standard_normal(y.shape)
        for n, v in (("x", x), ("xd", xd), ("r", r), ("xp", x + H * xd), ("xm", x - H * xd)):
            P.inp(p + n, v)
        P.lines += ["%sy, %syd = %s_jvp %sx %sxd" % ((p,) * 5), "%syp = %s %sxp" % ((p,) * 3),
                    "%sym = %s %sxm" % ((p,) * 3)]
        P.out(p + "yd", p + "yp", p + "ym")
        if reverse:
            P.lines += ["def %s_vjp = vjp %s" % (p, p), "%sy2, %sxb = %s_vjp %sx %sr" % ((p,) * 5)]
            P.out(p + "xb")
        if prim == "sum":
            P.lines += ["def %s_t = linear_transpose %s" % (p, p), "%st = %s_t %sr" % ((p,) * 3)]
            P.out(p + "t")

        def check():
            yd, yp, ym = P.get(p + "yd"), P.get(p + "yp"), P.get(p + "ym")
            errs = []
            fin = np.isfinite(y)
            with np.errstate(invalid="ignore"):
                fd = np.where(fin, (yp - ym) / (2 * H), 0)
            scale = 1 + float(np.abs(yd).max() if yd.size else 0)
            if yd.shape != y.shape or np.abs(np.where(fin, yd, 0) - fd).max(initial=0) > 1e-6 * scale:
                errs.append("jvp differs from finite differences")
            ref = dot(r, np.where(fin, yd, 0))
            tol = 1e-9 * (1 + abs(ref) + np.abs(r).sum() * scale)
            if reverse:
                xb = P.get(p + "xb")
                if abs(dot(xb, xd) - ref) > tol:
                    errs.append("vjp and jvp disagree: %g vs %g" % (dot(xb, xd), ref))
            if prim == "sum":
                t = P.get(p + "t")
                if t.shape != x.shape or abs(dot(t, xd) - dot(r, f(xd))) > tol:
                    errs.append("transpose fails the adjoint identity")
            return errs
        return check, eq + " " + ty(x)
    # select_and_gather_add t x, select_and_scatter_add s x: linear in the first
    if prim == "gather":
        f = lambda v: M.select_and_gather_add(v, x, le, a["wdim"], a["strides"], a["pad"], a["bdil"], a["wdil"])
        v0 = rng.standard_normal(x.shape)
        eq = "select_and_gather_add[%s] t x" % M.window_params(a, sel)
    else:
        ones = [1] * x.ndim
        oshape = M.window_out_shape(x.shape, a["wdim"], a["strides"], a["pad"], ones, ones)
        f = lambda v: M.select_and_scatter_add(v, x, le, a["wdim"], a["strides"], a["pad"])
        v0 = rng.standard_normal(oshape)
        eq = "select_and_scatter_add[%s] t x" % M.window_params(a, sel, dilations=False)
    if rng.random() < 0.5:
        x = rng.integers(-2, 3, size=x.shape).astype(np.float64)     # ties
    y = f(v0)
    vd, r = rng.standard_normal(v0.shape), rng.standard_normal(y.shape)
    P.lines += ["def %s(t:%s, x:%s) {" % (p, ty(v0), ty(x)), "  y = " + eq, "  return y", "}",
                "def %s_t = linear_transpose[linear=(0,)] %s" % (p, p), "def %s_jvp = jvp %s" % (p, p)]
    for n, v in (("v", v0), ("x", x), ("vd", vd), ("r", r), ("xd", np.zeros(x.shape))):
        P.inp(p + n, v)
    P.lines += ["%st = %s_t %sx %sr" % ((p,) * 4), "%sy, %syd = %s_jvp %sv %sx %svd %sxd" % ((p,) * 7)]
    P.out(p + "t", p + "yd")

    def check():
        t, yd = P.get(p + "t"), P.get(p + "yd")
        errs = []
        ref = dot(r, f(vd))
        tol = 1e-9 * (1 + abs(ref) + np.abs(r).sum() * (1 + np.abs(vd).sum()))
        if t.shape != v0.shape or abs(dot(t, vd) - ref) > tol:
            errs.append("transpose fails the adjoint identity: %g vs %g" % (dot(t, vd) if t.shape == v0.shape else 0, ref))
        if yd.shape != y.shape or np.abs(yd - f(vd)).max(initial=0) > 1e-12 * (1 + np.abs(vd).max(initial=0)):
            errs.append("jvp is not the function of the tangent")
        return errs
    return check, eq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--count", type=int, default=600)
    args = ap.parse_args()
    shmapi = os.environ["SHMAPI"]
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        P = Prog(tmp)
        cases = [(conv_case if k % 2 == 0 else window_case)(rng, P, k) for k in range(args.count)]
        prog = os.path.join(tmp, "prog.shm")
        with open(prog, "w") as fh:
            fh.write("\n".join(P.lines) + "\n")
        proc = subprocess.run([shmapi, prog], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
        if proc.returncode:
            print("shmapi failed:\n" + proc.stderr[:3000])
            return 1
        bad = 0
        for k, (check, what) in enumerate(cases):
            errs = check()
            if errs:
                bad += 1
                if bad <= 5:
                    print("case %d: %s: %s" % (k, what, "; ".join(errs)))
    print("%d derivative and transpose cases (seed %d): %d wrong" % (args.count, args.seed, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
