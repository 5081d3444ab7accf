#!/usr/bin/env bash
# Training end to end under mpirun: a tiny model on the embedded corpus.
#  - np=2 with accumulation 1 gives the same loss curve as np=1 with accumulation 2 (DESIGN.md
#    contract 2) within 1e-5 relative, over MPI and over Gloo;
#  - the losses fall; the project folder holds training_params.json, metrics.jsonl and an
#    exported model that `autotrain generate` samples from;
#  - feeding training_params.json back with --training-config reruns the same training;
#  - `autotrain llm --train --num-processes 2` starts its own two ranks and trains the same;
#  - log: tensorboard writes event files that hold metrics.jsonl's scalars.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py"
config="$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines

timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --config "$config" \
  --project-name one-rank --gradient-accumulation 2 > one.log 2>&1 || { cat one.log; exit 1; }
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$config" \
  --project-name two-ranks --gradient-accumulation 1 --log tensorboard > two.log 2>&1 || { cat two.log; exit 1; }
# AutoTrain's command starts its own ranks: `autotrain llm --train ... --num-processes 2`, run
# without mpirun, trains as `mpirun -np 2 autotrain train` does.
timeout 300 "$AUTOTRAIN_BIN" llm --train --config "$config" --project-name llm-ranks \
  --gradient-accumulation 1 --num-processes 2 > llm.log 2>&1 || { cat llm.log; exit 1; }
grep -q "mpirun -np 2" llm.log || { echo "llm did not start mpirun:"; cat llm.log; exit 1; }
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$config" \
  --project-name two-gloo --gradient-accumulation 1 --comm-backend gloo > gloo.log 2>&1 || { cat gloo.log; exit 1; }

$check same one-rank/metrics.jsonl two-ranks/metrics.jsonl 1e-5
$check same one-rank/metrics.jsonl two-gloo/metrics.jsonl 1e-5
$check same two-ranks/metrics.jsonl llm-ranks/metrics.jsonl 1e-5
$check falls two-ranks/metrics.jsonl
# log: tensorboard: event files whose every scalar an independent reader finds in metrics.jsonl;
# running the finished project again (it resumes, nothing is left to do) adds a second file.
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$config" \
  --project-name two-ranks --gradient-accumulation 1 --log tensorboard > again.log 2>&1 || { cat again.log; exit 1; }
grep -q "final train loss n/a (no step this run" again.log || { cat again.log; exit 1; }
/usr/bin/python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/tensorboard_check.py" two-ranks 2  # Debian's, with python3-protobuf

for file in training_params.json metrics.jsonl model.safetensors config.json autotrain_tokenizer.json; do
  [ -s "two-ranks/$file" ] || { echo "two-ranks/$file is missing"; ls -la two-ranks; exit 1; }
done
grep -q "final validation loss" two.log || { cat two.log; exit 1; }

text=$(timeout 60 "$AUTOTRAIN_BIN" generate --model two-ranks --prompt "ROMEO:" --max-new-tokens 30 --seed 3)
[ "${#text}" -gt 6 ] || { echo "generate printed too little: '$text'"; exit 1; }

# The written parameters rerun the same training (only the project name changes).
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --training-config two-ranks/training_params.json \
  --project-name rerun > rerun.log 2>&1 || { cat rerun.log; exit 1; }
$check same two-ranks/metrics.jsonl rerun/metrics.jsonl 0

# Device and precision on a machine without a GPU. A CPU without native bf16 (simulated by
# capping oneDNN at AVX-512 without BF16) falls back to fp32 with a warning that names the ISA
# (AVX-512 under the cap; AVX2 on a CPU without AVX-512), and the plan says so; fp16 always does.
isa=AVX2
grep -qw avx512f /proc/cpuinfo && isa=AVX-512
ONEDNN_MAX_CPU_ISA=AVX512_CORE "${mpirun[@]}" -x ONEDNN_MAX_CPU_ISA -np 1 "$AUTOTRAIN_BIN" train \
  --config "$config" --mixed-precision bf16 --dry-run > bf16.log 2>&1 || { cat bf16.log; exit 1; }
grep -q "mixed_precision bf16: this CPU has no native bf16 (oneDNN found $isa; bf16 needs" \
  bf16.log || { cat bf16.log; exit 1; }
grep -q "devices      CPU, .*compute in fp32 (device auto, mixed_precision bf16)" bf16.log ||
  { cat bf16.log; exit 1; }
"${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --config "$config" --mixed-precision fp16 --dry-run \
  > fp16.log 2>&1 || { cat fp16.log; exit 1; }
grep -q "mixed_precision fp16 runs on GPUs only; on the CPU this run computes in fp32" fp16.log ||
  { cat fp16.log; exit 1; }
# Uncapped, bf16 computes in bf16 exactly where `autotrain env` reports a bf16 ISA.
"${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --config "$config" --mixed-precision bf16 --dry-run \
  > bf16-native.log 2>&1 || { cat bf16-native.log; exit 1; }
"$AUTOTRAIN_BIN" env > env.log 2>&1 || { cat env.log; exit 1; }
if grep -q "^  gemm .*BF16" env.log; then expected=bf16; else expected=fp32; fi
grep -q "devices      CPU, .*compute in $expected (device auto, mixed_precision bf16)" \
  bf16-native.log || { cat env.log bf16-native.log; exit 1; }
status=0
"${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --config "$config" --device cuda --dry-run \
  > cuda.log 2>&1 || status=$?
[ "$status" -eq 1 ] || { echo "--device cuda without a GPU: status $status, expected 1"; cat cuda.log; exit 1; }
grep -q "a GPU was requested (device cuda or comm_backend nccl) but no GPU is visible" cuda.log || { cat cuda.log; exit 1; }
echo "train_mpirun: ok"
