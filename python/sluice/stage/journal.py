"""Journal entries of stage mode: parse, encode, and rewrite them atomically.

An entry is a small text file (docs/stage.md, "Journal entries"): the tag
line ``sluice-stage 2``, then ``key=value`` lines in a fixed order, then
``crc=`` with the CRC-32 of every byte before that line, as 8 lowercase hex
digits. Entries come from disk and may be damaged, so the parser checks
every byte and raises :class:`JournalError` (one line) rather than anything
else.
"""

from __future__ import annotations

import fcntl
import os
import re
import zlib
from dataclasses import dataclass, replace
from sluice.stage.tier import NotRegular, open_regular

FORMAT_TAG = b"sluice-stage 2"
KEYS = ("id", "path", "mode", "publish", "state", "pid", "created_ns", "updated_ns", "error")
# Version 1 (before `publish`): still read, its entries publish by creating or replacing.
FORMAT_TAG_V1 = b"sluice-stage 1"
KEYS_V1 = tuple(k for k in KEYS if k != "publish")
# replace: created whole over a file that stood at the path when it was staged
PUBLISH_KINDS = ("create", "inplace", "replace")
# removed: unlinked or renamed over on the node before it was published (its data is gone)
STATES = ("open", "closed", "published", "removed")
PENDING_STATES = ("open", "closed")

_DIGITS = re.compile(rb"[0-9]{1,20}")
_OCTAL = re.compile(rb"[0-7]{1,6}")
_CRC = re.compile(rb"[0-9a-f]{8}")
# HOST-PID-SEQ; the host may itself hold dashes, the last two fields may not.
_ID = re.compile(r"([^/\x00\n]+)-([0-9]{1,10})-([0-9]{1,20})")
_PATH_ESCAPES = {b"%25": b"%", b"%0A": b"\n"}


class JournalError(Exception):
    """A journal entry that does not parse; the message is a one-line reason."""


@dataclass(frozen=True)
class Entry:
    id: str           # HOST-PID-SEQ, also the entry's and the data file's name
    path: str         # final absolute path on the shared file system
    mode: int         # permission bits the published file gets
    state: str        # one of STATES
    pid: int          # the process that staged the file
    created_ns: int   # CLOCK_REALTIME at creation
    updated_ns: int   # CLOCK_REALTIME at the last state change
    error: str = ""   # the last drain failure, one line; empty when none
    inplace: bool = False  # publish into the existing file (it was truncated, not replaced)
    replaces: bool = False  # a file stood at the path when it was staged (created whole over it)

    @property
    def host(self) -> str:
        """The host name part of the id (the node the staging process ran on)."""
        m = _ID.fullmatch(self.id)
        return m.group(1) if m else ""

    def with_state(self, state: str, error: str, now_ns: int) -> Entry:
        """This entry in `state` with `error`; updated_ns moves only when the state changes."""
        updated = now_ns if state != self.state else self.updated_ns
        return replace(self, state=state, error=error, updated_ns=updated)


def valid_id(entry_id: str) -> bool:
    """True if `entry_id` has the HOST-PID-SEQ shape (and so is a safe file name)."""
    return not entry_id.startswith(".") and _ID.fullmatch(entry_id) is not None


def encode_path(path: str) -> bytes:
    """The path as stored: `%` and newline percent-encoded, nothing else."""
    return os.fsencode(path).replace(b"%", b"%25").replace(b"\n", b"%0A")


def decode_path(raw: bytes) -> str:
    """Inverse of :func:`encode_path`; any other `%` sequence is an error."""
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i : i + 1] == b"%":
            plain = _PATH_ESCAPES.get(raw[i : i + 3])
            if plain is None:
                raise JournalError(f"bad percent-encoding in path at byte {i}")
            out += plain
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return os.fsdecode(bytes(out))


def encode(entry: Entry) -> bytes:
    """The bytes of an entry file, CRC line included."""
    if not valid_id(entry.id):
        raise ValueError(f"bad entry id {entry.id!r}")
    if "\n" in entry.error:
        raise ValueError("error must be one line")
    body = b"".join([
        FORMAT_TAG + b"\n",
        b"id=" + entry.id.encode() + b"\n",
        b"path=" + encode_path(entry.path) + b"\n",
        b"mode=" + f"{entry.mode & 0o7777:04o}".encode() + b"\n",
        b"publish=" + (b"inplace" if entry.inplace else b"replace" if entry.replaces else b"create") + b"\n",
        b"state=" + entry.state.encode() + b"\n",
        b"pid=" + str(entry.pid).encode() + b"\n",
        b"created_ns=" + str(entry.created_ns).encode() + b"\n",
        b"updated_ns=" + str(entry.updated_ns).encode() + b"\n",
        b"error=" + entry.error.encode("utf-8", "replace") + b"\n",
    ])
    return body + b"crc=" + f"{zlib.crc32(body):08x}".encode() + b"\n"


