#!/usr/bin/env bash
# `autotrain env` under a real single-node Slurm (scripts/slurm-local.sh): srun --mpi=pmix -n 2
# maps the ranks, and mpirun inside sbatch is not confused by the batch script's SLURM_* values.
# Skips (77) only when not root and no cluster is reachable; as root it starts the cluster.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/env_check.py"
slurm_dir=${AUTOTRAIN_SLURM_DIR:-/var/tmp/autotrain-slurm}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

on_failure() {
  echo "slurm_env: FAILED; cluster state and logs follow" >&2
  sinfo -R >&2 || true
  squeue >&2 || true
  for log in "$slurm_dir"/log/slurmctld.log "$slurm_dir"/log/slurmd.log; do
    [ -f "$log" ] && { echo "---- $log" >&2; tail -n 40 "$log" >&2; }
  done
}

if [ "$(id -u)" -eq 0 ]; then
  "$AUTOTRAIN_SOURCE_DIR/scripts/slurm-local.sh" start || { on_failure; exit 1; }
  export SLURM_CONF=$slurm_dir/slurm.conf
elif ! timeout 20 sinfo -h >/dev/null 2>&1; then
  echo "slurm_env: skipped: not root (cannot start a local Slurm) and no Slurm cluster reachable"
  exit 77
fi
finish() {
  local status=$?
  [ "$status" -eq 0 ] || on_failure
  rm -rf "$work"
}
trap finish EXIT

# Direct launch: Slurm starts the ranks, Open MPI wires them up through PMIx.
timeout 180 srun --mpi=pmix -n 2 -t 5 "$AUTOTRAIN_BIN" env --json > "$work/srun.json"
$check 2 "srun (Slurm, PMIx)" < "$work/srun.json"

# mpirun inside a batch job: every rank inherits SLURM_PROCID=0 from the batch script.
cat > "$work/job.sh" <<JOB
#!/usr/bin/env bash
exec mpirun --oversubscribe --allow-run-as-root -np 2 "$AUTOTRAIN_BIN" env --json
JOB
sbatch_wait 180 -n 2 -t 5 -o "$work/batch.json" -e "$work/batch.err" "$work/job.sh" >/dev/null ||
  { cat "$work/batch.err" "$work/batch.json" >&2; exit 1; }
$check 2 "mpirun (Open MPI) in Slurm job" < "$work/batch.json"
echo "slurm_env: ok"
