"""Choosing among a sweep's runs by two metrics: the Pareto front (:func:`pareto_front`), and the best
run within the reference run's budget of the second (:func:`best_within_reference`)."""

from __future__ import annotations

import math
from collections.abc import Collection

__all__ = ["pareto_front", "best_within_reference", "number"]


def number(row: dict, key: str) -> float:
    """A table cell as a float (NaN when empty or missing)."""
    text = row.get(key, "")
    return float(text) if text not in ("", None) else math.nan


def pareto_front(rows: list[dict], first: str, second: str) -> list[dict]:
    """Rows not beaten on both ``first`` and ``second`` (minimized) by another row, by ``first``."""
    pts = sorted(rows, key=lambda r: (number(r, first), number(r, second)))
    front, best = [], math.inf
    for r in pts:
        if number(r, second) < best:
            front.append(r)
            best = number(r, second)
    return front


def best_within_reference(rows: list[dict], minimize: str, budget: str, ok: Collection[str] = ("ok",),
                          reference: str = "default") -> dict | None:
    """The ``ok`` row lowest in ``minimize`` that spends no more ``budget`` than the row of ``kind`` ``reference``.

    Without such a row, the ``ok`` row lowest in ``minimize``; None if no row is ``ok``.
    Ties on ``minimize`` go to the lower ``budget``.
    """
    good = [r for r in rows if r["outcome"] in ok]
    if not good:
        return None
    ref = next((r for r in rows if r["kind"] == reference), None)

    def key(r: dict) -> tuple[float, float]:
        return number(r, minimize), number(r, budget)

    if ref is not None and ref["outcome"] in ok:
        thrifty = [r for r in good if number(r, budget) <= number(ref, budget)]
        if thrifty:
            return min(thrifty, key=key)
    return min(good, key=key)
