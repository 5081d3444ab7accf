#!/usr/bin/env bash
# Checkpoints under stress, driving the real binary under mpirun (docs/training.md):
#  - async_checkpoint: true gives bitwise the same losses and model, and checkpoints that verify;
#  - SIGUSR1 mid-training: exit status 3, a checkpoint at the step reached, and resuming (auto)
#    ends with the same final loss as an uninterrupted run;
#  - a truncated newest checkpoint and a corrupted older one are refused, auto falls back to
#    the valid one before them, and the run continues with identical losses; with every
#    checkpoint corrupted, auto says none is left and trains from step 0;
#  - a checkpoint of another model shape, or of another global batch, is refused by name;
#  - kill -9 of every rank while a save is in flight: latest still names a committed
#    checkpoint and auto resumes from it;
#  - autotrain export writes the same model.safetensors from a checkpoint under np=2 as
#    training's own export did.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/ckpt_check.py"
config="$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
base=(--config "$config" --eval-strategy no --save-total-limit 10)
common=("${base[@]}" --gradient-accumulation 1)
fail() { echo "FAIL: $*"; for f in *.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }

# --- Uninterrupted reference: 150 steps, checkpoints every 50. ---
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" --project-name ref --max-steps 150 \
  --checkpoint-every 50 > ref.log 2>&1 || fail "reference run"

# --- async_checkpoint: the same losses and model, and checkpoints that verify. ---
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" --project-name async --max-steps 150 \
  --checkpoint-every 50 --async-checkpoint true > async.log 2>&1 || fail "async checkpoint run"
grep -q "the write continues in the background" async.log || fail "no asynchronous save"
$check tail ref/metrics.jsonl async/metrics.jsonl 1 0
cmp ref/model.safetensors async/model.safetensors || fail "async run exported another model"
for step in 50 100 150; do
  "$AUTOTRAIN_BIN" ckpt verify "async/checkpoints/checkpoint-$step.h5" > verify.log 2>&1 ||
    fail "ckpt verify of async checkpoint-$step.h5"
done

# --- SIGUSR1 mid-training -> exit 3, checkpoint at that step, resume completes identically. ---
# A model whose 60 steps take seconds, so the signal surely lands mid-run even when the poll
# below is slow on a loaded machine (the tiny model runs 150 steps in a fraction of a second).
wide=(--n-layer 4 --n-embd 256 --n-head 4 --max-steps 60 --checkpoint-every 20)
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" "${wide[@]}" --project-name wide \
  > wide.log 2>&1 || fail "wide reference run"
"${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" "${wide[@]}" --project-name sig > sig.log 2>&1 &
job=$!
usr1_when_training sig.log "$job"
status=0
wait "$job" || status=$?
[ "$status" -eq 3 ] || fail "SIGUSR1: exit status $status, expected 3"
grep -q "stopped by SIGUSR1 after step" sig.log || fail "no preemption message"
stopped=$(sed -n 's/.*stopped by SIGUSR1 after step \([0-9]*\).*/\1/p' sig.log | head -1)
[ "$stopped" -lt 60 ] || fail "the run finished before the signal"
[ -s "sig/checkpoints/checkpoint-$stopped.h5" ] || fail "no checkpoint-$stopped.h5 after SIGUSR1"
[ "$(cat sig/checkpoints/latest)" = "checkpoint-$stopped.h5" ] || fail "latest is not checkpoint-$stopped.h5"
[ ! -e sig/model.safetensors ] || fail "a preempted run exported"
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" "${wide[@]}" --project-name sig \
  > sig-resume.log 2>&1 || fail "resume after SIGUSR1"
grep -q "resume: sig/checkpoints/checkpoint-$stopped.h5 at step $stopped" sig-resume.log || fail "resume point"
$check tail wide/metrics.jsonl sig/metrics.jsonl $((stopped + 1)) 0

