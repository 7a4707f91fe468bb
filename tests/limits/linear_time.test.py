#!/usr/bin/env python3
# timeout: 120
"""Every input is handled in time linear in its size.

Pathological shapes — brackets nested 100k deep, 100k closing brackets,
1 MB lines, 100k statements, a 100k-element literal, 20k broken
statements, thousands of nested defs, a 1 MB comment or string — are run
at a size n and at 4n, and the CPU time the interpreter takes (user and
system, of the child alone) must grow by less than 8x (a quadratic step
grows 16x), and stay under a bound per byte.  Each shape once made shmapi
quadratic: the scope's linked list looked up per name (100k statements:
127 s), the source line scanned once per token on it (50k closing
brackets: 1.4 s), the parser going on past the nesting limit.
"""

import os
import subprocess
import sys
import tempfile

SHMAPI = os.environ['SHMAPI']
SCALE = float(os.environ.get('SHMAPI_TIMEOUT_SCALE', '1'))
FLOOR = 0.03            # seconds: below this a run is start-up, not growth
PER_BYTE = 3e-6         # seconds of CPU per input byte, at most


def shapes():
    yield 'deep nesting', lambda n: 'x = ' + '[' * n + '1' + ']' * n + '\n', 100000
    yield 'closing brackets', lambda n: 'x = 1' + ']' * n + '\n', 100000
    yield 'opening parentheses', lambda n: 'x = f' + '(' * n + '\n', 100000
    yield 'literal', lambda n: 'x = [' + ', '.join(str(i % 97) for i in range(n)) + ']\nprint x\n', 100000
    yield 'statements', (lambda n: 'x0 = 1\n' + ''.join('x%d = add x%d 1\n' % (i + 1, i) for i in range(n))
                         + 'print x%d\n' % n), 100000
    yield 'long line', lambda n: 'x = ' + 'a ' * n + '\n', 500000
    yield 'broken statements', lambda n: 'y = x + x\n' * n, 20000
    yield 'nested defs', lambda n: ''.join('  ' * min(i, 8) + 'def f%d(x) {\n' % i for i in range(n)), 20000
    yield 'comment', lambda n: '#' + 'c' * n + '\nx = 1\n', 1000000
    yield 'string', lambda n: 'print "' + 's' * n + '"\n', 1000000
    yield 'jaxpr equations', (lambda n: '{ lambda ; a:f32[]. let\n' + ''.join(
        '    b%d:f32[] = add %s 1.0:f32[]\n' % (i, 'a' if i == 0 else 'b%d' % (i - 1)) for i in range(n))
        + '  in (b%d,) }\n' % (n - 1)), 50000


def cpu_time(path):
    """The CPU seconds shmapi takes on the file (its output thrown away)."""
    p = subprocess.Popen([SHMAPI, path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    if os.WIFSIGNALED(status):
        raise RuntimeError('killed by signal %d' % os.WTERMSIG(status))
    return usage.ru_utime + usage.ru_stime


def main():
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, n in shapes():
            times, size = [], 0
            for k in (n // 4, n):
                text = make(k)
                size = len(text.encode())
                path = os.path.join(tmp, 'in.shm')
                with open(path, 'w') as f:
                    f.write(text)
                try:
                    times.append(cpu_time(path))
                except RuntimeError as e:
                    problems.append('%s (%d bytes): %s' % (name, size, e))
                    times.append(float('inf'))
            small, big = times
            ratio = big / max(small, FLOOR * SCALE)
            print('%-20s %8d bytes  %.3f s -> %.3f s (x%.1f)' % (name, size, small, big, ratio))
            if big > FLOOR * SCALE and ratio > 8:
                problems.append('%s: 4x the input took %.1fx the time (%.3f s -> %.3f s)' % (name, ratio, small, big))
            if big > (0.2 + PER_BYTE * size) * SCALE:
                problems.append('%s: %.3f s for %d bytes' % (name, big, size))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
