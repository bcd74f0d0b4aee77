"""The controller wheel-leg teams flash, on the free-hip model: a six-state LQR with gains ``K(l)`` over leg
length, a leg-length PD with the body's weight fed forward, and torques through each leg's Jacobian.

Every control period, from the robot's own sensors (IMU quaternion and gyro, hip and wheel encoders, and on a
rod leg its length sensor):

- the state ``[theta, theta_dot, x, x_dot, phi, phi_dot]`` of :mod:`crossdyn.analytic.biped.free_hip`: the
  body's pitch ``phi`` from the IMU (Z-Y-X), each leg's angle from the body (and its length) from the hip
  encoders, ``theta`` the legs' mean angle from the vertical, ``x`` the wheels' travel from their encoders
  (wheel angle plus the turn of the link carrying the wheel), from where the run started;
- ``[T, Tp] = -K(l) state`` (both wheels' torque summed; both legs' hip torque summed), ``K`` the
  :class:`~crossdyn.controllers.lqr.GainSchedule` at the legs' mean length;
- per leg, the force along it ``F = kp (l_ref - l) - kd l_dot + W / 2`` (``W`` the body's weight, fed
  forward) and its hip torque ``Tp / 2`` less a PD on the legs' split (``theta_left - theta_right``, which the
  model, one leg for both, cannot see: left unchecked one leg falls forward as the other falls back), and
  those turned into motor torques: a rod leg's slide takes ``F`` and its hinge the torque; a five-bar's two
  motors take ``J_l' F + J_theta' torque``, ``J`` the derivatives of the leg's length and angle by the two
  motor angles (virtual work);
- each wheel ``T / 2``; every command clipped to its motor's limit.

:class:`FreeHipController` is that law in Python; ``controllers/biped/firmware/free_hip.c`` is the same law in C
for a microcontroller (float, fixed arrays), its gains from the header :meth:`GainSchedule.to_c` writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import asin, atan2, cos, sin, sqrt

import numpy as np

from ..lqr import GainSchedule

__all__ = ["RodLegs", "FiveBarLegs", "LegPD", "Channels", "FreeHipController", "leg_pose"]


@dataclass(frozen=True)
class RodLegs:
    """Rod legs: the hip hinge is the leg's angle from the body, a slide its length (both sensed)."""


@dataclass(frozen=True)
class FiveBarLegs:
    """Five-bar legs (:mod:`crossdyn.analytic.biped.five_bar`): motors ``l1`` either side of the hip line,
    thighs ``l2``, shanks ``l3`` (m); the wheel turns on the front shank."""

    l1: float
    l2: float
    l3: float


@dataclass(frozen=True)
class LegPD:
    """The legs' own loops: length ``kp`` N/m, ``kd`` N s/m about the length held ``length`` m, the weight fed
    forward ``weight`` N (the body's, shared by the two legs); split ``split_kp`` N m/rad, ``split_kd``
    N m s/rad on the legs' angle difference, half on each leg's hip, opposite ways."""

    kp: float
    kd: float
    length: float
    weight: float
    split_kp: float
    split_kd: float


@dataclass(frozen=True)
class Channels:
    """Where the controller reads and writes, by index.

    Attributes:
      quat, gyro: the IMU's ``sensordata`` indices (4 and 3).
      hip_pos, hip_vel: per motor (rod: left, right; five-bar: left front, left rear, right front, right rear).
      length_pos, length_vel: the rod legs' length sensors (left, right); empty for five-bar legs.
      wheel_pos, wheel_vel: left, right.
      hips: the hip motors' actuator indices (ordered as ``hip_pos``); lengths: the rod's slide motors (left,
        right; empty for a five-bar); wheels: left, right.
    """

    quat: tuple[int, ...]
    gyro: tuple[int, ...]
    hip_pos: tuple[int, ...]
    hip_vel: tuple[int, ...]
    length_pos: tuple[int, ...]
    length_vel: tuple[int, ...]
    wheel_pos: tuple[int, ...]
    wheel_vel: tuple[int, ...]
    hips: tuple[int, ...]
    lengths: tuple[int, ...]
    wheels: tuple[int, ...]


