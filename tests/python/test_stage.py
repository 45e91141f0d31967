"""Stage mode, end to end: files land on a private node-local tier, are
published atomically to the shared file system, survive SIGKILL through
`sluice recover`, and cost the shared file system far fewer metadata
operations."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import bin_path, file_entry, mounted_tmpfs, python_env, report_json, sluice


def record_bytes(records: int, size: int) -> bytes:
    return b"".join(bytes([r % 251]) * size for r in range(records))


@pytest.fixture
def tier(tmp_path: Path) -> Path:
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    t = base / f"sluice-test-tier-{os.getpid()}-{tmp_path.name}"
    yield t
    subprocess.run(["rm", "-rf", str(t)])


def stage_run(tier: Path, target: Path, logdir: Path, *argv: str, extra: tuple[str, ...] = (),
              check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    return sluice("run", "--mode", "stage", "--tier", str(tier), "--stage-delay", "200", "--log-dir", str(logdir),
                  "--path", str(target), *extra, "--", *argv, check=check, env=env)


def tier_entries(tier: Path) -> list[str]:
    j = tier / "journal"
    return sorted(p.name for p in j.iterdir()) if j.is_dir() else []


def test_files_are_published_whole_with_their_mode(target, tier, logdir):
    f = target / "out.dat"
    stage_run(tier, target, logdir, bin_path("stagewriter"), str(f), "64", "65536", "0")
    assert f.read_bytes() == record_bytes(64, 65536)
    assert f.stat().st_mode & 0o777 == 0o640 & ~_umask()
    # nothing left on the tier, no temporary file left beside the result
    assert tier_entries(tier) == [] and list((tier / "data").iterdir()) == []
    assert [p.name for p in target.iterdir()] == ["out.dat"]
    assert (tier.stat().st_mode & 0o777) == 0o700


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


SPARSE = """
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.pwrite(fd, b"a" * (1 << 20), 0)
os.pwrite(fd, b"b" * (1 << 20), 6 << 20)
os.ftruncate(fd, 12 << 20)
os.close(fd)
"""


def _extents(path: Path) -> list[tuple[int, int]]:
    """(data start, data end) of each extent, by SEEK_DATA/SEEK_HOLE."""
    out, fd = [], os.open(path, os.O_RDONLY)
    try:
        size, off = os.fstat(fd).st_size, 0
        while off < size:
            try:
                off = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, off, os.SEEK_HOLE)
            out.append((off, end))
            off = end
    finally:
        os.close(fd)
    return out


def stage_and_plain(tmp_path: Path, tier: Path, logdir: Path, script: str, name: str,
                    extra: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """The same Python script writing `name` under stage mode and plain: (staged result, plain result)."""
    target, plain = tmp_path / "t", tmp_path / "plain"
    target.mkdir()
    plain.mkdir()
    stage_run(tier, target, logdir, sys.executable, "-c", script, str(target / name), extra=extra)
    subprocess.run([sys.executable, "-c", script, str(plain / name)], check=True)
    return target / name, plain / name


def test_a_sparse_file_is_published_with_its_holes(tmp_path, tier, logdir):
    """Holes the program left stay holes: the publish writes the data extents only (2 MiB of a 12 MiB
    file), and the file has the blocks and the data map of the same program run plain."""
    got, want = stage_and_plain(tmp_path, tier, logdir, SPARSE, "s.dat")
    assert got.read_bytes() == want.read_bytes() and got.stat().st_size == 12 << 20
    assert got.stat().st_blocks == want.stat().st_blocks
    assert _extents(got) == _extents(want) == [(0, 1 << 20), (6 << 20, 7 << 20)]
    e = file_entry(report_json(logdir), got)
    assert e["fs"]["POSIX_BYTES_WRITTEN"] == 2 << 20 and e["fs"]["POSIX_WRITES"] == 2


HOLE_AFTER_EARLY_COPY = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
os.write(fd, b"x" * (1 << 20))
time.sleep(0.5)                       # the early copy takes these bytes
os.ftruncate(fd, 0)                   # ... which the program then drops
os.ftruncate(fd, 2 << 20)             # a hole where they were
os.pwrite(fd, b"y", 3 << 19)
os.close(fd)
"""


def test_a_hole_over_early_copied_bytes_is_published_as_a_hole(tmp_path, tier, logdir):
    """An early copy holds bytes the program then truncated away; the file, sparse now, is published
    from its data extents into that copy: the copy is emptied first, so no stale byte survives."""
    got, want = stage_and_plain(tmp_path, tier, logdir, HOLE_AFTER_EARLY_COPY, "h.dat", ("--stage-precopy", "1"))
    assert got.read_bytes() == want.read_bytes()
    e = file_entry(report_json(logdir), got)
    assert e["fs"]["POSIX_BYTES_WRITTEN"] >= (1 << 20) + 1   # the early copy, then the extent


