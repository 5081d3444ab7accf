"""Checks the JSON of `autotrain env --json` (read from stdin) for a consistent rank mapping.

usage: env_check.py WORLD_SIZE LAUNCHER_SUBSTRING [MASTER_PORT]
Used by tests/e2e/env_mpirun.sh and tests/e2e/slurm_env.sh.
"""
import collections
import json
import sys


def fail(message):
    print(f"env_check: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    world_size = int(sys.argv[1])
    launcher = sys.argv[2]
    master_port = int(sys.argv[3]) if len(sys.argv) > 3 else 29500
    text = sys.stdin.read()
    try:
        report = json.loads(text)
    except json.JSONDecodeError as error:
        fail(f"output is not one JSON document ({error}):\n{text}")

    ranks = report["ranks"]
    if report["world_size"] != world_size or len(ranks) != world_size:
        fail(f"expected {world_size} ranks, got world_size {report['world_size']} and {len(ranks)} rows")
    if [row["rank"] for row in ranks] != list(range(world_size)):
        fail(f"rows are not ranks 0..{world_size - 1}: {[row['rank'] for row in ranks]}")
    if launcher not in report["launcher"]:
        fail(f"launcher '{report['launcher']}' does not mention '{launcher}'")
    if not report["master_addr"] or report["master_port"] != master_port:
        fail(f"bad MASTER_ADDR/PORT {report['master_addr']}:{report['master_port']}")
    if len({row["pid"] for row in ranks}) != world_size:
        fail("two ranks report the same pid")

    by_host = collections.defaultdict(list)
    for row in ranks:
        by_host[row["host"]].append(row)
    node_of_host = {}
    for row in ranks:  # nodes are numbered by their lowest rank
        node_of_host.setdefault(row["host"], len(node_of_host))
    for host, rows in by_host.items():
        if [row["local_rank"] for row in rows] != list(range(len(rows))):
            fail(f"local ranks on {host} are not 0..{len(rows) - 1}: {[r['local_rank'] for r in rows]}")
        for row in rows:
            if row["local_world_size"] != len(rows):
                fail(f"rank {row['rank']}: local_world_size {row['local_world_size']} != {len(rows)}")
            if row["node_rank"] != node_of_host[host]:
                fail(f"rank {row['rank']}: node_rank {row['node_rank']} != {node_of_host[host]}")
            if not row["cpu_affinity"]:
                fail(f"rank {row['rank']}: empty CPU affinity")
    if report["num_nodes"] != len(by_host):
        fail(f"num_nodes {report['num_nodes']} but {len(by_host)} hosts")

    build = report["build"]
    if "MPI" not in build["mpi"] or not build["hdf5"]["parallel"] or not build["gloo"]:
        fail(f"incomplete build section: {build}")
    if report["comm_backend_auto"] not in ("mpi", "nccl"):
        fail(f"comm_backend_auto is {report['comm_backend_auto']}")
    print(f"env_check: {world_size} ranks on {len(by_host)} node(s) via {report['launcher']}: ok")


main()
