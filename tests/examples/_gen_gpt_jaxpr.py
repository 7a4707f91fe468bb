#!/usr/bin/python3
"""Writes the jaxpr of examples/gpt_train_jaxpr.shm.

JAX is not installed here, so the jaxpr that jax.make_jaxpr prints for the
training step of examples/gpt.shm is constructed: this script traces the
step the way JAX 0.7.0 does, by hand, one jax.numpy/lax call at a time, and
lays out each equation as JAX's printer does.  Each helper below is one
JAX function and emits what its bind emits:

- lax's binary ops and dot_general, gather and scatter-add first lift an
  operand whose varying axes are fewer (core.standard_insert_pvary: a
  pvary, also of a literal);
- value_and_grad linearizes (jax_use_direct_linearize, on by default):
  each primitive's primal equation and the residuals its JVP rule computes
  from primals alone go out in order; the tangent equations form a linear
  jaxpr, which the backward pass then transposes in reverse, each
  primitive's transpose rule emitting its equations (a gather's is a
  scatter-add into zeros, dot_general's another dot_general and a
  transpose, broadcast_in_dim's a reduce_sum, pvary's a psum_invariant,
  psum_invariant's a pvary) and cotangents meeting at one variable summed
  with add_any.

Run from the repository root: python3 tests/examples/_gen_gpt_jaxpr.py
prints the whole examples/gpt_train_jaxpr.shm's jaxpr (the text after
`def train_step = `).
"""

import itertools

MESH = ("data", "model")


# ---- names as JAX's printer gives them: a .. z, ba, bb, ... ---------------------------
class Namer:
    def __init__(self):
        self.n = 0

    def fresh(self):
        # JAX's _encode_digits_alphabetic: 0 -> a, 25 -> z, 26 -> ba, ...
        n = self.n
        self.n += 1
        if n < 26:
            return "abcdefghijklmnopqrstuvwxyz"[n]
        digits = []
        while n:
            digits.append("abcdefghijklmnopqrstuvwxyz"[n % 26])
            n //= 26
        return "".join(reversed(digits))


class V:
    """A variable: dtype, shape, varying axes."""

    def __init__(self, namer, dt, shape, vma, name=None):
        self.name = name or namer.fresh()    # a name suggested by an enclosing jit
        self.dt, self.shape, self.vma = dt, tuple(shape), frozenset(vma)

    def ty(self):
        v = ""
        if self.vma:
            v = "{" + ",".join(a for a in MESH if a in self.vma) + "}"
        return "%s[%s]%s" % (self.dt, ",".join(map(str, self.shape)), v)

    def ref(self):
        return self.name


class Lit:
    def __init__(self, value, dt):
        self.value, self.dt, self.shape, self.vma = value, dt, (), frozenset()

    def ref(self):
        return "%s:%s[]" % (self.value, self.dt)


def ns(rank):
    """An aval's sharding inside the shard_map body (the manual mesh, no
    axis in its spec), as JAX 0.7.0 prints it where a rule passes it on."""
    inner = ", ".join(["None"] * rank) + ("," if rank == 1 else "")
    return ("NamedSharding(mesh=AbstractMesh('data': 2, 'model': 2, axis_types=(Manual, Manual)), "
            "spec=PartitionSpec(%s))" % inner)


def tup(xs):
    xs = tuple(xs)
    if len(xs) == 1:
        return "(%s,)" % xs[0]
    return "(" + ", ".join(str(x) for x in xs) + ")"


def axes_repr(axes):
    return tup("'%s'" % a for a in axes)


class Body:
    """Emits the equations of one jaxpr."""

    def __init__(self, namer, indent):
        self.namer, self.indent, self.lines = namer, indent, []

    def eqn(self, prim, params, operands, outs, name=None):
        """outs: list of (dtype, shape, vma); returns the new vars (one
        output may take a given name)."""
        vs = [V(self.namer, *o, name=name) for o in outs]
        lhs = " ".join("%s:%s" % (v.name, v.ty()) for v in vs)
        ps = ""
        if params:
            one = prim + "[" + " ".join("%s=%s" % kv for kv in params) + "]"
            head = "%s = %s" % (lhs, one)
            if len(self.indent + head) + sum(len(o.ref()) + 1 for o in operands) <= 80 \
                    and "\n" not in one:
                ps = "[" + " ".join("%s=%s" % kv for kv in params) + "]"
            else:
                ps = "[\n" + "".join("%s  %s=%s\n" % (self.indent, k, v) for k, v in params) \
                    + self.indent + "]"
        ops = "".join(" " + o.ref() for o in operands)
        self.lines.append("%s%s = %s%s%s" % (self.indent, lhs, prim, ps, ops))
        return vs


# ---- the model's trace: a tiny tracer with JAX's rules ------------------------------------

