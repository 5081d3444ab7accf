#!/usr/bin/env python3
"""An independent GPT-2 in PyTorch, for checking autotrain against (e2e.hf_models).

  make OUT [--dtype F32|BF16|F16] [--shards N] [--no-prefix] [--seed S] [--hub CACHE ID]
           [--drop NAME] [--shape N_LAYER,N_HEAD,N_EMBD,N_POSITIONS]
      A tiny random GPT-2 as a Hugging Face folder: config.json, model.safetensors (or N shards
      with model.safetensors.index.json). With --hub, also as Hub id ID in the cache CACHE.
  make ... --classifier
      As GPT2ForSequenceClassification of one label (a reward model): score.weight [1, n_embd],
      pad_token_id 50256.
  reward-check FOLDER PROBE PAIRS
      The rewards of the sequences of PAIRS (a line of ids each: chosen, then rejected) as
      transformers defines them (the score of ln_f's output at the last token that is not
      pad_token_id), the pairwise loss −log σ(r_chosen − r_rejected) and its gradients, against
      what reward_probe wrote into PROBE.
  check FOLDER PROBE TOKENS
      Runs this reference on FOLDER and TOKENS and compares with what hf_probe wrote into PROBE:
      logits (1e-4), loss, gradients of every tensor (autograd) and 20 greedy tokens.
  same-weights A B TOLERANCE
      Every tensor of folder A equals the one of folder B within TOLERANCE.
  logits FOLDER TOKENS OUT
      This reference's logits [T, V] for TOKENS, as float32 raw bytes.

Safetensors are read and written here by hand (8-byte header length, JSON header, raw data),
GPT-2's math follows the published architecture: learned positions, pre-LayerNorm blocks, causal
attention, tanh-GELU MLP of 4C, LM head tied to wte; Conv1D weights are [in, out].
"""
import json
import math
import os
import sys

import numpy as np
import torch

# The safetensors I/O and the folder layout (shards, Hub cache) live in hf_folder.py, next to this
# file, shared with torch_llama.py.
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from hf_folder import (check_logits_and_loss, check_reward_probe, fail, folder_for,  # noqa: E402
                       last_real_token, read_pairs, read_tensors, read_tokens, same_weights, write_weights)

SHAPE = dict(n_layer=2, n_head=2, n_embd=32, n_positions=64, vocab_size=50257)


def names(n_layer):
    out = ["wte.weight", "wpe.weight"]
    for l in range(n_layer):
        p = f"h.{l}."
        out += [p + "ln_1.weight", p + "ln_1.bias", p + "attn.c_attn.weight", p + "attn.c_attn.bias",
                p + "attn.c_proj.weight", p + "attn.c_proj.bias", p + "ln_2.weight", p + "ln_2.bias",
                p + "mlp.c_fc.weight", p + "mlp.c_fc.bias", p + "mlp.c_proj.weight",
                p + "mlp.c_proj.bias"]
    return out + ["ln_f.weight", "ln_f.bias"]


def shape_of(name, c):
    C, V, P = c["n_embd"], c["vocab_size"], c["n_positions"]
    table = {"wte.weight": [V, C], "wpe.weight": [P, C], "attn.c_attn.weight": [C, 3 * C],
             "attn.c_attn.bias": [3 * C], "attn.c_proj.weight": [C, C], "mlp.c_fc.weight": [C, 4 * C],
             "mlp.c_fc.bias": [4 * C], "mlp.c_proj.weight": [4 * C, C]}
    for key, shape in table.items():
        if name.endswith(key):
            return shape
    return [C]


def classifier(config):
    return "GPT2ForSequenceClassification" in (config.get("architectures") or [])


def random_weights(c, seed):
    g = torch.Generator().manual_seed(seed)
    w = {}
    if classifier(c):  # GPT2ForSequenceClassification's head (no "transformer." prefix)
        w["score.weight"] = torch.randn([1, c["n_embd"]], generator=g) / math.sqrt(c["n_embd"])
    for name in names(c["n_layer"]):
        shape = shape_of(name, c)
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            t = 1 + 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.02 * torch.randn(shape, generator=g)
        else:  # strong enough that greedy decoding is far from ties
            t = 0.1 * torch.randn(shape, generator=g)
        w[name] = t.float()
    return w


def read_folder(folder):
    config, tensors = read_tensors(folder)
    weights = {}
    for name, t in tensors.items():
        short = name[len("transformer."):] if name.startswith("transformer.") else name
        if short.endswith(".attn.bias") or short.endswith(".attn.masked_bias") or short == "lm_head.weight":
            continue
        weights[short] = t
    return config, weights


