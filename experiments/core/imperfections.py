"""What a real robot has and a simulation does not, for any MJCF: noise, quantization, delay, motor limits, pushes.

MuJoCo's sensors are exact, its actuators deliver the commanded control at once
at any speed, and nothing pushes the robot.  Each class here is one departure
from that ideal, named by the model element it acts on;
:func:`~crossdyn.experiments.core.loop.simulate.simulate` takes a list of them and a
``seed`` for every random draw.  They act at four places, always in this order
(and in list order within a kind):

1. the model, before the run (on a copy): :class:`MassScale`, :class:`InertiaScale`,
   :class:`FrictionScale`;
2. the sensors, every control period: :class:`SensorNoise`, :class:`AttitudeFilter`,
   :class:`Quantization`;
3. the actuators, every control period, between the controller's command and
   MuJoCo's ``ctrl``: :class:`Delay`, :class:`ActuatorLag`, :class:`TorqueSpeedLimit`;
4. the bodies, every physics step: :class:`Push` (``xfrc_applied`` for a while).
"""

from __future__ import annotations

import collections
import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from .errors import ParameterError

__all__ = ["Imperfection", "SensorNoise", "AttitudeFilter", "Quantization", "Delay", "ActuatorLag",
           "TorqueSpeedLimit", "Push", "MassScale", "InertiaScale", "FrictionScale", "Bound", "bind"]

# Where each kind acts, in the order the loop applies them.
MODEL, SENSE_NOISE, SENSE_FILTER, SENSE_QUANTIZE, ACT_DELAY, ACT_LAG, ACT_LIMIT, PUSH = range(8)


def _element(model: mujoco.MjModel, kind: mujoco.mjtObj, name: str, what: str) -> int:
    index = mujoco.mj_name2id(model, kind, name) if isinstance(name, str) else -1
    if index < 0:
        count = {mujoco.mjtObj.mjOBJ_SENSOR: model.nsensor, mujoco.mjtObj.mjOBJ_ACTUATOR: model.nu,
                 mujoco.mjtObj.mjOBJ_BODY: model.nbody, mujoco.mjtObj.mjOBJ_GEOM: model.ngeom}[kind]
        known = [mujoco.mj_id2name(model, kind, i) for i in range(count)]
        known = [k for k in known if k]
        listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
        plural = "bodies" if what == "body" else f"{what}s"
        raise ParameterError(f"no {what} {name!r} in the model (its {plural}: {listed or 'none named'})")
    return index


def _finite(name: str, value, low: float = 0.0, strictly: bool = False) -> None:
    values = np.atleast_1d(np.asarray(value, dtype=float))
    if not np.isfinite(values).all() or (values <= low).any() if strictly else (values < low).any():
        bound = f"> {low:g}" if strictly else f">= {low:g}"
        raise ParameterError(f"{name} must be finite and {bound}, got {value!r}")


class Imperfection:
    """Base class: one departure from the ideal robot, bound to a model by :meth:`bind`."""

    order: int = MODEL

    def bind(self, model: mujoco.MjModel, control_dt: float, rng: np.random.Generator) -> Callable | None:
        """Resolve names and draw per-run constants; return the per-step function (None for model edits).

        The function's signature depends on :attr:`order`: sensors ``(sensed, data)``,
        actuators ``(ctrl, data)``, pushes ``(xfrc_applied, time)``; each edits its
        first argument in place.
        """
        raise NotImplementedError

    def edit(self, model: mujoco.MjModel) -> None:
        """Edit ``model`` (a copy) in place; only model edits do anything."""

    def check_run(self, steps: int, control_dt: float) -> None:
        """Refuse a run this imperfection cannot be part of (``steps`` control periods of ``control_dt`` s).

        Raises:
          ParameterError: the imperfection would make the run meaningless.
        """


def _sensor_slice(model: mujoco.MjModel, name: str) -> slice:
    s = model.sensor(_element(model, mujoco.mjtObj.mjOBJ_SENSOR, name, "sensor"))
    return slice(int(s.adr[0]), int(s.adr[0] + s.dim[0]))


