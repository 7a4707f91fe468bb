# Two limits (and one file under the first) that need a generated file or a machine-dependent message:
# a source file over 64 MiB is refused with a clear message (exit 2, as
# for any file that cannot be read), and by default a program may use at
# most half of the machine's memory (--max-memory changes it): an array
# of 4 TB is a clean runtime error, not the OOM killer.
# timeout: 120
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

python3 - "$tmp/big.shm" <<'PY'
import sys
line = b'# ' + b'x' * 1021 + b'\n'
with open(sys.argv[1], 'wb') as f:
    for _ in range(65 * 1024):
        f.write(line)
    f.write(b'print 1\n')
PY
"$SHMAPI" "$tmp/big.shm" >"$tmp/out" 2>"$tmp/err"
rc=$?
if ((rc != 2)) || ! grep -q "is larger than the 64 MiB source limit" "$tmp/err" || [[ -s $tmp/out ]]; then
  echo "source limit: exit $rc"; cat "$tmp/err"; fail=1
fi

# Under the limit, a 12 MiB file is read whole: its buffer grows past the
# size where blocks get mappings of their own (src/base/mem.c) and keeps its text.
python3 - "$tmp/long.shm" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    f.write('a = 40\n')
    for i in range(12 * 1024):
        f.write('# ' + str(i % 10) * 1021 + '\n')
    f.write('b = add a 2\nprint b\n')
PY
"$SHMAPI" "$tmp/long.shm" >"$tmp/out" 2>"$tmp/err"
rc=$?
if ((rc != 0)) || [[ $(cat "$tmp/out") != 42 ]] || [[ -s $tmp/err ]]; then
  echo "12 MiB source: exit $rc"; cat "$tmp/out" "$tmp/err"; fail=1
fi

"$SHMAPI" -c 'x = iota[dtype=f32, shape=(1000000, 1000000), dimension=0]' >"$tmp/out" 2>"$tmp/err"
rc=$?
if ((rc != 1)) || ! grep -q "out of memory: .* would pass the limit of .*see --max-memory)" "$tmp/err"; then
  echo "default memory limit: exit $rc"; cat "$tmp/err"; fail=1
fi

"$SHMAPI" --max-memory 64K -c 'x = iota[dtype=f32, shape=(100, 1000), dimension=0]' >"$tmp/out" 2>"$tmp/err"
rc=$?
if ((rc != 1)) || ! grep -q "would pass the limit of 64.0 KiB (.* and 65536 bytes" "$tmp/err"; then
  echo "--max-memory 64K: exit $rc"; cat "$tmp/err"; fail=1
fi
exit $fail
