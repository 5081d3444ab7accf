#!/usr/bin/env bash
# Produces the multi-node figures in docs/benchmarks.md on the simulated cluster (as root): 2
# nodes x 1 rank, the link unshaped and then shaped to RATE (tc tbf both ways), each of
# REPEATS rounds running
#  - `bench comm` allreduce (mpi and gloo) from 1 MiB to 64 MiB: busbw;
#  - `bench train` at ZeRO 0 (default and small buckets), 2 and 3: the step, backward, the time the step waited on
#    communication (comm wait), and the allreduce time of the gradients alone, so that
#    exposed = comm wait / that allreduce is the share of the reduction not hidden behind
#    backward.
#   scripts/bench-multinode.sh                  (uses build/release/autotrain)
#   AUTOTRAIN_BIN=build/ci/autotrain RATE=1gbit REPEATS=3 scripts/bench-multinode.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${AUTOTRAIN_BIN:-$root/build/release/autotrain}")
rate=${RATE:-1gbit}
repeats=${REPEATS:-3}
sim=$root/scripts/sim-cluster.sh
[ "$(id -u)" = 0 ] || { echo "bench-multinode: needs root (network namespaces)" >&2; exit 1; }
export AUTOTRAIN_SIM_NAME=atbm AUTOTRAIN_SIM_NET=10.207.7
work=$(mktemp -d)
trap '"$sim" down > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
cd "$work"
"$sim" up 2 > /dev/null
read -ra cluster <<< "$("$sim" mpirun-args)"  # the same on every bring-up
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none "${cluster[@]}"
  --host node1,node2 -np 2)
# About 6.8M parameters (26 MiB of fp32 gradients), the blocks most of them as in real language
# models: backward takes longer than their allreduce at 1 Gbit/s on one core per rank.
model=(--config "$root/tests/e2e/configs/tiny.yaml" --n-layer 8 --n-head 4 --n-embd 256
  --vocab-size 2048 --n-positions 128 --block-size 128 --batch-size 8 --gradient-accumulation 1
  --threads 1 --eval-strategy no)

comm_table() {
  local backend
  for backend in mpi gloo; do
    echo "$backend:"
    "${mpirun[@]}" "$bin" bench comm --backend "$backend" --op allreduce --min-bytes 1M \
      --max-bytes 64M --factor 4 --iters 10 --warmup-iters 3 | grep -E "^ +[0-9]|^# Avg"
  done
}

# train_row LINK STAGE[:BUCKET]: one row; BUCKET is reduce_bucket_size (elements).
train_row() {
  local link=$1 stage=${2%:*} bucket=-1 json grad_bytes allreduce
  [[ $2 == *:* ]] && bucket=${2#*:}
  json=$("${mpirun[@]}" "$bin" bench train "${model[@]}" --zero-stage "$stage" --steps 5 \
    --warmup-steps 2 --reduce-bucket-size "$bucket" --no-profile --json 2> /dev/null)
  grad_bytes=$(python3 -c 'import json,sys; print(4 * json.load(sys.stdin)["num_parameters"])' <<< "$json")
  # The same bytes in one allreduce, alone: what the step would wait if nothing overlapped.
  allreduce=$("${mpirun[@]}" "$bin" bench comm --backend mpi --op allreduce --min-bytes "$grad_bytes" \
    --max-bytes "$grad_bytes" --iters 5 --warmup-iters 2 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["in_place"]["time_us"])')
  BENCH_JSON=$json python3 - "$link" "$2" "$allreduce" << 'PY'
import json, os, sys
link, stage, allreduce_us = sys.argv[1], sys.argv[2].replace(":", ", bucket "), float(sys.argv[3])
d = json.loads(os.environ["BENCH_JSON"])
wait, bwd, step = d["comm_wait_s"] * 1e3, d["backward_s"] * 1e3, d["step_mean_s"] * 1e3
allreduce = allreduce_us / 1e3
print(f"| {link} | {stage} | {step:.0f} | {bwd:.0f} | {wait:.0f} | {allreduce:.0f} | "
      f"{100 * wait / allreduce:.0f}% | {d['tokens_per_s']:.0f} |")
PY
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname): $(nproc) cores, $(uptime | sed 's/.*load/load/')"
for round in $(seq "$repeats"); do
  for link in unshaped "$rate"; do
    "$sim" down > /dev/null
    "$sim" up 2 > /dev/null
    [ "$link" = unshaped ] || "$sim" shape 2 "$rate"
    echo "## round $round, link $link: bench comm allreduce"
    comm_table
    echo "## round $round, link $link: bench train"
    echo "| link | ZeRO | step ms | backward ms | comm wait ms | allreduce of the grads ms | exposed | tokens/s |"
    # ZeRO 0 with its default bucket (16Mi elements: one bucket for all the blocks of this
    # model) and with 800k-element buckets (about one block each).
    for stage in 0 0:800000 2 3; do train_row "$link" "$stage"; done
  done
done
echo "# finished $(date -u +%H:%MZ), $(uptime | sed 's/.*load/load/')"
