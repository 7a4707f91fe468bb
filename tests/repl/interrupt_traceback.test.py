#!/usr/bin/env python3
"""Ctrl-C at the REPL quotes the statement typed, then where it stopped.

On a terminal (a pty), a statement that calls a def whose loop runs
long is interrupted with Ctrl-C: the report is a traceback whose first
entry is the statement typed (`z = inc 1.0`), then `error: interrupted` at the statement that was running
(inc's loop, or, after the call inside inc, the loop's body); the REPL goes on (`print 5` prints 5).  Before, the report
quoted only the innermost statement, which is a line of an earlier
definition, as if that were what was interrupted.
"""

import os
import re
import pty
import select
import sys
import tempfile
import time

SHMAPI = os.environ['SHMAPI']


def read_for(fd, seconds, until=None):
    out = b''
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if until and until in out:
                break
    return out


home = tempfile.mkdtemp()
pid, fd = pty.fork()
if pid == 0:
    os.environ['HOME'] = home               # (the history file)
    os.environ['LC_ALL'] = 'C'
    os.execv(SHMAPI, [SHMAPI])
read_for(fd, 10, b'shm> ')
os.write(fd, b'def step(i, c) { d = add c 1.0; return d }\n')
read_for(fd, 10, b'shm> ')
os.write(fd, b'def inc(x) { y = fori_loop[lower=0, upper=2000000000, body=step] x; return y }\n')
read_for(fd, 10, b'shm> ')
os.write(fd, b'z = inc 1.0\n')
read_for(fd, 1.0)
os.write(fd, b'\x03')
out = read_for(fd, 30, b'shm> ')
os.write(fd, b'print 5\n')
out += read_for(fd, 20, b'\r\n5\r\n')
os.write(fd, b'\x04')
read_for(fd, 5)
for _ in range(50):                         # it ends at ^D; if not, it is ended
    if os.waitpid(pid, os.WNOHANG)[0]:
        break
    time.sleep(0.1)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
text = out.decode('utf-8', 'replace').replace('\r\n', '\n')
# (the interrupt lands in inc's loop or in step's body, as it comes)
want = ['^CTraceback (most recent call last):\n'
        '  <stdin>:1:5, at top level\n'
        '    z = inc 1.0\n',
        ': error: interrupted\n']
missing = [w for w in want if w not in text]
# the session goes on: a prompt, then 5 (input typed while the REPL is
# between lines is echoed by the terminal once more, as in any shell)
if not re.search(r'shm> print 5\n(print 5\n)?5\n', text):
    missing.append('shm> print 5\n5\n')
if missing:
    print('missing:\n%s\nin:\n%s' % ('\n'.join(missing), text))
    sys.exit(1)
print('Ctrl-C: the traceback starts at the statement typed')
