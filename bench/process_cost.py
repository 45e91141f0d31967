#!/usr/bin/env python3
"""What sluice costs a short process: a shell loop of COUNT short processes
(`/bin/true`, `mv`, a netCDF-4 operator: the cdo-nco mirror's `timmean`),
run plain and under `sluice run --mode MODE` with each library build given,
in alternating order, round after round. Per build and mode it prints the
CPU time (user + system, of the whole process tree) each process costs
above plain, median [min-max] over the rounds; `sluice run`'s own start and
end, measured in the same round with `/bin/true`, are taken out. With
--callgrind it also counts the instructions one process of each program
executes (user space; the same count every time, whatever the load).

    bench/process_cost.py --lib OLD=/tmp/old/build/native --lib NEW=build/rel/native \\
        --modes profile,stage --count 200 --rounds 7 --callgrind \\
        [--target DIR] [--json bench/results/process-cost-COMMIT.json]

The netCDF program is the first build's `sluice-bench-cdo-nco` (so every
build runs the same program); its input is made once under --target.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ("true", "mv", "netcdf")


def _shown(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def loop_script(program: str, count: int, op: str) -> str:
    """COUNT processes of one program, in a POSIX shell loop."""
    body = {
        "true": "/bin/true",
        "mv": "/bin/mv -f a.txt b.txt; /bin/mv -f b.txt a.txt",
        "netcdf": f"{op} timmean in_1.nc tm.nc",
    }[program]
    n = count // 2 if program == "mv" else count
    return f"i=0; while [ $i -lt {n} ]; do {body}; i=$((i + 1)); done"


def children_cpu(argv: list[str], env: dict, cwd: Path) -> float:
    """User + system seconds of argv and everything it started."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sluice_argv(mode: str, logs: str, tier: str, argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "sluice", "run", "-q", "--mode", mode, "--log-dir", logs, "--tier", tier, "--",
            *argv]


def instructions(argv: list[str], env: dict, cwd: Path) -> int:
    """Instructions argv executes (callgrind, children followed: the
    preload's env is the first image)."""
    with tempfile.TemporaryDirectory(prefix="sluice-cg-") as d:
        subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                        f"--callgrind-out-file={d}/cg.%p", *argv], env=env, cwd=cwd, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        for f in Path(d).iterdir():
            for line in f.read_text(errors="replace").splitlines():
                if line.startswith("summary:") or line.startswith("totals:"):
                    total += int(line.split()[1])
                    break
        return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", action="append", required=True, metavar="NAME=NATIVE_DIR",
                    help="a build's native directory (libsluice.so and the tools); repeatable")
    ap.add_argument("--modes", default="profile,stage")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--count", type=int, default=200, help="processes per loop")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--target", type=Path, default=Path(tempfile.gettempdir()),
                    help="where the loops run (their files and logs)")
    ap.add_argument("--logs", type=Path, help="where sluice run writes the logs (default: beside the loops, "
                    "under --target): the log files' own cost depends on that file system")
    ap.add_argument("--callgrind", action="store_true", help="also count one process's instructions")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()

    libs = {}
    for spec in a.lib:
        name, _, path = spec.partition("=")
        if not path or not (Path(path) / "libsluice.so").exists():
            raise SystemExit(f"process_cost: --lib {spec}: no libsluice.so there")
        libs[name] = Path(path).resolve()
    modes = a.modes.split(",")
    programs = a.programs.split(",")
    first = next(iter(libs.values()))
    op = str(first / "sluice-bench-cdo-nco")
    work = Path(tempfile.mkdtemp(prefix="sluice-process-cost-", dir=a.target))
    tier = Path(tempfile.mkdtemp(prefix="sluice-process-cost-tier-", dir="/dev/shm"))
    os.chmod(tier, 0o700)
    try:
        (work / "a.txt").write_text("x\n")
        if "netcdf" in programs:
            subprocess.run([op, "setup", "--dir", str(work), "--members", "1"], check=True, stdout=subprocess.DEVNULL)
        base_env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
        base_env.pop("LD_PRELOAD", None)
        cpu: dict[str, list[float]] = {}
        rows = []
        for rnd in range(a.rounds):
            for prog in programs:
                script = loop_script(prog, a.count, op)
                plain = children_cpu(["sh", "-c", script], base_env, work)
                rows.append({"round": rnd, "program": prog, "variant": "plain", "cpu_s": plain})
                for name, native in (list(libs.items()) if rnd % 2 == 0 else list(libs.items())[::-1]):
                    env = dict(base_env, SLUICE_NATIVE_DIR=str(native))
                    for mode in modes:
                        with tempfile.TemporaryDirectory(prefix="logs-", dir=a.logs or work) as logs:
                            start = children_cpu(sluice_argv(mode, logs, str(tier), ["/bin/true"]), env, work)
                        with tempfile.TemporaryDirectory(prefix="logs-", dir=a.logs or work) as logs:
                            total = children_cpu(sluice_argv(mode, logs, str(tier), ["sh", "-c", script]), env, work)
                        per = (total - start - plain) / a.count
                        cpu.setdefault(f"{prog} {name} {mode}", []).append(per)
                        rows.append({"round": rnd, "program": prog, "variant": f"{name} {mode}", "cpu_s": total,
                                     "run_start_cpu_s": start, "per_process_ms": per * 1e3})
            print(f"round {rnd + 1}/{a.rounds} done (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
        summary = {}
        print(f"CPU time per process above plain, ms (median [min-max] of {a.rounds} rounds, {a.count} processes each):")
        for key, vals in cpu.items():
            ms = sorted(v * 1e3 for v in vals)
            summary[key] = {"median_ms": statistics.median(ms), "min_ms": ms[0], "max_ms": ms[-1]}
            print(f"  {key:28s} {statistics.median(ms):6.2f} [{ms[0]:.2f}-{ms[-1]:.2f}]")
        instr = {}
        if a.callgrind and shutil.which("valgrind"):
            print("instructions of one process (callgrind):")
            one = {"true": ["/bin/true"], "mv": ["/bin/mv", "-f", "a.txt", "b.txt"],
                   "netcdf": [op, "timmean", "in_1.nc", "tm.nc"]}
            for prog in programs:
                argv = one[prog]
                plain_n = instructions(["env", *argv], base_env, work)
                if prog == "mv":
                    (work / "b.txt").rename(work / "a.txt")
                instr[f"{prog} plain"] = plain_n
                line = f"  {prog:8s} plain {plain_n:12,d}"
                for name, native in libs.items():
                    env = dict(base_env, SLUICE_MODE="profile", SLUICE_LOG_DIR=str(work / "cg-logs"),
                               SLUICE_JOB_ID="process-cost")
                    n = instructions(["env", f"LD_PRELOAD={native / 'libsluice.so'}", *argv], env, work)
                    if prog == "mv":
                        (work / "b.txt").rename(work / "a.txt")
                    instr[f"{prog} {name}"] = n
                    line += f"  {name} {n:12,d} (+{n - plain_n:,d})"
                print(line)
        if a.json:
            a.json.parent.mkdir(parents=True, exist_ok=True)
            a.json.write_text(json.dumps({
                "command": " ".join([_shown(Path(sys.argv[0]))] + sys.argv[1:]),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "libs": {k: _shown(v) for k, v in libs.items()}, "count": a.count, "rounds": a.rounds,
                "target": str(a.target), "logs": str(a.logs or a.target),
                "summary": summary, "instructions": instr, "runs": rows}, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tier, ignore_errors=True)


if __name__ == "__main__":
    main()
