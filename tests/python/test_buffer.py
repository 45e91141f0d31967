"""Buffer mode: the same bytes as without sluice, fewer and larger calls
reaching the file system, deferred errors reported, bounded memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NATIVE, bin_path, file_entry, python_env, report_json, sluice
from oracle import TRACED, fs_side, have_strace, kernel_calls

KIB = 1024
MIB = 1024 * 1024


def io(logdir: Path, target: Path, ops: list[str], *opts: str, env: dict | None = None,
       check: bool = True) -> list[dict]:
    """Run the sluice-io driver in buffer mode; its per-call results."""
    cp = sluice("run", "--mode", "buffer", "--log-dir", str(logdir), "--path", str(target), *opts, "--",
                bin_path("sluice-io"), *ops, env=env, check=check)
    return [json.loads(line) for line in cp.stdout.splitlines() if line.startswith("{")]


def counters(logdir: Path, path: Path) -> tuple[dict, dict]:
    e = file_entry(report_json(logdir), path)
    return e["app"], e["fs"]


# ---------------------------------------------------------------- coalescing

@pytest.mark.parametrize("unit,fs_writes", [("4M", 2), ("64K", 125)])
def test_small_writes_reach_the_file_system_as_whole_units(target, logdir, unit, fs_writes):
    f = target / "out.dat"
    res = io(logdir, target, [f"creat:{f}"] + ["write:8192"] * 1000 + ["close"], "--buffer-size", unit)
    assert all(r["ret"] >= 0 for r in res)
    assert f.read_bytes() == b"x" * 8192000
    app, fs = counters(logdir, f)
    assert app["POSIX_WRITES"] == 1000 and app["POSIX_BYTES_WRITTEN"] == 8192000
    # 8,192,000 bytes in whole units, the last one partial
    assert fs["POSIX_WRITES"] == fs_writes and fs["POSIX_BYTES_WRITTEN"] == 8192000
    assert fs["POSIX_CONSEC_WRITES"] == fs_writes - 1
    # the file system saw the program's open and nothing else (the file is
    # known by its cached inode)
    assert fs["POSIX_OPENS"] == 1 and fs["POSIX_STATS"] == 0


def test_read_ahead_serves_sequential_small_reads(target, logdir):
    f = target / "in.dat"
    f.write_bytes(bytes(range(256)) * 4096)   # 1 MiB
    res = io(logdir, target, [f"open:{f}:r"] + ["read:4096"] * 257 + ["close"], "--readahead", "256K")
    assert [r["ret"] for r in res[1:-1]] == [4096] * 256 + [0]
    app, fs = counters(logdir, f)
    assert app["POSIX_READS"] == 257 and app["POSIX_BYTES_READ"] == MIB
    # the first read as asked; then windows of 16, 32, 64, 128 KiB and
    # 256 KiB ones (the last cut short by the end), then the read that
    # finds the end: never a byte the program did not read
    assert fs["POSIX_READS"] == 10 and fs["POSIX_BYTES_READ"] == MIB
    assert fs["POSIX_SIZE_READ_100K_1M"] == 4   # 128 KiB and three of 256 KiB


def test_one_small_read_of_a_large_file_reads_only_what_it_asks(target, logdir):
    f = target / "big.dat"
    f.write_bytes(b"z" * (8 * MIB))
    res = io(logdir, target, [f"open:{f}:r", "read:8", "pread:8:4096", "close"])
    assert [r["ret"] for r in res[1:3]] == [8, 8]
    _, fs = counters(logdir, f)
    assert fs["POSIX_READS"] == 2 and fs["POSIX_BYTES_READ"] == 16


def test_small_files_read_whole_cost_their_size(target, logdir):
    """Many small files, each read to its end in 4 KiB reads: the file
    system is asked for each file's bytes once."""
    files = [target / f"part{i:03d}" for i in range(40)]
    for i, p in enumerate(files):
        p.write_bytes(bytes([i]) * (1000 + 977 * i))
    ops = []
    for p in files:
        ops += [f"open:{p}:r"] + ["read:4096"] * (p.stat().st_size // 4096 + 2) + ["close"]
    io(logdir, target, ops)
    report = report_json(logdir)
    for p in files:
        e = file_entry(report, p)
        assert e["fs"]["POSIX_BYTES_READ"] == e["app"]["POSIX_BYTES_READ"] == p.stat().st_size


def test_random_reads_pay_no_read_ahead(target, logdir):
    f = target / "in.dat"
    f.write_bytes(b"y" * MIB)
    offsets = [700000, 12345, 900001, 300000, 5]
    res = io(logdir, target, [f"open:{f}:r"] + [f"pread:100:{o}" for o in offsets] + ["close"])
    assert [r["ret"] for r in res[1:-1]] == [100] * 5
    app, fs = counters(logdir, f)
    assert fs["POSIX_READS"] == app["POSIX_READS"] == 5 and fs["POSIX_BYTES_READ"] == 500


def test_read_after_write_and_logical_size(target, logdir):
    f = target / "raw.dat"
    res = io(logdir, target, [f"open:{f}:rw,creat", "write:300", "fstat", f"stat:{f}", "lseek:0:end",
                              "pread:300:0", "ftruncate:100", "fstat", "close"])
    by_op = [(r["op"], r["ret"]) for r in res]
    # fstat reports the logical size while the bytes are still in memory
    assert by_op[1:6] == [("write", 300), ("fstat", 300), ("stat", 0), ("lseek", 300), ("pread", 300)]
    assert by_op[6:8] == [("ftruncate", 0), ("fstat", 100)]
    assert f.read_bytes() == b"x" * 100


def test_policy_buffers_only_its_prefix(tmp_path, logdir):
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    fast.mkdir()
    slow.mkdir()
    ops = []
    for d in (fast, slow):
        ops += [f"creat:{d / 'f'}"] + ["write:1000"] * 50 + ["close"]
    sluice("run", "--log-dir", str(logdir), "--path", str(tmp_path), "--policy", f"{fast}=buffer", "--",
           bin_path("sluice-io"), *ops)
    r = report_json(logdir)
    assert file_entry(r, fast / "f")["fs"]["POSIX_WRITES"] == 1
    assert file_entry(r, slow / "f")["fs"]["POSIX_WRITES"] == 50
    assert (fast / "f").read_bytes() == (slow / "f").read_bytes() == b"x" * 50000


def test_report_shows_the_reduction(target, logdir):
    f = target / "out.dat"
    io(logdir, target, [f"creat:{f}"] + ["write:8192"] * 1000 + ["close"])
    text = sluice("report", str(logdir)).stdout
    row = next(line for line in text.splitlines() if line.strip().startswith("writes"))
    assert row.split() == ["writes", "1,000", "2", "500.0x"]


def test_scattered_writes_go_straight_through_until_they_follow_each_other(target, logdir):
    """40 pieces that never touch: the first window's 16 are written when
    the 17th finds no room, then each piece goes straight through (no copy,
    as many writes as plain); when 4 writes in a row follow each other the
    file is buffered again."""
    f = target / "scatter.dat"
    ops = [f"open:{f}:rw,creat"] + [f"pwrite:100:{k * 1000}" for k in range(40)] + ["write:100"] * 100 + ["close"]
    res = io(logdir, target, ops)
    assert all(r["ret"] == 100 for r in res[1:-1])
    app, fs = counters(logdir, f)
    assert app["POSIX_WRITES"] == 140 and app["POSIX_FALLBACK_SCATTERED"] == 1
    # 16 + 24 pieces, 4 sequential writes before buffering resumes, one flush at close
    assert fs["POSIX_WRITES"] == 45
    want = bytearray(39100)
    for k in range(40):
        want[k * 1000:k * 1000 + 100] = b"x" * 100
    want[:10000] = b"x" * 10000
    assert f.read_bytes() == bytes(want)


def test_a_large_write_that_continues_nothing_goes_straight_through(target, logdir):
    """A 1 MiB piece across a 4 MiB window's edge (a box of an N-1
    checkpoint) reaches the file system whole, as one write, not copied and
    cut in two of 512 KiB; a run of large writes that continue each other is buffered
    from its second write on (600 KiB, then 1,200 KiB in one window)."""
    f = target / "boxes.dat"
    box = MIB   # (sluice-io writes at most 1 MiB a call)
    ops = [f"open:{f}:rw,creat", f"pwrite:{box}:{4 * MIB - box // 2}"]
    ops += [f"pwrite:{600 * 1024}:{8 * MIB + k * 600 * 1024}" for k in range(3)] + ["close"]
    res = io(logdir, target, ops)
    assert all(r["ret"] > 0 for r in res[1:-1])
    app, fs = counters(logdir, f)
    assert app["POSIX_WRITES"] == 4 and fs["POSIX_WRITES"] == 3
    sizes = {fs[f"POSIX_ACCESS{i}_ACCESS"]: fs[f"POSIX_ACCESS{i}_COUNT"] for i in range(1, 5)}
    assert {k: v for k, v in sizes.items() if k} == {box: 1, 600 * 1024: 1, 1200 * 1024: 1}
    assert fs["POSIX_MAX_BYTE_WRITTEN"] == 8 * MIB + 1800 * 1024 - 1
    want = bytearray(8 * MIB + 1800 * 1024)
    want[4 * MIB - box // 2:4 * MIB + box // 2] = b"x" * box
    want[8 * MIB:] = b"x" * (1800 * 1024)
    assert f.read_bytes() == bytes(want)


def test_strided_writers_sharing_a_file_cost_no_more_writes(target, logdir):
    """4 processes writing interleaved 4 KiB pieces of one file: the file is
    the one plain writes, with no more writes reaching the file system."""
    prog = os.path.join(NATIVE, "sluice-bench-strided-shared")
    if not os.path.exists(prog):
        pytest.skip("the bench programs are not built")
    f = target / "strided.dat"
    args = ["--file", str(f), "--procs", "4", "--piece", "4K", "--size", "4M"]
    sluice("run", "--mode", "buffer", "--log-dir", str(logdir), "--path", str(target), "--", prog, *args)
    check = subprocess.run([prog, *args, "--phase", "verify"], capture_output=True, text=True, check=True)
    assert json.loads(check.stdout)["mismatches"] == 0
    app, fs = counters(logdir, f)
    assert app["POSIX_WRITES"] == 1024 and fs["POSIX_WRITES"] <= 1024
    assert app["POSIX_FALLBACK_SCATTERED"] == 4   # each process found it out in its first window


# ---------------------------------------------------------------- fallbacks

def test_mmap_flushes_and_falls_back(target, logdir):
    f = target / "m.dat"
    res = io(logdir, target, [f"open:{f}:rw,creat", "write:100", "mmap:100", "write:50", "close"])
    assert res[2]["ret"] == 100 * ord("x")   # the mapping sees the buffered bytes
    app, fs = counters(logdir, f)
    assert app["POSIX_MMAPS"] == 1 and app["POSIX_FALLBACKS"] == 1 and app["POSIX_FALLBACK_MMAP"] == 1
    # after the fallback every write goes straight through
    assert fs["POSIX_WRITES"] == 2 and f.read_bytes() == b"x" * 150


def test_posix_aio_sees_buffered_bytes_and_falls_back(target, logdir):
    """An AIO request is served by the kernel (or the C library's threads),
    not by the tier: the bytes held for the file are written first and the
    file goes straight through from then on (OMPIO's non-blocking I/O)."""
    f = target / "aio.dat"
    res = io(logdir, target, [f"open:{f}:rw,creat", "write:100", "aio_read:100", "write:10", "close"])
    assert [r["ret"] for r in res] == [res[0]["ret"], 100, 100, 10, 0]
    app, fs = counters(logdir, f)
    assert app["POSIX_AIO_READS"] == fs["POSIX_AIO_READS"] == 1
    assert app["POSIX_FALLBACK_KERNEL"] == 1 and fs["POSIX_WRITES"] == 2   # the 100 held, then 10 straight through
    assert f.read_bytes() == b"x" * 110


def test_sync_opens_fall_back(target, logdir):
    g = target / "s.dat"
    io(logdir, target, [f"open:{g}:w,creat,sync", "write:10", "write:10", "close"])
    sf = file_entry(report_json(logdir), g)
    assert sf["app"]["POSIX_FALLBACK_DIRECT"] == 1 and sf["fs"]["POSIX_WRITES"] == 2
    assert g.read_bytes() == b"x" * 20


# ---------------------------------------------------------------- locks: handover points, not fallbacks

@pytest.mark.parametrize("lock,unlock", [("flock_ex", "flock_un"), ("fcntl_setlk", "fcntl_unlk"), ("lockf", None)])
def test_locked_files_stay_buffered_and_unlock_publishes(target, logdir, lock, unlock):
    f = target / "l.dat"
    ops = [f"open:{f}:rw,creat", "write:10", lock, "write:10", "write:10"]
    ops += [unlock, "write:10", "write:10", "close"] if unlock else ["write:10", "write:10", "close"]
    res = io(logdir, target, ops)
    assert all(r["ret"] >= 0 for r in res)
    app, fs = counters(logdir, f)
    assert app["POSIX_FALLBACKS"] == 0 and f.read_bytes() == b"x" * 50
    if unlock:
        # the lock writes the 10 bytes before it, the unlock the 20 under it, close the rest
        assert fs["POSIX_WRITES"] == 3 and app["POSIX_LOCKS"] == fs["POSIX_LOCKS"] == 2
    else:
        # lockf's lock, test and unlock in one step: the 10 bytes before it, then close
        assert fs["POSIX_WRITES"] == 2 and app["POSIX_LOCKS"] == 2


LOCKHANDOFF = str(Path(__file__).resolve().parents[1] / "progs" / "lockhandoff.py")


def lock_handover(f: Path, kind: str, logdir: Path | None, target: Path) -> tuple[list[str], list[str]]:
    """A reader that has read the file, a writer that locks, rewrites it in
    small writes and unlocks but keeps it open, then the reader locks and
    reads it again. Each side's lines; logdir None: without sluice."""
    import sys

    def start(role: str, *args: str) -> subprocess.Popen:
        argv = [sys.executable, LOCKHANDOFF, role, str(f), kind, *args]
        if logdir is not None:
            argv = [sys.executable, "-m", "sluice", "run", "--mode", "buffer", "--log-dir", str(logdir / role),
                    "--path", str(target), "--", *argv]
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=python_env())

    f.write_bytes(b"a" * (3 * MIB))
    reader, writer = start("reader"), start("writer", "700", "1000")
    out_r = [reader.stdout.readline().strip()]
    writer.stdin.write("go\n")
    writer.stdin.flush()
    out_w = [writer.stdout.readline().strip()]
    reader.stdin.write("go\n")
    reader.stdin.flush()
    out_r.append(reader.stdout.readline().strip())
    writer.stdin.write("close\n")
    writer.stdin.flush()
    out_w.append(writer.stdout.readline().strip())
    assert reader.wait(60) == 0 and writer.wait(60) == 0
    return out_r, out_w


@pytest.mark.parametrize("kind", ["flock", "fcntl", "ofd", "lockf"])
def test_lock_write_unlock_then_another_process_reads(target, logdir, kind):
    f = target / "shared.dat"
    plain = lock_handover(f, kind, None, target)
    plain_bytes = f.read_bytes()
    under = lock_handover(f, kind, logdir, target)
    assert under == plain and f.read_bytes() == plain_bytes
    want = b"".join(bytes([65 + i % 26]) * 1000 for i in range(700))
    assert plain_bytes == want
    assert under[0][1].startswith(f"after {len(want)} {len(want)} ")
    # the writer's 700 writes reached the file system as one, at its unlock
    _, fs = counters(logdir / "writer", f)
    assert fs["POSIX_WRITES"] == 1 and fs["POSIX_FALLBACKS"] == 0


def test_setid_bits_cleared_by_a_write_show_at_once(tmp_path):
    """A write by a user other than the owner clears the file's set-user-ID
    bit (the kernel does, as the bytes land): fstat and stat right after
    the write must show it cleared, as plain does, not after a flush."""
    import shutil

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to write as another user")
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    d = Path(subprocess.check_output(["mktemp", "-d", "-p", str(base), "sluice-setid-XXXX"], text=True).strip())
    try:
        d.chmod(0o777)
        results = {}
        for name in ("plain", "buffer"):
            f = d / f"{name}.dat"
            f.write_bytes(b"")
            f.chmod(0o6777)
            prog = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin_path("sluice-io"),
                    f"open:{f}:rw", "write:10", "fstat_mode", f"stat:{f}", "close"]
            if name == "plain":
                out = subprocess.run(prog, capture_output=True, text=True, check=True).stdout
            else:
                logs = d / "logs"
                logs.mkdir(mode=0o777)
                out = sluice("run", "--mode", "buffer", "--log-dir", str(logs), "--path", str(d), "--", *prog).stdout
            results[name] = ([json.loads(line)["ret"] for line in out.splitlines() if line.startswith("{")],
                             f.stat().st_mode)
        assert results["buffer"] == results["plain"]
        assert not results["plain"][1] & 0o4000   # the kernel did clear it
    finally:
        subprocess.run(["rm", "-rf", str(d)])


