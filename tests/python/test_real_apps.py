"""Real applications' stdio output under every mode, strace as the witness:
LAMMPS (Debian's `lammps` package, the Lennard-Jones melt of
tests/data/lammps/in.melt) and a GROMACS-like fwrite loop
(tests/progs/gmx_like.c). Each runs once plain and once under each mode,
strace around `sluice run`; per file, the report's fs side is what strace
saw, buffer mode's cut is the one strace measures, the app side is the same
in every mode, stage's bytes and errors are profile's, and the output files
are the plain run's. docs/profile-truth.md gives the figures."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO, bin_path, nonzero, python_env, report_json, sluice
from oracle import fs_side, have_strace, kernel_calls, strace_run

MODES = ("profile", "buffer", "stage")
LMP = shutil.which("lmp")

pytestmark = pytest.mark.skipif(not have_strace(), reason="strace is not installed")


@dataclass(frozen=True)
class App:
    """How to run one application in a fresh directory, and which of its
    output files are the same in every run."""
    name: str
    argv: tuple[str, ...]          # "{dir}": the data directory (the run's working directory too)
    inputs: tuple[Path, ...]       # copied into the data directory first
    deterministic: tuple[str, ...]
    varying: tuple[str, ...] = ()  # written every run, contents not comparable (timings)


LAMMPS = App("lammps", ("lmp", "-in", "in.melt", "-log", "log.lammps", "-screen", "none"),
             (REPO / "tests" / "data" / "lammps" / "in.melt",),
             ("dump.melt", "dump.custom", "dump.xyz", "melt.restart"), ("log.lammps",))
GMX = App("gmx_like", ("gmx_like", "{dir}"), (), ("traj.trr", "ener.log", "state.cpt"))


# A publish may write a temporary file beside the result and rename it
# (".traj.trr.sluice-HOST-PID-N"): its calls are the result's.
_PUBLISH_TEMP = re.compile(r"^\.(.+)\.sluice-[^/]+$")


@dataclass
class Run:
    data: Path
    kernel: dict[str, dict[str, int]]   # strace, per file name
    report: dict | None = None          # sluice report --json (None: the plain run)

    def entry(self, name: str) -> dict:
        assert self.report is not None
        for f in self.report["files"]:
            if f["path"] == str(self.data / name):
                return f
        raise AssertionError(f"{name} not in the report: {[f['path'] for f in self.report['files']]}")

    def names(self) -> set[str]:
        assert self.report is not None
        return {Path(f["path"]).name for f in self.report["files"]}


def _argv(app: App, data: Path) -> list[str]:
    prog, *args = app.argv
    exe = LMP if prog == "lmp" else bin_path(prog)
    return [exe, *(a.format(dir=data) for a in args)]


def _run(app: App, mode: str | None, base: Path, tier: Path) -> Run:
    """One run under strace: plain (mode None) or under `sluice run --mode`."""
    label = mode or "plain"
    data, logs, trace = base / f"data-{label}", base / f"logs-{label}", base / f"trace-{label}.txt"
    data.mkdir()
    for f in app.inputs:
        shutil.copy(f, data)
    argv = _argv(app, data)
    if mode:
        argv = [sys.executable, "-m", "sluice", "run", "--mode", mode, "--tier", str(tier), "--log-dir", str(logs),
                "--path", str(data), "--", *argv]
    cp = strace_run(argv, trace, env=python_env(), cwd=data, timeout=120)
    assert cp.returncode == 0, f"{app.name} under {label}: {cp.stderr[-2000:]}"
    if mode == "stage":
        sluice("wait", "--tier", str(tier), "--timeout", "60", *(str(data / n) for n in (*app.deterministic,
                                                                                          *app.varying)))
    kernel: dict[str, dict[str, int]] = {}
    for path, calls in kernel_calls(trace, str(data) + os.sep).items():
        name = Path(path).name
        name = m.group(1) if (m := _PUBLISH_TEMP.match(name)) else name
        kernel[name] = {k: kernel.get(name, {}).get(k, 0) + v for k, v in calls.items()}
    return Run(data, kernel, report_json(logs) if mode else None)


def _runs(app: App, tmp_path_factory) -> dict[str, Run]:
    """The plain run and one run under each mode."""
    base = tmp_path_factory.mktemp(app.name)
    tier = (Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else base) / f"sluice-test-tier-{os.getpid()}-{app.name}"
    try:
        return {mode or "plain": _run(app, mode, base, tier) for mode in (None, *MODES)}
    finally:
        subprocess.run(["rm", "-rf", str(tier)])


@pytest.fixture(scope="module")
def lammps(tmp_path_factory) -> dict[str, Run]:
    if LMP is None:
        pytest.skip("LAMMPS is not installed (Debian package lammps, binary lmp): scripts/setup installs it")
    return _runs(LAMMPS, tmp_path_factory)


@pytest.fixture(scope="module")
def gmx(tmp_path_factory) -> dict[str, Run]:
    return _runs(GMX, tmp_path_factory)


@pytest.fixture(params=[LAMMPS, GMX], ids=lambda a: a.name)
def app(request) -> App:
    return request.param


@pytest.fixture
def runs(app, request) -> dict[str, Run]:
    return request.getfixturevalue("lammps" if app is LAMMPS else "gmx")


# What strace counts, per file, in each mode: (writes, reads). Exact, for a
# file system whose st_blksize is 4 KiB (the C library's buffer size). A
# stream's buffer holds 4 KiB; buffer mode's holds 4 MiB and goes to the
# kernel at each fflush (LAMMPS flushes every dump frame and thermo line),
# so its writes are the flushes; stage publishes each file with one pwrite
# per 4 MiB and reads what the program wrote back from the tier.
KERNEL = {
    "lammps": {
        "profile": {"dump.melt": (33, 0), "dump.custom": (15, 0), "dump.xyz": (77, 0), "log.lammps": (14, 0),
                    "melt.restart": (3, 3), "in.melt": (0, 2)},
        "buffer": {"dump.melt": (11, 0), "dump.custom": (5, 0), "dump.xyz": (3, 0), "log.lammps": (14, 0),
                   "melt.restart": (1, 1), "in.melt": (0, 2)},
        "stage": {"dump.melt": (1, 0), "dump.custom": (1, 0), "dump.xyz": (1, 0), "log.lammps": (1, 0),
                  "melt.restart": (1, 0), "in.melt": (0, 2)},
    },
    "gmx_like": {
        "profile": {"traj.trr": (1025, 1014), "ener.log": (10, 0), "state.cpt": (15, 0)},
        "buffer": {"traj.trr": (5, 2), "ener.log": (5, 0), "state.cpt": (5, 0)},
        "stage": {"traj.trr": (2, 0), "ener.log": (1, 0), "state.cpt": (1, 0)},
    },
}
KERNEL["lammps"]["plain"] = KERNEL["lammps"]["profile"]
KERNEL["gmx_like"]["plain"] = KERNEL["gmx_like"]["profile"]

def app_counters(entry: dict) -> dict:
    """The app side's counters that moved, less times, access patterns and
    the stage tier's own bookkeeping (POSIX_STAGED_OPENS)."""
    return {k: v for k, v in nonzero(entry["app"]).items() if "STAGED" not in k}


