#!/usr/bin/env bash
# Runs the GPU tests without a GPU: builds the GPU path against the CUDA emulator
# (AUTOTRAIN_CUDA=emulate, tests/cuda_emu, docs/gpu.md) and runs the CUDA kernel, device-model
# (GPT-2 and the Llama family, on every attention path) and generate tests, the NCCL
# communicator, device engine and CUDA replica tests under mpirun -np 1..4, the CPU <-> GPU checkpoint and GPU
# preemption tests, a Llama-family folder fine-tuned and sampled on the device, slurm/train-single-node.sbatch on a Slurm node with
# GPUs (as root, scripts/slurm-local.sh), and `bench train` / `bench comm` on the device path. On a GPU machine
# scripts/gpu-check.sh runs the same tests for real. Nothing here may be skipped.
#   scripts/test-cuda-emulated.sh [--build-only]   (called by scripts/test.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=$root/build/emulate
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
tiny=$root/tests/e2e/configs/tiny.yaml

if [ ! -f /usr/local/cuda/include/cuda_runtime_api.h ] && [ -z "${CUDAToolkit_ROOT:-}" ]; then
  echo "test-cuda-emulated: skipped: no CUDA toolkit headers (/usr/local/cuda/include)"
  exit 0
fi

cmake --preset emulate > /dev/null
cmake --build --preset emulate -j "$(nproc)" --target autotrain test_kernels test_model \
  test_train mpitest_comm mpitest_zero mpitest_train test_cuda_emu
# --build-only: scripts/test.sh builds beside ctest, at low priority, and runs the tests later.
[ "${1:-}" = --build-only ] && exit 0

# run NAME COMMAND...: runs a test command, shows its tail, fails on a failure or a skip.
run() {
  local name=$1 out status=0
  shift
  echo "--- $name"
  out=$("$@" 2>&1) || status=$?
  echo "$out" | tail -n 4
  if [ "$status" -ne 0 ]; then
    echo "$out" | tail -n 60
    echo "test-cuda-emulated: FAILED: $name (exit $status)"
    exit 1
  fi
  if grep -qE "SKIPPED|skipped" <<< "$out"; then
    echo "$out" | grep -E "SKIPPED|skipped"
    echo "test-cuda-emulated: FAILED: $name skipped GPU tests; under the emulator they must run"
    exit 1
  fi
}

start=$(date +%s)
# The emulator itself: the misuse it promises to catch is caught (tests/cuda_emu/emulator_test.cu).
run "the emulator's own checks" "$build/tests/test_cuda_emu" --gtest_brief=1
run "the emulator's own checks, threads in reverse order" env AUTOTRAIN_CUDA_EMU_ORDER=reverse \
  "$build/tests/test_cuda_emu" --gtest_brief=1
run "CUDA kernels" "$build/tests/test_kernels" --gtest_filter='Gpu*' --gtest_brief=1
run "device model" "$build/tests/test_model" --gtest_filter='Gpu*' --gtest_brief=1
run "generate on the device" "$build/tests/test_train" --gtest_filter='GpuGenerate*' --gtest_brief=1
# Threads between two barriers run in thread order; in reverse order a missing barrier shows.
run "CUDA kernels, threads in reverse order" env AUTOTRAIN_CUDA_EMU_ORDER=reverse \
  "$build/tests/test_kernels" --gtest_filter='Gpu*' --gtest_brief=1
run "device model, threads in reverse order" env AUTOTRAIN_CUDA_EMU_ORDER=reverse \
  "$build/tests/test_model" --gtest_filter='Gpu*' --gtest_brief=1
run "generate on the device, threads in reverse order" env AUTOTRAIN_CUDA_EMU_ORDER=reverse \
  "$build/tests/test_train" --gtest_filter='GpuGenerate*' --gtest_brief=1
for np in 1 2 3 4; do
  run "NCCL communicator, np=$np" "${mpirun[@]}" -np "$np" "$build/tests/mpitest_comm" \
    --gtest_filter='*Nccl*' --gtest_brief=1
  run "the device engine's fp32 gradients, np=$np" "${mpirun[@]}" -np "$np" \
    "$build/tests/mpitest_zero" --gtest_filter='Gpu*' --gtest_brief=1
  run "CUDA replica, np=$np" "${mpirun[@]}" -np "$np" "$build/tests/mpitest_train" \
    --gtest_filter='Gpu*' --gtest_brief=1
