#!/usr/bin/python3
# timeout: 300
"""Buffer donation (src/run/eval.c): an elementwise op, reshape, squeeze or
expand_dims may write its result into an operand that dies at that
statement.  It must never change a value that is still live.

Random straight-line programs of elementwise ops (binary with another value
or a literal, unary), reshape/expand_dims/squeeze round trips, in f32, f64
and i32, where each operand is drawn from every value computed so far: some
die at their first use (and are donated), some are read again later (and
must be left alone), some are read twice by one op (mul d d).  Each program
runs in three places: at the top level of a script (whose values die as it
goes), in a def, and in a shard_map body over {i: 2} whose blocks are big
enough to be donated, mixing its varying blocks with an invariant
argument and a closed-over top-level value.  The printed slices and sums of
several values, early ones included, are compared with NumPy.  A share of
the programs also run with --max-memory, and under the debugger (which
turns donation off) to the same output.

Run by tests/run.py with SHMAPI set; SHM_DONATION_SEED / SHM_DONATION_COUNT
change the seed (default 1923) and the number of programs (default 240).
"""

import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

N = 24576          # 96 KiB of f32 per value: past the small-block slabs (eval.c)
DT = {"f32": np.float32, "f64": np.float64, "i32": np.int32}
BIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
UNF = {"neg": np.negative, "abs": np.abs, "tanh": np.tanh, "sin": np.sin, "floor": np.floor}
UNI = {"neg": np.negative, "abs": np.abs}


def lit(dt, v):
    return f"{v}.0" if dt != "i32" else str(v)


class Prog:
    """One random chain; body() gives its equations over a starting value
    named x and an invariant w, model() the NumPy values."""

    def __init__(self, rng, dt):
        self.dt = dt
        self.eqs = []           # (out, kind, args)
        names = ["x", "w"]
        uses = {}
        for k in range(rng.randint(4, 14)):
            out = f"v{k}"
            r = rng.random()
            a = rng.choice(names[-3:] if rng.random() < 0.7 else names)
            if r < 0.45:
                op = rng.choice(list(BIN))
                if rng.random() < 0.3:
                    b = ("lit", rng.randint(1, 3))
                elif rng.random() < 0.15:
                    b = a                            # the same operand twice
                else:
                    b = rng.choice(names)
                self.eqs.append((out, "bin", (op, a, b)))
            elif r < 0.8:
                ops = UNF if dt != "i32" else UNI
                self.eqs.append((out, "un", (rng.choice(list(ops)), a)))
            else:
                self.eqs.append((out, rng.choice(["reshape", "expand"]), (a,)))
            names.append(out)
        # print the last value and two others (maybe long dead in between)
        self.shown = [names[-1]] + rng.sample(names[2:-1], min(2, len(names) - 3))

    def body(self, pre=""):
        n, dt = self.n, self.dt
        lines = []
        for out, kind, args in self.eqs:
            if kind == "bin":
                op, a, b = args
                bs = lit(dt, b[1]) if isinstance(b, tuple) else pre + b
                lines.append(f"{pre}{out} = {op} {pre}{a} {bs}")
            elif kind == "un":
                lines.append(f"{pre}{out} = {args[0]} {pre}{args[1]}")
            elif kind == "reshape":
                lines.append(f"{pre}{out}_2 = reshape[new_sizes=({n // 4}, 4)] {pre}{args[0]}")
                lines.append(f"{pre}{out} = reshape[new_sizes=({n},)] {pre}{out}_2")
            else:
                lines.append(f"{pre}{out}_2 = expand_dims[dimensions=(0,)] {pre}{args[0]}")
                lines.append(f"{pre}{out} = squeeze[dimensions=(0,)] {pre}{out}_2")
        return lines

    def model(self, x, w):
        T = DT[self.dt]
        env = {"x": x, "w": w}
        with np.errstate(all="ignore"):
            for out, kind, args in self.eqs:
                if kind == "bin":
                    op, a, b = args
                    bv = T(b[1]) if isinstance(b, tuple) else env[b]
                    env[out] = BIN[op](env[a], bv).astype(T)
                elif kind == "un":
                    env[out] = (UNF if self.dt != "i32" else UNI)[args[0]](env[args[1]]).astype(T)
                else:
                    env[out] = env[args[0]].copy()
        return [env[s] for s in self.shown]


def inputs(dt, n):
    T = DT[dt]
    if dt == "i32":
        return np.arange(n, dtype=T) % 7 - 3, (np.arange(n, dtype=T) % 5) + 1
    x = (np.arange(n, dtype=T) * T(0.001) - T(1.0)).astype(T)
    return x, (x * T(0.5) + T(0.25)).astype(T)


def prelude(dt, n):
    if dt == "i32":
        return [f"x0 = iota[dtype=i32, shape=({n},), dimension=0]", "x7 = rem x0 7", "x = sub x7 3",
                "w5 = rem x0 5", "w = add w5 1"]
    return [f"x0 = iota[dtype={dt}, shape=({n},), dimension=0]", "x1 = mul x0 0.001", "x = sub x1 1.0",
            "wa = mul x 0.5", "w = add wa 0.25"]


