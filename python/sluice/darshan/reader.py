"""Darshan logs as sluice logs, so that `sluice report` and `sluice advise`
read either.

The file's structure is checked here first (header, region bounds, every
zlib stream, the job and name regions): libdarshan-util reports a broken log
on stderr and may crash the process, and PyDarshan turns a truncated module
into no records at all. Only a log that passes is read, through PyDarshan,
with the library's stderr captured. Every problem is one LogFormatError line.

Each rank becomes one Log (pid = rank, the job's start and end); records of
rank -1 (files every rank shared, reduced by Darshan) go into one more Log of
rank -1 marked `darshan_shared`. A log exported by sluice names its fs-side
companion (metadata `sluice_fs_log`); when that file is beside it, its
counters are the fs side, otherwise fs equals app.
"""

from __future__ import annotations

import bz2
import contextlib
import os
import struct
import tempfile
import zlib
from pathlib import Path

from sluice.darshan import layout as L
from sluice.darshan.mapping import SLUICE_MODULES, sluice_names, to_sluice
from sluice.logfmt import MAGIC as SLUICE_MAGIC
from sluice.logfmt import Log, LogFormatError, Module, Record, _printable
from sluice.report.model import DARSHAN_LOG, SHARED

SUPPORTED = {"3.00", "3.10", "3.20", "3.21", "3.41"}
_MOD_IDS = {"POSIX": L.POSIX, "MPI-IO": L.MPIIO, "H5F": L.H5F, "H5D": L.H5D, "STDIO": L.STDIO,
            "PNETCDF_FILE": L.PNETCDF_FILE, "PNETCDF_VAR": L.PNETCDF_VAR}
_MOUNTS = "sluice_mounts"     # the job dict's key for the log's mount table


def looks_like_darshan(path: Path) -> bool:
    """By magic number (either byte order); a file with neither Darshan's nor
    sluice's magic, by the .darshan extension."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return path.suffix == ".darshan"
    if len(head) == 16 and head[:2] == b"3." and L.MAGIC in (struct.unpack("<q", head[8:])[0],
                                                          struct.unpack(">q", head[8:])[0]):
        return True
    return not head.startswith(SLUICE_MAGIC) and path.suffix == ".darshan"


def _inflate(data: bytes, off: int, length: int, what: str, comp: int = L.ZLIB) -> bytes:
    """One region's bytes: whole zlib or bzip2 streams, or stored as is."""
    if off + length > len(data) or (length and off < L.HEADER_OLD.size):
        raise LogFormatError(f"truncated: the {what} region lies outside the file")
    raw = data[off:off + length]
    if comp == L.NO_COMPRESSION:
        return raw
    out = []
    while raw:     # the runtime of an MPI job writes each rank's part as a stream of its own
        z = zlib.decompressobj() if comp == L.ZLIB else bz2.BZ2Decompressor()
        try:
            out.append(z.decompress(raw))
        except (zlib.error, OSError, ValueError) as e:
            raise LogFormatError(f"corrupt {what} region ({e})") from None
        if not z.eof:
            raise LogFormatError(f"truncated {what} region")
        raw = z.unused_data
    return b"".join(out)


