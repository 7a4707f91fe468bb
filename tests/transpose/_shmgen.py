"""Random linear shard_map programs for the adjoint test (adjoint.test.py).

gen_program(rng, k) returns a Program: shm text that defines a mesh, a
shard_map function f<k> linear in some of its parameters (chains of linear
local primitives, control flow, calls and collectives), its transpose
f<k>_t, random inputs and cotangents, and prints one line

    adj <k> <lhs> <rhs> <lhs_abs> <rhs_abs>

with lhs = sum <f_t(c, y), x>, rhs = sum <y, f(c, x)> (computed in f64
inside shm) and the same sums over absolute values, for the tolerance.

The generator models the checker's shape and variance rules
(docs/shard_map.md, "Variance") so that every program it writes is well typed; a program that does
not check is a failure of either side, reported with its source.
Python standard library only.
"""

import math
import random

MAX_SIZE = 96          # elements in one block
MAX_RANK = 4


def prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def tup(xs):
    xs = list(xs)
    if len(xs) == 1:
        return '(%s,)' % xs[0]
    return '(' + ', '.join(str(x) for x in xs) + ')'


def fmt(v):
    s = '%.3f' % v
    return s


class V:
    """A value in the body: name, dtype, block shape, variance set."""

    def __init__(self, name, dt, shape, vma, linear=True):
        self.name = name
        self.dt = dt
        self.shape = tuple(shape)
        self.vma = frozenset(vma)
        self.linear = linear

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
        return prod(self.shape)


class Program:
    def __init__(self, k, text, lowprec, desc, scale=0.0):
        self.k = k
        self.text = text
        self.lowprec = lowprec
        self.desc = desc
        self.scale = scale      # sum |x| * sum |y|: rounding in cancellations