@dataclass(frozen=True)
class SensorNoise(Imperfection):
    """White noise and a bias on one sensor's readings.

    Attributes:
      sensor: the sensor's name.
      std: standard deviation of the white noise per reading, the sensor's unit
        (a density ``N`` per sqrt(Hz) read every ``dt`` s: ``N / sqrt(dt)``).
      bias: a constant offset (a number, or one per component).
      bias_std: per run, an offset drawn from ``N(0, bias_std^2)`` per component.
    """

    sensor: str
    std: float = 0.0
    bias: float | Sequence[float] = 0.0
    bias_std: float = 0.0
    order = SENSE_NOISE

    def bind(self, model, control_dt, rng):
        where = _sensor_slice(model, self.sensor)
        size = where.stop - where.start
        _finite(f"SensorNoise({self.sensor!r}).std", self.std)
        _finite(f"SensorNoise({self.sensor!r}).bias_std", self.bias_std)
        bias = np.asarray(self.bias, dtype=float)
        if bias.size not in (1, size) or not np.isfinite(bias).all():
            raise ParameterError(f"SensorNoise({self.sensor!r}).bias: a finite number or {size} of them, "
                                 f"got {self.bias!r}")
        offset = np.broadcast_to(bias, (size,)).astype(float)
        if self.bias_std:
            offset = offset + rng.normal(0.0, self.bias_std, size)
        std, biased = float(self.std), bool(np.any(offset != 0))

        def sense(sensed, data):
            if biased:
                sensed[where] = sensed[where] + offset
            if std:
                sensed[where] = sensed[where] + rng.normal(0.0, std, size)

        return sense


@dataclass(frozen=True)
class AttitudeFilter(Imperfection):
    """An IMU's orientation as its attitude filter reports it, not MuJoCo's exact ``framequat``.

    Mahony's complementary filter: the quaternion integrates the gyro's rate plus
    ``gain`` times the error between the accelerometer's direction and the "up"
    the filter believes (none in free fall).  It starts at the true orientation and
    reads the gyro and accelerometer after their :class:`SensorNoise`; yaw, which
    gravity does not observe, drifts with a gyro bias.

    Attributes:
      quat, gyro, accel: the sensors' names (a ``framequat``, a ``gyro`` and an
        ``accelerometer`` on the same site).
      gain: rad/s; the accelerometer corrects the gyro with time constant ``1/gain``.
    """

    quat: str
    gyro: str
    accel: str
    gain: float = 0.1
    order = SENSE_FILTER

    def bind(self, model, control_dt, rng):
        q, g, a = (_sensor_slice(model, name) for name in (self.quat, self.gyro, self.accel))
        for where, size, name in ((q, 4, self.quat), (g, 3, self.gyro), (a, 3, self.accel)):
            if where.stop - where.start != size:
                raise ParameterError(f"AttitudeFilter: sensor {name!r} has {where.stop - where.start} values, "
                                     f"expected {size}")
        _finite("AttitudeFilter.gain", self.gain)
        gain, dt = float(self.gain), float(control_dt)
        state: list[np.ndarray] = []
        z_up, conj = np.array([0.0, 0.0, 1.0]), np.array([1.0, -1.0, -1.0, -1.0])

        def sense(sensed, data):
            if not state:  # starts knowing its orientation
                state.append(np.array(sensed[q], dtype=float))
                return
            quat = state[0]
            up = np.zeros(3)  # world +z in the IMU frame, as the filter believes
            mujoco.mju_rotVecQuat(up, z_up, quat * conj)
            accel = np.asarray(sensed[a], dtype=float)
            norm = np.linalg.norm(accel)
            correction = np.cross(accel / norm, up) if norm > 1e-6 else np.zeros(3)
            mujoco.mju_quatIntegrate(quat, np.asarray(sensed[g], dtype=float) + gain * correction, dt)
            sensed[q] = quat

        return sense


@dataclass(frozen=True)
class Quantization(Imperfection):
    """A sensor's readings rounded to multiples of ``step`` (an encoder of n counts per turn: ``2 pi / n`` rad).

    Attributes:
      sensor: the sensor's name.
      step: the resolution, in the sensor's unit (> 0).
    """

    sensor: str
    step: float
    order = SENSE_QUANTIZE

    def bind(self, model, control_dt, rng):
        where = _sensor_slice(model, self.sensor)
        _finite(f"Quantization({self.sensor!r}).step", self.step, strictly=True)
        step = float(self.step)

        def sense(sensed, data):
            sensed[where] = np.round(sensed[where] / step) * step

        return sense


def _actuators(model: mujoco.MjModel, names: str | Sequence[str] | None) -> np.ndarray:
    if names is None:
        return np.arange(model.nu)
    names = [names] if isinstance(names, str) else list(names)
    return np.array([_element(model, mujoco.mjtObj.mjOBJ_ACTUATOR, n, "actuator") for n in names], dtype=int)


