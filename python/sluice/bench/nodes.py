"""Workloads run inside the testbed's simulated nodes (``-p WORKLOAD.nodes=N``,
docs/cluster.md): the directory every node sees alike, Open MPI's host
list, and one command per node started at once, with the requests each
node's own file-system client received (its ``.stats``, read on the host
through the node client's own mount point)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sluice.errors import UserError
from sluice.testbed import clientstats

if TYPE_CHECKING:
    from sluice.bench.workloads.base import RunContext

# Fields of the programs' JSON lines that are a time: the nodes' runs overlap,
# so the job's is the longest node's (the rest are counts, added up).
_TIMES = ("seconds", "io_seconds")
# Where the nodes see the host's own directory at the same path (each node
# has /tmp, /var/tmp and /dev/shm of its own): sluice's logs of a node's run
# go there, off the shared file system whose requests are being counted.
_LOG_PARENT = Path("/run")


def node_mounts(nodes: int, what: str, target: Path) -> dict[int, Path]:
    """Node number -> the host's mount point of that node's client, for
    nodes 1..N; a UserError naming `what` when N nodes are not up or the
    target is not on the testbed."""
    from sluice import testbed

    st = testbed.nodes_status()
    mnt = Path(st["mountpoint"])
    up = {n["id"]: Path(n["mountpoint"]) for n in st["nodes"] if n["mounted"] and n["alive"] and n["namespaces"]}
    if any(k not in up for k in range(1, nodes + 1)) or not target.is_relative_to(mnt):
        raise UserError(f"{what}: nodes={nodes} needs the target on the testbed ({mnt}) and {nodes} simulated "
                        f"nodes (sluice testbed up --nodes {nodes}); found {len(up)}")
    return {k: up[k] for k in range(1, nodes + 1)}


def fresh_dir(workdir: Path, nodes: int, what: str) -> Path | None:
    """For nodes=N: a new directory beside the workload's on the testbed,
    which every node sees at the same path through its own client (None
    for nodes=0). The harness makes the workload's own directory again each
    round under the same name, and a node's client may still hold the old
    one's entry (ENOENT on create), so this one is a name no node saw."""
    if nodes <= 0:
        return None
    node_mounts(nodes, what, workdir)
    return Path(tempfile.mkdtemp(prefix=f"{workdir.name}.run.", dir=workdir.parent))


def mpirun_hosts(nodes: int, procs: int, what: str) -> list[str]:
    """``mpirun --host node1:P,...``: procs ranks shared evenly by the nodes."""
    if procs % nodes:
        raise UserError(f"{what}: procs={procs} cannot be shared evenly by {nodes} nodes")
    return ["mpirun", "--host", ",".join(f"node{k}:{procs // nodes}" for k in range(1, nodes + 1))]


def mpi_environment() -> dict[str, str]:
    """What mpirun needs to start ranks inside the nodes."""
    from sluice import testbed

    env = testbed.mpi_environment()
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def run_each(ctx: RunContext, argv_of: Callable[[int], list[str]], nodes: int, where: Path,
             what: str) -> dict[str, Any]:
    """Run ``argv_of(K)`` on node K for K = 1..nodes, all at once, each as
    the current variant (a ``sluice run`` of its own on each node, as
    ``srun -N`` starts one per node), from `where`. Returns the programs'
    JSON lines merged (counts added, times the longest node's) with
    ``nodes``: each node's line, the requests its client received
    (``client_ops``) and their metadata requests (``client_meta``);
    ``client_ops`` and ``sluice_counters`` are the job's totals."""
    from sluice import testbed
    from sluice.bench.workloads.base import counter_totals, last_json_line

    mounts = node_mounts(nodes, what, where)
    variant = ctx.variant
    log_root = Path(tempfile.mkdtemp(prefix="sluice-bench-nodes-", dir=_LOG_PARENT)) if variant.mode else None
    counters = {k: clientstats.Counter(m) for k, m in mounts.items()}
    procs: dict[int, subprocess.Popen[str]] = {}
    try:
        for c in counters.values():
            c.start()
        t0 = time.perf_counter()
        for k in mounts:
            log_dir = log_root / f"node{k}" if log_root else None
            if log_dir:
                log_dir.mkdir()
            cmd = testbed.node_command(f"node{k}", variant.command(argv_of(k), log_dir, [where]), cwd=str(where))
            procs[k] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=variant.env())
        outs = {}
        deadline = None if ctx.timeout is None else time.monotonic() + ctx.timeout
        for k, p in procs.items():
            try:
                outs[k] = p.communicate(timeout=None if deadline is None else max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise UserError(f"{what}: node{k} did not finish within {ctx.timeout:.0f} s") from None
        wall = time.perf_counter() - t0
        for c in counters.values():
            c.stop()
        lines = []
        for k, p in procs.items():
            out, err = outs[k]
            if p.returncode != 0:
                tail = "; ".join(err.strip().splitlines()[-3:]) or f"exit status {p.returncode}"
                raise UserError(f"{what} on node{k} failed: {tail}")
            line = last_json_line(out)
            if line is None:
                raise UserError(f"{what} on node{k} printed no JSON result line")
            ops = counters[k].ops or {}
            line.update(node=f"node{k}", client_ops=ops, client_meta=clientstats.meta_requests(ops))
            if log_root:
                line["sluice_counters"] = counter_totals(log_root / f"node{k}")
            lines.append(line)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        if log_root:
            shutil.rmtree(log_root, ignore_errors=True)
    data = merge(lines)
    data.update(wall_seconds=wall, as_variant=variant.name, argv=[Path(argv_of(1)[0]).name, *argv_of(1)[1:]])
    ctx.raw.append(data)
    ctx.wall_seconds += wall
    return data


def busiest_client_meta(data: dict[str, Any]) -> float | None:
    """The most metadata requests one node's client received in a run on
    the nodes (None for a run here)."""
    return float(max(n["client_meta"] for n in data["nodes"])) if data.get("nodes") else None


def merge(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """One JSON line for the job from each node's: numbers added up (times:
    the longest), the rest as node 1 gave them; ``nodes`` keeps every line."""
    out: dict[str, Any] = {}
    for line in lines:
        for key, v in line.items():
            if key in ("node", "client_meta", "sluice_counters", "client_ops"):
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool) and key in out:
                out[key] = max(out[key], v) if key in _TIMES else out[key] + v
            else:
                out.setdefault(key, v)
    out["client_ops"] = _add([line["client_ops"] for line in lines])
    if all("sluice_counters" in line for line in lines):
        out["sluice_counters"] = {side: _add([line["sluice_counters"][side] for line in lines])
                                  for side in ("app", "fs")}
    out["nodes"] = lines
    return out


def _add(dicts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return total
