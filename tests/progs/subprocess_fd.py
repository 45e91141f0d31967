"""subprocess_fd.py HOW FILE [HOW FILE ...]: a Python program hands its own
descriptor to a child as its stdout, as spawn_writer.c does in C. For each
pair in turn: FILE opened with os.open, then twice a line written with
os.write, `sh -c 'echo child N'` run with stdout=fd, another line. HOW
picks the way CPython starts the child: vfork (the default, CPython 3.10+),
fork (a preexec_fn forces it) or posix_spawn (close_fds=False and an
absolute path let subprocess use os.posix_spawn)."""

import os
import subprocess
import sys

OPTIONS = {"vfork": {}, "fork": {"preexec_fn": os.getpid}, "posix_spawn": {"close_fds": False}}

args = sys.argv[1:]
for how, path in zip(args[::2], args[1::2]):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for n in (1, 2):
        os.write(fd, b"parent %d\n" % n)
        subprocess.run(["/bin/sh", "-c", f"echo child {n}"], stdout=fd, check=True, **OPTIONS[how])
        os.write(fd, b"after %d\n" % n)
    os.close(fd)
