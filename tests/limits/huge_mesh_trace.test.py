#!/usr/bin/env python3
# timeout: 400
"""The cost model's outputs stay bounded on huge meshes.

- A psum over a mesh of 1,000,000 devices, `--trace` to JSON and to SVG:
  one track stands for the million identical timelines ("devices
  0-999999 (1000000 devices)"), the files are well-formed and under
  50 MB, the whole run under 512 MiB of peak RSS (issue #32: 12.6 GB and
  a 570 MB file before).
- Devices whose timelines differ get tracks of their own, named for
  their devices, every device in exactly one (a cond on the parity of
  axis_index, and on axis_index < 40, over 128 devices); on 64 devices
  or fewer every device has its own track, as before.
- A ring ppermute over N and 4N devices with --trace, and one of N/2
  pairs with --time: CPU time grows less than 8x (pairing each sender's
  flow with its receiver scanned every event for every pair, the
  ppermute's cost on a switch every pair for every device, and the
  checker every earlier pair for each pair: quadratic).
- 400 devices whose timelines all differ (a while loop of axis_index
  steps): both files stop at their cap of 40 MB with a note, in the file
  and on stderr, saying how many tracks and devices were left out.
- `--time`'s device table: at most 24 rows, the rest summarised (devices
  alternating between two timelines once printed a row per device).
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import xml.parsers.expat

SHMAPI = os.environ['SHMAPI']
with open(SHMAPI, 'rb') as _f:
    SANITIZED = b'__asan_init' in _f.read()
failures = []
CAP = 40000000


def run(args, prog, d):
    """(status, stdout, stderr, cpu seconds, peak RSS bytes)."""
    path = os.path.join(d, 'p.shm')
    with open(path, 'w') as f:
        f.write(prog)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([SHMAPI, '--hardware', 'a100'] + args + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300, env=dict(os.environ, OPENBLAS_NUM_THREADS='1'))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if p.returncode:
        failures.append('%s: exit %d\n%s' % (args, p.returncode, p.stderr[-1500:]))
    return p.returncode, p.stdout, p.stderr, cpu, after.ru_maxrss * 1024


def well_formed(path):
    """Parse an XML file (expat: no tree; minidom takes minutes on 40 MB)."""
    with open(path, 'rb') as f:
        xml.parsers.expat.ParserCreate().ParseFile(f)


def tracks(path):
    """{pid: process name} and the events of a JSON trace."""
    with open(path) as f:
        d = json.load(f)
    names = {e['pid']: e['args']['name'] for e in d['traceEvents'] if e.get('name') == 'process_name'}
    return names, d


def devices_of(name, n):
    """The devices a track's name stands for."""
    if name.startswith('device '):
        return [int(name.split()[1])]
    body = name[len('devices '):].split(' (')[0]
    if '-' in body:
        lo, hi = map(int, body.split('-'))
        return list(range(lo, hi + 1))
    parts = [p.strip() for p in body.split(',')]
    if len(parts) == 2:
        return [int(parts[0]), int(parts[1])]
    a, b, last = int(parts[0]), int(parts[1]), int(parts[3])
    return list(range(a, last + 1, b - a))          # (a stride: what the tests below make)


PSUM = '''mesh m = {i: %d}
@shard_map[mesh=m, in_specs=P(i), out_specs=P()]
def f(x) {
  y = psum[axes=i] x
  return y
}
x = full[shape=(%d,), value=1.0]
z = f x
'''

