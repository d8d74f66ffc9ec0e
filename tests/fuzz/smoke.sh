#!/usr/bin/env bash
# Build (once, cached) and run one libFuzzer target.
#   usage: tests/fuzz/smoke.sh [--keep] TARGET SECONDS
#          tests/fuzz/smoke.sh --build        (only configure + build)
#          tests/fuzz/smoke.sh --list         (print the target names)
# TARGET is the name without "fuzz_" (json, cli, hf_config, ...).
# Without --keep (ctest), new corpus entries go to a temporary directory and
# the committed seeds in tests/fuzz/corpus/TARGET are only read. With --keep
# (make fuzz) they accumulate in build-fuzz/corpus/TARGET. Crash inputs are
# kept in build-fuzz/artifacts/ either way; a line "target seconds execs" is
# appended to build-fuzz/fuzz-log.tsv after each run.
# Exit 77 (ctest "skipped") when clang or libFuzzer is not installed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bld=${TS_FUZZ_BUILD:-$src/build-fuzz}
keep=0
[ "${1:-}" = "--keep" ] && { keep=1; shift; }

if [ "${1:-}" = "--list" ]; then
  for f in "$here"/fuzz_*.c; do b=$(basename "$f" .c); echo "${b#fuzz_}"; done
  exit 0
fi

have_libfuzzer() {
  command -v clang >/dev/null 2>&1 || return 1
  local t; t=$(mktemp -d)
  printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n){(void)d;(void)n;return 0;}\n' >"$t/t.c"
  clang -fsanitize=fuzzer,address,undefined "$t/t.c" -o "$t/t" >/dev/null 2>&1
  local rc=$?
  rm -rf "$t"
  return $rc
}

build() {
  mkdir -p "$bld"
  (
    flock 9
    if [ ! -f "$bld/.libfuzzer-ok" ]; then
      have_libfuzzer || { echo "fuzz: clang with libFuzzer not found (apt-get install clang libclang-rt-14-dev): skipped"; exit 77; }
      touch "$bld/.libfuzzer-ok"
    fi
    if [ ! -f "$bld/CMakeCache.txt" ]; then
      CC=clang cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTS_FUZZ=ON \
        -DCMAKE_C_COMPILER=clang >"$bld/configure.log" 2>&1 ||
        { cat "$bld/configure.log"; exit 1; }
    fi
    cmake --build "$bld" --target fuzz_all -j 2 >"$bld/build.log" 2>&1 ||
      { tail -50 "$bld/build.log"; exit 1; }
  ) 9>"$bld/.lock"
}

if [ "${1:-}" = "--build" ]; then build; exit $?; fi
[ $# -eq 2 ] || { echo "usage: $0 [--keep] TARGET SECONDS" >&2; exit 2; }
target=$1
secs=$2
build || exit $?
bin="$bld/fuzz_$target"
[ -x "$bin" ] || { echo "fuzz: no binary $bin"; exit 1; }
seeds="$here/corpus/$target"
mkdir -p "$bld/artifacts"
if [ $keep = 1 ]; then
  work="$bld/corpus/$target"
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
dirs=("$work")
[ -d "$seeds" ] && dirs+=("$seeds")
dict=()
[ -f "$here/$target.dict" ] && dict=(-dict="$here/$target.dict")
log=$(mktemp)
# -close_fd_mask=3: the CLI target prints; libFuzzer keeps its own report fd.
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -close_fd_mask=3 -error_exitcode=1 -timeout_exitcode=1 "${dict[@]}" \
  -artifact_prefix="$bld/artifacts/${target}-" "${dirs[@]}" >"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
echo "fuzz_$target: ${secs}s, ${execs:-?} executions, exit $rc"
printf '%s\t%s\t%s\t%s\n' "$target" "$secs" "${execs:-0}" "$(date -u +%FT%TZ)" >>"$bld/fuzz-log.tsv"
if [ $rc != 0 ]; then
  grep -E 'ERROR|SUMMARY|runtime error|Test unit written|==[0-9]+==' "$log" | head -30
  tail -40 "$log"
fi
rm -f "$log"
exit $rc