SPARSE_AFTER_EARLY_COPY = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
os.write(fd, b"x" * (1 << 20))
time.sleep(0.5)                              # the early copy takes the first MiB
os.pwrite(fd, b"y" * (1 << 20), 8 << 20)     # then a hole, a MiB of data, and a hole to the end
os.ftruncate(fd, 12 << 20)
os.close(fd)
"""


def test_a_sparse_file_copied_early_keeps_its_holes(tmp_path, tier, logdir):
    """The rest of a file copied early (from the end of that copy) is copied by its data extents too, by
    the early copies and by the publish: the published file has plain's blocks and data map."""
    got, want = stage_and_plain(tmp_path, tier, logdir, SPARSE_AFTER_EARLY_COPY, "s.dat", ("--stage-precopy", "1"))
    assert got.read_bytes() == want.read_bytes()
    assert got.stat().st_blocks == want.stat().st_blocks
    assert _extents(got) == _extents(want) == [(0, 1 << 20), (8 << 20, 9 << 20)]
    # 2 MiB of data, some of it copied twice when an early copy overlaps a write in progress; a copy
    # of the holes as zeros would write 12 MiB
    assert 2 << 20 <= file_entry(report_json(logdir), got)["fs"]["POSIX_BYTES_WRITTEN"] < 4 << 20


def test_reopening_costs_the_shared_file_system_nothing(target, tier, logdir):
    f = target / "log.txt"
    ops = [f"creat:{f}", "write:100", "close"]
    for _ in range(50):
        ops += [f"open:{f}:w,append", "write:10", "close", f"stat:{f}"]
    stage_run(tier, target, logdir, bin_path("sluice-io"), *ops)
    assert f.read_bytes() == b"x" * 600
    e = file_entry(report_json(logdir), f)
    app, fs = e["app"], e["fs"]
    assert app["POSIX_OPENS"] == 51 and app["POSIX_STATS"] == 50 and app["POSIX_WRITES"] == 51
    # the shared file system saw: the existence check of the file (a stat
    # it answers "no such file": a stat, not an error of the program's), the
    # stat of its directory and whether it takes a new file from us
    # (permissions, read-only), then one publish: the file created with its
    # mode, one write, closed (no temporary name, rename, fsync, chmod or
    # times for a new small file)
    assert fs["POSIX_OPENS"] == 1 and fs["POSIX_WRITES"] == 1 and fs["POSIX_RENAMES"] == 0
    assert fs["POSIX_FSYNCS"] == fs["POSIX_CHMODS"] == fs["POSIX_UTIMES"] == 0
    assert fs["POSIX_STATS"] == 3 and fs["POSIX_ERRORS"] == 0 and fs["POSIX_BYTES_WRITTEN"] == 600


def test_reopening_a_file_already_published_asks_nothing_first(target, tier, logdir):
    """With no stage delay each close publishes at once; the reopens that
    follow (O_APPEND: not staged again) go straight to the file, without a
    stat to ask whether it exists: the file system sees what plain's opens
    cost, plus the first existence checks."""
    f = target / "log.txt"
    ops = [f"creat:{f}", "write:100", "close"]
    for _ in range(30):
        ops += [f"open:{f}:w,append", "write:10", "close"]
    stage_run(tier, target, logdir, bin_path("sluice-io"), *ops, extra=("--stage-delay", "0"))
    assert f.read_bytes() == b"x" * 400
    fs = file_entry(report_json(logdir), f)["fs"]
    assert fs["POSIX_STATS"] <= 3 and fs["POSIX_ERRORS"] == 0   # (the first existence checks, as above)


def test_staged_paths_answer_stat_unlink_rename(target, tier, logdir):
    a, b, c = target / "a", target / "b", target / "c"
    res = stage_run(tier, target, logdir, bin_path("sluice-io"),
                    f"creat:{a}", "write:300", "close", f"stat:{a}", f"rename:{a}:{b}", f"stat:{a}", f"stat:{b}",
                    f"creat:{c}", "write:5", "close", f"unlink:{c}", f"stat:{c}", f"statx:{b}", f"access:{b}")
    rets = [json.loads(line)["ret"] for line in res.stdout.splitlines() if line.startswith("{")]
    assert rets[3:7] == [0, 0, -1, 0] and rets[10:14] == [0, -1, 0, 0]
    assert sorted(p.name for p in target.iterdir()) == ["b"] and b.read_bytes() == b"x" * 300
    r = report_json(logdir)
    # the program's rename never reached the shared file system; b was
    # published under its name directly (one create, no rename)
    assert file_entry(r, a)["fs"]["POSIX_RENAMES"] == 0 and file_entry(r, a)["app"]["POSIX_RENAMES"] == 1
    assert file_entry(r, b)["fs"]["POSIX_RENAMES"] == 0 and file_entry(r, b)["fs"]["POSIX_OPENS"] == 1
    # stat, statx and access of the staged b were answered from the tier
    assert file_entry(r, b)["app"]["POSIX_STATS"] == 3 and file_entry(r, b)["fs"]["POSIX_STATS"] == 0


