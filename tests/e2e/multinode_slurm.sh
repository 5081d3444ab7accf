#!/usr/bin/env bash
# Slurm across nodes, on the simulated cluster (scripts/sim-cluster.sh, scripts/sim-slurm.sh: one
# slurmd per node, each with its own host name and address):
#  - `srun -N2 -n4 --mpi=pmix autotrain env` maps ranks, local ranks and nodes from Slurm;
#  - slurm/train-cpu.sbatch on 2 nodes x 2 ranks over gloo, and slurm/train-multi-node.sbatch
#    on 2 nodes x 2 (fake) GPUs, train the losses of one rank with the same global batch;
#  - slurm/train-preemptible.sbatch on 2 nodes is signalled (USR1 to the batch shell), saves,
#    requeues itself, resumes and ends with the losses of an uninterrupted run;
#  - a node that stops (slurmd, step daemon and rank) ends the job, naming the collective and
#    the rank and node that stopped answering, and leaves no process behind.
# Skips (77) where network namespaces cannot be made (not root) or Slurm is not installed.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
src=$AUTOTRAIN_SOURCE_DIR
source "$src/tests/e2e/lib.bash"
check="python3 $src/tests/e2e/metrics_check.py"
config=$src/tests/e2e/configs/tiny.yaml
export AUTOTRAIN_SIM_NAME=atsl$$ AUTOTRAIN_SIM_NET=10.205.$((RANDOM % 200))
AUTOTRAIN_SIM_NAME=${AUTOTRAIN_SIM_NAME:0:8}
if [ "$(id -u)" != 0 ] || ! command -v slurmctld > /dev/null && [ ! -x /usr/sbin/slurmctld ] ||
  ! ip netns add "${AUTOTRAIN_SIM_NAME}probe" 2> /dev/null; then
  echo "multinode_slurm: skipped: needs root (network namespaces) and slurm-wlm"
  exit 77
