"""Kinematics, Jacobians, mass matrix and energies of a kinematic tree, from RNEA's outward pass.

The tree and the coordinates are those of :mod:`crossdyn.analytic.rnea` (MuJoCo's
layout).  Every quantity here is built from :func:`~crossdyn.analytic.rnea.forward_pass`,
which gives each body's pose and each joint's motion vectors ``s = [p x a; a]``
(world frame, about the world origin):

- the world-aligned Jacobian of a point ``x`` fixed in body ``b``: each joint on
  the path from the world to ``b`` moves it with ``v_x = s_lin + s_ang x x``, so its
  column is ``[s_lin + s_ang x x; s_ang]`` (linear rows, then angular);
- the mass matrix by composite rigid bodies through the CoM Jacobians,
  ``M = sum_b m_b Jv_b^T Jv_b + Jw_b^T I_b Jw_b`` (``I_b`` world-frame, about the CoM);
- kinetic energy ``T = 1/2 qd^T M qd`` and gravitational potential
  ``U = -sum_b m_b g . c_b`` (zero with every CoM at the world origin's height,
  MuJoCo's zero).

NumPy only; the tree's numbers come from the compiled model through
``experiments.core.derivation.tree_from_model``.
"""

from __future__ import annotations

import numpy as np

from crossdyn.analytic.rnea import Tree, _check_state, _cross, _times_const, forward_pass

__all__ = ["poses", "point_jacobian", "mass_matrix", "energy"]


def _positions(tree: Tree, qpos) -> tuple[tuple[int, ...], np.ndarray]:
    qpos = np.asarray(qpos, dtype=float)
    zeros = np.zeros(qpos.shape[:-1] + (tree.nv,))
    batch, (q, _, _) = _check_state(tree, qpos, zeros, zeros)
    return batch, q


def poses(tree: Tree, qpos) -> tuple[np.ndarray, np.ndarray]:
    """Every body's orientation and origin in the world.

    Args:
      tree: the kinematic tree.
      qpos: positions, ``(..., nq)``.

    Returns:
      ``R (..., nb, 3, 3)`` (body axes as columns) and ``p (..., nb, 3)`` m.
    """
    batch, q = _positions(tree, qpos)
    n, nb = q.shape[0], len(tree.parent)
    motion = forward_pass(tree, q, np.zeros((n, tree.nv)), np.zeros((n, tree.nv)), np.zeros(3))
    R = np.moveaxis(motion.R, 0, 1).reshape(batch + (nb, 3, 3))
    p = np.moveaxis(motion.p, 0, 1).reshape(batch + (nb, 3))
    return R, p


def _path(tree: Tree, body: int) -> set[int]:
    """The body and its ancestors."""
    chain = set()
    while body >= 0:
        chain.add(body)
        body = int(tree.parent[body])
    return chain


def _jacobian(tree: Tree, motion, body: int, x: np.ndarray) -> np.ndarray:
    """World-aligned ``(N, 6, nv)`` Jacobian of the world points ``x (N, 3)`` moving with ``body``."""
    n = x.shape[0]
    J = np.zeros((n, 6, tree.nv))
    chain = _path(tree, body)
    for b, da, S in motion.joints:
        if b not in chain:
            continue
        for k in range(S.shape[2]):
            lin, ang = S[:, :3, k], S[:, 3:, k]
            J[:, :3, da + k] = lin + _cross(ang, x)
            J[:, 3:, da + k] = ang
    return J


def point_jacobian(tree: Tree, qpos, body: int, point=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Jacobian of a point fixed in a body, world-aligned: ``[v; w] = J qd``.

    Args:
      tree: the kinematic tree.
      qpos: positions, ``(..., nq)``.
      body: the body's index in the tree (MuJoCo's body id minus one).
      point: the point in the body frame, ``(3,)`` m (default the body origin).

    Returns:
      ``(..., 6, nv)``: rows 0-2 the point's linear velocity, rows 3-5 the body's
      angular velocity, both in world axes, per unit ``qd`` (MuJoCo's ``qvel``).
    """
    batch, q = _positions(tree, qpos)
    n = q.shape[0]
    motion = forward_pass(tree, q, np.zeros((n, tree.nv)), np.zeros((n, tree.nv)), np.zeros(3))
    x = motion.p[body] + _times_const(motion.R[body], np.asarray(point, dtype=float))
    return _jacobian(tree, motion, body, x).reshape(batch + (6, tree.nv))


def mass_matrix(tree: Tree, qpos) -> np.ndarray:
    """Joint-space inertia ``M(q) = sum_b m_b Jv_b^T Jv_b + Jw_b^T I_b Jw_b``, ``(..., nv, nv)``.

    ``Jv_b`` is body ``b``'s CoM Jacobian, ``Jw_b`` its angular one, ``I_b = R I R^T``
    its inertia about the CoM in the world (kg, kg m^2).
    """
    batch, q = _positions(tree, qpos)
    n = q.shape[0]
    motion = forward_pass(tree, q, np.zeros((n, tree.nv)), np.zeros((n, tree.nv)), np.zeros(3))
    M = np.zeros((n, tree.nv, tree.nv))
    for b in range(len(tree.parent)):
        R = motion.R[b]
        J = _jacobian(tree, motion, b, motion.p[b] + _times_const(R, tree.com[b]))
        Jv, Jw = J[:, :3], J[:, 3:]
        body_w = np.einsum("nji,njk->nik", R, Jw)  # angular Jacobian in body axes, R^T Jw
        M += tree.mass[b] * np.einsum("nji,njk->nik", Jv, Jv)
        M += np.einsum("nji,jl,nlk->nik", body_w, tree.inertia[b], body_w)
    return M.reshape(batch + (tree.nv, tree.nv))


def energy(tree: Tree, qpos, qvel, gravity=None) -> tuple[np.ndarray, np.ndarray]:
    """Kinetic and gravitational potential energy, each ``(...)``, J.

    ``T = sum_b 1/2 m_b |v_b|^2 + 1/2 w_b^T I_b w_b`` (``v_b`` the CoM velocity) and
    ``U = -sum_b m_b g . c_b`` (``c_b`` the CoM in the world).

    Args:
      gravity: world gravity ``(3,)`` m/s^2; default ``tree.gravity``.
    """
    qpos, qvel = np.asarray(qpos, dtype=float), np.asarray(qvel, dtype=float)
    batch, (q, qd, _) = _check_state(tree, qpos, qvel, np.zeros(qvel.shape))
    g = tree.gravity if gravity is None else np.asarray(gravity, dtype=float)
    motion = forward_pass(tree, q, qd, np.zeros_like(qd), np.zeros(3))
    T, U = np.zeros(q.shape[0]), np.zeros(q.shape[0])
    for b in range(len(tree.parent)):
        R, xi = motion.R[b], motion.xi[b]
        c = motion.p[b] + _times_const(R, tree.com[b])
        v = xi[:, :3] + _cross(xi[:, 3:], c)  # velocity of the CoM
        w_body = np.einsum("nji,nj->ni", R, xi[:, 3:])
        T += 0.5 * tree.mass[b] * np.einsum("ni,ni->n", v, v) + 0.5 * np.einsum("ni,ij,nj->n", w_body,
                                                                               tree.inertia[b], w_body)
        U -= tree.mass[b] * (c @ g)
    return T.reshape(batch), U.reshape(batch)