def test_directories_are_created_once(target, tier, logdir):
    d = target / "out"
    res = stage_run(tier, target, logdir, bin_path("sluice-io"), f"mkdir:{d}", f"mkdir:{d}", f"mkdir:{d}",
                    f"creat:{d}/f", "write:10", "close")
    rets = [(r["ret"], r["errno"]) for r in map(json.loads, res.stdout.splitlines()) if "ret" in r]
    assert rets[:3] == [(0, 0), (-1, 17), (-1, 17)]   # EEXIST, as the file system would say
    e = file_entry(report_json(logdir), d)
    assert e["app"]["POSIX_MKDIRS"] == 1 and e["fs"]["POSIX_MKDIRS"] == 1
    assert (d / "f").read_bytes() == b"x" * 10
    # a new file in a directory made here needs no existence check
    assert file_entry(report_json(logdir), d / "f")["fs"]["POSIX_STATS"] == 0


@pytest.mark.parametrize("seed, mode", [(1, "stage"), (2, "stage"), (3, "stage"), (4, "stage"), (5, "auto"), (6, "auto")])
def test_differential_random_operations_in_stage_mode(tmp_path, tier, logdir, seed, mode):
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    m = base / f"sluice-stage-diff-{os.getpid()}-{seed}"
    r = tmp_path / "r"
    m.mkdir()
    r.mkdir()
    try:
        # early copies after every byte: the recopy from the lowest write is exercised
        cp = sluice("run", "-q", "--mode", mode, "--tier", str(tier), "--stage-delay", "50",
                    "--log-dir", str(logdir), "--path", str(m), "--", bin_path("sluice-difftest"),
                    str(seed), "2500", str(m), str(r), check=False,
                    env={"SLUICE_STAGE_PRECOPY": "1" if seed % 2 else "0"})
        assert cp.returncode == 0 and cp.stdout.startswith("ok"), cp.stdout[-2000:] + cp.stderr[-2000:]
        assert (m / "difftest.dat").read_bytes() == (r / "difftest.dat").read_bytes()
        assert tier_entries(tier) == []
    finally:
        subprocess.run(["rm", "-rf", str(m)])


def test_updating_an_existing_file_goes_straight_through(target, tier, logdir):
    f = target / "old.dat"
    f.write_bytes(b"y" * 1000)
    stage_run(tier, target, logdir, bin_path("sluice-io"), f"open:{f}:w", "write:10", "close")
    assert f.read_bytes() == b"x" * 10 + b"y" * 990
    assert tier_entries(tier) == []


def test_detach_then_drain(target, tier, logdir):
    f = target / "late.dat"
    stage_run(tier, target, logdir, bin_path("stagewriter"), str(f), "10", "1000", "0", extra=("--detach",))
    assert not f.exists() and len(tier_entries(tier)) == 1
    sluice("drain", "--tier", str(tier))
    assert f.read_bytes() == record_bytes(10, 1000) and tier_entries(tier) == []


# ---------------------------------------------------------------- crashes

