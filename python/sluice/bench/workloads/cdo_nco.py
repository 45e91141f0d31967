"""``cdo-nco``: a climate ensemble's post-processing as a shell script of
many short processes (issue 26's field report). Per member K:

    cdo timmean in_K.nc tm_K.nc
    ncap2 -s 'tas_c=tas-273.15f' tm_K.nc out_K.nc

(ncap2 writes ``out_K.nc.pid<PID>.ncap2.tmp`` and moves it into place with
``system("/bin/mv -f TMP out_K.nc")``: a shell and ``mv`` per member), then
over all members ``cdo ensmean``, ``nces`` and ``ncks -v tas_c``. With 40
members that is 168 processes. ``impl=real`` runs the real CDO and NCO;
``impl=mirror`` runs ``sluice-bench-cdo-nco``, the project's stand-in with
the same processes and file pattern. The inputs (netCDF-4) are made
before, untimed.

The time is the whole script as the harness sees it: under a sluice
variant, until ``sluice run`` returns, the job drainer's last publish
included. After each run the outputs are compared with the plain run's of
the same round: byte for byte for the mirror; for the real tools (which put
the time of day in the global ``history`` attribute) by a hash of their
netCDF content without that attribute (``sluice-bench-cdo-nco digest``).
What reached the file system is sluice's fs-side count under a sluice
variant (the job drainer's publishing included); the plain program's is
counted in a second, untimed run of the script under ``sluice run --mode
profile`` (``count_plain``), which makes exactly the plain program's calls.
On a MooseFS target the file system's own client counts every variant,
plain included, in the timed run itself (``client_meta_ops``).
"""

from __future__ import annotations

import hashlib
import resource
import shlex
import shutil
from pathlib import Path
from typing import Any

from sluice.bench import variants as variants_mod
from sluice.bench.workloads.base import Metric, Param, RunContext, Workload
from sluice.bench.workloads.smallio import WALL
from sluice.errors import UserError
from sluice.testbed.clientstats import META_OPS

PROGRAM = "sluice-bench-cdo-nco"
REAL_TOOLS = ("cdo", "ncap2", "nces", "ncks")
EXPR = "tas_c=tas-273.15f"
DRAINER = "sluice-stage-drain"

# What reached the file system, from sluice's fs-side counters (docs/counters.md):
# netCDF reads a file's first bytes through stdio (fopen) before HDF5 opens
# it, so a stream's opens count with the descriptors' opens, and its writes
# with theirs.
META = ("POSIX_OPENS", "STDIO_OPENS", "POSIX_STATS", "POSIX_RENAMES", "POSIX_UNLINKS", "POSIX_MKDIRS",
        "POSIX_RMDIRS")
WRITES = ("POSIX_WRITES", "STDIO_WRITES")


def workflow_script(impl: str, members: int, program: str) -> str:
    """The shell script: $1 is the directory holding in_1.nc ... in_N.nc."""
    if impl == "real":
        cdo, ncap2, nces, ncks = "cdo", "ncap2", "nces", "ncks"
    else:
        p = shlex.quote(program)
        cdo, ncap2, nces, ncks = p, f"{p} ncap2", f"{p} nces", f"{p} ncks"
    return f"""# cdo-nco workload ({impl}): {members} members (docs/benchmarks.md)
set -e
cd "$1"
k=1
while [ "$k" -le {members} ]; do
  {cdo} timmean in_$k.nc tm_$k.nc
  {ncap2} -s '{EXPR}' tm_$k.nc out_$k.nc
  k=$((k + 1))
done
{cdo} ensmean out_*.nc ens_cdo.nc
{nces} out_*.nc ens_nco.nc
{ncks} -v tas_c ens_nco.nc final.nc
printf '{{"workload":"cdo-nco","impl":"{impl}","members":%d}}\\n' {members}
"""


def output_names(members: int) -> list[str]:
    return ([f"tm_{k}.nc" for k in range(1, members + 1)] + [f"out_{k}.nc" for k in range(1, members + 1)]
            + ["ens_cdo.nc", "ens_nco.nc", "final.nc"])