def leg_pose(legs: FiveBarLegs, front: float, rear: float, front_rate: float, rear_rate: float) -> tuple:
    """A five-bar leg from its motors: ``(angle, angle_rate, length, length_rate, wheel, wheel_rate, J_l, J_theta)``.

    ``angle`` is the hip-to-axle line's angle from the body's vertical (rad, positive with the axle behind),
    ``length`` its length (m), ``wheel`` the front shank's angle from the body's vertical (the wheel's carrier),
    ``J_l`` and ``J_theta`` the derivatives of length and angle by ``(front, rear)`` (m/rad, rad/rad).  The axle
    and its Jacobian are :func:`~crossdyn.analytic.biped.five_bar.axle_position` and
    :func:`~crossdyn.analytic.biped.five_bar.axle_jacobian`, written out in plain floats (a control step's cost).
    """
    l1, l2, l3 = legs.l1, legs.l2, legs.l3
    kfx, kfz, krx, krz = l1 - l2 * cos(front), l2 * sin(front), -l1 + l2 * cos(rear), l2 * sin(rear)  # knees
    dfx, dfz, drx, drz = l2 * sin(front), l2 * cos(front), -l2 * sin(rear), l2 * cos(rear)  # d knee / d alpha
    bx, bz = kfx - krx, kfz - krz
    span = sqrt(bx * bx + bz * bz)
    depth = sqrt(l3 * l3 - 0.25 * span * span)
    ax, az = 0.5 * (kfx + krx) + depth * bz / span, 0.5 * (kfz + krz) - depth * bx / span
    # The shanks keep their length: (A - K) . (dA - dK) = 0 for each, solved for dA per motor.
    e00, e01, e10, e11 = ax - kfx, az - kfz, ax - krx, az - krz
    det = e00 * e11 - e01 * e10
    rf, rr = e00 * dfx + e01 * dfz, e10 * drx + e11 * drz
    jxf, jzf, jxr, jzr = e11 * rf / det, -e10 * rf / det, -e01 * rr / det, e00 * rr / det
    ll = ax * ax + az * az
    length = sqrt(ll)
    j_len = ((ax * jxf + az * jzf) / length, (ax * jxr + az * jzr) / length)
    j_ang = ((az * jxf - ax * jzf) / ll, (az * jxr - ax * jzr) / ll)
    vx, vz = ax - kfx, az - kfz  # the front shank, knee to axle
    vxd = jxf * front_rate + jxr * rear_rate - dfx * front_rate
    vzd = jzf * front_rate + jzr * rear_rate - dfz * front_rate
    return (atan2(-ax, -az), j_ang[0] * front_rate + j_ang[1] * rear_rate, length,
            j_len[0] * front_rate + j_len[1] * rear_rate, atan2(-vx, -vz), (vz * vxd - vx * vzd) / (vx * vx + vz * vz),
            j_len, j_ang)


def _clip(value: float, limit: float) -> float:
    return -limit if value < -limit else limit if value > limit else value