def decode(data: bytes, name: str | None = None) -> Entry:
    """Parse an entry file; `name` (its file name) must equal its id when given."""
    if not data.endswith(b"\n"):
        raise JournalError("truncated (no final newline)")
    lines = data[:-1].split(b"\n")
    if lines[0] not in (FORMAT_TAG, FORMAT_TAG_V1):
        raise JournalError(f"wrong format tag (want {FORMAT_TAG.decode()!r})")
    crc_line = lines[-1]
    if not crc_line.startswith(b"crc="):
        raise JournalError("truncated (no crc line)")
    crc_hex = crc_line[4:]
    if not _CRC.fullmatch(crc_hex):
        raise JournalError("bad crc line")
    body = data[: len(data) - len(crc_line) - 1]
    if zlib.crc32(body) != int(crc_hex, 16):
        raise JournalError("CRC mismatch")
    values = _key_values(lines[1:-1], KEYS if lines[0] == FORMAT_TAG else KEYS_V1)
    entry = _entry_from(values)
    if name is not None and entry.id != name:
        raise JournalError(f"id {entry.id!r} does not match the entry's name")
    return entry


def _key_values(lines: list[bytes], keys: tuple[str, ...]) -> dict[str, bytes]:
    """The values of `keys`, which must appear once each, in order."""
    if len(lines) != len(keys):
        raise JournalError(f"{len(lines)} key lines, want {len(keys)}")
    values: dict[str, bytes] = {}
    for key, line in zip(keys, lines):
        k, sep, v = line.partition(b"=")
        if not sep or k != key.encode():
            raise JournalError(f"want key {key!r}, found {k[:40].decode('ascii', 'replace')!r}")
        values[key] = v
    return values


def _entry_from(v: dict[str, bytes]) -> Entry:
    entry_id = v["id"].decode("ascii", "replace")
    if not valid_id(entry_id) or not v["id"].isascii():
        raise JournalError("bad id")
    if b"\x00" in v["path"] or not v["path"].startswith(b"/") or v["path"].endswith(b"/"):
        raise JournalError("path is not an absolute file path")
    if not _OCTAL.fullmatch(v["mode"]) or int(v["mode"], 8) > 0o7777:
        raise JournalError("bad mode")
    state = v["state"].decode("ascii", "replace")
    if state not in STATES:
        raise JournalError("bad state")
    publish = v.get("publish", b"create").decode("ascii", "replace")
    if publish not in PUBLISH_KINDS:
        raise JournalError("bad publish")
    return Entry(
        id=entry_id,
        path=decode_path(v["path"]),
        mode=int(v["mode"], 8),
        state=state,
        pid=_positive(v["pid"], "pid"),
        created_ns=_number(v["created_ns"], "created_ns"),
        updated_ns=_number(v["updated_ns"], "updated_ns"),
        error=v["error"].decode("utf-8", "replace"),
        inplace=publish == "inplace",
        replaces=publish == "replace",
    )


def _number(raw: bytes, key: str) -> int:
    # A regex, not int(): int() also takes signs, spaces, '_' and non-ASCII digits.
    if not _DIGITS.fullmatch(raw):
        raise JournalError(f"bad {key}")
    return int(raw)


def _positive(raw: bytes, key: str) -> int:
    n = _number(raw, key)
    if not 0 < n < 2**31:
        raise JournalError(f"bad {key}")
    return n


def read_fd(fd: int, name: str | None = None) -> Entry:
    """Parse the entry open on `fd` (read from offset 0)."""
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 65536, offset):
        chunks.append(chunk)
        offset += len(chunk)
        if offset > 1 << 20:  # an entry is a few hundred bytes
            raise JournalError("too large")
    return decode(b"".join(chunks), name)


def read(path: str | os.PathLike[str]) -> Entry:
    """Parse the entry file at `path` (not following a symbolic link)."""
    try:
        fd = open_regular(path)
    except NotRegular as e:
        raise JournalError(e.strerror) from None
    try:
        return read_fd(fd, os.path.basename(os.fspath(path)))
    finally:
        os.close(fd)


def write(journal_dir: str | os.PathLike[str], entry: Entry, *, keep_locked: bool = False) -> int | None:
    """Write `entry` as journal_dir/ID atomically (via .ID.tmp, fsync, rename).

    With `keep_locked`, the new file is flocked before the rename and its
    descriptor returned open: whoever held the lock on the old entry goes on
    holding the entry under its name, with no moment in which another
    process could lock it. The caller closes the descriptor to unlock.
    """
    journal_dir = os.fspath(journal_dir)
    tmp = os.path.join(journal_dir, f".{entry.id}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if keep_locked:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _write_all(fd, encode(entry))
        os.fsync(fd)
        os.rename(tmp, os.path.join(journal_dir, entry.id))
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    if keep_locked:
        return fd
    os.close(fd)
    return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
