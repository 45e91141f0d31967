"""Layouts at create (docs/layout.md): a NEW file on CephFS gets the layout of
its class (or SLUICE_LAYOUT's) before its first write, shown by
`getfattr -n ceph.file.layout`, with its bytes intact; a file that existed or
whose directory has a layout of its own is left alone; a layout that cannot be
set is counted, never the program's error. The CephFS tests run on the CephFS
testbed (marker cephfs, root); the byte layout of Lustre's attribute is
unit-tested in C (tests/unit/test_layout.c)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import NATIVE, file_entry, report_json, sluice

MiB = 1 << 20
LAYOUT = ("POSIX_LAYOUT_SETS", "POSIX_LAYOUT_STRIPES", "POSIX_LAYOUT_STRIPE_BYTES", "POSIX_LAYOUT_SHARED",
          "POSIX_LAYOUT_EXISTING", "POSIX_LAYOUT_DIR_KEPT", "POSIX_LAYOUT_DEFAULT", "POSIX_LAYOUT_FAILS")


def layout_counters(logdir: Path, path: Path) -> dict:
    app = file_entry(report_json(logdir), path)["app"]
    return {k: app[k] for k in LAYOUT if app.get(k)}


def ceph_layout(path: Path, name: str = "ceph.file.layout") -> str:
    out = subprocess.run(["getfattr", "--only-values", "-n", name, str(path)], capture_output=True, text=True,
                         check=True).stdout
    return out.strip()


def write_file(logdir: Path, path: Path, size: int, *run_args: str) -> bytes:
    """`size` bytes written into `path` by dd under `sluice run RUN_ARGS`; returns them."""
    data = bytes((i * 7 + 3) & 0xFF for i in range(size))
    src = logdir.parent / "src.bin"
    src.write_bytes(data)
    sluice("run", "--log-dir", str(logdir), *run_args, "--", "dd", f"if={src}", f"of={path}", "bs=1M",
           "status=none")
    return data


@pytest.fixture
def cdir(cephfs_mount):
    d = Path(tempfile.mkdtemp(prefix="sluice-layout-", dir=cephfs_mount))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.cephfs
def test_layout_set_at_create(cdir, logdir):
    f = cdir / "out.bin"
    data = write_file(logdir, f, 5 * MiB + 123, "--layout", "stripe_count=3,stripe_size=1M")
    assert ceph_layout(f) == "stripe_unit=1048576 stripe_count=3 object_size=4194304 pool=cephfs_data"
    assert f.read_bytes() == data
    assert layout_counters(logdir, f) == {"POSIX_LAYOUT_SETS": 1, "POSIX_LAYOUT_STRIPES": 3,
                                          "POSIX_LAYOUT_STRIPE_BYTES": MiB}
    assert "Layouts at create" in sluice("report", str(logdir)).stdout
    # and the same row in the HTML page
    page = logdir.parent / "r.html"
    sluice("report", "--html", str(page), str(logdir))
    html = page.read_text()
    section = html[html.index('<section id="layouts">'):]
    row = section[section.index(f'<tr data-layout="{f}">'):].split("</tr>")[0]
    assert re.findall(r"<td[^>]*>([^<]*)</td>", row) == [str(f), "set", "3", "1.0 MiB"]


@pytest.mark.cephfs
def test_exclusive_create_keeps_its_meaning(cdir, logdir):
    """The file is created with its layout before the program's open: an
    O_EXCL create still succeeds once and fails with EEXIST the second time."""
    f = cdir / "excl.bin"
    script = ("import os, sys\n"
              "fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)\n"
              "os.write(fd, b'abc'); os.close(fd)\n"
              "try:\n    os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)\n"
              "except FileExistsError:\n    print('EEXIST')\n")
    cp = sluice("run", "--log-dir", str(logdir), "--layout", "stripe_count=2,stripe_size=1M", "--",
                "python3", "-c", script, str(f))
    assert cp.stdout.strip() == "EEXIST"
    assert f.read_bytes() == b"abc" and f.stat().st_mode & 0o777 == 0o640 & ~_umask()
    assert "stripe_count=2" in ceph_layout(f)
    assert layout_counters(logdir, f) == {"POSIX_LAYOUT_SETS": 1, "POSIX_LAYOUT_STRIPES": 2,
                                          "POSIX_LAYOUT_STRIPE_BYTES": MiB}


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


@pytest.mark.cephfs
def test_auto_mode_one_stripe_staged_file(cdir, logdir):
    """--mode auto stages a new file; its publish creates it with one stripe
    (file per process)."""
    f = cdir / "fpp.bin"
    data = write_file(logdir, f, 3 * MiB, "--mode", "auto", "--layout", "stripe_count=1,stripe_size=64K,object_size=1M")
    assert ceph_layout(f) == "stripe_unit=65536 stripe_count=1 object_size=1048576 pool=cephfs_data"
    assert f.read_bytes() == data
    assert layout_counters(logdir, f)["POSIX_LAYOUT_SETS"] == 1


@pytest.mark.cephfs
def test_auto_mode_one_processs_file(cdir, logdir, tmp_path):
    """--mode auto: one process's file gets one stripe in 1 MiB objects; a
    layout equal to the one the file gets anyway is not set, and the log says
    why."""
    f = cdir / "fpp2.bin"
    data = write_file(logdir, f, 2 * MiB, "--mode", "auto")
    assert ceph_layout(f) == "stripe_unit=1048576 stripe_count=1 object_size=1048576 pool=cephfs_data"
    assert f.read_bytes() == data
    assert layout_counters(logdir, f) == {"POSIX_LAYOUT_SETS": 1, "POSIX_LAYOUT_STRIPES": 1,
                                          "POSIX_LAYOUT_STRIPE_BYTES": MiB}
    g, logs2 = cdir / "dflt.bin", tmp_path / "logs2"
    write_file(logs2, g, MiB, "--layout", "stripe_count=1,stripe_size=4M")
    assert ceph_layout(g) == "stripe_unit=4194304 stripe_count=1 object_size=4194304 pool=cephfs_data"
    assert layout_counters(logs2, g) == {"POSIX_LAYOUT_DEFAULT": 1}
    assert "kept: the layout it gets anyway" in sluice("report", str(logs2)).stdout


@pytest.mark.cephfs
def test_existing_file_and_directory_layout_kept(cdir, logdir, tmp_path):
    old = cdir / "old.bin"
    old.write_bytes(b"")
    subprocess.run(["setfattr", "-n", "ceph.file.layout.stripe_count", "-v", "2", str(old)], check=True)
    before = ceph_layout(old)
    data = write_file(logdir, old, MiB, "--layout", "stripe_count=5,stripe_size=1M")
    assert ceph_layout(old) == before and "stripe_count=2" in before
    assert old.read_bytes() == data
    assert layout_counters(logdir, old) == {"POSIX_LAYOUT_EXISTING": 1}

    sub = cdir / "sub"
    sub.mkdir()
    subprocess.run(["setfattr", "-n", "ceph.dir.layout.stripe_count", "-v", "6", str(sub)], check=True)
    f = sub / "new.bin"
    logs2 = tmp_path / "logs2"
    write_file(logs2, f, MiB, "--layout", "stripe_count=5,stripe_size=1M")
    assert "stripe_count=6" in ceph_layout(f)
    assert layout_counters(logs2, f) == {"POSIX_LAYOUT_DIR_KEPT": 1}


@pytest.mark.cephfs
def test_layout_failure_is_not_the_programs(cdir, logdir):
    """A layout CephFS refuses (object size not a multiple of the unit): the
    file gets the default, the program succeeds, the failure is counted."""
    f = cdir / "bad.bin"
    data = write_file(logdir, f, 2 * MiB, "--layout", "stripe_count=2,stripe_size=1M,object_size=1536K")
    assert "stripe_count=1" in ceph_layout(f)
    assert f.read_bytes() == data
    assert layout_counters(logdir, f) == {"POSIX_LAYOUT_FAILS": 1}


@pytest.mark.cephfs
def test_shared_mpi_file_many_stripes(cdir, logdir):
    """MPI_File_open(MPI_MODE_CREATE) by 4 ranks under --mode auto: a stripe
    per rank of the aggregation unit (--acb-stripe-size)."""
    if not shutil.which("mpirun"):
        pytest.fail("mpirun is missing (scripts/setup installs Open MPI)")
    f = cdir / "shared.dat"
    env = {"OMPI_MCA_io": "romio321", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    sluice("run", "--mode", "auto", "--acb-stripe-size", "512K", "--log-dir", str(logdir), "--",
           "mpirun", "--oversubscribe", "-np", "4", str(NATIVE / "sluice-bench-ior-shared"),
           "--file", str(f), "--piece", str(MiB), "--per-rank", str(4 * MiB), "--layout", "blocked", "--check",
           env=env)
    assert ceph_layout(f) == "stripe_unit=524288 stripe_count=4 object_size=2097152 pool=cephfs_data"
    assert f.stat().st_size == 16 * MiB
    c = layout_counters(logdir, f)
    assert c["POSIX_LAYOUT_SETS"] == 1 and c["POSIX_LAYOUT_SHARED"] == 1 and c["POSIX_LAYOUT_STRIPES"] == 4


@pytest.mark.cephfs
def test_simulated_nodes_on_cephfs_share_one_striped_mpi_file(cdir):
    """`sluice testbed up --fs cephfs --nodes 2`: each node its own hostname
    and ceph-fuse client at the same path, so what node 1 wrote node 2 reads
    through its own client; an MPI-IO file written by ranks on both nodes
    under --mode auto gets its layout once, at create, and the pattern's
    bytes; `--nodes 0` leaves no node behind."""
    from sluice import testbed
    from sluice.testbed import cephfs

    if subprocess.run(["ip", "link", "show", "sluice-nodes"], capture_output=True).returncode == 0:
        pytest.fail("the nodes of another testbed are up (sluice testbed down first): one set of nodes at a time")
    netns = cephfs.Settings.from_env().netns
    try:
        sluice("testbed", "up", "--fs", "cephfs", "--nodes", "2")
        nodes = cephfs.status()["nodes"]
        assert [(n["hostname"], n["mounted"], n["alive"], n["namespaces"]) for n in nodes] == [
            ("node1", True, True, True), ("node2", True, True, True)]
        assert testbed.nodes_settings().netns == netns
        sluice("testbed", "exec", "node1", "--", "sh", "-c", f"hostname > {cdir}/written-on")
        assert sluice("testbed", "exec", "node2", "--", "cat", f"{cdir}/written-on").stdout == "node1\n"
        f = cdir / "shared.dat"
        logdir = cdir / "logs"   # where every node writes (each node's /tmp is its own)
        env = {**testbed.mpi_environment(), "OMPI_MCA_io": "romio321", "OMPI_ALLOW_RUN_AS_ROOT": "1",
               "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        out = sluice("run", "--mode", "auto", "--acb-stripe-size", "512K", "--log-dir", str(logdir), "--",
                     "mpirun", "--host", "node1:2,node2:2", str(NATIVE / "sluice-bench-ior-shared"),
                     "--file", str(f), "--piece", str(64 << 10), "--per-rank", str(4 * MiB), "--layout", "shared",
                     "--check", env=env, cwd=cdir).stdout
        assert '"mismatches":0' in out
        assert ceph_layout(f) == "stripe_unit=524288 stripe_count=4 object_size=2097152 pool=cephfs_data"
        assert f.stat().st_size == 16 * MiB
        assert [h["host"] for h in report_json(logdir)["hosts"]] == ["node1", "node2"]
        assert layout_counters(logdir, f)["POSIX_LAYOUT_SETS"] == 1
    finally:
        sluice("testbed", "up", "--fs", "cephfs", "--nodes", "0")
    assert cephfs.status()["nodes"] == []
    assert not Path(f"/run/netns/{netns}-n1").exists() and not Path(f"/run/netns/{netns}-n2").exists()
    assert subprocess.run(["ip", "link", "show", "sluice-nodes"], capture_output=True).returncode != 0


@pytest.mark.cephfs
def test_file_layouts_recorded(cdir, logdir, tmp_path):
    """Whatever set them, every file's layout is in its record as CephFS
    gives it at open (profile, buffer and stage mode), the same for the
    report's merge of two processes; sluice sets nothing outside auto."""
    sub = cdir / "wide"
    sub.mkdir()
    for attr, value in (("stripe_unit", "1048576"), ("stripe_count", "3")):
        subprocess.run(["setfattr", "-n", f"ceph.dir.layout.{attr}", "-v", value, str(sub)], check=True)
    want_wide = {"POSIX_STRIPE_SIZE": MiB, "POSIX_STRIPE_COUNT": 3, "POSIX_OBJECT_SIZE": 4 * MiB,
                 "POSIX_LAYOUT_COMPONENTS": 1}
    want_default = {"POSIX_STRIPE_SIZE": 4 * MiB, "POSIX_STRIPE_COUNT": 1, "POSIX_OBJECT_SIZE": 4 * MiB,
                    "POSIX_LAYOUT_COMPONENTS": 1}
    for mode in ("profile", "buffer", "stage"):
        for f, want in ((sub / f"{mode}.bin", want_wide), (cdir / f"{mode}.bin", want_default)):
            logs = tmp_path / f"{mode}-{f.parent.name}"
            data = write_file(logs, f, 2 * MiB + 5, "--mode", mode, "--path", str(cdir))
            assert f.read_bytes() == data
            entry = file_entry(report_json(logs), f)
            for side in ("app", "fs"):
                assert {k: entry[side][k] for k in want} == want, (mode, f, side)
            assert layout_counters(logs, f) == {}      # nothing set by sluice outside auto
        assert ceph_layout(sub / f"{mode}.bin") == \
            "stripe_unit=1048576 stripe_count=3 object_size=4194304 pool=cephfs_data"
    # the report's access-pattern table shows it beside the file system
    logs = tmp_path / "stage-wide"
    page = tmp_path / "r.html"
    sluice("report", "--html", str(page), str(logs))
    html = page.read_text()
    row = html[html.index('<table class="files" id="pattern">'):].split("</tr>")[1]
    assert row.rstrip().endswith("; 3 x 1.0 MiB stripes, 4.0 MiB objects</td>"), row
    # two processes' records of one file merge to the one layout, not its sum
    logs = tmp_path / "two"
    f = sub / "two.bin"
    write_file(logs, f, MiB, "--path", str(cdir), "--job-id", "two")
    sluice("run", "--log-dir", str(logs), "--path", str(cdir), "--job-id", "two", "--", "dd", f"if={f}", "of=/dev/null", "status=none")
    entry = file_entry(report_json(logs), f)
    assert entry["processes"] == 2 and entry["app"]["POSIX_STRIPE_COUNT"] == 3


def test_no_layout_file_system_untouched(tmp_path, logdir):
    """On a file system without per-file layouts nothing is tried or counted."""
    f = tmp_path / "plain.bin"
    data = write_file(logdir, f, MiB, "--layout", "stripe_count=4,stripe_size=1M")
    assert f.read_bytes() == data
    assert layout_counters(logdir, f) == {}
    app = file_entry(report_json(logdir), f)["app"]
    assert [app[k] for k in ("POSIX_STRIPE_SIZE", "POSIX_STRIPE_COUNT", "POSIX_OBJECT_SIZE",
                             "POSIX_LAYOUT_COMPONENTS")] == [0, 0, 0, 0]


def test_bad_layout_setting_is_reported(tmp_path, logdir):
    f = tmp_path / "x.bin"
    cp = sluice("run", "--log-dir", str(logdir), "--layout", "stripes=4", "--", "dd", "if=/dev/zero", f"of={f}",
                "bs=4k", "count=1", "status=none")
    assert f.stat().st_size == 4096
    assert "SLUICE_LAYOUT=stripes=4 is not auto, off or stripe_count=N,stripe_size=S" in cp.stderr
