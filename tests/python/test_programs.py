"""Real programs under `sluice run`: exact counters, identical output bytes,
and the process cases (threads, fork, exec, _exit, vfork, SIGTERM, MPI).
"""

from __future__ import annotations

import filecmp
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import bin_path, file_entry, nonzero, python_env, report_json, sluice

P = lambda **kw: {f"POSIX_{k}": v for k, v in kw.items()}  # noqa: E731
S = lambda **kw: {f"STDIO_{k}": v for k, v in kw.items()}  # noqa: E731

KNOWN_MIX = {
    "data.bin": P(OPENS=2, READS=13, WRITES=16, SEEKS=2, STATS=2, FSYNCS=1, BYTES_READ=8192, BYTES_WRITTEN=4096,
                  MAX_BYTE_READ=4095, MAX_BYTE_WRITTEN=4095, CONSEC_READS=11, CONSEC_WRITES=15, SEQ_READS=11,
                  SEQ_WRITES=15, RW_SWITCHES=1, SIZE_READ_0_100=1, SIZE_READ_100_1K=12, SIZE_WRITE_100_1K=16,
                  OPENS_WRITE=1, OPENS_CREATE=1, OPENS_TRUNC=1),   # O_CREAT|O_RDWR|O_TRUNC, then read-only
    "text.txt": S(OPENS=1, READS=13, WRITES=11, SEEKS=2, FLUSHES=1, BYTES_READ=170, BYTES_WRITTEN=85,
                  MAX_BYTE_READ=84, MAX_BYTE_WRITTEN=84, OPENS_WRITE=1, OPENS_CREATE=1, OPENS_TRUNC=1),  # "w+"
    "sub": P(MKDIRS=1, RMDIRS=1),
    "sub/tmp": P(OPENS=1, RENAMES=1, OPENS_WRITE=1, OPENS_CREATE=1),   # O_CREAT|O_WRONLY
    "sub/tmp2": P(UNLINKS=1, RENAME_TARGETS=1),   # sub/tmp renamed to it
}


def plain(cmd: list[str], **kw) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=120, **kw)


def same_tree(a: Path, b: Path) -> None:
    """Both directories hold the same files with the same bytes."""
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert fa == fb
    for rel in fa:
        assert filecmp.cmp(a / rel, b / rel, shallow=False), f"{rel} differs"


@pytest.mark.parametrize("prog", ["known_mix", "known_mix_fortified"])
def test_known_mix_exact_counters_and_bytes(prog, target, logdir):
    with_sluice, without = target / "with", target / "without"
    with_sluice.mkdir()
    without.mkdir()
    sluice("run", "--log-dir", str(logdir), "--path", str(with_sluice), "--", bin_path(prog), str(with_sluice))
    plain([bin_path(prog), str(without)])
    same_tree(with_sluice, without)
    r = report_json(logdir)
    assert sorted(f["path"] for f in r["files"]) == sorted(str(with_sluice / k) for k in KNOWN_MIX)
    for name, want in KNOWN_MIX.items():
        e = file_entry(r, with_sluice / name)
        assert nonzero(e["app"]) == want, name
        # POSIX calls reach the kernel as they are; a stream's fs side is the
        # C library's own calls (checked against strace in test_profile_truth.py)
        posix = lambda side: {k: v for k, v in side.items() if not k.startswith("STDIO_")}  # noqa: E731
        assert posix(e["app"]) == posix(e["fs"])
    # data.bin: 16 writes of 256 B, reads of 1 KiB (4), 512 B (8) and one at the end (0 B, not listed);
    # every access follows the one before (no stride); all but those at offset 0 (and 4096, the last
    # read's) start off the file system's block
    e = file_entry(r, with_sluice / "data.bin")["app"]
    assert {k: e[k] for k in P(ACCESS1_ACCESS=0, ACCESS1_COUNT=0, ACCESS2_ACCESS=0, ACCESS2_COUNT=0,
                               ACCESS3_ACCESS=0, ACCESS3_COUNT=0, ACCESS4_COUNT=0, STRIDE1_COUNT=0,
                               MEM_NOT_ALIGNED=0, MEM_ALIGNMENT=0, MAX_WRITE_TIME_SIZE=0)} == P(
        ACCESS1_ACCESS=256, ACCESS1_COUNT=16, ACCESS2_ACCESS=512, ACCESS2_COUNT=8, ACCESS3_ACCESS=1024,
        ACCESS3_COUNT=4, ACCESS4_COUNT=0, STRIDE1_COUNT=0, MEM_NOT_ALIGNED=0, MEM_ALIGNMENT=8, MAX_WRITE_TIME_SIZE=256)
    assert e["POSIX_FILE_ALIGNMENT"] == os.statvfs(with_sluice).f_bsize
    if e["POSIX_FILE_ALIGNMENT"] == 4096:
        assert e["POSIX_FILE_NOT_ALIGNED"] == 25
    assert e["POSIX_MAX_READ_TIME_SIZE"] in (0, 512, 1024)
    # job totals are the sums over files
    assert r["app"]["POSIX_WRITES"] == 16 and r["app"]["STDIO_WRITES"] == 11
    assert r["app"]["POSIX_BYTES_READ"] == 8192 and r["fs"]["POSIX_BYTES_READ"] == 8192


