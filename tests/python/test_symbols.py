"""Every wrapped symbol, called by its exact name, yields exact counters.

One `sluice-io` process runs every case, each on its own file, under
`sluice run`; one report then holds every file's counters. Each case lists
all the counters it must move (times excepted): anything missing, extra or
off by one fails. The same cases run on tmpfs, the local disk and the
MooseFS testbed, and app and fs sides must agree (profile mode).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import REPO, bin_path, file_entry, nonzero, report_json, sluice


def P(**kw: int) -> dict[str, int]:
    return {f"POSIX_{k}": v for k, v in kw.items()}


def S(**kw: int) -> dict[str, int]:
    return {f"STDIO_{k}": v for k, v in kw.items()}


# A 300-byte file written by one write, then reopened read-only: the base of the read cases.
W300 = ["creat:{f}", "write:300", "close", "open:{f}:r"]
W300_C = P(OPENS=2, WRITES=1, BYTES_WRITTEN=300, MAX_BYTE_WRITTEN=299, SIZE_WRITE_100_1K=1, RW_SWITCHES=1)

CASES: dict[str, tuple[list[str], dict]] = {}


def case(name: str, ops: list[str], expected: dict, extra: dict[str, dict] | None = None) -> None:
    CASES[name] = (ops, {"": expected, **(extra or {})})


for sym in ("open", "open64", "openat", "openat64"):
    case(sym, [f"{sym}:{{f}}:rw,creat", "close"], P(OPENS=1))
for sym in ("creat", "creat64"):
    case(sym, [f"{sym}:{{f}}", "close"], P(OPENS=1))
for sym in ("__open_2", "__open64_2", "__openat_2", "__openat64_2"):
    case(sym, ["creat:{f}", "close", f"{sym}:{{f}}:r", "close"], P(OPENS=2))
case("write", ["creat:{f}", "write:100", "write:200", "close"],
     P(OPENS=1, WRITES=2, BYTES_WRITTEN=300, MAX_BYTE_WRITTEN=299, CONSEC_WRITES=1, SEQ_WRITES=1,
       SIZE_WRITE_0_100=1, SIZE_WRITE_100_1K=1))
for sym in ("pwrite", "pwrite64"):
    case(sym, ["creat:{f}", f"{sym}:100:1000", f"{sym}:100:0", "close"],
         P(OPENS=1, WRITES=2, BYTES_WRITTEN=200, MAX_BYTE_WRITTEN=1099, SIZE_WRITE_0_100=2))
case("writev", ["creat:{f}", "writev:300:3", "close"],
     P(OPENS=1, WRITES=1, BYTES_WRITTEN=300, MAX_BYTE_WRITTEN=299, SIZE_WRITE_100_1K=1))
for sym in ("pwritev", "pwritev64", "pwritev2", "pwritev64v2"):
    case(sym, ["creat:{f}", f"{sym}:300:3:50", "close"],
         P(OPENS=1, WRITES=1, BYTES_WRITTEN=300, MAX_BYTE_WRITTEN=349, SIZE_WRITE_100_1K=1))
for sym in ("read", "__read_chk"):
    case(sym, W300 + [f"{sym}:100", f"{sym}:100", f"{sym}:200", "close"],
         {**W300_C, **P(READS=3, BYTES_READ=300, MAX_BYTE_READ=299, CONSEC_READS=2, SEQ_READS=2,
                        SIZE_READ_0_100=3)})
for sym in ("pread", "pread64", "__pread_chk", "__pread64_chk"):
    case(sym, W300 + [f"{sym}:100:200", f"{sym}:100:0", "close"],
         {**W300_C, **P(READS=2, BYTES_READ=200, MAX_BYTE_READ=299, SIZE_READ_0_100=2)})
case("readv", W300 + ["readv:300:3", "close"],
     {**W300_C, **P(READS=1, BYTES_READ=300, MAX_BYTE_READ=299, SIZE_READ_100_1K=1)})
for sym in ("preadv", "preadv64", "preadv2", "preadv64v2"):
    case(sym, W300 + [f"{sym}:200:2:100", "close"],
         {**W300_C, **P(READS=1, BYTES_READ=200, MAX_BYTE_READ=299, SIZE_READ_100_1K=1)})
for sym in ("lseek", "lseek64"):
    case(sym, ["creat:{f}", f"{sym}:10:set", f"{sym}:0:end", "close"], P(OPENS=1, SEEKS=2))
case("fsync", ["creat:{f}", "fsync", "close"], P(OPENS=1, FSYNCS=1))
case("fdatasync", ["creat:{f}", "fdatasync", "close"], P(OPENS=1, FDSYNCS=1))
for sym in ("ftruncate", "ftruncate64"):
    case(sym, ["creat:{f}", f"{sym}:1000", "close"], P(OPENS=1, TRUNCATES=1))
for sym in ("fstat", "fstat64", "__fxstat", "__fxstat64", "fstatat_empty", "statx_empty"):
    case(sym, ["creat:{f}", sym, "close"], P(OPENS=1, STATS=1))
for sym in ("stat", "stat64", "lstat", "lstat64", "fstatat", "fstatat64", "statx", "__xstat", "__xstat64",
            "__lxstat", "__lxstat64", "__fxstatat", "__fxstatat64", "access", "faccessat", "euidaccess", "eaccess"):
    case(sym, ["creat:{f}", "close", f"{sym}:{{f}}"], P(OPENS=1, STATS=1))
for sym, arg in (("dup", ""), ("dup2", ":100"), ("dup3", ":101"), ("fcntl", ":200"), ("fcntl64", ":300")):
    case(sym, ["creat:{f}", f"{sym}{arg}", "write:10", "swap", "write:10", "close", "swap", "close"],
         P(OPENS=1, DUPS=1, WRITES=2, BYTES_WRITTEN=20, MAX_BYTE_WRITTEN=19, CONSEC_WRITES=1, SEQ_WRITES=1,
           SIZE_WRITE_0_100=2))
case("fcntl_setfl_append", ["creat:{f}", "write:100", "close", "open:{f}:w", "fcntl_setfl_append", "write:10", "close"],
     P(OPENS=2, WRITES=2, BYTES_WRITTEN=110, MAX_BYTE_WRITTEN=109, CONSEC_WRITES=1, SEQ_WRITES=1,
       SIZE_WRITE_0_100=2))
case("open_append", ["creat:{f}", "write:100", "close", "open:{f}:w,append", "write:10", "close"],
     P(OPENS=2, WRITES=2, BYTES_WRITTEN=110, MAX_BYTE_WRITTEN=109, CONSEC_WRITES=1, SEQ_WRITES=1,
       SIZE_WRITE_0_100=2))
for sym in ("unlink", "unlinkat"):
    case(sym, ["creat:{f}", "close", f"{sym}:{{f}}"], P(OPENS=1, UNLINKS=1))
for sym in ("mmap", "mmap64"):
    case(sym, ["open:{f}:rw,creat", "write:100", f"{sym}:100", "close"],
         P(OPENS=1, WRITES=1, BYTES_WRITTEN=100, MAX_BYTE_WRITTEN=99, SIZE_WRITE_0_100=1, MMAPS=1))
case("flock", ["creat:{f}", "flock", "fcntl_setlk", "close"], P(OPENS=1, LOCKS=3))
# An AIO request is counted when submitted, and its transfer at aio_return
# (as Darshan does): a write or read of the bytes aio_return gave.
for sym in ("aio_write", "aio_write64"):
    case(sym, ["creat:{f}", f"{sym}:100", "close"],
         P(OPENS=1, AIO_WRITES=1, WRITES=1, BYTES_WRITTEN=100, MAX_BYTE_WRITTEN=99, SIZE_WRITE_0_100=1))
for sym in ("aio_read", "aio_read64"):
    case(sym, W300 + [f"{sym}:100", "close"],
         {**W300_C, **P(AIO_READS=1, READS=1, BYTES_READ=100, MAX_BYTE_READ=99, SIZE_READ_0_100=1)})
for sym in ("aio_fsync", "aio_fsync64"):
    case(sym, ["creat:{f}", f"{sym}:0", "close"], P(OPENS=1))
for sym in ("lio_listio", "lio_listio64"):
    case(sym, ["creat:{f}", f"{sym}:100", "close"],
         P(OPENS=1, AIO_WRITES=2, WRITES=2, BYTES_WRITTEN=200, MAX_BYTE_WRITTEN=199, SIZE_WRITE_0_100=2,
           CONSEC_WRITES=1, SEQ_WRITES=1))
for sym in ("lockf", "lockf64"):
    case(sym, ["creat:{f}", sym, "close"], P(OPENS=1, LOCKS=2))   # F_TEST is not counted
for sym in ("truncate", "truncate64"):
    case(sym, ["creat:{f}", "close", f"{sym}:{{f}}:10"], P(OPENS=1, TRUNCATES=1))
for sym in ("rename", "renameat", "renameat2"):
    case(sym, ["creat:{f}", "close", f"{sym}:{{f}}:{{f}}.new"], P(OPENS=1, RENAMES=1), {".new": P(RENAME_TARGETS=1)})
for sym in ("mkdir", "mkdirat"):
    case(sym, [f"{sym}:{{f}}", "rmdir:{f}"], P(MKDIRS=1, RMDIRS=1))
case("unlinkat_dir", ["mkdir:{f}", "unlinkat_dir:{f}"], P(MKDIRS=1, RMDIRS=1))
case("error_open", ["open:{f}:r"], P(ERRORS=1))
case("error_read", ["creat:{f}", "read:10", "close"], P(OPENS=1, ERRORS=1))

# Descriptors closed or handed out behind the public close()/open(): the
# file's own counters are exact around them.
W10 = P(OPENS=1, WRITES=1, BYTES_WRITTEN=10, MAX_BYTE_WRITTEN=9, SIZE_WRITE_0_100=1)
for sym in ("pipe", "pipe2", "socket", "socketpair", "accept", "accept4", "eventfd", "epoll_create", "epoll_create1",
            "signalfd", "timerfd_create", "memfd_create", "inotify_init", "inotify_init1", "tmpfile", "tmpfile64",
            "popen", "syscall", "mkstemp", "mkstemp64", "mkostemp", "mkostemp64", "mkstemps", "mkstemps64",
            "mkostemps", "mkostemps64"):
    case(sym, ["creat:{f}", "write:10", "close", f"{sym}:{{f}}"], W10)
for sym in ("close_range", "closefrom", "syscall_close"):
    case(sym, ["creat:{f}", "write:10", sym, "pipe"], W10)
case("umask", ["umask:077", "creat:{f}", "write:10", "close", "umask:022"], W10)
case("opendir", ["mkdir:{f}", "opendir:{f}", "closedir"], P(MKDIRS=1, OPENDIRS=1))
case("fdopendir", ["mkdir:{f}", "open:{f}:r", "fdopendir", "closedir"], P(MKDIRS=1, OPENS=1, OPENDIRS=1))
case("readdir", ["mkdir:{f}", "opendir:{f}", "readdir", "readdir64", "rewinddir", "readdir", "closedir"],
     P(MKDIRS=1, OPENDIRS=1))
for sym in ("scandir", "scandir64"):
    case(sym, ["mkdir:{f}", f"{sym}:{{f}}"], P(MKDIRS=1, OPENDIRS=1))

# Metadata by path and by descriptor; bytes the kernel moves.
case("remove", ["creat:{f}", "close", "remove:{f}"], P(OPENS=1, UNLINKS=1))
case("remove_dir", ["mkdir:{f}", "remove:{f}"], P(MKDIRS=1, RMDIRS=1))
for sym in ("link", "linkat", "symlink", "symlinkat"):
    case(sym, ["creat:{f}", "close", f"{sym}:{{f}}"], P(OPENS=1), {".2": P(LINKS=1)})
for sym, counter in (("chmod", "CHMODS"), ("fchmodat", "CHMODS"), ("chown", "CHOWNS"), ("lchown", "CHOWNS"),
                     ("fchownat", "CHOWNS"), ("utime", "UTIMES"), ("utimes", "UTIMES"), ("lutimes", "UTIMES"),
                     ("utimensat", "UTIMES"), ("realpath", "STATS")):
    case(sym, ["creat:{f}", "close", f"{sym}:{{f}}"], P(OPENS=1, **{counter: 1}))
for setter, getter, lister, remover in (("setxattr", "getxattr", "listxattr", "removexattr"),
                                        ("lsetxattr", "lgetxattr", "llistxattr", "lremovexattr")):
    case(setter, ["creat:{f}", "close", f"{setter}:{{f}}", f"{getter}:{{f}}", f"{lister}:{{f}}",
                  f"{remover}:{{f}}"], P(OPENS=1, XATTR_WRITES=2, XATTR_READS=2))
case("fsetxattr", ["creat:{f}", "fsetxattr", "fgetxattr", "flistxattr", "fremovexattr", "close"],
     P(OPENS=1, XATTR_WRITES=2, XATTR_READS=2))
for sym, counter in (("fchmod", "CHMODS"), ("fchown", "CHOWNS"), ("futimens", "UTIMES"), ("futimes", "UTIMES"),
                     ("fallocate", "FALLOCATES"), ("fallocate64", "FALLOCATES"),
                     ("posix_fallocate", "FALLOCATES"), ("posix_fallocate64", "FALLOCATES")):
    case(sym, ["creat:{f}", sym, "close"], P(OPENS=1, **{counter: 1}))
for sym in ("copy_file_range", "sendfile", "sendfile64", "splice"):
    case(sym, W300 + [f"{sym}:{{f}}:300", "close"],
         {**W300_C, **P(OPENS=2, READS=1, BYTES_READ=300, MAX_BYTE_READ=299, SIZE_READ_100_1K=1, KERNEL_COPIES=1)},
         {".2": P(OPENS=1, WRITES=1, BYTES_WRITTEN=300, MAX_BYTE_WRITTEN=299, SIZE_WRITE_100_1K=1,
                  KERNEL_COPIES=1)})

# stdio
for sym in ("fopen", "fopen64"):
    case(sym, [f"{sym}:{{f}}:w", "fclose"], S(OPENS=1))
case("fdopen", ["open:{f}:w,creat", "fdopen:w", "fwrite:10", "fclose"],
     {**P(OPENS=1), **S(OPENS=1, WRITES=1, BYTES_WRITTEN=10, MAX_BYTE_WRITTEN=9)})
for sym in ("freopen", "freopen64"):
    case(sym, ["fopen:{f}:w", f"{sym}:{{f}}.2:w", "fputs:abc", "fclose"], S(OPENS=1),
         {".2": S(OPENS=1, WRITES=1, BYTES_WRITTEN=3, MAX_BYTE_WRITTEN=2)})
for sym in ("fwrite", "fwrite_unlocked"):
    case(sym, ["fopen:{f}:w", f"{sym}:100", f"{sym}:50", "fclose"],
         S(OPENS=1, WRITES=2, BYTES_WRITTEN=150, MAX_BYTE_WRITTEN=149))
for sym in ("fputs", "fputs_unlocked"):
    case(sym, ["fopen:{f}:w", f"{sym}:hello", "fclose"], S(OPENS=1, WRITES=1, BYTES_WRITTEN=5, MAX_BYTE_WRITTEN=4))
for sym in ("fputc", "putc", "_IO_putc"):
    case(sym, ["fopen:{f}:w", sym, sym, "fclose"], S(OPENS=1, WRITES=2, BYTES_WRITTEN=2, MAX_BYTE_WRITTEN=1))
for sym in ("fprintf", "vfprintf", "__fprintf_chk", "__vfprintf_chk"):
    case(sym, ["fopen:{f}:w", f"{sym}:hello", "fclose"], S(OPENS=1, WRITES=1, BYTES_WRITTEN=6, MAX_BYTE_WRITTEN=5))
for sym in ("fread", "fread_unlocked", "__fread_chk", "__fread_unlocked_chk"):
    case(sym, ["fopen:{f}:w", "fwrite:300", "fclose", "fopen:{f}:r", f"{sym}:100", f"{sym}:500", "fclose"],
         S(OPENS=2, WRITES=1, BYTES_WRITTEN=300, MAX_BYTE_WRITTEN=299, READS=2, BYTES_READ=300, MAX_BYTE_READ=299))
for sym in ("fgets", "fgets_unlocked", "__fgets_chk", "__fgets_unlocked_chk"):
    case(sym, ["fopen:{f}:w", "fputs:ab", "fputs:c", "fclose", "fopen:{f}:r", f"{sym}:100", f"{sym}:100", "fclose"],
         S(OPENS=2, WRITES=2, BYTES_WRITTEN=3, MAX_BYTE_WRITTEN=2, READS=2, BYTES_READ=3, MAX_BYTE_READ=2))
for sym in ("fgetc", "getc", "_IO_getc"):
    case(sym, ["fopen:{f}:w", "fputs:ab", "fclose", "fopen:{f}:r", sym, sym, sym, "fclose"],
         S(OPENS=2, WRITES=1, BYTES_WRITTEN=2, MAX_BYTE_WRITTEN=1, READS=3, BYTES_READ=2, MAX_BYTE_READ=1))
for sym in ("fscanf", "vfscanf", "__isoc99_fscanf", "__isoc99_vfscanf"):
    case(sym, ["fopen:{f}:w", "fputs:123", "fclose", "fopen:{f}:r", sym, "fclose"],
         S(OPENS=2, WRITES=1, BYTES_WRITTEN=3, MAX_BYTE_WRITTEN=2, READS=1, BYTES_READ=3, MAX_BYTE_READ=2))
for sym in ("fseek", "fseeko", "fseeko64"):
    case(sym, ["fopen:{f}:w", f"{sym}:10:set", "fclose"], S(OPENS=1, SEEKS=1))
case("rewind", ["fopen:{f}:w", "rewind", "fclose"], S(OPENS=1, SEEKS=1))
for sym in ("ftell", "ftello", "ftello64"):
    case(sym, ["fopen:{f}:w", sym, "fclose"], S(OPENS=1))
case("fflush", ["fopen:{f}:w", "fwrite:10", "fflush", "fclose"],
     S(OPENS=1, WRITES=1, BYTES_WRITTEN=10, MAX_BYTE_WRITTEN=9, FLUSHES=1))

# Covered by test_programs.py (they end or replace the process), and the
# ways to start a child without fork() by test_buffer.py (spawn_writer.c:
# the bytes a child writes through the program's buffered descriptor).
PROCESS_SYMBOLS = {"execve", "execv", "execvp", "execvpe", "fexecve", "execl", "execlp", "execle", "_exit", "_Exit",
                   "posix_spawn", "posix_spawnp", "system"}
EXPECTED_ERRORS = {"error_open", "error_read"}
# Called by other cases: every aio_* case collects its request with aio_return.
# stdout's calls: test_profile_truth.py counts them exactly on a redirected
# stdout (this program's stdout carries its results).
COLLECTED_BY_OTHER_CASES = {"aio_return", "aio_return64", "printf", "vprintf", "__printf_chk", "__vprintf_chk",
                            "puts", "putchar"}


def wrapped_symbols() -> list[str]:
    text = (REPO / "src" / "sys" / "wrappers.def").read_text()
    return re.findall(r"^SLUICE_WRAP\([^,]+,\s*(\w+),", text, re.M)


def test_every_wrapped_symbol_has_a_case():
    ops_used = {op.split(":")[0] for ops, _ in CASES.values() for op in ops}
    missing = [s for s in wrapped_symbols()
               if s not in ops_used and s not in PROCESS_SYMBOLS and s not in COLLECTED_BY_OTHER_CASES]
    assert missing == []


def test_every_wrapped_symbol_is_exported(tmp_path):
    import subprocess
    from conftest import NATIVE

    out = subprocess.run(["nm", "-D", "--defined-only", str(NATIVE / "libsluice.so")],
                         capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    assert [s for s in wrapped_symbols() if s not in exported] == []


def run_cases(base: Path, logdir: Path) -> tuple[dict, list[dict]]:
    ops: list[str] = []
    for name, (case_ops, _) in CASES.items():
        f = str(base / f"case_{name}")
        ops.extend(op.replace("{f}", f) for op in case_ops)
    cp = sluice("run", "--log-dir", str(logdir), "--path", str(base), "--", bin_path("sluice-io"), *ops)
    results = [json.loads(line) for line in cp.stdout.splitlines()]
    return report_json(logdir), results


def without_stdio(counters: dict) -> dict:
    return {k: v for k, v in counters.items() if not k.startswith("STDIO_")}


_OPEN_SYMS = ("open", "open64", "openat", "openat64", "__open_2", "__open64_2", "__openat_2", "__openat64_2")


def open_flags_of(ops: list[str]) -> dict[str, dict[str, int]]:
    """The open-flag counters a case's own opens give its files ("" for
    {f}, ".2" for {f}.2): POSIX_OPENS_WRITE, _CREATE, _EXCL, _TRUNC,
    _APPEND from each open's flags as sluice-io passes them (creat: write,
    create, trunc; a stream's mode "w": the same, "a": write, create,
    append), so that the cases above state only the other counters."""
    out: dict[str, dict[str, int]] = {}
    for op in ops:
        sym, _, rest = op.partition(":")
        path, _, mode = rest.partition(":")
        if sym in ("copy_file_range", "sendfile", "sendfile64", "splice"):
            sym, path = "creat", "{f}.2"   # the copy's new file, made by open(O_CREAT|O_TRUNC|O_WRONLY)
        if not path.startswith("{f}"):
            continue
        suffix = path[3:]
        if sym in ("creat", "creat64"):
            module, flags = "POSIX", {"w", "creat", "trunc"}
        elif sym in _OPEN_SYMS:
            words = set(mode.split(",")) if mode else {"r"}
            module, flags = "POSIX", ({"w"} if words & {"w", "rw"} else set()) | words
        elif sym in ("fopen", "fopen64", "freopen", "freopen64"):
            module = "STDIO"
            flags = {"w": {"w", "creat", "trunc"}, "a": {"w", "creat", "append"}}.get(mode[:1], set())
            flags |= {"w"} if "+" in mode else set()
        else:
            continue
        if "w" not in flags:
            continue
        c = out.setdefault(suffix, {})
        for name, flag in (("WRITE", "w"), ("CREATE", "creat"), ("EXCL", "excl"), ("TRUNC", "trunc"),
                           ("APPEND", "append")):
            if flag in flags and (flag != "excl" or "creat" in flags):
                c[f"{module}_OPENS_{name}"] = c.get(f"{module}_OPENS_{name}", 0) + 1
    return out


def test_exact_counters_per_symbol(target, logdir):
    report, results = run_cases(target, logdir)
    assert len(results) == sum(len(o) for o, _ in CASES.values())
    # Every call succeeded except the deliberate errors (end of file, from
    # fgets and fgetc, is -1 with errno 0).
    failed = [r for r in results if r["ret"] < 0 and r["errno"] != 0]
    # A file system without fallocate (MooseFS) says EOPNOTSUPP: counted as an error.
    unsupported = {r["op"] for r in failed if r["op"] in ("fallocate", "fallocate64") and r["errno"] == 95}
    failed = [r for r in failed if r["op"] not in unsupported]
    assert len(failed) == 2 and {r["op"] for r in failed} == {"open", "read"}
    assert {r["errno"] for r in failed} == {2, 9}  # ENOENT, EBADF
    problems = []
    for name, (ops, expected) in CASES.items():
        if name in unsupported:
            expected = {"": P(OPENS=1, ERRORS=1)}
        flags = open_flags_of(ops)
        for suffix, want in expected.items():
            want = {**want, **flags.get(suffix, {})}
            entry = file_entry(report, target / f"case_{name}{suffix}")
            got = nonzero(entry["app"])
            if got != want:
                problems.append(f"{name}{suffix}: got {got}, want {want}")
            # (a stream's fs side is the C library's system calls, checked
            # against strace in test_profile_truth.py)
            if without_stdio(entry["app"]) != without_stdio(entry["fs"]):
                problems.append(f"{name}{suffix}: app and fs sides differ in profile mode")
    assert problems == []
    assert report["processes"] == 1


def test_unrecorded_paths_pass_through(workdir, logdir, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--", bin_path("sluice-io"),
           f"creat:{workdir}/in", "write:10", "close", f"creat:{other}/out", "write:10", "close")
    paths = {f["path"] for f in report_json(logdir)["files"]}
    assert paths == {f"{workdir}/in"}
    assert (other / "out").stat().st_size == 10
