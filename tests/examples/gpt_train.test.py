#!/usr/bin/python3
# timeout: 120
"""The GPT of examples/gpt.shm against a NumPy model of it.

- the loss of the initial weights, on the 2 x 2 mesh, is the NumPy
  model's (float64) within 1e-5;
- the gradients value_and_grad gives on the 2 x 2 mesh (gather's transpose
  a scatter-add, the psums over model transposed to pbroadcasts, each
  weight's gradient summed over data) agree with central finite
  differences of the NumPy loss along random directions, one weight at a
  time and all together, within 1e-3 of the directional derivative's
  scale;
- one AdamW step on the mesh gives what NumPy's AdamW gives from those
  gradients, and equals the step on one device (loss, weights, moments)
  within rtol 1e-5, atol 1e-6;
- examples/gpt_train.shm's 30 losses go down at every step, to below half
  the first;
- the jaxpr of examples/gpt_train_jaxpr.shm is what
  tests/examples/_gen_gpt_jaxpr.py writes, and what `show` prints of it,
  pasted again, takes the same step bit for bit.
"""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, shmapi_under_test  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = ["wte", "wpe", "wq", "wk", "wv", "wo", "w1", "w2"]
W_SPECS = "P(), P(), P(None, model, None), P(None, model, None), P(None, model, None), " \
          "P(model, None, None), P(None, model), P(model, None)"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(shmapi, args, env=None):
    p = subprocess.run([shmapi] + args, cwd=ROOT, capture_output=True, text=True,
                       env=env, timeout=120)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        sys.exit("shmapi failed: %s" % " ".join(args))
    return p.stdout


# ---- the NumPy model (float64), the whole batch on one device ---------------------------

def layer_norm(x):
    xc = x - x.mean(-1, keepdims=True)
    return xc / np.sqrt((xc ** 2).mean(-1, keepdims=True) + 1e-5)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def loss(p, tok, tgt):
    wte, wpe, wq, wk, wv, wo, w1, w2 = p
    x = wte[tok] + wpe
    h = layer_norm(x)
    q, k, v = (np.einsum("btd,dhk->bthk", h, w) for w in (wq, wk, wv))
    s = np.einsum("bthk,bshk->bhts", q, k) / 2.0
    s = np.where(np.tril(np.ones((8, 8), bool)), s, -1e9)
    e = np.exp(s - s.max(-1, keepdims=True))
    pr = e / e.sum(-1, keepdims=True)
    o = np.einsum("bhts,bshk->bhtk", pr, v)
    x = x + np.einsum("bhtk,hkd->btd", o, wo)
    x = x + gelu(layer_norm(x) @ w1) @ w2
    logits = layer_norm(x) @ wte.T
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, tgt[..., None], -1).mean()


