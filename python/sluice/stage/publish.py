"""`sluice drain` and `sluice recover`: publishing what a tier holds.

The publishing steps (docs/stage.md, "Publishing": the entry's locks, the
copy under a temporary name or into the existing file, the rename, the
entry's rewrites) are the library's own, as the job's drainer and each
process's drainers run them: `sluice-stage-drain --publish` (src/stage/
drain.c) takes the tier's entry ids and says, one JSON line each, what
became of them. Here: which entries there are, and the tier's
housekeeping after a crash (an empty data file its killed process never
entered, an index link whose entry is gone, a journal rewrite never
renamed), which no publish leaves behind.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from dataclasses import dataclass

from sluice.errors import UserError
from sluice.paths import native, preload_library
from sluice.stage.journal import Entry
from sluice.stage.scan import entry_ids, stale_journal_temps, stale_links, unentered_data
from sluice.stage.tier import NotRegular, Tier, open_regular

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


def drain(tier: Tier, jobs: int = 4, force: bool = False) -> list[Outcome]:
    """Publish every entry that is ours to publish, `jobs` at a time; one Outcome per entry."""
    ids = entry_ids(tier)
    outcomes = _publish(tier, ids, jobs, force) if ids else []
    for data in unentered_data(tier):
        _unlink_quietly(data)
    for link, target in stale_links(tier):
        _unlink_link_if(link, target)
    for temp in stale_journal_temps(tier):
        _unlink_if_unlocked(temp)
    return outcomes


def _publish(tier: Tier, ids: list[str], jobs: int, force: bool) -> list[Outcome]:
    """The library's publishing steps for each entry (sluice-stage-drain --publish)."""
    argv = [str(native("sluice-stage-drain", "bin")), "--tier", str(tier.root), "--publish", "--jobs", str(jobs)]
    if force:
        argv.append("--force")
    # The library, preloaded for its code only: it records nothing, writes
    # no log and leaves every call as it is.
    env = dict(os.environ, LD_PRELOAD=str(preload_library()), SLUICE_DISABLE="1")
    try:
        cp = subprocess.run(argv, input="".join(f"{i}\n" for i in ids), env=env, text=True,
                            stdout=subprocess.PIPE, check=False)
    except OSError as e:
        raise UserError(f"cannot run {argv[0]}: {e.strerror}") from None
    outcomes = []
    for line in cp.stdout.splitlines():
        try:
            d = json.loads(line)
            path = os.fsdecode(bytes.fromhex(d["path_hex"])) if d["path_hex"] else None
            outcomes.append(Outcome(d["id"], d["result"], path, int(d["bytes"]), d["detail"]))
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{argv[0]} said what is not an outcome: {line[:200]!r}") from None
    if cp.returncode != 0:
        raise UserError(f"{argv[0]} ended with status {cp.returncode}")
    return outcomes


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


def _unlink_quietly(path: str | os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
