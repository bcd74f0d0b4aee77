"""The biped model checks as a library: compute, judge and plot apart.

Each computation (``crossdyn.experiments.biped.checks``) is called directly, with
no Context or results folder, at a reduced size; each judge passes on the real
result and says FAIL on a constructed wrong one.
"""

from __future__ import annotations

import dataclasses

import pytest

from crossdyn.experiments.biped import checks


def test_linearization(tmp_path):
    result = checks.linearization_ladder([220.0])
    verdict, metrics = checks.judge_linearization(result)
    assert verdict.passed, verdict.measured
    assert metrics["table"]["alpha_deg"] == pytest.approx([220.0], abs=1e-12)
    # The realistic robot's rows passed off as the ideal one's: eq. 2.19 misses the leg mass -> FAIL.
    wrong = dataclasses.replace(result, rows={**result.rows, "ideal": result.rows["realistic"]})
    assert not checks.judge_linearization(wrong)[0].passed
    names = [p.name for p in checks.plot_linearization(result, tmp_path)]
    assert names == ["unstable_pole.png", "assumption_ladder.png"]


def test_steering(tmp_path):
    result = checks.steering_comparison(1.0)
    verdict, metrics = checks.judge_steering(result)
    assert verdict.passed, verdict.measured
    # The lumped-legs prediction replaced by plain eq. 2.22 on the heavy-legged robot: FAIL.
    realistic = result.variants["realistic"]
    wrong = {**result.variants, "realistic": {**realistic, "lumped_legs_and_wheel_yaw": realistic["analytic"]}}
    assert not checks.judge_steering(dataclasses.replace(result, variants=wrong))[0].passed
    assert [p.name for p in checks.plot_steering(result, tmp_path)] == ["steering.png"]


def test_statics(tmp_path):
    result = checks.statics_comparison(alphas_deg=(215.0,), commands=((10.0, 3.0),))
    verdict, metrics = checks.judge_statics(result)
    assert verdict.passed and metrics["corrected_max_rel_error"] <= checks.STATICS_RTOL
    # The printed and corrected forms swapped: the judge must notice which one agrees.
    swapped = [{**r, "corrected": r["printed"], "printed": r["corrected"]} for r in result.rows]
    assert not checks.judge_statics(checks.StaticsResult(swapped))[0].passed
    assert [p.name for p in checks.plot_statics(result, tmp_path)] == ["statics.png"]


def test_jump_stroke(tmp_path):
    result = checks.jump_stroke(duration=0.35)
    verdict, metrics = checks.judge_jump_stroke(result)
    assert verdict.passed, verdict.measured
    # g t, computed here from gravity and the retraction time: 9.81 x 0.3 (float round-off).
    assert metrics["requirement_m_s"] == pytest.approx(result.params.pendulum.g * checks.RETRACTION_TIME, rel=1e-12)
    # MuJoCo's robot cannot leave faster than the massless-leg ODE: a run that does fails the judge.
    fast = dataclasses.replace(result.run, takeoff_velocity=result.ode.takeoff_velocity + 0.1)
    assert not checks.judge_jump_stroke(dataclasses.replace(result, run=fast))[0].passed
    assert [p.name for p in checks.plot_jump_stroke(result, tmp_path)] == ["jump_stroke.png"]


def test_errata(tmp_path):
    result = checks.errata_measurements()
    verdict, metrics = checks.judge_errata(result)
    assert verdict.passed and verdict.measured == "5/5 errata demonstrated"
    # The printed (2.27) torques measured as if they were the corrected ones: not demonstrated -> FAIL.
    wrong = dataclasses.replace(result, statics_printed=result.statics_corrected)
    verdict, metrics = checks.judge_errata(wrong)
    assert not verdict.passed and verdict.measured == "4/5 errata demonstrated"
    assert [r["verdict"] for r in metrics["rows"]][-1] == "NOT DEMONSTRATED"
    paths = checks.plot_errata(result, tmp_path)
    assert [p.name for p in paths] == ["errata.png", "errata.md"]
    assert paths[1].read_text().startswith(checks.errata_table(checks.errata_rows(result)))
