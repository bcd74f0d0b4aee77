"""Closing the loop: the biped controller driving the MuJoCo robot.

:func:`simulate_scenario` steps the robot with a :class:`~controllers.biped.BipedController`
every ``control_period``, fed from its own sensors (read by name) or, with ``ground_truth=True``,
from MuJoCo's state, and records a :class:`ScenarioTrace`, stopping early when the robot falls.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import asin, nan
from operator import itemgetter
from pathlib import Path

import mujoco
import numpy as np

from ...analytic.rotation import euler_rates, euler_zyx
from ...controllers.biped.controller import BipedController, Command, Reference, design
from ...controllers.biped.estimation import Estimate, Estimator, LegGeometry
from ...controllers.biped.jump import JumpPlan
from ..core.errors import CrossdynError, ParameterError
from ..core.imperfections import Imperfection, Push
from ..core.loop.batch import simulate_batch
from ..core.loop.setup import call_failed
from ..core.loop.simulate import simulate as run_loop
from .model import HIPS, BipedParams, balance_pose, biped_params

__all__ = ["Scenario", "ScenarioTrace", "simulate_scenario", "simulate_many", "loop_controller", "make_controller",
           "geometry", "initial_state", "FALL_PITCH", "plug", "Sensors", "Fall", "actuators", "pushes"]

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
class ScenarioTrace:
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


class Sensors:
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


def simulate_scenario(model: mujoco.MjModel, sc: Scenario,
                      controller: BipedController | Callable[[float, Estimate, Reference], Command] | None = None,
                      video: Path | None = None, fps: int = 30, imperfections: Sequence[Imperfection] = (),
                      seed: int = 0, compiled: bool = True) -> ScenarioTrace:
    """Run a scenario in crossdyn's closed loop (:func:`crossdyn.experiments.core.loop.simulate.simulate`) and return
    its trace; the loop ends early when the robot falls (pitch past :data:`FALL_PITCH`) or diverges.

    Args:
      model: the robot (meeting the biped's contract).
      sc: the scenario (initial pose, reference, push, control period, jump).
      controller: a :class:`~crossdyn.controllers.biped.controller.BipedController` (default: one designed for
        ``model``) or any function ``(t, est, ref) -> Command`` (docs/guides/python.md).  The built-in
        controller runs with the estimator as one compiled step (Numba, bit-identical to the classes);
        a user's function gets the compiled estimate.
      video: write an MP4 from the tracking camera here.
      fps: video frames per simulated second.
      imperfections: generic imperfections on the robot's sensors and actuators
        (:meth:`~crossdyn.experiments.biped.imperfections.Imperfections.generic` makes the biped's).
      seed: seed of the imperfections' random draws.
      compiled: allow the compiled step (``ground_truth`` or a missing Numba run the classes).

    Raises:
      CrossdynError: the model lacks the biped's sensors or actuators, or the
        control period is not a multiple of the time step.
      ControllerError: a user's controller function raised.
    """
    p = biped_params(model)
    controller = controller or make_controller(p, sc.control_period, jump=sc.jump)
    n = int(round(sc.duration / sc.control_period))
    plugged = plug(controller, p, sc, Sensors(model), actuators(model), n, compiled)
    try:
        trace = run_loop(model, plugged, n * sc.control_period, qpos=initial_state(model, p, sc),
                         control_dt=sc.control_period, imperfections=[*imperfections, *pushes(sc)], seed=seed,
                         stop=Fall(model), record=_RECORD, video=video, camera="track", fps=fps)
    except ParameterError as exc:
        if "not a multiple" in str(exc):
            raise CrossdynError(f"control period {sc.control_period} s is not a multiple of the time step "
                                f"{model.opt.timestep} s") from None
        raise
    return _biped_trace(model, p, trace, plugged, controller)


def simulate_many(model: mujoco.MjModel, scenarios: Sequence[Scenario],
                  imperfections: Sequence[Imperfection] | Sequence[Sequence[Imperfection]] = (),
                  seeds: int | Sequence[int] = 0, nthread: int = 1,
                  controllers: Sequence[BipedController] | None = None) -> list[ScenarioTrace]:
    """Scenarios run together on MuJoCo's batch (:func:`~crossdyn.experiments.core.loop.batch.simulate_batch`),
    each with the built-in controller as its compiled step: ``simulate_many(model, [sc])[0]`` is
    ``simulate_scenario(model, sc)`` bit for bit.

    Args:
      model: the robot (meeting the biped's contract).
      scenarios: the runs; all of one duration and control period.
      imperfections: one list for every run, or one list per run.
      seeds: every run's seed, or one per run.
      nthread: MuJoCo's threads.
      controllers: one built-in controller per run, each fresh (a controller keeps state).

    Raises:
      CrossdynError: the scenarios differ in duration or control period; as :func:`simulate_scenario`.
    """
    if len({(sc.duration, sc.control_period) for sc in scenarios}) > 1:
        raise CrossdynError("simulate_many runs scenarios of one duration and one control period together")
    p = biped_params(model)
    sensors, motors = Sensors(model), actuators(model)
    period = scenarios[0].control_period
    n = int(round(scenarios[0].duration / period))
    if controllers is None:
        controllers = [make_controller(p, sc.control_period, jump=sc.jump) for sc in scenarios]
    plugs = [plug(c, p, sc, sensors, motors, n, True) for c, sc in zip(controllers, scenarios, strict=True)]
    per_run = bool(imperfections) and all(isinstance(i, Sequence) for i in imperfections)
    lists: list[list] = [list(i) for i in imperfections if isinstance(i, Sequence)] if per_run \
        else [list(imperfections)] * len(scenarios)
    mixes = [imps + pushes(sc) for imps, sc in zip(lists, scenarios, strict=True)]
    starts = np.array([initial_state(model, p, sc) for sc in scenarios])
    traces = simulate_batch(model, plugs, n * period, qpos=starts, control_dt=period, imperfections=mixes,
                            seeds=seeds, stop=Fall(model), record=_RECORD, nthread=nthread)
    return [_biped_trace(model, p, trace, plugged, controller)
            for trace, plugged, controller in zip(traces, plugs, controllers, strict=True)]


def loop_controller(model: mujoco.MjModel, sc: Scenario, controller: BipedController | None = None) -> tuple:
    """``(controller, stop)`` for crossdyn's loop (``simulate``): the estimator and ``controller`` (default: one
    designed for ``model``) as :func:`simulate_scenario` runs them, in their readable form (the same commands
    as the compiled step, bit for bit, with a log that grows: a run of any length), and the fall check.

    One run's: the estimator and the controller keep state.
    """
    p = biped_params(model)
    controller = controller or make_controller(p, sc.control_period, jump=sc.jump)
    return _Readable(controller, p, sc, Sensors(model), actuators(model), compiled=not sc.ground_truth), Fall(model)


def actuators(model: mujoco.MjModel) -> list[int]:
    """The biped's motors in the controller's command order: left and right wheel, then :data:`HIPS`."""
    return [model.actuator(f"{s}_wheel").id for s in ("left", "right")] + [model.actuator(h).id for h in HIPS]


def pushes(sc: Scenario) -> list[Push]:
    """The scenario's push on the body, as the loop's imperfection (none: empty)."""
    return [] if sc.push is None else [Push("body", (sc.push[1], 0.0, 0.0), sc.push[0], sc.push[2])]


class Fall:
    """``stop``: the robot has fallen when its pitch passes :data:`FALL_PITCH` (read from the root quaternion)."""

    def __init__(self, model: mujoco.MjModel):
        self.adr = int(model.joint("root").qposadr[0]) + 3

    def __call__(self, obs) -> str | None:
        w, qx, qy, qz = obs.qpos[self.adr : self.adr + 4].tolist()
        sin_pitch = 2.0 * (w * qy - qz * qx)  # analytic.rotation.pitch
        return "fell" if abs(asin(min(max(sin_pitch, -1.0), 1.0))) > FALL_PITCH else None


def _axles(model: mujoco.MjModel) -> tuple[list[int], int]:
    """The two axle bodies and the root of their (one) tree."""
    axle_bodies = [int(model.site_bodyid[model.site(f"{s}_axle").id]) for s in ("left", "right")]
    trees = {int(model.body_rootid[b]) for b in axle_bodies}
    if len(trees) != 1:
        raise CrossdynError("closed loop needs both axles on the robot's one floating body tree")
    return axle_bodies, trees.pop()


# What the loop records per step beyond qpos and qvel, for the derived truth (views of MjData, bound once).
_RECORD = {
    "sites": lambda m, d: d.site_xpos,
    "cvel_left": lambda m, d: d.cvel[_axles(m)[0][0]],
    "cvel_right": lambda m, d: d.cvel[_axles(m)[0][1]],
    "com": lambda m, d: d.subtree_com[_axles(m)[1]],
    "z_body": lambda m, d: d.xpos[m.body("body").id],
    "z_left": lambda m, d: d.xpos[m.body("left_wheel").id],
    "z_right": lambda m, d: d.xpos[m.body("right_wheel").id],
}
_SITES = ("left_axle", "right_axle", "left_rear_foot", "right_rear_foot")


def _state(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray, extra: dict) -> dict[str, np.ndarray]:
    """The recorded rows as the truth's raw columns: root quaternion (N, 4), body rate (N, 3), the four
    sites (N, 4, 3), the axles' mean velocity (N, 3, ``mj_objectVelocity``'s transform of ``cvel``), body
    and wheel heights (N, 3)."""
    root = model.joint("root")
    q, v = int(root.qposadr[0]), int(root.dofadr[0])
    n = qpos.shape[0]
    sites = extra["sites"][:, [model.site(name).id for name in _SITES]]
    cvel = np.stack([extra["cvel_left"], extra["cvel_right"]], axis=1)
    offset = sites[:, :2] - extra["com"][:, None, :]
    axle_vel = cvel[:, :, 3:] - np.cross(offset, cvel[:, :, :3])
    return {"quat": qpos[:, q + 3 : q + 7], "omega": qvel[:, v + 3 : v + 6], "sites": sites.reshape(n, 4, 3),
            "axle_vel": 0.5 * (axle_vel[:, 0] + axle_vel[:, 1]),
            "z": np.stack([extra["z_body"][:, 2], extra["z_left"][:, 2], extra["z_right"][:, 2]], axis=1)}


def plug(controller, p: BipedParams, sc: Scenario, sensors: Sensors, motors: list[int], n: int, compiled: bool):
    """The biped's estimator and ``controller`` (a ``BipedController`` or ``(t, est, ref) -> Command``) as the
    generic loop's command writer for a run of ``n`` steps with ``sensors`` and ``motors`` (:class:`Sensors`,
    :func:`actuators`): one compiled step if ``compiled`` allows it, or the readable classes."""
    plain = not compiled or sc.ground_truth
    if not plain and type(controller) is BipedController:  # a subclass may override __call__
        fast = _CompiledStep.make(controller, p, sc.reference, sensors, motors, n)
        if fast is not None:
            return fast
    return _Readable(controller, p, sc, sensors, motors, compiled=not plain)


class _CompiledStep:
    """The built-in controller and estimator as one Numba step (``write_command``: no per-step checks)."""

    def __init__(self, kernel, index, params, powers, state, log, reference):
        self.kernel, self.index, self.params, self.powers, self.state, self.log = (kernel, index, params, powers,
                                                                                  state, log)
        self.reference, self.rows = reference, 0

    @classmethod
    def make(cls, controller: BipedController, p: BipedParams, reference, sensors: Sensors, actuators: list[int],
             n: int):
        """The step for ``controller``, or None where it cannot run (no Numba, a gain that is not 1 x 4)."""
        compiled = _kernels()
        if compiled is None:  # Numba is not installed: the classes run
            return None
        try:
            params, powers, state = compiled.pack(controller, geometry(p))
        except ValueError:
            return None
        index = np.array(sensors.indices + tuple(actuators), dtype=np.int64)
        return cls(compiled.step, index, params, powers, state, np.empty((n, compiled.LOG_WIDTH)), reference)

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        ref = self.reference(t)
        if not self.kernel(t, ref.velocity, ref.yaw, nan if ref.height is None else ref.height, sensed, self.index,
                           command, self.params, self.powers, self.state, self.log, self.rows):
            return False  # a non-finite sensor reading, as the estimator's ValueError
        self.rows += 1
        return True

    def logged(self, controller: BipedController, times: np.ndarray) -> tuple[dict, list]:
        kernels = _kernels()  # not None: this step was made with them
        assert kernels is not None
        done = self.log[: times.size]
        kernels.unpack(controller, self.state, times, done[:, -1])
        return _columns(done[:, :-1], _LOG), [kernels.PHASES[k].value for k in done[:, -1].astype(int).tolist()]


class _Readable:
    """The estimator (compiled, or the readable class) and any ``(t, est, ref) -> Command`` controller."""

    def __init__(self, controller, p: BipedParams, sc: Scenario, sensors: Sensors, actuators: list[int],
                 compiled: bool):
        self.controller, self.sensors, self.reference = controller, sensors, sc.reference
        self.wheels, self.hips = actuators[:2], actuators[2:]
        self.estimator = Estimator(geometry(p))
        self.fast = _compiled_estimator(p, sensors) if compiled else None
        self.ground_truth = sc.ground_truth
        self.log: list[tuple] = []
        self.phases: list[str] = []
        self.truth: _TruthNow | None = None

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        if self.ground_truth:
            self.truth = _TruthNow(model, data)

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        if self.fast is not None:
            estimate, as_estimate, index, params, kernel_state, estimated = self.fast
            if not estimate(sensed, index, params, kernel_state, estimated):
                return False
            est = as_estimate(estimated.tolist())
        else:
            try:
                est = self.estimator.update(*self.sensors.read(sensed))
            except ValueError:
                return False
        if self.truth is not None:
            est = self.truth.estimate(est)
        ref = self.reference(t)
        try:
            cmd = self.controller(t, est, ref)
            wheels, hips = cmd.wheels, cmd.hips
        except Exception as exc:
            raise call_failed(exc, f"at t = {t:.6g} s") from None
        wheel, hip = self.wheels, self.hips
        command[wheel[0]], command[wheel[1]] = wheels
        command[hip[0]], command[hip[1]], command[hip[2]], command[hip[3]] = hips
        self.log.append((est.x, est.xd, est.pitch, *est.height, *est.alpha, *cmd.wheels, *cmd.legs, cmd.wheel_total,
                         ref.velocity, ref.yaw, nan if ref.height is None else ref.height))
        self.phases.append(cmd.phase)
        return True

    def logged(self, controller, times: np.ndarray) -> tuple[dict, list]:
        return _columns(self.log, _LOG), self.phases


class _TruthNow:
    """MuJoCo's state as the estimator's quantities, now (``--set ground_truth=true``)."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData):
        self.model, self.data = model, data
        self.views = {name: view(model, data) for name, view in _RECORD.items()}
        self.first: dict | None = None  # the state at the first control step

    def raw(self) -> dict:
        d = self.data
        extra = {name: np.asarray(view, dtype=float).copy()[None] for name, view in self.views.items()}
        return {k: v[0] for k, v in _state(self.model, d.qpos[None].copy(), d.qvel[None].copy(), extra).items()}

    def estimate(self, est: Estimate) -> Estimate:
        now = self.raw()
        if self.first is None:
            self.first = now
        return _true_estimate(est, now, self.first)


