"""What a benchmark result needs to say about where it ran: the machine and
the file system of the target directory (type, mount options, and whether it
is the sluice MooseFS testbed and with what added delay)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import socket
from pathlib import Path
from typing import Any

# statfs f_type magic numbers worth naming (linux/magic.h and file systems' own headers).
FS_MAGIC = {
    0x01021994: "tmpfs",
    0xEF53: "ext2/3/4",
    0x58465342: "xfs",
    0x9123683E: "btrfs",
    0x65735546: "fuse",
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",
    0x19830326: "beegfs",
    0x6969: "nfs",
    0x794C7630: "overlayfs",
}


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cpu_pressure() -> str | None:
    """The ``some`` line of /proc/pressure/cpu, when the kernel has PSI."""
    try:
        for line in Path("/proc/pressure/cpu").read_text().splitlines():
            if line.startswith("some"):
                return line
    except OSError:
        pass
    return None


def _meminfo_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info() -> dict[str, Any]:
    u = os.uname()
    return {
        "hostname": socket.gethostname(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "cpu_model": _cpu_model(),
        "memory_bytes": _meminfo_total(),
        "kernel": u.release,
        "machine": u.machine,
        "os": _os_release(),
        "python": platform.python_version(),
    }


def _os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def _unescape(field: str) -> str:
    """Undo the octal escapes (\\040 for space ...) of /proc/self/mounts."""
    out, i = [], 0
    while i < len(field):
        esc = field[i + 1 : i + 4]
        if field[i] == "\\" and len(esc) == 3 and esc.isdigit():
            out.append(chr(int(esc, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def find_mount(path: str | os.PathLike[str], mounts_file: str = "/proc/self/mounts") -> dict[str, Any] | None:
    """The mount entry with the longest mount point containing ``path``."""
    real = os.path.realpath(path)
    best: dict[str, Any] | None = None
    try:
        lines = Path(mounts_file).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) < 4:
            continue
        source, mnt, fstype, opts = (_unescape(p) for p in parts[:4])
        inside = real == mnt or real.startswith(mnt.rstrip("/") + "/")
        if inside and (best is None or len(mnt) >= len(best["mount_point"])):
            best = {"source": source, "mount_point": mnt, "type": fstype, "options": opts.split(",")}
    return best


def statfs_type(path: str | os.PathLike[str]) -> int | None:
    """statfs(2) f_type of ``path`` (the first field of struct statfs on Linux)."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    libc = ctypes.CDLL(libc_name, use_errno=True)
    buf = ctypes.create_string_buffer(256)  # larger than struct statfs everywhere
    if libc.statfs(os.fsencode(os.fspath(path)), buf) != 0:
        return None
    return ctypes.c_ulong.from_buffer(buf).value & 0xFFFFFFFF


def is_testbed_mount(mount: dict[str, Any] | None) -> bool:
    """True when the mount is a MooseFS client, as ``sluice testbed up`` mounts."""
    if mount is None:
        return False
    return mount["type"] in ("fuse.mfs", "fuse.mfsmount") or mount["source"].startswith("mfs#")


def _testbed_status(mount_point: str) -> dict[str, Any] | None:
    """``sluice testbed status`` of the testbed mounted at ``mount_point``, if it is that one."""
    try:
        from sluice import testbed

        st = testbed.status()
    except Exception:  # informational only: a broken testbed must not stop a benchmark
        return None
    if not isinstance(st, dict) or not st.get("mountpoint"):
        return None
    if os.path.realpath(str(st["mountpoint"])) != os.path.realpath(mount_point):
        return None
    return st


def filesystem_info(target: str | os.PathLike[str], ask_testbed: bool = True) -> dict[str, Any]:
    """Type, source and options of the file system holding ``target``."""
    mount = find_mount(target)
    magic = statfs_type(target)
    info: dict[str, Any] = {
        "target": os.path.realpath(target),
        "type": mount["type"] if mount else (FS_MAGIC.get(magic or -1) or "unknown"),
        "source": mount["source"] if mount else None,
        "mount_point": mount["mount_point"] if mount else None,
        "mount_options": mount["options"] if mount else None,
        "statfs_magic": f"0x{magic:08x}" if magic is not None else None,
        "statfs_name": FS_MAGIC.get(magic) if magic is not None else None,
    }
    moosefs = is_testbed_mount(mount)
    tb: dict[str, Any] = {"is_testbed": False, "moosefs": moosefs, "delay_us": None}
    if moosefs and ask_testbed and mount is not None:
        status = _testbed_status(mount["mount_point"])
        if status is not None:
            tb.update(is_testbed=True, delay_us=status.get("delay_us"), status=status)
    info["testbed"] = tb
    return info


def fs_label(fs: dict[str, Any]) -> str:
    """A short name for file names and headings: tmpfs, ext4, mfs-delay25us ..."""
    kind = str(fs.get("type") or "unknown")
    tb = fs.get("testbed") or {}
    if tb.get("is_testbed"):
        delay = tb.get("delay_us")
        kind = "testbed" if delay is None else f"testbed-delay{delay}us"
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in kind)
