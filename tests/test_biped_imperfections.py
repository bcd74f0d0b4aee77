"""Imperfections: each hardware model against its own definition, seeding, the preset's must-shows."""

from __future__ import annotations

import dataclasses
import json

import mujoco
import numpy as np
import pytest

from crossdyn.analytic.rotation import euler_zyx
from crossdyn.experiments.biped import imperfections as imp_mod
from crossdyn.experiments.biped.closed_loop import simulate
from crossdyn.experiments.biped.control import judge_balance_recovery, judge_turn, judge_velocity_tracking
from crossdyn.experiments.biped.imperfections import REALISTIC, Hardware, Imperfections
from crossdyn.experiments.biped.model import BUMP_START, Ground, build, nominal_params
from crossdyn.experiments.biped.scenarios import (
    CONTROL_PERIOD,
    balance_recovery,
    balance_scenario,
    controller_for,
    turn,
    velocity_tracking,
)
from crossdyn.experiments.core.errors import ParameterError
from support import assert_close

DT = CONTROL_PERIOD
P = nominal_params()
STILL = (np.array([1.0, 0, 0, 0]), np.zeros(3), np.array([0, 0, 9.81]), np.zeros(4), np.zeros(4), np.zeros(2),
         np.zeros(2))


def _hardware(seed=0, **fields) -> Hardware:
    return Hardware(Imperfections(**fields), seed, P, DT)


def test_gyro_noise_has_the_density_it_was_given():
    """White noise of density N sampled every dt: standard deviation N / sqrt(dt), zero mean."""
    density = 2e-3
    hw = _hardware(gyro_noise=density)
    hw.sense(0.0, STILL)  # the first call starts the attitude filter
    samples = np.array([hw.sense(k * DT, STILL)[1] for k in range(20000)])
    # 20000 samples per axis: the sample std's relative error is ~1/sqrt(2 N) = 0.5 %; 3 % is 6 sigma.
    assert_close(samples.std(axis=0), np.full(3, density / np.sqrt(DT)), atol=0, rtol=0.03, what="gyro std")
    assert np.abs(samples.mean(axis=0)).max() < 6 * density / np.sqrt(DT) / np.sqrt(20000)


def test_bias_is_constant_within_a_run_and_seeded():
    a, b, c = (_hardware(seed, gyro_bias=0.01, accel_bias=0.1) for seed in (1, 1, 2))
    first = [a.sense(k * DT, STILL)[1] for k in range(3)]
    assert all(np.array_equal(first[0], g) for g in first) and np.abs(first[0]).max() > 0
    assert np.array_equal(b.sense(0.0, STILL)[1], first[0])  # same seed, same bias
    assert not np.array_equal(c.sense(0.0, STILL)[1], first[0])


def test_attitude_filter_converges_at_its_gain():
    """Started 0.2 rad off in pitch and held still, the Mahony error decays as exp(-k t)."""
    hw = _hardware(gyro_bias=1e-12)  # a negligible bias switches the IMU model on
    hw.sense(0.0, STILL)
    hw._quat = np.array([np.cos(0.1), 0.0, np.sin(0.1), 0.0])
    t = 2.0
    for k in range(int(t / DT)):
        quat = hw.sense(k * DT, STILL)[0]
    pitch = float(euler_zyx(quat)[1])
    # Small-angle linear decay; at 0.2 rad the sin() of the cross product slows it by < 1 %.
    assert pitch == pytest.approx(0.2 * np.exp(-imp_mod.ATTITUDE_GAIN * t), rel=0.01)


def test_encoders_are_quantized():
    hw = _hardware(encoder_counts=4096)
    step = 2 * np.pi / 4096
    rng = np.random.default_rng(0)
    hips, wheels = rng.uniform(3, 4, 4), rng.uniform(-20, 20, 2)
    out = [np.asarray(r) for r in hw.sense(0.0, (*STILL[:3], hips, np.ones(4), wheels, np.ones(2)))]
    for got, true in ((out[3], hips), (out[5], wheels)):
        assert_close(got / step, np.round(got / step), atol=1e-9, what="whole counts")
        assert np.abs(got - true).max() <= step / 2 + 1e-12
    assert np.array_equal(out[4], np.ones(4))  # velocities pass


@pytest.fixture(scope="module")
def robot_data():
    model = build()
    return model, mujoco.MjData(model)


def test_delay_shifts_commands_by_whole_periods(robot_data):
    _, data = robot_data
    hw = _hardware(delay=3)
    out = [hw.command(k * DT, (k, -k), (k,) * 4, data) for k in range(8)]
    assert [w[0] for w, _ in out] == [0, 0, 0, 0, 1, 2, 3, 4]


def test_torque_lag_is_first_order(robot_data):
    _, data = robot_data
    tau = 0.004
    hw = _hardware(torque_lag=tau)
    out = [hw.command(k * DT, (1.0, 1.0), (2.0,) * 4, data)[0][0] for k in range(10)]
    assert_close(out, 1 - np.exp(-np.arange(1, 11) * DT / tau), atol=1e-12, what="step response")


def test_torque_speed_limit_is_the_dc_motor_line(robot_data):
    model, data = robot_data
    w0 = 40.0
    hw = _hardware(wheel_no_load_speed=w0)
    stall = P.wheel_torque_limit
    data.qvel[:] = 0.0
    data.qvel[model.joint("left_wheel").dofadr[0]] = w0 / 2  # half the no-load speed forward
    data.qvel[model.joint("right_wheel").dofadr[0]] = -w0 / 4
    wheels, hips = hw.command(0.0, (stall, stall), (1.0,) * 4, data)
    assert wheels == pytest.approx((stall / 2, stall))  # driving: half; the right wheel brakes: full stall
    wheels, _ = hw.command(0.0, (-stall, -stall), (1.0,) * 4, data)
    assert wheels == pytest.approx((-stall, -stall * 0.75))
    assert hips == (1.0,) * 4  # no hip limit set