def main():
    shmapi = shmapi_under_test()
    tmp = tempfile.mkdtemp()
    n = len(NAMES)
    gs = ", ".join("g%d" % i for i in range(n))
    ws = " ".join(NAMES)
    prog = [
        'import "gpt.shm"',
        "@shard_map[mesh=m, in_specs=(P(data, None), P(data, None), %s)," % W_SPECS,
        "           out_specs=(P(), %s)]" % W_SPECS,
        "def loss_grads(tok, tgt, %s) {" % ", ".join(NAMES),
        "  l, %s = grads_dm tok tgt %s" % (gs, ws),
        "  return l, %s" % gs,
        "}",
        "l, %s = loss_grads tokens targets %s" % (gs, ws),
        "z = " + " ".join(["mte mpe mq mq mq mo m1 m2"] * 2),
        "l4, %s, %s, %s = train_step tokens targets 1.0 %s mte mpe mq mq mq mo m1 m2 "
        "mte mpe mq mq mq mo m1 m2" % (", ".join("p%d" % i for i in range(n)),
                                       ", ".join("a%d" % i for i in range(n)),
                                       ", ".join("s%d" % i for i in range(n)), ws),
        "l1, %s, %s, %s = train_step_one tokens targets 1.0 %s mte mpe mq mq mq mo m1 m2 "
        "mte mpe mq mq mq mo m1 m2" % (", ".join("q%d" % i for i in range(n)),
                                       ", ".join("b%d" % i for i in range(n)),
                                       ", ".join("t%d" % i for i in range(n)), ws),
    ]
    prog = [ln for ln in prog if not ln.startswith("z = ")]
    saved = ["tokens", "targets", "l", "l4", "l1"] + NAMES
    for pre in "gpaqsbt":
        saved += ["%s%d" % (pre, i) for i in range(n)]
    for v in saved:
        prog.append('save "%s/%s.npy" %s' % (tmp, v, v))
    path = os.path.join(tmp, "prog.shm")
    with open(path, "w") as f:
        f.write("\n".join(prog) + "\n")
    env = dict(os.environ, SHMAPI_STDLIB=os.path.join(ROOT, "examples"))
    run(shmapi, [path], env)
    ld = {v: np.load(os.path.join(tmp, v + ".npy")) for v in saved}

    tok, tgt = ld["tokens"], ld["targets"]
    p0 = [ld[k].astype(np.float64) for k in NAMES]
    ref = loss(p0, tok, tgt)
    check(abs(float(ld["l"]) - ref) <= 1e-5 * abs(ref),
          "loss %r, NumPy %r" % (float(ld["l"]), ref))
    check(float(ld["l4"]) == float(ld["l"]), "train_step's loss is value_and_grad's")

    # gradients against central differences, float64, along random directions
    grads = [ld["g%d" % i].astype(np.float64) for i in range(n)]
    # another seed and more directions: GPT_SEED=7 GPT_DIRS=50 (per weight)
    rng = np.random.default_rng(int(os.environ.get("GPT_SEED", "29")))
    per = int(os.environ.get("GPT_DIRS", "3"))
    eps = 1e-4
    dirs = []
    for i in range(n):
        for _ in range(per):
            dirs.append([rng.standard_normal(p.shape) if j == i else np.zeros(p.shape)
                         for j, p in enumerate(p0)])
    for _ in range(2 * per):
        dirs.append([rng.standard_normal(p.shape) for p in p0])
    for k, d in enumerate(dirs):
        plus = loss([p + eps * e for p, e in zip(p0, d)], tok, tgt)
        minus = loss([p - eps * e for p, e in zip(p0, d)], tok, tgt)
        fd = (plus - minus) / (2 * eps)
        an = sum(float((g * e).sum()) for g, e in zip(grads, d))
        scale = np.sqrt(sum(float((g * g).sum()) for g in grads)) * \
            np.sqrt(sum(float((e * e).sum()) for e in d)) / np.sqrt(len(d))
        check(abs(an - fd) <= 1e-3 * max(scale, abs(fd)),
              "direction %d: <grad, d> = %r, finite difference %r" % (k, an, fd))

    # AdamW's first step from those gradients
    for i, name in enumerate(NAMES):
        g = ld["g%d" % i].astype(np.float64)
        p = ld[name].astype(np.float64)
        m = 0.1 * g
        v = 0.001 * g * g
        u = (m / 0.1) / (np.sqrt(v / (1 - 0.999)) + 1e-8) + 0.01 * p
        pn = p - 0.01 * u
        check(np.allclose(ld["p%d" % i], pn, rtol=1e-5, atol=1e-6),
              "AdamW's new %s" % name)
        check(np.allclose(ld["a%d" % i], m, rtol=1e-5, atol=1e-9), "AdamW's m of %s" % name)
        check(np.allclose(ld["s%d" % i], v, rtol=1e-4, atol=1e-12), "AdamW's v of %s" % name)

    # the step on 2 x 2 devices == on one device
    check(np.allclose(ld["l4"], ld["l1"], rtol=1e-5, atol=1e-6), "loss on 2 x 2 == on 1")
    for pre4, pre1, what in (("p", "q", "weights"), ("a", "b", "m"), ("s", "t", "v")):
        for i, name in enumerate(NAMES):
            check(np.allclose(ld["%s%d" % (pre4, i)], ld["%s%d" % (pre1, i)],
                              rtol=1e-5, atol=1e-6),
                  "%s of %s on 2 x 2 == on 1" % (what, name))

    # the training run's losses
    out = run(shmapi, ["examples/gpt_train.shm"])
    m = re.search(r"loss before each step:\n\[([^\]]*)\]", out)
    losses = [float(x) for x in m.group(1).split()] if m else []
    check(len(losses) == 30, "30 losses printed")
    check(all(b < a for a, b in zip(losses, losses[1:])), "the loss goes down at every step")
    check(losses and losses[-1] < 0.5 * losses[0], "the last loss is below half the first")
    check(losses and abs(losses[0] - ref) <= 1e-5 * ref, "the first loss is the NumPy model's")

    # the pasted jaxpr is the generator's
    gen = subprocess.run([sys.executable, os.path.join(ROOT, "tests/examples/_gen_gpt_jaxpr.py")],
                         capture_output=True, text=True, check=True).stdout.rstrip("\n")
    text = open(os.path.join(ROOT, "examples/gpt_train_jaxpr.shm")).read()
    check(("\ndef jax_step = " + gen + "\n") in text,
          "examples/gpt_train_jaxpr.shm holds _gen_gpt_jaxpr.py's jaxpr")

    # show's form of the pasted jaxpr, pasted again, takes the same step bit for bit
    path = os.path.join(tmp, "show.shm")
    with open(path, "w") as f:
        f.write('import "gpt_train_jaxpr.shm"\nshow jax_step\n')
    shown = run(shmapi, [path], env)
    shown = shown[shown.index("def jax_step = "):].replace("def jax_step = ", "def again = ", 1)
    step = ("l9, %s = again tokens targets 1.0 wte wpe wq wk wv wo w1 w2 "
            "mte mpe mq mq mq mo m1 m2 mte mpe mq mq mq mo m1 m2"
            % ", ".join("r%d" % i for i in range(3 * n)))
    flats = ["f%d = flat %s" % (j, " ".join("r%d" % (8 * j + i) for i in range(n)))
             for j in range(3)]
    saves = ['save "%s/%s.npy" %s' % (tmp, v, v) for v in
             ("l4", "fp4", "fm4", "fv4", "l9", "f0", "f1", "f2")]
    with open(path, "w") as f:
        f.write('import "gpt_train_jaxpr.shm"\n' + shown + "\n" + step + "\n"
                + "\n".join(flats + saves) + "\n")
    run(shmapi, [path], env)
    rt = {v: np.load(os.path.join(tmp, v + ".npy"))
          for v in ("l4", "fp4", "fm4", "fv4", "l9", "f0", "f1", "f2")}
    for a, b in (("l4", "l9"), ("fp4", "f0"), ("fm4", "f1"), ("fv4", "f2")):
        check(rt[a].tobytes() == rt[b].tobytes(), "show's jaxpr pasted again: %s" % a)

    if failures:
        print("%d checks failed" % len(failures))
        sys.exit(1)
    print("ok: loss %.7f (NumPy %.7f), %d gradient directions, AdamW, 2 x 2 == 1, "
          "%d losses down, the jaxpr" % (float(ld["l"]), ref, len(dirs), len(losses)))


main()
