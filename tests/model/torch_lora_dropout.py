#!/usr/bin/env python3
"""One PEFT LoRA linear with dropout in PyTorch (float64), for tests/model/lora_dropout_test.cpp.

  torch_lora_dropout.py DIR

DIR holds case.json ({"rows", "in", "out", "r", "scale", "p"}) and float64 little-endian files
x [rows, in], weight [out, in], bias [out], lora_A [r, in], lora_B [out, r], mask [rows, in]
(1 kept, 0 dropped: the mask autotrain drew) and dy [rows, out]. Writes y [rows, out] and the
gradients dx, dA, dB of sum(y * dy) into DIR, as PEFT's Linear computes them in training:
    y = x @ W.T + b + lora_B(lora_A(dropout(x))) * scale,  dropout(x) = x * mask / (1 - p)
"""
import json
import os
import sys

import numpy as np
import torch

F64 = torch.float64


def main():
    folder = sys.argv[1]
    case = json.load(open(os.path.join(folder, "case.json")))

    def read(name, shape):
        data = np.fromfile(os.path.join(folder, name), dtype="<f8").reshape(shape)
        return torch.from_numpy(data).to(F64)

    rows, fan_in, fan_out, r = case["rows"], case["in"], case["out"], case["r"]
    x = read("x", (rows, fan_in)).requires_grad_(True)
    w, b = read("weight", (fan_out, fan_in)), read("bias", (fan_out,))
    a = read("lora_A", (r, fan_in)).requires_grad_(True)
    bb = read("lora_B", (fan_out, r)).requires_grad_(True)
    mask, dy = read("mask", (rows, fan_in)), read("dy", (rows, fan_out))
    p = case["p"]
    dropped = x * mask / (1 - p)  # torch.nn.Dropout in training, with this mask
    y = torch.nn.functional.linear(x, w, b) + (dropped @ a.T) @ bb.T * case["scale"]
    (y * dy).sum().backward()
    for name, tensor in (("y", y), ("dx", x.grad), ("dA", a.grad), ("dB", bb.grad)):
        tensor.detach().numpy().astype("<f8").tofile(os.path.join(folder, name))
    print(f"torch_lora_dropout: {rows} rows, in {fan_in}, out {fan_out}, r {r}, p {p}")


if __name__ == "__main__":
    main()
