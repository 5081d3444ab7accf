#!/usr/bin/env bash
# `autotrain env` under mpirun: the JSON mapping at 2 and 4 ranks, the table, and flag errors.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/env_check.py"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"  # "mpiexec --oversubscribe ...": a command and its flags
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for np in 2 4; do
  timeout 120 "${mpirun[@]}" -np "$np" "$AUTOTRAIN_BIN" env --json > "$work/env$np.json"
  $check "$np" "Open MPI" < "$work/env$np.json"
done

timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" env --json --master-port 31555 > "$work/port.json"
$check 2 "Open MPI" 31555 < "$work/port.json"

# The table: one header, one row per rank, the build section.
timeout 120 "${mpirun[@]}" -np 3 "$AUTOTRAIN_BIN" env > "$work/table.txt"
grep -q "3 rank(s) on 1 node(s), started by mpirun (Open MPI)" "$work/table.txt"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +0  ' "$work/table.txt")" -eq 3 ] || { cat "$work/table.txt"; exit 1; }
grep -qE '^  HDF5 +[0-9.]+ \(parallel\)' "$work/table.txt"
grep -qE '^  comm auto +(mpi|nccl)' "$work/table.txt"

# A misspelt flag fails every rank with a suggestion, and without a hang.
if timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" env --jsn > "$work/bad.out" 2>&1; then
  echo "env --jsn succeeded"; exit 1
fi
grep -q "unknown option '--jsn' (did you mean '--json'?)" "$work/bad.out" || { cat "$work/bad.out"; exit 1; }
echo "env_mpirun: ok"
