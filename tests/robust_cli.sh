#!/usr/bin/env bash
# CLI-level output safety (docs/robustness.md, "Output files"):
#  1. --output into a missing directory: exit 2, a message naming it, nothing written;
#  2. --output naming an existing directory: an error, the directory untouched;
#  3. a failing command never touches an existing output file;
#  4. a process killed while writing never leaves a partial file under the
#     final name (only a "<name>.tmp.<pid>" may remain);
#  5. Chakra: when one rank's file cannot be written, no trace of the set remains.
#   usage: robust_cli.sh <trainsim binary>
set -u
bin=$1
d=$(mktemp -d)
trap 'chmod -R u+w "$d"; rm -rf "$d"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# 1
"$bin" workload --model gpt2 --format simai --output "$d/nodir/w.txt" >/dev/null 2>"$d/err"
rc=$?
[ $rc = 2 ] || bad "missing dir: exit $rc, expected 2"
grep -q "directory '$d/nodir' does not exist" "$d/err" || bad "missing dir: message: $(cat "$d/err")"
[ -e "$d/nodir" ] && bad "missing dir: created something"

# 2
mkdir "$d/outdir"
touch "$d/outdir/keep"
"$bin" workload --model gpt2 --format simai --output "$d/outdir" >/dev/null 2>"$d/err"
rc=$?
[ $rc != 0 ] || bad "output is a directory: exit 0"
[ -f "$d/outdir/keep" ] || bad "output is a directory: its content changed"
ls "$d" | grep -q '\.tmp\.' && bad "output is a directory: temp file left: $(ls "$d")"

# 3
echo "precious" >"$d/out.txt"
"$bin" workload --model no-such-model --format simai --output "$d/out.txt" >/dev/null 2>&1
[ $? = 3 ] || bad "bad model: exit code"
"$bin" workload --model gpt2 --tp 3 --format simai --output "$d/out.txt" >/dev/null 2>&1
[ $? = 4 ] || bad "bad plan: exit code"
[ "$(cat "$d/out.txt")" = precious ] || bad "a failing command changed an existing output"

# 4: kill -9 at several moments of a ~30 MB write
for delay in 0.05 0.2 0.4 0.8; do
  rm -f "$d/big.json"
  bash -c 'timeout -s KILL "$1" "$2" workload --model gpt3-175b --tp 8 --pp 8 --dp 16 --global-batch 1536 \
    --seq 2048 --format json --output "$3" >/dev/null 2>&1' _ $delay "$bin" "$d/big.json" 2>/dev/null
  if [ -f "$d/big.json" ]; then
    tail -c 2 "$d/big.json" | grep -q '}' || bad "killed after ${delay}s: partial big.json"
  fi
  rm -f "$d"/big.json.tmp.*
done

# 5: rank 3's final name is taken by a directory, so its rename fails
mkdir "$d/ch" "$d/ch/t.3.et"
"$bin" workload --model gpt2 --layers 4 --tp 2 --pp 2 --gpus 8 --global-batch 8 --format chakra \
  --output "$d/ch/t" >/dev/null 2>"$d/err"
rc=$?
if [ $rc = 0 ]; then
  bad "chakra: a rank that cannot be written did not fail"
else
  left=$(ls "$d/ch" | grep -v '^t\.3\.et$')
  [ -z "$left" ] || bad "chakra: files left after a failed write: $left"
fi

[ $fail = 0 ] && echo "robust_cli: ok"
exit $fail
