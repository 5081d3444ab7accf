#!/usr/bin/env bash
# Preference tuning (trainers dpo and orpo, docs/training.md "Preference tuning"):
#   1. our losses, TRL's metrics and every gradient for a batch of pairs equal a PyTorch reference
#      written from TRL's definitions (tests/e2e/torch_preference.py over torch_llama.py's model):
#      dpo with a reference model that differs from the policy, and orpo;
#   2. dpo under mpirun -np 2 at ZeRO-3 from a Llama folder: the first loss is ln 2 (the reference
#      is the base), accuracies and margins rise on a separable toy preference set, and 1 rank with
#      twice the accumulation gives the same curve; a checkpoint resumes to the same curve;
#   3. QLoRA dpo (int4; no second model: the reference is the quantized base without adapters, so
#      the first loss is log 2 exactly) and orpo train;
#      model_ref and peft together are refused;
#   4. a reward model trained at ZeRO-3 from the Llama folder exports a classifier folder whose
#      rewards (autotrain score) put chosen above rejected on held-out pairs.
set -euo pipefail
: "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
# shellcheck source=tests/e2e/lib.bash
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"  # reference_test
reference_test preference 500
pref_probe="$(dirname "$AUTOTRAIN_BIN")/tests/pref_probe"
torch_preference=("$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_preference.py")

# 1. One batch of 3 pairs against PyTorch.
"${torch_llama[@]}" make policy --seed 11
"${torch_llama[@]}" make reference --seed 12
"$python" -c "
import random
random.seed(5)
for _ in range(3):
    for n in (random.randint(2, 6), random.randint(1, 7), random.randint(1, 7)):
        print(' '.join(str(random.randrange(500)) for _ in range(n)))" > pairs.txt
for kind in dpo orpo; do
  mkdir "probe-$kind"
  "$pref_probe" "$kind" 0.5 policy reference pairs.txt "probe-$kind" || fail "pref_probe $kind"
  "${torch_preference[@]}" "$kind" 0.5 policy reference pairs.txt "probe-$kind" > "$kind.out" ||
    { cat "$kind.out"; fail "$kind differs from the PyTorch reference"; }
  grep -E "loss|gradients" "$kind.out"
done

# 2. dpo on a separable toy set: the chosen completion always says "yes", the rejected "no".
"$python" - <<'PY'
import json, random
random.seed(7)
for split, n in (("train", 48), ("valid", 8)):
    with open(f"{split}.jsonl", "w") as out:
        for _ in range(n):
            a, b = random.randint(1, 99), random.randint(1, 99)
            out.write(json.dumps({"prompt": f"is {a}+{b} even? ", "chosen": "yes, it is",
                                  "rejected": "no way"}) + "\n")
PY
common=(--model policy --tokenizer byte --data-path . --valid-split valid --block-size 32
  --batch-size 2 --lr 2e-4 --optimizer adamw --warmup-ratio 0 --scheduler constant
  --logging-steps 1 --threads 1 --comm-backend mpi --eval-strategy steps --eval-steps 4)
dpo() {  # dpo NAME RANKS ACCUMULATION [FLAGS...]
  local name=$1 ranks=$2 accumulation=$3
  shift 3
  timeout 300 "${mpirun[@]}" -np "$ranks" "$AUTOTRAIN_BIN" train --trainer dpo --dpo-beta 0.1 \
    --project-name "$name" --gradient-accumulation "$accumulation" "${common[@]}" "$@" \
    > "$name.log" 2>&1 || { tail -20 "$name.log"; fail "dpo run $name"; }
}
dpo dpo2 2 1 --zero-stage 3 --max-steps 12 --checkpoint-every 6 --save-total-limit 2
dpo dpo1 1 2 --zero-stage 0 --max-steps 12
"$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py" same dpo2/metrics.jsonl dpo1/metrics.jsonl 1e-4 ||
  fail "1 rank x 2 micro-steps and 2 ranks at ZeRO-3 differ"
grep -q "dpo: the reference's log-probabilities of every pair in .* (the base model; computed once" dpo2.log ||
  { head -20 dpo2.log; fail "no line on the reference"; }
"$python" - dpo2/metrics.jsonl <<'PY' || fail "dpo did not learn the toy preference"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l and json.loads(l).get("step", 0) > 0]
first, last = rows[0], rows[-1]
assert abs(first["loss"] - math.log(2)) < 1e-5, f"first loss {first['loss']}, expected ln 2"
assert first["rewards/margins"] == 0 and first["rewards/chosen"] == 0, first
assert last["rewards/accuracies"] == 1 and last["rewards/margins"] > 2, last
assert last["loss"] < 0.1 and last["val_rewards/accuracies"] == 1, last
print(f"dpo: loss {first['loss']:.4f} -> {last['loss']:.4f}, margins {last['rewards/margins']:.3f}, "
      f"accuracies {last['rewards/accuracies']}")
