"""`sluice farm`: an ensemble of serial tasks under sluice — outputs identical
to running the tasks one by one, retries, the restart journal, SIGTERM,
shared inputs, bad input (docs/farm.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import bin_path, python_env, sluice

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}
FILES, STEPS = 2, 3


def member() -> str:
    return bin_path("ensemble_member")


def run_reference(tasks: list[str], ref: Path, forcing: Path, *extra: str) -> None:
    """Each task run plainly, one after the other, in its own directory."""
    for n, cell in enumerate(tasks, 1):
        d = ref / str(n)
        d.mkdir(parents=True)
        subprocess.run([member(), cell, str(FILES), str(STEPS), str(forcing), *extra], cwd=d, check=True,
                       capture_output=True)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def setup_ensemble(tmp_path: Path, cells: list[str]) -> tuple[Path, Path]:
    forcing = tmp_path / "forcing.bin"
    forcing.write_bytes(bytes(range(256)) * 64)
    (tmp_path / "cells.txt").write_text("# cell per line\n" + "\n".join(cells) + "\n")
    return forcing, tmp_path / "cells.txt"


def farm(tmp_path: Path, *args: str, env: dict[str, str] | None = None, check: bool = False,
         timeout: float = 600) -> subprocess.CompletedProcess:
    e = {"SLUICE_LOG_DIR": str(tmp_path / "logs")}
    e.update(env or {})
    return sluice("farm", "-q", "--local-dir", str(tmp_path / "local"), "--json", str(tmp_path / "summary.json"),
                  *args, env=e, cwd=tmp_path, check=check, timeout=timeout)


def summary(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "summary.json").read_text())


def journal_lines(journal: Path) -> list[list[str]]:
    from sluice.farm.journal import decode

    raw = [l for f in sorted(journal.glob("*.log")) for l in f.read_text().splitlines()]
    lines = [decode(l) for l in raw]
    assert all(l is not None for l in lines), raw  # every line whole, CRC right
    return lines


# (1,000 tasks took 100 s of the test suite; 300 show the same)
TASKS = 200


def test_ensemble_of_200_tasks_over_4_ranks_matches_running_them_one_by_one(tmp_path):
    cells = [str(c) for c in range(1, TASKS + 1)]
    forcing, cells_file = setup_ensemble(tmp_path, cells)
    run_reference(cells, tmp_path / "ref", forcing)
    cp = subprocess.run(["mpirun", "--oversubscribe", "-np", "4", sys.executable, "-m", "sluice", "farm", "-q",
                         "--local-dir", str(tmp_path / "local"), "--json", str(tmp_path / "summary.json"),
                         "--input", str(forcing), "--tasks", str(cells_file), "--",
                         member(), "{1}", str(FILES), str(STEPS), "{input}"],
                        cwd=tmp_path, env={**python_env(), **MPI_ENV, "SLUICE_LOG_DIR": str(tmp_path / "logs")},
                        capture_output=True, text=True, timeout=900)
    assert cp.returncode == 0, cp.stderr
    assert tree(tmp_path / "tasks") == tree(tmp_path / "ref")
    s = summary(tmp_path)
    assert s["counts"] | {} == {"total": TASKS, "skipped": 0, "done": TASKS, "failed": 0, "interrupted": 0,
                                "running": 0, "retried": 0, "not_run": 0}
    # Dynamic hand-out: every rank ran tasks.
    assert {t["rank"] for t in s["tasks"]} == {0, 1, 2, 3}
    # Every task left a log; the shared file system saw far fewer metadata
    # operations than the programs made, and none of the shared input. (The
    # tier's own look-ups before staging a new file, a stat the server
    # answers "no such file", are fs-side stats: 24 app, 8 fs a task.)
    io = s["io"]
    assert io["tasks"] == TASKS and io["unreadable"] == 0
    assert io["fs"]["metadata_ops"] * 2.5 < io["app"]["metadata_ops"]
    # netCDF rewrites its header at every close: the tier absorbs the
    # rewrites, the shared file system gets (about) each final file once.
    final = sum(len(b) for b in tree(tmp_path / "tasks").values())
    assert final <= io["fs"]["POSIX_BYTES_WRITTEN"] < final * 1.2 < io["app"]["POSIX_BYTES_WRITTEN"]
    lines = journal_lines(tmp_path / "sluice-farm.journal")
    assert sorted(l.number for l in lines) == list(range(1, TASKS + 1)) and {l.outcome for l in lines} == {"done"}
    # Staged, published, and the tiers gone; the input copied once to the node.
    assert list((tmp_path / "local" / "tiers").iterdir()) == []
    copies = list((tmp_path / "local" / "inputs").glob("*/forcing.bin"))
    assert len(copies) == 1 and copies[0].read_bytes() == forcing.read_bytes()

    # The same command again: every task skipped, nothing run.
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "tasks").rglob("*.nc")}
    again = subprocess.run(cp.args, cwd=tmp_path, env={**python_env(), **MPI_ENV,
                                                       "SLUICE_LOG_DIR": str(tmp_path / "logs")},
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert summary(tmp_path)["counts"]["skipped"] == TASKS and summary(tmp_path)["counts"]["done"] == 0
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "tasks").rglob("*.nc")} == before


def _pid_of_task(cell: str, timeout: float = 30) -> int:
    """The running ensemble_member process of a cell."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                argv = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0].endswith(b"ensemble_member") and len(argv) > 1 and argv[1] == cell.encode():
                return int(d.name)
        time.sleep(0.01)
    raise AssertionError(f"task of cell {cell} never ran")


