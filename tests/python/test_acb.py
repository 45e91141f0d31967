"""Aggregated Collective Buffering: the AMR checkpoint written every way
(per-box write_at, per-box write_at_all, the explicit API, each MPI-IO
variant again under --mode acb, parallel HDF5 independent and collective,
plain and under --mode acb) gives byte-identical files; aggregation cuts
the writes reaching the file system; the C and Fortran examples of
docs/acb.md build and run. 4 ranks, boxes straddling stripe boundaries,
a level with fewer boxes than ranks."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import NATIVE, REPO, file_entry, python_env, report_json, sluice

MPIRUN = ["mpirun", "--oversubscribe", "-np", "4"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}
# 5000-byte boxes on 4 KiB stripes straddle stripe boundaries; the last
# level has 3 boxes for 4 ranks; two aggregators split the stripes.
AMR = ["--boxes", "27,8,3", "--box-bytes", "5000", "--check",
       "--hints", "striping_unit=4096,sluice_acb_aggregators=2,sluice_acb_write_size=8192"]


def amr(prog: str, variant: str, path: Path, *extra: str, mode: str | None = None, logdir: Path | None = None) -> dict:
    cmd = [*MPIRUN, str(NATIVE / prog), "--variant", variant, "--file", str(path), *AMR, *extra]
    if mode:
        cp = sluice("run", "--mode", mode, "--log-dir", str(logdir), "--path", str(path.parent), "--", *cmd,
                    env=MPI_ENV)
        out = cp.stdout
    else:
        env = python_env()
        env.update(MPI_ENV)
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=300).stdout
    r = json.loads(out.strip().splitlines()[0])
    assert r["checked"] and r["bad_bytes"] == 0, r
    return r


def test_mpiio_variants_byte_identical(tmp_path):
    files = {}
    for variant in ("indep", "coll", "acb"):
        files[variant] = tmp_path / f"{variant}.dat"
        amr("sluice-bench-amr-ckpt", variant, files[variant])
    for variant in ("indep", "coll"):
        d = tmp_path / f"acb-{variant}"
        d.mkdir()
        files[f"transparent-{variant}"] = d / "ckpt.dat"
        amr("sluice-bench-amr-ckpt", variant, d / "ckpt.dat", mode="acb", logdir=tmp_path / f"logs-{variant}")
    ref = files["indep"].read_bytes()
    assert len(ref) == 38 * 5000
    for name, p in files.items():
        assert p.read_bytes() == ref, name


def test_collective_writes_of_a_stripe_or_more_go_straight_to_mpiio(tmp_path):
    """The cost model: when every rank's piece in a collective write is a
    stripe (1 MiB by default) or more, MPI-IO's own collective write runs,
    with no copy or exchange; the file is the same."""
    cmd = ["--variant", "coll", "--boxes", "8,4", "--box-bytes", "1500000", "--check"]
    plain, acb = tmp_path / "plain.dat", tmp_path / "acb" / "c.dat"
    acb.parent.mkdir()
    env = python_env()
    env.update(MPI_ENV)
    subprocess.run([*MPIRUN, str(NATIVE / "sluice-bench-amr-ckpt"), "--file", str(plain), *cmd], env=env,
                   check=True, capture_output=True, timeout=300)
    logs = tmp_path / "logs"
    sluice("run", "--mode", "acb", "--log-dir", str(logs), "--path", str(acb.parent), "--",
           *MPIRUN, str(NATIVE / "sluice-bench-amr-ckpt"), "--file", str(acb), *cmd, env=MPI_ENV)
    assert acb.read_bytes() == plain.read_bytes()
    e = file_entry(report_json(logs), acb)
    # 12 boxes of 1.5 MB, written in 3 collective calls of 4 ranks: all direct
    assert e["app"]["MPIIO_COLL_WRITES"] == e["fs"]["MPIIO_COLL_WRITES"] == 12
    assert e["app"]["MPIIO_ACB_DIRECT_WRITES"] == 12


def test_holes_stay_untouched(tmp_path):
    """With gaps between boxes over a file pre-filled with 0xFF, aggregation
    writes only the boxes (the program's --check verifies the gaps)."""
    for variant, mode in (("acb", None), ("indep", "acb")):
        d = tmp_path / f"{variant}-{mode}"
        d.mkdir()
        amr("sluice-bench-amr-ckpt", variant, d / "ckpt.dat", "--gap", "1000", "--prefill", mode=mode,
            logdir=tmp_path / f"logs-{variant}")


def test_hdf5_variants_byte_identical(tmp_path):
    files = {}
    for variant in ("h5-indep", "h5-coll"):
        files[variant] = tmp_path / f"{variant}.h5"
        amr("sluice-bench-amr-ckpt-h5", variant, files[variant])
        d = tmp_path / f"acb-{variant}"
        d.mkdir()
        files[f"transparent-{variant}"] = d / "ckpt.h5"
        amr("sluice-bench-amr-ckpt-h5", variant, d / "ckpt.h5", mode="acb", logdir=tmp_path / f"logs-{variant}")
    ref = files["h5-indep"].read_bytes()
    for name, p in files.items():
        assert p.read_bytes() == ref, name


def test_transparent_acb_cuts_fs_writes(tmp_path):
    """64 boxes of 4 KiB written one by one: the program's 64 MPI-IO writes
    reach the file system as a handful of large ones."""
    counts = {}
    for mode in ("profile", "acb"):
        d, logs = tmp_path / mode, tmp_path / f"logs-{mode}"
        d.mkdir()
        cmd = [*MPIRUN, str(NATIVE / "sluice-bench-amr-ckpt"), "--variant", "indep", "--file", str(d / "c.dat"),
               "--boxes", "64", "--box-bytes", "4096", "--check"]
        sluice("run", "--mode", mode, "--log-dir", str(logs), "--path", str(d), "--", *cmd, env=MPI_ENV)
        e = file_entry(report_json(logs), d / "c.dat")
        counts[mode] = e
    prof, acb = counts["profile"], counts["acb"]
    assert prof["app"]["MPIIO_INDEP_WRITES"] == acb["app"]["MPIIO_INDEP_WRITES"] == 64
    assert prof["fs"]["POSIX_WRITES"] >= 64
    assert acb["fs"]["MPIIO_INDEP_WRITES"] * 10 <= 64
    assert acb["fs"]["POSIX_WRITES"] * 10 <= prof["fs"]["POSIX_WRITES"]
    assert acb["fs"]["MPIIO_BYTES_WRITTEN"] == 64 * 4096


def _examples() -> dict[str, str]:
    """The fenced code blocks of docs/acb.md that follow an `<!-- example: NAME -->` line."""
    text = (REPO / "docs" / "acb.md").read_text()
    return dict(re.findall(r"<!-- example: (\S+) -->\s*```\w*\n(.*?)```", text, re.S))


@pytest.mark.parametrize("name", ["acb_example.c", "acb_example.f90"])
def test_api_examples(tmp_path, name):
    src = _examples()[name]
    (tmp_path / name).write_text(src)
    exe = tmp_path / "example"
    libs = [f"-L{NATIVE}", "-lsluice-mpi", f"-Wl,-rpath,{NATIVE}"]
    if name.endswith(".c"):
        cmd = ["mpicc", "-std=c11", "-Wall", "-Werror", f"-I{REPO / 'include'}", str(tmp_path / name), "-o", str(exe), *libs]
    else:
        cmd = ["mpif90", "-Wall", "-Werror", f"-J{tmp_path}", str(REPO / "fortran" / "sluice_acb.f90"),
               str(tmp_path / name), "-o", str(exe), *libs]
    subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tmp_path)
    env = python_env()
    env.update(MPI_ENV)
    out = tmp_path / "blocks.dat"
    subprocess.run([*MPIRUN, str(exe), str(out)], env=env, check=True, capture_output=True, timeout=300, cwd=tmp_path)
    # Rank r puts 10 blocks of 1000 bytes, block b at offset (b * 4 + r) * 1000, every byte = r + 1.
    data = out.read_bytes()
    assert len(data) == 40 * 1000
    for k in range(40):
        assert data[k * 1000:(k + 1) * 1000] == bytes([k % 4 + 1]) * 1000, k


