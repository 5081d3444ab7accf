#!/usr/bin/env bash
# `autotrain bench adamw` on a small parameter count: its JSON carries the figures
# docs/benchmarks.md quotes (timings, so only their presence and sanity are checked), the table
# prints its rows (with --8bit the 8-bit AdamW's too), and a bad flag value fails with a message. (Each run starts MPI, a few seconds
# here: one JSON run with a copy, one table without.)
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

for copy in fp16; do
  timeout 120 "$AUTOTRAIN_BIN" bench adamw --params 100003 --threads 1 --repeat 3 --copy "$copy" \
    --triad-mib 4 --json > "adamw_$copy.json"
  python3 - "adamw_$copy.json" "$copy" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
copy = sys.argv[2]
assert doc["benchmark"] == "adamw" and doc["copy"] == copy, doc
assert doc["params"] == 100003 and doc["threads"] == 1 and doc["repeat"] == 3, doc
rows = {row["kernel"]: row for row in doc["kernels"]}
step = rows["adamw_update"]
assert step["elements"] == 100003 and step["bytes_per_element"] == (28 if copy == "none" else 30)
for row in rows.values():
    assert 0 < row["min_s"] <= row["median_s"] <= row["max_s"], row
    assert row["gbps_best"] >= row["gbps_median"] > 0, row
triads = [row for name, row in rows.items() if name.startswith("triad")]
assert len(triads) == 3 and all(row["elements"] == 1 << 20 for row in triads), triads
assert doc["bandwidth_bound_gbps"] == max(row["gbps_best"] for row in triads)
assert abs(doc["fraction_of_bound"] - step["gbps_median"] / doc["bandwidth_bound_gbps"]) < 1e-9
assert doc["fraction_of_bound"] > 0
PY
done

# By default each triad array holds at least 2^26 floats (256 MiB), past most last-level caches.
# --8bit adds the 8-bit AdamW's step (16 bytes an element and the absmaxes) and its ratio.
timeout 120 "$AUTOTRAIN_BIN" bench adamw --params 1000 --threads 1 --repeat 1 --8bit > table.txt
grep -q "bench adamw: 1000 parameters" table.txt && grep -q "^adamw_update  *1000  *28 " table.txt &&
  grep -q "^adamw_8bit_update  *1000  *16 " table.txt &&
  grep -q "adamw_8bit_update's median: [0-9.]*x adamw_update's time, with 2.00 bytes" table.txt &&
  grep -q "^triad, streaming stores *67108864 " table.txt &&
  grep -q "adamw_update.s median: [0-9]*% of the memory bandwidth" table.txt || { cat table.txt; exit 1; }

if "$AUTOTRAIN_BIN" bench adamw --copy int8 > bad.out 2>&1; then
  echo "bench adamw accepted --copy int8"; exit 1
fi
grep -q "is not none, bf16 or fp16" bad.out || { cat bad.out; exit 1; }
echo "bench adamw ok"
