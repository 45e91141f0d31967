"""Each staged file's first-write decision (`--mode auto`, and stage under
`--direct-from`), beside what a calibrated profile predicted for it: for
`sluice report --fs FS.json` (docs/predict.md).

A file staged at its create went straight through at its first write
(POSIX_AUTO_DIRECT) or stayed on the tier. The profile's per-call figures
(calibrate's `auto_write_s`, sluice.autolarge) say what a call of that
first write's size costs each way; the run's own counters say what a call
cost the way it went: its write time in the file system (straight through)
or in the tier and, for the publish, in the file system (staged), over the
program's writes.
"""

from __future__ import annotations

from typing import Any

from sluice.autolarge import AutoLarge, per_call_at
from sluice.report.model import Job

TIME_KEYS = ("POSIX_F_WRITE_TIME",)


def first_writes(job: Job) -> dict[str, int]:
    """path -> the length of its first traced POSIX write (logs with a trace)."""
    from sluice.predict import traced_events

    out = {}
    for path, events in traced_events(job).items():
        n = next((length for _, op, _, length, _ in events if op == 1), None)
        if n is not None:
            out[path] = n
    return out


def decision_rows(job: Job, model: AutoLarge, top: int = 10) -> list[dict[str, Any]]:
    """The staged files that were written, the most bytes first: path, first
    write (traced, else the mean write: `first_traced` says which), the way
    taken and the model's, each way's predicted seconds a call and the
    measured seconds a call of the way taken."""
    firsts = first_writes(job)
    rows = []
    for f in job.files:
        writes = float(f.app.get("POSIX_WRITES", 0) or 0)
        if not f.app.get("POSIX_STAGED_OPENS") or writes <= 0:
            continue
        first = firsts.get(f.path)
        size = first if first is not None else float(f.app.get("POSIX_BYTES_WRITTEN", 0)) / writes
        direct = bool(f.app.get("POSIX_AUTO_DIRECT"))
        spent = float(f.fs.get("POSIX_F_WRITE_TIME", 0) or 0)
        if not direct:   # (the tier's writes are the app side's; the publish the fs side's)
            spent += float(f.app.get("POSIX_F_WRITE_TIME", 0) or 0)
        rows.append({"path": f.path, "first_write": int(size), "first_traced": first is not None,
                     "bytes": int(f.app.get("POSIX_BYTES_WRITTEN", 0)), "went": "direct" if direct else "staged",
                     "model": "direct" if model.large > 0 and size >= model.large else "staged",
                     "predicted_staged_s": per_call_at(model.staged_s, size),
                     "predicted_direct_s": per_call_at(model.direct_s, size),
                     "measured_s": spent / writes})
    rows.sort(key=lambda r: (-r["bytes"], r["path"]))
    return rows[:top]
