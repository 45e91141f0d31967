"""A program cannot tell it runs under sluice: the same results in every mode.

Each test runs a program plain and then under every mode (profile, buffer,
stage, acb) on a fresh directory, and compares what a program relies on:
its exit status, its output, and the files it leaves (names and bytes).
"""

from __future__ import annotations

import os
import sys
import subprocess
from pathlib import Path

import pytest

from conftest import bin_path, sluice

MODES = ["profile", "buffer", "stage", "acb", "auto"]


def mode_args(mode: str, tmp: Path, work: Path, stage_delay_ms: int = 50) -> list[str]:
    args = ["run", "-q", "--mode", mode, "--log-dir", str(tmp / f"logs-{mode}"), "--path", str(work)]
    if mode in ("stage", "auto"):
        args += ["--tier", str(tmp / f"tier-{mode}"), "--stage-delay", str(stage_delay_ms)]
    return args


def run_under(mode: str | None, tmp: Path, work: Path, argv: list[str], timeout: float = 60,
              env: dict[str, str] | None = None, stage_delay_ms: int = 50) -> subprocess.CompletedProcess:
    """argv (with {w} replaced by work) plain (mode None) or under sluice."""
    argv = [a.replace("{w}", str(work)) for a in argv]
    if mode is None:
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e)
    return sluice(*mode_args(mode, tmp, work, stage_delay_ms), "--", *argv, check=False, timeout=timeout, env=env)


