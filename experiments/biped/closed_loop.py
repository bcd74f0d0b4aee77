"""Closing the loop: the biped controller driving the MuJoCo robot.

:func:`simulate` steps ``mjcf/wheel_legged_biped.xml`` (or a variant) with a
:class:`~controllers.biped.BipedController` running every ``control_period``,
fed from the robot's own sensors (read by name) or, with ``ground_truth=True``,
from MuJoCo's state.  It records a :class:`Trace` for metrics and plots, stops
early when the robot falls or the simulation diverges, and can render a video
from the tracking camera.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from math import asin, isfinite, nan
from operator import itemgetter
from pathlib import Path
from typing import Callable

import mujoco
import numpy as np

from crossdyn.controllers.biped import BipedController, Command, Reference, design
from crossdyn.analytic.rotation import euler_rates, euler_zyx
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
    """The sensors the estimator reads, as index tuples into ``sensordata``, looked up by name once."""

    def __init__(self, model: mujoco.MjModel):
        def adr(name):
            s = model.sensor(name)
            return tuple(range(int(s.adr[0]), int(s.adr[0] + s.dim[0])))

        try:
            groups = (adr("imu_quat"), adr("imu_gyro"), adr("imu_accel"),
                      sum((adr(f"{h}_pos") for h in HIPS), ()), sum((adr(f"{h}_vel") for h in HIPS), ()),
                      adr("left_wheel_pos") + adr("right_wheel_pos"), adr("left_wheel_vel") + adr("right_wheel_vel"))
        except KeyError as exc:
            raise CrossdynError(f"closed loop needs the biped's sensors; missing {exc}") from None
        self._picks = tuple(_picker(group) for group in groups)
        self.indices = sum(groups, ())  # all of them, in the estimator's order (the compiled step reads these)

    def read(self, sensordata: np.ndarray) -> tuple:
        """``(quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel)`` as tuples of floats."""
        s = sensordata.tolist()  # one copy into Python floats; the picks below allocate no arrays
        quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel = self._picks
        return quat(s), gyro(s), accel(s), hip_pos(s), hip_vel(s), wheel_pos(s), wheel_vel(s)


def _picker(indices) -> Callable[[list], tuple]:
    """``values -> tuple(values[i] for i in indices)``, as one C call (``operator.itemgetter``)."""
    get = itemgetter(*indices)
    return get if len(indices) > 1 else lambda values: (get(values),)


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


def simulate(model: mujoco.MjModel, sc: Scenario,
             controller: BipedController | Callable[[float, Estimate, Reference], Command] | None = None,
             video: Path | None = None, fps: int = 30, hardware=None, compiled: bool = True) -> Trace:
    """Run a scenario in closed loop and return its trace.

    ``controller`` is a :class:`~crossdyn.controllers.biped.BipedController` (by
    default one designed for ``model``) or any function ``(t, est, ref) -> Command``
    (a user's own; see README, "Your own controller in the loop").

    Per control step: read the sensors (``readings``), estimate, ask the
    controller for ``(wheels, hips)`` torques, write them to ``data.ctrl`` and
    step the physics.  The step's own cost is kept near the physics': sensors
    are read as index tuples into one ``sensordata.tolist()``, the estimator and
    controller work in plain floats, MuJoCo's arrays are bound once (views
    stay valid for the run), MuJoCo's state goes into a preallocated table by one
    ``np.concatenate`` and the controller's log is one tuple of floats per step,
    the cyclic garbage collector waits until the run ends, and the derived truth
    (Euler angles, travel, axle velocities, loop closure) is computed for the
    whole run at the end.

    With the built-in controller (a ``BipedController``), no hardware hooks and
    no ground truth, the estimator and controller run as one compiled step
    (:mod:`crossdyn.controllers.compiled`, Numba; bit-identical to the classes)
    unless ``compiled=False`` or Numba is missing.

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
    wheel_act = [model.actuator(f"{s}_wheel").id for s in ("left", "right")]
    hip_act = [model.actuator(h).id for h in HIPS]
    body = model.body("body").id
    n = int(round(sc.duration / sc.control_period))
    # MuJoCo's arrays, bound once (views stay valid for the life of ``data``).
    qacc, ctrl, sensordata = data.qacc, data.ctrl, data.sensordata
    state = _StateLog(model, data, n + 1)
    quat = state.quat
    bad_qacc = data.warning[mujoco.mjtWarning.mjWARN_BADQACC]
    push_body = data.xfrc_applied[body]
    reference, ground_truth = sc.reference, sc.ground_truth
    plain = not compiled or hardware is not None or ground_truth
    fast = None if plain else _compiled_step(controller, p, sensors, wheel_act + hip_act, n)
    if fast is not None:
        kernel, index, params, powers, kernel_state, log_table = fast
    fast_estimate = None if plain or fast is not None else _compiled_estimator(p, sensors)
    if fast_estimate is not None:
        estimate, as_estimate, index, params, kernel_state, estimated = fast_estimate
    # The loop records MuJoCo's raw state as one row of a preallocated table per step
    # (_StateLog) and what the controller saw and did as one tuple of floats (_LOG); the
    # derived truth (Euler angles, travel along the heading, loop closure) is computed for
    # the whole run at the end.
    log, phases = [], []
    renderer = frames = None
    if video is not None:
        renderer, frames = mujoco.Renderer(model, 360, 640), []
    fell = diverged = False
    steps = 0  # control steps whose torques were applied
    # The loop allocates a few small tuples per step and keeps none in cycles; the cyclic
    # collector's passes over the growing log would cost more than the step's own work.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for i in range(n):
            t = data.time
            state.record(i, t)
            w, qx, qy, qz = quat.tolist()
            sin_pitch = 2.0 * (w * qy - qz * qx)  # analytic.rotation.pitch, for the fall check below

            if fast is not None:
                ref = reference(t)
                if not kernel(t, ref.velocity, ref.yaw, nan if ref.height is None else ref.height, sensordata, index,
                              ctrl, params, powers, kernel_state, log_table, i):
                    diverged = True  # a non-finite sensor reading, as the estimator's ValueError below
                    break
                steps = i + 1
            else:
                if fast_estimate is not None:
                    if not estimate(sensordata, index, params, kernel_state, estimated):
                        diverged = True
                        break
                    est = as_estimate(estimated.tolist())
                else:
                    readings = sensors.read(sensordata)
                    if hardware is not None:
                        readings = hardware.sense(t, readings)
                    try:
                        est = estimator.update(*readings)
                    except ValueError:
                        diverged = True
                        break
                if ground_truth:
                    est = _true_estimate(est, state, i)
                ref = reference(t)
                cmd = controller(t, est, ref)
                wheels, hips = cmd.wheels, cmd.hips
                if hardware is not None:
                    wheels, hips = hardware.command(t, wheels, hips, data)
                ctrl[wheel_act[0]], ctrl[wheel_act[1]] = wheels
                ctrl[hip_act[0]], ctrl[hip_act[1]], ctrl[hip_act[2]], ctrl[hip_act[3]] = hips
                log.append((est.x, est.xd, est.pitch, *est.height, *est.alpha, *cmd.wheels, *cmd.legs, cmd.wheel_total,
                            ref.velocity, ref.yaw, nan if ref.height is None else ref.height))
                phases.append(cmd.phase)
                steps = len(phases)

            if sc.push is not None:
                t0, force, length = sc.push
                for _ in range(steps_per_control):
                    push_body[0] = force if t0 <= data.time < t0 + length else 0.0
                    mujoco.mj_step(model, data)
            else:
                mujoco.mj_step(model, data, steps_per_control)
            if frames is not None and len(frames) < data.time * fps:
                renderer.update_scene(data, camera="track")
                frames.append(renderer.render().copy())
            if bad_qacc.number > 0 or not isfinite(sum(qacc.tolist())):  # a NaN or inf makes the sum one
                diverged = True
                break
            if abs(asin(min(max(sin_pitch, -1.0), 1.0))) > FALL_PITCH:
                fell = True
                break
    finally:
        if collecting:
            gc.enable()
    if renderer is not None:
        renderer.close()
        _write_video(video, frames, fps)
    # (a break after recording the state leaves one row over)
    state = state.columns(steps)
    if fast is not None:
        from crossdyn.controllers import compiled as kernels

        done = log_table[:steps]
        kernels.unpack(controller, kernel_state, state["t"], done[:, -1])
        logged = _columns(done[:, :-1], _LOG)
        phases = [kernels.PHASES[k].value for k in done[:, -1].astype(int).tolist()]
    else:
        logged = _columns(log, _LOG)
    machine = getattr(controller, "machine", None)  # a user's controller function has none
    truth = _truth({"t": state["t"], "quat": state["quat"], "omega": state["omega"],
                    "sites": state["sites"].reshape(steps, 4, 3),
                    "axle_vel": 0.5 * (state["axle_vel"][:, :3] + state["axle_vel"][:, 3:])})
    return Trace(t=state["t"], **truth, est_x=logged["est_x"], est_xd=logged["est_xd"],
                 est_pitch=logged["est_pitch"], height=logged["height"], alpha=logged["alpha"],
                 body_z=state["z"][:, 0], wheel_z=state["z"][:, 1:] - p.pendulum.r,
                 wheel_torque=logged["wheel_torque"], hip_torque=logged["hip_torque"],
                 wheel_total=logged["wheel_total"], phase=np.array(phases), reference=logged["reference"],
                 fell=fell or diverged, diverged=diverged, wheel_limit=p.wheel_torque_limit,
                 hip_limit=p.hip_torque_limit,
                 transitions=list(machine.transitions) if machine is not None else [])


