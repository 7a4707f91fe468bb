# The C example of README.md and docs/c_api.md (docs/examples/embed.c),
# built against $SHMAPI's libshmapi.so and run: it prints what
# docs/examples/embed_c.txt, shown beside it, says.  Skips (77) only when
# the build directory has no libshmapi.so.
# timeout: 120
set -euo pipefail
source tests/api/_client.sh
build_client "$tmp/embed" docs/examples/embed.c
OPENBLAS_NUM_THREADS=1 "$tmp/embed" >"$tmp/out"
diff -u docs/examples/embed_c.txt "$tmp/out"
