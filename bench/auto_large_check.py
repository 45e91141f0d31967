#!/usr/bin/env python3
"""Whether --mode auto's first-write size by the model picks the cheaper
way: a job of --procs processes at once, each writing --files new files of
--file-size in calls of one size, run whole by `sluice run` (its return:
every file published) under auto three ways — staged whatever the size
(--auto-large 0), straight through from the first write (--auto-large 1),
and as `sluice run --fs FS.json` gives it (the model's size from a
calibrated profile) — beside auto's default (--auto-large 1 MiB),
--mode profile (the launcher's own cost) and the plain program. Each
size's variants in turn within a round, the order turned each round;
medians of --rounds with their range, and per size the model's way and
the default's over the better of staged and straight through. Each
auto run's counters are checked: its files went the way it was told.

    bench/auto_large_check.py --target /mnt/sluice-pfs --fs FS.json [--rounds 5] [--json FILE]
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from sluice.autolarge import auto_large_of, read_profile, size_text  # noqa: E402
from sluice.paths import native  # noqa: E402
from sluice.report.model import load_job  # noqa: E402
from sluice.settings import parse_size  # noqa: E402

SIZES = (64 << 10, 256 << 10, 512 << 10, 1 << 20, 4 << 20)
VARIANTS = ("plain", "profile", "staged", "direct", "default", "model")


def job_script(work: Path, procs: int, files: int, size: int, request: int) -> str:
    prog = native("sluice-bench-limits", "bin")
    one = lambda p, i: (f"{prog} write --file {work}/p{p}.f{i} --size {size} --request-size {request} "  # noqa: E731
                        "--no-fsync >/dev/null")
    return " ".join(f"( {' && '.join(one(p, i) for i in range(files))} ) &" for p in range(procs)) + " wait"


def run_variant(variant: str, script: str, fs: Path, logs: Path) -> float:
    sluice = [sys.executable, "-m", "sluice", "run", "-q", "--log-dir", str(logs)]
    argv = {"plain": ["sh", "-c", script],
            "profile": [*sluice, "--mode", "profile", "--", "sh", "-c", script],
            "staged": [*sluice, "--mode", "auto", "--auto-large", "0", "--", "sh", "-c", script],
            "direct": [*sluice, "--mode", "auto", "--auto-large", "1", "--", "sh", "-c", script],
            "default": [*sluice, "--mode", "auto", "--", "sh", "-c", script],
            "model": [*sluice, "--mode", "auto", "--fs", str(fs), "--", "sh", "-c", script]}[variant]
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    t0 = time.monotonic()
    subprocess.run(argv, env=env, check=True)
    return time.monotonic() - t0


def went_direct(logs: Path, work: Path) -> list[int]:
    """POSIX_AUTO_DIRECT of each of the job's files."""
    return [int(f.app.get("POSIX_AUTO_DIRECT", 0)) for f in load_job([logs]).files if f.path.startswith(str(work))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=Path, required=True)
    ap.add_argument("--fs", type=Path, required=True, help="the target's calibrated profile")
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--file-size", default="16M")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    model = auto_large_of(read_profile(a.fs))
    if model is None:
        sys.exit(f"{a.fs}: no staged-against-direct figures (calibrate again)")
    sizes = [parse_size(s, '--sizes') for s in a.sizes.split(",")]
    size = parse_size(a.file_size, '--file-size')
    work = Path(tempfile.mkdtemp(prefix="sluice-auto-large.", dir=a.target))
    got: dict[int, dict[str, list[float]]] = {q: {v: [] for v in VARIANTS} for q in sizes}
    try:
        for r in range(a.rounds):
            for q in sizes:
                order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
                for v in order:
                    logs = Path(tempfile.mkdtemp(prefix="sluice-auto-large-logs."))
                    try:
                        got[q][v].append(run_variant(v, job_script(work, a.procs, a.files, size, q), a.fs, logs))
                        if v in ("staged", "direct", "default", "model"):
                            want = {"staged": False, "direct": True, "default": q >= 1 << 20,
                                    "model": model.large > 0 and q >= model.large}[v]
                            seen = went_direct(logs, work)
                            if len(seen) != a.procs * a.files or any(bool(x) != want for x in seen):
                                sys.exit(f"{v} at {size_text(q)}: files straight through {seen}, expected "
                                         f"{'all' if want else 'none'}")
                    finally:
                        shutil.rmtree(logs, ignore_errors=True)
                    for f in work.iterdir():
                        f.unlink()
                print(f"round {r + 1}/{a.rounds}: {size_text(q)} done", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = {}
    print(f"model's size: {size_text(model.large) if model.large > 1 else 'every write'} ({model.why})")
    print(f"{'calls':>8s} " + " ".join(f"{v:>16s}" for v in VARIANTS) + "   model/best default/best")
    for q in sizes:
        med = {v: statistics.median(x) for v, x in got[q].items()}
        best = min(med["staged"], med["direct"])
        rows[str(q)] = {"median_s": med, "range_s": {v: [min(x), max(x)] for v, x in got[q].items()},
                        "rounds_s": got[q], "model_way": "direct" if model.large > 0 and q >= model.large else
                        "staged", "model_over_best": med["model"] / best, "default_over_best": med["default"] / best,
                        "better_way": "direct" if med["direct"] < med["staged"] else "staged"}
        print(f"{size_text(q):>8s} " + " ".join(f"{med[v]:7.3f} [{min(got[q][v]):.2f}-{max(got[q][v]):.2f}]"
                                              for v in VARIANTS)
              + f"   {rows[str(q)]['model_over_best']:.3f} {rows[str(q)]['default_over_best']:.3f}")
    if a.json:
        a.json.write_text(json.dumps({"command": " ".join(sys.argv), "target": str(a.target), "fs_profile": str(a.fs),
                                      "model_large": model.large, "model_why": model.why, "procs": a.procs,
                                      "files": a.files, "file_size": size, "sizes": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
