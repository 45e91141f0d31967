"""What a farm did: outcomes, per-task time, failures with their stderr, and
the I/O the tasks' sluice logs recorded — what the shared file system
received against what the programs asked for (what a plain run sends)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from sluice.farm.attempt import FAILED, INTERRUPTED, FarmSettings
from sluice.farm.dispatch import Dispatcher

# Operations a metadata server answers (opens and creates, stats, renames,
# unlinks, directory changes, attribute changes). An fopen is counted among
# POSIX_OPENS too (the open beneath it), so STDIO_OPENS is not added.
META_COUNTERS = ("POSIX_OPENS", "POSIX_STATS", "POSIX_RENAMES", "POSIX_UNLINKS", "POSIX_MKDIRS", "POSIX_RMDIRS",
                 "POSIX_OPENDIRS", "POSIX_LINKS", "POSIX_CHMODS", "POSIX_CHOWNS", "POSIX_UTIMES",
                 "POSIX_TRUNCATES", "POSIX_XATTR_READS", "POSIX_XATTR_WRITES")
DATA_COUNTERS = ("POSIX_WRITES", "POSIX_READS")
BYTE_COUNTERS = ("POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ", "STDIO_BYTES_WRITTEN", "STDIO_BYTES_READ")
_LISTED_FAILURES = 10
_TAIL_LINES = 5


def io_totals(farm: FarmSettings) -> dict:
    """App and fs totals over the logs of this farm's tasks (job ids JOB/N),
    overall and per task. Only the counters summed here are read, so a
    thousand logs take a second, not a full report's merge."""
    from sluice.logfmt import LogFormatError, read_log

    prefix = "".join(c if c.isalnum() or c in "-_." else "_" for c in farm.job) + "_"
    local = str(farm.local_dir) + "/"
    wanted = META_COUNTERS + DATA_COUNTERS + BYTE_COUNTERS
    per_task: dict[str, dict[str, dict[str, int]]] = {}
    logs = unreadable = 0
    first_error = ""
    names = sorted(farm.log_dir.glob(prefix + "*.sluice")) if farm.log_dir.is_dir() else []
    for path in names:
        try:
            log = read_log(path)
        except LogFormatError as e:
            unreadable += 1
            first_error = first_error or str(e)
            continue
        if not log.job_id.startswith(farm.job + "/"):
            continue
        logs += 1
        task = per_task.setdefault(log.job_id.rpartition("/")[2], {"app": dict.fromkeys(wanted, 0),
                                                                    "fs": dict.fromkeys(wanted, 0)})
        for rec in log.records:
            if rec.path.startswith(local):
                continue  # the node-local input copies: not the shared file system
            for side in ("app", "fs"):
                counters, total = getattr(rec, side), task[side]
                for k in wanted:
                    v = counters.get(k)
                    if v:
                        total[k] += int(v)
    if not logs:
        return {"logs": 0, "unreadable": unreadable, "first_error": first_error}
    overall = {side: _side_totals([t[side] for t in per_task.values()]) for side in ("app", "fs")}
    return {"logs": logs, "tasks": len(per_task), "unreadable": unreadable, "first_error": first_error, **overall,
            "per_task": {n: {side: _side_totals([t[side]]) for side in ("app", "fs")} for n, t in per_task.items()}}


def _side_totals(parts: list[dict[str, int]]) -> dict[str, int]:
    out = {k: sum(p[k] for p in parts) for k in parts[0]}
    out["metadata_ops"] = sum(out[k] for k in META_COUNTERS)
    out["data_ops"] = sum(out[k] for k in DATA_COUNTERS)
    out["bytes"] = sum(out[k] for k in BYTE_COUNTERS)
    return out


