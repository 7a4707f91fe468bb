# The REPL on a real terminal (tmux), entries as a user makes them: Tab
# after dtype= offers dtypes and after axes= the axes of the meshes; a
# multi-line `def` is one history entry (Up recalls it whole, Enter runs
# it again); the history file is written after each entry; Ctrl-D at a
# continuation prompt cancels the entry, not the session; an entry typed
# with pdb's `!` is kept with it.
# timeout: 60
. tests/_tmux.sh
# in_history GREP-ARGS: the history file has the line within 5 s (it is
# written once the entry has run, just after its output)
in_history() {
  for _ in $(seq 50); do
    grep -q "$@" "$tmp/.shmapi_history" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
tm new-session -d -s t -x 150 -y 60 "env HOME='$tmp' TERM=xterm '$SHMAPI'; echo \"EXITED \$?\"; sleep 60"
wait_for -F 'shm>'

# dtypes after dtype=
text 'a = full[shape=(2,), value=1, dtype=bf'; keys Tab
wait_for -F 'shm> a = full[shape=(2,), value=1, dtype=bf16'
text ']'; keys Enter; ready
text 'print a'; keys Enter; ready
wait_for -xF '[1 1]'
# the axes of the meshes after axes=, also inside a tuple
text 'mesh grid = {rows: 2, cols: 2}'; keys Enter; ready
text 'z = psum[axes=ro'; keys Tab
wait_for -F 'shm> z = psum[axes=rows'
text ', co'; keys C-u
text 'z = psum[axes=(rows, co'; keys Tab
wait_for -F 'shm> z = psum[axes=(rows, cols'
keys C-u

# a def over three lines: one entry, in the history file at once
text 'def twice(a) {'; keys Enter; ready
wait_for -F '...>'
text '  b = add a a'; keys Enter; ready
text '  return b'; keys Enter; ready
text '}'; keys Enter; ready
text 'print "defined"'; keys Enter; ready
wait_for -xF 'defined'
# (libedit's file escapes a space as \040)
in_history -F 'print\040"defined"' || fail "the history file lacks the last entry before the session ends"
grep -qF 'twice' "$tmp/.shmapi_history" || fail "the history file lacks the def"
keys Up Up
wait_for -F 'shm> def twice(a) {'
keys Enter; ready
text 'print "again"'; keys Enter; ready
wait_for -xF 'again'
[ "$(pane | grep -c '\.\.\.> ')" = 3 ] || fail "recalling the def asked for more lines (want the 3 continuation prompts of the first time only)"
text 'r = twice 21'; keys Enter; ready
text 'print r'; keys Enter; ready
wait_for -xF '42'

# pdb's `!` at shm>: the line runs as a statement, and the history keeps the `!`
text '!print "banged"'; keys Enter; ready
wait_for -xF 'banged'
in_history '^!print' || fail "the history file lost the ! of an entry"

# Ctrl-D at a continuation prompt: the entry goes, the session stays
text 'def unfinished(a) {'; keys Enter; ready
wait_for -F '...>'
keys C-d
wait_for -xF '(entry cancelled)'
text 'print "still here"'; keys Enter; ready
wait_for -xF 'still here'
text 'unfinished 1'; keys Enter; ready
wait_for -F "unknown primitive or function 'unfinished'"
keys C-d
wait_for -xF 'EXITED 0'
echo "terminal entries: dtype and axis completion, multi-line history, Ctrl-D at a continuation"
