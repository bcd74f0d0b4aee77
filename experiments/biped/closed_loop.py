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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import mujoco
import numpy as np

from crossdyn.controllers.biped import BipedController, Reference, design
from crossdyn.analytic.rotation import euler_rates, euler_zyx, pitch
from crossdyn.controllers.estimation import Estimate, Estimator, LegGeometry
from crossdyn.controllers.jump import JumpPlan
from crossdyn.experiments.biped.model import HIPS, BipedParams, balance_pose, biped_params
from crossdyn.experiments.core.errors import CrossdynError

__all__ = ["Scenario", "Trace", "simulate", "make_controller", "geometry", "initial_state", "FALL_PITCH"]

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


def initial_state(model, p: BipedParams, sc: Scenario) -> np.ndarray:
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
             video: Path | None = None, fps: int = 30, hardware=None) -> Trace:
    """Run a scenario in closed loop and return its trace.

    ``hardware`` (an :class:`~crossdyn.experiments.biped.imperfections.Hardware`,
    or None for perfect sensors and motors) sees every sensor reading before the
    estimator and every command before it is applied.

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
    data.qpos[:] = initial_state(model, p, sc)
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
    # The loop records raw state only; the derived truth (Euler angles, travel along
    # the heading, loop closure) is computed for the whole run at the end, so the
    # per-step cost stays with the controller and the physics.
    sites = [model.site(name).id for name in ("left_axle", "right_axle", "left_rear_foot", "right_rear_foot")]
    raw = {k: [] for k in ("t", "quat", "omega", "sites", "axle_vel", "body_z", "wheel_z")}
    log = {k: [] for k in ("est_x", "est_xd", "est_pitch", "height", "alpha", "wheel_torque", "hip_torque",
                           "wheel_total", "phase", "reference")}
    renderer = frames = None
    if video is not None:
        renderer, frames = mujoco.Renderer(model, 360, 640), []
    fell = diverged = False
    for _ in range(n):
        t = data.time
        quat, omega = data.qpos[3:7].copy(), data.qvel[free_v + 3 : free_v + 6].copy()
        axle_vel = 0.5 * (_site_velocity(model, data, axles[0]) + _site_velocity(model, data, axles[1]))
        for key, value in zip(raw, (t, quat, omega, data.site_xpos[sites], axle_vel, data.xpos[body, 2],
                                    data.xpos[wheels, 2] - p.pendulum.r)):
            raw[key].append(value)
        readings = sensors.read(data)
        if hardware is not None:
            readings = hardware.sense(t, readings)
        try:
            est = estimator.update(*readings)
        except ValueError:
            diverged = True
            break
        if sc.ground_truth:
            est = _true_estimate(est, quat, omega, data.site_xpos[sites[:2]], axle_vel, raw["sites"][0])
        ref = sc.reference(t)
        cmd = controller(t, est, ref)
        wheels_cmd, hips_cmd = cmd.wheels, cmd.hips
        if hardware is not None:
            wheels_cmd, hips_cmd = hardware.command(t, wheels_cmd, hips_cmd, data)
        data.ctrl[wheel_act] = wheels_cmd
        data.ctrl[hip_act] = hips_cmd
        for key, value in zip(log, (est.x, est.xd, est.pitch, est.height, est.alpha, cmd.wheels, cmd.legs,
                                    cmd.wheel_total, cmd.phase, (ref.velocity, ref.yaw, ref.height))):
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
        if abs(pitch(quat)) > FALL_PITCH:
            fell = True
            break
    if renderer is not None:
        renderer.close()
        _write_video(video, frames, fps)
    steps = len(log["phase"])  # a break after recording the state leaves one raw row over
    raw = {k: np.array(v[:steps]) for k, v in raw.items()}
    arrays = {k: np.array(v) for k, v in log.items()}
    return Trace(t=raw["t"], **_truth(raw), body_z=raw["body_z"], wheel_z=raw["wheel_z"], **arrays,
                 fell=fell or diverged, diverged=diverged, wheel_limit=p.wheel_torque_limit,
                 hip_limit=p.hip_torque_limit,
                 transitions=list(controller.machine.transitions) if controller.machine else [])


def _truth(raw: dict) -> dict:
    """MuJoCo's state as the controller's quantities, for a whole run at once.

    ``true_x`` is the axle midpoint's travel from its start, projected on the
    current heading; ``true_xd`` its velocity along the heading; ``closure`` the
    larger loop-closure gap of the two legs (rear shank tip to axle), m.
    """
    if raw["t"].size == 0:
        empty = np.zeros(0)
        return {k: empty for k in ("true_x", "true_xd", "true_pitch", "true_pitch_rate", "true_roll", "true_yaw",
                                   "true_yaw_rate", "closure")}
    roll, pitch, yaw = euler_zyx(raw["quat"])
    roll_rate, pitch_rate, yaw_rate = euler_rates(roll, pitch, raw["omega"])
    heading = np.stack([np.cos(yaw), np.sin(yaw)], axis=-1)
    axle = 0.5 * (raw["sites"][:, 0, :2] + raw["sites"][:, 1, :2])
    return {
        "true_x": np.einsum("ni,ni->n", axle - axle[0], heading),
        "true_xd": np.einsum("ni,ni->n", raw["axle_vel"][:, :2], heading),
        "true_pitch": pitch,
        "true_pitch_rate": pitch_rate,
        "true_roll": roll,
        "true_yaw": np.unwrap(yaw),
        "true_yaw_rate": yaw_rate,
        "closure": np.linalg.norm(raw["sites"][:, 2:] - raw["sites"][:, :2], axis=-1).max(axis=1),
    }


def _true_estimate(est: Estimate, quat, omega, axles, axle_vel, sites0) -> Estimate:
    """``est`` with its pose, rates and travel replaced by MuJoCo's (``--set ground_truth=true``)."""
    roll, pitch, yaw = (float(a) for a in euler_zyx(quat))
    roll_rate, pitch_rate, yaw_rate = (float(a) for a in euler_rates(roll, pitch, omega))
    heading = np.array([np.cos(yaw), np.sin(yaw)])
    start = 0.5 * (sites0[0, :2] + sites0[1, :2])
    x = float((0.5 * (axles[0, :2] + axles[1, :2]) - start) @ heading)
    return replace(est, x=x, xd=float(axle_vel[:2] @ heading), pitch=pitch, pitch_rate=pitch_rate, roll=roll,
                   roll_rate=roll_rate, yaw=yaw, yaw_rate=yaw_rate)


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
