"""Random differentiable programs for the derivative tests (derivatives.test.py).

gen_program(rng, k) returns a Program: shm text defining a function f<k>
(a shard_map on a mesh of one or two axes, or a plain function), built
from random chains of every differentiable primitive (elementwise math
with its operand mapped into the function's domain, reductions, scans,
shapes and indexing, dot_general, select_n and clamp, cond, fori_loop,
while, calls, collectives), its derivatives

    def f<k>_jvp = jvp f<k>
    def f<k>_vjp = vjp f<k>               (when reverse mode applies)
    def f<k>_g = grad[argnums=...] f<k>    (when f returns one scalar)

random inputs x, tangents v and cotangents w, and one line

    ad <k> <jv> <fd> <jabs> <fabs> <vj> <vabs> <gv>

computed in shm (f64) with jv = <w, jvp(x; v)>, fd the same from central
finite differences (f(x + h v) - f(x - h v)) / 2h, vj = <vjp(x; w), v>,
gv = <grad(x), v> * w (or 0 when absent), and the sums of absolute
values the tolerance scales with.  A while loop or a fori_loop whose
bounds are values makes a program forward-only (reverse mode refuses
them, as in JAX).  Programs marked lowprec run in f32 and are judged by
the identities only.

The linear operations and the collectives come from the adjoint test's
generator (tests/transpose/_shmgen.py), which models the checker's shape
and variance rules; a program that does not check is a failure of
either side, reported with its source.  Python standard library only.
"""

import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'transpose'))
import _shmgen  # noqa: E402
from _shmgen import V, prod, tup, fmt, literal, inner  # noqa: E402

H = '1e-6'          # the finite-difference step

# unary primitives and the domain their operand is first mapped into:
# any, bounded (-1.5, 1.5), unit (-0.9, 0.9), pos (0.5, 2.5), ge1 [1.5, ...)
UNARY = [
    ('exp', 'bounded'), ('exp2', 'bounded'), ('expm1', 'bounded'), ('log', 'pos'), ('log1p', 'pos'),
    ('tanh', 'any'), ('logistic', 'any'), ('sqrt', 'pos'), ('rsqrt', 'pos'), ('cbrt', 'pos'),
    ('sin', 'any'), ('cos', 'any'), ('tan', 'unit'), ('asin', 'unit'), ('acos', 'unit'), ('atan', 'any'),
    ('sinh', 'bounded'), ('cosh', 'bounded'), ('asinh', 'any'), ('acosh', 'ge1'), ('atanh', 'unit'),
    ('erf', 'any'), ('erfc', 'any'), ('lgamma', 'pos'), ('digamma', 'pos'), ('square', 'any'),
    ('abs', 'any'), ('neg', 'any'), ('sign', 'any'), ('floor', 'any'), ('ceil', 'any'), ('round', 'any'),
    ('copy', 'any'),
]
BINARY = ['add', 'sub', 'mul', 'div', 'pow', 'max', 'min', 'atan2', 'rem']


