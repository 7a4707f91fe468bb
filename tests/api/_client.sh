# Sourced by the tests that build a C client of libshmapi.so:
#
#   build_client OUT SOURCE [EXTRA CC ARGS...]
#
# compiles SOURCE against include/shmapi.h and the libshmapi.so beside
# $SHMAPI (with the sanitizers when the library was built with them: the
# second CI run), into OUT.  Exits 77 (skip) when the build directory has
# no libshmapi.so, 1 when the client does not build.  Sets $build, $tmp
# (removed at exit) and the array flags (the sanitizer flags, if any).
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

build_client() {
  local out=$1 src=$2
  shift 2
  if ! cc -std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Werror "${flags[@]}" -Iinclude "$src" \
       -L"$build" -lshmapi -Wl,-rpath,"$(cd "$build" && pwd)" "$@" -o "$out" >"$out.log" 2>&1; then
    echo "cannot build $src:"
    head -n 30 "$out.log"
    exit 1
  fi
}
