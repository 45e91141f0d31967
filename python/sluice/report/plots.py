"""The plots of the HTML report, drawn with matplotlib's Agg backend into PNG bytes.

Every plot shows the two sides of sluice's counters: what the application
asked ("app", solid) and what reached the file system ("fs", hatched). Each
builder returns a :class:`Plot`; one with nothing to draw (a job without
reads, without files, ...) carries no image and a note that says why.
"""

from __future__ import annotations

import io
import os
import warnings
from dataclasses import dataclass

import numpy as np
from matplotlib import rc_context, rcParams
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from sluice.report.heatmap import heatmap
from sluice.report.model import SHARED, FileTotals, Job
from sluice.report.tables import any_positive
from sluice.report.text import BUCKET_LABELS, BUCKETS, total

DPI = 100
WIDTH = 10.5  # inches: 1050 px at DPI

READ_COLOUR = "#2166ac"
WRITE_COLOUR = "#d6604d"
META_COLOUR = "#8c8c8c"
SPAN_COLOUR = "#e3e3e3"
FS_HATCH = "////"

MODULES = ("POSIX", "STDIO")

# Operation counts per kind, as plot (b) shows them.
OP_KINDS: list[tuple[str, tuple[str, ...]]] = [
    ("opens", ("POSIX_OPENS", "STDIO_OPENS")),
    ("reads", ("POSIX_READS", "STDIO_READS")),
    ("writes", ("POSIX_WRITES", "STDIO_WRITES")),
    ("seeks", ("POSIX_SEEKS", "STDIO_SEEKS")),
    ("stats", ("POSIX_STATS",)),
    ("syncs", ("POSIX_FSYNCS", "POSIX_FDSYNCS", "STDIO_FLUSHES")),
    ("unlinks", ("POSIX_UNLINKS",)),
    ("renames", ("POSIX_RENAMES",)),
    ("mkdirs", ("POSIX_MKDIRS",)),
]

READ_OPS = ("POSIX_READS", "STDIO_READS")
WRITE_OPS = ("POSIX_WRITES", "STDIO_WRITES")
TIMES: list[tuple[str, tuple[str, ...], str]] = [
    ("read", ("POSIX_F_READ_TIME", "STDIO_F_READ_TIME"), READ_COLOUR),
    ("write", ("POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME"), WRITE_COLOUR),
    ("metadata", ("POSIX_F_META_TIME", "STDIO_F_META_TIME"), META_COLOUR),
]


@dataclass
class Plot:
    key: str          # stable identifier, used as the HTML id "plot-<key>"
    title: str
    png: bytes | None  # None: nothing to draw, see note
    note: str          # caption under the image, or why there is no image
    alt: str = ""


# --------------------------------------------------------------------------
# helpers


def _new_figure(height: float) -> Figure:
    fig = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # Paths may hold characters the default font has no glyph for.
        warnings.simplefilter("ignore")
        fig.savefig(buf, format="png", dpi=DPI, facecolor="white", metadata={"Software": None})
    return buf.getvalue()


def _tint(colour: str, amount: float = 0.6) -> tuple[float, float, float]:
    """The colour mixed with white: the fill of the hatched fs bars."""
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def _side_style(colour: str, side: str) -> dict:
    if side == "app":
        return {"color": colour, "edgecolor": colour, "linewidth": 0.5}
    return {"color": _tint(colour), "edgecolor": colour, "hatch": FS_HATCH, "linewidth": 0.5}


def _side_legend() -> list[Patch]:
    return [Patch(facecolor="#555555", edgecolor="#555555", label="app: what the application asked"),
            Patch(facecolor=_tint("#555555"), edgecolor="#555555", hatch=FS_HATCH,
                  label="fs: what reached the file system")]


def _count(v: float) -> str:
    return f"{int(v):,}"


def _label_pairs(ax, xs, width: float, app: list[float], fs: list[float], zeros: bool = False) -> None:
    """Counts above side-by-side app/fs bars: one label over the pair when the
    two sides agree, else one upright label per bar (they would overlap)."""
    for x, a, f in zip(xs, app, fs):
        if a == f:
            if a or zeros:
                ax.annotate(_count(a), (x, a), xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=7)
            continue
        for off, v in ((-width / 2, a), (width / 2, f)):
            if v or zeros:
                ax.annotate(_count(v), (x + off, v), xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=7, rotation=90)


