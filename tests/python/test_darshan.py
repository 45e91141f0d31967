"""Darshan interop: `sluice export --darshan` writes logs PyDarshan reads with
the exact counters of known programs; `sluice report` and `sluice advise`
read Darshan logs (exported ones, and the ones shipped with PyDarshan) with
the totals PyDarshan gives; broken input is one line; CSV tables per process."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from conftest import bin_path, python_env, report_json, sluice
from test_cli import one_line_error
from test_mpiio import MPI_ENV, MPIRUN

darshan = pytest.importorskip("darshan")

from sluice.darshan import layout as L  # noqa: E402
from sluice.darshan.mapping import UNKNOWN  # noqa: E402
from sluice.darshan.recid import record_id  # noqa: E402
from sluice.logfmt import read_log  # noqa: E402

EXAMPLES = Path(darshan.__file__).parent / "examples" / "example_logs"


def export(logdir: Path, out: Path, *opts: str) -> tuple[Path, Path]:
    sluice("export", "--darshan", *opts, "-o", str(out), str(logdir))
    app = [p for p in out.glob("*.darshan") if not p.name.endswith(".fs.darshan")]
    assert len(app) == 1, list(out.iterdir())
    return app[0], app[0].with_name(app[0].name[: -len(".darshan")] + ".fs.darshan")


def records(path: Path) -> tuple[darshan.DarshanReport, dict[str, dict[tuple[str, int], dict]]]:
    """The report and, per module, (file name, rank) -> counters (integers and floats)."""
    rep = darshan.DarshanReport(str(path), read_all=True)
    out: dict[str, dict[tuple[str, int], dict]] = {}
    for mod in rep.records:
        for rec in rep.records[mod]:
            mid = {"POSIX": L.POSIX, "MPI-IO": L.MPIIO, "STDIO": L.STDIO}[mod]
            c = dict(zip(L.INT_NAMES[mid], (int(x) for x in rec["counters"])))
            c.update(zip(L.FLOAT_NAMES[mid], (float(x) for x in rec["fcounters"])))
            out.setdefault(mod, {})[(rep.name_records[rec["id"]], int(rec["rank"]))] = c
    return rep, out


def run_job(factory, name: str, *cmd: str, env: dict | None = None) -> tuple[Path, Path]:
    """`sluice run` (profile mode) of `cmd WORKDIR` in a fresh directory: its logs and its workdir."""
    base = factory.mktemp(name)
    work, logs = base / "work", base / "logs"
    work.mkdir()
    sluice("run", "--log-dir", str(logs), "--path", str(work), "--", *cmd, str(work), env=env)
    return logs, work


@pytest.fixture(scope="module")
def known_mix(tmp_path_factory) -> tuple[Path, Path]:
    return run_job(tmp_path_factory, "known_mix", bin_path("known_mix"))


@pytest.fixture(scope="module")
def mpiio_job(tmp_path_factory) -> tuple[Path, Path]:
    """mpiio_known on 4 ranks."""
    return run_job(tmp_path_factory, "mpiio", *MPIRUN, bin_path("mpiio_known"), env=MPI_ENV)


def test_counter_names_are_libdarshan_utils():
    from darshan.backend import cffi_backend as b

    for mid, name in ((L.POSIX, "POSIX"), (L.MPIIO, "MPIIO"), (L.STDIO, "STDIO")):
        assert L.INT_NAMES[mid] == b.counter_names(name)
        assert L.FLOAT_NAMES[mid] == b.fcounter_names(name)


def test_record_ids_are_darshans():
    """The ids Darshan itself gave the files in PyDarshan's example logs."""
    checked = 0
    for log in ("example.darshan", "dxt.darshan", "sample-badost.darshan", "ior_hdf5_example.darshan"):
        rep = darshan.DarshanReport(str(EXAMPLES / log), read_all=False)
        rep.read_name_records()
        for rid, name in rep.name_records.items():
            assert record_id(name) == rid, name
            checked += 1
    assert checked > 2000


