"""The one tune's plans and choices, with no simulation: ranges and lists of values, grids and maps, bounds by
the defaults' own value, the best run and the Pareto front, and plans too big refused before they are made.
The tunes that use them run in tests/test_tune.py, tests/test_search.py and tests/test_tune_defaults.py."""

from __future__ import annotations

import math
import resource

import pytest

from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.limits import RUNS_MAX
from crossdyn.experiments.core.registry import Param
from crossdyn.experiments.core.sweep import choice, search, space
from crossdyn.experiments.core.sweep.engine import TuneEngine

PARAMS = {"a": Param(1.0, "a number", 0.0, 100.0), "n": Param(2, "a count", 0, 10), "b": Param(1.0, "another", 0.0)}


def test_a_list_of_values_is_a_grid_axis_each_value_checked():
    a, n = space.parse_vary(["a=0.5,2,10", "n=0,3"], PARAMS, "x")
    assert (a.values, a.low, a.high, a.log) == ((0.5, 2.0, 10.0), 0.5, 10.0, False)
    assert n.values == (0, 3) and all(isinstance(v, int) for v in n.values) and n.integer
    for item, message in (("a=1,1", "listed twice"), ("a=-1,2", "out of range"), ("n=1.5", "expected a int"),
                          ("a=", "a list of values"), ("a=x,y", "a list of values"), ("a=1-2", "LO:HI or LO:HI:log")):
        with pytest.raises(ParameterError, match=message):
            space.parse_vary([item], PARAMS, "x")


def test_a_grid_takes_the_listed_values_and_shares_the_budget_among_the_ranges():
    listed = space.parse_vary(["a=1,2,3", "n=0,5"], PARAMS, "x")
    plan = space.plan(listed, "grid", 1, seed=0)  # lists alone: the budget plays no part
    assert [values for _, values in plan] == [{"a": a, "n": n} for a in (1.0, 2.0, 3.0) for n in (0, 5)]
    mixed = space.plan(space.parse_vary(["a=1,2", "b=0:1"], PARAMS, "x"), "grid", 3, seed=0)
    assert [values for _, values in mixed] == [{"a": a, "b": b} for a in (1.0, 2.0) for b in (0.0, 0.5, 1.0)]
    for how in ("lhs", "optuna"):
        with pytest.raises(ParameterError, match="a list of values is an axis of a grid; add --search grid"):
            space.refuse_lists(listed, how)
    with pytest.raises(ParameterError, match="needs --samples >= 2"):  # one range needs two values of its own
        space.plan(space.parse_vary(["a=1,2", "b=0:1"], PARAMS, "x"), "grid", 1, seed=0)


def test_constraints_bound_by_a_number_or_by_the_defaults():
    assert space.parse_constraint("e<=0.3") == ("e", "<=", 0.3)
    assert space.parse_constraint("e >= defaults") == ("e", ">=", None)
    for text in ("e<=", "e<=nan", "e<=default", "<=1", "e=1"):
        with pytest.raises(ParameterError, match="METRIC<=VALUE"):
            space.parse_constraint(text)


class _Trial:
    """An Optuna trial that draws the given values."""

    def __init__(self, values):
        self.values = values

    def suggest_float(self, name, low, high, log):
        assert log and low <= self.values[name] <= high
        return self.values[name]


def test_ratios_give_values_in_range_with_the_drawn_ratios():
    bounds = {"q_a": (1.0, 100.0), "q_b": (0.1, 10.0), "r": (0.1, 10.0)}
    weights = search.suggest_ratios(_Trial({"ratio_q_a": 50.0, "ratio_q_b": 2.0}), bounds, "r")
    assert list(weights) == ["q_a", "q_b", "r"]
    assert all(bounds[k][0] <= v <= bounds[k][1] for k, v in weights.items())
    # relative 1e-12: one multiplication and one division in floating point
    assert weights["q_a"] / weights["r"] == pytest.approx(50.0, rel=1e-12)
    assert weights["q_b"] / weights["r"] == pytest.approx(2.0, rel=1e-12)
    # no r fits both ratios: each weight clipped into its range, the ratio no longer kept
    clipped = search.suggest_ratios(_Trial({"ratio_q_a": 1000.0, "ratio_q_b": 0.01}), bounds, "r")
    assert all(bounds[k][0] <= v <= bounds[k][1] for k, v in clipped.items())
    assert clipped["q_a"] / clipped["r"] != pytest.approx(1000.0, rel=1e-6)


def _row(i, outcome, first, second):
    return {"sample": str(i), "kind": "default" if i == 0 else "lhs", "outcome": outcome, "t": repr(first),
            "e": repr(second)}


def test_the_best_passes_and_meets_the_bounds_ties_to_the_thriftier():
    rows = [_row(0, "pass", 2.3, 0.23), _row(1, "pass", 1.2, 0.70), _row(2, "pass", 1.5, 0.22),
            _row(3, "fail", 0.1, 0.01), _row(4, "pass", 1.5, 0.20)]
    assert choice.best_row(rows, "t", [])["sample"] == "1"
    assert choice.best_row(rows, "t", [("e", "<=", 0.23)])["sample"] == "4"  # 2 and 4 tie on t: 4 spends less
    assert choice.best_row(rows, "t", [("e", ">=", 0.21)])["sample"] == "1"  # >=: the tie goes to the larger e
    assert choice.best_row(rows, "t", [("e", "<=", 0.1)]) is None
    assert choice.best_row(rows[:3], "t", [("e", "<=", math.inf)])["sample"] == "1"  # a bound of failed defaults


def test_the_pareto_front_is_the_runs_no_other_beats_on_both():
    rows = [_row(0, "pass", 2.0, 1.0), _row(1, "pass", 1.0, 3.0), _row(2, "pass", 1.5, 0.9), _row(3, "pass", 3.0, 2.0)]
    assert [r["sample"] for r in choice.pareto_front(rows, "t", "e")] == ["1", "2"]
    assert [r["sample"] for r in choice.pareto_front(rows, "e", "t")] == ["2", "1"]  # the same front, by e


def test_huge_plans_are_refused_before_anything_is_allocated():
    """1e8 samples (19 GB before one ran, once) are refused at once; so is a grid of a million cells."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ranged = space.parse_vary(["a=1:2", "b=1:2"], PARAMS, "x")
    with pytest.raises(ParameterError, match="100,000"):
        space.plan(ranged, "lhs", 100_000_000, seed=0)
    thousand = ",".join(str(1 + i / 1000) for i in range(1000))
    with pytest.raises(ParameterError, match="the grid has 1,000,000 combinations"):
        space.plan(space.parse_vary([f"a={thousand}", f"b={thousand}"], PARAMS, "x"), "grid", 1, seed=0)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # kB: nothing big was built
    assert len(space.plan(ranged, "lhs", RUNS_MAX, seed=0)) == RUNS_MAX  # the cap itself plans


def test_the_engine_options_are_checked_where_they_are_given():
    assert TuneEngine(workers=2, timeout=5.0).batches(True) is False  # a time limit is a run's own
    assert TuneEngine().batches(True) and not TuneEngine().batches(False) and not TuneEngine(batch=False).batches(True)
    for bad in ({"workers": 0}, {"workers": 1.5}, {"workers": True}, {"timeout": 0}, {"timeout": math.nan},
                {"timeout": math.inf}):
        with pytest.raises(ParameterError, match="workers|timeout"):
            TuneEngine(**bad)
