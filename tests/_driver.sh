# Sourced by the test scripts that build a C driver against the
# interpreter's static libraries (found beside $SHMAPI in its meson build
# directory):
#
#   build_driver OUT SOURCE LIB... [-- EXTRA LINK FLAGS]
#
# links SOURCE with build/libLIB.a for each LIB (in that order) into OUT,
# with the sanitizers when the libraries were built with them (the second
# CI run); exits 77 (skip) when a library is missing, 1 when the driver
# does not build.
build_driver() {
  local out=$1 src=$2 build libs=() extra=() flags=()
  shift 2
  build=$(dirname "$SHMAPI")
  while (($#)); do
    if [[ $1 == -- ]]; then shift; extra=("$@"); break; fi
    if [[ ! -f $build/lib$1.a ]]; then
      echo "no lib$1.a beside $SHMAPI"
      exit 77
    fi
    libs+=("$build/lib$1.a")
    shift
  done
  # (through a file: with pipefail, grep -q closing the pipe early would fail nm)
  nm "${libs[0]}" >"$out.syms" 2>/dev/null || true
  if grep -q __asan_ "$out.syms"; then flags+=(-fsanitize=address,undefined); fi
  if ! cc -std=c11 -D_GNU_SOURCE -g "${flags[@]}" -Isrc -I"$build" "$src" "${libs[@]}" "${extra[@]}" \
       -lfftw3f -lfftw3 -lm -ldl -lpthread -o "$out" >"$out.log" 2>&1; then
    echo "cannot build the driver:"
    head -n 30 "$out.log"
    exit 1
  fi
}
