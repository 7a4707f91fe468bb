#!/usr/bin/python3
"""Elementwise primitives on arrays big enough to be split over two threads
(src/rules/prims.c, EW_PAR_BYTES): every element must be what the one-thread
loop computes, wherever the split falls.

For each case the program computes the operation on a big array of odd
length (so the halves differ), then again on slices small enough to run
on one thread (around the split point and at both ends), and prints
whether the two agree element for element.  Where the operation is
exact in NumPy too (+ - * / and comparisons, integer arithmetic), slices
and extremes of the result are compared with NumPy's str() of the same
computation.  Also one shard_map whose per-device blocks are big.

Run by tests/run.py with SHMAPI set; needs NumPy (re-runs itself under
/usr/bin/python3 when the current interpreter has none).
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

N = 1500001
H = N // 2
f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64

# inputs, in shm and in NumPy
PRELUDE = f"""
xf = arange[stop={N}, dtype=f32]
x = mul xf 0.001
y = sub x 700.0
xi = arange[stop={N}, dtype=i32]
xl = convert_element_type[new_dtype=i64] xi
xd = convert_element_type[new_dtype=f64] x
u = mul y 0.001
"""
xf = np.arange(N, dtype=f32)
ENV = {"x": xf * f32(0.001)}
ENV["y"] = ENV["x"] - f32(700.0)
ENV["xi"] = np.arange(N, dtype=i32)
ENV["xl"] = ENV["xi"].astype(i64)
ENV["xd"] = ENV["x"].astype(f64)
ENV["u"] = ENV["y"] * f32(0.001)

# (name, shm expression over the inputs, NumPy result or None when NumPy's
# own rounding of the operation may differ from shmapi's by an ulp)
CASES = [
    ("add", "add x y", ENV["x"] + ENV["y"]),
    ("scalar_mul", "mul x 3.0", ENV["x"] * f32(3.0)),
    ("scalar_first", "sub 1.0 y", f32(1.0) - ENV["y"]),
    ("lt", "lt y x", ENV["y"] < ENV["x"]),
    ("ge_scalar", "ge y 0.0", ENV["y"] >= f32(0.0)),
    ("div_f64", "div xd 3.0", ENV["xd"] / 3.0),
    ("mul_i32", "mul xi 7", ENV["xi"] * i32(7)),
    ("rem_i32", "rem xi 1000", ENV["xi"] % i32(1000)),
    ("neg_i64", "neg xl", -ENV["xl"]),
    ("max", "max x 500.0", np.maximum(ENV["x"], f32(500.0))),
    ("tanh", "tanh u", None),
    ("exp", "exp u", None),
    ("sqrt", "sqrt x", np.sqrt(ENV["x"])),
]

RANGES = [(0, 60000), (H - 30000, H + 30000), (N - 60000, N)]


def program():
    lines = [PRELUDE]
    for name, expr, _ in CASES:
        op, *args = expr.split()
        lines.append(f"r_{name} = {expr}")
        for k, (lo, hi) in enumerate(RANGES):
            sl = []
            for a in args:
                if a in ENV:
                    lines.append(f"{name}_{k}_{a} = slice[start_indices=({lo},), limit_indices=({hi},)] {a}")
                    sl.append(f"{name}_{k}_{a}")
                else:
                    sl.append(a)
            lines.append(f"p_{name}_{k} = {op} {' '.join(sl)}")
            lines.append(f"w_{name}_{k} = slice[start_indices=({lo},), limit_indices=({hi},)] r_{name}")
            lines.append(f"e_{name}_{k} = eq p_{name}_{k} w_{name}_{k}")
            lines.append(f"a_{name}_{k} = reduce_and[axes=(0,)] e_{name}_{k}")
            lines.append(f'print "{name} {k}", a_{name}_{k}')
        lines.append(f"mid_{name} = slice[start_indices=({H - 3},), limit_indices=({H + 3},)] r_{name}")
        lines.append(f"print mid_{name}")
    # per-device blocks of 750,000 elements on two devices
    lines.append("""
mesh m = {i: 2}
xs = slice[start_indices=(0,), limit_indices=(1500000,)] x
ys = slice[start_indices=(0,), limit_indices=(1500000,)] y
@shard_map[mesh=m, in_specs=(P(i), P(i)), out_specs=P(i)]
def blocks(a, b) {
  s = add a b
  t = mul s 0.5
  return t
}
z = blocks xs ys
zm = slice[start_indices=(749997,), limit_indices=(750003,)] z
print zm
""")
    return "\n".join(lines) + "\n"


def expected():
    out = []
    for name, _, ref in CASES:
        for k in range(len(RANGES)):
            out.append(f"{name} {k} True")
        # (a long row wraps onto more lines, as NumPy's does)
        out.extend(str(ref[H - 3:H + 3]).split("\n") if ref is not None else [None])
    z = (ENV["x"][:1500000] + ENV["y"][:1500000]) * f32(0.5)
    out.extend(str(z[749997:750003]).split("\n"))
    return out


def main():
    shm = os.environ.get("SHMAPI") or sys.argv[1]
    with tempfile.NamedTemporaryFile("w", suffix=".shm", delete=False) as f:
        f.write(program())
        path = f.name
    try:
        r = subprocess.run([shm, path], capture_output=True, text=True, timeout=300)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        print(f"shmapi exited {r.returncode}:\n{r.stderr}")
        return 1
    got = r.stdout.rstrip("\n").split("\n")
    want = expected()
    bad = 0
    if len(got) != len(want):
        print(f"{len(got)} lines printed, {len(want)} expected:\n{r.stdout}")
        return 1
    for g, w in zip(got, want):
        if w is not None and g != w:
            print(f"got      {g}\nexpected {w}")
            bad += 1
    print(f"{len(CASES)} operations on {N} elements, {len(RANGES)} ranges each: {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