class Tr:
    """Traces the body of the shard_map: the primal and residual equations in
    order; the linear equations on a tape, transposed at the end."""

    def __init__(self, body):
        self.b = body
        self.tape = []            # (transpose function, input tangents, output tangent)
        self.tan = {}             # id(var) -> tangent id, for differentiated vars
        self.tid = itertools.count()
        self.keep = []

    # --- helpers ------------------------------------------------------------------------
    def e1(self, prim, params, ops, dt, shape, vma, name=None):
        return self.b.eqn(prim, params, ops, [(dt, shape, vma)], name)[0]

    def lit(self, v, dt="f32"):
        return Lit(v, dt)

    def pvary(self, x, axes):
        axes = tuple(a for a in MESH if a in axes)
        return self.e1("pvary", [("axes", axes_repr(axes)), ("axis_index_groups", "None")],
                       [x], x.dt, x.shape, x.vma | frozenset(axes))

    def insert_pvary(self, *xs):
        out = frozenset().union(*[x.vma for x in xs])
        res = []
        for x in xs:
            miss = out - x.vma
            if miss:
                y = self.pvary(x, miss)
                if self.has_t(x):
                    self.linear(y, [x], self.t_pvary(tuple(a for a in MESH if a in miss)))
                res.append(y)
            else:
                res.append(x)
        return res

    def has_t(self, x):
        return id(x) in self.tan

    def linear(self, out, ins, tr):
        """out depends linearly (through tr) on the tangents of ins."""
        t = next(self.tid)
        self.keep.append(out)         # ids stay unique while the trace lives
        self.tan[id(out)] = t
        self.tape.append((tr, [self.tan.get(id(i)) if self.has_t(i) else None for i in ins], t, out))

    # --- the cotangent environment --------------------------------------------------------
    def backward(self, loss, seed):
        ct = {self.tan[id(loss)]: seed}
        for tr, ins, out_t, out in reversed(self.tape):
            if out_t not in ct:
                continue
            g = ct.pop(out_t)
            cts = tr(self, g)
            for i, c in zip(ins, cts):
                if i is None or c is None:
                    continue
                if i in ct:
                    prev = ct[i]
                    ct[i] = self.e1("add_any", [], [prev, c], c.dt, c.shape, c.vma)
                else:
                    ct[i] = c
        return ct

    # --- transpose rules (closures over the primal values they need) ---------------------
    @staticmethod
    def t_pvary(axes):
        def tr(self, g):
            return [self.e1("psum_invariant",
                            [("axes", axes_repr(axes)), ("axis_index_groups", "None")],
                            [g], g.dt, g.shape, g.vma - frozenset(axes))]
        return tr

    # --- primitives -------------------------------------------------------------------------
    def unary(self, prim, x, params=()):
        return self.e1(prim, list(params), [x], x.dt, x.shape, x.vma)

    def binop(self, prim, x, y, dt=None):
        x, y = self.insert_pvary(x, y)
        shape = x.shape if len(x.shape) >= len(y.shape) else y.shape
        if x.shape and y.shape:
            shape = tuple(max(a, b) for a, b in zip(x.shape, y.shape))
        return self.e1(prim, [], [x, y], dt or (x.dt if isinstance(x, V) else y.dt),
                       shape, x.vma | y.vma), x, y

    def unbroadcast(self, aval_shape, g):
        # lax._unbroadcast: sum the dimensions broadcast from size 1, reshape back
        if tuple(aval_shape) == g.shape:
            return g
        if aval_shape == ():
            axes = tuple(range(len(g.shape)))
            return self.e1("reduce_sum", [("axes", tup(axes)), ("out_sharding", "None")],
                           [g], g.dt, (), g.vma)
        dims = [i for i, (a, b) in enumerate(zip(aval_shape, g.shape)) if a != b]
        s = self.e1("reduce_sum", [("axes", tup(dims)), ("out_sharding", "None")], [g], g.dt,
                    tuple(b for i, b in enumerate(g.shape) if i not in dims), g.vma)
        return self.e1("reshape", [("dimensions", "None"), ("new_sizes", tup(aval_shape)),
                                   ("sharding", "None")], [s], g.dt, aval_shape, g.vma)

    def add(self, x, y):
        out, x2, y2 = self.binop("add", x, y)
        if self.has_t(x2) or self.has_t(y2):
            xs, ys = x2.shape, y2.shape

            def tr(self, g):
                return [self.unbroadcast(xs, g) if self.has_t(x2) else None,
                        self.unbroadcast(ys, g) if self.has_t(y2) else None]
            self.linear(out, [x2, y2], tr)
        return out

    def sub(self, x, y):
        out, x2, y2 = self.binop("sub", x, y)
        if self.has_t(x2) or self.has_t(y2):
            xs, ys = x2.shape, y2.shape
            tx, ty = self.has_t(x2), self.has_t(y2)

            def tr(self, g):
                a = self.unbroadcast(xs, g) if tx else None
                b = None
                if ty:
                    n = self.unary("neg", g)
                    b = self.unbroadcast(ys, n)
                return [a, b]
            self.linear(out, [x2, y2], tr)
        return out

    def mul(self, x, y):
        out, x2, y2 = self.binop("mul", x, y)
        tx, ty = self.has_t(x2), self.has_t(y2)
        if tx and ty:
            # defjvp: mul(xdot, y), mul(x, ydot), summed with add_any
            t1 = _Lin(self, out.shape, out.vma)
            self.linear(t1, [x2], lambda self, g, y2=y2, xs=x2.shape: [self.unbroadcast(
                xs, self.e1("mul", [], [g, y2], g.dt, g.shape, g.vma))])
            t2 = _Lin(self, out.shape, out.vma)
            self.linear(t2, [y2], lambda self, g, x2=x2, ys=y2.shape: [self.unbroadcast(
                ys, self.e1("mul", [], [x2, g], g.dt, g.shape, g.vma))])
            self.linear(out, [t1, t2], lambda self, g: [g, g])
        elif tx:
            def tr(self, g, y2=y2, xs=x2.shape):
                m = self.e1("mul", [], [g, y2], g.dt, g.shape, g.vma)
                return [self.unbroadcast(xs, m), None]
            self.linear(out, [x2, y2], tr)
        elif ty:
            def tr(self, g, x2=x2, ys=y2.shape):
                m = self.e1("mul", [], [x2, g], g.dt, g.shape, g.vma)
                return [None, self.unbroadcast(ys, m)]
            self.linear(out, [x2, y2], tr)
        return out

    def div(self, x, y):
        out, x2, y2 = self.binop("div", x, y)
        tx, ty = self.has_t(x2), self.has_t(y2)
        if not (tx or ty):
            return out
        # JVP: div(g, y); mul(mul(neg(g), x), integer_pow(y, -2)); residual first
        r = None
        if ty:
            r = self.e1("integer_pow", [("y", "-2")], [y2], y2.dt, y2.shape, y2.vma)
        xs, ys, os_ = x2.shape, y2.shape, out.shape
        # the tangent equations, in order: [div gx y], [neg gy], [mul n x], [mul m r], add_any
        ids = {}
        if tx:
            def tr_a(self, g):
                d = self.e1("div", [], [g, y2], g.dt, g.shape, g.vma)
                return [self.unbroadcast(xs, d)]
            ta = _Lin(self, os_, out.vma)
            self.linear(ta, [x2], tr_a)
            ids["a"] = ta
        if ty:
            n = _Lin(self, ys, y2.vma)
            self.linear(n, [y2], lambda self, g: [self.unary("neg", g)])
            m = _Lin(self, os_, out.vma)

            def tr_m(self, g):
                return [self.unbroadcast(ys, self.e1("mul", [], [g, x2], g.dt, g.shape, g.vma))]
            self.linear(m, [n], tr_m)
            mm = _Lin(self, os_, out.vma)
            self.linear(mm, [m], lambda self, g: [self.e1("mul", [], [g, r], g.dt, g.shape, g.vma)])
            ids["b"] = mm
        parts = [ids[k] for k in ("a", "b") if k in ids]
        if len(parts) == 1:
            self.keep.append(out)
            self.tan[id(out)] = self.tan[id(parts[0])]
        else:
            self.linear(out, parts, lambda self, g: [g, g])
        return out

    def integer_pow(self, x, y):
        out = self.e1("integer_pow", [("y", str(y))], [x], x.dt, x.shape, x.vma)
        if self.has_t(x):
            # JVP: mul(g, mul(_const(x, y), integer_pow(x, y - 1))), residuals first
            p = self.e1("integer_pow", [("y", str(y - 1))], [x], x.dt, x.shape, x.vma)
            c, p2 = self.insert_pvary(Lit(float(y), "f32"), p)
            r = self.e1("mul", [], [c, p2], x.dt, x.shape, p2.vma)
            self.linear(out, [x], lambda self, g: [self.e1("mul", [], [g, r], g.dt, g.shape, g.vma)])
        return out

    def rsqrt(self, x):
        out = self.e1("rsqrt", [], [x], x.dt, x.shape, x.vma)
        if self.has_t(x):
            # JVP (defjvp2): mul(g, mul(_const(x, -0.5), div(ans, x)))
            d = self.e1("div", [], [out, x], x.dt, x.shape, x.vma)
            c, d2 = self.insert_pvary(Lit(-0.5, "f32"), d)
            r = self.e1("mul", [], [c, d2], x.dt, x.shape, d2.vma)
            self.linear(out, [x], lambda self, g: [self.e1("mul", [], [g, r], g.dt, g.shape, g.vma)])
        return out

    def exp(self, x):
        out = self.e1("exp", [], [x], x.dt, x.shape, x.vma)
        if self.has_t(x):
            self.linear(out, [x], lambda self, g: [self.e1("mul", [], [g, out], g.dt, g.shape, g.vma)])
        return out

    def log(self, x):
        out = self.e1("log", [], [x], x.dt, x.shape, x.vma)
        if self.has_t(x):
            self.linear(out, [x], lambda self, g: [self.e1("div", [], [g, x], g.dt, g.shape, g.vma)])
        return out

    def tanh(self, x):
        out = self.e1("tanh", [], [x], x.dt, x.shape, x.vma)
        if self.has_t(x):
            # JVP (defjvp2): mul(add(g, mul(g, ans)), sub(_one(x), ans))
            one = self.one(x)
            r = self.e1("sub", [], [one, out], x.dt, x.shape, x.vma)
            m = _Lin(self, x.shape, x.vma)
            self.linear(m, [x], lambda self, g: [self.e1("mul", [], [g, out], g.dt, g.shape, g.vma)])
            a = _Lin(self, x.shape, x.vma)
            self.linear(a, [x, m], lambda self, g: [g, g])
            self.linear(out, [a], lambda self, g: [self.e1("mul", [], [g, r], g.dt, g.shape, g.vma)])
        return out

    def reduce_sum(self, x, axes):
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        out = self.e1("reduce_sum", [("axes", tup(axes)), ("out_sharding", "None")], [x],
                      x.dt, shape, x.vma)
        if self.has_t(x):
            xs = x.shape

            def tr(self, g):
                bd = tuple(i for i in range(len(xs)) if i not in axes)
                return [self.e1("broadcast_in_dim", [("broadcast_dimensions", tup(bd)),
                                                     ("shape", tup(xs)), ("sharding", ns(len(xs)))],
                                [g], g.dt, xs, g.vma)]
            self.linear(out, [x], tr)
        return out

    def reduce_max(self, x, axes):
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        out = self.e1("reduce_max", [("axes", tup(axes)), ("out_sharding", "None")], [x],
                      x.dt, shape, x.vma)
        if self.has_t(x):
            # JVP (defjvp2, _reduce_chooser_jvp_rule): the residuals are the
            # location indicators and their counts; the tangent is dropped by
            # the stop_gradient that follows, so only the residuals print.
            kshape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
            a = self.e1("reshape", [("dimensions", "None"), ("new_sizes", tup(kshape)),
                                    ("sharding", "None")], [out], x.dt, kshape, x.vma)
            e = self.e1("eq", [], [x, a], "bool", x.shape, x.vma)
            c = self.e1("convert_element_type", [("new_dtype", "float32"), ("sharding", "None"),
                                                 ("weak_type", "False")], [e], x.dt, x.shape, x.vma)
            self.e1("reduce_sum", [("axes", tup(axes)), ("out_sharding", "None")], [c],
                    x.dt, shape, x.vma)
            self.max_loc = c
        return out

    def stop_gradient(self, x):
        return self.e1("stop_gradient", [], [x], x.dt, x.shape, x.vma)

    def broadcast_in_dim(self, x, shape, bd):
        out = self.e1("broadcast_in_dim", [("broadcast_dimensions", tup(bd)), ("shape", tup(shape)),
                                           ("sharding", "None")], [x], x.dt, shape, x.vma)
        if self.has_t(x):
            xs = x.shape

            def tr(self, g):
                unit = [i for i, s in enumerate(xs) if s == 1]
                bds = [d for i, d in enumerate(bd) if i not in unit]
                axes = tuple(i for i in range(len(shape)) if i not in bds)
                s = self.e1("reduce_sum", [("axes", tup(axes)), ("out_sharding", "None")], [g],
                            g.dt, tuple(g.shape[i] for i in bds), g.vma)
                if unit:
                    s = self.e1("broadcast_in_dim",
                                [("broadcast_dimensions",
                                  tup(i for i in range(len(xs)) if i not in unit)),
                                 ("shape", tup(xs)), ("sharding", "None")], [s], g.dt, xs, g.vma)
                return [s]
            self.linear(out, [x], tr)
        return out

    def reshape(self, x, shape, name=None):
        out = self.e1("reshape", [("dimensions", "None"), ("new_sizes", tup(shape)),
                                  ("sharding", "None")], [x], x.dt, shape, x.vma, name)
        if self.has_t(x):
            xs = x.shape
            self.linear(out, [x], lambda self, g: [self.e1(
                "reshape", [("dimensions", "None"), ("new_sizes", tup(xs)), ("sharding", "None")],
                [g], g.dt, xs, g.vma)])
        return out

    def select_n(self, which, *cases):
        which, *cases = self.insert_pvary(which, *cases)
        out = self.e1("select_n", [], [which] + cases, cases[0].dt, cases[-1].shape,
                      frozenset().union(which.vma, *[c.vma for c in cases]))
        if any(self.has_t(c) for c in cases):
            # JVP: the zero tangents of the other cases instantiated as zeros
            # (a known value: it prints in the forward part)
            z = self.e1("broadcast_in_dim", [("broadcast_dimensions", "()"),
                                             ("shape", tup(out.shape)), ("sharding", ns(len(out.shape)))],
                        [Lit(0.0, "f32")], "f32", out.shape, frozenset())
            z, = self.insert_pvary_to(z, out.vma)
            tmask = [self.has_t(c) for c in cases]

            def tr(self, g):
                zs = self.e1("broadcast_in_dim", [("broadcast_dimensions", "()"),
                                                  ("shape", tup(g.shape)), ("sharding", ns(len(g.shape)))],
                             [Lit(0.0, "f32")], "f32", g.shape, frozenset())
                zs, = self.insert_pvary_to(zs, g.vma)
                ct0 = self.e1("select_n", [], [which, g, zs], g.dt, g.shape, g.vma) if tmask[0] else None
                ct1 = self.e1("select_n", [], [which, zs, g], g.dt, g.shape, g.vma) if tmask[1] else None
                return [ct0, ct1]
            self.linear(out, cases, tr)
        return out

    def one(self, x):
        """lax._one(x): full_like(x, shape=(), fill_value=1) with x's sharding's
        mesh: a broadcast_in_dim to shape () (it has a sharding), lifted to
        x's varying axes."""
        o = self.e1("broadcast_in_dim", [("broadcast_dimensions", "()"), ("shape", "()"),
                                         ("sharding", ns(0))], [Lit("1.0", "f32")], "f32", (),
                    frozenset())
        return self.insert_pvary_to(o, x.vma)[0]

    def insert_pvary_to(self, x, vma):
        miss = frozenset(vma) - x.vma
        if miss:
            return [self.pvary(x, miss)]
        return [x]

    def dot_general(self, x, y, contract, batch):
        x, y = self.insert_pvary(x, y)
        (xc, yc), (xb, yb) = contract, batch
        xk = [i for i in range(len(x.shape)) if i not in xc and i not in xb]
        yk = [i for i in range(len(y.shape)) if i not in yc and i not in yb]
        shape = tuple(x.shape[i] for i in xb) + tuple(x.shape[i] for i in xk) \
            + tuple(y.shape[i] for i in yk)
        out = self.e1("dot_general", dg_params(contract, batch), [x, y], "f32", shape,
                      x.vma | y.vma)
        tx, ty = self.has_t(x), self.has_t(y)
        parts = []
        if tx:
            t1 = _Lin(self, shape, out.vma)
            self.linear(t1, [x], lambda self, g: [dot_transpose_lhs(self, g, x, y, contract, batch)])
            parts.append(t1)
        if ty:
            t2 = _Lin(self, shape, out.vma)
            self.linear(t2, [y], lambda self, g: [dot_transpose_rhs(self, g, x, y, contract, batch)])
            parts.append(t2)
        if len(parts) == 1:
            self.keep.append(out)
            self.tan[id(out)] = self.tan[id(parts[0])]
        elif parts:
            self.linear(out, parts, lambda self, g: [g, g])
        return out

    def gather(self, x, idx, dnums, slice_sizes, mode, fill, shape, name=None):
        x, idx = self.insert_pvary(x, idx)
        out = self.e1("gather", [("dimension_numbers", gdn(*dnums)), ("fill_value", fill),
                                 ("indices_are_sorted", "False"), ("mode", mode),
                                 ("slice_sizes", tup(slice_sizes)), ("unique_indices", "False")],
                      [x, idx], x.dt, shape, x.vma | idx.vma, name)
        if self.has_t(x):
            xs, xv = x.shape, x.vma

            def tr(self, g):
                z = self.e1("broadcast_in_dim", [("broadcast_dimensions", "()"), ("shape", tup(xs)),
                                                 ("sharding", ns(len(xs)))],
                            [Lit(0.0, "f32")], "f32", xs, frozenset())
                z, = self.insert_pvary_to(z, xv)
                z, i2, g2 = self.insert_pvary(z, idx, g)
                return [self.e1("scatter-add", scatter_add_params(self.b, sdn(*dnums), mode, len(xs)),
                                [z, i2, g2], g.dt, xs, z.vma)]
            self.linear(out, [x], tr)
        return out

    def take_along_axis(self, arr, idx):
        """jnp.take_along_axis(arr, idx, axis=-1), idx [b, T, 1]: a jit
        (take_along_axis is @jit in JAX 0.7.0).  Linearized, the jit returns
        the gathered values and the residual its tangent needs (the reshaped
        indices); the backward pass transposes the tangent jit into another
        jit named take_along_axis, holding the scatter-add."""
        b = self.b
        shape = idx.shape
        gshape = idx.shape + (1,)
        vma = arr.vma | idx.vma
        # JAX's pretty printer names the outer results first, the jit's
        # binders and results after the outer operands and results
        out = V(b.namer, arr.dt, shape, vma)
        res = V(b.namer, idx.dt, gshape, idx.vma)
        inner = Tr(Body(b.namer, b.indent + "      "))
        a_in = V(None, arr.dt, arr.shape, arr.vma, name=arr.name)
        i_in = V(None, idx.dt, idx.shape, idx.vma, name=idx.name)
        ti = wrap_index(inner, i_in, arr.shape[-1])
        ti = inner.reshape(ti, gshape, name=res.name)
        inner.gather(a_in, ti, ((), (2,), (2,), (0, 1), (0, 1)), (1, 1, 1),
                     "GatherScatterMode.FILL_OR_DROP", "nan", shape, name=out.name)
        lines = fill(b.indent, ["%s:%s" % (out.name, out.ty()), "%s:%s" % (res.name, res.ty())],
                     " = jit[", b.indent + "  ")
        lines.append(b.indent + "  name=take_along_axis")
        lines += fill(b.indent + "  jaxpr={ lambda ; ", ["%s:%s" % (v.name, v.ty()) for v in (a_in, i_in)],
                      ". let", b.indent + "      ")
        lines += inner.b.lines
        lines += fill(b.indent + "    in (", [out.name, res.name], ") }", b.indent + "      ", sep=",")
        lines.append(b.indent + "] %s %s" % (arr.name, idx.name))
        b.lines += lines
        if self.has_t(arr):
            ashape, avma = arr.shape, arr.vma

            def tr(self, g):
                b = self.b
                ct = V(b.namer, g.dt, ashape, avma)
                inner = Tr(Body(b.namer, b.indent + "      "))
                r_in = V(None, res.dt, res.shape, res.vma, name=res.name)
                g_in = V(None, g.dt, g.shape, g.vma, name=g.name)
                z = inner.e1("broadcast_in_dim", [("broadcast_dimensions", "()"), ("shape", tup(ashape)),
                                                  ("sharding", ns(len(ashape)))],
                             [Lit(0.0, "f32")], "f32", ashape, frozenset())
                z, = inner.insert_pvary_to(z, avma)
                z, r2, g2 = inner.insert_pvary(z, r_in, g_in)
                inner.e1("scatter-add", scatter_add_params(inner.b, sdn((), (2,), (2,), (0, 1), (0, 1)),
                                                           "GatherScatterMode.FILL_OR_DROP", len(ashape)),
                         [z, r2, g2], g.dt, ashape, z.vma, name=ct.name)
                lines = ["%s%s:%s = jit[" % (b.indent, ct.name, ct.ty()),
                         b.indent + "  name=take_along_axis"]
                lines += fill(b.indent + "  jaxpr={ lambda ; ",
                              ["%s:%s" % (v.name, v.ty()) for v in (r_in, g_in)],
                              ". let", b.indent + "      ")
                lines += inner.b.lines
                lines += fill(b.indent + "    in (", [ct.name], ",) }", b.indent + "      ")
                lines.append(b.indent + "] %s %s" % (res.name, g.name))
                b.lines += lines
                return [ct]
            self.linear(out, [arr], tr)
        return out

    def psum(self, x, axis):
        out = self.e1("psum_invariant", [("axes", axes_repr((axis,))), ("axis_index_groups", "None")],
                      [x], x.dt, x.shape, x.vma - {axis})
        if self.has_t(x):
            self.linear(out, [x], lambda self, g: [self.pvary(g, (axis,))])
        return out


