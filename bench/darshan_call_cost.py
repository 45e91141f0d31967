#!/usr/bin/env python3
"""Per-call cost of the calls Darshan records, plain, under libsluice
(profile mode) and under Darshan, in rounds (docs/darshan.md, "What a call
costs"). Each round runs the workload once per variant with LD_PRELOAD, the
variants' order rotated from round to round (so none always runs first, on
a cache the one before warmed or after it dirtied); sluice records DIR
(SLUICE_PATHS), so DIR may be under /dev/shm, but Darshan leaves /dev/ out:
use a directory it records (under /tmp) for a fair comparison.

Workloads:
  h5write  sluice-bench-h5write (serial HDF5): H5Dwrite of a hyperslab row
           and of a whole small dataset; Darshan built --enable-hdf5-mod.
  mpiio    sluice-bench-mpiio-calls under mpirun -np RANKS: MPI_File_write_at,
           MPI_File_write_at_all, MPI_File_read_at of 8 bytes, and
           MPI_File_open+close; Darshan built with MPI.
  posix    sluice-bench-smallio (serial): write() of 8 bytes, stat(), and
           open()+close() of the file; Darshan built --without-mpi.
  stdio    sluice-bench-stdio-calls (serial): fopen+fclose, fopen+fwrite of
           16 bytes+fclose (OPS/10 each), and OPS fprintf of a short line,
           fwrite of 8 bytes, fgets of a line and fread of an 8-byte
           record; Darshan built --without-mpi.

    bench/darshan_call_cost.py WORKLOAD DIR --darshan-lib LIB [--native build/NAME/native]
        [--rounds 11] [--ops N] [--ranks 2] [--also-sluice NAME=LIB ...] [--json bench/results/FILE.json]

--also-sluice adds a variant: another libsluice.so (an earlier build, say),
run as sluice is, in the same rounds. --clock cpu (stdio) times each loop by
the CPU time the calling thread spent in it, user and system, instead of
the wall clock: on a loaded machine the time a process waits for a core is
left out, and so is most of the load's noise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

# per workload: the program, ns-per-call keys and how each comes from its JSON line
WORKLOADS = {
    "h5write": ("sluice-bench-h5write", {"hyperslab_ns": ("hyperslab_seconds", "ops"),
                                         "all_ns": ("all_seconds", "ops")}),
    "mpiio": ("sluice-bench-mpiio-calls", {"write_at_ns": ("write_seconds", "ops"),
                                           "write_at_all_ns": ("write_all_seconds", "ops"),
                                           "read_at_ns": ("read_seconds", "ops"),
                                           "open_close_ns": ("open_close_seconds", "opens")}),
    "posix": ("sluice-bench-smallio", {"write8_ns": ("write_seconds", "write_ops"),
                                       "stat_ns": ("stat_seconds", "meta_ops"),
                                       "open_close_ns": ("openclose_seconds", "meta_ops")}),
    "stdio": ("sluice-bench-stdio-calls", {"fopen_fclose_ns": ("open_close_seconds", "opens"),
                                           "fopen_fwrite_fclose_ns": ("open_write_close_seconds", "opens"),
                                           "fprintf_ns": ("fprintf_seconds", "ops"),
                                           "fwrite8_ns": ("fwrite_seconds", "ops"),
                                           "fgets_ns": ("fgets_seconds", "ops"),
                                           "fread8_ns": ("fread_seconds", "ops")}),
}


def command(workload: str, prog: Path, f: Path, ops: int, ranks: int, env: dict[str, str]) -> list[str]:
    if workload == "h5write":
        return [str(prog), "--file", str(f), "--ops", str(ops)]
    if workload == "posix":
        return [str(prog), "--file", str(f), "--phase", "write", "--size", str(8 * ops), "--write-size", "8",
                "--meta", str(ops)]
    if workload == "stdio":
        return [str(prog), "--file", str(f), "--ops", str(ops), "--opens", str(max(1, ops // 10))]
    exported = [a for k in env for a in ("-x", k)]
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return ["mpirun", *root, "--oversubscribe", "-np", str(ranks), *exported, str(prog), "--file", str(f), "--ops", str(ops),
            "--opens", str(max(1, ops // 50))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("dir", type=Path)
    ap.add_argument("--darshan-lib", required=True, help="libdarshan.so (with its HDF5 module, or with MPI)")
    ap.add_argument("--native", type=Path, default=Path("build/dev/native"))
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--ops", type=int, default=None, help="calls per loop (h5write, posix and stdio 200000, mpiio 100000)")
    ap.add_argument("--ranks", type=int, default=2, help="mpiio: MPI ranks")
    ap.add_argument("--also-sluice", action="append", default=[], metavar="NAME=LIB",
                    help="one more variant: libsluice.so LIB, run as sluice is, reported as NAME")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="stdio: time each loop by the wall clock or by the thread's CPU time")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    prog_name, keys = WORKLOADS[a.workload]
    ops = a.ops or (100_000 if a.workload == "mpiio" else 200_000)
    if a.workload == "stdio" and ops < 10:
        ap.error("stdio: --ops must be at least 10 (a tenth of it are opens)")
    if a.clock == "cpu":
        if a.workload != "stdio":
            ap.error("--clock cpu: only the stdio workload reports CPU time")
        keys = {k: (secs.replace("_seconds", "_cpu_seconds"), n) for k, (secs, n) in keys.items()}
    a.dir.mkdir(parents=True, exist_ok=True)
    (a.dir / "darshan-logs").mkdir(exist_ok=True)

    def sluice_env(lib: Path) -> dict[str, str]:
        return {"LD_PRELOAD": str(lib.resolve()), "SLUICE_PATHS": str(a.dir.resolve()),
                "SLUICE_LOG_DIR": str(a.dir.resolve() / "sluice-logs")}

    variants = {
        "plain": {},
        "sluice": sluice_env(a.native / "libsluice.so"),
        "darshan": {"LD_PRELOAD": a.darshan_lib, "DARSHAN_LOGPATH": str(a.dir.resolve() / "darshan-logs"),
                    **({"DARSHAN_ENABLE_NONMPI": "1"} if a.workload in ("h5write", "posix", "stdio") else {})},
    }
    for spec in a.also_sluice:
        name, sep, lib = spec.partition("=")
        if not sep or not name or name in variants:
            ap.error(f"--also-sluice {spec!r}: NAME=LIB with a new NAME")
        variants[name] = sluice_env(Path(lib))
    names = list(variants)
    rounds: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    orders: list[list[str]] = []
    loads = [os.getloadavg()[0]]
    for r in range(a.rounds + 1):          # round 0 warms up
        order = names[r % len(names):] + names[:r % len(names)]
        if r:
            orders.append(order)
        for v in order:
            extra = variants[v]
            f = a.dir / f"{v}.dat"
            cmd = command(a.workload, a.native / prog_name, f, ops, a.ranks, extra)
            out = subprocess.run(cmd, env=dict(os.environ, **extra), capture_output=True, text=True, check=True).stdout
            j = json.loads(out.strip().splitlines()[-1])
            f.unlink()
            if r:
                rounds[v].append({k: j[secs] / j[n] * 1e9 for k, (secs, n) in keys.items()})
        loads.append(os.getloadavg()[0])
    summary = {v: {k: {"median": statistics.median(x[k] for x in rs), "min": min(x[k] for x in rs),
                       "max": max(x[k] for x in rs)} for k in keys} for v, rs in rounds.items()}
    # the cost above plain, round by round (the variants of a round ran back to back):
    # the median of the differences and their spread
    diffs = {v: {k: [x[k] - p[k] for x, p in zip(rounds[v], rounds["plain"])] for k in keys}
             for v in variants if v != "plain"}
    above = {v: {k: statistics.median(d[k]) for k in keys} for v, d in diffs.items()}
    above_spread = {v: {k: {"median": statistics.median(d[k]), "min": min(d[k]), "max": max(d[k]),
                            "quartiles": statistics.quantiles(d[k], n=4) if len(d[k]) > 1 else [d[k][0]] * 3}
                        for k in keys} for v, d in diffs.items()}
    width = max(len(v) for v in variants)
    for v, s in summary.items():
        print(f"{v:{width}}", "  ".join(f"{k} {s[k]['median']:.0f} [{s[k]['min']:.0f}-{s[k]['max']:.0f}]"
                                       for k in keys))
    for v, s in above_spread.items():
        print(f"{v:{width}} above plain:", "  ".join(f"{k} {s[k]['median']:+.0f} [{s[k]['min']:+.0f}..{s[k]['max']:+.0f}]"
                                                    for k in keys))
    print(f"load average {min(loads):.1f}-{max(loads):.1f}")
    if a.json:
        a.json.write_text(json.dumps({"workload": a.workload, "ops": ops, "ranks": a.ranks, "rounds": a.rounds,
                                      "clock": a.clock,
                                      "dir": str(a.dir), "darshan_lib": a.darshan_lib,
                                      "variants": {v: variants[v].get("LD_PRELOAD", "") for v in names},
                                      "orders": orders, "load_min_max": [min(loads), max(loads)],
                                      "summary": summary, "above_plain_median": above,
                                      "above_plain": above_spread, "rounds_data": rounds}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
