#!/usr/bin/python3
# timeout: 300
"""Random differential test of gather and the scatter family against a
NumPy model of XLA's semantics (src/indexing.h).

Each case draws an operand (rank 1 to 3, of f32, f64, f16, i32, u8, i8 or
bool), random dimension numbers (index-mapped dimensions in any order,
collapsed / inserted dimensions, window sizes from 0 to the whole
dimension, offset and window dimensions anywhere in the result or the
updates, batching dimensions as vmap makes them), indices of i32, i64, i8
or u8 with values from -2 to past the end (out of bounds in every mode,
repeated indices for the scatters; scatter_apply, `scatter` with a
function of its own, applies it once per occurrence), a mode (CLIP, FILL_OR_DROP,
PROMISE_IN_BOUNDS, written in the forms JAX printed) and a fill value.
The model walks the batch positions in row-major order: gather clamps
(CLIP, PROMISE_IN_BOUNDS) or fills (FILL_OR_DROP, with the dtype's default
or the given fill_value); a scatter clamps (CLIP) or drops a window not
wholly in bounds, and applies windows in order, so that repeated indices
give the last write (scatter) and np.add.at's order of sums (scatter-add).
Results are compared bit for bit (NaN with NaN).

A share of the cases run inside a shard_map over {i: 2} with the indices
(and updates) split along their first batch dimension and the operand
invariant: the checker lifts the operand, each device computes its half,
and the two halves are put together along the result's first dimension.

Cases run in batches, one shmapi process per batch, inputs and results
passed as .npy files.  SHM_GATHER_SEED / SHM_GATHER_COUNT change the seed
(default 4242) and the number of cases (default 3000).
"""

import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

SHMAPI = os.environ.get("SHMAPI", "build/shmapi")
SEED = int(os.environ.get("SHM_GATHER_SEED", "4242"))
COUNT = int(os.environ.get("SHM_GATHER_COUNT", "3000"))
BATCH = 150

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32, "u8": np.uint8,
          "i8": np.int8, "bool": np.bool_}
IDX = {"i32": np.int32, "i64": np.int64, "i8": np.int8, "u8": np.uint8}
OPS = ["gather", "scatter", "scatter-add", "scatter-sub", "scatter-mul", "scatter-min", "scatter-max", "apply"]
# scatter_apply (`scatter` with an update_jaxpr of its own): the function of
# an element p and its update q, per dtype kind, as shm text and as the model
# computes it; "i1" runs through primitives that are not elementwise (the
# kernel then runs the function element by element).
APPLY = {
    "b": ("s:bool[] = not p; r:bool[] = or s q", lambda a, b: np.bool_((not a) or b)),
    "i": ("s:{t}[] = mul p 3:{t}[]; r:{t}[] = sub s q", lambda a, b: a * a.dtype.type(3) - b),
    "i1": ("s:{t}[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,)] p; m:{t}[] = reduce_max[axes=(0,)] s; "
           "r:{t}[] = max m q", lambda a, b: max(a, b)),
    "f": ("s:{t}[] = mul p 2.0:{t}[]; r:{t}[] = sub s q", lambda a, b: a * a.dtype.type(2) - b),
}
MODES = ["CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"]


def tup(xs):
    return "(" + ", ".join(str(x) for x in xs) + ("," if len(xs) == 1 else "") + ")"


def mode_text(rng, m):
    r = rng.random()
    if r < 0.6:
        return "GatherScatterMode." + m
    if r < 0.8:
        return str(MODES.index(m) + 1)
    return {"CLIP": "'clip'", "FILL_OR_DROP": "'fill'", "PROMISE_IN_BOUNDS": "'promise_in_bounds'"}[m]


def rand_values(rng, shape, dt):
    n = int(np.prod(shape)) if shape else 1
    if dt == "bool":
        v = np.array([rng.random() < 0.5 for _ in range(n)], np.bool_)
    elif dt in ("u8", "i8", "i32"):
        lo, hi = (0, 255) if dt == "u8" else (-128, 127) if dt == "i8" else (-1000, 1000)
        v = np.array([rng.randint(lo, hi) for _ in range(n)], DTYPES[dt])
    else:
        v = np.array([rng.choice([-3.5, -1.0, 0.0, 0.5, 2.0, 7.25, float(rng.randint(-9, 9))]) for _ in range(n)],
                     DTYPES[dt])
        if rng.random() < 0.1 and n:
            v[rng.randrange(n)] = np.nan
    return v.reshape(shape)


