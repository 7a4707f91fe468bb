"""Randomized differential test of the local primitives against NumPy.

Builds one .shm program from a fixed seed: random operands (written as
array literals) and random parameters for dot_general, the reductions,
scans, shape and indexing ops and the elementwise ops; runs it; and
compares every printed result with NumPy's.  Integer-valued operands keep
sums and products exact, so most results must match exactly; transcendental
functions get a relative tolerance.  Needs NumPy (skipped without it).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

SEED = 20240611
NCASES = 400
rng = np.random.default_rng(SEED)
DT = {'f32': np.float32, 'f64': np.float64, 'i32': np.int32, 'i64': np.int64, 'bool': np.bool_}

lines = []
expect = []       # (label, array, tolerance or None for exact)
counter = [0]


def fresh(prefix='v'):
    counter[0] += 1
    return f'{prefix}{counter[0]}'


def lit(a):
    """A shm array literal for a (rank >= 1, no zero dims) or a scalar."""
    if a.dtype == np.bool_:
        return repr(a.tolist()).replace('True', 'True').replace('False', 'False')
    if a.dtype.kind == 'f':
        return repr([float(x) for x in a.ravel()]) if a.ndim == 1 else \
            '[' + ', '.join(lit(x) for x in a) + ']'
    return repr(a.tolist())


def bind(a, dt):
    """Emit `name:dt[shape] = literal`; returns the name."""
    name = fresh()
    if a.ndim == 0:
        v = a.item()
        text = repr(float(v)) if dt in ('f32', 'f64') else ('True' if v is True else 'False' if v is False else repr(int(v)))
    else:
        text = lit(a)
    shape = ','.join(str(d) for d in a.shape)
    lines.append(f'{name}:{dt}[{shape}] = {text}')
    return name


def rand_array(shape, dt, lo=-4, hi=5):
    if dt == 'bool':
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.integers(lo, hi, size=shape).astype(DT[dt])


def rand_shape(rank, lo=1, hi=4):
    return tuple(int(x) for x in rng.integers(lo, hi + 1, size=rank))


def check(expr, expected, tol=None):
    name = fresh('r')
    label = f'case{len(expect)}'
    lines.append(f'{name} = {expr}')
    lines.append(f'print "{label}", {name}')
    expect.append((label, np.asarray(expected), tol, expr))


def tup(xs):
    xs = list(xs)
    return '(' + ', '.join(str(x) for x in xs) + (',)' if len(xs) == 1 else ')')


# ---------------------------------------------------------------- generators

def gen_dot():
    dt = str(rng.choice(['f32', 'f64', 'i32', 'f32']))
    nb, nc = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    nlf, nrf = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    bs = rand_shape(nb, 1, 3)
    cs = rand_shape(nc, 1, 4)
    lfs, rfs = rand_shape(nlf, 1, 4), rand_shape(nrf, 1, 4)
    lr, rr = nb + nc + nlf, nb + nc + nrf
    lperm, rperm = rng.permutation(lr), rng.permutation(rr)
    # logical lhs dims: batch..., contract..., free...; placed at lperm positions
    lshape, rshape = [0] * lr, [0] * rr
    lsizes = list(bs) + list(cs) + list(lfs)
    rsizes = list(bs) + list(cs) + list(rfs)
    for k in range(lr):
        lshape[lperm[k]] = lsizes[k]
    for k in range(rr):
        rshape[rperm[k]] = rsizes[k]
    lb, lc = [int(lperm[k]) for k in range(nb)], [int(lperm[nb + k]) for k in range(nc)]
    rb, rc = [int(rperm[k]) for k in range(nb)], [int(rperm[nb + k]) for k in range(nc)]
    a, b = rand_array(tuple(lshape), dt), rand_array(tuple(rshape), dt)
    # expected via einsum
    letters = 'abcdefghijklmnopqrstuvwxyz'
    ls, rs = [''] * lr, [''] * rr
    it = iter(letters)
    for k in range(nb):
        c = next(it); ls[lb[k]] = c; rs[rb[k]] = c
    for k in range(nc):
        c = next(it); ls[lc[k]] = c; rs[rc[k]] = c
    for k in range(lr):
        if not ls[k]:
            ls[k] = next(it)
    for k in range(rr):
        if not rs[k]:
            rs[k] = next(it)
    out = ''.join(ls[d] for d in lb) + ''.join(ls[d] for d in range(lr) if d not in lb and d not in lc) \
        + ''.join(rs[d] for d in range(rr) if d not in rb and d not in rc)
    exp = np.einsum(f"{''.join(ls)},{''.join(rs)}->{out}", a.astype(np.int64), b.astype(np.int64)).astype(DT[dt])
    x, y = bind(a, dt), bind(b, dt)
    dn = f'(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))'
    check(f'dot_general[dimension_numbers={dn}] {x} {y}', exp)


def gen_reduce():
    dt = str(rng.choice(['f32', 'i32', 'f64', 'i64']))
    rank = int(rng.integers(1, 5))
    a = rand_array(rand_shape(rank), dt)
    axes = sorted(int(x) for x in rng.choice(rank, size=int(rng.integers(0, rank + 1)), replace=False))
    op = str(rng.choice(['reduce_sum', 'reduce_max', 'reduce_min', 'reduce_prod']))
    fn = {'reduce_sum': np.sum, 'reduce_max': np.max, 'reduce_min': np.min, 'reduce_prod': np.prod}[op]
    if op == 'reduce_prod':
        a = rand_array(a.shape, dt, -2, 3)
    x = bind(a, dt)
    check(f'{op}[axes={tup(axes)}] {x}', fn(a, axis=tuple(axes)).astype(a.dtype) if axes else a)


def gen_arg():
    dt = str(rng.choice(['f32', 'i32']))
    rank = int(rng.integers(1, 4))
    a = rand_array(rand_shape(rank), dt, -3, 3)
    ax = int(rng.integers(0, rank))
    op = str(rng.choice(['argmax', 'argmin']))
    x = bind(a, dt)
    fn = np.argmax if op == 'argmax' else np.argmin
    check(f'{op}[axes=({ax},), index_dtype=int32] {x}', fn(a, axis=ax).astype(np.int32))


def gen_scan():
    dt = str(rng.choice(['f32', 'i32', 'f64']))
    rank = int(rng.integers(1, 4))
    a = rand_array(rand_shape(rank), dt, -3, 4)
    ax = int(rng.integers(0, rank))
    rev = bool(rng.integers(0, 2))
    op = str(rng.choice(['cumsum', 'cummax', 'cummin']))
    fn = {'cumsum': lambda v: np.cumsum(v, axis=ax), 'cummax': lambda v: np.maximum.accumulate(v, axis=ax),
          'cummin': lambda v: np.minimum.accumulate(v, axis=ax)}[op]
    e = np.flip(fn(np.flip(a, ax)), ax) if rev else fn(a)
    x = bind(a, dt)
    check(f'{op}[axis={ax}, reverse={rev}] {x}', e.astype(a.dtype))


def gen_transpose():
    dt = str(rng.choice(['f32', 'i64', 'bool']))
    rank = int(rng.integers(1, 5))
    a = rand_array(rand_shape(rank), dt)
    p = [int(v) for v in rng.permutation(rank)]
    x = bind(a, dt)
    check(f'transpose[permutation={tup(p)}] {x}', np.transpose(a, p))


def gen_broadcast():
    dt = str(rng.choice(['f32', 'i32']))
    rank = int(rng.integers(0, 3))
    extra = int(rng.integers(0, 3))
    out_rank = rank + extra
    bd = sorted(int(v) for v in rng.choice(out_rank, size=rank, replace=False)) if rank else []
    oshape = list(rand_shape(out_rank))
    ishape = []
    for k, d in enumerate(bd):
        ishape.append(1 if rng.integers(0, 3) == 0 else oshape[d])
    a = rand_array(tuple(ishape), dt)
    x = bind(a, dt)
    view = a.reshape([ishape[bd.index(d)] if d in bd else 1 for d in range(out_rank)]) if out_rank else a
    check(f'broadcast_in_dim[shape={tup(oshape)}, broadcast_dimensions={tup(bd)}] {x}',
          np.broadcast_to(view, tuple(oshape)))


def gen_slice():
    dt = str(rng.choice(['f32', 'i32']))
    rank = int(rng.integers(1, 4))
    shape = rand_shape(rank, 1, 6)
    a = rand_array(shape, dt)
    st, li, sd = [], [], []
    for d in shape:
        s = int(rng.integers(0, d + 1))
        l = int(rng.integers(s, d + 1))
        st.append(s); li.append(l); sd.append(int(rng.integers(1, 3)))
    x = bind(a, dt)
    idx = tuple(slice(s, l, k) for s, l, k in zip(st, li, sd))
    check(f'slice[start_indices={tup(st)}, limit_indices={tup(li)}, strides={tup(sd)}] {x}', a[idx])


def gen_pad():
    dt = str(rng.choice(['f32', 'i32']))
    rank = int(rng.integers(1, 4))
    shape = rand_shape(rank, 1, 4)
    a = rand_array(shape, dt)
    cfg = []
    for d in shape:
        it = int(rng.integers(0, 3))
        full = d + (d - 1) * it
        lo = int(rng.integers(-min(full, 2), 3))
        hi = int(rng.integers(-min(full + lo, 2) if full + lo > 0 else 0, 3))
        cfg.append((lo, hi, it))
    # expected: interior, then lo/hi with cropping
    e = a
    for ax, (lo, hi, it) in enumerate(cfg):
        n = e.shape[ax]
        m = n + max(n - 1, 0) * it
        sh = list(e.shape); sh[ax] = m
        t = np.full(sh, 9, dtype=a.dtype)
        sl = [slice(None)] * e.ndim; sl[ax] = slice(0, m, it + 1)
        t[tuple(sl)] = e
        if lo >= 0:
            padsh = list(t.shape); padsh[ax] = lo
            t = np.concatenate([np.full(padsh, 9, a.dtype), t], axis=ax)
        else:
            sl = [slice(None)] * t.ndim; sl[ax] = slice(-lo, None); t = t[tuple(sl)]
        if hi >= 0:
            padsh = list(t.shape); padsh[ax] = hi
            t = np.concatenate([t, np.full(padsh, 9, a.dtype)], axis=ax)
        else:
            sl = [slice(None)] * t.ndim; sl[ax] = slice(0, t.shape[ax] + hi); t = t[tuple(sl)]
        e = t
    if 0 in e.shape:
        return
    x = bind(a, dt)
    cfgs = '(' + ', '.join(f'({lo}, {hi}, {it})' for lo, hi, it in cfg) + (',)' if len(cfg) == 1 else ')')
    check(f'pad[padding_config={cfgs}] {x} 9', e)


def gen_concat():
    dt = str(rng.choice(['f32', 'i32']))
    rank = int(rng.integers(1, 4))
    base = list(rand_shape(rank))
    ax = int(rng.integers(0, rank))
    arrs = []
    for _ in range(int(rng.integers(1, 4))):
        sh = list(base); sh[ax] = int(rng.integers(1, 4))
        arrs.append(rand_array(tuple(sh), dt))
    names = [bind(a, dt) for a in arrs]
    check(f'concatenate[dimension={ax}] ' + ' '.join(names), np.concatenate(arrs, axis=ax))


def gen_reshape_rev():
    dt = str(rng.choice(['f32', 'i32']))
    rank = int(rng.integers(1, 4))
    a = rand_array(rand_shape(rank), dt)
    x = bind(a, dt)
    dims = sorted(int(v) for v in rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=False))
    check(f'rev[dimensions={tup(dims)}] {x}', np.flip(a, dims))
    n = a.size
    divs = [d for d in range(1, n + 1) if n % d == 0]
    d0 = int(rng.choice(divs))
    check(f'reshape[new_sizes=({d0}, {n // d0})] {x}', a.reshape(d0, n // d0))


def gen_dynamic():
    dt = str(rng.choice(['f32', 'i32']))
    rank = int(rng.integers(1, 4))
    shape = rand_shape(rank, 1, 5)
    a = rand_array(shape, dt)
    sizes = [int(rng.integers(0, d + 1)) for d in shape]
    starts = [int(rng.integers(-2, d + 3)) for d in shape]
    cl = [min(max(s, 0), d - z) for s, d, z in zip(starts, shape, sizes)]
    x = bind(a, dt)
    if 0 not in sizes:
        check(f'dynamic_slice[slice_sizes={tup(sizes)}] {x} ' + ' '.join(str(s) for s in starts),
              a[tuple(slice(c, c + z) for c, z in zip(cl, sizes))])
    usz = [max(z, 1) for z in sizes]
    u = rand_array(tuple(usz), dt, 10, 20)
    cl = [min(max(s, 0), d - z) for s, d, z in zip(starts, shape, usz)]
    e = a.copy()
    e[tuple(slice(c, c + z) for c, z in zip(cl, usz))] = u
    y = bind(u, dt)
    check(f'dynamic_update_slice {x} {y} ' + ' '.join(str(s) for s in starts), e)


def gen_binary():
    dt = str(rng.choice(['f32', 'f64', 'i32', 'i64']))
    shape = rand_shape(int(rng.integers(0, 3)))
    op = str(rng.choice(['add', 'sub', 'mul', 'max', 'min', 'div', 'rem', 'eq', 'lt', 'ge']))
    a, b = rand_array(shape, dt), rand_array(shape, dt)
    if op in ('div', 'rem'):
        b = np.where(b == 0, 3, b).astype(b.dtype)
    scalar_b = bool(rng.integers(0, 3) == 0)
    if scalar_b:
        b = b.ravel()[:1].reshape(()) if b.size else np.asarray(2, b.dtype)
    kind = a.dtype.kind
    fn = {'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'max': np.maximum, 'min': np.minimum,
          'eq': np.equal, 'lt': np.less, 'ge': np.greater_equal,
          'div': (np.divide if kind == 'f' else lambda x, y: np.trunc(x / y).astype(x.dtype)),
          'rem': np.fmod}[op]
    x, y = bind(a, dt), bind(b, dt)
    e = fn(a, b)
    check(f'{op} {x} {y}', np.asarray(e).astype(e.dtype if op in ('eq', 'lt', 'ge') else a.dtype),
          1e-6 if op == 'div' and kind == 'f' else None)


def gen_unary():
    dt = str(rng.choice(['f32', 'f64']))
    shape = rand_shape(int(rng.integers(1, 3)))
    a = (rng.random(shape) * 4 - 2).astype(DT[dt])
    op = str(rng.choice(['exp', 'tanh', 'logistic', 'sin', 'cos', 'sqrt', 'log', 'abs', 'neg', 'floor', 'erf']))
    import math
    fn = {'exp': np.exp, 'tanh': np.tanh, 'logistic': lambda v: 1 / (1 + np.exp(-v)), 'sin': np.sin,
          'cos': np.cos, 'sqrt': lambda v: np.sqrt(np.abs(v)), 'log': lambda v: np.log(np.abs(v)),
          'abs': np.abs, 'neg': np.negative, 'floor': np.floor,
          'erf': np.vectorize(math.erf)}[op]
    x = bind(a, dt)
    if op in ('sqrt', 'log'):
        x2 = fresh()
        lines.append(f'{x2} = abs {x}')
        x = x2
    e = fn(a.astype(np.float64)).astype(a.dtype)
    check(f'{op} {x}', e, 2e-7 if dt == 'f32' else 1e-7)


GENS = [gen_dot] * 6 + [gen_reduce] * 3 + [gen_arg, gen_scan, gen_transpose, gen_broadcast, gen_slice,
                                           gen_pad, gen_concat, gen_reshape_rev, gen_dynamic] + [gen_binary] * 3 + [gen_unary] * 2


def parse(text):
    toks = text.replace('[', ' ').replace(']', ' ').split()
    out = []
    for t in toks:
        out.append({'True': 1.0, 'False': 0.0, 'nan': float('nan'), 'inf': float('inf'),
                    '-inf': float('-inf')}.get(t, None) if t in ('True', 'False', 'nan', 'inf', '-inf') else float(t))
    return np.array(out, dtype=np.float64)


def main():
    shmapi = os.environ.get('SHMAPI') or (sys.argv[1] if len(sys.argv) > 1 else None)
    if not shmapi:
        print('SHMAPI is not set')
        return 77
    for _ in range(NCASES):
        GENS[int(rng.integers(0, len(GENS)))]()
    src = '\n'.join(lines) + '\n'
    with tempfile.NamedTemporaryFile('w', suffix='.shm', delete=False) as f:
        f.write(src)
        path = f.name
    try:
        p = subprocess.run([shmapi, path], capture_output=True, text=True, timeout=120)
    finally:
        keep = os.environ.get('SHM_KEEP')
        if not keep:
            os.unlink(path)
    if p.returncode != 0:
        print('shmapi failed:', p.returncode)
        print(p.stderr[:4000])
        return 1
    # split output by labels
    got = {}
    cur = None
    for line in p.stdout.split('\n'):
        if line.startswith('case'):
            label, _, rest = line.partition(' ')
            cur = label
            got[cur] = rest
        elif cur is not None:
            got[cur] += ' ' + line
    bad = 0
    for label, e, tol, expr in expect:
        if label not in got:
            print(f'{label}: no output for {expr}')
            bad += 1
            continue
        g = parse(got[label])
        ev = e.astype(np.float64).ravel()
        ok = g.shape == ev.shape
        if ok:
            if tol is None:
                ok = np.array_equal(g, ev, equal_nan=True) or np.allclose(g, ev, rtol=5e-7, atol=0, equal_nan=True)
            else:
                ok = np.allclose(g, ev, rtol=tol, atol=tol, equal_nan=True)
        if not ok:
            bad += 1
            if bad <= 10:
                print(f'{label}: {expr}\n  expected {e.dtype}{list(e.shape)}: {ev[:20]}\n  got: {g[:20]}')
    print(f'{len(expect) - bad}/{len(expect)} cases agree with NumPy')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
