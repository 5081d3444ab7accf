# Shared by the end-to-end tests (sourced; not a test itself: ctest runs tests/e2e/*.sh).

# Exits 77 (skipped) unless `autotrain env` binds a GPU to this rank and at least MIN_GPUS
# (default 1) are visible. NAME prefixes the message.
require_gpus() {
  local name=$1 min=${2:-1} env_json
  env_json=$("$AUTOTRAIN_BIN" env --json 2>/dev/null || true)
  if ! grep -q '"device": *[0-9]' <<< "$env_json"; then
    echo "$name: skipped: no GPU bound to this rank (autotrain env), or a build without CUDA"
    exit 77
  fi
  local visible
  visible=$(sed -n 's/.*"visible_gpus": *\([0-9]*\).*/\1/p' <<< "$env_json" | head -n 1)
  if [ "${visible:-0}" -lt "$min" ]; then
    echo "$name: skipped: it needs $min GPUs, one per rank, and $visible are visible"
    exit 77
  fi
}

# Sends SIGUSR1 to PID once LOG shows the run past step 3 (waiting at most 150 s), so the signal
# lands mid-training however slow the machine is.
usr1_when_training() {
  local log=$1 pid=$2
  for _ in $(seq 3000); do
    grep -q "^step [3-9]/" "$log" 2>/dev/null && break
    sleep 0.05
  done
  kill -USR1 "$pid"
}

# sbatch_wait SECONDS SBATCH-ARGS...: submits a job and waits for it to end, at most SECONDS;
# succeeds if it completed (exit 0). As `sbatch --wait`, which polls the controller at 2, 4, 8 ...
# second intervals: a job of 2 s took 10 s to be seen ending. This asks every 0.1 s.
sbatch_wait() {
  local seconds=$1 job state="" end
  shift
  job=$(sbatch --parsable "$@") || return 1
  end=$((SECONDS + seconds))
  while [ "$SECONDS" -lt "$end" ]; do
    state=$(scontrol -o show job "$job" 2> /dev/null | grep -o 'JobState=[A-Z_]*' || true)
    case ${state#JobState=} in
      COMPLETED) return 0 ;;
      FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
        echo "sbatch_wait: job $job ended ${state#JobState=}" >&2
        return 1
        ;;
    esac
    sleep 0.1
  done
  echo "sbatch_wait: job $job still ${state#JobState=} after ${seconds}s; cancelled" >&2
  scancel "$job" 2> /dev/null || true
  return 1
}

# Preemption at a step of our choosing, however fast the steps are: a run started with
# AUTOTRAIN_INJECT_STOP=0:step given to its ranks (mpirun -x, or sbatch's environment) has rank 0
# stop itself (SIGSTOP) before its third step, the others waiting for it in the step's collective.
# stopped_rank DIR: the pid of an autotrain process stopped so, working in DIR; nothing if none.
stopped_rank() {
  local p
  for p in $(pgrep -x autotrain); do
    if [ "$(readlink "/proc/$p/cwd" 2> /dev/null)" = "$1" ] &&
      [ "$(cut -d' ' -f3 "/proc/$p/stat" 2> /dev/null)" = T ]; then
      echo "$p"
      return
    fi
  done
}

