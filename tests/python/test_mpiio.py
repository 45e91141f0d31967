"""The MPIIO module: exact counters of a known MPI-IO program (4 ranks) in
profile mode and under --mode acb, the atomic-mode fallback, and that a
serial program pays nothing for it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import NATIVE, bin_path, file_entry, nonzero, report_json, sluice

MPIRUN = ["mpirun", "--oversubscribe", "-np", "4"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}

# What the program asks, summed over 4 ranks (tests/mpi/mpiio_known.c).
KNOWN_APP = {
    "MPIIO_COLL_OPENS": 4, "MPIIO_INDEP_WRITES": 12, "MPIIO_COLL_WRITES": 4, "MPIIO_INDEP_READS": 4,
    "MPIIO_COLL_READS": 4, "MPIIO_SYNCS": 8, "MPIIO_BYTES_WRITTEN": 4 * 6106, "MPIIO_BYTES_READ": 4 * (100 + 6106),
    "MPIIO_RW_SWITCHES": 12, "MPIIO_SIZE_WRITE_0_100": 4, "MPIIO_SIZE_WRITE_100_1K": 8,
    "MPIIO_SIZE_WRITE_1K_10K": 4, "MPIIO_SIZE_READ_0_100": 4, "MPIIO_SIZE_READ_1K_10K": 4,
}


def run_known(workdir: Path, logdir: Path, mode: str, *args: str) -> dict:
    sluice("run", "--mode", mode, "--log-dir", str(logdir), "--path", str(workdir), "--",
           *MPIRUN, bin_path("mpiio_known"), str(workdir), *args, env=MPI_ENV)
    r = report_json(logdir)
    assert r["processes"] == 4
    return file_entry(r, workdir / "known.dat")


def test_known_counters_profile(workdir, logdir):
    e = run_known(workdir, logdir, "profile")
    assert nonzero(e["app"], "MPIIO_") == KNOWN_APP
    assert e["fs"] == e["app"]
    # what MPI-IO (OMPIO) made of it underneath: one pwrite per MPI-IO write
    assert e["app"]["POSIX_BYTES_WRITTEN"] == 4 * 6106
    assert e["app"]["MPIIO_F_WRITE_TIME"] > 0 and e["app"]["MPIIO_F_META_TIME"] > 0


@pytest.mark.parametrize("mode", ["acb", "auto"])
def test_known_counters_acb(workdir, logdir, mode):
    """acb, and auto, which aggregates MPI-IO as acb does."""
    e = run_known(workdir, logdir, mode)
    assert nonzero(e["app"], "MPIIO_") == KNOWN_APP
    # Each rank's read of its own pending 2000 bytes writes them first (4
    # writes through the program's own handles: the view is plain bytes, so
    # no second open); the rest of each rank's range (4106 bytes) goes to
    # the one aggregator of this node at the first sync, in one round.
    assert nonzero(e["fs"], "MPIIO_") == {
        "MPIIO_COLL_OPENS": 4, "MPIIO_INDEP_WRITES": 8, "MPIIO_INDEP_READS": 4,
        "MPIIO_COLL_READS": 4, "MPIIO_SYNCS": 8, "MPIIO_BYTES_WRITTEN": 4 * 6106, "MPIIO_BYTES_READ": 4 * 6206,
        "MPIIO_RW_SWITCHES": 6, "MPIIO_SIZE_READ_0_100": 4, "MPIIO_SIZE_READ_1K_10K": 4,
        "MPIIO_SIZE_WRITE_1K_10K": 8, "MPIIO_ACB_FLUSHES": 12, "MPIIO_ACB_ROUNDS": 4,
    }
    assert e["fs"]["POSIX_WRITES"] == 8
    # the report names ACB's choices beside its exchanges
    rows = {l.rsplit(None, 3)[0].strip(): l.split()[-3:] for l in sluice("report", str(logdir)).stdout.splitlines()
            if l.strip().startswith(("aggregated exchanges", "ACB"))}
    assert rows["aggregated exchanges (ACB)"][1] == "12" and rows["ACB exchange rounds"][1] == "4"
    assert rows["ACB: each rank wrote its own data, no exchange"][1] == "0"


def test_file_per_process_under_acb_writes_its_own_coalesced_pieces(tmp_path, logdir):
    """MPI_COMM_SELF files: no exchange, no second open; the small records
    before the 2 MiB block reach the file system as one write before it,
    the block goes straight to MPI-IO (no copy), the records after it as one
    write at close. The files are plain's, byte for byte."""
    plain_dir, acb_dir = tmp_path / "plain", tmp_path / "acb"
    plain_dir.mkdir()
    acb_dir.mkdir()
    subprocess.run([*MPIRUN, bin_path("mpiio_fpp"), str(plain_dir)], env={**os.environ, **MPI_ENV}, check=True, timeout=300,
                   capture_output=True)
    sluice("run", "--mode", "acb", "--log-dir", str(logdir), "--path", str(acb_dir), "--",
           *MPIRUN, bin_path("mpiio_fpp"), str(acb_dir), env=MPI_ENV)
    r = report_json(logdir)
    for rank in range(4):
        name = f"rank_{rank}.dat"
        assert (acb_dir / name).read_bytes() == (plain_dir / name).read_bytes(), name
        e = file_entry(r, acb_dir / name)
        assert e["app"]["MPIIO_INDEP_WRITES"] == 301 and e["app"]["MPIIO_ACB_DIRECT_WRITES"] == 1
        assert e["fs"]["MPIIO_INDEP_OPENS"] == 1 and e["fs"]["MPIIO_INDEP_WRITES"] == 3
        assert e["fs"]["MPIIO_BYTES_WRITTEN"] == 300 * 1000 + 2 * 1024 * 1024


