#!/usr/bin/env bash
# The configs users bring from DeepSpeed and accelerate train as the same parameters given as
# flags would:
#  - `train --deepspeed ds.json` (ZeRO stage, AdamW's lr, betas, eps and decay, WarmupDecayLR
#    with DeepSpeed's log warmup, clipping, batch sizes) gives the losses and learning rates of
#    a run given those values as flags; every learning rate is DeepSpeed's formula's;
#  - AdamW's betas reach the optimizer (another beta2 gives other losses);
#  - `autotrain llm --train --accelerate-config acc.yaml`, started without mpirun, starts the
#    config's num_processes ranks and, through its deepspeed_config_file, trains the same;
#  - --dry-run shows each value's source (ds.json:zero_optimization.stage).
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
fail() { echo "deepspeed_config: $*"; exit 1; }

# tiny.yaml without the values the DeepSpeed config gives (the YAML would win over it).
grep -v "^  \(lr\|scheduler\|warmup_ratio\|weight_decay\|max_steps\|gradient_accumulation\|batch_size\):" \
  "$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml" > tiny.yaml
cat > ds.json <<'EOF'
{
  "bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 2, "overlap_comm": true, "offload_optimizer": {"device": "none"}},
  "optimizer": {"type": "AdamW",
                "params": {"lr": 4e-3, "betas": [0.8, 0.95], "eps": 1e-6, "weight_decay": 0.05}},
  "scheduler": {"type": "WarmupDecayLR",
                "params": {"warmup_min_lr": 0, "warmup_max_lr": "auto", "warmup_num_steps": 4,
                           "total_num_steps": 10}},
  "gradient_clipping": 0.7,
  "train_micro_batch_size_per_gpu": 2,
  "gradient_accumulation_steps": "auto",
  "train_batch_size": 8,
  "steps_per_print": 1
}
EOF
cat > acc.yaml <<'EOF'
compute_environment: LOCAL_MACHINE
debug: false
deepspeed_config:
  deepspeed_config_file: ds.json
  zero3_init_flag: false
distributed_type: DEEPSPEED
machine_rank: 0
main_training_function: main
mixed_precision: 'no'
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
use_cpu: true
EOF

run() {  # NAME ARGS...: mpirun -np 2 train
  local name=$1
  shift
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config tiny.yaml --project-name "$name" \
    "$@" > "$name.log" 2>&1 || { cat "$name.log"; fail "$name failed"; }
}
flags=(--zero-stage 2 --lr 4e-3 --adam-beta1 0.8 --adam-beta2 0.95 --adam-epsilon 1e-6
  --weight-decay 0.05 --scheduler linear --warmup-steps 4 --warmup-type log --max-steps 10
  --max-grad-norm 0.7 --batch-size 2 --global-batch-size 8)

run ds --deepspeed ds.json
run flags "${flags[@]}"
$check same ds/metrics.jsonl flags/metrics.jsonl 1e-6
grep -q "ZeRO stage 2" ds.log || { cat ds.log; fail "the DeepSpeed config's stage was not used"; }

# The learning rates are DeepSpeed's: log warmup over 4 steps (one step ahead, as the linear
# ramp), then linear decay to 0 at step 10; metrics.jsonl's step k ran with lr(k - 1).
python3 - ds/metrics.jsonl <<'EOF'
import json, math, sys
seen = 0
for line in open(sys.argv[1]):
    record = json.loads(line)
    if record.get("loss") is None:
        continue
    s = record["step"] - 1
    want = 4e-3 * (min(1.0, math.log(s + 2) / math.log(5)) if s < 4 else 1 - (s - 4) / 6)
    assert abs(record["lr"] - want) <= 1e-12 + 1e-9 * want, (record["step"], record["lr"], want)
    seen += 1
assert seen == 10, seen
EOF

# Another beta2: the optimizer sees it, and the losses part after the first steps.
run beta "${flags[@]/0.95/0.999}"
if $check same ds/metrics.jsonl beta/metrics.jsonl 1e-6 > /dev/null 2>&1; then
  fail "adam_beta2 0.999 trained as 0.95: the betas do not reach the optimizer"
fi

# AutoTrain's command with accelerate's config, started without mpirun: num_processes ranks.
timeout 300 "$AUTOTRAIN_BIN" llm --train --config tiny.yaml --project-name acc \
  --accelerate-config acc.yaml > acc.log 2>&1 || { cat acc.log; fail "llm --accelerate-config failed"; }
grep -q "mpirun -np 2" acc.log || { cat acc.log; fail "llm did not start the config's 2 ranks"; }
$check same ds/metrics.jsonl acc/metrics.jsonl 1e-6

# The dry run names each value's source.
timeout 120 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config tiny.yaml --accelerate-config acc.yaml \
  --dry-run > plan.txt 2>&1 ||
  { cat plan.txt; fail "dry run failed"; }
for expected in "ZeRO stage   2 (ds.json:zero_optimization.stage)" \
  "adam_beta2  *0.95  *ds.json:optimizer.params.betas" \
  "num_gpus_per_node  *2  *acc.yaml:num_processes" \
  "device  *cpu  *acc.yaml:use_cpu" "deepspeed_config.zero3_init_flag: ignored"; do
  grep -q "$expected" plan.txt || { cat plan.txt; fail "the plan lacks '$expected'"; }
done
echo "deepspeed_config: ds.json, flags and accelerate's config train alike; lr is DeepSpeed's"