fi
ip netns delete "${AUTOTRAIN_SIM_NAME}probe"
mkdir -p /var/tmp/autotrain-tests
work=$(mktemp -d /var/tmp/autotrain-tests/multinode-slurm.XXXXXX)
finish() {
  local status=$?
  if [ "$status" -ne 0 ]; then
    for out in "$work"/*.out; do [ -f "$out" ] && { echo "---- $out"; tail -n 40 "$out"; }; done
    squeue || true
    tail -n 20 "/run/$AUTOTRAIN_SIM_NAME/slurm/log/"*.log 2> /dev/null || true
  fi
  [ -n "${job:-}" ] && scancel "$job" 2> /dev/null
  "$src/scripts/sim-slurm.sh" stop > /dev/null 2>&1 || true
  "$src/scripts/sim-cluster.sh" down > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap finish EXIT
cd "$work"
"$src/scripts/sim-cluster.sh" up 2
"$src/scripts/sim-slurm.sh" start
SLURM_CONF=$("$src/scripts/sim-slurm.sh" conf)
export SLURM_CONF AUTOTRAIN=$AUTOTRAIN_BIN AUTOTRAIN_PROGRESS=lines
# The jobs take this environment: ranks waiting in MPI yield the CPU, as the simulated cluster's
# mpirun flags have them do (scripts/sim-cluster.sh mpirun-args says why).
export OMPI_MCA_mpi_yield_when_idle=1

timeout 60 srun -N2 -n4 --mpi=pmix "$AUTOTRAIN_BIN" env --json > env.json
python3 - env.json << 'PY'
import json, sys
env = json.load(open(sys.argv[1]))
ranks = sorted(env["ranks"], key=lambda r: r["rank"])
got = [(r["host"], r["node_rank"], r["local_rank"]) for r in ranks]
assert env["launcher"] == "srun (Slurm, PMIx)" and env["num_nodes"] == 2, env
assert got == [("node1", 0, 0), ("node1", 0, 1), ("node2", 1, 0), ("node2", 1, 1)], got
print("multinode_slurm: srun -N2: ranks 0-1 on node1, 2-3 on node2")
PY

# The reference: one rank, the same global batch (4 rows x accumulation 4).
train=(--config "$config" --device cpu --eval-strategy no --logging-steps 1)
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train "${train[@]}" --project-name reference \
  --max-steps 30 --gradient-accumulation 4 > reference.log 2>&1 || { cat reference.log; exit 1; }

sbatch_wait 300 --nodes=2 --ntasks-per-node=2 --cpus-per-task=1 -o cpu.out \
  "$src/slurm/train-cpu.sbatch" "$config" --project-name cpu --comm-backend gloo \
  --eval-strategy no --max-steps 30 --gradient-accumulation 1 > /dev/null
grep -q "summary: wall time" cpu.out || exit 1
$check same reference/metrics.jsonl cpu/metrics.jsonl 1e-5
echo "multinode_slurm: train-cpu.sbatch on 2 nodes x 2 ranks (gloo): the one-rank losses"

# The GPU job script as written, its counts lowered to the simulated nodes' 2 GPUs each. The
# GPUs are device files of /dev/null, so device auto trains on the CPUs; Slurm still schedules
# and binds them as on a GPU cluster.
sbatch_wait 300 --nodes=2 --ntasks-per-node=2 --gpus-per-node=2 --cpus-per-task=1 -o multi.out \
  "$src/slurm/train-multi-node.sbatch" "$config" --project-name multi --eval-strategy no \
  --max-steps 30 --gradient-accumulation 1 > /dev/null
grep -q "summary: wall time" multi.out || exit 1
grep -q "on node\[1-2\]: 2 node(s), 4 rank(s)" multi.out || exit 1
$check same reference/metrics.jsonl multi/metrics.jsonl 1e-5
echo "multinode_slurm: train-multi-node.sbatch on 2 nodes x 2 GPUs: the one-rank losses"

# Preemptible on 2 nodes x 1 rank, its rank 0 stopped before its third step
# (AUTOTRAIN_INJECT_STOP, lib.bash): USR1 to the batch shell then, and the rank goes on once the
# signal reached it; the requeued run's rank 0 stops again at its third step and just goes on.
# The reference is an uninterrupted run of 2 ranks (a sum of two is the same in any order, so the
# curves agree to the bit).
long=(--device cpu --eval-strategy no --logging-steps 10 --max-steps 100)
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$config" "${long[@]}" --project-name straight \
  > straight.log 2>&1 || { cat straight.log; exit 1; }
job=$(AUTOTRAIN_INJECT_STOP=0:step sbatch --parsable --nodes=2 --ntasks-per-node=1 \
  --cpus-per-task=1 --gpus-per-node=0 -o preempt.out "$src/slurm/train-preemptible.sbatch" \
  "$config" "${long[@]}" --project-name preempt)
deadline=$((SECONDS + 240))
signalled=0
held=0
while [ "$SECONDS" -lt "$deadline" ]; do
  last=$(grep -Eos "training exited with status [0-9]+|checkpoint saved; requeueing" preempt.out |
    tail -n 1 || true)
  state=$(squeue -h -j "$job" -o '%T %r' 2> /dev/null || true)
  [[ "$last" == "training exited"* ]] && [ -z "$state" ] && break
  rank=$(stopped_rank "$work")
  if [ -n "$rank" ] && [ "$signalled" -eq 0 ]; then
    scancel --batch --signal=USR1 "$job" && signalled=1
    continue_when_usr1_pending "$rank"
  elif [ -n "$rank" ]; then
    kill -CONT "$rank"
  fi
  # A requeued job is held about two minutes (BeginTime): let it start again after ~3 s.
  case "$state" in
    PENDING*BeginTime*)
      held=$((held + 1))
      [ "$held" -ge 15 ] && scontrol update jobid="$job" StartTime=now && held=0
      ;;
    *) held=0 ;;
  esac
  sleep 0.2
done
grep -q "checkpoint saved; requeueing" preempt.out || { echo "no requeue"; exit 1; }
grep -Eq "resume: .* at step [0-9]+ \(written by 2 rank\(s\)" preempt.out || { echo "no resume"; exit 1; }
grep -q "training exited with status 0" preempt.out || { echo "the last run did not complete"; exit 1; }
$check same straight/metrics.jsonl preempt/metrics.jsonl 1e-6
job=
echo "multinode_slurm: preempted on 2 nodes, requeued, resumed: the uninterrupted losses"

# A node lost under Slurm: everything on node2 stops (its slurmd, the step's daemon and the
# rank), as when a node hangs. Rank 0 ends within comm_timeout, naming the collective and rank 1
# on node2; the job ends; when node2 comes back, nothing of the job runs on any node.
job=$(sbatch --parsable --no-requeue --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 -o lost.out \
  "$src/slurm/train-cpu.sbatch" "$config" --project-name lost --eval-strategy no \
  --max-steps 1000000 --comm-timeout 5)
for _ in $(seq 1200); do grep -qs '"step":[1-9]' lost/metrics.jsonl && break; sleep 0.1; done
grep -qs '"step":[1-9]' lost/metrics.jsonl || { echo "multinode_slurm: the lost-node job never trained"; exit 1; }
node2=$(stat -L -c %i "/run/$AUTOTRAIN_SIM_NAME/uts/${AUTOTRAIN_SIM_NAME}2")
frozen=()
for pid in $(pgrep -x 'slurmd|slurmstepd|autotrain'); do
  [ "$(stat -L -c %i "/proc/$pid/ns/uts" 2> /dev/null)" = "$node2" ] && frozen+=("$pid")
done
[ "${#frozen[@]}" -ge 3 ] || { ps -ef | grep -E 'slurm|autotrain'; echo "multinode_slurm: node2 runs ${#frozen[@]} processes"; exit 1; }
kill -STOP "${frozen[@]}"
start=$SECONDS
while [ $((SECONDS - start)) -lt 120 ]; do
  state=$(squeue -h -j "$job" -o '%T' 2> /dev/null || true)
  [ -z "$state" ] || [ "$state" = COMPLETING ] && break
  sleep 0.5
done
elapsed=$((SECONDS - start))
kill -CONT "${frozen[@]}" 2> /dev/null || true
echo "multinode_slurm: node2 stopped: the job ended after ${elapsed}s (squeue: '${state:-gone}')"
[ -z "$state" ] || [ "$state" = COMPLETING ] || { echo "multinode_slurm: the job still runs"; exit 1; }
grep -Eq "collective timeout: mpi .* on rank 0 did not complete within comm_timeout = 5 s" lost.out ||
  { cat lost.out; echo "multinode_slurm: no collective timeout"; exit 1; }
grep -q "rank 1 (on node2) did not answer a probe" lost.out ||
  { cat lost.out; echo "multinode_slurm: the lost rank is not named"; exit 1; }
for _ in $(seq 60); do pgrep -f "$AUTOTRAIN_BIN train .*--project-name lost" > /dev/null || break; sleep 0.5; done
if pgrep -f "$AUTOTRAIN_BIN train .*--project-name lost" > /dev/null; then
  pgrep -af "$AUTOTRAIN_BIN train .*--project-name lost"
  echo "multinode_slurm: ranks left behind"
  exit 1
fi
job=
echo "multinode_slurm: a lost node ends the job, names rank 1 on node2, and leaves nothing behind"
echo "multinode_slurm: ok"
