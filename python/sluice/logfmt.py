"""Reader of sluice's binary per-process log (see docs/logformat.md).

Pure Python, no copy of the C headers: counter names are read from the
log's SCHEMA region. Every problem with a file, truncated, corrupted or of
an unknown major version, raises :class:`LogFormatError` with one line that
names the file and the problem; nothing else escapes. With ``salvage=True``
a damaged log gives what can still be read of it (the regions whose
checksums hold), its problems listed in ``Log.damage``.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MAGIC = b"SLUICELG"
VERSION_MAJOR = 3          # 2.0: regions may be stored compressed (R_DEFLATE); 3.0: records in columns
OLDEST_MAJOR = 1
HEADER_SIZE = 64
REGION_ENTRY_SIZE = 32
MAX_REGIONS = 64

R_PROCESS, R_SCHEMA, R_NAMES, R_MODULE, R_DEFLATE, R_TRACE = 1, 2, 3, 4, 5, 6
TRACE_SEG_SIZE = 38
DEFLATE_HEAD = 16
INFLATE_MAX_RATIO = 1032   # deflate gives at most this many bytes per byte of stream
END_REASONS = {1: "exit", 2: "SIGTERM", 3: "_exit", 4: "exec"}
END_FATAL = 5   # a fatal signal (SIGSEGV, SIGABRT, ...): its name is the PROCESS key "signal"
F_PARTIAL, F_SIGNAL = 1, 2
LAYOUT_ROWS, LAYOUT_COLUMNS = 0, 1   # MODULE regions (3.0)
NAMES_INDEXED = 2                    # NAMES region version without record ids (3.0)
# A log whose layout-1 records would need more counter memory than this is refused (sluice_logfmt.h).
SPARSE_BASE, SPARSE_RATIO = 64 << 20, 4096


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


class RecordBlock:
    """The records of one MODULE region as arrays over the region's bytes:
    a log of thousands of records costs a few arrays, not a dict per record.
    Of a region stored compressed only the stored bytes are kept, and its
    counters are inflated again each time they are asked for (arrays()):
    a job's logs take little memory until a caller goes through them."""

    def __init__(self, module: Module, ids: np.ndarray | None, flags: np.ndarray, ints: np.ndarray | None = None,
                 floats: np.ndarray | None = None, paths: list[str] | None = None, stored: bytes | None = None,
                 decode=None, raw_paths: list[bytes] | None = None):
        self.module = module
        self._ids = ids         # uint64, one per record (None: computed from raw_paths when asked)
        self._raw_paths = raw_paths
        self.flags = flags      # uint32
        self.paths = paths or []
        self._ints, self._floats, self._stored = ints, floats, stored
        self._decode = decode or _counters

    @property
    def ids(self) -> np.ndarray:
        if self._ids is None:
            self._ids = record_ids(self.module.id, self._raw_paths or [])
        return self._ids

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """int64 [record, side (0 app, 1 fs), counter] and float64 [record, side, counter]."""
        if self._stored is None:
            return self._ints, self._floats
        return self._decode(_inflated(self._stored, 0)[1], self.module, len(self.paths))[2:]

    @property
    def ints(self) -> np.ndarray:
        return self.arrays()[0]

    @property
    def floats(self) -> np.ndarray:
        return self.arrays()[1]

    def __len__(self) -> int:
        return len(self.paths)

    def records(self, start: int = 0, stop: int | None = None) -> Iterator[Record]:
        m, part = self.module, slice(start, stop)
        ints, floats = self.arrays()
        for rid, rflags, path, iv, fv in zip(self.ids[part].tolist(), self.flags[part].tolist(), self.paths[part],
                                            ints[part].tolist(), floats[part].tolist()):
            app, fs = dict(zip(m.int_names, iv[0])), dict(zip(m.int_names, iv[1]))
            app.update(zip(m.float_names, fv[0]))
            fs.update(zip(m.float_names, fv[1]))
            yield Record(m.name, rid, path, rflags, app, fs)


