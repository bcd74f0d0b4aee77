"""What a real robot has and the simulation does not: sensor noise, quantization, delay, motor limits, ground.

MuJoCo's sensors are exact (the MJCF ``noise`` attribute is only metadata), its
motors deliver the commanded torque at once at any speed, and the floor is flat.
:class:`Imperfections` lists the departures from that ideal; a :class:`Hardware`
object built from them (and a seed) sits between the simulation and the
controller through two hooks that :func:`~crossdyn.experiments.biped.closed_loop.simulate`
calls every control period::

    readings = hardware.sense(t, readings)              # after the sensors are read
    wheels, hips = hardware.command(t, wheels, hips, data)  # before data.ctrl is written

The floor (friction, slope, a bump) and a payload are edits of the model instead
(:meth:`Imperfections.ground`, :meth:`Imperfections.payload`, passed to
:func:`~crossdyn.experiments.biped.model.build`).

Models, per imperfection:

- IMU noise: white noise of density ``N`` (units/sqrt(Hz)) sampled every
  ``dt`` has standard deviation ``N / sqrt(dt)`` (the continuous-to-discrete
  rule of the Kalibr IMU noise model); bias: a constant per axis drawn once per
  run from ``N(0, sigma_b^2)``.
- IMU orientation: a noisy IMU's quaternion is what its attitude filter makes of
  the noisy gyro and accelerometer, so with any IMU imperfection the quaternion
  reading is replaced by a Mahony complementary filter (gain
  :data:`ATTITUDE_GAIN`) started at the true orientation.  Yaw, which gravity
  does not observe, drifts with the gyro bias.
- Encoders: hip and wheel positions quantized to ``2 pi / counts`` rad;
  velocities (the motor driver's observer) pass unchanged.
- Control delay: commands reach the motors ``delay`` control periods late
  (zero torque until the first arrives).
- Motor torque lag: first order, time constant ``torque_lag``, exact
  discretization over a control period.
- Torque-speed limit: a DC motor at its supply voltage delivers
  ``tau in [-tau_s (1 + w / w0), tau_s (1 - w / w0)]`` within ``+-tau_s`` (stall
  torque ``tau_s`` = the actuator's limit, no-load speed ``w0``): torque in the
  direction of motion falls linearly to zero at ``w0``, braking is not limited.
"""

from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass, fields

import mujoco
import numpy as np

from crossdyn.experiments.biped.model import HIPS, WHEELS, BipedParams, Ground
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.registry import Param

__all__ = ["Imperfections", "Hardware", "REALISTIC", "PARAMS", "ATTITUDE_GAIN"]

# Mahony filter gain, rad/s: the accelerometer corrects the gyro's attitude with a
# 10 s time constant.  The robot's own accelerations (2 m/s^2 when it sets off at
# 1 m/s) read as a tilt of ~10 deg: at 0.5 rad/s that left a 3 deg pitch error and
# a 4 % speed error at cruise (measured), at 0.1 rad/s 0.8 deg and 0.6 %.  The price
# is a gyro bias b leaving b / k: 1 deg for the preset's 0.1 deg/s.
ATTITUDE_GAIN = 0.1


@dataclass(frozen=True)
class Imperfections:
    """Departures from the ideal robot (all zero: the ideal robot).

    Attributes:
      gyro_noise: gyro noise density, rad/s/sqrt(Hz).
      gyro_bias: gyro bias, 1-sigma per axis, rad/s.
      accel_noise: accelerometer noise density, m/s^2/sqrt(Hz).
      accel_bias: accelerometer bias, 1-sigma per axis, m/s^2.
      encoder_counts: hip and wheel encoder counts per revolution (0: exact).
      delay: control delay, control periods.
      wheel_no_load_speed, hip_no_load_speed: motor no-load speed at the joint,
        rad/s (0: no torque-speed limit).
      torque_lag: motor torque time constant, s.
      friction: ground (and wheel) friction coefficient (0: the model's own).
      slope_deg: ground slope, deg, rising ahead.
      bump_m: height of a bump across the path 1 m ahead, m.
      payload_kg: mass added at the body's centre (hip line), kg.
    """

    gyro_noise: float = 0.0
    gyro_bias: float = 0.0
    accel_noise: float = 0.0
    accel_bias: float = 0.0
    encoder_counts: int = 0
    delay: int = 0
    wheel_no_load_speed: float = 0.0
    hip_no_load_speed: float = 0.0
    torque_lag: float = 0.0
    friction: float = 0.0
    slope_deg: float = 0.0
    bump_m: float = 0.0
    payload_kg: float = 0.0

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            param = PARAMS[f.name]
            if not np.isfinite(value) or value < param.low or value > param.high:
                raise ParameterError(f"{f.name}={value}: out of range [{param.low:g}, {param.high:g}] ({param.help})")

    @property
    def imu(self) -> bool:
        """Any IMU imperfection (the attitude then comes from the filter)."""
        return any((self.gyro_noise, self.gyro_bias, self.accel_noise, self.accel_bias))

    @property
    def on_hardware(self) -> bool:
        """Anything :class:`Hardware` does (sensing or actuation), as opposed to model edits."""
        return self.imu or bool(self.encoder_counts or self.delay or self.wheel_no_load_speed
                                or self.hip_no_load_speed or self.torque_lag)

    def ground(self) -> Ground:
        """The floor as :func:`~crossdyn.experiments.biped.model.build` takes it."""
        return Ground(friction=self.friction or None, slope=float(np.radians(self.slope_deg)), bump=self.bump_m)

    def payload(self) -> tuple[float, float]:
        """``(mass kg, x m)`` as :func:`~crossdyn.experiments.biped.model.build` takes it."""
        return (self.payload_kg, 0.0)

    @classmethod
    def from_values(cls, values: dict) -> "Imperfections":
        """From flat ``--set`` values: ``realistic=true`` starts from :data:`REALISTIC`,
        and every imperfection set to a non-default value overrides it."""
        base = REALISTIC if values.get("realistic") else cls()
        changed = {k: values[k] for k in PARAMS if k in values and values[k] != PARAMS[k].default}
        return dataclasses.replace(base, **changed)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


