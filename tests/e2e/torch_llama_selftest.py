#!/usr/bin/env python3
"""`torch_llama.py selftest`: the reference's pieces against other ways of computing them:
attention against PyTorch's fused attention and a loop over visible keys, the rotary embedding
against complex rotations, llama3 scaling against a scalar formula, incremental decoding with a
key/value cache against the full forward, causality, and the greedy decoding of made models for
near-ties."""
import math
import sys

import torch

sys.dont_write_bytecode = True
from hf_folder import fail  # noqa: E402
from torch_llama import (ARCHS, F64, Shape, as_f64, attention, embed, forward, greedy, head,  # noqa: E402
                         inv_freq, layer, llama3_original_positions, make_config, random_weights, rope,
                         rotate_half, visible)


def fused_attention(q, k, v, mask):
    """PyTorch's fused attention, the key/value heads expanded by broadcasting."""
    NH, NKV = q.shape[0], k.shape[0]
    k = k[:, None].expand(NKV, NH // NKV, *k.shape[1:]).reshape(NH, *k.shape[1:])
    v = v[:, None].expand(NKV, NH // NKV, *v.shape[1:]).reshape(NH, *v.shape[1:])
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v, attn_mask=mask)
    return torch.nn.functional._scaled_dot_product_attention(q, k, v, mask, 0.0, False, False)[0]  # torch 1.13


def loop_attention(q, k, v, mask):
    """One query head at a time, over its visible keys only, in plain Python sums."""
    NH, Tq, D = q.shape
    G = NH // k.shape[0]
    out = torch.zeros_like(q)
    for h in range(NH):
        for i in range(Tq):
            keys = [j for j in range(k.shape[1]) if mask[i, j]]
            scores = [sum(q[h, i, d].item() * k[h // G, j, d].item() for d in range(D)) / math.sqrt(D) for j in keys]
            top = max(scores)
            e = [math.exp(x - top) for x in scores]
            for j, ej in zip(keys, e):
                out[h, i] += ej / sum(e) * v[h // G, j]
    return out


def complex_rope(x, positions, freqs):
    """Pair (i, i + D/2) as the complex number x_i + i·x_{i+D/2}, turned by position·freq_i."""
    half = x.shape[-1] // 2
    z = torch.complex(x[..., :half], x[..., half:])
    z = z * torch.polar(torch.ones_like(freqs)[None, :].expand(len(positions), -1),
                        positions.to(F64)[:, None] * freqs[None, :])
    return torch.cat([z.real, z.imag], dim=-1)


def scalar_llama3(s):
    rs, out = s.rope_scaling, []
    for i in range(s.D // 2):
        freq = 1.0 / s.theta ** (2 * i / s.D)
        wavelen = 2 * math.pi / freq
        orig = rs["original_max_position_embeddings"]
        if wavelen < orig / rs["high_freq_factor"]:
            out.append(freq)
        elif wavelen > orig / rs["low_freq_factor"]:
            out.append(freq / rs["factor"])
        else:
            smooth = (orig / wavelen - rs["low_freq_factor"]) / (rs["high_freq_factor"] - rs["low_freq_factor"])
            out.append((1 - smooth) * freq / rs["factor"] + smooth * freq)
    return torch.tensor(out, dtype=F64)


def cached_forward(s, w, tokens):
    """Token by token with a key/value cache, as generate decodes: logits [T, V]."""
    cache, rows = [([], []) for _ in range(s.L)], []
    for t, token in enumerate(tokens.tolist()):
        x = embed(s, w, torch.tensor([token]))
        for l in range(s.L):
            x = layer(s, w, l, x, torch.tensor([t]), cache[l])
        rows.append(head(s, w, x)[0])
    return torch.stack(rows)


def cmd_selftest(args):
    worst = {}

    def note(what, value, limit):
        worst[what] = max(worst.get(what, 0.0), value)
        if value > limit:
            fail(f"selftest: {what}: {value:.3g} > {limit}")

    g = torch.Generator().manual_seed(0)
    for NH, NKV, T, D, window in ((4, 2, 7, 8, None), (6, 3, 9, 4, 3), (4, 1, 5, 6, None), (2, 2, 6, 8, 2)):
        q, k, v = (torch.randn(n, T, D, generator=g, dtype=F64) for n in (NH, NKV, NKV))
        s = type("S", (), {"window": [window]})()
        mask = visible(s, 0, torch.arange(T), torch.arange(T))
        ours = attention(q, k, v, mask)
        note("attention vs fused attention", (ours - fused_attention(q, k, v, mask)).abs().max().item(), 1e-12)
        note("attention vs loop over visible keys", (ours - loop_attention(q, k, v, mask)).abs().max().item(), 1e-12)
        if window is None:
            causal = torch.ones(T, T, dtype=torch.bool).tril()
            note("mask vs tril", float((mask != causal).sum()), 0)
    for D, theta in ((8, 10000.0), (16, 1e6), (6, 500000.0)):
        s = Shape(dict(model_type="llama", num_hidden_layers=1, hidden_size=4 * D, intermediate_size=8,
                       num_attention_heads=4, vocab_size=10, rope_theta=theta, max_position_embeddings=64))
        x = torch.randn(3, 11, D, generator=g, dtype=F64)
        positions = torch.arange(11) + 5
        note("rotate_half rope vs complex rotation", (rope(x, positions, inv_freq(s))
                                                      - complex_rope(x, positions, inv_freq(s))).abs().max().item(), 1e-12)
        s.rope_scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": llama3_original_positions(D, theta, 128)}
        note("llama3 inv_freq vs scalar formula", (inv_freq(s) - scalar_llama3(s)).abs().max().item(), 1e-15)
    c = make_config("llama", 2, 4, 2, 32, 48, 500, 128, None, False, "llama3", None, "F32")
    s = Shape(c)
    base = s.theta ** (-torch.arange(0, s.D, 2, dtype=F64) / s.D)
    ratio = (inv_freq(s) / base).tolist()
    print(f"selftest: llama3 scaling of the default make (D {s.D}, original positions "
          f"{c['rope_scaling']['original_max_position_embeddings']}): inv_freq x {[round(r, 4) for r in ratio]}")
    if not (ratio[0] == 1 and ratio[-1] == 1 / 8 and any(1 / 8 < r < 1 for r in ratio)):
        fail("selftest: llama3 scaling does not keep, blend and divide frequencies")
    tokens = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8])
    gaps = []
    rounding = {"F32": lambda t: t, "BF16": lambda t: t.to(torch.bfloat16).float(), "F16": lambda t: t.half().float()}
    for arch in ARCHS:
        for tied in (False, True):
            variants = [("", 1, "F32", None, None, None), (" --head-dim 12", 1, "F32", 12, None, None),
                        (" --dtype BF16 --seed 2", 2, "BF16", None, None, None),
                        (" --dtype F16 --seed 4", 4, "F16", None, None, None)]
            if arch == "phi3":  # Phi3Config has no head_dim
                variants = [v for v in variants if v[3] is None]
            if arch == "gemma3_text":
                variants.append((" --rope-scaling linear", 1, "F32", None, "linear", None))
            if arch == "llama":
                variants.append((" --rope-scaling llama3", 1, "F32", None, "llama3", None))
            if arch == "mistral":
                variants.append((" --sliding-window 4", 1, "F32", None, None, 4))
            for flags, seed, dtype, head_dim, rope_scaling, window in variants:
                c = make_config(arch, 2, 4, 2, 32, 48, 500, 128, head_dim, tied, rope_scaling, window, dtype)
                s = Shape(c)
                w = as_f64({k: rounding[dtype](v) for k, v in random_weights(s, seed).items()})
                full = forward(s, w, tokens)
                note("full forward vs key/value cache", (full - cached_forward(s, w, tokens)).abs().max().item(), 1e-10)
                changed = tokens.clone()
                changed[-1] = 9
                note("causality (last token changed)", (full[:-1] - forward(s, w, changed)[:-1]).abs().max().item(), 1e-12)
                w32 = {k: v.to(torch.float32) for k, v in w.items()}
                note("float32 vs float64 forward", (forward(s, w32, tokens) - full).abs().max().item(), 1e-4)
                out, step_gaps = greedy(s, w, tokens)
                gap = min(step_gaps)
                which = f"make --arch {arch}{' --tied' if tied else ''}{flags}"
                gaps.append((gap, which))
                print(f"selftest: {which:45s} logit scale {full.abs().max().item():5.2f}, greedy {len(set(out)):2d} "
                      f"distinct tokens, smallest top-2 gap {gap:.3g}")
    for what, value in worst.items():
        print(f"selftest: {what}: max difference {value:.3g}")
    near = [f"{which} ({gap:.3g})" for gap, which in gaps if gap < 1e-2]
    print(f"selftest: greedy top-2 logit gap above 1e-2 in {len(gaps) - len(near)} of {len(gaps)} made models"
          + (f"; below: {', '.join(near)}" if near else ""))
    gap, which = min(gaps)
    fp32 = worst["float32 vs float64 forward"]
    print(f"selftest: smallest greedy top-2 logit gap {gap:.3g} ({which}), {gap / fp32:.0f} times the float32 error")
    if gap < 100 * fp32:  # a float32 implementation could decode another token
        fail("selftest: greedy decoding of a made model comes near a tie")
    print("selftest: ok")
