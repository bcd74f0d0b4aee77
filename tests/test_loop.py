"""The generic closed loop: any MJCF, any controller; what it records, when it stops, how a controller fails."""

from __future__ import annotations

import control
import mujoco
import numpy as np
import pytest

import crossdyn
from crossdyn import Trace, linearize, simulate
from crossdyn.experiments.core.errors import ControllerError, ParameterError, StateError
from crossdyn.experiments.core.models import load_model
from support import assert_close

CART_POLE = load_model("cart_pole")
H = CART_POLE.opt.timestep


def lqr_gain():
    lin = linearize(CART_POLE, keyframe="upright")
    K, _, _ = control.lqr(lin.ss(), np.diag([1.0, 10.0, 1.0, 1.0]), [[0.1]])
    return lin, K


def test_lqr_from_linearize_balances_the_cart_pole():
    lin, K = lqr_gain()
    trace = simulate(CART_POLE, lambda t, obs: -K @ lin.deviation(obs.qpos, obs.qvel), 6.0, qpos=[0.0, 0.2],
                     control_dt=0.01)
    assert isinstance(trace, Trace) and trace.stopped is None
    n = 600
    assert trace.t.shape == (n,) and trace.qpos.shape == (n, 2) and trace.qvel.shape == (n, 2)
    assert trace.ctrl.shape == (n, 1) and trace.command.shape == (n, 1) and trace.sensordata.shape == (n, 4)
    assert_close(trace.t, 0.01 * np.arange(n), atol=1e-9, what="one row per control step")
    assert np.abs(trace.qpos[-1]).max() < 0.02 and abs(trace.qpos[0, 1] - 0.2) < 1e-15
    # The first row is the initial state and the control computed from it.
    assert_close(trace.command[0], -K @ np.r_[0.0, 0.2, 0.0, 0.0], atol=1e-12, what="first command")
    # What the controller saw: MuJoCo's sensors (no imperfections), the joint positions here.
    assert_close(trace.sensor("pole_angle")[0], [0.2], atol=0, what="sensor at t = 0")


def test_a_dict_of_controls_by_actuator_name():
    trace = simulate(CART_POLE, lambda t, obs: {"push": 2.0}, 0.1)
    assert np.all(trace.ctrl == 2.0)


def test_same_inputs_same_trace():
    lin, K = lqr_gain()
    runs = [simulate(CART_POLE, lambda t, obs: -K @ lin.deviation(obs.qpos, obs.qvel), 1.0, qpos=[0.1, -0.1])
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].qpos, runs[1].qpos)


def test_stop_ends_the_run_with_its_reason_and_keeps_the_rows():
    trace = simulate(CART_POLE, lambda t, obs: np.zeros(1), 5.0, qpos=[0.0, 0.05],
                     stop=lambda obs: "fell" if abs(obs.qpos[1]) > 0.5 else None)
    assert trace.stopped == "fell"
    assert abs(trace.qpos[-1, 1]) > 0.5 >= np.abs(trace.qpos[:-1, 1]).max()  # the row that met it is the last
    assert trace.t[-1] < 5.0


def test_record_logs_views_of_mujocos_data():
    trace = simulate(CART_POLE, lambda t, obs: np.ones(1), 0.2, record={"tip": lambda m, d: d.site_xpos[0]})
    tip = trace.extra["tip"]
    assert tip.shape == (100, 3)
    # The pole's tip, 1 m up the pole from the cart.  MuJoCo computed it during the last physics step: RK4's
    # last evaluation is at its fourth stage, h k3 from the start, which differs from the pose reached by
    # O(h^2 |qdd|) ~ 1e-8 m here (Euler's would be the step's start, one step behind).
    x, theta = trace.qpos.T
    assert_close(tip[0, 0], x[0] + np.sin(theta[0]), atol=1e-12, what="tip x at t = 0")
    assert_close(tip[:, 0], x + np.sin(theta), atol=1e-7, what="tip x")
    # A computed value is called each step and copied: the same tip, doubled.
    twice = simulate(CART_POLE, lambda t, obs: np.ones(1), 0.2, record={"copy": lambda m, d: d.site_xpos[0] * 2})
    assert_close(twice.extra["copy"], 2 * tip, atol=1e-15, what="a computed record, step by step")


def test_a_controller_object_may_write_its_command_and_start():
    class Direct:
        started = None

        def start(self, model, data):
            self.started = model.nu

        def write_command(self, t, sensed, command):
            command[0] = 1.5
            return t < 0.05  # False: stop as diverged

    direct = Direct()
    trace = simulate(CART_POLE, direct, 1.0)
    assert direct.started == 1 and np.all(trace.ctrl == 1.5) and trace.stopped == "diverged"
    assert trace.t[-1] < 0.05


