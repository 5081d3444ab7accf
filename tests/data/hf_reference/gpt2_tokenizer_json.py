#!/usr/bin/env python3
"""Writes GPT-2's vocabulary (data/gpt2/encoder.json + vocab.bpe) as a Hugging Face
tokenizer.json, the way the Hub's openai-community/gpt2 has it, in one of two forms:

  byte_level  pre_tokenizer ByteLevel(use_regex=true): autotrain's hand-written GPT-2 splitter
  split       pre_tokenizer Sequence[Split(GPT-2's regex, Isolated), ByteLevel(use_regex=false)]:
              the same pattern run by PCRE2

Usage: gpt2_tokenizer_json.py GPT2_DIR FORM OUTPUT_DIR  (writes OUTPUT_DIR/tokenizer.json)
"""
import json
import pathlib
import sys

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

source, form, output = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
vocab = json.loads((source / "encoder.json").read_text(encoding="utf-8"))
merges = [line for line in (source / "vocab.bpe").read_text(encoding="utf-8").split("\n")
          if line and not line.startswith("#version")]
byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
              "use_regex": form == "byte_level"}
if form == "byte_level":
    pre_tokenizer = byte_level
elif form == "split":
    pre_tokenizer = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": GPT2_PATTERN}, "behavior": "Isolated",
         "invert": False},
        byte_level]}
else:
    sys.exit(f"unknown form {form!r}: expected byte_level or split")
tokenizer = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "single_word": False,
                      "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
    "normalizer": None,
    "pre_tokenizer": pre_tokenizer,
    "post_processor": dict(byte_level, trim_offsets=False),
    "decoder": dict(byte_level),
    "model": {"type": "BPE", "dropout": None, "unk_token": None,
              "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
              "byte_fallback": False, "vocab": vocab, "merges": merges},
}
output.mkdir(parents=True, exist_ok=True)
(output / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
(output / "tokenizer_config.json").write_text(json.dumps(
    {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
     "add_prefix_space": False, "tokenizer_class": "GPT2Tokenizer"}), encoding="utf-8")