def printable(s: str) -> str:
    """A path with control characters made visible (\\n, \\x1b, ...)."""
    if s.isprintable():
        return s
    out = []
    for ch in s:
        if ch.isprintable():
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}")
    return "".join(out)


def short_labels(paths: list[str], width: int = 46) -> tuple[str, list[str]]:
    """Axis labels for paths: the directory they all share is cut off (and
    returned, for the caption), and long names keep their tail."""
    absolute = [p for p in paths if p.startswith("/")]
    prefix = os.path.commonpath(absolute) if absolute else ""
    if prefix in absolute:  # one of the paths is the shared directory itself
        prefix = os.path.dirname(prefix)
    if prefix == "/":
        prefix = ""
    labels = []
    for p in paths:
        label = p[len(prefix) + 1 :] if prefix and p.startswith(prefix + "/") else p
        label = printable(label)
        if len(label) > width:
            label = "…" + label[-(width - 1) :]
        labels.append(label)
    return prefix, labels


def _prefix_note(prefix: str) -> str:
    return f" Paths are shown relative to {printable(prefix)}/." if prefix else ""


def _left_out(n: int, what: str = "files") -> str:
    return f" {n:,} more {what} are left out." if n > 0 else ""


def _min_nonzero(values: list[float]) -> float:
    nz = [v for v in values if v > 0]
    return min(nz) if nz else 0.0


# --------------------------------------------------------------------------
# (a) access sizes