# ---------------------------------------------------------------- the differential tester

# (write unit, read-ahead): 1 byte and 7 bytes force every edge of the
# window logic, 4 KiB the common block, 4 MiB the default.
DIFF_CONFIGS = [("1", "4M"), ("7", "4096"), ("4096", "1"), ("4096", "0"), ("65536", "4096"), ("4M", "4M")]
DIFF_SEEDS = range(1, 5)
DIFF_OPS = 2500

# Seeds that once failed, kept as regressions: (seed, unit, read-ahead).
DIFF_REGRESSIONS = [(6, "4096", "4M"), (8, "4096", "4M"), (5, "4096", "4M"), (1, "65536", "4096")]


def run_difftest(tmp: Path, seed: int, unit: str, readahead: str, logdir: Path, ops: int = DIFF_OPS,
                 env: dict | None = None) -> None:
    m, r = tmp / f"m{seed}", tmp / f"r{seed}"
    m.mkdir()
    r.mkdir()
    cp = sluice("run", "-q", "--mode", "buffer", "--buffer-size", unit, "--readahead", readahead,
                "--log-dir", str(logdir), "--path", str(m), "--", bin_path("sluice-difftest"),
                str(seed), str(ops), str(m), str(r), check=False, env=env)
    assert cp.returncode == 0 and cp.stdout.startswith("ok"), cp.stdout[-2000:] + cp.stderr[-2000:]
    assert (m / "difftest.dat").read_bytes() == (r / "difftest.dat").read_bytes()


