# The command line under ranks: --ranks R runs mpirun and prints the
# one-process output; a runtime error on one rank is reported once, with
# exit status 1; a rank killed in the middle of a run stops the others
# (no hang); --max-memory bounds each rank, and by default each gets its
# share of the machine's half; the REPL and debugger refuse
# ranks; --stats and --time
# under ranks are the one-process reports plus the bytes that crossed.  Skips
# without mpirun or with a shmapi built without MPI.
# timeout: 300
set -euo pipefail
command -v mpirun >/dev/null || { echo "skip: mpirun is not on PATH"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
# its own session directory (another mpirun at once, under one
# /tmp/ompi.HOST.UID, may remove it as this one starts)
export OMPI_MCA_orte_tmpdir_base=$tmp
# (under the sanitizers: Open MPI's plugins leave allocations LeakSanitizer
# cannot name; shmapi checks its own memory instead, see ranks.test.py)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" SHMAPI_FAIL_ALLOC=0
root=(); [[ $(id -u) == 0 ]] && root=(--allow-run-as-root)
mpi=(mpirun --quiet --oversubscribe --bind-to none "${root[@]}")

# A program on mesh {i: 4} whose devices 0 and 1 take branch low, whose
# body is $1 (binding b), and devices 2 and 3 branch high (the identity).
branchy() {
  cat <<SHM
mesh m = {i: 4}
def low(a) {
$1
  return b
}
def high(a) { return a }
@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]
def f(a) {
  k = axis_index[axes=i]
  p = lt k 2
  y = cond[branches=(high, low)] p a
  return y
}
x = arange[stop=4, dtype=f32]
c = f x
SHM
}

if "$SHMAPI" --ranks 2 -c 'print 1' 2>"$tmp/err" | grep -q .; then :; else
  grep -q "built without MPI" "$tmp/err" && { echo "skip: $SHMAPI was built without MPI"; exit 77; }
  cat "$tmp/err"; exit 1
fi

# --ranks: the one-process bytes
"$SHMAPI" examples/tour.shm >"$tmp/one"
"$SHMAPI" --ranks 3 examples/tour.shm >"$tmp/three"
cmp "$tmp/one" "$tmp/three"

# an error inside a body, on device 2 only (rank 1 of 2): once, exit 1
cat >"$tmp/bad.shm" <<'SHM'
mesh m = {i: 4}
@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]
def f(x) {
  print "before", x
  k = axis_index[axes=i]
  n, s = while[cond_jaxpr={ lambda ; a:i32[]{i} b:i32[]. let c:bool[]{i} = eq a 2 in (c,) },
            body_jaxpr={ lambda ; a:i32[]{i} b:i32[]. let in (a, b) }] k 0
  y = psum[axes=i] x
  print "after", y
  return x
}
w = [1, 2, 3, 4]
z = f w
print "not reached"
SHM
set +e
"$SHMAPI" --max-steps 20 "$tmp/bad.shm" >"$tmp/one.out" 2>"$tmp/one.err"; one=$?
"${mpi[@]}" -np 2 "$SHMAPI" --max-steps 20 "$tmp/bad.shm" >"$tmp/two.out" 2>"$tmp/two.err"; two=$?
set -e
[[ $one == 1 && $two != 0 ]] || { echo "exit statuses $one and $two"; exit 1; }
cmp "$tmp/one.out" "$tmp/two.out"
cmp "$tmp/one.err" "$tmp/two.err"
[[ $(grep -c "error:" "$tmp/two.err") == 1 ]]
grep -q "max-steps" "$tmp/two.err"        # (the error meant, not a syntax error)
grep -q "^before$" "$tmp/two.out"

# a rank killed while the others wait for it: the run ends, non-zero
cat >"$tmp/long.shm" <<'SHM'
mesh m = {i: 2}
def step(t:i32[], c:f32[]) {
  d = pbroadcast[axes=(i,)] c
  e = psum[axes=i] d
  return e
}
@shard_map[mesh=m, in_specs=(), out_specs=P()]
def f() {
  n = fori_loop[lower=0, upper=100000000, body=step] 1.0
  return n
}
r = f
SHM
start=$(date +%s)
SHMAPI_MPI_TIMEOUT=60 "${mpi[@]}" -np 2 "$SHMAPI" "$tmp/long.shm" >/dev/null 2>"$tmp/long.err" &
run=$!
victim=
for _ in $(seq 100); do
  sleep 0.2
  victim=$(pgrep -P "$run" | tail -n 1 || true)       # a rank: a child of mpirun
  [[ -n $victim ]] && break
