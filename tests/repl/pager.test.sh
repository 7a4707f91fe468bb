# The REPL on a real terminal (tmux, 20 rows) pages what one entry prints
# when it does not fit: the first screenful shows at once, then $PAGER
# gets all of it; what fits is printed as usual and no pager runs.  A
# debugger stop inside the entry ends the paging before its prompt.
# timeout: 60
. tests/_tmux.sh
# the pager: keeps what it is given, counts its runs
cat > "$tmp/pager" <<PG
#!/bin/sh
n=\$(cat "$tmp/runs" 2>/dev/null || echo 0)
echo \$((n + 1)) > "$tmp/runs"
cat > "$tmp/paged.\$n"
echo "PAGER RAN"
PG
chmod +x "$tmp/pager"
tm new-session -d -s t -x 100 -y 20 "env HOME='$tmp' TERM=xterm PAGER='$tmp/pager' '$SHMAPI'; echo \"EXITED \$?\"; sleep 60"
wait_for -F 'shm>'

# fits: no pager
text 'r = arange[stop=40, dtype=f32]'; keys Enter; ready
text 'c = reshape[new_sizes=(40, 1)] r'; keys Enter; ready
text 'print "short"'; keys Enter; ready
wait_for -xF 'short'
[ -e "$tmp/runs" ] && fail "the pager ran for one line of output"

# 40 lines on 20 rows: the first screenful at once, then the pager gets all 40
text 'c'; keys Enter; ready
wait_for -F 'PAGER RAN'
wait_for -F ' [18.]'
[ "$(cat "$tmp/runs")" = 1 ] || fail "the pager ran $(cat "$tmp/runs") times for one entry"
[ "$(wc -l < "$tmp/paged.0")" = 40 ] || fail "the pager got $(wc -l < "$tmp/paged.0") lines, not the 40 printed"
head -1 "$tmp/paged.0" | grep -qxF '[[ 0.]' || fail "the pager's text does not start with the first row"
tail -1 "$tmp/paged.0" | grep -qxF ' [39.]]' || fail "the pager's text does not end with the last row"
pane | grep -qF ' [25.]' && fail "lines past the first screenful reached the terminal besides the pager"
wait_for -F 'shm>'

# a statement whose print stops at a breakpoint: the stop's prompt comes
# after what was printed, with no pager (it fitted)
text 'def twice(a) {'; keys Enter; ready
text '  print "in twice"'; keys Enter; ready
text '  b = add a a'; keys Enter; ready
text '  return b'; keys Enter; ready
text '}'; keys Enter; ready
text 'break twice'; keys Enter; ready
wait_for -F 'Breakpoint 1'
text 'y = twice 2.0'; keys Enter; ready
wait_for -F '(shdb)'
text 'c'; keys Enter; ready
text 'print y'; keys Enter; ready
wait_for -xF '4.0'
[ "$(cat "$tmp/runs")" = 1 ] || fail "the pager ran for short output around a debugger stop"
text 'quit'; keys Enter
wait_for -F 'EXITED 0'
echo ok
