#!/usr/bin/env bash
# `autotrain bench train` under mpirun -np 2 on the tiny config: it runs 2 real optimizer steps and
# its JSON carries every figure the docs quote (the values are timings, so only their presence,
# types and basic sanity are checked). A bad --steps fails every rank without a hang.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"  # "mpiexec --oversubscribe ...": a command and its flags
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Stage 0 in the default activation checkpointing (selective), stage 3 with recompute full.
for stage in 0 3; do
  recompute=()
  [ "$stage" = 3 ] && recompute=(--recompute full)
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" bench train \
    --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" --zero-stage "$stage" \
    --steps 2 --warmup-steps 1 --sgemm-size 128 "${recompute[@]}" --json > "bench$stage.json"
  python3 - "bench$stage.json" "$stage" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
stage = int(sys.argv[2])
assert doc["recompute"] == ("full" if stage == 3 else "selective"), doc["recompute"]
numbers = ["tokens_per_s", "step_mean_s", "step_min_s", "forward_s", "backward_s", "optimizer_s",
           "comm_wait_s", "comm_wait_fraction", "reduce_tail_s", "grad_norm_s", "gflops_per_s", "peak_gflops_per_s", "mfu",
           "flops_per_token", "final_loss"]
for key in numbers:
    assert isinstance(doc[key], (int, float)), (key, doc.get(key))
for key in ["tokens_per_s", "step_mean_s", "step_min_s", "forward_s", "backward_s",
            "gflops_per_s", "peak_gflops_per_s", "mfu"]:
    assert doc[key] > 0, (key, doc[key])
assert doc["benchmark"] == "train"
assert doc["world_size"] == 2 and doc["zero_stage"] == stage, doc
assert doc["steps"] == 2 and doc["warmup_steps"] == 1
assert doc["batch_size"] == 4 and doc["seq_len"] == 32 and doc["gradient_accumulation"] == 2
assert doc["step_min_s"] <= doc["step_mean_s"]
state = doc["model_state_bytes"]
for key in ["params", "grads", "optimizer", "working", "total"]:
    assert isinstance(state[key], int), (key, state)
assert state["total"] == state["params"] + state["grads"] + state["optimizer"] + state["working"]
assert state["optimizer"] > 0
assert len(doc["peak_rss_bytes"]) == 2 and all(b > 0 for b in doc["peak_rss_bytes"])
kernels = {row["kernel"] for row in doc["profile"]}
assert {"matmul", "attention", "lm_head", "crossentropy"} <= kernels, kernels
print("stage", stage, "ok:", round(doc["tokens_per_s"]), "tokens/s")
PY
done

# Stage 3 holds a shard of the parameters: half of stage 0's on 2 ranks (up to unit padding).
python3 - bench0.json bench3.json <<'PY'
import json, sys
s0 = json.load(open(sys.argv[1]))["model_state_bytes"]
s3 = json.load(open(sys.argv[2]))["model_state_bytes"]
assert s3["params"] * 2 <= s0["params"] * 1.01, (s0, s3)
PY

# The table form prints the header and the profile.
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" bench train \
  --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" --steps 1 --sgemm-size 128 > table.txt
grep -q "bench train: 2 rank(s) x 1 thread(s), ZeRO stage 0" table.txt || { cat table.txt; exit 1; }
grep -q "tokens/s" table.txt && grep -q "^lm_head" table.txt || { cat table.txt; exit 1; }
grep -qE "; activations .* \(recompute selective\)" table.txt || { cat table.txt; exit 1; }

if timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" bench train \
  --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" --steps 0 > bad.out 2>&1; then
  echo "bench train --steps 0 succeeded"; exit 1
fi
grep -q "steps 0 must be at least 1" bad.out || { cat bad.out; exit 1; }
# A misspelt bench flag is suggested even though the train parser saw it.
if timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" bench train \
  --config "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" --stpes 2 > typo.out 2>&1; then
  echo "bench train --stpes succeeded"; exit 1
fi
grep -q "did you mean '--steps'?" typo.out || { cat typo.out; exit 1; }
echo "bench_train: ok"
