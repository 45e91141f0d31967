"""Variants: the ways a workload program is run and compared.

``plain`` runs the program as it is. Every other variant runs the same
program, with the same arguments and data, under ``sluice run --mode M``.
Adding a variant for a new sluice mode is one entry in :data:`VARIANTS`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sluice.errors import UserError


@dataclass(frozen=True)
class Variant:
    name: str
    mode: str | None  # the ``sluice run --mode`` value; None = the program alone
    help: str
    layout: str | None = None  # the ``sluice run --layout`` value (new files' layout on CephFS, Lustre)
    fs_profile: str | None = None  # the ``sluice run --fs`` profile (stage and auto: straight through by it)

    def command(self, argv: list[str], log_dir: Path | None, paths: Sequence[Path] = ()) -> list[str]:
        """The command line that runs ``argv`` as this variant; sluice manages
        the files under ``paths`` (the workload's own directory)."""
        if self.mode is None:
            return list(argv)
        if log_dir is None:
            raise ValueError(f"variant {self.name} needs a log directory")
        return [
            sys.executable, "-m", "sluice", "run",
            "--mode", self.mode,
            "--log-dir", str(log_dir),
            "--quiet",
            *(["--layout", self.layout] if self.layout else []),
            *(["--fs", self.fs_profile] if self.fs_profile else []),
            *[a for p in paths for a in ("--path", str(p))],
            "--",
            *argv,
        ]  # fmt: skip

    def env(self) -> dict[str, str]:
        """The environment: ``python -m sluice`` must find this same package."""
        env = dict(os.environ)
        if self.mode is not None:
            import sluice

            root = str(Path(sluice.__file__).resolve().parent.parent)
            old = env.get("PYTHONPATH")
            env["PYTHONPATH"] = root + (os.pathsep + old if old else "")
        return env


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("plain", None, "the program alone"),
        Variant("sluice-profile", "profile", "under `sluice run --mode profile` (counters only)"),
        Variant("sluice-buffer", "buffer", "under `sluice run --mode buffer` (write-behind and read-ahead)"),
        Variant("sluice-stage", "stage", "under `sluice run --mode stage` (node-local tier, published at close)"),
        Variant("sluice-auto", "auto", "under `sluice run --mode auto` (created files staged, others buffered)"),
    )
}


# Layout variants (CephFS, Lustre): ``layout:SPEC`` runs under profile mode
# with ``--layout SPEC`` (off, auto, or stripe_count=N,stripe_size=S), so
# that layouts are compared at the same cost (docs/layout.md).
LAYOUT_PREFIX = "layout:"


# Profile variants: ``fs:MODE:FS.json`` runs under ``sluice run --mode MODE
# --fs FS.json`` (auto's and stage's first-write size by the calibrated
# profile, docs/predict.md), beside the same mode without it.
FS_PREFIX = "fs:"


def get(name: str) -> Variant:
    if name.startswith(FS_PREFIX):
        mode, _, profile = name[len(FS_PREFIX):].partition(":")
        if mode not in ("stage", "auto") or not profile:
            raise UserError(f"variant {name!r}: want fs:MODE:FS.json with MODE stage or auto")
        from sluice.autolarge import auto_large_of, read_profile
        if auto_large_of(read_profile(profile)) is None:
            raise UserError(f"variant {name!r}: {profile} holds no timings of staged against direct writes")
        return Variant(name, mode, f"under `sluice run --mode {mode} --fs {profile}`",
                       fs_profile=str(Path(profile).absolute()))   # (a workload may run in a directory of its own)
    if name.startswith(LAYOUT_PREFIX) and len(name) > len(LAYOUT_PREFIX):
        spec = name[len(LAYOUT_PREFIX):]
        return Variant(name, "profile", f"under `sluice run --mode profile --layout {spec}`", layout=spec)
    try:
        return VARIANTS[name]
    except KeyError:
        raise UserError(f"unknown variant {name!r} (known: {', '.join(VARIANTS)})") from None
