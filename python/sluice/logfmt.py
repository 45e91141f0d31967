"""Reader of sluice's binary per-process log (see docs/logformat.md).

Pure Python, no copy of the C headers: counter names are read from the
log's SCHEMA region. Every problem with a file, truncated, corrupted or of
an unknown major version, raises :class:`LogFormatError` with one line that
names the file and the problem; nothing else escapes.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"SLUICELG"
VERSION_MAJOR = 1
HEADER_SIZE = 64
REGION_ENTRY_SIZE = 32
MAX_REGIONS = 64

R_PROCESS, R_SCHEMA, R_NAMES, R_MODULE = 1, 2, 3, 4
END_REASONS = {1: "exit", 2: "SIGTERM", 3: "_exit", 4: "exec"}
F_PARTIAL, F_SIGNAL = 1, 2


class LogFormatError(Exception):
    """A log that cannot be read; str() is one line naming the file."""


@dataclass
class Module:
    id: int
    version: int
    name: str
    int_names: list[str]
    float_names: list[str]


@dataclass
class Record:
    module: str
    id: int
    path: str
    flags: int
    app: dict[str, float]
    fs: dict[str, float]


@dataclass
class Log:
    path: Path
    version: tuple[int, int]
    flags: int
    pid: int
    ppid: int
    rank: int
    nprocs: int
    start_ns: int
    end_ns: int
    end_reason: str
    info: dict[str, str]
    modules: dict[int, Module] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.flags & F_PARTIAL)

    @property
    def job_id(self) -> str:
        return self.info.get("job_id", "")

    @property
    def runtime(self) -> float:
        return max(0.0, (self.end_ns - self.start_ns) / 1e9)


class _Cursor:
    """Bounds-checked little-endian reads over one region."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise LogFormatError(f"{self.what} region is truncated")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt: str) -> tuple:
        s = struct.Struct("<" + fmt)
        return s.unpack(self.take(s.size))

    def u16(self) -> int:
        return self.unpack("H")[0]

    def u32(self) -> int:
        return self.unpack("I")[0]

    def str16(self) -> str:
        return self.take(self.u16()).decode("utf-8", "replace")

    def str32(self) -> str:
        return self.take(self.u32()).decode("utf-8", "replace")


def _printable(p: Path) -> str:
    """The path for a one-line message: control characters become '?'."""
    return "".join("?" if ord(c) < 32 or ord(c) == 127 else c for c in str(p))


def read_log(path: str | Path) -> Log:
    """Read one log. Raises LogFormatError('<path>: <problem>'), always one line."""
    p = Path(path)
    name = _printable(p)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise LogFormatError(f"{name}: cannot read: {e.strerror or e}") from None
    try:
        return _parse(p, data)
    except LogFormatError as e:
        raise LogFormatError(f"{name}: {e}") from None
    except (struct.error, UnicodeDecodeError, ValueError, OverflowError, MemoryError) as e:
        raise LogFormatError(f"{name}: malformed log ({e})") from None


def _parse(p: Path, data: bytes) -> Log:
    if len(data) < HEADER_SIZE:
        raise LogFormatError(f"not a sluice log: {len(data)} bytes is shorter than the header")
    if data[:8] != MAGIC:
        raise LogFormatError("not a sluice log (bad magic)")
    major, minor, hsize, nreg, flags, fsize, table_off = struct.unpack_from("<HHIIIQI", data, 8)
    (hcrc,) = struct.unpack_from("<I", data, 60)
    if major != VERSION_MAJOR:
        raise LogFormatError(f"log format version {major}.{minor} is not supported (this reader reads {VERSION_MAJOR}.x)")
    if hsize < HEADER_SIZE or nreg > MAX_REGIONS or table_off < HEADER_SIZE:
        raise LogFormatError("corrupt header")
    table_end = table_off + nreg * REGION_ENTRY_SIZE
    if table_end > len(data):
        raise LogFormatError("truncated: the region table is cut off")
    crc = zlib.crc32(data[:60])
    crc = zlib.crc32(data[table_off:table_end], crc)
    if crc != hcrc:
        raise LogFormatError("corrupt header (checksum mismatch)")
    if fsize != len(data):
        what = "truncated" if len(data) < fsize else "wrong size"
        raise LogFormatError(f"{what}: {len(data)} bytes on disk, the header says {fsize}")

    regions: list[tuple[int, int, bytes]] = []
    for i in range(nreg):
        rtype, rver, roff, rlen, rcrc, _ = struct.unpack_from("<IIQQII", data, table_off + i * REGION_ENTRY_SIZE)
        if roff + rlen > len(data) or roff < table_end:
            raise LogFormatError(f"region {i} lies outside the file")
        body = data[roff : roff + rlen]
        if zlib.crc32(body) != rcrc:
            raise LogFormatError(f"corrupt region {i} (type {rtype}, checksum mismatch)")
        regions.append((rtype, rver, body))

    proc = [b for t, _, b in regions if t == R_PROCESS]
    if not proc:
        raise LogFormatError("no process region")
    c = _Cursor(proc[0], "process")
    pid, ppid, rank, nprocs, start_ns, end_ns, _mono = c.unpack("QQqqQQQ")
    end_reason, nstr = c.unpack("II")
    info: dict[str, str] = {}
    for _ in range(nstr):
        k = c.str16()
        info[k] = c.str32()
    log = Log(path=p, version=(major, minor), flags=flags, pid=pid, ppid=ppid, rank=rank, nprocs=nprocs,
              start_ns=start_ns, end_ns=end_ns, end_reason=END_REASONS.get(end_reason, f"unknown({end_reason})"),
              info=info)

    for t, _, body in regions:
        if t == R_SCHEMA:
            c = _Cursor(body, "schema")
            for _ in range(c.u32()):
                mid, mver = c.unpack("HH")
                name = c.str16()
                ni, nf = c.unpack("HH")
                inames = [c.str16() for _ in range(ni)]
                fnames = [c.str16() for _ in range(nf)]
                log.modules[mid] = Module(mid, mver, name, inames, fnames)

    names: dict[int, str] = {}
    for t, _, body in regions:
        if t == R_NAMES:
            c = _Cursor(body, "names")
            for _ in range(c.u32()):
                rid = c.unpack("Q")[0]
                names[rid] = c.str32()

    for t, _, body in regions:
        if t != R_MODULE:
            continue
        c = _Cursor(body, "module")
        mid, _zero, nrec = c.unpack("HHI")
        mod = log.modules.get(mid)
        if mod is None:
            continue  # a module this reader does not know: skipped
        ni, nf = len(mod.int_names), len(mod.float_names)
        rec_size = 16 + 16 * ni + 16 * nf
        if nrec * rec_size > len(body) - c.pos:
            raise LogFormatError(f"{mod.name} region is truncated ({nrec} records announced)")
        ints = struct.Struct(f"<{2 * ni}q")
        floats = struct.Struct(f"<{2 * nf}d")
        for _ in range(nrec):
            rid, rflags, _z = c.unpack("QII")
            iv = ints.unpack(c.take(ints.size))
            fv = floats.unpack(c.take(floats.size))
            app = dict(zip(mod.int_names, iv[:ni]))
            fs = dict(zip(mod.int_names, iv[ni:]))
            app.update(zip(mod.float_names, fv[:nf]))
            fs.update(zip(mod.float_names, fv[nf:]))
            if rid not in names:
                raise LogFormatError(f"{mod.name} record {rid:#x} has no name")
            log.records.append(Record(mod.name, rid, names[rid], rflags, app, fs))
    return log