done
[[ -n $victim ]] || { echo "no rank started"; exit 1; }
sleep 1
kill -9 "$victim"
set +e
wait "$run"; status=$?
set -e
[[ $status != 0 ]] || { echo "the run survived a dead rank"; exit 1; }
(( $(date +%s) - start < 120 )) || { echo "the run took too long to stop"; exit 1; }

# --max-memory bounds each rank: 4 devices each holding 4 MiB at once pass
# 10 MiB in one process, not as 2 ranks of 2 devices; 6 MiB is too little
# for either, and the error is reported once
cat >"$tmp/mem.shm" <<'SHM'
mesh m = {i: 4}
@shard_map[mesh=m, in_specs=(), out_specs=P()]
def f() {
  k = axis_index[axes=i]
  kf = convert_element_type[new_dtype=f32] k
  big = broadcast_in_dim[shape=(1048576,), broadcast_dimensions=()] kf
  sq = mul big big
  s = reduce_sum[axes=(0,)] sq
  t = psum[axes=i] s
  return t
}
t = f
print t
SHM
set +e
"$SHMAPI" --max-memory 10M "$tmp/mem.shm" >/dev/null 2>"$tmp/mem1.err"; m1=$?
"${mpi[@]}" -np 2 "$SHMAPI" --max-memory 10M "$tmp/mem.shm" >"$tmp/mem2.out" 2>"$tmp/mem2.err"; m2=$?
"${mpi[@]}" -np 2 "$SHMAPI" --max-memory 6M "$tmp/mem.shm" >/dev/null 2>"$tmp/mem3.err"; m3=$?
set -e
[[ $m1 == 1 && $m2 == 0 && $m3 == 1 ]] || { echo "--max-memory statuses $m1 $m2 $m3"; cat "$tmp/mem2.err"; exit 1; }
grep -q "out of memory.*see --max-memory" "$tmp/mem1.err"
[[ $(cat "$tmp/mem2.out") == 14680064.0 ]] || { echo "2 ranks under 10M printed: $(cat "$tmp/mem2.out")"; exit 1; }
[[ $(grep -c "error: out of memory" "$tmp/mem3.err") == 1 ]] || { cat "$tmp/mem3.err"; exit 1; }

# the default memory limit, half of the machine, is shared among the ranks
# on it: 2 ranks each get a quarter, and an array of 3/8 of the machine is
# refused (not allocated) with that limit named, as four ranks on one
# machine were once each allowed half of it and killed by the kernel
half=$(( $(getconf _PHYS_PAGES) * $(getconf PAGE_SIZE) / 2 ))
echo "x = full[shape=($(( half * 3 / 4 / 4 )),), value=1.0]" >"$tmp/default.shm"
set +e
"${mpi[@]}" -np 2 "$SHMAPI" "$tmp/default.shm" >/dev/null 2>"$tmp/default.err"; d2=$?
set -e
[[ $d2 == 1 ]] || { echo "an array of 3/8 of the machine on 2 ranks: status $d2"; cat "$tmp/default.err"; exit 1; }
grep -q "out of memory on rank 0: .* ([0-9]* and $(( half / 2 )) bytes; see --max-memory)" "$tmp/default.err" ||
  { echo "not the limit of $(( half / 2 )) bytes per rank:"; cat "$tmp/default.err"; exit 1; }
