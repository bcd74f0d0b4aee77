"""Two-link planar arm: hand derivations of the inverse dynamics (docs/derivations/two-link.md).

The arm moves in the x-y plane, joint axes +z, gravity along -y; ``q[..., 0]`` is link 1's angle from the
downward vertical (counter-clockwise), ``q[..., 1]`` link 2's relative to link 1, so ``q = 0`` hangs down.
Each of :data:`VARIANTS` is ``tau = f(params, q, qd, qdd)`` on ``(..., 2)`` arrays (rad, rad/s, rad/s^2)
returning torques ``(..., 2)`` in N m: the Lagrange closed form, two printed errata of a robotics lecture, the
point-mass arm of a textbook and a Newton-Euler recursion (not a restatement of the closed form, so agreement is
evidence).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["TwoLinkParams", "lagrange", "lecture_no_link_inertia", "lecture_matrix_form", "point_mass",
           "newton_euler", "mass_matrix", "tip_pose", "tip_jacobian", "energy", "forward_dynamics",
           "linearize_hanging", "VARIANTS"]


@dataclass(frozen=True)
class TwoLinkParams:
    """Physical parameters of a planar two-link arm (SI units).

    Attributes:
      l1, l2: link lengths, m (joint-to-joint for link 1, joint-to-tip for link 2).
      m1, m2: link masses, kg.
      p1, p2: distance of each link's CoM from its own joint, along the link, m.
      i1, i2: each link's rotational inertia about the joint axis (z) through its
        CoM, kg m^2.
      g: magnitude of gravity (acting along -y), m/s^2.
    """

    l1: float
    l2: float
    m1: float
    m2: float
    p1: float
    p2: float
    i1: float
    i2: float
    g: float = 9.81


def _split(q, qd, qdd):
    q, qd, qdd = (np.asarray(a, dtype=float) for a in (q, qd, qdd))
    for name, a in (("q", q), ("qd", qd), ("qdd", qdd)):
        if a.shape[-1:] != (2,):
            raise ValueError(f"{name} must have shape (..., 2) for a two-link arm, got {a.shape}")
    return q, qd, qdd


def _closed_form(m1, m2, l1, p1, p2, i1, i2, g, q, qd, qdd):
    """The closed form with the given (possibly modified) parameters."""
    q1, q2 = q[..., 0], q[..., 1]
    qd1, qd2 = qd[..., 0], qd[..., 1]
    qdd1, qdd2 = qdd[..., 0], qdd[..., 1]
    c2, s2 = np.cos(q2), np.sin(q2)
    s1, s12 = np.sin(q1), np.sin(q1 + q2)
    h = m2 * l1 * p2 * s2
    d11 = m1 * p1**2 + i1 + m2 * (l1**2 + p2**2 + 2 * l1 * p2 * c2) + i2
    d12 = m2 * (p2**2 + l1 * p2 * c2) + i2
    d22 = m2 * p2**2 + i2
    tau1 = (
        d11 * qdd1
        + d12 * qdd2
        - 2 * h * qd1 * qd2
        - h * qd2**2
        + (m1 * p1 + m2 * l1) * g * s1
        + m2 * g * p2 * s12
    )
    tau2 = d12 * qdd1 + d22 * qdd2 + h * qd1**2 + m2 * g * p2 * s12
    return np.stack([tau1, tau2], axis=-1)


def lagrange(params: TwoLinkParams, q, qd, qdd) -> np.ndarray:
    """Lagrange closed form: tau = D(q) qdd + velocity terms + gravity (D-coefficients of a lecture + link inertias).

    Args:
      params: the arm's parameters.
      q, qd, qdd: joint angles, rates and accelerations, each ``(..., 2)``.

    Returns:
      Joint torques, ``(..., 2)``, N m.
    """
    q, qd, qdd = _split(q, qd, qdd)
    p = params
    return _closed_form(p.m1, p.m2, p.l1, p.p1, p.p2, p.i1, p.i2, p.g, q, qd, qdd)


def lecture_no_link_inertia(params: TwoLinkParams, q, qd, qdd) -> np.ndarray:
    """The D-coefficients as the lecture prints them: :func:`lagrange` with ``i1 = i2 = 0``, so the mass
    matrix is short by ``[[I1 + I2, I2], [I2, I2]]`` and every other term is right (docs/derivations/errata.md).
    """
    q, qd, qdd = _split(q, qd, qdd)
    p = params
    return _closed_form(p.m1, p.m2, p.l1, p.p1, p.p2, 0.0, 0.0, p.g, q, qd, qdd)


def lecture_matrix_form(params: TwoLinkParams, q, qd, qdd) -> np.ndarray:
    """The matrix form as the lecture prints it, term by term (link inertias included).

    ``tau = D qdd + [[D111, D122], [D212, D221]] [qd1^2, qd2^2] + [[D112, D121], [D212, D221]] [qd1 qd2,
    qd2 qd1] + [D1, D2]`` with D112 = -2h, D122 = -h, D212 = -h + h = 0 and D111, D121, D221 undefined (0):
    joint 2 misses ``D211 qd1^2 = h qd1^2`` (docs/derivations/errata.md).
    """
    q, qd, qdd = _split(q, qd, qdd)
    p = params
    h = p.m2 * p.l1 * p.p2 * np.sin(q[..., 1])
    d111 = d121 = d221 = np.zeros_like(h)
    d112, d122, d212 = -2 * h, -h, -h + h
    qd1, qd2 = qd[..., 0], qd[..., 1]
    centrifugal = np.stack([d111 * qd1**2 + d122 * qd2**2, d212 * qd1**2 + d221 * qd2**2], axis=-1)
    coriolis = np.stack([d112 * qd1 * qd2 + d121 * qd2 * qd1, d212 * qd1 * qd2 + d221 * qd2 * qd1], axis=-1)
    no_velocity = _closed_form(p.m1, p.m2, p.l1, p.p1, p.p2, p.i1, p.i2, p.g, q, np.zeros_like(qd), qdd)
    return no_velocity + centrifugal + coriolis


def point_mass(params: TwoLinkParams, q, qd, qdd) -> np.ndarray:
    """The textbook: each link's mass at its tip (p_i = l_i, I_i = 0; ``params.p*``, ``params.i*`` ignored)."""
    q, qd, qdd = _split(q, qd, qdd)
    p = params
    return _closed_form(p.m1, p.m2, p.l1, p.l1, p.l2, 0.0, 0.0, p.g, q, qd, qdd)