class Gen:
    def __init__(self, rng, k):
        self.rng = rng
        self.k = k
        self.n = 0
        self.helpers = []      # top-level defs (branches, loop bodies, callees)
        self.lines = []        # body lines of f
        self.pool = []         # linear values
        self.consts = {}       # (dt, shape, vma) -> V
        self.ops_used = []
        self.lowprec = False
        self.nhelp = 0

    # ---- names and emission ----------------------------------------------

    def fresh(self, base='v'):
        self.n += 1
        return '%s%d' % (base, self.n)

    def hname(self, base):
        self.nhelp += 1
        return 'p%d_%s%d' % (self.k, base, self.nhelp)

    def emit(self, line):
        self.lines.append('  ' + line)

    # ---- the mesh ---------------------------------------------------------

    def make_mesh(self):
        r = self.rng
        naxes = r.choice([1, 1, 2, 2, 2])
        names = r.choice([['i', 'j'], ['x', 'y'], ['j', 'i'], ['data', 'model']])
        while True:
            sizes = [r.choice([1, 2, 2, 3, 4]) for _ in range(naxes)]
            if prod(sizes) <= 8:
                break
        self.axes = names[:naxes]
        self.size = dict(zip(self.axes, sizes))

    def group(self, axes):
        return prod(self.size[a] for a in axes)

    def axes_text(self, axes):
        axes = list(axes)
        if len(axes) == 1 and self.rng.random() < 0.5:
            return axes[0]
        return tup(axes)

    def pick_axes(self, cands, nonempty=True):
        cands = list(cands)
        if not cands:
            return None
        r = self.rng
        sub = [a for a in cands if r.random() < 0.5]
        if not sub and nonempty:
            sub = [r.choice(cands)]
        r.shuffle(sub)
        # keep mesh order most of the time (row-major group index)
        if r.random() < 0.6:
            sub.sort(key=self.axes.index)
        return sub

    # ---- constants --------------------------------------------------------

    def const(self, dt, shape, vary=frozenset(), positive=False):
        """A constant (non-linear) array of a shape, built from arange."""
        r = self.rng
        shape = tuple(shape)
        n = prod(shape)
        name = self.fresh('c')
        a, b = r.uniform(0.3, 1.7), r.uniform(-1, 1)
        if n == 1 and not shape:
            self.emit('%s = full[shape=(), value=%s, dtype=%s]' % (name, fmt(b + 0.5), dt))
            cur = name
        else:
            self.emit('%s_a = arange[stop=%d, dtype=%s]' % (name, n, dt))
            self.emit('%s_b = mul %s_a %s' % (name, name, fmt(a)))
            self.emit('%s_c = add %s_b %s' % (name, name, fmt(b)))
            self.emit('%s_d = sin %s_c' % (name, name))
            cur = name + '_d'
            if shape != (n,):
                self.emit('%s_e = reshape[new_sizes=%s] %s' % (name, tup(shape), cur))
                cur = name + '_e'
        for ax in sorted(vary, key=self.axes.index):
            ai = self.fresh('ai')
            self.emit('%s = axis_index[axis_name=%s]' % (ai, ax))
            self.emit('%s_f = convert_element_type[new_dtype=%s] %s' % (ai, dt, ai))
            self.emit('%s_g = mul %s_f 0.25' % (ai, ai))
            nxt = self.fresh('c')
            self.emit('%s = add %s %s_g' % (nxt, cur, ai))
            cur = nxt
        if positive:
            nxt = self.fresh('c')
            self.emit('%s_h = mul %s 0.5' % (nxt, cur))
            self.emit('%s = add %s_h 1.5' % (nxt, nxt))
            cur = nxt
        return V(cur, dt, shape, vary, linear=False)

    def scalar_lit(self, positive=False):
        r = self.rng
        v = r.uniform(0.5, 2.0)
        if not positive and r.random() < 0.4:
            v = -v
        return fmt(v)

    def rand_vary(self):
        if self.axes and self.rng.random() < 0.3:
            return frozenset(self.pick_axes(self.axes))
        return frozenset()

    # ---- helpers ------------------------------------------------------------

    def new(self, dt, shape, vma, op):
        v = V(self.fresh(), dt, shape, vma)
        self.pool.append(v)
        self.ops_used.append(op)
        return v

    def same_shape(self, a):
        c = [v for v in self.pool if v.shape == a.shape and v.dt == a.dt and v is not a]
        return self.rng.choice(c) if c else a

    # ---- operations (each returns a new V or None) ---------------------------

    def op_neg(self, a):
        v = self.new(a.dt, a.shape, a.vma, 'neg')
        self.emit('%s = neg %s' % (v.name, a.name))
        return v

    def op_copy(self, a):
        v = self.new(a.dt, a.shape, a.vma, 'copy')
        self.emit('%s = copy %s' % (v.name, a.name))
        return v

    def op_mul(self, a):
        r = self.rng
        if not a.shape and r.random() < 0.4:
            # a linear scalar broadcast against a constant array
            shape = tuple(r.choice([1, 2, 3]) for _ in range(r.choice([1, 2])))
            cc = self.const(a.dt, shape, self.rand_vary())
            v = self.new(a.dt, shape, a.vma | cc.vma, 'mul')
            self.emit('%s = mul %s %s' % (v.name, *((a.name, cc.name) if r.random() < 0.5 else (cc.name, a.name))))
            return v
        if r.random() < 0.5 or not a.shape:
            c, cv = self.scalar_lit(), frozenset()
        else:
            cc = self.const(a.dt, a.shape, self.rand_vary())
            c, cv = cc.name, cc.vma
        v = self.new(a.dt, a.shape, a.vma | cv, 'mul')
        if r.random() < 0.5:
            self.emit('%s = mul %s %s' % (v.name, a.name, c))
        else:
            self.emit('%s = mul %s %s' % (v.name, c, a.name))
        return v

    def op_div(self, a):
        r = self.rng
        if r.random() < 0.5 or not a.shape:
            c, cv = self.scalar_lit(positive=True), frozenset()
        else:
            cc = self.const(a.dt, a.shape, self.rand_vary(), positive=True)
            c, cv = cc.name, cc.vma
        v = self.new(a.dt, a.shape, a.vma | cv, 'div')
        self.emit('%s = div %s %s' % (v.name, a.name, c))
        return v

    def op_add(self, a, prim='add'):
        b = self.same_shape(a)
        shape = a.shape
        scal = [v for v in self.pool if v.dt == a.dt and (not v.shape) != (not a.shape)]
        if scal and self.rng.random() < 0.3:
            # a linear scalar broadcast against a linear array
            b = self.rng.choice(scal)
            shape = a.shape or b.shape
        if self.rng.random() < 0.5:
            a, b = b, a
        v = self.new(a.dt, shape, a.vma | b.vma, prim)
        self.emit('%s = %s %s %s' % (v.name, prim, a.name, b.name))
        return v

    def op_sub(self, a):
        return self.op_add(a, 'sub')

    def op_dot(self, a):
        r = self.rng
        if not a.shape:
            return None
        k = r.randrange(a.rank)
        n = r.choice([1, 2, 3, 4])
        vary = self.rand_vary()
        batch = None
        if a.rank >= 2 and r.random() < 0.3:
            batch = r.choice([d for d in range(a.rank) if d != k])
        free = [a.shape[d] for d in range(a.rank) if d != k and d != batch]
        if batch is None:
            out_shape = tuple(free) + (n,)
            if prod(out_shape) > MAX_SIZE or len(out_shape) > MAX_RANK:
                return None
            if r.random() < 0.5:
                w = self.const(a.dt, (a.shape[k], n), vary)
                dn = '(([%d], [0]), ([], []))' % k
                args = (a.name, w.name)
            else:
                w = self.const(a.dt, (n, a.shape[k]), vary)
                dn = '(([1], [%d]), ([], []))' % k
                args = (w.name, a.name)
                out_shape = (n,) + tuple(free)
        else:
            out_shape = (a.shape[batch],) + tuple(free) + (n,)
            if prod(out_shape) > MAX_SIZE or len(out_shape) > MAX_RANK:
                return None
            w = self.const(a.dt, (a.shape[batch], a.shape[k], n), vary)
            dn = '(([%d], [1]), ([%d], [0]))' % (k, batch)
            args = (a.name, w.name)
        v = self.new(a.dt, out_shape, a.vma | w.vma, 'dot_general')
        self.emit('%s = dot_general[dimension_numbers=%s] %s %s' % (v.name, dn, args[0], args[1]))
        return v

    def factorizations(self, n):
        r = self.rng
        rank = r.choice([1, 1, 2, 2, 3])
        dims = []
        rest = n
        for _ in range(rank - 1):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = r.choice(divs)
            dims.append(d)
            rest //= d
        dims.append(rest)
        r.shuffle(dims)
        return tuple(dims)

    def op_reshape(self, a):
        shape = self.factorizations(a.size)
        if len(shape) > MAX_RANK:
            return None
        v = self.new(a.dt, shape, a.vma, 'reshape')
        self.emit('%s = reshape[new_sizes=%s] %s' % (v.name, tup(shape), a.name))
        return v

    def op_transpose(self, a):
        if a.rank < 2:
            return None
        perm = list(range(a.rank))
        self.rng.shuffle(perm)
        v = self.new(a.dt, [a.shape[p] for p in perm], a.vma, 'transpose')
        self.emit('%s = transpose[permutation=%s] %s' % (v.name, tup(perm), a.name))
        return v

    def op_broadcast_in_dim(self, a):
        r = self.rng
        shape = list(a.shape)
        ones = [d for d in range(a.rank) if shape[d] == 1]
        if ones and r.random() < 0.4:
            d = r.choice(ones)
            shape[d] = r.choice([2, 3])
            dims = list(range(a.rank))
        else:
            if a.rank >= MAX_RANK:
                return None
            p = r.randrange(a.rank + 1)
            shape.insert(p, r.choice([2, 3]))
            dims = [d if d < p else d + 1 for d in range(a.rank)]
        if prod(shape) > MAX_SIZE:
            return None
        v = self.new(a.dt, shape, a.vma, 'broadcast_in_dim')
        self.emit('%s = broadcast_in_dim[shape=%s, broadcast_dimensions=%s] %s'
                  % (v.name, tup(shape), tup(dims) if dims else '()', a.name))
        return v

    def op_reduce_sum(self, a):
        if not a.shape:
            return None
        axes = sorted(d for d in range(a.rank) if self.rng.random() < 0.5) or [self.rng.randrange(a.rank)]
        shape = [a.shape[d] for d in range(a.rank) if d not in axes]
        v = self.new(a.dt, shape, a.vma, 'reduce_sum')
        self.emit('%s = reduce_sum[axes=%s] %s' % (v.name, tup(axes), a.name))
        return v

    def op_squeeze(self, a):
        ones = [d for d in range(a.rank) if a.shape[d] == 1]
        if not ones:
            return None
        d = self.rng.choice(ones)
        shape = [a.shape[i] for i in range(a.rank) if i != d]
        v = self.new(a.dt, shape, a.vma, 'squeeze')
        self.emit('%s = squeeze[dimensions=(%d,)] %s' % (v.name, d, a.name))
        return v

    def op_expand_dims(self, a):
        if a.rank >= MAX_RANK:
            return None
        d = self.rng.randrange(a.rank + 1)
        shape = list(a.shape)
        shape.insert(d, 1)
        v = self.new(a.dt, shape, a.vma, 'expand_dims')
        self.emit('%s = expand_dims[dimensions=(%d,)] %s' % (v.name, d, a.name))
        return v

    def op_slice(self, a):
        r = self.rng
        if not a.shape:
            return None
        st, lim, strd, shape = [], [], [], []
        for n in a.shape:
            s = r.randrange(n)
            l = r.randrange(s + 1, n + 1)
            k = r.choice([1, 1, 2])
            st.append(s)
            lim.append(l)
            strd.append(k)
            shape.append((l - s + k - 1) // k)
        v = self.new(a.dt, shape, a.vma, 'slice')
        if all(k == 1 for k in strd) and r.random() < 0.5:
            self.emit('%s = slice[start_indices=%s, limit_indices=%s] %s'
                      % (v.name, tup(st), tup(lim), a.name))
        else:
            self.emit('%s = slice[start_indices=%s, limit_indices=%s, strides=%s] %s'
                      % (v.name, tup(st), tup(lim), tup(strd), a.name))
        return v

    def op_pad(self, a):
        r = self.rng
        if not a.shape:
            return None
        cfg, shape = [], []
        for n in a.shape:
            for _ in range(20):
                lo, hi, it = r.choice([-1, 0, 0, 1, 2]), r.choice([-1, 0, 0, 1, 2]), r.choice([0, 0, 1])
                full = n + (n - 1) * it
                m = lo + hi + full
                if m >= 1 and max(0, -lo) + max(0, -hi) < full:
                    break
            else:
                lo, hi, it, m = 0, 0, 0, n
            cfg.append('(%d, %d, %d)' % (lo, hi, it))
            shape.append(m)
        if prod(shape) > MAX_SIZE:
            return None
        v = self.new(a.dt, shape, a.vma, 'pad')
        self.emit('%s = pad[padding_config=(%s,)] %s 0.0' % (v.name, ', '.join(cfg), a.name))
        return v

    def op_concatenate(self, a):
        r = self.rng
        if not a.shape:
            return None
        d = r.randrange(a.rank)
        others = [v for v in self.pool if v.rank == a.rank and v.dt == a.dt and
                  all(v.shape[i] == a.shape[i] for i in range(a.rank) if i != d)]
        parts = [a] + [r.choice(others) for _ in range(r.choice([1, 1, 2]))]
        r.shuffle(parts)
        shape = list(a.shape)
        shape[d] = sum(p.shape[d] for p in parts)
        if prod(shape) > MAX_SIZE:
            return None
        vma = frozenset().union(*[p.vma for p in parts])
        v = self.new(a.dt, shape, vma, 'concatenate')
        self.emit('%s = concatenate[dimension=%d] %s' % (v.name, d, ' '.join(p.name for p in parts)))
        return v

    def op_split(self, a):
        """split into 1 to 3 pieces (some may be empty) along a random axis;
        every piece joins the pool (a piece never used has no cotangent:
        the transpose concatenates zeros there); the last is the result."""
        r = self.rng
        if not a.shape:
            return None
        d = r.randrange(a.rank)
        n = a.shape[d]
        cuts = sorted(r.randint(0, n) for _ in range(r.choice([0, 1, 1, 2])))
        sizes = [hi - lo for lo, hi in zip([0] + cuts, cuts + [n])]
        ax = d - a.rank if r.random() < 0.3 else d
        pieces = []
        for m in sizes:
            shape = list(a.shape)
            shape[d] = m
            pieces.append(V(self.fresh(), a.dt, shape, a.vma))
        self.emit('%s = split[axis=%d sizes=%s] %s' % (', '.join(p.name for p in pieces), ax, tup(sizes), a.name))
        self.ops_used.append('split')
        big = [p for p in pieces if all(m > 0 for m in p.shape)]
        self.pool.extend(big)
        return big[-1] if big else None

    def index_operands(self, shape, sizes):
        """Start indices for dynamic_slice/update: literals (sometimes out
        of range: clamped) or, varying, from axis_index."""
        r = self.rng
        idx, vma = [], set()
        for n, s in zip(shape, sizes):
            if r.random() < 0.25 and self.axes:
                ax = r.choice(self.axes)
                nm = self.fresh('ix')
                self.emit('%s = axis_index[axis_name=%s]' % (nm, ax))
                idx.append(nm)
                vma.add(ax)
            else:
                idx.append(str(r.randrange(0, n - s + 2)))
        return idx, frozenset(vma)

    def op_dynamic_slice(self, a):
        r = self.rng
        if not a.shape:
            return None
        sizes = [r.randrange(1, n + 1) for n in a.shape]
        idx, iv = self.index_operands(a.shape, sizes)
        v = self.new(a.dt, sizes, a.vma | iv, 'dynamic_slice')
        self.emit('%s = dynamic_slice[slice_sizes=%s] %s %s' % (v.name, tup(sizes), a.name, ' '.join(idx)))
        return v

    def op_dynamic_update_slice(self, a):
        r = self.rng
        if not a.shape:
            return None
        cands = [v for v in self.pool if v.rank == a.rank and v.dt == a.dt and v is not a and
                 all(v.shape[i] <= a.shape[i] for i in range(a.rank))]
        if cands:
            u = r.choice(cands)
        else:
            u = self.op_slice(a)
        idx, iv = self.index_operands(a.shape, u.shape)
        v = self.new(a.dt, a.shape, a.vma | u.vma | iv, 'dynamic_update_slice')
        self.emit('%s = dynamic_update_slice %s %s %s' % (v.name, a.name, u.name, ' '.join(idx)))
        return v

    def op_convert(self, a):
        to = 'f32' if a.dt == 'f64' else 'f64'
        if to == 'f32':
            self.lowprec = True
        v = self.new(to, a.shape, a.vma, 'convert_element_type')
        self.emit('%s = convert_element_type[new_dtype=%s] %s' % (v.name, to, a.name))
        return v

    def op_select_n(self, a):
        r = self.rng
        vary = self.rand_vary()
        if a.shape:
            c = self.const(a.dt, a.shape, vary)
            p = self.fresh('pr')
            self.emit('%s = lt %s %s' % (p, c.name, fmt(r.uniform(-0.5, 0.5))))
            pv = c.vma
        else:
            p = self.fresh('pr')
            self.emit('%s = full[shape=(), value=%s, dtype=bool]' % (p, r.choice(['True', 'False'])))
            pv = frozenset()
        cases = [a, self.same_shape(a)]
        if r.random() < 0.3:
            cases.append(self.same_shape(a))
            # a bool predicate selects between two cases only: use an i32 one
            if a.shape:
                q = self.fresh('pr')
                self.emit('%s_a = convert_element_type[new_dtype=i32] %s' % (q, p))
                c2 = self.const(a.dt, a.shape, frozenset())
                self.emit('%s_b = lt %s 0.0' % (q, c2.name))
                self.emit('%s_c = convert_element_type[new_dtype=i32] %s_b' % (q, q))
                self.emit('%s = add %s_a %s_c' % (q, q, q))
                p = q
            else:
                p2 = self.fresh('pr')
                self.emit('%s = full[shape=(), value=%d, dtype=i32]' % (p2, r.randrange(3)))
                p = p2
        r.shuffle(cases)
        vma = pv.union(*[c.vma for c in cases])
        v = self.new(a.dt, a.shape, vma, 'select_n')
        self.emit('%s = select_n %s %s' % (v.name, p, ' '.join(c.name for c in cases)))
        return v

    def op_cumsum(self, a):
        if not a.shape:
            return None
        d = self.rng.randrange(a.rank)
        rev = self.rng.choice(['True', 'False'])
        v = self.new(a.dt, a.shape, a.vma, 'cumsum')
        self.emit('%s = cumsum[axis=%d, reverse=%s] %s' % (v.name, d, rev, a.name))
        return v

    def op_rev(self, a):
        if not a.shape:
            return None
        dims = sorted(d for d in range(a.rank) if self.rng.random() < 0.5) or [0]
        v = self.new(a.dt, a.shape, a.vma, 'rev')
        self.emit('%s = rev[dimensions=%s] %s' % (v.name, tup(dims), a.name))
        return v

    def op_tile(self, a):
        reps = [self.rng.choice([1, 1, 2, 3]) for _ in a.shape]
        shape = tuple(n * k for n, k in zip(a.shape, reps))
        if not a.shape or math.prod(shape) > 64:
            return None
        v = self.new(a.dt, shape, a.vma, 'tile')
        self.emit('%s = tile[reps=%s] %s' % (v.name, tup(reps), a.name))
        return v

    # -- shape-preserving bodies for branches and loops: (lines, ops) --

    def small_body(self, a, x, y, allow_coll=True):
        """Lines computing y from x (a's type), keeping the type."""
        r = self.rng
        kinds = ['neg', 'mul', 'copy', 'addmul']
        if a.shape:
            kinds += ['cumsum', 'rev']
        if allow_coll and a.vma:
            kinds += ['ppermute']
        k = r.choice(kinds)
        if k == 'neg':
            return ['%s = neg %s' % (y, x)], k
        if k == 'copy':
            return ['%s = copy %s' % (y, x)], k
        if k == 'mul':
            return ['%s = mul %s %s' % (y, x, self.scalar_lit())], k
        if k == 'addmul':
            return ['%s_m = mul %s %s' % (y, x, self.scalar_lit()),
                    '%s = add %s %s_m' % (y, x, y)], k
        if k == 'cumsum':
            return ['%s = cumsum[axis=%d, reverse=%s] %s' % (y, r.randrange(a.rank), r.choice(['True', 'False']), x)], k
        if k == 'rev':
            return ['%s = rev[dimensions=(%d,)] %s' % (y, r.randrange(a.rank), x)], k
        ax = r.choice(sorted(a.vma, key=self.axes.index))
        return ['%s = ppermute[axis_name=%s, perm=%s] %s' % (y, ax, self.perm(self.size[ax]), x)], k

    def op_cond(self, a):
        r = self.rng
        nb = r.choice([2, 2, 3])
        names = []
        for _ in range(nb):
            nm = self.hname('br')
            lines, _ = self.small_body(a, 'a', 'b')
            self.helpers.append('def %s(a) {\n%s\n  return b\n}' % (nm, '\n'.join('  ' + l for l in lines)))
            names.append(nm)
        idx = r.randrange(nb)
        const = None
        if r.random() < 0.4:
            # a constant operand too, which every branch multiplies by
            const = self.const(a.dt, a.shape, self.rand_vary()) if a.shape else None
        if const is not None:
            for i, nm in enumerate(names):
                h = self.helpers[-nb + i]
                h = h.replace('def %s(a) {' % nm, 'def %s(w, a0) {\n  a = mul a0 w' % nm)
                self.helpers[-nb + i] = h
        if r.random() < 0.5:
            ix = str(idx)
        else:
            ix = self.fresh('k')
            self.emit('%s = full[shape=(), value=%d, dtype=i32]' % (ix, idx))
        if const is not None:
            v = self.new(a.dt, a.shape, a.vma | const.vma, 'cond')
            self.emit('%s = cond[branches=%s] %s %s %s' % (v.name, tup(names), ix, const.name, a.name))
        else:
            v = self.new(a.dt, a.shape, a.vma, 'cond')
            self.emit('%s = cond[branches=%s] %s %s' % (v.name, tup(names), ix, a.name))
        return v

    def op_fori_loop(self, a):
        r = self.rng
        nm = self.hname('body')
        lines, _ = self.small_body(a, 'x', 'y0')
        if r.random() < 0.5:
            # a factor that depends on the loop index (an array one does
            # not commute with the body's cumsum or rev: the order of the
            # transposed loop matters)
            lines = ['fk = convert_element_type[new_dtype=%s] k' % a.dt,
                     's = mul fk 0.5',
                     't = add s 0.5']
            if a.shape:
                n = a.size
                lines += ['z0 = cumsum[axis=%d, reverse=%s] x' % (r.randrange(a.rank), r.choice(['True', 'False'])),
                          'ar = arange[stop=%d, dtype=%s]' % (n, a.dt),
                          'ar1 = mul ar 0.9',
                          'ar2 = add ar1 t',
                          'ar3 = sin ar2',
                          'ar4 = reshape[new_sizes=%s] ar3' % tup(a.shape),
                          'y = mul z0 ar4']
            else:
                lines += ['y = mul x t']
        else:
            lines += ['y = copy y0']
        self.helpers.append('def %s(k, x) {\n%s\n  return y\n}' % (nm, '\n'.join('  ' + l for l in lines)))
        lo = r.randrange(0, 2)
        hi = lo + r.randrange(0, 4)
        v = self.new(a.dt, a.shape, a.vma, 'fori_loop')
        self.emit('%s = fori_loop[lower=%d, upper=%d, body=%s] %s' % (v.name, lo, hi, nm, a.name))
        return v

    def op_call(self, a):
        """A call of a helper that runs a few random local operations."""
        nm = self.hname('g')
        sub = Gen(self.rng, self.k)
        sub.axes, sub.size = self.axes, self.size
        sub.n = 0
        sub.nhelp = self.nhelp
        x = V('x', a.dt, a.shape, a.vma)
        sub.pool = [x]
        cur = x
        choices = LOCAL_OPS + (['psum', 'ppermute', 'all_gather', 'pbroadcast', 'pbroadcast_source'] if self.axes else [])
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.choice(choices)
            nv = getattr(sub, 'op_' + op)(cur)
            if nv is not None:
                cur = nv
        if cur is x:
            cur = sub.op_neg(x)
        self.nhelp = sub.nhelp
        self.helpers.extend(sub.helpers)
        self.helpers.append('def %s(x) {\n%s\n  return %s\n}' % (nm, '\n'.join(sub.lines), cur.name))
        self.lowprec |= sub.lowprec
        v = self.new(cur.dt, cur.shape, cur.vma, 'call')
        self.emit('%s = %s %s' % (v.name, nm, a.name))
        self.ops_used.extend(sub.ops_used)
        return v

    # -- collectives --

    def perm(self, n):
        r = self.rng
        src = list(range(n))
        dst = list(range(n))
        r.shuffle(dst)
        pairs = [(s, d) for s, d in zip(src, dst) if r.random() < 0.85]
        if not pairs:
            pairs = [(0, dst[0])]
        r.shuffle(pairs)
        return '(' + ', '.join('(%d, %d)' % p for p in pairs) + (',)' if len(pairs) == 1 else ')')

    def op_psum(self, a, prim='psum'):
        axes = self.pick_axes(self.axes)
        if axes is None:
            return None
        v = self.new(a.dt, a.shape, a.vma - set(axes), prim)
        self.emit('%s = %s[axes=%s] %s' % (v.name, prim, self.axes_text(axes), a.name))
        return v

    def op_pmean(self, a):
        return self.op_psum(a, 'pmean')

    def op_pbroadcast(self, a):
        axes = self.pick_axes([x for x in self.axes if x not in a.vma])
        if not axes:
            return None
        v = self.new(a.dt, a.shape, a.vma | set(axes), 'pbroadcast')
        self.emit('%s = pbroadcast[axes=%s] %s' % (v.name, self.axes_text(axes), a.name))
        return v

    def op_pbroadcast_source(self, a):
        """JAX's collective broadcast: every member of the group gets member
        source's block (the variance is the operand's)."""
        axes = self.pick_axes(self.axes)
        if axes is None:
            return None
        src = self.rng.randrange(self.group(axes))
        v = self.new(a.dt, a.shape, set(a.vma), 'pbroadcast_source')
        self.emit('%s = pbroadcast[axis_name=%s, source=%d] %s' % (v.name, self.axes_text(axes), src, a.name))
        return v

    def op_all_gather(self, a, prim='all_gather'):
        r = self.rng
        axes = self.pick_axes(self.axes)
        if axes is None:
            return None
        n = self.group(axes)
        tiled = r.random() < 0.6 and a.rank > 0
        shape = list(a.shape)
        if tiled:
            d = r.randrange(a.rank)
            shape[d] *= n
        else:
            if a.rank >= MAX_RANK:
                return None
            d = r.randrange(a.rank + 1)
            shape.insert(d, n)
        if prod(shape) > MAX_SIZE:
            return None
        vma = a.vma | set(axes) if prim == 'all_gather' else a.vma - set(axes)
        v = self.new(a.dt, shape, vma, prim)
        self.emit('%s = %s[axis_name=%s, axis=%d, tiled=%s] %s'
                  % (v.name, prim, self.axes_text(axes), d, tiled, a.name))
        return v

    def op_all_gather_invariant(self, a):
        return self.op_all_gather(a, 'all_gather_invariant')

    def op_psum_scatter(self, a, prim='psum_scatter'):
        r = self.rng
        cands = self.axes if prim == 'psum_scatter' else [x for x in self.axes if x not in a.vma]
        axes = self.pick_axes(cands)
        if not axes or not a.shape:
            return None
        n = self.group(axes)
        opts = []
        for d in range(a.rank):
            if a.shape[d] % n == 0:
                opts.append((d, True))
            if a.shape[d] == n:
                opts.append((d, False))
        if not opts:
            return None
        d, tiled = r.choice(opts)
        shape = list(a.shape)
        if tiled:
            shape[d] //= n
        else:
            del shape[d]
        v = self.new(a.dt, shape, a.vma | set(axes), prim)
        key = 'scatter_dimension' if prim == 'psum_scatter' else 'axis'
        self.emit('%s = %s[axis_name=%s, %s=%d, tiled=%s] %s'
                  % (v.name, prim, self.axes_text(axes), key, d, tiled, a.name))
        return v

    def op_pscatter(self, a):
        return self.op_psum_scatter(a, 'pscatter')

    def op_ppermute(self, a):
        axes = self.pick_axes(self.axes)
        if axes is None:
            return None
        v = self.new(a.dt, a.shape, a.vma | set(axes), 'ppermute')
        self.emit('%s = ppermute[axis_name=%s, perm=%s] %s'
                  % (v.name, self.axes_text(axes), self.perm(self.group(axes)), a.name))
        return v

    def op_all_to_all(self, a):
        r = self.rng
        axes = self.pick_axes(self.axes)
        if not axes or not a.shape:
            return None
        n = self.group(axes)
        opts = []
        for s in range(a.rank):
            for c in range(a.rank):
                if a.shape[s] % n == 0:
                    opts.append((s, c, True))
                if a.shape[s] == n:
                    opts.append((s, c, False))
        if not opts:
            return None
        s, c, tiled = r.choice(opts)
        shape = list(a.shape)
        if tiled:
            shape[s] //= n
            shape[c] *= n
        else:
            del shape[s]
            shape.insert(c, n)
        v = self.new(a.dt, shape, a.vma | set(axes), 'all_to_all')
        self.emit('%s = all_to_all[axis_name=%s, split_axis=%d, concat_axis=%d, tiled=%s] %s'
                  % (v.name, self.axes_text(axes), s, c, tiled, a.name))
        return v

    # ---- specs ----------------------------------------------------------------

    def spec(self, shape, must, extra_ok):
        """A spec for a block of `shape` mentioning every axis in `must`
        (and, if extra_ok, maybe others); returns (text, global shape)."""
        r = self.rng
        axes = list(must)
        if extra_ok:
            axes += [x for x in self.axes if x not in must and r.random() < 0.3]
        r.shuffle(axes)
        if axes and not shape:
            return None
        dims = [[] for _ in shape]
        for x in axes:
            dims[r.randrange(len(shape))].append(x)
        glob = [n * self.group(d) for n, d in zip(shape, dims)]
        ent = []
        for d in dims:
            if not d:
                ent.append('None')
            elif len(d) == 1 and r.random() < 0.7:
                ent.append(d[0] if r.random() < 0.5 else "'%s'" % d[0])
            else:
                ent.append('(' + ', '.join(d) + (',)' if len(d) == 1 else ')'))
        while ent and ent[-1] == 'None' and r.random() < 0.5:
            ent.pop()
        return 'P(%s)' % ', '.join(ent), tuple(glob), frozenset(axes)


OPS_WEIGHTS = {
    'neg': 2, 'copy': 1, 'mul': 4, 'div': 2, 'add': 3, 'sub': 2, 'dot': 3,
    'reshape': 3, 'transpose': 2, 'broadcast_in_dim': 2, 'reduce_sum': 2,
    'squeeze': 2, 'expand_dims': 2, 'slice': 2, 'pad': 2, 'concatenate': 2,
    'dynamic_slice': 2, 'dynamic_update_slice': 2, 'convert': 1, 'select_n': 2,
    'cumsum': 2, 'rev': 1, 'tile': 1, 'cond': 2, 'fori_loop': 2, 'call': 2,
    'psum': 4, 'pmean': 1, 'pbroadcast': 3, 'pbroadcast_source': 2, 'all_gather': 3, 'psum_scatter': 3,
    'all_gather_invariant': 2, 'pscatter': 3, 'ppermute': 3, 'all_to_all': 3, 'split': 2,
}
LOCAL_OPS = ['neg', 'mul', 'div', 'add', 'sub', 'dot', 'reshape', 'transpose',
             'broadcast_in_dim', 'reduce_sum', 'squeeze', 'expand_dims', 'slice',
             'pad', 'concatenate', 'dynamic_slice', 'dynamic_update_slice',
             'select_n', 'cumsum', 'rev', 'tile', 'copy', 'split']


def rand_vals(rng, n):
    return [round(rng.uniform(-1, 1), 3) for _ in range(n)]


def literal(name, dt, shape, vals):
    """Lines binding name to an array of shape with the given values."""
    if not shape:
        return ['%s:%s[] = %s' % (name, dt, vals[0])]
    flat = '%s_flat' % name
    lines = ['%s:%s[%d] = [%s]' % (flat, dt, len(vals), ', '.join(repr(v) for v in vals))]
    if len(shape) == 1:
        lines.append('%s = copy %s' % (name, flat))
    else:
        lines.append('%s = reshape[new_sizes=%s] %s' % (name, tup(shape), flat))
    return lines


def inner(lines, tag, a, b, shape, dt_a, dt_b):
    """Lines computing <a, b> and <|a|, |b|> in f64 as tag_s, tag_abs."""
    aa, bb = a, b
    if dt_a != 'f64':
        lines.append('%s_ca = convert_element_type[new_dtype=f64] %s' % (tag, a))
        aa = tag + '_ca'
    if dt_b != 'f64':
        lines.append('%s_cb = convert_element_type[new_dtype=f64] %s' % (tag, b))
        bb = tag + '_cb'
    lines.append('%s_p = mul %s %s' % (tag, aa, bb))
    lines.append('%s_q = abs %s_p' % (tag, tag))
    if shape:
        lines.append('%s_s = reduce_sum[axes=%s] %s_p' % (tag, tup(range(len(shape))), tag))
        lines.append('%s_abs = reduce_sum[axes=%s] %s_q' % (tag, tup(range(len(shape))), tag))
    else:
        lines.append('%s_s = copy %s_p' % (tag, tag))
        lines.append('%s_abs = copy %s_q' % (tag, tag))


def harness(r, k, fname, params, results, short=False):
    """Lines that transpose fname (params: dicts with name, glob, lin;
    results: (global shape, dtype) pairs), run f and f_t on random inputs
    and cotangents, and print the adjoint line; and sum |x| * sum |y|."""
    out = []
    nx = ny = 0.0
    lin_idx = [i for i in range(len(params)) if params[i]['lin']]
    if short and len(lin_idx) == len(params):
        out.append('def %s_t = linear_transpose %s' % (fname, fname))
    else:
        out.append('def %s_t = linear_transpose[linear=%s] %s' % (fname, tup(lin_idx), fname))
    pre = 'q%d_' % k
    for p in params:
        vals = rand_vals(r, prod(p['glob']))
        if p['lin']:
            nx += sum(abs(v) for v in vals)
        out.extend(literal(pre + p['name'], 'f64', p['glob'], vals))
    for j, (glob, dt) in enumerate(results):
        vals = rand_vals(r, prod(glob))
        ny += sum(abs(v) for v in vals)
        out.extend(literal(pre + 'y%d' % j, dt, glob, vals))
    rs = ', '.join(pre + 'r%d' % j for j in range(len(results)))
    out.append('%s = %s %s' % (rs, fname, ' '.join(pre + p['name'] for p in params)))
    bs = ', '.join(pre + 'b%d' % i for i in lin_idx)
    cargs = [pre + p['name'] for p in params if not p['lin']]
    yargs = [pre + 'y%d' % j for j in range(len(results))]
    out.append('%s = %s_t %s' % (bs, fname, ' '.join(cargs + yargs)))
    lhs, rhs = [], []
    for i in lin_idx:
        tag = pre + 'l%d' % i
        inner(out, tag, pre + 'b%d' % i, pre + params[i]['name'],
              params[i]['glob'], 'f64', 'f64')
        lhs.append(tag)
    for j, (glob, dt) in enumerate(results):
        tag = pre + 'm%d' % j
        inner(out, tag, pre + 'y%d' % j, pre + 'r%d' % j, glob, dt, dt)
        rhs.append(tag)
    for side, tags in (('L', lhs), ('R', rhs)):
        for suffix in ('s', 'abs'):
            acc = tags[0] + '_' + suffix
            for t in tags[1:]:
                nxt = '%s%s_%s_%s' % (pre, side, suffix, t)
                out.append('%s = add %s %s_%s' % (nxt, acc, t, suffix))
                acc = nxt
            out.append('%s%s_%s = copy %s' % (pre, side, suffix, acc))
    out.append('print "adj", %d, %sL_s, %sR_s, %sL_abs, %sR_abs' % (k, pre, pre, pre, pre))
    return out, nx * ny


def chain(g, cur, ops, weights, nsteps, restart):
    """nsteps random operations (by weight), each on the last value or,
    with probability `restart`, on a value drawn from the pool; the last."""
    r = g.rng
    for _ in range(nsteps):
        if r.random() < restart:
            cur = r.choice(g.pool)
        for _ in range(10):
            op = r.choices(ops, weights)[0]
            nv = getattr(g, 'op_' + op)(cur)
            if nv is not None:
                cur = nv
                break
    return cur


def gen_program(rng, k):
    g = Gen(rng, k)
    g.make_mesh()
    r = rng
    plain = r.random() < 0.1      # a plain function: no mesh, no collectives
    if plain:
        g.axes, g.size = [], {}
    # parameters: linear ones (f64 blocks) and maybe a constant one
    nlin = r.choice([1, 1, 1, 2])
    nconst = 1 if r.random() < 0.25 else 0
    params = []
    for i in range(nlin + nconst):
        while True:
            shape = tuple(r.choice([1, 2, 2, 3, 4]) for _ in range(r.choice([0, 1, 1, 2, 2, 3])))
            if prod(shape) <= 24:
                break
        text, glob, vma = g.spec(shape, [], True) or ('P()', shape, frozenset())
        params.append({'shape': shape, 'spec': text, 'glob': glob, 'vma': vma})
    order = list(range(nlin + nconst))
    r.shuffle(order)
    is_lin = [False] * (nlin + nconst)
    for i in order[:nlin]:
        is_lin[i] = True
    for i, p in enumerate(params):
        p['name'] = ('x%d' % i) if is_lin[i] else ('w%d' % i)
        p['lin'] = is_lin[i]
        if is_lin[i]:
            g.pool.append(V(p['name'], 'f64', p['shape'], p['vma']))
    consts = [V(p['name'], 'f64', p['shape'], p['vma'], linear=False) for p in params if not p['lin']]
    # use the constant parameter once, multiplying a linear value of its shape
    nsteps = r.randint(2, 8) if r.random() < 0.8 else r.randint(9, 14)
    cur = r.choice(g.pool)
    ops = list(OPS_WEIGHTS)
    weights = [OPS_WEIGHTS[o] for o in ops]
    for c in consts:
        tgt = [v for v in g.pool if v.shape == c.shape]
        if tgt:
            a = r.choice(tgt)
            v = g.new('f64', a.shape, a.vma | c.vma, 'mul')
            g.emit('%s = mul %s %s' % (v.name, a.name, c.name))
            cur = v
    cur = chain(g, cur, ops, weights, nsteps, 0.25)
    # results
    outs = [cur]
    if r.random() < 0.3:
        other = r.choice(g.pool)
        if other is not cur:
            outs.append(other)
    results = []
    for o in outs:
        if not o.shape and o.vma:
            o = g.op_expand_dims(o)
        text, glob, _ = g.spec(o.shape, sorted(o.vma, key=g.axes.index), True) or ('P()', o.shape, 0)
        results.append({'v': o, 'spec': text, 'glob': glob})
    # the program text
    fname = 'f%d' % k
    mesh = 'm%d' % k
    out = ['# ---- program %d: %s' % (k, ' '.join(g.ops_used))]
    if not plain:
        out.append('mesh %s = {%s}' % (mesh, ', '.join('%s: %d' % (x, g.size[x]) for x in g.axes)))
    out.extend(g.helpers)
    ins = ', '.join(p['spec'] for p in params)
    outsp = ', '.join(res['spec'] for res in results)
    if not plain:
        out.append('@shard_map[mesh=%s, in_specs=(%s%s), out_specs=(%s%s)]'
                   % (mesh, ins, ',' if len(params) == 1 else '', outsp, ',' if len(results) == 1 else ''))
    out.append('def %s(%s) {' % (fname, ', '.join(
        '%s:f64[%s]' % (p['name'], ','.join(str(n) for n in p['shape'])) for p in params)))
    out.extend(g.lines)
    out.append('  return ' + ', '.join(res['v'].name for res in results))
    out.append('}')
    lin_idx = [i for i in range(len(params)) if params[i]['lin']]
    short = len(lin_idx) == len(params) and r.random() < 0.7
    lines, scale = harness(r, k, fname, params, [(res['glob'], res['v'].dt) for res in results], short)
    out.extend(lines)
    return Program(k, '\n'.join(out) + '\n', g.lowprec or any(res['v'].dt != 'f64' for res in results),
                   ' '.join(g.ops_used), scale)
