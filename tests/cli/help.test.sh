# shmapi --help (and -h) prints a usage summary on stdout and exits 0.
# The exact text may grow with new options, so only its essentials are checked.
fail() { echo "FAIL: $*"; exit 1; }
for opt in --help -h; do
  out=$("$SHMAPI" $opt 2>/tmp/shm_help_err.$$) || fail "$opt exited with $?"
  err=$(cat /tmp/shm_help_err.$$); rm -f /tmp/shm_help_err.$$
  [ -z "$err" ] || fail "$opt wrote to stderr: $err"
  for want in 'usage: shmapi' '-c ' '--check' '--version' '--help' '-i '; do
    case "$out" in *"$want"*) ;; *) fail "$opt output lacks '$want'";; esac
  done
done
# --help wins over everything else on the line, even bad usage after it
"$SHMAPI" --help --no-such-option >/dev/null 2>&1 || fail "--help then a bad option did not exit 0"
echo ok
