"""Generic imperfections: each against its own definition, on a cart-pole and an IMU rig, seeded."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from crossdyn.analytic.cart_pole import CartPoleParams, forward_dynamics
from crossdyn.analytic.rotation import euler_zyx
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.imperfections import (
    ActuatorLag,
    AttitudeFilter,
    Delay,
    FrictionScale,
    MassScale,
    Push,
    Quantization,
    SensorNoise,
    TorqueSpeedLimit,
)
from crossdyn.experiments.core.loop.simulate import simulate
from crossdyn.experiments.core.models import load_model
from support import assert_close

CART_POLE = load_model("cart_pole")
H = CART_POLE.opt.timestep


def still(t, obs):
    return np.zeros(1)


def pushing(value):
    return lambda t, obs: np.full(1, value)


def run(imperfections=(), controller=still, duration=1.0, seed=0, **kw):
    return simulate(CART_POLE, controller, duration, keyframe="upright", imperfections=imperfections, seed=seed, **kw)


def test_sensor_noise_has_the_deviation_and_bias_it_was_given():
    """The controller does not read the sensors, so the physics is the same and the difference is the noise."""
    clean = run(duration=20.0)
    noisy = run([SensorNoise("pole_angle", std=0.01, bias=0.05)], duration=20.0)
    np.testing.assert_array_equal(clean.qpos, noisy.qpos)
    noise = noisy.sensor("pole_angle")[:, 0] - clean.sensor("pole_angle")[:, 0]
    # 10,000 readings: the sample std's relative error is ~1/sqrt(2 N) = 0.7 %; the bar is 20 %, 3 % is 4 sigma.
    assert noise.std() == pytest.approx(0.01, rel=0.03)
    assert noise.mean() == pytest.approx(0.05, abs=4 * 0.01 / np.sqrt(noise.size))
    assert_close(noisy.sensor("cart_pos"), clean.sensor("cart_pos"), atol=0, what="other sensors untouched")


def test_a_drawn_bias_is_constant_within_a_run_and_seeded():
    def offset(seed):
        trace = run([SensorNoise("cart_vel", bias_std=0.1)], duration=0.1, seed=seed)
        return trace.sensor("cart_vel")[:, 0] - run(duration=0.1).sensor("cart_vel")[:, 0]

    a, b, c = offset(1), offset(1), offset(2)
    assert np.ptp(a) == 0 and a[0] != 0
    np.testing.assert_array_equal(a, b)
    assert a[0] != c[0]


def test_same_seed_same_trace_other_seed_other_noise():
    noise = [SensorNoise("pole_angle", std=0.02)]

    def feedback(t, obs):  # the noise reaches the physics through the controller
        return np.array([-20.0 * obs.sensor("pole_angle")[0]])

    a, b, c = (run(noise, feedback, seed=s) for s in (4, 4, 5))
    np.testing.assert_array_equal(a.qpos, b.qpos)
    np.testing.assert_array_equal(a.sensordata, b.sensordata)
    assert not np.array_equal(a.qpos, c.qpos)


def test_quantization_rounds_to_whole_steps():
    step = 2 * np.pi / 4096
    trace = run([Quantization("pole_angle", step)], controller=pushing(3.0))
    clean = run(controller=pushing(3.0))
    got, true = trace.sensor("pole_angle")[:, 0], clean.sensor("pole_angle")[:, 0]
    assert_close(got / step, np.round(got / step), atol=1e-9, what="whole counts")
    assert np.abs(got - true).max() <= step / 2 + 1e-15
    assert np.abs(got - true).max() > step / 4  # it did quantize


def test_delay_shifts_commands_by_whole_control_periods():
    trace = run([Delay(3)], controller=lambda t, obs: np.array([t]), duration=10 * H)
    assert_close(trace.command[:, 0], trace.t, atol=0, what="command")
    assert_close(trace.ctrl[:, 0], np.r_[np.zeros(3), trace.t[:-3]], atol=0, what="delayed by 3 periods")


def test_lag_is_first_order_over_the_control_period():
    tau, dt = 0.02, 5 * H
    trace = run([ActuatorLag("push", tau)], controller=pushing(1.0), duration=0.2, control_dt=dt)
    k = np.arange(1, trace.t.size + 1)
    assert_close(trace.ctrl[:, 0], 1 - np.exp(-k * dt / tau), atol=1e-15, what="step response")


def test_torque_speed_limit_is_the_dc_motor_line():
    """At half the no-load speed a driving command is halved; braking gets the full stall control."""
    w0, stall = 4.0, 20.0
    limit = [TorqueSpeedLimit("push", w0)]  # stall defaults to the ctrlrange, +-20
    forward = run(limit, pushing(stall), duration=H, qvel=[w0 / 2, 0.0])
    assert forward.ctrl[0, 0] == pytest.approx(stall / 2, rel=1e-15)
    braking = run(limit, pushing(-stall), duration=H, qvel=[w0 / 2, 0.0])
    assert braking.ctrl[0, 0] == -stall
    backward = run(limit, pushing(-stall), duration=H, qvel=[-w0 / 4, 0.0])
    assert backward.ctrl[0, 0] == pytest.approx(-0.75 * stall, rel=1e-15)
    # It reads the joint's velocity now, not actuator_velocity (one physics step old): over a run
    # that accelerates, every row obeys the line at that row's speed.
    trace = run(limit, pushing(stall), duration=0.3)
    speed = trace.qvel[:, 0]
    assert_close(trace.ctrl[:, 0], np.minimum(stall, stall * (1 - speed / w0)), atol=1e-12, what="on the line")


def test_a_push_changes_the_momentum_by_its_impulse():
    """Horizontal momentum of cart and pole, (m_c + m_p) xd + m_p l cos(theta) thetad, gains F dt exactly."""
    force, length = 3.0, 0.1
    trace = run([Push("cart", (force, 0.0, 0.0), start=0.2, duration=length)], duration=0.5)
    m_c, m_p, lc = CART_POLE.body("cart").mass[0], CART_POLE.body("pole").mass[0], CART_POLE.body("pole").ipos[2]
    x, theta = trace.qpos.T
    xd, thetad = trace.qvel.T
    momentum = (m_c + m_p) * xd + m_p * lc * np.cos(theta) * thetad
    # RK4 integrates the momentum's derivative (the push alone) exactly; round-off of ~1e-15 per step.
    assert_close(momentum[-1] - momentum[0], force * length, atol=1e-9, what="impulse")
    assert np.abs(momentum[trace.t <= 0.2]).max() < 1e-12  # at rest before the push


def test_model_edits_change_a_copy():
    before = CART_POLE.body_mass.copy(), CART_POLE.geom_friction.copy()
    heavy = run([MassScale("cart", 2.0), FrictionScale(0.5)], controller=pushing(1.0), duration=0.1)
    light = run(controller=pushing(1.0), duration=0.1)
    # Twice the cart's mass: its initial acceleration under the push drops by the hand model's ratio; 0.1 s
    # later the pole has tilted by ~1e-3 rad, so the velocities keep that ratio to well under 1 %.
    pole = CART_POLE.body("pole")
    params = [CartPoleParams(m, pole.mass[0], pole.ipos[2], pole.inertia[1]) for m in (1.0, 2.0)]
    light_acc, heavy_acc = (forward_dynamics(p, np.zeros(2), np.zeros(2), 1.0)[0] for p in params)
    assert heavy.qvel[-1, 0] / light.qvel[-1, 0] == pytest.approx(heavy_acc / light_acc, rel=1e-2)
    assert CART_POLE.body("cart").mass[0] == 1.0  # the hand model's light cart is the MJCF's
    np.testing.assert_array_equal(CART_POLE.body_mass, before[0])
    np.testing.assert_array_equal(CART_POLE.geom_friction, before[1])


IMU_RIG = """
<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <body name="base">
      <joint name="spin" axis="0 0 1"/>
      <geom type="box" size=".1 .1 .1" mass="1"/>
      <site name="imu"/>
    </body>
  </worldbody>
  <sensor>
    <framequat name="quat" objtype="site" objname="imu"/>
    <gyro name="gyro" site="imu"/>
    <accelerometer name="accel" site="imu"/>
  </sensor>
