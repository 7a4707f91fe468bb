#!/usr/bin/env python3
# timeout: 300
"""Splitting a dying operand in place (src/run/split.c, carve): random
shard_maps over arrays of 1 MiB and more, whose operand dies at the call,
against NumPy.

Each case: a random mesh (1 to 3 axes of sizes 2 to 4), an array of rank
1 to 3 and a random dtype made from arange (so every element says where
it came from), a random in_spec (an axis, a tuple of axes or None per
dimension, trailing dimensions omitted), and a body whose results are
laid out by the same spec: the block doubled (an elementwise equation
over all blocks at once, which reads carved blocks as one run of
elements), the block itself, and the block's sum per device gathered
along the mesh (out_spec P(axes...) over a new leading dimension).
Specs where a row band of blocks is in block order are split in place;
the others (a dimension other than the first split first, the mesh's axes
in another order, replication) are split by copying -- both must give
NumPy's blocks.  Each result is saved and compared bit for bit.

Run by tests/run.py with SHMAPI set; needs NumPy.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, run_lines, shmapi_under_test  # noqa: E402

SEED = int(os.environ.get("SHM_CARVE_SEED", "20261126"))
CASES = int(os.environ.get("SHM_CARVE_N", "400"))     # SHM_CARVE_SEED picks another seed
AXES = "ijk"
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i8": np.int8, "u16": np.uint16}


def spec_text(spec):
    parts = []
    for s in spec:
        if not s:
            parts.append("None")
        elif len(s) == 1:
            parts.append(s[0])
        else:
            parts.append("(" + ", ".join(s) + ")")
    while parts and parts[-1] == "None":
        parts.pop()
    return "P(" + ", ".join(parts) + ")"


def make_case(rng):
    naxes = int(rng.integers(1, 4))
    sizes = [int(rng.integers(2, 5)) for _ in range(naxes)]
    names = list(AXES[:naxes])
    rank = int(rng.integers(1, 4))
    # each mesh axis goes to a dimension or nowhere (replicated there)
    spec = [[] for _ in range(rank)]
    for a in rng.permutation(naxes):
        d = int(rng.integers(-1, rank))
        if d >= 0:
            spec[d].append(names[a])
    if rng.random() < 0.5:        # the usual order: mesh axes in mesh order within a dimension
        spec = [sorted(s) for s in spec]
    dt = str(rng.choice(list(DTYPES)))
    es = np.dtype(DTYPES[dt]).itemsize
    # the shape: each dimension a multiple of its split, the whole >= 1 MiB
    split = [int(np.prod([sizes[names.index(a)] for a in s])) if s else 1 for s in spec]
    target = (1 << 20) // es + int(rng.integers(0, 1 << 18))
    shape = [split[d] * int(rng.integers(1, 4)) for d in range(rank)]
    n = int(np.prod(shape))
    if n < target:              # a dimension scaled up (still a multiple of its split)
        shape[int(rng.integers(0, rank))] *= -(-target // n)
    return dict(names=names, sizes=sizes, spec=spec, dt=dt, shape=shape)


def program(i, c):
    mesh = ", ".join("%s: %d" % (a, s) for a, s in zip(c["names"], c["sizes"]))
    n = int(np.prod(c["shape"]))
    shape = ", ".join(map(str, c["shape"]))
    sp = spec_text(c["spec"])
    allaxes = "(" + ", ".join(c["names"]) + ")" if len(c["names"]) > 1 else c["names"][0]
    red = "(" + ", ".join(str(d) for d in range(len(c["shape"]))) + ",)"
    return [
        "mesh m%d = {%s}" % (i, mesh),
        "a%d = arange[stop=%d, dtype=%s]" % (i, n, c["dt"]),
        "x%d = reshape[new_sizes=(%s,)] a%d" % (i, shape, i),
        "@shard_map[mesh=m%d, in_specs=%s, out_specs=(%s, %s, P(%s))]" % (i, sp, sp, sp, allaxes),
        "def f%d(b) {" % i,
        "  d = add b b",
        "  s = reduce_sum[axes=%s] b" % red,
        "  t = convert_element_type[new_dtype=f64] s",
        "  u = broadcast_in_dim[shape=(1,), broadcast_dimensions=()] t",
        "  return d, b, u",
        "}",
        "y%d, z%d, w%d = f%d x%d" % (i, i, i, i, i),
        'save "y%d.npy" y%d' % (i, i),
        'save "z%d.npy" z%d' % (i, i),
        'save "w%d.npy" w%d' % (i, i),
    ]


def expected(c):
    t = DTYPES[c["dt"]]
    x = np.arange(int(np.prod(c["shape"])), dtype=np.int64).astype(t).reshape(c["shape"])
    with np.errstate(over="ignore"):
        y = (x + x).astype(t)
    # the per-device sums, devices in row-major mesh order
    names, sizes, spec = c["names"], c["sizes"], c["spec"]
    sums = []
    for dev in np.ndindex(*sizes):
        idx = []
        for d, s in enumerate(spec):
            k, count = 0, 1
            for a in s:                      # the first listed axis is major
                k = k * sizes[names.index(a)] + dev[names.index(a)]
                count *= sizes[names.index(a)]
            step = c["shape"][d] // count
            idx.append(slice(k * step, (k + 1) * step))
        blk = x[tuple(idx)]
        with np.errstate(over="ignore"):
            # shm's reduce_sum of ints wraps in the dtype; of floats, f32 sums in f64 and rounds once
            if t == np.float32:
                s = np.float64(np.float32(blk.astype(np.float64).sum()))
            elif t == np.float64:
                s = np.float64(blk.sum())        # integers: exact
            else:
                s = np.float64(blk.astype(np.int64).sum().astype(t))
        sums.append(s)
    return x, y, sums


def in_place(c):
    """Whether split.c carve splits this case in place: the first dimension is
    split by the leading ones, in mesh order, of the mesh axes the spec
    names (blocks are numbered over those, the first mesh axis major), so
    that each row band of blocks is consecutive in block order."""
    names, spec = c["names"], c["spec"]
    used = [a for a in names if any(a in s for s in spec)]
    return bool(spec[0]) and spec[0] == used[:len(spec[0])]


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    cases = [make_case(rng) for _ in range(CASES)]
    bad = []
    carved = 0
    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, CASES, 20):
            chunk = range(start, min(CASES, start + 20))
            lines = []
            for i in chunk:
                lines += program(i, cases[i])
            if run_lines(shmapi, tmp, lines) is None:
                return 1
            for i in chunk:
                c = cases[i]
                x, y, sums = expected(c)
                what = "case %d: %s %s by %s on {%s}" % (i, c["dt"], c["shape"], spec_text(c["spec"]), ", ".join(
                    "%s: %d" % p for p in zip(c["names"], c["sizes"])))
                got_y = np.load(os.path.join(tmp, "y%d.npy" % i))
                got_z = np.load(os.path.join(tmp, "z%d.npy" % i))
                got_w = np.load(os.path.join(tmp, "w%d.npy" % i))
                if got_z.dtype != x.dtype or got_z.shape != x.shape or got_z.tobytes() != x.tobytes():
                    bad.append("%s: the blocks put back together differ from the array" % what)
                if got_y.tobytes() != y.tobytes():
                    bad.append("%s: the doubled blocks differ" % what)
                if list(got_w.reshape(-1)) != sums:
                    bad.append("%s: per-device sums %s, want %s" % (what, list(got_w.reshape(-1))[:8], sums[:8]))
                carved += in_place(c)
    for m in bad[:8]:
        print(m)
    print("%d random splits of arrays of 1 MiB and more (%d of them in place): %d problems" % (CASES, carved, len(bad)))
    if carved < CASES // 5:
        print("too few splits in place (%d): the generator no longer exercises split.c carve" % carved)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
