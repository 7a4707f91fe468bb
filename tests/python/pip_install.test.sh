#!/usr/bin/env bash
# timeout: 1500
# `pip install --no-build-isolation .` (docs/python.md) works on this
# checkout: it builds the package through meson-python into a temporary
# directory, and the installed package runs a program that imports the
# standard library (shipped inside the package) and calls a function on a
# NumPy array.  Skips when pip or meson-python is missing, and under the
# sanitizer build (the installed package is a plain build either way).
py=${SHMAPI_PYTHON:-/usr/bin/python3}
build=$(cd "$(dirname "$SHMAPI")" && pwd)
if nm -D "$build"/python/shmapi/_shmapi*.so 2>/dev/null | grep -q __asan_init; then
  echo "sanitizer build: the pip install is tested by the plain build's run"
  exit 77
fi
if ! "$py" -m pip --version >/dev/null 2>&1 || ! "$py" -c 'import mesonpy' 2>/dev/null; then
  echo "pip or meson-python is missing (python3-pip, python3-mesonpy)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$py" -m pip install --no-build-isolation --no-deps --no-index --target "$tmp/site" . >"$tmp/log" 2>&1; then
  echo "pip install failed:"
  tail -n 40 "$tmp/log"
  exit 1
fi
cd "$tmp"
PYTHONPATH=$tmp/site "$py" - <<'PY'
import os, sys
import numpy as np
import shmapi
assert shmapi.__file__.startswith(os.environ["PYTHONPATH"]), shmapi.__file__
prog = shmapi.load('import "nn.shm"\ndef f(x) {\n  y = relu x\n  return y\n}\n')
y = prog.f(np.array([-1.0, 2.0], np.float32))
assert y.tolist() == [0.0, 2.0], y
here = os.path.dirname(shmapi.__file__)         # typed: the marker and the stubs come along
assert os.path.isfile(os.path.join(here, "py.typed")) and os.path.isfile(os.path.join(here, "__init__.pyi"))
print("installed package ok:", shmapi.version)
PY
