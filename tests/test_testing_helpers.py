"""crossdyn.testing's helper per check: the cart-pole's hand model passes each, and a slip in it fails
with the check's attribution in the AssertionError."""

from __future__ import annotations

import numpy as np
import pytest

import crossdyn.testing as testing
from crossdyn.analytic import cart_pole as cp
from crossdyn.experiments.cart_pole import cart_pole_params
from crossdyn.experiments.core.models import load_model

MODEL = load_model("cart_pole")
P = cart_pole_params(MODEL)
POLE = 1.0  # m, hinge to tip site (mjcf/cart_pole.xml)


def tip(q):
    x, theta = q
    c, s = np.cos(theta), np.sin(theta)
    return np.array([x + POLE * s, 0.0, POLE * c]), np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def tip_jacobian(q):
    theta = q[1]
    jac = np.zeros((6, 2))
    jac[:3, 0] = [1.0, 0.0, 0.0]
    jac[:3, 1] = [POLE * np.cos(theta), 0.0, -POLE * np.sin(theta)]
    jac[3:, 1] = [0.0, 1.0, 0.0]  # the pole turns about +y
    return jac


def energy(q, qd):
    kinetic = 0.5 * qd @ cp.mass_matrix(P, q) @ qd
    return kinetic, P.m_pole * P.g * P.lc * np.cos(q[1]) + 3.0  # a potential's constant is free


def forward(q, qd, tau):
    return np.linalg.solve(cp.mass_matrix(P, q), tau - cp.bias(P, q, qd))


def linearization(q, qd, u):
    return cp.linearize_upright(P)


def flipped(A_B):
    A, B = A_B
    A = A.copy()
    A[2:, :2] *= -1  # the gravity stiffness's sign slipped
    return A, B


CASES = {
    "assert_kinematics": (dict(site="tip"), tip,
                          lambda q: (tip(q)[0], tip(q)[1].T), "transpose"),
    "assert_jacobian": (dict(site="tip"), tip_jacobian,
                        lambda q: tip_jacobian(q) * [1.0, -1.0], "opposite sign"),
    "assert_mass_matrix": ({}, lambda q: cp.mass_matrix(P, q),
                           lambda q: cp.mass_matrix(P, q) - np.diag([0.0, P.inertia]), "M[pole, pole]"),
    "assert_bias": ({}, lambda q, qd: cp.bias(P, q, qd),
                    lambda q, qd: cp.bias(P, q, qd) * [1.0, -1.0], "pole"),
    "assert_energy": ({}, energy, lambda q, qd: (energy(q, qd)[0], -energy(q, qd)[1]), "potential"),
    "assert_forward_dynamics": ({}, forward, lambda q, qd, tau: forward(q, qd, -tau), "off"),
    "assert_linearization": (dict(keyframe="upright"), linearization,
                             lambda q, qd, u: flipped(linearization(q, qd, u)), "gravity-sign slip"),
}


@pytest.mark.parametrize("helper", sorted(CASES))
def test_each_helper_passes_the_hand_model_and_names_a_slip(helper):
    options, right, wrong, phrase = CASES[helper]
    if helper != "assert_linearization":
        options = {**options, "samples": 40}
    assert_ = getattr(testing, helper)
    report = assert_(right, MODEL, **options)
    assert report.passed is True
    with pytest.raises(AssertionError) as failed:
        assert_(wrong, MODEL, **options)
    message = str(failed.value)
    assert phrase in message, message  # the check's attribution reaches the assertion


def test_every_check_has_its_helper():
    assert set(testing.HELPERS) <= set(dir(testing))
    assert all(name in testing.__all__ for name in testing.HELPERS)
