"""The derivatives of shard_maps communicate as much as efficient backward
passes written by hand, and compute the same numbers.

For each golden test NAME.shm of this folder listed below, _hand/NAME.shm
computes the same derivatives with the collectives written out (the seed
004 transposes: pbroadcast for a psum whose cotangent is invariant,
psum_scatter for all_gather, pscatter for all_gather_invariant; a psum
over the data axis for each replicated weight's gradient).  Both are run
with --stats: the total bytes sent per device and in all must be equal,
and the numbers printed (`show`'s output and the statistics table aside)
must agree to float32 rounding.

Run by tests/run.py with SHMAPI set; cwd is the repository root.
"""

import os
import re
import subprocess
import sys

SHMAPI = os.environ.get('SHMAPI', 'build/shmapi')
HERE = 'tests/autodiff'
CASES = ['seed_ex1_value_and_grad', 'seed_ex2_vjp', 'seed_ex4_pscatter', 'seed_ex5_psum_scatter',
         'dp_loss_grad', 'fsdp_grad', 'tp_mlp_grad']
NUMBER = re.compile(r'-?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?|nan|inf)')


def run(path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    r = subprocess.run([SHMAPI, '--stats', path], capture_output=True, text=True, timeout=60, env=env)
    if r.returncode != 0:
        raise RuntimeError('%s exited %d:\n%s' % (path, r.returncode, r.stderr))
    numbers, total = [], None
    in_show = in_stats = False
    for line in r.stdout.splitlines():
        if line.startswith('def '):
            in_show = True
        in_stats |= line.startswith('collective ')
        if line.startswith('total '):
            total = line.split()[2:]
        elif in_stats:
            continue
        elif not in_show:
            numbers.extend(float(x) for x in NUMBER.findall(line))
        elif re.match(r'  in \(.*\) }$', line):
            in_show = False
    return numbers, total


def main():
    failed = 0
    for name in CASES:
        auto_nums, auto_total = run(os.path.join(HERE, name + '.shm'))
        hand_nums, hand_total = run(os.path.join(HERE, '_hand', name + '.shm'))
        problems = []
        if auto_total != hand_total:
            problems.append('bytes sent: autodiff %s, by hand %s' % (' '.join(auto_total or []),
                                                                     ' '.join(hand_total or [])))
        if len(auto_nums) != len(hand_nums) or not auto_nums:
            problems.append('%d numbers printed, by hand %d' % (len(auto_nums), len(hand_nums)))
        else:
            for a, h in zip(auto_nums, hand_nums):
                if abs(a - h) > 1e-5 * (abs(a) + abs(h)) + 1e-6:
                    problems.append('autodiff printed %r where the hand-written pass printed %r' % (a, h))
                    break
        print('%s %s: %s' % ('FAIL' if problems else 'ok', name,
                             '; '.join(problems) if problems else 'total %s, %d numbers agree'
                             % (' '.join(auto_total), len(auto_nums))))
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
