"""What the run's own modes did to a finding's files.

Each process's log holds the mode it ran under and its `--policy` rules
(process keys `mode` and `policy`), so the mode each file had is known.
advise judges from the fs side: a finding whose fix is a mode the run
already gave its files, and that the counters do not show acting, is not
advised again; it says why the mode did not act (the fallback counters, or
what the counters show), and its policy line names only the files that ran
under another mode.
"""

from __future__ import annotations

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import n, sum_fs, uses_mpiio, v
from sluice.advise.finding import Finding
from sluice.report.model import FileTotals

# counter: (why the mode stopped acting, what to do about it)
FALLBACKS = {
    "POSIX_FALLBACK_SHARED": ("a descriptor shared with a forked process or a stdio stream goes straight through "
                              "(a shell's appending redirection, `cmd >> file`, hands the program such a descriptor)",
                              "open the file in the process that writes it, after any fork, and in the "
                              "program rather than by the shell (`cmd > file`, which buffer mode takes over, or "
                              "the program's own output option)"),
    "POSIX_FALLBACK_DIRECT": ("opened with O_DIRECT, O_SYNC or O_DSYNC, whose calls must each reach the device",
                              "open without O_SYNC/O_DSYNC/O_DIRECT and call fsync where the data must be durable"),
    "POSIX_FALLBACK_MMAP": ("the file was mapped with mmap, after which it goes straight through", ""),
    "POSIX_FALLBACK_MEMORY": ("buffer memory ran out, and writes went straight through",
                              "a larger buffer memory cap (--buffer-memory, buffer.memory)"),
    "POSIX_FALLBACK_SCATTERED": ("the writes were too scattered to coalesce", ""),
    "POSIX_FALLBACK_KERNEL": ("the kernel moved or changed the bytes itself (fallocate, copy_file_range, sendfile, "
                              "splice), after which the file goes straight through", ""),
    "MPIIO_FALLBACKS": ("aggregation was dropped for pass-through (atomic mode, the memory cap, an unsupported "
                        "view)", "a larger --acb-max-memory where the memory cap was the cause"),
}


def auto_choice(f: FileTotals) -> str:
    """The mode --mode auto gave a file, from its counters: MPI-IO through acb; a file staged at its
    create (a large first write publishes it and goes straight through); one on this node's own file
    system only profiled; the others buffered."""
    if uses_mpiio(f.app):
        return "acb"
    if v(f.fs, "POSIX_AUTO_LOCAL") > 0:
        return "profile"
    if v(f.fs, "POSIX_STAGED_OPENS") > 0:
        return "profile" if v(f.fs, "POSIX_AUTO_DIRECT") > 0 else "stage"
    return "buffer"


def modes_given(ctx: Context, f: FileTotals) -> set[str]:
    """The modes the run's processes gave the file, auto resolved to its choice."""
    return {auto_choice(f) if m == "auto" else m for m in ctx.run_modes(f.path)}


def _why(ctx: Context, files: list[FileTotals], mode: str) -> tuple[list[str], list[str], dict[str, float]]:
    """(reasons, hints, the counters behind them) for `mode` not acting on these files."""
    fs = sum_fs(files)
    counted = {k: fs[k] for k in FALLBACKS if v(fs, k) > 0}
    reasons = [f"{FALLBACKS[k][0]} ({k}: {n(x)})" for k, x in counted.items()]
    hints = [FALLBACKS[k][1] for k in counted if FALLBACKS[k][1]]
    opens, writes = v(fs, "POSIX_OPENS"), v(fs, "POSIX_WRITES")
    if mode == "buffer" and not counted and opens and writes and opens * th.IN_EFFECT_RATIO >= writes:
        counted["POSIX_OPENS"] = opens
        reasons.append(f"the program closed the files after about every {writes / opens:.0f} writes "
                       f"({n(opens)} opens for {n(writes)} writes), and each close writes out what is buffered")
        hints.append("in the code: keep the file open across the writes")
    if mode == "stage" and v(fs, "POSIX_STAGED_OPENS") == 0:
        counted["POSIX_STAGED_OPENS"] = 0
        reasons.append("stage mode stages the files a program creates or truncates; these existed and were "
                       "opened without O_TRUNC, so their opens went straight through (POSIX_STAGED_OPENS: 0)")
    if not reasons:
        app = sum(v(f.app, "POSIX_READS", "POSIX_WRITES") for f in files)
        seen = v(fs, "POSIX_READS", "POSIX_WRITES")
        reasons.append("the log counts no fallback: " + ("as many reads and writes reached the file system as "
                                                         "the program made" if seen >= app else
                                                         f"{n(seen)} of the program's {n(app)} reads and writes "
                                                         "reached the file system"))
    return reasons, hints, counted


def judge(ctx: Context, f: Finding, files: dict[str, FileTotals]) -> None:
    """Fill in the modes the run gave the finding's files; where the finding's fix is that mode and the
    counters do not show it acting, say why and keep those files out of the policy line."""
    mine = [files[p] for p in f.files if p in files]
    given = {p.path: modes_given(ctx, p) for p in mine}
    f.modes_in_effect = sorted(set().union(*given.values())) if given else []
    if f.mode == "profile" or f.in_effect:
        return
    had = [p for p in mine if given[p.path] == {f.mode}]
    if not had:
        return
    f.had_mode = [p.path for p in had]
    reasons, hints, f.fallbacks = _why(ctx, had, f.mode)
    which = "these files" if len(had) == len(f.files) else f"{n(len(had))} of these files"
    f.text += f"; {f.mode} mode was in effect for {which} but did not act: " + "; ".join(reasons)
    f.hints = hints + f.hints
    if len(had) == len(f.files):
        f.gain = None        # the mode, as the run had it, gains nothing until the reason is gone
