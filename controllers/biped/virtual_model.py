"""Virtual-model leg control of the wheel-legged biped: virtual force and roll torque -> hip torques.

A height PD gives the virtual vertical force ``F_y`` (N, beyond the body's weight), a roll PD the roll
torque ``T_x`` (N m, positive lifting the left side); the support statics (``leg_forces``) turn them into
leg forces with the weight fed forward, and the five-bar's virtual work into each hip motor's torque
``(P / 2) y1(alpha)``.  A positive hip torque extends the leg.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...analytic.biped.wheeled_pendulum import PendulumParams, leg_forces

__all__ = ["LegGains", "virtual_forces", "hip_torques"]


@dataclass(frozen=True)
class LegGains:
    """PD gains of the virtual-model leg controller: on body height above the axles (N/m, N s/m) and on
    body roll (N m/rad, N m s/rad)."""

    kp_height: float
    kd_height: float
    kp_roll: float
    kd_roll: float


def virtual_forces(gains: LegGains, height, height_rate, height_ref, roll, roll_rate,
                   height_rate_ref: float = 0.0) -> tuple[float, float]:
    """Height PD -> ``F_y`` (N), roll PD -> ``T_x`` (N m), towards level at ``height_ref``.

    Args:
      height, height_rate: mean leg height (m) and its rate (m/s).
      height_ref: wanted height, m; height_rate_ref: its rate, m/s.
      roll, roll_rate: body roll (rad, positive lifts the left side) and its rate.
    """
    F_y = gains.kp_height * (height_ref - height) + gains.kd_height * (height_rate_ref - height_rate)
    T_x = -gains.kp_roll * roll - gains.kd_roll * roll_rate
    return float(F_y), float(T_x)


def hip_torques(params: PendulumParams, slopes, F_y: float, T_x: float, limit: float) -> tuple[float, float]:
    """Hip torque per motor for the left and right leg (N m), saturated to ``+-limit``.

    Args:
      params: the pendulum parameters (body mass ``M``, track ``D``, ``g``) for the support statics.
      slopes: each leg's lever ``y1 = dy/dalpha`` (left, right), m/rad, from
        ``analytic.biped.five_bar.height_derivatives`` (the estimator provides it).
      F_y, T_x: virtual force and roll torque from :func:`virtual_forces`.
      limit: motor torque limit, N m.
    """
    P_L, P_R = leg_forces(params, float(F_y), float(T_x))
    tau_L, tau_R = 0.5 * P_L * slopes[0], 0.5 * P_R * slopes[1]  # tau = (P / 2) y1
    return min(max(tau_L, -limit), limit), min(max(tau_R, -limit), limit)
