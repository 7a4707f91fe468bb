"""JAX's custom derivative rules (src/custom.c) against NumPy, on random
inputs: for each function jax.nn, jax.numpy and jax.scipy define with
custom_jvp that shmapi knows (relu, relu6, log1mexp, logit, _xlogx,
logaddexp and softplus, logaddexp2, xlogy, xlog1py, _softmax, sinc's
_sinc_maclaurin), a jaxpr laid out as JAX prints it (constructed from
JAX's printer: `name=` as JAX 0.6.1 on prints it, or, for every other
case, no name and the call_jaxpr a call of the jitted function
`pjit[name=relu ...]`, as older JAX prints it), called through jvp, vjp
and grad at random points, with the points where the rule and the
derivative of the primal function differ planted among them (relu and
relu6 at 0 and 6, logaddexp at ties and +inf, xlogy at x = 0).

Each tangent and cotangent must equal NumPy's computation of JAX's rule
(the formula of jax/_src/nn/functions.py, lax/other.py,
numpy/ufuncs.py, scipy/special.py); and at the points where the
function is smooth, the NumPy rule must equal central finite differences
of the NumPy primal (so the model is the derivative).  Cases are batched
into few shmapi runs; the results come back as .npy files.  Fixed seed
(SHM_CUSTOM_SEED), SHM_CUSTOM_N cases.
"""

# timeout: 240

import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, shmapi_under_test  # noqa: E402

SEED = int(os.environ.get("SHM_CUSTOM_SEED", "20261127"))
N = int(os.environ.get("SHM_CUSTOM_N", "900"))
BATCH = 150
RTOL, ATOL = 3e-5, 2e-6

LN2 = 0.6931471805599453


def T(shape):
    return "f32[%s]" % ",".join(str(d) for d in shape)


# ---- the primal functions, as JAX's jaxprs compute them (body lines, results) --------------------------

def body_relu(t, p):
    return ["%s1:%s = max %s 0.0:f32[]" % (p, t, p)], p + "1"


def body_relu6(t, p):
    return ["%s1:%s = max %s 0.0:f32[]" % (p, t, p), "%s2:%s = min %s1 6.0:f32[]" % (p, t, p)], p + "2"


def body_log1mexp(t, p):
    b = t.replace("f32", "bool")
    return ["%s1:%s = lt %s %r:f32[]" % (p, b, p, LN2),
            "%s2:%s = neg %s" % (p, t, p), "%s3:%s = expm1 %s2" % (p, t, p), "%s4:%s = neg %s3" % (p, t, p),
            "%s5:%s = log %s4" % (p, t, p),
            "%s6:%s = neg %s" % (p, t, p), "%s7:%s = exp %s6" % (p, t, p), "%s8:%s = neg %s7" % (p, t, p),
            "%s9:%s = log1p %s8" % (p, t, p),
            "%s10:%s = select_n %s1 %s9 %s5" % (p, t, p, p, p)], p + "10"


def body_logit(t, p):
    return ["%s1:%s = sub 1.0:f32[] %s" % (p, t, p), "%s2:%s = div %s %s1" % (p, t, p, p),
            "%s3:%s = log %s2" % (p, t, p)], p + "3"


def body_lae(t, p, q, two):
    b = t.replace("f32", "bool")
    ex = ["%s5:%s = exp2 %s4" % (p, t, p)] if two else ["%s5:%s = exp %s4" % (p, t, p)]
    lines = ["%s1:%s = max %s %s" % (p, t, p, q), "%s2:%s = sub %s %s" % (p, t, p, q),
             "%s3:%s = abs %s2" % (p, t, p), "%s4:%s = neg %s3" % (p, t, p)] + ex + \
            ["%s6:%s = log1p %s5" % (p, t, p)]
    if two:
        lines.append("%s7:%s = mul 1.4426950408889634:f32[] %s6" % (p, t, p))
    else:
        lines.append("%s7:%s = copy %s6" % (p, t, p))
    lines += ["%s8:%s = add %s1 %s7" % (p, t, p, p), "%s9:%s = ne %s2 %s2" % (p, b, p, p),
              "%s10:%s = add %s %s" % (p, t, p, q), "%s11:%s = select_n %s9 %s8 %s10" % (p, t, p, p, p)]
    return lines, p + "11"


