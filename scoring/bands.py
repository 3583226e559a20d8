"""The band of a scheduled capture's recent history: pure, no Django.

A scheduled capture's mean is "outside the band" when it lies more than SIGMAS sample standard deviations
from the mean of the WINDOW previous scheduled captures (at least MIN_HISTORY of them), the half-width
never below FLOOR (an engine that answers the same every time has a deviation of 0, and a change in the
fourth decimal is no news). The score history page marks such captures and the `capture.drop` webhook
fires for one below the band: both use `band` and `outside`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WINDOW = 10
MIN_HISTORY = 3
SIGMAS = 2.0
FLOOR = 0.005


@dataclass(frozen=True)
class Band:
    center: float
    low: float
    high: float
    history: int  # captures it was computed from

    def position(self, value: float) -> str:
        """ "below", "above" or "inside"."""
        if value < self.low:
            return "below"
        if value > self.high:
            return "above"
        return "inside"


def band(previous: Sequence[float]) -> Band | None:
    """The band of the last WINDOW values of `previous` (oldest first); None with fewer than MIN_HISTORY."""
    recent = [float(v) for v in previous[-WINDOW:] if v is not None and not math.isnan(v)]
    if len(recent) < MIN_HISTORY:
        return None
    center = sum(recent) / len(recent)
    sd = math.sqrt(sum((v - center) ** 2 for v in recent) / (len(recent) - 1))
    half = max(SIGMAS * sd, FLOOR)
    return Band(center, center - half, center + half, len(recent))


def positions(values: Sequence[float]) -> list[tuple[Band | None, str]]:
    """For each value (oldest first), the band of the values before it and where it falls ("inside" with
    no band yet)."""
    found = []
    for i, value in enumerate(values):
        b = band(values[:i])
        found.append((b, b.position(value) if b is not None else "inside"))
    return found
