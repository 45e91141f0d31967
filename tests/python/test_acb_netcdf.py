"""Aggregated Collective Buffering under the parallel netCDF libraries: a
PnetCDF file (collective and independent puts, record and fixed-size
variables, with and without fill mode) and a netCDF-4 file written through
parallel HDF5 (NC_COLLECTIVE and NC_INDEPENDENT) come out byte-identical
under `sluice run --mode acb` and plain, with fewer writes reaching the file
system. 4 ranks, AMR-box-like scattered pieces, one rank with nothing to
write (tests/mpi/pnc_write.c, tests/mpi/nc4_par_write.c)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TEST_BIN, file_entry, python_env, report_json, sluice

MPIRUN = ["mpirun", "--oversubscribe", "-np", "4"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}

CASES = {
    "pnetcdf": ("pnc_write", []),
    "pnetcdf-fill": ("pnc_write", ["fill"]),
    "netcdf4-parallel": ("nc4_par_write", []),
}


def _program(name: str) -> Path:
    p = TEST_BIN / name
    if not p.exists():
        pytest.skip(f"{name} not built (its parallel netCDF library is not installed: scripts/setup)")
    return p


def _writes(entry: dict) -> tuple[int, int]:
    fs = entry["fs"]
    return fs.get("MPIIO_INDEP_WRITES", 0) + fs.get("MPIIO_COLL_WRITES", 0), fs.get("POSIX_WRITES", 0)


def _ncdump(path: Path) -> str:
    out = subprocess.run(["ncdump", str(path)], capture_output=True, text=True, check=True, timeout=60).stdout
    # The first line names the file: the two files' names differ on purpose.
    return out.split("\n", 1)[1]


def _run_plain(exe: Path, out: Path, extra: list[str]) -> Path:
    env = python_env()
    env.update(MPI_ENV)
    subprocess.run([*MPIRUN, str(exe), str(out), *extra], env=env, check=True, capture_output=True, timeout=300)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_byte_identical_and_fewer_writes(tmp_path, case):
    if not shutil.which("ncdump"):
        pytest.skip("ncdump (netcdf-bin) is not installed")
    prog, extra = CASES[case]
    exe = _program(prog)
    plain = _run_plain(exe, tmp_path / "plain.nc", extra)

    entries = {}
    # auto: the file is created by MPI_File_open (not staged: a shared open)
    # and its MPI-IO writes aggregated as acb's
    for mode in ("profile", "acb", "auto"):
        d, logs = tmp_path / mode, tmp_path / f"logs-{mode}"
        d.mkdir()
        sluice("run", "--mode", mode, "--tier", str(tmp_path / "tier"), "--log-dir", str(logs), "--path", str(d),
               "--", *MPIRUN, str(exe), str(d / "out.nc"), *extra, env=MPI_ENV)
        entries[mode] = file_entry(report_json(logs), d / "out.nc")

    acb = tmp_path / "acb" / "out.nc"
    subprocess.run(["cmp", str(plain), str(acb)], check=True, capture_output=True)
    assert (tmp_path / "auto" / "out.nc").read_bytes() == plain.read_bytes()
    assert entries["auto"]["fs"]["MPIIO_ACB_FLUSHES"] == entries["acb"]["fs"]["MPIIO_ACB_FLUSHES"]
    assert entries["auto"]["app"]["POSIX_STAGED_OPENS"] == 0
    assert (tmp_path / "profile" / "out.nc").read_bytes() == plain.read_bytes()
    assert _ncdump(acb) == _ncdump(plain)

    prof_mpiio, prof_posix = _writes(entries["profile"])
    acb_mpiio, acb_posix = _writes(entries["acb"])
    app = entries["acb"]["app"]
    # The program's calls are all seen, and fewer, larger writes go below.
    assert app["MPIIO_INDEP_WRITES"] + app["MPIIO_COLL_WRITES"] == prof_mpiio
    assert entries["acb"]["fs"]["MPIIO_ACB_FLUSHES"] >= 1
    assert acb_mpiio < prof_mpiio, (acb_mpiio, prof_mpiio)
    assert acb_posix < prof_posix, (acb_posix, prof_posix)


@pytest.mark.parametrize("case", list(CASES))
def test_parallel_netcdf_under_stage_mode_is_byte_identical(tmp_path, case):
    # Every rank opens the file through MPI-IO: stage mode leaves it on the
    # shared file system (it hung before); the file is plain's, byte for byte.
    prog, extra = CASES[case]
    exe = _program(prog)
    plain = _run_plain(exe, tmp_path / "plain.nc", extra)
    d = tmp_path / "stage"
    d.mkdir()
    sluice("run", "-q", "--mode", "stage", "--tier", str(tmp_path / "tier"), "--log-dir", str(tmp_path / "logs"),
           "--path", str(d), "--", *MPIRUN, str(exe), str(d / "out.nc"), *extra, env=MPI_ENV, timeout=300)
    assert (d / "out.nc").read_bytes() == plain.read_bytes()
