#!/usr/bin/env bash
# Checkpoints move between devices (docs/gpu.md): a run trained on the CPU resumes on the GPU,
# and one trained on the GPU resumes on the CPU, each continuing to the loss curve of the run it
# left within 1e-2 relative (fp32 on both; kernels sum in other orders and the difference grows
# with the steps: 20 here, resumed from step 10). Also `autotrain train --device cuda` end to
# end, `autotrain generate` on the GPU (greedy: the CPU's text), a CPU bf16 checkpoint
# resumed on the GPU in bf16, and optimizer adamw_8bit on the GPU against the CPU's.
# Skipped (77) where this build or machine has no GPU.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"
require_gpus gpu_resume
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/ckpt_check.py"
config="$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
# comm-backend auto: NCCL for the GPU runs, MPI for the CPU ones (tiny.yaml says mpi).
base=(--config "$config" --gradient-accumulation 1 --max-steps 20 --checkpoint-every 10
  --save-total-limit 5 --comm-backend auto)
common=("${base[@]}" --eval-strategy no)
fail() { echo "FAIL: $*"; for f in *.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }

for device in cpu cuda; do
  timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train "${common[@]}" --device "$device" \
    --project-name "$device" > "$device.log" 2>&1 || fail "training on $device"
done
grep -q "on cuda:" cuda.log || fail "the cuda run did not train on the GPU"
# Both devices learn the same curve (fp32 on both).
$check tail cpu/metrics.jsonl cuda/metrics.jsonl 1 1e-2

# generate on the GPU: greedy text equal to the CPU's (fp32 export; the window rule and the
# sampling are shared), across window restarts (60 new tokens past a 32-token context).
gen=(generate --model cuda --prompt "ROMEO:" --max-new-tokens 60 --temperature 0)
for device in cpu cuda; do
  timeout 120 "$AUTOTRAIN_BIN" "${gen[@]}" --device "$device" > "generate-$device.txt" \
    2> "generate-$device.log" || fail "generate on $device"
done
grep -q "^generate: on cuda:0 (.*) in fp32$" generate-cuda.log || fail "generate did not run on the GPU"
grep -q "^generate: on the CPU in fp32$" generate-cpu.log || fail "generate --device cpu did not say so"
cmp -s generate-cpu.txt generate-cuda.txt ||
  fail "greedy generate differs: CPU '$(cat generate-cpu.txt)', GPU '$(cat generate-cuda.txt)'"
[ "$(wc -c < generate-cuda.txt)" -gt 20 ] || fail "generate printed too little: '$(cat generate-cuda.txt)'"
timeout 120 "$AUTOTRAIN_BIN" "${gen[@]}" --mixed-precision bf16 > generate-bf16.txt \
  2> generate-bf16.log || fail "generate in bf16"
grep -q "^generate: on cuda:0 (.*) in bf16$" generate-bf16.log || fail "generate --mixed-precision bf16 did not say so"

# CPU checkpoint -> GPU, GPU checkpoint -> CPU, each from step 10.
for pair in "cpu cuda" "cuda cpu"; do
  read -r from to <<< "$pair"
  mkdir "$from-to-$to"
  timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train "${common[@]}" --device "$to" \
    --project-name "$from-to-$to" --resume-from-checkpoint "$from/checkpoints/checkpoint-10.h5" \
    > "$from-to-$to.log" 2>&1 || fail "resume of a $from checkpoint on $to"
  grep -q "resume: $from/checkpoints/checkpoint-10.h5 at step 10" "$from-to-$to.log" ||
    fail "$from -> $to did not resume at step 10"
  $check tail "$from/metrics.jsonl" "$from-to-$to/metrics.jsonl" 11 1e-2
done

# bf16 trains too (its own curve, loosely the fp32 one), with evaluation on the GPU.
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train "${base[@]}" --eval-strategy steps --device cuda \
  --mixed-precision bf16 --project-name bf16 > bf16.log 2>&1 || fail "bf16 training"
grep -q "final validation loss [0-9]" bf16.log || fail "no validation loss from the GPU run"
$check tail cpu/metrics.jsonl bf16/metrics.jsonl 1 5e-2

# A checkpoint of a CPU run in bf16 (bf16 products where the CPU has them, fp32 elsewhere)
# resumes on the GPU in bf16 and continues that run's curve: the format depends on neither the
# device nor the precision.
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train "${common[@]}" --device cpu \
  --mixed-precision bf16 --project-name cpu-bf16 > cpu-bf16.log 2>&1 || fail "bf16 training on cpu"
mkdir cpu-bf16-to-cuda
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train "${common[@]}" --device cuda \
  --mixed-precision bf16 --project-name cpu-bf16-to-cuda \
  --resume-from-checkpoint cpu-bf16/checkpoints/checkpoint-10.h5 > cpu-bf16-to-cuda.log 2>&1 ||
  fail "resume of a cpu bf16 checkpoint on cuda in bf16"
grep -q "resume: cpu-bf16/checkpoints/checkpoint-10.h5 at step 10" cpu-bf16-to-cuda.log ||
  fail "cpu bf16 -> cuda bf16 did not resume at step 10"
$check tail cpu-bf16/metrics.jsonl cpu-bf16-to-cuda/metrics.jsonl 11 5e-2
# optimizer adamw_8bit on the GPU (kernels::gpu::adamw_8bit_update; in bf16 its pass writes the
# compute copy too): the CPU's 8-bit curve, and a CPU 8-bit checkpoint (its moments dequantized)
# resumes on the GPU, requantized.
for run in "cpu fp32" "cuda fp32" "cuda bf16"; do
  read -r device precision <<< "$run"
  timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train "${common[@]}" --device "$device" \
    --optimizer adamw_8bit --mixed-precision "$([ $precision = bf16 ] && echo bf16 || echo no)" \
    --project-name "q8-$device-$precision" > "q8-$device-$precision.log" 2>&1 ||
    fail "adamw_8bit on $device in $precision"
done
grep -q "optimizer 67.91 KiB" q8-cuda-fp32.log || fail "the GPU's 8-bit state is not 2.004 bytes a parameter"
$check tail q8-cpu-fp32/metrics.jsonl q8-cuda-fp32/metrics.jsonl 1 1e-2
$check tail q8-cpu-fp32/metrics.jsonl q8-cuda-bf16/metrics.jsonl 1 5e-2
mkdir q8-cpu-to-cuda
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train "${common[@]}" --device cuda \
  --optimizer adamw_8bit --project-name q8-cpu-to-cuda \
  --resume-from-checkpoint q8-cpu-fp32/checkpoints/checkpoint-10.h5 > q8-cpu-to-cuda.log 2>&1 ||
  fail "resume of a cpu adamw_8bit checkpoint on cuda"
$check tail q8-cpu-fp32/metrics.jsonl q8-cpu-to-cuda/metrics.jsonl 11 1e-2
echo "gpu_resume: ok"