class AdGen(_shmgen.Gen):
    """A generator of differentiable programs (values of f64, or f32)."""

    def __init__(self, rng, k, dt='f64'):
        super().__init__(rng, k)
        self.dt = dt
        self.fwd_only = False

    # ---- domain maps -----------------------------------------------------

    def domain(self, a, dom):
        """A name for a mapped into a domain (the same type).  In f32, every
        operand is first bounded by sin: a saturated tanh would make the
        derivative a difference of nearly equal f32 numbers, where forward
        and reverse mode round differently."""
        src = a.name
        if self.dt == 'f32':
            src = self.fresh('b')
            self.emit('%s = sin %s' % (src, a.name))
        if dom == 'any':
            return src
        a = V(src, a.dt, a.shape, a.vma)
        t = self.fresh('d')
        if dom == 'pos':
            self.emit('%s_a = logistic %s' % (t, a.name))
            self.emit('%s_b = mul %s_a 2.0' % (t, t))
            self.emit('%s = add %s_b 0.5' % (t, t))
        elif dom == 'unit':
            self.emit('%s_a = tanh %s' % (t, a.name))
            self.emit('%s = mul %s_a 0.9' % (t, t))
        elif dom == 'bounded':
            self.emit('%s_a = tanh %s' % (t, a.name))
            self.emit('%s = mul %s_a 1.5' % (t, t))
        else:  # ge1
            self.emit('%s_a = square %s' % (t, a.name))
            self.emit('%s = add %s_a 1.5' % (t, t))
        return t

    def other(self, a):
        """Another value of a's dtype and shape (or a scalar), a itself at worst."""
        c = [v for v in self.pool if v.dt == a.dt and v is not a and (v.shape == a.shape or not v.shape)]
        return self.rng.choice(c) if c else a

    # ---- nonlinear operations ----------------------------------------------

    def op_unary(self, a):
        r = self.rng
        if r.random() < 0.12:
            y = r.choice([-2, -1, 0, 1, 2, 3])
            x = self.domain(a, 'pos' if y < 0 else 'any')
            v = self.new(a.dt, a.shape, a.vma, 'integer_pow')
            self.emit('%s = integer_pow[y=%d] %s' % (v.name, y, x))
            return v
        if r.random() < 0.05:
            x = self.domain(a, 'pos')
            v = self.new(a.dt, a.shape, a.vma, 'polygamma')
            self.emit('%s = polygamma %s %s' % (v.name, r.choice(['1.0', '2.0', '0.0']), x))
            return v
        name, dom = r.choice(UNARY)
        x = self.domain(a, dom)
        v = self.new(a.dt, a.shape, a.vma, name)
        self.emit('%s = %s %s' % (v.name, name, x))
        return v

    def op_binary(self, a):
        r = self.rng
        b = self.other(a)
        prim = r.choice(BINARY)
        x, y = a.name, b.name
        if prim in ('div', 'atan2', 'rem'):
            y = self.domain(b, 'pos')
        if prim == 'pow':
            x = self.domain(a, 'pos')
            if r.random() < 0.3:
                e = self.fresh('e')
                self.emit('%s = full[shape=%s, value=%d, dtype=i32]' % (e, tup(b.shape) if b.shape else '()',
                                                                          r.choice([-2, 0, 1, 3])))
                y = e
            else:
                y = self.domain(b, 'unit')
        if r.random() < 0.5 and prim not in ('pow',):
            x, y = (y, x) if prim in ('add', 'mul', 'max', 'min') else (x, y)
        shape = a.shape or b.shape
        v = self.new(a.dt, shape, a.vma | b.vma, prim)
        self.emit('%s = %s %s %s' % (v.name, prim, x, y))
        return v

    def op_clamp(self, a):
        r = self.rng
        b, c = self.other(a), self.other(a)
        lo, hi = self.fresh('lo'), self.fresh('hi')
        # random coefficients: two clamps never share a bound (a tie, where
        # the derivative is JAX's choice, not the limit of differences)
        self.emit('%s_a = tanh %s' % (lo, b.name))
        self.emit('%s_b = mul %s_a %s' % (lo, lo, fmt(r.uniform(0.2, 0.3))))
        self.emit('%s = sub %s_b %s' % (lo, lo, fmt(r.uniform(0.45, 0.55))))
        self.emit('%s_a = tanh %s' % (hi, c.name))
        self.emit('%s_b = mul %s_a %s' % (hi, hi, fmt(r.uniform(0.2, 0.3))))
        self.emit('%s = add %s_b %s' % (hi, hi, fmt(r.uniform(0.45, 0.55))))
        if r.random() < 0.3:
            lo, hi = r.choice(['-0.4', '-0.2']), r.choice(['0.3', '0.6'])
            vma = a.vma
        else:
            vma = a.vma | b.vma | c.vma
            if (b.shape and not a.shape) or (c.shape and not a.shape):
                return None
        v = self.new(a.dt, a.shape, vma, 'clamp')
        self.emit('%s = clamp %s %s %s' % (v.name, lo, a.name, hi))
        return v

    def op_select(self, a):
        b, c = self.other(a), self.other(a)
        p = self.fresh('p')
        self.emit('%s = lt %s %s' % (p, a.name, b.name))
        shape = a.shape or b.shape
        if c.shape != shape and c.shape:
            return None
        v = self.new(a.dt, shape, a.vma | b.vma | c.vma, 'select_n')
        self.emit('%s = select_n %s %s %s' % (v.name, p, c.name, a.name if a.shape == shape else b.name))
        return v

    def op_reduce_nl(self, a):
        r = self.rng
        if not a.shape:
            return None
        prim = r.choice(['reduce_max', 'reduce_min', 'reduce_prod', 'argmax', 'argmin'])
        if prim in ('argmax', 'argmin'):
            d = r.randrange(a.rank)
            shape = [a.shape[i] for i in range(a.rank) if i != d]
            nm = self.fresh('am')
            self.emit('%s = %s[axes=(%d,), index_dtype=i32] %s' % (nm, prim, d, a.name))
            self.emit('%s_f = convert_element_type[new_dtype=%s] %s' % (nm, a.dt, nm))
            red = self.fresh('rs')
            self.emit('%s = reduce_sum[axes=(%d,)] %s' % (red, d, a.name))
            v = self.new(a.dt, shape, a.vma, prim)
            self.emit('%s = mul %s_f %s' % (v.name, nm, red))
            return v
        axes = sorted(d for d in range(a.rank) if r.random() < 0.5) or [r.randrange(a.rank)]
        shape = [a.shape[d] for d in range(a.rank) if d not in axes]
        v = self.new(a.dt, shape, a.vma, prim)
        self.emit('%s = %s[axes=%s] %s' % (v.name, prim, tup(axes), a.name))
        return v

    def op_cum_nl(self, a):
        r = self.rng
        if not a.shape:
            return None
        prim = r.choice(['cumprod', 'cummax', 'cummin', 'cumsum'])
        v = self.new(a.dt, a.shape, a.vma, prim)
        self.emit('%s = %s[axis=%d, reverse=%s] %s' % (v.name, prim, r.randrange(a.rank),
                                                        r.choice(['True', 'False']), a.name))
        return v

    def op_bilinear(self, a):
        """dot_general of a with a function of itself (bilinear in a)."""
        r = self.rng
        if not a.shape or 2 * a.rank - 2 > _shmgen.MAX_RANK:
            return None
        b = self.fresh('b')
        self.emit('%s = sin %s' % (b, a.name))
        k = r.randrange(a.rank)
        free = [a.shape[d] for d in range(a.rank) if d != k]
        shape = free + free
        if prod(shape) > _shmgen.MAX_SIZE:
            return None
        v = self.new(a.dt, shape, a.vma, 'dot_general')
        self.emit('%s = dot_general[dimension_numbers=(([%d], [%d]), ([], []))] %s %s' % (v.name, k, k, a.name, b))
        return v

    def op_product(self, a):
        b = self.other(a)
        v = self.new(a.dt, a.shape or b.shape, a.vma | b.vma, 'mul')
        self.emit('%s = mul %s %s' % (v.name, a.name, b.name))
        return v

    # ---- control flow with nonlinear functions --------------------------------

    def nl_lines(self, x, y, shape):
        """Lines computing y from x, of x's type, nonlinearly."""
        r = self.rng
        k = r.choice(['sin', 'sq', 'exp', 'mixed', 'log'])
        if k == 'sin':
            return ['%s_s = sin %s' % (y, x), '%s = mul %s_s %s' % (y, y, fmt(r.uniform(0.5, 1.2)))]
        if k == 'sq':
            return ['%s = mul %s %s' % (y, x, x)]
        if k == 'exp':
            return ['%s_t = tanh %s' % (y, x), '%s = exp %s_t' % (y, y)]
        if k == 'log':
            return ['%s_a = square %s' % (y, x), '%s_b = add %s_a 1.0' % (y, y), '%s = log %s_b' % (y, y)]
        lines = ['%s_c = cos %s' % (y, x), '%s = mul %s %s_c' % (y, x, y)]
        if shape:
            lines = ['%s_c = cumsum[axis=0] %s' % (y, x), '%s_d = tanh %s_c' % (y, y), '%s = mul %s_d %s' % (y, y, x)]
        return lines

    def cond_index(self, a):
        """A cond index: from the data, a literal, or varying by device."""
        r = self.rng
        k = self.fresh('k')
        c = r.random()
        if c < 0.4:
            s = self.fresh('s')
            if a.shape:
                self.emit('%s = reduce_sum[axes=%s] %s' % (s, tup(range(a.rank)), a.name))
            else:
                self.emit('%s = copy %s' % (s, a.name))
            self.emit('%s_p = gt %s %s' % (k, s, fmt(r.uniform(-0.3, 0.3))))
            self.emit('%s = convert_element_type[new_dtype=i32] %s_p' % (k, k))
            return k, a.vma
        if c < 0.6 and self.axes:
            ax = r.choice(self.axes)
            self.emit('%s = axis_index[axis_name=%s]' % (k, ax))
            return k, frozenset([ax])
        if c < 0.75 and self.int_param:
            return self.int_param, frozenset()
        self.emit('%s = full[shape=(), value=%d, dtype=i32]' % (k, r.randrange(3)))
        return k, frozenset()

    def op_cond_nl(self, a):
        r = self.rng
        b = self.other(a)
        if b.shape != a.shape:
            b = a
        nb = r.choice([2, 3])
        names = []
        for _ in range(nb):
            nm = self.hname('br')
            la = self.nl_lines('x', 'u', a.shape)
            lb = ['w = mul u y'] if r.random() < 0.5 else ['w = add u y']
            self.helpers.append('def %s(x, y) {\n%s\n  return w\n}' % (nm, '\n'.join('  ' + l for l in la + lb)))
            names.append(nm)
        ix, iv = self.cond_index(a)
        v = self.new(a.dt, a.shape, a.vma | b.vma | iv, 'cond')
        self.emit('%s = cond[branches=%s] %s %s %s' % (v.name, tup(names), ix, a.name, b.name))
        return v

    def op_fori_nl(self, a):
        r = self.rng
        nm = self.hname('body')
        b = self.other(a)
        if b.shape != a.shape:
            b = a
        lines = ['fk = convert_element_type[new_dtype=%s] k' % a.dt, 'fs = mul fk 0.3']
        lines += self.nl_lines('x', 'u', a.shape)
        # tanh keeps the carry bounded: repeated squaring would outgrow
        # what finite differences can follow
        lines += ['x0 = tanh u', 'x1 = mul x0 0.7', 'yy = mul y fs', 'x2 = add x1 yy', 'c = cos x', 'y1 = mul y c']
        self.helpers.append('def %s(k, x, y) {\n%s\n  return x2, y1\n}' % (nm, '\n'.join('  ' + l for l in lines)))
        vma = a.vma | b.vma
        if self.int_param and r.random() < 0.3:
            self.fwd_only = True         # bounds that are values: forward mode only
            lo, hi = '0', self.int_param
        else:
            lo = r.randrange(0, 2)
            hi = lo + r.randrange(0, 4)
        v = self.new(a.dt, a.shape, vma, 'fori_loop')
        w = self.fresh('w')
        self.emit('%s, %s = fori_loop[lower=%s, upper=%s, body=%s, reverse=%s] %s %s'
                  % (v.name, w, lo, hi, nm, r.choice(['False', 'False', 'True']), a.name, b.name))
        return v

    def op_while_nl(self, a):
        """A while loop: forward mode only."""
        r = self.rng
        cn, bn = self.hname('wc'), self.hname('wb')
        self.helpers.append('def %s(lim, n, x) {\n  p = lt n lim\n  return p\n}' % cn)
        lines = self.nl_lines('x', 'u', a.shape) + ['x1 = mul u 0.8', 'n1 = add n 1']
        self.helpers.append('def %s(n, x) {\n%s\n  return n1, x1\n}' % (bn, '\n'.join('  ' + l for l in lines)))
        self.fwd_only = True
        v = self.new(a.dt, a.shape, a.vma, 'while')
        c = self.fresh('c')
        self.emit('%s, %s = while[cond_jaxpr=%s, body_jaxpr=%s, cond_nconsts=1] %d 0 %s'
                  % (c, v.name, cn, bn, r.randrange(0, 4), a.name))
        return v

    def op_scan_nl(self, a):
        """A scan over a's first dimension: a nonlinear carry (started from
        a's first row) and ys; w, a scalar of the pool or a literal, is a
        const."""
        r = self.rng
        if not a.shape:
            return None
        nm = self.hname('sb')
        sl = a.shape[1:]
        ws = [v for v in self.pool if not v.shape and v.dt == a.dt and v.vma <= a.vma]
        wp = r.choice(ws) if ws and r.random() < 0.7 else None
        w, wv = (wp.name + ' ', wp.vma) if wp else ('', frozenset())
        lines = ['a1 = mul c %s' % ('w' if wp else fmt(r.uniform(0.5, 1.1))), 'b1 = sin x', 'c0 = add a1 b1',
                 'c1 = tanh c0', 'y = mul c1 x']
        self.helpers.append('def %s(%sc, x) {\n%s\n  return c1, y\n}'
                            % (nm, 'w, ' if wp else '', '\n'.join('  ' + l for l in lines)))
        c0 = self.fresh('c0')
        lim = (1,) + tuple(sl)
        self.emit('%s_s = slice[start_indices=%s, limit_indices=%s] %s' % (c0, tup([0] * a.rank), tup(lim), a.name))
        self.emit('%s = reshape[new_sizes=%s] %s_s' % (c0, tup(sl) if sl else '()', c0))
        c, ys = self.fresh('cs'), self.fresh('ys')
        self.emit('%s, %s = scan[jaxpr=%s, num_consts=%d, num_carry=1, reverse=%s] %s%s %s'
                  % (c, ys, nm, 1 if wp else 0, r.choice(['False', 'True']), w, c0, a.name))
        if r.random() < 0.3:
            v = V(c, a.dt, sl, a.vma | wv)
            self.pool.append(v)
            self.ops_used.append('scan')
            return v
        v = V(ys, a.dt, a.shape, a.vma | wv)
        self.pool.append(v)
        self.ops_used.append('scan')
        return v

    def op_pmap_nl(self, a):
        """An xla_pmap over a's first dimension, a psum inside: forward mode
        only (its transpose is not written).  Outside shard_map only."""
        if self.axes or not a.shape or a.shape[0] > 8:
            return None
        nm = self.hname('pm')
        lines = ['u = sin x', 's = psum[axes=rows] u', 'y = mul u s']
        self.helpers.append('def %s(x) {\n%s\n  return y\n}' % (nm, '\n'.join('  ' + l for l in lines)))
        self.fwd_only = True
        v = self.new(a.dt, a.shape, a.vma, 'xla_pmap')
        self.emit('%s = xla_pmap[axis_name=rows, axis_size=%d, call_jaxpr=%s, in_axes=(0,), out_axes=(0,)] %s'
                  % (v.name, a.shape[0], nm, a.name))
        return v

    def op_call_nl(self, a):
        nm = self.hname('g')
        sub = AdGen(self.rng, self.k, self.dt)
        sub.axes, sub.size = self.axes, self.size
        sub.nhelp = self.nhelp
        sub.int_param = None
        x = V('x', a.dt, a.shape, a.vma)
        sub.pool = [x]
        cur = x
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.choice(['unary', 'unary', 'product', 'binary', 'neg', 'cum_nl'])
            nv = getattr(sub, 'op_' + op)(cur)
            if nv is not None:
                cur = nv
        if cur is x:
            cur = sub.op_unary(x)
        self.nhelp = sub.nhelp
        self.helpers.extend(sub.helpers)
        self.helpers.append('def %s(x) {\n%s\n  return %s\n}' % (nm, '\n'.join(sub.lines), cur.name))
        v = self.new(cur.dt, cur.shape, cur.vma, 'call')
        self.emit('%s = %s %s' % (v.name, nm, a.name))
        return v

    def op_pad_nl(self, a):
        """pad with a padding value computed from the inputs."""
        r = self.rng
        if not a.shape:
            return None
        pv = [v for v in self.pool if not v.shape and v.dt == a.dt and v.vma <= a.vma]
        if not pv:
            return None
        p = r.choice(pv)
        cfg = ['(%d, %d, %d)' % (r.choice([0, 1]), r.choice([0, 1, 2]), r.choice([0, 1])) for _ in a.shape]
        shape = []
        for n, c in zip(a.shape, cfg):
            lo, hi, it = eval(c)
            shape.append(n + lo + hi + (n - 1) * it)
        if prod(shape) > _shmgen.MAX_SIZE:
            return None
        v = self.new(a.dt, shape, a.vma, 'pad')
        self.emit('%s = pad[padding_config=(%s,)] %s %s' % (v.name, ', '.join(cfg), a.name, p.name))
        return v

    def op_convert_wide(self, a):
        """To the other float dtype and back, through a function there."""
        to = 'f64' if a.dt == 'f32' else 'f32'
        if to == 'f32' and self.dt == 'f64':
            return None          # f32 rounding would drown the finite differences
        t = self.fresh('cv')
        self.emit('%s_a = convert_element_type[new_dtype=%s] %s' % (t, to, a.name))
        self.emit('%s_b = sin %s_a' % (t, t))
        v = self.new(a.dt, a.shape, a.vma, 'convert_element_type')
        self.emit('%s = convert_element_type[new_dtype=%s] %s_b' % (v.name, a.dt, t))
        return v

    # the linear operations that make f32 (a convert): kept in the dtype
    def op_convert(self, a):
        v = self.new(a.dt, a.shape, a.vma, 'convert_element_type')
        self.emit('%s = convert_element_type[new_dtype=%s] %s' % (v.name, a.dt, a.name))
        return v


