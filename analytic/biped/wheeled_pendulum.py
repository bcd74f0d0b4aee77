"""Wheeled inverted pendulum, steering and support statics of the biped, after a thesis chapter on the
dynamics of a wheel-legged biped (docs/derivations/biped-model.md).

A rigid body (mass ``M``, pitch inertia ``J_pitch``, CoM ``l`` above the axle on rigid massless legs) on two
wheels (mass ``m``, inertia ``I``, radius ``r``, track ``D``) rolling without slip; ``x`` forward, ``theta``
the pitch (positive leaning forward), ``T = T_L + T_R`` the total wheel torque (positive driving forward).
Where the printed chapter differs from the corrected form (docs/derivations/errata.md) a function takes
``printed=True`` and returns the printed form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PendulumParams", "accelerations", "dynamics", "linearize_pendulum", "wheel_drive_torque",
           "axle_acceleration", "yaw_acceleration", "yaw_acceleration_from_wheels", "leg_forces", "virtual_forces"]


@dataclass(frozen=True)
class PendulumParams:
    """Parameters of the wheeled inverted pendulum (read from the MJCF in experiments/).

    Attributes:
      M, m: body mass and one wheel's mass, kg.
      r, D: wheel radius and track (distance between the wheels), m.
      I: one wheel's inertia about its axle, kg m^2.
      J_pitch, J_yaw: body inertia about the pitch and the vertical axis through its CoM (written J_z,
        J_y in the chapter), kg m^2.
      g: gravity, m/s^2.
    """

    M: float
    m: float
    r: float
    I: float  # noqa: E741 -- the equations' symbol, and a public field (PendulumParams(I=...)) read across crossdyn
    J_pitch: float
    J_yaw: float
    D: float
    g: float = 9.81

    def __post_init__(self):
        for name in ("M", "m", "r", "I", "J_pitch", "J_yaw", "D", "g"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"PendulumParams.{name}={value!r} must be a finite, non-negative number")
        for name in ("M", "r", "D"):
            if getattr(self, name) <= 0:
                raise ValueError(f"PendulumParams.{name} must be positive")


def _check_length(length) -> float:
    if not (np.isfinite(length) and length > 0):
        raise ValueError(f"pendulum length l={length!r} must be a positive finite number (m)")
    return float(length)


def accelerations(p: PendulumParams, length: float, theta, theta_dot, T):
    """Axle (m/s^2) and pitch (rad/s^2) accelerations ``(xdd, thdd)`` of the nonlinear model.

    Args:
      p: parameters.
      length: l, the CoM height above the axle, m.
      theta, theta_dot, T: pitch, rad; its rate, rad/s; total wheel torque, N m; broadcast together.
    """
    length = _check_length(length)
    theta, theta_dot, T = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (theta, theta_dot, T)))
    c, s = np.cos(theta), np.sin(theta)
    # [[mx, M l c], [M l c, J + M l^2]] [xdd, thdd] = [T/r + M l thd^2 s, M g l s - T]
    mx = p.M + 2 * p.m + 2 * p.I / p.r**2
    a11, a12, a22 = mx, p.M * length * c, p.J_pitch + p.M * length**2
    b1 = T / p.r + p.M * length * theta_dot**2 * s
    b2 = p.M * p.g * length * s - T
    det = a11 * a22 - a12 * a12
    return (a22 * b1 - a12 * b2) / det, (a11 * b2 - a12 * b1) / det


def dynamics(p: PendulumParams, length: float, state, T) -> np.ndarray:
    """State derivative of the nonlinear model for ``state = [x, xd, theta, thd]``, ``(..., 4)``."""
    state = np.asarray(state, dtype=float)
    xdd, thdd = accelerations(p, length, state[..., 2], state[..., 3], T)
    return np.stack([state[..., 1], xdd, state[..., 3], thdd], axis=-1)


def linearize_pendulum(p: PendulumParams, length: float, printed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Continuous-time ``(A, B)`` of the linearized model about the upright equilibrium.

    Args:
      p: parameters.
      length: l, the CoM height above the axle, m.
      printed: use the printed ``2 l / r^2`` in place of ``2 I / r^2``.

    Returns:
      ``A`` (4, 4) and ``B`` (4, 1) for the state ``[x, xd, theta, thd]`` and the input ``T`` (N m).
    """
    length = _check_length(length)
    wheel = 2 * (length if printed else p.I) / p.r**2
    # E [xdd, thdd] = G theta + H T, from the two linearized equations.
    E = np.array([[p.r * (p.M + 2 * p.m + wheel), p.M * p.r * length], [p.M * length, p.J_pitch + p.M * length**2]])
    G = np.array([0.0, p.M * p.g * length])
    H = np.array([1.0, -1.0])
    acc_theta = np.linalg.solve(E, G)
    acc_T = np.linalg.solve(E, H)
    A = np.zeros((4, 4))
    A[0, 1] = A[2, 3] = 1.0
    A[1, 2], A[3, 2] = acc_theta
    B = np.zeros((4, 1))
    B[1, 0], B[3, 0] = acc_T
    return A, B


