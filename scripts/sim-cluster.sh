#!/usr/bin/env bash
# A simulated cluster on this machine (as root): N "nodes", each a network namespace and a UTS
# namespace with its own host name (node1..nodeN) and address on a private bridge, sharing the
# file system as cluster nodes share a parallel one. Open MPI reaches them without ssh through a
# launch agent that enters the node's namespaces.
#   scripts/sim-cluster.sh up N       create nodes 1..N (again: recreate)
#   scripts/sim-cluster.sh down       end what runs on the nodes, remove them and the bridge
#   scripts/sim-cluster.sh status     list the nodes, their addresses and host names
#   scripts/sim-cluster.sh mpirun-args    the mpirun flags that launch on the nodes (--host not
#                                         included: add --host node1:2,node2:2)
#   scripts/sim-cluster.sh exec I CMD...  run CMD inside node I
# Faults, for the tests (and to see what `autotrain doctor` says about them):
#   scripts/sim-cluster.sh shape I RATE   limit node I's link to RATE both ways (tc tbf, e.g.
#                                         50mbit; tbf, not netem, which some kernels lack)
#   scripts/sim-cluster.sh block-port I PORT   refuse TCP from node I to PORT (a routing rule)
#   scripts/sim-cluster.sh private-dir I DIR   node I sees its own empty DIR (a tmpfs in a
#                                              mount namespace of its own), as with node-local
#                                              storage where the others share DIR
# Environment (so a test's cluster never meets yours): AUTOTRAIN_SIM_NAME (the prefix of every
# name, default atsim: namespaces atsimI, the bridge atsim0, host-side veths atsimvI; at most 8
# characters), AUTOTRAIN_SIM_NET (the first three octets of the private /24, default 10.201.0;
# the bridge is .1, node I is .(10 + I) on its eth0), AUTOTRAIN_SIM_DIR (state, default
# /run/<name>).
set -euo pipefail
name=${AUTOTRAIN_SIM_NAME:-atsim}
[[ $name =~ ^[a-z][a-z0-9]{0,7}$ ]] || { echo "sim-cluster: AUTOTRAIN_SIM_NAME '$name': expected 1-8 of [a-z0-9]" >&2; exit 1; }
net=${AUTOTRAIN_SIM_NET:-10.201.0}
state=${AUTOTRAIN_SIM_DIR:-/run/$name}
bridge=${name}0

die() {
  echo "sim-cluster: $*" >&2
  exit 1
}

need_root() {
  [ "$(id -u)" = 0 ] || die "needs root (network and UTS namespaces)"
  command -v ip > /dev/null || die "needs iproute2 (ip)"
  if ! command -v nsenter > /dev/null || ! command -v unshare > /dev/null; then
    die "needs util-linux (nsenter, unshare)"
  fi
}

node_address() { echo "$net.$((10 + $1))"; }

nodes() {
  [ -d "$state/uts" ] || return 0
  local f
  for f in "$state/uts/$name"*; do
    [ -e "$f" ] && echo "${f##*/"$name"}"
  done | sort -n
}

down() {
  local i
  for i in $(nodes); do
    # A node that goes down ends what runs on it: a step daemon left by a stopped job would
    # otherwise outlive its node (orphaned, in the deleted namespaces).
    ip netns pids "$name$i" 2> /dev/null | xargs -r kill -KILL 2> /dev/null || true
    umount "$state/mnt/$name$i" 2> /dev/null || true
    ip netns delete "$name$i" 2> /dev/null || true
    umount "$state/uts/$name$i" 2> /dev/null || true
    rm -f "$state/uts/$name$i"
    ip link delete "${name}v$i" 2> /dev/null || true
  done
  ip link delete "$bridge" 2> /dev/null || true
  umount "$state/mnt" 2> /dev/null || true
  rm -rf "$state"
}

write_agent() {
  # Open MPI calls the agent as `agent <host> <command...>` (the rsh launcher's contract).
  cat > "$state/agent" << AGENT
#!/bin/sh
host=\$1
shift
case \$host in
  node[0-9]*) ;;
  *) echo "sim-cluster agent: unknown node '\$host' (expected node1..nodeN)" >&2; exit 1 ;;
esac
i=\${host#node}
[ -e "$state/uts/$name\$i" ] || { echo "sim-cluster agent: node '\$host' is not up" >&2; exit 1; }
mnt=
[ -e "$state/mnt/$name\$i" ] && mnt=--mount="$state/mnt/$name\$i"
exec nsenter --net=/run/netns/$name\$i --uts="$state/uts/$name\$i" \$mnt -- /bin/sh -c "\$*"
AGENT
  chmod +x "$state/agent"
}

