#!/usr/bin/env bash
# The Llama family end to end on the emulated device: a tiny Qwen3 folder (GQA, q/k norms, head_dim
# 2·hidden/heads; tests/e2e/torch_llama.py) fine-tuned on two emulated GPUs at ZeRO-3 in bf16 with
# flash attention, then sampled greedily from its export on the GPU (fp32) and on the CPU: the
# same text. ctest runs it as cuda_emu.llama_on_the_device (tests/cuda_emu/CMakeLists.txt).
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_llama.py" make qwen3 --arch qwen3 --seed 5
AUTOTRAIN_CUDA_ATTENTION=flash "${mpirun[@]}" -np 2 -x AUTOTRAIN_CUDA_ATTENTION \
  "$AUTOTRAIN_BIN" train --model qwen3 --project-name tuned --device cuda \
  --comm-backend auto --mixed-precision bf16 --tokenizer byte --zero-stage 3 --max-steps 2 \
  --block-size 32 --batch-size 2 --gradient-accumulation 1 --threads 1 --logging-steps 1 \
  --eval-strategy no > train.log 2>&1 || { tail -20 train.log; exit 1; }
grep -E "on cuda:[0-9]+ .* in bf16" train.log || { tail -20 train.log; exit 1; }
if grep "flash attention needs" train.log; then echo "the run did not take flash attention"; exit 1; fi
for device in cuda cpu; do
  "$AUTOTRAIN_BIN" generate --model tuned --device "$device" --prompt "To be" \
    --max-new-tokens 12 --temperature 0 > "gen-$device.txt" 2> "gen-$device.log" ||
    { cat "gen-$device.log"; exit 1; }
done
grep "^generate: on cuda:0 (.*) in fp32$" gen-cuda.log || { cat gen-cuda.log; exit 1; }
cmp gen-cpu.txt gen-cuda.txt ||
  { echo "greedy text differs: CPU '$(cat gen-cpu.txt)', GPU '$(cat gen-cuda.txt)'"; exit 1; }
echo "generated on the GPU: '$(cat gen-cuda.txt)'"
