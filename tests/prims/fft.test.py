#!/usr/bin/python3
"""The fft primitive against NumPy's FFTs, on random shapes and lengths.

Each case draws a transform (FFT, IFFT, RFFT, IRFFT), a precision (f32/c64
or f64/c128), 1 to 3 transformed dimensions of lengths that are powers of
two, primes and products (1 to 17, 32), and 0 to 2 batch dimensions in
front.  One program loads every input, transforms it and saves the result;
each result is compared with np.fft (fftn, ifftn, rfftn, irfftn over the
trailing axes) within a tolerance scaled to the precision.  IRFFT inputs
are half-spectra of real arrays (what irfftn inverts).  The program runs
twice and must write the same bytes.  fft_type is spelt in each way JAX
has printed it.

    SHMAPI=build/shmapi python3 tests/prims/fft.test.py [--seed N] [--count N]
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 32]
SPELLINGS = {
    "FFT": ["FFT", "FftType.FFT", "jaxlib.xla_extension.FftType.FFT", "0"],
    "IFFT": ["IFFT", "FftType.IFFT", "jaxlib.xla_extension.FftType.IFFT", "1"],
    "RFFT": ["RFFT", "FftType.RFFT", "jax._src.lax.fft.FftType.RFFT", "2"],
    "IRFFT": ["IRFFT", "FftType.IRFFT", "xla_client.FftType.IRFFT", "3"],
}


def case(rng, i):
    kind = ["FFT", "IFFT", "RFFT", "IRFFT"][rng.integers(4)]
    double = bool(rng.integers(2))
    k = int(rng.integers(1, 4))
    lens = [int(rng.choice(LENGTHS)) for _ in range(k)]
    if k == 3:                       # keep 3-D cases small
        lens = [min(n, 9) for n in lens]
    batch = [int(rng.integers(1, 4)) for _ in range(rng.integers(0, 3))]
    axes = tuple(range(len(batch), len(batch) + k))
    real = rng.standard_normal(batch + lens)
    if kind == "RFFT":
        x = real.astype(np.float64 if double else np.float32)
        want = np.fft.rfftn(x.astype(np.float64), axes=axes)
    elif kind == "IRFFT":
        x = np.fft.rfftn(real, axes=axes).astype(np.complex128 if double else np.complex64)
        want = np.fft.irfftn(x.astype(np.complex128), s=lens, axes=axes)
    else:
        x = (real + 1j * rng.standard_normal(batch + lens)).astype(np.complex128 if double else np.complex64)
        want = (np.fft.fftn if kind == "FFT" else np.fft.ifftn)(x.astype(np.complex128), axes=axes)
    out_dt = {"RFFT": np.complex128 if double else np.complex64, "IRFFT": np.float64 if double else np.float32}
    want = want.astype(out_dt.get(kind, x.dtype))
    spelling = SPELLINGS[kind][rng.integers(4)]
    stmt = "y%d = fft[fft_type=%s, fft_lengths=(%s)] x%d" % (i, spelling, "".join("%d, " % n for n in lens), i)
    tol = 1e-12 if double else 2e-5
    return x, want, stmt, tol, "%s %s lengths %s batch %s" % (kind, x.dtype, lens, batch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=400)
    args = ap.parse_args()
    shmapi = os.environ["SHMAPI"]
    rng = np.random.default_rng(args.seed)
    cases = [case(rng, i) for i in range(args.count)]
    with tempfile.TemporaryDirectory() as tmp:
        lines = []
        for i, (x, _, stmt, _, _) in enumerate(cases):
            np.save(os.path.join(tmp, "x%d.npy" % i), x)
            lines += ['x%d = load "x%d.npy"' % (i, i), stmt, 'save "y%d.npy" y%d' % (i, i)]
        prog = os.path.join(tmp, "prog.shm")
        with open(prog, "w") as f:
            f.write("\n".join(lines) + "\n")
        outs = []
        for run in range(2):
            p = subprocess.run([shmapi, prog], capture_output=True, text=True)
            if p.returncode:
                print("shmapi failed:\n" + p.stderr[:3000])
                return 1
            outs.append([open(os.path.join(tmp, "y%d.npy" % i), "rb").read() for i in range(len(cases))])
        bad = 0
        for i, (x, want, stmt, tol, what) in enumerate(cases):
            got = np.load(os.path.join(tmp, "y%d.npy" % i))
            scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
            ok = got.dtype == want.dtype and got.shape == want.shape and \
                bool(np.all(np.abs(got.astype(np.complex128) - want) <= tol * scale * 8))
            if not ok:
                bad += 1
                if bad <= 3:
                    print("case %d (%s): %s\n got %r\nwant %r" % (i, what, stmt, got, want))
            if outs[0][i] != outs[1][i]:
                bad += 1
                print("case %d (%s): two runs wrote different bytes" % (i, what))
    print("%d fft cases (seed %d) against NumPy: %d wrong" % (len(cases), args.seed, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
