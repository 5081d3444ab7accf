"""Checks on metrics.jsonl files written by `autotrain train` (used by the e2e tests).

  metrics_check.py same A/metrics.jsonl B/metrics.jsonl [rel_tol]   losses agree step by step
  metrics_check.py falls A/metrics.jsonl                            training and val loss fell
"""
import json
import math
import sys


def losses(path):
    steps = {}
    for line in open(path):
        record = json.loads(line)
        if record.get("loss") is not None:
            steps[record["step"]] = record["loss"]
    return steps


def val_losses(path):
    return [json.loads(line)["val_loss"] for line in open(path) if "val_loss" in json.loads(line)]


def main():
    mode = sys.argv[1]
    if mode == "same":
        a, b = losses(sys.argv[2]), losses(sys.argv[3])
        tol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-5
        assert a.keys() == b.keys() and a, f"different steps logged: {sorted(a)} vs {sorted(b)}"
        for step in sorted(a):
            rel = abs(a[step] - b[step]) / max(abs(a[step]), 1e-12)
            assert rel <= tol, f"step {step}: loss {a[step]} vs {b[step]} (relative {rel:.3g} > {tol})"
        print(f"{len(a)} steps agree within {tol}")
    elif mode == "falls":
        a = losses(sys.argv[2])
        first, last = a[min(a)], a[max(a)]
        assert last < first - 0.5, f"training loss did not fall: {first} -> {last}"
        v = val_losses(sys.argv[2])
        assert len(v) >= 2 and v[-1] < v[0] - 0.5, f"validation loss did not fall: {v}"
        assert all(math.isfinite(x) for x in a.values())
        print(f"loss {first:.3f} -> {last:.3f}, val {v[0]:.3f} -> {v[-1]:.3f}")
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
