"""``smallread``: many small files, each opened, read whole in 4 KiB reads
and closed, cold (a model reading its many small input and parameter
files)."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, fs_count, fs_meta_count, rate
from sluice.bench.workloads.log_counts import fs_over_app
from sluice.bench.workloads.randread import FS_BYTES_RATIO
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError

MB = 1e6


class SmallRead(Workload):
    name = "smallread"
    summary = "cold reads of many small files (1-20 KiB), each whole in 4 KiB reads"
    reads = True
    variants = ("plain", "sluice-buffer")
    native_programs = ("sluice-bench-smallread",)
    params = (
        Param("files", 2000, "files (created before the timed run, not timed)"),
        Param("min_size", 1 << 10, "smallest file", "size"),
        Param("max_size", 20 << 10, "largest file", "size"),
        Param("read_size", 4 << 10, "bytes per read()", "size"),
    )
    metrics = (
        Metric("read_MBps", "MB/s", limit="read_MBps", help="cold: all opens, reads, closes"),
        Metric("files_per_s", "ops/s", limit="open_close_per_s", help="files opened, read whole and closed per second"),
        Metric("fs_reads", "calls", "lower", help="read calls that reached the file system"),
        FS_BYTES_RATIO,
        Metric("fs_meta_ops", "ops", "lower", help="opens, stats, ... that reached the file system (plain: its opens)"),
        Metric("read_seconds", "s", "lower"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        argv = [ctx.native("sluice-bench-smallread"), "--dir", str(ctx.workdir / "inputs"),
                "--files", str(p["files"]), "--min-size", str(p["min_size"]), "--max-size", str(p["max_size"]),
                "--read-size", str(p["read_size"]), "--seed", str(ctx.seed)]  # fmt: skip
        s = ctx.exec([*argv, "--phase", "setup"], as_variant=False, timed=False)
        ctx.drop_caches()
        r = ctx.exec([*argv, "--phase", "run", "--verify"])
        if r["opens"] != p["files"] or r["bytes_read"] != s["setup_bytes"] or r["wrong_sizes"]:
            raise UserError(f"smallread read {r['bytes_read']} bytes from {r['opens']} files "
                            f"({r['wrong_sizes']} of the wrong size); expected {s['setup_bytes']} from {p['files']}")
        return {
            "read_MBps": rate(r["bytes_read"], r["read_seconds"], MB),
            "files_per_s": rate(r["opens"], r["read_seconds"]),
            "fs_reads": fs_count(r, "POSIX_READS", "read_ops"),
            "fs_read_bytes_ratio": fs_over_app(r, "POSIX_BYTES_READ", "bytes_read"),
            "fs_meta_ops": fs_meta_count(r, "opens"),
            "read_seconds": r["read_seconds"],
            "wall_seconds": ctx.wall_seconds,
        }
