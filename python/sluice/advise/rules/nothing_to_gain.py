"""nothing-to-gain: files with data that no other finding names and whose
calls no mode would cut."""

from __future__ import annotations

from sluice.advise.context import Context
from sluice.advise.counters import io_time, n, pct, secs, v_sum
from sluice.advise.finding import Finding
from sluice.advise.rules.small_requests import buffer_estimate
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

ID = "nothing-to-gain"


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    chosen = [f for f in files if f.bytes() > 0]
    if not chosen:
        return []
    t = sum(io_time(f.app) for f in chosen)
    calls = v_sum(chosen, "POSIX_READS", "POSIX_WRITES", "STDIO_READS", "STDIO_WRITES")
    nbytes = sum(f.bytes() for f in chosen)
    consec = (v_sum(chosen, "POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES")
              / max(1, v_sum(chosen, "POSIX_READS", "POSIX_WRITES")))
    # few-small-requests took the files where buffer mode would save enough: what is left here is at most
    # a few calls
    saved = sum(before - after for before, after in (buffer_estimate(ctx, f) for f in chosen))
    text = (f"{n(len(chosen))} file{'s' if len(chosen) != 1 else ''} with {human_bytes(nbytes)} in {n(calls)} reads "
            f"and writes (mean {human_bytes(nbytes / max(1, calls))}, {pct(consec)} consecutive) and {secs(t)} in I/O "
            "calls trip no check: " + (f"buffer mode would save {n(saved)} calls at most, no other mode any"
                                       if saved else "no mode would cut their calls"))
    return [Finding(ID, [x.path for x in chosen], t, "profile", text,
                    {"files": len(chosen), "bytes": nbytes, "requests": calls, "io_time": t, "calls_saved": saved})]
