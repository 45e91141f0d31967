"""Where the installed native parts of sluice live, and the node-local tier."""

from __future__ import annotations

import os
from pathlib import Path

from sluice.errors import UserError

PACKAGE_DIR = Path(__file__).resolve().parent


def native(name: str, kind: str = "lib") -> Path:
    """Path of a native file shipped in the package (``lib`` or ``bin``).

    ``SLUICE_NATIVE_DIR`` overrides the location, so that a build tree can be
    tested without installing it.
    """
    base = os.environ.get("SLUICE_NATIVE_DIR")
    # absolute: the program may change directory before it execs another
    candidates = [Path(base).absolute() / name] if base else []
    candidates.append(PACKAGE_DIR / kind / name)
    for c in candidates:
        if c.exists():
            return c
    raise UserError(f"{name} is not installed (looked in {', '.join(str(c.parent) for c in candidates)}); reinstall sluice with scripts/setup")


def preload_library() -> Path:
    return native("libsluice.so", "lib")


def default_tier_path(env: dict[str, str] | None = None) -> Path:
    """``$SLUICE_TIER``, else the first of the places a job puts its tier
    that holds staged files, else where a job would put it now
    (``/dev/shm/sluice-stage-UID`` when /dev/shm is usable; see
    sluice.stage.placement). No check of it: sluice.stage.tier.open_tier
    makes and checks the directory."""
    value = (os.environ if env is None else env).get("SLUICE_TIER")
    if value:
        return Path(value)
    from sluice.stage.placement import lookup

    return Path(lookup(env))


def tier_journal_empty(root: Path) -> bool:
    """True when the tier at root holds no journal entry at all (nothing
    staged by anyone on this node): cheaper than reading the tier."""
    try:
        with os.scandir(root / "journal") as it:
            return not any(not e.name.startswith(".") for e in it)
    except FileNotFoundError:
        return True
    except OSError:
        return False
