#!/usr/bin/env bash
# ZeRO-Offload and ZeRO-Infinity on two emulated GPUs (docs/zero.md): `autotrain train` at ZeRO-3
# in bf16 with the optimizer state (and the parameters) in pinned host memory, set by the flags and
# as a DeepSpeed JSON says, follows the run without offload; a checkpoint of the plain run resumes
# with the optimizer state and the parameters on NVMe, one of the offloaded run without offload,
# each continuing its curve; the start-up line says what went to the host; the settings that
# cannot work are refused by name. ctest runs it as cuda_emu.offload.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/ckpt_check.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; for f in *.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
common=(train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" --device cuda
  --comm-backend auto --mixed-precision bf16 --max-steps 6 --checkpoint-every 3
  --eval-strategy no --save-total-limit 3)
train_np2 plain --zero-stage 3
train_np2 offload --zero-stage 3 --offload-optimizer-device cpu --offload-param-device cpu
grep -qE "offloaded: host [0-9.]+ [KMG]iB" offload.log ||
  fail "the start-up line does not say what went to the host"
# The host's AdamW against the device's: the same curve within bf16's stage tolerance.
$check tail plain/metrics.jsonl offload/metrics.jsonl 1 1e-3

# A DeepSpeed config's ZeRO-Offload section means the same.
cat > ds.json <<'JSON'
{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}},
 "bf16": {"enabled": true}}
JSON
"$AUTOTRAIN_BIN" "${common[@]}" --deepspeed ds.json --dry-run > ds.log 2>&1 || fail "ds.json"
grep -qE "offload_optimizer_device +cpu +ds.json:zero_optimization.offload_optimizer.device" ds.log ||
  fail "the DeepSpeed config does not set offload_optimizer_device"
# --dry-run says what goes where, and what each setting would hold.
grep -qE "memory .* of the GPU's [0-9.]+ [KMG]iB; offloaded: host [0-9.]+ [KMG]iB" ds.log ||
  fail "the dry run does not show the offloaded memory"
grep -qE "fits .*B without offload; [0-9.]+B with offload_optimizer_device cpu" ds.log ||
  fail "the dry run does not show what each offload setting fits"
"$AUTOTRAIN_BIN" "${common[@]}" --zero-stage 3 --dry-run > ds3.log 2>&1 || fail "stage 3 dry run"
grep -qE "with offload_param_device cpu too; [0-9.]+B with both on nvme" ds3.log ||
  fail "the stage 3 dry run does not show what parameters on nvme fit"

# Checkpoints are the same logical tensors: each resumes into the other setting.
mkdir plain-to-offload offload-to-plain
mkdir nvme
train_np2 plain-to-offload --zero-stage 3 --offload-optimizer-device nvme \
  --offload-param-device nvme --nvme-path "$work/nvme" \
  --resume-from-checkpoint plain/checkpoints/checkpoint-3.h5
train_np2 offload-to-plain --zero-stage 3 --resume-from-checkpoint offload/checkpoints/checkpoint-3.h5
grep -q "at step 3" plain-to-offload.log || fail "plain -> nvme did not resume at step 3"
grep -qE "offloaded: host [0-9.]+ [KMG]iB, NVMe [0-9.]+ [KMG]iB" plain-to-offload.log ||
  fail "the nvme run does not say what went to NVMe"
[ -z "$(ls nvme)" ] || fail "the nvme scratch files outlived the job"
$check tail plain/metrics.jsonl plain-to-offload/metrics.jsonl 4 1e-3
$check tail offload/metrics.jsonl offload-to-plain/metrics.jsonl 4 1e-3

# Refused by name, before training.
refused_np2 "it needs zero_stage 1, 2 or 3, got 0" --zero-stage 0 --offload-optimizer-device cpu
refused_np2 "it needs zero_stage 3, got 2" --zero-stage 2 --offload-optimizer-device cpu \
  --offload-param-device cpu
refused_np2 "set offload_optimizer_device cpu too" --zero-stage 3 --offload-param-device cpu
refused_np2 "offload to nvme needs nvme_path" --zero-stage 1 --offload-optimizer-device nvme
refused_np2 "nvme_path $work/absent" --zero-stage 2 --offload-optimizer-device nvme \
  --nvme-path "$work/absent"
echo "offload: follows the device optimizer, resumes both ways, refuses what cannot work"
