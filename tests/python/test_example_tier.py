"""The example tier (src/tiers/example.c), the one to copy for a new mode:
it is built, refused unless test tiers are allowed, and does what it says:
writes reach the file system in pieces of at most 4 KiB, the bytes and the
path calls are exactly the program's."""

from __future__ import annotations

from conftest import bin_path, file_entry, report_json, sluice


def test_example_tier_splits_writes_and_keeps_bytes(workdir, logdir):
    f = workdir / "f"
    env = {"SLUICE_TIERS": "example", "SLUICE_ALLOW_TEST_TIERS": "1"}
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
           f"creat:{f}", "write:10000", "writev:9000:3", "close", f"creat:{workdir}/g", "close",
           f"unlink:{workdir}/g", env=env)
    assert f.read_bytes() == b"x" * 19000 and not (workdir / "g").exists()
    r = report_json(logdir)
    e = file_entry(r, f)
    # the program: 2 writes; the file system: 3 pieces + 3 pieces of the 3 KiB vectors
    assert (e["app"]["POSIX_WRITES"], e["fs"]["POSIX_WRITES"]) == (2, 6)
    assert e["app"]["POSIX_BYTES_WRITTEN"] == e["fs"]["POSIX_BYTES_WRITTEN"] == 19000
    g = file_entry(r, workdir / "g")
    assert g["app"]["POSIX_UNLINKS"] == g["fs"]["POSIX_UNLINKS"] == 1


def test_example_tier_is_test_only(workdir, logdir):
    cp = sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
                f"creat:{workdir}/f", "write:10", "close", env={"SLUICE_TIERS": "example"})
    assert "tier 'example' is for tests only" in cp.stderr
    assert (workdir / "f").read_bytes() == b"x" * 10
