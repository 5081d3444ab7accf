#!/usr/bin/env bash
# auto_find_batch_size on a GPU (docs/configuration.md, "Derived values"): the plan fits the
# device's memory (the emulator's, AUTOTRAIN_CUDA_EMU_DEVICE_BYTES): a small device gets a smaller
# micro-batch than the default 16 GiB, with the same global batch; the run trains on it without
# running out of device memory; a device where one sequence does not fit is a clear error.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_CUDA_EMU_DEVICES=1 AUTOTRAIN_PROGRESS=lines
fail() { echo "auto_batch_size: $*"; tail -n 20 ./*.log 2> /dev/null; exit 1; }
train=("$AUTOTRAIN_BIN" train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
  --device cuda --comm-backend auto --n-positions 256 --block-size 256 --eval-strategy no
  --max-steps 1 --logging-steps 1)
auto=("${train[@]}" --batch-size 8 --gradient-accumulation 8 --auto-find-batch-size true)
value() { awk -v key="$1" '$1 == key { print $2 }' "$2"; }
small=150000000  # bytes: about 143 MiB

"${auto[@]}" --project-name big --dry-run > big-dry.log 2>&1 || fail "dry run on 16 GiB"
[ "$(value batch_size big-dry.log)" = 64 ] || fail "on 16 GiB: batch_size $(value batch_size big-dry.log), expected 64"
AUTOTRAIN_CUDA_EMU_DEVICE_BYTES=$small "${auto[@]}" --project-name auto --dry-run > small-dry.log 2>&1 ||
  fail "dry run on a small device"
b=$(value batch_size small-dry.log)
a=$(value gradient_accumulation small-dry.log)
[ "$b" -lt 64 ] && [ $((b * a)) -eq 64 ] || fail "on a small device: $b x $a"
grep -qE "^batch_size +$b +derived from auto_find_batch_size .* on GPU 0\)" small-dry.log ||
  fail "on a small device: no provenance naming the GPU"
echo "auto_find_batch_size: 64 on 16 GiB, $b x $a on $small bytes"

# One step on the small device: the plan's batch fits (e2e.auto_batch_size checks on the CPU
# that an auto run's losses are those of the batch given by hand).
AUTOTRAIN_CUDA_EMU_DEVICE_BYTES=$small "${auto[@]}" --project-name auto > auto.log 2>&1 ||
  fail "the run on the small device"
grep -q "summary: final train loss" auto.log || fail "the run on the small device did not finish"

status=0
AUTOTRAIN_CUDA_EMU_DEVICE_BYTES=70000000 "${auto[@]}" --project-name none --dry-run > none.log 2>&1 ||
  status=$?
[ "$status" -eq 1 ] || fail "a device too small: exit $status, expected 1"
grep -q "auto_find_batch_size: even batch_size 1 needs .* per rank, more than 90% of .* on GPU 0" none.log ||
  fail "a device too small: no clear error"
echo "auto_batch_size: ok"