def tree(root: Path) -> dict[str, bytes | str]:
    """Every name under root: file bytes, or 'dir' / 'link:TARGET'."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out


def same_as_plain(tmp_path: Path, mode: str, argv: list[str], setup=None) -> subprocess.CompletedProcess:
    """Run argv plain and under mode in two fresh directories; assert the
    same status, output and tree. Returns the run under sluice."""
    results = []
    for label in ("plain", mode):
        work = tmp_path / f"w-{label}"
        work.mkdir()
        if setup:
            setup(work)
        cp = run_under(None if label == "plain" else mode, tmp_path, work, argv)
        results.append((cp, tree(work), work))
    (plain, plain_tree, pw), (cp, got_tree, gw) = results
    out = cp.stdout.replace(str(gw), "{w}")
    assert (cp.returncode, out) == (plain.returncode, plain.stdout.replace(str(pw), "{w}")), cp.stderr
    assert got_tree == plain_tree
    return cp


FD_SCENARIOS = ["fdopendir", "close_range", "closefrom", "syscall_close", "fclose_fdopen", "dup2_over",
                "opendir_reuse", "spawn", "cloexec"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", FD_SCENARIOS)
def test_descriptors_closed_or_reused_behind_our_back(tmp_path, mode, scenario):
    cp = same_as_plain(tmp_path, mode, [bin_path("fdreuse"), "{w}", scenario])
    assert cp.returncode == 0 and cp.stdout.strip().endswith(f"ok {scenario}")


def deep_tree(work: Path) -> None:
    d = work / "t"
    for i in range(9):
        d = d / f"level{i}"
        d.mkdir(parents=True)
        for j in range(3):
            (d / f"f{j}").write_bytes(bytes([i, j]) * 100)


@pytest.mark.parametrize("mode", MODES)
def test_rm_rf_of_a_deep_tree(tmp_path, mode):
    # coreutils rm walks with fts: fdopendir, closedir, dup'd directory fds.
    same_as_plain(tmp_path, mode, ["rm", "-rf", "{w}/t"], setup=deep_tree)


@pytest.mark.parametrize("mode", MODES)
def test_python_rmtree_and_scandir(tmp_path, mode):
    prog = ("import os, shutil, sys\n"
            "w = sys.argv[1]\n"
            "fd = os.open(w + '/t', os.O_RDONLY)\n"
            "print(sorted(e.name for e in os.scandir(fd)))\n"
            "os.close(fd)\n"
            "shutil.rmtree(w + '/t')\n"
            "with open(w + '/after', 'w') as f: f.write('done')\n")
    same_as_plain(tmp_path, mode, ["python3", "-c", prog, "{w}"], setup=deep_tree)


@pytest.mark.parametrize("mode", MODES)
def test_listing_shows_files_just_written(tmp_path, mode):
    prog = ("import os, sys\n"
            "w = sys.argv[1]\n"
            "for i in range(5):\n"
            "    open(f'{w}/part{i}', 'w').write(str(i))\n"
            "print(sorted(os.listdir(w)))\n")
    same_as_plain(tmp_path, mode, ["python3", "-c", prog, "{w}"])


@pytest.mark.parametrize("mode", MODES)
def test_bad_path_pointers_get_efault(tmp_path, mode):
    # NULL and unmapped path pointers: the kernel's EFAULT, never a crash.
    if "asan" in os.environ.get("SLUICE_PRELOAD_FIRST", ""):
        pytest.skip("AddressSanitizer's own interceptors stop a program that passes a bad pointer, plain or not")
    cp = same_as_plain(tmp_path, mode, [bin_path("badptr"), "{w}"])
    lines = cp.stdout.splitlines()
    assert len(lines) == 77 and all(line.endswith(" -1 14") for line in lines)  # EFAULT


@pytest.mark.parametrize("mode", MODES)
def test_umask_set_by_the_program_is_followed(tmp_path, mode):
    prog = ("import os, sys\n"
            "w = sys.argv[1]\n"
            "os.umask(0o022); open(w + '/a', 'w').write('a')\n"
            "os.umask(0o077); open(w + '/b', 'w').write('b')\n"
            "os.umask(0o027); os.close(os.open(w + '/c', os.O_CREAT | os.O_WRONLY, 0o666))\n")
    same_as_plain(tmp_path, mode, ["python3", "-c", prog, "{w}"])
    work = tmp_path / f"w-{mode}"
    assert {n: (work / n).stat().st_mode & 0o777 for n in "abc"} == {"a": 0o644, "b": 0o600, "c": 0o640}


def test_messages_never_reach_the_programs_files(tmp_path):
    # The program closes stderr, opens its result file as descriptor 2, and
    # replaces the log directory with a file: sluice cannot write its log at
    # the end and must not say so into the result.
    work = tmp_path / "w"
    work.mkdir()
    logs = tmp_path / "logs"
    prog = ("import os, shutil, sys\n"
            "os.close(2)\n"
            "fd = os.open(sys.argv[1] + '/result', os.O_CREAT | os.O_WRONLY, 0o644)\n"
            "assert fd == 2\n"
            "os.write(fd, b'data only')\n"
            "shutil.rmtree(sys.argv[2]); open(sys.argv[2], 'w').close()\n")
    sluice("run", "--log-dir", str(logs), "--path", str(work), "--", "python3", "-c", prog, str(work), str(logs))
    assert (work / "result").read_bytes() == b"data only"
    # The same program with stderr left alone hears about it.
    logs.unlink()
    cp = sluice("run", "--log-dir", str(logs), "--path", str(work), "--", "python3", "-c",
                prog.replace("os.close(2)", "os.close(os.dup(2))").replace("assert fd == 2", "pass"),
                str(work), str(logs))
    assert "could not write the log" in cp.stderr


def test_quiet_means_no_message_at_all(tmp_path):
    # A bad setting is reported on stderr, unless -q.
    work = tmp_path / "w"
    work.mkdir()
    argv = ["--mode", "buffer", "--path", str(work), "--log-dir", str(tmp_path / "logs"), "--",
            "sh", "-c", f"echo x > {work}/f"]
    loud = sluice("run", *argv, env={"SLUICE_READAHEAD": "lots"})
    assert "SLUICE_READAHEAD" in loud.stderr
    quiet = sluice("run", "-q", *argv, env={"SLUICE_READAHEAD": "lots"})
    assert quiet.stderr == "" and quiet.stdout == ""


def symbol_ops(base: Path) -> list[str]:
    from test_symbols import CASES
    ops: list[str] = []
    for name, (case_ops, _) in CASES.items():
        ops.extend(op.replace("{f}", str(base / f"case_{name}")) for op in case_ops)
    return ops


def tree_meta(root: Path) -> dict[str, tuple]:
    """Every name under root: kind, size, mode bits, bytes, extended
    attributes, and mtime where the program set it (seconds == 1e9)."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        kind = "link" if p.is_symlink() else "dir" if p.is_dir() else "file"
        data = (p.read_bytes() if kind == "file" else os.readlink(p).replace(str(root), "{w}") if kind == "link"
                else None)
        xattrs = sorted(os.listxattr(p, follow_symlinks=False)) if kind != "link" else []
        set_time = st.st_mtime_ns if st.st_mtime_ns // 10**9 == 10**9 else None
        size = st.st_size if kind != "link" else None   # (a link's size is its target's length)
        out[str(p.relative_to(root))] = (kind, size, st.st_mode & 0o7777, data, xattrs, set_time)
    return out


