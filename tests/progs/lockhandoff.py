"""One side of a lock handover between two processes: "lock, write, unlock;
another process locks and reads" (tests/python/test_buffer.py).

    lockhandoff.py writer FILE KIND RECORDS SIZE
    lockhandoff.py reader FILE KIND

KIND is the lock call: flock, fcntl (F_SETLKW), ofd (F_OFD_SETLKW) or lockf
(the C library's lockf, reached through the global symbol table as a C
program would). Each side waits for a line on stdin before its locked
part and says what it did on stdout, so the test orders the two.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import struct
import sys

LIBC = ctypes.CDLL(None, use_errno=True)


def fcntl_lock(fd: int, cmd: int, ltype: int) -> None:
    # struct flock on Linux x86-64: short, short, (pad), off_t, off_t, pid_t, (pad)
    fcntl.fcntl(fd, cmd, struct.pack("hhxxxxqqixxxx", ltype, os.SEEK_SET, 0, 0, 0))


def lock(fd: int, kind: str, exclusive: bool) -> None:
    if kind == "flock":
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    elif kind in ("fcntl", "ofd"):
        cmd = fcntl.F_SETLKW if kind == "fcntl" else fcntl.F_OFD_SETLKW
        fcntl_lock(fd, cmd, fcntl.F_WRLCK if exclusive else fcntl.F_RDLCK)
    elif kind == "lockf":
        if LIBC.lockf(fd, 1, ctypes.c_long(0)) != 0:   # F_LOCK
            raise OSError(ctypes.get_errno(), "lockf")
    else:
        raise SystemExit(f"unknown lock kind {kind}")


def unlock(fd: int, kind: str) -> None:
    if kind == "flock":
        fcntl.flock(fd, fcntl.LOCK_UN)
    elif kind in ("fcntl", "ofd"):
        fcntl_lock(fd, fcntl.F_SETLK if kind == "fcntl" else fcntl.F_OFD_SETLK, fcntl.F_UNLCK)
    elif LIBC.lockf(fd, 0, ctypes.c_long(0)) != 0:      # F_ULOCK
        raise OSError(ctypes.get_errno(), "lockf")


def say(line: str) -> None:
    print(line, flush=True)


def read_all(fd: int) -> bytes:
    """From the start in 4 KiB reads, as a small-read program does."""
    os.lseek(fd, 0, os.SEEK_SET)
    parts = []
    while chunk := os.read(fd, 4096):
        parts.append(chunk)
    return b"".join(parts)


def writer(path: str, kind: str, records: int, size: int) -> None:
    fd = os.open(path, os.O_RDWR)
    sys.stdin.readline()
    lock(fd, kind, True)
    os.ftruncate(fd, 0)                       # the previous contents go
    for i in range(records):
        os.write(fd, bytes([65 + i % 26]) * size)
    unlock(fd, kind)
    say("unlocked")
    sys.stdin.readline()                      # the file stays open while the reader reads
    os.close(fd)
    say("closed")


def reader(path: str, kind: str) -> None:
    fd = os.open(path, os.O_RDWR if kind == "lockf" else os.O_RDONLY)
    first = read_all(fd)                      # read-ahead of the old contents, if any
    say(f"before {len(first)} {os.fstat(fd).st_size}")
    sys.stdin.readline()
    lock(fd, kind, kind == "lockf")           # lockf has no shared lock
    size = os.fstat(fd).st_size
    data = read_all(fd)
    unlock(fd, kind)
    os.close(fd)
    say(f"after {size} {len(data)} {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    role, path, kind = sys.argv[1:4]
    if role == "writer":
        writer(path, kind, int(sys.argv[4]), int(sys.argv[5]))
    else:
        reader(path, kind)
