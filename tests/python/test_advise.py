"""`sluice advise`: real programs run under `sluice run`, their logs read
back, and the expected finding first with the right mode, paths, layout and
settings; the --json shape and order; the text and HTML forms; errors as
the report gives them. A few checks that need a job's shape no small
program makes quickly (a 1 GiB shared file, a straggler rank, 30 s of
metadata) run on logs built in memory."""

from __future__ import annotations

import json
import random
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import NATIVE, REPO, bin_path, file_entry, report_json, sluice

from sluice.advise import advise, to_json
from sluice.advise.fix import group_paths
from sluice.advise.rules import IDS
from sluice.logfmt import Log, Record
from sluice.report.model import Job, merge
from sluice.report.pattern import LOCAL_FS_TYPES

KIB, MIB, GIB = 1024, 1024 * 1024, 1024 ** 3
MPIRUN = ["mpirun", "--oversubscribe", "-np", "4"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}
SEVERITY = {"high": 0, "medium": 1, "low": 2}


def native(name: str) -> str:
    p = NATIVE / name
    if not p.exists():
        pytest.fail(f"{p} is missing: build the tree first (scripts/test does)")
    return str(p)


def run(logdir: Path, workdir: Path, cmd: list[str], mode: str = "profile", env: dict | None = None) -> None:
    sluice("run", "-q", "--mode", mode, "--log-dir", str(logdir), "--path", str(workdir), "--", *cmd, env=env)


def findings(logdir: Path) -> list[dict]:
    return json.loads(sluice("advise", "--json", str(logdir)).stdout)["findings"]


def by_id(fs: list[dict], fid: str) -> dict:
    for f in fs:
        if f["id"] == fid:
            return f
    raise AssertionError(f"no {fid} finding in {[f['id'] for f in fs]}")


# --------------------------------------------------------------------------
# the programs, each with what advise must say first


def small_writes(w: Path) -> list[str]:
    return [bin_path("sluice-io"), f"creat:{w}/out.dat"] + ["write:8192"] * 2000 + ["close"]


def small_reads(w: Path) -> list[str]:
    (w / "in.dat").write_bytes(b"r" * (8 * MIB))
    return [bin_path("sluice-io"), f"open:{w}/in.dat:r"] + ["read:4096"] * 2049 + ["close"]


def small_files(w: Path) -> list[str]:
    ops = []
    for i in range(500):
        ops += [f"creat:{w}/f.{i:04d}", "write:4096", "close"]
    return [bin_path("sluice-io"), *ops]


def create_once(w: Path) -> list[str]:
    return [native("sluice-bench-create-once"), "--dir", str(w / "md"), "--procs", "2", "--files", "250", "--stat"]


def random_reads(w: Path) -> list[str]:
    (w / "big").write_bytes(b"z" * (16 * MIB))
    rng = random.Random(1)
    preads = [f"pread:4096:{rng.randrange(4096) * 4096}" for _ in range(3000)]
    return [bin_path("sluice-io"), f"open:{w}/big:r", *preads, "close"]


def strided_shared(w: Path) -> list[str]:
    return [native("sluice-bench-strided-shared"), "--file", str(w / "shared"), "--procs", "4", "--size", "16M"]


def fpp_netcdf(w: Path) -> list[str]:
    return [native("sluice-bench-fpp-netcdf"), "--dir", str(w / "nc"), "--procs", "4", "--steps", "4"]


def many_opens(w: Path) -> list[str]:
    return [bin_path("sluice-io"), f"creat:{w}/log.txt", "write:100", "close"] + \
        [f"open:{w}/log.txt:w,append", "write:100", "close"] * 150


def stdio_text(w: Path) -> list[str]:
    return [bin_path("sluice-io"), f"fopen:{w}/table.txt:w"] + ["fwrite:200"] * 3000 + ["fclose"]


def stats(w: Path) -> list[str]:
    (w / "params.nml").write_text("&run nsteps=10 /\n")
    return [bin_path("sluice-io")] + [f"stat:{w}/params.nml"] * 1500


def misaligned(w: Path) -> list[str]:
    return [bin_path("sluice-io"), f"creat:{w}/field.h5"] + ["write:1000000"] * 40 + ["close"]


def amr_ckpt(w: Path) -> list[str]:
    return [*MPIRUN, native("sluice-bench-amr-ckpt"), "--variant", "indep", "--file", str(w / "ckpt.dat"),
            "--boxes", "2000", "--box-bytes", "4096"]


def large_sequential(w: Path) -> list[str]:
    return [native("sluice-bench-smallio"), "--file", str(w / "big.out"), "--size", "32M", "--write-size", "4M",
            "--phase", "write"]