@pytest.mark.parametrize("mode", MODES)
def test_every_wrapped_symbol_behaves_as_plain(tmp_path, mode):
    """The matrix: every case of test_symbols (each wrapped symbol called by
    name) run plain and under the mode: the same return values and errno,
    call by call, and the same files, modes, sizes, bytes, xattrs and set
    times."""
    runs = {}
    for label in ("plain", mode):
        work = tmp_path / f"w-{label}"
        work.mkdir()
        # (stage mode: files publish at the end, so that no drainer opens a
        # file while the program does and takes the number it would get)
        cp = run_under(None if label == "plain" else mode, tmp_path, work, [bin_path("sluice-io"),
                                                                         *symbol_ops(work)],
                       stage_delay_ms=600000)
        assert cp.returncode == 0, cp.stderr
        lines = [line.replace(str(work), "{w}") for line in cp.stdout.splitlines()]
        runs[label] = (lines, tree_meta(work))
    (plain_lines, plain_tree), (lines, got_tree) = runs["plain"], runs[mode]
    diffs = [f"call {i}: plain {a}, {mode} {b}" for i, (a, b) in enumerate(zip(plain_lines, lines)) if a != b]
    assert len(lines) == len(plain_lines) and diffs == []
    tree_diffs = [(n, plain_tree.get(n), got_tree.get(n)) for n in sorted(set(plain_tree) | set(got_tree))
                  if plain_tree.get(n) != got_tree.get(n)]
    assert tree_diffs == []


@pytest.mark.parametrize("mode", MODES)
def test_kernel_moves_or_changes_bytes_after_small_writes(tmp_path, mode):
    # fallocate (punch hole, preallocate), copy_file_range, sendfile,
    # splice, fchmod and utime right after writes a mode may hold.
    prog = str(Path(__file__).resolve().parents[1] / "progs" / "kernelbytes.py")
    cp = same_as_plain(tmp_path, mode, [sys.executable, prog, "{w}"])
    assert "punched 32768 b'AAAAAAAA' b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00'" in cp.stdout
    assert "copy_file_range 32768 position 32768" in cp.stdout


def copy_tree_setup(work: Path) -> None:
    src = work / "src"
    (src / "sub").mkdir(parents=True)
    for i, name in enumerate(["a", "b", "sub/c", "sub/d"]):
        p = src / name
        p.write_bytes(bytes([i]) * (1000 * (i + 1)))
        p.chmod(0o640 + i)
        os.utime(p, ns=(1_600_000_000_000_000_000 + i, 1_600_000_000_000_000_000 + i))
    # the directories' times too: `tar c` records them, and two runs a
    # second apart would otherwise write different archives
    for d in (src / "sub", src):
        os.utime(d, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))