def _compiled_step(controller, p: BipedParams, sensors: _Sensors, actuators: list[int], n: int) -> tuple | None:
    """The compiled step and its arrays for ``controller``, or None where the readable path runs.

    Returns ``(step, index, params, powers, state, log)`` (:func:`crossdyn.controllers.compiled.step`'s
    arguments) for a :class:`BipedController` itself (a subclass may override ``__call__``) with a
    1 x 4 balance gain, when Numba imports.
    """
    if type(controller) is not BipedController:
        return None
    try:
        from crossdyn.controllers import compiled
    except ImportError:  # Numba is not installed: the classes run
        return None
    try:
        params, powers, state = compiled.pack(controller, geometry(p))
    except ValueError:
        return None
    index = np.array(sensors.indices + tuple(actuators), dtype=np.int64)
    return compiled.step, index, params, powers, state, np.empty((n, compiled.LOG_WIDTH))


def _compiled_estimator(p: BipedParams, sensors: _Sensors) -> tuple | None:
    """The compiled estimator for a user's controller function, or None without Numba.

    Returns ``(estimate, as_estimate, index, params, state, buffer)``
    (:func:`crossdyn.controllers.compiled.estimate`'s arguments and its converter to an ``Estimate``).
    """
    try:
        from crossdyn.controllers import compiled
    except ImportError:
        return None
    params, state = compiled.pack_estimator(geometry(p))
    index = np.array(sensors.indices, dtype=np.int64)
    return compiled.estimate, compiled.as_estimate, index, params, state, np.empty(compiled.ESTIMATE)


