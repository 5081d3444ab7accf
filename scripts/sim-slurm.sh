#!/usr/bin/env bash
# A real multi-node Slurm on the simulated cluster (scripts/sim-cluster.sh): slurmctld on the
# host side of the bridge, one slurmd inside each node's namespaces (NodeName=nodeI with its own
# address), so `srun -N2 --mpi=pmix`, `salloc` + `mpirun` and `sbatch --nodes=2` run with real
# per-node host names and addresses; each node has 2 (fake) GPUs. Its own configuration, ports
# (6917, 6918) and state, so it never meets the single-node cluster of scripts/slurm-local.sh.
#   scripts/sim-slurm.sh start     (after sim-cluster.sh up N) start the daemons, wait for idle
#   scripts/sim-slurm.sh stop
#   scripts/sim-slurm.sh conf      print the SLURM_CONF clients use
# The same AUTOTRAIN_SIM_NAME / AUTOTRAIN_SIM_DIR as sim-cluster.sh. Needs root, slurm-wlm and
# munge (munged's socket is shared by the nodes, which share the file system, /tmp included).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${AUTOTRAIN_SIM_NAME:-atsim}
state=${AUTOTRAIN_SIM_DIR:-/run/$name}
dir=$state/slurm
conf=$dir/slurm.conf
timeout_s=${AUTOTRAIN_SLURM_TIMEOUT:-90}
export SLURM_CONF=$conf

die() {
  echo "sim-slurm: $*" >&2
  exit 1
}

nodes() {
  local f
  for f in "$state/uts/$name"*; do
    [ -e "$f" ] && echo "${f##*/"$name"}"
  done | sort -n
}

in_node() {
  local i=$1
  shift
  nsenter --net="/run/netns/$name$i" --uts="$state/uts/$name$i" -- "$@"
}

pid_alive() {
  local pid
  pid=$(cat "$1" 2> /dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null
}

# Each node advertises two GPUs, so the GPU job scripts (--gpus-per-node) are scheduled as
# written; Slurm wants a device file per GPU, and these are copies of /dev/null (the jobs then
# train on CPUs, or on the CUDA emulator's GPUs). Prints the Gres= field, or nothing where
# device files cannot be made.
fake_gpus() {
  local i=$1 g
  for g in 0 1; do
    [ -c "$dir/node$i/gpu$g" ] || mknod "$dir/node$i/gpu$g" c 1 3 2> /dev/null || return 0
  done
  echo "NodeName=node$i Name=gpu File=$dir/node$i/gpu[0-1]" > "$dir/node$i/gres.conf"
  echo " Gres=gpu:2"
}

write_config() {
  local net=$1 count=$2 i memory_mb
  memory_mb=$(free -m | awk -v n="$count" '/^Mem:/ {print int($2 * 0.9 / n)}')
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
  for ((i = 1; i <= count; ++i)); do mkdir -p "$dir/node$i"; done
  {
    echo "# Written by autotrain scripts/sim-slurm.sh: the simulated cluster's Slurm."
    echo "ClusterName=autotrain-sim"
    echo "SlurmctldHost=$(hostname -s)($net.1)"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "MpiDefault=pmix"
    echo "GresTypes=gpu"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "ReturnToService=2"
    echo "SchedulerType=sched/backfill"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
    echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "SlurmctldPort=6917"
    echo "SlurmdPort=6918"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "MinJobAge=60"
    for ((i = 1; i <= count; ++i)); do
      echo "NodeName=node$i NodeAddr=$net.$((10 + i)) CPUs=$(nproc) RealMemory=$memory_mb$(fake_gpus "$i") State=UNKNOWN"
    done
    echo "PartitionName=sim Nodes=node[1-$count] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
  } > "$conf"
  # Each slurmd reads the same slurm.conf from a folder of its own, beside its gres.conf and an
  # mpi.conf that gives the PMIx plugin a per-node folder: its per-step folders
  # (spmix_appdir_<uid>_<job>.<step>) would otherwise collide in the /tmp the nodes share.
  for ((i = 1; i <= count; ++i)); do
    mkdir -p "$dir/node$i" "$dir/pmix/node$i" "$dir/spool/node$i"
    cp "$conf" "$dir/node$i/slurm.conf"
    echo "PMIxCliTmpDirBase=$dir/pmix/node$i" > "$dir/node$i/mpi.conf"
  done
}

start() {
  [ "$(id -u)" -eq 0 ] || die "start needs root"
  [ -f "$state/net" ] || die "no simulated cluster is up (scripts/sim-cluster.sh up N)"
  local net count i waited=0 idle
  net=$(cat "$state/net")
  count=$(nodes | wc -l)
  stop > /dev/null 2>&1 || true
  rm -rf "$dir/state"  # a fresh cluster: no jobs or node states of an earlier one
  write_config "$net" "$count"
  "$root/scripts/slurm-local.sh" munge > /dev/null
  /usr/sbin/slurmctld -f "$conf" || die "slurmctld did not start (see $dir/log/slurmctld.log)"
  for i in $(nodes); do
    in_node "$i" /usr/sbin/slurmd -f "$dir/node$i/slurm.conf" ||
      die "slurmd did not start on node$i (see $dir/log)"
  done
  while [ "$waited" -lt "$timeout_s" ]; do
    idle=$(sinfo -h -N -o '%T' 2> /dev/null | grep -c '^idle' || true)
    if [ "$idle" -eq "$count" ]; then
      echo "sim-slurm: $count node(s) idle (SLURM_CONF=$conf)"
      return 0
    fi
    sinfo -h -N -o '%N %T' 2> /dev/null | awk '$2 ~ /^(down|drain)/ {print $1}' |
      while read -r node; do scontrol update nodename="$node" state=resume > /dev/null 2>&1 || true; done
    sleep 1
    waited=$((waited + 1))
  done
  sinfo -N >&2 || true
  tail -n 20 "$dir"/log/*.log >&2 || true
  die "the nodes are not idle after ${timeout_s}s"
}

stop() {
  local pidfile
  for pidfile in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid"; do
    [ -e "$pidfile" ] || continue
    if pid_alive "$pidfile"; then
      kill "$(cat "$pidfile")"
      for _ in $(seq 1 50); do pid_alive "$pidfile" || break; sleep 0.1; done
    fi
    rm -f "$pidfile"
  done
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  conf) echo "$conf" ;;
  *) die "usage: sim-slurm.sh start | stop | conf" ;;
esac