def body_xlogy(t, p, q, log1p, shape):
    b = t.replace("f32", "bool")
    return ["%s1:%s = ne %s 0.0:f32[]" % (p, b, p), "%s2:%s = ne %s %s" % (p, b, q, q),
            "%s3:%s = or %s1 %s2" % (p, b, p, p), "%s4:%s = %s %s" % (p, t, "log1p" if log1p else "log", q),
            "%s5:%s = mul %s %s4" % (p, t, p, p),
            "%s6:%s = broadcast_in_dim[shape=(%s,) broadcast_dimensions=() sharding=None] 0.0:f32[]"
            % (p, t, ", ".join(map(str, shape))),
            "%s7:%s = select_n %s3 %s6 %s5" % (p, t, p, p, p)], p + "7"


def body_softmax(t, p, shape, initial):
    r, k = shape
    lines = ["%s1:f32[%d] = reduce_max[axes=(1,) out_sharding=None] %s" % (p, r, p)]
    m = p + "1"
    if initial:
        lines.append("%s0:f32[%d] = max %s %s1" % (p, r, initial, p))
        m = p + "0"
    lines += ["%s2:%s = broadcast_in_dim[shape=(%d, %d) broadcast_dimensions=(0,) sharding=None] %s" % (p, t, r, k, m),
              "%s3:%s = sub %s %s2" % (p, t, p, p), "%s4:%s = exp %s3" % (p, t, p),
              "%s5:f32[%d] = reduce_sum[axes=(1,) out_sharding=None] %s4" % (p, r, p),
              "%s6:%s = broadcast_in_dim[shape=(%d, %d) broadcast_dimensions=(0,) sharding=None] %s5" % (p, t, r, k, p),
              "%s7:%s = div %s4 %s6" % (p, t, p, p)]
    return lines, p + "7"


def custom_call(name, params, args, t, body, res, old, jvpname):
    """A custom_jvp_call equation binding `out` (old: no name=, the body a pjit)."""
    ptext = " ".join("%s:%s" % (a, ty) for a, ty in params)
    if old:
        inner = ["%s:%s = pjit[name=%s jaxpr={ lambda ; %s. let %s in (%s,) }] %s"
                 % ("zz" + res, t, name, ptext, "\n        ".join(body), res, " ".join(a for a, _ in params))]
        body, res = inner, "zz" + res
        head = "custom_jvp_call[\n      call_jaxpr={ lambda ; %s. let\n          %s\n        in (%s,) }\n" \
               "      jvp_jaxpr_fun=<function _memoize.<locals>.memoized at 0x7f5f5c1b1e50>\n" \
               "      num_consts=0\n      symbolic_zeros=False\n    ]" % (ptext, "\n          ".join(body), res)
    else:
        head = "custom_jvp_call[\n      name=%s\n      call_jaxpr={ lambda ; %s. let\n          %s\n        in (%s,) }\n" \
               "      jvp=%s\n      symbolic_zeros=False\n    ]" % (name, ptext, "\n          ".join(body), res, jvpname)
    return head + " " + " ".join(args)


# ---- the rules, in NumPy (f64), as JAX's defjvp computes them ------------------------------------------

def np_logaddexp(x1, x2, two):
    amax = np.maximum(x1, x2)
    delta = x1 - x2
    with np.errstate(invalid="ignore", over="ignore"):
        if two:
            v = amax + np.log1p(np.exp2(-np.abs(delta))) / np.log(2)
        else:
            v = amax + np.log1p(np.exp(-np.abs(delta)))
        return np.where(np.isnan(delta), x1 + x2, v)


def replace_inf(v):
    return np.where(v == np.inf, 0.0, v)