def access_sizes(job: Job) -> Plot:
    title = "Access sizes of POSIX reads and writes"
    data = {(kind, side): [int(getattr(job, side).get(f"POSIX_SIZE_{kind}_{b}", 0)) for b in BUCKETS]
            for kind in ("READ", "WRITE") for side in ("app", "fs")}
    # a panel only for the kinds the job made: no reads, no reads panel
    kinds = [(k, c) for k, c in (("READ", READ_COLOUR), ("WRITE", WRITE_COLOUR))
             if sum(data[(k, "app")]) or sum(data[(k, "fs")])]
    if not kinds:
        return Plot("sizes", title, None, "No POSIX reads or writes were recorded, so there is no size "
                    "histogram (STDIO calls are not binned by size).")
    if len(kinds) == 1:
        title = f"Access sizes of POSIX {kinds[0][0].lower()}s"
    fig = _new_figure(4.2)
    axes = fig.subplots(1, len(kinds), sharey=False, squeeze=False)[0]
    width = 0.4
    for ax, (kind, colour) in zip(axes, kinds):
        xs = range(len(BUCKETS))
        for off, side in ((-width / 2, "app"), (width / 2, "fs")):
            ax.bar([x + off for x in xs], data[(kind, side)], width, label=side, **_side_style(colour, side))
        _label_pairs(ax, xs, width, data[(kind, "app")], data[(kind, "fs")])
        ax.set_xticks(list(xs), BUCKET_LABELS, rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{kind.lower()}s", fontsize=11)
        ax.set_xlabel("access size (bytes)")
        ax.set_ylabel("calls")
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    fig.legend(handles=_side_legend(), loc="outside upper center", ncols=2, fontsize=9, frameon=False)
    none = [k.lower() for k in ("READ", "WRITE") if k not in {k for k, _ in kinds}]
    return Plot("sizes", title, _png(fig),
                "POSIX " + " and ".join(f"{k.lower()}" for k, _ in kinds) + " calls per access size, in Darshan's "
                "ten buckets; app and fs side by side." + (f" No POSIX {none[0]}s were recorded." if none else ""),
                alt="Histograms of access sizes, app and fs")


# --------------------------------------------------------------------------
# (b) operation counts per kind


def op_counts(job: Job) -> Plot:
    title = "Operations per kind"
    # only the kinds of call the job made: a bar of zero on both sides says nothing
    kinds = [(k, names) for k, names in OP_KINDS
             if total(job.app, names) or total(job.fs, names)]
    if not kinds:
        return Plot("ops", title, None, "No operations were recorded.")
    vals = {side: [total(getattr(job, side), names) for _, names in kinds] for side in ("app", "fs")}
    fig = _new_figure(4.0)
    ax = fig.subplots()
    width = 0.4
    xs = range(len(kinds))
    for off, side in ((-width / 2, "app"), (width / 2, "fs")):
        ax.bar([x + off for x in xs], vals[side], width, **_side_style("#4d4d4d", side))
    _label_pairs(ax, xs, width, vals["app"], vals["fs"], zeros=True)
    ax.set_xticks(list(xs), [k for k, _ in kinds])
    ax.set_ylabel("calls")
    ax.margins(y=0.15)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(handles=_side_legend(), loc="upper right", fontsize=9, frameon=False)
    return Plot("ops", title, _png(fig),
                "Calls of each kind the job made, POSIX and STDIO together (syncs: fsync, fdatasync and fflush)"
                + (f"; none of: {', '.join(k for k, _ in OP_KINDS if k not in dict(kinds))}."
                   if len(kinds) < len(OP_KINDS) else "."),
                alt="Bar chart of operation counts per kind, app and fs")


# --------------------------------------------------------------------------
# (c) operations per file


def _file_ops(f: FileTotals, side: str) -> tuple[float, float, float]:
    c = getattr(f, side)
    reads, writes = total(c, READ_OPS), total(c, WRITE_OPS)
    return reads, writes, max(0.0, f.ops(side) - reads - writes)


def ops_per_file(job: Job, top: int = 20) -> Plot:
    busy = [f for f in job.files if f.ops("app") or f.ops("fs")]
    if not busy:
        return Plot("files", "Operations per file", None, "No file had any operation recorded.")
    chosen = sorted(busy, key=lambda f: (-f.ops("app"), -f.ops("fs"), f.path))[:top]
    title = (f"Operations per file (top {len(chosen)} by operations)" if len(busy) > len(chosen)
             else "Operations per file")
    prefix, labels = short_labels([f.path for f in chosen])
    n = len(chosen)
    fig = _new_figure(1.3 + 0.42 * n)
    ax = fig.subplots()
    h = 0.38
    for i, f in enumerate(chosen):
        for off, side in ((-h / 2, "app"), (h / 2, "fs")):
            left = 0.0
            for v, colour in zip(_file_ops(f, side), (READ_COLOUR, WRITE_COLOUR, META_COLOUR)):
                if v:
                    ax.barh(i + off, v, h, left=left, **_side_style(colour, side))
                left += v
            ax.text(left, i + off, f" {_count(left)}", va="center", fontsize=7)
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlabel("calls (upper bar app, lower bar fs)")
    ax.margins(x=0.08)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(color=READ_COLOUR, label="reads"), Patch(color=WRITE_COLOUR, label="writes"),
               Patch(color=META_COLOUR, label="other (open, seek, stat, sync, ...)")] + _side_legend()
    fig.legend(handles=handles, loc="outside upper center", ncols=5, fontsize=8, frameon=False)
    return Plot("files", title, _png(fig),
                f"Calls per file, split into reads, writes and the rest; the {n} files with the most "
                f"application calls.{_prefix_note(prefix)}{_left_out(len(busy) - n, 'files with operations')}",
                alt="Horizontal bars of operations per file, app and fs")


# --------------------------------------------------------------------------
# (d) timeline


def _interval(c: dict[str, float], kind: str) -> tuple[float, float] | None:
    start = _min_nonzero([c.get(f"{m}_F_{kind}_START_TIMESTAMP", 0) for m in MODULES])
    end = max([c.get(f"{m}_F_{kind}_END_TIMESTAMP", 0) for m in MODULES])
    if not start and not end:
        return None
    if not start:
        start = end
    return start, max(start, end)


def _span(f: FileTotals, runtime: float) -> tuple[float, float] | None:
    """From the first open (or first access) to the last close (or last access)."""
    starts, ends = [], []
    for side in ("app", "fs"):
        c = getattr(f, side)
        starts += [c.get(f"{m}_F_OPEN_START_TIMESTAMP", 0) for m in MODULES]
        ends += [c.get(f"{m}_F_CLOSE_END_TIMESTAMP", 0) for m in MODULES]
        for kind in ("READ", "WRITE"):
            iv = _interval(c, kind)
            if iv:
                starts.append(iv[0])
                ends.append(iv[1])
    start = _min_nonzero(starts)
    if not start:
        return None
    closes = [e for e in ends if e > 0]
    end = max(closes) if closes else max(runtime, start)
    return start, max(start, end)


