#!/usr/bin/env bash
# The Llama-style decoder end to end on the emulated device: tiny folders (tests/e2e/torch_llama.py)
# of Qwen3 (GQA, q/k norms, head_dim 2·hidden/heads; with flash attention) and Gemma 3 (norm
# offsets, sandwich norms, GeGLU, sliding windows of 6 under 32 positions, a local rope base:
# the reference attention path) fine-tuned on two emulated GPUs at ZeRO-3 in bf16, then sampled
# greedily from their exports on the GPU (fp32), on the CPU and by the PyTorch reference: the same
# text. ctest runs it as cuda_emu.llama_on_the_device (tests/cuda_emu/CMakeLists.txt).
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
torch_llama=(/usr/bin/python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_llama.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# on_the_device FOLDER ATTENTION: fine-tunes FOLDER on the device with AUTOTRAIN_CUDA_ATTENTION =
# ATTENTION into FOLDER-tuned, and checks that every sampler decodes the same text from it.
on_the_device() {
  local folder=$1 tuned=$1-tuned
  AUTOTRAIN_CUDA_ATTENTION=$2 "${mpirun[@]}" -np 2 -x AUTOTRAIN_CUDA_ATTENTION \
    "$AUTOTRAIN_BIN" train --model "$folder" --project-name "$tuned" --device cuda \
    --comm-backend auto --mixed-precision bf16 --tokenizer byte --zero-stage 3 --max-steps 2 \
    --block-size 32 --batch-size 2 --gradient-accumulation 1 --threads 1 --logging-steps 1 \
    --eval-strategy no > "$folder.log" 2>&1 || { tail -20 "$folder.log"; exit 1; }
  grep -E "on cuda:[0-9]+ .* in bf16" "$folder.log" || { tail -20 "$folder.log"; exit 1; }
  if grep "flash attention needs" "$folder.log"; then echo "$folder did not take flash attention"; exit 1; fi
  for device in cuda cpu; do
    "$AUTOTRAIN_BIN" generate --model "$tuned" --device "$device" --prompt "To be" \
      --max-new-tokens 12 --temperature 0 > "gen-$device.txt" 2> "gen-$device.log" ||
      { cat "gen-$device.log"; exit 1; }
  done
  grep "^generate: on cuda:0 (.*) in fp32$" gen-cuda.log || { cat gen-cuda.log; exit 1; }
  cmp gen-cpu.txt gen-cuda.txt ||
    { echo "$folder: greedy text differs: CPU '$(cat gen-cpu.txt)', GPU '$(cat gen-cuda.txt)'"; exit 1; }
  "${torch_llama[@]}" generate "$tuned" "To be" 12 > gen-torch.txt
  cmp gen-torch.txt gen-cuda.txt ||
    { echo "$folder: PyTorch decodes '$(cat gen-torch.txt)', the GPU '$(cat gen-cuda.txt)'"; exit 1; }
  echo "$folder: generated on the GPU as on the CPU and in PyTorch: '$(cat gen-cuda.txt)'"
}

"${torch_llama[@]}" make qwen3 --arch qwen3 --vocab 256 --seed 5
on_the_device qwen3 flash
"${torch_llama[@]}" make gemma3 --arch gemma3_text --vocab 256 --shape 3,4,1,32,64 --seed 6
on_the_device gemma3 auto
