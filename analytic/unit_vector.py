"""Forward dynamics from any inverse dynamics: the unit-vector method of a robotics lecture.

``ID(q, qd, qdd) = A(q) qdd + b(q, qd)`` is linear in ``qdd``, so ``b = ID(q, qd, 0)`` and column ``i`` of
``A`` is ``ID(q, qd, e_i) - b`` (docs/derivations/unit-vector.md); ``ID`` may be RNEA on a tree, a closed form
or a user's derivation.  :func:`integrate_dynamics` steps the result as MuJoCo's undamped Euler does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["mass_matrix_and_bias", "forward_dynamics", "integrate_pos", "integrate_dynamics"]

IDFunction = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def mass_matrix_and_bias(id_fn: IDFunction, qpos, qvel) -> tuple[np.ndarray, np.ndarray]:
    """The unit-vector method: ``A`` and ``b`` of ``ID(q, qd, qdd) = A qdd + b`` from ``nv + 1`` evaluations,
    handed to ``id_fn`` as one batch.

    Args:
      id_fn: batched inverse dynamics ``(N, nq), (N, nv), (N, nv) -> (N, nv)``.
      qpos: positions, ``(nq,)`` or ``(N, nq)``.
      qvel: velocities, ``(nv,)`` or ``(N, nv)``.

    Returns:
      ``A (..., nv, nv)`` (kg, kg m, kg m^2 by entry) and ``b (..., nv)`` (N, N m),
      without a batch axis when the inputs had none.
    """
    qpos, qvel = np.asarray(qpos, dtype=float), np.asarray(qvel, dtype=float)
    single = qpos.ndim == 1 and qvel.ndim == 1
    qpos, qvel = np.atleast_2d(qpos), np.atleast_2d(qvel)
    n = max(qpos.shape[0], qvel.shape[0])
    qpos, qvel = np.broadcast_to(qpos, (n, qpos.shape[1])), np.broadcast_to(qvel, (n, qvel.shape[1]))
    nv = qvel.shape[1]
    # Block k of the stacked batch has qdd = 0 (k = 0) or e_{k-1}.
    qdd = np.concatenate([np.zeros((1, nv)), np.eye(nv)])[:, None, :].repeat(n, axis=1)
    out = np.asarray(
        id_fn(np.tile(qpos, (nv + 1, 1)), np.tile(qvel, (nv + 1, 1)), qdd.reshape(-1, nv)), dtype=float
    ).reshape(nv + 1, n, nv)
    b = out[0]
    A = np.moveaxis(out[1:] - b, 0, -1)  # A[n, :, i] = ID(q, qd, e_i) - b
    return (A[0], b[0]) if single else (A, b)


def forward_dynamics(id_fn: IDFunction, qpos, qvel, tau) -> np.ndarray:
    """``qdd`` solving ``A(q) qdd = tau - b(q, qd)``; shapes as :func:`mass_matrix_and_bias`."""
    A, b = mass_matrix_and_bias(id_fn, qpos, qvel)
    rhs = np.asarray(tau, dtype=float) - b
    return np.linalg.solve(A, rhs[..., None])[..., 0]


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ], -1)


def integrate_pos(joint_types: Sequence[str], qpos, qvel, dt: float) -> np.ndarray:
    """New positions ``(..., nq)`` moved by ``qvel`` ``(..., nv)`` over ``dt`` s (MuJoCo's ``mj_integratePos``:
    a free joint's quaternion ``<- quat * exp(dt w / 2)``, ``w`` body-frame); ``joint_types`` per joint, in
    order: ``"hinge"``, ``"slide"`` or ``"free"``."""
    qpos = np.array(qpos, dtype=float)
    qvel = np.asarray(qvel, dtype=float)
    qa = da = 0
    for kind in joint_types:
        if kind == "free":
            qpos[..., qa : qa + 3] += dt * qvel[..., da : da + 3]
            w = qvel[..., da + 3 : da + 6]
            speed = np.linalg.norm(w, axis=-1, keepdims=True)
            half = 0.5 * dt * speed
            # exp map; the axis is irrelevant when the rotation is zero
            axis = np.divide(w, speed, out=np.zeros_like(w), where=speed > 0)
            rotation = np.concatenate([np.cos(half), np.sin(half) * axis], axis=-1)
            quat = _quat_mul(qpos[..., qa + 3 : qa + 7], rotation)
            qpos[..., qa + 3 : qa + 7] = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
            qa, da = qa + 7, da + 6
        elif kind in ("hinge", "slide"):
            qpos[..., qa] += dt * qvel[..., da]
            qa, da = qa + 1, da + 1
        else:
            raise ValueError(f"integrate_pos: unsupported joint type {kind!r} (hinge, slide, free)")
    return qpos


def integrate_dynamics(
    id_fn: IDFunction,
    joint_types: Sequence[str],
    qpos,
    qvel,
    dt: float,
    steps: int,
    tau: Callable[[float, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Semi-implicit Euler on the unit-vector forward dynamics, as MuJoCo's undamped ``mj_Euler``: ``qd += dt
    qdd``, then the positions move with the new velocity.

    Args:
      id_fn: batched inverse dynamics (see :func:`mass_matrix_and_bias`).
      joint_types: the joint layout, for :func:`integrate_pos`.
      qpos, qvel: initial state, ``(nq,)`` and ``(nv,)``.
      dt, steps: time step, s, and number of steps.
      tau: optional applied generalized force ``tau(t, q, qd) -> (nv,)``; zero if None.

    Returns:
      ``qpos (steps + 1, nq)`` and ``qvel (steps + 1, nv)``, from the initial state.
    """
    q, qd = np.array(qpos, dtype=float), np.array(qvel, dtype=float)
    if q.ndim != 1 or qd.ndim != 1:
        raise ValueError(f"integrate_dynamics takes one state: qpos (nq,), qvel (nv,); got {q.shape}, {qd.shape}")
    if dt <= 0 or steps < 0:
        raise ValueError(f"need dt > 0 and steps >= 0, got dt={dt}, steps={steps}")
    qs, vs = [q.copy()], [qd.copy()]
    for k in range(steps):
        u = np.zeros_like(qd) if tau is None else np.asarray(tau(k * dt, q, qd), dtype=float)
        qd = qd + dt * forward_dynamics(id_fn, q, qd, u)
        q = integrate_pos(joint_types, q, qd, dt)
        qs.append(q.copy())
        vs.append(qd.copy())
    return np.array(qs), np.array(vs)