def test_known_mix_exported_counters_are_exact(known_mix, tmp_path):
    logs, work = known_mix
    app, fs = export(logs, tmp_path / "out")
    (slog,) = [read_log(p) for p in logs.glob("*.sluice")]
    rep, recs = records(app)
    job = rep.metadata["job"]
    assert job["nprocs"] == 1 and job["log_ver"] == "3.41"
    assert (job["start_time_sec"], job["start_time_nsec"]) == divmod(slog.start_ns, 10**9)
    assert (job["end_time_sec"], job["end_time_nsec"]) == divmod(slog.end_ns, 10**9)
    assert job["uid"] == os.getuid()
    assert job["metadata"]["sluice_view"] == "app" and job["metadata"]["sluice_fs_log"] == fs.name
    assert rep.metadata["exe"] == f"{bin_path('known_mix')} {work}"
    # a directory only made and removed, a file only unlinked: no call Darshan counts, no record
    assert sorted(recs["POSIX"]) == [(str(work / "data.bin"), 0), (str(work / "sub/tmp"), 0)]
    d = recs["POSIX"][(str(work / "data.bin"), 0)]
    want = {"POSIX_OPENS": 2, "POSIX_DUPS": 0, "POSIX_READS": 13, "POSIX_WRITES": 16, "POSIX_SEEKS": 2,
            "POSIX_STATS": 2, "POSIX_FSYNCS": 1, "POSIX_BYTES_READ": 8192, "POSIX_BYTES_WRITTEN": 4096,
            "POSIX_MAX_BYTE_READ": 4095, "POSIX_MAX_BYTE_WRITTEN": 4095, "POSIX_CONSEC_WRITES": 15,
            "POSIX_SEQ_WRITES": 15, "POSIX_RW_SWITCHES": 1, "POSIX_SIZE_READ_0_100": 1,
            "POSIX_SIZE_READ_100_1K": 12, "POSIX_SIZE_WRITE_100_1K": 16, "POSIX_SIZE_WRITE_1K_10K": 0,
            "POSIX_FILENOS": -1, "POSIX_MODE": -1, "POSIX_ACCESS1_ACCESS": 256, "POSIX_ACCESS1_COUNT": 16,
            "POSIX_ACCESS2_ACCESS": 512, "POSIX_ACCESS2_COUNT": 8, "POSIX_ACCESS3_ACCESS": 1024,
            "POSIX_ACCESS3_COUNT": 4, "POSIX_ACCESS4_ACCESS": 0, "POSIX_STRIDE1_STRIDE": 0, "POSIX_STRIDE1_COUNT": 0,
            "POSIX_MEM_ALIGNMENT": 8, "POSIX_MEM_NOT_ALIGNED": 0, "POSIX_FASTEST_RANK": 0,
            "POSIX_RENAME_SOURCES": 0}
    assert {k: d[k] for k in want} == want
    runtime = (slog.end_ns - slog.start_ns) / 1e9
    assert 0 < d["POSIX_F_OPEN_START_TIMESTAMP"] <= d["POSIX_F_WRITE_START_TIMESTAMP"] \
        <= d["POSIX_F_WRITE_END_TIMESTAMP"] <= d["POSIX_F_CLOSE_END_TIMESTAMP"] <= runtime
    assert d["POSIX_F_CLOSE_START_TIMESTAMP"] == -1 and d["POSIX_F_WRITE_TIME"] > 0
    assert recs["POSIX"][(str(work / "sub/tmp"), 0)]["POSIX_RENAME_SOURCES"] == 1
    s = recs["STDIO"][(str(work / "text.txt"), 0)]
    assert {k: s[k] for k in ("STDIO_OPENS", "STDIO_READS", "STDIO_WRITES", "STDIO_SEEKS", "STDIO_FLUSHES",
                              "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN", "STDIO_MAX_BYTE_WRITTEN",
                              "STDIO_FDOPENS")} == {
        "STDIO_OPENS": 1, "STDIO_READS": 13, "STDIO_WRITES": 11, "STDIO_SEEKS": 2, "STDIO_FLUSHES": 1,
        "STDIO_BYTES_READ": 170, "STDIO_BYTES_WRITTEN": 85, "STDIO_MAX_BYTE_WRITTEN": 84, "STDIO_FDOPENS": -1}
    # profile mode: the fs view is the same
    rep_fs, recs_fs = records(fs)
    assert rep_fs.metadata["job"]["metadata"]["sluice_view"] == "fs"
    assert recs_fs["POSIX"][(str(work / "data.bin"), 0)]["POSIX_WRITES"] == 16


