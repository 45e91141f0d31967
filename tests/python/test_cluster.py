"""Simulated nodes (``sluice testbed up --nodes N``): each a host of its own,
MPI across them, and the profile that tells the nodes apart.

Needs root. A private testbed (its own state folder, namespaces and mount
point), purged before and after, as in test_testbed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import NATIVE, REPO, bin_path, python_env
from sluice import testbed

pytestmark = pytest.mark.testbed

STATE = Path("/var/tmp/sluice-testbed-cluster")
NETNS = "sluice-cl"
MNT = Path("/mnt/sluice-cl")
NODES_DIR = Path("/run/sluice-testbed") / NETNS
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    """Two nodes up; yields the environment of a shell that ran
    ``eval "$(sluice testbed env)"``."""
    if os.geteuid() != 0:
        pytest.skip("the testbed needs root")
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith(("SLUICE_TESTBED_", "OMPI_MCA_"))]:
            mp.delenv(key)
        mp.setenv("SLUICE_TESTBED_STATE_DIR", str(STATE))
        mp.setenv("SLUICE_TESTBED_NETNS", NETNS)
        mp.setenv("SLUICE_TESTBED_MOUNTPOINT", str(MNT))
        testbed.down(purge=True)
        if subprocess.run(["ip", "link", "show", "sluice-nodes"], capture_output=True).returncode == 0:
            pytest.fail("the nodes of another testbed are up (sluice testbed down first): one set of nodes at a time")
        try:
            _cli("testbed", "up", "--nodes", "2")
            lines = _cli("testbed", "env").splitlines()
            env = {**python_env(), **ROOT_ENV}
            for line in lines:
                name, _, value = line.removeprefix("export ").partition("=")
                env[name] = value.strip("'")
            yield env
        finally:
            testbed.down(purge=True)
            _assert_no_nodes_left()


def _cli(*args: str, check: bool = True, **kw) -> str:
    cp = subprocess.run([sys.executable, "-m", "sluice", *args], env={**python_env(), **kw.pop("env", {})},
                        capture_output=True, text=True, timeout=300, **kw)
    if check:
        assert cp.returncode == 0, cp.stderr
    return cp.stdout if check else cp


def _on(node: str, *argv: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`sluice testbed exec NODE -- ARGV`."""
    cp = subprocess.run([sys.executable, "-m", "sluice", "testbed", "exec", node, "--", *argv], env=python_env(),
                        capture_output=True, text=True, timeout=120, cwd=cwd)
    if check:
        assert cp.returncode == 0, cp.stderr
    return cp


def _mounts_at(mnt: Path) -> list[str]:
    lines = Path("/proc/self/mounts").read_text().splitlines()
    return [f.split()[2] for f in lines if f.split()[1] == str(mnt)]


