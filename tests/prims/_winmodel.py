"""Direct NumPy models of JAX's windowed reductions and conv_general_dilated,
and random cases of them, for window_conv.test.py and
tests/autodiff/window_conv_ad.test.py.

The models follow XLA's definitions with nothing clever: the operand is
dilated (holes between elements) and padded (negative values crop) into a
bigger array whose fill is the reduction's identity, a mask says which of
its elements are the operand's, and every output element is one loop over
its window (or one tensordot over the receptive field, for conv).
"""
import itertools

from _numpy import np


def fmt_ints(v):
    return "(" + ", ".join("%d" % x for x in v) + ")" if len(v) != 1 else "(%d,)" % v[0]


def fmt_pairs(p):
    if not p:
        return "()"
    return "(" + ", ".join("(%d, %d)" % (lo, hi) for lo, hi in p) + ("," if len(p) == 1 else "") + ")"


def dilate_pad(x, dil, pad, fill):
    """x dilated by dil (dil - 1 holes) and padded by pad's (lo, hi)
    (negative crops), with fill, as XLA's Pad: along each dimension,
    position j of the result is position j - lo of the dilated operand;
    and the index of each element's source in x's flattened order (-1:
    fill)."""
    src = np.arange(x.size).reshape(x.shape)
    for d, (n, k, (lo, hi)) in enumerate(zip(x.shape, dil, pad)):
        dn = (n - 1) * k + 1 if n > 0 else 0
        q = np.arange(max(0, dn + lo + hi)) - lo
        ok = (q >= 0) & (q < dn) & (q % k == 0)
        take = np.where(ok, q // k, 0)
        moved = np.take(src, take, axis=d) if n > 0 else np.zeros(src.shape[:d] + (len(q),) + src.shape[d + 1:], np.int64)
        shape = [1] * src.ndim
        shape[d] = len(q)
        src = np.where(ok.reshape(shape), moved, -1)
    flat = x.reshape(-1)
    big = np.where(src >= 0, flat[np.maximum(src, 0)] if x.size else fill, fill).astype(x.dtype)
    return big, src


def window_out_shape(shape, wdim, strides, pad, bdil, wdil):
    out = []
    for n, w, s, (lo, hi), b, wd in zip(shape, wdim, strides, pad, bdil, wdil):
        p = ((n - 1) * b + 1 if n > 0 else 0) + lo + hi
        ww = (w - 1) * wd + 1
        out.append(max(0, (p - ww) // s + 1))
    return out


def windows(out_shape, wdim, strides, wdil):
    """For each output position, the tuple of slices of its window."""
    for y in itertools.product(*[range(n) for n in out_shape]):
        yield y, tuple(slice(yi * s, yi * s + (w - 1) * wd + 1, wd) for yi, s, w, wd in zip(y, strides, wdim, wdil))


def identity(op, dtype):
    dt = np.dtype(dtype)
    if op == "sum":
        return dt.type(0)
    hi = op == "min"
    if dt == np.bool_:
        return np.bool_(hi)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return dt.type(info.max if hi else info.min)
    return dt.type(np.inf if hi else -np.inf)


def reduce_window(op, x, wdim, strides, pad, bdil, wdil):
    """reduce_window_sum/max/min: floats summed in float64 and rounded once,
    integers wrapping; max and min propagate NaN."""
    out_shape = window_out_shape(x.shape, wdim, strides, pad, bdil, wdil)
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.complex128) if x.dtype.kind == "c" else x
    big, bidx = dilate_pad(wide, bdil, pad, identity(op, wide.dtype) if op != "sum" else 0)
    out = np.empty(out_shape, dtype=wide.dtype)
    for y, sl in windows(out_shape, wdim, strides, wdil):
        w = big[sl]
        real = w[bidx[sl] >= 0]
        if op == "sum":
            out[y] = real.sum(dtype=wide.dtype) if real.size else 0
        elif real.size == 0:
            out[y] = identity(op, x.dtype)
        elif wide.dtype.kind == "f" and np.isnan(real).any():
            out[y] = np.nan
        else:
            out[y] = real.max() if op == "max" else real.min()
    return out.astype(x.dtype)


def select_index(xflat, idxs, le):
    """The index a window of x's elements (flat indices idxs, in window
    order) selects: the first, replaced by each later e where not
    select(s, e); -1 for none."""
    if len(idxs) == 0:
        return -1
    s = idxs[0]
    for e in idxs[1:]:
        keep = xflat[s] <= xflat[e] if le else xflat[s] >= xflat[e]
        if not keep:
            s = e
    return s


def select_and_gather_add(t, x, le, wdim, strides, pad, bdil, wdil):
    out_shape = window_out_shape(x.shape, wdim, strides, pad, bdil, wdil)
    _, bidx = dilate_pad(x, bdil, pad, 0)
    tf, xf = t.reshape(-1), x.reshape(-1)
    out = np.zeros(out_shape, dtype=t.dtype)
    for y, sl in windows(out_shape, wdim, strides, wdil):
        idxs = [int(i) for i in bidx[sl].reshape(-1) if i >= 0]
        s = select_index(xf, idxs, le)
        if s >= 0:
            out[y] = tf[s]
    return out


def select_and_scatter_add(src, x, le, wdim, strides, pad):
    ones = [1] * x.ndim
    out_shape = window_out_shape(x.shape, wdim, strides, pad, ones, ones)
    _, bidx = dilate_pad(x, ones, pad, 0)
    xf = x.reshape(-1)
    acc = np.zeros(x.size, dtype=np.float64 if src.dtype.kind == "f" else src.dtype)
    for y, sl in windows(out_shape, wdim, strides, ones):
        idxs = [int(i) for i in bidx[sl].reshape(-1) if i >= 0]
        s = select_index(xf, idxs, le)
        if s >= 0:
            acc[s] += src[y]
    return acc.reshape(x.shape).astype(src.dtype)


def conv(lhs, rhs, strides, pad, ld, rd, specs, G, B, out_dtype=None):
    """conv_general_dilated: specs (lhs_spec, rhs_spec, out_spec), feature
    groups G, batch groups B; floats in float64, integers in int64
    (wrapping), the result cast to out_dtype (default lhs's)."""
    ls, rs, os_ = specs
    out_dtype = np.dtype(out_dtype or lhs.dtype)
    wide = np.complex128 if out_dtype.kind == "c" else np.float64 if out_dtype.kind == "f" else np.int64
    L = np.transpose(lhs, ls).astype(wide)
    R = np.transpose(rhs, rs).astype(wide)
    ns = L.ndim - 2
    N, C = L.shape[:2]
    O, Ci = R.shape[:2]
    Ld, _ = dilate_pad(L, [1, 1] + list(ld), [(0, 0), (0, 0)] + list(pad), 0)
    Rd, _ = dilate_pad(R, [1, 1] + list(rd), [(0, 0)] * (ns + 2), 0)
    K = Rd.shape[2:]
    Y = [max(0, (p - k) // s + 1) for p, k, s in zip(Ld.shape[2:], K, strides)]
    ng = max(G, B)
    Og, Cg, Nout = O // ng, C // G, N // B
    out = np.zeros([Nout, O] + Y, dtype=wide)
    for g in range(ng):
        rows = slice(g * Nout, (g + 1) * Nout) if B > 1 else slice(None)
        feats = slice(g * Cg, (g + 1) * Cg) if G > 1 else slice(None)
        Rg = Rd[g * Og:(g + 1) * Og]
        for y in itertools.product(*[range(n) for n in Y]):
            sl = tuple(slice(yi * s, yi * s + k) for yi, s, k in zip(y, strides, K))
            field = Ld[(rows, feats) + sl]
            val = np.tensordot(field, Rg, axes=(list(range(1, ns + 2)), list(range(1, ns + 2))))
            out[(slice(None), slice(g * Og, (g + 1) * Og)) + tuple(y)] = val
    return np.transpose(out, np.argsort(os_)).astype(out_dtype)


def random_specs(rng, r):
    return [list(rng.permutation(r)) for _ in range(3)]


def conv_case(rng, dtype, small=False):
    """A random convolution: its operands, parameters and the shm text of
    its parameters (sorted by name, as JAX prints them)."""
    ns = int(rng.choice([0, 1, 1, 2, 2, 2, 3])) if not small else int(rng.integers(1, 3))
    r = ns + 2
    specs = random_specs(rng, r) if rng.random() < 0.8 else [list(range(r))] * 3
    G = B = 1
    kind = rng.random()
    if kind < 0.25:
        G = int(rng.integers(2, 4))
    elif kind < 0.4:
        B = int(rng.integers(2, 4))
    ng = max(G, B)
    Cg = int(rng.integers(1, 4))
    C = Cg * G
    O = ng * int(rng.integers(1, 3))
    N = B * int(rng.integers(1, 3))
    ksz = [int(rng.integers(1, 4)) for _ in range(ns)]
    strides = [int(rng.integers(1, 4)) for _ in range(ns)]
    ld = [int(rng.choice([1, 1, 2, 3])) for _ in range(ns)]
    rd = [int(rng.choice([1, 1, 2, 3])) for _ in range(ns)]
    ssz, pad = [], []
    for i in range(ns):
        s = int(rng.integers(1, 7 if ns < 3 else 5))
        dl = (s - 1) * ld[i] + 1
        dk = (ksz[i] - 1) * rd[i] + 1
        lo, hi = int(rng.integers(-2, 4)), int(rng.integers(-2, 4))
        if dl + lo + hi < dk:                  # keep most cases non-empty
            hi = dk - dl - lo + int(rng.integers(0, 2))
        ssz.append(s)
        pad.append((lo, hi))
    lcan = [N, C] + ssz
    rcan = [O, Cg] + ksz
    lshape = [0] * r
    rshape = [0] * r
    for k in range(r):
        lshape[specs[0][k]] = lcan[k]
        rshape[specs[1][k]] = rcan[k]
    lhs = make(rng, lshape, dtype)
    rhs = make(rng, rshape, dtype)
    params = "batch_group_count=%d, dimension_numbers=ConvDimensionNumbers(lhs_spec=%s, rhs_spec=%s, out_spec=%s), " \
             "feature_group_count=%d, lhs_dilation=%s, padding=%s, precision=None, preferred_element_type=None, " \
             "rhs_dilation=%s, window_strides=%s" % (
                 B, fmt_ints(specs[0]), fmt_ints(specs[1]), fmt_ints(specs[2]), G, fmt_ints(ld), fmt_pairs(pad),
                 fmt_ints(rd), fmt_ints(strides))
    if ns == 0:
        params = params.replace("lhs_dilation=(), ", "").replace("rhs_dilation=(), ", "")
    args = dict(strides=strides, pad=pad, ld=ld, rd=rd, specs=specs, G=G, B=B)
    return lhs, rhs, params, args


def make(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -50), min(info.max, 50) + 1, size=shape).astype(dt)


def window_case(rng, dtype, dilate=True, rank=None):
    """Random window parameters over a random operand."""
    r = int(rng.integers(1, 4)) if rank is None else rank
    shape = [int(rng.integers(1, 6)) for _ in range(r)]
    wdim = [int(rng.integers(1, 4)) for _ in range(r)]
    strides = [int(rng.integers(1, 4)) for _ in range(r)]
    bdil = [int(rng.choice([1, 1, 2, 3])) if dilate else 1 for _ in range(r)]
    wdil = [int(rng.choice([1, 1, 2])) if dilate else 1 for _ in range(r)]
    pad = [(int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(r)]
    x = make(rng, shape, dtype)
    return x, dict(wdim=wdim, strides=strides, pad=pad, bdil=bdil, wdil=wdil)


def window_params(a, select=None, dilations=True):
    s = ""
    if dilations:
        s += "base_dilation=%s, " % fmt_ints(a["bdil"])
    s += "padding=%s, " % fmt_pairs(a["pad"])
    if select:
        s += "select_prim=%s, " % select
    if dilations:
        s += "window_dilation=%s, " % fmt_ints(a["wdil"])
    s += "window_dimensions=%s, window_strides=%s" % (fmt_ints(a["wdim"]), fmt_ints(a["strides"]))
    return s
