"""The stage-mode crash campaign (bench/crash_campaign.py, docs/stage.md
"Crash campaign") on a CI budget: 36 seeded SIGKILL points of the mixed
workload (stdio, POSIX write and pwrite, HDF5, netCDF-4, renames, a
directory rename, unlinks, a forked child writing through an inherited
descriptor), each followed by `sluice recover`, every byte checked against
a plain run of the same workload. About a minute on a loaded 2-core machine.

SLUICE_CRASH_SEED picks another seed (the default one is fixed so that a
failure reruns with the command the campaign prints)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import NATIVE, REPO, bin_path, python_env

POINTS = 36


def test_sigkill_anywhere_then_recover_loses_nothing(tmp_path):
    seed = os.environ.get("SLUICE_CRASH_SEED", "7")
    out = tmp_path / "campaign.json"
    cp = subprocess.run(
        [sys.executable, str(REPO / "bench" / "crash_campaign.py"), "--points", str(POINTS), "--seed", seed,
         "--ops", "6", "--variants", "2", "--jobs", "2", "--hang-timeout", "60", "--native", str(NATIVE),
         "--workload", bin_path("crash_workload"), "--json", str(out)],
        env=python_env(), capture_output=True, text=True, timeout=900)
    print(cp.stdout[-6000:], cp.stderr[-3000:])
    assert cp.returncode == 0, f"crash campaign failed:\n{cp.stdout[-8000:]}\n{cp.stderr[-3000:]}"
    res = json.loads(out.read_text())
    assert res["points"] == POINTS and res["failures"] == 0
    # it did what it says: killed single processes and whole trees, workload
    # processes in the middle of their operations, and checked real bytes
    assert res["victims"].get("tree", 0) >= 3
    assert sum(n for v, n in res["victims"].items() if v.startswith("lane")) >= 3
    ops = ("stdio", "posix", "pwrite", "inherit", "h5", "nc", "rename", "unlink", "dirrename")
    assert sum(n for ph, n in res["killed_while_in"].items() if ph.split()[0] in ops) >= 5
    assert res["files_checked"] >= 2 * POINTS and res["bytes_checked"] >= 1_000_000
