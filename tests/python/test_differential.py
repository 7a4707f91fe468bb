"""The spmd differential test's random programs (tests/spmd/
differential.test.py's generators, Gen and CtlGen: shard_map, every
collective, control flow) through the Python API, compared with the same
NumPy model, two ways:

- as written, each program loaded into a Program of its own, its `print`
  output captured from sys.stdout;
- with the arrays in memory: the generator's inputs are not built in the
  program but passed as NumPy arrays to a call of the shard_map function
  (prog.S(x, y), or a function around the program's shard_map equation),
  some of them as non-contiguous views (copied on the way in), and the
  NumPy arrays the call returns compared with the model's, dtype and
  shape included; for a quarter of them the cost model of the call from
  the arguments' shapes alone (abstract=True) must be the run's, report
  and data alike, where it can be (no trip count or cond index that is
  data).

SHM_PY_DIFF_SEED and SHM_PY_DIFF_COUNT choose another seed and count."""

import importlib.util
import os
import random
import sys

import numpy as np

import shmapi

HERE = os.path.dirname(os.path.abspath(__file__))
SPMD = os.path.join(os.path.dirname(HERE), "spmd", "differential.test.py")
SEED = int(os.environ.get("SHM_PY_DIFF_SEED", "20261127"))
COUNT = int(os.environ.get("SHM_PY_DIFF_COUNT", "400"))


def load_generator():
    sys.path.insert(0, os.path.dirname(HERE))
    spec = importlib.util.spec_from_file_location("spmd_differential", SPMD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_random_programs_through_the_python_api(capsys):
    d = load_generator()
    rng = random.Random(SEED)
    programs, uid = [], 0
    while len(programs) < COUNT:
        uid += 1
        g = d.CtlGen(rng, uid) if rng.random() < d.CTL_FRACTION else d.Gen(rng, uid)
        r = g.program()
        if r is not None:
            programs.append((r[0], r[1]))
    failures = []
    capsys.readouterr()
    for text, expected in programs:
        try:
            shmapi.load(text)
        except shmapi.Error as e:
            failures.append((text, ["error: " + e.text]))
            continue
        got = d.parse_output(capsys.readouterr().out)
        probs = []
        for label, exp in expected:
            if label not in got:
                probs.append("%s: not printed" % label)
                continue
            m = d.compare(exp, got[label])
            if m:
                probs.append("%s: %s" % (label, m))
        if probs:
            failures.append((text, probs))
    for text, probs in failures[:2]:
        print(text, "\n".join(probs), file=sys.stderr)
    assert not failures, "%d of %d programs disagree with the model (seed %d)" % (len(failures), COUNT, SEED)


# ---- arrays in memory ------------------------------------------------------------------------


def in_memory(base):
    """The generator `base` recording each input it makes: its name, its
    data (the model's array) and the program lines that build it."""
    class InMemory(base):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            self.inputs = []

        def make_input(self, mesh, k, lead=None):
            before = len(self.lines_top)
            made = super().make_input(mesh, k, lead)
            self.inputs.append((made[0], made[1], self.lines_top[before:]))
            return made
    return InMemory


def callable_form(g, text):
    """The program's text without its inputs, its call and its prints, and
    the function that takes the inputs: the shard_map function itself, or
    (a shard_map equation at top level) a function around that equation."""
    made = set(line for _, _, lines in g.inputs for line in lines)
    results = ["R%d_%d" % (g.uid, k) for k in range(len(g.outs))]
    head = ", ".join(results) + " = "
    out, fn = [], "S%d" % g.uid
    for line in text.split("\n"):
        if line in made or line.startswith('print "@@%d_' % g.uid):
            continue
        if line.startswith(head):
            if g.form["decorator"]:
                continue
            fn = "call_S%d" % g.uid
            out += ["def %s(%s) {" % (fn, ", ".join(x for x, _, _ in g.inputs)), "  " + line,
                    "  return " + ", ".join(results), "}"]
            continue
        out.append(line)
    return "\n".join(out), fn


def same(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return "%s%s, expected %s%s" % (got.dtype, got.shape, want.dtype, want.shape)
    if np.issubdtype(want.dtype, np.floating):
        ok = np.allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        ok = np.array_equal(got, want)
    return None if ok else "values differ:\n got      %s\n expected %s" % (got.ravel()[:50], want.ravel()[:50])


def abstract_problems(prog, fn, args):
    """The cost model of the call from the arguments' shapes alone must be
    the run's (the same report, every number), unless it cannot be: a
    loop whose trip count is data (an error) or a cond index that is data
    (modelled by its costliest branch, noted).  Problems, and whether it
    was compared."""
    try:
        ab = prog.cost(fn, *[shmapi.ShapeDtype(a.shape, a.dtype) for a in args], abstract=True)
    except shmapi.Error as e:
        return ([] if "depends on array data" in e.message else ["abstract: " + e.text]), False
    if ab.notes:
        return [], False
    run = prog.cost(fn, *args)
    if run.to_dict() != ab.to_dict() or run.text != ab.text:
        return ["the abstract model differs from the run's:\n%s\n%s" % (ab.text, run.text)], True
    return [], True


def test_random_programs_with_arrays_in_memory():
    d = load_generator()
    rng = random.Random(SEED + 1)
    gens = (in_memory(d.Gen), in_memory(d.CtlGen))
    failures, ran, uid, args_passed, modelled = [], 0, 0, 0, 0
    while ran < COUNT:
        uid += 1
        g = gens[1](rng, uid) if rng.random() < d.CTL_FRACTION else gens[0](rng, uid)
        r = g.program()
        if r is None:
            continue
        ran += 1
        text, fn = callable_form(g, r[0])
        args = []
        for _, data, _ in g.inputs:
            # some arguments as views that are not C-contiguous: copied in
            if data.ndim >= 2 and rng.random() < 0.3:
                data = np.asfortranarray(data)
            args.append(data)
        args_passed += len(args)
        try:
            prog = shmapi.load(text)
            outs = prog[fn](*args)
        except shmapi.Error as e:
            failures.append((text, ["error: " + e.text]))
            continue
        outs = outs if isinstance(outs, tuple) else (outs,)
        probs = ["%d results, expected %d" % (len(outs), len(r[1]))] if len(outs) != len(r[1]) else []
        for k, ((_, want), got) in enumerate(zip(r[1], outs)):
            m = same(got, want)
            if m:
                probs.append("result %d: %s" % (k, m))
        if ran % 4 == 0:                        # a quarter: the cost model from shapes alone
            more, compared = abstract_problems(prog, fn, args)
            probs += more
            modelled += compared
        if probs:
            failures.append((text, probs))
    for text, probs in failures[:2]:
        print(text, "\n".join(probs), file=sys.stderr)
    assert args_passed > COUNT                  # most programs take arrays
    assert modelled > COUNT // 16               # (64 of the 100 at the default seed)
    assert not failures, "%d of %d programs disagree with the model (seed %d)" % (len(failures), COUNT, SEED + 1)
