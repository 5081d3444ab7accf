#!/usr/bin/env bash
# The GPU job script on a real single-node Slurm whose node advertises 4 GPUs
# (scripts/slurm-local.sh): slurm/train-single-node.sbatch as written for GPU nodes, with only
# the counts lowered to 2 tasks and 2 GPUs, binds local rank i to GPU i (autotrain env under
# srun) and trains ZeRO-2 in bf16 over NCCL: exit 0, a checkpoint, the exported model and the run
# summary. Skipped (77) where the build or machine has no GPU (scripts/test-cuda-emulated.sh runs
# it on the CUDA emulator's GPUs), or when not root and no cluster is reachable.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
src=$AUTOTRAIN_SOURCE_DIR
slurm_dir=${AUTOTRAIN_SLURM_DIR:-/var/tmp/autotrain-slurm}
source "$src/tests/e2e/lib.bash"
require_gpus slurm_gpu
if [ "$(id -u)" -eq 0 ]; then
  "$src/scripts/slurm-local.sh" start > /dev/null || exit 1
  export SLURM_CONF=$slurm_dir/slurm.conf
elif ! timeout 20 sinfo -h > /dev/null 2>&1; then
  echo "slurm_gpu: skipped: not root (cannot start a local Slurm) and no Slurm cluster reachable"
  exit 77
fi
if ! sinfo -h -o '%G' | grep -q 'gpu:'; then
  echo "slurm_gpu: skipped: the cluster's nodes advertise no GPUs (gres/gpu)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN=$AUTOTRAIN_BIN AUTOTRAIN_PROGRESS=lines
fail() {
  echo "slurm_gpu: $*" >&2
  for out in *.out; do [ -f "$out" ] && { echo "---- $out" >&2; tail -n 30 "$out" >&2; }; done
  exit 1
}

# Binding: local rank i -> GPU i of the ones Slurm gave the job.
timeout 120 srun --mpi=pmix -n 2 --gpus-per-node=2 --cpus-per-task=1 -t 2 \
  "$AUTOTRAIN_BIN" env --json > env.json 2> env.err || fail "srun autotrain env: $(cat env.err)"
python3 - env.json <<'PY' || fail "binding: $(cat env.json)"
import json, sys
ranks = json.load(open(sys.argv[1]))["ranks"]  # rank 0 prints every rank's line
pairs = sorted((r["local_rank"], r["device"]) for r in ranks)
assert pairs == [(0, 0), (1, 1)], pairs
PY

config=$src/tests/e2e/configs/tiny.yaml
sbatch_wait 300 --ntasks-per-node=2 --gpus-per-node=2 --cpus-per-task=1 -t 5 \
  -o gpu-%j.out "$src/slurm/train-single-node.sbatch" "$config" --project-name gpu \
  --checkpoint-every 10 --zero-stage 2 --mixed-precision bf16 --comm-backend auto > /dev/null ||
  fail "train-single-node.sbatch on GPUs failed"
grep -q "2 rank(s), ZeRO stage 2, communicator nccl" gpu-*.out || fail "not NCCL on 2 ranks"
grep -q "on cuda:0" gpu-*.out || fail "did not train on the GPUs"
for file in model.safetensors checkpoints/checkpoint-20.h5; do
  [ -s "gpu/$file" ] || fail "gpu/$file is missing"
done
grep -q "summary: model gpu" gpu-*.out || fail "no run summary in the job output"
echo "slurm_gpu: ok"
