#!/usr/bin/env python3
"""PyTorch eager on the shape of configs/bench-cpu.yaml, for docs/benchmarks.md: the same full
training step `autotrain bench train` times (forward, backward, gradient clipping at 1.0, AdamW),
batched, on random tokens, with the same thread count (scripts/torch_step_bench.py).

  scripts/bench-torch-gpt2.py [CONFIG_JSON] [--batch B] [--block T] [--threads N] [--steps S]
                              [--autocast]

--autocast runs the forward pass and the loss under torch.autocast("cpu", dtype=torch.bfloat16).
CONFIG_JSON (a GPT-2 config.json: n_layer, n_head, n_embd, n_positions, vocab_size) defaults to
configs/bench-cpu.yaml's shape: 4 layers, 4 heads, 256 wide, 1024 positions, the 50257-token
vocabulary. The model is GPT-2 as tests/e2e/torch_gpt2.py defines it (pre-LayerNorm blocks,
Conv1D weights [in, out], tanh GELU, the LM head tied to the token embeddings), batched over B
sequences.
"""
import json
import math
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "e2e"))
sys.dont_write_bytecode = True
import torch_gpt2 as ref  # noqa: E402
import torch_step_bench as bench  # noqa: E402

BENCH_CPU = dict(n_layer=4, n_head=4, n_embd=256, n_positions=1024, vocab_size=50257)


def batched_forward(c, w, tokens, mask):
    B, T = tokens.shape
    C, NH = c["n_embd"], c["n_head"]
    hd = C // NH

    def ln(v, p):
        return torch.nn.functional.layer_norm(v, (C,), w[p + ".weight"], w[p + ".bias"], 1e-5)

    x = w["wte.weight"][tokens] + w["wpe.weight"][:T]
    for l in range(c["n_layer"]):
        p = f"h.{l}."
        qkv = ln(x, p + "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (t.view(B, T, NH, hd).transpose(1, 2) for t in qkv.split(C, dim=-1))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = ln(x, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
        h = torch.nn.functional.gelu(h, approximate="tanh")
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    return ln(x, "ln_f") @ w["wte.weight"].T


def main(argv):
    config_path, options, autocast = bench.parse(argv, None)
    c = dict(BENCH_CPU)
    if config_path is not None:
        c.update({k: v for k, v in json.load(open(config_path)).items() if k in BENCH_CPU})
    T = options["--block"]
    g = torch.Generator().manual_seed(42)
    w = {}
    for name in ref.names(c["n_layer"]):
        shape = ref.shape_of(name, c)
        if name.endswith(".bias"):
            init = torch.zeros(shape)
        elif "ln_" in name:
            init = torch.ones(shape)
        else:
            init = 0.02 * torch.randn(shape, generator=g)
        w[name] = init.float().requires_grad_(True)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    bench.run(w, lambda tokens: batched_forward(c, w, tokens, mask), c["vocab_size"], options, autocast, g)


if __name__ == "__main__":
    main(sys.argv[1:])
