"""The MooseFS client's own count of the requests it received, as an oracle
for sluice's fs side.

``mfsmount`` keeps a counter per FUSE request kind and shows them in the
file ``.stats`` at the root of its mount (``fuse_ops.lookup: 1869``, with
sub-counters such as ``fuse_ops.lookup.master.negative``). Every request
the kernel sends the client is counted there, whichever process caused it,
so the counts are only the load of one program when nothing else uses the
same client: :func:`private_client` mounts a client of the testbed's file
system of its own for that.

Reading ``.stats`` is itself a few requests: one OPEN, two READs (the
content, then end of file), one FLUSH and one RELEASE, and no LOOKUP or
GETATTR as long as it is read without a stat (the kernel keeps the
internal file's entry and attributes). :func:`read_counts` reads it so and
:func:`delta` takes those requests off.

How the kernel turns a program's calls into requests (a client mounted
with every cache timeout 0, as :func:`private_client` does by default, so
that nothing depends on timing):

* each successful ``open``/``creat``/``fopen`` of a regular file is exactly
  one OPEN (an existing file) or CREATE (a new one);
* each successful ``unlink``, ``rename``, ``mkdir``, ``rmdir`` is exactly
  one UNLINK, RENAME, MKDIR, RMDIR;
* a ``stat`` family call on a file that exists is one GETATTR, ``access``
  one ACCESS; on a name that does not exist, one negative LOOKUP and
  nothing else;
* every call that names a path adds one LOOKUP per component below the
  mount's root (a new name's is negative: each CREATE and MKDIR follows
  one, a rename to a new name has one);
* the kernel adds a GETATTR on its own for a read that reaches beyond the
  size it holds, and for ``lseek`` to the end; the C library adds an
  ``fstat`` the first time a stream's buffer is allocated; the client
  also counts the kernel's FLUSH (every close), RELEASE, GETXATTR
  (``security.capability`` before writes) and STATFS.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

STATS_FILE = ".stats"
# What one read of .stats costs (see the module's comment).
SNAPSHOT_COST = {"open": 1, "read": 2, "flush": 1, "release": 1}
# Requests a metadata server answers: name lookups and attributes,
# namespace changes, opens. Not counted: release/flush (the client's own
# bookkeeping at close), getxattr (the kernel's, before every write) and
# statfs (space, not names).
META_OPS = ("lookup", "getattr", "setattr", "mknod", "mkdir", "unlink", "rmdir", "symlink", "readlink", "rename",
            "link", "create", "open", "opendir", "readdir", "readdirplus", "access", "setxattr", "listxattr",
            "removexattr")
# Mount options of a client whose requests do not depend on timing: no
# entry, negative entry, directory entry or attribute cache in the kernel.
NO_CACHE_OPTS = "mfsattrcacheto=0,mfsentrycacheto=0,mfsdirentrycacheto=0,mfsnegentrycacheto=0"


def stats_root(directory: str | os.PathLike[str]) -> Path | None:
    """The root of the MooseFS mount holding `directory` (where .stats is), or None."""
    d = Path(directory).absolute()
    for root in (d, *d.parents):
        if (root / STATS_FILE).is_file():
            return root
    return None


def read_counts(root: str | os.PathLike[str]) -> dict[str, int]:
    """Every ``fuse_ops.*`` counter of the client mounted at `root`,
    without the prefix (``lookup``, ``lookup.master.negative``, ...)."""
    fd = os.open(Path(root) / STATS_FILE, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    counts = {}
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        name, _, value = line.partition(": ")
        if name.startswith("fuse_ops.") and value.strip().isdigit():
            counts[name.removeprefix("fuse_ops.")] = int(value)
    return counts


def delta(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """The requests between two snapshots (the second snapshot's own read
    taken off), kinds with none left out."""
    out = {}
    for k, v in after.items():
        d = v - before.get(k, 0) - SNAPSHOT_COST.get(k, 0)
        if d:
            out[k] = d
    return out


def meta_requests(ops: Mapping[str, int]) -> int:
    """The metadata requests among `ops` (a :func:`delta`)."""
    return sum(ops.get(k, 0) for k in META_OPS)


class Counter:
    """Snapshots of the client holding one directory: ``with Counter(d) as c:
    run(); ops = c.ops``, or ``start()``/``stop()``. Inert (ops None) when
    `directory` is not on a MooseFS mount."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.root = stats_root(directory)
        self._before: dict[str, int] | None = None
        self.ops: dict[str, int] | None = None

    def start(self) -> None:
        self._before = read_counts(self.root) if self.root else None

    def stop(self) -> dict[str, int] | None:
        if self.root is not None and self._before is not None:
            self.ops = delta(self._before, read_counts(self.root))
        return self.ops

    def __enter__(self) -> Counter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _mounted(mnt: Path) -> bool:
    want = f" {mnt} fuse.mfs "
    return any(want in line for line in Path("/proc/self/mounts").read_text().splitlines())


@contextlib.contextmanager
def private_client(subfolder: str, *, options: str = NO_CACHE_OPTS,
                   mountpoint: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """A MooseFS client of the running testbed that no one else uses,
    mounting the file system's `subfolder` (created through the testbed's
    own mount if missing) at `mountpoint` (default: a new folder under /tmp),
    with `options` added to the mount's. Yields the mount point; unmounts
    and stops the client after. Needs root and a running testbed."""
    from sluice import testbed
    from sluice.errors import UserError

    st = testbed.status()
    if not st.get("running"):
        raise UserError("the testbed is not running (sluice testbed up)")
    (Path(st["mountpoint"]) / subfolder.strip("/")).mkdir(parents=True, exist_ok=True)
    host, _, port = st["address"].partition(":")
    made = mountpoint is None
    mnt = Path(tempfile.mkdtemp(prefix="sluice-mfs-client-")) if made else Path(mountpoint)
    mnt.mkdir(parents=True, exist_ok=True)
    opts = f"mfsmaster={host},mfsport={port or 9421},subtype=mfs,mfssubfolder=/{subfolder.strip('/')}"
    proc = subprocess.Popen(
        ["nsenter", f"--net=/run/netns/{st['netns']}", "mfsmount", "-f", str(mnt),
         "-o", opts + (f",{options}" if options else "")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (_mounted(mnt) and (mnt / STATS_FILE).is_file()):
            if proc.poll() is not None:
                raise UserError(f"mfsmount of {subfolder} exited: {proc.stderr.read().strip()[-300:]}")
            if time.monotonic() > deadline:
                raise UserError(f"mfsmount of {subfolder} did not mount at {mnt} within 30 s")
            time.sleep(0.05)
        yield mnt
    finally:
        if _mounted(mnt):
            subprocess.run(["umount", str(mnt)], capture_output=True)
            if _mounted(mnt):
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if made:
            with contextlib.suppress(OSError):
                mnt.rmdir()
