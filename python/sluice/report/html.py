"""The HTML report: one self-contained page, in the spirit of PyDarshan's job summary.

Everything is inside the file: the stylesheet, the plots (PNG, base64 data
URIs) and a few lines of script that set the page title to
``sluice report: ok N`` once all N images have decoded, which lets a
headless browser check the rendering. A Content-Security-Policy allows
nothing else to load or run, so even a path that slipped past escaping could
not execute. Every string from the logs (paths, executables, command lines,
host names) goes through :func:`esc`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import time

from sluice import __version__
from sluice.report.model import OP_COUNTERS, Job
from sluice.report.plots import Plot, all_plots, printable
from sluice.report.text import BUCKET_LABELS, BUCKETS, MPIIO_ROWS, SUMMARY, human_bytes, reduction, total

DEFAULT_TOP = 20

TIME_ROWS = [
    ("read time (s)", ("POSIX_F_READ_TIME", "STDIO_F_READ_TIME")),
    ("write time (s)", ("POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME")),
    ("metadata time (s)", ("POSIX_F_META_TIME", "STDIO_F_META_TIME")),
]

CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --line: #d9d9de; --band: #f5f6f8; --accent: #2166ac; --warn: #fff4e5; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg);
       margin: 0; background: #ffffff; font-size: 14px; line-height: 1.45; }
main { max-width: 1120px; margin: 0 auto; padding: 20px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h1 .job { font-weight: normal; color: var(--muted); font-family: ui-monospace, "DejaVu Sans Mono", monospace;
          font-size: 18px; }
h2 { font-size: 18px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 12px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.mono, td.path, code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
td.path { word-break: break-all; }
.warn { background: var(--warn); border-left: 4px solid #e08a00; padding: 8px 12px; margin: 12px 0; }
.note { color: var(--muted); margin: 6px 0; }
.cards { display: flex; gap: 16px; flex-wrap: wrap; margin: 12px 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 16px; min-width: 240px; }
.card .what { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .factor { font-size: 26px; font-weight: 600; color: var(--accent); }
table { border-collapse: collapse; margin: 8px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--band); font-weight: 600; border-bottom: 2px solid var(--line); }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.num small { color: var(--muted); display: block; }
td.factor { font-weight: 600; }
table.files { width: 100%; }
figure.plot { margin: 16px 0 24px; }
figure.plot img { max-width: 100%; height: auto; display: block; border: 1px solid var(--line); }
figure.plot figcaption { color: var(--muted); margin-top: 4px; }
details { margin: 12px 0; }
summary { cursor: pointer; color: var(--accent); }
footer { color: var(--muted); margin-top: 40px; font-size: 12px; }
table.advice td { font-size: 13px; }
table.advice td.mono { white-space: nowrap; }
table.advice code { word-break: break-all; }
.sev { font-weight: 600; }
.sev-high { color: #b00020; }
.sev-medium { color: #b35c00; }
.sev-low { color: var(--muted); }
"""

SCRIPT = """
(function () {
  function check() {
    var imgs = document.images, ok = 0;
    for (var i = 0; i < imgs.length; i++) {
      if (imgs[i].complete && imgs[i].naturalWidth > 0) { ok++; }
    }
    document.title = ok === imgs.length ? "sluice report: ok " + ok
      : "sluice report: " + (imgs.length - ok) + " of " + imgs.length + " images failed";
  }
  if (document.readyState === "complete") { check(); } else { window.addEventListener("load", check); }
})();
"""


def esc(s: object) -> str:
    """Text for HTML content or a quoted attribute, control characters made visible."""
    return html.escape(printable(str(s)), quote=True)


def factor(app: float, fs: float) -> str:
    """app/fs as the text report writes it; a dash when neither side did anything."""
    return "-" if app == 0 and fs == 0 else reduction(app, fs)


def _sha256(s: str) -> str:
    return base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode("ascii")


def _raw(v: float) -> str:
    """The exact value, as `sluice report --json` writes it."""
    return repr(float(v)) if isinstance(v, float) else str(int(v))


def _shown(v: float) -> str:
    return f"{v:.9g}" if isinstance(v, float) else f"{int(v):,}"


