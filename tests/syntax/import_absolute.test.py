#!/usr/bin/env python3
"""`import "/abs/path.shm"` reads that file, whatever the folder of the
importing file (an absolute path is not joined to it), and a missing
absolute path is reported as a missing import."""
import os
import subprocess
import sys
import tempfile

shmapi = os.environ["SHMAPI"]
with tempfile.TemporaryDirectory() as tmp:
    lib = os.path.join(tmp, "lib", "twice.shm")
    os.makedirs(os.path.dirname(lib))
    with open(lib, "w") as f:
        f.write("def twice(x) {\n  y = mul x 2\n  return y\n}\n")
    os.makedirs(os.path.join(tmp, "prog"))
    main = os.path.join(tmp, "prog", "main.shm")
    with open(main, "w") as f:
        f.write('import "%s"\ny = twice 21\nprint y\n' % lib)
    p = subprocess.run([shmapi, main], capture_output=True, text=True)
    if p.returncode != 0 or p.stdout != "42\n":
        sys.exit("absolute import: exit %d, %r %r" % (p.returncode, p.stdout, p.stderr))
    with open(main, "w") as f:
        f.write('import "%s/none.shm"\n' % tmp)
    p = subprocess.run([shmapi, main], capture_output=True, text=True)
    want = "cannot find '%s/none.shm'" % tmp
    if p.returncode != 1 or want not in p.stderr:
        sys.exit("missing absolute import: exit %d, %r" % (p.returncode, p.stderr))
print("ok")
