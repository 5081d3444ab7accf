#!/usr/bin/env python3
"""PyTorch's CPU AdamW on the parameter count `autotrain bench adamw --params N` updates, for
docs/benchmarks.md ("CPU AdamW"): torch.optim.AdamW(foreach=True, fused=False where the version
has the argument) over N fp32 parameters in K large tensors (default 1, as ZeRO-Offload's flat
shard), with the same thread count, gradients set once. Prints the per-step time (median, min,
max over R steps after one untimed step, which also allocates the moments) and the bandwidth at
the 28 bytes an element `bench adamw` counts (read p, g, m, v; write p, m, v), and its share of a
triad bandwidth given with --triad-gbps (the one `bench adamw` printed on the same machine).

  scripts/bench-torch-adamw.py N [THREADS] [--tensors K] [--repeat R] [--triad-gbps X]
                               [--single-tensor] [--reuse-memory]

--single-tensor times foreach=False (torch's per-tensor loop) instead. The foreach step allocates
temporaries of N floats (sqrt(v), the denominator) each step, which glibc returns to the kernel
and gets back as fresh pages, each first touch a page fault; --reuse-memory restarts the script
with glibc told to keep freed memory (MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_), so that those
temporaries reuse warm pages: torch's best case on a machine whose page faults are slow.
"""
import inspect
import os
import statistics
import sys
import time

import torch


def parse(argv):
    options = {"--tensors": 1, "--repeat": 10, "--triad-gbps": 0.0}
    single_tensor = "--single-tensor" in argv
    argv = [a for a in argv if a not in ("--single-tensor", "--reuse-memory")]
    positional = []
    i = 0
    while i < len(argv):
        if argv[i] in options and i + 1 < len(argv):
            options[argv[i]] = type(options[argv[i]])(float(argv[i + 1]))
            i += 2
        elif argv[i].startswith("--"):
            sys.exit(f"unknown option {argv[i]} (expected {', '.join(options)}, --single-tensor "
                     "or --reuse-memory)")
        else:
            positional.append(argv[i])
            i += 1
    if not 1 <= len(positional) <= 2:
        sys.exit(__doc__)
    params = int(float(positional[0]))
    threads = int(positional[1]) if len(positional) == 2 else torch.get_num_threads()
    return params, threads, options, single_tensor


def make_parameters(params, tensors):
    """`tensors` leaves of about params / tensors elements each, with gradients."""
    sizes = [params // tensors + (1 if k < params % tensors else 0) for k in range(tensors)]
    leaves = []
    generator = torch.Generator().manual_seed(0)
    for size in sizes:
        leaf = torch.empty(size).uniform_(-0.01, 0.01, generator=generator).requires_grad_()
        leaf.grad = torch.empty(size).uniform_(-5e-4, 5e-4, generator=generator)
        leaves.append(leaf)
    return leaves


def make_optimizer(leaves, single_tensor):
    arguments = {"lr": 1e-4, "weight_decay": 0.01, "foreach": not single_tensor}
    if "fused" in inspect.signature(torch.optim.AdamW).parameters:
        arguments["fused"] = False
    return torch.optim.AdamW(leaves, **arguments), arguments


def reuse_memory_or_continue():
    """With --reuse-memory, starts this script again with glibc's malloc keeping freed memory."""
    keep = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 40)}
    if "--reuse-memory" not in sys.argv or all(os.environ.get(k) == v for k, v in keep.items()):
        return
    os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **keep})


def main():
    reuse_memory_or_continue()
    params, threads, options, single_tensor = parse(sys.argv[1:])
    torch.set_num_threads(threads)
    leaves = make_parameters(params, options["--tensors"])
    optimizer, arguments = make_optimizer(leaves, single_tensor)
    times = []
    with torch.no_grad():
        for step in range(1 + options["--repeat"]):
            start = time.perf_counter()
            optimizer.step()
            if step > 0:
                times.append(time.perf_counter() - start)
    median = statistics.median(times)
    gbps = 28 * params / 1e9
    settings = ", ".join(f"{k}={v}" for k, v in arguments.items() if k in ("foreach", "fused"))
    malloc = "malloc keeps freed memory" if "--reuse-memory" in sys.argv else "default malloc"
    print(f"pytorch {torch.__version__} AdamW({settings}), {threads} thread(s), {malloc}: {params} "
          f"parameters in {len(leaves)} tensor(s), {len(times)} steps after 1 untimed")
    line = (f"step median {1000 * median:.2f} ms  min {1000 * min(times):.2f}  "
            f"max {1000 * max(times):.2f}  GB/s median {gbps / median:.1f}  "
            f"best {gbps / min(times):.1f} (28 bytes/element)")
    if options["--triad-gbps"] > 0:
        line += f"  {100 * gbps / median / options['--triad-gbps']:.0f}% of the triad's"
    print(line)


if __name__ == "__main__":
    main()