with tempfile.TemporaryDirectory() as d:
    # a million devices, one psum
    for kind in ('json', 'svg'):
        out = os.path.join(d, 't.' + kind)
        st, _, err, cpu, rss = run(['--trace', out], PSUM % (10 ** 6, 10 ** 6), d)
        if st:
            continue
        size = os.path.getsize(out)
        if size > 50e6:
            failures.append('1M devices, %s: a file of %d bytes' % (kind, size))
        if not SANITIZED and rss > 512 * 2 ** 20:
            failures.append('1M devices, %s: peak RSS %.0f MiB' % (kind, rss / 2 ** 20))
        if kind == 'json':
            names, doc = tracks(out)
            xs = [e for e in doc['traceEvents'] if e['ph'] == 'X']
            if names != {0: 'devices 0-999999 (1000000 devices)'} or len(xs) != 1 or xs[0]['name'] != '4: y = psum[axes=i] x':
                failures.append('1M devices: tracks %r, events %r' % (names, xs[:3]))
            if doc['otherData'].get('devices') != 10 ** 6 or doc['otherData'].get('tracks') != 1:
                failures.append('1M devices: otherData %r' % doc['otherData'])
        else:
            well_formed(out)
            text = open(out).read()
            if text.count('devices 0-999999') != 2 or '(1000000 devices)' not in text:
                failures.append('1M devices, SVG: no merged track:\n' + text[:1500])
        print('1M devices, --trace %s: %d bytes, %.0f MiB, %.1f s CPU' % (kind, size, rss / 2 ** 20, cpu))

    # distinct timelines: a track each, every device in exactly one
    BRANCHY = '''mesh m = {i: %d}
def cheap(a) { return a }
def dear(a) {
  b = sin a
  c = exp b
  return c
}
@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]
def f(x) {
  k = axis_index[axes=i]
  p = %s
  y = cond[branches=(cheap, dear)] p x
  s = psum[axes=i] y
  return s
}
x = full[shape=(%d, 64), value=1.0]
z = f x
'''
    for n, pred, want in [(128, 'rem k 2\n  p = convert_element_type[new_dtype=i32] p', None),
                          (128, 'lt k 40\n  p = convert_element_type[new_dtype=i32] p', None),
                          (64, 'rem k 2\n  p = convert_element_type[new_dtype=i32] p', 64)]:
        out = os.path.join(d, 'b.json')
        st, _, _, _, _ = run(['--trace', out], BRANCHY % (n, pred, n), d)
        if st:
            continue
        names, _ = tracks(out)
        seen = sorted(dev for name in names.values() for dev in devices_of(name, n))
        if seen != list(range(n)):
            failures.append('%d devices, %s: tracks %r do not cover each device once' % (n, pred, names))
        if want is not None and len(names) != want:
            failures.append('%d devices: %d tracks, want one per device' % (n, len(names)))
        if want is None and len(names) != 2:
            failures.append('%d devices, %s: tracks %r, want 2' % (n, pred, names))

    # the ring ppermute: linear time
    RING = '''mesh m = {i: %d}
@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]
def f(x) {
  y = ppermute[axis_name=i, perm=(%s)] x
  return y
}
x = full[shape=(%d,), value=1.0]
z = f x
'''
    for what, args, pairs in [('ring ppermute --trace', ['--trace', os.path.join(d, 'r.json')],
                               lambda n: ((a, (a + 1) % n) for a in range(n))),
                              ('paired ppermute --time', ['--time'], lambda n: ((a, a + 1) for a in range(0, n, 2)))]:
        # (the second: a switch's ppermute cost scanned every pair for each device)
        cpus = []
        for n in (16384, 65536):
            perm = ', '.join('(%d, %d)' % q for q in pairs(n))
            _, _, _, cpu, _ = run(args, RING % (n, perm, n), d)
            cpus.append(cpu)
        if cpus[1] > 0.5 and cpus[1] > 8 * max(cpus[0], 0.05):
            failures.append('%s: %.2f s at 16384 devices, %.2f s at 65536' % ((what,) + tuple(cpus)))

    # every timeline different: the cap
    VARYING = '''mesh m = {i: 400}
def more(k:i32[], n:i32[], v:f32[4]) {
  c = lt k n
  return c
}
def step(k:i32[], n:i32[], v:f32[4]) {
  k1 = add k 1
  w = mul v 1.5
  u = sin w
  return k1, n, u
}
@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]
def f(x) {
  n = axis_index[axes=i]
  k, n2, y = while[cond_jaxpr=more, body_jaxpr=step] 0 n x
  s = psum[axes=i] y
  return s
}
x = iota[shape=(1600,), dtype=f32, dimension=0]
z = f x
'''
    for kind, what in (('json', 'file'), ('svg', 'picture')):
        out = os.path.join(d, 'v.' + kind)
        st, _, err, _, _ = run(['--trace', out], VARYING, d)
        if st:
            continue
        size = os.path.getsize(out)
        note = ' of 400 tracks ('
        if size > CAP + 64 * 1024 or size < CAP:
            failures.append('400 distinct timelines, %s: %d bytes (the cap is %d)' % (kind, size, CAP))
        if 'warning: ' not in err or note not in err or 'the %s reached its cap of 40 MB' % what not in err:
            failures.append('400 distinct timelines, %s: no note on stderr: %r' % (kind, err[-500:]))
        if kind == 'json':
            names, doc = tracks(out)
            if note not in doc['otherData'].get('note', '') or len(names) >= 400:
                failures.append('400 distinct timelines: otherData %r, %d tracks' % (doc['otherData'], len(names)))
        else:
            well_formed(out)
            if note not in open(out).read()[-3000:]:
                failures.append('400 distinct timelines: the SVG has no note at its end')

    # --time's device table: bounded
    st, out, _, _, _ = run(['--time'], BRANCHY % (4096, 'rem k 2\n  p = convert_element_type[new_dtype=i32] p', 4096), d)
    if not st:
        lines = out.split('\n')
        head = lines.index(next(l for l in lines if l.startswith('  device ')))
        rows = []
        for l in lines[head + 1:]:
            if not l.startswith('  ') or l.startswith('  line') or l.startswith('peak'):
                break
            rows.append(l)
        if len(rows) != 25 or '... 4072 more rows, devices 12-4083 (--trace shows every device)' not in rows[12] or \
                not rows[0].startswith('  0  ') or not rows[-1].startswith('  4095 '):
            failures.append('--time on 4096 alternating devices: rows\n' + '\n'.join(rows[:30]))

if failures:
    print('\n\n'.join(failures))
    sys.exit(1)
print('huge meshes: traces merged, capped, linear; --time bounded')
