"""The tier: a private node-local directory holding staged files and their journal.

Layout (docs/stage.md, "The tier"): ``data/ID`` (the bytes), ``journal/ID``
(the entry), ``journal/.ID.tmp`` (an entry being rewritten). The directory
must be a real directory owned by the user with no group or other bits;
anything else is refused, because another user who can write there could
make us publish their bytes under our name (or read ours).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sluice.errors import UserError
from sluice.paths import default_tier_path

TIER_ENV = "SLUICE_TIER"


def default_tier() -> Path:
    """``$SLUICE_TIER``, else ``/dev/shm/sluice-stage-UID``."""
    return default_tier_path()


class UnsafeTier(UserError):
    """The tier path exists but is not a private directory of this user."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"refusing tier {path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class Tier:
    root: Path

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def journal_dir(self) -> Path:
        return self.root / "journal"

    @property
    def locks_dir(self) -> Path:
        return self.root / "locks"

    @property
    def names_dir(self) -> Path:
        """The node-wide index of staged paths (src/stage/names.h)."""
        return self.root / "names"

    def name_link(self, path: str) -> Path:
        """names/KEY for a staged path: KEY is the 64-bit FNV-1a hash of its bytes."""
        h = 14695981039346656037
        for b in os.fsencode(path):
            h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        return self.names_dir / f"{h:016x}"

    def written_elsewhere(self, entry_id: str) -> bool:
        """Another process has the staged file open for writing (it holds
        locks/ID.users shared): it publishes the file when it closes it."""
        try:
            fd = os.open(self.locks_dir / f"{entry_id}.users", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
        return False

    def lock(self, owner: str) -> Path:
        """locks/HOST-PID: flocked by that process while it lives (its entries
        are its own); never the data file, which the program may lock itself."""
        return self.locks_dir / owner

    def data(self, entry_id: str) -> Path:
        return self.data_dir / entry_id

    def journal(self, entry_id: str) -> Path:
        return self.journal_dir / entry_id


def open_tier(path: Path | str | None = None, create: bool = False) -> Tier | None:
    """The checked tier at `path` (default: :func:`default_tier`).

    Returns None if it does not exist and `create` is false; with `create`,
    makes it (mode 0700) and its data/, journal/, locks/ and names/ directories. Raises
    :class:`UnsafeTier` if it is not a private directory of this user.
    """
    root = Path(os.path.abspath(path if path is not None else default_tier()))
    if create:
        mkdir_private(root)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UnsafeTier(root, open_failure(root, e)) from None
    try:
        check_private(root, os.fstat(fd))
        if create:
            for sub in ("data", "journal", "locks", "names"):
                mkdir_private(sub, dir_fd=fd)
    finally:
        os.close(fd)
    return Tier(root)


def check_private(root: Path, st: os.stat_result) -> None:
    """Raise UnsafeTier unless `st` (fstat of the opened tier) is private to us."""
    uid = os.getuid()
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeTier(root, "not a directory")
    if st.st_uid != uid:
        raise UnsafeTier(root, f"owned by uid {st.st_uid}, not by uid {uid}")
    if st.st_mode & 0o077:
        raise UnsafeTier(root, f"mode {stat.S_IMODE(st.st_mode):04o} gives access to group or others (want 0700)")


def open_failure(root: Path, e: OSError) -> str:
    if os.path.islink(root):  # O_NOFOLLOW on a symbolic link fails with ELOOP
        return "a symbolic link"
    if e.errno == errno.ENOTDIR:
        return "not a directory"
    return e.strerror or str(e)


def mkdir_private(path: Path | str, dir_fd: int | None = None) -> None:
    """mkdir 0700; an existing entry is left for the O_NOFOLLOW check to judge."""
    try:
        os.mkdir(path, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        pass
    except OSError as e:
        raise UserError(f"cannot create tier directory {path}: {e.strerror}") from None


class NotRegular(OSError):
    """A name in the tier that is not a regular file (a FIFO, a device, a
    symbolic link, a directory): never opened for reading, never followed."""


def open_regular(path: os.PathLike[str] | str) -> int:
    """A read-only descriptor of `path` if it is a regular file; NotRegular
    otherwise. Opening never blocks (a FIFO would, until a writer came) and
    never follows a symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegular(errno.ELOOP, f"{path} is a symbolic link, not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(errno.EINVAL, f"{path} is not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
