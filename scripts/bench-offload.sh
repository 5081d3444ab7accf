#!/usr/bin/env bash
# ZeRO offload's cost on CPU ranks (docs/benchmarks.md, "Offload"): `bench train` on
# configs/bench-cpu.yaml over 2 ranks at ZeRO-2, with the AdamW moments in memory and on NVMe
# (offload_optimizer_device nvme under NVME_PATH, default /var/tmp/autotrain-offload-bench),
# RUNS times each, alternating; prints each run's line of figures and its memory line.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${AUTOTRAIN_BIN:-build/ci/autotrain}
runs=${RUNS:-3}
nvme=${NVME_PATH:-/var/tmp/autotrain-offload-bench}
mkdir -p "$nvme"
bench=(mpirun --oversubscribe --allow-run-as-root --bind-to none -np 2 "$bin" bench train
  --config configs/bench-cpu.yaml --steps 5 --no-profile --threads 1 --zero-stage 2)
uptime
for run in $(seq "$runs"); do
  for setting in none nvme; do
    extra=()
    [ "$setting" = nvme ] && extra=(--offload-optimizer-device nvme --nvme-path "$nvme")
    out=$("${bench[@]}" "${extra[@]}" 2>&1)
    echo "run $run, offload_optimizer_device $setting:"
    grep -A1 "tokens/s" <<< "$out" | tail -1
    grep -E "^optimizer phase|^model state|VmHWM" <<< "$out"
  done
done
