"""What the loop tells: the control MuJoCo applied (after ctrlrange) beside the one asked, the saturated steps,
per-step computed records, and a decay rate measured above the sensors' noise floor."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from crossdyn import simulate
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.imperfections import SensorNoise
from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.core.regulator import measured_decay, regulator
from support import assert_close

CART_POLE = load_model("cart_pole")  # its motor 'push' is limited to +-20 N


def test_trace_ctrl_is_what_mujoco_applied_and_command_what_was_asked():
    trace = simulate(CART_POLE, lambda t, obs: np.array([35.0 if t < 0.05 else 5.0]), 0.1, control_dt=0.01)
    assert_close(trace.command[:, 0], np.where(trace.t < 0.05, 35.0, 5.0), atol=0, what="asked")
    assert_close(trace.ctrl[:, 0], np.where(trace.t < 0.05, 20.0, 5.0), atol=0, what="applied (ctrlrange 20 N)")
    assert trace.saturated.tolist() == [5]
    assert trace.saturation() == "saturated (clamped to ctrlrange): 'push' 5 of 10 steps"
    # The cart's acceleration agrees with the applied force, not the asked one: MuJoCo clamps as the trace says.
    free = simulate(CART_POLE, lambda t, obs: np.array([20.0]), 0.05, control_dt=0.01)
    assert_close(trace.qvel[:5], free.qvel, atol=0, what="35 N asked moves the cart as 20 N applied")


def test_an_unlimited_control_is_neither_clamped_nor_counted():
    model = load_model("cart_pole")
    model.actuator_ctrllimited[:] = 0
    trace = simulate(model, lambda t, obs: np.array([35.0]), 0.02)
    assert np.all(trace.ctrl == 35.0) and not trace.saturated.any() and trace.saturation() == ""


def test_record_copies_a_per_step_computed_value():
    trace = simulate(CART_POLE, lambda t, obs: np.zeros(1), 0.2, qpos=[0.0, 0.3],
                     record={"height": lambda m, d: d.site_xpos[0, 2] - d.xpos[1, 2], "angle": lambda m, d:
                             float(d.qpos[1])})
    assert trace.extra["height"].shape == (100,) and trace.extra["angle"].shape == (100,)
    # Recorded after the last physics step of the row's start (see the module docstring of the loop): the
    # angle is that step's qpos; the tip height above the cart is cos(angle) of a 1 m pole, to round-off.
    assert_close(trace.extra["angle"], trace.qpos[:, 1], atol=0, what="recorded angle, each step")
    assert len(set(trace.extra["angle"].tolist())) > 90  # a fresh value each step, not the first one kept
    assert_close(trace.extra["height"][0], np.cos(0.3), atol=1e-12, what="tip above the cart at t = 0")


@pytest.mark.parametrize("fn, message", [
    (lambda m, d: d.qpos[: 1 + int(d.time > 0.01)] * 1.0, r"record\['x'\] returned shape \(2,\) at control step"),
    (lambda m, d: "high", r"record\['x'\] returned str"),
    (lambda m, d: 1 / 0 if d.time > 0.01 else 0.0, r"record\['x'\] raised ZeroDivisionError at control step"),
])
def test_a_bad_record_function_is_named(fn, message):
    with pytest.raises(ParameterError, match=message):
        simulate(CART_POLE, lambda t, obs: np.zeros(1), 0.1, record={"x": fn})


def noisy_run(std: float, duration: float):
    """An LQR reading the cart's position and the pole's angle through sensors with white noise of ``std``."""
    reg = regulator(CART_POLE, [100.0, 100.0, 1.0, 1.0], 0.01, keyframe="upright")
    lin, K = reg.linearization, reg.design.K
    trace = simulate(CART_POLE, lambda t, obs: lin.ctrl - K @ obs.sensordata, duration, keyframe="upright",
                     qpos=[0.0, 0.2], control_dt=0.01, seed=0,
                     imperfections=[SensorNoise("cart_pos", std=std), SensorNoise("pole_angle", std=std)])
    return reg, trace


def test_measured_decay_stops_at_the_noise_floor():
    reg, trace = noisy_run(2e-3, 6.0)
    designed = reg.slowest.real
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the window found above the floor: no warning
        measured = measured_decay(trace, reg)
    # Above the floor the nonlinear, sampled loop follows the designed mode: 0.1 % here, 5 % allowed for the
    # noise left a decade above the floor.
    assert abs(measured - designed) < 0.05 * abs(designed), (measured, designed)
    # The same fit over every row down to 1e-9 of the largest is pulled to the noise (-0.87 against -2.52).
    flat = measured_decay(trace, reg, floor=1e-9, noise_floor=False)
    assert abs(flat - designed) > 0.3 * abs(designed), (flat, designed)


def test_measured_decay_warns_when_its_window_sits_on_the_floor():
    reg, trace = noisy_run(2e-3, 6.0)
    with pytest.warns(RuntimeWarning, match="noise floor"):
        measured_decay(trace, reg, start=4.0)
