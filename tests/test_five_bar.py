"""Five-bar leg geometry and statics (the thesis chapter, eq. 3.2, 2.28-2.30; docs/derivations/biped-model.md)."""

from __future__ import annotations

import numpy as np
import pytest

from crossdyn.analytic.biped.five_bar import height, height_derivatives, hip_torque
from support import assert_close

L1, L2, L3 = 0.10, 0.16, 0.32  # docs/derivations/biped-model.md (the thesis chapter, section 3 link lengths), m
STROKE = np.radians([190.0, 250.0])


def test_height_matches_the_documented_values():
    # docs/derivations/biped-model.md quotes these "about" to the millimetre (its 0.431 is 0.43046 rounded
    # up), so 1 mm is the quoting precision.
    assert_close(height(np.radians([190, 215, 250]), L1, L2, L3), [0.218, 0.313, 0.431], atol=1e-3)


def test_height_vectorized_keeps_shape():
    alpha = np.radians(np.linspace(190, 250, 12)).reshape(3, 4)
    y, y1, y2 = height_derivatives(alpha, L1, L2, L3)
    assert y.shape == y1.shape == y2.shape == (3, 4)
    assert_close(y.ravel(), [height(a, L1, L2, L3) for a in alpha.ravel()], atol=1e-15)  # same arithmetic


def test_derivatives_match_finite_differences():
    rng = np.random.default_rng(0)
    alpha = rng.uniform(*STROKE, size=50)
    h = 1e-5
    y, y1, y2 = height_derivatives(alpha, L1, L2, L3)
    fd1 = (height(alpha + h, L1, L2, L3) - height(alpha - h, L1, L2, L3)) / (2 * h)
    fd2 = (height(alpha + h, L1, L2, L3) - 2 * y + height(alpha - h, L1, L2, L3)) / h**2
    # Central differences: truncation ~h^2 y''' ~ 1e-10; round-off ~1e-16/h = 1e-11 (first)
    # and ~1e-16/h^2 = 1e-6 (second), so 1e-8 and 1e-5 m/rad^k.
    assert_close(y1, fd1, atol=1e-8, what="y1")
    assert_close(y2, fd2, atol=1e-5, what="y2")


def test_first_derivative_is_the_printed_eq_2_29():
    alpha = np.radians(np.linspace(185, 265, 17))
    a = L1 - L2 * np.cos(alpha)
    printed = -((a * L2 * np.sin(alpha)) / np.sqrt(L3**2 - a**2) + L2 * np.cos(alpha))
    assert_close(height_derivatives(alpha, L1, L2, L3)[1], printed, atol=1e-15)  # same formula, round-off


def test_leg_extends_over_the_stroke():
    y1 = height_derivatives(np.radians(np.linspace(181, 269, 45)), L1, L2, L3)[1]
    assert np.all(y1 > 0)


def test_hip_torque_is_virtual_work():
    # 2 tau d(alpha) = P dy, checked with a finite displacement of the leg.
    rng = np.random.default_rng(1)
    alpha = rng.uniform(*STROKE, size=20)
    force = rng.uniform(-100, 100, size=20)
    d = 1e-6
    work_legs = 2 * hip_torque(alpha, force, L1, L2, L3) * 2 * d
    work_force = force * (height(alpha + d, L1, L2, L3) - height(alpha - d, L1, L2, L3))
    # Central difference over 2e-6 rad: relative truncation ~d^2 = 1e-12; 1e-9 J covers round-off.
    assert_close(work_legs, work_force, atol=1e-9)


def test_hip_torque_broadcasts():
    tau = hip_torque(np.radians([200.0, 220.0]), np.array([[10.0], [20.0]]), L1, L2, L3)
    assert tau.shape == (2, 2)
    assert_close(tau[1], 2 * tau[0], atol=1e-14)  # linear in the force


@pytest.mark.parametrize("alpha_deg", [170.0, 275.0, np.nan])
def test_alpha_outside_reachable_range_is_rejected(alpha_deg):
    with pytest.raises(ValueError, match="alpha"):
        height(np.radians(alpha_deg), L1, L2, L3)


def test_shank_too_short_cannot_close():
    # At alpha = 190 deg the knee is 0.258 m from the centre line: a 0.2 m shank cannot reach.
    with pytest.raises(ValueError, match="cannot close"):
        height(np.radians(190.0), L1, L2, 0.2)
    with pytest.raises(ValueError, match="cannot close"):
        hip_torque(np.radians([250.0, 190.0]), 10.0, L1, L2, 0.2)


def test_bad_lengths_are_rejected():
    with pytest.raises(ValueError, match="l2"):
        height(np.radians(200.0), L1, -0.16, L3)
