"""`--mode auto`: per file, what the open asks for picks the tier — a file
created or truncated is staged on the node-local tier, an existing file
updated or read is buffered — and every choice is in the log
(POSIX_STAGED_OPENS)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import file_entry, report_json, sluice

from sluice.report.model import load_job
from sluice.report.text import auto_choices


def test_created_files_are_staged_and_updated_files_buffered(tmp_path, logdir):
    work = tmp_path / "w"
    work.mkdir()
    (work / "log.txt").write_text("old\n")
    tier = tmp_path / "tier"
    # unbuffered: one write() per line
    script = ("out = open('out.txt', 'wb', buffering=0)\n"
              "log = open('log.txt', 'ab', buffering=0)\n"
              "for i in range(200):\n"
              "    out.write(b'new%d\\n' % i)\n"
              "    log.write(b'add%d\\n' % i)\n"
              "out.close(); log.close()\n"
              "open('log.txt', 'rb').read()\n")
    sluice("run", "-q", "--mode", "auto", "--tier", str(tier), "--log-dir", str(logdir), "--path", str(work),
           "--", sys.executable, "-c", script, cwd=work)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "log.txt").write_text("old\n")
    subprocess.run([sys.executable, "-c", script], cwd=plain, check=True)
    for name in ("out.txt", "log.txt"):
        assert (work / name).read_bytes() == (plain / name).read_bytes()
    report = report_json(logdir)
    out, log = file_entry(report, work / "out.txt"), file_entry(report, work / "log.txt")
    # out.txt: created, so staged: one open served by the tier, published in
    # one write; the program's 200 writes never reached the file system.
    assert out["app"]["POSIX_STAGED_OPENS"] == 1 and out["app"]["POSIX_WRITES"] == 200
    assert out["fs"]["POSIX_WRITES"] == 1
    # log.txt: existing and appended to, so buffered (not staged): 200
    # appends reach the file system as one write.
    assert log["app"]["POSIX_STAGED_OPENS"] == 0 and log["app"]["POSIX_WRITES"] == 200
    assert log["fs"]["POSIX_WRITES"] == 1
    assert not list((tier / "data").iterdir())  # published before the program's exit returned
    assert ("Node-local tier (stage/auto): 1 file staged (1 open served by the tier); "
            "1 other opened file went to the tier below (auto: buffer)") in sluice("report", str(logdir)).stdout


def test_auto_names_its_choices_in_the_report(tmp_path, logdir):
    work = tmp_path / "w"
    work.mkdir()
    sluice("run", "-q", "--mode", "auto", "--tier", str(tmp_path / "tier"), "--log-dir", str(logdir),
           "--path", str(work), "--", "sh", "-c", "echo x > a; echo y >> a; cat a > /dev/null", cwd=work)
    text = sluice("report", str(logdir)).stdout
    assert "mode: auto" in text
    e = file_entry(report_json(logdir), work / "a")
    # the create was staged; the append reopened the staged file (the tier
    # serves it again); the read found it published
    assert e["app"]["POSIX_STAGED_OPENS"] >= 1 and (work / "a").read_text() == "x\ny\n"


PHASES = """
import os, random
fd = os.open("field.dat", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
for i in range(2048):                      # phase 1: written in 8 KiB pieces
    os.write(fd, bytes([i % 251]) * 8192)
os.close(fd)
fd = os.open("field.dat", os.O_RDONLY)     # phase 2: read back front to back in 4 KiB reads
while os.read(fd, 4096):
    pass
os.close(fd)
fd = os.open("field.dat", os.O_RDWR)       # phase 3: 400 scattered 512-byte updates
rng = random.Random(3)
for i in range(400):
    os.pwrite(fd, b"x" * 512, rng.randrange(2048 * 16) * 512)
os.close(fd)
"""


def test_a_file_whose_pattern_changes_is_served_right_in_each_phase(tmp_path, logdir):
    """Written in small pieces, read back sequentially, then updated in scattered pieces, all within the
    stage delay: every phase is served by the node-local tier, and the file system sees the final file
    once, in 4 MiB writes."""
    work, plain = tmp_path / "w", tmp_path / "plain"
    work.mkdir()
    plain.mkdir()
    # a stage delay far above the program's run time: no publish between the phases, even on a loaded machine
    sluice("run", "-q", "--mode", "auto", "--stage-delay", "10000", "--tier", str(tmp_path / "tier"),
           "--log-dir", str(logdir), "--path", str(work), "--", sys.executable, "-c", PHASES, cwd=work)
    subprocess.run([sys.executable, "-c", PHASES], cwd=plain, check=True)
    assert (work / "field.dat").read_bytes() == (plain / "field.dat").read_bytes()
    e = file_entry(report_json(logdir), work / "field.dat")
    assert e["app"]["POSIX_WRITES"] == 2048 + 400 and e["app"]["POSIX_READS"] == 4097
    assert e["app"]["POSIX_STAGED_OPENS"] == 3
    assert e["fs"]["POSIX_OPENS"] == 1 and e["fs"]["POSIX_READS"] == 0
    assert e["fs"]["POSIX_WRITES"] == 4 and e["fs"]["POSIX_BYTES_WRITTEN"] == 16 * 1024 * 1024


FIRST_WRITES = """
import os
def write(name, sizes, second_description=False):
    fd = os.open(name, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o640)
    other = os.open(name, os.O_RDONLY) if second_description else -1
    for i, n in enumerate(sizes):
        os.write(fd, bytes([65 + i % 26]) * n)
    if other >= 0:
        os.close(other)
    os.close(fd)
write("ckpt", [1 << 20] * 6)                          # large from the first write
write("log", [100] * 50 + [1 << 20])                  # small first
write("pair", [1 << 20] * 2, second_description=True)  # another description has it open
fd = os.open("sized", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o640)  # sized first, then written
os.ftruncate(fd, 8 << 20)
os.pwrite(fd, b"S" * (1 << 20), 0)
os.close(fd)
"""


NAMES = ("ckpt", "log", "pair", "sized")


def run_first_writes(tmp_path, logdir, *opts: str, env: dict[str, str] | None = None):
    work, plain = tmp_path / "w", tmp_path / "plain"
    work.mkdir()
    plain.mkdir()
    sluice("run", "-q", "--mode", "auto", *opts, "--tier", str(tmp_path / "tier"), "--log-dir", str(logdir),
           "--path", str(work), "--", sys.executable, "-c", FIRST_WRITES, cwd=work, env=env)
    subprocess.run([sys.executable, "-c", FIRST_WRITES], cwd=plain, check=True)
    for name in NAMES:
        assert (work / name).read_bytes() == (plain / name).read_bytes()
        assert (work / name).stat().st_mode == (plain / name).stat().st_mode
    report = report_json(logdir)
    return work, {name: file_entry(report, work / name) for name in NAMES}


def test_a_file_whose_first_write_is_large_goes_straight_through(tmp_path, logdir):
    """Staged at its create, a file whose first write is 1 MiB (SLUICE_AUTO_LARGE) goes to the shared
    file system at that write: its writes reach the file system as the program made them, none through
    the tier. A small first write, a second description open on the file, or a size set before the
    first write keep it staged."""
    work, e = run_first_writes(tmp_path, logdir)
    ckpt, log, pair = e["ckpt"], e["log"], e["pair"]
    assert ckpt["app"]["POSIX_AUTO_DIRECT"] == 1 and ckpt["app"]["POSIX_STAGED_OPENS"] == 1
    assert ckpt["fs"]["POSIX_WRITES"] == 6 and ckpt["fs"]["POSIX_BYTES_WRITTEN"] == 6 << 20
    # staged whole: published in one write of 1 MiB + 5,000 bytes, 2 MiB
    assert log["app"]["POSIX_AUTO_DIRECT"] == 0 and log["app"]["POSIX_WRITES"] == 51
    assert log["fs"]["POSIX_WRITES"] == 1 and log["fs"]["POSIX_BYTES_WRITTEN"] == (1 << 20) + 5000
    assert pair["app"]["POSIX_AUTO_DIRECT"] == 0 and pair["fs"]["POSIX_WRITES"] == 1
    assert e["sized"]["app"]["POSIX_AUTO_DIRECT"] == 0 and e["sized"]["app"]["POSIX_STAGED_OPENS"] == 1
    assert not list((tmp_path / "tier" / "data").iterdir())
    assert "--mode auto: what each opened file got" in sluice("report", str(logdir)).stdout
    html = tmp_path / "r.html"
    sluice("report", "--html", str(html), str(logdir))
    assert ('<tr data-auto="straight through"><td>straight through</td><td class="num">1</td>'
            '<td class="num">1</td>') in html.read_text()
    # (choice, files, opens, first file)
    assert [(c, n, o, p) for c, _, n, o, p in auto_choices(load_job([logdir]))] == [
        ("straight through", 1, 1, str(work / "ckpt")), ("staged", 3, 4, str(work / "log"))]


def test_auto_large_zero_stages_whatever_the_size(tmp_path, logdir):
    _, e = run_first_writes(tmp_path, logdir, "--auto-large", "0")
    ckpt = e["ckpt"]
    assert ckpt["app"]["POSIX_AUTO_DIRECT"] == 0 and ckpt["app"]["POSIX_STAGED_OPENS"] == 1
    assert ckpt["fs"]["POSIX_WRITES"] == 2   # published in 4 MiB pieces


N_TO_1 = """
import os
KIB = 1024
def child(fn):
    pid = os.fork()
    if pid == 0:
        fn()
        os._exit(0)
    return pid
def make_empty(name):
    os.close(os.open(name, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o640))
def fill_part(k):   # a part of one shared file, at its offset, in 3 pieces
    fd = os.open("shared", os.O_WRONLY)
    for i in range(3):
        os.pwrite(fd, bytes([65 + k]) * (64 * KIB), (3 * k + i) * 64 * KIB)
    os.fsync(fd)
    os.close(fd)
def append_line(k):
    fd = os.open("appended", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"line %d\\n" % k)
    os.close(fd)
for name in ("shared", "appended", "held", "big"):
    make_empty(name)
for k in range(3):   # one after the other: the same bytes on every run
    os.waitpid(child(lambda: fill_part(k)), 0)
    os.waitpid(child(lambda: append_line(k)), 0)
def fill_big():   # one process writes it whole, from a first write of 2 MiB
    fd = os.open("big", os.O_WRONLY)
    os.pwrite(fd, b"B" * (2 << 20), 0)
    os.pwrite(fd, b"b" * 100, 2 << 20)
    os.close(fd)
os.waitpid(child(fill_big), 0)
held, go = os.pipe(), os.pipe()
def reader():   # holds "held" open while another process writes it
    fd = os.open("held", os.O_RDONLY)
    os.write(held[1], b"1")
    os.read(go[0], 1)
    os.close(fd)
r = child(reader)
os.read(held[0], 1)
def writer():
    fd = os.open("held", os.O_WRONLY)
    os.pwrite(fd, b"H" * (2 << 20), 0)
    os.close(fd)
os.waitpid(child(writer), 0)
os.write(go[1], b"1")
os.waitpid(r, 0)
"""


def test_an_empty_file_others_fill_in_goes_direct_only_from_a_lone_large_write(tmp_path, logdir):
    """N-1: a process creates a file empty and closes it, others open it by
    name and write their parts at offsets. With small pieces (64 KiB) auto
    keeps it staged, as stage does, and publishes it in one write: straight
    through, such pieces would reach the file system one by one wherever
    they interleave (strided-shared: 16,384 writes and 4x the wall time of
    stage; docs/benchmarks.md). A file one process fills from a first write
    of 2 MiB goes to the shared file system at that write (POSIX_AUTO_DIRECT:
    published empty, then the writes as made), unless a reader holds it
    open through the tier then. A file others append to stays staged. The
    bytes are a plain run's."""
    plain = tmp_path / "plain"
    plain.mkdir()
    subprocess.run([sys.executable, "-c", N_TO_1], cwd=plain, check=True)
    for mode in ("auto", "stage"):
        work, logs = tmp_path / mode, logdir / mode
        work.mkdir()
        sluice("run", "-q", "--mode", mode, "--tier", str(tmp_path / f"tier-{mode}"), "--log-dir", str(logs),
               "--stage-delay", "60000", "--path", str(work), "--", sys.executable, "-c", N_TO_1, cwd=work)
        report = report_json(logs)
        for name in ("shared", "appended", "held", "big"):
            assert (work / name).read_bytes() == (plain / name).read_bytes(), (mode, name)
            assert (work / name).stat().st_mode == (plain / name).stat().st_mode, (mode, name)
            e = file_entry(report, work / name)
            direct = mode == "auto" and name == "big"
            assert e["app"]["POSIX_AUTO_DIRECT"] == int(direct), (mode, name)
            # staged: one publishing write; straight through: the program's two
            assert e["fs"]["POSIX_WRITES"] == (2 if direct else 1), (mode, name)
            assert e["fs"]["POSIX_FSYNCS"] == 0, (mode, name)
        shared = file_entry(report, work / "shared")
        assert shared["app"]["POSIX_WRITES"] == 9 and shared["app"]["POSIX_FSYNCS"] == 3
        assert shared["app"]["POSIX_STAGED_OPENS"] == 4
        assert shared["fs"]["POSIX_BYTES_WRITTEN"] == 9 * 64 * 1024
        assert not list((tmp_path / f"tier-{mode}" / "data").iterdir())


def _mount_type(path: Path) -> str:
    best, kind = "", ""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point, fstype = line.split()[1:3]
        point = point.replace("\\040", " ")
        if (str(path) + "/").startswith(point.rstrip("/") + "/") and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def test_files_on_this_nodes_own_file_systems_are_only_profiled(tmp_path, logdir):
    """By default (SLUICE_AUTO_LOCAL=0) --mode auto leaves files on ext4, xfs, tmpfs... to the file
    system: every call reaches it as the program made it, each open is in POSIX_AUTO_LOCAL."""
    if _mount_type(tmp_path) not in ("ext4", "xfs", "btrfs", "tmpfs", "overlay", "ext3", "zfs", "f2fs"):
        pytest.skip(f"{tmp_path} is not on a local file system")
    work, e = run_first_writes(tmp_path, logdir, env={"SLUICE_AUTO_LOCAL": "0"})
    for name, writes in (("ckpt", 6), ("log", 51), ("pair", 2), ("sized", 1)):
        app, fs = e[name]["app"], e[name]["fs"]
        assert app["POSIX_AUTO_LOCAL"] == app["POSIX_OPENS"] == fs["POSIX_OPENS"] >= 1
        assert app["POSIX_STAGED_OPENS"] == app["POSIX_AUTO_DIRECT"] == 0
        assert fs["POSIX_WRITES"] == app["POSIX_WRITES"] == writes
    assert not (tmp_path / "tier" / "data").exists() or not list((tmp_path / "tier" / "data").iterdir())
    # (pair is opened twice)
    assert [(c, n, o) for c, _, n, o, _ in auto_choices(load_job([logdir]))] == [("profiled only", 4, 5)]
    text = sluice("report", str(logdir)).stdout
    assert "profiled only" in text and "Node-local tier" not in text