class _Lin:
    """A tangent-only intermediate of a JVP rule (never printed)."""

    def __init__(self, tr, shape, vma):
        self.shape, self.vma = shape, vma


def dg_params(contract, batch, out_sharding="None"):
    (xc, yc), (xb, yb) = contract, batch
    dn = "((%s, %s), (%s, %s))" % (tup(xc), tup(yc), tup(xb), tup(yb))
    return [("dimension_numbers", dn), ("out_sharding", out_sharding), ("precision", "None"),
            ("preferred_element_type", "float32")]


def scatter_add_params(body, dnums, mode, rank):
    """scatter-add's parameters as JAX 0.7.0 binds them: the operand's
    sharding as out_sharding, and update_jaxpr the reduction's jaxpr (lax.add
    of two scalars: fresh names, printed inside the equation)."""
    a, b, c = (body.namer.fresh() for _ in range(3))
    upd = "{ lambda ; %s:f32[] %s:f32[]. let %s:f32[] = add %s %s in (%s,) }" % (a, b, c, a, b, c)
    return [("dimension_numbers", dnums), ("indices_are_sorted", "False"), ("mode", mode),
            ("out_sharding", ns(rank)), ("unique_indices", "False"), ("update_consts", "()"),
            ("update_jaxpr", upd)]


