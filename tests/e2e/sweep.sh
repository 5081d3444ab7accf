#!/usr/bin/env bash
# Several models in one allocation (num_models, a sweep: docs/configuration.md):
#  - np=4, K=2: each model's loss curve equals a separate np=2 run with its parameters (DESIGN.md
#    contract 2), at ZeRO 0 and 3, over MPI and over Gloo;
#  - np=4, --num-models 4 without a sweep: one rank per model, model k trains with seed + k;
#  - an allocation that does not split into K groups is refused, naming sizes that work;
#  - a model forced to diverge fails alone (sweep.json says so) while the other finishes;
#  - a sweep preempted by SIGUSR1 exits 3 and resumes each model from its own checkpoint; a
#    finished sweep run again keeps its models;
#  - --dry-run prints the table of models; status and plot read the sweep project.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py"
tiny="$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
fail() { echo "FAIL: $*"; for f in *.log; do echo "== $f"; tail -25 "$f"; done; exit 1; }
train() { # train NP LOG ARGS...: a run that must succeed
  local np=$1 log=$2
  shift 2
  timeout 300 "${mpirun[@]}" -np "$np" "$AUTOTRAIN_BIN" train "$@" > "$log" 2>&1 || fail "$log"
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

cp "$tiny" sweep.yaml
printf 'sweep:\n  lr: [1e-3, 3e-3]\n' >> sweep.yaml
short=(--max-steps 10 --eval-steps 5)

# --- the models' curves equal separate runs', at ZeRO 0 and 3 over MPI and Gloo.
train 4 sweep.log --config sweep.yaml "${short[@]}" --project-name sweep
train 2 alone.log --config "$tiny" "${short[@]}" --project-name alone --lr 3e-3
$check same alone/metrics.jsonl sweep/model-1/metrics.jsonl 1e-6
grep -q "^  model 1  ranks 2-3  lr 3e-3" sweep.log || fail "no table of models"
grep -q "^\[model 1\] autotrain: training sweep/model-1 on 2 rank(s)" sweep.log || fail "model 1 log"
grep -q "summary:   #1 model 1 (lr 3e-3): finished" sweep.log || fail "no ranking"
[ "$(json sweep/sweep.json "[m['status'] for m in d['models']]")" = "['finished', 'finished']" ] ||
  fail "sweep.json: $(cat sweep/sweep.json)"
for file in training_params.json metrics.jsonl model.safetensors result.json checkpoints/latest; do
  [ -s "sweep/model-0/$file" ] || fail "sweep/model-0/$file is missing"
done
gloo=(--zero-stage 3 --comm-backend gloo)
train 4 sweep3.log --config sweep.yaml "${short[@]}" "${gloo[@]}" --project-name sweep3
train 2 alone3.log --config "$tiny" "${short[@]}" "${gloo[@]}" --project-name alone3 --lr 1e-3
$check same alone3/metrics.jsonl sweep3/model-0/metrics.jsonl 1e-6
for combo in "3 mpi" "0 gloo"; do
  read -r stage backend <<< "$combo"
  other=(--zero-stage "$stage" --comm-backend "$backend")
  train 4 "sweep-$stage-$backend.log" --config sweep.yaml "${short[@]}" "${other[@]}" --project-name "s$stage$backend"
  train 2 "alone-$stage-$backend.log" --config "$tiny" "${short[@]}" "${other[@]}" --project-name "a$stage$backend" --lr 3e-3
  $check same "a$stage$backend/metrics.jsonl" "s$stage$backend/model-1/metrics.jsonl" 1e-6
done

# --- one rank per model, seeds 7 + k.
train 4 four.log --config "$tiny" "${short[@]}" --num-models 4 --project-name four
train 1 seed9.log --config "$tiny" "${short[@]}" --seed 9 --project-name seed9
$check same seed9/metrics.jsonl four/model-2/metrics.jsonl 1e-6
grep -q "^  model 3  ranks 3-3  seed 10" four.log || fail "four: no seed + k"

# --- a world that does not split.
if timeout 120 "${mpirun[@]}" -np 3 "$AUTOTRAIN_BIN" train --config sweep.yaml --project-name odd > odd.log 2>&1; then
  fail "np=3 with 2 models was accepted"
fi
grep -q "trains 2 models, but the job has 3 rank(s), which do not split into 2 equal groups; run on a multiple of 2 ranks (2, 4, 6" odd.log ||
  fail "uneven allocation message"

# --- one model diverges; the other finishes.
cp "$tiny" diverge.yaml
printf 'sweep:\n  mode: list\n  runs:\n    - {lr: 3e-3}\n    - {lr: 1e9}\n' >> diverge.yaml
status=0
timeout 300 "${mpirun[@]}" -np 4 "$AUTOTRAIN_BIN" train --config diverge.yaml "${short[@]}" \
  --project-name diverge > diverge.log 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "a sweep with a failed model exited 0"
grep -q "model 1 failed: training diverged" diverge.log || fail "no divergence message"
[ "$(json diverge/sweep.json "[m['status'] for m in d['models']]")" = "['finished', 'failed']" ] ||
  fail "diverge sweep.json: $(cat diverge/sweep.json)"
[ -s diverge/model-0/model.safetensors ] || fail "the healthy model was not exported"

# --- preempt a sweep, resume it; run the finished sweep again.
wide=(--n-layer 4 --n-embd 128 --n-head 4 --max-steps 40 --checkpoint-every 10 --eval-strategy no)
"${mpirun[@]}" -np 4 "$AUTOTRAIN_BIN" train --config sweep.yaml "${wide[@]}" --project-name pre > pre.log 2>&1 &
job=$!
for _ in $(seq 3000); do
  grep -q "^\[model 0\] step [3-9]/" pre.log 2>/dev/null &&
    grep -q "^\[model 1\] step [3-9]/" pre.log && break
  sleep 0.05
done
kill -USR1 "$job"
status=0
wait "$job" || status=$?
[ "$status" -eq 3 ] || fail "preempted sweep: exit status $status, expected 3"
grep -q "preempted" pre/sweep.json || fail "sweep.json after preemption: $(cat pre/sweep.json)"
train 4 pre-resume.log --config sweep.yaml "${wide[@]}" --project-name pre
grep -q "^\[model 0\] resume: pre/model-0/checkpoints/checkpoint-.* at step" pre-resume.log &&
  grep -q "^\[model 1\] resume: pre/model-1/checkpoints/checkpoint-.* at step" pre-resume.log ||
  fail "the models did not resume from their own checkpoints"
[ "$(json pre/sweep.json "[(m['status'], m['steps']) for m in d['models']]")" = \
  "[('finished', 40), ('finished', 40)]" ] || fail "resumed sweep.json: $(cat pre/sweep.json)"
train 4 again.log --config sweep.yaml "${wide[@]}" --project-name pre
[ "$(grep -c "finished in an earlier run of this job; kept as it is" again.log)" -eq 2 ] ||
  fail "a finished model trained again"

# --- dry run, status and plot.
train 4 dry.log --config sweep.yaml --project-name dry --dry-run
grep -q "^  model 0  ranks 0-1  lr 1e-3" dry.log && grep -q "^autotrain training plan" dry.log ||
  fail "dry run"
[ ! -e dry/sweep.json ] || fail "a dry run wrote sweep.json"
"$AUTOTRAIN_BIN" status diverge > status.log 2>&1 || fail "status of a sweep"
grep -q "^== model 1: lr 1e9 (sweep.json: failed)" status.log &&
  grep -q "^project     diverge/model-0" status.log || fail "status: $(cat status.log)"
"$AUTOTRAIN_BIN" plot sweep --no-png > plot.log 2>&1 || fail "plot of a sweep"
[ "$(grep -c '<g class="model">' sweep/loss.svg)" -eq 2 ] && grep -q "model 1: lr 3e-3" sweep/loss.svg ||
  fail "plot: $(cat plot.log)"
echo "sweep: all checks passed"