def _kill_node_when(node: str, job: subprocess.Popen, ready, timeout: float = 120) -> None:
    """Once ready() holds (the job still running), `sluice testbed kill
    NODE`; the job then ends with an error."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert job.poll() is None and time.monotonic() < deadline, "the job ended, or never got that far"
        time.sleep(0.1)
    assert _cli("testbed", "kill", node).startswith(f"{node}: killed ")
    assert job.wait(timeout=120) != 0


def _assert_no_nodes_left() -> None:
    for k in (1, 2, 3):
        assert not Path(f"/run/netns/{NETNS}-n{k}").exists()
        assert not (NODES_DIR / f"node{k}.mnt").exists() and not (NODES_DIR / f"node{k}.uts").exists()
        assert _mounts_at(Path(f"{MNT}-node{k}")) == []
    assert f"# sluice testbed {NETNS}" not in Path("/etc/hosts").read_text()
    assert subprocess.run(["ip", "link", "show", "sluice-nodes"], capture_output=True).returncode != 0
    assert _mounts_at(MNT) == []


# ---------------------------------------------------------------- tests


def test_each_node_is_a_host_of_its_own_on_one_file_system(cluster, tmp_path) -> None:
    assert _on("node1", "hostname").stdout == "node1\n"
    assert _on("node2", "hostname").stdout == "node2\n"
    # every node knows every other by name, at its own address
    assert _on("node1", "getent", "hosts", "node2").stdout.split() == ["10.214.2.2", "node2"]
    assert "inet 10.214.1.2/30" in _on("node1", "ip", "-4", "addr", "show", "pfs").stdout

    # node-local: /dev/shm, /tmp and /var/tmp are the node's own
    for d in ("/dev/shm", "/tmp", "/var/tmp"):
        name = f"{d}/sluice-cluster-{os.getpid()}"
        _on("node1", "sh", "-c", f"echo one > {name}")
        assert not Path(name).exists()
        assert _on("node2", "test", "-e", name, check=False).returncode == 1
        assert _on("node1", "cat", name).stdout == "one\n"

    # the shared file system is at the same path on every node, each node
    # through its own client: the node's MNT is the host's MNT-nodeK
    dev = {k: int(_on(f"node{k}", "stat", "-c", "%d", str(MNT)).stdout) for k in (1, 2)}
    assert dev == {k: os.stat(f"{MNT}-node{k}").st_dev for k in (1, 2)}
    assert len({*dev.values(), os.stat(MNT).st_dev}) == 3
    shared = MNT / f"shared-{os.getpid()}"
    _on("node1", "sh", "-c", f"echo from node1 > {shared}")
    assert _on("node2", "cat", str(shared)).stdout == "from node1\n"
    assert shared.read_text() == "from node1\n"

    # exec: the command's exit status; the working directory kept where the
    # node has it, else $HOME with a word why
    assert _on("node2", "sh", "-c", "exit 7", check=False).returncode == 7
    assert _on("node1", "pwd", cwd=MNT).stdout == f"{MNT}\n"
    here = tmp_path / "only-on-the-host"
    here.mkdir()
    cp = _on("node1", "pwd", cwd=here)
    assert cp.stdout.strip() == os.environ.get("HOME", "/") and f"{here} is not on node1" in cp.stderr
    cp = _on("node3", "true", check=False)
    assert cp.returncode == 1 and "node3 is not up (nodes up: node1, node2)" in cp.stderr


def test_mpirun_across_nodes_under_sluice_gives_the_plain_bytes_and_a_report_by_host(cluster) -> None:
    work = MNT / f"mpi-{os.getpid()}"
    (work / "plain").mkdir(parents=True)
    (work / "nodes").mkdir()
    prog = bin_path("mpiio_known")
    plain = subprocess.run(["mpirun", "--oversubscribe", "-np", "4", prog, str(work / "plain")],
                           env={**python_env(), **ROOT_ENV}, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr

    logs = work / "logs"
    cp = subprocess.run([sys.executable, "-m", "sluice", "run", "--mode", "profile", "--log-dir", str(logs), "--",
                         "mpirun", "--host", "node1:2,node2:2", prog, str(work / "nodes")],
                        env=cluster, capture_output=True, text=True, timeout=300, cwd=work)
    assert cp.returncode == 0, cp.stderr
    assert (work / "nodes" / "known.dat").read_bytes() == (work / "plain" / "known.dat").read_bytes()

    # one log per rank: the launch path (node-rsh.sh, nsenter, the shell, orted) is not the job
    names = sorted(p.name for p in logs.iterdir())
    assert len(names) == 4 and all("_mpiio_known_" in n for n in names), names
    report = json.loads(_cli("report", "--json", str(logs)))
    hosts = [(h["host"], h["processes"], h["ranks"]) for h in report["hosts"]]
    assert hosts == [("node1", 2, [0, 1]), ("node2", 2, [2, 3])]
    # each rank wrote its 6,106 bytes and read 100 of its own and 6,106 of the next rank's
    for h in report["hosts"]:
        assert h["app_bytes_written"] >= 2 * 6106 and h["app_bytes_read"] >= 2 * 6206, h
        assert h["app_bytes_written"] == h["fs_bytes_written"] and h["app_ops"] == h["fs_ops"]  # profile mode
    text = _cli("report", str(logs))
    assert "  hosts: 2: node1, node2" in text
    rows = [line.split() for line in text.splitlines() if line.strip().startswith(("node1 ", "node2 "))]
    assert [r[:3] for r in rows] == [["node1", "2", "0-1"], ["node2", "2", "2-3"]]

    # the Darshan export keeps the hosts (its job metadata, read back by sluice's own reader)
    _cli("export", "--darshan", "-o", str(work / "darshan"), str(logs))
    exported = json.loads(_cli("report", "--json", str(work / "darshan")))
    assert [h["host"] for h in exported["hosts"]] == ["node1,node2"]

    # a plain mpirun -np takes the nodes' hostfile
    hostnames = subprocess.run(["mpirun", "-np", "4", "hostname"], env=cluster, capture_output=True, text=True,
                               timeout=120, cwd=work)
    assert hostnames.returncode == 0, hostnames.stderr
    assert sorted(hostnames.stdout.split()) == ["node1", "node1", "node2", "node2"]


def test_fewer_nodes_and_down_end_what_ran_on_them(cluster) -> None:
    sleeper = subprocess.Popen([sys.executable, "-m", "sluice", "testbed", "exec", "node2", "--", "sleep", "600"],
                               env=python_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not subprocess.run(["ip", "netns", "pids", f"{NETNS}-n2"], capture_output=True,
                                 text=True).stdout.split()[1:]:
            assert time.monotonic() < deadline, "the sleep never started on node2"
            time.sleep(0.1)
        _cli("testbed", "up", "--nodes", "1")
        assert sleeper.wait(timeout=30) != 0  # killed with its node
        assert not Path(f"/run/netns/{NETNS}-n2").exists() and not (NODES_DIR / "node2.mnt").exists()
        assert "node2" not in Path("/etc/hosts").read_text()
        assert (STATE / "run" / "hostfile").read_text() == f"node1 slots={len(os.sched_getaffinity(0))}\n"
        assert _on("node1", "hostname").stdout == "node1\n"
        cp = _on("node2", "true", check=False)
        assert cp.returncode == 1 and "node2 is not up (nodes up: node1)" in cp.stderr
    finally:
        sleeper.kill()
        sleeper.wait()
        _cli("testbed", "up", "--nodes", "2")
    assert _on("node2", "hostname").stdout == "node2\n"


# ---------------------------------------------------------------- Slurm across the nodes

SLURM = REPO / "scripts" / "slurm"
SLURM_DIR = Path("/var/lib/sluice-slurm-cluster")
EPILOG_LOG = Path("/var/log/sluice-epilog.log")


@pytest.fixture(scope="module")
def slurm(cluster) -> Iterator[dict[str, str]]:
    """scripts/slurm up --nodes 2 on the two nodes: slurmctld here, a slurmd
    in each node; a private directory and port."""
    env = {**cluster, "SLUICE_SLURM_DIR": str(SLURM_DIR), "SLUICE_SLURM_PORT": "16917",
           "SLUICE_TESTBED_NETNS": NETNS}
    cp = subprocess.run([str(SLURM), "up", "--nodes", "2"], env=env, capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    env["SLURM_CONF"] = cp.stdout.strip().split("=", 1)[1]
    try:
        yield env
    finally:
        subprocess.run([str(SLURM), "down"], env=env, capture_output=True, timeout=120)


def _sbatch(work: Path, env: dict[str, str], script: str, *opts: str) -> str:
    (work / "job.sh").write_text("#!/bin/sh\n" + script)
    cp = subprocess.run(["sbatch", "--parsable", "--wait", "-o", str(work / "slurm-%j.out"), *opts,
                         str(work / "job.sh")], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    out = "".join(p.read_text() for p in sorted(work.glob("slurm-*.out")))
    assert cp.returncode in (0, 1), f"{cp.stderr}\n{out}"
    return out


def _farm(*args: str) -> str:
    return " ".join([sys.executable, "-m", "sluice", "farm", "-q", *args])


def test_srun_and_sbatch_spread_a_farm_over_the_nodes(slurm) -> None:
    names = subprocess.run(["srun", "-N", "2", "hostname"], env=slurm, capture_output=True, text=True, timeout=120)
    assert names.returncode == 0, names.stderr
    assert sorted(names.stdout.split()) == ["node1", "node2"]

    work = MNT / f"farm-{os.getpid()}"
    work.mkdir()
    n = 12
    (work / "cells.txt").write_text("".join(f"{i}\n" for i in range(1, n + 1)))
    (work / "forcing.bin").write_bytes(os.urandom(100_000))
    member = bin_path("ensemble_member")
    out = _sbatch(work, slurm, "srun --mpi=pmix " + _farm("--json", "s.json", "--input", "forcing.bin", "--tasks",
                                                          "cells.txt", "--", member, "{1}", "2", "3") + "\n",
                  "-N", "2", "--ntasks-per-node=1")
    s = json.loads((work / "s.json").read_text())
    assert s["counts"]["done"] == n, out
    # tasks ran on both nodes, each rank on its own
    assert {(t["host"], t["rank"]) for t in s["tasks"]} == {("node1", 0), ("node2", 1)}
    for i in range(1, n + 1):
        ref = work / "ref" / str(i)
        ref.mkdir(parents=True)
        subprocess.run([member, str(i), "2", "3"], cwd=ref, check=True)
    tree = {str(p.relative_to(work / "tasks")): p.read_bytes() for p in sorted((work / "tasks").rglob("*"))
            if p.is_file()}
    assert tree == {str(p.relative_to(work / "ref")): p.read_bytes() for p in sorted((work / "ref").rglob("*"))
                    if p.is_file()}
    # the input was copied once to each node's own local directory, never to the host's
    for node in ("node1", "node2"):
        copies = _on(node, "sh", "-c", "ls /dev/shm/sluice-farm-0/inputs/*/forcing.bin").stdout.split()
        assert len(copies) == 1
        assert _on(node, "cmp", copies[0], str(work / "forcing.bin"), check=False).returncode == 0
    assert not list(Path("/dev/shm").glob("sluice-farm-0/inputs/*/forcing.bin")) or \
        all(p.stat().st_mtime < (work / "forcing.bin").stat().st_mtime for p in
            Path("/dev/shm").glob("sluice-farm-0/inputs/*/forcing.bin"))


def test_the_epilog_of_each_node_publishes_what_the_killed_tasks_left_on_it(slurm) -> None:
    work = MNT / f"epilog-{os.getpid()}"
    work.mkdir()
    tasks = 6
    (work / "t.txt").write_text("".join(f"{i}\n" for i in range(1, tasks + 1)))
    (work / "one-drainer.toml").write_text("[stage]\ndrainers = 1\n")
    writer = "for i in $(seq 400); do echo {1}-$i > f$i; done; kill -9 $$"
    cmd = _farm("--json", "s.json", "--retries", "0", "--config", "one-drainer.toml", "--tasks", "t.txt", "--",
                "sh", "-c", f"'{writer}'")
    mark = EPILOG_LOG.stat().st_size if EPILOG_LOG.exists() else 0
    _sbatch(work, slurm, "srun --mpi=pmix " + cmd + "\n", "-N", "2", "--ntasks-per-node=1")
    s = json.loads((work / "s.json").read_text())
    assert s["counts"]["failed"] == tasks
    kept = [(f["host"], f["kept_tier"]) for f in s["failed"] if f["kept_tier"]]
    assert {h for h, _ in kept} == {"node1", "node2"}, "no tier was left on one of the nodes: nothing to show"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_on(h, "test", "-e", k, check=False).returncode == 0 for h, k in kept):
        time.sleep(0.5)
    log = EPILOG_LOG.read_text()[mark:] if EPILOG_LOG.exists() else ""
    for host, k in kept:
        assert _on(host, "test", "-e", k, check=False).returncode == 1, log
        assert f" on {host}: sluice recover {k}: " in log, log
    for task in range(1, tasks + 1):
        d = work / "tasks" / str(task)
        assert sorted(int(p.name[1:]) for p in d.glob("f*")) == list(range(1, 401))
        assert all((d / f"f{i}").read_text() == f"{task}-{i}\n" for i in range(1, 401))


# ---------------------------------------------------------------- stage mode across the nodes


def test_files_staged_on_one_node_reach_another_once_published_and_wait_says_when(cluster) -> None:
    work = MNT / f"stage-{os.getpid()}"
    work.mkdir()
    text = {f"f{i}": f"line {i} from node1\n" * i for i in range(1, 21)}
    script = "; ".join(f"printf '{t}' > {n}" for n, t in text.items())
    cp = _on("node1", sys.executable, "-m", "sluice", "run", "-q", "--mode", "stage", "--detach", "--", "sh", "-c",
             script, cwd=work)
    assert cp.returncode == 0, cp.stderr
    # staged on node 1's tier: not on the shared file system yet, for node 2 nor for the host
    assert not (work / "f1").exists()
    assert _on("node2", "test", "-e", str(work / "f1"), check=False).returncode == 1
    cp = _on("node2", sys.executable, "-m", "sluice", "wait", "--timeout", "0.5", cwd=work, check=False)
    assert cp.returncode == 1
    assert (f"20 file(s) still on node1's tier /dev/shm/sluice-stage-0 ({work}/f1, {work}/f10, {work}/f11, ...; "
            "sluice drain or sluice recover there publishes them)") in cp.stderr
    # a path nobody staged needs no wait, on any node
    assert _on("node2", sys.executable, "-m", "sluice", "wait", "--timeout", "0.5", str(work / "other"),
               cwd=work).returncode == 0

    waiter = subprocess.Popen([sys.executable, "-m", "sluice", "testbed", "exec", "node2", "--", sys.executable, "-m",
                               "sluice", "wait", "--timeout", "120", "--poll", "0.05", str(work / "f7")],
                              cwd=work, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    assert waiter.poll() is None  # still waiting
    drained = _on("node1", sys.executable, "-m", "sluice", "drain", cwd=work)
    assert "20 published" in drained.stdout
    assert waiter.wait(timeout=60) == 0, waiter.stderr.read()
    for name, t in text.items():
        assert _on("node2", "cat", str(work / name)).stdout == t
    assert list((work / "sluice-logs" / ".sluice-pending").iterdir()) == []


def test_a_node_killed_mid_job_loses_nothing_once_its_epilog_ran(cluster) -> None:
    work = MNT / f"killed-{os.getpid()}"
    work.mkdir()
    script = "for i in $(seq 200); do echo $i > f$i; done; touch done; sleep 600"
    # files are published only after ten minutes unused: they wait on node 1's tier
    job = subprocess.Popen([sys.executable, "-m", "sluice", "testbed", "exec", "node1", "--", sys.executable, "-m",
                            "sluice", "run", "-q", "--mode", "stage", "--stage-delay", "600000", "--",
                            "sh", "-c", script], cwd=work, env=python_env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        _kill_node_when("node1", job, lambda: _on("node1", "ls", "/dev/shm/sluice-stage-0/journal",
                                                  check=False).stdout.count("\n") >= 201)
    finally:
        job.kill()
        job.wait()
    assert not (work / "f1").exists()  # nothing published: all of it on node 1's tier
    # node 1's epilog at the end of the killed job
    log = work / "epilog.log"
    _on("node1", "env", "SLURM_JOB_UID=0", "SLURM_JOB_ID=4242", f"SLUICE_EPILOG_LOG={log}",
        f"SLUICE_EPILOG_SLUICE={REPO / '.venv' / 'bin' / 'sluice'}", str(REPO / "contrib" / "slurm" / "sluice-epilog"))
    assert "job 4242 on node1: sluice recover /dev/shm/sluice-stage-0: " in log.read_text()
    assert sorted(int(p.name[1:]) for p in work.glob("f*")) == list(range(1, 201))
    assert all((work / f"f{i}").read_text() == f"{i}\n" for i in range(1, 201))
    assert _on("node2", "cat", str(work / "f200")).stdout == "200\n"
    assert _on("node1", "ls", "/dev/shm/sluice-stage-0/journal").stdout == ""


@pytest.mark.parametrize("mode,api,layout", [("acb", "coll", "shared"), ("buffer", "indep", "blocked"),
                                             ("buffer", "indep", "shared")])
def test_a_shared_file_written_from_two_nodes_in_4k_pieces_is_plains(cluster, mode, api, layout) -> None:
    """Ranks 0-1 on node 1 and 2-3 on node 2 write one file in 4 KiB pieces,
    each node through its own client. acb over IOR's strided pattern
    (aggregators per node) and buffer over disjoint blocks (each rank's run
    of pieces) write the plain run's bytes in fewer writes; buffer over the
    strided pattern, where each rank's pieces sit between the other node's
    in the same stripes, has nothing to merge: the plain bytes, as many
    writes."""
    work = MNT / f"shared-{mode}-{layout}-{os.getpid()}"
    work.mkdir()
    ior = [str(NATIVE / "sluice-bench-ior-shared"), "--piece", "4096", "--per-rank", str(256 * 1024), "--api", api,
           "--layout", layout, "--check"]
    host = ["mpirun", "--host", "node1:2,node2:2"]
    plain = subprocess.run([*host, *ior, "--file", str(work / "plain.dat")], env=cluster, capture_output=True,
                           text=True, timeout=120, cwd=work)
    assert plain.returncode == 0, plain.stderr
    logs = work / "logs"
    cp = subprocess.run([sys.executable, "-m", "sluice", "run", "-q", "--mode", mode, "--log-dir", str(logs), "--",
                         *host, *ior, "--file", str(work / "sluice.dat")], env=cluster, capture_output=True, text=True,
                        timeout=300, cwd=work)
    assert cp.returncode == 0, cp.stderr
    assert (work / "sluice.dat").read_bytes() == (work / "plain.dat").read_bytes()
    report = json.loads(_cli("report", "--json", str(logs)))
    assert [h["host"] for h in report["hosts"]] == ["node1", "node2"]
    f = next(f for f in report["files"] if f["path"] == str(work / "sluice.dat"))
    assert f["fs"]["POSIX_BYTES_WRITTEN"] == 4 * 256 * 1024
    calls = 4 * 64  # 64 pieces a rank
    if mode == "acb":
        assert f["app"]["MPIIO_COLL_WRITES"] == calls and f["fs"]["POSIX_WRITES"] * 4 <= calls, f
    elif layout == "blocked":
        assert f["app"]["POSIX_WRITES"] == calls and f["fs"]["POSIX_WRITES"] * 4 <= calls, f
    else:
        assert f["app"]["POSIX_WRITES"] == f["fs"]["POSIX_WRITES"] == calls, f


@pytest.mark.parametrize("map_by,hints,writers", [
    ("slot", "", {0: "node1", 2: "node2"}),
    ("node", "", {0: "node1", 1: "node2"}),
    ("slot", "cb_nodes=1", {0: "node1"}),
    ("slot", "cb_config_list=*:2", {0: "node1", 1: "node1", 2: "node2", 3: "node2"}),
])
def test_acb_aggregates_on_one_rank_of_each_node_unless_the_hints_say_otherwise(cluster, map_by, hints,
                                                                                writers) -> None:
    """acb's aggregators are the first rank of each node, whether mpirun
    placed the ranks node by node or round-robin (--map-by node: ranks 0 and
    2 on node 1); cb_nodes and cb_config_list change how many, as ROMIO's
    hints do. The ranks that wrote to the file system are told apart by
    their own logs; the file is the pattern, byte for byte."""
    work = MNT / f"aggs-{map_by}-{len(hints)}-{os.getpid()}"
    work.mkdir()
    logs = work / "logs"
    cp = subprocess.run([sys.executable, "-m", "sluice", "run", "-q", "--mode", "acb", "--log-dir", str(logs), "--",
                         "mpirun", "--host", "node1:2,node2:2", "--map-by", map_by,
                         str(NATIVE / "sluice-bench-ior-shared"), "--file", str(work / "f.dat"), "--piece", "4096",
                         "--per-rank", str(1 << 20), "--api", "coll", "--layout", "shared", "--check",
                         *(["--hints", hints] if hints else [])],
                        env=cluster, capture_output=True, text=True, timeout=300, cwd=work)
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout.splitlines()[-1])["mismatches"] == 0
    rows = json.loads(_cli("report", "--json", "--per-process", str(logs)))["per_process"]
    fs = {r["rank"]: (r["host"], r["modules"]["MPI-IO"]["fs"]["counters"]["MPIIO_BYTES_WRITTEN"]) for r in rows}
    assert {rank: host for rank, (host, n) in fs.items() if n} == writers, fs
    # 4 MiB in 1 MiB stripes, dealt round-robin to the aggregators
    assert sum(n for _, n in fs.values()) == 4 << 20
    assert {n for _, n in fs.values() if n} == {(4 << 20) // len(writers)}


@pytest.mark.parametrize("piece,aggregated", [("64K", True), ("256K", False)])
def test_acb_across_nodes_aggregates_pieces_below_four_blocks(cluster, piece, aggregated) -> None:
    """Ranks on two nodes write 64 KiB and 256 KiB pieces strided, in
    collective calls, under acb. Across hosts the cost model's unit is four
    of MooseFS's 64 KiB blocks (docs/acb.md): 64 KiB pieces are aggregated
    into a few large writes, 256 KiB ones go straight through, one write
    per piece. The bytes are the pattern's either way."""
    work = MNT / f"unit-{piece}-{os.getpid()}"
    work.mkdir()
    logs = work / "logs"
    cp = subprocess.run([sys.executable, "-m", "sluice", "run", "-q", "--mode", "acb", "--log-dir", str(logs), "--",
                         "mpirun", "--host", "node1:2,node2:2", str(NATIVE / "sluice-bench-ior-shared"),
                         "--file", str(work / "f.dat"), "--piece", piece, "--per-rank", str(1 << 20), "--api", "coll",
                         "--layout", "shared", "--check"],
                        env=cluster, capture_output=True, text=True, timeout=300, cwd=work)
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout.splitlines()[-1])["mismatches"] == 0
    f = next(f for f in json.loads(_cli("report", "--json", str(logs)))["files"] if f["path"] == str(work / "f.dat"))
    calls = 4 * (1 << 20) // (64 << 10 if piece == "64K" else 256 << 10)
    assert f["app"]["MPIIO_COLL_WRITES"] == calls
    if aggregated:
        assert f["fs"]["MPIIO_ACB_DIRECT_WRITES"] == 0 and f["fs"]["POSIX_WRITES"] <= 4, f["fs"]
    else:
        assert f["fs"]["MPIIO_ACB_DIRECT_WRITES"] == calls and f["fs"]["POSIX_WRITES"] == calls, f["fs"]


