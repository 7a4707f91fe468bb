#!/usr/bin/env python3
# timeout: 300
"""Splitting a shard_map operand by sharing its memory (src/run/split.c
share, src/rules/dot.c dot_operand): random shard_maps against a NumPy model
of every device, compared bit for bit.

An operand whose blocks are each one contiguous run of it (tilings of the
leading dimensions: P(i), P((i, j)), P(None, i) of a [1, n] array...) is
split into views of its elements, whether it dies at the call or lives on;
a matrix operand that the body gives only to dot_general (directly or
through a pbroadcast the checker inserts) is split into pitched views,
which dot_general reads in place as BLAS's leading dimension when the dot
is a plain f32/f64 matrix product of it and copies first otherwise.
Elementwise equations run over all blocks at once only when the blocks'
elements are in block order (arr_in_slab).  Each case is one of:

  * dot (3 in 4): a random mesh (1 to 3 axes of sizes 1 to 4), two
    operands of rank 1 to 3 (mostly matrices, now and then with a
    dimension of 0) with random in_specs (an axis, a tuple of axes in
    either order, or None per dimension, often splitting the last
    dimension; also P() and an operand the body reads from outside),
    random dimension_numbers (one contracting dimension either way round
    on either side, batch dimensions, every dimension contracted, none: an
    outer product), dtypes f32, f64, i32, i8, bf16, f16, c64 and
    preferred_element_types (bf16 -> f32, i8 -> i32, f32 -> f64,
    i32 -> f32, f16 -> f32, f32 -> f32); the product leaves through the
    out_spec its dimensions come from after a psum of the other axes, or
    stacked per device after a psum over some axes or an all_gather (or
    all_gather_invariant), or its sum's gradient is taken (grad of the
    shard_map: a second shard_map whose body gives the residuals to
    dot_general).  Sometimes the same variable is passed as both operands,
    or one parameter is both operands, or an operand is 1 MiB or more;
    sometimes the body also gives an operand to something else (an
    elementwise add, print, return, a nested call, a closure in a
    fori_loop: no pitched views then) or to a second dot_general (still
    pitched);
  * ew (1 in 4): an operand of rank 1 to 3 split mostly along its leading
    dimensions, doubled, added to itself or to a second operand of the
    same split, its per-device maximum stacked and sometimes a psum of it
    (blocks in and out of block order; small ones run over all blocks at
    once; the operand dying at an elementwise equation or a psum).

Operands die at the call or are saved again after it (they must be
unchanged); some calls run three times inside a fori_loop that reads the
operands from outside.  Inputs are small integers, so every product and
sum is exact in every dtype and on any BLAS kernel: results are compared
bit for bit, prints as text.  Cases run 60 to a process; when one fails,
each of its cases runs alone to tell which.

SHM_SHARE_SEED picks another seed, SHM_SHARE_N the number of cases.
Run by tests/run.py with SHMAPI set; needs NumPy.
"""

import itertools
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, run_lines, shmapi_under_test  # noqa: E402

SEED = int(os.environ.get("SHM_SHARE_SEED", "20261127"))
CASES = int(os.environ.get("SHM_SHARE_N", "3000"))
BATCH = 60
AXES = "ijk"
NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i8": np.int8, "u16": np.uint16,
      "f16": np.float16, "c64": np.complex64, "bf16": np.float32}
INTS = ("i32", "i8", "u16")
HALF = ("bf16", "f16")
# (operand dtype, preferred_element_type), weight
DOT_DTYPES = [(("f32", None), 14), (("f64", None), 9), (("i32", None), 2), (("bf16", None), 2),
              (("bf16", "f32"), 2), (("i8", "i32"), 2), (("i8", None), 1), (("f32", "f64"), 1),
              (("f16", None), 1), (("f16", "f32"), 1), (("i32", "f32"), 1), (("c64", None), 1),
              (("f32", "f32"), 1), (("f64", "f64"), 1)]
EW_DTYPES = ["f32", "f64", "i32", "i8", "u16", "bf16"]
# extra uses of a dot operand in the body, and weights
EXTRAS = [(None, 40), ("add", 10), ("ret", 9), ("print", 8), ("call", 8), ("closure", 8), ("dot2", 10)]


def pick(rng, weighted):
    w = np.array([x[1] for x in weighted], dtype=float)
    return weighted[int(rng.choice(len(weighted), p=w / w.sum()))][0]


# ---------------------------------------------------------------- values

def bf16_round64(x):
    """float64 values rounded to bfloat16 (8 significant bits, nearest even)."""
    x = np.asarray(x, np.float64)
    m, e = np.frexp(x)
    return np.ldexp(np.round(np.ldexp(m, 8)), e - 8)


def wrap(x, dt):
    """Exact values (float64, int64 or complex128) as dt holds them, in the same wide type."""
    x = np.asarray(x)
    if dt in INTS:
        return np.round(x.real if np.iscomplexobj(x) else x).astype(np.int64).astype(NP[dt]).astype(np.int64)
    if dt == "c64":
        return x.astype(np.complex128).astype(np.complex64).astype(np.complex128)
    if dt == "bf16":
        return bf16_round64(x.astype(np.float64))
    with np.errstate(over="ignore"):
        return x.astype(np.float64).astype(NP[dt]).astype(np.float64)


def final(x, dt):
    """What np.load gives for a saved dt value (bf16: decoded to float32)."""
    return np.asarray(x).astype(NP[dt])


