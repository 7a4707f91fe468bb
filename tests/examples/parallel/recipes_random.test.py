#!/usr/bin/env python3
# timeout: 300
"""Random variants of cookbook recipes 3, 4 and 5 against one device and NumPy.

examples/parallel/kernels.shm's functions take their mesh axis and their
sizes as static parameters; this test draws sizes and calls them in
generated programs, forward and backward (value_and_grad of a mean
squared error against a random target), on a mesh and on one device:

- collective matmuls (recipe 5): ring sizes p 1..8, token blocks, widths;
  the all-gather and reduce-scatter matmuls one way and both ways
  (`ag_matmul`, `rs_matmul`, `*_bidi`) in Megatron's sequence-parallel MLP;
- attention (recipe 3): ring attention on rings of 1..8 devices and
  blocks of 1..4 positions, Ulysses on 1..4 devices with 1..2 heads each,
  and both on R x U meshes (`usp_attention`), sequences of 2 or more
  positions (with one, the gradients of wq and wk are exactly zero and
  each side's is its round-off);
- mixture of experts (recipe 4): 1..4 devices with 1..3 experts each,
  top-k for k 1..3, 1..8 tokens per device, capacity factors 0.25..2 (so
  from most assignments dropped to none), the capacity form
  (`moe_capacity`, all_to_all) and the dropless one (`moe_dropless`,
  ragged_all_to_all).

Every variant's loss and gradients (of the input and every weight) must
equal the one-device model's within rtol 1e-4, atol 1e-5 (allclose), and
so must the MoE outputs.  The recipes' own inputs agree within rtol 1e-5,
atol 1e-6; random draws include peaked softmaxes (one feature, large
scores) where the float32 one-device model itself is 5e-5 (relative) from
the float64 gradient while the sharded one is closer to it.  The one-device models
themselves are checked against NumPy (float64) written from the papers:
causal softmax attention's loss, and the mixture's output with the
capacity applied per device in token order, within rtol 1e-4.

Variants are batched into a few shmapi runs.

    SHMAPI=build/shmapi python3 tests/examples/parallel/recipes_random.test.py
        [--seed N] [--count N] [--kernels FILE] [--keep DIR]

--count is the number of variants of each kind (default 40: 120 per run);
--kernels runs them on another copy of kernels.shm (a mutation must fail).
"""

import argparse
import math
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from _numpy import np, shmapi_under_test  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOL = "rtol=1e-4, atol=1e-5"


def keys(v, n):
    """Lines binding k{v}_0 .. k{v}_{n-1}: keys split from a random seed."""
    out = ["ks%d = random_split[num=%d] seed%d" % (v, n, v)]
    for i in range(n):
        out.append("k%d_%d0 = slice[start_indices=(%d, 0), limit_indices=(%d, 2)] ks%d" % (v, i, i, i + 1, v))
        out.append("k%d_%d = reshape[new_sizes=(2,)] k%d_%d0" % (v, i, v, i))
    return out


def normal(v, i, name, shape, scale):
    return ["%s0 = random_normal[shape=(%s,)] k%d_%d" % (name, ", ".join(map(str, shape)), v, i),
            "%s = mul %s0 %r" % (name, name, scale)]


def checks(v, label, names, ref):
    """Lines printing `v{v} {label}: True ...`, one allclose per pair."""
    out, bs = [], []
    for j, (a, b) in enumerate(zip(names, ref)):
        out.append("c%d_%s_%d = allclose[%s] %s %s" % (v, label, j, TOL, a, b))
        bs.append("c%d_%s_%d" % (v, label, j))
    out.append('print "v%d %s:", %s' % (v, label, ", ".join(bs)))
    return out


# ---- recipe 5: collective matmuls ---------------------------------------------------------

