#!/usr/bin/env bash
# `autotrain doctor`, the preflight of a job:
#  - on one node (mpirun -np 2) every check passes and the job exits 0;
#  - a configuration that does not load fails the config row (exit 1) and the other rows still
#    print;
#  - on the simulated cluster (3 nodes, as root; skipped otherwise) every check passes, then with
#    faults injected each is named: a master port node2 cannot reach (FAIL), a project folder
#    node2 sees privately (FAIL), a link of node3 shaped to 50 Mbit/s (warn).
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
sim=$AUTOTRAIN_SOURCE_DIR/scripts/sim-cluster.sh
config=$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml
work=$(mktemp -d)
export AUTOTRAIN_SIM_NAME=atdr$$ AUTOTRAIN_SIM_NET=10.204.$((RANDOM % 200))
AUTOTRAIN_SIM_NAME=${AUTOTRAIN_SIM_NAME:0:8}
cleanup() {
  "$sim" down > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
[ -z "${DOCTOR_KEEP:-}" ] || trap - EXIT
cd "$work"
doctor=(doctor --config "$config" --device cpu)

# expect_row LOG CHECK RESULT [PATTERN]: the table in LOG has CHECK with RESULT (and PATTERN).
expect_row() {
  local log=$1 check=$2 result=$3 pattern=${4:-}
  grep -E "^$check +[^ ].* $result +" "$log" | grep -Eq -e "$pattern" ||
    { cat "$log"; echo "doctor: no '$check' row with $result${pattern:+ and '$pattern'}"; exit 1; }
}

timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${doctor[@]}" --project-name one > one.log 2>&1 ||
  { cat one.log; echo "doctor: failed on one node"; exit 1; }
for check in build launcher config cpus gpus network "master port" allreduce "project folder" "base model" clocks; do
  expect_row one.log "$check" ok
done
# munge: ok where munged answers or no socket is there; a warning on a machine left with a
# stale socket (the row says so; it is this machine's state, not the test's).
expect_row one.log munge "(ok|warn)" "munge"
grep -q "doctor: every check passed" one.log || { cat one.log; exit 1; }
[ ! -e one/.doctor-* ] 2> /dev/null || { ls -la one; echo "doctor left probe files"; exit 1; }
echo "doctor: one node: every check passed"

status=0
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${doctor[@]}" --zero-stage 9 > bad.log 2>&1 || status=$?
[ "$status" -eq 1 ] || { cat bad.log; echo "doctor: bad config exited $status, expected 1"; exit 1; }
expect_row bad.log config FAIL "zero.stage.*9"
expect_row bad.log "project folder" skipped
expect_row bad.log "base model" skipped
expect_row bad.log allreduce ok
echo "doctor: a bad configuration fails its row, the rest still run"

if [ "$(id -u)" != 0 ] || ! ip netns add "${AUTOTRAIN_SIM_NAME}probe" 2> /dev/null; then
  echo "doctor: the simulated-cluster part is skipped: network namespaces need root"
  exit 0
fi
ip netns delete "${AUTOTRAIN_SIM_NAME}probe"
"$sim" up 3
read -ra cluster <<< "$("$sim" mpirun-args)"
three=("${mpirun[@]}" "${cluster[@]}" --host node1,node2,node3 -np 3)
# The project lives in shared/ (the job's working folder), which node2 will see privately.
mkdir -p shared
cd shared
timeout 120 "${three[@]}" "$AUTOTRAIN_BIN" "${doctor[@]}" --project-name p \
  > ../healthy.log 2>&1 || { cat ../healthy.log; echo "doctor: failed on a healthy cluster"; exit 1; }
cd "$work"
expect_row healthy.log launcher ok "node1 \(rank 0\), node2 \(rank 1\), node3 \(rank 2\)"
expect_row healthy.log links ok "node1 <-> node3"
expect_row healthy.log "project folder" ok "shared by every node"
expect_row healthy.log clocks ok "node2"
echo "doctor: 3 nodes: every check passed"

"$sim" block-port 2 29500
"$sim" private-dir 2 "$work/shared"
"$sim" shape 3 50mbit
status=0
cd shared
timeout 180 "${three[@]}" "$AUTOTRAIN_BIN" "${doctor[@]}" --project-name p > ../faults.log 2>&1 ||
  status=$?
cd "$work"
[ "$status" -eq 1 ] || { cat faults.log; echo "doctor: faults exited $status, expected 1"; exit 1; }
expect_row faults.log "master port" FAIL "from node2:"
expect_row faults.log "project folder" FAIL "node2 does not see the files node1 wrote"
expect_row faults.log links warn "node1 <-> node3 .* under a fifth of the other links"
grep -q "doctor: 2 check(s) failed" faults.log || { cat faults.log; exit 1; }
echo "doctor: ok"
