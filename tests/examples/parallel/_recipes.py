"""Helpers for the cookbook's tests: the recipes' definitions without
their small-size runs, copied into a scratch folder beside the files they
import, and a program of many calls run in one process."""
import os
import re
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PARALLEL = os.path.join(ROOT, "examples", "parallel")
MARKER = "# ---- the recipe at small sizes"


def definitions(name):
    """The text of examples/parallel/NAME.shm above its small-size run."""
    with open(os.path.join(PARALLEL, name + ".shm")) as f:
        text = f.read()
    cut = text.find(MARKER)
    return text if cut < 0 else text[:cut]


def scratch():
    """A scratch folder holding every recipe's definitions (same names)."""
    d = tempfile.mkdtemp(prefix="cookbook_")
    for fn in os.listdir(PARALLEL):
        if fn.endswith(".shm"):
            with open(os.path.join(d, fn), "w") as f:
                f.write(definitions(fn[:-4]))
    return d


def run(shmapi, folder, name, text, args=(), timeout=600):
    """Write text as folder/NAME.shm and run it; (status, stdout, stderr)."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", LC_ALL="C")
    p = subprocess.run([shmapi, *args, path], capture_output=True, text=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def cleanup(folder):
    shutil.rmtree(folder, ignore_errors=True)
