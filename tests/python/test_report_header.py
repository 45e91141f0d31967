"""The report's header and the figures a Darshan user looks for first: logs
that could not be read whole (named, and what can be read of them used),
processes a signal ended, command line, user, times, modes and --policy
rules; time per module, files by use, per-directory and per-mount totals.

The jobs are 3 or 4 runs of known_mix under `sluice run` in one job; damage
and the newer PROCESS keys (end reason 5 with "signal", "policy", "uid")
are written into copies of their logs here.
"""

from __future__ import annotations

import json
import pwd
import socket
import struct
import time
import zlib
from pathlib import Path

import pytest

from conftest import bin_path, sluice
from test_report_html import Page

from sluice.logfmt import LogFormatError, read_log
from sluice.report.model import OP_COUNTERS

NPROC = 4


def run_known_mix(base: Path, n: int, job: str = "hdr") -> tuple[Path, list[Path]]:
    """n runs of known_mix, each in a directory of its own, as one job: the log directory and the work directories."""
    logs, works = base / "logs", []
    for i in range(n):
        w = base / "work" / str(i)
        w.mkdir(parents=True)
        sluice("run", "--quiet", "--job-id", job, "--log-dir", str(logs), "--path", str(base / "work"), "--",
               bin_path("known_mix"), str(w))
        works.append(w)
    return logs, works


def regions(data: bytes) -> list[tuple[int, int, int, int]]:
    """(index, held type, module id or 0, offset) of each region of a log: a
    DEFLATE region's held type, a MODULE region's module."""
    nreg, table = struct.unpack_from("<I", data, 16)[0], struct.unpack_from("<I", data, 32)[0]
    out = []
    for i in range(nreg):
        rtype, _, off, length, _, _ = struct.unpack_from("<IIQQII", data, table + 32 * i)
        body = data[off : off + length]
        if rtype == 5:
            rtype, body = struct.unpack_from("<I", body)[0], zlib.decompress(body[16:])
        out.append((i, rtype, struct.unpack_from("<H", body)[0] if rtype == 4 else 0, off))
    return out


