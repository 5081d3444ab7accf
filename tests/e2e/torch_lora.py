#!/usr/bin/env python3
"""LoRA as PEFT defines it (LoraConfig, LoraModel), in PyTorch over the independent references
torch_llama.py and torch_gpt2.py, for checking autotrain's adapters against.

  make-adapter BASE OUT [--r R] [--alpha A] [--targets all-linear|NAME,NAME] [--seed S]
      A random PEFT adapter folder for the model folder BASE: adapter_config.json (peft_type LORA,
      base_model_name_or_path BASE, fan_in_fan_out for GPT-2's Conv1D) and
      adapter_model.safetensors with PEFT's names, base_model.model.<module>.lora_A.weight
      [r, in] and .lora_B.weight [out, r]; both nonzero, so every gradient is.
  check ADAPTER PROBE TOKENS [int4|int4-dq|int8]
      The adapted model against what hf_probe wrote into PROBE for the adapter folder: logits and
      loss (1e-4), the gradient of every lora_A and lora_B (autograd, 1e-4 of its largest element)
      and 20 greedy tokens. With a quantization (QLoRA), the base's block weights first go through
      bitsandbytes' NF4 (int4-dq: with double quantization) or a per-row int8, quantized and
      dequantized by tests/kernels/torch_quantize.py (written from bitsandbytes' definition).
  merged ADAPTER MERGED TOLERANCE
      The model folder MERGED holds the base model with each adapted weight W replaced by PEFT's
      merge, W + lora_alpha / r · (B @ A) (transposed for fan_in_fan_out), and every other tensor
      as the base has it, within TOLERANCE.

PEFT's LoRA layer computes y = base(x) + lora_B(lora_A(dropout(x))) · lora_alpha / r; the Llama
family's linears are run that way here (dropout 0, the adapters never merged). GPT-2's Conv1D
weights take PEFT's delta weight, transpose(B @ A) · lora_alpha / r, added to W.
"""
import json
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import torch_gpt2  # noqa: E402
import torch_llama  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels"))
import torch_quantize  # noqa: E402
from hf_folder import (check_logits_and_loss, fail, read_safetensors, read_tensors,  # noqa: E402
                       read_tokens, write_safetensors)

F64 = torch.float64
PREFIX = "base_model.model."


def is_gpt2(config):
    return config.get("model_type") == "gpt2"


def linear_weights(config, tensors):
    """{module: weight} of the blocks' 2-D weights, by Hugging Face module path."""
    out = {}
    for name, t in tensors.items():
        block = name.startswith("transformer.h.") or name.startswith("h.") or name.startswith("model.layers.")
        if block and name.endswith(".weight") and t.dim() == 2:
            module = name[:-len(".weight")]
            if is_gpt2(config) and not module.startswith("transformer."):
                module = "transformer." + module
            out[module] = t
    return out


def targeted(module, targets):
    return targets == ["all-linear"] or any(module == t or module.endswith("." + t) for t in targets)


def in_out(config, w):
    return (w.shape[0], w.shape[1]) if is_gpt2(config) else (w.shape[1], w.shape[0])


def cmd_make_adapter(args):
    base, out = args[0], args[1]
    opts = dict(zip(args[2::2], args[3::2]))
    r, alpha = int(opts.get("--r", 4)), float(opts.get("--alpha", 8))
    targets = opts.get("--targets", "all-linear").split(",")
    g = torch.Generator().manual_seed(int(opts.get("--seed", 1)))
    config, tensors = read_tensors(base)
    adapters, names = {}, set()
    for module, w in linear_weights(config, tensors).items():
        if not targeted(module, targets):
            continue
        fan_in, fan_out = in_out(config, w)
        adapters[PREFIX + module + ".lora_A.weight"] = 0.3 * torch.randn(r, fan_in, generator=g)
        adapters[PREFIX + module + ".lora_B.weight"] = 0.3 * torch.randn(fan_out, r, generator=g)
        names.add(module.rsplit(".", 1)[1])
    if not adapters:
        fail(f"{targets} name no linear layer of {base}")
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "adapter_model.safetensors"), adapters, "F32")
    json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": alpha,
               "lora_dropout": 0.0, "target_modules": sorted(names) if targets == ["all-linear"] else targets,
               "fan_in_fan_out": is_gpt2(config), "bias": "none", "modules_to_save": None,
               "use_rslora": False, "use_dora": False, "base_model_name_or_path": os.path.abspath(base)},
              open(os.path.join(out, "adapter_config.json"), "w"), indent=2)
    print(f"make-adapter: {len(adapters) // 2} adapted weights of rank {r} in {out}")