@pytest.mark.parametrize("unit,readahead", DIFF_CONFIGS)
def test_differential_random_operations(tmp_path, logdir, unit, readahead):
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    d = Path(subprocess.check_output(["mktemp", "-d", "-p", str(base), "sluice-diff-XXXX"], text=True).strip())
    try:
        for seed in DIFF_SEEDS:
            run_difftest(d, seed, unit, readahead, logdir)
    finally:
        subprocess.run(["rm", "-rf", str(d)])


@pytest.mark.parametrize("unit,readahead", [("7", "4096"), ("4096", "4M"), ("65536", "1")])
def test_differential_with_lock_calls(tmp_path, logdir, unit, readahead):
    """flock and fcntl record locks among the operations: each one writes
    what is held and forgets what was cached; every answer stays plain's."""
    for seed in DIFF_SEEDS:
        run_difftest(tmp_path, seed, unit, readahead, logdir, env={"DIFFTEST_LOCKS": "1"})


@pytest.mark.parametrize("seed,unit,readahead", DIFF_REGRESSIONS)
def test_differential_regressions(tmp_path, logdir, seed, unit, readahead):
    run_difftest(tmp_path, seed, unit, readahead, logdir, ops=3000)


@pytest.mark.testbed
def test_differential_on_the_testbed(testbed_mount, logdir):
    d = Path(subprocess.check_output(["mktemp", "-d", "-p", str(testbed_mount), "sluice-diff-XXXX"],
                                     text=True).strip())
    try:
        # MooseFS places an O_APPEND write at the size its master knows, not
        # after the same client's unsynced writes through another descriptor
        # (a plain program sees the same): no O_APPEND opens here.
        for seed in (11, 12, 13):
            run_difftest(d, seed, "65536", "4096", logdir, ops=1500, env={"DIFFTEST_NO_APPEND": "1"})
        run_difftest(d, 14, "65536", "4096", logdir, ops=1500, env={"DIFFTEST_NO_APPEND": "1", "DIFFTEST_LOCKS": "1"})
    finally:
        subprocess.run(["rm", "-rf", str(d)])


