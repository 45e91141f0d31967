"""Dropping the kernel page cache between benchmark rounds.

``sync; echo 3 > /proc/sys/vm/drop_caches`` needs root. Without it the
benchmark still runs, and every round records that its reads may have been
served from memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

DROP_CACHES = "/proc/sys/vm/drop_caches"


@dataclass
class CacheDropper:
    """Drops caches when it can, and remembers why it could not."""

    path: str = DROP_CACHES
    enabled: bool = True
    reason: str | None = None  # why dropping is impossible (None = possible so far)

    def __post_init__(self) -> None:
        if not self.enabled:
            self.reason = "disabled (--no-drop-caches)"
        elif os.geteuid() != 0:
            self.reason = "not root: cannot write /proc/sys/vm/drop_caches"

    @property
    def possible(self) -> bool:
        return self.reason is None

    def drop(self, what: str = "3") -> bool:
        """sync, then drop page cache, dentries and inodes ("3"; "2": only
        dentries and inodes, so that the next lookups ask the file system
        while its servers' data stays cached). True if it was done."""
        if not self.possible:
            return False
        os.sync()
        try:
            with open(self.path, "w") as f:
                f.write(f"{what}\n")
        except OSError as e:
            self.reason = f"cannot write {self.path}: {e.strerror or e}"
            return False
        return True

    def describe(self) -> dict[str, object]:
        return {"possible": self.possible, "reason": self.reason}
