"""Baselines: flattening, tolerances, drift / new / missing / conditions, and a real run against its own.

The comparison is checked on hand-made metrics whose differences are known, then
on a built-in experiment run twice with one seed (identical: no drift) and with
another seed (its random states differ: conditions and metrics drift).
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from crossdyn.experiments.core import baseline
from crossdyn.experiments.core.baseline import DEFAULT_TOLERANCE, Tolerance, compare, numeric_metrics
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.registry import get
from crossdyn.experiments.core.runner import run_experiments

METRICS = {
    "experiment": "demo", "expected": "x", "short": True, "seed": 0, "params": {"gain": 2.0},
    "passed": True, "measured": "settled in 1.2 s", "fell": False, "label": "text",
    "settle_s": 1.2, "overshoot": 0.0, "diverged_at": "nan",
    "terms": {"mass": {"max_abs_error": 1e-15}},
    "per_joint": [{"name": "q1", "error": 3.0}, {"name": "q2", "error": 4.0}], "curve": [1.0, 2.0],
}


def _stored(metrics: dict) -> dict:
    """A baseline record as --save-baseline writes it."""
    return {"experiment": metrics["experiment"], "short": metrics["short"], "seed": metrics["seed"],
            "params": metrics["params"], "metrics": baseline.flat_metrics(metrics)}


def test_numeric_metrics_are_flattened_and_the_run_description_left_out():
    flat = numeric_metrics(METRICS)
    assert set(flat) == {"settle_s", "overshoot", "diverged_at", "terms.mass.max_abs_error", "per_joint[q1].error",
                         "per_joint[q2].error", "curve[0]", "curve[1]"}
    assert math.isnan(flat["diverged_at"])  # JSON stores NaN as "nan"; it is still a number


def test_identical_metrics_do_not_drift():
    result = compare("demo", METRICS, _stored(METRICS))
    assert result.passed and result.headline == "no drift" and not result.lines()


def test_five_percent_drift_is_named_with_both_values_and_the_change():
    result = compare("demo", {**METRICS, "settle_s": 1.2 * 1.05}, _stored(METRICS))
    assert not result.passed and [d.metric for d in result.drifted] == ["settle_s"]
    [line] = result.lines()
    assert "settle_s: baseline 1.2, now 1.26, change +5 %" in line


def test_declared_tolerance_widens_one_metric_only():
    moved = {**METRICS, "settle_s": 1.2 * 1.01, "overshoot": 1e-3}
    result = compare("demo", moved, _stored(METRICS), {"settle_s": Tolerance.of("settle_s", 0.02)})
    assert [d.metric for d in result.drifted] == ["overshoot"]  # settle_s within its 2 %, overshoot at default
    without = compare("demo", moved, _stored(METRICS))  # the default tolerance catches both
    assert {d.metric for d in without.drifted} == {"settle_s", "overshoot"}


def test_new_missing_and_other_conditions():
    now = {k: v for k, v in METRICS.items() if k != "overshoot"} | {"effort": 3.0, "seed": 4}
    result = compare("demo", now, _stored(METRICS))
    assert result.new == ["effort"] and result.missing == ["overshoot"]
    assert result.conditions == ["seed: baseline 0, now 4"] and not result.passed
    only_new = compare("demo", {**METRICS, "effort": 3.0}, _stored(METRICS))
    assert only_new.passed and only_new.headline == "1 new"  # a new metric is reported, not a failure


@pytest.mark.parametrize("base, now, allowed", [
    (1.0, 1.0 + 0.5e-6, True),    # inside rel 1e-6
    (1.0, 1.0 + 2e-6, False),     # outside it
    (0.0, 5e-10, True),           # inside abs 1e-9
    (0.0, 2e-9, False),
    (float("nan"), float("nan"), True),
    (float("nan"), 1.0, False),
    (float("inf"), float("inf"), True),
    (float("inf"), 1e300, False),
])
def test_default_tolerance(base, now, allowed):
    assert DEFAULT_TOLERANCE.allows(base, now) is allowed


@pytest.mark.parametrize("value", [-0.1, float("nan"), "2 %", True, Tolerance(rel=-1.0)])
def test_bad_declared_tolerance_is_refused(value):
    with pytest.raises(ParameterError, match="tolerance of metric 'settle_s'"):
        Tolerance.of("settle_s", value)


def test_a_run_reproduces_its_baseline_and_another_seed_does_not(tmp_path):
    exp = get("two-link-lagrange")
    run_experiments([exp], tmp_path / "a", short=True, seed=3)
    saved = baseline.save(tmp_path / "base", {exp.name: json.loads((tmp_path / "a" / exp.name / "metrics.json")
                                                                   .read_text())})
    assert saved == [tmp_path / "base" / f"{exp.name}.json"]
    stored = baseline.load(tmp_path / "base", [exp.name])
    [same] = run_experiments([exp], tmp_path / "b", short=True, seed=3, baseline=stored)
    assert same.baseline.passed and same.baseline.headline == "no drift"
    [other] = run_experiments([exp], tmp_path / "c", short=True, seed=4, baseline=stored)
    assert not other.baseline.passed and other.ok is False and other.passed  # as expected, but not the baseline
    assert other.baseline.conditions == ["seed: baseline 3, now 4"] and other.baseline.drifted


def test_load_refuses_a_folder_without_baselines(tmp_path):
    with pytest.raises(ParameterError, match="no such folder"):
        baseline.load(tmp_path / "missing", ["x"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ParameterError, match="holds no baseline for x"):
        baseline.load(tmp_path / "empty", ["x"])
    (tmp_path / "empty" / "x.json").write_text("{not json")
    with pytest.raises(ParameterError, match="cannot read"):
        baseline.load(tmp_path / "empty", ["x"])


def test_a_missing_or_empty_baseline_fails_unless_new_is_allowed():
    """A gate that compares nothing must not pass (issue 26): no file, or 'metrics': {}."""
    missing = compare("demo", METRICS, None)
    assert not missing.passed and missing.headline == "no baseline (not allowed)"
    assert "unless --allow-new" in missing.lines()[0]
    allowed = compare("demo", METRICS, None, allow_new=True)
    assert allowed.passed and allowed.headline == "no baseline"
    empty_record = {**_stored(METRICS), "metrics": {}}
    empty = compare("demo", METRICS, empty_record)
    assert not empty.passed and empty.headline.startswith("empty baseline (not allowed)")
    assert compare("demo", METRICS, empty_record, allow_new=True).passed


def test_booleans_and_text_are_compared_exactly():
    """``fell`` false -> true and a changed ``label`` drift, whatever the tolerance; so does a changed type."""
    moved = {**METRICS, "fell": True, "label": "other", "overshoot": "0.0"}
    loose = {"fell": Tolerance(rel=1.0, abs=1.0), "label": Tolerance(rel=1.0, abs=1.0)}
    result = compare("demo", moved, _stored(METRICS), loose)
    assert {d.metric for d in result.drifted} == {"fell", "label", "overshoot"} and not result.passed
    lines = result.lines()
    assert "drifted fell: baseline false, now true (compared exactly)" in lines
    assert 'drifted label: baseline "text", now "other" (compared exactly)' in lines
    assert compare("demo", dict(METRICS), _stored(METRICS), loose).passed  # unchanged: no drift


@pytest.mark.parametrize("returned, metric", [({"x": "inf"}, "x"), ({"a": [{"name": "q1", "b": "-inf"}]}, "a[0].b"),
                                              ({"a": {"b": "nan"}}, "a.b"),
                                              ({"a": np.array(["1", "inf"])}, "a[1]")])  # texts in an array
def test_a_text_metric_that_reads_as_a_number_is_refused(returned, metric):
    """Stored, the text "inf" is the number inf: a metric going from one to the other would pass (issue 36)."""
    from crossdyn.experiments.core.runner import check_metrics

    with pytest.raises(ParameterError, match=rf"experiment 'demo': metric '{re.escape(metric)}' is the text"):
        check_metrics("demo", {"passed": True, "measured": "-", **returned})
    check_metrics("demo", {"passed": True, "measured": "inf", "x": float("inf"), "label": "infinite"})  # fine


def test_a_non_finite_drift_says_no_change_changed():
    line = str(baseline.Drift("x", 1.0, math.inf, DEFAULT_TOLERANCE))
    assert line == f"x: baseline 1, now inf, change to inf (tolerance {DEFAULT_TOLERANCE})", line


def test_a_nested_key_colliding_with_a_dotted_one_is_refused():
    with pytest.raises(ParameterError, match="metric 'terms.mass' is given twice"):
        baseline.flat_metrics({"terms": {"mass": 1.0}, "terms.mass": 2.0})
    with pytest.raises(ParameterError, match=r"metric 'per_joint\[q1\].error' is given twice"):
        baseline.flat_metrics({"per_joint": [{"name": "q1", "error": 1.0}, {"name": "q1", "error": 2.0}]})


def test_deep_metrics_flatten_without_recursion():
    deep: dict = {"x": 1.0}
    for _ in range(100_000):
        deep = {"a": deep}
    assert list(baseline.flat_metrics({"deep": deep}).values()) == [1.0]


def test_cli_fails_on_a_missing_or_empty_baseline_unless_allow_new(tmp_path, capsys):
    from crossdyn.experiments.core.cli import main

    base = tmp_path / "base"
    assert main(["run", "two-link-lagrange", "--short", "--out", str(tmp_path / "a"), "--save-baseline",
                 str(base)]) == 0
    record = json.loads((base / "two-link-lagrange.json").read_text())
    assert any(isinstance(v, bool) for v in record["metrics"].values())  # booleans are stored now
    two = ["run", "two-link-lagrange", "rnea-two-link-arm", "--short", "--baseline", str(base)]
    capsys.readouterr()
    assert main([*two, "--out", str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "rnea-two-link-arm: no baseline stored" in out and "1 drifted from the baseline" in out
    assert main([*two, "--out", str(tmp_path / "c"), "--allow-new"]) == 0
    (base / "two-link-lagrange.json").write_text(json.dumps({**record, "metrics": {}}))
    one = ["run", "two-link-lagrange", "--short", "--baseline", str(base)]
    assert main([*one, "--out", str(tmp_path / "d")]) == 1
    assert "the baseline stores no metric" in capsys.readouterr().out
    assert main([*one, "--out", str(tmp_path / "e"), "--allow-new"]) == 0
