#!/usr/bin/env python3
"""What writing the log costs at exit (docs/logformat.md): a process writes
FILES small files (tests/progs/manyfiles DIR FILES 64 1) under each libsluice
given, in alternating rounds, and beside the same program run plain.

The writer's time is taken between the last data file's mtime and the log's
(both on DIR's file system, tmpfs by default), per record; the program's
whole run time plain and under each library is given for scale. With
--callgrind, the user-space instructions of sluice_log_write are counted
once per library (valgrind; load does not change them).

    bench/log_write_cost.py --lib NEW=build/rel/native/libsluice.so --lib OLD=/tmp/old/libsluice.so \\
        [--files 5000] [--rounds 9] [--dir /dev/shm/lwc] [--callgrind] [--json bench/results/FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_once(prog: Path, d: Path, files: int, lib: str | None, compress: bool) -> dict[str, float]:
    shutil.rmtree(d, ignore_errors=True)
    (d / "data").mkdir(parents=True)
    env = dict(os.environ)
    if lib:
        env.update(LD_PRELOAD=lib, SLUICE_PATHS=str(d / "data"), SLUICE_LOG_DIR=str(d / "logs"),
                   SLUICE_LOG_COMPRESS="1" if compress else "0")
    t0 = time.perf_counter()
    subprocess.run([str(prog), str(d / "data"), str(files), "64", "1"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    out = {"wall_s": time.perf_counter() - t0}
    if lib:
        (log,) = list((d / "logs").glob("*.sluice"))
        last = max(e.stat().st_mtime_ns for e in os.scandir(d / "data"))
        out["exit_us_per_record"] = (log.stat().st_mtime_ns - last) / 1e3 / files
        out["bytes_per_record"] = log.stat().st_size / files
    return out


def instructions(prog: Path, d: Path, files: int, lib: str, compress: bool) -> int | None:
    shutil.rmtree(d, ignore_errors=True)
    (d / "data").mkdir(parents=True)
    env = dict(os.environ, LD_PRELOAD=lib, SLUICE_PATHS=str(d / "data"), SLUICE_LOG_DIR=str(d / "logs"),
               SLUICE_LOG_COMPRESS="1" if compress else "0")
    cg = d / "cg.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", "--toggle-collect=sluice_log_write",
                    str(prog), str(d / "data"), str(files), "64", "1"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = subprocess.run(["callgrind_annotate", str(cg)], capture_output=True, text=True).stdout
    m = re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text)
    return int(m.group(1).replace(",", "")) if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", action="append", required=True, help="NAME=PATH of a libsluice.so (repeatable)")
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--dir", type=Path, default=Path("/dev/shm/sluice-log-write-cost"))
    ap.add_argument("--plain-log", action="store_true", help="SLUICE_LOG_COMPRESS=0 (regions stored plain)")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--bin", type=Path, default=Path(os.environ.get("SLUICE_TEST_BIN", ROOT / "build/dev/tests/bin")))
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    libs = dict(x.split("=", 1) for x in a.lib)
    prog = a.bin / "manyfiles"
    compress = not a.plain_log
    rounds: dict[str, list[dict[str, float]]] = {n: [] for n in ["plain", *libs]}
    for r in range(a.rounds + 1):          # round 0 warms up
        for name in rounds:
            res = run_once(prog, a.dir / name, a.files, libs.get(name), compress)
            if r:
                rounds[name].append(res)
    summary: dict[str, dict] = {}
    for name, rs in rounds.items():
        summary[name] = {k: {"median": statistics.median(x[k] for x in rs), "min": min(x[k] for x in rs),
                             "max": max(x[k] for x in rs)} for k in rs[0]}
        if name != "plain":
            summary[name]["wall_vs_plain"] = statistics.median(x["wall_s"] / p["wall_s"]
                                                               for x, p in zip(rs, rounds["plain"]))
            if a.callgrind:
                summary[name]["instructions"] = instructions(prog, a.dir / name, a.files, libs[name], compress)
    for name, s in summary.items():
        line = f"{name:8} wall {s['wall_s']['median']:.3f} s"
        if name != "plain":
            e = s["exit_us_per_record"]
            line += (f" ({s['wall_vs_plain']:.2f}x plain)  exit {e['median']:.2f} us/record [{e['min']:.2f}-{e['max']:.2f}]"
                     f"  {s['bytes_per_record']['median']:.1f} B/record")
            if s.get("instructions"):
                line += f"  {s['instructions']:,} instructions in sluice_log_write"
        print(line)
    print(f"{a.files} records, {a.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    if a.json:
        a.json.write_text(json.dumps({"files": a.files, "rounds": a.rounds, "compress": compress, "libs": libs,
                                      "summary": summary, "rounds_data": rounds}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