def test_files_left_open_at_finalize_keep_their_bytes(tmp_path, logdir):
    """A program that ends MPI without closing its file (Open MPI lets it
    by): the writes still pending under acb reach the file, as plain's."""
    plain_dir, acb_dir = tmp_path / "plain", tmp_path / "acb"
    plain_dir.mkdir()
    acb_dir.mkdir()
    subprocess.run([*MPIRUN, bin_path("mpiio_fpp"), str(plain_dir), "noclose"], env={**os.environ, **MPI_ENV},
                   check=True, timeout=300, capture_output=True)
    cp = sluice("run", "--mode", "acb", "--log-dir", str(logdir), "--path", str(acb_dir), "--",
                *MPIRUN, bin_path("mpiio_fpp"), str(acb_dir), "noclose", env=MPI_ENV)
    for rank in range(4):
        name = f"rank_{rank}.dat"
        assert (acb_dir / name).read_bytes() == (plain_dir / name).read_bytes(), name
    assert "MPI_Finalize with" in cp.stderr and "still open" in cp.stderr


def run_fortran(prog: Path, tmp_path: Path, logdir: Path, mode: str) -> tuple[dict, dict]:
    """A Fortran MPI-IO program (argument: its file) plain, then under
    `sluice run --mode MODE`: the files must be byte-identical; the app and
    fs counters of the sluice run's file."""
    plain_dir, run_dir = tmp_path / "plain", tmp_path / mode
    plain_dir.mkdir()
    run_dir.mkdir()
    subprocess.run([*MPIRUN, str(prog), str(plain_dir / "f.dat")], env={**os.environ, **MPI_ENV}, check=True,
                   timeout=300, capture_output=True)
    sluice("run", "--mode", mode, "--log-dir", str(logdir), "--path", str(run_dir), "--",
           *MPIRUN, str(prog), str(run_dir / "f.dat"), env=MPI_ENV)
    assert (run_dir / "f.dat").read_bytes() == (plain_dir / "f.dat").read_bytes()
    e = file_entry(report_json(logdir), run_dir / "f.dat")
    return e["app"], e["fs"]


