"""Kinematics, Jacobians, mass matrix and energies of a kinematic tree, from RNEA's outward pass.

The tree and coordinates are :mod:`crossdyn.analytic.rnea`'s; each joint's motion vectors ``s = [p x a; a]``
(world, about the origin) give the world-aligned Jacobian of a point ``x`` (column ``[s_lin + s_ang x x;
s_ang]``), the mass matrix by composite rigid bodies, ``T = 1/2 qd^T M qd`` and ``U = -sum_b m_b g . c_b``
(MuJoCo's zero).
"""

from __future__ import annotations

import numpy as np

from .rnea import Tree, check_state, cross_rows, forward_pass, mat_vec_rows, times_const

__all__ = ["poses", "point_jacobian", "mass_matrix", "energy"]


def _positions(tree: Tree, qpos) -> tuple[tuple[int, ...], np.ndarray]:
    qpos = np.asarray(qpos, dtype=float)
    zeros = np.zeros(qpos.shape[:-1] + (tree.nv,))
    batch, (q, _, _) = check_state(tree, qpos, zeros, zeros)
    return batch, q


def poses(tree: Tree, qpos) -> tuple[np.ndarray, np.ndarray]:
    """Every body's orientation ``R (..., nb, 3, 3)`` (axes as columns) and origin ``p (..., nb, 3)`` m in the
    world, at positions ``qpos`` ``(..., nq)``."""
    batch, q = _positions(tree, qpos)
    nb = len(tree.parent)
    motion = forward_pass(tree, q, None, None)
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
            J[:, :3, da + k] = lin + cross_rows(ang, x)
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
    motion = forward_pass(tree, q, None, None)
    x = motion.p[body] + times_const(motion.R[body], np.asarray(point, dtype=float))
    return _jacobian(tree, motion, body, x).reshape(batch + (6, tree.nv))


def mass_matrix(tree: Tree, qpos) -> np.ndarray:
    """Joint-space inertia by composite rigid bodies, ``M_ij = s_j^T I^C_b s_i``, ``(..., nv, nv)``.

    ``I^C_b`` is the spatial inertia about the world origin of body ``b`` and its subtree, ``s_i`` a dof of
    ``b`` and ``j`` one of ``b`` or an ancestor.  It is kept as mass ``m``, first moment ``h = m c`` and
    ``I_O = I + m (|c|^2 E - c c^T)`` (the composite's are sums) and applied unformed:
    ``I^S [v; w] = [m v + w x h; h x v + I_O w]``.
    """
    batch, q = _positions(tree, qpos)
    n, nb = q.shape[0], len(tree.parent)
    motion = forward_pass(tree, q, None, None)
    mass = np.array(tree.mass, dtype=float)
    first = np.empty((nb, n, 3))
    rotational = np.empty((nb, n, 3, 3))
    for b in range(nb):
        R = motion.R[b]
        c = motion.p[b] + times_const(R, tree.com[b])
        RI = times_const(R, tree.inertia[b])
        I_O = np.stack([mat_vec_rows(RI, R[:, k, :]) for k in range(3)], axis=2)  # R I R^T, column by column
        h = mass[b] * c
        I_O -= h[:, :, None] * c[:, None, :]
        square = np.einsum("ni,ni->n", h, c)
        for i in range(3):
            I_O[:, i, i] += square
        first[b], rotational[b] = h, I_O
    for b in range(nb - 1, -1, -1):  # leaves inward: each body carries its subtree
        parent = tree.parent[b]
        if parent >= 0:
            mass[parent] += mass[b]
            first[parent] += first[b]
            rotational[parent] += rotational[b]
    dofs = []  # per dof: (body, motion vector (N, 6))
    for b, _, S in motion.joints:
        dofs += [(b, S[:, :, k]) for k in range(S.shape[2])]
    ancestors = [_path(tree, b) for b in range(nb)]
    M = np.zeros((n, tree.nv, tree.nv))
    for i, (b, s_i) in enumerate(dofs):
        v, w, h = s_i[:, :3], s_i[:, 3:], first[b]
        force = np.concatenate([mass[b] * v + cross_rows(w, h), cross_rows(h, v) + mat_vec_rows(rotational[b], w)],
                               axis=1)
        coupled = [j for j in range(i + 1) if dofs[j][0] in ancestors[b]]
        column = np.einsum("nji,nj->ni", np.stack([dofs[j][1] for j in coupled], axis=2), force)
        M[:, i, coupled] = column
        M[:, coupled, i] = column
    return M.reshape(batch + (tree.nv, tree.nv))


def energy(tree: Tree, qpos, qvel, gravity=None) -> tuple[np.ndarray, np.ndarray]:
    """Kinetic and gravitational potential energy, each ``(...)``, J.

    ``T = sum_b 1/2 m_b |v_b|^2 + 1/2 w_b^T I_b w_b`` (``v_b`` the CoM velocity) and
    ``U = -sum_b m_b g . c_b`` (``c_b`` the CoM in the world).

    Args:
      gravity: world gravity ``(3,)`` m/s^2; default ``tree.gravity``.
    """
    qpos, qvel = np.asarray(qpos, dtype=float), np.asarray(qvel, dtype=float)
    batch, (q, qd, _) = check_state(tree, qpos, qvel, np.zeros(qvel.shape))
    g = tree.gravity if gravity is None else np.asarray(gravity, dtype=float)
    motion = forward_pass(tree, q, qd, np.zeros_like(qd), np.zeros(3))
    assert motion.xi is not None  # velocities were given
    T, U = np.zeros(q.shape[0]), np.zeros(q.shape[0])
    for b in range(len(tree.parent)):
        R, xi = motion.R[b], motion.xi[b]
        c = motion.p[b] + times_const(R, tree.com[b])
        v = xi[:, :3] + cross_rows(xi[:, 3:], c)  # velocity of the CoM
        w_body = np.einsum("nji,nj->ni", R, xi[:, 3:])
        T += 0.5 * tree.mass[b] * np.einsum("ni,ni->n", v, v) + 0.5 * np.einsum("ni,ij,nj->n", w_body,
                                                                               tree.inertia[b], w_body)
        U -= tree.mass[b] * (c @ g)
    return T.reshape(batch), U.reshape(batch)

