#!/usr/bin/env bash
# Usage errors of the command line exit 2 and say what to type instead: AutoTrain Advanced's
# `autotrain --config x.yaml` and `autotrain llm --train ...` point to `autotrain train`, and
# a misspelt command gets the closest one.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}"

expect_usage() {
  local want=$1 out status=0
  shift
  out=$("$AUTOTRAIN_BIN" "$@" 2>&1) || status=$?
  [ "$status" -eq 2 ] || { echo "autotrain $*: exit $status, expected 2: $out"; exit 1; }
  grep -qF -- "$want" <<< "$out" || { echo "autotrain $*: '$out' lacks '$want'"; exit 1; }
}

expect_usage "did you mean 'autotrain train --config x.yaml'?" --config x.yaml
expect_usage "did you mean 'autotrain train --config x.yaml --lr 1e-4'?" llm --train --config x.yaml --lr 1e-4
expect_usage "did you mean 'train'?" trian
# An unparsable command line exits 2 for every command (docs/training.md, exit statuses).
expect_usage "unknown option" train --lrr 1e-4
expect_usage "unknown option '--ouput'" prepare --ouput x
expect_usage "unknown option" status --bogus
# What --dry-run refuses before anything is allocated: dimensions past 32 bits (they were
# truncated: 4294967552 trained a 256-token vocabulary), a model that does not fit, more
# threads than cores. Errors exit 1, name the value, and say what would fit.
expect_refused() {
  local want=$1 out status=0
  shift
  out=$("$AUTOTRAIN_BIN" train --model tiny --from-scratch --tokenizer byte --dry-run "$@" 2>&1) || status=$?
  [ "$status" -eq 1 ] || { echo "train $*: exit $status, expected 1: $out"; exit 1; }
  grep -qE -- "$want" <<< "$out" || { echo "train $*: '$out' lacks '$want'"; exit 1; }
}
cd "$(mktemp -d)"
expect_refused "--vocab-size: expected -1 or in \[1, 2147483647\], got 4294967552" --vocab-size 4294967552
expect_refused "--n-layer: expected -1 or in \[1, 2147483647\], got 4294967298" --n-layer 4294967298
expect_refused "the model \(.* parameters: n_layer 1000000, .*\) needs .* per rank .* but this rank has" \
  --n-layer 1000000
expect_refused "the model \(.*n_embd 2000000000.*\) needs" --n-embd 2000000000 --n-head 1
cores=$(nproc)
expect_refused "threads $((cores + 1)) \(--threads / threads\) exceeds the $cores core\(s\)" \
  --threads $((cores + 1))
# --dry-run checks the data as training would meet it, without tokenizing: a data_path that is
# not there, a csv or jsonl without the text column, a missing valid split file.
expect_refused "/nonexistent" --data-path /nonexistent
printf 'content,label\nhello,1\n' > train.csv
expect_refused "train.csv has no column 'text'.*its columns are: content, label" --data-path train.csv
printf '{"txt": "hello"}\n' > rows.jsonl
expect_refused "rows.jsonl:1: no column 'text'" --data-path rows.jsonl
out=$("$AUTOTRAIN_BIN" train --model tiny --from-scratch --tokenizer byte --dry-run --data-path train.csv \
  --text-column content 2>&1) || { echo "a good dry run failed: $out"; exit 1; }
grep -qE "data +train train.csv \(22 B\); no valid split; to be tokenized into project-name/data" \
  <<< "$out" || { echo "the plan does not describe the data: $out"; exit 1; }
grep -qE "resume +none: a fresh start" <<< "$out" || { echo "no resume line: $out"; exit 1; }
echo "cli_usage: all checks passed"