def fuse_ops(mount: Path) -> dict[str, int]:
    """The MooseFS client's count of each request the kernel sent it."""
    from sluice.testbed import client_ops

    return {f"fuse_ops.{k}": v for k, v in (client_ops(mount) or {}).items()}


@pytest.mark.testbed
def test_create_once_asks_the_file_system_client_nothing_more(testbed_mount, logdir):
    """Files created, written once and closed: buffer mode sends the
    file system's client the same requests as the plain program, plus the
    one layout question for the device and the profiler's one statfs of the
    mount (its block size: POSIX_FILE_ALIGNMENT, as Darshan asks it) — no
    stat per file."""
    d = Path(subprocess.check_output(["mktemp", "-d", "-p", str(testbed_mount), "sluice-co-XXXX"], text=True).strip())
    try:
        deltas = {}
        for name in ("plain", "buffer"):
            (d / name).mkdir()
            ops = [op for i in range(100) for op in (f"creat:{d / name}/f{i}", "write:4096", "close")]
            before = fuse_ops(testbed_mount)
            if name == "plain":
                plain([bin_path("sluice-io"), *ops])
            else:
                io(logdir, d / name, ops)
            after = fuse_ops(testbed_mount)
            deltas[name] = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
        assert deltas["plain"]["fuse_ops.create"] == 100
        expected = dict(deltas["plain"])
        expected["fuse_ops.getxattr"] = expected.get("fuse_ops.getxattr", 0) + 1   # lustre.lov, once
        expected["fuse_ops.statfs"] = expected.get("fuse_ops.statfs", 0) + 1       # the mount's block size, once
        # (a lookup or getattr comes and goes as the kernel's caches of the
        # directories above expire: not the program's doing, either run)
        got = dict(deltas["buffer"])
        for name in ("fuse_ops.getattr", "fuse_ops.lookup"):
            assert abs(got.pop(name, 0) - expected.pop(name, 0)) <= 1, name
        assert got == expected
    finally:
        subprocess.run(["rm", "-rf", str(d)])


