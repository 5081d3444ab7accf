#!/usr/bin/env bash
# Reward models (the score head: transformers' *ForSequenceClassification with one label) checked
# against the PyTorch references (tests/e2e/torch_llama.py, torch_gpt2.py `reward-check`, written
# from transformers' definition: the score of the final norm's output at the last token that is
# not pad_token_id):
#   1. classifier folders of Llama (untied), Qwen2 (tied, BF16), Gemma 2 (whose logits' soft cap
#      the score does not take) and GPT-2: our rewards of pairs of sequences of different lengths
#      (one batch, right-padded, tests/reward_probe), the pairwise loss −log σ(r_chosen −
#      r_rejected) and its gradient of every tensor match PyTorch's;
#   2. a causal LM's folder under a new score head (as a reward run starts from a base model:
#      lm_head.weight left out, score.weight drawn with the base's initializer_range) exports a
#      LlamaForSequenceClassification folder (one label, pad_token_id, no lm_head) that the
#      reference reads and scores as we do; a classifier's export scores the same as the folder;
#   3. `autotrain score` prints the folder's rewards of texts and of a JSONL of pairs with their
#      accuracy, and refuses what it cannot score by name; `generate` refuses a reward model.
set -euo pipefail
: "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
# shellcheck source=tests/e2e/lib.bash
source "$AUTOTRAIN_SOURCE_DIR/tests/e2e/lib.bash"  # reference_test, fail, python, torch_llama
reference_test reward_model 500
reward_probe="$(dirname "$AUTOTRAIN_BIN")/tests/reward_probe"
torch_gpt2=("$python" "$AUTOTRAIN_SOURCE_DIR/tests/e2e/torch_gpt2.py")

# PAIRS VOCAB SEED: 3 pairs of sequences of 2 to 12 ids below VOCAB - 1 (the classifiers' pad).
pairs() {
  "$python" -c "import random; random.seed($3)
for _ in range(6): print(' '.join(str(random.randrange($2 - 1)) for _ in range(random.randint(2, 12))))" > "$1"
}
# FOLDER PAIRS [FLAGS...]: reward_probe on FOLDER and PAIRS into probe-FOLDER.
probe() {
  local folder=$1 pairs_file=$2
  shift 2
  rm -rf "probe-$folder" && mkdir "probe-$folder"
  "$reward_probe" "$folder" "$pairs_file" "probe-$folder" "$@" || fail "reward_probe $folder"
}
# FOLDER REFERENCE PAIRS: probe-FOLDER against the reference (the name of torch_llama or torch_gpt2).
reference_check() {
  local -n reference=$2
  "${reference[@]}" reward-check "$1" "probe-$1" "$3" > "check-$1.out" ||
    { cat "check-$1.out"; fail "$1: our rewards differ from the PyTorch reference's"; }
  echo "$1: $(grep -E '^(rewards|gradients)' "check-$1.out" | cut -c1-100 | tr '\n' ' ')"
}

# 1. Classifier folders against PyTorch.
pairs pairs.txt 500 5
pairs gpt2-pairs.txt 50257 6
"${torch_batch[@]}" << EOF
torch_llama.py make llama-rm --classifier --seed 31
torch_llama.py make qwen2-rm --arch qwen2 --classifier --tied --dtype BF16 --seed 32
torch_llama.py make gemma2-rm --arch gemma2 --classifier --seed 33
torch_gpt2.py make gpt2-rm --classifier --shape 2,2,32,64 --seed 34
EOF
for folder in llama-rm qwen2-rm gemma2-rm; do probe "$folder" pairs.txt; done
probe gpt2-rm gpt2-pairs.txt
"${torch_batch[@]}" << EOF || fail "our rewards differ from the PyTorch reference's (above)"
torch_llama.py reward-check llama-rm probe-llama-rm pairs.txt > check-llama-rm.out
torch_llama.py reward-check qwen2-rm probe-qwen2-rm pairs.txt > check-qwen2-rm.out
torch_llama.py reward-check gemma2-rm probe-gemma2-rm pairs.txt > check-gemma2-rm.out
torch_gpt2.py reward-check gpt2-rm probe-gpt2-rm gpt2-pairs.txt > check-gpt2-rm.out
EOF
for folder in llama-rm qwen2-rm gemma2-rm gpt2-rm; do
  echo "$folder: $(grep -E '^(rewards|gradients)' "check-$folder.out" | cut -c1-100 | tr '\n' ' ')"
done

# 2. A base model under a new score head, exported; a classifier's export.
"${torch_llama[@]}" make base --seed 35
"$python" -c "import json; p='base/config.json'; c = json.load(open(p)); c['initializer_range'] = 0.05; json.dump(c, open(p, 'w'))"
probe base pairs.txt --new-head 7 --export base-rm
"$python" - base-rm/config.json <<'PY' || fail "the export's config.json"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["architectures"] == ["LlamaForSequenceClassification"] and c["model_type"] == "llama", c
assert c["id2label"] == {"0": "LABEL_0"} and c["label2id"] == {"LABEL_0": 0}, c
assert isinstance(c["pad_token_id"], int), c
PY
"$python" - base-rm <<'PY' || fail "the export's score head"
import os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, os.environ["AUTOTRAIN_SOURCE_DIR"] + "/tests/e2e")
from hf_folder import read_tensors
_, w = read_tensors(sys.argv[1])
assert "lm_head.weight" not in w and list(w["score.weight"].shape) == [1, 32], sorted(w)
std = w["score.weight"].std().item()
assert 0.03 < std < 0.08, f"score.weight std {std}, expected about the base's initializer_range 0.05"
print(f"export: score.weight [1, 32] of std {std:.3f} (initializer_range 0.05), no lm_head.weight")
PY
probe base-rm pairs.txt
reference_check base-rm torch_llama pairs.txt
cmp probe-base/rewards.txt probe-base-rm/rewards.txt ||
  fail "the exported reward model scores differently from the model it was exported from"
