#!/usr/bin/env bash
# run.sh ACCURACY CASE: build/accuracy --runs CASE.csv, with the flags in
# CASE.args where there is one; its stdout, stderr and exit code must equal
# CASE.stdout / CASE.stderr / CASE.exit (absent: empty, 0).
set -u
bin=$1 case=$2
dir=$(dirname "$0")
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
cd "$dir" || exit 1
args=()
[ -f "$case.args" ] && read -r -a args <"$case.args"
"$bin" "${args[@]}" --runs "$case.csv" >"$out" 2>"$err"
rc=$?
want=0
[ -f "$case.exit" ] && want=$(cat "$case.exit")
fail=0
[ "$rc" = "$want" ] || { echo "exit $rc, expected $want"; fail=1; }
if [ -f "$case.stdout" ]; then cmp -s "$case.stdout" "$out" || { diff "$case.stdout" "$out" | head -20; fail=1; }; fi
if [ -f "$case.stderr" ]; then cmp -s "$case.stderr" "$err" || { diff "$case.stderr" "$err" | head -20; fail=1; }; fi
exit $fail