def _errors(report: dict) -> int:
    return sum(f["fs"].get(f"{m}_ERRORS", 0) for f in report["files"] for m in ("POSIX", "STDIO"))


def _total(side: dict, *names: str) -> int:
    return sum(int(side.get(f"{m}_{n}", 0) or 0) for m in ("POSIX", "STDIO") for n in names)


def _outputs(app: App) -> set[str]:
    return {*app.deterministic, *app.varying, *(p.name for p in app.inputs)}


@pytest.mark.parametrize("mode", MODES)
def test_the_fs_side_is_what_strace_saw(app, runs, mode):
    run = runs[mode]
    assert run.names() == _outputs(app) and set(run.kernel) == _outputs(app), (run.names(), set(run.kernel))
    for name in sorted(_outputs(app)):
        got = fs_side(run.entry(name))
        want = {k: run.kernel[name][k] for k in got}
        assert got == want, f"{app.name} under {mode}, {name}: sluice's fs side {got}, strace {want}"


def test_the_kernel_calls_are_as_measured(app, runs):
    """strace's writes and reads per file: profile's are the plain run's,
    buffer mode cuts them to its flushes, stage to one publish a file."""
    assert os.stat(runs["plain"].data).st_blksize == 4096, "KERNEL's counts are for a 4 KiB st_blksize"
    for mode in ("plain", *MODES):
        got = {n: (c["writes"], c["reads"]) for n, c in runs[mode].kernel.items()}
        assert got == KERNEL[app.name][mode], f"{app.name} under {mode}"
    # profile passes every call through: the kernel saw the plain run's calls
    # (the bytes of a file with timings in it aside)
    for name in _outputs(app):
        plain, profile = runs["plain"].kernel[name], runs["profile"].kernel[name]
        if name in app.varying:
            plain, profile = ({k: v for k, v in c.items() if not k.startswith("bytes")} for c in (plain, profile))
        assert profile == plain, f"{app.name} {name}: profile {profile}, plain {plain}"
    for mode in MODES:
        report, kernel = runs[mode].report, runs[mode].kernel
        assert report is not None
        # the job's totals are the files' (what `sluice report` prints)
        assert (_total(report["fs"], "WRITES"), _total(report["fs"], "READS")) == \
            (sum(c["writes"] for c in kernel.values()), sum(c["reads"] for c in kernel.values()))
        assert _total(report["fs"], "BYTES_WRITTEN") == sum(c["bytes_written"] for c in kernel.values())


