"""xfstests' fsstress under every mode: thousands of seeded operations on a
tree (creates, writes of every kind, truncates, fallocate modes, links,
symlinks, renames with and without renameat2's flags, directory renames,
unlinks, rmdirs, extended attributes, copy_file_range through syscall()):
with one process the run is deterministic, so the tree it leaves under
sluice must be the plain run's, entry for entry and byte for byte, and
nothing may stay on a stage tier. Several processes at once are not
deterministic: there the tier must end empty and no temporary file of a
publish may be left.

fsstress is built by scripts/xfstests (scripts/setup runs it) into a cache
outside the repository; without its source the tests skip."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import sluice, xfstests_program

OPS = "2000"
MODES = ["profile", "buffer", "stage", "auto"]


@pytest.fixture(scope="module")
def fsstress() -> str:
    return xfstests_program("fsstress")


@pytest.fixture
def disk():
    """A directory on the node's disk (ext4: every fallocate mode, xattrs)."""
    d = Path(tempfile.mkdtemp(prefix="sluice-fsstress-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def tier(tmp_path: Path) -> Path:
    t = Path("/dev/shm") / f"sluice-test-fsstress-{os.getpid()}-{tmp_path.name}"
    yield t
    shutil.rmtree(t, ignore_errors=True)


def tree(root: Path) -> dict[str, tuple]:
    """Every entry under root: its type, mode, size, content hash and link
    count (files), target (symbolic links); times and inode numbers left out."""
    out: dict[str, tuple] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            st = p.lstat()
            key = str(p.relative_to(root))
            if stat.S_ISREG(st.st_mode):
                out[key] = ("file", oct(st.st_mode), st.st_size, hashlib.md5(p.read_bytes()).hexdigest(),
                            st.st_nlink)
            elif stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(p))
            else:
                out[key] = ("other", oct(st.st_mode))
    return out


def run_fsstress(fsstress: str, work: Path, seed: int, procs: int, mode: str | None, tier: Path,
                 logdir: Path) -> None:
    argv = [fsstress, "-d", str(work), "-p", str(procs), "-n", OPS, "-s", str(seed)]
    if mode is None:
        subprocess.run(argv, check=True, capture_output=True, timeout=300)
        return
    sluice("run", "-q", "--mode", mode, "--tier", str(tier), "--stage-delay", "100", "--log-dir", str(logdir),
           "--path", str(work), "--", *argv, env={"SLUICE_AUTO_LOCAL": "0"}, timeout=300)


def differences(a: dict, b: dict) -> list[str]:
    return [f"{k}: plain {a.get(k)}, sluice {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


# (stage and auto, whose trees are the tier's until published, with two seeds)
CASES = [(mode, seed) for mode in MODES for seed in ((7, 3) if mode in ("stage", "auto") else (7,))]


@pytest.mark.parametrize("mode, seed", CASES)
def test_one_process_leaves_the_plain_tree(fsstress, disk, tier, tmp_path, mode, seed):
    plain, managed = disk / "plain", disk / "managed"
    plain.mkdir()
    managed.mkdir()
    run_fsstress(fsstress, plain, seed, 1, None, tier, tmp_path / "logs")
    run_fsstress(fsstress, managed, seed, 1, mode, tier, tmp_path / "logs")
    want, got = tree(plain), tree(managed)
    assert len(want) > 200   # (a run that did little proves nothing)
    assert differences(want, got) == []
    if tier.exists():
        assert list((tier / "journal").iterdir()) == [] and list((tier / "data").iterdir()) == []


@pytest.mark.parametrize("mode", ["stage"])
def test_several_processes_leave_nothing_behind(fsstress, disk, tier, tmp_path, mode):
    """Four processes on one tree (each on its own subtree, as fsstress
    does): every staged file reaches the file system, no publish leaves a
    temporary file."""
    work = disk / "work"
    work.mkdir()
    run_fsstress(fsstress, work, 11, 4, mode, tier, tmp_path / "logs")
    names = [p.name for p in work.rglob("*")]
    assert len(names) > 200
    assert [n for n in names if ".sluice-" in n] == []
    assert list((tier / "journal").iterdir()) == [] and list((tier / "data").iterdir()) == []
