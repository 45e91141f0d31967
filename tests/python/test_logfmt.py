"""The log format: the golden vectors, the two readers (python/sluice/logfmt.py
and sluice-logdump, which uses src/logfmt/reader.c) against each other, fresh
logs with known counter values, and damaged logs.

Binaries come from SLUICE_NATIVE_DIR (default: <repo>/build/dev/native).
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
NATIVE = Path(os.environ.get("SLUICE_NATIVE_DIR", REPO / "build" / "dev" / "native"))
VECTORS = REPO / "tests" / "vectors"
CORPUS = REPO / "tests" / "fuzz" / "corpus" / "logfmt"

if str(REPO / "python") not in sys.path and not os.environ.get("SLUICE_TEST_INSTALLED"):
    sys.path.insert(0, str(REPO / "python"))

from sluice.logfmt import Log, LogFormatError, read_log  # noqa: E402

VECTOR_NAMES = ["posix_stdio", "fork_parent", "partial", "columns_buffer"]
WEIRD_NAME = "we\tird \"q\" \\ \ufffd\ufffd \u00e9\n.txt"  # as decoded: ff fe are invalid UTF-8


def native(name: str) -> Path:
    p = NATIVE / name
    if not p.exists():
        pytest.fail(f"{p} is missing: build the tree first (or set SLUICE_NATIVE_DIR)")
    return p


def logdump(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(native("sluice-logdump")), *map(str, args)], capture_output=True, timeout=120)


def c_json(*paths: Path) -> list[dict[str, Any]]:
    cp = logdump("--json", *paths)
    assert cp.returncode == 0, cp.stderr.decode(errors="replace")
    assert cp.stderr == b""
    out = cp.stdout.decode("utf-8")  # strict: the output must be valid UTF-8
    lines = out.splitlines()  # one log per line, whatever line breaks its strings hold
    assert out.endswith("\n") and len(lines) == len(paths) == out.count("\n")
    return [json.loads(line) for line in lines]


def py_json(log: Log) -> dict[str, Any]:
    """The Python reader's view, in the shape of sluice-logdump --json."""
    out = {
        "path": str(log.path), "version": f"{log.version[0]}.{log.version[1]}", "flags": log.flags,
        "pid": log.pid, "ppid": log.ppid, "rank": log.rank, "nprocs": log.nprocs,
        "start_ns": log.start_ns, "end_ns": log.end_ns, "end_reason": log.end_reason, "info": log.info,
        "records": [{"module": r.module, "id": r.id, "path": r.path, "flags": r.flags, "app": r.app, "fs": r.fs}
                    for r in log.records],
    }
    t = log.trace
    if t is not None:
        out["trace"] = {"dropped": t.dropped, "segments": [
            [p, *row] for p, row in zip(t.paths, zip(t.module.tolist(), t.op.tolist(), t.offset.tolist(),
                                                     t.length.tolist(), t.start_ns.tolist(), t.end_ns.tolist()))]}
    return out