@pytest.mark.parametrize("seed", range(6))
def test_sigkill_then_recover_loses_nothing(target, tier, logdir, seed):
    """Kill the writer at a random point: every byte it reported written is
    kept by `sluice recover`, and no file that was open at the kill ever has
    its final name (it is kept as NAME.sluice-incomplete)."""
    rnd = random.Random(seed)
    f = target / "ckpt.dat"
    env = python_env()
    cmd = [sys.executable, "-m", "sluice", "run", "-q", "--mode", "stage", "--tier", str(tier),
           "--log-dir", str(logdir), "--path", str(target), "--",
           bin_path("stagewriter"), str(f), "400", "16384", "2000"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    reported = 0
    deadline = time.time() + rnd.uniform(0.05, 0.6)
    while time.time() < deadline:
        line = p.stdout.readline()
        if line.startswith("wrote "):
            reported = int(line.split()[1])
    os.killpg(p.pid, signal.SIGKILL)
    rest = p.stdout.read()
    for line in rest.splitlines():
        if line.startswith("wrote "):
            reported = int(line.split()[1])
    p.wait()
    assert not f.exists()   # killed before close: nothing under the final name
    sluice("recover", str(tier))
    kept = target / "ckpt.dat.sluice-incomplete"
    assert not f.exists()
    data = kept.read_bytes()
    assert len(data) >= reported
    full = record_bytes(400, 16384)
    assert data == full[:len(data)]
    assert tier_entries(tier) == []
    sluice("recover", str(tier))   # idempotent
    assert kept.read_bytes() == data and not f.exists()


def test_recover_publishes_every_file_of_one_killed_process(tmp_path, tier, logdir):
    """Hundreds of closed, unpublished files of one process killed at once
    (detached: no job drainer publishes them meanwhile): recover's parallel
    publishers share that owner's lock between them instead of each taking
    the others for a live owner ("in use")."""
    target = tmp_path / "out"
    target.mkdir()
    (tmp_path / "c.toml").write_text("[stage]\ndrainers = 1\n")
    cp = stage_run(tier, target, logdir, "sh", "-c", f"cd {target} && for i in $(seq 400); do echo n$i > f$i; done; kill -9 $$",
                   extra=("--config", str(tmp_path / "c.toml"), "--detach"), check=False)
    assert cp.returncode == 128 + signal.SIGKILL
    left = len(tier_entries(tier))
    assert left > 8  # many still staged, or this proves nothing
    out = sluice("recover", "--jobs", "4", str(tier)).stdout
    assert out.splitlines()[-1].startswith(f"tier {tier}: {left} published")
    assert tier_entries(tier) == []
    assert all((target / f"f{i}").read_text() == f"n{i}\n" for i in range(1, 401))


def test_reader_never_sees_a_partial_file(target, tier, logdir):
    f = target / "big.dat"
    size = 8 * 1024 * 1024
    seen: list[int] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            try:
                seen.append(len(f.read_bytes()))
            except FileNotFoundError:
                pass

    t = threading.Thread(target=poll)
    t.start()
    try:
        stage_run(tier, target, logdir, bin_path("stagewriter"), str(f), "128", "65536", "500")
    finally:
        stop.set()
        t.join()
    assert seen and set(seen) == {size}


def test_overwrite_of_a_linked_file_keeps_its_inode(target, tier, logdir):
    """O_TRUNC over a file another name links: published into that very
    file (as plain's open writes it), so the other name sees the new bytes.
    A file no other name links is replaced whole (no reader sees it half
    written)."""
    linked, other, alone = target / "linked.dat", target / "other-name.dat", target / "alone.dat"
    linked.write_bytes(b"old" * 1000)
    os.link(linked, other)
    alone.write_bytes(b"old")
    ino_linked, ino_alone = linked.stat().st_ino, alone.stat().st_ino
    stage_run(tier, target, logdir, bin_path("sluice-io"), f"open:{linked}:w,trunc", "write:100", "close",
              f"open:{alone}:w,trunc", "write:50", "close")
    assert linked.read_bytes() == other.read_bytes() == b"x" * 100
    assert linked.stat().st_ino == ino_linked and linked.stat().st_nlink == 2
    assert alone.read_bytes() == b"x" * 50 and alone.stat().st_ino != ino_alone
    r = report_json(logdir)
    assert file_entry(r, linked)["fs"]["POSIX_RENAMES"] == 0 and file_entry(r, alone)["fs"]["POSIX_RENAMES"] == 1


def test_overwrite_of_another_users_file_keeps_its_owner(target, tier, logdir):
    """O_TRUNC over a file owned by another user (root may write it): plain
    keeps the file, its owner and group; so does the publish (in place)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    f = target / "theirs.dat"
    f.write_bytes(b"old contents")
    os.chown(f, 65534, 65534)
    f.chmod(0o664)
    ino = f.stat().st_ino
    stage_run(tier, target, logdir, bin_path("sluice-io"), f"open:{f}:w,trunc", "write:20", "close")
    st = f.stat()
    assert f.read_bytes() == b"x" * 20
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777, st.st_ino) == (65534, 65534, 0o664, ino)


@pytest.mark.parametrize("opts,fsyncs,utimes", [((), 0, 0), (("--stage-fsync",), 1, 0),
                                                (("--stage-keep-times",), 0, 1)])
def test_publish_sync_and_times_settings(tmp_path, tier, logdir, opts, fsyncs, utimes):
    work = tmp_path / "w"
    work.mkdir()
    f = work / "out.dat"
    sluice("run", "--mode", "stage", "--tier", str(tier), "--log-dir", str(logdir), "--path", str(work), *opts,
           "--", bin_path("sluice-io"), f"creat:{f}", "write:100", "close")
    fs = file_entry(report_json(logdir), f)["fs"]
    assert (fs["POSIX_FSYNCS"], fs["POSIX_UTIMES"]) == (fsyncs, utimes)
    assert f.read_bytes() == b"x" * 100


MAPPER = """
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"." * 4096)
m = mmap.mmap(fd, 4096)
os.close(fd)
time.sleep(0.5)              # past the stage delay: a staged copy would be published now
m[:11] = b"via mapping"
m.flush()
m.close()
"""


def test_writes_through_a_mapping_after_close_reach_the_file(target, tier, logdir):
    f = target / "mapped.dat"
    stage_run(tier, target, logdir, sys.executable, "-c", MAPPER, str(f))
    assert f.read_bytes() == b"via mapping" + b"." * (4096 - 11)


FORKED_WRITER = """
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(16):
        os.write(fd, b"x" * 262144)
    print("written", flush=True)
    sys.stdin.readline()
    os.close(fd)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_forked_child_copies_its_large_file_early(target, tier, logdir):
    """A process forked from one under stage mode stages its own files with
    the early copy (it had none: the parent's fork mark was inherited)."""
    f = target / "big.dat"
    argv = [sys.executable, "-m", "sluice", "run", "--mode", "stage", "--tier", str(tier), "--stage-precopy", "1M",
            "--log-dir", str(logdir), "--path", str(target), "--", sys.executable, "-c", FORKED_WRITER, str(f)]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=python_env())
    try:
        assert p.stdout.readline().strip() == "written"
        deadline = time.monotonic() + 10
        early = []
        while not early and time.monotonic() < deadline:
            early = [n for n in os.listdir(target) if n.startswith(".big.dat.sluice-")]
            time.sleep(0.02)
        assert early, "no early copy while the child still writes"
    finally:
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.wait(60) == 0
    assert f.stat().st_size == 16 * 262144


