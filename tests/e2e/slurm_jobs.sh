#!/usr/bin/env bash
# The job scripts in slurm/ and `autotrain launch` on a real single-node Slurm
# (scripts/slurm-local.sh):
#  - a job script written by `launch --sbatch` for a CPU plan trains;
#  - slurm/train-single-node.sbatch with 2 tasks trains the tiny model: exit 0, the project
#    folder holds the parameters, metrics, a checkpoint and the exported model, and the output
#    file ends with the run summary;
#  - slurm/train-preemptible.sbatch is signalled (USR1 to the batch shell, as --signal=B:USR1
#    does), checkpoints, requeues itself, resumes at the checkpoint's step and completes with the
#    same losses as an uninterrupted run; `autotrain status` shows the job's Slurm state and the
#    stop step while it waits to run again;
#  - `autotrain launch --dry-run` plans srun inside an allocation and mpirun outside.
# The test cluster has no GPUs: the scripts' --gpus-per-node line is removed, the one edit a
# CPU site makes. Skips (77) only when not root and no cluster is reachable.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
src=$AUTOTRAIN_SOURCE_DIR
source "$src/tests/e2e/lib.bash"
check="python3 $src/tests/e2e/metrics_check.py"
slurm_dir=${AUTOTRAIN_SLURM_DIR:-/var/tmp/autotrain-slurm}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

