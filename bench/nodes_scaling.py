#!/usr/bin/env python3
"""The metadata and I/O workloads on 1, 2 and 4 simulated nodes
(docs/benchmarks.md, "Across nodes"): for each node count, one
`sluice bench` invocation of ensemble, create-once, ior-shared (file per
process) and amr-ckpt with `-p WORKLOAD.nodes=K`, so that plain and sluice
run side by side in every round; then one table per workload with the
medians [min-max] of each node count.

    sluice testbed up --nodes 4 --delay-us 100          # root
    python3 bench/nodes_scaling.py --target /mnt/sluice-pfs/bench --nodes 1,2,4 --rounds 5 \\
        --json bench/results/nodes-scaling-testbed-delay100us-REV.json

The counts (metadata requests each node's MooseFS client received, fs-side
calls) carry over to a cluster; the times do not: every node, the MooseFS
daemons and the clients share this machine's cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# workload -> parameters (nodes=K added), the metrics quoted
WORKLOADS = {
    "ensemble": ({"procs": 4, "files": 200, "steps": 5},
                 ("seconds", "wall_seconds", "fs_meta_ops", "client_meta_ops", "client_meta_ops_busiest_node")),
    "create-once": ({"procs": 4, "files": 500},
                    ("seconds", "wall_seconds", "fs_meta_ops", "fs_writes", "client_meta_ops",
                     "client_meta_ops_busiest_node")),
    "ior-shared": ({"layout": "fpp", "per_rank": "2M", "pieces": "4K,64K,1M",
                    "methods": "ompio-indep,romio-indep,acb-ompio-indep,acb-romio-indep"},
                   ("ompio_indep_4K_MiBps", "acb_ompio_indep_4K_MiBps", "ompio_indep_64K_MiBps",
                    "acb_ompio_indep_64K_MiBps", "ompio_indep_1M_MiBps", "acb_ompio_indep_1M_MiBps",
                    "acb_over_best_peer_4K", "acb_over_best_peer_64K", "acb_over_best_peer_1M")),
    "amr-ckpt": ({"boxes": "128,64,16", "methods": "indep,coll,acb-transparent,h5-indep,h5-acb-transparent"},
                 ("indep_s", "coll_s", "acb_transparent_s", "h5_indep_s", "h5_acb_transparent_s",
                  "indep_posix_writes", "acb_transparent_posix_writes", "ratio_indep_over_transparent",
                  "ratio_coll_over_transparent")),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True, help="a directory on the testbed")
    ap.add_argument("--nodes", default="1,2,4", help="node counts, comma-separated")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--json", type=Path, help="where the combined results go")
    ap.add_argument("--sluice", default=f"{sys.executable} -m sluice", help="how to run sluice")
    a = ap.parse_args()
    names = [w for w in a.workloads.split(",") if w]
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload {unknown[0]}; known: {', '.join(WORKLOADS)}")
    counts = [int(k) for k in a.nodes.split(",")]
    runs: dict[str, dict] = {}
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="nodes-scaling-") as tmp:
        for k in counts:
            out = Path(tmp) / f"nodes{k}.json"
            params = [f"-p{w}.{p}={v}" for w in names for p, v in {**WORKLOADS[w][0], "nodes": k}.items()]
            cmd = [*a.sluice.split(), "bench", "--target", a.target, "--rounds", str(a.rounds), "--warmup", "1",
                   "--json", str(out), *params, *names]
            print(f"nodes_scaling: {k} node(s): {' '.join(cmd)}", file=sys.stderr)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            run = json.loads(out.read_text())
            # (its results file was a temporary one: they are kept here, under "runs")
            run["command"] = [f"(runs.{k})" if c == str(out) else c for c in run["command"]]
            runs[str(k)] = run
    tables = {w: table(w, runs) for w in names}
    for w in names:
        print(render(w, tables[w]))
    if a.json:
        a.json.write_text(json.dumps({"command": sys.argv, "seconds": time.time() - t0, "tables": tables,
                                      "runs": runs}, indent=1) + "\n")
        print(f"results: {a.json}", file=sys.stderr)
    return 0


def table(workload: str, runs: dict[str, dict]) -> list[dict]:
    """Rows: metric, variant, and per node count the median [min, max]."""
    rows = []
    for metric in WORKLOADS[workload][1]:
        for variant in next(iter(runs.values()))["workloads"][workload]["variants"]:
            cells = {}
            for k, run in runs.items():
                s = run["workloads"][workload]["summary"].get(variant, {}).get(metric)
                if s and s.get("median") is not None:
                    cells[k] = [s["median"], s["min"], s["max"]]
            if cells:
                rows.append({"metric": metric, "variant": variant, "nodes": cells})
    return rows


def render(workload: str, rows: list[dict]) -> str:
    counts = list(dict.fromkeys(k for r in rows for k in r["nodes"]))
    lines = [f"\n### {workload}\n", "| metric | variant | " + " | ".join(f"{k} node(s)" for k in counts) + " |",
             "| --- | --- |" + " ---: |" * len(counts)]
    for r in rows:
        cells = []
        for k in counts:
            c = r["nodes"].get(k)
            cells.append(f"{fmt(c[0])} [{fmt(c[1])}–{fmt(c[2])}]" if c else "-")
        lines.append(f"| {r['metric']} | {r['variant']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


if __name__ == "__main__":
    sys.exit(main())
