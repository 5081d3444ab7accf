#!/usr/bin/env bash
# No hang during set-up: for each phase of `autotrain train` between MPI_Init and the first step
# (AUTOTRAIN_INJECT_STOP's phases, include/autotrain/core/deadline.hpp) and each of two ranks,
# that rank stops itself (SIGSTOP) there; the other must end the job non-zero within
# comm_timeout and a margin, naming the collective it waited in. The run fine-tunes the model a
# first run exported (so the base weights are read) and, for "load", resumes that run's
# checkpoint.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
config=$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml
timeout_s=3
margin_s=25  # start-up of two ranks and the abort on a loaded machine
train=(train --config "$config" --comm-timeout "$timeout_s" --eval-strategy no)

timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${train[@]}" --project-name base --max-steps 2 \
  > base.log 2>&1 || { cat base.log; echo "setup_no_hang: the first run failed"; exit 1; }

# case NAME PHASE RANK FLAGS...: the job stopped at PHASE on RANK must end in time, naming it.
case_end() {
  local name=$1 phase=$2 rank=$3 status=0
  shift 3
  local start=$SECONDS
  AUTOTRAIN_INJECT_STOP=$rank:$phase timeout 90 "${mpirun[@]}" -np 2 -x AUTOTRAIN_INJECT_STOP \
    "$AUTOTRAIN_BIN" "${train[@]}" --project-name "$name" "$@" > "$name.log" 2>&1 || status=$?
  local elapsed=$((SECONDS - start))
  local fail=""
  grep -q "stopping this rank at $phase" "$name.log" || fail="rank $rank never reached $phase"
  [ "$status" -ne 0 ] || fail="the job succeeded"
  [ "$status" -ne 124 ] || fail="the job hung"
  [ "$elapsed" -le $((timeout_s + margin_s)) ] || fail="the job took ${elapsed}s"
  grep -Eq "collective timeout: .* did not complete within comm_timeout = $timeout_s s" "$name.log" ||
    fail="${fail:-no collective timeout named}"
  if [ -n "$fail" ]; then
    cat "$name.log"
    echo "setup_no_hang: $name: $fail"
    return 1
  fi
  echo "setup_no_hang: $name: exit $status after ${elapsed}s: $(grep -Eo "collective timeout: [^;(]*" "$name.log" | head -n 1)"
}

# The cases of four phases (both ranks each) run side by side: a stopped job costs no CPU, and
# eight jobs starting at once stay well inside the margin on two cores.
fresh=(--model base --max-steps 4 --from-scratch false)
phases=(models setup topology agreed lock prepare prepared model resume begin)
for ((first = 0; first < ${#phases[@]}; first += 4)); do
  cases=()
  for phase in "${phases[@]:first:4}"; do
    case_end "$phase-0" "$phase" 0 "${fresh[@]}" & cases+=($!)
    case_end "$phase-1" "$phase" 1 "${fresh[@]}" & cases+=($!)
  done
  for case in "${cases[@]}"; do wait "$case" || exit 1; done
done
for rank in 0 1; do
  cp -r base "load-$rank"
  rm -f "load-$rank/.lock"
done
case_end load-0 load 0 --max-steps 4 & first=$!
case_end load-1 load 1 --max-steps 4 & second=$!
wait "$first" && wait "$second" || exit 1
echo "setup_no_hang: ok"
