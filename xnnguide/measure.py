"""Small measuring helpers that the recipes share.

They exist so that a recipe can spend its lines on lowering and running a
model, not on timing loops. Each helper is short enough to read in full.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Timing:
    """Wall-clock times of repeated calls, in milliseconds."""

    samples_ms: tuple[float, ...]

    @property
    def median_ms(self) -> float:
        """The median call time: robust to the odd slow run."""
        return statistics.median(self.samples_ms)

    @property
    def spread_ms(self) -> float:
        """Half the distance between the 25th and 75th percentiles."""
        if len(self.samples_ms) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples_ms, n=4)
        return (q3 - q1) / 2

    def __str__(self) -> str:
        return f"{self.median_ms:.2f} ms ± {self.spread_ms:.2f} ms ({len(self.samples_ms)} runs)"


def time_calls(call: Callable[[], object], runs: int = 20, warmup: int = 3) -> Timing:
    """Call *call* ``warmup`` times untimed, then ``runs`` times timed.

    The warm-up absorbs one-off costs (allocations, caches, thread-pool
    start-up) that a long-running application pays only once.
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000.0)
    return Timing(tuple(samples))
