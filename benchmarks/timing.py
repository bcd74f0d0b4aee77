"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import argparse
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


def command_line(doc: str, repeats: int, **counts: int) -> argparse.ArgumentParser:
    """A benchmark script's parser: ``doc``'s first line, ``--repeats`` and one integer option per ``counts``.

    Args:
      doc: the script's docstring.
      repeats: ``--repeats``' default, the runs each figure is the best of.
      counts: ``name=default`` of the script's own integer options (``--name``; ``_`` reads ``-``).
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, default in counts.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    parser.add_argument("--repeats", type=int, default=repeats)
    return parser


def best_alternating(runs: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """The best time (s) each of ``runs`` reports of itself over ``repeats`` rounds, the runs alternating.

    Each run times only its own part (CPU time, say) and returns it; the first is run
    once more before the rounds, to warm up imports and first allocations.  One round
    runs them all in turn, so a burst of other load on a shared machine inflates none alone.
    """
    next(iter(runs.values()))()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            times[name].append(run())
    return {name: min(values) for name, values in times.items()}
