#!/usr/bin/env bash
# Run the test suite under valgrind memcheck: every golden case's command
# (through tests/golden/run_case.sh, so outputs are still compared) and every
# unit-test executable, with --leak-check=full --error-exitcode=99.
#   usage: scripts/valgrind.sh [BUILD_DIR] [JOBS]     (default: build, 2)
# Golden cases named in tests/valgrind.skip (one per line) are skipped: they
# are the few that write hundreds of MB (1024 Chakra traces) and would take
# many minutes under memcheck; the ASan run covers them.
# Needs a normal (non-sanitizer) build. Prints one line per case and a
# summary; exit 0 only when every case passes with no memcheck error or leak.
# Valgrind's own reports are kept in BUILD_DIR/valgrind/ for failing cases.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
bld=$(cd "${1:-$src/build}" && pwd) || exit 2
jobs=${2:-2}
command -v valgrind >/dev/null || { echo "valgrind: not installed (apt-get install valgrind): skipped"; exit 77; }
[ -x "$bld/trainsim" ] || { echo "valgrind: build $bld first"; exit 2; }
logs="$bld/valgrind"
rm -rf "$logs"
mkdir -p "$logs"
export TRAINSIM_DATA="$src/data"
export TS_TEST_SMALL=1 # unit tests shrink their 10^6-line inputs
VG="valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --track-origins=no"

# A wrapper that run_case.sh uses as the trainsim binary: valgrind writes to
# its own log, so stdout/stderr compare exactly; a memcheck error turns into
# exit 99, which no golden case expects.
wrap="$logs/trainsim-vg"
cat >"$wrap" <<W
#!/usr/bin/env bash
exec $VG --log-file="$logs/golden.%p.log" "$bld/trainsim" "\$@"
W
chmod +x "$wrap"

run_one() { # kind name
  local kind=$1 name=$2 out rc t0=$SECONDS
  if [ "$kind" = golden ] && grep -qx "$name" "$src/tests/valgrind.skip" 2>/dev/null; then
    echo "skip $kind/$name (tests/valgrind.skip)"; return 0
  fi
  if [ "$kind" = golden ]; then
    out=$(bash "$src/tests/golden/run_case.sh" "$wrap" "$src/tests/golden/$name" 2>&1)
  else
    out=$(cd "$src/tests" && $VG --log-file="$logs/unit.$name.%p.log" "$bld/$name" 2>&1)
  fi
  rc=$?
  if [ $rc = 0 ]; then echo "ok   $kind/$name ($((SECONDS - t0)) s)"; else echo "FAIL $kind/$name (exit $rc)"; echo "$out" | tail -20 | sed 's/^/     /'; fi
  return $rc
}
export -f run_one
export src bld logs wrap VG

start=$(date +%s)
{
  for d in "$src"/tests/golden/*/; do [ -f "$d/cmd" ] && echo "golden $(basename "$d")"; done
  for t in "$bld"/test_*; do [ -x "$t" ] && echo "unit $(basename "$t")"; done
} | xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1"' >"$logs/summary.txt"
end=$(date +%s)
cat "$logs/summary.txt"
n=$(grep -c . "$logs/summary.txt")
bad=$(grep -c '^FAIL' "$logs/summary.txt")
# Any non-empty valgrind log means an error report (with -q it is silent otherwise).
reports=$(find "$logs" -name '*.log' -size +0 | wc -l)
find "$logs" -name '*.log' -size 0 -delete
echo "valgrind: $n cases, $bad failed, $reports memcheck reports, $((end - start)) s (jobs $jobs)"
[ "$bad" = 0 ] && [ "$reports" = 0 ]
