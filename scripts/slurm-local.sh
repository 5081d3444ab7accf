#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for tests and demos:
#   scripts/slurm-local.sh start    write the config, start munged, slurmctld and slurmd, and wait
#                                   until the node is idle (idempotent: a running cluster is kept)
#   scripts/slurm-local.sh stop     stop the daemons this script started
#   scripts/slurm-local.sh status   show the daemons and sinfo
#   scripts/slurm-local.sh munge    only make sure a munged runs (and its key exists)
# Needs root (slurmd must be root to start tasks as the submitting user) and the Debian packages
# slurm-wlm and munge (scripts/install-deps.sh). Works in containers without cgroups: processes
# are tracked with proctrack/linuxproc and tasks are not confined (task/none).
#
# Everything lives under $AUTOTRAIN_SLURM_DIR (default /var/tmp/autotrain-slurm). Clients find
# the cluster through SLURM_CONF=$AUTOTRAIN_SLURM_DIR/slurm.conf; when /etc/slurm/slurm.conf does
# not exist it is linked there too, so plain `srun` works.
set -euo pipefail

dir=${AUTOTRAIN_SLURM_DIR:-/var/tmp/autotrain-slurm}
conf=$dir/slurm.conf
timeout_s=${AUTOTRAIN_SLURM_TIMEOUT:-90}
node=$(hostname -s)
export SLURM_CONF=$conf

say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: error: $*" >&2; exit 1; }

# The pid file can vanish while a daemon exits: read it once, quietly.
pid_alive() {
  local pid
  pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

show_logs() {
  for log in "$dir"/log/slurmctld.log "$dir"/log/slurmd.log /var/log/munge/munged.log; do
    [ -f "$log" ] || continue
    echo "---- last lines of $log" >&2
    tail -n 25 "$log" >&2
  done
}

# Four GPUs the node advertises, so job scripts written for GPU nodes (--gpus-per-node) are
# scheduled here; Slurm wants a device file per GPU, and these are copies of /dev/null. On this
# machine the jobs reach the GPUs of autotrain's CUDA emulator (docs/gpu.md), or train on CPUs.
# Prints the node's Gres= field, or nothing where device files cannot be made.
fake_gpus() {
  local i
  for i in 0 1 2 3; do
    [ -c "$dir/gpu$i" ] || mknod "$dir/gpu$i" c 1 3 2>/dev/null || return 0
  done
  echo "NodeName=$node Name=gpu File=$dir/gpu[0-3]" > "$dir/gres.conf"
  # slurmd reads gres.conf next to /etc/slurm/slurm.conf when that is our link.
  [ -L /etc/slurm/slurm.conf ] && ln -sf "$dir/gres.conf" /etc/slurm/gres.conf
  echo " Gres=gpu:4"
}

write_config() {
  local cpus memory_mb gres
  cpus=$(nproc)
  # Slurm drains a node that has less memory than configured: leave a margin.
  memory_mb=$(free -m | awk '/^Mem:/ {print int($2 * 0.9)}')
  mkdir -p "$dir"/state "$dir"/spool "$dir"/log "$dir"/run
  gres=$(fake_gpus)
  cat > "$conf.new" <<EOF
# Written by autotrain scripts/slurm-local.sh: a single-node test cluster.
ClusterName=autotrain-local
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
ReturnToService=2
SchedulerType=sched/backfill
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
InactiveLimit=0
KillWait=5
MinJobAge=60
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mb$gres State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  if ! cmp -s "$conf.new" "$conf" 2>/dev/null; then
    mv "$conf.new" "$conf"
    return 0  # changed
  fi
  rm -f "$conf.new"
  return 1
}

start_munge() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    return  # a working munged is already there (ours or the system's)
  fi
  if [ ! -s /etc/munge/munge.key ]; then
    say "creating /etc/munge/munge.key"
    mkdir -p /etc/munge
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile=/etc/munge/munge.key
    else
      dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
    fi
  fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
  chmod 0700 /etc/munge
  chmod 0400 /etc/munge/munge.key
  chmod 0755 /run/munge
  say "starting munged"
  runuser -u munge -- /usr/sbin/munged
  touch "$dir/run/munged.ours"
  for _ in $(seq 1 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return
    sleep 0.1
  done
  show_logs
  die "munged did not start (see /var/log/munge/munged.log)"
}

node_state() { sinfo -h -n "$node" -o '%T' 2>/dev/null | head -n 1 || true; }

start() {
  [ "$(id -u)" -eq 0 ] || die "start needs root (slurmd starts tasks as the submitting user)"
  for tool in slurmctld slurmd sinfo munged; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
      die "$tool not found: run scripts/install-deps.sh (packages slurm-wlm and munge)"
  done
  mkdir -p "$dir/run"
  local changed=0
  write_config && changed=1
  if [ ! -e /etc/slurm/slurm.conf ]; then
    mkdir -p /etc/slurm
    ln -s "$conf" /etc/slurm/slurm.conf
  fi
  start_munge

  if [ "$changed" = 1 ] && { pid_alive "$dir/run/slurmctld.pid" || pid_alive "$dir/run/slurmd.pid"; }; then
    say "configuration changed: restarting the daemons"
    stop_slurm
  fi
  if ! pid_alive "$dir/run/slurmctld.pid"; then
    say "starting slurmctld"
    /usr/sbin/slurmctld -f "$conf" || { show_logs; die "slurmctld did not start"; }
  fi
  if ! pid_alive "$dir/run/slurmd.pid"; then
    say "starting slurmd"
    /usr/sbin/slurmd -f "$conf" || { show_logs; die "slurmd did not start"; }
  fi

  local state="" waited=0
  while [ "$waited" -lt "$timeout_s" ]; do
    state=$(node_state)
    case "$state" in
      idle*|mixed*|allocated*) say "node $node is $state (SLURM_CONF=$conf)"; return 0 ;;
      drain*|down*)
        # A node that was down before (e.g. an earlier stop) comes back on request.
        scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 1
    waited=$((waited + 1))
  done
  sinfo -R >&2 || true
  show_logs
  die "node $node is not idle after ${timeout_s}s (state '${state:-unknown}')"
}

stop_slurm() {
  local name
  for name in slurmd slurmctld; do
    if pid_alive "$dir/run/$name.pid"; then
      say "stopping $name"
      kill "$(cat "$dir/run/$name.pid")"
      for _ in $(seq 1 50); do pid_alive "$dir/run/$name.pid" || break; sleep 0.1; done
    fi
  done
}

stop() {
  stop_slurm
  if [ -f "$dir/run/munged.ours" ] && [ -f /run/munge/munged.pid ]; then
    say "stopping munged"
    kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
    rm -f "$dir/run/munged.ours"
  fi
}

status() {
  local name running=0
  for name in slurmctld slurmd; do
    if pid_alive "$dir/run/$name.pid"; then
      say "$name running (pid $(cat "$dir/run/$name.pid"))"
      running=$((running + 1))
    else
      say "$name not running"
    fi
  done
  [ "$running" -eq 2 ] || return 3
  echo "SLURM_CONF=$conf"
  sinfo
}

case "${1:-}" in
  start) start ;;
  munge) mkdir -p "$dir/run"; start_munge ;;  # only munged (scripts/sim-slurm.sh needs it too)
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status|munge" >&2; exit 2 ;;
esac
