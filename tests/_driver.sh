# Sourced by the test scripts that build a C driver against the
# interpreter's static libraries (found in the meson build directory of
# $SHMAPI: src/LAYER/libshmLAYER.a, src/libshmgen.a):
#
#   build_driver OUT SOURCE LIB... [-- EXTRA LINK FLAGS]
#
# links SOURCE with libLIB.a for each LIB (in that order) into OUT,
# with the sanitizers when the libraries were built with them (the second
# CI run); exits 77 (skip) when a library is missing, 1 when the driver
# does not build.  A build with MPI links MPI's libraries too.
build_driver() {
  local out=$1 src=$2 build libs=() extra=() flags=() incs=()
  local d
  for d in src/*/; do incs+=("-I${d%/}"); done
  shift 2
  build=$(dirname "$SHMAPI")
  while (($#)); do
    if [[ $1 == -- ]]; then shift; extra=("$@"); break; fi
    local lib=$build/src/${1#shm}/lib$1.a
    [[ -f $lib ]] || lib=$build/src/lib$1.a
    if [[ ! -f $lib ]]; then
      echo "no lib$1.a in the build directory of $SHMAPI"
      exit 77
    fi
    libs+=("$lib")
    shift
  done
  # (through a file: with pipefail, grep -q closing the pipe early would fail nm)
  nm "${libs[0]}" >"$out.syms" 2>/dev/null || true
  if grep -q __asan_ "$out.syms"; then flags+=(-fsanitize=address,undefined); fi
  # the fabric of a build with MPI (src/run/fabmpi.c) needs MPI's libraries
  nm "${libs[@]}" >"$out.syms" 2>/dev/null || true
  if grep -q ' U MPI_' "$out.syms"; then
    extra+=($(pkg-config --libs ompi-c 2>/dev/null || pkg-config --libs mpi 2>/dev/null || echo -lmpi))
  fi
  if ! cc -std=c11 -D_GNU_SOURCE -g "${flags[@]}" "${incs[@]}" -I"$build" "$src" "${libs[@]}" "${extra[@]}" \
       -lfftw3f -lfftw3 -lm -ldl -lpthread -o "$out" >"$out.log" 2>&1; then
    echo "cannot build the driver:"
    head -n 30 "$out.log"
    exit 1
  fi
}
