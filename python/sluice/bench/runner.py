"""Runs workloads round by round and summarizes them.

For each workload: ``warmup`` warm-up rounds, then ``rounds`` measured
rounds; inside every round each variant runs once, in the declared order
(A B A B ...), so that the two members of a pair run one right after the
other. Before each run of a workload that reads, the page cache is dropped;
after each run the workload's files are removed. Then per variant and metric
the median, min and max, per non-baseline variant the pairwise ratios, and
per metric with a physical limit the fraction of that limit.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sluice.bench import stats
from sluice.bench.caches import CacheDropper
from sluice.bench.variants import Variant
from sluice.bench.workloads.base import RunContext, Workload

Progress = Callable[[str], None]


@dataclass
class Plan:
    """One workload as it will run."""

    workload: Workload
    params: dict[str, Any]
    variants: list[Variant]
    rounds: int
    warmup: int
    quick: bool = False  # the short limits run made because limits was not asked for
    note: str | None = None


@dataclass
class Slot:
    round: int  # 0-based; warm-up rounds count separately
    variant: str
    warmup: bool


def schedule(variants: list[str], rounds: int, warmup: int) -> list[Slot]:
    """Warm-up rounds, then measured rounds; every round runs each variant once, in order."""
    slots = [Slot(i, v, True) for i in range(warmup) for v in variants]
    slots += [Slot(i, v, False) for i in range(rounds) for v in variants]
    return slots


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _empty_dir(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)


@dataclass
class Runner:
    target: Path
    seed: int
    caches: CacheDropper
    progress: Progress = lambda msg: None
    timeout: float | None = None
    root: Path = field(init=False)
    scratch: Path = field(init=False)

    def __enter__(self) -> Runner:
        self.root = self.target / f"sluice-bench.{os.getpid()}"
        _empty_dir(self.root)
        self.scratch = Path(tempfile.mkdtemp(prefix="sluice-bench-"))
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def run_one(self, plan: Plan, slot: Slot, variant: Variant) -> dict[str, Any]:
        wl = plan.workload
        workdir = self.root / wl.name
        scratch = self.scratch / f"{wl.name}.{variant.name}"
        _empty_dir(workdir)
        _empty_dir(scratch)
        ctx = RunContext(
            workdir=workdir, scratch=scratch, variant=variant, params=plan.params,
            seed=self.seed, caches=self.caches, timeout=self.timeout,
        )  # fmt: skip
        load1 = os.getloadavg()[0]
        started = _now()
        dropped_before = self.caches.drop() if wl.reads else None
        t0 = time.perf_counter()
        try:
            metrics = wl.run(ctx)
        finally:
            elapsed = time.perf_counter() - t0
            shutil.rmtree(workdir, ignore_errors=True)
            shutil.rmtree(scratch, ignore_errors=True)
        return {
            "round": slot.round,
            "variant": variant.name,
            "warmup": slot.warmup,
            "started": started,
            "elapsed_seconds": elapsed,
            "load1_before": round(load1, 2),
            "caches_dropped": {"before": dropped_before, "within": ctx.caches_dropped},
            "metrics": metrics,
            "raw": ctx.raw,
        }

    def run_plan(self, plan: Plan) -> dict[str, Any]:
        wl = plan.workload
        by_name = {v.name: v for v in plan.variants}
        slots = schedule([v.name for v in plan.variants], plan.rounds, plan.warmup)
        records = []
        for slot in slots:
            tag = "warm-up" if slot.warmup else f"round {slot.round + 1}/{plan.rounds}"
            rec = self.run_one(plan, slot, by_name[slot.variant])
            self.progress(f"{wl.name}{' (quick)' if plan.quick else ''}: {tag} {slot.variant}: {rec['elapsed_seconds']:.1f} s")
            records.append(rec)
        return summarize_plan(plan, records)


def summarize_plan(plan: Plan, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON record of one workload: parameters, rounds, summaries, ratios."""
    wl = plan.workload
    names = [v.name for v in plan.variants]
    measured = [r for r in records if not r["warmup"]]
    series: dict[str, dict[str, list[float | None]]] = {v: {} for v in names}
    for v in names:
        rows = sorted((r for r in measured if r["variant"] == v), key=lambda r: r["round"])
        for m in wl.metrics:
            series[v][m.name] = [r["metrics"].get(m.name) for r in rows]
    summary = {v: {m: stats.summarize(vals) for m, vals in series[v].items()} for v in names}
    ratios: dict[str, dict[str, Any]] = {}
    base = names[0]
    for v in names[1:]:
        ratios[f"{v}/{base}"] = {
            m.name: stats.ratio_summary(series[base][m.name], series[v][m.name]) for m in wl.metrics
        }
    return {
        "name": wl.name,
        "summary_line": wl.summary,
        "quick": plan.quick,
        "note": plan.note,
        "params": plan.params,
        "params_shown": wl.describe(plan.params),
        "variants": names,
        "baseline": base,
        "reads": wl.reads,
        "rounds_measured": plan.rounds,
        "rounds_warmup": plan.warmup,
        "metrics": {
            m.name: {"unit": m.unit, "better": m.better, "limit": m.limit, "help": m.help} for m in wl.metrics
        },
        "rounds": records,
        "summary": summary,
        "ratios": ratios,
        "fraction_of_limit": {},
    }


def add_fractions(result: dict[str, Any], limit_medians: dict[str, float | None]) -> None:
    """Fill ``fraction_of_limit``: each variant's median over the limit's median."""
    out: dict[str, dict[str, Any]] = {}
    for v in result["variants"]:
        for name, meta in result["metrics"].items():
            lim = meta.get("limit")
            if not lim:
                continue
            med = result["summary"][v][name]["median"]
            out.setdefault(v, {})[name] = {
                "limit": lim,
                "limit_median": limit_medians.get(lim),
                "fraction": stats.fraction(med, limit_medians.get(lim)),
            }
    result["fraction_of_limit"] = out
