#!/usr/bin/env bash
# mixed_precision bf16 on a CPU with native bf16 (docs/training.md, "Mixed precision"): the run
# says it computes in bf16; training and evaluation follow the fp32 loss curve loosely (5e-2
# relative: the products' inputs are rounded to 8 bits); its checkpoints have the fp32 run's
# datasets, dtypes and shapes, and one resumes in fp32 onto the curve it left; generate computes
# in bf16. Skipped (77) where the CPU has no native bf16 (the gemm line of `autotrain env`); the
# fallback is tested by e2e.train_mpirun and kernels.gemm.no_native_bf16.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
check="python3 $AUTOTRAIN_SOURCE_DIR/tests/e2e/ckpt_check.py"
config="$AUTOTRAIN_SOURCE_DIR/tests/e2e/configs/tiny.yaml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
fail() { echo "FAIL: $*"; for f in *.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }

"$AUTOTRAIN_BIN" env > env.log 2>&1 || fail "autotrain env"
if ! grep -q "^  gemm .*: bf16 native" env.log; then
  echo "cpu_bf16: skipped, this CPU has no native bf16 ($(grep '^  gemm' env.log))"
  exit 77
fi

# train PROJECT PRECISION [flags...]: 2 ranks, ZeRO-2, 40 steps with checkpoints at 20 and 40.
train() {
  local project=$1 precision=$2
  shift 2
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --config "$config" --project-name "$project" \
    --zero-stage 2 --gradient-accumulation 1 --max-steps 40 --checkpoint-every 20 \
    --save-total-limit 5 --eval-steps 20 --mixed-precision "$precision" "$@" > "$project.log" 2>&1 ||
    fail "training $project"
}

train fp32 no
train bf16 bf16
grep -q "^model: .*; on cpu in bf16$" bf16.log || fail "the bf16 run does not say bf16"
grep -q "final validation loss [0-9]" bf16.log || fail "no validation loss from the bf16 run"
$check tail fp32/metrics.jsonl bf16/metrics.jsonl 1 5e-2
# The bf16 run's losses are its own (else bf16 was not used).
if cmp -s <(grep -o '"loss":[^,]*' fp32/metrics.jsonl) <(grep -o '"loss":[^,]*' bf16/metrics.jsonl); then
  fail "bf16 logged exactly the fp32 losses"
fi

# The checkpoint format does not change with the precision.
/usr/bin/python3 - fp32/checkpoints/checkpoint-20.h5 bf16/checkpoints/checkpoint-20.h5 <<'EOF' ||
import sys, h5py
def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):  # text (the run's JSON) by kind only
                numeric = obj.dtype.kind in "fiub"
                out[name] = (obj.dtype.str, obj.shape) if numeric else (obj.dtype.kind,)
        f.visititems(visit)
    return out
a, b = datasets(sys.argv[1]), datasets(sys.argv[2])
if a != b:
    diff = sorted(set(a.items()) ^ set(b.items()))
    sys.exit(f"checkpoint datasets differ between fp32 and bf16 runs: {diff[:8]}")
EOF
  fail "the bf16 checkpoint's layout"

# A bf16 checkpoint resumes in fp32 and continues the bf16 curve loosely.
train bf16-to-fp32 no --resume-from-checkpoint bf16/checkpoints/checkpoint-20.h5
grep -q "resume: bf16/checkpoints/checkpoint-20.h5 at step 20" bf16-to-fp32.log ||
  fail "bf16 -> fp32 did not resume at step 20"
$check tail bf16/metrics.jsonl bf16-to-fp32/metrics.jsonl 21 5e-2

# generate in bf16 on the CPU.
timeout 120 "$AUTOTRAIN_BIN" generate --model bf16 --prompt "ROMEO:" --max-new-tokens 20 --seed 3 \
  --device cpu --mixed-precision bf16 > generate.txt 2> generate.log || fail "generate in bf16"
grep -q "^generate: on the CPU in bf16 (" generate.log || fail "generate did not say bf16"
[ -s generate.txt ] || fail "generate in bf16 printed nothing"
echo "cpu_bf16: ok"
