#!/usr/bin/env python3
# timeout: 300
"""Randomized differential test of psend and precv.

Generates random shard_maps -- a random mesh (1 to 3 axes of sizes 1 to
4), operands split over a random set of its axes -- whose bodies send
blocks with psend and receive them with precv over one mesh axis or a
tuple of them: random pairs without cycles (chains of members), one to
three sends in flight at once, received in any order, the received value
sometimes sent on again or combined with the operand, and compares what
shmapi saves with a NumPy model of each device: precv gives member dst the
block member src sent, zeros where no pair sends.

Programs to reject: --bad programs (default count / 20) each break one
pairing -- a psend whose token no precv consumes, a precv along other
pairs, a token received twice -- and shmapi must stop with
"error: deadlock: ..." and exit 1, never hang.

    SHMAPI=build/shmapi python3 tests/spmd/sendrecv_differential.test.py
        [--seed N] [--count N] [--bad N] [--batch N] [--keep DIR]

Exit 0 when every program agrees, 1 otherwise, 77 (skip) without NumPy.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

AXIS_NAMES = ['i', 'j', 'k', 'x', 'y']
BAD_KINDS = ['no_precv', 'other_pairs', 'twice']


def lit(a):
    if a.ndim == 0:
        return repr(float(a))
    return '[' + ', '.join(lit(x) for x in a) + ']'


class Prog:
    def __init__(self, rng, uid, bad=None):
        r = self.rng = rng
        self.uid, self.bad = uid, bad
        na = r.choice([1, 2, 2, 3])
        self.axes = r.sample(AXIS_NAMES, na)
        self.sizes = [r.choice([1, 2, 2, 3, 4]) for _ in range(na)]
        while np.prod(self.sizes) > 16:
            self.sizes[r.randrange(na)] = r.choice([1, 2])
        self.ndev = int(np.prod(self.sizes))
        self.mask = set(a for a in range(na) if r.random() < 0.6)
        self.shape = tuple(r.choice([1, 2, 3]) for _ in range(r.choice([1, 1, 2])))
        nb = self.nblocks(self.mask)
        self.x = np.array([r.randint(-9, 9) for _ in range(nb * int(np.prod(self.shape)))],
                          np.float32).reshape((nb,) + self.shape)
        # the exchanges: (axes, pairs), each sent and received once
        self.steps = []
        for _ in range(r.randint(1, 3)):
            coll = r.sample(range(na), r.randint(1, na))
            p = int(np.prod([self.sizes[a] for a in coll]))
            self.steps.append((coll, self.chains(p)))

    def chains(self, p):
        """Pairs without cycles: the members shuffled, cut into chains."""
        r = self.rng
        m = list(range(p))
        r.shuffle(m)
        pairs = []
        at = 0
        while at < p:
            n = r.randint(1, p - at)
            chain = m[at:at + n]
            pairs += [(chain[q], chain[q + 1]) for q in range(len(chain) - 1)]
            at += n
        if not pairs and p > 1 and r.random() < 0.8:
            pairs = [(m[0], m[1])]
        r.shuffle(pairs)
        return pairs

    def coords(self, d):
        c = []
        for s in reversed(self.sizes):
            c.append(d % s)
            d //= s
        return c[::-1]

    def block(self, mask, c):
        b = 0
        for a in range(len(self.sizes)):
            if a in mask:
                b = b * self.sizes[a] + c[a]
        return b

    def nblocks(self, mask):
        return int(np.prod([self.sizes[a] for a in mask])) if mask else 1

    def member(self, coll, c):
        m = 0
        for a in coll:
            m = m * self.sizes[a] + c[a]
        return m

    def permute(self, vals, coll, pairs):
        """ppermute of per-device values."""
        out = [np.zeros_like(v) for v in vals]
        for d in range(self.ndev):
            c = self.coords(d)
            k = self.member(coll, c)
            for s, t in pairs:
                if t == k:
                    for e in range(self.ndev):
                        ce = self.coords(e)
                        if self.member(coll, ce) == s and all(ce[a] == c[a] for a in range(len(c)) if a not in coll):
                            out[d] = vals[e].copy()
        return out

    def plan(self):
        """The body: statements and the model.  Sends go out in order; each
        is received after the next one is sent (two in flight) or at once;
        the value sent is the operand or what the last receive gave."""
        r = self.rng
        x = [self.x[self.block(self.mask, self.coords(d))] for d in range(self.ndev)]
        lines, cur, curname = [], x, 'a'
        pending = []
        for n, (coll, pairs) in enumerate(self.steps):
            an = self.axes[coll[0]] if len(coll) == 1 and r.random() < 0.5 else \
                '(%s%s)' % (', '.join(self.axes[a] for a in coll), ',' if len(coll) == 1 else '')
            perm = '(%s%s)' % (', '.join('(%d, %d)' % q for q in pairs), ',' if len(pairs) == 1 else '')
            lines.append('  t%d = psend[axis_name=%s, perm=%s] %s' % (n, an, perm, curname))
            pending.append((n, an, perm, coll, pairs, cur))
            if len(pending) == 2 or n == len(self.steps) - 1 or r.random() < 0.5:
                while pending:
                    k = pending.pop(r.randrange(len(pending)))
                    cur, curname = self.receive(lines, k)
        self.result = cur
        self.result_name = curname
        return lines

    def receive(self, lines, k):
        n, an, perm, coll, pairs, sent = k
        shp = '(%s%s)' % (', '.join(str(s) for s in self.shape), ',' if len(self.shape) == 1 else '')
        lines.append('  r%d = precv[axis_name=%s, perm=%s, shape=%s, dtype=f32] t%d' % (n, an, perm, shp, n))
        got = self.permute(sent, coll, pairs)
        if self.rng.random() < 0.4:
            lines.append('  s%d = add r%d a' % (n, n))
            x = [self.x[self.block(self.mask, self.coords(d))] for d in range(self.ndev)]
            return [g + v for g, v in zip(got, x)], 's%d' % n
        return got, 'r%d' % n

    def text(self, tmp):
        pre = 'p%d_' % self.uid
        body = self.plan()
        if self.bad == 'no_precv':
            drop = [i for i, l in enumerate(body) if 'precv[' in l and body[-1] != l] or \
                   [i for i, l in enumerate(body) if 'precv[' in l]
            i = drop[-1]
            name = body[i].split('=')[0].strip()
            body[i] = '  %s = copy a' % name if len(self.shape) else body[i]
        elif self.bad == 'other_pairs':
            # the first precv of an exchange that has pairs receives along them reversed
            cand = [i for i, l in enumerate(body) if 'precv[' in l
                    and self.steps[int(l.split('=')[0].strip()[1:])][1]]
            if not cand:
                self.bad = None
            else:
                i = cand[0]
                pairs = self.steps[int(body[i].split('=')[0].strip()[1:])][1]
                rev = '(%s%s)' % (', '.join('(%d, %d)' % (t, s) for s, t in pairs), ',' if len(pairs) == 1 else '')
                l = body[i]
                body[i] = l[:l.index('perm=') + 5] + rev + l[l.index(', shape='):]
        elif self.bad == 'twice':
            i = [i for i, l in enumerate(body) if 'precv[' in l][0]
            body.insert(i + 1, body[i].replace('  r', '  q', 1))
        spec = 'P()' if not self.mask else 'P((%s))' % ', '.join(self.axes[a] for a in sorted(self.mask))
        ospec = 'P((%s))' % ', '.join(self.axes)
        lines = ['mesh %sm = {%s}' % (pre, ', '.join('%s: %d' % q for q in zip(self.axes, self.sizes))),
                 '%sx = %s' % (pre, lit(self.x.reshape((-1,) + self.shape[1:]))),
                 '@shard_map[mesh=%sm, in_specs=%s, out_specs=%s]' % (pre, spec, ospec),
                 'def %sf(a) {' % pre] + body + \
                ['  o = reshape[new_sizes=(1, %s)] %s' % (', '.join(str(s) for s in self.shape), self.result_name),
                 '  return o', '}',
                 '%sz = %sf %sx' % (pre, pre, pre),
                 'save "%s" %sz' % (os.path.join(tmp, '%d.npy' % self.uid), pre)]
        return '\n'.join(lines) + '\n'

    def check(self, tmp):
        want = np.stack(self.result)
        try:
            got = np.load(os.path.join(tmp, '%d.npy' % self.uid))
        except OSError as e:
            return ['result not saved: %s' % e]
        if got.shape != want.shape or not np.array_equal(got, want):
            return ['result differs:\n got %s\n expected %s' % (got.tolist(), want.tolist())]
        return []


def run(shmapi, path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', LC_ALL='C')
    p = subprocess.run([shmapi, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, env=env, timeout=240)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seed', type=int, default=20261127)
    ap.add_argument('--count', type=int, default=1500)
    ap.add_argument('--bad', type=int, help='programs with a broken pairing (default count / 20)')
    ap.add_argument('--batch', type=int, default=250)
    ap.add_argument('--keep', help='write the programs and results to this directory')
    ap.add_argument('--show', type=int, default=3)
    a = ap.parse_args()
    shmapi = os.environ.get('SHMAPI') or 'build/shmapi'
    rng = random.Random(a.seed)
    tmp = a.keep or tempfile.mkdtemp(prefix='shm-sendrecv-')
    os.makedirs(tmp, exist_ok=True)
    progs = [Prog(rng, u + 1) for u in range(a.count)]
    texts = [p.text(tmp) for p in progs]
    failures = []
    for b0 in range(0, len(progs), a.batch):
        path = os.path.join(tmp, 'batch%d.shm' % (b0 // a.batch))
        with open(path, 'w') as f:
            f.write(''.join(texts[b0:b0 + a.batch]))
        rc, out, err = run(shmapi, path)
        for p, t in zip(progs[b0:b0 + a.batch], texts[b0:b0 + a.batch]):
            if rc != 0:
                one = os.path.join(tmp, 'one.shm')
                with open(one, 'w') as f:
                    f.write(t)
                rc1, _, err1 = run(shmapi, one)
                probs = ['exit status %d\n%s' % (rc1, err1.strip())] if rc1 else p.check(tmp)
            else:
                probs = p.check(tmp)
            if probs:
                failures.append((p, t, probs))
    nbad = a.count // 20 if a.bad is None else a.bad
    caught = 0
    uid = a.count
    for n in range(nbad):
        uid += 1
        p = Prog(rng, uid, bad=BAD_KINDS[n % len(BAD_KINDS)])
        t = p.text(tmp)
        if p.bad is None or not any(pairs for _, pairs in p.steps):
            continue
        one = os.path.join(tmp, 'bad.shm')
        with open(one, 'w') as f:
            f.write(t)
        rc, out, err = run(shmapi, one)
        if rc != 1 or ': error: deadlock: ' not in err or err.count('error:') != 1:
            failures.append((p, t, ['broken pairing %s: expected exit 1 and "error: deadlock: ...", got exit %d:\n%s'
                                    % (p.bad, rc, err.strip()[:1500])]))
        else:
            caught += 1
    for p, t, probs in failures[:a.show]:
        print('program %d:' % p.uid)
        print(t)
        for m in probs:
            print('  ' + m)
    print('%d psend/precv programs (%d exchanges), %d broken pairings caught; %d failures'
          % (len(progs), sum(len(p.steps) for p in progs), caught, len(failures)))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
