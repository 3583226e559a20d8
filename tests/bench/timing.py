"""How the benchmarks time the sides they compare."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def best_times(
    repeat: int, actions: Sequence[Callable[[], object]], after: Callable[[int], object] | None = None
) -> list[float]:
    """The best time of each action over `repeat` rounds. Every round runs them all in turn, so that a
    busy spell of the shared machine falls on every side rather than on one. `after(i)` (not timed)
    runs after action i, e.g. to undo what it stored."""
    best = [float("inf")] * len(actions)
    for _ in range(repeat):
        for i, action in enumerate(actions):
            start = time.perf_counter()
            action()
            best[i] = min(best[i], time.perf_counter() - start)
            if after is not None:
                after(i)
    return best