@dataclass(frozen=True)
class Delay(Imperfection):
    """Commands reach the actuators ``periods`` control periods late (zero control until the first arrives).

    Attributes:
      periods: whole control periods (>= 0).
      actuators: the actuators' names (default: all).
    """

    periods: int
    actuators: tuple[str, ...] | None = None
    order = ACT_DELAY

    def _periods(self) -> int:
        if not isinstance(self.periods, (int, np.integer)) or isinstance(self.periods, bool) or self.periods < 0:
            raise ParameterError(f"Delay.periods must be a whole number >= 0, got {self.periods!r}")
        return int(self.periods)

    def bind(self, model, control_dt, rng):
        periods = self._periods()
        which = _actuators(model, self.actuators)
        # Filled as the run goes, so it never holds more than the run's commands (not ``periods`` zeros up front).
        queue: collections.deque = collections.deque()

        def act(ctrl, data):
            if periods:
                queue.append(ctrl[which].copy())
                ctrl[which] = queue.popleft() if len(queue) > periods else 0.0

        return act

    def check_run(self, steps: int, control_dt: float) -> None:
        """Refuse a delay no command outlives: ``periods`` at least the run's ``steps`` control periods."""
        periods = self._periods()
        if periods and periods >= steps:
            raise ParameterError(f"Delay({periods}) holds commands {periods * control_dt:g} s, at "
                                 f"least the whole run ({steps} control periods of {control_dt:g} s): no command "
                                 "would reach the actuators")


@dataclass(frozen=True)
class ActuatorLag(Imperfection):
    """A first-order lag between an actuator's command and what it delivers.

    Attributes:
      actuator: the actuator's name.
      time_constant: s (> 0); exact over a control period ``dt``:
        ``u += (1 - exp(-dt / tau)) (u_cmd - u)``, starting from zero.
    """

    actuator: str
    time_constant: float
    order = ACT_LAG

    def bind(self, model, control_dt, rng):
        i = int(_actuators(model, self.actuator)[0])
        _finite(f"ActuatorLag({self.actuator!r}).time_constant", self.time_constant, strictly=True)
        lag = 1.0 - np.exp(-float(control_dt) / self.time_constant)
        state = np.zeros(1)

        def act(ctrl, data):
            state[0] += lag * (ctrl[i] - state[0])
            ctrl[i] = state[0]

        return act


@dataclass(frozen=True)
class TorqueSpeedLimit(Imperfection):
    """A DC motor's torque-speed line on one actuator.

    At actuator speed ``w`` it delivers at most ``tau_s (1 - w / w0)`` in the
    direction of motion and ``tau_s`` braking, within ``+-tau_s``.  The speed is
    the joint's velocity times the gear for a joint transmission,
    ``actuator_velocity`` (one physics step old) otherwise.

    Attributes:
      actuator: the actuator's name.
      no_load_speed: ``w0``, the speed at which the driving torque falls to zero
        (the actuator's velocity unit).
      stall: the stall control ``tau_s`` (default: the larger magnitude of the
        actuator's ``ctrlrange``, which must then be limited).
    """

    actuator: str
    no_load_speed: float
    stall: float | None = None
    order = ACT_LIMIT

    def bind(self, model, control_dt, rng):
        i = int(_actuators(model, self.actuator)[0])
        _finite(f"TorqueSpeedLimit({self.actuator!r}).no_load_speed", self.no_load_speed, strictly=True)
        stall = self.stall
        if stall is None:
            if not model.actuator_ctrllimited[i]:
                raise ParameterError(f"TorqueSpeedLimit({self.actuator!r}): the actuator has no ctrlrange; "
                                     "give stall=")
            stall = float(np.abs(model.actuator_ctrlrange[i]).max())
        _finite(f"TorqueSpeedLimit({self.actuator!r}).stall", stall, strictly=True)
        stall, w0 = float(stall), float(self.no_load_speed)
        speed = _speed_of(model, i)

        def act(ctrl, data):
            ratio = speed(data) / w0
            high = min(stall, stall * (1.0 - ratio))
            low = max(-stall, -stall * (1.0 + ratio))
            ctrl[i] = min(max(ctrl[i], low), high)

        return act


def _speed_of(model: mujoco.MjModel, actuator: int) -> Callable[[mujoco.MjData], float]:
    """The actuator's speed now: gear x joint velocity for a joint transmission, else ``actuator_velocity``."""
    # int(): a NumPy integer is never found 'in' a tuple of MuJoCo's enums (== works, 'in' does not)
    if int(model.actuator_trntype[actuator]) in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
        joint = int(model.actuator_trnid[actuator, 0])
        if int(model.jnt_type[joint]) in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            dof, gear = int(model.jnt_dofadr[joint]), float(model.actuator_gear[actuator, 0])
            if gear == 1.0:
                return lambda data: float(data.qvel[dof])
            return lambda data: gear * float(data.qvel[dof])
    return lambda data: float(data.actuator_velocity[actuator])


