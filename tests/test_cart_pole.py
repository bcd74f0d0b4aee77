"""The cart-pole and the double pendulum on a cart: LQR from linearize, checked against its own design."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from crossdyn.experiments import cart_pole
from crossdyn.experiments.common.cart_chain import DECAY_TOL, balance, step
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.regulator import Regulator, measured_decay, regulator
from crossdyn.experiments.double_pendulum_cart import WEIGHTS as DOUBLE_WEIGHTS


@pytest.mark.parametrize("mjcf, weights, angle", [("cart_pole", cart_pole.WEIGHTS, 0.2),
                                                   ("double_pendulum_cart", DOUBLE_WEIGHTS, np.radians(5.0))])
def test_the_measured_decay_is_the_designed_slowest_pole(mjcf, weights, angle):
    reg = cart_pole.design({}, mjcf, weights)
    trace = balance(reg, angle, 8.0, mjcf)
    # The bar is 10 %; the sampled loop at 2 ms moves the poles by O(dt |lambda|) < 1 %,
    # and the nonlinearity has died out by 1 s (measured: 0.3 % and 0.1 %).
    assert measured_decay(trace, reg, start=1.0) == pytest.approx(reg.slowest.real, rel=0.02)
    assert np.abs(trace.qpos[-1]).max() < 1e-2


def test_a_design_on_the_wrong_model_is_caught():
    """Designed on a cart-pole whose pole is five times as heavy, run on the real one: the loop is still
    stable, but its slowest mode no longer decays at the rate the (wrong) design predicts (-0.86 1/s
    measured against -1.24 designed).  A pole only twice as heavy moves it by under 1 %: LQR is robust."""
    model = load_model("cart_pole")
    wrong = copy.copy(model)
    wrong.body_mass[model.body("pole").id] *= 5.0
    wrong.body_inertia[model.body("pole").id] *= 5.0
    w = cart_pole.WEIGHTS
    believed = regulator(wrong, [w["q_x"], w["q_angle"], w["q_xd"], w["q_angled"]], w["r"], keyframe="upright")
    ran = Regulator(cart_pole.design({}).linearization, believed.design)  # the true model, the wrong gains
    trace = balance(ran, 0.2, 8.0, cart_pole.MODEL)
    assert trace.stopped is None
    measured = measured_decay(trace, ran, start=1.0)
    assert abs(measured - believed.slowest.real) > DECAY_TOL * abs(believed.slowest.real)


def test_the_step_is_tracked_without_overshoot():
    reg = cart_pole.design({})
    stepped = step(reg, 0.5, 8.0, cart_pole.MODEL)
    assert stepped.qpos[-1, 0] == pytest.approx(0.5, abs=2e-3)
    assert np.all(stepped.qpos[stepped.t < 0.5, 0] == 0.0)  # the target moves at 0.5 s


def test_the_hand_model_is_read_from_the_mjcf():
    p = cart_pole.cart_pole_params(load_model("cart_pole"))
    assert (p.m_cart, p.m_pole, p.lc, p.g) == (1.0, 0.1, 0.5, 9.81)
    assert p.inertia == pytest.approx(0.1 * 1.0**2 / 12, rel=1e-12)  # a uniform 1 m rod
