"""What the program asked for against what reached the file system, per run.

Under a sluice variant both sides come from sluice's log (``app`` and
``fs`` counters); a plain run has no log, so both sides are the program's
own count (nothing sits between it and the file system).
"""

from __future__ import annotations

from typing import Any


def app_count(data: dict[str, Any], counter: str, own: str) -> float:
    """Calls of a kind the program made: sluice's app-side counter under
    sluice, else the program's own count (field `own` of its JSON line)."""
    c = data.get("sluice_counters")
    return float(c["app"][counter]) if c else float(data[own])


def fs_over_app(data: dict[str, Any], counter: str, own: str) -> float | None:
    """fs / app of one sluice counter (e.g. bytes read: above 1 means the
    file system moved more than the program asked for); 1 for a plain run;
    None when the program asked for nothing (plain: its own count `own` is 0)."""
    c = data.get("sluice_counters")
    if not c:
        return 1.0 if data[own] else None
    app = c["app"][counter]
    return c["fs"][counter] / app if app else None
