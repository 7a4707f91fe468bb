# What `show` prints is itself valid input: showing the re-read definition
# prints the same text again, for both function forms, closures, results,
# literals and nested lambdas.
set -u
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prelude='w = [1.0, 2.0]'
cat > "$tmp/a.shm" <<SHM
$prelude
def f(a:f32[2], b:f32[2]) {
  c = add a b
  d = mul c w
  e = add d 1.0
  return d, e
}
show f
def k(a:i32[]) {
  def one(x) { y = add x 1; return y }
  def two(x) { y = mul x 2; return y }
  r = cond[branches=(one, two)] a a
  s = fori_loop[lower=0, upper=3, body={ lambda ; i:i32[] c:i32[]. let d:i32[] = add c i in (d,) }] r
  return s
}
show k
def g = { lambda ; p:f32[2]. let q:f32[2] = neg p in q }
show g
SHM
"$SHMAPI" "$tmp/a.shm" > "$tmp/first.txt" 2>&1 || fail "first run failed: $(cat "$tmp/first.txt")"
# re-read every shown definition and show it again
{ echo "$prelude"; cat "$tmp/first.txt"; echo "show f"; echo "show k"; echo "show g"; } > "$tmp/b.shm"
"$SHMAPI" "$tmp/b.shm" > "$tmp/second.txt" 2>&1 || fail "shown text is not valid input: $(cat "$tmp/second.txt")"
# second.txt = the shown text printed by its own shows (none) + the three shows
if ! diff -u "$tmp/first.txt" "$tmp/second.txt"; then fail "show output changed after a round trip"; fi
echo ok
