# The fabric's deadlock guard, checked directly (see _fabric_deadlock.c):
# a collective that only part of its group reaches is a runtime error
# naming the collective, the devices that reached it and those that did
# not.  Builds the driver against the interpreter's own static libraries,
# found beside $SHMAPI in its meson build directory (skips without them).
# timeout: 120
set -euo pipefail
build=$(dirname "$SHMAPI")
if [[ ! -f $build/libshmcore.a || ! -f $build/libshmgen.a ]]; then
  echo "no libshmcore.a beside $SHMAPI"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a sanitized build (the second CI run) needs the driver linked the same way
flags=()
nm "$build/libshmcore.a" >"$tmp/syms" 2>/dev/null || true
if grep -q __asan_ "$tmp/syms"; then flags+=(-fsanitize=address,undefined); fi
if ! cc -std=c11 -D_GNU_SOURCE -g "${flags[@]}" -Isrc -I"$build" tests/limits/_fabric_deadlock.c \
     "$build/libshmcore.a" "$build/libshmgen.a" $(pkg-config --libs libedit) -lm -ldl \
     -o "$tmp/driver" >"$tmp/cc.log" 2>&1; then
  echo "cannot build the driver:"
  head -n 30 "$tmp/cc.log"
  exit 1
fi
"$tmp/driver" >"$tmp/out"
cat >"$tmp/want" <<'WANT'
psum j, devices 0 2 3: deadlock: psum over axis j would hang: device 0 reached it, but device 1 of the same group did not (another path through a branch or loop)
psum j, devices 2 3: ran
psum (i, j), devices 0 2 3: deadlock: psum over axes i, j would hang: devices 0, 2, 3 reached it, but device 1 of the same group did not (another path through a branch or loop)
all_gather j, devices 0 2 3: deadlock: all_gather over axis j would hang: device 0 reached it, but device 1 of the same group did not (another path through a branch or loop)
pbroadcast j, devices 0 2 3: ran
psum j, all devices: ran
WANT
diff -u "$tmp/want" "$tmp/out"
