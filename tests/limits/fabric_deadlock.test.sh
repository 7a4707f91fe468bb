# The fabric's deadlock guard, checked directly (see _fabric_deadlock.c):
# a collective that only part of its group reaches is a runtime error
# naming the collective, the devices that reached it and those that did
# not.  Builds the driver against the interpreter's own static libraries,
# found beside $SHMAPI in its meson build directory (skips without them):
# only the layers the fabric stands on (libshmrun, libshmrules, libshmbase),
# so the test also shows that the fabric links without the front end, the
# checker or the tools.
# timeout: 120
set -euo pipefail
build=$(dirname "$SHMAPI")
libs=("$build/libshmrun.a" "$build/libshmrules.a" "$build/libshmbase.a")
if [[ ! -f ${libs[0]} || ! -f ${libs[1]} || ! -f ${libs[2]} ]]; then
  echo "no libshmrun.a, libshmrules.a, libshmbase.a beside $SHMAPI"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a sanitized build (the second CI run) needs the driver linked the same way
flags=()
nm "${libs[0]}" >"$tmp/syms" 2>/dev/null || true
if grep -q __asan_ "$tmp/syms"; then flags+=(-fsanitize=address,undefined); fi
if ! cc -std=c11 -D_GNU_SOURCE -g "${flags[@]}" -Isrc -I"$build" tests/limits/_fabric_deadlock.c \
     "${libs[@]}" -lm -ldl -lpthread \
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