def test_bench_workload_table(tmp_path):
    """`sluice bench amr-ckpt` prints the Darshan-style table from sluice's
    counters and records times, write counts and ratios."""
    out = tmp_path / "r.json"
    cp = sluice("bench", "--target", str(tmp_path), "--rounds", "1", "--warmup", "0", "--json", str(out),
                "-p", "amr-ckpt.boxes=16,3", "-p", "amr-ckpt.box_size=8K",
                "-p", "amr-ckpt.methods=indep,acb-api,acb-transparent", "amr-ckpt", env=MPI_ENV, timeout=600)
    assert "MPI-IO writes" in cp.stderr and "time indep / acb-transparent" in cp.stderr
    doc = json.loads(out.read_text())
    m = doc["workloads"]["amr-ckpt"]["rounds"][0]["metrics"]
    assert m["indep_mpiio_writes"] >= 19 and m["acb_transparent_mpiio_writes"] <= 2
    assert m["acb_api_mpiio_writes"] <= 2 and m["ratio_indep_over_transparent"] > 0


def test_ior_shared_workload_compares_every_peer(tmp_path):
    """`sluice bench ior-shared` runs OMPIO and ROMIO, independent and
    collective, with and without hints, plain and under acb, checks every
    file byte for byte and gives acb over the best peer per piece size."""
    out = tmp_path / "r.json"
    cp = sluice("bench", "--target", str(tmp_path), "--rounds", "1", "--warmup", "0", "--json", str(out),
                "-p", "ior-shared.per_rank=64K", "-p", "ior-shared.pieces=4K", "ior-shared",
                env=MPI_ENV, timeout=600)
    assert "acb / best peer" in cp.stderr
    w = json.loads(out.read_text())["workloads"]["ior-shared"]
    m = w["rounds"][0]["metrics"]
    for method in ("ompio_indep", "ompio_coll", "romio_indep", "romio_coll", "romio_coll_cb"):
        assert m[f"{method}_4K_MiBps"] > 0 and m[f"acb_{method}_4K_MiBps"] > 0
    assert m["acb_over_best_peer_4K"] > 0 and "acb_over_best_peer_16K" not in m
    raw = w["rounds"][0]["raw"]
    assert len(raw) == 10 and {r["fnv1a64"] for r in raw} == {raw[0]["fnv1a64"]}
    assert all(r["mismatches"] == 0 and r["bytes_written"] == 4 * 65536 for r in raw)


