"""``sluice testbed``: a real distributed file system on this machine (MooseFS)."""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

import click

from sluice import testbed
from sluice.testbed import cephfs


def _echo_err(line: str) -> None:
    click.echo(line, err=True)


# --fs: which testbed (MooseFS, the default, or CephFS with per-file layouts)
FS_OPTION = click.option("--fs", type=click.Choice(["moosefs", "cephfs"]), default="moosefs", show_default=True,
                         help="moosefs, or cephfs: a file system with per-file layouts (striping).")


def _cephfs_up(mountpoint: Path | None, delay_us: int, nodes: int | None, verbose: bool) -> None:
    t0 = time.monotonic()
    mnt = cephfs.up(mountpoint, delay_us=delay_us, echo=_echo_err if verbose else None, nodes=nodes)
    st = cephfs.status()
    delay = f"delay {st['delay_us']} µs one-way" if st["delay_us"] else "no delay"
    click.echo(f"CephFS testbed up at {mnt}: monitor pid {st['mon']['pid']}, {len(st['osds'])} OSDs, "
               f"MDS pid {st['mds']['pid']}, {delay} ({time.monotonic() - t0:.1f} s)")
    _echo_nodes(st)


def _echo_nodes(st: dict[str, Any]) -> None:
    for node in st["nodes"]:
        cache = "" if node["write_cache"] else ", write cache off"
        click.echo(f"  {node['hostname']}: {node['address']}, client pid {node['pid']}{cache}, on the host at "
                   f"{node['mountpoint']}")
    if st["nodes"]:
        click.echo("  run there: sluice testbed exec node1 -- CMD; MPI across nodes: eval \"$(sluice testbed env)\"")


def _cephfs_lines(st: dict[str, Any]) -> list[tuple[str, str]]:
    alive = [o for o in st["osds"] if o["alive"]]
    return [
        ("testbed", f"{st['state']} (CephFS)"),
        ("mount point", f"{st['mountpoint']} ({'mounted' if st['mounted'] else 'not mounted'})"),
        ("monitor", f"{_proc(st['mon'])}, {st['address']} in network namespace {st['netns']}"),
        ("manager", _proc(st["mgr"])),
        ("OSDs", f"{len(alive)} of {len(st['osds'])} alive"
         + (f" (pids {', '.join(str(o['pid']) for o in alive)})" if alive else "")),
        ("MDS", _proc(st["mds"])),
        ("client", _proc(st["client"])),
        ("delay", f"{st['delay_us']} µs one-way per packet" if st["delay_us"] else "none"),
        *_node_lines(st),
        ("space", _space(st["space"])),
        ("state dir", st["state_dir"]),
    ]


def _node_lines(st: dict[str, Any]) -> list[tuple[str, str]]:
    return [(n["hostname"], f"{n['address']} in {n['netns']}, client {_proc(n)}, on the host at {n['mountpoint']} "
             f"({'mounted' if n['mounted'] else 'not mounted'})" + ("" if n["write_cache"] else ", write cache off")
             + ("" if n["namespaces"] else ", no namespaces of its own"))
            for n in st["nodes"]]


@click.group(name="testbed")
def command() -> None:
    """A real distributed file system on this machine, a stand-in for Lustre.

    MooseFS: one metadata master, three chunkservers and a FUSE mount, in a
    network namespace of their own. Needs root (up, down).
    """


@command.command()
@click.argument("mountpoint", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--delay-us",
    type=click.IntRange(0, testbed.MAX_DELAY_US),
    default=0,
    show_default=True,
    help="One-way delay added to every packet, in µs (25 gives a round trip of about 90 µs).",
)
@click.option(
    "--nodes",
    "--clients",
    "clients",
    type=click.IntRange(0, testbed.MAX_CLIENTS),
    default=None,
    help="Simulated nodes node1..N: each its own hostname, address, /dev/shm, /tmp and /var/tmp, and its own "
    "client of the file system at the same mount point (on the host also at MOUNTPOINT-nodeK). "
    "Default: leave them as they are.",
)
@click.option(
    "--write-cache",
    type=click.Choice(["on", "off"]),
    default="on",
    show_default=True,
    help="off: the node clients send each write to the servers before it returns (a synchronous mount).",
)
@FS_OPTION
@click.option("-v", "--verbose", is_flag=True, help="Show each step.")
def up(mountpoint: Path | None, delay_us: int, clients: int | None, write_cache: str, fs: str,
       verbose: bool) -> None:
    """Start the testbed and mount it (default /mnt/sluice-pfs, /mnt/sluice-cephfs). Idempotent."""
    if fs == "cephfs":
        if write_cache != "on":
            raise click.UsageError("--write-cache is a MooseFS option")
        return _cephfs_up(mountpoint, delay_us, clients, verbose)
    t0 = time.monotonic()
    mnt = testbed.up(mountpoint, delay_us=delay_us, echo=_echo_err if verbose else None, clients=clients,
                     write_cache=write_cache == "on")
    st = testbed.status()
    n = len(st["chunkservers"])
    delay = f"delay {st['delay_us']} µs one-way" if st["delay_us"] else "no delay"
    click.echo(
        f"testbed up at {mnt}: master pid {st['master']['pid']}, {n} chunkservers, {delay} "
        f"({time.monotonic() - t0:.1f} s)"
    )
    _echo_nodes(st)


