"""The regulator's in-place path (write_command, what simulate runs) gives the same numbers as calling it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from crossdyn.experiments.cart_pole import design
from crossdyn.experiments.core.imperfections import ActuatorLag, Delay, SensorNoise
from crossdyn.experiments.core.loop.simulate import simulate
from crossdyn.experiments.core.models import load_model

CART_POLE = load_model("cart_pole")


@pytest.mark.parametrize("target", [None, [0.3, 0.0]])
@pytest.mark.parametrize("imperfections", [[], [SensorNoise("pole_angle", std=1e-3), Delay(2),
                                                ActuatorLag("push", 0.02)]])
def test_simulate_with_a_regulator_equals_calling_it_bit_for_bit(target, imperfections):
    reg = design({}) if target is None else design({}).to(target)
    fast = simulate(CART_POLE, reg, 0.4, keyframe="upright", qpos=[0.0, 0.1], imperfections=imperfections, seed=3)
    slow = simulate(CART_POLE, lambda t, obs: reg(t, obs), 0.4, keyframe="upright", qpos=[0.0, 0.1],
                    imperfections=imperfections, seed=3)
    for name in ("qpos", "qvel", "command", "ctrl", "sensordata"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)


def test_the_check_can_fail_a_changed_gain_changes_the_trace():
    reg = design({})
    other = design({"r": 0.11})
    a = simulate(CART_POLE, reg, 0.2, keyframe="upright", qpos=[0.0, 0.1])
    b = simulate(CART_POLE, lambda t, obs: other(t, obs), 0.2, keyframe="upright", qpos=[0.0, 0.1])
    assert not np.array_equal(a.command, b.command)


def test_a_regulator_still_pickles_and_runs_after():
    reg = pickle.loads(pickle.dumps(design({})))
    trace = simulate(CART_POLE, reg, 0.2, keyframe="upright", qpos=[0.0, 0.1])
    assert trace.stopped is None and np.isfinite(trace.command).all()
