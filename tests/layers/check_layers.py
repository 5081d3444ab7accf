#!/usr/bin/env python3
"""The layering as a fact: every `#include "autotrain/<layer>/..."` in src/ and include/ must name
a layer that the including layer links (its DEPS in CMakeLists.txt, followed transitively), and
every layer a layer declares directly must be included by it somewhere. The layer order of
CMakeLists.txt must be the order of the table in docs/architecture.md.

Usage: check_layers.py <source dir>. Exits 1 listing every violation."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
failures = []

# autotrain_layer(<name> DEPS a b c ...), possibly over several lines.
cmake = (root / "CMakeLists.txt").read_text()
layers = {}
for name, deps in re.findall(r"autotrain_layer\((\w+)\s+DEPS([^)]*)\)", cmake):
    layers[name] = [d[len("autotrain_"):] for d in deps.split() if d.startswith("autotrain_")]
order = list(layers)
internal = {name: [d for d in deps if d in layers] for name, deps in layers.items()}

for name, deps in internal.items():
    for dep in deps:
        if order.index(dep) >= order.index(name):
            failures.append(f"CMakeLists.txt: layer {name} links {dep}, which is not below it")


def reachable(name):
    seen, todo = set(), list(internal[name])
    while todo:
        dep = todo.pop()
        if dep not in seen:
            seen.add(dep)
            todo.extend(internal[dep])
    return seen


include_re = re.compile(r'^\s*#\s*include\s+"autotrain/(\w+)/', re.M)
used = {name: set() for name in layers}
for name in layers:
    allowed = reachable(name) | {name}
    for top in (root / "src" / name, root / "include" / "autotrain" / name):
        for path in sorted(top.rglob("*")):
            if path.suffix not in {".hpp", ".cpp", ".cu", ".cuh"}:
                continue
            text = path.read_text(errors="replace")
            for match in include_re.finditer(text):
                target = match.group(1)
                line = text.count("\n", 0, match.start()) + 1
                where = f"{path.relative_to(root)}:{line}"
                if target not in layers:
                    failures.append(f"{where}: includes autotrain/{target}/, which is no layer")
                elif target not in allowed:
                    failures.append(
                        f"{where}: layer {name} includes autotrain/{target}/ but does not link "
                        f"it (it links {', '.join(sorted(allowed - {name})) or 'no layer'}; "
                        f"the order is {' < '.join(order)})")
                else:
                    used[name].add(target)

for name, deps in internal.items():
    for dep in deps:
        if dep not in used[name]:
            failures.append(f"CMakeLists.txt: layer {name} declares {dep} but includes none of "
                            f"its headers (drop it from DEPS)")

arch = (root / "docs" / "architecture.md").read_text()
documented = [m for m in re.findall(r"^\| `(\w+)`\s*\|", arch, re.M) if m in layers]
if documented != order:
    failures.append(f"docs/architecture.md: the layer table reads {' < '.join(documented)}, "
                    f"CMakeLists.txt {' < '.join(order)}")

for failure in failures:
    print(failure)
if failures:
    sys.exit(1)
print(f"{len(order)} layers, includes follow the links: {' < '.join(order)}")
