"""Stage mode under `sluice run`: the job's drainer publishes for every
process of the job (docs/stage.md, "The job drains"). No process waits to
publish at fork, exec, system() or exit; a file is published only after
its last writer anywhere on the node closed it, whatever the process
topology; files the workflow removes or renames over before they are
published never reach the shared file system; directory renames carry
every process's staged files."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import bin_path, dead_pid, file_entry, report_json, sluice


@pytest.fixture
def tier(shm_tier: Path) -> Path:
    return shm_tier


@pytest.fixture
def work(tmp_path: Path) -> Path:
    w = tmp_path / "w"
    w.mkdir()
    return w


def job_run(tier: Path, work: Path, logdir: Path, *argv: str, delay_ms: int = 200,
            mode: str = "stage") -> subprocess.CompletedProcess:
    return sluice("run", "--mode", mode, "--tier", str(tier), "--stage-delay", str(delay_ms),
                  "--log-dir", str(logdir), "--path", str(work), "--", *argv, cwd=work)


def tier_is_empty(tier: Path) -> bool:
    return all(not any((tier / d).iterdir()) for d in ("data", "journal", "names"))


def fs_side(logdir: Path, path: Path) -> dict:
    """The fs side of path's record in the job's report ({} when the file
    system never saw it)."""
    try:
        return file_entry(report_json(logdir), path)["fs"]
    except (AssertionError, KeyError, StopIteration):
        return {}


@pytest.mark.parametrize("topology", ["fork", "vfork", "spawn", "exec"])
def test_a_writer_that_outlives_the_opener_finishes_the_file(tier, work, logdir, topology):
    """The process that created the file closes it and ends while another
    process (a forked child, a vfork'ed or posix_spawn'ed shell, the program
    it exec'd without sluice) still writes it through an inherited
    descriptor: the file is published after that writer's last byte."""
    out = work / "out"
    job_run(tier, work, logdir, bin_path("stage_topology"), topology, str(out))
    assert out.read_bytes() == b"parent\nchild\n"
    assert tier_is_empty(tier)


@pytest.mark.parametrize("mode", ["stage", "auto"])
def test_a_forked_child_closes_its_copy_of_a_staged_descriptor(tier, work, logdir, mode):
    """A forked child writes a file its parent staged, closes its inherited
    descriptor and exits; the parent goes on writing. The child's close is
    only a close (it crashed with SIGSEGV, handing the parent's entry over
    from the child's emptied table), and the file holds all three lines."""
    out = work / "out"
    r = job_run(tier, work, logdir, bin_path("stage_topology"), "fork-close", str(out), mode=mode)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == b"parent\nchild\nparent again\n"
    assert tier_is_empty(tier)


def test_strace_writes_its_output_file_under_stage(tier, work, logdir):
    """strace -o FILE, a real program whose feature probes fork children
    that close FILE: it ran the traced program and wrote the trace (under
    stage mode it said "Unexpected wait status 0xb" and ran nothing)."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed (scripts/setup installs it)")
    trace = work / "trace.txt"
    r = job_run(tier, work, logdir, "strace", "-e", "trace=execve", "-o", str(trace), "/bin/true")
    assert r.returncode == 0, r.stderr
    assert "Unexpected wait status" not in r.stderr
    text = trace.read_text()
    assert 'execve("/bin/true"' in text and "+++ exited with 0 +++" in text
    assert tier_is_empty(tier)


def test_popen_child_writes_after_the_parent_closed_its_file(tier, work, logdir):
    """subprocess.Popen(..., stdout=f); f.close(); p.wait(): the child's
    output after the parent's close is in the file, as plain."""
    code = ("import subprocess\nf = open('out.txt', 'w')\n"
            "p = subprocess.Popen(['sh', '-c', 'echo one; sleep 0.4; echo two'], stdout=f)\n"
            "f.close()\np.wait()\n")
    job_run(tier, work, logdir, sys.executable, "-c", code)
    assert (work / "out.txt").read_text() == "one\ntwo\n"
    assert tier_is_empty(tier)


RECEIVER = """
import os, socket, sys, time
s = socket.socket(fileno=int(sys.argv[1]))
_, fds, _, _ = socket.recv_fds(s, 1, 1)
time.sleep(0.4)
os.write(fds[0], b"received\\n")
"""

SENDER = """
import os, socket, subprocess, sys
a, b = socket.socketpair()
env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
subprocess.Popen([sys.executable, "-c", sys.argv[1], str(b.fileno())], pass_fds=[b.fileno()], env=env)
fd = os.open("out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"sent\\n")
socket.send_fds(a, [b"x"], [fd])
os.close(fd)
"""


def test_a_descriptor_passed_over_a_unix_socket_is_a_writer(tier, work, logdir):
    """The file's descriptor goes to a process not under sluice over a UNIX
    socket, and the sender closes and ends: the receiver's later write is
    in the published file."""
    job_run(tier, work, logdir, sys.executable, "-c", SENDER, RECEIVER)
    assert (work / "out").read_bytes() == b"sent\nreceived\n"
    assert tier_is_empty(tier)


def test_system_mv_of_a_staged_file_waits_for_nothing(tier, work, logdir):
    """NCO's pattern: write a temporary file, system("/bin/mv tmp final"),
    read final back. With a 5 s stage delay the job takes well under it (no
    process waits to publish at fork, exec or exit), the temporary name
    never reaches the shared file system, and final is published once."""
    t0 = time.monotonic()
    cp = job_run(tier, work, logdir, bin_path("stage_topology"), "system", "tmp.nc", "final.nc", delay_ms=5000)
    elapsed = time.monotonic() - t0
    assert cp.stdout == "moved\n"
    assert (work / "final.nc").read_text() == "moved\n" and not (work / "tmp.nc").exists()
    assert elapsed < 4.0, f"the job waited for the stage delay: {elapsed:.1f} s"
    assert fs_side(logdir, work / "tmp.nc").get("POSIX_OPENS", 0) == 0
    final = fs_side(logdir, work / "final.nc")
    assert final["POSIX_OPENS"] == 1 and final["POSIX_WRITES"] == 1 and final["POSIX_BYTES_WRITTEN"] == 6
    assert "1 file (0.0 MiB) published" in cp.stderr
    assert tier_is_empty(tier)


def test_early_copies_are_off_under_the_jobs_drainer_unless_asked_for(tier, work, logdir):
    """The drainer copies a handed-over file whole at the file system's
    speed; an early copy in the writer would copy it at idle priority and
    keep it from the drainer. --stage-precopy still sets it; --detach (no
    drainer: each process publishes at exit) keeps the library's 64M."""
    show = [sys.executable, "-c", "import os; print(os.environ.get('SLUICE_STAGE_PRECOPY'))"]
    assert job_run(tier, work, logdir, *show).stdout == "0\n"
    cp = sluice("run", "--mode", "stage", "--tier", str(tier), "--stage-precopy", "8M", "--log-dir", str(logdir),
                "--path", str(work), "--", *show, cwd=work)
    assert cp.stdout == f"{8 << 20}\n"
    cp = sluice("run", "--mode", "stage", "--detach", "--tier", str(tier), "--log-dir", str(logdir),
                "--path", str(work), "--", *show, cwd=work)
    assert cp.stdout == "None\n"


def names_key(path: str) -> str:
    """tier/names/KEY of a staged path (64-bit FNV-1a, src/stage/names.c)."""
    h = 14695981039346656037
    for b in path.encode():
        h = ((h ^ b) * 1099511628211) & (2**64 - 1)
    return f"{h:016x}"


def test_a_directory_with_an_index_link_whose_entry_is_gone_is_empty(tier, work, logdir):
    """The index link of a file already published (a drainer between
    removing the entry and its link, or killed there) does not make its
    directory look non-empty: h5py's tearDown rmtree met ENOTEMPTY under
    --mode auto in CI. The directory lists nothing and rmdir removes it."""
    job_run(tier, work, logdir, "sh", "-c", "echo x > first")   # (makes the tier)
    d = work / "d"
    d.mkdir()
    path = str(d / "published.nc")
    (tier / "names" / names_key(path)).symlink_to(f"{socket.gethostname()}-{dead_pid()}-1 0644 {path}")
    cp = job_run(tier, work, logdir, "sh", "-c", "ls -A d; rmdir d && echo removed")
    assert cp.stdout == "removed\n" and not d.exists()


DRAINER_KILLED = """
import os, signal, sys, time
with open("f", "w") as f:
    f.write("first\\n")                       # handed to the job's drainer at close
job = os.environ["SLUICE_STAGE_JOB"]
# the job's drainer, found in /proc (not with pgrep: under ASan a pgrep started
# by Python's vfork hangs in textdomain before its main)
def cmdline(p):
    try:
        with open(f"/proc/{p}/cmdline", "rb") as c:
            return c.read().split(b"\\0")
    except OSError:
        return []
pid = next(p for p in os.listdir("/proc") if p.isdigit() and
           (lambda a: a[:1] and a[0].endswith(b"sluice-stage-drain") and job.encode() in a)(cmdline(p)))
os.kill(int(pid), signal.SIGKILL)
time.sleep(0.2)
with open("g", "w") as f:                   # a handover now finds the drainer gone
    f.write("second\\n")
t0 = time.monotonic()
os.rename("f", "h")                         # its own handed-over file: no wait on itself
print(f"{time.monotonic() - t0:.1f}")
"""


def test_a_process_renames_its_handed_over_file_at_once_after_the_drainer_died(tier, work, logdir):
    """Killed drainer: the process's later files are its own again (its owner
    lock no longer says "job"), and a rename of a file it handed over before
    must not wait for that owner, itself (it waited a minute: the crash
    campaign's point 42). After recover, every byte is where plain puts it."""
    cp = sluice("run", "--mode", "stage", "--tier", str(tier), "--stage-delay", "5000", "--log-dir", str(logdir),
                "--path", str(work), "--", sys.executable, "-c", DRAINER_KILLED, cwd=work, check=False, timeout=120)
    assert cp.stdout and float(cp.stdout.split()[-1]) < 5.0, (cp.stdout, cp.stderr)
    sluice("recover", str(tier), check=False)
    assert (work / "h").read_text() == "first\n" and (work / "g").read_text() == "second\n"
    assert not (work / "f").exists()


def test_files_removed_on_the_node_are_never_published(tier, work, logdir):
    """A file removed, or renamed over, before it was published costs the
    shared file system nothing, and `sluice run` counts it."""
    cp = job_run(tier, work, logdir, "sh", "-c",
                 "echo a > scratch; rm scratch; echo b > old; echo c > new; mv new old; cat old")
    assert cp.stdout == "c\n"
    assert sorted(p.name for p in work.iterdir()) == ["old"] and (work / "old").read_text() == "c\n"
    assert "1 file (0.0 MiB) published; 2 files never published: removed on the node" in cp.stderr
    for name in ("scratch", "new"):
        assert fs_side(logdir, work / name).get("POSIX_OPENS", 0) == 0
    assert tier_is_empty(tier)


def test_a_directory_renamed_by_another_process_carries_the_staged_files(tier, work, logdir):
    """The shell stages d/f, `mv` (another process) renames d: e/f holds the
    bytes, is readable at once, and is published there; nothing is left on
    the tier."""
    cp = job_run(tier, work, logdir, "sh", "-c", "mkdir d; echo hi > d/f; mv d e; cat e/f")
    assert cp.stdout == "hi\n"
    assert sorted(str(p.relative_to(work)) for p in work.rglob("*")) == ["e", "e/f"]
    assert (work / "e" / "f").read_text() == "hi\n"
    assert tier_is_empty(tier)


RENAMEAT2 = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)   # (the preloaded wrapper first, as a program's call)
AT_FDCWD, NOREPLACE, EXCHANGE = -100, 1, 2
def renameat2(a, b, flags):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags) != 0:
        return os.strerror(ctypes.get_errno())
    return "ok"
