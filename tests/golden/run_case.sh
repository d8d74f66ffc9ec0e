#!/usr/bin/env bash
# Run one golden CLI case.
#   usage: run_case.sh <trainsim binary> <case dir>
# A case folder holds:
#   cmd       the arguments, shell words; may use $OUT (an empty temp dir for
#             output files). Runs with the case folder as working directory,
#             so inputs are named relative to it and messages stay stable.
#   stdout    expected standard output (exact), optional
#   stderr    expected standard error (exact), optional
#   exit      expected exit code (default 0)
#   files/    expected output files, compared byte for byte with $OUT/<name>
#   check     optional bash script run after the command with OUT, STDOUT, TRAINSIM (the binary),
#             STDERR set; for numeric checks with stated tolerances
# A failing command (exit != 0) must leave $OUT empty: no partial output.
set -u
bin=$1
case_dir=$2
name=$(basename "$case_dir")
OUT=$(mktemp -d)
STDOUT=$(mktemp)
STDERR=$(mktemp)
# Remove the outputs however the run ends (some cases write GBs): normal exit,
# or a signal from ctest's timeout or ^C (the signal trap exits, which runs EXIT).
cleanup() { rm -rf "$OUT" "$STDOUT" "$STDERR"; }
trap cleanup EXIT
trap 'exit 130' INT HUP TERM
TRAINSIM=$bin
export OUT STDOUT STDERR TRAINSIM
fail=0

cd "$case_dir" || exit 1
args=$(cat cmd)
eval "set -- $args"
"$bin" "$@" >"$STDOUT" 2>"$STDERR" </dev/null
rc=$?
want_rc=0
[ -f exit ] && want_rc=$(cat exit)

if [ "$rc" != "$want_rc" ]; then
  echo "[$name] exit code $rc, expected $want_rc"
  echo "--- stderr:"; head -c 2000 "$STDERR"
  fail=1
fi
if [ -f stdout ] && ! cmp -s stdout "$STDOUT"; then
  echo "[$name] stdout differs from expected (first lines of diff):"
  diff stdout "$STDOUT" | head -40
  fail=1
fi
if [ -f stderr ] && ! cmp -s stderr "$STDERR"; then
  echo "[$name] stderr differs from expected:"
  diff stderr "$STDERR" | head -40
  fail=1
fi
if [ -d files ]; then
  for f in files/*; do
    b=$(basename "$f")
    if [ ! -f "$OUT/$b" ]; then
      echo "[$name] expected output file $b was not written"; fail=1
    elif ! cmp -s "$f" "$OUT/$b"; then
      echo "[$name] output file $b differs:"; diff "$f" "$OUT/$b" | head -40; fail=1
    fi
  done
fi
if [ "$rc" != 0 ] && [ -n "$(ls -A "$OUT")" ]; then
  echo "[$name] failed command left output behind: $(ls -A "$OUT")"
  fail=1
fi
if [ -f check ]; then
  if ! bash ./check; then
    echo "[$name] check script failed"; fail=1
  fi
fi
[ $fail = 0 ] && echo "[$name] ok"
exit $fail
