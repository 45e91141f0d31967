"""Access patterns and file systems per file: the four most common access
sizes and strides, unaligned accesses, and the mount each file is under.

A sluice log names the mounts its recorded files are under (process key
"mounts": a line "TYPE\\tPOINT" each, from /proc/self/mountinfo); a file's
mount is the longest mount point its path lies under, as Darshan matches it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sluice.logfmt import Log
from sluice.report.tables import column_values


def log_mounts(logs: Iterable[Log]) -> list[tuple[str, str]]:
    """(mount point, file-system type) of every mount the logs name, in the
    order first named; empty when no log names any (older logs)."""
    seen: dict[str, str] = {}
    for l in logs:
        for line in l.info.get("mounts", "").splitlines():
            fstype, sep, point = line.partition("\t")
            if sep and point.startswith("/"):
                seen.pop(point, None)        # mounted again over it: the later one holds the files
                seen[point] = fstype
    return list(seen.items())


# The file systems of one node alone, where --mode auto only profiles (the
# same list as sluice_mount_is_local in src/core/mounts.c).
LOCAL_FS_TYPES = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "nilfs2", "bcachefs", "zfs",
    "tmpfs", "ramfs", "hugetlbfs", "devtmpfs", "overlay", "vfat", "msdos", "exfat", "ntfs", "ntfs3",
    "hfsplus", "udf", "iso9660", "squashfs",
})


def mount_of(path: str, mounts: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The mount holding `path`: the longest mount point it is under (of
    equal ones, the later)."""
    best = None
    for point, fstype in mounts:
        under = path == point or point == "/" or path.startswith(point.rstrip("/") + "/")
        if under and (best is None or len(point) >= len(best[0])):
            best = (point, fstype)
    return best


def common_values(c: Mapping[str, float], prefix: str, what: str) -> list[tuple[int, int]]:
    """(value, count) of the listed most common values: what is ACCESS or STRIDE."""
    out = []
    for i in range(1, 5):
        v, n = int(c.get(f"{prefix}_{what}{i}_{what}", 0)), int(c.get(f"{prefix}_{what}{i}_COUNT", 0))
        if v > 0 and n > 0:
            out.append((v, n))
    return out


def pattern_rows(files: list, mounts: list[tuple[str, str]], top: int) -> list[dict]:
    """The `top` files with the most POSIX reads and writes (app side): their
    common access sizes and strides, unaligned accesses and file system."""
    apps = [f.app for f in files]
    calls = [int(r + w) for r, w in zip(column_values(apps, "POSIX_READS"), column_values(apps, "POSIX_WRITES"))]
    chosen = sorted(((n, f) for n, f in zip(calls, files) if n > 0), key=lambda nf: (-nf[0], nf[1].path))[:top]
    rows = []
    for n, f in chosen:
        m = mount_of(f.path, mounts)
        rows.append({"path": f.path, "accesses": n,
                     "sizes": common_values(f.app, "POSIX", "ACCESS"),
                     "strides": common_values(f.app, "POSIX", "STRIDE"),
                     "file_not_aligned": int(f.app.get("POSIX_FILE_NOT_ALIGNED", 0)),
                     "file_alignment": int(f.app.get("POSIX_FILE_ALIGNMENT", 0)),
                     "mem_not_aligned": int(f.app.get("POSIX_MEM_NOT_ALIGNED", 0)),
                     "mount": m[0] if m else "", "fs_type": m[1] if m else "",
                     "layout": layout_text(f.app)})
    return rows


def layout_text(c: Mapping[str, float]) -> str:
    """The file's layout as the file system gave it at open ("3 x 1.0 MiB
    stripes", CephFS's object size after it); "" where none was read."""
    from sluice.report.text import human_bytes

    size, count = int(c.get("POSIX_STRIPE_SIZE", 0)), int(c.get("POSIX_STRIPE_COUNT", 0))
    if size <= 0:
        return ""
    text = f"{'all' if count < 0 else count} x {human_bytes(size)} stripe{'s' if count != 1 else ''}"
    obj = int(c.get("POSIX_OBJECT_SIZE", 0))
    if obj:
        text += f", {human_bytes(obj)} objects"
    comps = int(c.get("POSIX_LAYOUT_COMPONENTS", 0))
    if comps > 1:
        text += f" (first of {comps} components)"
    return text


def mount_rows(files: list, mounts: list[tuple[str, str]]) -> list[dict]:
    """Per mount the logs name: its point, type and how many recorded files it holds."""
    count: dict[str, int] = {}
    for f in files:
        m = mount_of(f.path, mounts)
        if m:
            count[m[0]] = count.get(m[0], 0) + 1
    return [{"point": p, "type": t, "files": count.get(p, 0)} for p, t in mounts]


def counts_text(pairs: list[tuple[int, int]]) -> str:
    """'4096 x 12, 512 x 3'; '-' when none."""
    return ", ".join(f"{v:,} x {n:,}" for v, n in pairs) or "-"
