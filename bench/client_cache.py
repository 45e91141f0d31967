#!/usr/bin/env python3
"""Whether a file system's client keeps the pages a process wrote for a
later reopen that reads them: a 16 MiB file written in 4 MiB writes
through each kind of write open, closed, reopened read-only and read at
--reads random 4 KiB pages (a cached page costs microseconds, one not
cached a round trip). Kinds: the creating open with O_TRUNC (as most
programs), the creating open without it, and an O_CREAT|O_EXCL open
closed at once and a second open without O_CREAT that writes (as
`sluice run --mode auto` makes a new file). Then, on the first kind's
file, the same pages read again through the same open and from another
process (what the client's cache answers once a page was read). Medians
of --rounds.

    bench/client_cache.py --target /mnt/sluice-pfs [--rounds 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZE = 16 << 20
PAGE = 4096


def write(path: Path, kind: str) -> None:
    if kind == "create-trunc":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    elif kind == "create":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    else:   # "create-then-reopen"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        fd = os.open(path, os.O_WRONLY)
    buf = os.urandom(4 << 20)
    for _ in range(SIZE // len(buf)):
        os.write(fd, buf)
    os.close(fd)


def read_s(path: Path, reads: int, seed: int, passes: int = 1) -> list[float]:
    """Seconds a read of each pass over the same random pages, one open."""
    r = random.Random(seed)
    offs = [r.randrange(SIZE // PAGE) * PAGE for _ in range(reads)]
    fd = os.open(path, os.O_RDONLY)
    out = []
    for _ in range(passes):
        t = time.perf_counter()
        for o in offs:
            os.pread(fd, PAGE, o)
        out.append((time.perf_counter() - t) / reads)
    os.close(fd)
    return out


def read_elsewhere_s(path: Path, reads: int, seed: int) -> float:
    """The same pages read by another process."""
    cp = subprocess.run([sys.executable, __file__, "--read-only", str(path), "--reads", str(reads),
                         "--seed", str(seed)], capture_output=True, text=True, check=True)
    return float(cp.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reads", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--read-only", type=Path, help=argparse.SUPPRESS)   # (the other process)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if a.read_only:
        print(read_s(a.read_only, a.reads, a.seed)[0])
        return
    if not a.target:
        ap.error("--target is required")
    work = Path(tempfile.mkdtemp(prefix="sluice-client-cache.", dir=a.target))
    kinds = ("create-trunc", "create", "create-then-reopen")
    got: dict[str, list[float]] = {k: [] for k in (*kinds, "read-again", "read-by-another-process")}
    try:
        for r in range(a.rounds):
            for k in kinds:
                p = work / f"{k}.{r}"
                write(p, k)
                first, again = read_s(p, a.reads, r, passes=2)
                got[k].append(first)
                if k == kinds[0]:
                    got["read-again"].append(again)
                    got["read-by-another-process"].append(read_elsewhere_s(p, a.reads, r))
                p.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {k: {"median_s": statistics.median(v), "rounds_s": v} for k, v in got.items()}
    for k, v in out.items():
        print(f"{k:24s} a random 4 KiB read: {v['median_s'] * 1e6:8.1f} us "
              f"[{min(got[k]) * 1e6:.1f}-{max(got[k]) * 1e6:.1f}]")
    if a.json:
        a.json.write_text(json.dumps({"command": " ".join(sys.argv), "target": str(a.target), "size": SIZE,
                                      "reads": a.reads, "kinds": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
