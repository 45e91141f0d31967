"""``h5write``: what the H5F/H5D modules cost per H5Dwrite. 200,000 writes
of one 64-double row of a 2-D dataset, each selecting its row with a
hyperslab (the selection queries run), then 200,000 writes of a whole
64-double dataset (H5S_ALL), run plain and under ``sluice run --mode
profile``; the difference per call is the wrapper's cost (the POSIX writes
underneath are profiled too, in both loops)."""

from __future__ import annotations

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload
from sluice.errors import UserError


class H5Write(Workload):
    name = "h5write"
    summary = "H5Dwrite per-call cost: 200k one-row hyperslab writes and 200k H5S_ALL writes, plain vs sluice-profile"
    reads = False
    variants = ("plain", "sluice-profile")
    native_programs = ("sluice-bench-h5write",)
    params = (Param("ops", 200_000, "H5Dwrite calls per loop"),)
    metrics = (
        Metric("hyperslab_us_per_op", "µs/op", "lower", help="H5Sselect_hyperslab + H5Dwrite of one 512 B row"),
        Metric("all_us_per_op", "µs/op", "lower", help="H5Dwrite of a whole 512 B dataset (H5S_ALL)"),
        Metric("wall_seconds", "s", "lower", help="whole command incl. launcher and log"),
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        ops = ctx.params["ops"]
        r = ctx.exec([ctx.native("sluice-bench-h5write"), "--file", str(ctx.workdir / "h5write.h5"),
                      "--ops", str(ops)])
        if r["ops"] != ops:
            raise UserError(f"h5write made {r['ops']} writes per loop, expected {ops}")
        return {"hyperslab_us_per_op": r["hyperslab_seconds"] / ops * 1e6,
                "all_us_per_op": r["all_seconds"] / ops * 1e6, "wall_seconds": r["wall_seconds"]}
