"""The spmd differential test's random programs (tests/spmd/
differential.test.py: shard_map, every collective, control flow), run
through the Python API instead of the shmapi program: each program loaded
into a Program of its own, its `print` output captured from sys.stdout,
compared with the same NumPy model.  SHM_PY_DIFF_SEED and
SHM_PY_DIFF_COUNT choose another seed and count."""

import importlib.util
import os
import random
import sys

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
