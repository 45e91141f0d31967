"""The farm journal: which tasks finished, on the shared file system, so that
running the same command again skips them.

A directory with one append-only file per farm process that hands tasks out
(`HOST.PID.log`), so writers on different nodes (job-array elements) never
share a file. One line per task outcome, tab-separated, ending with the
CRC-32 of the bytes before it:

    sluice-farm-1 <TAB> done|failed|interrupted <TAB> NUMBER <TAB> KEY <TAB> STATUS
        <TAB> SECONDS <TAB> ATTEMPTS <TAB> HOST <TAB> CRC

KEY identifies the task by its command and working directory, so an edited
task file never skips a task that changed. A torn or corrupt line (a crash
mid-write) is ignored: its task simply runs again. Lines are fsynced at most
once a second and when the farm ends, so a crash re-runs at most the tasks
of its last second.

Beside it, `HOST.PID.dirs` (made on first use) names the task directories
that process created, one line per task, written right after the mkdir and
before the task starts:

    sluice-farm-dir-1 <TAB> KEY <TAB> CRC

Only a directory named there is ever emptied before its task runs again
(taskdir.py); a lost or torn line leaves the directory as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from sluice.errors import UserError

TAG = "sluice-farm-1"
DIR_TAG = "sluice-farm-dir-1"
OUTCOMES = ("done", "failed", "interrupted")
_SYNC_INTERVAL_S = 1.0


def task_key(argv: list[str], workdir: str) -> str:
    """A task's identity: its filled command and working directory (made
    absolute: the same command in another directory is another task)."""
    return hashlib.sha256(json.dumps([argv, os.path.abspath(workdir)]).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class JournalLine:
    outcome: str
    number: int
    key: str
    status: int
    seconds: float
    attempts: int
    host: str


def encode(line: JournalLine) -> bytes:
    body = "\t".join([TAG, line.outcome, str(line.number), line.key, str(line.status),
                      f"{line.seconds:.6f}", str(line.attempts), line.host])
    return f"{body}\t{zlib.crc32(body.encode()):08x}\n".encode()


def decode(raw: str) -> JournalLine | None:
    """A line, or None if it is torn, corrupt or of another format."""
    body, sep, crc = raw.rpartition("\t")
    if not sep or crc != f"{zlib.crc32(body.encode()):08x}":
        return None
    parts = body.split("\t")
    if len(parts) != 8 or parts[0] != TAG or parts[1] not in OUTCOMES:
        return None
    try:
        return JournalLine(parts[1], int(parts[2]), parts[3], int(parts[4]), float(parts[5]), int(parts[6]), parts[7])
    except ValueError:
        return None


def encode_dir(key: str) -> bytes:
    body = f"{DIR_TAG}\t{key}"
    return f"{body}\t{zlib.crc32(body.encode()):08x}\n".encode()


def decode_dir(raw: str) -> str | None:
    """The key of a `.dirs` line, or None if it is torn or corrupt."""
    body, sep, crc = raw.rpartition("\t")
    if not sep or crc != f"{zlib.crc32(body.encode()):08x}":
        return None
    tag, sep, key = body.partition("\t")
    return key if sep and tag == DIR_TAG and key and "\t" not in key else None


class Journal:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.path = self.directory / f"{socket.gethostname()}.{os.getpid()}.log"
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise UserError(f"cannot write the farm journal in {self.directory}: {e.strerror}") from None
        self._last_sync = time.monotonic()
        self._dirty = False
        self._dirs_fd = -1

    def finished(self) -> dict[str, JournalLine]:
        """Tasks recorded as done, by key (the latest line wins)."""
        done: dict[str, JournalLine] = {}
        for line in read_all(self.directory):
            if line.outcome == "done":
                done[line.key] = line
            else:
                done.pop(line.key, None)
        return done

    def record(self, line: JournalLine) -> None:
        data = encode(line)
        try:
            while data:
                data = data[os.write(self._fd, data):]
        except OSError as e:
            raise UserError(f"cannot write the farm journal {self.path}: {e.strerror}") from None
        self._dirty = True
        if time.monotonic() - self._last_sync >= _SYNC_INTERVAL_S:
            self.sync()

    def created(self) -> set[str]:
        """Keys of the tasks whose directory a farm created (any run, any process)."""
        return {key for f in sorted(self.directory.glob("*.dirs")) for key in decoded_lines(f, decode_dir)}

    def record_created(self, key: str) -> None:
        """Record that this farm created the directory of the task `key`."""
        path = self.path.with_suffix(".dirs")
        data = encode_dir(key)
        try:
            if self._dirs_fd < 0:
                self._dirs_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
            while data:
                data = data[os.write(self._dirs_fd, data):]
        except OSError as e:
            raise UserError(f"cannot write the farm journal {path}: {e.strerror}") from None

    def sync(self) -> None:
        if self._dirty:
            try:
                os.fsync(self._fd)
            except OSError as e:
                raise UserError(f"cannot write the farm journal {self.path}: {e.strerror}") from None
            self._dirty = False
        self._last_sync = time.monotonic()

    def close(self) -> None:
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1
            if os.path.getsize(self.path) == 0:
                os.unlink(self.path)
        if self._dirs_fd >= 0:
            try:
                os.fsync(self._dirs_fd)
            except OSError:
                pass
            os.close(self._dirs_fd)
            self._dirs_fd = -1


def read_all(directory: Path) -> list[JournalLine]:
    """Every whole line of every journal file in `directory`, oldest file first."""
    lines: list[JournalLine] = []
    try:
        files = sorted(directory.glob("*.log"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    except OSError:
        return lines
    for f in files:
        lines.extend(decoded_lines(f, decode))
    return lines


def decoded_lines(f: Path, decoder):
    """The lines of journal file f that decoder makes something of (a torn or foreign line: None, left out)."""
    try:
        text = f.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UserError(f"cannot read the farm journal {f}: {e.strerror}") from None
    return [d for d in map(decoder, text.split("\n")) if d is not None]
