#!/usr/bin/env bash
# Builds autotrain with warnings as errors and runs the whole test suite: unit tests, MPI tests
# under mpirun -np 1..4, end-to-end tests of the binary, the tests on a real single-node Slurm
# (started by the tests themselves when run as root), then the GPU tests under the CUDA
# emulator, then fuzzes every parser for 30 s each (scripts/fuzz.sh; the ctest run above already
# replays their seeds and regression inputs). Installs missing packages first.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset ci
cmake --build --preset ci -j "$(nproc)"
# MPI tests oversubscribe the cores on purpose; run tests one at a time so timings stay sane.
ctest --preset ci "$@"
# The GPU tests, which skip above on a machine without a GPU, run on the CPU through the CUDA
# emulator (docs/gpu.md): a second build, build/emulate.
bash scripts/test-cuda-emulated.sh
# The parsers under libFuzzer with the address and undefined-behaviour sanitizers (build/fuzz).
bash scripts/fuzz.sh
