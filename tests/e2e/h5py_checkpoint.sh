#!/usr/bin/env bash
# A third-party reader (h5py) opens our checkpoints, in both layouts, as docs/checkpoint-format.md
# says, and finds in them exactly the weights of the exported model.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
python=/usr/bin/python3   # Debian's interpreter, where python3-h5py installs
if ! "$python" -c "import h5py" 2>/dev/null; then
  echo "h5py is not installed for $python (scripts/install-deps.sh installs python3-h5py)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
for layout in shared per-rank; do
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" \
    --project-name "run-$layout" --checkpoint-layout "$layout" --max-steps 6 --eval-strategy no > "$layout.log" 2>&1 \
    || { cat "$layout.log"; exit 1; }
  "$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/h5py_reads_checkpoint.py" "run-$layout/checkpoints/checkpoint-6.h5" "run-$layout"
done
echo "h5py_checkpoint: ok"