# --- Truncated newest, corrupted older: auto falls back to checkpoint-50. ---
cp -r ref fallback
python3 - fallback/checkpoints <<'PY'
import os, sys
folder = sys.argv[1]
newest = os.path.join(folder, "checkpoint-150.h5")
os.truncate(newest, os.path.getsize(newest) // 2)
middle = os.path.join(folder, "checkpoint-100.h5")
with open(middle, "r+b") as f:              # flip bytes across the tensor data
    size = os.path.getsize(middle)
    for at in range(size // 4, size - 4096, size // 16):
        f.seek(at); block = f.read(64); f.seek(at); f.write(bytes(b ^ 0xFF for b in block))
PY
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" --project-name fallback --max-steps 150 \
  --checkpoint-every 50 > fallback.log 2>&1 || fail "fallback run"
grep -q "skipping checkpoint .*checkpoint-150.h5" fallback.log || fail "truncated checkpoint not skipped"
grep -q "skipping checkpoint .*checkpoint-100.h5" fallback.log || fail "corrupted checkpoint not skipped"
grep -q "resume: fallback/checkpoints/checkpoint-50.h5 at step 50" fallback.log || fail "did not fall back to 50"
grep -q "saved before it" fallback.log || fail "no fallback named"
$check tail ref/metrics.jsonl fallback/metrics.jsonl 51 0

# --- Every checkpoint corrupted: auto says that none is left and trains from step 0. ---
cp -r ref nothing
rm nothing/metrics.jsonl  # the fresh run's losses alone
python3 - nothing/checkpoints <<'PY'
import glob, os, sys
for path in glob.glob(os.path.join(sys.argv[1], "checkpoint-*.h5")):
    with open(path, "r+b") as f:
        size = os.path.getsize(path)
        for at in range(size // 4, size - 4096, size // 16):
            f.seek(at); block = f.read(64); f.seek(at); f.write(bytes(b ^ 0xFF for b in block))
PY
# Whatever the flips hit, NaN bytes in every checkpoint's second moments: a refused checkpoint's
# load puts them in the optimizer state before its checksums fail, and a run that starts from
# step 0 must not keep them (it diverged at step 2 when it did).
/usr/bin/python3 - nothing/checkpoints <<'PY'
import glob, os, sys, h5py
for path in glob.glob(os.path.join(sys.argv[1], "checkpoint-*.h5")):
    with h5py.File(path, "r") as f:
        offset = f["optimizer/exp_avg_sq/transformer.wte.weight"].id.get_offset()
    with open(path, "r+b") as out:
        out.seek(offset)
        out.write(b"\xff" * 64)
PY
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" --project-name nothing --max-steps 150 \
  --checkpoint-every 50 > nothing.log 2>&1 || fail "run with every checkpoint corrupted"
grep -qE "no checkpoint saved before it (verifies; the run starts from step 0|is left)" nothing.log ||
  fail "no message that no checkpoint is left"
if grep -q "skipping checkpoint .*checkpoint-50.h5.*falling back" nothing.log; then
  fail "promised a fallback past the oldest checkpoint"
fi
$check tail ref/metrics.jsonl nothing/metrics.jsonl 1 0

# --- Incompatible model, changed global batch: refused, naming the checkpoint and fields. ---
status=0
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" --project-name other --n-embd 64 \
  --resume-from-checkpoint ref/checkpoints/checkpoint-50.h5 > other.log 2>&1 || status=$?
[ "$status" -eq 1 ] || fail "a checkpoint of another model shape was not refused (status $status)"
grep -q "cannot resume from ref/checkpoints/checkpoint-50.h5.*n_embd: 32 in the checkpoint, 64 in this run" other.log ||
  fail "incompatible model message"
status=0
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${base[@]}" --project-name batch --gradient-accumulation 2 \
  --resume-from-checkpoint ref/checkpoints/checkpoint-50.h5 > batch.log 2>&1 || status=$?
[ "$status" -eq 1 ] || fail "a changed global batch was not refused (status $status)"
grep -q "global batch of 8 sequences.*set gradient_accumulation to 1 to keep it" batch.log || fail "global batch message"

# --- Export from a checkpoint under np=2 equals training's export. ---
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" export --checkpoint ref/checkpoints/checkpoint-150.h5 \
  --output exported > export.log 2>&1 || fail "export"
cmp ref/model.safetensors exported/model.safetensors || fail "exported model.safetensors differs"
cmp ref/config.json exported/config.json || fail "exported config.json differs"
# A damaged checkpoint is refused by export as by `ckpt verify`, naming the damaged tensor.
cp ref/checkpoints/checkpoint-150.h5 damaged.h5
# (Debian's interpreter, where python3-h5py installs: not a python3 earlier on PATH.)
/usr/bin/python3 -c "
import h5py, sys
with h5py.File('damaged.h5', 'r+') as f:
    f['model/transformer.wte.weight'][0] += 1.0
"
if timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" export --checkpoint damaged.h5 --output damaged \
    > damaged.log 2>&1; then
  fail "a damaged checkpoint was exported"
fi
grep -q "damaged.h5 fails verification: .*model/transformer.wte.weight" damaged.log ||
  { cat damaged.log; fail "export did not name the damaged tensor"; }
[ ! -e damaged/model.safetensors ] || fail "a damaged checkpoint left a model.safetensors"

# --- Signals after the first are absorbed until the ranks exit: still status 3. ---
# USR1 to the ranks themselves (as srun or Slurm's --signal without B: deliver it), then TERM
# and USR1 again every 20 ms until the job has ended: none may kill a rank.
"${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" "${wide[@]}" --project-name storm > storm.log 2>&1 &
job=$!
for _ in $(seq 3000); do grep -q "^step [3-9]/" storm.log 2>/dev/null && break; sleep 0.05; done
ranks=$(pgrep -P "$job" -f "autotrain train" || pgrep -f "train .*--project-name storm" | grep -vx "$job")
# shellcheck disable=SC2086  # one pid per word
kill -USR1 $ranks
while kill -0 "$job" 2> /dev/null; do
  # shellcheck disable=SC2086
  kill -TERM $ranks 2> /dev/null || true
  sleep 0.01
  # shellcheck disable=SC2086
  kill -USR1 $ranks 2> /dev/null || true
  sleep 0.01
done
status=0
wait "$job" || status=$?
[ "$status" -eq 3 ] || { cat storm.log; fail "repeated signals: exit status $status, expected 3"; }
grep -Eq "stopped by SIG(USR1|TERM) after step" storm.log || fail "repeated signals: no preemption message"

# --- kill -9 every rank while a save is in flight; auto resumes from the last committed one. ---
big=(--n-layer 4 --n-embd 256 --n-head 4 --checkpoint-every 1)
"${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" --project-name killed "${big[@]}" --max-steps 1000 > killed.log 2>&1 &
job=$!
killed=no
for _ in $(seq 6000); do
  if compgen -G "killed/checkpoints/checkpoint-*.h5.tmp" > /dev/null && [ -s killed/checkpoints/latest ]; then
    # mpirun's children are the ranks: SIGKILL them by process id, mid-write.
    kill -9 $(pgrep -P "$job") 2>/dev/null || true
    killed=yes
    break
  fi
  sleep 0.005
done
wait "$job" || true
[ "$killed" = yes ] || fail "never saw a save in flight"
latest=$(cat killed/checkpoints/latest)
[ -s "killed/checkpoints/$latest" ] || fail "latest names $latest, which is missing"
# The newest committed checkpoint (the kill may land after a rename and before latest moves).
newest=$(cd killed/checkpoints && ls checkpoint-*.h5 | sort -t- -k2 -n | tail -1)
steps=$(sed "s/checkpoint-\([0-9]*\)\.h5/\1/" <<< "$newest")
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train "${common[@]}" --project-name killed "${big[@]}" \
  --max-steps $((steps + 2)) > killed-resume.log 2>&1 || fail "resume after kill -9"
grep -q "resume: killed/checkpoints/$newest at step $steps" killed-resume.log || fail "did not resume from $newest"
echo "ckpt_safety: ok"
