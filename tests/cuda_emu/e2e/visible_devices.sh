#!/usr/bin/env bash
# CUDA_VISIBLE_DEVICES is honoured as accelerate and the CUDA runtime do (the emulator reads it
# as the runtime: the listed ordinals up to the first that is not one):
#  - `autotrain env` counts the visible GPUs, not the node's eight;
#  - `autotrain llm --train --num-gpus 2`, started without mpirun, starts two ranks on the two
#    visible GPUs and trains on them;
#  - asking for more GPUs than are visible, without a launcher or under one, is an error naming
#    the count, the visible GPUs and CUDA_VISIBLE_DEVICES; so is --device cuda with more ranks
#    on a node than visible GPUs (never a silent CPU run).
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
config="$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_CUDA_EMU_DEVICES=8 AUTOTRAIN_PROGRESS=lines
fail() { echo "visible_devices: $*"; exit 1; }

CUDA_VISIBLE_DEVICES=3,6 "$AUTOTRAIN_BIN" env > env.txt 2>&1 || { cat env.txt; fail "env failed"; }
grep -q "GPUs *2 visible" env.txt || { cat env.txt; fail "env does not count 2 visible GPUs"; }
CUDA_VISIBLE_DEVICES=5,9,1 "$AUTOTRAIN_BIN" env > env.txt 2>&1 || { cat env.txt; fail "env failed"; }
grep -q "GPUs *1 visible" env.txt || { cat env.txt; fail "an invalid ordinal must end the list"; }

# Without a launcher: llm starts mpirun with the visible GPUs' count and trains on them.
CUDA_VISIBLE_DEVICES=3,6 timeout 300 "$AUTOTRAIN_BIN" llm --train --config "$config" \
  --project-name two --num-gpus 2 --comm-backend auto --max-steps 3 --eval-strategy no \
  > two.log 2>&1 ||
  { cat two.log; fail "llm --num-gpus 2 with two visible GPUs failed"; }
grep -q "mpirun -np 2" two.log || { cat two.log; fail "llm did not start 2 ranks"; }
grep -q "communicator nccl" two.log && grep -q "on cuda:0" two.log ||
  { cat two.log; fail "the run did not train on the GPUs"; }
grep -q "summary: final train loss" two.log || { cat two.log; fail "no summary"; }

if CUDA_VISIBLE_DEVICES=3,6 timeout 60 "$AUTOTRAIN_BIN" llm --train --config "$config" \
  --project-name four --num-gpus 4 > four.log 2>&1; then
  fail "llm --num-gpus 4 started with two visible GPUs"
fi
grep -q "num-gpus 4 but only 2 GPU(s) visible on this node (CUDA_VISIBLE_DEVICES=3,6)" four.log ||
  { cat four.log; fail "the refusal does not name the visible GPUs"; }

# Under a launcher: two ranks, one visible GPU, GPUs asked for.
if CUDA_VISIBLE_DEVICES=4 timeout 60 "${mpirun[@]}" -np 2 -x CUDA_VISIBLE_DEVICES=4 \
  "$AUTOTRAIN_BIN" llm --train --config "$config" --project-name one --num-gpus 2 --dry-run \
  > one.log 2>&1; then
  fail "2 ranks on 1 visible GPU ran"
fi
grep -q "2 ranks on this node but only 1 GPU(s) visible (CUDA_VISIBLE_DEVICES=4)" one.log ||
  { cat one.log; fail "the refusal does not name the ranks and the visible GPU"; }
echo "visible_devices: CUDA_VISIBLE_DEVICES bounds env, llm's ranks and the device checks"
