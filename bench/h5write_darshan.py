#!/usr/bin/env python3
"""H5Dwrite's per-call cost plain, under libsluice and under Darshan's
HDF5 module, in alternating rounds (docs/darshan.md, "What an H5Dwrite
costs"). Each round runs sluice-bench-h5write (bench/workloads/h5write.c)
once per variant, with LD_PRELOAD; sluice records DIR (SLUICE_PATHS), so
DIR may be under /dev/shm, but Darshan leaves /dev/ out: use a directory
it records (under /tmp) for a fair comparison.

    bench/h5write_darshan.py DIR --darshan-lib LIB [--native build/NAME/native]
        [--rounds 11] [--ops 200000] [--json bench/results/FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

KEYS = ("hyperslab_ns", "all_ns")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--darshan-lib", required=True, help="libdarshan.so built with --enable-hdf5-mod")
    ap.add_argument("--native", type=Path, default=Path("build/dev/native"))
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--ops", type=int, default=200_000)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    (a.dir / "darshan-logs").mkdir(exist_ok=True)
    variants = {
        "plain": {},
        "sluice": {"LD_PRELOAD": str((a.native / "libsluice.so").resolve()), "SLUICE_PATHS": str(a.dir),
                   "SLUICE_LOG_DIR": str(a.dir / "sluice-logs")},
        "darshan": {"LD_PRELOAD": a.darshan_lib, "DARSHAN_LOGPATH": str(a.dir / "darshan-logs"),
                    "DARSHAN_ENABLE_NONMPI": "1"},
    }
    rounds: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    loads = [os.getloadavg()[0]]
    for r in range(a.rounds + 1):          # round 0 warms up
        for v, extra in variants.items():
            f = a.dir / f"{v}.h5"
            out = subprocess.run([str(a.native / "sluice-bench-h5write"), "--file", str(f), "--ops", str(a.ops)],
                                 env=dict(os.environ, **extra), capture_output=True, text=True, check=True).stdout
            j = json.loads(out.strip().splitlines()[-1])
            f.unlink()
            if r:
                rounds[v].append({"hyperslab_ns": j["hyperslab_seconds"] / a.ops * 1e9,
                                  "all_ns": j["all_seconds"] / a.ops * 1e9})
        loads.append(os.getloadavg()[0])
    summary = {v: {k: {"median": statistics.median(x[k] for x in rs), "min": min(x[k] for x in rs),
                       "max": max(x[k] for x in rs)} for k in KEYS} for v, rs in rounds.items()}
    for v, s in summary.items():
        print(f"{v:8}", "  ".join(f"{k} {s[k]['median']:.0f} [{s[k]['min']:.0f}-{s[k]['max']:.0f}]" for k in KEYS))
    print(f"load average {min(loads):.1f}-{max(loads):.1f}")
    if a.json:
        a.json.write_text(json.dumps({"ops": a.ops, "rounds": a.rounds, "dir": str(a.dir), "darshan_lib": a.darshan_lib,
                                      "load_min_max": [min(loads), max(loads)], "summary": summary,
                                      "rounds_data": rounds}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
