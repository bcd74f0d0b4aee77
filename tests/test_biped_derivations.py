"""The biped's own derivations through the part checks: the five-bar leg against the MJCF's closed loop (its
kinematics, Jacobian and statics), the wheeled pendulum's linearization against linearize at several leg heights."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from crossdyn.analytic.biped import five_bar
from crossdyn.experiments.biped import derivations
from support import assert_close

L1, L2, L3 = 0.10, 0.16, 0.32  # the thesis chapter's leg lengths, m (docs/derivations/biped-model.md)


def test_axle_position_is_eq_3_2_on_a_symmetric_leg():
    alpha = np.radians(np.linspace(190, 250, 7))
    A = five_bar.axle_position(alpha, alpha, L1, L2, L3)
    # Two closed forms of the same geometry: round-off of 0.3 m lengths.
    assert_close(A[:, 0], np.zeros(7), atol=1e-15, what="axle on the centre line")
    assert_close(A[:, 1], -five_bar.height(alpha, L1, L2, L3), atol=1e-15, what="axle depth")


def test_axle_jacobian_is_its_derivative_and_the_virtual_work_lever():
    rng = np.random.default_rng(3)
    af, ar = np.radians(rng.uniform(195, 245, 20)), np.radians(rng.uniform(195, 245, 20))
    J = five_bar.axle_jacobian(af, ar, L1, L2, L3)
    h = 1e-6
    axle = five_bar.axle_position
    fd_front = (axle(af + h, ar, L1, L2, L3) - axle(af - h, ar, L1, L2, L3)) / (2 * h)
    fd_rear = (axle(af, ar + h, L1, L2, L3) - axle(af, ar - h, L1, L2, L3)) / (2 * h)
    # Central differences of 0.3 m geometry: h^2 |f'''| ~ 1e-13, round-off 1e-16 / h = 1e-10.
    assert_close(J[:, :, 0], fd_front, atol=1e-9, what="d axle / d alpha_front")
    assert_close(J[:, :, 1], fd_rear, atol=1e-9, what="d axle / d alpha_rear")
    # Symmetric leg: each motor's vertical lever is -y1 / 2, so eq. 2.30's tau = (P/2) y1 is -J_z^T P.
    alpha = np.radians(np.linspace(190, 250, 7))
    _, y1, _ = five_bar.height_derivatives(alpha, L1, L2, L3)
    Js = five_bar.axle_jacobian(alpha, alpha, L1, L2, L3)
    assert_close(Js[:, 1, 0], -y1 / 2, atol=1e-15, what="front lever")
    assert_close(Js[:, 1, 1], -y1 / 2, atol=1e-15, what="rear lever")
    assert_close(-Js[:, 1, 0] * 30.0, five_bar.hip_torque(alpha, 30.0, L1, L2, L3), atol=1e-13, what="J^T F")


def test_the_five_bar_leg_against_the_closed_loop(tmp_path):
    """The leg checked once: the part checks at 4 symmetric and 2 asymmetric closed poses, the height and the
    statics at the symmetric ones, J^T F; each judge can fail."""
    result = derivations.five_bar_leg(force=30.0, points=4)
    verdict, metrics = derivations.judge_five_bar_leg(result)
    assert verdict.passed, verdict.measured
    assert metrics["passed"] is True and metrics["measured"] == verdict.measured
    assert result.kinematics.samples == 6 and result.jacobian.passed  # 4 symmetric + 2 asymmetric closed poses
    assert result.height_mujoco.shape == (4, 2) and result.torque_mujoco.shape == (4, 4)
    assert "per unit velocity of left_front_hip, left_rear_hip" in result.jacobian.truth
    assert result.wrong_jacobian.attribution == ["column 'left_rear_hip' has the opposite sign"]
    assert [p.name for p in derivations.plot_five_bar_leg(result, tmp_path)] == ["five_bar.png",
                                                                                 "five_bar_derivation.png"]
    # A wrong Jacobian that passed would not be caught: FAIL.
    assert not derivations.judge_five_bar_leg(dataclasses.replace(result, wrong_jacobian=result.jacobian))[0].passed
    # MuJoCo's torques 1 % off (a wrong lever arm would be worse): FAIL on the torque bound.
    off = dataclasses.replace(result, torque_mujoco=1.01 * result.torque_mujoco)
    verdict, metrics = derivations.judge_five_bar_leg(off)
    assert not verdict.passed and metrics["torque_max_rel_error"] == pytest.approx(0.01, rel=1e-6)


def test_pendulum_linearization_at_two_heights(tmp_path):
    result = derivations.pendulum_linearization((195.0, 245.0))
    verdict, metrics = derivations.judge_pendulum_linearization(result)
    assert verdict.passed, verdict.measured
    assert result.heights[0] < result.heights[1]  # the leg extends with alpha
    for report in result.printed:
        assert not report.passed and report.attribution[0].startswith("the reduced A is off at d(xd)/d(theta)")
    assert [p.name for p in derivations.plot_pendulum_linearization(result, tmp_path)] == [
        "pendulum_linearization.png"]
    swapped = dataclasses.replace(result, printed=result.reports)
    assert not derivations.judge_pendulum_linearization(swapped)[0].passed


@pytest.mark.parametrize("name", ["five-bar", "pendulum-linearization"])
def test_registered(name):
    from crossdyn.experiments.core.registry import get

    assert get(name).run.__module__ == "crossdyn.experiments.biped.derivations"
