"""Reads an autotrain checkpoint with h5py as docs/checkpoint-format.md shows, and checks every
model tensor against the exported model.safetensors (parsed here with numpy alone), and every
dataset's stored checksum against the documented sum-fmix64, recomputed here with numpy: an
implementation independent of src/ckpt/checksum.cpp, from two halves added (as ranks do).

usage: h5py_reads_checkpoint.py CHECKPOINT.h5 MODEL_FOLDER
"""
import json
import struct
import sys

import h5py
import numpy as np


def safetensors(path):
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(length))
        data = f.read()
    header.pop("__metadata__", None)
    tensors = {}
    for name, info in header.items():
        assert info["dtype"] == "F32", info
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"])
    return tensors


def checksum(values, first=0):
    """sum-fmix64 of values at logical indices first.. (docs/checkpoint-format.md), mod 2^64."""
    b = values.view(np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        x = (np.arange(first, first + len(b), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ b
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xFF51AFD7ED558CCD)
        x ^= x >> np.uint64(33)
        x *= np.uint64(0xC4CEB9FE1A85EC53)
        x ^= x >> np.uint64(33)
        return int(x.sum(dtype=np.uint64))


def check_checksums(f):
    names = []
    f.visititems(lambda name, obj: names.append(name)
                 if isinstance(obj, h5py.Dataset) and not name.startswith("run_state/") else None)
    for name in names:
        values = f[name][...]
        half = len(values) // 2
        combined = (checksum(values[:half]) + checksum(values[half:], half)) % 2**64
        assert combined == int(f[name].attrs["checksum"][0]), f"{name}: checksum differs"
    return len(names)


def main():
    checkpoint, folder = sys.argv[1], sys.argv[2]
    exported = safetensors(f"{folder}/model.safetensors")
    with h5py.File(checkpoint, "r") as f:
        assert f.attrs["format"] in (b"autotrain-checkpoint", "autotrain-checkpoint"), f.attrs["format"]
        config = json.loads(f["run_state/json/model_config"][()].decode())
        scaler = json.loads(f["run_state/json/loss_scaler"][()].decode())
        assert scaler == {"enabled": False, "scale": 1.0, "good_steps": 0, "skipped_steps": 0}, scaler
        for name, values in exported.items():
            dataset = f[f"model/{name}"]
            full = dataset[...].reshape(dataset.attrs["shape"])
            if name == "transformer.wte.weight":  # the checkpoint keeps the padded vocabulary rows
                assert full.shape[0] == config["padded_vocab_size"], full.shape
                assert not full[config["vocab_size"]:].any(), "padded vocabulary rows are not zero"
                full = full[: config["vocab_size"]]
            assert full.shape == values.shape, (name, full.shape, values.shape)
            assert np.array_equal(full, values), f"{name} differs between checkpoint and export"
            assert np.array_equal(dataset[3:7], full.reshape(-1)[3:7])  # partial reads work
        checked = check_checksums(f)
        print(f"h5py read {len(exported)} tensors of step {f.attrs['step']}: equal to the export; "
              f"{checked} checksums recomputed")


if __name__ == "__main__":
    main()
