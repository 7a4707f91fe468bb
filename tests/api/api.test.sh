# The embedding API (include/shmapi.h) as a C program uses it (_api.c):
# built against the libshmapi.so and the header of $SHMAPI's build
# directory, run once with 200 calls per thread, then under valgrind
# (when installed) with 3, which must report no error and no leak.
# Skips (77) only when the build directory has no libshmapi.so.
# timeout: 600
set -euo pipefail
build=$(dirname "$SHMAPI")
if [[ ! -f $build/libshmapi.so ]]; then
  echo "no libshmapi.so beside $SHMAPI"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=()
nm -D "$build/libshmapi.so" >"$tmp/syms" 2>/dev/null || true
if grep -q __asan_ "$tmp/syms"; then flags+=(-fsanitize=address,undefined); fi
if ! cc -std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Werror "${flags[@]}" -Iinclude tests/api/_api.c \
     -L"$build" -lshmapi -Wl,-rpath,"$(cd "$build" && pwd)" -lpthread -o "$tmp/api" >"$tmp/log" 2>&1; then
  echo "cannot build the test program:"
  head -n 30 "$tmp/log"
  exit 1
fi
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
