#!/usr/bin/env python3
# timeout: 120
"""No raw control byte from user input reaches the terminal.

A hostile file puts ESC sequences (clear the screen, set the window's
title), BEL, NUL, DEL, CR, bytes that are not UTF-8 (stray, overlong,
surrogate, truncated), C1 controls and bidirectional overrides in every
place a user's bytes can travel to standard output or error: a comment on
a quoted line, a string (printed, and quoted in a syntax error), an axis
name (in messages, in print's device headers, in --stats, --time, the
SVG trace), a file name (of the program, of an import, of a file that
cannot be opened), -c code, the REPL's echo and the debugger's listing.
For each, both streams must hold only printable UTF-8, newlines and tabs,
and the escaped form (\\x1b, \\0, \\xff, \\u202e) must be where the byte was.
A binary file is refused with one line naming what it is; printable
UTF-8 passes unchanged, also when the escaping stream gets a character's
bytes in two writes.
"""

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SHMAPI = os.environ['SHMAPI']
HIDDEN = set(range(0x80, 0xa0)) | {0x61c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d,
                                    0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff}
failures = []


def fail(what, msg):
    failures.append('%s: %s' % (what, msg))


def clean(what, stream, data):
    """data must be printable UTF-8 with newlines and tabs only."""
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as e:
        fail(what, '%s is not UTF-8 (%s): %r' % (stream, e, data[max(0, e.start - 20):e.start + 20]))
        return ''
    for i, ch in enumerate(text):
        c = ord(ch)
        if (c < 0x20 and ch not in '\n\t') or c == 0x7f or c in HIDDEN:
            fail(what, '%s carries U+%04X raw: %r' % (stream, c, text[max(0, i - 30):i + 30]))
            break
    return text


def run(what, args, src=None, stdin=b'', cwd=None, want_rc=None):
    with tempfile.TemporaryDirectory() as d:
        argv = [SHMAPI] + args
        if src is not None:
            path = os.path.join(d, 'p.shm')
            with open(path, 'wb') as f:
                f.write(src)
            argv.append(path)
        p = subprocess.run(argv, input=stdin, capture_output=True, cwd=cwd or d, timeout=60,
                           env=dict(os.environ, LC_ALL='C'))
    out = clean(what, 'stdout', p.stdout)
    err = clean(what, 'stderr', p.stderr)
    if want_rc is not None and p.returncode != want_rc:
        fail(what, 'exit status %d, not %d; stderr: %s' % (p.returncode, want_rc, err[:500]))
    return out, err


def expect(what, text, *needles):
    for n in needles:
        if n not in text:
            fail(what, 'missing %r in:\n%s' % (n, text[:2000]))


def caret_under(what, err, token):
    """The caret line under the quoted line points at `token` (no tabs
    before it in these sources; escapes are one column per character)."""
    lines = err.split('\n')
    for i, l in enumerate(lines[:-1]):
        if ' | ' in l and lines[i + 1].lstrip().startswith('|') and '^' in lines[i + 1]:
            col = lines[i + 1].index('^')
            if l[col:col + len(token)] == token:
                return
    fail(what, 'no caret under %r in:\n%s' % (token, err))


# ---- the source ----------------------------------------------------------------------------

out, err = run('ESC and BEL before a statement', [], b'\x1b[2J\x1b]0;pwned\x07x = 1\nprint x\n', want_rc=1)
expect('ESC and BEL', err, "error: unexpected character '\\x1b'", '1 | \\x1b[2J\\x1b]0;pwned\\x07x = 1',
       "error: unexpected character '\\x07'")
caret_under('ESC', err, '\\x1b[2J')

out, err = run('NUL', [], b'x = 1\x00\n', want_rc=1)
expect('NUL', err, "unexpected character '\\0'", '1 | x = 1\\0\n')
caret_under('NUL', err, '\\0')

out, err = run('NUL in a comment', [], b'x = 1 # a\x00b\n', want_rc=1)
expect('NUL in a comment', err, "unexpected character '\\0'", '# a\\0b')

hostile_comment = b' # \x1b]0;t\x07 \xff\xfe \xc0\xaf \xed\xa0\x80 \xe2\x80\xae \xc2\x9b \x7f \r\x0b end'
out, err = run('a comment on the quoted line', [], b'x = 1.0\ny = add x nothing' + hostile_comment + b'\n', want_rc=1)
expect('comment', err, "unknown variable 'nothing'",
       '# \\x1b]0;t\\x07 \\xff\\xfe \\xc0\\xaf \\xed\\xa0\\x80 \\u202e \\u009b \\x7f \\r\\x0b end')
caret_under('comment', err, 'nothing')

out, err = run('a character not in the language', [], b'x = 1 \xc3\x97 2\ny = 1 \xe2\x80\xae 2\nz = 1 \xf0\x9f\x98\x80\n',
               want_rc=1)
expect('not in the language', err, "unexpected character '\xc3\x97'".encode('latin-1').decode('utf-8'),
       "unexpected character '\\u202e'", "unexpected character '\U0001F600'")

# ---- strings ---------------------------------------------------------------------------------

out, err = run('a printed string', [], b'print "a\x1b[31mb\x07c\xff\xc2\x9bd\\n\\te\x7ff"\n', want_rc=0)
if out != 'a\\x1b[31mb\\x07c\\xff\\u009bd\n\te\\x7ff\n':
    fail('printed string', 'printed %r' % out)

out, err = run('a string in a syntax error', [], b'x = "\x1b[2J" "\x07"\n', want_rc=1)
expect('string in a syntax error', err, 'unexpected "\\x1b[2J"', 'x = "\\x1b[2J" "\\x07"')
caret_under('string in a syntax error', err, '"\\x1b[2J"')