class FreeHipController:
    """The free-hip controller (module docstring), called by the closed loop: ``controller(t, obs) -> ctrl``.

    Args:
      gains: ``K(l)`` for ``[theta, theta_dot, x, x_dot, phi, phi_dot]`` and ``[T, Tp]``, ``(2, 6)``.
      legs: :class:`RodLegs` or :class:`FiveBarLegs`.
      pd: the leg-length loop.
      wheel_radius: m.
      channels: the sensor and actuator indices.
      nu: the model's actuator count.
      limits: ``(wheel N m, hip N m, leg force N)``, each motor's.
    """

    def __init__(self, gains: GainSchedule, legs: RodLegs | FiveBarLegs, pd: LegPD, wheel_radius: float,
                 channels: Channels, nu: int, limits: tuple[float, float, float]):
        if gains.coeffs.shape[1:] != (2, 6):
            raise ValueError(f"the free-hip controller needs K (2, 6), got {gains.coeffs.shape[1:]}")
        self.gains, self.legs, self.pd, self.r, self.ch, self.nu = gains, legs, pd, wheel_radius, channels, nu
        self.wheel_limit, self.hip_limit, self.force_limit = limits
        self.x0: float | None = None

    def start(self, model, data) -> None:
        """A run starts: the odometry's origin is taken at the first step."""
        self.x0 = None

    def state(self, s) -> tuple[np.ndarray, list[tuple], float]:
        """``(state (6,), legs, length)`` from the sensor readings ``s`` (a list of floats)."""
        ch = self.ch
        w, qx, qy, qz = (s[i] for i in ch.quat)
        wx, wy, wz = (s[i] for i in ch.gyro)
        roll = atan2(2 * (w * qx + qy * qz), 1 - 2 * (qx * qx + qy * qy))
        p = 2 * (w * qy - qz * qx)
        phi = asin(1.0 if p > 1.0 else -1.0 if p < -1.0 else p)
        phi_rate = cos(roll) * wy - sin(roll) * wz
        legs = []
        for side in range(2):
            if isinstance(self.legs, FiveBarLegs):
                f, r = ch.hip_pos[2 * side], ch.hip_pos[2 * side + 1]
                fv, rv = ch.hip_vel[2 * side], ch.hip_vel[2 * side + 1]
                legs.append(leg_pose(self.legs, s[f], s[r], s[fv], s[rv]))
            else:
                angle, rate = s[ch.hip_pos[side]], s[ch.hip_vel[side]]
                legs.append((angle, rate, s[ch.length_pos[side]], s[ch.length_vel[side]], angle, rate))
        x = self.r * 0.5 * sum(s[ch.wheel_pos[i]] + phi + legs[i][4] for i in range(2))
        xd = self.r * 0.5 * sum(s[ch.wheel_vel[i]] + phi_rate + legs[i][5] for i in range(2))
        if self.x0 is None:
            self.x0 = x
        theta = phi + 0.5 * (legs[0][0] + legs[1][0])
        theta_rate = phi_rate + 0.5 * (legs[0][1] + legs[1][1])
        state = np.array([theta, theta_rate, x - self.x0, xd, phi, phi_rate])
        return state, legs, 0.5 * (legs[0][2] + legs[1][2])

    def __call__(self, t: float, obs) -> np.ndarray:
        s = obs.sensordata.tolist()
        state, legs, length = self.state(s)
        k = self.gains.row(length)
        T = -sum(k[j] * state[j] for j in range(6))
        Tp = -sum(k[6 + j] * state[j] for j in range(6))
        split = self.pd.split_kp * (legs[0][0] - legs[1][0]) + self.pd.split_kd * (legs[0][1] - legs[1][1])
        ctrl = np.zeros(self.nu)
        for side, leg in enumerate(legs):
            force = self.pd.kp * (self.pd.length - leg[2]) - self.pd.kd * leg[3] + 0.5 * self.pd.weight
            torque = 0.5 * Tp - (0.5 if side == 0 else -0.5) * split
            if isinstance(self.legs, FiveBarLegs):
                j_len, j_ang = leg[6], leg[7]
                for k_, motor in enumerate(self.ch.hips[2 * side : 2 * side + 2]):
                    ctrl[motor] = _clip(j_len[k_] * force + j_ang[k_] * torque, self.hip_limit)
            else:
                ctrl[self.ch.hips[side]] = _clip(torque, self.hip_limit)
                ctrl[self.ch.lengths[side]] = _clip(force, self.force_limit)
            ctrl[self.ch.wheels[side]] = _clip(0.5 * T, self.wheel_limit)
        return ctrl