@pytest.mark.parametrize("mode", ["profile", "acb"])
def test_fortran_mpiio_is_seen_and_aggregated(tmp_path, logdir, mode):
    """`use mpi` calls reach PMPI directly inside Open MPI: the Fortran entry
    points are wrapped, so the program's 160 independent writes, 4
    collective, 4 non-blocking and 4 split collective ones are counted, and under acb the
    blocking ones reach the file as one write; the file is plain's."""
    app, fs = run_fortran(Path(bin_path("fortran_mpiio")), tmp_path, logdir, mode)
    assert (app["MPIIO_COLL_OPENS"], app["MPIIO_INDEP_WRITES"], app["MPIIO_COLL_WRITES"], app["MPIIO_INDEP_READS"],
            app["MPIIO_NB_WRITES"], app["MPIIO_SPLIT_WRITES"]) == (8, 160, 4, 4, 4, 4)
    if mode == "acb":
        assert fs["MPIIO_INDEP_WRITES"] == 1 and fs["MPIIO_COLL_WRITES"] == 0 and fs["POSIX_WRITES"] == 1
    else:
        assert fs == app


@pytest.mark.parametrize("keep", [False, True])
def test_the_mpi_runtimes_own_files_are_left_out(tmp_path, keep):
    """With no --path every file but the system's is recorded; Open MPI's
    session directory (its shared-memory segments, lock files) and the
    parameter files it looks for in $HOME/.openmpi and $HOME/.pmix (20-odd
    files and a dozen failed opens per job) are the MPI library's, not the
    program's, and are left out unless --include-mpi-runtime. The program's
    file is there either way."""
    logs, work = tmp_path / "logs", tmp_path / "w"
    work.mkdir()
    sluice("run", "--log-dir", str(logs), *(["--include-mpi-runtime"] if keep else []), "--",
           *MPIRUN, bin_path("mpiio_known"), str(work), env=MPI_ENV)
    r = report_json(logs)
    paths = [f["path"] for f in r["files"]]
    assert str(work / "known.dat") in paths
    runtime = [p for p in paths if "/ompi." in p or "/.openmpi/" in p or "/.pmix/" in p]
    assert bool(runtime) == keep, runtime[:3]
    if not keep:   # what is left: the program's file, OMPIO's lock tests beside it, stats of / and /tmp
        assert {p for p in paths if ".locktest." not in p} <= {str(work / "known.dat"), "/", "/tmp"}, paths


@pytest.mark.parametrize("mode", ["profile", "acb"])
def test_split_collectives_are_counted_and_aggregated(tmp_path, logdir, mode):
    """tests/mpi/mpiio_split.c: each rank's write_ordered_begin/end, 4
    write_at_all_begin/end of 3000 B and one write_all_begin/end of 500 B; the
    reads of the neighbour's bytes (checked, as every end's status count).
    Every begin is a split collective on the app side; under acb the
    explicit-offset and individual-pointer writes are kept and reach the
    file system in one aggregated write, the ordered one goes to MPI-IO. The
    file is plain's, byte for byte."""
    prog = bin_path("mpiio_split")
    plain, run = tmp_path / "plain.dat", tmp_path / mode / "f.dat"
    run.parent.mkdir()
    subprocess.run([*MPIRUN, prog, str(plain)], env={**os.environ, **MPI_ENV}, check=True, timeout=300,
                   capture_output=True)
    sluice("run", "--mode", mode, "--log-dir", str(logdir), "--path", str(run.parent), "--",
           *MPIRUN, prog, str(run), env=MPI_ENV)
    assert run.read_bytes() == plain.read_bytes()
    e = file_entry(report_json(logdir), run)
    app, fs = e["app"], e["fs"]
    assert (app["MPIIO_SPLIT_WRITES"], app["MPIIO_SPLIT_READS"], app["MPIIO_COLL_WRITES"], app["MPIIO_COLL_READS"]) \
        == (4 * 6, 4 * 6, 0, 0)
    assert app["MPIIO_BYTES_WRITTEN"] == 4 * (4 * 3000 + 500 + 100)
    if mode == "profile":
        assert fs == app
    else:
        # only the ordered writes reach MPI-IO as split collectives (OMPIO makes
        # them POSIX AIO); the other 20 are kept and written by one aggregator at
        # the sync, in one MPI-IO and one POSIX write; the 4 AIO writes are
        # POSIX writes too once aio_return collects them (as Darshan counts)
        assert fs["MPIIO_SPLIT_WRITES"] == 4 and fs["MPIIO_SPLIT_READS"] == 4 * 6
        assert (fs["MPIIO_INDEP_WRITES"], fs["MPIIO_COLL_WRITES"], fs["POSIX_AIO_WRITES"], fs["POSIX_WRITES"]) == \
            (1, 0, 4, 5)
        assert fs["MPIIO_BYTES_WRITTEN"] == app["MPIIO_BYTES_WRITTEN"] and fs["MPIIO_ACB_FLUSHES"] > 0