def _num(v: float, side: str | None = None, small: str = "") -> str:
    attrs = f' data-side="{side}"' if side else ""
    extra = f"<small>{esc(small)}</small>" if small else ""
    return f'<td class="num"{attrs} data-value="{esc(_raw(v))}">{esc(_shown(v))}{extra}</td>'


def _bytes(v: float, side: str) -> str:
    """A byte count shown short, the exact number in data-value and the tooltip."""
    return (f'<td class="num" data-side="{side}" data-value="{esc(_raw(v))}" title="{int(v):,} bytes">'
            f"{esc(human_bytes(v))}</td>")


def _fmt_seconds(s: float) -> str:
    if s >= 120:
        return f"{s / 60:.1f} min ({s:.1f} s)"
    return f"{s:.3f} s"


# --------------------------------------------------------------------------
# the parts of the page


def _header(job: Job, top: int) -> str:
    from sluice.report.summary import (commands, damaged_rows, damaged_text, distinct, signal_rows, signals_text,
                                       user_of, user_text, utc)

    exes = sorted({l.info.get("exe", "?") for l in job.logs})
    hosts = sorted({l.info.get("host", "?") for l in job.logs})
    modes = sorted({l.info.get("mode", "?") for l in job.logs})
    policies = distinct(job, "policy")
    cmds = commands(job)

    def listing(items: list[str]) -> str:
        shown = ", ".join(f"<code>{esc(x)}</code>" for x in items[:top])
        return shown + (f" and {len(items) - top:,} more" if len(items) > top else "")

    command = f"<code>{esc(cmds[0])}</code>" if cmds else "?"
    if len(cmds) > 1:
        command += f' <span class="note">and {len(cmds) - 1:,} other command line{"s" if len(cmds) > 2 else ""}</span>'
    rows = [
        ("job", f"<code>{esc(job.job_id)}</code>"),
        ("command", command),
        ("user", esc(user_text(user_of(job)))),
        ("processes", f"{job.processes:,}"),
        ("executables", listing(exes)),
        ("hosts", listing(hosts)),
        ("run time", esc(_fmt_seconds(job.runtime))),
        ("started", esc(utc(job.start_ns))),
        ("ended", esc(utc(job.end_ns))),
        ("mode", esc(", ".join(modes))),
        ("policy", listing(policies) if policies else "none"),
        ("files recorded", f"{len(job.files):,}"),
    ]
    out = [f'<header><h1>sluice report <span class="job">{esc(job.job_id)}</span></h1>',
           '<dl class="facts">']
    out += [f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows]
    out.append("</dl>")
    if job.partial:
        n = sum(1 for l in job.logs if l.partial)
        out.append(f'<div class="warn" id="partial"><strong>Partial:</strong> {n:,} of {job.processes:,} '
                   "processes ran out of file records, so some files were folded into "
                   "<code>&lt;other files&gt;</code>; their totals are complete but not split per file. "
                   "Raise <code>SLUICE_MAX_RECORDS</code> to record every file.</div>")
    sig = signal_rows(job)
    if sig:
        out.append(f'<div class="warn" id="cut"><strong>Ended by a signal:</strong> {esc(signals_text(sig))}; '
                   "their logs hold what they did up to then.</div>")
    damaged = damaged_rows(job)
    if damaged:
        items = "".join(f'<li data-damaged="{esc(d["log"])}"><code>{esc(damaged_text(d))}</code></li>'
                        for d in damaged)
        out.append(f'<div class="warn" id="damaged"><strong>{len(damaged):,} log{"s" if len(damaged) != 1 else ""} '
                   f"could not be read whole</strong> (what could be read of each is used):<ul>{items}</ul></div>")
    out.append("</header>")
    return "\n".join(out)


def _cards(job: Job) -> str:
    ops = {s: sum(getattr(job, s).get(k, 0) for k in OP_COUNTERS) for s in ("app", "fs")}
    nbytes = {s: total(getattr(job, s), ("POSIX_BYTES_READ", "STDIO_BYTES_READ", "POSIX_BYTES_WRITTEN",
                                          "STDIO_BYTES_WRITTEN")) for s in ("app", "fs")}
    cards = []
    for what, d, fmt in (("I/O operations", ops, lambda v: f"{int(v):,}"), ("bytes moved", nbytes, human_bytes)):
        cards.append(f'<div class="card"><div class="what">{what}: app / fs</div>'
                     f'<div class="factor">{esc(factor(d["app"], d["fs"]))}</div>'
                     f'<div>{esc(fmt(d["app"]))} asked, {esc(fmt(d["fs"]))} reached the file system</div></div>')
    return '<div class="cards">' + "".join(cards) + "</div>"