def test_a_dup_is_an_open_and_buffering_shows_in_the_fs_log(tmp_path):
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    f = work / "f"
    sluice("run", "--mode", "buffer", "--log-dir", str(logs), "--path", str(work), "--", bin_path("sluice-io"),
           f"creat:{f}", *["write:1000"] * 100, "dup", "write:10", "close", "swap", "close")
    app, fs = export(logs, tmp_path / "out")
    a = records(app)[1]["POSIX"][(str(f), 0)]
    assert (a["POSIX_OPENS"], a["POSIX_DUPS"], a["POSIX_WRITES"]) == (2, 1, 101)
    assert (a["POSIX_SIZE_WRITE_100_1K"], a["POSIX_SIZE_WRITE_0_100"], a["POSIX_BYTES_WRITTEN"]) == (100, 1, 100010)
    b = records(fs)[1]["POSIX"][(str(f), 0)]
    assert (b["POSIX_WRITES"], b["POSIX_SIZE_WRITE_10K_100K"], b["POSIX_BYTES_WRITTEN"]) == (1, 1, 100010)
    # report on the Darshan pair gives the sluice report's app and fs totals
    mine, theirs = report_json(logs), report_json(app)
    for side in ("app", "fs"):
        for k in ("POSIX_OPENS", "POSIX_DUPS", "POSIX_WRITES", "POSIX_BYTES_WRITTEN", "POSIX_SIZE_WRITE_100_1K",
                  "POSIX_SIZE_WRITE_10K_100K"):
            assert theirs[side][k] == mine[side][k], (side, k)


def test_processes_without_mpi_are_ranks_in_start_order(tmp_path_factory, tmp_path):
    logs, work = run_job(tmp_path_factory, "fork", bin_path("forkexec"), "fork")
    app, _ = export(logs, tmp_path / "out")
    rep, recs = records(app)
    assert rep.metadata["job"]["nprocs"] == 2
    # the parent started first
    assert sorted(recs["POSIX"]) == [(str(work / "child.dat"), 1), (str(work / "parent.dat"), 0)]
    assert recs["POSIX"][(str(work / "parent.dat"), 0)]["POSIX_WRITES"] == 3
    assert recs["POSIX"][(str(work / "child.dat"), 1)]["POSIX_WRITES"] == 5


MPIIO_APP = {"MPIIO_COLL_OPENS": 4, "MPIIO_INDEP_OPENS": 0, "MPIIO_INDEP_WRITES": 12, "MPIIO_COLL_WRITES": 4,
             "MPIIO_INDEP_READS": 4, "MPIIO_COLL_READS": 4, "MPIIO_SYNCS": 8, "MPIIO_BYTES_WRITTEN": 4 * 6106,
             "MPIIO_BYTES_READ": 4 * (100 + 6106), "MPIIO_RW_SWITCHES": 12, "MPIIO_SIZE_WRITE_AGG_0_100": 4,
             "MPIIO_SIZE_WRITE_AGG_100_1K": 8, "MPIIO_SIZE_WRITE_AGG_1K_10K": 4, "MPIIO_SIZE_READ_AGG_0_100": 4,
             "MPIIO_SIZE_READ_AGG_1K_10K": 4, "MPIIO_SPLIT_WRITES": 0, "MPIIO_HINTS": 0}   # MPI_INFO_NULL


def test_mpiio_job_exports_darshans_shared_record(mpiio_job, tmp_path):
    logs, work = mpiio_job
    app, _ = export(logs, tmp_path / "out")
    rep, recs = records(app)
    assert rep.metadata["job"]["nprocs"] == 4
    assert sorted(recs["MPI-IO"]) == [(str(work / "known.dat"), -1)]
    m = recs["MPI-IO"][(str(work / "known.dat"), -1)]
    assert {k: m[k] for k in MPIIO_APP} == MPIIO_APP
    assert m["MPIIO_FASTEST_RANK"] in range(4) and m["MPIIO_SLOWEST_RANK"] in range(4)
    assert m["MPIIO_FASTEST_RANK_BYTES"] == m["MPIIO_SLOWEST_RANK_BYTES"] == 6106 + 6206
    assert 0 < m["MPIIO_F_FASTEST_RANK_TIME"] <= m["MPIIO_F_SLOWEST_RANK_TIME"]
    assert m["MPIIO_F_VARIANCE_RANK_TIME"] >= 0 and m["MPIIO_F_VARIANCE_RANK_BYTES"] == 0
    p = recs["POSIX"][(str(work / "known.dat"), -1)]
    assert p["POSIX_BYTES_WRITTEN"] == 4 * 6106
    # each rank's own lock-test file stays a record of its rank
    assert {r for (n, r) in recs["POSIX"] if ".locktest." in n} == {0, 1, 2, 3}
    # --per-rank: Darshan's DARSHAN_DISABLE_SHARED_FILE_REDUCTION layout
    per_rank, _ = export(logs, tmp_path / "per-rank", "--per-rank")
    ranks = records(per_rank)[1]["MPI-IO"]
    assert sorted(r for (_, r) in ranks) == [0, 1, 2, 3]
    assert all(c["MPIIO_COLL_OPENS"] == 1 and c["MPIIO_INDEP_WRITES"] == 3 and c["MPIIO_FASTEST_RANK"] == 0
               for c in ranks.values())


