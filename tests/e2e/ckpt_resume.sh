#!/usr/bin/env bash
# Exact resume and reshape, driving the real binary under mpirun (docs/training.md, "Resuming").
#  - exact: a run of 12 steps saves checkpoints at 4, 8, 12; a new run resumed from
#    checkpoint-4 with the same world size and ZeRO stage logs bit-identical losses for steps
#    5..12. Every stage 0-3 and every np 1, 2, 4 is covered (np1: 0 and 3; np2: 1 and 2; np4: 3
#    and 0), the global batch G = 16 throughout.
#  - reshape: checkpoint-4 of np=4 stage 3 resumes on np=2 stage 1 and np=1 stage 0
#    (gradient_accumulation keeps G) with losses within 1e-5 relative of the np=4 run, and the
#    np=1 run's checkpoint-8 continues on np=4 stage 2;
#  - the per-rank layout resumes exactly and reshapes np=2 -> np=4.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/ckpt_check.py"
config="$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines

# train NP PROJECT STAGE [flags...]: 12 steps, G = 4 x (16 / (4 x NP)) x NP = 16.
train() {
  local np=$1 project=$2 stage=$3
  shift 3
  timeout 300 "${mpirun[@]}" -np "$np" "$AUTOTRAIN_BIN" train --config "$config" --project-name "$project" \
    --zero-stage "$stage" --gradient-accumulation $((4 / np)) --max-steps 12 --checkpoint-every 4 \
    --save-total-limit 5 --eval-strategy no "$@" > "$project.log" 2>&1 || { cat "$project.log"; exit 1; }
}

for case in "1 0" "1 3" "2 1" "2 2" "4 3" "4 0"; do
  read -r np stage <<< "$case"
  train "$np" "ref-$np-$stage" "$stage"
  for step in 4 8 12; do
    [ -s "ref-$np-$stage/checkpoints/checkpoint-$step.h5" ] || { echo "no checkpoint-$step in ref-$np-$stage"; ls -R "ref-$np-$stage"; exit 1; }
  done
  train "$np" "res-$np-$stage" "$stage" --resume-from-checkpoint "ref-$np-$stage/checkpoints/checkpoint-4.h5"
  grep -q "resume: .*checkpoint-4.h5 at step 4" "res-$np-$stage.log" || { cat "res-$np-$stage.log"; exit 1; }
  $check tail "ref-$np-$stage/metrics.jsonl" "res-$np-$stage/metrics.jsonl" 5 0
done

# Reshape: np=4 stage 3 -> np=2 stage 1 and np=1 stage 0, no conversion step.
train 2 reshape-2-1 1 --resume-from-checkpoint ref-4-3/checkpoints/checkpoint-4.h5
$check tail ref-4-3/metrics.jsonl reshape-2-1/metrics.jsonl 5 1e-5
train 1 reshape-1-0 0 --resume-from-checkpoint ref-4-3/checkpoints/checkpoint-4.h5
$check tail ref-4-3/metrics.jsonl reshape-1-0/metrics.jsonl 5 1e-5
# ... and on to np=4 stage 2 (the chain 4 -> 2 -> 1 -> 4 of the issue): the np=1 stage-0 run's
# checkpoint-8 continues at np=4.
train 4 reshape-4-2 2 --resume-from-checkpoint reshape-1-0/checkpoints/checkpoint-8.h5
$check tail ref-4-3/metrics.jsonl reshape-4-2/metrics.jsonl 9 1e-5

# The per-rank layout (one HDF5 file per rank behind a master of virtual datasets) resumes
# exactly too, and reshapes from np=2 to np=4.
train 2 ref-per-rank 2 --checkpoint-layout per-rank
[ -d ref-per-rank/checkpoints/checkpoint-4.ranks ] || { ls -R ref-per-rank/checkpoints; exit 1; }
train 2 res-per-rank 2 --checkpoint-layout per-rank --resume-from-checkpoint ref-per-rank/checkpoints/checkpoint-4.h5
$check tail ref-per-rank/metrics.jsonl res-per-rank/metrics.jsonl 5 0
train 4 reshape-per-rank 3 --resume-from-checkpoint ref-per-rank/checkpoints/checkpoint-4.h5
$check tail ref-per-rank/metrics.jsonl reshape-per-rank/metrics.jsonl 5 1e-5
echo "ckpt_resume: ok"