def _summary(job: Job) -> str:
    out = ['<section id="summary"><h2>Summary: application (app) and file system (fs)</h2>', _cards(job),
           '<p class="note">Each row adds up the POSIX and STDIO counters of the whole job; app/fs is how many '
           "times fewer reached the file system than the application asked for.</p>",
           '<table class="summary"><thead><tr><th>counters</th><th class="num">app</th><th class="num">fs</th>'
           '<th class="num">app/fs</th></tr></thead><tbody>']
    out += [_app_fs_row(job, "data-group", label, names) for label, names in SUMMARY + TIME_ROWS]
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _app_fs_row(job: Job, attr: str, label: str, names: tuple[str, ...]) -> str:
    """One row of an app/fs table: the two totals of `names` and their factor."""
    a, f = total(job.app, names), total(job.fs, names)
    if label.startswith("bytes"):
        cells = _num(a, "app", human_bytes(a)) + _num(f, "fs", human_bytes(f))
    else:
        cells = _num(a, "app") + _num(f, "fs")
    return (f'<tr {attr}="{esc(label)}" title="{esc(" + ".join(names))}"><th>{esc(label)}</th>'
            f'{cells}<td class="num factor">{esc(factor(a, f))}</td></tr>')


def _module_times(job: Job) -> str:
    """Seconds in each module's calls, app and fs, as the text report's table."""
    from sluice.report.summary import module_times

    rows = module_times(job)
    if not rows:
        return ""
    out = ['<section id="module-times"><h2>Time in each module&#x27;s calls</h2>',
           '<p class="note">Seconds inside the calls of each module, summed over processes. A call of one module '
           "runs those of the modules below it (an HDF5 write makes MPI-IO or POSIX calls), so the rows overlap."
           "</p>",
           '<table class="summary"><thead><tr><th>module</th><th class="num">read app</th>'
           '<th class="num">write app</th><th class="num">metadata app</th><th class="num">total app</th>'
           '<th class="num">total fs</th></tr></thead><tbody>']
    for r in rows:
        a = r["app"]
        out.append(f'<tr data-module="{esc(r["module"])}"><th>{esc(r["module"])}</th>{_num(a["read"], "app")}'
                   f'{_num(a["write"], "app")}{_num(a["meta"], "app")}{_num(a["total"], "app")}'
                   f'{_num(r["fs"]["total"], "fs")}</tr>')
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _mpiio(job: Job) -> str:
    """MPI-IO calls, when the job made any: what the program asked (app)
    and what reached MPI-IO (fs), as the text report shows them."""
    if not any(v for k, v in job.app.items() if k.startswith("MPIIO_") and "MAX_BYTE" not in k):
        return ""
    out = ['<section id="mpiio"><h2>MPI-IO: application (app) and what reached MPI-IO (fs)</h2>',
           '<table class="summary"><thead><tr><th>calls</th><th class="num">app</th><th class="num">fs</th>'
           '<th class="num">app/fs</th></tr></thead><tbody>']
    out += [_app_fs_row(job, "data-mpiio", label, names) for label, names in MPIIO_ROWS]
    out.append('</tbody></table><table class="summary"><thead><tr><th>write size</th>'
               '<th class="num">writes app</th><th class="num">writes fs</th></tr></thead><tbody>')
    for b, label in zip(BUCKETS, BUCKET_LABELS):
        a, f = job.app.get(f"MPIIO_SIZE_WRITE_{b}", 0), job.fs.get(f"MPIIO_SIZE_WRITE_{b}", 0)
        out.append(f'<tr data-mpiio-size="{esc(label)}"><th>{esc(label)}</th>{_num(a, "app")}{_num(f, "fs")}</tr>')
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _named_rows(sid: str, heading: str, note: str, columns: list[tuple[str, bool]], key: str,
                rows: list[list[str]]) -> str:
    """A section of datasets or variables: a table whose first column is
    their name (the row's data-KEY), the others text or numbers (True)."""
    head = "".join((f'<th class="num">{esc(c)}</th>' if num else f"<th>{esc(c)}</th>") for c, num in columns)
    out = [f'<section id="{sid}"><h2>{esc(heading)}</h2><p class="note">{esc(note)}</p>',
           f'<table class="files"><thead><tr>{head}</tr></thead><tbody>']
    for r in rows:
        cells = "".join(f'<td class="num">{esc(v)}</td>' if num else f"<td>{esc(v)}</td>"
                        for v, (_, num) in zip(r[1:], columns[1:]))
        out.append(f'<tr data-{key}="{esc(r[0])}"><td class="path">{esc(r[0])}</td>{cells}</tr>')
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _hdf5(job: Job, top: int) -> str:
    """HDF5 files and the top datasets by bytes, as the text report's table."""
    from sluice.report.hdf5 import hdf5_rows

    files, rows = hdf5_rows(job)
    if not files and not rows:
        return ""
    return _named_rows(
        "hdf5", f'HDF5: {files:,} file{"s" if files != 1 else ""}, {len(rows):,} dataset{"s" if len(rows) != 1 else ""}',
        f"Top {min(top, len(rows))} datasets by bytes (app side); selections of the file dataspace per read or write.",
        [("dataset", False), ("opens", True), ("reads", True), ("writes", True), ("bytes", True), ("selections", False),
         ("dims", True), ("points", True), ("chunks", False)], "dataset",
        [[r["dataset"], f"{r['opens']:,}", f"{r['reads']:,}", f"{r['writes']:,}", r["bytes_text"],
          r["selections"] + (" (collective)" if r["collective"] else ""), str(r["dims"]), f"{r['points']:,}",
          r["chunks"]] for r in rows[:top]])