</mujoco>
"""


def test_attitude_filter_settles_a_gyro_bias_at_bias_over_gain():
    """Held level, a gyro bias b about x tilts the filter's roll towards b / k with time constant 1 / k."""
    model = mujoco.MjModel.from_xml_string(IMU_RIG)
    gain, bias, t = 0.5, 0.01, 2.0
    trace = simulate(model, lambda t, obs: np.zeros(0), t, imperfections=[
        SensorNoise("gyro", bias=[bias, 0.0, 0.0]), AttitudeFilter("quat", "gyro", "accel", gain=gain)])
    roll = euler_zyx(trace.sensor("quat"))[0]
    # Small-angle linear dynamics roll' = b - k roll; at 0.02 rad sin() differs from the angle by 7e-5.
    expected = bias / gain * (1 - np.exp(-gain * (trace.t - model.opt.timestep)))
    assert_close(roll[1:], expected[1:], atol=2e-5, what="roll of the filter")
    assert roll[0] == 0.0  # it starts at the true orientation


@pytest.mark.parametrize("item, message", [
    (SensorNoise("no_such"), "no sensor 'no_such' in the model"),
    (Delay(2, actuators=("nope",)), "no actuator 'nope'"),
    (Push("ghost", (1, 0, 0), 0.0, 1.0), "no body 'ghost'"),
    (FrictionScale(2.0, geom="nothing"), "no geom 'nothing'"),
    (SensorNoise("pole_angle", std=-1.0), "std must be finite and >= 0"),
    (Delay(-1), "whole number >= 0"),
    (ActuatorLag("push", 0.0), "time_constant must be finite and > 0"),
    (MassScale("cart", float("nan")), "scale must be finite and > 0"),
    (Quantization("pole_angle", 0.0), "step must be finite and > 0"),
])
def test_bad_imperfections_are_named(item, message):
    with pytest.raises(ParameterError, match=message):
        run([item], duration=H)


class _BindsNothing(SensorNoise):
    """A sensor imperfection whose bind forgets to return its per-step function."""

    def bind(self, model, control_dt, rng):
        return None


def test_a_per_step_imperfection_must_bind_a_function():
    with pytest.raises(ParameterError, match="_BindsNothing.bind returned no per-step function"):
        run([_BindsNothing("pole_angle")], duration=H)


def test_only_imperfections_are_accepted():
    with pytest.raises(ParameterError, match="got str"):
        run(["noise"], duration=H)
