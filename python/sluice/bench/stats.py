"""Summaries of benchmark rounds: median, min, max, and pairwise ratios.

Ratios are computed pair by pair: round i of variant B over round i of
variant A (the two ran one right after the other), then the median of those
ratios. On a noisy machine this is steadier than the ratio of two medians,
because load that hits one round hits both members of its pair.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def summarize(values: Sequence[float | None]) -> dict[str, Any]:
    """Median, min, max and count of the finite values (None when there are none)."""
    vals = _finite(values)
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {
        "median": statistics.median(vals),
        "min": min(vals),
        "max": max(vals),
        "n": len(vals),
    }


def pairwise_ratios(base: Sequence[float | None], other: Sequence[float | None]) -> list[float | None]:
    """other[i] / base[i] for each round i; None where either is missing or base is 0."""
    if len(base) != len(other):
        raise ValueError(f"rounds differ: {len(base)} against {len(other)}")
    out: list[float | None] = []
    for a, b in zip(base, other):
        if a is None or b is None or a == 0 or not math.isfinite(a) or not math.isfinite(b):
            out.append(None)
        else:
            out.append(b / a)
    return out


def ratio_summary(base: Sequence[float | None], other: Sequence[float | None]) -> dict[str, Any]:
    """The per-round ratios and their median, min and max."""
    per_round = pairwise_ratios(base, other)
    return {"per_round": per_round, **summarize(per_round)}


def fraction(value: float | None, limit: float | None) -> float | None:
    """value / limit, or None when either is unknown or the limit is 0."""
    if value is None or limit is None or limit == 0:
        return None
    return value / limit
