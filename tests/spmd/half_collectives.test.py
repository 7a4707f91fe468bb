#!/usr/bin/python3
# timeout: 120
"""psum, pmax, pmin and pmean of bf16 and f16 blocks (src/run/fabric.c,
reduce_half16) against a NumPy model: members combined in ascending
order, each step in f32 and its result rounded to the dtype (to nearest
even), as XLA's CPU backend adds 16-bit floats.

Blocks small (one thread), big enough to be reduced on two threads, and
given up at the collective (the result written over the first member's
block); the values spread over 23 binades, both signs, so that sums
round at every step.  The results are printed after conversion to f32
and compared exactly.

Run by tests/run.py with SHMAPI set; needs NumPy.
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

f32 = np.float32


def bf16_round(x):
    """f32 array -> the nearest bf16 values (ties to even), as f32; NaN kept."""
    x = np.asarray(x, dtype=f32)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(f32)
    return np.where(np.isnan(x), x, r).astype(f32)


def f16_round(x):
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=f32).astype(np.float16).astype(f32)


ROUND = {"bf16": bf16_round, "f16": f16_round}


def inputs(n):
    """The f32 values the program makes: sin(k * 0.37) * 2^((k mod 23) - 9)."""
    k = np.arange(n, dtype=f32)
    s = np.sin(k * f32(0.37)).astype(f32)
    e = (np.arange(n) % 23 - 9).astype(f32)
    return (s * np.exp2(e).astype(f32)).astype(f32)


def model(prim, dt, blocks):
    rnd = ROUND[dt]
    acc = blocks[0].copy()
    with np.errstate(all="ignore"):
        for b in blocks[1:]:
            if prim == "pmax":
                acc = np.where(np.isnan(acc) | (acc >= b), acc, b)
            elif prim == "pmin":
                acc = np.where(np.isnan(acc) | (acc <= b), acc, b)
            else:
                acc = rnd(acc + b)
        if prim == "pmean":
            acc = rnd(acc / f32(len(blocks)))
    return acc


CASES = []
for dt in ["bf16", "f16"]:
    for prim in ["psum", "pmax", "pmin", "pmean"]:
        CASES.append((prim, dt, 4, 1000))
    CASES.append(("psum", dt, 4, 1200001))      # two threads, the block given up
    CASES.append(("pmax", dt, 2, 3000001))


def program(prim, dt, p, n):
    return f"""
mesh m = {{i: {p}}}
k = iota[dtype=f32, shape=({p * n},), dimension=0]
k2 = mul k 0.37
s = sin k2
ki = iota[dtype=i32, shape=({p * n},), dimension=0]
kr = rem ki 23
ke = sub kr 9
kf = convert_element_type[new_dtype=f32] ke
sc = exp2 kf
x32 = mul s sc
x = convert_element_type[new_dtype={dt}] x32
@shard_map[mesh=m, in_specs=P(i), out_specs=P()]
def f(b) {{
  c = mul b 1.0
  y = {prim}[axes=i] c
  return y
}}
y = f x
y32 = convert_element_type[new_dtype=f32] y
a = slice[start_indices=(0,), limit_indices=(40,)] y32
z = slice[start_indices=({n - 20},), limit_indices=({n},)] y32
mx = reduce_max[axes=(0,)] y32
mn = reduce_min[axes=(0,)] y32
print a, z, mx, mn
"""


def numbers(text):
    t = text.replace("[", " ").replace("]", " ").split()
    return np.array([f32(float(v)) for v in t], dtype=f32)


def main():
    shmapi = os.environ.get("SHMAPI", "build/shmapi")
    failed = 0
    for prim, dt, p, n in CASES:
        x = ROUND[dt](inputs(p * n))
        want = model(prim, dt, [x[g * n:(g + 1) * n] for g in range(p)])
        exp = np.concatenate([want[:40], want[n - 20:], [np.max(want), np.min(want)]]).astype(f32)
        with tempfile.NamedTemporaryFile("w", suffix=".shm", delete=False) as f:
            f.write(program(prim, dt, p, n))
            path = f.name
        try:
            r = subprocess.run([shmapi, path], capture_output=True, text=True, timeout=120)
        finally:
            os.unlink(path)
        got = numbers(r.stdout) if r.returncode == 0 else None
        if got is None or got.shape != exp.shape or not np.array_equal(got, exp):
            failed += 1
            print(f"FAIL {prim} {dt} p={p} n={n}: rc {r.returncode} {r.stderr[-400:]}\n  got  {got}\n  want {exp}",
                  file=sys.stderr)
    print(f"{len(CASES)} 16-bit collectives against NumPy: {len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
