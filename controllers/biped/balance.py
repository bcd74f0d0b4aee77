"""The biped's balance law: the total wheel torque of the wheeled inverted pendulum's LQR.

State ``[x, xd, theta, thetad]`` (m, m/s, rad, rad/s; theta = pitch, positive leaning forward), input the
total wheel torque ``T`` (N m), as in ``analytic.biped.wheeled_pendulum.linearize_pendulum``; the law is
``T = -K (x - x_ref)`` with ``K`` from :mod:`crossdyn.controllers.lqr` (scheduled over leg length).
"""

from __future__ import annotations

from math import isfinite

import numpy as np

__all__ = ["balance_torque", "STATE"]

STATE = ("x", "xd", "theta", "thetad")


def balance_torque(K, state, reference=None, limit: float | None = None) -> float:
    """Total wheel torque ``T = -K (x - x_ref)``, saturated to ``+-limit`` (N m).

    Args:
      K: gain ``(1, 4)`` or its 4 entries (a tuple of floats is the fast path).
      state: ``[x, xd, theta, thetad]``.
      reference: the same, default zero (stand still).
      limit: total torque limit (both wheels), or None.

    Raises:
      ValueError: a non-finite state.
    """
    k0, k1, k2, k3 = np.ravel(K).tolist() if isinstance(K, np.ndarray) else K
    x, xd, theta, thetad = state
    if not (isfinite(x) and isfinite(xd) and isfinite(theta) and isfinite(thetad)):
        raise ValueError(f"balance state must be finite, got {list(state)}")
    if reference is not None:
        x_ref, xd_ref, theta_ref, thetad_ref = reference
        x, xd, theta, thetad = x - x_ref, xd - xd_ref, theta - theta_ref, thetad - thetad_ref
    torque = -float(k0 * x + k1 * xd + k2 * theta + k3 * thetad)
    return torque if limit is None else min(max(torque, -limit), limit)