class _StateLog:
    """MuJoCo's state before each control step: one row of a preallocated table per step.

    A row is the root quaternion, the body's angular velocity, every site's
    position, the two axle bodies' ``cvel`` and their tree's ``subtree_com``, and
    the body's and wheels' positions: views into ``data`` bound once, copied by one
    ``np.concatenate``.  :meth:`columns` derives the rest for the whole run at the
    end: the axles' linear velocities are ``mj_objectVelocity``'s transform of
    ``cvel`` to the site, ``v - (p_site - p_com) x w`` (bit for bit the same).
    """

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, rows: int):
        root = model.joint("root")
        self.quat = data.qpos[int(root.qposadr[0]) + 3 : int(root.qposadr[0]) + 7]  # a view, (4,)
        free_v = int(root.dofadr[0])
        axles = [model.site(f"{s}_axle").id for s in ("left", "right")]
        axle_bodies = [int(model.site_bodyid[a]) for a in axles]
        trees = {int(model.body_rootid[b]) for b in axle_bodies}
        if len(trees) != 1:
            raise CrossdynError("closed loop needs both axles on the robot's one floating body tree")
        bodies = [model.body(name).id for name in ("body", "left_wheel", "right_wheel")]
        self._parts = (self.quat, data.qvel[free_v + 3 : free_v + 6], data.site_xpos.reshape(-1),
                       *(data.cvel[b] for b in axle_bodies), data.subtree_com[trees.pop()],
                       *(data.xpos[b] for b in bodies))
        start = np.cumsum([0] + [part.size for part in self._parts])
        sites = np.array([model.site(name).id for name in ("left_axle", "right_axle", "left_rear_foot",
                                                            "right_rear_foot")])
        self._columns = {
            "quat": np.arange(4),
            "omega": 4 + np.arange(3),
            "sites": start[2] + (3 * sites[:, None] + np.arange(3)).ravel(),  # (12,): four sites' x, y, z
            "cvel": np.r_[start[3] : start[3] + 6, start[4] : start[4] + 6],  # the axle bodies' (angular, linear)
            "com": start[5] + np.arange(3),
            "z": start[6:9] + 2,
        }
        self._times = np.empty(rows)
        self._table = np.empty((rows, start[-1]))

    def record(self, i: int, t: float) -> None:
        """Row ``i``: time ``t`` and MuJoCo's arrays as they are now."""
        self._times[i] = t
        np.concatenate(self._parts, out=self._table[i])

    def columns(self, steps: int) -> dict[str, np.ndarray]:
        """The first ``steps`` rows: ``{"t": (N,), "quat": (N, 4), "omega": (N, 3), "sites": (N, 12),
        "axle_vel": (N, 6) the two axles' linear velocities, "z": (N, 3)}``."""
        return self._select(self._table[:steps], self._times[:steps])

    def at(self, i: int) -> dict[str, np.ndarray]:
        """Row ``i``'s columns, as :meth:`columns` without the leading axis."""
        return {name: value[0] for name, value in self._select(self._table[i : i + 1], self._times[i : i + 1]).items()}

    def _select(self, table: np.ndarray, times: np.ndarray) -> dict[str, np.ndarray]:
        out = {"t": times.copy(), **{name: table[:, self._columns[name]] for name in ("quat", "omega", "sites", "z")}}
        n = len(table)
        cvel = table[:, self._columns["cvel"]].reshape(n, 2, 6)
        offset = out["sites"].reshape(n, 4, 3)[:, :2] - table[:, None, self._columns["com"]]
        out["axle_vel"] = (cvel[:, :, 3:] - np.cross(offset, cvel[:, :, :3])).reshape(n, 6)
        return out


