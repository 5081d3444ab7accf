#!/usr/bin/env python3
"""bitsandbytes' blockwise 8-bit AdamW in PyTorch, written from its definition, for
tests/optim/adamw_8bit_test.cpp.

  torch_adamw_8bit.py DIR

DIR holds case.json ({"flat", "steps", "segments": [[begin, end, decay], ...], "lr", "beta1",
"beta2", "eps", "weight_decay", "grad_scale"}) and float32 little-endian files p [flat] (the
weights before the first step) and g [steps, flat] (each step's gradients). The optimizer state is
the segments' elements one after the other, in blocks of 2048; m and v start at 0. Writes into DIR:
  map_signed, map_unsigned [256]   the dynamic maps (create_dynamic_map, 7 exponent bits, 8 bits)
  p [flat]                          the weights after the steps
  m, v [state]                      the moments after the steps, dequantized

Every operation is the fp32 operation autotrain's kernel does, in the same order, so the results
are compared bit for bit:
  grad = g * grad_scale
  m = fma(beta1, m, (1 - beta1) * grad);  v = fma(beta2, v, ((1 - beta2) * grad) * grad)
  p = fma(-lr, fma(wd, p, (m / c1) / (sqrt(v / c2) + eps)), p),  c = 1 - beta^t in double
with m and v dequantized (map[code] * absmax) before and requantized after (absmax the largest |x|
of the updated block; the nearest map entry, a tie to the lower one). An fma is the float64
product (exact) plus the addend in float64, rounded to float32: a single rounding but for the
rare sums that double rounding moves (about 1 in 2^29).
"""
import json
import os
import sys

import numpy as np
import torch

F32 = torch.float32
BLOCK = 2048


def dynamic_map(signed):
    """bitsandbytes' create_dynamic_map(signed, max_exponent_bits=7, total_bits=8), as it builds it:
    torch.linspace in fp32, the means and the scaling in fp32."""
    data = []
    for i in range(7):
        items = 2**i if signed else 2 ** (i + 1)
        boundaries = torch.linspace(0.1, 1, items + 1)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += (10 ** (-6 + i) * means).tolist()
        if signed:
            data += (-10 ** (-6 + i) * means).tolist()
    data += [0.0, 1.0]
    assert len(data) == 256
    data.sort()
    return torch.tensor(data, dtype=F32)


def fma(a, b, c):
    return (a.double() * b.double() + c.double()).to(F32)


def quantize(block, qmap):
    absmax = block.abs().max()
    x = block / (absmax if absmax > 0 else torch.tensor(1.0, dtype=F32))
    low = (torch.searchsorted(qmap, x, right=True) - 1).clamp(min=0)
    high = (low + 1).clamp(max=255)
    codes = torch.where(qmap[high] - x < x - qmap[low], high, low)
    return codes, absmax


def main():
    folder = sys.argv[1]
    case = json.load(open(os.path.join(folder, "case.json")))
    flat, steps = case["flat"], case["steps"]

    def read(name, count):
        return torch.from_numpy(np.fromfile(os.path.join(folder, name), dtype="<f4", count=count))

    def write(name, tensor):
        tensor.numpy().astype("<f4").tofile(os.path.join(folder, name))

    signed, unsigned = dynamic_map(True), dynamic_map(False)
    write("map_signed", signed)
    write("map_unsigned", unsigned)

    p = read("p", flat).clone()
    grads = read("g", steps * flat).reshape(steps, flat)
    segments = case["segments"]
    index = torch.cat([torch.arange(b, e) for b, e, _ in segments])  # state -> flat
    decays = torch.cat([torch.full((e - b,), case["weight_decay"] if d else 0.0, dtype=F32)
                        for b, e, d in segments])
    n = index.numel()
    blocks = (n + BLOCK - 1) // BLOCK
    m_codes = torch.zeros(n, dtype=torch.long)
    v_codes = torch.zeros(n, dtype=torch.long)
    m_absmax = torch.zeros(blocks, dtype=F32)
    v_absmax = torch.zeros(blocks, dtype=F32)

    f32 = lambda value: torch.tensor(value, dtype=F32)
    beta1, beta2, eps = f32(case["beta1"]), f32(case["beta2"]), f32(case["eps"])
    lr, grad_scale = f32(case["lr"]), f32(case["grad_scale"])
    one = f32(1.0)
    for step in range(1, steps + 1):
        c1 = f32(1.0 - float(beta1) ** step)
        c2 = f32(1.0 - float(beta2) ** step)
        for b in range(blocks):
            s = slice(b * BLOCK, min(n, (b + 1) * BLOCK))
            at = index[s]
            m = signed[m_codes[s]] * m_absmax[b]
            v = unsigned[v_codes[s]] * v_absmax[b]
            grad = grads[step - 1][at] * grad_scale
            m = fma(beta1.expand_as(m), m, (one - beta1) * grad)
            v = fma(beta2.expand_as(v), v, ((one - beta2) * grad) * grad)
            update = (m / c1) / (torch.sqrt(v / c2) + eps)
            old = p[at]
            p[at] = fma((-lr).expand_as(old), fma(decays[s], old, update), old)
            m_codes[s], m_absmax[b] = quantize(m, signed)
            v_codes[s], v_absmax[b] = quantize(v, unsigned)

    write("p", p)
    block_of = torch.arange(n) // BLOCK
    write("m", signed[m_codes] * m_absmax[block_of])
    write("v", unsigned[v_codes] * v_absmax[block_of])


if __name__ == "__main__":
    main()