PY
# Resumed from the checkpoint of step 6: the same last six steps.
dpo resumed 2 1 --zero-stage 3 --max-steps 12 --resume-from-checkpoint dpo2/checkpoints/checkpoint-6.h5
grep -q "resume: .* at step 6" resumed.log || { grep resume resumed.log; fail "did not resume at step 6"; }
"$python" - dpo2/metrics.jsonl resumed/metrics.jsonl <<'PY' || fail "the resumed dpo run differs"
import json, sys
def losses(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if r.get("loss") is not None and r["step"] > 6}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert a and a.keys() == b.keys(), (a, b)
assert all(abs(a[s] - b[s]) <= 1e-6 * max(1, abs(a[s])) for s in a), (a, b)
PY

# 3. QLoRA dpo at ZeRO-3 and orpo.
dpo lora 2 1 --zero-stage 3 --max-steps 6 --peft --lora-r 4 --quantization int4
grep -q "(the base model without the adapters; computed once, no second model is held)" lora.log ||
  { head -20 lora.log; fail "LoRA dpo: no line on the reference"; }
"$python" - lora/metrics.jsonl <<'PY' || fail "LoRA dpo"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l and json.loads(l).get("step", 0) > 0]
assert abs(rows[0]["loss"] - math.log(2)) < 1e-5 and rows[-1]["loss"] < rows[0]["loss"], rows
PY
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --trainer orpo --dpo-beta 0.5 --project-name orpo \
  --zero-stage 2 --max-steps 8 "${common[@]}" > orpo.log 2>&1 || { tail -20 orpo.log; fail "orpo"; }
"$python" - orpo/metrics.jsonl <<'PY' || fail "orpo did not learn"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l and json.loads(l).get("step", 0) > 0]
assert rows[-1]["loss"] < rows[0]["loss"] and rows[-1]["nll_loss"] < rows[0]["nll_loss"], rows
assert rows[-1]["rewards/margins"] > rows[0]["rewards/margins"], rows
PY
out=$("$AUTOTRAIN_BIN" train --trainer dpo --model-ref reference --peft "${common[@]}" --dry-run 2>&1) &&
  fail "model_ref with peft was accepted"
grep -q "model_ref .* with peft" <<< "$out" || fail "model_ref with peft: $out"

# 4. A reward model on texts whose chosen ending says "yes", rejected "no".
mkdir reward-data
"$python" - <<'PY'
import json, random
random.seed(8)
for split, n in (("train", 48), ("valid", 16)):
    with open(f"reward-data/{split}.jsonl", "w") as out:
        for _ in range(n):
            a, b = random.randint(1, 99), random.randint(1, 99)
            out.write(json.dumps({"chosen": f"is {a}+{b} even? yes, it is",
                                  "rejected": f"is {a}+{b} even? no way"}) + "\n")
PY
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --trainer reward --project-name reward \
  --zero-stage 3 --max-steps 12 --gradient-accumulation 1 --model policy --tokenizer byte \
  --data-path reward-data --valid-split valid --block-size 32 --batch-size 2 --lr 1e-3 \
  --warmup-ratio 0 --scheduler constant --logging-steps 1 --threads 1 --comm-backend mpi \
  --eval-strategy no > reward.log 2>&1 || { tail -20 reward.log; fail "reward"; }
grep -q '"LlamaForSequenceClassification"' reward/config.json || fail "the reward export's architecture"
"$AUTOTRAIN_BIN" score --model reward --pairs reward-data/valid.jsonl > score.out 2>&1 ||
  { cat score.out; fail "score"; }
grep -q "accuracy 1.0000 (16 of 16 pairs" score.out || { tail -3 score.out; fail "held-out accuracy"; }
"$python" - reward/metrics.jsonl <<'PY' || fail "the reward model did not learn"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l and json.loads(l).get("step", 0) > 0]
assert rows[-1]["loss"] < rows[0]["loss"] and rows[-1]["rewards/margins"] > 0.5, rows
print(f"reward: loss {rows[0]['loss']:.4f} -> {rows[-1]['loss']:.4f}")
PY
echo "reward, held-out pairs: $(tail -1 score.out)"
