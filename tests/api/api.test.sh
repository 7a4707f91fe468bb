# The embedding API (include/shmapi.h) as a C program uses it (_api.c):
# built against the libshmapi.so and the header of $SHMAPI's build
# directory, run once with 200 calls per thread, then under valgrind
# (when installed) with 3, which must report no error and no leak.
# Skips (77) only when the build directory has no libshmapi.so.
# timeout: 600
set -euo pipefail
source tests/api/_client.sh
build_client "$tmp/api" tests/api/_api.c -lpthread
OPENBLAS_NUM_THREADS=1 SHM_API_ROUNDS=200 "$tmp/api"
if command -v valgrind >/dev/null && ((${#flags[@]} == 0)); then
  echo "# under valgrind:"
  OPENBLAS_NUM_THREADS=1 SHM_API_ROUNDS=3 valgrind -q --leak-check=full \
    --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
    --error-exitcode=99 --log-file="$tmp/vg" "$tmp/api" >"$tmp/vgout" || {
    status=$?
    cat "$tmp/vgout" "$tmp/vg"
    echo "valgrind: exit $status"
    exit 1
  }
  grep -c '^ok' "$tmp/vgout" | sed 's/^/# valgrind: /; s/$/ checks passed/'
fi
