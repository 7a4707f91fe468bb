"""Running random programs in batches, for the tests that generate them
(tests/transpose/adjoint.test.py, tests/autodiff/derivatives.test.py).

Each program prints one line `TAG <k> <number>...`; a batch is many
programs in one shmapi run.  A batch that fails to run is run again
program by program, to name the culprit.  Python standard library only.
"""

import concurrent.futures
import os
import subprocess
import tempfile


def run_text(shmapi, text, timeout):
    """Run shm text with shmapi; the CompletedProcess."""
    with tempfile.NamedTemporaryFile('w', suffix='.shm', delete=False) as fh:
        fh.write(text)
        path = fh.name
    try:
        env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
        return subprocess.run([shmapi, path], capture_output=True, text=True, timeout=timeout, env=env)
    finally:
        os.unlink(path)


def parse(out, tag, count):
    """{k: (count numbers)} from the lines `TAG k n1 n2 ...` of out."""
    res = {}
    for line in out.splitlines():
        if line.startswith(tag + ' '):
            parts = line.split()
            try:
                res[int(parts[1])] = tuple(float(x) for x in parts[2:2 + count])
            except (ValueError, IndexError):
                pass
    return res


def run_batch(shmapi, progs, tag, count, judge, timeout):
    """[(program, message)] for the programs of a batch that fail; judge(p,
    numbers or None) gives None or a message.  A program has .k and .text."""
    r = run_text(shmapi, ''.join(p.text for p in progs), timeout)
    if r.returncode == 0:
        vals = parse(r.stdout, tag, count)
        bad = [(p, judge(p, vals.get(p.k))) for p in progs]
        return [(p, m) for p, m in bad if m]
    bad = []
    for p in progs:
        r1 = run_text(shmapi, p.text, timeout)
        if r1.returncode != 0:
            bad.append((p, 'shmapi exited %d:\n%s' % (r1.returncode, r1.stderr[-3000:])))
        else:
            m = judge(p, parse(r1.stdout, tag, count).get(p.k))
            if m:
                bad.append((p, m))
    if not bad:
        bad.append((progs[0], 'the batch failed (%d) but every program passes alone:\n%s'
                    % (r.returncode, r.stderr[-3000:])))
    return bad


def run_all(shmapi, progs, tag, count, judge, timeout, batch):
    """Run the programs in batches of `batch` on a few threads; print each
    failure (the source of the first five); the list of failures."""
    batches = [progs[i:i + batch] for i in range(0, len(progs), batch)]
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool:
        for bad in pool.map(lambda b: run_batch(shmapi, b, tag, count, judge, timeout), batches):
            failures.extend(bad)
    for n, (p, msg) in enumerate(failures):
        print('FAIL program %d (%s): %s' % (p.k, p.desc, msg))
        if n < 5:
            print('--- program %d:' % p.k)
            print(p.text)
    return failures
