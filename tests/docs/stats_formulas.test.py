#!/usr/bin/env python3
"""--stats counts what README.md and docs/cli.md say it counts.

Both documents state the bytes of each collective for a group of p
devices and n bytes in one device's operand; this test finds those
statements in both (so that they cannot drift apart or from the
program) and runs each collective alone over p = 2 and 4 devices with
an f32[8] block (n = 32 bytes), checking the table's sent/device (the
formula) and total sent (p devices sending it), and the explanation the
table ends with against docs/cli.md's.
"""

import os
import re
import subprocess
import sys

SHMAPI = os.environ['SHMAPI']
failures = []

# (collective, the documents' formula in README.md, in docs/cli.md, bytes per device)
FORMULAS = [
    ('psum', '`2(p-1)/p·n`', '2(p-1)/p * n', lambda p, n: 2 * (p - 1) * n // p),
    ('all_gather', '`(p-1)·n`', '(p-1) * n', lambda p, n: (p - 1) * n),
    ('psum_scatter', '`(p-1)/p·n`', '(p-1)/p * n', lambda p, n: (p - 1) * n // p),
    ('all_to_all', '`(p-1)/p·n`', '(p-1)/p * n', lambda p, n: (p - 1) * n // p),
    ('ppermute', '`n` per pair', '`ppermute` n per pair', lambda p, n: n),
]
EQN = {
    'psum': 'psum[axes=i] x',
    'all_gather': 'all_gather[axis_name=i, all_gather_dimension=0, axis_size=%(p)d, tiled=True] x',
    'psum_scatter': 'psum_scatter[axis_name=i, scatter_dimension=0, axis_size=%(p)d, tiled=True] x',
    'all_to_all': 'all_to_all[axis_name=i, split_axis=0, concat_axis=0, tiled=True] x',
    'ppermute': 'ppermute[axis_name=i, shift=1] x',
}

readme = open('README.md').read()
cli = open('docs/cli.md').read()
for name, in_readme, in_cli, _ in FORMULAS:
    if in_readme not in readme:
        failures.append('README.md does not state %s as %s' % (name, in_readme))
    if in_cli not in cli:
        failures.append('docs/cli.md does not state %s as %s' % (name, in_cli))

for name, _, _, bytes_of in FORMULAS:
    for p in (2, 4):
        prog = ('mesh m = {i: %(p)d}\n'
                '@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]\n'
                'def f(x) {\n  y = %(eqn)s\n  return y\n}\n'
                'a = iota[dtype=f32, shape=(%(size)d,), dimension=0]\n'
                'b = f a\n') % {'p': p, 'size': 8 * p, 'eqn': EQN[name] % {'p': p}}
        out = subprocess.run([SHMAPI, '--stats', '-c', prog], capture_output=True, text=True, timeout=60)
        if out.returncode:
            failures.append('%s over %d: %s' % (name, p, out.stderr))
            continue
        row = re.search(r'^%s +1 +%d +(\d+) B +(\d+) B$' % (name, p), out.stdout, re.M)
        want = bytes_of(p, 32)
        if not row or int(row.group(1)) != want or int(row.group(2)) != want * p:
            failures.append('%s over %d devices: want %d B per device, %d B in all:\n%s' %
                            (name, p, want, want * p, out.stdout))
        tail = out.stdout[out.stdout.index('(calls:'):]
        if tail not in cli:
            failures.append('the explanation is not docs/cli.md\'s:\n%s' % tail)

if failures:
    print('\n'.join(failures))
    sys.exit(1)
print('--stats: the documents\' formulas, and the program\'s numbers')
