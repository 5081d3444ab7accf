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
