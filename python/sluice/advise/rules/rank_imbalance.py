"""rank-imbalance: the slowest MPI rank's I/O time well above the mean
(Drishti's P18/P19), from each rank's own log or from Darshan's records
reduced over the ranks."""

from __future__ import annotations

from collections import defaultdict

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import io_time, n, pct, posix_time, secs, v
from sluice.advise.finding import Finding
from sluice.advise.fix import is_real
from sluice.advise.gain import gain
from sluice.report.model import SHARED, FileTotals

ID = "rank-imbalance"
CONTENTION = ("; {who} move about the same bytes, so the cause is not the data's distribution but contention "
              "(a busy node, a slow server, the {where} stripes)")


def _finding(ctx: Context, files: list[FileTotals], text: str, excess: float, how: str, size_imbalance: float,
             counters: dict[str, float], who: str, where: str) -> Finding:
    """The finding, its severity capped where the ranks move about the same bytes (contention: `who`
    and `where` say whose bytes and whose stripes)."""
    balanced = size_imbalance <= th.IMBALANCE_SIZE
    if balanced:
        text += CONTENTION.format(who=who, where=where)
    f = Finding(ID, [x.path for x in files if is_real(x.path)], min(excess, ctx.T), "profile", text, counters,
                cap="medium" if balanced else None)
    f.gain = gain(ctx, files, excess, how, per=None)
    f.hints = (["balance the data across ranks; collective I/O spreads a shared file's data over its "
                "aggregators whatever each rank holds"] if not balanced else []) + \
              ["a shared file on one stripe makes every rank wait on one server: more stripes (lfs setstripe -c)"]
    return f


def _reduced(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    """From Darshan's records reduced over all ranks: each keeps the slowest and fastest rank's time and
    bytes (POSIX_F_SLOWEST_RANK_TIME, ...) and the ranks' summed time, so the slowest rank's time is set
    against the mean, as for per-rank logs."""
    nranks = len({p for p, r in ctx.rank.items() if r >= 0 and p not in ctx.shared_pids})
    rows = []
    for f in files:
        d = next((d for pid, d in ctx.per_proc.get(f.path, {}).items() if pid in ctx.shared_pids), None)
        if d is None or nranks < 2:
            continue
        slow, fast = v(d, "POSIX_F_SLOWEST_RANK_TIME"), v(d, "POSIX_F_FASTEST_RANK_TIME")
        mean = posix_time(d) / nranks
        if slow > 0 and 1 - mean / slow > th.STRAGGLER_SHARE:
            rows.append((f, d, slow, fast, mean))
    if not rows:
        return []
    rows.sort(key=lambda r: r[4] - r[2])
    f0, d, slow, fast, mean = rows[0]
    bslow, bfast = v(d, "POSIX_SLOWEST_RANK_BYTES"), v(d, "POSIX_FASTEST_RANK_BYTES")
    bmax = max(bslow, bfast)
    size_imb = abs(bslow - bfast) / bmax if bmax else 0.0
    excess = sum(sl - mn for _, _, sl, _, mn in rows)
    text = (f"{n(len(rows))} file{'s' if len(rows) != 1 else ''} shared by all {nranks} ranks (records Darshan "
            f"reduced over the ranks): on {f0.path}, the slowest rank (rank {int(v(d, 'POSIX_SLOWEST_RANK'))}) spent "
            f"{secs(slow)} in its POSIX calls, the fastest {secs(fast)}, the mean {secs(mean)} "
            f"({pct(1 - mean / slow)} of the slowest rank's time above the mean; Drishti flags "
            f"{pct(th.STRAGGLER_SHARE)}); the slowest and fastest ranks' bytes differ by {pct(size_imb)} "
            f"(Drishti flags {pct(th.IMBALANCE_SIZE)})")
    return [_finding(ctx, [r[0] for r in rows], text, excess,
                     "if every rank spent the mean time on the shared files: the slowest rank's excess over the "
                     "mean, which the other ranks wait for", size_imb,
                     {"ranks": nranks, "slowest_rank": int(v(d, "POSIX_SLOWEST_RANK")), "slowest_io_time": slow,
                      "fastest_rank": int(v(d, "POSIX_FASTEST_RANK")), "fastest_io_time": fast,
                      "mean_io_time": mean, "max_bytes_per_rank": bslow, "min_bytes_per_rank": bfast},
                     "they", "file's")]


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    ranks = {pid: r for pid, r in ctx.rank.items() if r >= 0}
    if len(ranks) < 2:
        return []
    if any(SHARED in l.info and l.records for l in ctx.job.logs):
        return _reduced(ctx, files)   # a Darshan log: the shared files' per-rank times are reduced
    t: dict[int, float] = {pid: 0.0 for pid in ranks}
    b: dict[int, float] = {pid: 0.0 for pid in ranks}
    where: dict[int, dict[str, float]] = defaultdict(dict)
    for path, pp in ctx.per_proc.items():
        for pid, d in pp.items():
            if pid in ranks:
                t[pid] += io_time(d)
                b[pid] += v(d, "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN")
                where[pid][path] = io_time(d)
    tmax = max(t.values())
    mean = sum(t.values()) / len(t)
    if tmax <= 0 or 1 - mean / tmax <= th.STRAGGLER_SHARE:
        return []
    slow = max(t, key=lambda p: (t[p], -ranks[p]))
    fast = min(t, key=lambda p: (t[p], ranks[p]))
    bmax, bmin = max(b.values()), min(b.values())
    size_imb = (bmax - bmin) / bmax if bmax else 0.0
    excess = tmax - mean
    by_path = {f.path: f for f in files}
    top = [by_path[p] for p, _ in sorted(where[slow].items(), key=lambda kv: -kv[1]) if p in by_path][:3]
    text = (f"rank {ranks[slow]} spends {secs(tmax)} in I/O calls, rank {ranks[fast]} {secs(t[fast])}, the mean "
            f"of {len(t)} ranks is {secs(mean)} ({pct(1 - mean / tmax)} of the slowest rank's time above the mean; "
            f"Drishti flags {pct(th.STRAGGLER_SHARE)}): in the I/O phases the other ranks wait up to "
            f"{secs(excess)} for it; bytes per rank differ by {pct(size_imb)} (Drishti flags "
            f"{pct(th.IMBALANCE_SIZE)})")
    return [_finding(ctx, top, text, excess,
                     f"if every rank spent the mean I/O time: the slowest rank's excess over the mean, which the "
                     f"other {len(t) - 1} ranks wait for", size_imb,
                     {"ranks": len(t), "slowest_rank": ranks[slow], "slowest_io_time": tmax,
                      "fastest_rank": ranks[fast], "fastest_io_time": t[fast], "mean_io_time": mean,
                      "max_bytes_per_rank": bmax, "min_bytes_per_rank": bmin},
                     "the ranks", "files'")]
