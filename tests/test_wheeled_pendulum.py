"""Wheeled inverted pendulum, steering and support statics (the thesis chapter, section 2.1-2.2)."""

from __future__ import annotations

import numpy as np
import pytest

from crossdyn.analytic.biped import wheeled_pendulum as wp
from support import assert_close

# docs/derivations/biped-model.md testbed numbers; the body a 0.24 x 0.30 x 0.10 m box of 6 kg.
M, m, r = 6.0, 0.4, 0.06
P = wp.PendulumParams(M=M, m=m, r=r, I=0.5 * m * r**2, J_pitch=M / 12 * (0.24**2 + 0.10**2),
                      J_yaw=M / 12 * (0.24**2 + 0.30**2), D=0.40)


def test_nonlinear_model_satisfies_2_16_and_2_17():
    rng = np.random.default_rng(0)
    th, thd, T = rng.uniform(-0.5, 0.5, 30), rng.uniform(-3, 3, 30), rng.uniform(-12, 12, 30)
    length = 0.3
    xdd, thdd = wp.accelerations(P, length, th, thd, T)
    r216 = (P.J_pitch + M * length**2) * thdd - (M * P.g * length * np.sin(th) - M * length * xdd * np.cos(th) - T)
    r217 = (M + 2 * m + 2 * P.I / r**2) * xdd - (T / r - M * length * thdd * np.cos(th)
                                                 + M * length * thd**2 * np.sin(th))
    assert_close(r216, 0 * th, atol=1e-12)  # residuals of O(100) N m terms: round-off
    assert_close(r217, 0 * th, atol=1e-12)


@pytest.mark.parametrize("length", [0.22, 0.31, 0.43])
def test_linearize_is_the_jacobian_of_the_nonlinear_model(length):
    A, B = wp.linearize_pendulum(P, length)
    h = 1e-6
    x0 = np.zeros(4)
    A_fd = np.stack([(wp.dynamics(P, length, x0 + h * e, 0.0) - wp.dynamics(P, length, x0 - h * e, 0.0)) / (2 * h)
                     for e in np.eye(4)], axis=1)
    B_fd = ((wp.dynamics(P, length, x0, h) - wp.dynamics(P, length, x0, -h)) / (2 * h))[:, None]
    # Central differences of a smooth model: ~h^2 |f'''| + 1e-16/h ~ 1e-9 relative to O(100) entries.
    assert_close(A, A_fd, atol=1e-7)
    assert_close(B, B_fd, atol=1e-7)


def test_printed_2_19_differs_where_the_wheel_inertia_enters():
    A, B = wp.linearize_pendulum(P, 0.3)
    Ap, Bp = wp.linearize_pendulum(P, 0.3, printed=True)
    # 2l/r^2 = 167 kg in place of 2I/r^2 = 0.4 kg: the x row collapses.
    assert abs(Bp[1, 0] / B[1, 0]) < 0.05
    assert_close(Ap[[0, 2]], A[[0, 2]], atol=0)  # kinematic rows untouched


def test_upright_pendulum_is_unstable_and_shorter_is_faster():
    poles = [np.max(np.linalg.eigvals(wp.linearize_pendulum(P, length)[0]).real) for length in (0.22, 0.31, 0.43)]
    assert poles[0] > poles[1] > poles[2] > 0


def test_steering_matches_a_lagrangian_derivation():
    # Pure yaw: KE = 1/2 (m D^2/2 + I D^2/(2 r^2) + J_yaw) deltad^2, generalized force (T_L - T_R) D/(2r).
    T_L, T_R = 1.3, -0.4
    expected = (T_L - T_R) * P.D / (2 * r) / (m * P.D**2 / 2 + P.I * P.D**2 / (2 * r**2) + P.J_yaw)
    assert_close(wp.yaw_acceleration(P, T_L, T_R), expected, atol=1e-12)  # round-off on ~20 rad/s^2


def test_kinematic_relations_and_their_printed_forms():
    assert wp.axle_acceleration(1.0, 3.0) == 2.0
    assert wp.axle_acceleration(1.0, 3.0, xd_R=5.0, printed=True) == 3.0
    assert wp.yaw_acceleration_from_wheels(0.4, 1.0, 0.2) == pytest.approx(2.0)
    assert wp.yaw_acceleration_from_wheels(0.4, 1.0, 0.2, xd_L=0.5, x_R=0.1, printed=True) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="xd_R"):
        wp.axle_acceleration(1.0, 3.0, printed=True)
    with pytest.raises(ValueError, match="xd_L and x_R"):
        wp.yaw_acceleration_from_wheels(0.4, 1.0, 0.2, printed=True)


def test_leg_forces_invert_the_statics_and_the_printed_form_does_not():
    rng = np.random.default_rng(2)
    F_y, T_x = rng.uniform(-30, 30, 10), rng.uniform(-5, 5, 10)
    F_back, T_back = wp.virtual_forces(P, *wp.leg_forces(P, F_y, T_x))
    assert_close(F_back, F_y, atol=1e-12)  # round-off on ~60 N
    assert_close(T_back, T_x, atol=1e-12)
    F_bad, _ = wp.virtual_forces(P, *wp.leg_forces(P, F_y, T_x, printed=True))
    assert_close(F_bad - F_y, np.full(10, -2 * M * P.g), atol=1e-12)  # off by exactly 2 M g


def test_wheel_equation_printed_form_is_dimensionally_wrong():
    T = wp.wheel_drive_torque(P, 2.0, 1.0)
    assert_close(T, r * ((m + P.I / r**2) * 2.0 + 1.0), atol=1e-15)  # O(1) N m from a few products: round-off
    assert wp.wheel_drive_torque(P, 2.0, 1.0, printed=True) > 100 * T


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="M"):
        wp.PendulumParams(M=0.0, m=m, r=r, I=P.I, J_pitch=0.03, J_yaw=0.07, D=0.4)
    with pytest.raises(ValueError, match="J_pitch"):
        wp.PendulumParams(M=M, m=m, r=r, I=P.I, J_pitch=np.nan, J_yaw=0.07, D=0.4)
    with pytest.raises(ValueError, match="length"):
        wp.linearize_pendulum(P, -0.2)