def _ranges_like(*xs):
    start = 0
    for x in xs:
        x_len = len(x)
        yield tuple(range(start, start + x_len))
        start += x_len


def dot_transpose_lhs(tr, g, x, y, contract, batch, swap_ans=False):
    """lax._dot_general_transpose_lhs: the cotangent of x."""
    (x_contract, y_contract), (x_batch, y_batch) = contract, batch
    x_ndim, y_ndim = len(x.shape), len(y.shape)
    x_kept = [i for i in range(x_ndim) if i not in x_contract and i not in x_batch]
    y_kept = [i for i in range(y_ndim) if i not in y_contract and i not in y_batch]
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
    order = sorted(range(len(y_contract)), key=lambda k: y_contract[k])
    x_contract_sorted_by_y = [x_contract[k] for k in order]
    unsorted_axes = list(x_batch) + x_kept + x_contract_sorted_by_y
    out_axes = sorted(range(len(unsorted_axes)), key=lambda k: unsorted_axes[k])
    g, y = tr.insert_pvary(g, y)
    # the result of dot_general(g, y, dims)
    gk = [i for i in range(len(g.shape)) if i not in dims[0][0] and i not in dims[1][0]]
    yk = [i for i in range(y_ndim) if i not in dims[0][1] and i not in dims[1][1]]
    shape = tuple(g.shape[i] for i in dims[1][0]) + tuple(g.shape[i] for i in gk) \
        + tuple(y.shape[i] for i in yk)
    # out_sharding: x's sharding with its spec permuted (no axes inside the body)
    d = tr.e1("dot_general", dg_params(dims[0], dims[1], ns(x_ndim)), [g, y], "f32", shape,
              g.vma | y.vma)
    if tuple(out_axes) != tuple(range(len(out_axes))):
        d = tr.e1("transpose", [("permutation", tup(out_axes))], [d], "f32",
                  tuple(shape[i] for i in out_axes), d.vma)
    return d