# continue_when_usr1_pending RANK: SIGCONT to the stopped RANK once a SIGUSR1 is pending there (bit
# 9 of its pending set; waiting at most 10 s), so that it sees the preemption as it goes on.
continue_when_usr1_pending() {
  local pending
  for _ in $(seq 200); do
    pending=$(awk '/^ShdPnd:/ { print $2 }' "/proc/$1/status" 2> /dev/null || echo 0)
    (((16#$pending >> 9) & 1)) && break
    sleep 0.05
  done
  kill -CONT "$1"
}

# preempt_at_third_step PID DIR: once rank 0 of the run stopped (its folder DIR), SIGUSR1 to PID
# (mpirun), then SIGCONT to the rank. Status 1 if PID ends first (or after 150 s).
preempt_at_third_step() {
  local pid=$1 dir=$2 rank=""
  for _ in $(seq 3000); do
    rank=$(stopped_rank "$dir")
    [ -n "$rank" ] && break
    kill -0 "$pid" 2> /dev/null || return 1
    sleep 0.05
  done
  [ -n "$rank" ] || return 1
  kill -USR1 "$pid"
  continue_when_usr1_pending "$rank"
}

# The PyTorch-checked model tests (hf_llama.sh, hf_phi3.sh) start with
#   reference_test NAME VOCAB
# which sets mpirun, probe_bin (tests/hf_probe), python, torch_llama (the reference's command),
# torch_batch (several reference commands, one per line of stdin, in one interpreter:
# tests/e2e/torch_batch.py) and fail (prefixing NAME), moves into a work folder removed at exit,
# and writes tokens.txt (17 random ids below VOCAB).
reference_test() {
  : "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
  read -r -a mpirun <<< "${AUTOTRAIN_MPIRUN:-mpirun --oversubscribe --allow-run-as-root}"
  probe_bin="$(dirname "$AUTOTRAIN_BIN")/tests/hf_probe"
  python=${PYTHON:-/usr/bin/python3}
  torch_llama=("$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_llama.py")
  torch_batch=("$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_batch.py")
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work" || exit 1
  eval "fail() { echo \"$1: \$*\"; exit 1; }"
  "$python" -c "import random; random.seed(3); print(' '.join(str(random.randrange($2)) for _ in range(17)))" > tokens.txt
}

# FOLDER...: our logits, loss, gradients and greedy tokens (hf_probe) against the reference's,
# the reference's checks in one batch.
check_folder() {
  local folder i=0 checks=""
  for folder in "$@"; do
    i=$((i + 1))
    rm -rf "probe-$i" && mkdir "probe-$i"
    "$probe_bin" "$folder" tokens.txt "probe-$i" || fail "hf_probe $folder"
    checks+="torch_llama.py check $(printf '%q' "$folder") probe-$i tokens.txt > check-$i.out"$'\n'
  done
  "${torch_batch[@]}" <<< "$checks" || fail "a folder differs from the PyTorch reference (above)"
  i=0
  for folder in "$@"; do
    i=$((i + 1))
    echo "$folder: $(grep -E '^(logits|gradients)' "check-$i.out" | tr '\n' ' ')"
  done
}

# FROM TO PYTHON-STATEMENT-ON-c: a copy of folder FROM whose config.json the statement edits.
edit() {
  cp -r "$1" "$2"
  "$python" -c "import json; p='$2/config.json'; c = json.load(open(p)); $3; json.dump(c, open(p, 'w'))"
}

# NAME PATTERN FOLDER [FLAGS...]: training FOLDER (with the caller's `common` flags and FLAGS)
# exits 1 within 60 s and says PATTERN (an extended regular expression).
refused() {
  local name=$1 pattern=$2 folder=$3 status=0
  shift 3
  timeout 60 "$AUTOTRAIN_BIN" train --model "$folder" --project-name "bad-$name" "${common[@]}" "$@" \
    > "$name.out" 2>&1 || status=$?
  [ "$status" -eq 1 ] || { cat "$name.out"; fail "$name: exit $status, expected 1"; }
  grep -qE -- "$pattern" "$name.out" || { cat "$name.out"; fail "$name: no '$pattern'"; }
}

# FOLDER: fine-tunes FOLDER at ZeRO-3 on two ranks for 8 steps into tuned/ (the caller's `common`
# flags) and checks that the loss fell.
finetune_learns() {
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model "$1" --project-name tuned \
    --zero-stage 3 --max-steps 8 --lr 3e-3 "${common[@]}" > tuned.log 2>&1 ||
    { tail -20 tuned.log; fail "fine-tuning"; }
  "$python" - tuned/metrics.jsonl <<'PY' || fail "the fine-tune did not learn"
import json, sys
losses = [json.loads(line)["loss"] for line in open(sys.argv[1]) if '"loss"' in line]
assert len(losses) == 8 and sum(losses[-3:]) / 3 < losses[0] - 0.1, losses
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
PY
}

# FOLDER (of the byte vocabulary): `autotrain generate` decodes greedily what the reference does.
generates_as_reference() {
  "$AUTOTRAIN_BIN" generate --model "$1" --prompt "To be" --max-new-tokens 12 --temperature 0 \
    > ours.txt 2> gen.log || { cat gen.log; fail "generate"; }
  "${torch_llama[@]}" generate "$1" "To be" 12 > reference.txt
  cmp ours.txt reference.txt || fail "generate printed '$(cat ours.txt)', the reference '$(cat reference.txt)'"
  echo "generate: '$(cat ours.txt)' as the reference"
}

# PROJECT [FLAGS...]: trains PROJECT on two ranks with the caller's `common` flags (which start
# with the subcommand) and FLAGS into PROJECT.log, failing (the caller's `fail`) if it fails.
train_np2() {
  local project=$1
  shift
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${common[@]}" --project-name "$project" "$@" \
    > "$project.log" 2>&1 || fail "training $project"
}

# WANT [FLAGS...]: the same on two ranks with FLAGS fails within 120 s and says WANT (a fixed
# string).
refused_np2() {
  local want=$1 out
  shift
  out=$(timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${common[@]}" --project-name refused \
    "$@" 2>&1) && fail "accepted: $*"
  grep -qF -- "$want" <<< "$out" || fail "no '$want' in: $out"
}
