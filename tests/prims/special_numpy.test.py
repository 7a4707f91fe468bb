#!/usr/bin/python3
# timeout: 180
"""The special functions (igamma, igammac, igamma_grad_a, random_gamma_grad,
zeta, bessel_i0e, bessel_i1e, regularized_incomplete_beta) and their
derivatives on random operands, against float64 references written here
from the mathematics (independent algorithms, not shmapi's):

  igamma, igammac     the power series of P below x = a + 1, Legendre's
                      continued fraction for Q above (Lentz's method)
  igamma_grad_a       a Richardson-extrapolated central difference of that
                      P in a
  random_gamma_grad   -(dP/da) / (dP/dx), dP/dx = exp(-x) x^(a-1) / Gamma(a)
  zeta                the sum of the first 2000 terms, the tail integral and
                      two Euler-Maclaurin corrections
  bessel_i0e, _i1e    (1/pi) integral_0^pi exp(x (cos t - 1)) cos(n t) dt by
                      the trapezoidal rule (exact to double precision for a
                      smooth periodic integrand), and NumPy's i0
  regularized_incomplete_beta
                      for whole a and b the binomial sum
                      sum_{j >= a} C(a+b-1, j) x^j (1-x)^(a+b-1-j); otherwise
                      the hypergeometric series of I_x(a, b) below
                      x = (a + 1) / (a + b + 2), the symmetry
                      I_x(a, b) = 1 - I_(1-x)(b, a) above

f32 results must be within 2 ulps of the reference, f64 ones within a
relative 1e-9 (the references' own error: the difference in a, the sums);
the special values (NaN outside the domain, the limits at 0, 1 and
infinity, zeta's poles) exactly.  Operands are scalars or arrays of random
shapes, f32 or f64, some broadcast.  Then the JVPs (jvp f at random
points) against the derivatives JAX's rules give, computed from the
references: igamma's in a and x, igammac's, bessel_i0e's, bessel_i1e's
(and its 1/2 at 0), regularized_incomplete_beta's in x.
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
NP = {"f32": np.float32, "f64": np.float64}
NAN, INF = float("nan"), float("inf")


# ---- references in float64 ------------------------------------------------------------

def ref_digamma(a):
    """psi(a) for a > 0: the recurrence up to 20, then the asymptotic series."""
    acc = 0.0
    while a < 20:
        acc -= 1 / a
        a += 1
    r = 1 / (a * a)
    return acc + math.log(a) - 0.5 / a - r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r / 132))))


def series_terms(a, x):
    """The terms x^n / (a (a+1) ... (a+n)) of P's series (all positive)
    and the sums H_n = sum_{j<=n} 1/(a+j), their logarithmic derivatives."""
    t, h, ts, hs = 1.0 / a, 1.0 / a, [], []
    n = a
    for _ in range(100000):
        ts.append(t)
        hs.append(h)
        n += 1
        t *= x / n
        h += 1 / n
        if t < 1e-18 * ts[0] and n > x:
            break
    return ts, hs


def ref_p_series(a, x):
    """P(a, x) by its power series."""
    if x <= 0:
        return 0.0
    ts, _ = series_terms(a, x)
    return math.fsum(ts) * math.exp(-x + a * math.log(x) - math.lgamma(a))


def ref_q_cf(a, x):
    """Q(a, x) by Legendre's continued fraction (modified Lentz)."""
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * q_cf_fraction(a, x)


def q_cf_fraction(a, x):
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return h


def ref_p(a, x):
    return ref_p_series(a, x) if x < a + 1 else 1.0 - ref_q_cf(a, x)


def ref_q(a, x):
    return 1.0 - ref_p_series(a, x) if x < a + 1 else ref_q_cf(a, x)


def ref_dp_da(a, x):
    """dP/da as P times d(log P)/da below a + 1: log x - psi(a) plus the
    series' own logarithmic derivative, -sum t_n H_n / sum t_n (exact);
    above, -Q times d(log Q)/da, the continued fraction's logarithmic
    derivative by Richardson-extrapolated central differences."""
    dlog = math.log(x) - ref_digamma(a)
    if x < a + 1:
        ts, hs = series_terms(a, x)
        return ref_p_series(a, x) * (dlog - math.fsum(t * h for t, h in zip(ts, hs)) / math.fsum(ts))
    f = lambda u: math.log(q_cf_fraction(u, x))  # noqa: E731
    h = 1e-3 * a
    d1 = (f(a + h) - f(a - h)) / (2 * h)
    d2 = (f(a + h / 2) - f(a - h / 2)) / h
    return -ref_q_cf(a, x) * (dlog + (4 * d2 - d1) / 3)


