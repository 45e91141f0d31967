"""Publishing staged files: the steps of docs/stage.md, as `sluice drain` and `recover` run them.

1. flock(locks/HOST-PID) (the library holds it while its process lives) and
   flock(journal/ID), LOCK_EX|LOCK_NB; either held elsewhere: skip.
2. Re-read the entry under the lock; gone: stop; published: finish removing it.
3. Copy data/ID to DIR/.NAME.sluice-ID (O_CREAT|O_EXCL, 0600, stale one
   removed first) in 4 MiB writes, fsync, fchmod(mode), the data file's
   access and modification times, close; an entry with publish=inplace is
   written into the existing file instead (same steps, mode only if it
   differs), and step 4 is skipped.
4. rename to the final path.
5. Rewrite the entry state=published, unlink data/ID and journal/ID.

On failure the temporary file is removed, the entry stays (becomes)
``closed`` with ``error=ENAME: strerror`` and the data stays on the tier.

Locking and rewriting: a rewrite renames a new file over journal/ID, so the
lock must move with it. The new file is flocked before its rename
(:func:`sluice.stage.journal.write` with keep_locked), and a lock taken on
a file that is no longer journal/ID is dropped and taken again.
"""

from __future__ import annotations

import errno
import fcntl
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sluice.stage import journal
from sluice.stage.journal import PENDING_STATES, Entry, JournalError
from sluice.stage.scan import entry_ids, now_ns, process_state, stale_journal_temps, stale_links, unentered_data
from sluice.stage.tier import NotRegular, Tier, open_regular

WRITE_UNIT = 4 << 20   # bytes per write to the shared file system
NAME_MAX = 255         # bytes in one path component
LOCK_ATTEMPTS = 8      # retries when the entry is replaced while we lock it

# Outcome.result values
PUBLISHED = "published"  # copied and renamed by us now
FINISHED = "finished"    # already published; we removed what was left
IN_USE = "in use"        # someone else holds the entry's lock
RUNNING = "running"      # its process runs here and will publish it (no --force)
GONE = "gone"            # the entry disappeared (published by someone else)
FAILED = "failed"        # the shared file system refused; error recorded in the entry
CORRUPT = "corrupt"      # the entry does not parse; left alone, data kept
INCOMPLETE = "incomplete"  # still open when its process died: kept under NAME.sluice-incomplete, never NAME
INCOMPLETE_SUFFIX = ".sluice-incomplete"
PROBLEMS = (FAILED, CORRUPT)


@dataclass(frozen=True)
class Outcome:
    id: str
    result: str           # one of the values above
    path: str | None      # the final path, when the entry parsed
    bytes: int = 0        # bytes published
    detail: str = ""      # the error (FAILED) or the parse error (CORRUPT)


class _Busy(Exception):
    """The entry's lock is held by another process."""


def temp_path(entry: Entry) -> str:
    """DIR/.NAME.sluice-ID, NAME cut (in bytes) so that the component fits NAME_MAX."""
    directory, name = os.path.split(entry.path)
    suffix = f".sluice-{entry.id}".encode()
    room = NAME_MAX - 1 - len(suffix)
    raw = os.fsencode(name)[: max(room, 0)]
    return os.path.join(directory, os.fsdecode(b"." + raw + suffix))


def error_text(e: OSError) -> str:
    """`ENAME: strerror`, the one-line form the journal's error key holds."""
    code = e.errno or errno.EIO
    return f"{errno.errorcode.get(code, f'E{code}')}: {os.strerror(code)}"


def drain(tier: Tier, jobs: int = 4, force: bool = False) -> list[Outcome]:
    """Publish every entry that is ours to publish, `jobs` at a time; one Outcome per entry."""
    ids = entry_ids(tier)
    # One owner's entries go one after another: its lock (locks/HOST-PID) is
    # a flock, which two threads of this process, on two descriptors, would
    # contend for, each taking the other for a live owner.
    by_owner: dict[str, list[str]] = {}
    for i in ids:
        by_owner.setdefault(owner_of(i), []).append(i)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        done = pool.map(lambda group: [publish(tier, i, force) for i in group], by_owner.values())
        outcomes = [o for group in done for o in group]
    for data in unentered_data(tier):
        _unlink_quietly(data)
    for link, target in stale_links(tier):
        _unlink_link_if(link, target)
    for temp in stale_journal_temps(tier):
        _unlink_if_unlocked(temp)
    return outcomes


