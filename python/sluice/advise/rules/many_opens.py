"""many-opens-one-file: one process opens one file 100 times or more."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import coalesced, meta_time, n, secs, v, v_sum
from sluice.advise.finding import Finding
from sluice.advise.gain import gain
from sluice.report.model import FileTotals

ID = "many-opens-one-file"


def _written(f: FileTotals) -> bool:
    return v(f.app, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN", "MPIIO_BYTES_WRITTEN") > 0


def _reopen_time(ctx: Context, f: FileTotals) -> float:
    """Metadata time of every open after each process's first."""
    opens = v(f.app, "POSIX_OPENS", "STDIO_OPENS")
    return meta_time(f.app) * max(0.0, opens - ctx.procs(f)) / max(1.0, opens)


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    reopened = [f for f in files if ctx.max_opens_per_process(f) >= th.OPENS_PER_PROCESS]
    out = []
    # files the program writes stage mode serves from the tier; files it only reads no mode helps
    for chosen, mode in (([f for f in reopened if _written(f)], "stage"),
                         ([f for f in reopened if not _written(f)], "profile")):
        if not chosen:
            continue
        opens = v_sum(chosen, "POSIX_OPENS", "STDIO_OPENS")
        procs = sum(ctx.procs(f) for f in chosen)
        cost = sum(_reopen_time(ctx, f) for f in chosen)
        in_effect = mode == "stage" and all(coalesced(f, "POSIX_OPENS") for f in chosen)
        most = max(ctx.max_opens_per_process(f) for f in chosen)
        text = (f"{n(len(chosen))} file{'s' if len(chosen) != 1 else ''} opened {n(opens)} times by {n(procs)} "
                f"process{'es' if procs != 1 else ''} (up to {n(most)} by one process; sluice flags "
                f"{th.OPENS_PER_PROCESS} or more); {secs(sum(meta_time(f.app) for f in chosen))} in metadata calls")
        f = Finding(ID, [x.path for x in chosen], cost, mode, text,
                    {"POSIX_OPENS": v_sum(chosen, "POSIX_OPENS"), "STDIO_OPENS": v_sum(chosen, "STDIO_OPENS"),
                     "max_opens_per_process": most, "POSIX_F_META_TIME": v_sum(chosen, "POSIX_F_META_TIME"),
                     "STDIO_F_META_TIME": v_sum(chosen, "STDIO_F_META_TIME")}, in_effect=in_effect)
        if mode == "stage":
            f.text += "; the program writes them, and in stage mode reopening a staged file costs the file system nothing"
            if in_effect:
                f.text += "; already in effect: the file system saw at least 2 times fewer opens"
            else:
                f.gain = gain(ctx, chosen, cost, "metadata time of every open after each process's first")
        f.hints = ["in the code: open the file once and keep the descriptor (or stream) for the run"]
        out.append(f)
    return out
