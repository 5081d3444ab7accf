#!/usr/bin/env bash
# Fine-tuning pretrained Llama-family folders (Llama, Mistral, Qwen2, Qwen3), checked against an
# independent PyTorch implementation (tests/e2e/torch_llama.py; Debian's python3-torch):
#   1. folders of every architecture and option (GQA, untied and tied heads, llama3 and yarn rope
#      scaling, Mistral's sliding window shorter than the sequence, q/k/v biases, q/k norms with
#      a head_dim that is not hidden/heads; F32, BF16 in 3 shards, F16; a Hub id in a fake
#      offline Hub cache): our logits match PyTorch's to 1e-4, the loss, every gradient and 20
#      greedily decoded tokens (key/value cache) too;
#   2. fine-tuning under mpirun -np 2 at ZeRO stages 0-3 starts from the weights, and a trained
#      model exports a folder the PyTorch reference reproduces; a checkpoint of one family does
#      not resume another;
#   3. options autotrain does not support and broken folders are refused by name.
set -euo pipefail
: "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
# shellcheck source=tests/e2e/lib.bash
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"  # reference_test, check_folder, edit, refused
reference_test hf_llama 500

# 1. Every architecture, against PyTorch.
"${torch_batch[@]}" << EOF
torch_llama.py make llama
torch_llama.py make llama32 --tied --rope-scaling llama3 --seed 2
torch_llama.py make mistral --arch mistral --sliding-window 6 --seed 3  # windows under T = 16
torch_llama.py make qwen2 --arch qwen2 --dtype BF16 --shards 3 --seed 4
torch_llama.py make qwen3 --arch qwen3 --dtype F16 --seed 5
torch_llama.py make unused --arch qwen3 --hub $work/hf/hub test-org/tiny-qwen3 --shards 2
torch_llama.py make yarn --arch qwen3 --rope-scaling yarn --seed 7
torch_llama.py make yarn-ramp --rope-scaling yarn-ramp --seed 8
EOF
hub_folder=$work/hf/hub/models--test-org--tiny-qwen3/snapshots/0123456789abcdef0123456789abcdef01234567
check_folder llama llama32 mistral qwen2 qwen3 "$hub_folder" yarn yarn-ramp

common=(--tokenizer byte --block-size 32 --batch-size 2 --gradient-accumulation 1 --threads 1
  --logging-steps 1 --eval-strategy no --comm-backend mpi)
HF_HOME=$work/hf "$AUTOTRAIN_BIN" train --model test-org/tiny-qwen3 --dry-run "${common[@]}" > hub.out 2>&1 ||
  { cat hub.out; fail "dry run of a Hub id in the cache"; }
grep -q "model        test-org/tiny-qwen3, Llama family (Qwen3ForCausalLM): 2 layers, hidden 32, 4 heads of 16, 2 key/value heads" hub.out ||
  { cat hub.out; fail "the dry run does not show the family"; }
grep -q "weights      .* parameters; weights from $hub_folder (2 files" hub.out ||
  { cat hub.out; fail "the dry run does not say where the weights come from"; }

# The dry run shows yarn's factor in effect: max_position_embeddings / original, not the 8 given.
"$AUTOTRAIN_BIN" train --model yarn --dry-run "${common[@]}" > yarn.out 2>&1 || { cat yarn.out; fail "dry run of yarn"; }
grep -q "model        yarn, Llama family (Qwen3ForCausalLM): .*, rope_scaling yarn (factor 4)" yarn.out ||
  { cat yarn.out; fail "the dry run does not show yarn's factor"; }

# autotrain env, given train's options, shows the model they resolve to.
"$AUTOTRAIN_BIN" env --model qwen3 --tokenizer byte > env.out 2>&1 || { cat env.out; fail "env with a model"; }
grep -q "shape      Llama family (Qwen3ForCausalLM): 2 layers" env.out && grep -q "weights    weights from $work/qwen3" env.out ||
  { cat env.out; fail "env does not show the model"; }

# 2. Fine-tuning at every stage, two ranks: lr 1e-9 leaves the BF16 weights as they were.
for stage in 0 1 2 3; do
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model qwen2 --project-name still$stage \
    --zero-stage "$stage" --max-steps 2 --lr 1e-9 "${common[@]}" > still$stage.log 2>&1 ||
    { tail -20 still$stage.log; fail "fine-tuning at stage $stage"; }
  grep -q "model: Llama family (Qwen2ForCausalLM) (qwen2), weights from $work/qwen2 (3 files" still$stage.log ||
    { head -8 still$stage.log; fail "stage $stage: no 'weights from'"; }
  "${torch_llama[@]}" same-weights qwen2 still$stage 1e-6 || fail "stage $stage did not start from the weights"
