#!/usr/bin/env python3
"""A traceback of many calls keeps the first 20 and the last 20.

A chain of N defs (each calling the next, the last running out of
memory) is run for N = 1, 39, 40, 41 and 150: the traceback lists the
N call sites outermost first (the top-level statement, then each def's
call of the next, in order), all of them up to 40, and past 40 the first
20, a line counting the others, and the last 20.
"""

import os
import re
import subprocess
import sys
import tempfile

SHMAPI = os.environ['SHMAPI']
failures = []


def program(n):
    lines = ['def f0(x) {', '  y = broadcast_in_dim[shape=(1000, 1000), broadcast_dimensions=()] x',
             '  return y', '}']
    for k in range(1, n):
        lines += ['def f%d(x) {' % k, '  y = f%d x' % (k - 1), '  return y', '}']
    lines.append('a = f%d 1.0' % (n - 1))
    return '\n'.join(lines) + '\n'


def expected_sites(n):
    """(line, col, where, source) of each call, outermost first."""
    sites = [(4 * n + 1, 5, 'at top level', 'a = f%d 1.0' % (n - 1))]
    for k in range(n - 1, 0, -1):
        sites.append((4 * k + 2, 7, 'in f%d' % k, 'y = f%d x' % (k - 1)))
    return sites


for n in (1, 39, 40, 41, 150):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'chain.shm')
        with open(path, 'w') as f:
            f.write(program(n))
        p = subprocess.run([SHMAPI, '--max-memory', '1M', 'chain.shm'], cwd=d, capture_output=True, text=True,
                           timeout=60)
    err = p.stderr.split('\n')
    if p.returncode != 1 or err[0] != 'Traceback (most recent call last):':
        failures.append('n=%d: exit %d, stderr %r' % (n, p.returncode, p.stderr[:300]))
        continue
    sites = expected_sites(n)
    want = sites if n <= 40 else sites[:20] + [None] + sites[-20:]
    got, i = [], 1
    while i < len(err) and err[i].startswith('  '):
        m = re.fullmatch(r'  chain\.shm:(\d+):(\d+), (at top level|in f\d+)', err[i])
        if m and i + 1 < len(err) and err[i + 1].startswith('    '):
            got.append((int(m.group(1)), int(m.group(2)), m.group(3), err[i + 1][4:]))
            i += 2
        elif err[i] == '  ... %d more calls ...' % (n - 40):
            got.append(None)
            i += 1
        else:
            failures.append('n=%d: line %r' % (n, err[i]))
            break
    if got != want:
        failures.append('n=%d: the calls\n%s\nnot\n%s' % (n, got, want))
    if not err[i].startswith('chain.shm:2:3: error: out of memory'):
        failures.append('n=%d: after the traceback %r' % (n, err[i]))

if failures:
    print('\n'.join(failures))
    sys.exit(1)
print('tracebacks of 1 to 150 calls')
