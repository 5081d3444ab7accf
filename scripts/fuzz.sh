#!/usr/bin/env bash
# Fuzzes every parser (tests/fuzz/README.md): builds the libFuzzer targets with clang and the
# address and undefined-behaviour sanitizers (preset `fuzz`, build/fuzz/), then runs each for
# FUZZ_SECONDS (default 30) from its seed corpus and regression inputs, as many at once as there
# are cores, and prints one line per target: executions, executions per second, coverage and
# corpus size. An input that crashes a target, leaks, hangs or exceeds the memory limit is left
# in build/fuzz/findings/<target>/ and the script exits 1 after the table.
#
#   scripts/fuzz.sh                    all targets
#   scripts/fuzz.sh --build-only       only build them
#   FUZZ_SECONDS=600 scripts/fuzz.sh tokenizer_json safetensors
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}

mkdir -p build
cmake --preset fuzz > build/fuzz-configure.log 2>&1 || { cat build/fuzz-configure.log; exit 1; }
cmake --build --preset fuzz -j "$(nproc)"
# --build-only: scripts/test.sh builds beside ctest, at low priority, and fuzzes later.
if [ "${1:-}" = --build-only ]; then exit 0; fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for dir in tests/fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

run_target() {
  local name=$1 out=build/fuzz/runs/$1
  rm -rf "$out" && mkdir -p "$out/corpus" "$out/findings"
  local inputs=("$out/corpus" "tests/fuzz/corpus/$name")
  [ -d "tests/fuzz/regressions/$name" ] && inputs+=("tests/fuzz/regressions/$name")
  # New inputs go to the first folder (build/, never the committed corpus).
  local status=0
  ASAN_OPTIONS=detect_leaks=1 "build/fuzz/tests/fuzz/fuzz_$name" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/findings/" \
    "${inputs[@]}" > "$out/log" 2>&1 || status=$?
  echo "$status" > "$out/status"
}

pids=()
for name in "${targets[@]}"; do
  [ -x "build/fuzz/tests/fuzz/fuzz_$name" ] || { echo "fuzz: no target '$name'"; exit 2; }
  run_target "$name" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait

failed=0
printf '%-18s %12s %10s %8s %8s  %s\n' target executions exec/s edges corpus result
for name in "${targets[@]}"; do
  out=build/fuzz/runs/$name
  stat() { sed -n "s/^stat::$1: *//p" "$out/log" | tail -1; }
  cov=$(grep -o 'cov: [0-9]*' "$out/log" | tail -1 | cut -d' ' -f2)
  corpus=$(grep -o 'corp: [0-9]*' "$out/log" | tail -1 | cut -d' ' -f2)
  result=ok
  if [ "$(cat "$out/status")" != 0 ]; then
    result="FAILED: $(ls "$out/findings" | head -1) (log: $out/log)"
    failed=1
  fi
  printf '%-18s %12s %10s %8s %8s  %s\n' "$name" "$(stat number_of_executed_units)" \
    "$(stat average_exec_per_sec)" "${cov:-?}" "${corpus:-?}" "$result"
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz: a target failed; the input is under build/fuzz/runs/<target>/findings/ (keep it in"
  echo "tests/fuzz/regressions/<target>/ once fixed). The logs:"
  for name in "${targets[@]}"; do
    out=build/fuzz/runs/$name
    [ "$(cat "$out/status")" = 0 ] || { echo "== $name"; grep -v '^#[0-9]' "$out/log" | tail -40; }
  done
  exit 1
fi
