#!/usr/bin/env bash
# Two nodes for real, on the simulated cluster (scripts/sim-cluster.sh: network and UTS
# namespaces, each node its own host name and address, Open MPI between them over TCP):
#  - `autotrain env` maps RANK, LOCAL_RANK, NODE_RANK, hosts and MASTER_ADDR (node 1's address);
#  - training over mpi and over gloo across 2 nodes x 2 ranks gives the losses of one rank with
#    the same global batch (contract 2), at ZeRO 0 and 3; gloo picks by itself the address that
#    routes to rank 0 (the nodes' host names resolve nowhere: Gloo 0.5 crashed on them);
#  - elastic: with global_batch_size, a run preempted on 3 nodes resumes on 2 (accumulation
#    derived again), is preempted again and resumes on 3, on the uninterrupted curve;
#  - a checkpoint written by 2 nodes in the per-rank layout resumes on 1 node and on 3;
#  - a node whose ranks stop answering ends the job within comm_timeout, naming the collective
#    and the ranks and node that stopped answering, with no process left on any node;
#  - GLOO_SOCKET_IFNAME naming no interface ends the job with a message naming the interfaces.
# Skips (77) where network namespaces cannot be made (not root).
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"
sim=$AUTOTRAIN_SOURCE_DIR/scripts/sim-cluster.sh
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py"
config=$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml
export AUTOTRAIN_SIM_NAME=atmn$$ AUTOTRAIN_SIM_NET=10.203.$((RANDOM % 200)) AUTOTRAIN_PROGRESS=lines
AUTOTRAIN_SIM_NAME=${AUTOTRAIN_SIM_NAME:0:8}
if [ "$(id -u)" != 0 ] || ! ip netns add "${AUTOTRAIN_SIM_NAME}probe" 2> /dev/null; then
  echo "multinode: skipped: network namespaces need root (CAP_SYS_ADMIN)"
  exit 77
