"""``limits``: what the file system can do for one process, the yardstick
every other workload is reported against.

One round: a large sequential write with ``request_size`` requests and an
fsync at the end; drop caches; a cold sequential read of the same file; then
``files`` files of ``file_size`` bytes created in one directory; drop caches;
a cold stat of each; open+close of each; unlink of each.
"""

from __future__ import annotations

from typing import Any

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, rate

MB = 1e6

# Smaller settings for the quick run made when `limits` was not asked for.
QUICK = {"size": 256 << 20, "files": 1000}
QUICK_ROUNDS = 3


class Limits(Workload):
    name = "limits"
    summary = "physical limits: large sequential write/read, create/stat/open/unlink rates"
    reads = True
    variants = ("plain",)
    allowed_variants = ("plain",)
    native_programs = ("sluice-bench-limits",)
    params = (
        Param("size", 1 << 30, "bytes written then read (cold) sequentially", "size"),
        Param("request_size", 4 << 20, "bytes per write()/read() request", "size"),
        Param("files", 2000, "files created, stat'ed, opened and unlinked in one directory"),
        Param("file_size", 4096, "bytes written into each created file (0 or 4K typical)", "size"),
    )
    metrics = (
        Metric("write_MBps", "MB/s", help="sequential write incl. open, fsync, close"),
        Metric("read_MBps", "MB/s", help="cold sequential read incl. open, close"),
        Metric("create_per_s", "ops/s", help="open(O_CREAT|O_EXCL) + write + close"),
        Metric("stat_per_s", "ops/s", help="cold stat"),
        Metric("open_close_per_s", "ops/s", help="open(O_RDONLY) + close of an existing file"),
        Metric("unlink_per_s", "ops/s"),
        Metric("write_seconds", "s", "lower"),
        Metric("read_seconds", "s", "lower"),
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        prog = ctx.native("sluice-bench-limits")
        data = ctx.workdir / "limits.dat"
        meta = ctx.workdir / "meta"
        req = ["--request-size", str(p["request_size"])]

        w = ctx.exec([prog, "write", "--file", str(data), "--size", str(p["size"]), *req])
        ctx.drop_caches()
        r = ctx.exec([prog, "read", "--file", str(data), *req])
        data.unlink()
        out: dict[str, Any] = {
            "write_MBps": rate(w["bytes"], w["seconds"], MB),
            "read_MBps": rate(r["bytes"], r["seconds"], MB),
            "write_seconds": w["seconds"],
            "read_seconds": r["seconds"],
        }
        if p["files"] > 0:
            common = ["--dir", str(meta), "--files", str(p["files"])]
            c = ctx.exec([prog, "create", *common, "--file-size", str(p["file_size"])])
            ctx.drop_caches()
            s = ctx.exec([prog, "stat", *common])
            o = ctx.exec([prog, "openclose", *common])
            u = ctx.exec([prog, "unlink", *common])
            out.update(
                create_per_s=rate(c["ops"], c["seconds"]),
                stat_per_s=rate(s["ops"], s["seconds"]),
                open_close_per_s=rate(o["ops"], o["seconds"]),
                unlink_per_s=rate(u["ops"], u["seconds"]),
            )
        return out