def publish(tier: Tier, entry_id: str, force: bool = False) -> Outcome:
    """Run the publishing steps for one entry."""
    # A first look without the lock: a running program's entries are left to
    # it without even contending for its lock.
    try:
        first = journal.read(tier.journal(entry_id))
    except FileNotFoundError:
        return Outcome(entry_id, GONE, None)
    except JournalError as e:
        return Outcome(entry_id, CORRUPT, None, detail=str(e))
    if _left_to_its_process(first, force):
        return Outcome(entry_id, RUNNING, first.path)
    try:
        locks = _lock(tier, entry_id)
    except _Busy:
        return Outcome(entry_id, IN_USE, first.path)
    except NotRegular as e:
        return Outcome(entry_id, CORRUPT, first.path, detail=e.strerror)
    if locks is None:
        return Outcome(entry_id, GONE, first.path)
    try:
        return _publish_locked(tier, entry_id, locks.journal_fd, force)
    finally:
        locks.release()


def _left_to_its_process(entry: Entry, force: bool) -> bool:
    return not force and entry.state in PENDING_STATES and process_state(entry) == "running"


@dataclass
class _Locks:
    """The entry's flocks: released when their descriptors are closed."""

    journal_fd: int        # journal/ID, read under the lock
    owner_fd: int | None   # locks/ID; None when there is none (the owner is gone)

    def release(self) -> None:
        os.close(self.journal_fd)
        if self.owner_fd is not None:
            os.close(self.owner_fd)


def owner_of(entry_id: str) -> str:
    """HOST-PID of an entry id HOST-PID-SEQ: the name of its owner's lock."""
    return entry_id.rsplit("-", 1)[0]


def _lock(tier: Tier, entry_id: str) -> _Locks | None:
    """The entry's locks, or None if the entry is gone.

    locks/HOST-PID (which the library holds while its process lives) and
    journal/ID (docs/stage.md, step 1) are both locked, in that order. A
    missing lock file (its owner finished or died before making it) is not.
    """
    owner_fd = _lock_file(tier.lock(owner_of(entry_id)))
    try:
        journal_fd = _lock_file(tier.journal(entry_id))
    except BaseException:
        if owner_fd is not None:
            os.close(owner_fd)
        raise
    if journal_fd is None:
        if owner_fd is not None:
            os.close(owner_fd)
        return None
    return _Locks(journal_fd, owner_fd)


def _lock_file(path: os.PathLike[str]) -> int | None:
    """A descriptor of `path` holding its flock; None if it does not exist."""
    for _ in range(LOCK_ATTEMPTS):
        try:
            fd = open_regular(path)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _Busy() from None
        if _still_named(fd, path):
            return fd
        os.close(fd)  # replaced (rewritten or removed) between open and flock: look again
    raise _Busy()


def _still_named(fd: int, path: os.PathLike[str]) -> bool:
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _publish_locked(tier: Tier, entry_id: str, fd: int, force: bool) -> Outcome:
    try:
        entry = journal.read_fd(fd, entry_id)
    except JournalError as e:
        return Outcome(entry_id, CORRUPT, None, detail=str(e))
    if entry.state in ("published", "removed"):
        _remove_published(tier, entry_id, entry.path)
        return Outcome(entry_id, FINISHED, entry.path)
    if _left_to_its_process(entry, force):
        return Outcome(entry_id, RUNNING, entry.path)
    if tier.written_elsewhere(entry_id):
        return Outcome(entry_id, IN_USE, entry.path)   # that process publishes it at its close
    # A file its process never closed (killed while writing it) may be cut
    # short: it never takes its final name, where an older complete version
    # may stand; it is kept beside it under a name that says so.
    target = entry.path if entry.state == "closed" else entry.path + INCOMPLETE_SUFFIX
    try:
        nbytes = copy_to_final(tier, entry, target)
    except NotRegular as e:
        return Outcome(entry_id, CORRUPT, entry.path, detail=e.strerror)
    except OSError as e:
        _record_failure(tier, entry, error_text(e))
        return Outcome(entry_id, FAILED, entry.path, detail=error_text(e))
    _mark_published(tier, entry)
    return Outcome(entry_id, PUBLISHED if target == entry.path else INCOMPLETE, target, nbytes)


