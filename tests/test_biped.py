"""The wheel-legged biped MJCF and its cross-checks against the biped thesis chapter's hand models."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from crossdyn.analytic.biped import wheeled_pendulum as wp
from crossdyn.analytic.biped.five_bar import height, hip_torque
from crossdyn.experiments.biped.derivations import closed_poses
from crossdyn.experiments.biped.measurements import (
    discretize,
    jump_run,
    leg_statics,
    linearization_point,
    reduced_linearization,
    statics_point,
    steering_instant,
)
from crossdyn.experiments.biped.model import (
    HIPS,
    balance_pose,
    biped_params,
    build,
    closure_error,
    stand_pose,
)
from crossdyn.experiments.core.errors import ModelError
from crossdyn.experiments.core.models import load_model
from support import assert_close

STAND = np.radians(215.0)
STROKE = np.radians([190.0, 250.0])


@pytest.fixture(scope="module")
def robot():
    model = load_model("wheel_legged_biped")
    return model, biped_params(model)


def test_model_is_pinned(robot):
    model, _ = robot
    assert (model.nq, model.nv, model.nu, model.neq) == (17, 16, 6, 2)
    joints = [model.joint(i).name for i in range(model.njnt)]
    assert joints == ["root", "left_front_hip", "left_front_knee", "left_wheel", "left_rear_hip", "left_rear_knee",
                      "right_front_hip", "right_front_knee", "right_wheel", "right_rear_hip", "right_rear_knee"]
    assert [model.actuator(i).name for i in range(model.nu)] == list(HIPS) + ["left_wheel", "right_wheel"]
    sensors = {model.sensor(i).name for i in range(model.nsensor)}
    assert {"imu_quat", "imu_gyro", "imu_accel", "left_wheel_vel", "right_wheel_vel", "left_front_hip_pos"} <= sensors
    assert model.camera("track").mode == mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
    assert all(model.body(i).name for i in range(model.nbody))
    assert model.opt.timestep == 0.00025
    # No passive forces anywhere (docs/derivations/index.md).
    assert not model.dof_armature.any() and not model.dof_damping.any() and not model.dof_frictionloss.any()


def test_params_are_the_documented_numbers(robot):
    _, p = robot
    pend = p.pendulum
    # docs/derivations/biped-model.md; inertias from MuJoCo's box and cylinder integrals, round-off only.
    expected = [6.0, 0.4, 0.06, 0.5 * 0.4 * 0.06**2, 6 / 12 * (0.24**2 + 0.10**2), 6 / 12 * (0.24**2 + 0.30**2), 0.40]
    got = [pend.M, pend.m, pend.r, pend.I, pend.J_pitch, pend.J_yaw, pend.D]
    assert_close(got, expected, atol=1e-12)
    # Numbers typed in the MJCF, read back through compile: round-off.
    assert_close([p.l1, p.l2, p.l3, p.thigh_mass, p.shank_mass], [0.10, 0.16, 0.32, 0.15, 0.20], atol=1e-12)
    assert (p.hip_torque_limit, p.wheel_torque_limit) == (17.0, 6.0)
    assert p.com_offset == (0.0, 0.0)


@pytest.mark.parametrize("alpha_deg", [190.0, 215.0, 250.0])
def test_hip_joint_angle_is_alpha(robot, alpha_deg):
    model, p = robot
    alpha = np.radians(alpha_deg)
    data = mujoco.MjData(model)
    data.qpos[:] = stand_pose(model, alpha, p)
    mujoco.mj_forward(model, data)
    assert closure_error(model, data) < 1e-12  # the closed pose computed from eq. 3.2 geometry
    for hip in HIPS:
        assert data.sensor(f"{hip}_pos").data[0] == pytest.approx(alpha, abs=1e-15)
    axle = data.site_xpos[model.site("left_axle").id]
    assert axle[2] == pytest.approx(p.pendulum.r, abs=2e-9)  # wheels sunk 1 nm (STAND_SINK)
    assert data.xpos[model.body("body").id][2] - axle[2] == pytest.approx(height(alpha, 0.1, 0.16, 0.32), abs=1e-12)


def test_closure_error_stays_under_half_a_millimetre_in_a_full_torque_jump(robot):
    model, p = robot
    run = jump_run(model, p, 17.0, *STROKE, duration=0.3)
    assert run.closure_max < 5e-4  # the bound; measured 0.16 mm
    assert run.liftoff_com_velocity > 0 and run.takeoff_velocity > 2.943


def test_five_bar_geometry_and_statics_match_mujoco():
    rig = build(fixed_body=True, gravity=False)
    alphas = np.radians([190.0, 215.0, 250.0])
    for alpha, pose in zip(alphas, closed_poses(rig, np.column_stack([alphas, alphas])), strict=True):
        point = leg_statics(rig, pose, 30.0)
        assert_close(point["height"], [height(alpha, 0.1, 0.16, 0.32)] * 2, atol=1e-12)  # kinematics, round-off
        expected = hip_torque(alpha, 30.0, 0.1, 0.16, 0.32)
        assert_close(point["tau"], [expected] * 4, rtol=1e-10, atol=0)  # rigid statics: round-off
        # Soft forward dynamics: MuJoCo's closure lets 1 - d = 1e-4 of it through; measured <= 3e-4.
        assert_close(point["tau_soft"], [expected] * 4, rtol=5e-4, atol=0)
        # The check can fail: the torque with the wrong sign is far off.
        assert np.abs(point["tau"] + expected).max() > 1.0


@pytest.mark.parametrize("alpha_deg", [190.0, 250.0])
def test_linearization_ideal_matches_and_printed_fails(alpha_deg):
    point = linearization_point(np.radians(alpha_deg), legs="massless")
    errors = point["errors"]
    assert errors["analytic"]["max_rel"] < 0.01  # the 1 %; measured ~4e-4 (1e-4 kg legs, soft contacts)
    assert errors["printed"]["max_rel"] > 0.5  # 2l/r^2: the x row is off by ~99 %
    assert errors["no_wheel_inertia"]["max_rel"] > 0.1
    assert point["pole_mujoco"] == pytest.approx(point["pole_analytic"], rel=1e-3)


def test_linearization_catches_a_wrong_pitch_inertia():
    alpha = np.radians(220.0)
    model = build(legs="massless", rigid_alpha=alpha)
    p = biped_params(model)
    data = mujoco.MjData(model)
    data.qpos[:], _ = balance_pose(model, alpha, p)
    mujoco.mj_forward(model, data)
    height = float(p.leg_height(alpha))
    Ad, Bd = reduced_linearization(model, data, height)
    pend = p.pendulum
    wrong = wp.PendulumParams(pend.M, pend.m, pend.r, pend.I, 2 * pend.J_pitch, pend.J_yaw, pend.D, pend.g)
    for params, ok in ((pend, True), (wrong, False)):
        A, B = discretize(*wp.linearize_pendulum(params, height), model.opt.timestep)
        rel = np.abs(np.hstack([A - Ad, B - Bd])).max() / np.abs(np.hstack([Ad - np.eye(4), Bd])).max()
        assert (rel < 0.01) == ok  # doubling J_pitch moves the theta row by ~10 %


def test_realistic_legs_are_explained_by_lumping():
    point = linearization_point(np.radians(215.0), legs="realistic")
    assert point["errors"]["analytic"]["max_rel"] > 0.1  # leg mass ignored: tens of %
    assert point["errors"]["lumped"]["max_rel"] < 1e-3  # body + rigid legs lumped: soft-contact level


def test_statics_corrected_passes_and_printed_fails():
    model = build(legs="massless")
    p = biped_params(model)
    good = statics_point(model, p, STAND, 10.0, 3.0)
    bad = statics_point(model, p, STAND, 10.0, 3.0, printed=True)
    assert good["rel_error"] < 1e-3  # 1e-4 kg leg links and the soft contacts; measured 6e-5
    assert bad["rel_error"] > 0.5
    assert good["measured"]["left"] > good["measured"]["right"]  # positive T_x loads the left leg


def test_steering_within_the_wheel_yaw_inertia():
    model = build(legs="massless", rigid_alpha=STAND)
    point = steering_instant(model, biped_params(model), STAND, 1.0)
    assert point["mujoco"] > 0  # stronger left wheel turns right (the thesis's positive delta)
    assert abs(point["analytic"] / point["mujoco"] - 1) < 0.02  # 2.22 leaves out 2 x the wheel's yaw inertia
    assert abs(point["with_wheel_yaw"] / point["mujoco"] - 1) < 1e-3


def test_bad_variants_are_rejected(robot):
    with pytest.raises(ModelError, match="legs"):
        build(legs="wooden")
    with pytest.raises(ValueError, match="reachable range"):
        build(rigid_alpha=np.radians(300.0))
    with pytest.raises(ValueError, match="reachable range"):
        stand_pose(robot[0], np.radians(100.0), robot[1])
    with pytest.raises(ModelError, match="biped"):
        biped_params(load_model("two_link_arm"))


def test_same_inputs_same_trajectory(robot):
    model, p = robot

    def run():
        data = mujoco.MjData(model)
        data.qpos[:] = stand_pose(model, STAND, p)
        data.ctrl[:4] = hip_torque(STAND, 0.5 * 9.81 * 6.0, p.l1, p.l2, p.l3)
        for _ in range(400):
            mujoco.mj_step(model, data)
        return data.qpos.copy()

    assert np.array_equal(run(), run())