def _pnetcdf(job: Job, top: int) -> str:
    """The PnetCDF variables that moved the most bytes, as the text report's table."""
    from sluice.report.pnetcdf import pnetcdf_rows

    files, rows = pnetcdf_rows(job)
    if not files and not rows:
        return ""
    return _named_rows(
        "pnetcdf",
        f'PnetCDF: {files:,} file{"s" if files != 1 else ""}, {len(rows):,} variable{"s" if len(rows) != 1 else ""}',
        f"Top {min(top, len(rows))} variables by bytes (app side); calls per API kind (var, var1, vara, vars, varm, "
        "varn, vard).",
        [("variable", False), ("opens", True), ("independent", True), ("collective", True), ("non-blocking", True),
         ("bytes", True), ("calls", False), ("dims", True)], "variable",
        [[r["variable"], f"{r['opens']:,}", f"{r['independent']:,}", f"{r['collective']:,}", f"{r['nonblocking']:,}",
          r["bytes_text"], r["calls"], f"{r['dims']}" + (" (record)" if r["record"] else "")] for r in rows[:top]])


def _auto(job: Job) -> str:
    """What --mode auto gave each opened file, as the text report's table."""
    from sluice.report.text import auto_choices

    if "auto" not in {l.info.get("mode") for l in job.logs}:
        return ""
    rows = auto_choices(job)
    if not rows:
        return ""
    out = ['<section id="auto"><h2>--mode auto: what each opened file got</h2>',
           '<table class="files"><thead><tr><th>choice</th><th class="num">files</th><th class="num">opens</th>'
           '<th>why</th><th>first file</th></tr></thead><tbody>']
    for choice, why, files, opens, path in rows:
        out.append(f'<tr data-auto="{esc(choice)}"><td>{esc(choice)}</td><td class="num">{files:,}</td>'
                   f'<td class="num">{opens:,}</td><td>{esc(why)}</td><td class="path">{esc(path)}</td></tr>')
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _layouts(job: Job, top: int) -> str:
    """The layout decisions at create, as the text report's table."""
    from sluice.report.text import layout_rows

    rows = layout_rows(job.files)
    if not rows:
        return ""
    out = [f'<section id="layouts"><h2>Layouts at create</h2><p class="note">{len(rows):,} '
           f'file{"s" if len(rows) != 1 else ""} with a layout decision (docs/layout.md); the first {min(top, len(rows))} '
           "by path.</p>",
           '<table class="files"><thead><tr><th>file</th><th>decision</th><th class="num">stripes</th>'
           '<th class="num">stripe size</th></tr></thead><tbody>']
    for r in sorted(rows, key=lambda r: r["path"])[:top]:
        count = "" if r["stripe_count"] is None else f'{r["stripe_count"]:,}'
        size = "" if r["stripe_size"] is None else human_bytes(r["stripe_size"])
        out.append(f'<tr data-layout="{esc(r["path"])}"><td class="path">{esc(r["path"])}</td>'
                   f'<td>{esc(r["decision"])}</td><td class="num">{count}</td><td class="num">{esc(size)}</td></tr>')
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _advice(job: Job, top: int) -> str:
    """The findings of `sluice advise`, most costly first, one row each."""
    from sluice.advise import advise, fix_of
    from sluice.advise.fix import program_command

    findings = advise(job)
    out = ['<section id="advice"><h2>Advice</h2>']
    if not findings:
        out.append('<p class="note">No findings: the job recorded no file I/O to judge.</p></section>')
        return "\n".join(out)
    out.append(f'<p class="note">{len(findings)} finding{"s" if len(findings) != 1 else ""} of '
               "<code>sluice advise</code>, most costly first (severity: the share of the job&#x27;s I/O time "
               "each explains); <code>sluice advise --json</code> gives each in full.</p>")
    out.append('<table class="advice"><thead><tr><th class="num">#</th><th>severity</th><th>finding</th>'
               "<th>paths</th><th>evidence</th><th>fix</th></tr></thead><tbody>")
    command = program_command(job)
    for i, f in enumerate(findings[:top], 1):
        fix = fix_of(f, command)
        paths = "<br>".join(f"<code>{esc(p)}</code>" for p in f.paths[:5])
        if len(f.paths) > 5:
            paths += f"<br>and {len(f.paths) - 5:,} more"
        paths += f'<br><span class="note">{len(f.files):,} file{"s" if len(f.files) != 1 else ""}</span>'
        gain = ""
        if f.gain:
            secs, share = f.gain["seconds"], f.gain["share_of_io_time"]
            gain = (f'<br><span class="note">expected gain: up to {secs:.3g} s '
                    f"({100 * share:.0f} % of the I/O time)</span>")
        todo = [f"mode <strong>{esc(f.mode)}</strong>"
                + ((" (in effect, in part)" if f.partial else " (already in effect)") if f.in_effect else "")]
        if "command" in fix["settings"]:
            todo.append(f"<code>{esc(fix['settings']['command'])}</code>")
        todo += [f"<code>{esc(c)}</code>" for c in fix["layout"]]
        todo += [esc(h) for h in fix["settings"].get("hints", [])[:2]]
        if fix["settings"].get("mpi_info"):
            todo.append("MPI_Info " + esc(", ".join(f"{k}={v}" for k, v in fix["settings"]["mpi_info"].items())))
        out.append(f'<tr data-finding="{esc(f.id)}"><td class="num">{i}</td>'
                   f'<td><span class="sev sev-{esc(f.severity)}">{esc(f.severity)}</span></td>'
                   f'<td class="mono">{esc(f.id)}</td><td>{paths}</td>'
                   f"<td>{esc(f.text)} ({100 * f.share:.0f} % of the I/O time){gain}</td>"
                   f'<td>{"<br>".join(todo)}</td></tr>')
    out.append("</tbody></table>")
    if len(findings) > top:
        out.append(f'<p class="note left-out">{len(findings) - top:,} more findings are left out.</p>')
    out.append("</section>")
    return "\n".join(out)