class Records(Sequence):
    """A log's records, made into Record objects (with a dict per side) only
    while a caller looks at them; `blocks` holds them as arrays."""

    def __init__(self, blocks: list[RecordBlock]) -> None:
        self.blocks = blocks

    def __len__(self) -> int:
        return sum(len(b) for b in self.blocks)

    def __iter__(self) -> Iterator[Record]:
        for b in self.blocks:
            yield from b.records()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self)[i]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("record index out of range")
        i %= n
        for b in self.blocks:
            if i < len(b):
                return next(b.records(i, i + 1))
            i -= len(b)

    def __repr__(self) -> str:
        return f"Records({len(self)} in {len(self.blocks)} blocks)"


@dataclass
class Trace:
    """The per-call trace of a process (TRACE regions, 3.1): one entry per
    read or write kept, in the order the calls began."""
    paths: list[str]
    module: np.ndarray      # uint8: the record's module id (1 POSIX, 3 MPIIO)
    op: np.ndarray          # uint8: 0 read, 1 write, 2 open, 3 close, 4 truncate (length: the size), 5 fsync
    offset: np.ndarray      # int64 (-1: not known)
    length: np.ndarray      # int64
    start_ns: np.ndarray    # int64, since the process started
    end_ns: np.ndarray      # int64
    dropped: int = 0        # calls traced but not kept (beyond SLUICE_TRACE)

    def __len__(self) -> int:
        return len(self.paths)


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
    # a list of Record, or (from read_log) Records over arrays
    records: Sequence[Record] = field(default_factory=list)
    trace: Trace | None = None
    # read_log(salvage=True): what kept the log from being read whole, and
    # what of it was left out; empty for a whole log
    damage: list[str] = field(default_factory=list)

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


def read_log(path: str | Path, salvage: bool = False) -> Log:
    """Read one log. Raises LogFormatError('<path>: <problem>'), always one line.

    salvage: a damaged log is read as far as it can be instead of refused:
    a region whose checksum or contents are bad is left out (and with it
    what it held: a MODULE region's records, every record when the SCHEMA or
    NAMES is lost), the header's checksum and size are not required to
    match, and each problem, then what was left out, is a line of
    Log.damage. It still raises when nothing of the log can be placed in a
    job: no sluice header, a region table outside the file, or no readable
    PROCESS region."""
    p = Path(path)
    name = _printable(p)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise LogFormatError(f"{name}: cannot read: {e.strerror or e}") from None
    try:
        return _parse(p, data, [] if salvage else None)
    except LogFormatError as e:
        raise LogFormatError(f"{name}: {e}") from None
    except (struct.error, UnicodeDecodeError, ValueError, OverflowError, MemoryError) as e:
        raise LogFormatError(f"{name}: malformed log ({e})") from None


class _Problems:
    """The problems of a log read with salvage (a list), or None: raise at the first."""

    def __init__(self, found: list[str] | None) -> None:
        self.found = found

    def __call__(self, problem: str) -> None:
        if self.found is None:
            raise LogFormatError(problem)
        self.found.append(problem)

    def fatal(self, problem: str) -> LogFormatError:
        """The error for a problem that leaves nothing to use, after the ones found."""
        return LogFormatError("; ".join([*(self.found or []), problem]))