def wheel_drive_torque(p: PendulumParams, xdd_wheel, N, printed: bool = False):
    """Wheel torque ``T`` (N m) from ``(m + I/r^2) xdd = T/r - N`` (printed: ``m + 1/r^2``), with the wheel's
    axle acceleration ``xdd_wheel`` (m/s^2) and ``N`` the force it pushes the leg forward with (N)."""
    inertia = 1.0 if printed else p.I
    return p.r * ((p.m + inertia / p.r**2) * np.asarray(xdd_wheel, dtype=float) + N)


def axle_acceleration(xdd_L, xdd_R, xd_R=None, printed: bool = False):
    """Mean axle acceleration ``(xdd_L + xdd_R)/2``, m/s^2 (printed: ``(xdd_L + xd_R)/2``, ``xd_R`` in m/s)."""
    if printed:
        if xd_R is None:
            raise ValueError("the printed mean acceleration uses the right wheel's velocity: pass xd_R")
        return 0.5 * (np.asarray(xdd_L) + np.asarray(xd_R))
    return 0.5 * (np.asarray(xdd_L) + np.asarray(xdd_R))


def yaw_acceleration(p: PendulumParams, T_L, T_R):
    """Yaw acceleration ``deltadd``, rad/s^2, for wheel torques, positive turning right (minus MuJoCo's about +z)."""
    den = p.r * (p.m * p.D + p.I * p.D / p.r**2 + 2 * p.J_yaw / p.D)
    return (np.asarray(T_L, dtype=float) - np.asarray(T_R, dtype=float)) / den


def yaw_acceleration_from_wheels(D: float, xdd_L, xdd_R, xd_L=None, x_R=None, printed: bool = False):
    """Yaw acceleration from the axle motions, positive turning right: ``(xdd_L - xdd_R)/D`` (track ``D`` m,
    accelerations m/s^2); printed ``(xd_L - x_R)/D`` (a velocity and a position)."""
    if printed:
        if xd_L is None or x_R is None:
            raise ValueError("the printed yaw-from-wheels form uses xd_L and x_R: pass both")
        return (np.asarray(xd_L) - np.asarray(x_R)) / D
    return (np.asarray(xdd_L) - np.asarray(xdd_R)) / D


def leg_forces(p: PendulumParams, F_y, T_x, printed: bool = False):
    """Leg forces ``(P_L, P_R) = (F_y + M g)/2 +- T_x/D``, N, each pushing the body up (printed: ``F_y - M g``).

    ``F_y`` is the virtual vertical force beyond the weight (N), ``T_x`` the roll torque about +x (N m);
    floats give floats (the controller calls this every step), arrays give arrays.
    """
    weight = -p.M * p.g if printed else p.M * p.g
    if not (isinstance(F_y, float) and isinstance(T_x, float)):
        F_y, T_x = np.asarray(F_y, dtype=float), np.asarray(T_x, dtype=float)
    common = 0.5 * (F_y + weight)
    roll = T_x / p.D
    return common + roll, common - roll


def virtual_forces(p: PendulumParams, P_L, P_R):
    """``(F_y, T_x)`` from the leg forces (the forward statics)."""
    P_L, P_R = np.asarray(P_L, dtype=float), np.asarray(P_R, dtype=float)
    return P_L + P_R - p.M * p.g, (P_L - P_R) * p.D / 2
