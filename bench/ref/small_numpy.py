"""The NumPy model of bench/workloads/small_eqns.shm: what a user would
write instead of shmapi.

Per-device blocks live in a Python list (one f32[16] array per device of
the 8-device mesh); local primitives are applied to each device's block;
collectives follow the reference semantics of JAX's shard_map tutorial
(seed 002, its section on collectives):

    def psum_ref(_, x_blocks):
        tot = sum(x_blocks)
        return [tot] * len(x_blocks)

pbroadcast moves nothing (the same block for every device).

Usage: small_numpy.py [ITERATIONS]   (default 10000, 10 equations each)
Prints "time SECONDS" (the loop alone, numpy already imported and the
input built) and then the final array as NumPy's str() prints it.
"""
import sys
import time

import numpy as np

NDEV = 8


def psum_ref(_, x_blocks):
    tot = sum(x_blocks)
    return [tot] * len(x_blocks)


def pbroadcast_ref(_, x_blocks):
    return list(x_blocks)


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    f32 = np.float32
    x = np.arange(128, dtype=f32)
    c = [x[k * 16:(k + 1) * 16].copy() for k in range(NDEV)]
    half, one, eighth = f32(0.5), f32(1.0), f32(0.125)
    three_q, quarter, neg_half = f32(0.75), f32(0.25), f32(-0.5)
    t0 = time.perf_counter()
    for _ in range(iters):
        a = [ci * half for ci in c]
        b = [ai + one for ai in a]
        d = psum_ref('i', b)
        e = [di * eighth for di in d]
        e1 = pbroadcast_ref('i', e)
        g = [ci - ei for ci, ei in zip(c, e1)]
        h = [np.tanh(gi) for gi in g]
        p = [hi * three_q for hi in h]
        q = [pi + quarter for pi in p]
        c = [np.maximum(qi, neg_half) for qi in q]
    t1 = time.perf_counter()
    print(f"time {t1 - t0:.9f}")
    print(np.concatenate(c))


if __name__ == "__main__":
    main()
