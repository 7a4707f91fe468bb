#!/usr/bin/python3
# timeout: 120
"""The gradients of examples/cnn_train.shm against NumPy.

The example's program runs with `save` statements appended: its images,
labels and initial weights, and the loss and the four gradients it
computed on 4 devices (value_and_grad under shard_map, the weights'
gradients summed by psum).  A NumPy model of the same network, in f64
(a 3x3 convolution with SAME padding written as a sum of shifted
products, bias, relu, 2x2 max pooling, the dense head, the mean softmax
cross-entropy), gives the loss and, by central finite differences
(h = 1e-5), the gradient of every element of the convolution kernel and
bias and of the dense bias; the dense kernel's gradient is checked
against NumPy's backward pass through the head (exact, given the pooled
activations).  shmapi computes in f32: each gradient must agree within
2e-4 + 1e-3 of its size, the loss within 1e-5 relative.
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np  # noqa: E402

SHMAPI = os.environ.get("SHMAPI", "build/shmapi")
EXAMPLE = "examples/cnn_train.shm"
SAVED = ["images", "onehot", "w_conv", "b_conv", "w_dense", "b_dense", "l0", "g_wc", "g_bc", "g_wd", "g_bd"]


def forward(x, y, wc, bc, wd, bd, want_pool=False):
    """The mean cross-entropy of the network (f64)."""
    n, hh, ww, _ = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    c = np.zeros((n, hh, ww, wc.shape[3]))
    for i in range(3):
        for j in range(3):
            c += np.einsum("nhwc,co->nhwo", xp[:, i:i + hh, j:j + ww, :], wc[i, j])
    a = np.maximum(c + bc, 0)
    p = a.reshape(n, hh // 2, 2, ww // 2, 2, -1).max(axis=(2, 4))
    z = np.einsum("nhwc,hwck->nk", p, wd) + bd
    m = z.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(axis=1, keepdims=True)))[:, 0]
    loss = np.mean(lse - (y * z).sum(axis=1))
    if want_pool:
        return loss, p, z
    return loss


def finite_diff(f, w, h=1e-5):
    g = np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        wp, wm = w.copy(), w.copy()
        wp[idx] += h
        wm[idx] -= h
        g[idx] = (f(wp) - f(wm)) / (2 * h)
    return g


def close(name, got, want):
    err = np.abs(got - want)
    tol = 2e-4 + 1e-3 * np.abs(want)
    if np.all(err <= tol):
        return True
    print(f"{name}: shmapi\n{got!r}\nNumPy\n{want!r}\nworst |diff| {err.max():.3g}")
    return False


def main():
    with tempfile.TemporaryDirectory() as d:
        text = open(EXAMPLE).read()
        text += "".join(f'save "{d}/{k}.npy" {k}\n' for k in SAVED)
        prog = os.path.join(d, "cnn.shm")
        with open(prog, "w") as f:
            f.write(text)
        p = subprocess.run([SHMAPI, prog], capture_output=True, text=True, timeout=100)
        if p.returncode != 0:
            print("shmapi failed:\n" + p.stderr)
            return 1
        v = {k: np.load(f"{d}/{k}.npy") for k in SAVED}
    x, y = v["images"].astype(np.float64), v["onehot"].astype(np.float64)
    wc, bc, wd, bd = (v[k].astype(np.float64) for k in ["w_conv", "b_conv", "w_dense", "b_dense"])
    loss, pool, z = forward(x, y, wc, bc, wd, bd, want_pool=True)
    ok = abs(float(v["l0"]) - loss) <= 1e-5 * abs(loss)
    if not ok:
        print(f"loss: shmapi {float(v['l0'])!r}, NumPy {loss!r}")
    ok &= close("conv kernel gradient", v["g_wc"], finite_diff(lambda w: forward(x, y, w, bc, wd, bd), wc))
    ok &= close("conv bias gradient", v["g_bc"], finite_diff(lambda b: forward(x, y, wc, b, wd, bd), bc))
    ok &= close("dense bias gradient", v["g_bd"], finite_diff(lambda b: forward(x, y, wc, bc, wd, b), bd))
    s = np.exp(z - z.max(axis=1, keepdims=True))
    dz = (s / s.sum(axis=1, keepdims=True) - y) / len(z)
    ok &= close("dense kernel gradient", v["g_wd"], np.einsum("nhwc,nk->hwck", pool, dz))
    print(f"loss {loss:.7f}; the gradients of {wc.size + bc.size + wd.size + bd.size} weights "
          f"{'agree with' if ok else 'differ from'} NumPy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
