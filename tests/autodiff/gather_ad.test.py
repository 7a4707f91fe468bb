#!/usr/bin/python3
# timeout: 300
"""Derivatives of gather and the scatter family on random cases (the
generator of tests/prims/gather_random.test.py, in f64 with distinct
values, the updates' apart from the operand's, so that no two tie and no
two differ by less than the step).

For each case f(x, u) = op x indices u (gather: f(x)), with a random
tangent (xd, ud) and cotangent w:

  * jvp against central finite differences of the NumPy model:
    rd = (f(x + h xd, u + h ud) - f(x - h xd, u - h ud)) / 2h, elementwise
    (a window gather fills is 0 in the tangent, as JAX's rule makes it);
  * vjp against jvp, the adjoint identity <xb, xd> + <ub, ud> = <w, rd>,
    which exercises the transposes (gather <-> scatter-add, scatter-sub,
    scatter, scatter-mul) through the linearized JVPs.

scatter-mul gets a tangent for its operand only (JAX differentiates its
updates only under unique_indices=True).  PROMISE_IN_BOUNDS is left out:
there JAX's gather clamps and the scatter that is its transpose drops,
so, as JAX documents, gradients are wrong for indices out of bounds.
SHM_GATHER_AD_SEED / SHM_GATHER_AD_COUNT: seed (default 77) and cases
(default 600).
"""

import importlib.util
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from _numpy import np  # noqa: E402

spec = importlib.util.spec_from_file_location("gather_random", os.path.join(HERE, "..", "prims", "gather_random.test.py"))
gr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gr)

SHMAPI = os.environ.get("SHMAPI", "build/shmapi")
SEED = int(os.environ.get("SHM_GATHER_AD_SEED", "77"))
COUNT = int(os.environ.get("SHM_GATHER_AD_COUNT", "600"))
BATCH = 100
H = 1e-6


def distinct(rng, shape):
    n = int(np.prod(shape)) if shape else 1
    vals = rng.sample(range(1, 20 * n + 40), n)
    return np.array([v / 8.0 * rng.choice([-1, 1]) for v in vals], np.float64).reshape(shape)


def make(rng, k):
    while True:
        c = gr.Case(rng, k)
        if c.mode != "PROMISE_IN_BOUNDS" and not c.split and c.op != "apply":   # scatter_apply: no derivative
            break
    c.dt = "f64"
    c.fill = None
    c.x = distinct(rng, c.oshape)
    c.xd = np.array([rng.uniform(-1, 1) for _ in range(c.x.size)]).reshape(c.x.shape)
    c.has_u = c.op not in ("gather",)
    c.tan_u = c.op not in ("gather", "scatter-mul")
    if c.has_u:
        c.u = distinct(rng, c.big) + 1 / 32     # never equal to an element of x: no ties
        c.ud = np.array([rng.uniform(-1, 1) for _ in range(c.u.size)]).reshape(c.u.shape)
    return c


def program(c, d):
    k = c.k
    L = [f'x{k} = load "{d}/x{k}.npy"', f'ix{k} = load "{d}/ix{k}.npy"', f'xd{k} = load "{d}/xd{k}.npy"']
    if c.has_u:
        L.append(f'u{k} = load "{d}/u{k}.npy"')
    if c.tan_u:
        L.append(f'ud{k} = load "{d}/ud{k}.npy"')
    L.append(f'w{k} = load "{d}/w{k}.npy"')
    ps = f"a:f64{list(c.x.shape)}".replace(" ", "")
    if c.tan_u:
        ps += f", c:f64{list(c.u.shape)}".replace(" ", "")
    ucl = "c" if c.tan_u else f"u{k}"
    L += [f"def f{k}({ps}) {{", f"  r = {c.eqn('a', f'ix{k}', ucl)}", "  return r", "}",
          f"def f{k}_jvp = jvp f{k}", f"def f{k}_vjp = vjp f{k}"]
    if c.tan_u:
        L += [f"r{k}, rd{k} = f{k}_jvp x{k} u{k} xd{k} ud{k}", f"q{k}, xb{k}, ub{k} = f{k}_vjp x{k} u{k} w{k}",
              f'save "{d}/ub{k}.npy" ub{k}']
    else:
        L += [f"r{k}, rd{k} = f{k}_jvp x{k} xd{k}", f"q{k}, xb{k} = f{k}_vjp x{k} w{k}"]
    L += [f'save "{d}/rd{k}.npy" rd{k}', f'save "{d}/xb{k}.npy" xb{k}']
    return L


def model_at(c, t):
    x0, u0 = c.x, getattr(c, "u", None)
    c.x = x0 + t * c.xd
    if c.tan_u:
        c.u = u0 + t * c.ud
    r = c.model()
    c.x, c.u = x0, u0
    return r


def check(c, d):
    rd = np.load(f"{d}/rd{c.k}.npy")
    fd = (model_at(c, H) - model_at(c, -H)) / (2 * H)
    fd = np.where(np.isnan(fd), 0.0, fd)
    if not np.allclose(rd, fd, rtol=1e-5, atol=1e-6):
        return f"jvp\n{rd!r}\nfinite differences\n{fd!r}"
    xb = np.load(f"{d}/xb{c.k}.npy")
    lhs = float(np.sum(xb * c.xd))
    if c.tan_u:
        lhs += float(np.sum(np.load(f"{d}/ub{c.k}.npy") * c.ud))
    rhs = float(np.sum(c.w * rd))
    if abs(lhs - rhs) > 1e-9 * (1 + abs(lhs) + abs(rhs)):
        return f"adjoint: <vjp, v> = {lhs!r} but <w, jvp> = {rhs!r}"
    return None


def main():
    rng = random.Random(SEED)
    cases = [make(rng, k) for k in range(COUNT)]
    bad = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(0, COUNT, BATCH):
            batch = cases[i:i + BATCH]
            lines = []
            for c in batch:
                r = c.model()
                c.w = np.array([rng.uniform(-1, 1) for _ in range(r.size)]).reshape(r.shape)
                for name in ("x", "ix", "xd", "w") + (("u",) if c.has_u else ()) + (("ud",) if c.tan_u else ()):
                    np.save(f"{d}/{name}{c.k}.npy", getattr(c, name))
                lines += program(c, d)
            with open(f"{d}/b.shm", "w") as f:
                f.write("\n".join(lines) + "\n")
            p = subprocess.run([SHMAPI, f"{d}/b.shm"], capture_output=True, text=True, timeout=250)
            if p.returncode != 0:
                bad.append((batch[0], "shmapi failed: " + p.stderr[:3000]))
                continue
            for c in batch:
                why = check(c, d)
                if why:
                    bad.append((c, why))
    for c, why in bad[:4]:
        print(f"case {c.k} ({c.op}, mode {c.mode}):\n" + "\n".join(program(c, "DIR")))
        print(f"x = {c.x!r}\nix = {c.ix!r}" + (f"\nu = {c.u!r}" if c.has_u else "") + "\n" + why)
    print(f"{COUNT - len(bad)}/{COUNT} cases agree (seed {SEED})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
