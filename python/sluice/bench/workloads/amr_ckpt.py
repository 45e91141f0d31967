"""``amr-ckpt``: the AMR checkpoint of the Chombo/BISICLES field report, with
MPI-IO on 4 ranks, written every way the paper compares: one independent
``MPI_File_write_at`` per box, one collective ``MPI_File_write_at_all`` per
box, the explicit ACB API of libsluice-mpi, and transparent ACB
(``--mode acb``) over the unmodified independent program; and parallel HDF5
(one dataset per level, one hyperslab write per box), independent and
collective, plain and under ``--mode acb``.

Every method runs under ``sluice run`` (profile mode, or acb for the
transparent ones), so the Darshan-style table (MPI-IO writes, POSIX writes,
most common access size) comes from sluice's own counters: fs-side MPI-IO
writes for the transparent methods (what reached MPI-IO), app side
otherwise, and POSIX writes that reached the file system."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sluice.bench import nodes as bench_nodes
from sluice.bench.variants import Variant
from sluice.bench.workloads.base import Metric, Param, RunContext, Workload
from sluice.errors import UserError
from sluice.report.text import BUCKET_LABELS as LABELS
from sluice.report.text import BUCKETS

# (method, program, --variant, sluice mode)
METHODS = (
    ("indep", "sluice-bench-amr-ckpt", "indep", "profile"),
    ("coll", "sluice-bench-amr-ckpt", "coll", "profile"),
    ("acb-api", "sluice-bench-amr-ckpt", "acb", "profile"),
    ("acb-transparent", "sluice-bench-amr-ckpt", "indep", "acb"),
    ("h5-indep", "sluice-bench-amr-ckpt-h5", "h5-indep", "profile"),
    ("h5-coll", "sluice-bench-amr-ckpt-h5", "h5-coll", "profile"),
    ("h5-acb-transparent", "sluice-bench-amr-ckpt-h5", "h5-indep", "acb"),
)
RATIOS = (
    ("indep_over_transparent", "indep", "acb-transparent"),
    ("coll_over_transparent", "coll", "acb-transparent"),
    ("indep_over_api", "indep", "acb-api"),
    ("coll_over_api", "coll", "acb-api"),
    ("h5_indep_over_transparent", "h5-indep", "h5-acb-transparent"),
)


def _metrics() -> tuple[Metric, ...]:
    ms = []
    for m, *_ in METHODS:
        key = m.replace("-", "_")
        ms += [Metric(f"{key}_s", "s", "lower", help=f"{m}: open of the file to the last close"),
               Metric(f"{key}_mpiio_writes", "ops", "lower", help=f"{m}: MPI-IO writes reaching MPI-IO"),
               Metric(f"{key}_posix_writes", "ops", "lower", help=f"{m}: POSIX writes reaching the file system")]
    ms += [Metric(f"ratio_{name}", "x", "higher", help=f"time of {a} / time of {b}") for name, a, b in RATIOS]
    return tuple(ms)


class AmrCkpt(Workload):
    name = "amr-ckpt"
    summary = "AMR checkpoint with MPI-IO and parallel HDF5, 4 ranks: per-box independent/collective vs ACB"
    reads = False
    variants = ("plain",)
    allowed_variants = ("plain",)
    native_programs = ("sluice-bench-amr-ckpt", "sluice-bench-amr-ckpt-h5")
    params = (
        Param("procs", 4, "MPI ranks"),
        Param("boxes", "512,256,64", "boxes per level, comma-separated", "str"),
        Param("box_size", 256 << 10, "bytes per box (a multiple of 8)", "size"),
        Param("stripe", 1 << 20, "stripe size handed to MPI-IO and ACB (striping_unit)", "size"),
        Param("methods", "all", "comma-separated subset of: " + ", ".join(m for m, *_ in METHODS), "str"),
        Param("nodes", 0, "on N of the testbed's simulated nodes (sluice testbed up --nodes N): procs/N ranks "
              "in each node, each node through its own client; 0: all ranks here, through the target"),
    )
    metrics = _metrics()

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        wanted = [m for m in METHODS if p["methods"] == "all" or m[0] in p["methods"].split(",")]
        if not wanted:
            raise UserError(f"amr-ckpt: no method in {p['methods']!r}")
        env = dict(os.environ)
        launch = ["mpirun", "--oversubscribe", "-np", str(p["procs"])]
        if p["nodes"]:
            launch = bench_nodes.mpirun_hosts(p["nodes"], p["procs"], "amr-ckpt")
            env.update(bench_nodes.mpi_environment())
        elif os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        out: dict[str, float | None] = {}
        rows = []
        for method, prog, variant, mode in wanted:
            fresh = bench_nodes.fresh_dir(ctx.workdir, p["nodes"], "amr-ckpt")
            try:
                rows.append(self._run_one(ctx, method, prog, variant, mode, launch, env, fresh, out))
            finally:
                if fresh:
                    shutil.rmtree(fresh, ignore_errors=True)
        times = {m: s for m, s, _ in rows}
        for name, a, b in RATIOS:
            out[f"ratio_{name}"] = times[a] / times[b] if a in times and b in times and times[b] > 0 else None
        print(self.table(rows, out), file=sys.stderr)
        return out

    def _run_one(self, ctx: RunContext, method: str, prog: str, variant: str, mode: str, launch: list[str],
                 env: dict[str, str], fresh: Path | None, out: dict[str, float | None]) -> tuple:
        """One method's checkpoint; its metrics go into `out`."""
        p = ctx.params
        where = fresh or ctx.workdir
        target = where / f"{method}.ckpt"
        argv = [*launch, ctx.native(prog), "--variant", variant,
                "--file", str(target), "--boxes", str(p["boxes"]), "--box-bytes", str(p["box_size"]),
                "--hints", f"striping_unit={p['stripe']}"]
        # (on the nodes the logs go where every node writes: the shared file system)
        logs = (fresh or ctx.scratch) / f"logs-{method}"
        logs.mkdir(parents=True, exist_ok=True)
        cmd = Variant(mode, mode, "").command(argv, logs, [where])
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**Variant(mode, mode, "").env(), **env},
                              timeout=ctx.timeout, cwd=where)
        if proc.returncode != 0:
            raise UserError(f"amr-ckpt {method} failed: {proc.stderr.strip()[-400:]}")
        r = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        result = json.loads(r[-1])
        result["method"] = method
        ctx.raw.append(result)
        ctx.wall_seconds += result["seconds"]
        row = self._counters(logs, target, transparent=mode == "acb")
        key = method.replace("-", "_")
        out[f"{key}_s"] = result["seconds"]
        out[f"{key}_mpiio_writes"] = row["mpiio_writes"]
        out[f"{key}_posix_writes"] = row["posix_writes"]
        target.unlink(missing_ok=True)
        return method, result["seconds"], row

    @staticmethod
    def _counters(logs, target, transparent: bool) -> dict:
        from sluice.report.model import load_job

        job = load_job([logs])
        f = next((f for f in job.files if f.path == str(target)), None)
        if f is None:
            raise UserError(f"amr-ckpt: no record of {target} in {logs}")
        mpi = f.fs if transparent else f.app
        writes = sum(mpi.get(f"MPIIO_{k}_WRITES", 0) for k in ("INDEP", "COLL", "NB", "SHARED"))
        sizes = {LABELS[i]: int(mpi.get(f"MPIIO_SIZE_WRITE_{b}", 0)) for i, b in enumerate(BUCKETS)}
        psizes = {LABELS[i]: int(f.fs.get(f"POSIX_SIZE_WRITE_{b}", 0)) for i, b in enumerate(BUCKETS)}
        top = max(sizes, key=lambda k: sizes[k]) if writes else "-"
        ptop = max(psizes, key=lambda k: psizes[k]) if any(psizes.values()) else "-"
        return {"mpiio_writes": int(writes), "posix_writes": int(f.fs.get("POSIX_WRITES", 0)),
                "mpiio_top": f"{top} ({sizes.get(top, 0)})", "posix_top": f"{ptop} ({psizes.get(ptop, 0)})"}

    @staticmethod
    def table(rows, out) -> str:
        lines = ["amr-ckpt: counters from sluice's own logs (Darshan-style)",
                 f"  {'method':<20} {'time s':>9} {'MPI-IO writes':>14} {'POSIX writes':>13}  "
                 f"{'most common MPI-IO size (count)':<32} most common POSIX size (count)"]
        for method, secs, row in rows:
            lines.append(f"  {method:<20} {secs:>9.3f} {row['mpiio_writes']:>14,} {row['posix_writes']:>13,}  "
                         f"{row['mpiio_top']:<32} {row['posix_top']}")
        for name, a, b in RATIOS:
            v = out.get(f"ratio_{name}")
            if v is not None:
                lines.append(f"  time {a} / {b}: {v:.2f}x")
        return "\n".join(lines)
