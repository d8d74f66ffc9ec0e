#!/usr/bin/env bash
# device_measure.sh — everything trainsim measures on a GPU machine, in one run.
#
#   OUT=/path/to/empty/folder bash tools/device_measure.sh      (from the repo root)
#
# Needs nvcc (CUDA 12.x/13.x with cuBLAS), python3 with PyTorch (CUDA) and
# transformers; pynvml is used when present. Nothing is downloaded. Writes under
# $OUT:
#   calibrate_<gpu>.json      trainsim-calibration v3: tools/calibrate (GEMMs on
#                             random data incl. fp8, each beside a reference GEMM
#                             (the fp8 ones beside an fp8 reference),
#                             SM clock, memory-bound kernels) plus measure.py's
#                             attention table
#   measurements_<gpu>.jsonl  measure.py rows: parts B (layer shards), C, D-fp8,
#                             D-attn, F, F-eager (kernels), A and E (whole
#                             training steps)
#   power_<gpu>.jsonl         measure.py power rows (part G-power: SM clock, board
#                             power and GEMM rate at each GEMM duty; needs pynvml)
#   sink_<gpu>.jsonl          tools/measure/sdpa_sink.cpp rows (cuDNN's fused
#                             attention with a learned sink and a window), only
#                             where CUDNN_FRONTEND names the cuDNN frontend's
#                             include/ folder (header-only, not downloaded)
#   log.txt                   everything printed, with a timestamp per step
# Steps run cheapest and most valuable first: calibrate, attention, shards,
# kernels, whole steps, then the clock against power. Each has a wall-time
# budget inside the script's total (MEASURE_TOTAL_S, default 490 s; about 440 s
# on an H100) and a timeout;
# a failed step is logged and the next one runs. Exit status: the number of
# failed steps (0 = all ran).
set -u

if [ -z "${OUT:-}" ]; then
  echo "device_measure.sh: set OUT to an empty folder for the results" >&2
  exit 2
fi
if [ ! -f tools/measure/measure.py ] || [ ! -f tools/calibrate/calibrate.cu ]; then
  echo "device_measure.sh: run me from the trainsim repository root" >&2
  exit 2
fi
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
LOG=$OUT/log.txt
TOTAL=${MEASURE_TOTAL_S:-490}
t0=$(date +%s)
failed=0

say() { echo "[$(($(date +%s) - t0))s] $*" | tee -a "$LOG"; }
left() { echo $((TOTAL - ($(date +%s) - t0))); }

# run NAME PLANNED_S CMD...: run CMD with budget min(PLANNED_S, time left - 20 s)
# in $BUDGET (for the command line) and a timeout of that plus 45 s of start-up
# (imports, model builds), within the total. Skipped when under 10 s are left.
run() {
  local name=$1 planned=$2
  shift 2
  local l
  l=$(left)
  BUDGET=$((l - 20 < planned ? l - 20 : planned))
  if [ "$BUDGET" -lt 10 ]; then
    say "== $name: skipped, ${l}s left of ${TOTAL}s"
    failed=$((failed + 1))
    return 1
  fi
  local limit=$((BUDGET + 45 < l ? BUDGET + 45 : l))
  local cmd=()
  local a
  for a in "$@"; do cmd+=("${a//@BUDGET@/$BUDGET}"); done
  say "== $name (budget ${BUDGET}s, timeout ${limit}s): ${cmd[*]}"
  local s rc
  s=$(date +%s)
  timeout --signal=TERM --kill-after=15 "$limit" "${cmd[@]}" 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  say "== $name: exit $rc after $(($(date +%s) - s))s"
  [ "$rc" = 0 ] || failed=$((failed + 1))
  return "$rc"
}

# ---- the machine ----
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[ -n "$gpu_name" ] || gpu_name=$(python3 -c 'import torch; print(torch.cuda.get_device_name())' 2>/dev/null)
gpu=$(echo "${gpu_name:-gpu}" | tr 'A-Z' 'a-z' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//')
[ -n "$gpu" ] || gpu=gpu
CAL=$OUT/calibrate_$gpu.json
ROWS=$OUT/measurements_$gpu.jsonl
MEASURE="python3 tools/measure/measure.py"
say "device_measure.sh: GPU '$gpu_name' -> $CAL, $ROWS (total budget ${TOTAL}s)"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv 2>&1
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  python3 -c 'import transformers; print("transformers", transformers.__version__)' 2>&1
  python3 -c 'import pynvml; print("pynvml ok")' 2>&1
  git log -1 --format='trainsim commit %H %s' 2>&1
} | tee -a "$LOG"

# ---- (a) tools/calibrate: build with nvcc into /tmp, run ----
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CALBIN=/tmp/trainsim-calibrate
# shellcheck disable=SC2046 # the flags file holds shell words
if run "build calibrate" 120 "$NVCC" $(grep -v '^#' tools/calibrate/nvcc.flags) -o "$CALBIN" \
  tools/calibrate/calibrate.cu -lcublasLt -lcublas -ldl; then
  run "calibrate" 45 "$CALBIN" --out "$CAL"
fi

