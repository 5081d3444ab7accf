#!/usr/bin/env bash
# A dpo step against an sft step on the same model and the same sequences (docs/benchmarks.md,
# "Preference tuning"): a Llama-shaped folder (tests/e2e/torch_llama.py, random weights), 64
# pairs of byte-tokenized texts, block_size 256, one rank on the CPU. dpo runs 2 pairs a
# micro-batch (4 sequences: prompt + chosen, prompt + rejected), sft 4 sequences of prompt +
# chosen packed; both 1 micro-step a step. Prints, per trainer and repeat, the mean step time
# over steps 3..N (metrics.jsonl's elapsed_s), the peak resident memory of the rank
# (/usr/bin/time), and dpo's one-off reference pass.
#   scripts/bench-preference.sh [BUILD_DIR] [REPEATS] [STEPS]
set -euo pipefail
build=${1:-build/ci}
repeats=${2:-3}
steps=${3:-10}
bin=$(realpath "$build/autotrain")
src=$(realpath "$(dirname "$0")/..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 "$src/tests/e2e/torch_llama.py" make model --shape 4,8,4,256,688 --vocab 512 \
  --max-positions 512 --seed 3 > /dev/null
/usr/bin/python3 - <<'PY'
import json, random
random.seed(1)
words = "the of and to in is that for it as with was on be by at this from or an are".split()
text = lambda n: " ".join(random.choice(words) for _ in range(n))
with open("train.jsonl", "w") as pairs, open("sft.jsonl", "w") as sft:
    for _ in range(64):
        prompt, chosen, rejected = text(20), text(30), text(30)
        pairs.write(json.dumps({"prompt": prompt, "chosen": chosen, "rejected": rejected}) + "\n")
        sft.write(json.dumps({"text": prompt + " " + chosen}) + "\n")
PY
mkdir data-pairs data-sft && mv train.jsonl data-pairs/ && mv sft.jsonl data-sft/train.jsonl
common=(--model model --tokenizer byte --block-size 256 --gradient-accumulation 1 --max-steps "$steps"
  --logging-steps 1 --eval-strategy no --lr 1e-5 --threads "$(nproc)")
step_time() {  # mean seconds a step over steps 3..N of a metrics.jsonl
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if r.get("loss") is not None and r["step"] > 0]
t = {r["step"]: r["elapsed_s"] for r in rows}
n = max(t)
print(f"{(t[n] - t[2]) / (n - 2) * 1000:.1f}")
PY
}
for repeat in $(seq "$repeats"); do
  for trainer in dpo sft; do
    if [ "$trainer" = dpo ]; then data=(--data-path data-pairs --batch-size 2)
    else data=(--data-path data-sft --batch-size 4); fi
    rm -rf "$trainer"
    /usr/bin/time -f "%M" -o "$trainer.rss" "$bin" train --trainer "$trainer" --project-name "$trainer" \
      "${common[@]}" "${data[@]}" > "$trainer.log" 2>&1 || { tail "$trainer.log"; exit 1; }
    reference=$(grep -oE "log-probabilities of every pair in [0-9.e-]+ s" "$trainer.log" | grep -oE "[0-9.e-]+ s" || true)
    echo "$trainer repeat $repeat: $(step_time "$trainer/metrics.jsonl") ms a step, peak RSS $(( $(cat "$trainer.rss") / 1024 )) MiB${reference:+, reference pass $reference}"
  done
done
