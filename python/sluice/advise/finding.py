"""A finding: one problem on a set of files, with its evidence and fix."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Finding:
    id: str
    files: list[str]
    cost: float                      # seconds of the job's I/O time it explains
    mode: str                        # the sluice mode that fixes it ("profile": none does)
    text: str                        # the evidence in one sentence
    counters: dict[str, float]
    layout: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    mpi_info: dict[str, str] = field(default_factory=dict)
    toml: dict[str, dict[str, str]] = field(default_factory=dict)
    gain: dict | None = None
    in_effect: bool = False          # the counters show a mode already cutting what the finding is about
    partial: bool = False            # in effect, but cutting the calls less than IN_EFFECT_RATIO times
    cap: str | None = None           # highest severity the evidence supports
    # set by the judging of modes (effect.py)
    modes_in_effect: list[str] = field(default_factory=list)   # the modes the run had for the files
    had_mode: list[str] = field(default_factory=list)   # files the run had in `mode` without it acting
    fallbacks: dict[str, float] = field(default_factory=dict)  # why: POSIX_FALLBACK_* and the like
    # set by the ranking (rank.py)
    severity: str = "low"
    paths: list[str] = field(default_factory=list)          # `files` as path prefixes
    policy_paths: list[str] = field(default_factory=list)   # the prefixes a policy line names
    share: float = 0.0