class Writer:
    """Writes its command itself (a CommandWriter) and is callable too: the loop runs it as the writer it declares."""

    calls = 0

    def __call__(self, t, obs):
        self.calls += 1
        return np.zeros(1)

    def write_command(self, t, sensed, command):
        command[0] = 0.5
        return True


class Compiled(Writer):
    """The compiled kind's methods, without a C step: no run gets so far as to call them."""

    def step_address(self, sensed, command):
        return 0

    def failed(self, result, t, command):
        raise AssertionError("not called")


def test_the_loop_runs_a_controller_as_the_kind_it_declares():
    from crossdyn.experiments.core.loop.kinds import CommandWriter, CompiledController, Controller, kind_of

    assert kind_of(lambda t, obs: np.zeros(1)) is Controller
    assert kind_of(Writer()) is CommandWriter and kind_of(Compiled()) is CompiledController
    assert kind_of(crossdyn.regulator(CART_POLE, Q=[1, 10, 1, 1], R=0.1, keyframe="upright")) is CommandWriter
    writer = Writer()
    trace = simulate(CART_POLE, writer, 0.05)
    assert writer.calls == 0 and np.all(trace.command == 0.5)  # written in place, never called
    for nothing in (3, "push", None):
        with pytest.raises(ParameterError, match="controller must be a function"):
            simulate(CART_POLE, nothing, 0.05)


@pytest.mark.parametrize("controller, message", [
    (lambda t, obs: np.zeros(3), r"returned shape \(3,\) at control step 0 \(t = 0 s\); expected \(1,\)"),
    (lambda t, obs: "push", r"returned shape \(\) at control step 0|returned a str"),
    (lambda t, obs: {"pull": 1.0}, r"control for 'pull' at control step 0 .* the actuators are push"),
    (lambda t, obs: np.array([np.nan]) if t > 0.01 else np.zeros(1),
     r"non-finite control at control step 6 \(t = 0.012 s\)"),
    (lambda t, obs: 1 / 0 if t > 0.004 else np.zeros(1), r"raised ZeroDivisionError at control step 3 \(t = 0.006 s\)"),
    (lambda t, obs: exit(0), r"called sys.exit\(0\) at control step 0"),
    (lambda t, obs: obs.sensor("gyro"), r"raised KeyError at control step 0 .*no sensor 'gyro'"),
])
def test_a_failing_controller_names_the_step_and_time(controller, message):
    with pytest.raises(ControllerError, match=message):
        simulate(CART_POLE, controller, 0.1)


def test_mujoco_warnings_are_kept_not_printed(capfd):
    with pytest.raises(ControllerError):
        simulate(CART_POLE, lambda t, obs: np.array([np.inf]), 0.1)
    assert "WARNING" not in capfd.readouterr().out + capfd.readouterr().err


@pytest.mark.parametrize("kwargs, error, message", [
    ({"control_dt": 0.003}, ParameterError, "not a multiple of the model's time step"),
    ({"control_dt": -1.0}, ParameterError, "positive time"),
    ({"keyframe": "nope"}, ParameterError, "no keyframe 'nope'"),
    ({"qpos": [0.0]}, StateError, "qpos must have 2 entries"),
    ({"qvel": [np.inf, 0.0]}, StateError, "non-finite"),
])
def test_bad_arguments_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        simulate(CART_POLE, lambda t, obs: np.zeros(1), 0.1, **kwargs)
    with pytest.raises(ParameterError, match="duration"):
        simulate(CART_POLE, lambda t, obs: np.zeros(1), float("nan"))


def test_a_free_floating_body():
    """Any model: a box in free fall under a thruster that cancels gravity stays put."""
    model = mujoco.MjModel.from_xml_string("""
    <mujoco><worldbody><body name="box" pos="0 0 1"><freejoint/><site name="c"/>
      <geom type="box" size=".1 .1 .1" mass="2"/></body></worldbody>
      <actuator><motor name="lift" site="c" gear="0 0 1 0 0 0"/></actuator></mujoco>""")
    trace = simulate(model, lambda t, obs: np.array([2 * 9.81]), 1.0)
    assert trace.qpos.shape == (500, 7) and trace.qvel.shape == (500, 6)
    assert_close(trace.qpos[-1, :3], [0.0, 0.0, 1.0], atol=1e-9, what="hovering")