def sinc_primal(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.pi * x
        safe = np.where((x == 0) | (np.abs(x) == np.inf), 1.0, g)
        r = np.where(x == 0, 1.0, np.sin(safe) / safe)
        return np.where(np.abs(x) == np.inf, 0.0, r)


class Case:
    pass


def gen_case(rng, i):
    c = Case()
    c.i = i
    c.kind = rng.choice(["relu", "relu6", "log1mexp", "logit", "xlogx", "softplus", "logaddexp", "logaddexp2",
                         "xlogy", "xlog1py", "softmax", "sinc"])
    c.old = rng.random() < 0.5
    n = rng.randint(1, 6)
    c.shape = (rng.randint(1, 3), rng.randint(1, 4)) if c.kind == "softmax" else (n,)
    size = int(np.prod(c.shape))
    nr = np.random.default_rng(rng.randrange(1 << 30))

    def pts(lo, hi, special=()):
        x = nr.uniform(lo, hi, size)
        for k in range(size):
            if special and rng.random() < 0.35:
                x[k] = rng.choice(special)
        return x.astype(np.float32).reshape(c.shape)

    k = c.kind
    if k == "relu":
        c.xs = [pts(-2, 2, (0.0,))]
    elif k == "relu6":
        c.xs = [pts(-2, 8, (0.0, 6.0))]
    elif k == "log1mexp":
        c.xs = [pts(0.05, 3)]
    elif k == "logit":
        c.xs = [pts(0.05, 0.95)]
    elif k == "xlogx":
        c.xs = [pts(0.1, 3)]
    elif k == "softplus":
        c.xs = [pts(-4, 4, (0.0,))]
    elif k in ("logaddexp", "logaddexp2"):
        a = pts(-3, 3)
        b = pts(-3, 3)
        for j in range(size):
            if rng.random() < 0.3:
                b.flat[j] = a.flat[j]
            elif rng.random() < 0.1:
                a.flat[j] = np.inf
        c.xs = [a, b]
    elif k in ("xlogy", "xlog1py"):
        c.xs = [pts(-2, 2, (0.0,)), pts(0.1, 3)]
    elif k == "softmax":
        c.xs = [pts(-3, 3)]
        c.initial = rng.random() < 0.5
    else:
        c.xs = [pts(-2, 2, (0.0,))]
    c.ts = [nr.uniform(-1, 1, c.shape).astype(np.float32) for _ in c.xs]
    c.w = nr.uniform(-1, 1, c.shape).astype(np.float32)
    c.grad = rng.random() < 0.3
    return c


def jaxpr(c):
    """The def of case c: the jaxpr of its function, as JAX prints it."""
    t = T(c.shape)
    nm = "f%d" % c.i
    ps = [("a", t)] + ([("b", t)] if len(c.xs) == 2 else [])
    header = "def %s = { lambda ; %s. let\n" % (nm, " ".join("%s:%s" % p for p in ps))
    k = c.kind
    eq = []
    if k in ("relu", "relu6", "log1mexp", "logit"):
        name = {"relu": "relu", "relu6": "relu6", "log1mexp": "log1mexp", "logit": "logit"}[k]
        fn = {"relu": body_relu, "relu6": body_relu6, "log1mexp": body_log1mexp, "logit": body_logit}[k]
        body, res = fn(t, "c")
        eq.append("    r:%s = %s" % (t, custom_call(name, [("c", t)], ["a"], t, body, res, c.old, name)))
    elif k == "xlogx":
        inner, ires = body_xlogy(t, "d", "e", False, c.shape)
        call = custom_call("xlogy", [("d", t), ("e", t)], ["c", "c"], t, inner, ires, c.old, "_xlogy_jvp")
        body = ["x1:%s = %s" % (t, call)]
        eq.append("    r:%s = %s" % (t, custom_call("_xlogx", [("c", t)], ["a"], t, body, "x1", c.old, "_xlogx_jvp")))
    elif k == "softplus":
        body, res = body_lae(t, "c", "d", False)
        call = custom_call("logaddexp", [("c", t), ("d", "f32[]")], ["a", "0.0:f32[]"], t, body, res, c.old,
                           "_logaddexp_jvp")
        eq.append("    r:%s = pjit[name=softplus jaxpr={ lambda ; s:%s. let\n        sr:%s = %s\n      in (sr,) }] a"
                  % (t, t, t, call.replace(" a 0.0:f32[]", " s 0.0:f32[]")))
    elif k in ("logaddexp", "logaddexp2"):
        body, res = body_lae(t, "c", "d", k == "logaddexp2")
        eq.append("    r:%s = %s" % (t, custom_call(k, [("c", t), ("d", t)], ["a", "b"], t, body, res, c.old, "_" + k + "_jvp")))
    elif k in ("xlogy", "xlog1py"):
        body, res = body_xlogy(t, "c", "d", k == "xlog1py", c.shape)
        eq.append("    r:%s = %s" % (t, custom_call(k, [("c", t), ("d", t)], ["a", "b"], t, body, res, c.old, "_" + k + "_jvp")))
    elif k == "softmax":
        if c.initial:
            body, res = body_softmax(t, "c", c.shape, "z")
            eq.append("    r:%s = %s" % (t, custom_call("_softmax", [("c", t), ("z", "f32[]")], ["a", "-inf:f32[]"], t,
                                                       body, res, c.old, "_softmax_jvp")))
        else:
            body, res = body_softmax(t, "c", c.shape, None)
            eq.append("    r:%s = %s" % (t, custom_call("_softmax", [("c", t)], ["a"], t, body, res, c.old, "_softmax_jvp")))
    else:  # sinc
        b = t.replace("f32", "bool")
        shp = ", ".join(map(str, c.shape))
        mac = custom_call("_sinc_maclaurin", [("k", t)], ["e"], t,
                          ["l:%s = mul k 0.0:f32[]" % t, "m:%s = add l 1.0:f32[]" % t], "m", c.old, "_sinc_maclaurin_jvp")
        eq += ["    s1:%s = eq a 0.0:f32[]" % b, "    s2:%s = abs a" % t, "    s3:%s = eq s2 inf:f32[]" % b,
               "    e:%s = mul 3.141592653589793:f32[] a" % t, "    s4:%s = or s1 s3" % b,
               "    s5:%s = broadcast_in_dim[shape=(%s,) broadcast_dimensions=() sharding=None] 1.0:f32[]" % (t, shp),
               "    s6:%s = select_n s4 e s5" % t, "    s7:%s = sin s6" % t, "    s8:%s = div s7 s6" % t,
               "    j:%s = %s" % (t, mac), "    s9:%s = select_n s1 s8 j" % t,
               "    s10:%s = broadcast_in_dim[shape=(%s,) broadcast_dimensions=() sharding=None] 0.0:f32[]" % (t, shp),
               "    r:%s = select_n s3 s9 s10" % t]
    return header + "\n".join(eq) + "\n  in (r,) }"


def lit(a):
    """An f32 array literal of a's shape."""
    def rec(v):
        if v.ndim == 0:
            x = float(v)
            return "inf" if x == np.inf else "-inf" if x == -np.inf else repr(x)
        return "[" + ", ".join(rec(e) for e in v) + "]"
    return rec(a.astype(np.float64))


def program(c):
    i = c.i
    nm = "f%d" % i
    lines = [jaxpr(c)]
    names = ["x%d_%d" % (i, k) for k in range(len(c.xs))]
    tans = ["t%d_%d" % (i, k) for k in range(len(c.xs))]
    t = T(c.shape)
    for n, v in zip(names, c.xs):
        lines.append("%s:%s = %s" % (n, t, lit(v)))
    for n, v in zip(tans, c.ts):
        lines.append("%s:%s = %s" % (n, t, lit(v)))
    lines.append("w%d:%s = %s" % (i, t, lit(c.w)))
    lines.append("def j%d = jvp %s" % (i, nm))
    lines.append("def v%d = vjp %s" % (i, nm))
    lines.append("y%d, yd%d = j%d %s %s" % (i, i, i, " ".join(names), " ".join(tans)))
    outs = ", ".join("xb%d_%d" % (i, k) for k in range(len(c.xs)))
    lines.append("y%d_, %s = v%d %s w%d" % (i, outs, i, " ".join(names), i))
    lines.append('save "yd%d.npy" yd%d' % (i, i))
    for k in range(len(c.xs)):
        lines.append('save "xb%d_%d.npy" xb%d_%d' % (i, k, i, k))
    if c.grad:
        ps = ", ".join("p%d" % k for k in range(len(c.xs)))
        lines += ["def loss%d(%s) {" % (i, ps), "  q = %s %s" % (nm, " ".join("p%d" % k for k in range(len(c.xs)))),
                  "  m = mul q w%d" % i, "  s = reduce_sum[axes=(%s)] m" % ", ".join(str(d) for d in range(len(c.shape))),
                  "  return s", "}",
                  "def g%d = grad[argnums=(%s)] loss%d" % (i, ", ".join(str(k) for k in range(len(c.xs))), i),
                  "%s = g%d %s" % (", ".join("gb%d_%d" % (i, k) for k in range(len(c.xs))), i, " ".join(names))]
        for k in range(len(c.xs)):
            lines.append('save "gb%d_%d.npy" gb%d_%d' % (i, k, i, k))
    return lines


def partials(c):
    """The partial derivatives of JAX's rule, per operand (elementwise
    rules), in f64; None for softmax."""
    x = [v.astype(np.float64) for v in c.xs]
    k = c.kind
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if k == "relu":
            return [(x[0] > 0).astype(np.float64)]
        if k == "relu6":
            return [((x[0] > 0) & (x[0] < 6)).astype(np.float64)]
        if k == "log1mexp":
            return [1 / np.expm1(x[0])]
        if k == "logit":
            return [1 / (x[0] * (1 - x[0]))]
        if k == "xlogx":
            return [np.log(x[0]) + 1]
        if k == "softplus":
            y = np_logaddexp(x[0], 0.0, False)
            return [np.exp(replace_inf(x[0]) - replace_inf(y))]
        if k in ("logaddexp", "logaddexp2"):
            two = k == "logaddexp2"
            y = np_logaddexp(x[0], x[1], two)
            e = np.exp2 if two else np.exp
            return [e(replace_inf(x[0]) - replace_inf(y)), e(replace_inf(x[1]) - replace_inf(y))]
        if k == "xlogy":
            return [np.log(x[1]), x[0] / x[1]]
        if k == "xlog1py":
            return [np.log1p(x[1]), x[0] / (1 + x[1])]
        if k == "sinc":
            g = np.pi * x[0]
            d = np.where(x[0] == 0, 0.0, (np.cos(g) * g - np.sin(g)) / np.where(g == 0, 1, g) ** 2 * np.pi)
            return [d]
    return None


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def model(c):
    """NumPy's jvp tangent (for c.ts) and vjp cotangents (for c.w)."""
    if c.kind == "softmax":
        y = softmax(c.xs[0].astype(np.float64))
        t, w = c.ts[0].astype(np.float64), c.w.astype(np.float64)
        return y * (t - (y * t).sum(axis=1, keepdims=True)), [y * (w - (y * w).sum(axis=1, keepdims=True))]
    d = partials(c)
    jv = sum(dk * tk.astype(np.float64) for dk, tk in zip(d, c.ts))
    return jv, [dk * c.w.astype(np.float64) for dk in d]


def primal(c, xs):
    k = c.kind
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if k == "relu":
            return np.maximum(xs[0], 0)
        if k == "relu6":
            return np.minimum(np.maximum(xs[0], 0), 6)
        if k == "log1mexp":
            return np.log(-np.expm1(-xs[0]))
        if k == "logit":
            return np.log(xs[0] / (1 - xs[0]))
        if k == "xlogx":
            return xs[0] * np.log(xs[0])
        if k == "softplus":
            return np.logaddexp(xs[0], 0)
        if k == "logaddexp":
            return np.logaddexp(xs[0], xs[1])
        if k == "logaddexp2":
            return np.logaddexp2(xs[0], xs[1])
        if k == "xlogy":
            return xs[0] * np.log(xs[1])
        if k == "xlog1py":
            return xs[0] * np.log1p(xs[1])
        if k == "softmax":
            return softmax(xs[0])
        return sinc_primal(xs[0])


def smooth(c):
    """Where the primal is differentiable in the usual sense (the finite
    differences check the NumPy rule there): not at relu's kinks, ties of
    logaddexp, infinities, or x = 0 of sinc (the rule's series)."""
    x = [v.astype(np.float64) for v in c.xs]
    m = np.ones(c.shape, bool)
    if c.kind in ("relu", "softplus"):
        m &= np.abs(x[0]) > 1e-3
    if c.kind == "relu6":
        m &= (np.abs(x[0]) > 1e-3) & (np.abs(x[0] - 6) > 1e-3)
    if c.kind in ("logaddexp", "logaddexp2"):
        m &= np.isfinite(x[0]) & (np.abs(x[0] - x[1]) > 1e-3)
    if c.kind in ("xlogy", "xlog1py"):
        m &= x[0] != 0
    if c.kind == "sinc":
        m &= np.abs(x[0]) > 1e-3
    return m


def fd_check(c, jv):
    """The NumPy rule against central differences of the NumPy primal, where
    smooth; a message or None."""
    h = 1e-6
    xs = [v.astype(np.float64) for v in c.xs]
    if not all(np.isfinite(v).all() for v in xs):
        return None
    hi = primal(c, [v + h * t.astype(np.float64) for v, t in zip(xs, c.ts)])
    lo = primal(c, [v - h * t.astype(np.float64) for v, t in zip(xs, c.ts)])
    fd = (hi - lo) / (2 * h)
    m = smooth(c) if c.kind != "softmax" else np.ones(c.shape, bool)
    if c.kind == "softmax":
        m = np.ones(c.shape, bool)
    bad = m & ~np.isclose(fd, jv, rtol=1e-5, atol=1e-6)
    return None if not bad.any() else "the NumPy rule %r differs from finite differences %r" % (jv[bad], fd[bad])


def close(got, want, atol=ATOL):
    got = got.astype(np.float64)
    both_inf = np.isinf(got) & np.isinf(want) & (np.sign(got) == np.sign(want))
    both_nan = np.isnan(got) & np.isnan(want)
    with np.errstate(invalid="ignore"):
        ok = both_inf | both_nan | (np.abs(got - want) <= atol + RTOL * np.abs(want))
    return ok.all()


def judge(c, d):
    jv, vj = model(c)
    # sinc's derivative near 0 cancels in f32 ((cos g g - sin g) / g^2): an
    # absolute tolerance there, far below the pi a wrong rule at 0 gives
    atol = 5e-4 if c.kind == "sinc" else ATOL
    msgs = []
    m = fd_check(c, jv)
    if m:
        msgs.append(m)
    got = np.load(os.path.join(d, "yd%d.npy" % c.i))
    if got.shape != c.shape or not close(got, jv, atol):
        msgs.append("jvp %r, JAX's rule %r" % (got, jv))
    for k in range(len(c.xs)):
        got = np.load(os.path.join(d, "xb%d_%d.npy" % (c.i, k)))
        if got.shape != c.shape or not close(got, vj[k], atol):
            msgs.append("vjp cotangent %d %r, JAX's rule %r" % (k, got, vj[k]))
        if c.grad:
            got = np.load(os.path.join(d, "gb%d_%d.npy" % (c.i, k)))
            if not close(got, vj[k], atol):
                msgs.append("grad %d %r, JAX's rule %r" % (k, got, vj[k]))
    return "; ".join(msgs) or None


def run_batch(shmapi, cases):
    with tempfile.TemporaryDirectory() as d:
        lines = []
        for c in cases:
            lines += program(c)
        with open(os.path.join(d, "prog.shm"), "w") as f:
            f.write("\n".join(lines) + "\n")
        p = subprocess.run([shmapi, "prog.shm"], cwd=d, capture_output=True, text=True,
                           env=dict(os.environ, LC_ALL="C"))
        if p.returncode or p.stderr:
            return [(c, "shmapi failed or warned:\n%s" % p.stderr[:2000]) for c in cases[:1]]
        return [(c, m) for c in cases for m in [judge(c, d)] if m]


def main():
    shmapi = os.path.abspath(shmapi_under_test())
    rng = random.Random(SEED)
    cases = [gen_case(rng, i) for i in range(N)]
    failures = []
    for b in range(0, N, BATCH):
        failures += run_batch(shmapi, cases[b:b + BATCH])
    for c, m in failures[:5]:
        print("case %d (%s, %s): %s" % (c.i, c.kind, "old form" if c.old else "name=", m))
        print(jaxpr(c))
    kinds = sorted(set(c.kind for c in cases))
    print("%d cases (%s), %d failed" % (N, ", ".join("%s %d" % (k, sum(c.kind == k for c in cases)) for k in kinds),
                                       len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
