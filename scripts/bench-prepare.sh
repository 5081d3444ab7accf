#!/usr/bin/env bash
# Tokenizing speed of `autotrain prepare`: for each input file, tokenizer and thread count, runs
# prepare RUNS times and prints the median and range of MB/s of text (tokenizing and writing the
# shards, after the vocabulary is loaded: the time prepare prints) and the peak memory.
#
#   scripts/bench-prepare.sh [--runs N] [--threads "1 2"] --tokenizer T [--tokenizer T ...] FILE...
#
# T is gpt2, byte, a tokenizer.json or a folder holding one. docs/benchmarks.md has figures.
set -euo pipefail
bin=${AUTOTRAIN:-$(dirname "$0")/../build/release/autotrain}
runs=5
threads="1 2"
tokenizers=()
files=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --tokenizer) tokenizers+=("$2"); shift 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
[ ${#files[@]} -gt 0 ] && [ ${#tokenizers[@]} -gt 0 ] || {
  echo "usage: $0 [--runs N] [--threads \"1 2\"] --tokenizer T [...] FILE..." >&2
  exit 2
}
[ -x "$bin" ] || { echo "$0: no autotrain at $bin (set AUTOTRAIN)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf "%-28s %-14s %7s %10s %20s %9s\n" file tokenizer threads "MB/s" "range (runs)" "peak MB"
for file in "${files[@]}"; do
  bytes=$(stat -c %s "$file")
  for tokenizer in "${tokenizers[@]}"; do
    label=$tokenizer
    [ -e "$tokenizer" ] && label=$(basename "$(dirname "$(realpath "$tokenizer")")")/$(basename "$tokenizer")
    for t in $threads; do
      rates=()
      peak=0
      for _ in $(seq "$runs"); do
        line=$( { /usr/bin/time -f "peak %M" "$bin" prepare --data-path "$file" --output "$out/o" \
                   --tokenizer "$tokenizer" --threads "$t" --valid-fraction 0 ; } 2>&1 |
                 grep -E '^prepared|^peak' | tr '\n' ' ')
        seconds=$(sed -n 's/.* in \([0-9.e-]*\) s:.*/\1/p' <<< "$line")
        kb=$(sed -n 's/.*peak \([0-9]*\).*/\1/p' <<< "$line")
        rates+=("$(python3 -c "print(f'{$bytes / $seconds / 1e6:.1f}')")")
        [ "$kb" -gt "$peak" ] && peak=$kb
      done
      python3 - "$(basename "$file")" "$label" "$t" "$peak" "${rates[@]}" <<'PY'
import statistics, sys
name, label, threads, peak, *rates = sys.argv[1:]
rates = sorted(float(r) for r in rates)
print(f"{name[:28]:<28} {label[-14:]:<14} {threads:>7} {statistics.median(rates):>10.1f} "
      f"{f'{rates[0]:.1f}-{rates[-1]:.1f} ({len(rates)})':>20} {int(peak) / 1024:>9.0f}")
PY
    done
  done
done