def cmatmul(v, rng):
    p = rng.choice([1, 2, 2, 3, 4, 4, 5, 8])
    half = rng.randint(1, 3)
    blk = 2 * half
    T, K, fl, N = p * blk, rng.randint(1, 6), rng.randint(1, 4), rng.randint(1, 6)
    F = p * fl
    desc = "cmatmul p=%d blk=%d K=%d F=%d N=%d" % (p, blk, K, F, N)
    L = ["seed%d = random_key[seed=%d]" % (v, rng.randrange(1 << 30)), "mesh mc%d = {i: %d}" % (v, p)]
    L += keys(v, 4)
    L += normal(v, 0, "x%d" % v, (T, K), 1.0) + normal(v, 1, "t%d" % v, (T, N), 1.0)
    L += normal(v, 2, "wa%d" % v, (K, F), 1.0 / math.sqrt(K)) + normal(v, 3, "wb%d" % v, (F, N), 1.0 / math.sqrt(F))
    for form, ag, rs in (("uni", "ag_matmul[axis=i, p=%d, blk=%d, rows=%d, n=%d]" % (p, blk, T, fl),
                          "rs_matmul[axis=i, p=%d, blk=%d, rows=%d, k=%d, n=%d]" % (p, blk, T, fl, N)),
                         ("bidi", "ag_matmul_bidi[axis=i, p=%d, blk=%d, half=%d, rows=%d, k=%d, n=%d]" % (p, blk, half, T, K, fl),
                          "rs_matmul_bidi[axis=i, p=%d, blk=%d, half=%d, rows=%d, k=%d, n=%d]" % (p, blk, half, T, fl, N))):
        L += ["def loss%d_%s(x, t, w1, w2) {" % (v, form),
              "  h0 = %s x w1" % ag, "  h = gelu h0", "  y = %s h w2" % rs,
              "  l = mse y t", "  m = pmean[axes=i] l", "  return m", "}",
              "def vg%d_%s = value_and_grad[argnums=(0, 2, 3)] loss%d_%s" % (v, form, v, form),
              "@shard_map[mesh=mc%d, in_specs=(P(i, None), P(i, None), P(None, i), P(i, None)), "
              "out_specs=(P(), P(i, None), P(None, i), P(i, None))]" % v,
              "def st%d_%s(x, t, w1, w2) {" % (v, form),
              "  l, a, b, c = vg%d_%s x t w1 w2" % (v, form), "  return l, a, b, c", "}"]
    L += ["def loss%d_one(x, t, w1, w2) {" % v,
          "  h0 = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w1", "  h = gelu h0",
          "  y = dot_general[dimension_numbers=(([1], [0]), ([], []))] h w2",
          "  l = mse y t", "  return l", "}",
          "def vg%d_one = value_and_grad[argnums=(0, 2, 3)] loss%d_one" % (v, v)]
    args = "x%d t%d wa%d wb%d" % (v, v, v, v)
    ref = ["r%d_%d" % (v, j) for j in range(4)]
    L.append("%s = vg%d_one %s" % (", ".join(ref), v, args))
    for form in ("uni", "bidi"):
        got = ["g%d_%s_%d" % (v, form, j) for j in range(4)]
        L.append("%s = st%d_%s %s" % (", ".join(got), v, form, args))
        L += checks(v, form, got, ref)
    return desc, L, None


# ---- recipe 3: attention ------------------------------------------------------------------

def attention(v, rng, tmp):
    while True:                # a sequence of one position has zero gradients
        got = attention_draw(v, rng, tmp)   # for wq and wk, made of round-off
        if got:
            return got