def test_freopen_for_writing_is_staged(target, tier, logdir):
    """freopen(path, "w", stream) (a program sending stdout to a file): the
    stream writes the staged file, as fopen's would."""
    a, b = target / "first.txt", target / "second.txt"
    stage_run(tier, target, logdir, bin_path("sluice-io"), f"fopen:{a}:w", "fwrite:10", f"freopen:{b}:w",
              "fwrite:100", "fclose")
    assert a.read_bytes() == b"x" * 10 and b.read_bytes() == b"x" * 100
    e = file_entry(report_json(logdir), b)
    # opened through the tier (the C library's own open is invisible), then
    # published: one write of its 100 bytes reached the shared file system
    assert e["app"]["POSIX_OPENS"] == 1 and e["fs"]["POSIX_WRITES"] == 1 and e["fs"]["POSIX_BYTES_WRITTEN"] == 100


# ---------------------------------------------------------------- one namespace on the node

WRITER = """
import os, sys
path = sys.argv[1]
fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o640)
os.write(fd, b"staged " * 100)
os.close(fd)
print("written", flush=True)
sys.stdin.readline()
"""


def staged_writer(tier: Path, target: Path, logdir: Path, path: Path, delay_ms: int) -> subprocess.Popen:
    """A process under stage mode that writes and closes `path`, then waits
    (its file stays staged until the stage delay passes or it exits)."""
    argv = [sys.executable, "-m", "sluice", "run", "--mode", "stage", "--tier", str(tier), "--stage-delay",
            str(delay_ms), "--log-dir", str(logdir / "writer"), "--path", str(target), "--",
            sys.executable, "-c", WRITER, str(path)]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=python_env())
    assert p.stdout.readline().strip() == "written"
    return p


def finish(p: subprocess.Popen) -> None:
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.wait(60) == 0


def other_process(tier: Path, target: Path, logdir: Path, code: str, *args: str) -> str:
    return stage_run(tier, target, logdir / "other", sys.executable, "-c", code, *args).stdout


def test_another_process_sees_lists_and_reads_a_staged_file(target, tier, logdir):
    f = target / "result.dat"
    w = staged_writer(tier, target, logdir, f, 20000)
    try:
        assert not f.exists()   # not on the shared file system yet (a process without sluice sees nothing)
        out = other_process(tier, target, logdir, (
            "import os, sys; p = sys.argv[1]; st = os.stat(p); "
            "print(st.st_size, oct(st.st_mode & 0o777), os.access(p, os.R_OK), sorted(os.listdir(os.path.dirname(p))), "
            "open(p, 'rb').read() == b'staged ' * 100, [e.name for e in os.scandir(os.path.dirname(p))])"), str(f))
        assert out.split("\n")[0] == "700 0o640 True ['result.dat'] True ['result.dat']"
        assert not f.exists()
    finally:
        finish(w)
    assert f.read_bytes() == b"staged " * 100 and oct(f.stat().st_mode & 0o777) == "0o640"
    assert list((tier / "names").iterdir()) == []   # the index forgets a published file


def test_exclusive_create_is_exclusive_across_processes(target, tier, logdir):
    f = target / "lock.pid"
    w = staged_writer(tier, target, logdir, f, 20000)
    try:
        out = other_process(tier, target, logdir, (
            "import os, sys\n"
            "try:\n    os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY)\n    print('created')\n"
            "except FileExistsError:\n    print('EEXIST')"), str(f))
        assert out.strip() == "EEXIST"
    finally:
        finish(w)


def test_another_process_writes_a_staged_file_through_the_tier(target, tier, logdir):
    """A second process that opens another's staged file for writing shares
    its data file (not a copy): what it writes is what gets published, once."""
    f = target / "shared.dat"
    w = staged_writer(tier, target, logdir, f, 300)
    try:
        other_process(tier, target, logdir, (
            "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC); os.write(fd, b'second'); "
            "os.close(fd)"), str(f))
        assert w.poll() is None   # the owner still runs: it publishes after its delay
    finally:
        finish(w)
    assert f.read_bytes() == b"second"
    assert list((tier / "names").iterdir()) == [] and list((tier / "journal").iterdir()) == []


