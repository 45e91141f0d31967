"""few-small-requests: on files no other finding names, small reads and
writes below Drishti's thresholds that buffer mode would still cut (at
least 10 % fewer calls, and at least 10 calls saved in all). Without
it such files would be `nothing-to-gain`, which a local disk's cheap calls
do not make true."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import coalesced, cut, n, pct, secs, small, v, v_sum
from sluice.advise.finding import Finding
from sluice.advise.gain import coalescing_gain
from sluice.advise.rules.small_requests import buffer_estimate, candidate, requests
from sluice.report.model import FileTotals

ID = "few-small-requests"


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    rows = [(f, *buffer_estimate(ctx, f)) for f in files]
    rows = [(f, before, after) for f, before, after in rows if before and after * th.PARTLY_RATIO <= before]
    before, after = sum(b for _, b, _ in rows), sum(a for _, _, a in rows)
    if before - after < th.FEW_SMALL_MIN_SAVED:
        return []
    chosen = [f for f, _, _ in rows]
    kinds = [(f, K) for f in chosen for K in ("WRITE", "READ") if candidate(ctx, f, K)]
    sw = sum(small(f.app, "POSIX", K) for f, K in kinds if K == "WRITE")
    sr = sum(small(f.app, "POSIX", K) for f, K in kinds if K == "READ")
    cost = sum(v(f.app, f"POSIX_F_{K}_TIME") * small(f.app, "POSIX", K) / max(1.0, v(f.app, f"POSIX_{K}S"))
               for f, K in kinds)
    in_effect = all(cut(f, f"POSIX_{K}S") >= th.PARTLY_RATIO for f, K in kinds)
    partial = in_effect and not all(coalesced(f, f"POSIX_{K}S") for f, K in kinds)
    fs_calls = sum(v(f.fs, f"POSIX_{K}S") for f, K in kinds)
    text = (f"{n(sw)} small writes and {n(sr)} small reads (of 1 MiB or less) on "
            f"{n(len(chosen))} file{'s' if len(chosen) != 1 else ''}, {secs(cost)} in them: fewer than Drishti's "
            f"small-request thresholds flag (more than {th.SMALL_ABS:,} and {pct(th.SMALL_SHARE)} of the job's), but "
            f"buffer mode would leave about {n(after)} of these files' {n(before)} reads and writes")
    if in_effect:
        text += f"; a mode already acts on them: {n(fs_calls)} of them reached the file system"
    f = Finding(ID, [x.path for x in chosen], cost, "buffer", text,
                {"POSIX_WRITES": v_sum(chosen, "POSIX_WRITES"), "POSIX_READS": v_sum(chosen, "POSIX_READS"),
                 "small_writes": sw, "small_reads": sr, "calls_left": after, "fs_calls": fs_calls},
                in_effect=in_effect, partial=partial)
    if not in_effect:
        f.gain = coalescing_gain(ctx, chosen, [requests(f, K) for f, K in kinds], "read and write calls",
                                 "4 MiB write-behind units and read-ahead")
    return [f]