def test_ior_shared_program_layouts(tmp_path):
    """The program writes IOR's strided layout into one file, or one file per
    rank, with the pattern at every byte (its --check reads them back)."""
    env = python_env()
    env.update(MPI_ENV)
    for layout, files in (("shared", ["f"]), ("fpp", [f"f.{r}" for r in range(4)])):
        d = tmp_path / layout
        d.mkdir()
        cp = subprocess.run([*MPIRUN, str(NATIVE / "sluice-bench-ior-shared"), "--file", str(d / "f"), "--piece", "3000",
                             "--per-rank", "9000", "--layout", layout, "--check"], env=env, capture_output=True,
                            text=True, check=True, timeout=300)
        r = json.loads(cp.stdout)
        assert r["writes"] == 12 and r["mismatches"] == 0
        assert sorted(p.name for p in d.iterdir()) == files
        for f in files:
            assert (d / f).stat().st_size == (36000 if layout == "shared" else 9000)


def test_ior_shared_ranks_reach_the_file_through_their_nodes_dirs(tmp_path):
    """--node-dirs A,B: two ranks open A/PATH, two B/PATH; here B is a
    symlink to A, so it is one file, written through both names and
    byte-checked; an absolute --file is refused."""
    env = python_env()
    env.update(MPI_ENV)
    a, b, logs = tmp_path / "a", tmp_path / "b", tmp_path / "logs"
    a.mkdir()
    b.symlink_to(a)
    argv = [str(NATIVE / IOR), "--file", "f", "--node-dirs", f"{a},{b}", "--piece", "3000", "--per-rank", "9000",
            "--check"]
    cp = sluice("run", "--mode", "profile", "--log-dir", str(logs), "--path", str(a), "--path", str(b), "--",
                *MPIRUN, *argv, env=MPI_ENV)
    r = json.loads(cp.stdout.splitlines()[-1])
    assert r["writes"] == 12 and r["mismatches"] == 0 and (a / "f").stat().st_size == 36000
    rep = report_json(logs)
    for d in (a, b):   # two ranks each, three writes each
        e = file_entry(rep, d / "f")
        assert e["processes"] == 2 and e["app"]["MPIIO_INDEP_WRITES"] == 6, (d, e["processes"])
    bad = subprocess.run([*MPIRUN, *argv[:2], str(a / "f"), *argv[3:]], env=env, capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode != 0 and "with --node-dirs, --file is a path inside those directories" in bad.stderr


# --------------------------------------------------------------------------
# The cost model and the rounds: each decision, its exact counters and bytes

IOR = "sluice-bench-ior-shared"
ACB_COUNTERS = ("MPIIO_ACB_DIRECT_WRITES", "MPIIO_ACB_FLUSHES", "MPIIO_ACB_OWN_FLUSHES", "MPIIO_ACB_ROUNDS",
                "MPIIO_ACB_BUFFER_WRITES")


def ior_plain_and_acb(tmp_path, *args: str) -> tuple[dict, dict]:
    """The IOR-style program plain and under --mode acb (OMPIO, 4 ranks):
    every file byte for byte the same; the acb run's MPIIO entries of every
    file, summed over ranks."""
    env = python_env()
    env.update(MPI_ENV)
    plain, acb, logs = tmp_path / "plain", tmp_path / "acb", tmp_path / "logs"
    plain.mkdir()
    acb.mkdir()
    argv = ["--piece", "16K", "--per-rank", "256K", "--check", *args]
    subprocess.run([*MPIRUN, str(NATIVE / IOR), "--file", str(plain / "f"), *argv], env=env, check=True,
                   capture_output=True, timeout=300)
    sluice("run", "--mode", "acb", "--log-dir", str(logs), "--path", str(acb), "--",
           *MPIRUN, str(NATIVE / IOR), "--file", str(acb / "f"), *argv, env=MPI_ENV)
    names = sorted(p.name for p in plain.iterdir())
    assert names == sorted(p.name for p in acb.iterdir())
    r = report_json(logs)
    entries = {}
    for name in names:
        assert (acb / name).read_bytes() == (plain / name).read_bytes(), name
        entries[name] = file_entry(r, acb / name)
    return entries, {k: sum(e["fs"][k] for e in entries.values()) for k in ACB_COUNTERS}


def test_shared_file_writes_of_a_unit_go_straight_through(tmp_path):
    """Independent 64 KiB pieces (the unit: at least 64 KiB) to a shared
    file, nothing pending anywhere: each goes straight to MPI-IO, no copy,
    no exchange; the flush at close finds nothing to move."""
    entries, acb = ior_plain_and_acb(tmp_path, "--piece", "64K")
    e = entries["f"]
    assert e["app"]["MPIIO_INDEP_WRITES"] == e["fs"]["MPIIO_INDEP_WRITES"] == 16
    assert e["app"]["MPIIO_HINTS"] == 0   # opened with MPI_INFO_NULL
    assert e["app"]["MPIIO_ACB_DIRECT_WRITES"] == 16
    assert acb == {"MPIIO_ACB_DIRECT_WRITES": 16, "MPIIO_ACB_FLUSHES": 4, "MPIIO_ACB_OWN_FLUSHES": 0,
                   "MPIIO_ACB_ROUNDS": 0, "MPIIO_ACB_BUFFER_WRITES": 0}


@pytest.fixture
def sync_mount(tmp_path):
    """A tmpfs mounted synchronous (`-o sync`), as the testbed's node
    clients with the write cache off: each write must reach the file system
    before it returns."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "sync"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "sync,size=64m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_on_a_synchronous_mount_the_unit_is_a_stripe(sync_mount):
    """Where each write is charged (a synchronous mount), the unit is at
    least a stripe (1 MiB): the same 64 KiB pieces that go straight through
    elsewhere are aggregated, and the 1 MiB file is one write."""
    entries, acb = ior_plain_and_acb(sync_mount, "--piece", "64K")
    e = entries["f"]
    assert e["app"]["MPIIO_INDEP_WRITES"] == 16 and e["fs"]["MPIIO_INDEP_WRITES"] == 1
    assert acb == {"MPIIO_ACB_DIRECT_WRITES": 0, "MPIIO_ACB_FLUSHES": 4, "MPIIO_ACB_OWN_FLUSHES": 0,
                   "MPIIO_ACB_ROUNDS": 4, "MPIIO_ACB_BUFFER_WRITES": 0}


def test_small_strided_pieces_are_exchanged_in_rounds(tmp_path):
    """16 KiB pieces strided over 4 ranks are aggregated. With 16 KiB
    stripes and cb_buffer_size 64 KiB the one aggregator of this node takes
    the 1 MiB file in 16 rounds of 64 KiB, each written as one write
    straight from its round buffer. Rounds overlap: the writes of the first
    15 are started (MPI_File_iwrite_at, which OMPIO makes POSIX AIO) while
    the next round is exchanged; the last one is written at once."""
    entries, acb = ior_plain_and_acb(tmp_path, "--hints", "striping_unit=16384,cb_buffer_size=65536")
    e = entries["f"]
    assert e["app"]["MPIIO_HINTS"] == 4   # each rank's open gave hints (Darshan's MPIIO_HINTS)
    assert e["app"]["MPIIO_INDEP_WRITES"] == 64 and e["fs"]["MPIIO_INDEP_WRITES"] == 16
    assert e["fs"]["MPIIO_SIZE_WRITE_10K_100K"] == 16
    # (each AIO write is a write of POSIX_WRITES too once aio_return collects it, as in Darshan)
    assert (e["fs"]["POSIX_AIO_WRITES"], e["fs"]["POSIX_WRITES"]) == (15, 16)
    assert acb == {"MPIIO_ACB_DIRECT_WRITES": 0, "MPIIO_ACB_FLUSHES": 4, "MPIIO_ACB_OWN_FLUSHES": 0,
                   "MPIIO_ACB_ROUNDS": 4 * 16, "MPIIO_ACB_BUFFER_WRITES": 0}


@pytest.mark.parametrize("aggregators", ["cb_nodes=2", "cb_config_list=*:2"])
def test_rounds_with_two_aggregators(tmp_path, aggregators):
    """Two aggregators (cb_nodes=2, or ROMIO's cb_config_list "*:2": two on
    each node, and this job has one), 16 KiB stripes dealt alternately, 32
    KiB each per round: 16 rounds of 64 KiB windows; each aggregator writes
    its stripe of a window as one write."""
    entries, acb = ior_plain_and_acb(tmp_path, "--hints", f"striping_unit=16384,cb_buffer_size=32768,{aggregators}")
    assert entries["f"]["fs"]["MPIIO_INDEP_WRITES"] == 64
    assert acb["MPIIO_ACB_ROUNDS"] == 4 * 16 and acb["MPIIO_ACB_OWN_FLUSHES"] == 0


def test_sequential_regions_are_written_by_their_ranks(tmp_path):
    """Each rank writes its own 256 KiB region in 16 KiB pieces: its pending
    data is one run of a unit or more, so the flush at close exchanges
    nothing and each rank writes its run as one write."""
    entries, acb = ior_plain_and_acb(tmp_path, "--layout", "blocked")
    e = entries["f"]
    assert e["app"]["MPIIO_INDEP_WRITES"] == 64 and e["fs"]["MPIIO_INDEP_WRITES"] == 4
    assert acb == {"MPIIO_ACB_DIRECT_WRITES": 0, "MPIIO_ACB_FLUSHES": 4, "MPIIO_ACB_OWN_FLUSHES": 4,
                   "MPIIO_ACB_ROUNDS": 0, "MPIIO_ACB_BUFFER_WRITES": 0}


def test_collective_pieces_of_a_unit_go_out_independently(tmp_path):
    """write_at_all with a 64 KiB piece on every rank (a unit, less than a
    stripe): each rank's piece goes to MPI-IO as its independent write, with
    no collective buffering; nothing is ever pending."""
    entries, acb = ior_plain_and_acb(tmp_path, "--piece", "64K", "--api", "coll")
    e = entries["f"]
    assert e["app"]["MPIIO_COLL_WRITES"] == 16 and e["fs"]["MPIIO_COLL_WRITES"] == 0
    assert e["fs"]["MPIIO_INDEP_WRITES"] == 16 and e["fs"]["MPIIO_BYTES_WRITTEN"] == 16 * 65536
    assert acb == {"MPIIO_ACB_DIRECT_WRITES": 16, "MPIIO_ACB_FLUSHES": 4, "MPIIO_ACB_OWN_FLUSHES": 0,
                   "MPIIO_ACB_ROUNDS": 0, "MPIIO_ACB_BUFFER_WRITES": 0}


def test_small_collective_pieces_are_aggregated(tmp_path):
    """write_at_all with 16 KiB pieces: kept pending and exchanged at close
    (one round: the default cb_buffer_size holds the 1 MiB file)."""
    entries, acb = ior_plain_and_acb(tmp_path, "--api", "coll")
    e = entries["f"]
    assert e["app"]["MPIIO_COLL_WRITES"] == 64 and e["fs"]["MPIIO_COLL_WRITES"] == 0
    assert e["fs"]["MPIIO_INDEP_WRITES"] == 1
    assert acb == {"MPIIO_ACB_DIRECT_WRITES": 0, "MPIIO_ACB_FLUSHES": 4, "MPIIO_ACB_OWN_FLUSHES": 0,
                   "MPIIO_ACB_ROUNDS": 4, "MPIIO_ACB_BUFFER_WRITES": 0}


def test_file_per_process_streams_its_buffer(tmp_path):
    """A one-rank file writes its pending pieces whenever they reach
    cb_buffer_size (64 KiB here: four 16 KiB pieces), so it holds no more
    than that; nothing is left for the flush at close."""
    entries, acb = ior_plain_and_acb(tmp_path, "--layout", "fpp", "--hints",
                                     "striping_unit=65536,cb_buffer_size=65536")
    assert len(entries) == 4
    for e in entries.values():
        assert e["app"]["MPIIO_INDEP_WRITES"] == 16 and e["fs"]["MPIIO_INDEP_WRITES"] == 4
    assert acb == {"MPIIO_ACB_DIRECT_WRITES": 0, "MPIIO_ACB_FLUSHES": 4, "MPIIO_ACB_OWN_FLUSHES": 0,
                   "MPIIO_ACB_ROUNDS": 0, "MPIIO_ACB_BUFFER_WRITES": 16}


def test_file_per_process_small_pieces_one_write_at_close(tmp_path):
    """Without a small buffer the one-rank file's 256 KiB go out at close as
    one write, with no exchange."""
    entries, acb = ior_plain_and_acb(tmp_path, "--layout", "fpp")
    for e in entries.values():
        assert e["fs"]["MPIIO_INDEP_WRITES"] == 1
    assert acb == {"MPIIO_ACB_DIRECT_WRITES": 0, "MPIIO_ACB_FLUSHES": 4, "MPIIO_ACB_OWN_FLUSHES": 4,
                   "MPIIO_ACB_ROUNDS": 0, "MPIIO_ACB_BUFFER_WRITES": 0}


@pytest.mark.parametrize("variant", ["indep", "coll", "h5-indep", "h5-coll"])
def test_rounds_keep_amr_checkpoints_byte_identical(tmp_path, variant):
    """The AMR checkpoints (boxes straddling stripes, HDF5's fill then data)
    through many small rounds: 4 KiB stripes, two aggregators, 8 KiB per
    aggregator and round."""
    prog = "sluice-bench-amr-ckpt-h5" if variant.startswith("h5") else "sluice-bench-amr-ckpt"
    hints = ["--hints", "striping_unit=4096,sluice_acb_aggregators=2,sluice_acb_write_size=8192,cb_buffer_size=8192"]
    plain = tmp_path / "plain.dat"
    amr(prog, variant, plain, *hints)
    d = tmp_path / "acb"
    d.mkdir()
    logs = tmp_path / "logs"
    amr(prog, variant, d / "c.dat", *hints, mode="acb", logdir=logs)
    assert (d / "c.dat").read_bytes() == plain.read_bytes()
    e = file_entry(report_json(logs), d / "c.dat")
    if variant == "h5-coll":
        # HDF5's collective writes through a view carry 5000-byte boxes, a
        # stripe or more: they go to MPI-IO collectively; the rest is exchanged.
        assert e["app"]["MPIIO_ACB_DIRECT_WRITES"] > 0 and e["fs"]["MPIIO_ACB_ROUNDS"] >= 4
    else:
        assert e["fs"]["MPIIO_ACB_ROUNDS"] >= 4 * 10


def test_a_rank_over_its_memory_cap_in_collective_writes(tmp_path):
    """Ranks holding different numbers of boxes reach a small memory cap in
    different collective calls: the rank that stopped aggregating writes its
    later collective pieces as independent writes (a collective call of its
    own would wait forever for the others, which keep theirs pending)."""
    hints = ["--hints", "striping_unit=4096,sluice_acb_aggregators=2,sluice_acb_max_memory=45000"]
    plain = tmp_path / "plain.dat"
    amr("sluice-bench-amr-ckpt", "coll", plain, *hints)
    d = tmp_path / "acb"
    d.mkdir()
    logs = tmp_path / "logs"
    amr("sluice-bench-amr-ckpt", "coll", d / "c.dat", *hints, mode="acb", logdir=logs)
    assert (d / "c.dat").read_bytes() == plain.read_bytes()
    e = file_entry(report_json(logs), d / "c.dat")
    assert e["app"]["MPIIO_FALLBACKS"] >= 1 and e["fs"]["MPIIO_INDEP_WRITES"] > 0


EPOCHS_PY = """
import sys
from mpi4py import MPI

comm = MPI.COMM_WORLD
fh = MPI.File.Open(comm, sys.argv[1], MPI.MODE_CREATE | MPI.MODE_WRONLY)
if comm.rank == 0:
    fh.Write_at(0, b"A" * 4096)            # small: kept pending on rank 0
fh.Set_view(0, MPI.BYTE, MPI.BYTE, "native")   # collective: that write is of an earlier epoch
comm.Barrier()
if comm.rank == 1:
    fh.Write_at(0, b"B" * 65536)           # a unit, but it must land after rank 0's write
fh.Sync()                                  # nothing pending anywhere now
comm.Barrier()
if comm.rank == 2:
    fh.Write_at(65536, b"C" * 65536)       # a unit: straight through
fh.Close()
"""


def test_a_unit_waits_for_earlier_epochs_of_other_ranks(tmp_path):
    """After a collective call, another rank may hold a pending write of the
    epoch before it, which must land first: a unit written then stays
    pending (and wins by its epoch) until a flush shows nothing is pending;
    after the sync it goes straight through. The file is plain's."""
    script = tmp_path / "epochs.py"
    script.write_text(EPOCHS_PY)
    env = python_env()
    env.update(MPI_ENV)
    py = str(REPO / ".venv" / "bin" / "python")
    plain, acb, logs = tmp_path / "plain.dat", tmp_path / "acb" / "f.dat", tmp_path / "logs"
    acb.parent.mkdir()
    subprocess.run([*MPIRUN, py, str(script), str(plain)], env=env, check=True, capture_output=True, timeout=300)
    sluice("run", "--mode", "acb", "--log-dir", str(logs), "--path", str(acb.parent), "--",
           *MPIRUN, py, str(script), str(acb), env=MPI_ENV)
    assert plain.read_bytes() == b"B" * 65536 + b"C" * 65536
    assert acb.read_bytes() == plain.read_bytes()
    e = file_entry(report_json(logs), acb)
    assert e["app"]["MPIIO_ACB_DIRECT_WRITES"] == 1 and e["app"]["MPIIO_INDEP_WRITES"] == 3
