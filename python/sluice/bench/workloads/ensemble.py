"""``ensemble``: many serial instances at once, each opening, appending a
small record to and closing hundreds of small files, step after step, and
reading a little of shared input files (Agro-IBIS on Lustre)."""

from __future__ import annotations

import shutil

from sluice.bench import nodes as bench_nodes
from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, client_meta_count, fs_meta_count, rate
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError

MB = 1e6


class Ensemble(Workload):
    name = "ensemble"
    summary = "N instances each appending small records to hundreds of small files, step after step"
    reads = True
    variants = ("plain", "sluice-stage")
    native_programs = ("sluice-bench-ensemble",)
    params = (
        Param("procs", 4, "instances running at once (one process each)"),
        Param("files", 200, "output files per instance"),
        Param("steps", 5, "steps: each appends one record to every output file"),
        Param("record_min", 100, "smallest record", "size"),
        Param("record_max", 1024, "largest record", "size"),
        Param("inputs", 8, "shared input files, each read a little every step"),
        Param("input_size", 64 << 10, "size of each input file", "size"),
        Param("read_size", 1024, "bytes read from each input per step", "size"),
        Param("nodes", 0, "on N of the testbed's simulated nodes (sluice testbed up --nodes N): procs/N "
              "instances on each, each node through its own client; 0: all here, through the target"),
    )
    metrics = (
        Metric("seconds", "s", "lower", help="all instances, first start to last exit"),
        Metric("opens_per_s", "ops/s", limit="open_close_per_s", help="open+close pairs per second, all instances"),
        Metric("write_MBps", "MB/s", limit="write_MBps", help="record bytes per second"),
        Metric("fs_meta_ops", "ops", "lower",
               help="opens, stats, renames, unlinks, mkdirs that reached the file system (plain: its opens)"),
        Metric("client_meta_ops", "ops", "lower",
               help="metadata requests the file system's clients received (MooseFS .stats; every node's)"),
        Metric("client_meta_ops_busiest_node", "ops", "lower",
               help="the same at the node whose client received the most (nodes=N only)"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        nodes = p["nodes"]
        if nodes and p["procs"] % nodes:
            raise UserError(f"ensemble: procs={p['procs']} cannot be shared evenly by {nodes} nodes")
        fresh = bench_nodes.fresh_dir(ctx.workdir, nodes, self.name)
        top = (fresh or ctx.workdir) / "ensemble"

        def argv(procs: int, first: int = 0) -> list[str]:
            return [
                ctx.native("sluice-bench-ensemble"), "--dir", str(top),
                "--procs", str(procs), "--first", str(first), "--files", str(p["files"]), "--steps", str(p["steps"]),
                "--record-min", str(p["record_min"]), "--record-max", str(p["record_max"]),
                "--inputs", str(p["inputs"]), "--input-size", str(p["input_size"]),
                "--read-size", str(p["read_size"]), "--seed", str(ctx.seed),
            ]  # fmt: skip

        try:
            ctx.exec([*argv(p["procs"]), "--phase", "setup"], as_variant=False, timed=False)
            ctx.drop_caches()
            if nodes:
                per = p["procs"] // nodes
                r = bench_nodes.run_each(ctx, lambda k: [*argv(per, (k - 1) * per), "--phase", "run"], nodes,
                                         top.parent, self.name)
            else:
                r = ctx.exec([*argv(p["procs"]), "--phase", "run"])
        finally:
            if fresh:
                shutil.rmtree(fresh, ignore_errors=True)
        want = p["procs"] * p["files"] * p["steps"]
        if r["writes"] != want:
            raise UserError(f"ensemble made {r['writes']} appends, expected {want}")
        return {
            "seconds": r["seconds"],
            "opens_per_s": rate(r["opens"], r["seconds"]),
            "write_MBps": rate(r["bytes_written"], r["seconds"], MB),
            "fs_meta_ops": fs_meta_count(r, "opens"),
            "client_meta_ops": client_meta_count(r),
            "client_meta_ops_busiest_node": bench_nodes.busiest_client_meta(r),
            "wall_seconds": ctx.wall_seconds,
        }
