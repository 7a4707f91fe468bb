"""docs/cookbook.md and its pictures (docs/img/cookbook_*.svg) are what
docs/gen_cookbook.py makes now from the recipes in examples/parallel/ and
the cost model: a change to either that the chapter does not show fails
here (run docs/gen_cookbook.py to write them again)."""
# timeout: 600
import os
import subprocess
import sys

p = subprocess.run([sys.executable, "docs/gen_cookbook.py", "--check"], capture_output=True, text=True,
                   env=dict(os.environ, SHMAPI=os.environ["SHMAPI"]))
sys.stdout.write(p.stdout + p.stderr)
sys.exit(p.returncode)
