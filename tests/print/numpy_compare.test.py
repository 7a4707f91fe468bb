#!/usr/bin/python3
"""shmapi's `print` against NumPy 1.24's str(arr), byte for byte.

Random arrays of every dtype shm has (bool, i32, i64, f32, f64), ranks 0-4
and now and then more, with tiny, huge, negative, integral and non-finite
values, some empty, some summarised (> 1000 elements), some with rows long
enough to wrap, come from the generator in tests/print/_compare/compare.py.  Each
is written as an annotated shm array literal

    a17:f64[2,3] = [[0.1, -2.5e-300, nan], [inf, -0.0, 1e+300]]
    print a17

(floats spelled so that they round-trip exactly for their dtype: repr of a
numpy float32 for f32, repr of a Python float for f64; nan, inf, -inf and
-0.0 as such), run through shmapi in a few batches, and every printed block
is compared with str(arr).  Empty arrays, which a nested literal can only
spell as `[]`, are written `t:f32[0] = []` and reshaped.  The first
mismatches are shown; the exit status is 1 on any.

Run by tests/run.py with SHMAPI set; needs NumPy (re-runs itself under
/usr/bin/python3 when the current interpreter has none).
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, shmapi_under_test  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_compare"))
import compare  # noqa: E402  (tests/print/_compare/compare.py: the array generator)

SEED = 20250611
COUNT = 2400          # random arrays, on top of compare.fixed_arrays()
BATCHES = 6
SHOW = 5
MARK = "@@@"

DTNAME = {np.dtype(np.bool_): "bool", np.dtype(np.int32): "i32",
          np.dtype(np.int64): "i64", np.dtype(np.float32): "f32",
          np.dtype(np.float64): "f64"}


def elem_text(x, dt):
    """One element as a shm literal that reads back as exactly x."""
    if dt == np.bool_:
        return "True" if x else "False"
    if dt in (np.int32, np.int64):
        return str(int(x))
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    s = repr(np.float32(x)) if dt == np.float32 else repr(float(x))
    if s.startswith("np.float32("):         # NumPy 2 spells repr this way
        s = s[len("np.float32("):-1]
    return s


def nested_text(a):
    dt = a.dtype.type
    if a.ndim == 0:
        return elem_text(a[()], dt)
    flat = [elem_text(x, dt) for x in a.reshape(-1).tolist()] if dt != np.float32 \
        else [elem_text(x, dt) for x in a.reshape(-1)]

    def build(shape, off):
        if len(shape) == 1:
            return "[" + ", ".join(flat[off:off + shape[0]]) + "]"
        step = int(np.prod(shape[1:]))
        return "[" + ", ".join(build(shape[1:], off + i * step) for i in range(shape[0])) + "]"
    return build(a.shape, 0)


def type_text(a):
    return "%s[%s]" % (DTNAME[a.dtype], ",".join(str(d) for d in a.shape))


def statements(k, a):
    """shm statements binding the array to a<k> and printing it between marks."""
    name = "a%d" % k
    out = ['print "%s%d"' % (MARK, k)]
    if a.size == 0:
        out.append("t%d:%s[0] = []" % (k, DTNAME[a.dtype]))
        out.append("%s:%s = reshape[new_sizes=(%s), dimensions=None] t%d"
                   % (name, type_text(a), "".join("%d," % d for d in a.shape), k))
    else:
        out.append("%s:%s = %s" % (name, type_text(a), nested_text(a)))
    out.append("print %s" % name)
    return out


def run_batch(shmapi, items, tmpdir, b):
    path = os.path.join(tmpdir, "batch%d.shm" % b)
    with open(path, "w") as f:
        for k, a in items:
            f.write("\n".join(statements(k, a)) + "\n")
    proc = subprocess.run([shmapi, path], capture_output=True, text=True,
                          env=dict(os.environ, LC_ALL="C"))
    if proc.returncode != 0:
        print("batch %d: shmapi exited with status %d" % (b, proc.returncode))
        print(proc.stderr[:3000])
        return None
    got = {}
    cur, lines = None, []
    for line in proc.stdout.split("\n"):
        if line.startswith(MARK):
            if cur is not None:
                got[cur] = "\n".join(lines)
            cur, lines = int(line[len(MARK):]), []
        else:
            lines.append(line)
    if cur is not None:
        if lines and lines[-1] == "":
            lines.pop()
        got[cur] = "\n".join(lines)
    return got


def main():
    shmapi = shmapi_under_test()
    arrays = compare.fixed_arrays() + compare.generate_arrays(SEED, COUNT)
    arrays = [a for a in arrays if a.dtype in DTNAME]
    items = list(enumerate(arrays))
    bad = 0
    failed_batches = 0
    with tempfile.TemporaryDirectory() as tmpdir:
        for b in range(BATCHES):
            part = items[b::BATCHES]
            got = run_batch(shmapi, part, tmpdir, b)
            if got is None:
                failed_batches += 1
                continue
            for k, a in part:
                want = str(a)
                out = got.get(k)
                if out != want:
                    bad += 1
                    if bad <= SHOW:
                        print("MISMATCH #%d (a%d): %s" % (bad, k, compare.describe(a)))
                        print("--- numpy (%d bytes)" % len(want))
                        print(want)
                        print("--- shmapi (%s)" % ("missing" if out is None else "%d bytes" % len(out)))
                        print(out)
                        print()
    big = sum(1 for a in arrays if a.size > 1000)
    empty = sum(1 for a in arrays if a.size == 0)
    print("%d arrays (%d summarised, %d empty, by dtype %s): %d mismatched, %d batches failed"
          % (len(arrays), big, empty,
             {n: sum(1 for a in arrays if DTNAME[a.dtype] == n) for n in DTNAME.values()},
             bad, failed_batches))
    return 1 if bad or failed_batches else 0


if __name__ == "__main__":
    sys.exit(main())