def flipped(path: Path, region_type: int, module: int = 0) -> int:
    """Flip one bit in the middle of the log's region of that type (and
    module): its index."""
    data = bytearray(path.read_bytes())
    nreg, table = struct.unpack_from("<I", data, 16)[0], struct.unpack_from("<I", data, 32)[0]
    for i, rtype, mid, _ in regions(bytes(data)):
        if rtype == region_type and mid == module:
            _, _, off, length, _, _ = struct.unpack_from("<IIQQII", data, table + 32 * i)
            data[off + length // 2] ^= 0x10
            path.write_bytes(bytes(data))
            return i
    raise AssertionError(f"no region of type {region_type} (module {module}) in {path}")


def with_process(path: Path, end_reason: int | None = None, **keys: str) -> None:
    """Rewrite the log's PROCESS region: its end reason, and keys added or
    replaced. The new region goes at the end of the file; the table entry,
    the file size and the header's checksum are made to match."""
    data = bytearray(path.read_bytes())
    nreg, table = struct.unpack_from("<I", data, 16)[0], struct.unpack_from("<I", data, 32)[0]
    for i in range(nreg):
        at = table + 32 * i
        rtype, rver, off, length, _, _ = struct.unpack_from("<IIQQII", data, at)
        if rtype == 1:
            break
    body = bytes(data[off : off + length])
    head, (reason, nstr) = body[:56], struct.unpack_from("<II", body, 56)
    info, pos = {}, 64
    for _ in range(nstr):
        (kl,) = struct.unpack_from("<H", body, pos)
        k = body[pos + 2 : pos + 2 + kl].decode()
        pos += 2 + kl
        (vl,) = struct.unpack_from("<I", body, pos)
        info[k] = body[pos + 4 : pos + 4 + vl].decode()
        pos += 4 + vl
    info.update(keys)
    new = head + struct.pack("<II", reason if end_reason is None else end_reason, len(info)) + b"".join(
        struct.pack("<H", len(k.encode())) + k.encode() + struct.pack("<I", len(v.encode())) + v.encode()
        for k, v in info.items())
    struct.pack_into("<IIQQII", data, at, 1, rver, len(data), len(new), zlib.crc32(new), 0)
    data += new
    struct.pack_into("<Q", data, 24, len(data))
    struct.pack_into("<I", data, 60, zlib.crc32(bytes(data[table : table + 32 * nreg]), zlib.crc32(bytes(data[:60]))))
    path.write_bytes(bytes(data))


def header(text: str) -> list[str]:
    """The report's header lines (after the title, before the first table)."""
    lines = text.splitlines()
    assert lines[0].startswith("sluice report: job ")
    out = []
    for line in lines[1:]:
        if not line.startswith("  "):
            break
        out.append(line)
    return out


def total(report: dict, name: str) -> float:
    return report["app"].get(name, 0)


@pytest.fixture(scope="module")
def job4(tmp_path_factory) -> dict:
    """4 known_mix processes of one job, and their whole report."""
    base = tmp_path_factory.mktemp("job4")
    logs, works = run_known_mix(base, NPROC)
    whole = json.loads(sluice("report", "--json", str(logs)).stdout)
    assert whole["processes"] == NPROC and whole["damaged_logs"] == []
    return {"base": base, "logs": logs, "works": works, "whole": whole}


def damaged_copy(job4: dict, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the job's logs and the copy of its second log (by name)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for p in job4["logs"].glob("*.sluice"):
        (logs / p.name).write_bytes(p.read_bytes())
    return logs, sorted(logs.glob("*.sluice"))[1]


# the log's STDIO file (text.txt) has no POSIX record: it goes with the STDIO region
DAMAGE = {
    # what is damaged: (region type, module, problems after the region's, processes, files left, what is lost)
    "stdio module": (4, 2, ["records left out: STDIO"], NPROC, 5 * NPROC - 1, "stdio"),
    "posix module": (4, 1, ["records left out: POSIX"], NPROC, 5 * NPROC - 4, "posix"),
    "names": (3, 0, ["no record could be read (its NAMES region is lost)"], NPROC, 5 * (NPROC - 1), "all"),
    "schema": (2, 0, ["no record could be read (its SCHEMA region is lost)"], NPROC, 5 * (NPROC - 1), "all"),
    "process": (1, 0, ["no process region"], NPROC - 1, 5 * (NPROC - 1), "all"),
}


@pytest.mark.parametrize("what", list(DAMAGE))
def test_a_damaged_log_is_named_and_what_can_be_read_of_it_is_used(job4, tmp_path, what):
    rtype, module, then, processes, nfiles, lost = DAMAGE[what]
    logs, bad = damaged_copy(job4, tmp_path)
    whole = job4["whole"]
    i = flipped(bad, rtype, module)
    stored = 1 if rtype == 1 else 5          # the writer compresses every region but PROCESS
    problems = [f"corrupt region {i} (type {stored}, checksum mismatch)", *then]
    used = rtype != 1
    j = json.loads(sluice("report", "--json", str(logs)).stdout)
    assert j["damaged_logs"] == [{"log": str(bad), "problems": problems, "used": used}]
    assert j["processes"] == processes and len(j["files"]) == nfiles
    kept = (NPROC - 1) / NPROC
    posix = kept if lost in ("posix", "all") else 1
    stdio = kept if lost in ("stdio", "all") else 1
    for name in ("POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_WRITTEN"):
        assert total(j, name) == whole["app"][name] * posix, name
    for name in ("STDIO_OPENS", "STDIO_WRITES", "STDIO_BYTES_WRITTEN"):
        assert total(j, name) == whole["app"][name] * stdio, name
    proc = sluice("report", str(logs))
    line = f"  DAMAGED LOG: {bad}: {'; '.join(problems)}" + ("" if used else "; nothing of it is used")
    assert line in header(proc.stdout)
    assert f"  processes: {processes}   executables: {bin_path('known_mix')}" in header(proc.stdout)
    tail = "what could be read is used" if used else "skipped"
    assert proc.stderr == f"sluice: warning: {bad}: {'; '.join(problems)}; {tail}\n"
    page = Page((sluice("report", "--html", str(tmp_path / "r.html"), str(logs)), tmp_path / "r.html")[1]
                .read_text("utf-8"))
    assert f"1 log could not be read whole (what could be read of each is used): {line[len('  DAMAGED LOG: '):]}" \
        in page.alltext


def test_a_damaged_header_or_a_cut_log_is_read_for_what_it_holds(job4, tmp_path):
    logs, bad = damaged_copy(job4, tmp_path)
    data = bytearray(bad.read_bytes())
    data[40] ^= 1                                # a reserved byte of the header: every region still checks out
    bad.write_bytes(bytes(data))
    j = json.loads(sluice("report", "--json", str(logs)).stdout)
    assert j["damaged_logs"] == [{"log": str(bad), "problems": ["corrupt header (checksum mismatch)",
                                                                "every record was read"], "used": True}]
    assert j["app"] == job4["whole"]["app"] and j["processes"] == NPROC
    # cut inside its last region: that region (STDIO's, the writer's last) is left out
    data[40] ^= 1
    last = max(regions(bytes(data)), key=lambda r: r[3])
    assert last[1:3] == (4, 2)
    bad.write_bytes(bytes(data[:-10]))
    j = json.loads(sluice("report", "--json", str(logs)).stdout)
    assert j["damaged_logs"] == [{"log": str(bad), "used": True, "problems": [
        f"truncated: {len(data) - 10} bytes on disk, the header says {len(data)}",
        f"region {last[0]} lies outside the file", "records left out: STDIO"]}]
    assert total(j, "STDIO_OPENS") == job4["whole"]["app"]["STDIO_OPENS"] * (NPROC - 1) / NPROC
    assert total(j, "POSIX_OPENS") == job4["whole"]["app"]["POSIX_OPENS"]


def test_a_log_that_is_no_log_is_named_and_a_named_one_is_an_error(job4, tmp_path):
    logs, bad = damaged_copy(job4, tmp_path)
    bad.write_bytes(b"x" * 100)
    j = json.loads(sluice("report", "--json", str(logs)).stdout)
    assert j["damaged_logs"] == [{"log": str(bad), "problems": ["not a sluice log (bad magic)"], "used": False}]
    assert j["processes"] == NPROC - 1
    proc = sluice("report", str(bad), check=False)
    assert proc.returncode == 1 and proc.stderr == f"sluice: error: {bad}: not a sluice log (bad magic)\n"


def test_the_strict_reader_still_refuses_what_salvage_reads(job4, tmp_path):
    """read_log() without salvage refuses a damaged log exactly as the C reader does."""
    _, bad = damaged_copy(job4, tmp_path)
    i = flipped(bad, 4, 2)
    with pytest.raises(LogFormatError) as e:
        read_log(bad)
    assert str(e.value) == f"{bad}: corrupt region {i} (type 5, checksum mismatch)"
    log = read_log(bad, salvage=True)
    assert log.damage == [f"corrupt region {i} (type 5, checksum mismatch)", "records left out: STDIO"]
    assert sorted({r.module for r in log.records}) == ["POSIX"]
    assert read_log(sorted(job4["logs"].glob("*.sluice"))[0], salvage=True).damage == []


def test_processes_ended_by_a_signal_policy_and_user_in_the_header(tmp_path):
    logs, works = run_known_mix(tmp_path, 3, job="sig")
    first, second, third = sorted((read_log(p) for p in logs.glob("*.sluice")), key=lambda l: l.start_ns)
    rules = "/scratch/out=buffer,/scratch/tmp=stage"
    with_process(first.path, policy=rules, uid="4242")
    with_process(second.path, 5, signal="SIGSEGV", policy=rules, uid="4242")
    with_process(third.path, 5, policy=rules, uid="4242")          # no "signal" key: read as "signal"
    assert [read_log(l.path).end_reason for l in (first, second, third)] == ["exit", "SIGSEGV", "signal"]
    try:
        name = pwd.getpwuid(4242).pw_name
        user = f"{name} (uid 4242)"
    except KeyError:
        name, user = "", "uid 4242"
    proc = sluice("report", str(logs))
    utc = [time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ns / 1e9)) for ns in (first.start_ns, third.end_ns)]
    prog = bin_path("known_mix")
    assert header(proc.stdout) == [
        f"  command: {prog} {works[0]}  (and 2 other command lines)",
        f"  user: {user}",
        f"  started: {utc[0]}   ended: {utc[1]}   run time: {(third.end_ns - first.start_ns) / 1e9:.3f} s",
        f"  processes: 3   executables: {prog}",
        f"  hosts: 1: {socket.gethostname()}",
        f"  mode: profile   policy: {rules}",
        f"  ended by a signal: SIGSEGV: 1 (pid {second.pid}); signal: 1 (pid {third.pid}); their logs hold what they "
        "did up to then",
    ]
    j = json.loads(sluice("report", "--json", str(logs)).stdout)
    assert j["signals"] == [
        {"signal": "SIGSEGV", "pid": second.pid, "rank": -1, "host": second.info["host"],
         "cmdline": f"{prog} {works[1]}"},
        {"signal": "signal", "pid": third.pid, "rank": -1, "host": third.info["host"], "cmdline": f"{prog} {works[2]}"}]
    assert j["user"] == {"uid": 4242, "name": name, "from": "log"}
    assert (j["command"], j["commands"]) == (f"{prog} {works[0]}", [f"{prog} {w}" for w in works])
    assert (j["modes"], j["policies"], j["start_utc"], j["end_utc"]) == (["profile"], [rules], *utc)
    assert (j["start_ns"], j["end_ns"]) == (first.start_ns, third.end_ns)
    page = Page((sluice("report", "--html", str(tmp_path / "r.html"), str(logs)), tmp_path / "r.html")[1]
                .read_text("utf-8"))
    assert (f"Ended by a signal: SIGSEGV: 1 (pid {second.pid}); signal: 1 (pid {third.pid}); their logs hold what "
            "they did up to then.") in page.alltext
    assert f"policy {rules}" in page.alltext and f"user {user}" in page.alltext


