#!/usr/bin/env python3
# timeout: 1500
"""Programs run on several processes print the bytes of the one-process run.

Runs each program once in one process and again under
`mpirun -np R` (R = 2 and 4; --oversubscribe, and --allow-run-as-root as
root), and compares: standard output byte for byte, standard error byte for
byte, and the exit status (0 with 0, failure with failure).  The one
difference allowed is the line `--stats` adds under ranks ("across R ranks,
... crossed between them"), which is taken out before comparing.

The programs: every example of examples/ and examples/parallel/, the golden tests of tests/spmd/,
tests/control/, tests/pmap/, tests/xmap/, tests/print/ and tests/visualize/ that run a mesh (those that pass, and those that
fail at run time), and batches of the random programs of the differential test
(tests/spmd/differential.test.py: its generators, with a fixed seed), which
put many meshes, specs, collectives and branches into each run.  The
examples run under 2 and 4 ranks, the golden tests under 4 (most of their
meshes have 4 to 8 devices, so groups span ranks), the random batches under
2 and 4.

Skips (exit 77) when mpirun is not on PATH, or when SHMAPI was built
without MPI (it says so); .ci/setup installs Open MPI, so CI runs it.

    SHMAPI=build/shmapi python3 tests/mpi/ranks.test.py [--count N] [--seed N] [--only FILE...]
"""

import argparse
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATS_LINE = re.compile(rb'^across \d+ ranks, .* crossed between them\n', re.M)


def mpirun_cmd(np_):
    cmd = ['mpirun', '-np', str(np_), '--quiet', '--oversubscribe', '--bind-to', 'none']
    if os.geteuid() == 0:
        cmd.append('--allow-run-as-root')
    return cmd


def env(mpi):
    e = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    # one machine: shared memory between the ranks, no network probing
    e.setdefault('OMPI_MCA_btl', 'self,vader')
    e.setdefault('OMPI_MCA_pml', 'ob1')
    if mpi:
        # Under the sanitizers Open MPI's plugins leave allocations that
        # LeakSanitizer cannot name (their modules are unloaded by exit):
        # leaks are checked by shmapi itself instead, which with
        # SHMAPI_FAIL_ALLOC=0 (no failure injected) exits 3 unless every
        # byte it allocated was released.
        e['ASAN_OPTIONS'] = (e.get('ASAN_OPTIONS', '') + ':detect_leaks=0').lstrip(':')
    e['SHMAPI_FAIL_ALLOC'] = '0'
    return e


def run(cmd, timeout):
    e = env(cmd[0] == 'mpirun')
    with tempfile.TemporaryDirectory(prefix='shm-orte-') as session:
        # each mpirun its own session directory: two at once under one
        # /tmp/ompi.HOST.UID can fail when one removes it as the other
        # starts (ORTE_ERROR_LOG ... session_dir.c)
        if cmd[0] == 'mpirun':
            e['OMPI_MCA_orte_tmpdir_base'] = session
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           env=e, timeout=timeout, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def directives(path):
    """The program's extra arguments (# args:); None for tests this
    comparison cannot run (stdin transcripts, whole argument lists)."""
    args = []
    with open(path, errors='replace') as f:
        for line in f:
            m = re.match(r'#\s*(args|argv|stdin):\s*(.*)', line)
            if not m:
                continue
            if m.group(1) != 'args' or '{file}' in m.group(2):
                return None
            args += m.group(2).split()
    return args


def runs_a_mesh(shmapi, path):
    """Whether a golden test runs a shard_map (a program without a mesh,
    or one the checker rejects, runs the same on every rank: a few of
    those are enough, and the examples have them)."""
    with open(path, errors='replace') as f:
        text = f.read()
        if not any(w in text for w in ('mesh', 'pmap', 'xmap')):
            return False
    args = directives(path)
    return args is not None and run([shmapi, '--check'] + args + [os.path.relpath(path, ROOT)], 60)[0] == 0


def compare(shmapi, path, args, ranks, scale):
    """Problems with `path` under each of `ranks` (a list of strings)."""
    rel = os.path.relpath(path, ROOT)
    want = run([shmapi] + args + [rel], 120 * scale)
    probs = []
    for r in ranks:
        try:
            got = run(mpirun_cmd(r) + [shmapi] + args + [rel], 240 * scale)
        except subprocess.TimeoutExpired:
            probs.append('%s under %d ranks: timed out' % (rel, r))
            continue
        out = STATS_LINE.sub(b'', got[1])
        what = []
        if out != want[1]:
            what.append('stdout differs')
        if got[2] != want[2]:
            what.append('stderr differs')
        if (got[0] == 0) != (want[0] == 0):
            what.append('exit status %d, in one process %d' % (got[0], want[0]))
        if what:
            probs.append('%s under %d ranks: %s' % (rel, r, ', '.join(what)))
            for name, a, b in (('stdout', want[1], out), ('stderr', want[2], got[2])):
                if a != b:
                    probs.append(first_difference(name, a, b))
    return probs


