#!/usr/bin/env bash
# Produces the `bench train` figures in docs/benchmarks.md ("Training step (CPU)" and the ZeRO
# speed and memory rows):
#   scripts/bench-train.sh                     (uses build/autotrain; all three parts)
#   PARTS="step" AUTOTRAIN_BIN=path/to/autotrain scripts/bench-train.sh
# Run it on a quiet machine: it prints `uptime` before each part, and other jobs on the cores
# distort every timing (memory figures do not depend on load).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${AUTOTRAIN_BIN:-$root/build/autotrain}
mpirun=${AUTOTRAIN_MPIRUN:-mpirun $([ "$(id -u)" = 0 ] && echo --allow-run-as-root)}
config=$root/configs/bench-cpu.yaml
parts=${PARTS:-"step zero-speed zero-memory"}
steps=${STEPS:-5}
load() { echo "# $(date -u +%H:%M:%SZ) $(uptime | sed 's/.*load/load/')"; }
cd "$(mktemp -d)"
echo "# $(hostname): $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"

for part in $parts; do
  case $part in
    step)
      # One rank, 2 threads. Started without mpirun (an MPI singleton) because `mpirun -np 1`
      # binds the rank to one core; `mpirun --bind-to none -np 1` is equivalent.
      load
      "$bin" bench train --config "$config" --steps "$steps" ;;
    zero-speed)
      # np=1 x 2 threads against np=2 x 1 thread, stage 0 and stage 3, one rank per core.
      for run in "1 2 0 none" "2 1 0 core" "2 1 3 core"; do
        read -r np threads stage bind <<< "$run"
        load
        $mpirun --bind-to "$bind" -np "$np" "$bin" bench train --config "$config" \
          --threads "$threads" --zero-stage "$stage" --steps "$steps" --no-profile
      done ;;
    zero-memory)
      # np=4 on 2 cores (oversubscribed: slow, but memory does not care), n_layer 12, n_embd 512,
      # byte vocabulary, one sequence per rank.
      for stage in 0 1 2 3; do
        load
        $mpirun --oversubscribe -np 4 "$bin" bench train --config "$config" --tokenizer byte \
          --vocab-size 256 --n-layer 12 --n-head 8 --n-embd 512 --batch-size 1 --threads 1 \
          --zero-stage "$stage" --steps 2 --warmup-steps 1 --no-profile --sgemm-size 256
      done ;;
    *) echo "unknown part '$part' (expected step, zero-speed or zero-memory)" >&2; exit 2 ;;
  esac
done
