"""The timing loop the PyTorch peer benchmarks share (scripts/bench-torch-gpt2.py,
scripts/bench-torch-llama.py): the same full training step `autotrain bench train` times
(forward, the loss, backward, gradient clipping at 1.0, AdamW), on random tokens, with the same
thread count, eager fp32 or under torch.autocast("cpu", dtype=torch.bfloat16) (--autocast:
PyTorch's CPU mixed precision, bf16 matrix products over fp32 weights and optimizer).
Prints tokens/s as the mean over the steps after 2 warm-up steps, and the best step.
"""
import sys
import time

import torch


def parse(argv, default_config):
    """[CONFIG_JSON] [--batch B] [--block T] [--threads N] [--steps S] [--autocast]"""
    options = {"--batch": 8, "--block": 256, "--threads": 2, "--steps": 5}
    autocast = "--autocast" in argv
    argv = [a for a in argv if a != "--autocast"]
    config_path = default_config
    i = 0
    while i < len(argv):
        if argv[i] in options and i + 1 < len(argv):
            options[argv[i]] = int(argv[i + 1])
            i += 2
        elif argv[i].startswith("--"):
            sys.exit(f"unknown option {argv[i]} (expected {', '.join(options)} or --autocast)")
        else:
            config_path = argv[i]
            i += 1
    torch.set_num_threads(options["--threads"])
    return config_path, options, autocast


def run(weights, forward, V, options, autocast, generator):
    """Times steps of forward(tokens [B, T]) -> logits [B, T, V] over `weights` (name -> leaf)."""
    B, T = options["--batch"], options["--block"]
    optimizer = torch.optim.AdamW(weights.values(), lr=3e-4, weight_decay=0.0)
    parameters = sum(t.numel() for t in weights.values())
    times = []
    for step in range(2 + options["--steps"]):
        tokens = torch.randint(0, V, (B, T + 1), generator=generator)
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits = forward(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(B * T, V).float(),
                                                     tokens[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(weights.values(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= 2:
            times.append(time.perf_counter() - start)
    mean = sum(times) / len(times)
    mode = "eager bf16 autocast" if autocast else "eager fp32"
    print(f"pytorch {torch.__version__} {mode}, {options['--threads']} threads: {parameters} parameters, "
          f"B={B} T={T}, {len(times)} steps after 2 warm-up")
    print(f"tokens/s {B * T / mean:.0f}  step mean {1000 * mean:.1f} ms  best {1000 * min(times):.1f} ms  "
          f"final loss {loss.item():.4f}")
