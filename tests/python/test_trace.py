"""The per-call trace (`sluice run --trace N`, SLUICE_TRACE; docs/darshan.md,
"DXT"): the first N reads and writes of each process with their file,
offset, length and times, in the log's TRACE region (both readers read it
alike and refuse a damaged one), exported as Darshan's DXT_POSIX and
DXT_MPIIO modules that PyDarshan reads."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from conftest import bin_path, sluice
from test_logfmt import assert_c_refuses, assert_py_refuses, assert_same, build, c_json, py_json, split

from sluice.logfmt import read_log

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}

# tests/progs/access_pattern.c: positional writes, then two reads, each (offset, length)
WRITES = [(i * 1500, 1000) for i in range(10)] + [(20000 + i * 400, 300) for i in range(6)] + \
    [(40000 + i * 4096, 4096) for i in range(3)]
READS = [(0, 1000), (1500, 1000)]


def _python_traced(tmp_path: Path, body: str) -> Path:
    """A Python program (os and sys imported, its directory in sys.argv[1])
    run under `sluice run --trace 100`: its one log."""
    import sys
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    sluice("run", "--trace", "100", "--log-dir", str(logs), "--path", str(work), "--", sys.executable, "-c",
           "import os, sys\n" + body, str(work))
    (path,) = sorted(logs.glob("*.sluice"))
    return path


def _traced(tmp_path: Path, *run: str) -> list[Path]:
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    sluice("run", "--log-dir", str(logs), "--path", str(work), *run, "--", str(bin_path("access_pattern")), str(work))
    return sorted(logs.glob("*.sluice"))


def test_first_calls_kept_the_rest_counted(tmp_path):
    (path,) = _traced(tmp_path, "--trace", "20")
    log = read_log(path)
    t = log.trace
    # its open (op 2), 19 writes (op 1) and 2 reads (op 0), its close (op 3): 23 calls, 20 kept
    assert log.version == (3, 1) and t is not None and len(t) == 20 and t.dropped == 3
    calls = [(2, -1, 0)] + [(1, off, n) for off, n in WRITES] + [(0, off, n) for off, n in READS] + [(3, -1, 0)]
    assert list(zip(t.op.tolist(), t.offset.tolist(), t.length.tolist())) == calls[:20]   # in call order
    assert set(t.paths) == {str(tmp_path / "work" / "pattern.bin")} and set(t.module.tolist()) == {1}
    starts, ends = t.start_ns.tolist(), t.end_ns.tolist()
    assert all(0 < s <= e for s, e in zip(starts, ends)) and starts == sorted(starts)
    assert ends[-1] <= log.end_ns - log.start_ns
    (c,) = c_json(path)
    assert_same(c, py_json(log))
    assert c["trace"]["dropped"] == 3 and c["trace"]["segments"][1][:5] == [str(tmp_path / "work" / "pattern.bin"),
                                                                            1, 1, 0, 1000]


def test_no_trace_unless_asked(tmp_path):
    (path,) = _traced(tmp_path)
    log = read_log(path)
    assert log.trace is None
    assert 6 not in [t for t, _, _ in split(path.read_bytes())[1]]     # no TRACE region, no DEFLATE holding one
    assert "trace" not in c_json(path)[0]


def test_damaged_trace_refused_alike(tmp_path):
    (path,) = _traced(tmp_path, "--trace", "5")
    head, regions = split(path.read_bytes())
    assert head["major"] == 3 and head["minor"] == 1
    plain = []
    for t, v, body in regions:          # the regions as stored, uncompressed
        if t == 5:
            t, body = struct.unpack_from("<I", body)[0], zlib.decompress(body[16:])
        plain.append((t, v, body))
    trace = next(b for t, _, b in plain if t == 6)
    n = struct.unpack_from("<Q", trace)[0]
    assert n == 5
    bad_index = bytearray(trace)
    struct.pack_into("<I", bad_index, 16 + 4 * 2, 999)
    cases = {
        "short": (trace[:10], "trace region is truncated"),
        "count": (struct.pack("<Q", n + 1) + trace[8:], "trace region is truncated (6 segments announced)"),
        "index": (bytes(bad_index), "trace segment 2 names an entry NAMES does not have"),
    }
    for what, (body, phrase) in cases.items():
        p = tmp_path / f"{what}.sluice"
        p.write_bytes(build([(t, v, body if t == 6 else b) for t, v, b in plain], major=3, minor=1))
        assert phrase in assert_py_refuses(p), what
        assert phrase in assert_c_refuses(p), what


def test_dxt_export_read_by_pydarshan(tmp_path):
    darshan = pytest.importorskip("darshan")
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    sluice("run", "--trace", "1000", "--log-dir", str(logs), "--path", str(work), "--", "mpirun", "--oversubscribe",
           "-np", "2", str(bin_path("mpiio_known")), str(work), env=MPI_ENV)
    sluice("run", "--trace", "1000", "--log-dir", str(tmp_path / "l2"), "--path", str(work), "--",
           str(bin_path("access_pattern")), str(work))
    # MPI-IO: each rank's calls, in both the MPI-IO and the POSIX trace
    sluice("export", "--darshan", "-o", str(tmp_path / "d"), str(logs))
    (app,) = [p for p in (tmp_path / "d").glob("*.darshan") if not p.name.endswith(".fs.darshan")]
    rep = darshan.DarshanReport(str(app), read_all=True)
    assert {"DXT_POSIX", "DXT_MPIIO"} <= set(rep.records)
    mpi = {d["rank"]: d for d in rep.records["DXT_MPIIO"].to_df()}
    assert sorted(mpi) == [0, 1]
    ours = {read_log(p).rank: read_log(p) for p in logs.glob("*.sluice")}
    for rank, d in mpi.items():
        t = ours[rank].trace
        mine = (t.module == 3)
        assert d["write_count"] == int((t.op[mine] == 1).sum()) and d["read_count"] == int((t.op[mine] == 0).sum())
        assert list(d["write_segments"]["length"]) == t.length[mine & (t.op == 1)].tolist()
        assert rep.name_records[d["id"]] == str(work / "known.dat") and d["hostname"] == ours[rank].info["host"]
    # POSIX: the access pattern's offsets and lengths, writes then reads
    sluice("export", "--darshan", "-o", str(tmp_path / "d2"), str(tmp_path / "l2"))
    (app,) = [p for p in (tmp_path / "d2").glob("*.darshan") if not p.name.endswith(".fs.darshan")]
    (d,) = darshan.DarshanReport(str(app), read_all=True).records["DXT_POSIX"].to_df()
    w, r = d["write_segments"], d["read_segments"]
    assert list(zip(w["offset"], w["length"])) == WRITES and list(zip(r["offset"], r["length"])) == READS
    assert (w["start_time"] <= w["end_time"]).all() and w["start_time"].is_monotonic_increasing
    assert 0 < w["start_time"].iloc[0] < r["end_time"].iloc[-1]


def test_log_written_again_after_a_failed_exec(tmp_path):
    """A process whose exec fails writes its log at the exec and again at
    exit (the second replaces the first): the trace of the second holds
    every call, both readers read it alike."""
    path = _python_traced(tmp_path, "fd = os.open(sys.argv[1] + '/a', os.O_CREAT | os.O_WRONLY, 0o644)\n"
                                    "os.write(fd, b'x' * 10)\ntry:\n    os.execv('/nonexistent/prog', ['x'])\n"
                                    "except OSError:\n    pass\nos.write(fd, b'y' * 20)\nos.close(fd)\n")
    t = read_log(path).trace
    assert list(zip(t.module.tolist(), t.op.tolist(), t.offset.tolist(), t.length.tolist())) == [
        (1, 2, -1, 0), (1, 1, 0, 10), (1, 1, 10, 20), (1, 3, -1, 0)]   # open, two writes, close
    assert t.dropped == 0
    (c,) = c_json(path)
    assert_same(c, py_json(read_log(path)))


def test_trace_too_large_is_reported_and_counters_kept(tmp_path):
    """A cap no memory can hold: one line says so, and the process is still
    profiled (its counters in the log, no trace)."""
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    cp = sluice("run", "--trace", "9000000000000000000", "--log-dir", str(logs), "--path", str(work), "--",
                str(bin_path("access_pattern")), str(work))
    assert "SLUICE_TRACE=9000000000000000000: no memory for that many calls; no trace is kept" in cp.stderr
    (path,) = sorted(logs.glob("*.sluice"))
    log = read_log(path)
    assert log.trace is None
    (r,) = [r for r in log.records if r.path.endswith("pattern.bin")]
    assert r.app["POSIX_WRITES"] == len(WRITES) and r.app["POSIX_READS"] == len(READS)


def test_opens_closes_truncates_and_syncs_are_placed_among_the_calls(tmp_path):
    """What a replay of the calls needs (sluice predict): each open, close,
    ftruncate (its size) and fsync where the program made it; a read-only
    file's too."""
    path = _python_traced(tmp_path, "fd = os.open(sys.argv[1] + '/a', os.O_CREAT | os.O_RDWR, 0o644)\n"
                                    "os.write(fd, b'x' * 10)\nos.fsync(fd)\nos.ftruncate(fd, 5)\nos.close(fd)\n"
                                    "fd = os.open(sys.argv[1] + '/a', os.O_RDONLY)\nos.read(fd, 100)\nos.close(fd)\n")
    t = read_log(path).trace
    assert list(zip(t.op.tolist(), t.offset.tolist(), t.length.tolist())) == [
        (2, -1, 0), (1, 0, 10), (5, -1, 0), (4, -1, 5), (3, -1, 0), (2, -1, 0), (0, 0, 5), (3, -1, 0)]
    (c,) = c_json(path)
    assert_same(c, py_json(read_log(path)))


