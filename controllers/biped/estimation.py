"""State estimate of the wheel-legged biped from what a real robot has: the IMU (orientation, gyro,
accelerometer) and the hip and wheel encoders; the knee follows from the hip angle through the five-bar.

Conventions (docs/derivations/biped-model.md): x forward, y left, z up; Z-Y-X Euler angles; pitch positive
leaning forward, roll positive lifting the left side.  ``x`` is the axle's travel from wheel odometry; the
pitch is the wheeled pendulum's angle (for a symmetric five-bar the axle lies below the hip line's middle).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import asin, atan2, cos, isfinite, pi, sin, sqrt, tan
from typing import NamedTuple

import numpy as np

from ...analytic.biped import five_bar

__all__ = ["LegGeometry", "Estimate", "Estimator", "shank_angle"]


@dataclass(frozen=True)
class LegGeometry:
    """Leg and wheel geometry the estimator needs, m: five-bar ``l1, l2, l3``, wheel radius ``r``."""

    l1: float
    l2: float
    l3: float
    r: float


class Estimate(NamedTuple):
    """The controller's view of the robot at one instant (SI units, rad).

    ``alpha``, ``alpha_rate``, ``height`` (the hip line above the axle, the five-bar's ``y(alpha)``),
    ``height_rate``, ``height_slope`` are ``(left, right)`` tuples of floats.  A named tuple of floats: the
    estimator builds one every control step (``est._replace(x=...)`` makes a changed copy).
    """

    x: float
    xd: float
    pitch: float
    pitch_rate: float
    roll: float
    roll_rate: float
    yaw: float
    yaw_rate: float
    alpha: tuple
    alpha_rate: tuple
    height: tuple
    height_rate: tuple
    height_slope: tuple  # (left, right) dy/dalpha, m/rad: the five-bar's lever
    accel: float  # |specific force| from the accelerometer, m/s^2 (about 0 in free fall)
    hip_angles: tuple | None = None  # (4,) per motor: left front, left rear, right front, right rear, rad
    hip_rates: tuple | None = None  # (4,), rad/s

    @property
    def balance_state(self) -> np.ndarray:
        """``[x, xd, theta, thetad]`` of the wheeled pendulum."""
        return np.array([self.x, self.xd, self.pitch, self.pitch_rate])


def shank_angle(alpha, geometry: LegGeometry) -> tuple[np.ndarray, np.ndarray]:
    """Front shank's pitch relative to the body, ``phi = asin(a / l3)`` with the knee ``a = l1 - l2 cos(alpha)``
    ahead of the centre line, and ``dphi/dalpha = l2 sin(alpha) / sqrt(l3^2 - a^2)``."""
    alpha = five_bar.check_alpha(alpha, geometry.l1, geometry.l2, geometry.l3)
    g = geometry
    a = g.l1 - g.l2 * np.cos(alpha)
    return np.arcsin(a / g.l3), g.l2 * np.sin(alpha) / np.sqrt(g.l3**2 - a**2)


class Estimator:
    """Turns one sample of sensor readings into an :class:`Estimate`.

    Odometry starts at ``x = 0`` on the first update; yaw is unwrapped.  The update runs every control
    step, so it is written in plain floats (``math``, no NumPy), one ``alpha`` at a time.
    """

    def __init__(self, geometry: LegGeometry):
        # Validated over the whole reachable range once: every update clips alpha into it.
        five_bar.check_alpha(np.linspace(*five_bar.REACHABLE, 721), geometry.l1, geometry.l2, geometry.l3)
        self.geometry = geometry
        self._x0: float | None = None
        self._yaw_prev: float | None = None
        self._yaw_turns = 0.0

    def update(self, quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel) -> Estimate:
        """One estimate from sequences of numbers (tuples of floats are the fastest).

        Args:
          quat: IMU orientation ``(w, x, y, z)``; gyro: body angular velocity, rad/s, (3,);
          accel: accelerometer, m/s^2, (3,).
          hip_pos, hip_vel: hip encoders ``(left front, left rear, right front, right rear)``, rad, rad/s.
          wheel_pos, wheel_vel: wheel encoders ``(left, right)``, rad, rad/s (relative to the shank).

        Raises:
          ValueError: a non-finite reading (a sensor fault or a diverged simulation).
        """
        hip_pos, hip_vel = tuple(hip_pos), tuple(hip_vel)
        _check_finite(quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel)
        g = self.geometry
        roll, pitch, yaw, roll_rate, pitch_rate, yaw_rate = _euler_zyx(quat, gyro)
        if self._yaw_prev is not None:
            self._yaw_turns -= 2 * pi * round((yaw - self._yaw_prev) / (2 * pi))
        self._yaw_prev = yaw

        al, adl, yl, y1l, phil, dphil = self._leg(hip_pos[0], hip_pos[1], hip_vel[0], hip_vel[1])
        ar, adr, yr, y1r, phir, dphir = self._leg(hip_pos[2], hip_pos[3], hip_vel[2], hip_vel[3])
        # Wheel rotation in the world = encoder + shank pitch (body pitch + phi); rolling
        # without slip, the axle moves r times that.
        (wheel_pos_l, wheel_pos_r), (wheel_vel_l, wheel_vel_r), (ax, ay, az) = wheel_pos, wheel_vel, accel
        x = g.r * 0.5 * ((wheel_pos_l + pitch + phil) + (wheel_pos_r + pitch + phir))
        if self._x0 is None:
            self._x0 = x
        return Estimate(
            x=x - self._x0,
            xd=g.r * 0.5 * ((wheel_vel_l + pitch_rate + dphil * adl) + (wheel_vel_r + pitch_rate + dphir * adr)),
            pitch=pitch,
            pitch_rate=pitch_rate,
            roll=roll,
            roll_rate=roll_rate,
            yaw=yaw + self._yaw_turns,
            yaw_rate=yaw_rate,
            alpha=(al, ar),
            alpha_rate=(adl, adr),
            height=(yl, yr),
            height_rate=(y1l * adl, y1r * adr),
            height_slope=(y1l, y1r),
            accel=sqrt(ax * ax + ay * ay + az * az),
            hip_angles=hip_pos,
            hip_rates=hip_vel,
        )

    def _leg(self, front: float, rear: float, front_rate: float, rear_rate: float) -> tuple:
        """One leg from its two hip encoders: ``(alpha, alpha_rate, y, dy/dalpha, phi, dphi)``, ``alpha`` the
        motors' mean clipped into the reachable range (a transient overshoot must not stop the estimate)."""
        g = self.geometry
        low, high = five_bar.REACHABLE
        alpha = 0.5 * (front + rear)
        alpha = low if alpha < low else high if alpha > high else alpha
        c, s = cos(alpha), sin(alpha)
        a = g.l1 - g.l2 * c  # knee's distance from the centre line
        # The axle's depth below the knee; x * x, not x**2: a product is correctly rounded, libm's pow
        # not always (and the compiled step, crossdyn.controllers.biped.compiled, squares by multiplying).
        root = sqrt(g.l3 * g.l3 - a * a)
        return (alpha, 0.5 * (front_rate + rear_rate), root - g.l2 * s, -a * (g.l2 * s) / root - g.l2 * c,
                asin(a / g.l3), g.l2 * s / root)


def _check_finite(quat, gyro, accel, hip_pos, hip_vel, wheel_pos, wheel_vel) -> None:
    """Raise ValueError if any reading is NaN or infinite (a sensor fault or a diverged simulation)."""
    w, qx, qy, qz = quat
    wx, wy, wz = gyro
    ax, ay, az = accel
    wheel_pos_l, wheel_pos_r = wheel_pos
    wheel_vel_l, wheel_vel_r = wheel_vel
    # A finite sum means every reading is finite (checked one by one only when the sum is not).
    total = (w + qx + qy + qz + wx + wy + wz + ax + ay + az + sum(hip_pos) + sum(hip_vel) + wheel_pos_l
             + wheel_pos_r + wheel_vel_l + wheel_vel_r)
    if not isfinite(total) and not all(isfinite(v) for v in (w, qx, qy, qz, wx, wy, wz, ax, ay, az, *hip_pos,
                                                              *hip_vel, *wheel_pos, *wheel_vel)):
        raise ValueError("non-finite sensor reading: the state cannot be estimated")


def _euler_zyx(quat, gyro) -> tuple[float, float, float, float, float, float]:
    """``(roll, pitch, yaw, roll_rate, pitch_rate, yaw_rate)`` of one sample, rad and rad/s:
    ``analytic.rotation.euler_zyx`` and ``euler_rates`` in plain floats."""
    w, qx, qy, qz = quat
    wx, wy, wz = gyro
    roll = atan2(2 * (w * qx + qy * qz), 1 - 2 * (qx * qx + qy * qy))
    s = 2 * (w * qy - qz * qx)
    pitch = asin(1.0 if s > 1.0 else -1.0 if s < -1.0 else s)
    yaw = atan2(2 * (w * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
    sr, cr, cp, tp = sin(roll), cos(roll), cos(pitch), tan(pitch)
    return roll, pitch, yaw, wx + sr * tp * wy + cr * tp * wz, cr * wy - sr * wz, (sr * wy + cr * wz) / cp
