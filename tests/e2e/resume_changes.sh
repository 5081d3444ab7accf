#!/usr/bin/env bash
# What a resumed run may change (docs/training.md, "Resuming"): the length and cadence freely;
# the seed (the data order), the data, the model and the optimizer never; the optimisation
# (lr, scheduler, ...) with --allow-changed-params, recorded in param_changes.jsonl at its step.
# A refused resume leaves training_params.json describing the earlier run.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
train=("$AUTOTRAIN_BIN" train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
  --project-name p --checkpoint-every 10 --logging-steps 10)
fail() { echo "resume_changes: $*"; cat ./*.log 2> /dev/null | tail -n 20; exit 1; }
param() { python3 -c "import json,sys; print(json.load(open('p/training_params.json'))['$1'])"; }

"${train[@]}" --max-steps 20 > first.log 2>&1 || fail "first run"
"${train[@]}" --max-steps 30 > longer.log 2>&1 || fail "a longer run was refused"
grep -q "resume: p/checkpoints/checkpoint-20.h5 at step 20" longer.log || fail "no resume at 20"

refused() {
  local name=$1 want=$2 status=0
  shift 2
  "${train[@]}" "$@" > "$name.log" 2>&1 || status=$?
  [ "$status" -eq 1 ] || fail "$name: exit $status, expected 1"
  grep -qE -- "$want" "$name.log" || fail "$name: no '$want'"
  [ "$(param max_steps)" = 30 ] || fail "$name: a refused resume rewrote training_params.json"
}
refused seed "cannot resume from p/checkpoints/checkpoint-30.h5: seed 7 -> 99 would continue a different run" \
  --max-steps 40 --seed 99
# --dry-run refuses it too, before any training, with the same words.
refused dry-seed "cannot resume from p/checkpoints/checkpoint-30.h5: seed 7 -> 99" --dry-run --seed 99
"${train[@]}" --max-steps 40 --dry-run > dry.log 2>&1 || fail "a dry run of a good resume failed"
grep -qE "resume +from p/checkpoints/checkpoint-30.h5 at step 30" dry.log || fail "dry run: no resume line"
refused eos "add_eos_token true -> false" --max-steps 40 --add-eos-token false
refused lr "lr 0.003 -> 0.01, scheduler \"cosine\" -> \"linear\" changes how the run optimises.*--allow-changed-params" \
  --max-steps 40 --lr 1e-2 --scheduler linear
[ "$(wc -l < p/param_changes.jsonl)" -eq 1 ] || fail "a refused resume recorded changes"

"${train[@]}" --max-steps 40 --lr 1e-2 --scheduler linear --allow-changed-params > allowed.log 2>&1 ||
  fail "--allow-changed-params was refused"
python3 - <<'PY' || fail "param_changes.jsonl"
import json
lines = [json.loads(l) for l in open("p/param_changes.jsonl")]
# The first line is the longer run's (max_steps only), the second the allowed change.
assert [l["step"] for l in lines] == [20, 30], lines
assert lines[0]["changes"] == {"max_steps": [20, 30]}, lines[0]
assert lines[1]["changes"]["lr"] == [0.003, 0.01], lines[1]
assert lines[1]["changes"]["scheduler"] == ["cosine", "linear"], lines[1]
assert lines[1]["checkpoint"] == "p/checkpoints/checkpoint-30.h5", lines[1]
print("resume_changes: recorded", lines[1]["changes"])
PY
[ "$(param lr)" = 0.01 ] || fail "training_params.json does not describe the resumed run"
echo "resume_changes: ok"
