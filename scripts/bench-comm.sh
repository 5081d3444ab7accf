#!/usr/bin/env bash
# Produces the communication tables in docs/benchmarks.md: our MPI backend, a plain blocking
# MPI_Allreduce loop (raw-mpi) and Gloo, on the same sizes in the same run, at np=2 and np=4,
# each size timed ROUNDS times (best round kept).
#   scripts/bench-comm.sh                      (uses build/autotrain)
#   AUTOTRAIN_BIN=path/to/autotrain NPS="2 4 8" MAX_BYTES=256M ROUNDS=3 scripts/bench-comm.sh
#   OPS=reduce_scatter scripts/bench-comm.sh
set -euo pipefail
bin=${AUTOTRAIN_BIN:-$(dirname "$0")/../build/autotrain}
mpirun=${AUTOTRAIN_MPIRUN:-mpirun --oversubscribe $([ "$(id -u)" = 0 ] && echo --allow-run-as-root)}
nps=${NPS:-"2 4"}
max_bytes=${MAX_BYTES:-64M}
ops=${OPS:-allreduce}
rounds=${ROUNDS:-5}
echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): $(nproc) cores, $(uptime | sed 's/.*load/load/')"
for np in $nps; do
  echo "## np=$np"
  # The best of several rounds is steadier than one mean, but rerun when `uptime` shows a high
  # load: other jobs on the cores distort everything.
  $mpirun -np "$np" "$bin" bench comm --backend raw-mpi,mpi,gloo --op "$ops" --check \
    --min-bytes 1K --max-bytes "$max_bytes" --factor 4 --iters 20 --warmup-iters 5 \
    --rounds "$rounds"
done
echo "# finished $(date -u +%H:%MZ), $(uptime | sed 's/.*load/load/')"
