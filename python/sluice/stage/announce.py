"""What a node's tier still holds, said on the shared file system.

A node-local tier is invisible from the other nodes: a dependent job step
on node 2 cannot see that node 1 has not yet published what step 1 wrote.
So when `sluice run` ends with files of its node still staged (``--detach``,
or files its processes left behind), it writes a marker into the job's log
directory, which the nodes share: ``LOGDIR/.sluice-pending/HOST-UID.json``,
the host, the tier and the paths not yet published. The tier keeps the
marker's path (``TIER/announced/``), so that `sluice drain` and `sluice
recover` on that node rewrite the marker as they publish and remove it once
nothing is left. `sluice wait` on any node waits for the markers of the
other nodes as it waits for its own tier.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from sluice.stage.scan import pending
from sluice.stage.tier import Tier, mkdir_private

MARKER_DIR = ".sluice-pending"
POINTER_DIR = "announced"


@dataclass(frozen=True)
class Remote:
    """Files another node's tier still holds, as its marker says."""
    marker: Path
    host: str
    tier: str
    paths: tuple[str, ...]


def marker_path(log_dir: Path | str, host: str | None = None) -> Path:
    return Path(os.path.abspath(log_dir)) / MARKER_DIR / f"{host or socket.gethostname()}-{os.getuid()}.json"


def announce(tier: Tier, log_dir: Path | str) -> int:
    """Write (or remove) this node's marker in `log_dir` for what `tier`
    holds of this host; remember it in the tier. Returns the paths named."""
    marker = marker_path(log_dir)
    pointer_dir = tier.root / POINTER_DIR
    mkdir_private(pointer_dir)
    key = hashlib.sha256(os.fsencode(str(marker))).hexdigest()[:24]
    _write_atomic(pointer_dir / key, str(marker).encode())
    return _rewrite(tier, marker, pointer_dir / key)


def refresh(tier: Tier) -> None:
    """After publishing: each marker the tier announced, rewritten with what
    is left, or removed with its pointer once nothing is."""
    pointer_dir = tier.root / POINTER_DIR
    try:
        pointers = sorted(pointer_dir.iterdir())
    except OSError:
        return
    for p in pointers:
        try:
            marker = Path(p.read_text())
        except (OSError, UnicodeDecodeError):
            continue
        try:
            _rewrite(tier, marker, p)
        except OSError:
            pass  # the log directory is gone or read-only: nothing to tell anyone


def _rewrite(tier: Tier, marker: Path, pointer: Path) -> int:
    host = socket.gethostname()
    paths = sorted({l.entry.path for l in pending(tier) if l.entry and l.entry.host == host})
    if not paths:
        for f in (marker, pointer):
            try:
                f.unlink()
            except FileNotFoundError:
                pass
        return 0
    marker.parent.mkdir(exist_ok=True)
    body = {"host": host, "uid": os.getuid(), "tier": str(tier.root), "paths": paths}
    _write_atomic(marker, (json.dumps(body, indent=1) + "\n").encode())
    return len(paths)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def remote_pending(log_dir: Path | str, paths: list[str] | None = None) -> tuple[list[Remote], list[str]]:
    """The other nodes' markers in `log_dir` (those naming one of `paths`
    when given), and one line for each marker that could not be read."""
    d = Path(os.path.abspath(log_dir)) / MARKER_DIR
    me = marker_path(log_dir).name
    wanted = {os.path.abspath(p) for p in paths} if paths else None
    found: list[Remote] = []
    problems: list[str] = []
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return [], []
    for name in names:
        if name == me:
            continue  # this node's tier is looked at directly
        f = d / name
        try:
            body = json.loads(f.read_text())
            host, tier, listed = str(body["host"]), str(body["tier"]), tuple(str(p) for p in body["paths"])
        except FileNotFoundError:
            continue  # removed since the listing: published
        except (OSError, ValueError, KeyError, TypeError) as e:
            problems.append(f"unreadable marker {f} ({type(e).__name__}: {e}): not waited for")
            continue
        if wanted is not None:
            listed = tuple(p for p in listed if p in wanted)
            if not listed:
                continue
        found.append(Remote(f, host, tier, listed))
    return found, problems
