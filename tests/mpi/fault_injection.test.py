#!/usr/bin/env python3
# timeout: 240
"""A rank killed anywhere in a `--ranks` run is named, and nothing wrong is printed.

Runs a program with collectives, prints inside and outside shard_map
bodies and many top-level statements under `--ranks 2` and `--ranks 3`,
many times, killing one rank with SIGKILL each time (as the kernel's
out-of-memory killer does):

- at a chosen fault point, through the test hook SHMAPI_TEST_KILL=R:N:K
  (src/run/superv.h): during a collective (an exchange posted, K=c), at the
  end of a statement (its report posted, K=s), or on rank 0 half way
  through a part of the output (K=o).  The points each rank passes are
  counted first (R:0), and N is drawn from 1 to a little more than that
  count, so some runs pass every point and finish;
- or from outside, `kill -9` of a random rank after a random delay (any
  moment: starting, computing, finishing).

Each run must end within RUN_TIMEOUT seconds, and

- its standard output is a prefix of the one-process output: no result
  differs, and nothing is made up;
- a run in which a rank died exits 1, and its standard error says
  "shmapi: rank R of N died" naming the rank killed, and either that the
  output is incomplete, or (rank 0 having finished) that it is complete;
  an output shorter than the one-process output is always said to be
  incomplete;
- a run in which nothing died prints the one-process output and error
  exactly, with status 0.

Runs go four at a time (mpirun mostly waits on its start); the test
stops starting runs after BUDGET seconds, and fails if fewer than
MIN_RUNS ran or if fewer than half of them killed a rank.

    SHMAPI=build/shmapi python3 tests/mpi/fault_injection.test.py [--runs N] [--seed S] [--budget SECONDS]

Skips (77) without mpirun or with a shmapi built without MPI.
"""

import argparse
import concurrent.futures
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHMAPI = os.environ['SHMAPI']
RUN_TIMEOUT = 60
MIN_RUNS = 40

PROGRAM = '''mesh m = {i: 6}
@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]
def layer(x) {
  s = psum[axes=i] x
  g = all_gather[axis_name=i, all_gather_dimension=0, tiled=True] x
  t = ppermute[axis_name=i, perm=((0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0))] x
  print "block", t
  m = reduce_max[axes=(0,)] g
  u = add s t
  v = add u m
  return v
}
def step(k:i32[], c:f32[12]) {
  d = layer c
  e = mul d 0.5
  return e
}
x = iota[dtype=f32, shape=(12,), dimension=0]
print "start", x
y1 = layer x
print "y1", y1
y2 = fori_loop[lower=0, upper=6, body=step] y1
print "y2", y2
y3 = layer y2
print "y3", y3
y4 = fori_loop[lower=0, upper=4, body=step] y3
print "y4", y4
y5 = layer y4
print "y5", y5
print "end"
'''


def env(session):
    e = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C', OMPI_MCA_orte_tmpdir_base=session)
    e.setdefault('OMPI_MCA_btl', 'self,vader')
    e.setdefault('OMPI_MCA_pml', 'ob1')
    e['ASAN_OPTIONS'] = (e.get('ASAN_OPTIONS', '') + ':detect_leaks=0').lstrip(':')
    e.pop('SHMAPI_TEST_KILL', None)
    return e


def ranks_of(launcher_pid):
    """{rank: pid} of the ranks under a launcher (its child mpirun's children)."""
    out = {}
    try:
        kids = subprocess.run(['pgrep', '-P', str(launcher_pid)], stdout=subprocess.PIPE, text=True).stdout.split()
        for mp in kids:
            for pid in subprocess.run(['pgrep', '-P', mp], stdout=subprocess.PIPE, text=True).stdout.split():
                with open('/proc/%s/environ' % pid, 'rb') as f:
                    for kv in f.read().split(b'\0'):
                        if kv.startswith(b'OMPI_COMM_WORLD_RANK='):
                            out[int(kv.split(b'=')[1])] = int(pid)
    except OSError:
        pass
    return out


