#!/usr/bin/env bash
# A checkpoint write that fails mid-file (EFBIG: the rank's `ulimit -f`) ends the job at once with
# the system's reason, on the failing rank: no wait for comm_timeout, no blame on a healthy rank,
# no segmentation fault at MPI_Finalize; the unfinished .tmp is removed and the checkpoint saved
# before stays committed and verifies.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "write_failure: $*"; exit 1; }
train=(train --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" --comm-timeout 60 --eval-strategy no)
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${train[@]}" --project-name base --max-steps 2 \
  > base.log 2>&1 || { cat base.log; fail "the first run failed"; }

# Ranks listed in LIMITED_RANKS may write files of at most 64 KiB (the checkpoint is ~450 KiB);
# SIGXFSZ is ignored, so the write fails with EFBIG as on a quota'd or size-limited file system.
cat > limited.sh <<'WRAPPER'
#!/usr/bin/env bash
if [[ " $LIMITED_RANKS " == *" ${OMPI_COMM_WORLD_RANK:-0} "* ]]; then trap '' XFSZ; ulimit -f 64; fi
exec "$@"
WRAPPER
chmod +x limited.sh

# expect_write_failure NAME NP RANKS FLAGS...: the save of step 4 fails on RANKS.
expect_write_failure() {
  local name=$1 np=$2 ranks=$3 status=0
  shift 3
  cp -r base "$name"
  local start=$SECONDS
  LIMITED_RANKS=$ranks timeout 60 "${mpirun[@]}" -np "$np" -x LIMITED_RANKS ./limited.sh \
    "$AUTOTRAIN_BIN" "${train[@]}" --project-name "$name" --max-steps 4 "$@" > "$name.log" 2>&1 || status=$?
  local elapsed=$((SECONDS - start))
  [ "$status" -eq 1 ] || { cat "$name.log"; fail "$name: exit $status, not 1"; }
  [ "$elapsed" -lt 45 ] || { cat "$name.log"; fail "$name: it took ${elapsed}s"; }
  grep -Eq "error: checkpoint write failed: $name/checkpoints/checkpoint-4\.h5\.tmp: .*: File too large" "$name.log" ||
    { cat "$name.log"; fail "$name: the failure and its reason were not printed"; }
  ! grep -Eq "Segmentation fault|collective timeout" "$name.log" || { cat "$name.log"; fail "$name: crashed or timed out"; }
  ! compgen -G "$name/checkpoints/*.tmp" > /dev/null || { ls -la "$name/checkpoints"; fail "$name: a .tmp was left"; }
  [ "$(cat "$name/checkpoints/latest")" = checkpoint-2.h5 ] || fail "$name: latest moved"
  "$AUTOTRAIN_BIN" ckpt verify "$name/checkpoints/checkpoint-2.h5" > "$name.verify" 2>&1 ||
    { cat "$name.verify"; fail "$name: the previous checkpoint does not verify"; }
  echo "write_failure: $name: exit 1 after ${elapsed}s, checkpoint-2.h5 intact"
}

expect_write_failure one-rank 2 1
expect_write_failure every-rank-np2 2 "0 1"
expect_write_failure every-rank-np1 1 0 --gradient-accumulation 4
echo "write_failure: ok"