HOLDER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b" and more")
print("open", flush=True)
sys.stdin.readline()
os.write(fd, b" at the end")
os.close(fd)
"""


def test_a_staged_file_left_open_by_another_process_is_published_by_it(target, tier, logdir):
    """The owner ends while another process still writes its staged file: it
    leaves the file to that process, whose close publishes it."""
    f = target / "handed.dat"
    w = staged_writer(tier, target, logdir, f, 20000)
    argv = [sys.executable, "-m", "sluice", "run", "--mode", "stage", "--tier", str(tier), "--log-dir",
            str(logdir / "holder"), "--path", str(target), "--", sys.executable, "-c", HOLDER, str(f)]
    h = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=python_env())
    try:
        assert h.stdout.readline().strip() == "open"
        finish(w)   # the owner ends: the file is not published yet (the holder writes it)
        assert not f.exists()
    finally:
        h.stdin.write("\n")
        h.stdin.flush()
        assert h.wait(60) == 0
    assert f.read_bytes() == b"staged " * 100 + b" and more at the end"
    assert list((tier / "names").iterdir()) == [] and list((tier / "journal").iterdir()) == []


def test_another_process_renames_and_removes_a_staged_file(target, tier, logdir):
    """Another process renames and removes files a process staged and closed
    (left to its job's drainer): on the tier, at once; the removed one never
    reaches the shared file system, the renamed one is published under its
    new name: the tree is plain's."""
    f, g, h = target / "a.dat", target / "b.dat", target / "c.dat"
    w = staged_writer(tier, target, logdir, f, 300)
    w2 = staged_writer(tier, target, logdir, h, 300)
    try:
        other_process(tier, target, logdir, "import os, sys; os.rename(sys.argv[1], sys.argv[2]); os.unlink(sys.argv[3])",
                      str(f), str(g), str(h))
        sluice("wait", "--tier", str(tier), "--timeout", "60", str(g))
        assert sorted(p.name for p in target.iterdir()) == ["b.dat"]
        assert g.read_bytes() == b"staged " * 100
    finally:
        finish(w)
        finish(w2)


def test_directory_rename_and_rmdir_with_staged_files_inside(tmp_path, tier, logdir):
    """Files staged in a directory move with it when it is renamed; rmdir of
    a directory holding staged files says ENOTEMPTY; the tree is plain's."""
    code = ("import os, sys; w = sys.argv[1]; os.mkdir(w + '/d'); os.mkdir(w + '/e')\n"
            "for n in ('a', 'b'):\n    open(w + '/d/' + n, 'w').write(n * 10)\n"
            "open(w + '/e/c', 'w').write('c')\n"
            "os.rename(w + '/d', w + '/d2')\n"
            "try:\n    os.rmdir(w + '/e')\nexcept OSError as x:\n    print(x.errno)\n"
            "print(sorted(os.listdir(w + '/d2')), open(w + '/d2/a').read())")
    outs, trees = {}, {}
    for name in ("plain", "stage"):
        w = tmp_path / name
        w.mkdir()
        if name == "plain":
            outs[name] = subprocess.run([sys.executable, "-c", code, str(w)], capture_output=True, text=True,
                                        check=True).stdout
        else:
            outs[name] = stage_run(tier, w, logdir, sys.executable, "-c", code, str(w)).stdout
        trees[name] = {str(p.relative_to(w)): p.read_bytes() if p.is_file() else None for p in sorted(w.rglob("*"))}
    assert outs["stage"] == outs["plain"] == "39\n['a', 'b'] aaaaaaaaaa\n"
    assert trees["stage"] == trees["plain"]


FSWORKER = str(Path(__file__).resolve().parents[1] / "progs" / "fsworker.py")


def random_commands(seed: int, n: int, workers: int, hold: bool = True) -> list[tuple[int, dict]]:
    """A seeded sequence of (worker, command) over a few names: writes of
    every kind, reads, stats, listings, renames, removals, mode changes and
    descriptors held open across steps. A name a worker holds open is not
    renamed, removed or chmod'ed: when another process staged it, that waits
    for its publish, after every writer closed it (docs/stage.md, "What it
    does not do"). Without `hold`, no descriptor stays open across steps:
    auto mode buffers updates of existing files, visible to other processes
    at close, as NFS's (docs/buffer.md)."""
    rng = random.Random(seed)
    names = [f"{{root}}/d/f{i}" for i in range(5)] + [f"{{root}}/g{i}" for i in range(3)]
    held: dict[int, str] = {}
    out = []
    for _ in range(n):
        w = rng.randrange(workers)
        path = rng.choice(names)
        others = set(held.values())
        k = rng.random()
        if k < 0.30:
            how = rng.choice(["trunc", "trunc", "excl", "append"])
            if how == "trunc" and any(p == path for v, p in held.items() if v != w):
                how = "append"   # (a truncating overwrite is a new staged file: see docs/stage.md)
            cmd = {"op": "write", "path": path, "data": f"{w}:{rng.randrange(1000)};" * rng.randint(1, 30),
                   "how": how}
        elif k < 0.42:
            cmd = {"op": "read", "path": path}
        elif k < 0.50:
            cmd = {"op": "stat", "path": path}
        elif k < 0.56:
            cmd = {"op": "list", "path": rng.choice(["{root}", "{root}/d"])}
        elif k < 0.66:
            to = rng.choice(names)
            if path in others or to in others:
                continue
            cmd = {"op": "rename", "path": path, "to": to}
        elif k < 0.73:
            if path in others:
                continue
            cmd = {"op": "unlink", "path": path}
        elif k < 0.78:
            if path in others:
                continue
            cmd = {"op": "chmod", "path": path, "mode": rng.choice([0o600, 0o640, 0o644])}
        elif not hold:
            continue
        elif w not in held:
            held[w] = path
            cmd = {"op": "hold", "path": path}
        elif k < 0.92:
            cmd = {"op": "append", "data": f"[{w}]" * rng.randint(1, 10)}
        else:
            del held[w]
            cmd = {"op": "release"}
        out.append((w, cmd))
    for w in sorted(held):
        out.append((w, {"op": "release"}))
    return out


def run_workers(root: Path, commands: list[tuple[int, dict]], workers: int, stage: tuple | None,
                mode: str = "stage") -> list:
    (root / "d").mkdir(parents=True)
    procs = []
    for i in range(workers):
        argv = [sys.executable, FSWORKER]
        if stage:
            tier, logdir = stage
            argv = [sys.executable, "-m", "sluice", "run", "-q", "--mode", mode, "--tier", str(tier),
                    "--stage-delay", "100", "--log-dir", str(logdir / f"w{i}"), "--path", str(root), "--", *argv]
        procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                      env=python_env()))
    answers = []
    try:
        for w, cmd in commands:
            line = json.dumps(cmd).replace("{root}", str(root))
            procs[w].stdin.write(line + "\n")
            procs[w].stdin.flush()
            answers.append((w, cmd["op"], json.loads(procs[w].stdout.readline())))
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(120)
    return answers


