"""From rules to the list advise prints: every rule run on every file,
overlaps settled by cost, the run's modes judged, then severity and order.

A finding never hides a costlier one: a rule's `folds` lets a finding take
files out of a cheaper one whose time its own cost already holds (the
cheaper rule is run again without them), and nothing else removes a
finding. Files may carry several findings; they are ordered by the share
of the job's I/O time each explains.
"""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.effect import judge
from sluice.advise.finding import Finding
from sluice.advise.fix import group_paths
from sluice.advise.rules import IDS, RULES

SEVERITIES = ("high", "medium", "low")
_BY_ID = {r.id: r for r in RULES}


def _fold(ctx: Context, found: dict[str, list[Finding]]) -> None:
    """Each folded rule run again without the files of costlier findings that fold it, until none
    overlaps (its findings only get cheaper, so this ends)."""
    folders = {i: [r.id for r in RULES if i in r.folds] for r in RULES for i in r.folds}
    excluded: dict[str, set[str]] = {i: set() for i in folders}
    changed = True
    while changed:
        changed = False
        for fid, by in folders.items():
            take = {p for f in found[fid] for g in (x for b in by for x in found[b]) if g.cost >= f.cost
                    for p in set(g.files) & set(f.files)}
            if take:
                excluded[fid] |= take
                found[fid] = _BY_ID[fid].check(ctx, [f for f in ctx.files if f.path not in excluded[fid]])
                changed = True


def run_rules(ctx: Context) -> list[Finding]:
    """Every rule's findings, overlaps folded, residual rules on what no finding names."""
    found = {r.id: r.check(ctx, ctx.files) for r in RULES if not r.residual}
    _fold(ctx, found)
    out = [f for fs in found.values() for f in fs]
    named = {p for f in out for p in f.files}
    for r in RULES:
        if r.residual:
            rest = r.check(ctx, [f for f in ctx.files if f.path not in named])
            named |= {p for f in rest for p in f.files}
            out += rest
    return out


def severity(share: float, ctx: Context, cap: str | None, in_effect: bool) -> str:
    if in_effect:           # a mode already fixes it (one that fixes it only in part keeps its severity)
        return "low"
    level = 0 if share >= th.SEVERITY_HIGH else 1 if share >= th.SEVERITY_MEDIUM else 2
    if ctx.proc_time > 0 and ctx.T / ctx.proc_time < th.IO_SHARE_OF_RUNTIME:
        level = min(2, level + 1)       # the job hardly waits for I/O at all
    if cap:
        level = max(level, SEVERITIES.index(cap))
    return SEVERITIES[level]


def rank(ctx: Context, found: list[Finding]) -> list[Finding]:
    """Paths, share and severity of each finding, most costly first: by severity, then by the I/O time
    each explains (a finding already fixed has a lower severity than its time alone would give, and one
    the counters cannot prove comes after the others of its severity), nothing-to-gain last."""
    files = {f.path: f for f in ctx.files}
    others = [f.path for f in ctx.job.files
              if f.ops() - f.app.get("POSIX_MKDIRS", 0) - f.app.get("POSIX_RMDIRS", 0) > 0 or f.bytes() > 0]
    for f in found:
        judge(ctx, f, files)
        mine = set(f.files)
        f.paths = group_paths(f.files, [o for o in others if o not in mine])
        had = set(f.had_mode)
        f.policy_paths = f.paths if not had else group_paths([p for p in f.files if p not in had],
                                                             [o for o in others if o not in mine or o in had])
        f.layout = [cmd.format(dir=p) for cmd in f.layout for p in f.paths] if f.layout else []
        f.share = f.cost / ctx.T if ctx.T > 0 else 0.0
        f.severity = "low" if f.id == "nothing-to-gain" else severity(f.share, ctx, f.cap, f.in_effect and not f.partial)
        if f.gain is not None:
            f.gain["share_of_io_time"] = f.gain["seconds"] / ctx.T if ctx.T > 0 else 0.0
    found.sort(key=lambda f: (f.id == "nothing-to-gain", SEVERITIES.index(f.severity), f.cap is not None, -f.cost,
                              IDS.index(f.id)))
    return found
