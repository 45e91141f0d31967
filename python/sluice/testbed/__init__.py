"""The sluice testbed: a real distributed file system on one machine.

MooseFS stands in for Lustre: one metadata master (the MDS's part), three
chunkservers (the OSTs') and the ``mfsmount`` FUSE client, all from Debian
packages. The daemons live in a network namespace of their own; the mount is
visible to every process. An optional per-packet delay (NFQUEUE) makes each
round trip to the servers slower, like a real network.

The work is done by ``start.sh`` and ``stop.sh`` beside this file; this module
runs them and reads their PID files. Settings come from ``SLUICE_TESTBED_*``
environment variables (see ``common.sh`` and docs/testbed.md).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sluice.errors import UserError

__all__ = ["DEFAULT_MOUNTPOINT", "DEFAULT_STATE_DIR", "DEFAULT_NETNS", "up", "down", "status"]

DEFAULT_MOUNTPOINT = Path("/mnt/sluice-pfs")
DEFAULT_STATE_DIR = Path("/var/tmp/sluice-testbed")
DEFAULT_NETNS = "sluice-pfs"
DEFAULT_ADDR = "10.213.0.1"
DEFAULT_CHUNKSERVERS = 3
MAX_DELAY_US = 100_000
MAX_CLIENTS = 8
# mfsmount options of node clients with the write cache off: the mount is
# synchronous, so the kernel follows every write with an fsync and the
# client sends each write to its chunkserver, under a write lock on the chunk
# taken from the master, before the write returns (docs/testbed.md)
WRITE_CACHE_OFF_OPTS = "sync"
MASTER_PORT = 9421
HERE = Path(__file__).resolve().parent

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    """Where a testbed lives; read from the environment at each call."""

    state_dir: Path
    netns: str
    addr: str
    mountpoint: Path

    @classmethod
    def from_env(cls) -> Settings:
        return cls.read_env("SLUICE_TESTBED", DEFAULT_STATE_DIR, DEFAULT_NETNS, DEFAULT_ADDR, DEFAULT_MOUNTPOINT)

    @classmethod
    def read_env(cls, prefix: str, state_dir: Path, netns: str, addr: str, mountpoint: Path) -> Settings:
        """PREFIX_STATE_DIR, _NETNS, _ADDR and _MOUNTPOINT, each over its default."""
        env = os.environ
        return cls(
            state_dir=Path(os.path.realpath(env.get(f"{prefix}_STATE_DIR") or state_dir)),
            netns=env.get(f"{prefix}_NETNS") or netns,
            addr=env.get(f"{prefix}_ADDR") or addr,
            mountpoint=Path(env.get(f"{prefix}_MOUNTPOINT") or mountpoint),
        )

    @property
    def run_dir(self) -> Path:
        return self.state_dir / "run"

    @property
    def netns_file(self) -> Path:
        return Path("/run/netns") / self.netns

    def nsenter(self) -> list[str]:
        return ["nsenter", f"--net={self.netns_file}"]

    # the file-system client of the simulated nodes (cephfs.Settings: ceph-fuse)
    client_prog = "mfsmount"
    client_fstype = "fuse.mfs"

    def client_patterns(self, mnt: Path) -> list[str]:
        """The command-line patterns of a node client mounted at mnt."""
        return _mount_patterns(mnt)


# ---------------------------------------------------------------- the API


def up(
    mountpoint: str | os.PathLike[str] | None = None,
    delay_us: int = 0,
    echo: Echo | None = None,
    clients: int | None = None,
    write_cache: bool = True,
) -> Path:
    """Start the testbed (or leave it running) and return its mount point.

    Without ``mountpoint`` a running testbed keeps its mount point; a stopped
    one is mounted at ``$SLUICE_TESTBED_MOUNTPOINT`` or ``DEFAULT_MOUNTPOINT``.
    ``delay_us`` is the one-way delay added to every packet (0 = none); a
    running testbed is switched to it without a restart. ``echo`` receives the
    progress lines.

    ``clients``: that many simulated nodes (``--nodes``), each with a client
    of its own in a network namespace of its own, mounted on the host at
    ``MOUNTPOINT-nodeK`` and, inside the node's mount namespace, at
    ``MOUNTPOINT``; hostname ``nodeK``, its own ``/dev/shm``, ``/tmp`` and
    ``/var/tmp`` (see `node_command`); None leaves the nodes as they are.
    ``write_cache=False`` mounts the node clients synchronously, so that each
    write reaches the servers before it returns.
    """
    _require_root("up")
    if not isinstance(delay_us, int) or not 0 <= delay_us <= MAX_DELAY_US:
        raise UserError(f"the delay must be 0 to {MAX_DELAY_US} microseconds, not {delay_us!r}")
    if clients is not None and (not isinstance(clients, int) or not 0 <= clients <= MAX_CLIENTS):
        raise UserError(f"the number of nodes must be 0 to {MAX_CLIENTS}, not {clients!r}")
    if clients is None and not write_cache:
        raise UserError("the write cache setting is for the nodes' clients: give their number too (--nodes N)")
    s = Settings.from_env()
    mnt = _resolve_mountpoint(s, mountpoint)
    env = {"SLUICE_TESTBED_DELAY_US": str(delay_us)}
    if clients is not None:
        env["SLUICE_TESTBED_CLIENTS"] = str(clients)
        env["SLUICE_TESTBED_NODE_SHARE"] = ":".join(_software_dirs())
        env["SLUICE_TESTBED_CLIENT_OPTS"] = "" if write_cache else WRITE_CACHE_OFF_OPTS
    _run_script("start.sh", [str(mnt)], env, echo)
    return mnt


NODE_RSH = HERE / "node-rsh.sh"
NODES_NET = "10.214.0.0/16"


def nodes_settings() -> Settings:
    """The testbed whose simulated nodes are up (one set at a time: MooseFS's
    or CephFS's), MooseFS's when neither has any."""
    from sluice.testbed import cephfs

    for s in (Settings.from_env(), cephfs.Settings.from_env()):
        if any(n["namespaces"] for n in _nodes(s)):
            return s
    return Settings.from_env()


def nodes_status() -> dict[str, Any]:
    """The status of the testbed whose nodes are up (see nodes_settings)."""
    from sluice.testbed import cephfs

    return cephfs.status() if isinstance(nodes_settings(), cephfs.Settings) else status()


def nodes_dir(s: Settings | None = None) -> Path:
    """Where the nodes' mount and UTS namespaces are kept (bind mounts of their files)."""
    return Path("/run/sluice-testbed") / (s or Settings.from_env()).netns


def node_number(node: str) -> int:
    """K of ``nodeK`` (or of its address 10.214.K.2); a UserError for any other name."""
    text = node.removeprefix("node") if node.startswith("node") else ""
    if node.startswith("10.214.") and node.endswith(".2"):
        text = node[len("10.214."):-2]
    if not text.isdigit() or not 1 <= int(text) <= MAX_CLIENTS:
        raise UserError(f"{node!r} is not a testbed node: node1 to node{MAX_CLIENTS}")
    return int(text)


def node_command(node: str, argv: list[str], cwd: str | None = None) -> list[str]:
    """The command line that runs ``argv`` on ``node``: in its network, mount
    and UTS namespaces, from ``cwd`` if that directory exists there (the
    node's /tmp, /var/tmp and /dev/shm are its own), else from $HOME."""
    k = node_number(node)
    _require_root("exec")
    s = nodes_settings()
    d = nodes_dir(s)
    up_nodes = [n["id"] for n in _nodes(s) if n["namespaces"]]
    if k not in up_nodes:
        have = ", ".join(f"node{i}" for i in up_nodes) or "none"
        raise UserError(f"node{k} is not up (nodes up: {have}); start them with: sluice testbed up --nodes N")
    if not argv:
        raise UserError("no command to run (sluice testbed exec NODE -- COMMAND...)")
    enter = ["nsenter", f"--net=/run/netns/{s.netns}-n{k}", f"--mount={d}/node{k}.mnt", f"--uts={d}/node{k}.uts"]
    # the directory is looked up on the node, where /tmp is another directory
    chdir = ('cd "$1" 2> /dev/null || { echo "sluice testbed exec: $1 is not on $(hostname): running from ${HOME:-/}" >&2; '
             'cd "${HOME:-/}" 2> /dev/null || cd /; }; shift; exec "$@"')
    return [*enter, "/bin/sh", "-c", chdir, "node-exec", cwd or os.getcwd(), *argv]


def kill_node(node: str) -> list[int]:
    """SIGKILL every process on ``node`` but its file-system client, as when
    a node's jobs die at once (its /dev/shm and /tmp stay, as after a job
    killed at its time limit); returns their PIDs."""
    import signal

    _require_root("kill")
    k = node_number(node)
    s = nodes_settings()
    info = next((n for n in _nodes(s) if n["id"] == k and n["namespaces"]), None)
    if info is None:
        raise UserError(f"node{k} is not up")
    killed: list[int] = []
    for _ in range(10):  # again while a process forked before it was killed
        out = subprocess.run(["ip", "netns", "pids", f"{s.netns}-n{k}"], capture_output=True, text=True,
                             check=False).stdout
        pids = [int(p) for p in out.split() if p.isdigit() and int(p) != info["pid"] and int(p) not in killed]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
    return killed


def mpi_environment() -> dict[str, str]:
    """The environment after which ``mpirun --host node1:2,node2:2 CMD`` starts
    its ranks on the nodes: Open MPI enters a node through node-rsh.sh (as it
    would log in with ssh) and talks to it over the nodes' network only; a
    plain ``mpirun -np N`` takes the nodes' hostfile."""
    s = nodes_settings()
    env = {
        "OMPI_MCA_plm_rsh_agent": str(NODE_RSH),
        "OMPI_MCA_oob_tcp_if_include": NODES_NET,
        "OMPI_MCA_btl_tcp_if_include": NODES_NET,
        "OMPI_MCA_orte_default_hostfile": str(s.run_dir / "hostfile"),
        "SLUICE_TESTBED_HOSTFILE": str(s.run_dir / "hostfile"),
    }
    if s.netns != DEFAULT_NETNS:
        env["SLUICE_TESTBED_NETNS"] = s.netns   # (node-rsh.sh's namespaces)
    return env


def _software_dirs() -> list[str]:
    """What the nodes must see of this machine's /tmp and /var/tmp, as a
    cluster's nodes see its shared software: the tree sluice runs from (a
    checkout's root, with its build), the Python environment, the native
    directory, and SLUICE_TESTBED_NODE_SHARE's own entries."""
    import sys

    here = Path(__file__).resolve().parents[2]          # .../python/sluice/testbed/__init__.py -> .../python
    tree = here.parent if (here.parent / "CMakeLists.txt").exists() else here
    dirs = [tree, Path(sys.prefix), Path(os.path.realpath(sys.prefix))]
    if os.environ.get("SLUICE_NATIVE_DIR"):
        dirs.append(Path(os.environ["SLUICE_NATIVE_DIR"]))
    dirs += [Path(p) for p in os.environ.get("SLUICE_TESTBED_NODE_SHARE", "").split(":") if p]
    out: list[str] = []
    for d in dirs:
        text = os.path.realpath(d)
        if text.startswith(("/tmp/", "/var/tmp/")) and ":" not in text and text not in out:
            out.append(text)
    # an outer directory covers the ones inside it
    return [d for d in out if not any(d != o and d.startswith(o + "/") for o in out)]


def node_mounts() -> list[Path]:
    """The node clients' mount points that are mounted now, node 1 first."""
    return [Path(n["mountpoint"]) for n in status()["nodes"] if n["mounted"] and n["alive"]]


def down(purge: bool = False, echo: Echo | None = None) -> None:
    """Unmount and stop the testbed; with ``purge`` also delete all its data."""
    _require_root("down")
    _run_script("stop.sh", ["--purge"] if purge else [], {}, echo)


def status() -> dict[str, Any]:
    """What runs, where, and how much space is free (does not need root)."""
    s = Settings.from_env()
    run = s.run_dir
    mnt = _recorded_mountpoint(s) or s.mountpoint
    master = _proc_info(run / "mfsmaster.pid", [f"-c {s.state_dir}/etc/mfsmaster.cfg"])
    chunkservers = [
        {
            "id": i,
            "port": MASTER_PORT + i,
            **_proc_info(run / f"mfschunkserver{i}.pid", [f"-c {s.state_dir}/etc/mfschunkserver{i}.cfg"]),
        }
        for i in range(1, _chunkserver_count(s) + 1)
    ]
    client = _proc_info(run / "mfsmount.pid", _mount_patterns(mnt))
    helper = _proc_info(run / "nfq-delay.pid", [f"{s.state_dir}/nfq-delay -q 0"])
    fstype = _mount_fstype(mnt)
    mounted = fstype == "fuse.mfs"
    parts = [master["alive"], client["alive"], mounted, *(c["alive"] for c in chunkservers)]
    state = "running" if all(parts) else "stopped" if not any(parts) else "partial"
    return {
        "state": state,
        "running": state == "running",
        "mountpoint": str(mnt),
        "mounted": mounted,
        "fstype": fstype,
        "netns": s.netns,
        "netns_exists": s.netns_file.exists(),
        "address": f"{s.addr}:{MASTER_PORT}",
        "master": master,
        "chunkservers": chunkservers,
        "chunkservers_registered": _registered(s) if master["alive"] else None,
        "client": client,
        "delay_us": _read_int(run / "delay_us") if helper["alive"] else 0,
        "delay_helper": helper,
        "space": _space(mnt) if mounted and client["alive"] else None,
        "state_dir": str(s.state_dir),
        "nodes": _nodes(s),
    }


def _nodes(s: Settings) -> list[dict[str, Any]]:
    """The node clients the start script recorded: mount point, client, namespace, options."""
    nodes = []
    for f in sorted(s.run_dir.glob("node*.mountpoint"), key=lambda f: _read_int_text(f.name[4:-11])):
        k = _read_int_text(f.name[4:-11])
        mnt = Path(f.read_text().strip())
        try:
            opts = (s.run_dir / f"node{k}.opts").read_text().strip()
        except OSError:
            opts = ""
        extra = opts.split(",")[3:]
        d = nodes_dir(s)
        nodes.append({
            "id": k,
            "hostname": f"node{k}",
            "namespaces": (s.run_dir / f"node{k}.uts").is_file() and (d / f"node{k}.mnt").exists(),
            "mountpoint": str(mnt),
            "mounted": _mount_fstype(mnt) == s.client_fstype,
            "netns": f"{s.netns}-n{k}",
            "address": f"10.214.{k}.2",
            **_proc_info(s.run_dir / f"{s.client_prog}-node{k}.pid", s.client_patterns(mnt)),
            "write_cache": WRITE_CACHE_OFF_OPTS not in extra,
        })
    return nodes


def _read_int_text(text: str) -> int:
    return int(text) if text.isdigit() else 0


# ---------------------------------------------------------------- running the scripts


def client_ops(directory: str | os.PathLike[str]) -> dict[str, int] | None:
    """The MooseFS client's count of each request the kernel sent it
    (`fuse_ops.NAME` in the mount's `.stats`, NAME as key) for the mount
    holding `directory`; None when that is not a MooseFS mount."""
    d = Path(directory)
    for root in (d, *d.parents):
        stats = root / ".stats"
        if stats.is_file():
            ops = {}
            for line in stats.read_text().splitlines():
                name, _, value = line.partition(": ")
                if name.startswith("fuse_ops.") and name.count(".") == 1 and value.strip().isdigit():
                    ops[name.removeprefix("fuse_ops.")] = int(value)
            return ops
    return None


def _require_root(verb: str) -> None:
    if os.geteuid() != 0:
        raise UserError(
            f"sluice testbed {verb} needs root: it creates a network namespace and a FUSE mount (try sudo)"
        )


def _run_script(name: str, args: list[str], env: dict[str, str], echo: Echo | None) -> None:
    """Run one of the scripts; its log lines go to ``echo``, its error to a UserError."""
    script = HERE / name
    if not script.is_file():
        raise UserError(f"{script} is missing; reinstall sluice")
    lines: list[str] = []
    try:
        proc = subprocess.Popen(
            ["bash", str(script), *args],
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
    except OSError as e:
        raise UserError(f"cannot run {name}: {e.strerror}") from e
    with proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            line = line.rstrip("\n")
            lines.append(line)
            if echo is not None:
                echo(line)
    if proc.returncode != 0:
        raise UserError(_failure(name, lines, proc.returncode))


def _failure(name: str, lines: list[str], rc: int) -> str:
    prefix = "[sluice testbed] ERROR: "
    errors = [ln[len(prefix) :] for ln in lines if ln.startswith(prefix)]
    if errors:
        return errors[-1]
    last = next((ln for ln in reversed(lines) if ln.strip()), "")
    return f"testbed {name} failed (exit {rc})" + (f": {last}" if last else "")


# ---------------------------------------------------------------- reading the state


def _resolve_mountpoint(s: Settings, mountpoint: str | os.PathLike[str] | None) -> Path:
    if mountpoint is None:
        recorded = _recorded_mountpoint(s)
        running = recorded and _proc_info(s.run_dir / "mfsmount.pid", _mount_patterns(recorded))["alive"]
        mnt = recorded if running and recorded else s.mountpoint
    else:
        mnt = Path(mountpoint).expanduser()
    text = os.path.realpath(mnt)
    if any(c.isspace() for c in text):
        raise UserError(f"the mount point must not contain white space: {text!r}")
    return Path(text)


def _recorded_mountpoint(s: Settings) -> Path | None:
    try:
        text = (s.run_dir / "mountpoint").read_text().strip()
    except OSError:
        return None
    return Path(text) if text else None


def _mount_patterns(mnt: Path) -> list[str]:
    # mfsmount rewrites its command line once it has mounted
    return [f"mfsmount -f {mnt} -o ", f"mfsmount (mounted on: {mnt})"]


def _chunkserver_count(s: Settings) -> int:
    recorded = _read_int(s.run_dir / "chunkservers")
    if recorded:
        return recorded
    try:
        return int(os.environ.get("SLUICE_TESTBED_CHUNKSERVERS") or DEFAULT_CHUNKSERVERS)
    except ValueError:
        return DEFAULT_CHUNKSERVERS


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 0


def _proc_info(pidfile: Path, patterns: list[str]) -> dict[str, Any]:
    """PID from ``pidfile`` and whether that process runs and is ours."""
    pid = _read_int(pidfile) or None
    return {"pid": pid, "alive": pid is not None and _is_ours(pid, patterns)}


def _is_ours(pid: int, patterns: list[str]) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rpartition(")")[2].split()[0] == "Z":
        return False
    return any(p in cmdline for p in patterns)


def _mount_fstype(mnt: Path) -> str | None:
    """File-system type of the mount at exactly ``mnt`` (the last one wins)."""
    fstype = None
    try:
        text = Path("/proc/self/mounts").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and _unescape(fields[1]) == str(mnt):
            fstype = fields[2]
    return fstype


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape") if "\\" in field else field


def _registered(s: Settings) -> int | None:
    """Chunkservers connected to the master (asked inside the namespace; root only)."""
    if os.geteuid() != 0 or not s.netns_file.exists():
        return None
    try:
        out = subprocess.run(
            [*s.nsenter(), "mfscli", "-H", s.addr, "-SCS"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return sum(1 for line in out.splitlines() if line.startswith("chunk servers:"))


def _space(mnt: Path) -> dict[str, int] | None:
    try:
        st = os.statvfs(mnt)
    except OSError:
        return None
    return {
        "total_bytes": st.f_blocks * st.f_frsize,
        "free_bytes": st.f_bfree * st.f_frsize,
        "avail_bytes": st.f_bavail * st.f_frsize,
    }
