"""The NumPy model of bench/workloads/embedding.shm: what a user would
write instead of shmapi.  The same table and ids; the lookup is np.take
of rows, the accumulation np.add.at into a copy of the table (shmapi's
scatter-add, like JAX's, leaves its operand as it was and makes a new
array).

Prints "gather SECONDS", "scatter_add SECONDS", then the checks the
workload prints: the sum of the rows, the sum of the accumulated table
(both as float32 sums), and row 7919's first four entries.
"""
import time

import numpy as np


def main():
    table = (np.arange(25600000, dtype=np.float32) * np.float32(0.0001)).reshape(50000, 512)
    ids = (np.arange(65536, dtype=np.int32) * 7919) % 50000
    t0 = time.perf_counter()
    rows = np.take(table, ids, axis=0)
    t1 = time.perf_counter()
    acc = table.copy()
    np.add.at(acc, ids, rows)
    t2 = time.perf_counter()
    print(f"gather {t1 - t0:.6f}")
    print(f"scatter_add {t2 - t1:.6f}")
    print(rows.sum(dtype=np.float32))
    print(acc.sum(dtype=np.float32))
    print(acc[7919:7920, :4])


if __name__ == "__main__":
    main()
