"""Calls where the kernel itself changes or moves a file's bytes, right
after small writes (which buffer mode holds): a punched hole, a collapsed
range, preallocation, copy_file_range, sendfile, splice, and metadata set
after writing (mode with set-id bits, times). Prints what a program would
see; the output must be the same plain and under every mode."""
import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)   # (the program's own view: interposed symbols first)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2

w = sys.argv[1]


def small_writes(path, n=64, size=512):
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_RDWR, 0o644)
    for i in range(n):
        os.write(fd, bytes([65 + i % 26]) * size)
    return fd


def show(label, data):
    print(label, len(data), data[:8], data[4096:4104], data[-8:])


# A hole punched over bytes written a moment ago reads back as zeros.
fd = small_writes(f"{w}/punched")
rc = libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192)
print("punch", rc, ctypes.get_errno() if rc else 0)
os.lseek(fd, 0, os.SEEK_SET)
show("punched", os.read(fd, 1 << 20))
os.close(fd)

# posix_fallocate past the end grows the file.
fd = small_writes(f"{w}/grown", n=3)
os.posix_fallocate(fd, 0, 100000)
print("grown size", os.fstat(fd).st_size)
os.close(fd)

# copy_file_range, sendfile and splice from a file still being written.
fd = small_writes(f"{w}/source")
for name in ("copy_file_range", "sendfile", "splice"):
    out = os.open(f"{w}/{name}", os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
    os.lseek(fd, 0, os.SEEK_SET)
    total = 0
    while True:
        if name == "copy_file_range":
            n = os.copy_file_range(fd, out, 10000)
        elif name == "sendfile":
            n = os.sendfile(out, fd, None, 10000)
        else:
            r, wp = os.pipe()
            n = os.splice(fd, wp, 10000)
            if n:
                os.splice(r, out, n)
            os.close(r)
            os.close(wp)
        if n == 0:
            break
        total += n
    print(name, total, "position", os.lseek(fd, 0, os.SEEK_CUR))
    os.close(out)
    with open(f"{w}/{name}", "rb") as f:
        show(name, f.read())
os.close(fd)

# Metadata set after writing stays as set.
fd = small_writes(f"{w}/meta")
os.fchmod(fd, 0o4755)
os.utime(fd, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
st = os.fstat(fd)
print("fstat", oct(st.st_mode & 0o7777), st.st_size, st.st_mtime_ns)
os.close(fd)
st = os.stat(f"{w}/meta")
print("stat", oct(st.st_mode & 0o7777), st.st_size, st.st_mtime_ns)