def load_saved(path):
    a = np.load(path)
    if a.dtype == np.dtype("V2"):       # bfloat16
        return (a.reshape(-1).view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(a.shape), "bf16"
    return a, None


# ---------------------------------------------------------------- meshes and specs

class Mesh:
    def __init__(self, names, sizes):
        self.names, self.sizes = names, sizes
        self.devs = list(np.ndindex(*sizes))

    def size(self, a):
        return self.sizes[self.names.index(a)]

    def coord(self, dev, a):
        return dev[self.names.index(a)]

    def text(self):
        return ", ".join("%s: %d" % p for p in zip(self.names, self.sizes))


def tup(items):
    items = [str(x) for x in items]
    return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def entry_text(e):
    return "None" if not e else e[0] if len(e) == 1 else "(" + ", ".join(e) + ")"


def spec_text(spec):
    parts = [entry_text(e) for e in spec]
    while parts and parts[-1] == "None":
        parts.pop()
    return "P(" + ", ".join(parts) + ")"


def spec_axes(spec):
    return {a for e in spec for a in e}


def split_of(mesh, spec):
    return [int(np.prod([mesh.size(a) for a in e])) if e else 1 for e in spec]


def random_spec(rng, mesh, rank, leading=False, trailing=False):
    """Each mesh axis to a dimension or nowhere; within a dimension in mesh
    order half the time.  leading: only the first dimension is split (mostly);
    trailing: the last one at least (a pitched split of a matrix)."""
    spec = [[] for _ in range(rank)]
    for n, a in enumerate(rng.permutation(len(mesh.names))):
        d = int(rng.integers(0, rank)) if rng.random() < 0.8 else -1
        if leading and d > 0 and rng.random() < 0.8:
            d = 0
        if trailing and n == 0:
            d = rank - 1
        if d >= 0:
            spec[d].append(mesh.names[a])
    if rng.random() < 0.5:
        spec = [sorted(e) for e in spec]
    return spec


def block_index(mesh, entry, dev):
    k, count = 0, 1
    for a in entry:                      # the first listed axis is major
        k = k * mesh.size(a) + mesh.coord(dev, a)
        count *= mesh.size(a)
    return k, count


def slices(mesh, spec, shape, dev):
    """Where device dev's block of an array of this shape lies, split by spec."""
    idx = []
    for d in range(len(shape)):
        k, count = block_index(mesh, spec[d] if d < len(spec) else [], dev)
        step = shape[d] // count
        idx.append(slice(k * step, (k + 1) * step))
    return tuple(idx)


def take_block(mesh, spec, x, dev):
    return x[slices(mesh, spec, x.shape, dev)]


def assemble(mesh, spec, vals):
    b = vals[mesh.devs[0]]
    counts = [block_index(mesh, spec[d] if d < len(spec) else [], mesh.devs[0])[1] for d in range(b.ndim)]
    g = np.zeros([b.shape[d] * counts[d] for d in range(b.ndim)], dtype=b.dtype)
    for dev in mesh.devs:
        idx = []
        for d in range(b.ndim):
            k, _ = block_index(mesh, spec[d] if d < len(spec) else [], dev)
            idx.append(slice(k * b.shape[d], (k + 1) * b.shape[d]))
        g[tuple(idx)] = vals[dev]
    return g


def psum(mesh, vals, axes, dt):
    keep = [n for n in mesh.names if n not in axes]
    groups = {}
    for dev in mesh.devs:
        key = tuple(mesh.coord(dev, a) for a in keep)
        groups[key] = groups.get(key, 0) + vals[dev]
    return {dev: wrap(groups[tuple(mesh.coord(dev, a) for a in keep)], dt) for dev in mesh.devs}


def gather(mesh, vals, a, pos, tiled):
    i = mesh.names.index(a)
    out = {}
    for dev in mesh.devs:
        parts = [vals[dev[:i] + (t,) + dev[i + 1:]] for t in range(mesh.size(a))]
        out[dev] = np.concatenate(parts, axis=pos) if tiled else np.stack(parts, axis=pos)
    return out


def stack_spec(rng, axes, mesh):
    order = [a for a in mesh.names if a in axes]
    if rng.random() < 0.5:
        order = [str(a) for a in rng.permutation(order)] if order else []
    return [order]


# ---------------------------------------------------------------- dot_general

def dim_numbers(rng, rl, rr, ok=None, blocks=None, most=4096):
    """Random (lc, rc, lb, rb) for operands of ranks rl and rr whose result
    has rank 4 at most; ok(l, r) says whether dimensions l and r may pair;
    given the block shapes, a result of at most `most` elements.  None if
    there is none."""
    cands = []
    weight = {(0, 1): 10, (0, 0): 1.2, (0, 2): 2, (1, 0): 1.2, (1, 1): 2}
    for nb in range(0, min(rl, rr) + 1):
        for nc in range(0, min(rl, rr) - nb + 1):
            if nb + (rl - nb - nc) + (rr - nb - nc) > 4:
                continue
            for L in itertools.permutations(range(rl), nb + nc):
                for R in itertools.permutations(range(rr), nb + nc):
                    if ok and not all(ok(x, y) for x, y in zip(L, R)):
                        continue
                    dn = (list(L[nb:]), list(R[nb:]), list(L[:nb]), list(R[:nb]))
                    if blocks and result_size(blocks, dn) > most:
                        continue
                    cands.append((dn, weight.get((nb, nc), 0.7)))
    return pick(rng, cands) if cands else None


def result_size(blocks, dn):
    lc, rc, lb, rb = dn
    bl, br = blocks
    n = int(np.prod([bl[d] for d in lb]))
    n *= int(np.prod([bl[d] for d in free_dims(len(bl), lc, lb)]))
    return n * int(np.prod([br[d] for d in free_dims(len(br), rc, rb)]))


def dn_text(dn):
    lc, rc, lb, rb = dn
    return "((%s, %s), (%s, %s))" % (lc, rc, lb, rb)


def np_dot(a, b, dn):
    lc, rc, lb, rb = dn
    letters = iter("abcdefghijklmnop")
    la, lr = [None] * a.ndim, [None] * b.ndim
    out = []
    for x, y in zip(lb, rb):
        c = next(letters)
        la[x] = lr[y] = c
        out.append(c)
    for x, y in zip(lc, rc):
        la[x] = lr[y] = next(letters)
    for v in (la, lr):
        for d in range(len(v)):
            if v[d] is None:
                v[d] = next(letters)
                out.append(v[d])
    return np.asarray(np.einsum("%s,%s->%s" % ("".join(la), "".join(lr), "".join(out)), a, b))


def free_dims(rank, c, b):
    return [d for d in range(rank) if d not in c and d not in b]


def small_size(rng):
    return 0 if rng.random() < 0.01 else int(rng.choice([1, 2, 2, 3, 3, 4, 5, 8]))


def gen_values(rng, shape, dt, vmax):
    lo = 0 if dt == "u16" else -vmax
    v = rng.integers(lo, vmax + 1, size=shape).astype(np.int16)
    if dt == "c64":
        return v, rng.integers(-vmax, vmax + 1, size=shape).astype(np.int16)
    return v, None


def make_dot(rng, i):
    naxes = int(rng.integers(1, 4))
    mesh = Mesh(list(AXES[:naxes]), [int(rng.integers(1, 5)) for _ in range(naxes)])
    dt, pref = pick(rng, DOT_DTYPES)
    arr = pick(rng, [("two", 70), ("twice", 15), ("self", 15)])
    c = dict(kind="dot", i=i, mesh=mesh, dt=dt, pref=pref, arr=arr, big=False)
    if arr == "two":
        srcs = pick(rng, [(("param", "param"), 60), (("param", "rep"), 10), (("rep", "param"), 5),
                          (("param", "closure"), 15), (("closure", "param"), 10)])
        rl, rr = (int(pick(rng, [(1, 1), (2, 8), (3, 1)])) for _ in range(2))
        dn = dim_numbers(rng, rl, rr)
        lc, rc, lb, rb = dn
        bl, br = [None] * rl, [None] * rr
        for x, y in zip(lc + lb, rc + rb):
            bl[x] = br[y] = small_size(rng)
        fill_missing((bl, br), lambda: small_size(rng))
        specs = [random_spec(rng, mesh, r, trailing=rng.random() < 0.4) if src == "param"
                 else [[] for _ in range(r)] for src, r in zip(srcs, (rl, rr))]     # rep, closure: whole
        blocks = [bl, br]
        # now and then an operand of 1 MiB or more (its free dimension scaled up)
        if rng.random() < 0.06 and dt not in ("f16", "c64") and max(rl, rr) <= 2:
            cand = [(k, d) for k in (0, 1) if srcs[k] == "param"
                    for d in free_dims((rl, rr)[k], dn[k], dn[k + 2])]
            if cand and len(dn[0]) + len(dn[2]) > 0:
                k, d = cand[int(rng.integers(0, len(cand)))]
                es = np.dtype(NP[dt]).itemsize if dt != "bf16" else 2
                split = split_of(mesh, specs[k])
                n = max(1, int(np.prod(blocks[k])) * int(np.prod(split)))
                target = (1 << 20) // es + int(rng.integers(0, 1 << 16))
                blocks[k][d] *= -(-target // n)
                for d2 in free_dims((rl, rr)[1 - k], dn[1 - k], dn[3 - k]):
                    blocks[1 - k][d2] = min(blocks[1 - k][d2], 2)
                c["big"] = True
        shapes = [[b * s for b, s in zip(blocks[k], split_of(mesh, specs[k]))] for k in (0, 1)]
        c.update(srcs=srcs, specs=specs, shapes=shapes, blocks=blocks, dn=dn)
    else:
        dn = None
        while dn is None:
            r = int(pick(rng, [(1, 1), (2, 8), (3, 1)]))
            sa = random_spec(rng, mesh, r, trailing=rng.random() < 0.4)
            sb = random_spec(rng, mesh, r, trailing=rng.random() < 0.4) if arr == "twice" else sa
            pa, pb = split_of(mesh, sa), split_of(mesh, sb)
            shape = [int(np.lcm(x, y)) * int(rng.choice([1, 1, 2, 3])) for x, y in zip(pa, pb)]
            ba = [s // x for s, x in zip(shape, pa)]
            bb = [s // x for s, x in zip(shape, pb)]
            dn = dim_numbers(rng, r, r, lambda x, y: ba[x] == bb[y], (ba, bb))
        c.update(srcs=("param", "param") if arr == "twice" else ("param", "self"), specs=[sa, sb],
                 shapes=[shape, shape], blocks=[ba, bb], dn=dn)
    # the extra use of an operand, the post-operation, the call
    params = [k for k in (0, 1) if c["srcs"][k] == "param"]
    sharded = [k for k in params if spec_axes(c["specs"][k])]
    c["victim"] = sharded[int(rng.integers(0, len(sharded)))] if sharded else None
    extra = pick(rng, EXTRAS) if c["victim"] is not None else None
    if extra == "print" and (c["big"] or len(mesh.devs) > 16 or c["dt"] not in ("f32", "f64", "i32", "i8")
                             or int(np.prod(c["blocks"][c["victim"]])) > 48):
        extra = "add"
    if extra in ("call", "closure") and arr == "self":
        extra = "ret"
    c["extra"] = extra
    # the bound on values: every sum (psums, three loop rounds) exact in f32 (and in f16)
    lc = c["dn"][0]
    K = int(np.prod([c["blocks"][0][d] for d in lc])) if lc else 1
    if c["extra"] == "dot2":            # (a second dot of an operand with itself)
        K = max(K, int(np.prod(c["blocks"][c["victim"]])))
    n = len(mesh.devs) * K * 6 * (2 if dt == "c64" else 1)
    limit = 30000 if "f16" in (dt, pref) else 1 << 22
    c["vmax"] = max(1, min(3, int(np.sqrt(limit / max(n, 1)))))
    if n > limit:           # too many terms even for values of 1: f64, whose sums stay exact
        c["dt"], c["pref"] = "f64", None
    c["post"] = "natural" if c["big"] else pick(rng, [("natural", 4), ("stack", 4), ("gather", 2)])
    c["loop"] = rng.random() < 0.12
    if not c["big"] and c["dt"] in ("f32", "f64") and not c["pref"] and rng.random() < 0.15:
        c["post"], c["extra"], c["loop"] = "grad", None, False     # the gradient of a sum of the product
    c["after"] = rng.random() < 0.35
    return c


def dot_values(rng, c):
    vals = []
    n = 1 if c["arr"] in ("twice", "self") else 2
    for k in range(n):
        vals.append(gen_values(rng, c["shapes"][k], c["dt"], c["vmax"]))
    return vals


def as_wide(v, dt):
    re, im = v
    if dt == "c64":
        return re.astype(np.float64) + 1j * im.astype(np.float64)
    if dt in INTS:
        return wrap(re.astype(np.int64), dt)
    return re.astype(np.float64)


def load_lines(name, dt, v, tmp):
    """Lines making top-level `name` of dtype dt from saved int16 files (a fresh array: it can die)."""
    re, im = v
    np.save(os.path.join(tmp, "%s.npy" % name), re)
    if dt == "c64":
        np.save(os.path.join(tmp, "%s_im.npy" % name), im)
        return ['%s_l = load "%s.npy"' % (name, name), '%s_li = load "%s_im.npy"' % (name, name),
                "%s_r = convert_element_type[new_dtype=f32] %s_l" % (name, name),
                "%s_i = convert_element_type[new_dtype=f32] %s_li" % (name, name),
                "%s = complex %s_r %s_i" % (name, name, name)]
    return ['%s_l = load "%s.npy"' % (name, name),
            "%s = convert_element_type[new_dtype=%s] %s_l" % (name, dt, name)]


class Out:
    """A result of the body: its out_spec and the NumPy model's global value."""

    def __init__(self, var, spec, vals, dt, mesh):
        self.var, self.spec, self.dt = var, spec, dt
        self.value = assemble(mesh, spec, vals)


def post(rng, c, body, var, vals, dt, vary, rank, sources):
    """Lines after the product `var` (per-device vals, dtype dt, varying over
    `vary`, of rank `rank`) that take it out of the body: an Out.  sources:
    per dimension of the product, the in_spec entry it comes from."""
    mesh = c["mesh"]
    if dt in HALF:                      # exact in f32; psums and stacking in f32
        body.append("%s_f = convert_element_type[new_dtype=f32] %s" % (var, var))
        var, dt = var + "_f", "f32"
    kind = c["post"]
    if kind == "natural":
        spec, used = [], set()
        for e in sources:
            e = [a for a in e if a not in used] if not any(a in used for a in e) else []
            used |= set(e)
            spec.append(e)
        rest = [a for a in mesh.names if a in vary and a not in used]
        if rest:
            body.append("%s_s = psum[axes=%s] %s" % (var, tup(rest), var))
            var, vals = var + "_s", psum(mesh, vals, rest, dt)
        return var, Out(var, spec, vals, dt, mesh)
    if kind == "gather":
        a = mesh.names[int(rng.integers(0, len(mesh.names)))]
        tiled = rank > 0 and rng.random() < 0.5
        pos = int(rng.integers(0, rank if tiled else rank + 1))
        inv = rng.random() < 0.5
        body.append("%s_g = %s[axes=%s, axis=%d, tiled=%s] %s" % (
            var, "all_gather_invariant" if inv else "all_gather", a, pos, tiled, var))
        var, vals = var + "_g", gather(mesh, vals, a, pos, tiled)
        vary = (vary - {a}) if inv else (vary | {a})
        rank += 0 if tiled else 1
    else:
        some = [a for a in mesh.names if a in vary and rng.random() < 0.5]
        if some:
            body.append("%s_s = psum[axes=%s] %s" % (var, tup(some), var))
            var, vals = var + "_s", psum(mesh, vals, some, dt)
            vary = vary - set(some)
    shape = vals[mesh.devs[0]].shape
    body.append("%s_e = broadcast_in_dim[shape=%s, broadcast_dimensions=%s] %s" % (
        var, tup((1,) + shape), tup(range(1, rank + 1)) if rank else "()", var))
    var = var + "_e"
    vals = {d: v[None] for d, v in vals.items()}
    return var, Out(var, stack_spec(rng, vary, mesh), vals, dt, mesh)


def np_dot_grad(a, b, dn, role):
    """The gradient of the sum of np_dot(a, b, dn) with respect to operand `role`."""
    if role == 0:
        return np_dot_onto(np.ones_like(a), b, dn, 0)
    return np_dot_onto(a, np.ones_like(b), dn, 1)


def fill_missing(lists, make):
    """Each None entry of the lists replaced by make()."""
    for v in lists:
        for d in range(len(v)):
            if v[d] is None:
                v[d] = make()


def np_dot_onto(a, b, dn, role):
    lc, rc, lb, rb = dn
    letters = iter("abcdefghijklmnop")
    la, lr = [None] * a.ndim, [None] * b.ndim
    for x, y in zip(lb + lc, rb + rc):
        la[x] = lr[y] = next(letters)
    fill_missing((la, lr), lambda: next(letters))
    return np.einsum("%s,%s->%s" % ("".join(la), "".join(lr), "".join((la, lr)[role])), a, b)


def grad_program(rng, c, lines, tops, glob, blk, bparams, operand, in_specs, args, dot_eq, rank):
    """A dot case whose body returns the psum of the product's sum, and its
    gradient with respect to one parameter (grad of the shard_map: a second
    shard_map whose body gives the residuals to dot_general)."""
    i, mesh, dt, dn = c["i"], c["mesh"], c["dt"], c["dn"]
    n = int(rng.integers(0, len(bparams)))
    k = bparams[n]
    roles = [0, 1] if c["arr"] == "self" else [k]
    body = ["r = %s %s %s" % (dot_eq, operand[0], operand[1])]
    if rank:
        body.append("s = reduce_sum[axes=%s] r" % tup(range(rank)))
    body.append("t = psum[axes=%s] %s" % (tup(mesh.names), "s" if rank else "r"))
    lines += ["@shard_map[mesh=m%d, in_specs=%s, out_specs=P()]" % (i, tup(in_specs)),
              "def f%d(%s) {" % (i, ", ".join({0: "a", 1: "b"}[q] for q in bparams))]
    lines += ["  " + ln for ln in body] + ["  return t", "}",
                                           "def fg%d = grad[argnums=%d] f%d" % (i, n, i),
                                           "o%d_0 = fg%d %s" % (i, i, " ".join(args)),
                                           'save "o%d_0.npy" o%d_0' % (i, i)]
    shape = c["shapes"][k]
    g = np.zeros(shape)
    for d in mesh.devs:
        for role in roles:
            g[slices(mesh, c["specs"][k], shape, d)] += np_dot_grad(blk[d][0], blk[d][1], dn, role)
    expect = [("o%d_0.npy" % i, final(wrap(g, dt), dt), dt)]
    if c["after"]:
        for q in range(2 if c["arr"] == "two" else 1):
            lines.append('save "%s_after.npy" %s' % (tops[q], tops[q]))
            expect.append(("%s_after.npy" % tops[q], final(glob[q], dt), dt))
    return lines, expect, None


def dot_program(rng, c, tmp):
    """The program lines of a dot case, and its expectations."""
    i, mesh, dt, pref, dn = c["i"], c["mesh"], c["dt"], c["pref"], c["dn"]
    out_dt = pref or dt
    vals = dot_values(rng, c)
    lines = ["mesh m%d = {%s}" % (i, mesh.text())]
    tops = ["x%d" % i, "w%d" % i]
    lines += load_lines(tops[0], dt, vals[0], tmp)
    if c["arr"] == "two":
        lines += load_lines(tops[1], dt, vals[1], tmp)
        glob = [as_wide(vals[0], dt), as_wide(vals[1], dt)]
    else:
        tops[1] = tops[0]
        glob = [as_wide(vals[0], dt)] * 2
    srcs, specs = c["srcs"], c["specs"]
    pnames = {0: "a", 1: "b"}
    operand = {}
    for k in (0, 1):
        if srcs[k] in ("param", "rep"):
            operand[k] = pnames[k]
        elif srcs[k] == "closure":
            operand[k] = tops[k]
        else:                            # self
            operand[k] = "a"
    bparams = [k for k in (0, 1) if srcs[k] in ("param", "rep")]
    in_specs = [spec_text(specs[k]) for k in bparams]
    args = [tops[k] for k in bparams]
    pref_t = ", preferred_element_type=%s" % pref if pref else ""
    dot_eq = "dot_general[dimension_numbers=%s%s]" % (dn_text(dn), pref_t)
    extra, victim = c["extra"], c["victim"]
    # per-device blocks
    blk = {d: [take_block(mesh, specs[k], glob[k], d) for k in (0, 1)] for d in mesh.devs}
    rvals = {d: wrap(np_dot(blk[d][0], blk[d][1], dn), out_dt) for d in mesh.devs}
    vary = spec_axes(specs[0]) | spec_axes(specs[1]) if srcs[1] != "self" else spec_axes(specs[0])
    lc, rc, lb, rb = dn
    rl, rr = len(c["shapes"][0]), len(c["shapes"][1])
    sources = [specs[0][d] for d in lb] + [specs[0][d] for d in free_dims(rl, lc, lb)] + \
        [specs[1][d] for d in free_dims(rr, rc, rb)]
    if srcs[1] == "closure" or srcs[1] == "rep":
        sources = sources[:len(lb) + len(free_dims(rl, lc, lb))] + [[]] * len(free_dims(rr, rc, rb))
    rank = len(sources)
    pre = []
    body = []
    outs = []
    if c["post"] == "grad":
        return grad_program(rng, c, lines, tops, glob, blk, bparams, operand, in_specs, args, dot_eq, rank)
    if extra == "call":
        pre += ["def g%d(p, q) {" % i, "  r = %s p q" % dot_eq, "  return r", "}"]
        body.append("r = g%d %s %s" % (i, operand[0], operand[1]))
    elif extra == "closure":
        zshape = rvals[mesh.devs[0]].shape
        body += ["def h(it, acc) {", "  t = %s %s %s" % (dot_eq, operand[0], operand[1]),
                 "  acc2 = add acc t", "  return acc2", "}",
                 "z = full[shape=%s, value=0, dtype=%s]" % (tup(zshape) if zshape else "()", out_dt),
                 "r = fori_loop[lower=0, upper=2, body=h] z"]
        rvals = {d: wrap(wrap(v + v, out_dt), out_dt) for d, v in rvals.items()}
    else:
        body.append("r = %s %s %s" % (dot_eq, operand[0], operand[1]))
    var, o = post(rng, c, body, "r", rvals, out_dt, vary, rank, sources)
    outs.append(o)
    xv = None
    if victim is not None:
        xv = operand[victim]
        xvals = {d: blk[d][victim] for d in mesh.devs}
    if extra == "add":
        body.append("e = add %s %s" % (xv, xv))
        outs.append(Out("e", specs[victim], {d: wrap(v + v, dt) for d, v in xvals.items()}, dt, mesh))
    elif extra == "ret":
        outs.append(Out(xv, specs[victim], xvals, dt, mesh))
    elif extra == "print":
        body.insert(int(rng.integers(0, len(body) + 1)), "print %s" % xv)
    elif extra == "dot2":
        r = len(c["shapes"][victim])
        vb = c["blocks"][victim]
        dn2 = dim_numbers(rng, r, r, lambda x, y: vb[x] == vb[y], (vb, vb))
        body.append("q = dot_general[dimension_numbers=%s%s] %s %s" % (dn_text(dn2), pref_t, xv, xv))
        qvals = {d: wrap(np_dot(v, v, dn2), out_dt) for d, v in xvals.items()}
        rank2 = len(dn2[2]) + 2 * len(free_dims(r, dn2[0], dn2[2]))
        saved = c["post"]
        c["post"] = "stack"
        _, o2 = post(rng, c, body, "q", qvals, out_dt, spec_axes(specs[victim]), rank2, None)
        c["post"] = saved
        outs.append(o2)
    outs_t = ", ".join(spec_text(o.spec) for o in outs)
    lines += pre
    lines += ["@shard_map[mesh=m%d, in_specs=%s, out_specs=%s]" % (i, tup(in_specs) if in_specs else "()",
                                                                   "(" + outs_t + ",)"),
              "def f%d(%s) {" % (i, ", ".join(pnames[k] for k in bparams))]
    lines += ["  " + ln for ln in body]
    lines += ["  return %s" % ", ".join(o.var for o in outs), "}"]
    names = ["o%d_%d" % (i, k) for k in range(len(outs))]
    reps = 3 if c["loop"] else 1
    if extra == "print":
        lines.append('print "case %d"' % i)
    if c["loop"]:
        accs = ["acc%d" % k for k in range(len(outs))]
        lines += ["def lb%d(it, %s) {" % (i, ", ".join(accs)),
                  "  %s = f%d %s" % (", ".join("t%d" % k for k in range(len(outs))), i, " ".join(args))]
        lines += ["  u%d = add acc%d t%d" % (k, k, k) for k in range(len(outs))]
        lines += ["  return %s" % ", ".join("u%d" % k for k in range(len(outs))), "}"]
        for k, o in enumerate(outs):
            lines.append("z%d_%d = full[shape=%s, value=0, dtype=%s]" % (
                i, k, tup(o.value.shape) if o.value.ndim else "()", o.dt))
        lines.append("%s = fori_loop[lower=0, upper=3, body=lb%d] %s" % (
            ", ".join(names), i, " ".join("z%d_%d" % (i, k) for k in range(len(outs)))))
        for o in outs:
            acc = np.zeros_like(o.value)
            for _ in range(3):
                acc = wrap(acc + o.value, o.dt)
            o.value = acc
    else:
        lines.append("%s = f%d %s" % (", ".join(names), i, " ".join(args)))
    lines += ['save "%s.npy" %s' % (n, n) for n in names]
    expect = [(n + ".npy", final(o.value, o.dt), o.dt) for n, o in zip(names, outs)]
    if c["after"]:
        for k in range(2 if c["arr"] == "two" else 1):
            lines.append('save "%s_after.npy" %s' % (tops[k], tops[k]))
            expect.append(("%s_after.npy" % tops[k], final(glob[k], dt), dt))
    text = None
    if extra == "print":
        parts = ["case %d" % i]
        names_t = ", ".join(mesh.names) + ("," if len(mesh.names) == 1 else "")
        one = []
        for n, d in enumerate(mesh.devs):
            coords = ", ".join(map(str, d)) + ("," if len(d) == 1 else "")
            one.append("On device %d at mesh coordinates (%s) = (%s):" % (n, names_t, coords))
            one.append(str(final(xvals[d], dt)))
        parts += one * reps
        text = "\n".join(parts) + "\n"
    return lines, expect, text


# ---------------------------------------------------------------- elementwise on views

def make_ew(rng, i):
    naxes = int(rng.integers(1, 4))
    mesh = Mesh(list(AXES[:naxes]), [int(rng.integers(1, 5)) for _ in range(naxes)])
    rank = int(rng.integers(1, 4))
    if rank > 1 and rng.random() < 0.25:      # leading dimensions of 1: P(None, i) of a [1, n]
        lead = int(rng.integers(1, rank))
        axes = [a for a in mesh.names if rng.random() < 0.8]
        if rng.random() < 0.5:
            axes = [str(a) for a in rng.permutation(axes)] if axes else []
        spec = [[] for _ in range(lead)] + [axes] + [[] for _ in range(rank - lead - 1)]
        split = split_of(mesh, spec)
        shape = [1] * lead + [split[lead] * int(rng.choice([1, 2]))] + \
            [int(rng.choice([1, 2, 3])) for _ in range(rank - lead - 1)]
    else:
        spec = random_spec(rng, mesh, rank, leading=rng.random() < 0.7)
        shape = [s * int(rng.choice([1, 1, 2, 3])) for s in split_of(mesh, spec)]
    dt = str(rng.choice(EW_DTYPES))
    big = rng.random() < 0.05
    if big:
        es = 2 if dt == "bf16" else np.dtype(NP[dt]).itemsize
        target = (1 << 20) // es + int(rng.integers(0, 1 << 16))
        n = int(np.prod(shape))
        d = int(np.argmax(np.array(shape) > 1)) if max(shape) > 1 else rank - 1
        shape[d] *= -(-target // n)
    second = pick(rng, [(None, 4), ("other", 3), ("twice", 2)])
    return dict(kind="ew", i=i, mesh=mesh, spec=spec, shape=shape, dt=dt, big=big, second=second,
                loop=rng.random() < 0.12, after=rng.random() < 0.4, vmax=3)


def ew_program(rng, c, tmp):
    i, mesh, spec, dt = c["i"], c["mesh"], c["spec"], c["dt"]
    lines = ["mesh m%d = {%s}" % (i, mesh.text())]
    xv = gen_values(rng, c["shape"], dt, c["vmax"])
    lines += load_lines("x%d" % i, dt, xv, tmp)
    x = as_wide(xv, dt)
    y = x
    args, params, specs = ["x%d" % i], ["a"], [spec]
    if c["second"] == "other":
        yv = gen_values(rng, c["shape"], dt, c["vmax"])
        lines += load_lines("w%d" % i, dt, yv, tmp)
        y = as_wide(yv, dt)
        args.append("w%d" % i)
    elif c["second"] == "twice":
        args.append("x%d" % i)
    if c["second"]:
        params.append("b")
        specs.append(spec)
    two = "2.0" if dt not in INTS else "2"
    sp = spec_text(spec)
    vary = spec_axes(spec)
    st = stack_spec(rng, vary, mesh)
    rank = len(c["shape"])
    body = ["d = mul a %s" % two,
            "e = add a %s" % ("b" if c["second"] else "d"),
            "s = reduce_max[axes=%s] a" % tup(range(rank)),
            "u = broadcast_in_dim[shape=(1,), broadcast_dimensions=()] s"]
    xb = {d: take_block(mesh, spec, x, d) for d in mesh.devs}
    yb = {d: take_block(mesh, spec, y, d) for d in mesh.devs}
    dv = {d: wrap(2 * v, dt) for d, v in xb.items()}
    ev = {d: wrap(xb[d] + (yb[d] if c["second"] else dv[d]), dt) for d in mesh.devs}
    uv = {d: np.asarray(v.max())[None] for d, v in xb.items()}
    outs = [Out("d", spec, dv, dt, mesh), Out("e", spec, ev, dt, mesh), Out("u", st, uv, dt, mesh)]
    if vary and rng.random() < 0.5:      # a collective straight on the parameter (its blocks views)
        axes = [x for x in mesh.names if x in vary and rng.random() < 0.6] or sorted(vary)[:1]
        body += ["p = psum[axes=%s] a" % tup(axes),
                 "pe = broadcast_in_dim[shape=%s, broadcast_dimensions=%s] p" % (
                     tup((1,) + tuple(xb[mesh.devs[0]].shape)), tup(range(1, rank + 1)))]
        pv = {d: v[None] for d, v in psum(mesh, xb, axes, dt).items()}
        outs.append(Out("pe", stack_spec(rng, vary - set(axes), mesh), pv, dt, mesh))
    if rng.random() < 0.5:               # the elementwise equations last: the parameter dies at one
        body = body[2:] + body[:2]
    lines += ["@shard_map[mesh=m%d, in_specs=%s, out_specs=%s]" % (
        i, tup([sp] * len(params)), tup([spec_text(o.spec) for o in outs])),
        "def f%d(%s) {" % (i, ", ".join(params))]
    lines += ["  " + ln for ln in body] + ["  return %s" % ", ".join(o.var for o in outs), "}"]
    names = ["o%d_%d" % (i, k) for k in range(len(outs))]
    if c["loop"]:
        ks = range(len(outs))
        lines += ["def lb%d(it, %s) {" % (i, ", ".join("p%d" % k for k in ks)),
                  "  %s = f%d %s" % (", ".join("t%d" % k for k in ks), i, " ".join(args))]
        lines += ["  q%d = add p%d t%d" % (k, k, k) for k in ks]
        lines += ["  return %s" % ", ".join("q%d" % k for k in ks), "}"]
        for k, o in enumerate(outs):
            lines.append("z%d_%d = full[shape=%s, value=0, dtype=%s]" % (i, k, tup(o.value.shape), dt))
        lines.append("%s = fori_loop[lower=0, upper=3, body=lb%d] %s" % (
            ", ".join(names), i, " ".join("z%d_%d" % (i, k) for k in ks)))
        for o in outs:
            acc = np.zeros_like(o.value)
            for _ in range(3):
                acc = wrap(acc + o.value, dt)
            o.value = acc
    else:
        lines.append("%s = f%d %s" % (", ".join(names), i, " ".join(args)))
    lines += ['save "%s.npy" %s' % (n, n) for n in names]
    expect = [(n + ".npy", final(o.value, dt), dt) for n, o in zip(names, outs)]
    if c["after"]:
        lines.append('save "x%d_after.npy" x%d' % (i, i))
        expect.append(("x%d_after.npy" % i, final(x, dt), dt))
    return lines, expect, None


# ---------------------------------------------------------------- running

def describe(c):
    m = "{%s}" % c["mesh"].text()
    if c["kind"] == "ew":
        return "case %d (ew): %s %s by %s on %s, second=%s%s%s%s" % (
            c["i"], c["dt"], c["shape"], spec_text(c["spec"]), m, c["second"], ", big" if c["big"] else "",
            ", in a fori_loop" if c["loop"] else "", ", used after" if c["after"] else "")
    return "case %d (dot): %s%s, %s %s by %s and %s %s by %s (%s), dimension_numbers=%s on %s, extra=%s, " \
        "post=%s%s%s%s" % (
            c["i"], c["dt"], " -> %s" % c["pref"] if c["pref"] else "", c["srcs"][0], c["shapes"][0],
            spec_text(c["specs"][0]), c["srcs"][1], c["shapes"][1], spec_text(c["specs"][1]), c["arr"],
            dn_text(c["dn"]), m, c["extra"], c["post"], ", big" if c["big"] else "",
            ", in a fori_loop" if c["loop"] else "", ", used after" if c["after"] else "")


def sharing(c, k):
    """How split.c share splits operand k of a dot case (as this test expects it
    to): "pitched", "views", or None (copied, or not split)."""
    if c["srcs"][k] != "param" or not spec_axes(c["specs"][k]):
        return None
    shape, block = c["shapes"][k], c["blocks"][k]
    d0 = 0
    while d0 < len(block) - 1 and block[d0] == 1:
        d0 += 1
    if all(block[d] == shape[d] for d in range(d0 + 1, len(block))):
        return "views"
    used_elsewhere = c["extra"] in ("call", "closure") or (c["extra"] in ("add", "ret", "print") and (
        k == c["victim"] or c["arr"] == "self"))
    return "pitched" if len(block) == 2 and not used_elsewhere else None


def in_gemm(c, k):
    """Whether dot_general reads pitched operand k in place."""
    dn = c["dn"]
    return c["dt"] in ("f32", "f64") and c["pref"] in (None, c["dt"]) and len(dn[k]) == 1 and not dn[k + 2]


def check(tmp, c, expect, text, out, bad):
    what = describe(c)
    for name, want, dt in expect:
        try:
            got, kind = load_saved(os.path.join(tmp, name))
        except (OSError, ValueError) as e:
            bad.append("%s: %s: %s" % (what, name, e))
            continue
        if (kind == "bf16") != (dt == "bf16") or got.dtype != want.dtype or got.shape != want.shape:
            bad.append("%s: %s is %s%s, want %s%s" % (what, name, kind or got.dtype, got.shape,
                                                     "bf16" if dt == "bf16" else want.dtype, want.shape))
        elif got.tobytes() != want.tobytes():
            k = int(np.argmax(got.reshape(-1) != want.reshape(-1)))
            bad.append("%s: %s differs (%d of %d elements; first at flat %d: %r, want %r)" % (
                what, name, int(np.sum(got.reshape(-1) != want.reshape(-1))), want.size, k,
                got.reshape(-1)[k], want.reshape(-1)[k]))
    if text is not None:
        at = out.find("case %d\n" % c["i"])
        if at < 0 or not out.startswith(text, at):
            bad.append("%s: printed\n%s\nwant\n%s" % (what, out[at:at + len(text)] if at >= 0 else "(nothing)", text))


def run_alone(shmapi, tmp, lines):
    """Run one case's program: (stdout, None) or (None, what went wrong)."""
    import subprocess
    prog = os.path.join(tmp, "prog.shm")
    with open(prog, "w") as f:
        f.write("\n".join(lines) + "\n")
    proc = subprocess.run([shmapi, prog], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    if proc.returncode:
        return None, "exit status %d: %s" % (proc.returncode, proc.stderr[:1500])
    return proc.stdout, None


def main():
    shmapi = shmapi_under_test()
    rng = np.random.default_rng(SEED)
    cases = [make_dot(rng, i) if rng.random() < 0.75 else make_ew(rng, i) for i in range(CASES)]
    bad = []
    shown = False
    stats = {"pitched": 0, "in place": 0, "views": 0, "big": 0, "print": 0}

    def program(i):
        c = cases[i]
        return (dot_program if c["kind"] == "dot" else ew_program)(np.random.default_rng([SEED, i]), c, tmp)

    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, CASES, BATCH):
            chunk = range(start, min(CASES, start + BATCH))
            lines, exp = [], {}
            for i in chunk:
                ls, expect, text = program(i)
                lines += ls
                exp[i] = (expect, text)
            out = run_lines(shmapi, tmp, lines)
            if out is not None:
                for i in chunk:
                    check(tmp, cases[i], exp[i][0], exp[i][1], out, bad)
            else:                          # each case alone, to tell which fail
                for i in chunk:
                    ls, expect, text = program(i)
                    out, err = run_alone(shmapi, tmp, ls)
                    if out is None:
                        bad.append("%s: shmapi failed, %s" % (describe(cases[i]), err))
                        if not shown:
                            print("the program of %s:\n%s\n" % (describe(cases[i]), "\n".join(ls)))
                            shown = True
                    else:
                        check(tmp, cases[i], expect, text, out, bad)
            for f in os.listdir(tmp):
                if f.endswith(".npy"):
                    os.unlink(os.path.join(tmp, f))
    for c in cases:
        stats["big"] += c["big"]
        if c["kind"] == "ew":
            stats["views"] += 1
            continue
        stats["print"] += c["extra"] == "print"
        for k in (0, 1):
            how = sharing(c, k)
            if how == "pitched":
                stats["pitched"] += 1
                stats["in place"] += in_gemm(c, k)
    for m in bad[:8]:
        print(m)
    failed = len({m.split(" ", 2)[1] for m in bad})
    print("%d random shard_maps (%d operands split into pitched views, %d of them read in place by gemm; %d "
          "elementwise cases; %d with an operand of 1 MiB or more; %d printing): %d problems in %d cases" % (
              CASES, stats["pitched"], stats["in place"], stats["views"], stats["big"], stats["print"], len(bad),
              failed))
    if stats["pitched"] < CASES // 10 or stats["in place"] < CASES // 20:
        print("too few pitched views: the generator no longer exercises them")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
