"""`sluice advise`: what is wrong with a job's I/O and how to fix it.

    from sluice.report.model import load_job
    from sluice.advise import advise, to_json
    findings = advise(load_job(["sluice-logs"]))

Each finding names the files (as path prefixes), the counters behind it,
the share of the job's I/O time it explains (its severity), the sluice mode
that fixes it per prefix (as a `--policy` line and a `sluice.toml`
snippet), file layout and library settings where the counters show the
need, and the expected gain where it can be estimated. docs/advise.md has
every check and threshold.
"""

from __future__ import annotations

import shlex

from sluice.advise.context import context
from sluice.advise.counters import io_time
from sluice.advise.finding import Finding
from sluice.advise.fix import MAX_POLICY_ITEMS, policy_items, program_command, run_line, toml_snippet
from sluice.advise.rank import SEVERITIES, rank, run_rules
from sluice.report.model import Job
from sluice.report.pattern import LOCAL_FS_TYPES, log_mounts, mount_of


def advise(job: Job) -> list[Finding]:
    """The findings of one job, most costly first (rank.py says how)."""
    ctx = context(job)
    return rank(ctx, run_rules(ctx))


def job_times(job: Job) -> tuple[float, float]:
    """(seconds in I/O calls, seconds the processes ran), each summed over processes."""
    return sum(io_time(f.app) for f in job.files), sum(l.runtime for l in job.logs)


def fix_of(f: Finding, command: str) -> dict:
    settings: dict = {}
    if f.mode != "profile" and not f.in_effect and f.policy_paths:
        items = policy_items(f.policy_paths, f.mode)
        rules = [tuple(i.rsplit("=", 1)) for i in items]
        settings["policy"] = items
        settings["command"] = run_line(rules, command)
        settings["toml"] = toml_snippet(rules, f.toml)
    elif f.toml and f.mode != "profile":
        settings["toml"] = toml_snippet([], f.toml)
    if f.mpi_info:
        settings["mpi_info"] = dict(f.mpi_info)
    if f.hints:
        settings["hints"] = list(f.hints)
    return {"mode": f.mode, "layout": list(f.layout), "settings": settings}


def finding_json(f: Finding, command: str) -> dict:
    evidence = {"text": f.text, "counters": {k: _num(v) for k, v in f.counters.items()},
                "io_time_s": f.cost, "io_time_share": f.share, "files": len(f.files),
                "fix_in_effect": f.in_effect, "modes_in_effect": list(f.modes_in_effect),
                "mode_did_not_act": len(f.had_mode), "fallbacks": {k: _num(v) for k, v in f.fallbacks.items()}}
    gain = None
    if f.gain is not None:
        gain = {"seconds": f.gain["seconds"], "share_of_io_time": f.gain.get("share_of_io_time", 0.0),
                "how": f.gain["how"], "file_system": f.gain.get("file_system"),
                "per_call_s": f.gain.get("per_call_s")}
        gain.update({k: f.gain[k] for k in ("calls_before", "calls_after") if k in f.gain})
    return {"id": f.id, "severity": f.severity, "paths": list(f.paths), "evidence": evidence,
            "fix": fix_of(f, command), "expected_gain": gain}


def _num(x):
    if isinstance(x, float) and x.is_integer() and abs(x) < 2 ** 53:
        return int(x)
    return x


# What --mode auto does per file (src/core/modes.def): a file the program creates or truncates is staged, one it
# updates or reads is buffered, MPI-IO writes go through acb's cost model. The findings whose fix that is:
# buffer's and acb's, and stage's where the files are new files written by one process each.
AUTO_COVERS = {"buffer": None, "acb": None, "stage": {"file-per-process-small-files"}}


def auto_line(job: Job, findings: list[Finding], fs_profile: str | None = None) -> str | None:
    """`sluice run --mode auto -- CMD` when auto's per-file choice is the fix of every finding that asks for a
    mode (so one setting replaces the policy), else None; with `--fs FS.json` when a calibrated profile with
    auto's figures was given (auto's first-write size by it)."""
    todo = [f for f in findings if f.mode != "profile" and not f.in_effect and f.policy_paths]
    if not todo:
        return None
    for f in todo:
        if f.mode not in AUTO_COVERS or (AUTO_COVERS[f.mode] is not None and f.id not in AUTO_COVERS[f.mode]):
            return None
    # auto only profiles files on a node's own file system unless told otherwise
    mounts = log_mounts(job.logs)
    local = any((m := mount_of(p, mounts)) is not None and m[1] in LOCAL_FS_TYPES
                for f in todo for p in f.files if p not in f.had_mode)
    fs = [f"--fs {shlex.quote(fs_profile)}"] if fs_profile else []
    return run_line([], program_command(job), ["--mode auto --auto-local" if local else "--mode auto", *fs])


def to_json(job: Job, findings: list[Finding] | None = None, fs_profile: str | None = None) -> dict:
    """`sluice advise --json`: {"findings": [...], "auto": CMD or null}, findings most costly first; "auto"
    is the one `--mode auto` command that applies every finding's mode, where there is one."""
    findings = advise(job) if findings is None else findings
    command = program_command(job)
    return {"findings": [finding_json(f, command) for f in findings], "auto": auto_line(job, findings, fs_profile)}


def plan(findings: list[Finding]) -> list[tuple[str, str]]:
    """One policy for the whole job: each prefix the mode of its most costly finding."""
    rules: dict[str, str] = {}
    for f in findings:
        if f.mode == "profile" or f.in_effect:
            continue
        for item in policy_items(f.policy_paths, f.mode):
            prefix, mode = item.rsplit("=", 1)
            rules.setdefault(prefix, mode)
    return list(rules.items())[:MAX_POLICY_ITEMS]


__all__ = ["advise", "to_json", "plan", "auto_line", "fix_of", "job_times", "Finding", "SEVERITIES"]