done
run "device model with the fast attention path" env AUTOTRAIN_CUDA_ATTENTION=fast \
  "$build/tests/test_model" --gtest_filter='Gpu*' --gtest_brief=1
run "device model with the reference attention" env AUTOTRAIN_CUDA_ATTENTION=reference \
  "$build/tests/test_model" --gtest_filter='Gpu*' --gtest_brief=1
# A cuBLASLt without the GELU epilogues (or AUTOTRAIN_CUDA_GELU_FUSION=off): the GELU kernels.
run "device model without cuBLASLt's GELU epilogues" env AUTOTRAIN_CUDA_EMU_LT_EPILOGUES=plain \
  "$build/tests/test_model" --gtest_filter='Gpu*' --gtest_brief=1
run "device model, cuBLASLt refusing the GELU epilogues at the call" env \
  AUTOTRAIN_CUDA_EMU_LT_EPILOGUES=refuse "$build/tests/test_model" --gtest_filter='Gpu*' \
  --gtest_brief=1
run "CUDA replica with the fast attention path, np=2" env AUTOTRAIN_CUDA_ATTENTION=fast \
  "${mpirun[@]}" -np 2 "$build/tests/mpitest_train" --gtest_filter='Gpu*' --gtest_brief=1
run "CPU <-> GPU checkpoints" env AUTOTRAIN_BIN="$build/autotrain" AUTOTRAIN_SOURCE_DIR="$root" \
  AUTOTRAIN_MPIRUN="${mpirun[*]}" bash "$root/tests/e2e/gpu_resume.sh"
run "preemption on GPUs: SIGUSR1, resume on the GPUs and on CPUs" env \
  AUTOTRAIN_BIN="$build/autotrain" AUTOTRAIN_SOURCE_DIR="$root" AUTOTRAIN_MPIRUN="${mpirun[*]}" \
  bash "$root/tests/e2e/gpu_preempt.sh"
if [ "$(id -u)" = 0 ] || timeout 20 sinfo -h > /dev/null 2>&1; then
  run "the GPU job script on Slurm (GPUs bound per local rank, ZeRO-2 bf16)" env \
    AUTOTRAIN_BIN="$build/autotrain" AUTOTRAIN_SOURCE_DIR="$root" \
    bash "$root/tests/e2e/slurm_gpu.sh"
else
  echo "--- the GPU job script on Slurm: not run (not root, so no local Slurm, and none reachable)"
fi
# The Llama family end to end on the device: a tiny Qwen3 folder (GQA, q/k norms, head_dim
# 2·hidden/heads; tests/e2e/torch_llama.py) fine-tuned on two emulated GPUs at ZeRO-3 in bf16
# with flash attention, then sampled greedily from its export on the GPU (fp32) and on the CPU:
# the same text.
# (Each step checks its own status: run's command substitution does not inherit set -e.)
llama_on_the_device() (
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work" || exit 1
  /usr/bin/python3 "$root/tests/e2e/torch_llama.py" make qwen3 --arch qwen3 --seed 5 || exit 1
  AUTOTRAIN_CUDA_ATTENTION=flash "${mpirun[@]}" -np 2 -x AUTOTRAIN_CUDA_ATTENTION \
    "$build/autotrain" train --model qwen3 --project-name tuned --device cuda \
    --comm-backend auto --mixed-precision bf16 --tokenizer byte --zero-stage 3 --max-steps 2 \
    --block-size 32 --batch-size 2 --gradient-accumulation 1 --threads 1 --logging-steps 1 \
    --eval-strategy no > train.log 2>&1 || { tail -20 train.log; exit 1; }
  grep -E "on cuda:[0-9]+ .* in bf16" train.log || { tail -20 train.log; exit 1; }
  if grep "flash attention needs" train.log; then echo "the run did not take flash attention"; exit 1; fi
  for device in cuda cpu; do
    "$build/autotrain" generate --model tuned --device "$device" --prompt "To be" \
      --max-new-tokens 12 --temperature 0 > "gen-$device.txt" 2> "gen-$device.log" ||
      { cat "gen-$device.log"; exit 1; }
  done
  grep "^generate: on cuda:0 (.*) in fp32$" gen-cuda.log || { cat gen-cuda.log; exit 1; }
  cmp gen-cpu.txt gen-cuda.txt ||
    { echo "greedy text differs: CPU '$(cat gen-cpu.txt)', GPU '$(cat gen-cuda.txt)'"; exit 1; }
  echo "generated on the GPU: '$(cat gen-cuda.txt)'"
)
run "a Llama-family folder fine-tuned on the device (np=2, ZeRO-3, bf16) and sampled there" \
  llama_on_the_device