out, err = run('NUL in a string', [], b'print "ab\x00cd"\n', want_rc=1)
expect('NUL in a string', err, "1:10: error: unexpected character '\\0'", '1 | print "ab\\0cd"')
caret_under('NUL in a string', err, '\\0cd"')

out, err = run('printable UTF-8', [], 'print "héllo 漢字 ✓ ü"\n'.encode(), want_rc=0)
if out != 'héllo 漢字 ✓ ü\n':
    fail('printable UTF-8', 'printed %r' % out)

# a character cut between two of the stream's writes is escaped whole
long = 'é' * 20001 + '漢' * 7001 + '\U0001F600' * 5003
out, err = run('UTF-8 across writes', [], ('print "%s"\n' % long).encode(), want_rc=0)
if out != long + '\n':
    fail('UTF-8 across writes', 'printed %d characters, not %d' % (len(out), len(long) + 1))

# ---- names -----------------------------------------------------------------------------------

AX = b'"i\x1b[2J\xe2\x80\xae"'
axis_prog = (b'mesh m = {%s: 2}\n'
             b'@shard_map[mesh=m, in_specs=P(%s), out_specs=P(%s)]\n'
             b'def f(x) {\n'
             b'  k = axis_index[axis_name=%s]\n'
             b'  print k\n'
             b'  y = psum[axes=%s] x\n'
             b'  return y\n'
             b'}\n'
             b'a = arange[stop=4, dtype=f32]\n'
             b'b = f a\n'
             b'print b\n') % (AX, AX, AX, AX, AX)
ESCAPED = 'i\\x1b[2J\\u202e'
for opts in ([], ['--stats'], ['--time']):
    out, err = run('an axis name, %s' % (opts or 'run'), opts, axis_prog, want_rc=0)
    expect('axis name %s' % opts, out, 'mesh coordinates (%s,) = (0,)' % ESCAPED)
    if opts:
        expect('axis name %s' % opts, out, ESCAPED)
out, err = run('an axis name in an error', [], axis_prog.replace(b'psum[axes=%s]' % AX, b'psum[axes="q\x07"]'),
               want_rc=1)
expect('axis name in an error', err, "unbound axis name 'q\\x07' (mesh m has axis %s)" % ESCAPED)

with tempfile.TemporaryDirectory() as d:
    svg = os.path.join(d, 't.svg')
    run('an axis name in an SVG trace', ['--trace', svg], axis_prog, want_rc=0)
    try:
        ET.parse(svg)
    except Exception as e:
        fail('SVG trace', 'not XML: %s' % e)

# ---- file names ------------------------------------------------------------------------------

with tempfile.TemporaryDirectory() as d:
    evil = b'ev\x1b]0;t\x07il\xff.shm'
    with open(os.path.join(d.encode(), evil), 'wb') as f:
        f.write(b'x = add 1 nothing\n')
    out, err = run('a file name', [evil.decode('utf-8', 'surrogateescape')], cwd=d, want_rc=1)
    expect('file name', err, 'ev\\x1b]0;t\\x07il\\xff.shm:1:11: error:')
    with open(os.path.join(d, 'imp.shm'), 'wb') as f:
        f.write(b'import "' + evil + b'"\nimport "gone\x1b[2J.shm"\n')
    out, err = run('an imported file name', ['imp.shm'], cwd=d, want_rc=1)
    expect('imported file name', err, 'ev\\x1b]0;t\\x07il\\xff.shm:1:11: error:',
           "cannot find 'gone\\x1b[2J.shm'")
    out, err = run('a missing file', ['nope\x1b[2J\x07.shm'], cwd=d, want_rc=2)
    expect('missing file', err, "cannot open 'nope\\x1b[2J\\x07.shm'")

# ---- -c, the REPL, the debugger ---------------------------------------------------------------

out, err = run('-c code', ['-c', 'print "\x1b[2J\x07"\ny = add 1 q # \x1b]0;t\x07'], want_rc=1)
expect('-c', err, "unknown variable 'q'", '# \\x1b]0;t\\x07')

out, err = run('the REPL', ['-i'], b'x = 1.0\n', stdin=b'print "\x1b[2J"\ny = add x zz # \x07\xff\n', want_rc=None)
expect('REPL', out, 'print "\\x1b[2J"', '\\x1b[2J\n')
expect('REPL', out + err, "unknown variable 'zz'", '# \\x07\\xff')

dbg_prog = b'x = 1.0 # \x1b]0;title\x07\ns = add x 2.0\nprint "\x1b[2J"\nprint s\n'
out, err = run('the debugger', ['--debug'], dbg_prog, stdin=b'list\nn\np x\nn\nn\nc\n', want_rc=None)
expect('debugger', out, '# \\x1b]0;title\\x07', '\\x1b[2J')

# ---- binary files ----------------------------------------------------------------------------

with open(SHMAPI, 'rb') as f:
    elf = f.read(4096)
for what, data, kind in [
        ('an executable', elf, 'an ELF executable or library'),
        ('a NumPy file', b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"
         + b' ' * 45 + b'\n' + bytes(range(24)), 'a NumPy .npy file'),
        ('random bytes', bytes((i * 7919 + 13) % 256 for i in range(3000)), 'a binary file')]:
    out, err = run(what, [], data, want_rc=2)
    lines = err.splitlines()
    if len(lines) != 1 or ('is not shm source: it is ' + kind) not in err:
        fail(what, 'said %r' % err[:500])

if failures:
    print('\n\n'.join(failures))
    sys.exit(1)
print('terminal escapes: every path clean')