@pytest.mark.parametrize("mode", MODES)
def test_shell_workflow_keeps_bytes_modes_and_times(tmp_path, mode):
    # cp -p (copy_file_range, fchmod, utimensat), tar c/x, mv, rm -r, find:
    # the resulting tree, with modes and modification times, is plain's.
    script = ("set -e; cd {w}; cp -rp src copy; tar cf t.tar src; mkdir x; tar xf t.tar -C x; "
              "mv copy/sub moved; rm -r x/src/sub; find . | sort; "
              "stat -c '%n %s %a %Y' copy/a copy/b moved/c moved/d x/src/a > stats")
    same_as_plain(tmp_path, mode, ["sh", "-c", script], setup=copy_tree_setup)
    work = tmp_path / f"w-{mode}"
    assert (work / "stats").read_text().split("\n")[0] == "copy/a 1000 640 1600000000"


@pytest.mark.parametrize("mode", MODES)
def test_shell_redirections_of_external_commands_keep_their_output(tmp_path, mode):
    # `cmd > file` with cmd an external program: the shell's child opens the
    # file, then execs cmd, which writes through the inherited descriptor
    # (stage mode published the empty file at the exec and dropped cat's
    # bytes); a group whose builtin writes with stdout's buffer before a
    # forked command writes too (buffer mode put the position back); a
    # subshell whose last command is exec'd in place; pipes; a numbered
    # descriptor; a nested shell.
    script = ("set -e; cd {w}; echo abc > log.txt; seq 1 3000 >> log.txt; "
              "cat log.txt > c1.txt; sort -r log.txt > s1.txt; tac log.txt > t1.txt; "
              "{ echo a; cat log.txt; echo b; } > grp.txt; { echo a; /bin/echo x; } > g1.txt; "
              "( cat log.txt; tac log.txt ) > sub.txt; cat log.txt | sort -n > pipe.txt; "
              "exec 5> fd5.txt; cat log.txt >&5; echo five >&5; exec 5>&-; "
              "bash -c 'cat log.txt; echo nested' > nested.txt; echo tail >> c1.txt; "
              "wc -c c1.txt s1.txt t1.txt grp.txt g1.txt sub.txt pipe.txt fd5.txt nested.txt")
    cp = same_as_plain(tmp_path, mode, ["bash", "-c", script])
    work = tmp_path / f"w-{mode}"
    assert (work / "g1.txt").read_text() == "a\nx\n"
    assert (work / "c1.txt").read_text() == (work / "log.txt").read_text() + "tail\n"
    assert " 0 " not in cp.stdout


@pytest.mark.parametrize("mode", MODES)
def test_a_descriptor_survives_a_failed_exec_and_an_exec_keeps_what_it_inherits(tmp_path, mode):
    # A failed exec returns to the program with its files as they were (a
    # staged file moved to the file system at the exec keeps its position
    # and its close-on-exec flag, and a second description of it, for
    # reading, names the same file); a forked child's exec'd shell writes
    # through an inherited dup of it.
    prog = ("import os, sys\n"
            "w = sys.argv[1]\n"
            "fd = os.open(w + '/kept', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)\n"
            "rd = os.open(w + '/kept', os.O_RDONLY)\n"
            "os.write(fd, b'before\\n')\n"
            "try:\n"
            "    os.execv(w + '/no-such-program', ['no-such-program'])\n"
            "except OSError as e:\n"
            "    print('exec failed', e.errno)\n"
            "os.write(fd, b'after\\n')\n"
            "print('read', os.read(rd, 100))\n"
            "print('close-on-exec', not os.get_inheritable(fd))\n"
            "os.dup2(fd, 7)\n"
            "os.write(7, b'dup\\n')\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.execv('/bin/sh', ['sh', '-c', 'echo child >&7'])\n"
            "os.waitpid(pid, 0)\n"
            "os.write(fd, b'end\\n'); os.close(fd); os.close(7)\n"
            "print(repr(open(w + '/kept').read()), oct(os.stat(w + '/kept').st_mode & 0o777))\n")
    cp = same_as_plain(tmp_path, mode, [sys.executable, "-c", prog, "{w}"])
    assert cp.stdout.split("\n")[:4] == ["exec failed 2", "read b'before\\nafter\\n'", "close-on-exec True",
                                         "'before\\nafter\\ndup\\nchild\\nend\\n' 0o640"]