def dot_transpose_rhs(tr, g, x, y, contract, batch):
    (x_contract, y_contract), (x_batch, y_batch) = contract, batch
    return dot_transpose_lhs(tr, g, y, x, (y_contract, x_contract), (y_batch, x_batch),
                             swap_ans=True)


def gdn(offset, collapsed, start, obatch, ibatch):
    return ("GatherDimensionNumbers(offset_dims=%s, collapsed_slice_dims=%s, start_index_map=%s, "
            "operand_batching_dims=%s, start_indices_batching_dims=%s)"
            % (tup(offset), tup(collapsed), tup(start), tup(obatch), tup(ibatch)))


def sdn(offset, collapsed, start, obatch, ibatch):
    return ("ScatterDimensionNumbers(update_window_dims=%s, inserted_window_dims=%s, "
            "scatter_dims_to_operand_dims=%s, operand_batching_dims=%s, "
            "scatter_indices_batching_dims=%s)"
            % (tup(offset), tup(collapsed), tup(start), tup(obatch), tup(ibatch)))


# ---- the training step ------------------------------------------------------------------

B, T, D, H, DH, F, VOCAB = 4, 8, 8, 2, 4, 16, 16
PARAMS = [  # name, global shape, spec (as shm and JAX print it)
    ("wte", (VOCAB, D), ()),
    ("wpe", (T, D), ()),
    ("wq", (D, H, DH), (None, "model", None)),
    ("wk", (D, H, DH), (None, "model", None)),
    ("wv", (D, H, DH), (None, "model", None)),
    ("wo", (H, DH, D), ("model", None, None)),
    ("w1", (D, F), (None, "model")),
    ("w2", (F, D), ("model", None)),
]


