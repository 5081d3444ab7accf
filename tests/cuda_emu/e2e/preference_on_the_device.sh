#!/usr/bin/env bash
# Preference tuning on the emulated device: dpo on two emulated GPUs at ZeRO-3 in fp32 follows the
# CPU's run step by step (its loss, rewards and accuracies: the weighted backward of the device
# model, the reference log-probabilities computed on the device), starting at ln 2; LoRA orpo in
# bf16 on one GPU learns the toy preference. ctest runs it as cuda_emu.preference_on_the_device
# (tests/cuda_emu/CMakeLists.txt).
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_llama.py" make qwen3 --arch qwen3 --seed 5
/usr/bin/python3 - <<'PY'
import json, random
random.seed(7)
with open("train.jsonl", "w") as out:
    for _ in range(24):
        a, b = random.randint(1, 99), random.randint(1, 99)
        out.write(json.dumps({"prompt": f"is {a}+{b} even? ", "chosen": "yes, it is",
                              "rejected": "no way"}) + "\n")
PY
common=(train --model qwen3 --tokenizer byte --data-path . --block-size 32 --batch-size 2
  --gradient-accumulation 1 --threads 1 --logging-steps 1 --eval-strategy no
  --warmup-ratio 0 --scheduler constant --dpo-beta 0.1)
for device in cuda cpu; do
  "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${common[@]}" --trainer dpo --zero-stage 3 --max-steps 4 --lr 2e-4 \
    --project-name "dpo-$device" --device "$device" --comm-backend auto --mixed-precision no \
    > "dpo-$device.log" 2>&1 || { tail -20 "dpo-$device.log"; exit 1; }
done
grep -E "on cuda:[0-9]+ .* in fp32" dpo-cuda.log || { tail -20 dpo-cuda.log; exit 1; }
/usr/bin/python3 - dpo-cpu/metrics.jsonl dpo-cuda/metrics.jsonl <<'PY'
import json, math, sys
def rows(path):
    return [r for r in map(json.loads, open(path)) if r.get("loss") is not None and r["step"] > 0]
cpu, cuda = rows(sys.argv[1]), rows(sys.argv[2])
assert len(cpu) == len(cuda) == 4, (cpu, cuda)
assert abs(cuda[0]["loss"] - math.log(2)) < 1e-5, cuda[0]
for a, b in zip(cpu, cuda):
    for key in ("loss", "rewards/margins", "rewards/chosen", "logps/chosen", "logps/rejected"):
        assert abs(a[key] - b[key]) <= 1e-4 * max(1, abs(a[key])), (key, a, b)
print(f"dpo on the device follows the CPU: loss {cuda[0]['loss']:.4f} -> {cuda[-1]['loss']:.4f}")
PY
"${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" "${common[@]}" --trainer orpo --max-steps 6 --peft true \
  --lora-r 4 --lr 3e-3 --project-name orpo --device cuda --mixed-precision bf16 > orpo.log 2>&1 ||
  { tail -20 orpo.log; exit 1; }
/usr/bin/python3 - orpo/metrics.jsonl <<'PY'
import json, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if r.get("loss") is not None and r["step"] > 0]
assert rows[-1]["loss"] < rows[0]["loss"] and rows[-1]["rewards/margins"] > rows[0]["rewards/margins"], rows
print(f"orpo LoRA bf16 on the device: loss {rows[0]['loss']:.4f} -> {rows[-1]['loss']:.4f}")
PY
