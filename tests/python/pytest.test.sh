#!/usr/bin/env bash
# timeout: 300
# The Python package's tests (tests/python/test_*.py) under pytest, with the
# package built beside $SHMAPI (build/python/shmapi).  Skips when the build
# has no Python package (-Dpython=disabled, or no python3-dev), or when it
# was built with the sanitizers (an instrumented extension cannot be loaded
# into an uninstrumented python3).
build=$(cd "$(dirname "$SHMAPI")" && pwd)
pkg=$build/python/shmapi
py=${SHMAPI_PYTHON:-/usr/bin/python3}
if ! ls "$pkg"/_shmapi*.so >/dev/null 2>&1; then
  echo "no Python package in $build (configure with python3-dev and python3-numpy installed)"
  exit 77
fi
if nm -D "$pkg"/_shmapi*.so 2>/dev/null | grep -q __asan_init; then
  echo "the package is built with the sanitizers: not loadable into python3"
  exit 77
fi
if ! "$py" -c 'import pytest' 2>/dev/null; then
  echo "pytest is missing (python3-pytest)"
  exit 1
fi
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
export SHMAPI=$build/shmapi
exec "$py" -m pytest -q -p no:cacheprovider "$(dirname "${BASH_SOURCE[0]}")"
