"""Where stage mode's tier goes when none is named, and the line `sluice run`
says when it is on a disk (docs/stage.md, "The tier")."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import bin_path, report_json, sluice
from sluice.stage import placement

UID = os.getuid()
# The line, with its two measured figures.
WARNING = re.compile(r"sluice: stage tier (\S+) is on (\S+) \(a disk\): each file staged there costs "
                     r"(\d+(?:\.\d)? (?:µs|ms)) \(3 fsynced journal writes\)"
                     r"(?: against (\d+(?:\.\d)? (?:µs|ms)) on (\S+))?(?:; (.*))?$")


@pytest.fixture
def disk_dir():
    """A directory on a local disk file system (/var/tmp: ext4 on the test machines)."""
    if placement.fs_type("/var/tmp") not in placement.DISK_FS:
        pytest.skip(f"/var/tmp is on {placement.fs_type('/var/tmp')}, not a disk")
    d = tempfile.mkdtemp(prefix="sluice-test-place-", dir="/var/tmp")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def shm_dir():
    """A private directory on /dev/shm (tmpfs)."""
    if placement.problem("/dev/shm", placement.MEMORY_FS)[1]:
        pytest.skip(f"/dev/shm {placement.problem('/dev/shm', placement.MEMORY_FS)[1]}")
    d = tempfile.mkdtemp(prefix="sluice-test-place-", dir="/dev/shm")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def _no_tier_named(**env: str) -> dict[str, str]:
    # (SLUICE_TIER empty: as if unset, whatever the caller's environment says)
    return {"SLUICE_TIER": "", "SLURM_TMPDIR": "", **env}


# ---------------------------------------------------------------- the demo

def test_the_demo_stages_on_dev_shm(tmp_path):
    if placement.problem("/dev/shm", placement.MEMORY_FS)[1]:
        pytest.skip("/dev/shm is not usable here")
    cp = sluice("demo", "--mode", "stage", "--dir", str(tmp_path / "demo"), "--steps", "2", env=_no_tier_named())
    assert "sluice report: job" in cp.stdout and "mode: stage" in cp.stdout
    assert "sluice: stage tier" not in cp.stderr            # in memory: nothing to say
    # the job's drainer ran on the default tier, the demo's directory holds none
    drainer = [c for c in report_json(tmp_path / "demo" / "logs")["commands"] if "sluice-stage-drain" in c]
    assert len(drainer) == 1 and f" --tier /dev/shm/sluice-stage-{UID} " in drainer[0]
    assert not (tmp_path / "demo" / "tier").exists()
    assert len(list((tmp_path / "demo" / "data").rglob("*"))) > 10


def test_the_demo_says_when_its_tier_is_on_a_disk(tmp_path, disk_dir):
    cp = sluice("demo", "--mode", "stage", "--dir", str(tmp_path / "demo"), "--steps", "1",
                env=_no_tier_named(SLUICE_TEST_SHM=str(tmp_path / "no-shm"), TMPDIR=str(disk_dir)))
    m = [WARNING.match(line) for line in cp.stderr.splitlines() if line.startswith("sluice: stage tier")]
    assert len(m) == 1 and m[0], cp.stderr
    assert m[0].group(1) == f"{disk_dir}/sluice-stage-{UID}"
    assert m[0].group(6) == f"{tmp_path}/no-shm does not exist (--tier DIR to choose)"
    assert "sluice report: job" in cp.stdout


# ---------------------------------------------------------------- the default tier

def test_without_dev_shm_the_tier_goes_to_node_local_scratch_then_tmp(tmp_path, disk_dir, shm_dir, monkeypatch):
    slurm, tmpdir, system = disk_dir / "slurm", disk_dir / "tmpdir", disk_dir / "tmp"
    for d in (slurm, tmpdir, system):
        d.mkdir()
    monkeypatch.setattr(placement, "SYSTEM_TMP", (str(system),))
    gone = str(tmp_path / "no-shm")

    def choose(**env):
        c = placement.choose({"SLUICE_TEST_SHM": gone, **env})
        return c.path, c.shm_problem

    # the batch system's scratch, then $TMPDIR, then the system's
    assert choose(SLURM_TMPDIR=str(slurm), TMPDIR=str(tmpdir)) == (f"{slurm}/sluice-stage-{UID}",
                                                                   "does not exist")
    assert choose(TMPDIR=str(tmpdir))[0] == f"{tmpdir}/sluice-stage-{UID}"
    assert choose(TMPDIR="relative/dir")[0] == f"{system}/sluice-stage-{UID}"
    # memory anywhere first: a $TMPDIR on tmpfs beats a disk scratch before it
    assert choose(SLURM_TMPDIR=str(slurm), TMPDIR=str(shm_dir))[0] == f"{shm_dir}/sluice-stage-{UID}"
    # a /dev/shm that is not tmpfs is passed over
    assert choose(SLUICE_TEST_SHM=str(tmpdir), TMPDIR=str(slurm)) == (f"{slurm}/sluice-stage-{UID}",
                                                                      f"is on {placement.fs_type(str(tmpdir))}")
    # a network file system never: the next place
    real = placement.fs_type
    monkeypatch.setattr(placement, "fs_type", lambda p: "nfs4" if str(p).startswith(str(tmpdir)) else real(p))
    assert choose(TMPDIR=str(tmpdir))[0] == f"{system}/sluice-stage-{UID}"


def test_a_full_dev_shm_is_passed_over(disk_dir, monkeypatch):
    if placement.problem("/dev/shm", placement.MEMORY_FS)[1]:
        pytest.skip("/dev/shm is not usable here")
    real = os.statvfs

    def statvfs(path):
        st = real(path)
        if placement.fs_type(str(path)) != "tmpfs":
            return st
        return os.statvfs_result((st.f_bsize, st.f_frsize, st.f_blocks, 10, 10, *st[5:10]))

    monkeypatch.setattr(os, "statvfs", statvfs)
    c = placement.choose({"TMPDIR": str(disk_dir)})
    assert c.path == f"{disk_dir}/sluice-stage-{UID}"
    assert c.shm_problem == "has only 0 MiB free"


def test_run_status_and_drain_agree_on_the_default_tier(tmp_path, disk_dir, shm_dir):
    """`sluice run` gives the program the tier it chose (the library's own
    default is /dev/shm), and `sluice status`/`drain` find it: in memory
    when the memory place is usable, else on the disk, and there also when
    the memory place is usable again (the tier holding entries wins)."""
    out = tmp_path / "out"
    out.mkdir()

    def detached_run(name: str, env: dict[str, str]) -> str:
        return sluice("run", "--mode", "stage", "--detach", "--log-dir", str(tmp_path / "logs"), "--",
                      bin_path("sluice-io"), f"creat:{out}/{name}", "write:10", "close", env=env).stderr

    def pending(env: dict[str, str]) -> tuple[str, list[str]]:
        st = json.loads(sluice("status", "--json", env=env).stdout)
        return st["tier"], [e["path"] for e in st["entries"]]

    in_memory = _no_tier_named(SLUICE_TEST_SHM=str(shm_dir), TMPDIR=str(disk_dir))
    assert "stage tier" not in detached_run("a", in_memory)
    assert not (out / "a").exists()                       # detached: left on the tier
    assert pending(in_memory) == (f"{shm_dir}/sluice-stage-{UID}", [f"{out}/a"])
    assert f"published {out}/a" in sluice("drain", env=in_memory).stdout

    no_memory = {**in_memory, "SLUICE_TEST_SHM": str(tmp_path / "no-shm")}
    tier = f"{disk_dir}/sluice-stage-{UID}"
    assert WARNING.match(detached_run("b", no_memory).splitlines()[0]).group(1) == tier
    assert pending(no_memory) == pending(in_memory) == (tier, [f"{out}/b"])
    assert f"published {out}/b" in sluice("drain", env=in_memory).stdout
    assert (out / "a").read_bytes() == (out / "b").read_bytes() and (out / "b").stat().st_size == 10
    assert pending(no_memory) == (tier, [])


# ---------------------------------------------------------------- the line about a disk tier

def test_a_tier_on_a_disk_gets_one_line_with_the_measured_cost(tmp_path, disk_dir, shm_dir):
    tier = disk_dir / "tier"

    def run(*args: str, mode: str = "stage") -> str:
        return sluice("run", *args, "--mode", mode, "--tier", str(tier), "--log-dir", str(tmp_path / "logs"), "--",
                      bin_path("sluice-io"), f"creat:{tmp_path}/f", "write:10", "close",
                      env=_no_tier_named()).stderr

    first = run()
    lines = [line for line in first.splitlines() if "stage tier" in line]
    assert len(lines) == 1
    m = WARNING.match(lines[0])
    assert m, lines[0]
    assert m.group(1) == str(tier) and m.group(2) == placement.fs_type(str(disk_dir))
    # the figures are the ones measured, kept in the tier for the next runs
    kept = json.loads((tier / "placement.json").read_text())
    assert m.group(3) == placement.shown_time(kept["file_ns"])
    assert (m.group(4), m.group(5)) == (placement.shown_time(kept["shm_file_ns"]), "/dev/shm")
    assert m.group(6) == f"--tier /dev/shm/sluice-stage-{UID} stages in memory"
    assert kept["file_ns"] > 0 and kept["fstype"] == m.group(2)
    assert (tmp_path / "f").stat().st_size == 10
    # measured once: the next run (auto mode too) says the same without measuring
    again = run(mode="auto")
    assert lines[0] in again.splitlines()
    assert json.loads((tier / "placement.json").read_text())["measured"] == kept["measured"]
    assert "stage tier" not in run("-q")
    assert "stage tier" not in sluice("run", "--mode", "profile", "--tier", str(tier), "--log-dir",
                                      str(tmp_path / "logs"), "--", "true").stderr
    # none for a tier in memory, where nothing is measured
    tier = shm_dir / "tier"
    assert "stage tier" not in run()
    assert tier.is_dir() and not (tier / "placement.json").exists()
