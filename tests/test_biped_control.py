"""Closed-loop biped: the estimator, the controller's plumbing, parameters, video.

The experiments' own outcomes (settling, tracking, jump, LQR cost vs Riccati...)
are asserted by tests/test_experiments.py; this file checks the pieces those
outcomes rest on.
"""

from __future__ import annotations

import numpy as np
import pytest

from crossdyn.analytic.rotation import euler_rates, euler_zyx
from crossdyn.controllers.biped.estimation import Estimator, LegGeometry
from crossdyn.experiments.biped.closed_loop import simulate_scenario
from crossdyn.experiments.biped.model import STANCE, build
from crossdyn.experiments.biped.scenarios import balance_scenario, controller_for, robot, settling_time
from crossdyn.experiments.core.cli import main
from crossdyn.experiments.core.errors import ParameterError
from support import assert_close

ALPHA = STANCE


@pytest.fixture(scope="module")
def recovery():
    """A 2 s balance recovery from 8 deg, sensor-based (shared by several tests)."""
    return simulate_scenario(build(), balance_scenario(8.0, 2.0), controller_for({}))


def test_estimate_follows_ground_truth(recovery):
    tr = recovery
    assert not tr.fell
    # The IMU is exact but one physics step stale: mj_step computes sensordata in
    # its forward pass, before integrating.  So the error is bounded by the pitch
    # change over one step, |thetad| dt (x 1.1 for the rate varying within it).
    dt = build().opt.timestep
    bound = 1.1 * np.abs(tr.true_pitch_rate).max() * dt
    assert_close(tr.est_pitch, tr.true_pitch, atol=bound, what="pitch")
    # Odometry integrates wheel + shank rotation assuming rolling without slip and
    # a symmetric leg; the swing PD keeps the asymmetry small, so the error stays
    # at millimetres over the run (measured ~0.3 mm).
    assert np.abs(tr.est_x - tr.true_x).max() < 5e-3
    assert np.abs(tr.est_xd - tr.true_xd).max() < 0.05


def test_same_scenario_same_trace(recovery):
    again = simulate_scenario(build(), balance_scenario(8.0, 2.0), controller_for({}))
    np.testing.assert_array_equal(again.true_pitch, recovery.true_pitch)  # bit-identical
    np.testing.assert_array_equal(again.wheel_torque, recovery.wheel_torque)


def test_euler_angles_and_rates():
    rng = np.random.default_rng(0)
    for _ in range(20):
        roll, pitch, yaw = rng.uniform(-1.2, 1.2, 3)
        # Quaternion of Rz(yaw) Ry(pitch) Rx(roll).
        cr, sr, cp, sp, cy, sy = (f(a / 2) for a in (roll, pitch, yaw) for f in (np.cos, np.sin))
        quat = [cy * cp * cr + sy * sp * sr, cy * cp * sr - sy * sp * cr,
                cy * sp * cr + sy * cp * sr, sy * cp * cr - cy * sp * sr]
        # Closed-form inverse of the same trig: round-off.
        assert_close(euler_zyx(quat), (roll, pitch, yaw), atol=1e-12, what="euler")
    # Level body: Euler rates are the gyro's components.
    assert_close(euler_rates(0.0, 0.0, [0.1, 0.2, 0.3]), (0.1, 0.2, 0.3), atol=1e-15, what="rates")


def test_estimator_refuses_nan():
    est = Estimator(LegGeometry(0.1, 0.16, 0.32, 0.06))
    with pytest.raises(ValueError, match="non-finite"):
        est.update([1, 0, 0, 0], [0, np.nan, 0], [0, 0, 9.81], [ALPHA] * 4, [0] * 4, [0, 0], [0, 0])


def test_yaw_estimate_is_unwrapped():
    est = Estimator(LegGeometry(0.1, 0.16, 0.32, 0.06))
    yaws = np.radians([170.0, 179.0, -179.0, -170.0])  # crossing +-180 deg
    out = [est.update([np.cos(y / 2), 0, 0, np.sin(y / 2)], [0, 0, 0], [0, 0, 9.81], [ALPHA] * 4, [0] * 4,
                      [0, 0], [0, 0]).yaw for y in yaws]
    assert_close(np.degrees(out), [170.0, 179.0, 181.0, 190.0], atol=1e-9, what="unwrapped yaw")


def test_invalid_gains_are_a_parameter_error():
    with pytest.raises(ParameterError, match="LQR weights"):
        controller_for({"q_x": 0.0, "q_xd": 0.0, "q_theta": 0.0, "q_thetad": 0.0})


def test_perturbed_robot():
    nominal, heavy = build(), robot({"body_mass_scale": 1.3})
    body = nominal.body("body").id
    assert heavy.body_mass[body] == pytest.approx(1.3 * nominal.body_mass[body])
    # A scalar product of ~0.05 kg m^2: round-off.
    assert_close(heavy.body_inertia[body], 1.3 * nominal.body_inertia[body], atol=1e-15, what="inertia")


def test_settling_time():
    t = np.arange(10) * 0.1
    assert settling_time(t, np.array([0, 0, 1, 0, 1, 1, 1, 1, 1, 1], bool)) == pytest.approx(0.4)
    assert settling_time(t, np.ones(10, bool)) == 0.0
    assert settling_time(t, np.array([1] * 9 + [0], bool)) == float("inf")


@pytest.mark.parametrize(
    "setting,message",
    [
        ("initial_tilt_deg=100", "out of range"),
        ("q_theta=-1", "out of range"),
        ("nope=1", "nope"),
        ("ground_truth=maybe", "expected a bool"),
    ],
)
def test_set_is_validated(tmp_path, capsys, setting, message):
    assert main(["run", "balance-recovery", "--set", setting, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_set_changes_the_run(tmp_path):
    import json

    assert main(["run", "balance-recovery", "--set", "initial_tilt_deg=4", "--set", "ground_truth=true",
                 "--out", str(tmp_path)]) == 0
    metrics = json.loads((tmp_path / "balance-recovery" / "metrics.json").read_text())
    assert metrics["params"]["initial_tilt_deg"] == 4.0 and metrics["params"]["ground_truth"] is True
    # The initial pose is set to the tilt exactly; 0.01 deg for the first logged step.
    assert metrics["max_tilt_deg"] == pytest.approx(4.0, abs=0.01)


def _can_render() -> bool:
    import mujoco

    try:
        with mujoco.Renderer(build(), 16, 16):
            return True
    except Exception:  # no EGL/Mesa libraries on this machine
        return False


def test_video_is_written(tmp_path):
    """Headless EGL rendering to MP4 (MUJOCO_GL=egl is set in conftest).

    Needs Debian's libegl1 libegl-mesa0 libgl1-mesa-dri; .ci/run installs them,
    and under CI=true a machine that cannot render is a failure, not a skip.
    """
    import os

    import imageio.v3 as iio

    if not _can_render():
        message = "headless rendering unavailable: apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    simulate_scenario(build(), balance_scenario(0.0, 0.5), controller_for({}), video=tmp_path / "clip.mp4", fps=20)
    frames = iio.imread(tmp_path / "clip.mp4")
    assert frames.shape[0] == 10 and frames.shape[-1] == 3
    assert frames.std() > 5  # a rendered scene, not a blank frame