def attention_draw(v, rng, tmp):
    mode = rng.choice(["ring", "ulysses", "usp"])
    dh, D = rng.randint(1, 4), rng.randint(1, 5)
    if mode == "ring":
        p, tq, h = rng.choice([1, 2, 3, 4, 5, 8]), rng.randint(1, 4), rng.randint(1, 3)
        T, mesh, spec, axes = p * tq, "{sp: %d}" % p, "P(sp, None)", "sp"
        call = "ring_attention[axis=sp, p=%d, tq=%d, h=%d, dh=%d]" % (p, tq, h, dh)
        desc = "ring p=%d tq=%d h=%d dh=%d D=%d" % (p, tq, h, dh, D)
    elif mode == "ulysses":
        p, hl, c = rng.randint(1, 4), rng.randint(1, 2), rng.randint(1, 4)
        h, T = p * hl, p * c
        mesh, spec, axes = "{sp: %d}" % p, "P(sp, None)", "sp"
        call = "ulysses_attention[axis=sp, t=%d, hl=%d]" % (T, hl)
        desc = "ulysses p=%d T=%d h=%d dh=%d D=%d" % (p, T, h, dh, D)
    else:
        R, U, hl, c = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 2), rng.randint(1, 3)
        h, T = U * hl, R * U * c
        mesh, spec, axes = "{r: %d, u: %d}" % (R, U), "P((r, u), None)", "(r, u)"
        call = "usp_attention[uaxis=u, raxis=r, rp=%d, tr=%d, hl=%d, dh=%d]" % (R, U * c, hl, dh)
        desc = "usp R=%d U=%d T=%d h=%d dh=%d D=%d" % (R, U, T, h, dh, D)
    if T == 1:
        return None
    scale = 1.0 / math.sqrt(dh)
    n = ["x", "t", "wq", "wk", "wv", "wo"]
    L = ["seed%d = random_key[seed=%d]" % (v, rng.randrange(1 << 30)), "mesh ma%d = %s" % (v, mesh)]
    L += keys(v, 6)
    L += normal(v, 0, "x%d" % v, (T, D), 1.0) + normal(v, 1, "t%d" % v, (T, D), 1.0)
    for i, w in enumerate(["wq", "wk", "wv"]):
        L += normal(v, 2 + i, "%s%d" % (w, v), (D, h, dh), 1.0 / math.sqrt(D))
    L += normal(v, 5, "wo%d" % v, (h, dh, D), 1.0 / math.sqrt(h * dh))
    body = ["  q, k, v = qkv x wq wk wv", None, "  y = out_proj o wo", "  l = mse y t"]
    L += ["def loss%d(x, t, wq, wk, wv, wo) {" % v, body[0], "  o = %s q k v %r" % (call, scale)] + body[2:] + \
         ["  m = pmean[axes=%s] l" % axes, "  return m", "}",
         "def loss%d_one(x, t, wq, wk, wv, wo) {" % v, body[0],
         "  o = causal_attention[t=%d, h=%d] q k v %r" % (T, h, scale)] + body[2:] + ["  return l", "}",
         "def vg%d = value_and_grad[argnums=(0, 2, 3, 4, 5)] loss%d" % (v, v),
         "def vg%d_one = value_and_grad[argnums=(0, 2, 3, 4, 5)] loss%d_one" % (v, v),
         "@shard_map[mesh=ma%d, in_specs=(%s, %s, P(), P(), P(), P()), out_specs=(P(), %s, P(), P(), P(), P())]"
         % (v, spec, spec, spec),
         "def st%d(x, t, wq, wk, wv, wo) {" % v,
         "  l, a, b, c, d, e = vg%d x t wq wk wv wo" % v, "  return l, a, b, c, d, e", "}"]
    args = " ".join("%s%d" % (w, v) for w in n)
    ref = ["r%d_%d" % (v, j) for j in range(6)]
    got = ["g%d_%d" % (v, j) for j in range(6)]
    L.append("%s = vg%d_one %s" % (", ".join(ref), v, args))
    L.append("%s = st%d %s" % (", ".join(got), v, args))
    L += checks(v, mode, got, ref)
    for w in n:
        L.append('save "%s/a%d_%s.npy" %s%d' % (tmp, v, w, w, v))
    L.append('print "v%d loss:", r%d_0' % (v, v))

    def model(loss):
        x, t, wq, wk, wv, wo = (np.load("%s/a%d_%s.npy" % (tmp, v, w)).astype(np.float64) for w in n)
        q, k, vv = (np.einsum("td,dhe->the", x, w) for w in (wq, wk, wv))
        s = np.einsum("the,she->hts", q, k) * scale
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        pr = e / e.sum(-1, keepdims=True)
        y = np.einsum("hts,she,hed->td", pr, vv, wo)
        want = ((y - t) ** 2).mean()
        return np.isclose(loss, want, rtol=1e-4, atol=1e-6), "loss %r, NumPy %r" % (loss, want)
    return desc, L, model


# ---- recipe 4: mixture of experts ---------------------------------------------------------

