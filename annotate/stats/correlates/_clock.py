"""Step timings for benchmarks (``compute_features`` and the fit report seconds per step).

Reads the process's monotonic clock only; no file or environment access.
"""

from __future__ import annotations

import time


class Clock:
    """Seconds per named step: each :meth:`lap` records the time since the previous one.

    Examples
    --------
    >>> clock = Clock()
    >>> clock.lap("step")
    >>> list(clock.laps), clock.laps["step"] >= 0.0
    (['step'], True)
    """

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        """Record the seconds since the previous lap (or the start) under ``name``."""
        now = time.perf_counter()
        self.laps[name] = now - self.t
        self.t = now
