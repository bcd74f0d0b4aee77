"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import time


def best_time(fn, repeats: int) -> tuple[float, object]:
    """Best wall time of ``fn()`` over ``repeats`` runs (s), and its last result.

    The minimum, not the mean: on a shared machine other load only adds time.
    """
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out