def _timed_count(job: Job) -> int:
    """How many files have a _span: those with an open, read or write
    timestamp above zero on either side."""
    names = [f"{m}_F_{k}_TIMESTAMP" for m in MODULES
             for k in ("OPEN_START", "READ_START", "READ_END", "WRITE_START", "WRITE_END")]
    app = any_positive([f.app for f in job.files], names)
    fs = any_positive([f.fs for f in job.files], names)
    return sum(a or b for a, b in zip(app, fs))


def timeline(job: Job, top: int = 20) -> Plot:
    # the first `top` files with a span, by bytes, and whether there are more:
    # a span is worked out only for the files looked at
    chosen, more = [], False
    for f in sorted(job.files, key=lambda f: (-max(f.bytes("app"), f.bytes("fs")), f.path)):
        if (s := _span(f, job.runtime)):
            if len(chosen) == top:
                more = True
                break
            chosen.append((f, s))
    if not chosen:
        return Plot("timeline", "I/O timeline", None, "No file has open, read or write timestamps.")
    title = f"I/O timeline (top {len(chosen)} files by bytes)" if more else "I/O timeline"
    chosen.sort(key=lambda fs: (fs[1][0], fs[0].path))
    prefix, labels = short_labels([f.path for f, _ in chosen])
    xmax = max([job.runtime] + [s[1] for _, s in chosen]) or 1e-6
    t0, t1 = min(s[0] for _, s in chosen), max(s[1] for _, s in chosen)
    xmin = 0.0
    if t1 - t0 < 0.3 * xmax:
        # The files were busy for a small part of the run: zoom in on that part.
        pad = 0.05 * (t1 - t0) if t1 > t0 else 0.002 * xmax
        xmin, xmax = max(0.0, t0 - pad), t1 + pad
    wmin = (xmax - xmin) * 0.003
    n = len(chosen)
    fig = _new_figure(1.4 + 0.34 * n)
    ax = fig.subplots()
    for i, (f, (s0, s1)) in enumerate(chosen):
        ax.barh(i, max(s1 - s0, wmin), 0.84, left=s0, color=SPAN_COLOUR, edgecolor="#bdbdbd", linewidth=0.5)
        for off, side in ((-0.19, "app"), (0.19, "fs")):
            c = getattr(f, side)
            for kind, colour in (("READ", READ_COLOUR), ("WRITE", WRITE_COLOUR)):
                iv = _interval(c, kind)
                if iv:
                    ax.barh(i + off, max(iv[1] - iv[0], wmin), 0.34, left=iv[0], **_side_style(colour, side))
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(xmin, xmin + (xmax - xmin) * 1.01)
    ax.set_xlabel("seconds since the job started")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(facecolor=SPAN_COLOUR, edgecolor="#bdbdbd", label="open to last close"),
               Patch(color=READ_COLOUR, label="first read to last read"),
               Patch(color=WRITE_COLOUR, label="first write to last write")] + _side_legend()
    fig.legend(handles=handles, loc="outside upper center", ncols=5, fontsize=8, frameon=False)
    zoom = " The axis shows only the part of the run when these files were busy." if xmin > 0 else ""
    return Plot("timeline", title, _png(fig),
                f"One row per file, in the order the files were first opened: grey from the first open to "
                f"the last close; within it the read and write intervals, app in the upper half and fs in "
                f"the lower half (hatched).{zoom}{_prefix_note(prefix)}"
                f"{_left_out(_timed_count(job) - n, 'files with timestamps')}",
                alt="Timeline of file activity, one bar per file")


# --------------------------------------------------------------------------
# (e) time split