def _heatmaps(path: Path) -> dict[str, dict]:
    """PyDarshan's heatmaps of a log: module -> its bins' width and count,
    and per rank the bytes written and read in all its bins."""
    rep = darshan.DarshanReport(str(path), read_all=True)
    out = {}
    for mod, h in rep.heatmaps.items():
        w, r = h.to_df(ops=["write"]), h.to_df(ops=["read"])
        out[mod] = {"width": h._bin_width_seconds, "nbins": h._nbins,
                    "write": {int(k): int(v) for k, v in w.sum(axis=1).items()},
                    "read": {int(k): int(v) for k, v in r.sum(axis=1).items()}}
    return out


@pytest.mark.parametrize("job", ["known_mix", "mpiio_job"])
def test_the_export_has_a_heatmap_per_module_with_each_ranks_bytes(job, request, tmp_path):
    from sluice.darshan.heatmap import bins_for

    logs, _ = request.getfixturevalue(job)
    app, fs = export(logs, tmp_path / "out")
    rep, recs = records(app)
    j = report_json(logs, "--per-process")
    rows = [r for r in j["per_process"] if r["rank"] >= 0] or j["per_process"]
    width, nbins = bins_for((max(r["end_ns"] for r in rows) - min(r["start_ns"] for r in rows)) / 1e9)
    for view, side in ((app, "app"), (fs, "fs")):
        got = _heatmaps(view)
        want = {}
        for i, r in enumerate(sorted(rows, key=lambda r: (r["start_ns"], r["pid"]))):
            rank = r["rank"] if r["rank"] >= 0 else i
            for mod, darshan_mod, written, read in (("POSIX", "POSIX", "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ"),
                                                    ("STDIO", "STDIO", "STDIO_BYTES_WRITTEN", "STDIO_BYTES_READ"),
                                                    ("MPIIO", "MPI-IO", "MPIIO_BYTES_WRITTEN", "MPIIO_BYTES_READ")):
                c = r["modules"].get(darshan_mod, {}).get(side, {}).get("counters", {})
                if c.get(written, 0) > 0 or c.get(read, 0) > 0:
                    m = want.setdefault(mod, {"width": width, "nbins": nbins, "write": {}, "read": {}})
                    m["write"][rank], m["read"][rank] = c.get(written, 0), c.get(read, 0)
        assert got == want, side
    expected = {"known_mix": ["POSIX", "STDIO"], "mpiio_job": ["MPIIO", "POSIX"]}[job]
    assert sorted(got) == expected


@pytest.mark.parametrize("job", ["known_mix", "mpiio_job"])
def test_counters_mapped_a_column_at_a_time_are_to_darshan_of_each_record(job, request):
    """The export maps the merged rows' counters to Darshan's a column at a
    time (to_darshan_columns): the same values as to_darshan of each row."""
    from sluice.darshan.export import assign_ranks, rank_table
    from sluice.darshan.mapping import SLUICE_MODULES, to_darshan, to_darshan_columns, visible, visible_rows
    from sluice.report.model import load_logs, select_job

    logs, _ = request.getfixturevalue(job)
    rj = assign_ranks(*select_job(load_logs([logs], sluice_only=True)))
    rt = rank_table(rj)
    checked = 0
    for side in ("app", "fs"):
        rows_counters = rt.tables[side].all_counters()
        for mid, prefix in SLUICE_MODULES.items():
            rows = np.flatnonzero(rt.has_module(prefix))
            ints, floats = to_darshan_columns(mid, rt.get(side, rows), len(rows))
            for k, r in enumerate(rows.tolist()):
                c = {n: v for n, v in rows_counters[r].items() if n.startswith(prefix + "_")}
                want_i, want_f = to_darshan(mid, c)
                assert (ints[k].tolist(), floats[k].tolist()) == (want_i, want_f), (side, rt.keys[r])
                assert bool(visible_rows(ints[k : k + 1], mid)[0]) == visible(want_i, mid)
                checked += 1
    assert checked >= 8


def test_record_ids_of_many_names_at_once_are_record_id_of_each():
    from sluice.darshan.recid import record_ids

    names = ["", "a", "heatmap:POSIX", "x" * 23, "y" * 24, "z" * 25, "é/ü" * 30, "/scratch/run/p1/f000017.dat"]
    names += [f"/d{i}/" + "n" * (i % 61) for i in range(200)]
    assert record_ids(names).tolist() == [record_id(n) for n in names]
    assert record_ids(["heatmap:POSIX", "heatmap:MPIIO", "heatmap:STDIO"]).tolist() == \
        [16592106915301738621, 3668870418325792824, 3989511027826779520]     # PyDarshan's table of them