def test_fortran_io(target, logdir):
    a, b = target / "a", target / "b"
    a.mkdir()
    b.mkdir()
    sluice("run", "--log-dir", str(logdir), "--path", str(a), "--", bin_path("fortran_io"), str(a))
    plain([bin_path("fortran_io"), str(b)])
    same_tree(a, b)
    r = report_json(logdir)
    unf = file_entry(r, a / "unformatted.dat")["app"]
    # 8 records of 1024 doubles, each framed by two 4-byte record markers
    assert unf["POSIX_BYTES_WRITTEN"] == 8 * (8192 + 8) == unf["POSIX_BYTES_READ"]
    assert unf["POSIX_OPENS"] == 2
    direct = file_entry(r, a / "direct.dat")["app"]
    assert direct["POSIX_BYTES_WRITTEN"] == 4 * 8192 and direct["POSIX_WRITES"] == 4
    assert direct["POSIX_MAX_BYTE_WRITTEN"] == 4 * 8192 - 1
    fmt = file_entry(r, a / "formatted.txt")["app"]
    assert fmt["POSIX_BYTES_WRITTEN"] == 100 * 20


def test_threads_exact(target, logdir):
    sluice("run", "--log-dir", str(logdir), "--path", str(target), "--",
           bin_path("threads"), str(target), "8", "2000", "100")
    r = report_json(logdir)
    assert len(r["files"]) == 8
    for i in range(8):
        e = file_entry(r, target / f"thread_{i}.dat")["app"]
        assert (e["POSIX_OPENS"], e["POSIX_WRITES"], e["POSIX_BYTES_WRITTEN"]) == (1, 2000, 200000)
        assert e["POSIX_CONSEC_WRITES"] == 1999 and e["POSIX_MAX_BYTE_WRITTEN"] == 199999
        assert (target / f"thread_{i}.dat").read_bytes() == bytes([ord("a") + i]) * 200000
    assert r["app"]["POSIX_WRITES"] == 16000 == r["fs"]["POSIX_WRITES"]


def logs_by_exe_file(r: dict) -> dict[str, dict]:
    return {Path(f["path"]).name: f for f in r["files"]}


def test_fork_child_has_its_own_log(workdir, logdir):
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("forkexec"), "fork", str(workdir))
    r = report_json(logdir)
    assert r["processes"] == 2
    files = logs_by_exe_file(r)
    assert files["parent.dat"]["app"]["POSIX_WRITES"] == 3 and files["parent.dat"]["processes"] == 1
    assert files["child.dat"]["app"]["POSIX_WRITES"] == 5 and files["child.dat"]["processes"] == 1