@pytest.mark.parametrize("mode", MODES)
def test_streams_and_descriptors_share_one_view(tmp_path, mode):
    # fopen of a file just written with open(), an fopen("w") rewrite of it,
    # fopen("x") of an existing name: what the C library's fopen does
    # (stage mode: a stream opens through the tier like any descriptor).
    prog = ("import ctypes, os, sys, time\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.fopen.restype = ctypes.c_void_p\n"
            "libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]\n"
            "libc.fclose.argtypes = [ctypes.c_void_p]\n"
            "libc.fwrite.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]\n"
            "libc.fread.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]\n"
            "p = (sys.argv[1] + '/f').encode()\n"
            "with open(p, 'wb') as f: f.write(b'first version')\n"
            "fp = libc.fopen(p, b'r'); buf = ctypes.create_string_buffer(64)\n"
            "print('read', libc.fread(buf, 1, 64, fp), buf.value); libc.fclose(fp)\n"
            "fp = libc.fopen(p, b'w'); libc.fwrite(b'second', 1, 6, fp); libc.fclose(fp)\n"
            "print('x', libc.fopen(p, b'wx'), ctypes.get_errno())\n"
            "time.sleep(0.2)\n"
            "print('final', open(p, 'rb').read())\n")
    cp = same_as_plain(tmp_path, mode, [sys.executable, "-c", prog, "{w}"])
    assert "final b'second'" in cp.stdout and "x None 17" in cp.stdout


@pytest.mark.parametrize("mode", MODES)
def test_a_name_published_then_made_again_is_one_file(tmp_path, mode):
    # In a directory the program made: write, let it publish, write again
    # (staged again), then unlink one name and rename another: the
    # published copies go too.
    prog = ("import os, sys, time\n"
            "d = sys.argv[1] + '/sub'; os.mkdir(d)\n"
            "for n in ('a', 'b'):\n"
            "    open(f'{d}/{n}', 'wb').write(b'old')\n"
            "time.sleep(0.3)\n"
            "for n in ('a', 'b'):\n"
            "    open(f'{d}/{n}', 'wb').write(b'new')\n"
            "os.unlink(d + '/a'); os.rename(d + '/b', d + '/c')\n"
            "time.sleep(0.3)\n"
            "print(sorted(os.listdir(d)), open(d + '/c', 'rb').read())\n")
    cp = same_as_plain(tmp_path, mode, [sys.executable, "-c", prog, "{w}"])
    assert cp.stdout.strip() == "['c'] b'new'"


def test_fs_side_counts_what_sluice_itself_asks(tmp_path):
    """The fs side is what the file system served, sluice's own calls
    included: buffer mode asks for a Lustre layout once per device without
    one (not once per file); stage mode's publish of a new file costs what
    the program's own create, write and close would."""
    from conftest import file_entry, report_json
    work = tmp_path / "w"
    work.mkdir()
    ops = [op for i in range(10) for op in (f"creat:{work}/f{i}", "write:100", "close")]
    logs = tmp_path / "logs-buffer"
    sluice(*mode_args("buffer", tmp_path, work), "--", bin_path("sluice-io"), *ops)
    r = report_json(logs)
    assert r["app"]["POSIX_XATTR_READS"] == 0 and r["fs"]["POSIX_XATTR_READS"] == 1
    assert r["fs"]["POSIX_STATS"] == 0 and r["fs"]["POSIX_OPENS"] == 10   # files keyed by their cached inode
    logs = tmp_path / "logs-stage"
    sluice(*mode_args("stage", tmp_path, work), "--", bin_path("sluice-io"), f"creat:{work}/s", "write:100", "close")
    e = file_entry(report_json(logs), work / "s")
    # a new small file is published as the program would have made it: the
    # file created with its mode, one write, closed; no rename, fsync,
    # chmod or times (the program set none)
    fs = e["fs"]
    assert (fs["POSIX_OPENS"], fs["POSIX_WRITES"], fs["POSIX_RENAMES"], fs["POSIX_FSYNCS"]) == (1, 1, 0, 0)
    assert (e["app"]["POSIX_CHMODS"], fs["POSIX_CHMODS"], fs["POSIX_UTIMES"]) == (0, 0, 0)


