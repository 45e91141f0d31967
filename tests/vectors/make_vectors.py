#!/usr/bin/env python3
"""Regenerate golden logs of this folder (only when the format changes).

    python3 tests/vectors/make_vectors.py [NATIVE_DIR] [NAME...]

With NAMEs, only those vectors are written: the format 1.0 vectors
(posix_stdio, fork_parent, partial) stay as format 1.0 wrote them, so that
readers keep reading old logs; columns_buffer is a 3.0 log.

NATIVE_DIR holds libsluice.so (default: $SLUICE_NATIVE_DIR, else
build/dev/native). Each vector is the log of one small Python program run
under LD_PRELOAD; tests/python/test_logfmt.py states what each must hold.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

# POSIX and STDIO records; the STDIO file's name has a tab, a newline,
# quotes, a backslash, invalid UTF-8 (ff fe) and a valid é.
POSIX_STDIO = r'''
import ctypes, os, sys
d = sys.argv[1].encode()
fd = os.open(d + b"/data.bin", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
for _ in range(10):
    os.write(fd, b"x" * 100)
os.close(fd)
fd = os.open(d + b"/data.bin", os.O_RDONLY)
while os.read(fd, 300):
    pass
os.close(fd)
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fwrite.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
fp = libc.fopen(d + b"/we\tird \"q\" \\ \xff\xfe \xc3\xa9\n.txt", b"w")
for _ in range(3):
    libc.fwrite(b"hello\n", 1, 6, fp)
libc.fclose(fp)
'''

# A parent that writes, forks a child that writes another file, and waits.
FORK = r'''
import os, sys
d = sys.argv[1]
with open(d + "/parent.dat", "wb", buffering=0) as f:
    f.write(b"p" * 4096)
pid = os.fork()
if pid == 0:
    with open(d + "/child.dat", "wb", buffering=0) as f:
        f.write(b"c" * 512)
        f.write(b"c" * 512)
    os._exit(0)
os.waitpid(pid, 0)
with open(d + "/parent.dat", "rb", buffering=0) as f:
    f.read(4096)
'''

# Four files with SLUICE_MAX_RECORDS=2: the last two go to "<other files>".
PARTIAL = r'''
import os, sys
d = sys.argv[1]
for i in range(4):
    fd = os.open(f"{d}/f{i}", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, b"y" * (i + 1) * 10)
    os.close(fd)
'''

# Buffer mode, stored plain (SLUICE_LOG_COMPRESS=0) so that the column
# layout's bytes are in the file as they are: 200 writes of 10 bytes reach
# the file system as one, and 3 files make a POSIX region of 3 records.
COLUMNS_BUFFER = r'''
import os, sys
d = sys.argv[1]
fd = os.open(d + "/small.dat", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
for _ in range(200):
    os.write(fd, b"z" * 10)
os.close(fd)
for name in ("a.dat", "b.dat"):
    with open(f"{d}/{name}", "wb", buffering=0) as f:
        f.write(b"w" * 4096)
'''


def run(native: Path, tmp: Path, code: str, extra: dict[str, str]) -> list[Path]:
    tmp = Path(tempfile.mkdtemp(dir=tmp))
    work, logs = tmp / "work", tmp / "logs"
    work.mkdir()
    env = dict(os.environ, LD_PRELOAD=str(native / "libsluice.so"), SLUICE_LOG_DIR=str(logs),
               SLUICE_PATHS=str(work), SLUICE_JOB_ID="vectors", **extra)
    subprocess.run([sys.executable, "-c", code, str(work)], env=env, check=True)
    return sorted(logs.glob("*.sluice"))


def main() -> None:
    from sluice.logfmt import read_log

    args = sys.argv[1:]
    native = Path(args.pop(0) if args and "/" in args[0] else os.environ.get("SLUICE_NATIVE_DIR", REPO / "build/dev/native"))
    want = set(args) or {"posix_stdio", "fork_parent", "partial", "columns_buffer"}
    with tempfile.TemporaryDirectory(prefix="sluice-vec-") as t:
        tmp = Path(t)
        if "posix_stdio" in want:
            (log,) = run(native, tmp, POSIX_STDIO, {})
            shutil.copy(log, HERE / "posix_stdio.sluice")
        if "fork_parent" in want:
            # Two logs: the parent's is the one whose pid is the other's ppid.
            logs = [read_log(p) for p in run(native, tmp, FORK, {})]
            (parent,) = [a for a in logs if any(b.ppid == a.pid for b in logs)]
            shutil.copy(parent.path, HERE / "fork_parent.sluice")
        if "partial" in want:
            (log,) = run(native, tmp, PARTIAL, {"SLUICE_MAX_RECORDS": "2"})
            shutil.copy(log, HERE / "partial.sluice")
        if "columns_buffer" in want:
            (log,) = run(native, tmp, COLUMNS_BUFFER, {"SLUICE_MODE": "buffer", "SLUICE_LOG_COMPRESS": "0"})
            shutil.copy(log, HERE / "columns_buffer.sluice")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "python"))
    main()