SHARED_TOTALS = [f"{m}_{k}" for m in ("POSIX", "STDIO") for k in
                 ("READS", "WRITES", "SEEKS", "BYTES_READ", "BYTES_WRITTEN")] + [
    "POSIX_OPENS", "POSIX_STATS", "POSIX_FSYNCS", "POSIX_FDSYNCS", "POSIX_DUPS", "POSIX_RENAMES", "POSIX_RW_SWITCHES",
    "POSIX_CONSEC_WRITES", "POSIX_SEQ_READS", "STDIO_OPENS", "STDIO_FLUSHES", "POSIX_MAX_BYTE_WRITTEN",
    "MPIIO_COLL_OPENS", "MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_COLL_READS", "MPIIO_SYNCS",
    "MPIIO_BYTES_WRITTEN", "MPIIO_BYTES_READ", "MPIIO_SIZE_WRITE_100_1K"] + [
    f"POSIX_SIZE_{k}_{b}" for k in ("READ", "WRITE") for b in ("0_100", "100_1K", "1K_10K")]


@pytest.mark.parametrize("job", ["known_mix", "mpiio_job"])
def test_report_on_the_export_equals_report_on_the_sluice_logs(job, request, tmp_path):
    logs, _ = request.getfixturevalue(job)
    out = tmp_path / "out"
    app, _ = export(logs, out)
    mine = report_json(logs)
    for theirs in (report_json(app), report_json(out)):   # the log, or the directory with both views
        assert theirs["processes"] == mine["processes"]
        assert theirs["runtime_s"] == pytest.approx(mine["runtime_s"], abs=1e-6)
        for side in ("app", "fs"):
            assert {k: theirs[side].get(k, 0) for k in SHARED_TOTALS} == \
                {k: mine[side].get(k, 0) for k in SHARED_TOTALS}, side
        byfile = {f["path"]: f for f in mine["files"]}
        for f in theirs["files"]:
            assert f["processes"] == byfile[f["path"]]["processes"]
            assert f["app"].get("POSIX_BYTES_WRITTEN") == byfile[f["path"]]["app"].get("POSIX_BYTES_WRITTEN")
    text = sluice("report", str(app)).stdout
    assert f"processes: {mine['processes']}" in text
    html = tmp_path / "r.html"
    sluice("report", "--html", str(html), str(app))
    assert "<html" in html.read_text()


def test_advise_reads_a_darshan_log(mpiio_job, tmp_path):
    logs, _ = mpiio_job
    app, _ = export(logs, tmp_path / "out")
    mine = json.loads(sluice("advise", "--json", str(logs)).stdout)
    theirs = json.loads(sluice("advise", "--json", str(app)).stdout)
    # the same findings, but for rank imbalance: from the export it is judged on the reduced shared record's
    # slowest and fastest rank, from sluice's logs on each rank's own times (both depend on the run's timing)
    ids = lambda r: [f["id"] for f in r["findings"] if f["id"] not in ("rank-imbalance", "nothing-to-gain")]  # noqa
    assert ids(theirs) == ids(mine)
    assert all("records Darshan reduced over the ranks" in f["evidence"]["text"] for f in theirs["findings"]
               if f["id"] == "rank-imbalance")
    assert sluice("advise", str(EXAMPLES / "sample-badost.darshan")).stdout


@pytest.mark.parametrize("log", sorted(p.name for p in EXAMPLES.glob("*.darshan")))
def test_pydarshans_example_logs_give_pydarshans_totals(log):
    rep = darshan.DarshanReport(str(EXAMPLES / log), read_all=False)
    want: dict[str, int] = {}
    for mod, prefix in (("POSIX", "POSIX"), ("STDIO", "STDIO"), ("MPI-IO", "MPIIO")):
        if mod not in rep.modules:
            continue
        rep.mod_read_all_records(mod, warnings=False)
        c = rep.records[mod].to_df()["counters"]
        for k in ("BYTES_READ", "BYTES_WRITTEN", "READS" if prefix != "MPIIO" else "INDEP_READS",
                  "WRITES" if prefix != "MPIIO" else "INDEP_WRITES"):
            want[f"{prefix}_{k}"] = int(c[f"{prefix}_{k}"].clip(lower=0).sum())
    r = report_json(EXAMPLES / log)
    assert {k: r["app"].get(k, 0) for k in want} == want
    assert r["processes"] == rep.metadata["job"]["nprocs"]
    assert r["runtime_s"] == pytest.approx(rep.metadata["job"]["run_time"])


def _with_header(data: bytes, mod_ver: dict[int, int]) -> bytes:
    f = list(L.HEADER.unpack_from(data))
    for mid, v in mod_ver.items():
        f[6 + 2 * L.MAX_MODS + mid] = v
    return L.HEADER.pack(*f) + data[L.HEADER.size:]


