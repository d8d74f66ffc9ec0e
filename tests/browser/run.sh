#!/usr/bin/env bash
# The browser test: write the fixture reports and the reports of the real
# commands, then check each one in headless Chromium (check_report.sh).
#   usage: run.sh CHROMIUM PNG_STATS FIXTURE TRAINSIM
set -u
chromium=$1 png_stats=$2 fixture=$3 trainsim=$4
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$fixture" "$dir" || { echo "fixture failed"; exit 1; }
rc=0
check() { bash "$here/check_report.sh" "$chromium" "$png_stats" "$@" || rc=1; }
check "$dir/plan.html" timeline breakdown memory
check "$dir/sweep.html" scatter timeline breakdown memory
# The real commands, once they exist in this build.
if "$trainsim" simulate --help >/dev/null 2>&1 && "$trainsim" simulate --help | grep -q -- --html; then
  "$trainsim" simulate --html "$dir/simulate.html" >/dev/null || { echo "simulate --html failed"; rc=1; }
  check "$dir/simulate.html" timeline breakdown stages memory
fi
if "$trainsim" sweep --help >/dev/null 2>&1; then
  "$trainsim" sweep --model llama3-8b --cluster dgx-h100 --gpus 64 --seq 4096 --global-batch 256 -j 2 \
    --html "$dir/sweep_cli.html" >/dev/null || { echo "sweep --html failed"; rc=1; }
  check "$dir/sweep_cli.html" scatter timeline breakdown memory
fi
exit $rc
