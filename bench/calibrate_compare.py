#!/usr/bin/env python3
"""Two file-system profiles of one file system (sluice bench calibrate),
figure by figure: the ratio of their medians, and how many agree within
--tolerance (20 %); with --best, the best round of each figure instead of
the median (the lowest time, the highest rate).

    bench/calibrate_compare.py bench/results/calibrate-A.json bench/results/calibrate-B.json [--best]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def medians(doc: dict, path: str = "", out: dict | None = None) -> dict[str, float]:
    out = {} if out is None else out
    if isinstance(doc, dict) and "median" in doc:
        out[path] = doc["median"]
    elif isinstance(doc, dict):
        for k, v in doc.items():
            medians(v, f"{path}.{k}" if path else k, out)
    return out


def best_rounds(doc: dict) -> dict[str, float]:
    """Each per-round figure's best: the lowest for a time, the highest for a rate."""
    vals: dict[str, list[float]] = {}
    for r in doc["rounds"]:
        for p, figs in r["procs"].items():
            for k, v in figs.items():
                vals.setdefault(f"{k}@{p}", []).append(v)
        for k in ("small_write_s", "small_read_s", "fsync_s", "shared_MBps", "apart_MBps"):
            vals.setdefault(k, []).append(r[k])
    return {k: (min(v) if k.split("@")[0].endswith("_s") else max(v)) for k, v in vals.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--tolerance", type=float, default=0.20)
    ap.add_argument("--best", action="store_true")
    o = ap.parse_args()
    da, db = (json.loads(p.read_text()) for p in (o.a, o.b))
    if o.best:
        fa, fb = best_rounds(da), best_rounds(db)
    else:
        fa = medians({"metadata": da["metadata"], "data": da["data"]})
        fb = medians({"metadata": db["metadata"], "data": db["data"]})
    n = ok = 0
    for k in fa:
        if k not in fb or not fa[k]:
            continue
        r = fb[k] / fa[k]
        good = 1 / (1 + o.tolerance) <= r <= 1 + o.tolerance
        n, ok = n + 1, ok + good
        print(f"{k:45s} {fa[k]:12.4g} {fb[k]:12.4g}  {r:5.2f}{'' if good else '  <-- off'}")
    print(f"{ok} of {n} figures within {o.tolerance * 100:.0f} %")
    sys.exit(0 if ok == n else 1)


if __name__ == "__main__":
    main()