done
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model llama --project-name tuned --zero-stage 3 \
  --max-steps 5 --lr 1e-3 "${common[@]}" > tuned.log 2>&1 || { tail -20 tuned.log; fail "fine-tuning"; }
"$python" - tuned/config.json <<'PY' || fail "the export's config.json"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["architectures"] == ["LlamaForCausalLM"] and c["model_type"] == "llama", c
assert c["num_key_value_heads"] == 2 and c["hidden_size"] == 32 and c["tie_word_embeddings"] is False, c
assert c["torch_dtype"] == "float32" and c["rms_norm_eps"] == 1e-5, c
PY
"${torch_llama[@]}" same-weights llama tuned 1e-6 && fail "5 steps at lr 1e-3 changed nothing"
check_folder tuned
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" export --checkpoint tuned/checkpoints/checkpoint-5.h5 \
  --output again > again.log 2>&1 || { cat again.log; fail "export of the checkpoint"; }
"${torch_llama[@]}" same-weights tuned again 0 || fail "export --checkpoint differs from the run's export"
# A bf16 export: the reference on the rounded weights reproduces ours on them.
timeout 120 "$AUTOTRAIN_BIN" export --checkpoint tuned/checkpoints/checkpoint-5.h5 --output tuned-bf16 \
  --export-dtype bf16 > bf16.log 2>&1 || { cat bf16.log; fail "bf16 export of the checkpoint"; }
grep -q '"torch_dtype": "bfloat16"' tuned-bf16/config.json || fail "the bf16 export's config.json says otherwise"
"${torch_llama[@]}" same-weights tuned tuned-bf16 1e-2 || fail "the bf16 export is not the model rounded"
check_folder tuned-bf16
status=0
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model mistral --project-name tuned --zero-stage 3 \
  --max-steps 6 "${common[@]}" > other-family.log 2>&1 || status=$?
[ "$status" -eq 1 ] || { tail -5 other-family.log; fail "a Mistral run resumed a Llama checkpoint"; }
grep -q "cannot resume from tuned/checkpoints/checkpoint-5.h5: its model differs from this run's (architecture: LlamaForCausalLM in the checkpoint, MistralForCausalLM in this run" other-family.log ||
  { tail -5 other-family.log; fail "no model-differs refusal"; }

# generate samples from a fine-tuned Llama whose vocabulary is the byte tokenizer's.
"${torch_llama[@]}" make bytes --vocab 256 --seed 6
timeout 120 "$AUTOTRAIN_BIN" train --model bytes --project-name bytes --max-steps 2 "${common[@]}" > bytes.log 2>&1 ||
  { tail -5 bytes.log; fail "fine-tuning a byte-vocabulary model"; }
"$AUTOTRAIN_BIN" generate --model bytes --prompt "To be" --max-new-tokens 8 --temperature 0 > gen.out 2>&1 ||
  { cat gen.out; fail "generate on the fine-tuned Llama"; }

# 3. Refused, by name.
edit llama dynamic 'c["rope_scaling"] = {"rope_type": "dynamic", "factor": 4.0}'
refused dynamic 'rope_scaling type "dynamic" is not supported \(expected none, "default", "linear", "llama3", "longrope" or "yarn"\)' dynamic
edit llama gelu 'c["hidden_act"] = "gelu"'
refused gelu 'hidden_act "gelu" is not supported \(expected silu or gelu_pytorch_tanh\)' gelu
edit llama wrong-arch 'c["architectures"] = ["MistralForCausalLM"]'
refused wrong-arch 'architectures \["MistralForCausalLM"\] is not supported \(expected \["LlamaForCausalLM"\]' wrong-arch
edit llama heads 'c["num_key_value_heads"] = 3'
refused heads "num_attention_heads 4 is not a multiple of num_key_value_heads 3" heads
"${torch_llama[@]}" make dropped --drop model.layers.1.mlp.up_proj.weight
refused missing-tensor "the weights do not fit config.json's model; missing: model.layers.1.mlp.up_proj.weight" dropped
edit llama wide 'c["intermediate_size"] = 64'
refused wrong-shape 'wrong shape: .*model.layers.0.mlp.down_proj.weight \[32, 48\] \(expected \[32, 64\]\)' wide
echo "hf_llama: ok"
