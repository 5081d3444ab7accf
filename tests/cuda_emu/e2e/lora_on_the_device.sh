#!/usr/bin/env bash
# LoRA on the emulated device: a tiny Qwen3 folder's adapters trained on two emulated GPUs at
# ZeRO-3 in fp32 follow the CPU's run (the frozen base sharded and gathered on both), the merged
# model and the adapter folder are exported, and generate on the GPU gives the same greedy text
# from the adapter folder (base + adapters) as from the merged folder. Adapter dropout (0.1) draws
# the same masks on both devices, so the losses still agree. QLoRA (quantization int4 with double
# quantization, int8) dequantizes on the device to the CPU's values: its runs agree too, and a bf16
# QLoRA run trains. ctest runs it as
# cuda_emu.lora_on_the_device (tests/cuda_emu/CMakeLists.txt).
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_llama.py" make qwen3 --arch qwen3 --seed 5
lora=(train --model qwen3 --tokenizer byte --zero-stage 3 --max-steps 3 --block-size 32
  --batch-size 2 --gradient-accumulation 1 --threads 1 --logging-steps 1 --eval-strategy no
  --lr 3e-3 --peft true --lora-r 4 --lora-alpha 8 --merge-adapter true)
for device in cuda cpu; do
  "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${lora[@]}" --lora-dropout 0.1 --project-name "on-$device" \
    --device "$device" --comm-backend auto --mixed-precision no > "train-$device.log" 2>&1 ||
    { tail -20 "train-$device.log"; exit 1; }
done
grep -E "on cuda:[0-9]+ .* in fp32" train-cuda.log || { tail -20 train-cuda.log; exit 1; }
grep -E "lora: rank 4, alpha 8" train-cuda.log || { tail -20 train-cuda.log; exit 1; }
/usr/bin/python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py" same on-cpu/metrics.jsonl \
  on-cuda/metrics.jsonl 1e-4
ls on-cuda/model.safetensors on-cuda/adapter/adapter_model.safetensors > /dev/null
for folder in on-cuda on-cuda/adapter; do
  "$AUTOTRAIN_BIN" generate --model "$folder" --device cuda --prompt "To be" \
    --max-new-tokens 12 --temperature 0 > "gen-${folder//\//-}.txt" 2> gen.log ||
    { cat gen.log; exit 1; }
done
cmp gen-on-cuda.txt gen-on-cuda-adapter.txt ||
  { echo "generate differs between the merged and the adapter folder"; exit 1; }
for quantization in "int4 --bnb-4bit-use-double-quant true" int8; do
  read -ra q <<< "$quantization"
  for device in cuda cpu; do
    "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${lora[@]}" --quantization "${q[@]}" \
      --project-name "q${q[0]}-$device" --device "$device" --comm-backend auto --mixed-precision no \
      > "q${q[0]}-$device.log" 2>&1 || { tail -20 "q${q[0]}-$device.log"; exit 1; }
  done
  grep -E "lora: .*block weights in ${q[0]}" "q${q[0]}-cuda.log" || { grep lora: "q${q[0]}-cuda.log"; exit 1; }
  /usr/bin/python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py" same "q${q[0]}-cpu/metrics.jsonl" \
    "q${q[0]}-cuda/metrics.jsonl" 1e-4
done
"${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${lora[@]}" --quantization int4 \
  --project-name q-bf16 --device cuda --comm-backend auto --mixed-precision bf16 > q-bf16.log 2>&1 ||
  { tail -20 q-bf16.log; exit 1; }
grep -E "on cuda:[0-9]+ .* in bf16" q-bf16.log || { tail -20 q-bf16.log; exit 1; }
echo "LoRA and QLoRA on the device follow the CPU; generated '$(cat gen-on-cuda.txt)'"