def moe(v, rng, tmp):
    P, El = rng.randint(1, 4), rng.randint(1, 3)
    E = P * El
    k = rng.randint(1, min(3, E))
    n, D, F = rng.randint(1, 8), rng.randint(1, 5), rng.randint(1, 6)
    nk, T = n * k, P * n
    cf = rng.choice([0.25, 0.5, 1.0, 1.25, 2.0])
    C = max(1, math.ceil(cf * nk / E))
    desc = "moe P=%d E=%d k=%d n=%d D=%d F=%d cf=%g C=%d" % (P, E, k, n, D, F, cf, C)
    L = ["seed%d = random_key[seed=%d]" % (v, rng.randrange(1 << 30)), "mesh mm%d = {ep: %d}" % (v, P)]
    L += keys(v, 5)
    L += normal(v, 0, "x%d" % v, (T, D), 1.0) + normal(v, 1, "t%d" % v, (T, D), 1.0)
    L += normal(v, 2, "wr%d" % v, (D, E), 1.0) + normal(v, 3, "wu%d" % v, (E, D, F), 1.0 / math.sqrt(D))
    L += normal(v, 4, "wd%d" % v, (E, F, D), 1.0 / math.sqrt(F))
    cap = "moe_capacity[axis=ep, n=%d, k=%d, nk=%d, E=%d, El=%d, P=%d, C=%d, PC=%d, D=%d]" % (n, k, nk, E, El, P, C, P * C, D)
    drop = "moe_dropless[axis=ep, n=%d, k=%d, nk=%d, El=%d, P=%d, buf=%d, D=%d, F=%d]" % (n, k, nk, El, P, P * nk, D, F)
    dense = "moe_dense[groups=%d, n=%d, k=%d, nk=%d, E=%d, C=%%d, T=%d, D=%d]" % (P, n, k, nk, E, T, D)
    spec_in = "in_specs=(P(ep, None), P(ep, None), P(), P(ep), P(ep))"
    spec_out = "out_specs=(P(), P(ep, None), P(), P(ep), P(ep))"
    for form, y_of, cc in (("capacity", "  y, dr = %s x wr wu wd" % cap, C), ("dropless", "  y = %s x wr wu wd" % drop, nk)):
        L += ["def loss%d_%s(x, t, wr, wu, wd) {" % (v, form), y_of, "  l = mse y t",
              "  m = pmean[axes=ep] l", "  return m", "}",
              "def loss%d_%s_one(x, t, wr, wu, wd) {" % (v, form), "  y = %s x wr wu wd" % (dense % cc),
              "  l = mse y t", "  return l", "}",
              "def vg%d_%s = value_and_grad[argnums=(0, 2, 3, 4)] loss%d_%s" % (v, form, v, form),
              "def vg%d_%s_one = value_and_grad[argnums=(0, 2, 3, 4)] loss%d_%s_one" % (v, form, v, form),
              "@shard_map[mesh=mm%d, %s, %s]" % (v, spec_in, spec_out),
              "def st%d_%s(x, t, wr, wu, wd) {" % (v, form),
              "  l, a, b, c, d = vg%d_%s x t wr wu wd" % (v, form), "  return l, a, b, c, d", "}"]
    L += ["@shard_map[mesh=mm%d, in_specs=(P(ep, None), P(), P(ep), P(ep)), out_specs=(P(ep, None), P(ep, None))]" % v,
          "def fw%d(x, wr, wu, wd) {" % v, "  y, dr = %s x wr wu wd" % cap, "  z = %s x wr wu wd" % drop,
          "  return y, z", "}"]
    args = "x%d t%d wr%d wu%d wd%d" % (v, v, v, v, v)
    fargs = "x%d wr%d wu%d wd%d" % (v, v, v, v)
    L += ["y%d, z%d = fw%d %s" % (v, v, v, fargs),
          "y%d_one = %s %s" % (v, dense % C, fargs), "z%d_one = %s %s" % (v, dense % nk, fargs)]
    L += checks(v, "outputs", ["y%d" % v, "z%d" % v], ["y%d_one" % v, "z%d_one" % v])
    for form in ("capacity", "dropless"):
        ref = ["r%d_%s_%d" % (v, form, j) for j in range(5)]
        got = ["g%d_%s_%d" % (v, form, j) for j in range(5)]
        L.append("%s = vg%d_%s_one %s" % (", ".join(ref), v, form, args))
        L.append("%s = st%d_%s %s" % (", ".join(got), v, form, args))
        L += checks(v, form, got, ref)
    names = ["x", "wr", "wu", "wd"]
    for w in names:
        L.append('save "%s/m%d_%s.npy" %s%d' % (tmp, v, w, w, v))
    L.append('save "%s/m%d_y.npy" y%d_one' % (tmp, v, v))
    L.append('save "%s/m%d_z.npy" z%d_one' % (tmp, v, v))

    def model(_):
        x, wr, wu, wd = (np.load("%s/m%d_%s.npy" % (tmp, v, w)).astype(np.float64) for w in names)
        lg = x @ wr
        pr = np.exp(lg - lg.max(1, keepdims=True))
        pr /= pr.sum(1, keepdims=True)
        top = np.argsort(-pr, axis=1, kind="stable")[:, :k]
        out = {}
        for cap_, name in ((C, "y"), (nk, "z")):
            y = np.zeros((T, D))
            for dv in range(P):
                used = np.zeros(E, int)
                for tk in range(dv * n, dv * n + n):         # token order, then choice order
                    for e in top[tk]:
                        used[e] += 1
                        if used[e] <= cap_:
                            hdn = np.maximum(x[tk] @ wu[e], 0)
                            y[tk] += pr[tk, e] * (hdn @ wd[e])
            out[name] = y
        ok = all(np.allclose(np.load("%s/m%d_%s.npy" % (tmp, v, nm)), out[nm], rtol=1e-4, atol=1e-5)
                 for nm in ("y", "z"))
        return ok, "one-device outputs against NumPy"
    return desc, L, model


