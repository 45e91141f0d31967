"""Metadata rates of a directory: one process, plain ``os`` calls.

usage: python3 -m sluice.testbed.mdbench DIR [REPS] [NFILES]

Each repetition works in a new subdirectory of DIR and times, in order:
  create      open(O_CREAT|O_EXCL|O_WRONLY) + write(4 KiB) + close, NFILES files
  stat        stat() of each of those files
  open_close  open(O_RDONLY) + close of one of them, NFILES times
  unlink      unlink() of each file
Prints one JSON line per repetition (operations/s, and the 1-minute load
average at its start), then one line with the medians.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable

Step = Callable[[], None]


def _rate(n: int, step: Step) -> float:
    t0 = time.perf_counter()
    step()
    return round(n / (time.perf_counter() - t0), 1)


def one_rep(base: str, n: int, buf: bytes) -> dict[str, float]:
    os.mkdir(base)
    paths = [f"{base}/f{i}" for i in range(n)]

    def create() -> None:
        for p in paths:
            fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            os.write(fd, buf)
            os.close(fd)

    def stat() -> None:
        for p in paths:
            os.stat(p)

    def open_close() -> None:
        for _ in range(n):
            os.close(os.open(paths[0], os.O_RDONLY))

    def unlink() -> None:
        for p in paths:
            os.unlink(p)

    load = os.getloadavg()[0]
    result = {name: _rate(n, step) for name, step in
              [("create", create), ("stat", stat), ("open_close", open_close), ("unlink", unlink)]}
    os.rmdir(base)
    return {**result, "load1": round(load, 2)}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    target = argv[0]
    reps = int(argv[1]) if len(argv) > 1 else 3
    n = int(argv[2]) if len(argv) > 2 else 5000
    buf = os.urandom(4096)
    runs = []
    for k in range(reps):
        r = one_rep(os.path.join(target, f"mdbench.{os.getpid()}.{k}"), n, buf)
        runs.append(r)
        print(json.dumps({"rep": k, "files": n, **r}), flush=True)
    median = {key: round(statistics.median(r[key] for r in runs), 1) for key in runs[0]}
    print(json.dumps({"median": median, "reps": reps, "files": n}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