# name: (program, mode, env, first finding, its mode, its paths, more checks)
CASES = {
    "small-writes": (small_writes, "profile", None, "small-writes", "buffer", lambda w: [str(w)], None),
    "small-reads": (small_reads, "profile", None, "small-reads", "buffer", lambda w: [str(w)], None),
    "small-files": (small_files, "profile", None, "file-per-process-small-files", "stage", lambda w: [str(w)], None),
    "create-once": (create_once, "profile", None, "file-per-process-small-files", "stage",
                    lambda w: [str(w / "md")], "fpp-layout"),
    "random-reads": (random_reads, "profile", None, "random-reads", "profile", lambda w: [str(w)], None),
    "strided-shared": (strided_shared, "profile", None, "small-shared-writes", "profile",
                       lambda w: [str(w)], None),
    "fpp-netcdf": (fpp_netcdf, "profile", None, "small-writes", "buffer", lambda w: [str(w / "nc")], "nofill"),
    "many-opens": (many_opens, "profile", None, "many-opens-one-file", "stage", lambda w: [str(w)], None),
    "stats": (stats, "profile", None, "metadata-heavy", "profile", lambda w: [str(w)], "stats"),
    "stdio": (stdio_text, "profile", None, "stdio-heavy", "buffer", lambda w: [str(w)], None),
    "misaligned": (misaligned, "profile", None, "misaligned", "buffer", lambda w: [str(w)], "hdf5-alignment"),
    "amr-ckpt": (amr_ckpt, "profile", MPI_ENV, "small-mpiio-writes", "acb", lambda w: [str(w / "ckpt.dat")],
                 "mpi-hints"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_expected_finding_first(case, workdir, logdir):
    program, mode, env, first, fix_mode, paths, extra = CASES[case]
    run(logdir, workdir, program(workdir), mode=mode, env=env)
    fs = findings(logdir)
    f = fs[0]
    assert f["id"] == first, [(x["id"], x["severity"], x["evidence"]["io_time_share"]) for x in fs]
    assert f["fix"]["mode"] == fix_mode
    assert f["paths"] == paths(workdir)
    if env is None:
        # (under mpirun the start-up can outweigh a short run's I/O, which lowers severities one level)
        assert f["severity"] in ("high", "medium")
    assert 0 < f["evidence"]["io_time_share"] <= 1
    assert f["evidence"]["counters"] and f["evidence"]["text"]
    st = f["fix"]["settings"]
    if fix_mode == "profile":
        # no mode to set: no policy, but something to do instead
        assert "policy" not in st and st["hints"]
    else:
        # a ready policy, command line and sluice.toml that `sluice run` accepts
        assert st["policy"] == [f"{p}={fix_mode}" for p in f["paths"]]
        assert st["command"].startswith("sluice run " + " ".join(f"--policy {p}={fix_mode}" for p in f["paths"]))
        assert tomllib.loads(st["toml"])["policy"] == {p: fix_mode for p in f["paths"]}
    if extra == "fpp-layout":
        assert f["fix"]["layout"] == [f"lfs setstripe -c 1 {workdir / 'md'}"]
        assert f["evidence"]["counters"]["files"] == 500
    if extra == "nofill":
        # netCDF fills before it writes: every byte written twice
        red = by_id(fs, "redundant-writes")
        assert any("NC_NOFILL" in h for h in red["fix"]["settings"]["hints"])
        assert red["evidence"]["counters"]["bytes_again"] >= 0.45 * red["evidence"]["counters"]["POSIX_BYTES_WRITTEN"]
        assert f["fix"]["layout"] == [f"lfs setstripe -c 1 {workdir / 'nc'}"]
        assert by_id(fs, "file-per-process")["severity"] in ("medium", "low")   # capped: the log shows no layout
    if extra == "stats":
        assert f["evidence"]["counters"]["POSIX_STATS"] == 1500 and f["evidence"]["io_time_share"] > 0.9
    if extra == "hdf5-alignment":
        # counted at run time against the file system's block size (any power of two from 64 bytes up
        # leaves only the write at offset 0 aligned)
        assert f["evidence"]["counters"]["POSIX_FILE_NOT_ALIGNED"] == 39
        assert any("H5Pset_alignment" in h for h in st["hints"])
    if extra == "mpi-hints":
        assert st["mpi_info"]["romio_cb_write"] == "enable"
        assert f["evidence"]["counters"]["MPIIO_INDEP_WRITES"] == 2000
        # the program's command line, launched on as many ranks
        assert st["command"].endswith("-- mpirun -np 4 " + " ".join(amr_ckpt(workdir)[len(MPIRUN):]))


def test_small_writes_evidence_and_gain(workdir, logdir):
    run(logdir, workdir, small_writes(workdir))
    f = findings(logdir)[0]
    c = f["evidence"]["counters"]
    assert c["POSIX_WRITES"] == 2000 and c["POSIX_SIZE_WRITE_0_100..100K_1M"] == 2000
    assert c["POSIX_CONSEC_WRITES"] == 1999 and c["POSIX_BYTES_WRITTEN"] == 2000 * 8192
    assert f["evidence"]["fix_in_effect"] is False
    # the request size, as the run counted it (POSIX_ACCESS1..4)
    assert f["evidence"]["text"].endswith("; most common sizes 8.0 KiB x 2,000")
    g = f["expected_gain"]
    # 2,000 writes become 4 units of 4 MiB: 1,996 calls x the measured time per call
    assert "1,996 write calls saved" in g["how"] and "4 MiB" in g["how"]
    assert 0 < g["seconds"] <= c["POSIX_F_WRITE_TIME"]
    assert g["share_of_io_time"] == pytest.approx(g["seconds"] / (f["evidence"]["io_time_s"] /
                                                                  f["evidence"]["io_time_share"]))


def test_large_sequential_writes_have_nothing_to_gain(workdir, logdir):
    run(logdir, workdir, large_sequential(workdir))
    fs = findings(logdir)
    assert [f["id"] for f in fs] == ["nothing-to-gain"]
    f = fs[0]
    assert f["severity"] == "low" and f["fix"]["mode"] == "profile" and f["expected_gain"] is None
    assert f["paths"] == [str(workdir)] and "policy" not in f["fix"]["settings"]
    out = sluice("advise", str(logdir)).stdout
    assert "[high]" not in out and "no mode to change" in out


@pytest.mark.parametrize("mode,fid", [("buffer", "small-writes"), ("stage", "file-per-process-small-files")])
def test_fix_already_in_effect(mode, fid, workdir, logdir):
    """Run with the mode advise asks for: the finding stays, low, and says the fix works (both sides of the counters)."""
    # a tier of its own: what other runs leave on the node's default tier is not this run's
    env = {"SLUICE_TIER": str(workdir.parent / "tier")} if mode == "stage" else None
    run(logdir, workdir, (small_writes if mode == "buffer" else create_once)(workdir), mode=mode, env=env)
    f = by_id(findings(logdir), fid)
    assert f["severity"] == "low" and f["evidence"]["fix_in_effect"] is True, f["evidence"]
    assert "already in effect" in f["evidence"]["text"] or "in effect" in f["evidence"]["text"]
    assert f["expected_gain"] is None and "policy" not in f["fix"]["settings"]
    out = sluice("advise", str(logdir)).stdout
    assert "(already in effect)" in out and "no mode to add" in out


def test_json_shape_and_order(workdir, logdir):
    """Several findings at once: exactly the documented keys, most costly first."""
    d1, d2 = workdir / "a", workdir / "b"
    d1.mkdir()
    d2.mkdir()
    ops = [f"creat:{d1}/log"] + ["write:100"] * 3000 + ["close"]
    for i in range(150):
        ops += [f"creat:{d2}/f{i}", "write:2048", "close"]
    run(logdir, workdir, [bin_path("sluice-io"), *ops])
    doc = json.loads(sluice("advise", "--json", str(logdir)).stdout)
    assert list(doc) == ["findings", "auto", "prediction"]   # (a profile-mode run: sluice predict's numbers)
    # the prediction is predict's: the 3,000 writes of 100 B to log and the
    # 150 files of 2 KiB, buffered, leave one write per file
    pred = doc["prediction"]["modes"]
    assert pred["profile"]["fs"]["POSIX_WRITES"] == 3150 and pred["buffer"]["fs"]["POSIX_WRITES"] == 151
    fs = doc["findings"]
    assert {f["id"] for f in fs} >= {"small-writes", "file-per-process-small-files"}
    for f in fs:
        assert list(f) == ["id", "severity", "paths", "evidence", "fix", "expected_gain"]
        assert list(f["fix"]) == ["mode", "layout", "settings"]
        assert f["id"] in IDS and f["severity"] in SEVERITY
        assert f["fix"]["mode"] in ("profile", "buffer", "stage", "acb")
        assert isinstance(f["paths"], list) and all(p.startswith("/") for p in f["paths"])
        base = ["seconds", "share_of_io_time", "how", "file_system", "per_call_s"]
        assert f["expected_gain"] is None or list(f["expected_gain"]) in (base, base + ["calls_before", "calls_after"])
    keys = [(SEVERITY[f["severity"]], f["id"] in ("file-per-process", "large-shared-file", "rank-imbalance"),
             -f["evidence"]["io_time_s"]) for f in fs if f["id"] != "nothing-to-gain"]
    assert keys == sorted(keys)
    assert by_id(fs, "small-writes")["paths"] == [str(d1)]
    assert by_id(fs, "file-per-process-small-files")["paths"] == [str(d2)]
    # the same job read twice gives the same advice
    again = json.loads(sluice("advise", "--json", str(logdir)).stdout)
    assert [(f["id"], f["paths"]) for f in again["findings"]] == [(f["id"], f["paths"]) for f in fs]
    # the text names both prefixes in one policy for the whole job
    out = sluice("advise", str(logdir)).stdout
    assert f"--policy {d1}=buffer" in out and f"--policy {d2}=stage" in out
    # small writes (buffer) and new small files (stage): what --mode auto chooses per file, so one
    # setting does both; the files are on this node's own file system, where auto acts only when told
    assert doc["auto"] == f"sluice run --mode auto --auto-local -- {bin_path('sluice-io')} ..."  # long: cut
    assert doc["auto"] in out and "Or, naming no paths: --mode auto" in out
    # with a calibrated profile that has auto's figures, the line hands it on (auto's first-write size by it)
    fs = REPO / "bench/results/calibrate-testbed-delay0us-f9684a1.json"
    with_fs = json.loads(sluice("advise", "--json", "--fs", str(fs), str(logdir)).stdout)
    assert with_fs["auto"] == f"sluice run --mode auto --auto-local --fs {fs} -- {bin_path('sluice-io')} ..."
    older = REPO / "bench/results/calibrate-testbed-delay0us-5a82684.json"   # (made before them: no --fs)
    assert json.loads(sluice("advise", "--json", "--fs", str(older), str(logdir)).stdout)["auto"] == doc["auto"]


def test_no_auto_line_where_auto_would_not_apply_the_fix(workdir, logdir):
    """A file reopened 150 times: stage mode serves the reopens, but auto buffers a file that exists when
    it is opened, so advise does not offer --mode auto in place of the policy."""
    run(logdir, workdir, many_opens(workdir))
    doc = json.loads(sluice("advise", "--json", str(logdir)).stdout)
    assert doc["findings"][0]["id"] == "many-opens-one-file" and doc["auto"] is None
    assert "--mode auto" not in sluice("advise", str(logdir)).stdout


# --------------------------------------------------------------------------
# a cheap finding never hides a costlier one


# 4 processes, each with a file of its own: 20,000 appends of 64 B and 4,000 random preads of 100 B, in
# 500 opens of the file (40 writes and 8 reads per open).
PITFALL = """
import os, random, sys

def member(d, i):
    rng, path, size = random.Random(i), f"{d}/rank{i}.dat", 0
    os.close(os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644))
    for _ in range(500):
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
        for _ in range(40):
            os.write(fd, b"x" * 64)
        size += 40 * 64
        for _ in range(8):
            os.pread(fd, 100, rng.randrange(size - 100))
        os.close(fd)

children = []
for i in (1, 2, 3):
    pid = os.fork()
    if pid == 0:
        member(sys.argv[1], i)
        os._exit(0)
    children.append(pid)
member(sys.argv[1], 0)
for pid in children:
    os.waitpid(pid, 0)
"""
PITFALL_FINDINGS = {"small-writes", "random-reads", "many-opens-one-file", "file-per-process"}


def mount_point(path: Path) -> tuple[str, str]:
    """(point, type) of the mount holding `path`, from /proc/self/mountinfo, as a log names it."""
    best = ("", "")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point, fstype = fields[4], fields[fields.index("-") + 1]
        if (str(path) + "/").startswith(point.rstrip("/") + "/") and len(point) >= len(best[0]):
            best = (point, fstype)
    return best


def assert_ranked(fs: list[dict]) -> None:
    """Most costly first: by severity, then those the counters can prove, then by I/O time."""
    keys = [(SEVERITY[f["severity"]], f["id"] in ("file-per-process", "large-shared-file", "rank-imbalance"),
             -f["evidence"]["io_time_s"]) for f in fs if f["id"] != "nothing-to-gain"]
    assert keys == sorted(keys)


def test_a_cheap_finding_never_hides_a_costlier_one(workdir, logdir, tmp_path):
    """The reopened files carry three findings: the opens (once the only one, at a few % of the I/O time),
    and the small writes and random reads, which cost more; each is reported, with its own counters, on
    the sluice logs and on their Darshan export."""
    script = tmp_path / "pitfall.py"
    script.write_text(PITFALL)
    run(logdir, workdir, [sys.executable, str(script), str(workdir)])
    fs = findings(logdir)
    assert {f["id"] for f in fs} == PITFALL_FINDINGS
    assert_ranked(fs)
    writes, reads, opens = by_id(fs, "small-writes"), by_id(fs, "random-reads"), by_id(fs, "many-opens-one-file")
    assert writes["evidence"]["counters"]["POSIX_WRITES"] == 80_000
    assert reads["evidence"]["counters"]["POSIX_READS"] == 16_000
    assert opens["evidence"]["counters"]["POSIX_OPENS"] == 2_004
    assert writes["evidence"]["io_time_s"] > opens["evidence"]["io_time_s"]
    assert [f["paths"] for f in (writes, reads, opens)] == [[str(workdir)]] * 3
    # buffer mode coalesces the 40 appends of each open: one write per open is left
    assert "80,000 -> about 2,004" in writes["expected_gain"]["how"]
    # the gains say the file system they were measured on
    point, fstype = mount_point(workdir)
    assert writes["expected_gain"]["file_system"] == {"mount": point, "type": fstype,
                                                      "local": fstype in LOCAL_FS_TYPES}
    assert f"measured on {fstype} ({point})" in writes["expected_gain"]["how"]
    # the whole job's policy takes the mode of the costliest finding
    assert f"--policy {workdir}=buffer" in sluice("advise", str(logdir)).stdout
    # the same job from its Darshan export (which numbers the processes as ranks: a straggler among them
    # is a matter of timing)
    out = tmp_path / "darshan"
    sluice("export", "--darshan", str(logdir), "-o", str(out))
    (app,) = [p for p in out.glob("*.darshan") if not p.name.endswith(".fs.darshan")]
    theirs = [f for f in findings(app) if f["id"] != "rank-imbalance"]
    assert {f["id"] for f in theirs} == PITFALL_FINDINGS
    assert [by_id(theirs, i)["evidence"]["counters"] for i in ("small-writes", "random-reads")] == \
        [writes["evidence"]["counters"], reads["evidence"]["counters"]]


def test_folding_takes_only_from_a_cheaper_finding():
    """120 small files (stage's case) and a parameter file stat'ed 2,000 times: metadata-heavy over both
    holds the small files' metadata time too; where the small files cost more it is folded into
    file-per-process-small-files, where it costs more it stays, whole."""
    def job(stat_time: float):
        recs = [rec(f"/lus/run/out.{i:03d}", POSIX_OPENS=2, POSIX_STATS=8, POSIX_WRITES=1, POSIX_BYTES_WRITTEN=4096,
                    POSIX_SIZE_WRITE_1K_10K=1, POSIX_MAX_BYTE_WRITTEN=4095, POSIX_F_META_TIME=0.01,
                    POSIX_F_WRITE_TIME=0.001) for i in range(120)]
        recs.append(rec("/lus/in/params.nml", POSIX_STATS=2000, POSIX_F_META_TIME=stat_time))
        return to_json(merge("j", [log(7, recs, seconds=5)]))["findings"]
    assert [f["id"] for f in job(0.1)] == ["file-per-process-small-files"]
    fs = job(0.5)
    assert [f["id"] for f in fs] == ["metadata-heavy", "file-per-process-small-files"]
    # the files holding 95 % of the metadata time: the parameter file and 112 of the small files
    assert by_id(fs, "metadata-heavy")["evidence"]["files"] == 113


def test_rule_table_is_checked_at_import():
    """One pass of folding settles every overlap only while no folded rule folds another: the table is
    refused otherwise."""
    from sluice.advise.rules import RULES, Rule, _validate
    _validate(RULES)
    bad = tuple(Rule(r.id, r.check, ("random-reads",) if r.id == "metadata-heavy" else r.folds, r.residual)
                for r in RULES)
    with pytest.raises(ValueError, match="metadata-heavy is folded and folds"):
        _validate(bad)


# --------------------------------------------------------------------------
# the mode the run had


def o_sync_writes(w: Path) -> list[str]:
    return [bin_path("sluice-io"), f"open:{w}/out.dat:w,creat,trunc,sync"] + ["write:8192"] * 2000 + ["close"]


@pytest.mark.parametrize("how", ["mode", "policy"])
def test_a_mode_in_effect_that_did_not_act_is_not_advised_again(how, workdir, logdir):
    """Small writes to a file opened O_SYNC, under buffer mode (--mode, or --policy naming the
    directory): buffer mode goes straight through; advise says so, and why, instead of asking for it."""
    opts = ["--mode", "buffer"] if how == "mode" else ["--policy", f"{workdir}=buffer"]
    sluice("run", "-q", *opts, "--log-dir", str(logdir), "--path", str(workdir), "--", *o_sync_writes(workdir))
    f = findings(logdir)[0]
    assert f["id"] == "small-writes" and f["fix"]["mode"] == "buffer"
    ev = f["evidence"]
    assert ev["modes_in_effect"] == ["buffer"] and ev["mode_did_not_act"] == 1 and ev["fix_in_effect"] is False
    assert ev["fallbacks"] == {"POSIX_FALLBACK_DIRECT": 1} and ev["counters"]["fs_POSIX_WRITES"] == 2000
    assert ("buffer mode was in effect for these files but did not act: opened with O_DIRECT, O_SYNC or "
            "O_DSYNC, whose calls must each reach the device (POSIX_FALLBACK_DIRECT: 1)") in ev["text"]
    assert "policy" not in f["fix"]["settings"] and f["expected_gain"] is None
    assert f["fix"]["settings"]["hints"][0].startswith("open without O_SYNC")
    out = sluice("advise", str(logdir)).stdout
    assert "mode: buffer (in effect, did not act)" in out and "--policy" not in out
    assert "no mode to add; the modes this run had for the files of small-writes did not act" in out


def test_a_mode_given_to_other_files_is_still_advised(workdir, logdir):
    """--policy naming another directory leaves these files in profile mode: buffer is advised."""
    other = workdir.parent / "elsewhere"
    sluice("run", "-q", "--policy", f"{other}=buffer", "--log-dir", str(logdir), "--path", str(workdir), "--",
           *small_writes(workdir))
    f = findings(logdir)[0]
    assert f["id"] == "small-writes" and f["evidence"]["modes_in_effect"] == ["profile"]
    assert f["evidence"]["mode_did_not_act"] == 0 and f["fix"]["settings"]["policy"] == [f"{workdir}=buffer"]


def redirected_dd(mode: str, policy: str | None) -> Job:
    """`sh -c 'dd bs=8k count=2000 > /lus/run/F'`: dd writes to the descriptor the shell opened, shared
    with a stream, which buffer mode leaves alone (POSIX_FALLBACK_SHARED)."""
    c = dict(POSIX_OPENS=1, POSIX_DUPS=1, POSIX_WRITES=2000, POSIX_BYTES_WRITTEN=2000 * 8 * KIB,
             POSIX_SIZE_WRITE_1K_10K=2000, POSIX_CONSEC_WRITES=1999, POSIX_MAX_BYTE_WRITTEN=2000 * 8 * KIB - 1,
             POSIX_F_WRITE_TIME=2.41, POSIX_FALLBACKS=1, POSIX_FALLBACK_SHARED=1)
    lg = log(1, [rec("/lus/run/F", **c)], seconds=3)
    lg.info["mode"] = mode
    if policy is not None:
        lg.info["policy"] = policy
    return merge("j", [lg])


def test_policy_longest_prefix_decides_the_files_mode():
    """The policy as the library reads it: the longest matching prefix, else the process's mode; a log
    without the key is its mode alone."""
    for mode, policy, had in [("buffer", None, True), ("profile", "/lus=buffer", True),
                              ("profile", "/lus=buffer,/lus/run=stage", False), ("buffer", "/lus/run=profile", False),
                              ("profile", "/lus/ru=buffer", False), ("profile", "run=buffer", False)]:
        f = by_id(to_json(redirected_dd(mode, policy))["findings"], "small-writes")
        assert (f["evidence"]["mode_did_not_act"] == 1) is had, (mode, policy)
        assert ("policy" in f["fix"]["settings"]) is not had


def test_redirected_output_under_buffer_mode_says_why():
    """dd under --mode buffer: once advised `--policy /lus/run=buffer`, "expected gain up to 2.41 s", the
    mode already in effect; now the reason it did not act and what to change."""
    f = by_id(to_json(redirected_dd("buffer", ""))["findings"], "small-writes")
    assert "policy" not in f["fix"]["settings"] and f["expected_gain"] is None
    assert f["evidence"]["fallbacks"] == {"POSIX_FALLBACK_SHARED": 1}
    assert "a descriptor shared with a forked process or a stdio stream goes straight through" in \
        f["evidence"]["text"]
    assert f["fix"]["settings"]["hints"][0] == ("open the file in the process that writes it, after any fork, "
                                                "and in the program rather than by the shell (`cmd > file`, which "
                                                "buffer mode takes over, or the program's own output option)")


def test_dd_redirected_under_buffer_mode(workdir, logdir):
    """The same with the real shell and dd: the writes reach the file
    through the shell's descriptor, which buffer mode takes over as the
    program's own: the fix is in effect."""
    run(logdir, workdir, ["sh", "-c", f"dd if=/dev/zero bs=8k count=2000 > {workdir}/F 2>/dev/null"], mode="buffer")
    f = findings(logdir)[0]
    assert f["id"] == "small-writes" and f["evidence"]["counters"]["POSIX_WRITES"] == 2000
    assert f["severity"] == "low" and f["evidence"]["fix_in_effect"] is True
    assert f["evidence"]["modes_in_effect"] == ["buffer"] and f["evidence"]["mode_did_not_act"] == 0
    assert f["evidence"]["fallbacks"] == {}
    assert "policy" not in f["fix"]["settings"] and f["expected_gain"] is None


def test_dd_appending_under_buffer_mode_says_the_mode_did_not_act(workdir, logdir):
    """`>>`: another writer's appends would land before buffered bytes, so
    buffer mode leaves the shell's descriptor alone, and advise says so."""
    (workdir / "F").write_bytes(b"")
    run(logdir, workdir, ["sh", "-c", f"dd if=/dev/zero bs=8k count=2000 >> {workdir}/F 2>/dev/null"], mode="buffer")
    f = findings(logdir)[0]
    assert f["id"] == "small-writes" and f["evidence"]["counters"]["POSIX_WRITES"] == 2000
    assert f["evidence"]["modes_in_effect"] == ["buffer"] and f["evidence"]["mode_did_not_act"] == 1
    assert list(f["evidence"]["fallbacks"]) == ["POSIX_FALLBACK_SHARED"]
    assert "policy" not in f["fix"]["settings"] and f["expected_gain"] is None


def test_gain_names_a_parallel_file_system():
    """Measured on Lustre: the gain holds there, and says so."""
    lg = redirected_dd("profile", None).logs[0]
    lg.info["mounts"] = "ext4\t/\nlustre\t/lus\n"
    f = by_id(to_json(merge("j", [lg]))["findings"], "small-writes")
    g = f["expected_gain"]
    assert g["file_system"] == {"mount": "/lus", "type": "lustre", "local": False}
    assert g["how"].endswith("; measured on lustre (/lus), where the files are")
    assert g["per_call_s"] == pytest.approx(2.41 / 2000)


# --------------------------------------------------------------------------
# nothing-to-gain only where no mode cuts the calls


def test_few_small_writes_are_not_nothing_to_gain(workdir, logdir, tmp_path):
    """300 appends of 512 B: fewer than Drishti's 1,000, cheap on a local disk; buffer mode still cuts them
    to one write, and applying the advised policy does."""
    prog = [bin_path("sluice-io"), f"creat:{workdir}/log.txt"] + ["write:512"] * 300 + ["close"]
    run(logdir, workdir, prog)
    fs = findings(logdir)
    assert [f["id"] for f in fs] == ["few-small-requests"]
    f = fs[0]
    assert f["fix"]["settings"]["policy"] == [f"{workdir}=buffer"]
    assert f["evidence"]["counters"]["small_writes"] == 300 and f["evidence"]["counters"]["calls_left"] == 1
    assert "299 read and write calls saved (300 -> about 1" in f["expected_gain"]["how"]
    again = tmp_path / "again"
    sluice("run", "-q", "--policy", f"{workdir}=buffer", "--log-dir", str(again), "--path", str(workdir), "--",
           *prog)
    f = findings(again)[0]
    assert f["id"] == "few-small-requests" and f["evidence"]["fix_in_effect"] is True
    assert f["evidence"]["counters"]["fs_calls"] == 1 and "policy" not in f["fix"]["settings"]


def test_text_output(workdir, logdir):
    run(logdir, workdir, small_writes(workdir))
    out = sluice("advise", str(logdir)).stdout
    assert out.startswith("sluice advise: job ")
    assert "1. small-writes [" in out
    assert f"sluice run --policy {workdir}=buffer -- " in out
    assert f'"{workdir}" = "buffer"' in out
    assert "expected gain: up to" in out


def test_html_report_has_an_advice_section(workdir, logdir, tmp_path):
    run(logdir, workdir, small_writes(workdir))
    page = tmp_path / "r.html"
    sluice("report", "--html", str(page), str(logdir))
    text = page.read_text()
    section = text.split('<section id="advice">', 1)[1].split("</section>", 1)[0]
    assert '<tr data-finding="small-writes">' in section
    assert f"--policy {workdir}=buffer" in section
    assert "https:" not in section and "<script" not in section


@pytest.mark.parametrize("damage", ["truncate", "not_a_log"])
def test_corrupt_log_is_the_reports_error(damage, workdir, logdir):
    run(logdir, workdir, [bin_path("sluice-io"), f"creat:{workdir}/f", "write:100", "close"])
    (log,) = logdir.glob("*.sluice")
    data = log.read_bytes()
    log.write_bytes(data[:-7] if damage == "truncate" else b"no log at all" * 10)
    rep = sluice("report", str(log), check=False)
    adv = sluice("advise", str(log), check=False)
    assert adv.returncode == rep.returncode == 1
    assert adv.stderr == rep.stderr and adv.stderr.count("\n") == 1
    assert adv.stderr.startswith("sluice: error: ") and str(log) in adv.stderr


def test_missing_and_empty_inputs(tmp_path):
    for arg in (tmp_path / "nothing", tmp_path):
        rep, adv = sluice("report", str(arg), check=False), sluice("advise", str(arg), check=False)
        assert adv.returncode == rep.returncode == 1 and adv.stderr == rep.stderr


def test_listed_in_help():
    out = sluice("--help").stdout
    assert "advise" in out and out.index("report") < out.index("advise")


# --------------------------------------------------------------------------
# prefixes


@pytest.mark.parametrize("paths,others,want", [
    (["/s/run/a.dat"], [], ["/s/run"]),
    (["/s/run/a.dat"], ["/s/run/b.dat"], ["/s/run/a.dat"]),
    ([f"/s/run/p{r}/f{i}" for r in range(2) for i in range(20)], ["/s/in/x"], ["/s/run"]),
    ([f"/s/run/p{r}/f{i}" for r in range(2) for i in range(20)], ["/s/run/log"], ["/s/run/p0", "/s/run/p1"]),
    ([f"/s/{d}/x" for d in "abcdefghijklmnopqrst"], ["/s/keep"], ["/s"]),     # more than 16: merged regardless
    ([f"/s/{d}/x" for d in "abc"], ["/s/keep"], ["/s/a", "/s/b", "/s/c"]),
    (["/s/run/a", "/s/run/b"], ["/s/run/sub/x"], ["/s/run/a", "/s/run/b"]),
    (["<other files>"], [], []),
])
def test_group_paths(paths, others, want):
    assert group_paths(paths, others) == want


# --------------------------------------------------------------------------
# shapes made in memory


POSIX_ZERO = {"POSIX_MAX_BYTE_READ": -1, "POSIX_MAX_BYTE_WRITTEN": -1}


def rec(path: str, module: str = "POSIX", **c) -> Record:
    base = dict(POSIX_ZERO) if module == "POSIX" else {f"{module}_MAX_BYTE_READ": -1,
                                                        f"{module}_MAX_BYTE_WRITTEN": -1}
    base.update(c)
    return Record(module, hash(path) & 0xFFFF, path, 0, dict(base), dict(base))


def log(pid: int, records: list[Record], rank: int = -1, nprocs: int = -1, seconds: float = 10.0,
        host: str = "n1") -> Log:
    start = 1_700_000_000 * 10 ** 9
    return Log(Path(f"/logs/{pid}.sluice"), (1, 0), 0, pid, 1, rank, nprocs, start, start + int(seconds * 1e9),
               "exit", {"job_id": "j", "host": host, "exe": "/bin/sim", "cmdline": "/bin/sim in.nml",
                        "mode": "profile"}, {}, records)


def shared_big(rank: int) -> list[Record]:
    n = 256
    return [rec("/lus/out/big.dat", POSIX_OPENS=1, POSIX_WRITES=n, POSIX_BYTES_WRITTEN=n * 4 * MIB,
                POSIX_CONSEC_WRITES=n - 1, POSIX_SEQ_WRITES=n - 1, POSIX_SIZE_WRITE_1M_4M=n,
                POSIX_MAX_BYTE_WRITTEN=4 * GIB - 1, POSIX_F_WRITE_TIME=2.0 + rank * 0.01)]


def test_large_shared_file_gets_stripes():
    job = merge("j", [log(100 + r, shared_big(r), r, 4) for r in range(4)])
    f = by_id(to_json(job)["findings"], "large-shared-file")
    assert f["paths"] == ["/lus/out"] and f["severity"] == "medium"      # capped: the log shows no layout
    assert f["fix"]["layout"] == ["lfs setstripe -c 4 -S 4M /lus/out"]
    assert f["fix"]["mode"] == "profile"


def test_layouts_in_the_log_shape_the_layout_findings():
    """Where the log has each file's layout (CephFS, Lustre), the layout
    findings say what it is, are not capped, and are left out when it is
    already the one advised; CephFS files get setfattr commands."""
    def with_layout(records, count, size, obj=0):
        for r in records:
            for side in (r.app, r.fs):
                side.update(POSIX_STRIPE_COUNT=count, POSIX_STRIPE_SIZE=size, POSIX_OBJECT_SIZE=obj,
                            POSIX_LAYOUT_COMPONENTS=1)
        return records
    # a large shared file on one stripe of 1 MiB: 4 stripes of 4 MiB advised
    job = merge("j", [log(100 + r, with_layout(shared_big(r), 1, MIB), r, 4) for r in range(4)])
    f = by_id(to_json(job)["findings"], "large-shared-file")
    assert "Their layout, as the file system gave it: 1 stripe of 1.0 MiB (1)" in f["evidence"]["text"]
    assert f["evidence"]["counters"]["stripe_counts"] == [1]
    assert f["fix"]["layout"] == ["lfs setstripe -c 4 -S 4M /lus/out"]
    # on CephFS (an object size), the same advice as its directory layout attributes
    job = merge("j", [log(100 + r, with_layout(shared_big(r), 1, 4 * MIB, 4 * MIB), r, 4) for r in range(4)])
    f = by_id(to_json(job)["findings"], "large-shared-file")
    assert f["fix"]["layout"] == ["setfattr -n ceph.dir.layout.stripe_count -v 4 /lus/out && "
                                  "setfattr -n ceph.dir.layout.stripe_unit -v 4194304 /lus/out"]
    # already 4 stripes of 4 MiB (or all OSTs): nothing to advise
    for count in (4, 8, -1):
        job = merge("j", [log(100 + r, with_layout(shared_big(r), count, 4 * MIB), r, 4) for r in range(4)])
        assert "large-shared-file" not in {x["id"] for x in to_json(job)["findings"]}, count

    # file per process: 4 ranks, a 64 MiB file each
    def fpp(rank, count):
        return with_layout([rec(f"/lus/run/out.{rank}", POSIX_OPENS=1, POSIX_WRITES=64, POSIX_BYTES_WRITTEN=64 * MIB,
                                POSIX_SIZE_WRITE_1M_4M=64, POSIX_CONSEC_WRITES=63, POSIX_SEQ_WRITES=63,
                                POSIX_MAX_BYTE_WRITTEN=64 * MIB - 1, POSIX_F_WRITE_TIME=3.0)], count, MIB)
    fs = to_json(merge("j", [log(100 + r, fpp(r, 4), r, 4) for r in range(4)]))["findings"]
    f = by_id(fs, "file-per-process")
    assert "Their layout, as the file system gave it: 4 stripes of 1.0 MiB (4 files)" in f["evidence"]["text"]
    assert f["fix"]["layout"] == ["lfs setstripe -c 1 /lus/run"]
    fs = to_json(merge("j", [log(100 + r, fpp(r, 1), r, 4) for r in range(4)]))["findings"]
    assert "file-per-process" not in {x["id"] for x in fs}


def test_large_shared_file_stripe_size_follows_the_common_request():
    """256 writes of 4 MiB and 200 of 100 bytes: the mean (2.3 MiB) would give 2 MiB stripes; the size most
    requests use gives 4 MiB."""
    def recs(rank):
        r = shared_big(rank)[0]
        r.app.update(POSIX_WRITES=456, POSIX_BYTES_WRITTEN=256 * 4 * MIB + 200 * 100, POSIX_SIZE_WRITE_0_100=200,
                     POSIX_ACCESS1_ACCESS=4 * MIB, POSIX_ACCESS1_COUNT=256, POSIX_ACCESS2_ACCESS=100,
                     POSIX_ACCESS2_COUNT=200, POSIX_ACCESS3_ACCESS=0, POSIX_ACCESS3_COUNT=0, POSIX_ACCESS4_ACCESS=0,
                     POSIX_ACCESS4_COUNT=0)
        return [r]
    f = by_id(to_json(merge("j", [log(100 + r, recs(r), r, 4) for r in range(4)]))["findings"], "large-shared-file")
    assert f["fix"]["layout"] == ["lfs setstripe -c 4 -S 4M /lus/out"]
    assert f["evidence"]["counters"]["common_sizes"] == [[4 * MIB, 1024], [100, 800]]
    assert "most common sizes 4.0 MiB x 1,024, 100 B x 800" in f["evidence"]["text"]


def test_straggler_rank():
    logs = [log(100 + r, [rec(f"/lus/out/r{r}", POSIX_OPENS=1, POSIX_WRITES=10, POSIX_BYTES_WRITTEN=10 * 8 * MIB,
                               POSIX_SIZE_WRITE_4M_10M=10, POSIX_CONSEC_WRITES=9, POSIX_MAX_BYTE_WRITTEN=80 * MIB - 1,
                               POSIX_F_WRITE_TIME=8.0 if r == 3 else 1.0)], r, 4) for r in range(4)]
    fs = to_json(merge("j", logs))["findings"]
    f = by_id(fs, "rank-imbalance")
    c = f["evidence"]["counters"]
    assert c["slowest_rank"] == 3 and c["slowest_io_time"] == 8.0 and c["mean_io_time"] == pytest.approx(2.75)
    # the I/O phase would end 8 - 2.75 s sooner with every rank at the mean
    assert f["expected_gain"]["seconds"] == pytest.approx(5.25)
    assert f["evidence"]["io_time_s"] == pytest.approx(5.25)
    assert f["paths"] == ["/lus/out/r3"]
    # every rank moved the same bytes: contention, not the data's distribution; the severity stays below high
    assert "contention" in f["evidence"]["text"] and f["severity"] == "medium"


def test_metadata_time_per_process_over_drishtis_30_s():
    recs = [rec(f"/lus/in/p{i}", POSIX_OPENS=5, POSIX_STATS=20, POSIX_F_META_TIME=0.5,
                POSIX_READS=1, POSIX_BYTES_READ=100, POSIX_MAX_BYTE_READ=99, POSIX_F_READ_TIME=0.001)
            for i in range(80)]
    fs = to_json(merge("j", [log(7, recs, seconds=100)]))["findings"]
    f = fs[0]
    assert f["id"] == "metadata-heavy" and f["severity"] == "high"
    assert f["evidence"]["counters"]["processes_over_30s"] == 1
    assert f["fix"]["mode"] == "profile"      # files the program only reads: no mode keeps their metadata off
    assert "30 s" in f["evidence"]["text"]


def test_independent_mpiio_on_a_shared_file():
    def ranks(r):
        n = 400
        return [rec("/lus/ck/shared.h5", "MPIIO", MPIIO_COLL_OPENS=1, MPIIO_INDEP_WRITES=n,
                    MPIIO_BYTES_WRITTEN=n * 2 * MIB, MPIIO_SIZE_WRITE_1M_4M=n, MPIIO_F_WRITE_TIME=3.0,
                    MPIIO_MAX_BYTE_WRITTEN=1600 * MIB - 1),
                rec("/lus/ck/shared.h5", POSIX_OPENS=1, POSIX_WRITES=n, POSIX_BYTES_WRITTEN=n * 2 * MIB,
                    POSIX_SIZE_WRITE_1M_4M=n, POSIX_F_WRITE_TIME=2.9, POSIX_MAX_BYTE_WRITTEN=1600 * MIB - 1)]
    job = merge("j", [log(100 + r, ranks(r), r, 4, host=f"n{r // 2}") for r in range(4)])
    fs = to_json(job)["findings"]
    f = by_id(fs, "no-collective-mpiio")
    assert f["fix"]["mode"] == "acb" and f["paths"] == ["/lus/ck"]
    assert f["fix"]["settings"]["mpi_info"]["cb_nodes"] == "2"
    assert f["evidence"]["counters"]["MPIIO_INDEP_WRITES"] == 1600
    # 1.6 GiB shared by 4 ranks: layout advice too, with MPI-IO striping hints
    big = by_id(fs, "large-shared-file")
    assert big["fix"]["settings"]["mpi_info"]["striping_factor"] == "4"


def test_empty_job_has_no_findings():
    job = merge("j", [log(1, [])])
    assert advise(job) == [] and to_json(job) == {"findings": [], "auto": None}


@pytest.mark.parametrize("fs_writes,in_effect,severity", [(2000, False, "high"), (1400, True, "high"),
                                                          (8, True, "low")])
def test_fix_in_effect_from_both_sides(fs_writes, in_effect, severity):
    """The fs side of the counters says whether a mode already acts on the file, and how well."""
    c = dict(POSIX_OPENS=1, POSIX_WRITES=2000, POSIX_BYTES_WRITTEN=2000 * 8 * KIB, POSIX_SIZE_WRITE_1K_10K=2000,
             POSIX_CONSEC_WRITES=1999, POSIX_MAX_BYTE_WRITTEN=2000 * 8 * KIB - 1, POSIX_F_WRITE_TIME=1.0)
    r = rec("/lus/run/out.dat", **c)
    r.fs.update(POSIX_WRITES=fs_writes, POSIX_SIZE_WRITE_1K_10K=min(fs_writes, 2000))
    f = by_id(to_json(merge("j", [log(1, [r], seconds=2)]))["findings"], "small-writes")
    assert f["evidence"]["fix_in_effect"] is in_effect and f["severity"] == severity
    assert f["evidence"]["counters"]["fs_POSIX_WRITES"] == fs_writes
    # a policy line only where no mode acts yet
    assert ("policy" in f["fix"]["settings"]) is (not in_effect)
    if fs_writes == 1400:
        assert "only 1.4 times fewer" in f["evidence"]["text"]


def aligned_writes(not_aligned: int, alignment: int, **extra) -> Record:
    n, size = 200, 1536 * KIB
    return rec("/lus/out/field.dat", POSIX_OPENS=1, POSIX_WRITES=n, POSIX_BYTES_WRITTEN=n * size,
               POSIX_SIZE_WRITE_1M_4M=n, POSIX_CONSEC_WRITES=n - 1, POSIX_SEQ_WRITES=n - 1,
               POSIX_MAX_BYTE_WRITTEN=n * size - 1, POSIX_F_WRITE_TIME=4.0,
               POSIX_FILE_ALIGNMENT=alignment, POSIX_FILE_NOT_ALIGNED=not_aligned, **extra)


def test_misalignment_counted_by_the_log_is_the_evidence():
    """Writes of 1.5 MiB from offset 0: where the log counted requests off the file's alignment
    (Darshan's POSIX_FILE_NOT_ALIGNED, st_blksize at open), that count decides, not the inference."""
    f = by_id(to_json(merge("j", [log(1, [aligned_writes(100, MIB)], seconds=5)]))["findings"], "misaligned")
    c = f["evidence"]["counters"]
    assert c["POSIX_FILE_NOT_ALIGNED"] == 100 and c["POSIX_READS+WRITES"] == 200
    assert c["POSIX_FILE_ALIGNMENT"] == MIB
    assert f["fix"]["mode"] == "buffer" and f["paths"] == ["/lus/out"]
    assert "(50 %) start off the file system's 1.0 MiB alignment" in f["evidence"]["text"]
    # the same writes on a file system whose alignment (4 KiB) they keep: nothing to flag
    fs = to_json(merge("j", [log(1, [aligned_writes(0, 4 * KIB)], seconds=5)]))["findings"]
    assert "misaligned" not in [x["id"] for x in fs]


def test_misaligned_mpiio_file_gets_alignment_hints_not_a_mode():
    r = aligned_writes(150, MIB, MPIIO_COLL_OPENS=0)
    m = rec("/lus/out/field.dat", "MPIIO", MPIIO_COLL_OPENS=1, MPIIO_COLL_WRITES=200,
            MPIIO_BYTES_WRITTEN=200 * 1536 * KIB, MPIIO_SIZE_WRITE_1M_4M=200, MPIIO_F_WRITE_TIME=4.1)
    f = by_id(to_json(merge("j", [log(1, [r, m], seconds=5)]))["findings"], "misaligned")
    assert f["fix"]["mode"] == "profile"
    assert f["fix"]["settings"]["mpi_info"] == {"striping_unit": str(MIB)}


def test_a_darshan_record_reduced_over_ranks_stands_for_every_rank():
    """Darshan keeps one record (rank -1) for a file all ranks shared: the checks count its ranks, so
    16 ranks' small independent writes to one HDF5 file are small-mpiio-writes (as Drishti's P06/P16)."""
    n = 7700
    shared = [rec("/scratch/macsio.h5", "MPIIO", MPIIO_COLL_OPENS=16, MPIIO_INDEP_WRITES=n, MPIIO_COLL_WRITES=64,
                  MPIIO_BYTES_WRITTEN=n * 700, MPIIO_SIZE_WRITE_100_1K=n + 64, MPIIO_F_WRITE_TIME=3.0),
              rec("/scratch/macsio.h5", POSIX_OPENS=16, POSIX_WRITES=n, POSIX_BYTES_WRITTEN=n * 700,
                  POSIX_SIZE_WRITE_100_1K=n, POSIX_SEQ_WRITES=n, POSIX_MAX_BYTE_WRITTEN=n * 700 - 1,
                  POSIX_F_WRITE_TIME=2.9)]
    reduced = log(-1, shared, -1, 16)
    reduced.info["darshan_shared"] = "1"
    job = merge("j", [log(r, [], r, 16) for r in range(16)] + [reduced])
    f = to_json(job)["findings"][0]
    assert f["id"] == "small-mpiio-writes" and f["fix"]["mode"] == "acb"
    assert f["evidence"]["counters"]["ranks"] == 16
    assert f["evidence"]["counters"]["MPIIO_INDEP_WRITES"] == n
    # 16 opens by 16 ranks is one open each, not a file reopened 16 times by one process
    assert "many-opens-one-file" not in [x["id"] for x in to_json(job)["findings"]]


def test_straggler_on_a_file_darshan_reduced_over_ranks():
    """ior_hdf5_example.darshan's shape: 4 ranks, one shared file reduced to one record that keeps the
    slowest (0.214 s) and fastest (0.028 s) rank's time and the ranks' sum (0.645 s): the slowest rank
    is 25 % above the mean, with the same bytes as the fastest (contention: at most medium)."""
    r = rec("/scratch/test123.h5", POSIX_OPENS=8, POSIX_WRITES=23, POSIX_READS=36, POSIX_BYTES_WRITTEN=4195800,
            POSIX_BYTES_READ=4202504, POSIX_F_WRITE_TIME=0.4, POSIX_F_READ_TIME=0.2, POSIX_F_META_TIME=0.045,
            POSIX_SLOWEST_RANK=1, POSIX_FASTEST_RANK=3, POSIX_F_SLOWEST_RANK_TIME=0.214,
            POSIX_F_FASTEST_RANK_TIME=0.028, POSIX_SLOWEST_RANK_BYTES=2099712, POSIX_FASTEST_RANK_BYTES=2099376)
    reduced = log(-1, [r], -1, 4, seconds=0)
    reduced.info["darshan_shared"] = "1"
    ranks = [log(rk, [], rk, 4, seconds=0.3) for rk in range(4)]
    f = by_id(to_json(merge("j", ranks + [reduced]))["findings"], "rank-imbalance")
    c = f["evidence"]["counters"]
    assert c["ranks"] == 4 and c["slowest_rank"] == 1 and c["fastest_rank"] == 3
    assert c["mean_io_time"] == pytest.approx(0.645 / 4)
    assert f["expected_gain"]["seconds"] == pytest.approx(0.214 - 0.645 / 4)
    assert f["severity"] == "medium" and "contention" in f["evidence"]["text"]
    # every rank as fast as the mean: nothing to flag
    r.app.update(POSIX_F_SLOWEST_RANK_TIME=0.17, POSIX_F_FASTEST_RANK_TIME=0.15)
    fs = to_json(merge("j", ranks + [reduced]))["findings"]
    assert "rank-imbalance" not in [x["id"] for x in fs]


def test_applying_the_fix_cuts_the_calls_it_said_it_would(workdir, logdir, tmp_path):
    """small-writes advises a --policy; re-run with it, the file system gets
    no more write calls than the finding said would be left."""
    data = workdir / "f"
    prog = [str(NATIVE / "sluice-bench-smallio"), "--file", str(data), "--phase", "write", "--size", "400000",
            "--write-size", "64"]
    sluice("run", "-q", "--log-dir", str(logdir), "--path", str(workdir), "--", *prog)
    f = next(x for x in json.loads(sluice("advise", "--json", str(logdir)).stdout)["findings"]
             if x["id"] == "small-writes")
    gain = f["expected_gain"]
    assert gain["calls_before"] == 6250 and gain["calls_after"] < 10
    policy = f["fix"]["settings"]["policy"]
    assert policy == [f"{workdir}=buffer"]
    again = tmp_path / "again"
    sluice("run", "-q", "--log-dir", str(again), "--path", str(workdir),
           *(a for p in policy for a in ("--policy", p)), "--", *prog)
    fs = file_entry(report_json(again), data)["fs"]
    assert fs["POSIX_WRITES"] <= gain["calls_after"]
    assert fs["POSIX_BYTES_WRITTEN"] == 400000