# LoRA on the device: the same tiny Qwen3 folder's adapters trained on two emulated GPUs at
# ZeRO-3 in fp32 follow the CPU's run (the frozen base sharded and gathered on both), the merged
# model and the adapter folder are exported, and generate on the GPU gives the same greedy text
# from the adapter folder (base + adapters) as from the merged folder. Adapter dropout (0.1) draws
# the same masks on both devices, so the losses still agree.
lora_on_the_device() (
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work" || exit 1
  /usr/bin/python3 "$root/tests/e2e/torch_llama.py" make qwen3 --arch qwen3 --seed 5 || exit 1
  lora=(train --model qwen3 --tokenizer byte --zero-stage 3 --max-steps 3 --block-size 32
    --batch-size 2 --gradient-accumulation 1 --threads 1 --logging-steps 1 --eval-strategy no
    --lr 3e-3 --peft true --lora-r 4 --lora-alpha 8 --merge-adapter true)
  for device in cuda cpu; do
    "${mpirun[@]}" -np 2 "$build/autotrain" "${lora[@]}" --lora-dropout 0.1 --project-name "on-$device" \
      --device "$device" --comm-backend auto --mixed-precision no > "train-$device.log" 2>&1 ||
      { tail -20 "train-$device.log"; exit 1; }
  done
  grep -E "on cuda:[0-9]+ .* in fp32" train-cuda.log || { tail -20 train-cuda.log; exit 1; }
  grep -E "lora: rank 4, alpha 8" train-cuda.log || { tail -20 train-cuda.log; exit 1; }
  /usr/bin/python3 "$root/tests/e2e/metrics_check.py" same on-cpu/metrics.jsonl \
    on-cuda/metrics.jsonl 1e-4 || exit 1
  ls on-cuda/model.safetensors on-cuda/adapter/adapter_model.safetensors > /dev/null || exit 1
  for folder in on-cuda on-cuda/adapter; do
    "$build/autotrain" generate --model "$folder" --device cuda --prompt "To be" \
      --max-new-tokens 12 --temperature 0 > "gen-${folder//\//-}.txt" 2> gen.log ||
      { cat gen.log; exit 1; }
  done
  cmp gen-on-cuda.txt gen-on-cuda-adapter.txt || { echo "generate differs between the merged" \
    "and the adapter folder"; exit 1; }
  echo "LoRA on the device follows the CPU; generated '$(cat gen-on-cuda.txt)'"
)
run "LoRA fine-tuned on the device (np=2, ZeRO-3) as on the CPU, exported and sampled there" \
  lora_on_the_device
run "bench train on the device, ZeRO-3 bf16, np=2" "${mpirun[@]}" -np 2 "$build/autotrain" \
  bench train --config "$tiny" --device cuda --comm-backend auto --mixed-precision bf16 \
  --zero-stage 3 --steps 3
run "bench comm on NCCL, np=2" "${mpirun[@]}" -np 2 "$build/autotrain" bench comm --backend nccl \
  --op allreduce --check --min-bytes 1K --max-bytes 1M --factor 16 --iters 3 --warmup-iters 1
# A rank whose NCCL init fails at once (injected by the emulator) ends the job within seconds
# with its reason, instead of leaving the other rank polling until comm_timeout (60 s here).
nccl_init_failure() (
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work" || exit 1
  started=$(date +%s)
  if timeout 120 "${mpirun[@]}" -np 2 -x AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL=1 "$build/autotrain" \
    train --config "$tiny" --device cuda --comm-backend nccl --comm-timeout 60 --max-steps 2 \
    > train.log 2>&1; then
    echo "the run succeeded although rank 1's NCCL init failed"; exit 1
  fi
  took=$(($(date +%s) - started))
  grep "ncclCommInitRankConfig failed on rank 1: unhandled system error" train.log ||
    { tail -20 train.log; exit 1; }
  if [ "$took" -ge 20 ]; then
    echo "the job took $took s to end (comm_timeout = 60 s)"; tail -20 train.log; exit 1
  fi
  echo "rank 1's failed NCCL init ended the job in $took s"
)
run "a rank whose NCCL init fails ends the job at once (np=2)" nccl_init_failure
echo "test-cuda-emulated: all GPU tests passed under the emulator in $(($(date +%s) - start)) s"
