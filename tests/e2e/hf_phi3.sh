#!/usr/bin/env bash
# Phi-3 and Phi-4-mini folders (Phi3ForCausalLM) checked against the PyTorch reference
# (tests/e2e/torch_llama.py --arch phi3, written from transformers' Phi-3 semantics):
#   1. Phi-3-mini's layout (fused qkv_proj and gate_up_proj, untied head, sliding_window), Phi-4-
#      mini's (partial_rotary_factor 0.75, GQA, tied head) and longrope rope scaling (BF16 in 2
#      shards): our logits match PyTorch's to 1e-4, the loss, every gradient and 20 greedily
#      decoded tokens (key/value cache) too;
#   2. a ZeRO-3 fine-tune under mpirun -np 2 learns, exports a Phi-3 folder (fused names,
#      config.json of model_type phi3) that the reference reproduces, and `autotrain generate`
#      samples from it greedily the text the reference decodes;
#   3. LoRA on the fused modules: PEFT's adapters (qkv_proj, o_proj, gate_up_proj, down_proj)
#      against the reference (tests/e2e/torch_lora.py), and a LoRA fine-tune at ZeRO-3 that
#      exports PEFT's merge and an adapter folder naming Phi-3's modules, which `export
#      --merge-adapter` of its checkpoint and `tools merge-llm-adapter` reproduce byte for byte;
#   4. what is not supported is refused by name.
set -euo pipefail
: "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
# shellcheck source=tests/e2e/lib.bash
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"  # reference_test, check_folder, edit, refused, ...
reference_test hf_phi3 256

# 1. Every variant, against PyTorch (a byte vocabulary, so that generate can sample them).
"${torch_batch[@]}" << EOF
torch_llama.py make phi3 --arch phi3 --vocab 256 --sliding-window 8 --seed 11  # windows under T = 16
torch_llama.py make phi4 --arch phi3 --vocab 256 --shape 2,4,2,64,64 --partial-rotary 0.75 --tied --seed 12
torch_llama.py make longrope --arch phi3 --vocab 256 --partial-rotary 0.5 --rope-scaling longrope --dtype BF16 --shards 2 --seed 13
EOF
check_folder phi3 phi4 longrope
grep -qa 'self_attn.qkv_proj.weight' phi3/model.safetensors || fail "the made folder does not have Phi-3's fused names"

common=(--block-size 32 --tokenizer byte --batch-size 2 --gradient-accumulation 1 --threads 1
  --logging-steps 1 --eval-strategy no --comm-backend mpi)
"$AUTOTRAIN_BIN" train --model phi4 --dry-run "${common[@]}" > dry.out 2>&1 || { cat dry.out; fail "dry run"; }
grep -q "model        phi4, Phi-3 (Phi3ForCausalLM): 2 layers, hidden 64, 4 heads of 16, 2 key/value heads, MLP 64, 128 positions, vocabulary 256, tied embeddings, rotary on 12 of 16" dry.out ||
  { cat dry.out; fail "the dry run does not show the family and its shape"; }

# 2. Fine-tuning at ZeRO-3 on two ranks learns; the export is a Phi-3 folder the reference
# reproduces, and generate decodes what the reference decodes.
finetune_learns phi4
grep -q "model: Phi-3 (Phi3ForCausalLM) (phi4), weights from $work/phi4" tuned.log ||
  { head -8 tuned.log; fail "no 'weights from'"; }
"$python" - tuned/config.json <<'PY' || fail "the export's config.json"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["architectures"] == ["Phi3ForCausalLM"] and c["model_type"] == "phi3", c
assert c["partial_rotary_factor"] == 0.75 and c["tie_word_embeddings"] is True and "head_dim" not in c, c
PY
check_folder tuned
generates_as_reference tuned

# 3. LoRA on the fused modules.
torch_lora=("$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_lora.py")
"${torch_lora[@]}" make-adapter phi4 adapter --r 4 --alpha 12 --targets all-linear --seed 5 > /dev/null
rm -rf probe && mkdir probe
"$probe_bin" adapter tokens.txt probe || fail "hf_probe on the adapter folder"
"${torch_lora[@]}" check adapter probe tokens.txt > lora-check.out ||
  { cat lora-check.out; fail "PyTorch disagrees on the LoRA adapters"; }
echo "adapter: $(grep gradients lora-check.out)"
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model phi3 --project-name lora --zero-stage 3 \
  --max-steps 3 --lr 3e-3 --peft true --lora-r 4 --lora-alpha 8 --merge-adapter true "${common[@]}" \
  > lora.log 2>&1 || { tail -20 lora.log; fail "LoRA fine-tuning"; }
"$python" - lora/adapter/adapter_config.json <<'PY' || fail "the adapter's target_modules"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["target_modules"] == ["down_proj", "gate_up_proj", "o_proj", "qkv_proj"], c["target_modules"]
PY
"${torch_lora[@]}" merged lora/adapter lora 1e-6 || fail "the merged model is not PEFT's merge"
# Merged after training, from the ZeRO-3 checkpoint (np 2) and by AutoTrain's merge tool: the
# run's own merged model, byte for byte.
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" export --checkpoint lora/checkpoints/checkpoint-3.h5 \
  --output lora-exported --merge-adapter > lora-export.log 2>&1 || { cat lora-export.log; fail "export --merge-adapter"; }
"$AUTOTRAIN_BIN" tools merge-llm-adapter --base-model-path phi3 --adapter-path lora/adapter \
  --output-folder lora-tool > lora-tool.log 2>&1 || { cat lora-tool.log; fail "tools merge-llm-adapter"; }
for merged in lora-exported lora-tool; do
  cmp "$merged/model.safetensors" lora/model.safetensors || fail "$merged differs from the run's merged model"
done

# 4. Refused, by name.
edit longrope long 'c["sliding_window"] = None'
short=("${common[@]}")
common=("${common[@]:2}" --block-size 256)  # past longrope's original context
refused beyond 'positions exceed rope_scaling.s original_max_position_embeddings of 128: longrope.s long_factor is not supported yet' long
common=("${short[@]}")
edit phi3 factors 'c["rope_scaling"] = {"type": "longrope", "short_factor": [1.0], "long_factor": [1.0, 2.0]}'
refused factors 'rope_scaling.short_factor should be a list of 4 numbers' factors
edit phi3 odd 'c["partial_rotary_factor"] = 0.375'
refused odd 'partial_rotary_factor 0.375 is not supported' odd
echo "hf_phi3: ok"
