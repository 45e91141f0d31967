"""``farm``: an Agro-IBIS-like ensemble launched two ways on 4 MPI ranks.

plain: ``mpirun sluice farm --mode off --schedule static``, what a team's own
MPI wrapper does: rank r runs tasks r, r+N, ... straight on the shared file
system. sluice-stage: ``mpirun sluice farm`` (stage mode, tasks handed out
as ranks free up). Each task is one ``sluice-bench-ensemble`` instance in its
own directory: it opens, appends a small record to and closes each of its
output files, step after step. With ``mixed``, task lengths (steps) are drawn
from an exponential distribution around ``steps`` (seeded), and the
sluice-stage rounds also run the static schedule, so the load-balancing gain
is measured in the same round.

Shared-file-system metadata operations are counted by the file system's own
client where it can tell (the MooseFS testbed's .stats: every request the
kernel sent it), else from the tasks' sluice logs (fs side).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

from sluice.bench.workloads.base import Metric, Param, RunContext, Workload
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError
from sluice.testbed import client_ops
from sluice.testbed.clientstats import META_OPS

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}


class FarmEnsemble(Workload):
    name = "farm"
    summary = "an ensemble of serial instances on 4 MPI ranks: sluice farm (stage) vs a plain static MPI wrapper"
    reads = False
    variants = ("plain", "sluice-stage")
    native_programs = ("sluice-bench-ensemble",)
    params = (
        Param("tasks", 32, "ensemble members (tasks)"),
        Param("ranks", 4, "MPI ranks, one worker each"),
        Param("files", 20, "output files per task"),
        # Agro-IBIS appends to its outputs every model step: many reopens
        # per file is the pattern; the shared file system's requests per
        # file grow with steps in the plain run and stay 2 under stage.
        Param("steps", 20, "steps per task: each opens, appends to and closes every output file (mean with mixed)"),
        Param("record_max", 512, "largest record", "size"),
        Param("mixed", False, "task lengths drawn around steps; also times the static schedule", "bool"),
    )
    metrics = (
        Metric("seconds", "s", "lower", help="the whole farm, first task to last published output"),
        Metric("fs_meta_ops", "ops", "lower",
               help="metadata requests the shared file system's client received (MooseFS .stats), else sluice's fs counters"),
        Metric("fs_ops", "ops", "lower", help="all requests the shared file system's client received (MooseFS only)"),
        Metric("static_seconds", "s", "lower", help="sluice-stage with --schedule static (only with mixed)"),
        WALL,
    )

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        rnd = random.Random(ctx.seed)
        steps = [max(1, round(rnd.expovariate(1 / p["steps"]))) if p["mixed"] else p["steps"]
                 for _ in range(p["tasks"])]
        (ctx.workdir / "tasks.txt").write_text("".join(f"{i + 1} {s}\n" for i, s in enumerate(steps)))
        plain = ctx.variant.mode is None
        r = self._farm(ctx, "off" if plain else "stage", "static" if plain else "dynamic", "main", steps)
        out = {**r, "static_seconds": None, "wall_seconds": ctx.wall_seconds}
        if p["mixed"] and not plain:
            out["static_seconds"] = self._farm(ctx, "stage", "static", "static", steps)["seconds"]
        return out

    def _farm(self, ctx: RunContext, mode: str, schedule: str, tag: str, steps: list[int]) -> dict[str, float | None]:
        p = ctx.params
        work = ctx.workdir / tag
        work.mkdir()
        summary = ctx.scratch / f"farm-{tag}-{time.monotonic_ns()}.json"
        task = [ctx.native("sluice-bench-ensemble"), "--dir", ".", "--procs", "1", "--files", str(p["files"]),
                "--steps", "{2}", "--record-max", str(p["record_max"]), "--inputs", "0", "--phase", "run",
                "--seed", "{1}"]
        cmd = ["mpirun", "--oversubscribe", "-np", str(p["ranks"]), sys.executable, "-m", "sluice", "farm", "-q",
               "--mode", mode, "--schedule", schedule, "--journal", str(ctx.scratch / f"journal-{tag}-{time.monotonic_ns()}"),
               "--log-dir", str(ctx.scratch / f"logs-{tag}"), "--json", str(summary), "--path", str(ctx.workdir),
               "--tasks", str(ctx.workdir / "tasks.txt"), "--", *task]
        before = client_ops(ctx.workdir)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=ctx.timeout,
                              env={**os.environ, **MPI_ENV})
        seconds = time.perf_counter() - t0
        after = client_ops(ctx.workdir)
        if proc.returncode != 0:
            raise UserError(f"sluice farm --mode {mode} failed: " + "; ".join(proc.stderr.strip().splitlines()[-3:]))
        s = json.loads(summary.read_text())
        want_records = p["files"] * sum(steps)
        got = sum(len(f.read_bytes().splitlines()) for f in work.glob("tasks/*/member.0000/out.*"))
        if s["counts"]["done"] != p["tasks"] or got != want_records:
            raise UserError(f"farm ({mode}): {s['counts']['done']} tasks done, {got} records on the file system, "
                            f"expected {p['tasks']} and {want_records}")
        ctx.wall_seconds += seconds
        data = {"mode": mode, "schedule": schedule, "seconds": seconds, "summary_counts": s["counts"],
                "io": {k: v for k, v in (s.get("io") or {}).items() if k != "per_task"}}
        if before is not None and after is not None:
            delta = {k: after[k] - before.get(k, 0) for k in after}
            data["fuse_ops"] = {k: v for k, v in delta.items() if v}
            meta, total = sum(delta.get(k, 0) for k in META_OPS), sum(delta.values())
        else:
            io = s.get("io") or {}
            meta = io["fs"]["metadata_ops"] if io.get("logs") else None
            total = None
        data["fs_meta_ops"], data["fs_ops"] = meta, total
        ctx.raw.append(data)
        return {"seconds": seconds, "fs_meta_ops": meta, "fs_ops": total}
