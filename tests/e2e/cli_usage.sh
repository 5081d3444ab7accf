#!/usr/bin/env bash
# Usage errors of the command line exit 2 and say what to type instead (a misspelt command gets
# the closest one); AutoTrain Advanced's `autotrain --config x.yaml` and `autotrain llm --train
# ...` run as `autotrain train` would.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}"

expect_usage() {
  local want=$1 out status=0
  shift
  out=$("$AUTOTRAIN_BIN" "$@" 2>&1) || status=$?
  [ "$status" -eq 2 ] || { echo "autotrain $*: exit $status, expected 2: $out"; exit 1; }
  grep -qF -- "$want" <<< "$out" || { echo "autotrain $*: '$out' lacks '$want'"; exit 1; }
}

expect_usage "did you mean 'train'?" trian
expect_usage "the command comes first" --lr 1e-4
expect_usage "--train is missing" llm --model tiny
expect_usage "--deploy is not offered" llm --train --deploy
expect_usage "--num-gpus and --num-processes both set the number of ranks" llm --train --num-gpus 1 --num-processes 2
"$AUTOTRAIN_BIN" llm --help | grep -q "autotrain llm --train" || { echo "llm --help"; exit 1; }
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
# AutoTrain's own forms: `autotrain --config` is train's config; `autotrain llm --train` takes
# AutoTrain's flags (snake or kebab), notes those that mean nothing here, and --num-gpus 0 is a
# CPU run.
printf 'task: llm-sft\nbase_model: tiny\nproject_name: from-yaml\nparams:\n  from_scratch: true\n' > at.yaml
out=$("$AUTOTRAIN_BIN" --config at.yaml --tokenizer byte --data-path train.csv --text-column content \
  --dry-run 2>&1) || { echo "autotrain --config failed: $out"; exit 1; }
grep -qE "output +.*from-yaml/" <<< "$out" || { echo "--config did not train the yaml: $out"; exit 1; }
out=$("$AUTOTRAIN_BIN" llm --train --model tiny --from_scratch true --tokenizer byte --data-path train.csv \
  --text_column content --project-name at-llm --backend local --push-to-hub false --username u \
  --token t --unsloth false --use-flash-attention-2 false --num-gpus 0 --dry-run 2>&1) \
  || { echo "autotrain llm failed: $out"; exit 1; }
for want in "output +.*at-llm/" "note .*--backend: ignored" "note .*--token: ignored" \
  "note .*--unsloth: ignored" "device +cpu +--device"; do
  grep -qE -- "$want" <<< "$out" || { echo "autotrain llm: no '$want' in: $out"; exit 1; }
done
# The switches AutoTrain passes with distributed_backend deepspeed.
out=$("$AUTOTRAIN_BIN" llm --train --model tiny --from-scratch --tokenizer byte --data-path train.csv \
  --text-column content --distributed-backend deepspeed --mixed-precision fp16 --zero_stage 3 \
  --offload_optimizer_device none --offload_param_device none --zero3_save_16bit_model true \
  --zero3_init_flag true --deepspeed_multinode_launcher standard --dry-run 2>&1) \
  || { echo "the DeepSpeed switches failed: $out"; exit 1; }
for want in "export_dtype +fp16 +derived from zero3_save_16bit_model" "zero_stage +3 +--zero_stage" \
  "note .*--zero3_init_flag: ignored" "note .*--deepspeed_multinode_launcher: ignored"; do
  grep -qE -- "$want" <<< "$out" || { echo "DeepSpeed switches: no '$want' in: $out"; exit 1; }
done
for refused in "--offload-optimizer-device cpu:it needs zero_stage 1, 2 or 3, got 0" \
  "--offload-param-device nvme:it needs zero_stage 3, got 0" \
  "--deepspeed-multinode-launcher pdsh:not pdsh"; do
  flag=${refused%%:*} want=${refused#*:}
  # shellcheck disable=SC2086
  out=$("$AUTOTRAIN_BIN" train --model tiny --from-scratch --tokenizer byte $flag --dry-run 2>&1) \
    && { echo "$flag was accepted: $out"; exit 1; }
  grep -qF -- "$want" <<< "$out" || { echo "$flag: no '$want' in: $out"; exit 1; }
done
echo "cli_usage: all checks passed"
