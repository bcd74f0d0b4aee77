"""The biped's imperfections: generic ones on its sensors and motors, seeding, ground edits, the preset's must-shows."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from crossdyn.experiments.biped import imperfections as imp_mod
from crossdyn.experiments.biped.closed_loop import simulate_scenario
from crossdyn.experiments.biped.control import judge_balance_recovery, judge_turn, judge_velocity_tracking
from crossdyn.experiments.biped.imperfections import REALISTIC, Imperfections
from crossdyn.experiments.biped.model import BUMP_START, HIPS, WHEELS, Ground, build, nominal_params
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


def test_the_biped_imperfections_are_generic_ones_on_its_sensors_and_motors():
    """Each --set parameter becomes crossdyn's generic imperfection on the robot's own elements, in
    the units the generic one takes (a noise density becomes a per-reading deviation over the period)."""
    made = Imperfections(gyro_noise=2e-3, accel_bias=0.1, encoder_counts=4096, delay=2, torque_lag=0.004,
                         wheel_no_load_speed=40.0).generic(P, DT)
    kinds = [type(item).__name__ for item in made]
    assert kinds == ["SensorNoise", "SensorNoise", "AttitudeFilter", *["Quantization"] * 6, "Delay",
                     *["ActuatorLag"] * 6, "TorqueSpeedLimit", "TorqueSpeedLimit"]
    gyro, accel = made[0], made[1]
    assert (gyro.sensor, gyro.std, gyro.bias_std) == ("imu_gyro", 2e-3 / np.sqrt(DT), 0.0)
    assert (accel.sensor, accel.std, accel.bias_std) == ("imu_accel", 0.0, 0.1)
    assert made[2].gain == imp_mod.ATTITUDE_GAIN
    assert {q.sensor for q in made[3:9]} == {f"{j}_pos" for j in (*HIPS, *WHEELS)}
    assert made[3].step == 2 * np.pi / 4096
    assert made[9].periods == 2
    assert {(lim.actuator, lim.stall) for lim in made[-2:]} == {(w, P.wheel_torque_limit) for w in WHEELS}
    assert Imperfections(friction=0.5, slope_deg=2.0).generic(P, DT) == []  # ground edits are model edits


def test_the_compiled_step_under_imperfections_is_the_readable_path():
    """Imperfections act on what the estimator reads and on the motors' commands, so the compiled
    step runs under them too, and equals the readable classes bit for bit."""
    model, sc = build(), balance_scenario(8.0, 1.0)
    made = REALISTIC.generic(P, DT)
    fast = simulate_scenario(model, sc, controller_for({}), imperfections=made, seed=3)
    readable = simulate_scenario(model, sc, controller_for({}), imperfections=made, seed=3, compiled=False)
    for name in ("true_pitch", "est_pitch", "wheel_torque", "hip_torque", "height"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(readable, name), err_msg=name)
    plain = simulate_scenario(model, sc, controller_for({}))
    assert not np.array_equal(plain.est_pitch, fast.est_pitch)  # the imperfections did something


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


def test_no_imperfection_leaves_the_run_bit_identical():
    model, sc = build(), balance_scenario(8.0, 1.0)
    plain = simulate_scenario(model, sc, controller_for({}))
    hooked = simulate_scenario(model, sc, controller_for({}), imperfections=Imperfections().generic(P, DT), seed=7)
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
    from crossdyn.experiments.core.sweep.plots import holding_region

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
    from crossdyn.experiments.biped.tune import ROBUSTNESS
    from crossdyn.experiments.core.sweep.experiment import tune

    runs = {}
    for seed in (1, 1, 2):
        out = tmp_path / f"map{len(runs)}"
        result = tune(ROBUSTNESS, out, vary=["gyro_noise=0.004", "delay=0,1"], search="grid", seed=seed,
                      fixed={"duration_s": "1.0"})
        summary = json.loads((out / "map.json").read_text())
        assert json.loads((out / "best.json").read_text())["seed"] == seed
        assert len(summary["holding_region"]["rows"]) == 1
        assert [row["delay"] for row in result.rows[1:]] == ["0", "1"] and result.rows[1]["seed"] == str(seed)
        runs[len(runs)] = [row["effort_N2m2s"] for row in result.rows]  # the noise reaches the torques
    assert runs[0] == runs[1] and runs[0] != runs[2]
