#!/usr/bin/env bash
# A rank whose NCCL init fails at once (injected by the emulator: AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL)
# ends the job within seconds with its reason, instead of leaving the other rank polling until
# comm_timeout (60 s here). ctest runs it alone as cuda_emu.nccl_init_failure
# (tests/cuda_emu/CMakeLists.txt): its assertion is about time.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
started=$(date +%s)
if timeout 120 "${mpirun[@]}" -np 2 -x AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL=1 "$AUTOTRAIN_BIN" \
  train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" --device cuda \
  --comm-backend nccl --comm-timeout 60 --max-steps 2 > train.log 2>&1; then
  echo "the run succeeded although rank 1's NCCL init failed"
  exit 1
fi
took=$(($(date +%s) - started))
grep "ncclCommInitRankConfig failed on rank 1: unhandled system error" train.log ||
  { tail -20 train.log; exit 1; }
if [ "$took" -ge 20 ]; then
  echo "the job took $took s to end (comm_timeout = 60 s)"
  tail -20 train.log
  exit 1
fi
echo "rank 1's failed NCCL init ended the job in $took s"
