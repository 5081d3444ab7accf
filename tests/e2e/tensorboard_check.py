#!/usr/bin/env python3
"""Reads a run's TensorBoard event files with protobuf's own parser (Debian's python3-protobuf,
the messages declared below as TensorFlow's event.proto and summary.proto declare them) and
crcmod's CRC-32C, and compares every scalar with metrics.jsonl.

Usage: tensorboard_check.py PROJECT_DIR EXPECTED_FILES
"""
import glob
import json
import math
import struct
import sys

import crcmod.predefined
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

CRC32C = crcmod.predefined.mkCrcFun("crc-32c")


def masked(data):
    crc = CRC32C(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    """tensorflow.Event with the fields TensorBoard's scalars use."""
    proto = descriptor_pb2.FileDescriptorProto(name="event_check.proto", package="check")
    F = descriptor_pb2.FieldDescriptorProto
    value = proto.message_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL)
    summary = proto.message_type.add(name="Summary")
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".check.Value")
    event = proto.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".check.Summary")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("check.Event"))


def read_events(path, Event):
    data = open(path, "rb").read()
    events, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert header_crc == masked(header), f"{path}: bad length CRC at {pos}"
        payload = data[pos + 12:pos + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert payload_crc == masked(payload), f"{path}: bad payload CRC at {pos}"
        event = Event()
        event.ParseFromString(payload)
        events.append(event)
        pos += 16 + length
    assert events and events[0].file_version == "brain.Event:2", f"{path}: no file_version"
    return events[1:]


def expected_scalars(metrics_path):
    rows = []
    for line in open(metrics_path):
        row = json.loads(line)
        if "event" in row:
            continue
        scalars = {"train/learning_rate": row["lr"]}
        if row["loss"] is not None:
            scalars["train/loss"] = row["loss"]
        if row["step"] > 0:
            scalars["train/grad_norm"] = row["grad_norm"]
            scalars["train/tokens_per_s"] = row["tokens_per_s"]
        if "val_loss" in row:
            scalars["eval/loss"] = row["val_loss"]
        rows.append((row["step"], scalars))
    return rows


def main():
    project, files = sys.argv[1], int(sys.argv[2])
    Event = event_class()
    paths = sorted(glob.glob(f"{project}/runs/events.out.tfevents.*"))
    assert len(paths) == files, f"expected {files} event files, found {paths}"
    got = []
    for path in paths:
        for event in read_events(path, Event):
            got.append((event.step, {v.tag: v.simple_value for v in event.summary.value}))
    want = expected_scalars(f"{project}/metrics.jsonl")
    assert len(got) == len(want), f"{len(got)} scalar events, metrics.jsonl has {len(want)} lines"
    for (step, scalars), (want_step, want_scalars) in zip(got, want):
        assert step == want_step, f"step {step}, metrics.jsonl {want_step}"
        assert scalars.keys() == want_scalars.keys(), f"step {step}: {scalars} vs {want_scalars}"
        for tag, value in want_scalars.items():
            # float32 in the event file; metrics.jsonl rounds tokens/s to 0.1: half of that, plus
            # float32's rounding of the event's value (17554.65 is stored as 17554.650390625)
            slack = 0.05 + abs(value) * 2.0**-23 if tag == "train/tokens_per_s" else 0.0
            assert math.isclose(scalars[tag], value, rel_tol=1e-6, abs_tol=slack + 1e-12), \
                f"step {step} {tag}: {scalars[tag]} vs {value}"
    print(f"tensorboard_check: {len(got)} events in {len(paths)} file(s) equal metrics.jsonl")


if __name__ == "__main__":
    main()