fi
ip netns delete "${AUTOTRAIN_SIM_NAME}probe"
work=$(mktemp -d)
cleanup() {
  "$sim" down > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
"$sim" up 2
read -ra cluster <<< "$("$sim" mpirun-args)"
two_nodes=("${mpirun[@]}" "${cluster[@]}" --host "node1:2,node2:2" -np 4)

# The topology across the nodes.
timeout 60 "${two_nodes[@]}" "$AUTOTRAIN_BIN" env --json > env.json 2> env.err ||
  { cat env.err; exit 1; }
python3 - "$AUTOTRAIN_SIM_NET" env.json << 'PY'
import json, sys
net, env = sys.argv[1], json.load(open(sys.argv[2]))
ranks = sorted(env["ranks"], key=lambda r: r["rank"])
assert env["world_size"] == 4 and env["num_nodes"] == 2, env
assert env["master_addr"] == f"{net}.11", env["master_addr"]
got = [(r["host"], r["node_rank"], r["local_rank"], r["local_world_size"]) for r in ranks]
# --host node1:2,node2:2 with Open MPI's default by-slot mapping: ranks 0, 1 on node1.
assert got == [("node1", 0, 0, 2), ("node1", 0, 1, 2), ("node2", 1, 0, 2), ("node2", 1, 1, 2)], got
print("multinode: env: 4 ranks on node1, node2; MASTER_ADDR", env["master_addr"])
PY

# One rank with accumulation 4 is the reference for 4 ranks with accumulation 1.
train=(train --config "$config" --eval-strategy no --threads 1 --device cpu)
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" "${train[@]}" --project-name reference \
  --max-steps 6 --gradient-accumulation 4 > reference.log 2>&1 || { cat reference.log; exit 1; }
for run in mpi:0 gloo:0 gloo:3 mpi:3; do
  backend=${run%:*} stage=${run#*:}
  timeout 300 "${two_nodes[@]}" "$AUTOTRAIN_BIN" "${train[@]}" --project-name "$backend-$stage" \
    --max-steps 6 --gradient-accumulation 1 --comm-backend "$backend" --zero-stage "$stage" \
    > "$backend-$stage.log" 2>&1 || { cat "$backend-$stage.log"; exit 1; }
  $check same reference/metrics.jsonl "$backend-$stage/metrics.jsonl" 1e-5
  echo "multinode: $backend, ZeRO $stage across 2 nodes: the one-rank losses"
done

# Elastic: global_batch_size 24 (batch_size 4) on 3 nodes (accumulation 2), preempted (SIGUSR1
# to mpirun, which forwards it to every rank on every node); resumed on 2 nodes (accumulation 3,
# derived again), preempted; resumed on 3. The curve is the uninterrupted one-rank run's.
"$sim" up 3 > /dev/null
read -ra cluster <<< "$("$sim" mpirun-args)"
elastic=("${train[@]}" --max-steps 12 --global-batch-size 24 --batch-size 4)
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" "${elastic[@]}" --project-name elastic-reference \
  > elastic-reference.log 2>&1 || { cat elastic-reference.log; exit 1; }
# run_until_preempted LOG NODES: trains on NODES (node1,node2,...), one rank each, preempted
# before its third step (preempt_at_third_step, lib.bash); the run must stop with status 3
# (checkpoint saved).
run_until_preempted() {
  local log=$1 nodes=$2 pid status=0
  "${mpirun[@]}" "${cluster[@]}" --host "$nodes" -np "$(tr ',' '\n' <<< "$nodes" | wc -l)" \
    -x AUTOTRAIN_INJECT_STOP=0:step "$AUTOTRAIN_BIN" "${elastic[@]}" --project-name elastic \
    > "$log" 2>&1 &
  pid=$!
  preempt_at_third_step "$pid" "$PWD" || true
  wait "$pid" || status=$?
  if [ "$status" -ne 3 ] || ! grep -q "stopped by SIGUSR1 after step" "$log"; then
    cat "$log"
    echo "multinode: $log ended with $status, not 3 (preempted)"
    exit 1
  fi
}
run_until_preempted elastic-1.log "node1,node2,node3"
run_until_preempted elastic-2.log "node1,node2"
grep -Eq "resume: .* \(written by 3 rank\(s\)" elastic-2.log || { cat elastic-2.log; exit 1; }
timeout 300 "${mpirun[@]}" "${cluster[@]}" --host "node1,node2,node3" -np 3 "$AUTOTRAIN_BIN" \
  "${elastic[@]}" --project-name elastic > elastic-3.log 2>&1 || { cat elastic-3.log; exit 1; }
grep -Eq "resume: .* \(written by 2 rank\(s\)" elastic-3.log || { cat elastic-3.log; exit 1; }
$check same elastic-reference/metrics.jsonl elastic/metrics.jsonl 1e-5
echo "multinode: global_batch_size 24 on 3 nodes -> 2 -> 3, preempted twice: the one-rank curve"

# A checkpoint written by 2 nodes in the per-rank layout (a file per writing rank, on the file
# system the nodes share) resumes on 1 node and on 3, on the uninterrupted curve (a constant
# learning rate: the first run is shorter).
layout=("${train[@]}" --global-batch-size 12 --batch-size 2 --checkpoint-layout per-rank
  --scheduler constant --warmup-ratio 0)
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" "${layout[@]}" --max-steps 8 \
  --project-name layout-reference > layout-reference.log 2>&1 || { cat layout-reference.log; exit 1; }
timeout 300 "${mpirun[@]}" "${cluster[@]}" --host node1,node2 -np 2 "$AUTOTRAIN_BIN" \
  "${layout[@]}" --max-steps 4 --project-name layout-1 > layout-2nodes.log 2>&1 ||
  { cat layout-2nodes.log; exit 1; }
ls layout-1/checkpoints/checkpoint-4.ranks/* > /dev/null || { echo "multinode: no per-rank files"; exit 1; }
cp -a layout-1 layout-3
for nodes in node1 node1,node2,node3; do
  count=$(tr ',' '\n' <<< "$nodes" | wc -l)
  timeout 300 "${mpirun[@]}" "${cluster[@]}" --host "$nodes" -np "$count" "$AUTOTRAIN_BIN" \
    "${layout[@]}" --max-steps 8 --resume-from-checkpoint auto --project-name "layout-$count" \
    > "layout-$count.log" 2>&1 || { cat "layout-$count.log"; exit 1; }
  grep -Eq "resume: .* at step 4 \(written by 2 rank\(s\)" "layout-$count.log" ||
    { cat "layout-$count.log"; exit 1; }
  $check same layout-reference/metrics.jsonl "layout-$count/metrics.jsonl" 1e-5
done
echo "multinode: a per-rank checkpoint of 2 nodes resumes on 1 node and on 3: the one-rank curve"

# A node lost mid-run: its ranks stop answering (SIGSTOP, as a hung node does). The others
# end the job within comm_timeout, naming the collective and the lost ranks and node (the peer
# probe), and no process stays on any node.
"${two_nodes[@]}" "$AUTOTRAIN_BIN" "${train[@]}" --project-name lost --max-steps 100000 \
  --comm-timeout 5 > lost.log 2>&1 &
pid=$!
for _ in $(seq 3000); do
  grep -q "^step [2-9]/" lost.log 2> /dev/null && break
  sleep 0.05
done
node2=$(stat -L -c %i "/run/$AUTOTRAIN_SIM_NAME/uts/${AUTOTRAIN_SIM_NAME}2")
lost=()
for rank_pid in $(pgrep -f "$AUTOTRAIN_BIN train .*--project-name lost"); do
  [ "$(stat -L -c %i "/proc/$rank_pid/ns/uts" 2> /dev/null)" = "$node2" ] && lost+=("$rank_pid")
done
[ "${#lost[@]}" -eq 2 ] || { cat lost.log; echo "multinode: found ${#lost[@]} ranks on node2, not 2"; exit 1; }
kill -STOP "${lost[@]}"
start=$SECONDS
status=0
timeout 60 tail --pid="$pid" -f /dev/null || true
wait "$pid" || status=$?
elapsed=$((SECONDS - start))
[ "$status" -ne 0 ] || { cat lost.log; echo "multinode: the job with a lost node succeeded"; exit 1; }
grep -Eq "collective timeout: (mpi|gloo) .* did not complete within comm_timeout = 5" lost.log ||
  { cat lost.log; echo "multinode: no collective timeout named"; exit 1; }
grep -Eq "ranks 2, 3 \(on node2\) did not answer a probe within" lost.log ||
  { cat lost.log; echo "multinode: the lost node's ranks are not named"; exit 1; }
[ "$elapsed" -le 30 ] || { echo "multinode: the job took ${elapsed}s to end, comm_timeout is 5 s"; exit 1; }
sleep 1
if pgrep -f "$AUTOTRAIN_BIN train .*--project-name lost" > /dev/null; then
  pgrep -af "$AUTOTRAIN_BIN train .*--project-name lost"
  echo "multinode: ranks left behind"
  exit 1
fi
echo "multinode: a lost node ends the job in ${elapsed}s (comm_timeout 5 s), nothing left behind"

# A Gloo interface that does not exist: a clear error naming it and this node's interfaces.
status=0
GLOO_SOCKET_IFNAME=eth9 timeout 60 "${two_nodes[@]}" -x GLOO_SOCKET_IFNAME "$AUTOTRAIN_BIN" \
  "${train[@]}" --project-name bad-ifname --comm-backend gloo > bad-ifname.log 2>&1 || status=$?
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
  cat bad-ifname.log
  echo "bad GLOO_SOCKET_IFNAME: status $status"
  exit 1
fi
grep -Eq "GLOO_SOCKET_IFNAME=eth9 names no interface with an IPv4 address on host node[12] \(interfaces: lo 127.0.0.1, eth0 $AUTOTRAIN_SIM_NET\.1[12]\)" bad-ifname.log ||
  { cat bad-ifname.log; exit 1; }
echo "multinode: ok"
