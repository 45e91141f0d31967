"""``sluice testbed``: MooseFS brought up, used, taken down and purged for real.

Needs root. Uses its own state folder, namespace and mount point, so that it
never touches a testbed someone else runs, and always tears down at the end.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner

from sluice import testbed
from sluice.cli import cli
from sluice.errors import UserError

pytestmark = pytest.mark.testbed

STATE = Path("/var/tmp/sluice-testbed-test")
NETNS = "sluice-pfs-test"
MNT = Path("/mnt/sluice-pfs-test")
ADDR = testbed.DEFAULT_ADDR
NSENTER = ["nsenter", f"--net=/run/netns/{NETNS}"]


@pytest.fixture(scope="module")
def bed() -> Iterator[None]:
    """A private testbed: purged before (leftovers of an aborted run) and after."""
    if os.geteuid() != 0:
        pytest.skip("the testbed needs root")
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("SLUICE_TESTBED_")]:
            mp.delenv(key)
        mp.setenv("SLUICE_TESTBED_STATE_DIR", str(STATE))
        mp.setenv("SLUICE_TESTBED_NETNS", NETNS)
        mp.setenv("SLUICE_TESTBED_MOUNTPOINT", str(MNT))
        testbed.down(purge=True)
        try:
            yield
        finally:
            testbed.down(purge=True)
            _assert_nothing_left()


# ---------------------------------------------------------------- helpers


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _pids_with(text: str) -> set[int]:
    """Running processes whose command line contains ``text``."""
    pids = {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()}
    return {p for p in pids if text in _cmdline(p) and _running(p)}


def _mounts_at(mnt: Path) -> list[str]:
    """File-system types mounted at ``mnt``, from /proc/self/mounts."""
    lines = Path("/proc/self/mounts").read_text().splitlines()
    return [f.split()[2] for f in lines if f.split()[1] == str(mnt)]


def _pidfile_pids() -> dict[str, int]:
    return {f.stem: int(f.read_text()) for f in (STATE / "run").glob("*.pid")}


def _all_pids(st: dict) -> list[int]:
    procs = [st["master"], st["client"], st["delay_helper"], *st["chunkservers"]]
    return [p["pid"] for p in procs if p["alive"]]


def _assert_nothing_left() -> None:
    assert _mounts_at(MNT) == []
    assert not Path(f"/run/netns/{NETNS}").exists()
    for k in (1, 2, 3):
        assert _mounts_at(Path(f"{MNT}-node{k}")) == []
        assert not Path(f"/run/netns/{NETNS}-n{k}").exists()
    assert _pids_with(str(STATE)) == set()
    assert _pids_with(f"(mounted on: {MNT})") == set()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rtt_us() -> float:
    """A TCP round trip inside the namespace (rtt.py, 2000 pings): the 10th
    percentile, the cost without the machine's other load."""
    rtt = Path(testbed.__file__).parent / "rtt.py"
    out = subprocess.run(
        [*NSENTER, sys.executable, str(rtt), "probe", ADDR, "2000"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    return float(json.loads(out)["p10_us"])


_stat_names = iter(range(10**9))


def _stat_us(mnt: Path, n: int = 200, rounds: int = 3) -> float:
    """What a stat() of a missing name costs (one lookup at the master each):
    the lowest of a few rounds' lower quartiles, so that a busy moment of the
    machine (CI runs other jobs) does not stand for the file system's cost.
    Every name is new, so no client cache can answer."""
    quartiles = []
    for _ in range(rounds):
        times = []
        for _ in range(n):
            name = mnt / f"missing-{next(_stat_names)}"
            t0 = time.perf_counter_ns()
            with pytest.raises(FileNotFoundError):
                os.stat(name)
            times.append((time.perf_counter_ns() - t0) / 1000)
        quartiles.append(statistics.quantiles(times, n=4)[0])
    return min(quartiles)


def _sluice(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


# ---------------------------------------------------------------- tests


def test_up_and_down_need_root() -> None:
    with mock.patch("os.geteuid", return_value=1000):
        for call in (testbed.up, testbed.down):
            with pytest.raises(UserError, match="needs root: it creates a network namespace and a FUSE mount"):
                call()


def test_up_twice_second_is_a_noop(bed: None) -> None:
    t0 = time.monotonic()
    assert testbed.up() == MNT
    first_s = time.monotonic() - t0
    before = testbed.status()
    assert before["running"], before

    log: list[str] = []
    assert testbed.up(echo=log.append) == MNT
    after = testbed.status()
    assert _all_pids(after) == _all_pids(before)
    assert any("master already running" in line for line in log), log
    assert any(f"already mounted at {MNT}" in line for line in log), log
    assert first_s < 30


def test_status_reports_the_processes_and_the_fuse_mount(bed: None) -> None:
    testbed.up()
    st = json.loads(_sluice("testbed", "status", "--json"))
    assert st["running"] and st["mounted"] and st["mountpoint"] == str(MNT)
    assert _mounts_at(MNT) == ["fuse.mfs"]

    files = _pidfile_pids()
    assert st["master"]["pid"] == files["mfsmaster"]
    assert st["client"]["pid"] == files["mfsmount"]
    assert [c["pid"] for c in st["chunkservers"]] == [files[f"mfschunkserver{i}"] for i in (1, 2, 3)]
    # and they are the processes that really run with our configs
    assert _pids_with(f"-c {STATE}/etc/mfsmaster.cfg") == {st["master"]["pid"]}
    for c in st["chunkservers"]:
        assert _pids_with(f"-c {STATE}/etc/mfschunkserver{c['id']}.cfg") == {c["pid"]}
    assert _pids_with(f"mfsmount (mounted on: {MNT})") == {st["client"]["pid"]}

    assert st["delay_us"] == 0
    assert st["space"]["total_bytes"] > 0 and st["space"]["avail_bytes"] > 0
    assert "running" in _sluice("testbed", "status")


def test_three_chunkservers_registered(bed: None) -> None:
    testbed.up()
    assert testbed.status()["chunkservers_registered"] == 3
    out = subprocess.run(
        [*NSENTER, "mfscli", "-H", ADDR, "-SCS"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    ports = sorted(int(line.split("\t")[2]) for line in out.splitlines() if line.startswith("chunk servers:"))
    assert ports == [9422, 9423, 9424]


def test_down_stops_everything_and_up_brings_the_data_back(bed: None) -> None:
    testbed.up()
    data = MNT / "kept" / "random.bin"
    data.parent.mkdir(exist_ok=True)
    data.write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    digest = _sha(data)
    pids = _all_pids(testbed.status())
    assert len(pids) == 5

    # a PID file that names a process that is not ours (a recycled PID)
    decoy = subprocess.Popen(["sleep", "60"])
    (STATE / "run" / "mfschunkserver9.pid").write_text(f"{decoy.pid}\n")
    try:
        testbed.down()
        assert decoy.poll() is None, "down signalled a process it did not start"
    finally:
        decoy.kill()
        decoy.wait()

    assert [p for p in pids if _running(p)] == []
    _assert_nothing_left()
    assert not testbed.status()["running"]
    assert list((STATE / "run").glob("*.pid")) == []

    testbed.up()
    assert _sha(data) == digest


def test_up_detaches_a_dead_mount_whose_record_is_gone(bed: None) -> None:
    """The client killed and the state's run folder lost (a reboot that kept
    the mount table): the mount answers ENOTCONN; up must mount again."""
    testbed.up()
    client = testbed.status()["client"]["pid"]
    os.kill(client, 9)
    deadline = time.monotonic() + 10
    while _running(client) and time.monotonic() < deadline:
        time.sleep(0.05)
    # (stat may answer from the attribute cache a while; statfs asks the
    # client, and says ECONNABORTED while the connection is torn down)
    seen = None
    while seen != errno.ENOTCONN and time.monotonic() < deadline + 10:
        try:
            os.statvfs(MNT)
            seen = 0
        except OSError as e:
            seen = e.errno
        time.sleep(0.05)
    assert seen == errno.ENOTCONN
    (STATE / "run" / "mountpoint").unlink()
    testbed.up()
    probe = MNT / "after-stale.txt"
    probe.write_text("back\n")
    assert probe.read_text() == "back\n"
    assert len(_mounts_at(MNT)) == 1
    probe.unlink()


def test_delay_makes_round_trips_slower(bed: None) -> None:
    testbed.up()
    rtt0, stat0 = _rtt_us(), _stat_us(MNT)

    _sluice("testbed", "up", "--delay-us", "100")
    st = testbed.status()
    assert st["delay_us"] == 100 and st["delay_helper"]["alive"]
    assert os.access(STATE / "nfq-delay", os.X_OK)
    rules = subprocess.run([*NSENTER, "iptables", "-S", "OUTPUT"], capture_output=True, text=True).stdout
    assert "NFQUEUE" in rules
    rtt100, stat100 = _rtt_us(), _stat_us(MNT)

    testbed.up()  # back to no delay, without a restart
    st = testbed.status()
    assert st["delay_us"] == 0 and not _running(st["delay_helper"]["pid"])
    rules = subprocess.run([*NSENTER, "iptables", "-S", "OUTPUT"], capture_output=True, text=True).stdout
    assert "NFQUEUE" not in rules
    # the cost without delay, measured on both sides of the delayed one: a
    # busy moment of the machine (a stat costs ~200 us here, most of it the
    # client's and the master's CPU) does not stand for the file system's cost
    stat0 = min(stat0, _stat_us(MNT))

    print(f"rtt {rtt0:.0f} -> {rtt100:.0f} us, stat {stat0:.0f} -> {stat100:.0f} us")
    # each packet the servers send waits 100 us: a TCP round trip takes at
    # least 100 us more, and so does a stat() of a missing name (one round
    # trip to the master); half of that is asked, for the machine's noise
    assert rtt100 > rtt0 + 80 and rtt100 > 1.5 * rtt0
    assert stat100 > stat0 + 50


def _master_sessions() -> dict[str, tuple[str, int]]:
    """The master's view of its clients: mount point -> (address, write-chunk requests this hour),
    summed over the sessions of that mount point (a remounted client's old session lingers)."""
    out = subprocess.run(
        [*NSENTER, "mfscli", "-n", "-H", ADDR, "-SMO", "-m", "1"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    rows = [line.split("\t") for line in out.splitlines() if line.startswith("active mounts, operations:")]
    # columns: label, address, mount point, 16 operation counts (write is the last), total
    sessions: dict[str, tuple[str, int]] = {}
    for r in rows:
        sessions[r[2]] = (r[1], sessions.get(r[2], ("", 0))[1] + int(r[18]))
    return sessions


def test_node_clients_are_separate_clients_of_one_file_system(bed: None) -> None:
    testbed.up(clients=2)
    nodes = testbed.status()["nodes"]
    n1, n2 = (Path(n["mountpoint"]) for n in nodes)
    assert (n1, n2) == (Path(f"{MNT}-node1"), Path(f"{MNT}-node2"))
    assert testbed.node_mounts() == [n1, n2]
    assert _mounts_at(n1) == _mounts_at(n2) == ["fuse.mfs"]

    # three client processes, each in a network namespace of its own
    pids = [testbed.status()["client"]["pid"], *(n["pid"] for n in nodes)]
    assert len(set(pids)) == 3 and all(_running(p) for p in pids)
    assert len({os.readlink(f"/proc/{p}/ns/net") for p in pids}) == 3
    # and the master sees three sessions, the nodes' from their own addresses
    sessions = _master_sessions()
    assert sessions[str(n1)][0] == "10.214.1.2" and sessions[str(n2)][0] == "10.214.2.2"
    assert sessions[str(MNT)][0] == ADDR

    # a file written through node 1 reads back byte-identical through node 2 and the main mount
    data = os.urandom(5 * 1024 * 1024 + 3)
    (n1 / "shared.bin").write_bytes(data)
    assert (n2 / "shared.bin").read_bytes() == data
    assert (MNT / "shared.bin").read_bytes() == data
    # both nodes write one file, interleaved 4 KiB pieces, each through its own client
    with open(n1 / "shared.bin", "r+b") as f1, open(n2 / "shared.bin", "r+b") as f2:
        for i in range(64):
            (f1 if i % 2 == 0 else f2).seek(i * 4096)
            (f1 if i % 2 == 0 else f2).write(bytes([i]) * 4096)
    expect = b"".join(bytes([i]) * 4096 for i in range(64)) + data[64 * 4096 :]
    assert (MNT / "shared.bin").read_bytes() == expect
    assert (n1 / "shared.bin").read_bytes() == expect

    testbed.up()  # without clients: the node clients stay
    assert testbed.node_mounts() == [n1, n2]
    assert [n["pid"] for n in testbed.status()["nodes"]] == pids[1:]


def test_acb_aggregates_pieces_below_a_stripe_written_through_several_clients(bed: None, tmp_path) -> None:
    """64 KiB pieces, strided over 4 ranks, collective calls, under --mode acb.
    Through one client (both halves of the ranks on node 1) a piece is a unit
    of MooseFS (its 64 KiB block) and goes straight through; through two
    clients (ranks 0-1 through node 1's mount, 2-3 through node 2's, all on
    this host) the unit is the stripe, so the pieces are aggregated, and so
    are 256 KiB ones: the file system sees a few large writes. The file's
    bytes are checked in every run."""
    from conftest import NATIVE, file_entry, report_json, sluice

    testbed.up(clients=2)
    n1, n2 = testbed.node_mounts()
    mpi = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader",
           "OMPI_MCA_io": "ompio"}
    seen = {}
    for name, dirs, piece in (("one", (n1, n1), "64K"), ("two", (n1, n2), "64K"), ("two-256K", (n1, n2), "256K")):
        work = [d / f"acb-{name}" for d in dirs]
        work[0].mkdir()
        logs = tmp_path / f"logs-{name}"
        cp = sluice("run", "--mode", "acb", "--log-dir", str(logs), *(a for w in set(work) for a in ("--path", str(w))),
                    "--", "mpirun", "--oversubscribe", "-np", "4", str(NATIVE / "sluice-bench-ior-shared"),
                    "--file", "f", "--node-dirs", ",".join(map(str, work)), "--piece", piece, "--per-rank", "1M",
                    "--api", "coll", "--check", env=mpi)
        r = json.loads(cp.stdout.splitlines()[-1])
        assert r["mismatches"] == 0 and r["writes"] == (64 if piece == "64K" else 16)
        rep = report_json(logs)
        app = sum(file_entry(rep, w / "f")["app"]["MPIIO_COLL_WRITES"] for w in set(work))
        fs = [file_entry(rep, w / "f")["fs"] for w in set(work)]
        seen[name] = (app, sum(c["MPIIO_ACB_DIRECT_WRITES"] for c in fs),
                      sum(c["POSIX_WRITES"] for c in fs))
    # one client: 64 collective calls, each passed through (16 per rank), 64 writes of 64 KiB
    assert seen["one"] == (64, 64, 64)
    # two clients: nothing straight through; 4 MiB reach MooseFS in a handful of writes
    app, direct, writes = seen["two"]
    assert (app, direct) == (64, 0) and writes <= 4
    # 256 KiB pieces through the two clients of one host: aggregated too
    app, direct, writes = seen["two-256K"]
    assert (app, direct) == (16, 0) and writes <= 4


def test_write_cache_off_sends_each_write_to_the_servers(bed: None) -> None:
    testbed.up(clients=1)
    n1 = testbed.node_mounts()[0]

    def chunk_writes_for(writes: int) -> tuple[int, int]:
        """(write-chunk requests at the master, fsyncs at the client) for that many 4 KiB writes."""
        master0, fsync0 = _master_sessions()[str(n1)][1], testbed.client_ops(n1)["fsync"]
        fd = os.open(n1 / "pieces.bin", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for i in range(writes):
                os.pwrite(fd, b"w" * 4096, 2 * i * 4096)
        finally:
            os.close(fd)
        return _master_sessions()[str(n1)][1] - master0, testbed.client_ops(n1)["fsync"] - fsync0

    # the client's write cache: 100 writes reach the master as one chunk write
    master, fsyncs = chunk_writes_for(100)
    assert master <= 2 and fsyncs == 0
    assert testbed.status()["nodes"][0]["write_cache"] is True

    _sluice("testbed", "up", "--clients", "1", "--write-cache", "off")
    st = testbed.status()["nodes"]
    assert len(st) == 1 and st[0]["write_cache"] is False
    assert "sync" in Path("/proc/self/mounts").read_text().split(f" {n1} fuse.mfs ")[1].split()[0].split(",")
    master, fsyncs = chunk_writes_for(100)
    assert master >= 100 and fsyncs == 100
    # the main mount keeps its cache
    assert "sync" not in Path("/proc/self/mounts").read_text().split(f" {MNT} fuse.mfs ")[1].split()[0].split(",")

    testbed.up(clients=0)
    assert testbed.status()["nodes"] == [] and _mounts_at(n1) == []
    assert not Path(f"/run/netns/{NETNS}-n1").exists()


def test_write_cache_off_needs_clients() -> None:
    with mock.patch("os.geteuid", return_value=0), pytest.raises(UserError, match="give their number too"):
        testbed.up(write_cache=False)


def test_down_purge_removes_the_data(bed: None) -> None:
    testbed.up()
    (MNT / "doomed").write_bytes(b"x" * 4096)
    testbed.down(purge=True)
    assert not STATE.exists()
    _assert_nothing_left()
    testbed.down(purge=True)  # nothing to do: still fine

    testbed.up()
    assert list(MNT.iterdir()) == []