# ---------------------------------------------------------------- deferred errors

def test_background_write_error_reaches_the_application(target, logdir):
    """The 2nd write that reaches the file system fails with EIO: the program
    hears of it once, at a later write, fsync or close, and every other
    window is on disk."""
    f = target / "e.dat"
    env = {"SLUICE_TIERS": "faulty", "SLUICE_ALLOW_TEST_TIERS": "1", "SLUICE_FAULT": "write:2:EIO"}
    res = io(logdir, target, [f"creat:{f}"] + ["write:4096"] * 64 + ["fsync", "close"],
             "--buffer-size", "64K", env=env)
    failed = [r for r in res if r["ret"] < 0]
    assert len(failed) == 1 and failed[0]["errno"] == 5 and failed[0]["op"] in ("write", "fsync")
    data = f.read_bytes()
    writes_ok = sum(1 for r in res if r["op"] == "write" and r["ret"] == 4096)
    assert writes_ok == 64 - (failed[0]["op"] == "write")
    # window 2 ([64K, 128K)) was lost, as the kernel loses pages it could not write
    assert data[:64 * KIB] == b"x" * (64 * KIB)
    assert data[64 * KIB:128 * KIB] == bytes(64 * KIB)
    assert set(data[128 * KIB:]) == {ord("x")}
    app, fs = counters(logdir, f)
    # the injected failure sits above the file system: three windows reached it
    assert app["POSIX_ERRORS"] == 1 and fs["POSIX_ERRORS"] == 0
    # (a write that hears of the error is refused whole: its 4 KiB are not written)
    lost_write = 4 * KIB if failed[0]["op"] == "write" else 0
    assert fs["POSIX_WRITES"] == 3 and fs["POSIX_BYTES_WRITTEN"] == 192 * KIB - lost_write
    assert len(data) == 256 * KIB - lost_write


def test_enospc_from_a_full_file_system(small_tmpfs, logdir):
    f = small_tmpfs / "full.dat"
    res = io(logdir, small_tmpfs, [f"creat:{f}"] + ["write:8192"] * 256 + ["fsync", "close"],
             "--buffer-size", "256K", check=False)
    errors = [r for r in res if r["ret"] < 0]
    assert errors and errors[0]["errno"] == 28   # ENOSPC, at a write, the fsync or the close
    data = f.read_bytes()
    # every byte before the failure point is on disk, and nothing else
    assert len(data) >= 768 * KIB and data == b"x" * len(data)


# ---------------------------------------------------------------- descriptors the program did not open

RECORD = 8192


def sluice_argv(mode: str, logdir: Path, under: Path, *argv: str) -> list[str]:
    return [sys.executable, "-m", "sluice", "run", "--mode", mode, "--log-dir", str(logdir), "--path", str(under),
            "--", *argv]


def traced(argv: list[str], trace: Path | None) -> list[str]:
    """argv under strace (the independent witness of what reached the kernel), when there is one."""
    return ["strace", "-f", "-qq", "-y", "-e", f"trace={TRACED}", "-o", str(trace), *argv] if trace else argv


def kernel_writes(trace: Path | None, out: Path, logdir: Path) -> int:
    """The writes that reached `out`: strace's count, which the profile's
    fs side must equal call for call; without strace, the profile's."""
    e = file_entry(report_json(logdir), out)
    if trace is None:
        return e["fs"]["POSIX_WRITES"]
    # (not the calls of `sluice run` itself, the first process traced: the
    # Python interpreter asks where its stdout stands)
    lines = trace.read_text(errors="replace").splitlines()
    cli = lines[0].split(None, 1)[0]
    trace.write_text("".join(line + "\n" for line in lines if line.split(None, 1)[0] != cli))
    kernel = kernel_calls(trace, str(out))[str(out)]
    assert fs_side(e) == {k: kernel[k] for k in fs_side(e)}, (fs_side(e), kernel)
    return kernel["writes"]


@pytest.mark.parametrize("mode", ["buffer", "auto"])
def test_a_program_writing_the_stdout_the_shell_opened_is_buffered(target, logdir, mode):
    """`sluice run --mode buffer -- prog > F`: the shell opened F, prog
    writes 8 KiB records to its inherited descriptor 1. The writes reach
    the file system in whole units (1,024 became 1,024 before), the file
    is plain's."""
    out, ref = target / "out.txt", target / "plain.txt"
    trace = target.parent / f"{target.name}.strace" if have_strace() else None
    with open(out, "wb") as fh:
        subprocess.run(traced(sluice_argv(mode, logdir, target, bin_path("stdout_records"), "1024"), trace),
                       stdout=fh, env=python_env(), check=True)
    with open(ref, "wb") as fh:
        subprocess.run([bin_path("stdout_records"), "1024"], stdout=fh, check=True)
    assert out.read_bytes() == ref.read_bytes()
    app = file_entry(report_json(logdir), out)["app"]
    assert app["POSIX_WRITES"] == 1024 and app["POSIX_BYTES_WRITTEN"] == 1024 * RECORD
    assert app["POSIX_FALLBACKS"] == 0
    writes = kernel_writes(trace, out, logdir)
    assert writes * 100 <= 1024, writes