def test_the_log_directory_is_made_only_when_missing(workdir, tmp_path):
    """A process makes its log directory (and its parents) when it is
    missing, and makes no mkdir at all when it is there: one per path
    component and process was a round trip each on a parallel file system
    (strace is the witness)."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed (scripts/setup installs it)")
    from conftest import NATIVE
    logs = tmp_path / "a" / "b" / "logs"
    env = dict(os.environ, LD_PRELOAD=str(NATIVE / "libsluice.so"), SLUICE_LOG_DIR=str(logs),
               SLUICE_MODE="profile", SLUICE_PATHS=str(workdir), SLUICE_JOB_ID="mkdir-test")

    def run(n: int) -> list[str]:
        trace = tmp_path / f"trace{n}"
        subprocess.run(["strace", "-f", "-e", "trace=mkdir,mkdirat", "-o", str(trace), "sh", "-c",
                        f"echo {n} > {workdir}/f{n}"], env=env, check=True, timeout=60)
        return [line for line in trace.read_text().splitlines() if str(tmp_path) in line]

    first = run(1)
    assert any(f'"{logs}"' in line for line in first), first
    assert len(list(logs.glob("*.sluice"))) == 1
    assert run(2) == []
    assert len(list(logs.glob("*.sluice"))) == 2


@pytest.mark.parametrize("variant", ["execl", "execlp", "execle", "execv", "execvp", "execve", "execvpe", "fexecve"])
def test_exec_writes_log_before_replacing_the_image(variant, workdir, logdir):
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--",
           bin_path("forkexec"), "exec", str(workdir), variant)
    r = report_json(logdir)
    files = logs_by_exe_file(r)
    assert files["before_exec.dat"]["app"]["POSIX_WRITES"] == 2
    assert files["after_exec.dat"]["app"]["POSIX_WRITES"] == 4
    assert r["processes"] == 2   # one image before exec, one after: same pid, two logs
    reasons = sorted(l.end_reason for l in _logs(logdir))
    assert reasons == ["exec", "exit"]


def _logs(logdir: Path):
    from sluice.logfmt import read_log

    return [read_log(p) for p in sorted(logdir.glob("*.sluice"))]


@pytest.mark.parametrize("how", ["_exit", "_Exit"])
def test_exit_without_destructors_still_logs(how, workdir, logdir):
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("forkexec"), how, str(workdir))
    r = report_json(logdir)
    assert logs_by_exe_file(r)["exit_now.dat"]["app"]["POSIX_WRITES"] == 6
    assert [l.end_reason for l in _logs(logdir)] == ["_exit"]


def test_vfork_child_does_not_disturb_parent(workdir, logdir):
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("forkexec"), "vfork", str(workdir))
    assert (workdir / "vfork.dat").read_bytes() == b"vw"
    r = report_json(logdir)
    e = logs_by_exe_file(r)["vfork.dat"]["app"]
    # the parent's two writes on one description, unaffected by the child's dup2/close
    assert (e["POSIX_OPENS"], e["POSIX_WRITES"], e["POSIX_CONSEC_WRITES"]) == (1, 2, 1)


def test_dup2_then_close_original(workdir, logdir):
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--",
           bin_path("forkexec"), "dupclose", str(workdir))
    assert (workdir / "dup.dat").read_bytes() == b"abcd" * 3
    e = logs_by_exe_file(report_json(logdir))["dup.dat"]["app"]
    assert (e["POSIX_OPENS"], e["POSIX_DUPS"], e["POSIX_WRITES"], e["POSIX_BYTES_WRITTEN"]) == (1, 1, 3, 12)
    assert e["POSIX_ERRORS"] == 0


def test_sigterm_writes_the_log(workdir, logdir):
    env = python_env()
    proc = subprocess.Popen([sys.executable, "-m", "sluice", "run", "--log-dir", str(logdir), "--path",
                             str(workdir), "--", bin_path("forkexec"), "sigterm", str(workdir)],
                            env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)   # forwarded by sluice run to the program
    rc = proc.wait(timeout=30)
    assert rc == 128 + signal.SIGTERM
    logs = _logs(logdir)
    assert [l.end_reason for l in logs] == ["SIGTERM"]
    assert logs_by_exe_file(report_json(logdir))["term.dat"]["app"]["POSIX_WRITES"] == 7


def _h5dump(path: Path) -> str:
    return subprocess.run(["h5dump", str(path)], capture_output=True, text=True, check=True).stdout.replace(
        str(path), "FILE")


def test_hdf5_file_identical(target, logdir):
    a, b = target / "a.h5", target / "b.h5"
    sluice("run", "--log-dir", str(logdir), "--path", str(target), "--", bin_path("h5_write"), str(a))
    plain([bin_path("h5_write"), str(b)])
    assert _h5dump(a) == _h5dump(b)
    assert a.stat().st_size == b.stat().st_size
    e = file_entry(report_json(logdir), a)["app"]
    assert e["POSIX_OPENS"] >= 1 and e["POSIX_WRITES"] >= 1
    assert e["POSIX_BYTES_WRITTEN"] >= 64 * 128 * 8 + 1000 * 4
    assert e["POSIX_MAX_BYTE_WRITTEN"] == a.stat().st_size - 1


@pytest.mark.parametrize("fmt", ["classic", "netcdf4"])
def test_netcdf_file_identical(fmt, target, logdir):
    a, b = target / "a.nc", target / "b.nc"
    flag = ["-4"] if fmt == "netcdf4" else []
    sluice("run", "--log-dir", str(logdir), "--path", str(target), "--", bin_path("nc_write"), *flag, str(a))
    plain([bin_path("nc_write"), *flag, str(b)])
    dump = lambda p: subprocess.run(["ncdump", str(p)], capture_output=True, text=True, check=True).stdout  # noqa
    assert dump(a).replace("a {", "X {") == dump(b).replace("b {", "X {")
    if fmt == "classic":
        assert a.read_bytes() == b.read_bytes()
    e = file_entry(report_json(logdir), a)["app"]
    assert e["POSIX_BYTES_WRITTEN"] >= 12 * 32 * 64 * 4
    assert e["POSIX_MAX_BYTE_WRITTEN"] == a.stat().st_size - 1


MPIRUN = ["mpirun", "--oversubscribe", "-np", "4"]


def _mpi_env() -> dict[str, str]:
    return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}


def _check_mpi_report(r: dict, workdir: Path) -> None:
    ranks = [f for f in r["files"] if Path(f["path"]).name.startswith("rank_")]
    assert len(ranks) == 4
    for f in ranks:
        assert (f["app"]["POSIX_WRITES"], f["app"]["POSIX_BYTES_WRITTEN"], f["processes"]) == (4, 4096, 1)
    shared = file_entry(r, workdir / "shared.dat")
    assert shared["processes"] == 4
    assert shared["app"]["POSIX_WRITES"] == 4 and shared["app"]["POSIX_BYTES_WRITTEN"] == 4096
    assert shared["app"]["POSIX_READS"] == 4 and shared["app"]["POSIX_MAX_BYTE_WRITTEN"] == 4095
    assert shared["app"] == shared["fs"]


def test_mpi_sluice_inside_mpirun(workdir, logdir):
    env = python_env()
    env.update(_mpi_env())
    subprocess.run(MPIRUN + [sys.executable, "-m", "sluice", "run", "--log-dir", str(logdir), "--path", str(workdir),
                             "--", bin_path("mpi_write"), str(workdir)],
                   env=env, check=True, capture_output=True, timeout=300)
    r = report_json(logdir)
    assert r["processes"] == 4
    _check_mpi_report(r, workdir)


def test_mpi_mpirun_inside_sluice(workdir, logdir):
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", *MPIRUN, bin_path("mpi_write"),
           str(workdir), env=_mpi_env())
    r = report_json(logdir)
    # mpirun records nothing under --path, so it leaves no log
    assert r["processes"] == 4
    _check_mpi_report(r, workdir)


def test_a_launch_agent_script_is_not_profiled_but_a_script_named_like_one_is(tmp_path):
    """Under `sluice run -- mpirun`, a shell running the agent that carries
    the ranks to a node (rsh, ssh, the testbed's node-rsh.sh) is the launch
    path, not the job; a program's own script called ssh.sh is the job."""
    for name, logs in (("rsh", 0), ("node-rsh.sh", 0), ("ssh.sh", 1)):
        d = tmp_path / name
        d.mkdir()
        (d / name).write_text(f"echo data > {d}/out\n")
        sluice("run", "-q", "--log-dir", str(d / "logs"), "--", "sh", str(d / name))
        assert (d / "out").read_text() == "data\n"
        found = list((d / "logs").glob("*.sluice")) if (d / "logs").exists() else []
        assert len(found) == logs, (name, found)
