# The evaluator's observer (the cost model's) and its trace (the
# debugger's) coexist: see _observer_and_trace.c.  Builds the driver
# against the interpreter's static libraries beside $SHMAPI (skips
# without them).
# timeout: 120
set -euo pipefail
build=$(dirname "$SHMAPI")
libs=()
for l in shmmodel shmcheck shmrun shmfront shmrules shmbase shmgen; do
  if [[ ! -f $build/lib$l.a ]]; then
    echo "no lib$l.a beside $SHMAPI"
    exit 77
  fi
  libs+=("$build/lib$l.a")
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=()
nm "${libs[0]}" >"$tmp/syms" 2>/dev/null || true
if grep -q __asan_ "$tmp/syms"; then flags+=(-fsanitize=address,undefined); fi
if ! cc -std=c11 -D_GNU_SOURCE -g "${flags[@]}" -Isrc -I"$build" tests/cost/_observer_and_trace.c \
     "${libs[@]}" $(pkg-config --libs jansson) -lm -ldl -lpthread -o "$tmp/driver" >"$tmp/cc.log" 2>&1; then
  echo "cannot build the driver:"
  head -n 30 "$tmp/cc.log"
  exit 1
fi
for f in examples/collective_matmul.shm examples/ffn_2d.shm tests/spmd/cond_varying.shm; do
  "$tmp/driver" "$f"
done
