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
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "e2e"))
sys.dont_write_bytecode = True
import torch_llama as ref  # noqa: E402


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
    config_path = os.path.join(here, "..", "data", "models", "llama-bench", "config.json")
    options = {"--batch": 8, "--block": 256, "--threads": 2, "--steps": 5}
    autocast = "--autocast" in argv
    argv = [a for a in argv if a != "--autocast"]
    i = 0
    while i < len(argv):
        if argv[i] in options:
            options[argv[i]] = int(argv[i + 1])
            i += 2
        else:
            config_path = argv[i]
            i += 1
    torch.set_num_threads(options["--threads"])
    s = ref.Shape(json.load(open(config_path)))
    B, T = options["--batch"], options["--block"]
    g = torch.Generator().manual_seed(42)
    w = {}
    for name, shape in ref.names(s).items():
        init = torch.ones(shape) if name.endswith("norm.weight") else 0.02 * torch.randn(shape, generator=g)
        w[name] = init.float().requires_grad_(True)
    optimizer = torch.optim.AdamW(w.values(), lr=3e-4, weight_decay=0.0)
    freqs = ref.inv_freq(s)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    parameters = sum(t.numel() for t in w.values())
    times = []
    for step in range(2 + options["--steps"]):
        tokens = torch.randint(0, s.V, (B, T + 1), generator=g)
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits = batched_forward(s, w, tokens[:, :-1], freqs, mask)
            loss = torch.nn.functional.cross_entropy(logits.reshape(B * T, s.V).float(),
                                                     tokens[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(w.values(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= 2:
            times.append(time.perf_counter() - start)
    mean = sum(times) / len(times)
    mode = "eager bf16 autocast" if autocast else "eager fp32"
    print(f"pytorch {torch.__version__} {mode}, {options['--threads']} threads: {parameters} parameters, "
          f"B={B} T={T}, {len(times)} steps after 2 warm-up")
    print(f"tokens/s {B * T / mean:.0f}  step mean {1000 * mean:.1f} ms  best {1000 * min(times):.1f} ms  "
          f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
