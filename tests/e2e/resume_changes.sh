#!/usr/bin/env bash
# What a resumed run may change (docs/training.md, "Resuming"): the length and cadence freely;
# the seed (the data order), the data, the model and the optimizer never (but AdamW's 32-bit and
# 8-bit moments load each other); the optimisation (lr, scheduler, adamw -> adamw_8bit, ...) with
# --allow-changed-params, recorded in param_changes.jsonl at its step. And adamw_8bit under mpirun.
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
# AdamW's 32-bit and 8-bit moments are the same checkpoint tensors: the change is the optimisation's.
refused to8bit 'optimizer "adamw" -> "paged_adamw_8bit" changes how the run optimises' \
  --max-steps 40 --optimizer paged_adamw_8bit
refused tosgd 'optimizer: adamw in the checkpoint, sgd in this run' --max-steps 40 --optimizer sgd
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

# With the flag, the adamw checkpoint resumes into paged_adamw_8bit: its fp32 moments requantized,
# and the note that there is nothing to page, once.
"${train[@]}" --max-steps 50 --lr 1e-2 --scheduler linear --optimizer paged_adamw_8bit \
  --allow-changed-params > to8bit.log 2>&1 || fail "adamw -> paged_adamw_8bit was refused"
grep -q "requantizes them to 8 bits" to8bit.log || fail "to8bit: no line about the moments"
[ "$(grep -c "paged: optimizer paged_adamw_8bit .*no unified memory; the optimizer state is adamw_8bit's" to8bit.log)" = 1 ] ||
  fail "to8bit: not one paged note"

# optimizer adamw_8bit under mpirun -np 2 (docs/training.md, "8-bit AdamW"): the loss falls, and
# the run resumes from its own checkpoint exactly.
read -ra mpirun <<< "${AUTOTRAIN_MPIRUN:?set by ctest}"
two_ranks=("${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
  --gradient-accumulation 1 --checkpoint-every 10)
eight_bit=("${two_ranks[@]}" --optimizer adamw_8bit)
timeout 120 "${eight_bit[@]}" --project-name q8 --max-steps 20 --save-total-limit 5 > q8.log 2>&1 || fail "adamw_8bit on 2 ranks"
python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py" falls q8/metrics.jsonl || fail "adamw_8bit: the loss did not fall"
# Resumed from step 10 on as many ranks: the same losses bit for bit (the saved moments are
# dequantized, and requantizing them gives back every code and absmax).
mkdir q8-resumed
timeout 120 "${eight_bit[@]}" --project-name q8-resumed --max-steps 20 \
  --resume-from-checkpoint q8/checkpoints/checkpoint-10.h5 > q8-resume.log 2>&1 || fail "adamw_8bit's resume"
grep -q "resume: q8/checkpoints/checkpoint-10.h5 at step 10" q8-resume.log || fail "adamw_8bit: no resume at 10"
python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/ckpt_check.py" tail q8/metrics.jsonl q8-resumed/metrics.jsonl 11 0 ||
  fail "adamw_8bit: the resumed run's losses differ"
# With LoRA the adapters' moments are 8-bit (the optimizer line: 2 bytes and 1/256 a parameter).
# LoRA on the tiny random base falls little (5.54 -> 5.41): it falls, as with the 32-bit AdamW.
for bits in 8 32; do
  optimizer=$([ $bits = 8 ] && echo adamw_8bit || echo adamw)
  timeout 120 "${two_ranks[@]}" --project-name "peft-$bits" --optimizer $optimizer --peft \
    --max-steps 20 > "peft-$bits.log" 2>&1 || fail "$optimizer with peft"
done
grep -q "optimizer 32.06 KiB" peft-8.log || fail "adamw_8bit with peft: not 2.004 bytes a parameter"
python3 - peft-8/metrics.jsonl peft-32/metrics.jsonl <<'PY' || fail "adamw_8bit with peft"
import json, sys
def losses(path):
    return [l["loss"] for l in map(json.loads, open(path)) if l.get("loss") is not None]
eight, full = losses(sys.argv[1]), losses(sys.argv[2])
assert eight[-1] < eight[0] - 0.1, f"the loss did not fall: {eight[0]} -> {eight[-1]}"
assert abs(eight[-1] - full[-1]) < 0.01 * full[-1], f"final loss {eight[-1]}, adamw's {full[-1]}"
print(f"resume_changes: peft adamw_8bit {eight[0]:.4f} -> {eight[-1]:.4f} (adamw {full[-1]:.4f})")
PY
echo "resume_changes: ok"
