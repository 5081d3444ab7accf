#!/usr/bin/env bash
# Gemma, Gemma 2 and Gemma 3 folders (GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM)
# checked against the PyTorch reference (tests/e2e/torch_llama.py --arch gemma|gemma2|gemma3_text,
# written from transformers' Gemma semantics), with sliding windows of 6 under 16-token sequences:
#   1. Gemma 1 (Llama's block with Gemma's scale, norm offsets and GeGLU; one key/value head as
#      gemma-2b), Gemma 2 (soft caps, alternating sliding layers), Gemma 3 (q/k norms,
#      layer_types, a local rope base, linear rope scaling on its global layers; BF16 in 2
#      shards): our logits match PyTorch's to 1e-4, the loss, every gradient and 20 greedily
#      decoded tokens (key/value cache) too; a Gemma 1 fine-tune exports a folder the reference
#      reproduces;
#   2. a ZeRO-3 fine-tune under mpirun -np 2 learns, exports a Gemma 3 folder that the reference
#      reproduces, and `autotrain generate` samples from it greedily the text the reference
#      decodes;
#   3. LoRA: PEFT's adapters on every linear against the reference (tests/e2e/torch_lora.py);
#   4. what is not supported is refused by name.
set -euo pipefail
: "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
# shellcheck source=tests/e2e/lib.bash
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"  # reference_test, check_folder, edit, refused, ...
reference_test hf_gemma 256

# 1. Every version, against PyTorch (a byte vocabulary, so that generate can sample them).
"${torch_batch[@]}" << EOF
torch_llama.py make gemma1 --arch gemma --vocab 256 --shape 2,4,1,32,64 --seed 23
torch_llama.py make gemma2 --arch gemma2 --vocab 256 --seed 21
torch_llama.py make gemma3 --arch gemma3_text --vocab 256 --shape 3,4,1,32,64 --rope-scaling linear --dtype BF16 --shards 2 --seed 22
EOF
check_folder gemma1 gemma2 gemma3
grep -qa 'pre_feedforward_layernorm' gemma2/model.safetensors || fail "the made folder lacks Gemma's norms"

common=(--block-size 32 --tokenizer byte --batch-size 2 --gradient-accumulation 1 --threads 1
  --logging-steps 1 --eval-strategy no --comm-backend mpi)
timeout 120 "$AUTOTRAIN_BIN" train --model gemma1 --project-name tuned1 --max-steps 2 --lr 1e-3 \
  "${common[@]}" > tuned1.log 2>&1 || { tail -20 tuned1.log; fail "fine-tuning Gemma 1"; }
grep -q "model: Gemma (GemmaForCausalLM) (gemma1), weights from" tuned1.log ||
  { head -5 tuned1.log; fail "the log does not name Gemma 1"; }
"$python" - tuned1/config.json <<'PY' || fail "the Gemma 1 export's config.json"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["architectures"] == ["GemmaForCausalLM"] and c["model_type"] == "gemma", c
assert "layer_types" not in c and "query_pre_attn_scalar" not in c and c["num_key_value_heads"] == 1, c
PY
check_folder tuned1
"$AUTOTRAIN_BIN" train --model gemma3 --dry-run "${common[@]}" > dry.out 2>&1 || { cat dry.out; fail "dry run"; }
grep -q "model        gemma3, Gemma 3 (Gemma3ForCausalLM): 3 layers" dry.out ||
  { cat dry.out; fail "the dry run does not show the family"; }

# 2. Fine-tuning at ZeRO-3 on two ranks learns; the export is a Gemma 3 folder the reference
# reproduces, and generate decodes what the reference decodes.
finetune_learns gemma3
"$python" - tuned/config.json <<'PY' || fail "the export's config.json"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["architectures"] == ["Gemma3ForCausalLM"] and c["model_type"] == "gemma3_text", c
assert c["layer_types"] == ["sliding_attention", "sliding_attention", "full_attention"], c
assert c["rope_local_base_freq"] == 100 and c["rope_scaling"] == {"rope_type": "linear", "factor": 4.0}, c
assert c["query_pre_attn_scalar"] == 24 and c["hidden_activation"] == "gelu_pytorch_tanh", c
PY
check_folder tuned
generates_as_reference tuned

# 3. LoRA on every linear of Gemma 2 (soft caps and all), against PEFT's semantics.
torch_lora=("$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_lora.py")
"${torch_lora[@]}" make-adapter gemma2 adapter --r 4 --alpha 12 --targets all-linear --seed 5 > /dev/null
rm -rf probe && mkdir probe
"$probe_bin" adapter tokens.txt probe || fail "hf_probe on the adapter folder"
"${torch_lora[@]}" check adapter probe tokens.txt > lora-check.out ||
  { cat lora-check.out; fail "PyTorch disagrees on the LoRA adapters"; }
echo "adapter: $(grep gradients lora-check.out)"

# 4. Refused, by name.
edit gemma2 act 'c["hidden_activation"] = "gelu"'
refused act 'hidden_activation "gelu" is not supported' act
edit gemma3 types 'c["layer_types"] = ["sliding_attention"]'
refused types 'layer_types should list num_hidden_layers = 3 entries' types
echo "hf_gemma: ok"
