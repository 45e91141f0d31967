"""The H5F and H5D modules: exact counters of a known HDF5 program
(tests/progs/h5_known.c) in the log, the report and the Darshan export read
by PyDarshan; h5py (its own libhdf5, loaded privately) under sluice run;
programs without HDF5; parallel HDF5 with collective transfers."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NATIVE, bin_path, file_entry, nonzero, report_json, sluice

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}

# The slowest call's size depends on timing: checked apart.
TIMED = ("H5D_MAX_READ_TIME_SIZE", "H5D_MAX_WRITE_TIME_SIZE")

# What h5_known asks, per record (app side; the fs side is the same).
KNOWN = {
    "k.h5": {"H5F_OPENS": 2, "H5F_FLUSHES": 1},
    "k.h5.missing": {"H5F_ERRORS": 1},
    "k.h5:/chunked": {
        "H5D_OPENS": 2, "H5D_READS": 2, "H5D_WRITES": 5, "H5D_BYTES_READ": 6000, "H5D_BYTES_WRITTEN": 4820,
        "H5D_RW_SWITCHES": 1, "H5D_REGULAR_HYPERSLAB_SELECTS": 5, "H5D_POINT_SELECTS": 1,
        "H5D_SIZE_READ_AGG_1K_10K": 2, "H5D_SIZE_WRITE_AGG_0_100": 1, "H5D_SIZE_WRITE_AGG_1K_10K": 4,
        # 4 writes and 1 read of 10 x 30 ints; the whole dataset (no shape: H5S_ALL); 5 points
        "H5D_ACCESS1_ACCESS": 1200, "H5D_ACCESS1_LENGTH_D1": 30, "H5D_ACCESS1_LENGTH_D2": 10,
        "H5D_ACCESS1_STRIDE_D1": 1, "H5D_ACCESS1_STRIDE_D2": 1, "H5D_ACCESS1_COUNT": 5,
        "H5D_ACCESS2_ACCESS": 4800, "H5D_ACCESS2_COUNT": 1, "H5D_ACCESS3_ACCESS": 20, "H5D_ACCESS3_COUNT": 1,
        "H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 1200, "H5D_DATATYPE_SIZE": 4,
        "H5D_CHUNK_SIZE_D1": 15, "H5D_CHUNK_SIZE_D2": 10},
    "k.h5:/contig": {
        "H5D_OPENS": 1, "H5D_READS": 1, "H5D_WRITES": 1, "H5D_FLUSHES": 1, "H5D_BYTES_READ": 320,
        "H5D_BYTES_WRITTEN": 1024, "H5D_RW_SWITCHES": 1, "H5D_IRREGULAR_HYPERSLAB_SELECTS": 1,
        "H5D_SIZE_READ_AGG_100_1K": 1, "H5D_SIZE_WRITE_AGG_100_1K": 1,
        "H5D_ACCESS1_ACCESS": 1024, "H5D_ACCESS1_COUNT": 1, "H5D_ACCESS2_ACCESS": 320, "H5D_ACCESS2_COUNT": 1,
        "H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 128, "H5D_DATATYPE_SIZE": 8},
    "k.h5:/g/v": {
        "H5D_OPENS": 2, "H5D_READS": 1, "H5D_WRITES": 1, "H5D_BYTES_READ": 16, "H5D_BYTES_WRITTEN": 40,
        "H5D_RW_SWITCHES": 1, "H5D_REGULAR_HYPERSLAB_SELECTS": 1, "H5D_SIZE_READ_AGG_0_100": 1,
        "H5D_SIZE_WRITE_AGG_0_100": 1, "H5D_ACCESS1_ACCESS": 40, "H5D_ACCESS1_COUNT": 1,
        "H5D_ACCESS2_ACCESS": 16, "H5D_ACCESS2_LENGTH_D1": 4, "H5D_ACCESS2_STRIDE_D1": 2, "H5D_ACCESS2_COUNT": 1,
        "H5D_DATASPACE_NDIMS": 1, "H5D_DATASPACE_NPOINTS": 10, "H5D_DATATYPE_SIZE": 4, "H5D_USE_DEPRECATED": 1},
}


def h5(counters: dict) -> dict:
    return {k: v for k, v in nonzero(counters, pattern=True).items() if k.startswith("H5") and k not in TIMED}


@pytest.fixture(scope="module")
def known(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("h5known")
    logs = work / "logs"
    sluice("run", "--log-dir", str(logs), "--path", str(work), "--", bin_path("h5_known"), str(work / "k.h5"))
    return work, logs


def test_known_counters(known):
    work, logs = known
    r = report_json(logs)
    for name, want in KNOWN.items():
        e = file_entry(r, f"{work}/{name}")
        assert h5(e["app"]) == want, name
        assert e["fs"] == e["app"]
    chunked = file_entry(r, f"{work}/k.h5:/chunked")["app"]
    assert chunked["H5D_MAX_WRITE_TIME_SIZE"] in (20, 1200)
    assert chunked["H5D_MAX_READ_TIME_SIZE"] in (1200, 4800)
    # the order of a dataset's life, in seconds since the process started
    assert 0 < chunked["H5D_F_OPEN_START_TIMESTAMP"] < chunked["H5D_F_WRITE_START_TIMESTAMP"] \
        < chunked["H5D_F_WRITE_END_TIMESTAMP"] < chunked["H5D_F_READ_START_TIMESTAMP"] \
        < chunked["H5D_F_CLOSE_START_TIMESTAMP"] < chunked["H5D_F_OPEN_END_TIMESTAMP"] \
        < chunked["H5D_F_READ_END_TIMESTAMP"] < chunked["H5D_F_CLOSE_END_TIMESTAMP"]
    assert chunked["H5D_F_WRITE_TIME"] > 0 and chunked["H5D_F_READ_TIME"] > 0 and chunked["H5D_F_META_TIME"] > 0
    # datasets are listed apart: the files' list (and its count) holds files only
    assert sorted(e["path"] for e in r["files"]) == [f"{work}/k.h5", f"{work}/k.h5.missing"]
    assert sorted(e["path"] for e in r["datasets"]) == [f"{work}/k.h5:/{n}" for n in ("chunked", "contig", "g/v")]
    f = file_entry(r, f"{work}/k.h5")["app"]
    assert 0 < f["H5F_F_OPEN_START_TIMESTAMP"] < f["H5F_F_CLOSE_START_TIMESTAMP"] < f["H5F_F_OPEN_END_TIMESTAMP"] \
        < f["H5F_F_CLOSE_END_TIMESTAMP"] <= chunked["H5D_F_CLOSE_END_TIMESTAMP"] + 1
    assert f["H5F_F_META_TIME"] > 0
    # HDF5's own POSIX I/O is still counted underneath
    assert f["POSIX_BYTES_WRITTEN"] > 4820 + 1024 + 40


def test_report_text_has_the_hdf5_section(known):
    work, logs = known
    out = sluice("report", str(logs)).stdout
    section = out[out.index("HDF5: 1 file, 3 datasets"):]
    rows = [l.split() for l in section.splitlines()[4:] if len(l.split()) >= 9][:3]
    # (the dataset's name may fold onto a second line; its numbers are on the first)
    assert [r[1:] for r in rows] == [
        ["2", "2", "5", "10.6", "KiB", "5", "regular,", "1", "points", "2", "1,200", "10x15"],
        ["1", "1", "1", "1.3", "KiB", "1", "irregular", "2", "128", "-"],
        ["2", "1", "1", "56", "B", "1", "regular", "1", "10", "-"]]


def test_report_html_has_the_hdf5_section(known, tmp_path):
    work, logs = known
    sluice("report", "--html", str(tmp_path / "r.html"), str(logs))
    page = (tmp_path / "r.html").read_text()
    section = page[page.index('<section id="hdf5">'):]
    section = section[: section.index("</section>")]
    assert "<h2>HDF5: 1 file, 3 datasets</h2>" in section
    assert re.findall(r'data-dataset="([^"]+)"', section) == [f"{work}/k.h5:/{n}" for n in ("chunked", "contig", "g/v")]
    row = section[section.index(f'data-dataset="{work}/k.h5:/chunked"'):].split("</tr>")[0]
    assert re.findall(r'<td class="num">([^<]*)</td>', row) == ["2", "2", "5", "10.6 KiB", "2", "1,200"]
    assert "<td>5 regular, 1 points</td>" in row and "<td>10x15</td>" in row
    # the files section counts files, not datasets
    assert "2 files recorded" in page


def test_darshan_export_read_by_pydarshan(known, tmp_path):
    darshan = pytest.importorskip("darshan")
    from darshan.backend import cffi_backend as b

    from sluice.darshan.recid import record_id

    work, logs = known
    sluice("export", "--darshan", str(logs), "-o", str(tmp_path))
    app = next(p for p in tmp_path.glob("*.darshan") if not p.name.endswith(".fs.darshan"))
    rep = darshan.DarshanReport(str(app), read_all=True)
    assert {"H5F", "H5D"} <= set(rep.modules)
    got = {}
    for mod in ("H5F", "H5D"):
        for rec in rep.records[mod].to_list():
            c = dict(zip(b.counter_names(mod), (int(x) for x in rec["counters"])))
            c.update(zip(b.fcounter_names(mod), rec["fcounters"]))
            name = rep.name_records[rec["id"]]
            got[name] = c
            assert rec["rank"] == 0
            if mod == "H5D":
                assert rec["file_rec_id"] == record_id(f"{work}/k.h5")
    # the failed open has no Darshan counter: no record
    assert set(got) == {f"{work}/{n}" for n in KNOWN if n != "k.h5.missing"}
    for name, want in KNOWN.items():
        if name == "k.h5.missing":
            continue
        c = got[f"{work}/{name}"]
        moved = {k: v for k, v in c.items() if v and "_F_" not in k and k not in TIMED}
        assert moved == want, name
        assert all(c[k] == 0 for k in c if "_RANK" in k)
    assert got[f"{work}/k.h5:/chunked"]["H5D_F_WRITE_TIME"] > 0


# A Darshan runtime built with its HDF5 module (docs/darshan.md, "HDF5"), to compare with.
DARSHAN_HDF5_LIB = os.environ.get("SLUICE_DARSHAN_HDF5_LIB")


def _darshan_records(path: Path) -> dict[str, dict]:
    import darshan
    from darshan.backend import cffi_backend as b

    rep = darshan.DarshanReport(str(path), read_all=True)
    out = {}
    for mod in ("H5F", "H5D"):
        for rec in rep.records[mod].to_list():
            c = dict(zip(b.counter_names(mod), (int(x) for x in rec["counters"])))
            out[rep.name_records[rec["id"]]] = {k: v for k, v in c.items()
                                                if k not in TIMED and "_RANK" not in k}
    return out


@pytest.mark.skipif(not DARSHAN_HDF5_LIB, reason="no Darshan with its HDF5 module (set SLUICE_DARSHAN_HDF5_LIB)")
def test_h5_counters_equal_darshans(known, tmp_path):
    """h5_known under Darshan 3.4.7's HDF5 module and under sluice: every
    H5F/H5D counter equal once Darshan's two quirks are undone (the dataset
    names it joins without a "/", so "/g" + "v" is "/gv" and "/chunked"
    opened from the file is a second record "//chunked"; the access shapes it
    reads from the end of HDF5's five-slot arrays, so a rank-n selection's
    last dimension is its D(6-n) instead of D1)."""
    from sluice.report.model import merge_counters

    work, logs = known
    dwork = tmp_path / "d"
    dwork.mkdir()
    env = dict(os.environ, LD_PRELOAD=DARSHAN_HDF5_LIB, DARSHAN_LOGPATH=str(tmp_path), DARSHAN_ENABLE_NONMPI="1")
    subprocess.run([bin_path("h5_known"), str(dwork / "k.h5")], env=env, check=True, timeout=60)
    theirs: dict[str, dict] = {}
    for name, c in _darshan_records(next(tmp_path.rglob("*.darshan"))).items():
        name = name.replace(str(dwork), str(work)).replace(":/gv", ":/g/v").replace("://", ":/")
        n = c.get("H5D_DATASPACE_NDIMS", 0)
        for i in range(1, 5 if "H5D_OPENS" in c else 1):
            for kind in ("LENGTH", "STRIDE"):
                vals = [c.get(f"H5D_ACCESS{i}_{kind}_D{d}", 0) for d in range(1, 6)]
                for d in range(1, 6):
                    c[f"H5D_ACCESS{i}_{kind}_D{d}"] = vals[d + 5 - n - 1] if n and d <= n else 0
        if name in theirs:
            merge_counters(theirs[name], c)
        else:
            theirs[name] = c
    sluice("export", "--darshan", str(logs), "-o", str(tmp_path / "dx"))
    ours = _darshan_records(next(p for p in (tmp_path / "dx").glob("*.darshan") if not p.name.endswith(".fs.darshan")))
    assert ours == theirs


def test_h5py_dataset_is_counted(tmp_path):
    pytest.importorskip("h5py")
    script = tmp_path / "w.py"
    script.write_text(
        "import sys, h5py, numpy as np\n"
        "with h5py.File(sys.argv[1], 'w') as f:\n"
        "    d = f.create_dataset('grid', shape=(100, 50), dtype='f4', chunks=(10, 50))\n"
        "    d[0:10, :] = np.ones((10, 50), dtype='f4')\n"
        "    d[10:20, :] = np.full((10, 50), 2, dtype='f4')\n"
        "    assert float(d[15:25, 0:25].sum()) == 5 * 25 * 2\n"
        "with h5py.File(sys.argv[1], 'r') as f:\n"      # h5py opens a dataset with H5Oopen
        "    assert float(f['grid'][0:10, :].sum()) == 500\n")
    logs = tmp_path / "logs"
    sluice("run", "--log-dir", str(logs), "--path", str(tmp_path), "--", sys.executable, str(script),
           str(tmp_path / "p.h5"))
    r = report_json(logs)
    assert h5(file_entry(r, tmp_path / "p.h5")["app"]) == {"H5F_OPENS": 2}
    assert h5(file_entry(r, f"{tmp_path}/p.h5:/grid")["app"]) == {
        "H5D_OPENS": 2, "H5D_READS": 2, "H5D_WRITES": 2, "H5D_BYTES_READ": 3000, "H5D_BYTES_WRITTEN": 4000,
        "H5D_RW_SWITCHES": 1, "H5D_REGULAR_HYPERSLAB_SELECTS": 4, "H5D_SIZE_READ_AGG_100_1K": 1,
        "H5D_SIZE_READ_AGG_1K_10K": 1, "H5D_SIZE_WRITE_AGG_1K_10K": 2, "H5D_ACCESS1_ACCESS": 2000,
        "H5D_ACCESS1_LENGTH_D1": 50, "H5D_ACCESS1_LENGTH_D2": 10, "H5D_ACCESS1_STRIDE_D1": 1,
        "H5D_ACCESS1_STRIDE_D2": 1, "H5D_ACCESS1_COUNT": 3,
        "H5D_ACCESS2_ACCESS": 1000, "H5D_ACCESS2_LENGTH_D1": 25, "H5D_ACCESS2_LENGTH_D2": 10,
        "H5D_ACCESS2_STRIDE_D1": 1, "H5D_ACCESS2_STRIDE_D2": 1, "H5D_ACCESS2_COUNT": 1,
        "H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 5000, "H5D_DATATYPE_SIZE": 4,
        "H5D_CHUNK_SIZE_D1": 50, "H5D_CHUNK_SIZE_D2": 10}


@pytest.mark.parametrize("mode", ["profile", "buffer", "stage", "auto"])
def test_h5py_and_netcdf4_in_one_process_each_keep_their_own_hdf5(tmp_path, mode):
    # Each wheel brings its own libhdf5: netCDF4's calls must reach
    # netCDF4's library, h5py's h5py's (one library for both made
    # netCDF4.Dataset(..., "w") fail with EACCES after h5py had written).
    pytest.importorskip("h5py")
    pytest.importorskip("netCDF4")
    script = tmp_path / "both.py"
    script.write_text(
        "import sys, h5py, netCDF4, numpy as np\n"
        "d = sys.argv[1]\n"
        "with h5py.File(d + '/a.h5', 'w') as f:\n"
        "    f.create_dataset('x', data=np.arange(10))\n"
        "with netCDF4.Dataset(d + '/b.nc', 'w') as n:\n"
        "    n.createDimension('t', 5); v = n.createVariable('v', 'f8', ('t',)); v[:] = np.arange(5) / 2\n"
        "with h5py.File(d + '/a.h5', 'r') as f:\n"
        "    print(f['x'][:4].tolist())\n"
        "with netCDF4.Dataset(d + '/b.nc') as n:\n"
        "    print(n['v'][:].tolist())\n")
    outs = {}
    for label in ("plain", mode):
        work = tmp_path / label
        work.mkdir()
        if label == "plain":
            cp = subprocess.run([sys.executable, str(script), str(work)], capture_output=True, text=True)
        else:
            cp = sluice("run", "-q", "--mode", mode, "--log-dir", str(tmp_path / "logs"), "--path", str(work),
                        "--tier", str(tmp_path / "tier"), "--", sys.executable, str(script), str(work), check=False)
        assert cp.returncode == 0, cp.stderr
        outs[label] = cp.stdout
    assert outs[mode] == outs["plain"] == "[0, 1, 2, 3]\n[0.0, 0.5, 1.0, 1.5, 2.0]\n"
    r = report_json(tmp_path / "logs")
    work = tmp_path / mode
    assert h5(file_entry(r, work / "a.h5")["app"]) == {"H5F_OPENS": 2}
    assert h5(file_entry(r, work / "b.nc")["app"]) == {"H5F_OPENS": 2, "H5F_FLUSHES": 2}   # (netCDF's nc_close)
    v = file_entry(r, f"{work}/b.nc:/v")["app"]
    assert (v["H5D_WRITES"], v["H5D_READS"], v["H5D_BYTES_WRITTEN"], v["H5D_BYTES_READ"]) == (1, 1, 40, 40)
    x = file_entry(r, f"{work}/a.h5:/x")["app"]
    assert (x["H5D_WRITES"], x["H5D_READS"], x["H5D_BYTES_READ"]) == (1, 1, 32)


def test_common_accesses_are_the_four_most_frequent(tmp_path):
    """400 writes of 9 row counts in a seeded random order: the four listed
    accesses are the most frequent (ties: the larger), with exact counts."""
    pytest.importorskip("h5py")
    import random

    rng = random.Random(7)
    rows = [rng.choice([1, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9]) for _ in range(400)]
    script = tmp_path / "w.py"
    script.write_text(
        "import sys, h5py, numpy as np\n"
        "with h5py.File(sys.argv[1], 'w') as f:\n"
        "    d = f.create_dataset('x', shape=(10, 50), dtype='f4')\n"
        f"    for n in {rows!r}:\n"
        "        d[0:n, :] = np.zeros((n, 50), dtype='f4')\n")
    logs = tmp_path / "logs"
    sluice("run", "--log-dir", str(logs), "--path", str(tmp_path), "--", sys.executable, str(script),
           str(tmp_path / "c.h5"))
    c = file_entry(report_json(logs), f"{tmp_path}/c.h5:/x")["app"]
    counts = {n: rows.count(n) for n in set(rows)}
    want = sorted(counts.items(), key=lambda nc: (-nc[1], -nc[0]))[:4]
    got = [(c[f"H5D_ACCESS{i}_LENGTH_D2"], c[f"H5D_ACCESS{i}_COUNT"]) for i in range(1, 5)]
    assert got == want
    assert [c[f"H5D_ACCESS{i}_ACCESS"] for i in range(1, 5)] == [n * 50 * 4 for n, _ in want]


def test_programs_without_hdf5_run_and_an_unbacked_call_fails_cleanly(tmp_path):
    """libsluice needs no libhdf5: a program without it runs, and an HDF5
    call with no HDF5 loaded returns HDF5's failure (-1) instead of crashing."""
    lib = NATIVE / "libsluice.so"
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "hdf5" not in needed
    logs = tmp_path / "logs"
    cp = sluice("run", "--log-dir", str(logs), "--path", str(tmp_path), "--", bin_path("sluice-io"),
                f"open:{tmp_path / 'x'}:w,creat", "write:5")
    assert cp.returncode == 0 and (tmp_path / "x").read_bytes() == b"xxxxx"
    probe = ("import ctypes, sys\n"
             "lib = ctypes.CDLL(sys.argv[1])\n"
             "f = lib.H5Fopen; f.restype = ctypes.c_int64; f.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_int64]\n"
             "print(f(b'/nonexistent.h5', 0, 0))\n")
    env = dict(os.environ, LD_PRELOAD=str(lib), SLUICE_LOG_DIR=str(logs))
    out = subprocess.run([sys.executable, "-c", probe, str(lib)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "-1"


@pytest.mark.skipif(not Path(bin_path("h5_known_par")).exists(), reason="no parallel HDF5 (libhdf5-openmpi-dev)")
def test_parallel_hdf5_collective_transfer(tmp_path):
    logs = tmp_path / "logs"
    sluice("run", "--log-dir", str(logs), "--path", str(tmp_path), "--", "mpirun", "--oversubscribe", "-np", "2",
           bin_path("h5_known_par"), "--parallel", str(tmp_path / "par.h5"), env=MPI_ENV)
    r = report_json(logs)
    assert r["processes"] == 2
    assert h5(file_entry(r, tmp_path / "par.h5")["app"]) == {"H5F_OPENS": 2, "H5F_USE_MPIIO": 1}
    # each rank: one collective write and read of its 4 x 16 ints
    assert h5(file_entry(r, f"{tmp_path}/par.h5:/shared")["app"]) == {
        "H5D_OPENS": 2, "H5D_READS": 2, "H5D_WRITES": 2, "H5D_BYTES_READ": 512, "H5D_BYTES_WRITTEN": 512,
        "H5D_RW_SWITCHES": 2, "H5D_REGULAR_HYPERSLAB_SELECTS": 4, "H5D_SIZE_READ_AGG_100_1K": 2,
        "H5D_SIZE_WRITE_AGG_100_1K": 2, "H5D_ACCESS1_ACCESS": 256, "H5D_ACCESS1_LENGTH_D1": 16,
        "H5D_ACCESS1_LENGTH_D2": 4, "H5D_ACCESS1_STRIDE_D1": 1, "H5D_ACCESS1_STRIDE_D2": 1, "H5D_ACCESS1_COUNT": 4,
        "H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 128, "H5D_DATATYPE_SIZE": 4,
        "H5D_USE_MPIIO_COLLECTIVE": 1}
    # the program's collective HDF5 writes went through MPI-IO
    assert file_entry(r, tmp_path / "par.h5")["app"]["MPIIO_COLL_WRITES"] >= 2
    # exported as Darshan reduces a record every rank shared: one of rank -1,
    # counts added, the dataset's properties kept (not doubled)
    darshan = pytest.importorskip("darshan")
    from darshan.backend import cffi_backend as b

    sluice("export", "--darshan", str(logs), "-o", str(tmp_path / "dx"))
    app = next(p for p in (tmp_path / "dx").glob("*.darshan") if not p.name.endswith(".fs.darshan"))
    rep = darshan.DarshanReport(str(app), read_all=True)
    (f,) = rep.records["H5F"].to_list()
    (d,) = rep.records["H5D"].to_list()
    assert f["rank"] == d["rank"] == -1
    fc = dict(zip(b.counter_names("H5F"), f["counters"]))
    dc = dict(zip(b.counter_names("H5D"), d["counters"]))
    assert (fc["H5F_OPENS"], fc["H5F_USE_MPIIO"]) == (2, 1)
    assert {k: dc[k] for k in ("H5D_WRITES", "H5D_BYTES_WRITTEN", "H5D_ACCESS1_COUNT", "H5D_ACCESS1_LENGTH_D1",
                               "H5D_DATASPACE_NDIMS", "H5D_DATASPACE_NPOINTS", "H5D_DATATYPE_SIZE",
                               "H5D_USE_MPIIO_COLLECTIVE")} == {
        "H5D_WRITES": 2, "H5D_BYTES_WRITTEN": 512, "H5D_ACCESS1_COUNT": 4, "H5D_ACCESS1_LENGTH_D1": 16,
        "H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 128, "H5D_DATATYPE_SIZE": 4, "H5D_USE_MPIIO_COLLECTIVE": 1}
    assert dc["H5D_FASTEST_RANK_BYTES"] == dc["H5D_SLOWEST_RANK_BYTES"] == 512
