#!/usr/bin/env bash
# No hang: a rank stopped (SIGSTOP) during set-up, data preparation, a checkpoint save or a
# training step (named by the peer probe), ranks given different commands or builds, an MPI
# without MPI_THREAD_MULTIPLE, and a file system that fills up during a save each end the whole job
# within seconds, non-zero, with a message naming what happened; the last checkpoint stays. A
# second run on a project in use is refused.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
work=$(mktemp -d)
cleanup() {
  mountpoint -q "$work/small" 2>/dev/null && umount "$work/small"
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
config=$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml
train=(train --config "$config" --comm-timeout 3)

# expect_end NAME PATTERN... -- COMMAND...: COMMAND must fail within 60 s (not by `timeout`) and
# its output must hold every PATTERN (extended regular expressions).
expect_end() {
  local name=$1 patterns=() status=0
  shift
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  local start=$SECONDS
  timeout 60 "$@" > "$name.log" 2>&1 || status=$?
  local elapsed=$((SECONDS - start))
  [ "$status" -ne 0 ] || { cat "$name.log"; echo "no_hang: $name: the job succeeded"; exit 1; }
  [ "$status" -ne 124 ] || { cat "$name.log"; echo "no_hang: $name: the job hung"; exit 1; }
  for pattern in "${patterns[@]}"; do
    grep -Eq -e "$pattern" "$name.log" || { cat "$name.log"; echo "no_hang: $name: no '$pattern'"; exit 1; }
  done
  echo "no_hang: $name: exit $status after ${elapsed}s"
}

# The stopped jobs run side by side: a stopped rank costs no CPU, and the other waits.
stopped=("${mpirun[@]}" -np 2 -x AUTOTRAIN_INJECT_STOP)
cases=()
AUTOTRAIN_INJECT_STOP=1:setup expect_end stop-setup \
  "collective timeout: agreement on reading the configuration on rank 0" "rank 1 did not arrive" \
  -- "${stopped[@]}" "$AUTOTRAIN_BIN" "${train[@]}" --project-name setup & cases+=($!)
AUTOTRAIN_INJECT_STOP=1:prepare expect_end stop-prepare-1 \
  "agreement on the prepared data on rank 0" "rank 1 did not arrive" \
  -- "${stopped[@]}" "$AUTOTRAIN_BIN" "${train[@]}" --project-name prepare1 & cases+=($!)
AUTOTRAIN_INJECT_STOP=0:prepare expect_end stop-prepare-0 \
  "data preparation \(rank 0 tokenizes data_path\) on rank 1" "rank 0 did not arrive" \
  -- "${stopped[@]}" "$AUTOTRAIN_BIN" "${train[@]}" --project-name prepare0 & cases+=($!)
AUTOTRAIN_INJECT_STOP=1:save expect_end stop-save \
  "agreement on a checkpoint write on rank 0" "rank 1 did not arrive" \
  -- "${stopped[@]}" "$AUTOTRAIN_BIN" "${train[@]}" --project-name save --checkpoint-every 5 & cases+=($!)
# Inside a training step's allreduce nobody knows who is missing: the probe asks every rank.
AUTOTRAIN_INJECT_STOP=1:step expect_end stop-step \
  "collective timeout: mpi .* #[0-9]+ .* on rank 0 did not complete within comm_timeout = 3 s" \
  "rank 1 \(on [^)]+\) did not answer a probe within 1 s: stopped, crashed or cut off" \
  -- "${stopped[@]}" "$AUTOTRAIN_BIN" "${train[@]}" --project-name step & cases+=($!)
for case in "${cases[@]}"; do wait "$case" || exit 1; done

# Different command lines and different builds are refused at once, by name.
expect_end dry-run "--dry-run was given to some ranks and not to others" \
  -- "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" "${train[@]}" --dry-run : -np 1 "$AUTOTRAIN_BIN" "${train[@]}"
cp "$AUTOTRAIN_BIN" other-build
objcopy --remove-section=.note.gnu.build-id other-build
expect_end mixed-build "this rank runs autotrain build [^ ]+ \(.*other-build\) but rank 0 runs build" \
  -- "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" "${train[@]}" : -np 1 ./other-build "${train[@]}"

AUTOTRAIN_MPI_THREAD_LEVEL=serialized expect_end thread-level \
  "MPI granted MPI_THREAD_SERIALIZED but autotrain needs MPI_THREAD_MULTIPLE" \
  -- "${mpirun[@]}" -np 2 -x AUTOTRAIN_MPI_THREAD_LEVEL "$AUTOTRAIN_BIN" "${train[@]}"

# A second run on a project in use is refused, naming the holder; the first run is unharmed.
"${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${train[@]}" --project-name busy --max-steps 3000 > busy.log 2>&1 &
first=$!
for _ in $(seq 3000); do grep -q "^step [1-9]" busy.log 2>/dev/null && break; sleep 0.05; done
expect_end second-run "project busy is in use by another run \(host [^ ]+ pid [0-9]+; busy/.lock\)" \
  -- "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${train[@]}" --project-name busy
kill -USR1 "$first"
status=0
wait "$first" || status=$?
[ "$status" -eq 3 ] || { cat busy.log; echo "no_hang: the first run ended with $status, not 3"; exit 1; }

# A file system that fills up during a save (an 8 MiB tmpfs holds the data and a few checkpoints).
mkdir small
if ! mount -t tmpfs -o size=8m tmpfs small 2> /dev/null; then
  echo "no_hang: disk full: skipped (cannot mount a tmpfs here)"
  echo "no_hang: ok"
  exit 0
fi
for layout in shared per-rank; do
  (cd small && rm -rf full && expect_end "disk-full-$layout" \
    "error: (\[rank [01]\] )?no space left on device: full/checkpoints/checkpoint-[0-9]+\.(h5\.tmp|ranks\.tmp/rank-0000[01]\.h5) needs up to" \
    -- "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${train[@]}" --project-name full --n-embd 64 \
    --checkpoint-every 1 --save-total-limit 50 --checkpoint-layout "$layout")
  mv "small/disk-full-$layout.log" .
  grep -q "saved full/checkpoints/checkpoint-" "disk-full-$layout.log" || {
    cat "disk-full-$layout.log"; echo "no_hang: disk full: not one checkpoint saved first"; exit 1; }
  latest=small/full/checkpoints/$(cat small/full/checkpoints/latest)
  "$AUTOTRAIN_BIN" ckpt verify "$latest" > verify.log 2>&1 || { cat verify.log; exit 1; }
  if compgen -G "small/full/checkpoints/*.tmp" > /dev/null; then
    ls -la small/full/checkpoints; echo "no_hang: disk full: an unfinished save was left"; exit 1
  fi
  echo "no_hang: disk full ($layout): $latest verifies, nothing unfinished left"
done
echo "no_hang: ok"