def _parse(p: Path, data: bytes, salvage: list[str] | None = None) -> Log:
    problem = _Problems(salvage)
    if len(data) < HEADER_SIZE:
        raise LogFormatError(f"not a sluice log: {len(data)} bytes is shorter than the header")
    if data[:8] != MAGIC:
        raise LogFormatError("not a sluice log (bad magic)")
    major, minor, hsize, nreg, flags, fsize, table_off = struct.unpack_from("<HHIIIQI", data, 8)
    (hcrc,) = struct.unpack_from("<I", data, 60)
    if not OLDEST_MAJOR <= major <= VERSION_MAJOR:
        raise LogFormatError(f"log format version {major}.{minor} is not supported "
                             f"(this reader reads {OLDEST_MAJOR}.x to {VERSION_MAJOR}.x)")
    if hsize < HEADER_SIZE or nreg > MAX_REGIONS or table_off < HEADER_SIZE:
        raise LogFormatError("corrupt header")
    table_end = table_off + nreg * REGION_ENTRY_SIZE
    if table_end > len(data):
        raise LogFormatError("truncated: the region table is cut off")
    crc = zlib.crc32(data[:60])
    crc = zlib.crc32(data[table_off:table_end], crc)
    if crc != hcrc:
        problem("corrupt header (checksum mismatch)")
    if fsize != len(data):
        what = "truncated" if len(data) < fsize else "wrong size"
        problem(f"{what}: {len(data)} bytes on disk, the header says {fsize}")

    # (type, version, body, the stored bytes of a region held by a DEFLATE one)
    regions: list[tuple[int, int, bytes, bytes | None]] = []
    lost = False     # a region left out (salvage): what it held is unknown
    for i in range(nreg):
        rtype, rver, roff, rlen, rcrc, _ = struct.unpack_from("<IIQQII", data, table_off + i * REGION_ENTRY_SIZE)
        try:
            if roff + rlen > len(data) or roff < table_end:
                raise LogFormatError(f"region {i} lies outside the file")
            body = data[roff : roff + rlen]
            if zlib.crc32(body) != rcrc:
                raise LogFormatError(f"corrupt region {i} (type {rtype}, checksum mismatch)")
            packed = None
            if rtype == R_DEFLATE:
                packed = body
                rtype, body = _inflated(body, i)
        except LogFormatError as e:
            problem(str(e))
            lost = True
            continue
        regions.append((rtype, rver, body, packed))

    proc = [b for t, _, b, _ in regions if t == R_PROCESS]
    if not proc:
        raise problem.fatal("no process region")
    try:
        c = _Cursor(proc[0], "process")
        pid, ppid, rank, nprocs, start_ns, end_ns, _mono = c.unpack("QQqqQQQ")
        end_reason, nstr = c.unpack("II")
        info: dict[str, str] = {}
        for _ in range(nstr):
            k = c.str16()
            info[k] = c.str32()
    except LogFormatError as e:
        raise problem.fatal(str(e)) from None
    if end_reason == END_FATAL:
        reason = info.get("signal") or "signal"
    else:
        reason = END_REASONS.get(end_reason, f"unknown({end_reason})")
    log = Log(path=p, version=(major, minor), flags=flags, pid=pid, ppid=ppid, rank=rank, nprocs=nprocs,
              start_ns=start_ns, end_ns=end_ns, end_reason=reason, info=info, damage=problem.found or [])

    # the writer always writes a SCHEMA and a NAMES region: missing after a
    # region was left out (salvage), they were that region
    schema_lost = lost and not any(t == R_SCHEMA for t, _, _, _ in regions)
    for t, _, body, _ in regions:
        if t != R_SCHEMA:
            continue
        try:
            described = _schema(bytes(body))
        except LogFormatError as e:
            problem(str(e))
            schema_lost = True
            continue
        for mid, mver, name, inames, fnames in described:
            log.modules[mid] = Module(mid, mver, name, list(inames), list(fnames))

    names: dict[int, str] = {}       # NAMES version 1: by record id
    indexed: list[bytes] = []        # version 2: numbered in table order (decoded once used)
    names_lost = lost and not any(t == R_NAMES for t, _, _, _ in regions)
    for t, ver, body, _ in regions:
        if t == R_NAMES:
            try:
                _names(body, ver, names, indexed)
            except LogFormatError as e:
                problem(str(e))
                names_lost = True

    blocks: list[RecordBlock] = []
    sparse = 0
    heads: dict[int, tuple[Module | None, int, int]] = {}   # region index -> _module_head
    for i, (t, _, body, _) in enumerate(regions):  # first pass: sizes, as the C reader checks them before reading
        if t == R_MODULE:
            try:
                heads[i] = mod, layout, nrec = _module_head(body, log.modules, major)
            except LogFormatError as e:
                problem(str(e))
                continue
            if mod is not None and layout == LAYOUT_COLUMNS:
                sparse += nrec * 16 * (len(mod.int_names) + len(mod.float_names))
    if sparse > SPARSE_BASE + SPARSE_RATIO * len(data):
        problem(f"its records would take {sparse} bytes of memory, "
                f"more than a log of {len(data)} bytes can hold")
        heads.clear()
    if names_lost:
        heads.clear()      # the records cannot be named (salvage)
    for i, (t, _, body, packed) in enumerate(regions):
        if i not in heads:
            continue
        mod, layout, nrec = heads[i]
        if mod is None:
            continue  # a module this reader does not know: skipped
        try:
            blocks.append(_block(body, packed, mod, layout, nrec, indexed, names))
        except LogFormatError as e:
            problem(str(e))
    log.records = Records(blocks)
    for t, _, body, _ in regions:
        if t == R_TRACE:
            try:
                _trace(log, body, indexed)
            except LogFormatError as e:
                problem(str(e))
    if log.damage:
        log.damage.append(_left_out(log, blocks, schema_lost, names_lost))
    return log


