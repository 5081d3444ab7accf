#!/usr/bin/env bash
# Runs the GPU tests without a GPU, in the ci preset's build (build/ci), whose GPU path is built
# against the CUDA emulator (AUTOTRAIN_CUDA=emulate-if-found, tests/cuda_emu, docs/gpu.md): the
# ctest tests labelled cuda_emu (tests/cuda_emu/CMakeLists.txt), which run with emulated GPUs
# (AUTOTRAIN_CUDA_EMU_DEVICES=8). They cover the CUDA kernel, device-model (GPT-2 and the Llama
# family, on every attention path) and generate tests, the NCCL communicator, device engine and
# CUDA replica tests under mpirun -np 1..4, the CPU <-> GPU checkpoint and GPU preemption tests, a
# Llama-family folder fine-tuned and sampled on the device, slurm/train-single-node.sbatch on a
# Slurm node with GPUs (as root, scripts/slurm-local.sh), and `bench train` / `bench comm` on the
# device path. scripts/test.sh runs them inside its one ctest run, beside the other tests. On a
# GPU machine scripts/gpu-check.sh runs the same tests for real. Nothing here may be skipped (a
# skip fails the test).
#   scripts/test-cuda-emulated.sh [--build-only] [CTEST ARGS...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ ! -f /usr/local/cuda/include/cuda_runtime_api.h ] && [ -z "${CUDAToolkit_ROOT:-}" ]; then
  echo "test-cuda-emulated: skipped: no CUDA toolkit headers (/usr/local/cuda/include)"
  exit 0
fi

cmake --preset ci > /dev/null
cmake --build --preset ci -j "$(nproc)" --target autotrain test_kernels test_model test_train \
  mpitest_comm mpitest_zero mpitest_train test_cuda_emu
if [ "${1:-}" = --build-only ]; then exit 0; fi

start=$(date +%s)
# As scripts/test.sh runs ctest: twice as many slots as cores (an MPI test counts its ranks).
ctest --preset ci -L cuda_emu --no-tests=error -j "$(($(nproc) * 2))" "$@"
echo "test-cuda-emulated: all GPU tests passed under the emulator in $(($(date +%s) - start)) s"