on_failure() {
  echo "slurm_jobs: FAILED; job output and cluster state follow" >&2
  for out in "$work"/*.out; do [ -f "$out" ] && { echo "---- $out" >&2; tail -n 40 "$out" >&2; }; done
  squeue >&2 || true
  [ -f "$slurm_dir/log/slurmctld.log" ] && tail -n 20 "$slurm_dir/log/slurmctld.log" >&2
}
if [ "$(id -u)" -eq 0 ]; then
  "$src/scripts/slurm-local.sh" start || exit 1
  export SLURM_CONF=$slurm_dir/slurm.conf
elif ! timeout 20 sinfo -h >/dev/null 2>&1; then
  echo "slurm_jobs: skipped: not root (cannot start a local Slurm) and no Slurm cluster reachable"
  exit 77
fi
finish() {
  local status=$?
  [ "$status" -eq 0 ] || on_failure
  [ -n "${preempt_job:-}" ] && scancel "$preempt_job" 2>/dev/null
  rm -rf "$work"
}
trap finish EXIT
cd "$work"
export AUTOTRAIN=$AUTOTRAIN_BIN AUTOTRAIN_PROGRESS=lines
for script in train-single-node train-preemptible train-sweep; do
  sed '/--gpus-per-node/d' "$src/slurm/$script.sbatch" > "$script.sbatch"
done
fail() { echo "slurm_jobs: $*" >&2; exit 1; }

# --- launch --dry-run outside and inside an allocation.
env -u SLURM_JOB_ID "$AUTOTRAIN_BIN" launch --dry-run -- train --config c.yaml > outside.txt
grep -q "^mpirun -np 1 .*$AUTOTRAIN_BIN train --config c.yaml" outside.txt || fail "outside: $(cat outside.txt)"
sbatch_wait 120 -n 2 -t 2 -o inside.out \
  --wrap "$AUTOTRAIN_BIN launch --dry-run -- train --config c.yaml" > /dev/null || fail "sbatch launch failed"
grep -q "^srun --mpi=pmix --nodes=1 --ntasks-per-node=2 .*$AUTOTRAIN_BIN train --config c.yaml" inside.out ||
  fail "inside: $(cat inside.out)"
if env -u SLURM_JOB_ID "$AUTOTRAIN_BIN" launch --num-nodes 2 --dry-run -- train > nodes.txt 2>&1; then
  fail "--num-nodes 2 outside an allocation was accepted"
fi
grep -q "needs a Slurm allocation" nodes.txt || fail "$(cat nodes.txt)"

# --- the single-node script, 2 tasks.
config=$src/tests/e2e/configs/tiny.yaml
sbatch_wait 300 --ntasks-per-node=2 --cpus-per-task=1 -t 5 -o single-%j.out \
  train-single-node.sbatch "$config" --project-name single --checkpoint-every 10 > /dev/null ||
  fail "train-single-node.sbatch failed"
for file in training_params.json metrics.jsonl model.safetensors config.json checkpoints/latest; do
  [ -s "single/$file" ] || fail "single/$file is missing"
done
grep -q "2 rank(s)" single-*.out || fail "the single-node job did not run 2 ranks"
grep -q "summary: model single" single-*.out || fail "no run summary in the job output"
# The run recorded its job id, so status names the job.
"$AUTOTRAIN_BIN" status single | grep -q "^state       finished (Slurm job " ||
  fail "status: $("$AUTOTRAIN_BIN" status single)"

# --- a job script `launch --sbatch` writes for a CPU plan: it names a CPU partition, carries the
# preemption handling, and trains.
env -u SLURM_JOB_ID "$AUTOTRAIN_BIN" launch --num-processes 2 --cpus-per-task 1 --sbatch gen.sbatch -- \
  train --config "$config" --project-name gen --max-steps 10 > gen.txt || fail "launch --sbatch: $(cat gen.txt)"
grep -q "^##SBATCH --partition=cpu" gen.sbatch && grep -q "^#SBATCH --signal=B:USR1@300" gen.sbatch ||
  fail "the written script: $(cat gen.sbatch)"
# -t 10: the script asks for USR1 300 s before the limit, which a 5-minute limit puts at the start
# (a 2-second run then now and then meets it, stops as preempted and is held two minutes).
sbatch_wait 300 -t 10 -o gen-%j.out gen.sbatch > /dev/null || fail "the written script failed: $(cat gen-*.out)"
[ -s gen/model.safetensors ] || fail "the written script did not train: $(cat gen-*.out)"

# --- the sweep script: 2 models of 1 rank in one allocation.
cp "$config" sweep.yaml
printf 'sweep:\n  lr: [1e-3, 3e-3]\n' >> sweep.yaml
sbatch_wait 300 --ntasks-per-node=2 --cpus-per-task=1 -t 10 -o sweep-%j.out \
  train-sweep.sbatch sweep.yaml --project-name sweep --max-steps 20 > /dev/null ||
  fail "train-sweep.sbatch failed"
grep -q "^  model 1  ranks 1-1  lr 3e-3" sweep-*.out || fail "the sweep job printed no table of models"
grep -q "training exited with status 0" sweep-*.out || fail "the sweep job did not complete"
python3 -c "import json; assert [m['status'] for m in json.load(open('sweep/sweep.json'))['models']] == ['finished'] * 2" ||
  fail "sweep.json: $(cat sweep/sweep.json)"
"$AUTOTRAIN_BIN" status sweep | grep -c "^state       finished (Slurm job " | grep -qx 2 ||
  fail "status of the sweep: $("$AUTOTRAIN_BIN" status sweep)"

# --- the preemptible script, submitted as a site would (a 2-minute limit, USR1 90 s before it).
# The test preempts it itself, at a step of its choosing however fast this machine trains: rank 0
# of each run stops before its third step (AUTOTRAIN_INJECT_STOP, lib.bash); at the first run's
# stop the test sends USR1 to the batch shell, as Slurm would, and lets the rank go on once the
# signal reached it; the requeued run's rank 0 just goes on.
steps=300
flags=(--project-name preempt --max-steps "$steps" --eval-steps 100 --logging-steps 20)
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$config" --project-name straight \
  --max-steps "$steps" --eval-steps 100 --logging-steps 20 > straight.log 2>&1 || { cat straight.log; exit 1; }
preempt_job=$(AUTOTRAIN_INJECT_STOP=0:step sbatch --parsable --ntasks-per-node=2 --cpus-per-task=1 \
  -t 2 --signal=B:USR1@90 -o preempt.out train-preemptible.sbatch "$config" "${flags[@]}")
deadline=$((SECONDS + 420))
signalled=0
held=0
while [ "$SECONDS" -lt "$deadline" ]; do
  # Done when squeue lists nothing or no longer knows the job, and every run that started has
  # said how training ended (between a requeue and the next start squeue can briefly list
  # nothing); any other error (a busy slurmctld timing out on a loaded machine) is not an answer.
  # A preempted run ends with "requeueing" and another run follows; the last one ends with
  # "training exited with status".
  finished=0
  last=$(grep -Eos "training exited with status [0-9]+|checkpoint saved; requeueing" preempt.out |
    tail -n 1 || true)
  [[ "$last" == "training exited"* ]] && finished=1
  if ! state=$(squeue -h -j "$preempt_job" -o '%T %r' 2>&1); then
    grep -q "Invalid job id" <<< "$state" && [ "$finished" -eq 1 ] && break
    sleep 0.5
    continue
  fi
  [ -z "$state" ] && [ "$finished" -eq 1 ] && break
  rank=$(stopped_rank "$PWD")
  if [ -n "$rank" ] && [ "$signalled" -eq 0 ]; then
    scancel --batch --signal=USR1 "$preempt_job" && signalled=1
    continue_when_usr1_pending "$rank"
  elif [ -n "$rank" ]; then
    kill -CONT "$rank"
  fi
  # Slurm holds a requeued job for about two minutes (BeginTime); the test does not wait that
  # long, but lets the previous run's clean-up finish first (a start within a second of the
  # requeue can meet "Job credential revoked" and fail the job).
  case "$state" in
    PENDING*BeginTime*)
      # What a user sees between two runs: Slurm's state of the job, where the run stopped.
      [ -f pending-status.txt ] || "$AUTOTRAIN_BIN" status preempt > pending-status.txt 2>&1 || true
      held=$((held + 1))
      [ "$held" -ge 6 ] && scontrol update jobid="$preempt_job" StartTime=now && held=0
      ;;
    *) held=0 ;;
  esac
  sleep 0.5
done
[ -z "$(squeue -h -j "$preempt_job" 2>/dev/null)" ] || fail "preemptible job still queued after 7 minutes"
grep -q "SIGUSR1 received" preempt.out || fail "the batch script never got SIGUSR1"
grep -q "checkpoint saved; requeueing" preempt.out || fail "the job did not requeue itself"
grep -q "resume: .* at step" preempt.out || fail "no run resumed from a checkpoint"
# Every resume starts at the step the previous run's stop checkpoint saved.
python3 - preempt.out <<'PY'
import re, sys
text = open(sys.argv[1]).read()
stops = [int(s) for s in re.findall(r"stopped by SIGUSR1 after step (\d+)", text)]
resumes = [int(s) for s in re.findall(r"resume: .* at step (\d+)", text)]
assert stops and resumes[: len(stops)] == stops, f"stopped at {stops}, resumed at {resumes}"
print(f"slurm_jobs: preempted at steps {stops}, resumed at {resumes}")
PY
grep -q "training exited with status 0" preempt.out || fail "the last run did not complete"
if [ -f pending-status.txt ]; then
  grep -Eq "^state       (PENDING|REQUEUED) \(Slurm job $preempt_job;" pending-status.txt &&
    grep -Eq "^stopped     after step [0-9]+ by SIGUSR1" pending-status.txt &&
    ! grep -q "^ETA" pending-status.txt || fail "status of the requeued job: $(cat pending-status.txt)"
  echo "slurm_jobs: status while requeued: $(grep -E '^(state|stopped) ' pending-status.txt | tr -s ' ')"
fi
"$AUTOTRAIN_BIN" status preempt | grep -q "^state       finished (Slurm job $preempt_job" ||
  fail "status: $("$AUTOTRAIN_BIN" status preempt)"
[ -s preempt/model.safetensors ] || fail "the preempted run exported no model"
$check same straight/metrics.jsonl preempt/metrics.jsonl 1e-6
preempt_job=
echo "slurm_jobs: ok"
