#!/usr/bin/env python3
# timeout: 300
"""Fused elementwise chains against the same programs run unfused, bit for bit.

A chain of elementwise equations over blocks of one shape whose
intermediates nothing after the chain reads runs as one pass over memory
(src/run/fuse.h); `--no-fuse` runs each equation on its own.  Fusion must
change no bit of any result.  This test generates random programs of many
chains each and runs every program both ways; each chain's result (and
any intermediate a later statement reads, which ends a chain there) is
saved with `save`, and the .npy files must be byte for byte the same.

The chains, per case:
  - a shape of at least 16,384 elements (below that chains run unfused),
    rank 1 or 2; dtypes f32, f64, bf16, f16 and i32, with comparisons and
    is_finite turning a chain to bool and and/or/xor/not going on in bool;
  - chains that start from an arange or an iota (made tile by tile);
  - operands: the value before, any earlier value of the chain (read
    several times), inputs loaded from an .npz (NaNs, infinities, signed
    zeros, subnormals, huge values; INT_MIN and INT_MAX for i32), rank-0
    values and literals broadcast against the block, and size-1 rows
    broadcast against a matrix (a step that cannot be fused: the chain
    splits there), conversions between dtypes (the same);
  - intermediates read again after the chain (saved), which end it there;
  - a third of the cases inside a shard_map on a mesh {i: 2}: blocks split
    by P(i) next to invariant operands (P()), so that a step may be
    invariant inside a varying chain.

SEED and COUNT (environment variables FUSION_SEED, FUSION_COUNT) choose
the programs; CI runs 2,400 chains in 16 programs.
"""

import os
import random
import subprocess
import sys
import tempfile

import numpy as np

SHMAPI = os.environ.get("SHMAPI", "build/shmapi")
SEED = int(os.environ.get("FUSION_SEED", "36"))
COUNT = int(os.environ.get("FUSION_COUNT", "2400"))
PER_PROGRAM = 150

SHAPES = [(16384,), (20000,), (128, 160), (64, 300)]
MESH_SHAPES = [(32768,), (256, 128)]          # split in 2 along dim 0: 16,384 per block
DTYPES = ["f32", "f32", "f64", "bf16", "f16", "i32"]
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32}

FLOAT_BIN = ["add", "sub", "mul", "div", "max", "min", "pow", "atan2", "rem", "nextafter"]
FLOAT_UN = ["neg", "abs", "sign", "floor", "ceil", "exp", "log", "tanh", "logistic", "sqrt", "rsqrt",
            "sin", "cos", "expm1", "log1p", "exp2", "cbrt"]
HALF_BIN = ["add", "sub", "mul", "div", "max", "min"]
HALF_UN = ["neg", "abs", "exp", "log", "tanh", "sqrt", "logistic", "floor"]
INT_BIN = ["add", "sub", "mul", "max", "min", "and", "or", "xor"]
INT_UN = ["neg", "abs", "sign", "not"]
CMP = ["eq", "ne", "lt", "le", "gt", "ge"]
BOOL_BIN = ["and", "or", "xor", "eq", "ne"]
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1.0, -1.0, 0.5]


