"""The text report: a job summary in the spirit of Darshan's, app and fs side by side."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table

from sluice.autolarge import size_text
from sluice.errors import UserError
from sluice.report.hdf5 import hdf5_table
from sluice.report.pnetcdf import pnetcdf_table
from sluice.report.model import Job
from sluice.report.pattern import counts_text, log_mounts, pattern_rows
from sluice.report.summary import (ACCESS_KINDS, natural_key, access_kinds, commands, damaged_rows, damaged_text,
                                   directory_rows, distinct, host_rows, module_times, mount_summary, one_line,
                                   ranks_text, runtime_left_out, signal_rows, signals_text, user_of, user_text, utc)
from sluice.report.tables import any_positive, column_values
from sluice.settings import parse_size

BUCKETS = ["0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS"]
BUCKET_LABELS = ["0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"]

SUMMARY = [
    ("opens", ("POSIX_OPENS", "STDIO_OPENS")),
    ("reads", ("POSIX_READS", "STDIO_READS")),
    ("writes", ("POSIX_WRITES", "STDIO_WRITES")),
    ("seeks", ("POSIX_SEEKS", "STDIO_SEEKS")),
    ("stats", ("POSIX_STATS",)),
    ("fsync/fdatasync/fflush", ("POSIX_FSYNCS", "POSIX_FDSYNCS", "STDIO_FLUSHES")),
    ("unlinks", ("POSIX_UNLINKS",)),
    ("renames", ("POSIX_RENAMES",)),
    ("mkdirs", ("POSIX_MKDIRS",)),
    ("errors", ("POSIX_ERRORS", "STDIO_ERRORS")),
    ("bytes read", ("POSIX_BYTES_READ", "STDIO_BYTES_READ")),
    ("bytes written", ("POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN")),
]


def total(c: dict[str, float], names: tuple[str, ...]) -> float:
    return sum(c.get(n, 0) for n in names)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n}"


def reduction(app: float, fs: float) -> str:
    if app == 0 and fs == 0:
        return "-"
    if app == fs:
        return "1.0x"
    if fs == 0:
        return "all" if app else "-"
    return f"{app / fs:.1f}x"


def render(job: Job, top: int = 10, width: int = 110) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=False, color_system=None, highlight=False)
    con.print(f"sluice report: job {job.job_id}")
    _header(con, job)

    t = Table(title="Operations: what the application asked (app) and what reached the file system (fs)",
              title_justify="left", box=box.SIMPLE_HEAD)
    t.add_column("")
    t.add_column("app", justify="right")
    t.add_column("fs", justify="right")
    t.add_column("app/fs", justify="right")
    for label, names in SUMMARY:
        a, f = total(job.app, names), total(job.fs, names)
        fmt = human_bytes if label.startswith("bytes") else (lambda v: f"{int(v):,}")
        t.add_row(label, fmt(a), fmt(f), reduction(a, f))
    con.print(t)

    h = Table(title="Access sizes (POSIX calls per size, bytes)", title_justify="left", box=box.SIMPLE_HEAD)
    h.add_column("size")
    for col in ("reads app", "reads fs", "writes app", "writes fs"):
        h.add_column(col, justify="right")
    for b, label in zip(BUCKETS, BUCKET_LABELS):
        h.add_row(label, *(f"{int(getattr(job, side).get(f'POSIX_SIZE_{kind}_{b}', 0)):,}"
                           for kind in ("READ", "WRITE") for side in ("app", "fs")))
    con.print(h)
    _mpiio_table(con, job)
    hdf5_table(con, job, top)
    pnetcdf_table(con, job, top)

    tt = Table(title="Time in I/O calls (seconds, summed over processes)", title_justify="left", box=box.SIMPLE_HEAD)
    tt.add_column("")
    tt.add_column("app", justify="right")
    tt.add_column("fs", justify="right")
    for label, names in (("read", ("POSIX_F_READ_TIME", "STDIO_F_READ_TIME")),
                         ("write", ("POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME")),
                         ("metadata", ("POSIX_F_META_TIME", "STDIO_F_META_TIME"))):
        tt.add_row(label, f"{total(job.app, names):.6f}", f"{total(job.fs, names):.6f}")
    con.print(tt)
    _module_time_table(con, job)
    _access_table(con, job)

    for title, key in (("bytes", lambda f: f.bytes()), ("operations", lambda f: f.ops())):
        ft = Table(title=f"Top {top} files by {title} (app side)", title_justify="left", box=box.SIMPLE_HEAD)
        ft.add_column("file", overflow="fold")
        ft.add_column("bytes", justify="right")
        ft.add_column("ops", justify="right")
        ft.add_column("procs", justify="right")
        for f in sorted(job.files, key=lambda f: (-key(f), f.path))[:top]:
            ft.add_row(f.path, human_bytes(f.bytes()), f"{f.ops():,}", str(len(f.processes)))
        con.print(ft)
    con.print(f"{len(job.files)} files recorded.")
    _host_table(con, job)
    _directory_table(con, job, top)
    _mount_table(con, job)
    _pattern_table(con, job, top)
    staged = [f for f, n in zip(job.files, column_values([f.app for f in job.files], "POSIX_STAGED_OPENS")) if n]
    if staged:
        opens = sum(int(f.app.get("POSIX_STAGED_OPENS", 0)) for f in staged)
        others = sum(1 for f in job.files if f.app.get("POSIX_OPENS", 0)) - len(staged)
        con.print(f"Node-local tier (stage/auto): {len(staged):,} file{'s' if len(staged) != 1 else ''} staged "
                  f"({opens:,} open{'s' if opens != 1 else ''} served by the tier); {max(0, others):,} other opened "
                  f"file{'s' if others != 1 else ''} went to the tier below (auto: buffer)", soft_wrap=True)
        direct = sum(1 for f in staged if f.app.get("POSIX_AUTO_DIRECT", 0))
        if direct and "auto" not in {l.info.get("mode") for l in job.logs}:
            # (stage mode under --direct-from; auto's table below says it for auto)
            sizes = auto_first_write_sizes(job)
            con.print(f"  of them {direct:,} went straight through at a first write "
                      f"{'of at least ' + sizes if sizes else 'large enough'} (--direct-from)", soft_wrap=True)
    _auto_table(con, job)
    _layout_table(con, job, top)
    return buf.getvalue()


def _header(con: Console, job: Job) -> None:
    """Who ran what, when, under which modes and rules; how processes ended;
    which logs could not be read whole."""
    cmds = commands(job)
    more = f"  (and {len(cmds) - 1:,} other command line{'s' if len(cmds) > 2 else ''})" if len(cmds) > 1 else ""
    con.print(f"  command: {one_line(cmds[0]) if cmds else '?'}{more}", soft_wrap=True)
    con.print(f"  user: {user_text(user_of(job))}")
    con.print(f"  started: {utc(job.start_ns)}   ended: {utc(job.end_ns)}   run time: {job.runtime:.3f} s")
    exes = sorted({l.info.get("exe", "?") for l in job.logs})
    con.print(f"  processes: {job.processes}   executables: {', '.join(exes)}", soft_wrap=True)
    hosts = sorted({l.info.get("host", "?") for l in job.logs}, key=natural_key)
    con.print(f"  hosts: {len(hosts)}: {', '.join(hosts[:8])}" + (f", ... ({len(hosts) - 8} more)" if len(hosts) > 8
                                                                  else ""), soft_wrap=True)
    policies = distinct(job, "policy")
    con.print(f"  mode: {', '.join(sorted({l.info.get('mode', '?') for l in job.logs}))}   "
              f"policy: {one_line(' | '.join(policies)) if policies else 'none'}", soft_wrap=True)
    sig = signal_rows(job)
    if sig:
        con.print(f"  ended by a signal: {signals_text(sig)}; their logs hold what they did up to then",
                  soft_wrap=True)
    left_out = runtime_left_out(job)
    if left_out:
        con.print(f"  interpreter's own files: {left_out:,} call{'s' if left_out != 1 else ''} on them left out "
                  "(site-packages, .pyc, virtualenvs, ...; sluice run --include-runtime keeps them)", soft_wrap=True)
    if job.partial:
        con.print("  PARTIAL: some files were folded into '<other files>' (raise SLUICE_MAX_RECORDS)")
    for row in damaged_rows(job):
        con.print(f"  DAMAGED LOG: {damaged_text(row)}", soft_wrap=True)


def _host_table(con: Console, job: Job) -> None:
    """Per node, when the job ran on more than one: its processes and ranks,
    and what they moved on each side."""
    rows = host_rows(job)
    if len(rows) < 2:
        return
    t = Table(title="Per host (node): its processes and ranks, bytes moved and operations", title_justify="left",
              box=box.SIMPLE_HEAD)
    t.add_column("host")
    for col in ("processes", "ranks", "bytes app", "bytes fs", "ops app", "ops fs"):
        t.add_column(col, justify="left" if col == "ranks" else "right")
    for r in rows:
        t.add_row(r["host"] or "?", f"{r['processes']:,}", ranks_text(r["ranks"]) or "-",
                  *(human_bytes(r[f"{side}_bytes_read"] + r[f"{side}_bytes_written"]) for side in ("app", "fs")),
                  *(f"{r[f'{side}_ops']:,}" for side in ("app", "fs")))
    con.print(t)


def _module_time_table(con: Console, job: Job) -> None:
    rows = module_times(job)
    if not rows:
        return
    t = Table(title="Time in each module's calls (seconds, summed over processes; a call of one module runs those "
              "of the modules below it)", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("module", "read app", "write app", "metadata app", "total app", "total fs"):
        t.add_column(col, justify="left" if col == "module" else "right")
    for r in rows:
        a = r["app"]
        t.add_row(r["module"], f"{a['read']:.6f}", f"{a['write']:.6f}", f"{a['meta']:.6f}", f"{a['total']:.6f}",
                  f"{r['fs']['total']:.6f}")
    con.print(t)


def _access_table(con: Console, job: Job) -> None:
    kinds = access_kinds(job)
    if not job.files:
        return
    t = Table(title="Files by use (app side, every module)", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("", "files", "bytes read", "bytes written"):
        t.add_column(col, justify="left" if not col else "right")
    for kind in ACCESS_KINDS:
        k = kinds[kind]
        t.add_row(kind if kind != "neither" else "no bytes moved", f"{k['files']:,}",
                  human_bytes(k["app_bytes_read"]), human_bytes(k["app_bytes_written"]))
    con.print(t)


def _directory_table(con: Console, job: Job, top: int) -> None:
    rows = directory_rows(job)
    if not rows:
        return
    shown = f"top {top} of {len(rows):,} by bytes" if len(rows) > top else f"{len(rows):,}"
    t = Table(title=f"Directories ({shown}; each file counts in its own directory; app side)",
              title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("directory", "files", "bytes read", "bytes written", "ops app", "ops fs"):
        t.add_column(col, justify="left" if col == "directory" else "right", overflow="fold")
    for r in rows[:top]:
        t.add_row(r["directory"], f"{r['files']:,}", human_bytes(r["app_bytes_read"]),
                  human_bytes(r["app_bytes_written"]), f"{r['app_ops']:,}", f"{r['fs_ops']:,}")
    con.print(t)


def _mount_table(con: Console, job: Job) -> None:
    rows = [r for r in mount_summary(job) if r["files"]]
    if not rows:
        return
    t = Table(title="File systems (the mounts the recorded files are under; app side)", title_justify="left",
              box=box.SIMPLE_HEAD)
    for col in ("mount", "type", "files", "bytes read", "bytes written", "ops app", "ops fs"):
        t.add_column(col, justify="left" if col in ("mount", "type") else "right", overflow="fold")
    for r in rows:
        t.add_row(r["point"], r["type"], f"{r['files']:,}", human_bytes(r["app_bytes_read"]),
                  human_bytes(r["app_bytes_written"]), f"{r['app_ops']:,}", f"{r['fs_ops']:,}")
    con.print(t)


def _bytes_setting(text: str) -> int | None:
    """A size as the library reads it (digits, then K, M or G); None if not one."""
    try:
        return parse_size(text, "") if text else None
    except UserError:
        return None


def auto_first_write_sizes(job: Job) -> str:
    """The first-write sizes from which a staged file went straight through,
    as the logs recorded them: the --fs profile's (or the user's) rules by
    prefix (--direct-from), then auto's --auto-large elsewhere (stage mode:
    never); "" for logs made before they were recorded."""
    for l in job.logs:
        default = _bytes_setting(l.info.get("auto_large", ""))
        if default is None:
            continue
        if l.info.get("mode") == "stage":
            default = 0
        parts = []
        for item in filter(None, l.info.get("direct_from", "").split(",")):
            prefix, _, size = item.rpartition("=")
            n = _bytes_setting(size)
            if prefix and n is not None:
                parts.append(f"{size_text(n) if n > 1 else 'any size'} under {prefix}"
                             if n else f"never under {prefix}")
        if default:
            parts.append(f"{size_text(default)} elsewhere" if parts else size_text(default))
        return ", ".join(parts)
    return ""


def auto_choices(job: Job) -> list[tuple[str, str, int, int, str]]:
    """What --mode auto gave the job's opened files: (choice, why, files,
    opens, first path) for each choice some file got. A file opened in
    several ways counts under each choice it got, with those opens."""
    maps = [f.app for f in job.files]
    opened, staged, direct, local = (column_values(maps, c) for c in (
        "POSIX_OPENS", "POSIX_STAGED_OPENS", "POSIX_AUTO_DIRECT", "POSIX_AUTO_LOCAL"))
    below = [max(0, o - s - l) for o, s, l in zip(opened, staged, local)]
    rows = (
        ("straight through", "staged at its create; its first write was large"
         + (f" (at least {sizes})" if (sizes := auto_first_write_sizes(job)) else "")
         + ", which the file system takes at full speed",
         direct, staged),
        ("staged", "created or truncated here, or reopened while staged: on the node-local tier",
         [s if not d else 0 for s, d in zip(staged, direct)], staged),
        ("profiled only", "on a file system of this node: a tier is no faster", local, local),
        ("buffered", "updated or read, on a shared file system: the buffer tier", below, below),
    )
    out = []
    for choice, why, chosen, opens in rows:
        idx = [i for i, n in enumerate(chosen) if n]
        if idx:
            out.append((choice, why, len(idx), int(sum(opens[i] for i in idx)), min(job.files[i].path for i in idx)))
    return out


def _auto_table(con: Console, job: Job) -> None:
    if "auto" not in {l.info.get("mode") for l in job.logs}:
        return
    rows = auto_choices(job)
    if not rows:
        return
    t = Table(title="--mode auto: what each opened file got", title_justify="left", box=box.SIMPLE_HEAD)
    for name, justify in (("choice", "left"), ("files", "right"), ("opens", "right"), ("why", "left"),
                          ("first file", "left")):
        t.add_column(name, justify=justify, overflow="fold")
    for choice, why, files, opens, path in rows:
        t.add_row(choice, f"{files:,}", f"{opens:,}", why, path)
    con.print(t)


LAYOUT_COUNTERS = ("POSIX_LAYOUT_SETS", "POSIX_LAYOUT_EXISTING", "POSIX_LAYOUT_DIR_KEPT", "POSIX_LAYOUT_DEFAULT",
                   "POSIX_LAYOUT_FAILS")


def layout_rows(files) -> list[dict]:
    """The layout decisions at create (docs/layout.md), one row per file that
    had one: set (its stripe count and size, shared or one process's), left
    alone (the file existed; its directory has a layout of its own) or failed."""
    rows = []
    files = list(files)
    for f, hit in zip(files, any_positive([f.app for f in files], list(LAYOUT_COUNTERS))):
        if not hit:
            continue   # read a column at a time: most files had no layout decision
        c = {k: int(f.app.get(k, 0)) for k in (*LAYOUT_COUNTERS, "POSIX_LAYOUT_STRIPES", "POSIX_LAYOUT_STRIPE_BYTES",
                                                "POSIX_LAYOUT_SHARED")}
        if not any(c[k] for k in LAYOUT_COUNTERS):
            continue
        sets = c["POSIX_LAYOUT_SETS"]
        if sets:
            decision = "shared file: many stripes" if c["POSIX_LAYOUT_SHARED"] else "set"
        elif c["POSIX_LAYOUT_FAILS"]:
            decision = "failed: file system default"
        elif c["POSIX_LAYOUT_DIR_KEPT"]:
            decision = "kept: the directory's layout"
        elif c["POSIX_LAYOUT_DEFAULT"]:
            decision = "kept: the layout it gets anyway"
        else:
            decision = "kept: the file existed"
        rows.append({"path": f.path, "decision": decision,
                     "stripe_count": c["POSIX_LAYOUT_STRIPES"] // sets if sets else None,
                     "stripe_size": c["POSIX_LAYOUT_STRIPE_BYTES"] // sets if sets else None, **c})
    return rows


def _layout_table(con: Console, job: Job, top: int) -> None:
    rows = layout_rows(job.files)
    if not rows:
        return
    t = Table(title=f"Layouts at create ({len(rows)} file{'s' if len(rows) != 1 else ''}; first {top})",
              title_justify="left", box=box.SIMPLE_HEAD)
    for col, just in (("file", "left"), ("decision", "left"), ("stripes", "right"), ("stripe size", "right")):
        t.add_column(col, justify=just, overflow="fold")
    for r in sorted(rows, key=lambda r: r["path"])[:top]:
        t.add_row(r["path"], r["decision"], "" if r["stripe_count"] is None else str(r["stripe_count"]),
                  "" if r["stripe_size"] is None else human_bytes(r["stripe_size"]))
    con.print(t)


def _pattern_table(con: Console, job: Job, top: int) -> None:
    """Access pattern of the files with the most POSIX reads and writes."""
    rows = pattern_rows(job.files, log_mounts(job.logs), top)
    if not rows:
        return
    t = Table(title=f"Access pattern of the top {top} files by reads and writes (app side; most common first)",
              title_justify="left", box=box.SIMPLE_HEAD)
    t.add_column("file", overflow="fold")
    t.add_column("sizes (bytes x calls)", overflow="fold")
    t.add_column("strides (bytes x calls)", overflow="fold")
    t.add_column("unaligned file / memory", justify="right")
    t.add_column("file system", overflow="fold")
    for r in rows:
        align = f"{r['file_not_aligned']:,} / {r['mem_not_aligned']:,}"
        fs = f"{r['fs_type']} {r['mount']}" if r["mount"] else "?"
        if r["file_alignment"]:
            fs += f" ({r['file_alignment']:,} B blocks)"
        if r["layout"]:
            fs += f"; {r['layout']}"
        t.add_row(r["path"], counts_text(r["sizes"]), counts_text(r["strides"]), align, fs)
    con.print(t)


MPIIO_ROWS = [
    ("opens (independent / collective)", ("MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS")),
    ("independent writes", ("MPIIO_INDEP_WRITES",)),
    ("collective writes", ("MPIIO_COLL_WRITES",)),
    ("split collective writes (*_begin)", ("MPIIO_SPLIT_WRITES",)),
    ("non-blocking / shared-pointer writes", ("MPIIO_NB_WRITES", "MPIIO_SHARED_WRITES")),
    ("independent reads", ("MPIIO_INDEP_READS",)),
    ("collective reads", ("MPIIO_COLL_READS",)),
    ("split collective reads (*_begin)", ("MPIIO_SPLIT_READS",)),
    ("syncs", ("MPIIO_SYNCS",)),
    ("aggregated exchanges (ACB)", ("MPIIO_ACB_FLUSHES",)),
    ("ACB exchange rounds", ("MPIIO_ACB_ROUNDS",)),
    ("ACB: each rank wrote its own data, no exchange", ("MPIIO_ACB_OWN_FLUSHES",)),
    ("ACB: writes of a unit or more, straight through", ("MPIIO_ACB_DIRECT_WRITES",)),
    ("ACB: one-rank file, full-buffer writes", ("MPIIO_ACB_BUFFER_WRITES",)),
    ("fallbacks to pass-through", ("MPIIO_FALLBACKS",)),
    ("bytes written", ("MPIIO_BYTES_WRITTEN",)),
    ("bytes read", ("MPIIO_BYTES_READ",)),
]


def _mpiio_table(con: Console, job: Job) -> None:
    """MPI-IO calls, when the job made any: app (the program's) and fs (what reached MPI-IO)."""
    if not any(v for k, v in job.app.items() if k.startswith("MPIIO_") and "MAX_BYTE" not in k):
        return
    t = Table(title="MPI-IO: what the application asked (app) and what reached MPI-IO (fs)",
              title_justify="left", box=box.SIMPLE_HEAD)
    for col, just in (("", "left"), ("app", "right"), ("fs", "right"), ("app/fs", "right")):
        t.add_column(col, justify=just)
    for label, names in MPIIO_ROWS:
        a, f = total(job.app, names), total(job.fs, names)
        fmt = human_bytes if label.startswith("bytes") else (lambda v: f"{int(v):,}")
        t.add_row(label, fmt(a), fmt(f), reduction(a, f))
    con.print(t)
    sizes = Table(title="MPI-IO access sizes (writes per size)", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("size", "writes app", "writes fs"):
        sizes.add_column(col, justify="left" if col == "size" else "right")
    for b, label in zip(BUCKETS, BUCKET_LABELS):
        sizes.add_row(label, *(f"{int(getattr(job, side).get(f'MPIIO_SIZE_WRITE_{b}', 0)):,}" for side in ("app", "fs")))
    con.print(sizes)


def render_tasks(rows: list[dict], width: int = 110) -> str:
    """A `sluice farm` job, one row per task (report --by-task)."""
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=False, color_system=None, highlight=False)
    t = Table(title="Tasks (sluice farm): metadata operations and bytes written, app and fs",
              title_justify="left", box=box.SIMPLE_HEAD)
    for name in ("task", "processes", "run time", "meta app", "meta fs", "app/fs", "written app", "written fs"):
        t.add_column(name, justify="right")
    for r in rows:
        t.add_row(str(r["task"]), str(r["processes"]), f"{r['runtime_s']:.3f} s", f"{r['app_meta_ops']:,}",
                  f"{r['fs_meta_ops']:,}", reduction(r["app_meta_ops"], r["fs_meta_ops"]),
                  human_bytes(r["app_bytes_written"]), human_bytes(r["fs_bytes_written"]))
    con.print(t)
    return buf.getvalue()


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs" if seconds >= 1e-5 else f"{seconds * 1e6:.1f} µs"


def render_decisions(rows: list[dict], model, width: int = 110) -> str:
    """Each staged file's first-write decision beside the profile's
    prediction (report --fs; sluice.report.decisions)."""
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=False, color_system=None, highlight=False)
    con.print(f"First-write decisions by {model.mount}'s profile (calibrated {model.measured}): straight through "
              f"from {size_text(model.large) if model.large > 1 else 'any size'}", soft_wrap=True)
    if not rows:
        con.print("  (no staged file was written)")
        return buf.getvalue()
    t = Table(box=box.SIMPLE_HEAD)
    for name in ("file", "first write", "went", "model", "predicted a call: staged / direct", "measured a call"):
        t.add_column(name, justify="left" if name in ("file", "went", "model") else "right", overflow="fold")
    for r in rows:
        t.add_row(r["path"], ("" if r["first_traced"] else "~") + size_text(r["first_write"]), r["went"], r["model"],
                  f"{_us(r['predicted_staged_s'])} / {_us(r['predicted_direct_s'])}", _us(r["measured_s"]))
    con.print(t)
    con.print("  (~: no trace, the mean write; measured: the write time in the file system, and in the tier "
              "for a staged file, over the program's writes)", soft_wrap=True)
    return buf.getvalue()