class CdoNco(Workload):
    name = "cdo-nco"
    summary = "a CDO/NCO ensemble post-processing script of many short processes (real tools or mirror), publish included"
    reads = False
    variants = ("plain", "sluice-profile", "sluice-stage", "sluice-auto", "sluice-buffer")
    native_programs = (PROGRAM,)
    params = (
        Param("impl", "mirror", "mirror: sluice-bench-cdo-nco; real: the installed cdo, ncap2, nces, ncks",
              "choice", ("mirror", "real")),
        Param("members", 40, "ensemble members (4 processes each, plus 8)"),
        Param("steps", 12, "time steps per input file"),
        Param("nx", 128, "longitudes"),
        Param("ny", 64, "latitudes"),
        Param("count_plain", True, "count the plain run's calls: the script again under profile mode, untimed", "bool"),
    )
    metrics = (
        Metric("seconds", "s", "lower", help="the script, start to end; under sluice until `sluice run` returns"),
        Metric("cpu_seconds", "s", "lower",
               help="user + system CPU time of the script's processes (under sluice: sluice run and the drainer too)"),
        Metric("fs_meta_ops", "ops", "lower",
               help="opens (fd and stdio), stats, renames, unlinks, mkdirs, rmdirs that reached the file system "
                    "(sluice's fs counters, the drainer's included; plain: a profile-mode rerun's)"),
        Metric("client_meta_ops", "ops", "lower",
               help="metadata requests the MooseFS client received (its .stats; MooseFS targets only)"),
        Metric("fs_writes", "calls", "lower", help="write calls that reached the file system (plain: as fs_meta_ops)"),
        Metric("differing_outputs", "files", "lower",
               help="outputs not identical to the plain run's of the round (mirror: bytes; real: content without history)"),
        Metric("processes", "procs", "lower", help="processes of the workflow (sluice logs, the drainer's left out)"),
        Metric("drain_after_s", "s", "lower", help="the drainer's last log end after the workflow's last process ended"),
        WALL,
    )

    def __init__(self) -> None:
        self._reference: dict[str, str] | None = None  # the last plain run's outputs: name -> digest

    def check(self, params: dict[str, Any]) -> None:
        super().check(params)
        if params["impl"] == "real":
            missing = [t for t in REAL_TOOLS if shutil.which(t) is None]
            if missing:
                raise UserError(f"cdo-nco.impl=real needs CDO and NCO, and {', '.join(missing)} "
                                f"{'is' if len(missing) == 1 else 'are'} not on PATH "
                                "(apt-get install cdo nco; scripts/setup does); impl=mirror needs neither")
        if params["members"] < 1:
            raise UserError("cdo-nco.members must be at least 1")

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        program = ctx.native(PROGRAM)
        script = ctx.scratch / "workflow.sh"
        script.write_text(workflow_script(p["impl"], p["members"], program))
        setup = [program, "setup", "--dir", str(ctx.workdir), "--members", str(p["members"]),
                 "--steps", str(p["steps"]), "--nx", str(p["nx"]), "--ny", str(p["ny"])]
        ctx.exec(setup, as_variant=False, timed=False)
        workflow = ["/bin/sh", str(script), str(ctx.workdir)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = ctx.exec(workflow)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # (every process of the run is waited for by its parent: the whole tree counts)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        if r.get("members") != p["members"]:
            raise UserError(f"cdo-nco: the workflow said {r!r}")
        digests = self._outputs(ctx, program)
        plain = ctx.variant.mode is None
        if plain:
            self._reference = digests
        differing = None
        if self._reference is not None:
            differing = sum(1 for n, d in digests.items() if self._reference.get(n) != d)

        out: dict[str, float | None] = {
            "seconds": r["wall_seconds"], "cpu_seconds": cpu, "fs_meta_ops": None, "client_meta_ops": None, "fs_writes": None,
            "differing_outputs": differing, "processes": None, "drain_after_s": None,
            "wall_seconds": ctx.wall_seconds,
        }
        if "client_ops" in r:
            out["client_meta_ops"] = float(sum(r["client_ops"].get(k, 0) for k in META_OPS))
        if "sluice_logs" in r:
            out.update(self._from_logs(ctx, r))
        elif plain and p["count_plain"]:
            # The plain program's calls: the same script on the same inputs
            # under profile mode, which passes every call through as it is.
            for n in output_names(p["members"]):
                (ctx.workdir / n).unlink()
            saved, ctx.variant = ctx.variant, variants_mod.get("sluice-profile")
            try:
                again = ctx.exec(workflow, timed=False)
                counted = self._from_logs(ctx, again)
            finally:
                ctx.variant = saved
            if self._outputs(ctx, program) != digests:
                raise UserError("cdo-nco: the plain program under profile mode made other outputs than plain")
            out["fs_meta_ops"], out["fs_writes"] = counted["fs_meta_ops"], counted["fs_writes"]
        return out

    def _outputs(self, ctx: RunContext, program: str) -> dict[str, str]:
        """Each output's digest; fails on a missing output or a stray file
        (a temporary name left behind)."""
        p = ctx.params
        names = output_names(p["members"])
        inputs = {f"in_{k}.nc" for k in range(1, p["members"] + 1)}
        present = {e.name for e in ctx.workdir.iterdir()}
        missing = [n for n in names if n not in present]
        stray = sorted(present - inputs - set(names))
        if missing or stray:
            raise UserError(f"cdo-nco ({ctx.variant.name}): after the run {len(missing)} outputs missing "
                            f"({', '.join(missing[:3])}) and {len(stray)} stray files ({', '.join(stray[:3])})")
        if p["impl"] == "mirror":
            return {n: hashlib.sha256((ctx.workdir / n).read_bytes()).hexdigest() for n in names}
        d = ctx.exec([program, "digest", *(str(ctx.workdir / n) for n in names)], as_variant=False, timed=False)
        return {Path(f["path"]).name: f["content"] for f in d["files"]}

    def _from_logs(self, ctx: RunContext, r: dict[str, Any]) -> dict[str, float | None]:
        """From the logs of the run just made: what reached the file system,
        how many processes ran, and how long the job's drainer went on after
        the last of them ended. Adds the details to its raw record."""
        from sluice.report.model import load_job

        log_dir = max(ctx.scratch.glob("log.*"), key=lambda d: int(d.name.split(".")[1]))
        job = load_job([log_dir])
        drain = [lg for lg in job.logs if Path(str(lg.info.get("exe", ""))).name == DRAINER]
        work = [lg for lg in job.logs if lg not in drain]
        after = None
        if drain and work:
            after = max(0.0, (max(lg.end_ns for lg in drain) - max(lg.end_ns for lg in work)) / 1e9)
        per_exe: dict[str, list[float]] = {}
        for lg in work:
            per_exe.setdefault(Path(str(lg.info.get("exe", "?"))).name, []).append(lg.runtime)
        fs = {k: int(job.fs.get(k, 0)) for k in (*META, *WRITES)}
        r["fs_counts"] = fs
        r["per_exe"] = {k: {"n": len(v), "seconds": round(sum(v), 6)} for k, v in sorted(per_exe.items())}
        r["drainer_logs"] = len(drain)
        return {"fs_meta_ops": float(sum(fs[k] for k in META)), "fs_writes": float(sum(fs[k] for k in WRITES)),
                "processes": float(len(work)), "drain_after_s": after}
