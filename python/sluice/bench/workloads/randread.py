"""``randread``: small reads at random offsets of one large file, cold.
Read-ahead cannot help here; what matters is that it does not hurt (no
bytes read that the program never asked for)."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, fs_count, rate
from sluice.bench.workloads.log_counts import fs_over_app
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError

MB = 1e6

FS_BYTES_RATIO = Metric("fs_read_bytes_ratio", "x", "lower",
                        help="bytes read from the file system per byte the program read")


class RandRead(Workload):
    name = "randread"
    summary = "cold 4 KiB preads at seeded random offsets of one large file"
    reads = True
    variants = ("plain", "sluice-buffer")
    native_programs = ("sluice-bench-randread",)
    params = (
        Param("size", 256 << 20, "file size (written before the timed run, not timed)", "size"),
        Param("read_size", 4 << 10, "bytes per pread(); offsets are multiples of it", "size"),
        Param("reads", 16384, "pread() calls"),
    )
    metrics = (
        Metric("read_MBps", "MB/s", limit="read_MBps", help="cold: open, preads, close"),
        Metric("reads_per_s", "ops/s"),
        Metric("fs_reads", "calls", "lower", help="read calls that reached the file system"),
        FS_BYTES_RATIO,
        Metric("read_seconds", "s", "lower"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        argv = [ctx.native("sluice-bench-randread"), "--file", str(ctx.workdir / "randread.dat"),
                "--size", str(p["size"]), "--read-size", str(p["read_size"]),
                "--reads", str(p["reads"]), "--seed", str(ctx.seed)]  # fmt: skip
        s = ctx.exec([*argv, "--phase", "setup"], as_variant=False, timed=False)
        ctx.drop_caches()
        r = ctx.exec([*argv, "--phase", "run", "--verify"])
        want = p["reads"] * p["read_size"]
        if s["setup_bytes"] != p["size"] or r["file_bytes"] != p["size"] or r["bytes_read"] != want:
            raise UserError(f"randread: file of {r['file_bytes']} bytes, read {r['bytes_read']}; "
                            f"expected {p['size']} and {want}")
        return {
            "read_MBps": rate(r["bytes_read"], r["read_seconds"], MB),
            "reads_per_s": rate(r["read_ops"], r["read_seconds"]),
            "fs_reads": fs_count(r, "POSIX_READS", "read_ops"),
            "fs_read_bytes_ratio": fs_over_app(r, "POSIX_BYTES_READ", "bytes_read"),
            "read_seconds": r["read_seconds"],
            "wall_seconds": ctx.wall_seconds,
        }
