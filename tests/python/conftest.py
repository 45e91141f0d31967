"""Shared fixtures: where the build is, and running programs under `sluice run`.

The suite tests a build tree: SLUICE_NATIVE_DIR (libsluice.so and the tools)
defaults to <repo>/build/dev/native and SLUICE_TEST_BIN (the test programs)
to <repo>/build/dev/tests/bin; scripts/test sets both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NATIVE = Path(os.environ.get("SLUICE_NATIVE_DIR", REPO / "build" / "dev" / "native"))
TEST_BIN = Path(os.environ.get("SLUICE_TEST_BIN", REPO / "build" / "dev" / "tests" / "bin"))
os.environ["SLUICE_NATIVE_DIR"] = str(NATIVE)
# The suite's files live on this node's own file systems, where --mode auto
# only profiles (nothing to gain there): its tiers are tested there as they
# work on a shared file system. test_auto.py checks the default by name.
os.environ.setdefault("SLUICE_AUTO_LOCAL", "1")

# Run the package from this tree unless an installed one is being tested.
if "sluice" not in sys.modules and not os.environ.get("SLUICE_TEST_INSTALLED"):
    sys.path.insert(0, str(REPO / "python"))


def bin_path(name: str) -> str:
    p = TEST_BIN / name
    if not p.exists():
        pytest.fail(f"test program {p} is missing: build the tree first (scripts/test does)")
    return str(p)


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    if not os.environ.get("SLUICE_TEST_INSTALLED"):
        env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def sluice(*args: str, check: bool = True, env: dict[str, str] | None = None,
           cwd: str | Path | None = None, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Run the sluice CLI; returns the completed process (text mode)."""
    e = python_env()
    e.update(env or {})
    cp = subprocess.run([sys.executable, "-m", "sluice", *args], env=e, cwd=cwd, text=True,
                        capture_output=True, timeout=timeout, **kw)
    if check and cp.returncode != 0:
        raise AssertionError(f"sluice {' '.join(args)} failed ({cp.returncode}):\n{cp.stdout}\n{cp.stderr}")
    return cp


def report_json(log_dir: Path, *extra: str) -> dict:
    return json.loads(sluice("report", "--json", *extra, str(log_dir)).stdout)


def file_entry(report: dict, path: str | Path) -> dict:
    """The entry of a file, or of an HDF5 dataset (FILE:/NAME), in `sluice report --json`."""
    key = "datasets" if ":/" in str(path) else "files"
    for f in report[key]:
        if f["path"] == str(path):
            return f
    raise AssertionError(f"{path} not in report; {key}: {[f['path'] for f in report[key]]}")


# The access-pattern counters: the common access sizes and strides, the
# alignments and the slowest call's size (tests of their own check them).
PATTERN = ("_ACCESS", "_STRIDE", "ALIGN", "_TIME_SIZE")


def nonzero(counters: dict, prefix: str = "", skip_time: bool = True, pattern: bool = False) -> dict:
    """Counters that moved, without times (which differ run to run) and,
    unless `pattern`, without the access-pattern counters."""
    return {k: v for k, v in counters.items()
            if k.startswith(prefix) and v not in (0, -1) and not (skip_time and "_F_" in k)
            and (pattern or not any(p in k for p in PATTERN))}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    return tmp_path / "logs"


def _tmpfs_dir() -> Path | None:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


@pytest.fixture(scope="session")
def testbed_mount():
    """The MooseFS testbed mount, started for the session if it is not up."""
    from sluice import testbed

    if os.geteuid() != 0:
        pytest.fail("the testbed tier needs root (network namespace, FUSE mount)")
    st = testbed.status()
    started = False
    if not st.get("running"):
        testbed.up()
        started = True
        st = testbed.status()
    yield Path(st["mountpoint"])
    if started:
        testbed.down()


@pytest.fixture(scope="session")
def cephfs_mount():
    """The CephFS testbed mount (per-file layouts), started for the session
    if it is not up (about 20 s the first time), stopped after if started."""
    from sluice.testbed import cephfs

    if os.geteuid() != 0:
        pytest.fail("the cephfs tier needs root (network namespace, FUSE mount)")
    started = False
    if not cephfs.status().get("running"):
        cephfs.up()
        started = True
    yield Path(cephfs.status()["mountpoint"])
    if started:
        cephfs.down()


# The file systems the counter and byte-identity tests run on.
TARGETS = ["tmpfs", "disk", pytest.param("testbed", marks=pytest.mark.testbed)]


@pytest.fixture(params=TARGETS)
def target(request, tmp_path: Path):
    """A fresh directory on the file system named by the parameter."""
    kind = request.param
    if kind == "tmpfs":
        base = _tmpfs_dir()
        if base is None:
            pytest.fail("/dev/shm is not a writable tmpfs")
    elif kind == "disk":
        base = Path("/var/tmp")
    else:
        base = request.getfixturevalue("testbed_mount")
    d = Path(tempfile.mkdtemp(prefix="sluice-test-", dir=base))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def mounted_tmpfs(tmp_path: Path, name: str, options: str):
    """A tmpfs mounted at tmp_path/name with `options` for one test (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    d = tmp_path / name
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d)], check=True)
    yield d
    subprocess.run(["umount", "-l", str(d)])


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs: a file system that fills up."""
    yield from mounted_tmpfs(tmp_path, "small", "size=1m")


@pytest.fixture
def read_only_fs(tmp_path):
    """A read-only file system."""
    yield from mounted_tmpfs(tmp_path, "ro", "ro,size=1m")


def xfstests_program(name: str) -> str:
    """fsx or fsstress, built by scripts/xfstests (scripts/setup runs it)
    into a cache outside the repository; the test skips without them."""
    cp = subprocess.run([str(REPO / "scripts" / "xfstests")], capture_output=True, text=True)
    paths = dict(line.split("=", 1) for line in cp.stdout.splitlines() if "=" in line)
    if cp.returncode != 0 or name not in paths:
        pytest.skip(f"{name} is not built (scripts/xfstests: {cp.stderr.strip().splitlines()[-1:]})")
    return paths[name]


def dead_pid() -> int:
    """The pid of a process that has exited (a crashed program)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.fixture
def shm_tier(tmp_path: Path) -> Path:
    """A stage tier of its own on /dev/shm (the default tier's file system),
    removed after the test."""
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    t = base / f"sluice-test-tier-{os.getpid()}-{tmp_path.name}"
    yield t
    subprocess.run(["rm", "-rf", str(t)])
