#!/usr/bin/env bash
# Fine-tuning a pretrained Hugging Face GPT-2 folder, checked against an independent PyTorch
# GPT-2 (tests/e2e/torch_gpt2.py; Debian's python3-torch):
#   1. folders as transformers saves them (F32 with the transformer. prefix; BF16 in 3 shards
#      without it; F16; a Hub id in a fake offline Hub cache): our logits match PyTorch's to 1e-4,
#      the loss, every gradient, and 20 greedily decoded tokens (key/value cache) too;
#   2. the base model missing: --dry-run says MISSING with the download command and fails, as
#      train does;
#   3. fine-tuning under mpirun -np 2 at ZeRO stages 0-3 starts from the weights (a tiny learning
#      rate exports them unchanged) and exports a folder the PyTorch reference reproduces;
#   4. bad folders are refused naming the file and the tensors.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -r -a mpirun <<< "${AUTOTRAIN_MPIRUN:-mpirun --oversubscribe --allow-run-as-root}"
probe_bin="$(dirname "$AUTOTRAIN_BIN")/tests/hf_probe"
torch_gpt2=("${PYTHON:-/usr/bin/python3}" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_gpt2.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "hf_models: $*"; exit 1; }

"${PYTHON:-/usr/bin/python3}" -c "import random; random.seed(3); print(' '.join(str(random.randrange(50257)) for _ in range(17)))" > tokens.txt

check_folder() {  # FOLDER: our numbers against PyTorch's
  rm -rf probe && mkdir probe
  "$probe_bin" "$1" tokens.txt probe || fail "hf_probe $1"
  "${torch_gpt2[@]}" check "$1" probe tokens.txt || fail "$1 differs from the PyTorch reference"
}

# 1. Loading, in every layout a Hub folder comes in.
"${torch_gpt2[@]}" make f32
"${torch_gpt2[@]}" make bf16 --dtype BF16 --shards 3 --no-prefix --seed 2
"${torch_gpt2[@]}" make f16 --dtype F16 --seed 4
"${torch_gpt2[@]}" make unused --hub "$work/hf/hub" test-org/tiny-gpt2 --shards 2
for folder in f32 bf16 f16; do check_folder "$folder"; done
hub_folder=$work/hf/hub/models--test-org--tiny-gpt2/snapshots/0123456789abcdef0123456789abcdef01234567
check_folder "$hub_folder"

common=(--block-size 32 --batch-size 2 --gradient-accumulation 1 --threads 1 --logging-steps 1
  --eval-strategy no --comm-backend mpi)
# The Hub id resolves through HF_HOME, offline.
HF_HOME=$work/hf "$AUTOTRAIN_BIN" train --model test-org/tiny-gpt2 --dry-run "${common[@]}" > hub.out 2>&1 ||
  { cat hub.out; fail "dry run of a Hub id in the cache"; }
grep -q "weights      1635744 parameters; weights from $hub_folder (2 files" hub.out ||
  { cat hub.out; fail "the dry run does not say where the weights come from"; }

# 2. Missing: a preset's shape is known, so --dry-run plans it and says MISSING, then fails as
#    train would (with the command that fetches it). A Hub id without a config.json cannot even
#    be planned.
status=0
HF_HOME=$work/none HOME=$work/none "$AUTOTRAIN_BIN" train --model gpt2 --dry-run "${common[@]}" > missing.out 2>&1 || status=$?
[ "$status" -eq 1 ] || { cat missing.out; fail "a dry run with missing weights: exit $status, expected 1"; }
grep -q "MISSING.*huggingface-cli download openai-community/gpt2" missing.out || { cat missing.out; fail "no MISSING line"; }
grep -q "error: --dry-run: .*huggingface-cli download openai-community/gpt2" missing.out ||
  { cat missing.out; fail "the dry run's error does not say how to fetch the weights"; }
# With chat_template tokenizer the missing model is named first, not the default tokenizer.
status=0
HF_HOME=$work/none HOME=$work/none "$AUTOTRAIN_BIN" train --model gpt2 --chat-template tokenizer --dry-run \
  "${common[@]}" > missing-chat.out 2>&1 || status=$?
[ "$status" -eq 1 ] || { cat missing-chat.out; fail "missing model with chat_template tokenizer: exit $status"; }
grep -q "error: .*base_model gpt2: no such model folder.*without its folder the data check fails too" \
  missing-chat.out || { cat missing-chat.out; fail "the missing model is not named first"; }
status=0
HF_HOME=$work/none HOME=$work/none "$AUTOTRAIN_BIN" train --model test-org/absent --dry-run "${common[@]}" > absent-id.out 2>&1 || status=$?
[ "$status" -eq 1 ] || { cat absent-id.out; fail "a dry run of an absent Hub id: exit $status, expected 1"; }
grep -q "base_model test-org/absent: no such model folder, and not in the Hugging Face cache ($work/none/hub, $work/none/.cache/huggingface/hub; revision main). autotrain never downloads: on a login node run \`huggingface-cli download test-org/absent\`" absent-id.out ||
  { cat absent-id.out; fail "absent Hub id: unclear message"; }
status=0
HF_HOME=$work/none HOME=$work/none timeout 60 "$AUTOTRAIN_BIN" train --model gpt2 --project-name absent \
  "${common[@]}" > absent.out 2>&1 || status=$?