def jax_f32_disabled(prim, a, x):
    """Where exp(a log x - x - lgamma a) underflows in f32 (below
    -log(FLT_MAX)), JAX's f32 algorithm leaves the series at its first term:
    igamma_grad_a is then ax (log x - psi(a + 1)) / a, random_gamma_grad
    -(log x - psi(a + 1)) x / a (None: not that case)."""
    if x <= 0 or a <= 0 or (x > 1 and x > a):
        return None
    e = a * math.log(x) - x - math.lgamma(a)
    if e >= -math.log(float(np.finfo(np.float32).max)):
        return None
    dl = math.log(x) - ref_digamma(a + 1)
    return math.exp(e) * dl / a if prim == "igamma_grad_a" else -dl * x / a


def ref_dp_dx(a, x):
    return math.exp(-x + (a - 1) * math.log(x) - math.lgamma(a))


def ref_zeta(x, q):
    n = 2000
    k = np.arange(n, dtype=np.float64) + q
    s = float(np.sum(k ** -x))
    w = n + q
    return s + w ** (1 - x) / (x - 1) + 0.5 * w ** -x + x * w ** (-x - 1) / 12 \
        - x * (x + 1) * (x + 2) * w ** (-x - 3) / 720


T = np.linspace(0, math.pi, 4001)


def ref_ie(x, nu):
    """exp(-|x|) I_nu(x) by the trapezoidal rule on (1/pi) int_0^pi."""
    ax = abs(x)
    f = np.exp(ax * (np.cos(T) - 1)) * np.cos(nu * T)
    v = float((np.sum(f) - (f[0] + f[-1]) / 2) * (T[1] - T[0]) / math.pi)
    return -v if nu and x < 0 else v


def ref_betainc(a, b, x):
    if a == int(a) and b == int(b):
        n = int(a + b - 1)
        return math.fsum(math.comb(n, j) * x ** j * (1 - x) ** (n - j) for j in range(int(a), n + 1))
    if x > (a + 1) / (a + b + 2):
        return 1 - ref_betainc(b, a, 1 - x)
    lbeta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    term, s = 1.0, 1.0 / a
    for n in range(1, 100000):
        term *= (n - b) * x / n
        s += term / (a + n)
        if abs(term) < 1e-18:
            break
    return math.exp(a * math.log(x) - lbeta) * s


def ref_dbetainc_dx(a, b, x):
    lbeta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    return math.exp((b - 1) * math.log1p(-x) + (a - 1) * math.log(x) - lbeta)


# ---- random operands --------------------------------------------------------------------

def rand_pos(rng, lo, hi, shape):
    return np.exp(rng.uniform(math.log(lo), math.log(hi), shape))


def operands(rng, prim):
    """Random operands (float64) and the reference function of one case."""
    if prim in ("igamma", "igammac", "igamma_grad_a", "random_gamma_grad"):
        a = rand_pos(rng, 0.05, 60, None)
        x = float(a * rng.uniform(0.2, 2.0)) if rng.random() < 0.7 else float(rand_pos(rng, 0.01, 80, None))
        return [float(a), x]
    if prim == "zeta":
        return [float(rng.uniform(1.1, 12)), float(rand_pos(rng, 0.05, 50, None))]
    if prim in ("bessel_i0e", "bessel_i1e"):
        return [float(rng.choice([-1, 1]) * rand_pos(rng, 1e-3, 500, None))]
    if rng.random() < 0.5:
        return [float(rng.integers(1, 30)), float(rng.integers(1, 30)), float(rng.uniform(0.01, 0.99))]
    return [float(rand_pos(rng, 0.1, 10, None)), float(rand_pos(rng, 0.1, 10, None)), float(rng.uniform(0.01, 0.99))]


REFS = {
    "igamma": ref_p, "igammac": ref_q, "igamma_grad_a": ref_dp_da,
    "random_gamma_grad": lambda a, x: -ref_dp_da(a, x) / ref_dp_dx(a, x),
    "zeta": ref_zeta, "bessel_i0e": lambda x: ref_ie(x, 0), "bessel_i1e": lambda x: ref_ie(x, 1),
    "regularized_incomplete_beta": ref_betainc,
}
PRIMS = list(REFS)