def check(path: Path) -> str:
    """Check a Darshan log's structure; returns its format version."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise LogFormatError(f"cannot read: {e.strerror or e}") from None
    if len(data) < L.HEADER_OLD.size:
        raise LogFormatError(f"not a Darshan log: {len(data)} bytes is shorter than the header")
    version = data[:8].split(b"\0")[0].decode("ascii", "replace")
    end = "<" if struct.unpack("<q", data[8:16])[0] == L.MAGIC else ">"
    if struct.unpack(end + "q", data[8:16])[0] != L.MAGIC:
        raise LogFormatError("not a Darshan log (bad magic number)")
    if version not in SUPPORTED:
        raise LogFormatError(f"Darshan log format {version} is not supported (this reader reads "
                             f"{', '.join(sorted(SUPPORTED))})")
    new = version == "3.41"
    hdr = struct.Struct(end + L.HEADER.format[1:]) if new else struct.Struct(end + L.HEADER_OLD.format[1:])
    if len(data) < hdr.size:
        raise LogFormatError("truncated: the header is cut off")
    fields = hdr.unpack_from(data)
    comp = fields[2]
    nmods = L.MAX_MODS if new else 16
    name_off, name_len = fields[4], fields[5]
    mod_map = fields[6:6 + 2 * nmods]
    if comp not in (L.ZLIB, L.BZIP2, L.NO_COMPRESSION):
        raise LogFormatError(f"corrupt header (compression type {comp})")
    mod_ver = fields[6 + 2 * nmods:]
    regions = [(mod_map[2 * i], mod_map[2 * i + 1], i) for i in range(nmods) if mod_map[2 * i + 1]]
    job_end = name_off if name_off else min([o for o, _, _ in regions], default=len(data))
    for _, _, mid in regions:
        if new and mid in L.MODULE_VERSIONS and mod_ver[mid] > L.MODULE_VERSIONS[mid]:
            raise LogFormatError(f"{L.MODULE_NAMES[mid]} module version {mod_ver[mid]} is newer than this "
                                 f"reader's ({L.MODULE_VERSIONS[mid]})")
    if job_end <= hdr.size:
        raise LogFormatError("corrupt header (no room for the job region)")
    job = _inflate(data, hdr.size, job_end - hdr.size, "job", comp)
    if len(job) <= L.JOB.size - (0 if new else 16):
        raise LogFormatError("truncated job region")
    if name_len:
        names = _inflate(data, name_off, name_len, "name", comp)
        pos = 0
        while pos < len(names):
            nul = names.find(b"\0", pos + 8)
            if pos + 8 >= len(names) or nul < 0:
                raise LogFormatError("corrupt name region (a record name is cut off)")
            pos = nul + 1
    for off, length, mid in regions:
        what = L.MODULE_NAMES.get(mid, f"module {mid}")
        body = _inflate(data, off, length, what, comp)
        if new and mid in L.INT_NAMES and mod_ver[mid] == L.MODULE_VERSIONS[mid] \
                and len(body) % L.record_struct(mid).size:
            raise LogFormatError(f"corrupt {what} region (a record is cut off)")
    return version


@contextlib.contextmanager
def _stderr_captured():
    """fd 2 goes to a temporary file for the duration (libdarshan-util prints there)."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield tmp
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _first_line(tmp) -> str:
    tmp.seek(0)
    lines = tmp.read().decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else "no detail"


def _records(path: Path) -> tuple[dict, str, dict[str, list[tuple[int, str, dict[str, float]]]]]:
    """(job, exe, module -> [(rank, name, counters)]) through PyDarshan."""
    try:
        import darshan
    except ImportError:
        raise LogFormatError("reading Darshan logs needs PyDarshan (pip install darshan)") from None
    with _stderr_captured() as tmp:
        try:
            rep = darshan.DarshanReport(str(path), read_all=False)
            out: dict[str, list[tuple[int, str, dict[str, float]]]] = {}
            for mod in _MOD_IDS:
                if mod not in rep.modules:
                    continue
                rep.mod_read_all_records(mod, dtype="numpy", warnings=False)
                recs = []
                for rec in rep.records[mod]:
                    mid = _MOD_IDS[mod]
                    c = dict(zip(L.INT_NAMES[mid], (int(x) for x in rec["counters"])))
                    c.update(zip(L.FLOAT_NAMES[mid], (float(x) for x in rec["fcounters"])))
                    recs.append((int(rec["rank"]), rep.name_records.get(rec["id"], f"<record {rec['id']:#x}>"), c))
                out[mod] = recs
            job, exe = dict(rep.metadata["job"]), rep.metadata.get("exe", "")
            job[_MOUNTS] = [(str(m[0]), str(m[1])) for m in getattr(rep, "mounts", []) or []]
        except Exception as e:        # the library's failures surface as assorted exceptions
            raise LogFormatError(f"PyDarshan cannot read it: {_first_line(tmp)} ({type(e).__name__})") from None
    return job, exe, out