# The --set parameters (and robustness axes), one per field, with units and ranges.
PARAMS = {
    "gyro_noise": Param(0.0, "gyro noise density, rad/s/sqrt(Hz)", 0.0, 1.0),
    "gyro_bias": Param(0.0, "gyro bias, 1-sigma per axis, rad/s", 0.0, 1.0),
    "accel_noise": Param(0.0, "accelerometer noise density, m/s^2/sqrt(Hz)", 0.0, 10.0),
    "accel_bias": Param(0.0, "accelerometer bias, 1-sigma per axis, m/s^2", 0.0, 10.0),
    "encoder_counts": Param(0, "hip and wheel encoder counts per revolution (0: exact)", 0, 2**24),
    "delay": Param(0, "control delay, control periods", 0, 100),
    "wheel_no_load_speed": Param(0.0, "wheel motor no-load speed, rad/s (0: no torque-speed limit)", 0.0, 1e4),
    "hip_no_load_speed": Param(0.0, "hip motor no-load speed, rad/s (0: no torque-speed limit)", 0.0, 1e4),
    "torque_lag": Param(0.0, "motor torque lag time constant, s", 0.0, 1.0),
    "friction": Param(0.0, "ground friction coefficient (0: the model's)", 0.0, 10.0),
    "slope_deg": Param(0.0, "ground slope, deg, rising ahead", -30.0, 30.0),
    "bump_m": Param(0.0, "bump across the path 1 m ahead, height m", 0.0, 0.2),
    "payload_kg": Param(0.0, "payload on the body's centre, kg", 0.0, 100.0),
}

# Plausible values for a 6-15 kg wheel-legged robot with a MEMS IMU, magnetic
# encoders and quasi-direct-drive motors (README "Imperfections" gives the sources):
REALISTIC = Imperfections(
    gyro_noise=2.4e-4,  # Bosch BMI088 datasheet: 0.014 deg/s/sqrt(Hz)
    gyro_bias=1.7e-3,  # 0.1 deg/s residual after a standstill calibration at power-up (assumption)
    accel_noise=1.7e-3,  # BMI088: 175 ug/sqrt(Hz)
    accel_bias=0.05,  # ~5 mg residual after a six-position calibration (assumption; raw offset is +-20 mg)
    encoder_counts=16384,  # 14-bit magnetic encoder (AS5047P / MT6701 class)
    delay=0,  # latency under one 1 ms period (on-board loop; its lag is in torque_lag): one whole period already unsettles the hip loops (README)
    wheel_no_load_speed=50.0,  # DJI M3508 with its 19:1 gearbox: ~480 rpm at 24 V
    hip_no_load_speed=30.0,  # CubeMars AK70-10 class QDD actuator: ~300 rpm at 48 V
    torque_lag=0.001,  # 1 ms: FOC current loop and the winding's L/R (assumption)
    friction=0.7,  # rubber tyre on an indoor floor: 0.6-0.9
    slope_deg=1.0,  # walking surfaces: cross slope at most 1:48 = 1.2 deg (ADA 2010 sec. 403.3)
    bump_m=0.01,  # a cable or a door threshold
    payload_kg=0.5,  # battery or sensor not in the model
)