def test_files_by_use_directories_mounts_and_time_per_module(job4):
    j, works = job4["whole"], job4["works"]
    # known_mix in each directory: data.bin read and written through POSIX (8,192 and 4,096 bytes), text.txt
    # through stdio (170 and 85), sub/ made, sub/tmp made and renamed to sub/tmp2, then both removed
    rw = {"files": 2 * NPROC, **{f"{s}_bytes_read": 8362 * NPROC for s in ("app", "fs")},
          **{f"{s}_bytes_written": 4181 * NPROC for s in ("app", "fs")}}
    none = {"files": 0, **{f"{s}_bytes_{k}": 0 for s in ("app", "fs") for k in ("read", "written")}}
    # one host: its row is the whole job's bytes
    assert [{k: v for k, v in h.items() if not k.endswith("_ops")} for h in j["hosts"]] == [
        {"host": socket.gethostname(), "processes": NPROC, "ranks": [],
         **{k: v for k, v in rw.items() if k != "files"}}]
    assert j["file_access"] == {"read-only": none, "write-only": none, "read-write": rw,
                                "neither": {**none, "files": 3 * NPROC}}
    # operations of each side (stdio's fs side is the calls the C library made)
    ops = {side: {f["path"]: sum(int(f[side].get(k, 0)) for k in OP_COUNTERS) for f in j["files"]}
           for side in ("app", "fs")}
    rows = {r["directory"]: r for r in j["directories"]}
    assert sorted(rows) == sorted([str(w) for w in works] + [str(w / "sub") for w in works])
    for w in works:
        top = {s: sum(ops[s][str(w / n)] for n in ("data.bin", "text.txt", "sub")) for s in ("app", "fs")}
        assert rows[str(w)] == {"directory": str(w), "files": 3, "app_bytes_read": 8362, "app_bytes_written": 4181,
                                "app_ops": top["app"], "fs_bytes_read": 8362, "fs_bytes_written": 4181,
                                "fs_ops": top["fs"]}
        sub = {s: sum(ops[s][str(w / n)] for n in ("sub/tmp", "sub/tmp2")) for s in ("app", "fs")}
        assert rows[str(w / "sub")] == {"directory": str(w / "sub"), "files": 2, "app_ops": sub["app"],
                                        "fs_ops": sub["fs"],
                                        **{f"{s}_bytes_{k}": 0 for s in ("app", "fs") for k in ("read", "written")}}
    mine = [m for m in j["mounts"] if m["files"]]
    assert len(mine) == 1 and mine[0]["files"] == 5 * NPROC
    assert (mine[0]["app_ops"], mine[0]["fs_ops"]) == (sum(ops["app"].values()), sum(ops["fs"].values()))
    assert (mine[0]["app_bytes_read"], mine[0]["app_bytes_written"]) == (8362 * NPROC, 4181 * NPROC)
    times = {r["module"]: r for r in j["module_times"]}
    assert sorted(times) == ["POSIX", "STDIO"]
    for m in ("POSIX", "STDIO"):
        app = times[m]["app"]
        assert (app["read"], app["write"], app["meta"]) == tuple(j["app"][f"{m}_F_{k}_TIME"]
                                                                 for k in ("READ", "WRITE", "META"))
        assert app["total"] == app["read"] + app["write"] + app["meta"] > 0


