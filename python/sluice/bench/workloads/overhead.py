"""``overhead``: what the profiler costs per call. One million 4 KiB writes
and one million 8-byte writes to one file, then stat() and open()+close()
of that file (200,000 each), run plain and under
``sluice run --mode profile``; the ratio sluice/plain per case is the
overhead. Meant for tmpfs, where the file system itself costs least."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, rate
from sluice.errors import UserError

MB = 1e6

# (label, bytes per write)
CASES = (("w4k", 4096), ("w8", 8))


class Overhead(Workload):
    name = "overhead"
    summary = "profiler cost: 1M 4 KiB writes, 1M 8 B writes, stat and open+close, plain vs sluice-profile"
    reads = False
    variants = ("plain", "sluice-profile")
    native_programs = ("sluice-bench-smallio",)
    params = (
        Param("ops", 1_000_000, "write() calls per case"),
        Param("wrap", 256 << 20, "the file is rewritten from offset 0 after this many bytes", "size"),
        Param("meta_ops", 200_000, "stat() calls, and open()+close() pairs, after the 8 B case"),
    )
    metrics = (
        Metric("w4k_us_per_op", "µs/op", "lower", help="4 KiB write(), time per call"),
        Metric("w8_us_per_op", "µs/op", "lower", help="8 B write(), time per call"),
        Metric("w4k_MBps", "MB/s", limit="write_MBps"),
        Metric("w4k_wall_seconds", "s", "lower", help="4 KiB case, whole command incl. launcher and log"),
        Metric("w8_wall_seconds", "s", "lower", help="8 B case, whole command incl. launcher and log"),
        Metric("stat_us_per_op", "µs/op", "lower", help="stat() of a recorded file, time per call"),
        Metric("openclose_us_per_op", "µs/op", "lower", help="open()+close() of a recorded file, time per pair"),
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        ops = ctx.params["ops"]
        out: dict[str, float | None] = {}
        for label, size in CASES:
            total = ops * size
            wrap = min(total, max(size, ctx.params["wrap"] // size * size))
            r = ctx.exec([
                ctx.native("sluice-bench-smallio"), "--file", str(ctx.workdir / f"{label}.dat"),
                "--phase", "write", "--size", str(total), "--write-size", str(size),
                "--wrap", str(wrap), *(["--meta", str(ctx.params["meta_ops"])] if label == "w8" else []),
            ])  # fmt: skip
            if r["write_ops"] != ops:
                raise UserError(f"overhead case {label} made {r['write_ops']} writes, expected {ops}")
            secs = r["write_seconds"]
            out[f"{label}_us_per_op"] = secs / ops * 1e6 if ops else None
            out[f"{label}_wall_seconds"] = r["wall_seconds"]
            if label == "w4k":
                out["w4k_MBps"] = rate(r["bytes_written"], secs, MB)
            else:
                n = r["meta_ops"]
                out["stat_us_per_op"] = r["stat_seconds"] / n * 1e6 if n else None
                out["openclose_us_per_op"] = r["openclose_seconds"] / n * 1e6 if n else None
        return out
