"""Five-bar leg of the wheel-legged biped: height, hip torque, axle and Jacobian (docs/derivations/biped-model.md).

The two hip motors sit ``l1`` either side of the leg's centre line, thighs ``l2`` and shanks ``l3`` meet at the
axle.  ``alpha`` is the thigh angle from the inward horizontal, upward positive, rad; symmetric, the body sits
``y(alpha) = sqrt(l3^2 - a^2) - l2 sin(alpha)`` above the axle with the knee ``a = l1 - l2 cos(alpha)`` out,
and virtual work gives each motor ``tau = (P / 2) dy/dalpha`` for a leg force ``P`` pushing the body up.
With the motors at different angles the axle is the lower intersection of the shanks' circles about the knees.
"""

from __future__ import annotations

import numpy as np

__all__ = ["REACHABLE", "STROKE", "height", "height_derivatives", "hip_torque", "check_alpha", "axle_position",
           "axle_jacobian"]

# The working range of alpha (rad): thigh straight outward to straight down (beyond, the leg folds through itself).
REACHABLE = (np.pi, 1.5 * np.pi)
STROKE = (np.radians(190.0), np.radians(250.0))  # the default extension stroke: crouched, extended


def check_alpha(alpha, l1: float, l2: float, l3: float) -> np.ndarray:
    """Validate ``alpha`` and the link lengths; return ``alpha`` as an array.

    Raises:
      ValueError: a bad length, a non-finite alpha, alpha outside :data:`REACHABLE`, or a pose where the
        five-bar cannot close (``|l1 - l2 cos(alpha)| >= l3``); the message names the offending alpha.
    """
    for name, value in (("l1", l1), ("l2", l2), ("l3", l3)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"five-bar: link length {name}={value!r} must be a positive finite number (m)")
    alpha = np.asarray(alpha, dtype=float)
    if not np.all(np.isfinite(alpha)):
        raise ValueError("five-bar: alpha has a non-finite entry")
    low, high = REACHABLE
    outside = (alpha < low - 1e-12) | (alpha > high + 1e-12)
    if np.any(outside):
        bad = float(np.asarray(alpha)[outside].flat[0])
        raise ValueError(
            f"five-bar: alpha={np.degrees(bad):.3f} deg is outside the reachable range "
            f"[{np.degrees(low):.0f}, {np.degrees(high):.0f}] deg (thigh angle from the inward horizontal)"
        )
    reach = np.abs(l1 - l2 * np.cos(alpha))
    open_ = reach >= l3
    if np.any(open_):
        k = np.flatnonzero(np.ravel(open_))[0]
        raise ValueError(
            f"five-bar cannot close at alpha={np.degrees(np.ravel(alpha)[k]):.3f} deg: the knee is "
            f"{np.ravel(reach)[k]:.4f} m from the centre line but the shank l3={l3:.4f} m; "
            "use a longer shank or a smaller stroke"
        )
    return alpha


def height(alpha, l1: float, l2: float, l3: float) -> np.ndarray:
    """Body (hip-motor line) height ``y(alpha)`` above the axle, m, shaped like ``alpha`` (rad, any shape), for
    half motor spacing ``l1``, thigh ``l2`` and shank ``l3`` (m); a ValueError as :func:`check_alpha`."""
    return height_derivatives(alpha, l1, l2, l3)[0]


def height_derivatives(alpha, l1: float, l2: float, l3: float,
                       validate: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``y(alpha)`` and its first two derivatives in ``alpha``.

    Args:
      alpha: thigh angle(s), any shape, rad.
      l1, l2, l3: link lengths, m.
      validate: check ``alpha`` and the lengths (:func:`check_alpha`); a caller that validated the whole
        reachable range once and keeps ``alpha`` inside it may skip it.

    Returns:
      ``(y, y1, y2)``: height (m), ``dy/dalpha`` (m/rad), ``d2y/dalpha2`` (m/rad^2),
      each shaped like ``alpha``.

    Raises:
      ValueError: see :func:`check_alpha`.
    """
    alpha = check_alpha(alpha, l1, l2, l3) if validate else np.asarray(alpha, dtype=float)
    c, s = np.cos(alpha), np.sin(alpha)
    a = l1 - l2 * c  # knee's distance from the centre line
    a1 = l2 * s  # da/dalpha
    a2 = l2 * c  # d2a/dalpha2
    root = np.sqrt(l3**2 - a**2)  # axle's depth below the knee
    y = root - l2 * s
    y1 = -a * a1 / root - l2 * c
    y2 = -(a1**2 + a * a2) / root - (a * a1) ** 2 / root**3 + l2 * s
    return y, y1, y2


def hip_torque(alpha, force, l1: float, l2: float, l3: float) -> np.ndarray:
    """Torque of each hip motor (N m, positive extending the leg) holding the vertical leg force ``force``
    (N, upward on the body, broadcast against ``alpha``), by virtual work: ``tau = (P / 2) y1``."""
    _, y1, _ = height_derivatives(alpha, l1, l2, l3)
    return 0.5 * np.asarray(force, dtype=float) * y1


def _knees(alpha_front, alpha_rear, l1: float, l2: float):
    af, ar = np.asarray(alpha_front, dtype=float), np.asarray(alpha_rear, dtype=float)
    front = np.stack([l1 - l2 * np.cos(af), l2 * np.sin(af)], axis=-1)
    rear = np.stack([-l1 + l2 * np.cos(ar), l2 * np.sin(ar)], axis=-1)
    d_front = np.stack([l2 * np.sin(af), l2 * np.cos(af)], axis=-1)  # dK_f / d alpha_f
    d_rear = np.stack([-l2 * np.sin(ar), l2 * np.cos(ar)], axis=-1)  # dK_r / d alpha_r
    return front, rear, d_front, d_rear


def axle_position(alpha_front, alpha_rear, l1: float, l2: float, l3: float) -> np.ndarray:
    """The axle in the leg's plane from the motors' midpoint, ``(..., 2)`` = (x forward, z up), m, for the
    two thigh angles (rad, broadcast).

    Raises:
      ValueError: the knees are more than ``2 l3`` apart (the loop cannot close).
    """
    front, rear, _, _ = _knees(alpha_front, alpha_rear, l1, l2)
    between = front - rear
    span = np.linalg.norm(between, axis=-1)
    if np.any(span >= 2 * l3):
        raise ValueError(f"five-bar cannot close: the knees are {float(np.max(span)):.4f} m apart, more than "
                         f"2 l3 = {2 * l3:.4f} m")
    u = between / span[..., None]
    down = np.stack([u[..., 1], -u[..., 0]], axis=-1)  # perpendicular to the knee line, pointing down
    return 0.5 * (front + rear) + np.sqrt(l3**2 - 0.25 * span**2)[..., None] * down


def axle_jacobian(alpha_front, alpha_rear, l1: float, l2: float, l3: float) -> np.ndarray:
    """``d axle / d (alpha_front, alpha_rear)``: ``(..., 2, 2)``, rows (x, z), columns (front, rear), m/rad."""
    front, rear, d_front, d_rear = _knees(alpha_front, alpha_rear, l1, l2)
    A = axle_position(alpha_front, alpha_rear, l1, l2, l3)
    E = np.stack([A - front, A - rear], axis=-2)  # rows (A - K)^T
    rhs = np.zeros(E.shape)
    rhs[..., 0, 0] = np.einsum("...i,...i->...", A - front, d_front)
    rhs[..., 1, 1] = np.einsum("...i,...i->...", A - rear, d_rear)
    return np.linalg.solve(E, rhs)