def first_difference(name, a, b):
    al, bl = a.decode(errors='replace').split('\n'), b.decode(errors='replace').split('\n')
    for i in range(max(len(al), len(bl))):
        x = al[i] if i < len(al) else '<end>'
        y = bl[i] if i < len(bl) else '<end>'
        if x != y:
            return '  %s line %d: one process %r, ranks %r' % (name, i + 1, x, y)
    return '  %s: same lines, different bytes' % name


def random_batches(tmpdir, seed, count, batch):
    """Files of random programs from the differential test's generators."""
    spec = importlib.util.spec_from_file_location(
        'differential', os.path.join(ROOT, 'tests', 'spmd', 'differential.test.py'))
    d = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(d)
    rng = d.random.Random(seed)
    progs, rejects, uid = [], [], 0
    while len(progs) < count:
        uid += 1
        g = d.CtlGen(rng, uid) if rng.random() < d.CTL_FRACTION else d.Gen(rng, uid)
        r = g.program()
        if r is not None:
            progs.append(r[0])
    while len(rejects) < max(1, count // 20):
        uid += 1
        g = d.CtlGen(rng, uid, plant=True)
        r = g.program()
        if r is not None:
            rejects.append(r[0])
    files = []
    for k, b0 in enumerate(range(0, len(progs), batch)):
        files.append(os.path.join(tmpdir, 'random%d.shm' % k))
        with open(files[-1], 'w') as f:
            f.write(''.join(progs[b0:b0 + batch]))
    files.append(os.path.join(tmpdir, 'rejects.shm'))
    with open(files[-1], 'w') as f:
        f.write(rejects[0])
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seed', type=int, default=18)
    ap.add_argument('--count', type=int, default=300, help='random programs')
    ap.add_argument('--batch', type=int, default=150)
    ap.add_argument('--only', nargs='*', help='compare just these files (under 2 and 4 ranks)')
    a = ap.parse_args()
    shmapi = os.path.abspath(os.environ.get('SHMAPI') or os.path.join(ROOT, 'build', 'shmapi'))
    if not shutil.which('mpirun'):
        print('skip: mpirun is not on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev; .ci/setup does)')
        return 77
    rc, out, err = run(mpirun_cmd(2) + [shmapi, '-c', 'print 1'], 120)
    if rc != 0 and b'built without MPI' in err:
        print('skip: %s was built without MPI:\n%s' % (shmapi, err.decode(errors='replace')))
        return 77
    if rc != 0 or out != b'1\n':
        print('mpirun -np 2 shmapi -c "print 1" failed (exit %d):\n%s%s' % (rc, out.decode(errors='replace'),
                                                                           err.decode(errors='replace')))
        return 1
    scale = float(os.environ.get('SHMAPI_TIMEOUT_SCALE', '1'))
    jobs = []
    if a.only:
        jobs = [(os.path.abspath(f), [2, 4]) for f in a.only]
    else:
        for f in sorted(glob.glob(os.path.join(ROOT, 'examples', '*.shm')) +
                        glob.glob(os.path.join(ROOT, 'examples', 'parallel', '*.shm'))):
            jobs.append((f, [2, 4]))
        for folder in ('spmd', 'control', 'pmap', 'xmap', 'print', 'visualize'):
            for f in sorted(glob.glob(os.path.join(ROOT, 'tests', folder, '*.shm'))):
                if runs_a_mesh(shmapi, f):
                    jobs.append((f, [4]))
    tmpdir = tempfile.mkdtemp(prefix='shm-ranks-')
    try:
        if not a.only:
            jobs += [(f, [2, 4]) for f in random_batches(tmpdir, a.seed, a.count, a.batch)]
        probs, runs = [], 0
        for path, ranks in jobs:
            args = directives(path)
            if args is None:
                continue
            p = compare(shmapi, path, args, ranks, scale)
            runs += len(ranks)
            probs += p
            if p and len(probs) > 40:
                break
        for line in probs:
            print(line)
        print('%d runs under ranks compared (%d random programs, seed %d), %d problems' %
              (runs, 0 if a.only else a.count, a.seed, sum(1 for p in probs if not p.startswith('  '))))
        return 1 if probs else 0
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