def forward(config, w, tokens):
    """Logits [T, V] at every position; a classifier's scores [T, 1]."""
    C, NH = config["n_embd"], config["n_head"]
    hd = C // NH
    eps = config.get("layer_norm_epsilon", 1e-5)
    T = tokens.shape[0]
    x = w["wte.weight"][tokens] + w["wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def ln(v, p):
        return torch.nn.functional.layer_norm(v, (C,), w[p + ".weight"], w[p + ".bias"], eps)

    for l in range(config["n_layer"]):
        p = f"h.{l}."
        qkv = ln(x, p + "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=-1)
        q, k, v = (t.view(T, NH, hd).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = ln(x, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
        h = torch.nn.functional.gelu(h, approximate="tanh")
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    return ln(x, "ln_f") @ (w["score.weight"] if classifier(config) else w["wte.weight"]).T


def cmd_make(args):
    out = args[0]
    dtype, shards, prefix, seed, hub, drop, head = "F32", 1, "transformer.", 1, None, None, False
    i = 1
    while i < len(args):
        if args[i] == "--dtype":
            dtype = args[i + 1]; i += 2
        elif args[i] == "--shards":
            shards = int(args[i + 1]); i += 2
        elif args[i] == "--no-prefix":
            prefix = ""; i += 1
        elif args[i] == "--seed":
            seed = int(args[i + 1]); i += 2
        elif args[i] == "--shape":  # n_layer,n_head,n_embd,n_positions (GPT-2 small: 12,12,768,1024)
            SHAPE.update(zip(["n_layer", "n_head", "n_embd", "n_positions"], map(int, args[i + 1].split(","))))
            i += 2
        elif args[i] == "--drop":
            drop = args[i + 1]; i += 2
        elif args[i] == "--classifier":
            head = True; i += 1
        elif args[i] == "--hub":
            hub = (args[i + 1], args[i + 2]); i += 3
        else:
            sys.exit(f"make: unknown option {args[i]}")
    config = dict(SHAPE, model_type="gpt2", architectures=["GPT2LMHeadModel"], n_ctx=SHAPE["n_positions"],
                  activation_function="gelu_new", layer_norm_epsilon=1e-5, tie_word_embeddings=True,
                  bos_token_id=50256, eos_token_id=50256, torch_dtype="float32")
    if head:  # as save_pretrained writes a sequence classifier of one label
        config.update(architectures=["GPT2ForSequenceClassification"], id2label={"0": "LABEL_0"},
                      label2id={"LABEL_0": 0}, pad_token_id=50256)
    weights = {(k if k == "score.weight" else prefix + k): v
               for k, v in random_weights(config, seed).items() if k != drop}
    folder = folder_for(out, hub)
    os.makedirs(folder, exist_ok=True)
    json.dump(config, open(os.path.join(folder, "config.json"), "w"), indent=2)
    write_weights(folder, weights, dtype, shards)


def cmd_check(args):
    folder, probe, tokens_path = args
    config, w = read_folder(folder)
    tokens = read_tokens(tokens_path)
    T, V = tokens.shape[0] - 1, config["vocab_size"]
    for t in w.values():
        t.requires_grad_(True)
    logits = forward(config, w, tokens[:T])
    loss = check_logits_and_loss(probe, logits, tokens[1:])
    loss.backward()
    grads = np.fromfile(os.path.join(probe, "grads.f32"), dtype=np.float32)
    worst = 0.0
    for tensor in json.load(open(os.path.join(probe, "layout.json"))):
        name = tensor["name"][len("transformer."):]
        ref = w[name].grad
        n = ref.numel()
        got = torch.from_numpy(grads[tensor["offset"]:tensor["offset"] + n].copy()).reshape(ref.shape)
        scale = max(ref.abs().max().item(), 1e-3)
        err = (got - ref).abs().max().item() / scale
        worst = max(worst, err)
        if err > 1e-4:
            fail(f"gradient of {name}: max relative difference {err:.3g}")
    print(f"gradients: every tensor within {worst:.3g} (relative to its largest element)")
    with torch.no_grad():
        seq = tokens.clone()
        for _ in range(20):
            seq = torch.cat([seq, forward(config, w, seq)[-1].argmax().view(1)])
    expected = seq[tokens.shape[0]:].tolist()
    got = [int(t) for t in open(os.path.join(probe, "greedy.txt")).read().split()]
    print(f"greedy: ours {got[:8]}..., torch {expected[:8]}...")
    if got != expected:
        fail(f"greedy decoding differs: ours {got}, torch {expected}")
    print("check: ok")


def cmd_reward_check(args):
    folder, probe, pairs_path = args
    config, w32 = read_folder(folder)
    if not classifier(config):
        fail(f"{folder} is not a GPT2ForSequenceClassification folder")
    w = {k: v.to(torch.float64).requires_grad_(True) for k, v in w32.items()}
    pad = config.get("pad_token_id")
    rewards = torch.stack([forward(config, w, t)[last_real_token(t, pad), 0] for t in read_pairs(pairs_path)])
    check_reward_probe(probe, rewards, w,
                       lambda name: name[len("transformer."):] if name.startswith("transformer.") else name)
    print("reward-check: ok")


def cmd_same_weights(args):
    a, b, tolerance = args[0], args[1], float(args[2])
    _, wa = read_folder(a)
    _, wb = read_folder(b)
    same_weights(wa, wb, tolerance)


def cmd_logits(args):
    folder, tokens_path, out = args
    config, w = read_folder(folder)
    tokens = read_tokens(tokens_path)
    with torch.no_grad():
        forward(config, w, tokens[:-1]).numpy().astype(np.float32).tofile(out)


if __name__ == "__main__":
    commands = {"make": cmd_make, "check": cmd_check, "same-weights": cmd_same_weights, "logits": cmd_logits,
                "reward-check": cmd_reward_check}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2:])
