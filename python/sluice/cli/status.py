"""`sluice status`: what is pending on this node's stage-mode tier."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from sluice.stage.scan import Listed, now_ns, scan
from sluice.stage.tier import Tier, default_tier, open_tier


def human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def tier_option(f: Any) -> Any:
    return click.option("--tier", "tier_dir", type=click.Path(path_type=Path), default=None,
                        help="The tier directory [$SLUICE_TIER, else /dev/shm/sluice-stage-UID].")(f)


def run(tier_dir: Path | None = None) -> dict[str, Any]:
    """The status document (what --json prints)."""
    tier = open_tier(tier_dir or default_tier())
    root = tier.root if tier else Path(os.path.abspath(tier_dir or default_tier()))
    # oldest first: the files that have been only on the tier the longest
    listed = sorted(scan(tier) if tier else [], key=lambda l: l.entry.created_ns if l.entry else 0)
    now = now_ns()
    entries = [_entry_json(l, now) for l in listed if l.entry is not None]
    pending = [e for e in entries if e["state"] in ("open", "closed")]
    return {
        "tier": str(root),
        "exists": tier is not None,
        "pending": len(pending),
        "pending_bytes": sum(e["bytes"] or 0 for e in pending),
        "entries": entries,
        "problems": [{"id": l.id, "problem": l.problem, "bytes": l.data_bytes,
                      "data": str(Tier(root).data(l.id)) if l.data_bytes is not None else None}
                     for l in listed if l.entry is None],
    }


def _entry_json(l: Listed, now: int) -> dict[str, Any]:
    e = l.entry
    assert e is not None
    return {"id": e.id, "state": e.state, "path": e.path, "mode": f"{e.mode:04o}", "bytes": l.data_bytes,
            "age_s": round(l.age_s(now) or 0.0, 3), "pid": e.pid, "process": l.process,
            "created_ns": e.created_ns, "updated_ns": e.updated_ns, "error": e.error}


def lines(doc: dict[str, Any]) -> list[str]:
    """The plain-text form: a summary line, then one line per entry."""
    if not doc["exists"]:
        return [f"tier {doc['tier']}: does not exist (nothing staged)"]
    out = [f"tier {doc['tier']}: {doc['pending']} pending ({human_bytes(doc['pending_bytes'])})"]
    if doc["entries"] or doc["problems"]:
        out.append(f"{'state':<9} {'bytes':>10} {'age':>8}  {'process':<16} path")
    for e in doc["entries"]:
        err = f"  [{e['error']}]" if e["error"] else ""
        proc = f"{e['pid']} {e['process']}"
        out.append(f"{e['state']:<9} {human_bytes(e['bytes']):>10} {e['age_s']:>7.1f}s  {proc:<16} {e['path']}{err}")
    for p in doc["problems"]:
        kept = f" (data kept: {p['data']})" if p["data"] else ""
        out.append(f"{'bad':<9} {human_bytes(p['bytes']):>10} {'-':>8}  {'-':<16} journal/{p['id']}: {p['problem']}{kept}")
    return out


@click.command()
@tier_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(tier_dir: Path | None, as_json: bool) -> None:
    """List the staged files on this node's tier: state, bytes, age, process, path, last error."""
    doc = run(tier_dir)
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    for line in lines(doc):
        click.echo(line)