class Case:
    def __init__(self, rng, k):
        self.k = k
        self.op = rng.choice(OPS)
        op = self.op
        kinds = {"scatter-add": ["f32", "f64", "f16", "i32", "u8", "i8"], "scatter-sub": ["f32", "f64", "i32", "i8"],
                 "scatter-mul": ["f32", "f64", "i32", "u8"], "apply": ["f32", "f64", "i32", "u8", "i8", "bool"]}
        self.dt = rng.choice(kinds.get(op, list(DTYPES)))
        R = rng.randint(1, 3)
        oshape = [rng.randint(1, 5) for _ in range(R)]
        dims = list(range(R))
        nbat = 1 if R >= 2 and rng.random() < 0.25 else 0
        obd = sorted(rng.sample(dims, nbat))
        rest = [d for d in dims if d not in obd]
        K = rng.randint(0, len(rest)) if rng.random() < 0.1 else rng.randint(1, len(rest)) if rest else 0
        sim = rng.sample(rest, K)
        collapsed = sorted(d for d in rest if rng.random() < 0.5 and (d in sim or rng.random() < 0.3))
        win = {}
        for d in dims:
            if d in obd or d in collapsed:
                win[d] = 1
            else:
                win[d] = rng.randint(0, oshape[d]) if rng.random() < 0.1 else rng.randint(1, oshape[d])
        # the indices: nb batch dimensions, the batching ones among them
        nb = rng.randint(nbat, nbat + 2)
        bshape = [rng.randint(1, 4) for _ in range(nb)]
        sibd = rng.sample(range(nb), nbat)
        for i, d in enumerate(obd):
            bshape[sibd[i]] = oshape[d]
        self.split = nb >= 1 and 0 not in sibd and rng.random() < 0.25
        if self.split:
            bshape[0] = 2 * rng.randint(1, 2)
        ishape = bshape + [K]
        self.idt = rng.choice(list(IDX))
        lo = 0 if self.idt == "u8" else -2
        hi_of = {d: oshape[d] - win[d] + 2 for d in sim}
        ivals = [[rng.randint(lo, max(lo, hi_of[sim[j]])) if rng.random() < 0.85 else rng.randint(lo, 1)
                  for j in range(K)] for _ in range(int(np.prod(bshape)) if bshape else 1)]
        self.ix = np.array(ivals, IDX[self.idt]).reshape(ishape)
        self.x = rand_values(rng, oshape, self.dt)
        self.mode = rng.choice(MODES)
        self.mode_text = mode_text(rng, self.mode)
        wdims = [d for d in dims if d not in obd and d not in collapsed]
        big_rank = nb + len(wdims)
        offs = sorted(rng.sample(range(big_rank), len(wdims)))
        if self.split and 0 in offs:
            self.split = False
        self.R, self.oshape, self.obd, self.sim, self.collapsed, self.win = R, oshape, obd, sim, collapsed, win
        self.sibd, self.wdims, self.offs, self.nb, self.bshape = sibd, wdims, offs, nb, bshape
        big = []
        bi = iter(bshape)
        wi = iter(wdims)
        for p in range(big_rank):
            big.append(win[next(wi)] if p in offs else next(bi))
        self.big = big
        self.fill = None
        if op == "gather":
            if self.mode == "FILL_OR_DROP" and rng.random() < 0.4:
                self.fill = rng.choice([0, 1, 7] + ([-1] if self.dt[0] in "fi" else [])) if self.dt != "bool" else 1
        else:
            self.u = rand_values(rng, big, self.dt)
        if op == "apply":
            kind = "b" if self.dt == "bool" else "f" if self.dt[0] == "f" else rng.choice(["i", "i1"])
            self.apply = kind

    # ---- the program --------------------------------------------------------------
    def dnums(self):
        if self.op == "gather":
            f = ("GatherDimensionNumbers", "offset_dims", "collapsed_slice_dims", "start_index_map",
                 "operand_batching_dims", "start_indices_batching_dims")
        else:
            f = ("ScatterDimensionNumbers", "update_window_dims", "inserted_window_dims",
                 "scatter_dims_to_operand_dims", "operand_batching_dims", "scatter_indices_batching_dims")
        vals = [self.offs, self.collapsed, self.sim, self.obd, self.sibd]
        n = 5 if self.obd or self.k % 3 else 3      # older JAX printed three fields
        return f[0] + "(" + ", ".join(f"{f[i + 1]}={tup(vals[i])}" for i in range(n)) + ")"

    def eqn(self, x, ix, u):
        if self.op == "gather":
            fill = "None" if self.fill is None else str(self.fill)
            ss = tup([self.win[d] for d in range(self.R)])
            return (f"gather[dimension_numbers={self.dnums()} fill_value={fill} indices_are_sorted=False "
                    f"mode={self.mode_text} slice_sizes={ss} unique_indices=False] {x} {ix}")
        upd = "None"
        if self.op == "apply":
            text = APPLY[self.apply][0].format(t=self.dt)
            upd = f"{{ lambda ; p:{self.dt}[] q:{self.dt}[]. let {text} in (r,) }}"
        op = "scatter" if self.op == "apply" else self.op
        return (f"{op}[dimension_numbers={self.dnums()} indices_are_sorted=False mode={self.mode_text} "
                f"unique_indices=False update_consts=() update_jaxpr={upd}] {x} {ix} {u}")

    def program(self, d):
        k = self.k
        lines = [f'x{k} = load "{d}/x{k}.npy"', f'ix{k} = load "{d}/ix{k}.npy"']
        args = f"x{k} ix{k}"
        if self.op != "gather":
            lines.append(f'u{k} = load "{d}/u{k}.npy"')
            args += f" u{k}"
        params = "a, b" if self.op == "gather" else "a, b, c"
        if self.split:
            specs = "(P(), P('i'))" if self.op == "gather" else "(P(), P('i'), P('i'))"
            lines.append(f"@shard_map[mesh=m, in_specs={specs}, out_specs=P('i')]")
        lines += [f"def f{k}({params}) {{", f"  r = {self.eqn('a', 'b', 'c')}", "  return r", "}",
                  f"r{k} = f{k} {args}", f'save "{d}/r{k}.npy" r{k}']
        return lines

    # ---- the model ----------------------------------------------------------------
    def starts(self, ix, g, clamp_map):
        """Operand start of batch position g (a tuple), and whether in bounds."""
        s = [0] * self.R
        ok = True
        for j, d in enumerate(self.sim):
            v = int(ix[g + (j,)])
            hi = self.oshape[d] - self.win[d]
            if clamp_map:
                v = min(max(v, 0), hi)
            ok &= 0 <= v <= hi
            s[d] = v
        for i, d in enumerate(self.obd):
            s[d] = g[self.sibd[i]]
        return s, ok

    def window_positions(self):
        return list(np.ndindex(*[self.win[d] for d in self.wdims]))

    def big_index(self, g, w):
        out, bi, wi = [], iter(g), iter(w)
        for p in range(len(self.big)):
            out.append(next(wi) if p in self.offs else next(bi))
        return tuple(out)

    def op_index(self, s, w):
        o = list(s)
        for j, d in enumerate(self.wdims):
            o[d] += w[j]
        return tuple(o)

    def fill_value(self):
        t = DTYPES[self.dt]
        if self.fill is not None:
            return t(self.fill) if self.dt != "bool" else True
        if self.dt == "bool":
            return True
        if self.dt in ("u8",):
            return np.iinfo(t).max
        if self.dt in ("i8", "i32"):
            return np.iinfo(t).min
        return t(np.nan)

    def model_one(self, ix, u):
        if self.op == "gather":
            r = np.empty(self.big_shape(ix), DTYPES[self.dt])
            for g in np.ndindex(*ix.shape[:-1]):
                s, ok = self.starts(ix, g, self.mode != "FILL_OR_DROP")
                for w in self.window_positions():
                    r[self.big_index(g, w)] = self.x[self.op_index(s, w)] if ok else self.fill_value()
            return r
        r = self.x.copy()
        with np.errstate(all="ignore"):
            for g in np.ndindex(*ix.shape[:-1]):
                s, ok = self.starts(ix, g, self.mode == "CLIP")
                if not ok:
                    continue
                for w in self.window_positions():
                    o, v = self.op_index(s, w), u[self.big_index(g, w)]
                    r[o] = APPLY[self.apply][1](r[o], v) if self.op == "apply" else combine(self.op, r[o], v)
        return r

    def big_shape(self, ix):
        out, bi, wi = [], iter(ix.shape[:-1]), iter(self.wdims)
        for p in range(len(self.big)):
            out.append(self.win[next(wi)] if p in self.offs else next(bi))
        return out

    def model(self):
        if not self.split:
            return self.model_one(self.ix, getattr(self, "u", None))
        h = self.ix.shape[0] // 2
        parts = [self.model_one(self.ix[i * h:(i + 1) * h], self.u[i * h:(i + 1) * h] if self.op != "gather" else None)
                 for i in range(2)]
        return np.concatenate(parts, axis=0)


