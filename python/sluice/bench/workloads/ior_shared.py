"""``ior-shared``: IOR's strided shared-file write through MPI-IO (rank r
writes piece i at offset (i * ranks + r) * piece), or file per process
(``layout=fpp``: each rank its own file on ``MPI_COMM_SELF``), with every
peer Open MPI offers, side by side in one run: OMPIO and ROMIO, independent
(``MPI_File_write_at``) and collective (``write_at_all``), ROMIO collective
with the collective-buffering hints, each plain and again under
``sluice run --mode acb``.

Every piece size runs every method once per round, in an order that rotates
from round to round, so that the machine's load falls on all methods alike.
Every run checks its file(s) byte for byte against the pattern and all
methods must produce the same hash. Metrics: MiB/s per method and piece
size, and per piece size the best acb method over the best plain peer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sluice.bench import nodes as bench_nodes
from sluice.bench.variants import Variant
from sluice.bench.workloads.base import Metric, Param, RunContext, Workload, format_size, parse_size
from sluice.errors import UserError

MiB = float(1 << 20)

# (method, Open MPI io component, --api, hints, under acb)
_PEERS = (
    ("ompio-indep", "ompio", "indep", ""),
    ("ompio-coll", "ompio", "coll", ""),
    ("romio-indep", "romio321", "indep", ""),
    ("romio-coll", "romio321", "coll", ""),
    ("romio-coll-cb", "romio321", "coll", "romio_cb_write=enable,cb_nodes=1"),
)
METHODS = tuple((m, io, api, hints, False) for m, io, api, hints in _PEERS) + tuple(
    (f"acb-{m}", io, api, hints, True) for m, io, api, hints in _PEERS)
# File per process: collective calls on MPI_COMM_SELF are independent ones.
FPP_METHODS = tuple(m for m in METHODS if m[2] == "indep")
DEFAULT_PIECES = "4K,16K,64K,256K,1M,4M"


def _key(method: str, piece: int) -> str:
    return f"{method.replace('-', '_')}_{format_size(piece)}"


def _metrics() -> tuple[Metric, ...]:
    ms = []
    for piece in (parse_size(p) for p in DEFAULT_PIECES.split(",")):
        size = format_size(piece)
        ms += [Metric(f"{_key(m, piece)}_MiBps", "MiB/s", help=f"{m}, {size} pieces: file bytes / seconds")
               for m, *_ in METHODS]
        ms.append(Metric(f"acb_over_best_peer_{size}", "x",
                         help=f"{size} pieces: the best acb method's MiB/s over the best plain method's"))
        ms += [Metric(f"acb_over_plain_{_key(m, piece)}", "x", help=f"{size} pieces: acb-{m} / {m}")
               for m, *_ in _PEERS]
    return tuple(ms)


class IorShared(Workload):
    name = "ior-shared"
    summary = "IOR-style strided shared file (or file per process) through MPI-IO: OMPIO, ROMIO, hints vs acb"
    reads = False
    variants = ("plain",)
    # a layout variant (layout:SPEC) sets the layout of the file each method creates
    allowed_variants = ("plain", "layout:*")
    native_programs = ("sluice-bench-ior-shared",)
    params = (
        Param("procs", 4, "MPI ranks"),
        Param("per_rank", 16 << 20, "bytes each rank writes", "size"),
        Param("pieces", DEFAULT_PIECES, "piece sizes (bytes per write), comma-separated", "str"),
        Param("layout", "shared", "shared (strided, one file), blocked (one region per rank) or fpp (file per "
              "process)", "choice", ("shared", "blocked", "fpp")),
        Param("methods", "all", "comma-separated subset of: " + ", ".join(m for m, *_ in METHODS), "str"),
        Param("nodes", 0, "on N of the testbed's simulated nodes (sluice testbed up --nodes N): procs/N ranks "
              "in each node, each node through its own client; 0: all ranks here, through the target"),
    )
    metrics = _metrics()

    def __init__(self) -> None:
        self._rounds = 0

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        p = ctx.params
        pieces = [parse_size(x) for x in str(p["pieces"]).split(",") if x]
        known = FPP_METHODS if p["layout"] == "fpp" else METHODS
        wanted = [m for m in known if p["methods"] == "all" or m[0] in p["methods"].split(",")]
        if not wanted or not pieces or any(p["per_rank"] % piece for piece in pieces):
            raise UserError(f"ior-shared: no method in {p['methods']!r}, or a piece size that does not divide "
                            f"per_rank {p['per_rank']}")
        # The order rotates from round to round.
        shift = self._rounds % len(wanted)
        self._rounds += 1
        order = wanted[shift:] + wanted[:shift]
        out: dict[str, float | None] = {}
        for piece in pieces:
            rates, hashes = {}, set()
            for method in order:
                r = self._run_one(ctx, method, piece)
                rates[method[0]] = p["per_rank"] * p["procs"] / MiB / r["seconds"]
                hashes.add(r["fnv1a64"])
                out[f"{_key(method[0], piece)}_MiBps"] = rates[method[0]]
            if len(hashes) != 1:
                raise UserError(f"ior-shared: {format_size(piece)} pieces: the methods' files differ ({hashes})")
            peers = [v for m, v in rates.items() if not m.startswith("acb-")]
            acbs = [v for m, v in rates.items() if m.startswith("acb-")]
            out[f"acb_over_best_peer_{format_size(piece)}"] = max(acbs) / max(peers) if peers and acbs else None
            for m in rates:
                if not m.startswith("acb-") and f"acb-{m}" in rates:
                    out[f"acb_over_plain_{_key(m, piece)}"] = rates[f"acb-{m}"] / rates[m]
        print(self.table(pieces, wanted, out), file=sys.stderr)
        return out

    @staticmethod
    def _run_one(ctx: RunContext, method: tuple, piece: int) -> dict:
        name, io, api, hints, acb = method
        p = ctx.params
        if p["nodes"]:
            # ROMIO's collective buffering with one aggregator per node, as
            # ROMIO places them on a cluster (cb_nodes=1 is for one host)
            hints = hints.replace("cb_nodes=1", f"cb_nodes={p['nodes']}")
        launch = ["mpirun", "--oversubscribe", "-np", str(p["procs"])]
        if p["nodes"]:
            launch = bench_nodes.mpirun_hosts(p["nodes"], p["procs"], "ior-shared")
        fresh = bench_nodes.fresh_dir(ctx.workdir, p["nodes"], "ior-shared")
        where = fresh or ctx.workdir
        argv = [*launch, ctx.native("sluice-bench-ior-shared"),
                "--file", str(where / f"{name}.dat"), "--piece", str(piece), "--per-rank",
                str(p["per_rank"]), "--api", api, "--layout", p["layout"], "--check",
                *(["--hints", hints] if hints else [])]
        layout = ctx.variant.layout
        variant = Variant("acb", "acb", "", layout=layout) if acb else \
            Variant("layout", "profile", "", layout=layout) if layout else Variant("plain", None, "")
        # (on the nodes the logs go where every node writes: the shared file system)
        logs = (fresh or ctx.scratch) / f"logs-{name}-{piece}"
        logs.mkdir(parents=True, exist_ok=True)
        env = {**variant.env(), "OMPI_MCA_io": io}
        if fresh:
            env.update(bench_nodes.mpi_environment())
        elif os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        proc = subprocess.run(variant.command(argv, logs, [where]), capture_output=True, text=True, env=env,
                              timeout=ctx.timeout, cwd=where)
        if proc.returncode != 0:
            # the program's own reason, not only Open MPI's abort notice after it
            own = [l for l in proc.stderr.splitlines() if l.startswith("sluice-bench-ior-shared:")]
            raise UserError(f"ior-shared {name} {format_size(piece)} failed: "
                            f"{'; '.join(own[:2]) or proc.stderr.strip()[-400:]}")

        r = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
        if r.get("mismatches") != 0:
            raise UserError(f"ior-shared {name} {format_size(piece)}: {r.get('mismatches')} bytes differ")
        r["method"] = name
        ctx.raw.append(r)
        ctx.wall_seconds += r["seconds"]
        for f in ctx.workdir.glob(f"{name}.dat*"):
            f.unlink()
        if fresh:
            shutil.rmtree(fresh)
        return r

    @staticmethod
    def table(pieces, methods, out) -> str:
        lines = ["ior-shared: MiB/s (one round)",
                 f"  {'method':<20}" + "".join(f"{format_size(pc):>9}" for pc in pieces)]
        for m, *_ in methods:
            lines.append(f"  {m:<20}" + "".join(f"{out[_key(m, pc) + '_MiBps']:>9.0f}" for pc in pieces))
        ratios = [out.get(f"acb_over_best_peer_{format_size(pc)}") for pc in pieces]
        lines.append(f"  {'acb / best peer':<20}" + "".join(f"{r:>9.2f}" if r else f"{'-':>9}" for r in ratios))
        return "\n".join(lines)
