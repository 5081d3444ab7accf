#!/usr/bin/env bash
# Builds autotrain with warnings as errors and runs the whole test suite in one ctest run: unit
# tests, MPI tests under mpirun -np 1..4, end-to-end tests of the binary, the tests on a real
# single-node Slurm (started by the tests themselves when run as root), the GPU tests under the
# CUDA emulator (label cuda_emu: the ci preset builds the GPU path against the emulator, and nvcc
# compiles every .cu file there as the test cuda.nvcc_build), and, beside the tests, fuzzes every
# parser for 20 s each (scripts/fuzz.sh; the ctest run already replays their seeds and regression
# inputs).
# Installs missing packages first. Ends with the time each phase took (docs/benchmarks.md, "Tests
# and their cost").
set -euo pipefail
cd "$(dirname "$0")/.."

phases=()
phase() {  # phase NAME COMMAND...: runs COMMAND and records how long it took
  local name=$1 started=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-60s %6d s' "$name" $((SECONDS - started)))")
}

# The tests oversubscribe the cores on purpose (MPI ranks, OpenMP and PyTorch threads, tests side
# by side): OpenMP threads that spin while they wait would burn the CPU the others need
# (autotrain's own oversubscription warning says the same to users).
export OMP_WAIT_POLICY=PASSIVE

phase "install-deps" bash scripts/install-deps.sh
phase "build (ci preset)" bash -c 'cmake --preset ci && cmake --build --preset ci -j "$(nproc)"'

# The fuzz build and then the fuzzing (every parser under libFuzzer with the address and
# undefined-behaviour sanitizers, build/fuzz, 20 s a target, two at a time) need nothing from the
# tests: they run beside ctest at the lowest priority, so they take only the CPU time the tests
# leave idle (the tests wait on process starts, MPI wire-up, timeouts and I/O a good part of the
# time). The build takes the idle time of the parallel tests; the fuzzing starts when it is done,
# which is within the serial tests at the end (they wait far more than they compute), and
# finishes after ctest if it must. docs/benchmarks.md, "Tests and their cost".
mkdir -p build
# In a process group of its own, so that a failure here ends the whole run. setsid also makes it
# a scheduler autogroup of its own (kernel.sched_autogroup_enabled), and autogroups share the CPU
# equally whatever their processes' nice: the group itself is niced too.
background() {  # background LOG COMMAND...: COMMAND at the lowest priority, output into LOG
  local log=$1
  shift
  setsid -w bash -c 'echo 19 > /proc/self/autogroup 2> /dev/null; exec nice -n 19 "$@"' \
    background "$@" > "$log" 2>&1 &
}
background build/fuzz.log env FUZZ_SECONDS=20 bash scripts/fuzz.sh
fuzz=$!
trap 'kill -- -$fuzz 2> /dev/null || true' EXIT
# wait_for NAME PID LOG: the background job's status; its log's tail when it failed.
wait_for() {
  wait "$2" || { tail -n 100 "$3"; echo "test.sh: the $1 failed (log: $3)"; exit 1; }
}

# Tests run side by side: ctest counts an MPI test as its number of ranks and an end-to-end test
# as two, and runs alone the tests whose assertions are about time (tests/CMakeLists.txt). Twice
# as many slots as cores: most tests wait more than they compute. The GPU tests under the emulator
# (label cuda_emu, tests/cuda_emu/CMakeLists.txt; scripts/test-cuda-emulated.sh runs only them)
# are among them, and so is the nvcc build of the real-CUDA binary (cuda.nvcc_build, niced), which
# e2e.gpu_runtime_bundle packs.
phase "ctest (emulated GPU tests, nvcc build inside; fuzz build and fuzzing beside)" \
  ctest --preset ci -j "$(($(nproc) * 2))" "$@"
phase "rest of the fuzz build and fuzzing" wait_for "fuzz build or fuzzing" "$fuzz" build/fuzz.log
trap - EXIT
sed -n '/^target /,$p' build/fuzz.log  # executions, executions per second, coverage, corpus

echo "test.sh: every phase passed; where the time went:"
printf '  %s\n' "${phases[@]}"
echo "  $(printf '%-60s %6d s' total "$SECONDS")"