def test_a_job_without_reads_has_no_reads_plot(tmp_path):
    """manyfiles only creates and writes: the sizes plot has its writes panel alone, the
    operations plot only the kinds of call made, each caption saying what is left out."""
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    sluice("run", "--quiet", "--log-dir", str(logs), "--path", str(work), "--", bin_path("manyfiles"), str(work),
           "3", "64", "2")
    j = json.loads(sluice("report", "--json", "--html", str(tmp_path / "r.html"), str(logs)).stdout)
    assert j["app"]["POSIX_READS"] == 0 and j["app"]["POSIX_WRITES"] == 6
    text = (tmp_path / "r.html").read_text("utf-8")
    sizes = text[text.index('<figure class="plot" id="plot-sizes">'):]
    sizes = sizes[: sizes.index("</figure>")]
    assert "<h3>Access sizes of POSIX writes</h3>" in sizes
    assert ("<figcaption>POSIX write calls per access size, in Darshan&#x27;s ten buckets; app and fs side by side. "
            "No POSIX reads were recorded.</figcaption>") in sizes
    made = [k for k, names in (("opens", ("POSIX_OPENS", "STDIO_OPENS")), ("reads", ("POSIX_READS", "STDIO_READS")),
                               ("writes", ("POSIX_WRITES", "STDIO_WRITES")), ("seeks", ("POSIX_SEEKS", "STDIO_SEEKS")),
                               ("stats", ("POSIX_STATS",)),
                               ("syncs", ("POSIX_FSYNCS", "POSIX_FDSYNCS", "STDIO_FLUSHES")),
                               ("unlinks", ("POSIX_UNLINKS",)), ("renames", ("POSIX_RENAMES",)),
                               ("mkdirs", ("POSIX_MKDIRS",)))
            if any(j[s].get(n, 0) for s in ("app", "fs") for n in names)]
    assert "reads" not in made and "writes" in made
    ops = text[text.index('<figure class="plot" id="plot-ops">'):]
    none = [k for k in ("opens", "reads", "writes", "seeks", "stats", "syncs", "unlinks", "renames", "mkdirs")
            if k not in made]
    assert (f"<figcaption>Calls of each kind the job made, POSIX and STDIO together (syncs: fsync, fdatasync and "
            f"fflush); none of: {', '.join(none)}.</figcaption>") in ops[: ops.index("</figure>")]


