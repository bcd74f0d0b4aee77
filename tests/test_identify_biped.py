"""``check model`` on the biped's own closed-loop log: the robot's model passes, the MJCF fails naming a joint.

The robot is the shipped biped with a heavier shank, damping and friction on its
wheels and its commands 0.5 ms late (:mod:`crossdyn.experiments.biped.identify`); its
controller balances it while it drives, turns and changes height, and the log holds
the commands sent, the hip and wheel encoders and the IMU, with noise.  No log holds
the passive knees or the base's position: each window's start is completed from the
model's constraints (the five-bar loops closed, the wheels on the floor, rolling).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from crossdyn import mjcf
from crossdyn.experiments.biped.identify import MODEL, STATED, WINDOW, initial_pose, record_closed_loop, robot_spec
from crossdyn.experiments.core.identify.check_model import TOLERANCE, replay
from crossdyn.experiments.core.identify.fit import _Closure
from crossdyn.experiments.core.identify.logs import load_log, write_log

DURATION = 0.3  # s: six replayed windows of driving, turning and changing height


@pytest.fixture(scope="module")
def biped_log(tmp_path_factory):
    robot = robot_spec(native_delay=False).compile()
    time, columns = record_closed_loop(robot, DURATION, seed=1)
    path = write_log(tmp_path_factory.mktemp("biped") / "robot.csv", time, columns)
    return load_log(path, mujoco.MjModel.from_xml_path(str(mjcf.path(MODEL))))


def test_the_log_holds_what_a_biped_logs(biped_log):
    """Commands, hip and wheel encoders, IMU: no knee, no base pose."""
    names = set(biped_log.columns)
    assert {"qpos:left_front_hip", "qvel:right_wheel", "sensor:imu_quat:0", "sensor:imu_gyro:2"} <= names
    assert not [n for n in names if "knee" in n or "root" in n]
    assert len([n for n in names if n.startswith("ctrl:")]) == 6


def test_check_model_passes_the_robots_own_model_and_fails_the_mjcf(biped_log):
    itself = replay(robot_spec(), [biped_log], window=WINDOW, threads=1, noise=STATED)
    # with the noise stated (the recorder's): the hips' speeds 1.3-1.9 x (the soft five-bar's transients from
    # starts whose knees no log reads), the rest about 1; at most TOLERANCE (2)
    assert itself.passed, itself.text
    shipped = replay(mujoco.MjSpec.from_file(str(mjcf.path(MODEL))), [biped_log], window=WINDOW, threads=1,
                     noise=STATED)
    # the MJCF lacks the wheels' damping and friction: its wheels run away, 20-40 x the noise (measured)
    assert not shipped.passed
    assert shipped.worst["rms"] > 5 * TOLERANCE, shipped.text
    kind, joint = shipped.worst["signal"].split(":")
    assert kind in ("qpos", "qvel") and joint.endswith("_wheel"), shipped.text
    assert shipped.diagnosis.startswith(shipped.worst["signal"])


def test_a_noisy_start_is_put_back_on_the_five_bar_and_the_floor():
    """Knees unread (at 0), hips read 1 mrad off, the base 1 mm high: the loops close, the wheels touch."""
    model = mujoco.MjModel.from_xml_path(str(mjcf.path(MODEL)))
    read = {model.joint(j).name for j in range(model.njnt) if "hip" in model.joint(j).name or "wheel" in
            model.joint(j).name}
    closure = _Closure(model, read, [(model.joint("root").id, None, None)])  # a base started from its IMU
    truth = initial_pose(model)
    qpos = truth.copy()
    rng = np.random.default_rng(0)
    hips = [model.joint(j).qposadr[0] for j in range(model.njnt) if "hip" in model.joint(j).name]
    knees = [model.joint(j).qposadr[0] for j in range(model.njnt) if "knee" in model.joint(j).name]
    qpos[hips] += 1e-3 * rng.standard_normal(len(hips))
    qpos[knees] = 0.0  # no log reads them
    qpos[2] += 0.001  # the base read 1 mm high
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    assert np.abs(data.efc_pos[data.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY]).max() > 1e-2  # open
    fixed, qvel = closure.project(qpos, np.zeros(model.nv))
    closure.data.qpos[:] = fixed
    gaps, _, _ = closure._rows()  # the closures' gaps and the touching contacts' distances
    assert closure.data.ncon == 2  # both wheels
    assert np.abs(gaps).max() < 1e-9  # closed and touching, to round-off, by the Gauss-Newton steps
    # the read hips move by less than their 1 mrad of noise (two wheels on the floor tie the legs'
    # lengths to the base's roll), the unread knees take up the rest: tenths of a radian
    assert np.abs(fixed[hips] - qpos[hips]).max() < 1e-3
    assert np.abs(fixed[knees] - qpos[knees]).min() > 0.1
    assert np.abs(fixed[knees] - truth[knees]).max() < 5e-3  # the knees the hips' 1 mrad noise implies
    assert np.allclose(qvel, 0.0)


def test_a_model_without_constraints_is_left_as_read():
    model = mujoco.MjModel.from_xml_path(str(mjcf.path("two_link_arm")))
    closure = _Closure(model, {"q1", "q2"}, [])
    qpos, qvel = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    out_q, out_v = closure.project(qpos, qvel)
    assert np.array_equal(out_q, qpos) and np.array_equal(out_v, qvel)


def test_biped_identify_judges_the_fit_against_the_robot():
    """The experiment's verdict fails the MJCF's own values and a value just past its allowed intervals."""
    from crossdyn.experiments.biped.identify import DELAY_TOLERANCE, FITS, INTERVALS, ROBOT, judge

    model = mujoco.MjModel.from_xml_path(str(mjcf.path(MODEL)))
    keys = [k for k in ROBOT if k != "delay"] + ["delay"]
    assert {k.split(":")[0] for k in keys} == {f.split(":")[0] for f in FITS}
    tight = dict.fromkeys(keys, 1e-4)
    assert judge(dict(ROBOT), tight) == []
    shipped = {"body:left_front_shank:mass": float(model.body("left_front_shank").mass[0]), "delay": 0.0}
    shipped |= {k: 0.0 for k in keys if k.startswith("joint:")}  # the MJCF has no wheel damping or friction
    assert sorted(judge(shipped, tight)) == sorted(keys)  # each off by more than its allowed intervals
    key = "joint:right_wheel:damping"
    edge = INTERVALS * tight[key]
    assert judge(dict(ROBOT) | {key: ROBOT[key] + 0.99 * edge}, tight) == []
    assert judge(dict(ROBOT) | {key: ROBOT[key] + 1.01 * edge}, tight) == [key]
    assert judge(dict(ROBOT) | {"delay": ROBOT["delay"] + 1.01 * DELAY_TOLERANCE}, tight) == ["delay"]