@pytest.mark.parametrize("mode", MODES)
def test_creating_on_a_read_only_file_system_fails_at_once(tmp_path, read_only_fs, mode):
    # EROFS at open, as plain: never a staged file that cannot arrive.
    prog = ("import os, sys\n"
            "try:\n"
            "    os.open(sys.argv[1] + '/new', os.O_CREAT | os.O_WRONLY, 0o644); print('created')\n"
            "except OSError as e:\n"
            "    print('error', e.errno)\n")
    args = mode_args(mode, tmp_path, read_only_fs)
    cp = sluice(*args, "--", sys.executable, "-c", prog, str(read_only_fs))
    assert cp.stdout.strip() == "error 30" and not (read_only_fs / "new").exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_thousand_open_files_under_ulimit_1024(tmp_path, mode):
    # One descriptor per open file, as plain: no EMFILE a plain run would not get.
    prog = ("import os, resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))\n"
            "fds = [os.open(f'{sys.argv[1]}/f{i}', os.O_CREAT | os.O_WRONLY, 0o644) for i in range(1000)]\n"
            "for i, fd in enumerate(fds): os.write(fd, str(i).encode())\n"
            "for fd in fds: os.close(fd)\n"
            "print(len(fds), sum(1 for n in os.listdir(sys.argv[1])))\n")
    cp = same_as_plain(tmp_path, mode, [sys.executable, "-c", prog, "{w}"])
    assert cp.stdout.strip() == "1000 1000"


@pytest.mark.parametrize("mode", MODES)
def test_a_forked_child_writes_the_file_its_parent_laid_out(tmp_path, mode):
    # fio's pattern: the parent creates and fills a file, closes it, forks;
    # the child opens it for update and writes; nothing the child wrote is
    # lost to a stale copy of the parent's.
    prog = ("import os, sys\n"
            "p = sys.argv[1] + '/job'\n"
            "with open(p, 'wb') as f: f.write(bytes(8192))\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    fd = os.open(p, os.O_RDWR); os.pwrite(fd, b'child' * 100, 1000); os.close(fd); os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "data = open(p, 'rb').read(); print(len(data), data[1000:1010], data.count(b'child'))\n")
    cp = same_as_plain(tmp_path, mode, [sys.executable, "-c", prog, "{w}"])
    assert cp.stdout.strip() == "8192 b'childchild' 100"


FORK_KEEPS_DESCRIPTORS = """
import os, sys
pid = os.fork()
if pid == 0:
    bad = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            bad.append(fd)
    os._exit(len(bad))
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_forked_child_keeps_its_standard_descriptors(mode, tmp_path):
    """Every tier hears of every fork; one that never set itself up closed
    descriptor 0 in each child (its lock's descriptor number was 0), so a
    child lost its stdin and its next open got 0."""
    cp = sluice("run", "--mode", mode, "--log-dir", str(tmp_path / "logs"), "--", sys.executable, "-c",
                FORK_KEEPS_DESCRIPTORS, stdin=subprocess.DEVNULL)
    assert cp.stdout.splitlines()[0] == "0"
