"""Expected gains: what a fix would save, measured on the file system the
files are on, and said as such.

A gain is computed from the log's own times, so it holds for the file
system the job ran on: a call on a node's own disk costs microseconds, on a
parallel file system a round trip to its servers. Each gain names that
file system (the log's mount table) and, for gains counted in calls or
bytes, says that elsewhere it scales with the cost of one.
"""

from __future__ import annotations

import math

from sluice.advise.context import Context
from sluice.advise.counters import io_time, n, secs
from sluice.report.model import FileTotals
from sluice.report.pattern import LOCAL_FS_TYPES


def file_system(ctx: Context, files: list[FileTotals]) -> dict | None:
    """The mount holding most of the files' I/O time: {"mount", "type", "local"}; None where the logs
    name no mounts."""
    time: dict[tuple[str, str], float] = {}
    for f in files:
        m = ctx.mount(f.path)
        if m is not None:
            time[m] = time.get(m, 0.0) + io_time(f.app)
    if not time:
        return None
    point, fstype = max(time, key=lambda m: (time[m], len(m[0])))
    return {"mount": point, "type": fstype, "local": fstype in LOCAL_FS_TYPES}


# What a gain is counted in -> how it grows on a parallel file system
ELSEWHERE = {
    "call": ": on a parallel file system (Lustre, GPFS, BeeGFS) each call costs a round trip to its servers, "
            "and the gain is larger in proportion to that cost per call",
    "byte": ": on a parallel file system (Lustre, GPFS, BeeGFS) the gain is larger in proportion to its time "
            "per byte moved",
}


def gain(ctx: Context, files: list[FileTotals], seconds: float, how: str, per: str | None = "call",
         per_call: float | None = None) -> dict:
    """expected_gain: `seconds` saved as `how` says, on the files' file system. `per`: what the saving
    is counted in (a key of ELSEWHERE; None: neither), for the sentence on other file systems;
    `per_call`: the measured seconds of one call, where the saving is counted in calls."""
    fs = file_system(ctx, files)
    where = f"{fs['type']} ({fs['mount']})" if fs else "the file system the files are on (the log names no mounts)"
    if fs and not fs["local"]:
        how += f"; measured on {where}, where the files are"
    else:
        how += f"; measured on {where}" + (", this node's own" if fs else "") + (ELSEWHERE[per] if per else "")
    return {"seconds": seconds, "how": how, "file_system": fs, "per_call_s": per_call}


def calls_left(calls: float, smalls: float, nbytes: float, flushes: float, unit: int, pieces: float) -> int:
    """About how many calls remain when the small ones coalesce into units of `unit` bytes, but no
    fewer than `flushes` (a close or fsync writes out what is buffered) nor `pieces` (calls that do not
    continue the previous one start a piece of their own)."""
    return int(min(calls, max(math.ceil(nbytes / unit), min(smalls, max(flushes, pieces))) + (calls - smalls)))


# One file's requests of one kind as coalescing_gain takes them: (calls, small calls, bytes, seconds of
# those calls, flushes, unit, pieces), the rest as calls_left takes them.
Requests = tuple[float, float, float, float, float, int, float]


def coalescing_gain(ctx: Context, files: list[FileTotals], items: list[Requests], what: str, unit_name: str,
                    note: str = "") -> dict | None:
    """The calls saved x the measured seconds per call. `note`: what the estimate leaves out."""
    saved_s, before, after = 0.0, 0, 0
    for calls, smalls, nbytes, t, flushes, unit, pieces in items:
        if calls <= 0:
            continue
        left = calls_left(calls, smalls, nbytes, flushes, unit, pieces)
        saved_s += (calls - left) * t / calls
        before += int(calls)
        after += left
    if saved_s <= 0:
        return None
    per_call = sum(t for _, _, _, t, *_ in items) / max(1, sum(c for c, *_ in items))
    bound = any(min(s, max(fl, pc)) > math.ceil(b / unit) for _, s, b, _, fl, unit, pc in items)
    how = (f"{n(before - after)} {what} saved ({n(before)} -> about {n(after)}: the small ones coalesced into "
           f"{unit_name}{', one at least per open, fsync and jump in offset' if bound else ''}) x "
           f"{secs(per_call)} measured per call{note}; "
           "an upper bound where a call's cost is mostly the copy, as on a local disk")
    # the same numbers for a program to check against a re-run with the fix
    return {**gain(ctx, files, saved_s, how, per_call=per_call), "calls_before": before, "calls_after": after}
