"""Cart-pole: a pole on a hinge carried by a cart on a rail, derived by Lagrange.

Coordinates (``mjcf/cart_pole.xml``): ``q = [x, theta]``, the cart's position on
the rail (m, +x) and the pole's angle from the upward vertical (rad, positive
leaning its top towards +x); ``F`` the horizontal force on the cart (N).

The pole's centre of mass is ``lc`` from the hinge, at ``(x + lc sin theta, lc cos theta)``.
With ``m_c`` the cart's mass, ``m_p`` the pole's and ``I`` its inertia about its
centre (about the hinge axis), the kinetic and potential energies are::

    T = 1/2 (m_c + m_p) xd^2 + m_p lc cos(theta) xd thetad + 1/2 (I + m_p lc^2) thetad^2
    V = m_p g lc cos(theta)

and Lagrange's equations ``M(q) qdd + c(q, qd) + g(q) = [F, 0]`` read::

    M(q) = [[m_c + m_p,           m_p lc cos(theta)],
            [m_p lc cos(theta),    I + m_p lc^2     ]]
    c(q, qd) = [-m_p lc sin(theta) thetad^2, 0]
    g(q)     = [0, -m_p g lc sin(theta)]

Upright (``theta = 0``, at rest, ``F = 0``) is an equilibrium; linearized there,
with the state ``[x, theta, xd, thetad]``::

    M0 qdd = [[0, 0], [0, m_p g lc]] q + [1, 0]^T F,    M0 = M(0)

so ``A = [[0, I2], [M0^-1 K, 0]]`` and ``B = [0; M0^-1 e1]`` (:func:`linearize_upright`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CartPoleParams", "mass_matrix", "bias", "forward_dynamics", "linearize_upright"]


@dataclass(frozen=True)
class CartPoleParams:
    """Parameters of the cart-pole (read from the MJCF by ``crossdyn.experiments.cart_pole``).

    Attributes:
      m_cart: cart mass, kg.
      m_pole: pole mass, kg.
      lc: distance from the hinge to the pole's centre of mass, m.
      inertia: the pole's moment of inertia about its centre of mass, about the
        hinge axis, kg m^2.
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
