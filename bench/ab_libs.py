#!/usr/bin/env python3
"""Two (or more) builds of the library side by side on one program: each
round runs the program under `sluice run --mode MODE` once per library, in
alternating order, in a fresh directory under --target, and reads one
figure from the JSON line the program prints (a bench workload program:
`seconds` by default). Prints, per library, the median [min-max] and the
median of the per-round ratios against the first library; writes the
runs as JSON.

    bench/ab_libs.py --lib OLD=/tmp/old/build/native --lib NEW=build/rel/native \\
        --mode stage --rounds 8 --target /mnt/sluice-pfs [--json bench/results/FILE.json] \\
        -- sluice-bench-create-once --dir {dir}/md --procs 2 --files 1000 --file-size 4096 --phase run --stat

The program is looked up in each library's directory (NATIVE_DIR/NAME), so
each build runs its own copy; `{dir}` is the round's fresh directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _shown(p: Path) -> str:
    """A library directory as recorded: relative to the repository when it is inside it (the results
    file is committed; this machine's checkout is not part of it)."""
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def run_once(native: Path, mode: str, argv: list[str], workdir: Path, metric: str) -> float:
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    prog = native / argv[0] if (native / argv[0]).exists() else Path(argv[0])
    args = [str(prog), *(a.replace("{dir}", str(workdir)) for a in argv[1:])]
    env = dict(os.environ, SLUICE_NATIVE_DIR=str(native),
               PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="sluice-ab-logs-") as logs:
        out = subprocess.run([sys.executable, "-m", "sluice", "run", "-q", "--mode", mode, "--log-dir", logs,
                              "--", *args], env=env, check=True, capture_output=True, text=True).stdout
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if not lines:
        raise SystemExit(f"ab_libs: {argv[0]} printed no JSON line")
    return float(json.loads(lines[-1])[metric])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", action="append", required=True, metavar="NAME=NATIVE_DIR")
    ap.add_argument("--mode", default="stage")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--target", type=Path, required=True, help="directory the program writes in")
    ap.add_argument("--metric", default="seconds", help="key of the program's JSON line (lower is better)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("argv", nargs="+")
    a = ap.parse_args()
    libs = []
    for spec in a.lib:
        name, _, path = spec.partition("=")
        if not path or not (Path(path) / "libsluice.so").exists():
            raise SystemExit(f"ab_libs: --lib {spec}: no libsluice.so there")
        libs.append((name, Path(path)))
    runs: dict[str, list[float]] = {name: [] for name, _ in libs}
    loads = []
    for r in range(a.rounds):
        order = libs if r % 2 == 0 else libs[::-1]
        loads.append(os.getloadavg()[0])
        for name, native in order:
            v = run_once(native.resolve(), a.mode, a.argv, a.target / f"sluice-ab-{os.getpid()}", a.metric)
            runs[name].append(v)
            print(f"round {r + 1}/{a.rounds} {name}: {v:.4g}", flush=True)
    shutil.rmtree(a.target / f"sluice-ab-{os.getpid()}", ignore_errors=True)
    base = libs[0][0]
    summary = {}
    for name, _ in libs:
        v = runs[name]
        ratios = [x / y for x, y in zip(v, runs[base])]
        summary[name] = {"median": statistics.median(v), "min": min(v), "max": max(v),
                         "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
                         "ratio_max": max(ratios)}
        print(f"{name}: {a.metric} {summary[name]['median']:.4g} [{min(v):.4g}-{max(v):.4g}]; "
              f"/ {base}: {summary[name]['ratio_median']:.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]")
    print(f"load1 before rounds: median {statistics.median(loads):.1f} [{min(loads):.1f}-{max(loads):.1f}]")
    if a.json:
        a.json.write_text(json.dumps({
            "command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "mode": a.mode,
            "metric": a.metric, "libs": {n: _shown(p) for n, p in libs}, "runs": runs, "summary": summary,
            "load1_before_rounds": loads}, indent=1) + "\n")


if __name__ == "__main__":
    main()