# Special values: operands and the result JAX's algorithm gives.
SPECIAL = [
    ("igamma", (-1.0, 2.0), NAN), ("igamma", (2.0, -1.0), NAN), ("igamma", (0.0, 0.0), NAN),
    ("igamma", (INF, INF), NAN), ("igamma", (NAN, 1.0), NAN), ("igamma", (2.0, 0.0), 0.0),
    ("igamma", (INF, 3.0), 0.0), ("igamma", (2.0, INF), 1.0), ("igamma", (1.0, 1.0), 1 - math.exp(-1)),
    ("igammac", (0.0, 2.0), 0.0), ("igammac", (INF, 3.0), 1.0), ("igammac", (2.0, INF), 0.0),
    ("igammac", (2.0, 0.0), 1.0), ("igammac", (-1.0, 1.0), NAN), ("igammac", (0.0, 0.5), 0.0),
    ("igamma", (0.0, 0.5), NAN),  # JAX's series divides by a (0 / 0); its selects leave that
    ("igamma_grad_a", (0.0, 1.0), NAN), ("igamma_grad_a", (2.0, 0.0), 0.0), ("igamma_grad_a", (2.0, -1.0), NAN),
    ("random_gamma_grad", (-2.0, 1.0), NAN), ("random_gamma_grad", (2.0, 0.0), 0.0),
    ("zeta", (1.0, 2.0), INF), ("zeta", (0.5, 2.0), NAN), ("zeta", (2.5, -1.5), NAN), ("zeta", (2.0, -2.0), INF),
    ("zeta", (3.0, 0.0), NAN), ("zeta", (1.0, -3.0), INF), ("zeta", (2.0, 1.0), math.pi ** 2 / 6),
    ("zeta", (4.0, 1.0), math.pi ** 4 / 90), ("zeta", (2.0, 0.5), math.pi ** 2 / 2),
    ("bessel_i0e", (0.0,), 1.0), ("bessel_i1e", (0.0,), 0.0), ("bessel_i0e", (INF,), 0.0),
    ("bessel_i1e", (-INF,), 0.0), ("bessel_i0e", (NAN,), NAN),
    ("regularized_incomplete_beta", (2.0, 3.0, -0.1), NAN), ("regularized_incomplete_beta", (2.0, 3.0, 1.5), NAN),
    ("regularized_incomplete_beta", (-1.0, 3.0, 0.5), NAN), ("regularized_incomplete_beta", (0.0, 0.0, 0.5), NAN),
    ("regularized_incomplete_beta", (0.0, 3.0, 0.5), 1.0), ("regularized_incomplete_beta", (2.0, 0.0, 0.5), 0.0),
    ("regularized_incomplete_beta", (2.0, 3.0, 0.0), 0.0), ("regularized_incomplete_beta", (2.0, 3.0, 1.0), 1.0),
    ("regularized_incomplete_beta", (0.5, 0.5, 0.5), 0.5),
]


def build(rng, tmp):
    """One program: each case applies a primitive to operands of a random
    shape (the same random values repeated over the shape, some scalars
    broadcast) and saves the result."""
    lines, checks = [], []
    for i in range(CASES):
        prim = PRIMS[i % len(PRIMS)]
        dt = str(rng.choice(["f32", "f64"]))
        shape = tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3))))
        size = int(np.prod(shape, dtype=np.int64))
        vals = [operands(rng, prim) for _ in range(size)]
        names = []
        for k in range(len(vals[0])):
            arr = np.array([v[k] for v in vals], NP[dt]).reshape(shape)
            if shape and k == 0 and len(vals[0]) > 1 and rng.random() < 0.2:
                arr = arr.ravel()[:1].reshape(())
                for v in vals:
                    v[k] = float(arr)
            np.save(os.path.join(tmp, "o%d_%d.npy" % (i, k)), arr)
            lines.append('o%d_%d = load "o%d_%d.npy"' % (i, k, i, k))
            names.append("o%d_%d" % (i, k))
        lines += ["r%d = %s %s" % (i, prim, " ".join(names)), 'save "r%d.npy" r%d' % (i, i)]
        checks.append((i, prim, dt, shape, vals))
    for j, (prim, ops, _) in enumerate(SPECIAL):
        lits = " ".join("%s:f32[]" % ("nan" if math.isnan(v) else "inf" if v == INF else "-inf" if v == -INF else repr(v))
                        for v in ops)
        lines += ["s%d = %s %s" % (j, prim, lits), 'save "s%d.npy" s%d' % (j, j)]
    return lines, checks


def ulps32(got, want):
    if math.isnan(want) or math.isinf(want):
        return 0 if (math.isnan(got) and math.isnan(want)) or got == want else INF
    w = np.float32(want)
    ulp = float(np.spacing(np.abs(w))) if w != 0 else float(np.spacing(np.float32(0)))
    return abs(got - want) / max(ulp, 1e-45)


def close(got, want, dt):
    if dt == "f32":
        return ulps32(got, want) <= 2 or (abs(want) < 1e-30 and abs(got - want) < 1e-37)
    if math.isnan(want):
        return math.isnan(got)
    return abs(got - want) <= 1e-9 * abs(want) + 1e-300


