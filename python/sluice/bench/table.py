"""Rendering a results document as tables (rich)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sluice.autolarge import auto_large_of, size_text
from sluice.bench.sysinfo import fs_label


def fmt(x: float | None) -> str:
    """Three significant digits, thousands separated: 1,234 / 56.7 / 0.0891."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    if a == 0:
        return "0"
    return f"{x:.3g}"


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return "–"
    if 0 < x < 0.01:
        return f"1/{1 / x:,.0f}×"   # a count cut by more than 100x: say by how much
    return f"{x:.2f}×" if x < 100 else f"{x:,.0f}×"


def fmt_fraction(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x * 100:.1f}%" if x < 10 else f"{x:.1f}×"


def header_lines(doc: dict[str, Any]) -> list[str]:
    m, fs = doc["machine"], doc["filesystem"]
    tb = fs.get("testbed") or {}
    fsdesc = f"{fs['type']} at {fs.get('mount_point')}"
    if tb.get("is_testbed"):
        delay = tb.get("delay_us")
        fsdesc += f" (sluice MooseFS testbed, added delay {'unknown' if delay is None else f'{delay} µs'})"
    mem = m.get("memory_bytes")
    lines = [
        f"target {doc['config']['target']}: {fsdesc}",
        f"machine {m['hostname']}: {m['cores']} cores, {mem / 2**30:.0f} GiB, kernel {m['kernel']}; "
        f"load {m['loadavg_before'][0]} before, {m['loadavg_after'][0]} after",
        f"seed {doc['seed']}; {doc['config']['rounds']} rounds after {doc['config']['warmup']} warm-up; "
        "medians [min–max]; ratios are medians of round-by-round ratios",
    ]
    dc = doc["drop_caches"]
    if not dc["possible"]:
        lines.append(f"page cache NOT dropped between rounds: {dc['reason']}")
    if doc["limits"]["quick"]:
        lines.append(f"note: {doc['limits']['note']}")
    return lines


def _cell(s: dict[str, Any]) -> Text:
    """The median, and under it [min–max] dimmed."""
    t = Text(fmt(s["median"]))
    if s["n"] > 1:
        t.append(f"\n[{fmt(s['min'])}–{fmt(s['max'])}]", style="dim")
    return t


def workload_table(res: dict[str, Any], fslabel: str) -> Table:
    names = res["variants"]
    base = res["baseline"]
    title = f"{res['name']} on {fslabel}" + (" (quick)" if res["quick"] else "")
    params = res.get("params_shown") or ", ".join(f"{k}={v}" for k, v in res["params"].items())
    t = Table(title=Text(title), caption=Text(params), title_justify="left", caption_justify="left")
    t.add_column("metric")
    t.add_column("unit")
    for v in names:
        t.add_column(v, justify="right")
    for v in names[1:]:
        t.add_column(f"{v}\n/{base}", justify="right", style="bold")
    frac = res.get("fraction_of_limit") or {}
    if frac:
        t.add_column("limit")
        for v in names:
            t.add_column(f"{v}\nof limit" if len(names) > 1 else "of limit", justify="right")
    for metric, meta in res["metrics"].items():
        row: list[str | Text] = [metric, meta["unit"]]
        row += [_cell(res["summary"][v][metric]) for v in names]
        row += [fmt_ratio(res["ratios"][f"{v}/{base}"][metric]["median"]) for v in names[1:]]
        if frac:
            row.append(meta.get("limit") or "")
            for v in names:
                f = frac.get(v, {}).get(metric)
                row.append(fmt_fraction(f["fraction"]) if f else "")
        t.add_row(*row)
    return t


