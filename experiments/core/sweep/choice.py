"""Choosing among a tune's runs: the best passing run within the bounds (:func:`best_row`), and the Pareto
front of two metrics (:func:`pareto_front`)."""

from __future__ import annotations

import math

from .table import cell

__all__ = ["best_row", "meets", "pareto_front"]


def meets(row: dict, constraints: list[tuple[str, str, float]]) -> bool:
    """Whether ``row`` meets every bound ``(metric, "<=" or ">=", value)`` (NaN meets none)."""
    for metric, op, limit in constraints:
        v = cell(row, metric)
        if not (v <= limit if op == "<=" else v >= limit):
            return False
    return True


def best_row(rows: list[dict], minimize: str, constraints: list[tuple[str, str, float]]) -> dict | None:
    """The passing row with the lowest finite ``minimize`` meeting every constraint.  Ties (a settling time
    counted in control periods ties often) go to the row furthest inside the first bound, then the lower sample."""
    ok = [r for r in rows if r["outcome"] == "pass" and math.isfinite(cell(r, minimize)) and meets(r, constraints)]

    def inside(r: dict) -> float:
        if not constraints:
            return 0.0
        metric, op, _ = constraints[0]
        return cell(r, metric) if op == "<=" else -cell(r, metric)

    return min(ok, key=lambda r: (cell(r, minimize), inside(r), int(r["sample"]))) if ok else None


def pareto_front(rows: list[dict], first: str, second: str) -> list[dict]:
    """Rows not beaten on both ``first`` and ``second`` (minimized) by another row, by ``first``."""
    pts = sorted(rows, key=lambda r: (cell(r, first), cell(r, second)))
    front, best = [], math.inf
    for r in pts:
        if cell(r, second) < best:
            front.append(r)
            best = cell(r, second)
    return front
