"""An independent witness of what the kernel saw: strace's record of a
program's system calls, summed per file, in the shape of the profile's fs
side (POSIX and STDIO counters of one file added up)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

KINDS = ("opens", "closes", "reads", "writes", "seeks", "bytes_read", "bytes_written")
# how the opens for writing were made, from the flags strace prints (O_WRONLY|O_CREAT|O_TRUNC)
OPEN_FLAG_KINDS = {"opens_create": "O_CREAT", "opens_excl": "O_EXCL", "opens_trunc": "O_TRUNC",
                   "opens_append": "O_APPEND"}

# "PID name(FD</path>, ..." and "= N" or "= N</path>"
_CALL = re.compile(r"^(?:\[pid\s+)?\d+\]?\s+(\w+)\((.*)\)\s+=\s+(-?\d+)(?:<([^>]*)>)?")
_RESUMED = re.compile(r"^\d+\s+<\.\.\. \w+ resumed>(.*)$")
_FD_PATH = re.compile(r"^-?\d+<([^>]*)>")
_OPEN_FLAGS = re.compile(r"\bO_[A-Z]+\b")
_RW = {"read": ("reads", "bytes_read"), "pread64": ("reads", "bytes_read"), "readv": ("reads", "bytes_read"),
       "preadv": ("reads", "bytes_read"), "preadv2": ("reads", "bytes_read"),
       "write": ("writes", "bytes_written"), "pwrite64": ("writes", "bytes_written"),
       "writev": ("writes", "bytes_written"), "pwritev": ("writes", "bytes_written"),
       "pwritev2": ("writes", "bytes_written")}
TRACED = "open,openat,creat,close,read,pread64,readv,preadv,preadv2,write,pwrite64,writev,pwritev,pwritev2,lseek"


def have_strace() -> bool:
    return shutil.which("strace") is not None


def strace_run(argv: list[str], out: Path, env: dict[str, str] | None = None, cwd: Path | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """Run argv under strace (following children), the calls in `out`."""
    return subprocess.run(["strace", "-f", "-qq", "-y", "-e", f"trace={TRACED}", "-o", str(out), *argv],
                          env=env, cwd=cwd, text=True, capture_output=True, timeout=timeout)


def kernel_calls(trace: Path, under: str) -> dict[str, dict[str, int]]:
    """Per file under `under`: the successful calls of each kind and their bytes."""
    per: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys((*KINDS, "opens_write", *OPEN_FLAG_KINDS), 0))
    unfinished: dict[str, str] = {}
    for line in trace.read_text(errors="replace").splitlines():
        # a call another thread interrupted: "PID name(args <unfinished ...>",
        # later "PID <... name resumed>rest"
        pid = line.split(None, 1)[0] if line else ""
        if line.endswith(" <unfinished ...>"):
            unfinished[pid] = line[: -len(" <unfinished ...>")]
            continue
        r = _RESUMED.match(line)
        if r:
            line = unfinished.pop(pid, "") + r.group(1)
        m = _CALL.match(line)
        if not m:
            continue
        name, args, ret, ret_path = m.group(1), m.group(2), int(m.group(3)), m.group(4)
        if ret < 0:
            continue
        if name in ("open", "openat", "creat"):
            path = ret_path
            kind = "opens"
        else:
            fm = _FD_PATH.match(args)
            path = fm.group(1) if fm else None
            kind = {"close": "closes", "lseek": "seeks"}.get(name)
        if not path or not path.startswith(under):
            continue
        if name in _RW:
            calls, nbytes = _RW[name]
            per[path][calls] += 1
            per[path][nbytes] += ret
        elif kind:
            per[path][kind] += 1
        if kind == "opens":
            flags = set(_OPEN_FLAGS.findall(args))
            if name == "creat":
                flags = {"O_WRONLY", "O_CREAT", "O_TRUNC"}
            if flags & {"O_WRONLY", "O_RDWR"}:
                per[path]["opens_write"] += 1
                for k, flag in OPEN_FLAG_KINDS.items():
                    per[path][k] += flag in flags and (flag != "O_EXCL" or "O_CREAT" in flags)
    return {p: dict(v) for p, v in per.items()}


def fs_side(entry: dict) -> dict[str, int]:
    """The profile's fs side of one file (`sluice report --json`'s entry), as kernel_calls counts."""
    fs = entry["fs"]

    def both(name: str) -> int:
        return int(fs.get(f"POSIX_{name}", 0) or 0) + int(fs.get(f"STDIO_{name}", 0) or 0)

    return {"opens": both("OPENS"), "reads": both("READS"), "writes": both("WRITES"), "seeks": both("SEEKS"),
            "bytes_read": both("BYTES_READ"), "bytes_written": both("BYTES_WRITTEN"),
            **{k: both(k.upper()) for k in ("opens_write", *OPEN_FLAG_KINDS)}}
