"""``sluice bench``: run benchmark workloads on a directory and compare variants."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from sluice.bench import session, table, variants, workloads
from sluice.bench.caches import CacheDropper


def list_workloads(console: Console) -> None:
    console.print("Workloads (parameters: -p [WORKLOAD.]NAME=VALUE, default shown):", highlight=False)
    for name, cls in workloads.WORKLOADS.items():
        wl = cls()
        console.print(f"\n[bold]{name}[/bold]  {escape(wl.summary)}", highlight=False)
        console.print(f"  variants by default: {', '.join(wl.variants)}"
                      + (f" (only {', '.join(wl.allowed_variants)})" if wl.allowed_variants else ""), highlight=False)
        for p in wl.params:
            console.print(f"  {p.name}={escape(p.show(p.default))}  {escape(p.help)}", highlight=False)
    console.print("\nVariants (--variant NAME, baseline first):", highlight=False)
    for var in variants.VARIANTS.values():
        console.print(f"  {var.name}  {escape(var.help)}", highlight=False)


def run(
    target: Path | None,
    names: list[str],
    rounds: int = 5,
    warmup: int = 1,
    seed: int = 1,
    json_path: Path | None = None,
    params: list[str] | tuple[str, ...] = (),
    variant_names: list[str] | tuple[str, ...] = (),
    drop_caches: bool = True,
    timeout: float | None = None,
    list_only: bool = False,
    console: Console | None = None,
    argv: list[str] | None = None,
) -> dict[str, Any] | None:
    """Everything ``sluice bench`` does; returns the results document."""
    if console is None:
        console = Console()
        if not console.is_terminal:  # a file or pipe: room for every column
            console = Console(width=160)
    if list_only:
        list_workloads(console)
        return None
    if target is None:
        raise click.UsageError("--target DIR is required (or --list)")
    plans = session.make_plans(list(names), rounds, warmup, params, variant_names)
    err = Console(stderr=True)
    doc = session.run_bench(
        target,
        plans,
        seed=seed,
        caches=CacheDropper(enabled=drop_caches),
        progress=lambda msg: err.print(f"[dim]{msg}[/dim]", highlight=False),
        argv=argv,
        timeout=timeout,
    )
    out = json_path or session.default_json_path(doc)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    table.print_results(doc, console)
    console.print(f"\nresults: {out}", highlight=False)
    return doc


def _size(value: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    v = value.strip().upper()
    try:
        return int(float(v[:-1]) * units[v[-1]]) if v and v[-1] in units else int(v)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a size (4M, 1G, 65536)") from None


@click.command("calibrate", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--target", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="A directory on the file system to measure (a folder of its own is made inside it and removed).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The profile to write (JSON, docs/calibrate.md).")
@click.option("--rounds", type=click.IntRange(1), default=5, show_default=True,
              help="Rounds at most; figures are their medians.")
@click.option("--budget", type=click.FloatRange(0, min_open=True), default=170.0, show_default=True,
              help="Seconds: after 3 rounds, no round is begun that would end later than this at the pace so far.")
@click.option("--files", type=click.IntRange(10), default=500, show_default=True,
              help="Files (and directories) per process in each metadata measurement.")
@click.option("--size", "size_text", default="256M", show_default=True,
              help="Bytes written (then read) in all by each bandwidth measurement.")
@click.option("--procs", default="1,2,4", show_default=True, help="Processes at once, comma-separated.")
@click.option("--nodes", type=click.IntRange(0, 8), default=0, show_default=True,
              help="Also from 1..N of the testbed's simulated nodes at once (sluice testbed up --nodes N).")
@click.option("--drop-caches/--no-drop-caches", default=True, show_default=True,
              help="Drop the page cache before cold reads and stats (needs root).")
def calibrate_command(target: Path, output: Path, rounds: int, budget: float, files: int, size_text: str,
                      procs: str, nodes: int, drop_caches: bool) -> None:
    """Measure what the file system at --target charges: latencies and rates of
    create, stat, open, rename, unlink, mkdir, rmdir from 1, 2, 4 processes (and
    nodes), large and small write and read, fsync, a shared stripe. Writes the
    profile that predictions read.

    \b
    Example:
      sluice bench calibrate --target /mnt/sluice-pfs -o moosefs.json
    """
    from sluice.bench import calibrate as cal

    try:
        plist = sorted({int(x) for x in procs.split(",") if x.strip()})
    except ValueError:
        raise click.BadParameter(f"{procs!r}: processes as 1,2,4", param_hint="--procs") from None
    if not plist or plist[0] < 1 or plist[-1] > 64:
        raise click.BadParameter("between 1 and 64 processes", param_hint="--procs")
    err = Console(stderr=True)
    doc = cal.calibrate(target, rounds=rounds, budget_s=budget, files=files, size=_size(size_text), procs=plist,
                        nodes=nodes, drop_caches=drop_caches, progress=lambda m: err.print(f"[dim]{m}[/dim]", highlight=False),
                        argv=["sluice", *sys.argv[1:]])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(doc, indent=1) + "\n")
    table.print_profile(doc, Console() if Console().is_terminal else Console(width=160))
    click.echo(f"profile: {output} ({doc['duration_s']:.0f} s)")


class _BenchCommand(click.Command):
    """`sluice bench WORKLOAD...`, and `sluice bench calibrate ...` (a command of its own)."""

    def make_context(self, info_name, args, parent=None, **extra):   # type: ignore[override]
        if args[:1] == ["calibrate"]:
            return calibrate_command.make_context("calibrate", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command("bench", cls=_BenchCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--target", type=click.Path(file_okay=False, path_type=Path), help="Directory to benchmark in (a scratch folder is made inside it and removed).")
@click.option("--rounds", type=click.IntRange(1), default=5, show_default=True, help="Measured rounds per workload.")
@click.option("--warmup", type=click.IntRange(0), default=1, show_default=True, help="Warm-up rounds (not counted).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed for the workloads' data (record sizes, box layout).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Results file [default: bench/results/<workloads>-<fs>-<time>.json].")
@click.option("-p", "--param", "params", multiple=True, metavar="[WORKLOAD.]NAME=VALUE", help="Set a workload parameter (see --list); repeatable.")
@click.option("--variant", "variant_names", multiple=True, metavar="NAME", help="Variants to run, baseline first (default: each workload's own); repeatable.")
@click.option("--drop-caches/--no-drop-caches", default=True, show_default=True, help="Drop the page cache before runs that read (needs root).")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=None, help="Seconds one program run may take.")
@click.option("--list", "list_only", is_flag=True, help="List workloads, their parameters and the variants, and exit.")
@click.argument("names", nargs=-1, metavar="WORKLOAD...")
def command(**kwargs: Any) -> None:
    """Measure WORKLOADs on the directory --target.

    Each workload runs one warm-up round, then --rounds rounds in which its
    variants alternate (A B A B ...). The table shows medians [min–max], the
    median of round-by-round ratios against the first variant, and each figure
    as a fraction of the physical limits (workload `limits`, measured in the
    same invocation; a quick version runs when it is not named).

    `sluice bench calibrate --target DIR -o FS.json` measures what a file
    system charges per operation instead (see its --help).

    \b
    Example:
      sluice bench --target /mnt/sluice-pfs limits smallio ensemble fpp-netcdf
    """
    run(**kwargs, argv=["sluice", *sys.argv[1:]])
