#!/usr/bin/env bash
# Parquet datasets (Hugging Face datasets' format) read by autotrain's own reader
# (src/data/parquet/), checked against a writer we did not write: arrow-rs's (the parquet-wasm
# package), with hyparquet reading back which encodings and codecs each file holds:
#   1. rows of every kind of column (strings with nulls, Unicode and control characters; a
#      conversation list<struct<role, content>>; list<string>; a struct; float64, int64, bool),
#      written with every codec (none, SNAPPY, GZIP, ZSTD), dictionary, PLAIN and the delta
#      encodings, data pages v1 and v2, pages and row groups of a few rows: `autotrain tools
#      show-rows` gives back the rows written, value for value;
#   2. a dataset in the offline Hub cache (datasets--org--name, its files symlinks into blobs/
#      as huggingface-cli leaves them, data/train-0000N-of-00002.parquet and
#      data/validation-00000-of-00001.parquet): `prepare` by its id writes the shards that a
#      JSONL copy of the same rows gives, byte for byte, for text and for conversations
#      (chat_template chatml, completion-only loss masks too); `train` fine-tunes on it by id;
#      dpo pairs (chosen and rejected conversations) prepare as their JSONL copy's and train to
#      the same step;
#   3. broken files (cut short, a corrupted footer, corrupted pages) end in exit 1 naming the
#      file, within the timeout; an id that is not in the cache says what to download.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
python=${PYTHON:-/usr/bin/python3}
reference=$AUTOTRAIN_SOURCE_DIR/tests/data/hf_reference
modules=$(dirname "$AUTOTRAIN_BIN")/hf-reference  # npm packages, kept with the build
timeout 300 bash "$reference/install.sh" "$modules"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "parquet_data: $*"; exit 1; }
write() { node "$reference/write_parquet.mjs" --modules "$modules" "$@"; }
columns=text,messages,tags,meta,score,id,flag

echo "== 1. every column kind, codec, encoding and page version =="
"$python" - <<'PY'
import json, random
random.seed(3)
def text(i):
    if i % 17 == 5: return None
    return random.choice(["", "Hello", "héllo wörld", "日本語のテキスト", "emoji 🙂👍🏽", "tab\tnew\nline\r\n",
                          "\u2028\u2029 \x00 nul", "x" * random.randint(50, 3000)]) + f" #{i}"
rows = []
for i in range(400):
    rows.append({
        "text": text(i),
        "messages": None if i % 11 == 3 else [
            {"role": random.choice(["system", "user", "assistant", None]),
             "content": None if random.random() < 0.1 else text(i * 7 + k) or ""}
            for k in range(random.randint(0, 4))],
        "tags": None if i % 13 == 1 else [random.choice(["a", "bb", None, ""]) for _ in range(random.randint(0, 3))],
        "meta": None if i % 9 == 2 else {"source": None if i % 4 == 0 else f"src{i % 3}",
                                         "n": None if i % 6 == 0 else i - 200},
        "score": None if i % 7 == 0 else i * 0.25 - 40.5,
        "id": i * 1000003 - 2**40,
        "flag": None if i % 10 == 0 else i % 3 == 0,
    })
json.dump(rows, open("rows.json", "w"))
PY
configs=(
  '{}'
  '{"compression": "SNAPPY", "group": 64}'
  '{"compression": "GZIP", "dictionary": false, "page": 512, "group": 150}'
  '{"compression": "ZSTD", "v2": true, "page": 256, "group": 100}'
  '{"compression": "SNAPPY", "v2": true, "dictionary": false, "page": 128, "group": 33}'
  '{"dictionary": false, "columnEncoding": {"text": "DELTA_LENGTH_BYTE_ARRAY"}}'
)
for i in "${!configs[@]}"; do
  write rows.json "f$i.parquet" "${configs[$i]}"
  node "$reference/parquet_meta.mjs" --modules "$modules" "f$i.parquet" > "f$i.meta"
  timeout 60 "$AUTOTRAIN_BIN" tools show-rows --data-path "f$i.parquet" --columns "$columns" \
    > "f$i.jsonl" 2> "f$i.err" || { cat "f$i.err"; fail "show-rows of ${configs[$i]}"; }
