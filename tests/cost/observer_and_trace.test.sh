# The evaluator's observer (the cost model's) and its trace (the
# debugger's) coexist: see _observer_and_trace.c.  Builds the driver
# against the interpreter's static libraries beside $SHMAPI (skips
# without them).
# timeout: 120
set -euo pipefail
source tests/_driver.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build_driver "$tmp/driver" tests/cost/_observer_and_trace.c shmmodel shmcheck shmxform shmrun shmfront shmrules shmbase shmgen \
  -- $(pkg-config --libs jansson libzip)
for f in examples/collective_matmul.shm examples/ffn_2d.shm tests/spmd/cond_varying.shm; do
  "$tmp/driver" "$f"
done
