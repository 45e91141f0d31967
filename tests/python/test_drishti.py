"""`sluice advise` beside Drishti (drishti-io from PyPI, the tool Darshan users
read their logs with) on the same logs: PyDarshan's example logs, and the logs
of test programs exported with `sluice export --darshan`.

For each log the tables below say which problems Drishti reports, which
findings sluice reports, and which of Drishti's problems sluice does not
raise and why (docs/advise.md, "Beside Drishti", explains each reason). A
change on either side shows here as a failure: Drishti is pinned in
pyproject.toml.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import sluice
from test_advise import CASES, run

DRISHTI = Path(sys.executable).parent / "drishti"
EXAMPLES = Path(sys.executable).parents[1] / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
    "site-packages" / "darshan" / "examples" / "example_logs"

# Drishti's codes that name a problem (the others describe the job: P01-P04 read/write intensive, P12/P14
# sequential, M04/M05 collective use; M01 "low-performance interface" for POSIX-only jobs and M06/M07
# "could use non-blocking I/O" are advice for any job without MPI-IO or with blocking MPI-IO).
PROBLEMS = {"S01", "P05", "P06", "P07", "P08", "P09", "P10", "P11", "P13", "P15", "P16", "P17", "P18", "P19",
            "P21", "P22", "M02", "M03", "M08", "M09"}

# Drishti's problem -> the sluice findings that answer it
ANSWERS = {
    "S01": {"stdio-heavy"},
    "P05": {"small-reads", "random-reads"},
    "P06": {"small-writes", "small-shared-writes", "small-mpiio-writes"},
    "P08": {"misaligned"},
    "P09": {"redundant-reads"},
    "P10": {"redundant-writes"},
    "P11": {"random-reads"},
    "P15": {"small-reads", "random-reads"},
    "P16": {"small-shared-writes", "small-mpiio-writes"},
    "P17": {"metadata-heavy"},
    "P18": {"rank-imbalance"},
    "P19": {"rank-imbalance"},
    "P21": {"rank-imbalance"},
    "M02": {"no-collective-mpiio"},
    "M03": {"no-collective-mpiio", "small-mpiio-writes"},
}

# Why sluice does not raise one of Drishti's problems (the keys docs/advise.md explains)
INVERTED_TRAFFIC = "Drishti's P09/P10 fire when the highest offset exceeds the bytes moved (less traffic, not more)"
SMALL_MISALIGNED = "misaligned requests under 100 KiB are small requests, reported as such"
NOT_RANKS = "the export numbers a non-MPI job's processes as ranks; sluice compares MPI ranks only"

# log: (Drishti's problems, sluice's findings, Drishti's problems sluice leaves out: why)
EXAMPLE_LOGS = {
    # sluice's rank-imbalance: the slowest of 2,048 ranks 43 % above the mean; Drishti divides the gap by all
    # ranks' summed time, which no straggler among 2,048 ranks can reach
    "example.darshan": ({"P08", "P10"}, {"large-shared-file", "misaligned", "rank-imbalance"},
                        {"P10": INVERTED_TRAFFIC}),
    "ior_hdf5_example.darshan": ({"P08", "P10", "P19"}, {"misaligned", "rank-imbalance"}, {"P10": INVERTED_TRAFFIC}),
    "noposix.darshan": ({"S01"}, {"stdio-heavy", "large-shared-file"}, {}),
    "sample-badost.darshan": (set(), {"file-per-process", "redundant-reads"}, {}),
    "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan": (
        {"P06", "P08", "P16", "P18", "P19"}, {"small-mpiio-writes", "redundant-writes", "redundant-reads",
                                              "rank-imbalance"},
        {"P08": SMALL_MISALIGNED}),
}
# Drishti 0.8 stops with an IndexError on this one; sluice must still read it.
DRISHTI_FAILS = {"dxt.darshan"}


def drishti_problems(log: Path, out: Path) -> set[str] | None:
    """The problems Drishti finds in one Darshan log (None: Drishti failed)."""
    out.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([str(DRISHTI), "--csv", "--export_dir", str(out), str(log)], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        return None
    rows = list(csv.reader((out / (log.name.removesuffix(".darshan") + ".csv")).open()))
    return {code for code, flag in zip(rows[0], rows[1]) if flag == "True"} & PROBLEMS


def sluice_findings(path: Path) -> list[str]:
    return [f["id"] for f in json.loads(sluice("advise", "--json", str(path)).stdout)["findings"]]


def unanswered(problems: set[str], findings: list[str]) -> set[str]:
    return {p for p in problems if not ANSWERS.get(p, set()) & set(findings)}


def test_drishti_is_installed():
    assert DRISHTI.exists(), f"{DRISHTI} is missing: scripts/setup installs drishti-io with the test extras"


@pytest.mark.parametrize("name", sorted(EXAMPLE_LOGS) + sorted(DRISHTI_FAILS))
def test_pydarshan_example_logs_beside_drishti(name, tmp_path):
    log = EXAMPLES / name
    assert log.exists(), f"PyDarshan's example log {log} is missing"
    found = sluice_findings(log)
    problems = drishti_problems(log, tmp_path)
    if name in DRISHTI_FAILS:
        assert problems is None and found, "Drishti reads this log now: move it to EXAMPLE_LOGS"
        return
    want_drishti, want_sluice, left_out = EXAMPLE_LOGS[name]
    assert problems == want_drishti
    assert set(found) == want_sluice
    assert unanswered(problems, found) == set(left_out)


def _exported(case: str, tmp_path: Path) -> tuple[list[str], Path]:
    prog, mode, env, *_ = CASES[case]
    work, logs, out = tmp_path / "work", tmp_path / "logs", tmp_path / "out"
    for d in (work, logs, out):
        d.mkdir()
    run(logs, work, prog(work), mode, env)
    sluice("export", "--darshan", str(logs), "-o", str(out))
    (app,) = [p for p in out.glob("*.darshan") if not p.name.endswith(".fs.darshan")]
    return sluice_findings(logs), app


# Problems decided on times alone: a run of a few milliseconds on a loaded machine can show either.
TIMED = {"P17", "P19"}

# program: (Drishti's problems on the exported log (less TIMED), Drishti's problems sluice leaves out: why)
EXPORTED = {
    "small-writes": ({"P06"}, {}),
    "random-reads": ({"P05", "P09", "P11"}, {"P09": INVERTED_TRAFFIC}),
    "stdio": ({"S01"}, {}),
    "misaligned": ({"P08"}, {}),
    "strided-shared": ({"P06", "P21"}, {"P21": NOT_RANKS}),
    "amr-ckpt": ({"P06", "P16", "M03"}, {}),
    "small-files": (set(), {}),
}


@pytest.mark.parametrize("case", list(EXPORTED))
def test_test_programs_exported_beside_drishti(case, tmp_path):
    """The same job read by sluice from its own logs and by Drishti from the export: each of Drishti's
    problems is answered by one of sluice's findings, or is a difference the table explains; sluice's
    first finding is the same from its own logs and from the export."""
    native, app = _exported(case, tmp_path)
    problems = drishti_problems(app, tmp_path / "drishti") - TIMED
    want, left_out = EXPORTED[case]
    assert problems == want
    assert unanswered(problems, native) == set(left_out)
    assert sluice_findings(app)[0] == native[0] == CASES[case][3]
