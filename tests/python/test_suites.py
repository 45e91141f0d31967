"""Real third-party test suites, run plain and under every mode.

h5py's suite (inside its wheel) and netCDF4-python's (the test/ folder of
its source distribution, unpacked by scripts/setup) create, write, reopen,
lock and delete thousands of HDF5 and netCDF files. Each runs with TMPDIR on
a managed path, plain and then under profile, buffer, stage and auto (acb changes MPI-IO only); every
test that passes plain must pass under the mode (compared test by test from
pytest's JUnit XML), except the few listed in KNOWN below, each with the
issue that tracks it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import REPO
from test_transparency import MODES, mode_args, sluice

NETCDF4_TESTS = REPO / "build" / "suites" / "netcdf4-tests"

SUITES = {
    # (cwd, pytest arguments); -k leaves out what cannot run here or would
    # dominate CI time: MPI tests (need pytest-mpi), a 4 GiB CDF5 file.
    "h5py": (None, ["--pyargs", "h5py", "-m", "not mpi"]),
    "netCDF4": (NETCDF4_TESTS, ["test", "-k", "not test_cdf5"]),
}

# Tests that pass plain and may fail under a mode, with why. Anything else
# that passes plain and fails under a mode fails this test.
KNOWN: dict[tuple[str, str], dict[str, str]] = {}


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed | failed | error | skipped (errors in teardown: 'teardown')."""
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        tid = f"{case.get('classname')}.{case.get('name')}"
        kinds = [child.tag for child in case]
        if "failure" in kinds:
            out[tid] = "failed"
        elif "error" in kinds:
            msg = next(c for c in case if c.tag == "error").get("message", "")
            out[tid] = "teardown" if "teardown" in msg else "error"
        elif "skipped" in kinds:
            out[tid] = "skipped"
        else:
            out[tid] = "passed"
    return out


def run_suite(name: str, mode: str | None, tmp: Path) -> dict[str, str]:
    cwd, args = SUITES[name]
    label = mode or "plain"
    work = tmp / f"tmp-{label}"
    work.mkdir()
    junit = tmp / f"{name}-{label}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "cache_dir=" + str(tmp / "cache"),
           f"--junitxml={junit}", *args]
    env = {"TMPDIR": str(work), "NO_NET": "1", "PYTEST_ADDOPTS": "", "HDF5_USE_FILE_LOCKING": ""}
    env = {k: v for k, v in env.items() if v} | {"PYTHONDONTWRITEBYTECODE": "1"}
    if mode is None:
        e = dict(os.environ)
        e.pop("PYTEST_ADDOPTS", None)
        subprocess.run(cmd, cwd=cwd, env=e | env, capture_output=True, text=True, timeout=900)
    else:
        sluice(*mode_args(mode, tmp, work), "--", *cmd, check=False, cwd=cwd, env=env, timeout=900)
    assert junit.exists(), f"{name} under {label} produced no results"
    return outcomes(junit)


@pytest.fixture(scope="module")
def plain_results(tmp_path_factory) -> dict[str, dict[str, str]]:
    if not NETCDF4_TESTS.is_dir():
        pytest.fail(f"{NETCDF4_TESTS} is missing: run scripts/setup")
    return {name: run_suite(name, None, tmp_path_factory.mktemp(f"{name}-plain")) for name in SUITES}


# acb changes MPI-IO only ("POSIX calls as in profile"): the serial suites
# under it would repeat the profile runs
SUITE_MODES = [m for m in MODES if m != "acb"]


@pytest.mark.parametrize("mode", SUITE_MODES)
@pytest.mark.parametrize("suite", list(SUITES))
def test_suite_passes_under_mode_as_plain(suite, mode, plain_results, tmp_path):
    plain = plain_results[suite]
    assert sum(1 for o in plain.values() if o == "passed") > 100, "the suite hardly ran plain"
    got = run_suite(suite, mode, tmp_path)
    assert list((tmp_path / f"logs-{mode}").glob("*.sluice")), "no process ran under sluice"
    known = KNOWN.get((suite, mode), {})
    worse = {t: got.get(t, "missing") for t, o in plain.items()
             if o == "passed" and got.get(t) != "passed" and t not in known}
    assert worse == {}, "\n".join(f"{t}: {why}" for t, why in messages(tmp_path / f"{suite}-{mode}.xml", worse))


def messages(junit: Path, tests: dict[str, str]) -> list[tuple[str, str]]:
    """What pytest said of each of `tests` (the failure's or error's text, its last lines)."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        tid = f"{case.get('classname')}.{case.get('name')}"
        if tid in tests:
            text = " | ".join((c.get("message", "") + " ... " + (c.text or "")[-400:]).strip() for c in case
                              if c.tag in ("failure", "error"))
            out.append((tid, text))
    return out
