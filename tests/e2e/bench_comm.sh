#!/usr/bin/env bash
# `autotrain bench comm` under mpirun -np 2 prints nccl-tests' table for every collective on the
# mpi, raw-mpi and gloo backends: out-of-place and in-place columns (time, algbw, busbw, #wrong
# each; "-" where the Communicator interface has no such form), redop "none" and root -1 where
# the collective has none, count per rank's part for reduce_scatter and allgather, and the
# closing "# Avg bus bandwidth" line, the mean busbw over every size and placement timed.
# --check finds 0 wrong elements in either placement. The JSON carries the same figures.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_MPIRUN:?set by ctest}"
read -ra mpirun <<< "$AUTOTRAIN_MPIRUN"  # "mpiexec --oversubscribe ...": a command and its flags
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

bench=(bench comm --backend mpi,raw-mpi,gloo --op all --check --min-bytes 1K --max-bytes 64K
  --factor 8 --iters 2 --warmup-iters 1)
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${bench[@]}" > table.txt
timeout 300 "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" "${bench[@]}" --json > bench.json

python3 - table.txt <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
# Which placements the Communicator interface has: (out-of-place, in-place).
placements = {"allreduce": (False, True), "reduce_scatter": (True, False),
              "allgather": (True, True), "broadcast": (False, True)}
tables, table = [], None
for line in lines:
    title = re.match(r"# (\w+) on ([\w-]+), 2 ranks, (.*)", line)
    if title:
        table = {"op": title[1], "backend": title[2], "title": title[3], "header": [], "rows": [],
                 "footer": []}
        tables.append(table)
    elif line.startswith("#") and not table["rows"]:
        table["header"].append(line)
    elif line.startswith("#"):
        table["footer"].append(line)
    else:
        table["rows"].append(line.split())
assert len(tables) == 12, [(t["backend"], t["op"]) for t in tables]
for t in tables:
    where = (t["backend"], t["op"])
    header = "\n".join(t["header"])
    assert "out-of-place" in header and "in-place" in header, (where, header)
    columns = next(h for h in t["header"] if " size " in h).split()[1:]
    assert columns == ["size", "count", "type", "redop", "root"] + ["time", "algbw", "busbw",
                                                                    "#wrong"] * 2, (where, columns)
    reduction = t["op"] in ("allreduce", "reduce_scatter")
    assert ("redop sum" in t["title"]) == reduction, (where, t["title"])
    assert len(t["rows"]) == 3, (where, t["rows"])
    busbw = []
    for row in t["rows"]:
        assert len(row) == 13, (where, row)
        size, count = int(row[0]), int(row[1])
        assert row[2] == "fp32" and row[3] == ("sum" if reduction else "none"), (where, row)
        assert row[4] == ("0" if t["op"] == "broadcast" else "-1"), (where, row)
        parts = 2 if t["op"] in ("reduce_scatter", "allgather") else 1
        assert count * 4 * parts == size, (where, row)
        for cells, timed in zip((row[5:9], row[9:13]), placements[t["op"]]):
            if not timed:
                assert cells == ["-"] * 4, (where, row)
                continue
            time, algbw, bus, wrong = cells
            assert float(time) > 0 and float(algbw) >= 0 and wrong == "0", (where, row)
            busbw.append(float(bus))
    assert t["footer"][0] == "# Out of bounds values : 0 OK", (where, t["footer"])
    average = re.fullmatch(r"# Avg bus bandwidth    : (\S+) ?", t["footer"][1])
    assert average, (where, t["footer"])
    # The table rounds busbw to 0.01; the average is of the unrounded figures.
    assert abs(float(average[1]) - sum(busbw) / len(busbw)) <= 0.006, (where, average[1], busbw)
print("table ok:", len(tables), "tables")
PY

python3 - bench.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["benchmark"] == "comm" and doc["world_size"] == 2
assert len(doc["tables"]) == 12 and len(doc["results"]) == 36
for table in doc["tables"]:
    rows = [r for r in doc["results"] if (r["backend"], r["op"]) == (table["backend"], table["op"])]
    timed = [r[p] for r in rows for p in ("out_of_place", "in_place") if r[p] is not None]
    assert all(t["wrong"] == 0 for t in timed), rows
    mean = sum(t["busbw_gbps"] for t in timed) / len(timed)
    assert abs(table["avg_busbw_gbps"] - mean) <= 1e-9 * max(mean, 1), (table, mean)
    assert table["wrong"] == 0
for row in doc["results"]:
    op = row["op"]
    assert row["redop"] == ("sum" if op in ("allreduce", "reduce_scatter") else "none"), row
    assert (row["out_of_place"] is None) == (op in ("allreduce", "broadcast")), row
    assert (row["in_place"] is None) == (op == "reduce_scatter"), row
print("json ok")
PY

# Usage errors exit 2 and suggest the flag; a count past MPI's int is refused naming it, before
# any buffer is allocated.
status=0
"${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" bench comm --iter 3 > typo.out 2>&1 || status=$?
[ "$status" -ne 0 ] && grep -q "unknown option '--iter' (did you mean '--iters'?)" typo.out ||
  { echo "exit $status"; cat typo.out; exit 1; }
if "${mpirun[@]}" -np 2 "$AUTOTRAIN_BIN" bench comm --backend raw-mpi --dtype int32 \
  --max-bytes 9G > big.out 2>&1; then
  echo "bench comm --max-bytes 9G on raw-mpi succeeded"; exit 1
fi
grep -q "raw-mpi cannot pass 2415919104 int32 elements" big.out || { cat big.out; exit 1; }
echo "bench_comm: ok"
