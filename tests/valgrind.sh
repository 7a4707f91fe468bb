#!/usr/bin/env bash
# Run programs under valgrind --leak-check=full and report TAP.
#
#   tests/valgrind.sh SHMAPI [FILE.shm...]      (default: examples/*.shm)
#
# A program passes when valgrind reports no memory error and no leak
# (definite, indirect or possible; memory still reachable at exit, such as
# the dlopen'ed OpenBLAS, is not a leak) and it was not killed by a
# signal.  Its own exit status does not matter: examples may end in an
# error on purpose.  A program's line "# args: ..." gives the options it
# runs with (the examples at real model sizes say --abstract).  Runs as many programs at once as there are CPUs.
# The last line is "# N passed, N failed"; exits 1 if any failed, 77 (skip)
# when valgrind is not installed.  .ci/run runs it over the examples with
# a plain (not sanitized) build.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if (($# < 1)); then
  echo "usage: tests/valgrind.sh SHMAPI [FILE.shm...]" >&2
  exit 2
fi
shmapi=$1
shift
if ! command -v valgrind >/dev/null; then
  echo "1..0 # SKIP valgrind is not installed"
  exit 77
fi
if (($#)); then files=("$@"); else files=(examples/*.shm); fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run_one() {   # index file
  local log=$out/$1.log
  local args
  read -r -a args < <(sed -n 's/^# args: //p' "$2" | head -n 1)
  OPENBLAS_NUM_THREADS=1 LC_ALL=C timeout 600 \
    valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
      --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \
      "$shmapi" "${args[@]}" "$2" </dev/null >/dev/null 2>"$log"
  echo $? >"$out/$1.rc"
}
export -f run_one
export out shmapi

for i in "${!files[@]}"; do printf '%s\0%s\0' "$i" "${files[$i]}"; done |
  xargs -0 -n 2 -P "$(nproc)" bash -c 'run_one "$0" "$1"'

echo "TAP version 13"
echo "1..${#files[@]}"
passed=0 failed=0
for i in "${!files[@]}"; do
  rc=$(cat "$out/$i.rc" 2>/dev/null || echo 255)
  if ((rc == 99 || rc >= 124)); then
    echo "not ok $((i + 1)) - valgrind ${files[$i]} (exit $rc)"
    grep -v '^==[0-9]*== *$' "$out/$i.log" | tail -n 60 | sed 's/^/# /'
    failed=$((failed + 1))
  else
    echo "ok $((i + 1)) - valgrind ${files[$i]}"
    passed=$((passed + 1))
  fi
done
echo "# $passed passed, $failed failed"
((failed == 0))