def float_data(rng, n, dt):
    x = rng.standard_normal(n) * rng.choice([1.0, 10.0, 1000.0])
    k = rng.integers(0, n, size=n // 20)
    x[k] = rng.choice(SPECIAL, size=k.size)
    with np.errstate(over="ignore"):
        if dt == "bf16":          # kept as f32 in the file; the program converts
            return x.astype(np.float32)
        return x.astype(NP[dt])


def int_data(rng, n):
    x = rng.integers(-1000, 1000, size=n).astype(np.int32)
    k = rng.integers(0, n, size=n // 50)
    x[k] = rng.choice([np.iinfo(np.int32).min, np.iinfo(np.int32).max, 0, -1], size=k.size)
    return x


class Program:
    def __init__(self, rnd, nrng):
        self.rnd, self.nrng = rnd, nrng
        self.lines = []
        self.arrays = {}      # npz member -> array
        self.saves = []
        self.n = 0
        self.pool = {}        # (shape, dtype) -> inputs made so far, shared by the cases

    def input(self, shape, dt):
        """An input of shape and dtype dt: one of three per kind, made on
        first use and read by later cases too."""
        got = self.pool.setdefault((shape, dt), [])
        if len(got) < 3 and (not got or self.rnd.random() < 0.5):
            got.append(self.load(shape, dt))
        return self.rnd.choice(got)

    def fresh(self, p):
        self.n += 1
        return f"{p}{self.n}"

    def load(self, shape, dt, kind="full"):
        """An input of shape and dtype dt, loaded (bf16 through f32)."""
        name = self.fresh("in")
        size = int(np.prod(shape)) if shape else 1
        data = int_data(self.nrng, size) if dt == "i32" else float_data(self.nrng, size, dt)
        self.arrays[name] = data.reshape(shape)
        if dt == "bf16":
            raw = self.fresh("raw")
            self.lines.append(f'{raw} = load "../inputs.npz" "{name}"')
            self.lines.append(f"{name} = convert_element_type[new_dtype=bf16, weak_type=False] {raw}")
        else:
            self.lines.append(f'{name} = load "../inputs.npz" "{name}"')
        return name

    def literal(self, dt):
        if dt == "i32":
            return str(self.rnd.choice([0, 1, -3, 7, 255]))
        if dt == "bool":
            return self.rnd.choice(["True", "False"])
        return self.rnd.choice(["0.5", "-2.0", "3.0", "0.0", "1e30", "-1e-30"])

    def save(self, v):
        f = f"o{len(self.saves)}.npy"
        self.saves.append(f)
        return f'save "{f}" {v}'


def gen_chain(P, out, vals, dt, shape, scalars, rows, length):
    """Append a chain of `length` steps to `out` (lines); vals: values of
    shape `shape` and dtype dt usable as operands.  Returns the last value
    and the chain's values (for reading again)."""
    rnd = P.rnd
    cur, cur_dt = vals[0], dt
    made = []
    pool = {dt: list(vals)}
    for _ in range(length):
        r = rnd.random()
        nv = P.fresh("v")
        if cur_dt == "bool":
            if r < 0.2:
                out.append(f"{nv} = not {cur}")
            elif r < 0.35 and dt != "bool":
                # back to numbers: a conversion (not fused: the chain splits)
                out.append(f"{nv} = convert_element_type[new_dtype={dt}, weak_type=False] {cur}")
                cur_dt = dt
                pool.setdefault(dt, []).append(nv)
                cur = nv
                made.append(nv)
                continue
            else:
                other = rnd.choice(pool["bool"] + ["True", "False"])
                out.append(f"{nv} = {rnd.choice(BOOL_BIN)} {cur} {other}")
            pool["bool"].append(nv)
            cur = nv
            made.append(nv)
            continue
        if r < 0.12:       # to bool
            if cur_dt != "i32" and rnd.random() < 0.3:
                out.append(f"{nv} = is_finite {cur}")
            else:
                other = rnd.choice(pool[cur_dt] + [P.literal(cur_dt)] + scalars.get(cur_dt, []))
                out.append(f"{nv} = {rnd.choice(CMP)} {cur} {other}")
            cur_dt = "bool"
            pool.setdefault("bool", []).append(nv)
            cur = nv
            made.append(nv)
            continue
        if cur_dt == "i32":
            bins, uns = INT_BIN, INT_UN
        elif cur_dt in ("bf16", "f16"):
            bins, uns = HALF_BIN, HALF_UN
        else:
            bins, uns = FLOAT_BIN, FLOAT_UN
        if r < 0.4:
            out.append(f"{nv} = {rnd.choice(uns)} {cur}")
        else:
            k = rnd.random()
            if k < 0.45:
                other = rnd.choice(pool[cur_dt])
            elif k < 0.65:
                other = P.literal(cur_dt)
            elif k < 0.8 and scalars.get(cur_dt):
                other = rnd.choice(scalars[cur_dt])
            elif k < 0.9 and rows.get(cur_dt):
                other = rnd.choice(rows[cur_dt])      # size-1 broadcasting: not fused
            else:
                other = rnd.choice(pool[cur_dt])
            a, b = (cur, other) if rnd.random() < 0.7 else (other, cur)
            if a in ("0.5", "-2.0", "3.0", "0.0", "1e30", "-1e-30") or a.lstrip("-").isdigit():
                a, b = b, a          # keep a value first (a literal first is fine too, but rarer)
            out.append(f"{nv} = {rnd.choice(bins)} {a} {b}")
        pool[cur_dt].append(nv)
        cur = nv
        made.append(nv)
    return cur, made


def gen_case(P):
    rnd = P.rnd
    dt = rnd.choice(DTYPES)
    in_mesh = rnd.random() < 1 / 3
    shape = rnd.choice(MESH_SHAPES if in_mesh else SHAPES)
    bs = (shape[0] // 2,) + tuple(shape[1:]) if in_mesh else shape     # a block's shape
    a, b = P.input(shape, dt), P.input(bs, dt)
    if a == b:
        b = P.load(bs, dt)
    scalars = {dt: [P.input((), dt)]}
    rows = {}
    if len(shape) == 2 and not in_mesh:
        rows[dt] = [P.input((1, shape[1]), dt)]
    length = rnd.randint(2, 12)
    reread = rnd.random() < 0.3
    if not in_mesh and dt in ("f32", "f64", "i32") and rnd.random() < 0.3:
        # the chain starts from an arange or an iota, which it then makes
        # tile by tile
        a = P.fresh("fill")
        if len(shape) == 1 and dt != "i32" and rnd.random() < 0.6:
            start, step = rnd.choice([(0.0, 1.0), (-7.0, 0.5), (3.0, -0.25), (1.0, 1e-3)])
            stop = start + step * shape[0]
            P.lines.append(f"{a} = arange[start={start!r}, stop={stop!r}, step={step!r}, dtype={dt}]")
        else:
            dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
            P.lines.append(f"{a} = iota[shape=({dims}), dimension={rnd.randrange(len(shape))}, dtype={dt}]")
    if not in_mesh:
        body = []
        last, made = gen_chain(P, body, [a, b], dt, shape, scalars, rows, length)
        P.lines += body
        P.lines.append(P.save(last))
        if reread and len(made) > 1:
            P.lines.append(P.save(rnd.choice(made[:-1])))
        return
    # inside a shard_map: a split by P(i); b (a block's shape) and the scalar invariant
    fname = P.fresh("f")
    body = []
    last, made = gen_chain(P, body, [f"{a}_b", f"{b}_b"], dt, bs, {dt: [f"{scalars[dt][0]}_b"]}, {}, length)
    # every value of the chain derives from a's block: it varies along i
    ret = [last]
    if reread and len(made) > 1:
        ret.append(rnd.choice(made[:-1]))
    specs = ", ".join(["P(i)"] * len(ret))
    P.lines.append(f"@shard_map[mesh=m, in_specs=(P(i), P(), P()), out_specs=({specs},)]")
    P.lines.append(f"def {fname}({a}_b, {b}_b, {scalars[dt][0]}_b) {{")
    P.lines += ["  " + l for l in body]
    P.lines.append(f"  return {', '.join(ret)}")
    P.lines.append("}")
    outs = [P.fresh("g") for _ in ret]
    P.lines.append(f"{', '.join(outs)} = {fname} {a} {b} {scalars[dt][0]}")
    for o in outs:
        P.lines.append(P.save(o))


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    rnd = random.Random(SEED)
    nrng = np.random.default_rng(SEED)
    nprog = (COUNT + PER_PROGRAM - 1) // PER_PROGRAM
    failures = 0
    chains = 0
    for prog in range(nprog):
        P = Program(rnd, nrng)
        P.lines.append("mesh m = {i: 2}")
        for _ in range(PER_PROGRAM):
            gen_case(P)
            chains += 1
        with tempfile.TemporaryDirectory() as d:
            np.savez(os.path.join(d, "inputs.npz"), **P.arrays)
            results = {}
            for mode, args in (("fused", []), ("unfused", ["--no-fuse"])):
                out = os.path.join(d, mode)       # save writes beside the program
                os.mkdir(out)
                src = os.path.join(out, "prog.shm")
                with open(src, "w") as f:
                    f.write("\n".join(P.lines) + "\n")
                rc, so, se = run([os.path.abspath(SHMAPI)] + args + [src], out)
                if rc != 0:
                    print(f"program {prog} ({mode}) exited {rc}:\n{se[:3000]}")
                    print(open(src).read()[:20000])
                    return 1
                results[mode] = out
            for fname in P.saves:
                x = open(os.path.join(results["fused"], fname), "rb").read()
                y = open(os.path.join(results["unfused"], fname), "rb").read()
                if x != y:
                    failures += 1
                    if failures <= 5:
                        print(f"program {prog}: {fname} differs fused vs unfused")
            if os.environ.get("FUSION_KEEP"):
                import shutil
                shutil.copytree(d, os.environ["FUSION_KEEP"], dirs_exist_ok=True)
            if failures:
                keep = f"/tmp/fusion_fail_{SEED}_{prog}.shm"
                with open(keep, "w") as f:
                    f.write("\n".join(P.lines) + "\n")
                print(f"{failures} of {len(P.saves)} results differ; the program: {keep}")
                return 1
    print(f"{chains} chains in {nprog} programs: fused and unfused results identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