def read_adapter(folder):
    config = json.load(open(os.path.join(folder, "adapter_config.json")))
    if config.get("peft_type") != "LORA":
        fail(f"{folder}/adapter_config.json: peft_type {config.get('peft_type')!r}, expected LORA")
    tensors = read_safetensors(os.path.join(folder, "adapter_model.safetensors"))
    return config, config["lora_alpha"] / config["r"], tensors


def delta(adapter_config, scale, a, b):
    """PEFT's get_delta_weight: transpose(B @ A, fan_in_fan_out) · scaling."""
    d = (b @ a) * scale
    return d.T if adapter_config.get("fan_in_fan_out") else d


def adapted_forward(base_config, base_w, adapter_config, scale, lora):
    """A forward(tokens) -> logits of the adapted model (float64), and its greedy decoder."""
    if is_gpt2(base_config):
        def forward(tokens):
            w = dict(base_w)
            for name in lora:
                if name.endswith(".lora_A.weight"):
                    module = name[len(PREFIX):-len(".lora_A.weight")]
                    short = module[len("transformer."):] + ".weight"
                    w[short] = w[short] + delta(adapter_config, scale, lora[name],
                                                lora[name.replace("lora_A", "lora_B")])
            return torch_gpt2.forward(base_config, w, tokens)
        return forward

    s = torch_llama.Shape(base_config)
    plain_linear = torch_llama.linear

    def lora_linear(x, w, p):  # PEFT's LoRA Linear: base(x) + lora_B(lora_A(x)) · scaling
        y = plain_linear(x, w, p)
        a = lora.get(PREFIX + p + ".lora_A.weight")
        if a is None:
            return y
        return y + (x @ a.T) @ lora[PREFIX + p + ".lora_B.weight"].T * scale
    torch_llama.linear = lora_linear
    return lambda tokens: torch_llama.forward(s, base_w, tokens)


def quantized(name, w, quantization):
    """A block's linear weight as a QLoRA base holds it (the others as they are)."""
    if quantization is None or ".layers." not in name or w.dim() != 2:
        return w
    w = w.detach().to(torch.float32)
    if quantization == "int8":
        return torch_quantize.quantize_int8(w)[1].view(w.shape)
    return torch_quantize.quantize_nf4(w, quantization == "int4-dq")[1].view(w.shape)


def load(adapter, quantization=None):
    adapter_config, scale, lora32 = read_adapter(adapter)
    base = adapter_config["base_model_name_or_path"]
    if is_gpt2(json.load(open(os.path.join(base, "config.json")))):
        base_config, w = torch_gpt2.read_folder(base)
    else:
        base_config, _, w = torch_llama.read_folder(base)
    base_w = {k: quantized(k, v, quantization).detach().to(F64) for k, v in w.items()}
    return base_config, base_w, adapter_config, scale, lora32


