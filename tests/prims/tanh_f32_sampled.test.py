#!/usr/bin/python3
"""f32 tanh (src/rules/ew.c tanh_f32) must give, for every float, exactly
(float)tanh((double)x) with the C library's tanh, as it did before its
fast path: checked here on 2^21 float bit patterns spread over all 2^32
(every sign and exponent, NaNs and infinities included), in one big array
(split over two threads, and on x86-64 the AVX2 copy of the loop where the
CPU has it) and in blocks of 16 inside a shard_map (the one-thread path).  tests/eval/tanh_f32_exact.shm holds the inputs
where the fast path cannot decide the rounding.
The reference is Python's math.tanh, which is the C library's.

Run by tests/run.py with SHMAPI set; needs NumPy.
"""

import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

N = 1 << 21
bits = (np.arange(N, dtype=np.uint64) * 2048 + 1029).astype(np.uint32)
x = bits.view(np.float32)
with np.errstate(invalid="ignore"):
    want = np.array([math.tanh(v) for v in x.astype(np.float64).tolist()]).astype(np.float32)

shm = os.environ.get("SHMAPI") or sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    np.save(os.path.join(d, "x.npy"), x)
    prog = os.path.join(d, "t.shm")
    with open(prog, "w") as f:
        f.write("""mesh m = {i: 8}
x = load "x.npy"
y = tanh x
save "y.npy" y
xs = slice[start_indices=(0,), limit_indices=(4096,)] x
@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]
def f(b) {
  c = reshape[new_sizes=(32, 16)] b
  t = tanh c
  r = reshape[new_sizes=(512,)] t
  return r
}
z = f xs
save "z.npy" z
""")
    r = subprocess.run([shm, prog], capture_output=True, text=True, timeout=300)
    if r.returncode:
        print(f"shmapi exited {r.returncode}:\n{r.stderr}")
        sys.exit(1)
    y = np.load(os.path.join(d, "y.npy"))
    z = np.load(os.path.join(d, "z.npy"))

bad = 0
for name, got, ref in (("big array", y, want), ("blocks of 16", z, want[:4096])):
    diff = got.view(np.uint32) != ref.view(np.uint32)
    diff &= ~(np.isnan(got) & np.isnan(ref))
    n = int(diff.sum())
    bad += n
    print(f"{name}: {n} of {got.size} differ from (float)tanh((double)x)")
    for i in np.flatnonzero(diff)[:5]:
        print(f"  x = {float(x[i]).hex()}: got {float(got[i]).hex()}, want {float(ref[i]).hex()}")
sys.exit(1 if bad else 0)