def test_a_killed_task_is_run_again_and_nothing_is_lost(tmp_path):
    cells = [str(c) for c in range(1, 9)]
    forcing, cells_file = setup_ensemble(tmp_path, cells)
    run_reference(cells, tmp_path / "ref", forcing, "150")
    args = ["-j", "2", "--input", str(forcing), "--tasks", str(cells_file), "--",
            member(), "{1}", str(FILES), str(STEPS), "{input}", "150"]
    proc = subprocess.Popen([sys.executable, "-m", "sluice", "farm", "-q", "--local-dir", str(tmp_path / "local"),
                             "--json", str(tmp_path / "summary.json"), *args], cwd=tmp_path,
                            env={**python_env(), "SLUICE_LOG_DIR": str(tmp_path / "logs")},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = _pid_of_task("3")
    env = dict(v.split(b"=", 1) for v in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in v)
    first_slot = int(env[b"SLUICE_FARM_SLOT"])
    time.sleep(0.2)  # mid-run: its first step written, 3 steps of 150 ms
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert tree(tmp_path / "tasks") == tree(tmp_path / "ref")
    s = summary(tmp_path)
    assert s["counts"]["done"] == 8 and s["counts"]["retried"] == 1
    assert [t["attempts"] for t in s["tasks"] if t["task"] == 3] == [2]
    # run again elsewhere: on the other worker
    assert [t["slot"] for t in s["tasks"] if t["task"] == 3] == [3 - first_slot]
    # The killed attempt's staged files were dropped, not published under
    # any name: the retry wrote them all again.
    assert list((tmp_path / "local" / "tiers").iterdir()) == []
    assert not [p for p in (tmp_path / "tasks").rglob("*") if "sluice" in p.name]


def test_a_task_that_always_fails_is_reported_and_the_rest_complete(tmp_path):
    cells = ["1", "2", "-7", "4"]
    forcing, cells_file = setup_ensemble(tmp_path, cells)
    cp = farm(tmp_path, "-j", "2", "--retries", "2", "--input", str(forcing), "--tasks", str(cells_file), "--",
              member(), "{1}", str(FILES), str(STEPS), "{input}")
    assert cp.returncode == 1
    lines = cp.stderr.splitlines()
    assert lines[0].startswith("sluice farm: 4 tasks: 3 done, 1 failed (2 attempts retried)")
    assert f"  task 3 ({cells_file}:4) failed after 3 attempts on " in cp.stderr
    assert ": exit status 3" in cp.stderr
    assert "      | ensemble_member: cell -7 is not a valid cell" in lines
    for n in (1, 2, 4):
        assert sorted(p.name for p in (tmp_path / "tasks" / str(n)).iterdir()) == ["member.log", "out_000.nc",
                                                                                   "out_001.nc"]
    # The failing task's stderr is kept beside its outputs, which were
    # published at its exit (the program ended normally, with status 3).
    assert (tmp_path / "tasks" / "3" / "task.err").read_text() == "ensemble_member: cell -7 is not a valid cell\n"
    assert (tmp_path / "tasks" / "3" / "member.log").read_text().startswith("cell -7 step 0 ")
    assert summary(tmp_path)["failed"][0]["kept_tier"] == ""
    # A re-run skips the three done tasks and tries the failed one again.
    again = farm(tmp_path, "-j", "2", "--retries", "0", "--input", str(forcing), "--tasks", str(cells_file), "--",
                 member(), "{1}", str(FILES), str(STEPS), "{input}")
    assert again.returncode == 1
    assert again.stderr.startswith("sluice farm: 4 tasks: 0 done, 3 skipped (done before), 1 failed")


def test_sigterm_stops_hand_out_and_the_journal_lets_a_rerun_finish(tmp_path):
    cells = [str(c) for c in range(1, 13)]
    forcing, cells_file = setup_ensemble(tmp_path, cells)
    run_reference(cells, tmp_path / "ref", forcing, "200")
    args = ["-j", "2", "--grace", "30", "--input", str(forcing), "--tasks", str(cells_file), "--",
            member(), "{1}", str(FILES), str(STEPS), "{input}", "200"]
    env = {**python_env(), "SLUICE_LOG_DIR": str(tmp_path / "logs")}
    base = [sys.executable, "-m", "sluice", "farm", "-q", "--local-dir", str(tmp_path / "local"),
            "--json", str(tmp_path / "summary.json")]
    proc = subprocess.Popen([*base, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _pid_of_task("4")  # tasks 1-3 handed out and some ended; 4 running
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    s = summary(tmp_path)
    c = s["counts"]
    # The running tasks were let finish within the grace time; nothing new started.
    assert c["failed"] == c["interrupted"] == 0 and 3 <= c["done"] <= 6 and c["not_run"] == 12 - c["done"]
    done = {t["task"] for t in s["tasks"]}
    assert done == set(range(1, c["done"] + 1))
    assert not any((tmp_path / "tasks" / str(n)).exists() for n in range(c["done"] + 1, 13))
    assert "run the same command again" in err
    assert sorted(l.number for l in journal_lines(tmp_path / "sluice-farm.journal")) == sorted(done)

    rerun = subprocess.run([*base, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert summary(tmp_path)["counts"]["skipped"] == c["done"]
    assert tree(tmp_path / "tasks") == tree(tmp_path / "ref")


def test_sigterm_with_no_grace_interrupts_tasks_and_keeps_what_they_wrote(tmp_path):
    cells = ["1", "2"]
    forcing, cells_file = setup_ensemble(tmp_path, cells)
    args = ["-j", "2", "--grace", "0", "--input", str(forcing), "--tasks", str(cells_file), "--",
            member(), "{1}", str(FILES), "50", "{input}", "100"]
    proc = subprocess.Popen([sys.executable, "-m", "sluice", "farm", "-q", "--local-dir", str(tmp_path / "local"),
                             "--json", str(tmp_path / "summary.json"), *args], cwd=tmp_path,
                            env={**python_env(), "SLUICE_LOG_DIR": str(tmp_path / "logs")},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _pid_of_task("2")
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    s = summary(tmp_path)
    assert s["counts"]["interrupted"] == 2 and s["counts"]["done"] == 0
    assert "interrupted after 1 attempt" in err and "stopped: the farm got SIGTERM" in err
    assert journal_lines(tmp_path / "sluice-farm.journal") and all(
        l.outcome == "interrupted" for l in journal_lines(tmp_path / "sluice-farm.journal"))
    # Run again: both run from the start and finish.
    again = farm(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert summary(tmp_path)["counts"]["done"] == 2
    assert (tmp_path / "tasks" / "2" / "member.log").read_text().count("\n") == 50
    # What the interrupted attempts kept is dropped once their task finished.
    assert list((tmp_path / "local" / "tiers").iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["--tasks", "bad.csv", "--", "true"], "sluice: error: bad.csv:3: 1 column, the header has 2"),
    (["--tasks", "t.txt", "--", "echo", "{3}"], "sluice: error: placeholder {3} has no value in task 1 (t.txt:1: 2 fields)"),
    (["--tasks", "t.txt", "--", "echo", "{lat}"],
     "sluice: error: placeholder {lat} has no value in task 1 (t.txt:1; named fields: none: the task file has no named fields)"),
    (["--tasks", "t.txt", "--journal", "t.txt/journal", "--", "true"],
     "sluice: error: cannot write the farm journal in t.txt/journal: Not a directory"),
    (["--grid", "lat=5:1", "--", "true"], "sluice: error: --grid lat=5:1: TO is below FROM"),
    (["--tasks", "missing.txt", "--", "true"], "sluice: error: cannot read the task file missing.txt: No such file or directory"),
    (["--tasks", "t.txt", "--", "no-such-program-xyz"], "sluice: error: command not found: no-such-program-xyz"),
    (["--tasks", "t.txt", "--", "./ibis", "{1}"], "sluice: error: command not found: ./ibis (not in TMP, where "
                                                  "sluice farm started, nor in the task's directory tasks/1)"),
    (["--tasks", "t.txt", "--", "/no/such/ibis"], "sluice: error: command not found: /no/such/ibis (no such file)"),
    (["--tasks", "t.txt", "--", "./t.txt"], "sluice: error: cannot run ./t.txt: TMP/t.txt is not executable"),
    (["--tasks", "t.txt", "--", "cat", "{input}"], "sluice: error: {input} needs exactly one --input (given: 0); name one with {input:BASENAME}"),
    (["--tasks", "bad.toml", "--", "true"], "sluice: error: bad.toml: task 1: flag must be a string or a number"),
])
def test_bad_input_is_one_line_and_starts_nothing(tmp_path, args, message):
    (tmp_path / "t.txt").write_text("a 1\nb 2\n")
    (tmp_path / "bad.csv").write_text("x,y\n1,2\n3\n")
    (tmp_path / "bad.toml").write_text("[[task]]\nflag = true\n")
    cp = farm(tmp_path, *args)
    assert cp.returncode == 1
    assert cp.stderr == message.replace("TMP", str(tmp_path)) + "\n"
    assert not (tmp_path / "tasks").exists() and not (tmp_path / "sluice-farm.journal").exists()


def _script(path: Path, text: str) -> Path:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


def test_a_relative_program_is_found_from_where_the_farm_started(tmp_path):
    """`-- ./ibis {1} {input}` as in the README: ./ibis is the one beside the
    task file, not one in tasks/N; a relative --input works, and a relative
    output argument is the task directory's."""
    _script(tmp_path / "ibis", 'echo "$0 cell $1 $(cat "$2")" > "$3"\n')
    (tmp_path / "forcing.nc").write_text("forcing\n")
    (tmp_path / "t.txt").write_text("1\n2\n")
    cp = farm(tmp_path, "--tasks", "t.txt", "--input", "forcing.nc", "--", "./ibis", "{1}", "{input}", "out.txt")
    assert cp.returncode == 0, cp.stderr
    for n in ("1", "2"):
        assert os.listdir(tmp_path / "tasks" / n) == ["out.txt"]
        assert (tmp_path / "tasks" / n / "out.txt").read_text() == f"{tmp_path}/ibis cell {n} forcing\n"
    # A program that is not beside the farm but in each (prepared) task
    # directory runs there.
    for case in ("a", "b"):
        (tmp_path / "cases" / case).mkdir(parents=True)
        _script(tmp_path / "cases" / case / "run", f'echo {case} "$1" > out.txt\n')
    (tmp_path / "c.txt").write_text("a\nb\n")
    cp = farm(tmp_path, "--mode", "off", "--tasks", "c.txt", "--workdir", "cases/{1}", "--", "./run", "{1}")
    assert cp.returncode == 0, cp.stderr
    assert [(tmp_path / "cases" / c / "out.txt").read_text() for c in "ab"] == ["a a\n", "b b\n"]


# Appends 240 lines to log.txt in its directory; then succeeds or fails:
# `retry` and `s2` fail their first attempt, `done` and `s1` never fail,
# the others fail until the file named by $2 exists.
APPENDER = """seq 240 >> log.txt
case $1 in
  retry|s2) test "$SLUICE_FARM_ATTEMPT" = 2 ;;
  done|s1) true ;;
  *) test -e "$2" ;;
esac || { echo "$1: not yet" >&2; exit 1; }
"""
LOG_240 = "".join(f"{i}\n" for i in range(1, 241)).encode()


def test_a_retried_or_rerun_task_starts_from_a_clean_directory(tmp_path):
    _script(tmp_path / "task.sh", APPENDER)
    (tmp_path / "case").mkdir()
    (tmp_path / "case" / "params.txt").write_text("prepared\n")
    (tmp_path / "t.txt").write_text("retry d/retry\ndone d/done\nrerun d/rerun\ncase case\n"
                                    "s1 shared\ns2 shared\n")
    args = ["-j", "2", "--mode", "off", "--tasks", "t.txt", "--workdir", "{2}", "--",
            str(tmp_path / "task.sh"), "{1}", str(tmp_path / "ok")]
    cp = farm(tmp_path, *args)
    assert cp.returncode == 1, cp.stderr
    d = tmp_path / "d"
    # A retry starts from an empty directory: one attempt's log, no stale task.err.
    assert (d / "retry" / "log.txt").read_bytes() == LOG_240 and os.listdir(d / "retry") == ["log.txt"]
    assert (d / "done" / "log.txt").read_bytes() == LOG_240
    assert sorted(os.listdir(d / "rerun")) == ["log.txt", "task.err"]
    assert (d / "rerun" / "log.txt").read_bytes() == LOG_240
    assert (d / "rerun" / "task.err").read_text() == "rerun: not yet\n"
    # A directory the farm did not make, or one tasks share, is left as it
    # is: the user's file stays, the attempts' appends add up.
    assert (tmp_path / "case" / "params.txt").read_text() == "prepared\n"
    assert (tmp_path / "case" / "log.txt").read_bytes() == LOG_240 * 2
    assert (tmp_path / "shared" / "log.txt").read_bytes().count(b"\n") == 3 * 240

    # The same command again: done tasks untouched, the failed ones start clean.
    done_mtime = (d / "done" / "log.txt").stat().st_mtime_ns
    (tmp_path / "ok").touch()
    cp = farm(tmp_path, *args)
    assert cp.returncode == 0, cp.stderr
    assert summary(tmp_path)["counts"]["skipped"] == 4
    assert (d / "done" / "log.txt").stat().st_mtime_ns == done_mtime
    assert os.listdir(d / "rerun") == ["log.txt"] and (d / "rerun" / "log.txt").read_bytes() == LOG_240
    assert (d / "retry" / "log.txt").read_bytes() == LOG_240
    # The prepared directory loses only the farm's stale task.err.
    assert sorted(os.listdir(tmp_path / "case")) == ["log.txt", "params.txt"]
    assert (tmp_path / "case" / "log.txt").read_bytes() == LOG_240 * 3

    # Another command over the same directories (post-processing) is other
    # tasks: it finds the first farm's outputs as they are.
    cp = farm(tmp_path, "--mode", "off", "--tasks", "t.txt", "--workdir", "{2}", "--",
              "sh", "-c", "wc -l < log.txt > lines.txt; echo counted")
    assert cp.returncode == 0, cp.stderr
    for n in ("retry", "done", "rerun"):
        assert sorted(os.listdir(d / n)) == ["lines.txt", "log.txt", "task.out"]
        assert (d / n / "lines.txt").read_text() == "240\n" and (d / n / "log.txt").read_bytes() == LOG_240


def test_a_task_whose_farm_was_killed_starts_clean_when_run_again(tmp_path):
    """SIGKILL leaves no journal line for the running task; the record that
    the farm made its directory, written before the task started, is enough."""
    _script(tmp_path / "task.sh", 'seq 240 >> log.txt\necho $$ > ../pid\ntest -e "$1" || exec sleep 60\n')
    (tmp_path / "t.txt").write_text("1\n")
    args = ["--mode", "off", "--tasks", "t.txt", "--", str(tmp_path / "task.sh"), str(tmp_path / "ok")]
    proc = subprocess.Popen([sys.executable, "-m", "sluice", "farm", "-q", "--local-dir", str(tmp_path / "local"),
                             *args], cwd=tmp_path, env=python_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    pid_file = tmp_path / "tasks" / "pid"
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().endswith("\n")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.kill()
    proc.communicate()
    os.killpg(int(pid_file.read_text()), signal.SIGKILL)  # the task outlives the farm: its own session
    assert (tmp_path / "tasks" / "1" / "log.txt").read_bytes() == LOG_240
    (tmp_path / "ok").touch()
    cp = farm(tmp_path, *args)
    assert cp.returncode == 0, cp.stderr
    assert (tmp_path / "tasks" / "1" / "log.txt").read_bytes() == LOG_240


def test_placeholders_fields_grid_and_tables():
    from sluice.farm.tasks import from_csv, from_grid, from_lines, from_toml
    from sluice.farm.template import Template

    grid = from_grid(["lat=1:3:2", "lon=a,b"])
    assert [(t.number, t.fields) for t in grid] == [(1, ("1", "a")), (2, ("1", "b")), (3, ("3", "a")), (4, ("3", "b"))]
    t = Template(["sh", "-c", "echo {lat}-{lon} {#} {%} ${HOME} {{lat}} {a b} {}"], "out/{lat}/{lon}")
    assert t.argv(grid[3], 2) == ["sh", "-c", "echo 3-b 4 2 ${HOME} {lat} {a b} 3 b"]
    assert t.argv(grid[3], None)[2].split()[3] == "{%}"  # the journal's identity does not hold the slot
    assert t.directory(grid[3]) == "out/3/b"
    lines = from_lines(["# header", "", "  12  7 x ", "13 8"], "f")
    assert [(x.number, x.fields, x.origin) for x in lines] == [(1, ("12", "7", "x"), "f:3"), (2, ("13", "8"), "f:4")]
    assert Template(["./model", "--fast"], "{#}").argv(lines[0], 1) == ["./model", "--fast", "12", "7", "x"]
    csv_tasks = from_csv("cell,years\n5, 10\n\n6,20\n", "c.csv")
    assert [(x.named, x.origin) for x in csv_tasks] == [({"cell": "5", "years": "10"}, "c.csv:2"),
                                                       ({"cell": "6", "years": "20"}, "c.csv:4")]
    toml_tasks = from_toml('[[task]]\ncell = 5\nname = "x y"\n[[task]]\ncell = 6\nname = "z"\n', "t.toml")
    assert Template(["m", "{cell}", "{2}", "{}"], "{#}").argv(toml_tasks[0], 1) == ["m", "5", "x y", "5 x y"]


def test_static_schedule_assigns_task_i_to_worker_i_mod_w(tmp_path):
    (tmp_path / "t.txt").write_text("".join(f"{i}\n" for i in range(1, 9)))
    cp = farm(tmp_path, "-j", "2", "--mode", "off", "--schedule", "static", "--tasks", "t.txt", "--",
              "sh", "-c", "echo {1} > out")
    assert cp.returncode == 0, cp.stderr
    assert {t["task"]: t["slot"] for t in summary(tmp_path)["tasks"]} == {i: (i - 1) % 2 + 1 for i in range(1, 9)}
    assert (tmp_path / "tasks" / "8" / "out").read_text() == "8\n"
    # --mode off: the programs ran without sluice, so there are no logs.
    assert not (tmp_path / "logs").exists() and summary(tmp_path)["io"] is None


def test_tasks_do_not_see_the_launchers_mpi_environment(tmp_path):
    """A task's own MPI program must not believe it is a rank of the farm's job."""
    (tmp_path / "t.txt").write_text("1\n")
    cp = farm(tmp_path, "--mode", "off", "--tasks", "t.txt", "--", "sh", "-c", "env > env.txt",
              env={"OMPI_COMM_WORLD_SIZE": "1", "PMIX_RANK": "0", "OMPI_MCA_btl": "self"})
    assert cp.returncode == 0, cp.stderr
    env = dict(l.split("=", 1) for l in (tmp_path / "tasks" / "1" / "env.txt").read_text().splitlines() if "=" in l)
    assert not [k for k in env if k.startswith(("OMPI_", "PMIX_", "PMI_"))]
    assert env["SLUICE_FARM_TASK"] == "1" and env["SLUICE_FARM_TASKS"] == "1" and env["SLUICE_FARM_SLOT"] == "1"


def test_report_takes_a_farm_as_one_job_and_shows_each_task(tmp_path):
    forcing, cells_file = setup_ensemble(tmp_path, ["1", "2", "3"])
    cp = farm(tmp_path, "-j", "2", "--input", str(forcing), "--tasks", str(cells_file), "--",
              member(), "{1}", str(FILES), str(STEPS), "{input}")
    assert cp.returncode == 0, cp.stderr
    job = summary(tmp_path)["job"]
    whole = sluice("report", "--json", "--by-task", str(tmp_path / "logs"))
    assert "jobs found" not in whole.stderr  # the tasks' logs are one job, not three
    r = json.loads(whole.stdout)
    assert r["job_id"] == job and r["processes"] == 3
    assert [(t["task"], t["processes"]) for t in r["tasks"]] == [(1, 1), (2, 1), (3, 1)]
    per_task = summary(tmp_path)["io"]["per_task"]
    for t in r["tasks"]:
        # The report and the farm's summary count the same POSIX metadata
        # calls: the node-local input copy is read through stdio (its fopen
        # is a STDIO open, no longer also a POSIX one under stage).
        assert t["app_meta_ops"] == per_task[str(t["task"])]["app"]["metadata_ops"]
        assert t["fs_meta_ops"] < t["app_meta_ops"]
    one = json.loads(sluice("report", "--json", "--job", f"{job}/2", str(tmp_path / "logs")).stdout)
    assert one["job_id"] == f"{job}/2" and one["processes"] == 1
    plain = sluice("report", "--by-task", str(tmp_path / "logs"), check=False)
    assert plain.returncode == 0 and "Tasks (sluice farm)" in plain.stdout


@pytest.mark.parametrize("kind", ["open-mode", "symlink"])
def test_a_local_directory_others_can_reach_is_refused(tmp_path, kind):
    """Tiers and input copies live in a private directory: never one with
    group/other access, never through a symbolic link."""
    (tmp_path / "t.txt").write_text("1\n")
    local = tmp_path / "shared-local"
    if kind == "open-mode":
        local.mkdir(mode=0o755)
        local.chmod(0o755)
        reason = "mode 0755 gives access to group or others (want 0700)"
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        local.symlink_to(tmp_path / "elsewhere")
        reason = "a symbolic link"
    cp = sluice("farm", "-q", "--local-dir", str(local), "--tasks", "t.txt", "--", "true", cwd=tmp_path, check=False)
    assert cp.returncode == 1
    assert cp.stderr == f"sluice: error: refusing the farm's local directory {local}: {reason}\n"
    assert not (tmp_path / "tasks").exists()


def test_an_unreadable_task_log_is_named_not_dropped_silently(tmp_path):
    from sluice.farm import summary as farm_summary
    from sluice.farm.attempt import FarmSettings
    from sluice.farm.template import Template

    forcing, cells_file = setup_ensemble(tmp_path, ["1", "2"])
    cp = farm(tmp_path, "-j", "2", "--tasks", str(cells_file), "--", member(), "{1}", "1", "1")
    assert cp.returncode == 0, cp.stderr
    job = summary(tmp_path)["job"]
    logs = sorted((tmp_path / "logs").glob("*.sluice"))
    assert len(logs) == 2
    logs[0].write_bytes(logs[0].read_bytes()[:100])
    farm_settings = FarmSettings(job=job, template=Template(["true"], "{#}"), tasks={}, mode="stage",
                                 log_dir=tmp_path / "logs", local_dir=tmp_path / "local")
    io = farm_summary.io_totals(farm_settings)
    assert io["logs"] == 1 and io["tasks"] == 1 and io["unreadable"] == 1
    s = {"counts": {"total": 2, "done": 2, "skipped": 0, "failed": 0, "interrupted": 0, "not_run": 0, "retried": 0},
         "wall_seconds": 1.0, "task_seconds": None, "failed": [], "io": io}
    line = farm_summary.text(s)[-1]
    assert line.startswith("  1 task log could not be read, left out of the figures above (first: ")
    assert str(logs[0].name) in line