def _names(body: bytes, ver: int, names: dict[int, str], indexed: list[bytes]) -> None:
    """One NAMES region's entries, added to those of earlier ones."""
    c = _Cursor(body, "names")
    count = c.u32()
    if ver == NAMES_INDEXED:
        if count > (len(body) - c.pos) // 4:
            raise LogFormatError("names region is truncated")
        indexed.extend(c.take(c.u32()) for _ in range(count))
        return
    for _ in range(count):
        rid = c.unpack("Q")[0]
        names[rid] = c.str32()


def _left_out(log: Log, blocks: list[RecordBlock], schema_lost: bool, names_lost: bool) -> str:
    """What a damaged log's reader had to leave out: the line after its problems."""
    if schema_lost:
        return "no record could be read (its SCHEMA region is lost)"
    if names_lost:
        return "no record could be read (its NAMES region is lost)"
    kept = {b.module.id for b in blocks}
    # the writer describes only modules that have records: one described but
    # not read lost its MODULE region
    missing = sorted(m.name for mid, m in log.modules.items() if mid not in kept)
    if missing:
        return f"records left out: {', '.join(missing)}"
    return "every record was read"


def _block(body: bytes, packed: bytes | None, mod: Module, layout: int, nrec: int, indexed: list[bytes],
           names: dict[int, str]) -> RecordBlock:
    """The RecordBlock of one MODULE region, its records named."""
    decode = _columns if layout == LAYOUT_COLUMNS else _counters
    if layout == LAYOUT_COLUMNS and packed is not None:
        # only the NAMES indexes and flags now: the counters are decoded
        # when asked for (arrays()), from the stored bytes kept
        ids, flags = _columns(body, mod, nrec, head_only=True)
        ints = floats = None
    else:
        ids, flags, ints, floats = decode(body, mod, nrec)
    raw = None
    if layout == LAYOUT_COLUMNS:
        bad = np.flatnonzero(ids >= len(indexed))   # here: NAMES indexes
        if bad.size:
            raise LogFormatError(f"{mod.name} record {int(bad[0])} has no name")
        raw = [indexed[i] for i in ids.tolist()]
        paths = [b.decode("utf-8", "replace") for b in raw]
        ids = None
    else:
        paths = [names.get(rid) for rid in ids.tolist()]
        if None in paths:
            raise LogFormatError(f"{mod.name} record {int(ids[paths.index(None)]):#x} has no name")
    if packed is not None:    # the inflated bytes are let go: arrays() inflates them again
        return RecordBlock(mod, None if ids is None else ids.copy(), flags.copy(), paths=paths,
                           stored=packed, decode=decode, raw_paths=raw)
    return RecordBlock(mod, ids, flags, ints, floats, paths, decode=decode, raw_paths=raw)


def _trace(log: Log, body: bytes, indexed: list[bytes]) -> None:
    """One TRACE region's segments, after those of earlier ones."""
    if len(body) < 16:
        raise LogFormatError("trace region is truncated")
    n, dropped = struct.unpack_from("<QQ", body)
    if n > (len(body) - 16) // TRACE_SEG_SIZE:
        raise LogFormatError(f"trace region is truncated ({n} segments announced)")
    idx = np.frombuffer(body, "<u4", n, 16)
    bad = np.flatnonzero(idx >= len(indexed))
    if bad.size:
        raise LogFormatError(f"trace segment {int(bad[0])} names an entry NAMES does not have")
    pos = 16 + 6 * n   # after the indexes (4 bytes each), modules and ops (1 byte each)
    cols = [np.frombuffer(body, "<i8", n, pos + 8 * n * j).astype(np.int64) for j in range(4)]
    part = Trace([indexed[i].decode("utf-8", "replace") for i in idx.tolist()],
                 np.frombuffer(body, np.uint8, n, 16 + 4 * n).copy(), np.frombuffer(body, np.uint8, n, 16 + 4 * n + n).copy(),
                 *cols, dropped=int(dropped))
    if log.trace is None:
        log.trace = part
        return
    t = log.trace
    log.trace = Trace(t.paths + part.paths, *(np.concatenate([getattr(t, f), getattr(part, f)])
                                              for f in ("module", "op", "offset", "length", "start_ns", "end_ns")),
                      dropped=t.dropped + part.dropped)


