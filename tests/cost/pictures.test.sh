# The timeline pictures the README shows (docs/img/) are what shmapi
# draws now: regenerate each and compare.  (To update them, run the two
# commands below with the docs/img/ paths.)
# timeout: 60
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ex in matmul_allgather_8k collective_matmul_8k; do
  "$SHMAPI" --abstract --trace "$tmp/$ex.svg" --trace-span 460e-6 "examples/$ex.shm"
  if ! cmp -s "$tmp/$ex.svg" "docs/img/$ex.svg"; then
    echo "docs/img/$ex.svg is not what shmapi draws now:"
    diff "docs/img/$ex.svg" "$tmp/$ex.svg" | head -20
    exit 1
  fi
  python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" "$tmp/$ex.svg"
done
echo "the pictures are current and well-formed"