def print_results(doc: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    for line in header_lines(doc):
        console.print(line, markup=False, highlight=False)
    label = fs_label(doc["filesystem"])
    for res in doc["workloads"].values():
        console.print()
        console.print(workload_table(res, label))


def _us(x: float) -> str:
    return fmt(x * 1e6) + " µs" if x == x else "–"


def _spread(f: dict[str, float]) -> str:
    s = f.get("spread")
    return f"±{s * 50:.0f}%" if s is not None and s == s else ""


def _size(n: int) -> str:
    return size_text(n)


def print_profile(doc: dict[str, Any], console: Console | None = None) -> None:
    """A file-system profile (sluice bench calibrate) as two tables."""
    console = console or Console()
    st = doc["settings"]
    console.print(f"file system: {fs_label(doc['filesystem'])}; {st['rounds']} round(s), medians"
                  f" (± half the spread between rounds)"
                  + ("" if st["caches_dropped"] else f"; page cache not dropped: {st['caches_not_dropped_because']}"),
                  markup=False, highlight=False)
    procs = [str(p) for p in st["procs"]]
    nodes = [str(n) for n in range(1, st["nodes"] + 1)]
    t = Table(title="metadata", title_justify="left")
    t.add_column("operation")
    t.add_column("latency", justify="right")
    for p in procs:
        t.add_column(f"{p} proc ops/s", justify="right")
    for n in nodes:
        t.add_column(f"{n} node ops/s", justify="right")
    names = {"create_written": f"create, {st['small']} B, close"}
    for kind, m in doc["metadata"].items():
        lat = m["latency_s"]
        row = [names.get(kind, kind), f"{_us(lat['median'])} {_spread(lat)}"]
        row += [f"{fmt(m['ops_per_s'][p]['median'])} {_spread(m['ops_per_s'][p])}" for p in procs]
        row += [fmt(m["ops_per_s_by_nodes"][n]["median"]) for n in nodes]
        t.add_row(*row)
    console.print(t)
    d = doc["data"]
    t = Table(title="data", title_justify="left")
    t.add_column("figure")
    t.add_column("value", justify="right")
    for p in procs:
        t.add_row(f"write, {p} stream(s), MB/s", f"{fmt(d['write_MBps'][p]['median'])} {_spread(d['write_MBps'][p])}")
        t.add_row(f"cold read, {p} stream(s), MB/s", f"{fmt(d['read_MBps'][p]['median'])} {_spread(d['read_MBps'][p])}")
    for n in nodes:
        t.add_row(f"write from {n} node(s), MB/s", fmt(d["write_MBps_by_nodes"][n]["median"]))
    t.add_row(f"{st['small']} B write, per call", f"{_us(d['small_write_s']['median'])} {_spread(d['small_write_s'])}")
    t.add_row(f"{st['small']} B cold read, per call", f"{_us(d['small_read_s']['median'])} {_spread(d['small_read_s'])}")
    if "random_read_s" in d:   # (profiles made before it was measured have none)
        t.add_row(f"{st['small']} B cold read at random offsets, per call",
                  f"{_us(d['random_read_s']['median'])} {_spread(d['random_read_s'])}")
    calls = d.get("write_call_s") or {}   # (profiles made before they were measured have none)
    for size, fig in calls.items():
        if int(size) != st["small"]:
            t.add_row(f"{_size(int(size))} write, per call", f"{_us(fig['median'])} {_spread(fig)}")
    busy = d.get("write_call_busy_s") or {}
    if busy:
        t.add_row(f"the same, every core busy: {', '.join(_size(int(q)) for q in busy)}",
                  " / ".join(_us(f["median"]) for f in busy.values()))
    auto = d.get("auto_write_s") or {}   # (profiles made before it was measured have none)
    for size, fig in auto.items():
        t.add_row(f"a new file in {_size(int(size))} calls under auto, per call: staged / direct",
                  f"{_us(fig['staged']['median'])} {_spread(fig['staged'])} / {_us(fig['direct']['median'])} "
                  f"{_spread(fig['direct'])}")
    if auto:
        a = auto_large_of(doc)
        if a is not None:
            t.add_row("auto's first-write size by these (sluice run --fs)",
                      "every write" if a.large <= 1 else _size(a.large))
    t.add_row(f"{st['small']} B write + fsync", f"{_us(d['fsync_s']['median'])} {_spread(d['fsync_s'])}")
    sh = d["shared_stripe"]
    t.add_row("2 writers sharing stripes / apart", f"{fmt(sh['shared_MBps']['median'])} / "
              f"{fmt(sh['apart_MBps']['median'])} MB/s ({fmt(sh['slowdown']['median'])}x slower)")
    console.print(t)
