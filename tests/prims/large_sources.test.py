#!/usr/bin/python3
# timeout: 120
"""iota, arange and full on results big enough to be filled on two threads
(src/rules/prims.c, fill_run): every element must be what NumPy makes, wherever
the split falls (exactly for f32 and the integers; f64 prints 8 digits).

Odd lengths (the halves differ), several starts and steps (negative,
fractional, an f32 step whose products round), every dtype with a typed
loop and one without; for each result: slices at both ends and around the
middle, and its minimum, maximum and sum, against NumPy's arange, iota (an
arange broadcast along the dimension) and full.

Run by tests/run.py with SHMAPI set; needs NumPy.
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

N = 3000001
DTS = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bf16": None}


def arange_np(start, stop, step, dt):
    return np.arange(start, stop, step, dtype=DTS[dt])


CASES = []           # (shm statement producing r, NumPy array or None, dtype name)
for dt in ["f32", "f64", "i32", "i64"]:
    CASES.append((f"arange[stop={N}, dtype={dt}]", arange_np(0, N, 1, dt), dt))
    CASES.append((f"arange[start=-7, stop={3 * N - 7}, step=3, dtype={dt}]", arange_np(-7, 3 * N - 7, 3, dt), dt))
for dt in ["f32", "f64"]:
    CASES.append((f"arange[start=0.5, stop={N * 0.1 + 0.5}, step=0.1, dtype={dt}]",
                  arange_np(0.5, N * 0.1 + 0.5, 0.1, dt), dt))
    CASES.append((f"arange[start=100.0, stop=-{N}.0, step=-1.0, dtype={dt}]", arange_np(100.0, -N, -1.0, dt), dt))
for dt in ["f32", "i32", "f64"]:
    T = DTS[dt]
    CASES.append((f"iota[dtype={dt}, shape=(1001, 3001), dimension=0]",
                  np.broadcast_to(np.arange(1001, dtype=T)[:, None], (1001, 3001)).ravel(), dt))
    CASES.append((f"iota[dtype={dt}, shape=(1001, 3001), dimension=1]",
                  np.broadcast_to(np.arange(3001, dtype=T)[None, :], (1001, 3001)).ravel(), dt))
    CASES.append((f"iota[dtype={dt}, shape=(7, 1001, 501), dimension=1]",
                  np.broadcast_to(np.arange(1001, dtype=T)[None, :, None], (7, 1001, 501)).ravel(), dt))
for dt, v in [("f32", "1.5"), ("f64", "-2.25"), ("i32", "7"), ("i64", "-3"), ("bf16", "3.0"), ("f32", "0.1")]:
    T = DTS[dt] or np.float32
    CASES.append((f"full[shape=({N},), value={v}, dtype={dt}]", np.full(N, T(float(v)), dtype=T), dt))


def probes(n):
    m = n // 2
    return [(0, 5), (m - 3, m + 3), (n - 4, n)]


def program():
    lines = []
    for k, (stmt, want, dt) in enumerate(CASES):
        lines.append(f"r{k} = {stmt}")
        n = len(want)
        lines.append(f"q{k} = reshape[new_sizes=({n},)] r{k}")
        for j, (a, b) in enumerate(probes(n)):
            lines.append(f"s{k}_{j} = slice[start_indices=({a},), limit_indices=({b},)] q{k}")
        lines.append(f"mn{k} = reduce_min[axes=(0,)] q{k}")
        lines.append(f"mx{k} = reduce_max[axes=(0,)] q{k}")
        conv = "f64" if dt != "i64" else "i64"
        lines.append(f"c{k} = convert_element_type[new_dtype={conv}] q{k}")
        lines.append(f"sm{k} = reduce_sum[axes=(0,)] c{k}")
        lines.append(f"print s{k}_0, s{k}_1, s{k}_2, mn{k}, mx{k}, sm{k}")
    return "\n".join(lines) + "\n"


def numbers(line):
    return np.array([float(t) for t in line.replace("[", " ").replace("]", " ").split()])


def main():
    shmapi = os.environ.get("SHMAPI", "build/shmapi")
    with tempfile.NamedTemporaryFile("w", suffix=".shm", delete=False) as f:
        f.write(program())
        path = f.name
    try:
        r = subprocess.run([shmapi, path], capture_output=True, text=True, timeout=300)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return 1
    lines = r.stdout.strip().split("\n")
    if len(lines) != len(CASES):
        print(f"expected {len(CASES)} lines, got {len(lines)}:\n{r.stdout[:2000]}", file=sys.stderr)
        return 1
    failed = 0
    for (stmt, want, dt), line in zip(CASES, lines):
        n = len(want)
        parts = [want[a:b] for a, b in probes(n)] + [want.min(), want.max()]
        acc = want.astype(np.int64).sum() if dt == "i64" else want.astype(np.float64).sum()
        exp = np.concatenate([np.atleast_1d(np.asarray(p, dtype=np.float64)) for p in parts] + [[float(acc)]])
        got = numbers(line)
        # f32 prints each element's shortest repr (read back in f32: exact);
        # f64 arrays print 8 significant digits, as NumPy's do
        T = np.float32 if dt in ("f32", "bf16") else np.float64
        if dt == "f64":
            same = np.allclose(got[:-1], exp[:-1], rtol=1e-8, atol=0)
        else:
            same = np.array_equal(got[:-1].astype(T), exp[:-1].astype(T))
        ok = got.shape == exp.shape and same and np.isclose(got[-1], exp[-1], rtol=1e-9, atol=0)
        if not ok:
            failed += 1
            print(f"FAIL {stmt}:\n  got  {got}\n  want {exp}", file=sys.stderr)
    print(f"{len(CASES)} big sources against NumPy: {len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