def _figure(p: Plot) -> str:
    if p.png is None:
        return (f'<section class="noplot" id="noplot-{esc(p.key)}"><h3>{esc(p.title)}</h3>'
                f'<p class="note">{esc(p.note)}</p></section>')
    data = base64.b64encode(p.png).decode("ascii")
    return (f'<figure class="plot" id="plot-{esc(p.key)}"><h3>{esc(p.title)}</h3>'
            f'<img src="data:image/png;base64,{data}" alt="{esc(p.alt or p.title)}">'
            f"<figcaption>{esc(p.note)}</figcaption></figure>")


def _file_table(job: Job, title: str, key, tid: str, top: int) -> str:
    chosen = sorted(job.files, key=lambda f: (key(f), f.path))[:top]
    if len(job.files) <= top:
        title = title.replace(f"Top {top} files", "Files")
    out = [f'<h3>{esc(title)}</h3>']
    if not chosen:
        out.append('<p class="note">No files were recorded.</p>')
        return "\n".join(out)
    out.append(f'<table class="files" id="{tid}"><thead><tr><th class="num">#</th><th>file</th>'
               '<th class="num">procs</th><th class="num">bytes app</th><th class="num">bytes fs</th>'
               '<th class="num">app/fs</th><th class="num">ops app</th><th class="num">ops fs</th>'
               '<th class="num">app/fs</th></tr></thead><tbody>')
    for i, f in enumerate(chosen, 1):
        ba, bf, oa, of = f.bytes("app"), f.bytes("fs"), f.ops("app"), f.ops("fs")
        out.append(f'<tr><td class="num">{i}</td><td class="path">{esc(f.path)}</td>'
                   f'<td class="num">{len(f.processes):,}</td>'
                   f"{_bytes(ba, 'app')}{_bytes(bf, 'fs')}"
                   f'<td class="num factor">{esc(factor(ba, bf))}</td>'
                   f"{_num(oa, 'app')}{_num(of, 'fs')}<td class=\"num factor\">{esc(factor(oa, of))}</td></tr>")
    out.append("</tbody></table>")
    if len(job.files) > len(chosen):
        shown = {id(f) for f in chosen}
        others = [f for f in job.files if id(f) not in shown]
        out.append(f'<p class="note left-out">{len(others):,} more files are left out '
                   f"({esc(human_bytes(sum(f.bytes('app') for f in others)))} and "
                   f"{sum(f.ops('app') for f in others):,} application operations).</p>")
    return "\n".join(out)


