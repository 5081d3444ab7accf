#!/usr/bin/env bash
# Builds autotrain with warnings as errors and runs the whole test suite: unit tests, MPI tests
# under mpirun -np 1..4, end-to-end tests of the binary, and the tests on a real single-node
# Slurm (started by the tests themselves when run as root). Installs missing packages first.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset ci
cmake --build --preset ci -j "$(nproc)"
# MPI tests oversubscribe the cores on purpose; run tests one at a time so timings stay sane.
ctest --preset ci "$@"