[ "$status" -eq 1 ] || { cat absent.out; fail "train without the weights: exit $status, expected 1"; }
grep -q "huggingface-cli download openai-community/gpt2" absent.out || { cat absent.out; fail "no download hint"; }
grep -q "from_scratch" absent.out || fail "no from_scratch hint"
[ ! -e absent/model.safetensors ] || fail "a refused run exported a model"

# 3. Fine-tuning at every stage, two ranks.
for stage in 0 1 2 3; do
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model bf16 --project-name still$stage \
    --zero-stage "$stage" --max-steps 2 --lr 1e-9 "${common[@]}" > still$stage.log 2>&1 ||
    { tail -20 still$stage.log; fail "fine-tuning at stage $stage"; }
  grep -q "weights from $work/bf16 (3 files" still$stage.log || fail "stage $stage: no 'weights from'"
  # BF16 weights become fp32 master weights; lr 1e-9 leaves them as they were.
  "${torch_gpt2[@]}" same-weights bf16 still$stage 1e-6 || fail "stage $stage did not start from the weights"
done
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model f32 --project-name tuned --zero-stage 3 \
  --max-steps 5 --lr 1e-3 --max-shard-size 2MB "${common[@]}" > tuned.log 2>&1 || { tail -20 tuned.log; fail "fine-tuning"; }
# 6.5 MB of weights above a 2 MB limit: wte (6.4 MB) alone, then the rest, as save_pretrained.
grep -q "export: wrote 2 shards in tuned (model.safetensors.index.json)" tuned.log || { tail -5 tuned.log; fail "not sharded"; }
[ -f tuned/model-00001-of-00002.safetensors ] && [ -f tuned/model-00002-of-00002.safetensors ] && [ ! -e tuned/model.safetensors ] ||
  { ls tuned; fail "the shards are not as save_pretrained names them"; }
python3 - tuned/config.json <<'PY' || fail "the export's config.json lost the base model's fields"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["model_type"] == "gpt2" and c["n_embd"] == 32 and c["torch_dtype"] == "float32", c
assert c["layer_norm_epsilon"] == 1e-5 and c["activation_function"] == "gelu_new", c
PY
"${torch_gpt2[@]}" same-weights f32 tuned 1e-6 && fail "5 steps at lr 1e-3 changed nothing"
check_folder tuned
"$AUTOTRAIN_BIN" generate --model tuned --prompt "To be" --max-new-tokens 5 --temperature 0 > gen.out 2>&1 ||
  { cat gen.out; fail "generate on the fine-tuned folder"; }

# A checkpoint exports later to the same folder, with the base model's config.json fields.
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" export --checkpoint tuned/checkpoints/checkpoint-5.h5 \
  --output again --max-shard-size 1GB > again.log 2>&1 || { cat again.log; fail "export of the checkpoint"; }
grep -q '"activation_function": "gelu_new"' again/config.json || fail "export --checkpoint lost the base config"
[ -f again/model.safetensors ] || fail "export --checkpoint under 1GB is not one file"
"${torch_gpt2[@]}" same-weights tuned again 0 || fail "export --checkpoint differs from the run's export"

# The run records its base; a resume whose base model now holds other weights is refused.
recorded=$(python3 -c "import json; p = json.load(open('tuned/training_params.json')); print(p['base_model_path'], p['base_model_weights'])")
[[ "$recorded" == "$work/f32 sum-fmix64:"* ]] || fail "training_params.json records '$recorded'"
"${torch_gpt2[@]}" make other --seed 9
cp other/model.safetensors f32/model.safetensors
status=0
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model f32 --project-name tuned --zero-stage 3 \
  --max-steps 6 --lr 1e-3 "${common[@]}" > rebased.log 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "a resume on other base weights was accepted"
grep -q "cannot resume from tuned/checkpoints/checkpoint-5.h5: it fine-tunes the base weights sum-fmix64:" rebased.log ||
  { tail -5 rebased.log; fail "no base-weights refusal"; }

# 4. Bad folders.
refused() {  # NAME PATTERN FOLDER
  local status=0
  timeout 60 "$AUTOTRAIN_BIN" train --model "$3" --project-name "bad-$1" "${common[@]}" > "$1.out" 2>&1 || status=$?
  [ "$status" -eq 1 ] || { cat "$1.out"; fail "$1: exit $status, expected 1"; }
  grep -qE -- "$2" "$1.out" || { cat "$1.out"; fail "$1: no '$2'"; }
}
mkdir no-config && refused no-config "no-config: the folder has no config.json" no-config
cp -r f32 llama && sed -i 's/"model_type": "gpt2"/"model_type": "mamba"/; s/GPT2LMHeadModel/MambaForCausalLM/' llama/config.json
refused architecture 'architectures \["MambaForCausalLM"\], model_type "mamba": not supported' llama
"${torch_gpt2[@]}" make dropped --drop h.1.mlp.c_fc.bias
refused missing-tensor "the weights do not fit config.json's model; missing: transformer.h.1.mlp.c_fc.bias" dropped
cp -r f32 wide && sed -i 's/"n_embd": 32/"n_embd": 64/' wide/config.json
refused wrong-shape "wrong shape: transformer.wte.weight \[50257, 32\] \(expected \[50257, 64\]\)" wide
cp -r bf16 truncated && truncate -s -100 truncated/model-00002-of-00003.safetensors
refused truncated "model-00002-of-00003.safetensors: tensor .* data lies past the end of the file" truncated
cp -r bf16 lost && rm lost/model-00003-of-00003.safetensors
refused lost-shard "model.safetensors.index.json: names model-00003-of-00003.safetensors, which is not in" lost
echo "hf_models: ok"
