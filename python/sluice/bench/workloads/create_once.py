"""``create-once``: metadata-bound small-file output, mdtest-style. P
processes each create M files in a directory of their own, write each once
and close it, then stat each. Under stage mode the time runs until the
files are published on the shared file system (each process waits for its
drains at exit)."""

from __future__ import annotations

import shutil

from sluice.bench import nodes as bench_nodes
from sluice.bench.workloads.base import (Metric, Param, RunContext, Workload, client_meta_count, fs_count,
                                         fs_meta_count, rate)
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError


class CreateOnce(Workload):
    name = "create-once"
    summary = "P processes each creating M small files written once (mdtest-like), stage publish included"
    reads = False
    variants = ("plain", "sluice-buffer", "sluice-stage")
    native_programs = ("sluice-bench-create-once",)
    params = (
        Param("procs", 2, "processes, one directory each"),
        Param("files", 1000, "files per process"),
        Param("file_size", 4 << 10, "bytes written into each file, one write()", "size"),
        Param("stat", True, "stat each file after creating them all", "bool"),
        Param("nodes", 0, "on N of the testbed's simulated nodes (sluice testbed up --nodes N): procs/N "
              "processes on each, in a directory per node, each node through its own client; 0: all here"),
    )
    metrics = (
        Metric("files_per_s", "ops/s", limit="create_per_s",
               help="files / seconds: start to the last exit, publishing included"),
        Metric("seconds", "s", "lower", help="start to the last process's exit"),
        Metric("io_seconds", "s", "lower", help="the slowest process's mkdir to its last close or stat"),
        Metric("fs_meta_ops", "ops", "lower",
               help="opens, stats, renames, unlinks, mkdirs that reached the file system (plain: its own)"),
        Metric("fs_writes", "calls", "lower", help="write calls that reached the file system"),
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
            raise UserError(f"create-once: procs={p['procs']} cannot be shared evenly by {nodes} nodes")
        fresh = bench_nodes.fresh_dir(ctx.workdir, nodes, self.name)

        def argv(top, procs: int) -> list[str]:
            return [ctx.native("sluice-bench-create-once"), "--dir", str(top), "--procs", str(procs),
                    "--files", str(p["files"]), "--file-size", str(p["file_size"])]

        try:
            if nodes:
                # a directory per node (DIR/nodeK), made by its own run
                per = p["procs"] // nodes
                run = [*(["--stat"] if p["stat"] else []), "--phase", "run"]
                r = bench_nodes.run_each(ctx, lambda k: [*argv(fresh / f"node{k}", per), *run], nodes, fresh,
                                         self.name)
                found = [ctx.exec([*argv(fresh / f"node{k}", per), "--phase", "verify"], as_variant=False,
                                  timed=False) for k in range(1, nodes + 1)]
                v = {key: sum(f[key] for f in found) for key in ("files_found", "bytes_found")}
            else:
                argv_here = argv(ctx.workdir / "md", p["procs"])
                r = ctx.exec([*argv_here, "--phase", "run", *(["--stat"] if p["stat"] else [])])
                v = ctx.exec([*argv_here, "--phase", "verify"], as_variant=False, timed=False)
        finally:
            if fresh:
                shutil.rmtree(fresh, ignore_errors=True)
        files = p["procs"] * p["files"]
        if r["creates"] != files or r["bytes_written"] != files * p["file_size"] or r["wrong_sizes"]:
            raise UserError(f"create-once made {r['creates']} files of {r['bytes_written']} bytes in all, "
                            f"expected {files} of {p['file_size']}")
        if v["files_found"] != files or v["bytes_found"] != files * p["file_size"]:
            raise UserError(f"create-once: {v['files_found']} files of {v['bytes_found']} bytes on the "
                            f"file system after the run, expected {files}")
        return {
            "files_per_s": rate(files, r["seconds"]),
            "seconds": r["seconds"],
            "io_seconds": r["io_seconds"],
            "fs_meta_ops": fs_meta_count(r, "meta_ops"),
            "fs_writes": fs_count(r, "POSIX_WRITES", "writes"),
            "client_meta_ops": client_meta_count(r),
            "client_meta_ops_busiest_node": bench_nodes.busiest_client_meta(r),
            "wall_seconds": ctx.wall_seconds,
        }