# ... and every rank that hits its limit names it: rank 0 in the error,
# the others in one note (4 ranks by --ranks: a quarter of the half each,
# and the array takes 3/8 of the half)
echo "x = full[shape=($(( half * 3 / 8 / 4 )),), value=1.0]" >"$tmp/default4.shm"
set +e
"$SHMAPI" --ranks 4 "$tmp/default4.shm" >/dev/null 2>"$tmp/default4.err"; d4=$?
set -e
[[ $d4 == 1 ]] || { echo "an array of 3/16 of the machine on 4 ranks (each allowed 1/8): status $d4"; cat "$tmp/default4.err"; exit 1; }
[[ $(grep -c "error: out of memory on rank 0: .* ([0-9]* and $(( half / 4 )) bytes; see --max-memory)" "$tmp/default4.err") == 1 ]] ||
  { echo "4 ranks: not rank 0's limit of $(( half / 4 )) bytes:"; cat "$tmp/default4.err"; exit 1; }
grep -q "^shmapi: note: out of memory on ranks 1-3 too: .* would pass each one's limit of .* ([0-9]* and $(( half / 4 )) bytes)$" "$tmp/default4.err" ||
  { echo "4 ranks: ranks 1-3 do not name their limits:"; cat "$tmp/default4.err"; exit 1; }
# ... inside a body, where each rank holds its own devices: under 2 ranks
# and 3M, both ranks fail at their first 4 MiB block (mem.shm): one error
# (rank 0's, with its traceback), and rank 1's limit in a note
set +e
"$SHMAPI" --ranks 2 --max-memory 3M "$tmp/mem.shm" >/dev/null 2>"$tmp/mem4.err"; m4=$?
set -e
[[ $m4 == 1 ]] || { echo "--ranks 2 --max-memory 3M: status $m4"; exit 1; }
[[ $(grep -c "error: out of memory on rank 0: 4.0 MiB more would pass the limit of 3.0 MiB" "$tmp/mem4.err") == 1 ]] ||
  { cat "$tmp/mem4.err"; exit 1; }
grep -q "^shmapi: note: out of memory on rank 1 too: 4.0 MiB more would pass its limit of 3.0 MiB (4194496 and 3145728 bytes)$" \
  "$tmp/mem4.err" || { cat "$tmp/mem4.err"; exit 1; }

# one-process modes refuse ranks
set +e
"${mpi[@]}" -np 2 "$SHMAPI" --debug examples/psum.shm >/dev/null 2>"$tmp/debug.err" </dev/null; s2=$?
"$SHMAPI" --ranks 0 examples/psum.shm 2>"$tmp/zero.err"; s3=$?
set -e
[[ $s2 == 2 && $s3 == 2 ]] || { echo "statuses $s2 $s3"; exit 1; }
grep -q "the REPL and the debugger run in one process" "$tmp/debug.err"

# --time across ranks: rank 0's model is the one-process model, plus the
# bytes that crossed; where rank 0 cannot see the whole run, an error
for ex in tour ffn_2d moe collective_matmul; do
  [[ -f examples/$ex.shm ]] || { echo "examples/$ex.shm is gone"; exit 1; }
  "$SHMAPI" --time "examples/$ex.shm" >"$tmp/t1"
  for n in 2 4; do
    "${mpi[@]}" -np $n "$SHMAPI" --time "examples/$ex.shm" >"$tmp/tn"
    grep -v "^across $n ranks, .* crossed between them$" "$tmp/tn" | cmp - "$tmp/t1"
    grep -q "^across $n ranks, .* crossed between them$" "$tmp/tn"
  done
done
branchy '  b = neg a' >"$tmp/varying.shm"
set +e
"${mpi[@]}" -np 2 "$SHMAPI" --time "$tmp/varying.shm" >/dev/null 2>"$tmp/time.err"; s1=$?
"${mpi[@]}" -np 4 "$SHMAPI" --time examples/train_mlp.shm >/dev/null 2>"$tmp/time2.err"; s2=$?
set -e
[[ $s1 == 1 && $s2 == 1 ]] || { echo "--time across ranks: statuses $s1 $s2"; exit 1; }
grep -q "cannot see a branch or loop that only some devices take" "$tmp/time.err"
grep -q "this mesh has 1 devices for 4 ranks" "$tmp/time2.err"
"${mpi[@]}" -np 2 "$SHMAPI" --time --abstract "$tmp/varying.shm" >"$tmp/abs2"
"$SHMAPI" --time --abstract "$tmp/varying.shm" | cmp - "$tmp/abs2"
grep -q -- "--ranks needs a number of processes" "$tmp/zero.err"

