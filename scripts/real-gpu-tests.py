#!/usr/bin/env python3
"""The GPU tests that only a real GPU can confirm: those marked `// Real GPU only: <why>` in
tests/ (the CUDA emulator passes them against its own model of cuBLASLt, NCCL, the tensor cores'
fragment layouts or stream concurrency). Prints one line per test binary, `<binary> <gtest
filter>`, for scripts/gpu-check.sh, which runs them before anything else; with --list, one line
per test and why.

Usage: real-gpu-tests.py [--list] [source dir]"""
import pathlib
import re
import sys

args = [a for a in sys.argv[1:] if a != "--list"]
listing = "--list" in sys.argv[1:]
root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent)
test_re = re.compile(r"^(TYPED_TEST|TEST_F|TEST_P|TEST)\((\w+),\s*(\w+)\)")
filters = {}
for path in sorted((root / "tests").rglob("*_test.cpp")):
    layer = path.relative_to(root / "tests").parts[0]
    binary = ("mpitest_" if path.name.endswith("_mpi_test.cpp") else "test_") + layer
    why = None
    for line in path.read_text().splitlines():
        if line.startswith("// Real GPU only:"):
            why = line[len("// Real GPU only:"):].strip()
            continue
        match = test_re.match(line)
        if match and why is not None:
            kind, suite, name = match.groups()
            # Typed and parameterised tests run as Suite/<type>.Name (Prefix/Suite.Name/<n>).
            pattern = {"TYPED_TEST": f"{suite}/*.{name}", "TEST_P": f"*{suite}.{name}/*"}.get(
                kind, f"{suite}.{name}")
            filters.setdefault(binary, []).append(pattern)
            if listing:
                print(f"{binary:15} {pattern:75} {why}")
            why = None
        elif why is not None and line.startswith("//"):
            why += " " + line[2:].strip()  # a reason continued on the next comment line
        elif why is not None:
            sys.exit(f"{path}: a '// Real GPU only:' mark is not followed by a test")
if not listing:
    for binary, patterns in filters.items():
        print(binary, ":".join(patterns))