done
"$python" - "${#configs[@]}" <<'PY'
import json, sys
rows = json.load(open("rows.json"))
seen_encodings, seen_codecs = set(), set()
for i in range(int(sys.argv[1])):
    meta = json.load(open(f"f{i}.meta"))
    seen_encodings |= set(meta["encodings"]); seen_codecs |= set(meta["codecs"])
    ours = [json.loads(line) for line in open(f"f{i}.jsonl")]
    assert len(ours) == len(rows) == meta["rows"], (i, len(ours), meta)
    bad = [(n, k) for n, (r, o) in enumerate(zip(rows, ours)) for k in r if r[k] != o[k]]
    for n, k in bad[:3]:
        print(f"f{i} row {n} {k}:\n  written {rows[n][k]!r:.200}\n  read    {ours[n][k]!r:.200}")
    assert not bad, f"f{i}.parquet ({meta}): {len(bad)} values differ"
    print(f"f{i}.parquet: {len(rows)} rows in {meta['row_groups']} row groups, {meta['encodings']}, {meta['codecs']}: identical")
want_encodings = {"PLAIN", "RLE", "RLE_DICTIONARY", "DELTA_BINARY_PACKED", "DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY"}
want_codecs = {"UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD"}
assert want_encodings <= seen_encodings and want_codecs <= seen_codecs, (seen_encodings, seen_codecs)
PY

echo "== 2. a Hub dataset by id: the shards of its JSONL copy, byte for byte =="
"$python" - <<'PY'
import json, os, random
random.seed(4)
def conversation(i):
    turns = [{"role": "system", "content": f"You are helper {i}."}] if i % 3 == 0 else []
    for k in range(1 + i % 3):
        turns += [{"role": "user", "content": f"Question {i}.{k}: what is {i} + {k}?"},
                  {"role": "assistant", "content": f"It is {i + k}. " + "ok " * (i % 5)}]
    return turns
def rows(first, n):
    return [{"text": f"Document {i}: " + " ".join(random.choice(["alpha", "beta", "gamma", "δέλτα", "🙂"])
                                                  for _ in range(random.randint(5, 60))),
             "messages": conversation(i)} for i in range(first, first + n)]
splits = {"train-00000-of-00002": rows(0, 70), "train-00001-of-00002": rows(70, 50),
          "validation-00000-of-00001": rows(120, 30)}
os.makedirs("copy", exist_ok=True)
for name, part in splits.items():
    json.dump(part, open(f"{name}.json", "w"))
with open("copy/train.jsonl", "w") as f:
    for r in splits["train-00000-of-00002"] + splits["train-00001-of-00002"]:
        f.write(json.dumps(r) + "\n")
with open("copy/validation.jsonl", "w") as f:
    for r in splits["validation-00000-of-00001"]:
        f.write(json.dumps(r) + "\n")
PY
repo=hf/hub/datasets--test-org--chat
snapshot=$repo/snapshots/0123456789abcdef0123456789abcdef01234567
mkdir -p "$repo/refs" "$repo/blobs" "$snapshot/data"
printf 0123456789abcdef0123456789abcdef01234567 > "$repo/refs/main"
for name in train-00000-of-00002 train-00001-of-00002 validation-00000-of-00001; do
  write "$name.json" "$repo/blobs/$name" '{"compression": "SNAPPY", "group": 40}'
  ln -s "../../../blobs/$name" "$snapshot/data/$name.parquet"
done
prepare() {  # OUT DATA_PATH [FLAGS...]
  local out=$1 data=$2
  shift 2
  HF_HOME=$work/hf timeout 120 "$AUTOTRAIN_BIN" prepare --data-path "$data" --output "$out" \
    --valid-split validation --threads 2 "$@" > "$out.log" 2>&1 || { cat "$out.log"; fail "prepare $out"; }
}
prepare text-parquet test-org/chat
prepare text-jsonl copy
prepare chat-parquet test-org/chat --text-column messages --chat-template chatml --train-on-completions-only true
prepare chat-jsonl copy --text-column messages --chat-template chatml --train-on-completions-only true
for kind in text chat; do
  (cd "$kind-parquet" && find . -type f ! -name manifest.json | sort) > "$kind.files"
  (cd "$kind-jsonl" && find . -type f ! -name manifest.json | sort) | diff - "$kind.files" ||
    fail "$kind: the Parquet and JSONL preparations wrote different files"
  [ "$(wc -l < "$kind.files")" -ge 2 ] || fail "$kind: no shards written"
  while read -r file; do
    cmp -s "$kind-parquet/$file" "$kind-jsonl/$file" || fail "$kind: $file differs from the JSONL copy's"
  done < "$kind.files"
  echo "$kind: $(wc -l < "$kind.files") files identical to the JSONL copy's ($(tr '\n' ' ' < "$kind.files"))"
done
HF_HOME=$work/hf timeout 300 "$AUTOTRAIN_BIN" train --data-path test-org/chat --text-column text \
  --model tiny --from-scratch --tokenizer byte --block-size 32 --batch-size 2 --max-steps 3 --logging-steps 1 \
  --valid-split validation --eval-strategy no --project-name tuned > train.log 2>&1 ||
  { tail -20 train.log; fail "training on the Hub dataset by id"; }
