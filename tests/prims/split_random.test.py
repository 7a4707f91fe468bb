#!/usr/bin/python3
# timeout: 300
"""Random differential test of split (lax.split) against NumPy's np.split.

Each case draws an operand (rank 1 to 4, sizes 0 to 5, of f32, f64, f16,
i32, i64, u8, i8, bool or c64), an axis (written negative
a third of the time) and 0 to 4 sizes (now and then 10 to 13), zeros among them, that add up to the
axis' size; the model is np.split at the running sums of the sizes.  Every
result is compared bit for bit (NaN with NaN), its dtype and shape too.

A share of the cases run inside a shard_map over {i: 2} with the operand
split in halves along one dimension (the split axis or another): each
device splits its own block, and the model splits each half and puts the
pieces together along the sharded dimension.

Cases run in batches, one shmapi process per batch, inputs and results
passed as .npy files.  SHM_SPLIT_SEED / SHM_SPLIT_COUNT change the seed
(default 2929) and the number of cases (default 3000).
"""

import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

SHMAPI = os.environ.get("SHMAPI", "build/shmapi")
SEED = int(os.environ.get("SHM_SPLIT_SEED", "2929"))
COUNT = int(os.environ.get("SHM_SPLIT_COUNT", "3000"))
BATCH = 300

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "i8": np.int8, "bool": np.bool_, "c64": np.complex64}


def tup(xs):
    return "(" + ", ".join(str(x) for x in xs) + ("," if len(xs) == 1 else "") + ")"


def rand_values(rng, shape, dt):
    n = int(np.prod(shape)) if shape else 1
    if dt == "bool":
        v = np.array([rng.random() < 0.5 for _ in range(n)], np.bool_)
    elif dt in ("u8", "i8", "i32", "i64"):
        lo, hi = (0, 255) if dt == "u8" else (-128, 127) if dt == "i8" else (-10**6, 10**6)
        v = np.array([rng.randint(lo, hi) for _ in range(n)], DTYPES[dt])
    elif dt == "c64":
        v = np.array([complex(rng.randint(-50, 50) / 4, rng.randint(-50, 50) / 8) for _ in range(n)], np.complex64)
    else:
        v = np.array([rng.uniform(-100, 100) for _ in range(n)], DTYPES[dt])
        if n and rng.random() < 0.2:
            v[rng.randrange(n)] = np.nan
    return v.reshape(shape)


def rand_sizes(rng, n):
    """1 to 4 nonnegative sizes adding up to n, now and then 10 to 13 (more
    results than the evaluator's small buffers hold); none only when n is 0."""
    if n == 0 and rng.random() < 0.2:
        return []
    many = rng.random() < 0.05
    cuts = sorted(rng.randint(0, n) for _ in range(rng.randint(9, 12) if many else rng.randint(0, 3)))
    return [hi - lo for lo, hi in zip([0] + cuts, cuts + [n])]


class Case:
    def __init__(self, rng, k):
        self.k = k
        self.dt = rng.choice(list(DTYPES))
        R = rng.randint(1, 4)
        self.shape = [rng.randint(0, 5) if rng.random() < 0.15 else rng.randint(1, 5) for _ in range(R)]
        self.axis = rng.randrange(R)
        self.shard = None
        if rng.random() < 0.3:
            self.shard = rng.randrange(R)
            self.shape[self.shard] = 2 * rng.randint(1, 3)
        n = self.shape[self.axis] // (2 if self.shard == self.axis else 1)
        self.sizes = rand_sizes(rng, n)
        self.written_axis = self.axis - R if rng.random() < 0.33 else self.axis
        self.x = rand_values(rng, self.shape, self.dt)

    def eqn(self, x, outs):
        return f"{', '.join(outs)} = split[axis={self.written_axis} sizes={tup(self.sizes)}] {x}"

    def program(self, d):
        k, n = self.k, len(self.sizes)
        outs = [f"r{k}_{j}" for j in range(n)]
        lines = [f'x{k} = load "{d}/x{k}.npy"']
        body_outs = [f"o{j}" for j in range(n)]
        if self.shard is not None:
            spec = "P(" + ", ".join("i" if q == self.shard else "None" for q in range(len(self.shape))) + ")"
            osp = "(" + "".join(spec + ", " for _ in range(n)) + ")" if n != 1 else spec
            lines.append(f"@shard_map[mesh=m, in_specs={spec}, out_specs={osp}]")
        lines += [f"def f{k}(a) {{", "  " + self.eqn("a", body_outs), f"  return {', '.join(body_outs)}", "}"]
        lines.append(f"{', '.join(outs)} = f{k} x{k}")
        lines += [f'save "{d}/{o}.npy" {o}' for o in outs]
        return lines

    def model(self):
        cuts = list(np.cumsum(self.sizes)[:-1]) if self.sizes else []
        if self.shard is None:
            return np.split(self.x, cuts, axis=self.axis) if self.sizes else []
        halves = np.split(self.x, 2, axis=self.shard)
        per = [np.split(h, cuts, axis=self.axis) for h in halves]
        return [np.concatenate([per[0][j], per[1][j]], axis=self.shard) for j in range(len(self.sizes))]


def same(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


def run_batch(cases, d):
    lines = ["mesh m = {i: 2}"]
    for c in cases:
        np.save(f"{d}/x{c.k}.npy", c.x)
        lines += c.program(d)
    path = f"{d}/batch.shm"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([SHMAPI, path], capture_output=True, text=True, timeout=250)
    if p.returncode != 0:
        return [(cases[0], "shmapi failed: " + p.stderr[:2000])]
    bad = []
    for c in cases:
        want = c.model()
        got = [np.load(f"{d}/r{c.k}_{j}.npy") for j in range(len(c.sizes))]
        if len(got) != len(want) or not all(same(g, w) for g, w in zip(got, want)):
            bad.append((c, f"got\n{got!r}\nwant\n{want!r}"))
    return bad


def main():
    rng = random.Random(SEED)
    cases = [Case(rng, k) for k in range(COUNT)]
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(0, COUNT, BATCH):
            failures += run_batch(cases[i:i + BATCH], d)
    for c, why in failures[:5]:
        print(f"case {c.k} ({c.dt}, shape {c.shape}, shard {c.shard}):")
        print("\n".join(c.program("DIR")))
        print(f"x = {c.x!r}")
        print(why)
    nres = sum(len(c.sizes) for c in cases)
    print(f"{COUNT - len(failures)}/{COUNT} cases agree (seed {SEED}; {nres} results; "
          f"{sum(c.shard is not None for c in cases)} in a shard_map, "
          f"{sum(0 in c.sizes for c in cases)} with an empty piece, {sum(not c.sizes for c in cases)} with none, "
          f"{sum(len(c.sizes) > 8 for c in cases)} with more than 8)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