def test_the_ior_benchmark_runs_acb_and_its_peers_inside_two_nodes(cluster, tmp_path) -> None:
    """`sluice bench ... -p ior-shared.nodes=2`: every method's ranks run
    inside the two nodes (mpirun --host node1:2,node2:2), the harness checks
    that all methods wrote the same bytes, and the results have each
    method's rate and acb over the best peer per piece size."""
    target = MNT / f"bench-{os.getpid()}"
    target.mkdir()
    out = tmp_path / "ior.json"
    methods = "ompio-indep,romio-indep,acb-ompio-indep,acb-romio-indep"
    cp = subprocess.run([sys.executable, "-m", "sluice", "bench", "--target", str(target), "--rounds", "1",
                         "--warmup", "0", "-p", "limits.size=4M", "-p", "limits.files=20", "-p", "ior-shared.nodes=2",
                         "-p", "ior-shared.per_rank=256K", "-p", "ior-shared.pieces=4K,256K", "-p",
                         f"ior-shared.methods={methods}", "--json", str(out), "ior-shared"],
                        env=cluster, capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stderr
    w = json.loads(out.read_text())["workloads"]["ior-shared"]
    medians = {k: v["median"] for k, v in w["summary"]["plain"].items() if v["median"] is not None}
    for m in methods.split(","):
        for piece in ("4K", "256K"):
            assert medians[f"{m.replace('-', '_')}_{piece}_MiBps"] > 0
    assert {"acb_over_best_peer_4K", "acb_over_best_peer_256K"} <= medians.keys()
    raw = [r for rnd in w["rounds"] for r in rnd["raw"]]
    assert sorted(r["method"] for r in raw) == sorted(methods.split(",") * 2)
    assert all(r["ranks"] == 4 and r["mismatches"] == 0 for r in raw)


def test_a_farm_over_mpirun_across_nodes_loses_a_node_and_a_rerun_finishes(cluster) -> None:
    """mpirun --host node1:1,node2:1 sluice farm: tasks on both nodes, the
    input copied once to each; node 2 killed whole mid-run; the journal
    holds only whole lines (a torn last line at most) and the same command
    again runs what was not done: the plain run's files."""
    from sluice.farm.journal import decode

    work = MNT / f"farmkill-{os.getpid()}"
    work.mkdir()
    n = 16
    (work / "cells.txt").write_text("".join(f"{i}\n" for i in range(1, n + 1)))
    (work / "forcing.bin").write_bytes(bytes(range(256)) * 64)
    member = bin_path("ensemble_member")
    cmd = ["mpirun", "--host", "node1:1,node2:1", sys.executable, "-m", "sluice", "farm", "-q", "--json", "s.json",
           "--input", "forcing.bin", "--tasks", "cells.txt", "--", member, "{1}", "2", "3", "{input}", "150"]
    first = subprocess.Popen(cmd, env=cluster, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _kill_node_when("node2", first, lambda: len(list((work / "tasks").glob("*/member.log"))) >= 4)
    finally:
        first.kill()
        first.communicate()
    lines = []
    for f in sorted((work / "sluice-farm.journal").glob("*.log")):
        raw = f.read_text().splitlines()
        decoded = [decode(l) for l in raw]
        assert all(d is not None for d in decoded[:-1]), raw  # whole lines; the last may be cut short
        lines += [d for d in decoded if d is not None]
    done = [l.number for l in lines if l.outcome == "done"]
    assert len(done) == len(set(done)) and set(done) < set(range(1, n + 1))

    again = subprocess.run(cmd, env=cluster, cwd=work, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    s = json.loads((work / "s.json").read_text())
    assert s["counts"]["done"] + s["counts"]["skipped"] == n and s["counts"]["failed"] == 0
    assert {t["host"] for t in s["tasks"]} == {"node1", "node2"}
    for i in range(1, n + 1):
        ref = work / "ref" / str(i)
        ref.mkdir(parents=True)
        subprocess.run([member, str(i), "2", "3", str(work / "forcing.bin"), "150"], cwd=ref, check=True,
                       capture_output=True)
    got = {str(p.relative_to(work / "tasks")): p.read_bytes() for p in sorted((work / "tasks").rglob("*"))
           if p.is_file()}
    assert got == {str(p.relative_to(work / "ref")): p.read_bytes() for p in sorted((work / "ref").rglob("*"))
                   if p.is_file()}
    # one copy of this input on each node (other tests' inputs may be there too)
    same = f"for f in /dev/shm/sluice-farm-0/inputs/*/forcing.bin; do cmp -s $f {work}/forcing.bin && echo $f; done; true"
    for node in ("node1", "node2"):
        assert len(_on(node, "sh", "-c", same).stdout.split()) == 1


def test_down_cleans_up_nodes_whose_clients_crashed(cluster) -> None:
    """The nodes' clients SIGKILLed (their FUSE mounts left dangling) and a
    process left on a node: `down` still leaves nothing behind."""
    import signal

    st = testbed.status()
    stray = subprocess.Popen([sys.executable, "-m", "sluice", "testbed", "exec", "node2", "--", "sleep", "600"],
                             env=python_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while len(subprocess.run(["ip", "netns", "pids", f"{NETNS}-n2"], capture_output=True,
                                 text=True).stdout.split()) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        for n in st["nodes"]:
            os.kill(n["pid"], signal.SIGKILL)
        testbed.down()
        _assert_no_nodes_left()
        assert stray.wait(timeout=30) != 0
    finally:
        stray.kill()
        stray.wait()
    _cli("testbed", "up", "--nodes", "2")
    assert _on("node2", "hostname").stdout == "node2\n"
