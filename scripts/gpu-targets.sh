# shellcheck shell=bash
# The build targets of the device check (scripts/gpu-check.sh builds them; scripts/gpu-prebuild.sh
# builds them beforehand into the bundle): the binary, the kernel and model tests, generate's
# tests (test_train), the MPI tests of the communicator, the device engine and the trainer's
# replicas, and the attention and decode benchmarks. Sourced, so the two lists cannot drift.
# shellcheck disable=SC2034  # used by the scripts that source this file
gpu_targets=(autotrain test_kernels test_model test_train mpitest_comm mpitest_zero mpitest_train
  bench_attention bench_decode)
