"""--mode auto's first-write size, decided by what a file system was
measured to charge (docs/predict.md, "auto's first-write size by the
model").

Auto stages a file it sees created and, at its first write, sends it
straight to the shared file system instead when that write is large
enough that the tier would only cost more (write the bytes twice and hold
them in node memory). ``sluice bench calibrate`` times writing one file
both ways under the library itself, at each request size, publish
included (``data.auto_write_s``: per call, staged and direct); the size
from which the staged write is no cheaper at that and every larger
measured size is where auto should switch. ``sluice run --fs FS.json``
hands it to the library for the profile's mount point
(SLUICE_DIRECT_FROM); ``sluice predict`` prices auto with the same size.

Kept apart from sluice.predict: `sluice run` imports it in every process
of a job and loads no more than this.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sluice.errors import UserError

DEFAULT = 1 << 20       # --auto-large's default: used where no profile says otherwise
PAGE = 4096
PROFILE_SCHEMA = "sluice-fs-profile 1"   # (sluice.bench.calibrate.SCHEMA)


@dataclass(frozen=True)
class AutoLarge:
    """The size and what it was found from."""

    large: int                      # bytes; the first write from which auto goes straight through
    mount: str                      # the calibrated file system's mount point
    fstype: str
    measured: str                   # when the profile was made
    staged_s: dict[int, float]      # request size -> one call's seconds, staged (publish included)
    direct_s: dict[int, float]      # the same, straight through
    why: str                        # one line

    @property
    def nothing_to_gain(self) -> bool:
        """Staging was dearer at every measured size: the file system's calls
        cost less than the tier's copy, so buffering gains nothing either
        and auto leaves the files there to profile mode."""
        return self.large <= 1

    def rule(self) -> str:
        """The SLUICE_DIRECT_FROM item."""
        return f"{self.mount}={self.large}"


def _figures(profile: dict[str, Any]) -> tuple[dict[int, float], dict[int, float]]:
    figs = (profile.get("data") or {}).get("auto_write_s") or {}
    staged, direct = {}, {}
    for q, r in figs.items():
        s, d = (r.get(k, {}).get("median", float("nan")) for k in ("staged", "direct"))
        if s == s and d == d and s > 0 and d > 0:
            staged[int(q)], direct[int(q)] = s, d
    return staged, direct


def crossover(staged: dict[int, float], direct: dict[int, float]) -> int:
    """The smallest size from which a staged call costs at least a direct
    one, at it and at every larger measured size: between the last size
    where staging was cheaper and the next, where the two cost the same
    (each call's cost taken as linear in its size between two measured
    ones: a fixed part and its bytes), rounded up to a page. 1 when staging was cheaper at no size (every write goes
    straight through); twice the largest size when it was cheaper at all
    (there is no measurement beyond)."""
    sizes = sorted(staged)
    diff = [staged[s] - direct[s] for s in sizes]
    k = len(sizes)
    while k > 0 and diff[k - 1] >= 0:
        k -= 1                   # (sizes[k:] all cost no less staged)
    if k == len(sizes):
        return 2 * sizes[-1]
    if k == 0:
        return 1
    s0, s1, d0, d1 = sizes[k - 1], sizes[k], diff[k - 1], diff[k]
    x = s0 + (s1 - s0) * (-d0 / (d1 - d0))
    return min(s1, max(s0 + 1, PAGE * math.ceil(x / PAGE)))


def log_interpolate(points: Mapping[int, float], x: float) -> float:
    """A figure at size x from those at measured sizes: on a log scale
    between them, the nearest end's beyond."""
    pts = sorted(points.items())
    if x <= pts[0][0]:
        return pts[0][1]
    for (s0, t0), (s1, t1) in zip(pts, pts[1:]):
        if s0 <= x <= s1:
            return t0 + (t1 - t0) * math.log(x / s0) / math.log(s1 / s0)
    return pts[-1][1]


def per_call_at(points: Mapping[int, float], size: float) -> float:
    """One call's seconds at size from the measured sizes: linear in the
    size between two of them (a fixed part and its bytes); below the
    smallest, the smallest's (a small call's cost is its fixed part); above
    the largest, the largest's grown with the bytes."""
    pts = sorted(points.items())
    if size <= pts[0][0]:
        return pts[0][1]
    if size >= pts[-1][0]:
        return pts[-1][1] * size / pts[-1][0]
    for (s0, t0), (s1, t1) in zip(pts, pts[1:]):
        if s0 <= size <= s1:
            return t0 + (t1 - t0) * (size - s0) / (s1 - s0)
    return pts[-1][1]


def auto_large_of(profile: dict[str, Any]) -> AutoLarge | None:
    """The size by a calibrated profile; None when the profile has no
    staged-against-direct figures (made by an older calibrate)."""
    staged, direct = _figures(profile)
    if len(staged) < 2:
        return None
    large = crossover(staged, direct)
    fs = profile.get("filesystem") or {}
    mount = fs.get("mount_point") or profile.get("target") or "/"
    if large == 1:
        why = "staging was cheaper at no measured size"
    elif large > max(staged):
        why = f"staging was cheaper at every measured size, up to {size_text(max(staged))}"
    else:
        below = max(s for s in staged if s < large)
        above = min(s for s in staged if s >= large)
        why = (f"staged {staged[below] * 1e3:.3g} ms against direct {direct[below] * 1e3:.3g} ms a {size_text(below)} "
               f"call, {staged[above] * 1e3:.3g} against {direct[above] * 1e3:.3g} ms a {size_text(above)} one")
    return AutoLarge(large=large, mount=mount, fstype=fs.get("type", "?"), measured=profile.get("measured", ""),
                     staged_s=staged, direct_s=direct, why=why)


def read_profile(path: str | Path) -> dict[str, Any]:
    """A profile written by calibrate; a UserError naming what is wrong otherwise."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read the file-system profile {path}: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(doc, dict) or doc.get("schema") != PROFILE_SCHEMA:
        raise UserError(f"{path} is not a file-system profile of this sluice (want schema {PROFILE_SCHEMA!r})")
    return doc


def size_text(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def describe(a: AutoLarge) -> str:
    """The line `sluice run` says."""
    if a.nothing_to_gain:
        return (f"--fs: on {a.mount} ({a.fstype}, calibrated {a.measured}) nothing to gain, auto leaves its files to "
                f"profile mode ({a.why})")
    return (f"--fs: on {a.mount} ({a.fstype}, calibrated {a.measured}) a staged file goes straight through at "
            f"a first write of {size_text(a.large)} or more ({a.why})")
