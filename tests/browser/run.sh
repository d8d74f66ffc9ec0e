#!/usr/bin/env bash
# The browser test: write the fixture reports and the reports of the real
# commands, then check each one in headless Chromium (check_report.sh) at
# 1280 and 1920 px. An argument "#id" is an element that must be shown: the
# warnings of a simulation, the notes of a sweep.
#   usage: run.sh CHROMIUM PNG_STATS FIXTURE TRAINSIM
set -u
chromium=$1 png_stats=$2 fixture=$3 trainsim=$4
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$fixture" "$dir" || { echo "fixture failed"; exit 1; }
rc=0
check() { bash "$here/check_report.sh" "$chromium" "$png_stats" "$@" || rc=1; }
check "$dir/plan.html" timeline breakdown memory '#warnings'
check "$dir/sweep.html" scatter timeline breakdown memory '#notes' '#warnings'
# The real commands, once they exist in this build.
if "$trainsim" simulate --help >/dev/null 2>&1 && "$trainsim" simulate --help | grep -q -- --html; then
  "$trainsim" simulate --html "$dir/simulate.html" >/dev/null || { echo "simulate --html failed"; rc=1; }
  check "$dir/simulate.html" timeline breakdown stages memory
  # 16 stages, DualPipe, three warnings: each warning line of stdout is in the report
  "$trainsim" simulate --model deepseek-v3 --gpus 1024 --tp 1 --pp 16 --ep 64 --seq 4096 --global-batch 2048 \
    --uneven-stages --dist-opt --recompute full --schedule dualpipe --html "$dir/simulate_warn.html" \
    >"$dir/simulate_warn.txt" || { echo "simulate --html (warnings) failed"; rc=1; }
  warned=$(grep -c '^warning: ' "$dir/simulate_warn.txt")
  [ "$warned" -ge 1 ] || { echo "the DeepSeek-V3 DualPipe plan printed no warning"; rc=1; }
  sed -n 's/^warning: //p' "$dir/simulate_warn.txt" | sed -e 's/&/\&amp;/g' -e "s/'/\&#39;/g" -e 's/</\&lt;/g' \
    -e 's/>/\&gt;/g' | while IFS= read -r w; do
    grep -qF "<li>$w</li>" "$dir/simulate_warn.html" || { echo "warning not in the report: $w"; exit 1; }
  done || rc=1
  check "$dir/simulate_warn.html" timeline breakdown stages memory '#warnings'
fi
if "$trainsim" sweep --help >/dev/null 2>&1; then
  "$trainsim" sweep --model llama3-8b --cluster dgx-h100 --gpus 64 --seq 4096 --global-batch 256 -j 2 \
    --html "$dir/sweep_cli.html" >/dev/null || { echo "sweep --html failed"; rc=1; }
  check "$dir/sweep_cli.html" scatter timeline breakdown memory
  # uneven layers per chunk: the sweep's notes
  "$trainsim" sweep --arch gpt --layers 10 --hidden 2048 --heads 16 --ffn 8192 --vocab 32000 --seq 2048 --gpus 24 \
    --gpu a100-sxm4-80gb --cluster dgx-a100 --global-batch 96 --tp 1 --pp 3,4 --cp 1 --top 3 -j 1 \
    --html "$dir/sweep_notes.html" >/dev/null 2>&1 || { echo "sweep --html (notes) failed"; rc=1; }
  check "$dir/sweep_notes.html" scatter timeline breakdown memory '#notes'
fi
exit $rc
