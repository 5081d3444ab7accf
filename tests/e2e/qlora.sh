#!/usr/bin/env bash
# QLoRA (peft: true, quantization: int4|int8; docs/training.md "QLoRA"):
#   1. the first LoRA step over quantized base weights against PyTorch: hf_probe runs a random PEFT
#      adapter folder on a tiny Qwen3 with the base's block weights in NF4 (with and without double
#      quantization) and in int8; tests/e2e/torch_lora.py quantizes the base with
#      tests/kernels/torch_quantize.py (bitsandbytes' definition) and compares logits, loss, the
#      gradient of every adapter and 20 greedy tokens; quantization changes the loss;
#   2. training under mpirun -np 2 at ZeRO-3 with int4 + double quantization and with int8: the loss
#      falls and the plan line says the frozen weights are quantized, in fewer bytes than the
#      16-bit LoRA run's; merge_adapter merges into the unquantized base (PEFT's merge of the
#      exported adapter folder onto it, as AutoTrain reloads the base in 16 bits to merge); the
#      merged folder and the adapter folder generate the same greedy text, and `generate
#      --quantization int4` runs the adapter on the quantized base;
#   3. an int8 run resumed from its checkpoint on one rank at ZeRO-0 ends where the uninterrupted
#      run ends; a resume that changes the quantization is refused unless asked for.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
python=${PYTHON:-/usr/bin/python3}
e2e=$AUTOTRAIN_SOURCE_DIR/tests/e2e
check="$python $e2e/metrics_check.py"
probe=$(dirname "$AUTOTRAIN_BIN")/tests/hf_probe
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
fail() { echo "qlora: $*"; exit 1; }

"$python" "$e2e/torch_llama.py" make qwen3 --arch qwen3 --tied --shape 2,4,2,64,128 --seed 7 > /dev/null

echo "== 1. the first LoRA step over quantized weights against PyTorch =="
"$python" "$e2e/torch_lora.py" make-adapter qwen3 adapter --r 4 --alpha 12 --targets all-linear \
  --seed 5 > /dev/null
echo "5 9 100 451 17 3 77 42 9 260 12 5" > tokens.txt
mkdir probe-none
"$probe" adapter tokens.txt probe-none || fail "hf_probe without quantization"
for quantization in int4 int4-dq int8; do
  mkdir "probe-$quantization"
  "$probe" adapter tokens.txt "probe-$quantization" "$quantization" || fail "hf_probe $quantization"
  "$python" "$e2e/torch_lora.py" check adapter "probe-$quantization" tokens.txt "$quantization" \
    > "check-$quantization.log" || { cat "check-$quantization.log"; fail "PyTorch disagrees on $quantization"; }
  echo "$quantization: loss $(cat "probe-$quantization/loss.txt") (unquantized $(cat probe-none/loss.txt));" \
    "$(grep gradients "check-$quantization.log")"
  cmp -s "probe-$quantization/loss.txt" probe-none/loss.txt && fail "$quantization left the loss unchanged"
done

echo "== 2. QLoRA training: -np 2, ZeRO-3 =="
"$python" - <<'PY'
import json, os, random
random.seed(2)
words = "the cat sat on a mat while dogs ran far away from home today".split()
os.makedirs("data")
with open("data/train.jsonl", "w") as out:
    for _ in range(200):
        out.write(json.dumps({"text": " ".join(random.choice(words) for _ in range(12))}) + "\n")
PY
common=(--model qwen3 --tokenizer byte --data-path data --text-column text --block-size 32 --batch-size 2 --lr 3e-3
  --peft --lora-r 8 --lora-alpha 16 --target-modules all-linear --eval-strategy no
  --logging-steps 1 --threads 1 --comm-backend mpi)