def tree(root: Path) -> dict:
    return {str(p.relative_to(root)): (oct(p.stat().st_mode & 0o7777), p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("seed, mode", [(1, "stage"), (2, "stage"), (3, "stage"), (4, "auto"), (5, "auto")])
def test_several_processes_see_one_namespace_as_plain(tmp_path, tier, logdir, seed, mode):
    """The differential tester with several processes: three processes under
    stage mode (or auto: staged new files, buffered updates) run one seeded
    sequence of operations on shared names, one at a time; every answer each
    one gets, and the tree left, are plain's."""
    commands = random_commands(seed, 150, 3, hold=mode == "stage")
    plain = run_workers(tmp_path / "plain", commands, 3, None)
    staged = run_workers(tmp_path / "stage", commands, 3, (tier, logdir), mode)
    for i, (a, b) in enumerate(zip(plain, staged)):
        assert a == b, f"step {i}: {commands[i]}: plain {a}, stage {b}"
    assert tree(tmp_path / "stage") == tree(tmp_path / "plain")
    assert list((tier / "names").iterdir()) == []


# ---------------------------------------------------------------- failures

def test_full_shared_file_system_keeps_the_data_until_drain(small_tmpfs, tier, logdir):
    small_fs = small_tmpfs
    f = small_fs / "result.dat"
    res = stage_run(tier, small_fs, logdir, bin_path("stagewriter"), str(f), "32", "65536", "0", check=False)
    assert "cannot publish" in res.stderr and "sluice drain" in res.stderr
    # the program succeeded, its file did not arrive: sluice run says so (EX_TEMPFAIL)
    assert res.returncode == 75 and "1 file could not be published" in res.stderr
    assert not f.exists() and len(tier_entries(tier)) == 1
    entry = (tier / "journal" / tier_entries(tier)[0]).read_text()
    assert "state=closed" in entry and "error=" in entry and "No space left" in entry
    assert [p.name for p in small_fs.iterdir()] == []   # the temporary file went too
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_fs)], check=True)
    sluice("drain", "--tier", str(tier))
    assert f.read_bytes() == record_bytes(32, 65536)


@pytest.fixture
def small_tier(tmp_path):
    """A node-local tier of 1 MiB (a tmpfs of its own): a tier that fills up."""
    yield from mounted_tmpfs(tmp_path, "tier", "size=1m,mode=0700")


def test_full_tier_goes_straight_through(small_tier, target, logdir):
    t = small_tier
    f = target / "large.dat"
    stage_run(t, target, logdir, bin_path("stagewriter"), str(f), "48", "65536", "0",
              env={"SLUICE_STAGE_RESERVE": "0"})
    assert f.read_bytes() == record_bytes(48, 65536)
    assert file_entry(report_json(logdir), f)["app"]["POSIX_FALLBACKS"] == 1
    # writev: a vector cut short by the full tier is finished too
    g = target / "vectored.dat"
    res = stage_run(t, target, logdir, bin_path("sluice-io"), f"creat:{g}", *["writev:65536:4"] * 40, "close",
                    env={"SLUICE_STAGE_RESERVE": "0"})
    assert [json.loads(x)["ret"] for x in res.stdout.splitlines()][1:-1] == [65536] * 40
    assert g.read_bytes() == b"x" * (40 * 65536)


