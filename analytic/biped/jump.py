"""Jump, leg-extension phase of the biped (docs/derivations/biped-model.md).

The body (mass ``M``, a point on massless five-bar legs) is pushed up by four hip motors of torque ``tau``
with the wheels on the ground: ``(1/4) M y1 (y2 alphad^2 + y1 alphadd + g) = tau`` with the five-bar's
``y(alpha)``, and the body rises at ``yd = y1 alphad``, from rest at ``alpha0`` to take-off at ``alpha1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .five_bar import check_alpha, height_derivatives

__all__ = ["Stroke", "extension_stroke", "alpha_acceleration"]


@dataclass(frozen=True)
class Stroke:
    """Solution of the extension phase, each ``(n,)`` from rest to take-off: time ``t`` (s), hip angle
    ``alpha`` (rad) and rate ``alpha_dot`` (rad/s), ``height`` ``y(alpha)`` (m), ``body_velocity`` (m/s);
    ``g`` the gravity used, m/s^2."""

    t: np.ndarray
    alpha: np.ndarray
    alpha_dot: np.ndarray
    height: np.ndarray
    body_velocity: np.ndarray
    g: float

    @property
    def takeoff_velocity(self) -> float:
        """Body velocity at full extension, m/s."""
        return float(self.body_velocity[-1])

    @property
    def duration(self) -> float:
        """Time from rest to take-off, s."""
        return float(self.t[-1])

    @property
    def stroke_height(self) -> float:
        """Leg stroke ``h1 = y(alpha1) - y(alpha0)``, m."""
        return float(self.height[-1] - self.height[0])

    @property
    def ballistic_rise(self) -> float:
        """Rise of the body after take-off if nothing else acts, ``v^2 / (2 g)``, m."""
        return self.takeoff_velocity**2 / (2 * self.g)

    def requirement(self, retraction_time: float) -> float:
        """Take-off speed the hand model requires, ``g t``, for a leg retraction time ``t`` (s), m/s."""
        return self.g * retraction_time

    def apex_height(self, retraction_time: float) -> float:
        """Apex as the hand model estimates it, ``h_max = h1 + h2`` with ``h2 = g t^2 / 2``, m."""
        return self.stroke_height + 0.5 * self.g * retraction_time**2


def alpha_acceleration(alpha, alpha_dot, M: float, tau: float, l1: float, l2: float, l3: float, g: float = 9.81):
    """``alphadd`` of the extension phase, rad/s^2 (``alpha`` in rad, ``alpha_dot`` rad/s, ``tau`` N m per motor)."""
    _, y1, y2 = height_derivatives(alpha, l1, l2, l3)
    return (4.0 * tau / (M * y1) - g - y2 * np.asarray(alpha_dot) ** 2) / y1


def extension_stroke(
    M: float,
    tau: float,
    l1: float,
    l2: float,
    l3: float,
    alpha0: float,
    alpha1: float,
    g: float = 9.81,
    max_time: float = 2.0,
) -> Stroke:
    """Integrate the extension-phase equation from rest at ``alpha0`` until ``alpha`` reaches ``alpha1``.

    Args:
      M: body mass, kg.
      tau: torque of each of the four hip motors, N m.
      l1, l2, l3: five-bar link lengths, m.
      alpha0, alpha1: start and take-off hip angles, rad, ``alpha0 < alpha1``, both reachable.
      g: gravity, m/s^2; max_time: give up after this long, s.

    Returns:
      A :class:`Stroke` at the solver's steps and the take-off event.

    Raises:
      ValueError: bad lengths, angles or mass, motors that cannot lift the body at ``alpha0``
        (``4 tau <= M g y1``), or a stroke that does not finish within ``max_time``.
    """
    _check_stroke(M, tau, l1, l2, l3, alpha0, alpha1, g)

    def rhs(_t, s):
        # Clip alpha into range: the solver may probe just past alpha1 before the event.
        a = min(max(s[0], alpha0), alpha1)
        return [s[1], float(alpha_acceleration(a, s[1], M, tau, l1, l2, l3, g))]

    from scipy.integrate import solve_ivp  # here: importing SciPy's integrate is slow

    sol = solve_ivp(rhs, (0.0, max_time), [alpha0, 0.0], events=_Reached(alpha1), rtol=1e-10, atol=1e-12,
                    max_step=1e-3)
    if sol.status != 1:
        raise ValueError(
            f"extension_stroke: alpha did not reach {np.degrees(alpha1):.2f} deg within {max_time} s "
            f"(stalled at {np.degrees(sol.y[0, -1]):.2f} deg); more torque or a shorter stroke"
        )
    # With a terminal event, solve_ivp ends its output at the event itself.
    t, alpha, alpha_dot = sol.t, sol.y[0].copy(), sol.y[1]
    alpha[-1] = alpha1  # the event root is found to ~1e-12 rad; pin it exactly
    y, y1, _ = height_derivatives(np.clip(alpha, alpha0, alpha1), l1, l2, l3)
    return Stroke(t=t, alpha=alpha, alpha_dot=alpha_dot, height=y, body_velocity=y1 * alpha_dot, g=g)


class _Reached:
    """``solve_ivp``'s terminal event, ``alpha`` rising through ``alpha1`` (a class: its attributes declared)."""

    terminal = True
    direction = 1.0

    def __init__(self, alpha1: float):
        self.alpha1 = alpha1

    def __call__(self, _t: float, s) -> float:
        return s[0] - self.alpha1


def _check_stroke(M: float, tau: float, l1: float, l2: float, l3: float, alpha0: float, alpha1: float,
                  g: float) -> None:
    """Raise ValueError unless the stroke can start: see :func:`extension_stroke`."""
    if not (np.isfinite(M) and M > 0):
        raise ValueError(f"extension_stroke: body mass M={M!r} must be positive (kg)")
    if not np.isfinite(tau):
        raise ValueError(f"extension_stroke: tau={tau!r} must be finite (N m)")
    check_alpha(np.array([alpha0, alpha1]), l1, l2, l3)
    if not alpha1 > alpha0:
        raise ValueError(
            f"extension_stroke: alpha1={np.degrees(alpha1):.2f} deg must exceed alpha0={np.degrees(alpha0):.2f} deg"
        )
    _, y1_start, _ = height_derivatives(alpha0, l1, l2, l3)
    if 4.0 * tau <= M * g * y1_start:
        raise ValueError(
            f"extension_stroke: four motors at tau={tau:g} N m cannot lift M={M:g} kg at "
            f"alpha0={np.degrees(alpha0):.2f} deg (need tau > M g y1 / 4 = {M * g * y1_start / 4:.3f} N m)"
        )
