"""sluice predict: the fs side each mode would leave, from a profile-mode
run's logs, checked against runs under those modes (bench/predict_check.py,
docs/predict.md), and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import NATIVE, REPO, bin_path, file_entry, python_env, report_json, sluice


def test_predicted_counts_match_the_runs_where_the_model_holds(tmp_path):
    """profile: every counter exact; buffer and stage: writes, reads, opens,
    stats, renames, unlinks and bytes within 10 % of runs under those modes,
    for the workloads docs/predict.md marks as checked (the profile run
    traced, so that buffer mode's prediction replays the trace)."""
    out = tmp_path / "check.json"
    workloads = {"smallio", "randread", "strided-shared", "ensemble", "fpp-netcdf"}
    cp = subprocess.run([sys.executable, str(REPO / "bench" / "predict_check.py"), "--target", str(tmp_path),
                         "--workloads", ",".join(sorted(workloads)), "--modes", "buffer,stage", "--json", str(out),
                         "--keep", str(out.with_suffix(".logs"))],
                        env=dict(python_env(), SLUICE_NATIVE_DIR=str(NATIVE)), capture_output=True, text=True,
                        timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    # the kept profile runs predict the same again, with nothing run
    n = sum(1 for r in rows if "predicted" in r)
    again = subprocess.run([sys.executable, str(REPO / "bench" / "predict_check.py"), "--again", str(out)],
                           env=dict(python_env(), SLUICE_NATIVE_DIR=str(NATIVE)), capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0 and f"{n} of {n} counts within 10 %" in again.stdout, again.stdout + again.stderr
    assert {r["workload"] for r in rows} == workloads
    profile = [r for r in rows if r["mode"] == "profile"]
    assert profile and all(r["predicted"] == r["measured"] for r in profile)

    def row(workload: str, mode: str, counter: str) -> tuple[float, float]:
        r = next(r for r in rows if (r["workload"], r["mode"], r["counter"]) == (workload, mode, counter))
        return r["predicted"], r["measured"]

    # the cut was predicted, not just the absence of one: smallio's 2,048
    # writes of 8 KiB leave 4 under buffer (16 MiB in 4 MiB units); under
    # stage the publish's 4 writes, one create under a temporary name and
    # its rename; the ensemble's 100 members' appends ask the size at each
    # of their 300 opens under buffer, and under stage its 356 opens leave
    # the publishes' 108 (the inputs, logs and results, one each)
    assert row("smallio", "buffer", "POSIX_WRITES") == (4, 4)
    assert row("smallio", "stage", "POSIX_WRITES") == (4, 4)
    assert row("smallio", "stage", "POSIX_RENAMES") == (1, 1)
    assert row("ensemble", "buffer", "POSIX_STATS") == (300, 300)
    assert row("ensemble", "profile", "POSIX_OPENS") == (356, 356)
    assert row("ensemble", "stage", "POSIX_OPENS") == (108, 108)
    # netCDF-3's read-modify-write of 8 KiB blocks: the counters cannot say
    # how far its writes jump, the trace replayed through buffer mode can
    # (724 writes of the 1,446 the program made)
    predicted, measured = row("fpp-netcdf", "buffer", "POSIX_WRITES")
    assert abs(predicted - measured) <= 0.1 * measured and measured < 1000


def test_streams_under_buffer_mode_are_predicted_from_where_their_flushes_and_seeks_fall(tmp_path):
    """A stream's kernel calls under buffer mode depend on the order of its
    calls: a flush just before the close leaves nothing for the close to
    write, a seek drops the read buffer and the next read fills it again,
    reading up to the end costs one read more. The trace holds the stdio
    calls in order (flushes among them), and predict's count for every
    file of stdio_mix (fprintf, fwrite across the buffer, fflush, fseek,
    fgets, append, a read-then-write stream) is buffer mode's own."""
    logs = {}
    for mode in ("profile", "buffer"):
        work = tmp_path / mode
        work.mkdir()
        logs[mode] = tmp_path / f"logs-{mode}"
        trace = ("--trace", "100000") if mode == "profile" else ()
        sluice("run", "-q", "--mode", mode, *trace, "--log-dir", str(logs[mode]), "--path", str(work), "--",
               str(bin_path("stdio_mix")), str(work))
    measured = {k: sum(f["fs"].get(k, 0) for f in report_json(logs["buffer"])["files"]
                       if f["path"].startswith(str(tmp_path / "buffer")))
                for k in ("STDIO_WRITES", "STDIO_READS")}
    profile = {k: sum(f["fs"].get(k, 0) for f in report_json(logs["profile"])["files"]
                      if f["path"].startswith(str(tmp_path / "profile")))
               for k in ("STDIO_WRITES", "STDIO_READS")}
    predicted = json.loads(sluice("predict", "--json", str(logs["profile"])).stdout)["modes"]["buffer"]["fs"]
    assert measured["STDIO_WRITES"] < profile["STDIO_WRITES"] and measured["STDIO_READS"] < profile["STDIO_READS"]
    assert (predicted["STDIO_WRITES"], predicted["STDIO_READS"]) == (measured["STDIO_WRITES"],
                                                                     measured["STDIO_READS"])


@pytest.mark.skipif(not (NATIVE / "sluice-bench-amr-ckpt").exists(), reason="built without MPI")
def test_acb_writes_are_predicted_from_the_ranks_traced_writes(tmp_path):
    """An AMR checkpoint of 320 boxes of 32 KiB on 4 ranks (one node):
    independent writes in Morton order form runs of 64 KiB or more, so
    acb lets each rank write its own runs (50 writes); one collective
    write per box goes through one aggregator (the 10 MiB in one write);
    both predicted from the profile run's trace, counter by counter."""
    out = tmp_path / "check.json"
    cp = subprocess.run([sys.executable, str(REPO / "bench" / "predict_check.py"), "--target", str(tmp_path),
                         "--workloads", "amr-indep,amr-coll", "--modes", "acb", "--json", str(out)],
                        env=dict(python_env(), SLUICE_NATIVE_DIR=str(NATIVE)), capture_output=True, text=True,
                        timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    rows = {(r["workload"], r["mode"], r["counter"]): (r["predicted"], r["measured"])
            for r in json.loads(out.read_text())["rows"] if r["counter"] != "wall_s"}
    assert rows["amr-indep", "profile", "POSIX_WRITES"] == (320, 320)
    assert rows["amr-indep", "acb", "POSIX_WRITES"] == (50, 50)
    assert rows["amr-coll", "acb", "POSIX_WRITES"] == (1, 1)
    assert rows["amr-coll", "acb", "POSIX_BYTES_WRITTEN"] == (10 << 20, 10 << 20)


def test_predict_refuses_another_modes_logs_and_scales(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    prog = str(NATIVE / "sluice-bench-smallio")
    for mode in ("profile", "buffer"):
        sluice("run", "-q", "--mode", mode, "--log-dir", str(tmp_path / mode), "--path", str(work), "--", prog,
               "--file", str(work / f"f.{mode}"), "--size", "1M")
    cp = sluice("predict", str(tmp_path / "buffer"), check=False)
    assert cp.returncode != 0 and "profile-mode" in cp.stderr and "buffer" in cp.stderr
    assert "Traceback" not in cp.stderr
    one = json.loads(sluice("predict", "--json", str(tmp_path / "profile")).stdout)
    four = json.loads(sluice("predict", "--json", "--scale", "4", str(tmp_path / "profile")).stdout)
    assert one["job"]["predicted_for"] == 1 and four["job"]["predicted_for"] == 4
    for mode in ("profile", "buffer"):
        a, b = one["modes"][mode]["fs"], four["modes"][mode]["fs"]
        assert b["POSIX_WRITES"] == 4 * a["POSIX_WRITES"] and b["POSIX_BYTES_WRITTEN"] == 4 * (1 << 20)
    assert one["modes"]["buffer"]["fs"]["POSIX_WRITES"] < one["modes"]["profile"]["fs"]["POSIX_WRITES"]
    stage = one["modes"]["stage"]["fs"]   # one new file of 1 MiB: its publish, one create and one write
    assert (stage["POSIX_OPENS"], stage["POSIX_WRITES"], stage["POSIX_BYTES_WRITTEN"]) == (1, 1, 1 << 20)
    assert one["modes"]["auto"]["fs"] == one["modes"]["profile"]["fs"]   # /tmp is the node's own
    assert one["modes"]["acb"]["fs"] == one["modes"]["profile"]["fs"]   # no MPI-IO: acb leaves POSIX as it is
    text = sluice("predict", str(tmp_path / "profile")).stdout
    assert "built-in figures for a local file system" in text and "buffer" in text


def test_the_time_calls_on_staged_files_took_is_taken_out_of_a_gap_once():
    """predict's stage delay: between a close and the next open, the wall
    time spent in calls on staged files (the union of their spans: two
    processes in such calls at once count once) is the tier's under stage."""
    from sluice.predict import BusyTime

    b = BusyTime([(0, 10), (5, 20), (30, 40), (50, 60)])
    assert b.within(0, 100) == 40 and b.within(15, 35) == 10 and b.within(22, 28) == 0
    assert b.within(35, 55) == 10 and b.within(32, 38) == 6 and BusyTime([]).within(0, 5) == 0


def test_a_replay_that_cannot_run_says_so_and_the_counters_answer(tmp_path, monkeypatch):
    """A traced run is replayed through buffer mode (one file: the netCDF-3
    file); when the replay cannot run (here: more bytes than a scratch tier
    may take), the prediction says why and buffer mode comes from the
    counters, never silently."""
    from sluice import predict, replay
    from sluice.report.model import load_job

    work = tmp_path / "w"
    work.mkdir()
    sluice("run", "-q", "--trace", "100000", "--log-dir", str(tmp_path / "logs"), "--path", str(work), "--",
           str(NATIVE / "sluice-bench-nc-append"), "--file", str(work / "a.nc"), "--records", "50", "--format",
           "64bit")
    job = load_job([tmp_path / "logs"], None)
    done = predict.predict(job)
    assert done["job"]["replayed_files"] == 1 and done["job"]["replay_failed"] == ""
    counters = predict.predict(job, replay=False)
    assert done["modes"]["buffer"]["fs"]["POSIX_WRITES"] != counters["modes"]["buffer"]["fs"]["POSIX_WRITES"]
    monkeypatch.setattr(replay, "MAX_BYTES", 1)
    refused = predict.predict(job)
    assert refused["job"]["replayed_files"] == 0 and "more than the 1 a scratch tier" in refused["job"]["replay_failed"]
    assert refused["modes"]["buffer"]["fs"] == counters["modes"]["buffer"]["fs"]
    from sluice.cli.predict import render
    assert "the trace's replay gave nothing" in render(refused)


def test_shared_stripe_bytes_are_those_of_stripes_two_processes_write():
    from sluice.predict import shared_stripe_bytes
    piece = 64 << 10
    interleaved = {1: [(i * piece, piece) for i in range(0, 32, 2)], 2: [(i * piece, piece) for i in range(1, 32, 2)]}
    assert shared_stripe_bytes(interleaved, 1 << 20) == 32 * piece          # every stripe has both
    apart = {1: [(0, 1 << 20)], 2: [(1 << 20, 1 << 20)]}
    assert shared_stripe_bytes(apart, 1 << 20) == 0
    straddle = {1: [(0, 1_500_000)], 2: [(1_500_000, 600_000)]}             # they meet inside stripe 1
    assert shared_stripe_bytes(straddle, 1 << 20) == (1_500_000 - (1 << 20)) + ((2 << 20) - 1_500_000)


def test_scaling_repeats_the_processes_that_opened_files_and_splits_the_time_by_kind(tmp_path):
    """File-per-process netCDF: a parent that makes the directory forks 2
    writers: --scale 4 is each instance's calls twice, and the seconds
    by kind add up to the I/O time over the processes."""
    work = tmp_path / "w"
    logs = tmp_path / "logs"
    sluice("run", "-q", "--mode", "profile", "--log-dir", str(logs), "--path", str(work), "--",
           str(NATIVE / "sluice-bench-fpp-netcdf"), "--dir", str(work), "--procs", "2", "--nx", "8", "--ny", "8")
    one = json.loads(sluice("predict", "--json", str(logs)).stdout)
    four = json.loads(sluice("predict", "--json", "--scale", "4", str(logs)).stdout)
    assert one["job"]["processes"] == 3
    for mode in ("profile", "stage"):
        assert four["modes"][mode]["fs"]["POSIX_OPENS"] == 2 * one["modes"][mode]["fs"]["POSIX_OPENS"]
        m = four["modes"][mode]
        assert sum(m["io_time_by_kind_s"].values()) == pytest.approx(m["io_time_s"] * 4)
        assert m["metadata_ops_per_s"] == pytest.approx(m["metadata_ops"] / four["job"]["wall_s"])
    assert one["modes"]["profile"]["io_time_by_kind_s"]["open"] > 0


@pytest.mark.skipif(not (NATIVE / "sluice-bench-amr-ckpt").exists(), reason="built without MPI")
def test_the_field_reports_scale_check_keeps_their_direction(tmp_path):
    """bench/field_scale.py (docs/predict.md): FMS's opens cost far more
    over 144 stripes than over one; stage cuts the Agro-IBIS ensemble's
    metadata calls; acb's checkpoint of 2.3 MB boxes beats independent
    writes, which wait for shared stripes' locks."""
    out = tmp_path / "scale.json"
    cp = subprocess.run([sys.executable, str(REPO / "bench" / "field_scale.py"), "--target", str(tmp_path),
                         "--json", str(out)], env=dict(python_env(), SLUICE_NATIVE_DIR=str(NATIVE)),
                        capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    d = json.loads(out.read_text())
    fms = d["fms"]
    assert fms["profile, 144 stripes"]["open_s"] > 10 * fms["profile, 1 stripes"]["open_s"]
    assert fms["profile, 144 stripes"]["opens"] == 1176
    agro = d["agro_ibis"]
    assert agro["stage"]["metadata_ops"] < agro["profile"]["metadata_ops"] / 2
    big = d["chombo"]["2.3 MB boxes"]
    assert big["acb_over_independent"] > 1.5
    assert big["writes"]["independent"] == 2304 * 50


def test_a_plan_puts_each_file_in_its_cheapest_mode_and_run_follows_it(tmp_path):
    """randread writes a 16 MiB file in large writes, then reads it back at
    2,000 random offsets: auto's rules send large writes straight through,
    so the reads go to the file system; on the testbed's calibrated
    profile the model finds stage cheaper (the reads from the node's
    tier). `sluice predict --plan` writes that rule, and a run with the
    plan reads nothing from the file system, where auto alone reads 2,000
    times. smallio, which auto's rules already put in its cheapest mode,
    gets no rule."""
    work = tmp_path / "w"
    work.mkdir()
    fs = REPO / "bench" / "results" / "calibrate-testbed-delay0us-6fd4874.json"
    rand = work / "rand"
    prog = [str(NATIVE / "sluice-bench-randread"), "--file", str(rand), "--size", "16M", "--reads", "2000"]
    sluice("run", "-q", "--mode", "profile", "--log-dir", str(tmp_path / "profile"), "--path", str(work), "--", *prog)
    plan = tmp_path / "plan.toml"
    text = sluice("predict", "--fs", str(fs), "--plan", str(plan), str(tmp_path / "profile")).stdout
    assert "each file in its cheapest mode by the model (1 stage)" in text
    assert f'"{rand}" = "stage"' in plan.read_text() and 'mode = "auto"' in plan.read_text()
    reads = {}
    for name, how in (("plan", ["--config", str(plan)]), ("auto", ["--mode", "auto"])):
        rand.unlink()
        sluice("run", "-q", *how, "--log-dir", str(tmp_path / name), "--path", str(work), "--", *prog)
        f = next(f for f in report_json(tmp_path / name)["files"] if f["path"] == str(rand))
        reads[name] = f["fs"].get("POSIX_READS") or 0
    assert reads == {"plan": 0, "auto": 2000}
    small = tmp_path / "small"
    sluice("run", "-q", "--mode", "profile", "--log-dir", str(small), "--path", str(work), "--",
           str(NATIVE / "sluice-bench-smallio"), "--file", str(work / "s"), "--size", "4M")
    sluice("predict", "--fs", str(fs), "--plan", str(tmp_path / "none.toml"), str(small))
    assert (tmp_path / "none.toml").read_text().rstrip().endswith("[policy]")


def test_files_left_staged_at_the_end_are_priced_as_published_together(tmp_path):
    """The job's drainer publishes what is still on the tier when the job
    ends 4 at a time (--stage-drainers): each create then waits as long as
    the file system takes for 4 at once (the profile's rate at 4
    processes), where the only file of a job is published alone (one
    create's rate at 1). Measured on the testbed, smallread's 200 publishes
    took 2.3x the time of as many creates one after another."""
    profile = json.loads((REPO / "bench" / "results" / "calibrate-testbed-delay0us-404ead9.json").read_text())
    made = profile["metadata"]["create_written"]
    made["ops_per_s"] = {"1": {"median": 1000.0, "spread": 0}, "2": {"median": 1500.0, "spread": 0},
                         "4": {"median": 2000.0, "spread": 0}}
    fs = tmp_path / "fs.json"
    fs.write_text(json.dumps(profile))
    opens = {}
    for files in (1, 8):
        logs, work = tmp_path / f"logs{files}", tmp_path / f"w{files}"
        sluice("run", "-q", "--mode", "profile", "--log-dir", str(logs), "--path", str(work), "--",
               str(NATIVE / "sluice-bench-create-once"), "--dir", str(work), "--procs", "1", "--files", str(files))
        doc = json.loads(sluice("predict", "--json", "--fs", str(fs), str(logs)).stdout)
        assert doc["modes"]["stage"]["fs"]["POSIX_OPENS_CREATE"] == files
        opens[files] = doc["modes"]["stage"]["io_time_by_kind_s"]["open"]
    assert opens[1] == pytest.approx(1 / 1000.0)
    assert opens[8] == pytest.approx(8 * 4 / 2000.0)


def test_reads_of_pages_read_before_are_priced_as_the_clients_cache_answers_them():
    """A read that finds every page it reads read before (by any process of
    the node, since the page was last written there) costs no round trip:
    from the trace where it holds the reads, else from the counters (reads
    that jump spread over the pages read, and bytes read beyond the file)."""
    from sluice.predict import PAGE, cached_read_share, distinct_pages
    from sluice.report.model import FileTotals

    f = FileTotals(path="/x")
    ev = [(0, 1, 0, 8 * PAGE, 1),            # 8 pages written
          (2, 0, 0, PAGE, 3), (4, 0, 0, PAGE, 5),   # page 0 read, then again: a hit
          (6, 0, PAGE, 2 * PAGE, 7),          # pages 1-2: new
          (8, 0, PAGE + 10, 100, 9),          # inside page 1: a hit
          (10, 1, PAGE, 1, 11),               # page 1 written again
          (12, 0, PAGE, 10, 13)]              # page 1 again: not a hit
    assert cached_read_share(f, ev) == pytest.approx(2 / 5)
    # counters alone: 2,000 reads that jump over a file of 4,096 pages find
    # 1,582 of them; a file read whole twice, half its bytes
    jumpy = FileTotals(path="/y", fs={"POSIX_READS": 2000, "POSIX_CONSEC_READS": 0,
                                      "POSIX_MAX_BYTE_READ": 4096 * PAGE - 1, "POSIX_BYTES_READ": 2000 * PAGE})
    assert cached_read_share(jumpy, []) == pytest.approx((2000 - distinct_pages(4096, 2000)) / 2000)
    assert distinct_pages(4096, 2000) == pytest.approx(1582.5, abs=0.1)
    twice = FileTotals(path="/z", fs={"POSIX_READS": 32, "POSIX_CONSEC_READS": 30,
                                      "POSIX_MAX_BYTE_READ": 16 * PAGE - 1, "POSIX_BYTES_READ": 32 * PAGE})
    assert cached_read_share(twice, []) == pytest.approx(0.5)


def test_a_write_costs_by_its_size_and_by_how_busy_the_cores_are():
    """A write call's fixed cost comes from calibrate's calls at 4 KiB,
    64 KiB and 1 MiB (on a log scale between them), less its bytes at one
    stream's bandwidth, and moves toward the figure measured while every
    core computes by the share of the cores the job keeps busy."""
    from sluice.predict import FileSystem

    fs = FileSystem(name="t", latency_s={}, write_MBps=1000.0, write_by_procs={1: 1000.0},
                    write_call_s={4096: 100e-6, 65536: 300e-6, 1 << 20: 3e-3},
                    write_call_busy_s={4096: 200e-6, 65536: 300e-6, 1 << 20: 5e-3})
    per_byte = 1 / 1e9
    assert fs.write_fixed_s(4096) == pytest.approx(100e-6 - 4096 * per_byte)
    assert fs.write_fixed_s(16384) == pytest.approx(200e-6 - 16384 * per_byte)   # halfway, on a log scale
    assert fs.write_fixed_s(4096, busy=0.5) == pytest.approx(150e-6 - 4096 * per_byte)
    assert fs.write_fixed_s(4 << 20, busy=1.0) == pytest.approx(5e-3 - (1 << 20) * per_byte)
    plain = FileSystem(name="t", latency_s={}, small_write_s=100e-6, write_by_procs={1: 1000.0})
    assert plain.write_fixed_s(1 << 20, busy=1.0) == pytest.approx(100e-6 - 4096 * per_byte)   # no sizes: 4 KiB's


def test_the_share_of_busy_cores_comes_from_the_processes_lifetimes_less_their_io(tmp_path):
    """A process that computes between its writes keeps a core busy (on a
    profile of a one-core machine: about 1), and its write calls then cost
    more than the idle figure; one whose life is its I/O calls keeps none
    busy. (The logs hold no CPU time: a process that sleeps or blocks
    outside its I/O calls counts as busy too.)"""
    from types import SimpleNamespace

    from sluice.predict import busy_share

    profile = json.loads((REPO / "bench" / "results" / "calibrate-testbed-delay0us-5a82684.json").read_text())
    profile["machine"]["cores_usable"] = 1
    fs = tmp_path / "fs.json"
    fs.write_text(json.dumps(profile))
    logs, work = tmp_path / "logs", tmp_path / "w"
    work.mkdir()
    prog = (f"import os, time\nfd = os.open('{work}/f', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
            "for i in range(8):\n    os.write(fd, b'x' * 4096)\n    t = time.time()\n"
            "    while time.time() - t < 0.05: pass\nos.close(fd)\n")
    sluice("run", "-q", "--mode", "profile", "--log-dir", str(logs), "--path", str(work), "--",
           sys.executable, "-c", prog)
    doc = json.loads(sluice("predict", "--json", "--fs", str(fs), str(logs)).stdout)
    assert doc["job"]["busy_cores_share"] > 0.9
    profile["machine"]["cores_usable"] = 0   # (cores not known: nothing is taken as busy)
    fs.write_text(json.dumps(profile))
    idle = json.loads(sluice("predict", "--json", "--fs", str(fs), str(logs)).stdout)
    assert idle["job"]["busy_cores_share"] == 0
    assert doc["modes"]["profile"]["io_time_by_kind_s"]["write"] > idle["modes"]["profile"]["io_time_by_kind_s"]["write"]
    # two processes over one second on 2 cores: one in its I/O calls 0.9 s
    # of it, the other 0.2 s: (0.1 + 0.8) / 2
    job = SimpleNamespace(logs=[SimpleNamespace(pid=1, start_ns=0, end_ns=10**9),
                                SimpleNamespace(pid=2, start_ns=0, end_ns=10**9),
                                SimpleNamespace(pid=3, start_ns=0, end_ns=10**9)])   # (3 used no recorded file)
    per_proc = {"/a": {1: {"POSIX_F_WRITE_TIME": 0.9}, 2: {"STDIO_F_META_TIME": 0.2}}}
    assert busy_share(job, per_proc, 2) == pytest.approx(0.45)


def test_the_io_time_takes_the_cached_share_and_the_busy_cores():
    """io_seconds_by_kind: reads the cache answers cost CACHED_READ_S and no
    bytes; busy cores make each write call cost more."""
    from sluice.predict import CACHED_READ_S, FileSystem, io_seconds_by_kind

    fs = FileSystem(name="t", latency_s={}, small_read_s=50e-6, random_read_s=500e-6, write_by_procs={1: 1000.0},
                    read_by_procs={1: 1000.0}, write_call_s={4096: 100e-6}, write_call_busy_s={4096: 300e-6})
    counts = {"POSIX_READS": 100, "POSIX_CONSEC_READS": 0, "POSIX_BYTES_READ": 100 * 4096,
              "POSIX_WRITES": 10, "POSIX_BYTES_WRITTEN": 10 * 4096}
    cold = io_seconds_by_kind(counts, fs, 1)
    half = io_seconds_by_kind(counts, fs, 1, cached=0.5)
    assert half["read"] == pytest.approx(cold["read"] / 2 + 50 * CACHED_READ_S)
    busy = io_seconds_by_kind(counts, fs, 1, busy=1.0)
    assert busy["write"] - cold["write"] == pytest.approx(10 * 200e-6)


@pytest.mark.parametrize("procs,box", [(2, "768K"), (1, "2M")])
def test_an_n_to_1_file_is_predicted_as_its_run(tmp_path, procs, box):
    """amr-n1's parent makes the checkpoint empty and its children write
    their boxes into it. Two children open it at once: through the tier
    under auto and stage alike (neither is alone on it at its first write);
    one child whose first box is 1.5 MiB or more: auto sends it straight
    through at that write (POSIX_AUTO_DIRECT; the child's open was the
    tier's). Buffer writes each box of 512 KiB or more as it comes (it
    continues no write). The prediction from the profile run's trace is
    each run's fs side, call for call."""
    fs = REPO / "bench" / "results" / "calibrate-testbed-delay0us-404ead9.json"
    keys = ("POSIX_OPENS", "POSIX_WRITES", "POSIX_STATS", "POSIX_RENAMES", "POSIX_FSYNCS", "POSIX_BYTES_WRITTEN")
    measured = {}
    for mode in ("profile", "buffer", "auto", "stage"):
        logs, work = tmp_path / f"logs-{mode}", tmp_path / mode
        work.mkdir()
        sluice("run", "-q", "--mode", mode, "--trace", "1M", "--log-dir", str(logs), "--path", str(work),
               "--tier", str(tmp_path / f"tier-{mode}"), "--", str(NATIVE / "sluice-bench-amr-n1"),
               "--file", str(work / "ckpt"), "--procs", str(procs), "--boxes", "4", "--box-size", box)
        e = file_entry(report_json(logs), work / "ckpt")
        measured[mode] = {k: e["fs"].get(k, 0) for k in keys}
        assert e["app"]["POSIX_AUTO_DIRECT"] == (mode == "auto" and procs == 1), mode
    assert measured["buffer"]["POSIX_WRITES"] == 4 * procs and measured["buffer"]["POSIX_FSYNCS"] == procs
    assert measured["auto"]["POSIX_WRITES"] == (4 if procs == 1 else measured["stage"]["POSIX_WRITES"])
    doc = json.loads(sluice("predict", "--json", "--fs", str(fs), str(tmp_path / "logs-profile")).stdout)
    for mode in ("buffer", "auto", "stage"):
        assert {k: doc["modes"][mode]["fs"].get(k, 0) for k in keys} == measured[mode], mode
