"""Wheeled inverted pendulum, steering and support statics of the biped.

The source is a thesis chapter on the dynamics of a wheel-legged biped (docs/derivations/biped-model.md).

Assumptions (as in the thesis chapter): the body is a rigid body of mass ``M`` and pitch inertia
``J_pitch`` whose CoM is ``l`` above the wheel axle on rigid, massless legs; two
wheels (mass ``m``, axle inertia ``I``, radius ``r``, track ``D``) roll without
slipping.  Sign conventions (docs/derivations/biped-model.md): ``x`` forward along the axle, ``theta`` the
pitch, positive leaning forward (MuJoCo's rotation about +y); ``T = T_L + T_R`` the
total wheel torque, positive driving forward, which pitches the body back.

Equations:

- nonlinear planar model (body pitch and axle travel, contact forces eliminated)::

    (J + M l^2) thdd = M g l sin(th) - M l xdd cos(th) - T
    (M + 2m + 2I/r^2) xdd = T/r - M l thdd cos(th) + M l thd^2 sin(th)

- linearized about upright (``cos th = 1``, ``sin th = th``, ``thd^2 = 0``; the thesis chapter
  prints ``2 l / r^2`` for ``2 I / r^2``)::

    r (M + 2m + 2I/r^2) xdd = T - M r l thdd
    (J + M l^2) thdd = M g l th - M l xdd - T

- steering by differential wheel torque: ``deltadd = (T_L - T_R) / (r (m D + I D / r^2 + 2 J_yaw / D))``
  with the yaw ``delta`` of the thesis chapter, positive turning right (clockwise seen from above,
  that is minus MuJoCo's yaw about +z): a stronger left wheel turns right;
- support statics (virtual vertical force and roll torque from the two leg forces):
  ``F_y = P_L + P_R - M g``, ``T_x = (P_L - P_R) D/2``,
  so ``P_{L,R} = (F_y + M g)/2 +- T_x/D`` (printed ``(F_y - M g)/2``).  ``P`` is the
  vertical force a leg pushes the body up with, ``T_x`` the roll torque about
  MuJoCo's +x (forward); a positive ``T_x`` means the left leg pushes harder.

Where the print differs from the corrected form (docs/derivations/errata.md) the function takes
``printed=True`` and returns the printed form, so the errata can be shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crossdyn import renamed

__all__ = [
    "PendulumParams",
    "accelerations",
    "dynamics",
    "linearize_pendulum",
    "wheel_drive_torque",
    "axle_acceleration",
    "yaw_acceleration",
    "yaw_acceleration_from_wheels",
    "leg_forces",
    "virtual_forces",
]


@dataclass(frozen=True)
class PendulumParams:
    """Parameters of the wheeled inverted pendulum (read from the MJCF in experiments/).

    Attributes:
      M: body mass, kg.
      m: mass of one wheel, kg.
      r: wheel radius, m.
      I: one wheel's inertia about its axle, kg m^2.
      J_pitch: body inertia about the pitch axis through its CoM (written J_z in the thesis chapter), kg m^2.
      J_yaw: body inertia about the vertical axis through its CoM (written J_y in the thesis chapter), kg m^2.
      D: track, distance between the wheels, m.
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
    """``(xdd, thdd)`` of the nonlinear model, both equations solved jointly.

    Args:
      p: parameters.
      length: l, the CoM height above the axle, m.
      theta: pitch, rad; theta_dot: pitch rate, rad/s; T: total wheel torque, N m.
        Broadcast together.

    Returns:
      ``(xdd, thdd)``: axle acceleration (m/s^2) and pitch acceleration (rad/s^2).
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
      printed: use the ``2 l / r^2`` the thesis chapter prints in place of ``2 I / r^2``.

    Returns:
      ``A`` (4, 4) and ``B`` (4, 1) for the state ``[x, xd, theta, thd]`` (m, m/s,
      rad, rad/s) and the input ``T = T_L + T_R`` (N m).
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
    """Wheel torque from one wheel's dynamics (rolling without slip), solved for ``T``.

    ``(m + I/r^2) xdd = T/r - N`` (printed: ``m + 1/r^2``, dimensionally wrong).

    Args:
      xdd_wheel: that wheel's axle acceleration, m/s^2.
      N: the horizontal force the wheel pushes the leg forward with, N.

    Returns:
      ``T``, N m.
    """
    inertia = 1.0 if printed else p.I
    return p.r * ((p.m + inertia / p.r**2) * np.asarray(xdd_wheel, dtype=float) + N)


def axle_acceleration(xdd_L, xdd_R, xd_R=None, printed: bool = False):
    """Mean axle acceleration of the two wheels: ``(xdd_L + xdd_R)/2`` (printed: ``(xdd_L + xd_R)/2``).

    Args:
      xdd_L, xdd_R: wheel axle accelerations, m/s^2.
      xd_R: right axle velocity, m/s (needed only for the printed form).
    """
    if printed:
        if xd_R is None:
            raise ValueError("the printed mean acceleration uses the right wheel's velocity: pass xd_R")
        return 0.5 * (np.asarray(xdd_L) + np.asarray(xd_R))
    return 0.5 * (np.asarray(xdd_L) + np.asarray(xdd_R))


def yaw_acceleration(p: PendulumParams, T_L, T_R):
    """Yaw acceleration for wheel torques (sign as in the thesis chapter: positive turns right).

    Returns:
      ``deltadd``, rad/s^2 (minus MuJoCo's yaw acceleration about +z).
    """
    den = p.r * (p.m * p.D + p.I * p.D / p.r**2 + 2 * p.J_yaw / p.D)
    return (np.asarray(T_L, dtype=float) - np.asarray(T_R, dtype=float)) / den


def yaw_acceleration_from_wheels(D: float, xdd_L, xdd_R, xd_L=None, x_R=None, printed: bool = False):
    """Yaw acceleration from the axle motions (sign as in the thesis chapter: positive turns right).

    Corrected: ``(xdd_L - xdd_R)/D``; printed: ``(xd_L - x_R)/D``.

    Args:
      D: track, m.
      xdd_L, xdd_R: axle accelerations along the heading, m/s^2.
      xd_L: left axle velocity, m/s; x_R: right axle position, m (printed form only).
    """
    if printed:
        if xd_L is None or x_R is None:
            raise ValueError("the printed yaw-from-wheels form uses xd_L and x_R: pass both")
        return (np.asarray(xd_L) - np.asarray(x_R)) / D
    return (np.asarray(xdd_L) - np.asarray(xdd_R)) / D


def leg_forces(p: PendulumParams, F_y, T_x, printed: bool = False):
    """Leg forces for a virtual vertical force and roll torque (the inverse of :func:`virtual_forces`).

    Args:
      F_y: virtual vertical force on the body beyond its weight (``M yddot``), N.
      T_x: virtual roll torque about +x (forward), N m.
      printed: the misprinted ``(F_y - M g)/2``.
      Floats give floats (the controller calls this every step), arrays give arrays.

    Returns:
      ``(P_L, P_R)``: vertical force each leg pushes the body up with, N.
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


__getattr__ = renamed(__name__, {"linearize": "linearize_pendulum"}, globals())
