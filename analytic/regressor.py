"""The inertial-parameter regressor of a kinematic tree: ``tau = Y(q, qd, qdd) pi``.

Inverse dynamics is linear in each body's ten parameters ``pi_b = [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz,
Iyz]`` in its own frame: the first moment ``h = m c`` and the inertia about the body *origin*,
``I = I_c + m (|c|^2 E - c c^T)`` (Pinocchio's ``computeJointTorqueRegressor``).  With the origin's
acceleration ``a_p`` (gravity as ``-g``) and ``h_w = R h``, a body's force ``m a_p + dw x h_w + w x (w x h_w)``
and moment ``h_w x a_p + R (I dw_b + w_b x I w_b)`` are linear in them, so column ``(b, k)`` of ``Y`` is the
joint forces of a robot whose only mass is body ``b``'s unit parameter ``k``.  The outward pass is RNEA's, so
``Y pi`` equals :func:`~crossdyn.analytic.rnea.rnea`.
"""

from __future__ import annotations

import numpy as np

from .rnea import Tree, check_state, cross_rows, forward_pass

__all__ = ["PARAMETERS", "inertial_parameters", "body_properties", "regressor", "energy_regressor"]

# The ten parameters of a body, in the order of Y's columns.
PARAMETERS = ("m", "hx", "hy", "hz", "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")

# The unit inertia tensor of each of the six inertia parameters.
_UNIT_INERTIA = []
for _i, _j in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)):
    _E = np.zeros((3, 3))
    _E[_i, _j] = _E[_j, _i] = 1.0
    _UNIT_INERTIA.append(_E)


def _parallel(mass, c):
    """``m (|c|^2 E - c c^T)``: what moving the CoM from the origin to ``c`` adds to the inertia."""
    c = np.asarray(c, dtype=float)
    return np.asarray(mass)[..., None, None] * ((c * c).sum(-1)[..., None, None] * np.eye(3)
                                                - c[..., :, None] * c[..., None, :])


def inertial_parameters(tree: Tree) -> np.ndarray:
    """The tree's parameters ``pi``, ``(nb, 10)`` in the order of :data:`PARAMETERS` (kg, kg m, kg m^2)."""
    I_o = tree.inertia + _parallel(tree.mass, tree.com)
    return np.column_stack([tree.mass, tree.mass[:, None] * tree.com, I_o[:, 0, 0], I_o[:, 1, 1], I_o[:, 2, 2],
                            I_o[:, 0, 1], I_o[:, 0, 2], I_o[:, 1, 2]])


