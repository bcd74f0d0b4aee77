"""The pendulum (the guide "Add a system"'s worked example): its closed form against MuJoCo.

- The closed form agrees with ``mj_inverse`` to round-off over seeded random states.
- It is a second opinion: a centre of mass 10 % out is a mismatch, in the gravity and
  mass-matrix terms (the velocity term is zero on both sides).
- The numbers are read from the MJCF, not typed: they match the rod the file describes.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from crossdyn.analytic.pendulum import PendulumParams, inverse_dynamics
from crossdyn.experiments.core.checks.derivation import check_derivation
from crossdyn.experiments.core.errors import ModelError
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.pendulum import pendulum_params


def test_closed_form_agrees_with_mujoco():
    model = load_model("pendulum")
    report = check_derivation(partial(inverse_dynamics, pendulum_params(model)), model, samples=500, seed=1)
    assert report.passed, report.diagnosis
    assert report.max_abs_error < 1e-12  # round-off on torques of order m g lc = 0.5 N m


def test_a_wrong_length_is_caught():
    model = load_model("pendulum")
    p = pendulum_params(model)
    report = check_derivation(partial(inverse_dynamics, PendulumParams(p.m, 1.1 * p.lc, p.inertia, p.g)), model,
                              samples=200, seed=1)
    assert not report.passed
    assert set(report.failing_terms) == {"mass_matrix", "gravity"}


def test_numbers_are_the_mjcf_rods():
    p = pendulum_params(load_model("pendulum"))
    length, mass = 0.5, 0.2  # mjcf/pendulum.xml's uniform rod
    assert p.m == pytest.approx(mass) and p.lc == pytest.approx(length / 2)
    assert p.inertia == pytest.approx(mass * length**2 / 12, rel=1e-12)
    assert np.isclose(p.g, 9.81)


def test_a_model_that_is_not_a_pendulum_is_refused():
    with pytest.raises(ModelError, match="one hinge"):
        pendulum_params(load_model("cart_pole"))