@dataclass(frozen=True)
class Push(Imperfection):
    """A force (and torque) on a body's centre of mass for a while, world frame, via ``xfrc_applied``.

    Attributes:
      body: the body's name.
      force: ``(fx, fy, fz)``, N.
      start: s.
      duration: s (> 0); applied at the physics steps with ``start <= t < start + duration``.
      torque: ``(tx, ty, tz)``, N m.
    """

    body: str
    force: Sequence[float]
    start: float
    duration: float
    torque: Sequence[float] = (0.0, 0.0, 0.0)
    order = PUSH

    def bind(self, model, control_dt, rng):
        b = _element(model, mujoco.mjtObj.mjOBJ_BODY, self.body, "body")
        wrench = np.concatenate([np.asarray(self.force, dtype=float), np.asarray(self.torque, dtype=float)])
        if wrench.shape != (6,) or not np.isfinite(wrench).all():
            raise ParameterError(f"Push({self.body!r}): force and torque are 3 finite numbers each")
        _finite(f"Push({self.body!r}).duration", self.duration, strictly=True)
        if not math.isfinite(self.start):
            raise ParameterError(f"Push({self.body!r}).start must be finite")
        t0, t1, parts = float(self.start), float(self.start + self.duration), np.flatnonzero(wrench)

        def push(xfrc, time):
            on = t0 <= time < t1
            for k in parts:
                xfrc[b, k] = wrench[k] if on else 0.0

        return push


class _ModelEdit(Imperfection):
    """An imperfection that edits the model (:meth:`edit`) and does nothing per step."""

    def bind(self, model, control_dt, rng):
        return None


def _scale(name: str, value: float) -> float:
    _finite(name, value, strictly=True)
    return float(value)


@dataclass(frozen=True)
class _BodyScale(_ModelEdit):
    """One body's inertial properties scaled by ``scale`` (> 0)."""

    body: str
    scale: float

    def _scaled(self, model) -> tuple[int, float]:
        """The body's id in ``model`` and the scale, checked."""
        b = _element(model, mujoco.mjtObj.mjOBJ_BODY, self.body, "body")
        return b, _scale(f"{type(self).__name__}({self.body!r}).scale", self.scale)


@dataclass(frozen=True)
class MassScale(_BodyScale):
    """A body's mass and inertia scaled together (the same shape, denser or lighter)."""

    def edit(self, model):
        b, s = self._scaled(model)
        model.body_mass[b] *= s
        model.body_inertia[b] *= s


@dataclass(frozen=True)
class InertiaScale(_BodyScale):
    """A body's rotational inertia scaled, its mass kept."""

    def edit(self, model):
        b, s = self._scaled(model)
        model.body_inertia[b] *= s


@dataclass(frozen=True)
class FrictionScale(_ModelEdit):
    """Friction coefficients (sliding, torsional, rolling) of one geom, or of every geom, scaled.

    Attributes:
      scale: the factor (> 0).
      geom: the geom's name (default: every geom).
    """

    scale: float
    geom: str | None = None

    def edit(self, model):
        s = _scale("FrictionScale.scale", self.scale)
        if self.geom is None:
            model.geom_friction[:] *= s
        else:
            model.geom_friction[_element(model, mujoco.mjtObj.mjOBJ_GEOM, self.geom, "geom")] *= s


@dataclass
class Bound:
    """Imperfections bound to one run: the edited model and the per-step functions by stage."""

    model: mujoco.MjModel
    sense: list[Callable]
    act: list[Callable]
    push: list[Callable]


def bind(model: mujoco.MjModel, imperfections: Sequence[Imperfection], control_dt: float, seed: int, *,
         steps: int | None = None) -> Bound:
    """Apply the model edits (to a copy, if any) and bind the rest, drawing from one generator seeded ``seed``.

    Args:
      steps: the run's control steps, when known: each imperfection checks it
        can be part of such a run (:meth:`Imperfection.check_run`).

    Raises:
      ParameterError: an entry is not an :class:`Imperfection`, names a missing
        element, has an out-of-range value, or does not fit a run of ``steps``.
    """
    items = list(imperfections)
    for item in items:
        if not isinstance(item, Imperfection):
            raise ParameterError(f"imperfections must be crossdyn imperfections (SensorNoise, Delay, ...), got "
                                 f"{type(item).__name__}")
    items.sort(key=lambda item: item.order)  # stable: list order within a kind
    edits = [item for item in items if item.order == MODEL]
    if edits:
        model = copy.copy(model)
        for item in edits:
            item.edit(model)
        mujoco.mj_setConst(model, mujoco.MjData(model))
    rng = np.random.default_rng(seed)
    bound = Bound(model, [], [], [])
    for item in items:
        if item.order == MODEL:
            continue
        fn = item.bind(model, control_dt, rng)
        if fn is None:  # only model edits bind to nothing; a subclass of Imperfection may get this wrong
            raise ParameterError(f"{type(item).__name__}.bind returned no per-step function (order {item.order})")
        (bound.push if item.order == PUSH else bound.act if item.order >= ACT_DELAY else bound.sense).append(fn)
    if steps is not None:
        for item in items:
            item.check_run(steps, control_dt)
    return bound
