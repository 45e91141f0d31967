#!/usr/bin/env python3
"""The logs of a job of many processes with many files each, to measure
`sluice report` at scale (docs/report.md, "Reports of large jobs").

Each process is tests/progs/manyfiles under `sluice run`: it writes one
small record to each of FILES files of its own, so its log holds FILES
POSIX records. The processes share one job id.

    bench/report_scale.py OUT [--logs 64] [--files 1000]
    /usr/bin/time -v sluice report --json OUT/logs > /dev/null
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--logs", type=int, default=64)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--bin", type=Path, default=Path(os.environ.get("SLUICE_TEST_BIN", ROOT / "build/dev/tests/bin")))
    args = ap.parse_args()
    logs, data = args.out / "logs", args.out / "data"
    if logs.exists() and any(logs.iterdir()):
        sys.exit(f"{logs} is not empty")
    env = dict(os.environ)
    env.setdefault("SLUICE_NATIVE_DIR", str(ROOT / "build/dev/native"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), env.get("PYTHONPATH")]))
    for i in range(args.logs):
        d = data / f"p{i}"
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "sluice", "run", "--job-id", "report-scale", "--log-dir", str(logs),
                        "--path", str(data), "--", str(args.bin / "manyfiles"), str(d), str(args.files), "64", "1"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sizes = [p.stat().st_size for p in logs.glob("*.sluice")]
    print(f"{len(sizes)} logs, {sum(sizes):,} bytes, {sum(sizes) / (len(sizes) * args.files):.0f} bytes per file record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