@pytest.mark.parametrize("how", ["of", "shell"])
def test_dd_writing_through_stdout_is_buffered(target, logdir, how):
    """dd opens of=F and makes it its stdout with dup2; a shell's
    `dd > F` opens F in the child it execs dd in: either way dd's 1,024
    writes of 8 KiB reach the file system in whole units."""
    out = target / "dd.out"
    dd = "dd if=/dev/zero bs=8k count=1024 status=none"
    argv = ["dd", "if=/dev/zero", f"of={out}", "bs=8k", "count=1024", "status=none"] if how == "of" else \
        ["sh", "-c", f"{dd} > {out}"]
    trace = target.parent / f"{target.name}.strace" if have_strace() else None
    subprocess.run(traced(sluice_argv("buffer", logdir, target, *argv), trace), env=python_env(), check=True,
                   capture_output=True)
    assert out.stat().st_size == 1024 * RECORD and out.read_bytes().count(0) == 1024 * RECORD
    e = file_entry(report_json(logdir), out)
    assert e["app"]["POSIX_WRITES"] == 1024 and e["app"]["POSIX_FALLBACKS"] == 0
    writes = kernel_writes(trace, out, logdir)
    assert writes * 100 <= 1024, writes


def records(data: bytes) -> list[bytes]:
    assert len(data) % RECORD == 0, len(data)
    return [data[i:i + RECORD] for i in range(0, len(data), RECORD)]


# (shell command, how to compare): stdout_records writes 8 KiB records to
# its descriptor 1 while something no wrapper sees moves the same
# description's position (stdio's own writes, the shell, a child), or the
# process ends without its destructors; each file must be plain's.
SHARED_DESCRIPTION_CASES = {
    "stdio": ("{p} 2000 printf > OUT", "bytes"),
    "stderr": ("{p} 2000 printf stderr > OUT 2>&1", "bytes"),
    "system": ("{p} 2000 system > OUT", "bytes"),
    "group": ("{{ echo a; {p} 2000 printf; {p} 10; echo b; }} > OUT", "bytes"),
    "numbered": ("exec 5> OUT; echo five >&5; {p} 300 >&5; echo six >&5; exec 5>&-", "bytes"),
    "exec": ("{p} 2000 end=exec > OUT", "bytes"),
    "_exit": ("{p} 2000 end=_exit > OUT", "bytes"),
    "segv": ("{p} 2000 end=segv > OUT", "bytes"),
    "read-write": ("{p} 2000 read 1<> OUT 2> OUT.err", "bytes"),
    "append": ("echo first > OUT; {p} 2000 printf >> OUT", "bytes"),
    "pipe": ("{p} 2000 | cat > OUT", "bytes"),
    # parent and child write at once through the one description: the
    # records interleave as the kernel's shared position hands them out
    "fork": ("{p} 3000 fork > OUT", "records"),
}


@pytest.mark.parametrize("case", list(SHARED_DESCRIPTION_CASES))
def test_a_description_shared_with_the_shell_stdio_or_a_child_keeps_plain_bytes(tmp_path, case):
    if case == "segv" and "asan" in os.environ.get("SLUICE_PRELOAD_FIRST", ""):
        pytest.skip("AddressSanitizer's own SIGSEGV handler reports and aborts before the library's flushes")
    script, compare = SHARED_DESCRIPTION_CASES[case]
    script = script.format(p=bin_path("stdout_records"))
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    logdir = tmp_path / "logs"
    subprocess.run(sluice_argv("buffer", logdir, a, "bash", "-c", script), cwd=a, env=python_env(), check=False,
                   capture_output=True)
    subprocess.run(["bash", "-c", script], cwd=b, check=False, capture_output=True)
    got, want = (a / "OUT").read_bytes(), (b / "OUT").read_bytes()
    if compare == "records":
        assert len(got) == len(want) and sorted(records(got)) == sorted(records(want))
    else:
        assert got == want
    if case == "read-write":
        assert (a / "OUT.err").read_text() == "read back 2000 of 2000 records\n"
    e = file_entry(report_json(logdir), a / "OUT")
    app, fs = e["app"]["POSIX_WRITES"], e["fs"]["POSIX_WRITES"]
    if case == "append":
        # O_APPEND through a shared description goes straight through (the
        # stream's appends would land before ours)
        assert fs == app and e["fs"]["POSIX_FALLBACK_SHARED"] >= 1
    elif case == "fork":
        # the first half, written by one process, is coalesced; in the second
        # half each process's windows have holes where the other's records
        # go, and how many depends on how the two were scheduled (at worst
        # one write per record: 1,500 + the first half's few)
        assert fs <= app // 2 + 100, (app, fs)
    elif case != "numbered":
        # (pipe: the file is cat's output, read from the pipe in pieces)
        assert fs * 50 <= app, (app, fs)


# ---------------------------------------------------------------- children started without fork()

SPAWNED_LINES = b"parent 1\nchild 1\nafter 1\nparent 2\nchild 2\nafter 2\n"
SUBPROCESS_FD = str(Path(__file__).resolve().parents[1] / "progs" / "subprocess_fd.py")
C_WAYS = ("system", "popen", "posix_spawn", "posix_spawnp", "vfork")
PYTHON_WAYS = ("vfork", "fork", "posix_spawn")


def run_spawning(base: Path, argv: list[str], ways: tuple[str, ...]) -> dict:
    """argv, given `WAY FILE` for each way, under sluice (strace watching)
    and plain: for each way, the program writes a line to its own
    descriptor, a child started that way writes one through the same
    description, the program another; twice. One run (and one report)
    for all ways."""
    a, b = base / "a", base / "b"
    a.mkdir()
    b.mkdir()
    logdir = base / "logs"
    trace = base / "strace" if have_strace() else None
    cmd = traced(sluice_argv("buffer", logdir, a, *argv, *[x for w in ways for x in (w, str(a / w))]), trace)
    if trace:   # (and how each child was started)
        cmd[cmd.index(f"trace={TRACED}")] = f"trace={TRACED},vfork,clone,clone3"
    ran = subprocess.run(cmd, env=python_env(), capture_output=True, text=True)
    plain_run = subprocess.run([*argv, *[x for w in ways for x in (w, str(b / w))]], capture_output=True, text=True)
    assert plain_run.returncode == 0, plain_run.stderr
    calls = ""
    if trace:
        # (not the calls of `sluice run` itself, the first process traced)
        lines = trace.read_text(errors="replace").splitlines()
        trace.write_text("".join(line + "\n" for line in lines if line.split(None, 1)[0] != lines[0].split()[0]))
        calls = trace.read_text()
    return {"a": a, "b": b, "ran": ran, "trace": trace, "calls": calls,
            "report": report_json(logdir) if logdir.exists() else None}