def build(d: Dispatcher, farm: FarmSettings, stop_signal: int, *, with_io: bool = True) -> dict:
    results = sorted(d.final.values(), key=lambda r: r.number)
    times = [r.seconds for r in results]
    summary = {
        "job": farm.job,
        "mode": farm.mode,
        "counts": {**d.counts(), "not_run": d.not_run()},
        "stopped_by_signal": stop_signal,
        "wall_seconds": _elapsed(d),
        "task_seconds": {"min": min(times), "median": statistics.median(times), "max": max(times),
                         "sum": sum(times)} if times else None,
        "slowest": [{"task": r.number, "seconds": r.seconds} for r in sorted(results, key=lambda r: -r.seconds)[:3]],
        "tasks": [{"task": r.number, "outcome": r.outcome, "status": r.status, "seconds": round(r.seconds, 6),
                   "attempts": r.attempt, "host": r.host, "rank": r.rank, "slot": r.slot} for r in results],
        "failed": [{"task": r.number, "origin": farm.tasks[r.number].origin, "status": r.status,
                    "attempts": r.attempt, "detail": r.detail, "host": r.host, "rank": r.rank, "stderr_tail": r.stderr_tail,
                    "kept_tier": r.kept_tier}
                   for r in results if r.outcome in (FAILED, INTERRUPTED)],
        "io": io_totals(farm) if with_io and farm.mode != "off" else None,
    }
    return summary


def _elapsed(d: Dispatcher) -> float:
    import time

    return time.monotonic() - d.started


def text(s: dict) -> list[str]:
    c = s["counts"]
    head = f"sluice farm: {c['total']} tasks: {c['done']} done"
    if c["skipped"]:
        head += f", {c['skipped']} skipped (done before)"
    head += f", {c['failed']} failed"
    if c["interrupted"]:
        head += f", {c['interrupted']} interrupted"
    if c["not_run"]:
        head += f", {c['not_run']} not run"
    if c["retried"]:
        head += f" ({c['retried']} attempt{'s' if c['retried'] != 1 else ''} retried)"
    lines = [head + f" in {s['wall_seconds']:.1f} s"]
    ts = s["task_seconds"]
    if ts:
        slow = ", ".join(f"#{x['task']} {x['seconds']:.2f} s" for x in s["slowest"])
        lines.append(f"  task time: min {ts['min']:.2f} s, median {ts['median']:.2f} s, max {ts['max']:.2f} s "
                     f"(slowest: {slow})")
    for f in s["failed"][:_LISTED_FAILURES]:
        what = "interrupted" if f["detail"].startswith(("stopped", "killed:")) else "failed"
        lines.append(f"  task {f['task']} ({f['origin']}) {what} after {f['attempts']} "
                     f"attempt{'s' if f['attempts'] != 1 else ''} on {f['host']}: {f['detail']}")
        for t in f["stderr_tail"].rstrip("\n").splitlines()[-_TAIL_LINES:]:
            lines.append(f"      | {t}")
    if len(s["failed"]) > _LISTED_FAILURES:
        lines.append(f"  ... and {len(s['failed']) - _LISTED_FAILURES} more (sluice farm --json FILE lists them all)")
    io = s["io"]
    if io and io.get("logs"):
        app, fs = io["app"], io["fs"]
        if not fs["metadata_ops"]:
            ratio = "none reached it"
        elif fs["metadata_ops"] <= app["metadata_ops"]:
            ratio = f"{app['metadata_ops'] / fs['metadata_ops']:.1f}x fewer"
        else:
            ratio = f"{fs['metadata_ops'] / max(1, app['metadata_ops']):.1f}x more"
        lines.append(f"  shared file system (logs of {io['tasks']} tasks): {fs['metadata_ops']:,} metadata operations "
                     f"where the programs asked for {app['metadata_ops']:,} ({ratio}); "
                     f"{fs['data_ops']:,} reads and writes where they made {app['data_ops']:,}")
    if io and io.get("unreadable"):
        lines.append(f"  {io['unreadable']} task log{'s' if io['unreadable'] != 1 else ''} could not be read, "
                     f"left out of the figures above (first: {io['first_error']})")
    if c["failed"] or c["interrupted"] or c["not_run"]:
        lines.append("  run the same command again to run what did not finish (finished tasks are skipped)")
    return lines


def write_json(s: dict, path: str) -> None:
    Path(path).write_text(json.dumps(s, indent=1) + "\n")
