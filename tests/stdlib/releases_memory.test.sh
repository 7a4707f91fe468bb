# Every stdlib test and the larger examples release all the memory they
# allocate (the allocation-failure switch, set too high to fire, turns on
# the check at exit).  The transpose of pmean once leaked its literal.
# timeout: 120
set -u
status=0
for f in tests/stdlib/[a-z]*.shm examples/tour.shm examples/train_mlp.shm examples/ffn_2d.shm examples/moe.shm; do
  out=$(SHMAPI_FAIL_ALLOC=1000000000 "$SHMAPI" "$f" 2>&1 >/dev/null)
  rc=$?
  case "$f" in *_and_perm.shm) want=1 ;; *) want=0 ;; esac
  if [ "$rc" != "$want" ]; then
    echo "FAIL: $f: exit $rc"
    echo "$out" | tail -3
    status=1
  fi
done
exit $status
