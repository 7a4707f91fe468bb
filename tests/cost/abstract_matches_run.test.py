#!/usr/bin/env python3
# timeout: 600
"""--abstract models what a run models, without arrays: for random SPMD
programs (the generator of tests/spmd/differential.test.py: random meshes,
specs, chains of every collective, conds, fori_loops of ppermutes) the
report of `--abstract --time` must be the report of `--time` byte for
byte, unless the program has a cond whose index depends on data (then the
abstract walk models its costliest branch and says so).  Half the programs
come from its control-flow generator (CtlGen: nested cond, while and
fori_loop) with every index, predicate and loop bound a literal, a psum of
1, or a function of axis_index: --abstract must evaluate those per device
(each device runs its own number of iterations) and model what the run
does; none may be refused.  A third of the programs run with --model-top
(the statements outside the shard_map modelled on the devices).  The same runs
check that the model's collective bytes agree with the fabric's --stats
(both count with coll_ring_bytes), to the precision --stats prints.

    SHMAPI=build/shmapi python3 tests/cost/abstract_matches_run.test.py [--seed N] [--count N]
"""
import argparse
import importlib.util
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('differential', os.path.join(HERE, '..', 'spmd', 'differential.test.py'))
differential = importlib.util.module_from_spec(spec)
sys.path.insert(0, os.path.join(HERE, '..'))
spec.loader.exec_module(differential)

SHMAPI = os.environ.get('SHMAPI') or 'build/shmapi'
UNITS = {'B': 1, 'KiB': 1024, 'MiB': 1024 ** 2, 'GiB': 1024 ** 3}


class AxisCtlGen(differential.CtlGen):
    """CtlGen whose indices, predicates and loop bounds never come from
    array data: literals, invariant psums of 1, or axis_index."""

    def small_int(self, sc, budget, lo, hi, inv_ok=True):
        saved = self.pick
        self.pick = lambda sc, pred: None        # no data value to bound
        try:
            return super().small_int(sc, budget, lo, hi, inv_ok)
        finally:
            self.pick = saved


def run(args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    p = subprocess.run([SHMAPI] + args, capture_output=True, text=True, env=env, timeout=120,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=1717)
    ap.add_argument('--count', type=int, default=1000)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix='shm-cost-')
    path = os.path.join(tmp, 'p.shm')
    compared = skipped = failed = errors = axis_loops = 0
    uid = 0
    while compared + skipped + errors < a.count:
        uid += 1
        ctl = rng.random() < 0.5
        r = (AxisCtlGen if ctl else differential.Gen)(rng, uid).program()
        if r is None:
            continue
        text = r[0]
        with open(path, 'w') as f:
            f.write(text)
        hw = rng.choice(['tpu-v5e', 'tpu-v4', 'h100', 'a100', 'tpu-v6e', 'tpu-v5p'])
        top = ['--model-top'] if rng.random() < 0.3 else []
        rc1, out1, err1 = run(['--time', '--stats', '--hardware', hw] + top + [path])
        rc2, out2, err2 = run(['--abstract', '--time', '--hardware', hw] + top + [path])
        if rc1 != 0 or rc2 != 0:
            failed += 1
            errors += 1
            print('---- exit %d / %d on %s\n%s%s%s' % (rc1, rc2, hw, text, err1, err2))
            continue
        if 'data-dependent:' in out2:
            skipped += 1
            continue
        compared += 1
        if ctl and 'axis_index' in text and ('while[' in text or 'fori_loop[' in text):
            axis_loops += 1
        report = out1[out1.index('modelled on'):]
        if report != out2:
            failed += 1
            if failed <= 3:
                print('---- the reports differ on %s\n%s---- run:\n%s---- abstract:\n%s' % (hw, text, report, out2))
        # the fabric's total against the model's
        m = re.search(r'^total\s+\d+\s+\S+ \S+\s+([\d.]+) (\S+)$', out1, re.M)
        model = re.search(r'^collective bytes sent, all devices: (\d+)$', out1, re.M)
        fab = float(m.group(1)) * UNITS[m.group(2)] if m else 0
        mod = float(model.group(1)) if model else 0
        tol = 0.051 * UNITS[m.group(2)] if m and m.group(2) != 'B' else 0.51
        if abs(fab - mod) > tol:
            failed += 1
            if failed <= 3:
                print('---- --stats sent %g bytes, the model %g, on\n%s' % (fab, mod, text))
    os.unlink(path)
    os.rmdir(tmp)
    print('%d programs compared (%d with loops and axis_index), %d with data-dependent conds skipped (seed %d): '
          '%d passed, %d failed' % (compared, axis_loops, skipped, a.seed, compared - failed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
