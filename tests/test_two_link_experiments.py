"""The two-link experiments as a library: compute, judge and plot apart.

Each computation is called directly (no Context, no results folder); each judge
passes on the real result and says FAIL on a constructed wrong one.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from crossdyn.experiments import two_link as tl


@pytest.fixture(scope="module")
def lagrange_check():
    return tl.crosscheck_variant("lagrange", samples=200, seed=0)


@pytest.fixture(scope="module")
def printed_check():
    return tl.crosscheck_variant("lecture-no-link-inertia", samples=200, seed=0)


def test_exact_variant_judged(lagrange_check, tmp_path):
    verdict, metrics = tl.judge_variant(lagrange_check)
    assert verdict.passed and metrics["passed"] is True and metrics["measured"] == verdict.measured
    assert metrics["variant"] == "lagrange" and metrics["samples"] == 200
    # 1e-6 N m off along the trajectory (the states still agree): FAIL.
    verdict, metrics = tl.judge_variant(dataclasses.replace(lagrange_check, trajectory_max_abs_error=1e-6))
    assert not verdict.passed and metrics["passed"] is False
    assert [p.name for p in tl.plot_variant(lagrange_check, tmp_path)] == ["term_errors.png"]


def test_printed_erratum_judged_by_its_attribution(printed_check, lagrange_check):
    verdict, metrics = tl.judge_variant(printed_check)
    assert verdict.passed, verdict.measured
    assert metrics["checker_passed"] is False  # the variant disagrees; the experiment passes because it is located
    # The offsets the check found are the missing inertias: independently, from the parameters.
    p = printed_check.params
    assert np.allclose(metrics["expected_offsets"], -np.array([[p.i1 + p.i2, p.i2], [p.i2, p.i2]]), rtol=0, atol=0)
    # A report in which nothing is wrong cannot demonstrate the erratum: FAIL.
    verdict, _ = tl.judge_variant(dataclasses.replace(printed_check, report=lagrange_check.report))
    assert not verdict.passed and verdict.measured.startswith("not attributed as expected")


def test_matrix_printed_judged_by_its_residual():
    result = tl.crosscheck_variant("lecture-matrix-form", samples=200, seed=0)
    assert tl.judge_variant(result)[0].passed
    # An error in joint 2 that is not h qd1^2: FAIL.
    wrong = dataclasses.replace(result, attribution={**result.attribution, "residual_after_h_qd1_squared": 1e-3})
    assert not tl.judge_variant(wrong)[0].passed


def test_scope_compute_judge_plot(tmp_path):
    result = tl.scope_traces()
    verdict, metrics = tl.judge_scope(result)
    assert verdict.passed, verdict.measured
    assert metrics["drift_order_midpoint_hold"] == pytest.approx(2.0, abs=0.3)  # the judge's own bound
    # The half-step midpoint replay replaced by the full-step one: no order at all -> FAIL.
    flat = dataclasses.replace(result, drift={**result.drift, "midpoint_dt0.5ms": result.drift["midpoint_dt1ms"]},
                               drift_timestep={**result.drift_timestep, "midpoint_dt0.5ms": 1e-3})
    assert not tl.judge_scope(flat)[0].passed
    # The point-mass torque passed off as the Lagrange one: not exact -> FAIL.
    approx = dataclasses.replace(result, tau={**result.tau, "lagrange": result.tau["point-mass"]})
    assert not tl.judge_scope(approx)[0].passed
    assert [p.name for p in tl.plot_scope(result, tmp_path)] == ["scope.png", "feedforward_drift.png"]


def test_attribution_compute_judge_plot(tmp_path):
    result = tl.attribute_faults(samples=100, seed=0)
    verdict, metrics = tl.judge_attribution(result)
    assert verdict.passed, verdict.measured
    assert set(metrics["cases"]) == set(tl.FAULTS)
    # Gravity and Coriolis reports swapped: each fault now blames the other's term -> FAIL.
    r = result.reports
    swapped = {**r, "gravity-sign-flipped": r["coriolis-dropped"], "coriolis-dropped": r["gravity-sign-flipped"]}
    verdict, metrics = tl.judge_attribution(tl.AttributionResult(swapped))
    assert not verdict.passed and not metrics["cases"]["coriolis-dropped"]["as_expected"]
    assert sorted(p.name for p in tl.plot_attribution(result, tmp_path)) == sorted(f"{f}.png" for f in tl.FAULTS)
