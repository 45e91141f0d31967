"""The profile's fs side against the file system's own witness: the
MooseFS client's count of the requests the kernel sent it (`.stats`).

Each program runs on a MooseFS client of its own (no one else's requests
in its counts) mounted with every kernel cache timeout 0, so that the
requests a call turns into do not depend on timing; plain first, then under
each mode. The mapping from calls to requests is written down in
sluice.testbed.clientstats; in short: an open is one OPEN or CREATE, an
unlink, rename, mkdir, rmdir one request of its kind, a stat one GETATTR
(ACCESS for access(), one negative LOOKUP for a name that does not exist),
and the kernel adds LOOKUPs per path component, GETATTRs of its own for
reads past the size it holds and seeks to the end, FLUSH and RELEASE at
close, GETXATTR before writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NATIVE, bin_path, python_env, report_json
from sluice.testbed import clientstats

pytestmark = pytest.mark.testbed

MODES = ("profile", "buffer", "stage", "auto")
PROGRAMS = ("known_mix", "stdio_mix", "manyfiles", "create-once")
# Programs that never read or seek: the kernel adds no GETATTR of its own.
WRITE_ONLY = ("manyfiles", "create-once")


def _argv(program: str, d: Path) -> list[str]:
    if program == "manyfiles":
        return [bin_path("manyfiles"), str(d), "40", "1000", "2"]
    if program == "create-once":
        return [str(NATIVE / "sluice-bench-create-once"), "--dir", str(d / "md"), "--procs", "2", "--files", "100",
                "--file-size", "4096", "--phase", "run", "--stat"]
    return [bin_path(program), str(d)]


def _fs_app(report: dict, side: str) -> dict[str, int]:
    t = report[side]

    def c(*names: str) -> int:
        return sum(int(t.get(n, 0)) for n in names)

    return {"opens": c("POSIX_OPENS", "STDIO_OPENS"), "stats": c("POSIX_STATS"), "unlinks": c("POSIX_UNLINKS"),
            "renames": c("POSIX_RENAMES"), "mkdirs": c("POSIX_MKDIRS"), "rmdirs": c("POSIX_RMDIRS"),
            "reads": c("POSIX_READS", "STDIO_READS"), "seeks": c("POSIX_SEEKS", "STDIO_SEEKS"),
            "errors": c("POSIX_ERRORS", "STDIO_ERRORS")}


@pytest.fixture(scope="module")
def runs(testbed_mount: Path, tmp_path_factory) -> dict:
    """{(program, mode): {"client": requests, "fs": ..., "app": ...}}, mode "plain" without sluice."""
    sub = f"sluice-oracle-{os.getpid()}"
    scratch = tmp_path_factory.mktemp("oracle")
    tier_base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else scratch
    out: dict = {}
    try:
        with clientstats.private_client(sub) as mnt:
            # reading .stats twice in a row costs exactly SNAPSHOT_COST
            with clientstats.Counter(mnt) as idle:
                pass
            out["idle"] = idle.ops
            for program in PROGRAMS:
                for mode in ("plain", *MODES):
                    d = mnt / f"{program}-{mode}"
                    d.mkdir()
                    logs = scratch / f"logs-{program}-{mode}"
                    argv = _argv(program, d)
                    if mode != "plain":
                        argv = [sys.executable, "-m", "sluice", "run", "-q", "--mode", mode, "--log-dir", str(logs),
                                "--tier", str(tier_base / f"sluice-oracle-tier-{os.getpid()}-{program}-{mode}"),
                                "--stage-delay", "0", "--path", str(d), "--", *argv]
                    with clientstats.Counter(d) as c:
                        # (sluice run returns once every staged file is published)
                        cp = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                                            env=python_env())
                    assert cp.returncode == 0, f"{program} {mode}: {cp.stderr}"
                    run = {"client": c.ops}
                    if mode != "plain":
                        rep = report_json(logs)
                        run["fs"], run["app"] = _fs_app(rep, "fs"), _fs_app(rep, "app")
                        run["processes"] = rep.get("processes") or rep.get("header", {}).get("processes")
                    out[(program, mode)] = run
    finally:
        with_sub = testbed_mount / sub
        shutil.rmtree(with_sub, ignore_errors=True)
        for t in tier_base.glob(f"sluice-oracle-tier-{os.getpid()}-*"):
            shutil.rmtree(t, ignore_errors=True)
    return out


def _req(ops: dict, *kinds: str) -> int:
    return sum(ops.get(k, 0) for k in kinds)


def test_reading_the_counts_costs_a_fixed_set_of_requests(runs):
    assert runs["idle"] == {}


CASES = [(p, m) for p in PROGRAMS for m in MODES]


@pytest.mark.parametrize("program, mode", CASES)
def test_opens_and_namespace_changes_equal_the_clients(runs, program, mode):
    """Exact: every open the fs side counts (the program's, a stage publish's,
    stdio's and POSIX's added) is one OPEN or CREATE the client received,
    and every unlink, rename, mkdir, rmdir one of its kind."""
    r = runs[(program, mode)]
    ops, fs = r["client"], r["fs"]
    assert {"opens": _req(ops, "open", "create"), "unlinks": ops.get("unlink", 0), "renames": ops.get("rename", 0),
            "mkdirs": ops.get("mkdir", 0), "rmdirs": ops.get("rmdir", 0)} == \
        {k: fs[k] for k in ("opens", "unlinks", "renames", "mkdirs", "rmdirs")}
    assert ops.get("mknod", 0) == 0


@pytest.mark.parametrize("program, mode", CASES)
def test_stats_are_the_clients_getattrs_accesses_and_missing_names(runs, program, mode):
    """A counted stat reached the client as a GETATTR (the file exists), an
    ACCESS (access()), or only as the negative LOOKUP of a name that does
    not exist; the negative LOOKUPs that are not a stat's are the one
    before each CREATE and MKDIR, one per rename to a new name and one per
    failed call. The kernel and the C library add GETATTRs of their own:
    at most one per read (past the size the kernel holds), per seek (to the
    end) and per open (stdio's first buffer is sized by an fstat). So:
    program-side stats <= the client's; the client's <= stats + those."""
    r = runs[(program, mode)]
    ops, fs = r["client"], r["fs"]
    missing = ops.get("lookup.master.negative", 0) - _req(ops, "create", "mkdir")
    seen = _req(ops, "getattr", "access") + missing
    assert fs["stats"] <= seen
    assert seen - fs["renames"] - fs["errors"] <= fs["stats"] + fs["reads"] + fs["seeks"] + fs["opens"]
    if program in WRITE_ONLY:
        # no read, no seek, no stream, no rename, no error: nothing to add
        assert fs["reads"] == fs["seeks"] == fs["renames"] == fs["errors"] == 0
        assert seen == fs["stats"]


@pytest.mark.parametrize("program", [
    # (stdio_mix opens a stream with "a": sluice reads where it starts from
    # /proc/self/fdinfo, not with an fstat the client would receive)
    "known_mix", "stdio_mix", "manyfiles", "create-once"])
def test_profile_mode_sends_the_requests_plain_sends(runs, program):
    """Profile mode passes every call through: the client receives what it
    receives without sluice, request for request, apart from what sluice
    counts on the fs side beyond the app side (nothing, in profile mode)
    and its statfs of the mount (a kind sluice has no counter for)."""
    plain, prof = runs[(program, "plain")]["client"], runs[(program, "profile")]["client"]
    fs, app = runs[(program, "profile")]["fs"], runs[(program, "profile")]["app"]
    assert {k: fs[k] for k in ("opens", "stats", "unlinks", "renames", "mkdirs", "rmdirs")} == \
        {k: app[k] for k in ("opens", "stats", "unlinks", "renames", "mkdirs", "rmdirs")}
    assert {k: prof.get(k, 0) for k in clientstats.META_OPS} == {k: plain.get(k, 0) for k in clientstats.META_OPS}
