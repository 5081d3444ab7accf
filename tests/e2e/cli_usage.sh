#!/usr/bin/env bash
# Usage errors of the command line exit 2 and say what to type instead: AutoTrain Advanced's
# `autotrain --config x.yaml` and `autotrain llm --train ...` point to `autotrain train`, and
# a misspelt command gets the closest one.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}"

expect_usage() {
  local want=$1 out status=0
  shift
  out=$("$AUTOTRAIN_BIN" "$@" 2>&1) || status=$?
  [ "$status" -eq 2 ] || { echo "autotrain $*: exit $status, expected 2: $out"; exit 1; }
  grep -qF -- "$want" <<< "$out" || { echo "autotrain $*: '$out' lacks '$want'"; exit 1; }
}

expect_usage "did you mean 'autotrain train --config x.yaml'?" --config x.yaml
expect_usage "did you mean 'autotrain train --config x.yaml --lr 1e-4'?" llm --train --config x.yaml --lr 1e-4
expect_usage "did you mean 'train'?" trian
echo "cli_usage: all checks passed"