# The per-step log tuples' columns: (name, width), in order: what the controller saw and did.
_LOG = (("est_x", 1), ("est_xd", 1), ("est_pitch", 1), ("height", 2), ("alpha", 2), ("wheel_torque", 2),
        ("hip_torque", 2), ("wheel_total", 1), ("reference", 3))


def _columns(rows: list[tuple], layout: tuple) -> dict[str, np.ndarray]:
    """Rows of floats -> ``{name: (N,) or (N, width) array}`` by ``layout``."""
    table = np.array(rows, dtype=float).reshape(len(rows), sum(w for _, w in layout))
    out, start = {}, 0
    for name, width in layout:
        out[name] = table[:, start] if width == 1 else table[:, start : start + width]
        start += width
    return out


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


def _true_estimate(est: Estimate, state: _StateLog, i: int) -> Estimate:
    """``est`` with its pose, rates and travel replaced by MuJoCo's (``--set ground_truth=true``).

    ``state``: the run's state log, whose row ``i`` is this step's and row 0 the first step's.
    """
    now, first = state.at(i), state.at(0)
    quat, omega, sites, sites0 = now["quat"], now["omega"], now["sites"].reshape(4, 3), first["sites"].reshape(4, 3)
    axle_vel = 0.5 * (now["axle_vel"][:3] + now["axle_vel"][3:])
    roll, pitch_, yaw = (float(a) for a in euler_zyx(quat))
    roll_rate, pitch_rate, yaw_rate = (float(a) for a in euler_rates(roll, pitch_, omega))
    heading = np.array([np.cos(yaw), np.sin(yaw)])
    start = 0.5 * (sites0[0, :2] + sites0[1, :2])
    x = float((0.5 * (sites[0, :2] + sites[1, :2]) - start) @ heading)
    return est._replace(x=x, xd=float(axle_vel[:2] @ heading), pitch=pitch_, pitch_rate=pitch_rate, roll=roll,
                        roll_rate=roll_rate, yaw=yaw, yaw_rate=yaw_rate)


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
