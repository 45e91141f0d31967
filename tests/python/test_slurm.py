"""`sluice farm` under a real Slurm (Debian's slurmctld + slurmd, one node,
started by scripts/slurm): a farm job over srun ranks, a job array sharing
the tasks and the journal, and the epilog recovering a killed job's tiers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, bin_path, python_env

pytestmark = pytest.mark.slurm

SCRIPT = REPO / "scripts" / "slurm"
EPILOG_LOG = Path("/var/log/sluice-epilog.log")


@pytest.fixture(scope="module")
def slurm_env():
    if os.geteuid() != 0:
        pytest.fail("the Slurm tests need root (slurmd runs the jobs)")
    started = subprocess.run([SCRIPT, "status"], capture_output=True).returncode != 0
    if started:
        subprocess.run([SCRIPT, "up"], check=True, capture_output=True, timeout=120)
    conf = subprocess.run([SCRIPT, "env"], check=True, capture_output=True, text=True).stdout.split("=", 1)[1].strip()
    yield {**python_env(), "SLURM_CONF": conf}
    if started:
        subprocess.run([SCRIPT, "down"], capture_output=True, timeout=120)


def sbatch(tmp_path: Path, env: dict[str, str], script: str, *opts: str) -> str:
    (tmp_path / "job.sh").write_text("#!/bin/sh\n" + script)
    cp = subprocess.run(["sbatch", "--parsable", "--wait", "-o", str(tmp_path / "slurm-%A_%a.out"), *opts,
                         str(tmp_path / "job.sh")], cwd=tmp_path, env=env, capture_output=True, text=True,
                        timeout=600)
    out = "".join(p.read_text() for p in sorted(tmp_path.glob("slurm-*.out")))
    assert cp.returncode in (0, 1), f"{cp.stderr}\n{out}"
    return out


def farm_command(tmp_path: Path, *args: str, default_local_dir: bool = False) -> str:
    local = [] if default_local_dir else ["--local-dir", str(tmp_path / "local")]
    return " ".join([sys.executable, "-m", "sluice", "farm", "-q", *local, *args])


def cells(tmp_path: Path, n: int) -> Path:
    (tmp_path / "cells.txt").write_text("".join(f"{i}\n" for i in range(1, n + 1)))
    return tmp_path / "cells.txt"


def expected_tree(tmp_path: Path, n: int) -> dict[str, bytes]:
    ref = tmp_path / "ref"
    for i in range(1, n + 1):
        (ref / str(i)).mkdir(parents=True)
        subprocess.run([bin_path("ensemble_member"), str(i), "2", "3"], cwd=ref / str(i), check=True)
    return tree(ref)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_sbatch_of_a_farm_over_srun_ranks(tmp_path, slurm_env):
    cells(tmp_path, 40)
    out = sbatch(tmp_path, slurm_env,
                 "srun --mpi=pmix " + farm_command(tmp_path, "--json", "s.json", "--tasks", "cells.txt", "--",
                                                   bin_path("ensemble_member"), "{1}", "2", "3") + "\n",
                 "-n", "2")
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["counts"]["done"] == 40, out
    assert {t["rank"] for t in s["tasks"]} == {0, 1}  # one worker per srun rank, tasks handed out by rank 0
    assert s["job"].split(".")[0].isdigit()  # the Slurm job id names the farm's logs
    assert tree(tmp_path / "tasks") == expected_tree(tmp_path, 40)


def test_a_job_array_shares_the_tasks_and_the_journal(tmp_path, slurm_env):
    cells(tmp_path, 10)
    cmd = farm_command(tmp_path, "-j", "1", "--tasks", "cells.txt", "--", bin_path("ensemble_member"), "{1}", "2", "3")
    sbatch(tmp_path, slurm_env, cmd + "\n", "--array=0-2")
    assert tree(tmp_path / "tasks") == expected_tree(tmp_path, 10)
    from sluice.farm.journal import read_all

    logs = sorted((tmp_path / "sluice-farm.journal").glob("*.log"))
    assert len(logs) == 3  # one writer per array element: no shared appends on the shared file system
    shares = sorted(sorted(l.number for l in read_all_one(p)) for p in logs)
    assert shares == [[1, 4, 7, 10], [2, 5, 8], [3, 6, 9]]
    assert {l.outcome for l in read_all(tmp_path / "sluice-farm.journal")} == {"done"}
    # The same farm run outside Slurm afterwards: every task already done.
    cp = subprocess.run(cmd.split(), cwd=tmp_path, env={k: v for k, v in slurm_env.items()}, capture_output=True,
                        text=True, timeout=120)
    assert cp.returncode == 0 and cp.stderr.startswith("sluice farm: 10 tasks: 0 done, 10 skipped"), cp.stderr


def read_all_one(path: Path):
    from sluice.farm.journal import decode

    return [l for l in map(decode, path.read_text().splitlines()) if l is not None]


def test_the_epilog_publishes_what_a_killed_job_left_on_its_tiers(tmp_path, slurm_env):
    """Tasks killed with files staged and unpublished: the farm keeps their
    tiers (its last attempt), the job ends, and the epilog publishes them.
    The farm uses its default local directory, the one the epilog knows."""
    (tmp_path / "t.txt").write_text("1\n2\n")
    (tmp_path / "one-drainer.toml").write_text("[stage]\ndrainers = 1\n")
    writer = "for i in $(seq 1500); do echo {1}-$i > f$i; done; kill -9 $$"
    cmd = farm_command(tmp_path, "--json", "s.json", "--retries", "0", "--config", "one-drainer.toml",
                       "--tasks", "t.txt", "--", "sh", "-c", f"'{writer}'", default_local_dir=True)
    mark = EPILOG_LOG.stat().st_size if EPILOG_LOG.exists() else 0
    sbatch(tmp_path, slurm_env, cmd + "\n", "-n", "1")
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["counts"]["failed"] == 2
    kept = [f["kept_tier"] for f in s["failed"] if f["kept_tier"]]
    assert kept, "the tasks' files were all published before the kill: nothing for the epilog to do"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(Path(k).exists() for k in kept):
        time.sleep(0.2)
    log = EPILOG_LOG.read_text()[mark:] if EPILOG_LOG.exists() else ""
    assert all(not Path(k).exists() for k in kept), log
    for k in kept:
        assert f"sluice recover {k}: " in log and " published" in log
    for task in (1, 2):
        d = tmp_path / "tasks" / str(task)
        assert sorted(int(p.name[1:]) for p in d.glob("f*")) == list(range(1, 1501))
        assert all((d / f"f{i}").read_text() == f"{task}-{i}\n" for i in range(1, 1501))