def launch(prog, ranks, hook=None, kill_after=None, rng=None):
    """(status, stdout, stderr, seconds, rank killed from outside or None)."""
    with tempfile.TemporaryDirectory(prefix='shm-fault-') as session:
        e = env(session)
        if hook:
            e['SHMAPI_TEST_KILL'] = hook
        start = time.monotonic()
        p = subprocess.Popen([SHMAPI, '--ranks', str(ranks), prog], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=e, cwd=ROOT)
        killed = []
        if kill_after is not None:
            def killer():
                time.sleep(kill_after)
                pids = ranks_of(p.pid)
                if pids and p.poll() is None:
                    r = rng.choice(sorted(pids))
                    try:
                        os.kill(pids[r], signal.SIGKILL)
                        killed.append(r)
                    except OSError:
                        pass
            th = threading.Thread(target=killer)
            th.start()
        try:
            out, err = p.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            return None, out, err, RUN_TIMEOUT, None
        if kill_after is not None:
            th.join()
        return p.returncode, out, err, time.monotonic() - start, killed[0] if killed else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--runs', type=int, default=150)
    ap.add_argument('--seed', type=int, default=32)
    ap.add_argument('--budget', type=float, default=90)
    args = ap.parse_args()
    if not shutil.which('mpirun'):
        print('skip: mpirun is not on PATH')
        return 77
    tmp = tempfile.mkdtemp(prefix='shm-fault-')
    try:
        prog = os.path.join(tmp, 'p.shm')
        with open(prog, 'w') as f:
            f.write(PROGRAM)
        one = subprocess.run([SHMAPI, prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                             env=dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C'))
        if one.returncode != 0:
            print('the program fails in one process:\n' + one.stderr.decode())
            return 1
        # the fault points of each rank under 2 and 3 ranks
        counts = {}
        for ranks in (2, 3):
            for r in range(ranks):
                st, out, err, _, _ = launch(prog, ranks, hook='%d:0' % r)
                if st != 0 and b'built without MPI' in err:
                    print('skip: this shmapi was built without MPI')
                    return 77
                m = re.search(rb'rank %d passed (\d+) c, (\d+) s and (\d+) o fault points' % r, err)
                if st != 0 or out != one.stdout or not m:
                    print('counting run (%d ranks, rank %d): status %s\n%s' % (ranks, r, st, err.decode()))
                    return 1
                counts[ranks, r] = dict(zip('cso', map(int, m.groups())))
        return campaign(args, prog, one, counts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def plan(i, seed, counts):
    """The i-th run: (ranks, hook or None, kill delay or None)."""
    rng = random.Random(seed * 100003 + i)
    ranks = rng.choice((2, 3))
    if rng.random() < 0.2:
        return ranks, None, rng.uniform(0.0, 2.5), rng
    r = rng.randrange(ranks)
    kinds = [k for k in 'cso' if counts[ranks, r][k]]
    k = rng.choice(kinds)
    n = rng.randint(1, counts[ranks, r][k] + max(1, counts[ranks, r][k] // 10))
    return ranks, '%d:%d:%s' % (r, n, k), None, rng


def check(i, desc, res, one, expect_rank):
    st, out, err, secs, outside = res
    text = err.decode(errors='replace')
    if st is None:
        return '%s: no end within %d s\n%s' % (desc, RUN_TIMEOUT, text[-2000:])
    if not one.stdout.startswith(out):
        return '%s: the output is not a prefix of the one-process output:\n%s' % (desc, out.decode()[-1500:])
    dead = re.findall(r'^shmapi: rank (\d+) of (\d+) died', text, re.M)
    if expect_rank is None and outside is not None:
        expect_rank = outside
    if expect_rank is None or (not dead and st == 0):
        # nothing died (the hook's point was never reached, the kill came late)
        if st != 0 or out != one.stdout or err != one.stderr:
            return '%s: nothing died, yet status %s, stderr:\n%s' % (desc, st, text[-2000:])
        return None
    if st != 1:
        return '%s: rank %d killed: status %s\n%s' % (desc, expect_rank, st, text[-2000:])
    starting = re.findall(r'^shmapi: ranks? ([0-9, ]+) of \d+ died while starting', text, re.M)
    if outside is not None and len(starting) == 1 and str(expect_rank) in starting[0].split(', '):
        # killed before it said which rank it is (mpirun may have stopped
        # another before it could): the ranks that never began are named
        return None if not out else '%s: output from ranks that never began:\n%s' % (desc, out.decode())
    if outside is not None and 'shmapi: a rank died as it exited, after the run had ended' in text:
        # killed after it left MPI: which rank, nobody was told any more
        return None if out == one.stdout and st == 1 else '%s: died as it exited: status %s, %d of %d bytes' % (
            desc, st, len(out), len(one.stdout))
    if len(dead) != 1 or int(dead[0][0]) != expect_rank:
        return '%s: rank %d killed, but stderr says:\n%s' % (desc, expect_rank, text[-2000:])
    complete = 'shmapi: rank 0 had written all of the output' in text
    incomplete = 'shmapi: the output above is incomplete: the run did not finish' in text
    if complete == incomplete or (out != one.stdout and not incomplete):
        return '%s: the output (%d of %d bytes) is not said to be %s:\n%s' % (
            desc, len(out), len(one.stdout), 'incomplete' if out != one.stdout else 'complete', text[-2000:])
    return None


def campaign(args, prog, one, counts):
    start = time.monotonic()
    failures, done, kills, kinds = [], 0, 0, {}
    lock = threading.Lock()

    def one_run(i):
        nonlocal done, kills
        if time.monotonic() - start > args.budget:
            return
        ranks, hook, delay, rng = plan(i, args.seed, counts)
        res = launch(prog, ranks, hook=hook, kill_after=delay, rng=rng)
        desc = 'run %d (seed %d): --ranks %d, %s' % (i, args.seed, ranks,
                                                    'SHMAPI_TEST_KILL=' + hook if hook else 'kill -9 after %.2f s' % delay)
        expect = int(hook.split(':')[0]) if hook else None
        bad = check(i, desc, res, one, expect)
        with lock:
            done += 1
            died = re.search(rb'^shmapi: rank \d+ of \d+ died', res[2], re.M) is not None
            kills += died
            key = hook.split(':')[2] if hook else 'outside'
            kinds[key] = kinds.get(key, 0) + died
            if bad:
                failures.append(bad)

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        list(ex.map(one_run, range(args.runs)))
    secs = time.monotonic() - start
    summary = '%d runs in %.0f s, %d with a rank killed (%s)' % (
        done, secs, kills, ', '.join('%s: %d' % kv for kv in sorted(kinds.items())))
    if failures:
        print('\n\n'.join(failures[:5]))
        print('%d of %d runs failed; %s' % (len(failures), done, summary))
        return 1
    if done < min(MIN_RUNS, args.runs) or kills * 2 < done:
        print('too few runs or kills: ' + summary)
        return 1
    print('fault injection: ' + summary)
    return 0


if __name__ == '__main__':
    sys.exit(main())
