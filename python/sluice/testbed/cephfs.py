"""The CephFS testbed: a file system with per-file layouts on one machine.

One monitor, one manager, several OSDs (BlueStore on sparse files), one MDS
and the ``ceph-fuse`` client, all from Debian's packages, configured under a
state folder of their own and run in a network namespace of their own, as the
MooseFS testbed (``sluice.testbed``). Unlike MooseFS, CephFS stripes each file
over objects by a layout chosen per file (``ceph.file.layout.*``) or per
directory (``ceph.dir.layout.*``), which is what ``--mode auto`` sets at create.

The work is done by ``cephfs-start.sh`` and ``cephfs-stop.sh`` beside this
file; settings come from ``SLUICE_CEPHFS_*`` environment variables (see
``cephfs-common.sh`` and docs/testbed.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sluice import testbed
from sluice.errors import UserError
from sluice.testbed import (
    MAX_DELAY_US,
    Echo,
    _mount_fstype,
    _proc_info,
    _read_int,
    _recorded_mountpoint,
    _require_root,
    _run_script,
    _space,
)

__all__ = ["DEFAULT_MOUNTPOINT", "DEFAULT_STATE_DIR", "DEFAULT_NETNS", "FSTYPE", "up", "down", "status"]

DEFAULT_MOUNTPOINT = Path("/mnt/sluice-cephfs")
DEFAULT_STATE_DIR = Path("/var/tmp/sluice-cephfs")
DEFAULT_NETNS = "sluice-ceph"
DEFAULT_ADDR = "10.215.0.1"
DEFAULT_OSDS = 3
MON_PORT = 3300
FSTYPE = "fuse.ceph-fuse"


class Settings(testbed.Settings):
    """Where the CephFS testbed lives (SLUICE_CEPHFS_*); read at each call."""

    @classmethod
    def from_env(cls) -> Settings:
        return cls.read_env("SLUICE_CEPHFS", DEFAULT_STATE_DIR, DEFAULT_NETNS, DEFAULT_ADDR, DEFAULT_MOUNTPOINT)

    @property
    def conf(self) -> Path:
        return self.state_dir / "etc" / "ceph.conf"

    def pattern(self, daemon: str) -> list[str]:
        """The command-line pattern cephfs-common.sh gives the daemon."""
        return [f"{daemon} -f -c {self.conf}"]

    client_prog = "ceph-fuse"
    client_fstype = FSTYPE

    def client_patterns(self, mnt: Path) -> list[str]:
        return [f"ceph-fuse -f -c {self.conf} {mnt}"]


def up(mountpoint: str | os.PathLike[str] | None = None, delay_us: int = 0, echo: Echo | None = None,
       nodes: int | None = None) -> Path:
    """Start the CephFS testbed (or leave it running) and return its mount point.

    Without ``mountpoint`` a running testbed keeps its mount point; a stopped
    one is mounted at ``$SLUICE_CEPHFS_MOUNTPOINT`` or ``DEFAULT_MOUNTPOINT``.
    ``delay_us`` is the one-way delay added to every packet between the client
    and the daemons (0 = none). ``nodes`` simulated nodes, each with a
    ceph-fuse client of its own, as the MooseFS testbed's (None leaves them).
    """
    _require_root("up")
    if not isinstance(delay_us, int) or not 0 <= delay_us <= MAX_DELAY_US:
        raise UserError(f"the delay must be 0 to {MAX_DELAY_US} microseconds, not {delay_us!r}")
    s = Settings.from_env()
    if mountpoint is None:
        recorded = _recorded_mountpoint(s)
        mnt = recorded if recorded and _proc_info(s.run_dir / "ceph-fuse.pid", s.pattern("ceph-fuse"))["alive"] \
            else s.mountpoint
    else:
        mnt = Path(mountpoint).expanduser()
    mnt = Path(os.path.realpath(mnt))
    if any(c.isspace() for c in str(mnt)):
        raise UserError(f"the mount point must not contain white space: {str(mnt)!r}")
    if nodes is not None and (not isinstance(nodes, int) or not 0 <= nodes <= testbed.MAX_CLIENTS):
        raise UserError(f"the number of nodes must be 0 to {testbed.MAX_CLIENTS}, not {nodes!r}")
    env = {"SLUICE_TESTBED_DELAY_US": str(delay_us)}
    if nodes is not None:
        env["SLUICE_CEPHFS_NODES"] = str(nodes)
        env["SLUICE_TESTBED_NODE_SHARE"] = ":".join(testbed._software_dirs())
    _run_script("cephfs-start.sh", [str(mnt)], env, echo)
    return mnt


def down(purge: bool = False, echo: Echo | None = None) -> None:
    """Unmount and stop the CephFS testbed; with ``purge`` also delete all its data."""
    _require_root("down")
    _run_script("cephfs-stop.sh", ["--purge"] if purge else [], {}, echo)


def status() -> dict[str, Any]:
    """What runs, where, and how much space is free (does not need root)."""
    s = Settings.from_env()
    run = s.run_dir
    mnt = _recorded_mountpoint(s) or s.mountpoint
    daemons = {name: _proc_info(run / f"ceph-{name}.pid", s.pattern(f"ceph-{name}")) for name in ("mon", "mgr", "mds")}
    n = _read_int(run / "osds") or int(os.environ.get("SLUICE_CEPHFS_OSDS") or DEFAULT_OSDS)
    osds = [{"id": i, **_proc_info(run / f"ceph-osd{i}.pid", [f"ceph-osd -f -c {s.conf} -i {i} "])} for i in range(n)]
    client = _proc_info(run / "ceph-fuse.pid", s.pattern("ceph-fuse"))
    helper = _proc_info(run / "nfq-delay.pid", [f"{s.state_dir}/nfq-delay -q 0"])
    fstype = _mount_fstype(mnt)
    mounted = fstype == FSTYPE
    parts = [*(d["alive"] for d in daemons.values()), *(o["alive"] for o in osds), client["alive"], mounted]
    state = "running" if all(parts) else "stopped" if not any(parts) else "partial"
    return {
        "fs": "cephfs",
        "state": state,
        "running": state == "running",
        "mountpoint": str(mnt),
        "mounted": mounted,
        "fstype": fstype,
        "netns": s.netns,
        "netns_exists": s.netns_file.exists(),
        "address": f"{s.addr}:{MON_PORT}",
        **daemons,
        "osds": osds,
        "client": client,
        "delay_us": _read_int(run / "delay_us") if helper["alive"] else 0,
        "delay_helper": helper,
        "space": _space(mnt) if mounted and client["alive"] else None,
        "state_dir": str(s.state_dir),
        "conf": str(s.conf),
        "nodes": testbed._nodes(s),
    }