def _with_module(data: bytes, mid: int, change) -> bytes:
    """The log with one module region rewritten, the regions after it moved along."""
    f = list(L.HEADER.unpack_from(data))
    off, length = f[6 + 2 * mid], f[7 + 2 * mid]
    z = zlib.compress(change(zlib.decompress(data[off : off + length])))
    f[7 + 2 * mid] = len(z)
    for m in range(L.MAX_MODS):
        if f[6 + 2 * m] > off:
            f[6 + 2 * m] += len(z) - length
    return L.HEADER.pack(*f) + data[L.HEADER.size:off] + z + data[off + length:]


def _broken(tmp_path: Path, app: Path) -> dict[str, Path]:
    data = app.read_bytes()
    mod_off = L.HEADER.unpack_from(data)[6 + 2 * L.POSIX]
    flipped = bytearray(data)
    flipped[mod_off + 6] ^= 0xFF
    cases = {"truncated": data[: len(data) - 40], "header only": data[:100], "module bytes flipped": bytes(flipped),
             "bad version": b"9.99" + data[4:], "bad magic": data[:8] + b"\0" * 8 + data[16:],
             "job region garbage": data[: L.HEADER.size] + zlib.compress(b"x" * 50) + data[L.HEADER.size + 200:],
             "not a log": b"hello, world\n" * 10,
             "newer POSIX module": _with_header(data, mod_ver={L.POSIX: 99}),
             "bad compression type": data[:16] + b"\x07" + data[17:],     # crashed libdarshan-util
             "record cut off": _with_module(data, L.STDIO, lambda body: body[:-8])}
    out = {}
    for name, b in cases.items():
        p = tmp_path / (name.replace(" ", "_") + ".darshan")
        p.write_bytes(b)
        out[name] = p
    return out


def test_broken_darshan_logs_are_one_line_errors(known_mix, tmp_path):
    app, _ = export(known_mix[0], tmp_path / "out")
    for name, p in _broken(tmp_path, app).items():
        for verb in ("report", "advise"):
            cp = sluice(verb, str(p), check=False)
            assert cp.returncode == 1, (name, cp.stderr)
            line = one_line_error(cp)
            assert str(p) in line, (name, line)
    # inside a directory a broken log is skipped with a warning, the good one reported
    d = tmp_path / "dir"
    d.mkdir()
    (d / "good.darshan").write_bytes(app.read_bytes())
    (d / "bad.darshan").write_bytes(app.read_bytes()[:-40])
    cp = sluice("report", "--json", str(d))
    assert "bad.darshan" in cp.stderr and json.loads(cp.stdout)["app"]["POSIX_WRITES"] == 16


