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
source tests/_driver.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build_driver "$tmp/driver" tests/limits/_fabric_deadlock.c shmrun shmrules shmbase
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