OPS = {
    'unary': 10, 'binary': 8, 'product': 3, 'clamp': 2, 'select': 2, 'reduce_nl': 3, 'cum_nl': 2,
    'bilinear': 2, 'cond_nl': 2, 'fori_nl': 2, 'while_nl': 1, 'call_nl': 2, 'pad_nl': 1, 'convert_wide': 1,
    'scan_nl': 2, 'pmap_nl': 1,
    # linear ones (the adjoint test's)
    'neg': 1, 'mul': 2, 'div': 1, 'add': 2, 'sub': 1, 'dot': 2, 'reshape': 2, 'transpose': 1,
    'broadcast_in_dim': 1, 'reduce_sum': 2, 'squeeze': 1, 'expand_dims': 1, 'slice': 2, 'pad': 1,
    'concatenate': 1, 'dynamic_slice': 1, 'dynamic_update_slice': 1, 'convert': 1, 'cumsum': 1, 'rev': 1,
    'split': 1, 'psum': 3, 'pmean': 1, 'pbroadcast': 2, 'all_gather': 2, 'psum_scatter': 2,
    'all_gather_invariant': 1, 'pscatter': 2, 'ppermute': 2, 'all_to_all': 2,
}
COLLECTIVES = {'psum', 'pmean', 'pbroadcast', 'all_gather', 'psum_scatter', 'all_gather_invariant', 'pscatter',
               'ppermute', 'all_to_all'}