def run_batch(shmapi, tmp, kernels, variants, kind):
    prog = os.path.join(tmp, "batch_%s.shm" % kind)
    lines = ['import "%s"' % kernels]
    for _, L, _ in variants:
        lines += L
    with open(prog, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([shmapi, prog], capture_output=True, text=True, timeout=280,
                       env=dict(os.environ, LC_ALL="C", OPENBLAS_NUM_THREADS="1"))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--kernels", default=os.path.join(ROOT, "examples", "parallel", "kernels.shm"))
    ap.add_argument("--keep")
    a = ap.parse_args()
    shmapi = shmapi_under_test()
    rng = random.Random(a.seed)
    tmp = a.keep or tempfile.mkdtemp(prefix="recipes_random.")
    os.makedirs(tmp, exist_ok=True)
    kernels = os.path.abspath(a.kernels)
    fails, total = 0, 0
    for kind in ("cmatmul", "attention", "moe"):
        variants = []
        for v in range(a.count):
            vid = len(variants) + {"cmatmul": 0, "attention": 10000, "moe": 20000}[kind]
            if kind == "cmatmul":
                variants.append(cmatmul(vid, rng))
            elif kind == "attention":
                variants.append(attention(vid, rng, tmp))
            else:
                variants.append(moe(vid, rng, tmp))
        p = run_batch(shmapi, tmp, kernels, variants, kind)
        if p.returncode != 0:
            print("FAIL: the %s batch did not run:\n%s" % (kind, p.stderr[:3000]))
            fails += 1
            continue
        lines = p.stdout.splitlines()
        for j, (desc, L, model) in enumerate(variants):
            vid = j + {"cmatmul": 0, "attention": 10000, "moe": 20000}[kind]
            mine = [ln for ln in lines if ln.startswith("v%d " % vid)]
            total += 1
            bad = [ln for ln in mine if ":" in ln and "loss:" not in ln and
                   any(w != "True" for w in ln.split(":", 1)[1].split())]
            if not mine or bad:
                fails += 1
                print("FAIL: %s: %s" % (desc, bad or "no output"))
                continue
            if model:
                loss = [float(ln.split()[-1]) for ln in mine if "loss:" in ln]
                ok, what = model(loss[0] if loss else None)
                if not ok:
                    fails += 1
                    print("FAIL: %s: the one-device model disagrees with NumPy: %s" % (desc, what))
    print("%d variants, %d failed" % (total, fails))
    sys.exit(1 if fails else 0)


main()
