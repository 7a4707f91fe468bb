#!/bin/bash
# In a UTF-8 locale visualize draws with box-drawing characters: the same
# picture as the ASCII golden (matmul_basic.out) with each ASCII piece
# replaced by its box-drawing counterpart.
set -u
out=$(LC_ALL=C.UTF-8 "$SHMAPI" tests/visualize/matmul_basic.shm) || { echo "run failed"; exit 1; }
want=$(/usr/bin/python3 - <<'PY'
import re
lines = open("tests/visualize/matmul_basic.out", encoding="utf-8").read().split("\n")
res = []
for ln in lines:
    if re.fullmatch(r"\+[-+]*\+", ln):
        res.append(None)
    else:
        res.append(ln.replace("|", "\u2502"))
# rule lines: first of a picture is the top, a rule after a body line is a
# separator unless the next line is not a body line (then the bottom)
def body(x): return x is not None and x.startswith("\u2502")
out = []
for k, ln in enumerate(lines):
    if res[k] is not None:
        out.append(res[k]); continue
    prev_body = k > 0 and body(res[k - 1])
    next_body = k + 1 < len(res) and body(res[k + 1])
    l, j, r = ("\u251c", "\u253c", "\u2524") if prev_body and next_body else \
              ("\u250c", "\u252c", "\u2510") if next_body else ("\u2514", "\u2534", "\u2518")
    s = ln[1:-1].replace("-", "\u2500").replace("+", j)
    out.append(l + s + r)
print("\n".join(out), end="")
PY
)
if [[ "$out" != "$want" ]]; then
  diff <(echo "$want") <(echo "$out") | head -30
  exit 1
fi
grep -q "┌" <<<"$out" || { echo "no box-drawing characters"; exit 1; }
exit 0