FULL_TIER_TWO_DESCRIPTIONS = r"""
import os, sys
f = sys.argv[1]
w = os.open(f, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
r = os.open(f, os.O_RDONLY)                   # a second description of the staged file
a = os.open(f, os.O_RDWR)                     # and a third
d = os.dup(w)
os.write(w, b"a" * 65536)
for i in range(24):                           # the tier fills up on the way
    os.write(w, bytes([98 + i % 20]) * 65536)
os.pwrite(a, b"third", 100)
os.write(d, b"dup")
print(len(os.read(r, 1 << 24)), os.fstat(r).st_size)
for fd in (w, r, a, d):
    os.close(fd)
"""


def test_full_tier_moves_every_description_of_the_file(small_tier, target, logdir):
    """Every description of a file that moves to the shared file system
    names the one published file: a second publish would replace the file
    under the first (its writes went to a removed file, its reads saw the
    old bytes). (No O_APPEND description: MooseFS appends where its file
    handle last saw the end, not at the file's end.)"""
    f = target / "multi.dat"
    res = stage_run(small_tier, target, logdir, sys.executable, "-c", FULL_TIER_TWO_DESCRIPTIONS, str(f),
                    env={"SLUICE_STAGE_RESERVE": "0"})
    plain = target / "plain.dat"
    want = subprocess.run([sys.executable, "-c", FULL_TIER_TWO_DESCRIPTIONS, str(plain)], capture_output=True,
                          text=True, check=True)
    assert res.stdout == want.stdout == f"{25 * 65536 + 3} {25 * 65536 + 3}\n"
    assert f.read_bytes() == plain.read_bytes()
    assert file_entry(report_json(logdir), f)["app"]["POSIX_FALLBACKS"] == 3


FULL_TIER_SHARED = r"""
import errno, os, subprocess, sys
f = sys.argv[1]
child = '''
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)       # a second writer, through the tier
os.pwrite(fd, b"c" * 4096, 0)
print("joined", flush=True)
sys.stdin.readline()
os.pwrite(fd, b"d" * 4096, 8192)             # after the tier filled up under the first writer
os.close(fd)
'''
fd = os.open(f, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 65536)
p = subprocess.Popen([sys.executable, "-c", child, f], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
p.stdout.readline()
result = "written"
try:
    for i in range(32):
        os.write(fd, b"b" * 65536)
except OSError as e:
    result = errno.errorcode[e.errno]
p.stdin.write(b"go\n")
p.stdin.close()
p.wait()
os.close(fd)
print(result)
"""


def test_full_tier_under_a_file_another_process_writes_keeps_that_process_s_bytes(small_tier, target, logdir):
    """The tier fills up under a file a second process also writes through the tier: the file cannot move
    to the shared file system under that process's feet (its later writes would go to a removed data file).
    The first writer gets the tier's ENOSPC; every byte the second one wrote is in the published file."""
    f = target / "shared.dat"
    res = stage_run(small_tier, target, logdir, sys.executable, "-c", FULL_TIER_SHARED, str(f),
                    env={"SLUICE_STAGE_RESERVE": "0"})
    assert res.stdout.split()[-1] == "ENOSPC"
    data = f.read_bytes()
    assert data[:4096] == b"c" * 4096 and data[4096:8192] == b"a" * 4096
    assert data[8192:12288] == b"d" * 4096 and data[12288:65536] == b"a" * (65536 - 12288)
    assert set(data[65536:]) <= {ord("b")}


# ---------------------------------------------------------------- security

def test_tier_that_is_a_symlink_is_refused(target, tmp_path, logdir):
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    link = tmp_path / "tier-link"
    link.symlink_to(real)
    f = target / "f"
    res = stage_run(link, target, logdir, bin_path("stagewriter"), str(f), "2", "100", "0")
    assert "is a symbolic link" in res.stderr and str(link) in res.stderr
    assert f.read_bytes() == record_bytes(2, 100)   # straight to the shared file system
    assert list(real.iterdir()) == []


def test_tier_owned_by_another_user_is_refused(target, tmp_path, logdir):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory to another user")
    t = tmp_path / "theirs"
    t.mkdir(mode=0o700)
    os.chown(t, 65534, 65534)
    f = target / "f"
    res = stage_run(t, target, logdir, bin_path("stagewriter"), str(f), "2", "100", "0")
    assert "belongs to uid 65534" in res.stderr
    assert f.read_bytes() == record_bytes(2, 100)
    assert list(t.iterdir()) == []
    t.chmod(0o755)
    os.chown(t, 0, 0)
    res = stage_run(t, target, logdir, bin_path("stagewriter"), str(f), "2", "100", "0")
    assert "open to other users" in res.stderr


def test_demo_in_stage_mode(tmp_path):
    """The demo's scratch files are created and removed on the tier: their
    unlinks and most opens never reach the shared file system."""
    out = sluice("demo", "--mode", "stage", "--dir", str(tmp_path / "demo"), "--steps", "5", cwd=tmp_path).stdout
    assert "mode: stage" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("unlinks"))
    assert row[0] == "unlinks" and int(row[1]) > 0 and row[2] == "0"
