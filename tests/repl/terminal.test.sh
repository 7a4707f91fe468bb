# The REPL on a real terminal, driven through tmux: Tab completion of
# keywords, commands, primitives, parameters and names; Ctrl-C at the
# prompt and during a statement; and history recalled in a second session
# from ~/.shmapi_history (HOME is a fresh temporary directory).
# timeout: 60
. tests/_tmux.sh
sock="$tmp/tmux1.sock"
start() {
  tm new-session -d -s t -x 150 -y 60 \
    "env HOME='$tmp' TERM=xterm '$SHMAPI'; echo \"EXITED \$?\"; sleep 60"
  wait_for -F 'shm>'
}

# ---- session 1 ----
start
text 'mesh m = {i: 2}'; keys Enter; ready
text 'longname = full[shape=(2,), value=7, dtype=i32]'; keys Enter; ready
wait_for -F 'shm> longname ='
# a command
text 'wh'; keys Tab
wait_for -F 'shm> whos'
keys Enter; ready
wait_for -F 'longname  array'
# a primitive, then its parameters
text 'y = aran'; keys Tab
wait_for -F 'shm> y = arange'
text '[sto'; keys Tab
wait_for -F 'shm> y = arange[stop='
text '3, dt'; keys Tab
wait_for -F 'shm> y = arange[stop=3, dtype='
text 'f32]'; keys Enter; ready
text 'y'; keys Enter; ready
wait_for -xF '[0. 1. 2.]'
# psum[a<Tab> gives axes=
text 'z = psum[a'; keys Tab
wait_for -F 'shm> z = psum[axes='
keys C-u
# a variable name, then a function name
text 'print longn'; keys Tab
wait_for -F 'shm> print longname'
keys Enter; ready
wait_for -xF '[7 7]'
text 'def twice(a) { b = add a a; return b }'; keys Enter; ready
text 'r = twi'; keys Tab
wait_for -F 'shm> r = twice'
text 'longname'; keys Enter; ready
text 'r'; keys Enter; ready
wait_for -xF '[14 14]'
# the debugger's prompt and its commands complete too
text 'debug twice longname'; keys Enter; ready
wait_for -F '(shdb)'
text 'whe'; keys Tab
wait_for -F '(shdb) where'
keys Enter; ready
wait_for -F '> <stdin>:1 in twice'
text 'p longn'; keys Tab
wait_for -F '(shdb) p longname'
keys Enter; ready
text 'c'; keys Enter; ready
wait_for -F "shm> print longname"
# Ctrl-C at the prompt drops the line; the session goes on
text 'garbage that is never run'; wait_for -F 'shm> garbage that is never run'; keys C-c; ready
text 'print "after ctrl-c"'; keys Enter; ready
wait_for -xF 'after ctrl-c'
# ... also when it comes while the line is still being taken in (typed
# ahead): what is left of the line when Enter ends it is not run
text 'print "never printed"'; keys C-c Enter; ready
text 'print "marker"'; keys Enter; ready
wait_for -xF 'marker'
[ "$(count -xF 'never printed')" = 0 ] || fail "a line Ctrl-C interrupted was run"
# Ctrl-C stops a running statement and returns to the prompt
text 'def bd(i, c) { d = add c 1; return d }'; keys Enter; ready
text 'k = fori_loop[lower=0, upper=2000000000, body=bd] 0'; keys Enter
sleep 0.5
keys C-c
wait_for -F 'error: interrupted'
ready
# ... and a while whose predicate never turns false, in a shard_map body
text 'mesh m = {i: 4}'; keys Enter; ready
text 'def yes(c) { s = reduce_sum[axes=(0,)] c; p = ge s 0; return p }'; keys Enter; ready
text 'def inc(c) { d = add c 1; return d }'; keys Enter; ready
text '@shard_map[mesh=m, in_specs=P(i), out_specs=P(i)]'; keys Enter; ready
text 'def spin(x) { y = while[cond_jaxpr=yes, body_jaxpr=inc] x; return y }'; keys Enter; ready
text 'v = [0, 1, 2, 3]'; keys Enter; ready
text 'z = spin v'; keys Enter
sleep 0.5
keys C-c
for _ in $(seq 150); do
  [ "$(count -F 'error: interrupted')" -ge 2 ] && break
  sleep 0.1
done
[ "$(count -F 'error: interrupted')" -ge 2 ] || fail "Ctrl-C did not stop the while"
ready
text 'print "history works"'; keys Enter; ready
wait_for -xF 'history works'
keys C-d
wait_for -xF 'EXITED 0'
[ -s "$tmp/.shmapi_history" ] || fail "no history file was written"
tm kill-server >/dev/null 2>&1
sock="$tmp/tmux2.sock"          # a server of its own: the first one may still be leaving

# ---- session 2: history from the file ----
start
keys Up
wait_for -F 'shm> print "history works"'
keys Enter; ready
wait_for -xF 'history works'
# further back: the statement Ctrl-C stopped last
for _ in 1 2 3 4 5; do
  keys Up
  sleep 0.2
  pane | grep -qF 'shm> z = spin v' && break
done
wait_for -F 'shm> z = spin v'
keys C-u
text 'quit'; keys Enter
wait_for -xF 'EXITED 0'
echo "terminal session: completion, Ctrl-C and history work"
exit 0
