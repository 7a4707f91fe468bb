# Sourced by the test scripts that drive shmapi on a real terminal through
# tmux.  Skips (77) when tmux is missing; makes $tmp (removed at exit,
# with every tmux server whose socket is in it) and these helpers, which
# act on the session `t` of the server at $sock ($tmp/tmux.sock unless the
# script sets sock after sourcing):
#
#   tm ARGS...           tmux on that server
#   pane                 what the terminal shows (with 500 lines of scrollback)
#   fail MESSAGE         say FAIL and what the terminal shows; exit 1
#   wait_for MODE TEXT   until the terminal shows TEXT (grep MODE: -F somewhere
#                        in a line, -xF a whole line); fail after 15 s
#   count MODE TEXT      how many lines show TEXT
#   keys KEYS...         send keys (Enter, Tab, C-c ...)
#   text STRING          type STRING literally
#   ready                until the terminal's last line is a prompt (shm>, ...>,
#                        (shdb), (com), >>>) waiting for input: typing before
#                        it would race the line editor's start
command -v tmux >/dev/null 2>&1 || { echo "tmux is not installed"; exit 77; }
set -u
tmp=$(mktemp -d)
sock="$tmp/tmux.sock"
tmux_cleanup() {
  local s
  for s in "$tmp"/*.sock; do [[ -S $s ]] && tmux -S "$s" kill-server >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap tmux_cleanup EXIT
tm() { tmux -S "$sock" "$@"; }
pane() { tm capture-pane -p -t t -S -500; }
fail() { echo "--- the terminal:"; pane | grep -v "^$"; echo "FAIL: $*"; exit 1; }
wait_for() {
  for _ in $(seq 150); do
    pane | grep -q "$1" -- "$2" && return 0
    sleep 0.1
  done
  fail "the terminal never showed: $2"
}
count() { pane | grep -c "$1" -- "$2"; }
keys() { tm send-keys -t t "$@"; }
text() { tm send-keys -t t -l "$1"; }
ready() {
  for _ in $(seq 150); do
    pane | grep -v '^$' | tail -n 1 | grep -qE '^(shm>|\.\.\.>|\(shdb\)|\(com\)|>>>) ?$' && return 0
    sleep 0.1
  done
  fail "no prompt came back"
}
