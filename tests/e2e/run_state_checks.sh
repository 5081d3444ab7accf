#!/usr/bin/env bash
# The run state of a checkpoint is checked like its tensors: an altered data position fails
# `ckpt verify` (run_state_checksum) and `auto` falls back past it; a run state that is out of
# range (a checkpoint without the checksum, as older versions wrote) is skipped by `auto` and
# refused when named, saying what is wrong.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
python=/usr/bin/python3   # Debian's interpreter, where python3-h5py installs
if ! "$python" -c "import h5py" 2> /dev/null; then
  echo "run_state_checks: skipped: h5py is not installed for $python"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
train=("$AUTOTRAIN_BIN" train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
  --project-name p --checkpoint-every 10 --save-total-limit 10)
fail() { echo "run_state_checks: $*"; exit 1; }
"${train[@]}" --max-steps 20 > first.log 2>&1 || { cat first.log; fail "first run"; }

# alter FILE EXPRESSION [drop-checksum]: rewrites run_state/json/data_position with EXPRESSION
# applied to its JSON (d); drop-checksum also deletes the root attribute run_state_checksum.
alter() {
  "$python" - "$@" <<'PY'
import h5py, json, numpy, sys
path, expression = sys.argv[1], sys.argv[2]
with h5py.File(path, "r+") as f:
    d = json.loads(f["run_state/json/data_position"][()].decode())
    exec(expression)
    text = json.dumps(d, separators=(",", ":")).encode()
    del f["run_state/json/data_position"]
    f.create_dataset("run_state/json/data_position", data=numpy.array(text, dtype=f"S{len(text)}"))
    if len(sys.argv) > 3:
        del f.attrs["run_state_checksum"]
PY
}

cp p/checkpoints/checkpoint-20.h5 flipped.h5
alter flipped.h5 'd["sample_in_epoch"] += 16'
if "$AUTOTRAIN_BIN" ckpt verify flipped.h5 > verify.log 2>&1; then fail "an altered data position verified"; fi
grep -q "run_state: checksum mismatch" verify.log || { cat verify.log; fail "verify did not name the run state"; }

cp flipped.h5 p/checkpoints/checkpoint-20.h5
"${train[@]}" --max-steps 30 > fallback.log 2>&1 || { cat fallback.log; fail "auto did not fall back"; }
grep -q "skipping checkpoint p/checkpoints/checkpoint-20.h5: run_state: checksum mismatch" fallback.log ||
  { cat fallback.log; fail "no warning for the altered checkpoint"; }
grep -q "resume: p/checkpoints/checkpoint-10.h5 at step 10" fallback.log || fail "not resumed from 10"

# Without a checksum (older checkpoints), the range checks catch it.
cp p/checkpoints/checkpoint-30.h5 old.h5
alter old.h5 'd["sample_in_epoch"] = d["sample_in_epoch"] + 3' drop-checksum
status=0
"${train[@]}" --max-steps 40 --resume-from-checkpoint old.h5 > named.log 2>&1 || status=$?
[ "$status" -eq 1 ] || { cat named.log; fail "an out-of-range run state was resumed (exit $status)"; }
grep -q "run state out of range: sample_in_epoch .* is not a whole number of global batches of 8" named.log ||
  { cat named.log; fail "the range error does not say what is wrong"; }
echo "run_state_checks: ok"
