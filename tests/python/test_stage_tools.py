"""Stage mode's tools (`sluice status/drain/recover/wait`) on tiers built by hand.

The tier contents are written with the Python journal writer, not the
preload library, so these tests pin the format and the publishing steps of
docs/stage.md on their own.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import shutil
import socket
import stat
import subprocess
import sys
import time
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import dead_pid, python_env, sluice
from sluice.stage import journal
from sluice.stage.journal import Entry, JournalError
from sluice.stage.publish import temp_path
from sluice.stage.tier import Tier, open_tier

MTIME_NS = 1_700_000_000_123_456_789
ATIME_NS = 1_700_000_100_000_000_000


@pytest.fixture
def tier(tmp_path: Path) -> Tier:
    t = open_tier(tmp_path / "tier", create=True)
    assert t is not None
    return t


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    d = tmp_path / "shared"
    d.mkdir()
    return d


def stage(tier: Tier, path: Path | str, data: bytes, *, seq: int = 1, pid: int | None = None,
          state: str = "closed", mode: int = 0o640, age_s: float = 0.0) -> Entry:
    """Put a staged file on the tier as the library would leave it."""
    pid = dead_pid() if pid is None else pid
    created = time.time_ns() - int(age_s * 1e9)
    e = Entry(id=f"{socket.gethostname()}-{pid}-{seq}", path=str(path), mode=mode, state=state, pid=pid,
              created_ns=created, updated_ns=created)
    d = tier.data(e.id)
    d.write_bytes(data)
    os.chmod(d, 0o600)
    os.utime(d, ns=(ATIME_NS, MTIME_NS))
    journal.write(tier.journal_dir, e)
    return e


def tier_args(tier: Tier) -> list[str]:
    return ["--tier", str(tier.root)]


def run_sluice(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    # Never the default tier: that is the user's real one.
    return sluice(*args, check=check, env={"SLUICE_TIER": "/nonexistent/sluice-test-tier"})


def assert_published(path: Path, data: bytes, mode: int = 0o640) -> None:
    assert path.read_bytes() == data
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == mode
    assert st.st_mtime_ns == MTIME_NS
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".") and ".sluice-" in p.name], \
        "a temporary file was left"


def assert_gone(tier: Tier, e: Entry) -> None:
    assert not tier.data(e.id).exists() and not tier.journal(e.id).exists()


def assert_kept(tier: Tier, e: Entry, data: bytes) -> None:
    assert tier.data(e.id).read_bytes() == data
    assert tier.journal(e.id).exists()


# ---------------------------------------------------------------- the journal format


def test_entry_round_trip_with_percent_and_newline_in_path():
    e = Entry(id="node-01.cluster-4242-7", path="/scratch/a%25b\nc d/out%.nc", mode=0o644, state="open",
              pid=4242, created_ns=1, updated_ns=2, error="ENOSPC: No space left on device")
    raw = journal.encode(e)
    assert b"path=/scratch/a%2525b%0Ac d/out%25.nc\n" in raw
    assert raw.startswith(b"sluice-stage 2\nid=node-01.cluster-4242-7\n")
    body, crc_line = raw[:-1].rsplit(b"\n", 1)
    assert crc_line == b"crc=%08x" % zlib.crc32(body + b"\n")
    assert journal.decode(raw, "node-01.cluster-4242-7") == e


def test_documented_layout():
    e = Entry(id="vm-4242-7", path="/mnt/sluice-pfs/run/out.nc", mode=0o644, state="closed", pid=4242,
              created_ns=1795000000000000000, updated_ns=1795000000123000000)
    lines = journal.encode(e).decode().splitlines()
    assert lines[:-1] == ["sluice-stage 2", "id=vm-4242-7", "path=/mnt/sluice-pfs/run/out.nc", "mode=0644",
                          "publish=create", "state=closed", "pid=4242", "created_ns=1795000000000000000",
                          "updated_ns=1795000000123000000", "error="]
    assert len(lines[-1]) == len("crc=") + 8
    inplace = journal.encode(replace(e, inplace=True))
    assert b"\npublish=inplace\n" in inplace and journal.decode(inplace, "vm-4242-7").inplace


def test_version_1_entries_are_still_read():
    """An entry left on a tier by the previous format (no `publish` line)."""
    body = (b"sluice-stage 1\nid=vm-4242-7\npath=/x/out.nc\nmode=0640\nstate=closed\npid=4242\n"
            b"created_ns=10\nupdated_ns=20\nerror=\n")
    e = journal.decode(_with_crc(body), "vm-4242-7")
    assert (e.path, e.mode, e.state, e.inplace) == ("/x/out.nc", 0o640, "closed", False)


def _with_crc(body: bytes) -> bytes:
    return body + b"crc=%08x\n" % zlib.crc32(body)


VALID = journal.encode(Entry(id="vm-4242-7", path="/x/out.nc", mode=0o644, state="closed", pid=4242,
                             created_ns=10, updated_ns=20))
VALID_BODY = VALID[: VALID.rindex(b"crc=")]


@pytest.mark.parametrize("damage, reason", [
    (lambda b: b.replace(b"crc=", b"crc=0") [:-1] + b"\n", "bad crc line"),
    (lambda b: b[:-6] + (b"0" if b[-6:-5] != b"0" else b"1") + b[-5:], "CRC mismatch"),
    (lambda b: b[: len(b) // 2], "truncated"),
    (lambda b: b"", "truncated"),
    (lambda b: b[:-1], "truncated"),
    (lambda b: b.replace(b"sluice-stage 2", b"sluice-stage 3"), "wrong format tag"),
    (lambda b: _with_crc(VALID_BODY.replace(b"publish=create", b"publish=rename")), "bad publish"),
    (lambda b: _with_crc(VALID_BODY.replace(b"sluice-stage 2", b"sluice-stage 1")), "key lines"),
    (lambda b: bytes(random.Random(5).randrange(256) for _ in range(300)), None),
    (lambda b: _with_crc(VALID_BODY.replace(b"mode=0644", b"mode=0648")), "bad mode"),
    (lambda b: _with_crc(VALID_BODY.replace(b"pid=4242", b"pid=+4242")), "bad pid"),
    (lambda b: _with_crc(VALID_BODY.replace(b"state=closed", b"state=done")), "bad state"),
    (lambda b: _with_crc(VALID_BODY.replace(b"path=/x/out.nc", b"path=x/out.nc")), "absolute"),
    (lambda b: _with_crc(VALID_BODY.replace(b"path=/x/out.nc", b"path=/x/o%41.nc")), "percent"),
    (lambda b: _with_crc(VALID_BODY.replace(b"created_ns=10\n", b"")), "key lines"),
    (lambda b: _with_crc(VALID_BODY.replace(b"created_ns=10\nupdated_ns=20", b"updated_ns=20\ncreated_ns=10")),
     "want key"),
])
def test_damaged_entries_raise_journal_error(damage, reason):
    with pytest.raises(JournalError, match=reason):
        journal.decode(damage(VALID), "vm-4242-7")


def test_entry_named_otherwise_is_refused():
    with pytest.raises(JournalError, match="does not match"):
        journal.decode(VALID, "vm-4242-8")


def _mutate(rng: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i:i] = bytes([rng.choice(b"=\n%0123456789/-ax\x00\xff")])
        elif op == 2:
            del b[i : i + rng.randint(1, 8)]
        elif op == 3:
            b = b[:i]
        else:
            j = rng.randrange(len(b) + 1)
            b[i:i] = b[j : j + rng.randint(1, 20)]
    return bytes(b)


def test_mutation_fuzz_never_crashes_the_parser():
    seed = int(os.environ.get("SLUICE_FUZZ_SEED", "20240517"))
    print(f"seed {seed}")
    rng = random.Random(seed)
    parsed = 0
    for n in range(600):
        raw = _mutate(rng, VALID)
        if n % 2:  # re-sign half of them, so that the checks after the CRC see the damage too
            raw = _with_crc(_mutate(rng, VALID_BODY))
        try:
            e = journal.decode(raw, "vm-4242-7")
        except JournalError as err:
            assert "\n" not in str(err)
        else:
            parsed += 1
            assert journal.decode(journal.encode(e), e.id) == e
    assert parsed < 600


# ---------------------------------------------------------------- recover / drain


def test_recover_publishes_exact_bytes_mode_and_mtime(tier, shared):
    data = random.Random(1).randbytes(9 * (1 << 20) + 12345)  # several 4 MiB write units
    e = stage(tier, shared / "out.nc", data, mode=0o640)
    cp = run_sluice("recover", str(tier.root))
    assert f"published {shared / 'out.nc'}" in cp.stdout
    assert_published(shared / "out.nc", data, 0o640)
    assert_gone(tier, e)


def test_recover_twice_is_a_no_op_the_second_time(tier, shared):
    e = stage(tier, shared / "a", b"first bytes\n", mode=0o600)
    run_sluice("recover", str(tier.root))
    before = (shared / "a").stat()
    cp = run_sluice("recover", str(tier.root))
    assert "nothing to publish" in cp.stdout and cp.stderr == ""
    assert (shared / "a").stat().st_ino == before.st_ino
    assert_published(shared / "a", b"first bytes\n", 0o600)
    assert_gone(tier, e)


def test_recover_removes_an_empty_data_file_its_dead_process_never_entered(tier, shared):
    """Killed between creating data/ID and writing journal/ID, a process
    leaves an empty data file the program never had a descriptor for:
    recover removes it. One with bytes, or one whose process runs, stays."""
    host = socket.gethostname()
    empty_dead = tier.data(f"{host}-{dead_pid()}-1")
    with_bytes = tier.data(f"{host}-{dead_pid()}-2")
    running = tier.data(f"{host}-{os.getpid()}-3")
    empty_dead.write_bytes(b"")
    with_bytes.write_bytes(b"something")
    running.write_bytes(b"")
    run_sluice("recover", str(tier.root))
    assert not empty_dead.exists()
    assert with_bytes.read_bytes() == b"something" and running.exists()


def test_recover_removes_index_links_whose_entries_are_gone(tier, shared):
    """A process killed between removing a published entry's journal file
    and its index link leaves the link: recover removes it, and keeps the
    link of an entry still pending."""
    gone = tier.name_link(str(shared / "published"))
    gone.symlink_to(f"{socket.gethostname()}-{dead_pid()}-9 0644 {shared / 'published'}")
    e = stage(tier, shared / "kept", b"kept\n", state="open", pid=os.getpid())
    live = tier.name_link(e.path)
    live.symlink_to(f"{e.id} 0640 {e.path}")
    run_sluice("recover", str(tier.root))
    assert not os.path.lexists(gone) and os.path.lexists(live)


def test_recover_removes_a_journal_rewrite_its_killed_process_left(tier, shared):
    """journal/.ID.tmp is an entry being rewritten (renamed over journal/ID
    when written): its process killed before the rename, recover removes
    it; one of a running process, or one whose writer holds its lock, stays."""
    host = socket.gethostname()
    dead = tier.journal_dir / f".{host}-{dead_pid()}-4.tmp"
    running = tier.journal_dir / f".{host}-{os.getpid()}-5.tmp"
    locked = tier.journal_dir / f".{host}-{dead_pid()}-6.tmp"
    for p in (dead, running, locked):
        p.write_bytes(b"sluice-stage 2\n")
    fd = os.open(locked, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        run_sluice("recover", str(tier.root))
    finally:
        os.close(fd)
    assert not dead.exists() and running.exists() and locked.exists()


def test_open_entry_of_a_dead_process_is_kept_under_an_incomplete_name(tier, shared):
    # Killed while writing: perhaps cut short, so never under its own name
    # (an older complete version there stays); kept beside it, said so.
    (shared / "partial").write_bytes(b"yesterday's complete version")
    stage(tier, shared / "partial", b"what was written before the kill", state="open", mode=0o644)
    cp = run_sluice("recover", "--tier", str(tier.root))
    assert (shared / "partial").read_bytes() == b"yesterday's complete version"
    assert_published(shared / "partial.sluice-incomplete", b"what was written before the kill", 0o644)
    assert "1 incomplete (kept as NAME.sluice-incomplete)" in cp.stdout


def test_a_failed_publish_of_an_incomplete_file_never_gives_it_its_name(tier, shared):
    """recover cannot publish a file its killed process left open (its
    directory is gone): the entry stays open, so the next recover still
    keeps it as NAME.sluice-incomplete, not under its own name (the entry
    used to come back as closed, and the next recover published the cut
    short file as NAME)."""
    dest = shared / "later" / "partial"
    e = stage(tier, dest, b"cut short", state="open", mode=0o644)
    cp = run_sluice("recover", str(tier.root), check=False)
    assert cp.returncode == 1 and "ENOENT" in cp.stderr
    kept = journal.read(tier.journal(e.id))
    assert (kept.state, kept.error) == ("open", "ENOENT: No such file or directory")
    dest.parent.mkdir()
    cp = run_sluice("recover", str(tier.root))
    assert not dest.exists()
    assert_published(dest.parent / "partial.sluice-incomplete", b"cut short", 0o644)
    assert_gone(tier, e)


def test_recover_keeps_the_holes_of_a_sparse_file(tier, shared):
    """The library's publishing copies a sparse file extent by extent: the
    published file has the plain run's holes, not 64 MiB of zeros."""
    e = stage(tier, shared / "sparse", b"")
    with open(tier.data(e.id), "r+b") as f:
        f.seek(64 << 20)
        f.write(b"end")
    os.utime(tier.data(e.id), ns=(ATIME_NS, MTIME_NS))
    run_sluice("recover", str(tier.root))
    st = (shared / "sparse").stat()
    assert st.st_size == (64 << 20) + 3
    assert st.st_blocks * 512 < 1 << 20, st.st_blocks
    with open(shared / "sparse", "rb") as f:
        f.seek(64 << 20)
        assert f.read() == b"end"
    assert_gone(tier, e)


