"""Writing one Darshan log (format 3.41, zlib): the uncompressed header, then
the job region (job record, exe line, mount table), the name region and one
region per module in increasing module id, each region its own zlib stream.
See docs/darshan.md for the byte layout."""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from sluice.darshan import layout as L


@dataclass
class DarshanJob:
    uid: int
    start_ns: int
    end_ns: int
    nprocs: int
    jobid: int
    exe: str                                  # Darshan's "exe": the command line
    metadata: dict[str, str] = field(default_factory=dict)
    mounts: list[tuple[str, str]] = field(default_factory=list)   # (mount point, fs type)


@dataclass
class ModuleData:
    records: list[bytes] = field(default_factory=list)   # packed with layout.record_struct(module), one or many each
    partial: bool = False
    count: int = 0                                        # records in `records`


def _one_line(s: str) -> str:
    return s.replace("\n", " ").replace("\t", " ").replace("\0", "")


def _metadata(md: dict[str, str]) -> bytes:
    """key=value lines, as many as fit in the 1,024 bytes (NUL included)."""
    out = b""
    for k, v in md.items():
        line = f"{_one_line(k).replace('=', '_')}={_one_line(v)}\n".encode("utf-8", "replace")
        if len(out) + len(line) >= L.METADATA_LEN:
            break
        out += line
    return out


def _exe_and_mounts(exe: str, mounts: list[tuple[str, str]]) -> bytes:
    """The exe line, then "\\n<fs type>\\t<mount point>" per mount, then a NUL. A
    reader takes the exe from before the first newline, so the table needs one
    entry at least. When the 3,015 bytes do not hold every mount point, the
    shortest ones are kept (so "/" always is)."""
    body = _one_line(exe).encode("utf-8", "replace")[: L.EXE_MOUNTS_MAX // 2]
    lines = []
    room = L.EXE_MOUNTS_MAX - len(body)
    for point, fstype in sorted(mounts or [("/", "unknown")], key=lambda m: len(m[0])):
        line = f"\n{_one_line(fstype).replace(' ', '_') or 'unknown'}\t{_one_line(point).replace(' ', '_')}"
        b = line.encode("utf-8", "replace")
        if len(b) > room:
            break
        lines.append(b)
        room -= len(b)
    return body + b"".join(reversed(lines)) + b"\0"


def encode(job: DarshanJob, names: dict[int, str], modules: dict[int, ModuleData]) -> bytes:
    """The whole log as bytes."""
    job_rec = L.JOB.pack(job.uid, job.start_ns // 10**9, job.start_ns % 10**9, job.end_ns // 10**9,
                         job.end_ns % 10**9, job.nprocs, job.jobid, _metadata(job.metadata))
    job_region = zlib.compress(job_rec + _exe_and_mounts(job.exe, job.mounts))
    name_bytes = b"".join(rid.to_bytes(8, "little") + n.encode("utf-8", "surrogateescape") + b"\0"
                          for rid, n in names.items())
    name_region = zlib.compress(name_bytes) if names else b""
    off = L.HEADER.size + len(job_region)
    name_map = (off, len(name_region)) if names else (0, 0)
    off += len(name_region)
    mod_map = [0] * (2 * L.MAX_MODS)
    mod_ver = [0] * L.MAX_MODS
    partial = 0
    body = [job_region, name_region]
    for mid in sorted(modules):
        m = modules[mid]
        if not m.records:
            continue
        z = zlib.compress(b"".join(m.records))
        mod_map[2 * mid], mod_map[2 * mid + 1] = off, len(z)
        mod_ver[mid] = L.MODULE_VERSIONS[mid]
        if m.partial:
            partial |= 1 << mid
        body.append(z)
        off += len(z)
    header = L.HEADER.pack(L.LOG_VERSION, L.MAGIC, L.ZLIB, partial, *name_map, *mod_map, *mod_ver)
    return header + b"".join(body)


def write(path: Path, job: DarshanJob, names: dict[int, str], modules: dict[int, ModuleData]) -> int:
    """Write the log under a temporary name and rename it into place; returns its size."""
    data = encode(job, names, modules)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return len(data)