def _access_kinds(job: Job) -> str:
    """The files by use: read-only, write-only, read-write, no bytes moved."""
    from sluice.report.summary import ACCESS_KINDS, access_kinds

    if not job.files:
        return ""
    kinds = access_kinds(job)
    out = ['<h3>Files by use</h3><table class="summary" id="file-access"><thead><tr><th></th>'
           '<th class="num">files</th><th class="num">bytes read</th><th class="num">bytes written</th>'
           "</tr></thead><tbody>"]
    for kind in ACCESS_KINDS:
        k = kinds[kind]
        label = kind if kind != "neither" else "no bytes moved"
        out.append(f'<tr data-access="{esc(kind)}"><th>{esc(label)}</th><td class="num">{k["files"]:,}</td>'
                   f'{_bytes(k["app_bytes_read"], "app")}{_bytes(k["app_bytes_written"], "app")}</tr>')
    out.append("</tbody></table>"
               '<p class="note">Application side, every module: a file is read if the program read bytes from it '
               "or called a read on it, written likewise.</p>")
    return "\n".join(out)


def _places(job: Job, top: int) -> str:
    """Totals per directory (the busiest) and per mount."""
    from sluice.report.summary import directory_rows, mount_summary

    dirs = directory_rows(job)
    mounts = [r for r in mount_summary(job) if r["files"]]
    if not dirs and not mounts:
        return ""
    head = ('<th class="num">files</th><th class="num">bytes read</th><th class="num">bytes written</th>'
            '<th class="num">ops app</th><th class="num">ops fs</th>')

    def cells(r: dict) -> str:
        return (f'<td class="num">{r["files"]:,}</td>{_bytes(r["app_bytes_read"], "app")}'
                f'{_bytes(r["app_bytes_written"], "app")}{_num(r["app_ops"], "app")}{_num(r["fs_ops"], "fs")}')

    out = []
    if dirs:
        out.append(f'<h3>Directories</h3><p class="note">{len(dirs):,} director{"ies" if len(dirs) != 1 else "y"} '
                   "hold recorded files (each file counts in its own directory, not its parents&#x27;); "
                   f"the {min(top, len(dirs))} with the most bytes (app side).</p>"
                   f'<table class="files" id="directories"><thead><tr><th>directory</th>{head}</tr></thead><tbody>')
        out += [f'<tr data-directory="{esc(r["directory"])}"><td class="path">{esc(r["directory"])}</td>{cells(r)}</tr>'
                for r in dirs[:top]]
        out.append("</tbody></table>")
        if len(dirs) > top:
            out.append(f'<p class="note left-out">{len(dirs) - top:,} more directories are left out.</p>')
    if mounts:
        out.append('<h3>File systems</h3><table class="files" id="mounts"><thead><tr><th>mount</th><th>type</th>'
                   f"{head}</tr></thead><tbody>")
        out += [f'<tr data-mount="{esc(r["point"])}"><td class="path">{esc(r["point"])}</td><td>{esc(r["type"])}</td>'
                f"{cells(r)}</tr>" for r in mounts]
        out.append("</tbody></table>")
    return "\n".join(out)