# --stats: the one-process table, and the bytes that crossed ranks
"$SHMAPI" --stats examples/psum.shm >"$tmp/s1"
"${mpi[@]}" -np 2 "$SHMAPI" --stats examples/psum.shm >"$tmp/s2"
grep -v "crossed between them" "$tmp/s2" | cmp - "$tmp/s1"
grep -q "^across 2 ranks, .* crossed between them$" "$tmp/s2"
# ... with its rows by mesh axes, on a 2-D mesh
"$SHMAPI" --stats examples/ffn_2d.shm >"$tmp/s1"
"${mpi[@]}" -np 4 "$SHMAPI" --stats examples/ffn_2d.shm >"$tmp/s4"
grep -v "crossed between them" "$tmp/s4" | cmp - "$tmp/s1"
grep -q "^  over i  *25 " "$tmp/s4"

# a shard_map's result read by another with the same tiling stays as each
# rank's blocks: nothing but the psum's bytes crosses ranks (assembling
# x on every rank would move 96 KiB)
cp bench/workloads/ranks_chain.shm "$tmp/chain.shm"
sed -i 's/8388608/1024/' "$tmp/chain.shm"
"$SHMAPI" "$tmp/chain.shm" >"$tmp/c1"
"${mpi[@]}" -np 4 "$SHMAPI" --stats "$tmp/chain.shm" >"$tmp/c4"
head -n 1 "$tmp/c4" | cmp - "$tmp/c1"
crossed=$(sed -n 's/^across 4 ranks, \([0-9]*\) B crossed between them$/\1/p' "$tmp/c4")
[[ -n $crossed && $crossed -lt 100 ]] || { echo "chain: crossed '$crossed'"; tail -n 1 "$tmp/c4"; exit 1; }

# ... and elementwise primitives at the top level on such values run on
# each rank's blocks: still only the psum's bytes cross
cat >"$tmp/chain_ew.shm" <<'SHM'
mesh m = {i: 8}
@shard_map[mesh=m, in_specs=(), out_specs=P(i)]
def make() {
  k = axis_index[axes=i]
  kf = convert_element_type[new_dtype=f32] k
  big = broadcast_in_dim[shape=(1024,), broadcast_dimensions=()] kf
  return big
}
@shard_map[mesh=m, in_specs=P(i), out_specs=P()]
def total(b) {
  s = reduce_sum[axes=(0,)] b
  t = psum[axes=i] s
  return t
}
x = make
y = mul x 2.0
z = add y x
w = exp z
t = total w
print t
SHM
"$SHMAPI" "$tmp/chain_ew.shm" >"$tmp/e1"
"${mpi[@]}" -np 4 "$SHMAPI" --stats "$tmp/chain_ew.shm" >"$tmp/e4"
head -n 1 "$tmp/e4" | cmp - "$tmp/e1"
crossed=$(sed -n 's/^across 4 ranks, \([0-9]*\) B crossed between them$/\1/p' "$tmp/e4")
[[ -n $crossed && $crossed -lt 100 ]] || { echo "elementwise chain: crossed '$crossed'"; tail -n 1 "$tmp/e4"; exit 1; }

# print[global] inside a branch that varies by device: one process
# assembles the blocks the branch's devices hold; across ranks the others
# are not there, so it is an error saying so (the prints before it hold)
branchy '  print "in branch", a
  print[global=True] a
  b = a' >"$tmp/branch.shm"
"$SHMAPI" "$tmp/branch.shm" >"$tmp/b1"
grep -q "global, as P(i) assembles it:" "$tmp/b1"
set +e
"${mpi[@]}" -np 2 "$SHMAPI" "$tmp/branch.shm" >"$tmp/b2" 2>"$tmp/b2.err"; rc=$?
set -e
[[ $rc != 0 ]] || { echo "print[global] in a varying branch across ranks: exit 0"; exit 1; }
grep -q "branch.shm:4:3: error: print\[global\]: across ranks, a global view is printed only where every device runs" "$tmp/b2.err"
head -n 5 "$tmp/b1" | cmp - "$tmp/b2"
echo ok
