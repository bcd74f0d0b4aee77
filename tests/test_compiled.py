"""The compiled step (``crossdyn.controllers.biped.compiled``) equals the readable estimator and controller.

Equal bit for bit, not to a tolerance: the port does the same float operations in
the same order, and the math functions it calls (sin, cos, tan, atan2, asin,
sqrt) are the C library's in both.  Both are driven with the same MuJoCo sensor
arrays, recorded from closed-loop runs that visit every branch: balance with a
push, a jump through all its phases, velocity, heading and height references
together, and a turn past +-180 deg (the yaw unwrapping).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from biped_scenarios import branch_scenarios
from crossdyn.controllers.biped import compiled
from crossdyn.controllers.biped.controller import BipedController
from crossdyn.controllers.biped.estimation import Estimator
from crossdyn.experiments.biped import closed_loop, scenarios
from crossdyn.experiments.biped.closed_loop import geometry, make_controller, simulate_scenario
from crossdyn.experiments.biped.model import HIPS, nominal_params


@pytest.fixture(scope="module", params=list(branch_scenarios(push_after=1.0)), ids=lambda c: c[0])
def recorded(request):
    """A readable-path run's sensor arrays, and per step its time, reference, estimate and command."""
    name, sc, jump = request.param
    model = scenarios.robot()
    controller = make_controller(nominal_params(), sc.control_period, jump=jump)
    arrays, steps = [], []
    read = closed_loop.Sensors.read

    def recording_read(self, sensordata):
        arrays.append(sensordata.copy())
        return read(self, sensordata)

    def recording(t, est, ref):
        cmd = controller(t, est, ref)
        steps.append((t, ref, est, cmd))
        return cmd

    closed_loop.Sensors.read = recording_read
    try:
        trace = simulate_scenario(model, sc, recording, compiled=False)
    finally:
        closed_loop.Sensors.read = read
    assert not trace.fell
    return name, sc, jump, model, arrays[: len(steps)], steps


def _index(model) -> np.ndarray:
    actuators = [model.actuator(f"{s}_wheel").id for s in ("left", "right")] + [model.actuator(h).id for h in HIPS]
    return np.array(closed_loop.Sensors(model).indices + tuple(actuators), dtype=np.int64)


def _run_compiled(sc, jump, model, arrays, steps, perturb=None):
    """The compiled step over the recorded arrays: per step the ctrl array and the log row."""
    controller = make_controller(nominal_params(), sc.control_period, jump=jump)
    params, powers, state = compiled.pack(controller, geometry(nominal_params()))
    if perturb is not None:
        params[perturb] *= 1 + 1e-12
    index, ctrl, log = _index(model), np.zeros(model.nu), np.empty((len(steps), compiled.LOG_WIDTH))
    controls = []
    for i, (sensordata, (t, ref, _, _)) in enumerate(zip(arrays, steps, strict=True)):
        height = np.nan if ref.height is None else ref.height
        assert compiled.step(t, ref.velocity, ref.yaw, height, sensordata, index, ctrl, params, powers, state, log, i)
        controls.append(ctrl.copy())
    return np.array(controls), log


def _readable(model, steps):
    """The classes' torques as ctrl arrays and their log rows (closed_loop's columns, then the phase's number)."""
    index = _index(model)[compiled.SENSORS:]
    controls, rows = [], []
    for _, ref, est, cmd in steps:
        ctrl = np.zeros(model.nu)
        ctrl[index] = (*cmd.wheels, *cmd.hips)
        controls.append(ctrl)
        rows.append((est.x, est.xd, est.pitch, *est.height, *est.alpha, *cmd.wheels, *cmd.legs, cmd.wheel_total,
                     ref.velocity, ref.yaw, np.nan if ref.height is None else ref.height,
                     [p.value for p in compiled.PHASES].index(cmd.phase)))
    return np.array(controls), np.array(rows)


def test_step_equals_the_classes_bit_for_bit(recorded):
    name, sc, jump, model, arrays, steps = recorded
    got_ctrl, got_log = _run_compiled(sc, jump, model, arrays, steps)
    want_ctrl, want_log = _readable(model, steps)
    np.testing.assert_array_equal(got_ctrl, want_ctrl, err_msg=f"{name}: motor torques")
    np.testing.assert_array_equal(got_log, want_log, err_msg=f"{name}: estimate, command and phase")
    if jump is not None:
        assert set(got_log[:, -1].astype(int)) == set(range(len(compiled.PHASES)))  # every phase visited
    if name == "turn-past-pi":
        yaw = np.array([est.yaw for _, _, est, _ in steps])
        assert yaw.max() > np.pi + 0.1  # unwrapped past +pi: the turn counting ran


