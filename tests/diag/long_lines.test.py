#!/usr/bin/env python3
"""A long line is quoted as a window around the error.

Lines of 40,000 characters with the error at the start, in the middle
and at the end, after tabs, multi-byte UTF-8 (accented, wide East Asian,
emoji, combining marks) and bytes shown escaped: the quoted line must be
at most 126 columns (120 and a "..." on each cut side), carry "..." on
exactly the sides that were cut, and the caret must sit, on the
terminal, under the first character of the token the error names.  A
line of 120 columns or less is quoted whole, tabs and all.
"""

import os
import subprocess
import sys
import tempfile
import unicodedata

SHMAPI = os.environ['SHMAPI']
failures = []


def width(ch, col):
    if ch == '\t':
        return 8 - col % 8
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in 'WF' else 1


def columns(line):
    """The terminal column where each character of line starts."""
    cols, col = [], 0
    for ch in line:
        cols.append(col)
        col += width(ch, col)
    return cols, col


def check(what, src, token, line_no, cut_left, cut_right, whole=False):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'p.shm')
        with open(path, 'wb') as f:
            f.write(src.encode('utf-8', 'surrogateescape'))
        p = subprocess.run([SHMAPI, path], capture_output=True, timeout=60)
    err = p.stderr.decode('utf-8')
    lines = err.split('\n')
    try:
        i = next(k for k, l in enumerate(lines) if l.startswith('%5d | ' % line_no))
    except StopIteration:
        failures.append('%s: no quoted line %d in %r' % (what, line_no, err[:600]))
        return
    quote, caret = lines[i], lines[i + 1]
    body = quote[8:]
    qcols, qwidth = columns(quote)
    if len(err) > 2000:
        failures.append('%s: %d characters of diagnostics' % (what, len(err)))
    if qwidth > 8 + (160 if whole else 126):
        failures.append('%s: the quoted line is %d columns' % (what, qwidth - 8))
    if body.startswith('...') != cut_left or body.endswith('...') != cut_right:
        failures.append('%s: cut %s, not %s: %r' % (what, (body.startswith('...'), body.endswith('...')),
                                                     (cut_left, cut_right), body))
    if whole and body != src.split('\n')[line_no - 1]:
        failures.append('%s: not quoted whole: %r' % (what, body))
    if not caret.startswith('      | ') or caret.count('^') != 1:
        failures.append('%s: caret line %r' % (what, caret))
        return
    ccols, _ = columns(caret)
    at = ccols[caret.index('^')]
    k = qcols.index(at) if at in qcols else -1
    if k < 0 or quote[k:k + len(token)] != token:
        failures.append('%s: the caret (column %d) is under %r, not %r\n%s\n%s' %
                        (what, at, quote[k:k + len(token)] if k >= 0 else None, token, quote, caret))


def statements(n, bad_at):
    """A line of n statements `aK = add x x;`, the bad_at-th naming an unknown variable."""
    parts = ['a%d = add x %s' % (k, 'nothing' if k == bad_at else 'x') for k in range(n)]
    return '; '.join(parts)


N = 2500                                   # 2500 statements: about 41,000 characters
mid = statements(N, N // 2)
assert len(mid) > 40000, len(mid)
check('middle', 'x = 1.0\n' + mid + '\n', 'nothing', 2, True, True)
check('start', 'x = 1.0\n' + statements(N, 0) + '\n', 'nothing', 2, False, True)
check('end', 'x = 1.0\n' + statements(N, N - 1) + '\n', 'nothing', 2, True, False)
check('end of line', 'x = 1.0\n' + statements(N, -1) + '; z = add x\n', 'add', 2, True, False)

# what comes before the error: tabs, wide characters, combining marks, bytes escaped
for what, filler in [('tabs', '\t'), ('accents', 'é'), ('wide', '漢字'), ('emoji', '\U0001F600'),
                     ('combining', 'e\u0301'), ('escaped', '\x1b[2J\x07'), ('not UTF-8', '\udcff\udcfe')]:
    # (few bytes that do not print: a file made mostly of them is not text)
    reps = 40 if what in ('escaped', 'not UTF-8') else 20000 // len(filler)
    pre = 'print "' + filler * reps + '"; '
    for near in (0, 30, 200):
        src = 'x = 1.0\n' + pre + statements(near + 1, near) + '; ' + statements(50, -1) + '\n'
        check('%s, %d statements before' % (what, near), src, 'nothing', 2, True, True)
    check('%s, a short line' % what, 'x = 1.0\n' + 'print "' + filler * 3 + '"; \ty = add x nothing\n',
          'nothing', 2, False, False, whole=what not in ('escaped', 'not UTF-8'))

# the longest line quoted whole, and the shortest one clipped
for n, cut in ((160, False), (161, True)):
    line = 'y = add x nothing # ' + 'c' * (n - 20)
    assert len(line) == n
    check('%d columns' % n, 'x = 1.0\n' + line + '\n', 'nothing', 2, False, cut, whole=not cut)

if failures:
    print('\n\n'.join(failures))
    sys.exit(1)
print('long lines: every quote clipped around its caret')
