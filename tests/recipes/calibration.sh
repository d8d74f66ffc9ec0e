#!/usr/bin/env bash
# The calibration recipes (data/recipes/<id>.json, written by
# scripts/gen_calibration_recipes.py) run the plans bench/accuracy scores:
# for every row accuracy prints, `trainsim simulate --recipe <id>` gives the
# same iteration time (both to the millisecond, as accuracy prints T).
# A difference means the rules in bench/accuracy.c, a preset or the CSV
# changed: regenerate the recipes (see the script's header).
#   usage: calibration.sh ACCURACY TRAINSIM
set -u
accuracy=$1 trainsim=$2
rows=$("$accuracy" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^T=/) { t = substr($i, 3); sub(/s$/, "", t); print $1, t }}')
[ -n "$rows" ] || { echo "accuracy printed no rows"; exit 1; }
fail=0 n=0
while read -r id want; do
  name=$(echo "$id" | tr 'A-Z' 'a-z')
  json=$("$trainsim" simulate --recipe "$name" --json 2>/dev/null)
  got=$(printf '%s' "$json" | grep -o '"iteration_time_s": [^,]*' | awk '{printf "%.3f", $2}')
  n=$((n + 1))
  if [ "$got" != "$want" ]; then
    echo "[$id] recipe $name: iteration time ${got:-none} s, bench/accuracy $want s"
    fail=1
  fi
done <<<"$rows"
[ $fail = 0 ] && echo "[recipes/calibration] $n rows: every recipe runs accuracy's plan"
exit $fail
