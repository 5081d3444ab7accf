"""Reads an autotrain checkpoint with h5py as docs/checkpoint-format.md shows, and checks every
model tensor against the exported model.safetensors (parsed here with numpy alone).

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
        print(f"h5py read {len(exported)} tensors of step {f.attrs['step']}: equal to the export")


if __name__ == "__main__":
    main()
