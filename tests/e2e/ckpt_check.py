"""Checks on metrics.jsonl files for the checkpoint e2e tests.

  ckpt_check.py tail REF RESUMED FIRST_STEP [rel_tol]  every loss RESUMED logged from FIRST_STEP
                                                        on equals REF's at that step (0 = bitwise),
                                                        and RESUMED reaches REF's last step
  ckpt_check.py last FILE                               prints the last step logged
"""
import json
import sys


def losses(path):
    steps = {}
    for line in open(path):
        record = json.loads(line)
        if record.get("loss") is not None:
            steps[record["step"]] = record["loss"]  # a later line for a step (after a resume) wins
    return steps


def main():
    mode = sys.argv[1]
    if mode == "tail":
        ref, resumed = losses(sys.argv[2]), losses(sys.argv[3])
        first = int(sys.argv[4])
        tol = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
        steps = [s for s in sorted(resumed) if s >= first]
        assert steps and steps[0] == first, f"resumed run logged steps {sorted(resumed)}, expected from {first}"
        assert steps[-1] == max(ref), f"resumed run stopped at {steps[-1]}, reference at {max(ref)}"
        for step in steps:
            a, b = ref[step], resumed[step]
            rel = abs(a - b) / max(abs(a), 1e-12)
            assert rel <= tol, f"step {step}: loss {a!r} (reference) vs {b!r} (resumed), relative {rel:.3g} > {tol}"
        print(f"steps {first}..{steps[-1]} agree within {tol}")
    elif mode == "last":
        print(max(losses(sys.argv[2])))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
