"""Models whose actuators act late (MuJoCo's actuator ``delay``): linearized, designed for and tuned, never B = 0.

The cart-pole of mjcf/ with every actuator given a delay:

- ``linearize`` differentiates with the delay taken out, so ``B`` is the undelayed model's (with it in,
  a command changes nothing at once and B had been 0), and measures how late a command acts in
  MuJoCo's own steps: Euler reads the ZOH history at the step's start (a whole number of steps);
  RK4 at each stage, so a sixth of a command acts a step early (``D - h/6`` on average);
- ``discrete(h)`` carries the commands in flight as states and predicts MuJoCo's delayed steps;
  ``ss()`` refuses (a continuous state space has no finite state for a delay);
- ``hold_with_delay`` is the zero-order hold at no delay and the shift register at whole periods;
- ``regulator(dt=)`` designed for a 50 ms delay holds the pole where the design that ignores it
  (the continuous one, which says so) oscillates away;
- ``identify --fit delay`` then ``tune --vary-from`` runs (it had exited 2 blaming the LQR weights).
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import mujoco
import numpy as np
import pytest

from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.identify.logs import write_log
from crossdyn.experiments.core.identify.record import multisine, record
from crossdyn.experiments.core.linearize import hold_with_delay, linearize, undelayed
from crossdyn.experiments.core.models import model_path
from crossdyn.experiments.core.regulator import _with_delay, regulator, zero_order_hold


def _delayed(delay: float, integrator: str = "RK4") -> mujoco.MjModel:
    spec = mujoco.MjSpec.from_file(str(model_path("cart_pole")))
    spec.option.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator}")
    for actuator in spec.actuators:
        actuator.delay, actuator.nsample = delay, int(round(delay / spec.option.timestep)) + 2
    return spec.compile()


@pytest.mark.parametrize(("integrator", "delay", "expected"), [
    ("EULER", 0.004, 0.004),  # two whole 2 ms steps
    ("EULER", 0.003, 0.004),  # the history is held: a 3 ms delay reads the command of two steps before
    ("RK4", 0.004, 0.004 - 0.002 / 6),  # the last stage reads t + h - D: a sixth of it a step early
])
def test_a_delayed_model_is_linearized_with_its_delay_measured(integrator, delay, expected):
    model = _delayed(delay, integrator)
    lin = linearize(model, keyframe="upright", ctrl="hold")
    plain = linearize(undelayed(model), keyframe="upright", ctrl="hold")
    assert np.abs(lin.B).max() > 0.5  # N -> m/s^2: the cart's 1/mass, never 0
    np.testing.assert_allclose(lin.B, plain.B, rtol=1e-12, atol=0)
    np.testing.assert_allclose(lin.A, plain.A, rtol=1e-12, atol=0)
    assert lin.delay == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ParameterError, match="no finite state for a delay"):
        lin.ss()


@pytest.mark.parametrize(("integrator", "tolerance"), [("EULER", 1e-4), ("RK4", 5e-3)])
def test_the_discrete_model_predicts_mujocos_delayed_steps(integrator, tolerance):
    """Random commands about the upright pose: velocities from MuJoCo's steps and the delayed discrete model.

    Euler's velocity update is the hold's to first order in the step (1e-4 over 60 steps); RK4 reads a
    command at its stages where the hold splits it by the measured fraction (0.2 %)."""
    model = _delayed(0.004, integrator)
    lin = linearize(model, keyframe="upright", ctrl="hold")
    Ad, Bd = lin.discrete(model.opt.timestep)
    assert Ad.shape == (4 + 2, 4 + 2) and Bd.shape == (6, 1)  # the state and two commands in flight
    key = model.key("upright").id
    data = mujoco.MjData(model)
    for _ in range(10):  # the history full of the holding command
        data.qpos[:], data.qvel[:], data.ctrl[:] = model.key_qpos[key], 0.0, lin.ctrl
        mujoco.mj_step(model, data)
    data.qpos[:], data.qvel[:] = model.key_qpos[key], 0.0
    z, worst = np.zeros(6), 0.0
    for k, u in enumerate(np.random.default_rng(0).normal(0.0, 0.5, 60)):
        data.ctrl[:] = lin.ctrl + u
        mujoco.mj_step(model, data)
        z = Ad @ z + Bd @ np.array([u])
        if k > 5:
            worst = max(worst, float(np.abs(data.qvel - z[2:4]).max() / np.abs(data.qvel).max()))
    assert worst < tolerance


def test_hold_with_delay_is_the_hold_and_the_shift_register_it_extends():
    A = np.array([[0.0, 1.0], [3.0, -0.5]])
    B = np.array([[0.0], [2.0]])
    for got, want in ((hold_with_delay(A, B, 0.01, 0.0), zero_order_hold(A, B, 0.01)),
                      (hold_with_delay(A, B, 0.01, 0.03), _with_delay(*zero_order_hold(A, B, 0.01), 3))):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-15)
    # A pure integrator (A = 0) takes each command for exactly a period, split by the fraction: 0.3 of
    # the older one and 0.7 of the newer for a delay of 1.3 periods.
    Ad, Bd = hold_with_delay(np.zeros((1, 1)), np.ones((1, 1)), 1.0, 1.3)
    np.testing.assert_allclose(Ad, [[1.0, 0.3, 0.7], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]], atol=1e-15)
    np.testing.assert_allclose(Bd, [[0.0], [0.0], [1.0]], atol=1e-15)


def _final_tilt(reg, model: mujoco.MjModel, seconds: float = 5.0) -> float:
    data = mujoco.MjData(model)
    data.qpos[:] = model.key_qpos[model.key("upright").id]
    data.qpos[1] += 0.05
    mujoco.mj_forward(model, data)
    reg.start(model, data)
    worst = 0.0
    for _ in range(int(seconds / model.opt.timestep)):
        data.ctrl[:] = reg(data.time, data)
        mujoco.mj_step(model, data)
        if data.time > seconds - 1.0:
            worst = max(worst, abs(float(data.qpos[1])))
    return worst


def test_a_design_for_the_delay_holds_the_pole_where_ignoring_it_does_not():
    model = _delayed(0.05)
    aware = regulator(model, [10, 100, 1, 1], 0.01, keyframe="upright", dt=model.opt.timestep)
    assert aware.delay == 25  # 50 ms less a sixth of a 2 ms step: 24 whole periods and a fraction
    with pytest.warns(RuntimeWarning, match="act 49.67 ms late"):
        naive = regulator(model, [10, 100, 1, 1], 0.01, keyframe="upright", dt=0)
    assert _final_tilt(aware, model) < 1e-3  # rad, over the last second
    assert _final_tilt(naive, model) > 1e-2


def _main(args: list[str]) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        code = main(args)
    return code, printed.getvalue()


def test_a_fitted_delay_is_tuned_over(tmp_path):
    """identify --fit delay writes MuJoCo's actuator delay; tune --vary-from designs and runs on it."""
    robot = mujoco.MjModel.from_xml_path(str(model_path("cart_pole")))
    dt = robot.opt.timestep
    t = np.arange(0.0, 3.0 + dt / 2, dt)
    rng = np.random.default_rng(1)
    reference = multisine(t, 0.3, rng.uniform(0.2, 2.0, 5), rng.uniform(0, 2 * np.pi, 5))
    time, columns = record(robot, lambda s, r: np.array([20.0 * (reference[min(int(round(s / dt)), t.size - 1)]
                                                                  - r.qpos[0])]),
                           3.0, noise={"qpos:*": 5e-4}, delay=0.006, signals=["qpos:cart", "qpos:pole"],
                           qpos=np.array([0.0, np.pi]))
    log = write_log(tmp_path / "robot.csv", time, columns)
    code, printed = _main(["identify", "--mjcf", "cart_pole", "--log", str(log), "--fit", "delay",
                           "--noise", "qpos:*=5e-4", "--out", str(tmp_path / "identified")])
    assert code == 0, printed
    fitted = json.loads((tmp_path / "identified" / "identified.json").read_text())["parameters"][0]
    assert fitted["low"] <= 0.006 <= fitted["high"], fitted
    code, printed = _main(["tune", "cart-pole-lqr", "--vary", "r=0.05:0.5:log", "--samples", "1", "--short",
                           "--workers", "1", "--vary-from", str(tmp_path / "identified" / "identified.json"),
                           "--out", str(tmp_path / "tune"), "--no-progress"])
    assert code in (0, 1), printed  # judged runs: never a refusal blaming the weights
    assert "LQR weights" not in printed
