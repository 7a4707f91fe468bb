"""Every derivative rule against central finite differences, and reverse
mode against forward mode (docs/language.md, Differentiation), on random
programs (_adgen.py): f64 functions built from random chains of every
differentiable primitive, control flow and collective, inside shard_map
(meshes of one or two axes, random specs) and outside, with random
inputs x, tangents v and cotangents w.  For each program:

  * jvp against finite differences: <w, jvp f (x; v)> equals
    <w, (f(x + h v) - f(x - h v)) / 2h> (h = 1e-6), up to the
    differences' truncation and rounding error;
  * vjp against jvp: <vjp f (x; w), v> equals <w, jvp f (x; v)>;
  * grad (a function of one scalar result) against jvp: <grad f (x), v> w
    equals <w, jvp f (x; v)>.

Programs with a while loop, or a fori_loop whose bounds are values, are
differentiated in forward mode only (reverse mode refuses them, as JAX
does).  A tenth of the programs run in f32 and are judged by the two
identities only.  Programs are batched, many per shmapi run; a batch that
fails is re-run program by program to name the culprit, whose source is
printed.  Fixed seed (SHM_AD_SEED), SHM_AD_N programs.

Run by tests/run.py with SHMAPI set; cwd is the repository root.
"""

# timeout: 300

import math
import os
import random
import sys

sys.dont_write_bytecode = True       # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _adgen  # noqa: E402
import _batch  # noqa: E402

SHMAPI = os.environ.get('SHMAPI', 'build/shmapi')
SEED = int(os.environ.get('SHM_AD_SEED', '20240215'))
N = int(os.environ.get('SHM_AD_N', '3000'))
BATCH = 60
FD_REL, FD_ABS = 2e-5, 1e-7         # finite differences: relative, and to the size of f
ID64, ID32 = 1e-9, 2e-3             # the identities, f64 and f32 (relative to the terms' sizes)
FLOOR64, FLOOR32 = 1e-12, 1e-6       # and absolute: f32 rounding where terms cancel


def judge(p, vals):
    """None if every check holds, else a message."""
    if vals is None:
        return 'no result line'
    jv, fd, jabs, fabs, vj, vabs, gv = vals
    if any(math.isnan(x) or math.isinf(x) for x in vals):
        return 'a non-finite value: %r' % (vals,)
    msgs = []
    if not p.lowprec:
        tol = FD_REL * (jabs + abs(fd)) + FD_ABS * fabs + 1e-8
        if abs(jv - fd) > tol:
            msgs.append('jvp %r but finite differences %r (|diff| %.3g > tol %.3g)' % (jv, fd, abs(jv - fd), tol))
    idt = ID32 if p.lowprec else ID64
    floor = FLOOR32 if p.lowprec else FLOOR64
    tol = idt * (jabs + vabs) + floor
    if not p.fwd_only and abs(vj - jv) > tol:
        msgs.append('<vjp(w), v> = %r but <w, jvp(v)> = %r (|diff| %.3g > tol %.3g)' % (vj, jv, abs(vj - jv), tol))
    if gv != 0.0 and abs(gv - jv) > idt * (jabs + abs(gv)) + floor:
        msgs.append('<grad, v> w = %r but <w, jvp(v)> = %r' % (gv, jv))
    return '; '.join(msgs) or None


def main():
    rng = random.Random(SEED)
    progs = [_adgen.gen_program(rng, k, lowprec=rng.random() < 0.1) for k in range(N)]
    failures = _batch.run_all(SHMAPI, progs, 'ad', 7, judge, 240, BATCH)
    nrev = sum(not p.fwd_only for p in progs)
    nsm = sum('@shard_map' in p.text for p in progs)
    print('%d programs (%d inside shard_map, %d also in reverse mode, %d in f32); %d failed'
          % (len(progs), nsm, nrev, sum(p.lowprec for p in progs), len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
