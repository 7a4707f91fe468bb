# The C example of README.md and docs/c_api.md (docs/examples/embed.c),
# built against $SHMAPI's libshmapi.so and run: it prints what
# docs/examples/embed_c.txt, shown beside it, says.  Skips (77) only when
# the build directory has no libshmapi.so.
# timeout: 120
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
cc -std=c11 -Wall -Wextra -Werror "${flags[@]}" -Iinclude docs/examples/embed.c \
  -L"$build" -lshmapi -Wl,-rpath,"$(cd "$build" && pwd)" -o "$tmp/embed"
OPENBLAS_NUM_THREADS=1 "$tmp/embed" >"$tmp/out"
diff -u docs/examples/embed_c.txt "$tmp/out"
