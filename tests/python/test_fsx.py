"""xfstests' fsx under every mode: one file, every kind of operation fsx
has (reads and writes at random offsets, mapped reads and writes,
truncates, fallocate with preallocation, punch hole, zero range, collapse
and insert range, copy_file_range), each read checked by fsx against its
own model of the contents and the size checked after every operation; the
file left is a plain run's, byte for byte.

fsx is built by scripts/xfstests (scripts/setup runs it) into a cache
outside the repository; without its source the tests skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import file_entry, report_json, sluice, xfstests_program

SEED = "1"
OPS = "1500"
# Every operation fsx has (its defaults), on a file system that has them
# all: collapse and insert range need ext4 or XFS, not tmpfs.
EVERY_OP: list[str] = []
# Everything the buffer tier keeps in memory and nothing that makes a file
# leave it (mapped I/O, fallocate and its start-up probes, copy_file_range):
# fsx's random reads, writes and truncates through the tier the whole run.
BUFFERED_OPS = ["-R", "-W", "-F", "-H", "-z", "-C", "-I", "-E", "-u", "-K"]
MODES = ["profile", "buffer", "stage", "auto", "acb"]


@pytest.fixture(scope="module")
def fsx() -> str:
    return xfstests_program("fsx")


@pytest.fixture(scope="module")
def disk():
    """A directory on the node's disk (collapse and insert range)."""
    d = Path(tempfile.mkdtemp(prefix="sluice-fsx-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run_fsx(fsx: str, root: Path, name: str, args: list[str], mode: str | None,
            extra: tuple[str, ...] = ()) -> tuple[bytes, Path]:
    """fsx on root/name/f (its logs beside, in root/name-log), plain or
    under `mode`: the file it leaves, and the log directory."""
    work, logs, fsxlog = root / name, root / f"{name}-sluice", root / f"{name}-log"
    work.mkdir()
    fsxlog.mkdir()
    argv = [fsx, "-q", *args, "-N", OPS, "-S", SEED, "-P", str(fsxlog), str(work / "f")]
    if mode is None:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    else:
        opts = ["run", "-q", "--mode", mode, "--log-dir", str(logs), "--path", str(work), *extra]
        if mode in ("stage", "auto"):
            opts += ["--tier", str(root / f"{name}-tier")]
        cp = sluice(*opts, "--", *argv, check=False, timeout=120,
                    env={"SLUICE_AUTO_LOCAL": "1"})
    assert cp.returncode == 0 and f"All {OPS} operations completed A-OK!" in cp.stdout, \
        f"fsx -S {SEED} -N {OPS} {' '.join(args)} under {mode or 'plain'}:\n{cp.stdout[-3000:]}\n{cp.stderr[-2000:]}"
    return (work / "f").read_bytes(), logs


@pytest.fixture(scope="module")
def plain(fsx, disk) -> dict[str, bytes]:
    """The file each operation set leaves without sluice."""
    return {"every": run_fsx(fsx, disk, "plain-every", EVERY_OP, None)[0],
            "buffered": run_fsx(fsx, disk, "plain-buffered", BUFFERED_OPS, None)[0]}


@pytest.mark.parametrize("mode", MODES)
def test_fsx_with_every_operation_leaves_plain_bytes(fsx, disk, plain, mode):
    got, _ = run_fsx(fsx, disk, f"every-{mode}", EVERY_OP, mode)
    assert got == plain["every"]


@pytest.mark.parametrize("unit", ["4M", "64K", "7"])
def test_fsx_through_the_buffer_tier_the_whole_run(fsx, disk, plain, unit):
    """No operation sends the file straight through: every read, write and
    truncate of the run meets the tier's windows and read-ahead (a unit of
    7 bytes splits every write into many windows)."""
    got, logs = run_fsx(fsx, disk, f"buffered-{unit}", BUFFERED_OPS, "buffer",
                        ("--buffer-size", unit, "--readahead", "64K"))
    assert got == plain["buffered"]
    e = file_entry(report_json(logs), disk / f"buffered-{unit}" / "f")
    assert e["app"]["POSIX_FALLBACKS"] == 0 and e["app"]["POSIX_WRITES"] > 100
