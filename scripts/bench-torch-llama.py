#!/usr/bin/env python3
"""PyTorch eager on the shape of configs/bench-cpu-llama.yaml, for docs/benchmarks.md: the same
full training step `autotrain bench train` times (forward, backward, gradient clipping at 1.0,
AdamW), batched, in fp32, on random tokens, with the same thread count.

  scripts/bench-torch-llama.py [CONFIG_JSON] [--batch B] [--block T] [--threads N] [--steps S]
                               [--autocast]

--autocast runs the forward pass and the loss under torch.autocast("cpu", dtype=torch.bfloat16)
(PyTorch's CPU mixed precision: bf16 matrix products, fp32 weights and optimizer).

CONFIG_JSON defaults to data/models/llama-bench/config.json. The model is the reference of
tests/e2e/torch_llama.py (its RMSNorm, rotary embedding and SwiGLU), batched over B sequences;
attention repeats the key/value heads to the query heads, as transformers' eager attention does.
Prints tokens/s as the mean over the steps after 2 warm-up steps, and the best step.
"""
import json
import math
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "e2e"))
sys.dont_write_bytecode = True
import torch_llama as ref  # noqa: E402
import torch_step_bench as bench  # noqa: E402


def batched_forward(s, w, tokens, freqs, mask):
    B, T = tokens.shape
    positions = torch.arange(T)
    x = w["model.embed_tokens.weight"][tokens]
    G = s.NH // s.NKV
    for l in range(s.L):
        p = f"model.layers.{l}."
        n = ref.rms_norm(x, w[p + "input_layernorm.weight"], s.eps)
        q = ref.linear(n, w, p + "self_attn.q_proj").view(B, T, s.NH, s.D).transpose(1, 2)
        k = ref.linear(n, w, p + "self_attn.k_proj").view(B, T, s.NKV, s.D).transpose(1, 2)
        v = ref.linear(n, w, p + "self_attn.v_proj").view(B, T, s.NKV, s.D).transpose(1, 2)
        if s.qk_norm:
            q = ref.rms_norm(q, w[p + "self_attn.q_norm.weight"], s.eps)
            k = ref.rms_norm(k, w[p + "self_attn.k_norm.weight"], s.eps)
        q, k = ref.rope(q, positions, freqs), ref.rope(k, positions, freqs)
        k, v = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(s.D)
        y = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        y = y.transpose(1, 2).reshape(B, T, s.NH * s.D)
        x = ref.mlp(s, w, p, x + ref.linear(y, w, p + "self_attn.o_proj"))
    return ref.head(s, w, x)


def main(argv):
    default = os.path.join(here, "..", "data", "models", "llama-bench", "config.json")
    config_path, options, autocast = bench.parse(argv, default)
    s = ref.Shape(json.load(open(config_path)))
    T = options["--block"]
    g = torch.Generator().manual_seed(42)
    w = {}
    for name, shape in ref.names(s).items():
        init = torch.ones(shape) if name.endswith("norm.weight") else 0.02 * torch.randn(shape, generator=g)
        w[name] = init.float().requires_grad_(True)
    freqs = ref.inv_freq(s)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    bench.run(w, lambda tokens: batched_forward(s, w, tokens, freqs, mask), s.V, options, autocast, g)


if __name__ == "__main__":
    main(sys.argv[1:])