def assert_same(c: Any, py: Any, where: str = "") -> None:
    """Equal values of equal types, keys in the same order; NaN equals NaN."""
    assert type(c) is type(py), f"{where}: {c!r} ({type(c).__name__}) != {py!r} ({type(py).__name__})"
    if isinstance(c, dict):
        assert list(c) == list(py), f"{where}: keys differ"
        for k in c:
            assert_same(c[k], py[k], f"{where}.{k}")
    elif isinstance(c, list):
        assert len(c) == len(py), f"{where}: lengths differ"
        for i, (a, b) in enumerate(zip(c, py)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(c, float) and math.isnan(c):
        assert math.isnan(py), where
    else:
        assert c == py, f"{where}: {c!r} != {py!r}"


def record(log: Log, module: str, suffix: str):
    found = [r for r in log.records if r.module == module and r.path.endswith(suffix)]
    assert len(found) == 1, f"{module} records ending in {suffix!r}: {[r.path for r in log.records]}"
    return found[0]


# --------------------------------------------------------------------------
# Building logs: split a log into regions and put it back with valid CRCs.


def split(data: bytes) -> tuple[dict[str, int], list[tuple[int, int, bytes]]]:
    major, minor, _hsize, nreg, flags, _fsize, toff = struct.unpack_from("<HHIIIQI", data, 8)
    regions = []
    for i in range(nreg):
        t, v, off, ln, _crc, _z = struct.unpack_from("<IIQQII", data, toff + 32 * i)
        regions.append((t, v, data[off : off + ln]))
    return {"major": major, "minor": minor, "flags": flags}, regions


def build(regions: list[tuple[int, int, bytes]], major: int = 1, minor: int = 0, flags: int = 0) -> bytes:
    pos = 64 + 32 * len(regions)
    table = bodies = b""
    for t, v, body in regions:
        table += struct.pack("<IIQQII", t, v, pos, len(body), zlib.crc32(body), 0)
        bodies += body
        pos += len(body)
    head = bytearray(64)
    head[:8] = b"SLUICELG"
    struct.pack_into("<HHIIIQI", head, 8, major, minor, 64, len(regions), flags, pos, 64)
    struct.pack_into("<I", head, 60, zlib.crc32(bytes(head[:60]) + table))
    return bytes(head) + table + bodies


def fix_checksums(data: bytes) -> bytes:
    """The header's size and every reachable CRC made to agree with the bytes."""
    d = bytearray(data)
    if len(d) < 64:
        return data
    struct.pack_into("<Q", d, 24, len(d))
    nreg, toff = struct.unpack_from("<I", d, 16)[0], struct.unpack_from("<I", d, 32)[0]
    if nreg > 64 or toff + 32 * nreg > len(d):
        return bytes(d)
    for i in range(nreg):
        e = toff + 32 * i
        off, ln = struct.unpack_from("<QQ", d, e + 8)
        if off <= len(d) and ln <= len(d) - off:
            struct.pack_into("<I", d, e + 24, zlib.crc32(bytes(d[off : off + ln])))
    struct.pack_into("<I", d, 60, zlib.crc32(bytes(d[:60]) + bytes(d[toff : toff + 32 * nreg])))
    return bytes(d)


def kv(key: bytes, value: bytes) -> bytes:
    return struct.pack("<H", len(key)) + key + struct.pack("<I", len(value)) + value


def with_strings(data: bytes, pairs: list[tuple[bytes, bytes]]) -> bytes:
    """The log with its PROCESS strings replaced."""
    hdr, regions = split(data)
    out = []
    for t, v, body in regions:
        if t == 1:
            body = body[:60] + struct.pack("<I", len(pairs)) + b"".join(kv(k, x) for k, x in pairs)
        out.append((t, v, body))
    return build(out, hdr["major"], hdr["minor"], hdr["flags"])


# --------------------------------------------------------------------------
# Checking that damaged logs are refused, cleanly, by both readers.


def assert_py_refuses(path: Path) -> str:
    try:
        read_log(path)
    except LogFormatError as e:
        msg = str(e)
        assert msg.startswith(f"{path}: ") and len(msg) > len(f"{path}: "), msg
        assert "\n" not in msg, msg
        return msg
    raise AssertionError(f"the Python reader accepted {path}")


def assert_c_refuses_all(paths: list[Path]) -> None:
    """One sluice-logdump run over many damaged logs: exit 1, nothing on
    stdout, one stderr line per log, in order, naming it."""
    for k in range(0, len(paths), 400):
        chunk = paths[k : k + 400]
        for mode in ([], ["--json"]):
            cp = logdump(*mode, *chunk)
            assert cp.returncode == 1, cp.stderr[-2000:]
            assert cp.stdout == b""
            lines = cp.stderr.decode().split("\n")
            assert lines[-1] == "" and len(lines) == len(chunk) + 1, cp.stderr[-2000:]
            for p, line in zip(chunk, lines):
                assert line.startswith(f"sluice-logdump: {p}: "), line
                assert len(line) > len(f"sluice-logdump: {p}: ")


def assert_c_refuses(path: Path) -> str:
    cp = logdump(path)
    assert cp.returncode == 1 and cp.stdout == b""
    err = cp.stderr.decode()
    assert err.count("\n") == 1 and err.endswith("\n") and err.startswith(f"sluice-logdump: {path}: "), err
    return err


# --------------------------------------------------------------------------
# The golden vectors


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_vector_readers_agree(name: str) -> None:
    path = VECTORS / f"{name}.sluice"
    (c,) = c_json(path)
    assert_same(c, py_json(read_log(path)), name)


def test_vectors_in_one_run() -> None:
    paths = [VECTORS / f"{n}.sluice" for n in VECTOR_NAMES]
    for c, p in zip(c_json(*paths), paths):
        assert_same(c, py_json(read_log(p)), p.name)


def test_vector_posix_stdio() -> None:
    log = read_log(VECTORS / "posix_stdio.sluice")
    assert log.version == (1, 0) and log.flags == 0 and log.end_reason == "exit"
    assert log.rank == -1 and log.nprocs == -1 and log.end_ns > log.start_ns
    assert log.info["job_id"] == "vectors" and log.info["version"] == "1.0" and log.info["mode"] == "profile"
    assert [m.name for m in log.modules.values()] == ["POSIX", "STDIO"]
    data = record(log, "POSIX", "/data.bin")
    for side in (data.app, data.fs):
        assert side["POSIX_OPENS"] == 2 and side["POSIX_WRITES"] == 10 and side["POSIX_READS"] == 5
        assert side["POSIX_BYTES_WRITTEN"] == 1000 and side["POSIX_BYTES_READ"] == 1000
        assert side["POSIX_MAX_BYTE_WRITTEN"] == 999 and side["POSIX_CONSEC_WRITES"] == 9
        assert side["POSIX_SIZE_WRITE_0_100"] == 10 and side["POSIX_RW_SWITCHES"] == 1
        assert side["POSIX_F_WRITE_TIME"] > 0.0 and isinstance(side["POSIX_F_WRITE_TIME"], float)
    weird = record(log, "STDIO", "/" + WEIRD_NAME)
    for side in (weird.app, weird.fs):
        assert side["STDIO_OPENS"] == 1 and side["STDIO_WRITES"] == 3 and side["STDIO_BYTES_WRITTEN"] == 18
    assert len(log.records) == 2


def test_vector_fork_parent() -> None:
    log = read_log(VECTORS / "fork_parent.sluice")
    assert log.end_reason == "exit" and log.pid != log.ppid
    rec = record(log, "POSIX", "/parent.dat")
    assert rec.app["POSIX_WRITES"] == 1 and rec.app["POSIX_READS"] == 1 and rec.app["POSIX_OPENS"] == 2
    assert rec.fs["POSIX_BYTES_WRITTEN"] == 4096 and rec.fs["POSIX_BYTES_READ"] == 4096
    # What the child did after the fork is in the child's log, not here.
    assert not [r for r in log.records if r.path.endswith("/child.dat")]


def test_vector_partial() -> None:
    log = read_log(VECTORS / "partial.sluice")
    assert log.partial and log.flags & 1
    other = record(log, "POSIX", "<other files>")
    assert other.flags == 1
    assert other.app["POSIX_OPENS"] == 2 and other.app["POSIX_BYTES_WRITTEN"] == 30 + 40
    for i, size in ((0, 10), (1, 20)):
        r = record(log, "POSIX", f"/f{i}")
        assert r.flags == 0 and r.fs["POSIX_BYTES_WRITTEN"] == size and r.fs["POSIX_WRITES"] == 1
    assert len(log.records) == 3
    (c,) = c_json(VECTORS / "partial.sluice")
    assert c["flags"] & 1


def test_vector_columns_buffer() -> None:
    """A 3.0 log of buffer mode, stored plain: records in columns (layout 1),
    names without ids, the fs side stored as its difference from the app
    side; both readers give the counters and the ids the runtime had."""
    from sluice.logfmt import record_ids

    path = VECTORS / "columns_buffer.sluice"
    head, regions = split(path.read_bytes())
    assert head["major"] == 3 and [(t, v) for t, v, _ in regions] == [(1, 1), (2, 1), (3, 2), (4, 1)]
    assert struct.unpack_from("<HHII", regions[3][2]) == (1, 1, 3, 256)   # POSIX, columns, 3 records, groups of 256
    log = read_log(path)
    assert log.version == (3, 0) and log.info["mode"] == "buffer" and [m.name for m in log.modules.values()] == ["POSIX"]
    small = record(log, "POSIX", "/small.dat")
    assert small.app["POSIX_WRITES"] == 200 and small.fs["POSIX_WRITES"] == 1
    assert small.app["POSIX_BYTES_WRITTEN"] == small.fs["POSIX_BYTES_WRITTEN"] == 2000
    assert small.app["POSIX_SIZE_WRITE_0_100"] == 200 and small.fs["POSIX_SIZE_WRITE_0_100"] == 0
    assert small.fs["POSIX_SIZE_WRITE_1K_10K"] == 1 and small.app["POSIX_MAX_BYTE_READ"] == -1
    assert 0 < small.app["POSIX_F_OPEN_START_TIMESTAMP"] < small.app["POSIX_F_CLOSE_END_TIMESTAMP"]
    for name in ("/a.dat", "/b.dat"):
        r = record(log, "POSIX", name)
        assert r.app["POSIX_WRITES"] == r.fs["POSIX_WRITES"] == 1 and r.fs["POSIX_BYTES_WRITTEN"] == 4096
    (c,) = c_json(path)
    assert_same(c, py_json(log))
    ids = [r["id"] for r in c["records"]]
    assert ids == [r.id for r in log.records] == record_ids(1, [r.path for r in log.records]).tolist()
    assert len(set(ids)) == 3


def columns_region(mid: int, values: list[list[int]], group: int, layout: int = 1, keep_zero: bool = False) -> bytes:
    """A MODULE region of layout 1 from each record's values (docs/logformat.md),
    encoded here independently of both readers: per group, the bitmap of
    the byte planes stored (all of them with keep_zero), then those planes."""
    body = struct.pack("<HHII", mid, layout, len(values), group)
    for first in range(0, len(values), group):
        g = values[first : first + group]
        nv = len(g[0])
        planes = [bytes(((v[k] % 2**64) >> (8 * b)) & 0xFF for v in g) for b in range(8) for k in range(nv)]
        stored = [keep_zero or any(p) for p in planes]
        bitmap = sum(1 << j for j, x in enumerate(stored) if x).to_bytes(nv, "little")
        body += bitmap + b"".join(p for p, x in zip(planes, stored) if x)
    return body


def test_columns_layout_read_exactly(tmp_path: Path) -> None:
    """Seven records in groups of 3 (the last one short), extreme integers,
    an fs side that differs and wraps, times in nanoseconds: both readers
    give exactly these counters; refused when the region is damaged."""
    base = read_log(VECTORS / "posix_stdio.sluice")
    posix = base.modules[1]
    ni, nf = len(posix.int_names), len(posix.float_names)
    _, regions = split((VECTORS / "posix_stdio.sluice").read_bytes())
    keep = [r for r in regions if r[0] in (1, 2)]
    paths = [f"/c/file{k}" for k in range(7)]
    names = struct.pack("<I", 7) + b"".join(struct.pack("<I", len(n)) + n.encode() for n in paths)
    ints = [0, 1, -1, 2**63 - 1, -(2**63), 10**15, -(10**18), 4096]
    want, values = [], []
    for k in range(7):
        app = [ints[(i + k) % len(ints)] for i in range(ni)]
        fs = [ints[(i + 2 * k + 1) % len(ints)] for i in range(ni)]
        tapp = [(i + 1) * 1_000_003 * (k + 1) for i in range(nf)]
        tfs = [t + (-7 if i % 2 else 123_456_789) for i, t in enumerate(tapp)]
        values.append([6 - k, k % 2] + app + [f - a for f, a in zip(fs, app)] + tapp
                      + [f - a for f, a in zip(tfs, tapp)])
        want.append((paths[6 - k], k % 2, app, fs, [t / 1e9 for t in tapp], [t / 1e9 for t in tfs]))
    for keep_zero in (False, True):   # zero planes left out, as the writer does, or stored: the same records
        p = tmp_path / f"columns{int(keep_zero)}.sluice"
        p.write_bytes(build(keep + [(3, 2, names), (4, 1, columns_region(1, values, 3, keep_zero=keep_zero))],
                            major=3))
        log = read_log(p)
        got = [(r.path, r.flags, [r.app[n] for n in posix.int_names], [r.fs[n] for n in posix.int_names],
                [r.app[n] for n in posix.float_names], [r.fs[n] for n in posix.float_names]) for r in log.records]
        assert got == want
        (c,) = c_json(p)
        assert_same(c, py_json(log))

    good = columns_region(1, values, 3)
    bad = {
        "group0": ((3, 2, names), (4, 1, good[:8] + struct.pack("<I", 0) + good[12:]), "records in groups of 0"),
        "layout": ((3, 2, names), (4, 1, columns_region(1, values, 3, layout=2)), "has an unknown layout (2)"),
        "index": ((3, 2, names), (4, 1, columns_region(1, [[7] + v[1:] for v in values], 3)), "record 0 has no name"),
        "cut": ((3, 2, names), (4, 1, good[:-1]), "POSIX region is truncated (7 records"),
        "no-bitmap": ((3, 2, names), (4, 1, good[:12]), "POSIX region is truncated (7 records"),
        # a million records of zero planes in one group, compressed: 1.7 GB
        # of counters announced by a log of a few kilobytes
        "bomb": ((3, 2, names), (5, 1, deflated(4, struct.pack("<HHII", 1, 1, 10**6, 10**6)
                                                + bytes(2 + 2 * ni + 2 * nf) + bytes(10**6))),
                 "more than a log of"),
        "names-v1": ((3, 1, struct.pack("<I", 7) + b"".join(struct.pack("<QI", k, len(n)) + n.encode()
                                                            for k, n in enumerate(paths))),
                     (4, 1, good), "record 0 has no name"),   # names with ids: not what columns refer to
        "names-cut": ((3, 2, struct.pack("<I", 8) + names[4:]), (4, 1, good),
                      "names region is truncated"),
    }
    for what, (nm, mod, phrase) in bad.items():
        q = tmp_path / f"{what}.sluice"
        q.write_bytes(build(keep + [nm, mod], major=3))
        assert phrase in assert_py_refuses(q), what
        assert phrase in assert_c_refuses(q), what
    # Before 3.0 the field was reserved: a 2.x log is read as rows whatever it
    # holds (here too few bytes for 7 rows).
    old = tmp_path / "old.sluice"
    old.write_bytes(build(keep + [(3, 2, names), (4, 1, columns_region(1, values, 3, layout=7))], major=2))
    assert "POSIX region is truncated (7 records announced)" in assert_py_refuses(old)
    assert "POSIX region is truncated (7 records announced)" in assert_c_refuses(old)


def test_text_form() -> None:
    path = VECTORS / "posix_stdio.sluice"
    cp = logdump(path)
    assert cp.returncode == 0 and cp.stderr == b""
    text = cp.stdout.decode("utf-8")
    assert text.startswith(f"# sluice log: {path}\n")
    assert "# end_reason: exit\n" in text and "# job_id: vectors\n" in text
    lines = [line.split("\t") for line in text.splitlines() if not line.startswith("#")]
    assert lines and all(len(f) == 5 for f in lines)
    values = {(m, side, p.rsplit("/", 1)[1], k): v for m, side, p, k, v in lines}
    assert values[("POSIX", "app", "data.bin", "POSIX_WRITES")] == "10"
    assert values[("POSIX", "fs", "data.bin", "POSIX_BYTES_WRITTEN")] == "1000"
    assert values[("POSIX", "app", "data.bin", "POSIX_MAX_BYTE_READ")] == "999"
    escaped = 'we\\tird "q" \\\\ \ufffd\ufffd \u00e9\\n.txt'
    assert values[("STDIO", "fs", escaped, "STDIO_BYTES_WRITTEN")] == "18"
    # Only non-zero counters, and every one of them.
    assert all(float(v) != 0 for *_, v in lines)
    log = read_log(path)
    nonzero = sum(1 for r in log.records for side in (r.app, r.fs) for v in side.values() if v != 0)
    assert len(lines) == nonzero


# --------------------------------------------------------------------------
# Fresh logs: a known sequence of calls gives exact counter values.

PROGRAM = r'''
import ctypes, os, sys
d = sys.argv[1]
fd = os.open(d + "/posix.dat", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
for _ in range(10):
    assert os.write(fd, b"a" * 100) == 100
os.close(fd)
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fwrite.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
libc.fwrite.restype = ctypes.c_size_t
libc.fclose.argtypes = [ctypes.c_void_p]
fp = libc.fopen((d + "/stdio.dat").encode(), b"w")
for _ in range(7):
    assert libc.fwrite(b"b" * 50, 1, 50, fp) == 50
assert libc.fclose(fp) == 0
'''


def run_traced(tmp_path: Path, code: str, extra: dict[str, str] | None = None) -> list[Path]:
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    preload = " ".join(p for p in [os.environ.get("SLUICE_PRELOAD_FIRST", ""), str(native("libsluice.so"))] if p)
    env = dict(os.environ, LD_PRELOAD=preload, SLUICE_LOG_DIR=str(logs), SLUICE_PATHS=str(work),
               SLUICE_JOB_ID="test-logfmt", **(extra or {}))
    cp = subprocess.run([sys.executable, "-c", code, str(work)], env=env, capture_output=True, timeout=120)
    assert cp.returncode == 0, cp.stderr.decode(errors="replace")
    return sorted(logs.glob("*.sluice"))


def test_fresh_log_exact_counts(tmp_path: Path) -> None:
    logs = [p for p in run_traced(tmp_path, PROGRAM) if read_log(p).records]
    assert len(logs) == 1, logs
    path = logs[0]
    log = read_log(path)
    (c,) = c_json(path)
    assert_same(c, py_json(log), path.name)
    assert c["end_reason"] == "exit" and c["info"]["job_id"] == "test-logfmt" and c["flags"] == 0
    assert c["pid"] == log.pid and log.pid > 0
    by_path = {(r["module"], r["path"]): r for r in c["records"]}
    posix = by_path[("POSIX", str(tmp_path / "work" / "posix.dat"))]
    stdio = by_path[("STDIO", str(tmp_path / "work" / "stdio.dat"))]
    for side in ("app", "fs"):
        p, s = posix[side], stdio[side]
        assert p["POSIX_OPENS"] == 1 and p["POSIX_WRITES"] == 10 and p["POSIX_BYTES_WRITTEN"] == 1000
        assert p["POSIX_READS"] == 0 and p["POSIX_BYTES_READ"] == 0 and p["POSIX_MAX_BYTE_READ"] == -1
        assert p["POSIX_MAX_BYTE_WRITTEN"] == 999 and p["POSIX_SIZE_WRITE_0_100"] == 10
        assert p["POSIX_CONSEC_WRITES"] == 9 and p["POSIX_SEQ_WRITES"] == 9
        assert p["POSIX_F_WRITE_TIME"] > 0 and type(p["POSIX_F_WRITE_TIME"]) is float
        # (the fs side: the C library's one write of its buffer at fclose)
        assert s["STDIO_OPENS"] == 1 and s["STDIO_WRITES"] == (7 if side == "app" else 1)
        assert s["STDIO_BYTES_WRITTEN"] == 350
        assert s["STDIO_MAX_BYTE_WRITTEN"] == 349 and s["STDIO_READS"] == 0
    # The two readers agree on the records of the log and nothing else is there.
    assert len(c["records"]) == 2


def test_fresh_partial_log(tmp_path: Path) -> None:
    code = 'import os, sys\nfor i in range(5):\n    open(f"{sys.argv[1]}/f{i}", "wb").close()\n'
    logs = [p for p in run_traced(tmp_path, code, {"SLUICE_MAX_RECORDS": "2"}) if read_log(p).records]
    assert len(logs) == 1
    log = read_log(logs[0])
    assert log.partial
    (c,) = c_json(logs[0])
    assert_same(c, py_json(log))
    other = [r for r in c["records"] if r["path"] == "<other files>"]
    assert len(other) == 1 and other[0]["flags"] == 1 and other[0]["app"]["POSIX_OPENS"] == 3


# --------------------------------------------------------------------------
# Damaged logs: refused by both readers, with one line naming the file.


def boundaries(data: bytes) -> set[int]:
    """Every place where one field or region of the layout meets the next."""
    _, _, _, nreg, _, _, toff = struct.unpack_from("<HHIIIQI", data, 8)
    cuts = {0, 1, 7, 8, 10, 12, 16, 20, 24, 32, 36, 59, 60, 63, 64}
    for i in range(nreg + 1):
        cuts |= {toff + 32 * i - 1, toff + 32 * i, toff + 32 * i + 1}
    for i in range(nreg):
        off, ln = struct.unpack_from("<QQ", data, toff + 32 * i + 8)
        cuts |= {off - 1, off, off + 1, off + ln - 1, off + ln}
    return {c for c in cuts if 0 <= c < len(data)}


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_truncated(tmp_path: Path, name: str) -> None:
    data = (VECTORS / f"{name}.sluice").read_bytes()
    rng = random.Random(f"truncate-{name}")
    cuts = sorted(boundaries(data) | {rng.randrange(len(data)) for _ in range(60)})
    paths = []
    for cut in cuts:
        p = tmp_path / f"cut{cut}.sluice"
        p.write_bytes(data[:cut])
        msg = assert_py_refuses(p)
        if cut < 64:
            assert "shorter than the header" in msg
        paths.append(p)
    assert_c_refuses_all(paths)
    # One at a time too: exit status 1, one line on stderr.
    for p in paths[:: max(1, len(paths) // 8)]:
        assert_c_refuses(p)


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_extended(tmp_path: Path, name: str) -> None:
    data = (VECTORS / f"{name}.sluice").read_bytes()
    paths = []
    for extra in (b"\0", b"x" * 100):
        p = tmp_path / f"ext{len(extra)}.sluice"
        p.write_bytes(data + extra)
        assert_py_refuses(p)
        paths.append(p)
    assert_c_refuses_all(paths)


def test_byte_flips(tmp_path: Path) -> None:
    """A few thousand seeded corruptions, all of them caught by a CRC, the
    magic, the version or the size checks."""
    rng = random.Random(1234)
    paths = []
    for k in range(3000):
        name = VECTOR_NAMES[k % len(VECTOR_NAMES)]
        b = bytearray((VECTORS / f"{name}.sluice").read_bytes())
        if k % 2:
            b[rng.randrange(len(b))] ^= rng.randrange(1, 256)  # one byte: always detected
        else:
            for pos in rng.sample(range(len(b)), rng.randrange(1, 4)):
                b[pos] ^= 1 << rng.randrange(8)
        p = tmp_path / f"flip{k}.sluice"
        p.write_bytes(bytes(b))
        assert_py_refuses(p)
        paths.append(p)
    assert_c_refuses_all(paths)


def test_messages(tmp_path: Path) -> None:
    data = (VECTORS / "posix_stdio.sluice").read_bytes()
    _, regions = split(data)
    cases = {
        "magic": (b"NOTSLUIC" + data[8:], "not a sluice log (bad magic)"),
        "short": (data[:10], "is shorter than the header"),
        "major": (build(regions, major=4), "log format version 4.0 is not supported (this reader reads 1.x to 3.x)"),
        "table": (data[:70], "region table is cut off"),
        "hcrc": (data[:40] + b"\1" + data[41:], "corrupt header (checksum mismatch)"),
        "size": (data[:-1], "truncated"),
        "rcrc": (data[:-1] + bytes([data[-1] ^ 1]), "checksum mismatch"),
        "noproc": (build([r for r in regions if r[0] != 1]), "no process region"),
        "noname": (build([r for r in regions if r[0] != 3]), "has no name"),
    }
    for what, (blob, phrase) in cases.items():
        p = tmp_path / f"{what}.sluice"
        p.write_bytes(blob)
        assert phrase in assert_py_refuses(p), what
        assert phrase in assert_c_refuses(p), what
    missing = tmp_path / "missing.sluice"
    assert "cannot read" in assert_py_refuses(missing)
    assert "cannot read: No such file or directory" in assert_c_refuses(missing)
    assert "cannot read" in assert_c_refuses(tmp_path)  # a directory


# --------------------------------------------------------------------------
# Accepted logs: the same reading from both readers, whatever the bytes.


def test_versioning(tmp_path: Path) -> None:
    """A newer minor version, with a region type and a module this reader
    does not know and fields appended to every region, reads the same; so do
    the regions in another order."""
    data = (VECTORS / "posix_stdio.sluice").read_bytes()
    _, regions = split(data)
    proc, schema, names, mods = ([r for r in regions if r[0] == t] for t in (1, 2, 3, 4))
    base = read_log(VECTORS / "posix_stdio.sluice")
    cases = {
        "newer": build([(t, v, b + b"\0" * 5) for t, v, b in regions]
                       + [(42, 1, b"future"), (4, 1, struct.pack("<HHI", 9, 0, 1) + b"\0" * 64)], minor=7),
        "reordered": build(mods[::-1] + names + schema + proc),
    }
    for what, blob in cases.items():
        p = tmp_path / f"{what}.sluice"
        p.write_bytes(blob)
        log = read_log(p)
        (c,) = c_json(p)
        assert_same(c, py_json(log), what)
        got = sorted((r.module, r.path, sorted(r.app.items()), sorted(r.fs.items())) for r in log.records)
        want = sorted((r.module, r.path, sorted(r.app.items()), sorted(r.fs.items())) for r in base.records)
        assert got == want, what
        assert log.info == base.info and log.pid == base.pid
    assert read_log(tmp_path / "newer.sluice").version == (1, 7)
    assert [r.module for r in read_log(tmp_path / "reordered.sluice").records] == ["STDIO", "POSIX"]


def test_counters_mapped_by_name(tmp_path: Path) -> None:
    """A schema listing POSIX's integer counters in reverse order, with the
    values stored in that order, gives the same counters."""
    data = (VECTORS / "posix_stdio.sluice").read_bytes()
    _, regions = split(data)
    proc, names = [r for r in regions if r[0] == 1], [r for r in regions if r[0] == 3]
    base = read_log(VECTORS / "posix_stdio.sluice")
    posix = base.modules[1]
    inames, fnames = posix.int_names[::-1], posix.float_names
    ent = struct.pack("<HHH", posix.id, posix.version, len(posix.name)) + posix.name.encode()
    ent += struct.pack("<HH", len(inames), len(fnames))
    ent += b"".join(struct.pack("<H", len(n)) + n.encode() for n in inames + fnames)
    r = record(base, "POSIX", "/data.bin")
    body = struct.pack("<HHI", posix.id, 0, 1) + struct.pack("<QII", r.id, r.flags, 0)
    body += struct.pack(f"<{2 * len(inames)}q", *[r.app[n] for n in inames], *[r.fs[n] for n in inames])
    body += struct.pack(f"<{2 * len(fnames)}d", *[r.app[n] for n in fnames], *[r.fs[n] for n in fnames])
    p = tmp_path / "reversed.sluice"
    p.write_bytes(build(proc + [(2, 1, struct.pack("<I", 1) + ent)] + names + [(4, 1, body)]))
    log = read_log(p)
    (c,) = c_json(p)
    assert_same(c, py_json(log))
    (rec,) = c["records"]
    assert rec["app"] == r.app and rec["fs"] == r.fs
    assert list(rec["app"])[0] == "POSIX_FALLBACKS"


FLOATS = [0.0, -0.0, 2.0, -3.0, 0.1, 1 / 3, 1e16, 1e-7, 123456789012345678.0, 5e-324, 2.2250738585072014e-308,
          1.7976931348623157e308, -1.5e-300, 4.35, 0.30000000000000004, math.inf, -math.inf, math.nan]


def test_float_values(tmp_path: Path) -> None:
    """Float counters read back as the same doubles (and stay floats), the
    integer counters as the same integers, including the extremes."""
    data = (VECTORS / "posix_stdio.sluice").read_bytes()
    _, regions = split(data)
    base = read_log(VECTORS / "posix_stdio.sluice")
    posix = base.modules[1]
    ni, nf = len(posix.int_names), len(posix.float_names)
    r = record(base, "POSIX", "/data.bin")
    ints = [0, 1, -1, 2**63 - 1, -(2**63), 10**15, -(10**18)]
    body = struct.pack("<HHI", posix.id, 0, 3)
    for k in range(3):
        iv = [ints[(i + k) % len(ints)] for i in range(2 * ni)]
        fv = [FLOATS[(i + 5 * k) % len(FLOATS)] for i in range(2 * nf)]
        body += struct.pack("<QII", r.id, k, 0) + struct.pack(f"<{2 * ni}q", *iv) + struct.pack(f"<{2 * nf}d", *fv)
    p = tmp_path / "floats.sluice"
    p.write_bytes(build([x for x in regions if x[0] != 4] + [(4, 1, body)]))
    log = read_log(p)
    (c,) = c_json(p)
    assert_same(c, py_json(log))
    seen = {struct.pack("<d", v) for rec in c["records"] for side in ("app", "fs")
            for k, v in rec[side].items() if k.startswith("POSIX_F_")}
    assert seen == {struct.pack("<d", v) for v in FLOATS}  # -0.0 and 0.0 told apart, NaN kept


@pytest.mark.parametrize("compress", ["1", "0"])
def test_large_log(tmp_path: Path, compress: str) -> None:
    """A log of thousands of records (ten groups) reads the same with both
    readers, compressed (under 40 bytes a record) or plain (SLUICE_LOG_COMPRESS=0)."""
    code = 'import os, sys\nfor i in range(2500):\n    open(f"{sys.argv[1]}/f{i}", "wb").close()\n'
    logs = [p for p in run_traced(tmp_path, code, {"SLUICE_LOG_COMPRESS": compress}) if read_log(p).records]
    assert len(logs) == 1
    size = logs[0].stat().st_size
    # compressed: about 20 bytes a record; plain, the zero planes are left out all the same
    assert size < 2500 * 40 if compress == "1" else 2500 * 40 < size < 2500 * 200
    data = logs[0].read_bytes()
    types = [struct.unpack_from("<I", data, 64 + 32 * i)[0] for i in range(struct.unpack_from("<I", data, 16)[0])]
    assert types == ([1, 5, 5] + [5] * (len(types) - 3) if compress == "1" else [1, 2, 3] + [4] * (len(types) - 3))
    log = read_log(logs[0])
    assert len(log.records) == 2500 and not log.partial
    (c,) = c_json(logs[0])
    assert_same(c, py_json(log))
    cp = logdump(logs[0])
    assert cp.returncode == 0
    assert cp.stdout.count(b"\tPOSIX_OPENS\t1\n") == 2 * 2500


TRICKY = [
    b"", b"plain", b"\xff", b"\xfe\xff", b"\xc0\xaf", b"\xc2", b"\xc2\x41", b"\xe0\x80\x80", b"\xe0\xa0",
    b"\xe0\xa0\x80", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xef\xbf\xbd", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80",
    b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80", b"\x80\x80", b"a\x00b",
    b"\x01\x1f\x7f\"\\/\n\r\t\b\f", "\u2028\u00e9\U0001f600".encode(), b"\xe2\x82", b"\xe2\x82\xac",
]


def test_strings_decoded_like_python(tmp_path: Path) -> None:
    """Info keys and values of arbitrary bytes: sluice-logdump decodes them
    as bytes.decode('utf-8', 'replace') does, and escapes them for JSON;
    repeated keys keep their first place and their last value."""
    data = (VECTORS / "posix_stdio.sluice").read_bytes()
    rng = random.Random(99)
    paths = []
    for k in range(40):
        pairs = [(b"k%d" % i + rng.choice(TRICKY), rng.choice(TRICKY) + bytes(rng.randrange(256) for _ in range(
            rng.randrange(12))) + rng.choice(TRICKY)) for i in range(30)]
        rng.shuffle(pairs)
        pairs[3:3] = [(b"dup", b"first"), (b"\xff", b"x")]
        pairs += [(b"\xfe", b"y"), (b"dup", b"last")]
        p = tmp_path / f"strings{k}.sluice"
        p.write_bytes(with_strings(data, pairs))
        paths.append(p)
    for c, p in zip(c_json(*paths), paths):
        assert_same(c, py_json(read_log(p)), p.name)
    log = read_log(paths[0])
    assert log.info["dup"] == "last" and log.info["\ufffd"] == "y"


def mutations(seed: int, count: int) -> list[bytes]:
    """Logs with bytes changed inside their regions and the CRCs and size
    made valid again: they reach the region parsers."""
    rng = random.Random(seed)
    blobs = [(VECTORS / f"{n}.sluice").read_bytes() for n in VECTOR_NAMES]
    blobs += [p.read_bytes() for p in sorted(CORPUS.glob("gen-*")) if p.stat().st_size < 16384]
    out = []
    for _ in range(count):
        b = bytearray(rng.choice(blobs))
        for _ in range(rng.randrange(1, 4)):
            pos = rng.randrange(len(b) + 1)
            choice = rng.random()
            if choice < 0.5:
                b[pos : pos + 1] = bytes([rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF, rng.randrange(256)])])
            elif choice < 0.7:
                del b[pos : pos + rng.randrange(1, 9)]
            elif choice < 0.85:
                b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
            else:
                b[pos : pos + 4] = struct.pack("<I", rng.choice([0, 1, 0xFFFF, 0x10000, 0xFFFFFFFF]))
        out.append(fix_checksums(bytes(b)))
    return out


def test_readers_agree_on_mutated_logs(tmp_path: Path) -> None:
    """Both readers accept exactly the same logs, and read them the same."""
    accepted, refused = [], []
    for k, blob in enumerate(mutations(7, 2500)):
        p = tmp_path / f"m{k}.sluice"
        p.write_bytes(blob)
        try:
            accepted.append((p, py_json(read_log(p))))
        except LogFormatError as e:
            assert str(e).startswith(f"{p}: ") and "\n" not in str(e)
            refused.append(p)
    assert len(accepted) > 100 and len(refused) > 100  # both kinds are exercised
    assert_c_refuses_all(refused)
    for k in range(0, len(accepted), 400):
        chunk = accepted[k : k + 400]
        for c, (p, py) in zip(c_json(*[p for p, _ in chunk]), chunk):
            assert_same(c, py, p.name)


def test_corpus_files(tmp_path: Path) -> None:
    """The seed corpus: whatever each file is, both readers agree on it."""
    files = sorted(p for p in CORPUS.iterdir() if p.is_file())
    assert len(files) > 20
    for p in files:
        try:
            py = py_json(read_log(p))
        except LogFormatError as e:
            assert "\n" not in str(e)
            assert_c_refuses(p)
            continue
        (c,) = c_json(p)
        assert_same(c, py, p.name)


# --------------------------------------------------------------------------
# The command line


def test_usage() -> None:
    assert logdump().returncode == 2
    assert logdump("--bogus", VECTORS / "partial.sluice").returncode == 2
    cp = logdump("--help")
    assert cp.returncode == 0 and b"usage" in cp.stdout


def test_good_and_bad_logs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sluice"
    bad.write_bytes(b"garbage")
    good = VECTORS / "partial.sluice"
    cp = logdump("--json", good, bad, good)
    assert cp.returncode == 1
    assert cp.stderr.decode() == f"sluice-logdump: {bad}: not a sluice log: 7 bytes is shorter than the header\n"
    lines = cp.stdout.decode().splitlines()
    assert len(lines) == 2 and json.loads(lines[0]) == json.loads(lines[1])
    cp = logdump("--", good)
    assert cp.returncode == 0 and cp.stdout.startswith(b"# sluice log: ")


# --------------------------------------------------------------------------
# Compressed regions (format 2.0): both readers inflate them the same way
# and refuse the same damaged ones.


def deflated(rtype: int, body: bytes, raw: int | None = None, stream: bytes | None = None) -> bytes:
    """A DEFLATE region's bytes holding a region of `rtype`."""
    stream = zlib.compress(body) if stream is None else stream
    return struct.pack("<IIQ", rtype, 0, len(body) if raw is None else raw) + stream


def test_compressed_regions_read_as_plain(tmp_path: Path) -> None:
    """Every region of a golden log stored compressed (PROCESS included, a
    region of an unknown type holding nothing too) reads as the plain log."""
    for name in VECTOR_NAMES:
        head, regions = split((VECTORS / f"{name}.sluice").read_bytes())
        blob = build([(5, v, deflated(t, b)) for t, v, b in regions] + [(5, 1, deflated(42, b""))],
                     major=max(2, head["major"]), flags=head["flags"])
        p = tmp_path / f"{name}.sluice"
        p.write_bytes(blob)
        want = py_json(read_log(VECTORS / f"{name}.sluice"))
        got = py_json(read_log(p))
        assert {**got, "path": "", "version": ""} == {**want, "path": "", "version": ""}
        (c,) = c_json(p)
        assert_same(c, got, name)


def test_compressed_regions_refused(tmp_path: Path) -> None:
    data = (VECTORS / "posix_stdio.sluice").read_bytes()
    _, regions = split(data)
    names = next(b for t, _, b in regions if t == 3)
    z = zlib.compress(names)
    gz = zlib.compressobj(wbits=31)
    raw = zlib.compressobj(wbits=-15)
    with_dict = zlib.compressobj(zdict=b"sluice")
    bad_byte = z[:len(z) // 2] + bytes([z[len(z) // 2] ^ 0x55]) + z[len(z) // 2 + 1:]
    cases = {
        "short": (b"\3\0\0\0\0\0\0\0", "compressed region 2 is truncated"),
        "nested": (deflated(5, names), "bad compressed data"),
        "too-long": (deflated(3, names, raw=len(names) + 1), "bad compressed data"),
        "too-short": (deflated(3, names, raw=len(names) - 1), "bad compressed data"),
        "ratio": (deflated(3, names, raw=1032 * (len(z) + 1)), "bad compressed data"),
        "huge": (deflated(3, names, raw=0xFFFFFFFF), "bad compressed data"),
        "trailing": (deflated(3, names, stream=z + b"\0"), "bad compressed data"),
        "cut": (deflated(3, names, stream=z[:-5]), "bad compressed data"),
        "flipped": (deflated(3, names, stream=bad_byte), "bad compressed data"),
        "adler": (deflated(3, names, stream=z[:-1] + bytes([z[-1] ^ 1])), "bad compressed data"),
        "gzip": (deflated(3, names, stream=gz.compress(names) + gz.flush()), "bad compressed data"),
        "raw-deflate": (deflated(3, names, stream=raw.compress(names) + raw.flush()), "bad compressed data"),
        "dictionary": (deflated(3, names, stream=with_dict.compress(names) + with_dict.flush()),
                       "bad compressed data"),
        "empty": (deflated(3, names, stream=b""), "bad compressed data"),
    }
    paths = []
    for what, (region, phrase) in cases.items():
        p = tmp_path / f"{what}.sluice"
        p.write_bytes(build([(5, v, region) if t == 3 else (t, v, b) for t, v, b in regions], major=2))
        assert phrase in assert_py_refuses(p), what
        assert phrase in assert_c_refuses(p), what
        paths.append(p)
    assert_c_refuses_all(paths)
    # the name-less records of a log whose compressed NAMES region is skipped
    p = tmp_path / "unknown-inside.sluice"
    p.write_bytes(build([(5, v, deflated(42, b)) if t == 3 else (t, v, b) for t, v, b in regions], major=2))
    assert "has no name" in assert_py_refuses(p) and "has no name" in assert_c_refuses(p)


ACCESS_PATTERN = {   # tests/progs/access_pattern.c, app and fs side alike (profile mode)
    "POSIX_WRITES": 19, "POSIX_READS": 2, "POSIX_MEM_NOT_ALIGNED": 6, "POSIX_MEM_ALIGNMENT": 8,
    "POSIX_ACCESS1_ACCESS": 1000, "POSIX_ACCESS1_COUNT": 12, "POSIX_ACCESS2_ACCESS": 300, "POSIX_ACCESS2_COUNT": 6,
    "POSIX_ACCESS3_ACCESS": 4096, "POSIX_ACCESS3_COUNT": 3, "POSIX_ACCESS4_ACCESS": 0, "POSIX_ACCESS4_COUNT": 0,
    "POSIX_STRIDE1_STRIDE": 500, "POSIX_STRIDE1_COUNT": 10, "POSIX_STRIDE2_STRIDE": 100, "POSIX_STRIDE2_COUNT": 5,
    "POSIX_STRIDE3_STRIDE": 17700, "POSIX_STRIDE3_COUNT": 1, "POSIX_STRIDE4_STRIDE": 5500, "POSIX_STRIDE4_COUNT": 1,
}


def _not_aligned(block: int) -> int:
    """access_pattern's accesses whose offset is not a multiple of the block size."""
    offs = [i * 1500 for i in range(10)] + [20000 + i * 400 for i in range(6)] + \
        [40000 + i * 4096 for i in range(3)] + [0, 1500]
    return sum(1 for o in offs if o % block)


def test_access_pattern_counters_in_the_log_the_report_and_the_darshan_export(tmp_path: Path) -> None:
    from conftest import bin_path, sluice

    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    sluice("run", "--log-dir", str(logs), "--path", str(work), "--", bin_path("access_pattern"), str(work))
    (log,) = [read_log(p) for p in logs.glob("*.sluice")]
    (rec,) = [r for r in log.records if r.path == str(work / "pattern.bin")]
    block = os.statvfs(work).f_bsize
    for side in (rec.app, rec.fs):
        assert {k: side[k] for k in ACCESS_PATTERN} == ACCESS_PATTERN
        assert side["POSIX_FILE_ALIGNMENT"] == block and side["POSIX_FILE_NOT_ALIGNED"] == _not_aligned(block)
        assert side["POSIX_MAX_WRITE_TIME_SIZE"] in (1000, 300, 4096) and side["POSIX_MAX_READ_TIME_SIZE"] == 1000
        assert side["POSIX_F_MAX_WRITE_TIME"] > 0 and side["POSIX_F_MAX_WRITE_TIME"] <= side["POSIX_F_WRITE_TIME"]
    # the log names the mount the file is under, with its type
    mounts = [line.split("\t") for line in log.info["mounts"].splitlines()]
    point = max((p for _, p in mounts if str(work).startswith(p.rstrip("/") + "/")), key=len)
    with open("/proc/self/mountinfo") as f:
        types = {line.split()[4]: line.split(" - ")[1].split()[0] for line in f}
    assert dict((p, t) for t, p in mounts)[point] == types[point]
    # the report: the pattern table and the mounts in the JSON
    text = sluice("report", "--top", "3", str(logs)).stdout
    assert "1,000 x 12, 300 x 6, 4,096 x 3" in " ".join(text.split()) or "1,000 x 12" in text
    j = json.loads(sluice("report", "--json", str(logs)).stdout)
    from sluice.report.model import OP_COUNTERS

    ops = sum(int(rec.app.get(k, 0)) for k in OP_COUNTERS)
    moved = {f"{side}_{k}": v for side in ("app", "fs") for k, v in (("bytes_read", 2000), ("bytes_written", 24088),
                                                                     ("ops", ops))}
    assert {"point": point, "type": types[point], "files": 1, **moved} in j["mounts"]
    sluice("report", "--html", str(tmp_path / "r.html"), str(logs))
    assert "<td>1,000 x 12, 300 x 6, 4,096 x 3</td><td>500 x 10, 100 x 5, 17,700 x 1, 5,500 x 1</td>" in \
        (tmp_path / "r.html").read_text()
    # the Darshan export, read by PyDarshan: the same counters and the mount in its table
    darshan = pytest.importorskip("darshan")
    out = tmp_path / "out"
    sluice("export", "--darshan", "-o", str(out), str(logs))
    (app,) = [p for p in out.glob("*.darshan") if not p.name.endswith(".fs.darshan")]
    rep = darshan.DarshanReport(str(app), read_all=True)
    df = rep.records["POSIX"].to_df()["counters"]
    (row,) = df[df["id"] == rep.records["POSIX"][0]["id"]].to_dict("records") if len(df) == 1 else [
        r for r in df.to_dict("records") if rep.name_records[r["id"]] == str(work / "pattern.bin")]
    assert {k: row[k] for k in ACCESS_PATTERN} == ACCESS_PATTERN
    assert row["POSIX_FILE_NOT_ALIGNED"] == _not_aligned(block) and row["POSIX_FILE_ALIGNMENT"] == block
    assert (point, types[point]) in [(str(m[0]), str(m[1])) for m in rep.mounts]


def test_common_values_and_slowest_sizes_merge_as_darshan_reduces() -> None:
    """Records of one file in several processes: the report's array merge
    equals the dict merge, which keeps the four most frequent values of the
    lists (counts of a value added; ties to the larger value) and the size
    of the slowest call."""
    import numpy as np

    from sluice.logfmt import Module, RecordBlock, Records
    from sluice.report.model import merge, merge_counters, top_four

    assert top_four([(500, 3), (100, 5), (500, 4), (0, 9), (7, 1)]) == [(500, 7), (100, 5), (7, 1), (0, 0)]
    assert top_four([(9, 2), (8, 2), (10, 2), (11, 2), (12, 1)]) == [(11, 2), (10, 2), (9, 2), (8, 2)]
    ints = [f"POSIX_ACCESS{i}_ACCESS" for i in range(1, 5)] + [f"POSIX_ACCESS{i}_COUNT" for i in range(1, 5)] + \
        ["POSIX_WRITES", "POSIX_MAX_WRITE_TIME_SIZE", "POSIX_FILE_ALIGNMENT"]
    mod = Module(1, 1, "POSIX", ints, ["POSIX_F_MAX_WRITE_TIME", "POSIX_F_WRITE_TIME"])
    rng = random.Random(14)

    def counters() -> list[int]:
        vals = rng.sample([64, 100, 512, 4096, 65536, 7], 4)
        cnts = sorted((rng.randrange(0, 4) for _ in range(4)), reverse=True)
        vals = [v if c else 0 for v, c in zip(vals, cnts)]
        return vals + cnts + [sum(cnts), rng.choice(vals) or 1, 4096]

    paths = ["/d/a", "/d/b", "/d/c"]
    for as_arrays in (True, False):
        logs, ref = [], {}
        for n in range(7):
            recs = [(rng.choice(paths), counters(), [rng.choice([0.5, 0.25, 1.0, 2.0]), 3.0]) for _ in range(4)]
            k = len(recs)
            iv = np.array([[c, c] for _, c, _ in recs], dtype=np.int64).reshape(k, 2, len(ints))
            fv = np.array([[f, f] for _, _, f in recs], dtype=np.float64).reshape(k, 2, 2)
            b = RecordBlock(mod, np.arange(k, dtype=np.uint64), np.zeros(k, dtype=np.uint32), iv, fv,
                            [p for p, _, _ in recs])
            log = Log(Path(f"/logs/{n}.sluice"), (2, 0), 0, 100 + n, 1, -1, -1, 10**18 + n, 10**18 + 10**9, "exit",
                      {"job_id": "j", "host": "h"}, {1: mod})
            log.records = Records([b]) if as_arrays else b.records()
            logs.append(log)
            for r in b.records():
                merge_counters(ref.setdefault(r.path, {}), r.app)
        job = merge("j", logs)
        for f in job.files:
            assert dict(f.app) == ref[f.path], f.path
            assert f.app["POSIX_FILE_ALIGNMENT"] == 4096
            assert sum(f.app[f"POSIX_ACCESS{i}_COUNT"] for i in range(1, 5)) <= f.app["POSIX_WRITES"]
