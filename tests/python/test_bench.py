"""Tests of the benchmark harness (sluice bench) and its workload programs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sluice import paths
from sluice.bench import session, stats, sysinfo
from sluice.bench.caches import CacheDropper
from sluice.bench.runner import Plan, Runner, add_fractions, schedule
from sluice.bench.variants import Variant
from sluice.bench.workloads import Metric, RunContext, Workload, format_size, parse_size
from sluice.bench.workloads.base import META_COUNTERS
from sluice.errors import UserError

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = ["smallio", "ensemble", "fpp-netcdf", "amr-n1", "limits",
            "nc-append", "randread", "smallread", "create-once", "strided-shared", "cdo-nco"]


# --------------------------------------------------------------------------
# The workload programs: use SLUICE_NATIVE_DIR or an installed copy, else
# build bench/ once for the session.


def _have_all() -> bool:
    try:
        for p in PROGRAMS:
            paths.native(f"sluice-bench-{p}", "bin")
    except UserError:
        return False
    return True


@pytest.fixture(scope="session")
def native_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if _have_all():
        return paths.native("sluice-bench-smallio", "bin").parent
    if shutil.which("cmake") is None:
        pytest.fail("cmake is needed to build bench/ (or set SLUICE_NATIVE_DIR)")
    build = tmp_path_factory.mktemp("benchbuild")
    subprocess.run(["cmake", "-S", str(REPO / "bench"), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "-j2"], check=True, capture_output=True)
    os.environ["SLUICE_NATIVE_DIR"] = str(build / "native")
    assert _have_all()
    return build / "native"


def prog(native_dir: Path, name: str) -> str:
    return str(native_dir / f"sluice-bench-{name}")


def run_json(argv: list[str]) -> dict[str, Any]:
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout  # exactly one JSON line
    return json.loads(lines[0])


def pattern(off: int, n: int) -> np.ndarray:
    """The verification pattern of bench/workloads/common.h."""
    p = np.arange(off, off + n, dtype=np.uint64)
    b = p >> np.uint64(16)
    key = (b * np.uint64(157) + (b >> np.uint64(8))) & np.uint64(0xFF)
    return ((p % np.uint64(251)) ^ key).astype(np.uint8)


# --------------------------------------------------------------------------
# stats


def test_summarize_exact() -> None:
    assert stats.summarize([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert stats.summarize([4, 1, 3, 2]) == {"median": 2.5, "min": 1.0, "max": 4.0, "n": 4}
    assert stats.summarize([None, 5.0, float("nan")]) == {"median": 5.0, "min": 5.0, "max": 5.0, "n": 1}
    assert stats.summarize([]) == {"median": None, "min": None, "max": None, "n": 0}


def test_pairwise_ratios_are_round_by_round() -> None:
    a = [1.0, 10.0, 100.0]
    b = [2.0, 5.0, 300.0]
    assert stats.pairwise_ratios(a, b) == [2.0, 0.5, 3.0]
    r = stats.ratio_summary(a, b)
    # The median of the pairwise ratios, not the ratio of the medians (5/10).
    assert r["median"] == 2.0
    assert (r["min"], r["max"], r["n"]) == (0.5, 3.0, 3)
    assert stats.pairwise_ratios([0.0, 2.0, None], [1.0, 3.0, 1.0]) == [None, 1.5, None]
    with pytest.raises(ValueError):
        stats.pairwise_ratios([1.0], [1.0, 2.0])
    assert stats.fraction(50.0, 200.0) == 0.25
    assert stats.fraction(50.0, None) is None and stats.fraction(1.0, 0.0) is None


def test_sizes() -> None:
    assert parse_size("4096") == 4096
    assert parse_size("4K") == 4096 and parse_size("64M") == 64 << 20 and parse_size("1GiB") == 1 << 30
    assert format_size(1 << 30) == "1G" and format_size(8192) == "8K" and format_size(100) == "100"
    with pytest.raises(ValueError):
        parse_size("12x")


# --------------------------------------------------------------------------
# runner: alternation, clean-up, cache drops, ratios


def test_schedule_alternates() -> None:
    got = [(s.warmup, s.round, s.variant) for s in schedule(["A", "B"], 3, 1)]
    assert got == [
        (True, 0, "A"), (True, 0, "B"),
        (False, 0, "A"), (False, 0, "B"),
        (False, 1, "A"), (False, 1, "B"),
        (False, 2, "A"), (False, 2, "B"),
    ]  # fmt: skip


class CountingDropper(CacheDropper):
    def __init__(self, path: str) -> None:
        super().__init__(path=path)
        self.reason = None  # pretend to be allowed even when not root
        self.calls = 0

    def drop(self) -> bool:
        self.calls += 1
        Path(self.path).write_text("3\n")
        return True


class FakeWorkload(Workload):
    """Records the order of runs; A and B give values whose ratio of medians
    differs from the median of ratios."""

    name = "fake"
    reads = True
    metrics = (Metric("value", "x"), Metric("rate", "ops/s", limit="create_per_s"))
    values = {"A": [1.0, 10.0, 100.0], "B": [2.0, 5.0, 300.0]}

    def __init__(self) -> None:
        self.order: list[str] = []
        self.seen_files: list[list[str]] = []

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        self.seen_files.append(sorted(os.listdir(ctx.workdir)))
        (ctx.workdir / "leftover").write_text("x")
        ctx.drop_caches()
        i = sum(1 for v in self.order if v == ctx.variant.name) - 1  # warm-up is -1
        self.order.append(ctx.variant.name)
        val = self.values[ctx.variant.name][i] if i >= 0 else 999.0
        return {"value": val, "rate": 10.0}


def test_runner_alternates_cleans_and_pairs(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.mkdir()
    wl = FakeWorkload()
    a, b = Variant("A", None, ""), Variant("B", None, "")
    plan = Plan(workload=wl, params={}, variants=[a, b], rounds=3, warmup=1)
    dropper = CountingDropper(str(tmp_path / "drop"))
    with Runner(target=target, seed=7, caches=dropper) as runner:
        res = runner.run_plan(plan)
        assert runner.root.parent == target
    assert wl.order == ["A", "B"] * 4
    assert all(files == [] for files in wl.seen_files)  # clean workdir every run
    assert list(target.iterdir()) == []  # scratch removed at the end
    assert dropper.calls == 2 * 8  # before each run (reads=True) and once inside
    assert len(res["rounds"]) == 8
    assert [r["warmup"] for r in res["rounds"]] == [True, True] + [False] * 6
    assert [r["variant"] for r in res["rounds"]] == ["A", "B"] * 4
    assert res["summary"]["A"]["value"] == {"median": 10.0, "min": 1.0, "max": 100.0, "n": 3}
    assert res["summary"]["B"]["value"]["median"] == 5.0
    ratio = res["ratios"]["B/A"]["value"]
    assert ratio["per_round"] == [2.0, 0.5, 3.0]
    assert ratio["median"] == 2.0
    add_fractions(res, {"create_per_s": 40.0})
    assert res["fraction_of_limit"]["A"]["rate"]["fraction"] == 0.25
    assert "value" not in res["fraction_of_limit"]["A"]


def test_plans_put_limits_first_and_quick() -> None:
    plans = session.make_plans(["smallio", "ensemble"], 5, 1, ["files=7", "smallio.size=1M"])
    assert [p.workload.name for p in plans] == ["limits", "smallio", "ensemble"]
    lim = plans[0]
    assert lim.quick and lim.rounds == 3 and lim.warmup == 0 and lim.note
    assert lim.params["files"] == 7 and plans[2].params["files"] == 7  # NAME= applies to all
    assert plans[1].params["size"] == 1 << 20
    full = session.make_plans(["smallio", "limits"], 5, 1)
    assert [p.workload.name for p in full] == ["limits", "smallio"]
    assert not full[0].quick and full[0].rounds == 5 and full[0].params["size"] == 1 << 30
    with pytest.raises(UserError):
        session.make_plans(["nope"], 5, 1)
    with pytest.raises(UserError):
        session.make_plans(["smallio"], 5, 1, ["smallio.nope=1"])
    with pytest.raises(UserError):
        session.make_plans(["smallio"], 5, 1, ["size=abc"])
    with pytest.raises(UserError):
        session.make_plans(["smallio"], 5, 1, variant_names=["no-such-variant"])
    # limits always runs plain, whatever the other workloads run as.
    mixed = session.make_plans(["limits", "smallio"], 5, 1, variant_names=["plain", "sluice-profile"])
    assert [v.name for v in mixed[0].variants] == ["plain"]
    assert [v.name for v in mixed[1].variants] == ["plain", "sluice-profile"]
    ov = session.make_plans(["overhead"], 5, 1)
    assert [v.name for v in ov[1].variants] == ["plain", "sluice-profile"]


def test_find_mount_unescapes(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/vda / ext4 rw,relatime 0 0\n"
        "tmpfs /mnt/with\\040space tmpfs rw,size=4k 0 0\n"
        "mfs#10.213.0.1:9421 /mnt/sluice-pfs fuse.mfs rw,nosuid,allow_other 0 0\n"
    )
    m = sysinfo.find_mount("/", str(mounts))
    assert m is not None and m["type"] == "ext4"
    # realpath of a path that does not exist keeps its spelling
    m = sysinfo.find_mount("/mnt/with space/x", str(mounts))
    assert m is not None and m["type"] == "tmpfs" and m["options"] == ["rw", "size=4k"]
    m = sysinfo.find_mount("/mnt/sluice-pfs/a/b", str(mounts))
    assert sysinfo.is_testbed_mount(m)
    assert not sysinfo.is_testbed_mount(sysinfo.find_mount("/usr", str(mounts)))


def test_fs_label() -> None:
    assert sysinfo.fs_label({"type": "tmpfs", "testbed": {"is_testbed": False}}) == "tmpfs"
    assert sysinfo.fs_label({"type": "fuse.mfs", "testbed": {"is_testbed": True, "delay_us": 25}}) == "testbed-delay25us"
    assert sysinfo.fs_label({"type": "fuse.mfs", "testbed": {"is_testbed": True, "delay_us": None}}) == "testbed"
    assert sysinfo.fs_label({"type": "nfs 4", "testbed": {}}) == "nfs_4"


# --------------------------------------------------------------------------
# A tiny real run through the CLI: JSON schema and figures


def test_real_run_smallio_and_limits(native_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from sluice.cli.bench import command

    target = tmp_path / "target"
    target.mkdir()
    monkeypatch.chdir(tmp_path)
    args = [
        "--target", str(target), "--rounds", "2", "--warmup", "1", "--seed", "5",
        "-p", "limits.size=2M", "-p", "limits.files=20", "-p", "smallio.size=1M",
        "smallio", "limits",
    ]  # fmt: skip
    out = CliRunner().invoke(command, args, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    files = list((tmp_path / "bench" / "results").glob("limits+smallio-*.json"))
    assert len(files) == 1, files
    doc = json.loads(files[0].read_text())
    assert "smallio on" in out.output and "of limit" in out.output

    assert doc["schema"] == "sluice-bench/1"
    assert doc["seed"] == 5
    for k in ("hostname", "cores", "memory_bytes", "kernel", "loadavg_before", "loadavg_after"):
        assert k in doc["machine"], k
    assert len(doc["machine"]["loadavg_before"]) == 3
    fs = doc["filesystem"]
    for k in ("type", "mount_point", "mount_options", "statfs_magic", "testbed"):
        assert k in fs, k
    assert fs["testbed"]["is_testbed"] is False and "delay_us" in fs["testbed"]
    assert fs["type"] == sysinfo.find_mount(target)["type"]
    assert doc["config"]["rounds"] == 2 and doc["config"]["workloads"] == ["limits", "smallio"]
    assert doc["drop_caches"]["possible"] == (os.geteuid() == 0)
    assert doc["limits"]["quick"] is False

    lim = doc["workloads"]["limits"]
    assert lim["params"]["size"] == 2 << 20
    assert len(lim["rounds"]) == 3  # 1 warm-up + 2 measured, one variant
    for r in lim["rounds"]:
        phases = [x["phase"] for x in r["raw"]]
        assert phases == ["write", "read", "create", "stat", "openclose", "unlink"]
        assert r["raw"][0]["bytes"] == 2 << 20 and r["raw"][1]["bytes"] == 2 << 20
        assert r["raw"][2]["ops"] == 20
    assert set(lim["summary"]["plain"]) >= {"write_MBps", "read_MBps", "create_per_s", "stat_per_s", "unlink_per_s"}
    assert doc["limits"]["medians"]["write_MBps"] == lim["summary"]["plain"]["write_MBps"]["median"]

    sm = doc["workloads"]["smallio"]
    assert sm["variants"] == ["plain", "sluice-buffer"] and list(sm["ratios"]) == ["sluice-buffer/plain"]
    assert len(sm["rounds"]) == 6
    assert [(r["variant"], r["warmup"]) for r in sm["rounds"]] == [
        ("plain", True), ("sluice-buffer", True), ("plain", False), ("sluice-buffer", False),
        ("plain", False), ("sluice-buffer", False)]
    for r in sm["rounds"]:
        if r["variant"] == "sluice-buffer":
            # 1 MiB in one 4 MiB unit. Reads: the first 4 KiB one goes through;
            # read-ahead then starts at 4 requests (16 KiB) and doubles per fill:
            # 16K..512K cover up to 1012K, the 1 MiB fill returns the last 12K,
            # and one read finds the end: 1 + 7 + 1.
            assert r["metrics"]["fs_writes"] == 1 and r["metrics"]["fs_reads"] == 9
            assert r["raw"][0]["sluice_counters"]["app"]["POSIX_WRITES"] == 128
            continue
        assert r["metrics"]["fs_writes"] == 128 and r["metrics"]["fs_reads"] == 256
        w, rd = r["raw"]
        assert w["bytes_written"] == 1 << 20 and w["write_ops"] == 128
        assert rd["bytes_read"] == 1 << 20 and rd["read_ops"] == 256
        assert r["metrics"]["write_MBps"] == pytest.approx(w["bytes_written"] / w["write_seconds"] / 1e6)
    s = sm["summary"]["plain"]["write_MBps"]
    measured = [r["metrics"]["write_MBps"] for r in sm["rounds"] if not r["warmup"] and r["variant"] == "plain"]
    assert s["n"] == 2 and s["min"] == min(measured) and s["max"] == max(measured)
    assert s["median"] == pytest.approx(sum(measured) / 2)
    f = sm["fraction_of_limit"]["plain"]["write_MBps"]
    assert f["limit"] == "write_MBps"
    assert f["fraction"] == pytest.approx(s["median"] / doc["limits"]["medians"]["write_MBps"])
    assert list(target.iterdir()) == []  # nothing left behind


def test_quick_limits_when_not_named(native_dir: Path, tmp_path: Path) -> None:
    from rich.console import Console

    from sluice.cli.bench import run

    out = tmp_path / "r.json"
    doc = run(
        tmp_path, ["amr-n1"], rounds=1, warmup=0, json_path=out,
        params=["limits.size=1M", "limits.files=5", "procs=2", "boxes=3", "box_size=64K"],
        console=Console(file=open(os.devnull, "w")),
    )  # fmt: skip
    assert doc is not None and json.loads(out.read_text())["limits"]["quick"] is True
    assert doc["config"]["workloads"] == ["limits", "amr-n1"]
    assert "quick" in doc["limits"]["note"]
    raw = doc["workloads"]["amr-n1"]["rounds"][0]["raw"][0]
    assert raw["writes"] == 6 and raw["bytes_written"] == raw["file_bytes"]
    assert "write_MBps" in doc["workloads"]["amr-n1"]["fraction_of_limit"]["plain"]


def test_missing_target_is_a_user_error(tmp_path: Path) -> None:
    plans = session.make_plans(["smallio"], 1, 0)
    with pytest.raises(UserError):
        session.run_bench(tmp_path / "absent", plans, seed=1, caches=CacheDropper(enabled=False))


# --------------------------------------------------------------------------
# The C workload programs write exactly what they say


def test_programs_help_and_bad_args(native_dir: Path) -> None:
    for p in PROGRAMS:
        ok = subprocess.run([prog(native_dir, p), "--help"], capture_output=True, text=True)
        assert ok.returncode == 0 and "usage:" in ok.stdout
        bad = subprocess.run([prog(native_dir, p), "--no-such-option"], capture_output=True, text=True)
        assert bad.returncode != 0
    assert "placeholder" in subprocess.run([prog(native_dir, "amr-n1"), "--help"], capture_output=True, text=True).stdout


def test_smallio_bytes_and_content(native_dir: Path, tmp_path: Path) -> None:
    f = tmp_path / "s.dat"
    size = (1 << 20) + 12345  # not a multiple of the write size
    w = run_json([prog(native_dir, "smallio"), "--file", str(f), "--size", str(size), "--phase", "write", "--fsync"])
    assert w["bytes_written"] == size == f.stat().st_size
    assert w["write_ops"] == -(-size // 8192) and w["fsyncs"] == 1
    assert np.array_equal(np.fromfile(f, dtype=np.uint8), pattern(0, size))
    r = run_json([prog(native_dir, "smallio"), "--file", str(f), "--phase", "read", "--verify"])
    assert r["bytes_read"] == size and r["read_ops"] == -(-size // 4096) and r["mismatches"] == 0
    # A corrupted byte is caught.
    with open(f, "r+b") as fh:
        fh.seek(70000)
        fh.write(b"\xff" if pattern(70000, 1)[0] != 0xFF else b"\x00")
    bad = subprocess.run([prog(native_dir, "smallio"), "--file", str(f), "--phase", "read", "--verify"], capture_output=True, text=True)
    assert bad.returncode == 1 and json.loads(bad.stdout)["mismatches"] == 1
    # --wrap rewrites the same region: a million tiny writes need little space.
    g = tmp_path / "wrap.dat"
    w = run_json([prog(native_dir, "smallio"), "--file", str(g), "--phase", "write", "--size", "80000", "--write-size", "8", "--wrap", "4096"])
    assert w["write_ops"] == 10000 and w["bytes_written"] == 80000 and g.stat().st_size == 4096
    assert np.array_equal(np.fromfile(g, dtype=np.uint8), pattern(0, 4096))


def test_ensemble_bytes_and_layout(native_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "ens"
    procs, files, steps = 3, 7, 4
    common = [prog(native_dir, "ensemble"), "--dir", str(d), "--procs", str(procs), "--files", str(files),
              "--steps", str(steps), "--inputs", "2", "--input-size", "8K", "--read-size", "1000", "--seed", "9"]  # fmt: skip
    s = run_json([*common, "--phase", "setup"])
    assert s["bytes_written"] == 2 * 8192
    assert sorted(p.stat().st_size for p in (d / "input").iterdir()) == [8192, 8192]
    r = run_json([*common, "--phase", "run"])
    outs = sorted(d.glob("member.*/out.*"))
    assert len(outs) == procs * files == r["output_files"]
    assert sum(p.stat().st_size for p in outs) == r["bytes_written"]
    assert r["writes"] == procs * files * steps
    assert r["opens"] == r["closes"] == procs * steps * (files + 2)
    assert r["reads"] == procs * steps * 2 and r["bytes_read"] == r["reads"] * 1000
    for p in outs:
        lines = p.read_bytes().split(b"\n")
        assert lines[-1] == b"" and len(lines) == steps + 1
        assert all(100 - 1 <= len(x) <= 1024 - 1 and len(set(x)) == 1 for x in lines[:-1])
    # The same seed gives the same data; another seed does not.
    again = run_json([*common[:-1], "9", "--dir", str(tmp_path / "ens2")])
    assert again["bytes_written"] == r["bytes_written"]
    other = run_json([*common[:-1], "10", "--dir", str(tmp_path / "ens3")])
    assert other["bytes_written"] != r["bytes_written"]


def test_ensemble_split_over_nodes_writes_the_same_members(native_dir: Path, tmp_path: Path) -> None:
    """--first: the instances 2-3 of a node's share and 0-1 of another's
    leave the files one run of all four does (each member's records depend
    on its number only)."""
    def tree(d: Path, *runs: tuple[int, int]) -> dict[str, bytes]:
        common = [prog(native_dir, "ensemble"), "--dir", str(d), "--files", "3", "--steps", "2", "--inputs", "1",
                  "--input-size", "4K", "--seed", "5"]
        run_json([*common, "--procs", "4", "--phase", "setup"])
        for procs, first in runs:
            run_json([*common, "--procs", str(procs), "--first", str(first), "--phase", "run"])
        return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.glob("member.*/out.*"))}

    whole = tree(tmp_path / "one", (4, 0))
    assert len(whole) == 12 and "member.0003/out.0002" in whole
    assert tree(tmp_path / "two", (2, 2), (2, 0)) == whole
    bad = subprocess.run([prog(native_dir, "ensemble"), "--dir", str(tmp_path / "x"), "--procs", "2", "--first",
                          "9999"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--first + --procs must be at most 9999" in bad.stderr


def test_nodes_merge_adds_counts_and_takes_the_longest_time() -> None:
    """One job's line from each node's: counts added, times the slowest
    node's, each node's client requests kept and added up."""
    from sluice.bench.nodes import busiest_client_meta, merge

    lines = [{"workload": "w", "writes": 3, "seconds": 1.5, "io_seconds": 1.0, "node": "node1",
              "client_ops": {"create": 4, "write": 3}, "client_meta": 4},
             {"workload": "w", "writes": 5, "seconds": 0.5, "io_seconds": 2.0, "node": "node2",
              "client_ops": {"create": 6}, "client_meta": 6}]
    m = merge(lines)
    assert (m["workload"], m["writes"], m["seconds"], m["io_seconds"]) == ("w", 8, 1.5, 2.0)
    assert m["client_ops"] == {"create": 10, "write": 3}
    assert [n["node"] for n in m["nodes"]] == ["node1", "node2"]
    assert busiest_client_meta(m) == 6.0 and busiest_client_meta({"writes": 1}) is None


def test_fpp_netcdf_files(native_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "fpp"
    nx, ny, nz, nv, nt, procs = 12, 10, 3, 2, 3, 3
    r = run_json([prog(native_dir, "fpp-netcdf"), "--dir", str(d), "--procs", str(procs), "--nx", str(nx),
                  "--ny", str(ny), "--nz", str(nz), "--vars", str(nv), "--steps", str(nt), "--verify"])  # fmt: skip
    files = sorted(d.glob("out.*.nc"))
    assert len(files) == procs == r["files"]
    assert sum(p.stat().st_size for p in files) == r["file_bytes"]
    assert r["data_bytes"] == procs * (nv * nt * nx * ny * nz * 4 + nt * 8 + (nx + ny + nz) * 8)
    assert r["mismatches"] == 0 and r["verified"] is True
    assert r["nc_puts"] == procs * (3 + nt * (1 + nv))
    if shutil.which("ncdump"):
        head = subprocess.run(["ncdump", "-h", str(files[1])], capture_output=True, text=True, check=True).stdout
        assert "time = UNLIMITED ; // (3 currently)" in head and f"lon = {nx} ;" in head
        assert "float v1(time, pfull, lat, lon)" in head
    r4 = run_json([prog(native_dir, "fpp-netcdf"), "--dir", str(tmp_path / "nc4"), "--procs", "1", "--nx", "4",
                   "--ny", "4", "--nz", "1", "--format", "netcdf4", "--verify"])  # fmt: skip
    assert r4["mismatches"] == 0 and (tmp_path / "nc4" / "out.0000.nc").read_bytes()[:4] == b"\x89HDF"


def test_amr_n1_bytes_and_content(native_dir: Path, tmp_path: Path) -> None:
    f = tmp_path / "ckpt"
    r = run_json([prog(native_dir, "amr-n1"), "--file", str(f), "--procs", "3", "--boxes", "5",
                  "--box-size", "100K", "--jitter", "30", "--seed", "3"])  # fmt: skip
    size = f.stat().st_size
    assert size == r["file_bytes"] == r["bytes_written"]
    assert r["writes"] == 15 and r["boxes"] == 15 and r["fsyncs"] == 3
    assert 15 * 100 * 1024 * 0.7 <= size <= 15 * 100 * 1024 * 1.3
    assert np.array_equal(np.fromfile(f, dtype=np.uint8), pattern(0, size))
    v = run_json([prog(native_dir, "amr-n1"), "--file", str(f), "--procs", "2", "--boxes", "4",
                  "--box-size", "64K", "--verify", "--no-fsync"])  # fmt: skip
    assert v["mismatches"] == 0 and v["fsyncs"] == 0


def test_limits_phases(native_dir: Path, tmp_path: Path) -> None:
    L = prog(native_dir, "limits")
    f = tmp_path / "big"
    w = run_json([L, "write", "--file", str(f), "--size", "3M", "--request-size", "1M"])
    assert w["bytes"] == 3 << 20 == f.stat().st_size and w["ops"] == 3 and w["fsyncs"] == 1
    r = run_json([L, "read", "--file", str(f), "--request-size", "1M"])
    assert r["bytes"] == 3 << 20 and r["ops"] == 3
    d = tmp_path / "m"
    c = run_json([L, "create", "--dir", str(d), "--files", "25", "--file-size", "4K"])
    assert c["ops"] == 25 and c["bytes"] == 25 * 4096
    assert sorted(p.stat().st_size for p in d.iterdir()) == [4096] * 25
    for phase in ("stat", "openclose"):
        assert run_json([L, phase, "--dir", str(d), "--files", "25"])["ops"] == 25
    run_json([L, "unlink", "--dir", str(d), "--files", "25"])
    assert list(d.iterdir()) == []
    assert subprocess.run([L, "stat", "--dir", str(d), "--files", "1"], capture_output=True).returncode == 1


def test_limits_calibration_phases(native_dir: Path, tmp_path: Path) -> None:
    """The phases sluice bench calibrate adds: each makes the calls it counts
    and leaves what it says (the witness: the directory's contents)."""
    L = prog(native_dir, "limits")
    d = tmp_path / "m"
    run_json([L, "create", "--dir", str(d), "--files", "10"])
    r = run_json([L, "rename", "--dir", str(d), "--files", "10"])
    assert r["ops"] == 20 and sorted(p.name for p in d.iterdir()) == [f"f.{i:07d}" for i in range(10)]
    assert run_json([L, "mkdir", "--dir", str(d), "--files", "5"])["ops"] == 5
    assert sum(p.is_dir() for p in d.iterdir()) == 5
    run_json([L, "rmdir", "--dir", str(d), "--files", "5"])
    assert not any(p.is_dir() for p in d.iterdir())
    f = tmp_path / "fs"
    r = run_json([L, "fsync", "--file", str(f), "--files", "7", "--file-size", "4K"])
    assert (r["ops"], r["fsyncs"], f.stat().st_size) == (7, 7, 4096)
    # two processes started together write their pieces of one file: every
    # 64 KiB piece is its rank's pattern
    shared = tmp_path / "shared"
    at = f"{time.time() + 0.5:.6f}"
    procs = [subprocess.Popen([L, "strided", "--file", str(shared), "--size", "1M", "--request-size", "64K",
                               "--rank", str(r), "--nprocs", "2", "--start-at", at], stdout=subprocess.PIPE, text=True)
             for r in (0, 1)]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    assert [o["bytes"] for o in outs] == [512 << 10, 512 << 10] and all(o["ops"] == 8 for o in outs)
    data = np.frombuffer(shared.read_bytes(), dtype=np.uint8)
    assert data.size == 1 << 20
    for i in range(16):   # (a rank's pieces hold the pattern from offset `rank`)
        assert np.array_equal(data[i * 65536:(i + 1) * 65536], pattern(i % 2, 65536)), i
    bad = subprocess.run([L, "strided", "--file", str(shared), "--rank", "2", "--nprocs", "2"], capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "--rank must be below --nprocs" in bad.stderr


def test_nc_append_records_and_bytes(native_dir: Path, tmp_path: Path) -> None:
    f = tmp_path / "h.nc"
    argv = [prog(native_dir, "nc-append"), "--file", str(f), "--records", "7", "--nx", "5", "--ny", "3", "--vars", "2"]
    w = run_json([*argv, "--sync-every", "3"])
    assert w["data_bytes"] == 7 * (2 * 5 * 3 * 4 + 8) and w["nc_puts"] == 7 * 3 and w["nc_syncs"] == 2
    assert w["file_bytes"] == f.stat().st_size > w["data_bytes"]
    assert f.read_bytes()[:4] == b"\x89HDF"  # netCDF-4: HDF5 underneath
    assert w["proc_io"] is True and w["write_syscalls"] > 0  # the process's own calls, from /proc/self/io
    v = run_json([*argv, "--phase", "verify"])
    assert v["records_found"] == 7 and v["mismatches"] == 0 and v["data_bytes"] == w["data_bytes"]
    if shutil.which("ncdump"):
        head = subprocess.run(["ncdump", "-h", str(f)], capture_output=True, text=True, check=True).stdout
        assert "time = UNLIMITED ; // (7 currently)" in head and "float v1(time, y, x)" in head
    # A file with fewer records than expected fails verification.
    bad = subprocess.run([*argv[:-6], "--records", "8", "--nx", "5", "--ny", "3", "--vars", "2", "--phase", "verify"],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 1 and json.loads(bad.stdout)["records_found"] == 7
    c = run_json([prog(native_dir, "nc-append"), "--file", str(tmp_path / "c.nc"), "--records", "4", "--format", "64bit"])
    assert (tmp_path / "c.nc").read_bytes()[:4] == b"CDF\x02" and c["data_bytes"] == 4 * (2 * 64 * 64 * 4 + 8)


def test_randread_reads_at_random_offsets(native_dir: Path, tmp_path: Path) -> None:
    f = tmp_path / "r.dat"
    argv = [prog(native_dir, "randread"), "--file", str(f), "--size", "1M", "--read-size", "4K", "--reads", "300"]
    s = run_json([*argv, "--phase", "setup"])
    assert s["setup_bytes"] == 1 << 20 == f.stat().st_size
    assert np.array_equal(np.fromfile(f, dtype=np.uint8), pattern(0, 1 << 20))
    r = run_json([*argv, "--phase", "run", "--verify"])
    assert r["read_ops"] == 300 and r["bytes_read"] == 300 * 4096 and r["mismatches"] == 0 and r["short_reads"] == 0
    # The reads land all over the file and the seed decides where: with the
    # upper half zeroed, some reads of every seed find it and some do not.
    with open(f, "r+b") as fh:
        fh.seek(512 << 10)
        fh.write(bytes(512 << 10))
    found = []
    for seed in ("1", "2"):
        bad = subprocess.run([*argv, "--phase", "run", "--verify", "--seed", seed], capture_output=True, text=True)
        assert bad.returncode == 1
        found.append(json.loads(bad.stdout)["mismatches"])
        assert 0 < found[-1] < 300 * 4096
    assert found[0] != found[1]


def test_smallread_files_and_reads(native_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "in"
    argv = [prog(native_dir, "smallread"), "--dir", str(d), "--files", "30", "--min-size", "1K",
            "--max-size", "9K", "--read-size", "4K", "--seed", "4"]  # fmt: skip
    s = run_json([*argv, "--phase", "setup"])
    files = sorted(d.iterdir())
    sizes = [p.stat().st_size for p in files]
    assert len(files) == 30 and sum(sizes) == s["setup_bytes"] and all(1024 <= n <= 9 * 1024 for n in sizes)
    assert len(set(sizes)) > 10  # sizes are spread, not one value
    for i, p in enumerate(files):
        assert np.array_equal(np.fromfile(p, dtype=np.uint8), pattern(i << 20, sizes[i]))
    r = run_json([*argv, "--phase", "run", "--verify"])
    assert r["opens"] == r["closes"] == 30 and r["bytes_read"] == s["setup_bytes"] == r["expected_bytes"]
    assert r["read_ops"] == sum(-(-n // 4096) + 1 for n in sizes)  # whole file, then the read that returns 0
    assert r["mismatches"] == 0 and r["wrong_sizes"] == 0
    # Two files swapped: every byte of both differs from its own pattern.
    files[0].rename(tmp_path / "tmp")
    files[1].rename(files[0])
    (tmp_path / "tmp").rename(files[1])
    bad = subprocess.run([*argv, "--phase", "run", "--verify"], capture_output=True, text=True)
    assert bad.returncode == 1


def test_create_once_layout_and_verify(native_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "md"
    argv = [prog(native_dir, "create-once"), "--dir", str(d), "--procs", "3", "--files", "6", "--file-size", "5000"]
    r = run_json([*argv, "--stat"])
    assert r["creates"] == r["writes"] == r["closes"] == r["stats"] == 18 and r["mkdirs"] == 4
    assert r["meta_ops"] == 18 + 18 + 4 and r["bytes_written"] == 18 * 5000 and r["wrong_sizes"] == 0
    assert r["seconds"] >= r["io_seconds"] > 0
    for rank in range(3):
        files = sorted((d / f"proc.{rank:04d}").iterdir())
        assert [p.name for p in files] == [f"f.{i:05d}" for i in range(6)]
        for i, p in enumerate(files):
            assert np.array_equal(np.fromfile(p, dtype=np.uint8), pattern((rank * 6 + i) << 20, 5000))
    v = run_json([*argv, "--phase", "verify"])
    assert v["files_found"] == 18 and v["bytes_found"] == 18 * 5000 and v["mismatches"] == 0
    # A stray entry (a publish's temporary name left behind, say) fails verification.
    (d / "proc.0001" / "f.00002.tmp").write_bytes(b"")
    assert subprocess.run([*argv, "--phase", "verify"], capture_output=True).returncode == 1
    # A second run into the same directory fails: every round starts empty.
    assert subprocess.run(argv, capture_output=True).returncode == 1


def test_strided_shared_interleaves_pieces(native_dir: Path, tmp_path: Path) -> None:
    f = tmp_path / "shared.dat"
    size = 3 * 1000 * 7 + 123  # pieces of 1000 B over 3 processes; a short last piece
    argv = [prog(native_dir, "strided-shared"), "--file", str(f), "--procs", "3", "--piece", "1000", "--size", str(size)]
    r = run_json([*argv, "--fsync"])
    assert r["bytes_written"] == size == f.stat().st_size and r["writes"] == 22 and r["fsyncs"] == 3
    assert np.array_equal(np.fromfile(f, dtype=np.uint8), pattern(0, size))
    assert run_json([*argv, "--phase", "verify"])["mismatches"] == 0
    with open(f, "r+b") as fh:  # one piece lost
        fh.seek(5000)
        fh.write(bytes(1000))
    bad = subprocess.run([*argv, "--phase", "verify"], capture_output=True, text=True)
    assert bad.returncode == 1 and json.loads(bad.stdout)["mismatches"] > 0


# --------------------------------------------------------------------------
# The new workloads through the harness: plain, profile and buffer (and
# stage) side by side, one tiny round each. A profiled run is the check on
# the plain run's own counts: nothing sits between the program and the file
# system, so its fs side equals its app side equals what the plain program
# counted itself.


def bench_doc(tmp_path: Path, names: list[str], params: list[str], variants: list[str]) -> dict[str, Any]:
    from rich.console import Console

    from sluice.cli.bench import run

    doc = run(
        tmp_path, names, rounds=1, warmup=0, json_path=tmp_path / "r.json",
        params=["limits.size=1M", "limits.files=5", *params], variant_names=variants,
        console=Console(file=open(os.devnull, "w")),
    )  # fmt: skip
    assert doc is not None
    return doc


def by_variant(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """variant -> its one measured round (metrics, raw program lines)."""
    return {r["variant"]: r for r in res["rounds"] if not r["warmup"]}


def counters(rnd: dict[str, Any], side: str) -> dict[str, int]:
    """One side of the sluice counters of the round's timed program run."""
    (timed,) = [raw for raw in rnd["raw"] if "sluice_counters" in raw]
    return timed["sluice_counters"][side]


PROFILED = ["plain", "sluice-profile", "sluice-buffer"]


def assert_all_metrics(res: dict[str, Any], skip: tuple[str, ...] = ()) -> None:
    for variant, rnd in by_variant(res).items():
        for m in res["metrics"]:
            if m not in skip:
                assert rnd["metrics"][m] is not None and rnd["metrics"][m] >= 0, (variant, m)


def test_nc_append_through_the_harness(native_dir: Path, tmp_path: Path) -> None:
    p = ["nc-append.records=40", "nc-append.nx=32", "nc-append.ny=32"]
    doc = bench_doc(tmp_path, ["nc-append"], p, PROFILED)
    res = doc["workloads"]["nc-append"]
    assert_all_metrics(res, skip=("fs_read_bytes_ratio",))  # netCDF-4 reads nothing here: no ratio
    assert res["metrics"]["write_MBps"]["limit"] == "write_MBps"
    assert "write_MBps" in res["fraction_of_limit"]["plain"]
    run = by_variant(res)
    plain, prof, buf = run["plain"], run["sluice-profile"], run["sluice-buffer"]
    w = plain["raw"][0]
    assert w["data_bytes"] == 40 * (2 * 32 * 32 * 4 + 8) and plain["raw"][1]["mismatches"] == 0
    # The plain program's own count (its write syscalls) is what a profiled run sees on both sides.
    assert plain["metrics"]["fs_writes"] == counters(prof, "app")["POSIX_WRITES"] == counters(prof, "fs")["POSIX_WRITES"]
    assert plain["metrics"]["write_reduction"] == prof["metrics"]["write_reduction"] == 1.0
    assert plain["metrics"]["fs_reads"] == counters(prof, "app")["POSIX_READS"] == counters(prof, "fs")["POSIX_READS"]
    # Buffer mode: the program asks for the same writes; no more reach the file system.
    assert counters(buf, "app")["POSIX_WRITES"] == plain["metrics"]["fs_writes"]
    assert buf["metrics"]["fs_writes"] <= plain["metrics"]["fs_writes"]
    assert counters(buf, "fs")["POSIX_BYTES_WRITTEN"] <= counters(buf, "app")["POSIX_BYTES_WRITTEN"]


def test_nc_append_64bit_buffer_cuts_fs_writes(native_dir: Path, tmp_path: Path) -> None:
    # The classic 64-bit-offset format has no HDF5 lock: buffer mode coalesces
    # its small record writes today.
    # It also reads before it writes; the plain program's own read counts
    # match a profiled run's too.
    p = ["nc-append.records=40", "nc-append.nx=32", "nc-append.ny=32", "nc-append.format=64bit"]
    res = bench_doc(tmp_path, ["nc-append"], p, PROFILED)["workloads"]["nc-append"]
    assert_all_metrics(res)
    run = by_variant(res)
    plain, prof, buf = run["plain"], run["sluice-profile"], run["sluice-buffer"]
    assert buf["metrics"]["fs_writes"] < plain["metrics"]["fs_writes"]
    assert buf["metrics"]["write_reduction"] > 1.0
    w = plain["raw"][0]
    assert w["read_syscalls"] > 0
    for side in ("app", "fs"):
        c = counters(prof, side)
        assert (c["POSIX_READS"], c["POSIX_BYTES_READ"]) == (w["read_syscalls"], w["read_bytes"])
        assert c["POSIX_WRITES"] == w["write_syscalls"]
    assert counters(buf, "app")["POSIX_BYTES_READ"] == w["read_bytes"]
    assert plain["metrics"]["fs_read_bytes_ratio"] == prof["metrics"]["fs_read_bytes_ratio"] == 1.0


# HDF5 takes flock() on the file at create. Buffer mode used to fall back
# for the whole file from then on (POSIX_FALLBACK_LOCK), so every netCDF-4
# write went straight through; it now keeps buffering under the program's
# own lock.
def test_nc_append_netcdf4_buffer_cuts_fs_writes_under_hdf5_lock(native_dir: Path, tmp_path: Path) -> None:
    p = ["nc-append.records=40", "nc-append.nx=32", "nc-append.ny=32"]
    run = by_variant(bench_doc(tmp_path, ["nc-append"], p, ["plain", "sluice-buffer"])["workloads"]["nc-append"])
    assert counters(run["sluice-buffer"], "fs")["POSIX_FALLBACKS"] == 0
    assert run["sluice-buffer"]["metrics"]["fs_writes"] < run["plain"]["metrics"]["fs_writes"]


def test_read_workloads_through_the_harness(native_dir: Path, tmp_path: Path) -> None:
    p = ["randread.size=2M", "randread.reads=200", "smallread.files=20"]
    doc = bench_doc(tmp_path, ["randread", "smallread"], p, PROFILED)
    for name, reads in (("randread", 200), ("smallread", None)):
        res = doc["workloads"][name]
        assert_all_metrics(res)
        run = by_variant(res)
        plain, prof, buf = run["plain"], run["sluice-profile"], run["sluice-buffer"]
        r = plain["raw"][1]  # raw[0] is the untimed setup, run plain
        assert r["mismatches"] == 0 and r["verified"] is True
        assert plain["raw"][0]["as_variant"] is None and buf["raw"][0]["as_variant"] is None
        if reads:
            assert r["read_ops"] == reads and r["bytes_read"] == reads * 4096
        assert plain["metrics"]["fs_reads"] == r["read_ops"]
        assert plain["metrics"]["fs_read_bytes_ratio"] == 1.0
        for side in ("app", "fs"):
            assert counters(prof, side)["POSIX_READS"] == r["read_ops"]
            assert counters(prof, side)["POSIX_BYTES_READ"] == r["bytes_read"]
        assert prof["metrics"]["fs_read_bytes_ratio"] == 1.0
        assert counters(buf, "app")["POSIX_BYTES_READ"] == r["bytes_read"]
        fs_ratio = counters(buf, "fs")["POSIX_BYTES_READ"] / r["bytes_read"]
        assert buf["metrics"]["fs_read_bytes_ratio"] == pytest.approx(fs_ratio)
    # Random reads give read-ahead nothing to do: the file system sees the program's reads.
    rr = by_variant(doc["workloads"]["randread"])["sluice-buffer"]
    assert rr["metrics"]["fs_reads"] == 200 and rr["metrics"]["fs_read_bytes_ratio"] == 1.0
    sm = by_variant(doc["workloads"]["smallread"])
    assert sm["plain"]["metrics"]["fs_meta_ops"] == 20 == counters(sm["sluice-profile"], "fs")["POSIX_OPENS"]


def test_create_once_through_the_harness(native_dir: Path, tmp_path: Path) -> None:
    p = ["create-once.files=40", "create-once.procs=2"]
    doc = bench_doc(tmp_path, ["create-once"], p, [*PROFILED, "sluice-stage"])
    res = doc["workloads"]["create-once"]
    assert res["variants"] == [*PROFILED, "sluice-stage"]
    # the file system's own client counts exist on MooseFS only, the busiest node's on nodes only
    client = ("client_meta_ops", "client_meta_ops_busiest_node")
    assert_all_metrics(res, skip=client)
    assert all(rnd["metrics"][m] is None for rnd in by_variant(res).values() for m in client)
    assert res["metrics"]["files_per_s"]["limit"] == "create_per_s"
    run = by_variant(res)
    plain, prof, stage = run["plain"], run["sluice-profile"], run["sluice-stage"]
    r = plain["raw"][0]
    assert r["creates"] == 80 and r["stats"] == 80 and r["mkdirs"] == 3
    for rnd in run.values():  # the verify phase ran plain after every variant and found every file
        assert rnd["raw"][1]["files_found"] == 80 and rnd["raw"][1]["mismatches"] == 0
    assert plain["metrics"]["fs_meta_ops"] == 80 + 80 + 3
    for side in ("app", "fs"):
        c = counters(prof, side)
        assert (c["POSIX_OPENS"], c["POSIX_STATS"], c["POSIX_MKDIRS"], c["POSIX_WRITES"]) == (80, 80, 3, 80)
    assert prof["metrics"]["fs_meta_ops"] == plain["metrics"]["fs_meta_ops"]
    # Stage mode: every file was published before the run ended (the verify
    # phase above found them all); the program's stats are answered from the
    # tier. How a publish reaches the file system is stage mode's business:
    # fs_meta_ops adds up whatever it costs.
    fs = counters(stage, "fs")
    assert fs["POSIX_STATS"] < 80
    assert stage["metrics"]["fs_meta_ops"] == sum(fs[k] for k in META_COUNTERS)
    assert stage["metrics"]["seconds"] >= stage["metrics"]["io_seconds"]


def test_strided_shared_through_the_harness(native_dir: Path, tmp_path: Path) -> None:
    p = ["strided-shared.size=1M", "strided-shared.procs=3"]
    doc = bench_doc(tmp_path, ["strided-shared"], p, PROFILED)
    res = doc["workloads"]["strided-shared"]
    assert_all_metrics(res)
    run = by_variant(res)
    plain, prof, buf = run["plain"], run["sluice-profile"], run["sluice-buffer"]
    assert plain["raw"][0]["writes"] == 256 and plain["metrics"]["fs_writes"] == 256
    for rnd in run.values():
        assert rnd["raw"][1]["file_bytes"] == 1 << 20 and rnd["raw"][1]["mismatches"] == 0
    for side in ("app", "fs"):
        assert counters(prof, side)["POSIX_WRITES"] == 256
    assert counters(buf, "app")["POSIX_WRITES"] == 256 and buf["metrics"]["fs_writes"] <= 256


def test_cdo_nco_mirror_plain_and_stage(native_dir: Path, tmp_path: Path) -> None:
    """The CDO/NCO workflow's stand-in at a tiny size: under stage mode the
    outputs are the plain run's, byte for byte, and fewer metadata
    operations reach the file system (counts, not times)."""
    from sluice.bench.workloads.cdo_nco import META, WRITES, output_names

    members = 3
    p = [f"cdo-nco.members={members}", "cdo-nco.steps=3", "cdo-nco.nx=16", "cdo-nco.ny=8"]
    res = bench_doc(tmp_path, ["cdo-nco"], p, ["plain", "sluice-stage"])["workloads"]["cdo-nco"]
    assert res["variants"] == ["plain", "sluice-stage"]
    run = by_variant(res)
    plain, stage = run["plain"], run["sluice-stage"]
    for rnd in (plain, stage):
        m = rnd["metrics"]
        # every output there, no temporary name left, each identical to plain's
        assert m["differing_outputs"] == 0 and m["seconds"] > 0 and m["cpu_seconds"] > 0
    # the script: per member cdo timmean, ncap2 and its sh and mv; then ensmean, nces (+ sh, mv), ncks (+ sh, mv), sh
    assert stage["metrics"]["processes"] == 4 * members + 8
    assert len(output_names(members)) == 2 * members + 3
    # plain's calls were counted by the same script rerun under profile mode
    (counted,) = [r for r in plain["raw"] if r.get("as_variant") == "sluice-profile"]
    fs = counted["fs_counts"]
    assert plain["metrics"]["fs_meta_ops"] == sum(fs[k] for k in META) > 0
    assert plain["metrics"]["fs_writes"] == sum(fs[k] for k in WRITES) > 0
    assert fs["POSIX_RENAMES"] == members + 2  # /bin/mv of each NCO temporary file
    sfs = stage["raw"][1]["fs_counts"]
    assert stage["metrics"]["fs_meta_ops"] == sum(sfs[k] for k in META)
    assert stage["metrics"]["fs_meta_ops"] < plain["metrics"]["fs_meta_ops"]
    assert stage["metrics"]["fs_writes"] < plain["metrics"]["fs_writes"]
    assert stage["metrics"]["drain_after_s"] is not None and stage["raw"][1]["drainer_logs"] >= 1


def test_results_record_no_path_of_this_machine(tmp_path, monkeypatch):
    """A build tree outside the repository is recorded by its last two parts
    (results are committed and read on other machines)."""
    from sluice.bench.session import _shown_path

    monkeypatch.chdir(tmp_path)
    assert _shown_path("/somewhere/wt-1faf66d/build/native") == "build/native"
    (tmp_path / "build" / "dev" / "native").mkdir(parents=True)
    assert _shown_path(str(tmp_path / "build" / "dev" / "native")) == "build/dev/native"


def test_calibrate_writes_a_profile_and_leaves_nothing(native_dir: Path, tmp_path: Path) -> None:
    """sluice bench calibrate on a local directory, at a small size: every
    operation kind and figure is in the profile, measured (positive, and the
    latency of one call is what its rate says), the table is printed, and
    the target holds nothing of it afterwards."""
    from conftest import sluice

    target = tmp_path / "fs"
    target.mkdir()
    out = tmp_path / "local.json"
    cp = sluice("bench", "calibrate", "--target", str(target), "-o", str(out), "--rounds", "2", "--files", "40",
                "--size", "8M", "--procs", "1,2", "--no-drop-caches")
    assert "metadata" in cp.stdout and "profile:" in cp.stdout
    assert list(target.iterdir()) == []
    from sluice.bench.calibrate import read_profile
    doc = read_profile(out)
    assert doc["settings"]["procs"] == [1, 2] and len(doc["rounds"]) == 2
    assert set(doc["metadata"]) == {"create", "stat", "open", "rename", "unlink", "mkdir", "rmdir", "create_written"}
    for kind, m in doc["metadata"].items():
        lat, rate1 = m["latency_s"]["median"], m["ops_per_s"]["1"]["median"]
        assert lat > 0 and rate1 > 0 and m["ops_per_s"]["2"]["median"] > 0, kind
        # one process, in each round: its rate is one call per latency
        for r in doc["rounds"]:
            one = r["procs"]["1"]
            assert one[kind] * one[f"{kind}_latency_s"] == pytest.approx(1.0, rel=1e-6), kind
    d = doc["data"]
    for key in ("small_write_s", "small_read_s", "random_read_s", "fsync_s"):
        assert d[key]["median"] > 0
    assert d["write_MBps"]["1"]["median"] > 0 and d["read_MBps"]["2"]["median"] > 0
    for key in ("write_call_s", "write_call_busy_s"):   # (by request size: 4 KiB, 64 KiB, 1 MiB)
        assert sorted(int(q) for q in d[key]) == [4096, 65536, 1 << 20] and all(
            f["median"] > 0 for f in d[key].values()), key
    assert d["write_call_s"]["4096"] == d["small_write_s"]
    assert "every core busy" in cp.stdout
    # a new file under --mode auto, staged and straight through (calibrate
    # checked each run's counters), per call, publish included
    auto = d["auto_write_s"]
    assert sorted(int(q) for q in auto) == [4096, 65536, 256 << 10, 1 << 20, 4 << 20]
    assert all(f[way]["median"] > 0 for f in auto.values() for way in ("staged", "direct"))
    assert d["auto_write_start_s"]["median"] > 0   # (the program's start and exit, taken off each)
    from sluice.autolarge import auto_large_of
    a = auto_large_of(doc)
    assert a is not None and a.mount == doc["filesystem"]["mount_point"] and a.large >= 1
    assert "auto's first-write size" in cp.stdout
    assert d["shared_stripe"]["shared_MBps"]["median"] > 0 and d["shared_stripe"]["slowdown"]["median"] > 0
    assert doc["settings"]["caches_dropped"] is False


def test_calibrate_begins_no_round_that_would_end_past_its_budget(tmp_path: Path, monkeypatch) -> None:
    """Five rounds at most, three at least: after the third, a round is
    begun only if, at the pace so far, it ends within the budget (a file
    system with a slow round trip gets fewer rounds, not a longer wait)."""
    import time

    from sluice.bench import calibrate as cal

    said = []
    monkeypatch.setattr(cal.Calibration, "round", lambda self, k: (time.sleep(0.05), {"round": k})[1])
    c = cal.Calibration(tmp_path, rounds=5, files=10, size=1 << 20, procs=[1], nodes=0,
                        caches=cal.CacheDropper(enabled=False), progress=said.append)
    assert [r["round"] for r in c.run(budget_s=0.17)] == [0, 1, 2]
    assert "3 rounds" in said[-1] and "budget" in said[-1]
    c = cal.Calibration(tmp_path, rounds=5, files=10, size=1 << 20, procs=[1], nodes=0,
                        caches=cal.CacheDropper(enabled=False), progress=said.append)
    assert len(c.run(budget_s=10)) == 5
    c = cal.Calibration(tmp_path, rounds=2, files=10, size=1 << 20, procs=[1], nodes=0,
                        caches=cal.CacheDropper(enabled=False), progress=said.append)
    assert len(c.run(budget_s=0.01, least=2)) == 2   # (--rounds below three: all of them)


def test_calibrate_refuses_a_target_it_cannot_use(tmp_path: Path) -> None:
    from conftest import sluice
    from sluice.bench.calibrate import read_profile

    cp = sluice("bench", "calibrate", "--target", str(tmp_path / "missing"), "-o", str(tmp_path / "p.json"),
                check=False)
    assert cp.returncode != 0 and "missing" in cp.stderr and "Traceback" not in cp.stderr
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something else"}')
    with pytest.raises(UserError, match="not a file-system profile"):
        read_profile(other)
