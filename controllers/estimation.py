"""State estimate of the wheel-legged biped from its own sensors (IMU and encoders).

What a real robot has: the IMU's orientation quaternion, gyro (body-frame angular
velocity) and accelerometer; hip and wheel encoders (position and velocity).  No
knee encoders: the knee follows from the hip angle through the five-bar.

Conventions (``mjcf/wheel_legged_biped.xml``, SPEC §4): x forward, y left, z up;
Z-Y-X Euler angles (yaw, pitch, roll); pitch positive leaning forward (about +y);
roll positive lifting the left side (about +x).  ``x`` is the axle's travel
along the body's heading, from wheel odometry; ``theta`` is the body's pitch,
which for a symmetric five-bar is the pendulum angle of seed 004 (the axle lies
straight below the hip-line midpoint in the body frame).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crossdyn.analytic.biped import five_bar
from crossdyn.analytic.rotation import euler_rates, euler_zyx

__all__ = ["LegGeometry", "Estimate", "Estimator", "shank_angle"]


@dataclass(frozen=True)
class LegGeometry:
    """Leg and wheel geometry the estimator needs, m: five-bar ``l1, l2, l3``, wheel radius ``r``."""

    l1: float
    l2: float
    l3: float
    r: float


@dataclass(frozen=True)
class Estimate:
    """The controller's view of the robot at one instant (SI units, rad).

    ``alpha``, ``alpha_rate``, ``height`` are ``(left, right)`` arrays; ``height``
    is each leg's hip-line height above its axle, eq. 3.2.
    """

    x: float
    xd: float
    pitch: float
    pitch_rate: float
    roll: float
    roll_rate: float
    yaw: float
    yaw_rate: float
    alpha: np.ndarray
    alpha_rate: np.ndarray
    height: np.ndarray
    height_rate: np.ndarray
    height_slope: np.ndarray  # (left, right) dy/dalpha, m/rad: the five-bar's lever (eq. 2.29)
    accel: float  # |specific force| from the accelerometer, m/s^2 (about 0 in free fall)
    hip_angles: np.ndarray = None  # (4,) per motor: left front, left rear, right front, right rear, rad
    hip_rates: np.ndarray = None  # (4,), rad/s

    @property
    def balance_state(self) -> np.ndarray:
        """``[x, xd, theta, thetad]`` of the wheeled pendulum."""
        return np.array([self.x, self.xd, self.pitch, self.pitch_rate])


def shank_angle(alpha, geometry: LegGeometry) -> tuple[np.ndarray, np.ndarray]:
    """Front shank's pitch relative to the body and its derivative in ``alpha``.

    The knee is ``a = l1 - l2 cos(alpha)`` ahead of the centre line and the shank
    (length ``l3``) reaches the axle on that line, so the shank is rotated
    ``phi = asin(a / l3)`` about +y from hanging straight down;
    ``dphi/dalpha = l2 sin(alpha) / sqrt(l3^2 - a^2)``.
    """
    return _shank_angle(five_bar.check_alpha(alpha, geometry.l1, geometry.l2, geometry.l3), geometry)


def _shank_angle(alpha: np.ndarray, g: LegGeometry) -> tuple[np.ndarray, np.ndarray]:
    """:func:`shank_angle` for an ``alpha`` already validated (the estimator's hot path)."""
    a = g.l1 - g.l2 * np.cos(alpha)
    return np.arcsin(a / g.l3), g.l2 * np.sin(alpha) / np.sqrt(g.l3**2 - a**2)


class Estimator:
    """Turns one sample of sensor readings into an :class:`Estimate`.

    Odometry starts at ``x = 0`` on the first update; yaw is unwrapped so a turn
    through +-180 deg stays continuous.
    """

    def __init__(self, geometry: LegGeometry):
        # Validate the leg over its whole reachable range once: every update clips
        # alpha into that range, so the per-step geometry needs no further checks.
        five_bar.check_alpha(np.linspace(*five_bar.REACHABLE, 721), geometry.l1, geometry.l2, geometry.l3)
        self.geometry = geometry
        self._x0: float | None = None
        self._yaw_prev: float | None = None
        self._yaw_turns = 0.0

    def update(self, quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel) -> Estimate:
        """One estimate.

        Args:
          quat: IMU orientation ``(w, x, y, z)``; gyro: body angular velocity, rad/s, (3,);
          accel: accelerometer, m/s^2, (3,).
          hip_pos, hip_vel: hip encoders ``(left front, left rear, right front, right rear)``, rad, rad/s.
          wheel_pos, wheel_vel: wheel encoders ``(left, right)``, rad, rad/s (relative to the shank).

        Raises:
          ValueError: a non-finite reading (a sensor fault or a diverged simulation).
        """
        readings = [np.asarray(v, dtype=float) for v in (quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel)]
        if not np.isfinite(np.concatenate(readings)).all():
            raise ValueError("non-finite sensor reading: the state cannot be estimated")
        quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel = readings
        g = self.geometry
        roll, pitch, yaw = (float(a) for a in euler_zyx(quat))
        roll_rate, pitch_rate, yaw_rate = (float(a) for a in euler_rates(roll, pitch, gyro))

        if self._yaw_prev is not None:
            jump = yaw - self._yaw_prev
            self._yaw_turns -= 2 * np.pi * np.round(jump / (2 * np.pi))
        self._yaw_prev = yaw

        alpha = 0.5 * (hip_pos[0::2] + hip_pos[1::2])  # (left, right): mean of front and rear motor
        alpha = np.clip(alpha, *five_bar.REACHABLE)  # a transient overshoot must not stop the estimate
        alpha_rate = 0.5 * (hip_vel[0::2] + hip_vel[1::2])
        y, y1, _ = five_bar.height_derivatives(alpha, g.l1, g.l2, g.l3, validate=False)  # checked in __init__
        phi, dphi = _shank_angle(alpha, g)
        # Wheel rotation in the world = encoder + shank pitch (body pitch + phi); rolling
        # without slip, the axle moves r times that.
        wheel_angle = wheel_pos + pitch + phi
        wheel_rate = wheel_vel + pitch_rate + dphi * alpha_rate
        x = g.r * 0.5 * float(wheel_angle[0] + wheel_angle[1])
        if self._x0 is None:
            self._x0 = x
        return Estimate(
            x=x - self._x0,
            xd=g.r * 0.5 * float(wheel_rate[0] + wheel_rate[1]),
            pitch=pitch,
            pitch_rate=pitch_rate,
            roll=roll,
            roll_rate=roll_rate,
            yaw=yaw + self._yaw_turns,
            yaw_rate=yaw_rate,
            alpha=alpha,
            alpha_rate=alpha_rate,
            height=y,
            height_rate=y1 * alpha_rate,
            height_slope=y1,
            accel=float(np.linalg.norm(accel)),
            hip_angles=hip_pos,
            hip_rates=hip_vel,
        )
