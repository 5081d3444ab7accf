#!/usr/bin/env bash
# One rank's error aborts the whole job with a clear message and a non-zero exit code, quickly,
# while the other ranks are inside (or on their way into) a collective: no hang.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

for command in "env" "train --config $AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"; do
  start=$(date +%s)
  status=0
  # shellcheck disable=SC2086  # the command is words on purpose
  timeout 60 "${mpirun[@]}" -np 3 -x AUTOTRAIN_INJECT_FAILURE=1 "$AUTOTRAIN_BIN" $command > out.log 2>&1 || status=$?
  [ "$status" -ne 0 ] || { echo "the job succeeded although rank 1 failed ($command)"; cat out.log; exit 1; }
  elapsed=$(( $(date +%s) - start ))
  [ "$status" -ne 124 ] || { echo "the job hung until the timeout ($command)"; cat out.log; exit 1; }
  grep -q "\[rank 1\] error: injected failure on rank 1" out.log || { cat out.log; exit 1; }
  [ "$elapsed" -lt 30 ] || { echo "the abort took ${elapsed}s"; exit 1; }
  echo "$command: rank 1 failed, job exited $status after ${elapsed}s"
done

# A configuration error every rank meets is printed once, by rank 0, and the job exits 1.
if timeout 60 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" \
    --lr fast > bad.log 2>&1; then
  echo "a bad --lr was accepted"; exit 1
fi
[ "$(grep -c "lr" bad.log)" -ge 1 ] && grep -q "expected a number, got 'fast'" bad.log || { cat bad.log; exit 1; }
[ "$(grep -c "error:" bad.log)" -eq 1 ] || { echo "the error was printed more than once"; cat bad.log; exit 1; }
# Divergence is met by every rank at once (the loss is averaged): said once, exit 1, no abort.
status=0
timeout 60 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" \
  --lr 1e12 --max-grad-norm 0 > diverged.log 2>&1 || status=$?
[ "$status" -eq 1 ] && grep -q "^error: training diverged: the loss of step" diverged.log ||
  { cat diverged.log; echo "divergence: exit $status"; exit 1; }
[ "$(grep -c "error" diverged.log)" -eq 1 ] && ! grep -q MPI_ABORT diverged.log ||
  { cat diverged.log; echo "divergence was not one collective error"; exit 1; }
echo "rank_failure: ok"
