"""--mode auto's first-write size by the model: SLUICE_DIRECT_FROM's
rules by prefix in the library, the size sluice.autolarge finds in a
calibrated profile, `sluice run --fs FS.json` handing it over, and
`sluice predict` pricing auto with it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import NATIVE, REPO, file_entry, report_json, sluice

from sluice.autolarge import auto_large_of, crossover
from sluice.errors import UserError
from sluice.report.model import load_job

KIB = 1024
MIB = 1 << 20


def _write(path: Path, request: int, size: int = 2 * MIB) -> list[str]:
    return [str(NATIVE / "sluice-bench-limits"), "write", "--file", str(path), "--size", str(size),
            "--request-size", str(request), "--no-fsync"]


def _script(*cmds: list[str]) -> list[str]:
    return ["sh", "-c", " && ".join(" ".join(c) + " >/dev/null" for c in cmds)]


def test_the_longest_prefix_rule_decides_a_staged_files_first_write(tmp_path, logdir):
    """Under a/ (256 KiB) a file whose first write is 512 KiB goes straight
    through and one of 128 KiB stays staged; under b/, outside the rule,
    512 KiB stays staged (--auto-large's 1 MiB); a/deep/ has a rule of its
    own (0: staged whatever the size). The bytes are a plain run's."""
    work, plain = tmp_path / "w", tmp_path / "plain"
    names = {"a/f512": 512 * KIB, "a/f128": 128 * KIB, "b/f512": 512 * KIB, "a/deep/f2m": 2 * MIB}
    for root in (work, plain):
        for d in ("a/deep", "b"):
            (root / d).mkdir(parents=True)
    sluice("run", "-q", "--mode", "auto", "--tier", str(tmp_path / "tier"), "--log-dir", str(logdir),
           "--path", str(work), "--direct-from", f"{work}/a=256K,{work}/a/deep=0",
           "--", *_script(*(_write(work / n, q) for n, q in names.items())))
    subprocess.run(_script(*(_write(plain / n, q) for n, q in names.items())), check=True)
    report = report_json(logdir)
    for name, request in names.items():
        assert (work / name).read_bytes() == (plain / name).read_bytes(), name
        e = file_entry(report, work / name)
        direct = name == "a/f512"
        assert e["app"]["POSIX_STAGED_OPENS"] == 1 and e["app"]["POSIX_AUTO_DIRECT"] == int(direct), name
        # straight through: the program's own writes; staged: one publish of 2 MiB
        assert e["fs"]["POSIX_WRITES"] == (2 * MIB // request if direct else 1), name
    info = next(l for l in load_job([logdir]).logs if l.info.get("auto_large"))
    assert info.info["auto_large"] == str(MIB) and info.info["direct_from"] == f"{work}/a=256K,{work}/a/deep=0"
    text = sluice("report", str(logdir)).stdout
    assert f"at least 256 KiB under {work}/a, never under {work}/a/deep, 1 MiB elsewhere" in " ".join(text.split())


def test_stage_mode_goes_straight_through_only_under_a_direct_from_rule(tmp_path, logdir):
    """Stage mode keeps every file on the tier (no --auto-large), but under a
    --direct-from prefix (what `sluice run --fs` sets) a first write of at
    least its size goes straight through, as under auto."""
    work = tmp_path / "w"
    for d in ("a", "b"):
        (work / d).mkdir(parents=True)
    sluice("run", "-q", "--mode", "stage", "--tier", str(tmp_path / "tier"), "--log-dir", str(logdir),
           "--path", str(work), "--direct-from", f"{work}/a=256K",
           "--", *_script(_write(work / "a/big", 4 * MIB, 8 * MIB), _write(work / "b/big", 4 * MIB, 8 * MIB)))
    report = report_json(logdir)
    a, b = file_entry(report, work / "a/big"), file_entry(report, work / "b/big")
    assert a["app"]["POSIX_AUTO_DIRECT"] == 1 and b["app"]["POSIX_AUTO_DIRECT"] == 0
    assert a["app"]["POSIX_STAGED_OPENS"] == b["app"]["POSIX_STAGED_OPENS"] == 1
    assert (work / "a/big").stat().st_size == (work / "b/big").stat().st_size == 8 * MIB
    text = " ".join(sluice("report", str(logdir)).stdout.split())
    assert f"of them 1 went straight through at a first write of at least 256 KiB under {work}/a" in text


def _profile(mount: Path, staged: dict[int, float], direct: dict[int, float]) -> dict:
    return {"schema": "sluice-fs-profile 1", "measured": "2026-12-03T07:00:00+0000", "target": str(mount),
            "filesystem": {"type": "fuse.mfs", "mount_point": str(mount)},
            "data": {"auto_write_s": {str(q): {"staged": {"median": staged[q]}, "direct": {"median": direct[q]}}
                                      for q in staged}}}


# staged cheaper up to 256 KiB, dearer from 1 MiB (the testbed's shape, bench/results)
STAGED = {4096: 36e-6, 65536: 477e-6, 262144: 1.68e-3, 1 << 20: 6.99e-3, 4 << 20: 32e-3}
DIRECT = {4096: 126e-6, 65536: 573e-6, 262144: 1.82e-3, 1 << 20: 6.24e-3, 4 << 20: 28.8e-3}


def test_the_size_is_where_staging_stops_paying():
    # between 256 KiB (staged 0.14 ms cheaper) and 1 MiB (0.75 ms dearer), each linear in the size:
    # 256 KiB + 768 KiB x 0.14 / 0.89 = 376.8 KiB, rounded up to a page
    assert crossover(STAGED, DIRECT) == 380 * KIB
    assert crossover({1: 2.0, 2: 3.0}, {1: 1.0, 2: 1.0}) == 1          # staging never cheaper: every write
    assert crossover({4096: 1.0, 8192: 1.0}, {4096: 2.0, 8192: 2.0}) == 16384   # always: twice the largest
    # a size where the rounds' noise made staging cheaper again below does not count: the last crossing
    noisy = {4096: -1.0, 65536: 1.0, 262144: -1.0, 1 << 20: 1.0}
    x = crossover({q: 5.0 + d for q, d in noisy.items()}, dict.fromkeys(noisy, 5.0))
    assert 262144 < x <= 1 << 20 and x % 4096 == 0
    assert auto_large_of({"data": {}}) is None


def test_run_fs_gives_auto_the_profiles_size_on_its_file_system(tmp_path, logdir):
    work = tmp_path / "w"
    work.mkdir()
    fs = tmp_path / "fs.json"
    fs.write_text(json.dumps(_profile(work, STAGED, DIRECT)))
    cp = sluice("run", "--mode", "auto", "--tier", str(tmp_path / "tier"), "--log-dir", str(logdir), "--path",
                str(work), "--fs", str(fs), "--", *_script(_write(work / "big", 512 * KIB),
                                                           _write(work / "small", 256 * KIB)))
    assert (f"sluice: --fs: on {work} (fuse.mfs, calibrated 2026-12-03T07:00:00+0000) a staged file goes straight "
            "through at a first write of 380 KiB or more (staged 1.68 ms against direct 1.82 ms a 256 KiB call, "
            "6.99 against 6.24 ms a 1 MiB one)") in cp.stderr
    report = report_json(logdir)
    assert file_entry(report, work / "big")["app"]["POSIX_AUTO_DIRECT"] == 1
    assert file_entry(report, work / "small")["app"]["POSIX_AUTO_DIRECT"] == 0
    # the user's own rule for the same prefix comes after the profile's and wins
    cp = sluice("run", "-q", "--mode", "auto", "--tier", str(tmp_path / "tier"), "--log-dir", str(tmp_path / "l2"),
                "--path", str(work), "--fs", str(fs), "--direct-from", f"{work}=0", "--",
                *_script(_write(work / "big", 512 * KIB)))
    assert file_entry(report_json(tmp_path / "l2"), work / "big")["app"]["POSIX_AUTO_DIRECT"] == 0
    assert cp.stderr == ""


def test_report_fs_sets_each_first_write_decision_beside_the_profiles_prediction(tmp_path, logdir):
    """Two staged files (first writes of 512 and 64 KiB, traced) under --fs:
    the report names the way each went, the model's way, each way's
    predicted cost a call at that size (the profile's figures, between
    its measured sizes on the log of the size) and the run's own cost a
    call (its write time over its writes)."""
    work = tmp_path / "w"
    work.mkdir()
    fs = tmp_path / "fs.json"
    fs.write_text(json.dumps(_profile(work, STAGED, DIRECT)))
    sluice("run", "-q", "--mode", "auto", "--trace", "10000", "--tier", str(tmp_path / "tier"), "--log-dir",
           str(logdir), "--path", str(work), "--fs", str(fs), "--",
           *_script(_write(work / "big", 512 * KIB), _write(work / "small", 64 * KIB)))
    doc = json.loads(sluice("report", "--json", "--fs", str(fs), str(logdir)).stdout)
    rows = {Path(r["path"]).name: r for r in doc["first_write_decisions"]["files"]}
    assert doc["first_write_decisions"]["large"] == 380 * KIB
    big, small = rows["big"], rows["small"]
    assert (big["first_write"], big["first_traced"], big["went"], big["model"]) == (512 * KIB, True, "direct", "direct")
    assert (small["first_write"], small["went"], small["model"]) == (64 * KIB, "staged", "staged")
    assert small["predicted_staged_s"] == pytest.approx(STAGED[65536])
    # 512 KiB: a third of the way from 256 KiB to 1 MiB, linear in the size
    assert big["predicted_direct_s"] == pytest.approx(DIRECT[262144] + (DIRECT[1 << 20] - DIRECT[262144]) / 3)
    e = file_entry(doc, work / "big")
    assert big["measured_s"] == pytest.approx(e["fs"]["POSIX_F_WRITE_TIME"] / e["app"]["POSIX_WRITES"])
    text = " ".join(sluice("report", "--fs", str(fs), str(logdir)).stdout.split())
    assert f"First-write decisions by {work}'s profile" in text and "straight through from 380 KiB" in text


def test_farm_fs_gives_its_tasks_the_profiles_size(tmp_path):
    """sluice farm --fs: each stage-mode task's new file goes straight
    through from the profile's size (512 KiB calls: above its 380 KiB),
    the bytes as written."""
    work = tmp_path / "w"
    work.mkdir()
    fs = tmp_path / "fs.json"
    fs.write_text(json.dumps(_profile(work, STAGED, DIRECT)))
    logs = tmp_path / "logs"
    cp = sluice("farm", "-q", "--local-dir", str(tmp_path / "local"), "--log-dir", str(logs), "--path", str(work),
                "--fs", str(fs), "--grid", "n=1:2", "--", *_write(work / "out.{n}", 512 * KIB), cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    for n in (1, 2):
        assert (work / f"out.{n}").stat().st_size == 2 * MIB
    job = load_job([logs])
    got = {f.path: f.app.get("POSIX_AUTO_DIRECT", 0) for f in job.files if f.path.startswith(str(work))}
    assert got == {str(work / "out.1"): 1, str(work / "out.2"): 1}


def test_run_fs_leaves_a_file_system_where_staging_never_paid_to_profile(tmp_path, logdir):
    work = tmp_path / "w"
    work.mkdir()
    fs = tmp_path / "fast.json"
    fs.write_text(json.dumps(_profile(work, {q: 2 * t for q, t in DIRECT.items()}, DIRECT)))
    cp = sluice("run", "--mode", "auto", "--tier", str(tmp_path / "tier"), "--log-dir", str(logdir), "--path",
                str(work), "--fs", str(fs), "--", *_script(_write(work / "f", 4096, 64 * KIB)))
    assert "nothing to gain, auto leaves its files to profile mode (staging was cheaper at no measured size)" in cp.stderr
    e = file_entry(report_json(logdir), work / "f")
    assert e["app"]["POSIX_STAGED_OPENS"] == 0 and e["fs"]["POSIX_WRITES"] == e["app"]["POSIX_WRITES"] == 16


def test_run_fs_with_a_profile_it_cannot_use_is_one_line_and_runs_nothing(tmp_path, logdir):
    marker = tmp_path / "ran"
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"schema": "sluice-fs-profile 1", "data": {}}))
    for bad, says in ((old, "holds no timings of staged against direct writes"),
                      (tmp_path / "missing.json", "cannot read the file-system profile"),
                      (REPO / "pyproject.toml", "cannot read the file-system profile")):
        cp = sluice("run", "--mode", "auto", "--log-dir", str(logdir), "--fs", str(bad), "--", "touch", str(marker),
                    check=False)
        assert cp.returncode != 0 and says in cp.stderr and "Traceback" not in cp.stderr, cp.stderr
        assert len(cp.stderr.strip().splitlines()) == 1 and not marker.exists()