probe llama-rm pairs.txt --export llama-rm-export
probe llama-rm-export pairs.txt
cmp probe-llama-rm/rewards.txt probe-llama-rm-export/rewards.txt ||
  fail "a classifier's export scores differently from the classifier"
"${torch_llama[@]}" same-weights llama-rm llama-rm-export 0 > same.out || { cat same.out; fail "export changed weights"; }
echo "export: the classifier's export holds its weights exactly and scores the same"

# 3. autotrain score: GPT-2's tokenizer (no special tokens) on the GPT-2 classifier gives
# reward_probe's rewards of the same ids; a text ending with the pad token (<|endoftext|>) is
# scored at the token before it, as transformers pools; pairs give their accuracy (a tie is not
# chosen above rejected).
score() { "$AUTOTRAIN_BIN" score "$@" 2> score.err || { cat score.err; fail "score $*"; }; }
ids() { "$AUTOTRAIN_BIN" tokenize --text "$1" | sed -n 's/^ids: //p'; }
{ ids "Hello world"; ids "The rain in Spain stays mainly in the plain."; } > text-pairs.txt
probe gpt2-rm text-pairs.txt
score --model gpt2-rm --text "Hello world" "The rain in Spain stays mainly in the plain." \
  "Hello world<|endoftext|>" > scored.txt
cat scored.txt
cat > pairs.jsonl <<'JSONL'
{"prompt": "p", "chosen": "Hello world", "rejected": "The rain in Spain stays mainly in the plain."}
{"chosen": "The rain in Spain stays mainly in the plain.", "rejected": "Hello world"}
{"chosen": "Hello world", "rejected": "Hello world"}
JSONL
score --model gpt2-rm --pairs pairs.jsonl > pairs.out
cat pairs.out
"$python" - scored.txt probe-gpt2-rm/rewards.txt pairs.out <<'PY' || fail "score's rewards"
import sys
scored = [float(line.split()[0]) for line in open(sys.argv[1])]
probe = [float(line) for line in open(sys.argv[2])]
assert all(abs(a - b) <= 1e-5 * max(1, abs(b)) for a, b in zip(scored, probe)), (scored, probe)
assert abs(scored[2] - scored[0]) <= 1e-5 * max(1, abs(scored[0])), "a trailing pad token changed the reward"
lines = open(sys.argv[3]).read().splitlines()
right = 1  # of the first two pairs, one (the third ties: not above)
assert lines[-1].startswith(f"accuracy {right / 3:.4f} ({right} of 3 pairs"), lines[-1]
print(f"score: the probe's rewards {probe}; accuracy line '{lines[-1]}'")
PY
# Refused by name: a row without the column, a language model's folder, no texts.
refused_score() {  # WANT FLAGS...: score with FLAGS exits 1 and says WANT
  local want=$1 status=0
  shift
  "$AUTOTRAIN_BIN" score "$@" > refused.out 2>&1 || status=$?
  [ "$status" -eq 1 ] && grep -qF -- "$want" refused.out || { cat refused.out; fail "score $*: exit $status, no '$want'"; }
}
printf '{"chosen": "a", "rejected": "b"}\n{"good": "a", "rejected": "b"}\n' > bad.jsonl
refused_score "bad.jsonl:2: no column 'chosen' (the row has good, rejected)" --model gpt2-rm --pairs bad.jsonl
refused_score "bad.jsonl:1: no column 'better'" --model gpt2-rm --pairs bad.jsonl --chosen-column better
refused_score "LlamaForCausalLM is a language model; autotrain score needs a reward model" --model base --text hi
status=0
"$AUTOTRAIN_BIN" score --model gpt2-rm > refused.out 2>&1 || status=$?
[ "$status" -eq 2 ] && grep -qF -- "give --text TEXT ... or --pairs FILE.jsonl" refused.out ||
  { cat refused.out; fail "score without texts: exit $status, expected 2 (usage)"; }
echo "score: refuses a missing column and a language model by name; no texts is a usage error"

# generate refuses a reward model.
status=0
"$AUTOTRAIN_BIN" generate --model llama-rm --prompt "hi" > gen.out 2>&1 || status=$?
[ "$status" -eq 1 ] && grep -q "LlamaForSequenceClassification is a reward model" gen.out ||
  { cat gen.out; fail "generate on a reward model: exit $status"; }
echo "generate: refuses a reward model ($(grep -o 'is a reward model[^:]*' gen.out | head -1))"
echo "reward_model: ok"
