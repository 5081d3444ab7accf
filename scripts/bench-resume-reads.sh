#!/usr/bin/env bash
# Bytes each rank reads when it resumes (docs/benchmarks.md, "Checkpoints"): a 16.2M-parameter
# GPT-2 (configs/bench-cpu.yaml's shape, AdamW: 195 MB of tensors) saves checkpoint-2 on one
# rank; it is resumed for one step at np 1, 2, 4 and ZeRO stage 0 and 3. Each rank's `rchar`
# (/proc/<pid>/io: bytes through read/pread, page cache included) is sampled until it exits;
# the same run started fresh (resume_from_checkpoint: none) gives the baseline to subtract.
#   scripts/bench-resume-reads.sh [AUTOTRAIN_BIN] [MPIRUN]
set -euo pipefail
bin=$(realpath "${1:-build/ci/autotrain}")
read -ra mpirun <<< "${2:-mpirun --oversubscribe --allow-run-as-root}"
config=$(realpath "$(dirname "$0")/../configs/bench-cpu.yaml")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > rchar.sh <<'SH'
#!/usr/bin/env bash
# Runs "$@" and prints this rank's last sampled rchar.
"$@" & pid=$!
last=0
while kill -0 "$pid" 2>/dev/null; do
  value=$(awk '/^rchar/ {print $2}' "/proc/$pid/io" 2>/dev/null || true)
  [ -n "$value" ] && last=$value
  sleep 0.02
done
wait "$pid"
echo "rchar ${OMPI_COMM_WORLD_RANK:-0} $last" >> "$RCHAR_LOG"
SH
chmod +x rchar.sh
common=(train --config "$config" --batch-size 1 --block-size 64 --eval-strategy no --threads 1)
# G = 1 x (4 / np) x np = 4 throughout.
"${mpirun[@]}" -np 1 "$bin" "${common[@]}" --project-name saved --gradient-accumulation 4 \
  --max-steps 2 --checkpoint-every 2 > saved.log 2>&1 || { cat saved.log; exit 1; }
echo "| np | stage | resume: max rchar per rank (MB) | fresh: max rchar per rank (MB) | checkpoint bytes per rank (MB) |"
echo "|---:|---:|---:|---:|---:|"
for np in 1 2 4; do
  for stage in 0 3; do
    max=()
    for from in saved/checkpoints/checkpoint-2.h5 none; do
      export RCHAR_LOG=$work/rchar-$np-$stage-${from//\//_}
      : > "$RCHAR_LOG"
      rm -rf "run-$np-$stage"
      "${mpirun[@]}" -np "$np" -x RCHAR_LOG ./rchar.sh "$bin" "${common[@]}" \
        --project-name "run-$np-$stage" --zero-stage "$stage" \
        --gradient-accumulation $((4 / np)) --max-steps 3 --checkpoint-every 100 \
        --resume-from-checkpoint "$from" > "run-$np-$stage.log" 2>&1 || { cat "run-$np-$stage.log"; exit 1; }
      max+=("$(awk '$3 > m {m = $3} END {print m}' "$RCHAR_LOG")")
    done
    awk -v np="$np" -v st="$stage" -v r="${max[0]}" -v f="${max[1]}" \
      'BEGIN {printf "| %d | %d | %.1f | %.1f | %.1f |\n", np, st, r / 1e6, f / 1e6, (r - f) / 1e6}'
  done
done