@pytest.mark.parametrize("mode", ["profile", "acb"])
def test_fortran_2008_mpiio_is_seen_and_aggregated(tmp_path, logdir, mode):
    """`use mpi_f08` reaches Open MPI's library through other names than
    `use mpi` (libmpi_usempif08 calls ompi_file_*_f): those are wrapped
    too, so the program's 160 independent writes and 4 collective ones are
    counted, and under acb reach the file as one write; the file is plain's."""
    prog = Path(bin_path("fortran_mpiio_f08"))
    if not prog.exists():
        pytest.skip("no Fortran MPI (gfortran, libopenmpi-dev)")
    app, fs = run_fortran(prog, tmp_path, logdir, mode)
    assert (app["MPIIO_COLL_OPENS"], app["MPIIO_INDEP_WRITES"], app["MPIIO_COLL_WRITES"],
            app["MPIIO_INDEP_READS"]) == (8, 160, 4, 4)
    if mode == "acb":
        assert (fs["MPIIO_INDEP_WRITES"], fs["MPIIO_COLL_WRITES"], fs["POSIX_WRITES"]) == (1, 0, 1)
    else:
        assert fs == app


def test_html_report_has_the_mpiio_section(workdir, logdir, tmp_path):
    """The page shows the MPI-IO table the text report shows, with the exact
    app and fs values (a serial job's page has none: test_report_html)."""
    e = run_known(workdir, logdir, "acb")
    page = tmp_path / "r.html"
    sluice("report", "--html", str(page), str(logdir))
    text = page.read_text("utf-8")
    assert '<section id="mpiio">' in text
    rows = dict(re.findall(r'<tr data-mpiio="([^"]+)"[^>]*>(.*?)</tr>', text))
    values = {label: [int(float(v)) for v in re.findall(r'data-side="(?:app|fs)" data-value="([^"]+)"', cells)]
              for label, cells in rows.items()}
    assert values["independent writes"] == [12, 8]
    assert values["aggregated exchanges (ACB)"] == [0, e["fs"]["MPIIO_ACB_FLUSHES"]]
    assert values["bytes written"] == [4 * 6106, 4 * 6106]


def test_a_files_bytes_count_mpiio_data_once(workdir, logdir):
    """The report's per-file byte total: MPI-IO's bytes reach the file
    through POSIX calls that are recorded too; the data counts once."""
    from sluice.report.model import load_job

    run_known(workdir, logdir, "profile")
    f = next(f for f in load_job([logdir]).files if f.path == str(workdir / "known.dat"))
    mpiio = f.app["MPIIO_BYTES_READ"] + f.app["MPIIO_BYTES_WRITTEN"]
    assert mpiio == 4 * 6106 + 4 * 6206
    assert f.bytes() == max(mpiio, f.app["POSIX_BYTES_READ"] + f.app["POSIX_BYTES_WRITTEN"])
    assert f.bytes() < mpiio + f.app["POSIX_BYTES_READ"] + f.app["POSIX_BYTES_WRITTEN"]


