"""bitsandbytes' NF4 (with and without double quantization) and a per-row int8, written in
PyTorch from their definitions, against autotrain's records and dequantized values bit for bit
(tests/kernels/quantize_test.cpp writes the cases into the folder given)."""
import json
import os
import sys

import numpy as np
import torch

NF4 = torch.tensor([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], dtype=torch.float32)


def dynamic_map_signed():
    """create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8)."""
    data = []
    for i in range(7):
        boundaries = torch.linspace(0.1, 1, 2 ** i + 1)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += (10 ** (-6 + i) * means).tolist()
        data += (-10 ** (-6 + i) * means).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) == 256
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


def blockwise_absmax(values, block):
    blocks = (values.numel() + block - 1) // block
    padded = torch.zeros(blocks * block, dtype=torch.float32)
    padded[:values.numel()] = values
    return padded.view(blocks, block), padded.view(blocks, block).abs().max(dim=1).values


def quantize_nf4(x, double_quant):
    n = x.numel()
    blocks, absmax = blockwise_absmax(x.flatten(), 64)
    inverse = torch.where(absmax > 0, 1.0 / absmax, torch.zeros_like(absmax))
    normalised = blocks * inverse[:, None]
    midpoints = ((NF4[:-1].double() + NF4[1:].double()) / 2).float()
    codes = (normalised[..., None] > midpoints).sum(-1)
    codes = torch.where(absmax[:, None] > 0, codes, torch.full_like(codes, 7)).flatten()[:n]
    state = {"codes": codes, "absmax": absmax}
    if double_quant:
        offset = absmax.double().mean().float()
        shifted = absmax - offset
        groups, absmax2 = blockwise_absmax(shifted, 256)
        inverse2 = torch.where(absmax2 > 0, 1.0 / absmax2, torch.zeros_like(absmax2))
        scaled = (groups * inverse2[:, None]).flatten()[:absmax.numel()]
        qmap = dynamic_map_signed()
        absmax_codes = (qmap[None, :] - scaled[:, None]).abs().argmin(dim=1)  # first: the lower
        state.update(absmax_codes=absmax_codes, absmax2=absmax2, offset=offset)
        group_of = torch.arange(absmax.numel()) // 256
        absmax = qmap[absmax_codes] * absmax2[group_of] + offset  # two roundings
    scale = absmax.repeat_interleave(64)[:n]
    return state, NF4[codes] * scale


def quantize_int8(x):
    absmax = x.abs().max(dim=1).values
    factor = torch.where(absmax > 0, 127.0 / absmax, torch.zeros_like(absmax))
    codes = torch.round(x * factor[:, None]).clamp(-127, 127)
    return {"codes": codes.to(torch.int8).flatten(), "absmax": absmax}, \
        (codes * (absmax / 127.0)[:, None]).flatten()


def floats(raw, offset, count):
    return torch.from_numpy(np.frombuffer(raw, dtype=np.float32, count=count, offset=offset).copy())


def check(folder, case):
    name = case["name"]
    rows, cols = case["rows"], case["cols"]
    n = rows * cols
    x = torch.from_numpy(np.fromfile(os.path.join(folder, name + ".x"), dtype=np.float32))
    record = open(os.path.join(folder, name + ".record"), "rb").read()
    ours = torch.from_numpy(np.fromfile(os.path.join(folder, name + ".out"), dtype=np.float32))
    failures = []
    if case["kind"] == "nf4":
        state, values = quantize_nf4(x, case["double_quant"])
        packed = np.frombuffer(record, dtype=np.uint8, count=(n + 1) // 2)
        codes = np.empty(2 * packed.size, dtype=np.int64)
        codes[0::2], codes[1::2] = packed >> 4, packed & 0xF
        if not np.array_equal(codes[:n], state["codes"].numpy()):
            failures.append("nf4 codes")
        blocks = state["absmax"].numel()
        if case["double_quant"]:
            absmax_codes = np.frombuffer(record, dtype=np.uint8, count=blocks, offset=case["scales"])
            if not np.array_equal(absmax_codes, state["absmax_codes"].numpy()):
                failures.append("absmax codes")
            groups = state["absmax2"].numel()
            stored = floats(record, case["scales2"], groups + 1)
            if not torch.equal(stored[:groups], state["absmax2"]):
                failures.append("absmax2")
            if stored[groups] != state["offset"]:
                failures.append(f"offset {stored[groups]} vs {state['offset']}")
        elif not torch.equal(floats(record, case["scales"], blocks), state["absmax"]):
            failures.append("absmax")
    else:
        state, values = quantize_int8(x.view(rows, cols))
        codes = torch.from_numpy(np.frombuffer(record, dtype=np.int8, count=n).copy())
        if not torch.equal(codes, state["codes"]):
            failures.append("int8 codes")
        if not torch.equal(floats(record, case["scales"], rows), state["absmax"]):
            failures.append("row absmax")
    if not torch.equal(ours, values):
        differ = (ours != values).nonzero().flatten()[:5].tolist()
        failures.append(f"dequantized values differ at {differ}")
    print(f"{name} ({case['kind']}{' + double quant' if case['double_quant'] else ''}, "
          f"{rows}x{cols}): {'FAIL ' + ', '.join(failures) if failures else 'equal bit for bit'}")
    return not failures


def main():
    folder = sys.argv[1]
    ours = torch.from_numpy(np.fromfile(os.path.join(folder, "dynamic_map"), dtype=np.float32))
    ok = torch.equal(ours, dynamic_map_signed())
    print("dynamic map:", "equal bit for bit" if ok else "FAIL")
    for case in json.load(open(os.path.join(folder, "cases.json"))):
        ok = check(folder, case) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