def time_split(job: Job) -> Plot:
    title = "Time in I/O calls: read, write, metadata"
    secs = {side: [total(getattr(job, side), names) for _, names, _ in TIMES] for side in ("app", "fs")}
    if not any(secs["app"]) and not any(secs["fs"]):
        return Plot("time", title, None, "No time was recorded in I/O calls.")
    fig = _new_figure(2.3)
    ax = fig.subplots()
    tmax = max(sum(secs["app"]), sum(secs["fs"]))
    xlim = tmax * 1.18
    axes_px = WIDTH * DPI * 0.85
    for i, side in enumerate(("app", "fs")):
        left = 0.0
        whole = sum(secs[side])
        for (label, _, colour), v in zip(TIMES, secs[side]):
            if v <= 0:
                continue
            ax.barh(i, v, 0.6, left=left, **_side_style(colour, side))
            text = f"{label} {100 * v / whole:.0f}%"
            if v / xlim * axes_px >= 5.5 * len(text) + 8:  # only where the label fits inside
                ax.text(left + v / 2, i, text, ha="center", va="center",
                        fontsize=8, color="white" if side == "app" else "black")
            left += v
        ax.text(left, i, f"  {whole:.6f} s", va="center", fontsize=8)
    ax.set_yticks([0, 1], ["app", "fs"])
    ax.set_ylim(1.5, -0.5)
    ax.set_xlim(0, xlim)
    ax.set_xlabel("seconds inside I/O calls, summed over processes")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(color=c, label=l) for l, _, c in TIMES]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    def parts(side: str) -> str:
        whole = sum(secs[side]) or 1.0
        return ", ".join(f"{l} {v:.6f} s ({100 * v / whole:.0f}%)" for (l, _, _), v in zip(TIMES, secs[side]))

    return Plot("time", title, _png(fig), f"app: {parts('app')}. fs: {parts('fs')}.",
                alt="Stacked bars of read, write and metadata time, app and fs")


# --------------------------------------------------------------------------
# (f) heatmap: bytes per process over time


def _bytes_label(v: float) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= f:
            return f"{v / f:.1f} {unit}"
    return f"{v:.0f} B"


def rank_heatmap(job: Job) -> Plot:
    title = "Bytes per process over time (heatmap)"
    hm = heatmap(job)
    if hm is None:
        if any(SHARED in l.info for l in job.logs) and (total(job.app, ("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"))):
            return Plot("heatmap", title, None, "Darshan reduced the files that moved bytes to shared (rank -1) "
                        "records, which belong to no single rank: no per-rank bytes to show.")
        return Plot("heatmap", title, None, "No POSIX or STDIO bytes were recorded.")
    panels = [(k, m) for k, m in (("read", hm.read), ("written", hm.write)) if m.any()]
    nrows = len(hm.rows)
    fig = _new_figure(1.2 + len(panels) * (0.6 + min(0.22 * nrows, 5.0)))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    extent = (hm.edges[0], hm.edges[-1], nrows - 0.5, -0.5)
    for ax, (kind, m) in zip(axes, panels):
        shown = np.ma.masked_equal(m, 0.0)
        im = ax.imshow(shown, aspect="auto", interpolation="nearest", extent=extent, vmin=0.0, vmax=float(m.max()),
                       cmap="Blues" if kind == "read" else "Reds")
        step = max(1, nrows // 16)
        ax.set_yticks(range(0, nrows, step), [hm.rows[i] for i in range(0, nrows, step)], fontsize=7)
        ax.set_title(f"bytes {kind}", fontsize=9, loc="left")
        cb = fig.colorbar(im, ax=ax, pad=0.01, fraction=0.04)
        cb.ax.tick_params(labelsize=7)
        cb.set_label("bytes per bin", fontsize=7)
    axes[-1].set_xlabel("seconds since the job started")
    totals = ", ".join(f"{kind} {_bytes_label(float(m.sum()))}" for kind, m in panels)
    return Plot("heatmap", title, _png(fig),
                f"{'One row per process' if not hm.rows[0].startswith(('ranks ', 'pids ')) else 'Consecutive processes grouped per row'}"
                f" ({nrows} rows; {totals}), {len(hm.edges) - 1} bins of "
                f"{hm.bin_seconds:.6g} s, application side of POSIX and STDIO. The logs hold each file's first "
                "and last read and write per process, not each call's time: a record's bytes are spread evenly "
                "from its first to its last access, so a file written in two bursts shows as written steadily "
                "in between; totals per row are exact.",
                alt="Heatmap of bytes read and written per process and time bin")


def all_plots(job: Job, top: int = 20) -> list[Plot]:
    """Every plot of the report, in page order."""
    rc = {"font.size": 9, "axes.spines.top": False, "axes.spines.right": False, "hatch.linewidth": 0.6}
    if "text.parse_math" in rcParams:
        rc["text.parse_math"] = False  # a "$" in a path is a character, not mathtext
    with rc_context(rc):
        return [access_sizes(job), op_counts(job), ops_per_file(job, top), timeline(job, top), time_split(job),
                rank_heatmap(job)]


__all__ = ["Plot", "all_plots", "short_labels", "printable", "OP_KINDS"]