def test_the_mpi_launcher_is_not_the_program(workdir, logdir):
    """`sluice run -- mpirun ...` without --path: mpirun (orterun) and its
    daemons carry the preload to the ranks but record nothing themselves:
    one log per rank, none for the launcher."""
    sluice("run", "--log-dir", str(logdir), "--", *MPIRUN, bin_path("mpi_write"), str(workdir), env=MPI_ENV)
    names = [p.name for p in logdir.iterdir() if p.suffix == ".sluice"]
    assert len(names) == 4 and all("mpi_write" in n for n in names), names
    assert report_json(logdir)["processes"] == 4


def test_atomic_mode_falls_back(workdir, logdir):
    e = run_known(workdir, logdir, "acb", "atomic")
    assert nonzero(e["app"], "MPIIO_") == {**KNOWN_APP, "MPIIO_FALLBACKS": 4}
    fs = e["fs"]
    assert fs["MPIIO_FALLBACKS"] == 4
    # after set_atomicity(1) the collective and the individual-pointer writes pass through
    assert (fs["MPIIO_COLL_WRITES"], fs["MPIIO_INDEP_WRITES"], fs["MPIIO_BYTES_WRITTEN"]) == (4, 8, 4 * 6106)


def test_serial_program_unaffected(tmp_path):
    """A serial program under --mode acb: same POSIX counters as in profile
    mode, no MPI-IO record, and libmpi never loaded."""
    reports = {}
    for mode in ("profile", "acb"):
        work, logs = tmp_path / mode, tmp_path / f"logs-{mode}"
        work.mkdir()
        sluice("run", "--mode", mode, "--log-dir", str(logs), "--path", str(work), "--",
               bin_path("known_mix"), str(work))
        reports[mode] = report_json(logs)
    for mode, r in reports.items():
        assert not nonzero(r["app"], "MPIIO_"), mode
    assert nonzero(reports["acb"]["app"], "POSIX_") == nonzero(reports["profile"]["app"], "POSIX_")
    maps = subprocess.run(["env", f"LD_PRELOAD={NATIVE / 'libsluice.so'}", "SLUICE_MODE=acb", "cat", "/proc/self/maps"],
                          capture_output=True, text=True, check=True).stdout
    assert "libsluice.so" in maps and "libmpi" not in maps


def test_mpiio_symbols_exported():
    nm = subprocess.run(["nm", "-D", "--defined-only", str(NATIVE / "libsluice.so")],
                        capture_output=True, text=True, check=True).stdout
    exported = set(re.findall(r" T (MPI_(?:File_\w+|Finalize))\b", nm))
    listed = re.findall(r"^SLUICE_MPIIO\((\w+),", (Path(__file__).parents[2] / "src/mpi/mpiio.def").read_text(), re.M)
    assert listed and {f"MPI_{n}" for n in listed} == exported
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(NATIVE / "libsluice.so")],
                               capture_output=True, text=True, check=True).stdout
    assert "MPI" not in undefined and "ompi" not in undefined


@pytest.mark.parametrize("mode", ["profile", "acb"])
def test_mpiio_report_text(workdir, logdir, mode):
    run_known(workdir, logdir, mode)
    out = sluice("report", str(logdir)).stdout
    assert "MPI-IO" in out


def test_mpiio_shared_file_under_stage_mode(tmp_path):
    # Every rank opens the same file: it is never staged on one node's tier
    # (4 ranks with MPI_MODE_CREATE hung before); the bytes are plain's.
    outs = {}
    for mode in ("plain", "stage"):
        work = tmp_path / mode
        work.mkdir()
        cmd = [*MPIRUN, bin_path("mpiio_known"), str(work)]
        if mode == "plain":
            import os
            import subprocess
            subprocess.run(cmd, env={**os.environ, **MPI_ENV}, check=True, timeout=120, capture_output=True)
        else:
            sluice("run", "--mode", "stage", "--tier", str(tmp_path / "tier"), "--log-dir", str(tmp_path / "logs"),
                   "--path", str(work), "--", *cmd, env=MPI_ENV, timeout=120)
        outs[mode] = (work / "known.dat").read_bytes()
    assert outs["stage"] == outs["plain"] and len(outs["plain"]) > 0
    assert not list((tmp_path / "tier" / "journal").iterdir())