@pytest.fixture(scope="module")
def spawned_by_c(tmp_path_factory):
    return run_spawning(tmp_path_factory.mktemp("spawn_c"), [bin_path("spawn_writer")], (*C_WAYS, "cloexec"))


@pytest.fixture(scope="module")
def spawned_by_python(tmp_path_factory):
    return run_spawning(tmp_path_factory.mktemp("spawn_py"), [sys.executable, SUBPROCESS_FD], PYTHON_WAYS)


def check_spawned(run: dict, way: str) -> None:
    """The way's file is plain's, and its fs side strace's call for call;
    the description counts as shared from the first child on."""
    assert run["ran"].returncode == 0, run["ran"].stderr
    out = run["a"] / way
    assert (run["b"] / way).read_bytes() == SPAWNED_LINES
    assert out.read_bytes() == SPAWNED_LINES
    e = file_entry(run["report"], out)
    if run["trace"]:
        kernel = kernel_calls(run["trace"], str(out))[str(out)]
        assert fs_side(e) == {k: kernel[k] for k in fs_side(e)}, (fs_side(e), kernel)
    # (the program's lines after the first child go straight through)
    assert e["app"]["POSIX_FALLBACK_SHARED"] >= 1


@pytest.mark.parametrize("way", C_WAYS)
def test_a_child_started_without_fork_writes_after_the_buffered_bytes(spawned_by_c, way):
    """system(), popen() (the child writes what the program sends it),
    posix_spawn with a dup2 file action onto the child's stdout,
    posix_spawnp, and vfork+dup2+exec run no fork handler (glibc's system
    and popen call its internal posix_spawn, not the public one): the
    buffered line must reach the file before the child writes through the
    description, and the program's next line must land after the child's."""
    check_spawned(spawned_by_c, way)


def test_a_close_on_exec_descriptor_stays_buffered_across_children(spawned_by_c):
    """No child that only execs (system, popen, posix_spawn without file
    actions) can write through a close-on-exec descriptor: its bytes are
    written before each child starts (durability, as before a fork), and
    it stays buffered between them."""
    run = spawned_by_c
    assert run["ran"].returncode == 0, run["ran"].stderr
    out = run["a"] / "cloexec"
    assert out.read_bytes() == (run["b"] / "cloexec").read_bytes()
    assert out.read_bytes() == b"".join(b"%-99d\n" % i for i in range(40))
    e = file_entry(run["report"], out)
    assert e["app"]["POSIX_WRITES"] == 40 and e["app"]["POSIX_FALLBACKS"] == 0
    assert e["fs"]["POSIX_WRITES"] == 4   # before each of the 3 children, and at the close
    if run["trace"]:
        kernel = kernel_calls(run["trace"], str(out))[str(out)]
        assert fs_side(e) == {k: kernel[k] for k in fs_side(e)}, (fs_side(e), kernel)


@pytest.mark.parametrize("way", PYTHON_WAYS)
def test_python_subprocess_with_stdout_a_buffered_descriptor(spawned_by_python, way):
    """subprocess.run(..., stdout=fd) on a descriptor the Python program
    opened and wrote: CPython starts the child with vfork (its default),
    fork (a preexec_fn) or posix_spawn (close_fds=False); the child's line
    must land between the program's, as without sluice."""
    check_spawned(spawned_by_python, way)
    calls = spawned_by_python["calls"]
    if calls:   # each way started its two children as it says
        marker = {"vfork": "vfork(", "fork": "clone(child_stack=NULL,", "posix_spawn": "CLONE_VM|CLONE_VFORK"}[way]
        assert calls.count(marker) == 2, (way, marker)


# ---------------------------------------------------------------- programs, byte for byte

def plain(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def same_files(a: Path, b: Path) -> None:
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert fa == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()) and fa
    for rel in fa:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


@pytest.mark.parametrize("prog", ["known_mix", "known_mix_fortified", "fortran_io"])
def test_programs_write_the_same_bytes(target, logdir, prog):
    a, b = target / "a", target / "b"
    a.mkdir()
    b.mkdir()
    sluice("run", "--mode", "buffer", "--buffer-size", "64K", "--log-dir", str(logdir), "--path", str(a), "--",
           bin_path(prog), str(a))
    plain([bin_path(prog), str(b)])
    same_files(a, b)


def test_hdf5_and_netcdf_write_the_same_bytes(target, logdir):
    for prog, name, flags in (("h5_write", "x.h5", []), ("nc_write", "x.nc", []), ("nc_write", "x4.nc", ["-4"])):
        a, b = target / ("a-" + name), target / ("b-" + name)
        sluice("run", "--mode", "buffer", "--log-dir", str(logdir), "--path", str(target), "--",
               bin_path(prog), *flags, str(a))
        plain([bin_path(prog), *flags, str(b)])
        if prog == "h5_write":
            dump = lambda p: subprocess.run(["h5dump", str(p)], capture_output=True, text=True,  # noqa: E731
                                            check=True).stdout.replace(str(p), "F")
            assert dump(a) == dump(b)
        else:
            dump = lambda p: subprocess.run(["ncdump", str(p)], capture_output=True, text=True,  # noqa: E731
                                            check=True).stdout.replace(p.stem, "F")
            assert dump(a) == dump(b)
        if name == "x.nc":
            assert a.read_bytes() == b.read_bytes()
        assert a.stat().st_size == b.stat().st_size


