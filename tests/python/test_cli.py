"""The CLI as a user meets it: exit statuses, errors as one line, job
selection, bad settings, and errors from the file system reaching the
program (through the test-only faulty tier) and its profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import bin_path, file_entry, nonzero, python_env, report_json, sluice


def one_line_error(cp: subprocess.CompletedProcess) -> str:
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1, cp.stderr
    assert lines[0].startswith("sluice: error: "), cp.stderr
    assert "Traceback" not in cp.stderr
    return lines[0]


def test_exit_status_is_the_programs(workdir, logdir):
    cp = sluice("run", "--log-dir", str(logdir), "--", "sh", "-c", "exit 7", check=False)
    assert cp.returncode == 7
    cp = sluice("run", "--log-dir", str(logdir), "--", "sh", "-c", "kill -KILL $$", check=False)
    assert cp.returncode == 128 + 9


def test_command_not_found(logdir):
    cp = sluice("run", "--log-dir", str(logdir), "--", "no-such-program-xyz", check=False)
    assert cp.returncode == 127
    assert one_line_error(cp) == "sluice: error: command not found: no-such-program-xyz"


def test_unwritable_log_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cp = sluice("run", "--log-dir", str(blocker / "logs"), "--", "true", check=False)
    assert cp.returncode == 1
    assert "cannot create the log directory" in one_line_error(cp)


def test_report_missing_input(tmp_path):
    cp = sluice("report", str(tmp_path / "nothing"), check=False)
    assert cp.returncode == 1
    assert one_line_error(cp).endswith("nothing: no such file or directory")


def test_report_empty_dir(tmp_path):
    cp = sluice("report", str(tmp_path), check=False)
    assert cp.returncode == 1
    assert "no sluice logs" in one_line_error(cp)


def _one_log(workdir: Path, logdir: Path) -> Path:
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
           f"creat:{workdir}/f", "write:100", "close")
    (log,) = logdir.glob("*.sluice")
    return log


@pytest.mark.parametrize("damage", ["truncate_header", "truncate_tail", "flip_region", "not_a_log", "empty"])
def test_corrupt_log_named_is_one_line_error(damage, workdir, logdir):
    log = _one_log(workdir, logdir)
    data = bytearray(log.read_bytes())
    if damage == "truncate_header":
        data = data[:40]
    elif damage == "truncate_tail":
        data = data[:-7]
    elif damage == "flip_region":
        data[-20] ^= 0x40
    elif damage == "not_a_log":
        data = bytearray(b"hello world, this is no log at all" * 4)
    else:
        data = bytearray()
    log.write_bytes(bytes(data))
    cp = sluice("report", str(log), check=False)
    assert cp.returncode == 1
    msg = one_line_error(cp)
    assert str(log) in msg


def test_corrupt_log_in_dir_is_skipped_with_warning(workdir, logdir):
    good = _one_log(workdir, logdir)
    bad = logdir / "broken.sluice"
    bad.write_bytes(good.read_bytes()[:100])
    cp = sluice("report", "--json", str(logdir))
    assert json.loads(cp.stdout)["processes"] == 1
    assert f"sluice: warning: {bad}" in cp.stderr and "skipped" in cp.stderr


def test_report_picks_latest_job_and_job_option(workdir, logdir):
    for job in ("first", "second"):
        sluice("run", "--log-dir", str(logdir), "--job-id", job, "--path", str(workdir), "--",
               bin_path("sluice-io"), f"creat:{workdir}/{job}", "close")
    cp = sluice("report", "--json", str(logdir))
    r = json.loads(cp.stdout)
    assert r["job_id"] == "second" and "2 jobs found" in cp.stderr
    r = json.loads(sluice("report", "--json", "--job", "first", str(logdir)).stdout)
    assert [Path(f["path"]).name for f in r["files"]] == ["first"]
    cp = sluice("report", "--job", "third", str(logdir), check=False)
    assert "no logs of job 'third'" in one_line_error(cp)


def test_text_report_shows_both_sides(workdir, logdir):
    _one_log(workdir, logdir)
    out = sluice("report", str(logdir)).stdout
    assert "app" in out and "fs" in out and "app/fs" in out
    assert f"{workdir}/f" in out
    writes = [l for l in out.splitlines() if l.strip().startswith("writes")]
    assert writes and writes[0].split()[1:3] == ["1", "1"]


def test_system_paths_not_recorded_by_default(tmp_path, logdir):
    f = tmp_path / "mine"
    sluice("run", "--log-dir", str(logdir), "--", bin_path("sluice-io"), "stat:/etc/hostname",
           "open:/usr/lib/os-release:r", "close", f"creat:{f}", "close")
    paths = [e["path"] for e in report_json(logdir)["files"]]
    assert str(f) in paths
    assert not [p for p in paths if p.startswith(("/etc", "/usr", "/proc", "/sys", "/dev"))]


def test_bad_setting_warns_once_and_program_runs(workdir, logdir):
    cp = sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
                f"creat:{workdir}/f", "close", env={"SLUICE_MAX_RECORDS": "lots"})
    assert cp.stderr.count("SLUICE_MAX_RECORDS='lots' is not a non-negative integer; using the default") == 1
    assert file_entry(report_json(logdir), workdir / "f")["app"]["POSIX_OPENS"] == 1


def test_record_cap_folds_into_other_files_and_marks_partial(workdir, logdir):
    ops = []
    for i in range(5):
        ops += [f"creat:{workdir}/f{i}", "write:10", "close"]
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"), *ops,
           env={"SLUICE_MAX_RECORDS": "2"})
    r = report_json(logdir)
    assert r["partial"] is True
    assert len(r["files"]) == 3
    other = file_entry(r, "<other files>")
    assert other["app"]["POSIX_WRITES"] == 3 and other["app"]["POSIX_OPENS"] == 3
    assert r["app"]["POSIX_WRITES"] == 5   # job totals stay exact


def test_disabled_writes_no_log(workdir, logdir):
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
           f"creat:{workdir}/f", "close", env={"SLUICE_DISABLE": "1"})
    assert list(logdir.glob("*.sluice")) == []


def test_processes_that_record_nothing_leave_no_log(workdir, logdir):
    # sh and true touch nothing under --path; only sluice-io writes a log
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", "sh", "-c",
           f"true; {bin_path('sluice-io')} creat:{workdir}/f close; ls / > /dev/null")
    assert len(list(logdir.glob("*.sluice"))) == 1
    assert report_json(logdir)["processes"] == 1


def fault_env(spec: str) -> dict[str, str]:
    return {"SLUICE_TIERS": "faulty", "SLUICE_ALLOW_TEST_TIERS": "1", "SLUICE_FAULT": spec}


def test_injected_enospc_reaches_the_program_and_the_profile(workdir, logdir):
    cp = sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
                f"creat:{workdir}/f", "write:100", "write:100", "write:100", "fsync", "close",
                env=fault_env("write:2:ENOSPC,fsync:1:EIO"))
    results = [json.loads(l) for l in cp.stdout.splitlines()]
    assert [(r["op"], r["ret"], r["errno"]) for r in results] == [
        ("creat", results[0]["ret"], 0), ("write", 100, 0), ("write", -1, 28), ("write", 100, 0),
        ("fsync", -1, 5), ("close", 0, 0)]
    # the bytes of the writes that succeeded are on disk, in order
    assert (workdir / "f").read_bytes() == b"x" * 200
    e = file_entry(report_json(logdir), workdir / "f")
    # the app asked for three writes and an fsync; two writes reached the file system
    assert (e["app"]["POSIX_WRITES"], e["app"]["POSIX_ERRORS"], e["app"]["POSIX_FSYNCS"]) == (2, 2, 0)
    assert (e["fs"]["POSIX_WRITES"], e["fs"]["POSIX_ERRORS"], e["fs"]["POSIX_BYTES_WRITTEN"]) == (2, 0, 200)
    assert e["app"]["POSIX_OPENS"] == e["fs"]["POSIX_OPENS"] == 1


def test_test_tiers_refused_unless_allowed(workdir, logdir):
    cp = sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
                f"creat:{workdir}/f", "write:10", "write:10", "close",
                env={"SLUICE_TIERS": "faulty", "SLUICE_FAULT": "write:1:EIO"})
    assert "tier 'faulty' is for tests only (set SLUICE_ALLOW_TEST_TIERS=1); left out of the stack" in cp.stderr
    assert (workdir / "f").stat().st_size == 20


def test_demo_runs_and_reports(tmp_path):
    cp = sluice("demo", "--dir", str(tmp_path / "demo"), "--steps", "5")
    assert "sluice report: job" in cp.stdout
    r = report_json(tmp_path / "demo" / "logs")
    # POSIX opens: 4 inputs read back, 5 steps x 12 variables, 4 restarts;
    # the inputs and run.log are written through stdio
    assert r["app"]["POSIX_OPENS"] == 4 + 5 * 12 + 4
    assert r["app"]["STDIO_OPENS"] == 4 + 1
    assert r["app"]["POSIX_UNLINKS"] == 3 * 11
    assert r["app"]["STDIO_WRITES"] == 4 * 50 + 5


# ---------------------------------------------------------------- what a new user meets

def test_a_flag_says_what_it_does_not_which_value_means_what():
    # the help of a boolean setting given as a flag, which takes no value
    text = " ".join(sluice("run", "--help").stdout.split())
    assert ("--include-mpi-runtime also record the MPI runtime's own files (Open MPI's session directory, PMIx's "
            "server directory, $HOME/.openmpi and $HOME/.pmix: shared-memory segments, locks, parameter files) "
            "(without it: leave them out, they are not the program's)") in text
    assert "--detach stage mode: exit without waiting for publishing (`sluice drain` finishes it) --" in text
    assert ("--stage-fsync stage mode: fsync each published file before its tier copy is dropped (a round trip per "
            "file; without it: the durability of the program's own close) --") in text
    assert "1: " not in text


def test_top_level_help_says_what_sluice_does_now():
    out = sluice("--help").stdout
    assert "soon" not in out
    assert "see what it does to the file system, and cut it" in " ".join(out.split())


def test_run_names_what_reads_its_logs_next(workdir, tmp_path):
    cp = sluice("run", "--log-dir", "logs", "--", bin_path("sluice-io"), f"creat:{workdir}/f", cwd=tmp_path)
    lines = cp.stderr.splitlines()
    assert lines[-2].startswith("sluice: job ") and lines[-2].endswith(": 1 log in logs/")
    assert lines[-1] == "sluice: next: sluice advise logs   (the whole profile: sluice report logs)"
    assert sluice("run", "-q", "--log-dir", "logs", "--", "true", cwd=tmp_path).stderr == ""


def test_demo_names_what_reads_its_logs_next(tmp_path):
    cp = sluice("demo", "--dir", "demo", "--steps", "1", cwd=tmp_path)
    assert cp.stderr.splitlines()[-1] == ("sluice: next: sluice advise demo/logs   "
                                          "(the whole profile: sluice report demo/logs)")


def _report_lines(logdir: Path, columns: str | None) -> list[str]:
    env = python_env()
    env.pop("COLUMNS", None)
    if columns:
        env["COLUMNS"] = columns
    cp = subprocess.run([sys.executable, "-m", "sluice", "report", str(logdir)], env=env, text=True,
                        capture_output=True, check=True)
    return cp.stdout.splitlines()


def test_report_tables_do_not_wrap_in_a_batch_log(workdir, logdir):
    long_dir = workdir / ("a-rather-long-directory-name-of-a-simulation-campaign-" * 2).rstrip("-")
    long_dir.mkdir()
    f = long_dir / "temperature_field_step_000123_rank_0007.nc"
    sluice("run", "--log-dir", str(logdir), "--", bin_path("sluice-io"), f"creat:{f}", "write:100", "close")
    assert len(str(f)) > 160
    # stdout a pipe, no COLUMNS: every table row that names the file names it whole
    lines = [line for line in _report_lines(logdir, None) if not line.startswith("  command: ")]
    rows = [line for line in lines if f.name in line]
    assert rows and all(str(f) in line for line in rows)
    # COLUMNS asks for 100: the tables fit, the path folded in them
    lines = [line for line in _report_lines(logdir, "100") if not line.startswith("  command: ")]
    assert not any(str(f) in line for line in lines) and max(len(line) for line in lines) <= 100


def test_export_into_a_closed_pipe_ends_quietly(workdir, logdir, tmp_path):
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
           f"creat:{workdir}/f", "write:100", "close")
    p = subprocess.Popen([sys.executable, "-m", "sluice", "export", "--csv", str(logdir), "-o", str(tmp_path / "out")],
                         env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.close()   # the reader is gone before the first line (`| head -0`)
    err = p.stderr.read()
    assert p.wait() == 128 + 13 and err == ""   # SIGPIPE's status, and no word about the directory
    assert (tmp_path / "out" / "POSIX.csv").is_file()


def _stage_tier(tmp_path: Path) -> Path:
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    return base / f"sluice-test-tier-{os.getpid()}-{tmp_path.name}"


@pytest.fixture
def stage_tier(tmp_path):
    t = _stage_tier(tmp_path)
    yield t
    subprocess.run(["rm", "-rf", str(t)])


def test_run_names_the_files_a_killed_program_left_staged(workdir, logdir, stage_tier):
    """A program killed with files open: what it had closed the job's
    drainer publishes (the process is gone, its files are not); what it
    still had open stays on the tier, named, for `sluice recover`."""
    script = (f"cd {workdir} && for i in 1 2 3; do echo n$i > f$i; done; exec 3>f4 4>f5; echo n4 >&3; "
              "echo n5 >&4; kill -9 $$")
    cp = sluice("run", "--mode", "stage", "--tier", str(stage_tier), "--stage-delay", "60000", "--log-dir",
                str(logdir), "--path", str(workdir), "--", "sh", "-c", script, check=False)
    assert cp.returncode == 128 + 9
    assert cp.stderr.splitlines()[-2:] == [
        f"sluice: 2 files the program wrote are still on the tier {stage_tier}, not published when its process "
        f"ended: {workdir}/f4, {workdir}/f5",
        f"sluice: sluice recover {stage_tier} publishes them (one still open at the end as NAME.sluice-incomplete)"]
    assert [(workdir / f"f{i}").read_text() for i in range(1, 4)] == ["n1\n", "n2\n", "n3\n"]
    assert not (workdir / "f4").exists()
    sluice("recover", str(stage_tier))
    assert [(workdir / f"f{i}.sluice-incomplete").read_text() for i in (4, 5)] == ["n4\n", "n5\n"]


def test_run_exits_75_when_a_child_left_a_file_staged(workdir, logdir, stage_tier):
    # the program succeeds, but a process of it was killed before publishing
    script = f"sh -c 'exec 3>{workdir}/f; echo x >&3; kill -9 $$'; true"
    cp = sluice("run", "--mode", "stage", "--tier", str(stage_tier), "--stage-delay", "60000", "--log-dir",
                str(logdir), "--path", str(workdir), "--", "sh", "-c", script, check=False)
    assert cp.returncode == 75
    assert cp.stderr.splitlines()[-1] == (f"sluice: sluice recover {stage_tier} publishes it (one still open at "
                                          "the end as NAME.sluice-incomplete); exit status 75")