def local(shape, spec):
    return tuple(s // 2 if (i < len(spec) and spec[i]) else s for i, s in enumerate(shape))


def pspec(spec):
    """PartitionSpec's repr in JAX 0.7.0 (P(...) from 0.9.1)."""
    if not spec:
        return "PartitionSpec()"
    return "PartitionSpec(" + ", ".join("'%s'" % a if a else "None" for a in spec) + ")"


def layer_norm(tr, x):
    b = x.shape[0]
    s = tr.reduce_sum(x, (2,))
    s = tr.broadcast_in_dim(s, (b, T, 1), (0, 1))          # keepdims
    mu = tr.div(s, Lit("8.0", "f32"))
    xc = tr.sub(x, mu)
    sq = tr.integer_pow(xc, 2)
    ss = tr.reduce_sum(sq, (2,))
    ss = tr.broadcast_in_dim(ss, (b, T, 1), (0, 1))
    var = tr.div(ss, Lit("8.0", "f32"))
    ve = tr.add(var, Lit("1e-05", "f32"))
    r = tr.rsqrt(ve)
    return tr.mul(xc, r)


def gelu(tr, x):
    x3 = tr.integer_pow(x, 3)
    a = tr.mul(Lit("0.044715", "f32"), x3)
    s = tr.add(x, a)
    c = tr.mul(Lit("0.7978846", "f32"), s)
    t = tr.tanh(c)
    u = tr.add(Lit("1.0", "f32"), t)
    cdf = tr.mul(Lit("0.5", "f32"), u)
    return tr.mul(x, cdf)


def softmax_last(tr, s):
    """exp(s - stop_gradient(max)) / sum: over the last axis, keepdims."""
    n = len(s.shape)
    kshape = s.shape[:-1] + (1,)
    mx = tr.reduce_max(s, (n - 1,))
    mx = tr.broadcast_in_dim(mx, kshape, tuple(range(n - 1)))
    mx = tr.stop_gradient(mx)
    return mx


def wrap_index(tr, i, size):
    """jnp's _normalize_index: i < 0 ? i + size : i."""
    c = tr.binop("lt", i, Lit("0", "i32"), dt="bool")[0]
    a = tr.binop("add", i, Lit(str(size), "i32"))[0]
    w, = [tr.select_n(c, i, a)]
    return w


def model_loss(tr, tok, tgt, p):
    wte, wpe, wq, wk, wv, wo, w1, w2 = p
    b = tok.shape[0]
    # wte[tok]
    i = wrap_index(tr, tok, VOCAB)
    i = tr.broadcast_in_dim(i, (b, T, 1), (0, 1))
    x0 = tr.gather(wte, i, ((2,), (0,), (0,), (), ()), (1, D),
                   "GatherScatterMode.PROMISE_IN_BOUNDS", "None", (b, T, D))
    pe = tr.broadcast_in_dim(wpe, (1, T, D), (1, 2))       # rank promotion
    x = tr.add(x0, pe)
    h = layer_norm(tr, x)
    q = tr.dot_general(h, wq, ((2,), (0,)), ((), ()))
    k = tr.dot_general(h, wk, ((2,), (0,)), ((), ()))
    v = tr.dot_general(h, wv, ((2,), (0,)), ((), ()))
    s = tr.dot_general(q, k, ((3,), (3,)), ((0, 2), (0, 2)))
    s2 = tr.mul(s, Lit("0.5", "f32"))
    row = tr.e1("iota", [("dimension", "0"), ("dtype", "int32"), ("shape", "(8, 8)"),
                         ("sharding", "None")], [], "i32", (8, 8), frozenset())
    col = tr.e1("iota", [("dimension", "1"), ("dtype", "int32"), ("shape", "(8, 8)"),
                         ("sharding", "None")], [], "i32", (8, 8), frozenset())
    causal = tr.binop("ge", row, col, dt="bool")[0]
    hl = s2.shape[1]
    mask = tr.broadcast_in_dim(causal, (b, hl, T, T), (2, 3))
    # lax.full_like(s, -1e9): s's sharding, then lifted to s's varying axes
    neg = tr.e1("broadcast_in_dim", [("broadcast_dimensions", "()"), ("shape", tup(s2.shape)),
                                     ("sharding", ns(4))], [Lit("-1e+09", "f32")], "f32",
                s2.shape, frozenset())
    neg, = tr.insert_pvary_to(neg, s2.vma)
    s3 = tr.select_n(mask, neg, s2)                          # lax.select(mask, s, neg)
    mx = softmax_last(tr, s3)
    z = tr.sub(s3, mx)
    e = tr.exp(z)
    se = tr.reduce_sum(e, (3,))
    se = tr.broadcast_in_dim(se, (b, hl, T, 1), (0, 1, 2))
    pr = tr.div(e, se)
    o = tr.dot_general(pr, v, ((3,), (1,)), ((0, 1), (0, 2)))
    a0 = tr.dot_general(o, wo, ((1, 3), (0, 1)), ((), ()))
    a = tr.psum(a0, "model")
    x1 = tr.add(x, a)
    h2 = layer_norm(tr, x1)
    u = tr.dot_general(h2, w1, ((2,), (0,)), ((), ()))
    g = gelu(tr, u)
    y0 = tr.dot_general(g, w2, ((2,), (0,)), ((), ()))
    y = tr.psum(y0, "model")
    x2 = tr.add(x1, y)
    hf = layer_norm(tr, x2)
    logits = tr.dot_general(hf, wte, ((2,), (1,)), ((), ()))
    mx = softmax_last(tr, logits)
    zl = tr.sub(logits, mx)
    el = tr.exp(zl)
    sl = tr.reduce_sum(el, (2,))
    sl = tr.broadcast_in_dim(sl, (b, T, 1), (0, 1))
    lse = tr.log(sl)
    logp = tr.sub(zl, lse)
    # jnp.take_along_axis(logp, tgt[..., None], axis=-1)
    ti = tr.broadcast_in_dim(tgt, (b, T, 1), (0, 1))
    picked = tr.take_along_axis(logp, ti)
    tot = tr.reduce_sum(picked, (0, 1, 2))
    mean = tr.div(tot, Lit("%d.0" % (b * T), "f32"))
    nl = tr.unary("neg", mean)
    tr.linear(nl, [mean], lambda self, g: [self.unary("neg", g)])
    ps = tr.psum(nl, "data")
    return tr.div(ps, Lit("2.0", "f32"))


def adamw(tr, p, g, m, v, c1, c2):
    ma = tr.mul(Lit("0.9", "f32"), m)
    mb = tr.mul(Lit("0.1", "f32"), g)
    mn = tr.add(ma, mb)
    g2 = tr.integer_pow(g, 2)
    va = tr.mul(Lit("0.999", "f32"), v)
    vb = tr.mul(Lit("0.001", "f32"), g2)
    vn = tr.add(va, vb)
    mh = tr.div(mn, c1)
    vh = tr.div(vn, c2)
    r = tr.unary("sqrt", vh)
    den = tr.add(r, Lit("1e-08", "f32"))
    u = tr.div(mh, den)
    wd = tr.mul(Lit("0.01", "f32"), p)
    u2 = tr.add(u, wd)
    du = tr.mul(Lit("0.01", "f32"), u2)
    pn = tr.sub(p, du)
    return pn, mn, vn


def fill(prefix, items, suffix, cont, sep="", first_sep="", width=80):
    """prefix, then the items separated by `sep` and a space, broken where the
    next item would pass `width`, continued at `cont`; then suffix."""
    lines, cur = [], prefix + first_sep
    for k, it in enumerate(items):
        last = k == len(items) - 1
        piece = it + ("" if last else sep)
        # the text after the last item stays on its line (JAX's printer
        # measures up to the next break)
        if k and len(cur) + 1 + len(piece) + (len(suffix) if last else 0) > width:
            lines.append(cur)
            cur = cont + piece
        else:
            cur = cur + (" " if k and not cur.endswith("(") else "") + piece
    lines.append(cur + suffix)
    return lines


def main():
    namer = Namer()
    ind0 = "    "
    # the outer jaxpr's binders: tok, tgt, t, 8 weights, 8 m, 8 v
    ins = [("i32", (B, T), ("data", None)), ("i32", (B, T), ("data", None)), ("f32", (), ())]
    for rep in range(3):
        ins += [("f32", shp, spec) for _, shp, spec in PARAMS]
    outer = [V(namer, dt, shp, ()) for dt, shp, _ in ins]
    out_specs = [()] + [spec for rep in range(3) for _, _, spec in PARAMS]
    out_avals = [("f32", ())] + [("f32", shp) for rep in range(3) for _, shp, _ in PARAMS]
    results = [V(namer, dt, shp, ()) for dt, shp in out_avals]
    # the body
    body_in = []
    for (dt, shp, spec) in ins:
        vma = [a for a in spec if a]
        body_in.append(V(namer, dt, local(shp, spec), vma))
    ind2 = ind0 + "            "
    tr = Tr(Body(namer, ind2))
    tok, tgt, t = body_in[:3]
    params = body_in[3:11]
    ms, vs = body_in[11:19], body_in[19:27]
    for p in params:
        tr.keep.append(p)
        tr.tan[id(p)] = next(tr.tid)
    loss = model_loss(tr, tok, tgt, params)
    ct = tr.backward(loss, tr.one(loss))        # value_and_grad's seed, lax._one(ans)
    grads = [ct[tr.tan[id(p)]] for p in params]
    # AdamW on every leaf; the bias corrections once
    tr.tan.clear()
    b1t = tr.binop("pow", Lit("0.9", "f32"), t)[0]
    c1 = tr.binop("sub", Lit("1.0", "f32"), b1t)[0]
    b2t = tr.binop("pow", Lit("0.999", "f32"), t)[0]
    c2 = tr.binop("sub", Lit("1.0", "f32"), b2t)[0]
    new = [adamw(tr, p, g, m, v, c1, c2) for p, g, m, v in zip(params, grads, ms, vs)]
    body_out = [loss] + [n[0] for n in new] + [n[1] for n in new] + [n[2] for n in new]
    # print, laid out as JAX's pretty printer does at width 80: a list of
    # binders or operands fills a line and continues 2 deeper than the
    # equation (4 deeper than a jaxpr's `{` for its binders and results)
    lines = []

    def typed(vs):
        return ["%s:%s" % (v.name, v.ty()) for v in vs]

    ind1 = ind0 + "      "                 # the jit's body
    assert ind2 == ind1 + "      "          # the shard_map's body
    lines += fill("{ lambda ; ", typed(outer), ". let", " " * 4)
    lines += fill(ind0, typed(results), " = jit[", ind0 + "  ")
    lines.append("%s  name=train_step" % ind0)
    lines += fill(ind0 + "  jaxpr={ lambda ; ", typed(outer), ". let", ind0 + "      ")
    lines += fill(ind1, typed(results), " = shard_map[", ind1 + "  ")
    lines.append("%s  check_vma=True" % ind1)
    lines.append("%s  in_specs=%s" % (ind1, tup(pspec(s) for _, _, s in ins)))
    lines += fill(ind1 + "  jaxpr={ lambda ; ", typed(body_in), ". let", ind1 + "      ")
    lines.extend(tr.b.lines)
    lines += fill(ind1 + "    in (", [v.ref() for v in body_out], ") }", ind1 + "      ", sep=",")
    lines.append("%s  manual_axes=frozenset({'data', 'model'})" % ind1)
    lines.append("%s  mesh=Mesh(axis_sizes=(2, 2), axis_names=('data', 'model'), axis_types=(Auto, Auto))"
                 % ind1)
    lines.append("%s  out_specs=%s" % (ind1, tup(pspec(s) for s in out_specs)))
    lines += fill(ind1 + "]", [v.name for v in outer], "", ind1 + "  ", first_sep=" ")
    lines += fill(ind0 + "    in (", [v.name for v in results], ") }", ind0 + "      ", sep=",")
    lines += fill(ind0 + "]", [v.name for v in outer], "", ind0 + "  ", first_sep=" ")
    lines += fill("  in (", [v.name for v in results], ") }", "    ", sep=",")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