def test_published_entry_left_by_a_crash_is_finished(tier, shared):
    (shared / "done").write_bytes(b"already there")
    e = stage(tier, shared / "done", b"already there", state="published")
    os.unlink(tier.data(e.id))  # the crash came between the two unlinks of step 5
    cp = run_sluice("drain", *tier_args(tier))
    assert "already published" in cp.stdout
    assert not tier.journal(e.id).exists()
    assert (shared / "done").read_bytes() == b"already there"


def test_stale_temporary_file_is_replaced(tier, shared):
    e = stage(tier, shared / "f", b"new")
    Path(temp_path(e)).write_bytes(b"half of an old publish")
    run_sluice("drain", *tier_args(tier))
    assert_published(shared / "f", b"new")


def test_long_names_still_fit_the_temporary_name(tier, shared):
    name = "n" * 250
    e = stage(tier, shared / name, b"long")
    assert len(os.path.basename(temp_path(e)).encode()) == 255
    run_sluice("drain", *tier_args(tier))
    assert_published(shared / name, b"long")


def test_concurrent_recovers_publish_each_file_once(tier, shared):
    rng = random.Random(2)
    files = {shared / f"f{i:02d}": rng.randbytes(rng.randrange(1, 3 << 20)) for i in range(24)}
    for seq, (path, data) in enumerate(files.items(), 1):
        stage(tier, path, data, seq=seq)
    cmd = [sys.executable, "-m", "sluice", "recover", str(tier.root), "--jobs", "4"]
    procs = [subprocess.Popen(cmd, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    published = [line.split()[1] for out, _ in outs for line in out.splitlines() if line.startswith("published ")]
    assert sorted(published) == sorted(str(p) for p in files)  # each once, by one of them
    for path, data in files.items():
        assert_published(path, data)
    assert os.listdir(tier.data_dir) == [] and os.listdir(tier.journal_dir) == []


@pytest.mark.parametrize("damage", ["bad crc", "truncated", "wrong tag", "random bytes"])
def test_corrupt_entry_is_reported_and_its_data_kept(tier, shared, damage):
    e = stage(tier, shared / "x", b"precious")
    good = stage(tier, shared / "y", b"fine", seq=2)
    raw = tier.journal(e.id).read_bytes()
    raw = {"bad crc": raw.replace(b"state=closed", b"state=clos3d"),
           "truncated": raw[:40],
           "wrong tag": raw.replace(b"sluice-stage 2", b"sluice-stage 9"),
           "random bytes": random.Random(3).randbytes(200)}[damage]
    tier.journal(e.id).write_bytes(raw)
    cp = run_sluice("recover", str(tier.root), check=False)
    assert cp.returncode == 1
    bad = [line for line in cp.stderr.splitlines() if str(tier.journal(e.id)) in line]
    assert len(bad) == 1 and "left alone" in bad[0], cp.stderr
    assert tier.data(e.id).read_bytes() == b"precious" and tier.journal(e.id).read_bytes() == raw
    assert not (shared / "x").exists()
    assert_published(shared / "y", b"fine")
    assert_gone(tier, good)
    doc = json.loads(run_sluice("status", "--json", *tier_args(tier)).stdout)
    assert [p["id"] for p in doc["problems"]] == [e.id]


@pytest.mark.parametrize("locked", ["journal", "owner"])
def test_entry_locked_by_a_live_holder_is_skipped(tier, shared, locked):
    e = stage(tier, shared / "busy", b"in use")
    fd = os.open(tier.journal(e.id) if locked == "journal" else tier.lock(e.id.rsplit("-", 1)[0]),
                 os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        cp = run_sluice("drain", *tier_args(tier))
        assert "1 in use by another process" in cp.stdout
        assert_kept(tier, e, b"in use")
        assert not (shared / "busy").exists()
    finally:
        os.close(fd)
    run_sluice("drain", *tier_args(tier))
    assert_published(shared / "busy", b"in use")


def test_a_lock_the_program_holds_on_its_data_is_not_ours(tier, shared):
    # The program's own flock on its file (HDF5 locks every file) is no
    # claim of ownership: the entry is published.
    e = stage(tier, shared / "h5", b"locked by the program")
    fd = os.open(tier.data(e.id), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        run_sluice("drain", *tier_args(tier))
        assert_published(shared / "h5", b"locked by the program")
    finally:
        os.close(fd)


def test_entries_of_running_processes_need_force(tier, shared):
    e = stage(tier, shared / "live", b"mine", pid=os.getpid())
    cp = run_sluice("drain", *tier_args(tier))
    assert "1 left to their running processes" in cp.stdout
    assert_kept(tier, e, b"mine")
    run_sluice("drain", "--force", *tier_args(tier))
    assert_published(shared / "live", b"mine")


def test_missing_destination_directory_keeps_the_entry_then_drain_publishes(tier, shared):
    dest = shared / "not-yet" / "out.nc"
    e = stage(tier, dest, b"payload")
    cp = run_sluice("drain", *tier_args(tier), check=False)
    assert cp.returncode == 1
    assert cp.stderr.strip() == (f"sluice: not published: {dest}: ENOENT: No such file or directory; "
                                 f"data kept in {tier.data(e.id)}")
    kept = journal.read(tier.journal(e.id))
    assert (kept.state, kept.error) == ("closed", "ENOENT: No such file or directory")
    assert_kept(tier, e, b"payload")
    dest.parent.mkdir()
    run_sluice("drain", *tier_args(tier))
    assert_published(dest, b"payload")
    assert_gone(tier, e)


@pytest.fixture
def read_only_dir(tmp_path: Path):
    """A directory that refuses new files, and a function making it writable again."""
    d = tmp_path / "ro"
    d.mkdir()
    if os.geteuid() != 0:  # permission bits stop a user
        d.chmod(0o555)
        yield d, lambda: d.chmod(0o755)
        d.chmod(0o755)
        return
    # root ignores permission bits: a read-only mount
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(d)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro", str(d)], check=True)
        yield d, lambda: subprocess.run(["mount", "-o", "remount,rw", str(d)], check=True)
    finally:
        subprocess.run(["umount", str(d)], check=False)


def test_read_only_destination_keeps_the_entry_then_drain_publishes(tier, read_only_dir):
    d, make_writable = read_only_dir
    e = stage(tier, d / "out.nc", b"payload", mode=0o644)
    cp = run_sluice("recover", str(tier.root), check=False)
    assert cp.returncode == 1
    err = "EROFS: Read-only file system" if os.geteuid() == 0 else "EACCES: Permission denied"
    assert f"not published: {d / 'out.nc'}: {err}" in cp.stderr
    kept = journal.read(tier.journal(e.id))
    assert (kept.state, kept.error) == ("closed", err)
    assert_kept(tier, e, b"payload")
    status = run_sluice("status", *tier_args(tier)).stdout
    assert f"[{err}]" in status
    make_writable()
    run_sluice("drain", *tier_args(tier))
    assert_published(d / "out.nc", b"payload", 0o644)


# ---------------------------------------------------------------- tier security


def _refused(cp: subprocess.CompletedProcess, path: Path, reason: str) -> None:
    assert cp.returncode == 1
    assert cp.stderr == f"sluice: error: refusing tier {path}: {reason}\n"


@pytest.mark.parametrize("verb", ["status", "drain", "recover", "wait"])
def test_tier_that_is_a_symbolic_link_is_refused(tmp_path, verb):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    _refused(run_sluice(verb, "--tier", str(link), check=False), link, "a symbolic link")


def test_tier_owned_by_another_user_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory away")
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 65534, 65534)
    _refused(run_sluice("recover", str(d), check=False), d, "owned by uid 65534, not by uid 0")


def test_tier_open_to_others_is_refused(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o755)
    _refused(run_sluice("drain", "--tier", str(d), check=False), d,
             "mode 0755 gives access to group or others (want 0700)")


def test_missing_tier_is_nothing_to_do(tmp_path):
    cp = run_sluice("recover", str(tmp_path / "none"))
    assert "does not exist" in cp.stdout
    assert json.loads(run_sluice("status", "--json", "--tier", str(tmp_path / "none")).stdout)["exists"] is False


# ---------------------------------------------------------------- wait and status


def test_wait_returns_when_a_concurrent_drain_publishes(tier, shared):
    stage(tier, shared / "w", b"awaited")
    cmd = [sys.executable, "-m", "sluice", "wait", "--tier", str(tier.root), "--timeout", "60", "--poll", "0.05",
           str(shared / "w")]
    waiter = subprocess.Popen(cmd, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert waiter.poll() is None, waiter.communicate()
    run_sluice("drain", *tier_args(tier))
    _, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0, err
    assert (shared / "w").read_bytes() == b"awaited"


def test_wait_times_out_with_exit_1(tier, shared):
    stage(tier, shared / "never", b"x")
    t0 = time.monotonic()
    cp = run_sluice("wait", *tier_args(tier), "--timeout", "0.5", check=False)
    assert cp.returncode == 1 and 0.5 <= time.monotonic() - t0 < 30
    assert cp.stderr.startswith("sluice: error: timed out after 0.5 s: 1 file(s) not yet published")
    assert len(cp.stderr.splitlines()) == 1


def test_wait_for_paths_without_entries_returns_at_once(tier, shared):
    stage(tier, shared / "other", b"x")
    run_sluice("wait", *tier_args(tier), "--timeout", "5", str(shared / "unrelated"))


def test_wait_waits_for_what_another_nodes_marker_names_and_skips_an_unreadable_one(tier, shared, tmp_path):
    """The markers `sluice run` leaves in the log directory for the other
    nodes (sluice.stage.announce), read by hand-made files here."""
    logs = tmp_path / "logs"
    (logs / ".sluice-pending").mkdir(parents=True)
    (logs / ".sluice-pending" / "node7-0.json").write_text(json.dumps(
        {"host": "node7", "uid": 0, "tier": "/dev/shm/sluice-stage-0", "paths": [str(shared / "a"), str(shared / "b")]}))
    (logs / ".sluice-pending" / "node8-0.json").write_text('{"host": "node8", "paths": [')
    cp = run_sluice("wait", *tier_args(tier), "--log-dir", str(logs), "--timeout", "0.3", check=False)
    assert cp.returncode == 1
    assert cp.stderr.splitlines() == [
        f"sluice wait: unreadable marker {logs}/.sluice-pending/node8-0.json (JSONDecodeError: Expecting value: "
        "line 1 column 29 (char 28)): not waited for",
        f"sluice: error: timed out after 0.3 s: 2 file(s) still on node7's tier /dev/shm/sluice-stage-0 ({shared}/a, "
        f"{shared}/b; sluice drain or sluice recover there publishes them)"]
    # a path the marker does not name needs no wait; one it names does
    run_sluice("wait", *tier_args(tier), "--log-dir", str(logs), "--timeout", "5", str(shared / "c"))
    assert run_sluice("wait", *tier_args(tier), "--log-dir", str(logs), "--timeout", "0.2", str(shared / "b"),
                      check=False).returncode == 1
    # the marker gone (node 7 published): nothing to wait for
    (logs / ".sluice-pending" / "node7-0.json").unlink()
    run_sluice("wait", *tier_args(tier), "--log-dir", str(logs), "--timeout", "5")


def test_status_json_lists_pending_entries_with_bytes_and_age(tier, shared):
    a = stage(tier, shared / "a", b"12345", age_s=30)
    b = stage(tier, shared / "b", bytes(4096), seq=2, state="open", age_s=2)
    doc = json.loads(run_sluice("status", "--json", *tier_args(tier)).stdout)
    assert doc["tier"] == str(tier.root) and doc["pending"] == 2 and doc["pending_bytes"] == 4101
    got = {e["id"]: e for e in doc["entries"]}
    assert got[a.id]["bytes"] == 5 and got[a.id]["state"] == "closed" and got[a.id]["path"] == str(shared / "a")
    assert 30 <= got[a.id]["age_s"] < 90
    assert got[b.id]["bytes"] == 4096 and got[b.id]["state"] == "open" and 2 <= got[b.id]["age_s"] < 60
    assert got[a.id]["process"] == "gone" and got[a.id]["mode"] == "0640"
    text = run_sluice("status", *tier_args(tier)).stdout.splitlines()
    assert text[0] == f"tier {tier.root}: 2 pending (4.0 KiB)"
    assert any(line.startswith("closed") and line.endswith(str(shared / "a")) for line in text)


def test_status_of_an_empty_tier(tier):
    assert run_sluice("status", *tier_args(tier)).stdout == f"tier {tier.root}: 0 pending (0 B)\n"


def test_tier_is_created_private(tmp_path):
    t = open_tier(tmp_path / "new", create=True)
    assert t is not None
    for d in (t.root, t.data_dir, t.journal_dir):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    shutil.rmtree(t.root)


@pytest.mark.parametrize("what", ["fifo-data", "fifo-journal", "fifo-lock", "symlink-data", "dir-data"])
def test_names_that_are_not_regular_files_are_refused_in_one_line(tier, shared, tmp_path, what):
    # A FIFO would block a reader forever (a batch epilog running `sluice
    # recover` must not hang); a symbolic link is never followed.
    e = stage(tier, shared / "odd", b"bytes")
    kind, where = what.split("-")
    target = {"data": tier.data(e.id), "journal": tier.journal(e.id),
              "lock": tier.lock(e.id.rsplit("-", 1)[0])}[where]
    target.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(target, 0o600)
    elif kind == "symlink":
        (tmp_path / "elsewhere").write_bytes(b"not ours")
        target.symlink_to(tmp_path / "elsewhere")
    else:
        target.mkdir()
    for verb in (["recover"], ["drain", "--force"], ["status"]):
        cp = subprocess.run([sys.executable, "-m", "sluice", *verb, *tier_args(tier)], capture_output=True,
                            text=True, timeout=60, env=python_env())
        assert "Traceback" not in cp.stderr, cp.stderr
    assert not (shared / "odd").exists()
    assert (tmp_path / "elsewhere").read_bytes() == b"not ours" if kind == "symlink" else True
