#!/usr/bin/env bash
# Preemption on GPUs (docs/gpu.md, docs/training.md): a ZeRO-3 bf16 run on the GPU path under
# mpirun -np 2 gets SIGUSR1 mid-training, exits with status 3 after writing a checkpoint at the
# step it reached, and that checkpoint resumes both on the GPUs (same stage and world size:
# the losses of the uninterrupted run, bitwise) and on 4 CPU ranks of 2 sequences at stage 1 (within 2e-2:
# fp32 there, bf16 here). Skipped (77) where this build or machine has no GPU.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"
require_gpus gpu_preempt 2  # two ranks, one GPU each
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/ckpt_check.py"
config="$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
gpu=(--config "$config" --eval-strategy no --gradient-accumulation 1 --max-steps 40
  --checkpoint-every 20 --save-total-limit 5 --device cuda --comm-backend auto
  --mixed-precision bf16 --zero-stage 3)
fail() { echo "FAIL: $*"; for f in *.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }

timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${gpu[@]}" --project-name ref > ref.log 2>&1 ||
  fail "uninterrupted GPU run"
grep -q "on cuda:" ref.log || fail "the run did not train on the GPU"

"${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${gpu[@]}" --project-name sig > sig.log 2>&1 &
job=$!
usr1_when_training sig.log "$job"
status=0
wait "$job" || status=$?
[ "$status" -eq 3 ] || fail "SIGUSR1: exit status $status, expected 3"
stopped=$(sed -n 's/.*stopped by SIGUSR1 after step \([0-9]*\).*/\1/p' sig.log | head -1)
[ -n "$stopped" ] && [ "$stopped" -lt 40 ] || fail "the run finished before the signal"
[ -s "sig/checkpoints/checkpoint-$stopped.h5" ] || fail "no checkpoint-$stopped.h5 after SIGUSR1"
"$AUTOTRAIN_BIN" ckpt verify "sig/checkpoints/checkpoint-$stopped.h5" > verify.log 2>&1 ||
  fail "ckpt verify of the preemption checkpoint"

# The same GPUs, stage and world size: the uninterrupted run's losses, bitwise.
cp -r sig cpu4
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${gpu[@]}" --project-name sig \
  > sig-resume.log 2>&1 || fail "resume on the GPUs"
grep -q "resume: sig/checkpoints/checkpoint-$stopped.h5 at step $stopped" sig-resume.log ||
  fail "resume point on the GPUs"
$check tail ref/metrics.jsonl sig/metrics.jsonl $((stopped + 1)) 0

# Four CPU ranks at ZeRO stage 1, in fp32, the same global batch (4 x 2 sequences instead of
# 2 x 4): the run continues on the same curve.
timeout 300 "${mpirun[@]}" -np 4 "$AUTOTRAIN_BIN" train --config "$config" --eval-strategy no \
  --batch-size 2 --gradient-accumulation 1 --max-steps 40 --checkpoint-every 20 --device cpu --zero-stage 1 \
  --project-name cpu4 > cpu4.log 2>&1 || fail "resume of the GPU checkpoint on 4 CPU ranks"
grep -q "resume: cpu4/checkpoints/checkpoint-$stopped.h5 at step $stopped" cpu4.log ||
  fail "resume point on the CPUs"
$check tail ref/metrics.jsonl cpu4/metrics.jsonl $((stopped + 1)) 2e-2
echo "gpu_preempt: ok"