# ---- (b) attention table into the same file ----
run "attention-calibration" 95 $MEASURE attention-calibration --calibration "$CAL" --budget-s @BUDGET@

# ---- (c) layer shards (the two of the shared rows first, then new ones) and kernels ----
JOBS=/tmp/trainsim-measure-jobs
mkdir -p "$JOBS"
cat >"$JOBS/shards.txt" <<'EOF'
shard --name gpt3-175b_tp8 --hidden 12288 --heads 96 --ffn 49152 --tp 8 --seq 2048 --micro-batch 1
shard --name llama2-7b_tp1 --hidden 4096 --heads 32 --ffn 11008 --tp 1 --seq 4096 --micro-batch 1 --gated --norm rms
shard --name llama3-70b_tp8 --hidden 8192 --heads 64 --kv-heads 8 --ffn 28672 --tp 8 --seq 8192 --micro-batch 1 --gated --norm rms
shard --name gpt3-175b_tp4 --hidden 12288 --heads 96 --ffn 49152 --tp 4 --seq 2048 --micro-batch 1
shard --name llama3-8b_tp1 --hidden 4096 --heads 32 --kv-heads 8 --ffn 14336 --tp 1 --seq 8192 --micro-batch 1 --gated --norm rms
EOF
run "shards" 40 $MEASURE batch "$JOBS/shards.txt" --out "$ROWS" --budget-s @BUDGET@
run "kernels" 50 $MEASURE kernels --out "$ROWS" --budget-s @BUDGET@
run "eager kernels" 25 $MEASURE eager --out "$ROWS" --budget-s @BUDGET@

# ---- (c2) cuDNN's fused attention with a learned sink (GPT-OSS), where the
# frontend's headers are at hand: GPT-OSS's shape with and without a sink and a
# 128-token window, and a head-dim-128 shape ----
if [ -n "${CUDNN_FRONTEND:-}" ] && [ -d "$CUDNN_FRONTEND" ]; then
  SINKBIN=/tmp/trainsim-sdpa-sink
  if run "build sdpa_sink" 90 "$NVCC" -std=c++17 -O2 -I "$CUDNN_FRONTEND" tools/measure/sdpa_sink.cpp -lcudnn \
    -o "$SINKBIN"; then
    sink_rows() {
      local w k
      for w in 0 128; do for k in 0 1; do "$SINKBIN" 4 64 8 4096 64 "$w" "$k" 20 || return 1; done; done
      for k in 0 1; do "$SINKBIN" 4 32 8 4096 128 0 "$k" 20 || return 1; done
    }
    run "sdpa_sink" 30 bash -c "$(declare -f sink_rows); SINKBIN=$SINKBIN; sink_rows >> '$OUT/sink_$gpu.jsonl'"
  fi
else
  say "== sdpa_sink: skipped (set CUDNN_FRONTEND to the cuDNN frontend's include/ folder)"
fi

# ---- (d) whole training steps: the shared rows' models first, then new ones ----
C=tools/measure/configs
cat >"$JOBS/steps_shared.txt" <<EOF
step --preset gpt2 --micro-batch 16 --seq 1024 --precision amp --steps 8
step --preset gpt2-xl --micro-batch 4 --seq 1024 --precision amp --steps 8
step --config $C/bert-large-uncased.json --micro-batch 32 --seq 512 --precision amp --steps 8
step --config $C/llama3.2-1b.json --micro-batch 2 --seq 4096 --precision pure --steps 8
step --config $C/qwen3-30b-a3b_L2.json --micro-batch 1 --seq 4096 --precision pure --steps 8
step --config $C/mixtral-8x7b_L2.json --micro-batch 1 --seq 4096 --precision pure --steps 8
step --config $C/llama3.2-1b.json --micro-batch 4 --seq 2048 --precision amp --steps 8
EOF
cat >"$JOBS/steps_new.txt" <<EOF
step --preset gpt2-medium --micro-batch 8 --seq 1024 --precision amp --steps 8
step --preset gpt2-medium --micro-batch 8 --seq 1024 --precision pure --steps 8
step --preset gpt2-large --micro-batch 4 --seq 1024 --precision amp --steps 8
step --preset bert-base-uncased --micro-batch 32 --seq 512 --precision amp --steps 8
step --config $C/llama3.2-3b.json --micro-batch 1 --seq 4096 --precision pure --steps 6
step --preset gpt2-xl --micro-batch 8 --seq 1024 --precision pure --steps 8
EOF
run "steps (shared models)" 80 $MEASURE batch "$JOBS/steps_shared.txt" --out "$ROWS" --budget-s @BUDGET@
run "steps (new)" 80 $MEASURE batch "$JOBS/steps_new.txt" --out "$ROWS" --budget-s @BUDGET@

# ---- (e) the clock against power: six GEMM duties of 7 s ----
run "power" 55 $MEASURE power --seconds 7 --out "$OUT/power_$gpu.jsonl" --budget-s @BUDGET@

rows=$(wc -l <"$ROWS" 2>/dev/null || echo 0)
say "device_measure.sh: done, $failed failed step(s), $rows rows in $ROWS"
ls -la "$OUT" | tee -a "$LOG"
exit "$failed"
