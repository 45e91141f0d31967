"""One ``sluice bench`` invocation: plans the workloads (``limits`` first,
or a quick ``limits`` when it was not asked for), runs them on the target,
and assembles the results document."""

from __future__ import annotations

import fnmatch
import os
import sys
import time
from pathlib import Path
from typing import Any

from sluice import __version__
from sluice.bench import sysinfo, variants as variants_mod, workloads
from sluice.bench.caches import CacheDropper
from sluice.bench.runner import Plan, Progress, Runner, add_fractions
from sluice.bench.workloads import limits as limits_mod
from sluice.errors import UserError

SCHEMA = "sluice-bench/1"


def parse_param_args(items: list[str] | tuple[str, ...], names: list[str]) -> dict[str, dict[str, str]]:
    """``[WORKLOAD.]NAME=VALUE`` strings to {workload: {name: text}}.

    Without a workload, the setting applies to every selected workload
    that has a parameter of that name (and must match at least one).
    """
    out: dict[str, dict[str, str]] = {n: {} for n in names}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"bad -p {item!r}: want [WORKLOAD.]NAME=VALUE")
        wl_name, dot, pname = key.rpartition(".")
        pname = pname.replace("-", "_")
        if dot:
            if wl_name not in out:
                raise UserError(f"-p {item!r}: workload {wl_name!r} is not being run")
            workloads.get(wl_name).param(pname)  # raises if unknown
            out[wl_name][pname] = value
        else:
            hit = False
            for n in names:
                if any(p.name == pname for p in workloads.get(n).params):
                    out[n][pname] = value
                    hit = True
            if not hit:
                raise UserError(f"-p {item!r}: no selected workload has a parameter {pname!r}")
    return out


def make_plans(
    names: list[str],
    rounds: int,
    warmup: int,
    param_args: list[str] | tuple[str, ...] = (),
    variant_names: list[str] | tuple[str, ...] = (),
) -> list[Plan]:
    if not names:
        raise UserError("name at least one workload (see --list)")
    seen: list[str] = []
    for n in names:
        workloads.get(n)
        if n not in seen:
            seen.append(n)
    quick = "limits" not in seen
    order = ["limits"] + [n for n in seen if n != "limits"]
    texts = parse_param_args(param_args, order)
    plans = []
    for n in order:
        wl = workloads.get(n)
        params = wl.defaults()
        is_quick = quick and n == "limits"
        if is_quick:
            params.update(limits_mod.QUICK)
        for k, text in texts[n].items():
            params[k] = wl.param(k).parse(text)
        if n == "limits" or not variant_names:
            vnames = list(wl.variants)
        else:
            vnames = list(dict.fromkeys(variant_names))
        allowed = wl.allowed_variants
        for v in vnames:
            variants_mod.get(v)
            if allowed is not None and not any(fnmatch.fnmatchcase(v, a) for a in allowed):
                raise UserError(f"workload {n} runs only as {', '.join(allowed)}, not {v}")
        plans.append(
            Plan(
                workload=wl,
                params=params,
                variants=[variants_mod.get(v) for v in vnames],
                rounds=min(rounds, limits_mod.QUICK_ROUNDS) if is_quick else rounds,
                warmup=0 if is_quick else warmup,
                quick=is_quick,
                note=(
                    "limits was not asked for: a quick run of it "
                    f"({min(rounds, limits_mod.QUICK_ROUNDS)} rounds, no warm-up, "
                    f"size={workloads.format_size(params['size'])}, files={params['files']}) "
                    "gives the fractions of the physical limit"
                )
                if is_quick
                else None,
            )
        )
    return plans


def check_target(target: Path) -> Path:
    if not target.exists():
        raise UserError(f"target {target} does not exist")
    if not target.is_dir():
        raise UserError(f"target {target} is not a directory")
    if not os.access(target, os.W_OK | os.X_OK):
        raise UserError(f"target {target} is not writable")
    return target.resolve()


def run_bench(
    target: Path,
    plans: list[Plan],
    seed: int,
    caches: CacheDropper,
    progress: Progress = lambda msg: None,
    argv: list[str] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Run every plan in order and return the results document."""
    target = check_target(target)
    for p in plans:
        p.workload.check(p.params)
    fs = sysinfo.filesystem_info(target)
    machine = sysinfo.machine_info()
    machine["loadavg_before"] = sysinfo.loadavg()
    machine["cpu_pressure_before"] = sysinfo.cpu_pressure()
    started = time.time()
    started_iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    results: dict[str, Any] = {}
    limit_medians: dict[str, float | None] = {}
    with Runner(target=target, seed=seed, caches=caches, progress=progress, timeout=timeout) as runner:
        for plan in plans:
            res = runner.run_plan(plan)
            if plan.workload.name == "limits":
                limit_medians = {m: s["median"] for m, s in res["summary"]["plain"].items()}
            else:
                add_fractions(res, limit_medians)
            results[plan.workload.name] = res
    finished = time.time()
    machine["loadavg_after"] = sysinfo.loadavg()
    machine["cpu_pressure_after"] = sysinfo.cpu_pressure()
    limits_plan = next((p for p in plans if p.workload.name == "limits"), None)
    return {
        "schema": SCHEMA,
        "sluice_version": __version__,
        "command": argv if argv is not None else sys.argv,
        "started": started_iso,
        "duration_seconds": round(finished - started, 3),
        "seed": seed,
        "config": {
            "target": str(target),
            "workloads": [p.workload.name for p in plans],
            "rounds": max((p.rounds for p in plans if not p.quick), default=plans[0].rounds),
            "warmup": max((p.warmup for p in plans if not p.quick), default=plans[0].warmup),
            "params": {p.workload.name: p.params for p in plans},
            "variants": {p.workload.name: [v.name for v in p.variants] for p in plans},
            "native_dir": _shown_path(os.environ.get("SLUICE_NATIVE_DIR")),
        },
        "machine": machine,
        "filesystem": fs,
        "drop_caches": caches.describe(),
        "limits": {
            "quick": bool(limits_plan and limits_plan.quick),
            "note": limits_plan.note if limits_plan else None,
            "medians": limit_medians,
        },
        "workloads": results,
    }


def default_json_path(doc: dict[str, Any], cwd: Path | None = None) -> Path:
    """bench/results/<workloads>-<fstype>-<timestamp>.json under the current directory."""
    names = [n for n in doc["config"]["workloads"] if not (n == "limits" and doc["limits"]["quick"])]
    label = sysinfo.fs_label(doc["filesystem"])
    stamp = doc["started"].replace("-", "").replace(":", "")
    base = cwd if cwd is not None else Path.cwd()
    return base / "bench" / "results" / f"{'+'.join(names)}-{label}-{stamp}.json"


def _shown_path(path: str | None) -> str | None:
    """A path as results record it: relative to the current directory when
    under it, else its last two components (a build tree's `build/native`):
    results travel with the repository, not with one machine."""
    if not path:
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = ".."
    if not rel.startswith(".."):
        return rel
    return os.path.join(*Path(os.path.abspath(path)).parts[-2:])