@command.command(name="exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("node")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_(node: str, argv: tuple[str, ...]) -> None:
    """Run a command on a simulated node (sluice testbed exec node1 -- CMD...).

    It runs with the node's hostname, address, /dev/shm, /tmp and /var/tmp and
    its client of the file system, from the current directory if the node has
    it (else from $HOME), with this environment. The exit status is the
    command's.
    """
    args = list(argv[1:] if argv[:1] == ("--",) else argv)
    line = testbed.node_command(node, args)
    try:
        os.execvp(line[0], line)
    except OSError as e:
        raise click.ClickException(f"cannot run {line[0]}: {e.strerror}") from e


@command.command(name="kill")
@click.argument("node")
def kill_(node: str) -> None:
    """SIGKILL every process on a simulated node but its file-system client.

    What a node's job meets when it is killed at once: its /dev/shm, /tmp
    and tiers stay for the epilog (sluice recover) to publish.
    """
    pids = testbed.kill_node(node)
    click.echo(f"{node}: killed {len(pids)} process{'es' if len(pids) != 1 else ''}")


@command.command(name="env")
def env_() -> None:
    """Print the shell lines after which Open MPI runs across the nodes.

    eval "$(sluice testbed env)"; then mpirun --host node1:2,node2:2 CMD, or
    mpirun -np N CMD (the nodes' hostfile, $SLUICE_TESTBED_HOSTFILE).
    """
    st = testbed.nodes_status()
    if not any(n["namespaces"] for n in st["nodes"]):
        raise click.ClickException("no simulated nodes are up; start them with: sluice testbed up --nodes N")
    for name, value in testbed.mpi_environment().items():
        click.echo(f"export {name}={shlex.quote(value)}")


@command.command()
@click.option("--purge", is_flag=True, help="Also delete all files and state.")
@FS_OPTION
@click.option("-v", "--verbose", is_flag=True, help="Show each step.")
def down(purge: bool, fs: str, verbose: bool) -> None:
    """Unmount and stop the testbed. Files are kept unless --purge."""
    t0 = time.monotonic()
    impl: Any = cephfs if fs == "cephfs" else testbed
    impl.down(purge=purge, echo=_echo_err if verbose else None)
    what = "files deleted" if purge else f"files kept in {impl.Settings.from_env().state_dir}"
    click.echo(f"testbed down, {what} ({time.monotonic() - t0:.1f} s)")


@command.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@FS_OPTION
def status(as_json: bool, fs: str) -> None:
    """Say whether the testbed runs, where, and with which processes."""
    st = cephfs.status() if fs == "cephfs" else testbed.status()
    if as_json:
        click.echo(json.dumps(st))
        return
    for label, value in (_cephfs_lines(st) if fs == "cephfs" else _lines(st)):
        click.echo(f"{label + ':':<15}{value}")


def _lines(st: dict[str, Any]) -> list[tuple[str, str]]:
    css = st["chunkservers"]
    alive = [c for c in css if c["alive"]]
    reg = st["chunkservers_registered"]
    return [
        ("testbed", st["state"]),
        ("mount point", f"{st['mountpoint']} ({'mounted' if st['mounted'] else 'not mounted'})"),
        ("master", f"{_proc(st['master'])}, {st['address']} in network namespace {st['netns']}"),
        (
            "chunkservers",
            f"{len(alive)} of {len(css)} alive"
            + (f" (pids {', '.join(str(c['pid']) for c in alive)})" if alive else "")
            + (f", {reg} registered" if reg is not None else ""),
        ),
        ("client", _proc(st["client"])),
        ("delay", f"{st['delay_us']} µs one-way per packet" if st["delay_us"] else "none"),
        *_node_lines(st),
        ("space", _space(st["space"])),
        ("state dir", st["state_dir"]),
    ]


def _proc(p: dict[str, Any]) -> str:
    return f"pid {p['pid']}" if p["alive"] else "not running"


def _space(space: dict[str, int] | None) -> str:
    if space is None:
        return "-"
    gib = 1024**3
    return f"{space['avail_bytes'] / gib:.1f} GiB free of {space['total_bytes'] / gib:.1f} GiB"
