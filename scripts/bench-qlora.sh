#!/usr/bin/env bash
# QLoRA against LoRA on the same model (docs/benchmarks.md, "QLoRA"): a Llama-shaped folder
# (tests/e2e/torch_llama.py, random weights) whose block weights dominate, LoRA r 16 on every
# linear, one rank on the CPU, `autotrain bench train` (real steps on random tokens). For each
# quantization (none = the frozen base in fp32; int4; int4 with double quantization; int8) and
# repeat, prints the mean step time and the frozen weights' bytes (with the dequantized block's
# scratch), and once the bits a block weight takes in each format.
#   scripts/bench-qlora.sh [BUILD_DIR] [REPEATS] [STEPS]
set -euo pipefail
build=${1:-build/ci}
repeats=${2:-3}
steps=${3:-5}
bin=$(realpath "$build/autotrain")
src=$(realpath "$(dirname "$0")/..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 "$src/tests/e2e/torch_llama.py" make model --shape 4,8,4,512,1376 --vocab 512 \
  --max-positions 512 --seed 3 > /dev/null
common=(--model model --tokenizer byte --block-size 256 --batch-size 4 --gradient-accumulation 1
  --peft --lora-r 16 --lora-alpha 32 --target-modules all-linear --steps "$steps" --no-profile
  --threads "$(nproc)" --json)
echo "quantization repeat step_ms frozen_weight_bytes frozen_bytes_with_scratch"
for repeat in $(seq "$repeats"); do
  for quantization in none int4 int4-dq int8; do
    q=(--quantization "${quantization%-dq}")
    [ "$quantization" = int4-dq ] && q+=(--bnb-4bit-use-double-quant true)
    "$bin" bench train "${common[@]}" "${q[@]}" > "$quantization.json" 2> "$quantization.log" ||
      { tail "$quantization.log"; exit 1; }
    /usr/bin/python3 - "$quantization" "$repeat" "$quantization.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[3]))
print(sys.argv[1], sys.argv[2], f"{r['step_mean_s'] * 1e3:.1f}", r["frozen_weight_bytes"],
      r["frozen_bytes"])
PY
  done
done
# Bits a weight of a [rows, cols] block weight takes (kernels/quantize.hpp's records): NF4 4 bits
# and an fp32 absmax per 64; with double quantization an 8-bit absmax per 64, an fp32 absmax2 per
# 256 blocks and one offset; int8 8 bits and an fp32 per row.
/usr/bin/python3 - <<'PY'
rows, cols = 1376, 512
n = rows * cols
blocks = -(-n // 64)
formats = {"bf16": 16 * n, "int4": 4 * n + 32 * blocks,
           "int4-dq": 4 * n + 8 * blocks + 32 * (-(-blocks // 256) + 1), "int8": 8 * n + 32 * rows}
print("bits a weight of a 1376x512 weight:",
      ", ".join(f"{name} {bits / n:.3f}" for name, bits in formats.items()))
PY