def test_stream_calls_are_traced_with_their_flushes(tmp_path):
    """The stdio calls too (module 2), with each fflush (op 5) where the
    program made it: what a stream's kernel writes under a larger buffer
    depend on (sluice predict). stdio_mix's big.bin: fwrite of 100, 10,000
    and fputs of 5 bytes, fflush, 300 fputc, fwrite of 5,000, fclose; then
    read back with a seek to 7,000 and read to the end."""
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    sluice("run", "--trace", "100000", "--log-dir", str(logs), "--path", str(work), "--",
           str(bin_path("stdio_mix")), str(work))
    (path,) = sorted(logs.glob("*.sluice"))
    t = read_log(path).trace
    calls = [(op, off, n) for p, mod, op, off, n in zip(t.paths, t.module.tolist(), t.op.tolist(),
                                                        t.offset.tolist(), t.length.tolist())
             if mod == 2 and p == str(work / "big.bin")]
    written = [(2, -1, 0), (1, 0, 100), (1, 100, 10000), (1, 10100, 5), (5, -1, 0)] + \
        [(1, 10105 + i, 1) for i in range(300)] + [(1, 10405, 5000), (3, -1, 0)]
    assert calls[:len(written)] == written
    reads = calls[len(written):]
    assert reads[:4] == [(2, -1, 0), (0, 0, 100), (0, 100, 10000), (0, 7000, 10)]
    assert reads[-2:] == [(0, 15405, 0), (3, -1, 0)] and sum(n for op, _, n in reads if op == 0) == 10110 + 8395
    assert t.dropped == 0