def copy_to_final(tier: Tier, entry: Entry, target: str | None = None) -> int:
    """Steps 3 and 4: the data under a temporary name, then renamed to the
    final path (or `target`); an entry staged by truncating an existing file
    is written into that file instead (its inode, owner and links stay)."""
    src = open_regular(tier.data(entry.id))
    try:
        times = os.fstat(src)
        if entry.inplace and target in (None, entry.path):
            nbytes = _copy_in_place(src, entry, times)
            if nbytes is not None:
                return nbytes
        tmp = temp_path(entry)
        _unlink_if_present(tmp)  # left by a publisher that died
        dst = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            nbytes = _copy(src, dst)
            os.fsync(dst)
            os.fchmod(dst, entry.mode)
            os.utime(dst, ns=(times.st_atime_ns, times.st_mtime_ns))
            os.close(dst)
            dst = -1
            os.rename(tmp, target or entry.path)
        except BaseException:
            if dst >= 0:
                os.close(dst)
            _unlink_quietly(tmp)
            raise
    finally:
        os.close(src)
    return nbytes


def _copy_in_place(src: int, entry: Entry, times: os.stat_result) -> int | None:
    """The data written over the existing file at entry.path, as an open
    with O_TRUNC would; None when that file cannot be opened so (gone,
    no longer writable): the caller replaces it instead."""
    try:
        dst = os.open(entry.path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        nbytes = _copy(src, dst)
        os.fsync(dst)
        if os.fstat(dst).st_mode & 0o7777 != entry.mode:
            os.fchmod(dst, entry.mode)
        os.utime(dst, ns=(times.st_atime_ns, times.st_mtime_ns))
    finally:
        os.close(dst)
    return nbytes


def _copy(src: int, dst: int) -> int:
    """Copy all of src to dst at the same offsets, WRITE_UNIT bytes per write."""
    offset = 0
    while chunk := os.pread(src, WRITE_UNIT, offset):
        view = memoryview(chunk)
        while view:
            n = os.pwrite(dst, view, offset)
            view = view[n:]
            offset += n
    return offset


def _mark_published(tier: Tier, entry: Entry) -> None:
    """Step 5; if the tier refuses the rewrite, remove the entry before the data instead."""
    try:
        fd = journal.write(tier.journal_dir, entry.with_state("published", "", now_ns()), keep_locked=True)
    except OSError:
        # Published already; without a `published` entry, never leave an entry without its data.
        _unindex(tier, entry.id, entry.path)
        _unlink_quietly(tier.journal(entry.id))
        _unlink_quietly(tier.data(entry.id))
        return
    try:
        _remove_published(tier, entry.id, entry.path)
    finally:
        if fd is not None:
            os.close(fd)


def _remove_published(tier: Tier, entry_id: str, path: str) -> None:
    # The index link first: a process that finds the entry gone must not
    # find the name still indexed (an rmdir of its directory would say
    # ENOTEMPTY).
    _unindex(tier, entry_id, path)
    _unlink_quietly(tier.data(entry_id))
    _unlink_quietly(tier.journal(entry_id))


def _unindex(tier: Tier, entry_id: str, path: str) -> None:
    """Remove the index link of `path` if it names this entry (not another's)."""
    link = tier.name_link(path)
    try:
        target = os.readlink(link)
    except OSError:
        return
    if target.split(" ", 2)[:1] == [entry_id] and target.split(" ", 2)[2:] == [path]:
        _unlink_quietly(link)


def _unlink_link_if(link: os.PathLike[str], target: str) -> None:
    """Remove link if it still points at target (a new link of the same name is another entry's)."""
    try:
        if os.readlink(link) == target:
            os.unlink(link)
    except OSError:
        pass


def _unlink_if_unlocked(path: os.PathLike[str]) -> None:
    """Remove path unless a process holds its flock (it is writing it)."""
    try:
        fd = _lock_file(path)
    except (_Busy, NotRegular):
        return
    if fd is None:
        return
    try:
        os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def _record_failure(tier: Tier, entry: Entry, error: str) -> None:
    """Keep the entry as `closed` with `error`; the data stays where it is."""
    try:
        fd = journal.write(tier.journal_dir, entry.with_state("closed", error, now_ns()), keep_locked=True)
    except OSError:
        return  # the tier itself refuses (full): the old entry stands, the failure is still reported
    if fd is not None:
        os.close(fd)


def _unlink_if_present(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _unlink_quietly(path: str | os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