def read_darshan(path: str | Path, companion: bool = True) -> list[Log]:
    """The Logs of one Darshan log (one per rank, plus one of rank -1 for shared records)."""
    p = Path(path)
    name = _printable(p)
    try:
        check(p)
        job, exe, recs = _records(p)
        fs_recs = None
        fs_name = job.get("metadata", {}).get("sluice_fs_log")
        if companion and fs_name and job["metadata"].get("sluice_view") == "app" and (p.parent / fs_name).is_file():
            check(p.parent / fs_name)
            fs_recs = _records(p.parent / fs_name)[2]
    except LogFormatError as e:
        raise LogFormatError(f"{name}: {e}") from None
    return _as_logs(p, job, exe, recs, fs_recs)


def _add(log: Log, mid: int, path: str, app: dict | None, fs: dict | None) -> None:
    a = to_sluice(mid, app, log.rank < 0) if app is not None else None
    f = to_sluice(mid, fs, log.rank < 0) if fs is not None else None
    untouched = {k: (-1 if "MAX_BYTE" in k else 0) for k in (a or f)}
    log.records.append(Record(SLUICE_MODULES[mid], 0, path, int(path == "<other files>"),
                              a if a is not None else untouched, f if f is not None else untouched))


def _as_logs(p: Path, job: dict, exe: str, recs, fs_recs) -> list[Log]:
    md = job.get("metadata", {})
    nprocs = max(1, int(job.get("nprocs", 1)))
    start = int(job["start_time_sec"]) * 10**9 + int(job.get("start_time_nsec", 0))
    # the library's run time: logs before 3.41 keep whole seconds and count the last one
    end = start + max(0, int(round(float(job.get("run_time", 0)) * 1e9)))
    info = {"job_id": md.get("sluice_job_id", str(job.get("jobid", ""))), "host": md.get("sluice_host", "?"),
            "exe": exe.split(" ", 1)[0], "cmdline": exe, "mode": md.get("sluice_mode", "darshan"),
            "version": f"darshan {job.get('log_ver', '?')}", DARSHAN_LOG: str(p),
            "uid": str(job.get("uid", "")), "policy": md.get("sluice_policy", ""),
            # the mount table, as a sluice log names it (report/pattern.py)
            "mounts": "".join(f"{t}\t{m}\n" for m, t in job.get(_MOUNTS, []) if m.startswith("/"))}
    modules = {}
    for mod, mid in _MOD_IDS.items():
        ints, floats = sluice_names(mid, reduced=True)
        modules[mid] = Module(mid, L.MODULE_VERSIONS[mid], SLUICE_MODULES[mid], ints, floats)
    logs: dict[int, Log] = {}

    def log_of(rank: int) -> Log:
        if rank not in logs:
            extra = {SHARED: "1"} if rank < 0 else {}
            logs[rank] = Log(path=p, version=(3, 0), flags=0, pid=rank, ppid=0, rank=rank, nprocs=nprocs,
                             start_ns=start, end_ns=end if rank >= 0 else start, end_reason="exit",
                             info={**info, **extra}, modules=modules)
        return logs[rank]

    for r in range(nprocs):
        log_of(r)
    fs_index = {(mod, rank, n): c for mod, items in (fs_recs or {}).items() for rank, n, c in items}
    for mod, items in recs.items():
        mid = _MOD_IDS[mod]
        for rank, n, c in items:
            fsc = fs_index.pop((mod, rank, n), None) if fs_recs is not None else c
            _add(log_of(rank), mid, n, c, fsc)
    for (mod, rank, n), c in fs_index.items():        # files only the fs side touched
        _add(log_of(rank), _MOD_IDS[mod], n, None, c)
    return [logs[r] for r in sorted(logs, key=lambda r: (r < 0, r))]
