"""Steering of the wheel-legged biped by differential wheel torque.

The yaw axis is a pure inertia, ``delta_dd = (T_L - T_R) / J_eff`` with ``J_eff = r (m D + I D / r^2 +
2 J_yaw / D)`` (docs/derivations/biped-model.md), and a PD on yaw places its poles.  ``delta`` is positive
turning right, minus the IMU's yaw about +z, so ``dT = -J_eff * (wanted yaw acceleration)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import pi

__all__ = ["YawGains", "yaw_gains", "yaw_torque", "split_wheel_torque"]


@dataclass(frozen=True)
class YawGains:
    """PD gains of the yaw loop, ``dT = kp (yaw_ref - yaw) + kd (rate_ref - rate)``: N m/rad, N m s/rad."""

    kp: float
    kd: float


def yaw_gains(j_eff: float, natural_frequency: float, damping_ratio: float = 1.0) -> YawGains:
    """Pole placement on ``J_eff delta_dd = dT``: ``s^2 + 2 zeta wn s + wn^2``.

    Args:
      j_eff: the steering model's torque per yaw acceleration, N m s^2 / rad (``T_L - T_R = j_eff delta_dd``).
      natural_frequency, damping_ratio: wn, rad/s, and zeta.
    """
    if not (j_eff > 0 and natural_frequency > 0 and damping_ratio > 0):
        raise ValueError(f"need positive j_eff, wn, zeta; got {j_eff}, {natural_frequency}, {damping_ratio}")
    return YawGains(kp=j_eff * natural_frequency**2, kd=2 * damping_ratio * natural_frequency * j_eff)


def yaw_torque(gains: YawGains, yaw: float, rate: float, yaw_ref: float = 0.0, rate_ref: float = 0.0) -> float:
    """Differential torque ``T_L - T_R`` (N m) steering ``yaw`` (about +z, rad) to ``yaw_ref``.

    The yaw error is wrapped to (-pi, pi]; the minus sign converts the wanted
    counter-clockwise acceleration into the steering model's clockwise-positive ``dT``.
    """
    error = (yaw_ref - yaw + pi) % (2 * pi) - pi
    return float(-(gains.kp * error + gains.kd * (rate_ref - rate)))


def split_wheel_torque(total: float, differential: float, limit: float) -> tuple[float, float]:
    """Wheel torques ``(T_L, T_R)``, N m, from ``T = T_L + T_R`` and ``dT = T_L - T_R``: balance first, the
    total clipped to ``2 limit``, then the differential reduced until neither wheel exceeds ``limit``."""
    total = min(max(float(total), -2 * limit), 2 * limit)
    room = 2 * limit - abs(total)  # the largest |dT| that keeps both wheels in range
    differential = min(max(float(differential), -room), room)
    return 0.5 * (total + differential), 0.5 * (total - differential)