run() {  # run NAME RANKS ARGS...: a training run, its log NAME.log
  local name=$1 ranks=$2; shift 2
  timeout 300 "${mpirun[@]}" -np "$ranks" "$AUTOTRAIN_BIN" train "${common[@]}" --project-name "$name" \
    "$@" > "$name.log" 2>&1 || { tail -30 "$name.log"; fail "run $name"; }
}
run q4 2 --zero-stage 3 --max-steps 12 --quantization int4 --bnb-4bit-use-double-quant true \
  --merge-adapter true
run q8 2 --zero-stage 3 --max-steps 12 --quantization int8 --checkpoint-every 6 --save-total-limit 2 \
  --merge-adapter false
run bf 2 --zero-stage 3 --max-steps 2 --merge-adapter false
"$python" - q4/metrics.jsonl q8/metrics.jsonl <<'PY'
import json, sys
for path in sys.argv[1:]:
    losses = [r["loss"] for r in map(json.loads, open(path)) if r.get("loss") is not None]
    print(f"{path}: loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    assert losses[-1] < losses[0] - 0.5, f"{path}: the loss did not fall"
PY
grep -E "lora: .*block weights in int4 \(NF4, double quantization\)" q4.log ||
  { grep "lora:" q4.log; fail "the plan line does not say int4 with double quantization"; }
grep -E "lora: .*block weights in int8" q8.log || { grep "lora:" q8.log; fail "no int8 in the plan line"; }
"$python" - q4.log q8.log bf.log <<'PY'
import re, sys
units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
def frozen(path):
    line = next(l for l in open(path) if "the frozen base weights take" in l)
    value, unit = re.search(r"the frozen base weights take ([0-9.]+) (\w+)", line).groups()
    return float(value) * units[unit]
q4, q8, full = (frozen(p) for p in sys.argv[1:])
print(f"frozen weights per rank: int4+dq {q4:.0f} B, int8 {q8:.0f} B, fp32 {full:.0f} B")
assert q4 < q8 < full, "quantized frozen weights take no fewer bytes"
PY
"$python" "$e2e/torch_lora.py" merged q4/adapter q4 1e-6 ||
  fail "the merged model is not PEFT's merge onto the unquantized base"
for folder in q4 q4/adapter; do
  "$AUTOTRAIN_BIN" generate --model $folder --prompt "the cat" --max-new-tokens 12 --temperature 0 \
    > "gen-${folder//\//-}.out" 2>&1 || { cat "gen-${folder//\//-}.out"; fail "generate on $folder"; }
done
cmp gen-q4.out gen-q4-adapter.out || fail "generate differs between the merged and the adapter folder"
"$AUTOTRAIN_BIN" generate --model q4/adapter --quantization int4 --double-quant --prompt "the cat" \
  --max-new-tokens 12 --temperature 0 > gen-quantized.out 2>&1 || { cat gen-quantized.out; fail "generate --quantization"; }
echo "generate: $(tail -1 gen-q4.out) | on the quantized base: $(tail -1 gen-quantized.out)"

echo "== 3. resume =="
mkdir -p r8/checkpoints
cp q8/checkpoints/checkpoint-6.h5 r8/checkpoints/
run r8 1 --zero-stage 0 --max-steps 12 --quantization int8 --merge-adapter false --gradient-accumulation 8
grep -q "resume: r8/checkpoints/checkpoint-6.h5 at step 6" r8.log || { grep resume r8.log; fail "no resume from step 6"; }
"$python" "$e2e/ckpt_check.py" tail q8/metrics.jsonl r8/metrics.jsonl 7 2e-5
mkdir -p c4/checkpoints
cp q8/checkpoints/checkpoint-6.h5 c4/checkpoints/
if timeout 120 "$AUTOTRAIN_BIN" train "${common[@]}" --project-name c4 --max-steps 12 --quantization int4 --gradient-accumulation 8 \
  > c4.log 2>&1; then
  fail "a resume that changes the quantization was accepted"
fi
grep -q "quantization \"int8\" -> \"int4\"" c4.log || { tail -5 c4.log; fail "the refused resume does not name quantization"; }
echo "qlora: ok"