def shows(p, names):
    out = []
    for k, s in enumerate(names):
        out.append(f"h{k} = slice[start_indices=(0,), limit_indices=(5,)] {s}")
        out.append(f"t{k} = slice[start_indices=({p.n - 3},), limit_indices=({p.n},)] {s}")
        out.append(f"print h{k}, t{k}")
    return out


def program(p, where):
    dt = p.dt
    if where == "top":
        p.n = N
        return "\n".join(prelude(dt, N) + p.body() + shows(p, p.shown)) + "\n"
    if where == "def":
        p.n = N
        res = ", ".join(p.shown)
        lines = prelude(dt, N) + [f"def f(x, w) {{"] + ["  " + ln for ln in p.body()]
        lines += [f"  return {res}", "}", f"{res} = f x w"]
        return "\n".join(lines + shows(p, p.shown)) + "\n"
    # shard_map: x split over i (blocks of N), w invariant, c closed over
    p.n = N
    lines = prelude(dt, 2 * N)
    lines += [f"c = slice[start_indices=(0,), limit_indices=({N},)] w", "mesh m = {i: 2}",
              "@shard_map[mesh=m, in_specs=(P(i), P()), out_specs=(" + ", ".join(["P(i)"] * len(p.shown)) + ")]",
              "def f(xb, wb) {", "  x = add xb 0" if dt == "i32" else "  x = add xb 0.0",
              "  w = max wb c"]
    lines += ["  " + ln for ln in p.body()]
    res = ", ".join(p.shown)
    lines += [f"  return {res}", "}", f"wf = slice[start_indices=(0,), limit_indices=({N},)] w", f"{res} = f x wf"]
    p.n = 2 * N
    return "\n".join(lines + shows(p, p.shown)) + "\n"


def expected(p, where):
    dt = p.dt
    if where != "smap":
        x, w = inputs(dt, N)
        vals = p.model(x, w)
    else:
        x, w = inputs(dt, 2 * N)
        wf = w[:N]
        c = w[:N]
        blocks = [p.model(x[k * N:(k + 1) * N], np.maximum(wf, c)) for k in range(2)]
        vals = [np.concatenate([blocks[0][j], blocks[1][j]]) for j in range(len(p.shown))]
    return [(v[:5], v[-3:]) for v in vals]


def parse(text):
    """One row of numbers per print; a long array wraps onto lines that
    start with a space, as NumPy wraps it."""
    lines = []
    for ln in text.strip().split("\n"):
        if ln.startswith(" ") and lines:
            lines[-1] += ln
        else:
            lines.append(ln)
    return [np.array([float(t) for t in ln.replace("[", " ").replace("]", " ").split()]) for ln in lines]


def close(got, want, dt):
    want = np.concatenate(want).astype(np.float64)
    if got.shape != want.shape:
        return False
    if dt == "i32":
        return np.array_equal(got, want)
    return np.allclose(got, want, rtol=2e-5, atol=2e-6, equal_nan=True)


def run(shmapi, path, extra=(), stdin=None):
    r = subprocess.run([shmapi, *extra, path], capture_output=True, text=True, input=stdin, timeout=60)
    return r.returncode, r.stdout, r.stderr


def main():
    shmapi = os.environ.get("SHMAPI", "build/shmapi")
    seed = int(os.environ.get("SHM_DONATION_SEED", "1923"))
    count = int(os.environ.get("SHM_DONATION_COUNT", "240"))
    rng = random.Random(seed)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(count):
            dt = rng.choice(["f32", "f32", "f64", "i32"])
            p = Prog(rng, dt)
            where = ["top", "def", "smap"][k % 3]
            src = program(p, where)
            path = os.path.join(tmp, f"p{k}.shm")
            with open(path, "w") as f:
                f.write(src)
            rc, out, err = run(shmapi, path)
            want = expected(p, where)
            rows = parse(out) if rc == 0 else []
            ok = rc == 0 and len(rows) == len(want) and all(close(g, w, dt) for g, w in zip(rows, want))
            if ok and k % 8 == 0:
                rc2, out2, err = run(shmapi, path, ("--max-memory", "64M"))
                ok = rc2 == 0 and out2 == out
            if ok and k % 16 == 1:
                # the debugger keeps every value (no donation): same output
                rc3, out3, err = run(shmapi, path, ("--debug",), stdin="continue\n")
                ok = rc3 == 0 and out in out3
            if not ok:
                failed += 1
                if failed <= 3:
                    print(f"FAIL program {k} ({where}, {dt}, seed {seed}):\n{src}\nstdout:\n{out}\nstderr:\n{err}\n"
                          f"want:\n{want}", file=sys.stderr)
    print(f"{count} random donation programs (seed {seed}): {count - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
