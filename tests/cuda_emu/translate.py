#!/usr/bin/env python3
"""Turns a .cu file, or a .cuh header the .cu files include, into C++ that g++ compiles against
the CUDA emulator (prelude.hpp). A header's translation is written next to the .cu files' (same
name), so that their #include "x.cuh" finds it first: a launch written in a header is
translated too.

Three rewrites, all keeping every line where it was (errors point into the .cu file):
  kernel<<<grid, block[, shared[, stream]]>>>(args);
    -> ::cuda_emu::Launch("kernel", grid, block[, shared[, stream]])
           .run([](auto... a) { kernel(a...); }, args);
  extern __shared__ T name[];  ->  T* const name = ::cuda_emu::dynamic_shared<T>();
  __shared__ T name[N];  (inside a function)
    -> __shared__ T name[N]; ::cuda_emu::poison_static_shared(&name, sizeof(name));
The lambda lets the kernel's template arguments be deduced from the arguments, as nvcc does.
A static __shared__ array is a function-local static here, zero once and then holding what the
last block left; on a GPU it holds garbage. poison_static_shared fills it with all-ones bytes
(NaN) when a block's first thread reaches it, so a read of shared memory nobody wrote shows.
Usage: translate.py input.cu output.cpp, or translate.py input.cuh output.cuh
"""
import re
import sys

DYNAMIC_SHARED = re.compile(r"extern\s+__shared__\s+([\w:<> ]+?)\s+(\w+)\s*\[\s*\]\s*;")
# An indented (function-local) static __shared__ declaration of one variable; namespace-scope
# ones (column 0) are left alone, since a statement cannot follow them there.
STATIC_SHARED = re.compile(
    r"^([ \t]+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?[\w:<>, ]+?\s+(\w+)\s*"
    r"(?:\[[^\]\n]*\]\s*)*;)",
    re.MULTILINE)
POISON_DECLARATION = ("namespace cuda_emu { void poison_static_shared(void* address, "
                      "std::size_t bytes); }\n")


def callee_start(text, end):
    """Start of the kernel expression that ends at text[end] (just before '<<<')."""
    i = end
    while i > 0:
        c = text[i - 1]
        if c.isalnum() or c in "_:":
            i -= 1
        elif c == ">":  # template arguments: skip to the matching '<'
            depth = 0
            while i > 0:
                i -= 1
                if text[i] == ">":
                    depth += 1
                elif text[i] == "<":
                    depth -= 1
                    if depth == 0:
                        break
        elif c.isspace():  # a line break clang-format put between template arguments and <<<
            j = i - 1
            while j > 0 and text[j - 1].isspace():
                j -= 1
            if j == 0 or text[j - 1] != ">":
                break
            i = j
        else:
            break
    return i


def matching_paren(text, open_index):
    depth = 0
    for i in range(open_index, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise SystemExit(f"translate.py: unbalanced parentheses after index {open_index}")


def translate(text):
    out = []
    pos = 0
    while True:
        launch = text.find("<<<", pos)
        if launch < 0:
            out.append(text[pos:])
            break
        start = callee_start(text, launch)
        callee = text[start:launch].strip()
        close = text.find(">>>", launch)
        config = text[launch + 3:close]
        paren = text.find("(", close)
        end = matching_paren(text, paren)
        args = text[paren + 1:end]
        name = re.sub(r"\s+", " ", callee)
        lambda_ = f"[](auto... at_emu_args) {{ {callee}(at_emu_args...); }}"
        separator = ", " if args.strip() else ""
        out.append(text[pos:start])
        out.append("\n" * text[start:launch].count("\n"))  # keeps the lines of a wrapped launch
        out.append(f'::cuda_emu::Launch("{name}", {config}).run({lambda_}{separator}{args})')
        pos = end + 1
    text = DYNAMIC_SHARED.sub(
        lambda m: f"{m.group(1)}* const {m.group(2)} = ::cuda_emu::dynamic_shared<{m.group(1)}>();",
        "".join(out))
    return STATIC_SHARED.sub(
        lambda m: f"{m.group(1)} ::cuda_emu::poison_static_shared(&{m.group(2)}, "
        f"sizeof({m.group(2)}));", text)


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    translated = POISON_DECLARATION + f'#line 1 "{source}"\n' + translate(text)
    with open(target, "w", encoding="utf-8") as f:
        f.write(translated)


if __name__ == "__main__":
    main()
