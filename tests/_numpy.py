"""NumPy for the test scripts that compare against it, or a skip.

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from _numpy import np  # noqa: E402

Debian's python3-numpy lives with /usr/bin/python3; a script started by
another interpreter without NumPy runs itself again under that one.  With
no NumPy anywhere the script is skipped (exit status 77, which
tests/run.py reports as a skip).  Also two helpers of those scripts:
shmapi_under_test() (the shmapi tests/run.py passes) and run_lines() (a
program written out and run).
"""
import os
import sys

try:
    import numpy as np  # noqa: F401
except ImportError:
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3" \
            and not os.environ.get("SHM_NUMPY_REEXEC"):
        os.environ["SHM_NUMPY_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("skip: NumPy is not available")
    sys.exit(77)


def shmapi_under_test():
    """The shmapi that tests/run.py passes in $SHMAPI; without it, says so
    and exits with status 2."""
    path = os.environ.get("SHMAPI")
    if not path:
        print("SHMAPI is not set")
        sys.exit(2)
    return path


def run_lines(shmapi, tmp, lines):
    """Write `lines` as tmp/prog.shm, run it in the C locale and return
    its standard output; None (after printing its errors) when it fails."""
    import subprocess
    prog = os.path.join(tmp, "prog.shm")
    with open(prog, "w") as f:
        f.write("\n".join(lines) + "\n")
    proc = subprocess.run([shmapi, prog], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    if proc.returncode:
        print("shmapi failed:\n%s" % proc.stderr[:3000])
        return None
    return proc.stdout
