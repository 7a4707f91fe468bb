#!/usr/bin/python3
# timeout: 240
"""Jaxprs that JAX printed, pasted verbatim, run against NumPy.

Each file of tests/jaxpr/_corpus/ is one `def` whose right-hand side is the
text some JAX version printed (copied from JAX's documentation, its test
suite or a user's report; the first comment line names the version, the
next ones the source and the Python it came from), and directives:

    # in: a = np.arange(8, dtype=np.float32)      an input (written as a.npy)
    # call: r = func1 a b                          the shm statement calling it
    # numpy: r = np.sum(a + np.sin(b) * 3)         the result, computed by NumPy
    # tol: 1e-5                                    relative tolerance (default 1e-6)

The program runs with `--jax VERSION` of the first line, so that its
random_bits and random_split use that JAX's counters.

Inputs are loaded before the def (a jaxpr's constvars are bound from the
top-level values of the same names), the call runs, and every result named
by a `numpy:` line is saved with `save` and compared with NumPy's: same
dtype, same shape, values equal within the tolerance.  Then the round trip:
`show` of the function, pasted into a new program in its place, must give
the same results bit for bit.  The corpus must hold at least 40 jaxprs
from at least 8 JAX versions.
"""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _numpy import np, shmapi_under_test  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "_corpus")
# Jaxprs laid out as a JAX version prints them, written by hand from JAX's
# printing code where no printout was found (shard_map with each
# collective): run and checked the same way, not counted in the corpus.
FORMS = os.path.join(HERE, "_forms")
MIN_ENTRIES, MIN_VERSIONS = 40, 8


def parse(path):
    text = open(path).read()
    first = text.split("\n", 1)[0]
    m = re.match(r"# JAX ((\d+\.\d+)(\.\d+)?)\b", first)
    ins, outs, call, tol, name = [], [], [], 1e-6, None
    for line in text.split("\n"):
        if line.startswith("# in: "):
            k, e = line[6:].split("=", 1)
            ins.append((k.strip(), e.strip()))
        elif line.startswith("# numpy: "):
            k, e = line[9:].split("=", 1)
            outs.append((k.strip(), e.strip()))
        elif line.startswith("# call: "):
            call.append(line[8:].strip())
        elif line.startswith("# tol: "):
            tol = float(line[7:])
        elif line.startswith("def ") and name is None:
            name = line[4:].split("=", 1)[0].strip()
    return {"version": m.group(2) if m else None, "jax": m.group(1) if m else None,
            "ins": ins, "outs": outs, "call": call, "tol": tol,
            "name": name, "text": text}


def run(shmapi, folder, prog, jax):
    """Runs prog as printed by JAX `jax` (--jax: the counters of its random_bits)."""
    path = os.path.join(folder, "prog.shm")
    with open(path, "w") as f:
        f.write(prog)
    return subprocess.run([shmapi, "--jax", jax, path], capture_output=True, text=True,
                          env=dict(os.environ, LC_ALL="C"))


def program(entry, body, show):
    loads = ['%s = load "%s.npy"' % (k, k) for k, _ in entry["ins"]]
    saves = ['save "out_%s.npy" %s' % (k, k) for k, _ in entry["outs"]]
    tail = ['print "@@@SHOW"', "show %s" % entry["name"]] if show else []
    return "\n".join(loads + [body] + entry["call"] + saves + tail) + "\n"


def same(want, got, tol):
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.kind in "biu":
        return np.array_equal(want, got)
    w, g = want.astype(np.complex128), got.astype(np.complex128)
    return bool(np.all(np.isclose(g, w, rtol=tol, atol=tol, equal_nan=True)))


def check(shmapi, path):
    e = parse(path)
    what = os.path.relpath(path)
    if not e["version"] or not e["call"] or not e["outs"] or not e["name"]:
        return ["%s: needs a first line '# JAX x.y ...', a def, '# call:' and '# numpy:' lines" % what], e
    env = {"np": np}
    with tempfile.TemporaryDirectory() as tmp:
        for k, expr in e["ins"]:
            env[k] = np.asarray(eval(expr, env))
            np.save(os.path.join(tmp, k + ".npy"), env[k])
        with np.errstate(all="ignore"):
            for k, expr in e["outs"]:
                env[k] = np.asarray(eval(expr, env))
        p = run(shmapi, tmp, program(e, e["text"], True), e["jax"])
        if p.returncode:
            return ["%s: shmapi failed:\n%s" % (what, p.stderr[:2000])], e
        bad, first = [], {}
        for k, _ in e["outs"]:
            got = np.load(os.path.join(tmp, "out_%s.npy" % k))
            first[k] = got
            if not same(env[k], got, e["tol"]):
                bad.append("%s: %s is\n%r\nbut NumPy computes\n%r" % (what, k, got, env[k]))
        shown = p.stdout.split("@@@SHOW\n", 1)[1] if "@@@SHOW\n" in p.stdout else ""
        if not shown.startswith("def "):
            return bad + ["%s: show printed no def:\n%s" % (what, shown[:500])], e
        p2 = run(shmapi, tmp, program(e, shown, False), e["jax"])
        if p2.returncode:
            return bad + ["%s: the shown function does not run again:\n%s\n%s" % (what, shown, p2.stderr[:2000])], e
        for k, _ in e["outs"]:
            again = np.load(os.path.join(tmp, "out_%s.npy" % k))
            if again.tobytes() != first[k].tobytes() or again.shape != first[k].shape:
                bad.append("%s: the shown function gives %s = %r, not %r" % (what, k, again, first[k]))
    return bad, e


def main():
    shmapi = shmapi_under_test()
    files = sorted(os.path.join(CORPUS, f) for f in os.listdir(CORPUS) if f.endswith(".shm"))
    forms = sorted(os.path.join(FORMS, f) for f in os.listdir(FORMS) if f.endswith(".shm"))
    bad, versions = [], {}
    for path in forms:
        bad += check(shmapi, path)[0]
    for path in files:
        b, e = check(shmapi, path)
        bad += b
        if e["version"]:
            versions.setdefault(e["version"], 0)
            versions[e["version"]] += 1
    for m in bad[:6]:
        print(m)
        print()
    if len(files) < MIN_ENTRIES or len(versions) < MIN_VERSIONS:
        bad.append("the corpus has %d jaxprs from %d JAX versions; it needs %d from %d"
                   % (len(files), len(versions), MIN_ENTRIES, MIN_VERSIONS))
        print(bad[-1])
    print("%d jaxprs from JAX %s, and %d laid out by hand as JAX prints them: %d problems" % (len(files), ", ".join(
        "%s (%d)" % (v, versions[v]) for v in sorted(versions, key=lambda s: [int(x) for x in s.split(".")])),
        len(forms), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
