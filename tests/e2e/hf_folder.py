"""Hugging Face model folders for the PyTorch references (torch_gpt2.py, torch_llama.py).

Safetensors are read and written here by hand (8-byte little-endian header length, JSON header,
raw data; F32, BF16 rounded to nearest even, F16), as one model.safetensors or as shards
model-0000k-of-0000N.safetensors with model.safetensors.index.json; a folder can also be written
as a snapshot of a fake offline Hub cache (models--ORG--NAME/snapshots/COMMIT, refs/main).
Also the small things every reference's command line shares: token files, FAIL, same-weights.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": (np.float32, 4), "BF16": (np.uint16, 2), "F16": (np.float16, 2)}
HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def to_bytes(t, dtype):
    a = t.detach().float().numpy().astype(np.float32)
    if dtype == "F32":
        return a.tobytes()
    if dtype == "F16":
        return a.astype(np.float16).tobytes()
    bits = a.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
    return rounded.tobytes()


def write_safetensors(path, tensors, dtype):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = to_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        kind, _ = DTYPES[info["dtype"]]
        a = np.frombuffer(raw, dtype=kind)
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = torch.from_numpy(a.astype(np.float32).reshape(info["shape"]))
    return out


def read_tensors(folder):
    """config.json and every tensor of the folder (float32, by the name in the file)."""
    config = json.load(open(os.path.join(folder, "config.json")))
    index = os.path.join(folder, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(index):
        for shard in sorted(set(json.load(open(index))["weight_map"].values())):
            tensors.update(read_safetensors(os.path.join(folder, shard)))
    else:
        tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    return config, tensors


def folder_for(out, hub):
    """Where make writes: OUT, or with hub = (CACHE, ID) the snapshot of ID in the cache CACHE."""
    if not hub:
        return out
    cache, repo = hub
    base = os.path.join(cache, "models--" + repo.replace("/", "--"))
    os.makedirs(os.path.join(base, "refs"), exist_ok=True)
    open(os.path.join(base, "refs", "main"), "w").write(HUB_COMMIT)
    return os.path.join(base, "snapshots", HUB_COMMIT)


def write_weights(folder, weights, dtype, shards):
    """model.safetensors, or `shards` files (tensor i in shard i mod shards) with the index."""
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), weights, dtype)
        return
    keys = list(weights)
    parts = [keys[i::shards] for i in range(shards)]
    weight_map = {}
    for n, part in enumerate(parts):
        file = f"model-{n + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(folder, file), {k: weights[k] for k in part}, dtype)
        weight_map.update({k: file for k in part})
    json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map},
              open(os.path.join(folder, "model.safetensors.index.json"), "w"), indent=2)


def read_tokens(path):
    return torch.tensor([int(t) for t in open(path).read().split()], dtype=torch.long)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def same_weights(wa, wb, tolerance):
    """The same-weights command on two {name: tensor} dictionaries."""
    if sorted(wa) != sorted(wb):
        fail(f"tensor names differ: {sorted(set(wa) ^ set(wb))}")
    worst = max((wa[k] - wb[k]).abs().max().item() for k in wa)
    print(f"same-weights: max difference {worst:.3g} over {len(wa)} tensors")
    if worst > tolerance:
        fail(f"weights differ by {worst} > {tolerance}")


def check_logits_and_loss(probe, logits, targets):
    """Our logits [T, V] (PROBE/logits.f32) and loss (PROBE/loss.txt) against the reference's, to
    1e-4; returns the reference's loss, for its gradients."""
    T, V = logits.shape
    raw = np.fromfile(os.path.join(probe, "logits.f32"), dtype=np.float32)
    if raw.size != T * V:
        fail(f"logits.f32 holds {raw.size} floats, expected [{T}, {V}]")
    ours = torch.from_numpy(raw.reshape(T, V)).to(logits.dtype)
    diff = (logits.detach() - ours).abs().max().item()
    print(f"logits: max |ours - torch| = {diff:.3g} over [{T}, {V}] (logit scale {logits.abs().max().item():.3g})")
    if diff > 1e-4:
        fail("logits differ by more than 1e-4")
    loss = torch.nn.functional.cross_entropy(logits, targets)
    our_loss = float(open(os.path.join(probe, "loss.txt")).read())
    print(f"loss: ours {our_loss:.6f}, torch {loss.item():.6f}")
    if abs(our_loss - loss.item()) > 1e-4:
        fail("losses differ")
    return loss