def _files(job: Job, top: int) -> str:
    return "\n".join([
        f'<section id="files"><h2>Files</h2><p class="note">{len(job.files):,} files recorded; the tables list '
        f"at most {top}, ranked on the application side.</p>",
        _access_kinds(job),
        _file_table(job, f"Top {top} files by bytes", lambda f: (-f.bytes("app"), -f.ops("app")),
                    "top-bytes", top),
        _file_table(job, f"Top {top} files by operations", lambda f: (-f.ops("app"), -f.bytes("app")),
                    "top-ops", top),
        _places(job, top),
        _pattern_table(job, top),
        "</section>"])


def _pattern_table(job: Job, top: int) -> str:
    """The access pattern of the files with the most POSIX reads and writes."""
    from sluice.report.pattern import counts_text, log_mounts, pattern_rows

    rows = pattern_rows(job.files, log_mounts(job.logs), top)
    if not rows:
        return ""
    out = [f"<h3>Access pattern of the top {top} files by reads and writes (app side; most common first)</h3>",
           '<table class="files" id="pattern"><thead><tr><th>file</th><th>sizes (bytes x calls)</th>'
           '<th>strides (bytes x calls)</th><th class="num">unaligned in the file</th>'
           '<th class="num">unaligned in memory</th><th>file system</th></tr></thead><tbody>']
    for r in rows:
        fs = f"{r['fs_type']} {r['mount']}" if r["mount"] else "?"
        if r["file_alignment"]:
            fs += f" ({r['file_alignment']:,} B blocks)"
        if r["layout"]:
            fs += f"; {r['layout']}"
        out.append(f'<tr><td class="path">{esc(r["path"])}</td><td>{esc(counts_text(r["sizes"]))}</td>'
                   f'<td>{esc(counts_text(r["strides"]))}</td><td class="num">{r["file_not_aligned"]:,}</td>'
                   f'<td class="num">{r["mem_not_aligned"]:,}</td><td>{esc(fs)}</td></tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


def _processes(job: Job, top: int) -> str:
    logs = sorted(job.logs, key=lambda l: (l.start_ns, l.pid))
    out = [f'<section id="processes"><h2>Processes</h2>',
           '<table class="procs"><thead><tr><th class="num">rank</th><th class="num">pid</th><th>host</th>'
           '<th>command</th><th class="num">start (s)</th><th class="num">run time (s)</th><th>end</th>'
           '<th class="num">records</th></tr></thead><tbody>']
    for l in logs[:top]:
        rank = str(l.rank) if l.rank >= 0 else "-"
        out.append(f'<tr><td class="num">{esc(rank)}</td><td class="num">{l.pid}</td>'
                   f'<td>{esc(l.info.get("host", "?"))}</td>'
                   f'<td class="path">{esc(l.info.get("cmdline") or l.info.get("exe", "?"))}</td>'
                   f'<td class="num">{(l.start_ns - job.start_ns) / 1e9:.3f}</td>'
                   f'<td class="num">{l.runtime:.3f}</td>'
                   f'<td>{esc(l.end_reason)}{" (partial)" if l.partial else ""}</td>'
                   f'<td class="num">{len(l.records):,}</td></tr>')
    out.append("</tbody></table>")
    if len(logs) > top:
        out.append(f'<p class="note left-out">{len(logs) - top:,} more processes are left out.</p>')
    out.append("</section>")
    return "\n".join(out)


def _all_counters(job: Job) -> str:
    names = list(dict.fromkeys(list(job.app) + list(job.fs)))
    out = [f'<section id="counters"><details><summary>All {len(names)} job counters, app and fs</summary>',
           '<table class="counters"><thead><tr><th>counter</th><th class="num">app</th><th class="num">fs</th>'
           '<th class="num">app/fs</th></tr></thead><tbody>']
    for n in names:
        a, f = job.app.get(n, 0), job.fs.get(n, 0)
        ratio = factor(a, f) if "TIMESTAMP" not in n and "MAX_BYTE" not in n else ""
        out.append(f'<tr data-counter="{esc(n)}"><td class="mono">{esc(n)}</td>{_num(a, "app")}{_num(f, "fs")}'
                   f'<td class="num">{esc(ratio)}</td></tr>')
    out.append("</tbody></table>"
               '<p class="note">Timestamps are seconds since the job started; MAX_BYTE is the highest offset '
               "touched (-1: none).</p></details></section>")
    return "\n".join(out)


def _prediction(job: Job) -> str:
    """`sluice predict`'s table for a profile-mode run: what each mode would
    send to the file system and its I/O time (docs/predict.md)."""
    from sluice import predict as pr
    from sluice.errors import UserError

    try:
        doc = pr.predict(job)
    except UserError as e:
        return (f'<section id="prediction"><h2>What each mode would do</h2><p class="note">{esc(e)}</p>'
                "</section>")
    j = doc["job"]
    out = ['<section id="prediction"><h2>What each mode would do</h2>',
           f'<p class="note"><code>sluice predict</code> on {esc(doc["file_system"]["name"])}; buffer mode '
           + (f'replayed from the trace for {j["replayed_files"]:,} file(s)' if j.get("replayed_files")
              else "from the counters (<code>sluice run --trace N</code> for a replay)")
           + "; <code>sluice predict --fs FS.json</code> prices it on a calibrated file system.</p>",
           '<table class="prediction"><thead><tr><th>mode</th><th class="num">writes</th><th class="num">reads'
           '</th><th class="num">metadata ops</th><th class="num">I/O time</th></tr></thead><tbody>']
    for mode, m in doc["modes"].items():
        if not m["modelled"]:
            out.append(f'<tr data-mode="{esc(mode)}"><td>{esc(mode)}</td><td colspan="4" class="note">'
                       f'{esc(m["why"])}</td></tr>')
            continue
        fs = m["fs"]
        out.append(f'<tr data-mode="{esc(mode)}"><td>{esc(mode)}</td>'
                   f'<td class="num">{fs["POSIX_WRITES"] + fs["STDIO_WRITES"]:,.0f}</td>'
                   f'<td class="num">{fs["POSIX_READS"] + fs["STDIO_READS"]:,.0f}</td>'
                   f'<td class="num">{m["metadata_ops"]:,.0f}</td>'
                   f'<td class="num">{_fmt_seconds(m["io_time_s"])}</td></tr>')
    out.append("</tbody></table></section>")
    return "\n".join(out)


def render_html(job: Job, top: int = DEFAULT_TOP) -> str:
    """The whole page as one string."""
    plots = all_plots(job, top)
    drawn = [p for p in plots if p.png is not None]
    csp = (f"default-src 'none'; img-src data:; style-src 'sha256-{_sha256(CSS)}'; "
           f"script-src 'sha256-{_sha256(SCRIPT)}'; base-uri 'none'; form-action 'none'")
    body = [
        _header(job, top),
        _summary(job),
        _module_times(job),
        _mpiio(job),
        _hdf5(job, top),
        _pnetcdf(job, top),
        _advice(job, top),
        _prediction(job),
        f'<section id="plots"><h2>Plots</h2><p class="note">{len(drawn)} plot{"" if len(drawn) == 1 else "s"}. '
        "Solid: what the application asked (app); hatched: what reached the file system (fs).</p>",
        *(_figure(p) for p in plots),
        "</section>",
        _files(job, top),
        _auto(job),
        _layouts(job, top),
        _processes(job, top),
        _all_counters(job),
        f"<footer>sluice {esc(__version__)} &middot; {len(job.logs):,} log(s)</footer>",
    ]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="sluice-plots" content="{len(drawn)}">',
        f"<title>sluice report: job {esc(job.job_id)}</title>",
        f"<style>{CSS}</style>",
        "</head><body><main>",
        *body,
        "</main>",
        f"<script>{SCRIPT}</script>",
        "</body></html>",
        "",
    ])


def write_html(job: Job, path: str | os.PathLike[str], top: int = DEFAULT_TOP) -> None:
    """Write the report to path."""
    page = render_html(job, top)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)


__all__ = ["write_html", "render_html", "esc", "factor", "DEFAULT_TOP"]