def combine(op, a, b):
    if op == "scatter":
        return b
    if op == "scatter-add":
        return a + b
    if op == "scatter-sub":
        return a - b
    if op == "scatter-mul":
        return a * b
    isnan = (lambda v: bool(np.isnan(v))) if np.asarray(a).dtype.kind == "f" else (lambda v: False)
    if isnan(a):
        return a
    if isnan(b):
        return b
    return min(a, b) if op == "scatter-min" else max(a, b)


def same(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


def run_batch(cases, d):
    lines = ["mesh m = {i: 2}"]
    for c in cases:
        np.save(f"{d}/x{c.k}.npy", c.x)
        np.save(f"{d}/ix{c.k}.npy", c.ix)
        if c.op != "gather":
            np.save(f"{d}/u{c.k}.npy", c.u)
        lines += c.program(d)
    path = f"{d}/batch.shm"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([SHMAPI, path], capture_output=True, text=True, timeout=250)
    bad = []
    if p.returncode != 0:
        return [(cases[0], "shmapi failed: " + p.stderr[:2000])]
    for c in cases:
        got = np.load(f"{d}/r{c.k}.npy")
        want = c.model()
        if not same(got, want):
            bad.append((c, f"got\n{got!r}\nwant\n{want!r}"))
    return bad


def big_gathers(rng, d):
    """Row gathers big enough to be split over two threads (> 8 MiB of
    result), one per mode, against NumPy's vectorized indexing."""
    x = np.array([rng.uniform(-4, 4) for _ in range(1024)], np.float32)
    x = np.tile(x, 2400).reshape(4096, 600) + np.arange(4096, dtype=np.float32)[:, None]
    ids = np.array([rng.randint(-3, 4100) for _ in range(8192)], np.int32)
    np.save(f"{d}/bx.npy", x)
    np.save(f"{d}/bi.npy", ids.reshape(8192, 1))
    lines = [f'bx = load "{d}/bx.npy"', f'bi = load "{d}/bi.npy"']
    dn = "GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))"
    for m in MODES:
        lines += [f"br_{m} = gather[dimension_numbers={dn}, slice_sizes=(1, 600), mode=GatherScatterMode.{m}] bx bi",
                  f'save "{d}/br_{m}.npy" br_{m}']
    with open(f"{d}/big.shm", "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([SHMAPI, f"{d}/big.shm"], capture_output=True, text=True, timeout=250)
    if p.returncode != 0:
        return ["big gathers: shmapi failed: " + p.stderr[:2000]]
    bad = []
    for m in MODES:
        want = x[np.clip(ids, 0, 4095)]
        if m == "FILL_OR_DROP":
            want[(ids < 0) | (ids > 4095)] = np.nan
        if not same(np.load(f"{d}/br_{m}.npy"), want):
            bad.append(f"big gather, mode {m}: wrong rows")
    return bad


def main():
    rng = random.Random(SEED)
    cases = [Case(rng, k) for k in range(COUNT)]
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(0, COUNT, BATCH):
            failures += run_batch(cases[i:i + BATCH], d)
        big = big_gathers(rng, d)
    for why in big:
        print(why)
    for c, why in failures[:5]:
        print(f"case {c.k} ({c.op}, {c.dt}, mode {c.mode}, split {c.split}):")
        print("\n".join(c.program("DIR")))
        print(f"x = {c.x!r}\nix = {c.ix!r}" + (f"\nu = {c.u!r}" if c.op != 'gather' else ""))
        print(why)
    ops = {}
    for c in cases:
        ops[c.op] = ops.get(c.op, 0) + 1
    print(f"{COUNT - len(failures)}/{COUNT} cases agree (seed {SEED}; {ops}; "
          f"{sum(c.split for c in cases)} in a shard_map)")
    return 1 if failures or big else 0


if __name__ == "__main__":
    sys.exit(main())
