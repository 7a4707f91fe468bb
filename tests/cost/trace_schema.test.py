#!/usr/bin/env python3
# timeout: 120
"""The --trace file follows the Chrome trace-event format (the JSON object
form that Perfetto and chrome://tracing read): checked here against the
format's rules for every event of the examples' traces, and for what
shmapi promises on top: a process per device with a compute and a
communication thread, an event per equation named "LINE: source", flows
that pair every ppermute sender with its receiver.
"""
import json
import os
import subprocess
import sys
import tempfile

SHMAPI = os.environ.get('SHMAPI') or 'build/shmapi'
PHASES = {'X', 'M', 's', 'f'}


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def source_line(path, line, cache={}):
    if path not in cache:
        cache[path] = open(path).read().split('\n')
    return cache[path][line - 1]


def check(path, ndev_want):
    with open(path) as f:
        d = json.load(f)
    if not isinstance(d, dict) or not isinstance(d.get('traceEvents'), list):
        fail('no traceEvents array')
    if d.get('displayTimeUnit') not in (None, 'ms', 'ns'):
        fail('displayTimeUnit must be "ms" or "ns"')
    procs, threads, flows_s, flows_f, xs = {}, set(), {}, {}, []
    for e in d['traceEvents']:
        ph = e.get('ph')
        if ph not in PHASES:
            fail('unknown phase %r' % ph)
        if not isinstance(e.get('name'), str) or not isinstance(e.get('pid'), int):
            fail('an event needs a string name and an integer pid: %r' % e)
        if ph == 'M':
            if e['name'] not in ('process_name', 'thread_name', 'process_sort_index'):
                fail('unknown metadata %r' % e['name'])
            if not isinstance(e.get('args'), dict):
                fail('metadata without args')
            if e['name'] == 'process_name':
                procs[e['pid']] = e['args']['name']
            if e['name'] == 'thread_name':
                threads.add((e['pid'], e['tid'], e['args']['name']))
            continue
        if not isinstance(e.get('tid'), int) or not isinstance(e.get('ts'), (int, float)) or e['ts'] < 0:
            fail('an event needs an integer tid and a time stamp >= 0: %r' % e)
        if ph == 'X':
            if not isinstance(e.get('dur'), (int, float)) or e['dur'] < 0:
                fail('a complete event needs dur >= 0: %r' % e)
            line = e['args']['line']
            text = source_line(e['args']['file'], line)
            if not e['name'].startswith('%d: ' % line) or e['name'][len('%d: ' % line):] not in text:
                fail('event %r is not named by its source line %d' % (e['name'], line))
            if (e['tid'] == 1) != (e['cat'] == 'communication'):
                fail('communication events belong on thread 1')
            xs.append(e)
        else:
            if not isinstance(e.get('id'), int) or e.get('cat') != 'ppermute':
                fail('a flow event needs an id and its category')
            (flows_s if ph == 's' else flows_f).setdefault(e['id'], []).append(e)
    if len(procs) != ndev_want:
        fail('%d processes, expected one per device (%d)' % (len(procs), ndev_want))
    for pid in procs:
        if (pid, 0, 'compute') not in threads or (pid, 1, 'communication') not in threads:
            fail('device %d lacks its compute and communication threads' % pid)
    if set(flows_s) != set(flows_f) or any(len(v) != 1 for v in list(flows_s.values()) + list(flows_f.values())):
        fail('every flow must have one start and one end')
    # each flow end lies inside a communication event of its device (its binding slice)
    for fid, (s,) in flows_s.items():
        (f,) = flows_f[fid]
        for ev in (s, f):
            if not any(x['pid'] == ev['pid'] and x['tid'] == 1 and x['ts'] <= ev['ts'] <= x['ts'] + x['dur']
                       for x in xs):
                fail('flow %d has no enclosing slice on device %d' % (fid, ev['pid']))
    # the streams never run two events at once
    by = {}
    for x in xs:
        by.setdefault((x['pid'], x['tid']), []).append((x['ts'], x['ts'] + x['dur']))
    for k, iv in by.items():
        iv.sort()
        for (a0, a1), (b0, b1) in zip(iv, iv[1:]):
            if b0 < a1 - 1e-6 * max(1.0, a1):
                fail('device %d thread %d runs two events at once at %g us' % (k[0], k[1], b0))
    return len(xs), sum(len(v) for v in flows_s.values())


def main():
    tmp = tempfile.mkdtemp()
    total = flows = 0
    for ex, ndev, abstract in [('examples/collective_matmul.shm', 4, False), ('examples/ffn_2d.shm', 8, False),
                               ('examples/collective_matmul_8k.shm', 4, True), ('examples/moe.shm', None, False),
                               ('examples/psum_2d.shm', None, False)]:
        path = os.path.join(tmp, 't.json')
        args = [SHMAPI, '--trace', path] + (['--abstract'] if abstract else []) + [ex]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            fail('%s: %s' % (' '.join(args), p.stderr))
        if ndev is None:
            ndev = len({e['pid'] for e in json.load(open(path))['traceEvents']})
        n, f = check(path, ndev)
        total += n
        flows += f
        os.unlink(path)
    os.rmdir(tmp)
    if flows == 0:
        fail('no ppermute flow was checked')
    print('%d events and %d flows follow the trace-event format' % (total, flows))
    return 0


if __name__ == '__main__':
    sys.exit(main())
