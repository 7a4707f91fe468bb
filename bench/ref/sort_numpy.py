"""The NumPy reference of bench/workloads/sort_f32.shm: np.sort of the same
f32 values (a multiplicative hash of the index, as f32, centred).

Usage: sort_numpy.py [N]   (default 16777216)
Prints "time SECONDS" (np.sort alone, the input built) and then the
elements 0-2, N/2-1 .. N/2+1 and N-3 .. N-1 of the result, as NumPy's
str() prints them.
"""
import sys
import time

import numpy as np


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16777216
    i = np.arange(n, dtype=np.uint32)
    x = (i * np.uint32(2654435761)).astype(np.float32) - np.float32(2147483648.0)
    t0 = time.perf_counter()
    s = np.sort(x)
    t1 = time.perf_counter()
    print("time %.6f" % (t1 - t0))
    print(np.concatenate([s[:3], s[n // 2 - 1:n // 2 + 2], s[n - 3:]]))


if __name__ == "__main__":
    main()
