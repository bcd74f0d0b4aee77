"""Cart-pole: a pole on a hinge carried by a cart on a rail, derived by Lagrange (docs/derivations/cart-pole.md).

``q = [x, theta]``: the cart on the rail (m, +x) and the pole's angle from the upward vertical (rad, positive
leaning its top towards +x); ``F`` the horizontal force on the cart (N).  Lagrange's equations read
``M(q) qdd + c(q, qd) + g(q) = [F, 0]`` with ``M = [[m_c + m_p, m_p lc cos], [m_p lc cos, I + m_p lc^2]]``,
``c = [-m_p lc sin(theta) thetad^2, 0]`` and ``g = [0, -m_p g lc sin(theta)]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CartPoleParams", "mass_matrix", "bias", "forward_dynamics", "linearize_upright"]


@dataclass(frozen=True)
class CartPoleParams:
    """Parameters of the cart-pole (read from the MJCF by ``crossdyn.experiments.cart_pole``).

    Attributes:
      m_cart, m_pole: cart and pole masses, kg.
      lc: distance from the hinge to the pole's centre of mass, m.
      inertia: the pole's inertia about its centre of mass, about the hinge axis, kg m^2.
      g: gravity, m/s^2 (positive, acting along -z).
    """

    m_cart: float
    m_pole: float
    lc: float
    inertia: float
    g: float = 9.81


def mass_matrix(p: CartPoleParams, q) -> np.ndarray:
    """``M(q)``, ``(..., 2, 2)`` for ``q`` of shape ``(..., 2)``."""
    q = np.asarray(q, dtype=float)
    coupling = p.m_pole * p.lc * np.cos(q[..., 1])
    M = np.empty(q.shape[:-1] + (2, 2))
    M[..., 0, 0] = p.m_cart + p.m_pole
    M[..., 0, 1] = M[..., 1, 0] = coupling
    M[..., 1, 1] = p.inertia + p.m_pole * p.lc**2
    return M


def bias(p: CartPoleParams, q, qd) -> np.ndarray:
    """``c(q, qd) + g(q)``, the generalized force needed for zero acceleration, ``(..., 2)`` (N, N m)."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    s = np.sin(q[..., 1])
    out = np.empty(np.broadcast_shapes(q.shape, qd.shape))
    out[..., 0] = -p.m_pole * p.lc * s * qd[..., 1] ** 2
    out[..., 1] = -p.m_pole * p.g * p.lc * s
    return out


def forward_dynamics(p: CartPoleParams, q, qd, force) -> np.ndarray:
    """``qdd = M(q)^-1 ([F, 0] - c - g)``, ``(..., 2)``; ``force`` in N, shape ``(...)``."""
    rhs = -bias(p, q, qd)
    rhs[..., 0] += np.asarray(force, dtype=float)
    return np.linalg.solve(mass_matrix(p, q), rhs[..., None])[..., 0]


def linearize_upright(p: CartPoleParams) -> tuple[np.ndarray, np.ndarray]:
    """Continuous-time ``(A (4, 4), B (4, 1))`` about the upright equilibrium.

    State ``[x, theta, xd, thetad]`` (m, rad, m/s, rad/s), input ``F`` (N).
    """
    M0 = mass_matrix(p, np.zeros(2))
    stiffness = np.array([[0.0, 0.0], [0.0, p.m_pole * p.g * p.lc]])  # -dg/dq at theta = 0
    A = np.zeros((4, 4))
    A[:2, 2:] = np.eye(2)
    A[2:, :2] = np.linalg.solve(M0, stiffness)
    B = np.zeros((4, 1))
    B[2:, 0] = np.linalg.solve(M0, [1.0, 0.0])
    return A, B
