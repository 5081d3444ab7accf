#!/usr/bin/env bash
# Installs what autotrain needs, builds it, and runs the demo under mpirun with 2 ranks on the
# embedded default data (data/tinyshakespeare.txt): see README.md for what it shows.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
# The CUDA path (nvcc) is most of the build's time: built only where a GPU can run it.
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then
  echo "demo: a GPU is visible ($(nvidia-smi -L | head -n 1)): building the CUDA path too"
  cuda=auto
else
  echo "demo: no GPU visible: building the CPU path only (-DAUTOTRAIN_CUDA=off)"
  cuda=off
fi
cmake --preset release -DAUTOTRAIN_CUDA=$cuda
# Only the binary: the tests are scripts/test.sh's to build.
cmake --build --preset release -j "$(nproc)" --target autotrain

mpirun_flags=(--oversubscribe)
if [ "$(id -u)" -eq 0 ]; then mpirun_flags+=(--allow-run-as-root); fi
bin=build/release/autotrain

echo "== autotrain env: the rank topology and the build =="
mpirun "${mpirun_flags[@]}" -np 2 "$bin" env
echo
echo "== autotrain train: a small GPT-2 on tiny Shakespeare, 2 ranks, data parallel =="
mpirun "${mpirun_flags[@]}" -np 2 "$bin" train --config configs/demo.yaml
echo
echo "== autotrain generate: sampling from the exported model in demo-project/ =="
"$bin" generate --model demo-project --prompt "ROMEO:" --max-new-tokens 60 --temperature 0.8