# ---- derivatives ---------------------------------------------------------------------------

JVPS = [("igamma", 2), ("igammac", 2), ("bessel_i0e", 1), ("bessel_i1e", 1), ("regularized_incomplete_beta", 3)]


def jvp_lines(rng):
    lines, checks = [], []
    for prim, n in JVPS[:-1]:
        params = ["p%d" % k for k in range(n)]
        lines += ["def j_%s(%s) {" % (prim, ", ".join(params)), "  r = %s %s" % (prim, " ".join(params)),
                  "  return r", "}", "def jj_%s = jvp j_%s" % (prim, prim)]
    for c in range(60):
        prim, n = JVPS[c % len(JVPS)]
        ops = operands(rng, prim)
        if prim == "bessel_i1e" and c % 10 == 3:
            ops = [0.0]
        if prim == "regularized_incomplete_beta":
            # a and b are constants: JAX has no derivative in them
            lines += ["def jb%d(p) {" % c, "  r = %s %r:f64[] %r:f64[] p" % (prim, ops[0], ops[1]), "  return r", "}",
                      "def jjb%d = jvp jb%d" % (c, c), "jv%d_2, jt%d_2 = jjb%d %r:f64[] 1.0:f64[]" % (c, c, c, ops[2]),
                      'save "jt%d_2.npy" jt%d_2' % (c, c)]
            checks.append((c, 2, prim, ops))
            continue
        for k in range(n):
            tans = ["%s:f64[]" % ("1.0" if m == k else "0.0") for m in range(n)]
            args = " ".join("%r:f64[]" % v for v in ops)
            lines += ["jv%d_%d, jt%d_%d = jj_%s %s %s" % (c, k, c, k, prim, args, " ".join(tans)),
                      'save "jt%d_%d.npy" jt%d_%d' % (c, k, c, k)]
            checks.append((c, k, prim, ops))
    return lines, checks


def want_jvp(prim, k, ops):
    if prim in ("igamma", "igammac"):
        a, x = ops
        d = ref_dp_da(a, x) if k == 0 else ref_dp_dx(a, x)
        return -d if prim == "igammac" else d
    if prim == "bessel_i0e":
        x = ops[0]
        return ref_ie(x, 1) - math.copysign(1, x) * ref_ie(x, 0)
    if prim == "bessel_i1e":
        x = ops[0]
        if abs(x) <= 2.0 ** -52:
            return 0.5
        return ref_ie(x, 0) - ref_ie(x, 1) * (math.copysign(1, x) + 1 / x)
    return ref_dbetainc_dx(*ops)


def check(tmp, checks, jchecks):
    bad = []
    load = lambda n: np.load(os.path.join(tmp, n + ".npy"))  # noqa: E731
    for i, prim, dt, shape, vals in checks:
        got = load("r%d" % i)
        if got.dtype != NP[dt] or got.shape != shape:
            bad.append("%s case %d: dtype %s shape %s, not %s %s" % (prim, i, got.dtype, got.shape, dt, shape))
            continue
        for g, v in zip(got.ravel().tolist(), vals):
            vv = [float(NP[dt](u)) for u in v]
            want = jax_f32_disabled(prim, *vv) if dt == "f32" and prim in ("igamma_grad_a", "random_gamma_grad") \
                else None
            want = REFS[prim](*vv) if want is None else want
            if not close(g, want, dt):
                bad.append("%s%r as %s is %r, not %r" % (prim, tuple(vv), dt, g, want))
    for j, (prim, ops, want) in enumerate(SPECIAL):
        got = float(load("s%d" % j))
        ok = math.isnan(got) if math.isnan(want) else ulps32(got, want) <= 1
        if not ok:
            bad.append("%s%r is %r, not %r" % (prim, ops, got, want))
    for c, k, prim, ops in jchecks:
        got, want = float(load("jt%d_%d" % (c, k))), want_jvp(prim, k, ops)
        if not abs(got - want) <= 1e-8 * abs(want) + 1e-14:
            bad.append("the derivative of %s%r in operand %d is %r, not %r" % (prim, tuple(ops), k, got, want))
    return bad


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        lines, checks = build(rng, tmp)
        jl, jchecks = jvp_lines(rng)
        if run_lines(shmapi, tmp, lines + jl) is None:
            return 1
        bad = check(tmp, checks, jchecks)
    n = sum(int(np.prod(s, dtype=np.int64)) for _, _, _, s, _ in checks)
    for m in bad[:10]:
        print(m)
    print("seed %d: %d cases (%d elements), %d special values, %d derivatives, %d problems"
          % (SEED, len(checks), n, len(SPECIAL), len(jchecks), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