APPEND_PY = str(Path(__file__).resolve().parents[1] / "progs" / "append_records.py")


@pytest.mark.parametrize("writer", ["h5", "nc4", "h5py", "netcdf4"])
def test_record_appends_under_the_libraries_own_locks_are_coalesced(target, logdir, writer):
    """HDF5 and netCDF-4 lock every file they open (HDF5 >= 1.10.7 and the
    wheels): the 2,000 small record appends still reach the file system as
    a handful of writes, and the file is the one a plain run writes."""
    import sys

    def argv(path: Path) -> list[str]:
        if writer in ("h5", "nc4"):
            return [bin_path("append_records"), writer, str(path), "2000"]
        return [sys.executable, APPEND_PY, writer, str(path), "2000"]

    a, b = target / f"a.{writer}", target / f"b.{writer}"
    sluice("run", "--mode", "buffer", "--log-dir", str(logdir), "--path", str(target), "--", *argv(a))
    plain(argv(b))
    if writer == "h5":   # HDF5 stamps objects with the second they were made
        dump = lambda p: subprocess.run(["h5dump", str(p)], capture_output=True, text=True,  # noqa: E731
                                        check=True).stdout.replace(str(p), "F")
        assert dump(a) == dump(b)
    else:
        assert a.read_bytes() == b.read_bytes()
    app, fs = counters(logdir, a)
    assert app["POSIX_LOCKS"] >= 1 and app["POSIX_FALLBACKS"] == 0
    assert app["POSIX_WRITES"] >= 400 and fs["POSIX_WRITES"] * 20 <= app["POSIX_WRITES"]
    assert fs["POSIX_BYTES_WRITTEN"] <= app["POSIX_BYTES_WRITTEN"]   # rewrites of one byte land once


# ---------------------------------------------------------------- memory

def test_ten_thousand_open_files_stay_within_the_memory_cap(tmp_path, logdir):
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    d = Path(subprocess.check_output(["mktemp", "-d", "-p", str(base), "sluice-many-XXXX"], text=True).strip())
    try:
        # 10,000 files open at once, 30 records of 1000 bytes each: without
        # a cap the windows alone would hold 10,000 x 32 KiB = 320 MiB.
        cp = sluice("run", "--mode", "buffer", "--buffer-memory", "8M", "--log-dir", str(logdir),
                    "--path", str(d), "--", bin_path("manyfiles"), str(d), "10000", "1000", "30")
        peak_kib = int(cp.stdout.split()[-1])
        # (AddressSanitizer's allocator keeps freed memory in quarantine)
        if "asan" not in os.environ.get("SLUICE_PRELOAD_FIRST", ""):
            assert peak_kib < 100 * 1024, cp.stdout
        for i in (0, 4321, 9999):
            want = b"".join(bytes([(i + r) % 251]) * 1000 for r in range(30))
            assert (d / f"f{i:05d}").read_bytes() == want
    finally:
        subprocess.run(["rm", "-rf", str(d)])


# ---------------------------------------------------------------- settings

@pytest.mark.parametrize("args,message", [
    (["--buffer-size", "4X"], "--buffer-size: '4X' is not a size"),
    (["--policy", "/x=fast"], "--policy '/x=fast' is not PREFIX=MODE"),
])
def test_bad_settings_are_one_line(tmp_path, args, message):
    cp = sluice("run", *args, "--", "true", check=False)
    assert cp.returncode == 1
    assert cp.stderr.strip().splitlines() == [f"sluice: error: {cp.stderr.split('error: ', 1)[1].strip()}"]
    assert message in cp.stderr


def test_config_file(tmp_path, logdir):
    cfg = tmp_path / "sluice.toml"
    out = tmp_path / "out"
    out.mkdir()
    cfg.write_text(f'mode = "buffer"\npaths = ["{out}"]\n[buffer]\nsize = "64K"\n')
    f = out / "f"
    sluice("run", "--config", str(cfg), "--log-dir", str(logdir), "--", bin_path("sluice-io"),
           f"creat:{f}", *["write:8192"] * 100, "close")
    assert file_entry(report_json(logdir), f)["fs"]["POSIX_WRITES"] == 13   # 819,200 B in 64 KiB units
    cfg.write_text('mode = "buffer"\n[buffer]\nsise = "64K"\n')
    cp = sluice("run", "--config", str(cfg), "--", "true", check=False)
    assert cp.returncode == 1 and "unknown setting 'buffer.sise'" in cp.stderr
    cfg.write_text('mode = "buffer\n')
    cp = sluice("run", "--config", str(cfg), "--", "true", check=False)
    assert cp.returncode == 1 and "not valid TOML" in cp.stderr and len(cp.stderr.strip().splitlines()) == 1


def test_library_reports_a_bad_mode_once(tmp_path):
    env = dict(os.environ, LD_PRELOAD=str(NATIVE / "libsluice.so"),
               SLUICE_MODE="bufer", SLUICE_LOG_DIR=str(tmp_path))
    cp = subprocess.run(["true"], env=env, capture_output=True, text=True)
    assert cp.returncode == 0
    assert cp.stderr.count("SLUICE_MODE=bufer is not a mode") == 1
    env.update(SLUICE_MODE="buffer", SLUICE_POLICY="/x=fast,/y=stage")
    cp = subprocess.run(["true"], env=env, capture_output=True, text=True)
    assert cp.returncode == 0
    assert "SLUICE_POLICY item '/x=fast' is not PREFIX=MODE" in cp.stderr and "/y" not in cp.stderr