def _biped_trace(model: mujoco.MjModel, p: BipedParams, trace, plug, controller) -> ScenarioTrace:
    """The biped's :class:`ScenarioTrace` from the loop's trace and what the plugged controller logged."""
    logged, phases = plug.logged(controller, trace.t)
    state = _state(model, trace.qpos, trace.qvel, trace.extra)
    machine = getattr(controller, "machine", None)  # a user's controller function has none
    truth = _truth({"t": trace.t, **state})
    return ScenarioTrace(t=trace.t, **truth, **logged, body_z=state["z"][:, 0],
                         wheel_z=state["z"][:, 1:] - p.pendulum.r, phase=np.array(phases),
                         fell=trace.stopped is not None, diverged=trace.diverged, wheel_limit=p.wheel_torque_limit,
                         hip_limit=p.hip_torque_limit,
                         transitions=list(machine.transitions) if machine is not None else [])


def _kernels():
    """The compiled kernels (:mod:`crossdyn.controllers.biped.compiled`), or None without Numba."""
    try:
        from ...controllers.biped import compiled  # late: Numba's start-up (~1 s) is for runs that use it
    except ImportError:
        return None
    return compiled


def _compiled_estimator(p: BipedParams, sensors: Sensors) -> tuple | None:
    """The compiled estimator for a user's controller function, ``(estimate, as_estimate, index, params,
    state, buffer)``, or None without Numba."""
    compiled = _kernels()
    if compiled is None:
        return None
    params, state = compiled.pack_estimator(geometry(p))
    index = np.array(sensors.indices, dtype=np.int64)
    return compiled.estimate, compiled.as_estimate, index, params, state, np.empty(compiled.ESTIMATE)


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
    """MuJoCo's state as the controller's quantities, for a whole run: ``true_x`` the axle midpoint's travel
    along the current heading, ``true_xd`` its velocity, ``closure`` the larger loop-closure gap, m."""
    if raw["t"].size == 0:
        empty = np.zeros(0)
        return {k: empty for k in ("true_x", "true_xd", "true_pitch", "true_pitch_rate", "true_roll", "true_yaw",
                                   "true_yaw_rate", "closure")}
    roll, pitch, yaw = euler_zyx(raw["quat"])
    roll_rate, pitch_rate, yaw_rate = euler_rates(roll, pitch, raw["omega"])
    heading = np.stack([np.cos(yaw), np.sin(yaw)], axis=-1)
    axle = 0.5 * (raw["sites"][:, 0, :2] + raw["sites"][:, 1, :2])
    return {"true_x": np.einsum("ni,ni->n", axle - axle[0], heading),
            "true_xd": np.einsum("ni,ni->n", raw["axle_vel"][:, :2], heading), "true_pitch": pitch,
            "true_pitch_rate": pitch_rate, "true_roll": roll, "true_yaw": np.unwrap(yaw), "true_yaw_rate": yaw_rate,
            "closure": np.linalg.norm(raw["sites"][:, 2:] - raw["sites"][:, :2], axis=-1).max(axis=1)}


def _true_estimate(est: Estimate, now: dict, first: dict) -> Estimate:
    """``est`` with pose, rates and travel replaced by MuJoCo's, from this step's and the first step's
    raw state (:func:`_state`'s columns, one row)."""
    quat, omega, sites, sites0 = now["quat"], now["omega"], now["sites"], first["sites"]
    axle_vel = now["axle_vel"]
    roll, pitch_, yaw = (float(a) for a in euler_zyx(quat))
    roll_rate, pitch_rate, yaw_rate = (float(a) for a in euler_rates(roll, pitch_, omega))
    heading = np.array([np.cos(yaw), np.sin(yaw)])
    start = 0.5 * (sites0[0, :2] + sites0[1, :2])
    x = float((0.5 * (sites[0, :2] + sites[1, :2]) - start) @ heading)
    return est._replace(x=x, xd=float(axle_vel[:2] @ heading), pitch=pitch_, pitch_rate=pitch_rate, roll=roll,
                        roll_rate=roll_rate, yaw=yaw, yaw_rate=yaw_rate)


def video_environment() -> None:
    """Select headless EGL rendering unless the user chose a GL backend."""
    os.environ.setdefault("MUJOCO_GL", "egl")