def body_properties(pi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``mass (...)`` kg, CoM ``(..., 3)`` m (body frame; NaN where the mass is zero) and inertia about the CoM
    ``(..., 3, 3)`` kg m^2 of parameters ``pi (..., 10)``."""
    pi = np.asarray(pi, dtype=float)
    mass = pi[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        com = pi[..., 1:4] / mass[..., None]
    I_o = np.zeros(pi.shape[:-1] + (3, 3))
    for k, E in enumerate(_UNIT_INERTIA):
        I_o = I_o + pi[..., 4 + k, None, None] * E
    inertia = I_o - _parallel(mass, np.nan_to_num(com))
    return mass, com, inertia


def regressor(tree: Tree, qpos, qvel, qacc, gravity=None) -> np.ndarray:
    """``Y`` with ``tau = Y pi`` for ``pi = inertial_parameters(tree).ravel()``.

    Args:
      tree: the kinematic tree (only its geometry, joints and gravity are used).
      qpos, qvel, qacc: a state or a batch, ``(..., nq)``, ``(..., nv)``, ``(..., nv)``.
      gravity: world gravity ``(3,)`` m/s^2; default ``tree.gravity``.

    Returns:
      ``(..., nv, 10 nb)``: column ``10 b + k`` is parameter ``PARAMETERS[k]`` of body ``b``.
    """
    batch, (q, qd, qdd) = check_state(tree, qpos, qvel, qacc)
    motion = forward_pass(tree, q, qd, qdd, gravity)
    assert motion.xi is not None and motion.dxi is not None  # velocities were given
    n, nb = q.shape[0], len(tree.parent)
    # Which bodies each body carries (itself and its descendants).
    carried = [{b} for b in range(nb)]
    for b in range(nb - 1, -1, -1):
        if tree.parent[b] >= 0:
            carried[tree.parent[b]] |= carried[b]
    Y = np.zeros((n, tree.nv, 10 * nb))
    for b in range(nb):
        f = _unit_wrenches(motion.R[b], motion.p[b], motion.xi[b], motion.dxi[b])  # (N, 6, 10)
        for body, da, S in motion.joints:
            if b in carried[body]:
                Y[:, da : da + S.shape[2], 10 * b : 10 * b + 10] = np.einsum("nik,nij->nkj", S, f)
    return Y.reshape(batch + (tree.nv, 10 * nb))


def _unit_wrenches(R, p, xi, dxi) -> np.ndarray:
    """The wrench ``[F; n about the world origin]`` of each unit parameter of one body, ``(N, 6, 10)``."""
    w, dw = xi[:, 3:], dxi[:, 3:]
    v_p = xi[:, :3] + cross_rows(w, p)  # velocity of the body origin
    a_p = dxi[:, :3] + cross_rows(dw, p) + cross_rows(w, v_p)  # its acceleration (gravity as -g)
    n = R.shape[0]
    F, n_p = np.zeros((n, 3, 10)), np.zeros((n, 3, 10))
    F[:, :, 0] = a_p
    for k in range(3):
        h = R[:, :, k]
        F[:, :, 1 + k] = cross_rows(dw, h) + cross_rows(w, cross_rows(w, h))
        n_p[:, :, 1 + k] = cross_rows(h, a_p)
    w_b, dw_b = np.einsum("nji,nj->ni", R, w), np.einsum("nji,nj->ni", R, dw)
    for k, E in enumerate(_UNIT_INERTIA):
        moment_b = dw_b @ E + cross_rows(w_b, w_b @ E)  # E symmetric: row-vector products are E x
        n_p[:, :, 4 + k] = np.einsum("nij,nj->ni", R, moment_b)
    moment = n_p + np.stack([cross_rows(p, F[:, :, k]) for k in range(10)], axis=2)
    return np.concatenate([F, moment], axis=1)


def energy_regressor(tree: Tree, qpos, qvel, gravity=None) -> tuple[np.ndarray, np.ndarray]:
    """``(Y_T, Y_U)``, each ``(..., 10 nb)`` with columns as :func:`regressor`'s, with kinetic energy
    ``T = Y_T pi`` and potential ``U = Y_U pi`` (MuJoCo's zero): per body, with ``v`` its origin's velocity,
    ``T = 1/2 m |v|^2 + v . (w x h_w) + 1/2 w_b^T I w_b`` and ``U = -g . (m p + h_w)``.
    """
    qvel = np.asarray(qvel, dtype=float)
    batch, (q, qd, _) = check_state(tree, qpos, qvel, np.zeros(qvel.shape))
    g = tree.gravity if gravity is None else np.asarray(gravity, dtype=float)
    motion = forward_pass(tree, q, qd, np.zeros_like(qd), np.zeros(3))
    assert motion.xi is not None  # velocities were given
    n, nb = q.shape[0], len(tree.parent)
    Y_T, Y_U = np.zeros((n, 10 * nb)), np.zeros((n, 10 * nb))
    for b in range(nb):
        R, p, xi = motion.R[b], motion.p[b], motion.xi[b]
        w = xi[:, 3:]
        v = xi[:, :3] + cross_rows(w, p)  # velocity of the body origin
        w_b = np.einsum("nji,nj->ni", R, w)
        c = 10 * b
        Y_T[:, c] = 0.5 * np.einsum("ni,ni->n", v, v)
        Y_U[:, c] = -(p @ g)
        vxw = cross_rows(v, w)
        for k in range(3):
            Y_T[:, c + 1 + k] = np.einsum("ni,ni->n", R[:, :, k], vxw)  # v . (w x R e_k) = R e_k . (v x w)
            Y_U[:, c + 1 + k] = -(R[:, :, k] @ g)
        for k, E in enumerate(_UNIT_INERTIA):
            Y_T[:, c + 4 + k] = 0.5 * np.einsum("ni,ij,nj->n", w_b, E, w_b)
    return Y_T.reshape(batch + (10 * nb,)), Y_U.reshape(batch + (10 * nb,))
