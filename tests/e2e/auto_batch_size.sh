#!/usr/bin/env bash
# auto_find_batch_size (docs/configuration.md, "Derived values"): under an address-space limit
# (ulimit -v) the chosen micro-batch is smaller than without one, the global batch stays, the
# losses equal those of a run given the chosen batch_size and gradient_accumulation by hand, a
# resume on a "machine" with more memory (another batch_size, the same global batch) is accepted
# and continues the same curve, and a model whose one sequence does not fit is a clear error.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "auto_batch_size: $*"; tail -n 20 ./*.log 2> /dev/null; exit 1; }
check="$AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py"
# 64 sequences of 1024 bytes per step on one rank: about 5.4 MiB of activations per sequence, so
# the 64 need 350 MiB and an 879 MiB address-space limit (of which the process maps about 580
# MiB) holds fewer.
limit_kib=900000
tiny=("$AUTOTRAIN_BIN" train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml")
train=("${tiny[@]}" --n-positions 1024 --block-size 1024 --eval-strategy no --logging-steps 1
  --scheduler constant)  # the same learning rates for 3 steps and then 5 as for 5
auto=("${train[@]}" --batch-size 8 --gradient-accumulation 8 --auto-find-batch-size true)
# The value of a parameter in a dry run's table, and its source.
value() { awk -v key="$1" '$1 == key { print $2 }' "$2"; }
limited() { (ulimit -v "$limit_kib" && "$@"); }

"${auto[@]}" --project-name free --dry-run > free-dry.log 2>&1 || fail "dry run without a limit"
[ "$(value batch_size free-dry.log)" = 64 ] || fail "without a limit: batch_size $(value batch_size free-dry.log), expected 64"
grep -qE "^batch_size +64 +derived from auto_find_batch_size \(64 sequences per rank and step" \
  free-dry.log || fail "without a limit: no provenance"

limited "${auto[@]}" --project-name auto --dry-run > auto-dry.log 2>&1 || fail "dry run under ulimit -v"
b=$(value batch_size auto-dry.log)
a=$(value gradient_accumulation auto-dry.log)
[ "$b" -lt 64 ] && [ $((b * a)) -eq 64 ] ||
  fail "under ulimit -v: batch_size $b x gradient_accumulation $a, expected fewer than 64 per micro-step, 64 per step"
grep -qE "^gradient_accumulation +$a +derived from auto_find_batch_size .*ulimit -v" auto-dry.log ||
  fail "under ulimit -v: no provenance naming the limit"
grep -qE "batch +$b sequences x 1024 tokens per rank and micro-step; x $a accumulation x 1 ranks = 64 sequences.*auto_find_batch_size" \
  auto-dry.log || fail "under ulimit -v: the plan's batch line"
echo "auto_find_batch_size: batch_size 64 without a limit, $b x $a under ulimit -v $limit_kib KiB"

limited "${auto[@]}" --project-name auto --max-steps 3 > auto.log 2>&1 || fail "the run under ulimit -v"
"${train[@]}" --project-name hand --batch-size "$b" --gradient-accumulation "$a" --max-steps 5 \
  > hand.log 2>&1 || fail "the run given batch_size $b by hand"
# On a machine with more memory the run resumes with batch_size 64: the same global batch.
"${auto[@]}" --project-name auto --max-steps 5 > resumed.log 2>&1 || fail "the resume with another batch_size"
grep -q "resume: auto/checkpoints/checkpoint-3.h5 at step 3" resumed.log || fail "no resume at step 3"
grep -q "activations" resumed.log || fail "resumed: no plan line"
python3 "$check" same auto/metrics.jsonl hand/metrics.jsonl 1e-5 || fail "losses differ from the run by hand"

# One sequence of 65536 bytes keeps about 350 MiB of activations: it cannot fit under the limit.
status=0
limited "${tiny[@]}" --auto-find-batch-size true --project-name big --n-positions 65536 \
  --block-size 65536 --dry-run > big.log 2>&1 ||
  status=$?
[ "$status" -eq 1 ] || fail "a sequence that cannot fit: exit $status, expected 1"
grep -qE "auto_find_batch_size: (even batch_size 1 needs|the activations of one sequence of block_size 65536)" \
  big.log || fail "a sequence that cannot fit: no clear error"
grep -q "make the model or block_size smaller" big.log || fail "a sequence that cannot fit: no advice"
echo "auto_batch_size: ok"