# Reward models (a score head: transformers' *ForSequenceClassification with one label).

def read_pairs(path):
    """The sequences of a pairs file (one line of ids each: a chosen one, then its rejected)."""
    sequences = [torch.tensor([int(t) for t in line.split()], dtype=torch.long)
                 for line in open(path) if line.strip()]
    if not sequences or len(sequences) % 2:
        fail(f"{path}: expected pairs of lines (chosen, rejected), got {len(sequences)}")
    return sequences


def last_real_token(tokens, pad_token_id):
    """transformers' sequence classifiers pool the last token that is not pad_token_id (the last
    one when there is no pad token)."""
    if pad_token_id is None:
        return tokens.shape[0] - 1
    real = (tokens != pad_token_id).long()
    return int((torch.arange(tokens.shape[0]) * real).argmax())


def check_reward_probe(probe, rewards, weights, rename=lambda name: name):
    """reward_probe's rewards, pairwise loss −log σ(r_chosen − r_rejected) (mean over pairs) and
    its gradient of every tensor of layout.json (renamed to `weights`' names; rows past the
    reference's, the padded vocabulary, must be 0) against the reference's: rewards [2P] float64,
    computed from `weights` (float64, requires_grad)."""
    ours = torch.tensor(np.loadtxt(os.path.join(probe, "rewards.txt"), ndmin=1), dtype=torch.float64)
    if ours.shape != rewards.shape:
        fail(f"rewards.txt holds {ours.shape[0]} rewards, expected {rewards.shape[0]}")
    diff = (rewards.detach() - ours).abs().max().item()
    scale = rewards.detach().abs().max().item()
    print(f"rewards: max |ours - torch| = {diff:.3g} over {rewards.shape[0]} sequences (scale {scale:.3g}); "
          f"torch {[round(r, 4) for r in rewards.tolist()[:4]]}...")
    if diff > 1e-4 * max(scale, 1.0):
        fail("rewards differ by more than 1e-4 of their scale")
    loss = -torch.nn.functional.logsigmoid(rewards[0::2] - rewards[1::2]).mean()
    our_loss = float(open(os.path.join(probe, "loss.txt")).read())
    print(f"pairwise loss: ours {our_loss:.6f}, torch {loss.item():.6f}")
    if abs(our_loss - loss.item()) > 1e-5 * max(1.0, loss.item()):
        fail("pairwise losses differ")
    loss.backward()
    grads = np.fromfile(os.path.join(probe, "grads.f32"), dtype=np.float32)
    worst, worst_name, seen = 0.0, "", set()
    for tensor in json.load(open(os.path.join(probe, "layout.json"))):
        name, shape, offset = rename(tensor["name"]), list(tensor["shape"]), tensor["offset"]
        if name not in weights:
            fail(f"layout.json has {tensor['name']}, which the reference model has not")
        seen.add(name)
        ref = weights[name].grad
        if ref is None:
            ref = torch.zeros_like(weights[name])
        n, stored = ref.numel(), int(np.prod(shape))
        if shape[1:] != list(ref.shape[1:]) or shape[0] < ref.shape[0]:
            fail(f"layout.json: {name} {shape}, expected {list(ref.shape)}")
        extra = np.abs(grads[offset + n:offset + stored]).max() if stored > n else 0.0
        if extra != 0:
            fail(f"gradient of {name}: rows past {ref.shape[0]} have |gradient| up to {extra:.3g}, not 0")
        got = torch.from_numpy(grads[offset:offset + n].copy()).reshape(ref.shape).to(ref.dtype)
        err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-3)
        if err >= worst:
            worst, worst_name = err, name
        if err > 1e-4:
            fail(f"gradient of {name}: max relative difference {err:.3g}")
    if seen != set(weights):
        fail(f"layout.json lacks {sorted(set(weights) - seen)}")
    print(f"gradients of the pairwise loss: every tensor within {worst:.3g} (relative to its largest "
          f"element; worst {worst_name})")
