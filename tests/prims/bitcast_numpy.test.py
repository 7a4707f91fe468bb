#!/usr/bin/python3
"""bitcast_convert_type between every pair of dtypes, against NumPy's .view().

For every ordered pair of the dtypes bool, i8, i16, i32, i64, u8, u16, u32,
u64, bf16, f16, f32, f64, c64 and c128 whose bitcast shmapi accepts (all
but a non-bool to bool: JAX refuses bool and complex unless the two dtypes
match; shmapi refuses only what would make a bool that is neither 0 nor 1),
NumPy writes operands of random shapes and random bytes (so NaNs with
payloads, signaling NaNs, negative zeros, subnormals and infinities among
the floats; bools are 0 or 1), and one shm program loads each, bitcasts it
with JAX's shape rule

    same width:  the same shape
    narrower:    a trailing dimension of the ratio of the widths is added
    wider:       the last dimension must be that ratio, and is taken away

(the new_dtype spelled as shm or as JAX prints it: u32 or uint32), bitcasts
the result back (a bool operand: to u8, then `ne 0`), prints it and saves
both.  The saved result must have NumPy's dtype (bf16 as '<V2') and the
shape of the rule, and its bytes must be the operand's bytes (np.ndarray.view of the operand, NaN payloads
included); the round trip must give the operand's bytes back; and what
print shows must be NumPy's str() of the view (bf16 results are not printed
here: NumPy has no bfloat16 without ml_dtypes).
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, run_lines, shmapi_under_test  # noqa: E402

SEED = 20261126
MARK = "@@@"

DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bf16", "f16", "f32", "f64", "c64",
          "c128"]
JAXNAME = {"bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
           "u16": "uint16", "u32": "uint32", "u64": "uint64", "bf16": "bfloat16", "f16": "float16",
           "f32": "float32", "f64": "float64", "c64": "complex64", "c128": "complex128"}
NP = {"bool": "?", "i8": "<i1", "i16": "<i2", "i32": "<i4", "i64": "<i8", "u8": "<u1", "u16": "<u2",
      "u32": "<u4", "u64": "<u8", "bf16": "V2", "f16": "<f2", "f32": "<f4", "f64": "<f8", "c64": "<c8",
      "c128": "<c16"}
WIDTH = {k: np.dtype(v).itemsize for k, v in NP.items()}


def allowed(src, dst):
    return src == dst or dst != "bool"


def random_shape(rng, src, dst):
    rank = int(rng.integers(0, 4))
    shape = [int(rng.integers(1, 5)) for _ in range(rank)]
    if WIDTH[src] < WIDTH[dst]:
        if not shape:
            shape = [1]
        shape[-1] = WIDTH[dst] // WIDTH[src]
    return tuple(shape)


def special_bytes(dt):
    """Bit patterns worth having: NaNs with payloads, signaling NaNs, -0, infinities, subnormals."""
    pats = {
        "f16": [0x7C01, 0xFE00, 0x7DFF, 0x8000, 0x7C00, 0x0001, 0xFC00],
        "bf16": [0x7F81, 0xFFC1, 0x7FA0, 0x8000, 0x7F80, 0x0001, 0xFF80],
        "f32": [0x7F800001, 0xFFC00001, 0x7FA12345, 0x80000000, 0x7F800000, 0x00000001, 0xFF800000],
        "f64": [0x7FF0000000000001, 0xFFF8000000000001, 0x7FF4000012345678, 0x8000000000000000,
                0x7FF0000000000000, 0x0000000000000001],
    }
    base = {"c64": "f32", "c128": "f64"}.get(dt, dt)
    if base not in pats:
        return None
    w = WIDTH[base]
    return np.array(pats[base], dtype="<u%d" % w).view(np.uint8).reshape(-1, w)


def random_operand(rng, src, shape):
    n = int(np.prod(shape, dtype=np.int64))
    if src == "bool":
        raw = rng.integers(0, 2, n).astype(np.uint8)
    else:
        raw = rng.integers(0, 256, n * WIDTH[src]).astype(np.uint8).reshape(n, WIDTH[src])
        sp = special_bytes(src)
        if sp is not None and n:
            w = sp.shape[1]
            lanes = raw.reshape(-1, w)
            pick = rng.random(len(lanes)) < 0.4
            lanes[pick] = sp[rng.integers(0, len(sp), int(pick.sum()))]
            raw = lanes.reshape(n, WIDTH[src])
    return raw.reshape(-1).view(NP[src]).reshape(shape)


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    cases = []
    for src in DTYPES:
        for dst in DTYPES:
            if not allowed(src, dst):
                continue
            for _ in range(2):
                shape = random_shape(rng, src, dst)
                x = random_operand(rng, src, shape)
                want = x.reshape(-1).view(NP[dst])
                if WIDTH[src] > WIDTH[dst]:
                    wshape = shape + (WIDTH[src] // WIDTH[dst],)
                elif WIDTH[src] < WIDTH[dst]:
                    wshape = shape[:-1]
                else:
                    wshape = shape
                cases.append(dict(src=src, dst=dst, x=x, want=want.reshape(wshape),
                                  name=JAXNAME[dst] if rng.random() < 0.5 else dst,
                                  back=JAXNAME[src] if rng.random() < 0.5 else src))
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        lines = []
        for i, c in enumerate(cases):
            np.save(os.path.join(tmp, "x%d.npy" % i), c["x"])
            # the way back to bool is refused: a bool operand comes back as u8, compared with 0
            back = "u8" if c["src"] == "bool" and c["dst"] != "bool" else c["back"]
            lines += ['x%d = load "x%d.npy"' % (i, i),
                      "y%d = bitcast_convert_type[new_dtype=%s] x%d" % (i, c["name"], i),
                      "z%d = bitcast_convert_type[new_dtype=%s] y%d" % (i, back, i),
                      'save "y%d.npy" y%d' % (i, i),
                      'save "z%d.npy" z%d' % (i, i)]
            if back != c["back"]:
                lines[-1:] = ["zb%d = ne z%d 0" % (i, i), 'save "z%d.npy" zb%d' % (i, i)]
            if c["dst"] != "bf16":
                lines += ['print "%s%d"' % (MARK, i), "print y%d" % i]
        out = run_lines(shmapi, tmp, lines)
        if out is None:
            return 1
        printed = {}
        for block in out.split(MARK)[1:]:
            k, _, text = block.partition("\n")
            printed[int(k)] = text.rstrip("\n")
        for i, c in enumerate(cases):
            what = "%s%s -> %s (new_dtype=%s)" % (c["src"], list(c["x"].shape), c["dst"], c["name"])
            y = np.load(os.path.join(tmp, "y%d.npy" % i))
            z = np.load(os.path.join(tmp, "z%d.npy" % i))
            w = c["want"]
            if y.dtype != w.dtype or y.shape != w.shape:
                bad.append("%s: the result is %s%s, NumPy's view is %s%s" % (what, y.dtype, y.shape, w.dtype,
                                                                             w.shape))
                continue
            if y.tobytes() != w.tobytes():
                bad.append("%s: the bytes differ\n  operand %s\n  result  %s" % (what, c["x"].tobytes().hex(),
                                                                                y.tobytes().hex()))
            if z.dtype != c["x"].dtype or z.shape != c["x"].shape or z.tobytes() != c["x"].tobytes():
                bad.append("%s: bitcast back to %s gives %s%s %s, not the operand's %s" % (
                    what, c["src"], z.dtype, z.shape, z.tobytes().hex(), c["x"].tobytes().hex()))
            if c["dst"] != "bf16":
                with np.errstate(all="ignore"):
                    ref = str(w) if w.ndim else str(w[()])
                if printed.get(i) != ref:
                    bad.append("%s: print shows\n%s\nNumPy shows\n%s" % (what, printed.get(i), ref))
    for m in bad[:8]:
        print(m)
        print()
    print("%d bitcasts between %d dtypes against NumPy's view: %d problems" % (len(cases), len(DTYPES), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
