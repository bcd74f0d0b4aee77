"""The biped's imperfections: its sensors, motors and ground as a real robot has them.

MuJoCo's sensors are exact, its motors deliver the commanded torque at once at any speed,
and the floor is flat.  :class:`Imperfections` lists the biped's departures from that ideal,
one ``--set`` parameter each, in physical units (docs/guides/imperfections.md).
:meth:`Imperfections.generic` turns the sensing and actuation ones into crossdyn's generic
imperfections on the robot's own sensors and motors: IMU noise of density ``N`` sampled
every ``dt`` has standard deviation ``N / sqrt(dt)`` (the continuous-to-discrete rule of the
Kalibr IMU noise model), with any IMU imperfection the orientation comes from a Mahony filter,
encoders quantize positions (velocities, the driver's observer, pass unchanged).  The floor
and a payload are edits of the model instead (:meth:`Imperfections.ground`,
:meth:`Imperfections.payload`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

import numpy as np

from ..core.errors import ParameterError
from ..core.imperfections import (
    ActuatorLag,
    AttitudeFilter,
    Delay,
    Imperfection,
    Quantization,
    SensorNoise,
    TorqueSpeedLimit,
)
from ..core.registry import Param
from .model import HIPS, WHEELS, BipedParams, Ground

__all__ = ["Imperfections", "REALISTIC", "PARAMS", "ATTITUDE_GAIN"]

# Mahony filter gain, rad/s (a 10 s time constant): slow enough that the robot's own accelerations
# barely read as tilt; the price is a gyro bias b leaving b / k, 1 deg for the preset's 0.1 deg/s.
ATTITUDE_GAIN = 0.1


@dataclass(frozen=True)
class Imperfections:
    """Departures from the ideal robot (all zero: the ideal robot); each field, its unit and its range
    are the ``--set`` parameter of the same name in :data:`PARAMS`."""

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
        """Any sensing or actuation imperfection (as opposed to model edits)."""
        return self.imu or bool(self.encoder_counts or self.delay or self.wheel_no_load_speed
                                or self.hip_no_load_speed or self.torque_lag)

    def ground(self) -> Ground:
        """The floor as :func:`~crossdyn.experiments.biped.model.build` takes it."""
        return Ground(friction=self.friction or None, slope=float(np.radians(self.slope_deg)), bump=self.bump_m)

    def payload(self) -> tuple[float, float]:
        """``(mass kg, x m)`` as :func:`~crossdyn.experiments.biped.model.build` takes it."""
        return (self.payload_kg, 0.0)

    @classmethod
    def from_values(cls, values: dict) -> Imperfections:
        """From flat ``--set`` values: ``realistic=true`` starts from :data:`REALISTIC`,
        and every imperfection set to a non-default value overrides it."""
        base = REALISTIC if values.get("realistic") else cls()
        changed = {k: values[k] for k in PARAMS if k in values and values[k] != PARAMS[k].default}
        return dataclasses.replace(base, **changed)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def generic(self, params: BipedParams, control_period: float) -> list[Imperfection]:
        """The sensing and actuation imperfections as crossdyn's generic ones, on the biped's sensors and motors.

        Args:
          params: the robot's parameters (its motors' limits are the stall torques).
          control_period: s; noise densities become per-reading deviations over it.
        """
        out: list[Imperfection] = []
        dt = float(control_period)
        if self.imu:
            out.append(SensorNoise("imu_gyro", std=self.gyro_noise / np.sqrt(dt), bias_std=self.gyro_bias))
            out.append(SensorNoise("imu_accel", std=self.accel_noise / np.sqrt(dt), bias_std=self.accel_bias))
            out.append(AttitudeFilter("imu_quat", "imu_gyro", "imu_accel", gain=ATTITUDE_GAIN))
        if self.encoder_counts:
            step = 2 * np.pi / self.encoder_counts
            out += [Quantization(f"{joint}_pos", step) for joint in (*HIPS, *WHEELS)]
        if self.delay:
            out.append(Delay(int(self.delay), actuators=(*WHEELS, *HIPS)))
        if self.torque_lag:
            out += [ActuatorLag(motor, self.torque_lag) for motor in (*WHEELS, *HIPS)]
        for motors, speed, stall in ((WHEELS, self.wheel_no_load_speed, params.wheel_torque_limit),
                                     (HIPS, self.hip_no_load_speed, params.hip_torque_limit)):
            if speed:
                out += [TorqueSpeedLimit(motor, speed, stall=stall) for motor in motors]
        return out


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
# encoders and quasi-direct-drive motors (docs/guides/imperfections.md gives the sources):
REALISTIC = Imperfections(
    gyro_noise=2.4e-4,  # Bosch BMI088 datasheet: 0.014 deg/s/sqrt(Hz)
    gyro_bias=1.7e-3,  # 0.1 deg/s residual after a standstill calibration at power-up (assumption)
    accel_noise=1.7e-3,  # BMI088: 175 ug/sqrt(Hz)
    accel_bias=0.05,  # ~5 mg residual after a six-position calibration (assumption; raw offset is +-20 mg)
    encoder_counts=16384,  # 14-bit magnetic encoder (AS5047P / MT6701 class)
    # Latency under one 1 ms period is in torque_lag: one whole period already unsettles the hip loops.
    delay=0,
    wheel_no_load_speed=50.0,  # DJI M3508 with its 19:1 gearbox: ~480 rpm at 24 V
    hip_no_load_speed=30.0,  # CubeMars AK70-10 class QDD actuator: ~300 rpm at 48 V
    torque_lag=0.001,  # 1 ms: FOC current loop and the winding's L/R (assumption)
    friction=0.7,  # rubber tyre on an indoor floor: 0.6-0.9
    slope_deg=1.0,  # walking surfaces: cross slope at most 1:48 = 1.2 deg (ADA 2010 sec. 403.3)
    bump_m=0.01,  # a cable or a door threshold
    payload_kg=0.5,  # battery or sensor not in the model
)