grep -q "$snapshot" train.log || { tail -20 train.log; fail "the log does not name the dataset's snapshot"; }

echo "== 2b. preference pairs (dpo) from Parquet: the pairs of their JSONL copy =="
"$python" - <<'PY'
import json, os
def turns(i, answer):
    return [{"role": "user", "content": f"Q{i}?"}, {"role": "assistant", "content": answer}]
rows = [{"chosen": turns(i, f"Good {i}. " * (1 + i % 3)), "rejected": turns(i, f"bad {i}")}
        for i in range(60)]
json.dump(rows, open("pairs.json", "w"))
os.makedirs("pairs-jsonl", exist_ok=True)
with open("pairs-jsonl/train.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
mkdir -p pairs-parquet
write pairs.json pairs-parquet/train.parquet '{"compression": "ZSTD", "group": 16}'
for kind in parquet jsonl; do
  timeout 300 "$AUTOTRAIN_BIN" train --trainer dpo --data-path "pairs-$kind" --chat-template chatml \
    --model tiny --from-scratch --tokenizer byte --block-size 128 --batch-size 2 --max-steps 2 \
    --logging-steps 1 --eval-strategy no --project-name "dpo-$kind" > "dpo-$kind.log" 2>&1 ||
    { tail -20 "dpo-$kind.log"; fail "dpo on the $kind pairs"; }
done
(cd dpo-parquet/data && find . -type f ! -name '*.json' | sort) > dpo.files
[ -s dpo.files ] || fail "dpo: no prepared pair files"
while read -r file; do
  cmp -s "dpo-parquet/data/$file" "dpo-jsonl/data/$file" || fail "dpo: $file differs from the JSONL copy's"
done < dpo.files
grep "^step 2/2" dpo-parquet.log | sed 's/ *[0-9]* tok\/s.*//' > dpo-parquet.step
grep "^step 2/2" dpo-jsonl.log | sed 's/ *[0-9]* tok\/s.*//' > dpo-jsonl.step
[ -s dpo-parquet.step ] && cmp -s dpo-parquet.step dpo-jsonl.step ||
  { cat dpo-parquet.step dpo-jsonl.step; fail "dpo: another step 2 from the Parquet pairs"; }
echo "dpo: $(wc -l < dpo.files) prepared files identical, $(cat dpo-parquet.step)"

echo "== 3. broken files and missing ids =="
refused() {  # NAME FILE PATTERN [COLUMNS]
  local status=0
  timeout 60 "$AUTOTRAIN_BIN" tools show-rows --data-path "$2" --columns "${4:-$columns}" \
    > /dev/null 2> "$1.err" || status=$?
  [ "$status" -eq 1 ] || { cat "$1.err"; fail "$1: exit $status, expected 1"; }
  grep -qE -- "$3" "$1.err" || { cat "$1.err"; fail "$1: no '$3'"; }
  echo "$1: $(cut -c1-160 "$1.err")"
}
size=$(stat -c %s f3.parquet)
head -c $((size / 2)) f3.parquet > cut.parquet
refused cut cut.parquet "cut.parquet: not a Parquet file"
"$python" - <<'PY'
import struct
data = bytearray(open("f3.parquet", "rb").read())
footer = struct.unpack("<I", data[-8:-4])[0]
bad = bytearray(data); bad[-8:-4] = struct.pack("<I", len(data))  # a footer longer than the file
open("footer-length.parquet", "wb").write(bad)
bad = bytearray(data)
for at in range(len(data) - 8 - footer, len(data) - 8, 7): bad[at] ^= 0x5A  # a scrambled footer
open("footer.parquet", "wb").write(bad)
bad = bytearray(data)
for at in range(4, len(data) - 8 - footer, 13): bad[at] ^= 0xA5  # scrambled pages
open("pages.parquet", "wb").write(bad)
PY
refused footer-length footer-length.parquet "footer-length.parquet: the Parquet footer of [0-9]+ bytes does not fit"
refused footer footer.parquet "footer.parquet"
refused pages pages.parquet "pages.parquet"
refused no-column f0.parquet "f0.parquet has no column 'txt' \(did you mean 'text'\?\); its columns are: text, messages, tags, meta, score, id, flag" txt
status=0
HF_HOME=$work/hf timeout 60 "$AUTOTRAIN_BIN" prepare --data-path test-org/missing --output missing \
  > missing.log 2>&1 || status=$?
[ "$status" -eq 1 ] && grep -q "run \`huggingface-cli download --repo-type dataset test-org/missing\`" missing.log ||
  { cat missing.log; fail "an id missing from the cache: exit $status"; }
echo "missing id: $(grep -o 'data_path test-org/missing: .*' missing.log | cut -c1-160)"
