#!/usr/bin/env python3
"""The logs of a job of many processes with many files each, to measure
`sluice report` at scale (docs/report.md, "Reports of large jobs").

Each process is tests/progs/manyfiles under `sluice run`: it writes one
small record to each of FILES files of its own, so its log holds FILES
POSIX records. The processes share one job id.

    bench/report_scale.py OUT [--logs 64] [--files 1000]
    /usr/bin/time -v sluice report --json OUT/logs > /dev/null

With --time N (OUT/logs made already, or made first), the reports are
timed instead, N alternating rounds: `sluice report --json` (into a file
beside OUT, on its file system), `sluice report`, `sluice export --darshan`
(into OUT/export-timed), and on the same job exported as a Darshan log,
PyDarshan parsing it (`DarshanReport(..., read_all=True)`) and making its
own JSON (`to_json()`); CPU (user + system) and peak RSS of each, medians
[min-max]. --sluice-python DIR times the sluice package under DIR (the
python/ directory of another checkout, `git archive REV python | tar -x -C
/tmp/old` for an older commit) instead of this tree's.

    bench/report_scale.py OUT --time 3 [--json bench/results/FILE.json] [--sluice-python /tmp/old/python]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
    ap.add_argument("--time", type=int, default=0, help="time the reports in this many alternating rounds")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--sluice-python", type=Path, default=ROOT / "python",
                    help="the directory holding the sluice package to time (default: this tree's python/)")
    args = ap.parse_args()
    logs, data = args.out / "logs", args.out / "data"
    made = logs.exists() and any(logs.iterdir())
    if made and not args.time:
        sys.exit(f"{logs} is not empty")
    env = dict(os.environ)
    env.setdefault("SLUICE_NATIVE_DIR", str(ROOT / "build/dev/native"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.sluice_python.resolve()), env.get("PYTHONPATH")]))
    for i in range(0 if made else args.logs):
        d = data / f"p{i}"
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "sluice", "run", "--job-id", "report-scale", "--log-dir", str(logs),
                        "--path", str(data), "--", str(args.bin / "manyfiles"), str(d), str(args.files), "64", "1"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sizes = [p.stat().st_size for p in logs.glob("*.sluice")]
    print(f"{len(sizes)} logs, {sum(sizes):,} bytes, {sum(sizes) / (len(sizes) * args.files):.0f} bytes per file record")
    if args.time:
        timed(args, env)
    return 0


def _measured(cmd: list[str], env: dict, stdout) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS (MiB) of one command."""
    p = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def timed(args, env: dict) -> None:
    logs = args.out / "logs"
    dlog_dir = args.out / "darshan"
    if not dlog_dir.exists():
        subprocess.run([sys.executable, "-m", "sluice", "export", "--darshan", "-o", str(dlog_dir), str(logs)],
                       env=env, check=True, stdout=subprocess.DEVNULL)
    (dlog,) = [p for p in dlog_dir.glob("*.darshan") if not p.name.endswith(".fs.darshan")]
    py = "import darshan, sys; r = darshan.DarshanReport(sys.argv[1], read_all=True)"
    cases = {
        "sluice report --json": ([sys.executable, "-m", "sluice", "report", "--json", str(logs)], args.out / "job.json"),
        "sluice report": ([sys.executable, "-m", "sluice", "report", str(logs)], None),
        "sluice export --darshan": ([sys.executable, "-m", "sluice", "export", "--darshan", "-o",
                                     str(args.out / "export-timed"), str(logs)], None),
        "PyDarshan parse": ([sys.executable, "-c", py, str(dlog)], None),
        "PyDarshan to_json": ([sys.executable, "-c", py + "; sys.stdout.write(r.to_json())", str(dlog)],
                              args.out / "pydarshan.json"),
    }
    res: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    loads = [os.getloadavg()[0]]
    for _ in range(args.time):
        for name, (cmd, out) in cases.items():
            with open(out if out else os.devnull, "w") as f:
                res[name].append(_measured(cmd, env, f))
        loads.append(os.getloadavg()[0])
    summary = {}
    for name, rs in res.items():
        cpu, rss = [c for c, _ in rs], [m for _, m in rs]
        summary[name] = {"cpu_s": {"median": statistics.median(cpu), "min": min(cpu), "max": max(cpu)},
                         "peak_rss_mib": max(rss)}
        print(f"{name:24} CPU {statistics.median(cpu):.2f} s [{min(cpu):.2f}-{max(cpu):.2f}]  peak RSS {max(rss):.0f} MiB")
    print(f"load {min(loads):.1f}-{max(loads):.1f}; JSON {(args.out / 'job.json').stat().st_size:,} bytes, "
          f"PyDarshan's {(args.out / 'pydarshan.json').stat().st_size:,}")
    if args.json:
        args.json.write_text(json.dumps({"logs": str(logs), "rounds": args.time, "sluice": str(args.sluice_python), "load_min_max": [min(loads), max(loads)],
                                         "summary": summary, "runs": res}, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