def test_the_app_side_is_the_same_in_every_mode(app, runs):
    def counters(run: Run, name: str) -> dict:
        c = app_counters(run.entry(name))
        if name in app.varying:     # its length changes run to run: only the calls
            c = {k: v for k, v in c.items() if not any(s in k for s in ("BYTE", "SIZE_", "ACCESS", "STRIDE"))}
        return c

    profile = {n: counters(runs["profile"], n) for n in _outputs(app)}
    assert all(profile.values())
    for mode in MODES[1:]:
        assert {n: counters(runs[mode], n) for n in _outputs(app)} == profile, f"{app.name} under {mode}"


def test_gmx_like_app_side_is_its_calls(gmx):
    """The program's own calls, counted (tests/progs/gmx_like.c)."""
    for mode in MODES:
        got = {n: app_counters(gmx[mode].entry(n)) for n in _outputs(GMX)}
        assert got == {
            # (opened "w", each open for writing, creating and truncating)
            "traj.trr": {"STDIO_OPENS": 2, "STDIO_WRITES": 1000, "STDIO_FLUSHES": 5, "STDIO_READS": 1000,
                         "STDIO_BYTES_WRITTEN": 6046000, "STDIO_BYTES_READ": 6046000,
                         "STDIO_MAX_BYTE_WRITTEN": 6045999, "STDIO_MAX_BYTE_READ": 6045999,
                         "STDIO_OPENS_WRITE": 1, "STDIO_OPENS_CREATE": 1, "STDIO_OPENS_TRUNC": 1},
            "ener.log": {"STDIO_OPENS": 1, "STDIO_WRITES": 501, "STDIO_FLUSHES": 5, "STDIO_BYTES_WRITTEN": 27054,
                         "STDIO_MAX_BYTE_WRITTEN": 27053,
                         "STDIO_OPENS_WRITE": 1, "STDIO_OPENS_CREATE": 1, "STDIO_OPENS_TRUNC": 1},
            "state.cpt": {"STDIO_OPENS": 5, "STDIO_WRITES": 10, "STDIO_BYTES_WRITTEN": 5 * 24036,
                          "STDIO_MAX_BYTE_WRITTEN": 24035,
                          "STDIO_OPENS_WRITE": 5, "STDIO_OPENS_CREATE": 5, "STDIO_OPENS_TRUNC": 5},
        }, mode


@pytest.mark.parametrize("mode", MODES)
def test_errors_are_profiles(app, runs, mode):
    assert _errors(runs[mode].report) == _errors(runs["profile"].report) == 0


def test_stage_moves_each_byte_once(app, runs):
    """Stage's headline: bytes written reach the file system once (the
    publish), bytes read back from the tier do not reach it at all."""
    from sluice.report.html import factor

    report, kernel = runs["stage"].report, runs["stage"].kernel
    app_w, fs_w = _total(report["app"], "BYTES_WRITTEN"), _total(report["fs"], "BYTES_WRITTEN")
    app_r, fs_r = _total(report["app"], "BYTES_READ"), _total(report["fs"], "BYTES_READ")
    assert (fs_w, fs_r) == (sum(c["bytes_written"] for c in kernel.values()),
                            sum(c["bytes_read"] for c in kernel.values()))
    sizes = {n: (runs["stage"].data / n).stat().st_size for n in _outputs(app)}
    if app is LAMMPS:
        # every byte written is published once; the restart read back came from the tier
        assert fs_w == app_w == sum(sizes.values()) - sizes["in.melt"]
        # (read_restart asks for 352,897 of the restart's 352,913 bytes)
        assert (fs_r, app_r) == (sizes["in.melt"], sizes["in.melt"] + 352897)
        assert (factor(app_w, fs_w), factor(app_w + app_r, fs_w + fs_r)) == ("1.0x", "1.1x")
    else:
        # 5 checkpoints overwrite state.cpt: the last is published
        assert app_w == fs_w + 4 * sizes["state.cpt"] and fs_w == sum(sizes.values())
        assert (fs_r, app_r) == (0, sizes["traj.trr"])
        assert (factor(app_w, fs_w), factor(app_w + app_r, fs_w + fs_r)) == ("1.0x", "2.0x")


@pytest.mark.parametrize("mode", MODES)
def test_output_files_are_the_plain_runs(app, runs, mode):
    for name in app.deterministic:
        assert (runs[mode].data / name).read_bytes() == (runs["plain"].data / name).read_bytes(), name
    for name in app.varying:
        assert (runs[mode].data / name).stat().st_size > 0