def test_an_export_beside_its_sluice_logs_is_not_counted_twice(known_mix, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for p in known_mix[0].iterdir():
        (logs / p.name).write_bytes(p.read_bytes())
    sluice("export", "--darshan", "-o", str(logs), str(logs))
    cp = sluice("report", "--json", str(logs))
    assert json.loads(cp.stdout)["app"]["POSIX_WRITES"] == 16
    assert "a Darshan export of sluice logs also given; skipped" in cp.stderr


def test_without_pydarshan_a_darshan_log_is_a_one_line_error(known_mix, tmp_path):
    app, _ = export(known_mix[0], tmp_path / "out")
    shim = tmp_path / "shim" / "darshan"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('no PyDarshan here')\n")
    env = python_env()
    env["PYTHONPATH"] = f"{shim.parent}{os.pathsep}{env['PYTHONPATH']}"
    cp = sluice("report", str(app), check=False, env=env)
    assert cp.returncode == 1
    assert "needs PyDarshan" in one_line_error(cp)


def test_export_takes_sluice_logs_and_a_format(known_mix, tmp_path):
    app, _ = export(known_mix[0], tmp_path / "out")
    cp = sluice("export", "--darshan", "-o", str(tmp_path / "again"), str(app), check=False)
    assert "a Darshan log" in one_line_error(cp)
    cp = sluice("export", "-o", str(tmp_path / "x"), str(known_mix[0]), check=False)
    assert "--darshan, --csv or --parquet" in one_line_error(cp)


def test_csv_tables_have_a_row_per_process_file_and_side(mpiio_job, known_mix, tmp_path):
    logs, work = mpiio_job
    out = sluice("export", "--csv", "-o", str(tmp_path / "t"), str(logs)).stdout.split()
    assert sorted(Path(p).name for p in out) == ["MPI-IO.csv", "POSIX.csv"]
    rows = list(csv.DictReader(open(tmp_path / "t" / "MPI-IO.csv")))
    assert sorted((r["side"], r["rank"]) for r in rows) == sorted((s, str(i)) for s in ("app", "fs") for i in range(4))
    assert all(r["file"] == str(work / "known.dat") and r["MPIIO_INDEP_WRITES"] == "3" and
               r["MPIIO_SIZE_WRITE_AGG_100_1K"] == "2" and r["id"] == str(record_id(r["file"])) for r in rows)
    logs, work = known_mix
    sluice("export", "--csv", "-o", str(tmp_path / "k"), str(logs))
    posix = {(r["file"], r["side"]): r for r in csv.DictReader(open(tmp_path / "k" / "POSIX.csv"))}
    assert posix[(str(work / "data.bin"), "app")]["POSIX_BYTES_WRITTEN"] == "4096"
    assert posix[(str(work / "sub"), "app")]["SLUICE_POSIX_MKDIRS"] == "1"
    assert posix[(str(work / "data.bin"), "fs")]["rank"] == "0"
    cp = sluice("export", "--parquet", "-o", str(tmp_path / "p"), str(logs), check=False)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert "needs pyarrow" in one_line_error(cp)
        return
    # the same table as the CSV, with counters as numbers: a notebook reads it typed
    assert cp.returncode == 0, cp.stderr
    table = pq.read_table(tmp_path / "p" / "POSIX.parquet")
    rows = table.to_pylist()
    assert len(rows) == len(posix)
    by_key = {(r["file"], r["side"]): r for r in rows}
    assert by_key[(str(work / "data.bin"), "app")]["POSIX_BYTES_WRITTEN"] == 4096
    assert by_key[(str(work / "sub"), "app")]["SLUICE_POSIX_MKDIRS"] == 1
    assert by_key[(str(work / "data.bin"), "fs")]["id"] == record_id(str(work / "data.bin"))  # a u64 above 2^63 too
    assert str(table.schema.field("POSIX_BYTES_WRITTEN").type) == "int64"
    assert str(table.schema.field("POSIX_F_WRITE_TIME").type) == "double"
    for key, r in by_key.items():
        assert {k: str(v) for k, v in r.items() if k.startswith("POSIX_") and "_F_" not in k} == \
            {k: v for k, v in posix[key].items() if k.startswith("POSIX_") and "_F_" not in k}


# ------------------------------------------------- against a real Darshan run

# A Darshan runtime library to compare with, when one is built (docs/darshan.md
# says how): SLUICE_DARSHAN_LIB built --without-mpi, SLUICE_DARSHAN_MPI_LIB with MPI.
DARSHAN_LIB = os.environ.get("SLUICE_DARSHAN_LIB")
DARSHAN_MPI_LIB = os.environ.get("SLUICE_DARSHAN_MPI_LIB")

# Where the export and Darshan 3.4.7 differ by design (docs/darshan.md, "Compared with Darshan"):
# what sluice does not record (-1 in the export), what Darshan misses or counts otherwise,
# and what depends on timing (the size of the slowest call too).
BY_DESIGN = {n for m in (L.POSIX, L.MPIIO, L.STDIO) for n in UNKNOWN[m]} | {
    "POSIX_STATS", "POSIX_MMAPS", "POSIX_RENAMED_FROM", "POSIX_SEQ_READS", "POSIX_SEQ_WRITES", "STDIO_READS"} | {
    n for m in (L.POSIX, L.MPIIO, L.STDIO) for n in L.INT_NAMES[m] + L.FLOAT_NAMES[m]
    if "_RANK" in n or "_F_" in n or "_TIME_SIZE" in n}


def _real_darshan(lib: str, log: Path, cmd: list[str], env: dict | None = None) -> None:
    e = dict(os.environ, DARSHAN_LOGFILE=str(log), **(env or {}))
    if cmd[0] == "mpirun":
        cmd = cmd[:1] + ["-x", "DARSHAN_LOGFILE", "-x", f"LD_PRELOAD={lib}"] + cmd[1:]
    else:
        e.update(LD_PRELOAD=lib, DARSHAN_ENABLE_NONMPI="1")
    subprocess.run(cmd, env=e, check=True, capture_output=True, timeout=120)


def _by_file(recs: dict[str, dict[tuple[str, int], dict]], work: Path) -> dict[tuple[str, str, int], dict]:
    return {(mod, os.path.relpath(name, work), rank): c for mod, rr in recs.items() for (name, rank), c in rr.items()
            if name.startswith(str(work) + "/")}


@pytest.mark.parametrize("prog", ["known_mix", "mpiio_known", "access_pattern"])
def test_the_export_has_darshans_counters(prog, tmp_path_factory, tmp_path):
    lib = DARSHAN_MPI_LIB if prog == "mpiio_known" else DARSHAN_LIB
    if not lib:
        pytest.skip("no Darshan runtime to compare with (set SLUICE_DARSHAN_LIB, SLUICE_DARSHAN_MPI_LIB)")
    launch = MPIRUN if prog == "mpiio_known" else []
    env = MPI_ENV if prog == "mpiio_known" else None
    logs, work = run_job(tmp_path_factory, prog, *launch, bin_path(prog), env=env)
    app, _ = export(logs, tmp_path / "out")
    # Darshan 3.4.7's MPI log is now and then one PyDarshan cannot inflate
    # (its modules missing from what it reads): the reference run is retried
    for attempt in range(3):
        real_work = tmp_path / f"real{attempt}"
        real_work.mkdir()
        real_log = tmp_path / f"real{attempt}.darshan"
        _real_darshan(lib, real_log, [*launch, bin_path(prog), str(real_work)], env)
        real = _by_file(records(real_log)[1], real_work)
        if prog != "mpiio_known" or {m for m, _, _ in real} >= {"POSIX", "MPI-IO"}:
            break
    ours = _by_file(records(app)[1], work)
    # Darshan keeps a record for a rename's target (known_mix renames sub/tmp to sub/tmp2, then unlinks it)
    assert set(ours) == set(real) - {("POSIX", "sub/tmp2", 0)}
    for key, c in ours.items():
        assert {n: v for n, v in c.items() if n not in BY_DESIGN} == \
            {n: v for n, v in real[key].items() if n not in BY_DESIGN}, key
    rep = darshan.DarshanReport(str(real_log), read_all=False)
    assert rep.metadata["job"]["nprocs"] == records(app)[0].metadata["job"]["nprocs"]


def test_lustre_layouts_exported_as_darshans_lustre_module(tmp_path):
    """Files on a Lustre mount whose layout the runtime read at open become
    records of Darshan's LUSTRE module (one per file, rank -1 when several
    ranks opened it), which PyDarshan reads; files elsewhere do not. (No
    Lustre here: the logs are made in Python, as the runtime writes them.)"""
    from sluice.darshan.export import export_job
    from sluice.logfmt import Log, Record

    def rec(path: str, stripes: int, size: int) -> Record:
        c = {"POSIX_OPENS": 1, "POSIX_WRITES": 4, "POSIX_BYTES_WRITTEN": 4 << 20, "POSIX_MAX_BYTE_WRITTEN": (4 << 20) - 1,
             "POSIX_MAX_BYTE_READ": -1, "POSIX_STRIPE_SIZE": size, "POSIX_STRIPE_COUNT": stripes,
             "POSIX_LAYOUT_COMPONENTS": 1, "POSIX_F_WRITE_TIME": 0.5}
        return Record("POSIX", record_id(path), path, 0, dict(c), dict(c))

    start = 1_700_000_000 * 10 ** 9
    logs = [Log(tmp_path / f"{r}.sluice", (3, 1), 0, 100 + r, 1, r, 2, start, start + 10 ** 9, "exit",
                {"job_id": "7", "host": "n1", "exe": "/bin/sim", "cmdline": "/bin/sim", "mode": "profile",
                 "mounts": "ext4\t/\nlustre\t/lus\n"}, {},
                [rec("/lus/run/shared.dat", 8, 4 << 20), rec(f"/lus/run/out.{r}", 1, 1 << 20),
                 rec(f"/home/u/log.{r}", 0, 0)]) for r in range(2)]
    for l in logs:
        l.path.write_bytes(b"")
    ex = export_job("7", logs, tmp_path)
    rep = darshan.DarshanReport(str(ex.app), read_all=True)
    got = {}
    for i in range(len(rep.records["LUSTRE"])):
        r = rep.records["LUSTRE"][i]
        (comp,) = r["components"]
        got[(rep.name_records[r["id"]], int(r["rank"]))] = (comp["counters"].tolist(), comp["ost_ids"].tolist())
    # LUSTRE_COMP_STRIPE_SIZE, _STRIPE_COUNT, _PATTERN (RAID0), _FLAGS, _EXT_START, _EXT_END (EOF), _MIRROR_ID
    assert got == {("/lus/run/shared.dat", -1): ([4 << 20, 8, 1, 0, 0, -1, 0], [-1] * 8),
                   ("/lus/run/out.0", 0): ([1 << 20, 1, 1, 0, 0, -1, 0], [-1]),
                   ("/lus/run/out.1", 1): ([1 << 20, 1, 1, 0, 0, -1, 0], [-1])}
