"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def best_time(fn: Callable[[], T], repeats: int) -> tuple[float, T]:
    """Best wall time of ``fn()`` over ``repeats`` (>= 1) runs (s), and its last result.

    The minimum, not the mean: on a shared machine other load only adds time.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out
