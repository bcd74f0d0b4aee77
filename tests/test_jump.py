"""Jump extension phase, eq. 2.35-2.36 (the thesis chapter, section 2.2.2, figure 2-9)."""

from __future__ import annotations

import numpy as np
import pytest

from crossdyn.analytic.biped.five_bar import height
from crossdyn.analytic.biped.jump import extension_stroke
from support import assert_close

L1, L2, L3 = 0.10, 0.16, 0.32  # m, docs/derivations/biped-model.md
A0, A1 = np.radians(190.0), np.radians(250.0)  # crossdyn's default stroke
M, TAU, G = 6.0, 17.0, 9.81


@pytest.fixture(scope="module")
def stroke():
    return extension_stroke(M, TAU, L1, L2, L3, A0, A1)


def test_takeoff_velocity_is_the_energy_balance(stroke):
    # Four motors do 4 tau (alpha1 - alpha0) of work on a massless leg: kinetic plus potential.
    dy = height(A1, L1, L2, L3) - height(A0, L1, L2, L3)
    v = np.sqrt(2 * (4 * TAU * (A1 - A0) - M * G * dy) / M)
    assert_close(stroke.takeoff_velocity, v, atol=1e-7)  # solve_ivp at rtol 1e-10: ~1e-9 m/s


def test_takeoff_clears_the_seed_requirement(stroke):
    # the thesis chapter's "about 4.6 m/s"; eq. 2.35 with these numbers gives 4.42 m/s (the energy balance above).
    assert 4.3 < stroke.takeoff_velocity < 4.7
    assert stroke.takeoff_velocity > stroke.requirement(0.3)
    assert stroke.requirement(0.3) == pytest.approx(2.943)


def test_stroke_ends_at_alpha1_and_extends_monotonically(stroke):
    assert stroke.alpha[0] == A0 and stroke.alpha[-1] == A1
    assert stroke.alpha_dot[0] == 0.0
    assert np.all(np.diff(stroke.alpha) > 0) and np.all(np.diff(stroke.height) > 0)
    # The same expression evaluated twice.
    assert_close(stroke.stroke_height, height(A1, L1, L2, L3) - height(A0, L1, L2, L3), atol=1e-15)
    assert stroke.apex_height(0.3) == pytest.approx(stroke.stroke_height + 0.5 * G * 0.09)


def test_more_torque_jumps_faster():
    weak = extension_stroke(M, 10.0, L1, L2, L3, A0, A1)
    strong = extension_stroke(M, 17.0, L1, L2, L3, A0, A1)
    assert strong.takeoff_velocity > weak.takeoff_velocity and strong.duration < weak.duration


def test_bad_strokes_are_rejected():
    with pytest.raises(ValueError, match="must exceed"):
        extension_stroke(M, TAU, L1, L2, L3, A1, A0)
    with pytest.raises(ValueError, match="reachable range"):
        extension_stroke(M, TAU, L1, L2, L3, A0, np.radians(280.0))
    with pytest.raises(ValueError, match="cannot close"):
        extension_stroke(M, TAU, L1, L2, 0.2, A0, A1)
    with pytest.raises(ValueError, match="cannot lift"):
        extension_stroke(M, 0.5, L1, L2, L3, np.radians(240.0), A1)
    with pytest.raises(ValueError, match="mass"):
        extension_stroke(-1.0, TAU, L1, L2, L3, A0, A1)
