"""Timing helper shared by the benchmark scripts (run as `python bench/<name>.py`)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """(median seconds over ``repeats`` calls after one warm-up call, the last result)."""
    out = fn()  # warm-up (imports, allocator)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out