def test_programs_that_crash_are_named_with_their_signal(tmp_path):
    """Real crashes: the library writes the log from the handler (end reason 5
    and the signal's name); the report names each process and its signal,
    and counts what it wrote before."""
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    crash = {"SIGABRT": "os.abort()", "SIGSEGV": "import ctypes; ctypes.string_at(0)"}
    for i, (sig, how) in enumerate(crash.items()):
        code = f"import os, sys\nopen(os.path.join(sys.argv[1], 'f{i}'), 'w').write('x' * 100)\n{how}\n"
        cp = sluice("run", "--quiet", "--job-id", "crash", "--log-dir", str(logs), "--path", str(work), "--",
                    "python3", "-c", code, str(work), check=False)
        assert cp.returncode != 0
    procs = sorted((read_log(p) for p in logs.glob("*.sluice")), key=lambda l: l.start_ns)
    assert [l.end_reason for l in procs] == list(crash)
    text = sluice("report", str(logs)).stdout
    assert (f"  ended by a signal: SIGABRT: 1 (pid {procs[0].pid}); SIGSEGV: 1 (pid {procs[1].pid}); their logs "
            "hold what they did up to then") in header(text)
    j = json.loads(sluice("report", "--json", str(logs)).stdout)
    assert [(s["signal"], s["pid"]) for s in j["signals"]] == [("SIGABRT", procs[0].pid), ("SIGSEGV", procs[1].pid)]
    assert {f["path"]: f["app"]["POSIX_BYTES_WRITTEN"] for f in j["files"] if Path(f["path"]).parent == work} == \
        {str(work / "f0"): 100, str(work / "f1"): 100}
