"""`--mode auto`: per file, what the open asks for picks the tier — a file
created or truncated is staged on the node-local tier, an existing file
updated or read is buffered — and every choice is in the log
(POSIX_STAGED_OPENS)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import file_entry, report_json, sluice


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