def _rot_z(theta: np.ndarray) -> np.ndarray:
    """Rotation matrices about z, ``(..., 3, 3)``."""
    c, s = np.cos(theta), np.sin(theta)
    zero, one = np.zeros_like(theta), np.ones_like(theta)
    return np.stack(
        [np.stack([c, -s, zero], -1), np.stack([s, c, zero], -1), np.stack([zero, zero, one], -1)],
        axis=-2,
    )


def _rot_x(alpha: float) -> np.ndarray:
    c, s = np.cos(alpha), np.sin(alpha)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _mv(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Batched matrix-vector product ``R @ v`` for ``(..., 3, 3)``, ``(..., 3)``."""
    return (R @ v[..., None])[..., 0]


def _mtv(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Batched ``R.T @ v``."""
    return (v[..., None, :] @ R)[..., 0, :]


def newton_euler(params: TwoLinkParams, q, qd, qdd) -> np.ndarray:
    """Recursive Newton-Euler in link frames with Craig's modified DH parameters, as an article on the arm
    derives it (outward and inward passes in docs/derivations/two-link.md).

    The DH table is ``[(0, 0, 0, q1 - pi/2), (0, l1, 0, q2)]`` (the article measures the first angle from
    +x); gravity is a base acceleration ``+g y``; each link's inertia is ``diag(0, 0, i_k)``, the only
    entry planar motion sees.
    """
    q, qd, qdd = _split(q, qd, qdd)
    batch = np.broadcast_shapes(q.shape, qd.shape, qdd.shape)[:-1]
    q, qd, qdd = (np.broadcast_to(a, batch + (2,)) for a in (q, qd, qdd))
    R, r = _dh_frames(params.l1, q, batch)
    ws, dws, acs = _outward_pass(params, R, r, qd, qdd, batch)
    return _inward_pass(params, R, r, ws, dws, acs, batch)


def _link_inertials(p: TwoLinkParams) -> tuple[list, list, list]:
    """Both links' masses (kg), CoMs in their link frames (m) and inertias about the CoMs (kg m^2)."""
    masses = [p.m1, p.m2]
    coms = [np.array([p.p1, 0.0, 0.0]), np.array([p.p2, 0.0, 0.0])]
    inertias = [np.diag([0.0, 0.0, p.i1]), np.diag([0.0, 0.0, p.i2])]
    return masses, coms, inertias


def _dh_frames(l1: float, q: np.ndarray, batch: tuple) -> tuple[list, list]:
    """Per link, ``R_i`` (frame i in frame i-1, ``(..., 3, 3)``) and ``r_i`` (its origin there, ``(..., 3)``, m)."""
    # Modified DH table: (alpha_{i-1}, a_{i-1}, d_i, theta offset); theta_i = q_i + offset.
    dh = [(0.0, 0.0, 0.0, -np.pi / 2), (0.0, l1, 0.0, 0.0)]
    R, r = [], []
    for i, (alpha, a, d, offset) in enumerate(dh):
        R.append(_rot_x(alpha) @ _rot_z(q[..., i] + offset))
        r.append(np.broadcast_to(_rot_x(alpha) @ np.array([a, 0.0, 0.0]) + np.array([0, 0, d]), batch + (3,)))
    return R, r


def _outward_pass(p: TwoLinkParams, R: list, r: list, qd: np.ndarray, qdd: np.ndarray,
                  batch: tuple) -> tuple[list, list, list]:
    """Each link's ``w_i`` (rad/s), ``dw_i`` (rad/s^2) and CoM acceleration ``ac_i`` (m/s^2), in its own frame."""
    _, coms, _ = _link_inertials(p)
    z = np.array([0.0, 0.0, 1.0])
    acc = np.broadcast_to(np.array([0.0, p.g, 0.0]), batch + (3,))  # gravity as a base acceleration
    w = np.zeros(batch + (3,))
    dw = np.zeros(batch + (3,))
    ws, dws, acs = [], [], []
    for i in range(2):
        Ri, ri = R[i], r[i]
        a_i = _mtv(Ri, acc + np.cross(dw, ri) + np.cross(w, np.cross(w, ri)))
        w_prev_i = _mtv(Ri, w)
        w = w_prev_i + qd[..., i, None] * z
        dw = _mtv(Ri, dw) + np.cross(w_prev_i, qd[..., i, None] * z) + qdd[..., i, None] * z
        acc = a_i
        ac = a_i + np.cross(dw, coms[i]) + np.cross(w, np.cross(w, coms[i]))
        ws.append(w)
        dws.append(dw)
        acs.append(ac)
    return ws, dws, acs


def _inward_pass(p: TwoLinkParams, R: list, r: list, ws: list, dws: list, acs: list, batch: tuple) -> np.ndarray:
    """Joint torques ``(..., 2)``, N m, from the links' forces and moments, tip to base."""
    masses, coms, inertias = _link_inertials(p)
    z = np.array([0.0, 0.0, 1.0])
    # Frame n+1 (the tip) has no load.
    f_next = np.zeros(batch + (3,))
    n_next = np.zeros(batch + (3,))
    R_next = np.broadcast_to(np.eye(3), batch + (3, 3))
    r_next = np.zeros(batch + (3,))
    tau = np.zeros(batch + (2,))
    for i in (1, 0):
        force_in = _mv(R_next, f_next)
        inertial_force = masses[i] * acs[i]
        f_i = force_in + inertial_force
        n_i = (
            _mv(np.broadcast_to(inertias[i], batch + (3, 3)), dws[i])
            + np.cross(ws[i], _mv(np.broadcast_to(inertias[i], batch + (3, 3)), ws[i]))
            + _mv(R_next, n_next)
            + np.cross(coms[i], inertial_force)
            + np.cross(r_next, force_in)
        )
        tau[..., i] = n_i @ z
        f_next, n_next, R_next, r_next = f_i, n_i, R[i], r[i]
    return tau


def mass_matrix(params: TwoLinkParams, q) -> np.ndarray:
    """Closed-form mass matrix D(q) of docs/derivations/two-link.md, ``(..., 2, 2)`` in kg m^2."""
    q = np.asarray(q, dtype=float)
    p = params
    c2 = np.cos(q[..., 1])
    d11 = p.m1 * p.p1**2 + p.i1 + p.m2 * (p.l1**2 + p.p2**2 + 2 * p.l1 * p.p2 * c2) + p.i2
    d12 = p.m2 * (p.p2**2 + p.l1 * p.p2 * c2) + p.i2
    d22 = np.broadcast_to(p.m2 * p.p2**2 + p.i2, d11.shape)
    return np.stack([np.stack([d11, d12], -1), np.stack([d12, d22], -1)], -2)


def tip_pose(params: TwoLinkParams, q) -> tuple[np.ndarray, np.ndarray]:
    """World position of link 2's tip and the orientation of link 2's frame (x along the link).

    ``x = l1 sin q1 + l2 sin(q1 + q2)``, ``y = -l1 cos q1 - l2 cos(q1 + q2)`` (the arm
    hangs along -y at ``q = 0``); the frame is turned ``q1 + q2 - 90 deg`` about z.

    Returns:
      ``position (..., 3)`` m and ``rotation (..., 3, 3)`` (the frame's axes as columns).
    """
    q = np.asarray(q, dtype=float)
    q1, q12 = q[..., 0], q[..., 0] + q[..., 1]
    zero = np.zeros_like(q1)
    position = np.stack([params.l1 * np.sin(q1) + params.l2 * np.sin(q12),
                         -params.l1 * np.cos(q1) - params.l2 * np.cos(q12), zero], axis=-1)
    s, c = np.sin(q12), np.cos(q12)  # x axis (s, -c, 0), y axis (c, s, 0), z axis (0, 0, 1)
    rotation = np.stack([np.stack([s, c, zero], -1), np.stack([-c, s, zero], -1),
                         np.stack([zero, zero, np.ones_like(q1)], -1)], -2)
    return position, rotation


def tip_jacobian(params: TwoLinkParams, q) -> np.ndarray:
    """World-aligned Jacobian of the tip, ``(..., 6, 2)``: linear rows ``d tip / d q``, angular rows ``e_z``."""
    q = np.asarray(q, dtype=float)
    q1, q12 = q[..., 0], q[..., 0] + q[..., 1]
    J = np.zeros(q.shape[:-1] + (6, 2))
    J[..., 0, 0] = params.l1 * np.cos(q1) + params.l2 * np.cos(q12)
    J[..., 0, 1] = params.l2 * np.cos(q12)
    J[..., 1, 0] = params.l1 * np.sin(q1) + params.l2 * np.sin(q12)
    J[..., 1, 1] = params.l2 * np.sin(q12)
    J[..., 5, :] = 1.0
    return J


def energy(params: TwoLinkParams, q, qd) -> tuple[np.ndarray, np.ndarray]:
    """Kinetic ``1/2 qd^T D(q) qd`` and potential ``-(m1 p1 + m2 l1) g cos q1 - m2 p2 g cos(q1 + q2)``, J.

    The potential's zero is the joints' height (MuJoCo's too: the world origin).
    """
    qd = np.asarray(qd, dtype=float)
    q = np.asarray(q, dtype=float)
    p = params
    T = 0.5 * np.einsum("...i,...ij,...j->...", qd, mass_matrix(p, q), qd)
    U = -(p.m1 * p.p1 + p.m2 * p.l1) * p.g * np.cos(q[..., 0]) - p.m2 * p.p2 * p.g * np.cos(q[..., 0] + q[..., 1])
    return T, U


def forward_dynamics(params: TwoLinkParams, q, qd, tau) -> np.ndarray:
    """``qdd = D(q)^-1 (tau - c(q, qd) - g(q))`` from the Lagrange closed form, ``(..., 2)``."""
    q, qd, tau = (np.asarray(a, dtype=float) for a in (q, qd, tau))
    bias = lagrange(params, q, qd, np.zeros_like(qd))
    return np.linalg.solve(mass_matrix(params, q), (tau - bias)[..., None])[..., 0]


def linearize_hanging(params: TwoLinkParams) -> tuple[np.ndarray, np.ndarray]:
    """Continuous-time ``(A, B)`` about the hanging rest ``q = qd = 0``, torques as inputs.

    ``D(0) dqdd = -G dq + du`` with ``G = dg/dq (0) = [[(m1 p1 + m2 l1) g + m2 p2 g, m2 p2 g],
    [m2 p2 g, m2 p2 g]]``; state ``[q1, q2, qd1, qd2]``.
    """
    p = params
    b = p.m2 * p.p2 * p.g
    G = np.array([[(p.m1 * p.p1 + p.m2 * p.l1) * p.g + b, b], [b, b]])
    D_inv = np.linalg.inv(mass_matrix(p, np.zeros(2)))
    A = np.zeros((4, 4))
    A[:2, 2:] = np.eye(2)
    A[2:, :2] = -D_inv @ G
    B = np.zeros((4, 2))
    B[2:] = D_inv
    return A, B


InverseDynamics = Callable[[TwoLinkParams, np.ndarray, np.ndarray, np.ndarray], np.ndarray]

VARIANTS: dict[str, InverseDynamics] = {
    "lagrange": lagrange,
    "lecture-no-link-inertia": lecture_no_link_inertia,
    "lecture-matrix-form": lecture_matrix_form,
    "point-mass": point_mass,
    "newton-euler": newton_euler,
}