class Hardware:
    """The robot's sensing and actuation chain between MuJoCo and the controller (see the module docstring).

    Args:
      imperfections: what to add.
      seed: seed of every random draw (noise and biases): same seed, same run.
      params: the robot's parameters (its motors' torque limits are the stall torques).
      control_period: s; the hooks are called once per period.
    """

    def __init__(self, imperfections: Imperfections, seed: int, params: BipedParams, control_period: float):
        imp = self.imperfections = imperfections
        self.dt = float(control_period)
        self._rng = np.random.default_rng(seed)
        self._gyro_bias = self._rng.normal(0.0, imp.gyro_bias, 3) if imp.gyro_bias else np.zeros(3)
        self._accel_bias = self._rng.normal(0.0, imp.accel_bias, 3) if imp.accel_bias else np.zeros(3)
        self._gyro_sigma = imp.gyro_noise / np.sqrt(self.dt)
        self._accel_sigma = imp.accel_noise / np.sqrt(self.dt)
        self._quat: np.ndarray | None = None
        self._step = 2 * np.pi / imp.encoder_counts if imp.encoder_counts else 0.0
        zero = ((0.0, 0.0), (0.0,) * len(HIPS))
        self._queue = collections.deque([zero] * imp.delay)
        self._lag = 1.0 - np.exp(-self.dt / imp.torque_lag) if imp.torque_lag else 0.0
        self._torque = np.zeros(len(WHEELS) + len(HIPS))
        self._stall = np.array([params.wheel_torque_limit] * len(WHEELS) + [params.hip_torque_limit] * len(HIPS))
        self._no_load = np.array([imp.wheel_no_load_speed] * len(WHEELS) + [imp.hip_no_load_speed] * len(HIPS))
        self._limited = self._no_load > 0

    def sense(self, t: float, readings: tuple) -> tuple:
        """The readings a real robot would get (same order as the simulation's:
        quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel)."""
        quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel = (np.asarray(r, dtype=float) for r in readings)
        imp = self.imperfections
        if imp.imu:
            gyro = gyro + self._gyro_bias
            accel = accel + self._accel_bias
            if self._gyro_sigma:
                gyro = gyro + self._rng.normal(0.0, self._gyro_sigma, 3)
            if self._accel_sigma:
                accel = accel + self._rng.normal(0.0, self._accel_sigma, 3)
            quat = self._attitude(np.asarray(quat, dtype=float), gyro, accel)
        if self._step:
            hip_pos = np.round(hip_pos / self._step) * self._step
            wheel_pos = np.round(wheel_pos / self._step) * self._step
        # tuples of floats, the form the estimator reads fastest (and the simulation's own)
        return tuple(tuple(r.tolist()) for r in (quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel))

    def _attitude(self, true_quat: np.ndarray, gyro: np.ndarray, accel: np.ndarray) -> np.ndarray:
        """One Mahony step: integrate the gyro, pulled towards the accelerometer's "up"."""
        if self._quat is None:  # the robot starts knowing its orientation (it stood still before)
            self._quat = true_quat.copy()
            return self._quat.copy()
        up = np.zeros(3)  # world +z in the IMU frame, as the filter believes
        conj = self._quat * np.array([1.0, -1.0, -1.0, -1.0])
        mujoco.mju_rotVecQuat(up, np.array([0.0, 0.0, 1.0]), conj)
        norm = np.linalg.norm(accel)
        correction = np.cross(accel / norm, up) if norm > 1e-6 else np.zeros(3)  # no correction in free fall
        rate = gyro + ATTITUDE_GAIN * correction
        mujoco.mju_quatIntegrate(self._quat, rate, self.dt)
        return self._quat.copy()

    def command(self, t: float, wheels, hips, data: mujoco.MjData) -> tuple[tuple, tuple]:
        """The torques the motors deliver for the commanded ``wheels (2,)`` and ``hips (4,)``, N m."""
        if self._queue:
            self._queue.append((tuple(wheels), tuple(hips)))
            wheels, hips = self._queue.popleft()
        torque = np.array([*wheels, *hips], dtype=float)
        if self.imperfections.torque_lag:
            self._torque += self._lag * (torque - self._torque)
            torque = self._torque.copy()
        if self._limited.any():
            speed = np.array([data.joint(name).qvel[0] for name in (*WHEELS, *HIPS)])
            ratio = np.where(self._limited, speed / np.where(self._limited, self._no_load, 1.0), 0.0)
            high = np.minimum(self._stall, self._stall * (1.0 - ratio))
            low = np.maximum(-self._stall, -self._stall * (1.0 + ratio))
            torque = np.clip(torque, low, high)
        return tuple(torque[: len(WHEELS)]), tuple(torque[len(WHEELS):])