def test_a_perturbed_gain_is_caught(recorded):
    """The comparison can fail: a swing gain off by one part in 10^12 changes the hip torques."""
    name, sc, jump, model, arrays, steps = recorded
    got_ctrl, _ = _run_compiled(sc, jump, model, arrays, steps, perturb=compiled.P_SWING_KP)
    want_ctrl, _ = _readable(model, steps)
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(got_ctrl, want_ctrl)


def test_estimate_equals_the_estimator(recorded):
    name, sc, jump, model, arrays, steps = recorded
    params, state = compiled.pack_estimator(geometry(nominal_params()))
    index, buffer = _index(model)[: compiled.SENSORS], np.empty(compiled.ESTIMATE)
    estimator = Estimator(geometry(nominal_params()))
    sensors = closed_loop.Sensors(model)
    for sensordata, (_, _, est, _) in zip(arrays, steps, strict=True):
        assert compiled.estimate(sensordata, index, params, state, buffer)
        got = compiled.as_estimate(buffer.tolist())
        assert got == estimator.update(*sensors.read(sensordata)) == est


def test_a_non_finite_reading_writes_nothing():
    model = scenarios.robot()
    controller = make_controller(nominal_params(), scenarios.CONTROL_PERIOD)
    params, powers, state = compiled.pack(controller, geometry(nominal_params()))
    sensordata = np.full(model.nsensordata, 0.1)
    sensordata[model.sensor("imu_gyro").adr[0]] = np.nan
    ctrl, log, before = np.full(model.nu, 7.0), np.full((1, compiled.LOG_WIDTH), 7.0), state.copy()
    assert not compiled.step(0.0, 0.0, 0.0, np.nan, sensordata, _index(model), ctrl, params, powers, state, log, 0)
    assert (ctrl == 7.0).all() and (log == 7.0).all()
    np.testing.assert_array_equal(state, before)


def _same_trace(a, b) -> list[str]:
    """Names of the Trace fields that differ (arrays compared exactly, NaN equal to NaN)."""
    differ = []
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            same = x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
        else:
            same = x == y
        if not same:
            differ.append(f.name)
    return differ


@pytest.mark.parametrize("user_function", [False, True], ids=["built-in", "user-function"])
def test_simulate_compiled_is_the_readable_path(user_function):
    """A jump run with the built-in controller (compiled step) or a user's function (compiled
    estimate) gives the trace and the controller state of the readable path."""
    _, sc, jump = list(branch_scenarios(push_after=1.0))[1]
    model = scenarios.robot()
    controllers = [make_controller(nominal_params(), sc.control_period, jump=jump) for _ in range(2)]
    runs = [c if not user_function else (lambda t, est, ref, c=c: c(t, est, ref)) for c in controllers]
    readable = simulate_scenario(model, sc, runs[0], compiled=False)
    fast = simulate_scenario(model, sc, runs[1])
    assert _same_trace(readable, fast) == []
    a, b = controllers
    assert (a.x_ref, a.height_ref, a.machine.phase, a.machine._since, a.machine._done, a.machine.transitions) == \
        (b.x_ref, b.height_ref, b.machine.phase, b.machine._since, b.machine._done, b.machine.transitions)
    assert len(a.machine.transitions) == 6  # crouch, thrust, retract, flight, landing, balance


def test_a_subclass_runs_its_own_call():
    """A BipedController subclass may override __call__: simulate_scenario runs it, not the compiled copy."""

    class Lazy(BipedController):
        def __call__(self, t, est, ref):
            cmd = super().__call__(t, est, ref)
            return cmd._replace(hips=(0.0, 0.0, 0.0, 0.0))  # legs go limp: the robot sinks

    p = nominal_params()
    base = make_controller(p, scenarios.CONTROL_PERIOD)
    lazy = Lazy(base.params, base.geometry, base.gains, base.dt, base.hip_limit, base.wheel_limit)
    sc = scenarios.balance_scenario(5.0, 1.0)
    limp, upright = simulate_scenario(scenarios.robot(), sc, lazy), simulate_scenario(scenarios.robot(), sc, base)
    assert not np.array_equal(limp.height, upright.height)
