"""What the layout rules share: stripe counts and sizes for a file, the
layout a log shows, and the command that sets one."""

from __future__ import annotations

import math
from collections import defaultdict

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import n, v
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes


def file_per_process_layout(ctx: Context, files: list[FileTotals]) -> bool:
    """Files each written by one process, by several processes in all: file per process."""
    writers = [ctx.writers(f) for f in files]
    return len(files) >= 2 and all(len(w) == 1 for w in writers) and len(set().union(*writers)) >= 2


def stripes(nbytes: float) -> int:
    """Stripe count for a shared file: one stripe per 4 GiB, at least 4, at most 64 (-1: all OSTs)."""
    if nbytes > 256 * th.GIB:
        return -1
    return int(min(64, max(4, math.ceil(nbytes / (4 * th.GIB)))))


def stripe_size(mean_request: float) -> int:
    """A power of two from 1 to 64 MiB, the largest not above the mean request."""
    s = th.MIB
    while s * 2 <= min(mean_request, 64 * th.MIB):
        s *= 2
    return s


def size_text(b: int) -> str:
    return f"{b // th.MIB}M" if b % th.MIB == 0 else str(b)


def layout_of(f: FileTotals) -> tuple[int, int, bool] | None:
    """The file's layout as the file system gave it at open (stripe count, -1
    for all; stripe size; on CephFS), or None where the log has none (not
    CephFS or Lustre, or a log of sluice before these counters)."""
    size = int(v(f.app, "POSIX_STRIPE_SIZE"))
    if size <= 0:
        return None
    return int(f.app.get("POSIX_STRIPE_COUNT", 0)), size, v(f.app, "POSIX_OBJECT_SIZE") > 0


def layouts_text(known: list[tuple[int, int, bool]]) -> str:
    """'1 stripe of 4.0 MiB (12 files), 4 stripes of 1.0 MiB (2)': the layouts, most files first."""
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for c, size, _ in known:
        counts[(c, size)] += 1
    parts = []
    for i, ((c, size), k) in enumerate(sorted(counts.items(), key=lambda x: -x[1])):
        count = "all stripes" if c < 0 else f"{c} stripe{'s' if c != 1 else ''}"
        parts.append(f"{count} of {human_bytes(size)} ({n(k)}{' files' if i == 0 and k != 1 else ''})")
    return ", ".join(parts)


def layout_command(ceph: bool, count: int, size: int | None) -> str:
    """The command that gives the files created in {dir} this layout."""
    if ceph:
        cmd = f"setfattr -n ceph.dir.layout.stripe_count -v {count if count > 0 else 64} {{dir}}"
        return cmd + (f" && setfattr -n ceph.dir.layout.stripe_unit -v {size} {{dir}}" if size else "")
    return f"lfs setstripe -c {count}" + (f" -S {size_text(size)}" if size else "") + " {dir}"