def _module_head(body: bytes, modules: dict[int, Module], major: int) -> tuple[Module | None, int, int]:
    """The module of a MODULE region (None: not in the SCHEMA, skipped),
    its layout and record count, checked against the region's size."""
    c = _Cursor(body, "module")
    mid, layout, nrec = c.unpack("HHI")
    mod = modules.get(mid)
    if mod is None:
        return None, layout, nrec
    ni, nf = len(mod.int_names), len(mod.float_names)
    left = len(body) - c.pos
    if major < 3 or layout == LAYOUT_ROWS:
        if nrec * (16 + 16 * ni + 16 * nf) > left:
            raise LogFormatError(f"{mod.name} region is truncated ({nrec} records announced)")
        return mod, LAYOUT_ROWS, nrec
    if layout != LAYOUT_COLUMNS:
        raise LogFormatError(f"{mod.name} region has an unknown layout ({layout})")
    (group,) = c.unpack("I")
    if group == 0 and nrec > 0:
        raise LogFormatError(f"{mod.name} region is corrupt (records in groups of 0)")
    # a bitmap of V bytes per group, at least a byte per record
    nv = 2 + 2 * ni + 2 * nf
    if nrec > left - 4 or (-(-nrec // group) if group else 0) > (left - 4) // nv:
        raise LogFormatError(f"{mod.name} region is truncated ({nrec} records announced)")
    return mod, LAYOUT_COLUMNS, nrec


@functools.lru_cache(maxsize=64)
def _schema(body: bytes) -> tuple[tuple[int, int, str, tuple[str, ...], tuple[str, ...]], ...]:
    """The modules a SCHEMA region describes, in order. The processes of a
    job carry the same schema: it is read once."""
    c = _Cursor(body, "schema")
    out = []
    for _ in range(c.u32()):
        mid, mver = c.unpack("HH")
        name = c.str16()
        ni, nf = c.unpack("HH")
        inames = tuple(c.str16() for _ in range(ni))
        fnames = tuple(c.str16() for _ in range(nf))
        out.append((mid, mver, name, inames, fnames))
    return tuple(out)


def _inflated(body: bytes, i: int) -> tuple[int, bytes]:
    """The type and bytes of the region a DEFLATE region holds: the stream
    must end exactly at the region's end and give exactly the announced
    length (the C reader's limits: under 4 GiB either way)."""
    if len(body) < DEFLATE_HEAD:
        raise LogFormatError(f"compressed region {i} is truncated")
    rtype, _zero, raw = struct.unpack_from("<IIQ", body)
    zlen = len(body) - DEFLATE_HEAD
    bad = LogFormatError(f"corrupt region {i} (type {R_DEFLATE}, bad compressed data)")
    if rtype == R_DEFLATE or raw // INFLATE_MAX_RATIO > zlen or zlen > 0xFFFFFFFF or raw >= 0xFFFFFFFF:
        raise bad
    z = zlib.decompressobj()
    try:
        out = z.decompress(memoryview(body)[DEFLATE_HEAD:], raw + 1)
    except zlib.error:
        raise bad from None
    if not z.eof or z.unused_data or len(out) != raw:
        raise bad
    return rtype, out


def _counters(body: bytes, mod: Module, nrec: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """ids, flags, ints [record, side, counter] and floats of a MODULE
    region's records (checked to fit), views of its bytes."""
    ni, nf = len(mod.int_names), len(mod.float_names)
    recs = np.frombuffer(body, dtype=_record_dtype(ni, nf), count=nrec, offset=8)
    return recs["id"], recs["flags"], recs["ints"].reshape(nrec, 2, ni), recs["floats"].reshape(nrec, 2, nf)


@functools.lru_cache(maxsize=256)
def _record_dtype(ni: int, nf: int) -> np.dtype:
    """One record of a MODULE region (docs/logformat.md), little-endian, packed."""
    return np.dtype({"names": ["id", "flags", "ints", "floats"],
                     "formats": ["<u8", "<u4", ("<i8", (2 * ni,)), ("<f8", (2 * nf,))],
                     "offsets": [0, 8, 16, 16 + 16 * ni], "itemsize": 16 + 16 * ni + 16 * nf})


def _columns(body: bytes, mod: Module, nrec: int, head_only: bool = False) -> tuple[np.ndarray, ...]:
    """NAMES indexes, flags, ints [record, side, counter] and floats (seconds)
    of a MODULE region of layout 1 (its head checked): groups of records
    stored as the byte planes that are not zero, the fs side as a difference
    from the app side, times in integer nanoseconds (docs/logformat.md).
    head_only: every group checked, but only the indexes and flags made."""
    ni, nf = len(mod.int_names), len(mod.float_names)
    nv = 2 + 2 * ni + 2 * nf
    (group,) = struct.unpack_from("<I", body, 8)
    raw = np.frombuffer(body, dtype=np.uint8)
    vals = np.zeros((nrec, 2 if head_only else nv), dtype=np.uint64)
    pos = 12
    for first in range(0, nrec, group):
        g = min(group, nrec - first)
        if pos + nv > len(raw):
            raise LogFormatError(f"{mod.name} region is truncated ({nrec} records announced)")
        stored = np.flatnonzero(np.unpackbits(raw[pos : pos + nv], bitorder="little"))
        pos += nv
        end = pos + len(stored) * g
        if end > len(raw):
            raise LogFormatError(f"{mod.name} region is truncated ({nrec} records announced)")
        planes = raw[pos:end].reshape(len(stored), g)
        pos = end
        # byte b of value k is plane b*V + k: a few or'ed column blocks per byte
        b_of, k_of = np.divmod(stored, nv)
        if head_only:
            keep = k_of < 2
            planes, b_of, k_of = planes[keep], b_of[keep], k_of[keep]
        block = vals[first : first + g]
        for b in np.unique(b_of).tolist():
            sel = b_of == b
            block[:, k_of[sel]] |= planes[sel].T.astype(np.uint64) << np.uint64(8 * b)
    if head_only:
        return vals[:, 0].copy(), vals[:, 1].astype(np.uint32)
    ints = np.empty((nrec, 2, ni), dtype=np.int64)
    app = vals[:, 2 : 2 + ni]
    ints[:, 0, :] = app.view(np.int64)
    ints[:, 1, :] = (app + vals[:, 2 + ni : 2 + 2 * ni]).view(np.int64)   # uint64: wraps as the writer's
    ns = vals[:, 2 + 2 * ni :]
    floats = np.empty((nrec, 2, nf), dtype=np.float64)
    floats[:, 0, :] = ns[:, :nf].view(np.int64) / 1e9
    floats[:, 1, :] = (ns[:, :nf] + ns[:, nf:]).view(np.int64) / 1e9
    return vals[:, 0].copy(), vals[:, 1].astype(np.uint32), ints, floats


def record_ids(module: int, paths: list[bytes] | list[str]) -> np.ndarray:
    """The record ids of 3.x logs, which do not store them: FNV-1a (64 bits)
    of the module id and each path's bytes, computed for all paths at once."""
    enc = [p if isinstance(p, bytes) else p.encode("utf-8", "surrogateescape") for p in paths]
    h = np.full(len(enc), 1469598103934665603 ^ module, dtype=np.uint64)
    if not enc:
        return h
    lens = np.fromiter((len(b) for b in enc), dtype=np.intp, count=len(enc))
    width = int(lens.max())
    mat = np.zeros((len(enc), width), dtype=np.uint8)
    for i, b in enumerate(enc):
        mat[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
    prime = np.uint64(1099511628211)
    with np.errstate(over="ignore"):
        for j in range(width):
            live = lens > j
            h[live] = (h[live] ^ mat[live, j].astype(np.uint64)) * prime
    return h
