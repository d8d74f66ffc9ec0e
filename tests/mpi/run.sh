#!/usr/bin/env bash
# usage: run.sh MPIRUN TRAINSIM — compare a 2-rank sweep with a 1-rank one:
# the ranking byte for byte, every simulated plan (CSV) byte for byte.
set -u
mpirun=$1 trainsim=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(sweep --model llama3-8b --cluster dgx-h100 --gpus 64 --seq 4096 --global-batch 256 --top 15 -j 1)
mpi=("$mpirun" --allow-run-as-root --oversubscribe)
"${mpi[@]}" -np 1 "$trainsim" "${args[@]}" >"$dir/np1.txt" 2>"$dir/np1.err" || { cat "$dir/np1.err"; echo "np 1 failed"; exit 1; }
"${mpi[@]}" -np 2 "$trainsim" "${args[@]}" >"$dir/np2.txt" 2>"$dir/np2.err" || { cat "$dir/np2.err"; echo "np 2 failed"; exit 1; }
"${mpi[@]}" -np 2 "$trainsim" "${args[@]}" --csv "$dir/np2.csv" >/dev/null 2>&1 || { echo "np 2 --csv failed"; exit 1; }
"$trainsim" "${args[@]}" --csv "$dir/plain.csv" >"$dir/plain.txt" 2>/dev/null || { echo "plain run failed"; exit 1; }
grep -q "2 ranks" "$dir/np2.err" || { echo "the 2-process run did not use 2 ranks:"; cat "$dir/np2.err"; exit 1; }
# The ranking is exact and identical; the work counters of the 'plans:' line
# are not: branch and bound simulates until each rank's own k-th best.
for f in np1.txt np2.txt plain.txt; do grep -v '^plans: ' "$dir/$f" >"$dir/$f.rank"; done
for f in np2.txt plain.txt; do
  cmp -s "$dir/np1.txt.rank" "$dir/$f.rank" || { echo "ranking of $f differs from np 1:"; diff "$dir/np1.txt.rank" "$dir/$f.rank" | head -20; exit 1; }
done

cmp -s "$dir/np2.csv" "$dir/plain.csv" || { echo "CSV of np 2 differs from a single process"; exit 1; }
[ "$(wc -l <"$dir/np1.txt")" -gt 5 ] || { echo "ranking too short:"; cat "$dir/np1.txt"; exit 1; }
# Interleaved plans whose micro-batches pp does not divide (100 sequences):
# their micro-batch group travels with each plan between the ranks.
g=(sweep --model llama3-8b --cluster dgx-h100 --gpus 64 --global-batch 100 --pp 2,4,8 --schedule interleaved --top 15 -j 1)
"${mpi[@]}" -np 2 "$trainsim" "${g[@]}" --csv "$dir/g2.csv" >"$dir/g2.txt" 2>/dev/null || { echo "np 2 grouped failed"; exit 1; }
"$trainsim" "${g[@]}" --csv "$dir/g1.csv" >"$dir/g1.txt" 2>/dev/null || { echo "plain grouped run failed"; exit 1; }
cmp -s "$dir/g2.csv" "$dir/g1.csv" || { echo "grouped CSV of np 2 differs from a single process"; exit 1; }
cmp -s <(grep -v '^plans: ' "$dir/g2.txt") <(grep -v '^plans: ' "$dir/g1.txt") || { echo "grouped ranking of np 2 differs"; exit 1; }
grep -q -- '--vpp-group' "$dir/g1.txt" || { echo "no grouped plan ranked:"; cat "$dir/g1.txt"; exit 1; }
echo "mpi: np 2 == np 1 == plain ($(sed -n 2p "$dir/np1.txt"))"