def cmd_check(args):
    adapter, probe, tokens_path = args[:3]
    quantization = args[3] if len(args) > 3 else None
    base_config, base_w, adapter_config, scale, lora32 = load(adapter, quantization)
    lora = {k: v.to(F64).requires_grad_(True) for k, v in lora32.items()}
    forward = adapted_forward(base_config, base_w, adapter_config, scale, lora)
    tokens = read_tokens(tokens_path)
    T = tokens.shape[0] - 1
    logits = forward(tokens[:T])
    loss = check_logits_and_loss(probe, logits, tokens[1:])
    loss.backward()
    grads = np.fromfile(os.path.join(probe, "grads.f32"), dtype=np.float32)
    layout = json.load(open(os.path.join(probe, "layout.json")))
    if sorted(t["name"] for t in layout) != sorted(lora):
        fail(f"layout.json names {sorted(t['name'] for t in layout)[:4]}..., the adapter {sorted(lora)[:4]}...")
    worst, worst_name = 0.0, ""
    for tensor in layout:
        name, offset = tensor["name"], tensor["offset"]
        ref = lora[name].grad
        if list(tensor["shape"]) != list(ref.shape):
            fail(f"layout.json: {name} {tensor['shape']}, expected {list(ref.shape)}")
        got = torch.from_numpy(grads[offset:offset + ref.numel()].copy()).reshape(ref.shape).to(F64)
        largest = ref.abs().max().item()
        err = (got - ref).abs().max().item() / max(largest, 1e-3)
        if err >= worst:
            worst, worst_name = err, name
        # The adapters' gradients are the merged weight's fp32 gradient projected through A or B
        # (model/lora.hpp): one fp32 product more than a full model's, so twice the full model's
        # 1e-4. Phi-4's fused qkv B reached 1.03e-4 (rms 1.7e-5) with AVX2 kernels; a wrong
        # scale or a lost term is off by O(1).
        if err > 2e-4:
            fail(f"gradient of {name}: max relative difference {err:.3g} (largest |grad| {largest:.3g}, "
                 f"abs err at worst {(got - ref).abs().max().item():.3g}, "
                 f"rms err {((got - ref) ** 2).mean().sqrt().item() / max(largest, 1e-3):.3g})")
    print(f"gradients: {len(layout)} adapter tensors within {worst:.3g} (relative; worst {worst_name})")
    with torch.no_grad():
        seq = tokens.clone()
        for _ in range(20):
            seq = torch.cat([seq, forward(seq)[-1].argmax().view(1)])
    expected = seq[tokens.shape[0]:].tolist()
    got = [int(t) for t in open(os.path.join(probe, "greedy.txt")).read().split()]
    print(f"greedy: ours {got[:8]}..., torch {expected[:8]}...")
    if got != expected:
        fail(f"greedy decoding differs: ours {got}, torch {expected}")
    print("check: ok")


def cmd_merged(args):
    adapter, merged, tolerance = args[0], args[1], float(args[2])
    adapter_config, scale, lora = read_adapter(adapter)
    base_config, base = read_tensors(adapter_config["base_model_name_or_path"])
    _, ours = read_tensors(merged)
    expected = dict(base)
    for module, w in linear_weights(base_config, base).items():
        a = lora.get(PREFIX + module + ".lora_A.weight")
        if a is None:
            continue
        name = module + ".weight" if module + ".weight" in base else module[len("transformer."):] + ".weight"
        expected[name] = w + delta(adapter_config, scale, a, lora[PREFIX + module + ".lora_B.weight"])
    def strip(name):
        return name[len("transformer."):] if name.startswith("transformer.") else name

    def buffer(name):  # what a base folder may hold that no model trains
        return name.endswith(".attn.bias") or name.endswith(".attn.masked_bias") or name == "lm_head.weight"
    expected = {strip(k): v for k, v in expected.items()}
    base = {strip(k): v for k, v in base.items()}
    ours = {strip(k): v for k, v in ours.items()}
    differ = sorted(set(ours) ^ {k for k in expected if k in ours or not buffer(k)})
    if differ:
        fail(f"the merged folder's tensors differ from the base's: {differ}")
    worst = max((ours[k] - expected[k]).abs().max().item() for k in ours)
    changed = max((expected[k] - base[k]).abs().max().item() for k in ours)
    print(f"merged: max |ours - (W + scale·B@A)| = {worst:.3g} over {len(ours)} tensors; "
          f"the adapters moved the weights by up to {changed:.3g}")
    if worst > tolerance:
        fail(f"the merged weights differ by {worst} > {tolerance}")
    if changed == 0:
        fail("the adapters are zero: nothing was trained")


if __name__ == "__main__":
    commands = {"make-adapter": cmd_make_adapter, "check": cmd_check, "merged": cmd_merged}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2:])
