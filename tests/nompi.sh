#!/usr/bin/env bash
# A shmapi built without MPI (meson setup -Dmpi=disabled) still works, and
# says how to get MPI when asked for ranks.  Reports TAP.
#
#   tests/nompi.sh NOMPI_SHMAPI SHMAPI
#
# NOMPI_SHMAPI is the build without MPI, SHMAPI the usual one.  Checks:
# every example prints the same bytes (stdout, stderr, exit status) from
# both; `--ranks 2` and a start by mpirun (as mpirun's environment says)
# are refused with exit status 2 and the packages to install.  .ci/run
# builds build-nompi/ and runs this.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if (($# != 2)); then
  echo "usage: tests/nompi.sh NOMPI_SHMAPI SHMAPI" >&2
  exit 2
fi
nompi=$1
shmapi=$2
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

files=(examples/*.shm)
echo "TAP version 13"
echo "1..$((${#files[@]} + 2))"
n=0
failed=0
result() { # result OK NAME [DETAIL]
  n=$((n + 1))
  if [[ $1 == 1 ]]; then
    echo "ok $n - $2"
  else
    failed=$((failed + 1))
    echo "not ok $n - $2"
    [[ -n ${3:-} ]] && sed 's/^/# /' <<<"$3"
  fi
}

for f in "${files[@]}"; do
  args=$(sed -n 's/^#[[:space:]]*args:[[:space:]]*//p' "$f" | head -n 1)
  # shellcheck disable=SC2086
  "$nompi" $args "$f" >"$tmp/a.out" 2>"$tmp/a.err"; ra=$?
  # shellcheck disable=SC2086
  "$shmapi" $args "$f" >"$tmp/b.out" 2>"$tmp/b.err"; rb=$?
  if [[ $ra == "$rb" ]] && cmp -s "$tmp/a.out" "$tmp/b.out" && cmp -s "$tmp/a.err" "$tmp/b.err"; then
    result 1 "$f: the same without MPI"
  else
    result 0 "$f: the same without MPI" "exit $ra vs $rb; $(diff "$tmp/a.out" "$tmp/b.out" | head -n 10)"
  fi
done

"$nompi" --ranks 2 -c 'print 1' >"$tmp/o" 2>"$tmp/e"; r=$?
if [[ $r == 2 && ! -s $tmp/o ]] && grep -q 'built without MPI' "$tmp/e" && grep -q 'apt-get install libopenmpi-dev openmpi-bin' "$tmp/e"; then
  result 1 "--ranks 2 without MPI says how to get it"
else
  result 0 "--ranks 2 without MPI says how to get it" "exit $r: $(cat "$tmp/e")"
fi

OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 "$nompi" -c 'print 1' >"$tmp/o" 2>"$tmp/e"; r=$?
if [[ $r == 2 && ! -s $tmp/o ]] && grep -q 'started by mpirun on 2 processes' "$tmp/e" &&
   grep -q 'apt-get install libopenmpi-dev' "$tmp/e"; then
  result 1 "started by mpirun without MPI: refused with how to get it"
else
  result 0 "started by mpirun without MPI: refused with how to get it" "exit $r: $(cat "$tmp/e")"
fi

echo "# $((n - failed)) passed, $failed failed"
((failed == 0))