os.mkdir("a"); os.mkdir("b")
open("a/x", "w").write("x in a\\n")
open("b/y", "w").write("y in b\\n")
open("z", "w").write("z\\n")
print(renameat2("a", "b", EXCHANGE))
print(renameat2("z", "a/y", NOREPLACE))
print(renameat2("a", "c", NOREPLACE))
print(renameat2("z", "c/z", NOREPLACE))
print(sorted(os.listdir("b")), sorted(os.listdir("c")), open("b/x").read(), open("c/y").read())
"""


@pytest.mark.parametrize("mode", ["stage", "auto"])
def test_renameat2_flags_move_staged_files_as_plain(tier, work, logdir, tmp_path, mode):
    """RENAME_EXCHANGE of two directories swaps their staged files;
    RENAME_NOREPLACE refuses a staged name and moves staged files as a plain
    rename: the same answers and the same tree as a plain run."""
    plain = tmp_path / "plain"
    plain.mkdir()
    want = subprocess.run([sys.executable, "-c", RENAMEAT2], cwd=plain, capture_output=True, text=True,
                          check=True).stdout
    env_auto = {"SLUICE_AUTO_LOCAL": "0"} if mode == "auto" else {}
    cp = sluice("run", "--mode", mode, "--tier", str(tier), "--stage-delay", "200", "--log-dir", str(logdir),
                "--path", str(work), "--", sys.executable, "-c", RENAMEAT2, cwd=work, env=env_auto)
    assert cp.stdout == want == "ok\nFile exists\nok\nok\n['x'] ['y', 'z'] x in a\n y in b\n\n"

    def tree(root: Path) -> dict:
        return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))
                if "logs" not in p.parts}
    assert tree(work) == tree(plain)
    assert tier_is_empty(tier)


MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}


@pytest.mark.parametrize("amode", ["create", "nocreate"])
def test_mpiio_open_of_a_file_still_staged_sees_it_published(tier, work, logdir, amode):
    """LAMMPS's restart pattern: rank 0 writes a header with stdio and closes
    it, then every rank MPI_File_opens the file (with MPI_MODE_CREATE or
    without) and writes after the header: the header is published before any
    rank opens it, so the file holds plain's bytes (without CREATE the open
    used to fail; with it the ranks' bytes were replaced by the header)."""
    out = work / "restart.mpiio"
    cp = sluice("run", "--mode", "stage", "--tier", str(tier), "--stage-delay", "200", "--log-dir", str(logdir),
                "--path", str(work), "--", "mpirun", "--oversubscribe", "-np", "3", bin_path("header_then_mpiio"),
                str(out), amode, env=MPI_ENV, cwd=work)
    assert cp.returncode == 0
    assert out.read_bytes() == b"HEADER\n" + b"aaaaaaa\n" + b"bbbbbbb\n" + b"ccccccc\n"
    assert tier_is_empty(tier)


SYMLINKS = """
import os
open("data", "w").write("staged\\n")
os.symlink("data", "link")
os.mkdir("dir")
os.symlink("dir", "dirlink")
open("dir/inner", "w").write("inner\\n")
print(os.stat("link").st_size, open("link").read().strip(), os.access("link", os.R_OK),
      os.path.exists("dirlink/inner"), open("dirlink/inner").read().strip(), os.path.islink("link"),
      os.readlink("link"))
"""


def test_paths_through_symbolic_links_reach_staged_files(tier, work, logdir, tmp_path):
    """A symbolic link to a staged file (dangling on the shared file system
    until the file is published), or through a linked directory: stat,
    access and open answer as plain."""
    plain = tmp_path / "plain"
    plain.mkdir()
    want = subprocess.run([sys.executable, "-c", SYMLINKS], cwd=plain, capture_output=True, text=True,
                          check=True).stdout
    assert want == "7 staged True True inner True data\n"
    assert job_run(tier, work, logdir, sys.executable, "-c", SYMLINKS).stdout == want
    assert (work / "link").read_text() == "staged\n" and tier_is_empty(tier)
