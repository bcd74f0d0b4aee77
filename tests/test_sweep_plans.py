"""The generic sweep's plans and choices that sweeps naming their own values use: explicit value lists,
grids and maps, a log-uniform Latin hypercube, LQR weights drawn as ratios, the Pareto front and the
best run within the defaults' budget.  No simulation: the sweeps that use them are tested with their
systems (tests/test_tune.py, tests/test_search.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.sweep import choice, search, space


def _positive(name: str, value: float) -> float:
    if value < 0:
        raise ParameterError(f"{name}={value} is out of range")
    return value


def test_values_are_lists_or_even_steps_each_checked():
    assert space.parse_values([("a", "1,2.5"), ("b", "0:1:3")], _positive) == {"a": [1.0, 2.5], "b": [0.0, 0.5, 1.0]}
    for items, message in (([("a", "1"), ("a", "2")], "twice"), ([("a", "")], "empty"), ([("a", "x")], "numbers"),
                           ([("a", "-1")], "out of range"), ([("a", "0:1:0")], "numbers")):
        with pytest.raises(ParameterError, match=message):
            space.parse_values(items, _positive)
    assert space.parse_bounds([("a", "1:10")], _positive) == {"a": (1.0, 10.0)}
    with pytest.raises(ParameterError, match="low <= high"):
        space.parse_bounds([("a", "10:1")], _positive)


def test_product_runs_the_first_axis_slowest_and_refuses_a_plan_too_big():
    assert space.product({"a": [1, 2], "b": [3, 4]}) == [{"a": 1, "b": 3}, {"a": 1, "b": 4}, {"a": 2, "b": 3},
                                                         {"a": 2, "b": 4}]
    big = list(range(1000))
    with pytest.raises(ParameterError, match="the map has 1,000,000 cells"):
        space.product({"a": big, "b": big}, "the map", "cells")


def test_log_hypercube_puts_one_draw_in_each_log_stratum():
    bounds = {"q": (1.0, 1000.0), "r": (0.1, 10.0)}
    draws = space.log_hypercube(bounds, 6, seed=3)
    assert draws == space.log_hypercube(bounds, 6, seed=3) != space.log_hypercube(bounds, 6, seed=4)
    for name, (lo, hi) in bounds.items():
        u = (np.log10([d[name] for d in draws]) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        assert sorted(np.floor(u * 6).astype(int)) == list(range(6))  # one draw per sixth of the log range
    with pytest.raises(ParameterError, match="--samples"):
        space.log_hypercube(bounds, 0, seed=0)


class _Trial:
    """An Optuna trial that draws the given values."""

    def __init__(self, values):
        self.values = values

    def suggest_float(self, name, low, high, log):
        assert log and low <= self.values[name] <= high
        return self.values[name]


def test_ratios_give_weights_in_range_with_the_drawn_ratios():
    bounds = {"q_a": (1.0, 100.0), "q_b": (0.1, 10.0), "r": (0.1, 10.0)}
    weights = search.suggest_ratios(_Trial({"ratio_q_a": 50.0, "ratio_q_b": 2.0}), bounds)
    assert list(weights) == ["q_a", "q_b", "r"]
    assert all(bounds[k][0] <= v <= bounds[k][1] for k, v in weights.items())
    # relative 1e-12: one multiplication and one division in floating point
    assert weights["q_a"] / weights["r"] == pytest.approx(50.0, rel=1e-12)
    assert weights["q_b"] / weights["r"] == pytest.approx(2.0, rel=1e-12)
    # no r fits both ratios: each weight clipped into its range, the ratio no longer kept
    clipped = search.suggest_ratios(_Trial({"ratio_q_a": 1000.0, "ratio_q_b": 0.01}), bounds)
    assert all(bounds[k][0] <= v <= bounds[k][1] for k, v in clipped.items())
    assert clipped["q_a"] / clipped["r"] != pytest.approx(1000.0, rel=1e-6)


def _row(i, outcome, first, second):
    return {"sample": str(i), "kind": "default" if i == 0 else "lhs", "outcome": outcome, "t": repr(first),
            "e": repr(second)}


def test_pareto_front_and_the_best_within_the_reference_budget():
    rows = [_row(0, "ok", 2.0, 1.0), _row(1, "ok", 1.0, 3.0), _row(2, "ok", 1.5, 0.9), _row(3, "ok", 3.0, 2.0)]
    assert [r["sample"] for r in choice.pareto_front(rows, "t", "e")] == ["1", "2"]
    assert choice.best_within_reference(rows, "t", "e")["sample"] == "2"  # faster than 1 within the budget
    over = [_row(0, "ok", 2.0, 1.0), _row(1, "ok", 1.0, 3.0)]
    assert choice.best_within_reference(over, "t", "e")["sample"] == "0"
    failed_reference = [_row(0, "fell", math.inf, 0.1), _row(1, "ok", 1.0, 3.0)]
    assert choice.best_within_reference(failed_reference, "t", "e")["sample"] == "1"
    assert choice.best_within_reference([_row(0, "fell", math.inf, 0.1)], "t", "e") is None
