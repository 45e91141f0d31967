"""`sluice run` starts before the program and waits for it: it must not
import the report, advise, plotting or array machinery (tens to hundreds of
milliseconds for every process of a job, and for every rank under mpirun).
Checked by the modules loaded, not by a timing: docs/overhead.md gives the
times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import bin_path, python_env

# Packages `sluice run` has no use for, whatever the mode.
HEAVY = ("numpy", "matplotlib", "rich", "pandas", "sluice.report", "sluice.advise", "sluice.logfmt",
         "sluice.darshan", "sluice.bench", "sluice.farm", "sluice.testbed", "sluice.cli.report",
         "sluice.cli.advise")

# Runs the CLI's main() in this interpreter, then prints the modules it loaded.
PROBE = """
import json, sys
from sluice.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    status = e.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def run_and_list_modules(*args: str, cwd: Path) -> tuple[int, set[str]]:
    cp = subprocess.run([sys.executable, "-c", PROBE, *args], env=python_env(), cwd=cwd, text=True,
                        capture_output=True, timeout=120)
    out = json.loads(cp.stdout.strip().splitlines()[-1])
    return out["status"], set(out["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("mode", ["profile", "buffer", "stage"])
def test_run_imports_nothing_heavy(tmp_path, mode):
    tier = tmp_path / "tier"
    status, modules = run_and_list_modules("run", "--mode", mode, "--tier", str(tier), "--log-dir", "logs", "--",
                                           bin_path("sluice-io"), f"creat:{tmp_path}/f", "close", cwd=tmp_path)
    assert status == 0
    # it did run the program under sluice (and in stage mode the job's drainer, which published its file)
    assert len(list((tmp_path / "logs").glob("*_sluice-io_*.sluice"))) == 1
    assert heavy(modules) == []
    # the tier's journal is read only when it holds entries: here everything
    # was published at exit, so not even in stage mode
    assert "sluice.stage.scan" not in modules
    assert "tomllib" not in modules                                # no --config: no TOML parser


def test_run_reads_the_tier_when_files_are_left_on_it(tmp_path):
    """A program killed while it writes a file leaves it on the tier (what it
    closed, the job's drainer publishes): then the tier is read (and the
    file named)."""
    tier = tmp_path / "tier"
    status, modules = run_and_list_modules("run", "--mode", "stage", "--tier", str(tier), "--log-dir", "logs", "--",
                                           "sh", "-c", f"exec 3>{tmp_path}/f; echo x >&3; kill -9 $$", cwd=tmp_path)
    assert status == 128 + 9
    assert "sluice.stage.scan" in modules


def test_the_probe_sees_heavy_imports(tmp_path):
    # the same probe on `sluice report` finds them: the check above can fail
    sluice_io = bin_path("sluice-io")
    status, _ = run_and_list_modules("run", "--log-dir", "logs", "--", sluice_io, f"creat:{tmp_path}/f", cwd=tmp_path)
    assert status == 0
    status, modules = run_and_list_modules("report", "logs", cwd=tmp_path)
    assert status == 0
    assert {"numpy", "rich", "sluice.report"} <= {m.split(".")[0] if not m.startswith("sluice.") else
                                                  ".".join(m.split(".")[:2]) for m in modules}


def test_plain_run_arguments_are_parsed_without_click(tmp_path):
    status, modules = run_and_list_modules("run", "--log-dir", "logs", "--", bin_path("sluice-io"),
                                           f"creat:{tmp_path}/f", cwd=tmp_path)
    assert status == 0 and "click" not in modules
    # help and errors are click's
    status, modules = run_and_list_modules("run", "--mode", "nope", "--", "true", cwd=tmp_path)
    assert status == 2 and "click" in modules


@pytest.mark.parametrize("args", [
    ["--", "true"],
    ["true", "-x", "--mode", "y"],
    ["--mode", "stage", "--tier", "/t", "--", "prog", "--mode", "y"],
    ["--mode=buffer", "--buffer-size=8M", "-q", "prog"],
    ["--policy", "/a=stage", "--policy", "/b=buffer", "--path", "/a", "--path=/c", "prog"],
    ["--include-runtime", "--detach", "--log-dir", "L", "--job-id", "J", "prog", "arg"],
    ["--config", "c.toml", "--log-dir", "-odd-name", "prog"],
])
def test_the_quick_parser_reads_what_click_reads(args):
    from sluice.cli import run

    ctx = run._click_command().make_context("run", list(args))
    assert run.quick_parse(list(args)) == ctx.params


@pytest.mark.parametrize("args", [
    [], ["--help"], ["-h"], ["--bogus", "prog"], ["--mode", "nope", "prog"], ["--log-dir"], ["--quiet=1", "prog"],
    ["-qq", "prog"], ["--mode"],
])
def test_the_quick_parser_leaves_help_and_errors_to_click(args):
    from sluice.cli import run

    assert run.quick_parse(list(args)) is None
