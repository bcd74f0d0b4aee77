"""Closing the loop: the biped controller driving the MuJoCo robot.

:func:`simulate` steps ``mjcf/wheel_legged_biped.xml`` (or a variant) with a
:class:`~controllers.biped.BipedController` running every ``control_period``,
fed from the robot's own sensors (read by name) or, with ``ground_truth=True``,
from MuJoCo's state.  It records a :class:`Trace` for metrics and plots, stops
early when the robot falls or the simulation diverges, and can render a video
from the tracking camera.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import mujoco
import numpy as np

from controllers.biped import BipedController, Reference, design
from controllers.estimation import Estimate, Estimator, LegGeometry, euler_rates, euler_zyx
from controllers.jump import JumpPlan
from experiments.biped_model import HIPS, BipedParams, balance_pose, biped_params, closure_error
from experiments.errors import CrossdynError

__all__ = ["Scenario", "Trace", "simulate", "make_controller", "geometry", "FALL_PITCH"]

FALL_PITCH = np.radians(60.0)  # past this the robot has fallen (the body box nears the floor)


@dataclass
class Scenario:
    """One closed-loop run.

    Attributes:
      duration: simulated time, s.
      alpha0: initial leg angle, rad (both legs).
      initial_tilt: initial pitch about the axle, rad (positive leaning forward).
      reference: ``t -> Reference`` (speed, heading, height).
      push: ``(t_start, force_x N, duration s)`` horizontal push on the body, or None.
      ground_truth: feed the controller MuJoCo's state instead of the sensors.
      control_period: s; a multiple of the model's time step.
      jump: a jump plan, or None.
      initial_roll: initial body roll, rad (e.g. one wheel on a step).
      initial_lift: raise the initial pose by this much, m (e.g. half a step).
    """

    duration: float
    alpha0: float
    reference: Callable[[float], Reference]
    initial_tilt: float = 0.0
    push: tuple[float, float, float] | None = None
    ground_truth: bool = False
    control_period: float = 0.002
    jump: JumpPlan | None = None
    initial_roll: float = 0.0
    initial_lift: float = 0.0


@dataclass
class Trace:
    """Logged at every control step; arrays of length N (two columns: left, right).

    ``est_*`` is what the controller saw; ``true_*`` is MuJoCo's state.
    """

    t: np.ndarray
    true_x: np.ndarray
    true_xd: np.ndarray
    true_pitch: np.ndarray
    true_pitch_rate: np.ndarray
    true_roll: np.ndarray
    true_yaw: np.ndarray
    true_yaw_rate: np.ndarray
    est_x: np.ndarray
    est_xd: np.ndarray
    est_pitch: np.ndarray
    height: np.ndarray  # (N, 2) leg heights, m
    alpha: np.ndarray  # (N, 2), rad
    body_z: np.ndarray
    wheel_z: np.ndarray  # (N, 2) lowest point of each wheel above the floor, m
    wheel_torque: np.ndarray  # (N, 2)
    hip_torque: np.ndarray  # (N, 2) common torque of each leg's motors, before the swing PD
    wheel_total: np.ndarray  # LQR total before the split
    phase: np.ndarray  # (N,) str
    closure: np.ndarray  # loop-closure error, m
    reference: np.ndarray  # (N, 3): speed, heading, height
    fell: bool
    diverged: bool
    wheel_limit: float
    hip_limit: float
    transitions: list = field(default_factory=list)

    def window(self, t0: float, t1: float = np.inf) -> np.ndarray:
        """Boolean mask of samples with ``t0 <= t < t1``."""
        return (self.t >= t0) & (self.t < t1)


def geometry(p: BipedParams) -> LegGeometry:
    return LegGeometry(p.l1, p.l2, p.l3, p.pendulum.r)


def make_controller(p: BipedParams, control_period: float, Q=None, R=None, jump: JumpPlan | None = None,
                    gains=None) -> BipedController:
    """A controller with gains designed from the analytic models of ``p``."""
    kwargs = {k: v for k, v in (("Q", Q), ("R", R)) if v is not None}
    gains = gains or design(p.pendulum, geometry(p), **kwargs)
    return BipedController(p.pendulum, geometry(p), gains, control_period, p.hip_torque_limit,
                           p.wheel_torque_limit, jump=jump)


class _Sensors:
    """Sensor slices by name, looked up once."""

    def __init__(self, model: mujoco.MjModel):
        def adr(name):
            s = model.sensor(name)
            return slice(int(s.adr[0]), int(s.adr[0] + s.dim[0]))

        try:
            self.quat, self.gyro, self.accel = adr("imu_quat"), adr("imu_gyro"), adr("imu_accel")
            self.hip_pos = [adr(f"{h}_pos") for h in HIPS]
            self.hip_vel = [adr(f"{h}_vel") for h in HIPS]
            self.wheel_pos = [adr(f"{s}_wheel_pos") for s in ("left", "right")]
            self.wheel_vel = [adr(f"{s}_wheel_vel") for s in ("left", "right")]
        except KeyError as exc:
            raise CrossdynError(f"closed loop needs the biped's sensors; missing {exc}") from None

    def read(self, d: mujoco.MjData):
        s = d.sensordata
        return (s[self.quat], s[self.gyro], s[self.accel],
                np.array([s[a][0] for a in self.hip_pos]), np.array([s[a][0] for a in self.hip_vel]),
                np.array([s[a][0] for a in self.wheel_pos]), np.array([s[a][0] for a in self.wheel_vel]))


def _initial_state(model, p: BipedParams, sc: Scenario) -> np.ndarray:
    """Balanced standing pose, then tilted about the axle (and rolled) as asked."""
    qpos, theta_eq = balance_pose(model, sc.alpha0, p)
    y = p.leg_height(sc.alpha0)
    theta = theta_eq + sc.initial_tilt
    qpos[0:3] = [y * np.sin(theta), 0.0, p.pendulum.r + y * np.cos(theta) + sc.initial_lift]
    pitch_q = np.array([np.cos(theta / 2), 0.0, np.sin(theta / 2), 0.0])
    roll_q = np.array([np.cos(sc.initial_roll / 2), np.sin(sc.initial_roll / 2), 0.0, 0.0])
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, pitch_q, roll_q)
    qpos[3:7] = quat
    return qpos


def simulate(model: mujoco.MjModel, sc: Scenario, controller: BipedController | None = None,
             video: Path | None = None, fps: int = 30) -> Trace:
    """Run a scenario in closed loop and return its trace.

    Raises:
      CrossdynError: the model lacks the biped's sensors or actuators, or the
        control period is not a multiple of the time step.
    """
    p = biped_params(model)
    steps_per_control = int(round(sc.control_period / model.opt.timestep))
    if steps_per_control < 1 or abs(steps_per_control * model.opt.timestep - sc.control_period) > 1e-12:
        raise CrossdynError(f"control period {sc.control_period} s is not a multiple of the time step "
                            f"{model.opt.timestep} s")
    controller = controller or make_controller(p, sc.control_period, jump=sc.jump)
    data = mujoco.MjData(model)
    data.qpos[:] = _initial_state(model, p, sc)
    mujoco.mj_forward(model, data)

    sensors = _Sensors(model)
    estimator = Estimator(geometry(p))
    hip_act = [model.actuator(h).id for h in HIPS]
    wheel_act = [model.actuator(f"{s}_wheel").id for s in ("left", "right")]
    body = model.body("body").id
    axles = [model.site(f"{s}_axle").id for s in ("left", "right")]
    wheels = [model.body(f"{s}_wheel").id for s in ("left", "right")]
    free_v = model.joint("root").dofadr[0]

    n = int(round(sc.duration / sc.control_period))
    log = {k: [] for k in ("t", "true_x", "true_xd", "true_pitch", "true_pitch_rate", "true_roll", "true_yaw",
                           "true_yaw_rate", "est_x", "est_xd", "est_pitch", "height", "alpha", "body_z", "wheel_z",
                           "wheel_torque", "hip_torque", "wheel_total", "phase", "closure", "reference")}
    renderer = frames = None
    if video is not None:
        renderer, frames = mujoco.Renderer(model, 360, 640), []
    fell = diverged = False
    truth0 = None
    for k in range(n):
        t = data.time
        roll, pitch, yaw = euler_zyx(data.qpos[3:7])
        roll_rate, pitch_rate, yaw_rate = euler_rates(roll, pitch, data.qvel[free_v + 3 : free_v + 6])
        heading = np.array([np.cos(yaw), np.sin(yaw)])
        axle = 0.5 * (data.site_xpos[axles[0]] + data.site_xpos[axles[1]])
        if truth0 is None:
            truth0 = axle[:2].copy()
        axle_vel = 0.5 * sum(_site_velocity(model, data, s)[:2] for s in axles)
        true_x, true_xd = float((axle[:2] - truth0) @ heading), float(axle_vel @ heading)
        try:
            est = estimator.update(*sensors.read(data))
        except ValueError:
            diverged = True
            break
        if sc.ground_truth:
            est = Estimate(true_x, true_xd, pitch, pitch_rate, roll, roll_rate, yaw, yaw_rate, est.alpha,
                           est.alpha_rate, est.height, est.height_rate, est.accel, est.hip_angles, est.hip_rates)
        ref = sc.reference(t)
        cmd = controller(t, est, ref)
        data.ctrl[wheel_act] = cmd.wheels
        data.ctrl[hip_act] = cmd.hips

        row = (t, true_x, true_xd, pitch, pitch_rate, roll, yaw, yaw_rate, est.x, est.xd, est.pitch, est.height,
               est.alpha, data.xpos[body, 2], [data.xpos[w, 2] - p.pendulum.r for w in wheels], cmd.wheels, cmd.legs,
               cmd.wheel_total, cmd.phase, closure_error(model, data), (ref.velocity, ref.yaw, ref.height))
        for key, value in zip(log, row):
            log[key].append(value)

        for _ in range(steps_per_control):
            if sc.push is not None:
                t0, force, length = sc.push
                data.xfrc_applied[body, 0] = force if t0 <= data.time < t0 + length else 0.0
            mujoco.mj_step(model, data)
        if frames is not None and len(frames) < data.time * fps:
            renderer.update_scene(data, camera="track")
            frames.append(renderer.render().copy())
        if not np.isfinite(data.qacc).all() or data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0:
            diverged = True
            break
        if abs(pitch) > FALL_PITCH:
            fell = True
            break
    if renderer is not None:
        renderer.close()
        _write_video(video, frames, fps)
    arrays = {k: np.array(v) for k, v in log.items()}
    return Trace(**arrays, fell=fell or diverged, diverged=diverged, wheel_limit=p.wheel_torque_limit,
                 hip_limit=p.hip_torque_limit,
                 transitions=list(controller.machine.transitions) if controller.machine else [])


def _site_velocity(model, data, site: int) -> np.ndarray:
    """World linear velocity of a site, m/s."""
    vel = np.zeros(6)
    mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, site, vel, 0)
    return vel[3:6]


def _write_video(path: Path, frames: list, fps: int) -> None:
    try:
        import imageio.v3 as iio
    except ImportError:
        raise CrossdynError("--video needs imageio and imageio-ffmpeg: pip install -e '.[video]'") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, np.stack(frames), fps=fps, codec="libx264")


def video_environment() -> None:
    """Select headless EGL rendering unless the user chose a GL backend."""
    os.environ.setdefault("MUJOCO_GL", "egl")
