"""small-writes / small-reads: small POSIX requests that continue each other
(Drishti's P06 / P05): buffer mode's case."""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import (coalesced, common_sizes, consecutive_share, cut, n, pct, secs, sizes_text, small,
                                    uses_mpiio, v, v_sum)
from sluice.advise.finding import Finding
from sluice.advise.gain import Requests, calls_left, coalescing_gain
from sluice.advise.rules.layout import file_per_process_layout
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes


def flushes(f: FileTotals, K: str) -> float:
    """The points where buffer mode must write out (a close, an fsync) or read ahead afresh (an open)."""
    return v(f.app, "POSIX_OPENS") + (v(f.app, "POSIX_FSYNCS", "POSIX_FDSYNCS") if K == "WRITE" else 0)


def unit_of(K: str) -> int:
    return th.BUFFER_UNIT if K == "WRITE" else th.READAHEAD


def requests(f: FileTotals, K: str) -> Requests:
    """The file's POSIX requests of one kind, as buffer mode would coalesce them."""
    word = "WRITTEN" if K == "WRITE" else "READ"
    calls = v(f.app, f"POSIX_{K}S")
    return (calls, small(f.app, "POSIX", K), v(f.app, f"POSIX_BYTES_{word}"), v(f.app, f"POSIX_F_{K}_TIME"),
            flushes(f, K), unit_of(K), max(0.0, calls - v(f.app, f"POSIX_CONSEC_{K}S")))


def buffer_estimate(ctx: Context, f: FileTotals) -> tuple[int, int]:
    """(POSIX reads and writes, about how many of them buffer mode would leave), counting the kinds whose
    pattern it coalesces (what small-writes and small-reads ask, less their thresholds)."""
    before = after = 0
    for K in ("WRITE", "READ"):
        calls, smalls, nbytes, _, fl, unit, pieces = requests(f, K)
        before += int(calls)
        after += calls_left(calls, smalls, nbytes, fl, unit, pieces) if candidate(ctx, f, K) else int(calls)
    return before, after


def buffer_gain(ctx: Context, files: list[FileTotals], K: str) -> dict | None:
    name, verb = ("4 MiB write-behind units", "write") if K == "WRITE" else ("4 MiB read-ahead", "read")
    return coalescing_gain(ctx, files, [requests(f, K) for f in files], f"{verb} calls", name)


def candidate(ctx: Context, f: FileTotals, K: str) -> bool:
    """Small requests of one kind in a pattern buffer mode coalesces, enough of them between the
    file's opens for it to cut their number."""
    calls, smalls, nbytes, _, fl, unit, pieces = requests(f, K)
    if uses_mpiio(f.app) or calls == 0 or smalls / calls <= th.SMALL_SHARE:
        return False
    if calls_left(calls, smalls, nbytes, fl, unit, pieces) * th.PARTLY_RATIO > calls:
        return False             # a request or two per open or per jump: each is written out alone anyway
    procs = ctx.procs(f, "WRITTEN" if K == "WRITE" else "READ")
    cs = consecutive_share(f, K, procs)
    if K == "READ":
        return cs >= th.CONSECUTIVE_FOR_BUFFER       # scattered small reads: random-reads
    return procs <= 1 or cs >= th.SCATTERED_MAX_CONSECUTIVE   # interleaved writers: small-shared-writes


def check(ctx: Context, files: list[FileTotals], kind: str) -> list[Finding]:
    K = "WRITE" if kind == "writes" else "READ"
    calls_name, time_name = f"POSIX_{K}S", f"POSIX_F_{K}_TIME"
    bytes_name = f"POSIX_BYTES_{'WRITTEN' if K == 'WRITE' else 'READ'}"
    job_calls = sum(v(f.app, calls_name) for f in ctx.files if not uses_mpiio(f.app))
    chosen = [f for f in files if candidate(ctx, f, K)]
    total_small = sum(small(f.app, "POSIX", K) for f in chosen)
    if total_small <= th.SMALL_ABS or not job_calls or total_small / job_calls <= th.SMALL_SHARE:
        return []
    done = [f for f in chosen if coalesced(f, calls_name)]
    partly = [f for f in chosen if not coalesced(f, calls_name) and cut(f, calls_name) >= th.PARTLY_RATIO]
    none = [f for f in chosen if cut(f, calls_name) < th.PARTLY_RATIO]
    todo = none or partly or done
    in_effect, partial = todo is not none, todo is partly
    calls, s = v_sum(todo, calls_name), sum(small(f.app, "POSIX", K) for f in todo)
    nbytes, t = v_sum(todo, bytes_name), v_sum(todo, time_name)
    consec = v_sum(todo, f"POSIX_CONSEC_{K}S")
    cost = sum(v(f.app, time_name) * small(f.app, "POSIX", K) / max(1.0, v(f.app, calls_name)) for f in todo)
    verb = "write" if K == "WRITE" else "read"
    text = (f"{n(s)} of {n(calls)} POSIX {verb}s ({pct(s / calls)}) are of 1 MiB or less (mean "
            f"{human_bytes(nbytes / max(1, calls))}), {pct(consec / max(1, calls))} continue the previous one; "
            f"{n(len(todo))} file{'s' if len(todo) != 1 else ''}, {secs(t)} in {verb}s "
            f"(Drishti flags more than {pct(th.SMALL_SHARE)} and {th.SMALL_ABS:,})" + sizes_text(common_sizes(todo)))
    fs_calls = sum(v(f.fs, calls_name) for f in todo)
    if partial:
        switches = v_sum(todo, "POSIX_RW_SWITCHES")
        text += (f"; a mode already acts on them, but {n(fs_calls)} {verb}s still reached the file system, only "
                 f"{calls / max(1, fs_calls):.1f} times fewer"
                 + (f" (the program switches between reading and writing {n(switches)} times)"
                    if switches > 0.1 * calls else "") + ": the remaining fix is in the code")
    elif in_effect:
        text += (f"; already in effect: {n(fs_calls)} {verb}s reached the file system "
                 f"({calls / max(1, fs_calls):.0f} times fewer)")
    elif done or partly:
        text += f"; {n(len(done) + len(partly))} more file{'s' if len(done) + len(partly) != 1 else ''} already coalesced by a mode"
    f = Finding(f"small-{kind}", [x.path for x in todo], cost, "buffer", text,
                {calls_name: calls, f"POSIX_SIZE_{K}_0_100..100K_1M": s, f"POSIX_CONSEC_{K}S": consec,
                 bytes_name: nbytes, time_name: t, f"fs_{calls_name}": fs_calls}, in_effect=in_effect,
                partial=partial)
    if not in_effect:
        f.gain = buffer_gain(ctx, todo, K)
    if K == "WRITE" and file_per_process_layout(ctx, todo):
        f.layout = ["lfs setstripe -c 1 {dir}"]
    if any(x.path.endswith(".nc") for x in todo):
        f.hints.append("netCDF: larger chunks or a larger chunk cache (nc_set_chunk_cache) make fewer, larger "
                       "requests; the classic formats: a larger buffer (nc__create/nc__open bufrsizehint)")
    return [f]


def small_writes(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    return check(ctx, files, "writes")


def small_reads(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    return check(ctx, files, "reads")
