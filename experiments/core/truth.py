"""MuJoCo as ground truth: batched inverse dynamics, mass matrix and bias forces.

``mj_inverse`` returns ``qfrc_inverse = M qacc + bias - qfrc_passive -
qfrc_constraint``; the functions here evaluate it (and ``mj_fullM``,
``qfrc_bias``) over batches of states in MuJoCo's coordinate layout.
"""

from __future__ import annotations

import mujoco
import numpy as np

from crossdyn.experiments.core.errors import ModelError, StateError

__all__ = [
    "inverse_dynamics",
    "mass_matrix",
    "bias_force",
    "check_exact_dynamics",
    "as_state_batch",
]


def as_state_batch(model: mujoco.MjModel, qpos, qvel, qacc) -> tuple[np.ndarray, ...]:
    """Validate a state and broadcast it to a batch: ``(N, nq), (N, nv), (N, nv)``.

    A single state (1-D arrays) becomes a batch of one.

    Raises:
      StateError: wrong trailing sizes, or NaN/inf entries (the message names
        which array and which row).
    """
    arrays = []
    for name, value, size in (("q", qpos, model.nq), ("qd", qvel, model.nv), ("qdd", qacc, model.nv)):
        a = np.asarray(value, dtype=float)
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != size:
            raise StateError(f"{name} must have shape (N, {size}) or ({size},) for this model, got {np.shape(value)}")
        bad = ~np.isfinite(a).all(axis=1)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise StateError(f"{name} has a non-finite entry in row {row}: {a[row]}")
        arrays.append(a)
    n = np.broadcast_shapes(*(a.shape[:1] for a in arrays))
    return tuple(np.broadcast_to(a, n + a.shape[1:]) for a in arrays)


def check_exact_dynamics(model: mujoco.MjModel) -> None:
    """Refuse a model whose ``mj_inverse`` is not ``M qacc + bias`` alone.

    ``qfrc_inverse = M qacc + bias - qfrc_passive - qfrc_constraint`` (SPEC §0), and
    armature adds to M's diagonal.  An exact cross-check against a hand model of
    rigid bodies needs all of those off.

    Raises:
      ModelError: naming the element (joint or dof) and the attribute to zero.
    """
    problems = []
    for attr, label in (
        ("dof_armature", "armature"),
        ("dof_damping", "damping"),
        ("dof_frictionloss", "frictionloss"),
    ):
        values = getattr(model, attr)
        for dof in np.flatnonzero(values != 0):
            joint = model.joint(int(model.dof_jntid[dof])).name or f"#{model.dof_jntid[dof]}"
            problems.append(f"joint {joint!r} has {label}={values[dof]:g}")
    for j in np.flatnonzero(model.jnt_stiffness != 0):
        problems.append(f"joint {model.joint(int(j)).name!r} has stiffness={model.jnt_stiffness[j]:g}")
    if model.neq and np.any(model.eq_active0):
        problems.append(f"{int(np.sum(model.eq_active0))} active equality constraint(s)")
    if problems:
        raise ModelError(
            "model is not suitable for an exact rigid-body cross-check (mj_inverse would include "
            "passive or constraint forces, SPEC §0): " + "; ".join(problems) + ". Set these to zero."
        )


def inverse_dynamics(model: mujoco.MjModel, qpos, qvel, qacc, data: mujoco.MjData | None = None,
                     unconstrained: bool = False) -> np.ndarray:
    """MuJoCo's inverse dynamics ``qfrc_inverse`` row by row.

    Args:
      model: compiled model.
      qpos: positions, ``(N, nq)`` or ``(nq,)``.
      qvel: velocities, ``(N, nv)`` or ``(nv,)``.
      qacc: accelerations, ``(N, nv)`` or ``(nv,)``.
      data: optional scratch ``MjData`` to reuse.
      unconstrained: refuse any state at which a constraint is active (a contact,
        a reached joint limit): its force would be in ``qfrc_inverse``.

    Returns:
      Generalized forces, ``(N, nv)`` (N m for hinges, N for slides).  Includes
      whatever passive and constraint forces the model has (SPEC §0); use
      :func:`check_exact_dynamics` first for an exact rigid-body comparison.

    Raises:
      ModelError: with ``unconstrained``, a state with active constraints (the
        message names the state and the constraint kinds).
    """
    qpos, qvel, qacc = as_state_batch(model, qpos, qvel, qacc)
    data = mujoco.MjData(model) if data is None else data
    out = np.empty((qpos.shape[0], model.nv))
    for k in range(qpos.shape[0]):
        data.qpos[:] = qpos[k]
        data.qvel[:] = qvel[k]
        data.qacc[:] = qacc[k]
        mujoco.mj_inverse(model, data)
        if unconstrained and data.nefc:
            kinds = sorted({mujoco.mjtConstraint(int(c)).name.removeprefix("mjCNSTR_").lower()
                            for c in data.efc_type[: data.nefc]})
            raise ModelError(
                f"at state {k} (q = {np.round(qpos[k], 4).tolist()}) {data.nefc} constraint row(s) are active "
                f"({', '.join(kinds)}): mj_inverse then includes constraint forces (SPEC §0). Disable "
                "contacts (contype/conaffinity 0) and joint limits, or check at other states."
            )
        out[k] = data.qfrc_inverse
    return out


def mass_matrix(model: mujoco.MjModel, qpos) -> np.ndarray:
    """Dense joint-space inertia ``M(q)`` from ``mj_fullM``, ``(N, nv, nv)``."""
    qpos = np.atleast_2d(np.asarray(qpos, dtype=float))
    data = mujoco.MjData(model)
    out = np.empty((qpos.shape[0], model.nv, model.nv))
    for k, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        mujoco.mj_fullM(model, data, out[k])
    return out


def bias_force(model: mujoco.MjModel, qpos, qvel) -> np.ndarray:
    """``qfrc_bias`` (Coriolis, centrifugal and gravity forces), ``(N, nv)``."""
    qpos, qvel, _ = as_state_batch(model, qpos, qvel, np.zeros(model.nv))
    data = mujoco.MjData(model)
    out = np.empty((qpos.shape[0], model.nv))
    for k in range(qpos.shape[0]):
        data.qpos[:] = qpos[k]
        data.qvel[:] = qvel[k]
        mujoco.mj_forward(model, data)
        out[k] = data.qfrc_bias
    return out
