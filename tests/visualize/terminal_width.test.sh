# On a real terminal (tmux) visualize scales its picture to the terminal's
# width: on 60 columns and on 140 the same layout fits, and the wider
# terminal gets the wider boxes; box-drawing characters in a UTF-8 locale,
# ASCII in the C locale.
# timeout: 60
. tests/_tmux.sh
fail() { echo "FAIL: $*"; exit 1; }

# draw WIDTH LOCALE: the picture's lines, as the terminal shows them
draw() {
  local s="t$1${2//[^A-Za-z0-9]/}"
  tm new-session -d -s "$s" -x "$1" -y 50 "env HOME='$tmp' LC_ALL=$2 TERM=xterm '$SHMAPI'; sleep 60"
  for line in 'mesh m = {i: 4, j: 2}' 'a0 = arange[stop=128, dtype=f32]' \
              'a = reshape[new_sizes=(8, 16)] a0' 'visualize[mesh=m, spec=P(i, j)] a' 'print "drawn"'; do
    for _ in $(seq 150); do        # (the prompt first: typing ahead races the line editor)
      tm capture-pane -p -t "$s" | grep -v '^$' | tail -n 1 | grep -qx 'shm> \?' && break
      sleep 0.1
    done
    tm send-keys -t "$s" -l "$line"; tm send-keys -t "$s" Enter
  done
  for _ in $(seq 100); do
    tm capture-pane -p -t "$s" | grep -qx 'drawn' && break
    sleep 0.1
  done
  tm capture-pane -p -t "$s" > "$tmp/$1.$2"
  grep -qx 'drawn' "$tmp/$1.$2" || { cat "$tmp/$1.$2"; fail "the $1-column terminal never finished the picture"; }
}
draw 60 C.UTF-8
draw 140 C.UTF-8
draw 60 C

# widest picture line in a capture (characters, not bytes); boxes: its first character
widths=$(/usr/bin/python3 - "$tmp" <<'PY'
import sys
d = sys.argv[1]
for name in ("60.C.UTF-8", "140.C.UTF-8", "60.C"):
    lines = open(f"{d}/{name}", encoding="utf-8").read().splitlines()
    pic = [l.rstrip() for l in lines if l[:1] in "┌│├└+|"]
    print(name, max(map(len, pic)) if pic else 0, pic[0][:1] if pic else "-", sum(l.count("CPU") for l in pic))
PY
)
echo "$widths"
read -r _ w60 c60 n60 _ w140 c140 n140 _ wc cc nc <<<"$(echo $widths)"
[ "$n60" = 8 ] && [ "$n140" = 8 ] && [ "$nc" = 8 ] || fail "a picture does not label the 8 devices' blocks"
((w60 > 20 && w60 <= 60)) || fail "on 60 columns the picture is $w60 wide"
((w140 > w60 && w140 <= 140)) || fail "on 140 columns the picture is $w140 wide (on 60: $w60)"
[ "$c60" = "┌" ] || fail "in a UTF-8 locale the picture is not drawn with box-drawing characters"
[ "$cc" = "+" ] && ((wc <= 60)) || fail "in the C locale the picture is not ASCII within 60 columns"
echo ok