class Program:
    def __init__(self, k, text, desc, lowprec, fwd_only):
        self.k = k
        self.text = text
        self.desc = desc
        self.lowprec = lowprec
        self.fwd_only = fwd_only


def rand_vals(rng, n, lo=-1.0, hi=1.0):
    """Seven decimals: an input exactly at a jump of floor, ceil or round
    (0, 0.5, ...), where the differences see the jump, is unlikely."""
    return [round(rng.uniform(lo, hi), 7) for _ in range(n)]


def total(lines, name, tags, suffix):
    """name = the sum of tag_suffix over tags (0.0 when there is none)."""
    if not tags:
        lines.append('%s:f64[] = 0.0' % name)
        return
    acc = tags[0] + '_' + suffix
    for i, t in enumerate(tags[1:]):
        lines.append('%s_%d = add %s %s_%s' % (name, i, acc, t, suffix))
        acc = '%s_%d' % (name, i)
    lines.append('%s = copy %s' % (name, acc))


def harness(rng, k, g, params, results):
    """The derivatives of f<k>, the inputs, the checks, the `ad` line."""
    f, pre, dt = 'f%d' % k, 'q%d_' % k, g.dt
    out = ['def %s_jvp = jvp %s' % (f, f)]
    fparams = [p for p in params if p['dt'] != 'i32']
    fres = [j for j, res in enumerate(results) if res['dt'] != 'i32']
    reverse = not g.fwd_only
    grad = reverse and len(results) == 1 and not results[0]['glob'] and results[0]['dt'] != 'i32'
    if reverse:
        out.append('def %s_vjp = vjp %s' % (f, f))
    if grad:
        fi = [i for i, p in enumerate(params) if p['dt'] != 'i32']
        out.append('def %s_g = grad[argnums=%s] %s' % (f, tup(fi), f))
    for p in params:
        if p['dt'] == 'i32':
            out.append('%s%s:i32[] = %d' % (pre, p['name'], p['value']))
            continue
        out.extend(literal(pre + p['name'], dt, p['glob'], rand_vals(rng, prod(p['glob']))))
        out.extend(literal(pre + 'v_' + p['name'], dt, p['glob'], rand_vals(rng, prod(p['glob']))))
    for j in fres:
        out.extend(literal(pre + 'w%d' % j, dt, results[j]['glob'], rand_vals(rng, prod(results[j]['glob']))))
    xs = [pre + p['name'] for p in params]
    vs = [pre + 'v_' + p['name'] for p in fparams]
    ws = [pre + 'w%d' % j for j in fres]
    rs = [pre + 'r%d' % j for j in range(len(results))]
    ts = [pre + 't%d' % j for j in fres]
    out.append('%s = %s_jvp %s' % (', '.join(rs + ts), f, ' '.join(xs + vs)))
    # central differences
    xp, xm = [], []
    for p in params:
        nm = pre + p['name']
        if p['dt'] == 'i32':
            xp.append(nm)
            xm.append(nm)
            continue
        out.append('%s_hv = mul %s %s' % (nm, pre + 'v_' + p['name'], H))
        out.append('%s_xp = add %s %s_hv' % (nm, nm, nm))
        out.append('%s_xm = sub %s %s_hv' % (nm, nm, nm))
        xp.append(nm + '_xp')
        xm.append(nm + '_xm')
    ps = [pre + 'P%d' % j for j in range(len(results))]
    ms = [pre + 'M%d' % j for j in range(len(results))]
    out.append('%s = %s %s' % (', '.join(ps), f, ' '.join(xp)))
    out.append('%s = %s %s' % (', '.join(ms), f, ' '.join(xm)))
    jt, ft, at = [], [], []
    for j, w, t in zip(fres, ws, ts):
        glob = results[j]['glob']
        out.append('%sD%d = sub %s %s' % (pre, j, ps[j], ms[j]))
        for tag, a in (('jt', t), ('ft', pre + 'D%d' % j), ('at', rs[j])):
            inner(out, pre + tag + '%d' % j, w, a, glob, dt, dt)
        jt.append(pre + 'jt%d' % j)
        ft.append(pre + 'ft%d' % j)
        at.append(pre + 'at%d' % j)
    total(out, pre + 'jv', jt, 's')
    total(out, pre + 'jabs', jt, 'abs')
    total(out, pre + 'fd0', ft, 's')
    out.append('%sfd = div %sfd0 %s' % (pre, pre, '2e-6'))
    total(out, pre + 'fabs', at, 'abs')

    def against_v(name, fn, args):
        """<fn(args)'s cotangents, v>: lines, and the tags of the sums."""
        cs = [pre + name + '_' + p['name'] for p in fparams]
        res = [pre + name.upper() + '%d' % j for j in range(len(results))] if name == 'c' else []
        out.append('%s = %s %s' % (', '.join(res + cs), fn, ' '.join(args)))
        tags = []
        for p, c, v in zip(fparams, cs, vs):
            inner(out, pre + name + 't_' + p['name'], c, v, p['glob'], dt, dt)
            tags.append(pre + name + 't_' + p['name'])
        return tags
    vt = against_v('c', f + '_vjp', xs + ws) if reverse else []
    total(out, pre + 'vj', vt, 's')
    total(out, pre + 'vabs', vt, 'abs')
    if grad:
        total(out, pre + 'gv0', against_v('g', f + '_g', xs), 's')
        out.append('%sw0 = convert_element_type[new_dtype=f64] %s' % (pre, ws[0]))
        out.append('%sgv = mul %sgv0 %sw0' % (pre, pre, pre))
    else:
        out.append('%sgv:f64[] = 0.0' % pre)
    out.append('print "ad", %d, %sjv, %sfd, %sjabs, %sfabs, %svj, %svabs, %sgv'
               % (k, pre, pre, pre, pre, pre, pre, pre))
    return out