def test_predict_prices_auto_with_the_profiles_size(tmp_path, logdir):
    """A traced job whose file's first write is 512 KiB: with --auto-large's
    1 MiB auto stages it (its publish: one create, no seek); with a profile
    whose size is 380 KiB, it goes straight through (the empty file's
    publish, the program's descriptor reopened and moved: one more open and
    a seek)."""
    from sluice.predict import predict

    work = tmp_path / "w"
    work.mkdir()
    sluice("run", "-q", "--mode", "profile", "--trace", "10000", "--log-dir", str(logdir), "--path", str(work),
           "--", *_write(work / "ckpt", 512 * KIB))
    calibrated = json.loads((REPO / "bench/results/calibrate-testbed-delay0us-5a82684.json").read_text())
    job = load_job([logdir])
    before = predict(job, calibrated)
    calibrated["data"]["auto_write_s"] = _profile(work, STAGED, DIRECT)["data"]["auto_write_s"]
    after = predict(job, calibrated)
    assert before["file_system"]["auto_large"] == MIB and after["file_system"]["auto_large"] == 380 * KIB
    a, b = before["modes"]["auto"]["fs"], after["modes"]["auto"]["fs"]
    assert a["POSIX_SEEKS"] == 0 and b["POSIX_SEEKS"] == 1
    assert b["POSIX_OPENS"] == a["POSIX_OPENS"] + 1
    assert b["POSIX_WRITES"] >= a["POSIX_WRITES"] == 1
    with pytest.raises(UserError):
        from sluice.autolarge import read_profile
        read_profile(tmp_path / "none.json")


def test_the_deciding_write_is_the_one_the_library_can_act_on():
    """auto moves a staged file at its first write only while it is empty
    and open once (src/tiers/stage.c): sized by a truncate first, or open
    twice, it stays, and predict sees that in the trace."""
    from sluice.predict import deciding_write

    opened, closed = (0, 2, -1, 0, 0), (9, 3, -1, 0, 9)
    write = (5, 1, 0, 512 * KIB, 6)
    assert deciding_write([opened, write, closed]) == 512 * KIB
    assert deciding_write([opened, (1, 4, -1, 4096, 1), write, closed]) == 0       # sized first
    assert deciding_write([opened, (1, 4, -1, 0, 1), write, closed]) == 512 * KIB  # truncated to empty
    assert deciding_write([opened, (2, 2, -1, 0, 2), write, closed, closed]) == 0  # a second open
    assert deciding_write([opened, closed]) is None
