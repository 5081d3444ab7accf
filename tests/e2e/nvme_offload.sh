#!/usr/bin/env bash
# offload_optimizer_device nvme on CPU ranks (docs/zero.md#offload): `autotrain train` at ZeRO-2
# over two ranks keeps AdamW's moments in per-rank scratch files under nvme_path ("%r" = the
# rank's folder) and trains the curve of the run that keeps them in memory; a checkpoint of
# either resumes into the other; the scratch files are gone when the job ends. A missing folder
# and a full one end the job with the path named, on every rank, before any step.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/ckpt_check.py"
work=$(mktemp -d)
trap 'umount "$work/full" 2> /dev/null || true; rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; for f in *.log; do echo "== $f"; tail -15 "$f"; done; exit 1; }
common=(train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" --device cpu
  --zero-stage 2 --max-steps 6 --checkpoint-every 3 --eval-strategy no --save-total-limit 3)
mkdir nvme
train_np2 plain
train_np2 offload --offload-optimizer-device nvme --nvme-path "$work/nvme/rank-%r"
grep -qE "offloaded: NVMe [0-9.]+ [KMG]iB" offload.log || fail "the start-up line says no NVMe"
$check tail plain/metrics.jsonl offload/metrics.jsonl 1 1e-5
[ -z "$(find nvme -type f)" ] || fail "scratch files outlived the job: $(find nvme -type f)"

mkdir plain-to-offload offload-to-plain
train_np2 plain-to-offload --offload-optimizer-device nvme --nvme-path "$work/nvme" \
  --resume-from-checkpoint plain/checkpoints/checkpoint-3.h5
train_np2 offload-to-plain --resume-from-checkpoint offload/checkpoints/checkpoint-3.h5
grep -q "at step 3" plain-to-offload.log || fail "plain -> nvme did not resume at step 3"
$check tail plain/metrics.jsonl plain-to-offload/metrics.jsonl 4 1e-5
$check tail offload/metrics.jsonl offload-to-plain/metrics.jsonl 4 1e-5

refused_np2 "nvme_path $work/absent" --offload-optimizer-device nvme --nvme-path "$work/absent"
# A folder too small for the state (a 64 KiB tmpfs; where mounting is not allowed, not checked).
mkdir full
if mount -t tmpfs -o size=64k tmpfs full 2> /dev/null; then
  refused_np2 "nvme_path $work/full" --offload-optimizer-device nvme --nvme-path "$work/full" \
    --n-embd 256 --n-head 4
  umount full
else
  echo "nvme_offload: the full-folder case not checked (cannot mount a tmpfs here)"
fi
echo "nvme_offload: the moments on NVMe train as in memory, resume both ways, errors name the path"