up() {
  local count=$1 i
  [[ $count =~ ^[1-9][0-9]?$ ]] || die "up: expected a node count 1..99, got '$count'"
  down
  mkdir -p "$state/uts"
  ip link add "$bridge" type bridge
  ip addr add "$net.1/24" dev "$bridge"
  ip link set "$bridge" up
  for ((i = 1; i <= count; ++i)); do
    ip netns add "$name$i"
    ip link add "${name}v$i" type veth peer name eth0 netns "$name$i"
    ip link set "${name}v$i" master "$bridge" up
    ip netns exec "$name$i" ip addr add "$(node_address "$i")/24" dev eth0
    ip netns exec "$name$i" ip link set eth0 up
    ip netns exec "$name$i" ip link set lo up
    # Everything off the bridge goes to the host (Slurm's srun on the host side answers there).
    ip netns exec "$name$i" ip route add default via "$net.1"
    touch "$state/uts/$name$i"
    unshare --uts="$state/uts/$name$i" hostname "node$i"
  done
  echo "$net" > "$state/net"
  write_agent
  echo "sim-cluster: $count node(s) up on $net.0/24 (bridge $bridge at $net.1)"
}

in_node() {
  local i=$1
  shift
  local mnt=()
  [ -e "$state/mnt/$name$i" ] && mnt=(--mount="$state/mnt/$name$i")
  nsenter --net="/run/netns/$name$i" --uts="$state/uts/$name$i" "${mnt[@]}" -- "$@"
}

need_node() {
  if ! [[ ${1:-} =~ ^[0-9]+$ ]] || [ ! -e "$state/uts/$name$1" ]; then
    die "node '${1:-}' is not up"
  fi
}

shape() {
  local i=$1 rate=$2
  # Both directions: node I's eth0 sends, the bridge's port to it sends to it.
  in_node "$i" tc qdisc replace dev eth0 root tbf rate "$rate" burst 64kb latency 50ms
  tc qdisc replace dev "${name}v$i" root tbf rate "$rate" burst 64kb latency 50ms
}

block_port() {
  local i=$1 port=$2
  # A routing rule, not a packet filter (tc's actions and netfilter are missing from some
  # kernels): TCP leaving node I for PORT is refused at once, as a rejecting firewall does.
  in_node "$i" ip rule add ipproto tcp dport "$port" prohibit
}

private_dir() {
  local i=$1 dir=$2
  mkdir -p "$dir" "$state/mnt"
  # A persistent mount namespace needs its file on a private mount.
  if ! mountpoint -q "$state/mnt"; then
    mount --bind "$state/mnt" "$state/mnt"
    mount --make-private "$state/mnt"
  fi
  touch "$state/mnt/$name$i"
  unshare --mount="$state/mnt/$name$i" --propagation private mount -t tmpfs tmpfs "$dir"
}

status() {
  local i
  [ -n "$(nodes)" ] || { echo "sim-cluster: no nodes"; return 0; }
  for i in $(nodes); do
    printf 'node%s  %s  host name %s\n' "$i" "$(node_address "$i")" \
      "$(nsenter --uts="$state/uts/$name$i" hostname)"
  done
}

# What `up` chose, for the commands that read the cluster.
[ -f "$state/net" ] && [ "${1:-}" != up ] && net=$(cat "$state/net")

case ${1:-} in
  up) need_root; up "${2:?up needs a node count}" ;;
  down) need_root; down ;;
  status) status ;;
  mpirun-args)
    [ -x "$state/agent" ] || die "no cluster is up (scripts/sim-cluster.sh up N)"
    # mpi_yield_when_idle: a rank waiting in MPI yields the CPU between polls. Without it, the
    # ranks spinning on both sides of a veth pair leave the packets between nodes to ksoftirqd,
    # which runs at the next scheduler tick: every collective across nodes took 4 ms (one tick
    # at 250 Hz) instead of 40 us, and a tiny model's checkpoint save 2.5 s instead of 0.03.
    echo "--mca plm_rsh_agent $state/agent --mca oob_tcp_if_include $net.0/24" \
      "--mca btl_tcp_if_include $net.0/24 --mca mpi_yield_when_idle 1"
    ;;
  exec)
    need_node "${2:-}"
    i=$2
    shift 2
    in_node "$i" "$@"
    ;;
  shape) need_root; need_node "${2:-}"; shape "$2" "${3:?shape needs a rate, e.g. 50mbit}" ;;
  block-port) need_root; need_node "${2:-}"; block_port "$2" "${3:?block-port needs a port}" ;;
  private-dir) need_root; need_node "${2:-}"; private_dir "$2" "${3:?private-dir needs a folder}" ;;
  *) die "usage: sim-cluster.sh up N | down | status | mpirun-args | exec I CMD... | shape I RATE | block-port I PORT | private-dir I DIR" ;;
esac
