"""Spatial-velocity recursive Newton-Euler for kinematic trees, as a robotics lecture on dynamics writes it.

Everything is in the world frame, about the world origin (docs/derivations/rnea.md): spatial velocity
``xi = [v_o; w]``, joint motion vectors ``s = [p x a; a]`` (hinge) or ``[a; 0]`` (slide), body wrench
``f = I^S dxi + (xi x*) I^S xi`` accumulated from the leaves, joint force ``s^T f``, gravity as the base
acceleration ``[-g; 0]``.  Coordinates are MuJoCo's (positions from ``ref``; free and ball joints with
quaternions and body-frame angular velocity; several joints in a body act in order), so a result compares
one-to-one with ``mj_inverse``.  The 6 x 6 matrices are applied, not formed, and the whole batch moves
joint by joint in array operations.  The tree's numbers come from ``tree_from_model``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .rotation import quat_to_matrix, skew

__all__ = ["Tree", "rnea", "spatial_inertia", "apply_spatial_inertia", "forward_pass", "joint_forces", "Motion",
           "JOINT_TYPES", "check_state", "cross_rows", "mat_vec_rows", "times_const"]

# Generalized-coordinate sizes (nq, nv) per joint type.
JOINT_TYPES: dict[str, tuple[int, int]] = {"hinge": (1, 1), "slide": (1, 1), "ball": (4, 3), "free": (7, 6)}


@dataclass(frozen=True, eq=False)
class Tree:
    """A kinematic tree of rigid bodies with hinge, slide, ball and free joints (m, kg, kg m^2, rad).

    Bodies are listed parents first (``parent[b] < b``, the world is ``-1``); joints body by body in the
    order they act, their coordinates packed in that order (MuJoCo's ``qposadr``, ``dofadr``).

    Attributes:
      parent: parent body of each body, ``(nb,)`` int, ``-1`` for the world.
      pos: body frame origin in the parent frame at the reference pose, ``(nb, 3)``.
      rot: body frame orientation in the parent frame, ``(nb, 3, 3)``.  Ignored for
        a body with a free joint (its pose is the joint's ``qpos``).
      mass: body masses, ``(nb,)``.
      com: centre of mass in the body frame, ``(nb, 3)``.
      inertia: full inertia tensor about the CoM in the body frame, ``(nb, 3, 3)``.
      joint_body: the body each joint moves, ``(nj,)`` int.
      joint_type: ``"hinge"``, ``"slide"``, ``"ball"`` or ``"free"`` per joint.
      joint_axis: unit axis in the body frame, ``(nj, 3)`` (unused for ball and free joints).
      joint_pos: joint anchor in the body frame, ``(nj, 3)`` (must be zero for free;
        a ball turns about it).
      joint_ref: joint position of the reference pose, ``(nj,)`` (rad or m;
        unused for ball and free joints).
      gravity: gravitational acceleration in the world, ``(3,)`` m/s^2.
      body_names, joint_names: for messages (optional).
    """

    parent: np.ndarray
    pos: np.ndarray
    rot: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray
    joint_body: np.ndarray
    joint_type: tuple[str, ...]
    joint_axis: np.ndarray
    joint_pos: np.ndarray
    joint_ref: np.ndarray
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    body_names: tuple[str, ...] = ()
    joint_names: tuple[str, ...] = ()

    def __post_init__(self):
        nb, nj = len(self.parent), len(self.joint_type)
        for name, shape in (("pos", (nb, 3)), ("rot", (nb, 3, 3)), ("mass", (nb,)), ("com", (nb, 3)),
                            ("inertia", (nb, 3, 3)), ("joint_body", (nj,)), ("joint_axis", (nj, 3)),
                            ("joint_pos", (nj, 3)), ("joint_ref", (nj,)), ("gravity", (3,))):
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(f"Tree.{name} must have shape {shape}, got {np.shape(getattr(self, name))}")
        for b, p in enumerate(self.parent):
            if not -1 <= p < b:
                raise ValueError(f"body {b} has parent {p}; bodies must be listed parents first")
        if np.any(np.diff(self.joint_body) < 0):
            raise ValueError("joints must be listed body by body (joint_body non-decreasing)")
        for j, kind in enumerate(self.joint_type):
            if kind not in JOINT_TYPES:
                raise ValueError(f"joint {j} has type {kind!r}; supported: {', '.join(JOINT_TYPES)}")
            if kind == "free":
                b = self.joint_body[j]
                if self.parent[b] != -1 or np.sum(self.joint_body == b) != 1:
                    raise ValueError(f"free joint {j} must be the only joint of a body whose parent is the world")
                if np.any(self.joint_pos[j] != 0):
                    raise ValueError(f"free joint {j} has a nonzero anchor; only anchors at the body origin work")
            if kind == "ball":
                later = [k for k in np.flatnonzero(self.joint_body == self.joint_body[j]) if k > j]
                if any(self.joint_type[k] in ("hinge", "ball") for k in later):
                    raise ValueError(f"ball joint {j} is followed by a rotation in its body (MuJoCo refuses this too)")

    @property
    def nq(self) -> int:
        """Number of position coordinates."""
        return sum(JOINT_TYPES[k][0] for k in self.joint_type)

    @property
    def nv(self) -> int:
        """Number of velocity coordinates (degrees of freedom)."""
        return sum(JOINT_TYPES[k][1] for k in self.joint_type)

    @property
    def qpos_adr(self) -> np.ndarray:
        """First ``qpos`` index of each joint, ``(nj,)``."""
        return np.cumsum([0] + [JOINT_TYPES[k][0] for k in self.joint_type])[:-1]

    @property
    def dof_adr(self) -> np.ndarray:
        """First ``qvel`` index of each joint, ``(nj,)``."""
        return np.cumsum([0] + [JOINT_TYPES[k][1] for k in self.joint_type])[:-1]


def _rotate_about(R: np.ndarray, axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """``R Rot(axis, angle)`` by Rodrigues for ``R`` ``(N, 3, 3)``, a unit axis ``(3,)`` and angles ``(N,)``."""
    a = skew(axis)
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return R + s * times_const(R, a) + (1.0 - c) * times_const(R, a @ a)


def cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` row-wise for ``(N, 3)`` arrays (np.cross's generality costs ~3x here)."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)


# Batched small products.  NumPy's stacked matmul runs one small product at a time
# and its reductions along a short axis are slow, so products with a constant right
# factor become one (3N x 3) BLAS call, and the others are written out by column.

def mat_vec_rows(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Row-wise ``A x`` for ``(N, 3, 3)`` and ``(N, 3)``."""
    return A[:, :, 0] * x[:, 0, None] + A[:, :, 1] * x[:, 1, None] + A[:, :, 2] * x[:, 2, None]


def _mtv(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Row-wise ``A^T x`` for ``(N, 3, 3)`` and ``(N, 3)``."""
    return A[:, 0, :] * x[:, 0, None] + A[:, 1, :] * x[:, 1, None] + A[:, 2, :] * x[:, 2, None]


def times_const(A: np.ndarray, K: np.ndarray) -> np.ndarray:
    """``A K`` for ``A (N, 3, 3)`` and a constant ``K`` of shape ``(3, 3)`` or ``(3,)``."""
    n = A.shape[0]
    return (A.reshape(3 * n, 3) @ K).reshape((n, 3) + K.shape[1:])


def _cross_motion(xi: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``(xi x) m`` with ``xi x = [[w^, v^], [0, w^]]``; both ``(N, 6)``."""
    v, w = xi[:, :3], xi[:, 3:]
    return np.concatenate([cross_rows(w, m[:, :3]) + cross_rows(v, m[:, 3:]), cross_rows(w, m[:, 3:])], axis=1)


def _cross_force(xi: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``(xi x*) f`` with ``xi x* = [[w^, 0], [v^, w^]]``; both ``(N, 6)``."""
    v, w = xi[:, :3], xi[:, 3:]
    return np.concatenate([cross_rows(w, f[:, :3]), cross_rows(v, f[:, :3]) + cross_rows(w, f[:, 3:])], axis=1)


def spatial_inertia(mass: float, c: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """``I^S = [[m E, m c^T], [m c^, m c^ c^T + I]]`` about the world origin, ``(..., 6, 6)`` (formed for
    reference and tests; :func:`rnea` uses :func:`apply_spatial_inertia`).

    Args:
      mass: body mass, kg.
      c: CoM in the world, ``(..., 3)`` m.
      inertia: world-frame inertia about the CoM, ``(..., 3, 3)`` kg m^2.
    """
    ch = skew(np.asarray(c, dtype=float))
    top = np.concatenate([np.broadcast_to(mass * np.eye(3), ch.shape), mass * np.swapaxes(ch, -1, -2)], axis=-1)
    bottom = np.concatenate([mass * ch, mass * ch @ np.swapaxes(ch, -1, -2) + inertia], axis=-1)
    return np.concatenate([top, bottom], axis=-2)


def apply_spatial_inertia(mass: float, c: np.ndarray, inertia_w: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """``I^S xi`` for ``xi = [v; w]``, ``(N, 6)``, without forming ``I^S``: ``[p; c x p + I w]`` with the
    linear momentum ``p = m (v + w x c)``.

    Args:
      mass: kg; c: CoM in the world, ``(N, 3)`` m.
      inertia_w: ``I w``, the world-frame inertia about the CoM times ``w``, ``(N, 3)``.
      xi: spatial velocity (or acceleration), ``(N, 6)``.
    """
    v, w = xi[:, :3], xi[:, 3:]
    p = mass * (v + cross_rows(w, c))
    return np.concatenate([p, cross_rows(c, p) + inertia_w], axis=1)


def check_state(tree: Tree, qpos, qvel, qacc):
    """The state broadcast to one batch: ``(batch shape, [qpos (N, nq), qvel (N, nv), qacc (N, nv)])``.

    Raises:
      ValueError: an array whose last axis is not the tree's size.
    """
    qpos, qvel, qacc = (np.asarray(a, dtype=float) for a in (qpos, qvel, qacc))
    for name, a, size in (("qpos", qpos, tree.nq), ("qvel", qvel, tree.nv), ("qacc", qacc, tree.nv)):
        if a.ndim == 0 or a.shape[-1] != size:
            raise ValueError(f"{name} must have shape (..., {size}) for this tree, got {a.shape}")
    batch = np.broadcast_shapes(qpos.shape[:-1], qvel.shape[:-1], qacc.shape[:-1])
    flat = [np.broadcast_to(a, batch + a.shape[-1:]).reshape(-1, a.shape[-1]) for a in (qpos, qvel, qacc)]
    return batch, flat


@dataclass(frozen=True)
class Motion:
    """The result of :func:`forward_pass` over a batch of ``N`` states.

    Attributes:
      R, p: body orientations ``(nb, N, 3, 3)`` and origins ``(nb, N, 3)`` m, world.
      xi, dxi: spatial velocities and accelerations (gravity as ``-g``), ``(nb, N, 6)``; None for poses only.
      joints: per joint, ``(body, first dof, S (N, 6, k))``: its motion vectors (world Jacobian columns).
    """

    R: np.ndarray
    p: np.ndarray
    xi: np.ndarray | None
    dxi: np.ndarray | None
    joints: list


def _matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Row-wise ``A B`` for ``(N, 3, 3)`` arrays, written out by column (see :func:`mat_vec_rows`)."""
    return np.stack([mat_vec_rows(A, B[:, :, k]) for k in range(3)], axis=2)


def forward_pass(tree: Tree, qpos: np.ndarray, qvel: np.ndarray | None, qacc: np.ndarray | None,
                 gravity: np.ndarray | None = None) -> Motion:
    """Poses, spatial velocities and accelerations of every body: RNEA's outward pass.

    Args:
      tree: the kinematic tree.
      qpos, qvel, qacc: a batch, ``(N, nq)``, ``(N, nv)``, ``(N, nv)``; ``qvel = qacc = None`` for poses
        and motion vectors only.
      gravity: world gravity ``(3,)`` m/s^2 (default ``tree.gravity``).
    """
    moving = qvel is not None
    g = tree.gravity if gravity is None else np.asarray(gravity, dtype=float)
    n, nb = qpos.shape[0], len(tree.parent)
    qadr, dadr = tree.qpos_adr, tree.dof_adr
    eye = np.broadcast_to(np.eye(3), (n, 3, 3))
    world = (eye, np.zeros((n, 3)), np.zeros((n, 6)), np.broadcast_to(np.concatenate([-g, np.zeros(3)]), (n, 6)))
    frames: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # per body: (R, p, xi, dxi), world
    joints: list[tuple[int, int, np.ndarray]] = []  # per joint: (body, first dof, S (N, 6, k))
    for b in range(nb):
        R_par, p_par, xi, dxi = world if tree.parent[b] < 0 else frames[tree.parent[b]]
        R = times_const(R_par, tree.rot[b])
        p = p_par + times_const(R_par, tree.pos[b])
        for j in np.flatnonzero(tree.joint_body == b):
            kind, qa, da = tree.joint_type[j], qadr[j], dadr[j]
            if kind in ("free", "ball"):
                k = 6 if kind == "free" else 3
                if kind == "free":
                    p = qpos[:, qa : qa + 3]
                    R = quat_to_matrix(qpos[:, qa + 3 : qa + 7])
                    anchor = p
                else:
                    anchor = p + times_const(R, tree.joint_pos[j])
                    R = _matmul(R, quat_to_matrix(qpos[:, qa : qa + 4]))
                    p = anchor - times_const(R, tree.joint_pos[j])
                # Rotation about the body axes a_k = R e_k through the anchor (s = [anchor x a_k; a_k],
                # fixed in the body, so ds = (xi_body x) s); a free joint also translates along the
                # world axes (s = [e_i; 0], fixed in the world, so ds = 0).
                S = np.zeros((n, 6, k))
                S[:, :3, k - 3 :] = skew(anchor) @ R
                S[:, 3:, k - 3 :] = R
                if kind == "free":
                    S[:, :3, :3] = np.eye(3)
                joints.append((b, da, S))
                if not moving:
                    continue
                assert qvel is not None and qacc is not None  # moving
                if kind == "free":
                    xi = xi + np.concatenate([qvel[:, da : da + 3], np.zeros((n, 3))], axis=1)
                xi_rot = np.zeros((n, 6))
                for i in range(3):
                    xi_rot += S[:, :, k - 3 + i] * qvel[:, da + k - 3 + i, None]
                xi = xi + xi_rot
                dxi = dxi + _cross_motion(xi, xi_rot)
                for i in range(k):
                    dxi = dxi + S[:, :, i] * qacc[:, da + i, None]
                continue
            a = times_const(R, tree.joint_axis[j])
            angle = qpos[:, qa] - tree.joint_ref[j]
            if kind == "hinge":
                anchor = p + times_const(R, tree.joint_pos[j])
                s = np.concatenate([cross_rows(anchor, a), a], axis=1)
                R = _rotate_about(R, tree.joint_axis[j], angle)
                p = anchor - times_const(R, tree.joint_pos[j])
            else:  # slide
                s = np.concatenate([a, np.zeros((n, 3))], axis=1)
                p = p + a * angle[:, None]
            joints.append((b, da, s[:, :, None]))
            if qvel is not None and qacc is not None:
                # s is fixed in the frame it moves from, so ds = (xi_pred x) s.
                dxi = dxi + _cross_motion(xi, s) * qvel[:, da, None] + s * qacc[:, da, None]
                xi = xi + s * qvel[:, da, None]
        frames.append((R, p, xi, dxi))
    R, p = np.stack([f[0] for f in frames]), np.stack([f[1] for f in frames])
    if not moving:
        return Motion(R, p, None, None, joints)  # poses only: the zero motion carried along is dropped
    return Motion(R, p, np.stack([f[2] for f in frames]), np.stack([f[3] for f in frames]), joints)


def rnea(tree: Tree, qpos, qvel, qacc, gravity=None) -> np.ndarray:
    """Inverse dynamics ``tau = M(q) qacc + bias(q, qvel)`` by the spatial-velocity RNEA.

    Args:
      tree: the kinematic tree.
      qpos: positions, ``(..., nq)`` (rad, m, unit quaternions for ball and free joints).
      qvel: velocities, ``(..., nv)`` (rad/s, m/s; ball and free joints as in MuJoCo).
      qacc: accelerations, ``(..., nv)``.
      gravity: world gravity ``(3,)`` m/s^2; default ``tree.gravity``.

    Returns:
      Generalized forces, ``(..., nv)`` (N m for hinges and rotations about the
      body axes, N for slides and free translations along world axes).
    """
    batch, (qpos, qvel, qacc) = check_state(tree, qpos, qvel, qacc)
    motion = forward_pass(tree, qpos, qvel, qacc, gravity)
    n, nb = qpos.shape[0], len(tree.parent)
    assert motion.xi is not None and motion.dxi is not None  # velocities were given
    wrench = np.zeros((nb, n, 6))
    for b in range(nb):
        R, p, xi, dxi = motion.R[b], motion.p[b], motion.xi[b], motion.dxi[b]
        c = p + times_const(R, tree.com[b])
        # The world-frame inertia about the CoM, R I_body R^T, applied to w and dw.
        I_w, I_dw = (mat_vec_rows(R, _mtv(R, w) @ tree.inertia[b].T) for w in (xi[:, 3:], dxi[:, 3:]))
        momentum = apply_spatial_inertia(tree.mass[b], c, I_w, xi)
        wrench[b] = apply_spatial_inertia(tree.mass[b], c, I_dw, dxi) + _cross_force(xi, momentum)
    for b in range(nb - 1, -1, -1):  # leaves inward: each body carries its subtree
        if tree.parent[b] >= 0:
            wrench[tree.parent[b]] += wrench[b]
    return joint_forces(tree, motion, wrench).reshape(batch + (tree.nv,))


def joint_forces(tree: Tree, motion: Motion, wrench: np.ndarray) -> np.ndarray:
    """``u_j = S_j^T f_b``, ``(N, nv)``, from each body's subtree wrench ``[force; moment about the world
    origin]``, ``(nb, N, 6)``."""
    tau = np.empty((wrench.shape[1], tree.nv))
    for b, da, S in motion.joints:
        tau[:, da : da + S.shape[2]] = sum(S[:, i, :] * wrench[b][:, i, None] for i in range(6))  # S^T f
    return tau