def gen_program(rng, k, lowprec=False):
    dt = 'f32' if lowprec else 'f64'
    g = AdGen(rng, k, dt)
    g.make_mesh()
    r = rng
    plain = r.random() < 0.25
    if plain:
        g.axes, g.size = [], {}
    nparams = r.choice([1, 1, 2, 2, 3])
    params = []
    for i in range(nparams):
        while True:
            shape = tuple(r.choice([1, 2, 2, 3, 4]) for _ in range(r.choice([0, 1, 1, 2, 2, 3])))
            if prod(shape) <= 24:
                break
        text, glob, vma = g.spec(shape, [], True) or ('P()', shape, frozenset())
        p = {'name': 'x%d' % i, 'dt': dt, 'shape': shape, 'spec': text, 'glob': glob, 'vma': vma}
        params.append(p)
        g.pool.append(V(p['name'], dt, shape, vma))
    g.int_param = None
    if r.random() < 0.25:
        p = {'name': 'n', 'dt': 'i32', 'shape': (), 'spec': 'P()', 'glob': (), 'vma': frozenset(),
             'value': r.randrange(0, 4)}
        params.insert(r.randrange(len(params) + 1), p)
        g.int_param = 'n'
    ops = [o for o in OPS if g.axes or o not in COLLECTIVES]
    weights = [OPS[o] for o in ops]
    nsteps = r.randint(2, 7) if r.random() < 0.8 else r.randint(8, 12)
    cur = _shmgen.chain(g, r.choice(g.pool), ops, weights, nsteps, 0.3)
    # results: the last value and maybe another; a scalar sometimes (grad)
    outs = [cur]
    if r.random() < 0.3:
        other = r.choice(g.pool)
        if other is not cur:
            outs.append(other)
    elif r.random() < 0.5 and cur.shape:
        s = g.new(cur.dt, (), cur.vma, 'reduce_sum')
        g.emit('%s = reduce_sum[axes=%s] %s' % (s.name, tup(range(cur.rank)), cur.name))
        if cur.vma and r.random() < 0.7:
            t = g.new(cur.dt, (), frozenset(), 'psum')
            g.emit('%s = psum[axes=%s] %s' % (t.name, tup(sorted(cur.vma, key=g.axes.index)), s.name))
            s = t
        outs = [s]
    ints = []
    if r.random() < 0.1 and outs[0].shape:
        # an integer result too: it has no tangent and no cotangent
        am = g.new('i32', outs[0].shape[1:], outs[0].vma, 'argmax')
        g.emit('%s = argmax[axes=(0,), index_dtype=i32] %s' % (am.name, outs[0].name))
        ints.append(am)
    results = []
    for o in outs + ints:
        if not o.shape and o.vma:
            o = g.op_expand_dims(o)
        text, glob, _ = g.spec(o.shape, sorted(o.vma, key=g.axes.index), True) or ('P()', o.shape, 0)
        results.append({'v': o, 'spec': text, 'glob': glob, 'dt': o.dt})
    if len(results) > 1 and r.random() < 0.5:
        r.shuffle(results)
    f, mesh = 'f%d' % k, 'm%d' % k
    text = ['# ---- program %d: %s' % (k, ' '.join(g.ops_used))]
    if not plain:
        text.append('mesh %s = {%s}' % (mesh, ', '.join('%s: %d' % (x, g.size[x]) for x in g.axes)))
    text.extend(g.helpers)
    if not plain:
        text.append('@shard_map[mesh=%s, in_specs=(%s,), out_specs=(%s,)]'
                    % (mesh, ', '.join(p['spec'] for p in params), ', '.join(res['spec'] for res in results)))
    text.append('def %s(%s) {' % (f, ', '.join('%s:%s[%s]' % (p['name'], p['dt'], ','.join(str(n) for n in p['shape']))
                                            for p in params)))
    text.extend(g.lines)
    text.append('  return ' + ', '.join(res['v'].name for res in results))
    text.append('}')
    text.extend(harness(rng, k, g, params, results))
    return Program(k, '\n'.join(text) + '\n', ' '.join(g.ops_used), lowprec, g.fwd_only)
