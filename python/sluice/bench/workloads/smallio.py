"""``smallio``: small sequential writes, then cold small sequential reads of
one file (Agro-IBIS: 8 KiB writes, 4 KiB reads)."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, fs_count, rate
from sluice.errors import UserError

MB = 1e6

WALL = Metric("wall_seconds", "s", "lower", help="wall time of the timed program runs, launcher included")


class SmallIO(Workload):
    name = "smallio"
    summary = "small sequential writes (8 KiB) then cold small reads (4 KiB) of one file"
    reads = True
    variants = ("plain", "sluice-buffer")
    native_programs = ("sluice-bench-smallio",)
    params = (
        Param("size", 256 << 20, "bytes written then read", "size"),
        Param("write_size", 8 << 10, "bytes per write()", "size"),
        Param("read_size", 4 << 10, "bytes per read()", "size"),
        Param("fsync", True, "fsync before closing the written file (as the limit does)", "bool"),
    )
    metrics = (
        Metric("write_MBps", "MB/s", limit="write_MBps", help="open, writes, fsync, close"),
        Metric("read_MBps", "MB/s", limit="read_MBps", help="cold: open, reads, close"),
        Metric("fs_writes", "calls", "lower", help="write calls that reached the file system"),
        Metric("fs_reads", "calls", "lower", help="read calls that reached the file system"),
        Metric("write_seconds", "s", "lower"),
        Metric("read_seconds", "s", "lower"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        prog = ctx.native("sluice-bench-smallio")
        f = str(ctx.workdir / "smallio.dat")
        argv = [prog, "--file", f, "--size", str(p["size"]),
                "--write-size", str(p["write_size"]), "--read-size", str(p["read_size"])]  # fmt: skip
        w = ctx.exec([*argv, "--phase", "write", *(["--fsync"] if p["fsync"] else [])])
        ctx.drop_caches()
        r = ctx.exec([*argv, "--phase", "read"])
        if w["bytes_written"] != p["size"] or r["bytes_read"] != p["size"]:
            raise UserError(f"smallio wrote {w['bytes_written']} and read back {r['bytes_read']} bytes, expected {p['size']}")
        return {
            "write_MBps": rate(w["bytes_written"], w["write_seconds"], MB),
            "read_MBps": rate(r["bytes_read"], r["read_seconds"], MB),
            "fs_writes": fs_count(w, "POSIX_WRITES", "write_ops"),
            "fs_reads": fs_count(r, "POSIX_READS", "read_ops"),
            "write_seconds": w["write_seconds"],
            "read_seconds": r["read_seconds"],
            "wall_seconds": ctx.wall_seconds,
        }