def test_out_of_range_imperfection_is_refused():
    with pytest.raises(ParameterError, match="delay"):
        Imperfections(delay=-1)


def test_ground_and_payload_edits():
    slope = np.radians(5.0)
    model = build(ground=Ground(friction=0.5, slope=slope, bump=0.02), payload=(1.5, 0.0))
    base = build()
    assert model.geom("floor").friction[0] == 0.5 and model.geom("left_wheel_contact").friction[0] == 0.5
    assert model.body("payload").mass[0] == pytest.approx(1.5)
    assert sum(model.body_mass) == pytest.approx(sum(base.body_mass) + 1.5)
    # The bump sits on the sloped floor, its near edge BUMP_START along it.
    bump = model.geom("bump")
    assert bump.pos[0] - bump.size[0] * np.cos(slope) == pytest.approx(BUMP_START * np.cos(slope), abs=0.01)
    # A wheel standing at x = 0 touches the tilted plane: its axle is r from the plane.
    r = P.pendulum.r
    normal = np.array([-np.sin(slope), 0, np.cos(slope)])
    assert_close(model.geom("floor").quat, [np.cos(slope / 2), 0, -np.sin(slope / 2), 0], atol=1e-15, what="tilt")
    assert (np.array([0.0, 0.0, r]) - model.geom("floor").pos) @ normal == pytest.approx(r, abs=1e-12)


def test_hooks_with_no_imperfection_leave_the_run_bit_identical():
    model, sc = build(), balance_scenario(8.0, 1.0)
    plain = simulate(model, sc, controller_for({}))
    hooked = simulate(model, sc, controller_for({}), hardware=_hardware())
    np.testing.assert_array_equal(plain.true_pitch, hooked.true_pitch)
    np.testing.assert_array_equal(plain.wheel_torque, hooked.wheel_torque)


def test_same_seed_same_metrics_other_seed_other_noise():
    kwargs = dict(duration=1.5, imperfections=REALISTIC)
    _, a = balance_recovery(8.0, seed=4, **kwargs)
    _, b = balance_recovery(8.0, seed=4, **kwargs)
    _, c = balance_recovery(8.0, seed=5, **kwargs)
    assert a == b
    assert a["estimator_error"] != c["estimator_error"]


@pytest.mark.parametrize("scenario, judge", [(balance_recovery, judge_balance_recovery),
                                             (velocity_tracking, judge_velocity_tracking), (turn, judge_turn)],
                         ids=["balance-recovery", "velocity-tracking", "turn"])
def test_realistic_preset_still_passes(scenario, judge):
    _, ideal = scenario()
    _, real = scenario(imperfections=REALISTIC, seed=0)
    verdict = judge(real)
    assert verdict.passed, verdict.measured
    # The estimator's error is reported, and the noisy IMU makes it worse than the exact one's.
    err, ideal_err = real["estimator_error"], ideal["estimator_error"]
    assert set(err) == {"pitch_rms_deg", "pitch_max_deg", "speed_rms_m_s", "x_max_m"}
    assert err["pitch_rms_deg"] > ideal_err["pitch_rms_deg"]


def test_from_values_overrides_the_preset():
    values = {k: p.default for k, p in imp_mod.PARAMS.items()}
    assert Imperfections.from_values({**values, "realistic": False}) == Imperfections()
    assert Imperfections.from_values({**values, "realistic": True}) == REALISTIC
    tweaked = Imperfections.from_values({**values, "realistic": True, "delay": 2})
    assert tweaked == dataclasses.replace(REALISTIC, delay=2)


def test_holding_region_spans_and_gaps():
    from crossdyn.experiments.biped.tune import holding_region

    axes = {"slope_deg": [0.0, 5.0, 10.0], "friction": [0.2, 0.4, 0.7, 1.0]}
    held = np.array([[1, 1, 1, 1], [0, 1, 0, 1], [0, 0, 0, 0]], dtype=bool)
    region = holding_region(axes, held)
    assert region["by"] == "slope_deg"
    rows = region["rows"]
    assert rows[0]["span"] == [0.2, 1.0] and rows[0]["contiguous"]
    assert rows[1]["friction"] == [0.4, 1.0] and not rows[1]["contiguous"]
    assert rows[2]["span"] is None
    assert len(region["held_cells"]) == int(held.sum())


def test_robustness_map_over_imperfections_is_seeded(tmp_path):
    """Imperfection axes (whole-number delay included) run, the seed is recorded and honoured."""
    from crossdyn.experiments.biped import tune

    axes = tune.parse_values([("gyro_noise", "0.004"), ("delay", "0,1")], kind="perturbation")
    runs = {}
    for seed in (1, 1, 2):
        out = tmp_path / f"map{len(runs)}"
        result = tune.robustness(out, axes=axes, duration=1.0, seed=seed)
        summary = json.loads((out / "robustness.json").read_text())
        assert summary["seed"] == seed and len(summary["holding_region"]["rows"]) == 1
        assert [row["delay"] for row in result.rows] == ["0.0", "1.0"] and result.rows[0]["seed"] == str(seed)
        runs[len(runs)] = [row["effort_N2m2s"] for row in result.rows]  # the noise reaches the torques
    assert runs[0] == runs[1] and runs[0] != runs[2]
