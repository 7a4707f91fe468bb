"""Helpers for the cost-model tests: run shmapi on a generated program and
read the modelled timeline back from its Chrome trace file.

Nothing here computes a cost: the expected values are in each test,
written from the published formulas (the scaling book, NCCL), not from
shmapi's code.
"""

import json
import os
import subprocess
import tempfile

SHMAPI = os.environ.get('SHMAPI') or 'build/shmapi'


def run(text, *args, expect_ok=True):
    """Run shmapi on program `text` with `args`; (exit code, stdout, stderr)."""
    with tempfile.NamedTemporaryFile('w', suffix='.shm', delete=False) as f:
        f.write(text)
        path = f.name
    try:
        p = subprocess.run([SHMAPI, *args, path], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C'))
    finally:
        os.unlink(path)
    if expect_ok and p.returncode != 0:
        raise AssertionError('shmapi %s failed (%d):\n%s\n%s\nprogram:\n%s' % (' '.join(args), p.returncode,
                                                                               p.stdout, p.stderr, text))
    return p.returncode, p.stdout, p.stderr


def trace(text, hardware, *extra):
    """The trace events of `text` modelled (--abstract) on `hardware`."""
    fd, path = tempfile.mkstemp(suffix='.json')
    os.close(fd)
    try:
        run(text, '--abstract', '--hardware', hardware, '--trace', path, *extra)
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def durations(tr, line):
    """Per device, the modelled seconds of the events of source line `line`."""
    out = {}
    for e in tr['traceEvents']:
        if e.get('ph') == 'X' and e['args']['line'] == line:
            out.setdefault(e['pid'], []).append(e['args']['seconds'])
    return out


def one_duration(tr, line):
    """The duration of line's event, which must be the same on every device."""
    d = durations(tr, line)
    if not d:
        raise AssertionError('no event for line %d' % line)
    vals = {round(v, 15) for vs in d.values() for v in vs}
    if len(vals) != 1:
        raise AssertionError('line %d: durations differ between devices: %s' % (line, sorted(vals)))
    return vals.pop()


def collective_program(axes, line, block, dtype='f32', out_block=None):
    """A program whose shard_map body (line 6) runs `line` on its operand x,
    a block of `block` on each device of a mesh of `axes` [(name, size)].
    The line of `r = ...` is LINE."""
    names = [a for a, _ in axes]
    ndev = 1
    for _, s in axes:
        ndev *= s
    glob = (block[0] * ndev,) + tuple(block[1:])
    shape = ', '.join(str(s) for s in glob) + (',' if len(glob) == 1 else '')
    spec = 'P((%s)%s)' % (', '.join(names), ',' if len(names) == 1 else '')
    mesh = ', '.join('%s: %d' % a for a in axes)
    return ('mesh m = {%s}\n'
            'g = full[shape=(%s), value=1.0, dtype=%s]\n'
            '@shard_map[mesh=m, in_specs=(%s,), out_specs=%s, check_vma=False]\n'
            'def f(x) {\n'
            '  r = %s\n'
            '  return r\n'
            '}\n'
            'out = f g\n') % (mesh, shape, dtype, spec, spec, line)


LINE = 5


def nbytes(shape, itemsize=4):
    n = itemsize
    for s in shape:
        n *= s
    return n


def close(got, want, what, rel=1e-9):
    if abs(got - want) > rel * abs(want) + 1e-18:
        raise AssertionError('%s: modelled %.9g, expected %.9g' % (what, got, want))
